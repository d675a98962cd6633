/* bench.h - what the files of rdlock-bench share: the options every step
 * reads, the output (table lines, the JSON line, hard errors), clocks and
 * order statistics, plain hiredis helpers, the lock handles on dedicated
 * clients, and child processes.  See bench/README.md for what each step
 * measures; main.c runs them in order. */
#ifndef RDB_BENCH_H
#define RDB_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "rdl_build.h"
#include "../tests/fixture.h" /* Makefile.am gives no -I tests */
#include "rdlock.h"

/* ---------------------------------------------------------------- options (main.c) */

extern int quick;             /* --quick: fewer repetitions, smaller samples */
extern int json_only;         /* --json-only: out() prints nothing */
extern int cold_script_cache; /* --cold-script-cache: step 4 without the renew warm-up */

/* ---------------------------------------------------------------- output (output.c) */

extern int hard_errors;  /* fail() calls: the exit status is 1 if any */
extern int lib_warnings; /* WARN/ERROR lines the library logged */
extern int log_verbose;  /* $RDLOCK_BENCH_DEBUG: also INFO and DEBUG lines */
extern const char *phase; /* the step running, in the library's log lines */

/* The JSON line: json_begin() once, then one key after another (in the
 * order they are added), json_print() at the end. */
void json_begin(void);
void json_num(const char *key, double v);
void json_bool(const char *key, int v);
void json_str(const char *key, const char *v);
void json_print(void);

/* A table line on stdout (not with --json-only). */
void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A hard error: on stderr, and counted in hard_errors. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The library's log lines (rdlock_set_logger). */
void logger(int level, const char *msg, void *arg);
/* "ok" or "MISSED", for a target. */
const char *mark(int ok);

/* The performance targets: how many were judged, how many met. */
typedef struct tally {
    int targets, met;
} tally_t;

/* ---------------------------------------------------------------- clocks and statistics (stats.c) */

/* No libm: Makefile.am links the bench without -lm. */
double rnd(double x);
double ceil_d(double x);

int64_t now_ns(void); /* CLOCK_MONOTONIC, which all processes share */
double now_s(void);
void sleep_us(long us);

int cmp_double(const void *a, const void *b);
int cmp_i64(const void *a, const void *b);
/* Median of v[0..n-1] (v is left as it is); NAN if n <= 0. */
double median(const double *v, int n);
/* The largest of v[0..n-1]; NANs are passed over. */
double maxd(const double *v, int n);
/* Nearest-rank percentile of a sorted array. */
int64_t pct(const int64_t *sorted, size_t n, double p);
/* Sort v (ns) and give its p50, p99 and max in ms; NAN if n == 0. */
void lat_stats(int64_t *v, size_t n, double *p50, double *p99, double *mx);

/* ---------------------------------------------------------------- plain hiredis (server.c) */

/* A command; NULL is a hard error (printed). */
redisReply *cmd(redisContext *c, const char *fmt, ...);
/* GET key as an integer: 0 if it does not exist, -1 on error. */
long long get_int(redisContext *c, const char *key);
/* Server time in ms (TIME), or -1. */
long long server_ms(redisContext *c);
/* cmdstat_<name> calls and usec from INFO commandstats; 0 or -1. */
int cmd_stats(redisContext *c, const char *name, long long *calls, long long *usec);
int evalsha_stats(redisContext *c, long long *calls, long long *usec);
/* INFO <section>'s field, as text ("?" if absent). */
void info_field(redisContext *c, const char *section, const char *field, char *buf, size_t n);
/* SCRIPT LOAD of "return 1" into sha ("" on error). */
void load_noop_script(redisContext *c, char *sha, size_t n);
/* n PING round trips: round trips/s, or NAN (a hard error, printed). */
double ping_rate(redisContext *c, int n);
/* n EVALSHA of the do-nothing script sha: round trips/s, or NAN. */
double evalsha_rate(redisContext *c, const char *sha, int n);

