/* step_uncontended.c - steps 1, 2 and 5a: the floor (PING round trips on
 * one connection, TCP and the unix socket), the uncontended mutex
 * lock+unlock pair on one thread as a ratio to floor/2, and the same for
 * the read-write lock's read and write pairs, interleaved with their own
 * floors in small chunks.  One function measures all three because they
 * share the repetitions: every ratio is to a floor taken right next to
 * it.  Step 5a is printed after step 4, with step 5b (main.c). */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RW_TARGET 0.85 /* uncontended rwlock pairs/s target, x floor/2 */

/* Step 5a: PING, rdlock+unlock, wrlock+unlock and the do-nothing EVALSHA,
 * n of each, interleaved in chunks of RW_CHUNK so that the floors and the
 * pairs see the same moment-to-moment noise (on the shared build machines
 * the PING rate can change several-fold from one second to the next).
 * rate[]: rt/s or pairs/s in that order.  With srv, also the server time
 * inside EVALSHA per pair of each mode (INFO commandstats around every
 * chunk; those calls are outside the timed parts).  0 or -1. */
#define RW_CHUNK 50

static int rw_interleaved(redisContext *c, rwl_t *u, const char *sha, int n, int srv, double rate[4],
                          double *srv_rd, double *srv_wr)
{
    int64_t t[4] = { 0, 0, 0, 0 }, t0;
    long long c0, u0, c1, u1, c2, u2, ud_rd = 0, ud_wr = 0;
    int done, m, k;

    for (done = 0; done < n; done += m) {
        m = n - done < RW_CHUNK ? n - done : RW_CHUNK;
        t0 = now_ns();
        if (isnan(ping_rate(c, m)))
            return -1;
        t[0] += now_ns() - t0;
        if (srv)
            evalsha_stats(c, &c0, &u0);
        t0 = now_ns();
        if (isnan(rw_pair_rate(u, 's', m)))
            return -1;
        t[1] += now_ns() - t0;
        if (srv)
            evalsha_stats(c, &c1, &u1);
        t0 = now_ns();
        if (isnan(rw_pair_rate(u, 'x', m)))
            return -1;
        t[2] += now_ns() - t0;
        if (srv) {
            evalsha_stats(c, &c2, &u2);
            ud_rd += u1 - u0;
            ud_wr += u2 - u1;
        }
        t0 = now_ns();
        if (isnan(evalsha_rate(c, sha, m)))
            return -1;
        t[3] += now_ns() - t0;
    }
    for (k = 0; k < 4; k++)
        rate[k] = n / ((double)t[k] / 1e9);
    if (srv) {
        *srv_rd = (double)ud_rd / n;
        *srv_wr = (double)ud_wr / n;
    }
    return 0;
}

/* Server-side cost of each library script (a diagnostic), from
 * INFO commandstats around every single call (INFO is not EVALSHA, so it
 * does not disturb the figure).  Also the cost of one redis.call() from
 * Lua, from a script making 100 of them. */
static void script_costs(redisContext *c, ulock_t *u, base_res_t *res)
{
    double acq[200], rel[200];
    long long c0, u0, c1, u1, c2, u2;
    int n = 0, i, e;

    res->srv_us_acquire = res->srv_us_release = res->srv_us_per_lua_call = NAN;
    for (i = 0; i < 200; i++) {
        cmd_stats(c, "evalsha", &c0, &u0);
        if ((e = rdlock_lock(&u->m)) != 0) {
            fail("rdlock_lock: %s", rdlock_strerror(e));
            return;
        }
        cmd_stats(c, "evalsha", &c1, &u1);
        if ((e = rdlock_unlock(&u->m)) != 0) {
            fail("rdlock_unlock: %s", rdlock_strerror(e));
            return;
        }
        cmd_stats(c, "evalsha", &c2, &u2);
        if (c1 - c0 == 1 && c2 - c1 == 1) {
            acq[n] = (double)(u1 - u0);
            rel[n++] = (double)(u2 - u1);
        }
    }
    res->srv_us_acquire = median(acq, n);
    res->srv_us_release = median(rel, n);
    cmd_stats(c, "eval", &c0, &u0);
    for (i = 0; i < 50; i++)
        freeReplyObject(
            cmd(c, "EVAL %s 1 %s", "for i = 1, 100 do redis.call('ZCARD', KEYS[1]) end return 1", "bench:nokey"));
    cmd_stats(c, "eval", &c1, &u1);
    if (c1 - c0 == 50)
        res->srv_us_per_lua_call = (double)(u1 - u0) / 50 / 100;
}


