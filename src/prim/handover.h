/* handover.h - a queued exclusive waiter learns of its hand-over straight
 * from the server.
 *
 * When a release frees a lock that writers queue for, release.lua gives it
 * to the head of the line and pushes "<call>;<token>" onto the head's own
 * grant list, "<prefix>{<name>}:g:<owner>" (acquire.lua says the layout).
 * The waiter is already blocked in BLPOP on that list, on a connection of
 * its own from the pool, with a renewal of its hold (renew.lua) pipelined
 * behind the BLPOP: the server runs the renewal the moment the pop
 * answers, so the grant arrives with its lease already started.  The
 * waiting thread itself reads both answers: a hand-over costs no pub/sub
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

/* What a wait is for. */
typedef struct rdl_handover {
    const char *key;    /* the lock's key "<prefix>{<name>}": its server, and
                           the hash the renewal extends */
    size_t keylen;
    const char *list;   /* the caller's grant list */
    size_t listlen;
    const char *owner;  /* owner id */
    const char *call;   /* the acquire call's number, decimal */
    const char *lease;  /* the lease, ms, decimal */
    uint64_t floor;     /* the fencing counter at the caller's last look: a
                           grant made after that look has a higher token */
} rdl_handover_t;

/* Wait in BLPOP on the grant list until monotonic ms `until`, for a grant
 * of this call.  Grants of older calls, and with a token not above the
 * floor (made before the last look: a copy that a failover or an older
 * AOF brought back), are dropped.  Returns
 *   0       held: *token is the fencing token, and the lease runs until
 *           *sent_at + lease at least (the renewal ran after the BLPOP was
 *           sent at *sent_at, monotonic ms)
 *   EAGAIN  look again: the time is up, a "look again" item came, or a
 *           grant whose renewal did not take (the look claims what is
 *           left of it)
 *   ENOTSUP the server refuses the BLPOP (an ACL without it), or
 *           RDL_LISTEN_MAX threads of the client wait in BLPOP already:
 *           the caller waits as it does without a list (pub/sub) for the
 *           rest of its call
 *   EIO     no connection, no answer in time (the connection is closed),
 *           or a server that cannot serve it now (a replica, loading, a
 *           Cluster slot elsewhere): the caller sleeps its re-check
 *           period, then looks */
int rdl_handover_wait(struct rdlock_client *c, const rdl_handover_t *w, long long until, uint64_t *token,
                      long long *sent_at);

#endif
