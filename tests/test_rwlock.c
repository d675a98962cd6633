/* test_rwlock.c - the read-write lock (docs/CONTRACT.md sections 1, 2, 5.3, 6, 7, 10)
 * against a private redis-server.
 *
 * Every test uses explicit clients (rdlock_client_open on an ini written by
 * rdt_write_ini; a forked "host" opens its own) and FLUSHALLs first.  Actors
 * synchronise through pipes, barriers and condition variables, or by bounded
 * polling of the server's real state (the lock hash "rdlock:{NAME}", the
 * writer queue ":w", the reader queue ":r", PUBSUB NUMSUB of the channel
 * ":c").  Sleeps only let leases expire, pace checks, stand for the length
 * of a critical section, or bound a negative check ("nothing happens in
 * this window"); the wake-up tests also let waiters settle into their long
 * wait before the release they measure, which a pass never depends on.
 *
 * A child process never touches CUnit: it reports return codes through its
 * pipe (or its exit status) and the parent asserts. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_timedjoin_np */
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
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
static redisContext *g_rc; /* parent's plain connection for inspecting state */

/* ------------------------------------------------------------------ */
/* general helpers                                                     */
/* ------------------------------------------------------------------ */

/* Bounded polling of real state: evaluates cond every 5 ms until it holds
 * or timeout_ms passes; ok is set to the last value. */
#define WAIT_FOR(ok, cond, timeout_ms)                                   \
    do {                                                                 \
        long long wf_end_ = rdt_now_ms() + (timeout_ms);                 \
        while (!((ok) = (cond)) && rdt_now_ms() < wf_end_)               \
            rdt__nap_ms(5);                                              \
    } while (0)

/* Copy of an ini path (rdt_write_ini's result lives in a rotating slot). */
static void write_ini(char *out, size_t n, const char *extra)
{
    const char *p = rdt_write_ini(&srv, 0, extra);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    snprintf(out, n, "%s", p);
}

/* Init on client c.  lease 0 = from config; watchdog < 0 = from config. */
static int init_rw_full(rdrwlock_t *rw, const char *name, rdlock_client_t *c, unsigned lease, int watchdog,
                        int type, rdlock_lost_fn fn, void *arg)
{
    rdt_lockopts_t o = { .client = c, .type = type, .lease = lease, .watchdog = watchdog,
                         .lostcb = fn, .lostarg = arg };
    return rdt_rwlock_init(rw, name, &o);
}

/* ------------------------------------------------------------------ */
/* inspecting the server                                               */
/* ------------------------------------------------------------------ */

/* The plain connection, made again if it broke. */
static redisContext *conn(void)
{
    if (g_rc == NULL || g_rc->err) {
        if (g_rc)
            redisFree(g_rc);
        g_rc = rdt_connect(&srv);
    }
    return g_rc;
}

/* Integer reply of a command, or -1000 on any error. */
static long long icmd(const char *fmt, ...)
{
    long long v;
    va_list ap;

    va_start(ap, fmt);
    v = rdt_int_vcmd(conn(), -1000, fmt, ap);
    va_end(ap);
    return v;
}

/* Holder fields of lock NAME; *mode gets field 'm' ('\0' if none). -1 on
 * error.  If pid > 0, the field of the holder with that pid is copied to
 * field (empty if none) and its deadline to *deadline. */
static int holders_ex(const char *name, char *mode, long pid, char *field, size_t fn, long long *deadline)
{
    return rdt_holders(conn(), rdt_key(name, ""), NULL, pid, mode, field, fn, deadline);
}

static int holders(const char *name, char *mode)
{
    return holders_ex(name, mode, 0, NULL, 0, NULL);
}

static long long zcard(const char *name, const char *suffix)
{
    return icmd("ZCARD rdlock:{%s}%s", name, suffix);
}

static long long key_exists(const char *name)
{
    return icmd("EXISTS rdlock:{%s}", name);
}

/* Subscribers of the lock's wake-up channel. */
static long long numsub(const char *name)
{
    redisReply *r;
    long long v = -1;
    if (g_rc == NULL || g_rc->err)
        return -1;
    r = (redisReply *)redisCommand(g_rc, "PUBSUB NUMSUB rdlock:{%s}:c", name);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_INTEGER)
        v = r->element[1]->integer;
    if (r)
        freeReplyObject(r);
    return v;
}

/* ------------------------------------------------------------------ */
/* lost-callback recorders                                             */
/* ------------------------------------------------------------------ */

static rdt_lostrec_t lostA, lostB;

/* ------------------------------------------------------------------ */
/* threads                                                             */
/* ------------------------------------------------------------------ */

/* Join with a bound; 0 or -1 (the thread is then left running). */
static int join_within(pthread_t t, int timeout_ms)
{
    struct timespec ts = rdt_abstime(CLOCK_REALTIME, timeout_ms);
    int rc = pthread_timedjoin_np(t, NULL, &ts);
    if (rc != 0)
        fprintf(stderr, "thread did not finish within %d ms: %s\n", timeout_ms, strerror(rc));
    return rc == 0 ? 0 : -1;
}

/* A thread that runs one operation, holds until released, then unlocks. */
typedef struct holder {
    rdrwlock_t *rw;
    int op; /* 'r' rdlock, 'w' wrlock, 'R' tryrdlock, 'W' trywrlock, 'M' rdlock_lock on m */
    rdlock_t *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* 0 started, 1 acquire returned, 2 release requested, 3 done */
    int rc_acq, rc_unl;
    uint64_t tok;
    long long acq_at;
    pthread_t th;
} holder_t;

static void *holder_main(void *arg)
{
    holder_t *h = arg;
    int rc;
    uint64_t tok = 0;

    switch (h->op) {
    case 'r': rc = rdrwlock_rdlock(h->rw); break;
    case 'w': rc = rdrwlock_wrlock(h->rw); break;
    case 'R': rc = rdrwlock_tryrdlock(h->rw); break;
    case 'W': rc = rdrwlock_trywrlock(h->rw); break;
    case 'M': rc = rdlock_lock(h->m); break;
    default: rc = -1;
    }
    if (rc == 0 && h->op != 'M')
        rdrwlock_fencing_token(h->rw, &tok);
    pthread_mutex_lock(&h->mu);
    h->rc_acq = rc;
    h->tok = tok;
    h->acq_at = rdt_now_ms();
    h->state = 1;
    pthread_cond_broadcast(&h->cv);
    while (h->state < 2)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (rc == 0)
        rc = h->op == 'M' ? rdlock_unlock(h->m) : rdrwlock_unlock(h->rw);
    else
        rc = -2;
    pthread_mutex_lock(&h->mu);
    h->rc_unl = rc;
    h->state = 3;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void holder_start(holder_t *h, rdrwlock_t *rw, rdlock_t *m, int op)
{
    memset(h, 0, sizeof *h);
    h->rw = rw;
    h->m = m;
    h->op = op;
    h->rc_acq = h->rc_unl = -1;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    CU_ASSERT_FATAL(pthread_create(&h->th, NULL, holder_main, h) == 0);
}

/* Wait until the acquire call returned (bounded); its rc, or -1000. */
static int holder_acquired(holder_t *h, int timeout_ms)
{
    struct timespec ts = rdt_abstime(CLOCK_REALTIME, timeout_ms);
    int rc;
    pthread_mutex_lock(&h->mu);
    while (h->state < 1)
        if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == ETIMEDOUT)
            break;
    rc = h->state >= 1 ? h->rc_acq : -1000;
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static int holder_returned(holder_t *h)
{
    int s;
    pthread_mutex_lock(&h->mu);
    s = h->state >= 1;
    pthread_mutex_unlock(&h->mu);
    return s;
}

/* Release, join; returns the unlock rc (or -1000 if the thread hangs). */
static int holder_finish(holder_t *h, int timeout_ms)
{
    pthread_mutex_lock(&h->mu);
    if (h->state < 2)
        h->state = 2;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (join_within(h->th, timeout_ms) != 0)
        return -1000;
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    return h->rc_unl;
}

/* ------------------------------------------------------------------ */
/* suite                                                               */
/* ------------------------------------------------------------------ */

static int setup(void)
{
    rdt_lost_init(&lostA);
    rdt_lost_init(&lostB);
    return rdt_suite_start(&srv, &g_rc);
}

static int teardown(void)
{
    rdt_actor_reap_all();
    rdt_suite_stop(&srv, &g_rc);
    return 0;
}

static void fresh(void)
{
    rdt_actor_reap_all(); /* left over by a test that failed fatally */
    CU_ASSERT_FATAL(rdt_flushall(&srv) == 0);
    rdt_lost_reset(&lostA);
    rdt_lost_reset(&lostB);
}

/* ------------------------------------------------------------------ */
/* init / destroy                                                      */
/* ------------------------------------------------------------------ */

static void test_init_destroy(void)
{
    rdlock_client_t *c;
    rdrwlock_t rw, rw2, z;
    rdlock_attr_t bad;
    char longname[600];
    struct timespec ts;
    uint64_t tok;
    holder_t h;
    long long keys0;

    fresh();
    c = rdt_open_client(&srv, NULL);

    /* Arguments. */
    RDT_ASSERT_RC(EINVAL, rdt_rwlock_on(NULL, "x", c));
    RDT_ASSERT_RC(EINVAL, rdt_rwlock_on(&rw, NULL, c));
    RDT_ASSERT_RC(EINVAL, rdt_rwlock_on(&rw, "", c));
    memset(longname, 'n', 513);
    longname[513] = '\0';
    RDT_ASSERT_RC(EINVAL, rdt_rwlock_on(&rw, longname, c));
    memset(&bad, 0x5a, sizeof bad); /* never initialised */
    RDT_ASSERT_RC(EINVAL, rdrwlock_init(&rw, "x", &bad));
    longname[512] = '\0';
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, longname, c)); /* 512 bytes is fine */
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));

    /* An uninitialised (zeroed) lock: EINVAL everywhere. */
    keys0 = icmd("DBSIZE"); /* the fencing counter of the long name stays */
    CU_ASSERT(keys0 >= 1);
    memset(&z, 0, sizeof z);
    ts = rdt_abstime(CLOCK_REALTIME, 100);
    RDT_ASSERT_RC(EINVAL, rdrwlock_rdlock(&z));
    RDT_ASSERT_RC(EINVAL, rdrwlock_tryrdlock(&z));
    RDT_ASSERT_RC(EINVAL, rdrwlock_timedrdlock(&z, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_clockrdlock(&z, CLOCK_REALTIME, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_wrlock(&z));
    RDT_ASSERT_RC(EINVAL, rdrwlock_trywrlock(&z));
    RDT_ASSERT_RC(EINVAL, rdrwlock_timedwrlock(&z, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_clockwrlock(&z, CLOCK_REALTIME, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_unlock(&z));
    RDT_ASSERT_RC(EINVAL, rdrwlock_fencing_token(&z, &tok));
    RDT_ASSERT_RC(EINVAL, rdrwlock_destroy(&z));
    RDT_ASSERT_RC(EINVAL, rdrwlock_rdlock(NULL));
    RDT_ASSERT_RC(EINVAL, rdrwlock_wrlock(NULL));
    RDT_ASSERT_RC(EINVAL, rdrwlock_unlock(NULL));
    RDT_ASSERT_RC(EINVAL, rdrwlock_destroy(NULL));
    RDT_ASSERT_EQ_LL(keys0, icmd("DBSIZE")); /* nothing reached the server */

    /* destroy while held through the handle, in either mode: EBUSY, and
     * the hold is intact. */
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-init", c));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw2, "rw-init", c));
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&rw));
    RDT_ASSERT_RC(EBUSY, rdrwlock_destroy(&rw));
    CU_ASSERT_EQUAL(holders("rw-init", NULL), 1);
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rw, &tok));
    /* Not held through rw2 by anyone: rw2 may go although the name is held. */
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw2));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&rw));
    RDT_ASSERT_RC(EBUSY, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(EBUSY, rdlock_client_close(c)); /* rw not destroyed */
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));

    /* Held through the handle by another thread of this process. */
    holder_start(&h, &rw, NULL, 'r');
    RDT_ASSERT_RC(0, holder_acquired(&h, 5000));
    RDT_ASSERT_RC(EBUSY, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&rw)); /* this thread holds nothing */
    RDT_ASSERT_RC(0, holder_finish(&h, 5000));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-init"));

    /* Destroyed: EINVAL, also a second destroy. */
    RDT_ASSERT_RC(EINVAL, rdrwlock_tryrdlock(&rw));
    RDT_ASSERT_RC(EINVAL, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(EINVAL, rdrwlock_destroy(&rw));
    /* Re-initialisable. */
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-init", c));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    rdt_close_client(c);
}

