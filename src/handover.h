/* handover.h - a queued exclusive waiter learns of its hand-over straight
 * from the server.
 *
 * When a release frees a lock that writers queue for, release.lua gives it
 * to the head of the line and pushes "<call>;<token>" onto the head's own
 * grant list, "<prefix>{<name>}:g:<owner>" (acquire.lua says the layout).
 * The waiter is already blocked in BLPOP on that list, on a connection of
 * its own from the pool: the server's answer to the BLPOP is the grant.
 * The waiting thread itself reads it, so a hand-over costs no pub/sub
 * message, no hop through the background thread and no claim round trip
 * (project issue 15).  lock.c decides who waits this way and records the
 * hold; this file only waits. */
#ifndef RDL_HANDOVER_H
#define RDL_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

struct rdlock_client;

/* Threads of one client that wait in BLPOP at once, each holding a
 * connection: more waiters (a thousand threads on one name) would cost the
 * server a connection each, so they wait the pub/sub way (ENOTSUP below),
 * which needs none. */
#define RDL_LISTEN_MAX 16

/* Wait in BLPOP on the grant list `list` (of the lock key `key`, which
 * says the server) until monotonic ms `until`, for a grant of acquire call
 * number `call`.  Grants of older calls (hand-overs that lapsed before)
 * are dropped.  Returns
 *   0       granted: *token is the fencing token
 *   EAGAIN  look again: the time is up, or a "look again" item came
 *   ENOTSUP the server refused the BLPOP (an ACL without it, a Cluster
 *           slot served elsewhere, loading), or RDL_LISTEN_MAX threads of
 *           the client wait in BLPOP already: the caller waits as it does
 *           without a list (pub/sub) for the rest of its call
 *   EIO     no connection, or no answer in time (the connection is
 *           closed): the caller sleeps its re-check period, then looks */
int rdl_handover_wait(struct rdlock_client *c, const char *key, size_t keylen, const char *list, size_t listlen,
                      uint64_t call, long long until, uint64_t *token);

#endif
