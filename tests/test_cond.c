/* test_cond.c - condition variables (rdcond_t) and barriers (rdbarrier_t)
 * against a real redis-server (docs/CONTRACT.md section 12).
 *
 * The POSIX cases follow the assertions of the Open POSIX Test Suite's
 * conformance/interfaces/pthread_cond_* and pthread_barrier_* where they
 * apply to a named object shared across hosts: timedwait returns
 * ETIMEDOUT when the time passes and holds the mutex again, EINVAL for a
 * bad abstime; signal wakes at least one waiter and broadcast all of them;
 * signal and broadcast without waiters do nothing; destroy of a condition
 * with waiters is EBUSY; a barrier with count 0 is EINVAL, and exactly one
 * waiter of each generation gets the serial value.  Then what only a
 * distributed one has: EPERM without the lock, ENOLCK when the lock's hold
 * was lost, waiters in other processes, a SIGKILLed waiter that never
 * swallows a signal a live one needs, no lost wake-up among 4 processes x
 * 4 threads of producers and consumers, and a crashed barrier participant
 * that makes the others time out and leaves the barrier whole.
 *
 * Other processes are forked actors driven over the line protocol of
 * testutil.h.  The clients of the wake-up tests look again only every 10 s
 * on their own (retry_interval_ms = 60000, lease 30 s), so a wake-up that
 * pub/sub failed to deliver shows as a timeout, not as a slower pass.
 * Nothing sleeps to synchronise: waits are pipe reads with deadlines or
 * bounded polls of the state in Redis; naps only let leases run out. */
#include <errno.h>
#include <limits.h>
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

static rdt_server_t g_srv;
static redisContext *g_rc;
static rdlock_client_t *g_c;     /* default settings: looks every 100 ms */
static rdlock_client_t *g_cslow; /* looks on its own only every 10 s */
static char g_ini[512];
static char g_ini_slow[512];
static char g_ini_renew[512]; /* renews every 100 ms */

#define SLOW_INI "[lock]\nretry_interval_ms = 60000\nretry_jitter_ms = 0\nlease_ms = 30000\n"
#define CALL_MS 15000
#define LEASE_MS 1000
#define FRESH_DB() CU_ASSERT_EQUAL_FATAL(rdt_flushall(&g_srv), 0)

static int suite_setup(void)
{
    if (rdt_suite_start(&g_srv, &g_rc) != 0 || rdt_ini_copy(&g_srv, 0, NULL, g_ini, sizeof g_ini) != 0 ||
        rdt_ini_copy(&g_srv, 0, SLOW_INI, g_ini_slow, sizeof g_ini_slow) != 0 ||
        rdt_ini_copy(&g_srv, 0, "[watchdog]\ninterval_ms = 100\n", g_ini_renew, sizeof g_ini_renew) != 0)
        return -1;
    setenv("RDLOCK_CONF", g_ini_slow, 1);
    if (rdlock_client_open(&g_c, g_ini) != 0 || rdlock_client_open(&g_cslow, g_ini_slow) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open failed\n");
        return -1;
    }
    return rdt_flushall(&g_srv);
}

static int suite_teardown(void)
{
    rdt_actor_reap_all();
    rdt_close_clients(&g_c, &g_cslow, NULL);
    rdt_suite_stop(&g_srv, &g_rc);
    return 0;
}

/* rdcond_init on client c with lease (0: the client's). */
static int cond_on(rdcond_t *cv, const char *name, rdlock_client_t *c, unsigned lease)
{
    rdcond_attr_t a;
    int rc;
    if ((rc = rdcond_attr_init(&a)) != 0 || (rc = rdcond_attr_setclient(&a, c)) != 0 ||
        (rc = rdcond_attr_setlease(&a, lease)) != 0)
        return rc;
    rc = rdcond_init(cv, name, &a);
    rdcond_attr_destroy(&a);
    return rc;
}

static int barrier_on(rdbarrier_t *b, const char *name, unsigned count, rdlock_client_t *c, unsigned lease)
{
    rdlock_attr_t a;
    int rc;
    if ((rc = rdlock_attr_init(&a)) != 0 || (rc = rdlock_attr_setclient(&a, c)) != 0 ||
        (rc = rdlock_attr_setlease(&a, lease)) != 0)
        return rc;
    rc = rdbarrier_init(b, name, count, &a);
    rdlock_attr_destroy(&a);
    return rc;
}

/* Registrations of condition name not woken yet (bounded poll until n). */
static int wait_registered(const char *name, long long n)
{
    char key[256];
    snprintf(key, sizeof key, "rdlock:{%s}:cv:q", name);
    return rdt_wait_zcard(g_rc, key, n, 10000);
}

/* Bounded poll until hash key has n fields: 1, else 0. */
static int wait_hlen(const char *key, long long n)
{
    long long until = rdt_now_ms() + 10000;
    while (rdt_int_cmd(g_rc, -1, "HLEN %s", key) != n) {
        if (rdt_now_ms() > until)
            return 0;
        rdt__nap_ms(5);
    }
    return 1;
}

/* Holders of the lock name (its hash less the mode field). */
static long long holders_of(const char *name)
{
    return rdt_int_cmd(g_rc, -1, "HLEN rdlock:{%s}", name) - rdt_int_cmd(g_rc, -1, "HEXISTS rdlock:{%s} m", name);
}

/* Bounded poll until nobody holds the lock name: a waiter registers
 * before it releases the lock, so "registered" alone does not mean the
 * lock is free yet.  1, else 0. */
static int wait_lock_free(const char *name)
{
    long long until = rdt_now_ms() + 10000;
    while (holders_of(name) != 0) {
        if (rdt_now_ms() > until)
            return 0;
        rdt__nap_ms(5);
    }
    return 1;
}

/* A hash field as a number, -1 if missing. */
static long long hget_ll(const char *key, const char *field)
{
    char buf[64];
    if (rdt_hget(g_rc, key, field, buf, sizeof buf) != 1)
        return -1;
    return atoll(buf);
}

/* ------------------------------------------------------------------ */
/* actors: a forked process with its own client, one lock + condition  */
/* or one barrier                                                      */
/* ------------------------------------------------------------------ */