/* ------------------------------------------------------------------ */
/* RDRWLOCK_INITIALIZER: first use raced by threads, default client      */
/* ------------------------------------------------------------------ */

#define SRACE 8
static rdrwlock_t s_rw_read = RDRWLOCK_INITIALIZER("static-rw-read");
static rdrwlock_t s_rw_write = RDRWLOCK_INITIALIZER("static-rw-write");

typedef struct srace {
    rdt_pipe_t p;
    char ini[400];
    pthread_barrier_t bar;
    int rc_rd[SRACE], rc_un[SRACE], rc_wr[SRACE], rc_wun[SRACE];
    uint64_t tok[SRACE];
} srace_t;

typedef struct srace_arg {
    srace_t *s;
    int i;
} srace_arg_t;

static void *srace_worker(void *arg)
{
    srace_arg_t *a = arg;
    srace_t *s = a->s;
    int i = a->i;

    pthread_barrier_wait(&s->bar); /* A: all start together */
    s->rc_rd[i] = rdrwlock_tryrdlock(&s_rw_read);
    if (s->rc_rd[i] == 0)
        rdrwlock_fencing_token(&s_rw_read, &s->tok[i]);
    pthread_barrier_wait(&s->bar); /* B: all tried */
    pthread_barrier_wait(&s->bar); /* C: parent has looked */
    s->rc_un[i] = s->rc_rd[i] == 0 ? rdrwlock_unlock(&s_rw_read) : 0;
    pthread_barrier_wait(&s->bar); /* D: write race starts */
    s->rc_wr[i] = rdrwlock_trywrlock(&s_rw_write);
    pthread_barrier_wait(&s->bar); /* E: all tried */
    pthread_barrier_wait(&s->bar); /* F: parent has looked */
    s->rc_wun[i] = s->rc_wr[i] == 0 ? rdrwlock_unlock(&s_rw_write) : 0;
    pthread_barrier_wait(&s->bar); /* G: done */
    return NULL;
}

static int srace_child(void *arg)
{
    srace_t *s = arg;
    pthread_t th[SRACE];
    srace_arg_t args[SRACE];
    char line[160];
    int i, j, ok = 0, distinct = 1, zeros = 0, busy = 0, unl_bad = 0, rc_destroy;

    rdt_pipe_child(&s->p);
    if (setenv("RDLOCK_CONF", s->ini, 1) != 0)
        return 20;
    if (pthread_barrier_init(&s->bar, NULL, SRACE + 1) != 0)
        return 21;
    for (i = 0; i < SRACE; i++) {
        args[i].s = s;
        args[i].i = i;
        if (pthread_create(&th[i], NULL, srace_worker, &args[i]) != 0)
            return 22;
    }
    pthread_barrier_wait(&s->bar); /* A */
    pthread_barrier_wait(&s->bar); /* B */
    for (i = 0; i < SRACE; i++) {
        if (s->rc_rd[i] == 0 && s->tok[i] > 0)
            ok++;
        for (j = 0; j < i; j++)
            if (s->tok[i] == s->tok[j])
                distinct = 0;
    }
    rc_destroy = rdrwlock_destroy(&s_rw_read); /* threads hold it through it: EBUSY */
    snprintf(line, sizeof line, "rd %d %d %d", ok, distinct, rc_destroy);
    rdt_send(s->p.to_parent[1], line);
    if (rdt_recv(s->p.to_child[0], line, sizeof line, 20000) < 0)
        return 23;
    pthread_barrier_wait(&s->bar); /* C */
    pthread_barrier_wait(&s->bar); /* D */
    pthread_barrier_wait(&s->bar); /* E */
    for (i = 0; i < SRACE; i++) {
        if (s->rc_un[i] != 0)
            unl_bad++;
        if (s->rc_wr[i] == 0)
            zeros++;
        else if (s->rc_wr[i] == EBUSY)
            busy++;
    }
    snprintf(line, sizeof line, "wr %d %d %d", zeros, busy, unl_bad);
    rdt_send(s->p.to_parent[1], line);
    if (rdt_recv(s->p.to_child[0], line, sizeof line, 20000) < 0)
        return 24;
    pthread_barrier_wait(&s->bar); /* F */
    pthread_barrier_wait(&s->bar); /* G */
    for (i = 0; i < SRACE; i++) {
        pthread_join(th[i], NULL);
        if (s->rc_wun[i] != 0)
            unl_bad++;
    }
    snprintf(line, sizeof line, "done %d %d %d", unl_bad, rdrwlock_destroy(&s_rw_read),
             rdrwlock_destroy(&s_rw_write));
    rdt_send(s->p.to_parent[1], line);
    return 0;
}

static void test_static_initializer_race(void)
{
    srace_t s;
    pid_t pid;
    char line[160], mode;
    int a = -1, b = -1, d = -1;

    fresh();
    memset(&s, 0, sizeof s);
    write_ini(s.ini, sizeof s.ini, NULL);
    CU_ASSERT_FATAL(rdt_pipe_open(&s.p) == 0);
    pid = rdt_fork(srace_child, &s);
    CU_ASSERT_FATAL(pid > 0);
    rdt_pipe_parent(&s.p);

    /* All 8 racing first users took a read share of one lock, with
     * distinct tokens, on the server named by $RDLOCK_CONF. */
    CU_ASSERT(rdt_recv(s.p.to_parent[0], line, sizeof line, 10000) > 0);
    CU_ASSERT_EQUAL(sscanf(line, "rd %d %d %d", &a, &b, &d), 3);
    printf("[%s] ", line);
    RDT_ASSERT_EQ_LL(SRACE, a);
    RDT_ASSERT_EQ_LL(1, b);
    RDT_ASSERT_RC(EBUSY, d);
    CU_ASSERT_EQUAL(holders("static-rw-read", &mode), SRACE);
    CU_ASSERT_EQUAL(mode, 's');
    rdt_send(s.p.to_child[1], "go");

    /* Write race on the other static lock: exactly one winner. */
    CU_ASSERT(rdt_recv(s.p.to_parent[0], line, sizeof line, 10000) > 0);
    CU_ASSERT_EQUAL(sscanf(line, "wr %d %d %d", &a, &b, &d), 3);
    printf("[%s] ", line);
    RDT_ASSERT_EQ_LL(1, a);
    RDT_ASSERT_EQ_LL(SRACE - 1, b);
    RDT_ASSERT_EQ_LL(0, d);
    RDT_ASSERT_EQ_LL(0, key_exists("static-rw-read"));
    CU_ASSERT_EQUAL(holders("static-rw-write", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    rdt_send(s.p.to_child[1], "go");

    CU_ASSERT(rdt_recv(s.p.to_parent[0], line, sizeof line, 10000) > 0);
    CU_ASSERT_EQUAL(sscanf(line, "done %d %d %d", &a, &b, &d), 3);
    RDT_ASSERT_EQ_LL(0, a); /* every unlock 0 */
    RDT_ASSERT_RC(0, b);    /* destroy: nothing held through the one handle */
    RDT_ASSERT_RC(0, d);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 10000));
    rdt_pipe_close(&s.p);
    RDT_ASSERT_EQ_LL(0, key_exists("static-rw-write"));
    RDT_ASSERT_EQ_LL(SRACE, rdt_get_ll(conn(), rdt_fence_key(NULL, "static-rw-read")));
}

/* ------------------------------------------------------------------ */
/* try and timed forms, exclusion, abstime validation                  */
/* ------------------------------------------------------------------ */

