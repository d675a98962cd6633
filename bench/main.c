/* main.c - rdlock-bench: performance figures for librdlock against a
 * private redis-server (tests/fixture.c).  See bench/README.md.
 *
 *   rdlock-bench [--quick] [--json-only] [--cold-script-cache] [--cluster] [--no-redlock] [--no-prims]
 *                [--no-tls] [--no-million] [--watchdog-only] [--tls-only] [--cost-only] [--no-names]
 *
 *   --quick              fewer repetitions, 10,000 watchdog holds only
 *   --no-million         step 4 without its 1,000,000-hold run (~3 min)
 *   --watchdog-only      only step 4 (and its warm-up)
 *   --cluster            also step 7 (starts a 3-master cluster, ~10 s)
 *   --no-redlock         skip step 8 (five more redis-servers)
 *   --no-prims           skip step 9 (condition variable, semaphore)
 *   --no-tls             skip step 10 (TLS; only built with TLS)
 *   --tls-only           only step 10
 *   --cost-only          only steps 11 and 12 (12 not with --no-names)
 *   --no-names           skip step 12 (100,000 names and a 60 s wait)
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
 *      over plain TCP, the four interleaved (bench/tls.c);
 *  11. server cost: server time (INFO commandstats) per uncontended
 *      mutex pair and read-share pair, as a ratio to redis-py's Lock done
 *      in C (SET NX PX + EVALSHA of its release script), interleaved;
 *  12. (not with --no-names) 100,000 distinct names used once, then the
 *      server's key count and memory, and how long until the keys are
 *      gone again (at most one per Cluster slot may stay).
 * The machine is noisy: every figure is the median of several repetitions
 * and ratios are taken to the floor measured in the same run, interleaved
 * with the measurement.  A human-readable table goes to stdout, then ONE
 * line of JSON with every figure.  Exit status: 0, or 1 on a hard error
 * (mutual exclusion violated, a reader saw a half-written value, a lock
 * call failed, a child crashed, fencing tokens out of order); missed
 * performance targets are reported, not fatal.
 *
 * This file: the options, the order of the steps, the summary and the
 * JSON line.  Each step is a file of its own (step_*.c; 10 measures in
 * tls.c), what they share is in bench.h (output.c, stats.c, server.c,
 * procs.c, handles.c; threads.c for steps 6 and 7). */
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int quick, json_only;
int cold_script_cache;

/* The options besides quick, json_only and cold_script_cache. */
typedef struct opts {
    int with_cluster, with_redlock, with_prims, with_million, watchdog_only;
    int with_tls, tls_only;
    int cost_only, with_names;
} opts_t;

/* What the steps found; main keeps it because some steps print after
 * others (5a, 5b after 4) or next to another's figures (7, 10). */
typedef struct results {
    base_res_t base;
    cont_res_t cres[4];
    rw_res_t rwres;
    wd_res_t wres[3];
    int nwd;
    mt_res_t mres;
    cl_res_t clres;
    rl_res_t rlres;
    pr_res_t prres;
    cost_res_t cost;
    names_res_t names;
} results_t;

static void usage(void)
{
    fprintf(stderr, "usage: rdlock-bench [--quick] [--json-only] [--cold-script-cache] [--cluster] [--no-redlock] [--no-prims]\n"
                    "                    [--no-tls] [--no-million] [--watchdog-only] [--tls-only] [--cost-only]\n"
                    "                    [--no-names]\n");
}

