/* test_redlock_prims.c - semaphores, condition variables and barriers on
 * a Redlock quorum of five independent masters (real redis-servers on
 * free loopback ports), through the public API (docs/CONTRACT.md
 * sections 9.5 and 12; the protocol is src/exec/prim_quorum.h's):
 *
 *   sem_basic          a plain semaphore's permits count once over the
 *                      quorum, from two clients; a majority of masters
 *                      holds the newest state (its version)
 *   sem_split          the case that per-master counting gets wrong: a
 *                      permit taken while two masters were stopped, then
 *                      two others stopped: the one master left of the
 *                      first majority carries the newest state, and the
 *                      last permit is not handed out twice
 *   sem_restart        a master restarted without its data, and two others
 *                      that missed the last step, do not make a majority
 *                      that hands the taken permit out again within its
 *                      restart delay
 *   sem_leased         leased permits under 2 clients x 3 threads with two
 *                      masters SIGSTOPped on and off: never more holders
 *                      than permits; a SIGKILLed holder's permit comes
 *                      back after its lease
 *   cond               producer/consumer over two clients with a condition
 *                      variable and the lock of the same name, with two
 *                      masters stopped for part of it: every item is
 *                      consumed exactly once, each within 5 s (a wait
 *                      looks again every third of its 3 s lease anyway;
 *                      cond_sub_moves shows the signal itself wakes it)
 *   cond_sub_moves     a waiter whose subscription is on a master that is
 *                      SIGSTOPped is woken by the signal the others
 *                      publish, once its client moves the subscription,
 *                      not by its re-check (20 s here)
 *   barrier            three participants (two clients) over several
 *                      generations: exactly one serial caller each
 *   barrier_withdraw_unreachable
 *                      a timed barrier wait whose deadline passes while no
 *                      majority answers returns only once its arrival is
 *                      withdrawn (or the generation completed with it)
 *   lease_merge        a master that missed a hold's renewals (stopped)
 *                      but has the newest state leads the next step: the
 *                      renewals the others saw keep the permit held
 *   status             rdlock_status_kinds reads each kind from the master
 *                      with its newest state; stray keys on one master
 *                      (no step ever ran there) read absent
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

#define N 5
#define LEASE_MS 3000

static rdt_server_t g_m[N];
static int g_up;
static char g_ini[600];
static rdlock_client_t *g_c1, *g_c2;
static long long g_started; /* when the masters started (monotonic ms) */
#define RESTART_DELAY_MS 6000 /* longer than the client's back-off (2 s) and the retries */

/* Write a client configuration for the five masters to FILE in master
 * 0's directory: its path, or NULL. */
static const char *quorum_ini(const char *file, int restart_delay_ms, int lease_ms, int retry_interval_ms)
{
    char extra[64];
    snprintf(extra, sizeof extra, "restart_delay_ms = %d\n", restart_delay_ms);
    return rdt_quorum_ini(g_m, N, file, extra, lease_ms, retry_interval_ms);
}

