/* torture.c - fault-injection torture test for librdlock.
 *
 *   torture --scenario NAME [--procs N] [--threads M] [--seconds S]
 *           [--lease MS] [--short | --long] [--keep] [--verbose]
 *
 * Scenarios: baseline, kill, restart, restart-aof, pause, slow, cuts, stall,
 * cluster, redlock, cond, barrier, redlock-prims.
 *
 * The parent starts a private redis-server (tests/fixture.c), optionally a
 * TCP proxy on 127.0.0.1 (slow network, connection cuts, stalls), then forks N
 * worker processes of M threads.  Each worker opens its own client after the
 * fork.  The first half of the run is the mutex phase (name torture:m): every
 * section is a write section.  The second half is the rwlock phase (name
 * torture:rw, 80% readers).  Inside a write section a thread does a
 * non-atomic GET/SET increment of a per-phase Redis counter through its own
 * plain hiredis connection (direct to the server, not through the proxy).
 * Every section is appended as a fixed-size binary record (fencing token,
 * monotonic enter / exit / unlock-return times, pid, tid, unlock code) to a
 * per-process log in a temp dir.  The parent injects the scenario's fault
 * once in each phase, waits for everybody (bounded), then a checker reads
 * all logs and verifies:
 *
 *   - no two protected write sections overlap (protected = unlock gave 0);
 *     every overlap involves a section the library reported lost (ENOLCK);
 *   - no protected reader overlapped a protected writer;
 *   - fencing tokens strictly increase in entry order around every
 *     protected writer (restart without persistence: counted, not enforced);
 *   - counter == write sections, give or take one per reported-lost
 *     write section and one per overlap with one (not checked when a
 *     restart without persistence wiped it);
 *   - lost callbacks <= ENOLCK unlocks per process (no loss reported by the
 *     watchdog that unlock then called protected);
 *   - every return code is one docs/CONTRACT.md section 2 allows for that
 *     call (lock without fail_fast never returns EIO);
 *   - no worker crashed or hung (each is bounded by alarm());
 *   - scenario-specific bounds (kill: takeover within lease + retry +
 *     slack; pause: every section spanning the pause is reported lost;
 *     slow: no hold lost at all; restart: work continues after it).
 *
 * stall: the library's traffic goes through tests/tproxy.c, run in its own
 * process, which holds back the client->server bytes of a random
 * connection for a random time, up to ST_MAX at once, a new one every
 * 10-60 ms: one stall in three is shorter than command_timeout_ms (500
 * ms here: the request is only late), the others last 1.2 to 3 command
 * timeouts (the client gives up, closes the connection and retries on a
 * new one); then it delivers what it held, also when the client has
 * closed its side, so that the server runs requests their sender had
 * abandoned (docs/CONTRACT.md section 11).  Sections last up to 10 ms, so that a late
 * request often finds its sender holding the lock again.  Only the
 * general checks apply: a late request must never let two holders in,
 * hand out a stale token, or turn a lost hold into an unlock that
 * returns 0.
 *
 * cluster: a 3-master + 3-replica Redis Cluster (tests/cluster.c) instead
 * of one server, and TORTURE_NAMES names per phase instead of one
 * (torture:m:K, torture:rw:K, each section on a random one), so that the
 * names live on different masters.  The parent keeps moving the slot of a
 * random name to another master (CLUSTER SETSLOT MIGRATING / IMPORTING,
 * MIGRATE, SETSLOT NODE: every lock call on it meets TRYAGAIN and ASK
 * meanwhile), runs `redis-cli --cluster reshard` of a batch of slots, and
 * fails a master over to its replica (CLUSTER FAILOVER) once per phase.
 * The checks are the general ones, per name; the counters live in their
 * name's slot ({name} hash tag) and move with it.
 *
 * redlock: a quorum of 5 independent masters ([redlock], default restart
 * delay: the lease) instead of one server; the counters live on a sixth
 * server outside the quorum.  All through each phase the parent stops one
 * or two random masters (SIGSTOP) for 100-800 ms and resumes them, and
 * every third fault kills a random master and restarts it without
 * persistence (it forgets every hold and counter it had) a quarter lease
 * later.  Never more than two masters are out at once, but a restarted
 * one has no vote for a lease, so the quorum is sometimes short: calls
 * wait.  The general checks apply, fencing tokens included.
 *
 * cond: no mutex / rwlock phases; all M threads of all N processes share
 * a bounded queue (a ring of CQ_CAP slots: head, tail and slot keys,
 * each read and written with its own plain command, so only the lock
 * rdlock_t torture:cq keeps it consistent) and two rdcond_t, not-full
 * and not-empty.  Even threads produce items numbered pid/thread/seq,
 * odd ones consume; every push and pop is logged with the queue length
 * it saw.  In the first half the producers are slow (consumers wait on
 * not-empty), in the second the consumers (producers wait on not-full).
 * Per half: an extra process takes the lock and waits on that half's
 * condition for ever (passing on any wake-up it gets), and is SIGKILLed
 * half a lease later; at two thirds, CLIENT PAUSE 400 ms (under a lease).
 * Checks: every item produced is consumed exactly once, no holder ever
 * sees a length outside 0..CQ_CAP, the queue ends empty, every
 * rdcond_wait returns 0 or ENOLCK, and no single wait and no stretch
 * without a queue operation exceeds lease + retry + slack while the
 * producers run (a dead waiter must not keep a signal a live one needs);
 * the consumers drain the queue after the end (last producer broadcasts).
 *
 * barrier: N processes x 1 thread loop rdbarrier_timedwait (deadline 500
 * ms) on one barrier of count N, each counting the generations it passed
 * (a replacement starts from the count the others last recorded in
 * Redis).  Per half, a quarter in, the parent SIGKILLs one participant
 * (nearly always inside a wait) and starts a replacement once the
 * victim's arrival has surely lapsed (lease + 200 ms) and every survivor
 * has timed out since the kill.  Checks, per generation: N returns (N-1
 * only in the generation a victim died in, and then completed within its
 * arrival's lease), exactly one RDBARRIER_SERIAL_THREAD (none only if it
 * was the victim's), every call began before any return; generation
 * numbers have no holes; every ETIMEDOUT comes no earlier than its
 * deadline and within slack after it; every survivor timed out between
 * the kill and the replacement, and the replacement completed a
 * generation.  --sabotage: participant 0 "passes" every tenth generation
 * without waiting (cond: one producer and one consumer per process skip
 * the lock).
 *
 * redlock-prims: the semaphores, condition variables and barriers of a
 * quorum (src/exec/prim_quorum.h) on the 5 masters of redlock, under the same
 * faults, all through the run (24 s short, 90 s long by default), except
 * that the masters persist (AOF, fsync always) and so keep their data
 * across the restarts: a primitive's state never expires, and the
 * contract's restart delay does not cover a master that restarted
 * empty after a step only a bare majority took (docs/CONTRACT.md 9.5).  In
 * turn: (1) 30% of the run, every thread takes a permit of one leased
 * semaphore of RS_PERMITS (2), holds it 2-25 ms (raising an occupancy
 * counter on the sixth server on entry, lowering it on exit) and posts
 * it; the checker sweeps entries and exits and fails on more than 2
 * protected sections at once (protected: the post gave 0; an excess
 * must involve a post that said ENOLCK), on a protected holder that saw
 * the counter above 2 with no lost permit around, and unless the counter
 * ends at 0 and a fresh client finds both permits free; the waits
 * (rdsem_clockwait) end at the end of this part.  (2) 30%: thread
 * 0 of each process loops rdbarrier_timedwait on one barrier of count
 * N (deadline quorum_stall_ms: a wait outlasts one stall of the
 * quorum): the barrier checks, without kills (every generation exactly
 * N returns and one serial).  (3) 40%: the cond
 * workload on the lock torture:rq, with not-empty the condition of the
 * same name: the cond checks (every item consumed exactly once, lengths,
 * the queue ends empty), its stretch bound widened by what the quorum's
 * faults can stall a step (a restarted master's vote delay, a stop, a
 * master's back-off, two command timeouts); a single wait is not bounded
 * there (a woken Redlock waiter votes again with all the others).  Each
 * of the three must get through at least once.  --sabotage: as in the
 * three scenarios (thread 0 of each process enters without a permit).
 * --no-barrier: without the barrier part (semaphore 40%, queue 60%), to
 * look at the other two alone.
 *
 * tls: restart-aof's faults (one SIGKILL and restart per phase, AOF with
 * fsync always) on a TLS-only server (--port 0 --tls-port), with every
 * connection of the library TLS: requests cut by the kill and retried on
 * new connections, each with its handshake.  The general checks and
 * restart-aof's liveness checks, with a cut of every TLS connection
 * (CLIENT KILL LADDR, from a child over the unix socket) every 0.7-1.5 s
 * all through the run (--no-tls-cuts: none): what found defect D11 (see
 * TLS_CUT_MIN_MS).  A build without TLS exits 77 (run-torture.sh: SKIP).
 *
 * Output: human lines, then one line
 *   RESULT|scenario|procs x threads|sections|faults|completed|overlaps|lost|crashes|verdict
 * and exit 0 (pass) or 1 (violation) or 2 (usage / setup error), or 77
 * (scenario tls on a build without TLS).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rdl_build.h" /* RDL_HAVE_TLS: scenario tls */

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <arpa/inet.h>

#include <hiredis/hiredis.h>
#include <rdlock.h>

#include "../cluster.h"
#include "../fixture.h"
#include "../tproxy.h"

/* ------------------------------------------------------------------ */
/* options                                                             */
/* ------------------------------------------------------------------ */

static const char *opt_scenario = "baseline";
static int opt_procs = 4, opt_threads = 4;
static int opt_seconds = 0; /* 0: from --short/--long */
static int opt_long = 0;
static unsigned opt_lease = 0; /* 0: per scenario */
static int opt_keep = 0, opt_verbose = 0;
static int opt_sabotage = 0; /* checker self-test: thread 0 of each worker skips the lock */
static int opt_no_barrier = 0; /* redlock-prims without its barrier part */
static int opt_tls_cuts = 1;   /* tls: also cut every TLS connection (D11) */

enum { SC_BASELINE, SC_KILL, SC_RESTART, SC_RESTART_AOF, SC_PAUSE, SC_SLOW, SC_CUTS, SC_STALL, SC_CLUSTER, SC_REDLOCK,
       SC_COND, SC_BARRIER, SC_RLPRIMS, SC_TLS };
static const char *sc_names[] = { "baseline", "kill", "restart", "restart-aof", "pause", "slow", "cuts", "stall", "cluster",
                                  "redlock", "cond", "barrier", "redlock-prims", "tls", NULL };
/* tls: every TLS connection also cut (CLIENT KILL LADDR) every
 * TLS_CUT_MIN_MS..MAX ms.  A cut that leaves an acquire attempt
 * unanswered made its hold's unlock wait out the attempt's validity (a
 * command timeout) before it released, so with these cuts the lock's pace
 * collapsed (286/s -> 1/s), which the restart's liveness check reported:
 * defect D11 (docs/RELIABILITY.md), fixed by the finished-call mark. */
#define TLS_CUT_MIN_MS 700
#define TLS_CUT_MAX_MS 1500
/* The restart scenarios (one SIGKILL + restart per phase). */
static int restarts_server(void);
/* redlock: the quorum's masters (the counters stay on srv). */
#define RL_MASTERS 5
static rdt_server_t rl_m[RL_MASTERS];
static int rl_up;
/* Names per phase: one, or TORTURE_NAMES on a cluster. */
#define TORTURE_NAMES 8
static int nnames = 1;
static rdt_cluster_t cl;
static int sc;

static unsigned lease_ms;
static unsigned retry_ms = 100;
static unsigned timeout_ms = 1000; /* command_timeout_ms of the workers */
static unsigned proxy_delay_ms; /* one way, per chunk */
static int proxy_cuts;

static rdt_server_t srv;
static char logdir[512];
static long long t_start_ns, t_half_ns, t_end_ns; /* monotonic */
/* The stretches of the cond and barrier workloads: the whole run in
 * their own scenarios, a part of it in redlock-prims (which begins with
 * the semaphore's, until sem_end_ns). */
static long long cq_start_ns, cq_half_ns, cq_end_ns, bar_start_ns, bar_end_ns, sem_end_ns;
static unsigned bar_deadline_ms = 500; /* each rdbarrier_timedwait's deadline, from its call */

/* On a Redlock quorum (the lock scenario, or the primitives'). */
static int on_quorum(void) { return sc == SC_REDLOCK || sc == SC_RLPRIMS; }
static int restarts_server(void) { return sc == SC_RESTART || sc == SC_RESTART_AOF || sc == SC_TLS; }

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------------ */
/* log records                                                         */
/* ------------------------------------------------------------------ */

enum { K_WRITE = 1, K_READ = 2, K_STATS = 3, K_VICTIM = 4, K_PUSH = 5, K_POP = 6, K_QBAD = 7, K_BAR = 8, K_SEM = 9 };
enum { PH_MUTEX = 0, PH_RW = 1 };
#define NCODES 8
/* code slots for statistics: 0, ENOLCK, EIO, EPERM, EINVAL, EDEADLK, other */
enum { C_OK, C_ENOLCK, C_EIO, C_EPERM, C_EINVAL, C_EDEADLK, C_OTHER, C_BADCODE };

typedef struct rec {
    int32_t kind;
    int32_t phase;
    int32_t pid;
    int32_t tid;
    int32_t unlock_rc;    /* final unlock code (after EIO retries) */
    int32_t unlock_eio;   /* EIO retries of this unlock */
    int32_t read_changed; /* reader: counter changed during its section */
    int32_t name;         /* which of the phase's names (0..nnames-1) */
    uint64_t token;
    int64_t t_enter, t_exit, t_unlocked; /* monotonic ns */
    /* K_STATS only: per call kind (lock, unlock) counts per code slot */
    int64_t lock_codes[NCODES];
    int64_t unlock_codes[NCODES];
    int64_t lostcb;
    int64_t counter_retries;
    /* cond: K_PUSH / K_POP item id and the queue length seen (K_QBAD:
     * the impossible length; token = the section's longest single
     * rdcond_wait in ns, cut at the end of the run); barrier: K_BAR aux = the call's deadline
     * (monotonic ns), token = the participant's generation count after
     * a completed wait (0 otherwise), unlock_rc = the wait's result,
     * name = the participant's slot; t_enter / t_exit = call / return */
    int64_t item, aux;
    /* K_STATS only (cond): rdcond_wait codes, failed signals */
    int64_t wait_codes[NCODES];
    int64_t sigfail;
    /* K_STATS only (redlock-prims): rdsem_clockwait calls that gave up at
     * the semaphore's end (ETIMEDOUT, or EIO at the deadline), and those
     * that returned anything else but 0 */
    int64_t sem_timeouts, sem_bad;
    int64_t sig_eio; /* K_STATS only (quorum): signals retried after EIO */
} rec_t;

static int code_slot(int rc)
{
    switch (rc) {
    case 0: return C_OK;
    case ENOLCK: return C_ENOLCK;
    case EIO: return C_EIO;
    case EPERM: return C_EPERM;
    case EINVAL: return C_EINVAL;
    case EDEADLK: return C_EDEADLK;
    case EBUSY: case ETIMEDOUT: case EAGAIN: case EACCES: case ENOENT: case ENOMEM:
    case EOWNERDEAD: case ENOTRECOVERABLE:
        return C_OTHER;
    default: return C_BADCODE;
    }
}

/* ------------------------------------------------------------------ */
/* worker                                                              */
/* ------------------------------------------------------------------ */

static int w_logfd = -1;
static rdlock_client_t *w_client;
static rdlock_t w_mutex[TORTURE_NAMES];
static rdrwlock_t w_rw[TORTURE_NAMES];
static long w_lostcb;
static const char *w_ini;
static pthread_mutex_t w_stats_mu = PTHREAD_MUTEX_INITIALIZER;
static rec_t w_stats;

/* The lock name of phase ph, index k: "torture:m" / "torture:rw" on one
 * server (as always), "torture:m:K" / "torture:rw:K" on a cluster. */
static void lock_name(int ph, int k, char *buf, size_t n)
{
    const char *base = ph == PH_MUTEX ? "torture:m" : "torture:rw";
    if (nnames == 1)
        snprintf(buf, n, "%s", base);
    else
        snprintf(buf, n, "%s:%d", base, k);
}

/* Its counter: in the lock's hash slot ({name} tag), so that it moves with
 * the lock on a cluster. */
static void counter_key(int ph, int k, char *buf, size_t n)
{
    char name[64];
    lock_name(ph, k, name, sizeof name);
    snprintf(buf, n, "torture:counter:{%s}", name);
}

static void lost_cb(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    __atomic_fetch_add(&w_lostcb, 1, __ATOMIC_RELAXED);
}

static void quiet_logger(int level, const char *msg, void *arg)
{
    (void)arg;
    if (opt_verbose || level == RDLOCK_LOG_ERROR)
        fprintf(stderr, "[%d] rdlock: %s\n", (int)getpid(), msg);
}

static void log_rec(const rec_t *r)
{
    ssize_t w = write(w_logfd, r, sizeof *r); /* O_APPEND, one write per record */
    if (w != (ssize_t)sizeof *r) {
        fprintf(stderr, "torture: log write: %s\n", strerror(errno));
        _exit(3);
    }
}

