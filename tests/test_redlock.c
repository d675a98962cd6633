/* test_redlock.c - the locks on a Redlock quorum of five independent
 * masters (real redis-servers on free loopback ports), through the public
 * API with [redlock] in the configuration (docs/CONTRACT.md section 9):
 *
 *   basic               a hold is on every master; another client finds
 *                       it busy; unlock frees every master; tokens rise
 *   two_stopped         two masters SIGSTOPped: lock, unlock, busy and a
 *                       contended counter (2 clients x 3 threads) work,
 *                       each call well within a command timeout
 *   three_stopped       three masters SIGSTOPped: no majority, so try
 *                       fails (EIO) and a timed lock gives up by its
 *                       deadline; after SIGCONT locks work again
 *   restart             a hold on exactly three masters; one of them is
 *                       killed and restarted without persistence (it
 *                       forgot the hold): with restart_delay_ms the
 *                       restarted master does not vote, so another client
 *                       cannot make a second majority; the same with
 *                       restart_delay_ms = 0 does give two holders (the
 *                       control: the delay is what prevents it)
 *   fencing             a master's counter far ahead of the others: the
 *                       token is the highest, written back until a
 *                       majority has it, and the next token is higher
 *   rwlock_and_robust   shared holders on the quorum, a writer waits and
 *                       holds new readers back; an exclusive holder that
 *                       dies gives the next robust locker EOWNERDEAD
 *   drift               one master's clock runs 10% fast (an LD_PRELOADed
 *                       shim, tests/clockshim.c): a hold without renewal
 *                       stays exclusive for as long as the client counts
 *                       it valid (lease less the drift allowance), and it
 *                       is free again before a client that allowed no
 *                       drift would stop counting it
 *   wakeup              a blocked caller is woken by the release, not by
 *                       its re-check period (10 s here)
 *   once                rdonce's done mark by majority
 *   status_kinds        the run-once mark in rdlock_status_kinds; stray
 *                       keys of the other kinds read absent
 *   dead_host           a master that drops every SYN (a powered-off
 *                       host): no call waits out the connect timeout
 *   password_stopped    masters with a password and a db, one stopped:
 *                       logging in does not wait for it
 *   undo_duplicated     a waiter's first attempt, granted by one master
 *                       only, is given back there ('aq'); a copy of that
 *                       give-back (captured with MONITOR) delivered again
 *                       after the waiter's next attempt took the lock does
 *                       not take back that master's grant
 *   unlock_partial      an unlock that two masters confirm, a third never
 *                       had the hold and the other two are stopped: the
 *                       lock is free for another client at once, and the
 *                       unlock asks the stopped two until they answer (0),
 *                       instead of EIO, which would say the hold is still
 *                       whole (a second unlock then finds it gone: ENOLCK)
 * Semaphores, condition variables and barriers on the quorum:
 * test_redlock_prims.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

#define N 5
#define LEASE_MS 3000

static rdt_server_t g_m[N];
static int g_up;
static char g_ini[600], g_ini_delay[600], g_ini_nodelay[600];
static rdlock_client_t *g_c1, *g_c2;

static int write_ini(char *out, size_t n, const char *base, const char *extra)
{
    const char *path = rdt_quorum_ini(g_m, N, base, extra, LEASE_MS, 10000);
    if (path == NULL)
        return -1;
    snprintf(out, n, "%s", path);
    return 0;
}

static int suite_setup(void)
{
    for (int k = 0; k < N; k++)
        if (rdt_server_start(&g_m[k], NULL, NULL) != 0)
            return -1;
    g_up = 1;
    /* The masters have just started: a restart delay would keep them all
     * out of the vote for a lease.  Only the restart test wants one. */
    if (write_ini(g_ini, sizeof g_ini, "redlock.ini", "restart_delay_ms = 0\n") != 0 ||
        write_ini(g_ini_delay, sizeof g_ini_delay, "delay.ini", "restart_delay_ms = 3000\n") != 0 ||
        write_ini(g_ini_nodelay, sizeof g_ini_nodelay, "nodelay.ini", "restart_delay_ms = 0\n") != 0)
        return -1;
    if (rdlock_client_open(&g_c1, g_ini) != 0 || rdlock_client_open(&g_c2, g_ini) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open on the quorum failed\n");
        return -1;
    }
    return 0;
}

static int suite_teardown(void)
{
    int rc = rdt_close_clients(&g_c1, &g_c2, NULL);
    if (g_up)
        for (int k = 0; k < N; k++)
            rdt_server_stop(&g_m[k]);
    g_up = 0;
    return rc;
}

/* Masters on which name's lock key exists. */
static int held_on(const char *name)
{
    int n = 0;
    for (int k = 0; k < N; k++)
        n += rdt_int_on(&g_m[k], 0, "EXISTS %s", rdt_key(name, "")) == 1;
    return n;
}

static int lock_init(rdlock_t *l, const char *name, rdlock_client_t *c, int robust)
{
    rdlock_attr_t a;
    int rc;
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, c);
    if (robust)
        rdlock_attr_setrobust(&a, RDLOCK_ROBUST);
    rc = rdlock_init(l, name, &a);
    rdlock_attr_destroy(&a);
    return rc;
}

