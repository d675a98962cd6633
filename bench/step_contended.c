/* step_contended.c - step 3: NPROC processes x SECTIONS critical sections
 * on one lock, each section a non-atomic GET + SET of a counter, so that
 * any break in mutual exclusion shows in the final count.  Runs rdlock
 * (retry_interval_ms 100 and 1000), a naive SET NX polling lock and the
 * BLPOP hand-over sketch on the same workload, and reports acquire
 * latency, hand-offs, hand-off gaps and fairness (bench/README.md). */
#include "bench.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SECTIONS 500 /* critical sections per process */

/* K_SKETCH is no lock of this library: a FIFO hand-over whose grant is
 * pushed by the release script to the head waiter, which waits for it in
 * BLPOP on its own connection (no pub/sub, no background thread, no claim
 * round trip), with neither leases, nor robust state, nor fencing.  It
 * shows, in the same run, what hand-overs could cost on this machine: a
 * diagnostic for issue 15's design (bench/README.md). */
enum { K_RDLOCK, K_NAIVE, K_SKETCH };

typedef struct rec {
    uint64_t token;  /* fencing token (rdlock) or the counter value read (naive) */
    int64_t lat_ns;  /* rdlock_lock() call to return / first SET NX to success */
    int64_t value;   /* counter value read inside the section */
    int64_t t_call;  /* monotonic ns: lock call started (system-wide clock) */
    int64_t t_acq;   /* monotonic ns: lock held */
    int64_t t_rel;   /* monotonic ns: unlock called */
    int32_t pid;
    int32_t pad;
} rec_t;

typedef struct child_hdr {
    int32_t status; /* 0 ok */
    int32_t n;      /* records that follow */
    int64_t start_ns, end_ns;
    int64_t attempts; /* naive: SET NX attempts */
    char err[160];
} child_hdr_t;

static const char NAIVE_RELEASE[] =
    "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0";
/* K_SKETCH: KEYS[1] the lock (the holder's id), KEYS[2] the FIFO line,
 * KEYS[3] the grant lists' prefix; ARGV[1] the caller's id. */
static const char SKETCH_ACQUIRE[] =
    "if redis.call('set',KEYS[1],ARGV[1],'NX','PX',30000) then return 1 end "
    "redis.call('rpush',KEYS[2],ARGV[1]) return 0";
static const char SKETCH_RELEASE[] =
    "if redis.call('get',KEYS[1])~=ARGV[1] then return -1 end "
    "local h=redis.call('lpop',KEYS[2]) "
    "if h then redis.call('set',KEYS[1],h,'PX',30000) redis.call('rpush',KEYS[3]..h,'1') return 1 end "
    "redis.call('del',KEYS[1]) return 0";

/* What a child runs: which lock, on what, and where its header goes. */
typedef struct cont_args {
    const rdt_server_t *s;
    int kind;
    const char *ini, *lockname, *counter;
} cont_args_t;

/* One child's state while it runs its sections. */
typedef struct child {
    const cont_args_t *a;
    child_hdr_t *hdr;
    redisContext *rc; /* the counter's connection, also the naive lock's and the sketch's */
    rdlock_t m;       /* K_RDLOCK, on the child's own client */
    char tok[64];     /* naive and sketch: this holder's id */
    int32_t pid;
} child_t;