/* The command line into the globals and o.  -1 to go on, or the exit
 * status: 0 after --help, 64 for a bad or contradictory option. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    int i;

    o->with_cluster = 0, o->with_redlock = 1, o->with_prims = 1, o->with_million = 1, o->watchdog_only = 0;
    o->with_tls = 1, o->tls_only = 0;
    o->cost_only = 0, o->with_names = 1;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--json-only") == 0)
            json_only = 1;
        else if (strcmp(argv[i], "--cold-script-cache") == 0)
            cold_script_cache = 1;
        else if (strcmp(argv[i], "--cluster") == 0)
            o->with_cluster = 1;
        else if (strcmp(argv[i], "--no-redlock") == 0)
            o->with_redlock = 0;
        else if (strcmp(argv[i], "--no-prims") == 0)
            o->with_prims = 0;
        else if (strcmp(argv[i], "--no-tls") == 0)
            o->with_tls = 0;
        else if (strcmp(argv[i], "--no-million") == 0)
            o->with_million = 0;
        else if (strcmp(argv[i], "--watchdog-only") == 0)
            o->watchdog_only = 1;
        else if (strcmp(argv[i], "--tls-only") == 0)
            o->tls_only = 1;
        else if (strcmp(argv[i], "--cost-only") == 0)
            o->cost_only = 1;
        else if (strcmp(argv[i], "--no-names") == 0)
            o->with_names = 0;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else {
            usage();
            return 64;
        }
    }
    if (o->watchdog_only + o->tls_only + o->cost_only > 1) {
        fprintf(stderr, "rdlock-bench: --watchdog-only, --tls-only and --cost-only exclude each other\n");
        return 64;
    }
    if (o->tls_only && !o->with_tls) {
        fprintf(stderr, "rdlock-bench: --tls-only and --no-tls exclude each other\n");
        return 64;
    }
    return -1;
}

/* Contended repetitions (step 3, and 5b's runs). */
static int contended_reps(void)
{
    int creps = quick ? 1 : 3;
    if (getenv("RDLOCK_BENCH_CREPS") != NULL) {
        /* more contended repetitions, for investigations */
        creps = atoi(getenv("RDLOCK_BENCH_CREPS"));
        if (creps < 1 || creps > 16)
            creps = creps < 1 ? 1 : 16;
    }
    return creps;
}

/* The first two lines, and the JSON keys that say how the bench ran.
 * 0, or -1 if the server does not answer. */
