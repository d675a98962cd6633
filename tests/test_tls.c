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
 *   reset_connections  TLS connections reset (RST) under held locks: each
 *                      unlock still succeeds, on a new connection
 *   redlock            a quorum of three TLS masters
 *   config             the TLS keys' own errors: socket with tls, a
 *                      certificate without its key, a missing CA file
 *                      (ENOENT), a CA file that is not PEM (EINVAL at open)
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
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"
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

/* In a child with SIGPIPE's default action (the fixture ignores it): lock
 * over TLS through a proxy; the parent (whose thread the proxy is) resets
 * every connection (RST); then the child unlocks, its write meeting the
 * reset connection, and must get 0 on a new one; five times.  The child
 * exits 0 when it got through.  (Linux reports a reset to the first write
 * as ECONNRESET, without SIGPIPE, and the library never writes twice on a
 * failed connection, so this cannot show the signal-mask guard that TLS
 * writes run under; it shows that a reset costs a retry, not the hold.) */
static void test_reset_connections(void)
{
    tproxy_t *px;
    int held[2], reset[2], i, st, ok = 1;
    char b;
    pid_t pid;

    CU_ASSERT_FATAL(tproxy_start(&px, g_tls.port) == 0);
    CU_ASSERT_FATAL(pipe(held) == 0 && pipe(reset) == 0);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        rdlock_client_t *c;
        rdlock_t m;
        int rc;
        signal(SIGPIPE, SIG_DFL);
        if (open_text("pipe.ini", tls_text(tproxy_port(px), "command_retries = 3\n"), &c) != 0 ||
            lock_on(&m, "tls-pipe", c, 0) != 0)
            _exit(2);
        for (i = 0; i < 5; i++) {
            if (rdlock_lock(&m) != 0)
                _exit(3);
            if (write(held[1], "h", 1) != 1 || read(reset[0], &b, 1) != 1)
                _exit(5);
            if ((rc = rdlock_unlock(&m)) != 0)
                _exit(10 + rc);
        }
        _exit(0);
    }
    close(held[1]);
    close(reset[0]);
    for (i = 0; i < 5 && ok; i++) {
        ok = read(held[0], &b, 1) == 1;
        if (ok) {
            CU_ASSERT(tproxy_reset(px) >= 1);
            rdt__nap_ms(20); /* the RST arrives before the child writes */
            ok = write(reset[1], "r", 1) == 1;
        }
    }
    close(held[0]);
    close(reset[1]);
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
        printf("[child killed by signal %d] ", WTERMSIG(st));
    else if (WEXITSTATUS(st) != 0)
        printf("[child exited %d] ", WEXITSTATUS(st));
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
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
    { "reset_connections", test_reset_connections },
    { "redlock", test_redlock },
    { "config", test_config },
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
    return rdt_main(argc, argv, "tls", tests, setup, teardown, 120);
}