static void test_try_and_timed(void)
{
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb;
    struct timespec ts;
    long long t0, took;
    char mode;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-try", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-try", cb));

    /* abstime is checked first, even on a free lock. */
    ts.tv_sec = time(NULL) + 10;
    ts.tv_nsec = -1;
    RDT_ASSERT_RC(EINVAL, rdrwlock_timedrdlock(&ra, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_timedwrlock(&ra, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_clockrdlock(&ra, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_clockwrlock(&ra, CLOCK_MONOTONIC, &ts));
    ts.tv_nsec = 1000000000L;
    RDT_ASSERT_RC(EINVAL, rdrwlock_timedrdlock(&ra, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_timedwrlock(&ra, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_timedrdlock(&ra, NULL));
    RDT_ASSERT_RC(EINVAL, rdrwlock_clockwrlock(&ra, CLOCK_REALTIME, NULL));
    ts = rdt_abstime(CLOCK_REALTIME, 1000);
    RDT_ASSERT_RC(EINVAL, rdrwlock_clockrdlock(&ra, CLOCK_PROCESS_CPUTIME_ID, &ts));
    RDT_ASSERT_RC(EINVAL, rdrwlock_clockwrlock(&ra, CLOCK_THREAD_CPUTIME_ID, &ts));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-try"));

    /* A past deadline on a free lock still acquires, in every timed form. */
    ts.tv_sec = 1;
    ts.tv_nsec = 0;
    RDT_ASSERT_RC(0, rdrwlock_timedrdlock(&ra, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_timedwrlock(&ra, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_clockrdlock(&ra, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_clockwrlock(&ra, CLOCK_REALTIME, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-try"));

    /* Readers share: a and b both hold; a writer is excluded. */
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    CU_ASSERT_EQUAL(holders("rw-try", &mode), 2);
    CU_ASSERT_EQUAL(mode, 's');
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rb));
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_timedwrlock(&rb, &ts));
    took = rdt_now_ms() - t0;
    CU_ASSERT(took >= 280 && took <= 1500);
    ts = rdt_abstime(CLOCK_MONOTONIC, 300);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_clockwrlock(&rb, CLOCK_MONOTONIC, &ts));
    took = rdt_now_ms() - t0;
    CU_ASSERT(took >= 280 && took <= 1500);
    ts = rdt_abstime(CLOCK_REALTIME, 200);
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_clockwrlock(&rb, CLOCK_REALTIME, &ts));
    /* A past deadline on a held lock: ETIMEDOUT at once. */
    ts.tv_sec = 1;
    ts.tv_nsec = 0;
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_timedwrlock(&rb, &ts));
    /* The timed-out writers left no mark: b can read at once. */
    RDT_ASSERT_EQ_LL(0, zcard("rw-try", ":w"));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-try"));

    /* A writer excludes readers and writers in every form. */
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&ra));
    CU_ASSERT_EQUAL(holders("rw-try", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rb));
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_timedrdlock(&rb, &ts));
    took = rdt_now_ms() - t0;
    CU_ASSERT(took >= 280 && took <= 1500);
    ts = rdt_abstime(CLOCK_MONOTONIC, 300);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_clockrdlock(&rb, CLOCK_MONOTONIC, &ts));
    took = rdt_now_ms() - t0;
    CU_ASSERT(took >= 280 && took <= 1500);
    ts = rdt_abstime(CLOCK_REALTIME, 200);
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_clockrdlock(&rb, CLOCK_REALTIME, &ts));
    ts = rdt_abstime(CLOCK_REALTIME, 200);
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_timedwrlock(&rb, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-try"));

    /* Free again: every timed form acquires with a future deadline too. */
    ts = rdt_abstime(CLOCK_REALTIME, 2000);
    RDT_ASSERT_RC(0, rdrwlock_timedwrlock(&rb, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
    ts = rdt_abstime(CLOCK_MONOTONIC, 2000);
    RDT_ASSERT_RC(0, rdrwlock_clockrdlock(&rb, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* ------------------------------------------------------------------ */
/* blocking calls                                                      */
/* ------------------------------------------------------------------ */

static void test_blocking_calls(void)
{
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb;
    holder_t h1, h2;
    int ok;
    char mode;
    long long t0;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-block", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-block", cb));

    /* rdlock waits for a writer to leave. */
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&ra));
    holder_start(&h1, &rb, NULL, 'r');
    WAIT_FOR(ok, zcard("rw-block", ":r") == 1, 3000);
    CU_ASSERT(ok);
    CU_ASSERT_FALSE(holder_returned(&h1));
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, holder_acquired(&h1, 5000));
    printf("[reader in %lld ms after the writer left] ", h1.acq_at - t0);
    CU_ASSERT(h1.acq_at - t0 <= 1000);
    CU_ASSERT_EQUAL(holders("rw-block", &mode), 1);
    CU_ASSERT_EQUAL(mode, 's');
    RDT_ASSERT_EQ_LL(0, zcard("rw-block", ":r"));

    /* wrlock waits for that reader to leave. */
    holder_start(&h2, &ra, NULL, 'w');
    WAIT_FOR(ok, zcard("rw-block", ":w") == 1, 3000);
    CU_ASSERT(ok);
    CU_ASSERT_FALSE(holder_returned(&h2));
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, holder_finish(&h1, 5000));
    RDT_ASSERT_RC(0, holder_acquired(&h2, 5000));
    printf("[writer in %lld ms after the reader left] ", h2.acq_at - t0);
    CU_ASSERT(h2.acq_at - t0 <= 1000);
    CU_ASSERT_EQUAL(holders("rw-block", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_EQ_LL(0, zcard("rw-block", ":w"));
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(0, holder_finish(&h2, 5000));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-block"));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* ------------------------------------------------------------------ */
/* fencing tokens                                                      */
/* ------------------------------------------------------------------ */

static void test_fencing_tokens(void)
{
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb;
    rdlock_t m;
    struct timespec ts;
    uint64_t t = 0, prev = 0, tb = 0, again = 0;
    int i;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-fence", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-fence", cb));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "rw-fence", ca, 0));

    RDT_ASSERT_RC(EPERM, rdrwlock_fencing_token(&ra, &t));
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(EINVAL, rdrwlock_fencing_token(&ra, NULL));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));

    /* Every first acquisition, in each form and mode, takes a new and
     * strictly larger token. */
    for (i = 0; i < 8; i++) {
        int rc;
        switch (i) {
        case 0: rc = rdrwlock_rdlock(&ra); break;
        case 1: rc = rdrwlock_wrlock(&ra); break;
        case 2: rc = rdrwlock_tryrdlock(&ra); break;
        case 3: rc = rdrwlock_trywrlock(&ra); break;
        case 4: ts = rdt_abstime(CLOCK_REALTIME, 2000); rc = rdrwlock_timedrdlock(&ra, &ts); break;
        case 5: ts = rdt_abstime(CLOCK_REALTIME, 2000); rc = rdrwlock_timedwrlock(&ra, &ts); break;
        case 6: ts = rdt_abstime(CLOCK_MONOTONIC, 2000); rc = rdrwlock_clockrdlock(&ra, CLOCK_MONOTONIC, &ts); break;
        default: ts = rdt_abstime(CLOCK_MONOTONIC, 2000); rc = rdrwlock_clockwrlock(&ra, CLOCK_MONOTONIC, &ts); break;
        }
        RDT_ASSERT_RC(0, rc);
        t = 0;
        RDT_ASSERT_RC(0, rdrwlock_fencing_token(&ra, &t));
        CU_ASSERT(t > prev);
        if (t <= prev)
            fprintf(stderr, "form %d: token %" PRIu64 " after %" PRIu64 "\n", i, t, prev);
        prev = t;
        RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
        RDT_ASSERT_RC(EPERM, rdrwlock_fencing_token(&ra, &t));
    }
    RDT_ASSERT_EQ_LL((long long)prev, rdt_get_ll(conn(), rdt_fence_key(NULL, "rw-fence")));

    /* Read re-entry keeps the token; another reader gets a larger one and
     * leaves ours alone. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&ra, &t));
    CU_ASSERT(t > prev);
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&ra, &again));
    RDT_ASSERT_EQ_LL((long long)t, (long long)again);
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rb, &tb));
    CU_ASSERT(tb > t);
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&ra, &again));
    RDT_ASSERT_EQ_LL((long long)t, (long long)again);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&ra, &again));
    RDT_ASSERT_EQ_LL((long long)t, (long long)again);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(EPERM, rdrwlock_fencing_token(&ra, &again));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
    prev = tb;

    /* One counter per name for both APIs: the mutex continues it. */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &t));
    CU_ASSERT(t > prev);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rb, &tb));
    CU_ASSERT(tb > t);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));

    /* The counter is never expired or deleted. */
    RDT_ASSERT_EQ_LL((long long)tb, rdt_get_ll(conn(), rdt_fence_key(NULL, "rw-fence")));
    RDT_ASSERT_EQ_LL(-1, icmd("PTTL %s", rdt_fence_key(NULL, "rw-fence")));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-fence"));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* ------------------------------------------------------------------ */
/* read re-entry                                                       */
/* ------------------------------------------------------------------ */

static void test_read_reentry_per_thread(void)
{
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb;
    struct timespec ts;
    holder_t h;
    char mode;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-reent", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-reent", cb));

    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    CU_ASSERT_EQUAL(holders("rw-reent", &mode), 1); /* one share, counted */
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    /* Still held between the two unlocks. */
    CU_ASSERT_EQUAL(holders("rw-reent", &mode), 1);
    CU_ASSERT_EQUAL(mode, 's');
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-reent"));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));

    /* Counted across all read forms: 4 entries, 4 unlocks. */
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&ra));
    ts = rdt_abstime(CLOCK_REALTIME, 1000);
    RDT_ASSERT_RC(0, rdrwlock_timedrdlock(&ra, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 1000);
    RDT_ASSERT_RC(0, rdrwlock_clockrdlock(&ra, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));

    /* Per thread: another thread of the same client has its own share and
     * its own count; its unlocks do not touch ours. */
    holder_start(&h, &ra, NULL, 'r');
    RDT_ASSERT_RC(0, holder_acquired(&h, 5000));
    CU_ASSERT_EQUAL(holders("rw-reent", &mode), 2);
    RDT_ASSERT_RC(0, holder_finish(&h, 5000));
    CU_ASSERT_EQUAL(holders("rw-reent", &mode), 1);

    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    CU_ASSERT_EQUAL(holders("rw-reent", &mode), 1);
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-reent"));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* ------------------------------------------------------------------ */
/* EDEADLK / EBUSY / EPERM for the caller's own holds                  */
/* ------------------------------------------------------------------ */

static void test_deadlock_and_eperm(void)
{
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb, rrec;
    struct timespec ts;
    holder_t h;
    char mode;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-dl", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-dl", cb));

    /* Holding it for reading. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(EDEADLK, rdrwlock_wrlock(&ra));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&ra));
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    RDT_ASSERT_RC(EDEADLK, rdrwlock_timedwrlock(&ra, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 300);
    RDT_ASSERT_RC(EDEADLK, rdrwlock_clockwrlock(&ra, CLOCK_MONOTONIC, &ts));
    /* Unchanged: still one read share, released by one unlock. */
    CU_ASSERT_EQUAL(holders("rw-dl", &mode), 1);
    CU_ASSERT_EQUAL(mode, 's');
    RDT_ASSERT_EQ_LL(0, zcard("rw-dl", ":w"));
    /* Unlock by non-holders: another client, another thread. */
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&rb));
    holder_start(&h, &ra, NULL, 'W'); /* another thread: trywrlock busy */
    RDT_ASSERT_RC(EBUSY, holder_acquired(&h, 5000));
    RDT_ASSERT_RC(-2, holder_finish(&h, 5000));
    CU_ASSERT_EQUAL(holders("rw-dl", &mode), 1);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-dl"));

    /* Holding it for writing. */
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&ra));
    RDT_ASSERT_RC(EDEADLK, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&ra));
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    RDT_ASSERT_RC(EDEADLK, rdrwlock_timedrdlock(&ra, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 300);
    RDT_ASSERT_RC(EDEADLK, rdrwlock_clockrdlock(&ra, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(EDEADLK, rdrwlock_wrlock(&ra));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&ra));
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    RDT_ASSERT_RC(EDEADLK, rdrwlock_timedwrlock(&ra, &ts));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&rb));
    holder_start(&h, &ra, NULL, 'R'); /* another thread of the same client */
    RDT_ASSERT_RC(EBUSY, holder_acquired(&h, 5000));
    RDT_ASSERT_RC(-2, holder_finish(&h, 5000));
    /* One unlock releases it: the failed calls counted nothing. */
    CU_ASSERT_EQUAL(holders("rw-dl", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-dl"));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&rb)); /* nobody holds it */

    /* The attribute type applies to mutexes only: no recursive wrlock. */
    {
        rdlock_attr_t a;
        RDT_ASSERT_RC(0, rdlock_attr_init(&a));
        RDT_ASSERT_RC(0, rdlock_attr_setclient(&a, ca));
        RDT_ASSERT_RC(0, rdlock_attr_settype(&a, RDLOCK_RECURSIVE));
        RDT_ASSERT_RC(0, rdrwlock_init(&rrec, "rw-dl", &a));
        RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));
    }
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&rrec));
    RDT_ASSERT_RC(EDEADLK, rdrwlock_wrlock(&rrec));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rrec));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rrec));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&rrec));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-dl"));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&rrec));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* ------------------------------------------------------------------ */
