/* test_watchdog.c - lease renewal, lost leases and max_hold_ms (docs/CONTRACT.md
 * sections 3 [watchdog], 5.1, 5.3, 10) against a private redis-server.
 *
 * Every test uses explicit clients (rdlock_client_open on an ini written by
 * rdt_write_ini) and FLUSHALLs first.  Waiting is done with condition
 * variables or by polling the server's real state with a deadline; the only
 * sleeps let wall time pass for leases to expire or be renewed, which is
 * what is being tested. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

static rdt_server_t srv;

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* Init m on client c.  lease 0 = from config; watchdog < 0 = from config. */
static int init_lock(rdlock_t *m, const char *name, rdlock_client_t *c, unsigned lease, int watchdog,
                     int type, rdlock_lost_fn fn, void *arg)
{
    rdt_lockopts_t o = { .client = c, .type = type, .lease = lease, .watchdog = watchdog,
                         .lostcb = fn, .lostarg = arg };
    return rdt_mutex_init(m, name, &o);
}

/* INFO commandstats: calls of cmd ("evalsha"), 0 if never called, -1 on error. */
static long long cmd_calls(const char *cmd)
{
    redisReply *r = rdt_cmd_on(&srv, "INFO commandstats");
    char needle[64];
    const char *p;
    long long v = -1;

    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_STRING) {
        snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
        p = strstr(r->str, needle);
        v = p ? strtoll(p + strlen(needle), NULL, 10) : 0;
    }
    freeReplyObject(r);
    return v;
}

static rdt_lostrec_t lost; /* the lost callbacks of every test (rdt_lost_cb, &lost) */

static int setup(void)
{
    rdt_lost_init(&lost);
    return rdt_suite_start(&srv, NULL);
}

static int teardown(void)
{
    rdt_suite_stop(&srv, NULL);
    return 0;
}

static void fresh(void)
{
    CU_ASSERT_FATAL(rdt_flushall(&srv) == 0);
    rdt_lost_reset(&lost);
}

/* Check repeatedly, for duration_ms, that `other` cannot take m2 (another
 * client's handle of a held name).  Returns how many trylocks did not give
 * EBUSY (0 = held throughout) and the number of checks in *checks. */
static int busy_throughout(rdlock_t *m2, long duration_ms, int *checks)
{
    long long end = rdt_now_ms() + duration_ms;
    int bad = 0, n = 0, rc;

    do {
        rc = rdlock_trylock(m2);
        n++;
        if (rc != EBUSY) {
            fprintf(stderr, "busy_throughout: trylock gave %s after %lld ms\n", rdt_errname(rc),
                    duration_ms - (end - rdt_now_ms()));
            bad++;
            if (rc == 0)
                rdlock_unlock(m2);
        }
        rdt__nap_ms(50); /* pacing of the checks, not synchronisation */
    } while (rdt_now_ms() < end);
    if (checks)
        *checks = n;
    return bad;
}

/* ------------------------------------------------------------------ */
/* watchdog off                                                        */
/* ------------------------------------------------------------------ */

/* Lease expiry ends the hold; another client takes it; the stale owner's
 * unlock is ENOLCK (then EPERM) and leaves the new owner's hold alone. */
static void check_expiry_without_watchdog(rdlock_client_t *ca, rdlock_t *ma, unsigned lease)
{
    rdlock_client_t *cb = rdt_open_client(&srv, NULL);
    rdlock_t mb;
    struct timespec abst;
    long long t0, took;
    char fb[128], fa[128];
    unsigned count = 99;

    RDT_ASSERT_RC(0, init_lock(&mb, "wd-off", cb, lease, 0, 0, NULL, NULL));
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_lock(ma));
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-off}", fa, sizeof fa, NULL), 1);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mb));

    clock_gettime(CLOCK_REALTIME, &abst);
    abst.tv_sec += 3;
    RDT_ASSERT_RC(0, rdlock_timedlock(&mb, &abst));
    took = rdt_now_ms() - t0;
    printf("[taken by the other client after %lld ms, lease %u] ", took, lease);
    CU_ASSERT(took >= (long long)lease - 20);
    CU_ASSERT(took <= (long long)lease + 800);

    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-off}", fb, sizeof fb, NULL), 1);
    CU_ASSERT(strcmp(fa, fb) != 0);

    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(ma));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(ma));
    RDT_ASSERT_RC(0, rdlock_holdcount(ma, &count));
    RDT_ASSERT_EQ_LL(0, count);
    /* The stale unlock did not touch the new owner's hold. */
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-off}", fa, sizeof fa, NULL), 1);
    CU_ASSERT_STRING_EQUAL(fa, fb);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(ma)); /* ma is just another owner now */
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    RDT_ASSERT_RC(0, rdlock_trylock(ma));
    RDT_ASSERT_RC(0, rdlock_unlock(ma));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(cb);
}

