/* test_tls.c - TLS to the servers (docs/CONTRACT.md section 3, "TLS").
 *
 * Against real TLS-only redis-servers (--port 0 --tls-port N) that the
 * fixture starts with certificates it makes with openssl in a temp dir
 * (rdt_tls_certs: a CA, a server certificate for 127.0.0.1 and localhost,
 * an expired one, a client certificate, a second CA).
 *
 * Built with TLS:
 *   lock_unlock        a lock over TLS; rdlock_client_info says TLS and the
 *                      protocol; another client sees it held
 *   wait_renew_handover a 1 s lease renewed over TLS through 2.5 s while
 *                      another client waits, then handed over
 *   mutual             a server that requires client certificates: none is
 *                      EACCES naming the refusal, ours is accepted
 *   wrong_ca           a CA that signed nothing: EACCES, "not trusted"
 *   wrong_name         tls_server_name that the certificate lacks: EACCES,
 *                      "hostname mismatch"; one it has: fine
 *   expired            an expired server certificate: EACCES, "expired"
 *   verify_off         tls_verify = no accepts the unknown CA, with a WARN
 *   plain_to_tls       no TLS to a TLS port: EIO within the connect
 *                      timeout, no hang
 *   tls_to_plain       TLS to a plain port: EIO within the connect
 *                      timeout, "not a TLS port"
 *   later_failure      a server whose certificate turns bad after open: the
 *                      next lock call is EACCES at once, not retried as a
 *                      server that is down
 *   later_refusal      a server that starts requiring client certificates
 *                      after open: the next lock call is EACCES at once
 *   reset_connections  TLS connections reset (RST) under held locks: each
 *                      unlock still succeeds, on a new connection
 *   redlock            a quorum of three TLS masters
 *   config             the TLS keys' own errors: socket with tls, a
 *                      certificate without its key, a missing CA file
 *                      (ENOENT), a CA file that is not PEM (EINVAL at open)
 *   cluster            a TLS-only Redis Cluster (3 masters, 3 replicas,
 *                      cluster bus and replication over TLS, created by
 *                      redis-cli over TLS), one node in [cluster] nodes:
 *                      a name on each master is locked there and only
 *                      there; a held name's slot is migrated to another
 *                      master (MIGRATE over TLS): a second client, which
 *                      had met only the old master, follows the MOVED to
 *                      the new one over TLS and finds the name busy; the
 *                      holder's renewals follow too (held past two
 *                      leases), its unlock is 0, the name locks again there
 *   sentinel_failover  a TLS-only master, replica and sentinel (which
 *                      talks TLS to both: tls-replication): a client that
 *                      finds the master through the sentinel, both over
 *                      TLS, holds a lock; SENTINEL FAILOVER: the client
 *                      hears of it on its TLS link to the sentinel and a
 *                      new lock lands on the new master within 5 s; the
 *                      hold from before (replicated before the failover)
 *                      is renewed there over TLS (still there a lease
 *                      after the switch), never reported lost, and its
 *                      unlock is 0
 * Built without TLS (hiredis 0.14):
 *   without_tls        tls = yes is EINVAL naming the reason, never a plain
 *                      connection */
#include "rdl_build.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "cluster.h"
#include "testutil.h"
#include "topology.h"
#include "tproxy.h"

static rdt_server_t g_plain; /* a plain server: ini files live in its dir */

/* Open a client from ini text (written into g_plain's dir); the rc. */
static int open_text(const char *base, const char *text, rdlock_client_t **c)
{
    const char *path = rdt_write_file(&g_plain, base, text);
    *c = NULL;
    if (path == NULL)
        return -1;
    return rdlock_client_open(c, path);
}

#ifdef RDL_HAVE_TLS


static void last_error(char *buf, size_t n)
{
    buf[0] = '\0';
    rdlock_last_error(buf, n);
}

static rdt_server_t g_tls;   /* TLS only, any client */
static rdt_server_t g_mtls;  /* TLS only, client certificates required */
static const char *g_certs;

/* An ini for a TLS server at port: CA, timeouts, then extra. */
static const char *tls_text(int port, const char *extra)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "[redis]\nhost = 127.0.0.1\nport = %d\ntls = yes\ntls_ca_cert_file = %s/ca.crt\n"
             "connect_timeout_ms = 500\ncommand_timeout_ms = 1000\ncommand_retries = 1\n%s",
             port, g_certs, extra ? extra : "");
    return buf;
}

static int lock_on(rdlock_t *m, const char *name, rdlock_client_t *c, unsigned lease)
{
    rdt_lockopts_t o = RDT_LOCKOPTS(c);
    o.lease = lease;
    return rdt_mutex_init(m, name, &o);
}

