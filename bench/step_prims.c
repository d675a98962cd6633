/* step_prims.c - step 9: the condition variable and the semaphore on the
 * bench's own server, each party on its own client.  a. the latency from
 * rdcond_signal to rdcond_wait returning, in ms and in PING round trips
 * measured next to it; b. uncontended rdsem_wait + rdsem_post pairs/s
 * (plain and leased) as a ratio to floor/2, interleaved with PING and a
 * do-nothing EVALSHA (bench/README.md). */
#include "bench.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The signaller's timestamps of each sample (ns), scratch for the
 * latencies, and the PING round trip of each chunk (us). */
typedef struct pr_bufs {
    int64_t *t_sig, *t_sret, *t_unl, *lat, *latv, *tmp;
    double *rt_chunk;
    int nchunk;
} pr_bufs_t;

/* Room for total samples, also the waiter's (sh->t_ret).  0, or -1
 * (printed). */
static int pr_bufs_alloc(pr_bufs_t *b, pr_shared_t *sh, int total)
{
    b->t_sig = calloc((size_t)total, sizeof *b->t_sig);
    b->t_sret = calloc((size_t)total, sizeof *b->t_sret);
    b->t_unl = calloc((size_t)total, sizeof *b->t_unl);
    b->lat = calloc((size_t)total, sizeof *b->lat);
    b->latv = calloc((size_t)total, sizeof *b->latv);
    b->tmp = calloc((size_t)total, sizeof *b->tmp);
    sh->t_ret = calloc((size_t)total, sizeof *sh->t_ret);
    b->rt_chunk = calloc((size_t)(total / PR_CHUNK + 2), sizeof *b->rt_chunk);
    if (b->t_sig == NULL || b->t_sret == NULL || b->t_unl == NULL || b->lat == NULL || b->latv == NULL ||
        b->tmp == NULL || sh->t_ret == NULL || b->rt_chunk == NULL) {
        fail("condition: out of memory");
        return -1;
    }
    return 0;
}

static void pr_bufs_free(pr_bufs_t *b, pr_shared_t *sh)
{
    free(b->t_sig), free(b->t_sret), free(b->t_unl), free(b->lat), free(b->latv), free(b->tmp), free(sh->t_ret),
        free(b->rt_chunk);
}

/* Warm up: connections, scripts, both clients' subscription threads.
 * 0, or -1 (printed). */
static int pr_cond_warm_up(redisContext *c, pr_cv_t *w, pr_cv_t *sg)
{
    int i;

    ping_rate(c, 200);
    for (i = 0; i < 20; i++)
        if (rdlock_lock(&sg->lock) != 0 || rdcond_signal(&sg->cv) != 0 || rdlock_unlock(&sg->lock) != 0 ||
            rdlock_lock(&w->lock) != 0 || rdlock_unlock(&w->lock) != 0) {
            fail("condition: warm-up failed");
            return -1;
        }
    return 0;
}

/* Sample i, the signaller's side (every fifth the variant: unlock, then
 * signal).  0, or -1 to stop (a failure is printed). */
static int pr_cond_sample(redisContext *c, pr_cv_t *sg, pr_shared_t *sh, pr_bufs_t *b, int i)
{
    int variant = i % 5 == 4, rc;

    if (i % PR_CHUNK == 0) {
        /* Both threads idle: the floor next to these wake-ups. */
        int64_t t0 = now_ns();
        if (isnan(ping_rate(c, PR_PINGS)))
            return -1;
        b->rt_chunk[b->nchunk++] = (double)(now_ns() - t0) / PR_PINGS / 1e3;
    }
    pr_set(sh, &sh->go, i + 1);
    if (pr_await(sh, &sh->ready, i + 1) != 0)
        return -1;
    /* Blocks until the waiter's rdcond_wait has registered and
     * released the lock. */
    if ((rc = rdlock_lock(&sg->lock)) != 0) {
        fail("condition signaller: rdlock_lock: %s", rdlock_strerror(rc));
        return -1;
    }
    __atomic_store_n(&sh->pred, i + 1, __ATOMIC_RELEASE);
    if (variant) {
        if ((rc = rdlock_unlock(&sg->lock)) != 0) {
            fail("condition signaller: rdlock_unlock: %s", rdlock_strerror(rc));
            return -1;
        }
        b->t_unl[i] = now_ns();
    }
    b->t_sig[i] = now_ns();
    rc = rdcond_signal(&sg->cv);
    b->t_sret[i] = now_ns();
    if (rc != 0) {
        fail("rdcond_signal: %s", rdlock_strerror(rc));
        if (!variant)
            rdlock_unlock(&sg->lock);
        return -1;
    }
    if (!variant) {
        if ((rc = rdlock_unlock(&sg->lock)) != 0) {
            fail("condition signaller: rdlock_unlock: %s", rdlock_strerror(rc));
            return -1;
        }
        b->t_unl[i] = now_ns();
    }
    if (pr_await(sh, &sh->done, i + 1) != 0)
        return -1;
    return 0;
}

