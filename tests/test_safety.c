/* test_safety.c - stale requests never touch another hold (docs/CONTRACT.md section 11),
 * against a private redis-server, with client A behind an in-process TCP
 * proxy (tests/tproxy.h) that holds its requests back and delivers them
 * late, as a network that retransmits does; every other client connects
 * directly.  One regression test per item of issue #9:
 *
 *   unknown_release_outcome_is_enolck        (item 1)  A's unlock runs
 *       while its link is frozen and B takes the lock over at A's lease
 *       expiry: ENOLCK with A's lost callback once, never 0.
 *   late_rdlock_keeps_write_hold             (item 2)  a stalled, given up
 *       rdlock attempt of A delivered after A took the lock for writing
 *       does not turn the write hold into a read share.
 *   late_release_spares_newer_hold           (item 3)  a stalled, given up
 *       release of A's earlier hold does not delete A's newer hold.
 *   late_acquire_leaves_no_orphan            (item 4)  a stalled, given up
 *       acquire attempt of A delivered after A unlocked grants nothing.
 *   late_try_attempts_leave_no_orphan        (item 4, variant)  every
 *       attempt of a trylock that ended in EIO, delivered late, grants
 *       nothing.
 *   killed_waiter_not_handed_the_lock        (item 5)  a queued writer
 *       SIGKILLed before the release is not handed the lock for its whole
 *       lease: the next robust acquirer gets it soon, and cleanly.
 *   handover_pop_is_the_hold                 (issue 15)  a queued writer
 *       in BLPOP holds the lock with no request after the release that
 *       hands it over; killed holding it, the next robust acquirer gets
 *       EOWNERDEAD.
 *   acl_without_channels_refused             (item 6)  a Redis 7 ACL user
 *       that may not publish or subscribe is EACCES at client open.
 *   barrier_arrival_answer_lost              (RELIABILITY D10)  a timed
 *       barrier wait whose arrival completed the generation, every answer
 *       lost until past its deadline, returns RDBARRIER_SERIAL_THREAD.
 *
 * and first the proxy itself: proxy_forwards, proxy_hold_deliver_after_close,
 * proxy_freeze_thaw.
 *
 * How a request is made late, deterministically: the test holds back the
 * client->server bytes of the connections A has open (tproxy_hold), so the
 * next request A sends on its pooled connection is captured by the proxy
 * and never reaches the server.  A's command_timeout_ms fires; the library
 * closes that connection and retries on a new one, which the proxy lets
 * through: the call completes.  Later the test delivers what was held
 * (tproxy_deliver): the server runs the stale request on the upstream
 * connection it came from, though A closed its side long ago.  Every step
 * waits for an event (the call's return, bytes held, connections
 * accepted, the server's answer to the delivered request), never for a
 * time.  In items 2-4 A's locks run without the watchdog (and with a long
 * lease), so that A's client has no connection but its pooled one: the
 * hold captures A's lock calls and nothing else.
 *
 * There are no sleeps: where wall time must pass (a lease running out on
 * the server) the test waits for the call that ends with it (B's lock in
 * item 1, C's in item 5, bounded by TAKEOVER_MS).  What is left to timing
 * is said where it is: item 1 relies on A's unlock retrying longer than
 * B takes to take over (about 6 s against 1 s, asserted), and in its
 * second part whether A's watchdog or A's unlock finds the loss first
 * (both must end the same way). */
#include <errno.h>
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
#include "tproxy.h"

#define A_TIMEOUT_MS 300     /* items 2-4: A's command_timeout_ms: when it gives up on a held request */
#define A_LONG_LEASE 10000   /* items 2-4: A's holds outlive the test (no watchdog) */
#define LOST_LEASE 1000      /* item 1: A's lease */
#define LOST_TIMEOUT_MS 500  /* item 1: A's command_timeout_ms */
#define LOST_RETRIES 8       /* item 1: A's unlock keeps retrying for ~6 s, well past B's takeover */
#define W_LEASE 10000        /* item 5: every lease */
#define TAKEOVER_MS 3000     /* item 5: the next acquirer's bound */
#define H_LEASE 3000         /* handover_pop_is_the_hold: W's lease */
#define DELIVER_MS 5000      /* how long the server may take to answer a delivered request */
#define CALL_MS 15000        /* bound on one library call that should return */

static rdt_server_t g_srv;
static redisContext *g_rc;    /* plain connection for checking state (main thread only) */
static rdlock_client_t *g_cb; /* B, C: direct to the server */
static char g_ini[512];       /* direct, defaults (command_timeout_ms 1000) */

/* ------------------------------------------------------------------ */
/* an actor thread: A's calls that must overlap the main thread's       */
/* ------------------------------------------------------------------ */

/* The owner of a hold is the calling thread, so a lock and its unlock run
 * on one thread; an actor runs one call at a time for the test and lets
 * the main thread wait for it with a deadline. */
typedef struct actor {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    int (*fn)(void *);
    void *arg;
    int posted, done, quit, rc;
} actor_t;

static void *actor_main(void *arg)
{
    actor_t *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        int (*fn)(void *);
        void *farg;
        int rc;
        while (!a->posted && !a->quit)
            pthread_cond_wait(&a->cv, &a->mu);
        if (!a->posted)
            break;
        fn = a->fn;
        farg = a->arg;
        pthread_mutex_unlock(&a->mu);
        rc = fn(farg);
        pthread_mutex_lock(&a->mu);
        a->posted = 0;
        a->done = 1;
        a->rc = rc;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static int actor_start(actor_t *a)
{
    pthread_condattr_t ca;
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    return pthread_create(&a->th, NULL, actor_main, a) == 0 ? 0 : -1;
}

/* Start fn(arg) on the actor (which must be idle). */
static void actor_post(actor_t *a, int (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&a->mu);
    a->fn = fn;
    a->arg = arg;
    a->done = 0;
    a->posted = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* Wait for the posted call at most timeout_ms: 1 and *rc if it returned,
 * 0 if it is still running. */
static int actor_wait(actor_t *a, int timeout_ms, int *rc)
{
    struct timespec ts = rdt_abstime(CLOCK_MONOTONIC, timeout_ms);
    int done;
    pthread_mutex_lock(&a->mu);
    while (!a->done)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) == ETIMEDOUT)
            break;
    done = a->done;
    if (done && rc)
        *rc = a->rc;
    pthread_mutex_unlock(&a->mu);
    return done;
}

