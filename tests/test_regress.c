/* test_regress.c - regression tests for defects found in review (the
 * commit "Fix defects found in review: resurrected holds, a stalled queue
 * head, lost EOWNERDEAD"), against a private redis-server.
 *
 *   leftover_field_not_resurrected  a live field of the caller's owner id
 *       that is a leftover of an earlier hold (not this very call) is never
 *       handed back: not in another mode, not with its old token.
 *   head_not_starved_after_expiry   the head of the writers' queue looks
 *       again itself when a lease runs out unreleased, instead of deferring
 *       to other local threads' polls (which stalled it for up to the
 *       waiters' lease).
 *   robust_eownerdead_survives_lost_reply  a robust acquire whose grant's
 *       reply is lost still returns EOWNERDEAD on the retry.
 *   release_retry_after_lost_reply  an unlock whose reply is lost returns 0,
 *       not ENOLCK, and the lock is free.
 *   lost_callback_may_exit  a lost callback that calls exit() ends the
 *       process with its status (the default client's atexit handler used
 *       to join the background thread from itself: abort).
 *   handover_found_by_look_restarts_lease  a hand-over whose pub/sub
 *       message was lost, found by the waiter's next look, gets a lease
 *       that runs from that look (pre-fix: from the hand-over, up to a look
 *       interval earlier than the client believed: with a round trip of a
 *       third of the lease the hold expired before its first renewal,
 *       torture `slow`, D6 in docs/RELIABILITY.md).
 *   queue_place_kept_while_another_looks  a queued writer that leaves the
 *       re-check to another local thread still keeps its place in the
 *       writers' queue (pre-fix: its mark went silent, the server dropped
 *       it as crashed and served a later waiter of another client first).
 *
 * Every test uses explicit clients (rdlock_client_open on an ini written by
 * rdt_write_ini), except the last, which needs the process default client
 * (its atexit handler is what used to abort), opened in a forked child from
 * $RDLOCK_CONF.  Every test FLUSHALLs first.  Forked actors are driven over
 * pipes with deadlines.
 *
 * A lost reply is made by stopping the server (SIGSTOP, rdt_server_pause)
 * for LOSS_MS while the call goes out on a client whose command_timeout_ms
 * is TIMEOUT_MS < LOSS_MS: the first attempt is received but not answered
 * in time, the client gives up on that connection and retries on a new
 * one; when the server continues, it runs the first attempt, then the
 * retry, which finds the first attempt's effect.  (This is what the
 * reviewer did with DEBUG SLEEP from another connection; SIGSTOP works the
 * same and needs no enable-debug-command on Redis 7.)  The only sleeps let
 * wall time pass: the server's stop, and leases running out. */
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

#define TIMEOUT_MS 200        /* command_timeout_ms of g_ini_lossy */
#define LOSS_MS 500           /* how long the server stops: > TIMEOUT_MS */
#define HOLDER_LEASE_MS 1000  /* head_not_starved: the holder that never unlocks */
#define WAITER_LEASE_MS 10000 /* head_not_starved: the head of the queue (its queue mark) */
#define POLLER_LEASE_MS 60    /* head_not_starved: the others, who re-check every 20 ms */
#define STALL_RETRY_MS 200    /* head_not_starved: retry_interval_ms of the waiters' client */
#define NWAITERS 6
#define SHORT_LEASE_MS 300
#define LOOK_MS 1000 /* handover_*: retry_interval_ms, the waiters' look interval */
#define REPLY_MS 10000 /* an actor's answer to a call that should not block */

static rdt_server_t g_srv;
static redisContext *g_rc;    /* plain connection for checking state (main thread only) */
static rdlock_client_t *g_ca; /* two clients: two owners */
static rdlock_client_t *g_cb;
static rdlock_client_t *g_cl; /* command_timeout_ms = TIMEOUT_MS: replies get lost */
static char g_ini[512];       /* defaults */
static char g_ini_lossy[512];
static char g_ini_stall[512]; /* retry_interval_ms = STALL_RETRY_MS, no jitter */
static char g_ini_slowlook[512]; /* retry_interval_ms = LOOK_MS, no jitter */

/* ------------------------------------------------------------------ */
/* Redis state helpers                                                 */
/* ------------------------------------------------------------------ */

static int hexists(const char *key, const char *field)
{
    return (int)rdt_int_cmd(g_rc, -1, "HEXISTS %s %s", key, field);
}

/* The holder field (owner id) of lock hash key that is not 'm' and not
 * except (may be NULL): 1 found (copied to buf), 0 none, -1 error or more
 * than one. */
static int holder_field(const char *key, const char *except, char *buf, size_t n)
{
    int found = rdt_holders(g_rc, key, except, 0, NULL, buf, n, NULL);
    if (found > 1) {
        fprintf(stderr, "%s: %d holder fields besides '%s'\n", key, found, except ? except : "");
        return -1;
    }
    return found;
}

/* The token in a holder value "<deadline>;<token>;...", 0 if unparsable. */
static uint64_t token_of_value(const char *v)
{
    unsigned long long d = 0, t = 0;
    if (sscanf(v, "%llu;%llu;", &d, &t) != 2)
        return 0;
    return (uint64_t)t;
}

/* Recreate a leftover of an earlier hold: field owner of key with a far
 * future deadline, the old token and call number 0 (no real call uses it).
 * mode: NULL keeps the 'm' field as it is. */