static void test_basic(void)
{
    rdlock_t a, b;
    uint64_t t1 = 0, t2 = 0;
    RDT_ASSERT_RC(0, lock_init(&a, "rl-basic", g_c1, 0));
    RDT_ASSERT_RC(0, lock_init(&b, "rl-basic", g_c2, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_EQ_LL(N, held_on("rl-basic"));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&a, &t1));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&b));
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    RDT_ASSERT_EQ_LL(0, held_on("rl-basic"));
    RDT_ASSERT_RC(0, rdlock_trylock(&b));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&b, &t2));
    CU_ASSERT(t2 > t1);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&a));
    RDT_ASSERT_RC(0, rdlock_unlock(&b));
    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
}

/* A contended counter: each thread adds ITER times under the lock, and
 * checks that nobody else is inside. */
#define THREADS 3
#define ITER 40
static long g_counter;
static int g_inside, g_overlaps, g_errors;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void *counter_thread(void *arg)
{
    rdlock_t l;
    if (lock_init(&l, "rl-count", arg, 0) != 0) {
        __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (int i = 0; i < ITER; i++) {
        int rc = rdlock_lock(&l);
        if (rc != 0) {
            fprintf(stderr, "counter_thread: lock: %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (__atomic_add_fetch(&g_inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&g_overlaps, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&g_mu);
        g_counter++;
        pthread_mutex_unlock(&g_mu);
        __atomic_sub_fetch(&g_inside, 1, __ATOMIC_SEQ_CST);
        if ((rc = rdlock_unlock(&l)) != 0) {
            fprintf(stderr, "counter_thread: unlock: %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
        }
    }
    rdlock_destroy(&l);
    return NULL;
}

static void test_two_stopped(void)
{
    rdlock_t a, b;
    pthread_t th[2 * THREADS];
    long long t0, worst = 0;

    rdt_server_pause(&g_m[1]);
    rdt_server_pause(&g_m[3]);
    RDT_ASSERT_RC(0, lock_init(&a, "rl-two", g_c1, 0));
    RDT_ASSERT_RC(0, lock_init(&b, "rl-two", g_c2, 0));
    for (int i = 0; i < 5; i++) {
        long long d;
        long long t1, t2;
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdlock_lock(&a));
        t1 = rdt_now_ms();
        RDT_ASSERT_RC(EBUSY, rdlock_trylock(&b));
        t2 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdlock_unlock(&a));
        d = (t1 - t0) + (rdt_now_ms() - t2);
        /* A try whose attempt on a stopped master got no answer waits
         * until that attempt is void (its stamp: a command timeout), so
         * that it cannot take the lock after the EBUSY. */
        CU_ASSERT(t2 - t1 < 1000 + 500);
        if (getenv("RDT_VERBOSE"))
            fprintf(stderr, "two_stopped: round %d: %lld ms (lock %lld, try %lld, unlock %lld)\n", i, d, t1 - t0,
                    t2 - t1, rdt_now_ms() - t2);
        if (d > worst)
            worst = d;
    }
    /* Lock and unlock wait for the stopped masters at most a grace (the
     * first time; then they are skipped), never a command timeout. */
    CU_ASSERT(worst < 500);
    g_counter = 0;
    g_overlaps = g_errors = 0;
    for (int i = 0; i < 2 * THREADS; i++)
        pthread_create(&th[i], NULL, counter_thread, i % 2 ? g_c2 : g_c1);
    for (int i = 0; i < 2 * THREADS; i++)
        pthread_join(th[i], NULL);
    RDT_ASSERT_EQ_LL(2 * THREADS * ITER, g_counter);
    RDT_ASSERT_EQ_LL(0, g_overlaps);
    RDT_ASSERT_EQ_LL(0, g_errors);
    rdt_server_resume(&g_m[1]);
    rdt_server_resume(&g_m[3]);
    rdlock_destroy(&a);
    rdlock_destroy(&b);
}

static void test_three_stopped(void)
{
    rdlock_t a;
    struct timespec ts;
    long long t0;
    int rc;

    RDT_ASSERT_RC(0, lock_init(&a, "rl-three", g_c1, 0));
    for (int k = 0; k < 3; k++)
        rdt_server_pause(&g_m[k]);
    RDT_ASSERT_RC(EIO, rdlock_trylock(&a));
    t0 = rdt_now_ms();
    ts = rdt_abstime(CLOCK_REALTIME, 1500);
    rc = rdlock_timedlock(&a, &ts);
    CU_ASSERT(rc == EIO || rc == ETIMEDOUT);
    /* By its deadline, plus at most an attempt in flight and the
     * withdrawal of its queue marks (a command timeout each). */
    CU_ASSERT(rdt_now_ms() - t0 < 1500 + 2 * 1000 + 500);
    for (int k = 0; k < 3; k++)
        rdt_server_resume(&g_m[k]);
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    rdlock_destroy(&a);
}

/* The requests sent to a stopped master are still in its socket buffer
 * when it resumes, and an acquire among them still takes effect unless it
 * arrives after its stamp (sending + command_timeout_ms, docs/CONTRACT.md
 * section 11): a hold meant to stand on three masters only waits that
 * out before the other two resume. */
static void void_wait(void)
{
    usleep((1000 + 200) * 1000);
}

/* A hold on masters 0, 1, 2 only (3 and 4 stopped while it is taken),
 * then master 0 restarted empty; can client ini take it too? */
static int restart_case(const char *ini, const char *name)
{
    rdlock_client_t *c3 = NULL, *c4 = NULL;
    rdlock_t a, b;
    int rc, got;

    if (rdlock_client_open(&c4, ini) != 0 || lock_init(&a, name, c4, 0) != 0)
        return -100;
    rdt_server_pause(&g_m[3]);
    rdt_server_pause(&g_m[4]);
    rc = rdlock_lock(&a);
    void_wait();
    rdt_server_resume(&g_m[3]);
    rdt_server_resume(&g_m[4]);
    if (rc != 0)
        return -101;
    if (held_on(name) != 3)
        return -102;
    rdt_server_kill(&g_m[0]);
    if (rdt_server_restart(&g_m[0]) != 0)
        return -103;
    if (rdlock_client_open(&c3, ini) != 0 || lock_init(&b, name, c3, 0) != 0)
        return -104;
    got = rdlock_trylock(&b);
    if (got == 0)
        rdlock_unlock(&b);
    rdlock_destroy(&b);
    rdlock_client_close(c3);
    rc = rdlock_unlock(&a);
    rdlock_destroy(&a);
    rdlock_client_close(c4);
    return got == 0 ? 0 : got == EBUSY ? 1 : -105 - (rc != 0);
}

static void test_restart(void)
{
    /* The restart delay (the lease, by default) keeps the restarted
     * master out of the vote: busy. */
    RDT_ASSERT_EQ_LL(1, restart_case(g_ini_delay, "rl-restart"));
    /* Control: without it the forgetful master makes a second majority. */
    RDT_ASSERT_EQ_LL(0, restart_case(g_ini_nodelay, "rl-restart2"));
}

static void test_fencing(void)
{
    rdlock_t a;
    uint64_t t1 = 0, t2 = 0;
    int at = 0;
    RDT_ASSERT_RC(0, lock_init(&a, "rl-fence", g_c1, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    rdt_int_on(&g_m[2], 0, "SET %s 1000", rdt_fence_key(NULL, "rl-fence"));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&a, &t1));
    RDT_ASSERT_EQ_LL(1001, (long long)t1);
    for (int k = 0; k < N; k++)
        at += rdt_int_on(&g_m[k], 0, "INCRBY %s 0", rdt_fence_key(NULL, "rl-fence")) >= 1001;
    CU_ASSERT(at >= N / 2 + 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    /* Master 2 forgets everything: the next token is still higher. */
    rdt_int_on(&g_m[2], 0, "DEL %s", rdt_fence_key(NULL, "rl-fence"));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&a, &t2));
    CU_ASSERT(t2 > t1);
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    rdlock_destroy(&a);
}

static int die_holding(void *arg)
{
    rdlock_client_t *c = NULL;
    rdlock_t l;
    (void)arg;
    if (rdlock_client_open(&c, g_ini) != 0 || lock_init(&l, "rl-robust", c, 1) != 0)
        return 2;
    if (rdlock_lock(&l) != 0)
        return 3;
    kill(getpid(), SIGKILL);
    return 4;
}

static void test_rwlock_and_robust(void)
{
    rdrwlock_t r1, r2, w;
    rdlock_attr_t a1, a2;
    rdlock_t l;
    struct timespec ts;
    pid_t pid;

    rdlock_attr_init(&a1);
    rdlock_attr_setclient(&a1, g_c1);
    rdlock_attr_init(&a2);
    rdlock_attr_setclient(&a2, g_c2);
    RDT_ASSERT_RC(0, rdrwlock_init(&r1, "rl-rw", &a1));
    RDT_ASSERT_RC(0, rdrwlock_init(&r2, "rl-rw", &a2));
    RDT_ASSERT_RC(0, rdrwlock_init(&w, "rl-rw", &a2));
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&r1));
    RDT_ASSERT_RC(0, rdrwlock_tryrdlock(&r2));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&r2));
    RDT_ASSERT_RC(EBUSY, rdrwlock_trywrlock(&w));
    /* A waiting writer (its timed wait runs out) holds new readers back
     * while it waits: checked by its queue mark on the masters. */
    ts = rdt_abstime(CLOCK_REALTIME, 300);
    RDT_ASSERT_RC(ETIMEDOUT, rdrwlock_timedwrlock(&w, &ts));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&r1));
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&w));
    RDT_ASSERT_RC(EBUSY, rdrwlock_tryrdlock(&r1));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&w));
    rdrwlock_destroy(&r1);
    rdrwlock_destroy(&r2);
    rdrwlock_destroy(&w);
    rdlock_attr_destroy(&a1);
    rdlock_attr_destroy(&a2);

    pid = rdt_fork(die_holding, NULL);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_wait(pid, 20000));
    RDT_ASSERT_RC(0, lock_init(&l, "rl-robust", g_c1, 1));
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_lock(&l));
    RDT_ASSERT_RC(0, rdlock_consistent(&l));
    RDT_ASSERT_RC(0, rdlock_unlock(&l));
    RDT_ASSERT_RC(0, rdlock_lock(&l));
    RDT_ASSERT_RC(0, rdlock_unlock(&l));
    rdlock_destroy(&l);
}