/* The figures of total complete samples: latencies of the main kind and
 * of the variant, the signal call, the signaller's unlock, the per-
 * repetition p99s, all also in round trips. */
static void pr_cond_figures(pr_bufs_t *b, const pr_shared_t *sh, int total, int reps, long long evalsha,
                            pr_res_t *res)
{
    int64_t *lat = b->lat, *latv = b->latv, *tmp = b->tmp, *t_unl = b->t_unl;
    double p99r[64];
    int i, r, per_rep, nm = 0, nv = 0;
    long after = 0;

    for (i = 0; i < total; i++) {
        if (i % 5 == 4) {
            latv[nv++] = sh->t_ret[i] - b->t_sig[i];
            continue;
        }
        lat[nm] = sh->t_ret[i] - b->t_sig[i];
        tmp[nm] = b->t_sret[i] - b->t_sig[i];
        t_unl[nm] = t_unl[i] - b->t_sig[i]; /* in place: nm <= i */
        after += lat[nm] > t_unl[nm];
        nm++;
    }
    res->cv_samples = nm;
    res->cv_var_samples = nv;
    res->cv_spurious = sh->spurious;
    res->cv_rt_us = median(b->rt_chunk, b->nchunk);
    res->cv_evalsha_per_sample = (double)evalsha / total;
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
}

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
    pr_bufs_t b;
    pthread_t th;
    redisContext *c = rdt_connect(s);
    int n = quick ? PR_SAMPLES_QUICK : PR_SAMPLES, total = n + n / 4, i, rc, started = 0;
    long long ec0 = 0, eu0, ec1 = 0, eu1;

    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cc, NULL);
    memset(&w, 0, sizeof w);
    memset(&sg, 0, sizeof sg);
    memset(&b, 0, sizeof b);
    sh.n = total;
    sh.w = &w;
    if (c == NULL || pr_cv_open(&w, s) != 0 || pr_cv_open(&sg, s) != 0)
        goto out;
    if (pr_bufs_alloc(&b, &sh, total) != 0 || pr_cond_warm_up(c, &w, &sg) != 0)
        goto out;
    if ((rc = pthread_create(&th, NULL, pr_waiter, &sh)) != 0) {
        fail("condition: pthread_create: %s", strerror(rc));
        goto out;
    }
    started = 1;
    evalsha_stats(c, &ec0, &eu0);
    for (i = 0; i < total; i++)
        if (pr_cond_sample(c, &sg, &sh, &b, i) != 0)
            break;
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
    pr_cond_figures(&b, &sh, total, reps, ec1 - ec0, res);
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
    pr_bufs_free(&b, &sh);
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
int bench_prims(const rdt_server_t *s, int reps, pr_res_t *res)
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