/* The call's code, or -1000 if it did not return within CALL_MS. */
static int actor_call(actor_t *a, int (*fn)(void *), void *arg)
{
    int rc = -1000;
    actor_post(a, fn, arg);
    if (!actor_wait(a, CALL_MS, &rc))
        fprintf(stderr, "actor: call still running after %d ms\n", CALL_MS);
    return rc;
}

/* Join (waits for a call still running). */
static void actor_stop(actor_t *a)
{
    pthread_mutex_lock(&a->mu);
    a->quit = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->th, NULL);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
}

static int op_lock(void *m) { return rdlock_lock(m); }
static int op_unlock(void *m) { return rdlock_unlock(m); }
static int op_consistent(void *m) { return rdlock_consistent(m); }

/* ------------------------------------------------------------------ */
/* setup                                                               */
/* ------------------------------------------------------------------ */

static int suite_setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* hiredis writes to sockets the proxy may close */
    if (rdt_suite_start(&g_srv, &g_rc) != 0 || rdt_ini_copy(&g_srv, 0, NULL, g_ini, sizeof g_ini) != 0)
        return -1;
    if (rdlock_client_open(&g_cb, g_ini) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open failed\n");
        return -1;
    }
    return rdt_flushall(&g_srv);
}

static int suite_teardown(void)
{
    int rc = rdt_close_clients(&g_cb, NULL);
    rdt_suite_stop(&g_srv, &g_rc);
    return rc;
}

static void fresh(void)
{
    CU_ASSERT_EQUAL_FATAL(rdt_flushall(&g_srv), 0);
}

/* A fresh proxy to the suite's server, and client A through it (extra_ini
 * added to its [redis] section).  A takes and releases a lock once, so
 * that the scripts are loaded (a late EVALSHA then runs instead of
 * failing with NOSCRIPT) and the connection of its open sits in the pool;
 * without the watchdog, so that A's background thread (and its
 * connections) are not started by it.  0, or -1 (printed, nothing left
 * open). */
static int a_open(tproxy_t **px, rdlock_client_t **ca, const char *extra_ini)
{
    rdt_server_t via;
    rdt_lockopts_t o;
    const char *ini;
    rdlock_t warm;
    int rc;

    *ca = NULL;
    if (tproxy_start(px, g_srv.port) != 0)
        return -1;
    via = g_srv;
    via.port = tproxy_port(*px);
    ini = rdt_write_ini(&via, 0, extra_ini);
    if (ini == NULL || (rc = rdlock_client_open(ca, ini)) != 0) {
        fprintf(stderr, "a_open: rdlock_client_open through the proxy failed\n");
        *ca = NULL;
        tproxy_stop(*px);
        *px = NULL;
        return -1;
    }
    o = (rdt_lockopts_t)RDT_LOCKOPTS(*ca);
    o.watchdog = 0;
    rc = rdt_mutex_init(&warm, "warm-up", &o);
    if (rc == 0 && (rc = rdlock_lock(&warm)) == 0)
        rc = rdlock_unlock(&warm);
    rdlock_destroy(&warm);
    if (rc != 0) {
        fprintf(stderr, "a_open: warm-up lock through the proxy: %s\n", rdt_errname(rc));
        rdlock_client_close(*ca);
        *ca = NULL;
        tproxy_stop(*px);
        *px = NULL;
        return -1;
    }
    return 0;
}

static void a_close(tproxy_t *px, rdlock_client_t *ca)
{
    rdt_close_client(ca);
    tproxy_stop(px);
}

/* Mutex / rwlock of client c without the watchdog, lease A_LONG_LEASE:
 * items 2-4 (see the file comment). */
static int init_nowd_mutex(rdlock_t *m, const char *name, rdlock_client_t *c)
{
    rdt_lockopts_t o = RDT_LOCKOPTS(c);
    o.lease = A_LONG_LEASE;
    o.watchdog = 0;
    return rdt_mutex_init(m, name, &o);
}

static int init_nowd_rwlock(rdrwlock_t *rw, const char *name, rdlock_client_t *c)
{
    rdt_lockopts_t o = RDT_LOCKOPTS(c);
    o.lease = A_LONG_LEASE;
    o.watchdog = 0;
    return rdt_rwlock_init(rw, name, &o);
}

static void print_stats(const char *when, tproxy_t *px)
{
    tproxy_stats_t st;
    tproxy_stats(px, &st);
    fprintf(stderr,
            "%s: proxy accepted %ld, open %ld, held %zu bytes on %ld, delivered %ld (late %ld), answered %ld\n",
            when, st.accepted, st.open, st.held_bytes, st.held_conns, st.delivered, st.delivered_late,
            st.answered);
}

/* A's request was held on a connection it had (its pooled one), and the
 * call went on with a retry on a new connection, which the proxy let
 * through: more than accepted_before connections, bytes held on at least
 * one, and A closed each of those (so the delivery is late in the strict
 * sense: the client had given up on the request).  CUnit assertions; the
 * number of connections with bytes held, which tproxy_deliver must
 * report. */
static int assert_held_and_retried(tproxy_t *px, long accepted_before, const char *who)
{
    tproxy_stats_t st;
    long ids[16];
    int n, i;

    tproxy_stats(px, &st);
    n = tproxy_held(px, ids, 16);
    fprintf(stderr, "%s: %d connection(s) with %zu bytes held back; %ld accepted since the hold\n", who, n,
            st.held_bytes, st.accepted - accepted_before);
    CU_ASSERT(st.accepted > accepted_before);
    CU_ASSERT(n >= 1 && n <= 16);
    for (i = 0; i < n && i < 16; i++)
        CU_ASSERT_EQUAL(tproxy_wait_closed(px, ids[i], 2000), 0);
    return n;
}

/* ------------------------------------------------------------------ */
/* 0. the proxy                                                        */
/* ------------------------------------------------------------------ */