/* The server time of master s in ms (TIME), -1 on error. */
static long long server_ms(const rdt_server_t *s)
{
    redisReply *r = rdt_cmd_on(s, "TIME");
    long long ms = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    if (r != NULL)
        freeReplyObject(r);
    return ms;
}

#define DRIFT_RATE 1.10 /* the fast master's clock: 10% fast */
#define DRIFT_PCT 12     /* drift_factor 0.12: it covers the 10% */

static void test_drift(void)
{
    rdt_server_t fast;
    rdlock_client_t *c = NULL, *c2 = NULL;
    rdlock_t a, b;
    char shim[4096], env[4200], text[2048];
    const char *ini;
    long long t0, ta, left, started, skew, el;
    int rc, off;

    /* Master 0 of this quorum is a redis-server whose wall clock runs 10%
     * fast (tests/clockshim.c, LD_PRELOADed: faketime cannot run Debian's
     * redis-server).  Its copy of a hold expires after lease / 1.10 of
     * real time, about 270 ms before a client that allows no drift would
     * stop counting the hold valid (a window wide enough for a client
     * slowed by valgrind).  drift_factor = 0.12 covers it. */
    if (realpath("tests/clockshim.so", shim) == NULL) {
        fprintf(stderr, "test_drift: tests/clockshim.so not found (make check builds it)\n");
        CU_FAIL_FATAL("tests/clockshim.so missing");
    }
    snprintf(env, sizeof env, "LD_PRELOAD=%s RDT_CLOCK_RATE=%.2f", shim, DRIFT_RATE);
    CU_ASSERT_EQUAL_FATAL(rdt_server_start_env(&fast, NULL, NULL, env), 0);
    started = rdt_now_ms();
    off = snprintf(text, sizeof text, "[redlock]\nmasters = 127.0.0.1:%d", fast.port);
    for (int k = 1; k < N; k++)
        off += snprintf(text + off, sizeof text - (size_t)off, ", 127.0.0.1:%d", g_m[k].port);
    snprintf(text + off, sizeof text - (size_t)off,
             "\nrestart_delay_ms = 0\ndrift_factor = 0.%02d\n[redis]\ncommand_timeout_ms = 1000\n[lock]\n"
             "lease_ms = %d\nretry_interval_ms = 10000\nretry_jitter_ms = 5\n[watchdog]\nenabled = no\n",
             DRIFT_PCT, LEASE_MS);
    ini = rdt_write_file(&g_m[0], "drift.ini", text);
    CU_ASSERT_FATAL(ini != NULL);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    RDT_ASSERT_RC(0, rdlock_client_open(&c2, ini));
    RDT_ASSERT_RC(0, lock_init(&a, "rl-drift", c, 0));
    RDT_ASSERT_RC(0, lock_init(&b, "rl-drift", c2, 0));
    /* Masters 3 and 4 stopped while the hold is taken: it stands on the
     * fast one, 1 and 2 only. */
    rdt_server_pause(&g_m[3]);
    rdt_server_pause(&g_m[4]);
    t0 = rdt_now_ms();
    rc = rdlock_trylock(&a);
    ta = rdt_now_ms() - t0;
    void_wait();
    rdt_server_resume(&g_m[3]);
    rdt_server_resume(&g_m[4]);
    RDT_ASSERT_RC(0, rc);
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&fast, 0, "EXISTS %s", rdt_key("rl-drift", "")));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_m[1], 0, "EXISTS %s", rdt_key("rl-drift", "")));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_m[2], 0, "EXISTS %s", rdt_key("rl-drift", "")));
    /* The client counts it valid for lease * (1 - 0.12) - 2 ms from its
     * first request; until then nobody else gets it. */
    left = LEASE_MS - LEASE_MS * DRIFT_PCT / 100 - 2 - 50;
    while (rdt_now_ms() - t0 < left) {
        RDT_ASSERT_RC(EBUSY, rdlock_trylock(&b));
        usleep(100000);
    }
    /* Past the fast master's end of it (its grant came at most ta after
     * t0), a majority is free again (0, 3, 4): before a client without a
     * drift allowance would stop counting its hold valid. */
    while (rdt_now_ms() - t0 < ta + (long long)(LEASE_MS / DRIFT_RATE) + 20)
        usleep(5000);
    /* Tries until then (a try can find a master in its back-off): one
     * of them gets it. */
    rc = EBUSY;
    while (rc != 0 && rdt_now_ms() - t0 < LEASE_MS - 2 - 10) {
        if ((rc = rdlock_trylock(&b)) != 0)
            usleep(20000);
    }
    el = rdt_now_ms() - t0;
    if (rc != 0)
        fprintf(stderr, "test_drift: no try got the lock before lease - 2 ms (%lld ms; the first try took %lld ms)\n",
                el, ta);
    RDT_ASSERT_RC(0, rc);
    if (rc == 0)
        RDT_ASSERT_RC(0, rdlock_unlock(&b));
    rc = rdlock_unlock(&a);
    CU_ASSERT(rc == ENOLCK);
    /* The shim did run the fast master's clock 10% fast. */
    skew = server_ms(&fast) - server_ms(&g_m[1]);
    el = rdt_now_ms() - started;
    if (skew < el * (DRIFT_RATE - 1) / 2)
        fprintf(stderr, "test_drift: the fast master is only %lld ms ahead after %lld ms\n", skew, el);
    CU_ASSERT(skew >= el * (DRIFT_RATE - 1) / 2);
    rdlock_destroy(&a);
    rdlock_destroy(&b);
    rdlock_client_close(c);
    rdlock_client_close(c2);
    rdt_server_stop(&fast);
}

