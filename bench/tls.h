/* tls.h - bench step 10 (issue 24): the uncontended lock+unlock pair over
 * TLS, as a ratio to a TLS PING floor measured in the same run, next to
 * the same figures over plain TCP, all interleaved in small chunks.
 *
 * Its own file because it is the bench's only user of hiredis_ssl (the
 * floor's connection); built without TLS (RDL_HAVE_TLS unset, hiredis
 * 0.14) bench_tls() only says so. */
#ifndef RDB_TLS_H
#define RDB_TLS_H

#include "../tests/fixture.h"

#define BENCH_TLS_CHUNK 50 /* PINGs or pairs per chunk of each kind */

/* [0] TLS (a TLS-only server of its own), [1] plain TCP (the bench's
 * server); medians over the repetitions, ratios the medians of the
 * per-repetition ratios. */
typedef struct bench_tls_res {
    int n;                          /* PINGs and pairs of each kind per repetition */
    double start_s;                 /* certificates + TLS server started and answering */
    double floor[2];                /* PING round trips/s, one hiredis connection */
    double pairs[2];                /* lock+unlock pairs/s, one thread, dedicated client */
    double ratio[2];                /* pairs / (floor / 2) */
    double ratio_lo[2], ratio_hi[2];
    double rt_us_extra;             /* what TLS adds to one PING round trip, us */
    double pair_us_extra;           /* ... to one lock+unlock pair, us */
    double pairs_quot;              /* TLS pairs/s / TCP pairs/s */
    char server[300];               /* rdlock_client_info()'s server: "127.0.0.1:P (TLS TLSv1.3)" */
    char err[256];                  /* why it failed, "" if it did not */
} bench_tls_res_t;

/* Run step 10 against plain (the bench's server) and a TLS-only server it
 * starts and stops itself: reps repetitions of n PINGs and n pairs of each
 * transport, interleaved in chunks of BENCH_TLS_CHUNK.  0, or -1 with
 * res->err set (a hard error). */
int bench_tls(const rdt_server_t *plain, int reps, int n, bench_tls_res_t *res);

#endif
