/* tls.c - bench step 10; see tls.h and bench/README.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rdl_build.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#ifdef RDL_HAVE_TLS
#include <hiredis/hiredis_ssl.h>
#endif

#include "rdlock.h"
#include "tls.h"

#ifdef RDL_HAVE_TLS

#define MAX_REPS 64

typedef struct side {
    redisContext *c; /* the floor's connection */
    rdlock_client_t *client;
    rdlock_attr_t attr;
    rdlock_t m;
    int client_ok, lock_ok;
} side_t;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double t[MAX_REPS];
    if (n <= 0 || n > MAX_REPS)
        return NAN;
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void range(const double *v, int n, double *lo, double *hi)
{
    int i;
    *lo = *hi = v[0];
    for (i = 1; i < n; i++) {
        if (v[i] < *lo)
            *lo = v[i];
        if (v[i] > *hi)
            *hi = v[i];
    }
}

/* m PINGs, as step 1's ping_rate: ns spent, or -1. */
static int64_t pings(side_t *s, int m, bench_tls_res_t *res, const char *what)
{
    int64_t t0 = now_ns();
    int i;
    for (i = 0; i < m; i++) {
        redisReply *r = redisCommand(s->c, "PING");
        if (r == NULL || r->type != REDIS_REPLY_STATUS) {
            snprintf(res->err, sizeof res->err, "PING over %s failed: %s", what, r ? "bad reply" : s->c->errstr);
            if (r)
                freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    return now_ns() - t0;
}

/* m lock+unlock pairs, as step 2's pair_rate: ns spent, or -1. */
static int64_t pairs(side_t *s, int m, bench_tls_res_t *res, const char *what)
{
    int64_t t0 = now_ns();
    int i, rc;
    for (i = 0; i < m; i++) {
        if ((rc = rdlock_lock(&s->m)) != 0 || (rc = rdlock_unlock(&s->m)) != 0) {
            snprintf(res->err, sizeof res->err, "uncontended lock/unlock over %s: %s", what, rdlock_strerror(rc));
            return -1;
        }
    }
    return now_ns() - t0;
}

/* The lock on a dedicated client opened on ini, as step 2's ulock_open. */
static int side_lock(side_t *s, const char *ini, const char *name, bench_tls_res_t *res)
{
    int rc;
    if (ini == NULL) {
        snprintf(res->err, sizeof res->err, "cannot write the ini for %s", name);
        return -1;
    }
    if ((rc = rdlock_client_open(&s->client, ini)) != 0) {
        snprintf(res->err, sizeof res->err, "rdlock_client_open(%s): %s", ini, rdlock_strerror(rc));
        return -1;
    }
    s->client_ok = 1;
    rdlock_attr_init(&s->attr);
    rdlock_attr_setclient(&s->attr, s->client);
    if ((rc = rdlock_init(&s->m, name, &s->attr)) != 0) {
        snprintf(res->err, sizeof res->err, "rdlock_init(%s): %s", name, rdlock_strerror(rc));
        return -1;
    }
    s->lock_ok = 1;
    return 0;
}

static void side_close(side_t *s, bench_tls_res_t *res)
{
    int rc;
    if (s->lock_ok && (rc = rdlock_destroy(&s->m)) != 0 && res->err[0] == '\0')
        snprintf(res->err, sizeof res->err, "rdlock_destroy: %s", rdlock_strerror(rc));
    if (s->client_ok) {
        rdlock_attr_destroy(&s->attr);
        if ((rc = rdlock_client_close(s->client)) != 0 && res->err[0] == '\0')
            snprintf(res->err, sizeof res->err, "rdlock_client_close: %s", rdlock_strerror(rc));
    }
    if (s->c != NULL)
        redisFree(s->c);
}

/* The TLS floor: one hiredis connection (s->c) through hiredis_ssl to
 * port, verifying the server's certificate against the fixture's CA (ca;
 * the context goes to *ssl, for the caller to free).  0, or -1 with
 * res->err set. */
static int floor_connect(side_t *s, int port, const char *ca, redisSSLContext **ssl, bench_tls_res_t *res)
{
    redisSSLContextError serr = REDIS_SSL_CTX_NONE;

    redisInitOpenSSL();
    if ((*ssl = redisCreateSSLContext(ca, NULL, NULL, NULL, NULL, &serr)) == NULL) {
        snprintf(res->err, sizeof res->err, "redisCreateSSLContext: %s", redisSSLContextGetError(serr));
        return -1;
    }
    s->c = redisConnect("127.0.0.1", port);
    if (s->c == NULL || s->c->err) {
        snprintf(res->err, sizeof res->err, "connect to the TLS port %d: %s", port,
                 s->c ? s->c->errstr : "out of memory");
        return -1;
    }
    if (redisInitiateSSLWithContext(s->c, *ssl) != REDIS_OK) {
        snprintf(res->err, sizeof res->err, "TLS handshake (hiredis_ssl): %s", s->c->errstr);
        return -1;
    }
    return 0;
}

int bench_tls(const rdt_server_t *plain, int reps, int n, bench_tls_res_t *res)
{
    static const char *const what[2] = { "TLS", "TCP" };
    rdt_server_t ts;
    side_t sd[2];
    redisSSLContext *ssl = NULL;
    rdlock_client_info_t info;
    const char *certs;
    char ini[1024], ca[300];
    double fl[2][MAX_REPS], pr[2][MAX_REPS], q[2][MAX_REPS], rt_x[MAX_REPS], pair_x[MAX_REPS], quot[MAX_REPS];
    int64_t t0 = now_ns(), t[2][2], d;
    int r, k, done, m, rc = -1;

    memset(res, 0, sizeof *res);
    memset(sd, 0, sizeof sd);
    memset(&ts, 0, sizeof ts);
    res->n = n;
    if (reps < 1 || reps > MAX_REPS || n < 1) {
        snprintf(res->err, sizeof res->err, "bad arguments");
        return -1;
    }
    if ((certs = rdt_tls_certs()) == NULL || rdt_server_start_tls(&ts, "server", 0, NULL) != 0) {
        snprintf(res->err, sizeof res->err, "cannot start a TLS redis-server (fixture said why above)");
        return -1;
    }
    res->start_s = (double)(now_ns() - t0) / 1e9;
    snprintf(ca, sizeof ca, "%s/ca.crt", certs);

    if (floor_connect(&sd[0], ts.port, ca, &ssl, res) != 0)
        goto out;
    if ((sd[1].c = rdt_connect(plain)) == NULL) {
        snprintf(res->err, sizeof res->err, "cannot connect to the bench's server");
        goto out;
    }
    /* The pairs: a librdlock client with tls = yes (its keys go on in
     * [redis], after the host and port rdt_write_ini writes), and one on
     * the plain server, with step 2's lease. */
    snprintf(ini, sizeof ini, "tls = yes\ntls_ca_cert_file = %s\n[lock]\nlease_ms = 30000\n", ca);
    if (side_lock(&sd[0], rdt_write_ini(&ts, 0, ini), "bench-uncontended-tls", res) != 0 ||
        side_lock(&sd[1], rdt_write_ini(plain, 0, "[lock]\nlease_ms = 30000\n"), "bench-uncontended-tls-vs-tcp",
                  res) != 0)
        goto out;
    if (rdlock_client_info(sd[0].client, &info) == 0)
        snprintf(res->server, sizeof res->server, "%s", info.server);

    /* Warm up: connections, script cache, the watchdog thread. */
    for (k = 0; k < 2; k++)
        if (pings(&sd[k], 500, res, what[k]) < 0 || pairs(&sd[k], 300, res, what[k]) < 0)
            goto out;
    /* Floor and pairs of both transports interleaved in small chunks, so
     * all four see the same moment-to-moment noise (as step 5a). */
    for (r = 0; r < reps; r++) {
        memset(t, 0, sizeof t);
        for (done = 0; done < n; done += m) {
            m = n - done < BENCH_TLS_CHUNK ? n - done : BENCH_TLS_CHUNK;
            for (k = 0; k < 2; k++) {
                if ((d = pings(&sd[k], m, res, what[k])) < 0)
                    goto out;
                t[k][0] += d;
                if ((d = pairs(&sd[k], m, res, what[k])) < 0)
                    goto out;
                t[k][1] += d;
            }
        }
        for (k = 0; k < 2; k++) {
            fl[k][r] = n / ((double)t[k][0] / 1e9);
            pr[k][r] = n / ((double)t[k][1] / 1e9);
            q[k][r] = pr[k][r] / (fl[k][r] / 2);
        }
        rt_x[r] = ((double)t[0][0] - (double)t[1][0]) / n / 1e3;
        pair_x[r] = ((double)t[0][1] - (double)t[1][1]) / n / 1e3;
        quot[r] = pr[0][r] / pr[1][r];
    }
    for (k = 0; k < 2; k++) {
        res->floor[k] = median(fl[k], reps);
        res->pairs[k] = median(pr[k], reps);
        res->ratio[k] = median(q[k], reps);
        range(q[k], reps, &res->ratio_lo[k], &res->ratio_hi[k]);
    }
    res->rt_us_extra = median(rt_x, reps);
    res->pair_us_extra = median(pair_x, reps);
    res->pairs_quot = median(quot, reps);
    rc = 0;
out:
    side_close(&sd[0], res);
    side_close(&sd[1], res);
    if (ssl != NULL)
        redisFreeSSLContext(ssl);
    rdt_server_stop(&ts);
    return rc == 0 && res->err[0] == '\0' ? 0 : -1;
}

#else /* !RDL_HAVE_TLS */

int bench_tls(const rdt_server_t *plain, int reps, int n, bench_tls_res_t *res)
{
    memset(res, 0, sizeof *res);
    snprintf(res->err, sizeof res->err, "this librdlock was built without TLS");
    return -1;
}

#endif
