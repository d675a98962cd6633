/* step_redlock.c - step 8, Redlock.
 *
 * Uncontended lock+unlock pairs/s on a Redlock quorum of 3 and of 5
 * masters (the first three of five fresh redis-servers for N = 3), as a
 * ratio to the same pairs on one of those servers alone ([redis]), the
 * three interleaved in chunks of RL_CHUNK pairs in every repetition.  Each
 * quorum step asks its masters at once (src/topology/quorum.c), so a pair should
 * cost about what it costs on one server: target >= RL_TARGET.
 * Diagnostic: the same on 5 masters with the last RL_STOPPED of them
 * SIGSTOPped (a client of its own, whose first calls mark them down), as
 * a ratio to the 5-master figure of the same repetition.  Checks, as in
 * steps 3 and 6: every pair's fencing token is above the previous one of
 * its name, and, untimed, RL_CHECK_THREADS threads on their own clients
 * increment a counter under the lock (GET + SET on a plain connection)
 * with the fencing tokens ordering the sections. */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delayproxy.h"

#define RL_MASTERS 5
#define RL_STOPPED 2         /* masters SIGSTOPped for the diagnostic: the last ones */
#define RL_TARGET 0.80       /* N = 3 and N = 5 pairs/s, x the single-master pairs/s */
#define RL_CHECK_THREADS 2   /* the counter check */
#define RL_CHECK_MAX 256     /* sections per thread, at most */
#define RL_WARM_STOPPED 50   /* pairs after stopping the masters, before timing */
#define RL_CHUNK 100         /* single, N=3 and N=5 alternate in chunks of this many pairs */

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

#define RL_SEM_CHUNK 50 /* semaphore pairs per chunk */

static double rl_pairs(rl_conf_t *k, int n);
#define RL_DELAY_US 500 /* the delay proxy: each direction, so +1 ms per round trip */
#define RL_DELAY_CHUNK 25

/* A quorum's ini file, m0's file named file: [redlock] masters on
 * 127.0.0.1 at ports[0 .. nm-1], no [redis] host/port (they conflict with
 * [redlock]).  Fresh masters have no vote for restart_delay_ms (default:
 * the lease), so it is 1 ms here.  Its path into ini; 0 or -1. */
static int rl_quorum_ini(const rdt_server_t *m0, const int *ports, int nm, const char *file, char *ini, size_t isz)
{
    char text[1024];
    const char *p;
    int j, off = snprintf(text, sizeof text, "[redlock]\nmasters = ");

    for (j = 0; j < nm; j++)
        off += snprintf(text + off, sizeof text - (size_t)off, "%s127.0.0.1:%d", j ? ", " : "", ports[j]);
    snprintf(text + off, sizeof text - (size_t)off, "\nrestart_delay_ms = 1\n[lock]\nlease_ms = 30000\n");
    if ((p = rdt_write_file(m0, file, text)) == NULL)
        return -1;
    snprintf(ini, isz, "%s", p);
    return 0;
}

/* The same three workloads with every server behind the delay proxy
 * (bench/delayproxy.h): a round trip of about a LAN's, so that the round
 * trips, not the CPUs, are what a pair costs, and a quorum that asks its
 * masters in parallel shows it.  The target RL_TARGET is judged here. */
