/* test_robust.c - robust locks against a real redis-server (docs/CONTRACT.md sections
 * 2, 5.4 and the robust bullet of 10; include/rdlock.h:
 * rdlock_attr_setrobust, rdlock_consistent, rdlock_reset_name).
 *
 * A robust exclusive acquirer that takes over a hold which ended by lease
 * expiry or loss rather than unlock gets EOWNERDEAD with the lock held;
 * rdlock_consistent() then unlock leaves the lock clean, unlock without it
 * makes the name ENOTRECOVERABLE for every acquisition in either mode, by
 * any process, until rdlock_reset_name() clears it (keeping the fencing
 * counter).
 *
 * Owners that die are forked "actor" processes with their own client,
 * driven through a line protocol on pipes (tests/testlib.h section 11)
 * and killed with SIGKILL while they hold a lock with a short (300 ms)
 * lease that their watchdog renews.  The robust state is checked through the public
 * API and through the documented key layout (src/scripts/acquire.lua:
 * "rdlock:{N}:x" absent = clean, "<owner>" = the exclusive holder,
 * "?<owner>" = handed over with EOWNERDEAD, "!" = not recoverable).
 *
 * Nothing sleeps to synchronise actors: waits are pipe reads with a
 * deadline or bounded polls of the real state in Redis; the only time that
 * passes on purpose is a dead owner's lease running out. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

#define LEASE_MS 300     /* the lease of every short-lived hold */
#define LONG_LEASE_MS 5000
#define RETRY_MS 100     /* [lock] retry_interval_ms of g_ini (the default) */
#define JITTER_MS 20     /* [lock] retry_jitter_ms of g_ini (the default) */
#define FAST_MS 250      /* "at once": one round trip, far below any wait */
#define WAKE_MS 1000     /* a wake-up, far below g_ini_slow's 2000 ms re-check */
#define REPLY_MS 10000   /* an actor's answer to a call that should not block */

static rdt_server_t g_srv;
static redisContext *g_rc;    /* plain connection for checking state (main thread only) */
static rdlock_client_t *g_c1; /* two explicit clients of this process: two owners */
static rdlock_client_t *g_c2;
static char g_ini[512];       /* defaults: retry_interval_ms 100, jitter 20 */
static char g_ini_slow[512];  /* retry_interval_ms = 2000: only wake-ups are fast */

/* ------------------------------------------------------------------ */
/* Redis state helpers                                                 */
/* ------------------------------------------------------------------ */

static long long fence_of(const char *name)
{
    return rdt_get_ll(g_rc, rdt_fence_key(NULL, name));
}

/* The robust marker "rdlock:{name}:x": 0 absent, 1 present (copied into
 * buf), -1 on error. */
static int xstate(const char *name, char *buf, size_t n)
{
    return rdt_get_str(g_rc, rdt_key(name, ":x"), buf, n);
}

static int x_absent(const char *name)
{
    char b[256];
    int rc = xstate(name, b, sizeof b);
    if (rc != 0)
        fprintf(stderr, "%s: robust marker %s = \"%s\", expected absent\n", name, rdt_key(name, ":x"), b);
    return rc == 0;
}

static int x_is(const char *name, const char *want)
{
    char b[256];
    int rc = xstate(name, b, sizeof b);
    if (rc != 1 || strcmp(b, want) != 0)
        fprintf(stderr, "%s: robust marker = %s\"%s\", expected \"%s\"\n", name, rc == 1 ? "" : "(absent) ", b,
                want);
    return rc == 1 && strcmp(b, want) == 0;
}

/* Present and starting with '?': handed over with EOWNERDEAD. */
static int x_inconsistent(const char *name)
{
    char b[256];
    int rc = xstate(name, b, sizeof b);
    if (rc != 1 || b[0] != '?')
        fprintf(stderr, "%s: robust marker = %s\"%s\", expected \"?<owner>\"\n", name,
                rc == 1 ? "" : "(absent) ", b);
    return rc == 1 && b[0] == '?';
}

/* ------------------------------------------------------------------ */
/* lock helpers (main process)                                         */
/* ------------------------------------------------------------------ */

static int mx_init(rdlock_t *m, const char *name, rdlock_client_t *c, int robust, int type)
{
    rdt_lockopts_t o = { c, robust, type, 0, -1, NULL, NULL };
    return rdt_mutex_init(m, name, &o);
}

static int rw_init(rdrwlock_t *rw, const char *name, rdlock_client_t *c, int robust)
{
    rdt_lockopts_t o = { c, robust, 0, 0, -1, NULL, NULL };
    return rdt_rwlock_init(rw, name, &o);
}

static unsigned mx_count(rdlock_t *m)
{
    unsigned n = 999;
    if (rdlock_holdcount(m, &n) != 0)
        return 999;
    return n;
}

/* ------------------------------------------------------------------ */
/* actors: forked processes with their own client                      */
/* ------------------------------------------------------------------ */

/* Every actor here (testlib.h section 11) holds its name with a lease
 * (short, or long for holds that must outlast a test step) that its
 * watchdog renews, robust or not, of a type; slow ones re-check every
 * 2000 ms, so that only wake-ups can be fast.  0, or -1 (printed). */
static int actor_on(rdt_actor_t *a, const char *name, int robust, int type, unsigned lease, int slow)
{
    rdt_actor_opts_t o = RDT_ACTOR_OPTS;

    o.robust = robust;
    o.type = type;
    o.lease = lease;
    o.watchdog = 1;
    return rdt_actor_start(a, slow ? g_ini_slow : g_ini, name, &o);
}

/* The value of a command that should succeed (token, holdcount), or
 * ~0ULL after a failed assertion. */
static unsigned long long actor_value(rdt_actor_t *a, const char *cmd)
{
    unsigned long long v = 0;
    int rc = rdt_actor_call(a, cmd, REPLY_MS, &v, NULL);
    RDT_ASSERT_RC(0, rc);
    return rc == 0 ? v : ~0ULL;
}

/* A process (plain or robust) takes name exclusively through its mutex
 * (or its rwlock's wrlock when use_rw) and is SIGKILLed while holding it.
 * Returns the dead owner's fencing token, 0 after a failed assertion.
 * The lock key lives on until its lease (LEASE_MS) runs out; with
 * wait_expiry, this returns only after that (a bounded poll), so that the
 * next acquirer finds the lock free and does not have to wait. */