struct waker {
    rdlock_t *l;
    long long got_at;
    int rc;
};

static void *blocked_locker(void *arg)
{
    struct waker *w = arg;
    w->rc = rdlock_lock(w->l);
    w->got_at = rdt_now_ms();
    if (w->rc == 0)
        rdlock_unlock(w->l);
    return NULL;
}

static void test_wakeup(void)
{
    rdlock_t a, b;
    struct waker w = { &b, 0, -1 };
    pthread_t th;
    long long rel;
    RDT_ASSERT_RC(0, lock_init(&a, "rl-wake", g_c1, 0));
    RDT_ASSERT_RC(0, lock_init(&b, "rl-wake", g_c2, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    pthread_create(&th, NULL, blocked_locker, &w);
    /* Let it look and wait (its re-check period is 10 s). */
    usleep(300000);
    rel = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    pthread_join(th, NULL);
    RDT_ASSERT_RC(0, w.rc);
    CU_ASSERT(w.got_at - rel < 1000);
    rdlock_destroy(&a);
    rdlock_destroy(&b);
}

static int g_runs;
static void once_fn(void)
{
    g_runs++;
}

/* rdonce on the quorum: the done mark goes to every master, and one
 * master that has it means done (it is set only after the function
 * returned).  Semaphores, conditions and barriers on the quorum:
 * test_redlock_prims.c. */
static void test_once(void)
{
    rdonce_t o1, o2;
    rdlock_attr_t a1, a2;
    int marks = 0;

    rdlock_attr_init(&a1);
    rdlock_attr_setclient(&a1, g_c1);
    rdlock_attr_init(&a2);
    rdlock_attr_setclient(&a2, g_c2);
    RDT_ASSERT_RC(0, rdonce_init(&o1, "rl-once", &a1));
    RDT_ASSERT_RC(0, rdonce_init(&o2, "rl-once", &a2));
    g_runs = 0;
    RDT_ASSERT_RC(0, rdonce(&o1, once_fn));
    RDT_ASSERT_RC(0, rdonce(&o2, once_fn));
    RDT_ASSERT_EQ_LL(1, g_runs);
    for (int k = 0; k < N; k++)
        marks += rdt_int_on(&g_m[k], 0, "EXISTS %s", rdt_key("rl-once", ":once")) == 1;
    CU_ASSERT(marks >= N / 2 + 1);
    /* Two masters lose the mark: a third still has it. */
    rdt_int_on(&g_m[0], 0, "DEL %s", rdt_key("rl-once", ":once"));
    rdt_int_on(&g_m[1], 0, "DEL %s", rdt_key("rl-once", ":once"));
    RDT_ASSERT_RC(0, rdonce_destroy(&o2));
    RDT_ASSERT_RC(0, rdonce_init(&o2, "rl-once", &a2));
    RDT_ASSERT_RC(0, rdonce(&o2, once_fn));
    RDT_ASSERT_EQ_LL(1, g_runs);
    rdonce_destroy(&o1);
    rdonce_destroy(&o2);
    rdlock_attr_destroy(&a1);
    rdlock_attr_destroy(&a2);
}

/* rdlock_status_kinds on the quorum: the run-once mark reads done while
 * one master of those that answer has it, as rdonce reads it; stray
 * semaphore, condition and barrier keys on one master, where no step ever
 * ran, read absent (the kinds themselves: test_redlock_prims.c). */
static void test_status_kinds(void)
{
    rdlock_kinds_t k;
    rdonce_t o;
    rdlock_attr_t a;
    char host[256] = "";

    k.size = sizeof k;
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c1, "rl-kinds", &k));
    CU_ASSERT(!k.sem && !k.once && !k.cond && !k.barrier);
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, g_c1);
    RDT_ASSERT_RC(0, rdonce_init(&o, "rl-kinds", &a));
    RDT_ASSERT_RC(0, rdonce(&o, once_fn));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c2, "rl-kinds", &k));
    CU_ASSERT(k.once == 1);
    RDT_ASSERT_EQ_LL(getpid(), k.once_by.pid);
    gethostname(host, sizeof host - 1);
    CU_ASSERT_STRING_EQUAL(k.once_by.host, host);
    /* the mark left on the last master only: still done */
    for (int i = 0; i < N - 1; i++)
        rdt_int_on(&g_m[i], 0, "DEL %s", rdt_key("rl-kinds", ":once"));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_m[N - 1], 0, "EXISTS %s", rdt_key("rl-kinds", ":once")));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c2, "rl-kinds", &k));
    CU_ASSERT(k.once == 1);
    rdt_int_on(&g_m[N - 1], 0, "DEL %s", rdt_key("rl-kinds", ":once"));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c2, "rl-kinds", &k));
    CU_ASSERT(k.once == 0 && k.once_by.pid == 0);
    /* stray semaphore, condition and barrier keys on a master: absent */
    rdt_int_on(&g_m[0], 0, "HSET %s t l v 3", rdt_key("rl-kinds", ":s"));
    rdt_int_on(&g_m[0], 0, "HSET %s n 1 b 0", rdt_key("rl-kinds", ":cv"));
    rdt_int_on(&g_m[0], 0, "HSET %s n 2 g 1 a 0", rdt_key("rl-kinds", ":b"));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c2, "rl-kinds", &k));
    CU_ASSERT(!k.sem && !k.cond && !k.barrier);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rl-kinds"));
    rdt_int_on(&g_m[0], 0, "DEL %s %s %s", rdt_key("rl-kinds", ":s"), rdt_key("rl-kinds", ":cv"),
               rdt_key("rl-kinds", ":b"));
    rdonce_destroy(&o);
    rdlock_attr_destroy(&a);
}