static int plant_leftover(const char *key, const char *mode, const char *owner, uint64_t old_token)
{
    char v[256];
    long long now = rdt_server_ms(g_rc);
    redisReply *r;
    int ok;

    if (now < 0)
        return -1;
    snprintf(v, sizeof v, "%lld;%" PRIu64 ";1;1;1;0;host", now + 600000, old_token);
    if (mode)
        r = (redisReply *)redisCommand(g_rc, "HSET %s m %s %s %s", key, mode, owner, v);
    else
        r = (redisReply *)redisCommand(g_rc, "HSET %s %s %s", key, owner, v);
    ok = r && r->type == REDIS_REPLY_INTEGER;
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* lock helpers                                                        */
/* ------------------------------------------------------------------ */

/* lease 0 = from config; watchdog < 0 = from config. */
static int mx_init(rdlock_t *m, const char *name, rdlock_client_t *c, int robust, unsigned lease, int watchdog)
{
    rdt_lockopts_t o = { .client = c, .robust = robust, .lease = lease, .watchdog = watchdog };
    return rdt_mutex_init(m, name, &o);
}

/* ------------------------------------------------------------------ */
/* a lost reply: the server stops for LOSS_MS                          */
/* ------------------------------------------------------------------ */

static void *resume_later(void *arg)
{
    (void)arg;
    rdt__nap_ms(LOSS_MS); /* wall time for the client's command timeout to pass */
    rdt_server_resume(&g_srv);
    return NULL;
}

/* Stop the server now and have a thread let it continue after LOSS_MS.
 * 0, or -1 (the server runs). */
static int loss_begin(pthread_t *th)
{
    rdt_server_pause(&g_srv);
    if (pthread_create(th, NULL, resume_later, NULL) != 0) {
        rdt_server_resume(&g_srv);
        return -1;
    }
    return 0;
}

static void loss_end(pthread_t th)
{
    pthread_join(th, NULL);
}

/* ------------------------------------------------------------------ */
/* setup                                                               */
/* ------------------------------------------------------------------ */

static int suite_setup(void)
{
    char extra[128];
    if (rdt_suite_start(&g_srv, &g_rc) != 0 || rdt_ini_copy(&g_srv, 0, NULL, g_ini, sizeof g_ini) != 0)
        return -1;
    /* appended to the [redis] section */
    snprintf(extra, sizeof extra, "command_timeout_ms = %d\ncommand_retries = 3\n", TIMEOUT_MS);
    if (rdt_ini_copy(&g_srv, 0, extra, g_ini_lossy, sizeof g_ini_lossy) != 0)
        return -1;
    snprintf(extra, sizeof extra, "[lock]\nretry_interval_ms = %d\nretry_jitter_ms = 0\n", STALL_RETRY_MS);
    if (rdt_ini_copy(&g_srv, 0, extra, g_ini_stall, sizeof g_ini_stall) != 0)
        return -1;
    snprintf(extra, sizeof extra, "[lock]\nretry_interval_ms = %d\nretry_jitter_ms = 0\n", LOOK_MS);
    if (rdt_ini_copy(&g_srv, 0, extra, g_ini_slowlook, sizeof g_ini_slowlook) != 0)
        return -1;
    if (rdlock_client_open(&g_ca, g_ini) != 0 || rdlock_client_open(&g_cb, g_ini) != 0 ||
        rdlock_client_open(&g_cl, g_ini_lossy) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open failed\n");
        return -1;
    }
    return rdt_flushall(&g_srv);
}

static int suite_teardown(void)
{
    int rc = rdt_close_clients(&g_ca, &g_cb, &g_cl, NULL);
    rdt_suite_stop(&g_srv, &g_rc);
    return rc;
}

static void fresh(void)
{
    CU_ASSERT_EQUAL_FATAL(rdt_flushall(&g_srv), 0);
}

/* ------------------------------------------------------------------ */
/* 1. leftover fields                                                  */
/* ------------------------------------------------------------------ */

/* A live field of A's owner id that A did not take in this call (a hold it
 * was told it lost, still on the server) must not be handed back: with B
 * holding a share, A's trywrlock is EBUSY (pre-fix: 0, with the leftover's
 * old token), A's tryrdlock takes a fresh share with a new token, and A's
 * unlock leaves B's share alone.  The mutex variant: a leftover exclusive
 * field, nobody else: trylock gets a new token. */
static void test_leftover_field_not_resurrected(void)
{
    const char *N = "leftover", *NM = "leftover-mx";
    const char *K = rdt_key(N, ""), *KM = rdt_key(NM, "");
    char kbuf[700], kmbuf[700];
    char fb[256], fa[256], v[256], m[8];
    rdrwlock_t ra, rb;
    rdlock_t mx;
    uint64_t told, tnew;
    int rc;

    snprintf(kbuf, sizeof kbuf, "%s", K);
    snprintf(kmbuf, sizeof kmbuf, "%s", KM);
    K = kbuf;
    KM = kmbuf;
    fresh();
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, N, g_ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, N, g_cb));

    /* B holds a share throughout */
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    CU_ASSERT_EQUAL_FATAL(holder_field(K, NULL, fb, sizeof fb), 1);
    /* A takes a share and gives it back: its owner id and its token */
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&ra));
    told = rdt_rwlock_token(&ra);
    CU_ASSERT_FATAL(told > 0);
    CU_ASSERT_EQUAL_FATAL(holder_field(K, fb, fa, sizeof fa), 1);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    CU_ASSERT_EQUAL(hexists(K, fa), 0);

    /* the leftover of A's share, while B holds its own: trywrlock */
    CU_ASSERT_EQUAL_FATAL(plant_leftover(K, NULL, fa, told), 0);
    rc = rdrwlock_trywrlock(&ra);
    RDT_ASSERT_RC(EBUSY, rc); /* B holds a share */
    if (rc == 0) {
        fprintf(stderr, "trywrlock granted with token %" PRIu64 " (the leftover's: %" PRIu64 ")\n",
                rdt_rwlock_token(&ra), told);
        rdrwlock_unlock(&ra);
    }

    /* again, tryrdlock: a fresh share, not the leftover's */
    CU_ASSERT_EQUAL_FATAL(plant_leftover(K, NULL, fa, told), 0);
    rc = rdrwlock_tryrdlock(&ra);
    RDT_ASSERT_RC(0, rc);
    if (rc == 0) {
        tnew = rdt_rwlock_token(&ra);
        if (!(tnew > told))
            fprintf(stderr, "tryrdlock: token %" PRIu64 ", the leftover's %" PRIu64 "\n", tnew, told);
        CU_ASSERT(tnew > told);
        CU_ASSERT_EQUAL(rdt_hget(g_rc, K, fa, v, sizeof v), 1);
        CU_ASSERT_EQUAL(token_of_value(v), tnew);
        RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    }
    /* the leftover is gone, B's share is intact */
    CU_ASSERT_EQUAL(hexists(K, fa), 0);
    CU_ASSERT_EQUAL(hexists(K, fb), 1);
    CU_ASSERT_EQUAL(rdt_hget(g_rc, K, "m", m, sizeof m), 1);
    CU_ASSERT_STRING_EQUAL(m, "s");
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb)); /* not ENOLCK */
    CU_ASSERT_EQUAL(rdt_exists(g_rc, K), 0);

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));

    /* mutex: a leftover exclusive hold of A, nobody else */
    RDT_ASSERT_RC(0, mx_init(&mx, NM, g_ca, RDLOCK_STALLED, 0, -1));
    RDT_ASSERT_RC(0, rdlock_trylock(&mx));
    told = rdt_mutex_token(&mx);
    CU_ASSERT_FATAL(told > 0);
    CU_ASSERT_EQUAL_FATAL(holder_field(KM, NULL, fa, sizeof fa), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&mx));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, KM), 0);
    CU_ASSERT_EQUAL_FATAL(plant_leftover(KM, "x", fa, told), 0);
    rc = rdlock_trylock(&mx);
    RDT_ASSERT_RC(0, rc);
    if (rc == 0) {
        tnew = rdt_mutex_token(&mx);
        if (!(tnew > told))
            fprintf(stderr, "trylock: token %" PRIu64 ", the leftover's %" PRIu64 "\n", tnew, told);
        CU_ASSERT(tnew > told);
        CU_ASSERT_EQUAL(rdt_hget(g_rc, KM, fa, v, sizeof v), 1);
        CU_ASSERT_EQUAL(token_of_value(v), tnew);
        RDT_ASSERT_RC(0, rdlock_unlock(&mx));
    }
    CU_ASSERT_EQUAL(rdt_exists(g_rc, KM), 0);
    RDT_ASSERT_RC(0, rdlock_destroy(&mx));
}