static uint64_t dead_owner(const char *name, int robust, int use_rw, int wait_expiry)
{
    rdt_actor_t h;
    unsigned long long tok = 0;
    int rc;

    if (actor_on(&h, name, robust, 0, LEASE_MS, 0) != 0) {
        CU_FAIL("holder actor did not start");
        return 0;
    }
    rc = rdt_actor_call(&h, use_rw ? "wrlock" : "lock", REPLY_MS, NULL, NULL);
    RDT_ASSERT_RC(0, rc);
    if (rc == 0)
        rc = rdt_actor_call(&h, use_rw ? "rwtoken" : "token", REPLY_MS, &tok, NULL);
    RDT_ASSERT_RC(0, rc);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(name, "")), 1);
    rdt_actor_kill(&h);
    if (wait_expiry && !rdt_wait_gone(g_rc, rdt_key(name, ""), 3000)) {
        CU_FAIL("the dead owner's lease did not run out");
        return 0;
    }
    return rc == 0 ? (uint64_t)tok : 0;
}

/* ------------------------------------------------------------------ */
/* setup                                                               */
/* ------------------------------------------------------------------ */

static int suite_setup(void)
{
    if (rdt_suite_start(&g_srv, &g_rc) != 0 || rdt_ini_copy(&g_srv, 0, NULL, g_ini, sizeof g_ini) != 0 ||
        rdt_ini_copy(&g_srv, 0, "[lock]\nretry_interval_ms = 2000\nretry_jitter_ms = 0\n", g_ini_slow,
                     sizeof g_ini_slow) != 0)
        return -1;
    if (rdlock_client_open(&g_c1, g_ini) != 0 || rdlock_client_open(&g_c2, g_ini) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open failed\n");
        return -1;
    }
    return rdt_flushall(&g_srv);
}

static int suite_teardown(void)
{
    int rc;
    rdt_actor_reap_all();
    rc = rdt_close_clients(&g_c1, &g_c2, NULL);
    rdt_suite_stop(&g_srv, &g_rc);
    return rc;
}

static void fresh(void)
{
    rdt_actor_reap_all(); /* left over by a test that failed fatally */
    CU_ASSERT_EQUAL_FATAL(rdt_flushall(&g_srv), 0);
}

/* ------------------------------------------------------------------ */
/* owner death: EOWNERDEAD                                             */
/* ------------------------------------------------------------------ */

/* The holder is SIGKILLed; another process's robust rdlock_lock gets
 * EOWNERDEAD with the lock held: first on a lock whose dead lease already
 * ran out, then issued at once after the kill, so that it has to wait out
 * the dead lease.  consistent + unlock leave the lock clean. */
static void test_owner_dead_lock(void)
{
    const char *N = "od-lock";
    rdt_actor_t b;
    rdlock_t other, plain;
    uint64_t dead;
    unsigned long long tok = 0, tok2 = 0;
    long long el = 0;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&other, N, g_c2, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&plain, N, g_c2, RDLOCK_STALLED, 0));
    CU_ASSERT_FATAL(actor_on(&b, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);

    /* 1. the dead lease has run out: lock needs no waiting */
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1);
    CU_ASSERT_FATAL(dead > 0);
    RDT_ASSERT_RC(EOWNERDEAD, rdt_actor_call(&b, "lock", REPLY_MS, NULL, &el));
    CU_ASSERT(el < FAST_MS);
    /* held: by b, once, with a newer token */
    CU_ASSERT_EQUAL(actor_value(&b, "holdcount"), 1);
    tok = actor_value(&b, "token");
    if (!(tok > dead))
        fprintf(stderr, "EOWNERDEAD token %llu, dead owner's %" PRIu64 "\n", tok, dead);
    CU_ASSERT(tok > dead && tok != ~0ULL);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 1);
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other)); /* not EOWNERDEAD: it is held */
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&plain));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&b, "trylock", REPLY_MS, NULL, NULL)); /* its own relock (error-checking) */

    RDT_ASSERT_RC(0, rdt_actor_call(&b, "consistent", REPLY_MS, NULL, NULL));
    CU_ASSERT_EQUAL(actor_value(&b, "holdcount"), 1); /* still held */
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 0);
    CU_ASSERT_EQUAL(actor_value(&b, "holdcount"), 0);

    /* normal again: robust acquirers get 0, in both processes */
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    CU_ASSERT(rdt_mutex_token(&other) > tok);
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "lock", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));

    /* 2. issued right after the kill: lock waits out the dead lease
     * (queueing as a waiting writer meanwhile), then EOWNERDEAD */
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 0);
    CU_ASSERT_FATAL(dead > tok);
    RDT_ASSERT_RC(EOWNERDEAD, rdt_actor_call(&b, "lock", REPLY_MS, NULL, &el));
    CU_ASSERT(el < LEASE_MS + RETRY_MS + JITTER_MS + 500); /* waited for the dead lease only */
    CU_ASSERT_EQUAL(actor_value(&b, "holdcount"), 1);
    tok2 = actor_value(&b, "token");
    CU_ASSERT(tok2 > dead && tok2 != ~0ULL);
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "consistent", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));

    rdt_actor_stop(&b);
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
    RDT_ASSERT_RC(0, rdlock_destroy(&plain));
}

/* The trylock variant: once the dead lease ran out, a robust trylock
 * gets EOWNERDEAD at once, holding the lock. */