/* Commands (one line): "wait" (lock, rdcond_wait, unlock), "timed MS"
 * (the same with rdcond_timedwait MS from now), "bar" (rdbarrier_wait),
 * "bartimed MS", "quit".  Answer: "<rc> <ms>".  "bgwait" and "bgbar" start
 * a thread that waits so (no answer), "exit" calls exit(0) while it does. */
typedef struct cact {
    rdt_pipe_t p;
    pid_t pid;
    const char *ini;
    char name[64];
    unsigned lease, count;
} cact_t;

typedef struct cact_bg {
    rdlock_t *m;
    rdcond_t *cv;
    rdbarrier_t *b;
} cact_bg_t;

static void *cact_bg(void *arg)
{
    cact_bg_t *g = arg;
    if (g->b != NULL) {
        rdbarrier_wait(g->b);
    } else if (rdlock_lock(g->m) == 0) {
        rdcond_wait(g->cv, g->m);
        rdlock_unlock(g->m);
    }
    return NULL;
}

static int cact_main(void *arg)
{
    cact_t *a = arg;
    rdlock_client_t *c = NULL;
    rdlock_t m;
    rdcond_t cv;
    rdbarrier_t b;
    char line[128], out[64];
    int rc;

    rdt_child_begin(&a->p);
    if (rdlock_client_open(&c, a->ini) != 0 || rdt_mutex_on(&m, a->name, c, RDLOCK_ERRORCHECK) != 0 ||
        cond_on(&cv, a->name, c, a->lease) != 0 || barrier_on(&b, a->name, a->count, c, a->lease) != 0) {
        rdt_send(a->p.to_parent[1], "setup-failed");
        return 1;
    }
    rdt_send(a->p.to_parent[1], "ready");
    while (rdt_recv(a->p.to_child[0], line, sizeof line, -1) >= 0) {
        long long t0 = rdt_now_ms();
        if (strcmp(line, "wait") == 0 || strncmp(line, "timed ", 6) == 0) {
            struct timespec ts = rdt_abstime(CLOCK_REALTIME, line[0] == 't' ? atoll(line + 6) : 0);
            if ((rc = rdlock_lock(&m)) == 0) {
                rc = line[0] == 't' ? rdcond_timedwait(&cv, &m, &ts) : rdcond_wait(&cv, &m);
                if (rdlock_unlock(&m) != 0)
                    rc = -4; /* the lock was not held again */
            }
        } else if (strcmp(line, "bar") == 0) {
            rc = rdbarrier_wait(&b);
        } else if (strncmp(line, "bartimed ", 9) == 0) {
            struct timespec ts = rdt_abstime(CLOCK_REALTIME, atoll(line + 9));
            rc = rdbarrier_timedwait(&b, &ts);
        } else if (strcmp(line, "bgwait") == 0 || strcmp(line, "bgbar") == 0) {
            static cact_bg_t g;
            pthread_t th;
            g.m = &m;
            g.cv = &cv;
            g.b = line[2] == 'b' ? &b : NULL;
            rc = pthread_create(&th, NULL, cact_bg, &g) == 0 ? 0 : -5;
            if (rc == 0)
                continue; /* no answer: it waits */
        } else if (strcmp(line, "exit") == 0) {
            exit(0); /* with the thread still waiting */
        } else if (strcmp(line, "quit") == 0) {
            break;
        } else {
            rc = -3;
        }
        snprintf(out, sizeof out, "%d %lld", rc, rdt_now_ms() - t0);
        rdt_send(a->p.to_parent[1], out);
    }
    return 0;
}

static int cact_start(cact_t *a, const char *ini, const char *name, unsigned lease, unsigned count)
{
    memset(a, 0, sizeof *a);
    a->ini = ini;
    snprintf(a->name, sizeof a->name, "%s", name);
    a->lease = lease;
    a->count = count;
    a->pid = rdt_spawn(&a->p, cact_main, a);
    if (a->pid < 0)
        return -1;
    if (rdt_expect_line(&a->p, "ready", 10000, name) != 0) {
        kill(a->pid, SIGKILL);
        rdt_wait(a->pid, 5000);
        rdt_pipe_close(&a->p);
        a->pid = -1;
        return -1;
    }
    return 0;
}

static int cact_send(cact_t *a, const char *cmd)
{
    return rdt_send(a->p.to_child[1], cmd);
}

/* No answer in time (RDT_ACTOR_NOREPLY is -1, RDBARRIER_SERIAL_THREAD). */
#define CACT_NOREPLY (-100)

/* The answer to the oldest unanswered command within timeout_ms: its rc,
 * or CACT_NOREPLY. */
static int cact_reply(cact_t *a, int timeout_ms, long long *ms)
{
    char line[96];
    int rc;
    long long t;
    if (rdt_recv(a->p.to_parent[0], line, sizeof line, timeout_ms) < 0)
        return CACT_NOREPLY;
    if (sscanf(line, "%d %lld", &rc, &t) != 2)
        return CACT_NOREPLY;
    if (ms != NULL)
        *ms = t;
    return rc;
}

static int cact_stop(cact_t *a)
{
    int rc;
    if (a->pid <= 0)
        return -1;
    cact_send(a, "quit");
    rc = rdt_wait(a->pid, 10000);
    rdt_pipe_close(&a->p);
    a->pid = -1;
    return rc;
}

static int cact_kill(cact_t *a)
{
    int rc;
    if (a->pid <= 0)
        return -1;
    kill(a->pid, SIGKILL);
    rc = rdt_wait(a->pid, 5000);
    rdt_pipe_close(&a->p);
    a->pid = -1;
    return rc;
}

/* ------------------------------------------------------------------ */
/* attributes, set-up, argument checks                                 */
/* ------------------------------------------------------------------ */