static void test_off_by_attr(void)
{
    rdlock_client_t *c;
    rdlock_t m;

    fresh();
    c = rdt_open_client(&srv, NULL); /* watchdog enabled in config (default) */
    RDT_ASSERT_RC(0, init_lock(&m, "wd-off", c, 300, 0, 0, rdt_lost_cb, &lost));
    check_expiry_without_watchdog(c, &m, 300);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    RDT_ASSERT_EQ_LL(0, rdt_lost_count(&lost)); /* no watchdog, no callback */
}

static void test_off_by_ini(void)
{
    rdlock_client_t *c;
    rdlock_t m;
    long long t0, gone_at = -1;

    fresh();
    c = rdt_open_client(&srv, "[lock]\nlease_ms = 400\n[watchdog]\nenabled = no\n");
    RDT_ASSERT_RC(0, init_lock(&m, "wd-off", c, 0, -1, 0, NULL, NULL));
    check_expiry_without_watchdog(c, &m, 400);

    /* Nobody else this time: the key vanishes by itself at lease expiry. */
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    while (rdt_now_ms() - t0 < 3000) {
        if (rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{wd-off}") == 0) {
            gone_at = rdt_now_ms() - t0;
            break;
        }
        rdt__nap_ms(10); /* polling the server's state */
    }
    printf("[key gone after %lld ms] ", gone_at);
    CU_ASSERT(gone_at >= 380);
    CU_ASSERT(gone_at <= 1000);
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
}

/* ------------------------------------------------------------------ */
/* watchdog on                                                         */
/* ------------------------------------------------------------------ */