static void test_owner_dead_trylock(void)
{
    const char *N = "od-try";
    rdlock_t m, other;
    uint64_t dead, tok;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&other, N, g_c2, RDLOCK_ROBUST, 0));
    dead = dead_owner(N, RDLOCK_STALLED, 0, 0); /* the holder's own attribute does not matter */
    CU_ASSERT_FATAL(dead > 0);
    /* before the lease ends it is simply busy */
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    CU_ASSERT_FATAL(rdt_wait_gone(g_rc, rdt_key(N, ""), 3000));

    RDT_ASSERT_RC(EOWNERDEAD, rdlock_trylock(&m));
    CU_ASSERT_EQUAL(mx_count(&m), 1);
    tok = rdt_mutex_token(&m);
    CU_ASSERT(tok > dead);
    RDT_ASSERT_EQ_LL((long long)tok, fence_of(N));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(0, rdlock_consistent(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(x_absent(N));

    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    CU_ASSERT(rdt_mutex_token(&other) > tok);
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(x_absent(N));

    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* The timed variants: timedlock issued right after the kill waits out the
 * dead lease and returns EOWNERDEAD (not ETIMEDOUT); clocklock on a lock
 * whose dead lease already ran out returns EOWNERDEAD at once. */
static void test_owner_dead_timedlock(void)
{
    const char *N = "od-timed";
    rdlock_t m, other;
    struct timespec ts;
    uint64_t dead, tok;
    long long t0, el;
    int rc;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&other, N, g_c2, RDLOCK_ROBUST, 0));

    dead = dead_owner(N, RDLOCK_ROBUST, 0, 0);
    CU_ASSERT_FATAL(dead > 0);
    t0 = rdt_now_ms();
    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    rc = rdlock_timedlock(&m, &ts);
    el = rdt_now_ms() - t0;
    RDT_ASSERT_RC(EOWNERDEAD, rc);
    CU_ASSERT(el < LEASE_MS + RETRY_MS + JITTER_MS + 500);
    CU_ASSERT_EQUAL(mx_count(&m), 1);
    tok = rdt_mutex_token(&m);
    CU_ASSERT(tok > dead);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_consistent(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(x_absent(N));

    /* again, with clocklock on CLOCK_MONOTONIC */
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1);
    CU_ASSERT_FATAL(dead > tok);
    ts = rdt_abstime(CLOCK_MONOTONIC, 5000);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_clocklock(&other, CLOCK_MONOTONIC, &ts));
    CU_ASSERT(rdt_now_ms() - t0 < FAST_MS);
    CU_ASSERT_EQUAL(mx_count(&other), 1);
    CU_ASSERT(rdt_mutex_token(&other) > dead);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_consistent(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    CU_ASSERT(x_absent(N));
    ts = rdt_abstime(CLOCK_REALTIME, 2000);
    RDT_ASSERT_RC(0, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* A robust waiter already blocked in rdlock_lock when the holder is
 * SIGKILLed gets EOWNERDEAD when the lease runs out: no sooner, and within
 * about lease + retry interval. */
static void test_robust_waiter_blocked(void)
{
    const char *N = "od-waiter";
    rdt_actor_t h, w;
    unsigned long long dead, tok;
    long long left, t_kill, el;
    int rc;

    fresh();
    CU_ASSERT_FATAL(actor_on(&h, N, RDLOCK_STALLED, 0, LEASE_MS, 0) == 0);
    CU_ASSERT_FATAL(actor_on(&w, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&h, "lock", REPLY_MS, NULL, NULL));
    dead = actor_value(&h, "token");
    CU_ASSERT_FATAL(rdt_actor_send(&w, "lock") == 0);
    CU_ASSERT_FATAL(rdt_wait_zcard(g_rc, rdt_key(N, ":w"), 1, 3000));

    left = rdt_pttl(g_rc, rdt_key(N, ""));
    t_kill = rdt_now_ms();
    rdt_actor_kill(&h);
    rc = rdt_actor_reply(&w, 5000, NULL, NULL);
    el = rdt_now_ms() - t_kill;
    RDT_ASSERT_RC(EOWNERDEAD, rc);
    printf("[EOWNERDEAD %lld ms after the kill, lease had %lld ms left] ", el, left);
    CU_ASSERT(left > 0 && left <= LEASE_MS);
    CU_ASSERT(el >= left - 20); /* not before the dead lease ended */
    CU_ASSERT(el <= LEASE_MS + RETRY_MS + JITTER_MS + 250);

    CU_ASSERT_EQUAL(actor_value(&w, "holdcount"), 1);
    tok = actor_value(&w, "token");
    CU_ASSERT(tok > dead && tok != ~0ULL);
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, rdt_key(N, ":w"))); /* its queue mark is gone */
    RDT_ASSERT_RC(0, rdt_actor_call(&w, "consistent", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&w, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));
    rdt_actor_stop(&w);
}

/* A robust acquirer that got EOWNERDEAD dies itself before
 * rdlock_consistent(): the next robust acquirer gets EOWNERDEAD again. */
static void test_eownerdead_holder_dies(void)
{
    const char *N = "od-twice";
    rdt_actor_t b, c;
    unsigned long long t1, t2;
    uint64_t dead;

    fresh();
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1);
    CU_ASSERT_FATAL(dead > 0);
    CU_ASSERT_FATAL(actor_on(&b, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(EOWNERDEAD, rdt_actor_call(&b, "lock", REPLY_MS, NULL, NULL));
    t1 = actor_value(&b, "token");
    CU_ASSERT(t1 > dead && t1 != ~0ULL);
    rdt_actor_kill(&b); /* dies repairing */
    CU_ASSERT_FATAL(rdt_wait_gone(g_rc, rdt_key(N, ""), 3000));

    CU_ASSERT_FATAL(actor_on(&c, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(EOWNERDEAD, rdt_actor_call(&c, "lock", REPLY_MS, NULL, NULL));
    t2 = actor_value(&c, "token");
    CU_ASSERT(t2 > t1 && t2 != ~0ULL);
    CU_ASSERT_EQUAL(actor_value(&c, "holdcount"), 1);
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(0, rdt_actor_call(&c, "consistent", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&c, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(0, rdt_actor_call(&c, "lock", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&c, "unlock", REPLY_MS, NULL, NULL));
    rdt_actor_stop(&c);
}

/* A non-robust acquirer after an owner death gets 0 (normal behaviour),
 * and its clean unlock clears the state. */
static void test_nonrobust_after_death(void)
{
    const char *N = "od-plain";
    rdt_actor_t n;
    rdlock_t rob;
    unsigned long long tok;
    uint64_t dead;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&rob, N, g_c1, RDLOCK_ROBUST, 0));
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 0);
    CU_ASSERT_FATAL(dead > 0);
    CU_ASSERT_FATAL(actor_on(&n, N, RDLOCK_STALLED, 0, LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&n, "lock", REPLY_MS, NULL, NULL));
    CU_ASSERT_EQUAL(actor_value(&n, "holdcount"), 1);
    tok = actor_value(&n, "token");
    CU_ASSERT(tok > dead && tok != ~0ULL);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&rob));
    RDT_ASSERT_RC(EINVAL, rdt_actor_call(&n, "consistent", REPLY_MS, NULL, NULL)); /* not robust */
    RDT_ASSERT_RC(0, rdt_actor_call(&n, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));

    RDT_ASSERT_RC(0, rdlock_trylock(&rob)); /* not EOWNERDEAD */
    CU_ASSERT(rdt_mutex_token(&rob) > tok);
    RDT_ASSERT_RC(0, rdlock_unlock(&rob));
    CU_ASSERT(x_absent(N));

    rdt_actor_stop(&n);
    RDT_ASSERT_RC(0, rdlock_destroy(&rob));
}