static redisContext *px_connect(tproxy_t *px, int timeout_ms)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", tproxy_port(px), tv);
    if (c == NULL || c->err) {
        fprintf(stderr, "px_connect: %s\n", c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* Send INCR key without waiting for its reply; its length in bytes, or
 * -1. */
static long send_incr(redisContext *c, const char *key)
{
    int done = 0;
    char *s = NULL;
    int len = redisFormatCommand(&s, "INCR %s", key);
    if (len < 0)
        return -1;
    if (redisAppendFormattedCommand(c, s, (size_t)len) != REDIS_OK) {
        redisFreeCommand(s);
        return -1;
    }
    redisFreeCommand(s);
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            return -1;
    return len;
}

static long long int_reply(redisContext *c)
{
    void *r = NULL;
    if (redisGetReply(c, &r) != REDIS_OK) {
        fprintf(stderr, "int_reply: %s\n", c->errstr);
        return -1000;
    }
    return rdt_reply_int(r, -1001);
}

static void test_proxy_forwards(void)
{
    tproxy_t *px;
    tproxy_stats_t st;
    redisContext *c1, *c2;
    char v[32];

    fresh();
    CU_ASSERT_EQUAL_FATAL(tproxy_start(&px, g_srv.port), 0);
    CU_ASSERT(tproxy_port(px) > 0 && tproxy_port(px) != g_srv.port);
    c1 = px_connect(px, 2000);
    c2 = px_connect(px, 2000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
    RDT_ASSERT_EQ_LL(1, rdt_int_cmd(c1, -1, "INCR tp:n"));
    RDT_ASSERT_EQ_LL(2, rdt_int_cmd(c2, -1, "INCR tp:n"));
    CU_ASSERT_EQUAL(rdt_get_str(g_rc, "tp:n", v, sizeof v), 1);
    CU_ASSERT_STRING_EQUAL(v, "2");
    tproxy_stats(px, &st);
    RDT_ASSERT_EQ_LL(2, st.accepted);
    RDT_ASSERT_EQ_LL(2, st.open);
    RDT_ASSERT_EQ_LL(0, st.held_bytes);
    CU_ASSERT(st.c2s > 0 && st.s2c > 0);
    RDT_ASSERT_EQ_LL(2, tproxy_conns(px, NULL, 0));
    redisFree(c1);
    redisFree(c2);
    tproxy_stop(px);
}

/* hold, then deliver after the client closed its side; TPROXY_NEW; one
 * connection alone (what the torture's stall scenario uses). */
static void test_proxy_hold_deliver_after_close(void)
{
    tproxy_t *px;
    tproxy_stats_t st;
    redisContext *c1, *c2, *c3;
    long len, ids[4];

    fresh();
    CU_ASSERT_EQUAL_FATAL(tproxy_start(&px, g_srv.port), 0);
    c1 = px_connect(px, 2000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c1);
    RDT_ASSERT_EQ_LL(1, rdt_int_cmd(c1, -1, "INCR tp:m")); /* accepted and flowing */

    CU_ASSERT_EQUAL(tproxy_hold(px, TPROXY_EXISTING), 0);
    len = send_incr(c1, "tp:n");
    CU_ASSERT_FATAL(len > 0);
    CU_ASSERT_EQUAL(tproxy_wait_held(px, (size_t)len, 2000), 0);
    tproxy_stats(px, &st);
    RDT_ASSERT_EQ_LL(len, st.held_bytes);
    RDT_ASSERT_EQ_LL(1, st.held_conns);
    RDT_ASSERT_EQ_LL(-1, rdt_get_ll(g_rc, "tp:n")); /* not run */

    /* a connection made after the hold flows */
    c2 = px_connect(px, 2000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c2);
    RDT_ASSERT_EQ_LL(2, rdt_int_cmd(c2, -1, "INCR tp:m"));

    /* the client gives up on its request */
    redisFree(c1);
    CU_ASSERT_EQUAL(tproxy_wait_closed(px, 1, 2000), 0);
    RDT_ASSERT_EQ_LL(1, tproxy_conns(px, ids, 4));
    RDT_ASSERT_EQ_LL(2, ids[0]);
    RDT_ASSERT_EQ_LL(-1, rdt_get_ll(g_rc, "tp:n"));

    /* late delivery: the server runs it and answers; then that upstream
     * is closed */
    RDT_ASSERT_EQ_LL(1, tproxy_deliver(px, DELIVER_MS));
    RDT_ASSERT_EQ_LL(1, rdt_get_ll(g_rc, "tp:n"));
    tproxy_stats(px, &st);
    RDT_ASSERT_EQ_LL(0, st.held_bytes);
    RDT_ASSERT_EQ_LL(1, st.delivered);
    RDT_ASSERT_EQ_LL(1, st.delivered_late);
    RDT_ASSERT_EQ_LL(1, st.answered);
    RDT_ASSERT_EQ_LL(1, st.open);
    RDT_ASSERT_EQ_LL(0, tproxy_deliver(px, DELIVER_MS)); /* nothing more */

    /* TPROXY_NEW: held from the start; the client still connected gets
     * its answer on delivery */
    CU_ASSERT_EQUAL(tproxy_hold(px, TPROXY_NEW), 0);
    c3 = px_connect(px, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c3);
    len = send_incr(c3, "tp:n");
    CU_ASSERT_EQUAL(tproxy_wait_held(px, (size_t)len, 2000), 0);
    RDT_ASSERT_EQ_LL(3, rdt_int_cmd(c2, -1, "INCR tp:m")); /* the older one flows */
    RDT_ASSERT_EQ_LL(1, tproxy_deliver(px, DELIVER_MS));
    RDT_ASSERT_EQ_LL(2, int_reply(c3));

    /* one connection alone */
    CU_ASSERT_EQUAL(tproxy_hold_conn(px, 2), 0);
    len = send_incr(c2, "tp:m");
    CU_ASSERT_EQUAL(tproxy_wait_held(px, (size_t)len, 2000), 0);
    RDT_ASSERT_EQ_LL(3, rdt_int_cmd(c3, -1, "INCR tp:n")); /* the other flows */
    RDT_ASSERT_EQ_LL(0, tproxy_deliver_conn(px, 3, DELIVER_MS)); /* nothing held there */
    RDT_ASSERT_EQ_LL(1, tproxy_deliver_conn(px, 2, DELIVER_MS));
    RDT_ASSERT_EQ_LL(4, int_reply(c2));
    RDT_ASSERT_EQ_LL(-1, tproxy_hold_conn(px, 1)); /* gone */
    redisFree(c2);
    redisFree(c3);
    tproxy_stop(px);
}

static void test_proxy_freeze_thaw(void)
{
    tproxy_t *px;
    redisContext *c, *late;
    long len;

    fresh();
    CU_ASSERT_EQUAL_FATAL(tproxy_start(&px, g_srv.port), 0);
    c = px_connect(px, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    RDT_ASSERT_EQ_LL(1, rdt_int_cmd(c, -1, "INCR tp:f"));

    CU_ASSERT_EQUAL(tproxy_freeze(px), 0);
    len = send_incr(c, "tp:f");
    CU_ASSERT_EQUAL(tproxy_wait_held(px, (size_t)len, 2000), 0);
    RDT_ASSERT_EQ_LL(1, rdt_get_ll(g_rc, "tp:f"));
    RDT_ASSERT_EQ_LL(-1, tproxy_deliver(px, 100)); /* nothing can be written while frozen */
    /* a new connection is accepted and frozen too: its client's own
     * timeout fires, and it gives up */
    late = px_connect(px, 200);
    CU_ASSERT_PTR_NOT_NULL_FATAL(late);
    RDT_ASSERT_EQ_LL(-1, rdt_int_cmd(late, -1, "INCR tp:late"));
    redisFree(late);
    CU_ASSERT_EQUAL(tproxy_wait_closed(px, 2, 2000), 0);
    RDT_ASSERT_EQ_LL(1, rdt_get_ll(g_rc, "tp:f"));

    /* thaw: the queued request runs and its answer comes through; the
     * connection carries on */
    CU_ASSERT_EQUAL(tproxy_thaw(px), 0);
    RDT_ASSERT_EQ_LL(2, int_reply(c));
    RDT_ASSERT_EQ_LL(3, rdt_int_cmd(c, -1, "INCR tp:f"));
    redisFree(c);
    tproxy_stop(px);
}


/* ------------------------------------------------------------------ */
/* 1. an unknown release outcome is ENOLCK                             */
/* ------------------------------------------------------------------ */

/* Issue #9 item 1.  A holds with lease LOST_LEASE; the link between A and
 * the server freezes; B takes the lock over when A's lease runs out on the
 * server; A's unlock must be ENOLCK with A's lost callback, once.
 *
 * Part 1 starts A's unlock right after the freeze, so that it is under
 * way when B takes over, and thaws only then: A's first attempt timed out
 * (its fate unknown to A) and the retry that finally gets an answer finds
 * the hold gone.  That is the case the library used to take for a release
 * of its own ("reply lost and the retry found the hold gone") and report
 * as 0.  A's unlock retries for about (LOST_RETRIES + 1) * LOST_TIMEOUT_MS,
 * well past B's takeover at about LOST_LEASE: the thaw always comes while
 * it still retries (asserted).
 *
 * Part 2 is the order of the issue: B takes over first, then A unlocks,
 * and the link thaws once some request of A has timed out and been
 * retried on a new connection.  Whether A's watchdog or A's unlock finds
 * the loss first depends on timing (the watchdog keeps trying through the
 * freeze, with its own timeouts): either way the answer must be ENOLCK
 * with one callback.  The callbacks are counted once A's client is closed,
 * which joins its background thread: none can come later. */
static void test_unknown_release_outcome_is_enolck(void)
{
    const char *N = "s1";
    char extra[128];
    tproxy_t *px;
    tproxy_stats_t st;
    rdlock_client_t *ca;
    rdlock_t ma, mb;
    rdt_lockopts_t o;
    rdt_lostrec_t lost;
    actor_t act;
    long long t0;
    int rc = -1;

    fresh();
    snprintf(extra, sizeof extra, "command_timeout_ms = %d\ncommand_retries = %d\n", LOST_TIMEOUT_MS,
             LOST_RETRIES);
    CU_ASSERT_EQUAL_FATAL(a_open(&px, &ca, extra), 0);
    rdt_lost_init(&lost);
    o = (rdt_lockopts_t)RDT_LOCKOPTS(ca);
    o.lease = LOST_LEASE;
    o.lostcb = rdt_lost_cb;
    o.lostarg = &lost;
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&ma, N, &o), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&mb, N, g_cb, 0), 0);
    CU_ASSERT_EQUAL_FATAL(actor_start(&act), 0);

    /* part 1 */
    RDT_ASSERT_RC(0, actor_call(&act, op_lock, &ma));
    CU_ASSERT_EQUAL(tproxy_freeze(px), 0);
    t0 = rdt_now_ms();
    actor_post(&act, op_unlock, &ma);
    RDT_ASSERT_RC(0, rdlock_lock(&mb)); /* when A's lease has run out on the server */
    fprintf(stderr, "item 1, part 1: B took over %lld ms after the freeze\n", rdt_now_ms() - t0);
    CU_ASSERT_FALSE(actor_wait(&act, 0, NULL)); /* A's unlock still retries */
    print_stats("item 1, part 1, at the thaw", px);
    CU_ASSERT_EQUAL(tproxy_thaw(px), 0);
    CU_ASSERT_FATAL(actor_wait(&act, CALL_MS, &rc));
    fprintf(stderr, "item 1, part 1: A's unlock returned %s after %lld ms\n", rdt_errname(rc), rdt_now_ms() - t0);
    RDT_ASSERT_RC(ENOLCK, rc);
    RDT_ASSERT_EQ_LL(1, rdt_lost_wait(&lost, 1, 3000));
    /* B's hold is B's: the late release of A did not touch it */
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));

    /* part 2 */
    rdt_lost_reset(&lost);
    RDT_ASSERT_RC(0, actor_call(&act, op_lock, &ma));
    CU_ASSERT_EQUAL(tproxy_freeze(px), 0);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_lock(&mb));
    fprintf(stderr, "item 1, part 2: B took over %lld ms after the freeze\n", rdt_now_ms() - t0);
    tproxy_stats(px, &st);
    actor_post(&act, op_unlock, &ma);
    CU_ASSERT_EQUAL(tproxy_wait_accepted(px, st.accepted + 1, CALL_MS), 0);
    CU_ASSERT_EQUAL(tproxy_thaw(px), 0);
    rc = -1;
    CU_ASSERT_FATAL(actor_wait(&act, CALL_MS, &rc));
    fprintf(stderr, "item 1, part 2: A's unlock returned %s after %lld ms\n", rdt_errname(rc), rdt_now_ms() - t0);
    RDT_ASSERT_RC(ENOLCK, rc);
    RDT_ASSERT_EQ_LL(1, rdt_lost_wait(&lost, 1, 3000));
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));

    actor_stop(&act);
    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    a_close(px, ca); /* joins A's background thread: every callback has run */
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
}

