/* pool.h - a client's idle connections, RDL_POOL_MAX per route at most.
 * A container that never connects (call.h does), so that the topology may
 * look into it.  The client's mutex guards it (taken here, never held by
 * the caller). */
#ifndef RDL_POOL_H
#define RDL_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "client/client.h"

/* An idle connection to route's server (topology.h), or NULL; giving one
 * back (closed instead if the pool is full, or if it was opened before the
 * last flush: it may lead where the flush meant to take us away from). */
rdl_conn_t *rdl_client_conn_idle(rdlock_client_t *c, const char *route);
void rdl_client_conn_put(rdlock_client_t *c, rdl_conn_t *conn);

/* Close every idle pooled connection (mu not held): the next calls
 * connect again. */
void rdl_client_pool_flush(rdlock_client_t *c);

/* With [sentinel]: does an idle pooled connection lead to a master other
 * than addr ("host:port")?  If so, true and its address in where (n
 * bytes). */
bool rdl_client_pool_elsewhere(rdlock_client_t *c, const char *addr, char *where, size_t n);

/* With a topology that follows its servers from the opening on
 * ([sentinel]), start the background thread if it does not run (mu held):
 * at open, and at the first call after fork() in the child; never after
 * it was stopped (process exit).  It listens for failovers (events.c,
 * sentinel.h), so that even a client holding nothing stops using a
 * deposed master at once. */
void rdl_client_follow_start(rdlock_client_t *c);

#endif