/* A child's failure: its header says why (the parent prints it); -1. */
static int child_fail(child_hdr_t *hdr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int child_fail(child_hdr_t *hdr, const char *fmt, ...)
{
    va_list ap;
    hdr->status = 1;
    va_start(ap, fmt);
    vsnprintf(hdr->err, sizeof hdr->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* The sketch: queue up if the lock is taken, then wait in BLPOP for the
 * grant that the holder's release pushes. */
static int sketch_acquire(child_t *x)
{
    const char *lockname = x->a->lockname;
    redisReply *r;
    int e;

    snprintf(x->tok, sizeof x->tok, "%ld", (long)x->pid);
    r = redisCommand(x->rc, "EVAL %s 2 %s %s:q %s", SKETCH_ACQUIRE, lockname, lockname, x->tok);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER)
        return child_fail(x->hdr, "sketch acquire: %s", r == NULL ? x->rc->errstr : "bad reply");
    e = (int)r->integer;
    freeReplyObject(r);
    if (e == 0) {
        /* In line: the release pushes the grant to us. */
        r = redisCommand(x->rc, "BLPOP %s:g:%s 0", lockname, x->tok);
        if (r == NULL || r->type != REDIS_REPLY_ARRAY)
            return child_fail(x->hdr, "sketch BLPOP: %s", r == NULL ? x->rc->errstr : "bad reply");
        freeReplyObject(r);
    }
    return 0;
}

/* The naive lock: SET NX, and 1 ms of sleep after every refusal. */
static int naive_acquire(child_t *x, int i)
{
    redisReply *r;

    snprintf(x->tok, sizeof x->tok, "%ld-%d", (long)x->pid, i);
    for (;;) {
        r = redisCommand(x->rc, "SET %s %s NX PX 30000", x->a->lockname, x->tok);
        x->hdr->attempts++;
        if (r == NULL)
            return child_fail(x->hdr, "SET NX: %s", x->rc->errstr);
        if (r->type == REDIS_REPLY_STATUS) {
            freeReplyObject(r);
            break;
        }
        freeReplyObject(r);
        sleep_us(1000);
    }
    return 0;
}

/* Section i's lock, the kind's way: *t1 when it is held, and rdlock's
 * fencing token.  0 or -1. */
static int child_acquire(child_t *x, int i, int64_t *t1, uint64_t *token)
{
    int e;

    if (x->a->kind == K_RDLOCK) {
        if ((e = rdlock_lock(&x->m)) != 0)
            return child_fail(x->hdr, "rdlock_lock: %s", rdlock_strerror(e));
        *t1 = now_ns();
        if ((e = rdlock_fencing_token(&x->m, token)) != 0)
            return child_fail(x->hdr, "rdlock_fencing_token: %s", rdlock_strerror(e));
        return 0;
    }
    if ((x->a->kind == K_SKETCH ? sketch_acquire(x) : naive_acquire(x, i)) != 0)
        return -1;
    *t1 = now_ns();
    return 0;
}

/* The critical section: a non-atomic read-modify-write; *v the value
 * read.  0 or -1. */
static int child_section(child_t *x, long long *v)
{
    redisReply *r = redisCommand(x->rc, "GET %s", x->a->counter);
    if (r == NULL)
        return child_fail(x->hdr, "GET: %s", x->rc->errstr);
    *v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    r = redisCommand(x->rc, "SET %s %lld", x->a->counter, *v + 1);
    if (r == NULL)
        return child_fail(x->hdr, "SET: %s", x->rc->errstr);
    freeReplyObject(r);
    return 0;
}

/* Unlock, the kind's way.  The naive lock and the sketch have no fencing
 * token: their sections are ordered by the counter value v they read.
 * 0 or -1. */
static int child_release(child_t *x, long long v, uint64_t *token)
{
    const char *lockname = x->a->lockname;
    redisReply *r;
    int e;

    if (x->a->kind == K_RDLOCK) {
        if ((e = rdlock_unlock(&x->m)) != 0)
            return child_fail(x->hdr, "rdlock_unlock: %s", rdlock_strerror(e));
        return 0;
    }
    if (x->a->kind == K_SKETCH) {
        r = redisCommand(x->rc, "EVAL %s 3 %s %s:q %s:g: %s", SKETCH_RELEASE, lockname, lockname, lockname, x->tok);
        if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < 0) {
            if (r != NULL)
                freeReplyObject(r);
            return child_fail(x->hdr, "sketch release: %s", r == NULL ? x->rc->errstr : "the lock was not ours");
        }
    } else {
        r = redisCommand(x->rc, "EVAL %s 1 %s %s", NAIVE_RELEASE, lockname, x->tok);
        if (r == NULL)
            return child_fail(x->hdr, "EVAL release: %s", x->rc->errstr);
        if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
            freeReplyObject(r);
            return child_fail(x->hdr, "naive release found the lock not ours");
        }
    }
    freeReplyObject(r);
    *token = (uint64_t)v;
    return 0;
}

/* The SECTIONS sections, each recorded in recs[i]; hdr->n counts those
 * complete.  0 or -1. */
