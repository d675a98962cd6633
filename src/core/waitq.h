/* waitq.h - the local wait queues: one per lock key however many threads
 * of the client wait on it, each with a condition variable that wake-ups
 * (pub/sub messages, local releases) signal, and the state of the key's
 * subscription.  Only waitq.c touches a queue's fields: lock.c waits
 * through the calls below, events.c (the subscriber) feeds them.  Every
 * call is made with the client's mutex held. */
#ifndef RDL_WAITQ_H
#define RDL_WAITQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rdlock_client;

/* One waiting thread, on its own stack while it waits. */
typedef struct rdl_waiter {
    struct rdl_waiter *next;
    unsigned thread;
    uint64_t floor;         /* hand-overs with a token <= this are stale */
    bool granted;           /* the lock was handed to this thread: claim it */
    uint64_t token;         /* ... with this fencing token */
} rdl_waiter_t;

typedef struct rdl_waitq rdl_waitq_t; /* opaque */

/* Join the wait queue of key as waiter w, subscribing its channel, and
 * wait (at most until `until`) for the subscription to be confirmed, so
 * that no release after it goes unheard.  NULL on ENOMEM (the caller then
 * re-checks on its own schedule). */
rdl_waitq_t *rdl_waitq_join(struct rdlock_client *c, const char *key, size_t keylen, long long until,
                            rdl_waiter_t *w);
void rdl_waitq_leave(struct rdlock_client *c, rdl_waitq_t *q, rdl_waiter_t *w);

/* w is about to look at the server: a grant announced before this look is
 * claimed by it.  Returns the generation to sleep on afterwards. */
unsigned long rdl_waitq_look(struct rdlock_client *c, rdl_waitq_t *q, rdl_waiter_t *w);
/* w's look found the lock busy with the fencing counter at `fence`:
 * hand-overs announced with a token not above it are stale. */
void rdl_waitq_busy(struct rdlock_client *c, rdl_waitq_t *q, rdl_waiter_t *w, uint64_t fence);

/* How a waiter shares its re-checks with the other local waiters of the
 * key: if one of them looked after `since`, the sleep goes on until that
 * look + period, but not past `limit`.  share NULL: never. */
typedef struct rdl_waitq_share {
    long long since, period, limit;
} rdl_waitq_share_t;
/* Sleep until a wake-up after generation gen, a grant to w, or `until`
 * (monotonic ms). */
void rdl_waitq_sleep(struct rdlock_client *c, rdl_waitq_t *q, rdl_waiter_t *w, unsigned long gen,
                     long long until, const rdl_waitq_share_t *share);

/* Redlock (mu held): one local waiter at a time votes on the masters for
 * a key, since two threads of one process voting at once only split the
 * vote between them.  begin: true if w may vote now (it is the voter until
 * end), false if another local thread is voting. */
bool rdl_waitq_vote_begin(struct rdlock_client *c, rdl_waitq_t *q, rdl_waiter_t *w);
void rdl_waitq_vote_end(struct rdlock_client *c, rdl_waitq_t *q, rdl_waiter_t *w);

/* Wake every local waiter of key, if any (they look again). */
void rdl_waitq_wake(struct rdlock_client *c, const char *key, size_t keylen);
/* The server handed the lock of key to owner with token: if owner is a
 * waiting thread of this client, tell it. */
void rdl_waitq_grant(struct rdlock_client *c, const char *key, size_t keylen, const char *owner,
                     size_t ownerlen, uint64_t token);

/* For the subscriber (events.c). */
typedef void (*rdl_waitq_chan_fn)(void *arg, const char *key, size_t keylen);
/* Which keys need a subscription (sub) and which can lose theirs (unsub:
 * nobody waited for idle_ms); frees queues nobody needs any more.
 * may_subscribe false: the subscriber is backing off, subscribe none. */
void rdl_waitq_sub_collect(struct rdlock_client *c, long long now, long long idle_ms, bool may_subscribe,
                           rdl_waitq_chan_fn sub, rdl_waitq_chan_fn unsub, void *arg);
void rdl_waitq_sub_confirmed(struct rdlock_client *c, const char *key, size_t keylen);
void rdl_waitq_sub_ended(struct rdlock_client *c, const char *key, size_t keylen);
/* Every subscription is gone (the subscriber connection failed): releases
 * may have been missed, so every waiter looks again. */
void rdl_waitq_sub_lost(struct rdlock_client *c);
/* Whether any queue exists (the subscriber then has work to check). */
bool rdl_waitq_any(const struct rdlock_client *c);

/* Free every queue (client close; fork child with after_fork, where the
 * waiting threads are gone). */
void rdl_waitq_free_all(struct rdlock_client *c, bool after_fork);

#endif