/* [lock] release_at_exit (the default): a process that exit()s holding
 * locks ends its holds then, as its death would at lease end, so nobody
 * waits for the lease: an exclusive hold leaves the owner-died state (a
 * robust waiter blocked meanwhile is woken with EOWNERDEAD, a plain locker
 * simply gets the lock), a shared one is released.  With release_at_exit
 * = no the hold stays until its lease.  Every hold here has a 5 s lease:
 * what happens within half of it is the exit's doing. */
static void test_exit_releases(void)
{
    const char *N = "exit-x", *NP = "exit-plain", *NS = "exit-s", *NN = "exit-no";
    rdt_actor_opts_t o = RDT_ACTOR_OPTS;
    rdt_actor_t b, w;
    rdlock_t rob, waiter, plain, kept;
    rdrwlock_t rw;
    unsigned long long tok = 0, val = 0;
    long long t0;
    char ini_no[512];

    fresh();
    RDT_ASSERT_RC(0, mx_init(&rob, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&waiter, N, g_c2, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&plain, NP, g_c1, RDLOCK_STALLED, 0));
    RDT_ASSERT_RC(0, rw_init(&rw, NS, g_c1, RDLOCK_STALLED));
    RDT_ASSERT_RC(0, mx_init(&kept, NN, g_c1, RDLOCK_STALLED, 0));

    /* 1. exclusive and robust, with a robust waiter blocked meanwhile
     * (its deadline, 4 s, comes before the lease's end) */
    CU_ASSERT_FATAL(actor_on(&b, N, RDLOCK_ROBUST, 0, LONG_LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "lock", REPLY_MS, &tok, NULL));
    CU_ASSERT_FATAL(rdt_actor_thread(&w, &waiter, NULL) == 0);
    RDT_ASSERT_RC(0, rdt_actor_send(&w, "timed 4000"));
    CU_ASSERT_EQUAL(rdt_actor_reply(&w, FAST_MS, NULL, NULL), RDT_ACTOR_NOREPLY); /* blocked */
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdt_actor_exit(&b));
    RDT_ASSERT_RC(EOWNERDEAD, rdt_actor_reply(&w, REPLY_MS, &val, NULL));
    CU_ASSERT(rdt_now_ms() - t0 < LONG_LEASE_MS / 2);
    CU_ASSERT(val > tok && val != ~0ULL);
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&rob)); /* the waiter holds it now */
    RDT_ASSERT_RC(0, rdt_actor_call(&w, "consistent", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&w, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));
    rdt_actor_stop(&w);

    /* 2. exclusive, not robust: a plain locker gets it at once */
    CU_ASSERT_FATAL(actor_on(&b, NP, RDLOCK_STALLED, 0, LONG_LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "lock", REPLY_MS, &tok, NULL));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&plain));
    RDT_ASSERT_RC(0, rdt_actor_exit(&b));
    RDT_ASSERT_RC(0, rdlock_trylock(&plain));
    CU_ASSERT(rdt_mutex_token(&plain) > tok);
    RDT_ASSERT_RC(0, rdlock_unlock(&plain));
    CU_ASSERT(x_absent(NP));

    /* 3. shared: released, so a writer gets it at once, cleanly */
    CU_ASSERT_FATAL(actor_on(&b, NS, RDLOCK_STALLED, 0, LONG_LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "rdlock", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(0, rdt_actor_exit(&b));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    CU_ASSERT(x_absent(NS));

    /* 4. release_at_exit = no: the hold outlives the process, to its lease */
    CU_ASSERT_FATAL(rdt_ini_copy(&g_srv, 0, "[lock]\nrelease_at_exit = no\n", ini_no, sizeof ini_no) == 0);
    o.lease = LONG_LEASE_MS;
    o.watchdog = 1;
    CU_ASSERT_FATAL(rdt_actor_start(&b, ini_no, NN, &o) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "lock", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_exit(&b));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&kept));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(NN, "")), 1);

    RDT_ASSERT_RC(0, rdlock_destroy(&rob));
    RDT_ASSERT_RC(0, rdlock_destroy(&waiter));
    RDT_ASSERT_RC(0, rdlock_destroy(&plain));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdlock_destroy(&kept));
}

/* ------------------------------------------------------------------ */
/* ENOTRECOVERABLE and reset                                           */
/* ------------------------------------------------------------------ */

typedef struct op {
    const char *cmd;
    const char *undo; /* how to give it back after a wrong success */
} op_t;

static const op_t g_all_ops[] = {
    { "lock", "unlock" },      { "trylock", "unlock" }, { "timed 3000", "unlock" },
    { "rdlock", "rwunlock" },  { "wrlock", "rwunlock" }, { "tryrd", "rwunlock" },
    { "trywr", "rwunlock" },   { "timedrd 3000", "rwunlock" }, { "timedwr 3000", "rwunlock" },
    { NULL, NULL },
};

/* Every acquisition form through actor a: ENOTRECOVERABLE, at once.
 * Stops at the first call that does not answer (a blocked lock). */
static void all_not_recoverable(rdt_actor_t *a, const char *who)
{
    const op_t *op;
    for (op = g_all_ops; op->cmd; op++) {
        long long el = -1;
        int rc = rdt_actor_call(a, op->cmd, 4000, NULL, &el);
        if (rc != ENOTRECOVERABLE || el >= FAST_MS)
            fprintf(stderr, "%s %s: %s after %lld ms\n", who, op->cmd, rdt_errname(rc), el);
        RDT_ASSERT_RC(ENOTRECOVERABLE, rc);
        CU_ASSERT(el >= 0 && el < FAST_MS);
        if (rc == RDT_ACTOR_NOREPLY) /* blocked: it is out of step now */
            break;
        if (rc == 0 || rc == EOWNERDEAD) /* keep going after a wrong success */
            rdt_actor_call(a, op->undo, REPLY_MS, NULL, NULL);
    }
}

/* Make name not recoverable: an owner dies, a robust process gets
 * EOWNERDEAD and unlocks without rdlock_consistent().  Returns the highest
 * token handed out, 0 after a failed assertion. */
