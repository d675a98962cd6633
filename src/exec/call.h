/* call.h - one script call on a client's topology: the connection, the
 * stamp, the retries and redirections, and what they mean for the
 * result. */
#ifndef RDL_CALL_H
#define RDL_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#include "client/client.h"
#include "proto/script.h"

/* What a script call's retries mean for its result. */
typedef struct rdl_call {
    bool maybe_ran;     /* an attempt was sent but got no answer before the
                           one that did: the reply may reflect its effect */
    bool ambiguous;     /* ... and that attempt timed out on a live server,
                           so it most likely did run (a dead server's state
                           may be gone with it: not ambiguous) */
    long long sent_at;  /* monotonic ms when the earliest attempt that may
                           have taken effect was sent */
    bool confirm;       /* in: with [replication] wait_replicas on, WAIT
                           for that many replicas after the script (all:
                           those online, client/replicas.h) */
    int acked;          /* out: replicas that confirmed it (-1: not asked,
                           or WAIT refused) */
    int wanted;         /* out: replicas it asked for (0: none) */
    char *stamp;        /* in, or NULL: RDL_STAMP_LEN bytes inside one of the
                           arguments, rewritten before every attempt with the
                           server time after which that attempt is void
                           (acquire.lua): its sending + command_timeout_ms,
                           in the server's clock, never later than the server
                           time when the client gives up on it */
    long long answer_sent; /* out: when the attempt that answered was sent */
    long long answer_at;   /* out: when its answer came (monotonic ms) */
    char route[RDL_ROUTE_MAX]; /* out: the route of the server that answered */
    long long unsure_until; /* out: monotonic ms until which an attempt that
                           got no answer may still act on the server (its
                           stamp); 0 if none (stamp calls only) */
} rdl_call_t;

/* A connection to route's server: an idle pooled one, or one opened now
 * and stamped with the pool generation read before connecting (a flush
 * meanwhile keeps it out of the pool).  0, EIO (unreachable), or what
 * rdl_topo_connect_route refuses with for good (EACCES, EINVAL, ENOMEM). */
int rdl_client_conn_get(rdlock_client_t *c, const char *route, rdl_conn_t **out);

/* Run a script through a pooled connection, reconnecting and retrying up
 * to command_retries times (backoff never sleeps past `deadline`, monotonic
 * ms, < 0 for none).  Returns 0 with *reply, or
 *   EIO     no answer within the retries (also: a server busy, loading or
 *           without its master that long, more than cluster_max_redirects
 *           redirections), or the script's own error reply
 *   EACCES  refused: authentication, or permission (ACL; also INFO, which
 *           wait_replicas = all needs); also a sentinel or cluster node
 *           that refused our credentials
 *   EINVAL  a new connection's SELECT refused (the db)
 *   ENOMEM
 * *call (may be NULL) tells about the retries; its `confirm` is the only
 * field read. */
int rdl_client_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc,
                      const char *const *argv, const size_t *lens, long long deadline,
                      redisReply **reply, rdl_call_t *call);

#endif