/* ------------------------------------------------------------------ */
/* 2-4. late requests                                                  */
/* ------------------------------------------------------------------ */

static int a_open_short(tproxy_t **px, rdlock_client_t **ca, long *accepted)
{
    char extra[96];
    tproxy_stats_t st;
    snprintf(extra, sizeof extra, "command_timeout_ms = %d\ncommand_retries = 3\n", A_TIMEOUT_MS);
    if (a_open(px, ca, extra) != 0)
        return -1;
    tproxy_stats(*px, &st);
    *accepted = st.accepted;
    return 0;
}

/* Issue #9 item 2.  A's rdlock attempt is held back and given up on, the
 * retry takes the share; A unlocks and takes the lock for writing; then
 * the stale rdlock attempt reaches the server.  It must not change A's
 * write hold into a read share (pre-fix: acquire.lua took A's write field
 * for a leftover of an earlier hold, deleted it and granted the share):
 * another client's tryrdlock is EBUSY, A's unlock 0. */
static void test_late_rdlock_keeps_write_hold(void)
{
    const char *N = "s2";
    tproxy_t *px;
    rdlock_client_t *ca;
    rdrwlock_t ra, rb;
    long accepted = 0;
    char mode;
    int rc, held;

    fresh();
    CU_ASSERT_EQUAL_FATAL(a_open_short(&px, &ca, &accepted), 0);
    CU_ASSERT_EQUAL_FATAL(init_nowd_rwlock(&ra, N, ca), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_rwlock_on(&rb, N, g_cb), 0);

    CU_ASSERT_EQUAL(tproxy_hold(px, TPROXY_EXISTING), 0);
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra)); /* first attempt held, the retry takes the share */
    held = assert_held_and_retried(px, accepted, "item 2");
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&ra));

    RDT_ASSERT_EQ_LL(held, tproxy_deliver(px, DELIVER_MS)); /* the stale rdlock attempt */
    rdt_holders(g_rc, rdt_key(N, ""), NULL, 0, &mode, NULL, 0, NULL);
    fprintf(stderr, "item 2: after the late rdlock attempt the lock's mode is '%c'\n", mode ? mode : '-');
    rc = rdrwlock_tryrdlock(&rb);
    RDT_ASSERT_RC(EBUSY, rc); /* A still holds it for writing */
    if (rc == 0)
        rdrwlock_unlock(&rb);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    a_close(px, ca);
}