static void test_keeps_hold(void)
{
    rdlock_client_t *ca, *cb;
    rdlock_t ma, mb;
    int checks = 0;
    long long pttl;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_lock(&ma, "wd-keep", ca, 300, -1, 0, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, init_lock(&mb, "wd-keep", cb, 300, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&ma));
    /* 1 s = more than 3 leases, checked every ~50 ms. */
    CU_ASSERT_EQUAL(busy_throughout(&mb, 1000, &checks), 0);
    CU_ASSERT(checks >= 10);
    pttl = rdt_int_on(&srv, 0, "PTTL %s", "rdlock:{wd-keep}");
    CU_ASSERT(pttl > 0 && pttl <= 300);
    RDT_ASSERT_RC(0, rdlock_unlock(&ma));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{wd-keep}"));
    RDT_ASSERT_RC(0, rdlock_trylock(&mb));
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    RDT_ASSERT_EQ_LL(0, rdt_lost_count(&lost));
    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* The attribute wins over the config: watchdog on for one lock although
 * [watchdog] enabled = no. */
static void test_attr_on_overrides_ini(void)
{
    rdlock_client_t *c, *cb;
    rdlock_t m, mb;
    int checks = 0;

    fresh();
    c = rdt_open_client(&srv, "[lock]\nlease_ms = 300\n[watchdog]\nenabled = no\n");
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "wd-attr-on", c, 0, 1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, init_lock(&mb, "wd-attr-on", cb, 300, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_EQUAL(busy_throughout(&mb, 1000, &checks), 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(c);
    rdt_close_client(cb);
}

/* Count how often the holder's deadline in the hash changes in window_ms. */
static int count_renewals(const char *key, long window_ms, long long *min_pttl)
{
    redisContext *rc = rdt_connect(&srv);
    long long end, last = -1, d;
    int changes = 0;

    *min_pttl = -1;
    if (!rc)
        return -1;
    rdt_holders(rc, key, NULL, 0, NULL, NULL, 0, &last);
    end = rdt_now_ms() + window_ms;
    while (rdt_now_ms() < end) {
        redisReply *r;
        if (rdt_holders(rc, key, NULL, 0, NULL, NULL, 0, &d) != 1) {
            changes = -1;
            break;
        }
        if (d != last) {
            changes++;
            last = d;
        }
        r = (redisReply *)redisCommand(rc, "PTTL %s", key);
        if (r && r->type == REDIS_REPLY_INTEGER && (*min_pttl < 0 || r->integer < *min_pttl))
            *min_pttl = r->integer;
        if (r)
            freeReplyObject(r);
        rdt__nap_ms(5); /* sampling the server's state */
    }
    redisFree(rc);
    return changes;
}

static void test_interval_ms(void)
{
    rdlock_client_t *fast, *slow;
    rdlock_t mf, ms;
    long long min_pttl = -1;
    int n;

    fresh();
    /* interval 100 ms on a 3 s lease: about 10 renewals a second. */
    fast = rdt_open_client(&srv, "[lock]\nlease_ms = 3000\n[watchdog]\ninterval_ms = 100\n");
    RDT_ASSERT_RC(0, init_lock(&mf, "wd-int", fast, 0, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&mf));
    n = count_renewals("rdlock:{wd-int}", 1000, &min_pttl);
    printf("[interval 100: %d renewals in 1 s, min PTTL %lld] ", n, min_pttl);
    CU_ASSERT(n >= 6 && n <= 15);
    CU_ASSERT(min_pttl >= 2700);
    RDT_ASSERT_RC(0, rdlock_unlock(&mf));
    RDT_ASSERT_RC(0, rdlock_destroy(&mf));
    rdt_close_client(fast);

    /* The default, lease / 3 = 1 s: at most 2 renewals in the same window. */
    slow = rdt_open_client(&srv, "[lock]\nlease_ms = 3000\n");
    RDT_ASSERT_RC(0, init_lock(&ms, "wd-int2", slow, 0, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&ms));
    n = count_renewals("rdlock:{wd-int2}", 1000, &min_pttl);
    printf("[default interval: %d renewals in 1 s] ", n);
    CU_ASSERT(n >= 0 && n <= 2);
    RDT_ASSERT_RC(0, rdlock_unlock(&ms));
    RDT_ASSERT_RC(0, rdlock_destroy(&ms));
    rdt_close_client(slow);
}

/* ------------------------------------------------------------------ */
/* lost leases                                                         */
/* ------------------------------------------------------------------ */

static void test_lost_by_del(void)
{
    rdlock_client_t *c;
    rdlock_t m;
    long long t0, took;
    const unsigned lease = 1500, interval = 500;
    char field[128];

    fresh();
    c = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "wd-del", c, lease, -1, 0, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-del}", field, sizeof field, NULL), 1);
    t0 = rdt_now_ms();
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 0, "DEL %s", "rdlock:{wd-del}"));
    CU_ASSERT_EQUAL(rdt_lost_wait(&lost, 1, 3000), 1);
    took = lost.first_ms - t0;
    printf("[lost callback %lld ms after DEL, interval %u] ", took, interval);
    CU_ASSERT(took >= 0 && took <= (long long)interval + 400);
    CU_ASSERT(took < (long long)lease);
    CU_ASSERT_STRING_EQUAL(lost.name, "wd-del");
    CU_ASSERT_PTR_EQUAL(lost.arg, &lost);
    CU_ASSERT_EQUAL(lost.on_main, 0); /* on the client's background thread */
    /* The stale owner did not recreate anything on the server. */
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{wd-del}"));
    /* Let more watchdog rounds pass: the callback runs exactly once. */
    rdt__nap_ms(2 * interval + 100);
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
    /* The name is usable again. */
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
}