/* The connections and handles steps 2 and 5a measure on, and the sizes of
 * their samples. */
typedef struct base_ctx {
    redisContext *tcp, *ux;
    ulock_t ut, uu;
    rwl_t rwt, rwu;
    char sha[64]; /* the do-nothing script */
    int n_ping, n_pair, n_rw;
} base_ctx_t;

/* The figures of each repetition [rep]; the results are their medians. */
typedef struct base_reps {
    double ft[64], fu[64], lt[64], lu[64], rt[64], ru[64], et[64], us[64];
    /* rwlock (step 5a), [tcp, unix][rep] */
    double wf[2][64], we[2][64], wrd[2][64], wwr[2][64], q1[2][64], q2[2][64], q3[2][64], q4[2][64];
    double srd[64], swr[64];
} base_reps_t;

/* Warm up: connections, script cache, watchdog thread, CPU caches. */
static void base_warm_up(base_ctx_t *x)
{
    evalsha_rate(x->tcp, x->sha, 500);
    ping_rate(x->tcp, 500);
    ping_rate(x->ux, 500);
    pair_rate(&x->ut, 300);
    pair_rate(&x->uu, 300);
    evalsha_rate(x->ux, x->sha, 500);
    rw_pair_rate(&x->rwt, 's', 300);
    rw_pair_rate(&x->rwt, 'x', 300);
    rw_pair_rate(&x->rwu, 's', 300);
    rw_pair_rate(&x->rwu, 'x', 300);
}

/* Repetition r.  Floor and lock measurements alternate so that both see
 * the same noise.  The rwlock pairs are interleaved with their own floors
 * in small chunks (rw_interleaved); its tcp EVALSHA figure is also step
 * 2's do-nothing EVALSHA diagnostic. */
static void base_rep(base_ctx_t *x, int r, base_reps_t *v)
{
    long long c0, u0, c1, u1;
    double q[4];
    int t;

    v->ft[r] = ping_rate(x->tcp, x->n_ping);
    evalsha_stats(x->tcp, &c0, &u0);
    v->lt[r] = pair_rate(&x->ut, x->n_pair);
    evalsha_stats(x->tcp, &c1, &u1);
    v->us[r] = (double)(u1 - u0) / x->n_pair;
    for (t = 0; t < 2; t++) {
        if (rw_interleaved(t == 0 ? x->tcp : x->ux, t == 0 ? &x->rwt : &x->rwu, x->sha, x->n_rw, t == 0, q,
                           &v->srd[r], &v->swr[r]) != 0)
            q[0] = q[1] = q[2] = q[3] = NAN;
        v->wf[t][r] = q[0];
        v->wrd[t][r] = q[1];
        v->wwr[t][r] = q[2];
        v->we[t][r] = q[3];
        if (t == 0) {
            v->et[r] = q[3];
            v->fu[r] = ping_rate(x->ux, x->n_ping);
            v->lu[r] = pair_rate(&x->uu, x->n_pair);
        }
    }
    v->rt[r] = v->lt[r] / (v->ft[r] / 2);
    v->ru[r] = v->lu[r] / (v->fu[r] / 2);
    for (t = 0; t < 2; t++) {
        v->q1[t][r] = v->wrd[t][r] / (v->wf[t][r] / 2);
        v->q2[t][r] = v->wwr[t][r] / (v->wf[t][r] / 2);
        v->q3[t][r] = v->wrd[t][r] / (v->we[t][r] / 2);
        v->q4[t][r] = v->wwr[t][r] / (v->we[t][r] / 2);
    }
}