/* A plain connection that survives server restarts: reconnect and retry
 * each command until it answers (bounded by the worker's alarm). */
typedef struct pconn {
    redisContext *c;
    long retries;
    int port;  /* cluster: the node a redirection named (0: a seed) */
    int ask;   /* cluster: send ASKING before the next command */
} pconn_t;

static redisReply *pcmd(pconn_t *p, const char *fmt, const char *key, long long v, int with_v)
{
    for (;;) {
        redisReply *r;
        if (!p->c) {
            struct timeval tv = { 1, 0 };
            int port = p->port ? p->port : nnames > 1 ? cl.node[p->retries % RDT_CLUSTER_NODES].port : srv.port;
            /* A TLS-only server (scenario tls): the checks' own plain
             * connection goes over its unix socket, which the cuts spare. */
            p->c = srv.tls_only && nnames == 1 ? redisConnectUnixWithTimeout(srv.sock, tv)
                                               : redisConnectWithTimeout("127.0.0.1", port, tv);
            if (!p->c || p->c->err) {
                if (p->c)
                    redisFree(p->c);
                p->c = NULL;
                p->port = 0; /* back to the seeds */
                p->retries++;
                sleep_ms(20);
                continue;
            }
            redisSetTimeout(p->c, (struct timeval){ 10, 0 });
        }
        if (p->ask) {
            redisReply *a = redisCommand(p->c, "ASKING");
            if (a)
                freeReplyObject(a);
            p->ask = 0;
        }
        r = with_v ? redisCommand(p->c, fmt, key, v) : redisCommand(p->c, fmt, key);
        if (r && r->type != REDIS_REPLY_ERROR)
            return r;
        if (r && nnames > 1 && (strncmp(r->str, "MOVED ", 6) == 0 || strncmp(r->str, "ASK ", 4) == 0)) {
            /* Follow the cluster: "MOVED <slot> <host>:<port>". */
            const char *colon = strrchr(r->str, ':');
            p->port = colon ? atoi(colon + 1) : 0;
            p->ask = r->str[0] == 'A';
            freeReplyObject(r);
            redisFree(p->c);
            p->c = NULL;
            continue;
        }
        if (r)
            freeReplyObject(r);
        redisFree(p->c);
        p->c = NULL;
        p->retries++;
        sleep_ms(20);
    }
}

static long long pget(pconn_t *p, const char *key)
{
    redisReply *r = pcmd(p, "GET %s", key, 0, 0);
    long long v = (r->type == REDIS_REPLY_STRING) ? atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
}

static void pset(pconn_t *p, const char *key, long long v)
{
    freeReplyObject(pcmd(p, "SET %s %lld", key, v, 1));
}

static void count_code(int64_t *arr, int rc)
{
    pthread_mutex_lock(&w_stats_mu);
    arr[code_slot(rc)]++;
    pthread_mutex_unlock(&w_stats_mu);
}

typedef struct wthread {
    int tid;
    unsigned seed;
    int index; /* redlock-prims: the process's slot (its barrier participant) */
} wthread_t;

/* Hold time inside a section, microseconds. */
static long hold_us(unsigned *seed)
{
    if (sc == SC_SLOW && rand_r(seed) % 6 == 0)
        return (long)lease_ms * 1500; /* 1.5 leases: only the watchdog keeps it */
    if (sc == SC_STALL)
        return rand_r(seed) % 10000; /* a late request finds its sender inside more often */
    return rand_r(seed) % 2000;
}

static void *worker_thread(void *arg)
{
    wthread_t *wt = arg;
    pconn_t pc = { NULL, 0, 0, 0 };

    while (now_ns() < t_start_ns)
        sleep_ms(5);
    while (now_ns() < t_end_ns) {
        int phase = now_ns() < t_half_ns ? PH_MUTEX : PH_RW;
        int reader = phase == PH_RW && rand_r(&wt->seed) % 5 != 0;
        int k = nnames > 1 ? (int)(rand_r(&wt->seed) % (unsigned)nnames) : 0;
        char ckey[96];
        rec_t r;
        int rc, eio = 0;

        counter_key(phase, k, ckey, sizeof ckey);

        if (opt_sabotage && wt->tid == 0) {
            /* checker self-test: a "section" without the lock */
            memset(&r, 0, sizeof r);
            r.kind = K_WRITE;
            r.phase = phase;
            r.name = k;
            r.pid = getpid();
            r.tid = wt->tid;
            r.t_enter = now_ns();
            r.token = (uint64_t)r.t_enter;
            {
                long long v = pget(&pc, ckey);
                sleep_us(hold_us(&wt->seed));
                pset(&pc, ckey, v + 1);
            }
            r.t_exit = r.t_unlocked = now_ns();
            log_rec(&r);
            continue;
        }
        if (phase == PH_MUTEX)
            rc = rdlock_lock(&w_mutex[k]);
        else if (reader)
            rc = rdrwlock_rdlock(&w_rw[k]);
        else
            rc = rdrwlock_wrlock(&w_rw[k]);
        count_code(w_stats.lock_codes, rc);
        if (rc != 0) {
            if (opt_verbose)
                fprintf(stderr, "[%d.%d] lock: %s\n", (int)getpid(), wt->tid, rdt_errname(rc));
            sleep_ms(10);
            continue;
        }
        memset(&r, 0, sizeof r);
        r.kind = reader ? K_READ : K_WRITE;
        r.phase = phase;
        r.name = k;
        r.pid = getpid();
        r.tid = wt->tid;
        r.t_enter = now_ns();
        if (phase == PH_MUTEX)
            rc = rdlock_fencing_token(&w_mutex[k], &r.token);
        else
            rc = rdrwlock_fencing_token(&w_rw[k], &r.token);
        if (rc != 0) {
            fprintf(stderr, "[%d.%d] fencing_token: %s\n", (int)getpid(), wt->tid, rdt_errname(rc));
            r.token = 0;
        }
        if (reader) {
            long long v0 = pget(&pc, ckey);
            sleep_us(hold_us(&wt->seed));
            r.read_changed = pget(&pc, ckey) != v0;
        } else {
            long long v = pget(&pc, ckey);
            sleep_us(hold_us(&wt->seed));
            pset(&pc, ckey, v + 1);
        }
        r.t_exit = now_ns();
        for (;;) {
            rc = phase == PH_MUTEX ? rdlock_unlock(&w_mutex[k]) : rdrwlock_unlock(&w_rw[k]);
            count_code(w_stats.unlock_codes, rc);
            if (rc != EIO)
                break;
            eio++;
            sleep_ms(50);
        }
        r.t_unlocked = now_ns();
        r.unlock_rc = rc;
        r.unlock_eio = eio;
        log_rec(&r);
        sleep_us(rand_r(&wt->seed) % 1000);
    }
    if (pc.c)
        redisFree(pc.c);
    pthread_mutex_lock(&w_stats_mu);
    w_stats.counter_retries += pc.retries;
    pthread_mutex_unlock(&w_stats_mu);
    return NULL;
}

static int open_locks(void)
{
    rdlock_attr_t a;
    int rc;

    rdlock_set_logger(quiet_logger, NULL);
    rc = rdlock_client_open(&w_client, w_ini);
    if (rc != 0) {
        fprintf(stderr, "[%d] client_open: %s\n", (int)getpid(), rdt_errname(rc));
        return -1;
    }
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, w_client);
    rdlock_attr_setlostcb(&a, lost_cb, NULL);
    for (int k = 0; k < nnames; k++) {
        char m[64], rw[64];
        lock_name(PH_MUTEX, k, m, sizeof m);
        lock_name(PH_RW, k, rw, sizeof rw);
        if ((rc = rdlock_init(&w_mutex[k], m, &a)) != 0 || (rc = rdrwlock_init(&w_rw[k], rw, &a)) != 0) {
            fprintf(stderr, "[%d] init: %s\n", (int)getpid(), rdt_errname(rc));
            return -1;
        }
    }
    rdlock_attr_destroy(&a);
    return 0;
}

static int open_log(const char *what)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s.%d.log", logdir, what, (int)getpid());
    w_logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
    return w_logfd < 0 ? -1 : 0;
}

static int worker_main(int index)
{
    pthread_t th[256];
    wthread_t wt[256];
    int i, rc;

    alarm((unsigned)((t_end_ns - now_ns()) / 1000000000LL) + 90);
    if (open_log("w") != 0 || open_locks() != 0)
        return 2;
    for (i = 0; i < opt_threads; i++) {
        wt[i].tid = i;
        wt[i].seed = (unsigned)(getpid() * 7919 + i * 104729 + index);
        if (pthread_create(&th[i], NULL, worker_thread, &wt[i]) != 0)
            return 2;
    }
    for (i = 0; i < opt_threads; i++)
        pthread_join(th[i], NULL);
    /* stats record */
    w_stats.kind = K_STATS;
    w_stats.pid = getpid();
    w_stats.lostcb = __atomic_load_n(&w_lostcb, __ATOMIC_RELAXED);
    for (int k = 0; k < nnames; k++) {
        if ((rc = rdlock_destroy(&w_mutex[k])) != 0)
            fprintf(stderr, "[%d] rdlock_destroy: %s\n", (int)getpid(), rdt_errname(rc));
        if ((rc = rdrwlock_destroy(&w_rw[k])) != 0)
            fprintf(stderr, "[%d] rdrwlock_destroy: %s\n", (int)getpid(), rdt_errname(rc));
    }
    if ((rc = rdlock_client_close(w_client)) != 0)
        fprintf(stderr, "[%d] client_close: %s\n", (int)getpid(), rdt_errname(rc));
    /* late lost callbacks run before close returns */
    w_stats.lostcb = __atomic_load_n(&w_lostcb, __ATOMIC_RELAXED);
    log_rec(&w_stats);
    close(w_logfd);
    return 0;
}

/* kill scenario: take the lock of `phase`, log the entry, tell the parent
 * and wait to be SIGKILLed. */
static int victim_main(int phase, int notify_fd, long long at_ns)
{
    rec_t r;
    int rc;

    alarm((unsigned)((t_end_ns - now_ns()) / 1000000000LL) + 90);
    if (open_log("v") != 0 || open_locks() != 0)
        return 2;
    while (now_ns() < at_ns)
        sleep_ms(5);
    rc = phase == PH_MUTEX ? rdlock_lock(&w_mutex[0]) : rdrwlock_wrlock(&w_rw[0]);
    if (rc != 0) {
        fprintf(stderr, "victim: lock: %s\n", rdt_errname(rc));
        return 2;
    }
    memset(&r, 0, sizeof r);
    r.kind = K_VICTIM;
    r.phase = phase;
    r.pid = getpid();
    r.tid = 99;
    r.t_enter = now_ns();
    if (phase == PH_MUTEX)
        rdlock_fencing_token(&w_mutex[0], &r.token);
    else
        rdrwlock_fencing_token(&w_rw[0], &r.token);
    log_rec(&r);
    if (write(notify_fd, "x", 1) != 1)
        return 2;
    for (;;)
        pause();
}

/* ------------------------------------------------------------------ */
/* cond scenario: a bounded queue behind a lock and two conditions     */
/* ------------------------------------------------------------------ */

/* The queue is a ring of CQ_CAP slots in Redis (head and tail counters,
 * one key per slot), read and written with separate plain commands, so
 * that only the lock keeps two threads from pushing into one slot or
 * popping one item twice.  Even threads produce, odd ones consume. */
#define CQ_CAP 4
#define CQ_LOCK "torture:cq"
#define CQ_HEAD "torture:cq:head"
#define CQ_TAIL "torture:cq:tail"
#define CQ_PDONE "torture:cq:pdone"
#define CQ_PAUSE_MS 400 /* CLIENT PAUSE: shorter than the lease */
#define RQ_NAME "torture:rq" /* redlock-prims: the queue's lock and its not-empty condition */
static rdlock_t c_lock;
static rdcond_t c_notfull, c_notempty;

static int cq_producers(void) { return opt_procs * ((opt_threads + 1) / 2); }

static long long qcmd_int(pconn_t *p, const char *fmt, const char *key)
{
    redisReply *r = pcmd(p, fmt, key, 0, 0);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    return v;
}

static void slot_key(long long i, char *buf, size_t n)
{
    snprintf(buf, n, "torture:cq:slot:%lld", ((i % CQ_CAP) + CQ_CAP) % CQ_CAP);
}

static int cond_open(void)
{
    rdlock_attr_t a;
    rdcond_attr_t ca;
    int rc;

    rdlock_set_logger(quiet_logger, NULL);
    if ((rc = rdlock_client_open(&w_client, w_ini)) != 0) {
        fprintf(stderr, "[%d] client_open: %s\n", (int)getpid(), rdt_errname(rc));
        return -1;
    }
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, w_client);
    rdlock_attr_setlostcb(&a, lost_cb, NULL);
    rdcond_attr_init(&ca);
    rdcond_attr_setclient(&ca, w_client);
    /* redlock-prims: the lock and not-empty share a name (their keys
     * differ), as a program that guards a queue by its name would do */
    if ((rc = rdlock_init(&c_lock, sc == SC_RLPRIMS ? RQ_NAME : CQ_LOCK, &a)) != 0 ||
        (rc = rdcond_init(&c_notfull, sc == SC_RLPRIMS ? RQ_NAME ":notfull" : "torture:cq:notfull", &ca)) != 0 ||
        (rc = rdcond_init(&c_notempty, sc == SC_RLPRIMS ? RQ_NAME : "torture:cq:notempty", &ca)) != 0) {
        fprintf(stderr, "[%d] cond init: %s\n", (int)getpid(), rdt_errname(rc));
        return -1;
    }
    rdcond_attr_destroy(&ca);
    rdlock_attr_destroy(&a);
    return 0;
}

static void cq_bad(int tid, long long n)
{
    rec_t r;
    memset(&r, 0, sizeof r);
    r.kind = K_QBAD;
    r.pid = getpid();
    r.tid = tid;
    r.aux = n;
    r.t_enter = r.t_exit = r.t_unlocked = now_ns();
    log_rec(&r);
}

static void cq_signal(rdcond_t *cv, int broadcast)
{
    int rc = broadcast ? rdcond_broadcast(cv) : rdcond_signal(cv);
    /* On a quorum under faults no majority may answer within the retries:
     * EIO, not known whether it took effect; sent again (an extra wake-up
     * is a spurious one, which waiters allow for), as unlocks are. */
    while (rc == EIO && on_quorum()) {
        pthread_mutex_lock(&w_stats_mu);
        w_stats.sig_eio++;
        pthread_mutex_unlock(&w_stats_mu);
        sleep_ms(50);
        rc = broadcast ? rdcond_broadcast(cv) : rdcond_signal(cv);
    }
    if (rc != 0) {
        fprintf(stderr, "[%d] rdcond_%s: %s\n", (int)getpid(), broadcast ? "broadcast" : "signal", rdt_errname(rc));
        pthread_mutex_lock(&w_stats_mu);
        w_stats.sigfail++;
        pthread_mutex_unlock(&w_stats_mu);
    }
}

/* Unlock, retrying EIO as the other scenarios do; returns the final code. */
static int cq_unlock(int *eio)
{
    int rc;
    for (;;) {
        rc = rdlock_unlock(&c_lock);
        count_code(w_stats.unlock_codes, rc);
        if (rc != EIO)
            return rc;
        (*eio)++;
        sleep_ms(50);
    }
}

/* The queue length under the lock (head and tail read apart: only the
 * lock makes the pair consistent).  An impossible length is logged. */
static long long cq_len(pconn_t *pc, int tid, long long *h, long long *t)
{
    long long n;
    *h = pget(pc, CQ_HEAD);
    *t = pget(pc, CQ_TAIL);
    n = *t - *h;
    if (n < 0 || n > CQ_CAP)
        cq_bad(tid, n);
    return n;
}