static void test_lock_unlock(void)
{
    rdlock_client_t *c1, *c2;
    rdlock_client_info_t info;
    rdlock_t a, b;
    uint64_t t1 = 0, t2 = 0;

    RDT_ASSERT_RC(0, open_text("lu1.ini", tls_text(g_tls.port, NULL), &c1));
    RDT_ASSERT_RC(0, open_text("lu2.ini", tls_text(g_tls.port, NULL), &c2));
    CU_ASSERT_FATAL(c1 != NULL && c2 != NULL);
    RDT_ASSERT_RC(0, rdlock_client_info(c1, &info));
    printf("[%s] ", info.server);
    CU_ASSERT(strstr(info.server, "(TLS TLSv1.") != NULL);
    RDT_ASSERT_RC(0, lock_on(&a, "tls-lu", c1, 0));
    RDT_ASSERT_RC(0, lock_on(&b, "tls-lu", c2, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&a, &t1));
    /* The hold is on the server: the TLS connection is the real one. */
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_tls, 0, "EXISTS %s", rdt_key("tls-lu", "")));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&b));
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    RDT_ASSERT_RC(0, rdlock_trylock(&b));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&b, &t2));
    CU_ASSERT(t2 > t1);
    RDT_ASSERT_RC(0, rdlock_unlock(&b));
    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
    rdt_close_client(c1);
    rdt_close_client(c2);
}

typedef struct waiter {
    rdlock_t *m;
    int rc;
    long long got_at;
} waiter_t;

static void *wait_thread(void *p)
{
    waiter_t *w = p;
    w->rc = rdlock_lock(w->m);
    w->got_at = rdt_now_ms();
    if (w->rc == 0)
        w->rc = rdlock_unlock(w->m);
    return NULL;
}

static void test_wait_renew_handover(void)
{
    rdlock_client_t *c1, *c2;
    rdlock_t a, b;
    waiter_t w = { &b, -1, 0 };
    pthread_t t;
    long long released;

    RDT_ASSERT_RC(0, open_text("wr1.ini", tls_text(g_tls.port, "[lock]\nretry_interval_ms = 5000\n"), &c1));
    RDT_ASSERT_RC(0, open_text("wr2.ini", tls_text(g_tls.port, "[lock]\nretry_interval_ms = 5000\n"), &c2));
    CU_ASSERT_FATAL(c1 != NULL && c2 != NULL);
    RDT_ASSERT_RC(0, lock_on(&a, "tls-wr", c1, 1000));
    RDT_ASSERT_RC(0, lock_on(&b, "tls-wr", c2, 1000));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    pthread_create(&t, NULL, wait_thread, &w);
    /* 2.5 leases: only the watchdog's renewals over TLS keep it. */
    rdt__nap_ms(2500);
    CU_ASSERT_EQUAL(w.got_at, 0);
    released = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_unlock(&a)); /* 0: the hold was never lost */
    pthread_join(t, NULL);
    RDT_ASSERT_RC(0, w.rc);
    /* Woken by the release (a wake-up over the TLS subscriber), not by
     * the 5 s re-check. */
    printf("[handed over after %lld ms] ", w.got_at - released);
    CU_ASSERT(w.got_at - released < 2000);
    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
    rdt_close_client(c1);
    rdt_close_client(c2);
}

/* Open with text, expecting EACCES and the last error to contain want. */
static void expect_refused(const char *base, const char *text, const char *want)
{
    rdlock_client_t *c;
    char why[512];
    long long t0 = rdt_now_ms();
    int rc = open_text(base, text, &c);

    last_error(why, sizeof why);
    printf("[%s: %s] ", base, why);
    RDT_ASSERT_RC(EACCES, rc);
    CU_ASSERT(strstr(why, want) != NULL);
    /* Refused at once: not retried as a server that is down. */
    CU_ASSERT(rdt_now_ms() - t0 < 1500);
    if (rc == 0)
        rdt_close_client(c);
}