static void test_attr(void)
{
    rdcond_attr_t a;
    RDT_ASSERT_RC(EINVAL, rdcond_attr_init(NULL));
    RDT_ASSERT_RC(EINVAL, rdcond_attr_destroy(NULL));
    RDT_ASSERT_RC(EINVAL, rdcond_attr_setlease(NULL, 100));
    RDT_ASSERT_RC(EINVAL, rdcond_attr_setclient(NULL, g_c));
    memset(&a, 0, sizeof a);
    RDT_ASSERT_RC(EINVAL, rdcond_attr_setlease(&a, 100)); /* not initialised */
    RDT_ASSERT_RC(0, rdcond_attr_init(&a));
    RDT_ASSERT_RC(EINVAL, rdcond_attr_setlease(&a, 9));
    RDT_ASSERT_RC(EINVAL, rdcond_attr_setlease(&a, 86400001u));
    RDT_ASSERT_RC(0, rdcond_attr_setlease(&a, 10));
    RDT_ASSERT_RC(0, rdcond_attr_setlease(&a, 0));
    RDT_ASSERT_RC(0, rdcond_attr_setclient(&a, g_c));
    RDT_ASSERT_RC(0, rdcond_attr_destroy(&a));
    RDT_ASSERT_RC(EINVAL, rdcond_attr_destroy(&a));
}

static void test_init_errors(void)
{
    rdcond_t cv;
    rdbarrier_t b, b2;
    rdlock_t m;
    rdcond_attr_t ca;
    char *huge = malloc(100000);
    struct timespec ts = rdt_abstime(CLOCK_REALTIME, 100);

    CU_ASSERT_FATAL(huge != NULL);
    memset(huge, 'x', 99999);
    huge[99999] = '\0';
    FRESH_DB();
    RDT_ASSERT_RC(EINVAL, rdcond_init(NULL, "c", NULL));
    RDT_ASSERT_RC(EINVAL, cond_on(&cv, NULL, g_c, 0));
    RDT_ASSERT_RC(EINVAL, cond_on(&cv, "", g_c, 0));
    RDT_ASSERT_RC(EINVAL, cond_on(&cv, huge, g_c, 0));
    memset(&ca, 0, sizeof ca);
    RDT_ASSERT_RC(EINVAL, rdcond_init(&cv, "c", &ca)); /* attr not initialised */
    RDT_ASSERT_RC(EINVAL, rdbarrier_init(NULL, "b", 2, NULL));
    RDT_ASSERT_RC(EINVAL, barrier_on(&b, NULL, 2, g_c, 0));
    RDT_ASSERT_RC(EINVAL, barrier_on(&b, huge, 2, g_c, 0));
    /* pthread_barrier_init 3-? : count 0 is EINVAL */
    RDT_ASSERT_RC(EINVAL, barrier_on(&b, "b", 0, g_c, 0));
    RDT_ASSERT_RC(EINVAL, barrier_on(&b, "b", RDBARRIER_COUNT_MAX + 1u, g_c, 0));
    free(huge);

    /* uninitialised and destroyed objects */
    memset(&cv, 0, sizeof cv);
    memset(&b, 0, sizeof b);
    RDT_ASSERT_RC(EINVAL, rdcond_signal(&cv));
    RDT_ASSERT_RC(EINVAL, rdcond_broadcast(&cv));
    RDT_ASSERT_RC(EINVAL, rdcond_destroy(&cv));
    RDT_ASSERT_RC(EINVAL, rdcond_signal(NULL));
    RDT_ASSERT_RC(EINVAL, rdbarrier_wait(&b));
    RDT_ASSERT_RC(EINVAL, rdbarrier_wait(NULL));
    RDT_ASSERT_RC(EINVAL, rdbarrier_destroy(&b));
    RDT_ASSERT_RC(0, cond_on(&cv, "c", g_c, 0));
    RDT_ASSERT_RC(EBUSY, cond_on(&cv, "c", g_c, 0)); /* initialised twice */
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "c", g_c, RDLOCK_ERRORCHECK));
    RDT_ASSERT_RC(EINVAL, rdcond_wait(&cv, NULL));
    RDT_ASSERT_RC(EINVAL, rdcond_wait(NULL, &m));
    RDT_ASSERT_RC(EINVAL, rdcond_timedwait(&cv, &m, NULL));
    RDT_ASSERT_RC(EINVAL, rdcond_clockwait(&cv, &m, CLOCK_PROCESS_CPUTIME_ID, &ts));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(EINVAL, rdcond_signal(&cv));
    RDT_ASSERT_RC(EINVAL, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));

    /* the state is on the server from init, and stays after destroy */
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{c}:cv"), 1);
    RDT_ASSERT_RC(0, barrier_on(&b, "b", 3, g_c, 0));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{b}:b"), 1);
    /* another count for an existing barrier name */
    RDT_ASSERT_RC(EINVAL, barrier_on(&b2, "b", 4, g_c, 0));
    RDT_ASSERT_RC(0, rdbarrier_destroy(&b));
    RDT_ASSERT_RC(EINVAL, rdbarrier_destroy(&b));
    /* a reset removes them */
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c, "c"));
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c, "b"));
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{c}:cv"), 0);
    CU_ASSERT_EQUAL(rdt_exists(g_rc, "rdlock:{b}:b"), 0);
    RDT_ASSERT_RC(0, barrier_on(&b2, "b", 4, g_c, 0)); /* a new name: any count */
    RDT_ASSERT_RC(0, rdbarrier_destroy(&b2));
}

/* ------------------------------------------------------------------ */
/* POSIX                                                               */
/* ------------------------------------------------------------------ */