/* Issue #9 item 3.  A's unlock is held back and given up on, the retry
 * releases; A locks again; then the stale release reaches the server.  It
 * must not touch A's newer hold (pre-fix: release.lua deleted whatever
 * hold A's owner id had): another client's trylock is EBUSY, A's unlock 0
 * (pre-fix: ENOLCK). */
static void test_late_release_spares_newer_hold(void)
{
    const char *N = "s3";
    tproxy_t *px;
    rdlock_client_t *ca;
    rdlock_t ma, mb;
    long accepted = 0;
    int rc, held;

    fresh();
    CU_ASSERT_EQUAL_FATAL(a_open_short(&px, &ca, &accepted), 0);
    CU_ASSERT_EQUAL_FATAL(init_nowd_mutex(&ma, N, ca), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&mb, N, g_cb, 0), 0);

    RDT_ASSERT_RC(0, rdlock_lock(&ma));
    CU_ASSERT_EQUAL(tproxy_hold(px, TPROXY_EXISTING), 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&ma)); /* first attempt held, the retry releases */
    held = assert_held_and_retried(px, accepted, "item 3");
    RDT_ASSERT_RC(0, rdlock_lock(&ma));

    RDT_ASSERT_EQ_LL(held, tproxy_deliver(px, DELIVER_MS)); /* the stale release */
    rc = rdlock_trylock(&mb);
    RDT_ASSERT_RC(EBUSY, rc); /* A's newer hold is still there */
    if (rc == 0)
        rdlock_unlock(&mb);
    RDT_ASSERT_RC(0, rdlock_unlock(&ma));

    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    a_close(px, ca);
}

/* Another client's robust trylock of name, which must find the lock free
 * and clean (0), not held by an orphan (EBUSY) nor left by a dead owner
 * (EOWNERDEAD); unlocked again when it got it.  The code. */
static int robust_try_by_other(const char *name)
{
    rdt_lockopts_t o = RDT_LOCKOPTS(g_cb);
    rdlock_t m;
    int rc;

    o.robust = RDLOCK_ROBUST;
    if (rdt_mutex_init(&m, name, &o) != 0)
        return -1;
    rc = rdlock_trylock(&m);
    if (rc == EOWNERDEAD)
        rdlock_consistent(&m);
    if (rc == 0 || rc == EOWNERDEAD)
        rdlock_unlock(&m);
    rdlock_destroy(&m);
    return rc;
}

/* Issue #9 item 4.  A's lock attempt is held back and given up on, the
 * retry takes the lock, A unlocks; then the stale attempt reaches the
 * server.  It must grant nothing (pre-fix: the lock was free, so it was
 * granted to A, who did not know: an orphan hold for a whole lease, then
 * EOWNERDEAD for the next robust owner). */
static void test_late_acquire_leaves_no_orphan(void)
{
    const char *N = "s4";
    tproxy_t *px;
    rdlock_client_t *ca;
    rdlock_t ma;
    long accepted = 0;
    int held;

    fresh();
    CU_ASSERT_EQUAL_FATAL(a_open_short(&px, &ca, &accepted), 0);
    CU_ASSERT_EQUAL_FATAL(init_nowd_mutex(&ma, N, ca), 0);

    CU_ASSERT_EQUAL(tproxy_hold(px, TPROXY_EXISTING), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&ma)); /* first attempt held, the retry takes it */
    held = assert_held_and_retried(px, accepted, "item 4");
    RDT_ASSERT_RC(0, rdlock_unlock(&ma));

    RDT_ASSERT_EQ_LL(held, tproxy_deliver(px, DELIVER_MS)); /* the stale attempt */
    RDT_ASSERT_RC(0, robust_try_by_other(N));

    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    a_close(px, ca);
}

/* D11 (docs/RELIABILITY.md): a cut connection.  The proxy keeps A's lock
 * request and resets A's connection under it, so A retries at once on a
 * new connection and takes the lock, while the kept attempt may still act
 * for a command timeout (3 s here).  A's unlock must not wait that long
 * (it did: each cut cost the lock a command timeout); B then takes and
 * releases the lock, so that the record of the last release names B and
 * cannot void A's attempt; then the kept attempt reaches the server,
 * within its time.  A's finished-call mark, left by the unlock, must void
 * it: the lock is free and clean for the next robust acquirer. */
typedef struct cut_arg {
    tproxy_t *px;
    int reset; /* connections reset, or -1 */
} cut_arg_t;

static void *cut_when_held(void *p)
{
    cut_arg_t *a = p;
    a->reset = tproxy_wait_held(a->px, 1, 5000) == 0 ? tproxy_reset(a->px) : -1;
    return NULL;
}

