/* tls.c - TLS to the servers through OpenSSL and hiredis_ssl (tls.h). */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "base/log.h"
#include "proto/tls.h"

#ifdef RDL_HAVE_TLS

#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct rdl_tls {
    SSL_CTX *ctx;
    char *server_name; /* NULL: each server's own host */
    bool verify;
};

bool rdl_tls_built(void)
{
    return true;
}

/* The reason of OpenSSL's last error in this thread, and the queue
 * emptied (it is per thread, and a stale entry would be blamed later). */
static const char *ssl_reason(char *buf, size_t n)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
    snprintf(buf, n, "%s", r != NULL ? r : e != 0 ? "unknown OpenSSL error" : "no detail");
    ERR_clear_error();
    return buf;
}

/* A key's file did not load: logged as a configuration problem. */
static int file_problem(const rdl_config_t *cfg, const char *key, const char *path, const char *what)
{
    char why[256];
    rdl_log(RDLOCK_LOG_ERROR, "config %s: [redis] %s = %s: %s: %s", cfg->source ? cfg->source : "(defaults)", key,
            path, what, ssl_reason(why, sizeof why));
    return EINVAL;
}

/* Called by OpenSSL when the server asks for a client certificate and
 * none is configured: we send none (0), and remember that it asked (app
 * data: a flag of rdl_tls_start's).  A server that requires one refuses
 * us only after the handshake (TLS 1.3), and its alert can be lost when it
 * closes the connection under our first command (the reset discards it):
 * the flag lets that failure still be told for what it is. */
static int no_client_cert(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
    bool *asked = SSL_get_app_data(ssl);
    (void)x509;
    (void)pkey;
    if (asked != NULL)
        *asked = true;
    return 0;
}

