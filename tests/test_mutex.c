/* test_mutex.c - the rdlock_t mutex against a real redis-server (docs/CONTRACT.md
 * sections 1, 2, 5, 7, 10): ownership and error codes, recursion, fencing
 * tokens, deadlines, the key layout, the static initialiser and the
 * default client, mutual exclusion across processes and threads, wake-up
 * latency, unix sockets and fork().
 *
 * Threads other than the main one never call CUnit: thread actors
 * (testlib.h section 11) run lock calls on their own thread and report
 * return codes through pipes; forked children, actors or not, report
 * through pipes or their exit code.  Nothing sleeps to synchronise: waits
 * are pipe reads with a deadline or bounded polls of the real state in
 * Redis. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

static rdt_server_t g_srv;
static redisContext *g_rc;        /* plain connection for checking state (main thread only) */
static rdlock_client_t *g_c1;     /* two explicit clients: two owners per thread */
static rdlock_client_t *g_c2;
static rdlock_client_t *g_cslow;  /* retry_interval_ms = 2000: only wake-ups are fast */
static char g_ini[512];
static char g_ini_slow[512];

/* ------------------------------------------------------------------ */
/* Redis state helpers                                                 */
/* ------------------------------------------------------------------ */

/* Does some holder entry of the lock hash record process pid?  Entries are
 * "<deadline>;<token>;<count>;<pid>;<thread>;<call>;<host>" (acquire.lua). */
static int hash_has_pid(const char *key, long pid)
{
    redisReply *r = (redisReply *)redisCommand(g_rc, "HGETALL %s", key);
    char needle[32];
    size_t i;
    int found = 0;

    snprintf(needle, sizeof needle, ";%ld;", pid);
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (i = 0; i + 1 < r->elements; i += 2)
            if (strcmp(r->element[i]->str, "m") != 0 && strstr(r->element[i + 1]->str, needle))
                found = 1;
    if (r)
        freeReplyObject(r);
    return found;
}

/* Sum of the calls of all commands but the ones this test sends itself
 * for checking (INFO, EXISTS) and pub/sub housekeeping: what the library
 * sent about locks. */
static long long library_calls(void)
{
    redisReply *r = (redisReply *)redisCommand(g_rc, "INFO %s", "commandstats");
    long long sum = 0;
    const char *p;

    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
        const char *calls = strstr(p, ":calls=");
        char name[64];
        size_t len;
        if (!calls)
            break;
        len = (size_t)(calls - (p + 8));
        if (len >= sizeof name)
            continue;
        memcpy(name, p + 8, len);
        name[len] = '\0';
        /* ours, or pub/sub housekeeping of an idle wait queue */
        if (strcmp(name, "info") == 0 || strcmp(name, "exists") == 0 || strcmp(name, "ping") == 0 ||
            strstr(name, "subscribe") != NULL)
            continue;
        sum += strtoll(calls + 7, NULL, 10);
    }
    freeReplyObject(r);
    return sum;
}

/* ------------------------------------------------------------------ */
/* lock helpers                                                        */
/* ------------------------------------------------------------------ */

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static long long median5(long long v[5])
{
    long long s[5];
    memcpy(s, v, sizeof s);
    qsort(s, 5, sizeof s[0], cmp_ll);
    return s[2];
}

/* ------------------------------------------------------------------ */
/* actors                                                              */
/* ------------------------------------------------------------------ */

/* Another thread's calls on a handle of the test run on a thread actor
 * (testlib.h section 11); this is how long a call that should not block
 * may take. */
#define CALL_MS 15000

/* ------------------------------------------------------------------ */
/* setup                                                               */
/* ------------------------------------------------------------------ */

static int suite_setup(void)
{
    if (rdt_suite_start(&g_srv, &g_rc) != 0 || rdt_ini_copy(&g_srv, 0, NULL, g_ini, sizeof g_ini) != 0 ||
        rdt_ini_copy(&g_srv, 0, "[lock]\nretry_interval_ms = 2000\nretry_jitter_ms = 0\n", g_ini_slow,
                     sizeof g_ini_slow) != 0)
        return -1;
    if (rdlock_client_open(&g_c1, g_ini) != 0 || rdlock_client_open(&g_c2, g_ini) != 0 ||
        rdlock_client_open(&g_cslow, g_ini_slow) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open failed\n");
        return -1;
    }
    return rdt_flushall(&g_srv);
}

static int suite_teardown(void)
{
    int rc;
    rdt_actor_reap_all();
    rc = rdt_close_clients(&g_c1, &g_c2, &g_cslow, NULL);
    rdt_suite_stop(&g_srv, &g_rc);
    return rc;
}

#define FRESH_DB() CU_ASSERT_EQUAL_FATAL(rdt_flushall(&g_srv), 0)

/* ------------------------------------------------------------------ */
/* basics and error codes                                              */
/* ------------------------------------------------------------------ */

static void test_lock_unlock(void)
{
    rdlock_t m;
    unsigned n = 9;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "basic", g_c1, 0));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{basic}"), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{basic}"), 1);
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{basic}"), 0);
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 0);
    /* again */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{basic}"), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{basic}"), 0);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

static void test_trylock(void)
{
    rdlock_t m, m2;
    rdt_actor_t ag;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "try", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m2, "try", g_c2, 0));
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&ag, &m, NULL), 0);

    RDT_ASSERT_RC(0, rdlock_trylock(&m));                /* free */
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&ag, "trylock", CALL_MS, NULL, NULL)); /* another thread */
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));            /* self, error-checking */
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m2));           /* this thread on another client */
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "trylock", CALL_MS, NULL, NULL));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m2));
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "unlock", CALL_MS, NULL, NULL));

    RDT_ASSERT_RC(0, rdlock_trylock(&m2));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m2));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{try}"), 0);

    rdt_actor_stop(&ag);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
}

/* Relock by the owner: EDEADLK from the blocking and timed calls at once
 * (no waiting), EBUSY from trylock; nothing changes on the server. */