static void test_late_acquire_after_cut(void)
{
    const char *N = "s4c";
    tproxy_t *px;
    rdlock_client_t *ca;
    rdlock_t ma;
    cut_arg_t cut;
    pthread_t th;
    long long t0, lock_ms, unlock_ms;

    fresh();
    CU_ASSERT_EQUAL_FATAL(a_open(&px, &ca, "command_timeout_ms = 3000\ncommand_retries = 3\n"), 0);
    CU_ASSERT_EQUAL_FATAL(init_nowd_mutex(&ma, N, ca), 0);

    cut.px = px;
    cut.reset = -1;
    CU_ASSERT_EQUAL(tproxy_hold(px, TPROXY_EXISTING), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, cut_when_held, &cut), 0);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_lock(&ma)); /* the cut attempt kept, the retry takes it */
    lock_ms = rdt_now_ms() - t0;
    pthread_join(th, NULL);
    CU_ASSERT(cut.reset >= 1);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_unlock(&ma));
    unlock_ms = rdt_now_ms() - t0;
    fprintf(stderr, "[lock %lld ms, unlock %lld ms after a cut] ", lock_ms, unlock_ms);
    CU_ASSERT(lock_ms < 1500);   /* retried at the cut, not after a timeout */
    CU_ASSERT(unlock_ms < 1500); /* not after the kept attempt's 3 s */
    RDT_ASSERT_RC(0, robust_try_by_other(N)); /* B's release record replaces A's */

    RDT_ASSERT_EQ_LL(1, tproxy_deliver(px, DELIVER_MS)); /* the kept attempt, in its time */
    RDT_ASSERT_RC(0, robust_try_by_other(N));

    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    a_close(px, ca);
}

/* Issue #9 item 4, variant.  Every connection A has or opens is held, so
 * A's trylock gives up after command_retries with EIO; then every one of
 * its attempts reaches the server, after A closed each connection.  None
 * may grant anything (pre-fix: the first one granted the free lock to A,
 * and the others, being of the same call, refreshed it). */
static void test_late_try_attempts_leave_no_orphan(void)
{
    const char *N = "s4b";
    tproxy_t *px;
    rdlock_client_t *ca;
    rdlock_t ma;
    long accepted = 0;
    int n;

    fresh();
    CU_ASSERT_EQUAL_FATAL(a_open_short(&px, &ca, &accepted), 0);
    CU_ASSERT_EQUAL_FATAL(init_nowd_mutex(&ma, N, ca), 0);

    CU_ASSERT_EQUAL(tproxy_hold(px, TPROXY_EXISTING | TPROXY_NEW), 0);
    RDT_ASSERT_RC(EIO, rdlock_trylock(&ma));
    n = assert_held_and_retried(px, accepted, "item 4, variant");

    RDT_ASSERT_EQ_LL(n, tproxy_deliver(px, DELIVER_MS)); /* every stale attempt, in order */
    RDT_ASSERT_RC(0, robust_try_by_other(N));

    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    a_close(px, ca);
}

/* ------------------------------------------------------------------ */
/* 5. a killed waiter                                                  */
/* ------------------------------------------------------------------ */

static rdt_pipe_t g_wpipe;

/* Waiter W (a forked child): queue for the lock `name`, robust, with
 * `lease`; say "locked <rc>" if the lock returns, then wait to be killed
 * (item 5 kills it while it still waits; the hand-over case once it
 * holds the lock). */
typedef struct waiter_arg {
    const char *name;
    unsigned lease;
} waiter_arg_t;

static int waiter_child(void *arg)
{
    const waiter_arg_t *wa = arg;
    rdlock_client_t *c;
    rdt_lockopts_t o;
    rdlock_t m;
    char line[32];
    int rc;

    rdt_child_begin(&g_wpipe);
    if (rdlock_client_open(&c, g_ini) != 0)
        return 2;
    o = (rdt_lockopts_t)RDT_LOCKOPTS(c);
    o.robust = RDLOCK_ROBUST;
    o.lease = wa->lease;
    if (rdt_mutex_init(&m, wa->name, &o) != 0)
        return 3;
    rdt_send(g_wpipe.to_parent[1], "locking");
    rc = rdlock_lock(&m);
    snprintf(line, sizeof line, "locked %d", rc);
    rdt_send(g_wpipe.to_parent[1], line);
    for (;;)
        pause();
}

/* Items 5 and the hand-over: H, on a client of its own (*ch, handle *mh),
 * holds the robust lock `name` (lease W_LEASE), *mc is the same lock on
 * the callback client for C, and waiter W (waiter_child, with lease
 * w_lease) is really queued for it.  Returns W's pid (the test fails at
 * once without it). */
static pid_t holder_and_waiter(const char *name, rdlock_client_t **ch, rdlock_t *mh, rdlock_t *mc, unsigned w_lease)
{
    static waiter_arg_t wa;
    rdt_lockopts_t oh = RDT_LOCKOPTS(NULL), oc = RDT_LOCKOPTS(g_cb);
    pid_t pid;

    fresh();
    CU_ASSERT_EQUAL_FATAL(rdlock_client_open(ch, g_ini), 0);
    oh.client = *ch;
    oh.robust = oc.robust = RDLOCK_ROBUST;
    oh.lease = oc.lease = W_LEASE;
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(mh, name, &oh), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(mc, name, &oc), 0);
    RDT_ASSERT_RC(0, rdlock_lock(mh));
    wa.name = name;
    wa.lease = w_lease;
    pid = rdt_spawn(&g_wpipe, waiter_child, &wa);
    CU_ASSERT_FATAL(pid > 0);
    CU_ASSERT_EQUAL(rdt_expect_line(&g_wpipe, "locking", 10000, "waiter"), 0);
    CU_ASSERT_EQUAL(rdt_wait_zcard(g_rc, rdt_key(name, ":w"), 1, 10000), 1); /* really queued */
    return pid;
}

/* ... and after C's lock returned rc: C's hold is given back (made
 * consistent first after EOWNERDEAD), and everything is closed. */
static void finish_c(actor_t *act, rdlock_t *mh, rdlock_t *mc, rdlock_client_t *ch, int rc)
{
    if (rc == EOWNERDEAD)
        actor_call(act, op_consistent, mc);
    if (rc == 0 || rc == EOWNERDEAD)
        RDT_ASSERT_RC(0, actor_call(act, op_unlock, mc));
    actor_stop(act);
    RDT_ASSERT_RC(0, rdlock_destroy(mh));
    RDT_ASSERT_RC(0, rdlock_destroy(mc));
    rdt_close_client(ch);
}

/* Issue #9 item 5.  H holds a robust lock; W queues for it (its mark is in
 * the writers' queue) and is SIGKILLed; H unlocks.  Pre-fix the release
 * handed the lock to W, the head of the queue, whose mark was still fresh:
 * a dead process then held it for W's whole lease, and the next robust
 * acquirer got EOWNERDEAD after W_LEASE.  A hand-over W does not claim
 * within a short claim window must go back: C's robust rdlock_lock returns
 * 0 well within the lease.  (C's call runs on an actor; if it has not
 * returned after TAKEOVER_MS the test fails and resets the name, so that
 * the run stays short.) */