static int suite_setup(void)
{
    const char *path;

    g_started = rdt_now_ms();
    for (int k = 0; k < N; k++)
        if (rdt_server_start(&g_m[k], NULL, NULL) != 0)
            return -1;
    g_up = 1;
    /* The masters have just started: with a restart delay none would
     * vote for a lease (test_redlock covers the delay). */
    if ((path = quorum_ini("prims.ini", 0, LEASE_MS, 10000)) == NULL)
        return -1;
    snprintf(g_ini, sizeof g_ini, "%s", path);
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

/* lease_ms 0: the client's (the suite's LEASE_MS). */
static int sem_open_lease(rdsem_t *s, const char *name, unsigned value, int type, rdlock_client_t *c,
                          unsigned lease_ms)
{
    rdsem_attr_t a;
    int rc;
    rdsem_attr_init(&a);
    rdsem_attr_setclient(&a, c);
    rdsem_attr_settype(&a, type);
    if (lease_ms != 0)
        rdsem_attr_setlease(&a, lease_ms);
    rc = rdsem_init(s, name, value, &a);
    rdsem_attr_destroy(&a);
    return rc;
}

static int sem_open(rdsem_t *s, const char *name, unsigned value, int type, rdlock_client_t *c)
{
    return sem_open_lease(s, name, value, type, c, 0);
}

/* The step version of a semaphore on master k (pstep.lua: P:Qm 'v'). */
static long long sem_version(int k, const char *name)
{
    redisReply *r = rdt_cmd_on(&g_m[k], "HGET %s v", rdt_key(name, ":s:Qm"));
    long long v = r != NULL && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

static void test_sem_basic(void)
{
    rdsem_t a, b;
    int v = -1, newest = 0;
    long long top = 0;

    RDT_ASSERT_RC(0, sem_open(&a, "rp-sem", 2, RDSEM_PLAIN, g_c1));
    RDT_ASSERT_RC(0, sem_open(&b, "rp-sem", 2, RDSEM_PLAIN, g_c2));
    RDT_ASSERT_RC(0, rdsem_trywait(&a));
    RDT_ASSERT_RC(0, rdsem_trywait(&b));
    RDT_ASSERT_RC(EAGAIN, rdsem_trywait(&a));
    RDT_ASSERT_RC(EAGAIN, rdsem_trywait(&b));
    RDT_ASSERT_RC(0, rdsem_getvalue(&b, &v));
    RDT_ASSERT_EQ_LL(0, v);
    RDT_ASSERT_RC(0, rdsem_post(&b));
    RDT_ASSERT_RC(0, rdsem_getvalue(&a, &v));
    RDT_ASSERT_EQ_LL(1, v);
    /* Every step left its state, as one version, on a majority. */
    for (int k = 0; k < N; k++)
        if (sem_version(k, "rp-sem") > top)
            top = sem_version(k, "rp-sem");
    for (int k = 0; k < N; k++)
        newest += sem_version(k, "rp-sem") == top;
    CU_ASSERT(top > 0);
    CU_ASSERT(newest >= N / 2 + 1);
    RDT_ASSERT_RC(0, rdsem_wait(&a));
    RDT_ASSERT_RC(0, rdsem_post(&a));
    RDT_ASSERT_RC(0, rdsem_post(&a));
    rdsem_destroy(&a);
    rdsem_destroy(&b);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-sem"));
}

static void test_sem_split(void)
{
    rdsem_t a, b;
    int v = -1;

    RDT_ASSERT_RC(0, sem_open(&a, "rp-split", 1, RDSEM_PLAIN, g_c1));
    RDT_ASSERT_RC(0, sem_open(&b, "rp-split", 1, RDSEM_PLAIN, g_c2));
    /* Taken on masters 0, 1, 2 only. */
    rdt_server_pause(&g_m[3]);
    rdt_server_pause(&g_m[4]);
    RDT_ASSERT_RC(0, rdsem_trywait(&a));
    rdt_server_resume(&g_m[3]);
    rdt_server_resume(&g_m[4]);
    /* Now only 2, 3, 4 answer: 3 and 4 never saw the take, and counted
     * per master they would give the permit out again. */
    rdt_server_pause(&g_m[0]);
    rdt_server_pause(&g_m[1]);
    RDT_ASSERT_RC(EAGAIN, rdsem_trywait(&b));
    RDT_ASSERT_RC(0, rdsem_getvalue(&b, &v));
    RDT_ASSERT_EQ_LL(0, v);
    /* The step that found that out brought 3 and 4 up to date. */
    RDT_ASSERT_EQ_LL(sem_version(2, "rp-split"), sem_version(3, "rp-split"));
    RDT_ASSERT_EQ_LL(sem_version(2, "rp-split"), sem_version(4, "rp-split"));
    RDT_ASSERT_RC(0, rdsem_post(&b));
    rdt_server_resume(&g_m[0]);
    rdt_server_resume(&g_m[1]);
    /* 0 and 1 are behind: their state is not the one used. */
    RDT_ASSERT_RC(0, rdsem_trywait(&a));
    RDT_ASSERT_RC(EAGAIN, rdsem_trywait(&b));
    RDT_ASSERT_RC(0, rdsem_post(&a));
    rdsem_destroy(&a);
    rdsem_destroy(&b);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-split"));
}

/* A master restarted without persistence has forgotten the semaphore's
 * state, which never expires.  restart_delay_ms keeps it out of the vote
 * for its first lease: with two others that missed the last step, it
 * cannot make a majority that gives the taken permit out again then.
 * Once a step has run with it, it has the state back. */
static void test_sem_restart(void)
{
    rdlock_client_t *c1 = NULL, *c2 = NULL;
    rdsem_t a, b;
    int v = -1, rc;
    const char *ini = quorum_ini("restart.ini", RESTART_DELAY_MS, LEASE_MS, 10000);

    CU_ASSERT_FATAL(ini != NULL);
    /* The masters themselves must have run for the delay to vote. */
    while (rdt_now_ms() - g_started < RESTART_DELAY_MS + 1200)
        usleep(50000);
    RDT_ASSERT_RC(0, rdlock_client_open(&c1, ini));
    RDT_ASSERT_RC(0, rdlock_client_open(&c2, ini));
    RDT_ASSERT_RC(0, sem_open(&a, "rp-restart", 1, RDSEM_PLAIN, c1));
    RDT_ASSERT_RC(0, sem_open(&b, "rp-restart", 1, RDSEM_PLAIN, c2));
    /* Taken on 0, 1 and 2 only. */
    rdt_server_pause(&g_m[3]);
    rdt_server_pause(&g_m[4]);
    RDT_ASSERT_RC(0, rdsem_trywait(&a));
    rdt_server_resume(&g_m[3]);
    rdt_server_resume(&g_m[4]);
    /* 0 comes back empty; 1 and 2 are away: 0, 3 and 4 answer, and only
     * 3 and 4 know the name, from before the take. */
    rdt_server_kill(&g_m[0]);
    CU_ASSERT_EQUAL_FATAL(rdt_server_restart(&g_m[0]), 0);
    rdt_server_pause(&g_m[1]);
    rdt_server_pause(&g_m[2]);
    rc = rdsem_trywait(&b);
    if (rc == 0)
        fprintf(stderr, "test_sem_restart: the taken permit was given out again\n");
    CU_ASSERT(rc != 0); /* EIO: the restarted master has no vote yet */
    rdt_server_resume(&g_m[1]);
    rdt_server_resume(&g_m[2]);
    /* The client takes 1 and 2 back once their back-off ends (<= 2 s). */
    {
        long long until = rdt_now_ms() + 5000;
        while ((rc = rdsem_trywait(&b)) == EIO && rdt_now_ms() < until)
            usleep(50000);
    }
    RDT_ASSERT_RC(EAGAIN, rc);
    RDT_ASSERT_RC(0, rdsem_getvalue(&b, &v));
    RDT_ASSERT_EQ_LL(0, v);
    /* Steps write the state to 0 again once the client has taken 0 back.
     * That is not at once: 0's back-off began when its connection broke,
     * 1's and 2's when they stopped answering, and on a busy machine
     * either can end first, so the steps above may have run without 0. */
    {
        long long until = rdt_now_ms() + 5000;
        while (sem_version(0, "rp-restart") == 0 && rdt_now_ms() < until) {
            RDT_ASSERT_RC(0, rdsem_getvalue(&b, &v));
            usleep(50000);
        }
    }
    CU_ASSERT(sem_version(0, "rp-restart") > 0);
    RDT_ASSERT_RC(0, rdsem_post(&a));
    rdsem_destroy(&a);
    rdsem_destroy(&b);
    RDT_ASSERT_RC(0, rdlock_reset_name(c1, "rp-restart"));
    rdlock_client_close(c1);
    rdlock_client_close(c2);
}

/* ---- leased permits under threads, with masters stopping */

#define PERMITS 2
static int g_inside, g_max_inside, g_errors, g_stop;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void *sem_thread(void *arg)
{
    rdsem_t *s = arg;
    for (int i = 0; i < 15 && !__atomic_load_n(&g_stop, __ATOMIC_RELAXED); i++) {
        int rc = rdsem_wait(s);
        if (rc != 0) {
            fprintf(stderr, "sem_thread: wait: %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
            continue;
        }
        pthread_mutex_lock(&g_mu);
        if (++g_inside > g_max_inside)
            g_max_inside = g_inside;
        pthread_mutex_unlock(&g_mu);
        usleep(2000);
        pthread_mutex_lock(&g_mu);
        g_inside--;
        pthread_mutex_unlock(&g_mu);
        if ((rc = rdsem_post(s)) != 0) {
            fprintf(stderr, "sem_thread: post: %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static int die_holding_permit(void *arg)
{
    rdlock_client_t *c;
    rdsem_t s;
    (void)arg;
    if (rdlock_client_open(&c, g_ini) != 0 || sem_open(&s, "rp-leased", PERMITS, RDSEM_LEASED, c) != 0 ||
        rdsem_wait(&s) != 0)
        return 1;
    kill(getpid(), SIGKILL);
    return 2;
}

static void test_sem_leased(void)
{
    rdsem_t s1, s2;
    pthread_t t[6];
    pid_t pid;
    long long t0;
    int v = -1;

    /* The threads' permits lease 3x the suite's: with two masters
     * stopped, a client slowed down (valgrind, a loaded machine) could
     * otherwise see a permit's renewal undecided until its 3 s ran out,
     * and report it lost (correctly, but not what this test is about).
     * The dying holder below takes its permit for the suite's lease. */
    RDT_ASSERT_RC(0, sem_open_lease(&s1, "rp-leased", PERMITS, RDSEM_LEASED, g_c1, 3 * LEASE_MS));
    RDT_ASSERT_RC(0, sem_open_lease(&s2, "rp-leased", PERMITS, RDSEM_LEASED, g_c2, 3 * LEASE_MS));
    g_inside = g_max_inside = g_errors = g_stop = 0;
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, sem_thread, i % 2 ? &s2 : &s1);
    for (int round = 0; round < 3; round++) {
        usleep(100 * 1000);
        rdt_server_pause(&g_m[round % N]);
        rdt_server_pause(&g_m[(round + 2) % N]);
        usleep(150 * 1000);
        rdt_server_resume(&g_m[round % N]);
        rdt_server_resume(&g_m[(round + 2) % N]);
    }
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    RDT_ASSERT_EQ_LL(0, g_errors);
    CU_ASSERT(g_max_inside <= PERMITS);
    CU_ASSERT(g_max_inside >= 1);
    RDT_ASSERT_RC(0, rdsem_getvalue(&s1, &v));
    RDT_ASSERT_EQ_LL(PERMITS, v);

    /* A holder dies: its permit is back once its lease has run out. */
    pid = rdt_fork(die_holding_permit, NULL);
    RDT_ASSERT_EQ_LL(128 + SIGKILL, rdt_wait(pid, 20000));
    RDT_ASSERT_RC(0, rdsem_getvalue(&s1, &v));
    RDT_ASSERT_EQ_LL(PERMITS - 1, v);
    RDT_ASSERT_RC(0, rdsem_trywait(&s1));
    RDT_ASSERT_RC(EAGAIN, rdsem_trywait(&s2));
    t0 = rdt_now_ms();
    {
        struct timespec ts = rdt_abstime(CLOCK_REALTIME, LEASE_MS * 2);
        RDT_ASSERT_RC(0, rdsem_timedwait(&s2, &ts));
    }
    CU_ASSERT(rdt_now_ms() - t0 >= LEASE_MS / 3);
    RDT_ASSERT_RC(0, rdsem_post(&s2));
    RDT_ASSERT_RC(0, rdsem_post(&s1));
    rdsem_destroy(&s1);
    rdsem_destroy(&s2);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-leased"));
}

/* ---- condition variable */

#define ITEMS 40
#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
static int g_queue[ITEMS], g_qn, g_taken[ITEMS], g_consumed, g_cond_errors;

typedef struct cparty {
    rdlock_client_t *c;
    rdlock_t lock;
    rdcond_t cv;
} cparty_t;

static int cparty_open(cparty_t *p, rdlock_client_t *c, const char *name)
{
    rdlock_attr_t a;
    rdcond_attr_t ca;
    int rc;
    p->c = c;
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, c);
    /* Not the suite's 3 s: under valgrind, with two masters stopped,
     * a quorum round that waits out their command timeout (1 s) and a
     * renewal round behind it can take most of 3 s, and the hold was
     * then reported lost (ENOLCK, correctly, but not what these tests
     * are about).  The waits' re-checks follow the registrations' own
     * lease, still the suite's. */
    rdlock_attr_setlease(&a, 3 * LEASE_MS);
    rc = rdlock_init(&p->lock, name, &a);
    rdlock_attr_destroy(&a);
    if (rc != 0)
        return rc;
    rdcond_attr_init(&ca);
    rdcond_attr_setclient(&ca, c);
    rc = rdcond_init(&p->cv, name, &ca);
    rdcond_attr_destroy(&ca);
    return rc;
}

static void *consumer(void *arg)
{
    cparty_t *p = arg;
    for (;;) {
        int rc = rdlock_lock(&p->lock), item = -1;
        if (rc != 0) {
            __atomic_add_fetch(&g_cond_errors, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        /* The queue lives in this process; the distributed lock and
         * condition are what orders the two clients' threads (the
         * accesses are atomic only so that ThreadSanitizer, which cannot
         * see a lock held on Redis, does not call them races). */
        while (LD(g_qn) == 0 && LD(g_consumed) < ITEMS)
            if ((rc = rdcond_wait(&p->cv, &p->lock)) != 0) {
                fprintf(stderr, "consumer: wait: %s\n", rdt_errname(rc));
                __atomic_add_fetch(&g_cond_errors, 1, __ATOMIC_RELAXED);
                rdlock_unlock(&p->lock);
                return NULL;
            }
        if (LD(g_qn) > 0) {
            ST(g_qn, LD(g_qn) - 1);
            item = LD(g_queue[LD(g_qn)]);
            ST(g_taken[item], LD(g_taken[item]) + 1);
            ST(g_consumed, LD(g_consumed) + 1);
        }
        rdlock_unlock(&p->lock);
        if (item < 0)
            return NULL;
    }
}

/* Take p's lock so that the hold stands on every master, then stop
 * masters 1 and 4 while it is held; returns holding it.  A hold stands on
 * the masters that granted it: a majority, not always all of them (the
 * consumer's attempt can take a master first, and give it back after),
 * and a hold on three masters is lost when two of them stop (CONTRACT
 * 9.5: the renewals need a majority that has it).  While the producer
 * holds the lock the consumer holds nothing, so from here on every hold is
 * taken on the three masters that answer, all of them. */
static void lock_whole_then_pause(cparty_t *p, const char *name)
{
    char first[128], field[128];
    long long t0 = rdt_now_ms();
    int whole = 0;

    for (;;) {
        RDT_ASSERT_RC(0, rdlock_lock(&p->lock));
        whole = 0;
        /* Only the producer holds the lock: a master whose holder is the
         * same as every other's has the producer's hold (a consumer's
         * grant still to be given back would differ). */
        for (int k = 0; k < N; k++) {
            if (rdt_holders_on(&g_m[k], rdt_key(name, ""), k == 0 ? first : field, sizeof field, NULL) != 1)
                break;
            if (k > 0 && strcmp(first, field) != 0)
                break;
            whole++;
        }
        if (whole == N || rdt_now_ms() - t0 > 20000)
            break;
        RDT_ASSERT_RC(0, rdlock_unlock(&p->lock));
        usleep(1000);
    }
    RDT_ASSERT_EQ_LL(N, whole);
    rdt_server_pause(&g_m[1]);
    rdt_server_pause(&g_m[4]);
}

static void test_cond(void)
{
    cparty_t prod, cons;
    pthread_t t;
    long long t0, worst = 0;

    memset(g_taken, 0, sizeof g_taken);
    g_qn = g_consumed = g_cond_errors = 0;
    RDT_ASSERT_RC(0, cparty_open(&prod, g_c1, "rp-queue"));
    RDT_ASSERT_RC(0, cparty_open(&cons, g_c2, "rp-queue"));
    pthread_create(&t, NULL, consumer, &cons);
    /* A consumer that failed has returned: report it, not a timeout. */
    for (int i = 0; i < ITEMS && LD(g_cond_errors) == 0; i++) {
        if (i == ITEMS / 2) {
            rdt_server_resume(&g_m[1]);
            rdt_server_resume(&g_m[4]);
        }
        if (i == ITEMS / 4)
            lock_whole_then_pause(&prod, "rp-queue");
        else
            RDT_ASSERT_RC(0, rdlock_lock(&prod.lock));
        ST(g_queue[LD(g_qn)], i);
        ST(g_qn, LD(g_qn) + 1);
        RDT_ASSERT_RC(0, rdcond_signal(&prod.cv));
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdlock_unlock(&prod.lock));
        /* Wait for the consumer to take it (its wait looks again every
         * second anyway: a third of its lease). */
        for (;;) {
            int left;
            RDT_ASSERT_RC(0, rdlock_lock(&prod.lock));
            left = LD(g_qn);
            RDT_ASSERT_RC(0, rdlock_unlock(&prod.lock));
            if (left == 0 || LD(g_cond_errors) > 0 || rdt_now_ms() - t0 > 8000)
                break;
            usleep(1000);
        }
        if (rdt_now_ms() - t0 > worst)
            worst = rdt_now_ms() - t0;
    }
    rdt_server_resume(&g_m[1]); /* if the loop ended early */
    rdt_server_resume(&g_m[4]);
    RDT_ASSERT_RC(0, rdlock_lock(&prod.lock));
    RDT_ASSERT_RC(0, rdcond_broadcast(&prod.cv));
    RDT_ASSERT_RC(0, rdlock_unlock(&prod.lock));
    pthread_join(t, NULL);
    RDT_ASSERT_EQ_LL(0, g_cond_errors);
    RDT_ASSERT_EQ_LL(ITEMS, g_consumed);
    for (int i = 0; i < ITEMS; i++)
        RDT_ASSERT_EQ_LL(1, g_taken[i]);
    if (worst >= 5000)
        fprintf(stderr, "test_cond: an item waited %lld ms\n", worst);
    CU_ASSERT(worst < 5000);
    rdcond_destroy(&prod.cv);
    rdcond_destroy(&cons.cv);
    rdlock_destroy(&prod.lock);
    rdlock_destroy(&cons.lock);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-queue"));
}

/* ---- a wake-up while the master that carries the subscription is stopped */

static int g_move_flag, g_move_errors;
static long long g_move_woke;

static void *move_waiter(void *arg)
{
    cparty_t *p = arg;
    int rc = rdlock_lock(&p->lock);
    if (rc != 0) {
        fprintf(stderr, "move_waiter: lock: %s\n", rdt_errname(rc));
        __atomic_add_fetch(&g_move_errors, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    while (!LD(g_move_flag))
        if ((rc = rdcond_wait(&p->cv, &p->lock)) != 0) {
            fprintf(stderr, "move_waiter: wait: %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_move_errors, 1, __ATOMIC_RELAXED);
            break;
        }
    ST(g_move_woke, rdt_now_ms());
    rdlock_unlock(&p->lock);
    return NULL;
}

/* PUBSUB NUMSUB of chan on master k: [chan, n]; -1 on error. */
static long long numsub_on(int k, const char *chan)
{
    redisReply *r = rdt_cmd_on(&g_m[k], "PUBSUB NUMSUB %s", chan);
    long long n = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* The waiter's client subscribed on master 0 (the first that answers),
 * and master 0 is then SIGSTOPped: its connections stay open, so no read
 * of them fails, and the signal is published by the four masters that
 * run the step.  Once the waiter's client finds master 0 silent (here its
 * trylock of another name times out there), the subscription must move to
 * a master that answers, and the waiter look again: woken long before its
 * re-check (a third of its 60 s lease: 20 s). */
static void test_cond_sub_moves(void)
{
    rdlock_client_t *c1 = NULL, *c2 = NULL;
    cparty_t sig, wait;
    rdlock_t other;
    pthread_t t;
    char chan[128];
    const char *ini = quorum_ini("move.ini", 0, 60000, 30000);
    long long t0, subs = 0, regs = 0, held = 1;

    CU_ASSERT_FATAL(ini != NULL);
    snprintf(chan, sizeof chan, "%s", rdt_key("rp-move", ":cv:c")); /* rdt_key's buffer is reused */
    RDT_ASSERT_RC(0, rdlock_client_open(&c1, ini));
    RDT_ASSERT_RC(0, rdlock_client_open(&c2, ini));
    RDT_ASSERT_RC(0, cparty_open(&sig, c1, "rp-move"));
    RDT_ASSERT_RC(0, cparty_open(&wait, c2, "rp-move"));
    g_move_flag = g_move_errors = 0;
    g_move_woke = 0;
    pthread_create(&t, NULL, move_waiter, &wait);
    /* Registered, and subscribed on master 0. */
    t0 = rdt_now_ms();
    while ((subs < 1 || regs < N / 2 + 1 || held > 0) && rdt_now_ms() - t0 < 20000) {
        usleep(10000);
        subs = numsub_on(0, chan);
        /* Registered on a majority, then asleep: its release of the lock
         * has run on every master (and master 0 has sent its answer
         * before it stops). */
        regs = held = 0;
        for (int k = 0; k < N; k++) {
            regs += rdt_int_on(&g_m[k], 0, "HLEN %s", rdt_key("rp-move", ":cv:h")) >= 1;
            held += rdt_int_on(&g_m[k], 0, "EXISTS %s", rdt_key("rp-move", "")) != 0;
        }
    }
    CU_ASSERT(regs >= N / 2 + 1);
    RDT_ASSERT_EQ_LL(1, subs);
    RDT_ASSERT_EQ_LL(0, held);
    rdt_server_pause(&g_m[0]);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_lock(&sig.lock));
    ST(g_move_flag, 1);
    RDT_ASSERT_RC(0, rdcond_signal(&sig.cv));
    RDT_ASSERT_RC(0, rdlock_unlock(&sig.lock));
    /* Other work of the waiter's client meets the stopped master. */
    RDT_ASSERT_RC(0, rdt_mutex_on(&other, "rp-move-other", c2, RDLOCK_NORMAL));
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    rdlock_destroy(&other);
    pthread_join(t, NULL);
    rdt_server_resume(&g_m[0]);
    RDT_ASSERT_EQ_LL(0, g_move_errors);
    fprintf(stderr, "[woken %lld ms after master 0 stopped] ", g_move_woke - t0);
    CU_ASSERT(g_move_woke - t0 < 12000);
    rdcond_destroy(&sig.cv);
    rdcond_destroy(&wait.cv);
    rdlock_destroy(&sig.lock);
    rdlock_destroy(&wait.lock);
    RDT_ASSERT_RC(0, rdlock_reset_name(c1, "rp-move"));
    rdlock_client_close(c1);
    rdlock_client_close(c2);
}

/* ---- barrier */

#define GENS 4
static int g_serial[GENS], g_bar_errors;

typedef struct bparty {
    rdbarrier_t b;
} bparty_t;

static void *bar_thread(void *arg)
{
    bparty_t *p = arg;
    for (int g = 0; g < GENS; g++) {
        int rc = rdbarrier_wait(&p->b);
        if (rc == RDBARRIER_SERIAL_THREAD)
            __atomic_add_fetch(&g_serial[g], 1, __ATOMIC_RELAXED);
        else if (rc != 0) {
            fprintf(stderr, "bar_thread: %s\n", rdt_errname(rc));
            __atomic_add_fetch(&g_bar_errors, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void test_barrier(void)
{
    bparty_t p[3];
    pthread_t t[3];
    rdlock_attr_t a1, a2;

    memset(g_serial, 0, sizeof g_serial);
    g_bar_errors = 0;
    rdlock_attr_init(&a1);
    rdlock_attr_setclient(&a1, g_c1);
    rdlock_attr_init(&a2);
    rdlock_attr_setclient(&a2, g_c2);
    RDT_ASSERT_RC(0, rdbarrier_init(&p[0].b, "rp-bar", 3, &a1));
    RDT_ASSERT_RC(0, rdbarrier_init(&p[1].b, "rp-bar", 3, &a2));
    RDT_ASSERT_RC(0, rdbarrier_init(&p[2].b, "rp-bar", 3, &a2));
    {
        /* The name has its count now, on the quorum. */
        rdbarrier_t other;
        RDT_ASSERT_RC(EINVAL, rdbarrier_init(&other, "rp-bar", 4, &a1));
    }
    rdt_server_pause(&g_m[0]);
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, bar_thread, &p[i]);
    usleep(200 * 1000);
    rdt_server_resume(&g_m[0]);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    RDT_ASSERT_EQ_LL(0, g_bar_errors);
    for (int g = 0; g < GENS; g++)
        RDT_ASSERT_EQ_LL(1, g_serial[g]);
    for (int i = 0; i < 3; i++)
        rdbarrier_destroy(&p[i].b);
    rdlock_attr_destroy(&a1);
    rdlock_attr_destroy(&a2);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-bar"));
}

/* ---- a leader that missed renewals */

static void test_lease_merge(void)
{
    rdsem_t s1, s2;
    long long t0;

    RDT_ASSERT_RC(0, sem_open(&s1, "rp-merge", 1, RDSEM_LEASED, g_c1));
    RDT_ASSERT_RC(0, sem_open(&s2, "rp-merge", 1, RDSEM_LEASED, g_c2));
    RDT_ASSERT_RC(0, rdsem_trywait(&s1));
    /* Master 0 (first in order: the leader among equals) has the newest
     * state but misses every renewal for longer than the lease. */
    rdt_server_pause(&g_m[0]);
    t0 = rdt_now_ms();
    while (rdt_now_ms() - t0 < LEASE_MS + 500)
        usleep(50 * 1000);
    rdt_server_resume(&g_m[0]);
    /* Its own record of the hold ran out, the others' did not: the step
     * it leads must still see the permit held. */
    RDT_ASSERT_RC(EAGAIN, rdsem_trywait(&s2));
    RDT_ASSERT_RC(0, rdsem_post(&s1));
    RDT_ASSERT_RC(0, rdsem_trywait(&s2));
    RDT_ASSERT_RC(0, rdsem_post(&s2));
    rdsem_destroy(&s1);
    rdsem_destroy(&s2);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-merge"));
}

/* ---- status */

static void test_status(void)
{
    rdlock_kinds_t k;
    rdsem_t s;
    rdcond_t cv;
    rdcond_attr_t ca;
    rdbarrier_t b;
    rdlock_attr_t a;

    k.size = sizeof k;
    /* stray keys on one master, where no step ever ran: absent */
    rdt_int_on(&g_m[0], 0, "HSET %s t l v 3", rdt_key("rp-kinds", ":s"));
    rdt_int_on(&g_m[0], 0, "HSET %s n 2 g 1 a 0", rdt_key("rp-kinds", ":b"));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c2, "rp-kinds", &k));
    CU_ASSERT(!k.sem && !k.cond && !k.barrier);
    rdt_int_on(&g_m[0], 0, "DEL %s %s", rdt_key("rp-kinds", ":s"), rdt_key("rp-kinds", ":b"));

    RDT_ASSERT_RC(0, sem_open(&s, "rp-kinds", 3, RDSEM_PLAIN, g_c1));
    RDT_ASSERT_RC(0, rdsem_trywait(&s));
    rdcond_attr_init(&ca);
    rdcond_attr_setclient(&ca, g_c1);
    RDT_ASSERT_RC(0, rdcond_init(&cv, "rp-kinds", &ca));
    rdcond_attr_destroy(&ca);
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, g_c1);
    RDT_ASSERT_RC(0, rdbarrier_init(&b, "rp-kinds", 2, &a));
    rdlock_attr_destroy(&a);
    /* Master 0 then misses a step: the status reads past it. */
    rdt_server_pause(&g_m[0]);
    RDT_ASSERT_RC(0, rdsem_trywait(&s));
    rdt_server_resume(&g_m[0]);
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c2, "rp-kinds", &k));
    CU_ASSERT(k.sem == 1 && k.sem_type == RDSEM_PLAIN);
    RDT_ASSERT_EQ_LL(1, k.sem_value);
    CU_ASSERT(k.cond == 1);
    CU_ASSERT(k.barrier == 1);
    RDT_ASSERT_EQ_LL(2, k.barrier_count);
    rdsem_destroy(&s);
    rdcond_destroy(&cv);
    rdbarrier_destroy(&b);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-kinds"));
    RDT_ASSERT_RC(0, rdlock_status_kinds(g_c2, "rp-kinds", &k));
    CU_ASSERT(!k.sem && !k.cond && !k.barrier);
}

/* ---- a timed barrier wait that cannot withdraw its arrival */

typedef struct bwait {
    rdbarrier_t *b;
    int ms, rc;
} bwait_t;

static void *bar_timed(void *arg)
{
    bwait_t *w = arg;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += w->ms / 1000;
    dl.tv_nsec += (long)(w->ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    w->rc = rdbarrier_timedwait(w->b, &dl);
    return NULL;
}

/* A's timed wait reaches its deadline while no majority answers, so its
 * withdrawal cannot reach the quorum.  Returning ETIMEDOUT then would
 * leave its arrival (still renewed) to complete a generation with B and C
 * (D10 in docs/RELIABILITY.md): A must wait until it can tell, and then B
 * and C, two of three with A withdrawn, must not pass together. */
typedef struct bret {
    bwait_t w;
    long long at; /* when the wait returned */
} bret_t;

static void *bar_timed_at(void *arg)
{
    bret_t *b = arg;
    bar_timed(&b->w);
    b->at = rdt_now_ms();
    return NULL;
}

static void test_barrier_withdraw_unreachable(void)
{
    rdbarrier_t ba, bb, bc;
    rdlock_attr_t a1, a2;
    bret_t ra = { { &ba, 600, -1 }, 0 };
    bwait_t wb = { &bb, 1500, -1 }, wc = { &bc, 1500, -1 };
    pthread_t ta, tb, tc;
    long long t0, resumed;

    rdlock_attr_init(&a1);
    rdlock_attr_setclient(&a1, g_c1);
    rdlock_attr_init(&a2);
    rdlock_attr_setclient(&a2, g_c2);
    RDT_ASSERT_RC(0, rdbarrier_init(&ba, "rp-barw", 3, &a1));
    RDT_ASSERT_RC(0, rdbarrier_init(&bb, "rp-barw", 3, &a2));
    RDT_ASSERT_RC(0, rdbarrier_init(&bc, "rp-barw", 3, &a2));
    t0 = rdt_now_ms();
    pthread_create(&ta, NULL, bar_timed_at, &ra);
    /* A has arrived once its arrival is on a majority */
    while (rdt_int_on(&g_m[0], 0, "HLEN %s", rdt_key("rp-barw", ":b:h")) < 1 && rdt_now_ms() - t0 < 500)
        usleep(10000);
    for (int k = 0; k < 3; k++)
        rdt_server_pause(&g_m[k]);
    /* Past A's deadline by more than a withdrawal attempt (a command
     * timeout, 1 s) and its retries would take. */
    while (rdt_now_ms() - t0 < 600 + 2500)
        usleep(50000);
    resumed = rdt_now_ms();
    for (int k = 0; k < 3; k++)
        rdt_server_resume(&g_m[k]);
    pthread_join(ta, NULL);
    if (ra.at < resumed)
        fprintf(stderr, "barrier_withdraw_unreachable: A returned %s while no majority answered\n",
                rdt_errname(ra.w.rc));
    CU_ASSERT(ra.at >= resumed);
    CU_ASSERT(ra.w.rc == ETIMEDOUT || ra.w.rc == 0);
    pthread_create(&tb, NULL, bar_timed, &wb);
    pthread_create(&tc, NULL, bar_timed, &wc);
    pthread_join(tb, NULL);
    pthread_join(tc, NULL);
    if (ra.w.rc == ETIMEDOUT) {
        /* A withdrew: B and C are two live arrivals of three */
        RDT_ASSERT_RC(ETIMEDOUT, wb.rc);
        RDT_ASSERT_RC(ETIMEDOUT, wc.rc);
    }
    rdbarrier_destroy(&ba);
    rdbarrier_destroy(&bb);
    rdbarrier_destroy(&bc);
    rdlock_attr_destroy(&a1);
    rdlock_attr_destroy(&a2);
    RDT_ASSERT_RC(0, rdlock_reset_name(g_c1, "rp-barw"));
}

static const rdt_test_t tests[] = {
    { "sem_basic", test_sem_basic },
    { "sem_split", test_sem_split },
    { "sem_restart", test_sem_restart },
    { "sem_leased", test_sem_leased },
    { "cond", test_cond },
    { "cond_sub_moves", test_cond_sub_moves },
    { "barrier", test_barrier },
    { "barrier_withdraw_unreachable", test_barrier_withdraw_unreachable },
    { "lease_merge", test_lease_merge },
    { "status", test_status },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "redlock_prims", tests, suite_setup, suite_teardown, 240);
}