static void *cond_thread(void *arg)
{
    wthread_t *wt = arg;
    pconn_t pc = { NULL, 0, 0, 0 };
    int producer = wt->tid % 2 == 0;
    long long seq = 0;
    char sk[64];

    while (now_ns() < cq_start_ns)
        sleep_ms(5);
    for (;;) {
        long long h, t, n;
        int rc, eio = 0, waits = 0, done = 0;
        int sabotage = opt_sabotage && wt->tid < 2; /* one producer and one consumer skip the lock */
        rec_t r;

        if (producer && now_ns() >= cq_end_ns)
            break;
        if (!sabotage) {
            rc = rdlock_lock(&c_lock);
            count_code(w_stats.lock_codes, rc);
            if (rc != 0) {
                sleep_ms(10);
                continue;
            }
        }
        memset(&r, 0, sizeof r);
        r.pid = getpid();
        r.tid = wt->tid;
        r.t_enter = now_ns();
        for (;;) {
            n = cq_len(&pc, wt->tid, &h, &t);
            if (producer ? n < CQ_CAP : n > 0)
                break;
            if (!producer && pget(&pc, CQ_PDONE) >= cq_producers()) {
                done = 1;
                break;
            }
            if (sabotage) {
                sleep_us(200);
                continue;
            }
            {
                long long w0 = now_ns(), w1;
                rc = rdcond_wait(producer ? &c_notfull : &c_notempty, &c_lock);
                /* the section's longest single wait, the part of it
                 * before the end (the other side stops then) */
                w1 = now_ns() < cq_end_ns ? now_ns() : cq_end_ns;
                if (w1 > w0 && (uint64_t)(w1 - w0) > r.token)
                    r.token = (uint64_t)(w1 - w0);
            }
            count_code(w_stats.wait_codes, rc);
            waits++;
            if (rc != 0 && rc != ENOLCK)
                fprintf(stderr, "[%d.%d] rdcond_wait: %s\n", (int)getpid(), wt->tid, rdt_errname(rc));
        }
        if (done) {
            r.t_exit = now_ns();
            if (!sabotage)
                cq_unlock(&eio);
            break;
        }
        r.aux = n;
        r.name = waits;
        if (producer) {
            r.kind = K_PUSH;
            r.item = ((long long)getpid() << 32) | ((long long)wt->tid << 20) | seq++; /* seq < 2^20 */
            slot_key(t, sk, sizeof sk);
            pset(&pc, sk, r.item);
            sleep_us(rand_r(&wt->seed) % 300);
            pset(&pc, CQ_TAIL, t + 1);
            if (!sabotage)
                cq_signal(&c_notempty, 0);
        } else {
            r.kind = K_POP;
            slot_key(h, sk, sizeof sk);
            r.item = pget(&pc, sk);
            sleep_us(rand_r(&wt->seed) % 300);
            pset(&pc, CQ_HEAD, h + 1);
            if (!sabotage)
                cq_signal(&c_notfull, 0);
        }
        r.t_exit = now_ns();
        r.unlock_rc = sabotage ? 0 : cq_unlock(&eio);
        r.unlock_eio = eio;
        r.t_unlocked = now_ns();
        log_rec(&r);
        /* Phase 0 the producers are the slow side (the queue runs empty,
         * consumers wait on not-empty), phase 1 the consumers (the queue
         * runs full, producers wait on not-full): the victim of each
         * phase waits on the condition the live waiters need. */
        sleep_us((producer == (now_ns() < cq_half_ns)) ? 1000 + rand_r(&wt->seed) % 3000 : rand_r(&wt->seed) % 200);
    }
    if (producer) {
        /* the last producer's broadcast lets the consumers see the end */
        int eio = 0, rc = rdlock_lock(&c_lock);
        count_code(w_stats.lock_codes, rc);
        if (rc == 0) {
            qcmd_int(&pc, "INCR %s", CQ_PDONE);
            cq_signal(&c_notempty, 1);
            cq_unlock(&eio);
        }
    }
    if (pc.c)
        redisFree(pc.c);
    pthread_mutex_lock(&w_stats_mu);
    w_stats.counter_retries += pc.retries;
    pthread_mutex_unlock(&w_stats_mu);
    return NULL;
}

static void finish_stats(void)
{
    w_stats.kind = K_STATS;
    w_stats.pid = getpid();
    w_stats.lostcb = __atomic_load_n(&w_lostcb, __ATOMIC_RELAXED);
    log_rec(&w_stats);
    close(w_logfd);
}

static int cond_main(int index)
{
    pthread_t th[256];
    wthread_t wt[256];
    int i, rc;

    /* consumers drain the queue after the end: a generous bound */
    alarm((unsigned)((t_end_ns - now_ns()) / 1000000000LL) + 90);
    if (open_log("w") != 0 || cond_open() != 0)
        return 2;
    for (i = 0; i < opt_threads; i++) {
        wt[i].tid = i;
        wt[i].seed = (unsigned)(getpid() * 7919 + i * 104729 + index);
        if (pthread_create(&th[i], NULL, cond_thread, &wt[i]) != 0)
            return 2;
    }
    for (i = 0; i < opt_threads; i++)
        pthread_join(th[i], NULL);
    if ((rc = rdcond_destroy(&c_notfull)) != 0 || (rc = rdcond_destroy(&c_notempty)) != 0 ||
        (rc = rdlock_destroy(&c_lock)) != 0)
        fprintf(stderr, "[%d] destroy: %s\n", (int)getpid(), rdt_errname(rc));
    if ((rc = rdlock_client_close(w_client)) != 0)
        fprintf(stderr, "[%d] client_close: %s\n", (int)getpid(), rdt_errname(rc));
    finish_stats();
    return 0;
}

/* cond victim of phase ph: takes the lock, tells the parent, and waits on
 * the condition of its phase (not-empty, then not-full) for ever: a
 * waiter that never finds its predicate.  A wake-up it gets is passed on
 * (signalled again) so that, alive, it takes nobody's; each is logged. */
static int cond_victim_main(int ph, int notify_fd, long long at_ns)
{
    rdcond_t *cv = ph == 0 ? &c_notempty : &c_notfull;
    rec_t r;
    int rc;

    alarm((unsigned)((t_end_ns - now_ns()) / 1000000000LL) + 90);
    if (open_log("v") != 0 || cond_open() != 0)
        return 2;
    while (now_ns() < at_ns)
        sleep_ms(5);
    if ((rc = rdlock_lock(&c_lock)) != 0) {
        fprintf(stderr, "cond victim: lock: %s\n", rdt_errname(rc));
        return 2;
    }
    if (write(notify_fd, "x", 1) != 1)
        return 2;
    for (;;) {
        rc = rdcond_wait(cv, &c_lock);
        memset(&r, 0, sizeof r);
        r.kind = K_VICTIM;
        r.phase = ph;
        r.pid = getpid();
        r.tid = 99;
        r.unlock_rc = rc;
        r.t_enter = r.t_exit = r.t_unlocked = now_ns();
        log_rec(&r);
        cq_signal(cv, 0);
    }
}

/* ------------------------------------------------------------------ */
/* barrier scenario                                                    */
/* ------------------------------------------------------------------ */

#define BAR_NAME "torture:b"
#define BAR_GEN "torture:b:gen"

static void bar_to_key(int pid, char *buf, size_t n)
{
    snprintf(buf, n, "torture:b:to:%d", pid);
}

/* One participant's loop, from bar_start_ns to bar_end_ns: gen is the
 * count of generations it passed so far.  Every wait is logged; a
 * timeout also bumps the participant's key torture:b:to:<pid>, which the
 * parent watches. */
static void bar_loop(rdbarrier_t *b, int slot, long long gen, pconn_t *pc)
{
    long long iter = 0;
    char tokey[64];
    int rc;

    bar_to_key(getpid(), tokey, sizeof tokey);
    while (now_ns() < bar_start_ns)
        sleep_ms(5);
    while (now_ns() < bar_end_ns) {
        struct timespec dl;
        rec_t r;
        memset(&r, 0, sizeof r);
        r.kind = K_BAR;
        r.pid = getpid();
        r.name = slot;
        clock_gettime(CLOCK_REALTIME, &dl);
        r.t_enter = now_ns();
        r.aux = r.t_enter + (long long)bar_deadline_ms * 1000000LL;
        dl.tv_nsec += (long)(bar_deadline_ms % 1000) * 1000000L;
        dl.tv_sec += bar_deadline_ms / 1000 + dl.tv_nsec / 1000000000L;
        dl.tv_nsec %= 1000000000L;
        if (opt_sabotage && slot == 0 && iter % 10 == 9)
            rc = 0; /* checker self-test: "pass" a generation without waiting */
        else
            rc = rdbarrier_timedwait(b, &dl);
        r.t_exit = r.t_unlocked = now_ns();
        r.unlock_rc = rc;
        if (rc == 0 || rc == RDBARRIER_SERIAL_THREAD)
            r.token = (uint64_t)++gen;
        log_rec(&r);
        if (r.token)
            pset(pc, BAR_GEN, gen);
        else if (rc == ETIMEDOUT || (rc == EIO && r.t_exit >= r.aux))
            qcmd_int(pc, "INCR %s", tokey);
        else
            sleep_ms(10); /* an error the checker reports */
        iter++;
    }
}

/* One participant (one thread).  It counts the generations it passed;
 * the first ones start at 0, a replacement from the last generation any
 * participant recorded (BAR_GEN, written after each completed wait and
 * before the next arrival). */
static int bar_main(int slot, int replacement)
{
    rdlock_attr_t a;
    rdbarrier_t b;
    pconn_t pc = { NULL, 0, 0, 0 };
    long long gen = 0;
    int rc;

    alarm((unsigned)((t_end_ns - now_ns()) / 1000000000LL) + 90);
    rdlock_set_logger(quiet_logger, NULL);
    if (open_log("b") != 0 || (rc = rdlock_client_open(&w_client, w_ini)) != 0)
        return 2;
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, w_client);
    if ((rc = rdbarrier_init(&b, BAR_NAME, (unsigned)opt_procs, &a)) != 0) {
        fprintf(stderr, "[%d] rdbarrier_init: %s\n", (int)getpid(), rdt_errname(rc));
        return 2;
    }
    rdlock_attr_destroy(&a);
    if (replacement)
        gen = pget(&pc, BAR_GEN);
    bar_loop(&b, slot, gen, &pc);
    if ((rc = rdbarrier_destroy(&b)) != 0)
        fprintf(stderr, "[%d] rdbarrier_destroy: %s\n", (int)getpid(), rdt_errname(rc));
    if ((rc = rdlock_client_close(w_client)) != 0)
        fprintf(stderr, "[%d] client_close: %s\n", (int)getpid(), rdt_errname(rc));
    if (pc.c)
        redisFree(pc.c);
    w_stats.counter_retries = pc.retries;
    finish_stats();
    return 0;
}

/* ------------------------------------------------------------------ */
/* redlock-prims: a leased semaphore, a queue, a barrier on a quorum   */
/* ------------------------------------------------------------------ */

/* Every thread of every process first takes permits of one leased
 * semaphore of RS_PERMITS (the section: INCR of an occupancy counter on
 * the counters' server, 2-25 ms, DECR, then rdsem_post), until
 * sem_end_ns; then thread 0 of each process is one participant of the
 * barrier RB_NAME (count: the processes) until bar_end_ns, while the
 * other threads wait; then all run the cond workload (cond_thread, on
 * the lock RQ_NAME and its conditions) until the end, and the drain.
 * All of it on the 5 masters. */
#define RS_NAME "torture:rs"
#define RS_PERMITS 2
#define RS_OCC "torture:rs:inside"
#define RB_NAME "torture:rb"
static rdsem_t s_sem;
static rdbarrier_t s_bar;

static int sem_open_leased(rdsem_t *sem, rdlock_client_t *c)
{
    rdsem_attr_t sa;
    int rc;
    rdsem_attr_init(&sa);
    rdsem_attr_setclient(&sa, c);
    rdsem_attr_settype(&sa, RDSEM_LEASED);
    rc = rdsem_init(sem, RS_NAME, RS_PERMITS, &sa);
    rdsem_attr_destroy(&sa);
    return rc;
}

static void sem_loop(wthread_t *wt, pconn_t *pc)
{
    while (now_ns() < t_start_ns)
        sleep_ms(5);
    while (now_ns() < sem_end_ns) {
        rec_t r;
        int rc = 0, eio = 0;
        int sabotage = opt_sabotage && wt->tid == 0; /* checker self-test: a section without a permit */
        long long w0 = now_ns();

        if (!sabotage) {
            /* waits end with the semaphore's part of the run, so that
             * the barrier's participants are there on time */
            struct timespec dl = { (time_t)(sem_end_ns / 1000000000LL), (long)(sem_end_ns % 1000000000LL) };
            rc = rdsem_clockwait(&s_sem, CLOCK_MONOTONIC, &dl);
            if (rc != 0) {
                int at_end = now_ns() >= sem_end_ns;
                pthread_mutex_lock(&w_stats_mu);
                if ((rc == ETIMEDOUT || rc == EIO) && at_end)
                    w_stats.sem_timeouts++; /* EIO: the deadline passed with no majority */
                else
                    w_stats.sem_bad++;
                pthread_mutex_unlock(&w_stats_mu);
                if (opt_verbose || !at_end)
                    fprintf(stderr, "[%d.%d] rdsem_clockwait: %s%s\n", (int)getpid(), wt->tid, rdt_errname(rc),
                            at_end ? "" : " before its deadline");
                if (at_end)
                    break;
                sleep_ms(10);
                continue;
            }
            count_code(w_stats.lock_codes, rc);
        }
        memset(&r, 0, sizeof r);
        r.kind = K_SEM;
        r.pid = getpid();
        r.tid = wt->tid;
        r.t_enter = now_ns();
        r.item = r.t_enter - w0; /* the wait */
        r.aux = qcmd_int(pc, "INCR %s", RS_OCC); /* holders inside, this one included */
        /* longer than a lock section: a step costs several round trips
         * to the masters, and the holders should often meet the limit */
        sleep_us(2000 + rand_r(&wt->seed) % 23000);
        qcmd_int(pc, "DECR %s", RS_OCC);
        r.t_exit = now_ns();
        while (!sabotage) {
            rc = rdsem_post(&s_sem);
            count_code(w_stats.unlock_codes, rc);
            if (rc != EIO)
                break;
            eio++;
            sleep_ms(50);
        }
        r.t_unlocked = now_ns();
        r.unlock_rc = rc;
        r.unlock_eio = eio;
        log_rec(&r);
        sleep_us(rand_r(&wt->seed) % 1000);
    }
}

static void *rp_thread(void *arg)
{
    wthread_t *wt = arg;
    pconn_t pc = { NULL, 0, 0, 0 };

    sem_loop(wt, &pc);
    if (wt->tid == 0)
        bar_loop(&s_bar, wt->index, 0, &pc);
    cond_thread(wt); /* its own plain connection; adds its retries */
    if (pc.c)
        redisFree(pc.c);
    pthread_mutex_lock(&w_stats_mu);
    w_stats.counter_retries += pc.retries;
    pthread_mutex_unlock(&w_stats_mu);
    return NULL;
}

static int rp_main(int index)
{
    pthread_t th[256];
    wthread_t wt[256];
    rdlock_attr_t a;
    int i, rc;

    /* the queue drains after cq_end_ns, on a quorum under faults: a
     * generous bound */
    alarm((unsigned)((t_end_ns - now_ns()) / 1000000000LL) + 120);
    if (open_log("w") != 0 || cond_open() != 0)
        return 2;
    if ((rc = sem_open_leased(&s_sem, w_client)) != 0) {
        fprintf(stderr, "[%d] rdsem_init: %s\n", (int)getpid(), rdt_errname(rc));
        return 2;
    }
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, w_client);
    if ((rc = rdbarrier_init(&s_bar, RB_NAME, (unsigned)opt_procs, &a)) != 0) {
        fprintf(stderr, "[%d] rdbarrier_init: %s\n", (int)getpid(), rdt_errname(rc));
        return 2;
    }
    rdlock_attr_destroy(&a);
    for (i = 0; i < opt_threads; i++) {
        wt[i].tid = i;
        wt[i].index = index;
        wt[i].seed = (unsigned)(getpid() * 7919 + i * 104729 + index);
        if (pthread_create(&th[i], NULL, rp_thread, &wt[i]) != 0)
            return 2;
    }
    for (i = 0; i < opt_threads; i++)
        pthread_join(th[i], NULL);
    if ((rc = rdsem_destroy(&s_sem)) != 0 || (rc = rdbarrier_destroy(&s_bar)) != 0 ||
        (rc = rdcond_destroy(&c_notfull)) != 0 || (rc = rdcond_destroy(&c_notempty)) != 0 ||
        (rc = rdlock_destroy(&c_lock)) != 0)
        fprintf(stderr, "[%d] destroy: %s\n", (int)getpid(), rdt_errname(rc));
    if ((rc = rdlock_client_close(w_client)) != 0)
        fprintf(stderr, "[%d] client_close: %s\n", (int)getpid(), rdt_errname(rc));
    finish_stats();
    return 0;
}

/* ------------------------------------------------------------------ */
/* proxy (its own process)                                             */
/* ------------------------------------------------------------------ */

typedef struct chunk {
    struct chunk *next;
    long long due;
    size_t len, off;
    char data[];
} chunk_t;

#define PX_MAX 512
static struct {
    int cfd, sfd, used;
} px_conns[PX_MAX];
static pthread_mutex_t px_mu = PTHREAD_MUTEX_INITIALIZER;

static void *px_conn_thread(void *arg)
{
    int slot = (int)(intptr_t)arg;
    int fd[2] = { px_conns[slot].cfd, px_conns[slot].sfd };
    chunk_t *head[2] = { NULL, NULL }, *tail[2] = { NULL, NULL }; /* head[d]: queued for fd[1-d] */
    int eof[2] = { 0, 0 };
    char buf[65536];

    for (;;) {
        struct pollfd p[2];
        long long now = now_ns(), wait = -1;
        int d, n;

        for (d = 0; d < 2; d++) {
            p[d].fd = fd[d];
            p[d].events = eof[d] ? 0 : POLLIN;
            p[d].revents = 0;
        }
        for (d = 0; d < 2; d++)
            if (head[d]) {
                long long w = head[d]->due - now;
                if (w <= 0)
                    p[1 - d].events |= POLLOUT, w = 0;
                w = (w + 999999) / 1000000;
                if (wait < 0 || w < wait)
                    wait = w;
            }
        if ((eof[0] && !head[0]) || (eof[1] && !head[1]))
            break;
        n = poll(p, 2, (int)wait);
        if (n < 0 && errno != EINTR)
            break;
        if (n < 0)
            continue;
        if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL))
            break;
        for (d = 0; d < 2; d++) {
            if (p[d].revents & (POLLIN | POLLHUP)) {
                ssize_t r = read(fd[d], buf, sizeof buf);
                if (r <= 0) {
                    eof[d] = 1;
                } else {
                    chunk_t *c = malloc(sizeof *c + (size_t)r);
                    c->next = NULL;
                    c->due = now_ns() + (long long)proxy_delay_ms * 1000000LL;
                    c->len = (size_t)r;
                    c->off = 0;
                    memcpy(c->data, buf, (size_t)r);
                    if (tail[d])
                        tail[d]->next = c;
                    else
                        head[d] = c;
                    tail[d] = c;
                }
            }
        }
        for (d = 0; d < 2; d++) {
            while (head[d] && head[d]->due <= now_ns()) {
                chunk_t *c = head[d];
                ssize_t w = send(fd[1 - d], c->data + c->off, c->len - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0 && (errno == EAGAIN || errno == EINTR))
                    break;
                if (w < 0)
                    goto out;
                c->off += (size_t)w;
                if (c->off < c->len)
                    break;
                head[d] = c->next;
                if (!head[d])
                    tail[d] = NULL;
                free(c);
            }
        }
    }