static void test_killed_waiter_not_handed_the_lock(void)
{
    static char name[] = "s5";
    rdlock_client_t *ch = NULL;
    rdlock_t mh, mc;
    actor_t act;
    long long t0;
    pid_t pid;
    int rc = -1, done;

    pid = holder_and_waiter(name, &ch, &mh, &mc, W_LEASE);
    kill(pid, SIGKILL);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_wait(pid, 10000));
    rdt_pipe_close(&g_wpipe);

    RDT_ASSERT_RC(0, rdlock_unlock(&mh));
    CU_ASSERT_EQUAL_FATAL(actor_start(&act), 0);
    t0 = rdt_now_ms();
    actor_post(&act, op_lock, &mc);
    done = actor_wait(&act, TAKEOVER_MS, &rc);
    fprintf(stderr, "item 5: C's robust lock: %s after %lld ms (lease %d)\n", done ? rdt_errname(rc) : "not returned",
            rdt_now_ms() - t0, W_LEASE);
    CU_ASSERT_TRUE(done);
    if (!done) {
        RDT_ASSERT_RC(0, rdlock_reset_name(g_cb, name)); /* end the wait now */
        CU_ASSERT_FATAL(actor_wait(&act, CALL_MS, &rc));
    } else {
        RDT_ASSERT_RC(0, rc);
    }
    finish_c(&act, &mh, &mc, ch, rc);
}

/* Calls of cmd ("evalsha") that the server ran without an error so far
 * (INFO commandstats: calls - failed_calls; a NOSCRIPT is a failed one),
 * 0 if none yet, -1 on error. */
static long long cmd_ok(const char *cmd)
{
    redisReply *r = redisCommand(g_rc, "INFO commandstats");
    char want[64];
    const char *p, *f;
    long long v = -1;
    snprintf(want, sizeof want, "cmdstat_%s:calls=", cmd);
    if (r && r->type == REDIS_REPLY_STRING) {
        v = 0;
        if ((p = strstr(r->str, want)) != NULL) {
            v = strtoll(p + strlen(want), NULL, 10);
            if ((f = strstr(p, "failed_calls=")) != NULL && (f < strchr(p, '\n') || strchr(p, '\n') == NULL))
                v -= strtoll(f + strlen("failed_calls="), NULL, 10);
        }
    }
    if (r)
        freeReplyObject(r);
    return v;
}

/* The contended hand-over (issue 15, src/prim/handover.h): W queues for the
 * lock H holds and waits in BLPOP on its grant list; H unlocks.  W must
 * hold the lock with no request of its own after H's release: the server
 * sees H's release, W's BLPOP answered, and W's renewal pipelined behind
 * it (which starts W's lease), where a claim by a look would be one more
 * script.  Then W is SIGKILLed holding it: the hold ends without unlock
 * when its lease runs out, and the next robust acquirer must be told
 * EOWNERDEAD (the marker "~W" with W's grant popped, acquire.lua's
 * handed()), as after any exclusive holder's death. */
static void test_handover_pop_is_the_hold(void)
{
    static char name[] = "s5h";
    rdlock_client_t *ch = NULL;
    rdlock_status_t st;
    rdlock_t mh, mc;
    actor_t act;
    long long before, scripts = -1;
    char xm[128] = "";
    pid_t pid;
    int rc = -1, done, marker;

    pid = holder_and_waiter(name, &ch, &mh, &mc, H_LEASE);
    CU_ASSERT_EQUAL(rdt_wait_blocked(g_rc, 1, 10000), 1); /* in BLPOP */
    before = cmd_ok("evalsha") + cmd_ok("eval");
    RDT_ASSERT_RC(0, rdlock_unlock(&mh));
    CU_ASSERT_EQUAL(rdt_expect_line(&g_wpipe, "locked 0", 10000, "waiter"), 0);
    scripts = cmd_ok("evalsha") + cmd_ok("eval") - before;
    marker = rdt_get_str(g_rc, rdt_key(name, ":x"), xm, sizeof xm);
    kill(pid, SIGKILL);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_wait(pid, 10000));
    rdt_pipe_close(&g_wpipe);
    fprintf(stderr, "hand-over: %lld scripts from H's unlock to W holding; robust marker %s\n", scripts,
            marker == 1 ? xm : "(none)");
    /* H's release, and W's renewal pipelined behind its BLPOP; a claim by
     * a look would be a third script, or with the pub/sub way a second
     * one that leaves the marker "W" rather than the hand-over's "~W". */
    CU_ASSERT_EQUAL(scripts, 2);
    CU_ASSERT(marker == 1 && xm[0] == '~');

    CU_ASSERT_EQUAL_FATAL(actor_start(&act), 0);
    actor_post(&act, op_lock, &mc);
    done = actor_wait(&act, H_LEASE + TAKEOVER_MS, &rc); /* W's lease runs out */
    CU_ASSERT_TRUE(done);
    if (!done) {
        RDT_ASSERT_RC(0, rdlock_reset_name(g_cb, name));
        CU_ASSERT_FATAL(actor_wait(&act, CALL_MS, &rc));
    }
    RDT_ASSERT_RC(EOWNERDEAD, rc);
    if (rc == EOWNERDEAD) {
        RDT_ASSERT_RC(0, rdlock_status_name(g_cb, name, &st));
        CU_ASSERT_EQUAL(st.robust, RDLOCK_STATE_INCONSISTENT);
        rdlock_status_free(&st);
    }
    finish_c(&act, &mh, &mc, ch, rc);
}

/* ------------------------------------------------------------------ */
/* 6. channel permissions                                              */
/* ------------------------------------------------------------------ */