static void test_timedwait_timeout(void)
{
    rdcond_t cv;
    rdlock_t m;
    struct timespec ts, bad;
    unsigned n = 0;
    long long t0, el;

    FRESH_DB();
    RDT_ASSERT_RC(0, cond_on(&cv, "tw", g_c, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "tw", g_c, RDLOCK_ERRORCHECK));
    /* EPERM: the caller does not hold the lock (nothing registered) */
    ts = rdt_abstime(CLOCK_REALTIME, 100);
    RDT_ASSERT_RC(EPERM, rdcond_wait(&cv, &m));
    RDT_ASSERT_RC(EPERM, rdcond_timedwait(&cv, &m, &ts));
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, "rdlock:{tw}:cv:q"));
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "HLEN rdlock:{tw}:cv:h"));

    RDT_ASSERT_RC(0, rdlock_lock(&m));
    /* pthread_cond_timedwait 4-?: a bad abstime is EINVAL, checked first,
     * and the mutex stays held */
    bad = rdt_abstime(CLOCK_REALTIME, 100);
    bad.tv_nsec = 1000000000L;
    RDT_ASSERT_RC(EINVAL, rdcond_timedwait(&cv, &m, &bad));
    bad.tv_nsec = -1;
    RDT_ASSERT_RC(EINVAL, rdcond_timedwait(&cv, &m, &bad));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    RDT_ASSERT_EQ_LL(1, n);

    /* pthread_cond_timedwait 2-1, 2-2: ETIMEDOUT when the time passes,
     * with the mutex held again */
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdcond_timedwait(&cv, &m, &ts));
    el = rdt_now_ms() - t0;
    CU_ASSERT(el >= 250 && el < 3000);
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    RDT_ASSERT_EQ_LL(1, n);
    RDT_ASSERT_EQ_LL(1, holders_of("tw"));
    /* the registration is gone */
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, "rdlock:{tw}:cv:q"));
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "HLEN rdlock:{tw}:cv:h"));
    /* a deadline already past: ETIMEDOUT, held */
    ts = rdt_abstime(CLOCK_REALTIME, -1000);
    RDT_ASSERT_RC(ETIMEDOUT, rdcond_timedwait(&cv, &m, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 50);
    RDT_ASSERT_RC(ETIMEDOUT, rdcond_clockwait(&cv, &m, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    RDT_ASSERT_EQ_LL(1, n);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));

    /* pthread_cond_signal 2-?, broadcast 2-?: no waiter, nothing happens */
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    RDT_ASSERT_RC(0, rdcond_broadcast(&cv));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A timed-out waiter takes the lock back even when someone else holds it
 * at the deadline: it returns only once it has it. */
typedef struct tw_arg {
    rdcond_t *cv;
    rdlock_t *m;
    int rc;
    unsigned count;
    long long ms;
} tw_arg_t;

static void *timed_waiter(void *arg)
{
    tw_arg_t *t = arg;
    struct timespec ts = rdt_abstime(CLOCK_REALTIME, 200);
    long long t0 = rdt_now_ms();
    t->rc = rdlock_lock(t->m);
    if (t->rc == 0)
        t->rc = rdcond_timedwait(t->cv, t->m, &ts);
    t->ms = rdt_now_ms() - t0;
    rdlock_holdcount(t->m, &t->count);
    if (t->count > 0)
        rdlock_unlock(t->m);
    return NULL;
}

static void test_timeout_reacquires(void)
{
    rdcond_t cv;
    rdlock_t m;
    pthread_t th;
    tw_arg_t t = { 0 };

    FRESH_DB();
    RDT_ASSERT_RC(0, cond_on(&cv, "re", g_c, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "re", g_c, RDLOCK_ERRORCHECK));
    t.cv = &cv;
    t.m = &m;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, timed_waiter, &t) == 0);
    CU_ASSERT_EQUAL_FATAL(wait_registered("re", 1), 1);
    /* this thread takes the lock and keeps it past the waiter's deadline */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    rdt__nap_ms(800);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    pthread_join(th, NULL);
    RDT_ASSERT_RC(ETIMEDOUT, t.rc);
    RDT_ASSERT_EQ_LL(1, t.count); /* it held the lock on return */
    CU_ASSERT(t.ms >= 750);       /* ... which it could have only after ours */
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A recursive lock: every level is released for the wait and restored. */
static void test_recursive_lock(void)
{
    rdcond_t cv;
    rdlock_t m;
    struct timespec ts;
    unsigned n = 0;

    FRESH_DB();
    RDT_ASSERT_RC(0, cond_on(&cv, "rec", g_c, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "rec", g_c, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    ts = rdt_abstime(CLOCK_REALTIME, 100);
    RDT_ASSERT_RC(ETIMEDOUT, rdcond_timedwait(&cv, &m, &ts));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    RDT_ASSERT_EQ_LL(3, n);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(0, holders_of("rec"));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* ENOLCK: the lock's hold was lost (here: deleted on the server, as a
 * takeover after an expiry would) before the wait released it.  The wait
 * says so at once, holding the lock again. */
static void test_enolck(void)
{
    rdcond_t cv;
    rdlock_t m;
    struct timespec ts;
    unsigned n = 0;

    FRESH_DB();
    RDT_ASSERT_RC(0, cond_on(&cv, "lost", g_c, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "lost", g_c, RDLOCK_ERRORCHECK));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_int_cmd(g_rc, -1, "DEL rdlock:{lost}"));
    ts = rdt_abstime(CLOCK_REALTIME, 10000);
    RDT_ASSERT_RC(ENOLCK, rdcond_timedwait(&cv, &m, &ts));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    RDT_ASSERT_EQ_LL(1, n);
    RDT_ASSERT_EQ_LL(1, holders_of("lost"));
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, "rdlock:{lost}:cv:q"));
    /* the same with the blocking wait */
    RDT_ASSERT_EQ_LL(1, rdt_int_cmd(g_rc, -1, "DEL rdlock:{lost}"));
    RDT_ASSERT_RC(ENOLCK, rdcond_wait(&cv, &m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* signal wakes the oldest waiter, one at a time; broadcast the rest.
 * Waiters in other processes, on the slow client: pub/sub only. */
static void test_signal_broadcast(void)
{
    cact_t a[3];
    rdcond_t cv;
    rdlock_t m;
    int i;
    long long ms;

    FRESH_DB();
    RDT_ASSERT_RC(0, cond_on(&cv, "sb", g_c, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "sb", g_c, RDLOCK_ERRORCHECK));
    for (i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(cact_start(&a[i], g_ini_slow, "sb", 0, 2), 0);
        cact_send(&a[i], "wait");
        /* registered in this order */
        CU_ASSERT_EQUAL_FATAL(wait_registered("sb", i + 1), 1);
    }
    /* pthread_cond_signal 1-1: one waiter wakes, the first registered */
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    RDT_ASSERT_RC(0, cact_reply(&a[0], 5000, &ms));
    RDT_ASSERT_EQ_LL(CACT_NOREPLY, cact_reply(&a[1], 300, NULL));
    RDT_ASSERT_EQ_LL(CACT_NOREPLY, cact_reply(&a[2], 10, NULL));
    /* signal with the lock held: the woken one returns once it is free */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    RDT_ASSERT_EQ_LL(CACT_NOREPLY, cact_reply(&a[1], 300, NULL));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, cact_reply(&a[1], 5000, NULL));
    /* pthread_cond_broadcast 1-1: every waiter wakes */
    cact_send(&a[0], "wait");
    cact_send(&a[1], "wait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("sb", 3), 1);
    RDT_ASSERT_RC(0, rdcond_broadcast(&cv));
    for (i = 0; i < 3; i++)
        RDT_ASSERT_RC(0, cact_reply(&a[i], 5000, NULL));
    /* a waiter registered after the broadcast is not woken by it */
    cact_send(&a[0], "timed 600");
    RDT_ASSERT_RC(ETIMEDOUT, cact_reply(&a[0], 5000, NULL));
    for (i = 0; i < 3; i++)
        RDT_ASSERT_EQ_LL(0, cact_stop(&a[i]));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* The condition and its lock on different clients; destroy with a waiter
 * is EBUSY (pthread_cond_destroy 4-1). */
typedef struct w_arg {
    rdcond_t *cv;
    rdlock_t *m;
    int rc, unlock_rc;
} w_arg_t;

static void *blocking_waiter(void *arg)
{
    w_arg_t *w = arg;
    w->rc = rdlock_lock(w->m);
    if (w->rc == 0) {
        w->rc = rdcond_wait(w->cv, w->m);
        w->unlock_rc = rdlock_unlock(w->m);
    }
    return NULL;
}

static void test_two_clients_destroy_busy(void)
{
    rdcond_t cv;
    rdlock_t m;
    pthread_t th;
    w_arg_t w = { 0 };

    FRESH_DB();
    RDT_ASSERT_RC(0, cond_on(&cv, "two", g_cslow, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "two", g_c, RDLOCK_ERRORCHECK));
    w.cv = &cv;
    w.m = &m;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, blocking_waiter, &w) == 0);
    CU_ASSERT_EQUAL_FATAL(wait_registered("two", 1), 1);
    RDT_ASSERT_RC(EBUSY, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    pthread_join(th, NULL);
    RDT_ASSERT_RC(0, w.rc);
    RDT_ASSERT_RC(0, w.unlock_rc);
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A waiter SIGKILLed while registered never keeps a signal a live waiter
 * needs: the signal goes to the live one, at once if the dead one's lease
 * has run out, else when it does. */
static void test_killed_waiter(void)
{
    cact_t dead, live;
    rdcond_t cv;
    long long t0, ms;

    FRESH_DB();
    RDT_ASSERT_RC(0, cond_on(&cv, "kw", g_c, LEASE_MS));
    /* 1. the signal comes while the dead one's lease still runs */
    CU_ASSERT_EQUAL_FATAL(cact_start(&dead, g_ini, "kw", LEASE_MS, 2), 0);
    cact_send(&dead, "wait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("kw", 1), 1);
    CU_ASSERT_EQUAL_FATAL(wait_lock_free("kw"), 1);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, cact_kill(&dead));
    CU_ASSERT_EQUAL_FATAL(cact_start(&live, g_ini, "kw", LEASE_MS, 2), 0);
    cact_send(&live, "wait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("kw", 2), 1);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    RDT_ASSERT_RC(0, cact_reply(&live, 4 * LEASE_MS + 2000, &ms));
    CU_ASSERT(rdt_now_ms() - t0 < 3 * LEASE_MS + 1000);
    /* the dead registration is gone */
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "HLEN rdlock:{kw}:cv:h"));

    /* 2. the signal comes after the dead one's lease ran out: the live
     * one is the one signalled, straight away */
    CU_ASSERT_EQUAL_FATAL(cact_start(&dead, g_ini, "kw", LEASE_MS, 2), 0);
    cact_send(&dead, "wait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("kw", 1), 1);
    CU_ASSERT_EQUAL_FATAL(wait_lock_free("kw"), 1);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, cact_kill(&dead));
    cact_send(&live, "wait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("kw", 2), 1);
    rdt__nap_ms(LEASE_MS + 200);
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    RDT_ASSERT_RC(0, cact_reply(&live, 2000, NULL));
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, "rdlock:{kw}:cv:p"));
    RDT_ASSERT_EQ_LL(0, cact_stop(&live));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
}

/* ------------------------------------------------------------------ */
/* no lost wake-up: a bounded queue, 4 processes x (2 producers + 2    */
/* consumers), every item consumed exactly once                        */
/* ------------------------------------------------------------------ */

#define PC_PROCS 4
#define PC_ITEMS 40 /* per producer thread */
#define PC_TOTAL (PC_PROCS * 2 * PC_ITEMS)
#define PC_CAP 1

typedef struct pc_thread {
    rdlock_t *m;
    rdcond_t *notfull, *notempty;
    int producer, id, bad;
    long long max_wait_ms;
    unsigned seed;
} pc_thread_t;

static int timed_cond_wait(pc_thread_t *t, rdcond_t *cv)
{
    long long t0 = rdt_now_ms();
    int rc = rdcond_wait(cv, t->m);
    if (rdt_now_ms() - t0 > t->max_wait_ms)
        t->max_wait_ms = rdt_now_ms() - t0;
    return rc;
}

static void *pc_run(void *arg)
{
    pc_thread_t *t = arg;
    redisContext *rc = rdt_connect(&g_srv);
    int i;
    if (rc == NULL) {
        t->bad = 1;
        return NULL;
    }
    for (i = 0;; i++) {
        if (t->producer && i == PC_ITEMS)
            break;
        if (rdlock_lock(t->m) != 0) {
            t->bad = 2;
            break;
        }
        if (t->producer) {
            while (rdt_int_cmd(rc, -1, "LLEN pc-queue") >= PC_CAP)
                if (timed_cond_wait(t, t->notfull) != 0)
                    t->bad = 3;
            rdt_int_cmd(rc, -1, "RPUSH pc-queue %d:%d", t->id, i);
            if (rdcond_signal(t->notempty) != 0)
                t->bad = 4;
        } else {
            redisReply *r;
            while (rdt_int_cmd(rc, -1, "LLEN pc-queue") == 0 && rdt_get_ll(rc, "pc-consumed") < PC_TOTAL)
                if (timed_cond_wait(t, t->notempty) != 0)
                    t->bad = 5;
            if (rdt_get_ll(rc, "pc-consumed") >= PC_TOTAL) {
                /* all done: the other consumers must hear it too */
                rdcond_broadcast(t->notempty);
                rdlock_unlock(t->m);
                break;
            }
            r = redisCommand(rc, "LPOP pc-queue");
            if (r == NULL || r->type != REDIS_REPLY_STRING ||
                rdt_int_cmd(rc, -1, "SADD pc-seen %s", r->str) != 1) /* twice: a bug */
                t->bad = 6;
            if (r != NULL)
                freeReplyObject(r);
            if (rdt_int_cmd(rc, -1, "INCR pc-consumed") == PC_TOTAL)
                rdcond_broadcast(t->notempty);
            if (rdcond_signal(t->notfull) != 0)
                t->bad = 7;
        }
        if (rdlock_unlock(t->m) != 0)
            t->bad = 8;
        /* Work outside the lock, a random while: it lets both sides run
         * ahead of the other in turn, so producers find the queue full
         * and consumers find it empty, and both wait. */
        rdt__nap_ms(rand_r(&t->seed) % 3);
    }
    redisFree(rc);
    return NULL;
}

static int pc_child(void *arg)
{
    rdlock_client_t *c = NULL;
    rdlock_t m;
    rdcond_t notfull, notempty;
    pc_thread_t t[4];
    pthread_t th[4];
    int i, bad = 0, base = (int)(long)arg;

    if (rdlock_client_open(&c, g_ini_slow) != 0 || rdt_mutex_on(&m, "pc", c, RDLOCK_ERRORCHECK) != 0 ||
        cond_on(&notfull, "pc-notfull", c, 0) != 0 || cond_on(&notempty, "pc-notempty", c, 0) != 0)
        return 100;
    for (i = 0; i < 4; i++) {
        t[i] = (pc_thread_t){ &m, &notfull, &notempty, i % 2 == 0, base * 4 + i, 0, 0, (unsigned)(base * 4 + i + 1) };
        if (pthread_create(&th[i], NULL, pc_run, &t[i]) != 0)
            return 101;
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        if (t[i].bad) {
            fprintf(stderr, "pc child %d thread %d: failure %d\n", base, i, t[i].bad);
            bad = 1;
        }
        /* a lost wake-up shows as a wait until the 10 s re-check */
        if (t[i].max_wait_ms > 8000) {
            fprintf(stderr, "pc child %d thread %d: a wait took %lld ms: a lost wake-up\n", base, i,
                    t[i].max_wait_ms);
            bad = 1;
        }
    }
    if (rdcond_destroy(&notfull) != 0 || rdcond_destroy(&notempty) != 0 || rdlock_destroy(&m) != 0 ||
        rdlock_client_close(c) != 0)
        return 102;
    return bad ? 103 : 0;
}

static void test_no_lost_wakeup(void)
{
    pid_t pid[PC_PROCS];
    int i;
    long long t0 = rdt_now_ms();

    FRESH_DB();
    for (i = 0; i < PC_PROCS; i++)
        CU_ASSERT_FATAL((pid[i] = rdt_fork(pc_child, (void *)(long)i)) > 0);
    for (i = 0; i < PC_PROCS; i++)
        RDT_ASSERT_EQ_LL(0, rdt_wait(pid[i], 30000));
    /* every item consumed exactly once, nothing left */
    RDT_ASSERT_EQ_LL(PC_TOTAL, rdt_get_ll(g_rc, "pc-consumed"));
    RDT_ASSERT_EQ_LL(PC_TOTAL, rdt_int_cmd(g_rc, -1, "SCARD pc-seen"));
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "LLEN pc-queue"));
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "HLEN rdlock:{pc-notempty}:cv:h"));
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "HLEN rdlock:{pc-notfull}:cv:h"));
    /* and waits did happen (a producer finds the queue full, a consumer
     * empty), or the test proved nothing */
    CU_ASSERT(hget_ll("rdlock:{pc-notempty}:cv", "n") >= 20);
    CU_ASSERT(hget_ll("rdlock:{pc-notfull}:cv", "n") >= 20);
    printf("(%lld ms, %lld + %lld waits) ", rdt_now_ms() - t0,
           hget_ll("rdlock:{pc-notempty}:cv", "n"),
           hget_ll("rdlock:{pc-notfull}:cv", "n"));
}