static void base_medians(const base_reps_t *v, int reps, base_res_t *res)
{
    int t;
    for (t = 0; t < 2; t++) {
        res->rw.floor[t] = median(v->wf[t], reps);
        res->rw.script_floor[t] = median(v->we[t], reps);
        res->rw.rd[t] = median(v->wrd[t], reps);
        res->rw.wr[t] = median(v->wwr[t], reps);
        res->rw.rd_ratio[t] = median(v->q1[t], reps);
        res->rw.wr_ratio[t] = median(v->q2[t], reps);
        res->rw.rd_script_ratio[t] = median(v->q3[t], reps);
        res->rw.wr_script_ratio[t] = median(v->q4[t], reps);
    }
    res->rw.srv_us_rd = median(v->srd, reps);
    res->rw.srv_us_wr = median(v->swr, reps);
    res->floor_tcp = median(v->ft, reps);
    res->floor_unix = median(v->fu, reps);
    res->unc_tcp = median(v->lt, reps);
    res->unc_unix = median(v->lu, reps);
    /* Median of the per-repetition ratios (each against the floor measured
     * right next to it). */
    res->ratio_tcp = median(v->rt, reps);
    res->ratio_unix = median(v->ru, reps);
    res->evalsha_tcp = median(v->et, reps);
    res->srv_us_per_pair = median(v->us, reps);
}

int bench_base(const rdt_server_t *s, int reps, base_res_t *res)
{
    base_ctx_t x;
    base_reps_t v;
    int r;

    x.tcp = rdt_connect(s);
    x.ux = redisConnectUnix(s->sock);
    x.sha[0] = '\0';
    /* rwlock samples are shorter than the mutex one (there are four
     * kinds per transport) to keep the run short. */
    x.n_ping = quick ? 5000 : 20000;
    x.n_pair = quick ? 2000 : 8000;
    x.n_rw = quick ? 1000 : 2500;
    memset(res, 0, sizeof *res);
    if (x.tcp == NULL || x.ux == NULL || x.ux->err) {
        fail("cannot connect to the server (%s)", x.ux && x.ux->err ? x.ux->errstr : "tcp");
        return -1;
    }
    if (ulock_open(&x.ut, s, 0, "bench-uncontended-tcp") != 0 ||
        ulock_open(&x.uu, s, 1, "bench-uncontended-unix") != 0 ||
        rwl_open(&x.rwt, s, 0, "bench-rw-uncontended-tcp") != 0 ||
        rwl_open(&x.rwu, s, 1, "bench-rw-uncontended-unix") != 0)
        return -1;
    load_noop_script(x.tcp, x.sha, sizeof x.sha);
    base_warm_up(&x);
    res->rw.srv_us_rd = res->rw.srv_us_wr = NAN;
    for (r = 0; r < reps; r++)
        base_rep(&x, r, &v);
    base_medians(&v, reps, res);
    script_costs(x.tcp, &x.ut, res);
    ulock_close(&x.ut);
    ulock_close(&x.uu);
    rwl_close(&x.rwt);
    rwl_close(&x.rwu);
    redisFree(x.tcp);
    redisFree(x.ux);
    return 0;
}

void report_base(const base_res_t *b, tally_t *t)
{
    out("1. floor (PING round trips/s, one connection)\n");
    out("   %-28s %12.0f rt/s\n", "tcp", b->floor_tcp);
    out("   %-28s %12.0f rt/s\n", "unix socket", b->floor_unix);
    out("2. uncontended lock+unlock, one thread       pairs/s   ratio to floor/2 (target >= 0.90)\n");
    out("   %-28s %12.0f   %6.3f  %s\n", "tcp", b->unc_tcp, b->ratio_tcp, mark(b->ratio_tcp >= 0.90));
    out("   %-28s %12.0f   %6.3f  %s\n", "unix socket", b->unc_unix, b->ratio_unix,
        mark(b->ratio_unix >= 0.90));
    out("   diagnostics (tcp): a do-nothing EVALSHA does %.0f rt/s (%.2f of PING); the lock+unlock\n"
        "   scripts spend %.1f us per pair inside the server (a PING round trip is %.1f us);\n"
        "   per call (median): acquire.lua %.0f us, release.lua %.0f us; one redis.call() from Lua %.2f us\n\n",
        b->evalsha_tcp, b->evalsha_tcp / b->rw.floor[0], b->srv_us_per_pair, 1e6 / b->floor_tcp,
        b->srv_us_acquire, b->srv_us_release, b->srv_us_per_lua_call);
    json_num("floor_tcp_rps", rnd(b->floor_tcp));
    json_num("floor_unix_rps", rnd(b->floor_unix));
    json_num("uncontended_tcp_pairs_per_s", rnd(b->unc_tcp));
    json_num("uncontended_unix_pairs_per_s", rnd(b->unc_unix));
    json_num("uncontended_ratio_tcp", b->ratio_tcp);
    json_num("uncontended_ratio_unix", b->ratio_unix);
    json_num("floor_evalsha_noop_tcp_rps", rnd(b->evalsha_tcp));
    json_num("uncontended_server_us_per_pair", b->srv_us_per_pair);
    json_num("server_us_acquire_script", b->srv_us_acquire);
    json_num("server_us_release_script", b->srv_us_release);
    json_num("server_us_per_lua_redis_call", b->srv_us_per_lua_call);
    t->targets += 2;
    t->met += (b->ratio_tcp >= 0.90) + (b->ratio_unix >= 0.90);
}