static int child_sections(child_t *x, rec_t *recs)
{
    int i;

    x->hdr->start_ns = now_ns();
    for (i = 0; i < SECTIONS; i++) {
        int64_t t0 = now_ns(), t1 = 0;
        uint64_t token = 0;
        long long v = 0;

        if (child_acquire(x, i, &t1, &token) != 0 || child_section(x, &v) != 0)
            return -1;
        recs[i].t_rel = now_ns();
        if (child_release(x, v, &token) != 0)
            return -1;
        recs[i].token = token;
        recs[i].lat_ns = t1 - t0;
        recs[i].t_call = t0;
        recs[i].t_acq = t1;
        recs[i].value = v;
        recs[i].pid = x->pid;
        x->hdr->n = i + 1;
    }
    x->hdr->end_ns = now_ns();
    return 0;
}

/* A child (child_fn_t): its own connection and, for rdlock, its own
 * client opened after the fork; the start barrier; the sections; then the
 * header and the records down the pipe, and the header's status as the
 * exit status. */
static void child_run(int idx, int ready_fd, int go_fd, int res_fd, void *arg)
{
    child_hdr_t hdr;
    child_t x;
    rec_t *recs = calloc(SECTIONS, sizeof *recs);
    rdlock_client_t *cl = NULL;
    rdlock_attr_t attr;
    int e, inited = 0;

    memset(&hdr, 0, sizeof hdr);
    memset(&x, 0, sizeof x);
    x.a = arg;
    x.hdr = &hdr;
    x.pid = (int32_t)getpid();
    alarm(CHILD_ALARM_S);
    if (recs == NULL) {
        child_fail(&hdr, "out of memory");
        goto done;
    }
    if ((x.rc = rdt_connect(x.a->s)) == NULL) {
        child_fail(&hdr, "connect failed");
        goto done;
    }
    if (x.a->kind == K_RDLOCK) {
        /* Own client, opened after fork. */
        if ((e = rdlock_client_open(&cl, x.a->ini)) != 0) {
            child_fail(&hdr, "rdlock_client_open: %s", rdlock_strerror(e));
            goto done;
        }
        rdlock_attr_init(&attr);
        rdlock_attr_setclient(&attr, cl);
        if ((e = rdlock_init(&x.m, x.a->lockname, &attr)) != 0) {
            child_fail(&hdr, "rdlock_init: %s", rdlock_strerror(e));
            goto done;
        }
        inited = 1;
    }
    if (children_barrier(ready_fd, go_fd) != 0) {
        child_fail(&hdr, "start barrier failed");
        goto done;
    }
    child_sections(&x, recs);
done:
    if (inited) {
        rdlock_destroy(&x.m);
        rdlock_attr_destroy(&attr);
    }
    if (cl != NULL)
        rdlock_client_close(cl);
    if (x.rc != NULL)
        redisFree(x.rc);
    if (write_all(res_fd, &hdr, sizeof hdr) == 0 && hdr.n > 0)
        write_all(res_fd, recs, (size_t)hdr.n * sizeof *recs);
    close(res_fd);
    _exit(hdr.status);
}

typedef struct cont_run {
    double secs_per_s;
    double p50_ms, p99_ms, max_ms;
    double handoffs;
    long long counter;
    int fencing_ok;
    double attempts_per_section; /* naive only */
    double gap_p50_ms, gap_max_ms; /* hand-off gaps: unlock called -> next owner holds */
    double worst_overtaken;        /* sections by others during the slowest acquire */
    double slow;                   /* acquires that took >= 50 ms */
    double regrabs;    /* the previous holder took it again while another process waited */
    double unfifo;     /* sections granted while a process that called lock earlier still waited */
} cont_run_t;

static int cmp_rec_token(const void *a, const void *b)
{
    const rec_t *x = a, *y = b;
    return x->token < y->token ? -1 : x->token > y->token;
}

/* What the children of one run sent. */
typedef struct cont_recs {
    rec_t *all;   /* every section; in token order once analysed */
    int64_t *lat; /* scratch: their acquire latencies */
    size_t nall;
    int64_t start, end, attempts; /* the first start, the last end, naive SET NX attempts */
} cont_recs_t;

/* Read every child's header and records into k, and reap it.  1, or 0
 * if a child failed (printed). */