/* Step 9a's lines and keys: the condition variable. */
static void pr_report_cond(const pr_res_t *r, tally_t *t)
{
    int ok;

    out("\n9. condition variable and semaphore, on this server, each party on its own client\n");
    out("   a. rdcond_signal -> rdcond_wait returns: %d wake-ups; the waiter thread waits, the signaller\n"
        "      (this thread) takes the lock, sets the predicate, signals, unlocks; the time runs from\n"
        "      the signal call to the waiter's return, which includes taking the lock back\n",
        r->cv_samples);
    ok = r->cv_p99_ms <= r->cv_target_ms;
    out("      PING round trip %.1f us (median of %d-PING chunks, one every %d wake-ups)\n", r->cv_rt_us,
        PR_PINGS, PR_CHUNK);
    out("      p50 %.3f ms (%.1f rt), p99 %.3f ms (%.1f rt; per repetition %.3f-%.3f), max %.2f ms\n",
        r->cv_p50_ms, r->cv_p50_rt, r->cv_p99_ms, r->cv_p99_rt, r->cv_p99_lo_ms,
        r->cv_p99_hi_ms, r->cv_max_ms);
    out("      target: p99 <= 2 round trips + %.0f ms = %.3f ms %s\n", PR_CV_SLACK_MS, r->cv_target_ms,
        mark(ok));
    out("      diagnostics: rdcond_signal call %.3f ms (p50); the signaller's unlock returned %.3f ms after\n"
        "      the signal call (p50); %.0f%% of the wake-ups returned after it; %.1f EVALSHA per\n"
        "      wake-up cycle (both parties); %ld spurious wake-ups\n",
        r->cv_signal_p50_ms, r->cv_unlock_p50_ms, 100 * r->cv_after_unlock,
        r->cv_evalsha_per_sample, r->cv_spurious);
    out("      diagnostic variant, every fifth sample (%d): unlock first, then signal (the lock is free\n"
        "      when the waiter takes it back): p50 %.3f ms (%.1f rt), p99 %.3f ms (%.1f rt)\n",
        r->cv_var_samples, r->cv_var_p50_ms, r->cv_var_p50_rt, r->cv_var_p99_ms,
        r->cv_var_p99_rt);
    t->targets++;
    t->met += ok;
    json_num("cond_samples", r->cv_samples);
    json_num("cond_rt_us", r->cv_rt_us);
    json_num("cond_wake_p50_ms", r->cv_p50_ms);
    json_num("cond_wake_p99_ms", r->cv_p99_ms);
    json_num("cond_wake_max_ms", r->cv_max_ms);
    json_num("cond_wake_p50_rt", r->cv_p50_rt);
    json_num("cond_wake_p99_rt", r->cv_p99_rt);
    json_num("cond_wake_p99_min_ms", r->cv_p99_lo_ms);
    json_num("cond_wake_p99_max_ms", r->cv_p99_hi_ms);
    json_num("cond_wake_target_ms", r->cv_target_ms);
    json_bool("cond_wake_target_met", ok);
    json_num("cond_signal_call_p50_ms", r->cv_signal_p50_ms);
    json_num("cond_signaller_unlock_p50_ms", r->cv_unlock_p50_ms);
    json_num("cond_wake_after_unlock_share", r->cv_after_unlock);
    json_num("cond_evalsha_per_wake", r->cv_evalsha_per_sample);
    json_num("cond_spurious_wakeups", (double)r->cv_spurious);
    json_num("cond_unlock_first_samples", r->cv_var_samples);
    json_num("cond_unlock_first_wake_p50_ms", r->cv_var_p50_ms);
    json_num("cond_unlock_first_wake_p99_ms", r->cv_var_p99_ms);
    json_num("cond_unlock_first_wake_p50_rt", r->cv_var_p50_rt);
    json_num("cond_unlock_first_wake_p99_rt", r->cv_var_p99_rt);
}

/* Step 9b's: the semaphore. */
static void pr_report_sem(const pr_res_t *r, tally_t *t)
{
    static const char *const sn[2] = { "plain", "leased" };
    char key[128];
    int k, ok;

    out("   b. uncontended rdsem_wait + rdsem_post, value 1, one thread; %d pairs of each type per\n"
        "      repetition, interleaved in chunks of %d with PING (floor %.0f rt/s) and a do-nothing\n"
        "      EVALSHA (script floor %.0f rt/s)\n",
        r->sem_n, PR_CHUNK, r->sem_floor, r->sem_script_floor);
    out("   %-10s %9s  %-27s %-11s %13s %8s %10s\n", "", "pairs/s", "ratio to floor/2 (>= 0.50)", "(range)",
        "script floor/2", "rt/pair", "srv us/pair");
    for (k = 0; k < 2; k++) {
        ok = r->sem_ratio[k] >= PR_SEM_TARGET;
        out("   %-10s %9.0f  %6.3f  %-19s %.2f-%.2f %13.3f %8.2f %10.1f\n", sn[k], r->sem_pairs[k],
            r->sem_ratio[k], mark(ok), r->sem_ratio_lo[k], r->sem_ratio_hi[k], r->sem_script_ratio[k],
            r->sem_evalsha_per_pair[k], r->sem_srv_us_per_pair[k]);
        t->targets++;
        t->met += ok;
#define J(suffix, val)                                         \
    do {                                                       \
        snprintf(key, sizeof key, "sem_%s_%s", sn[k], suffix); \
        json_num(key, val);                                    \
    } while (0)
        J("pairs_per_s", rnd(r->sem_pairs[k]));
        J("ratio", r->sem_ratio[k]);
        J("ratio_min", r->sem_ratio_lo[k]);
        J("ratio_max", r->sem_ratio_hi[k]);
        J("script_ratio", r->sem_script_ratio[k]);
        J("evalsha_per_pair", r->sem_evalsha_per_pair[k]);
        J("server_us_per_pair", r->sem_srv_us_per_pair[k]);
#undef J
    }
    out("   (rt/pair: EVALSHA calls per pair; srv us/pair: server time inside them; medians of\n"
        "    per-repetition ratios); step 9 took %.1f s\n",
        r->elapsed_s);
    json_num("sem_pairs_per_rep", r->sem_n);
    json_num("sem_floor_rps", rnd(r->sem_floor));
    json_num("sem_script_floor_rps", rnd(r->sem_script_floor));
    json_num("prims_elapsed_s", rnd(r->elapsed_s * 10) / 10);
    json_bool("prims_ok", r->ok);
}

void report_prims(const pr_res_t *r, tally_t *t)
{
    pr_report_cond(r, t);
    pr_report_sem(r, t);
}