static void test_mutual(void)
{
    rdlock_client_t *c;
    char extra[600];
    rdlock_t m;

    expect_refused("mt0.ini", tls_text(g_mtls.port, NULL), "certificate");
    snprintf(extra, sizeof extra, "tls_cert_file = %s/client.crt\ntls_key_file = %s/client.key\n", g_certs, g_certs);
    RDT_ASSERT_RC(0, open_text("mt1.ini", tls_text(g_mtls.port, extra), &c));
    CU_ASSERT_FATAL(c != NULL);
    RDT_ASSERT_RC(0, lock_on(&m, "tls-mt", c, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
}

static void test_wrong_ca(void)
{
    char text[2048];
    snprintf(text, sizeof text,
             "[redis]\nhost = 127.0.0.1\nport = %d\ntls = yes\ntls_ca_cert_file = %s/other-ca.crt\n"
             "connect_timeout_ms = 500\n",
             g_tls.port, g_certs);
    expect_refused("ca.ini", text, "not trusted");
}

static void test_wrong_name(void)
{
    rdlock_client_t *c;

    expect_refused("name.ini", tls_text(g_tls.port, "tls_server_name = other.example\n"), "hostname mismatch");
    /* A name the certificate has (DNS:localhost), on 127.0.0.1. */
    RDT_ASSERT_RC(0, open_text("name2.ini", tls_text(g_tls.port, "tls_server_name = localhost\n"), &c));
    if (c != NULL)
        rdt_close_client(c);
}

static void test_expired(void)
{
    rdt_server_t s;
    CU_ASSERT_FATAL(rdt_server_start_tls(&s, "expired", 0, NULL) == 0);
    expect_refused("exp.ini", tls_text(s.port, NULL), "expired");
    rdt_server_stop(&s);
}

static void test_verify_off(void)
{
    rdlock_client_t *c;
    char text[2048];
    rdlock_t m;

    snprintf(text, sizeof text,
             "[redis]\nhost = 127.0.0.1\nport = %d\ntls = yes\ntls_ca_cert_file = %s/other-ca.crt\n"
             "tls_verify = no\n",
             g_tls.port, g_certs);
    rdt_log_capture();
    rdt_log_clear();
    RDT_ASSERT_RC(0, open_text("off.ini", text, &c));
    CU_ASSERT(rdt_log_has("tls_verify = no"));
    if (c != NULL) {
        RDT_ASSERT_RC(0, lock_on(&m, "tls-off", c, 0));
        RDT_ASSERT_RC(0, rdlock_trylock(&m));
        RDT_ASSERT_RC(0, rdlock_unlock(&m));
        RDT_ASSERT_RC(0, rdlock_destroy(&m));
        rdt_close_client(c);
    }
}

/* Open with fail_fast (so that open reports the outcome) and expect EIO
 * within ms, the last error containing want (NULL: any). */
static void expect_eio(const char *base, const char *text, long long ms, const char *want)
{
    rdlock_client_t *c;
    char why[512];
    long long t0 = rdt_now_ms(), took;
    int rc = open_text(base, text, &c);

    took = rdt_now_ms() - t0;
    last_error(why, sizeof why);
    printf("[%s: %s after %lld ms] ", base, why, took);
    RDT_ASSERT_RC(EIO, rc);
    CU_ASSERT(took < ms);
    if (want != NULL)
        CU_ASSERT(strstr(why, want) != NULL);
    if (rc == 0)
        rdt_close_client(c);
}

static void test_plain_to_tls(void)
{
    char text[512];
    snprintf(text, sizeof text,
             "[redis]\nhost = 127.0.0.1\nport = %d\nconnect_timeout_ms = 500\ncommand_timeout_ms = 500\n"
             "[lock]\nfail_fast = yes\n",
             g_tls.port);
    expect_eio("p2t.ini", text, 1500, "tls = yes");
}

static void test_tls_to_plain(void)
{
    expect_eio("t2p.ini", tls_text(g_plain.port, "[lock]\nfail_fast = yes\n"), 1500, "not a TLS port");
}

static void test_later_failure(void)
{
    rdt_server_t s;
    rdlock_client_t *c;
    char arg[400];
    redisReply *r;
    rdlock_t m;
    long long t0;

    CU_ASSERT_FATAL(rdt_server_start_tls(&s, "server", 0, NULL) == 0);
    RDT_ASSERT_RC(0, open_text("late.ini", tls_text(s.port, "command_retries = 3\n"), &c));
    CU_ASSERT_FATAL(c != NULL);
    RDT_ASSERT_RC(0, lock_on(&m, "tls-late", c, 0));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    /* New connections now get the expired certificate; the client's
     * open ones are closed. */
    snprintf(arg, sizeof arg, "%s/expired.crt", g_certs);
    r = rdt_cmd_on(&s, "CONFIG SET tls-cert-file %s", arg);
    CU_ASSERT(r != NULL && r->type == REDIS_REPLY_STATUS);
    if (r != NULL)
        freeReplyObject(r);
    r = rdt_cmd_on(&s, "CLIENT KILL TYPE normal SKIPME yes");
    if (r != NULL)
        freeReplyObject(r);
    rdt_log_capture();
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EACCES, rdlock_trylock(&m));
    printf("[EACCES after %lld ms] ", rdt_now_ms() - t0);
    CU_ASSERT(rdt_now_ms() - t0 < 1500);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    rdt_server_stop(&s);
}

/* The same for our certificate: a server that starts requiring client
 * certificates after open (CONFIG SET tls-auth-clients yes) refuses the
 * next connection only at its first read (TLS 1.3); the lock call that
 * meets it gets EACCES at once, as the open would, not an outage's EIO
 * after retries. */
static void test_later_refusal(void)
{
    rdt_server_t s;
    rdlock_client_t *c;
    redisReply *r;
    rdlock_t m;
    long long t0;

    CU_ASSERT_FATAL(rdt_server_start_tls(&s, "server", 0, NULL) == 0);
    RDT_ASSERT_RC(0, open_text("laterref.ini", tls_text(s.port, "command_retries = 3\n"), &c));
    CU_ASSERT_FATAL(c != NULL);
    RDT_ASSERT_RC(0, lock_on(&m, "tls-later-ref", c, 0));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    r = rdt_cmd_on(&s, "CONFIG SET tls-auth-clients yes");
    CU_ASSERT(r != NULL && r->type == REDIS_REPLY_STATUS);
    if (r != NULL)
        freeReplyObject(r);
    r = rdt_cmd_on(&s, "CLIENT KILL TYPE normal SKIPME yes");
    if (r != NULL)
        freeReplyObject(r);
    rdt_log_capture();
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EACCES, rdlock_trylock(&m));
    printf("[EACCES after %lld ms] ", rdt_now_ms() - t0);
    CU_ASSERT(rdt_now_ms() - t0 < 1500);
    CU_ASSERT(rdt_log_has("certificate"));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    rdt_server_stop(&s);
}

