/* step_cost.c - step 11: what an uncontended lock+unlock pair costs the
 * server (issue 26), next to the lock most Redis users have: redis-py's
 * Lock, done here in C with its two commands, SET NX PX to acquire and
 * EVALSHA of its release script.  The three workloads (that peer, the
 * mutex, the read-write lock's read share) run on one thread against the
 * bench's server, interleaved in chunks so that all three see the same
 * moment of a noisy machine, with INFO commandstats before and after
 * every chunk (outside the chunk; INFO itself is left out of the sums). */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define COST_CHUNK 50
#define COST_SCRIPT_CALLS 200 /* single calls per script, for the per-call figure */
#define MUTEX_TARGET 2.0      /* issue 26: mutex pair <= 2 x the peer's server time */
#define READ_TARGET 2.5       /* issue 26: read-share pair <= 2.5 x */

/* redis-py's Lock.LUA_RELEASE_SCRIPT (redis/lock.py), line for line. */
static const char peer_release_lua[] = "\n"
                                       "        local token = redis.call('get', KEYS[1])\n"
                                       "        if not token or token ~= ARGV[1] then\n"
                                       "            return 0\n"
                                       "        end\n"
                                       "        redis.call('del', KEYS[1])\n"
                                       "        return 1\n"
                                       "    ";

static const char *const wname[COST_NW] = { "peer", "mutex", "read" };

/* The connection the peer works on (and the INFO calls go over), the
 * library's two locks on clients of their own. */
typedef struct cost_ctx {
    redisContext *c;
    ulock_t u;
    rwl_t rw;
    char sha[64];        /* the peer's release script */
    char tok[40];        /* the peer's token of the pair under way */
    unsigned long serial; /* makes each token new, as redis-py's uuid1 */
    int n;               /* pairs of each workload per repetition */
} cost_ctx_t;

/* The peer's acquire: SET <key> <token> NX PX 30000, as redis-py's
 * Lock(timeout=30).acquire() sends it.  0 or -1 (printed). */