static unsigned long long make_not_recoverable(const char *name)
{
    rdt_actor_t b;
    unsigned long long tok = 0;
    uint64_t dead = dead_owner(name, RDLOCK_ROBUST, 0, 1);
    int rc;

    if (dead == 0)
        return 0;
    if (actor_on(&b, name, RDLOCK_ROBUST, 0, LEASE_MS, 0) != 0) {
        CU_FAIL("actor did not start");
        return 0;
    }
    rc = rdt_actor_call(&b, "lock", REPLY_MS, NULL, NULL);
    RDT_ASSERT_RC(EOWNERDEAD, rc);
    tok = actor_value(&b, "token");
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "unlock", REPLY_MS, NULL, NULL));
    rdt_actor_stop(&b);
    if (!x_is(name, "!"))
        CU_FAIL("the robust marker does not say not recoverable");
    return rc == EOWNERDEAD && tok != ~0ULL && tok > dead ? tok : 0;
}

/* Unlock after EOWNERDEAD without rdlock_consistent(): the unlock itself
 * succeeds, then every acquisition of the name, by any process, in either
 * mode, robust or not, fails with ENOTRECOVERABLE at once, including
 * waiters that were blocked when the unlock happened. */
static void test_not_recoverable(void)
{
    const char *N = "nr";
    rdt_actor_t b, w1, w2, c, d;
    rdlock_t m, mp;
    rdrwlock_t rw;
    struct timespec ts;
    uint64_t dead;
    long long t_unlock, t0, el;
    int rc;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&mp, N, g_c2, RDLOCK_STALLED, 0));
    RDT_ASSERT_RC(0, rw_init(&rw, N, g_c2, RDLOCK_STALLED));
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1);
    CU_ASSERT_FATAL(dead > 0);

    /* b takes it with EOWNERDEAD, with a long lease so that waiters'
     * re-checks are bounded by their retry interval (2000 ms) alone */
    CU_ASSERT_FATAL(actor_on(&b, N, RDLOCK_ROBUST, 0, LONG_LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(EOWNERDEAD, rdt_actor_call(&b, "lock", REPLY_MS, NULL, NULL));
    CU_ASSERT(actor_value(&b, "token") > dead);

    /* a robust writer and a plain reader block on it (slow re-checks) */
    CU_ASSERT_FATAL(actor_on(&w1, N, RDLOCK_ROBUST, 0, 30000, 1) == 0);
    CU_ASSERT_FATAL(actor_on(&w2, N, RDLOCK_STALLED, 0, 30000, 1) == 0);
    CU_ASSERT_FATAL(rdt_actor_send(&w1, "lock") == 0);
    CU_ASSERT_FATAL(rdt_actor_send(&w2, "rdlock") == 0);
    CU_ASSERT_FATAL(rdt_wait_zcard(g_rc, rdt_key(N, ":w"), 1, 3000));
    CU_ASSERT_FATAL(rdt_wait_zcard(g_rc, rdt_key(N, ":r"), 1, 3000));

    /* the unlock without consistent succeeds */
    t_unlock = rdt_now_ms();
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT_EQUAL(actor_value(&b, "holdcount"), 0);
    CU_ASSERT(x_is(N, "!"));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 0);

    /* the blocked waiters return ENOTRECOVERABLE promptly */
    rc = rdt_actor_reply(&w1, 5000, NULL, NULL);
    el = rdt_now_ms() - t_unlock;
    RDT_ASSERT_RC(ENOTRECOVERABLE, rc);
    if (el >= WAKE_MS)
        fprintf(stderr, "blocked rdlock_lock returned %lld ms after the unlock\n", el);
    CU_ASSERT(el < WAKE_MS);
    rc = rdt_actor_reply(&w2, 5000, NULL, NULL);
    el = rdt_now_ms() - t_unlock;
    RDT_ASSERT_RC(ENOTRECOVERABLE, rc);
    if (el >= WAKE_MS)
        fprintf(stderr, "blocked rdrwlock_rdlock returned %lld ms after the unlock\n", el);
    CU_ASSERT(el < WAKE_MS);
    CU_ASSERT_EQUAL(actor_value(&w1, "holdcount"), 0);
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, rdt_key(N, ":w"))); /* the waiter left the queue */

    /* every form, in other processes, robust and not, and in b itself */
    all_not_recoverable(&w1, "robust process");
    all_not_recoverable(&w2, "plain process");
    CU_ASSERT_FATAL(actor_on(&c, N, RDLOCK_ROBUST, RDLOCK_RECURSIVE, LEASE_MS, 0) == 0);
    CU_ASSERT_FATAL(actor_on(&d, N, RDLOCK_STALLED, 0, LEASE_MS, 0) == 0);
    all_not_recoverable(&c, "new robust process");
    all_not_recoverable(&d, "new plain process");
    all_not_recoverable(&b, "the process that unlocked");

    /* and in this process, on both clients */
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_trylock(&m));
    ts = rdt_abstime(CLOCK_REALTIME, 3000);
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_timedlock(&m, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 3000);
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_clocklock(&mp, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_trylock(&mp));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdrwlock_tryrdlock(&rw));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdrwlock_trywrlock(&rw));
    ts = rdt_abstime(CLOCK_REALTIME, 3000);
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdrwlock_timedrdlock(&rw, &ts));
    el = rdt_now_ms() - t0;
    CU_ASSERT(el < 7 * FAST_MS);
    CU_ASSERT_EQUAL(mx_count(&m), 0);
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));

    /* nothing changed it: still not recoverable, nobody holds or waits */
    CU_ASSERT(x_is(N, "!"));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 0);
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, rdt_key(N, ":w")));

    rdt_actor_stop(&b);
    rdt_actor_stop(&w1);
    rdt_actor_stop(&w2);
    rdt_actor_stop(&c);
    rdt_actor_stop(&d);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&mp));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
}

/* rdlock_reset_name() clears ENOTRECOVERABLE: acquisitions in both modes
 * work again (a robust one gets 0, not EOWNERDEAD), and the fencing
 * counter survives: the next token is larger than every earlier one. */