/* Lock over TLS through a proxy, which then resets every connection
 * (RST); the unlock's write meets the reset connection and must get 0 on
 * a new one; five times.  (Run in this process, where the fixture ignores
 * SIGPIPE: Linux reports a reset to the first write as ECONNRESET, without
 * SIGPIPE, and the library never writes twice on a failed connection, so
 * no test here can show the signal-mask guard that TLS writes run under;
 * this shows that a reset costs a retry, not the hold.  No fork: the proxy
 * is a thread.) */
static void test_reset_connections(void)
{
    rdlock_client_t *c;
    tproxy_t *px;
    rdlock_t m;
    int i;

    CU_ASSERT_FATAL(tproxy_start(&px, g_tls.port) == 0);
    RDT_ASSERT_RC(0, open_text("reset.ini", tls_text(tproxy_port(px), "command_retries = 3\n"), &c));
    CU_ASSERT_FATAL(c != NULL);
    RDT_ASSERT_RC(0, lock_on(&m, "tls-reset", c, 0));
    for (i = 0; i < 5; i++) {
        RDT_ASSERT_RC(0, rdlock_lock(&m));
        CU_ASSERT(tproxy_reset(px) >= 1);
        rdt__nap_ms(20); /* the RST arrives before the unlock writes */
        RDT_ASSERT_RC(0, rdlock_unlock(&m));
    }
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    tproxy_stop(px);
}

static void test_redlock(void)
{
    rdt_server_t m[3];
    rdlock_client_t *c;
    char text[2048];
    rdlock_t a;
    uint64_t tok = 0;
    int k;

    for (k = 0; k < 3; k++)
        CU_ASSERT_FATAL(rdt_server_start_tls(&m[k], "server", 0, NULL) == 0);
    snprintf(text, sizeof text,
             "[redlock]\nmasters = 127.0.0.1:%d, 127.0.0.1:%d, 127.0.0.1:%d\n"
             "[redis]\ntls = yes\ntls_ca_cert_file = %s/ca.crt\nconnect_timeout_ms = 500\n",
             m[0].port, m[1].port, m[2].port, g_certs);
    RDT_ASSERT_RC(0, open_text("rl.ini", text, &c));
    CU_ASSERT_FATAL(c != NULL);
    RDT_ASSERT_RC(0, lock_on(&a, "tls-rl", c, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&a));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&a, &tok));
    CU_ASSERT(tok > 0);
    /* Held on every master: each TLS master granted it. */
    for (k = 0; k < 3; k++)
        RDT_ASSERT_EQ_LL(1, rdt_int_on(&m[k], 0, "EXISTS %s", rdt_key("tls-rl", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&a));
    RDT_ASSERT_RC(0, rdlock_destroy(&a));
    rdt_close_client(c);
    for (k = 0; k < 3; k++)
        rdt_server_stop(&m[k]);
}