/* ------------------------------------------------------------------ */
/* 2. the head of the queue after a lease ran out                      */
/* ------------------------------------------------------------------ */

/* A forked process with two clients: a holder (lease HOLDER_LEASE_MS,
 * watchdog off) takes the lock and never unlocks.  NWAITERS threads of the
 * other client (g_ini_stall: retry_interval_ms = STALL_RETRY_MS, no
 * jitter) block in rdlock_lock, each on its own rdlock_t, and unlock at
 * once when they get it.  Thread 0 queues first, so it heads the writers'
 * queue, with lease WAITER_LEASE_MS: it re-checks every STALL_RETRY_MS.
 * The others queue behind it with lease POLLER_LEASE_MS, so they re-check
 * every POLLER_LEASE_MS / 3 (a waiter re-checks at least every third of
 * its lease): there is always a poll by another local thread less than
 * STALL_RETRY_MS ago.  Pre-fix, the head deferred its own re-check to
 * those polls, which can never take the lock for it (only the head may
 * take a free lock), so nobody took the lock until the head's queue mark
 * ran out, WAITER_LEASE_MS after its last look.  (With equal leases the
 * same stall happens at random: the head polls only when its timer
 * happens to fire first.)
 * Lines to the parent: "held <rc>", then "got <i> <rc> <ms since the
 * holder's acquire> <order of acquisition>" per waiter. */
typedef struct stall {
    rdt_pipe_t p;
    char name[64];
    rdlock_client_t *wc;
    long long t0;
    int order; /* counts acquisitions, taken while holding the lock */
} stall_t;

typedef struct stall_thread {
    stall_t *s;
    int i;
    unsigned lease;
    pthread_t th;
} stall_thread_t;

static void *stall_waiter(void *arg)
{
    stall_thread_t *t = arg;
    rdlock_t m;
    char out[96];
    long long at;
    int order = -1;
    int rc = mx_init(&m, t->s->name, t->s->wc, RDLOCK_STALLED, t->lease, -1);

    if (rc == 0) {
        rc = rdlock_lock(&m);
        at = rdt_now_ms() - t->s->t0;
        if (rc == 0) {
            order = __atomic_fetch_add(&t->s->order, 1, __ATOMIC_SEQ_CST);
            rdlock_unlock(&m);
        }
        rdlock_destroy(&m);
    } else {
        at = rdt_now_ms() - t->s->t0;
    }
    snprintf(out, sizeof out, "got %d %d %lld %d", t->i, rc, at, order);
    rdt_send(t->s->p.to_parent[1], out); /* one write(2) of a short line: atomic */
    return NULL;
}

/* In the child: poll (bounded) until the head has queued and the server's
 * clock has passed its arrival, so that everyone else queues behind it
 * (the queue is ordered by arrival in server ms). */
static int stall_head_queued(redisContext *rc, const char *wkey)
{
    long long deadline = rdt_now_ms() + 5000;
    for (;;) {
        redisReply *r = (redisReply *)redisCommand(rc, "ZRANGE %s 0 0 WITHSCORES", wkey);
        long long now = rdt_server_ms(rc);
        int ok = 0;
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && now >= 0)
            ok = now > strtoll(r->element[1]->str, NULL, 10);
        if (r)
            freeReplyObject(r);
        if (ok)
            return 0;
        if (rdt_now_ms() >= deadline)
            return -1;
        rdt__nap_ms(1);
    }
}

