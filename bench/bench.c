/* bench.c - rdlock-bench: performance figures for librdlock against a
 * private redis-server (tests/fixture.c).  See bench/README.md.
 *
 *   rdlock-bench [--quick] [--json-only] [--cold-script-cache] [--cluster] [--no-redlock] [--no-prims]
 *                [--no-tls] [--no-million] [--watchdog-only] [--tls-only]
 *
 *   --quick              fewer repetitions, 10,000 watchdog holds only
 *   --no-million         step 4 without its 1,000,000-hold run (~3 min)
 *   --watchdog-only      only step 4 (and its warm-up)
 *   --cluster            also step 7 (starts a 3-master cluster, ~10 s)
 *   --no-redlock         skip step 8 (five more redis-servers)
 *   --no-prims           skip step 9 (condition variable, semaphore)
 *   --no-tls             skip step 10 (TLS; only built with TLS)
 *   --tls-only           only step 10
 *   --json-only          print only the final JSON line
 *   --cold-script-cache  skip the renew-script warm-up (shows the NOSCRIPT
 *                        pipeline problem described in bench/README.md)
 *   $RDLOCK_BENCH_CREPS  contended repetitions (default 3, quick 1)
 *   $RDLOCK_BENCH_DUMP   directory: write each contended run's records as CSV
 *   $RDLOCK_BENCH_DEBUG  non-empty: also print the library's INFO/DEBUG lines
 *
 * Measures, in one run and against the same server:
 *   1. floor: PING round trips/s on one connection (TCP, unix socket);
 *   2. uncontended lock+unlock pairs/s on one thread, ratio to floor/2;
 *   3. contended: 4 processes x 500 critical sections on one lock (rdlock
 *      with retry_interval_ms 100 and 1000, and a naive SET NX polling
 *      lock), with acquire latency, hand-offs and a mutual exclusion check;
 *   4. watchdog scale: one client holding 10,000 (100,000 and 1,000,000)
 *      locks, one renewal cycle observed from the server, and the client's
 *      memory (RSS) per held lock;
 *   5. read-write lock: uncontended rdlock+unlock and wrlock+unlock pairs/s
 *      (ratio to floor/2 and to a do-nothing EVALSHA's rate/2, both
 *      interleaved with the pairs in small chunks, inside step 2's
 *      repetitions), and a mixed workload:
 *      4 processes x 500 sections on one rdrwlock_t, 90% reads / 10% writes,
 *      checking that no reader sees a half-written value and measuring how
 *      many readers are inside at once;
 *   6. many threads, distinct names: 32 threads each locking and unlocking
 *      its own name, (a) each with its own client, (b) all on one shared
 *      client; aggregate pairs/s as a ratio to redis-benchmark's SET rate
 *      with 32 connections / 2, the two alternating;
 *   7. (--cluster) the same as 6b on a 3-master Redis Cluster
 *      (tests/cluster.c), against redis-benchmark --cluster;
 *   8. Redlock: uncontended lock+unlock pairs/s on a quorum of 3 and of 5
 *      fresh masters as a ratio to the same on one of them alone, the
 *      three interleaved; diagnostic: 5 masters with 2 SIGSTOPped; a
 *      counter under the lock with fencing-token order on each quorum;
 *   9. condition variable and semaphore: rdcond_signal -> rdcond_wait
 *      return latency (p50, p99, in ms and in PING round trips measured
 *      next to it), and uncontended rdsem_wait+rdsem_post pairs/s (plain
 *      and leased) as a ratio to floor/2, interleaved with PING;
 *  10. (built with TLS) TLS: uncontended lock+unlock pairs/s over TLS to a
 *      TLS-only server as a ratio to a TLS PING floor/2, next to the same
 *      over plain TCP, the four interleaved (bench/tls.c).
 * The machine is noisy: every figure is the median of several repetitions
 * and ratios are taken to the floor measured in the same run, interleaved
 * with the measurement.  A human-readable table goes to stdout, then ONE
 * line of JSON with every figure.  Exit status: 0, or 1 on a hard error
 * (mutual exclusion violated, a reader saw a half-written value, a lock
 * call failed, a child crashed, fencing tokens out of order); missed
 * performance targets are reported, not fatal. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bench.h"
#include "tls.h"


int quick, json_only;
int cold_script_cache;

/* ---------------------------------------------------------------- 9: condition variable and semaphore */

#define PR_SAMPLES 2000      /* condition wake-ups (quick: PR_SAMPLES_QUICK) */
#define PR_SAMPLES_QUICK 1000
#define PR_CHUNK 50          /* wake-ups between two PING chunks; also the sem chunk */
#define PR_PINGS 100         /* PINGs per chunk next to the wake-ups */
#define PR_CV_SLACK_MS 1.0   /* target: p99 <= 2 round trips + this */
#define PR_SEM_TARGET 0.50   /* wait+post pairs/s, x PING floor/2 */

/* The waiter thread and the signaller (the calling thread) hand each
 * sample over through a pthread mutex and condition variable, outside the
 * timed window: go (the signaller lets the waiter start sample i), ready
 * (the waiter holds the lock and is about to call rdcond_wait), done
 * (the waiter returned from it and unlocked). */
typedef struct pr_cv {
    rdlock_client_t *client;
    rdlock_attr_t attr;
    rdlock_t lock;
    rdcond_attr_t cattr;
    rdcond_t cv;
    int ok;
} pr_cv_t;