static void test_reset_clears_not_recoverable(void)
{
    const char *N = "nr-reset";
    rdt_actor_t c;
    rdlock_t m;
    rdrwlock_t rw, rw2;
    unsigned long long maxtok, tok;
    uint64_t t2 = 0, t3 = 0, t4 = 0;
    long long fence;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, rw_init(&rw, N, g_c2, RDLOCK_STALLED));
    RDT_ASSERT_RC(0, rw_init(&rw2, N, g_c1, RDLOCK_ROBUST));
    maxtok = make_not_recoverable(N);
    CU_ASSERT_FATAL(maxtok > 0);
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_trylock(&m));
    fence = fence_of(N);
    CU_ASSERT(fence >= (long long)maxtok);

    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, N));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_EQ_LL(fence, fence_of(N)); /* kept, not reset */

    /* another process: a robust lock gets 0 at once */
    CU_ASSERT_FATAL(actor_on(&c, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);
    {
        long long el = -1;
        RDT_ASSERT_RC(0, rdt_actor_call(&c, "lock", REPLY_MS, NULL, &el));
        CU_ASSERT(el < FAST_MS);
    }
    tok = actor_value(&c, "token");
    if (!(tok > maxtok && (long long)tok > fence))
        fprintf(stderr, "token after reset %llu, before %llu (fence %lld)\n", tok, maxtok, fence);
    CU_ASSERT(tok > maxtok && (long long)tok > fence && tok != ~0ULL);
    RDT_ASSERT_RC(EINVAL, rdt_actor_call(&c, "consistent", REPLY_MS, NULL, NULL)); /* a normal hold */
    RDT_ASSERT_RC(0, rdt_actor_call(&c, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));

    /* this process: mutex, writer and readers */
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    t2 = rdt_mutex_token(&m);
    CU_ASSERT(t2 > tok);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw2));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rw2, &t3));
    CU_ASSERT(t3 > t2);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw2));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rw, &t4));
    CU_ASSERT(t4 > t3);
    RDT_ASSERT_RC(0, rdt_actor_call(&c, "tryrd", REPLY_MS, NULL, NULL)); /* shared with another process */
    RDT_ASSERT_RC(0, rdt_actor_call(&c, "rwunlock", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    CU_ASSERT(x_absent(N));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 0);

    /* a reset of a clean name is harmless and still keeps the counter */
    fence = fence_of(N);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c2, N));
    RDT_ASSERT_EQ_LL(fence, fence_of(N));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    CU_ASSERT((long long)rdt_mutex_token(&m) > fence);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    rdt_actor_stop(&c);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw2));
}

static void test_reset_name_einval(void)
{
    char big[600];
    rdlock_t m;

    fresh();
    RDT_ASSERT_RC(EINVAL, rdlock_reset_name(g_c1, NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_reset_name(g_c1, ""));
    memset(big, 'r', 513);
    big[513] = '\0';
    RDT_ASSERT_RC(EINVAL, rdlock_reset_name(g_c1, big));
    /* 512 bytes is a valid name */
    big[512] = '\0';
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, big));
    RDT_ASSERT_RC(0, mx_init(&m, big, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A reset of a name another process holds clears that hold: a waiter gets
 * the lock, the old holder's unlock gives ENOLCK (and clears its local
 * hold) without touching the new holder's. */
static void test_reset_held_by_other(void)
{
    const char *N = "reset-held";
    rdt_actor_t a, w;
    rdlock_t m;
    unsigned long long ta, tw;
    long long t_reset, el;
    int rc;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c2, RDLOCK_STALLED, 0));
    CU_ASSERT_FATAL(actor_on(&a, N, RDLOCK_ROBUST, 0, LONG_LEASE_MS, 0) == 0);
    CU_ASSERT_FATAL(actor_on(&w, N, RDLOCK_STALLED, 0, 30000, 1) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&a, "lock", REPLY_MS, NULL, NULL));
    ta = actor_value(&a, "token");
    CU_ASSERT_FATAL(rdt_actor_send(&w, "lock") == 0);
    CU_ASSERT_FATAL(rdt_wait_zcard(g_rc, rdt_key(N, ":w"), 1, 3000));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));

    t_reset = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, N));
    rc = rdt_actor_reply(&w, 5000, NULL, NULL);
    el = rdt_now_ms() - t_reset;
    RDT_ASSERT_RC(0, rc);
    if (el >= WAKE_MS)
        fprintf(stderr, "waiter took the reset lock %lld ms after the reset\n", el);
    CU_ASSERT(el < WAKE_MS);
    tw = actor_value(&w, "token");
    CU_ASSERT(tw > ta && tw != ~0ULL);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));

    /* the old holder finds its hold gone */
    RDT_ASSERT_RC(ENOLCK, rdt_actor_call(&a, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT_EQUAL(actor_value(&a, "holdcount"), 0);
    RDT_ASSERT_RC(EPERM, rdt_actor_call(&a, "unlock", REPLY_MS, NULL, NULL));
    /* ... and did not release the new holder's */
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 1);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&a, "trylock", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&w, "unlock", REPLY_MS, NULL, NULL));

    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    CU_ASSERT(rdt_mutex_token(&m) > tw);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(x_absent(N));

    rdt_actor_stop(&a);
    rdt_actor_stop(&w);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* ------------------------------------------------------------------ */
/* rwlocks                                                             */
/* ------------------------------------------------------------------ */

/* A robust rdrwlock_t writer gets EOWNERDEAD after a dead exclusive
 * holder; unlocking without rdrwlock_consistent() leaves the name
 * ENOTRECOVERABLE (docs/CONTRACT.md section 5.4), with it the lock is clean again. */
