/* barrier.h - barriers (rdbarrier_t, docs/CONTRACT.md section 12): the
 * steps are src/scripts/barrier.lua; an arrival is a hold (hold.h, kind
 * RDL_HOLD_BARRIER) that the watchdog renews while its thread waits. */
#ifndef RDL_BARRIER_H
#define RDL_BARRIER_H

#include "client/client.h"

/* rdlock_reset_name: delete the barrier state of the name whose lock key
 * is key ("<prefix>{name}").  0, or as rdl_prim_op_on: EIO (no answer, an
 * unexpected reply), EACCES (refused: authentication, ACL), EINVAL (a new
 * connection's SELECT refused), ENOMEM. */
int rdl_barrier_reset(rdlock_client_t *c, const char *key, size_t keylen);

#endif