/* readers really overlap: 3 processes x 2 threads                      */
/* ------------------------------------------------------------------ */

#define OVL_PROCS 3
#define OVL_THREADS 2

typedef struct ovl_child {
    rdt_pipe_t p;
    char ini[400];
} ovl_child_t;

typedef struct ovl_shared {
    rdrwlock_t rw;
    int fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int release;
} ovl_shared_t;

static void *ovl_thread(void *arg)
{
    ovl_shared_t *s = arg;
    uint64_t tok = 0;
    char line[96];
    int rc, rc2 = -1;
    struct timespec ts;

    rc = rdrwlock_rdlock(&s->rw);
    if (rc == 0)
        rdrwlock_fencing_token(&s->rw, &tok);
    snprintf(line, sizeof line, "in %d %" PRIu64, rc, tok);
    pthread_mutex_lock(&s->mu);
    rdt_send(s->fd, line);
    ts = rdt_abstime(CLOCK_REALTIME, 20000);
    while (!s->release)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&s->mu);
    if (rc == 0)
        rc2 = rdrwlock_unlock(&s->rw);
    snprintf(line, sizeof line, "out %d", rc2);
    pthread_mutex_lock(&s->mu);
    rdt_send(s->fd, line);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static int ovl_main(void *arg)
{
    ovl_child_t *oc = arg;
    ovl_shared_t s;
    rdlock_client_t *c = NULL;
    pthread_t th[OVL_THREADS];
    char line[64];
    int i, ret = 0;

    rdt_pipe_child(&oc->p);
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.fd = oc->p.to_parent[1];
    if (rdlock_client_open(&c, oc->ini) != 0)
        return 30;
    if (rdt_rwlock_on(&s.rw, "rw-overlap", c) != 0)
        return 31;
    for (i = 0; i < OVL_THREADS; i++)
        if (pthread_create(&th[i], NULL, ovl_thread, &s) != 0)
            return 32;
    if (rdt_recv(oc->p.to_child[0], line, sizeof line, 20000) < 0 || strcmp(line, "release") != 0)
        ret = 33;
    pthread_mutex_lock(&s.mu);
    s.release = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    for (i = 0; i < OVL_THREADS; i++)
        pthread_join(th[i], NULL);
    if (rdrwlock_destroy(&s.rw) != 0)
        ret = 34;
    if (rdlock_client_close(c) != 0)
        ret = 35;
    return ret;
}

static void test_readers_overlap_processes(void)
{
    ovl_child_t oc[OVL_PROCS];
    pid_t pid[OVL_PROCS];
    uint64_t toks[OVL_PROCS * OVL_THREADS];
    int ntok = 0, i, j, k, rc;
    unsigned long long t;
    char line[96], mode;
    rdlock_client_t *c;
    rdrwlock_t rw;
    rdlock_t m;

    fresh();
    c = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-overlap", c));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "rw-overlap", c, 0));
    for (i = 0; i < OVL_PROCS; i++) {
        write_ini(oc[i].ini, sizeof oc[i].ini, NULL);
        CU_ASSERT_FATAL(rdt_pipe_open(&oc[i].p) == 0);
        pid[i] = rdt_fork(ovl_main, &oc[i]);
        CU_ASSERT_FATAL(pid[i] > 0);
        rdt_pipe_parent(&oc[i].p);
    }
    /* Each of the 6 threads reports that it is inside; none leaves before
     * "release", which is sent only after all 6 are in. */
    for (i = 0; i < OVL_PROCS; i++)
        for (j = 0; j < OVL_THREADS; j++) {
            line[0] = '\0';
            CU_ASSERT(rdt_recv(oc[i].p.to_parent[0], line, sizeof line, 10000) > 0);
            rc = -1;
            t = 0;
            CU_ASSERT_EQUAL(sscanf(line, "in %d %llu", &rc, &t), 2);
            RDT_ASSERT_RC(0, rc);
            if (rc == 0)
                toks[ntok++] = t;
        }
    RDT_ASSERT_EQ_LL(OVL_PROCS * OVL_THREADS, ntok);
    CU_ASSERT_EQUAL(holders("rw-overlap", &mode), OVL_PROCS * OVL_THREADS);
    CU_ASSERT_EQUAL(mode, 's');
    /* Readers take tokens too: all distinct. */
    for (j = 0; j < ntok; j++)
        for (k = 0; k < j; k++)
            CU_ASSERT(toks[j] != toks[k] && toks[j] > 0);
    /* A writer, in either API, is excluded while they hold. */
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&m));
    /* A 7th reader joins them. */
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rw));
    CU_ASSERT_EQUAL(holders("rw-overlap", &mode), OVL_PROCS * OVL_THREADS + 1);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));

    for (i = 0; i < OVL_PROCS; i++)
        rdt_send(oc[i].p.to_child[1], "release");
    for (i = 0; i < OVL_PROCS; i++) {
        for (j = 0; j < OVL_THREADS; j++) {
            line[0] = '\0';
            CU_ASSERT(rdt_recv(oc[i].p.to_parent[0], line, sizeof line, 10000) > 0);
            CU_ASSERT_STRING_EQUAL(line, "out 0");
        }
        RDT_ASSERT_EQ_LL(0, rdt_wait(pid[i], 10000));
        rdt_pipe_close(&oc[i].p);
    }
    RDT_ASSERT_EQ_LL(0, key_exists("rw-overlap"));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
}

/* ------------------------------------------------------------------ */
/* mutex and rwlock of one name are one lock                           */
/* ------------------------------------------------------------------ */

static void test_mutex_rwlock_same_lock(void)
{
    rdlock_client_t *ca, *cb, *cc;
    rdrwlock_t rwa, rwb, rwc;
    rdlock_t ma, mb;
    rdt_actor_t other;
    char ini[400], mode;
    struct timespec ts;
    holder_t h;
    uint64_t tok;
    int ok;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    cc = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rwa, "same", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rwb, "same", cb));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rwc, "same", cc));
    RDT_ASSERT_RC(0, rdt_mutex_on(&ma, "same", ca, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&mb, "same", cb, 0));
    write_ini(ini, sizeof ini, NULL);
    CU_ASSERT_FATAL(rdt_actor_start(&other, ini, "same", NULL) == 0);

    /* 1. Mutex held: the rwlock of that name is busy for others... */
    RDT_ASSERT_RC(0, rdlock_lock(&ma));
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rwb));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rwb));
    ts = rdt_abstime(CLOCK_REALTIME, 200);
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_timedrdlock(&rwb, &ts));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&other, "tryrd", 5000, NULL, NULL));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&other, "trywr", 5000, NULL, NULL));
    holder_start(&h, &rwa, NULL, 'R'); /* another thread, same client */
    RDT_ASSERT_RC(EBUSY, holder_acquired(&h, 5000));
    holder_finish(&h, 5000);
    holder_start(&h, &rwa, NULL, 'W');
    RDT_ASSERT_RC(EBUSY, holder_acquired(&h, 5000));
    holder_finish(&h, 5000);
    /* ...and for the holding thread itself, which cannot release the
     * mutex hold through the rwlock (docs/CONTRACT.md section 10). */
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rwa));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rwa));
    RDT_ASSERT_RC(EDEADLK, rdrwlock_rdlock(&rwa));
    RDT_ASSERT_RC(EDEADLK, rdrwlock_wrlock(&rwa));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&rwa));
    CU_ASSERT_EQUAL(holders("same", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rwb));
    RDT_ASSERT_RC(0, rdlock_unlock(&ma));
    RDT_ASSERT_EQ_LL(0, key_exists("same"));

    /* 2. A read share held: the mutex is busy for others. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&rwa));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mb));
    ts = rdt_abstime(CLOCK_REALTIME, 200);
    RDT_ASSERT_RC(ETIMEDOUT, rdlock_timedlock(&mb, &ts));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&other, "trywr", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&other, "tryrd", 5000, NULL, NULL)); /* readers share */
    RDT_ASSERT_RC(0, rdt_actor_call(&other, "rwunlock", 5000, NULL, NULL));
    /* The reading thread cannot release its share through the mutex, nor
     * take the mutex. */
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&ma));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&ma));
    RDT_ASSERT_RC(EDEADLK, rdlock_lock(&ma));
    RDT_ASSERT_RC(EPERM, rdlock_fencing_token(&ma, &tok));
    CU_ASSERT_EQUAL(holders("same", &mode), 1);
    CU_ASSERT_EQUAL(mode, 's');
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rwa));
    RDT_ASSERT_EQ_LL(0, key_exists("same"));

    /* 3. A write hold: the mutex is busy; cross-API unlock is EPERM. */
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&rwa));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mb));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&ma));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&ma));
    CU_ASSERT_EQUAL(holders("same", &mode), 1);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rwa));
    RDT_ASSERT_RC(0, rdlock_trylock(&mb));
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));

    /* 4. A waiting mutex locker is a waiting writer (docs/CONTRACT.md section 10): new readers
     * queue behind it. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&rwa));
    holder_start(&h, NULL, &mb, 'M');
    WAIT_FOR(ok, zcard("same", ":w") == 1, 3000);
    CU_ASSERT(ok);
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rwc));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&other, "tryrd", 5000, NULL, NULL));
    CU_ASSERT_FALSE(holder_returned(&h));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rwa));
    RDT_ASSERT_RC(0, holder_acquired(&h, 5000));
    CU_ASSERT_EQUAL(holders("same", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rwc));
    RDT_ASSERT_RC(0, holder_finish(&h, 5000));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rwc));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rwc));

    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&other));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rwa));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rwb));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rwc));
    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(ca);
    rdt_close_client(cb);
    rdt_close_client(cc);
}

/* ------------------------------------------------------------------ */
/* writer preference                                                   */
/* ------------------------------------------------------------------ */

