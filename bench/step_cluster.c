/* step_cluster.c - step 7 (--cluster): step 6b, the shared-client
 * workload, on a 3-master + 3-replica Redis Cluster of its own
 * (tests/cluster.c), the names spread evenly over the masters, against
 * redis-benchmark --cluster. */
#include "threads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MT_CL_TARGET 0.40 /* issue 11: cluster, x cluster SET floor/2 */

/* Step 7: the shared-client workload of step 6 on a fresh 3-master
 * cluster (tests/cluster.c), names spread evenly over the masters,
 * interleaved with redis-benchmark --cluster (pointed at each master in
 * turn). */
int bench_cluster(int reps, cl_res_t *res)
{
    rdt_cluster_t cl;
    mt_set_t *set = NULL;
    mt_target_t tg;
    char text[512], (*names)[64] = NULL, key[128];
    const char *ini;
    static double v[64][F_N];
    long n = quick ? 200 : 500;
    int m[3], nm = 0, i, j, r, up = 0;
    double t0 = now_s();

    memset(res, 0, sizeof *res);
    memset(&tg, 0, sizeof tg);
    res->n_pairs = n;
    if (rdt_cluster_start(&cl, NULL) != 0) {
        fail("cluster: cannot start the 3-master cluster (tests/cluster.c)");
        return -1;
    }
    up = 1;
    res->start_s = now_s() - t0;
    for (i = 0; i < RDT_CLUSTER_NODES && nm < 3; i++)
        if (rdt_cluster_is_master(&cl, i) == 1)
            m[nm++] = i;
    if (nm != 3 || (names = calloc(MT_THREADS, sizeof *names)) == NULL ||
        (set = calloc(1, sizeof *set)) == NULL) {
        fail("cluster: %d masters found, or out of memory", nm);
        goto out;
    }
    /* Thread i's name lives on master i % 3 (the key's hash tag is the
     * name: docs/CONTRACT.md section 1, default prefix "rdlock:"). */
    for (i = 0; i < MT_THREADS; i++) {
        for (j = 0; j < 1000; j++) {
            snprintf(names[i], sizeof names[i], "bench-cl-%d-%d", i, j);
            snprintf(key, sizeof key, "rdlock:{%s}", names[i]);
            if (rdt_cluster_master_of_key(&cl, key, strlen(key)) == m[i % 3])
                break;
        }
        if (j == 1000) {
            fail("cluster: no name for master %d", m[i % 3]);
            goto out;
        }
        res->names[i % 3]++;
    }
    snprintf(text, sizeof text,
             "[cluster]\nnodes = 127.0.0.1:%d, 127.0.0.1:%d, 127.0.0.1:%d\n[lock]\nlease_ms = 30000\n",
             cl.node[m[0]].port, cl.node[m[1]].port, cl.node[m[2]].port);
    if ((ini = rdt_write_file(&cl.node[0], "bench-cluster.ini", text)) == NULL)
        goto out;
    tg.n = 3;
    tg.cluster = 1;
    for (j = 0; j < 3; j++)
        if ((tg.c[j] = rdt_connect(&cl.node[m[j]])) == NULL)
            goto out;
    for (i = 0; i < RDT_CLUSTER_NODES; i++)
        tg.pids[tg.npids++] = cl.node[i].pid;
    rb_set_rate(cl.node[m[0]].port, 1, MT_THREADS, 2000); /* warm-up */
    {
        double base = mt_clients(&tg);
        if (mt_open(set, ini, 0, NULL, names) != 0)
            goto out;
        mt_run(set, 20);
        res->fig.clients = mt_clients(&tg) - base;
    }
    for (r = 0; r < reps; r++) {
        tg.port = cl.node[m[r % 3]].port;
        mt_rep(&tg, set, n, v[r]);
    }
    mt_medians(v, reps, &res->fig);
    res->ok = !isnan(res->fig.v[F_RATIO]);
out:
    if (set != NULL) {
        mt_close(set);
        free(set);
    }
    for (j = 0; j < 3; j++)
        if (tg.c[j] != NULL)
            redisFree(tg.c[j]);
    free(names);
    if (up)
        rdt_cluster_stop(&cl);
    return res->ok ? 0 : -1;
}

void report_cluster(const cl_res_t *clres, const mt_res_t *mres, tally_t *t)
{
    const double *f = clres->fig.v;
    int ok;

    out("\n7. cluster: %d threads x %ld pairs, one shared client, names on 3 masters (%d/%d/%d);\n"
        "   3 masters + 3 replicas (tests/cluster.c), started and ready in %.1f s\n",
        MT_THREADS, clres->n_pairs, clres->names[0], clres->names[1], clres->names[2], clres->start_s);
    out("   floor: redis-benchmark --cluster -c %d -n %ld -t set, %.0f SET/s (median, one before each lock run)\n",
        MT_THREADS, 2L * MT_THREADS * clres->n_pairs, f[F_FLOOR]);
    ok = f[F_RATIO] >= MT_CL_TARGET;
    out("   %-24s %8.0f pairs/s, ratio to floor/2 %.3f (range %.2f-%.2f; target >= %.2f) %s\n",
        "one shared client", f[F_PAIRS], f[F_RATIO], clres->fig.ratio_lo, clres->fig.ratio_hi, MT_CL_TARGET,
        mark(ok));
    out("   masters: %.0f connections open, %.0f accepted per run, %.2f EVALSHA per pair (shares %.2f/%.2f/%.2f)\n"
        "   CPU us per pair: this process %.1f + the six servers %.1f; per SET: redis-benchmark %.1f + servers %.1f\n",
        clres->fig.clients, f[F_CONNS], f[F_RT], f[F_SHARE0], f[F_SHARE0 + 1], f[F_SHARE0 + 2], f[F_CPU_CL],
        f[F_CPU_SRV], f[F_CPU_RB], f[F_CPU_RBS]);
    out("   vs one server (step 6b): lock %.0f -> %.0f pairs/s (%.2fx); SET floor %.0f -> %.0f/s (%.2fx)\n",
        mres->fig[1].v[F_PAIRS], f[F_PAIRS], f[F_PAIRS] / mres->fig[1].v[F_PAIRS], mres->floor, f[F_FLOOR],
        f[F_FLOOR] / mres->floor);
    t->targets++;
    t->met += ok;
    json_num("cluster_start_s", clres->start_s);
    json_num("cluster_pairs_per_thread", (double)clres->n_pairs);
    json_num("cluster_floor_set_rps", rnd(f[F_FLOOR]));
    json_num("cluster_pairs_per_s", rnd(f[F_PAIRS]));
    json_num("cluster_ratio", f[F_RATIO]);
    json_num("cluster_ratio_min", clres->fig.ratio_lo);
    json_num("cluster_ratio_max", clres->fig.ratio_hi);
    json_num("cluster_connections_open", clres->fig.clients);
    json_num("cluster_connections_accepted_per_run", f[F_CONNS]);
    json_num("cluster_evalsha_per_pair", f[F_RT]);
    json_num("cluster_cpu_us_per_pair_client", f[F_CPU_CL]);
    json_num("cluster_cpu_us_per_pair_servers", f[F_CPU_SRV]);
    json_num("cluster_floor_cpu_us_per_set_client", f[F_CPU_RB]);
    json_num("cluster_floor_cpu_us_per_set_servers", f[F_CPU_RBS]);
    json_num("cluster_vs_single_pairs", f[F_PAIRS] / mres->fig[1].v[F_PAIRS]);
    json_num("cluster_vs_single_floor", f[F_FLOOR] / mres->floor);
    json_bool("cluster_ok", clres->ok);
}
