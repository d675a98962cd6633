/* hold.h - the local record of one hold: which thread of this client holds
 * which lock name in which mode, how often (recursion / read re-entry), its
 * fencing token and lease timing for the watchdog.  Records live in the
 * client's hold table, guarded by the client's mutex. */
#ifndef RDL_HOLD_H
#define RDL_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "rdlock.h"
#include "base/table.h"

struct rdl_config;
struct rdl_handle;
struct rdlock_client;


/* What a hold is: the lock of its name (lock.c), the leased permits of
 * a semaphore (sem.c), whose server-side count only sem.lua changes, a
 * condition waiter's registration (cond.c) or a barrier arrival
 * (barrier.c): leases the watchdog renews like the others. */
enum { RDL_HOLD_LOCK = 0, RDL_HOLD_SEM = 1, RDL_HOLD_COND = 2, RDL_HOLD_BARRIER = 3 };

/* A client may hold a million of these (issue 15: <= 256 bytes of RSS
 * per held lock, handle included), so the record is packed: fields in
 * falling size order without holes, flags as bits, nothing a lock hold
 * could take from its handle or its client's configuration stored twice
 * (the name is found in the key, the call is a number, the acquire's
 * "unsure until" a span after it was sent).  sizeof is 104 on LP64 (a
 * 112-byte malloc chunk; hold.c asserts it). */
typedef struct rdl_hold {
    rdl_tnode_t node;       /* keyed by (key, thread) */
    char *key;              /* "<prefix>{<name>}"; owned, or the handle's (key_borrowed) */
    struct rdl_handle *handle; /* whose destroy is EBUSY while this exists */
    uint64_t token;         /* fencing token of the first acquisition */
    uint64_t serial;        /* unique per client: the watchdog's handle on it */
    long long acquired_at;  /* monotonic ms when the acquire was sent */
    long long renew_at;     /* next renewal due */
    long long expires_at;   /* local, conservative end of the lease */
    uint64_t call;          /* the acquire call that took it: its identity
                               on the server (in decimal), with the owner */
    unsigned thread;        /* owner thread number */
    unsigned count;         /* recursion / read re-entry depth, >= 1; a
                               semaphore hold: permits held */
    unsigned lease_ms;      /* the renewal period follows from it and the
                               client's configuration: rdl_lease_interval() */
    unsigned unsure_ms;     /* an attempt of the acquire call that got no
                               answer may act on the server until
                               acquired_at + unsure_ms (0: none): the release
                               waits for it (else that late attempt could
                               find the lock free and take it again) */
    uint16_t keylen;        /* <= RDL_PREFIX_MAX + RDL_NAME_MAX + 2 + a suffix */
    uint16_t namelen;       /* <= RDL_NAME_MAX; the name is in the key
                               (rdl_hold_name) */
    char mode;              /* 'x' exclusive, 's' shared */
    unsigned char api;      /* RDL_API_*: released through the API that took it */
    unsigned char kind;     /* RDL_HOLD_*; 0 (a lock) from calloc */
    bool watchdog : 1;
    bool lost : 1;          /* found gone by the watchdog, or lease ran out */
    bool notified : 1;      /* lost callback already run */
    bool releasing : 1;     /* an unlock is in flight: still renewed (it may take
                               a while), never marked lost by the watchdog */
    bool renew_stopped : 1; /* max_hold_ms reached */
    bool inconsistent : 1;  /* taken with EOWNERDEAD, rdlock_consistent() not called */
    bool key_borrowed : 1;  /* key and name are the handle's (a lock hold:
                               the handle outlives it, its destroy is EBUSY
                               while the hold exists), not freed with it */
    bool has_dead_owner : 1; /* rdl_hold_dead_owner() follows the record */
    /* Redlock, a hold taken with EOWNERDEAD: the dead owner's robust
     * marker, which a clean unlock also clears on masters that did not
     * grant this hold (lock_quorum.c), follows the record in the same
     * allocation (rdl_hold_set_dead_owner); no pointer for the rare case. */
} rdl_hold_t;