out:
    for (int d = 0; d < 2; d++)
        while (head[d]) {
            chunk_t *c = head[d];
            head[d] = c->next;
            free(c);
        }
    pthread_mutex_lock(&px_mu);
    close(fd[0]);
    close(fd[1]);
    px_conns[slot].used = 0;
    pthread_mutex_unlock(&px_mu);
    return NULL;
}

static void proxy_main(int lfd, long cut_min_ms, long cut_max_ms)
{
    unsigned seed = (unsigned)getpid();
    long long next_cut = cut_min_ms > 0 ? now_ns() + (cut_min_ms + rand_r(&seed) % (cut_max_ms - cut_min_ms + 1)) * 1000000LL : 0;
    long cuts = 0;
    char path[700];

    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        struct pollfd p = { lfd, POLLIN, 0 };
        int timeout = next_cut ? (int)((next_cut - now_ns()) / 1000000) : -1;
        if (next_cut && timeout < 0)
            timeout = 0;
        if (poll(&p, 1, timeout) > 0 && (p.revents & POLLIN)) {
            int cfd = accept(lfd, NULL, NULL), sfd, slot, one = 1;
            struct sockaddr_in sa;
            pthread_t th;
            if (cfd < 0)
                continue;
            sfd = socket(AF_INET, SOCK_STREAM, 0);
            memset(&sa, 0, sizeof sa);
            sa.sin_family = AF_INET;
            sa.sin_port = htons((uint16_t)srv.port);
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (sfd < 0 || connect(sfd, (struct sockaddr *)&sa, sizeof sa) != 0) {
                close(cfd);
                if (sfd >= 0)
                    close(sfd);
                continue;
            }
            setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            pthread_mutex_lock(&px_mu);
            for (slot = 0; slot < PX_MAX && px_conns[slot].used; slot++)
                ;
            if (slot == PX_MAX) {
                pthread_mutex_unlock(&px_mu);
                close(cfd);
                close(sfd);
                continue;
            }
            px_conns[slot].cfd = cfd;
            px_conns[slot].sfd = sfd;
            px_conns[slot].used = 1;
            pthread_mutex_unlock(&px_mu);
            if (pthread_create(&th, NULL, px_conn_thread, (void *)(intptr_t)slot) == 0)
                pthread_detach(th);
        }
        if (next_cut && now_ns() >= next_cut) {
            int live[PX_MAX], n = 0, i, all = rand_r(&seed) % 5 == 0;
            pthread_mutex_lock(&px_mu);
            for (i = 0; i < PX_MAX; i++)
                if (px_conns[i].used)
                    live[n++] = i;
            for (i = 0; i < n; i++)
                if (all || i == (int)(rand_r(&seed) % (unsigned)n)) {
                    shutdown(px_conns[live[i]].cfd, SHUT_RDWR);
                    shutdown(px_conns[live[i]].sfd, SHUT_RDWR);
                    cuts++;
                }
            pthread_mutex_unlock(&px_mu);
            next_cut = now_ns() + (cut_min_ms + rand_r(&seed) % (cut_max_ms - cut_min_ms + 1)) * 1000000LL;
            /* publish the count for the parent */
            snprintf(path, sizeof path, "%s/proxy.cuts", logdir);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "%ld\n", cuts);
                fclose(f);
            }
        }
    }
}

/* stall scenario: tests/tproxy.c in this process, driven by random
 * stalls.  The controller's naps pace the faults; nothing waits on them. */
#define ST_MAX 12 /* stalls at once */

static void stall_publish(tproxy_t *px, long stalls, long longs)
{
    char path[700];
    tproxy_stats_t st;
    FILE *f;
    tproxy_stats(px, &st);
    snprintf(path, sizeof path, "%s/proxy.stalls.tmp", logdir);
    f = fopen(path, "w");
    if (f == NULL)
        return;
    fprintf(f, "%ld %ld %ld %ld %ld\n", stalls, longs, st.delivered, st.delivered_late, st.accepted);
    fclose(f);
    {
        char final[700];
        snprintf(final, sizeof final, "%s/proxy.stalls", logdir);
        rename(path, final);
    }
}

static void stall_main(int portfd)
{
    struct {
        long id;
        long long until;
    } st[ST_MAX];
    int nst = 0, port, i;
    unsigned seed = (unsigned)getpid() ^ (unsigned)now_ns();
    long stalls = 0, longs = 0;
    long long next = now_ns();
    tproxy_t *px;

    signal(SIGPIPE, SIG_IGN);
    if (tproxy_start(&px, srv.port) != 0)
        _exit(2);
    port = tproxy_port(px);
    if (write(portfd, &port, sizeof port) != (ssize_t)sizeof port)
        _exit(2);
    close(portfd);
    for (;;) {
        long long now = now_ns(), wake;
        int changed = 0;

        for (i = 0; i < nst;) {
            if (st[i].until <= now) {
                /* no wait: the proxy keeps the upstream open until the
                 * server answers, also when the client has gone */
                tproxy_deliver_conn(px, st[i].id, 0);
                st[i] = st[--nst];
                changed = 1;
            } else {
                i++;
            }
        }
        if (now >= next) {
            long ids[512];
            int n = tproxy_conns(px, ids, 512);
            if (n > 512)
                n = 512;
            if (nst < ST_MAX && n > 0) {
                long id = ids[rand_r(&seed) % (unsigned)n];
                int busy = 0, lng = rand_r(&seed) % 3 != 0;
                for (i = 0; i < nst; i++)
                    busy |= st[i].id == id;
                if (!busy && tproxy_hold_conn(px, id) == 0) {
                    /* short (one in three): 20-400 ms, under the command
                     * timeout; long: 1.2 to 3 command timeouts, so that
                     * the late request comes while its sender is still
                     * busy with the same lock */
                    long ms = lng ? (long)timeout_ms * 6 / 5 + rand_r(&seed) % (timeout_ms * 9 / 5 + 1)
                                  : 20 + rand_r(&seed) % 381;
                    st[nst].id = id;
                    st[nst].until = now + ms * 1000000LL;
                    nst++;
                    stalls++;
                    longs += lng;
                    changed = 1;
                }
            }
            next = now + (10 + rand_r(&seed) % 51) * 1000000LL;
        }
        if (changed)
            stall_publish(px, stalls, longs);
        wake = next;
        for (i = 0; i < nst; i++)
            if (st[i].until < wake)
                wake = st[i].until;
        now = now_ns();
        if (wake > now)
            sleep_us((long)((wake - now) / 1000));
    }
}

/* ------------------------------------------------------------------ */
/* checker                                                             */
/* ------------------------------------------------------------------ */

static rec_t *recs;
static size_t nrecs, caprecs;

static int load_logs(void)
{
    DIR *d = opendir(logdir);
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char path[1000];
        FILE *f;
        rec_t r;
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".log") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", logdir, e->d_name);
        f = fopen(path, "rb");
        if (!f)
            continue;
        while (fread(&r, sizeof r, 1, f) == 1) {
            if (nrecs == caprecs) {
                caprecs = caprecs ? caprecs * 2 : 4096;
                recs = realloc(recs, caprecs * sizeof *recs);
            }
            recs[nrecs++] = r;
        }
        fclose(f);
    }
    closedir(d);
    return 0;
}

static int cmp_enter(const void *a, const void *b)
{
    const rec_t *x = *(rec_t *const *)a, *y = *(rec_t *const *)b;
    return x->t_enter < y->t_enter ? -1 : x->t_enter > y->t_enter;
}

static int cmp_token(const void *a, const void *b)
{
    const rec_t *x = *(rec_t *const *)a, *y = *(rec_t *const *)b;
    if (x->token != y->token)
        return x->token < y->token ? -1 : 1;
    return x->t_enter < y->t_enter ? -1 : x->t_enter > y->t_enter;
}

static int violations, printed;
/* Print at most 40 violations in all (overlaps, the worst kind, are always
 * printed first in their phase); the count includes the unprinted ones. */
