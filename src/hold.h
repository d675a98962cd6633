/* hold.h - the local record of one hold: which thread of this client holds
 * which lock name in which mode, how often (recursion / read re-entry), its
 * fencing token and lease timing for the watchdog.  Records live in the
 * client's hold table, guarded by the client's mutex. */
#ifndef RDL_HOLD_H
#define RDL_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "rdlock.h"
#include "table.h"

struct rdl_handle;
struct rdlock_client;

enum { RDL_API_MUTEX = 1, RDL_API_RWLOCK = 2, RDL_API_SEM = 3, RDL_API_COND = 4, RDL_API_BARRIER = 5 };

/* What a hold is: the lock of its name (lock.c), the leased permits of
 * a semaphore (sem.c), whose server-side count only sem.lua changes, a
 * condition waiter's registration (cond.c) or a barrier arrival
 * (barrier.c): leases the watchdog renews like the others. */
enum { RDL_HOLD_LOCK = 0, RDL_HOLD_SEM = 1, RDL_HOLD_COND = 2, RDL_HOLD_BARRIER = 3 };

typedef struct rdl_hold {
    rdl_tnode_t node;       /* keyed by (key, thread) */
    char *key;              /* "<prefix>{<name>}", owned */
    size_t keylen;
    const char *name;       /* points into key */
    size_t namelen;
    unsigned thread;        /* owner thread number */
    char mode;              /* 'x' exclusive, 's' shared */
    int api;                /* RDL_API_*: released through the API that took it */
    int kind;               /* RDL_HOLD_*; 0 (a lock) from calloc */
    unsigned count;         /* recursion / read re-entry depth, >= 1; a
                               semaphore hold: permits held */
    uint64_t token;         /* fencing token of the first acquisition */
    char call[21];          /* the acquire call that took it (decimal): its
                               identity on the server, with the owner */
    uint64_t serial;        /* unique per client: the watchdog's handle on it */
    unsigned lease_ms;
    unsigned interval_ms;   /* renewal period */
    unsigned max_hold_ms;   /* 0 = unlimited */
    bool watchdog;
    long long acquired_at;  /* monotonic ms when the acquire was sent */
    long long unsure_until; /* an attempt of the acquire call that got no
                               answer may act on the server until then: the
                               release waits for it (else that late attempt
                               could find the lock free and take it again) */
    long long renew_at;     /* next renewal due */
    long long expires_at;   /* local, conservative end of the lease */
    bool lost;              /* found gone by the watchdog, or lease ran out */
    bool notified;          /* lost callback already run */
    bool releasing;         /* an unlock is in flight: still renewed (it may take
                               a while), never marked lost by the watchdog */
    bool renew_stopped;     /* max_hold_ms reached */
    bool inconsistent;      /* taken with EOWNERDEAD, rdlock_consistent() not called */
    char *dead_owner;       /* Redlock, taken with EOWNERDEAD: the dead owner's
                               robust marker, which a clean unlock also clears
                               on masters that did not grant this hold (NULL
                               otherwise; lock_quorum.c) */
    rdlock_lost_fn lostcb;
    void *lostarg;
    struct rdl_handle *handle; /* whose destroy is EBUSY while this exists */
} rdl_hold_t;

size_t rdl_hold_hash(const char *key, size_t keylen, unsigned thread);
rdl_hold_t *rdl_hold_find(struct rdlock_client *c, const char *key, size_t keylen, unsigned thread);
/* Allocate a record for the handle's key (not inserted).  NULL on ENOMEM. */
rdl_hold_t *rdl_hold_new(const struct rdl_handle *h);
/* Insert into / remove from the client's table (mutex held), keeping the
 * handle's count of holds. */
int rdl_hold_insert(struct rdlock_client *c, rdl_hold_t *hold);
void rdl_hold_remove(struct rdlock_client *c, rdl_hold_t *hold);
void rdl_hold_free(rdl_hold_t *hold);
/* A fresh hold's lease timing (lock.c, sem.c): lease_ms, the renewal
 * interval (the configured one if it fits the lease, else a third of it),
 * max_hold_ms, and its first renewal and expiry from sent_at, when the
 * request that took it was sent (monotonic ms). */
struct rdl_config;
void rdl_hold_schedule(rdl_hold_t *hold, const struct rdl_config *cfg, unsigned lease, long long sent_at);

#endif