static int cont_collect(children_t *ch, int kind, cont_recs_t *k)
{
    int p, ok = 1;

    for (p = 0; p < ch->n; p++) {
        child_hdr_t hdr;
        ssize_t got = read_all(ch->res[p], &hdr, sizeof hdr);
        if (got == (ssize_t)sizeof hdr && hdr.n >= 0 && hdr.n <= SECTIONS) {
            if (read_all(ch->res[p], k->all + k->nall, (size_t)hdr.n * sizeof *k->all) !=
                (ssize_t)((size_t)hdr.n * sizeof *k->all))
                hdr.status = 1;
            k->nall += (size_t)hdr.n;
            if (hdr.status != 0) {
                fail("child %d (%s): %s", p, kind == K_RDLOCK ? "rdlock" : kind == K_SKETCH ? "sketch" : "naive",
                     hdr.err);
                ok = 0;
            }
            if (hdr.start_ns < k->start)
                k->start = hdr.start_ns;
            if (hdr.end_ns > k->end)
                k->end = hdr.end_ns;
            k->attempts += hdr.attempts;
        } else {
            fail("child %d sent no result", p);
            ok = 0;
        }
        if (children_reap(ch, p, "child") != 0)
            ok = 0;
    }
    return ok;
}

/* $RDLOCK_BENCH_DUMP: the raw records for offline analysis, one CSV per
 * run. */
static void cont_dump(const cont_recs_t *k, int kind, int retry_ms, int run_no)
{
    const char *dump = getenv("RDLOCK_BENCH_DUMP");
    const rec_t *all = k->all;
    char path[512];
    FILE *f;
    size_t i;

    if (dump == NULL || *dump == '\0')
        return;
    snprintf(path, sizeof path, "%s/contended-%d-%s.csv", dump, run_no,
             kind == K_NAIVE    ? "naive"
             : kind == K_SKETCH ? "sketch"
             : retry_ms == 100  ? "r100"
                                : "r1000");
    if ((f = fopen(path, "w")) != NULL) {
        fprintf(f, "token,pid,value,t_call_ns,t_acq_ns,t_rel_ns,lat_ns\n");
        for (i = 0; i < k->nall; i++)
            fprintf(f, "%" PRIu64 ",%d,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                    all[i].token, all[i].pid, all[i].value, all[i].t_call, all[i].t_acq, all[i].t_rel,
                    all[i].lat_ns);
        fclose(f);
    }
}

/* In token order: slow acquires, hand-offs, and the order check (the
 * latencies go to k->lat). */
static void cont_order(cont_recs_t *k, cont_run_t *res)
{
    const rec_t *all = k->all;
    size_t i;

    res->fencing_ok = 1;
    for (i = 0; i < k->nall; i++) {
        k->lat[i] = all[i].lat_ns;
        if (all[i].lat_ns >= 50000000)
            res->slow++;
        if (i > 0 && all[i].pid != all[i - 1].pid)
            res->handoffs++;
        /* Ordered by fencing token, the sections must have read the
         * counter in order 0, 1, 2, ...; tokens strictly increase. */
        if (all[i].value != (int64_t)i || (i > 0 && all[i].token == all[i - 1].token))
            res->fencing_ok = 0;
    }
}

/* Hand-off gap: from the previous owner calling unlock to the next owner
 * (another process) holding the lock; and the sections other processes
 * ran while the slowest acquire waited. */
static void cont_gaps(const cont_recs_t *k, cont_run_t *res)
{
    const rec_t *all = k->all;
    size_t nall = k->nall, i, j, ng = 0, worst = 0;
    int64_t *gap = calloc(nall, sizeof *gap);

    for (i = 1; gap != NULL && i < nall; i++)
        if (all[i].pid != all[i - 1].pid)
            gap[ng++] = all[i].t_acq - all[i - 1].t_rel;
    if (ng > 0) {
        qsort(gap, ng, sizeof *gap, cmp_i64);
        res->gap_p50_ms = (double)pct(gap, ng, 0.50) / 1e6;
        res->gap_max_ms = (double)gap[ng - 1] / 1e6;
    }
    free(gap);
    for (i = 1; i < nall; i++)
        if (all[i].lat_ns > all[worst].lat_ns)
            worst = i;
    for (j = 0; j < nall; j++)
        if (all[j].pid != all[worst].pid && all[j].t_acq > all[worst].t_call && all[j].t_acq < all[worst].t_acq)
            res->worst_overtaken++;
}