typedef struct pr_shared {
    pthread_mutex_t mu;
    pthread_cond_t cc;
    int go, ready, done, stop; /* sample numbers, +1 */
    int pred;                  /* the predicate: written under the rdlock, atomics */
    int n;
    int64_t *t_ret;            /* waiter: rdcond_wait returned (monotonic ns) */
    long spurious;             /* rdcond_wait returned 0 with the predicate unchanged */
    int err;
    pr_cv_t *w;
} pr_shared_t;

static int pr_cv_open(pr_cv_t *p, const rdt_server_t *s)
{
    const char *ini = rdt_write_ini(s, 0, "[lock]\nlease_ms = 30000\n");
    int rc;
    memset(p, 0, sizeof *p);
    if (ini == NULL)
        return -1;
    if ((rc = rdlock_client_open(&p->client, ini)) != 0) {
        fail("condition: rdlock_client_open: %s", rdlock_strerror(rc));
        return -1;
    }
    rdlock_attr_init(&p->attr);
    rdlock_attr_setclient(&p->attr, p->client);
    rdcond_attr_init(&p->cattr);
    rdcond_attr_setclient(&p->cattr, p->client);
    if ((rc = rdlock_init(&p->lock, "bench-cv-lock", &p->attr)) != 0 ||
        (rc = rdcond_init(&p->cv, "bench-cv", &p->cattr)) != 0) {
        fail("condition: rdlock_init/rdcond_init: %s", rdlock_strerror(rc));
        return -1;
    }
    p->ok = 1;
    return 0;
}

static void pr_cv_close(pr_cv_t *p)
{
    int rc;
    if (!p->ok)
        return;
    if ((rc = rdcond_destroy(&p->cv)) != 0)
        fail("rdcond_destroy: %s", rdlock_strerror(rc));
    if ((rc = rdlock_destroy(&p->lock)) != 0)
        fail("rdlock_destroy: %s", rdlock_strerror(rc));
    rdcond_attr_destroy(&p->cattr);
    rdlock_attr_destroy(&p->attr);
    if ((rc = rdlock_client_close(p->client)) != 0)
        fail("rdlock_client_close: %s", rdlock_strerror(rc));
    p->ok = 0;
}

static void pr_set(pr_shared_t *sh, int *field, int v)
{
    pthread_mutex_lock(&sh->mu);
    *field = v;
    pthread_cond_broadcast(&sh->cc);
    pthread_mutex_unlock(&sh->mu);
}

/* Wait until *field >= v or stop; 0, or -1 on stop. */
static int pr_await(pr_shared_t *sh, const int *field, int v)
{
    int r;
    pthread_mutex_lock(&sh->mu);
    while (*field < v && !sh->stop)
        pthread_cond_wait(&sh->cc, &sh->mu);
    r = *field >= v ? 0 : -1;
    pthread_mutex_unlock(&sh->mu);
    return r;
}

static void *pr_waiter(void *arg)
{
    pr_shared_t *sh = arg;
    pr_cv_t *w = sh->w;
    int i, rc;

    for (i = 0; i < sh->n; i++) {
        if (pr_await(sh, &sh->go, i + 1) != 0)
            break;
        if ((rc = rdlock_lock(&w->lock)) != 0) {
            fail("condition waiter: rdlock_lock: %s", rdlock_strerror(rc));
            break;
        }
        pr_set(sh, &sh->ready, i + 1);
        while (__atomic_load_n(&sh->pred, __ATOMIC_ACQUIRE) != i + 1) {
            if ((rc = rdcond_wait(&w->cv, &w->lock)) != 0) {
                fail("rdcond_wait: %s", rdlock_strerror(rc));
                sh->err = 1;
                break;
            }
            if (__atomic_load_n(&sh->pred, __ATOMIC_ACQUIRE) != i + 1)
                sh->spurious++;
        }
        sh->t_ret[i] = now_ns();
        if ((rc = rdlock_unlock(&w->lock)) != 0) {
            fail("condition waiter: rdlock_unlock: %s", rdlock_strerror(rc));
            sh->err = 1;
        }
        pr_set(sh, &sh->done, i + 1);
        if (sh->err)
            break;
    }
    pr_set(sh, &sh->stop, 1);
    return NULL;
}

typedef struct pr_res {
    int cv_samples;
    double cv_rt_us;                 /* PING round trip, median of the chunks next to the wake-ups */
    double cv_p50_ms, cv_p99_ms, cv_max_ms;      /* signal call -> wait returned, all samples */
    double cv_p50_rt, cv_p99_rt;                 /* the same in round trips */
    double cv_p99_lo_ms, cv_p99_hi_ms;           /* range of the per-repetition p99s */
    double cv_target_ms;                         /* 2 round trips + PR_CV_SLACK_MS */
    double cv_signal_p50_ms;                     /* rdcond_signal call -> return */
    double cv_unlock_p50_ms;                     /* signal call -> signaller's rdlock_unlock returned */
    double cv_after_unlock;                      /* share of wake-ups returning after that unlock returned */
    double cv_evalsha_per_sample;                /* whole cycle, both threads, both kinds */
    int cv_var_samples;                          /* diagnostic: unlock first, then signal */
    double cv_var_p50_ms, cv_var_p99_ms, cv_var_p50_rt, cv_var_p99_rt;
    double elapsed_s;
    long cv_spurious;
    int sem_n;                                   /* pairs of each type per repetition */
    double sem_floor;                            /* PING rt/s, interleaved with the pairs */
    double sem_script_floor;                     /* do-nothing EVALSHA rt/s, likewise */
    double sem_pairs[2], sem_ratio[2], sem_ratio_lo[2], sem_ratio_hi[2], sem_script_ratio[2];
    double sem_evalsha_per_pair[2], sem_srv_us_per_pair[2];
    int ok;
} pr_res_t;

