/* step_threads.c - step 6: MT_THREADS threads, each locking and unlocking
 * its own name on one server, (a) each with its own client, (b) all on
 * one shared client, as a ratio to redis-benchmark's SET rate with as
 * many connections / 2, the floor run just before each lock run. */
#include "threads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MT_TARGET 0.85 /* issue 15: single server, x SET floor/2 */

/* Step 6: in each repetition floor, (a), floor, (b); the order of (a) and
 * (b) alternates, and each ratio is to the floor run just before it. */
int bench_mt(const rdt_server_t *s, int reps, mt_res_t *res)
{
    mt_set_t *set[2] = { NULL, NULL };
    static double v[2][64][F_N];
    double fl[128];
    long n = quick ? 200 : 500;
    const char *ini = rdt_write_ini(s, 0, "[lock]\nlease_ms = 30000\n");
    mt_target_t tg;
    double base;
    int r, k, w, nf = 0;

    memset(res, 0, sizeof *res);
    memset(&tg, 0, sizeof tg);
    res->n_pairs = n;
    tg.n = 1;
    tg.c[0] = rdt_connect(s);
    tg.pids[0] = s->pid;
    tg.npids = 1;
    tg.port = s->port;
    set[0] = calloc(1, sizeof *set[0]);
    set[1] = calloc(1, sizeof *set[1]);
    if (ini == NULL || tg.c[0] == NULL || set[0] == NULL || set[1] == NULL) {
        fail("many threads: setup failed");
        goto out;
    }
    /* Each workload's open connections: counted after its warm-up
     * (connections, script cache, pools, watchdog threads). */
    rb_set_rate(s->port, 0, MT_THREADS, 2000);
    for (w = 0; w < 2; w++) {
        base = mt_clients(&tg);
        if (mt_open(set[w], ini, w == 0, w == 0 ? "bench-mt-own" : "bench-mt-shared", NULL) != 0)
            goto out;
        mt_run(set[w], 20);
        res->fig[w].clients = mt_clients(&tg) - base;
    }
    for (r = 0; r < reps; r++)
        for (k = 0; k < 2; k++) {
            w = (r + k) % 2;
            mt_rep(&tg, set[w], n, v[w][r]);
            fl[nf++] = v[w][r][F_FLOOR];
        }
    res->floor = median(fl, nf);
    for (w = 0; w < 2; w++)
        mt_medians(v[w], reps, &res->fig[w]);
    res->ok = !isnan(res->fig[0].v[F_RATIO]) && !isnan(res->fig[1].v[F_RATIO]);
out:
    for (w = 0; w < 2; w++)
        if (set[w] != NULL) {
            mt_close(set[w]);
            free(set[w]);
        }
    if (tg.c[0] != NULL)
        redisFree(tg.c[0]);
    return res->ok ? 0 : -1;
}

void report_mt(const mt_res_t *mres, tally_t *t)
{
    static const char *const vn[2] = { "own", "shared" };
    static const char *const vl[2] = { "a. a client per thread", "b. one shared client" };
    char key[128];
    int k;

    out("\n6. many threads, distinct names: %d threads x %ld lock+unlock pairs, each thread its own name\n",
        MT_THREADS, mres->n_pairs);
    out("   floor: redis-benchmark -c %d -n %ld -t set, %.0f SET/s (median of the runs, one before each\n"
        "   lock run)\n",
        MT_THREADS, 2L * MT_THREADS * mres->n_pairs, mres->floor);
    out("   %-24s %8s  %-27s %-11s %4s %5s %7s %11s\n", "", "pairs/s", "ratio to floor/2 (>= 0.85)", "(range)",
        "open", "conns", "rt/pair", "CPU us/pair");
    for (k = 0; k < 2; k++) {
        const double *f = mres->fig[k].v;
        int ok = f[F_RATIO] >= MT_TARGET;
        out("   %-24s %8.0f  %6.3f  %-19s %.2f-%.2f  %4.0f %5.0f %7.2f %5.1f + %.1f\n", vl[k], f[F_PAIRS], f[F_RATIO],
            mark(ok), mres->fig[k].ratio_lo, mres->fig[k].ratio_hi, mres->fig[k].clients, f[F_CONNS], f[F_RT],
            f[F_CPU_CL], f[F_CPU_SRV]);
        t->targets++;
        t->met += ok;
#define J(suffix, val)                                        \
    do {                                                      \
        snprintf(key, sizeof key, "mt_%s_%s", vn[k], suffix); \
        json_num(key, val);                                   \
    } while (0)
        J("pairs_per_s", rnd(f[F_PAIRS]));
        J("ratio", f[F_RATIO]);
        J("ratio_min", mres->fig[k].ratio_lo);
        J("ratio_max", mres->fig[k].ratio_hi);
        J("floor_set_rps", rnd(f[F_FLOOR]));
        J("connections_open", mres->fig[k].clients);
        J("connections_accepted_per_run", f[F_CONNS]);
        J("evalsha_per_pair", f[F_RT]);
        J("cpu_us_per_pair_client", f[F_CPU_CL]);
        J("cpu_us_per_pair_server", f[F_CPU_SRV]);
#undef J
    }
    out("   (open: connections the workload keeps open on the server, after its warm-up; conns:\n"
        "    connections the server accepted during one run; rt/pair: EVALSHA calls per pair;\n"
        "    CPU us/pair: this process + redis-server, from getrusage and /proc; medians)\n");
    out("   floor CPU us per SET: redis-benchmark %.1f + redis-server %.1f\n", mres->fig[1].v[F_CPU_RB],
        mres->fig[1].v[F_CPU_RBS]);
    json_num("mt_threads", MT_THREADS);
    json_num("mt_pairs_per_thread", (double)mres->n_pairs);
    json_num("mt_floor_set_rps", rnd(mres->floor));
    json_num("mt_floor_cpu_us_per_set_client", mres->fig[1].v[F_CPU_RB]);
    json_num("mt_floor_cpu_us_per_set_server", mres->fig[1].v[F_CPU_RBS]);
    json_bool("mt_ok", mres->ok);
}