/* Fairness (all in token order = acquisition order): grants made while a
 * process that had called lock earlier still waited, and the previous
 * holder taking it again while another process waited. */
static void cont_fairness(const cont_recs_t *k, cont_run_t *res)
{
    const rec_t *all = k->all;
    size_t nall = k->nall, i, j;

    for (i = 0; i < nall; i++) {
        int waited_earlier = 0, waited = 0;
        for (j = i + 1; j < nall; j++) {
            if (all[j].pid == all[i].pid || all[j].t_call >= all[i].t_acq)
                continue;
            waited = 1; /* j was inside lock() when i got it */
            if (all[j].t_call < all[i].t_call)
                waited_earlier = 1;
        }
        if (waited_earlier)
            res->unfifo++;
        if (waited && i > 0 && all[i - 1].pid == all[i].pid)
            res->regrabs++;
    }
}

/* The figures of a run that has records.  0, or -1 if rdlock's fencing
 * tokens do not order the sections (printed). */
static int cont_analyse(cont_recs_t *k, int kind, int retry_ms, int run_no, cont_run_t *res)
{
    int ok = 1;

    qsort(k->all, k->nall, sizeof *k->all, cmp_rec_token);
    cont_dump(k, kind, retry_ms, run_no);
    cont_order(k, res);
    if (!res->fencing_ok && kind == K_RDLOCK) {
        fail("fencing tokens do not order the critical sections");
        ok = 0;
    }
    cont_gaps(k, res);
    cont_fairness(k, res);
    qsort(k->lat, k->nall, sizeof *k->lat, cmp_i64);
    res->p50_ms = (double)pct(k->lat, k->nall, 0.50) / 1e6;
    res->p99_ms = (double)pct(k->lat, k->nall, 0.99) / 1e6;
    res->max_ms = (double)k->lat[k->nall - 1] / 1e6;
    res->secs_per_s = (double)k->nall / ((double)(k->end - k->start) / 1e9);
    res->attempts_per_section = (double)k->attempts / (double)k->nall;
    return ok ? 0 : -1;
}

/* The lock's name for the run, and for rdlock the ini with its retry
 * interval (into inipath).  0, or -1 (printed). */
static int cont_names(const rdt_server_t *s, int kind, int retry_ms, int run_no, char *lockname, size_t lsz,
                      char *inipath, size_t isz)
{
    char iniextra[128];
    const char *ini;

    snprintf(lockname, lsz, "bench-contended-%d", run_no);
    if (kind == K_RDLOCK) {
        snprintf(iniextra, sizeof iniextra, "[lock]\nlease_ms = 30000\nretry_interval_ms = %d\n", retry_ms);
        ini = rdt_write_ini(s, 0, iniextra);
        if (ini == NULL) {
            fail("cannot write ini");
            return -1;
        }
        snprintf(inipath, isz, "%s", ini);
    } else if (kind == K_SKETCH) {
        snprintf(lockname, lsz, "bench:{sketch%d}", run_no);
    } else {
        snprintf(lockname, lsz, "bench:naive:%d", run_no);
    }
    return 0;
}

/* One run of kind: NPROC children x SECTIONS sections, checked and
 * measured.  0, or -1 on a hard error (printed). */