static int stall_main(void *arg)
{
    stall_t *s = arg;
    stall_thread_t th[NWAITERS];
    rdlock_client_t *hc = NULL;
    redisContext *rc_plain;
    rdlock_t hm;
    char out[64], wkey[128];
    int rc, i;

    rdt_child_begin(&s->p);
    snprintf(wkey, sizeof wkey, "rdlock:{%s}:w", s->name);
    rc_plain = rdt_connect(&g_srv);
    rc = rc_plain ? 0 : EIO;
    if (rc == 0)
        rc = rdlock_client_open(&hc, g_ini);
    if (rc == 0)
        rc = rdlock_client_open(&s->wc, g_ini_stall);
    if (rc == 0)
        rc = mx_init(&hm, s->name, hc, RDLOCK_STALLED, HOLDER_LEASE_MS, 0);
    if (rc == 0) {
        s->t0 = rdt_now_ms();
        rc = rdlock_lock(&hm); /* never unlocked: its lease runs out */
    }
    snprintf(out, sizeof out, "held %d", rc);
    if (rdt_send(s->p.to_parent[1], out) != 0 || rc != 0)
        return 1;
    for (i = 0; i < NWAITERS; i++) {
        th[i].s = s;
        th[i].i = i;
        th[i].lease = i == 0 ? WAITER_LEASE_MS : POLLER_LEASE_MS;
        if (pthread_create(&th[i].th, NULL, stall_waiter, &th[i]) != 0)
            return 2;
        if (i == 0 && stall_head_queued(rc_plain, wkey) != 0)
            return 3;
    }
    for (i = 0; i < NWAITERS; i++)
        pthread_join(th[i].th, NULL);
    return 0; /* _exit: the holder's hold is simply abandoned */
}

static void test_head_not_starved_after_expiry(void)
{
    stall_t s;
    pid_t pid;
    char line[96];
    long long first = -1, last = -1, t_held;
    int got = 0, ok = 0, first_idx = -1, i, st;

    fresh();
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "stall");
    CU_ASSERT_FATAL(rdt_pipe_open(&s.p) == 0);
    pid = rdt_fork(stall_main, &s);
    CU_ASSERT_FATAL(pid > 0);
    rdt_pipe_parent(&s.p);

    if (rdt_recv(s.p.to_parent[0], line, sizeof line, 10000) < 0 || strcmp(line, "held 0") != 0) {
        fprintf(stderr, "stall: holder did not take the lock: \"%s\"\n", line);
        CU_FAIL("holder did not take the lock");
        rdt_pipe_close(&s.p);
        rdt_wait(pid, 0);
        return;
    }
    t_held = rdt_now_ms();
    /* Every waiter must have it well before its own (10 s) lease could
     * matter: the first right after the holder's lease, the rest by
     * hand-over.  Bounded: after the deadline the child is killed. */
    for (i = 0; i < NWAITERS; i++) {
        long long left = t_held + HOLDER_LEASE_MS + 3000 - rdt_now_ms();
        int idx, rc, order;
        long long at;
        if (left < 0)
            left = 0;
        if (rdt_recv(s.p.to_parent[0], line, sizeof line, (int)left) < 0) {
            fprintf(stderr, "stall: only %d of %d waiters got the lock within %d ms of the holder's acquire\n",
                    got, NWAITERS, HOLDER_LEASE_MS + 3000);
            break;
        }
        if (sscanf(line, "got %d %d %lld %d", &idx, &rc, &at, &order) != 4) {
            fprintf(stderr, "stall: bad line \"%s\"\n", line);
            break;
        }
        got++;
        if (rc == 0)
            ok++;
        else
            fprintf(stderr, "stall: waiter %d: rdlock_lock = %d\n", idx, rc);
        if (order == 0) {
            first = at;
            first_idx = idx;
        }
        if (at > last)
            last = at;
    }
    fprintf(stderr, "stall: %d/%d waiters, first (waiter %d) at +%lld ms, last at +%lld ms (holder lease %d ms)\n",
            ok, NWAITERS, first_idx, first, last, HOLDER_LEASE_MS);
    CU_ASSERT_EQUAL(got, NWAITERS);
    CU_ASSERT_EQUAL(ok, NWAITERS);
    CU_ASSERT(first >= 0 && first <= HOLDER_LEASE_MS + 500);
    CU_ASSERT_EQUAL(first_idx, 0); /* the head of the queue */
    CU_ASSERT(last >= 0 && last <= HOLDER_LEASE_MS + 2500); /* far below WAITER_LEASE_MS */
    rdt_pipe_close(&s.p);
    st = rdt_wait(pid, got == NWAITERS ? 5000 : 0);
    if (got == NWAITERS)
        CU_ASSERT_EQUAL(st, 0);
}

/* ------------------------------------------------------------------ */
/* 3. EOWNERDEAD after a lost reply                                    */
/* ------------------------------------------------------------------ */

/* A hold ends without unlock (lease ran out, watchdog off); a robust
 * rdlock_lock on the lossy client is granted by its first attempt, whose
 * reply is lost; the retry finds the grant and must still say EOWNERDEAD
 * (pre-fix: 0).  Unlock without rdlock_consistent makes the name not
 * recoverable (pre-fix: the marker was cleared). */
static void test_robust_eownerdead_survives_lost_reply(void)
{
    const char *N = "od-lost";
    char kx[700], k[700], xb[256], holder_owner[256];
    rdlock_t hm, rm, other;
    pthread_t th;
    uint64_t dead, tok;
    long long t0, el;
    int rc;

    snprintf(k, sizeof k, "%s", rdt_key(N, ""));
    snprintf(kx, sizeof kx, "%s", rdt_key(N, ":x"));
    fresh();
    RDT_ASSERT_RC(0, mx_init(&hm, N, g_cb, RDLOCK_STALLED, SHORT_LEASE_MS, 0));
    RDT_ASSERT_RC(0, mx_init(&rm, N, g_cl, RDLOCK_ROBUST, 0, -1));
    RDT_ASSERT_RC(0, mx_init(&other, N, g_ca, RDLOCK_ROBUST, 0, -1));

    /* the owner that never unlocks: its marker stays, its key expires.
     * (Its acquire also caches the acquire script on the server, so the
     * lost first attempt below is an EVALSHA that runs, not NOSCRIPT.) */
    RDT_ASSERT_RC(0, rdlock_trylock(&hm));
    dead = rdt_mutex_token(&hm);
    CU_ASSERT_EQUAL_FATAL(holder_field(k, NULL, holder_owner, sizeof holder_owner), 1);
    CU_ASSERT_FATAL(rdt_wait_gone(g_rc, k, 3000));
    CU_ASSERT_EQUAL(rdt_get_str(g_rc, kx, xb, sizeof xb), 1);
    CU_ASSERT_STRING_EQUAL(xb, holder_owner);

    /* the robust acquire; the reply of its first attempt is lost */
    CU_ASSERT_FATAL(loss_begin(&th) == 0);
    t0 = rdt_now_ms();
    rc = rdlock_lock(&rm);
    el = rdt_now_ms() - t0;
    loss_end(th);
    RDT_ASSERT_RC(EOWNERDEAD, rc);
    if (el < TIMEOUT_MS)
        fprintf(stderr, "robust lock took %lld ms: no reply was lost?\n", el);
    CU_ASSERT(el >= TIMEOUT_MS);
    CU_ASSERT_FATAL(rc == 0 || rc == EOWNERDEAD);
    tok = rdt_mutex_token(&rm);
    CU_ASSERT(tok > dead);
    CU_ASSERT_EQUAL(rdt_get_str(g_rc, kx, xb, sizeof xb), 1);
    CU_ASSERT(xb[0] == '?');
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));

    /* unlock without consistent: not recoverable */
    RDT_ASSERT_RC(0, rdlock_unlock(&rm));
    CU_ASSERT_EQUAL(rdt_get_str(g_rc, kx, xb, sizeof xb), 1);
    CU_ASSERT_STRING_EQUAL(xb, "!");
    RDT_ASSERT_RC(ENOTRECOVERABLE, rdlock_trylock(&other));

    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&hm)); /* its lease ran out long ago */
    RDT_ASSERT_RC(0, rdlock_reset_name(g_ca, N));
    RDT_ASSERT_RC(0, rdlock_destroy(&hm));
    RDT_ASSERT_RC(0, rdlock_destroy(&rm));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* ------------------------------------------------------------------ */
