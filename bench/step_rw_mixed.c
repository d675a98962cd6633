/* step_rw_mixed.c - step 5b: the read-write lock's mixed workload, NPROC
 * processes x RW_SECTIONS sections on one rdrwlock_t, RW_WRITE_PCT % of
 * them writes.  A write sets a counter and its shadow in two separate
 * commands, a read reads both: a reader that overlapped a writer sees
 * them differ.  Checks exclusion (torn reads, the final counts, overlaps
 * in time, fencing order) and measures how many readers are inside at
 * once.  Measured after step 3, printed after step 4 (main.c). */
#include "bench.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RW_SECTIONS 500 /* sections per process */
#define RW_WRITE_PCT 10 /* ... of which this percentage are writes */

typedef struct rwrec {
    uint64_t token;  /* fencing token (readers take tokens too) */
    int64_t value;   /* counter value read inside the section */
    int64_t t_call;  /* monotonic ns: rdlock/wrlock called */
    int64_t t_acq;   /* monotonic ns: it returned (inside from here) */
    int64_t t_rel;   /* monotonic ns: unlock called (inside until here) */
    int32_t pid;
    char kind;       /* 'r' or 'w' */
    char torn;       /* read: counter and shadow differed */
    int16_t pad;
} rwrec_t;

typedef struct rw_hdr {
    int32_t status; /* 0 ok */
    int32_t n;      /* records that follow */
    int64_t start_ns, end_ns;
    int64_t torn;   /* reads that saw counter != shadow */
    char err[160];
} rw_hdr_t;

/* splitmix64: the per-process workload generator. */
static uint64_t rw_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The seed depends on the child's index only: every repetition runs the
 * same sequence of reads and writes, so the counts are fixed. */
static int rw_is_write(uint64_t *s)
{
    return rw_rand(s) % 100 < RW_WRITE_PCT;
}


/* What a child runs on. */
typedef struct rw_args {
    const rdt_server_t *s;
    const char *ini, *lockname, *counter, *shadow;
} rw_args_t;

/* One child's state while it runs its sections. */
typedef struct rw_child {
    const rw_args_t *a;
    rw_hdr_t *hdr;
    redisContext *rc; /* the counter's and the shadow's connection */
    rdrwlock_t rw;    /* on the child's own client */
    int32_t pid;
} rw_child_t;