/* DEL the lock and give it to fake_owner for 10 s, atomically. */
static int take_over(const char *key, const char *fake_owner)
{
    static const char script[] =
        "local t = redis.call('TIME') "
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
        "redis.call('DEL', KEYS[1]) "
        "redis.call('HSET', KEYS[1], 'm', 'x', ARGV[1], (now + 10000) .. ';999;1;1;1;elsewhere') "
        "redis.call('PEXPIRE', KEYS[1], 10000) "
        "return 1";
    return rdt_int_on(&srv, 0, "EVAL %s 1 %s %s", script, key, fake_owner) == 1 ? 0 : -1;
}

static void test_lost_by_takeover(void)
{
    static const char fake[] = "0123456789abcdef0123456789abcdef:77";
    rdlock_client_t *c, *cb;
    rdlock_t m1, m2, mb;
    char field[128], mine[128];
    long long t0, took, d;

    fresh();
    c = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);

    /* 1. Watchdog off: the stale unlock reaches the server, which refuses
     * to delete the new owner's hold. */
    RDT_ASSERT_RC(0, init_lock(&m1, "wd-take1", c, 2000, 0, 0, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, init_lock(&mb, "wd-take1", cb, 2000, 0, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m1));
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-take1}", mine, sizeof mine, NULL), 1);
    CU_ASSERT_FATAL(take_over("rdlock:{wd-take1}", fake) == 0);
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m1));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m1));
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-take1}", field, sizeof field, &d), 1);
    CU_ASSERT_STRING_EQUAL(field, fake);
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 0, "HEXISTS %s %s", "rdlock:{wd-take1}", fake));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "HEXISTS %s %s", "rdlock:{wd-take1}", mine));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mb));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m1));
    RDT_ASSERT_RC(0, rdlock_destroy(&m1));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));

    /* 2. Watchdog on: the renewal finds the hold gone, reports it once and
     * never renews or removes the new owner's field. */
    RDT_ASSERT_RC(0, init_lock(&m2, "wd-take2", c, 600, -1, 0, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, init_lock(&mb, "wd-take2", cb, 600, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m2));
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-take2}", mine, sizeof mine, NULL), 1);
    t0 = rdt_now_ms();
    CU_ASSERT_FATAL(take_over("rdlock:{wd-take2}", fake) == 0);
    CU_ASSERT_EQUAL(rdt_lost_wait(&lost, 1, 3000), 1);
    took = lost.first_ms - t0;
    printf("[lost callback %lld ms after take-over] ", took);
    CU_ASSERT(took <= 200 + 400);
    CU_ASSERT_STRING_EQUAL(lost.name, "wd-take2");
    rdt__nap_ms(500); /* more watchdog rounds */
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 0, "HEXISTS %s %s", "rdlock:{wd-take2}", fake));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "HEXISTS %s %s", "rdlock:{wd-take2}", mine));
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m2));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m2));
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{wd-take2}", field, sizeof field, NULL), 1);
    CU_ASSERT_STRING_EQUAL(field, fake);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mb));
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(c);
    rdt_close_client(cb);
}

static void test_max_hold(void)
{
    rdlock_client_t *c, *cb;
    rdlock_t m, mb;
    struct timespec abst;
    long long t0, took;
    int checks = 0;

    fresh();
    c = rdt_open_client(&srv, "[lock]\nlease_ms = 300\n[watchdog]\nmax_hold_ms = 600\n");
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "wd-max", c, 0, -1, 0, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, init_lock(&mb, "wd-max", cb, 300, -1, 0, NULL, NULL));
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    /* Renewed past its 300 ms lease while under max_hold_ms. */
    CU_ASSERT_EQUAL(busy_throughout(&mb, 500, &checks), 0);
    CU_ASSERT_EQUAL(rdt_lost_wait(&lost, 1, 3000), 1);
    took = lost.first_ms - t0;
    printf("[lost callback %lld ms after lock (max_hold 600 + lease 300)] ", took);
    CU_ASSERT(took >= 600);
    CU_ASSERT(took <= 900 + 500);
    CU_ASSERT_STRING_EQUAL(lost.name, "wd-max");
    /* The server's lease ends too: the other client gets it. */
    clock_gettime(CLOCK_REALTIME, &abst);
    abst.tv_sec += 2;
    RDT_ASSERT_RC(0, rdlock_timedlock(&mb, &abst));
    took = rdt_now_ms() - t0;
    CU_ASSERT(took <= 900 + 800);
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(c);
    rdt_close_client(cb);
}