size_t rdl_hold_hash(const char *key, size_t keylen, unsigned thread);
/* The name (namelen bytes, in the key after the prefix's "{": not
 * NUL-terminated). */
const char *rdl_hold_name(const rdl_hold_t *hold);
/* The acquire call's number as the server knows it (decimal, NUL); buf
 * of 21 bytes.  Returns buf. */
char *rdl_hold_call_str(const rdl_hold_t *hold, char *buf);
/* When the acquire's unanswered attempts can no longer act (monotonic
 * ms; 0 none). */
static inline long long rdl_hold_unsure_until(const rdl_hold_t *hold)
{
    return hold->unsure_ms ? hold->acquired_at + hold->unsure_ms : 0;
}
rdl_hold_t *rdl_hold_find(struct rdlock_client *c, const char *key, size_t keylen, unsigned thread);
/* Allocate a record for the handle's key (not inserted).  NULL on ENOMEM. */
rdl_hold_t *rdl_hold_new(const struct rdl_handle *h);
/* Insert into / remove from the client's table (mutex held), keeping the
 * handle's count of holds.  insert: 0, or ENOMEM (only when the table
 * has no bucket array yet: one that cannot grow takes the hold anyway, in
 * longer chains). */
int rdl_hold_insert(struct rdlock_client *c, rdl_hold_t *hold);
void rdl_hold_remove(struct rdlock_client *c, rdl_hold_t *hold);
void rdl_hold_free(rdl_hold_t *hold);
/* The lost callback of a hold and its argument: a lock hold's are its
 * handle's (lock.c); the other kinds have none.  NULL if none. */
rdlock_lost_fn rdl_hold_lostcb(const rdl_hold_t *hold, void **arg);
/* The dead owner's marker of a Redlock hold taken with EOWNERDEAD, or
 * NULL. */
const char *rdl_hold_dead_owner(const rdl_hold_t *hold);
/* Record it (a hold not yet inserted: the record may move).  Returns the
 * record, which is hold itself, without the marker, when short of memory
 * (the marker is then left to expire on the masters that keep it, as
 * before). */
rdl_hold_t *rdl_hold_set_dead_owner(rdl_hold_t *hold, const char *owner);
/* What ending a hold at process exit needs, copied out of the table:
 * the record may go while the scripts run without the client mutex. */
typedef struct rdl_exit_hold {
    char *key;              /* the hold's key, owned */
    size_t keylen;
    struct rdl_handle *handle;
    long long unsure_until; /* rdl_hold_unsure_until */
    unsigned thread, lease_ms;
    unsigned char kind;     /* RDL_HOLD_* */
    char mode;
    char call[21];
} rdl_exit_hold_t;

/* The holds of the kinds in kinds (bits 1 << RDL_HOLD_*) that are not
 * lost (mutex held).  A lock's or a semaphore's hold that is being
 * released is left to its release, and the others are marked as being
 * released: neither renewed nor released by another thread from now on
 * (the record stays).  Condition registrations and barrier arrivals are
 * marked so from the start (prim.h) and are all taken.  *n of them (those
 * that memory allowed: the rest end with their leases); free with
 * rdl_exit_holds_free. */
rdl_exit_hold_t *rdl_exit_holds(struct rdlock_client *c, unsigned kinds, size_t *n);
void rdl_exit_holds_free(rdl_exit_hold_t *v, size_t n);

/* A fresh hold's lease timing (lock.c, sem.c, prim.c): lease_ms, and its
 * first renewal and expiry from sent_at, when the request that took it was
 * sent (monotonic ms), by the formulas of lease.h on c's configuration and
 * c->exec's clocks. */
void rdl_hold_schedule(rdl_hold_t *hold, const struct rdlock_client *c, unsigned lease, long long sent_at);

#endif