/* The condition variable: the waiter thread (own client) waits, the
 * signaller (this thread, another client) takes the lock, sets the
 * predicate, signals and unlocks.  Latency: from the signaller calling
 * rdcond_signal to the waiter's rdcond_wait returning (which includes the
 * waiter taking the lock again).  Every fifth sample is the diagnostic
 * variant: the signaller unlocks first and then signals (POSIX allows a
 * signal without the lock), so the waiter never finds the lock still held
 * by the signaller; n samples of the main kind, n/4 of the variant.
 * Every PR_CHUNK samples, PR_PINGS PINGs on a plain connection while both
 * threads are idle. */
static int pr_cond(const rdt_server_t *s, int reps, pr_res_t *res)
{
    pr_cv_t w, sg;
    pr_shared_t sh;
    pthread_t th;
    redisContext *c = rdt_connect(s);
    int n = quick ? PR_SAMPLES_QUICK : PR_SAMPLES, total = n + n / 4, i, rc, nchunk = 0, started = 0;
    int per_rep, r, nm = 0, nv = 0;
    int64_t *t_sig = NULL, *t_sret = NULL, *t_unl = NULL, *lat = NULL, *latv = NULL, *tmp = NULL;
    double *rt_chunk = NULL, p99r[64];
    long long ec0 = 0, eu0, ec1 = 0, eu1;
    long after = 0;

    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cc, NULL);
    memset(&w, 0, sizeof w);
    memset(&sg, 0, sizeof sg);
    sh.n = total;
    sh.w = &w;
    if (c == NULL || pr_cv_open(&w, s) != 0 || pr_cv_open(&sg, s) != 0)
        goto out;
    t_sig = calloc((size_t)total, sizeof *t_sig);
    t_sret = calloc((size_t)total, sizeof *t_sret);
    t_unl = calloc((size_t)total, sizeof *t_unl);
    lat = calloc((size_t)total, sizeof *lat);
    latv = calloc((size_t)total, sizeof *latv);
    tmp = calloc((size_t)total, sizeof *tmp);
    sh.t_ret = calloc((size_t)total, sizeof *sh.t_ret);
    rt_chunk = calloc((size_t)(total / PR_CHUNK + 2), sizeof *rt_chunk);
    if (t_sig == NULL || t_sret == NULL || t_unl == NULL || lat == NULL || latv == NULL || tmp == NULL ||
        sh.t_ret == NULL || rt_chunk == NULL) {
        fail("condition: out of memory");
        goto out;
    }
    /* Warm up: connections, scripts, both clients' subscription threads. */
    ping_rate(c, 200);
    for (i = 0; i < 20; i++)
        if (rdlock_lock(&sg.lock) != 0 || rdcond_signal(&sg.cv) != 0 || rdlock_unlock(&sg.lock) != 0 ||
            rdlock_lock(&w.lock) != 0 || rdlock_unlock(&w.lock) != 0) {
            fail("condition: warm-up failed");
            goto out;
        }
    if ((rc = pthread_create(&th, NULL, pr_waiter, &sh)) != 0) {
        fail("condition: pthread_create: %s", strerror(rc));
        goto out;
    }
    started = 1;
    evalsha_stats(c, &ec0, &eu0);
    for (i = 0; i < total; i++) {
        int variant = i % 5 == 4;
        if (i % PR_CHUNK == 0) {
            /* Both threads idle: the floor next to these wake-ups. */
            int64_t t0 = now_ns();
            if (isnan(ping_rate(c, PR_PINGS)))
                break;
            rt_chunk[nchunk++] = (double)(now_ns() - t0) / PR_PINGS / 1e3;
        }
        pr_set(&sh, &sh.go, i + 1);
        if (pr_await(&sh, &sh.ready, i + 1) != 0)
            break;
        /* Blocks until the waiter's rdcond_wait has registered and
         * released the lock. */
        if ((rc = rdlock_lock(&sg.lock)) != 0) {
            fail("condition signaller: rdlock_lock: %s", rdlock_strerror(rc));
            break;
        }
        __atomic_store_n(&sh.pred, i + 1, __ATOMIC_RELEASE);
        if (variant) {
            if ((rc = rdlock_unlock(&sg.lock)) != 0) {
                fail("condition signaller: rdlock_unlock: %s", rdlock_strerror(rc));
                break;
            }
            t_unl[i] = now_ns();
        }
        t_sig[i] = now_ns();
        rc = rdcond_signal(&sg.cv);
        t_sret[i] = now_ns();
        if (rc != 0) {
            fail("rdcond_signal: %s", rdlock_strerror(rc));
            if (!variant)
                rdlock_unlock(&sg.lock);
            break;
        }
        if (!variant) {
            if ((rc = rdlock_unlock(&sg.lock)) != 0) {
                fail("condition signaller: rdlock_unlock: %s", rdlock_strerror(rc));
                break;
            }
            t_unl[i] = now_ns();
        }
        if (pr_await(&sh, &sh.done, i + 1) != 0)
            break;
    }
    evalsha_stats(c, &ec1, &eu1);
    if (i < total) {
        /* A waiter still inside rdcond_wait: the predicate it waits for,
         * and a broadcast, so that it returns. */
        __atomic_store_n(&sh.pred, i + 1, __ATOMIC_RELEASE);
        rdcond_broadcast(&sg.cv);
    }
    pr_set(&sh, &sh.stop, 1);
    pthread_join(th, NULL);
    started = 0;
    if (i < total || sh.err) {
        fail("condition: stopped after %d of %d wake-ups", i, total);
        goto out;
    }
    for (i = 0; i < total; i++) {
        if (i % 5 == 4) {
            latv[nv++] = sh.t_ret[i] - t_sig[i];
            continue;
        }
        lat[nm] = sh.t_ret[i] - t_sig[i];
        tmp[nm] = t_sret[i] - t_sig[i];
        t_unl[nm] = t_unl[i] - t_sig[i]; /* in place: nm <= i */
        after += lat[nm] > t_unl[nm];
        nm++;
    }
    res->cv_samples = nm;
    res->cv_var_samples = nv;
    res->cv_spurious = sh.spurious;
    res->cv_rt_us = median(rt_chunk, nchunk);
    res->cv_evalsha_per_sample = (double)(ec1 - ec0) / total;
    res->cv_after_unlock = (double)after / nm;
    qsort(tmp, (size_t)nm, sizeof *tmp, cmp_i64);
    res->cv_signal_p50_ms = (double)pct(tmp, (size_t)nm, 0.50) / 1e6;
    qsort(t_unl, (size_t)nm, sizeof *t_unl, cmp_i64);
    res->cv_unlock_p50_ms = (double)pct(t_unl, (size_t)nm, 0.50) / 1e6;
    /* Per repetition (nm / reps consecutive samples): the p99's range. */
    per_rep = nm / reps;
    for (r = 0; r < reps; r++) {
        memcpy(tmp, lat + (size_t)r * per_rep, (size_t)per_rep * sizeof *tmp);
        qsort(tmp, (size_t)per_rep, sizeof *tmp, cmp_i64);
        p99r[r] = (double)pct(tmp, (size_t)per_rep, 0.99) / 1e6;
    }
    res->cv_p99_lo_ms = res->cv_p99_hi_ms = p99r[0];
    for (r = 1; r < reps; r++) {
        if (p99r[r] < res->cv_p99_lo_ms)
            res->cv_p99_lo_ms = p99r[r];
        if (p99r[r] > res->cv_p99_hi_ms)
            res->cv_p99_hi_ms = p99r[r];
    }
    qsort(lat, (size_t)nm, sizeof *lat, cmp_i64);
    res->cv_p50_ms = (double)pct(lat, (size_t)nm, 0.50) / 1e6;
    res->cv_p99_ms = (double)pct(lat, (size_t)nm, 0.99) / 1e6;
    res->cv_max_ms = (double)lat[nm - 1] / 1e6;
    res->cv_p50_rt = res->cv_p50_ms * 1e3 / res->cv_rt_us;
    res->cv_p99_rt = res->cv_p99_ms * 1e3 / res->cv_rt_us;
    res->cv_target_ms = 2 * res->cv_rt_us / 1e3 + PR_CV_SLACK_MS;
    qsort(latv, (size_t)nv, sizeof *latv, cmp_i64);
    res->cv_var_p50_ms = (double)pct(latv, (size_t)nv, 0.50) / 1e6;
    res->cv_var_p99_ms = (double)pct(latv, (size_t)nv, 0.99) / 1e6;
    res->cv_var_p50_rt = res->cv_var_p50_ms * 1e3 / res->cv_rt_us;
    res->cv_var_p99_rt = res->cv_var_p99_ms * 1e3 / res->cv_rt_us;
    rc = 0;
    goto done;
