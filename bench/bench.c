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
#include "delayproxy.h"
#include "tls.h"


int quick, json_only;
int cold_script_cache;

/* ---------------------------------------------------------------- 8: Redlock */

/* Uncontended lock+unlock pairs/s on a Redlock quorum of 3 and of 5
 * masters (the first three of five fresh redis-servers for N = 3), as a
 * ratio to the same pairs on one of those servers alone ([redis]), the
 * three interleaved in chunks of RL_CHUNK pairs in every repetition.  Each
 * quorum step asks its masters at once (src/quorum.c), so a pair should
 * cost about what it costs on one server: target >= RL_TARGET.
 * Diagnostic: the same on 5 masters with the last RL_STOPPED of them
 * SIGSTOPped (a client of its own, whose first calls mark them down), as
 * a ratio to the 5-master figure of the same repetition.  Checks, as in
 * steps 3 and 6: every pair's fencing token is above the previous one of
 * its name, and, untimed, RL_CHECK_THREADS threads on their own clients
 * increment a counter under the lock (GET + SET on a plain connection)
 * with the fencing tokens ordering the sections. */
#define RL_MASTERS 5
#define RL_STOPPED 2         /* masters SIGSTOPped for the diagnostic: the last ones */
#define RL_TARGET 0.80       /* N = 3 and N = 5 pairs/s, x the single-master pairs/s */
#define RL_CHECK_THREADS 2   /* the counter check */
#define RL_CHECK_MAX 256     /* sections per thread, at most */
#define RL_WARM_STOPPED 50   /* pairs after stopping the masters, before timing */
#define RL_CHUNK 100         /* single, N=3 and N=5 alternate in chunks of this many pairs */

enum { RL_SINGLE, RL_N3, RL_N5, RL_STOP, RL_NCONF };

/* One of the four workloads: its lock, the last fencing token it got, and
 * the servers it talks to (for EVALSHA counts and CPU time). */
typedef struct rl_conf {
    ulock_t u;
    const char *label;
    int nsrv;           /* its servers: m[0 .. nsrv-1] (CPU time) */
    int ninfo;          /* those that run while it does: m[0 .. ninfo-1] (INFO;
                           a stopped server would time the connection out) */
    uint64_t last_token;
    int token_ok;
} rl_conf_t;

typedef struct rl_res {
    long n_pairs;                   /* per workload and repetition */
    int check_sections;             /* per thread, counter check */
    double start_s;                 /* starting the five servers */
    double pairs[RL_NCONF];         /* medians, pairs/s */
    double ratio[RL_NCONF];         /* N3, N5: to single; STOP: to N5 (medians of per-rep ratios) */
    double ratio_lo[RL_NCONF], ratio_hi[RL_NCONF];
    double evalsha_per_pair[RL_NCONF]; /* summed over the running servers (library round trips) */
    double cpu_cl[RL_NCONF], cpu_srv[RL_NCONF]; /* CPU us per pair: this process, the servers */
    double ceiling[RL_NCONF];       /* pairs/s the CPUs allow: ncpu / CPU time per pair (median) */
    double stop_first_ms;           /* the first pair after stopping the masters (median) */
    double elapsed_s;               /* the whole step */
    int tokens_ok;                  /* every timed pair's token above the previous one */
    int check_counter_ok[RL_NCONF], check_fencing_ok[RL_NCONF]; /* N3, N5, STOP */
    double check_secs_per_s[RL_NCONF];
    double delay_pairs[RL_STOP];    /* behind the delay proxy: single, N3, N5 pairs/s (medians) */
    double delay_ratio[RL_STOP];    /* N3, N5: to single (medians of per-rep ratios) */
    double delay_lo[RL_STOP], delay_hi[RL_STOP];
    double delay_rtt_ms;            /* PING round trip through the proxy (median) */
    int delay_ok;
    double sem_pairs[RL_STOP];      /* semaphore wait+post pairs/s: single, N3, N5 (medians) */
    double sem_ratio[RL_STOP];      /* N3, N5: to single (medians of per-rep ratios) */
    int sem_ok;
    int ok;
} rl_res_t;

#define RL_SEM_CHUNK 50 /* semaphore pairs per chunk */

static double rl_pairs(rl_conf_t *k, int n);
#define RL_DELAY_US 500 /* the delay proxy: each direction, so +1 ms per round trip */
#define RL_DELAY_CHUNK 25

/* The same three workloads with every server behind the delay proxy
 * (bench/delayproxy.h): a round trip of about a LAN's, so that the round
 * trips, not the CPUs, are what a pair costs, and a quorum that asks its
 * masters in parallel shows it.  The target RL_TARGET is judged here. */