static void test_writer_preference(void)
{
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb;
    rdt_actor_t reader, writer;
    char ini[400], mode;
    struct timespec ts;
    long long t0, took;
    int ok, rc = -1;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-pref", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-pref", cb));
    write_ini(ini, sizeof ini, NULL);
    CU_ASSERT_FATAL(rdt_actor_start(&reader, ini, "rw-pref", NULL) == 0);
    CU_ASSERT_FATAL(rdt_actor_start(&writer, ini, "rw-pref", NULL) == 0);

    /* Two readers hold: this thread and another process. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "rdlock", 5000, NULL, NULL));
    /* A writer in a third process blocks. */
    CU_ASSERT_EQUAL(rdt_actor_send(&writer, "wrlock"), 0);
    WAIT_FOR(ok, zcard("rw-pref", ":w") == 1, 3000);
    CU_ASSERT(ok);
    CU_ASSERT(rdt_actor_silent(&writer));

    /* New readers wait behind it: try is EBUSY, timed ones time out. */
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rb));
    ts = rdt_abstime(CLOCK_REALTIME, 400);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_timedrdlock(&rb, &ts));
    took = rdt_now_ms() - t0;
    CU_ASSERT(took >= 380 && took <= 1500);
    ts = rdt_abstime(CLOCK_MONOTONIC, 300);
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_clockrdlock(&rb, CLOCK_MONOTONIC, &ts));
    CU_ASSERT_EQUAL(holders("rw-pref", &mode), 2);

    /* Threads that already hold a share may take it again meanwhile. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&ra));
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    RDT_ASSERT_RC(0, rdrwlock_timedrdlock(&ra, &ts));
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "rdlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "tryrd", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "rwunlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "rwunlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    CU_ASSERT(rdt_actor_silent(&writer));
    RDT_ASSERT_EQ_LL(1, zcard("rw-pref", ":w"));

    /* One reader leaves: the writer still waits for the other. */
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    CU_ASSERT_EQUAL(holders("rw-pref", &mode), 1);
    CU_ASSERT_EQUAL(rdt_actor_reply(&writer, 300, NULL, NULL), RDT_ACTOR_NOREPLY); /* bounded negative check */
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&ra)); /* ra is a new reader now */

    /* The last one leaves: the writer gets in promptly. */
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "rwunlock", 5000, NULL, NULL));
    rc = rdt_actor_reply(&writer, 5000, NULL, NULL);
    CU_ASSERT_NOT_EQUAL(rc, RDT_ACTOR_NOREPLY);
    took = rdt_now_ms() - t0;
    RDT_ASSERT_RC(0, rc);
    printf("[writer in %lld ms after the last reader left] ", took);
    CU_ASSERT(took <= 1000);
    CU_ASSERT_EQUAL(holders("rw-pref", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_EQ_LL(0, zcard("rw-pref", ":w")); /* its mark is gone */
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rb));
    RDT_ASSERT_RC(EBUSY, rdt_actor_call(&reader, "tryrd", 5000, NULL, NULL));

    RDT_ASSERT_RC(0, rdt_actor_call(&writer, "rwunlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));

    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&reader));
    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&writer));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* A stream of overlapping readers cannot starve a writer. */
#define STREAM_THREADS 4

typedef struct stream {
    rdrwlock_t *rw;
    int idx;
    volatile int *stop;
    int iters, errors;
} stream_t;

static void *stream_thread(void *arg)
{
    stream_t *s = arg;
    long hold = 40 + 15 * s->idx; /* critical-section length, desynchronised */
    int rc;

    while (!__atomic_load_n(s->stop, __ATOMIC_ACQUIRE)) {
        rc = rdrwlock_rdlock(s->rw);
        if (rc != 0) {
            __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
            rdt__nap_ms(10);
            continue;
        }
        rdt__nap_ms(hold);
        if (rdrwlock_unlock(s->rw) != 0)
            __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->iters, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static int stream_iters(stream_t *s, int n, int *min)
{
    int i, total = 0, v;
    *min = -1;
    for (i = 0; i < n; i++) {
        v = __atomic_load_n(&s[i].iters, __ATOMIC_ACQUIRE);
        total += v;
        if (*min < 0 || v < *min)
            *min = v;
    }
    return total;
}

static void test_writer_not_starved(void)
{
    rdlock_client_t *cr, *cw;
    rdrwlock_t rr, rw;
    stream_t st[STREAM_THREADS];
    pthread_t th[STREAM_THREADS];
    volatile int stop = 0;
    rdt_actor_t writer;
    char ini[400], mode;
    int i, ok, min, busy = 0, samples = 0, rc = -1, total0, errors = 0;
    long long waited = -1;

    fresh();
    cr = rdt_open_client(&srv, NULL);
    cw = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rr, "rw-stream", cr));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-stream", cw));
    write_ini(ini, sizeof ini, NULL);
    CU_ASSERT_FATAL(rdt_actor_start(&writer, ini, "rw-stream", NULL) == 0);

    memset(st, 0, sizeof st);
    for (i = 0; i < STREAM_THREADS; i++) {
        st[i].rw = &rr;
        st[i].idx = i;
        st[i].stop = &stop;
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, stream_thread, &st[i]) == 0);
    }
    /* The stream is running: every thread has been in a few times... */
    WAIT_FOR(ok, (stream_iters(st, STREAM_THREADS, &min), min >= 3), 5000);
    CU_ASSERT(ok);
    /* ...and there is practically always a reader inside (a writer that
     * does not wait cannot get in). */
    while (samples < 20) {
        int r = rdrwlock_trywrlock(&rw);
        if (r == EBUSY)
            busy++;
        else if (r == 0)
            rdrwlock_unlock(&rw);
        samples++;
        rdt__nap_ms(20); /* pacing of the samples */
    }
    printf("[trywrlock busy %d/%d against the stream] ", busy, samples);
    CU_ASSERT(busy >= 16);

    /* A waiting writer gets in within a bound nonetheless. */
    CU_ASSERT_EQUAL(rdt_actor_send(&writer, "timedwr 8000"), 0);
    rc = rdt_actor_reply(&writer, 10000, NULL, &waited);
    CU_ASSERT_NOT_EQUAL(rc, RDT_ACTOR_NOREPLY);
    RDT_ASSERT_RC(0, rc);
    printf("[writer waited %lld ms] ", waited);
    CU_ASSERT(waited >= 0 && waited < 2000);
    CU_ASSERT_EQUAL(holders("rw-stream", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    /* While it holds, the readers wait. */
    total0 = stream_iters(st, STREAM_THREADS, &min);
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rw));
    RDT_ASSERT_RC(0, rdt_actor_call(&writer, "rwunlock", 5000, NULL, NULL));
    /* Then the stream resumes. */
    WAIT_FOR(ok, stream_iters(st, STREAM_THREADS, &min) >= total0 + STREAM_THREADS, 5000);
    CU_ASSERT(ok);

    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < STREAM_THREADS; i++) {
        CU_ASSERT(join_within(th[i], 10000) == 0);
        errors += st[i].errors;
    }
    RDT_ASSERT_EQ_LL(0, errors);
    RDT_ASSERT_EQ_LL(0, key_exists("rw-stream"));
    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&writer));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rr));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    rdt_close_client(cr);
    rdt_close_client(cw);
}

/* ------------------------------------------------------------------ */
/* writers that give up or die do not hold readers back                */
/* ------------------------------------------------------------------ */

static void test_timed_out_writer_leaves_no_mark(void)
{
    rdlock_client_t *ca, *cb, *cc;
    rdrwlock_t ra, rb, rc_;
    rdt_actor_t writer;
    char ini[400];
    struct timespec ts;
    long long ms = -1;
    int rc = -1, ok;
    holder_t h;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    cc = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-tmo", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-tmo", cb));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rc_, "rw-tmo", cc));
    write_ini(ini, sizeof ini, NULL);
    CU_ASSERT_FATAL(rdt_actor_start(&writer, ini, "rw-tmo", NULL) == 0);

    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));

    /* timedwrlock in another process: while it waits, readers wait... */
    CU_ASSERT_EQUAL(rdt_actor_send(&writer, "timedwr 600"), 0);
    WAIT_FOR(ok, zcard("rw-tmo", ":w") == 1, 3000);
    CU_ASSERT(ok);
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rb));
    rc = rdt_actor_reply(&writer, 5000, NULL, &ms);
    CU_ASSERT_NOT_EQUAL(rc, RDT_ACTOR_NOREPLY);
    RDT_ASSERT_RC(ETIMEDOUT, rc);
    CU_ASSERT(ms >= 580);
    /* ...after it timed out, none: its mark is gone at once. */
    RDT_ASSERT_EQ_LL(0, icmd("EXISTS rdlock:{rw-tmo}:w"));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));

    /* The same for clockwrlock (CLOCK_MONOTONIC) in another process. */
    CU_ASSERT_EQUAL(rdt_actor_send(&writer, "clockwr 400"), 0);
    WAIT_FOR(ok, zcard("rw-tmo", ":w") == 1, 3000);
    CU_ASSERT(ok);
    rc = rdt_actor_reply(&writer, 5000, NULL, &ms);
    CU_ASSERT_NOT_EQUAL(rc, RDT_ACTOR_NOREPLY);
    RDT_ASSERT_RC(ETIMEDOUT, rc);
    RDT_ASSERT_EQ_LL(0, icmd("EXISTS rdlock:{rw-tmo}:w"));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));

    /* A reader that was already waiting behind the timed-out writer gets
     * in as soon as the writer gives up. */
    CU_ASSERT_EQUAL(rdt_actor_send(&writer, "timedwr 700"), 0);
    WAIT_FOR(ok, zcard("rw-tmo", ":w") == 1, 3000);
    CU_ASSERT(ok);
    holder_start(&h, &rc_, NULL, 'r');
    WAIT_FOR(ok, zcard("rw-tmo", ":r") == 1, 3000);
    CU_ASSERT(ok);
    CU_ASSERT_FALSE(holder_returned(&h));
    rc = rdt_actor_reply(&writer, 5000, NULL, &ms);
    CU_ASSERT_NOT_EQUAL(rc, RDT_ACTOR_NOREPLY);
    RDT_ASSERT_RC(ETIMEDOUT, rc);
    RDT_ASSERT_RC(0, holder_acquired(&h, 1500));
    CU_ASSERT_EQUAL(holders("rw-tmo", NULL), 2);
    RDT_ASSERT_RC(0, holder_finish(&h, 5000));
    RDT_ASSERT_EQ_LL(0, icmd("EXISTS rdlock:{rw-tmo}:w"));

    /* In this process with another client, too. */
    ts = rdt_abstime(CLOCK_MONOTONIC, 300);
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_clockwrlock(&rc_, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_EQ_LL(0, icmd("EXISTS rdlock:{rw-tmo}:w"));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));

    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-tmo"));
    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&writer));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rc_));
    rdt_close_client(ca);
    rdt_close_client(cb);
    rdt_close_client(cc);
}

