/* events.h - the client's background thread: pub/sub wake-ups to local
 * waiters and watchdog renewals, each on a connection of its own, driven by
 * one poll() loop.  Also the local wait queues (one per lock key however
 * many threads wait on it) that the wake-ups feed. */
#ifndef RDL_EVENTS_H
#define RDL_EVENTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "table.h"

enum { RDL_SUB_NONE, RDL_SUB_SENT, RDL_SUB_ON, RDL_SUB_UNSENT };

/* One waiting thread, on its own stack while it waits. */
typedef struct rdl_waiter {
    struct rdl_waiter *next;
    unsigned thread;
    uint64_t floor;         /* hand-overs with a token <= this are stale */
    bool granted;           /* the lock was handed to this thread: claim it */
    uint64_t token;         /* ... with this fencing token */
} rdl_waiter_t;

typedef struct rdl_waitq {
    rdl_tnode_t node;       /* keyed by key */
    char *key;
    size_t keylen;
    int nwaiters;           /* local threads waiting on this key */
    unsigned long gen;      /* bumped by every wake-up */
    pthread_cond_t cond;    /* on the client's mu */
    int sub;                /* RDL_SUB_* */
    long long idle_since;   /* when nwaiters last dropped to 0 */
    long long last_poll;    /* last timed re-check by any local waiter */
    rdl_waiter_t *waiters;  /* the local threads waiting */
    uint64_t last_grant;    /* newest hand-over token seen for this key */
} rdl_waitq_t;

/* Start the thread if it is not running (mu held).  0 or an errno. */
int rdl_events_start(rdlock_client_t *c);
/* Stop and join it, close its connections (mu not held). */
void rdl_events_stop(rdlock_client_t *c);
/* Wake its poll() to look at the tables again (any lock state). */
void rdl_events_poke(rdlock_client_t *c);
/* Run fn(name, arg) on the background thread, soon (mu held): a lost
 * callback owed by an unlock that found its hold gone. */
void rdl_events_lost_later(rdlock_client_t *c, rdlock_lost_fn fn, void *arg, const char *name, size_t namelen);
/* After fork(), in the child (mu held by the fork handler): forget the
 * thread and close (not shut down) its connections. */
void rdl_events_after_fork(rdlock_client_t *c);

/* Join the wait queue of key as waiter w (mu held), subscribing its
 * channel, and wait (at most until `until`) for the subscription to be
 * confirmed.  NULL on ENOMEM (the caller then polls). */
rdl_waitq_t *rdl_waitq_join(rdlock_client_t *c, const char *key, size_t keylen, long long until,
                            rdl_waiter_t *w);
void rdl_waitq_leave(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *w);
/* Wake every local waiter of key, if any (mu held). */
void rdl_waitq_wake(rdlock_client_t *c, const char *key, size_t keylen);
/* The server handed the lock of key to owner with token: if owner is a
 * waiting thread of this client, tell it (mu held). */
void rdl_waitq_grant(rdlock_client_t *c, const char *key, size_t keylen, const char *owner,
                     size_t ownerlen, uint64_t token);
/* Free every wait queue (client close; fork child with after_fork, where
 * the waiting threads are gone; mu held). */
void rdl_waitq_free_all(rdlock_client_t *c, bool after_fork);

#endif