static void rl_delayed(rl_res_t *res, const rdt_server_t *m, int reps, const char *const *label)
{
    dproxy_t *dp = NULL;
    int up[RL_MASTERS], w, j, r, n = quick ? 100 : 200;
    char text[1024], ini[RL_STOP][400];
    const char *p;
    rl_conf_t k[RL_STOP];
    static double v[RL_STOP][64], q[RL_STOP][64], rtt[64];
    redisContext *pc = NULL;

    memset(k, 0, sizeof k);
    res->delay_ok = 0;
    for (j = 0; j < RL_MASTERS; j++)
        up[j] = m[j].port;
    if (dproxy_start(&dp, up, RL_MASTERS, RL_DELAY_US) != 0) {
        fail("redlock delayed: the delay proxy did not start");
        return;
    }
    snprintf(text, sizeof text, "[redis]\nhost = 127.0.0.1\nport = %d\n[lock]\nlease_ms = 30000\n", dproxy_port(dp, 0));
    if ((p = rdt_write_file(&m[0], "bench-rl-delay-1.ini", text)) == NULL)
        goto out;
    snprintf(ini[RL_SINGLE], sizeof ini[RL_SINGLE], "%s", p);
    for (w = RL_N3; w <= RL_N5; w++) {
        int nm = w == RL_N3 ? 3 : 5, off = snprintf(text, sizeof text, "[redlock]\nmasters = ");
        for (j = 0; j < nm; j++)
            off += snprintf(text + off, sizeof text - (size_t)off, "%s127.0.0.1:%d", j ? ", " : "", dproxy_port(dp, j));
        snprintf(text + off, sizeof text - (size_t)off, "\nrestart_delay_ms = 1\n[lock]\nlease_ms = 30000\n");
        if ((p = rdt_write_file(&m[0], w == RL_N3 ? "bench-rl-delay-3.ini" : "bench-rl-delay-5.ini", text)) == NULL)
            goto out;
        snprintf(ini[w], sizeof ini[w], "%s", p);
    }
    for (w = 0; w < RL_STOP; w++) {
        k[w].label = label[w];
        k[w].token_ok = 1;
        if (ulock_open_ini(&k[w].u, ini[w], w == RL_SINGLE ? "bench-rl-d1" : w == RL_N3 ? "bench-rl-d3" : "bench-rl-d5") !=
            0)
            goto out;
        if (isnan(rl_pairs(&k[w], 20)))
            goto out;
    }
    /* the round trip through the proxy: PING on a plain connection */
    pc = redisConnect("127.0.0.1", dproxy_port(dp, 0));
    for (r = 0; r < reps; r++) {
        double t[RL_STOP] = { 0 };
        int done, ch;
        int64_t t0 = now_ns();
        for (j = 0; j < 20 && pc != NULL && !pc->err; j++) {
            redisReply *rr = redisCommand(pc, "PING");
            if (rr != NULL)
                freeReplyObject(rr);
        }
        rtt[r] = (double)(now_ns() - t0) / 1e6 / 20;
        for (done = 0, ch = 0; done < n; done += RL_DELAY_CHUNK, ch++)
            for (j = 0; j < RL_STOP; j++) {
                int cn = n - done < RL_DELAY_CHUNK ? n - done : RL_DELAY_CHUNK;
                double rate;
                w = (ch + j) % RL_STOP;
                if (isnan(rate = rl_pairs(&k[w], cn)))
                    goto out;
                t[w] += cn / rate;
            }
        for (w = 0; w < RL_STOP; w++)
            v[w][r] = n / t[w];
        q[RL_N3][r] = v[RL_N3][r] / v[RL_SINGLE][r];
        q[RL_N5][r] = v[RL_N5][r] / v[RL_SINGLE][r];
    }
    for (w = 0; w < RL_STOP; w++) {
        res->delay_pairs[w] = median(v[w], reps);
        if (w != RL_SINGLE) {
            res->delay_ratio[w] = median(q[w], reps);
            res->delay_hi[w] = maxd(q[w], reps);
            for (r = 0; r < reps; r++)
                q[w][r] = -q[w][r];
            res->delay_lo[w] = -maxd(q[w], reps);
        }
    }
    res->delay_rtt_ms = median(rtt, reps);
    res->delay_ok = k[RL_SINGLE].token_ok && k[RL_N3].token_ok && k[RL_N5].token_ok;
out:
    if (pc != NULL)
        redisFree(pc);
    for (w = 0; w < RL_STOP; w++)
        ulock_close(&k[w].u);
    dproxy_stop(dp);
}

/* n rdsem_wait + rdsem_post on s (value 1, never contended); pairs/s, or
 * NAN (a hard error, printed). */
static double rl_sem_pairs(rdsem_t *s, const char *label, int n)
{
    int64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        int rc = rdsem_wait(s);
        if (rc != 0 || (rc = rdsem_post(s)) != 0) {
            fail("redlock %s: semaphore: %s (%s)", label, rdlock_strerror(rc), rdt_errname(rc));
            return NAN;
        }
    }
    return n / ((double)(now_ns() - t0) / 1e9);
}

/* n lock + fencing token + unlock; pairs/s, or NAN (a hard error,
 * printed).  The token must rise with every pair. */
