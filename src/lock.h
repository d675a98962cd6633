/* lock.h - the core: acquire, release and inspect one name in one mode for
 * the calling thread.  mutex.c and rwlock.c are thin layers over this. */
#ifndef RDL_LOCK_H
#define RDL_LOCK_H

#include <stdint.h>

#include "handle.h"

enum { RDL_TRY, RDL_BLOCK, RDL_TIMED };

/* mode 'x' or 's'; how RDL_*; deadline monotonic ms (RDL_TIMED only). */
int rdl_acquire(rdl_handle_t *h, char mode, int how, long long deadline);
int rdl_release(rdl_handle_t *h);
/* The caller's hold through h's API: count 0 if none (returns 0), token
 * EPERM if none. */
int rdl_holdcount(rdl_handle_t *h, unsigned *count);
int rdl_token(rdl_handle_t *h, uint64_t *token);

#endif