static void rl_delayed(rl_res_t *res, const rdt_server_t *m, int reps, const char *const *label)
{
    dproxy_t *dp = NULL;
    int up[RL_MASTERS], pp[RL_MASTERS], w, j, r, n = quick ? 100 : 200;
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
    for (j = 0; j < RL_MASTERS; j++)
        pp[j] = dproxy_port(dp, j);
    for (w = RL_N3; w <= RL_N5; w++)
        if (rl_quorum_ini(&m[0], pp, w == RL_N3 ? 3 : 5, w == RL_N3 ? "bench-rl-delay-3.ini" : "bench-rl-delay-5.ini",
                          ini[w], sizeof ini[w]) != 0)
            goto out;
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
static const char *const rl_label[RL_NCONF] = { "single master", "N=3", "N=5", "N=5, 2 stopped" };

/* The step's servers, its four workloads and their ini files. */
typedef struct rl_ctx {
    rdt_server_t m[RL_MASTERS];
    redisContext *c[RL_MASTERS]; /* INFO connections */
    pid_t pids[RL_MASTERS];
    int up;                      /* servers started (and to stop) */
    int paused;                  /* the last RL_STOPPED are SIGSTOPped */
    rl_conf_t *k;                /* [RL_NCONF] */
    char ini[RL_NCONF][400];
    int n;                       /* pairs per workload and repetition */
    double t0;                   /* the step's start */
} rl_ctx_t;

/* The figures of each repetition [workload][rep]; the results are their
 * medians. */
typedef struct rl_reps {
    double v[RL_NCONF][64], ev[RL_NCONF][64], cl[RL_NCONF][64], sv[RL_NCONF][64], q[RL_NCONF][64],
        ce[RL_NCONF][64];
    double first[64]; /* the first pair after stopping the masters, ms */
} rl_reps_t;

static void rl_res_init(rl_res_t *res, int n)
{
    int i;

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
}

/* SIGSTOP (stop) or SIGCONT the last RL_STOPPED masters. */
static void rl_pause(rl_ctx_t *x, int stop)
{
    int j;

    for (j = RL_MASTERS - RL_STOPPED; j < RL_MASTERS; j++)
        if (stop)
            rdt_server_pause(&x->m[j]);
        else
            rdt_server_resume(&x->m[j]);
    x->paused = stop;
}

/* The five servers, an INFO connection to each, and the four workloads'
 * ini files: single master = the first, as [redis] host and port; the
 * quorums of the first three and of all five; N=5 with 2 stopped on the
 * N=5 file.  0 or -1. */
static int rl_start(rl_ctx_t *x, rl_res_t *res)
{
    const char *p;
    int ports[RL_MASTERS], w;

    for (x->up = 0; x->up < RL_MASTERS; x->up++) {
        if (rdt_server_start(&x->m[x->up], NULL, NULL) != 0) {
            fail("redlock: cannot start redis-server %d of %d", x->up + 1, RL_MASTERS);
            return -1;
        }
        x->pids[x->up] = x->m[x->up].pid;
        ports[x->up] = x->m[x->up].port;
        if ((x->c[x->up] = rdt_connect(&x->m[x->up])) == NULL)
            return -1;
    }
    res->start_s = now_s() - x->t0;
    if ((p = rdt_write_ini(&x->m[0], 0, "[lock]\nlease_ms = 30000\n")) == NULL)
        return -1;
    snprintf(x->ini[RL_SINGLE], sizeof x->ini[RL_SINGLE], "%s", p);
    for (w = RL_N3; w <= RL_N5; w++)
        if (rl_quorum_ini(&x->m[0], ports, w == RL_N3 ? 3 : 5, w == RL_N3 ? "bench-redlock-3.ini" : "bench-redlock-5.ini",
                          x->ini[w], sizeof x->ini[w]) != 0)
            return -1;
    snprintf(x->ini[RL_STOP], sizeof x->ini[RL_STOP], "%s", x->ini[RL_N5]);
    return 0;
}

/* The four workloads' locks, each warmed up (connections, script caches,
 * clocks).  0 or -1. */
static int rl_open(rl_ctx_t *x, rl_res_t *res)
{
    static const char *const lname[RL_NCONF] = { "bench-rl-single", "bench-rl-3", "bench-rl-5", "bench-rl-5-stopped" };
    rl_conf_t *k = x->k;
    int w;

    /* INFO's uptime is in whole seconds: a master of uptime 0 would still
     * be "1 ms" short of its vote (and the library says so).  The last
     * one started start_s after t0. */
    while (now_s() - x->t0 < res->start_s + 1.05)
        sleep_us(10000);
    for (w = 0; w < RL_NCONF; w++) {
        k[w].label = rl_label[w];
        k[w].nsrv = w == RL_SINGLE ? 1 : w == RL_N3 ? 3 : 5;
        k[w].ninfo = w == RL_STOP ? RL_MASTERS - RL_STOPPED : k[w].nsrv;
        k[w].token_ok = 1;
        if (ulock_open_ini(&k[w].u, x->ini[w], lname[w]) != 0)
            return -1;
        if (isnan(rl_pairs(&k[w], 300)))
            return -1;
    }
    return 0;
}

/* Repetition r.  0, or -1 if a pair failed (printed; the masters may be
 * left stopped: x->paused). */
static int rl_rep(rl_ctx_t *x, int r, rl_reps_t *v)
{
    rl_conf_t *k = x->k;
    rl_acc_t a[RL_NCONF];
    int done, ch, j, w, n = x->n;
    int64_t tf;

    memset(a, 0, sizeof a);
    /* Single, N=3 and N=5 in chunks of RL_CHUNK pairs, in an order
     * that rotates from chunk to chunk: on the shared machines the
     * rates can change several-fold from one second to the next, and
     * all three must see the same moments. */
    for (done = 0, ch = 0; done < n; done += RL_CHUNK, ch++)
        for (j = 0; j < 3; j++) {
            w = (ch + j) % 3;
            rl_run(&k[w], n - done < RL_CHUNK ? n - done : RL_CHUNK, x->c, x->pids, &a[w]);
        }
    /* Diagnostic: 2 of the 5 stopped, on a client of its own (the
     * N = 5 client never sees them stopped), after this repetition's
     * runs; compared with its N = 5 figure. */
    phase = "redlock, 2 masters stopped";
    rl_pause(x, 1);
    tf = now_ns();
    if (isnan(rl_pairs(&k[RL_STOP], 1)))
        return -1;
    v->first[r] = (double)(now_ns() - tf) / 1e6;
    if (isnan(rl_pairs(&k[RL_STOP], RL_WARM_STOPPED)))
        return -1;
    rl_run(&k[RL_STOP], n, x->c, x->pids, &a[RL_STOP]);
    rl_pause(x, 0);
    phase = "redlock";
    for (w = 0; w < RL_NCONF; w++) {
        v->v[w][r] = a[w].failed || a[w].ns <= 0 ? NAN : a[w].pairs / ((double)a[w].ns / 1e9);
        v->ev[w][r] = (double)a[w].evalsha / a[w].pairs;
        v->cl[w][r] = a[w].cl_us / a[w].pairs;
        v->sv[w][r] = a[w].srv_us / a[w].pairs;
    }
    v->q[RL_N3][r] = v->v[RL_N3][r] / v->v[RL_SINGLE][r];
    v->q[RL_N5][r] = v->v[RL_N5][r] / v->v[RL_SINGLE][r];
    v->q[RL_STOP][r] = v->v[RL_STOP][r] / v->v[RL_N5][r];
    return 0;
}

static void rl_medians(rl_reps_t *v, int reps, rl_res_t *res)
{
    double ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
    int w, r;

    for (w = 0; w < RL_NCONF; w++) {
        res->pairs[w] = median(v->v[w], reps);
        res->evalsha_per_pair[w] = median(v->ev[w], reps);
        res->cpu_cl[w] = median(v->cl[w], reps);
        res->cpu_srv[w] = median(v->sv[w], reps);
        for (r = 0; r < reps; r++)
            v->ce[w][r] = ncpu * 1e6 / (v->cl[w][r] + v->sv[w][r]);
        res->ceiling[w] = median(v->ce[w], reps);
        if (w != RL_SINGLE) {
            res->ratio[w] = median(v->q[w], reps);
            res->ratio_hi[w] = maxd(v->q[w], reps);
            for (r = 0; r < reps; r++)
                v->q[w][r] = -v->q[w][r];
            res->ratio_lo[w] = -maxd(v->q[w], reps);
        }
    }
    res->stop_first_ms = median(v->first, reps);
}

/* Diagnostic: semaphore wait+post on the same three clients.  On a
 * quorum each step is replicated (src/exec/prim_quorum.h: begin on every
 * master, the script on one, the state written back: three round
 * trips to one's one, and 2N + 3 scripts to one's one), so a third of
 * the single-master rate is the most it can reach where round trips
 * bound it, and less where the servers' CPU does; no target. */
static void rl_sem(const rl_conf_t *k, int reps, rl_res_t *res)
{
    rdsem_t sem[RL_STOP];
    rdsem_attr_t sa;
    static double sp[RL_STOP][64], sq[RL_STOP][64];
    int ns = quick ? 300 : 1000, made = 0, w, j, r;

    res->sem_ok = 1;
    for (w = 0; w < RL_STOP && res->sem_ok; w++) {
        int rc;
        rdsem_attr_init(&sa);
        rdsem_attr_setclient(&sa, k[w].u.client);
        rc = rdsem_init(&sem[w], w == RL_SINGLE ? "bench-rl-sem-1" : w == RL_N3 ? "bench-rl-sem-3" : "bench-rl-sem-5",
                        1, &sa);
        rdsem_attr_destroy(&sa);
        if (rc != 0) {
            fail("redlock %s: rdsem_init: %s", rl_label[w], rdlock_strerror(rc));
            res->sem_ok = 0;
        } else {
            made++;
            res->sem_ok = !isnan(rl_sem_pairs(&sem[w], rl_label[w], 20)); /* warm-up */
        }
    }
    for (r = 0; r < reps && res->sem_ok; r++) {
        double sum_n[RL_STOP] = { 0 }, sum_s[RL_STOP] = { 0 };
        for (int done = 0, ch = 0; done < ns && res->sem_ok; done += RL_SEM_CHUNK, ch++)
            for (j = 0; j < RL_STOP; j++) {
                int cn = ns - done < RL_SEM_CHUNK ? ns - done : RL_SEM_CHUNK;
                double rate;
                w = (ch + j) % RL_STOP;
                if (isnan(rate = rl_sem_pairs(&sem[w], rl_label[w], cn))) {
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

/* The counter checks, untimed: N = 3, N = 5, N = 5 with 2 stopped (left
 * stopped: x->paused). */
static void rl_checks(rl_ctx_t *x, rl_res_t *res)
{
    phase = "redlock counter check";
    rl_check(&x->m[0], x->ini[RL_N3], "N=3", "bench-rl-check-3", res->check_sections, &res->check_counter_ok[RL_N3],
             &res->check_fencing_ok[RL_N3], &res->check_secs_per_s[RL_N3]);
    rl_check(&x->m[0], x->ini[RL_N5], "N=5", "bench-rl-check-5", res->check_sections, &res->check_counter_ok[RL_N5],
             &res->check_fencing_ok[RL_N5], &res->check_secs_per_s[RL_N5]);
    phase = "redlock counter check, 2 masters stopped";
    rl_pause(x, 1);
    rl_check(&x->m[0], x->ini[RL_STOP], "N=5, 2 stopped", "bench-rl-check-5-stopped", res->check_sections,
             &res->check_counter_ok[RL_STOP], &res->check_fencing_ok[RL_STOP], &res->check_secs_per_s[RL_STOP]);
}

/* Resume what is stopped, close the workloads, stop the servers. */
static void rl_close(rl_ctx_t *x)
{
    int j, w;

    if (x->paused)
        for (j = RL_MASTERS - RL_STOPPED; j < RL_MASTERS && j < x->up; j++)
            rdt_server_resume(&x->m[j]);
    phase = "redlock";
    if (x->k != NULL)
        for (w = 0; w < RL_NCONF; w++)
            ulock_close(&x->k[w].u);
    free(x->k);
    for (j = 0; j < x->up; j++) {
        if (x->c[j] != NULL)
            redisFree(x->c[j]);
        rdt_server_stop(&x->m[j]);
    }
}

int bench_redlock(int reps, rl_res_t *res)
{
    static rl_ctx_t x;
    static rl_reps_t v;
    int r, w;

    memset(&x, 0, sizeof x);
    x.k = calloc(RL_NCONF, sizeof *x.k);
    x.n = quick ? 1000 : 3000;
    x.t0 = now_s();
    rl_res_init(res, x.n);
    if (x.k == NULL || reps > 64) {
        fail("redlock: setup failed");
        goto out;
    }
    if (rl_start(&x, res) != 0 || rl_open(&x, res) != 0)
        goto out;
    for (r = 0; r < reps; r++)
        if (rl_rep(&x, r, &v) != 0)
            goto out;
    rl_medians(&v, reps, res);
    phase = "redlock semaphore";
    rl_sem(x.k, reps, res);
    phase = "redlock, delayed";
    rl_delayed(res, x.m, reps, rl_label);
    rl_checks(&x, res);
    res->ok = res->tokens_ok = 1;
    for (w = 0; w < RL_NCONF; w++)
        res->tokens_ok = res->tokens_ok && x.k[w].token_ok;
    res->ok = res->sem_ok && res->delay_ok;
    for (w = 0; w < RL_NCONF; w++)
        res->ok = res->ok && x.k[w].token_ok && !isnan(res->pairs[w]) &&
                  (w == RL_SINGLE || (res->check_counter_ok[w] && res->check_fencing_ok[w]));
out:
    rl_close(&x);
    res->elapsed_s = now_s() - x.t0;
    return res->ok ? 0 : -1;
}

/* Step 8's main table: the pairs of the four workloads on loopback. */
static void rl_report_table(const rl_res_t *r)
{
    int k;

    out("\n8. redlock: uncontended lock+unlock, one thread, on %d fresh redis-servers (started in %.1f s);\n"
        "   N=3 uses the first three; single master = the first, as [redis]; %ld pairs of each per\n"
        "   repetition, the three interleaved in chunks of %d (rotating order); ratios: medians of\n"
        "   per-repetition ratios\n",
        RL_MASTERS, r->start_s, r->n_pairs, RL_CHUNK);
    out("   %-22s %9s  %-30s %-11s %7s %13s %8s\n", "", "pairs/s", "ratio", "(range)", "rt/pair", "CPU us/pair",
        "ceiling");
    for (k = 0; k < RL_NCONF; k++) {
        char rb[64] = "", rg[32] = "";
        if (k == RL_N3 || k == RL_N5)
            snprintf(rb, sizeof rb, "%6.3f to single (diagnostic)", r->ratio[k]);
        else if (k == RL_STOP)
            snprintf(rb, sizeof rb, "%6.3f to N=5 (diagnostic)", r->ratio[k]);
        if (k != RL_SINGLE)
            snprintf(rg, sizeof rg, "%.2f-%.2f", r->ratio_lo[k], r->ratio_hi[k]);
        out("   %-22s %9.0f  %-30s %-11s %7.2f %5.0f + %-5.0f %8.0f\n", k == RL_SINGLE ? "single master" :
            k == RL_N3 ? "redlock N=3" : k == RL_N5 ? "redlock N=5" : "N=5, 2 SIGSTOPped", r->pairs[k], rb, rg,
            r->evalsha_per_pair[k], r->cpu_cl[k], r->cpu_srv[k], r->ceiling[k]);
    }
}

/* The same behind the delay proxy, where the targets are judged. */
static void rl_report_delay(const rl_res_t *r, tally_t *t)
{
    int k;

    out("   loopback: one master's pair is round-trip-bound, a quorum's CPU-bound on a machine with\n"
        "   fewer free cores than masters + 1 (every master runs every script): see the ceiling\n");
    out("   behind the delay proxy (bench/delayproxy.c: +%d us each way, PING round trip %.2f ms), where\n"
        "   round trips are the cost, as between hosts; %d pairs of each per repetition, interleaved in chunks of %d:\n",
        RL_DELAY_US, r->delay_rtt_ms, quick ? 100 : 200, RL_DELAY_CHUNK);
    for (k = 0; k < RL_STOP; k++) {
        int ok = r->delay_ratio[k] >= RL_TARGET;
        if (k == RL_SINGLE) {
            /* Issue 15's uncontended ratio where round trips, not the
             * scripts' server time, are the cost (diagnostic: the PING
             * round trips are not interleaved with the pairs). */
            out("   %-22s %9.0f  %6.3f to PING floor/2 (the uncontended mutex pair at this round trip)\n",
                "single master", r->delay_pairs[k], r->delay_pairs[k] * 2 * r->delay_rtt_ms / 1000);
            continue;
        }
        out("   %-22s %9.0f  %6.3f to single (>= %.2f) %s %.2f-%.2f\n", k == RL_N3 ? "redlock N=3" : "redlock N=5",
            r->delay_pairs[k], r->delay_ratio[k], RL_TARGET, mark(ok), r->delay_lo[k], r->delay_hi[k]);
        t->targets++;
        t->met += ok;
    }
}

/* The notes under the tables, and the checks. */
static void rl_report_checks(const rl_res_t *r)
{
    out("   (rt/pair: EVALSHA calls per pair summed over the running servers; CPU us/pair: this\n"
        "    process + the servers, from getrusage and /proc; ceiling: the pairs/s that %.0f CPUs allow\n"
        "    at that CPU time per pair, i.e. CPUs / (CPU us per pair); medians)\n",
        (double)sysconf(_SC_NPROCESSORS_ONLN));
    out("   2 stopped: the first pair after SIGSTOP took %.1f ms (median); those masters are then\n"
        "   skipped for a backoff (100 ms doubling to 2 s); step 8 took %.1f s\n",
        r->stop_first_ms, r->elapsed_s);
    out("   checks: fencing tokens rise with every pair %s; counter under the lock, %d threads x %d\n"
        "   sections (own clients): N=3 %s (%.0f sect/s), N=5 %s (%.0f sect/s), N=5 with 2 stopped %s (%.0f sect/s)\n",
        r->tokens_ok ? "ok" : "WRONG", RL_CHECK_THREADS, r->check_sections,
        r->check_counter_ok[RL_N3] && r->check_fencing_ok[RL_N3] ? "ok" : "WRONG",
        r->check_secs_per_s[RL_N3],
        r->check_counter_ok[RL_N5] && r->check_fencing_ok[RL_N5] ? "ok" : "WRONG",
        r->check_secs_per_s[RL_N5],
        r->check_counter_ok[RL_STOP] && r->check_fencing_ok[RL_STOP] ? "ok" : "WRONG",
        r->check_secs_per_s[RL_STOP]);
}

/* The JSON keys of the four workloads, "redlock_<workload>_<figure>". */
static void rl_json_confs(const rl_res_t *r)
{
    static const char *const rn[RL_NCONF] = { "single", "3", "5", "5_stopped2" };
    char key[128];
    int k;

    json_num("redlock_start_s", r->start_s);
    json_num("redlock_pairs_per_rep", (double)r->n_pairs);
    for (k = 0; k < RL_NCONF; k++) {
#define J(suffix, val)                                             \
    do {                                                           \
        snprintf(key, sizeof key, "redlock_%s_%s", rn[k], suffix); \
        json_num(key, val);                                        \
    } while (0)
        J("pairs_per_s", rnd(r->pairs[k]));
        if (k != RL_SINGLE) {
            J("ratio", r->ratio[k]);
            J("ratio_min", r->ratio_lo[k]);
            J("ratio_max", r->ratio_hi[k]);
        }
        J("evalsha_per_pair", r->evalsha_per_pair[k]);
        J("cpu_us_per_pair_client", r->cpu_cl[k]);
        J("cpu_us_per_pair_servers", r->cpu_srv[k]);
        J("cpu_ceiling_pairs_per_s", rnd(r->ceiling[k]));
        if (k != RL_SINGLE) {
            J("check_sections_per_s", rnd(r->check_secs_per_s[k]));
            snprintf(key, sizeof key, "redlock_%s_check_counter_ok", rn[k]);
            json_bool(key, r->check_counter_ok[k]);
            snprintf(key, sizeof key, "redlock_%s_check_fencing_order_ok", rn[k]);
            json_bool(key, r->check_fencing_ok[k]);
        }
#undef J
    }
}

/* The JSON keys of the delay proxy, the semaphore and the checks. */
static void rl_json_rest(const rl_res_t *r)
{
    json_num("redlock_delay_us_each_way", RL_DELAY_US);
    json_num("redlock_delay_rtt_ms", r->delay_rtt_ms);
    json_num("redlock_delay_single_pairs_per_s", rnd(r->delay_pairs[RL_SINGLE]));
    json_num("redlock_delay_single_ratio_to_floor", r->delay_pairs[RL_SINGLE] * 2 * r->delay_rtt_ms / 1000);
    json_num("redlock_delay_3_pairs_per_s", rnd(r->delay_pairs[RL_N3]));
    json_num("redlock_delay_5_pairs_per_s", rnd(r->delay_pairs[RL_N5]));
    json_num("redlock_delay_3_ratio", r->delay_ratio[RL_N3]);
    json_num("redlock_delay_5_ratio", r->delay_ratio[RL_N5]);
    json_num("redlock_delay_3_ratio_min", r->delay_lo[RL_N3]);
    json_num("redlock_delay_5_ratio_min", r->delay_lo[RL_N5]);
    json_num("redlock_delay_3_ratio_max", r->delay_hi[RL_N3]);
    json_num("redlock_delay_5_ratio_max", r->delay_hi[RL_N5]);
    json_num("redlock_sem_single_pairs_per_s", rnd(r->sem_pairs[RL_SINGLE]));
    json_num("redlock_sem_3_pairs_per_s", rnd(r->sem_pairs[RL_N3]));
    json_num("redlock_sem_5_pairs_per_s", rnd(r->sem_pairs[RL_N5]));
    json_num("redlock_sem_3_ratio", r->sem_ratio[RL_N3]);
    json_num("redlock_sem_5_ratio", r->sem_ratio[RL_N5]);
    json_bool("redlock_sem_ok", r->sem_ok);
    json_num("redlock_5_stopped2_first_pair_ms", r->stop_first_ms);
    json_bool("redlock_fencing_tokens_rise", r->tokens_ok);
    json_num("redlock_elapsed_s", rnd(r->elapsed_s * 10) / 10);
    json_num("redlock_check_threads", RL_CHECK_THREADS);
    json_num("redlock_check_sections_per_thread", r->check_sections);
    json_bool("redlock_ok", r->ok);
}

void report_redlock(const rl_res_t *r, tally_t *t)
{
    rl_report_table(r);
    rl_report_delay(r, t);
    rl_report_checks(r);
    rl_json_confs(r);
    out("   semaphore wait+post (plain, value 1; diagnostic: a replicated step is 3 round trips):\n"
        "   single %.0f pairs/s, N=3 %.0f (%.2f of single), N=5 %.0f (%.2f)\n",
        r->sem_pairs[RL_SINGLE], r->sem_pairs[RL_N3], r->sem_ratio[RL_N3], r->sem_pairs[RL_N5],
        r->sem_ratio[RL_N5]);
    rl_json_rest(r);
}