static int contended_once(const rdt_server_t *s, int kind, int retry_ms, int run_no, cont_run_t *res)
{
    char lockname[64], counter[64], inipath[400] = "";
    cont_recs_t k = { NULL, NULL, 0, INT64_MAX, 0, 0 };
    cont_args_t a = { s, kind, inipath, lockname, counter };
    children_t ch;
    redisContext *c;
    int ok = -1;

    k.all = calloc(NPROC * SECTIONS, sizeof *k.all);
    k.lat = calloc(NPROC * SECTIONS, sizeof *k.lat);
    c = rdt_connect(s);
    memset(res, 0, sizeof *res);
    if (k.all == NULL || k.lat == NULL || c == NULL) {
        fail("contended setup failed");
        goto out;
    }
    snprintf(counter, sizeof counter, "bench:counter:%d", run_no);
    freeReplyObject(cmd(c, "SET %s 0", counter));
    if (cont_names(s, kind, retry_ms, run_no, lockname, sizeof lockname, inipath, sizeof inipath) != 0 ||
        (ok = children_start(&ch, c, child_run, &a)) < 0)
        goto out;
    if (!cont_collect(&ch, kind, &k))
        ok = 0;
    res->counter = get_int(c, counter);
    if (res->counter != NPROC * SECTIONS) {
        fail("MUTUAL EXCLUSION VIOLATED (%s): counter = %lld after %d sections",
             kind == K_RDLOCK ? "rdlock" : kind == K_SKETCH ? "sketch" : "naive lock", res->counter,
             NPROC * SECTIONS);
        ok = 0;
    }
    if (k.nall > 0 && k.end > k.start && cont_analyse(&k, kind, retry_ms, run_no, res) != 0)
        ok = 0;
    /* The lock and counter keys are left; each run uses fresh names. */
out:
    if (c != NULL)
        redisFree(c);
    free(k.all);
    free(k.lat);
    return ok == 1 ? 0 : -1;
}

/* One configuration's medians over its creps runs (worst: the largest
 * max of any run; slow: a total). */
static void cont_medians(const cont_run_t *runs, int creps, cont_res_t *r)
{
    double v[16];
    int i;
#define MED(field, dst)                   \
    do {                                  \
        for (i = 0; i < creps; i++)       \
            v[i] = runs[i].field;         \
        r->dst = median(v, creps);        \
    } while (0)
    MED(secs_per_s, secs_per_s);
    MED(p50_ms, p50_ms);
    MED(p99_ms, p99_ms);
    MED(max_ms, max_ms);
    MED(handoffs, handoffs);
    MED(attempts_per_section, attempts);
    MED(gap_p50_ms, gap_p50_ms);
    MED(gap_max_ms, gap_max_ms);
    MED(worst_overtaken, worst_overtaken);
    MED(regrabs, regrabs);
    MED(unfifo, unfifo);
    for (i = 0; i < creps; i++)
        v[i] = runs[i].slow;
    r->slow = 0;
    for (i = 0; i < creps; i++)
        r->slow += v[i]; /* a total over the repetitions */
#undef MED
    for (i = 0; i < creps; i++)
        v[i] = runs[i].max_ms;
    r->max_worst_ms = maxd(v, creps);
    r->counter_ok = r->fencing_ok = 1;
    for (i = 0; i < creps; i++) {
        if (runs[i].counter != NPROC * SECTIONS)
            r->counter_ok = 0;
        if (!runs[i].fencing_ok)
            r->fencing_ok = 0;
    }
}

void bench_contended(const rdt_server_t *s, int creps, cont_res_t cres[4])
{
    cont_run_t runs[4][16];
    int run_no = 0, i, k;

    for (i = 0; i < creps; i++)
        for (k = 0; k < 4; k++)
            contended_once(s, k == 2 ? K_NAIVE : k == 3 ? K_SKETCH : K_RDLOCK, k == 1 ? 1000 : 100, run_no++,
                           &runs[k][i]);
    for (k = 0; k < 4; k++)
        cont_medians(runs[k], creps, &cres[k]);
}

static const char *const clabel[4] = { "rdlock, retry_interval_ms=100", "rdlock, retry_interval_ms=1000",
                                       "naive SET NX + 1 ms sleep", "sketch: BLPOP hand-over" };