/* A loopback port that takes no connection, as a powered-off host's does
 * not: a listening socket with a backlog of 0 whose queue two connections
 * that are never accepted fill, so that the kernel drops every later SYN
 * and a connect waits for its timeout.  The port, or -1; fds[0..2] to
 * close. */
static int blackhole(int fds[3])
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int i;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((fds[0] = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(fds[0], (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fds[0], 0) != 0 || getsockname(fds[0], (struct sockaddr *)&a, &len) != 0)
        return -1;
    for (i = 1; i < 3; i++) {
        struct pollfd p;
        if ((fds[i] = socket(AF_INET, SOCK_STREAM, 0)) < 0 || fcntl(fds[i], F_SETFL, O_NONBLOCK) != 0)
            return -1;
        if (connect(fds[i], (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS)
            return -1;
        p.fd = fds[i];
        p.events = POLLOUT;
        poll(&p, 1, i == 1 ? 1000 : 100); /* the first completes; the second may not */
    }
    return ntohs(a.sin_port);
}

/* The library's log lines of the dead_host case, with their times, kept
 * to be printed if a call is slow (a failure then says why). */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[16384];
static size_t g_log_len;

static void keep_log(int level, const char *msg, void *arg)
{
    char line[400];
    int n;
    (void)arg;
    n = snprintf(line, sizeof line, "%lld %d %s\n", rdt_now_ms(), level, msg);
    pthread_mutex_lock(&g_log_mu);
    if (n > 0 && g_log_len + (size_t)n < sizeof g_log) {
        memcpy(g_log + g_log_len, line, (size_t)n);
        g_log_len += (size_t)n;
    }
    pthread_mutex_unlock(&g_log_mu);
}

/* A master that does not answer its SYNs (a powered-off host): new
 * connections to the masters are opened all at once, and the round goes
 * on a grace after a majority has connected, so neither the client's
 * opening nor a call after the dead master's backoff ends waits out the
 * connect timeout (5 s here; the calls took 5 s each before). */
static void test_dead_host(void)
{
    int fds[3] = { -1, -1, -1 }, port, off, i;
    char text[1024];
    const char *ini;
    rdlock_client_t *c = NULL;
    rdlock_t l;
    long long t0, worst = 0;

    port = blackhole(fds);
    CU_ASSERT_FATAL(port > 0);
    off = snprintf(text, sizeof text, "[redlock]\nmasters = ");
    for (i = 0; i < N - 1; i++)
        off += snprintf(text + off, sizeof text - (size_t)off, "127.0.0.1:%d, ", g_m[i].port);
    snprintf(text + off, sizeof text - (size_t)off,
             "127.0.0.1:%d\nrestart_delay_ms = 0\n[redis]\nconnect_timeout_ms = 5000\ncommand_timeout_ms = 1000\n"
             "[lock]\nlease_ms = %d\n",
             port, LEASE_MS);
    ini = rdt_write_file(&g_m[0], "deadhost.ini", text);
    CU_ASSERT_FATAL(ini != NULL);
    g_log_len = 0;
    rdlock_set_logger(keep_log, NULL);
    t0 = rdt_now_ms();
    fprintf(stderr, "test_dead_host: start at %lld, dead port %d\n", t0, port);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    worst = rdt_now_ms() - t0;
    if (worst >= 2500)
        fprintf(stderr, "test_dead_host: rdlock_client_open took %lld ms\n", worst);
    RDT_ASSERT_RC(0, lock_init(&l, "rl-deadhost", c, 0));
    /* 3 s of calls: the dead master's backoff (100 ms, doubling to 2 s)
     * ends several times, and each time a call tries it again. */
    for (i = 0; i < 30; i++) {
        long long d;
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdlock_lock(&l));
        RDT_ASSERT_RC(0, rdlock_unlock(&l));
        d = rdt_now_ms() - t0;
        if (d >= 2500)
            fprintf(stderr, "test_dead_host: lock+unlock %d took %lld ms\n", i, d);
        if (d > worst)
            worst = d;
        usleep(100000);
    }
    rdlock_set_logger(NULL, NULL);
    /* Well below the connect timeout, with room for a live master that
     * the loaded machine keeps from answering for a command timeout. */
    if (worst >= 2500)
        fprintf(stderr, "test_dead_host: a call took %lld ms; the library said:\n%.*s", worst, (int)g_log_len, g_log);
    CU_ASSERT(worst < 2500);
    rdlock_destroy(&l);
    rdlock_client_close(c);
    for (i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Masters that want a password, one of them SIGSTOPped: a stopped server
 * still completes TCP handshakes (the kernel does), so a new connection
 * to it connects and then hears nothing.  AUTH and SELECT go with the
 * setup round's other questions, under its grace, rather than one
 * master after another with a command timeout each (2 s here). */
static void test_password_stopped(void)
{
    rdt_server_t pm[3];
    rdlock_client_t *c = NULL;
    rdlock_t l;
    char text[1024];
    const char *ini;
    long long t0, d;
    int k, up = 0;

    for (k = 0; k < 3; k++) {
        if (rdt_server_start(&pm[k], "rl-secret", NULL) != 0)
            break;
        up++;
    }
    CU_ASSERT_FATAL(up == 3);
    snprintf(text, sizeof text,
             "[redlock]\nmasters = 127.0.0.1:%d, 127.0.0.1:%d, 127.0.0.1:%d\nrestart_delay_ms = 0\n"
             "[redis]\npassword = rl-secret\ndb = 2\nconnect_timeout_ms = 2000\ncommand_timeout_ms = 2000\n"
             "[lock]\nlease_ms = %d\n",
             pm[0].port, pm[1].port, pm[2].port, LEASE_MS);
    ini = rdt_write_file(&g_m[0], "password.ini", text);
    CU_ASSERT_FATAL(ini != NULL);
    /* All three up: logged in, the db selected, a lock works. */
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    RDT_ASSERT_RC(0, lock_init(&l, "rl-pass", c, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&l));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&pm[1], 2, "EXISTS %s", rdt_key("rl-pass", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&l));
    rdlock_destroy(&l);
    rdlock_client_close(c);
    /* One stopped: a new client still opens and locks at once. */
    rdt_server_pause(&pm[2]);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    RDT_ASSERT_RC(0, lock_init(&l, "rl-pass", c, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&l));
    RDT_ASSERT_RC(0, rdlock_unlock(&l));
    d = rdt_now_ms() - t0;
    if (d >= 1500)
        fprintf(stderr, "test_password_stopped: open + lock + unlock took %lld ms\n", d);
    CU_ASSERT(d < 1500);
    rdlock_destroy(&l);
    rdlock_client_close(c);
    rdt_server_resume(&pm[2]);
    for (k = 0; k < up; k++)
        rdt_server_stop(&pm[k]);
}

/* ---- a give-back delivered twice */

/* One MONITOR line ("<time> [<db> <addr>] "arg" "arg" ...") into argv
 * (unescaped, malloc'd, at most max).  The number of arguments. */
static int monitor_args(const char *line, char **argv, size_t *lens, int max)
{
    const char *p = strchr(line, ']');
    int n = 0;
    while (p != NULL && (p = strchr(p, '"')) != NULL && n < max) {
        char *out = malloc(strlen(p) + 1);
        size_t l = 0;
        for (p++; *p != '\0' && *p != '"'; p++) {
            if (*p != '\\' || p[1] == '\0') {
                out[l++] = *p;
                continue;
            }
            p++;
            if (*p == 'x' && p[1] != '\0' && p[2] != '\0') {
                char hex[3] = { p[1], p[2], '\0' };
                out[l++] = (char)strtol(hex, NULL, 16);
                p += 2;
            } else {
                out[l++] = *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p == 't' ? '\t' : *p;
            }
        }
        if (*p == '"')
            p++;
        argv[n] = out;
        lens[n++] = l;
    }
    return n;
}

/* A thread that locks (blocking), then unlocks once told to (a hold is
 * its thread's). */
typedef struct holder {
    rdlock_t *l;
    int lock_rc, rc, locked, go; /* rc: the unlock's */
    long long done;              /* when the unlock returned */
} holder_t;

static void *holder_thread(void *arg)
{
    holder_t *u = arg;
    u->lock_rc = rdlock_lock(u->l);
    __atomic_store_n(&u->locked, 1, __ATOMIC_RELEASE);
    if (u->lock_rc != 0)
        return NULL;
    while (!__atomic_load_n(&u->go, __ATOMIC_ACQUIRE))
        usleep(1000);
    u->rc = rdlock_unlock(u->l);
    u->done = rdt_now_ms();
    return NULL;
}

static void test_undo_duplicated(void)
{
    rdlock_t a, b;
    holder_t w = { 0 };
    pthread_t t;
    redisContext *mon, *m0;
    redisReply *r;
    char *argv[64];
    size_t lens[64];
    int argc = 0, held;
    long long until;

    RDT_ASSERT_RC(0, lock_init(&a, "rl-undo", g_c1, 0));
    RDT_ASSERT_RC(0, lock_init(&b, "rl-undo", g_c2, 0));
    /* B holds the lock on masters 1-4: master 0 is free for A's first
     * attempt, the others are not.  (B's attempt on master 0, stopped,
     * is void a command timeout after it was sent.) */
    rdt_server_pause(&g_m[0]);
    RDT_ASSERT_RC(0, rdlock_lock(&b));
    usleep(1200 * 1000);
    rdt_server_resume(&g_m[0]);
    RDT_ASSERT_EQ_LL(4, held_on("rl-undo"));

    mon = rdt_connect(&g_m[0]);
    m0 = rdt_connect(&g_m[0]);
    CU_ASSERT_FATAL(mon != NULL && m0 != NULL);
    r = redisCommand(mon, "MONITOR");
    CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisSetTimeout(mon, (struct timeval){ 1, 0 });

    /* A waits: its first attempt is granted on master 0 alone, and given
     * back there. */
    w.l = &a;
    pthread_create(&t, NULL, holder_thread, &w);
    until = rdt_now_ms() + 10000;
    while (argc == 0 && rdt_now_ms() < until) {
        void *v = NULL;
        if (redisGetReply(mon, &v) != REDIS_OK) {
            if (mon->err == REDIS_ERR_IO && errno == EAGAIN) {
                mon->err = 0; /* a read timeout: ask again */
                continue;
            }
            break;
        }
        r = v;
        if (r->type == REDIS_REPLY_STATUS && strstr(r->str, "\"aq\"") != NULL)
            argc = monitor_args(r->str, argv, lens, 64);
        freeReplyObject(r);
    }
    redisFree(mon);
    CU_ASSERT_FATAL(argc > 3);
    RDT_ASSERT_EQ_LL(0, __atomic_load_n(&w.locked, __ATOMIC_ACQUIRE));

    /* B leaves; A's next attempt takes the lock (master 0, free, among
     * its grants). */
    RDT_ASSERT_RC(0, rdlock_unlock(&b));
    while (!__atomic_load_n(&w.locked, __ATOMIC_ACQUIRE))
        usleep(1000);
    RDT_ASSERT_RC(0, w.lock_rc);
    held = held_on("rl-undo");
    CU_ASSERT(held >= 3);
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_m[0], 0, "EXISTS %s", rdt_key("rl-undo", "")));

    /* The network delivers the give-back again: master 0 keeps A's grant
     * (without it, A's hold could stand on fewer masters than a
     * majority while A counts it held). */
    r = redisCommandArgv(m0, argc, (const char **)argv, lens);
    CU_ASSERT(r != NULL && r->type != REDIS_REPLY_ERROR);
    if (r != NULL)
        freeReplyObject(r);
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_m[0], 0, "EXISTS %s", rdt_key("rl-undo", "")));
    RDT_ASSERT_EQ_LL(held, held_on("rl-undo"));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&b));

    __atomic_store_n(&w.go, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    RDT_ASSERT_EQ_LL(0, held_on("rl-undo"));
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    redisFree(m0);
    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
}