/* The fixture indices of cl's three masters (ROLE) into m: 0, or -1. */
static int cluster_masters(const rdt_cluster_t *cl, int *m)
{
    int i, k = 0;
    for (i = 0; i < RDT_CLUSTER_NODES && k < 3; i++)
        if (rdt_cluster_is_master(cl, i) == 1)
            m[k++] = i;
    return k == 3 ? 0 : -1;
}

/* A lock name "<stem>-<i>" whose keys live on master m of cl: into buf,
 * 0; -1 if none in 1000 tries. */
static int cluster_name_on(const rdt_cluster_t *cl, int m, const char *stem, char *buf, size_t n)
{
    int i;
    for (i = 0; i < 1000; i++) {
        snprintf(buf, n, "%s-%d", stem, i);
        if (rdt_cluster_master_of_key(cl, rdt_key(buf, ""), strlen(rdt_key(buf, ""))) == m)
            return 0;
    }
    fprintf(stderr, "no name %s-* on node %d\n", stem, m);
    return -1;
}

/* An integer reply of node i of cl (over its unix socket), else -1000. */
static long long cluster_int(const rdt_cluster_t *cl, int i, const char *cmd, const char *key)
{
    redisReply *r = rdt_cluster_cmd(cl, i, "%s %s", cmd, key);
    long long v = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1000;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* Whether the captured log has a line of level error ("0 ..."). */
static int log_has_error(void)
{
    const char *t = rdt_log_text();
    return (t[0] == '0' && t[1] == ' ') || rdt_log_has("\n0 ");
}

#define CL_LEASE_MS 1000

/* The servers of the cases below live here, not on their stacks: a case
 * that fails a fatal assertion leaves them to teardown(), which stops
 * them by PID (a stopped or never started one is harmless). */
static rdt_cluster_t g_cl;
static rdt_server_t g_sf[3]; /* sentinel_failover: master, replica, sentinel */

static void test_cluster(void)
{
    rdt_cluster_t *cl = &g_cl;
    rdlock_client_t *c1 = NULL, *c2 = NULL;
    rdlock_client_info_t info;
    rdlock_t spread[3], held, other;
    char names[3][64], name[64], text[1024], moved[128];
    const char *path;
    int m[3], k, slot, from, to;
    long long t0 = rdt_now_ms();

    CU_ASSERT_FATAL(rdt_cluster_start_tls(cl, "--repl-diskless-sync-delay 0") == 0);
    printf("[TLS cluster ready in %lld ms] ", rdt_now_ms() - t0);
    CU_ASSERT_FATAL(cluster_masters(cl, m) == 0);
    from = m[0];
    to = m[1];
    /* One node in the file, the migration's source: the client learns
     * the others (their TLS ports) from CLUSTER SLOTS over TLS. */
    snprintf(text, sizeof text,
             "[cluster]\nnodes = 127.0.0.1:%d\n[redis]\ntls = yes\ntls_ca_cert_file = %s/ca.crt\n"
             "connect_timeout_ms = 1000\ncommand_timeout_ms = 2000\n[lock]\nlease_ms = %d\n",
             cl->node[from].port, g_certs, CL_LEASE_MS);
    path = rdt_write_file(&g_plain, "cluster.ini", text);
    CU_ASSERT_FATAL(path != NULL);
    RDT_ASSERT_RC(0, rdlock_client_open(&c1, path));
    CU_ASSERT_FATAL(c1 != NULL);
    RDT_ASSERT_RC(0, rdlock_client_info(c1, &info));
    printf("[%s] ", info.server);

    /* A name on each master: locked there, and only there. */
    for (k = 0; k < 3; k++) {
        CU_ASSERT_FATAL(cluster_name_on(cl, m[k], "tls-cl", names[k], sizeof names[k]) == 0);
        RDT_ASSERT_RC(0, lock_on(&spread[k], names[k], c1, 0));
        RDT_ASSERT_RC(0, rdlock_lock(&spread[k]));
        RDT_ASSERT_EQ_LL(1, cluster_int(cl, m[k], "EXISTS", rdt_key(names[k], "")));
        CU_ASSERT(cluster_int(cl, m[(k + 1) % 3], "EXISTS", rdt_key(names[k], "")) == -1000); /* MOVED */
    }
    for (k = 0; k < 3; k++) {
        RDT_ASSERT_RC(0, rdlock_unlock(&spread[k]));
        RDT_ASSERT_EQ_LL(0, cluster_int(cl, m[k], "EXISTS", rdt_key(names[k], "")));
        RDT_ASSERT_RC(0, rdlock_destroy(&spread[k]));
    }

    /* A hold on `from`; a second client that has only met `from` sees it
     * busy there. */
    CU_ASSERT_FATAL(cluster_name_on(cl, from, "tls-cl-mv", name, sizeof name) == 0);
    slot = rdt_cluster_key_slot(cl, name, strlen(name)); /* the tag is the name */
    CU_ASSERT_FATAL(slot >= 0);
    RDT_ASSERT_RC(0, rdlock_client_open(&c2, path));
    CU_ASSERT_FATAL(c2 != NULL);
    RDT_ASSERT_RC(0, lock_on(&held, name, c1, CL_LEASE_MS));
    RDT_ASSERT_RC(0, lock_on(&other, name, c2, CL_LEASE_MS));
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));

    /* The slot moves to `to` (IMPORTING/MIGRATING, MIGRATE over the TLS
     * bus, SETSLOT NODE everywhere).  Then both clients' maps are wrong:
     * `from` answers MOVED, and they follow it to `to` over TLS, c2 on a
     * connection it opens only now. */
    rdt_log_capture();
    rdt_log_clear();
    t0 = rdt_now_ms();
    CU_ASSERT_FATAL(rdt_cluster_migrate_slot(cl, slot, from, to, NULL, NULL) == 0);
    printf("[slot %d moved in %lld ms] ", slot, rdt_now_ms() - t0);
    CU_ASSERT(cluster_int(cl, to, "PTTL", rdt_key(name, "")) > 0);
    CU_ASSERT(cluster_int(cl, from, "EXISTS", rdt_key(name, "")) == -1000); /* MOVED */
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other)); /* redirected, and still held */
    /* The redirection as the library saw it, over TLS (a TLS client is
     * given the TLS port), and not one error-level line. */
    snprintf(moved, sizeof moved, "MOVED %d 127.0.0.1:%d", slot, cl->node[to].port);
    if (!rdt_log_has(moved) || log_has_error())
        fprintf(stderr, "looked for '%s' and no error in the log:\n%s", moved, rdt_log_text());
    CU_ASSERT(rdt_log_has(moved));
    CU_ASSERT(!log_has_error());

    /* Two leases later the hold lives on `to` only through the holder's
     * renewals, which follow the MOVED there too. */
    rdt__nap_ms(2 * CL_LEASE_MS);
    CU_ASSERT(cluster_int(cl, to, "PTTL", rdt_key(name, "")) > 0);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    RDT_ASSERT_RC(0, rdlock_unlock(&held)); /* 0: the hold was kept */
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    RDT_ASSERT_EQ_LL(1, cluster_int(cl, to, "EXISTS", rdt_key(name, "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
    rdt_close_client(c1);
    rdt_close_client(c2);
    rdt_cluster_stop(cl);
}


#define SF_NAME "rdttls"
#define SF_LEASE_MS 3000

static void test_sentinel_failover(void)
{
    rdt_server_t *ma = &g_sf[0], *re = &g_sf[1], *se = &g_sf[2];
    const rdt_server_t *reps[1] = { re }, *sents[1] = { se };
    rdlock_client_t *c = NULL;
    rdlock_client_info_t info;
    rdt_lockopts_t o;
    static rdt_lostrec_t rec; /* the lock keeps a pointer to it */
    rdlock_t held, fresh;
    char extra[256], text[1024], role[32];
    const char *path;
    long long t0, t_switch, t_moved = -1, end;
    int on = 0, rc;

    /* Master and replica TLS-only, replicating over TLS (the old master
     * too, once Sentinel makes it a replica); no 5 s wait before the
     * replica's first full sync. */
    CU_ASSERT_FATAL(rdt_server_start_tls(ma, "server", 0, "--tls-replication yes --repl-diskless-sync-delay 0") == 0);
    snprintf(extra, sizeof extra, "--tls-replication yes --repl-diskless-sync-delay 0 --replicaof 127.0.0.1 %d",
             ma->port);
    CU_ASSERT_FATAL(rdt_server_start_tls(re, "server", 0, extra) == 0);
    CU_ASSERT_FATAL(rdt_sentinel_start_tls(se, ma, SF_NAME, 1) == 0);
    t0 = rdt_now_ms();
    /* The sentinel knows the replica and could promote it (over TLS: it
     * has no other way to reach either). */
    CU_ASSERT_FATAL(rdt_topology_wait(ma, reps, 1, sents, 1, SF_NAME, 30000) == 0);
    printf("[topology ready in %lld ms] ", rdt_now_ms() - t0);

    snprintf(text, sizeof text,
             "[redis]\ntls = yes\ntls_ca_cert_file = %s/ca.crt\nconnect_timeout_ms = 1000\n"
             "command_timeout_ms = 2000\n[sentinel]\nmaster_name = %s\nsentinels = 127.0.0.1:%d\n"
             "[lock]\nlease_ms = %d\n",
             g_certs, SF_NAME, se->port, SF_LEASE_MS);
    path = rdt_write_file(&g_plain, "sentinel.ini", text);
    CU_ASSERT_FATAL(path != NULL);
    rdt_log_capture();
    rdt_log_clear();
    rdt_lost_init(&rec);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, path));
    CU_ASSERT_FATAL(c != NULL);
    o = (rdt_lockopts_t)RDT_LOCKOPTS(c);
    o.lostcb = rdt_lost_cb;
    o.lostarg = &rec;
    RDT_ASSERT_RC(0, rdt_mutex_init(&held, "tls-sf-held", &o));
    RDT_ASSERT_RC(0, rdt_mutex_on(&fresh, "tls-sf-new", c, 0)); /* no lost callback: see below */
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(ma, 0, "EXISTS %s", rdt_key("tls-sf-held", "")));
    RDT_ASSERT_RC(0, rdlock_client_info(c, &info));
    printf("[%s] ", info.server);
    CU_ASSERT(strstr(info.server, "(TLS TLSv1.") != NULL);
    /* The client's link to the sentinel, over TLS, listens. */
    end = rdt_now_ms() + 5000;
    while (!rdt_log_has("listening for failovers") && rdt_now_ms() < end)
        rdt__nap_ms(10);
    CU_ASSERT(rdt_log_has("listening for failovers"));
    CU_ASSERT_FATAL(rdt_sync_replica(ma) == 0); /* the replica has the hold */
    CU_ASSERT_FATAL(rdt_topology_wait(ma, reps, 1, sents, 1, SF_NAME, 30000) == 0);

    t0 = rdt_now_ms();
    CU_ASSERT_FATAL(rdt_sentinel_failover(se, SF_NAME) == 0);
    end = t0 + 20000;
    while (rdt_sentinel_master_port(se, SF_NAME) != re->port && rdt_now_ms() < end)
        rdt__nap_ms(5);
    t_switch = rdt_now_ms();
    CU_ASSERT_EQUAL_FATAL(rdt_sentinel_master_port(se, SF_NAME), re->port);

    /* The client follows (+switch-master on its TLS link): a new lock
     * lands on the new master, over TLS, within 5 s. */
    end = t_switch + 5000;
    for (;;) {
        rc = rdlock_trylock(&fresh);
        if (rc == 0) {
            on = rdt_int_on(re, 0, "EXISTS %s", rdt_key("tls-sf-new", "")) == 1;
            rc = rdlock_unlock(&fresh);
            /* ENOLCK: the client moved between the trylock (on the old
             * master) and the unlock; the move then found the hold
             * missing on the new master and reported it lost. */
            if (rc != 0 && rc != ENOLCK)
                fprintf(stderr, "unlock tls-sf-new: %s\n", rdt_errname(rc));
        } else {
            fprintf(stderr, "trylock tls-sf-new: %s\n", rdt_errname(rc));
        }
        if (on || rdt_now_ms() >= end)
            break;
        rdt__nap_ms(5);
    }
    if (on)
        t_moved = rdt_now_ms();
    rdt_role_of(ma, role, sizeof role);
    printf("[sentinel named the replica %lld ms after SENTINEL FAILOVER, a lock landed there %lld ms later; "
           "old master: %s] ",
           t_switch - t0, t_moved < 0 ? -1 : t_moved - t_switch, role);
    CU_ASSERT_FATAL(on);
    CU_ASSERT(rdt_log_has("moved from"));
    RDT_ASSERT_RC(0, rdlock_client_info(c, &info));
    CU_ASSERT(strstr(info.server, "(TLS TLSv1.") != NULL);

    /* The hold from before: renewed on the new master over TLS (past a
     * whole lease after the switch, the copy that replication brought
     * there would have expired), never reported lost, released with 0. */
    rdt__nap_ms(SF_LEASE_MS + 500);
    CU_ASSERT(rdt_int_on(re, 0, "PTTL %s", rdt_key("tls-sf-held", "")) > 0);
    if (rdt_lost_count(&rec) != 0)
        fprintf(stderr, "reported lost: %s; the log:\n%s", rec.name, rdt_log_text());
    CU_ASSERT_EQUAL(rdt_lost_count(&rec), 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(re, 0, "EXISTS %s", rdt_key("tls-sf-held", "")));
    /* And locks go on there. */
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(re, 0, "EXISTS %s", rdt_key("tls-sf-held", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&fresh));
    rdt_close_client(c);
    rdt_server_stop(se);
    rdt_server_stop(re);
    rdt_server_stop(ma);
}