static double rl_pairs(rl_conf_t *k, int n)
{
    int64_t t0 = now_ns();
    uint64_t tok = 0;
    int i, rc;
    for (i = 0; i < n; i++) {
        if ((rc = rdlock_lock(&k->u.m)) != 0) {
            fail("redlock %s: rdlock_lock: %s (%s)", k->label, rdlock_strerror(rc), rdt_errname(rc));
            return NAN;
        }
        if ((rc = rdlock_fencing_token(&k->u.m, &tok)) != 0 || tok <= k->last_token) {
            if (rc != 0)
                fail("redlock %s: rdlock_fencing_token: %s", k->label, rdlock_strerror(rc));
            else
                fail("redlock %s: fencing token %llu not above the previous %llu", k->label,
                     (unsigned long long)tok, (unsigned long long)k->last_token);
            k->token_ok = 0;
            rdlock_unlock(&k->u.m);
            return NAN;
        }
        k->last_token = tok;
        if ((rc = rdlock_unlock(&k->u.m)) != 0) {
            fail("redlock %s: rdlock_unlock: %s (%s)", k->label, rdlock_strerror(rc), rdt_errname(rc));
            return NAN;
        }
    }
    return n / ((double)(now_ns() - t0) / 1e9);
}

/* EVALSHA calls on servers m[0 .. n-1]. */
static long long rl_evalsha(redisContext **c, int n)
{
    long long sum = 0, calls, usec;
    int j;
    for (j = 0; j < n; j++)
        if (evalsha_stats(c[j], &calls, &usec) == 0)
            sum += calls;
    return sum;
}

/* What a workload did in one repetition, summed over its chunks. */
typedef struct rl_acc {
    int64_t ns;        /* inside rl_pairs */
    long pairs;
    long long evalsha; /* on its running servers */
    double cl_us, srv_us;
    int failed;
} rl_acc_t;

/* n timed pairs of workload k, added to a: the time, and around it
 * (untimed) its EVALSHA calls and the CPU time of this process and of its
 * servers. */
static void rl_run(rl_conf_t *k, int n, redisContext **c, const pid_t *pids, rl_acc_t *a)
{
    cpu_snap_t c0, c1;
    long long e0 = rl_evalsha(c, k->ninfo);
    int64_t t0;
    double rate;
    cpu_snap(&c0, pids, k->nsrv);
    t0 = now_ns();
    rate = rl_pairs(k, n);
    a->ns += now_ns() - t0;
    cpu_snap(&c1, pids, k->nsrv);
    a->evalsha += rl_evalsha(c, k->ninfo) - e0;
    a->cl_us += c1.self_us - c0.self_us;
    a->srv_us += c1.server_us - c0.server_us;
    a->pairs += n;
    a->failed |= isnan(rate);
}

/* The counter check: threads on their own clients, each section a GET and
 * a SET of a counter on a plain connection. */
typedef struct rl_chk {
    pthread_t th;
    const char *ini, *name, *counter;
    const rdt_server_t *cs; /* where the counter is */
    int n, done, err;
    const char *what;
    uint64_t tok[RL_CHECK_MAX];
    long long val[RL_CHECK_MAX];
} rl_chk_t;

static void *rl_chk_main(void *arg)
{
    rl_chk_t *t = arg;
    rdlock_client_t *cl = NULL;
    rdlock_attr_t attr;
    rdlock_t m;
    redisContext *rc = rdt_connect(t->cs);
    int i, e, inited = 0;

    t->done = 0;
    t->err = 0;
    if (rc == NULL) {
        t->err = EIO, t->what = "connect to the counter's server";
        return NULL;
    }
    if ((e = rdlock_client_open(&cl, t->ini)) != 0) {
        t->err = e, t->what = "rdlock_client_open";
        goto out;
    }
    rdlock_attr_init(&attr);
    rdlock_attr_setclient(&attr, cl);
    if ((e = rdlock_init(&m, t->name, &attr)) != 0) {
        t->err = e, t->what = "rdlock_init";
        goto out;
    }
    inited = 1;
    for (i = 0; i < t->n; i++) {
        redisReply *r;
        long long v;
        if ((e = rdlock_lock(&m)) != 0) {
            t->err = e, t->what = "rdlock_lock";
            break;
        }
        if ((e = rdlock_fencing_token(&m, &t->tok[i])) != 0) {
            t->err = e, t->what = "rdlock_fencing_token";
            rdlock_unlock(&m);
            break;
        }
        r = redisCommand(rc, "GET %s", t->counter);
        v = r != NULL && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
        if (r == NULL) {
            t->err = EIO, t->what = "GET";
            rdlock_unlock(&m);
            break;
        }
        freeReplyObject(r);
        if ((r = redisCommand(rc, "SET %s %lld", t->counter, v + 1)) == NULL) {
            t->err = EIO, t->what = "SET";
            rdlock_unlock(&m);
            break;
        }
        freeReplyObject(r);
        t->val[i] = v;
        if ((e = rdlock_unlock(&m)) != 0) {
            t->err = e, t->what = "rdlock_unlock";
            break;
        }
        t->done = i + 1;
    }
out:
    if (inited) {
        rdlock_destroy(&m);
        rdlock_attr_destroy(&attr);
    }
    if (cl != NULL)
        rdlock_client_close(cl);
    redisFree(rc);
    return NULL;
}