/* ------------------------------------------------------------------ */
/* many holds, recursion, restarts, dropped connections                */
/* ------------------------------------------------------------------ */

#define MANY 2000

static void test_many_holds(void)
{
    rdlock_client_t *c, *cb;
    rdlock_t *m, mb;
    char name[64], key[80], owner[128];
    int i, ok_init = 0, ok_lock = 0, held = 0, bad_try = 0;
    long long t0, lock_ms, calls0, calls1, evals, pttl;
    redisContext *rc;

    fresh();
    c = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    m = calloc(MANY, sizeof *m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (i = 0; i < MANY; i++) {
        snprintf(name, sizeof name, "many-%d", i);
        if (init_lock(&m[i], name, c, 600, -1, 0, rdt_lost_cb, &lost) == 0)
            ok_init++;
    }
    RDT_ASSERT_EQ_LL(MANY, ok_init);
    t0 = rdt_now_ms();
    for (i = 0; i < MANY; i++)
        if (rdlock_lock(&m[i]) == 0)
            ok_lock++;
    lock_ms = rdt_now_ms() - t0;
    RDT_ASSERT_EQ_LL(MANY, ok_lock);
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{many-0}", owner, sizeof owner, NULL), 1);

    calls0 = cmd_calls("evalsha") + cmd_calls("eval");
    rdt__nap_ms(2000); /* 2 s = 3.3 leases, 10 renewal intervals */
    calls1 = cmd_calls("evalsha") + cmd_calls("eval");
    evals = calls1 - calls0;
    printf("[%d locks taken in %lld ms; %lld script calls in 2 s of holding] ", MANY, lock_ms, evals);
    /* Renewed (some calls) and batched: one call per lock per interval
     * would be 20000. */
    CU_ASSERT(evals >= 5);
    CU_ASSERT(evals < 1000);

    /* Every hold still has this owner's field on the server. */
    rc = rdt_connect(&srv);
    CU_ASSERT_PTR_NOT_NULL(rc);
    if (rc) {
        for (i = 0; i < MANY; i++) {
            snprintf(key, sizeof key, "rdlock:{many-%d}", i);
            redisAppendCommand(rc, "HEXISTS %s %s", key, owner);
        }
        for (i = 0; i < MANY; i++) {
            void *rp = NULL;
            if (redisGetReply(rc, &rp) != REDIS_OK || rp == NULL)
                break;
            if (((redisReply *)rp)->type == REDIS_REPLY_INTEGER && ((redisReply *)rp)->integer == 1)
                held++;
            freeReplyObject(rp);
        }
        redisFree(rc);
    }
    RDT_ASSERT_EQ_LL(MANY, held);
    pttl = rdt_int_on(&srv, 0, "PTTL %s", "rdlock:{many-0}");
    CU_ASSERT(pttl > 0 && pttl <= 600);

    /* Another client finds a sample of them busy. */
    for (i = 0; i < MANY; i += 97) {
        snprintf(name, sizeof name, "many-%d", i);
        RDT_ASSERT_RC(0, init_lock(&mb, name, cb, 600, -1, 0, NULL, NULL));
        if (rdlock_trylock(&mb) != EBUSY)
            bad_try++;
        rdlock_destroy(&mb);
    }
    RDT_ASSERT_EQ_LL(0, bad_try);
    RDT_ASSERT_EQ_LL(0, rdt_lost_count(&lost));

    ok_lock = 0;
    for (i = 0; i < MANY; i++)
        if (rdlock_unlock(&m[i]) == 0)
            ok_lock++;
    RDT_ASSERT_EQ_LL(MANY, ok_lock);
    for (i = 0; i < MANY; i++)
        rdlock_destroy(&m[i]);
    free(m);
    rdt_close_client(c);
    rdt_close_client(cb);
}

/* The server forgets its scripts (SCRIPT FLUSH) while a client holds more
 * holds than one renewal round keeps in flight at once (src/core/watchdog.c:
 * RDL_RENEW_WINDOW calls of RDL_RENEW_BATCH holds): every renew call of
 * the next round meets NOSCRIPT, is answered before anything is resent,
 * and is sent again after a SCRIPT LOAD.  No hold may be lost. */
#define FLUSH_HOLDS 5000 /* 10 calls of 500, the window is 8 */
static void test_script_flush_many_chunks(void)
{
    rdlock_client_t *c;
    rdlock_t *m;
    char name[64], key[80], owner[128];
    int i, ok_init = 0, ok_lock = 0, held = 0;
    long long calls0, t0;
    redisContext *rc;

    fresh();
    c = rdt_open_client(&srv, NULL);
    m = calloc(FLUSH_HOLDS, sizeof *m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (i = 0; i < FLUSH_HOLDS; i++) {
        snprintf(name, sizeof name, "flush-%d", i);
        if (init_lock(&m[i], name, c, 1500, -1, 0, rdt_lost_cb, &lost) == 0)
            ok_init++;
    }
    RDT_ASSERT_EQ_LL(FLUSH_HOLDS, ok_init);
    for (i = 0; i < FLUSH_HOLDS; i++)
        if (rdlock_lock(&m[i]) == 0)
            ok_lock++;
    RDT_ASSERT_EQ_LL(FLUSH_HOLDS, ok_lock);
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{flush-0}", owner, sizeof owner, NULL), 1);

    /* A first round (interval: lease/3 = 500 ms) loads the script on the
     * watchdog's fresh connection; then the server forgets it. */
    calls0 = cmd_calls("evalsha");
    t0 = rdt_now_ms();
    while (cmd_calls("evalsha") - calls0 < FLUSH_HOLDS / 500 && rdt_now_ms() - t0 < 5000)
        rdt__nap_ms(10); /* polling the server's state */
    CU_ASSERT(cmd_calls("evalsha") - calls0 >= FLUSH_HOLDS / 500);
    {
        redisReply *r = rdt_cmd_on(&srv, "SCRIPT FLUSH");
        CU_ASSERT_PTR_NOT_NULL(r);
        if (r)
            freeReplyObject(r);
    }
    rdt__nap_ms(2500); /* let wall time pass: more than a lease */

    rc = rdt_connect(&srv);
    CU_ASSERT_PTR_NOT_NULL(rc);
    if (rc) {
        for (i = 0; i < FLUSH_HOLDS; i++) {
            snprintf(key, sizeof key, "rdlock:{flush-%d}", i);
            redisAppendCommand(rc, "HEXISTS %s %s", key, owner);
        }
        for (i = 0; i < FLUSH_HOLDS; i++) {
            void *rp = NULL;
            if (redisGetReply(rc, &rp) != REDIS_OK || rp == NULL)
                break;
            if (((redisReply *)rp)->type == REDIS_REPLY_INTEGER && ((redisReply *)rp)->integer == 1)
                held++;
            freeReplyObject(rp);
        }
        redisFree(rc);
    }
    RDT_ASSERT_EQ_LL(FLUSH_HOLDS, held);
    RDT_ASSERT_EQ_LL(0, rdt_lost_count(&lost));
    ok_lock = 0;
    for (i = 0; i < FLUSH_HOLDS; i++)
        if (rdlock_unlock(&m[i]) == 0)
            ok_lock++;
    RDT_ASSERT_EQ_LL(FLUSH_HOLDS, ok_lock);
    for (i = 0; i < FLUSH_HOLDS; i++)
        rdlock_destroy(&m[i]);
    free(m);
    rdt_close_client(c);
}

static void test_recursive_kept_alive(void)
{
    rdlock_client_t *c, *cb;
    rdlock_t m, mb;
    unsigned count = 0;
    int checks = 0;

    fresh();
    c = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "wd-rec", c, 300, -1, RDLOCK_RECURSIVE, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, init_lock(&mb, "wd-rec", cb, 300, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &count));
    RDT_ASSERT_EQ_LL(3, count);
    CU_ASSERT_EQUAL(busy_throughout(&mb, 1000, &checks), 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &count));
    RDT_ASSERT_EQ_LL(1, count);
    /* Still held (and renewed) at depth 1. */
    CU_ASSERT_EQUAL(busy_throughout(&mb, 500, &checks), 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_trylock(&mb));
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    RDT_ASSERT_EQ_LL(0, rdt_lost_count(&lost));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(c);
    rdt_close_client(cb);
}