static void test_config(void)
{
    rdlock_client_t *c;
    char text[2048];

    rdt_log_capture();
    snprintf(text, sizeof text, "[redis]\nsocket = %s\ntls = yes\n", g_plain.sock);
    RDT_ASSERT_RC(EINVAL, open_text("cf1.ini", text, &c));
    CU_ASSERT(rdt_log_has("unix socket never uses TLS"));
    RDT_ASSERT_RC(EINVAL, open_text("cf2.ini", tls_text(g_tls.port, "tls_cert_file = /etc/hostname\n"), &c));
    CU_ASSERT(rdt_log_has("needs tls_key_file"));
    snprintf(text, sizeof text, "[redis]\nhost = 127.0.0.1\nport = %d\ntls = yes\ntls_ca_cert_file = %s/none.crt\n",
             g_tls.port, g_certs);
    RDT_ASSERT_RC(ENOENT, open_text("cf3.ini", text, &c));
    snprintf(text, sizeof text, "[redis]\nhost = 127.0.0.1\nport = %d\ntls = yes\ntls_ca_cert_file = %s/mkcerts.log\n",
             g_tls.port, g_certs);
    rdt_log_clear();
    RDT_ASSERT_RC(EINVAL, open_text("cf4.ini", text, &c));
    CU_ASSERT(rdt_log_has("cannot load the CA certificates"));
    /* TLS keys without tls = yes hide a mistake. */
    snprintf(text, sizeof text, "[redis]\nhost = 127.0.0.1\nport = %d\ntls_ca_cert_file = %s/ca.crt\n", g_plain.port,
             g_certs);
    RDT_ASSERT_RC(EINVAL, open_text("cf5.ini", text, &c));
    CU_ASSERT(rdt_log_has("given without tls = yes"));
}