static void test_relock_codes(void)
{
    rdlock_t m;
    struct timespec ts;
    uint64_t tok = 0, tok2 = 0;
    unsigned n = 0;
    long long t0, fence;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "relock", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &tok));
    fence = rdt_get_ll(g_rc, rdt_fence_key(NULL, "relock"));

    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EDEADLK, rdlock_lock(&m));
    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    RDT_ASSERT_RC(EDEADLK, rdlock_timedlock(&m, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 5000);
    RDT_ASSERT_RC(EDEADLK, rdlock_clocklock(&m, CLOCK_MONOTONIC, &ts));
    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    RDT_ASSERT_RC(EDEADLK, rdlock_clocklock(&m, CLOCK_REALTIME, &ts));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    CU_ASSERT(rdt_now_ms() - t0 < 1000);
    /* abstime is validated before anything else, even before EDEADLK */
    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    ts.tv_nsec = 1000000000L;
    RDT_ASSERT_RC(EINVAL, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_MONOTONIC, NULL));

    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &tok2));
    CU_ASSERT_EQUAL(tok2, tok);
    RDT_ASSERT_EQ_LL(fence, rdt_get_ll(g_rc, rdt_fence_key(NULL, "relock")));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

static void test_unlock_eperm(void)
{
    rdlock_t m, fresh, other;
    rdt_actor_t ag;
    unsigned n = 0;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "perm", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&fresh, "perm", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&other, "perm", g_c2, 0));
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&ag, &m, NULL), 0);

    /* never locked, by anyone */
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&fresh));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));

    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(EPERM, rdt_actor_call(&ag, "unlock", CALL_MS, NULL, NULL)); /* non-holder thread */
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&other));            /* this thread, other client */
    /* still held, by us */
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{perm}"), 1);
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&ag, "trylock", CALL_MS, NULL, NULL));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);

    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m)); /* double unlock */
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{perm}"), 0);

    rdt_actor_stop(&ag);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&fresh));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

static void test_recursive(void)
{
    rdlock_t m;
    rdt_actor_t ag;
    uint64_t t1 = 0, t = 0;
    unsigned n = 0;
    unsigned long long v = 0;
    long long calls0, calls1;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "rec", g_c1, RDLOCK_RECURSIVE));
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&ag, &m, NULL), 0);

    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &t1));
    RDT_ASSERT_RC(0, rdlock_trylock(&m)); /* trylock counts too */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 3);
    /* re-entry takes no new token */
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &t));
    CU_ASSERT_EQUAL(t, t1);
    RDT_ASSERT_EQ_LL((long long)t1, rdt_get_ll(g_rc, rdt_fence_key(NULL, "rec")));
    /* other threads see it held, and hold nothing themselves */
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&ag, "trylock", CALL_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "holdcount", CALL_MS, &v, NULL));
    CU_ASSERT_EQUAL(v, 0);
    RDT_ASSERT_RC(EPERM, rdt_actor_call(&ag, "unlock", CALL_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 3);

    /* inner unlocks are local: the key stays, no command reaches Redis */
    calls0 = library_calls();
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{rec}"), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{rec}"), 1);
    calls1 = library_calls();
    CU_ASSERT(calls0 >= 0);
    if (calls1 != calls0)
        fprintf(stderr, "inner unlocks sent %lld command(s) to Redis\n", calls1 - calls0);
    RDT_ASSERT_EQ_LL(calls0, calls1);
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&ag, "trylock", CALL_MS, NULL, NULL));

    /* the last one releases */
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{rec}"), 0);
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_fencing_token(&m, &t));

    /* now another thread takes it, with a new token */
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "lock", CALL_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "token", CALL_MS, &v, NULL));
    CU_ASSERT(v > t1);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "unlock", CALL_MS, NULL, NULL));

    rdt_actor_stop(&ag);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

static void test_holdcount(void)
{
    rdlock_t m;
    rdt_actor_t ag;
    unsigned n = 7;
    unsigned long long v = 7;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "holdcount", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n)); /* never used */
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&ag, &m, NULL), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "holdcount", CALL_MS, &v, NULL));
    CU_ASSERT_EQUAL(v, 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 0);
    rdt_actor_stop(&ag);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

static void test_fencing_tokens(void)
{
    rdlock_t m1, m2, other;
    rdt_actor_t ag;
    uint64_t tok = 0, prev = 0, otok = 0;
    unsigned long long v = 0;
    int i;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m1, "fence", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m2, "fence", g_c2, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&other, "fence-other", g_c1, 0));
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&ag, &m1, NULL), 0);

    RDT_ASSERT_RC(EPERM, rdlock_fencing_token(&m1, &tok)); /* never held */
    CU_ASSERT_EQUAL(tok, 0);

    for (i = 0; i < 8; i++) {
        rdlock_t *m = i % 2 ? &m2 : &m1; /* across clients */
        tok = 0;
        RDT_ASSERT_RC(0, rdlock_lock(m));
        RDT_ASSERT_RC(0, rdlock_fencing_token(m, &tok));
        if (!(tok > prev))
            fprintf(stderr, "acquisition %d: token %" PRIu64 " after %" PRIu64 "\n", i, tok, prev);
        CU_ASSERT(tok > prev);
        RDT_ASSERT_EQ_LL((long long)tok, rdt_get_ll(g_rc, rdt_fence_key(NULL, "fence")));
        /* not the actor's hold */
        RDT_ASSERT_RC(EPERM, rdt_actor_call(&ag, "token", CALL_MS, &v, NULL));
        RDT_ASSERT_RC(0, rdlock_unlock(m));
        RDT_ASSERT_RC(EPERM, rdlock_fencing_token(m, &tok));
        prev = tok;
    }
    /* a token from another thread's hold also goes up */
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "lock", CALL_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "token", CALL_MS, &v, NULL));
    CU_ASSERT(v > prev);
    RDT_ASSERT_RC(EPERM, rdlock_fencing_token(&m1, &tok));
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "unlock", CALL_MS, NULL, NULL));

    /* one counter per name: another name starts from its own */
    RDT_ASSERT_RC(0, rdlock_lock(&other));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&other, &otok));
    RDT_ASSERT_EQ_LL((long long)otok, rdt_get_ll(g_rc, rdt_fence_key(NULL, "fence-other")));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    RDT_ASSERT_EQ_LL((long long)v, rdt_get_ll(g_rc, rdt_fence_key(NULL, "fence")));

    rdt_actor_stop(&ag);
    RDT_ASSERT_RC(0, rdlock_destroy(&m1));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* ------------------------------------------------------------------ */
/* deadlines                                                           */
/* ------------------------------------------------------------------ */

#define TIMED_MS 300

static void check_timeout(const char *what, int rc, long long elapsed)
{
    RDT_ASSERT_RC(ETIMEDOUT, rc);
    if (elapsed < TIMED_MS - 2 || elapsed >= TIMED_MS + 1000)
        fprintf(stderr, "%s: ETIMEDOUT after %lld ms for a %d ms deadline\n", what, elapsed, TIMED_MS);
    CU_ASSERT(elapsed >= TIMED_MS - 2); /* ms rounding of our own clock reads */
    CU_ASSERT(elapsed < TIMED_MS + 1000);
}