static void test_rwlock_robust_writer(void)
{
    const char *N = "rw-writer";
    rdt_actor_t b;
    rdrwlock_t rw, rwp;
    rdlock_t m;
    unsigned long long tok;
    uint64_t dead;

    fresh();
    RDT_ASSERT_RC(0, rw_init(&rw, N, g_c1, RDLOCK_ROBUST));
    RDT_ASSERT_RC(0, rw_init(&rwp, N, g_c2, RDLOCK_STALLED));
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c2, RDLOCK_ROBUST, 0));
    dead = dead_owner(N, RDLOCK_STALLED, 1, 1); /* a plain writer dies */
    CU_ASSERT_FATAL(dead > 0);

    CU_ASSERT_FATAL(actor_on(&b, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(EOWNERDEAD, rdt_actor_call(&b, "wrlock", REPLY_MS, NULL, NULL));
    tok = actor_value(&b, "rwtoken");
    CU_ASSERT(tok > dead && tok != ~0ULL);
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rwp));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdt_actor_call(&b, "rwunlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_is(N, "!"));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdrwlock_tryrdlock(&rwp));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c2, N));

    /* a robust writer in this process, timed variant, after another death */
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1); /* a mutex holder dies: one lock */
    CU_ASSERT_FATAL(dead > tok);
    {
        struct timespec ts;
        uint64_t t = 0;
        ts = rdt_abstime(CLOCK_REALTIME, 5000);
        RDT_ASSERT_RC(EOWNERDEAD, rdrwlock_timedwrlock(&rw, &ts));
        RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rw, &t));
        CU_ASSERT(t > dead);
        RDT_ASSERT_RC(EBUSY, rdt_actor_call(&b, "tryrd", REPLY_MS, NULL, NULL));
        RDT_ASSERT_RC(EINVAL, rdlock_consistent(&m)); /* another owner's hold */
        RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    }
    CU_ASSERT(x_is(N, "!"));
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, N));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    CU_ASSERT(x_absent(N));

    /* rdrwlock_consistent repairs a write hold taken with EOWNERDEAD. */
    dead = dead_owner(N, RDLOCK_STALLED, 1, 1);
    CU_ASSERT_FATAL(dead > 0);
    RDT_ASSERT_RC(EINVAL, rdrwlock_consistent(&rwp)); /* not robust, not held */
    RDT_ASSERT_RC(EOWNERDEAD, rdrwlock_wrlock(&rw));
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(0, rdrwlock_consistent(&rw));
    RDT_ASSERT_RC(EINVAL, rdrwlock_consistent(&rw)); /* consistent already */
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rwp)); /* recoverable: works */
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rwp));

    rdt_actor_stop(&b);
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rwp));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A reader after an owner death gets 0 (robust state concerns exclusive
 * holds) and does not clear the state: a later robust writer still gets
 * EOWNERDEAD. */
static void test_reader_after_death(void)
{
    const char *N = "rw-reader";
    rdt_actor_t r;
    rdrwlock_t rw;
    rdlock_t m, m2;
    unsigned long long tok;
    uint64_t dead, t2 = 0;

    fresh();
    RDT_ASSERT_RC(0, rw_init(&rw, N, g_c2, RDLOCK_ROBUST));
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&m2, N, g_c2, RDLOCK_ROBUST, 0));
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 0);
    CU_ASSERT_FATAL(dead > 0);

    /* a robust reader in another process waits out the lease: 0 */
    CU_ASSERT_FATAL(actor_on(&r, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&r, "rdlock", REPLY_MS, NULL, NULL));
    tok = actor_value(&r, "rwtoken");
    CU_ASSERT(tok > dead && tok != ~0ULL);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m)); /* shared: no writer now */
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rw)); /* a robust reader here too */
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rw, &t2));
    CU_ASSERT(t2 > tok);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(0, rdt_actor_call(&r, "rwunlock", REPLY_MS, NULL, NULL));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 0);
    {
        char b[256];
        CU_ASSERT_EQUAL(xstate(N, b, sizeof b), 1); /* the readers left it alone */
    }

    /* a robust writer still sees the dead owner */
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_trylock(&m));
    CU_ASSERT(rdt_mutex_token(&m) > t2);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m2));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&r, "tryrd", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_consistent(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(0, rdlock_trylock(&m2));
    RDT_ASSERT_RC(0, rdlock_unlock(&m2));

    rdt_actor_stop(&r);
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
}

/* ------------------------------------------------------------------ */
/* holds that end by loss or by unlock                                 */
/* ------------------------------------------------------------------ */

static int g_lost_count; /* atomic: bumped on the watchdog thread */

static void on_lost(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    __atomic_add_fetch(&g_lost_count, 1, __ATOMIC_SEQ_CST);
}

static int wait_lost(int n, int timeout_ms)
{
    long long deadline = rdt_now_ms() + timeout_ms;
    for (;;) {
        int v = __atomic_load_n(&g_lost_count, __ATOMIC_SEQ_CST);
        if (v >= n || rdt_now_ms() >= deadline)
            return v;
        rdt__nap_ms(2);
    }
}

/* A robust holder's lease is lost (its key deleted) while it holds: the
 * lost callback fires, its unlock gives ENOLCK, and the next robust
 * acquirer gets EOWNERDEAD. */
static void test_lost_lease(void)
{
    const char *N = "lost";
    rdt_lockopts_t o = { g_c1, RDLOCK_ROBUST, 0, LEASE_MS, 1, on_lost, NULL };
    rdlock_attr_t a;
    rdlock_t m, other;
    uint64_t t1, t2;

    fresh();
    __atomic_store_n(&g_lost_count, 0, __ATOMIC_SEQ_CST);
    RDT_ASSERT_RC(0, rdt_attr_make(&a, &o));
    RDT_ASSERT_RC(0, rdlock_init(&m, N, &a));
    rdlock_attr_destroy(&a);
    RDT_ASSERT_RC(0, mx_init(&other, N, g_c2, RDLOCK_ROBUST, 0));

    RDT_ASSERT_RC(0, rdlock_lock(&m));
    t1 = rdt_mutex_token(&m);
    RDT_ASSERT_EQ_LL(1, rdt_int_cmd(g_rc, -1, "DEL %s", rdt_key(N, "")));
    CU_ASSERT_EQUAL(wait_lost(1, 3000), 1);
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(mx_count(&m), 0);

    RDT_ASSERT_RC(EOWNERDEAD, rdlock_trylock(&other));
    t2 = rdt_mutex_token(&other);
    CU_ASSERT(t2 > t1);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_consistent(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(x_absent(N));
    CU_ASSERT_EQUAL(__atomic_load_n(&g_lost_count, __ATOMIC_SEQ_CST), 1);

    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* A live holder without watchdog whose lease simply expires: that hold
 * ended by expiry, so the next robust acquirer gets EOWNERDEAD. */
static void test_expired_without_watchdog(void)
{
    const char *N = "expired";
    rdt_lockopts_t o = { g_c1, RDLOCK_ROBUST, 0, LEASE_MS, 0, NULL, NULL };
    rdlock_attr_t a;
    rdlock_t m, other;

    fresh();
    RDT_ASSERT_RC(0, rdt_attr_make(&a, &o));
    RDT_ASSERT_RC(0, rdlock_init(&m, N, &a));
    rdlock_attr_destroy(&a);
    RDT_ASSERT_RC(0, mx_init(&other, N, g_c2, RDLOCK_ROBUST, 0));

    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    CU_ASSERT_FATAL(rdt_wait_gone(g_rc, rdt_key(N, ""), 3000)); /* the lease ran out */
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_trylock(&other));
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m));
    CU_ASSERT(x_inconsistent(N)); /* the stale unlock did not touch the state */
    RDT_ASSERT_RC(0, rdlock_consistent(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    CU_ASSERT(x_absent(N));

    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* Holds that end by unlock leave nothing behind: robust acquirers get 0,
 * also after the process that unlocked dies. */
static void test_clean_unlock(void)
{
    const char *N = "clean";
    rdt_actor_t a;
    rdlock_t m, m2;
    char b[256];
    unsigned long long t1;
    int i;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&m2, N, g_c2, RDLOCK_ROBUST, 0));
    CU_ASSERT_FATAL(actor_on(&a, N, RDLOCK_ROBUST, 0, LEASE_MS, 0) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&a, "lock", REPLY_MS, NULL, NULL));
    t1 = actor_value(&a, "token");
    /* while held, the marker names the exclusive holder */
    CU_ASSERT_EQUAL(xstate(N, b, sizeof b), 1);
    CU_ASSERT(b[0] != '?' && b[0] != '!' && b[0] != '\0');
    RDT_ASSERT_RC(EINVAL, rdt_actor_call(&a, "consistent", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&a, "unlock", REPLY_MS, NULL, NULL));
    CU_ASSERT(x_absent(N));
    rdt_actor_kill(&a); /* dies after a clean unlock */

    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    CU_ASSERT(rdt_mutex_token(&m) > t1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    for (i = 0; i < 3; i++) {
        rdlock_t *x = i % 2 ? &m : &m2;
        struct timespec ts;
        ts = rdt_abstime(CLOCK_REALTIME, 2000);
        RDT_ASSERT_RC(0, rdlock_timedlock(x, &ts));
        RDT_ASSERT_RC(0, rdlock_unlock(x));
        CU_ASSERT(x_absent(N));
    }

    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
}

