/* tls.h - TLS to the servers: the one place that knows OpenSSL and
 * hiredis_ssl (docs/CONTRACT.md section 3, "TLS").
 *
 * A client builds one context (rdl_tls_new) from the [redis] tls* keys at
 * open; every TCP connection to a data server, and to the sentinels when
 * [sentinel] tls says so, then runs its handshake through rdl_tls_start
 * right after the TCP connect, before any command.  From then on hiredis
 * sends and receives every byte through the TLS layer (its context's I/O
 * functions), so the rest of the library is the same with and without TLS,
 * but for one rule: never write to the socket itself (conn.c).
 *
 * Why our own SSL_CTX and not hiredis's redisSSLContext: hiredis sets the
 * name for SNI but never checks it in the certificate, and a certificate
 * that any public CA signed for any name would do.  Here the name (the
 * server's host, or tls_server_name) is checked with SSL_set1_host, and a
 * failed check is told apart from a server that is down.
 *
 * Built without TLS (hiredis 0.14), the functions below exist and say so
 * (ENOTSUP); config.c refuses tls = yes before it gets that far. */
#ifndef RDL_TLS_H
#define RDL_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#include "base/config.h"

typedef struct rdl_tls rdl_tls_t;

/* true when this library was built with TLS. */
bool rdl_tls_built(void);

/* The context for cfg's tls* keys (cfg->tls or cfg->sentinel_tls set):
 * 0 and *out, or
 *   EINVAL   a file that does not load (not PEM, a key that does not fit
 *            the certificate): logged with the key and the reason
 *   ENOTSUP  built without TLS
 *   ENOMEM */
int rdl_tls_new(const rdl_config_t *cfg, rdl_tls_t **out);
void rdl_tls_free(rdl_tls_t *t);

/* Run the TLS handshake on ctx (a connected, blocking TCP context whose
 * socket timeouts bound each step), checking the server's certificate for
 * name (tls_server_name if set, else host) unless tls_verify = no.
 * Returns 0 (every later byte on ctx goes through TLS) and the protocol's
 * name in *version ("TLSv1.3"; static), with *cert_asked telling whether
 * the server asked for a client certificate that was not sent, or
 *   EACCES   the certificate did not verify (unknown CA, wrong name,
 *            expired) or the server refused ours: ctx->errstr says which
 *   EIO      no TLS server there (a plain port), a timeout, a closed
 *            connection: ctx->errstr says why
 *   ENOMEM
 *   ENOTSUP  built without TLS
 * On failure ctx is unusable (its error set); the caller frees it. */
int rdl_tls_start(const rdl_tls_t *t, redisContext *ctx, const char *host, const char **version,
                  bool *cert_asked);

/* After a failed read or write on a TLS connection: the TLS layer's own
 * reason (an alert from the server such as "certificate required", or the
 * errno of a reset), so that the log says more than hiredis's text.
 * cert_asked: the handshake's (a server that asked for a client
 * certificate we did not send, then closed, has refused us even when its
 * alert was lost in the close).  Writes into buf and
 * returns true when there is one; *refused is set when the server
 * refused our certificate (or the lack of one): EACCES, not EIO. */
bool rdl_tls_failure(char *buf, size_t n, bool cert_asked, bool *refused);

#endif