void report_rw_base(const base_res_t *b, tally_t *t)
{
    static const char *const tn[2] = { "tcp", "unix" };
    const rw_base_t *w = &b->rw;
    char key[128];
    int k, ok;

    out("\n5. read-write lock (rdrwlock_t on a dedicated client)\n");
    out("   a. uncontended, one thread    pairs/s   ratio to floor/2 (target >= %.2f)   to script floor/2\n",
        RW_TARGET);
    for (k = 0; k < 2; k++) {
        ok = w->rd_ratio[k] >= RW_TARGET;
        out("   %-4s rdlock+unlock   %12.0f   %6.3f  %-6s                       %6.3f\n", tn[k], w->rd[k],
            w->rd_ratio[k], mark(ok), w->rd_script_ratio[k]);
        t->met += ok;
        ok = w->wr_ratio[k] >= RW_TARGET;
        out("   %-4s wrlock+unlock   %12.0f   %6.3f  %-6s                       %6.3f\n", tn[k], w->wr[k],
            w->wr_ratio[k], mark(ok), w->wr_script_ratio[k]);
        t->met += ok;
        t->targets += 2;
    }
    out("   floors, interleaved with these pairs in chunks of %d: PING tcp %.0f, unix %.0f rt/s;\n"
        "   do-nothing EVALSHA (script floor) tcp %.0f (%.2f of PING), unix %.0f (%.2f of PING) rt/s\n",
        RW_CHUNK,
        w->floor[0], w->floor[1], w->script_floor[0], w->script_floor[0] / w->floor[0], w->script_floor[1],
        w->script_floor[1] / w->floor[1]);
    out("   diagnostics (tcp): server time inside EVALSHA per pair: rdlock+unlock %.1f us,\n"
        "   wrlock+unlock %.1f us (mutex: %.1f us)\n",
        w->srv_us_rd, w->srv_us_wr, b->srv_us_per_pair);
    for (k = 0; k < 2; k++) {
        snprintf(key, sizeof key, "rw_floor_%s_rps", tn[k]);
        json_num(key, rnd(w->floor[k]));
        snprintf(key, sizeof key, "rw_script_floor_%s_rps", tn[k]);
        json_num(key, rnd(w->script_floor[k]));
        snprintf(key, sizeof key, "rw_uncontended_rd_%s_pairs_per_s", tn[k]);
        json_num(key, rnd(w->rd[k]));
        snprintf(key, sizeof key, "rw_uncontended_wr_%s_pairs_per_s", tn[k]);
        json_num(key, rnd(w->wr[k]));
        snprintf(key, sizeof key, "rw_uncontended_rd_ratio_%s", tn[k]);
        json_num(key, w->rd_ratio[k]);
        snprintf(key, sizeof key, "rw_uncontended_wr_ratio_%s", tn[k]);
        json_num(key, w->wr_ratio[k]);
        snprintf(key, sizeof key, "rw_uncontended_rd_script_ratio_%s", tn[k]);
        json_num(key, w->rd_script_ratio[k]);
        snprintf(key, sizeof key, "rw_uncontended_wr_script_ratio_%s", tn[k]);
        json_num(key, w->wr_script_ratio[k]);
    }
    json_num("rw_server_us_per_rd_pair", w->srv_us_rd);
    json_num("rw_server_us_per_wr_pair", w->srv_us_wr);
}