/* ------------------------------------------------------------------ */
/* barriers                                                            */
/* ------------------------------------------------------------------ */

typedef struct bar_arg {
    rdbarrier_t *b;
    int rounds;
    int serial, zero, other;
} bar_arg_t;

static void *bar_thread(void *arg)
{
    bar_arg_t *a = arg;
    int i;
    for (i = 0; i < a->rounds; i++) {
        int rc = rdbarrier_wait(a->b);
        if (rc == RDBARRIER_SERIAL_THREAD)
            a->serial++;
        else if (rc == 0)
            a->zero++;
        else
            a->other++;
    }
    return NULL;
}

/* pthread_barrier_wait 1-1, 2-1: count waiters are released together,
 * exactly one of them with the serial value, generation after generation. */
static void test_barrier_generations(void)
{
    rdbarrier_t b[3];
    bar_arg_t a[3];
    pthread_t th[3];
    int i, serial = 0, zero = 0, other = 0;
    rdlock_client_t *cs[3] = { g_c, g_cslow, g_cslow };

    FRESH_DB();
    for (i = 0; i < 3; i++) {
        RDT_ASSERT_RC(0, barrier_on(&b[i], "gen", 3, cs[i], 0));
        a[i] = (bar_arg_t){ &b[i], 5, 0, 0, 0 };
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, bar_thread, &a[i]) == 0);
    }
    for (i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        serial += a[i].serial;
        zero += a[i].zero;
        other += a[i].other;
    }
    RDT_ASSERT_EQ_LL(5, serial);
    RDT_ASSERT_EQ_LL(10, zero);
    RDT_ASSERT_EQ_LL(0, other);
    RDT_ASSERT_EQ_LL(6, hget_ll("rdlock:{gen}:b", "g"));
    /* a barrier of one: every wait is the serial one */
    {
        rdbarrier_t one;
        RDT_ASSERT_RC(0, barrier_on(&one, "one", 1, g_c, 0));
        RDT_ASSERT_RC(RDBARRIER_SERIAL_THREAD, rdbarrier_wait(&one));
        RDT_ASSERT_RC(RDBARRIER_SERIAL_THREAD, rdbarrier_wait(&one));
        RDT_ASSERT_RC(0, rdbarrier_destroy(&one));
    }
    for (i = 0; i < 3; i++)
        RDT_ASSERT_RC(0, rdbarrier_destroy(&b[i]));
}