typedef struct rl_tv {
    uint64_t tok;
    long long val;
} rl_tv_t;

static int cmp_rl_tv(const void *a, const void *b)
{
    const rl_tv_t *x = a, *y = b;
    return x->tok < y->tok ? -1 : x->tok > y->tok;
}

/* Runs the counter check for workload `label` on ini; sets *counter_ok,
 * *fencing_ok and the sections/s.  Failures are hard errors. */
static void rl_check(const rdt_server_t *cs, const char *ini, const char *label, const char *name, int n,
                     int *counter_ok, int *fencing_ok, double *secs_per_s)
{
    rl_chk_t *t = calloc(RL_CHECK_THREADS, sizeof *t);
    rl_tv_t *all = calloc((size_t)RL_CHECK_THREADS * RL_CHECK_MAX, sizeof *all);
    redisContext *c = rdt_connect(cs);
    char counter[96];
    long long total = 0, got;
    int i, j, started = 0, bad = 0;
    size_t na = 0;
    int64_t t0;

    *counter_ok = *fencing_ok = 0;
    *secs_per_s = NAN;
    if (t == NULL || all == NULL || c == NULL) {
        fail("redlock %s: counter check setup failed", label);
        goto out;
    }
    snprintf(counter, sizeof counter, "bench:rl:counter:%s", name);
    freeReplyObject(cmd(c, "SET %s 0", counter));
    t0 = now_ns();
    for (i = 0; i < RL_CHECK_THREADS; i++) {
        t[i].ini = ini;
        t[i].name = name;
        t[i].counter = counter;
        t[i].cs = cs;
        t[i].n = n;
        if (pthread_create(&t[i].th, NULL, rl_chk_main, &t[i]) != 0) {
            fail("pthread_create failed");
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++) {
        pthread_join(t[i].th, NULL);
        if (t[i].err != 0) {
            fail("redlock %s: counter check thread %d: %s: %s (%s)", label, i, t[i].what, rdlock_strerror(t[i].err),
                 rdt_errname(t[i].err));
            bad = 1;
        }
        total += t[i].done;
        for (j = 0; j < t[i].done; j++) {
            all[na].tok = t[i].tok[j];
            all[na++].val = t[i].val[j];
        }
    }
    *secs_per_s = (double)total / ((double)(now_ns() - t0) / 1e9);
    got = get_int(c, counter);
    *counter_ok = !bad && started == RL_CHECK_THREADS && got == (long long)RL_CHECK_THREADS * n;
    if (got != total)
        fail("MUTUAL EXCLUSION VIOLATED (redlock %s): counter = %lld after %lld sections", label, got, total);
    qsort(all, na, sizeof *all, cmp_rl_tv);
    *fencing_ok = na > 0;
    for (i = 0; (size_t)i < na; i++)
        if (all[i].val != i || (i > 0 && all[i].tok == all[i - 1].tok))
            *fencing_ok = 0;
    if (na > 0 && !*fencing_ok)
        fail("redlock %s: fencing tokens do not order the critical sections", label);
out:
    if (c != NULL)
        redisFree(c);
    free(t);
    free(all);
}

static int bench_redlock(int reps, rl_res_t *res)
{
    rdt_server_t m[RL_MASTERS];
    redisContext *c[RL_MASTERS] = { NULL };
    pid_t pids[RL_MASTERS];
    rl_conf_t *k = calloc(RL_NCONF, sizeof *k);
    static const char *const label[RL_NCONF] = { "single master", "N=3", "N=5", "N=5, 2 stopped" };
    static const char *const lname[RL_NCONF] = { "bench-rl-single", "bench-rl-3", "bench-rl-5", "bench-rl-5-stopped" };
    static double v[RL_NCONF][64], ev[RL_NCONF][64], cl[RL_NCONF][64], sv[RL_NCONF][64], q[RL_NCONF][64],
        ce[RL_NCONF][64];
    double ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
    double first[64];
    char ini[RL_NCONF][400], text[1024];
    const char *p;
    int up = 0, i, j, r, w, n = quick ? 1000 : 3000, paused = 0;
    double t0 = now_s();
    int64_t tf;

    memset(res, 0, sizeof *res);
    for (i = 0; i < RL_NCONF; i++)
        res->pairs[i] = res->ratio[i] = res->ratio_lo[i] = res->ratio_hi[i] = res->evalsha_per_pair[i] =
            res->cpu_cl[i] = res->cpu_srv[i] = res->ceiling[i] = res->check_secs_per_s[i] = NAN;
    for (i = 0; i < RL_STOP; i++)
        res->sem_pairs[i] = res->sem_ratio[i] = res->delay_pairs[i] = res->delay_ratio[i] = res->delay_lo[i] =
            res->delay_hi[i] = NAN;
    res->delay_rtt_ms = NAN;
    res->stop_first_ms = NAN;
    res->n_pairs = n;
    res->check_sections = quick ? 100 : 250;
    if (k == NULL || reps > 64) {
        fail("redlock: setup failed");
        goto out;
    }
    for (up = 0; up < RL_MASTERS; up++) {
        if (rdt_server_start(&m[up], NULL, NULL) != 0) {
            fail("redlock: cannot start redis-server %d of %d", up + 1, RL_MASTERS);
            goto out;
        }
        pids[up] = m[up].pid;
        if ((c[up] = rdt_connect(&m[up])) == NULL)
            goto out;
    }
    res->start_s = now_s() - t0;
    /* Single master: the first of them, as [redis] host and port. */
    if ((p = rdt_write_ini(&m[0], 0, "[lock]\nlease_ms = 30000\n")) == NULL)
        goto out;
    snprintf(ini[RL_SINGLE], sizeof ini[RL_SINGLE], "%s", p);
    /* The quorums: no [redis] host/port (they conflict with [redlock]).
     * Fresh masters have no vote for restart_delay_ms (default: the lease),
     * so it is 1 ms here. */
    for (w = RL_N3; w <= RL_N5; w++) {
        int nm = w == RL_N3 ? 3 : 5, off = snprintf(text, sizeof text, "[redlock]\nmasters = ");
        for (j = 0; j < nm; j++)
            off += snprintf(text + off, sizeof text - (size_t)off, "%s127.0.0.1:%d", j ? ", " : "", m[j].port);
        snprintf(text + off, sizeof text - (size_t)off, "\nrestart_delay_ms = 1\n[lock]\nlease_ms = 30000\n");
        if ((p = rdt_write_file(&m[0], w == RL_N3 ? "bench-redlock-3.ini" : "bench-redlock-5.ini", text)) == NULL)
            goto out;
        snprintf(ini[w], sizeof ini[w], "%s", p);
    }
    snprintf(ini[RL_STOP], sizeof ini[RL_STOP], "%s", ini[RL_N5]);
    /* INFO's uptime is in whole seconds: a master of uptime 0 would still
     * be "1 ms" short of its vote (and the library says so).  The last
     * one started start_s after t0. */
    while (now_s() - t0 < res->start_s + 1.05)
        sleep_us(10000);
    for (w = 0; w < RL_NCONF; w++) {
        k[w].label = label[w];
        k[w].nsrv = w == RL_SINGLE ? 1 : w == RL_N3 ? 3 : 5;
        k[w].ninfo = w == RL_STOP ? RL_MASTERS - RL_STOPPED : k[w].nsrv;
        k[w].token_ok = 1;
        if (ulock_open_ini(&k[w].u, ini[w], lname[w]) != 0)
            goto out;
        /* warm-up: connections, script caches, clocks */
        if (isnan(rl_pairs(&k[w], 300)))
            goto out;
    }
    for (r = 0; r < reps; r++) {
        rl_acc_t a[RL_NCONF];
        int done, ch;
        memset(a, 0, sizeof a);
        /* Single, N=3 and N=5 in chunks of RL_CHUNK pairs, in an order
         * that rotates from chunk to chunk: on the shared machines the
         * rates can change several-fold from one second to the next, and
         * all three must see the same moments. */
        for (done = 0, ch = 0; done < n; done += RL_CHUNK, ch++)
            for (j = 0; j < 3; j++) {
                w = (ch + j) % 3;
                rl_run(&k[w], n - done < RL_CHUNK ? n - done : RL_CHUNK, c, pids, &a[w]);
            }
        /* Diagnostic: 2 of the 5 stopped, on a client of its own (the
         * N = 5 client never sees them stopped), after this repetition's
         * runs; compared with its N = 5 figure. */
        phase = "redlock, 2 masters stopped";
        for (j = RL_MASTERS - RL_STOPPED; j < RL_MASTERS; j++)
            rdt_server_pause(&m[j]);
        paused = 1;
        tf = now_ns();
        if (isnan(rl_pairs(&k[RL_STOP], 1)))
            goto out;
        first[r] = (double)(now_ns() - tf) / 1e6;
        if (isnan(rl_pairs(&k[RL_STOP], RL_WARM_STOPPED)))
            goto out;
        rl_run(&k[RL_STOP], n, c, pids, &a[RL_STOP]);
        for (j = RL_MASTERS - RL_STOPPED; j < RL_MASTERS; j++)
            rdt_server_resume(&m[j]);
        paused = 0;
        phase = "redlock";
        for (w = 0; w < RL_NCONF; w++) {
            v[w][r] = a[w].failed || a[w].ns <= 0 ? NAN : a[w].pairs / ((double)a[w].ns / 1e9);
            ev[w][r] = (double)a[w].evalsha / a[w].pairs;
            cl[w][r] = a[w].cl_us / a[w].pairs;
            sv[w][r] = a[w].srv_us / a[w].pairs;
        }
        q[RL_N3][r] = v[RL_N3][r] / v[RL_SINGLE][r];
        q[RL_N5][r] = v[RL_N5][r] / v[RL_SINGLE][r];
        q[RL_STOP][r] = v[RL_STOP][r] / v[RL_N5][r];
    }
    for (w = 0; w < RL_NCONF; w++) {
        res->pairs[w] = median(v[w], reps);
        res->evalsha_per_pair[w] = median(ev[w], reps);
        res->cpu_cl[w] = median(cl[w], reps);
        res->cpu_srv[w] = median(sv[w], reps);
        for (r = 0; r < reps; r++)
            ce[w][r] = ncpu * 1e6 / (cl[w][r] + sv[w][r]);
        res->ceiling[w] = median(ce[w], reps);
        if (w != RL_SINGLE) {
            res->ratio[w] = median(q[w], reps);
            res->ratio_hi[w] = maxd(q[w], reps);
            for (r = 0; r < reps; r++)
                q[w][r] = -q[w][r];
            res->ratio_lo[w] = -maxd(q[w], reps);
        }
    }
    res->stop_first_ms = median(first, reps);

    /* Diagnostic: semaphore wait+post on the same three clients.  On a
     * quorum each step is replicated (src/prim_quorum.h: begin on every
     * master, the script on one, the state written back: three round
     * trips to one's one, and 2N + 3 scripts to one's one), so a third of
     * the single-master rate is the most it can reach where round trips
     * bound it, and less where the servers' CPU does; no target. */
    phase = "redlock semaphore";
    {
        rdsem_t sem[RL_STOP];
        rdsem_attr_t sa;
        static double sp[RL_STOP][64], sq[RL_STOP][64];
        int ns = quick ? 300 : 1000, made = 0;
        res->sem_ok = 1;
        for (w = 0; w < RL_STOP && res->sem_ok; w++) {
            int rc;
            rdsem_attr_init(&sa);
            rdsem_attr_setclient(&sa, k[w].u.client);
            rc = rdsem_init(&sem[w], w == RL_SINGLE ? "bench-rl-sem-1" : w == RL_N3 ? "bench-rl-sem-3" : "bench-rl-sem-5",
                            1, &sa);
            rdsem_attr_destroy(&sa);
            if (rc != 0) {
                fail("redlock %s: rdsem_init: %s", label[w], rdlock_strerror(rc));
                res->sem_ok = 0;
            } else {
                made++;
                res->sem_ok = !isnan(rl_sem_pairs(&sem[w], label[w], 20)); /* warm-up */
            }
        }
        for (r = 0; r < reps && res->sem_ok; r++) {
            double sum_n[RL_STOP] = { 0 }, sum_s[RL_STOP] = { 0 };
            for (int done = 0, ch = 0; done < ns && res->sem_ok; done += RL_SEM_CHUNK, ch++)
                for (j = 0; j < RL_STOP; j++) {
                    int cn = ns - done < RL_SEM_CHUNK ? ns - done : RL_SEM_CHUNK;
                    double rate;
                    w = (ch + j) % RL_STOP;
                    if (isnan(rate = rl_sem_pairs(&sem[w], label[w], cn))) {
                        res->sem_ok = 0;
                        break;
                    }
                    sum_n[w] += cn;
                    sum_s[w] += cn / rate;
                }
            for (w = 0; w < RL_STOP; w++)
                sp[w][r] = sum_n[w] / sum_s[w];
            sq[RL_N3][r] = sp[RL_N3][r] / sp[RL_SINGLE][r];
            sq[RL_N5][r] = sp[RL_N5][r] / sp[RL_SINGLE][r];
        }
        if (res->sem_ok)
            for (w = 0; w < RL_STOP; w++) {
                res->sem_pairs[w] = median(sp[w], reps);
                res->sem_ratio[w] = w == RL_SINGLE ? 1.0 : median(sq[w], reps);
            }
        for (w = 0; w < made; w++)
            rdsem_destroy(&sem[w]);
    }

    phase = "redlock, delayed";
    rl_delayed(res, m, reps, label);

    /* The counter checks, untimed: N = 3, N = 5, N = 5 with 2 stopped. */
    phase = "redlock counter check";
    rl_check(&m[0], ini[RL_N3], "N=3", "bench-rl-check-3", res->check_sections, &res->check_counter_ok[RL_N3],
             &res->check_fencing_ok[RL_N3], &res->check_secs_per_s[RL_N3]);
    rl_check(&m[0], ini[RL_N5], "N=5", "bench-rl-check-5", res->check_sections, &res->check_counter_ok[RL_N5],
             &res->check_fencing_ok[RL_N5], &res->check_secs_per_s[RL_N5]);
    phase = "redlock counter check, 2 masters stopped";
    for (j = RL_MASTERS - RL_STOPPED; j < RL_MASTERS; j++)
        rdt_server_pause(&m[j]);
    paused = 1;
    rl_check(&m[0], ini[RL_STOP], "N=5, 2 stopped", "bench-rl-check-5-stopped", res->check_sections,
             &res->check_counter_ok[RL_STOP], &res->check_fencing_ok[RL_STOP], &res->check_secs_per_s[RL_STOP]);
    res->ok = res->tokens_ok = 1;
    for (w = 0; w < RL_NCONF; w++)
        res->tokens_ok = res->tokens_ok && k[w].token_ok;
    res->ok = res->sem_ok && res->delay_ok;
    for (w = 0; w < RL_NCONF; w++)
        res->ok = res->ok && k[w].token_ok && !isnan(res->pairs[w]) &&
                  (w == RL_SINGLE || (res->check_counter_ok[w] && res->check_fencing_ok[w]));
out:
    if (paused)
        for (j = RL_MASTERS - RL_STOPPED; j < RL_MASTERS && j < up; j++)
            rdt_server_resume(&m[j]);
    phase = "redlock";
    if (k != NULL)
        for (w = 0; w < RL_NCONF; w++)
            ulock_close(&k[w].u);
    free(k);
    for (j = 0; j < up; j++) {
        if (c[j] != NULL)
            redisFree(c[j]);
        rdt_server_stop(&m[j]);
    }
    res->elapsed_s = now_s() - t0;
    return res->ok ? 0 : -1;
}

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
        static const char *const rn[RL_NCONF] = { "single", "3", "5", "5_stopped2" };
        phase = "redlock";
        bench_redlock(reps, &rlres);
        out("\n8. redlock: uncontended lock+unlock, one thread, on %d fresh redis-servers (started in %.1f s);\n"
            "   N=3 uses the first three; single master = the first, as [redis]; %ld pairs of each per\n"
            "   repetition, the three interleaved in chunks of %d (rotating order); ratios: medians of\n"
            "   per-repetition ratios\n",
            RL_MASTERS, rlres.start_s, rlres.n_pairs, RL_CHUNK);
        out("   %-22s %9s  %-30s %-11s %7s %13s %8s\n", "", "pairs/s", "ratio", "(range)", "rt/pair", "CPU us/pair",
            "ceiling");
        for (k = 0; k < RL_NCONF; k++) {
            char rb[64] = "", rg[32] = "";
            if (k == RL_N3 || k == RL_N5)
                snprintf(rb, sizeof rb, "%6.3f to single (diagnostic)", rlres.ratio[k]);
            else if (k == RL_STOP)
                snprintf(rb, sizeof rb, "%6.3f to N=5 (diagnostic)", rlres.ratio[k]);
            if (k != RL_SINGLE)
                snprintf(rg, sizeof rg, "%.2f-%.2f", rlres.ratio_lo[k], rlres.ratio_hi[k]);
            out("   %-22s %9.0f  %-30s %-11s %7.2f %5.0f + %-5.0f %8.0f\n", k == RL_SINGLE ? "single master" :
                k == RL_N3 ? "redlock N=3" : k == RL_N5 ? "redlock N=5" : "N=5, 2 SIGSTOPped", rlres.pairs[k], rb, rg,
                rlres.evalsha_per_pair[k], rlres.cpu_cl[k], rlres.cpu_srv[k], rlres.ceiling[k]);
        }
        out("   loopback: one master's pair is round-trip-bound, a quorum's CPU-bound on a machine with\n"
            "   fewer free cores than masters + 1 (every master runs every script): see the ceiling\n");
        out("   behind the delay proxy (bench/delayproxy.c: +%d us each way, PING round trip %.2f ms), where\n"
            "   round trips are the cost, as between hosts; %d pairs of each per repetition, interleaved in chunks of %d:\n",
            RL_DELAY_US, rlres.delay_rtt_ms, quick ? 100 : 200, RL_DELAY_CHUNK);
        for (k = 0; k < RL_STOP; k++) {
            int ok = rlres.delay_ratio[k] >= RL_TARGET;
            if (k == RL_SINGLE) {
                /* Issue 15's uncontended ratio where round trips, not the
                 * scripts' server time, are the cost (diagnostic: the PING
                 * round trips are not interleaved with the pairs). */
                out("   %-22s %9.0f  %6.3f to PING floor/2 (the uncontended mutex pair at this round trip)\n",
                    "single master", rlres.delay_pairs[k], rlres.delay_pairs[k] * 2 * rlres.delay_rtt_ms / 1000);
                continue;
            }
            out("   %-22s %9.0f  %6.3f to single (>= %.2f) %s %.2f-%.2f\n", k == RL_N3 ? "redlock N=3" : "redlock N=5",
                rlres.delay_pairs[k], rlres.delay_ratio[k], RL_TARGET, mark(ok), rlres.delay_lo[k], rlres.delay_hi[k]);
            tally.targets++;
            tally.met += ok;
        }
        out("   (rt/pair: EVALSHA calls per pair summed over the running servers; CPU us/pair: this\n"
            "    process + the servers, from getrusage and /proc; ceiling: the pairs/s that %.0f CPUs allow\n"
            "    at that CPU time per pair, i.e. CPUs / (CPU us per pair); medians)\n",
            (double)sysconf(_SC_NPROCESSORS_ONLN));
        out("   2 stopped: the first pair after SIGSTOP took %.1f ms (median); those masters are then\n"
            "   skipped for a backoff (100 ms doubling to 2 s); step 8 took %.1f s\n",
            rlres.stop_first_ms, rlres.elapsed_s);
        out("   checks: fencing tokens rise with every pair %s; counter under the lock, %d threads x %d\n"
            "   sections (own clients): N=3 %s (%.0f sect/s), N=5 %s (%.0f sect/s), N=5 with 2 stopped %s (%.0f sect/s)\n",
            rlres.tokens_ok ? "ok" : "WRONG", RL_CHECK_THREADS, rlres.check_sections,
            rlres.check_counter_ok[RL_N3] && rlres.check_fencing_ok[RL_N3] ? "ok" : "WRONG",
            rlres.check_secs_per_s[RL_N3],
            rlres.check_counter_ok[RL_N5] && rlres.check_fencing_ok[RL_N5] ? "ok" : "WRONG",
            rlres.check_secs_per_s[RL_N5],
            rlres.check_counter_ok[RL_STOP] && rlres.check_fencing_ok[RL_STOP] ? "ok" : "WRONG",
            rlres.check_secs_per_s[RL_STOP]);
        json_num("redlock_start_s", rlres.start_s);
        json_num("redlock_pairs_per_rep", (double)rlres.n_pairs);
        for (k = 0; k < RL_NCONF; k++) {
#define J(suffix, val)                                              \
    do {                                                            \
        snprintf(key, sizeof key, "redlock_%s_%s", rn[k], suffix);  \
        json_num(key, val);                                         \
    } while (0)
            J("pairs_per_s", rnd(rlres.pairs[k]));
            if (k != RL_SINGLE) {
                J("ratio", rlres.ratio[k]);
                J("ratio_min", rlres.ratio_lo[k]);
                J("ratio_max", rlres.ratio_hi[k]);
            }
            J("evalsha_per_pair", rlres.evalsha_per_pair[k]);
            J("cpu_us_per_pair_client", rlres.cpu_cl[k]);
            J("cpu_us_per_pair_servers", rlres.cpu_srv[k]);
            J("cpu_ceiling_pairs_per_s", rnd(rlres.ceiling[k]));
            if (k != RL_SINGLE) {
                J("check_sections_per_s", rnd(rlres.check_secs_per_s[k]));
                snprintf(key, sizeof key, "redlock_%s_check_counter_ok", rn[k]);
                json_bool(key, rlres.check_counter_ok[k]);
                snprintf(key, sizeof key, "redlock_%s_check_fencing_order_ok", rn[k]);
                json_bool(key, rlres.check_fencing_ok[k]);
            }
#undef J
        }
        out("   semaphore wait+post (plain, value 1; diagnostic: a replicated step is 3 round trips):\n"
            "   single %.0f pairs/s, N=3 %.0f (%.2f of single), N=5 %.0f (%.2f)\n",
            rlres.sem_pairs[RL_SINGLE], rlres.sem_pairs[RL_N3], rlres.sem_ratio[RL_N3], rlres.sem_pairs[RL_N5],
            rlres.sem_ratio[RL_N5]);
        json_num("redlock_delay_us_each_way", RL_DELAY_US);
        json_num("redlock_delay_rtt_ms", rlres.delay_rtt_ms);
        json_num("redlock_delay_single_pairs_per_s", rnd(rlres.delay_pairs[RL_SINGLE]));
        json_num("redlock_delay_single_ratio_to_floor", rlres.delay_pairs[RL_SINGLE] * 2 * rlres.delay_rtt_ms / 1000);
        json_num("redlock_delay_3_pairs_per_s", rnd(rlres.delay_pairs[RL_N3]));
        json_num("redlock_delay_5_pairs_per_s", rnd(rlres.delay_pairs[RL_N5]));
        json_num("redlock_delay_3_ratio", rlres.delay_ratio[RL_N3]);
        json_num("redlock_delay_5_ratio", rlres.delay_ratio[RL_N5]);
        json_num("redlock_delay_3_ratio_min", rlres.delay_lo[RL_N3]);
        json_num("redlock_delay_5_ratio_min", rlres.delay_lo[RL_N5]);
        json_num("redlock_delay_3_ratio_max", rlres.delay_hi[RL_N3]);
        json_num("redlock_delay_5_ratio_max", rlres.delay_hi[RL_N5]);
        json_num("redlock_sem_single_pairs_per_s", rnd(rlres.sem_pairs[RL_SINGLE]));
        json_num("redlock_sem_3_pairs_per_s", rnd(rlres.sem_pairs[RL_N3]));
        json_num("redlock_sem_5_pairs_per_s", rnd(rlres.sem_pairs[RL_N5]));
        json_num("redlock_sem_3_ratio", rlres.sem_ratio[RL_N3]);
        json_num("redlock_sem_5_ratio", rlres.sem_ratio[RL_N5]);
        json_bool("redlock_sem_ok", rlres.sem_ok);
        json_num("redlock_5_stopped2_first_pair_ms", rlres.stop_first_ms);
        json_bool("redlock_fencing_tokens_rise", rlres.tokens_ok);
        json_num("redlock_elapsed_s", rnd(rlres.elapsed_s * 10) / 10);
        json_num("redlock_check_threads", RL_CHECK_THREADS);
        json_num("redlock_check_sections_per_thread", rlres.check_sections);
        json_bool("redlock_ok", rlres.ok);
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