out:
    rc = -1;
    if (started) {
        pr_set(&sh, &sh.stop, 1);
        pthread_join(th, NULL);
    }
done:
    pthread_mutex_destroy(&sh.mu);
    pthread_cond_destroy(&sh.cc);
    pr_cv_close(&w);
    pr_cv_close(&sg);
    if (c != NULL)
        redisFree(c);
    free(t_sig), free(t_sret), free(t_unl), free(lat), free(latv), free(tmp), free(sh.t_ret), free(rt_chunk);
    return rc;
}

/* A semaphore on a dedicated client (rdsem_attr_setclient), value 1. */
typedef struct pr_sem {
    rdlock_client_t *client;
    rdsem_attr_t attr;
    rdsem_t sem;
    int ok;
} pr_sem_t;

static int pr_sem_open(pr_sem_t *p, const rdt_server_t *s, int type, const char *name)
{
    const char *ini = rdt_write_ini(s, 0, "[lock]\nlease_ms = 30000\n");
    int rc;
    memset(p, 0, sizeof *p);
    if (ini == NULL)
        return -1;
    if ((rc = rdlock_client_open(&p->client, ini)) != 0) {
        fail("semaphore: rdlock_client_open: %s", rdlock_strerror(rc));
        return -1;
    }
    rdsem_attr_init(&p->attr);
    rdsem_attr_settype(&p->attr, type);
    rdsem_attr_setclient(&p->attr, p->client);
    if ((rc = rdsem_init(&p->sem, name, 1, &p->attr)) != 0) {
        fail("rdsem_init(%s): %s", name, rdlock_strerror(rc));
        return -1;
    }
    p->ok = 1;
    return 0;
}

static void pr_sem_close(pr_sem_t *p)
{
    int rc;
    if (!p->ok)
        return;
    if ((rc = rdsem_destroy(&p->sem)) != 0)
        fail("rdsem_destroy: %s", rdlock_strerror(rc));
    rdsem_attr_destroy(&p->attr);
    if ((rc = rdlock_client_close(p->client)) != 0)
        fail("rdlock_client_close: %s", rdlock_strerror(rc));
    p->ok = 0;
}