/* The totals of INFO commandstats, less the INFO calls themselves.
 * all_*: every entry, the redis.call()s made inside scripts included;
 * since a script's usec already holds its redis.call()s' time, all_usec
 * counts that time twice.  top_*: the commands a client sends, the ones
 * the server's time and round trips are made of: the script runners
 * (EVAL, EVALSHA, their _RO forms, FCALL, FCALL_RO) and the command
 * named top (e.g. "set"; NULL for none), which the caller knows it sent
 * itself and no script of the workload calls. */
typedef struct cmd_totals {
    long long all_calls, all_usec;
    long long top_calls, top_usec;
} cmd_totals_t;

/* One INFO commandstats into t; 0, or -1 (a hard error, printed). */
int cmd_totals(redisContext *c, const char *top, cmd_totals_t *t);

/* One server's connection counts and the library's round trips. */
typedef struct srv_counts {
    long long conns, clients; /* total_connections_received, connected_clients */
    long long evalsha;        /* cmdstat_evalsha calls: the library's round trips */
} srv_counts_t;

void srv_counts(redisContext *c, srv_counts_t *k);

/* ---------------------------------------------------------------- processes (procs.c) */

#define NPROC 4           /* contending processes (steps 3 and 5b) */
#define CHILD_ALARM_S 300 /* a hung child is killed, and is a hard error */

int write_all(int fd, const void *buf, size_t n);
/* Read up to n bytes (until EOF); returns bytes read or -1. */
ssize_t read_all(int fd, void *buf, size_t n);

/* A child's work: it runs in the forked process, with the start
 * barrier's ends (children_barrier) and the write end of its result
 * pipe; it reports there and _exit()s, never returns. */
typedef void (*child_fn_t)(int idx, int ready_fd, int go_fd, int res_fd, void *arg);

typedef struct children {
    pid_t pid[NPROC];
    int res[NPROC]; /* the read end of each child's result pipe */
    int n;          /* children started */
} children_t;

/* Fork NPROC children running fn(idx, ..., arg), wait until each is set
 * up (or failed before the barrier), then let them all go at once.  The
 * parent's connection is freed in each child.  1, or 0 if something
 * failed (printed; the children started run anyway and must be read and
 * reaped), or -1 if the barrier's pipes could not be made (no child). */
int children_start(children_t *ch, redisContext *parent, child_fn_t fn, void *arg);
/* The child's side of the barrier: ready, then wait for go; 0 or -1. */
int children_barrier(int ready_fd, int go_fd);
/* Close child p's pipe and wait for it: 0 if it exited with 0; else -1,
 * and a hard error "<what> <p> killed by signal ..." if it was killed. */
int children_reap(children_t *ch, int p, const char *what);

/* CPU time in us: this process, its reaped children (redis-benchmark),
 * and the given server processes (/proc/PID/stat utime + stime, in clock
 * ticks: 10 ms at 100 Hz, so only runs of a second or more are meant). */
typedef struct cpu_snap {
    double self_us, children_us, server_us;
} cpu_snap_t;

void cpu_snap(cpu_snap_t *c, const pid_t *servers, int nservers);

/* ---------------------------------------------------------------- lock handles (handles.c) */

/* A lock on a dedicated client (rdlock_attr_setclient). */
typedef struct ulock {
    rdlock_client_t *client;
    rdlock_attr_t attr;
    rdlock_t m;
    int ok;
} ulock_t;

/* ... opened on ini; 0 or -1 (printed). */
int ulock_open_ini(ulock_t *u, const char *ini, const char *name);
/* ... on an ini for s (TCP, or its unix socket) with a 30 s lease. */
int ulock_open(ulock_t *u, const rdt_server_t *s, int use_socket, const char *name);
void ulock_close(ulock_t *u);
/* n rdlock_lock + rdlock_unlock: pairs/s, or NAN (a hard error, printed). */
double pair_rate(ulock_t *u, int n);