/* 4. a release whose reply is lost                                    */
/* ------------------------------------------------------------------ */

/* The first release attempt runs on the server but its reply is lost; the
 * retry finds the hold gone.  That is a release, not a lost lease: 0
 * (pre-fix: ENOLCK), and the lock is free. */
static void test_release_retry_after_lost_reply(void)
{
    const char *N = "rel-lost";
    char k[700];
    rdlock_t m, other;
    pthread_t th;
    long long t0, el;
    int rc;

    snprintf(k, sizeof k, "%s", rdt_key(N, ""));
    fresh();
    RDT_ASSERT_RC(0, mx_init(&m, N, g_cl, RDLOCK_STALLED, 0, -1));
    RDT_ASSERT_RC(0, mx_init(&other, N, g_ca, RDLOCK_STALLED, 0, -1));
    /* A release first, so that the server has the release script cached:
     * else the lost first attempt is an EVALSHA that fails with NOSCRIPT
     * (it releases nothing) and only the retry's EVAL releases. */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, k), 1);

    CU_ASSERT_FATAL(loss_begin(&th) == 0);
    t0 = rdt_now_ms();
    rc = rdlock_unlock(&m);
    el = rdt_now_ms() - t0;
    loss_end(th);
    RDT_ASSERT_RC(0, rc);
    if (el < TIMEOUT_MS)
        fprintf(stderr, "unlock took %lld ms: no reply was lost?\n", el);
    CU_ASSERT(el >= TIMEOUT_MS);

    /* free */
    CU_ASSERT_EQUAL(rdt_exists(g_rc, k), 0);
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    /* and the handle is usable again */
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, k), 0);

    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* ------------------------------------------------------------------ */
/* 5. a lost callback that exits                                       */
/* ------------------------------------------------------------------ */

#define CB_EXIT_STATUS 3

static void exit_on_lost(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    exit(CB_EXIT_STATUS); /* runs atexit handlers, among them the default client's */
}

typedef struct cbexit {
    rdt_pipe_t p;
    char name[64];
} cbexit_t;

/* The child: the process default client (from $RDLOCK_CONF), lease
 * SHORT_LEASE_MS, the exiting callback; "locked <rc>", then it waits for
 * the callback.  Exit status 4: the callback never ran. */
static int cbexit_main(void *arg)
{
    cbexit_t *x = arg;
    rdlock_attr_t a;
    rdlock_t m;
    char out[64], line[64];
    int rc;

    rdt_child_begin(&x->p);
    if (setenv("RDLOCK_CONF", g_ini, 1) != 0)
        return 1;
    rc = rdlock_attr_init(&a);
    if (rc == 0)
        rc = rdlock_attr_setlease(&a, SHORT_LEASE_MS);
    if (rc == 0)
        rc = rdlock_attr_setlostcb(&a, exit_on_lost, NULL);
    if (rc == 0)
        rc = rdlock_init(&m, x->name, &a); /* no client: the default one */
    if (rc == 0)
        rc = rdlock_lock(&m);
    snprintf(out, sizeof out, "locked %d", rc);
    if (rdt_send(x->p.to_parent[1], out) != 0 || rc != 0)
        return 1;
    rdt_recv(x->p.to_child[0], line, sizeof line, 10000); /* the callback ends us first */
    return 4;
}

static void test_lost_callback_may_exit(void)
{
    cbexit_t x;
    pid_t pid;
    char line[64];
    int st;

    fresh();
    memset(&x, 0, sizeof x);
    snprintf(x.name, sizeof x.name, "cbexit");
    CU_ASSERT_FATAL(rdt_pipe_open(&x.p) == 0);
    pid = rdt_fork(cbexit_main, &x);
    CU_ASSERT_FATAL(pid > 0);
    rdt_pipe_parent(&x.p);
    if (rdt_recv(x.p.to_parent[0], line, sizeof line, REPLY_MS) < 0 || strcmp(line, "locked 0") != 0) {
        fprintf(stderr, "cbexit: child did not take the lock: \"%s\"\n", line);
        CU_FAIL("child did not take the lock");
        rdt_pipe_close(&x.p);
        rdt_wait(pid, 0);
        return;
    }
    /* the hold disappears under the child: its watchdog finds it lost */
    CU_ASSERT_EQUAL(rdt_int_cmd(g_rc, -1, "DEL %s", rdt_key(x.name, "")), 1);
    st = rdt_wait(pid, 5000);
    if (st != CB_EXIT_STATUS)
        fprintf(stderr, "cbexit: child ended with %d (128+N: signal N), expected exit status %d\n", st,
                CB_EXIT_STATUS);
    RDT_ASSERT_EQ_LL(CB_EXIT_STATUS, st);
    rdt_pipe_close(&x.p);
}

