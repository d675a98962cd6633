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


int quick, json_only;
int cold_script_cache;

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
    int nwd = 0, i, reps, creps;
    tally_t tally = { 0, 0 };
    char ver[64], mode[32];
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
        phase = "condition/semaphore";
        bench_prims(&srv, reps, &prres);
        report_prims(&prres, &tally);
    }

tls_step:
    /* 10: TLS (built with TLS; skipped with --no-tls) */
    if (with_tls)
        run_tls(&srv, reps, tls_only ? NULL : &base);

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