/* A child's failure: its header says why (the parent prints it); -1. */
static int rw_fail(rw_hdr_t *hdr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rw_fail(rw_hdr_t *hdr, const char *fmt, ...)
{
    va_list ap;
    hdr->status = 1;
    va_start(ap, fmt);
    vsnprintf(hdr->err, sizeof hdr->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* Inside a read section: the shadow must equal the counter v read
 * before it; a difference is a torn read, counted (the first one
 * described) but not a failure of the child. */
static int rw_read_shadow(rw_child_t *c, int i, long long v, rwrec_t *x)
{
    redisReply *r = redisCommand(c->rc, "GET %s", c->a->shadow);
    long long v2;

    if (r == NULL)
        return rw_fail(c->hdr, "GET: %s", c->rc->errstr);
    v2 = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    if (v2 != v) {
        x->torn = 1;
        if (c->hdr->torn++ == 0)
            snprintf(c->hdr->err, sizeof c->hdr->err, "read section %d saw counter %lld, shadow %lld", i, v, v2);
    }
    return 0;
}

/* Section i, a write if w, recorded in x.  0 or -1. */
static int rw_section(rw_child_t *c, int i, int w, rwrec_t *x)
{
    uint64_t token = 0;
    long long v;
    redisReply *r;
    int e;

    x->kind = w ? 'w' : 'r';
    x->pid = c->pid;
    x->t_call = now_ns();
    if ((e = w ? rdrwlock_wrlock(&c->rw) : rdrwlock_rdlock(&c->rw)) != 0)
        return rw_fail(c->hdr, "rdrwlock_%slock: %s", w ? "wr" : "rd", rdlock_strerror(e));
    x->t_acq = now_ns();
    if ((e = rdrwlock_fencing_token(&c->rw, &token)) != 0)
        return rw_fail(c->hdr, "rdrwlock_fencing_token: %s", rdlock_strerror(e));
    /* Both modes read the counter first. */
    r = redisCommand(c->rc, "GET %s", c->a->counter);
    if (r == NULL)
        return rw_fail(c->hdr, "GET: %s", c->rc->errstr);
    v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    if (w) {
        /* Two separate writes: a reader overlapping them sees a mismatch. */
        r = redisCommand(c->rc, "SET %s %lld", c->a->counter, v + 1);
        if (r == NULL)
            return rw_fail(c->hdr, "SET: %s", c->rc->errstr);
        freeReplyObject(r);
        r = redisCommand(c->rc, "SET %s %lld", c->a->shadow, v + 1);
        if (r == NULL)
            return rw_fail(c->hdr, "SET: %s", c->rc->errstr);
        freeReplyObject(r);
    } else if (rw_read_shadow(c, i, v, x) != 0) {
        return -1;
    }
    x->t_rel = now_ns();
    if ((e = rdrwlock_unlock(&c->rw)) != 0)
        return rw_fail(c->hdr, "rdrwlock_unlock (%s): %s", w ? "write" : "read", rdlock_strerror(e));
    x->token = token;
    x->value = v;
    return 0;
}

/* A child (child_fn_t): its own connection and client, opened after the
 * fork; the start barrier; the sections in the order its seed gives; then
 * the header and the records down the pipe, the header's status as the
 * exit status. */
static void rw_child_run(int idx, int ready_fd, int go_fd, int res_fd, void *arg)
{
    rw_hdr_t hdr;
    rw_child_t c;
    rwrec_t *recs = calloc(RW_SECTIONS, sizeof *recs);
    rdlock_client_t *cl = NULL;
    rdlock_attr_t attr;
    uint64_t seed = (uint64_t)(idx + 1) * 0x2545F4914F6CDD1DULL;
    int i, e, inited = 0;

    memset(&hdr, 0, sizeof hdr);
    memset(&c, 0, sizeof c);
    c.a = arg;
    c.hdr = &hdr;
    c.pid = (int32_t)getpid();
    alarm(CHILD_ALARM_S);
    if (recs == NULL) {
        rw_fail(&hdr, "out of memory");
        goto done;
    }
    if ((c.rc = rdt_connect(c.a->s)) == NULL) {
        rw_fail(&hdr, "connect failed");
        goto done;
    }
    /* Own client, opened after fork. */
    if ((e = rdlock_client_open(&cl, c.a->ini)) != 0) {
        rw_fail(&hdr, "rdlock_client_open: %s", rdlock_strerror(e));
        goto done;
    }
    rdlock_attr_init(&attr);
    rdlock_attr_setclient(&attr, cl);
    if ((e = rdrwlock_init(&c.rw, c.a->lockname, &attr)) != 0) {
        rw_fail(&hdr, "rdrwlock_init: %s", rdlock_strerror(e));
        goto done;
    }
    inited = 1;
    if (children_barrier(ready_fd, go_fd) != 0) {
        rw_fail(&hdr, "start barrier failed");
        goto done;
    }
    hdr.start_ns = now_ns();
    for (i = 0; i < RW_SECTIONS; i++) {
        if (rw_section(&c, i, rw_is_write(&seed), &recs[i]) != 0)
            goto done;
        hdr.n = i + 1;
    }
    hdr.end_ns = now_ns();
done:
    if (inited)
        rdrwlock_destroy(&c.rw);
    if (cl != NULL) {
        rdlock_attr_destroy(&attr);
        rdlock_client_close(cl);
    }
    if (c.rc != NULL)
        redisFree(c.rc);
    if (write_all(res_fd, &hdr, sizeof hdr) == 0 && hdr.n > 0)
        write_all(res_fd, recs, (size_t)hdr.n * sizeof *recs);
    close(res_fd);
    _exit(hdr.status);
}

typedef struct rw_run {
    double secs_per_s;
    long long reads, writes;
    double rd_p50_ms, rd_p99_ms, rd_max_ms;
    double wr_p50_ms, wr_p99_ms, wr_max_ms;
    double max_readers;   /* most readers inside at one instant */
    double mean_readers;  /* reader-time / time with at least one reader inside */
    double overtook;      /* reads that called after a waiting writer (+1 ms) and entered before it */
    long long counter, shadow, torn, overlaps;
    int fencing_ok;
} rw_run_t;

static int cmp_rwrec_token(const void *a, const void *b)
{
    const rwrec_t *x = a, *y = b;
    return x->token < y->token ? -1 : x->token > y->token;
}

/* An enter (+1) or exit (-1) of a read section, for the overlap sweep. */
typedef struct rw_ev {
    int64_t t;
    int d;
} rw_ev_t;

static int cmp_rw_ev(const void *a, const void *b)
{
    const rw_ev_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->d - y->d; /* exits first at equal times */
}


/* What the children of one run sent, and scratch for the analysis. */
typedef struct rw_recs {
    rwrec_t *all;    /* every section; in token order once analysed */
    int64_t *rl, *wl; /* read and write acquire latencies */
    rw_ev_t *ev;     /* read sections' enters and exits */
    size_t nall;
    int64_t start, end, torn; /* the first start, the last end, torn reads */
} rw_recs_t;

/* Read every child's header and records into k, and reap it.  1, or 0
 * if a child failed (printed). */
static int rw_collect(children_t *ch, rw_recs_t *k)
{
    int p, ok = 1;

    for (p = 0; p < ch->n; p++) {
        rw_hdr_t hdr;
        ssize_t got = read_all(ch->res[p], &hdr, sizeof hdr);
        if (got == (ssize_t)sizeof hdr && hdr.n >= 0 && hdr.n <= RW_SECTIONS) {
            if (read_all(ch->res[p], k->all + k->nall, (size_t)hdr.n * sizeof *k->all) !=
                (ssize_t)((size_t)hdr.n * sizeof *k->all))
                hdr.status = 1;
            k->nall += (size_t)hdr.n;
            if (hdr.status != 0) {
                fail("rwlock child %d: %s", p, hdr.err);
                ok = 0;
            } else if (hdr.torn > 0) {
                fprintf(stderr, "rdlock-bench: rwlock child %d: first torn read: %s\n", p, hdr.err);
            }
            k->torn += hdr.torn;
            if (hdr.start_ns < k->start)
                k->start = hdr.start_ns;
            if (hdr.end_ns > k->end)
                k->end = hdr.end_ns;
        } else {
            fail("rwlock child %d sent no result", p);
            ok = 0;
        }
        if (children_reap(ch, p, "rwlock child") != 0)
            ok = 0;
    }
    return ok;
}

/* $RDLOCK_BENCH_DUMP: the raw records, one CSV per run. */
static void rw_dump(const rw_recs_t *k, int run_no)
{
    const char *dump = getenv("RDLOCK_BENCH_DUMP");
    const rwrec_t *all = k->all;
    char path[512];
    FILE *f;
    size_t i;

    if (dump == NULL || *dump == '\0')
        return;
    snprintf(path, sizeof path, "%s/rw-mixed-%d.csv", dump, run_no);
    if ((f = fopen(path, "w")) != NULL) {
        fprintf(f, "token,pid,kind,value,t_call_ns,t_acq_ns,t_rel_ns,torn\n");
        for (i = 0; i < k->nall; i++)
            fprintf(f, "%" PRIu64 ",%d,%c,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d\n",
                    all[i].token, all[i].pid, all[i].kind, all[i].value, all[i].t_call, all[i].t_acq,
                    all[i].t_rel, all[i].torn);
        fclose(f);
    }
}

/* The checks of a run that has records, in token order.  1, or 0 on a
 * violation (printed). */
static int rw_check(const rw_recs_t *k, rw_run_t *res)
{
    const rwrec_t *all = k->all;
    size_t nall = k->nall, i, j;
    int64_t w = 0;
    int ok = 1;

    /* Fencing: in token order every section must have read the number
     * of writes before it (a reader's token is taken when it enters,
     * so the writes with lower tokens ended before it and those with
     * higher tokens started after it); tokens strictly increase. */
    res->fencing_ok = 1;
    for (i = 0; i < nall; i++) {
        if (all[i].value != w || (i > 0 && all[i].token == all[i - 1].token))
            res->fencing_ok = 0;
        if (all[i].kind == 'w')
            w++;
    }
    if (!res->fencing_ok) {
        fail("rwlock: fencing tokens do not order the sections");
        ok = 0;
    }
    /* Exclusion seen from the clocks: a write section must not
     * overlap any other section ([t_acq, t_rel] is certainly inside;
     * one machine, one CLOCK_MONOTONIC). */
    for (i = 0; i < nall; i++) {
        if (all[i].kind != 'w')
            continue;
        for (j = 0; j < nall; j++)
            if (j != i && all[j].t_acq < all[i].t_rel && all[j].t_rel > all[i].t_acq)
                res->overlaps++;
    }
    if (res->overlaps > 0) {
        fail("RWLOCK EXCLUSION VIOLATED: %lld sections overlapped a write section in time", res->overlaps);
        ok = 0;
    }
    return ok;
}

/* Readers inside at once: a sweep over the ne enters and exits. */
static void rw_readers(rw_ev_t *ev, size_t ne, rw_run_t *res)
{
    int64_t busy = 0, sum = 0, since = 0;
    int in = 0, mx = 0;
    size_t i;

    qsort(ev, ne, sizeof *ev, cmp_rw_ev);
    for (i = 0; i < ne; i++) {
        if (in > 0)
            busy += ev[i].t - since;
        sum += (int64_t)in * (ev[i].t - since);
        since = ev[i].t;
        in += ev[i].d;
        if (in > mx)
            mx = in;
    }
    res->max_readers = mx;
    res->mean_readers = busy > 0 ? (double)sum / (double)busy : NAN;
}

/* Latencies; reader overlap; reads that overtook a waiting writer. */
static void rw_figures(rw_recs_t *k, rw_run_t *res)
{
    const rwrec_t *all = k->all;
    size_t nall = k->nall, i, j, nr = 0, nw = 0, ne = 0;

    for (i = 0; i < nall; i++) {
        if (all[i].kind == 'w') {
            k->wl[nw++] = all[i].t_acq - all[i].t_call;
            continue;
        }
        k->rl[nr++] = all[i].t_acq - all[i].t_call;
        k->ev[ne].t = all[i].t_acq;
        k->ev[ne++].d = 1;
        k->ev[ne].t = all[i].t_rel;
        k->ev[ne++].d = -1;
        for (j = 0; j < nall; j++)
            if (all[j].kind == 'w' && all[j].pid != all[i].pid && all[i].t_call >= all[j].t_call + 1000000 &&
                all[i].t_acq < all[j].t_acq) {
                res->overtook++;
                break;
            }
    }
    if (ne > 0)
        rw_readers(k->ev, ne, res);
    lat_stats(k->rl, nr, &res->rd_p50_ms, &res->rd_p99_ms, &res->rd_max_ms);
    lat_stats(k->wl, nw, &res->wr_p50_ms, &res->wr_p99_ms, &res->wr_max_ms);
    res->secs_per_s = (double)nall / ((double)(k->end - k->start) / 1e9);
}

/* The counts and the exclusion checks that need no records: torn reads,
 * and the counter and its shadow against the write sections.  1, or 0 on
 * a violation (printed). */
static int rw_counts(redisContext *c, const char *counter, const char *shadow, const rw_recs_t *k, rw_run_t *res)
{
    size_t i;
    int ok = 1;

    for (i = 0; i < k->nall; i++)
        if (k->all[i].kind == 'w')
            res->writes++;
        else
            res->reads++;
    res->torn = k->torn;
    res->counter = get_int(c, counter);
    res->shadow = get_int(c, shadow);
    if (k->torn > 0) {
        fail("RWLOCK EXCLUSION VIOLATED: %lld read sections saw counter != shadow (a half-written value)",
             (long long)k->torn);
        ok = 0;
    }
    if (res->counter != res->writes || res->shadow != res->writes) {
        fail("RWLOCK EXCLUSION VIOLATED: counter = %lld, shadow = %lld after %lld write sections", res->counter,
             res->shadow, res->writes);
        ok = 0;
    }
    return ok;
}

/* One run: NPROC children x RW_SECTIONS sections, checked and measured.
 * 0, or -1 on a hard error (printed). */
static int rw_mixed_once(const rdt_server_t *s, int run_no, rw_run_t *res)
{
    char lockname[64], counter[64], shadow[64], inipath[400];
    const char *ini;
    size_t cap = NPROC * RW_SECTIONS;
    rw_recs_t k = { NULL, NULL, NULL, NULL, 0, INT64_MAX, 0, 0 };
    rw_args_t a = { s, inipath, lockname, counter, shadow };
    children_t ch;
    redisContext *c;
    int ok = 0;

    k.all = calloc(cap, sizeof *k.all);
    k.rl = calloc(cap, sizeof *k.rl);
    k.wl = calloc(cap, sizeof *k.wl);
    k.ev = calloc(2 * cap, sizeof *k.ev);
    c = rdt_connect(s);
    memset(res, 0, sizeof *res);
    res->max_readers = res->mean_readers = NAN;
    if (k.all == NULL || k.rl == NULL || k.wl == NULL || k.ev == NULL || c == NULL) {
        fail("rwlock mixed setup failed");
        goto out;
    }
    snprintf(lockname, sizeof lockname, "bench-rw-mixed-%d", run_no);
    snprintf(counter, sizeof counter, "bench:rw:counter:%d", run_no);
    snprintf(shadow, sizeof shadow, "bench:rw:shadow:%d", run_no);
    freeReplyObject(cmd(c, "SET %s 0", counter));
    freeReplyObject(cmd(c, "SET %s 0", shadow));
    ini = rdt_write_ini(s, 0, "[lock]\nlease_ms = 30000\n");
    if (ini == NULL) {
        fail("cannot write ini");
        goto out;
    }
    snprintf(inipath, sizeof inipath, "%s", ini);
    if ((ok = children_start(&ch, c, rw_child_run, &a)) < 0) {
        ok = 0;
        goto out;
    }
    ok = rw_collect(&ch, &k) && ok;
    ok = rw_counts(c, counter, shadow, &k, res) && ok;
    if (k.nall > 0 && k.end > k.start) {
        qsort(k.all, k.nall, sizeof *k.all, cmp_rwrec_token);
        rw_dump(&k, run_no);
        ok = rw_check(&k, res) && ok;
        rw_figures(&k, res);
    }
out:
    if (c != NULL)
        redisFree(c);
    free(k.all);
    free(k.rl);
    free(k.wl);
    free(k.ev);
    return ok ? 0 : -1;
}

/* creps runs; medians (worst: the largest max of any run). */
void bench_rw_mixed(const rdt_server_t *s, int creps, rw_res_t *res)
{
    rw_run_t runs[16];
    double v[16] = { 0 };
    int i;

    memset(res, 0, sizeof *res);
    memset(runs, 0, sizeof runs);
    if (creps < 1 || creps > 16)
        return;
    for (i = 0; i < creps; i++)
        rw_mixed_once(s, i, &runs[i]);
#define MED(field)                    \
    do {                              \
        for (i = 0; i < creps; i++)   \
            v[i] = runs[i].field;     \
        res->field = median(v, creps); \
    } while (0)
    MED(secs_per_s);
    MED(rd_p50_ms);
    MED(rd_p99_ms);
    MED(rd_max_ms);
    MED(wr_p50_ms);
    MED(wr_p99_ms);
    MED(wr_max_ms);
    MED(max_readers);
    MED(mean_readers);
    MED(overtook);
#undef MED
    for (i = 0; i < creps; i++)
        v[i] = runs[i].rd_max_ms;
    res->rd_worst_ms = maxd(v, creps);
    for (i = 0; i < creps; i++)
        v[i] = runs[i].wr_max_ms;
    res->wr_worst_ms = maxd(v, creps);
    /* The same seeds every run: the counts are those of any complete run. */
    res->reads = runs[0].reads;
    res->writes = runs[0].writes;
    res->counter_ok = res->fencing_ok = res->ok = 1;
    for (i = 0; i < creps; i++) {
        res->torn += runs[i].torn;
        res->overlaps += runs[i].overlaps;
        if (runs[i].counter != runs[i].writes || runs[i].shadow != runs[i].writes)
            res->counter_ok = 0;
        if (!runs[i].fencing_ok)
            res->fencing_ok = 0;
        if (runs[i].reads + runs[i].writes != NPROC * RW_SECTIONS)
            res->ok = 0; /* a child failed (reported) */
    }
    res->ok = res->ok && res->counter_ok && res->fencing_ok && res->torn == 0 && res->overlaps == 0;
}

void report_rw_mixed(const rw_res_t *r, int creps, tally_t *t)
{
    int ok;

    out("   b. mixed: %d processes x %d sections on one rdrwlock_t, %d%% writes (seeded per process);\n"
        "      read = GET counter + GET shadow (must be equal), write = GET counter, SET counter+1,\n"
        "      SET shadow (separate commands); medians of %d run(s)\n",
        NPROC, RW_SECTIONS, RW_WRITE_PCT, creps);
    out("   %-8s %6s %8s %8s %8s %9s\n", "", "count", "p50 ms", "p99 ms", "max ms", "worst ms");
    out("   %-8s %6lld %8.2f %8.2f %8.2f %9.2f   (acquire latency)\n", "reads", r->reads, r->rd_p50_ms,
        r->rd_p99_ms, r->rd_max_ms, r->rd_worst_ms);
    out("   %-8s %6lld %8.2f %8.2f %8.2f %9.2f\n", "writes", r->writes, r->wr_p50_ms, r->wr_p99_ms,
        r->wr_max_ms, r->wr_worst_ms);
    out("   sections/s %.0f; readers inside at once: max %.0f, mean %.2f while any is inside\n",
        r->secs_per_s, r->max_readers, r->mean_readers);
    out("   checks (all runs): counter == writes %s, torn reads %lld, sections overlapping a write %lld,\n"
        "   fencing order %s\n",
        r->counter_ok ? "ok" : "WRONG", r->torn, r->overlaps, r->fencing_ok ? "ok" : "WRONG");
    out("   diagnostic: %.0f reads overtook a writer that had called wrlock >= 1 ms before them\n",
        r->overtook);
    ok = r->max_readers >= 2;
    out("   target: reads run in parallel (max readers inside >= 2) %s\n", mark(ok));
    t->targets++;
    t->met += ok;
    json_num("rw_mixed_sections_per_s", rnd(r->secs_per_s));
    json_num("rw_mixed_reads", (double)r->reads);
    json_num("rw_mixed_writes", (double)r->writes);
    json_num("rw_mixed_rd_lat_p50_ms", r->rd_p50_ms);
    json_num("rw_mixed_rd_lat_p99_ms", r->rd_p99_ms);
    json_num("rw_mixed_rd_lat_max_ms", r->rd_max_ms);
    json_num("rw_mixed_rd_lat_max_worst_ms", r->rd_worst_ms);
    json_num("rw_mixed_wr_lat_p50_ms", r->wr_p50_ms);
    json_num("rw_mixed_wr_lat_p99_ms", r->wr_p99_ms);
    json_num("rw_mixed_wr_lat_max_ms", r->wr_max_ms);
    json_num("rw_mixed_wr_lat_max_worst_ms", r->wr_worst_ms);
    json_num("rw_mixed_max_readers_inside", r->max_readers);
    json_num("rw_mixed_mean_readers_inside", r->mean_readers);
    json_num("rw_mixed_reads_overtaking_writer", r->overtook);
    json_bool("rw_mixed_counter_ok", r->counter_ok);
    json_num("rw_mixed_torn_reads", (double)r->torn);
    json_num("rw_mixed_write_overlaps", (double)r->overlaps);
    json_bool("rw_mixed_fencing_order_ok", r->fencing_ok);
    json_bool("rw_mixed_ok", r->ok);
}