static int setup(void)
{
    if ((g_certs = rdt_tls_certs()) == NULL)
        return -1;
    if (rdt_server_start(&g_plain, NULL, NULL) != 0)
        return -1;
    if (rdt_server_start_tls(&g_tls, "server", 0, NULL) != 0)
        return -1;
    if (rdt_server_start_tls(&g_mtls, "server", 1, NULL) != 0)
        return -1;
    return 0;
}

static int teardown(void)
{
    int k;
    rdt_cluster_stop(&g_cl);
    for (k = 2; k >= 0; k--)
        rdt_server_stop(&g_sf[k]);
    rdt_server_stop(&g_mtls);
    rdt_server_stop(&g_tls);
    rdt_server_stop(&g_plain);
    return 0;
}

static const rdt_test_t tests[] = {
    { "lock_unlock", test_lock_unlock },
    { "wait_renew_handover", test_wait_renew_handover },
    { "mutual", test_mutual },
    { "wrong_ca", test_wrong_ca },
    { "wrong_name", test_wrong_name },
    { "expired", test_expired },
    { "verify_off", test_verify_off },
    { "plain_to_tls", test_plain_to_tls },
    { "tls_to_plain", test_tls_to_plain },
    { "later_failure", test_later_failure },
    { "later_refusal", test_later_refusal },
    { "reset_connections", test_reset_connections },
    { "redlock", test_redlock },
    { "config", test_config },
    { "cluster", test_cluster },
    { "sentinel_failover", test_sentinel_failover },
    { NULL, NULL },
};