/* ------------------------------------------------------------------ */
/* 6. the lease of a hand-over                                         */
/* ------------------------------------------------------------------ */

/* A thread that takes a mutex, reports, waits for "go", unlocks. */
typedef struct hthread {
    rdlock_t *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int phase;            /* 0 locking, 1 holding, 2 told to unlock, 3 done */
    int lock_rc, unlock_rc;
    long long locked_at;  /* rdt_now_ms() when rdlock_lock returned */
    long long hold_ms;    /* > 0: unlock by itself after this long */
    pthread_t th;
} hthread_t;

static void *hthread_main(void *arg)
{
    hthread_t *t = arg;
    int rc = rdlock_lock(t->m);
    pthread_mutex_lock(&t->mu);
    t->lock_rc = rc;
    t->locked_at = rdt_now_ms();
    t->phase = 1;
    pthread_cond_broadcast(&t->cv);
    if (rc == 0 && t->hold_ms > 0) {
        pthread_mutex_unlock(&t->mu);
        rdt__nap_ms(t->hold_ms);
        pthread_mutex_lock(&t->mu);
    } else {
        while (rc == 0 && t->phase < 2)
            pthread_cond_wait(&t->cv, &t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    rc = rc == 0 ? rdlock_unlock(t->m) : -1;
    pthread_mutex_lock(&t->mu);
    t->unlock_rc = rc;
    t->phase = 3;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static int hthread_start(hthread_t *t, rdlock_t *m, long long hold_ms)
{
    memset(t, 0, sizeof *t);
    t->m = m;
    t->hold_ms = hold_ms;
    t->lock_rc = t->unlock_rc = -1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    return pthread_create(&t->th, NULL, hthread_main, t);
}

/* Wait (bounded) until t reaches phase; 1 reached, 0 not. */
static int hthread_wait(hthread_t *t, int phase, int timeout_ms)
{
    long long end = rdt_now_ms() + timeout_ms;
    int ok;
    pthread_mutex_lock(&t->mu);
    while (t->phase < phase && rdt_now_ms() < end) {
        pthread_mutex_unlock(&t->mu);
        rdt__nap_ms(2);
        pthread_mutex_lock(&t->mu);
    }
    ok = t->phase >= phase;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

static void hthread_finish(hthread_t *t)
{
    pthread_mutex_lock(&t->mu);
    if (t->phase < 2)
        t->phase = 2;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

/* The only field of hash key (owner id) into buf, and its value into val:
 * 1 found, 0 none, -1 error or several. */
static int only_field(const char *key, char *buf, size_t n, char *val, size_t vn)
{
    redisReply *r = (redisReply *)redisCommand(g_rc, "HGETALL %s", key);
    int rc = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements <= 2) {
        rc = r->elements == 2;
        if (rc) {
            snprintf(buf, n, "%s", r->element[0]->str);
            snprintf(val, vn, "%s", r->element[1]->str);
        }
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* release.lua's hand-over to the head of the writers' queue, done by hand
 * and without its PUBLISH: a hand-over whose message got lost.  Returns
 * the server time of the hand-over, -1 on error. */
static const char handover_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local who = ARGV[1]\n"
    "local v = redis.call('HGET', KEYS[3], who)\n"
    "if not v then return -1 end\n"
    "local lease, info = string.match(v, '^%d+;(%d+);(.*)$')\n"
    "local tok = redis.call('INCR', KEYS[5])\n"
    "redis.call('DEL', KEYS[1])\n"
    "redis.call('HSET', KEYS[1], 'm', 'x', who, (now + tonumber(lease)) .. ';' .. tok .. ';' .. info)\n"
    "redis.call('PEXPIRE', KEYS[1], lease)\n"
    "redis.call('SET', KEYS[6], who)\n"
    "redis.call('ZREM', KEYS[2], who)\n"
    "redis.call('HDEL', KEYS[3], who)\n"
    "return now\n";

/* A waiter W (lease 3 s, looking every LOOK_MS) queues behind a planted
 * holder that would stay 60 s.  Right after one of W's looks (its queue
 * mark changes), the lock is handed to W without a message; W finds it at
 * its next look, about LOOK_MS later.  W's hold must then be good on the
 * server for (about) a whole lease from that look: the lease W's watchdog
 * counts on.  Pre-fix the server's deadline stayed at hand-over + lease,
 * LOOK_MS earlier. */
static void test_handover_found_by_look_restarts_lease(void)
{
    const char *N = "ho-look";
    const unsigned W_LEASE = 3000;
    rdlock_client_t *cw = NULL;
    rdlock_t wm;
    hthread_t w;
    char owner[256], mark[512], mark2[512], val[512], k[700];
    long long t_end, handed, dl = 0, srv_now;
    uint64_t tok;
    redisReply *r;
    int ok;

    fresh();
    snprintf(k, sizeof k, "%s", rdt_key(N, ""));
    tok = (uint64_t)rdt_int_cmd(g_rc, 0, "INCR %s", rdt_fence_key(NULL, N));
    CU_ASSERT_FATAL(plant_leftover(k, "x", "planted:1", tok) == 0);
    CU_ASSERT_EQUAL_FATAL(rdt_int_cmd(g_rc, -1, "PEXPIRE %s 60000", k), 1);
    CU_ASSERT_EQUAL_FATAL(rdlock_client_open(&cw, g_ini_slowlook), 0);
    CU_ASSERT_EQUAL_FATAL(mx_init(&wm, N, cw, RDLOCK_STALLED, W_LEASE, -1), 0);
    CU_ASSERT_EQUAL_FATAL(hthread_start(&w, &wm, 0), 0);

    /* W queued: its mark, then the next change of it (a look just went). */
    t_end = rdt_now_ms() + 5000;
    while ((ok = only_field(rdt_key(N, ":wq"), owner, sizeof owner, mark, sizeof mark)) != 1 && rdt_now_ms() < t_end)
        rdt__nap_ms(2);
    CU_ASSERT_EQUAL(ok, 1);
    mark2[0] = '\0';
    while (ok == 1 && rdt_now_ms() < t_end) {
        if (rdt_hget(g_rc, rdt_key(N, ":wq"), owner, mark2, sizeof mark2) != 1 || strcmp(mark2, mark) != 0)
            break;
        rdt__nap_ms(1);
    }
    CU_ASSERT(ok == 1 && mark2[0] != '\0' && strcmp(mark2, mark) != 0);
    if (ok != 1 || strcmp(mark2, mark) == 0) {
        redisCommand(g_rc, "DEL %s", k); /* free: W takes it at its next look */
        hthread_finish(&w);
        rdlock_destroy(&wm);
        rdlock_client_close(cw);
        return;
    }
    {
        char ks[5][700]; /* rdt_key's buffers rotate among 4 */
        const char *sfx[5] = { ":w", ":wq", ":r", NULL, ":x" };
        int i;
        for (i = 0; i < 5; i++)
            snprintf(ks[i], sizeof ks[i], "%s", sfx[i] != NULL ? rdt_key(N, sfx[i]) : rdt_fence_key(NULL, N));
        r = (redisReply *)redisCommand(g_rc, "EVAL %s 6 %s %s %s %s %s %s %s", handover_lua, k, ks[0], ks[1],
                                       ks[2], ks[3], ks[4], owner);
    }
    if (r && r->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "handover-look: %s\n", r->str);
    handed = rdt_reply_int(r, -1);
    CU_ASSERT_FATAL(handed > 0);

    CU_ASSERT_FATAL(hthread_wait(&w, 1, 3 * LOOK_MS));
    CU_ASSERT_EQUAL(w.lock_rc, 0);
    srv_now = rdt_server_ms(g_rc);
    if (rdt_hget(g_rc, k, owner, val, sizeof val) == 1)
        dl = strtoll(val, NULL, 10);
    fprintf(stderr, "handover-look: found %lld ms after the hand-over; deadline %lld ms ahead (lease %u)\n",
            srv_now - handed, dl - srv_now, W_LEASE);
    /* The look came about LOOK_MS after the hand-over: a deadline dated
     * from the hand-over would be about W_LEASE - LOOK_MS ahead. */
    CU_ASSERT(srv_now - handed >= LOOK_MS / 2);
    CU_ASSERT(dl - srv_now >= (long long)W_LEASE - LOOK_MS / 3);
    hthread_finish(&w);
    CU_ASSERT_EQUAL(w.unlock_rc, 0);
    CU_ASSERT_EQUAL(rdlock_destroy(&wm), 0);
    CU_ASSERT_EQUAL(rdlock_client_close(cw), 0);
}

/* Wait (bounded) until n writers queue on name: 0, or -1 (*seen: how
 * many did). */
static int wait_queued(const char *name, int n, int *seen)
{
    long long end = rdt_now_ms() + 5000;
    for (;;) {
        *seen = (int)rdt_zcard(g_rc, rdt_key(name, ":w"));
        if (*seen >= n)
            return 0;
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "%s: %d of %d writers queued\n", name, *seen, n);
            return -1;
        }
        rdt__nap_ms(2);
    }
}

static int g_lost_calls;
static void count_lost(const char *name, void *arg)
{
    (void)name;
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

/* One client cw, two waiters on one name: A (lease 600 ms: looks every 200
 * ms) and B (lease 3000 ms: would look every 1000 ms, but A looks more
 * often and B leaves the re-check to A); then C, of another client, queues
 * behind them.  Another client's holder keeps the lock 2.5 s, longer than
 * half B's lease (the silence after which the server skips a queue head
 * as crashed).  Then the queue must be served in order, A, B, C, each by
 * hand-over, and B must keep its hold.  Pre-fix, B's queue mark went
 * silent while A did the looking; the server dropped B as a crashed waiter
 * and handed the lock to C first.  (B's lease was 1500 ms at first: its
 * own looks every 500 ms left 250 ms of slack before the 750 ms silence,
 * which a loaded CI machine once used up.) */
static void test_queue_place_kept_while_another_looks(void)
{
    const char *N = "ho-wait";
    rdlock_client_t *cw = NULL;
    rdlock_t hm, am, bm, cm;
    rdlock_attr_t attr;
    rdt_lockopts_t bo = { .client = NULL, .lease = 3000, .watchdog = -1 };
    hthread_t h, a, b, cc;
    int n = 0, lost;

    fresh();
    g_lost_calls = 0;
    CU_ASSERT_EQUAL_FATAL(rdlock_client_open(&cw, g_ini_slowlook), 0);
    bo.client = cw;
    CU_ASSERT_EQUAL_FATAL(mx_init(&hm, N, g_ca, RDLOCK_STALLED, 600, -1), 0);
    CU_ASSERT_EQUAL_FATAL(mx_init(&am, N, cw, RDLOCK_STALLED, 600, -1), 0);
    CU_ASSERT_EQUAL_FATAL(mx_init(&cm, N, g_cb, RDLOCK_STALLED, 600, -1), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_attr_make(&attr, &bo), 0);
    CU_ASSERT_EQUAL_FATAL(rdlock_attr_setlostcb(&attr, count_lost, &g_lost_calls), 0);
    CU_ASSERT_EQUAL_FATAL(rdlock_init(&bm, N, &attr), 0);
    rdlock_attr_destroy(&attr);

    CU_ASSERT_EQUAL_FATAL(hthread_start(&h, &hm, 2500), 0);
    CU_ASSERT_FATAL(hthread_wait(&h, 1, 5000));
    CU_ASSERT_EQUAL(h.lock_rc, 0);
    CU_ASSERT_EQUAL_FATAL(hthread_start(&a, &am, 1), 0);
    CU_ASSERT_EQUAL_FATAL(wait_queued(N, 1, &n), 0);
    CU_ASSERT_EQUAL_FATAL(hthread_start(&b, &bm, 300), 0);
    CU_ASSERT_EQUAL_FATAL(wait_queued(N, 2, &n), 0);
    CU_ASSERT_EQUAL_FATAL(hthread_start(&cc, &cm, 1), 0);
    CU_ASSERT_EQUAL_FATAL(wait_queued(N, 3, &n), 0);

    CU_ASSERT(hthread_wait(&cc, 3, 8000));
    CU_ASSERT(hthread_wait(&b, 3, 2000));
    hthread_finish(&h);
    hthread_finish(&a);
    hthread_finish(&b);
    hthread_finish(&cc);
    lost = __atomic_load_n(&g_lost_calls, __ATOMIC_SEQ_CST);
    fprintf(stderr,
            "queue-place: after the holder (%d/%d): A %d/%d at +%lld, B %d/%d at +%lld, C %d/%d at +%lld ms; "
            "B's lost callbacks %d\n",
            h.lock_rc, h.unlock_rc, a.lock_rc, a.unlock_rc, a.locked_at - h.locked_at, b.lock_rc, b.unlock_rc,
            b.locked_at - h.locked_at, cc.lock_rc, cc.unlock_rc, cc.locked_at - h.locked_at, lost);
    CU_ASSERT_EQUAL(h.unlock_rc, 0);
    CU_ASSERT_EQUAL(a.lock_rc, 0);
    CU_ASSERT_EQUAL(b.lock_rc, 0);
    CU_ASSERT_EQUAL(cc.lock_rc, 0);
    CU_ASSERT(a.locked_at < b.locked_at);
    CU_ASSERT(b.locked_at < cc.locked_at);
    CU_ASSERT(b.locked_at - h.locked_at >= 2500); /* B waited longer than half its lease */
    CU_ASSERT_EQUAL(b.unlock_rc, 0);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(rdlock_destroy(&hm), 0);
    CU_ASSERT_EQUAL(rdlock_destroy(&am), 0);
    CU_ASSERT_EQUAL(rdlock_destroy(&bm), 0);
    CU_ASSERT_EQUAL(rdlock_destroy(&cm), 0);
    CU_ASSERT_EQUAL(rdlock_client_close(cw), 0);
}

/* Writers that join the queue in the same server millisecond must be
 * served in arrival order.  The queue was a zset scored by arrival time in
 * ms, and equal scores sort by member (the owner id, random), so such a
 * pair was served in random order (found in test_sem's queue, which had
 * the same rule).  The tie is forced: A's score is moved 60 s ahead, as if
 * B came in the same millisecond or after a clock step back; B must still
 * queue behind A, and A get the lock first. */
static void test_same_ms_writers_in_order(void)
{
    const char *N = "tie-w";
    rdlock_t hm, am, bm;
    hthread_t h, a, b;
    char member[128] = "";
    redisReply *r;
    long long now = 0;
    int n = 0;

    fresh();
    CU_ASSERT_EQUAL_FATAL(mx_init(&hm, N, g_ca, RDLOCK_STALLED, 0, -1), 0);
    CU_ASSERT_EQUAL_FATAL(mx_init(&am, N, g_cb, RDLOCK_STALLED, 0, -1), 0);
    CU_ASSERT_EQUAL_FATAL(mx_init(&bm, N, g_ca, RDLOCK_STALLED, 0, -1), 0);
    CU_ASSERT_EQUAL_FATAL(hthread_start(&h, &hm, 0), 0);
    CU_ASSERT_FATAL(hthread_wait(&h, 1, 5000));
    CU_ASSERT_EQUAL_FATAL(hthread_start(&a, &am, 1), 0);
    CU_ASSERT_EQUAL_FATAL(wait_queued(N, 1, &n), 0);
    r = redisCommand(g_rc, "ZRANGE %s 0 0", rdt_key(N, ":w"));
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
        snprintf(member, sizeof member, "%s", r->element[0]->str);
    if (r != NULL)
        freeReplyObject(r);
    now = rdt_server_ms(g_rc);
    CU_ASSERT_FATAL(member[0] != '\0' && now > 0);
    r = redisCommand(g_rc, "ZADD %s XX %lld %s", rdt_key(N, ":w"), now + 60000, member);
    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);

    CU_ASSERT_EQUAL_FATAL(hthread_start(&b, &bm, 1), 0);
    CU_ASSERT_EQUAL_FATAL(wait_queued(N, 2, &n), 0);
    r = redisCommand(g_rc, "ZRANGE %s 0 0", rdt_key(N, ":w"));
    CU_ASSERT(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
              strcmp(r->element[0]->str, member) == 0); /* A still first */
    if (r != NULL)
        freeReplyObject(r);

    hthread_finish(&h); /* unlock: hand-over to the head */
    CU_ASSERT(hthread_wait(&a, 3, 8000));
    CU_ASSERT(hthread_wait(&b, 3, 8000));
    hthread_finish(&a);
    hthread_finish(&b);
    CU_ASSERT_EQUAL(a.lock_rc, 0);
    CU_ASSERT_EQUAL(b.lock_rc, 0);
    if (!(a.locked_at <= b.locked_at))
        fprintf(stderr, "same-ms writers: B got it %lld ms before A\n", a.locked_at - b.locked_at);
    CU_ASSERT(a.locked_at <= b.locked_at);
    CU_ASSERT_EQUAL(rdlock_destroy(&hm), 0);
    CU_ASSERT_EQUAL(rdlock_destroy(&am), 0);
    CU_ASSERT_EQUAL(rdlock_destroy(&bm), 0);
}

/* ------------------------------------------------------------------ */

static const rdt_test_t tests[] = {
    { "leftover_field_not_resurrected", test_leftover_field_not_resurrected },
    { "head_not_starved_after_expiry", test_head_not_starved_after_expiry },
    { "robust_eownerdead_survives_lost_reply", test_robust_eownerdead_survives_lost_reply },
    { "release_retry_after_lost_reply", test_release_retry_after_lost_reply },
    { "lost_callback_may_exit", test_lost_callback_may_exit },
    { "handover_found_by_look_restarts_lease", test_handover_found_by_look_restarts_lease },
    { "queue_place_kept_while_another_looks", test_queue_place_kept_while_another_looks },
    { "same_ms_writers_in_order", test_same_ms_writers_in_order },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "regress", tests, suite_setup, suite_teardown, 40);
}
