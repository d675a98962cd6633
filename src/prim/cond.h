/* cond.h - condition variables (rdcond_t, docs/CONTRACT.md section 12):
 * the steps are src/scripts/cond.lua, the waits share the local wait
 * queues (waitq.h) with the locks, and a waiter's registration is a hold
 * (hold.h, kind RDL_HOLD_COND) that the watchdog renews. */
#ifndef RDL_COND_H
#define RDL_COND_H

#include "client/client.h"

/* rdlock_reset_name: delete the condition state of the name whose lock
 * key is key ("<prefix>{name}").  0, or as rdl_prim_op_on: EIO (no
 * answer, an unexpected reply), EACCES (refused: authentication, ACL),
 * EINVAL (a new connection's SELECT refused), ENOMEM. */
int rdl_cond_reset(rdlock_client_t *c, const char *key, size_t keylen);

#endif