#else /* !RDL_HAVE_TLS */

static void test_without_tls(void)
{
    rdlock_client_t *c;
    char text[512];

    rdt_log_capture();
    snprintf(text, sizeof text, "[redis]\nhost = 127.0.0.1\nport = %d\ntls = yes\n", g_plain.port);
    RDT_ASSERT_RC(EINVAL, open_text("notls.ini", text, &c));
    CU_ASSERT(rdt_log_has("built without TLS"));
    /* [sentinel] tls alone is refused the same way. */
    snprintf(text, sizeof text,
             "[sentinel]\nmaster_name = m\nsentinels = 127.0.0.1:%d\ntls = yes\n", g_plain.port);
    rdt_log_clear();
    RDT_ASSERT_RC(EINVAL, open_text("notls2.ini", text, &c));
    CU_ASSERT(rdt_log_has("built without TLS"));
}

static int setup(void)
{
    return rdt_server_start(&g_plain, NULL, NULL);
}

static int teardown(void)
{
    rdt_server_stop(&g_plain);
    return 0;
}

static const rdt_test_t tests[] = {
    { "without_tls", test_without_tls },
    { NULL, NULL },
};

#endif

int main(int argc, char **argv)
{
    /* 240 s as test_cluster_locks: a TLS cluster's start may take up to a
     * minute on a loaded machine, the Sentinel topology half that. */
    return rdt_main(argc, argv, "tls", tests, setup, teardown, 240);
}