static void test_crashed_waiting_writer(void)
{
    const unsigned lease = 500, retry = 100;
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb;
    rdt_actor_t writer;
    char ini[400], extra[128];
    struct timespec ts;
    long long t0, took;
    int ok;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-crash", ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rb, "rw-crash", cb));
    snprintf(extra, sizeof extra, "[lock]\nlease_ms = %u\nretry_interval_ms = %u\n", lease, retry);
    write_ini(ini, sizeof ini, extra);
    CU_ASSERT_FATAL(rdt_actor_start(&writer, ini, "rw-crash", NULL) == 0);

    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    CU_ASSERT_EQUAL(rdt_actor_send(&writer, "wrlock"), 0);
    WAIT_FOR(ok, zcard("rw-crash", ":w") == 1, 3000);
    CU_ASSERT(ok);
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rb)); /* the mark is in force */

    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_actor_kill(&writer));
    t0 = rdt_now_ms();
    ts = rdt_abstime(CLOCK_REALTIME, 4000);
    RDT_ASSERT_RC(0, rdrwlock_timedrdlock(&rb, &ts));
    took = rdt_now_ms() - t0;
    printf("[new reader in %lld ms after the waiting writer died (mark lease %u)] ", took, lease);
    CU_ASSERT(took <= (long long)(lease + retry) + 600);
    RDT_ASSERT_EQ_LL(0, zcard("rw-crash", ":w"));
    CU_ASSERT_EQUAL(holders("rw-crash", NULL), 2);

    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-crash"));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

/* ------------------------------------------------------------------ */
/* leases of shares                                                    */
/* ------------------------------------------------------------------ */

static void test_per_reader_leases(void)
{
    const unsigned lease = 500;
    rdlock_client_t *cw, *cx;
    rdrwlock_t rw, rx;
    rdt_actor_t r1, r2;
    char ini[400], extra[64], f1[128], f2[128], fx[128], mode;
    long long d1 = -1, d2 = -1, d1b = -1, killed_srv, now_srv;
    long r1pid;

    fresh();
    cw = rdt_open_client(&srv, NULL);
    cx = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-lease", cw));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rx, "rw-lease", cx));
    snprintf(extra, sizeof extra, "[lock]\nlease_ms = %u\n", lease);
    write_ini(ini, sizeof ini, extra);
    CU_ASSERT_FATAL(rdt_actor_start(&r1, ini, "rw-lease", NULL) == 0);
    CU_ASSERT_FATAL(rdt_actor_start(&r2, ini, "rw-lease", NULL) == 0);

    RDT_ASSERT_RC(0, rdt_actor_call(&r1, "rdlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&r2, "rdlock", 5000, NULL, NULL));
    CU_ASSERT_EQUAL(holders_ex("rw-lease", &mode, r1.pid, f1, sizeof f1, &d1), 2);
    holders_ex("rw-lease", NULL, r2.pid, f2, sizeof f2, &d2);
    CU_ASSERT(f1[0] != '\0' && f2[0] != '\0' && strcmp(f1, f2) != 0);
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rw));

    /* SIGKILL r1: its watchdog dies with it. */
    r1pid = (long)r1.pid;
    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_actor_kill(&r1));
    killed_srv = rdt_server_ms(conn());
    rdt__nap_ms(3 * lease); /* wall time for the dead share's lease to run out */

    /* r1's share expired by itself within its lease of the kill; r2's is
     * alive and renewed. */
    now_srv = rdt_server_ms(conn());
    holders_ex("rw-lease", NULL, r1pid, f1, sizeof f1, &d1b);
    printf("[dead share: deadline %lld ms after the kill] ", d1b - killed_srv);
    if (d1b >= 0) {
        CU_ASSERT(d1b <= killed_srv + lease + 50);
        CU_ASSERT(d1b < now_srv);
    }
    holders_ex("rw-lease", &mode, r2.pid, f2, sizeof f2, &d2);
    CU_ASSERT(f2[0] != '\0');
    CU_ASSERT(d2 > now_srv);
    CU_ASSERT_EQUAL(mode, 's');
    /* A writer is still excluded by the live share. */
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rw));
    /* A new reader joins; the dead share is not counted any more. */
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&rx));
    holders_ex("rw-lease", NULL, r1pid, fx, sizeof fx, NULL);
    CU_ASSERT_EQUAL(fx[0], '\0');
    CU_ASSERT_EQUAL(holders("rw-lease", NULL), 2);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rx));

    /* The live reader's unlock finds its share intact. */
    RDT_ASSERT_RC(0, rdt_actor_call(&r2, "rwunlock", 5000, NULL, NULL));
    /* And then the writer gets in at once. */
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));

    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&r2));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rx));
    rdt_close_client(cw);
    rdt_close_client(cx);
}

/* Without a new reader to tidy up: the dead share alone does not hold the
 * writer back once the live reader leaves. */
static void test_dead_share_does_not_outlive_lease(void)
{
    const unsigned lease = 500;
    rdlock_client_t *cw;
    rdrwlock_t rw;
    rdt_actor_t r1, r2;
    char ini[400], extra[64];
    long long t0;

    fresh();
    cw = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-lease2", cw));
    snprintf(extra, sizeof extra, "[lock]\nlease_ms = %u\n", lease);
    write_ini(ini, sizeof ini, extra);
    CU_ASSERT_FATAL(rdt_actor_start(&r1, ini, "rw-lease2", NULL) == 0);
    CU_ASSERT_FATAL(rdt_actor_start(&r2, ini, "rw-lease2", NULL) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&r1, "rdlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&r2, "rdlock", 5000, NULL, NULL));
    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_actor_kill(&r1));
    t0 = rdt_now_ms();
    rdt__nap_ms(3 * lease); /* wall time: the dead share expires, the live one is renewed */
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&rw)); /* the live share */
    RDT_ASSERT_RC(0, rdt_actor_call(&r2, "rwunlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rw));
    printf("[writer in %lld ms after one of two readers died] ", rdt_now_ms() - t0);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&r2));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    rdt_close_client(cw);
}

static void test_lost_share(void)
{
    const unsigned lease = 600, interval = 200;
    rdlock_client_t *ca, *cb;
    rdrwlock_t ra, rb;
    char fa[128];
    long long t0, took;
    uint64_t tok;
    holder_t h;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cb = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_rw_full(&ra, "rw-lost", ca, lease, -1, 0, rdt_lost_cb, &lostA));
    RDT_ASSERT_RC(0, init_rw_full(&rb, "rw-lost", cb, lease, -1, 0, rdt_lost_cb, &lostB));

    /* DEL the lock under a sole reader. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    t0 = rdt_now_ms();
    RDT_ASSERT_EQ_LL(1, icmd("DEL rdlock:{rw-lost}"));
    CU_ASSERT_EQUAL(rdt_lost_wait(&lostA, 1, 3000), 1);
    took = lostA.first_ms - t0;
    printf("[lost callback %lld ms after DEL] ", took);
    CU_ASSERT(took <= (long long)interval + 500);
    CU_ASSERT_STRING_EQUAL(lostA.name, "rw-lost");
    RDT_ASSERT_EQ_LL(0, key_exists("rw-lost")); /* nothing recreated */
    rdt__nap_ms(2 * interval + 100);                    /* more watchdog rounds */
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lostA));
    RDT_ASSERT_RC(ENOLCK, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(EPERM, rdrwlock_fencing_token(&ra, &tok));
    RDT_ASSERT_EQ_LL(1, rdt_lost_count(&lostA));

    /* A re-entered share: the whole local hold is cleared. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_EQ_LL(1, icmd("DEL rdlock:{rw-lost}"));
    CU_ASSERT_EQUAL(rdt_lost_wait(&lostA, 2, 3000), 2);
    /* Inner unlock is local (0); the final one reports the loss. */
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(ENOLCK, rdrwlock_unlock(&ra));
    RDT_ASSERT_RC(EPERM, rdrwlock_unlock(&ra));

    /* Two readers; one share removed: only that one is lost. */
    rdt_lost_reset(&lostA);
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&rb));
    CU_ASSERT_EQUAL(holders_ex("rw-lost", NULL, (long)getpid(), fa, sizeof fa, NULL), 2);
    CU_ASSERT_FATAL(fa[0] != '\0'); /* one of the two (both are this pid) */
    /* fa: any one of the two fields; remove it and see whose loss it is. */
    RDT_ASSERT_EQ_LL(1, icmd("HDEL rdlock:{rw-lost} %s", fa));
    t0 = rdt_now_ms();
    while (rdt_lost_count(&lostA) + rdt_lost_count(&lostB) == 0 && rdt_now_ms() - t0 < 3000)
        rdt__nap_ms(5); /* bounded polling of the callbacks */
    rdt__nap_ms(2 * interval + 100); /* more rounds: the other share must stay */
    CU_ASSERT_EQUAL(rdt_lost_count(&lostA) + rdt_lost_count(&lostB), 1);
    CU_ASSERT_EQUAL(holders("rw-lost", NULL), 1);
    if (rdt_lost_count(&lostA) == 1) {
        RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
        RDT_ASSERT_RC(ENOLCK, rdrwlock_unlock(&ra));
    } else {
        RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
        RDT_ASSERT_RC(ENOLCK, rdrwlock_unlock(&rb));
    }
    RDT_ASSERT_EQ_LL(0, key_exists("rw-lost"));

    /* A lost write hold too. */
    rdt_lost_reset(&lostA);
    holder_start(&h, &ra, NULL, 'w');
    RDT_ASSERT_RC(0, holder_acquired(&h, 5000));
    RDT_ASSERT_EQ_LL(1, icmd("DEL rdlock:{rw-lost}"));
    CU_ASSERT_EQUAL(rdt_lost_wait(&lostA, 1, 3000), 1);
    RDT_ASSERT_RC(ENOLCK, holder_finish(&h, 5000));

    /* The name is usable again. */
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rb));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}


/* ------------------------------------------------------------------ */
/* many readers (issue 15: the readers' index, rdlock:{N}:sd)          */
/* ------------------------------------------------------------------ */

#define MANY_LIVE 150 /* shares in this process, renewed by the watchdog */
#define MANY_DEAD 50  /* shares of a child that is SIGKILLed */
#define MANY_LEASE 600

static rdt_pipe_t g_mpipe;
static char g_many_ini[400];
static int g_many_ok;

static void *many_child_reader(void *arg)
{
    if (rdrwlock_rdlock((rdrwlock_t *)arg) == 0)
        __atomic_add_fetch(&g_many_ok, 1, __ATOMIC_SEQ_CST);
    for (;;)
        pause(); /* holds until the process is killed */
    return NULL;
}

/* A child with MANY_DEAD threads, each holding a share of name arg (lease
 * MANY_LEASE, watchdog on), until it is SIGKILLed. */