/* A timed wait that times out withdraws its arrival: the generation still
 * needs count others. */
static void test_barrier_timeout(void)
{
    rdbarrier_t b;
    cact_t x, y;
    struct timespec ts;
    long long t0;

    FRESH_DB();
    RDT_ASSERT_RC(0, barrier_on(&b, "bt", 2, g_cslow, 0));
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdbarrier_timedwait(&b, &ts));
    CU_ASSERT(rdt_now_ms() - t0 >= 250);
    RDT_ASSERT_EQ_LL(0, hget_ll("rdlock:{bt}:b", "a"));
    ts.tv_nsec = 1000000000L;
    RDT_ASSERT_RC(EINVAL, rdbarrier_timedwait(&b, &ts));
    /* two processes then complete a generation: one serial, one not */
    CU_ASSERT_EQUAL_FATAL(cact_start(&x, g_ini_slow, "bt", 0, 2), 0);
    CU_ASSERT_EQUAL_FATAL(cact_start(&y, g_ini_slow, "bt", 0, 2), 0);
    cact_send(&x, "bar");
    CU_ASSERT_EQUAL_FATAL(wait_hlen("rdlock:{bt}:b:h", 1), 1);
    RDT_ASSERT_EQ_LL(CACT_NOREPLY, cact_reply(&x, 200, NULL));
    cact_send(&y, "bar");
    {
        int r1 = cact_reply(&x, 5000, NULL), r2 = cact_reply(&y, 5000, NULL);
        CU_ASSERT((r1 == 0 && r2 == RDBARRIER_SERIAL_THREAD) || (r2 == 0 && r1 == RDBARRIER_SERIAL_THREAD));
    }
    RDT_ASSERT_EQ_LL(0, cact_stop(&x));
    RDT_ASSERT_EQ_LL(0, cact_stop(&y));
    RDT_ASSERT_RC(0, rdbarrier_destroy(&b));
}

