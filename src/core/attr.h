/* attr.h - attribute objects (docs/CONTRACT.md section 4). */
#ifndef RDL_ATTR_H
#define RDL_ATTR_H

#include "rdlock.h"

#define RDL_ATTR_MAGIC 0x52444c41u /* "RDLA" */

/* 1 if a points to an initialised attribute object. */
int rdl_attr_valid(const rdlock_attr_t *a);

#endif