/* Without persistence a restart loses every hold: the watchdog finds out,
 * the callback runs once and unlock is ENOLCK. */
static void test_restart_loses_hold(void)
{
    rdlock_client_t *c;
    rdlock_t m, m2;
    long long t0;

    fresh();
    c = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "wd-restart", c, 600, -1, 0, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, init_lock(&m2, "wd-restart-after", c, 600, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    rdt_server_kill(&srv);
    CU_ASSERT_FATAL(rdt_server_restart(&srv) == 0);
    t0 = rdt_now_ms();
    CU_ASSERT_EQUAL(rdt_lost_wait(&lost, 1, 4000), 1);
    printf("[lost callback %lld ms after the restart] ", lost.first_ms - t0);
    CU_ASSERT_STRING_EQUAL(lost.name, "wd-restart");
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{wd-restart}"));
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    /* The client works with the restarted server. */
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&m2));
    RDT_ASSERT_RC(0, rdlock_unlock(&m2));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lost));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
    rdt_close_client(c);
}

/* Number of normal client connections on the server besides the caller's
 * own (CLIENT LIST TYPE normal on a fresh connection), -1 on error. */
static int other_connections(void)
{
    redisReply *r = rdt_cmd_on(&srv, "CLIENT LIST TYPE normal");
    const char *p;
    int n = 0;

    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (p = r->str; (p = strstr(p, "id=")) != NULL; p += 3)
        n++;
    freeReplyObject(r);
    return n - 1;
}

