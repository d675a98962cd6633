/* fmt.h - formatting numbers without stdio: argument building on the hot
 * path of every lock call (snprintf cost more than the rest of a call). */
#ifndef RDL_FMT_H
#define RDL_FMT_H

#include <stddef.h>

/* Decimal digits of v into buf (no NUL); returns the length (<= 20). */
size_t rdl_fmt_u64(char *buf, unsigned long long v);

#endif