/* rdsem_wait + rdsem_post pairs per second. */
static double sem_pair_rate(pr_sem_t *p, int n)
{
    int64_t t0 = now_ns();
    int i, rc;
    for (i = 0; i < n; i++) {
        if ((rc = rdsem_wait(&p->sem)) != 0) {
            fail("uncontended rdsem_wait: %s", rdlock_strerror(rc));
            return NAN;
        }
        if ((rc = rdsem_post(&p->sem)) != 0) {
            fail("uncontended rdsem_post: %s", rdlock_strerror(rc));
            return NAN;
        }
    }
    return n / ((double)(now_ns() - t0) / 1e9);
}

/* Semaphore pairs, plain and leased, with PING and a do-nothing EVALSHA,
 * n of each per repetition, interleaved in chunks of PR_CHUNK as step 5a
 * does.  The server's EVALSHA calls and time per pair come from INFO
 * commandstats around every pair chunk (outside the timed parts). */
static int pr_sem(const rdt_server_t *s, int reps, pr_res_t *res)
{
    static const int types[2] = { RDSEM_PLAIN, RDSEM_LEASED };
    static const char *const names[2] = { "bench-sem-plain", "bench-sem-leased" };
    pr_sem_t p[2];
    redisContext *c = rdt_connect(s);
    char sha[64] = "";
    int n = quick ? 1000 : 2500, r, k, done, m, rc = -1;
    double fl[64], sf[64], pr[2][64], q[2][64], qs[2][64];
    long long calls[2] = { 0, 0 }, usec[2] = { 0, 0 }, c0, u0, c1, u1;

    memset(p, 0, sizeof p);
    res->sem_n = n;
    if (c == NULL || pr_sem_open(&p[0], s, types[0], names[0]) != 0 ||
        pr_sem_open(&p[1], s, types[1], names[1]) != 0)
        goto out;
    load_noop_script(c, sha, sizeof sha);
    ping_rate(c, 300);
    evalsha_rate(c, sha, 300);
    for (k = 0; k < 2; k++)
        if (isnan(sem_pair_rate(&p[k], 300)))
            goto out;
    for (r = 0; r < reps; r++) {
        int64_t t[4] = { 0, 0, 0, 0 }, t0;
        for (done = 0; done < n; done += m) {
            m = n - done < PR_CHUNK ? n - done : PR_CHUNK;
            t0 = now_ns();
            if (isnan(ping_rate(c, m)))
                goto out;
            t[0] += now_ns() - t0;
            for (k = 0; k < 2; k++) {
                evalsha_stats(c, &c0, &u0);
                t0 = now_ns();
                if (isnan(sem_pair_rate(&p[k], m)))
                    goto out;
                t[1 + k] += now_ns() - t0;
                evalsha_stats(c, &c1, &u1);
                calls[k] += c1 - c0;
                usec[k] += u1 - u0;
            }
            t0 = now_ns();
            if (isnan(evalsha_rate(c, sha, m)))
                goto out;
            t[3] += now_ns() - t0;
        }
        fl[r] = n / ((double)t[0] / 1e9);
        sf[r] = n / ((double)t[3] / 1e9);
        for (k = 0; k < 2; k++) {
            pr[k][r] = n / ((double)t[1 + k] / 1e9);
            q[k][r] = pr[k][r] / (fl[r] / 2);
            qs[k][r] = pr[k][r] / (sf[r] / 2);
        }
    }
    res->sem_floor = median(fl, reps);
    res->sem_script_floor = median(sf, reps);
    for (k = 0; k < 2; k++) {
        res->sem_pairs[k] = median(pr[k], reps);
        res->sem_ratio[k] = median(q[k], reps);
        res->sem_script_ratio[k] = median(qs[k], reps);
        res->sem_ratio_lo[k] = res->sem_ratio_hi[k] = q[k][0];
        for (r = 1; r < reps; r++) {
            if (q[k][r] < res->sem_ratio_lo[k])
                res->sem_ratio_lo[k] = q[k][r];
            if (q[k][r] > res->sem_ratio_hi[k])
                res->sem_ratio_hi[k] = q[k][r];
        }
        res->sem_evalsha_per_pair[k] = (double)calls[k] / ((double)n * reps);
        res->sem_srv_us_per_pair[k] = (double)usec[k] / ((double)n * reps);
    }
    rc = 0;
out:
    for (k = 0; k < 2; k++)
        pr_sem_close(&p[k]);
    if (c != NULL)
        redisFree(c);
    return rc;
}

/* Step 9: both, on the bench's own server. */
static int bench_prims(const rdt_server_t *s, int reps, pr_res_t *res)
{
    double t0 = now_s();
    int a, b;
    memset(res, 0, sizeof *res);
    res->cv_rt_us = res->cv_p50_ms = res->cv_p99_ms = res->cv_max_ms = NAN;
    res->cv_p50_rt = res->cv_p99_rt = res->cv_target_ms = NAN;
    res->cv_var_p50_ms = res->cv_var_p99_ms = res->cv_var_p50_rt = res->cv_var_p99_rt = NAN;
    res->sem_pairs[0] = res->sem_pairs[1] = res->sem_ratio[0] = res->sem_ratio[1] = NAN;
    a = pr_cond(s, reps, res);
    b = pr_sem(s, reps, res);
    res->elapsed_s = now_s() - t0;
    res->ok = a == 0 && b == 0;
    return res->ok ? 0 : -1;
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
    fprintf(stderr, "usage: rdlock-bench [--quick] [--json-only] [--cold-script-cache] [--cluster] [--no-redlock] [--no-prims]\n"
                    "                    [--no-tls] [--no-million] [--watchdog-only] [--tls-only]\n");
}