/* A read-write lock on a dedicated client, as ulock_t. */
typedef struct rwl {
    rdlock_client_t *client;
    rdlock_attr_t attr;
    rdrwlock_t rw;
    int ok;
} rwl_t;

/* ... opened on an ini for s (TCP, or its unix socket) with a 30 s lease;
 * 0 or -1 (printed). */
int rwl_open(rwl_t *u, const rdt_server_t *s, int use_socket, const char *name);
void rwl_close(rwl_t *u);
/* n rdrwlock_rdlock (mode 's') or rdrwlock_wrlock ('x') + rdrwlock_unlock:
 * pairs/s, or NAN (a hard error, printed). */
double rw_pair_rate(rwl_t *u, char mode, int n);

/* ================================================================ the steps */

/* ---------------------------------------------------------------- 1, 2, 5a (step_uncontended.c) */

/* Step 5a results.  [0] tcp, [1] unix socket. */
typedef struct rw_base {
    double floor[2];              /* PING rt/s, interleaved with the rw pairs */
    double script_floor[2];       /* do-nothing EVALSHA rt/s, likewise */
    double rd[2], wr[2];          /* pairs/s */
    double rd_ratio[2], wr_ratio[2];               /* to floor/2 */
    double rd_script_ratio[2], wr_script_ratio[2]; /* to script_floor/2 */
    double srv_us_rd, srv_us_wr;  /* tcp: server time inside EVALSHA per pair */
} rw_base_t;

typedef struct base_res {
    double floor_tcp, floor_unix, unc_tcp, unc_unix;
    double ratio_tcp, ratio_unix;
    rw_base_t rw;
    double evalsha_tcp;     /* diagnostic: trivial EVALSHA round trips/s */
    double srv_us_per_pair; /* diagnostic: server time inside EVALSHA per lock+unlock */
    double srv_us_acquire, srv_us_release; /* diagnostic: per script, median (INFO commandstats) */
    double srv_us_per_lua_call;            /* diagnostic: one redis.call() from Lua */
} base_res_t;

/* Steps 1, 2 and 5a, against s; 0 or -1 (printed). */
int bench_base(const rdt_server_t *s, int reps, base_res_t *res);
/* The table and JSON keys of steps 1 and 2 ... */
void report_base(const base_res_t *b, tally_t *t);
/* ... and of step 5a (after step 4's, before step 5b's). */
void report_rw_base(const base_res_t *b, tally_t *t);

/* ---------------------------------------------------------------- 3 (step_contended.c) */

/* One configuration of step 3 (rdlock with retry_interval_ms 100, 1000,
 * the naive lock, the sketch): medians over the runs. */
typedef struct cont_res {
    double secs_per_s, p50_ms, p99_ms, max_ms, max_worst_ms, handoffs, attempts;
    double gap_p50_ms, gap_max_ms, worst_overtaken, slow, regrabs, unfifo;
    int counter_ok, fencing_ok;
} cont_res_t;

/* creps runs of the four configurations, interleaved; cres[4]. */
void bench_contended(const rdt_server_t *s, int creps, cont_res_t cres[4]);
void report_contended(const cont_res_t *cres, tally_t *t);

/* ---------------------------------------------------------------- 5b (step_rw_mixed.c) */

/* Step 5b: medians over the runs (worst: the largest max of any run). */
typedef struct rw_res {
    double secs_per_s, rd_p50_ms, rd_p99_ms, rd_max_ms, rd_worst_ms, wr_p50_ms, wr_p99_ms, wr_max_ms, wr_worst_ms;
    double max_readers, mean_readers, overtook;
    long long reads, writes;
    long long torn, overlaps; /* totals over the runs; must be 0 */
    int counter_ok, fencing_ok, ok;
} rw_res_t;

/* creps runs of the mixed workload (measured after step 3). */
void bench_rw_mixed(const rdt_server_t *s, int creps, rw_res_t *res);
/* Its table and JSON keys (after step 5a's). */
void report_rw_mixed(const rw_res_t *r, int creps, tally_t *t);