/* The JSON keys of step 3, "<configuration>_<figure>". */
static void cont_json(const cont_res_t *cres)
{
    static const char *const cname[4] = { "contended_r100", "contended_r1000", "naive", "sketch_blpop" };
    char key[128];
    int k;

    for (k = 0; k < 4; k++) {
#define J(suffix, val)                                              \
    do {                                                            \
        snprintf(key, sizeof key, "%s_%s", cname[k], suffix);       \
        json_num(key, val);                                         \
    } while (0)
        J("sections_per_s", rnd(cres[k].secs_per_s));
        J("lat_p50_ms", cres[k].p50_ms);
        J("lat_p99_ms", cres[k].p99_ms);
        J("lat_max_ms", cres[k].max_ms);
        J("lat_max_worst_ms", cres[k].max_worst_ms);
        J("handoffs", cres[k].handoffs);
        if (k == 2)
            J("attempts_per_section", cres[k].attempts);
        J("handoff_gap_p50_ms", cres[k].gap_p50_ms);
        J("handoff_gap_max_ms", cres[k].gap_max_ms);
        J("slowest_acquire_overtaken", cres[k].worst_overtaken);
        J("acquires_over_50ms_total", cres[k].slow);
        J("regrabs", cres[k].regrabs);
        J("non_fifo_grants", cres[k].unfifo);
#undef J
        snprintf(key, sizeof key, "%s_counter_ok", cname[k]);
        json_bool(key, cres[k].counter_ok);
        if (k == 3) {
            snprintf(key, sizeof key, "%s_vs_naive", cname[k]);
            json_num(key, cres[k].secs_per_s / cres[2].secs_per_s);
        }
        if (k < 2) {
            snprintf(key, sizeof key, "%s_fencing_order_ok", cname[k]);
            json_bool(key, cres[k].fencing_ok);
            snprintf(key, sizeof key, "%s_vs_naive", cname[k]);
            json_num(key, cres[k].secs_per_s / cres[2].secs_per_s);
        }
    }
}

/* The diagnostics table of step 3 and the targets of the rdlock runs. */
static void cont_diagnostics(const cont_res_t *cres, tally_t *t)
{
    int k;

    out("   diagnostics: hand-off gap = unlock called -> next process holds; overtaken = sections\n"
        "   run by other processes while the slowest acquire waited\n");
    out("   re-grabs = the previous holder took it again while another process waited; non-FIFO =\n"
        "   sections granted while a process that had called lock earlier was still waiting\n");
    out("   %-31s %10s %10s %9s %8s %8s %8s\n", "", "gap p50 ms", "gap max ms", "overtaken", ">=50ms", "re-grabs",
        "non-FIFO");
    for (k = 0; k < 4; k++)
        out("   %-31s %10.3f %10.2f %9.0f %8.0f %8.0f %8.0f\n", clabel[k], cres[k].gap_p50_ms, cres[k].gap_max_ms,
            cres[k].worst_overtaken, cres[k].slow, cres[k].regrabs, cres[k].unfifo);
    out("   (>=50ms: total over all repetitions; the rest: medians)\n");
    out("   targets (rdlock runs): max acquire latency <= 10 ms, hand-offs >= %d, sections/s >= naive's\n",
        NPROC * SECTIONS / 2);
    for (k = 0; k < 2; k++) {
        int a = cres[k].max_ms <= 10.0, b = cres[k].handoffs >= NPROC * SECTIONS / 2,
            d = cres[k].secs_per_s >= cres[2].secs_per_s;
        out("   %-31s latency %s, hand-offs %s, throughput %s (%.2fx naive)\n", clabel[k], mark(a), mark(b),
            mark(d), cres[k].secs_per_s / cres[2].secs_per_s);
        t->targets += 3;
        t->met += a + b + d;
    }
}

void report_contended(const cont_res_t *cres, tally_t *t)
{
    int k;

    out("3. contended: %d processes x %d sections on one lock (GET + SET of a counter inside)\n", NPROC,
        SECTIONS);
    out("   %-31s %9s %8s %8s %8s %9s %9s %8s\n", "", "sect/s", "p50 ms", "p99 ms", "max ms", "worst ms",
        "hand-offs", "counter");
    for (k = 0; k < 4; k++)
        out("   %-31s %9.0f %8.2f %8.2f %8.2f %9.2f %9.0f %8s\n", clabel[k], cres[k].secs_per_s,
            cres[k].p50_ms, cres[k].p99_ms, cres[k].max_ms, cres[k].max_worst_ms, cres[k].handoffs,
            cres[k].counter_ok ? "2000 ok" : "WRONG");
    out("   (max ms: median over repetitions of each run's maximum; worst ms: the largest of them;\n"
        "    naive: %.1f SET NX attempts per section; sketch: no lock of this library, a FIFO whose\n"
        "    release pushes the grant to the head waiter's BLPOP: %.2fx naive, what a hand-over\n"
        "    without pub/sub, thread hop or claim could reach here; bench/README.md)\n",
        cres[2].attempts, cres[3].secs_per_s / cres[2].secs_per_s);
    cont_diagnostics(cres, t);
    out("\n");
    cont_json(cres);
}