int main(int argc, char **argv)
{
    rdt_server_t srv;
    base_res_t base;
    cont_res_t cres[4];
    rw_res_t rwres;
    wd_res_t wres[3];
    mt_res_t mres;
    cl_res_t clres;
    rl_res_t rlres;
    pr_res_t prres;
    int with_cluster = 0, with_redlock = 1, with_prims = 1, with_million = 1, watchdog_only = 0;
    int with_tls = 1, tls_only = 0;
    int nwd = 0, i, k, reps, creps;
    tally_t tally = { 0, 0 };
    char key[128], ver[64], mode[32];
    redisContext *c;
    double t_start = now_s();

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--json-only") == 0)
            json_only = 1;
        else if (strcmp(argv[i], "--cold-script-cache") == 0)
            cold_script_cache = 1;
        else if (strcmp(argv[i], "--cluster") == 0)
            with_cluster = 1;
        else if (strcmp(argv[i], "--no-redlock") == 0)
            with_redlock = 0;
        else if (strcmp(argv[i], "--no-prims") == 0)
            with_prims = 0;
        else if (strcmp(argv[i], "--no-tls") == 0)
            with_tls = 0;
        else if (strcmp(argv[i], "--no-million") == 0)
            with_million = 0;
        else if (strcmp(argv[i], "--watchdog-only") == 0)
            watchdog_only = 1;
        else if (strcmp(argv[i], "--tls-only") == 0)
            tls_only = 1;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else {
            usage();
            return 64;
        }
    }
    if (watchdog_only && tls_only) {
        fprintf(stderr, "rdlock-bench: --watchdog-only and --tls-only exclude each other\n");
        return 64;
    }
    if (tls_only && !with_tls) {
        fprintf(stderr, "rdlock-bench: --tls-only and --no-tls exclude each other\n");
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    log_verbose = getenv("RDLOCK_BENCH_DEBUG") != NULL && *getenv("RDLOCK_BENCH_DEBUG") != '\0';
    rdlock_set_logger(logger, NULL);
    reps = quick ? 3 : 5;
    creps = quick ? 1 : 3;
    if (getenv("RDLOCK_BENCH_CREPS") != NULL) {
        /* more contended repetitions, for investigations */
        creps = atoi(getenv("RDLOCK_BENCH_CREPS"));
        if (creps < 1 || creps > 16)
            creps = creps < 1 ? 1 : 16;
    }
    json_begin();

    if (rdt_server_start(&srv, NULL, NULL) != 0) {
        fprintf(stderr, "rdlock-bench: cannot start redis-server\n");
        return 1;
    }
    c = rdt_connect(&srv);
    if (c == NULL) {
        rdt_server_stop(&srv);
        return 1;
    }
    info_field(c, "server", "redis_version", ver, sizeof ver);
    redisFree(c);
    out("rdlock-bench: librdlock %s, redis-server %s (pid %ld, port %d), %ld CPUs, %s mode\n",
        rdlock_version(), ver, (long)srv.pid, srv.port, sysconf(_SC_NPROCESSORS_ONLN), quick ? "quick" : "full");
    out("every figure is the median of %d repetitions (contended: %d) unless noted\n\n", reps, creps);
    json_str("librdlock_version", rdlock_version());
    json_str("redis_version", ver);
    json_num("cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
    json_bool("quick", quick);
    json_bool("cold_script_cache", cold_script_cache);
    json_bool("cluster", with_cluster);
    json_bool("redlock", with_redlock);
    json_bool("prims", with_prims);
#ifdef RDL_HAVE_TLS
    json_bool("tls", with_tls);
#else
    json_bool("tls", 0);
#endif
    json_num("reps", reps);
    json_num("contended_reps", creps);
    json_bool("million", !quick && with_million);
    json_bool("watchdog_only", watchdog_only);
    json_bool("tls_only", tls_only);
    if (watchdog_only)
        goto watchdog_step;
    if (tls_only)
        goto tls_step;

    /* 1 + 2 */
    phase = "floor/uncontended";
    bench_base(&srv, reps, &base);
    report_base(&base, &tally);

    /* 3: repetitions interleaved over the three configurations. */
    phase = "contended";
    bench_contended(&srv, creps, cres);
    report_contended(cres, &tally);

    /* 5b, measured here (after the mutex workload, before the watchdog's
     * long idle wait) and printed after step 4. */
    phase = "rwlock mixed";
    bench_rw_mixed(&srv, creps, &rwres);

watchdog_step:
    /* 4: acquires/s estimate from the uncontended run (--watchdog-only:
     * from 1,000 pairs of its own) */
    nwd = bench_watchdog_sizes(&srv, (watchdog_only ? wd_pair_rate(&srv) : base.unc_tcp) * 2,
                               quick ? 1 : with_million ? 3 : 2, wres);
    report_watchdog(wres, nwd, &tally);
    if (watchdog_only)
        goto finish;

    /* 5: read-write lock */
    report_rw_base(&base, &tally);
    report_rw_mixed(&rwres, creps, &tally);

    /* 6: many threads, distinct names, one server */
    phase = "many threads";
    bench_mt(&srv, reps, &mres);
    report_mt(&mres, &tally);

    /* 7: the same on a 3-master cluster (--cluster) */
    if (with_cluster) {
        phase = "cluster";
        bench_cluster(reps, &clres);
        report_cluster(&clres, &mres, &tally);
    }

    /* 8: Redlock (skipped with --no-redlock) */
    if (with_redlock) {
        phase = "redlock";
        bench_redlock(reps, &rlres);
        report_redlock(&rlres, &tally);
    }

    /* 9: condition variable and semaphore (skipped with --no-prims) */
    if (with_prims) {
        static const char *const sn[2] = { "plain", "leased" };
        int ok;
        phase = "condition/semaphore";
        bench_prims(&srv, reps, &prres);
        out("\n9. condition variable and semaphore, on this server, each party on its own client\n");
        out("   a. rdcond_signal -> rdcond_wait returns: %d wake-ups; the waiter thread waits, the signaller\n"
            "      (this thread) takes the lock, sets the predicate, signals, unlocks; the time runs from\n"
            "      the signal call to the waiter's return, which includes taking the lock back\n",
            prres.cv_samples);
        ok = prres.cv_p99_ms <= prres.cv_target_ms;
        out("      PING round trip %.1f us (median of %d-PING chunks, one every %d wake-ups)\n", prres.cv_rt_us,
            PR_PINGS, PR_CHUNK);
        out("      p50 %.3f ms (%.1f rt), p99 %.3f ms (%.1f rt; per repetition %.3f-%.3f), max %.2f ms\n",
            prres.cv_p50_ms, prres.cv_p50_rt, prres.cv_p99_ms, prres.cv_p99_rt, prres.cv_p99_lo_ms,
            prres.cv_p99_hi_ms, prres.cv_max_ms);
        out("      target: p99 <= 2 round trips + %.0f ms = %.3f ms %s\n", PR_CV_SLACK_MS, prres.cv_target_ms,
            mark(ok));
        out("      diagnostics: rdcond_signal call %.3f ms (p50); the signaller's unlock returned %.3f ms after\n"
            "      the signal call (p50); %.0f%% of the wake-ups returned after it; %.1f EVALSHA per\n"
            "      wake-up cycle (both parties); %ld spurious wake-ups\n",
            prres.cv_signal_p50_ms, prres.cv_unlock_p50_ms, 100 * prres.cv_after_unlock,
            prres.cv_evalsha_per_sample, prres.cv_spurious);
        out("      diagnostic variant, every fifth sample (%d): unlock first, then signal (the lock is free\n"
            "      when the waiter takes it back): p50 %.3f ms (%.1f rt), p99 %.3f ms (%.1f rt)\n",
            prres.cv_var_samples, prres.cv_var_p50_ms, prres.cv_var_p50_rt, prres.cv_var_p99_ms,
            prres.cv_var_p99_rt);
        tally.targets++;
        tally.met += ok;
        json_num("cond_samples", prres.cv_samples);
        json_num("cond_rt_us", prres.cv_rt_us);
        json_num("cond_wake_p50_ms", prres.cv_p50_ms);
        json_num("cond_wake_p99_ms", prres.cv_p99_ms);
        json_num("cond_wake_max_ms", prres.cv_max_ms);
        json_num("cond_wake_p50_rt", prres.cv_p50_rt);
        json_num("cond_wake_p99_rt", prres.cv_p99_rt);
        json_num("cond_wake_p99_min_ms", prres.cv_p99_lo_ms);
        json_num("cond_wake_p99_max_ms", prres.cv_p99_hi_ms);
        json_num("cond_wake_target_ms", prres.cv_target_ms);
        json_bool("cond_wake_target_met", ok);
        json_num("cond_signal_call_p50_ms", prres.cv_signal_p50_ms);
        json_num("cond_signaller_unlock_p50_ms", prres.cv_unlock_p50_ms);
        json_num("cond_wake_after_unlock_share", prres.cv_after_unlock);
        json_num("cond_evalsha_per_wake", prres.cv_evalsha_per_sample);
        json_num("cond_spurious_wakeups", (double)prres.cv_spurious);
        json_num("cond_unlock_first_samples", prres.cv_var_samples);
        json_num("cond_unlock_first_wake_p50_ms", prres.cv_var_p50_ms);
        json_num("cond_unlock_first_wake_p99_ms", prres.cv_var_p99_ms);
        json_num("cond_unlock_first_wake_p50_rt", prres.cv_var_p50_rt);
        json_num("cond_unlock_first_wake_p99_rt", prres.cv_var_p99_rt);

        out("   b. uncontended rdsem_wait + rdsem_post, value 1, one thread; %d pairs of each type per\n"
            "      repetition, interleaved in chunks of %d with PING (floor %.0f rt/s) and a do-nothing\n"
            "      EVALSHA (script floor %.0f rt/s)\n",
            prres.sem_n, PR_CHUNK, prres.sem_floor, prres.sem_script_floor);
        out("   %-10s %9s  %-27s %-11s %13s %8s %10s\n", "", "pairs/s", "ratio to floor/2 (>= 0.50)", "(range)",
            "script floor/2", "rt/pair", "srv us/pair");
        for (k = 0; k < 2; k++) {
            ok = prres.sem_ratio[k] >= PR_SEM_TARGET;
            out("   %-10s %9.0f  %6.3f  %-19s %.2f-%.2f %13.3f %8.2f %10.1f\n", sn[k], prres.sem_pairs[k],
                prres.sem_ratio[k], mark(ok), prres.sem_ratio_lo[k], prres.sem_ratio_hi[k], prres.sem_script_ratio[k],
                prres.sem_evalsha_per_pair[k], prres.sem_srv_us_per_pair[k]);
            tally.targets++;
            tally.met += ok;
#define J(suffix, val)                                          \
    do {                                                        \
        snprintf(key, sizeof key, "sem_%s_%s", sn[k], suffix);  \
        json_num(key, val);                                     \
    } while (0)
            J("pairs_per_s", rnd(prres.sem_pairs[k]));
            J("ratio", prres.sem_ratio[k]);
            J("ratio_min", prres.sem_ratio_lo[k]);
            J("ratio_max", prres.sem_ratio_hi[k]);
            J("script_ratio", prres.sem_script_ratio[k]);
            J("evalsha_per_pair", prres.sem_evalsha_per_pair[k]);
            J("server_us_per_pair", prres.sem_srv_us_per_pair[k]);
#undef J
        }
        out("   (rt/pair: EVALSHA calls per pair; srv us/pair: server time inside them; medians of\n"
            "    per-repetition ratios); step 9 took %.1f s\n",
            prres.elapsed_s);
        json_num("sem_pairs_per_rep", prres.sem_n);
        json_num("sem_floor_rps", rnd(prres.sem_floor));
        json_num("sem_script_floor_rps", rnd(prres.sem_script_floor));
        json_num("prims_elapsed_s", rnd(prres.elapsed_s * 10) / 10);
        json_bool("prims_ok", prres.ok);
    }

tls_step:
    /* 10: TLS (built with TLS; skipped with --no-tls) */
    if (with_tls) {
#ifdef RDL_HAVE_TLS
        static const char *const tn[2] = { "TLS", "plain TCP" };
        bench_tls_res_t tr;
        phase = "tls";
        if (bench_tls(&srv, reps, quick ? 1000 : 2500, &tr) != 0) {
            fail("step 10 (TLS): %s", tr.err);
            out("\n10. TLS: not measured (%s)\n", tr.err);
            json_bool("tls_ok", 0);
            goto finish;
        }
        out("\n10. TLS: uncontended lock+unlock, one thread, dedicated client with tls = yes (%s),\n"
            "    to a TLS-only redis-server of its own (certificates and server ready in %.1f s), next to\n"
            "    plain TCP to this server; %d PINGs and %d pairs of each per repetition, the four\n"
            "    interleaved in chunks of %d; floor: PING on one hiredis connection (hiredis_ssl for TLS)\n",
            tr.server[0] ? tr.server : "?", tr.start_s, tr.n, tr.n, BENCH_TLS_CHUNK);
        out("   %-12s %12s %12s   %-17s %s\n", "", "floor rt/s", "pairs/s", "ratio to floor/2", "(range)");
        for (k = 0; k < 2; k++)
            out("   %-12s %12.0f %12.0f   %6.3f            %.2f-%.2f\n", tn[k], tr.floor[k], tr.pairs[k], tr.ratio[k],
                tr.ratio_lo[k], tr.ratio_hi[k]);
        out("   TLS adds %.1f us to a PING round trip (%.1f -> %.1f us) and %.1f us to a lock+unlock pair;\n"
            "   TLS pairs/s = %.2f of plain TCP's (medians of per-repetition figures)",
            tr.rt_us_extra, 1e6 / tr.floor[1], 1e6 / tr.floor[0], tr.pair_us_extra, tr.pairs_quot);
        if (!tls_only)
            out("; step 2's tcp ratio: %.3f", base.ratio_tcp);
        out("\n");
        json_num("tls_pings_per_rep", tr.n);
        json_num("tls_start_s", rnd(tr.start_s * 10) / 10);
        json_num("tls_floor_rps", rnd(tr.floor[0]));
        json_num("tls_pairs_per_s", rnd(tr.pairs[0]));
        json_num("tls_ratio", tr.ratio[0]);
        json_num("tls_ratio_min", tr.ratio_lo[0]);
        json_num("tls_ratio_max", tr.ratio_hi[0]);
        json_num("tls_tcp_floor_rps", rnd(tr.floor[1]));
        json_num("tls_tcp_pairs_per_s", rnd(tr.pairs[1]));
        json_num("tls_tcp_ratio", tr.ratio[1]);
        json_num("tls_tcp_ratio_min", tr.ratio_lo[1]);
        json_num("tls_tcp_ratio_max", tr.ratio_hi[1]);
        json_num("tls_us_per_round_trip_extra", tr.rt_us_extra);
        json_num("tls_us_per_pair_extra", tr.pair_us_extra);
        json_num("tls_pairs_vs_tcp", tr.pairs_quot);
        json_bool("tls_ok", 1);
#else
        out("\n10. TLS: not measured, this librdlock was built without TLS\n");
#endif
    }

finish:
    snprintf(mode, sizeof mode, "%d/%d", tally.met, tally.targets);
    out("\ntargets met: %s; hard errors: %d; library warnings logged: %d; %.0f s\n", mode, hard_errors,
        lib_warnings, now_s() - t_start);
    json_num("targets_met", tally.met);
    json_num("targets_total", tally.targets);
    json_num("hard_errors", hard_errors);
    json_num("library_warnings", lib_warnings);
    json_num("elapsed_s", rnd(now_s() - t_start));
    rdt_server_stop(&srv);
    json_print();
    return hard_errors ? 1 : 0;
}