/* ---------------------------------------------------------------- 4 (step_watchdog.c) */

/* One size of step 4. */
typedef struct wd_res {
    int n;
    unsigned interval_ms, lease_ms;
    double acquire_per_s, release_per_s;
    long long calls;        /* EVALSHA calls during the cycle */
    double locks_per_call;
    double cycle_ms;        /* wall clock, observed by polling the server */
    double cycle_server_ms; /* from the renewed deadlines (server TIME) */
    double server_exec_ms;  /* cmdstat_evalsha usec delta */
    long long renewed;
    int rounds;             /* bursts of renewals (1 = one cycle covered all) */
    int ok;
    /* The client's memory per held lock (bytes): RSS growth over the
     * rdlock_init loop (the handles), over the rdlock_trylock loop (the
     * holds) and both; the same in malloc'd bytes (glibc's mallinfo2, a
     * diagnostic: no page rounding, no fragmentation); and the peak RSS
     * (VmHWM) growth over the phase up to the end of the renewal cycle,
     * which includes the round's own buffers.  NAN where unavailable. */
    double rss_handle_b, rss_hold_b, rss_lock_b;
    double heap_handle_b, heap_hold_b;
    double peak_lock_b;
} wd_res_t;

/* --watchdog-only: uncontended lock+unlock pairs/s of 1,000 pairs on a
 * dedicated client, the acquire rate estimate that step 2 gives
 * otherwise. */
double wd_pair_rate(const rdt_server_t *s);
/* Step 4: the renew script warmed up (unless --cold-script-cache), then
 * the first nsizes of N = 10,000, 100,000, 1,000,000, the interval of
 * each sized to 3 x the time its acquisitions should take (from rate
 * acquires/s, then from the sizes before).  The interval must let one
 * renewal round cover every hold: the watchdog renews what is due within
 * half an interval, so the holds must be taken within interval/2.
 * Returns the number of sizes run (wres[0 ..]). */
int bench_watchdog_sizes(const rdt_server_t *s, double rate, int nsizes, wd_res_t wres[3]);
void report_watchdog(const wd_res_t *wres, int nwd, tally_t *t);

/* ---------------------------------------------------------------- 6 and 7 (step_threads.c, step_cluster.c) */

/* The figures of one repetition (and their medians): a floor run, then a
 * lock run, against n_srv servers. */
enum {
    F_FLOOR,   /* redis-benchmark SET ops/s */
    F_PAIRS,   /* aggregate lock+unlock pairs/s */
    F_RATIO,   /* pairs/s / (floor / 2) */
    F_CONNS,   /* connections the servers accepted during the lock run */
    F_RT,      /* EVALSHA calls per pair (the library's round trips) */
    F_CPU_CL,  /* CPU us per pair: this process (the 32 threads and the library) */
    F_CPU_SRV, /* CPU us per pair: the servers */
    F_CPU_RB,  /* CPU us per SET: redis-benchmark */
    F_CPU_RBS, /* CPU us per SET: the servers */
    F_SHARE0,  /* the first server's share of the EVALSHA calls, ... */
    F_N = F_SHARE0 + 3
};

typedef struct mt_fig {
    double v[F_N];  /* medians over the repetitions */
    double ratio_lo, ratio_hi; /* the smallest and largest ratio of a repetition */
    double clients; /* connections the workload keeps open (connected_clients after its warm-up) */
} mt_fig_t;

/* Step 6 results.  fig[0] one client per thread, fig[1] one shared client. */
typedef struct mt_res {
    mt_fig_t fig[2];
    double floor; /* median of all floor runs */
    long n_pairs; /* per thread per run */
    int ok;
} mt_res_t;

/* Step 7 results. */
typedef struct cl_res {
    mt_fig_t fig;
    double start_s; /* time to start the cluster and see it ready */
    int names[3];   /* names per master */
    long n_pairs;
    int ok;
} cl_res_t;