static int many_child(void *arg)
{
    rdlock_client_t *c;
    rdrwlock_t rw;
    pthread_t th;
    long long end = rdt_now_ms() + 20000;
    int i;

    rdt_child_begin(&g_mpipe);
    if (rdlock_client_open(&c, g_many_ini) != 0)
        return 2;
    if (init_rw_full(&rw, (const char *)arg, c, 0, -1, 0, NULL, NULL) != 0)
        return 3;
    for (i = 0; i < MANY_DEAD; i++)
        if (pthread_create(&th, NULL, many_child_reader, &rw) != 0)
            return 4;
    while (__atomic_load_n(&g_many_ok, __ATOMIC_SEQ_CST) < MANY_DEAD && rdt_now_ms() < end)
        rdt__nap_ms(5);
    rdt_send(g_mpipe.to_parent[1], __atomic_load_n(&g_many_ok, __ATOMIC_SEQ_CST) == MANY_DEAD ? "held" : "short");
    for (;;)
        pause();
    return 0;
}

/* Holder fields of NAME whose deadline is after the server's now, and the
 * latest deadline of all (server ms), read from the hash itself. */
static int live_fields(const char *name, long long *maxd)
{
    long long now = rdt_server_ms(conn());
    redisReply *r = (redisReply *)redisCommand(conn(), "HGETALL rdlock:{%s}", name);
    int n = 0;
    size_t i;
    *maxd = 0;
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (i = 0; i + 1 < r->elements; i += 2) {
            long long d;
            if (strcmp(r->element[i]->str, "m") == 0 || sscanf(r->element[i + 1]->str, "%lld;", &d) != 1)
                continue;
            if (d > now)
                n++;
            if (d > *maxd)
                *maxd = d;
        }
    if (r)
        freeReplyObject(r);
    return n;
}

static void start_child_readers(const char *name, pid_t *pid)
{
    char extra[64];
    snprintf(extra, sizeof extra, "[lock]\nlease_ms = %u\n", MANY_LEASE);
    write_ini(g_many_ini, sizeof g_many_ini, extra);
    *pid = rdt_spawn(&g_mpipe, many_child, (void *)name);
    CU_ASSERT_FATAL(*pid > 0);
    CU_ASSERT_EQUAL_FATAL(rdt_expect_line(&g_mpipe, "held", 30000, "readers child"), 0);
}

static void kill_child_readers(pid_t pid)
{
    kill(pid, SIGKILL);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_wait(pid, 10000));
    rdt_pipe_close(&g_mpipe);
}

/* 200 readers of one name from two processes; the 50 of one are SIGKILLed
 * and expire by their own leases while the 150 others are renewed (short
 * lease: the index must follow the renewals).  The status lists the live
 * ones; a queued writer holds back new readers, does not get in while any
 * share is live, and gets in as soon as the last one unlocks. */
static void test_many_readers(void)
{
    static holder_t hs[MANY_LIVE];
    static const char N[] = "rw-many";
    rdlock_client_t *ca, *cw;
    rdrwlock_t ra, rw, rn;
    rdlock_status_t st;
    holder_t w;
    char extra[64];
    long long maxd, t0;
    pid_t pid;
    int i, ok;

    fresh();
    snprintf(extra, sizeof extra, "[lock]\nlease_ms = %u\n", MANY_LEASE);
    ca = rdt_open_client(&srv, extra);
    cw = rdt_open_client(&srv, extra);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, N, ca));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, N, cw));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rn, N, cw));
    for (i = 0; i < MANY_LIVE; i++) {
        holder_start(&hs[i], &ra, NULL, 'r');
        RDT_ASSERT_RC(0, holder_acquired(&hs[i], 10000));
    }
    start_child_readers(N, &pid);
    CU_ASSERT_EQUAL(holders(N, NULL), MANY_LIVE + MANY_DEAD);
    RDT_ASSERT_EQ_LL(1, icmd("EXISTS rdlock:{%s}:sd", N)); /* the index is in use */
    RDT_ASSERT_EQ_LL(MANY_LIVE + MANY_DEAD, icmd("ZCARD rdlock:{%s}:sd", N));
    RDT_ASSERT_RC(0, rdlock_status_name(cw, N, &st));
    CU_ASSERT_EQUAL(st.mode, 's');
    CU_ASSERT_EQUAL(st.nholders, MANY_LIVE + MANY_DEAD);
    rdlock_status_free(&st);

    kill_child_readers(pid);
    holder_start(&w, &rw, NULL, 'w');
    WAIT_FOR(ok, zcard(N, ":w") == 1, 5000);
    CU_ASSERT_FATAL(ok);
    rdt__nap_ms(3 * MANY_LEASE); /* the dead shares run out; the live ones are renewed */
    CU_ASSERT_FALSE(holder_returned(&w));
    CU_ASSERT_EQUAL(live_fields(N, &maxd), MANY_LIVE);
    RDT_ASSERT_RC(0, rdlock_status_name(cw, N, &st));
    CU_ASSERT_EQUAL(st.mode, 's');
    CU_ASSERT_EQUAL(st.nholders, MANY_LIVE); /* the live readers, all of them */
    rdlock_status_free(&st);
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&rn)); /* writer preference */

    /* All but one live reader leave: the writer still waits. */
    for (i = 0; i < MANY_LIVE - 1; i++)
        RDT_ASSERT_RC(0, holder_finish(&hs[i], 5000));
    rdt__nap_ms(MANY_LEASE); /* renewals of the last one go on */
    CU_ASSERT_FALSE(holder_returned(&w));
    CU_ASSERT_EQUAL(live_fields(N, &maxd), 1);
    /* The last one leaves: the lock goes to the writer at once. */
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, holder_finish(&hs[MANY_LIVE - 1], 5000));
    RDT_ASSERT_RC(0, holder_acquired(&w, 5000));
    printf("[writer in %lld ms after the last of %d readers left] ", w.acq_at - t0, MANY_LIVE);
    CU_ASSERT(w.acq_at - t0 <= 1000);
    RDT_ASSERT_RC(0, holder_finish(&w, 5000));
    RDT_ASSERT_EQ_LL(0, key_exists(N));
    RDT_ASSERT_EQ_LL(0, icmd("EXISTS rdlock:{%s}:sd", N));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rn));
    rdt_close_client(ca);
    rdt_close_client(cw);
}

/* Many readers without a watchdog (their leases just run out) and a
 * SIGKILLed child's readers: a blocked writer gets in when the latest
 * lease ends, not before and not much later.  Then reset clears the
 * index with the rest. */
#define UNWATCHED 100
/* Long enough to outlast starting the 100 holders one after the other,
 * also under valgrind (where 1500 ms did not). */
#define UNWATCHED_LEASE 5000
static void test_many_readers_leases_end(void)
{
    static holder_t hs[UNWATCHED];
    static const char N[] = "rw-many2";
    rdlock_client_t *ca, *cw;
    rdrwlock_t ra, rw;
    holder_t w;
    long long maxd, off, got_srv;
    pid_t pid;
    int i, ok;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    cw = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, init_rw_full(&ra, N, ca, UNWATCHED_LEASE, 0, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, N, cw));
    start_child_readers(N, &pid);
    for (i = 0; i < UNWATCHED; i++) {
        holder_start(&hs[i], &ra, NULL, 'r');
        RDT_ASSERT_RC(0, holder_acquired(&hs[i], 10000));
    }
    kill_child_readers(pid);
    /* Every unwatched share is live; the killed child's are live for what
     * is left of their last renewal (MANY_LEASE), which a slow run (valgrind)
     * may already have used up. */
    ok = live_fields(N, &maxd);
    CU_ASSERT(ok >= UNWATCHED && ok <= UNWATCHED + MANY_DEAD);
    RDT_ASSERT_EQ_LL(1, icmd("EXISTS rdlock:{%s}:sd", N));
    off = rdt_server_ms(conn()) - rdt_now_ms();
    holder_start(&w, &rw, NULL, 'w');
    RDT_ASSERT_RC(0, holder_acquired(&w, 2 * UNWATCHED_LEASE + 5000));
    got_srv = w.acq_at + off;
    printf("[writer in %lld ms after the latest of %d leases ended] ", got_srv - maxd, UNWATCHED + MANY_DEAD);
    CU_ASSERT(got_srv >= maxd - 20); /* 20: the two clocks' offset, sampled */
    CU_ASSERT(got_srv <= maxd + 600);
    RDT_ASSERT_RC(0, holder_finish(&w, 5000));
    for (i = 0; i < UNWATCHED; i++)
        RDT_ASSERT_RC(ENOLCK, holder_finish(&hs[i], 5000));

    /* reset clears the index too */
    for (i = 0; i < 40; i++) {
        holder_start(&hs[i], &rw, NULL, 'r');
        RDT_ASSERT_RC(0, holder_acquired(&hs[i], 10000));
    }
    WAIT_FOR(ok, icmd("ZCARD rdlock:{%s}:sd", N) == 40, 2000);
    CU_ASSERT(ok);
    RDT_ASSERT_RC(0, rdlock_reset_name(ca, N));
    RDT_ASSERT_EQ_LL(0, icmd("EXISTS rdlock:{%s}:sd", N));
    RDT_ASSERT_EQ_LL(0, key_exists(N));
    for (i = 0; i < 40; i++)
        RDT_ASSERT_RC(ENOLCK, holder_finish(&hs[i], 5000));
    RDT_ASSERT_RC(0, rdrwlock_trywrlock(&ra));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    rdt_close_client(ca);
    rdt_close_client(cw);
}

/* ------------------------------------------------------------------ */
/* wake-ups                                                            */
/* ------------------------------------------------------------------ */

#define SLOW_POLL "[lock]\nretry_interval_ms = 2000\nretry_jitter_ms = 0\n"

static void test_wakeup_readers_on_writer_unlock(void)
{
    rdlock_client_t *cw;
    rdrwlock_t rw;
    rdt_actor_t r1, r2;
    char ini[400], mode;
    long long t0, took1 = -1, took2 = -1;
    int ok, rc1 = -1, rc2 = -1;

    fresh();
    cw = rdt_open_client(&srv, NULL); /* default lease 30 s: the readers' re-check is their 2 s interval */
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-wake", cw));
    write_ini(ini, sizeof ini, SLOW_POLL);
    CU_ASSERT_FATAL(rdt_actor_start(&r1, ini, "rw-wake", NULL) == 0);
    CU_ASSERT_FATAL(rdt_actor_start(&r2, ini, "rw-wake", NULL) == 0);

    RDT_ASSERT_RC(0, rdrwlock_wrlock(&rw));
    CU_ASSERT_EQUAL(rdt_actor_send(&r1, "rdlock"), 0);
    CU_ASSERT_EQUAL(rdt_actor_send(&r2, "rdlock"), 0);
    /* Both queued and subscribed. */
    WAIT_FOR(ok, zcard("rw-wake", ":r") == 2 && numsub("rw-wake") == 2, 5000);
    CU_ASSERT(ok);
    /* Let them settle into their 2 s wait (not synchronisation: it only
     * makes sure the unlock does not coincide with their own re-check). */
    rdt__nap_ms(300);
    CU_ASSERT(rdt_actor_silent(&r1) && rdt_actor_silent(&r2));

    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    if ((rc1 = rdt_actor_reply(&r1, 5000, NULL, NULL)) != RDT_ACTOR_NOREPLY)
        took1 = rdt_now_ms() - t0;
    if ((rc2 = rdt_actor_reply(&r2, 5000, NULL, NULL)) != RDT_ACTOR_NOREPLY)
        took2 = rdt_now_ms() - t0;
    printf("[readers in %lld and %lld ms after the writer's unlock, retry interval 2000] ", took1, took2);
    RDT_ASSERT_RC(0, rc1);
    RDT_ASSERT_RC(0, rc2);
    CU_ASSERT(took1 >= 0 && took1 <= 700);
    CU_ASSERT(took2 >= 0 && took2 <= 700);
    CU_ASSERT_EQUAL(holders("rw-wake", &mode), 2);
    CU_ASSERT_EQUAL(mode, 's');
    RDT_ASSERT_EQ_LL(0, zcard("rw-wake", ":r"));

    RDT_ASSERT_RC(0, rdt_actor_call(&r1, "rwunlock", 5000, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_call(&r2, "rwunlock", 5000, NULL, NULL));
    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&r1));
    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&r2));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    rdt_close_client(cw);
}

