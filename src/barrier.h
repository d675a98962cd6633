/* barrier.h - barriers (rdbarrier_t, docs/CONTRACT.md section 12): the
 * steps are src/scripts/barrier.lua; an arrival is a hold (hold.h, kind
 * RDL_HOLD_BARRIER) that the watchdog renews while its thread waits. */
#ifndef RDL_BARRIER_H
#define RDL_BARRIER_H

#include "client.h"

/* rdlock_reset_name: delete the barrier state of the name whose lock key
 * is key ("<prefix>{name}").  0 or an errno. */
int rdl_barrier_reset(rdlock_client_t *c, const char *key, size_t keylen);

/* Process exit: withdraw thread's arrival of call at the barrier of key
 * ('u'), as prim.c's rdl_prim_release_at_exit asks.  0 and *out, or as
 * rdl_preq_run. */
struct rdl_preply;
int rdl_barrier_exit(rdlock_client_t *c, const char *key, size_t keylen, unsigned thread, const char *call,
                     unsigned lease_ms, struct rdl_preply *out);

#endif