/* Step 6: in each repetition floor, (a), floor, (b); 0 or -1. */
int bench_mt(const rdt_server_t *s, int reps, mt_res_t *res);
void report_mt(const mt_res_t *mres, tally_t *t);
/* Step 7 (--cluster): step 6b on a 3-master cluster of its own; 0 or -1. */
int bench_cluster(int reps, cl_res_t *res);
/* Its table and keys, with step 6b's figures (mres) to compare. */
void report_cluster(const cl_res_t *clres, const mt_res_t *mres, tally_t *t);

/* ---------------------------------------------------------------- 8 (step_redlock.c) */

/* Step 8's workloads: one master, quorums of 3 and 5, 5 with 2 stopped. */
enum { RL_SINGLE, RL_N3, RL_N5, RL_STOP, RL_NCONF };

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

/* Step 8 (not with --no-redlock): five redis-servers of its own; 0 or -1. */
int bench_redlock(int reps, rl_res_t *res);
void report_redlock(const rl_res_t *r, tally_t *t);

/* ---------------------------------------------------------------- 9 (step_prims.c) */

/* Step 9: a. the condition variable, b. the semaphore. */
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

/* Step 9 (not with --no-prims), on s; 0 or -1. */
int bench_prims(const rdt_server_t *s, int reps, pr_res_t *res);
void report_prims(const pr_res_t *r, tally_t *t);

/* ---------------------------------------------------------------- 10 (step_tls.c) */

/* Step 10 (not with --no-tls): bench_tls() and its table and keys, with
 * step 2's tcp ratio next to them unless base is NULL (--tls-only). */
void run_tls(const rdt_server_t *s, int reps, const base_res_t *base);

/* ---------------------------------------------------------------- 11 (step_cost.c) */

/* Step 11's workloads: redis-py's Lock in C, the mutex, the read share. */
enum { COST_PEER, COST_MUTEX, COST_READ, COST_NW };

typedef struct cost_res {
    int n;                     /* pairs of each workload per repetition */
    /* per pair, medians over the repetitions, [workload]: */
    double us[COST_NW];        /* server us of the commands sent (cmd_totals top_usec) */
    double cmds[COST_NW];      /* commands, the scripts' redis.call()s included */
    double rt[COST_NW];        /* commands sent: round trips */
    double all_us[COST_NW];    /* every commandstats entry's usec (the redis.call()s twice) */
    double ratio[COST_NW];     /* us / the peer's us, median of per-repetition ratios */
    double ratio_lo[COST_NW], ratio_hi[COST_NW];
    double script_us[COST_NW][2]; /* per call: acquire (the peer's SET), release; medians */
    double script_us_mean[COST_NW][2]; /* ... and means (Redis counts whole us per call) */
    int ok;
} cost_res_t;

/* Step 11 on s (the bench's server); 0 or -1 (printed). */
int bench_cost(const rdt_server_t *s, int reps, cost_res_t *res);
/* Its table and keys; the targets are shown, not judged (issue 26). */
void report_cost(const cost_res_t *c);

/* ---------------------------------------------------------------- 12 (step_names.c) */

typedef struct names_res {
    long n;                  /* distinct names, each used once */
    double pairs_per_s;      /* names used per second */
    long long keys_before, keys_after, keys_waited; /* DBSIZE; -1 on error */
    long long mem_before, mem_after, mem_waited;    /* used_memory; -1 on error */
    int slots;               /* distinct Cluster slots of the names: the keys allowed to stay */
    double wait_limit_s;     /* 60 (--quick: 5) */
    double back_s;           /* after the last unlock, until DBSIZE <= keys_before + slots; NAN: not back */
    char sample[128];        /* a key left after the wait ("" if none) */
    long long sample_pttl;   /* its PTTL */
    int ok;
} names_res_t;

/* Step 12 on a redis-server of its own; 0 or -1 (printed). */
int bench_names(names_res_t *res);
void report_names(const names_res_t *r);

#endif