static void test_timedlock_timeout(void)
{
    rdlock_t mine, theirs;
    rdt_actor_t holder;
    struct timespec ts;
    long long t0, el;
    unsigned n = 9;
    int rc;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&mine, "timed", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&theirs, "timed", g_c2, 0));
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&holder, &theirs, NULL), 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&holder, "lock", CALL_MS, NULL, NULL));

    t0 = rdt_now_ms();
    ts = rdt_abstime(CLOCK_REALTIME, TIMED_MS);
    rc = rdlock_timedlock(&mine, &ts);
    el = rdt_now_ms() - t0;
    check_timeout("timedlock", rc, el);

    t0 = rdt_now_ms();
    ts = rdt_abstime(CLOCK_MONOTONIC, TIMED_MS);
    rc = rdlock_clocklock(&mine, CLOCK_MONOTONIC, &ts);
    el = rdt_now_ms() - t0;
    check_timeout("clocklock(MONOTONIC)", rc, el);

    t0 = rdt_now_ms();
    ts = rdt_abstime(CLOCK_REALTIME, TIMED_MS);
    rc = rdlock_clocklock(&mine, CLOCK_REALTIME, &ts);
    el = rdt_now_ms() - t0;
    check_timeout("clocklock(REALTIME)", rc, el);

    /* a deadline long past on a held lock: ETIMEDOUT at once */
    t0 = rdt_now_ms();
    ts.tv_sec = 0;
    ts.tv_nsec = 0;
    RDT_ASSERT_RC(ETIMEDOUT, rdlock_timedlock(&mine, &ts));
    RDT_ASSERT_RC(ETIMEDOUT, rdlock_clocklock(&mine, CLOCK_MONOTONIC, &ts));
    ts = rdt_abstime(CLOCK_REALTIME, -1000);
    RDT_ASSERT_RC(ETIMEDOUT, rdlock_timedlock(&mine, &ts));
    el = rdt_now_ms() - t0;
    CU_ASSERT(el < 1000);

    RDT_ASSERT_RC(0, rdlock_holdcount(&mine, &n));
    CU_ASSERT_EQUAL(n, 0);
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&mine));

    /* A waiting exclusive caller is a waiting writer (docs/CONTRACT.md section 10)
     * whose mark goes when it times out (section 6), not at the end of
     * its lease: the queue (src/scripts/acquire.lua: <key>:w) is empty
     * again while the lock is still held. */
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, "rdlock:{timed}:w"));

    /* Once the holder releases, a blocking caller of another owner gets
     * it at once rather than queueing behind a waiter who is gone. */
    RDT_ASSERT_RC(0, rdt_actor_call(&holder, "unlock", CALL_MS, NULL, NULL));
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdt_actor_call(&holder, "timed 3000", CALL_MS, NULL, NULL));
    el = rdt_now_ms() - t0;
    if (el >= 1000)
        fprintf(stderr, "lock after a timed-out waiter took %lld ms\n", el);
    CU_ASSERT(el < 1000);
    RDT_ASSERT_RC(0, rdt_actor_call(&holder, "unlock", CALL_MS, NULL, NULL));

    rdt_actor_stop(&holder);
    RDT_ASSERT_RC(0, rdlock_destroy(&mine));
    RDT_ASSERT_RC(0, rdlock_destroy(&theirs));
}

/* A timed waiter gets the lock when the holder releases before the
 * deadline (realtime timedlock and monotonic clocklock). */
static void test_timedlock_success(void)
{
    static const char *const forms[2] = { "timed 5000", "clock 5000" };
    rdlock_t mh, mw;
    rdt_actor_t holder, waiter;
    int i;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&mh, "tsucc", g_c2, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&mw, "tsucc", g_c1, 0));
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&holder, &mh, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&waiter, &mw, NULL), 0);

    for (i = 0; i < 2; i++) {
        long long t0, el;
        int queued;
        unsigned long long v = 0;

        RDT_ASSERT_RC(0, rdt_actor_call(&holder, "lock", CALL_MS, NULL, NULL));
        CU_ASSERT_EQUAL_FATAL(rdt_actor_send(&waiter, forms[i]), 0);
        queued = rdt_wait_zcard(g_rc, "rdlock:{tsucc}:w", 1, 3000);
        CU_ASSERT(queued);
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdt_actor_call(&holder, "unlock", CALL_MS, NULL, NULL));
        RDT_ASSERT_RC(0, rdt_actor_reply(&waiter, 6000, NULL, NULL));
        el = rdt_now_ms() - t0;
        if (el >= 1000)
            fprintf(stderr, "%s: acquired %lld ms after the release\n", forms[i], el);
        CU_ASSERT(el < 1000);
        RDT_ASSERT_RC(0, rdt_actor_call(&waiter, "holdcount", CALL_MS, &v, NULL));
        CU_ASSERT_EQUAL(v, 1);
        RDT_ASSERT_RC(EBUSY, rdt_actor_call(&holder, "trylock", CALL_MS, NULL, NULL));
        RDT_ASSERT_RC(0, rdt_actor_call(&waiter, "unlock", CALL_MS, NULL, NULL));
    }

    rdt_actor_stop(&holder);
    rdt_actor_stop(&waiter);
    RDT_ASSERT_RC(0, rdlock_destroy(&mh));
    RDT_ASSERT_RC(0, rdlock_destroy(&mw));
}

/* ------------------------------------------------------------------ */
/* handles                                                             */
/* ------------------------------------------------------------------ */