/* A participant dies after arriving: the others' timed waits time out
 * (never later than their deadline), and once its lease has run out the
 * barrier serves a whole next generation. */
static void test_barrier_crashed(void)
{
    rdbarrier_t b;
    cact_t dead, p[2];
    struct timespec ts;
    long long t0, el;
    int i, serial = 0, zero = 0, r;

    FRESH_DB();
    RDT_ASSERT_RC(0, barrier_on(&b, "bc", 3, g_c, LEASE_MS));
    CU_ASSERT_EQUAL_FATAL(cact_start(&dead, g_ini, "bc", LEASE_MS, 3), 0);
    cact_send(&dead, "bar");
    CU_ASSERT_EQUAL_FATAL(wait_hlen("rdlock:{bc}:b:h", 1), 1);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, cact_kill(&dead));
    /* another arrives and waits to its deadline: ETIMEDOUT, on time */
    ts = rdt_abstime(CLOCK_REALTIME, 2 * LEASE_MS);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(ETIMEDOUT, rdbarrier_timedwait(&b, &ts));
    el = rdt_now_ms() - t0;
    CU_ASSERT(el >= 2 * LEASE_MS - 50 && el < 2 * LEASE_MS + 1500);
    /* the dead one's lease has run out: three new arrivals complete a
     * generation, and nobody is left behind in the next */
    for (i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL_FATAL(cact_start(&p[i], g_ini, "bc", LEASE_MS, 3), 0);
        cact_send(&p[i], "bartimed 8000");
    }
    ts = rdt_abstime(CLOCK_REALTIME, 8000);
    r = rdbarrier_timedwait(&b, &ts);
    serial += r == RDBARRIER_SERIAL_THREAD;
    zero += r == 0;
    for (i = 0; i < 2; i++) {
        r = cact_reply(&p[i], 10000, NULL);
        serial += r == RDBARRIER_SERIAL_THREAD;
        zero += r == 0;
    }
    RDT_ASSERT_EQ_LL(1, serial);
    RDT_ASSERT_EQ_LL(2, zero);
    RDT_ASSERT_EQ_LL(0, hget_ll("rdlock:{bc}:b", "a"));
    for (i = 0; i < 2; i++)
        RDT_ASSERT_EQ_LL(0, cact_stop(&p[i]));
    RDT_ASSERT_RC(0, rdbarrier_destroy(&b));
}

/* A process that exits normally ([lock] release_at_exit, the default)
 * while a thread of it waits on a condition or at a barrier ends the
 * registration or arrival on its way out, not when the lease runs out:
 * a signal is not kept for it, the others need not wait for it. */