/* ---- an unlock that only some masters confirm */

static void test_unlock_partial(void)
{
    rdlock_t a, b;
    rdlock_attr_t at;
    holder_t u = { 0 };
    pthread_t t;
    long long resumed;
    /* Longer than the unlock's retries against two stopped masters
     * (command_retries = 3 of a 1 s timeout each) and within the lease. */
    const int stop_ms = 5000;

    rdlock_attr_init(&at);
    rdlock_attr_setclient(&at, g_c1);
    rdlock_attr_setlease(&at, 15000);
    RDT_ASSERT_RC(0, rdlock_init(&a, "rl-partial", &at));
    rdlock_attr_destroy(&at);
    RDT_ASSERT_RC(0, lock_init(&b, "rl-partial", g_c2, 0));
    /* The hold on masters 1-4 only. */
    rdt_server_pause(&g_m[0]);
    u.l = &a;
    pthread_create(&t, NULL, holder_thread, &u);
    while (!__atomic_load_n(&u.locked, __ATOMIC_ACQUIRE))
        usleep(1000);
    /* The attempt master 0 got while stopped is void a command timeout
     * (1 s) after it was sent (its stamp): only then may it run. */
    usleep(1200 * 1000);
    rdt_server_resume(&g_m[0]);
    CU_ASSERT_EQUAL_FATAL(u.lock_rc, 0);
    RDT_ASSERT_EQ_LL(4, held_on("rl-partial"));
    rdt_server_pause(&g_m[1]);
    rdt_server_pause(&g_m[2]);
    __atomic_store_n(&u.go, 1, __ATOMIC_RELEASE);
    /* Released on 3 and 4, never held on 0: a majority is free. */
    RDT_ASSERT_RC(0, rdlock_lock(&b));
    RDT_ASSERT_RC(0, rdlock_unlock(&b));
    usleep((useconds_t)stop_ms * 1000);
    resumed = rdt_now_ms();
    rdt_server_resume(&g_m[1]);
    rdt_server_resume(&g_m[2]);
    pthread_join(t, NULL);
    if (u.rc != 0)
        fprintf(stderr, "unlock_partial: the unlock returned %s %lld ms before the stopped masters came back\n",
                rdt_errname(u.rc), resumed - u.done);
    RDT_ASSERT_RC(0, u.rc);
    CU_ASSERT(u.done >= resumed);
    RDT_ASSERT_EQ_LL(0, held_on("rl-partial"));
    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
}

static const rdt_test_t tests[] = {
    { "basic", test_basic },
    { "two_stopped", test_two_stopped },
    { "three_stopped", test_three_stopped },
    { "restart", test_restart },
    { "fencing", test_fencing },
    { "rwlock_and_robust", test_rwlock_and_robust },
    { "wakeup", test_wakeup },
    { "once", test_once },
    { "drift", test_drift },
    { "status_kinds", test_status_kinds },
    { "dead_host", test_dead_host },
    { "password_stopped", test_password_stopped },
    { "undo_duplicated", test_undo_duplicated },
    { "unlock_partial", test_unlock_partial },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "redlock", tests, suite_setup, suite_teardown, 240);
}