static void violation(const char *fmt, ...)
{
    va_list ap;
    violations++;
    if (++printed > 40)
        return;
    fprintf(stderr, "VIOLATION: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void note(const char *fmt, ...)
{
    va_list ap;
    printf("  ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static double ms(long long ns) { return ns / 1e6; }

/* figures for the result line */
static long f_sections, f_overlaps, f_lost, f_silent;

static long long kill_ns[2];        /* kill scenario: when the victim of each phase was killed */
static long long pause_t0[2], pause_t1[2], pause_dur_ns; /* pause scenario */
static long long restart_ns[2];     /* restart scenarios: when the server came back */

static void check_phase(int phase, int name, long long counter, int counter_valid, int token_enforced)
{
    rec_t **v = NULL, **wr = NULL;
    size_t n = 0, nw = 0, i;
    long writes = 0, lost = 0, overlaps = 0, silent = 0, rw_overlaps = 0, tok_bad = 0, read_changed = 0;
    long lost_writes = 0, eio_unlocks = 0;
    char pname[32];

    if (nnames == 1)
        snprintf(pname, sizeof pname, "%s", phase == PH_MUTEX ? "mutex" : "rwlock");
    else
        snprintf(pname, sizeof pname, "%s[%d]", phase == PH_MUTEX ? "mutex" : "rwlock", name);
    for (i = 0; i < nrecs; i++)
        if ((recs[i].kind == K_WRITE || recs[i].kind == K_READ || recs[i].kind == K_VICTIM) &&
            recs[i].phase == phase && recs[i].name == name)
            n++;
    v = calloc(n + 1, sizeof *v);
    wr = calloc(n + 1, sizeof *wr);
    n = 0;
    for (i = 0; i < nrecs; i++) {
        rec_t *r = &recs[i];
        if (!((r->kind == K_WRITE || r->kind == K_READ || r->kind == K_VICTIM) && r->phase == phase &&
              r->name == name))
            continue;
        if (r->kind == K_VICTIM) {
            /* protected until (at least) its kill */
            r->t_exit = kill_ns[phase] ? kill_ns[phase] : r->t_enter;
            r->t_unlocked = r->t_exit;
            r->unlock_rc = 0;
        }
        v[n++] = r;
        if (r->kind != K_READ)
            wr[nw++] = r;
        if (r->kind == K_WRITE)
            writes++;
        if (r->unlock_rc == ENOLCK) {
            lost++;
            if (r->kind == K_WRITE)
                lost_writes++;
        } else if (r->unlock_rc != 0) {
            violation("%s: unlock returned %s (%d)", pname, rdt_errname(r->unlock_rc), r->unlock_rc);
        }
        eio_unlocks += r->unlock_eio > 0;
        read_changed += r->kind == K_READ && r->read_changed && r->unlock_rc == 0;
    }
    qsort(v, n, sizeof *v, cmp_enter);
    qsort(wr, nw, sizeof *wr, cmp_enter);

    /* writer/writer overlaps (by enter order, against the writer that
     * reaches furthest so far) */
    {
        rec_t *far = NULL;
        for (i = 0; i < nw; i++) {
            if (far && wr[i]->t_enter < far->t_exit) {
                overlaps++;
                if (far->unlock_rc == 0 && wr[i]->unlock_rc == 0) {
                    silent++;
                    violation("%s: protected write sections overlap: pid %d.%d [%.3f, %.3f] ms and pid %d.%d "
                              "[%.3f, %.3f] ms, tokens %llu / %llu",
                              pname, far->pid, far->tid, ms(far->t_enter - t_start_ns),
                              ms(far->t_exit - t_start_ns), wr[i]->pid, wr[i]->tid,
                              ms(wr[i]->t_enter - t_start_ns), ms(wr[i]->t_exit - t_start_ns),
                              (unsigned long long)far->token, (unsigned long long)wr[i]->token);
                }
            }
            if (!far || wr[i]->t_exit > far->t_exit)
                far = wr[i];
        }
    }
    /* reader/writer overlaps: protected writers are disjoint; check each
     * reader against the last protected writer entering before its exit */
    {
        rec_t **pw = calloc(nw + 1, sizeof *pw);
        size_t np = 0;
        for (i = 0; i < nw; i++)
            if (wr[i]->unlock_rc == 0)
                pw[np++] = wr[i];
        for (i = 0; i < n; i++) {
            rec_t *r = v[i];
            size_t lo = 0, hi = np;
            if (r->kind != K_READ)
                continue;
            while (lo < hi) { /* first writer with enter >= r->t_exit */
                size_t mid = (lo + hi) / 2;
                if (pw[mid]->t_enter < r->t_exit)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo > 0 && pw[lo - 1]->t_exit > r->t_enter) {
                overlaps++;
                if (r->unlock_rc == 0) {
                    silent++;
                    rw_overlaps++;
                    violation("%s: protected reader pid %d.%d [%.3f, %.3f] overlaps protected writer pid %d.%d "
                              "[%.3f, %.3f]",
                              pname, r->pid, r->tid, ms(r->t_enter - t_start_ns), ms(r->t_exit - t_start_ns),
                              pw[lo - 1]->pid, pw[lo - 1]->tid, ms(pw[lo - 1]->t_enter - t_start_ns),
                              ms(pw[lo - 1]->t_exit - t_start_ns));
                }
            }
        }
        free(pw);
    }
    /* the same token on two sections (two acquisitions) */
    {
        long dups = 0;
        rec_t **byt = malloc((n + 1) * sizeof *byt);
        memcpy(byt, v, n * sizeof *byt);
        qsort(byt, n, sizeof *byt, cmp_token);
        long rdups = 0;
        for (i = 1; i < n; i++)
            if (byt[i]->token == byt[i - 1]->token && byt[i]->token != 0 && sc == SC_REDLOCK &&
                byt[i]->kind == K_READ && byt[i - 1]->kind == K_READ) {
                /* On a quorum, two shared holds granted at the same time
                 * may take the same token from different masters
                 * (docs/CONTRACT.md 9.5); writers' tokens stay apart
                 * from everything (checked below). */
                rdups++;
            } else if (byt[i]->token == byt[i - 1]->token && byt[i]->token != 0) {
                dups++;
                if (token_enforced && dups > 5)
                    violations++;
                else if (token_enforced)
                    violation("%s: fencing token %llu taken by two acquisitions: pid %d.%d enter %.3f ms unlock %s, "
                              "pid %d.%d enter %.3f ms unlock %s",
                              pname, (unsigned long long)byt[i]->token, byt[i - 1]->pid, byt[i - 1]->tid,
                              ms(byt[i - 1]->t_enter - t_start_ns), rdt_errname(byt[i - 1]->unlock_rc), byt[i]->pid,
                              byt[i]->tid, ms(byt[i]->t_enter - t_start_ns), rdt_errname(byt[i]->unlock_rc));
            }
        if (dups)
            note("%-6s duplicate fencing tokens: %ld%s", pname, dups, token_enforced ? "" : " (not enforced)");
        if (rdups)
            note("%-6s concurrent readers sharing a token (quorum): %ld", pname, rdups);
        free(byt);
    }
    /* fencing tokens: around every protected writer, everything that
     * entered before has a smaller token and everything after a larger one */
    {
        uint64_t *premax = calloc(n + 1, sizeof *premax), *sufmin = calloc(n + 2, sizeof *sufmin);
        premax[0] = 0;
        for (i = 0; i < n; i++)
            premax[i + 1] = premax[i] > v[i]->token ? premax[i] : v[i]->token;
        sufmin[n] = UINT64_MAX;
        for (i = n; i-- > 0;)
            sufmin[i] = sufmin[i + 1] < v[i]->token ? sufmin[i + 1] : v[i]->token;
        for (i = 0; i < n; i++) {
            if (v[i]->kind == K_READ || v[i]->unlock_rc != 0)
                continue;
            if (premax[i] >= v[i]->token || sufmin[i + 1] <= v[i]->token) {
                tok_bad++;
                if (token_enforced && tok_bad > 5)
                    violations++;
                else if (token_enforced)
                    violation("%s: fencing token %llu of protected writer pid %d.%d (enter %.3f ms) not strictly "
                              "between earlier max %llu and later min %llu",
                              pname, (unsigned long long)v[i]->token, v[i]->pid, v[i]->tid,
                              ms(v[i]->t_enter - t_start_ns), (unsigned long long)premax[i],
                              (unsigned long long)sufmin[i + 1]);
            }
        }
        free(premax);
        free(sufmin);
    }
    /* counter */
    if (counter_valid) {
        long long diff = counter - writes;
        if (diff < 0)
            diff = -diff;
        /* a reported-lost writer may undo one increment of its own and
         * one per section it overlapped (its stale SET) */
        if (diff > lost_writes + (overlaps - silent))
            violation("%s: counter %lld but %ld write sections (%ld reported lost, %ld overlaps with them): "
                      "mismatch %lld not explained",
                      pname, counter, writes, lost_writes, overlaps - silent, diff);
    }
    if (read_changed)
        violation("%s: %ld protected readers saw the counter change during their section", pname, read_changed);

    note("%-9s sections %zu (writes %ld, reads %zu), overlaps %ld (silent %ld), reported lost %ld, token "
         "order breaks %ld%s, unlock EIO retried %ld, counter %lld%s",
         pname, n, writes, n - nw, overlaps, silent, lost, tok_bad, token_enforced ? "" : " (not enforced)",
         eio_unlocks, counter, counter_valid ? "" : " (not checked)");
    f_sections += (long)n;
    f_overlaps += overlaps;
    f_silent += silent;
    f_lost += lost;

    /* scenario-specific checks */
    if (sc == SC_KILL && kill_ns[phase]) {
        long long first = 0;
        for (i = 0; i < n; i++)
            if (v[i]->kind != K_VICTIM && v[i]->t_enter > kill_ns[phase] && (!first || v[i]->t_enter < first))
                first = v[i]->t_enter;
        if (!first) {
            violation("%s: nobody acquired after the holder was killed", pname);
        } else {
            double gap = ms(first - kill_ns[phase]);
            double bound = lease_ms + retry_ms + 20 + (opt_long ? 1000 : 3000);
            note("%-6s takeover %.0f ms after SIGKILL of the holder (lease %u, bound %.0f)", pname, gap, lease_ms,
                 bound);
            if (gap > bound)
                violation("%s: takeover after %.0f ms > lease + retry + slack (%.0f ms)", pname, gap, bound);
        }
    }
    if (sc == SC_PAUSE && pause_t0[phase]) {
        long spanning = 0, spanning_lost = 0;
        for (i = 0; i < n; i++)
            if (v[i]->t_enter < pause_t0[phase] && v[i]->t_exit > pause_t1[phase] + pause_dur_ns) {
                spanning++;
                if (v[i]->unlock_rc == ENOLCK)
                    spanning_lost++;
                else
                    violation("%s: section pid %d.%d held across a %.0f ms pause (> lease %u) but unlock "
                              "returned %s",
                              pname, v[i]->pid, v[i]->tid, ms(pause_dur_ns), lease_ms, rdt_errname(v[i]->unlock_rc));
            }
        /* A section that began after the pause ended and lasted well
         * under a lease cannot have lost its lease: an ENOLCK there is a
         * false alarm (reported, not a violation: it errs on the safe side). */
        long spurious = 0;
        for (i = 0; i < n; i++)
            spurious += v[i]->t_enter > pause_t1[phase] + pause_dur_ns && v[i]->unlock_rc == ENOLCK &&
                        v[i]->t_unlocked - v[i]->t_enter < (long long)lease_ms * 500000LL;
        note("%-6s sections spanning the pause: %ld, reported lost: %ld; short sections begun after it and still "
             "reported lost (false alarms): %ld",
             pname, spanning, spanning_lost, spurious);
    }
    if (restarts_server() && restart_ns[phase]) {
        /* liveness: blocked callers keep waiting and then succeed, and the
         * lock recovers its pace once the lease of any vanished hold is
         * over (rate after the restart >= 10% of the rate before it) */
        long after = 0, before = 0, late = 0;
        long long ph_start = phase == PH_MUTEX ? t_start_ns : t_half_ns;
        long long ph_end = phase == PH_MUTEX ? t_half_ns : t_end_ns;
        long long kill_at = restart_ns[phase] - (long long)lease_ms * 500000LL;
        long long settle = restart_ns[phase] + (long long)(lease_ms + retry_ms) * 1000000LL;
        long long first = 0;
        double rate_before, rate_after;
        for (i = 0; i < n; i++) {
            if (v[i]->unlock_rc != 0)
                continue;
            if (v[i]->t_enter > restart_ns[phase]) {
                after++;
                if (!first || v[i]->t_enter < first)
                    first = v[i]->t_enter;
            }
            before += v[i]->t_enter >= ph_start && v[i]->t_enter < kill_at;
            late += v[i]->t_enter >= settle && v[i]->t_enter < ph_end;
        }
        rate_before = before / ((kill_at - ph_start) / 1e9);
        rate_after = settle < ph_end ? late / ((ph_end - settle) / 1e9) : 0;
        note("%-6s after the restart: first protected section %.0f ms later, %ld completed; rate %.1f/s before, "
             "%.1f/s from lease + retry after it",
             pname, first ? ms(first - restart_ns[phase]) : -1.0, after, rate_before, rate_after);
        if (after == 0)
            violation("%s: no section completed after the server restart", pname);
        else if (ms(first - restart_ns[phase]) > lease_ms + retry_ms + (opt_long ? 2000 : 5000))
            violation("%s: first section %.0f ms after the restart (bound lease + retry + slack)", pname,
                      ms(first - restart_ns[phase]));
        if (settle < ph_end - 1000000000LL && rate_after < rate_before / 10)
            violation("%s: throughput collapsed after the restart: %.1f/s -> %.1f/s", pname, rate_before,
                      rate_after);
    }
    if (sc == SC_SLOW && lost)
        violation("%s: %ld holds lost with round trip = lease/3 (watchdog must keep them)", pname, lost);
    free(v);
    free(wr);
}

/* cond / barrier: the faults the parent injected */
static long long cq_kill_ns[2], cq_pause_ns[2];
static long long bar_kill_ns[2], bar_repl_ns[2];
static int bar_victim[2], bar_repl[2]; /* pids */
static long long wait_enolck; /* cond: rdcond_wait calls that returned ENOLCK */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double slack_ms(void) { return opt_long ? 1000 : 3000; }

/* redlock-prims: how long the quorum's faults can keep every step of a
 * primitive waiting, on top of the one-server bounds: a restarted master
 * has no vote for the restart delay (the lease) while one or two others
 * are stopped for up to 800 ms, and a master that did not answer is not
 * asked again for a back-off of up to 2 s (docs/CONTRACT.md 9.5). */
static double quorum_stall_ms(void) { return on_quorum() ? lease_ms + 800 + 2000 + 2.0 * timeout_ms : 0; }

/* cond: every produced item consumed exactly once, no impossible queue
 * length, the queue empty at the end, and no long stretch without a
 * queue operation while the producers ran. */
static void check_cond(long long head, long long tail)
{
    int64_t *prod = malloc((nrecs + 1) * sizeof *prod), *cons = malloc((nrecs + 1) * sizeof *cons);
    int64_t *ev = malloc((nrecs + 2) * sizeof *ev);
    size_t np = 0, nc = 0, nev = 0, i, j;
    long bad = 0, missing = 0, dups = 0, phantoms = 0, enolck = 0, waited = 0, waits = 0, vwakes[2] = { 0, 0 };
    long long longest_wait = 0, longest_one = 0, longest_one_at = 0, gap = 0, gap_at = 0, vlast[2] = { 0, 0 }, maxbad = 0;
    double bound = lease_ms + retry_ms + slack_ms() + quorum_stall_ms();

    for (i = 0; i < nrecs; i++) {
        rec_t *r = &recs[i];
        if (r->kind == K_PUSH || r->kind == K_POP) {
            if (r->kind == K_PUSH)
                prod[np++] = r->item;
            else
                cons[nc++] = r->item;
            enolck += r->unlock_rc == ENOLCK;
            if (r->unlock_rc != 0 && r->unlock_rc != ENOLCK)
                violation("cond: unlock returned %s", rdt_errname(r->unlock_rc));
            waited += r->name > 0;
            waits += r->name;
            if (r->name > 0 && r->t_exit - r->t_enter > longest_wait)
                longest_wait = r->t_exit - r->t_enter;
            if ((long long)r->token > longest_one)
                longest_one = (long long)r->token, longest_one_at = r->t_exit;
            if (r->t_exit >= cq_start_ns && r->t_exit <= cq_end_ns)
                ev[nev++] = r->t_exit;
        } else if (r->kind == K_QBAD) {
            bad++;
            if (r->aux < 0 ? -r->aux > maxbad : r->aux - CQ_CAP > maxbad)
                maxbad = r->aux < 0 ? -r->aux : r->aux - CQ_CAP;
        } else if (r->kind == K_VICTIM && r->phase >= 0 && r->phase < 2) {
            vwakes[r->phase]++;
            if (r->t_enter > vlast[r->phase])
                vlast[r->phase] = r->t_enter;
        }
    }
    qsort(prod, np, sizeof *prod, cmp_i64);
    qsort(cons, nc, sizeof *cons, cmp_i64);
    for (i = 1; i < np; i++)
        if (prod[i] == prod[i - 1])
            violation("cond: item %lld produced twice (the producer's ids are unique)", (long long)prod[i]);
    for (i = 0, j = 0; i < np || j < nc;) {
        if (j >= nc || (i < np && prod[i] < cons[j])) {
            if (missing++ < 5)
                violation("cond: item %lld (pid %lld thread %lld #%lld) produced, never consumed", (long long)prod[i],
                          (long long)(prod[i] >> 32), (long long)((prod[i] >> 20) & 4095),
                          (long long)(prod[i] & 0xfffff));
            else
                violations++;
            i++;
        } else if (i >= np || cons[j] < prod[i]) {
            if (phantoms++ < 5)
                violation("cond: item %lld consumed but never produced", (long long)cons[j]);
            else
                violations++;
            j++;
        } else {
            size_t k = j + 1;
            while (k < nc && cons[k] == cons[j])
                k++;
            if (k - j > 1) {
                if (dups++ < 5)
                    violation("cond: item %lld consumed %zu times", (long long)cons[j], k - j);
                else
                    violations++;
            }
            i++;
            j = k;
        }
    }
    if (bad)
        violation("cond: %ld times a thread holding the lock saw an impossible queue length (outside 0..%d, by up "
                  "to %lld)",
                  bad, CQ_CAP, maxbad);
    if (tail != (long long)np || head != (long long)nc || head != tail)
        violation("cond: the queue ends with head %lld, tail %lld, after %zu pushes and %zu pops", head, tail, np, nc);
    /* progress: the longest stretch without a queue operation */
    ev[nev++] = cq_start_ns;
    qsort(ev, nev, sizeof *ev, cmp_i64);
    for (i = 1; i < nev; i++)
        if (ev[i] - ev[i - 1] > gap)
            gap = ev[i] - ev[i - 1], gap_at = ev[i - 1];
    if (cq_end_ns - ev[nev - 1] > gap)
        gap = cq_end_ns - ev[nev - 1], gap_at = ev[nev - 1];
    note("cond: %zu items produced, %zu consumed: %ld never consumed, %ld consumed twice or more, %ld consumed "
         "without being produced; impossible queue lengths seen %ld",
         np, nc, missing, dups, phantoms, bad);
    note("cond: %ld sections waited (%ld rdcond_wait returns), longest section with waits %.0f ms, longest single "
         "wait %.0f ms (its section ended at %.0f ms; bound lease + retry + slack); holds reported lost %ld (unlock), %lld (wait)",
         waited, waits, ms(longest_wait), ms(longest_one), ms(longest_one_at - t_start_ns), enolck, wait_enolck);
    /* Signals go to the oldest live waiter and every push (pop) signals
     * not-empty (not-full), so while the producers run a waiter is woken
     * within a few operations; a dead waiter may keep one signal for a
     * lease, a victim holding the lock when killed blocks everybody for
     * one.  A wait longer than that lost its wake-up. */
    /* On a quorum a woken waiter votes for the lock again with everybody
     * else (a Redlock release hands nothing over, and its waiters are not
     * served in arrival order: docs/CONTRACT.md 9.5), so one wait can
     * last as long as its thread keeps losing votes; only the stretch
     * without any queue operation (below) is bounded there. */
    if (ms(longest_one) > bound && !on_quorum())
        violation("cond: an rdcond_wait lasted %.0f ms (its section ended at %.0f ms) while the other side kept signalling: "
                  "> lease + retry + slack (%.0f ms)",
                  ms(longest_one), ms(longest_one_at - t_start_ns), bound);
    note("cond: longest stretch without a queue operation %.0f ms (from %.0f ms; bound lease + retry + slack = "
         "%.0f ms)",
         ms(gap), ms(gap_at - t_start_ns), bound);
    for (int ph = 0; ph < 2; ph++) {
        long long kgap = 0;
        if (cq_kill_ns[ph]) {
            /* the longest stretch without an operation that overlaps the
             * lease after the kill (a signal the victim kept, a lock it
             * held or queued for when it died) */
            long long wend = cq_kill_ns[ph] + (long long)(lease_ms + retry_ms) * 1000000LL;
            for (i = 1; i < nev; i++)
                if (ev[i - 1] < wend && ev[i] > cq_kill_ns[ph] && ev[i] - ev[i - 1] > kgap)
                    kgap = ev[i] - ev[i - 1];
            note("cond: phase %d victim (waiting on not-%s) woken %ld times, the last %.0f ms before its SIGKILL; "
                 "longest stretch without an operation in the lease after the kill %.0f ms",
                 ph, ph == 0 ? "empty" : "full", vwakes[ph], vlast[ph] ? ms(cq_kill_ns[ph] - vlast[ph]) : -1.0,
                 ms(kgap));
        }
        if (cq_pause_ns[ph]) {
            long long pgap = 0;
            for (i = 1; i < nev; i++)
                if (ev[i - 1] < cq_pause_ns[ph] + CQ_PAUSE_MS * 1000000LL && ev[i] > cq_pause_ns[ph])
                    pgap = ev[i] - ev[i - 1] > pgap ? ev[i] - ev[i - 1] : pgap;
            note("cond: phase %d CLIENT PAUSE %d ms: stretch without an operation across it %.0f ms", ph, CQ_PAUSE_MS,
                 ms(pgap));
        }
    }
    if (ms(gap) > bound)
        violation("cond: %.0f ms without a queue operation (from %.0f ms) > lease + retry + slack (%.0f ms)", ms(gap),
                  ms(gap_at - t_start_ns), bound);
    if (enolck || wait_enolck)
        note("cond: holds were reported lost: the exactly-once checks above are then only as good as the lock was");
    f_sections += (long)(np + nc);
    f_lost += enolck + (long)wait_enolck;
    f_overlaps += missing + dups + phantoms + bad;
    f_silent += enolck || wait_enolck ? 0 : missing + dups + phantoms + bad;
    free(prod);
    free(cons);
    free(ev);
}

/* redlock-prims, the semaphore: never more than RS_PERMITS protected
 * sections at once (protected: rdsem_post gave 0), every excess involves
 * a section whose post reported its permit lost (ENOLCK); the occupancy
 * counter each holder raised on entry agrees (clock-free), and ends at 0;
 * every permit is back at the end (occ_end: the counter; value: the
 * free permits a fresh client sees, value_rc its getvalue's code). */
typedef struct sev {
    long long t;
    int d; /* +1 enter, -1 exit */
    rec_t *r;
} sev_t;

static int cmp_sev(const void *a, const void *b)
{
    const sev_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->d - y->d; /* exits first at the same instant */
}

static void check_sem(long long occ_end, int value, int value_rc)
{
    sev_t *ev = malloc((2 * nrecs + 1) * sizeof *ev);
    rec_t **act = malloc((nrecs + 1) * sizeof *act);
    size_t nev = 0, nact = 0, i, k;
    long n = 0, lost = 0, overlaps = 0, silent = 0, at_limit = 0, occ_bad = 0, eio = 0, maxocc = 0;
    long maxc = 0, maxprot = 0;
    long long longest_wait = 0, wait_sum = 0;

    for (i = 0; i < nrecs; i++) {
        rec_t *r = &recs[i];
        if (r->kind != K_SEM)
            continue;
        n++;
        wait_sum += r->item;
        if (r->item > longest_wait)
            longest_wait = r->item;
        r->read_changed = 0; /* here: in an excess with a lost section */
        if (r->unlock_rc == ENOLCK)
            lost++;
        else if (r->unlock_rc != 0)
            violation("sem: rdsem_post returned %s (%d)", rdt_errname(r->unlock_rc), r->unlock_rc);
        eio += r->unlock_eio > 0;
        if (r->aux > maxocc)
            maxocc = (long)r->aux;
        ev[nev++] = (sev_t){ r->t_enter, 1, r };
        ev[nev++] = (sev_t){ r->t_exit, -1, r };
    }
    qsort(ev, nev, sizeof *ev, cmp_sev);
    for (i = 0; i < nev; i++) {
        long prot = 0;
        if (ev[i].d < 0) {
            for (k = 0; k < nact; k++)
                if (act[k] == ev[i].r) {
                    act[k] = act[--nact];
                    break;
                }
            continue;
        }
        act[nact++] = ev[i].r;
        for (k = 0; k < nact; k++)
            prot += act[k]->unlock_rc == 0;
        if ((long)nact > maxc)
            maxc = (long)nact;
        if (prot > maxprot)
            maxprot = prot;
        at_limit += nact == RS_PERMITS;
        if (nact <= RS_PERMITS)
            continue;
        overlaps++;
        if (prot > RS_PERMITS) {
            silent++;
            if (silent <= 5) {
                char who[400];
                int off = 0;
                for (k = 0; k < nact && off < (int)sizeof who - 60; k++)
                    off += snprintf(who + off, sizeof who - (size_t)off, " pid %d.%d [%.3f, %.3f]%s", act[k]->pid,
                                    act[k]->tid, ms(act[k]->t_enter - t_start_ns), ms(act[k]->t_exit - t_start_ns),
                                    act[k]->unlock_rc == 0 ? "" : " lost");
                violation("sem: %ld protected sections at once on a semaphore of %d permits:%s", prot, RS_PERMITS,
                          who);
            } else {
                violations++;
            }
        } else {
            for (k = 0; k < nact; k++)
                act[k]->read_changed = 1;
        }
    }
    /* the occupancy counter: raised inside the section, so it never
     * shows more holders than the sweep above; an excess seen by a
     * protected holder that no reported-lost section explains */
    for (i = 0; i < nrecs; i++)
        if (recs[i].kind == K_SEM && recs[i].unlock_rc == 0 && recs[i].aux > RS_PERMITS && !recs[i].read_changed)
            occ_bad++;
    if (occ_bad)
        violation("sem: %ld protected holders found more than %d holders inside (the occupancy counter), no lost "
                  "permit among them",
                  occ_bad, RS_PERMITS);
    if (occ_end != 0)
        violation("sem: the occupancy counter ends at %lld, not 0", occ_end);
    if (value_rc != 0)
        violation("sem: rdsem_getvalue after the run returned %s", rdt_errname(value_rc));
    else if (value != RS_PERMITS)
        violation("sem: %d permits free after every holder posted or exited, not %d", value, RS_PERMITS);
    note("sem: %ld sections on a leased semaphore of %d permits: at most %ld at once (%ld protected), %ld entries "
         "at the limit; excesses %ld (silent %ld), permits reported lost (ENOLCK) %ld, posts retried after EIO %ld; "
         "occupancy counter at most %ld, %lld at the end; %d free permits after the run; rdsem_wait %.0f ms on "
         "average, %.0f ms at most (not bounded: a waiter whose looks cannot reach a majority for half a lease loses "
         "its place in line)",
         n, RS_PERMITS, maxc, maxprot, at_limit, overlaps, silent, lost, eio, maxocc, occ_end, value,
         n ? ms(wait_sum / n) : 0.0, ms(longest_wait));
    f_sections += n;
    f_overlaps += overlaps;
    f_silent += silent;
    f_lost += lost;
    free(ev);
    free(act);
}

static int cmp_bar(const void *a, const void *b)
{
    const rec_t *x = *(rec_t *const *)a, *y = *(rec_t *const *)b;
    if (x->token != y->token)
        return x->token < y->token ? -1 : 1;
    return x->t_exit < y->t_exit ? -1 : x->t_exit > y->t_exit;
}

/* A wait that gave up: ETIMEDOUT, or EIO at its deadline (the server,
 * on a quorum a majority, could not be reached then and no arrival was
 * made: docs/CONTRACT.md 12.5). */
static int bar_timeout(const rec_t *r)
{
    return r->unlock_rc == ETIMEDOUT || (r->unlock_rc == EIO && r->t_exit >= r->aux);
}

/* barrier: one serial return and opt_procs arrivals per generation (one
 * fewer only for the generation a victim died in, completed within its
 * arrival's lease), all arrivals before any return, timeouts on time,
 * every survivor timed out after a kill, the replacement got through. */
static void check_barrier(void)
{
    rec_t **s = malloc((nrecs + 1) * sizeof *s);
    size_t ns = 0, i, j;
    long timeouts = 0, unexplained = 0, early = 0, late = 0, gens = 0, short_gens = 0;
    long long maxlate = -1000000000LL, maxgap = 0, maxgap_at = 0, prev_done = bar_start_ns;
    long long first_after[2] = { 0, 0 }, last_before[2] = { 0, 0 }, lastgen_done = 0;
    uint64_t lastgen = 0;
    /* a timed wait on a quorum may end late (docs/CONTRACT.md 12.5: it
     * returns once it can tell whether its arrival counted): a round
     * under way at the deadline (a command timeout); if it got no answer,
     * the wait until it can no longer act (another); then the withdrawal,
     * which asks until a majority answers: as long as the faults can keep
     * the quorum short (quorum_stall_ms, the attempts that fail inside
     * it included), and then up to the withdrawal's longest back-off
     * (1 s) before the attempt that gets through.  The former bound (three
     * command timeouts and 100 ms) left out the stall: a restarted
     * master out of the vote while two others were stopped made a
     * withdrawal 5.1 s late with nothing wrong. */
    double slack = (opt_long ? 1000 : 2000) + (on_quorum() ? 2.0 * timeout_ms + quorum_stall_ms() + 1000 : 0);

    for (i = 0; i < nrecs; i++) {
        rec_t *r = &recs[i];
        if (r->kind != K_BAR)
            continue;
        if (r->token)
            s[ns++] = r;
        else if (!bar_timeout(r))
            violation("barrier: rdbarrier_timedwait returned %s (%d)%s", rdt_errname(r->unlock_rc), r->unlock_rc,
                      r->unlock_rc == EIO ? " before its deadline" : "");
    }
    qsort(s, ns, sizeof *s, cmp_bar);
    for (i = 0; i < ns; i = j) {
        uint64_t g = s[i]->token;
        long long maxstart = 0, minret = 0;
        int serial = 0, cnt = 0, victim_missing = -1;
        for (j = i; j < ns && s[j]->token == g; j++) {
            cnt++;
            serial += s[j]->unlock_rc == RDBARRIER_SERIAL_THREAD;
            if (s[j]->t_enter > maxstart)
                maxstart = s[j]->t_enter;
            if (!minret || s[j]->t_exit < minret)
                minret = s[j]->t_exit;
        }
        if (g != lastgen + 1)
            violation("barrier: generations %llu to %llu completed for nobody", (unsigned long long)lastgen + 1,
                      (unsigned long long)g - 1);
        lastgen = g;
        gens++;
        if (cnt == opt_procs - 1) {
            /* a victim whose last completed generation was g - 1 may have
             * arrived in g and died: its arrival counts while its lease
             * runs, not after */
            for (int k = 0; k < 2; k++) {
                uint64_t vmax = 0;
                int seen = 0;
                if (!bar_kill_ns[k])
                    continue;
                for (size_t m = 0; m < ns; m++)
                    if (s[m]->pid == bar_victim[k]) {
                        seen = 1;
                        if (s[m]->token > vmax)
                            vmax = s[m]->token;
                    }
                if ((seen || g == 1) && vmax + 1 == g)
                    victim_missing = k;
            }
            if (victim_missing < 0)
                violation("barrier: generation %llu completed with %d returns of %d participants", (unsigned long long)g,
                          cnt, opt_procs);
            else if (ms(minret - bar_kill_ns[victim_missing]) > lease_ms + slack)
                violation("barrier: generation %llu completed %.0f ms after the SIGKILL of an arrival (lease %u): a "
                          "dead arrival counted past its lease",
                          (unsigned long long)g, ms(minret - bar_kill_ns[victim_missing]), lease_ms);
            else
                short_gens++;
        } else if (cnt != opt_procs) {
            violation("barrier: generation %llu completed with %d returns of %d participants", (unsigned long long)g, cnt,
                      opt_procs);
        }
        if (serial != 1 && !(serial == 0 && victim_missing >= 0))
            violation("barrier: generation %llu gave RDBARRIER_SERIAL_THREAD to %d callers", (unsigned long long)g,
                      serial);
        if (maxstart >= minret)
            violation("barrier: generation %llu released a waiter at %.3f ms before the last arrival's call at %.3f ms",
                      (unsigned long long)g, ms(minret - t_start_ns), ms(maxstart - t_start_ns));
        if (minret - prev_done > maxgap)
            maxgap = minret - prev_done, maxgap_at = prev_done;
        prev_done = minret;
        lastgen_done = minret;
        for (int k = 0; k < 2; k++) {
            if (bar_kill_ns[k] && minret < bar_kill_ns[k])
                last_before[k] = minret;
            if (bar_repl_ns[k] && minret > bar_repl_ns[k] && !first_after[k])
                for (size_t m = i; m < j; m++)
                    if (s[m]->pid == bar_repl[k])
                        first_after[k] = minret;
        }
    }
    /* timeouts: on time; expected after a kill (until the replacement's
     * first generation) and at the end (the generation some participant
     * no longer joined); others are counted */
    for (i = 0; i < nrecs; i++) {
        rec_t *r = &recs[i];
        int expected = 0;
        long long l;
        if (r->kind != K_BAR || r->token || !bar_timeout(r))
            continue;
        timeouts++;
        l = r->t_exit - r->aux;
        if (l > maxlate)
            maxlate = l;
        if (l < -10000000LL && early++ < 5)
            violation("barrier: timedwait of pid %d gave up %.0f ms before its deadline", r->pid, ms(-l));
        if (ms(l) > slack && late++ < 5)
            violation("barrier: timedwait of pid %d gave up %.0f ms after its deadline (slack %.0f)", r->pid,
                      ms(l), slack);
        for (int k = 0; k < 2; k++)
            expected |= bar_kill_ns[k] && r->t_exit >= bar_kill_ns[k] && (!first_after[k] || r->t_enter < first_after[k]);
        expected |= r->t_enter >= lastgen_done - 1000000LL; /* the generation that never completed */
        unexplained += !expected;
    }
    if (early > 5 || late > 5)
        violations += (early > 5 ? early - 5 : 0) + (late > 5 ? late - 5 : 0);
    for (int k = 0; k < 2; k++) {
        if (!bar_kill_ns[k])
            continue;
        /* every participant alive at the kill (not a victim) timed out after it */
        int survivors = 0, timed_out = 0, pids[128], npids = 0;
        for (i = 0; i < nrecs; i++) {
            rec_t *r = &recs[i];
            int dead = 0, known = 0;
            if (r->kind != K_BAR || r->t_enter >= bar_kill_ns[k])
                continue;
            for (int q = 0; q <= k; q++)
                dead |= r->pid == bar_victim[q];
            for (int q = 0; q < npids; q++)
                known |= pids[q] == r->pid;
            if (!dead && !known && npids < 128)
                pids[npids++] = r->pid;
        }
        for (int q = 0; q < npids; q++) {
            int to = 0;
            survivors++;
            for (i = 0; i < nrecs; i++)
                to |= recs[i].kind == K_BAR && recs[i].pid == pids[q] && recs[i].unlock_rc == ETIMEDOUT &&
                      recs[i].t_exit >= bar_kill_ns[k] && recs[i].t_exit <= bar_repl_ns[k];
            timed_out += to;
            if (!to)
                violation("barrier: participant %d did not time out between kill %d and the replacement", pids[q], k);
        }
        note("barrier: kill %d (pid %d) at %.0f ms: %d of %d survivors timed out before the replacement joined "
             "%.0f ms after the kill; its first generation completed %.0f ms after it joined; no generation for %.0f ms "
             "around the kill",
             k, bar_victim[k], ms(bar_kill_ns[k] - t_start_ns), timed_out, survivors,
             ms(bar_repl_ns[k] - bar_kill_ns[k]), first_after[k] ? ms(first_after[k] - bar_repl_ns[k]) : -1.0,
             first_after[k] && last_before[k] ? ms(first_after[k] - last_before[k]) : -1.0);
        if (!first_after[k])
            violation("barrier: the replacement of kill %d never completed a generation", k);
    }
    note("barrier: %ld generations (%ld completed by a victim's arrival made before it died), %ld timeouts (%ld "
         "outside the kill windows and the end), latest timeout %.0f ms past its deadline, longest stretch without "
         "a generation %.0f ms (from %.0f ms)",
         gens, short_gens, timeouts, unexplained, ms(maxlate), ms(maxgap), ms(maxgap_at - t_start_ns));
    f_sections += gens;
    free(s);
}

/* ------------------------------------------------------------------ */
/* parent                                                              */
/* ------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr, "usage: torture --scenario {baseline|kill|restart|restart-aof|pause|slow|cuts|stall|cluster|redlock|cond|barrier|redlock-prims} [--procs N] "
                    "[--threads M] [--seconds S] [--lease MS] [--short|--long] [--keep] [--verbose] [--sabotage] [--no-barrier] [--no-tls-cuts]\n");
    exit(2);
}

static void parent_alarm(int sig)
{
    (void)sig;
    static const char m[] = "torture: global time bound exceeded: killing everything\n";
    if (write(2, m, sizeof m - 1) < 0) {
    }
    kill(0, SIGKILL);
}

static long long get_counter(const char *key)
{
    redisContext *c;
    redisReply *r;
    long long v = -1;
    if (nnames > 1) {
        int m = rdt_cluster_master_of_key(&cl, key, strlen(key));
        c = m >= 0 ? rdt_connect(&cl.node[m]) : NULL;
    } else {
        c = rdt_connect(&srv);
    }
    if (!c)
        return -1;
    r = redisCommand(c, "GET %s", key);
    if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = 0;
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return v;
}

static long long get_int(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    if (r)
        freeReplyObject(r);
    return v;
}

static void wait_until(long long t)
{
    while (now_ns() < t)
        sleep_ms(5);
}

/* Scenario tls: a child that cuts every TLS connection of the library
 * (CLIENT KILL LADDR: the server's side of the TLS port, which spares the
 * checks' unix-socket connections) every TLS_CUT_MIN_MS..MAX ms until the
 * end of the run, asked over the unix socket (a fresh connection each
 * time: the server also restarts meanwhile).  Requests in flight are cut
 * mid-stream, so retries meet ambiguous attempts, and every reconnection
 * runs a TLS handshake. */
static pid_t tls_cutter;
static int tls_cut_pipe = -1;

static void tls_cuts_start(void)
{
    int pp[2];
    if (pipe(pp) != 0) {
        perror("torture: pipe");
        return;
    }
    tls_cutter = fork();
    if (tls_cutter == 0) {
        unsigned seed = (unsigned)getpid();
        long cuts = 0;
        char laddr[64];
        close(pp[0]);
        snprintf(laddr, sizeof laddr, "127.0.0.1:%d", srv.port);
        while (now_ns() < t_end_ns) {
            struct timeval tv = { 1, 0 };
            redisContext *c;
            sleep_ms(TLS_CUT_MIN_MS + (long)(rand_r(&seed) % (TLS_CUT_MAX_MS - TLS_CUT_MIN_MS + 1)));
            if ((c = redisConnectUnixWithTimeout(srv.sock, tv)) != NULL && c->err == 0) {
                redisReply *r = redisCommand(c, "CLIENT KILL LADDR %s", laddr);
                cuts += r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
                if (r)
                    freeReplyObject(r);
            }
            if (c)
                redisFree(c);
        }
        if (write(pp[1], &cuts, sizeof cuts) != (ssize_t)sizeof cuts)
            _exit(1);
        _exit(0);
    }
    close(pp[1]);
    tls_cut_pipe = pp[0];
}

/* Wait for the cutter (it ends with the run): the cuts that killed a
 * connection, or -1. */
static long tls_cuts_stop(void)
{
    long cuts = -1;
    int st;
    if (tls_cutter <= 0)
        return -1;
    if (read(tls_cut_pipe, &cuts, sizeof cuts) != (ssize_t)sizeof cuts)
        cuts = -1;
    close(tls_cut_pipe);
    waitpid(tls_cutter, &st, 0);
    tls_cutter = 0;
    return cuts;
}

static void stop_servers(void)
{
    if (nnames > 1)
        rdt_cluster_stop(&cl);
    else
        rdt_server_stop(&srv);
    for (int k = 0; k < RL_MASTERS && rl_up; k++)
        rdt_server_stop(&rl_m[k]);
    rl_up = 0;
}

/* redlock: the faults of phase ph until end (monotonic ns): pauses of one
 * or two masters, and every third fault a master killed and restarted
 * without persistence.  Returns the number of faults, or -1 when a master
 * would not come back. */
static long redlock_faults(long long end, unsigned *seed, long *pauses, long *restarts)
{
    long n = 0;
    while (now_ns() < end - 300000000LL) {
        int a = (int)(rand_r(seed) % RL_MASTERS), b = (a + 1 + (int)(rand_r(seed) % (RL_MASTERS - 1))) % RL_MASTERS;
        if (n % 3 == 2) {
            rdt_server_kill(&rl_m[a]);
            sleep_ms(lease_ms / 4);
            if (rdt_server_restart(&rl_m[a]) != 0)
                return -1;
            (*restarts)++;
        } else {
            int two = rand_r(seed) % 2;
            rdt_server_pause(&rl_m[a]);
            if (two)
                rdt_server_pause(&rl_m[b]);
            sleep_ms(100 + (long)(rand_r(seed) % 700));
            rdt_server_resume(&rl_m[a]);
            if (two)
                rdt_server_resume(&rl_m[b]);
            (*pauses)++;
        }
        n++;
        sleep_ms(200);
    }
    return n;
}

/* cluster: the faults of phase ph, until end (monotonic ns): the slot of a
 * random name of the phase moved to another master, again and again; a
 * redis-cli reshard of a batch of slots; at a third of the phase, a manual
 * failover of the master of the phase's first name.  Returns the number of
 * faults, or -1 when the cluster would not do what it was asked. */
static long cluster_faults(int ph, long long end, unsigned *seed, long *moves, long *reshards, long *failovers)
{
    long long failover_at = now_ns() + (end - now_ns()) / 3;
    int failed_over = 0, resharded = 0;
    while (now_ns() < end - 1500000000LL) {
        char name[64], key[96];
        int slot, from, to, m[RDT_CLUSTER_NODES], nm = 0;
        for (int i = 0; i < RDT_CLUSTER_NODES; i++)
            if (rdt_cluster_is_master(&cl, i) == 1)
                m[nm++] = i;
        if (nm < 2)
            return -1;
        if (!failed_over && now_ns() >= failover_at) {
            lock_name(ph, 0, name, sizeof name);
            snprintf(key, sizeof key, "rdlock:{%s}", name);
            from = rdt_cluster_master_of_key(&cl, key, strlen(key));
            if (from < 0 || rdt_cluster_failover(&cl, from, 60000) < 0)
                return -1;
            failed_over = 1;
            (*failovers)++;
            continue;
        }
        if (!resharded) {
            from = m[rand_r(seed) % (unsigned)nm];
            do
                to = m[rand_r(seed) % (unsigned)nm];
            while (to == from);
            if (rdt_cluster_reshard(&cl, from, to, 100, 60000) != 0)
                return -1;
            resharded = 1;
            (*reshards)++;
            continue;
        }
        lock_name(ph, (int)(rand_r(seed) % (unsigned)nnames), name, sizeof name);
        snprintf(key, sizeof key, "rdlock:{%s}", name);
        slot = rdt_cluster_key_slot(&cl, key, strlen(key));
        from = slot >= 0 ? rdt_cluster_slot_owner(&cl, 0, slot) : -1;
        if (from < 0)
            return -1;
        do
            to = m[rand_r(seed) % (unsigned)nm];
        while (to == from);
        if (rdt_cluster_migrate_slot(&cl, slot, from, to, NULL, NULL) != 0)
            return -1;
        (*moves)++;
        sleep_ms(100 + rand_r(seed) % 400);
    }
    return *moves + *reshards + *failovers;
}

int main(int argc, char **argv)
{
    int i, extra_procs = 0, status, crashes = 0, hangs = 0, failed_setup = 0, proxy_port = 0, lfd = -1;
    pid_t pids[512], proxy_pid = 0;
    int killed[512] = { 0 }; /* SIGKILLed on purpose (barrier victims) */
    int victim_pipe[2] = { -1, -1 };
    const char *ini;
    char ini_text[1024], faults[256] = "none", stall_note[300] = "";
    long total_faults = 0;
    int procs_given = 0, threads_given = 0;
    long long stats_lock[NCODES] = { 0 }, stats_unlock[NCODES] = { 0 }, lostcb_total = 0, cretries = 0;
    long long stats_wait[NCODES] = { 0 }, sigfail = 0, sem_timeouts = 0, sem_bad = 0, sig_eio = 0;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scenario") && i + 1 < argc)
            opt_scenario = argv[++i];
        else if (!strcmp(argv[i], "--procs") && i + 1 < argc)
            opt_procs = atoi(argv[++i]), procs_given = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            opt_threads = atoi(argv[++i]), threads_given = 1;
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            opt_seconds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lease") && i + 1 < argc)
            opt_lease = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--short"))
            opt_long = 0;
        else if (!strcmp(argv[i], "--long"))
            opt_long = 1;
        else if (!strcmp(argv[i], "--keep"))
            opt_keep = 1;
        else if (!strcmp(argv[i], "--sabotage"))
            opt_sabotage = 1;
        else if (!strcmp(argv[i], "--no-barrier"))
            opt_no_barrier = 1;
        else if (!strcmp(argv[i], "--tls-cuts"))
            opt_tls_cuts = 1; /* the default now; kept for old command lines */
        else if (!strcmp(argv[i], "--no-tls-cuts"))
            opt_tls_cuts = 0;
        else if (!strcmp(argv[i], "--verbose"))
            opt_verbose = 1;
        else
            usage();
    }
    for (sc = 0; sc_names[sc] && strcmp(sc_names[sc], opt_scenario); sc++)
        ;
    if (sc_names[sc] && sc == SC_SLOW) { /* every hand-over costs round trips of lease/3 */
        if (!procs_given)
            opt_procs = 2;
        if (!threads_given)
            opt_threads = 2;
    }
    if (sc_names[sc] && sc == SC_BARRIER) { /* one participant per process */
        if (threads_given && opt_threads != 1)
            fprintf(stderr, "torture: barrier: one thread per process (--threads %d ignored)\n", opt_threads);
        opt_threads = 1;
    }
    if (!sc_names[sc] || opt_procs < 1 || opt_procs > 64 || opt_threads < 1 || opt_threads > 256 ||
        ((sc == SC_COND || sc == SC_RLPRIMS) && opt_threads < 2) || ((sc == SC_BARRIER || sc == SC_RLPRIMS) && opt_procs < 2))
        usage();
    if (!opt_seconds)
        /* redlock-prims: three workloads in turn, each about as long as
         * a phase of the others */
        opt_seconds = sc == SC_RLPRIMS ? (opt_long ? 90 : 24) : opt_long ? 60 : 8;
    if (opt_seconds < 4)
        opt_seconds = 4;
    lease_ms = opt_lease ? opt_lease : (sc == SC_SLOW ? 1500 : 1000);
    if (sc == SC_SLOW)
        proxy_delay_ms = lease_ms / 6; /* round trip = lease / 3 */
    if (sc == SC_CUTS)
        proxy_cuts = 1;
    if (sc == SC_STALL)
        /* a long stall makes the client give up (and retry) after 500 ms;
         * the watchdog (every 333 ms) just outlives one stalled renewal */
        timeout_ms = 500;
    if (sc == SC_SLOW)
        timeout_ms = lease_ms;

    setpgid(0, 0);
    signal(SIGALRM, parent_alarm);
    alarm((unsigned)opt_seconds + 240);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (sc == SC_CLUSTER) {
        nnames = TORTURE_NAMES;
        if (rdt_cluster_start(&cl, NULL) != 0)
            return 2;
    } else if (on_quorum()) {
        rl_up = 1;
        /* A primitive's state, unlike a hold, never expires: the restart
         * delay cannot stand in for the data a master restarted empty
         * lost, and the contract asks for persistent masters there
         * (docs/CONTRACT.md 9.5, "a primitive's state survives while a
         * majority of the masters keeps its data").  The locks of
         * scenario redlock are tested restarted empty. */
        for (i = 0; i < RL_MASTERS; i++)
            if (rdt_server_start(&rl_m[i], NULL,
                                 sc == SC_RLPRIMS ? "--appendonly yes --appendfsync always" : NULL) != 0) {
                stop_servers();
                return 2;
            }
        if (rdt_server_start(&srv, NULL, NULL) != 0) {
            stop_servers();
            return 2;
        }
    } else if (sc == SC_TLS) {
#ifdef RDL_HAVE_TLS
        if (rdt_server_start_tls(&srv, "server", 0, "--appendonly yes --appendfsync always") != 0)
            return 2;
#else
        printf("torture: scenario tls: this librdlock was built without TLS (hiredis < 1.0)\n");
        return 77;
#endif
    } else if (rdt_server_start(&srv, NULL, sc == SC_RESTART_AOF ? "--appendonly yes --appendfsync always" : NULL) !=
               0) {
        return 2;
    }
    snprintf(logdir, sizeof logdir, "%s/rdlock-torture-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(logdir)) {
        perror("torture: mkdtemp");
        rdt_server_stop(&srv);
        return 2;
    }

    if (sc == SC_SLOW || sc == SC_CUTS) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 128) != 0 ||
            getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
            perror("torture: proxy socket");
            rdt_server_stop(&srv);
            return 2;
        }
        proxy_port = ntohs(sa.sin_port);
    }
    if (sc == SC_STALL) {
        int pp[2];
        struct pollfd pf;
        if (pipe(pp) != 0) {
            perror("torture: pipe");
            rdt_server_stop(&srv);
            return 2;
        }
        proxy_pid = fork();
        if (proxy_pid == 0) {
            close(pp[0]);
            alarm((unsigned)opt_seconds + 200);
            stall_main(pp[1]);
            _exit(0);
        }
        close(pp[1]);
        pf.fd = pp[0];
        pf.events = POLLIN;
        pf.revents = 0;
        if (proxy_pid < 0 || poll(&pf, 1, 10000) != 1 || read(pp[0], &proxy_port, sizeof proxy_port) != (ssize_t)sizeof proxy_port) {
            fprintf(stderr, "torture: the stall proxy did not start\n");
            if (proxy_pid > 0) {
                kill(proxy_pid, SIGKILL);
                waitpid(proxy_pid, &status, 0);
            }
            rdt_server_stop(&srv);
            return 2;
        }
        close(pp[0]);
    }
    /* ini: short lease so faults resolve within seconds */
    if (sc == SC_CLUSTER)
        snprintf(ini_text, sizeof ini_text,
                 "[cluster]\nnodes = 127.0.0.1:%d, 127.0.0.1:%d\n[redis]\ncommand_timeout_ms = %u\n"
                 "[lock]\nlease_ms = %u\nretry_interval_ms = %u\nretry_jitter_ms = 20\n",
                 cl.node[0].port, cl.node[3].port, timeout_ms, lease_ms, retry_ms);
    else if (on_quorum())
        snprintf(ini_text, sizeof ini_text,
                 "[redlock]\nmasters = 127.0.0.1:%d, 127.0.0.1:%d, 127.0.0.1:%d, 127.0.0.1:%d, 127.0.0.1:%d\n"
                 "[redis]\ncommand_timeout_ms = %u\n"
                 "[lock]\nlease_ms = %u\nretry_interval_ms = %u\nretry_jitter_ms = 20\n",
                 rl_m[0].port, rl_m[1].port, rl_m[2].port, rl_m[3].port, rl_m[4].port, timeout_ms, lease_ms,
                 retry_ms);
    else
        snprintf(ini_text, sizeof ini_text,
                 "[redis]\nhost = 127.0.0.1\nport = %d\ncommand_timeout_ms = %u\n%s%s%s"
                 "[lock]\nlease_ms = %u\nretry_interval_ms = %u\nretry_jitter_ms = 20\n",
                 proxy_port ? proxy_port : srv.port, timeout_ms, sc == SC_TLS ? "tls = yes\ntls_ca_cert_file = " : "",
                 sc == SC_TLS ? rdt_tls_certs() : "", sc == SC_TLS ? "/ca.crt\n" : "", lease_ms, retry_ms);
    ini = rdt_write_file(sc == SC_CLUSTER ? &cl.node[0] : &srv, "torture.ini", ini_text);
    if (!ini) {
        stop_servers();
        return 2;
    }
    w_ini = ini;

    if (on_quorum())
        /* Masters that started less than the restart delay (the lease)
         * ago have no vote: the workers start once they have one. */
        sleep_ms(lease_ms + 100);
    t_start_ns = now_ns() + 300000000LL; /* workers settle their clients first */
    t_half_ns = t_start_ns + (long long)opt_seconds * 500000000LL;
    t_end_ns = t_start_ns + (long long)opt_seconds * 1000000000LL;
    cq_start_ns = bar_start_ns = sem_end_ns = t_start_ns;
    cq_half_ns = t_half_ns;
    cq_end_ns = bar_end_ns = t_end_ns;
    if (sc == SC_RLPRIMS) {
        /* the semaphore 30%, the barrier 30%, the queue 40% (then its
         * drain); a timed barrier wait on a quorum under faults needs
         * more room than on one server, and each part is longer than the
         * faults can stall a step (quorum_stall_ms) even in the short run */
        long long len = t_end_ns - t_start_ns;
        sem_end_ns = bar_start_ns = t_start_ns + len * (opt_no_barrier ? 4 : 3) / 10;
        bar_end_ns = cq_start_ns = t_start_ns + len * (opt_no_barrier ? 4 : 6) / 10;
        cq_half_ns = (cq_start_ns + cq_end_ns) / 2;
        /* A wait outlasts one stall of the quorum: with a shorter
         * deadline (it was 2 s) every participant timed out through each
         * stall, and their withdrawals, themselves stalled, kept the four
         * arrivals from ever being in at once: a run under load completed
         * no generation in the barrier's 7.2 s.  Timeouts on the quorum
         * still come at the end of the part (the generation that never
         * completes) and when faults outlast the bound. */
        bar_deadline_ms = (unsigned)quorum_stall_ms();
    }

    if (lfd >= 0) {
        proxy_pid = fork();
        if (proxy_pid == 0) {
            alarm((unsigned)opt_seconds + 200);
            proxy_main(lfd, proxy_cuts ? 100 : 0, proxy_cuts ? (opt_long ? 1500 : 700) : 0);
            _exit(0);
        }
        close(lfd);
    }
    for (i = 0; i < opt_procs; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            signal(SIGALRM, SIG_DFL);
            _exit(sc == SC_COND      ? cond_main(i)
                  : sc == SC_BARRIER ? bar_main(i, 0)
                  : sc == SC_RLPRIMS ? rp_main(i)
                                     : worker_main(i));
        }
    }
    if (sc == SC_KILL || sc == SC_COND) {
        if (pipe(victim_pipe) != 0)
            return 2;
        for (i = 0; i < 2; i++) {
            long long at = i == 0 ? t_start_ns + (t_half_ns - t_start_ns) / 3 : t_half_ns + (t_end_ns - t_half_ns) / 3;
            pids[opt_procs + i] = fork();
            if (pids[opt_procs + i] == 0) {
                signal(SIGALRM, SIG_DFL);
                close(victim_pipe[0]);
                _exit(sc == SC_COND ? cond_victim_main(i, victim_pipe[1], at) : victim_main(i, victim_pipe[1], at));
            }
        }
        extra_procs = 2;
        close(victim_pipe[1]);
    }

    if (sc == SC_TLS && opt_tls_cuts)
        tls_cuts_start();
    /* fault injection: once per phase, at a third of the phase (cluster:
     * all through the phase) */
    for (int ph = 0; ph < 2; ph++) {
        long long at = ph == 0 ? t_start_ns + (t_half_ns - t_start_ns) / 3 : t_half_ns + (t_end_ns - t_half_ns) / 3;
        if (sc == SC_CLUSTER) {
            static long moves, reshards, failovers;
            unsigned seed = (unsigned)getpid() + (unsigned)ph;
            wait_until(ph == 0 ? t_start_ns + 500000000LL : t_half_ns);
            if (cluster_faults(ph, ph == 0 ? t_half_ns : t_end_ns, &seed, &moves, &reshards, &failovers) < 0) {
                fprintf(stderr, "torture: the cluster did not do as asked (migrate, reshard or failover)\n");
                failed_setup = 1;
                break;
            }
            total_faults = moves + reshards + failovers;
            snprintf(faults, sizeof faults, "%ld slot moves of a held name, %ld reshards of 100 slots, %ld failovers",
                     moves, reshards, failovers);
        } else if (on_quorum()) {
            static long pauses, restarts;
            unsigned seed = (unsigned)getpid() * 7u + (unsigned)ph;
            wait_until(ph == 0 ? t_start_ns + 300000000LL : t_half_ns);
            if (redlock_faults(ph == 0 ? t_half_ns : t_end_ns, &seed, &pauses, &restarts) < 0) {
                fprintf(stderr, "torture: a redlock master did not restart\n");
                failed_setup = 1;
                break;
            }
            total_faults = pauses + restarts;
            snprintf(faults, sizeof faults, "%ld SIGSTOPs of 1-2 masters, %ld master restarts (%s)", pauses,
                     restarts, sc == SC_RLPRIMS ? "AOF, fsync always" : "no persistence");
        } else if (sc == SC_COND) {
            char ch;
            struct pollfd p = { victim_pipe[0], POLLIN, 0 };
            long long ph_start = ph == 0 ? t_start_ns : t_half_ns, ph_len = t_half_ns - t_start_ns;
            redisContext *c;
            redisReply *r;
            if (poll(&p, 1, (int)((t_end_ns - now_ns()) / 1000000) + 30000) <= 0 || read(victim_pipe[0], &ch, 1) != 1) {
                fprintf(stderr, "torture: cond victim %d never took the lock\n", ph);
                failed_setup = 1;
                break;
            }
            /* it waits on its condition from a moment after it told us;
             * the watchdog renews its registration meanwhile */
            sleep_ms(lease_ms / 2);
            cq_kill_ns[ph] = now_ns();
            kill(pids[opt_procs + ph], SIGKILL);
            total_faults++;
            wait_until(ph_start + ph_len * 2 / 3);
            if (!(c = rdt_connect(&srv))) {
                failed_setup = 1;
                break;
            }
            cq_pause_ns[ph] = now_ns();
            r = redisCommand(c, "CLIENT PAUSE %d ALL", CQ_PAUSE_MS);
            if (r && r->type == REDIS_REPLY_ERROR) { /* Redis < 6.2 */
                freeReplyObject(r);
                r = redisCommand(c, "CLIENT PAUSE %d", CQ_PAUSE_MS);
            }
            if (!r || r->type == REDIS_REPLY_ERROR) {
                fprintf(stderr, "torture: CLIENT PAUSE: %s\n", r ? r->str : c->errstr);
                failed_setup = 1;
            }
            if (r)
                freeReplyObject(r);
            redisFree(c);
            total_faults++;
        } else if (sc == SC_BARRIER) {
            /* SIGKILL participant ph a quarter into the phase (it is in a
             * wait nearly all the time); the replacement joins once the
             * victim's arrival has surely lapsed (lease + 200 ms) and
             * every survivor's timed wait has timed out since the kill */
            long long ph_start = ph == 0 ? t_start_ns : t_half_ns, ph_len = t_half_ns - t_start_ns;
            long long before[64], bound;
            redisContext *c;
            int all;
            wait_until(ph_start + ph_len / 4);
            if (!(c = rdt_connect(&srv))) {
                failed_setup = 1;
                break;
            }
            for (int q = 0; q < opt_procs; q++) {
                char key[64];
                bar_to_key(pids[q], key, sizeof key);
                before[q] = get_int(c, key);
            }
            bar_victim[ph] = pids[ph];
            bar_kill_ns[ph] = now_ns();
            kill(pids[ph], SIGKILL);
            killed[ph] = 1;
            total_faults++;
            bound = bar_kill_ns[ph] + (long long)(lease_ms + 3 * bar_deadline_ms + 10000) * 1000000LL;
            do {
                sleep_ms(20); /* polls a condition: the survivors' timeout counts */
                all = now_ns() >= bar_kill_ns[ph] + (long long)(lease_ms + 200) * 1000000LL;
                for (int q = 0; q < opt_procs && all; q++) {
                    char key[64];
                    int dead = 0;
                    for (int v = 0; v <= ph; v++)
                        dead |= pids[q] == bar_victim[v];
                    bar_to_key(pids[q], key, sizeof key);
                    all = dead || get_int(c, key) > before[q];
                }
            } while (!all && now_ns() < bound);
            redisFree(c);
            bar_repl_ns[ph] = now_ns();
            bar_repl[ph] = fork();
            if (bar_repl[ph] == 0) {
                signal(SIGALRM, SIG_DFL);
                _exit(bar_main(ph, 1));
            }
            pids[opt_procs + extra_procs++] = bar_repl[ph];
        } else if (sc == SC_KILL) {
            char ch;
            struct pollfd p = { victim_pipe[0], POLLIN, 0 };
            if (poll(&p, 1, (int)((t_end_ns - now_ns()) / 1000000) + 30000) <= 0 || read(victim_pipe[0], &ch, 1) != 1) {
                fprintf(stderr, "torture: victim %d never acquired\n", ph);
                failed_setup = 1;
                break;
            }
            sleep_ms(lease_ms / 2); /* let the watchdog renew at least once */
            kill_ns[ph] = now_ns();
            kill(pids[opt_procs + ph], SIGKILL);
            total_faults++;
        } else if (restarts_server()) {
            wait_until(at);
            rdt_server_kill(&srv);
            sleep_ms(lease_ms / 2);
            if (rdt_server_restart(&srv) != 0) {
                fprintf(stderr, "torture: restart failed\n");
                failed_setup = 1;
                break;
            }
            restart_ns[ph] = now_ns();
            total_faults++;
        } else if (sc == SC_PAUSE) {
            redisContext *c;
            redisReply *r;
            wait_until(at);
            c = rdt_connect(&srv);
            if (!c) {
                failed_setup = 1;
                break;
            }
            pause_dur_ns = (long long)lease_ms * 2500000LL;
            pause_t0[ph] = now_ns();
            r = redisCommand(c, "CLIENT PAUSE %lld ALL", pause_dur_ns / 1000000);
            if (r && r->type == REDIS_REPLY_ERROR) { /* Redis < 6.2: no mode, pauses all commands */
                freeReplyObject(r);
                r = redisCommand(c, "CLIENT PAUSE %lld", pause_dur_ns / 1000000);
            }
            pause_t1[ph] = now_ns();
            if (!r || r->type == REDIS_REPLY_ERROR) {
                fprintf(stderr, "torture: CLIENT PAUSE: %s\n", r ? r->str : c->errstr);
                failed_setup = 1;
            }
            if (r)
                freeReplyObject(r);
            redisFree(c);
            total_faults++;
        }
    }
    if (sc == SC_KILL)
        snprintf(faults, sizeof faults, "%ld holder SIGKILLs", total_faults);
    else if (sc == SC_COND)
        snprintf(faults, sizeof faults, "%ld SIGKILLs of a condition waiter, %ld CLIENT PAUSE %d ms", total_faults / 2,
                 total_faults / 2, CQ_PAUSE_MS);
    else if (sc == SC_BARRIER)
        snprintf(faults, sizeof faults, "%ld SIGKILLs of a participant (replaced)", total_faults);
    else if (sc == SC_RESTART)
        snprintf(faults, sizeof faults, "%ld server SIGKILL+restart (no persistence)", total_faults);
    else if (sc == SC_RESTART_AOF)
        snprintf(faults, sizeof faults, "%ld server SIGKILL+restart (AOF)", total_faults);
    else if (sc == SC_TLS)
        if (opt_tls_cuts)
            snprintf(faults, sizeof faults, "TLS only: %ld server SIGKILL+restart (AOF), %ld cuts of every TLS connection",
                     total_faults, tls_cuts_stop());
        else
            snprintf(faults, sizeof faults, "TLS only: %ld server SIGKILL+restart (AOF)", total_faults);
    else if (sc == SC_PAUSE)
        snprintf(faults, sizeof faults, "%ld CLIENT PAUSE %u ms (2.5 leases)", total_faults, lease_ms * 5 / 2);
    else if (sc == SC_SLOW)
        snprintf(faults, sizeof faults, "+%u ms each way per chunk (RTT = lease/3 = %u ms)", proxy_delay_ms,
                 proxy_delay_ms * 2);

    /* wait for workers (bounded) */
    for (i = 0; i < opt_procs + extra_procs; i++) {
        long long left_ms = (t_end_ns - now_ns()) / 1000000 + 60000;
        int victim = i >= opt_procs;
        pid_t r = 0;
        for (;;) {
            r = waitpid(pids[i], &status, WNOHANG);
            if (r != 0 || left_ms <= 0)
                break;
            sleep_ms(20);
            left_ms -= 20;
        }
        if (r == 0) {
            fprintf(stderr, "VIOLATION: worker %d (pid %d) hangs past the bound: SIGKILL\n", i, (int)pids[i]);
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status, 0);
            hangs++;
            continue;
        }
        if (((victim && sc != SC_BARRIER) || killed[i]) && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
            continue;
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "VIOLATION: worker %d (pid %d) died of signal %d%s\n", i, (int)pids[i], WTERMSIG(status),
                    WTERMSIG(status) == SIGALRM ? " (its time bound: hang)" : "");
            crashes++;
        } else if (WEXITSTATUS(status) != 0) {
            fprintf(stderr, "torture: worker %d exited %d\n", i, WEXITSTATUS(status));
            if (WEXITSTATUS(status) == 2)
                failed_setup = 1;
            else
                crashes++;
        }
    }
    if (proxy_pid > 0) {
        char path[700];
        FILE *f;
        kill(proxy_pid, SIGKILL);
        waitpid(proxy_pid, &status, 0);
        if (sc == SC_STALL) {
            long stalls = 0, longs = 0, delivered = 0, late = 0, accepted = 0;
            snprintf(path, sizeof path, "%s/proxy.stalls", logdir);
            f = fopen(path, "r");
            if (f) {
                if (fscanf(f, "%ld %ld %ld %ld %ld", &stalls, &longs, &delivered, &late, &accepted) != 5)
                    stalls = longs = delivered = late = accepted = 0;
                fclose(f);
            }
            total_faults = stalls;
            snprintf(faults, sizeof faults, "%ld stalls (%ld > command_timeout %u ms), %ld held requests, %ld of them "
                     "delivered after the client closed", stalls, longs, timeout_ms, delivered, late);
            snprintf(stall_note, sizeof stall_note,
                     "stall proxy: %ld connections accepted; %ld of %ld stalls held requests back, %ld of those were "
                     "delivered after their client had given up on them and closed the connection",
                     accepted, delivered, stalls, late);
        }
        if (sc == SC_CUTS) {
            snprintf(path, sizeof path, "%s/proxy.cuts", logdir);
            f = fopen(path, "r");
            if (f) {
                if (fscanf(f, "%ld", &total_faults) != 1)
                    total_faults = 0;
                fclose(f);
            }
            snprintf(faults, sizeof faults, "%ld connection cuts", total_faults);
        }
    }

    /* check */
    load_logs();
    for (size_t k = 0; k < nrecs; k++)
        if (recs[k].kind == K_STATS) {
            for (i = 0; i < NCODES; i++) {
                stats_lock[i] += recs[k].lock_codes[i];
                stats_unlock[i] += recs[k].unlock_codes[i];
            }
            lostcb_total += recs[k].lostcb;
            for (i = 0; i < NCODES; i++)
                stats_wait[i] += recs[k].wait_codes[i];
            sigfail += recs[k].sigfail;
            sem_timeouts += recs[k].sem_timeouts;
            sem_bad += recs[k].sem_bad;
            sig_eio += recs[k].sig_eio;
            cretries += recs[k].counter_retries;
            {
                /* per process: lost callbacks <= ENOLCK unlocks */
                long enolck = recs[k].wait_codes[C_ENOLCK];
                for (size_t j = 0; j < nrecs; j++)
                    enolck += recs[j].pid == recs[k].pid &&
                              (recs[j].kind == K_WRITE || recs[j].kind == K_READ || recs[j].kind == K_PUSH ||
                               recs[j].kind == K_POP) &&
                              recs[j].unlock_rc == ENOLCK;
                if (recs[k].lostcb > enolck)
                    violation("pid %d: %lld lost callbacks but only %ld unlocks returned ENOLCK", recs[k].pid,
                              (long long)recs[k].lostcb, enolck);
            }
        }
    printf("torture: scenario %s, %d x %d, %d s (%s), lease %u ms%s\n", opt_scenario, opt_procs, opt_threads,
           opt_seconds, opt_long ? "long" : "short", lease_ms,
           nnames > 1 ? ", 8 names per phase on a 3-master cluster" : on_quorum() ? ", a quorum of 5 masters" : "");
    printf("  faults: %s\n", faults);
    if (stall_note[0])
        note("%s", stall_note);
    wait_enolck = stats_wait[C_ENOLCK];
    if (sc == SC_RLPRIMS) {
        /* every permit back: seen by a fresh client on the quorum (the
         * faults are over; a restarted master may still lack its vote) */
        rdlock_client_t *pc = NULL;
        rdsem_t sem;
        int value = -1, vrc;
        rdlock_set_logger(quiet_logger, NULL);
        if ((vrc = rdlock_client_open(&pc, ini)) == 0) {
            if ((vrc = sem_open_leased(&sem, pc)) == 0) {
                vrc = rdsem_getvalue(&sem, &value);
                rdsem_destroy(&sem);
            }
            rdlock_client_close(pc);
        }
        check_sem(get_counter(RS_OCC), value, vrc);
        note("cond: on lock %s (5 masters) with conditions %s (not-empty) and %s:notfull", RQ_NAME, RQ_NAME, RQ_NAME);
        check_cond(get_counter(CQ_HEAD), get_counter(CQ_TAIL));
        if (!opt_no_barrier)
            check_barrier();
        else
            note("barrier: not run (--no-barrier)");
        {
            /* each workload made progress under the faults */
            long nsem = 0, nq = 0, ngen = 0;
            long long first[64] = { 0 }, latest = 0;
            for (size_t k = 0; k < nrecs; k++) {
                nsem += recs[k].kind == K_SEM;
                nq += recs[k].kind == K_PUSH || recs[k].kind == K_POP;
                ngen += recs[k].kind == K_BAR && recs[k].token != 0;
                if (recs[k].kind == K_BAR && recs[k].name >= 0 && recs[k].name < 64 &&
                    (!first[recs[k].name] || recs[k].t_enter < first[recs[k].name]))
                    first[recs[k].name] = recs[k].t_enter;
            }
            for (int q = 0; q < opt_procs && q < 64; q++)
                if (first[q] > latest)
                    latest = first[q];
            if (!opt_no_barrier)
                note("barrier: the last participant's first call %.0f ms after the barrier's part began (%.0f ms "
                     "long)",
                     latest ? ms(latest - bar_start_ns) : -1.0, ms(bar_end_ns - bar_start_ns));
            if (!nsem || !nq || (!ngen && !opt_no_barrier))
                violation("redlock-prims: a workload never got through (%ld semaphore sections, %ld queue operations, "
                          "%ld barrier returns)",
                          nsem, nq, ngen);
        }
    } else if (sc == SC_COND)
        check_cond(get_counter(CQ_HEAD), get_counter(CQ_TAIL));
    else if (sc == SC_BARRIER)
        check_barrier();
    for (int ph = 0; ph < 2 && sc != SC_COND && sc != SC_BARRIER && sc != SC_RLPRIMS; ph++)
        for (int k = 0; k < nnames; k++) {
            char key[96];
            int counter_valid = sc != SC_RESTART;
            int tokens_enforced = sc != SC_RESTART;
            counter_key(ph, k, key, sizeof key);
            check_phase(ph, k, get_counter(key), counter_valid, tokens_enforced);
        }
    {
        if (sc == SC_RESTART)
            note("restart without persistence: the counter and the fencing counter restart from 0; the overlaps above "
                 "all involve holds reported lost, and the token order breaks are what a fenced resource refuses");
    }
    note("lock codes: 0=%lld ENOLCK=%lld EIO=%lld EPERM=%lld EINVAL=%lld EDEADLK=%lld other=%lld non-contract=%lld",
         stats_lock[C_OK], stats_lock[C_ENOLCK], stats_lock[C_EIO], stats_lock[C_EPERM], stats_lock[C_EINVAL],
         stats_lock[C_EDEADLK], stats_lock[C_OTHER], stats_lock[C_BADCODE]);
    note("unlock codes: 0=%lld ENOLCK=%lld EIO=%lld EPERM=%lld EINVAL=%lld EDEADLK=%lld other=%lld non-contract=%lld",
         stats_unlock[C_OK], stats_unlock[C_ENOLCK], stats_unlock[C_EIO], stats_unlock[C_EPERM], stats_unlock[C_EINVAL],
         stats_unlock[C_EDEADLK], stats_unlock[C_OTHER], stats_unlock[C_BADCODE]);
    if (sc == SC_RLPRIMS) {
        note("rdsem_clockwait (deadline: the end of the semaphore's part): %lld gave up at the deadline, %lld "
             "returned another code than 0 or, at the deadline, ETIMEDOUT or EIO",
             sem_timeouts, sem_bad);
        if (sem_bad)
            violation("%lld rdsem_clockwait calls returned a code other than 0 before their deadline, or other than "
                      "0, ETIMEDOUT and EIO at it",
                      sem_bad);
    }
    if (sc == SC_COND || sc == SC_RLPRIMS) {
        note("rdcond_wait codes: 0=%lld ENOLCK=%lld EIO=%lld EPERM=%lld EINVAL=%lld EDEADLK=%lld other=%lld "
             "non-contract=%lld; failed signals/broadcasts %lld; sent again after EIO %lld",
             stats_wait[C_OK], stats_wait[C_ENOLCK], stats_wait[C_EIO], stats_wait[C_EPERM], stats_wait[C_EINVAL],
             stats_wait[C_EDEADLK], stats_wait[C_OTHER], stats_wait[C_BADCODE], sigfail, sig_eio);
        for (i = 0; i < NCODES; i++)
            if (i != C_OK && i != C_ENOLCK && stats_wait[i])
                violation("rdcond_wait returned a code other than 0 or ENOLCK %lld times (contract 12.4: no "
                          "fail_fast, lock not robust)",
                          stats_wait[i]);
        if (sigfail)
            violation("%lld rdcond_signal / rdcond_broadcast calls failed", sigfail);
    }
    note("lost callbacks: %lld; plain-connection retries: %lld", lostcb_total, cretries);
    if (stats_lock[C_BADCODE] || stats_unlock[C_BADCODE])
        violation("a call returned a code outside docs/CONTRACT.md section 2");
    for (i = 0; i < NCODES; i++)
        if (i != C_OK && stats_lock[i])
            violation("blocking lock returned %s %lld times (contract section 2: only 0 or an error waiting "
                      "cannot heal; EIO only with fail_fast)",
                      i == C_EIO ? "EIO" : i == C_ENOLCK ? "ENOLCK" : i == C_EPERM ? "EPERM" : i == C_EINVAL ? "EINVAL" : i == C_EDEADLK ? "EDEADLK" : "another code",
                      stats_lock[i]);
    if (stats_unlock[C_EPERM] || stats_unlock[C_EINVAL] || stats_unlock[C_EDEADLK] || stats_unlock[C_OTHER])
        violation("unlock of a held lock returned a code other than 0, ENOLCK or EIO");
    if (crashes || hangs)
        violation("%d crashes, %d hangs", crashes, hangs);
    if (f_sections == 0)
        violation("no section completed at all");
    if (failed_setup)
        fprintf(stderr, "torture: setup failure\n");

    {
        const char *verdict = failed_setup ? "ERROR" : violations ? "FAIL" : "PASS";
        printf("RESULT|%s|%d x %d|%d s|%s|%ld|%ld (silent %ld)|%ld / %lld cb|%d|%s\n", opt_scenario, opt_procs,
               opt_threads, opt_seconds, faults, f_sections, f_overlaps, f_silent, f_lost, lostcb_total,
               crashes + hangs, verdict);
    }
    if (opt_keep)
        printf("  logs kept in %s\n", logdir);
    else {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", logdir);
        if (system(cmd) != 0) {
        }
    }
    stop_servers();
    return failed_setup ? 2 : violations ? 1 : 0;
}