static void test_exit_while_waiting(void)
{
    cact_t a;

    FRESH_DB();
    /* A lease far longer than the test, so only the exit can end them. */
    CU_ASSERT_EQUAL_FATAL(cact_start(&a, g_ini, "ew", 60000, 2), 0);
    cact_send(&a, "bgwait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("ew", 1), 1);
    CU_ASSERT_EQUAL_FATAL(wait_lock_free("ew"), 1);
    cact_send(&a, "exit");
    RDT_ASSERT_EQ_LL(0, rdt_wait(a.pid, 10000));
    rdt_pipe_close(&a.p);
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "HLEN rdlock:{ew}:cv:h"));
    RDT_ASSERT_EQ_LL(0, rdt_zcard(g_rc, "rdlock:{ew}:cv:q"));
    /* and the waiting thread did not take the lock back on the way out */
    RDT_ASSERT_EQ_LL(0, holders_of("ew"));

    /* The arrival is on the server before the thread records it locally
     * (there is no lock to free, as above): a renewal, every 100 ms here,
     * shows that it has. */
    CU_ASSERT_EQUAL_FATAL(cact_start(&a, g_ini_renew, "ew", 60000, 2), 0);
    cact_send(&a, "bgbar");
    CU_ASSERT_EQUAL_FATAL(wait_hlen("rdlock:{ew}:b:h", 1), 1);
    RDT_ASSERT_EQ_LL(1, hget_ll("rdlock:{ew}:b", "a"));
    {
        char f[64], v0[128] = "", v[128] = "";
        long long until = rdt_now_ms() + 10000;
        redisReply *r = redisCommand(g_rc, "HGETALL rdlock:{ew}:b:h");
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
            snprintf(f, sizeof f, "%s", r->element[0]->str);
            snprintf(v0, sizeof v0, "%s", r->element[1]->str);
        }
        if (r != NULL)
            freeReplyObject(r);
        CU_ASSERT_FATAL(v0[0] != '\0');
        do {
            rdt__nap_ms(20);
            if (rdt_hget(g_rc, "rdlock:{ew}:b:h", f, v, sizeof v) != 1)
                v[0] = '\0';
        } while (strcmp(v, v0) == 0 && rdt_now_ms() < until);
        CU_ASSERT_FATAL(v[0] != '\0' && strcmp(v, v0) != 0); /* renewed */
    }
    cact_send(&a, "exit");
    RDT_ASSERT_EQ_LL(0, rdt_wait(a.pid, 10000));
    rdt_pipe_close(&a.p);
    RDT_ASSERT_EQ_LL(0, rdt_int_cmd(g_rc, -1, "HLEN rdlock:{ew}:b:h"));
    RDT_ASSERT_EQ_LL(0, hget_ll("rdlock:{ew}:b", "a"));
}

/* rdlock_status_kinds (docs/CONTRACT.md section 8) for a condition and
 * a barrier: registered waiters, woken ones, registrations numbered;
 * count, live arrivals of the current generation and the generation. */
static void test_status_kinds(void)
{
    rdlock_kinds_t k;
    rdcond_t cv;
    rdbarrier_t b;
    rdlock_t m;
    cact_t x, y;
    int r;

    FRESH_DB();
    k.size = sizeof k;
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    CU_ASSERT(!k.cond && !k.barrier && !k.sem && !k.once);
    RDT_ASSERT_RC(0, cond_on(&cv, "ks", g_c, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "ks", g_c, RDLOCK_ERRORCHECK));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    CU_ASSERT(k.cond == 1 && !k.barrier);
    RDT_ASSERT_EQ_LL(0, k.cond_waiters);
    RDT_ASSERT_EQ_LL(0, k.cond_woken);
    RDT_ASSERT_EQ_LL(0, k.cond_registrations);
    /* two waiters in other processes */
    CU_ASSERT_EQUAL_FATAL(cact_start(&x, g_ini_slow, "ks", 0, 2), 0);
    CU_ASSERT_EQUAL_FATAL(cact_start(&y, g_ini_slow, "ks", 0, 2), 0);
    cact_send(&x, "wait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("ks", 1), 1);
    cact_send(&y, "wait");
    CU_ASSERT_EQUAL_FATAL(wait_registered("ks", 2), 1);
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    RDT_ASSERT_EQ_LL(2, k.cond_waiters);
    RDT_ASSERT_EQ_LL(0, k.cond_woken);
    RDT_ASSERT_EQ_LL(2, k.cond_registrations);
    /* one signalled while this thread holds the lock: it cannot return,
     * so it counts as woken (until it has looked) or is gone; the other
     * still waits */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    RDT_ASSERT_EQ_LL(1, k.cond_waiters);
    CU_ASSERT(k.cond_woken <= 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, cact_reply(&x, 5000, NULL));
    RDT_ASSERT_RC(0, rdcond_signal(&cv));
    RDT_ASSERT_RC(0, cact_reply(&y, 5000, NULL));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    RDT_ASSERT_EQ_LL(0, k.cond_waiters);
    RDT_ASSERT_EQ_LL(0, k.cond_woken);
    RDT_ASSERT_EQ_LL(2, k.cond_registrations);

    /* barrier of 2: one arrival, then the generation completes */
    RDT_ASSERT_RC(0, barrier_on(&b, "ks", 2, g_c, 0));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    CU_ASSERT(k.barrier == 1 && k.cond == 1);
    RDT_ASSERT_EQ_LL(2, k.barrier_count);
    RDT_ASSERT_EQ_LL(0, k.barrier_arrived);
    RDT_ASSERT_EQ_LL(1, k.barrier_generation);
    cact_send(&x, "bar");
    CU_ASSERT_EQUAL_FATAL(wait_hlen("rdlock:{ks}:b:h", 1), 1);
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    RDT_ASSERT_EQ_LL(1, k.barrier_arrived);
    RDT_ASSERT_EQ_LL(1, k.barrier_generation);
    r = rdbarrier_wait(&b);
    CU_ASSERT(r == 0 || r == RDBARRIER_SERIAL_THREAD);
    r = cact_reply(&x, 5000, NULL);
    CU_ASSERT(r == 0 || r == RDBARRIER_SERIAL_THREAD);
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c, "ks", &k));
    RDT_ASSERT_EQ_LL(0, k.barrier_arrived);
    RDT_ASSERT_EQ_LL(2, k.barrier_generation);
    RDT_ASSERT_EQ_LL(2, k.barrier_count);
    RDT_ASSERT_EQ_LL(0, cact_stop(&x));
    RDT_ASSERT_EQ_LL(0, cact_stop(&y));
    RDT_ASSERT_RC(0, rdbarrier_destroy(&b));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* ------------------------------------------------------------------ */

static const rdt_test_t tests[] = {
    { "attr", test_attr },
    { "init_errors", test_init_errors },
    { "timedwait_timeout", test_timedwait_timeout },
    { "timeout_reacquires", test_timeout_reacquires },
    { "recursive_lock", test_recursive_lock },
    { "enolck", test_enolck },
    { "signal_broadcast", test_signal_broadcast },
    { "two_clients_destroy_busy", test_two_clients_destroy_busy },
    { "killed_waiter", test_killed_waiter },
    { "exit_while_waiting", test_exit_while_waiting },
    { "no_lost_wakeup", test_no_lost_wakeup },
    { "barrier_generations", test_barrier_generations },
    { "barrier_timeout", test_barrier_timeout },
    { "barrier_crashed", test_barrier_crashed },
    { "status_kinds", test_status_kinds },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "cond", tests, suite_setup, suite_teardown, 240);
}