static void test_destroy_busy(void)
{
    rdlock_t m, a, b;
    rdt_actor_t ag;
    unsigned n = 0;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "destroy-busy", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(EBUSY, rdlock_destroy(&m));
    /* the failed destroy changed nothing */
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{destroy-busy}"), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));

    /* held through this handle by another thread of this process */
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "destroy-busy", g_c1, 0));
    CU_ASSERT_EQUAL_FATAL(rdt_actor_thread(&ag, &m, NULL), 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "lock", CALL_MS, NULL, NULL));
    RDT_ASSERT_RC(EBUSY, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdt_actor_call(&ag, "unlock", CALL_MS, NULL, NULL));
    rdt_actor_stop(&ag);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));

    /* a hold through another handle of the name does not pin this one */
    RDT_ASSERT_RC(0, rdt_mutex_on(&a, "destroy-busy", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&b, "destroy-busy", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
    RDT_ASSERT_RC(EBUSY, rdlock_destroy(&a));
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{destroy-busy}"), 0);
}

/* Two handles of one name on one client and thread are one owner. */
static void test_two_handles_same_owner(void)
{
    rdlock_t a, b, c, ra, rb;
    struct timespec ts;
    unsigned n = 0;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&a, "same", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&b, "same", g_c1, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&c, "same", g_c2, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(EDEADLK, rdlock_lock(&b));
    ts = rdt_abstime(CLOCK_REALTIME, 2000);
    RDT_ASSERT_RC(EDEADLK, rdlock_timedlock(&b, &ts));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&b));
    RDT_ASSERT_RC(0, rdlock_holdcount(&b, &n)); /* the caller's depth, whichever handle */
    CU_ASSERT_EQUAL(n, 1);
    /* the same thread on another client is another owner */
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&c));
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{same}"), 0);

    /* recursive: the second handle counts */
    RDT_ASSERT_RC(0, rdt_mutex_on(&ra, "same-rec", g_c1, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(0, rdt_mutex_on(&rb, "same-rec", g_c1, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(0, rdlock_lock(&ra));
    RDT_ASSERT_RC(0, rdlock_lock(&rb));
    RDT_ASSERT_RC(0, rdlock_holdcount(&ra, &n));
    CU_ASSERT_EQUAL(n, 2);
    RDT_ASSERT_RC(0, rdlock_holdcount(&rb, &n));
    CU_ASSERT_EQUAL(n, 2);
    RDT_ASSERT_RC(0, rdlock_unlock(&rb));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{same-rec}"), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&ra));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{same-rec}"), 0);
    RDT_ASSERT_RC(0, rdlock_holdcount(&ra, &n));
    CU_ASSERT_EQUAL(n, 0);

    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
    RDT_ASSERT_RC(0, rdlock_destroy(&c));
    RDT_ASSERT_RC(0, rdlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdlock_destroy(&rb));
}

/* docs/CONTRACT.md section 1: keys are <prefix>{<name>} and <prefix>{<name>}:<suffix>;
 * the fencing counter is the slot's <prefix>{<tag>}:tokens, never expired
 * or deleted; once unlocked, every key of the name lapses within a minute. */
static void test_key_layout(void)
{
    rdlock_t m;
    uint64_t tok = 0;
    long long ttl;
    redisReply *r;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "foo", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &tok));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{foo}"), 1);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:foo"), 0);
    RDT_ASSERT_EQ_LL((long long)tok, rdt_get_ll(g_rc, rdt_fence_key(NULL, "foo")));
    ttl = rdt_pttl(g_rc, "rdlock:{foo}");
    if (!(ttl > 0 && ttl <= 30000))
        fprintf(stderr, "PTTL rdlock:{foo} = %lld while held\n", ttl);
    CU_ASSERT(ttl > 0 && ttl <= 30000); /* a lease (default 30 s), not forever */
    RDT_ASSERT_EQ_LL(-1, rdt_pttl(g_rc, rdt_fence_key(NULL, "foo")));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{foo}"), 0);
    RDT_ASSERT_EQ_LL((long long)tok, rdt_get_ll(g_rc, rdt_fence_key(NULL, "foo")));
    RDT_ASSERT_EQ_LL(-1, rdt_pttl(g_rc, rdt_fence_key(NULL, "foo")));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{foo}:fence"), 0); /* no counter of its own */
    /* What is left of the name (the release proof) lapses within a minute. */
    r = redisCommand(g_rc, "KEYS %s", "rdlock:{foo}*");
    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; r != NULL && i < r->elements; i++) {
        ttl = rdt_pttl(g_rc, r->element[i]->str);
        if (!(ttl > 0 && ttl <= 60000))
            fprintf(stderr, "%s: PTTL %lld after the unlock\n", r->element[i]->str, ttl);
        CU_ASSERT(ttl > 0 && ttl <= 60000);
    }
    freeReplyObject(r);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A waiter that dies while queued leaves nothing behind either: the
 * waiters' keys expire with their longest mark (src/scripts/acquire.lua,
 * outlive()), so once a dead waiter's mark has run out its keys are gone
 * without anyone using the name again (docs/CONTRACT.md, section 1).  A
 * writer and a reader wait on a held lock with a 1.5 s lease and are
 * SIGKILLed: their queue keys carry expiries no longer than that lease,
 * and go by themselves while the lock is still held. */
static void test_dead_waiter_leaves_nothing(void)
{
    static const char *const wkeys[3] = { "rdlock:{deadwait}:w", "rdlock:{deadwait}:wq", "rdlock:{deadwait}:r" };
    rdt_actor_opts_t o = RDT_ACTOR_OPTS;
    rdt_actor_t w, r;
    rdlock_t m;
    long long ttl;
    redisReply *k;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "deadwait", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    o.lease = 1500;
    CU_ASSERT_FATAL(rdt_actor_start(&w, g_ini, "deadwait", &o) == 0);
    CU_ASSERT_FATAL(rdt_actor_start(&r, g_ini, "deadwait", &o) == 0);
    CU_ASSERT_EQUAL(rdt_actor_send(&w, "lock"), 0);
    CU_ASSERT(rdt_wait_zcard(g_rc, wkeys[0], 1, 5000));
    CU_ASSERT_EQUAL(rdt_actor_send(&r, "rdlock"), 0);
    CU_ASSERT(rdt_wait_zcard(g_rc, wkeys[2], 1, 5000));
    for (int i = 0; i < 3; i++) {
        ttl = rdt_pttl(g_rc, wkeys[i]);
        if (!(ttl > 0 && ttl <= 1500))
            fprintf(stderr, "%s: PTTL %lld with a waiter of lease 1500 ms\n", wkeys[i], ttl);
        CU_ASSERT(ttl > 0 && ttl <= 1500);
    }
    rdt_actor_kill(&w);
    rdt_actor_kill(&r);
    for (int i = 0; i < 3; i++)
        CU_ASSERT(rdt_wait_gone(g_rc, wkeys[i], 5000));
    /* Only the holder's keys are left. */
    k = redisCommand(g_rc, "KEYS %s", "rdlock:{deadwait}*");
    CU_ASSERT_FATAL(k != NULL && k->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; k != NULL && i < k->elements; i++) {
        const char *key = k->element[i]->str;
        int ok = strcmp(key, "rdlock:{deadwait}") == 0 || strcmp(key, "rdlock:{deadwait}:x") == 0;
        if (!ok)
            fprintf(stderr, "%s left by the dead waiters\n", key);
        CU_ASSERT(ok);
    }
    freeReplyObject(k);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A client with `socket =` in its ini (unix socket) locks and unlocks. */
static void test_unix_socket(void)
{
    rdlock_client_t *cs = NULL;
    rdlock_t m, tcp;
    const char *ini;
    uint64_t tok = 0;

    FRESH_DB();
    ini = rdt_write_ini(&g_srv, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    RDT_ASSERT_RC(0, rdlock_client_open(&cs, ini));
    CU_ASSERT_PTR_NOT_NULL_FATAL(cs);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "unix", cs, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&tcp, "unix", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &tok));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{unix}"), 1); /* the same server, seen over TCP */
    RDT_ASSERT_EQ_LL((long long)tok, rdt_get_ll(g_rc, rdt_fence_key(NULL, "unix")));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&tcp));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{unix}"), 0);
    RDT_ASSERT_RC(0, rdlock_trylock(&tcp));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&tcp));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&tcp));
    RDT_ASSERT_RC(0, rdlock_client_close(cs));
}

