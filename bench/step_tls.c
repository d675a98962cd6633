/* step_tls.c - step 10: runs bench_tls() (bench/tls.c, the measurement,
 * kept apart as the bench's only user of hiredis_ssl) and prints its
 * table and JSON keys; built without TLS, it only says so. */
#include "bench.h"

#include <stdio.h>

#include "tls.h"

#ifdef RDL_HAVE_TLS

/* The table and keys of a step that ran. */
static void tls_report(const bench_tls_res_t *tr, const base_res_t *base)
{
    static const char *const tn[2] = { "TLS", "plain TCP" };
    int k;

    out("\n10. TLS: uncontended lock+unlock, one thread, dedicated client with tls = yes (%s),\n"
        "    to a TLS-only redis-server of its own (certificates and server ready in %.1f s), next to\n"
        "    plain TCP to this server; %d PINGs and %d pairs of each per repetition, the four\n"
        "    interleaved in chunks of %d; floor: PING on one hiredis connection (hiredis_ssl for TLS)\n",
        tr->server[0] ? tr->server : "?", tr->start_s, tr->n, tr->n, BENCH_TLS_CHUNK);
    out("   %-12s %12s %12s   %-17s %s\n", "", "floor rt/s", "pairs/s", "ratio to floor/2", "(range)");
    for (k = 0; k < 2; k++)
        out("   %-12s %12.0f %12.0f   %6.3f            %.2f-%.2f\n", tn[k], tr->floor[k], tr->pairs[k], tr->ratio[k],
            tr->ratio_lo[k], tr->ratio_hi[k]);
    out("   TLS adds %.1f us to a PING round trip (%.1f -> %.1f us) and %.1f us to a lock+unlock pair;\n"
        "   TLS pairs/s = %.2f of plain TCP's (medians of per-repetition figures)",
        tr->rt_us_extra, 1e6 / tr->floor[1], 1e6 / tr->floor[0], tr->pair_us_extra, tr->pairs_quot);
    if (base != NULL)
        out("; step 2's tcp ratio: %.3f", base->ratio_tcp);
    out("\n");
    json_num("tls_pings_per_rep", tr->n);
    json_num("tls_start_s", rnd(tr->start_s * 10) / 10);
    json_num("tls_floor_rps", rnd(tr->floor[0]));
    json_num("tls_pairs_per_s", rnd(tr->pairs[0]));
    json_num("tls_ratio", tr->ratio[0]);
    json_num("tls_ratio_min", tr->ratio_lo[0]);
    json_num("tls_ratio_max", tr->ratio_hi[0]);
    json_num("tls_tcp_floor_rps", rnd(tr->floor[1]));
    json_num("tls_tcp_pairs_per_s", rnd(tr->pairs[1]));
    json_num("tls_tcp_ratio", tr->ratio[1]);
    json_num("tls_tcp_ratio_min", tr->ratio_lo[1]);
    json_num("tls_tcp_ratio_max", tr->ratio_hi[1]);
    json_num("tls_us_per_round_trip_extra", tr->rt_us_extra);
    json_num("tls_us_per_pair_extra", tr->pair_us_extra);
    json_num("tls_pairs_vs_tcp", tr->pairs_quot);
    json_bool("tls_ok", 1);
}

void run_tls(const rdt_server_t *s, int reps, const base_res_t *base)
{
    bench_tls_res_t tr;

    phase = "tls";
    if (bench_tls(s, reps, quick ? 1000 : 2500, &tr) != 0) {
        fail("step 10 (TLS): %s", tr.err);
        out("\n10. TLS: not measured (%s)\n", tr.err);
        json_bool("tls_ok", 0);
        return;
    }
    tls_report(&tr, base);
}

#else /* !RDL_HAVE_TLS */

void run_tls(const rdt_server_t *s, int reps, const base_res_t *base)
{
    out("\n10. TLS: not measured, this librdlock was built without TLS\n");
}

#endif