/* ------------------------------------------------------------------ */
/* rdlock_consistent                                                    */
/* ------------------------------------------------------------------ */

static void test_consistent_errors(void)
{
    const char *N = "cons";
    rdlock_t plain, rob, other;
    rdrwlock_t rw;
    struct timespec ts;
    uint64_t dead;

    fresh();
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(NULL));
    RDT_ASSERT_RC(0, mx_init(&plain, N, g_c1, RDLOCK_STALLED, 0));
    RDT_ASSERT_RC(0, mx_init(&rob, N, g_c1, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, mx_init(&other, N, g_c2, RDLOCK_ROBUST, 0));
    RDT_ASSERT_RC(0, rw_init(&rw, N, g_c2, RDLOCK_ROBUST));

    /* not robust: not held, and held */
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&plain));
    RDT_ASSERT_RC(0, rdlock_trylock(&plain));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&plain));
    RDT_ASSERT_RC(0, rdlock_unlock(&plain));

    /* robust, not held */
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&rob));
    /* robust, held normally */
    RDT_ASSERT_RC(0, rdlock_trylock(&rob));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&rob));
    CU_ASSERT_EQUAL(mx_count(&rob), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&rob));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&rob));

    /* after EOWNERDEAD */
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1);
    CU_ASSERT_FATAL(dead > 0);
    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_timedlock(&rob, &ts));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&other));  /* robust, another owner holds it */
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&plain));  /* same owner, but a non-robust handle */
    RDT_ASSERT_RC(0, rdlock_consistent(&rob));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&rob));    /* no longer inconsistent */
    CU_ASSERT_EQUAL(mx_count(&rob), 1);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&rob));
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&rob));

    /* the failed calls did not spoil anything: the lock is clean */
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    CU_ASSERT(x_absent(N));

    RDT_ASSERT_RC(0, rdlock_destroy(&plain));
    RDT_ASSERT_RC(0, rdlock_destroy(&rob));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
}

/* A recursive robust lock: EOWNERDEAD on the first acquisition only,
 * relocks count without a new token, consistent, and the last unlock
 * leaves the lock clean; without consistent the last unlock (not the
 * inner ones) makes it not recoverable. */
static void test_recursive_robust(void)
{
    const char *N = "rec";
    rdlock_t m, other;
    struct timespec ts;
    uint64_t dead, t1;

    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_c1, RDLOCK_ROBUST, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(0, mx_init(&other, N, g_c2, RDLOCK_ROBUST, 0));
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1);
    CU_ASSERT_FATAL(dead > 0);

    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_timedlock(&m, &ts));
    t1 = rdt_mutex_token(&m);
    CU_ASSERT(t1 > dead);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    CU_ASSERT_EQUAL(mx_count(&m), 3);
    CU_ASSERT_EQUAL(rdt_mutex_token(&m), t1);
    RDT_ASSERT_EQ_LL((long long)t1, fence_of(N));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_consistent(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(mx_count(&m), 1);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(mx_count(&m), 0);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, rdt_key(N, "")), 0);
    CU_ASSERT(x_absent(N));
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));

    /* without consistent */
    dead = dead_owner(N, RDLOCK_ROBUST, 0, 1);
    CU_ASSERT_FATAL(dead > t1);
    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m)); /* inner: local */
    CU_ASSERT(x_inconsistent(N));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(x_is(N, "!"));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_trylock(&other));
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, N));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* ------------------------------------------------------------------ */

static const rdt_test_t tests[] = {
    { "owner_dead_lock", test_owner_dead_lock },
    { "owner_dead_trylock", test_owner_dead_trylock },
    { "owner_dead_timedlock", test_owner_dead_timedlock },
    { "robust_waiter_blocked", test_robust_waiter_blocked },
    { "eownerdead_holder_dies", test_eownerdead_holder_dies },
    { "nonrobust_after_death", test_nonrobust_after_death },
    { "exit_releases", test_exit_releases },
    { "not_recoverable", test_not_recoverable },
    { "reset_clears_not_recoverable", test_reset_clears_not_recoverable },
    { "reset_name_einval", test_reset_name_einval },
    { "reset_held_by_other", test_reset_held_by_other },
    { "rwlock_robust_writer", test_rwlock_robust_writer },
    { "reader_after_death", test_reader_after_death },
    { "lost_lease", test_lost_lease },
    { "expired_without_watchdog", test_expired_without_watchdog },
    { "clean_unlock", test_clean_unlock },
    { "consistent_errors", test_consistent_errors },
    { "recursive_robust", test_recursive_robust },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "robust", tests, suite_setup, suite_teardown, 60);
}