static int peer_acquire(cost_ctx_t *x)
{
    redisReply *r;
    int ok;

    snprintf(x->tok, sizeof x->tok, "%016lx%016lx", 0x5eedUL, ++x->serial); /* 32 hex, as uuid1().hex */
    r = redisCommand(x->c, "SET %s %s NX PX 30000", "bench-cost-peer", x->tok);
    ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    if (!ok)
        fail("peer SET NX PX: %s", r ? (r->str ? r->str : "not OK") : x->c->errstr);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* The peer's release: EVALSHA of redis-py's script; it must answer 1. */
static int peer_release(cost_ctx_t *x)
{
    redisReply *r = redisCommand(x->c, "EVALSHA %s 1 %s %s", x->sha, "bench-cost-peer", x->tok);
    int ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (!ok)
        fail("peer release EVALSHA: %s", r ? (r->str ? r->str : "not 1") : x->c->errstr);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Half a pair of workload w: the acquire (rel 0) or the release (1). */
static int half_pair(cost_ctx_t *x, int w, int rel)
{
    int rc;
    if (w == COST_PEER)
        return rel ? peer_release(x) : peer_acquire(x);
    if (w == COST_MUTEX)
        rc = rel ? rdlock_unlock(&x->u.m) : rdlock_lock(&x->u.m);
    else
        rc = rel ? rdrwlock_unlock(&x->rw.rw) : rdrwlock_rdlock(&x->rw.rw);
    if (rc != 0)
        fail("%s %s: %s", wname[w], rel ? "unlock" : "lock", rdlock_strerror(rc));
    return rc == 0 ? 0 : -1;
}

static int pairs(cost_ctx_t *x, int w, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (half_pair(x, w, 0) != 0 || half_pair(x, w, 1) != 0)
            return -1;
    return 0;
}

/* The peer sends SET itself (its release script calls only GET and DEL);
 * the library sends scripts only. */
static const char *top_of(int w)
{
    return w == COST_PEER ? "set" : NULL;
}

/* The sums of one repetition, [workload]. */
typedef struct cost_sums {
    long long top_usec[COST_NW], top_calls[COST_NW], all_usec[COST_NW], all_calls[COST_NW];
} cost_sums_t;

/* One repetition: x->n pairs of each workload in chunks of COST_CHUNK,
 * peer, mutex, read, peer, ...  0 or -1. */
static int cost_rep(cost_ctx_t *x, cost_sums_t *s)
{
    cmd_totals_t a, b;
    int done, m, w;

    memset(s, 0, sizeof *s);
    for (done = 0; done < x->n; done += m) {
        m = x->n - done < COST_CHUNK ? x->n - done : COST_CHUNK;
        for (w = 0; w < COST_NW; w++) {
            if (cmd_totals(x->c, top_of(w), &a) != 0 || pairs(x, w, m) != 0 ||
                cmd_totals(x->c, top_of(w), &b) != 0)
                return -1;
            s->top_usec[w] += b.top_usec - a.top_usec;
            s->top_calls[w] += b.top_calls - a.top_calls;
            s->all_usec[w] += b.all_usec - a.all_usec;
            s->all_calls[w] += b.all_calls - a.all_calls;
        }
    }
    return 0;
}

/* Per call of each script (and the peer's SET): INFO commandstats around
 * every single call, the median and the mean of those that made exactly
 * one top-level command (INFO is left out).  Redis adds up whole
 * microseconds per call, so the median is coarse; the mean is not, but
 * takes in the odd stall.  Into res->script_us and _mean; 0 or -1. */
static int cost_per_script(cost_ctx_t *x, cost_res_t *res)
{
    static double v[COST_NW][2][COST_SCRIPT_CALLS];
    int nv[COST_NW][2] = { { 0 } };
    cmd_totals_t a, b;
    int i, w, rel;

    for (i = 0; i < COST_SCRIPT_CALLS; i++)
        for (w = 0; w < COST_NW; w++)
            for (rel = 0; rel < 2; rel++) {
                if (cmd_totals(x->c, top_of(w), &a) != 0 || half_pair(x, w, rel) != 0 ||
                    cmd_totals(x->c, top_of(w), &b) != 0)
                    return -1;
                if (b.top_calls - a.top_calls == 1)
                    v[w][rel][nv[w][rel]++] = (double)(b.top_usec - a.top_usec);
            }
    for (w = 0; w < COST_NW; w++)
        for (rel = 0; rel < 2; rel++) {
            double sum = 0;
            res->script_us[w][rel] = median(v[w][rel], nv[w][rel]);
            for (i = 0; i < nv[w][rel]; i++)
                sum += v[w][rel][i];
            res->script_us_mean[w][rel] = nv[w][rel] > 0 ? sum / nv[w][rel] : NAN;
        }
    return 0;
}

/* The figures of each repetition [figure][workload][rep] into their
 * medians; the ratios' range too. */
static void cost_medians(double v[4][COST_NW][64], double ratio[COST_NW][64], int reps, cost_res_t *res)
{
    int w, r;
    for (w = 0; w < COST_NW; w++) {
        res->us[w] = median(v[0][w], reps);
        res->cmds[w] = median(v[1][w], reps);
        res->rt[w] = median(v[2][w], reps);
        res->all_us[w] = median(v[3][w], reps);
        res->ratio[w] = median(ratio[w], reps);
        res->ratio_lo[w] = INFINITY;
        res->ratio_hi[w] = -INFINITY;
        for (r = 0; r < reps; r++) {
            res->ratio_lo[w] = ratio[w][r] < res->ratio_lo[w] ? ratio[w][r] : res->ratio_lo[w];
            res->ratio_hi[w] = ratio[w][r] > res->ratio_hi[w] ? ratio[w][r] : res->ratio_hi[w];
        }
    }
}

/* The repetitions and their medians; 0 or -1. */
static int cost_measure(cost_ctx_t *x, int reps, cost_res_t *res)
{
    static double v[4][COST_NW][64], ratio[COST_NW][64];
    cost_sums_t s;
    int r, w;

    for (r = 0; r < reps && r < 64; r++) {
        if (cost_rep(x, &s) != 0)
            return -1;
        for (w = 0; w < COST_NW; w++) {
            v[0][w][r] = (double)s.top_usec[w] / x->n;
            v[1][w][r] = (double)s.all_calls[w] / x->n;
            v[2][w][r] = (double)s.top_calls[w] / x->n;
            v[3][w][r] = (double)s.all_usec[w] / x->n;
        }
        for (w = 0; w < COST_NW; w++)
            ratio[w][r] = v[0][w][r] / v[0][COST_PEER][r];
    }
    cost_medians(v, ratio, r, res);
    return cost_per_script(x, res);
}

int bench_cost(const rdt_server_t *s, int reps, cost_res_t *res)
{
    cost_ctx_t x;
    redisReply *r;
    int rc = -1, w;

    memset(&x, 0, sizeof x);
    memset(res, 0, sizeof *res);
    for (w = 0; w < COST_NW; w++)
        res->us[w] = res->ratio[w] = res->script_us[w][0] = res->script_us[w][1] = NAN,
        res->script_us_mean[w][0] = res->script_us_mean[w][1] = NAN;
    x.n = res->n = quick ? 1000 : 2500;
    if ((x.c = rdt_connect(s)) == NULL)
        return -1;
    r = cmd(x.c, "SCRIPT LOAD %s", peer_release_lua);
    if (r != NULL && r->type == REDIS_REPLY_STRING)
        snprintf(x.sha, sizeof x.sha, "%s", r->str);
    if (r != NULL)
        freeReplyObject(r);
    if (x.sha[0] != '\0' && ulock_open(&x.u, s, 0, "bench-cost-mutex") == 0 &&
        rwl_open(&x.rw, s, 0, "bench-cost-read") == 0) {
        /* warm-up: connections, script caches, CPU caches */
        for (w = 0, rc = 0; w < COST_NW && rc == 0; w++)
            rc = pairs(&x, w, 300);
        if (rc == 0)
            rc = cost_measure(&x, reps, res);
    }
    res->ok = rc == 0;
    ulock_close(&x.u);
    rwl_close(&x.rw);
    redisFree(x.c);
    return rc;
}

/* One workload's table line and its JSON keys. */
static void report_cost_line(const cost_res_t *c, int w, const char *label, double target)
{
    char key[96], tgt[32] = "", range[32] = "";

    if (w != COST_PEER) {
        snprintf(tgt, sizeof tgt, "<= %.1f %s", target, c->ratio[w] <= target ? "within" : "over");
        snprintf(range, sizeof range, "%.2f-%.2f", c->ratio_lo[w], c->ratio_hi[w]);
    }
    out("   %-30s %7.2f %7.2f  %-13s %-11s %5.1f %6.1f %9.2f\n", label, c->us[w], c->ratio[w], tgt, range,
        c->cmds[w], c->rt[w], c->all_us[w]);
    snprintf(key, sizeof key, "cost_%s_server_us_per_pair", wname[w]);
    json_num(key, c->us[w]);
    snprintf(key, sizeof key, "cost_%s_commands_per_pair", wname[w]);
    json_num(key, c->cmds[w]);
    snprintf(key, sizeof key, "cost_%s_round_trips_per_pair", wname[w]);
    json_num(key, c->rt[w]);
    snprintf(key, sizeof key, "cost_%s_all_entries_us_per_pair", wname[w]);
    json_num(key, c->all_us[w]);
    snprintf(key, sizeof key, "cost_%s_acquire_us", wname[w]);
    json_num(key, c->script_us[w][0]);
    snprintf(key, sizeof key, "cost_%s_release_us", wname[w]);
    json_num(key, c->script_us[w][1]);
    snprintf(key, sizeof key, "cost_%s_acquire_us_mean", wname[w]);
    json_num(key, c->script_us_mean[w][0]);
    snprintf(key, sizeof key, "cost_%s_release_us_mean", wname[w]);
    json_num(key, c->script_us_mean[w][1]);
    if (w == COST_PEER)
        return;
    snprintf(key, sizeof key, "cost_%s_ratio", wname[w]);
    json_num(key, c->ratio[w]);
    snprintf(key, sizeof key, "cost_%s_ratio_lo", wname[w]);
    json_num(key, c->ratio_lo[w]);
    snprintf(key, sizeof key, "cost_%s_ratio_hi", wname[w]);
    json_num(key, c->ratio_hi[w]);
    snprintf(key, sizeof key, "cost_%s_ratio_target", wname[w]);
    json_num(key, target);
    snprintf(key, sizeof key, "cost_%s_within_target", wname[w]);
    json_bool(key, c->ratio[w] <= target);
}

void report_cost(const cost_res_t *c)
{
    out("\n11. server cost per uncontended pair (issue 26): one thread, tcp, the three interleaved in chunks\n"
        "    of %d with INFO commandstats around each chunk (%d pairs of each per repetition)\n",
        COST_CHUNK, c->n);
    out("   %-30s %7s %7s  %-13s %-11s %5s %6s %9s\n", "", "server", "ratio", "target (not", "ratios of",
        "cmds", "round", "all");
    out("   %-30s %7s %7s  %-13s %-11s %5s %6s %9s\n", "per pair", "us", "to peer", "judged)", "the reps", "",
        "trips", "entries us");
    report_cost_line(c, COST_PEER, "redis-py Lock (C: SET+EVALSHA)", 1.0);
    report_cost_line(c, COST_MUTEX, "rdlock_lock+unlock", MUTEX_TARGET);
    report_cost_line(c, COST_READ, "rdrwlock_rdlock+unlock", READ_TARGET);
    out("   per call, server us, median (mean) of %d single calls: peer SET %.0f (%.2f), release script %.0f (%.2f);\n"
        "   mutex acquire %.0f (%.2f), release %.0f (%.2f); read acquire %.0f (%.2f), release %.0f (%.2f)\n",
        COST_SCRIPT_CALLS, c->script_us[COST_PEER][0], c->script_us_mean[COST_PEER][0], c->script_us[COST_PEER][1],
        c->script_us_mean[COST_PEER][1], c->script_us[COST_MUTEX][0], c->script_us_mean[COST_MUTEX][0],
        c->script_us[COST_MUTEX][1], c->script_us_mean[COST_MUTEX][1], c->script_us[COST_READ][0],
        c->script_us_mean[COST_READ][0], c->script_us[COST_READ][1], c->script_us_mean[COST_READ][1]);
    out("   (server us: the commands the client sends, a script with its redis.call()s inside; cmds counts\n"
        "   those redis.call()s too; \"all entries\" sums every commandstats entry, the redis.call()s' time twice;\n"
        "   the targets lie below what any script design keeping the lock's guarantees reaches: bench/floor.sh)\n");
    json_num("cost_pairs_per_rep", c->n);
    json_num("cost_chunk", COST_CHUNK);
    json_bool("cost_ok", c->ok);
}
