/* replicas.h - how many replicas confirm an acquisition ([replication]
 * wait_replicas, docs/CONTRACT.md section 9.2): the configured number,
 * or with `all` every replica the master reports online (at least one,
 * and with [sentinel] at least those a sentinel could promote), counted
 * per master address and looked at again when it may have changed. */
#ifndef RDL_REPLICAS_H
#define RDL_REPLICAS_H

#include <stdbool.h>

#include "client/client.h"

/* Looks at a master's replicas at most this often (monotonic ms) while
 * acquisitions are confirmed, so that a replica that came back is counted
 * again. */
#define RDL_WAIT_ALL_LOOK_MS 1000
/* A master that reports fewer replicas online than acquisitions wait for
 * is believed only after this long (replicas.c says why). */
#define RDL_WAIT_ALL_DROP_MS 3000

/* The number of replicas an acquisition sent on conn waits for (WAIT;
 * 0: none): wait_replicas as configured, or with `all` the master's count
 * (rdl_replicas_t, replicas.c says how it is kept), counted afresh on conn
 * (INFO replication) when conn is new, when the count is older than
 * RDL_WAIT_ALL_LOOK_MS, or after an acquisition got fewer confirmations
 * (rdl_client_wait_acked).  0 and *want; or (all only) as
 * rdl_conn_online_replicas: EIO (conn lost, or the text unreadable),
 * EROFS (a replica now), EACCES (INFO refused); or with [sentinel]: EROFS
 * (the newest sentinels name another master), EIO or EACCES (a first
 * count, and too few sentinels answered, one refusing a command). */
int rdl_client_wait_want(rdlock_client_t *c, rdl_conn_t *conn, int *want);

/* A WAIT on conn asked for want replicas and acked confirmed (< 0:
 * refused): with `all`, fewer than asked means a replica left or lags,
 * so the next acquisition counts again. */
void rdl_client_wait_acked(rdlock_client_t *c, const rdl_conn_t *conn, int want, int acked);

#endif