static int header(const rdt_server_t *srv, const opts_t *o, int reps, int creps)
{
    redisContext *c = rdt_connect(srv);
    char ver[64];

    if (c == NULL)
        return -1;
    info_field(c, "server", "redis_version", ver, sizeof ver);
    redisFree(c);
    out("rdlock-bench: librdlock %s, redis-server %s (pid %ld, port %d), %ld CPUs, %s mode\n",
        rdlock_version(), ver, (long)srv->pid, srv->port, sysconf(_SC_NPROCESSORS_ONLN), quick ? "quick" : "full");
    out("every figure is the median of %d repetitions (contended: %d) unless noted\n\n", reps, creps);
    json_str("librdlock_version", rdlock_version());
    json_str("redis_version", ver);
    json_num("cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
    json_bool("quick", quick);
    json_bool("cold_script_cache", cold_script_cache);
    json_bool("cluster", o->with_cluster);
    json_bool("redlock", o->with_redlock);
    json_bool("prims", o->with_prims);
#ifdef RDL_HAVE_TLS
    json_bool("tls", o->with_tls);
#else
    json_bool("tls", 0);
#endif
    json_num("reps", reps);
    json_num("contended_reps", creps);
    json_bool("million", !quick && o->with_million);
    json_bool("watchdog_only", o->watchdog_only);
    json_bool("tls_only", o->tls_only);
    json_bool("cost_only", o->cost_only);
    json_bool("names", o->with_names);
    return 0;
}

/* Steps 1, 2 and 3, and step 5b's measurement: after the mutex workload,
 * before the watchdog's long idle wait (it is printed after step 4). */
static void run_first_steps(const rdt_server_t *srv, int reps, int creps, results_t *r, tally_t *t)
{
    /* 1 + 2 */
    phase = "floor/uncontended";
    bench_base(srv, reps, &r->base);
    report_base(&r->base, t);

    /* 3: repetitions interleaved over the three configurations. */
    phase = "contended";
    bench_contended(srv, creps, r->cres);
    report_contended(r->cres, t);

    /* 5b */
    phase = "rwlock mixed";
    bench_rw_mixed(srv, creps, &r->rwres);
}

/* Steps 11 and 12 (not with --no-names). */
static void run_cost_steps(const rdt_server_t *srv, const opts_t *o, int reps, results_t *r)
{
    phase = "server cost";
    bench_cost(srv, reps, &r->cost);
    report_cost(&r->cost);
    if (!o->with_names)
        return;
    phase = "names";
    bench_names(&r->names);
    report_names(&r->names);
}

/* Steps 5 (printed), 6 to 12, as the options say. */
static void run_last_steps(const rdt_server_t *srv, const opts_t *o, int reps, int creps, results_t *r,
                           tally_t *t)
{
    /* 5: read-write lock */
    report_rw_base(&r->base, t);
    report_rw_mixed(&r->rwres, creps, t);

    /* 6: many threads, distinct names, one server */
    phase = "many threads";
    bench_mt(srv, reps, &r->mres);
    report_mt(&r->mres, t);

    /* 7: the same on a 3-master cluster (--cluster) */
    if (o->with_cluster) {
        phase = "cluster";
        bench_cluster(reps, &r->clres);
        report_cluster(&r->clres, &r->mres, t);
    }

    /* 8: Redlock (skipped with --no-redlock) */
    if (o->with_redlock) {
        phase = "redlock";
        bench_redlock(reps, &r->rlres);
        report_redlock(&r->rlres, t);
    }

    /* 9: condition variable and semaphore (skipped with --no-prims) */
    if (o->with_prims) {
        phase = "condition/semaphore";
        bench_prims(srv, reps, &r->prres);
        report_prims(&r->prres, t);
    }

    /* 10: TLS (built with TLS; skipped with --no-tls) */
    if (o->with_tls)
        run_tls(srv, reps, &r->base);

    /* 11, 12: server cost, names used once */
    run_cost_steps(srv, o, reps, r);
}

/* The steps in their order: all of them, or step 4 alone
 * (--watchdog-only), or step 10 alone (--tls-only), or steps 11 and 12
 * alone (--cost-only). */
static void run_steps(const rdt_server_t *srv, const opts_t *o, int reps, int creps, results_t *r, tally_t *t)
{
    if (o->tls_only) {
        run_tls(srv, reps, NULL);
        return;
    }
    if (o->cost_only) {
        run_cost_steps(srv, o, reps, r);
        return;
    }
    if (!o->watchdog_only)
        run_first_steps(srv, reps, creps, r, t);

    /* 4: acquires/s estimate from the uncontended run (--watchdog-only:
     * from 1,000 pairs of its own) */
    r->nwd = bench_watchdog_sizes(srv, (o->watchdog_only ? wd_pair_rate(srv) : r->base.unc_tcp) * 2,
                                  quick ? 1 : o->with_million ? 3 : 2, r->wres);
    report_watchdog(r->wres, r->nwd, t);
    if (!o->watchdog_only)
        run_last_steps(srv, o, reps, creps, r, t);
}

/* The summary line and its JSON keys. */
static void summary(const tally_t *t, double t_start)
{
    char mode[32];

    snprintf(mode, sizeof mode, "%d/%d", t->met, t->targets);
    out("\ntargets met: %s; hard errors: %d; library warnings logged: %d; %.0f s\n", mode, hard_errors,
        lib_warnings, now_s() - t_start);
    json_num("targets_met", t->met);
    json_num("targets_total", t->targets);
    json_num("hard_errors", hard_errors);
    json_num("library_warnings", lib_warnings);
    json_num("elapsed_s", rnd(now_s() - t_start));
}

int main(int argc, char **argv)
{
    rdt_server_t srv;
    opts_t o;
    results_t r;
    tally_t tally = { 0, 0 };
    int reps, creps, rc;
    double t_start = now_s();

    if ((rc = parse_args(argc, argv, &o)) >= 0)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    log_verbose = getenv("RDLOCK_BENCH_DEBUG") != NULL && *getenv("RDLOCK_BENCH_DEBUG") != '\0';
    rdlock_set_logger(logger, NULL);
    reps = quick ? 3 : 5;
    creps = contended_reps();
    json_begin();

    if (rdt_server_start(&srv, NULL, NULL) != 0) {
        fprintf(stderr, "rdlock-bench: cannot start redis-server\n");
        return 1;
    }
    if (header(&srv, &o, reps, creps) != 0) {
        rdt_server_stop(&srv);
        return 1;
    }
    run_steps(&srv, &o, reps, creps, &r, &tally);
    summary(&tally, t_start);
    rdt_server_stop(&srv);
    json_print();
    return hard_errors ? 1 : 0;
}