static void test_dropped_connection(void)
{
    rdlock_client_t *c, *cb;
    rdlock_t m, mb;
    long long t0, t1, killed, total = 0;
    int kills = 0, checks = 0;

    fresh();
    c = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "wd-drop", c, 400, -1, 0, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, init_lock(&mb, "wd-drop", cb, 400, -1, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    t0 = rdt_now_ms();
    /* Kill every normal connection (the library's included) again and
     * again for more than 2 leases: each time, wait (bounded) until the
     * watchdog has connected again, then kill. */
    while (rdt_now_ms() - t0 < 1000 || kills < 4) {
        t1 = rdt_now_ms();
        while (other_connections() < 1 && rdt_now_ms() - t1 < 2000)
            rdt__nap_ms(5); /* polling the server's state */
        killed = rdt_int_on(&srv, 0, "CLIENT KILL TYPE normal");
        CU_ASSERT(killed >= 1);
        if (killed < 1)
            break;
        total += killed;
        kills++;
        rdt__nap_ms(50); /* let wall time pass */
    }
    printf("[%lld connections killed in %d rounds over %lld ms] ", total, kills, rdt_now_ms() - t0);
    CU_ASSERT(rdt_now_ms() - t0 > 2 * 400);
    CU_ASSERT_EQUAL(busy_throughout(&mb, 300, &checks), 0);
    RDT_ASSERT_EQ_LL(0, rdt_lost_count(&lost));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{wd-drop}"));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_trylock(&mb));
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(c);
    rdt_close_client(cb);
}

static const rdt_test_t tests[] = {
    { "off_by_attr", test_off_by_attr },
    { "off_by_ini", test_off_by_ini },
    { "keeps_hold", test_keeps_hold },
    { "attr_on_overrides_ini", test_attr_on_overrides_ini },
    { "interval_ms", test_interval_ms },
    { "lost_by_del", test_lost_by_del },
    { "lost_by_takeover", test_lost_by_takeover },
    { "max_hold", test_max_hold },
    { "many_holds", test_many_holds },
    { "script_flush_many_chunks", test_script_flush_many_chunks },
    { "recursive_kept_alive", test_recursive_kept_alive },
    { "restart_loses_hold", test_restart_loses_hold },
    { "dropped_connection", test_dropped_connection },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "watchdog", tests, setup, teardown, 85);
}