int rdl_tls_new(const rdl_config_t *cfg, rdl_tls_t **out)
{
    rdl_tls_t *t;
    int rc = 0;

    *out = NULL;
    if (OPENSSL_init_ssl(0, NULL) != 1)
        return ENOMEM;
    if ((t = calloc(1, sizeof *t)) == NULL)
        return ENOMEM;
    t->verify = cfg->tls_verify;
    if (cfg->tls_server_name != NULL && (t->server_name = strdup(cfg->tls_server_name)) == NULL) {
        free(t);
        return ENOMEM;
    }
    ERR_clear_error();
    if ((t->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
        rdl_tls_free(t);
        return ENOMEM;
    }
    /* What Redis and Valkey accept by default; nothing older. */
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    if (cfg->tls_ca_cert_file != NULL || cfg->tls_ca_cert_dir != NULL) {
        if (SSL_CTX_load_verify_locations(t->ctx, cfg->tls_ca_cert_file, cfg->tls_ca_cert_dir) != 1)
            rc = file_problem(cfg, cfg->tls_ca_cert_file ? "tls_ca_cert_file" : "tls_ca_cert_dir",
                              cfg->tls_ca_cert_file ? cfg->tls_ca_cert_file : cfg->tls_ca_cert_dir,
                              "cannot load the CA certificates");
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        char why[256];
        rdl_log(RDLOCK_LOG_ERROR, "TLS: cannot load the system's trust store: %s", ssl_reason(why, sizeof why));
        rc = EINVAL;
    }
    if (rc == 0 && cfg->tls_cert_file != NULL) {
        if (SSL_CTX_use_certificate_chain_file(t->ctx, cfg->tls_cert_file) != 1)
            rc = file_problem(cfg, "tls_cert_file", cfg->tls_cert_file, "cannot load the client certificate");
        else if (SSL_CTX_use_PrivateKey_file(t->ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) != 1)
            rc = file_problem(cfg, "tls_key_file", cfg->tls_key_file, "cannot load the private key");
        else if (SSL_CTX_check_private_key(t->ctx) != 1)
            rc = file_problem(cfg, "tls_key_file", cfg->tls_key_file, "does not fit tls_cert_file");
    }
    if (rc != 0) {
        rdl_tls_free(t);
        return rc;
    }
    SSL_CTX_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_client_cert_cb(t->ctx, no_client_cert);
    if (!t->verify)
        rdl_log(RDLOCK_LOG_WARN, "TLS without certificate checks (tls_verify = no, %s): anyone on the path can "
                "pose as the server; for tests only", cfg->source ? cfg->source : "defaults");
    *out = t;
    return 0;
}

void rdl_tls_free(rdl_tls_t *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

static bool is_ip(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* Reasons that mean the server refused our certificate, or its absence:
 * an access question (EACCES), not a server that is down. */
static bool refused_reason(int reason)
{
    switch (reason) {
#ifdef SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
#endif
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
        return true;
    default:
        return false;
    }
}

/* Reasons that mean the peer does not speak TLS at all (a plain port). */
static bool plain_peer_reason(int reason)
{
    switch (reason) {
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
#ifdef SSL_R_RECORD_LAYER_FAILURE
    case SSL_R_RECORD_LAYER_FAILURE:
#endif
        return true;
    default:
        return false;
    }
}

bool rdl_tls_failure(char *buf, size_t n, bool cert_asked, bool *refused)
{
    unsigned long e = ERR_peek_last_error();
    const char *why;
    *refused = false;
    if (e == 0 && !cert_asked)
        return false;
    /* A system error's reason is an errno (a reset connection). */
    why = e == 0                            ? "the connection closed"
          : ERR_GET_LIB(e) == ERR_LIB_SYS ? strerror(ERR_GET_REASON(e))
          : ERR_reason_error_string(e)    ? ERR_reason_error_string(e)
                                            : "unknown OpenSSL error";
    if (e != 0 && ERR_GET_LIB(e) != ERR_LIB_SYS && refused_reason(ERR_GET_REASON(e))) {
        *refused = true;
        snprintf(buf, n, "TLS: the server refused our certificate: %s", why);
    } else if (cert_asked) {
        /* Closed under our first command after it asked for a
         * certificate that we did not send: its refusal, whose alert the
         * close lost. */
        *refused = true;
        snprintf(buf, n, "TLS: the server asked for a client certificate and closed the connection (%s): "
                 "set tls_cert_file and tls_key_file", why);
    } else {
        snprintf(buf, n, "TLS: %s", why);
    }
    ERR_clear_error();
    return true;
}

int rdl_tls_start(const rdl_tls_t *t, redisContext *ctx, const char *host, const char **version,
                  bool *cert_asked)
{
    const char *name = t->server_name != NULL ? t->server_name : host;
    unsigned long e;
    long vr;
    SSL *ssl;
    int rc, err;

    ERR_clear_error();
    if ((ssl = SSL_new(t->ctx)) == NULL)
        return ENOMEM;
    /* SNI takes a host name, never an address (RFC 6066). */
    if (!is_ip(name) && SSL_set_tlsext_host_name(ssl, name) != 1) {
        SSL_free(ssl);
        return ENOMEM;
    }
    if (t->verify) {
        int ok = is_ip(name) ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) : SSL_set1_host(ssl, name);
        if (ok != 1) {
            SSL_free(ssl);
            return ENOMEM;
        }
    }
    *cert_asked = false;
    SSL_set_app_data(ssl, cert_asked);
    errno = 0;
    if (redisInitiateSSL(ctx, ssl) == REDIS_OK) {
        /* hiredis owns ssl now, and frees it with ctx; the flag's
         * address is the caller's, for the handshake only. */
        SSL_set_app_data(ssl, NULL);
        *version = SSL_get_version(ssl);
        return 0;
    }
    SSL_set_app_data(ssl, NULL);
    /* Failed: ssl is still ours. */
    err = errno;
    vr = SSL_get_verify_result(ssl);
    e = ERR_peek_last_error();
    ctx->err = REDIS_ERR_IO;
    if (t->verify && vr != X509_V_OK) {
        snprintf(ctx->errstr, sizeof ctx->errstr, "TLS: certificate of %.40s not trusted: %s", name,
                 X509_verify_cert_error_string(vr));
        rc = EACCES;
    } else if (e != 0 && refused_reason(ERR_GET_REASON(e))) {
        snprintf(ctx->errstr, sizeof ctx->errstr, "TLS: the server refused our certificate (%s)",
                 ERR_reason_error_string(e));
        rc = EACCES;
    } else if (e != 0 && plain_peer_reason(ERR_GET_REASON(e))) {
        snprintf(ctx->errstr, sizeof ctx->errstr, "TLS handshake failed: %s: not a TLS port? ([redis] tls)",
                 ERR_reason_error_string(e));
        rc = EIO;
    } else if (e == 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
        /* The socket's timeout: a plain server waits for the end of a
         * command line that a ClientHello never brings. */
        snprintf(ctx->errstr, sizeof ctx->errstr,
                 "TLS handshake: no answer within connect_timeout_ms: not a TLS port? ([redis] tls)");
        rc = EIO;
    } else {
        /* A closed or reset connection: errno says which. */
        snprintf(ctx->errstr, sizeof ctx->errstr, "TLS handshake failed: %s",
                 e != 0 ? ERR_reason_error_string(e) : err != 0 ? strerror(err) : "connection closed");
        rc = EIO;
    }
    ERR_clear_error();
    SSL_free(ssl);
    return rc;
}

#else /* !RDL_HAVE_TLS */

bool rdl_tls_built(void)
{
    return false;
}

int rdl_tls_new(const rdl_config_t *cfg, rdl_tls_t **out)
{
    (void)cfg;
    *out = NULL;
    rdl_log(RDLOCK_LOG_ERROR, "TLS: this librdlock was built without TLS");
    return ENOTSUP;
}

void rdl_tls_free(rdl_tls_t *t)
{
    (void)t;
}

int rdl_tls_start(const rdl_tls_t *t, redisContext *ctx, const char *host, const char **version,
                  bool *cert_asked)
{
    (void)t;
    *cert_asked = false;
    (void)host;
    (void)version;
    ctx->err = REDIS_ERR_OTHER;
    snprintf(ctx->errstr, sizeof ctx->errstr, "this librdlock was built without TLS");
    return ENOTSUP;
}

bool rdl_tls_failure(char *buf, size_t n, bool cert_asked, bool *refused)
{
    (void)buf;
    (void)n;
    (void)cert_asked;
    *refused = false;
    return false;
}

#endif