static void test_wakeup_writer_on_last_reader(void)
{
    rdlock_client_t *ca;
    rdrwlock_t ra;
    rdt_actor_t reader, writer;
    char ini_r[400], ini_w[400], mode;
    long long t0, took = -1;
    int ok, rc = -1;

    fresh();
    ca = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&ra, "rw-wake2", ca));
    write_ini(ini_r, sizeof ini_r, NULL);
    write_ini(ini_w, sizeof ini_w, SLOW_POLL);
    CU_ASSERT_FATAL(rdt_actor_start(&reader, ini_r, "rw-wake2", NULL) == 0);
    CU_ASSERT_FATAL(rdt_actor_start(&writer, ini_w, "rw-wake2", NULL) == 0);

    /* Two readers with 30 s leases (so the writer's re-check is its 2 s
     * interval). */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&ra));
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "rdlock", 5000, NULL, NULL));
    CU_ASSERT_EQUAL(rdt_actor_send(&writer, "wrlock"), 0);
    /* Queued, and in BLPOP for its hand-over (no subscription). */
    WAIT_FOR(ok, zcard("rw-wake2", ":w") == 1, 5000);
    ok = ok && rdt_wait_blocked(g_rc, 1, 5000);
    CU_ASSERT(ok);
    rdt__nap_ms(300); /* settle into the 2 s wait, as above */

    /* Not the last reader: the writer keeps waiting. */
    RDT_ASSERT_RC(0, rdt_actor_call(&reader, "rwunlock", 5000, NULL, NULL));
    CU_ASSERT_EQUAL(holders("rw-wake2", &mode), 1);
    CU_ASSERT(rdt_actor_silent(&writer));

    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdrwlock_unlock(&ra));
    if ((rc = rdt_actor_reply(&writer, 5000, NULL, NULL)) != RDT_ACTOR_NOREPLY)
        took = rdt_now_ms() - t0;
    printf("[writer in %lld ms after the last reader left, retry interval 2000] ", took);
    RDT_ASSERT_RC(0, rc);
    CU_ASSERT(took >= 0 && took <= 700);
    CU_ASSERT_EQUAL(holders("rw-wake2", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_RC(0, rdt_actor_call(&writer, "rwunlock", 5000, NULL, NULL));

    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&reader));
    RDT_ASSERT_EQ_LL(0, rdt_actor_stop(&writer));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&ra));
    rdt_close_client(ca);
}

/* ------------------------------------------------------------------ */
/* fork                                                                */
/* ------------------------------------------------------------------ */

typedef struct forkctx {
    rdrwlock_t *rw;
    rdt_pipe_t p;
} forkctx_t;

/* Child of a reader: "<unlock> <token> <trywr> <tryrd> <tok>", then after
 * "go": "<unlock> <unlock again>". */
static int fork_reader_child(void *arg)
{
    forkctx_t *f = arg;
    char line[160];
    uint64_t tok = 0, t2 = 0;
    int r1, r2, r3, r4;

    rdt_pipe_child(&f->p);
    r1 = rdrwlock_unlock(f->rw);
    r2 = rdrwlock_fencing_token(f->rw, &tok);
    r3 = rdrwlock_trywrlock(f->rw); /* the parent's share excludes it */
    r4 = rdrwlock_tryrdlock(f->rw); /* a share of its own */
    if (r4 == 0)
        rdrwlock_fencing_token(f->rw, &t2);
    snprintf(line, sizeof line, "%d %d %d %d %" PRIu64, r1, r2, r3, r4, t2);
    rdt_send(f->p.to_parent[1], line);
    if (rdt_recv(f->p.to_child[0], line, sizeof line, 10000) < 0)
        return 40;
    r1 = rdrwlock_unlock(f->rw);
    r2 = rdrwlock_unlock(f->rw);
    snprintf(line, sizeof line, "%d %d", r1, r2);
    rdt_send(f->p.to_parent[1], line);
    return 0;
}

/* Child of a writer: "<unlock> <token> <tryrd> <trywr> <timedrd>". */
static int fork_writer_child(void *arg)
{
    forkctx_t *f = arg;
    char line[160];
    uint64_t tok = 0;
    struct timespec ts = rdt_abstime(CLOCK_REALTIME, 200);
    int r1, r2, r3, r4, r5;

    rdt_pipe_child(&f->p);
    r1 = rdrwlock_unlock(f->rw);
    r2 = rdrwlock_fencing_token(f->rw, &tok);
    r3 = rdrwlock_tryrdlock(f->rw);
    r4 = rdrwlock_trywrlock(f->rw);
    r5 = rdrwlock_timedrdlock(f->rw, &ts);
    snprintf(line, sizeof line, "%d %d %d %d %d", r1, r2, r3, r4, r5);
    rdt_send(f->p.to_parent[1], line);
    return 0;
}

static void test_fork_child_holds_nothing(void)
{
    rdlock_client_t *c;
    rdrwlock_t rw;
    forkctx_t f;
    pid_t pid;
    char line[160], field[128], field2[128], mode;
    int r1 = -1, r2 = -1, r3 = -1, r4 = -1, r5 = -1;
    unsigned long long ctok = 0;
    uint64_t tok = 0, tok2 = 0;

    fresh();
    c = rdt_open_client(&srv, NULL);
    RDT_ASSERT_RC(0, rdt_rwlock_on(&rw, "rw-fork", c));

    /* A reader forks. */
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rw, &tok));
    holders_ex("rw-fork", NULL, (long)getpid(), field, sizeof field, NULL);
    CU_ASSERT(field[0] != '\0');
    f.rw = &rw;
    CU_ASSERT_FATAL(rdt_pipe_open(&f.p) == 0);
    pid = rdt_fork(fork_reader_child, &f);
    CU_ASSERT_FATAL(pid > 0);
    rdt_pipe_parent(&f.p);
    CU_ASSERT(rdt_recv(f.p.to_parent[0], line, sizeof line, 10000) > 0);
    CU_ASSERT_EQUAL(sscanf(line, "%d %d %d %d %llu", &r1, &r2, &r3, &r4, &ctok), 5);
    RDT_ASSERT_RC(EPERM, r1); /* the child does not hold the parent's share */
    RDT_ASSERT_RC(EPERM, r2);
    RDT_ASSERT_RC(EBUSY, r3);
    RDT_ASSERT_RC(0, r4); /* its own share, a different owner */
    CU_ASSERT(ctok > tok);
    CU_ASSERT_EQUAL(holders("rw-fork", &mode), 2);
    rdt_send(f.p.to_child[1], "go");
    CU_ASSERT(rdt_recv(f.p.to_parent[0], line, sizeof line, 10000) > 0);
    CU_ASSERT_EQUAL(sscanf(line, "%d %d", &r1, &r2), 2);
    RDT_ASSERT_RC(0, r1);
    RDT_ASSERT_RC(EPERM, r2);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 10000));
    rdt_pipe_close(&f.p);
    /* The parent is unaffected: same share, same token, unlock 0. */
    CU_ASSERT_EQUAL(holders_ex("rw-fork", &mode, (long)getpid(), field2, sizeof field2, NULL), 1);
    CU_ASSERT_STRING_EQUAL(field, field2);
    RDT_ASSERT_RC(0, rdrwlock_fencing_token(&rw, &tok2));
    RDT_ASSERT_EQ_LL((long long)tok, (long long)tok2);
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-fork"));

    /* A writer forks. */
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&rw));
    CU_ASSERT_FATAL(rdt_pipe_open(&f.p) == 0);
    pid = rdt_fork(fork_writer_child, &f);
    CU_ASSERT_FATAL(pid > 0);
    rdt_pipe_parent(&f.p);
    CU_ASSERT(rdt_recv(f.p.to_parent[0], line, sizeof line, 10000) > 0);
    CU_ASSERT_EQUAL(sscanf(line, "%d %d %d %d %d", &r1, &r2, &r3, &r4, &r5), 5);
    RDT_ASSERT_RC(EPERM, r1);
    RDT_ASSERT_RC(EPERM, r2);
    RDT_ASSERT_RC(EBUSY, r3);
    RDT_ASSERT_RC(EBUSY, r4);
    RDT_ASSERT_RC(ETIMEDOUT, r5);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 10000));
    rdt_pipe_close(&f.p);
    CU_ASSERT_EQUAL(holders("rw-fork", &mode), 1);
    CU_ASSERT_EQUAL(mode, 'x');
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_EQ_LL(0, key_exists("rw-fork"));

    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    rdt_close_client(c);
}

/* ------------------------------------------------------------------ */

static const rdt_test_t tests[] = {
    { "init_destroy", test_init_destroy },
    { "static_initializer_race", test_static_initializer_race },
    { "try_and_timed", test_try_and_timed },
    { "blocking_calls", test_blocking_calls },
    { "fencing_tokens", test_fencing_tokens },
    { "read_reentry_per_thread", test_read_reentry_per_thread },
    { "deadlock_and_eperm", test_deadlock_and_eperm },
    { "readers_overlap_processes", test_readers_overlap_processes },
    { "mutex_rwlock_same_lock", test_mutex_rwlock_same_lock },
    { "writer_preference", test_writer_preference },
    { "writer_not_starved", test_writer_not_starved },
    { "timed_out_writer_leaves_no_mark", test_timed_out_writer_leaves_no_mark },
    { "crashed_waiting_writer", test_crashed_waiting_writer },
    { "per_reader_leases", test_per_reader_leases },
    { "dead_share_does_not_outlive_lease", test_dead_share_does_not_outlive_lease },
    { "lost_share", test_lost_share },
    { "many_readers", test_many_readers },
    { "many_readers_leases_end", test_many_readers_leases_end },
    { "wakeup_readers_on_writer_unlock", test_wakeup_readers_on_writer_unlock },
    { "wakeup_writer_on_last_reader", test_wakeup_writer_on_last_reader },
    { "fork_child_holds_nothing", test_fork_child_holds_nothing },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "rwlock", tests, setup, teardown, 85);
}