/* ------------------------------------------------------------------ */
/* static initialiser and the default client (in a child process)      */
/* ------------------------------------------------------------------ */

#define RACE_THREADS 8
#define RACE_ROUNDS 25

static rdlock_t g_race = RDLOCK_INITIALIZER("race");
static pthread_barrier_t g_race_barrier;
static long g_race_counter;  /* plain: only the lock protects it */
static int g_race_inside;
static int g_race_errors;
static uint64_t g_race_last_token;

static void *race_thread(void *arg)
{
    int i;
    (void)arg;
    pthread_barrier_wait(&g_race_barrier);
    for (i = 0; i < RACE_ROUNDS; i++) {
        uint64_t tok = 0;
        long v;
        int rc = rdlock_lock(&g_race);
        if (rc != 0) {
            fprintf(stderr, "race: rdlock_lock -> %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_race_errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (__atomic_add_fetch(&g_race_inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&g_race_errors, 1, __ATOMIC_RELAXED);
        if (rdlock_fencing_token(&g_race, &tok) != 0 || tok <= g_race_last_token)
            __atomic_add_fetch(&g_race_errors, 1, __ATOMIC_RELAXED);
        g_race_last_token = tok;
        v = g_race_counter;
        sched_yield();
        g_race_counter = v + 1;
        __atomic_sub_fetch(&g_race_inside, 1, __ATOMIC_SEQ_CST);
        rc = rdlock_unlock(&g_race);
        if (rc != 0) {
            fprintf(stderr, "race: rdlock_unlock -> %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_race_errors, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static int static_race_child(void *arg)
{
    pthread_t th[RACE_THREADS];
    redisContext *c;
    int i, started = 0;
    (void)arg;

    if (setenv("RDLOCK_CONF", g_ini, 1) != 0)
        return 10;
    if (pthread_barrier_init(&g_race_barrier, NULL, RACE_THREADS) != 0)
        return 11;
    for (i = 0; i < RACE_THREADS; i++)
        if (pthread_create(&th[i], NULL, race_thread, NULL) == 0)
            started++;
    if (started != RACE_THREADS) {
        fprintf(stderr, "race: could only start %d threads\n", started);
        _exit(12); /* the others wait on the barrier forever */
    }
    for (i = 0; i < RACE_THREADS; i++)
        pthread_join(th[i], NULL);
    if (g_race_errors != 0) {
        fprintf(stderr, "race: %d error(s)\n", g_race_errors);
        return 13;
    }
    if (g_race_counter != RACE_THREADS * RACE_ROUNDS) {
        fprintf(stderr, "race: counter %ld, want %d\n", g_race_counter, RACE_THREADS * RACE_ROUNDS);
        return 14;
    }
    /* the default client used $RDLOCK_CONF: our server saw the lock */
    c = rdt_connect(&g_srv);
    if (!c)
        return 15;
    if (rdt_get_ll(c, rdt_fence_key(NULL, "race")) != (long long)g_race_last_token ||
        g_race_last_token < RACE_THREADS * RACE_ROUNDS) {
        fprintf(stderr, "race: fence %lld, last token %" PRIu64 "\n", rdt_get_ll(c, rdt_fence_key(NULL, "race")),
                g_race_last_token);
        redisFree(c);
        return 16;
    }
    if (rdt_exists(c, "rdlock:{race}") != 0) {
        redisFree(c);
        return 17;
    }
    redisFree(c);
    return 0;
}

static void test_static_initializer_race(void)
{
    int rc;

    FRESH_DB();
    rc = rdt_run_child(static_race_child, NULL, 30000);
    if (rc != 0)
        fprintf(stderr, "static_race_child failed: %d\n", rc);
    RDT_ASSERT_EQ_LL(0, rc);
}

/* The default client with RDLOCK_INITIALIZER and an attr naming no client:
 * both resolve to the same default client (one owner per thread). */
static rdlock_t g_static_dflt = RDLOCK_INITIALIZER("dflt");

static void silent_logger(int level, const char *msg, void *arg)
{
    (void)level;
    (void)msg;
    (void)arg;
}

static int default_client_child(void *arg)
{
    rdlock_t m;
    rdlock_attr_t a;
    unsigned n = 0;
    int rc;
    (void)arg;

    if (setenv("RDLOCK_CONF", g_ini, 1) != 0)
        return 10;
    if (rdlock_attr_init(&a) != 0 || rdlock_attr_setclient(&a, NULL) != 0)
        return 11;
    if (rdlock_init(&m, "dflt", &a) != 0)
        return 12;
    rdlock_attr_destroy(&a);
    if ((rc = rdlock_trylock(&g_static_dflt)) != 0) {
        fprintf(stderr, "default: trylock static -> %s\n", rdt_errname(rc));
        return 13;
    }
    if (rdlock_holdcount(&g_static_dflt, &n) != 0 || n != 1)
        return 14;
    /* same name, same (default) client, same thread: one owner */
    if ((rc = rdlock_lock(&m)) != EDEADLK) {
        fprintf(stderr, "default: lock through the second handle -> %s\n", rdt_errname(rc));
        return 15;
    }
    if (rdlock_unlock(&g_static_dflt) != 0)
        return 16;
    if (rdlock_lock(&m) != 0)
        return 17;
    if (rdlock_trylock(&g_static_dflt) != EBUSY)
        return 18;
    if (rdlock_unlock(&m) != 0)
        return 19;
    if (rdlock_destroy(&m) != 0)
        return 20;
    rdlock_set_logger(silent_logger, NULL); /* the EINVAL below logs */
    /* A statically initialised lock can be destroyed when not held. */
    if (rdlock_destroy(&g_static_dflt) != 0)
        return 21;
    if (rdlock_trylock(&g_static_dflt) != EINVAL)
        return 22;
    return 0;
}

static void test_default_client(void)
{
    int rc;

    FRESH_DB();
    rc = rdt_run_child(default_client_child, NULL, 20000);
    if (rc != 0)
        fprintf(stderr, "default_client_child failed at step %d\n", rc);
    RDT_ASSERT_EQ_LL(0, rc);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{dflt}"), 0);
    CU_ASSERT(rdt_get_ll(g_rc, rdt_fence_key(NULL, "dflt")) >= 2);
}

/* ------------------------------------------------------------------ */
/* mutual exclusion: processes x threads                               */
/* ------------------------------------------------------------------ */

#define MP_PROCS 4
#define MP_THREADS 2
#define MP_ROUNDS 100
#define MP_COUNTER "mp:counter"

typedef struct mp_proc {
    rdlock_t m;
    uint64_t tokens[MP_THREADS * MP_ROUNDS]; /* in this process's order */
    int ntokens;
    int errors;
} mp_proc_t;

static void *mp_thread(void *arg)
{
    mp_proc_t *p = arg;
    redisContext *c = rdt_connect(&g_srv);
    int i;

    if (!c) {
        __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (i = 0; i < MP_ROUNDS; i++) {
        uint64_t tok = 0;
        long long v;
        redisReply *r;
        int rc = rdlock_lock(&p->m);
        if (rc != 0) {
            fprintf(stderr, "mp: lock -> %s\n", rdt_errname(rc));
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (rdlock_fencing_token(&p->m, &tok) != 0)
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
        p->tokens[p->ntokens++] = tok; /* under the lock */
        /* non-atomic read-modify-write */
        v = rdt_get_ll(c, MP_COUNTER);
        if (v == -1)
            v = 0;
        if (v < 0)
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
        r = (redisReply *)redisCommand(c, "SET %s %lld", MP_COUNTER, v + 1);
        if (!r || r->type != REDIS_REPLY_STATUS)
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
        if (r)
            freeReplyObject(r);
        rc = rdlock_unlock(&p->m);
        if (rc != 0) {
            fprintf(stderr, "mp: unlock -> %s\n", rdt_errname(rc));
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
        }
    }
    redisFree(c);
    return NULL;
}

static int mp_child(void *arg)
{
    rdt_pipe_t *pp = arg;
    static mp_proc_t p;
    rdlock_client_t *cl = NULL;
    pthread_t th[MP_THREADS];
    char line[64];
    int i, rc;

    rdt_pipe_child(pp);
    /* its own client: another host would have one */
    if ((rc = rdlock_client_open(&cl, g_ini)) != 0 || rdt_mutex_on(&p.m, "mp", cl, 0) != 0) {
        rdt_send(pp->to_parent[1], "done 0 1");
        return 1;
    }
    for (i = 0; i < MP_THREADS; i++)
        if (pthread_create(&th[i], NULL, mp_thread, &p) != 0)
            return 2;
    for (i = 0; i < MP_THREADS; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < p.ntokens; i++) {
        snprintf(line, sizeof line, "tok %" PRIu64, p.tokens[i]);
        if (rdt_send(pp->to_parent[1], line) != 0)
            return 3;
    }
    snprintf(line, sizeof line, "done %d %d", p.ntokens, p.errors);
    rdt_send(pp->to_parent[1], line);
    rdlock_destroy(&p.m);
    rdlock_client_close(cl);
    return p.errors ? 4 : 0;
}

static void test_multiprocess_exclusion(void)
{
    rdt_pipe_t pipes[MP_PROCS];
    pid_t pids[MP_PROCS];
    static long long all[MP_PROCS * MP_THREADS * MP_ROUNDS];
    int nall = 0, i, k, bad_order = 0, dups = 0;
    long long t0 = rdt_now_ms();

    FRESH_DB();
    for (i = 0; i < MP_PROCS; i++) {
        CU_ASSERT_EQUAL_FATAL(rdt_pipe_open(&pipes[i]), 0);
        pids[i] = rdt_fork(mp_child, &pipes[i]);
        CU_ASSERT_FATAL(pids[i] > 0);
        rdt_pipe_parent(&pipes[i]);
    }
    for (i = 0; i < MP_PROCS; i++) {
        char line[64];
        long long prev = 0;
        int n = 0, done = 0;
        while (rdt_recv(pipes[i].to_parent[0], line, sizeof line, 60000) >= 0) {
            if (strncmp(line, "tok ", 4) == 0) {
                long long t = strtoll(line + 4, NULL, 10);
                if (t <= prev)
                    bad_order++;
                prev = t;
                if (nall < (int)(sizeof all / sizeof all[0]))
                    all[nall++] = t;
                n++;
            } else if (strncmp(line, "done ", 5) == 0) {
                int cnt = -1, errs = -1;
                sscanf(line + 5, "%d %d", &cnt, &errs);
                RDT_ASSERT_EQ_LL(n, cnt);
                RDT_ASSERT_EQ_LL(0, errs);
                done = 1;
                break;
            }
        }
        CU_ASSERT(done);
        RDT_ASSERT_EQ_LL(MP_THREADS * MP_ROUNDS, n);
    }
    for (i = 0; i < MP_PROCS; i++) {
        int st = rdt_wait(pids[i], 30000);
        CU_ASSERT(st >= 0 && st < 128); /* exited (results came through the pipe) */
        rdt_pipe_close(&pipes[i]);
    }
    RDT_ASSERT_EQ_LL(0, bad_order); /* per process, strictly increasing */
    RDT_ASSERT_EQ_LL(MP_PROCS * MP_THREADS * MP_ROUNDS, nall);
    qsort(all, (size_t)nall, sizeof all[0], cmp_ll);
    for (k = 1; k < nall; k++)
        if (all[k] == all[k - 1])
            dups++;
    RDT_ASSERT_EQ_LL(0, dups); /* unique across all holders */
    RDT_ASSERT_EQ_LL(MP_PROCS * MP_THREADS * MP_ROUNDS, rdt_get_ll(g_rc, MP_COUNTER));
    if (nall > 0)
        RDT_ASSERT_EQ_LL(all[nall - 1], rdt_get_ll(g_rc, rdt_fence_key(NULL, "mp")));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{mp}"), 0);
    printf("(%d sections in %lld ms) ", nall, rdt_now_ms() - t0);
}

/* ------------------------------------------------------------------ */
/* many threads of one client on one name                              */
/* ------------------------------------------------------------------ */

#define MANY_THREADS 24 /* more than RDL_LISTEN_MAX (16, src/prim/handover.h) */
#define MANY_ROUNDS 10

typedef struct many {
    rdlock_t m;
    int errors, done;
    long long inside; /* threads inside the section at once, at most 1 */
} many_t;

static void *many_thread(void *arg)
{
    many_t *p = arg;
    redisContext *c = rdt_connect(&g_srv);
    int i;
    for (i = 0; c != NULL && i < MANY_ROUNDS; i++) {
        long long v;
        redisReply *r;
        if (rdlock_lock(&p->m) != 0) {
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (__atomic_add_fetch(&p->inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
        v = rdt_get_ll(c, "many:counter"); /* non-atomic read-modify-write */
        r = (redisReply *)redisCommand(c, "SET many:counter %lld", v < 0 ? 1 : v + 1);
        if (!r || r->type != REDIS_REPLY_STATUS)
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
        if (r)
            freeReplyObject(r);
        __atomic_sub_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
        if (rdlock_unlock(&p->m) != 0)
            __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
    }
    if (c == NULL)
        __atomic_add_fetch(&p->errors, 1, __ATOMIC_RELAXED);
    else
        redisFree(c);
    __atomic_add_fetch(&p->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* 24 threads of one client take one lock 10 times each: mutual exclusion
 * holds, and queued writers wait for their hand-over in BLPOP (each on a
 * connection of its own) at most 16 at a time: the others wait the
 * pub/sub way, and get the lock just the same. */
static void test_many_threads_one_client(void)
{
    static many_t p;
    pthread_t th[MANY_THREADS];
    long long b, max_blocked = 0;
    int i, started = 0;

    FRESH_DB();
    memset(&p, 0, sizeof p);
    RDT_ASSERT_RC(0, rdt_mutex_on(&p.m, "many", g_c1, 0));
    for (i = 0; i < MANY_THREADS; i++)
        if (pthread_create(&th[i], NULL, many_thread, &p) == 0)
            started++;
    RDT_ASSERT_EQ_LL(MANY_THREADS, started);
    /* Sampling the server while they run (the test's only pacing). */
    while (__atomic_load_n(&p.done, __ATOMIC_SEQ_CST) < started) {
        if ((b = rdt_blocked_clients(g_rc)) > max_blocked)
            max_blocked = b;
        rdt__nap_ms(1);
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    printf("(at most %lld threads in BLPOP) ", max_blocked);
    RDT_ASSERT_EQ_LL(0, p.errors);
    RDT_ASSERT_EQ_LL((long long)MANY_THREADS * MANY_ROUNDS, rdt_get_ll(g_rc, "many:counter"));
    CU_ASSERT(max_blocked >= 1);
    CU_ASSERT(max_blocked <= 16);
    RDT_ASSERT_RC(0, rdlock_destroy(&p.m));
}

/* ------------------------------------------------------------------ */
/* wake-up latency                                                     */
/* ------------------------------------------------------------------ */

#define WAKE_ROUNDS 5
#define WAKE_MAX_MS 500 /* the waiter's retry interval is 2000 ms */

/* The waiter is a process actor on its own client with
 * retry_interval_ms = 2000: only a wake-up gets it the lock quickly. */
static void test_wakeup_latency_process(void)
{
    rdt_actor_t w;
    rdlock_t m;
    long long lat[WAKE_ROUNDS], med;
    int r, rc, st;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "wake-proc", g_c1, 0));
    CU_ASSERT_FATAL(rdt_actor_start(&w, g_ini_slow, "wake-proc", NULL) == 0);

    for (r = 0; r < WAKE_ROUNDS; r++) {
        long long t0;
        lat[r] = 99999;
        RDT_ASSERT_RC(0, rdlock_lock(&m));
        CU_ASSERT_EQUAL(rdt_actor_send(&w, "lock"), 0);
        CU_ASSERT(rdt_wait_zcard(g_rc, "rdlock:{wake-proc}:w", 1, 5000)); /* it is waiting */
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdlock_unlock(&m));
        rc = rdt_actor_reply(&w, 10000, NULL, NULL);
        if (rc == RDT_ACTOR_NOREPLY) {
            CU_FAIL("waiter did not report");
            break;
        }
        lat[r] = rdt_now_ms() - t0;
        RDT_ASSERT_RC(0, rc);
        CU_ASSERT_EQUAL(rdt_actor_send(&w, "unlock"), 0);
        rc = rdt_actor_reply(&w, 10000, NULL, NULL);
        CU_ASSERT_NOT_EQUAL(rc, RDT_ACTOR_NOREPLY);
        RDT_ASSERT_RC(0, rc);
    }
    st = rdt_actor_stop(&w);
    CU_ASSERT(st >= 0 && st < 128); /* exited (results came through the pipe) */
    med = median5(lat);
    printf("(median %lld ms: %lld %lld %lld %lld %lld) ", med, lat[0], lat[1], lat[2], lat[3], lat[4]);
    CU_ASSERT(med < WAKE_MAX_MS);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* One process: the holder (this thread) on holder_client, the waiter a
 * thread actor on the slow client. */
static long long wake_threads(const char *name, rdlock_client_t *holder_client)
{
    rdlock_t mh, mw;
    rdt_actor_t waiter;
    long long lat[WAKE_ROUNDS], med;
    char wkey[128];
    int r;

    snprintf(wkey, sizeof wkey, "rdlock:{%s}:w", name);
    RDT_ASSERT_RC(0, rdt_mutex_on(&mh, name, holder_client, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&mw, name, g_cslow, 0));
    if (rdt_actor_thread(&waiter, &mw, NULL) != 0) {
        CU_FAIL("rdt_actor_thread");
        return 99999;
    }
    for (r = 0; r < WAKE_ROUNDS; r++) {
        long long t0;
        lat[r] = 99999;
        RDT_ASSERT_RC(0, rdlock_lock(&mh));
        CU_ASSERT_EQUAL(rdt_actor_send(&waiter, "lock"), 0);
        CU_ASSERT(rdt_wait_zcard(g_rc, wkey, 1, 5000));
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdlock_unlock(&mh));
        RDT_ASSERT_RC(0, rdt_actor_reply(&waiter, 10000, NULL, NULL));
        lat[r] = rdt_now_ms() - t0;
        RDT_ASSERT_RC(0, rdt_actor_call(&waiter, "unlock", CALL_MS, NULL, NULL));
    }
    rdt_actor_stop(&waiter);
    RDT_ASSERT_RC(0, rdlock_destroy(&mh));
    RDT_ASSERT_RC(0, rdlock_destroy(&mw));
    med = median5(lat);
    printf("(median %lld ms: %lld %lld %lld %lld %lld) ", med, lat[0], lat[1], lat[2], lat[3], lat[4]);
    return med;
}

static void test_wakeup_latency_threads(void)
{
    FRESH_DB();
    CU_ASSERT(wake_threads("wake-thr", g_cslow) < WAKE_MAX_MS); /* same client */
}

static void test_wakeup_latency_other_client(void)
{
    FRESH_DB();
    CU_ASSERT(wake_threads("wake-cli", g_c1) < WAKE_MAX_MS); /* through pub/sub */
}

/* ------------------------------------------------------------------ */
/* fork (docs/CONTRACT.md section 7)                                   */
/* ------------------------------------------------------------------ */

#define FORK_LEASE_MS 300

static rdlock_t g_fork_lock;

static int fork_child(void *arg)
{
    rdlock_t other;
    rdlock_attr_t a;
    redisContext *c;
    struct timespec ts;
    uint64_t tok = 0;
    unsigned n = 9;
    long long until;
    int rc;
    (void)arg;

    /* none of the parent's holds */
    if ((rc = rdlock_unlock(&g_fork_lock)) != EPERM) {
        fprintf(stderr, "fork child: unlock -> %s\n", rdt_errname(rc));
        return 10;
    }
    if ((rc = rdlock_trylock(&g_fork_lock)) != EBUSY) {
        fprintf(stderr, "fork child: trylock -> %s\n", rdt_errname(rc));
        return 11;
    }
    if (rdlock_holdcount(&g_fork_lock, &n) != 0 || n != 0)
        return 12;
    if (rdlock_fencing_token(&g_fork_lock, &tok) != EPERM)
        return 13;
    /* a different owner: it waits, it is no relock */
    ts = rdt_abstime(CLOCK_MONOTONIC, 200);
    if ((rc = rdlock_clocklock(&g_fork_lock, CLOCK_MONOTONIC, &ts)) != ETIMEDOUT) {
        fprintf(stderr, "fork child: clocklock -> %s\n", rdt_errname(rc));
        return 14;
    }

    /* its own hold of another name on the inherited client, renewed by
     * its own watchdog: a 300 ms lease survives 3 leases */
    if (rdlock_attr_init(&a) != 0 || rdlock_attr_setclient(&a, g_c1) != 0 ||
        rdlock_attr_setlease(&a, FORK_LEASE_MS) != 0 || rdlock_attr_setwatchdog(&a, 1) != 0 ||
        rdlock_init(&other, "fork-child", &a) != 0)
        return 15;
    rdlock_attr_destroy(&a);
    if ((rc = rdlock_lock(&other)) != 0) {
        fprintf(stderr, "fork child: lock other -> %s\n", rdt_errname(rc));
        return 16;
    }
    c = rdt_connect(&g_srv);
    if (!c)
        return 17;
    until = rdt_now_ms() + 3 * FORK_LEASE_MS;
    while (rdt_now_ms() < until) {
        if (rdt_exists(c, "rdlock:{fork-child}") != 1) {
            fprintf(stderr, "fork child: its hold vanished: not renewed\n");
            redisFree(c);
            return 18;
        }
        rdt__nap_ms(20); /* pacing of a state check, not synchronisation */
    }
    redisFree(c);
    if ((rc = rdlock_unlock(&other)) != 0) {
        fprintf(stderr, "fork child: unlock other -> %s\n", rdt_errname(rc));
        return 19;
    }
    if (rdlock_destroy(&other) != 0)
        return 20;
    /* still not ours */
    if (rdlock_unlock(&g_fork_lock) != EPERM)
        return 21;
    return 0;
}

static void test_fork(void)
{
    uint64_t tok = 0, tok2 = 0;
    unsigned n = 0;
    int rc;

    FRESH_DB();
    RDT_ASSERT_RC(0, rdt_mutex_on(&g_fork_lock, "fork-parent", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&g_fork_lock));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&g_fork_lock, &tok));
    CU_ASSERT_TRUE(hash_has_pid("rdlock:{fork-parent}", (long)getpid()));

    rc = rdt_run_child(fork_child, NULL, 20000);
    if (rc != 0)
        fprintf(stderr, "fork_child failed at step %d\n", rc);
    RDT_ASSERT_EQ_LL(0, rc);

    /* the parent's hold is unaffected */
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{fork-parent}"), 1);
    CU_ASSERT_TRUE(hash_has_pid("rdlock:{fork-parent}", (long)getpid()));
    RDT_ASSERT_RC(0, rdlock_holdcount(&g_fork_lock, &n));
    CU_ASSERT_EQUAL(n, 1);
    RDT_ASSERT_RC(0, rdlock_fencing_token(&g_fork_lock, &tok2));
    CU_ASSERT_EQUAL(tok2, tok);
    RDT_ASSERT_EQ_LL((long long)tok, rdt_get_ll(g_rc, rdt_fence_key(NULL, "fork-parent"))); /* the child never took it */
    RDT_ASSERT_RC(0, rdlock_unlock(&g_fork_lock));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{fork-parent}"), 0);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{fork-child}"), 0);
    RDT_ASSERT_RC(0, rdlock_destroy(&g_fork_lock));
}

/* ------------------------------------------------------------------ */

static const rdt_test_t tests[] = {
    { "lock_unlock", test_lock_unlock },
    { "trylock", test_trylock },
    { "relock_codes", test_relock_codes },
    { "unlock_eperm", test_unlock_eperm },
    { "recursive", test_recursive },
    { "holdcount", test_holdcount },
    { "fencing_tokens", test_fencing_tokens },
    { "timedlock_timeout", test_timedlock_timeout },
    { "timedlock_success", test_timedlock_success },
    { "destroy_busy", test_destroy_busy },
    { "two_handles_same_owner", test_two_handles_same_owner },
    { "key_layout", test_key_layout },
    { "dead_waiter_leaves_nothing", test_dead_waiter_leaves_nothing },
    { "unix_socket", test_unix_socket },
    { "static_initializer_race", test_static_initializer_race },
    { "default_client", test_default_client },
    { "multiprocess_exclusion", test_multiprocess_exclusion },
    { "many_threads_one_client", test_many_threads_one_client },
    { "wakeup_latency_process", test_wakeup_latency_process },
    { "wakeup_latency_threads", test_wakeup_latency_threads },
    { "wakeup_latency_other_client", test_wakeup_latency_other_client },
    { "fork", test_fork },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "mutex", tests, suite_setup, suite_teardown, 120);
}