static int acl(const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(g_rc, fmt, arg);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "%s: %s\n", fmt, r ? (r->str ? r->str : "?") : g_rc->errstr);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Issue #9 item 6.  A user that may not publish or subscribe (Redis 7
 * ACL resetchannels) would hold locks whose waiters are never woken and
 * whose releases fail half-way (PUBLISH inside a script is refused after
 * the release's writes): rdlock_client_open refuses it with EACCES and
 * writes nothing.  The same user with allchannels opens fine. */
static void test_acl_without_channels_refused(void)
{
    const char *user = "rdl-nochan";
    char extra[128];
    const char *ini;
    rdlock_client_t *c = NULL;
    rdlock_t m;
    int rc;

    fresh();
    CU_ASSERT_EQUAL_FATAL(acl("ACL SETUSER %s on >pw-nochan ~* +@all resetchannels", user), 0);
    snprintf(extra, sizeof extra, "username = %s\npassword = pw-nochan\n", user);
    ini = rdt_write_ini(&g_srv, 0, extra);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    rc = rdlock_client_open(&c, ini);
    RDT_ASSERT_RC(EACCES, rc);
    if (rc == 0)
        rdlock_client_close(c);
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "DBSIZE")); /* nothing half-written */

    CU_ASSERT_EQUAL(acl("ACL SETUSER %s allchannels", user), 0);
    c = NULL;
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    if (c != NULL) {
        CU_ASSERT_EQUAL(rdt_mutex_on(&m, "s6", c, 0), 0);
        RDT_ASSERT_RC(0, rdlock_trylock(&m));
        RDT_ASSERT_RC(0, rdlock_unlock(&m));
        RDT_ASSERT_RC(0, rdlock_destroy(&m));
        rdt_close_client(c);
    }
    CU_ASSERT_EQUAL(rdt_int_cmd(g_rc, -1, "ACL DELUSER %s", user), 1);
}

/* ------------------------------------------------------------------ */
/* 7. a barrier arrival whose answer got lost                          */
/* ------------------------------------------------------------------ */

typedef struct bar_call {
    rdbarrier_t *b;
    long long ms; /* deadline, from the call */
} bar_call_t;

static int op_bar_timedwait(void *arg)
{
    bar_call_t *w = arg;
    struct timespec ts = rdt_abstime(CLOCK_REALTIME, w->ms);
    return rdbarrier_timedwait(w->b, &ts);
}

/* RELIABILITY D10.  B waits at a barrier of 2; A's arrival completes the
 * generation (B passes), but every answer to A is lost (tproxy_mute)
 * until A's deadline is over.  A's timed wait must not say that it did
 * not pass (ETIMEDOUT, EIO): its arrival counted, and it was the serial
 * one.  Pre-fix: the withdrawal of an arrival of unknown generation
 * found no arrival of A left and answered "withdrawn" (A: EIO), though
 * B had passed with A. */
static void test_barrier_arrival_answer_lost(void)
{
    tproxy_t *px;
    rdlock_client_t *ca;
    rdlock_attr_t at_a, at_b;
    rdbarrier_t ba, bb;
    actor_t act_a, act_b;
    bar_call_t wa = { &ba, 1500 }, wb = { &bb, 20000 };
    tproxy_stats_t st;
    long long t0;
    int rc_a = -1000, rc_b = -1000;

    fresh();
    CU_ASSERT_EQUAL_FATAL(a_open(&px, &ca, "command_timeout_ms = 300\ncommand_retries = 1\n"), 0);
    rdlock_attr_init(&at_a);
    rdlock_attr_setclient(&at_a, ca);
    rdlock_attr_init(&at_b);
    rdlock_attr_setclient(&at_b, g_cb);
    RDT_ASSERT_RC(0, rdbarrier_init(&ba, "s7", 2, &at_a));
    RDT_ASSERT_RC(0, rdbarrier_init(&bb, "s7", 2, &at_b));
    CU_ASSERT_EQUAL_FATAL(actor_start(&act_a), 0);
    CU_ASSERT_EQUAL_FATAL(actor_start(&act_b), 0);

    actor_post(&act_b, op_bar_timedwait, &wb);
    t0 = rdt_now_ms();
    while (rdt_int_cmd(g_rc, -1, "HLEN %s", rdt_key("s7", ":b:h")) < 1 && rdt_now_ms() - t0 < CALL_MS)
        usleep(5000);
    RDT_ASSERT_EQ_LL(1, rdt_int_cmd(g_rc, -1, "HLEN %s", rdt_key("s7", ":b:h"))); /* B arrived */

    tproxy_mute(px, 1);
    t0 = rdt_now_ms();
    actor_post(&act_a, op_bar_timedwait, &wa);
    /* A's arrival ran: B passes, while A hears nothing. */
    CU_ASSERT_FATAL(actor_wait(&act_b, CALL_MS, &rc_b));
    RDT_ASSERT_RC(0, rc_b);
    /* Past A's deadline, with A still waiting for an answer; then the
     * answers flow again. */
    CU_ASSERT_FALSE(actor_wait(&act_a, (int)(wa.ms + 300 - (rdt_now_ms() - t0)), &rc_a));
    tproxy_stats(px, &st);
    fprintf(stderr, "s7: %llu bytes of answers to A lost; A still waiting %lld ms after its call\n", st.muted,
            rdt_now_ms() - t0);
    CU_ASSERT(st.muted > 0);
    tproxy_mute(px, 0);
    CU_ASSERT_FATAL(actor_wait(&act_a, CALL_MS, &rc_a));
    fprintf(stderr, "s7: A's timed wait returned %s %lld ms after its call (deadline %lld ms)\n", rdt_errname(rc_a),
            rdt_now_ms() - t0, wa.ms);
    RDT_ASSERT_RC(RDBARRIER_SERIAL_THREAD, rc_a);

    actor_stop(&act_a);
    actor_stop(&act_b);
    RDT_ASSERT_RC(0, rdbarrier_destroy(&ba));
    RDT_ASSERT_RC(0, rdbarrier_destroy(&bb));
    rdlock_attr_destroy(&at_a);
    rdlock_attr_destroy(&at_b);
    a_close(px, ca);
}

static const rdt_test_t tests[] = {
    { "proxy_forwards", test_proxy_forwards },
    { "proxy_hold_deliver_after_close", test_proxy_hold_deliver_after_close },
    { "proxy_freeze_thaw", test_proxy_freeze_thaw },
    { "unknown_release_outcome_is_enolck", test_unknown_release_outcome_is_enolck },
    { "late_rdlock_keeps_write_hold", test_late_rdlock_keeps_write_hold },
    { "late_release_spares_newer_hold", test_late_release_spares_newer_hold },
    { "late_acquire_leaves_no_orphan", test_late_acquire_leaves_no_orphan },
    { "late_acquire_after_cut", test_late_acquire_after_cut },
    { "late_try_attempts_leave_no_orphan", test_late_try_attempts_leave_no_orphan },
    { "killed_waiter_not_handed_the_lock", test_killed_waiter_not_handed_the_lock },
    { "handover_pop_is_the_hold", test_handover_pop_is_the_hold },
    { "acl_without_channels_refused", test_acl_without_channels_refused },
    { "barrier_arrival_answer_lost", test_barrier_arrival_answer_lost },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "safety", tests, suite_setup, suite_teardown, 180);
}
