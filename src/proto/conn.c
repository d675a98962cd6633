/* conn.c - see conn.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>

#include <hiredis/sds.h>

#include "base/fmt.h"
#include "base/log.h"
#include "proto/conn.h"
#include "proto/info.h"
#include "proto/reply.h"
#include "proto/slotmap.h"
#include "proto/tls.h"

/* hiredis 0.14 writes with write(2): a peer that went away raises SIGPIPE,
 * which would kill a process that did not ignore it.  A library must not
 * change the process's signal dispositions, so each I/O section blocks
 * SIGPIPE in the calling thread and consumes one it caused (the usual
 * idiom; three cheap syscalls against a network round trip, none when the
 * thread blocks SIGPIPE already). */
void rdl_nosigpipe_enter(rdl_nosigpipe_t *st)
{
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &st->old);
    st->was_blocked = sigismember(&st->old, SIGPIPE);
}

void rdl_nosigpipe_leave(rdl_nosigpipe_t *st)
{
    if (!st->was_blocked) {
        /* SIGPIPE was deliverable before we blocked it, so one pending now
         * was raised inside our section: consume it. */
        sigset_t pipe_set, pending;
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            static const struct timespec zero = { 0, 0 };
            sigemptyset(&pipe_set);
            sigaddset(&pipe_set, SIGPIPE);
            while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
                ;
        }
        pthread_sigmask(SIG_SETMASK, &st->old, NULL);
    }
}

/* Why the last rdl_conn_open of this thread failed, for log lines. */
static __thread char last_error[160];

const char *rdl_conn_last_error(void)
{
    return last_error[0] ? last_error : "unknown error";
}

void rdl_conn_set_last_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

/* One setup command; 0, or EACCES/EINVAL/EIO as `what` dictates. */
static int setup_command(rdl_conn_t *c, int argc, const char **argv, const char *what)
{
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, NULL);
    int rc = 0;

    if (r == NULL) {
        char why[160];
        bool refused = false;
        /* Over TLS the server may refuse our certificate (or its absence)
         * only now, with an alert instead of the first reply (TLS 1.3). */
        /* A close, not a timeout: a slow server that asked for a
         * certificate only optionally is not a refusal. */
        bool asked = c->tls_cert_asked && !rdl_conn_timed_out(c);
        if (c->tls_version == NULL || !rdl_tls_failure(why, sizeof why, asked, &refused))
            snprintf(why, sizeof why, "%s", c->ctx->errstr);
        /* A TLS-only port drops a plain client at its first command. */
        if (c->tls_version == NULL && c->port != 0 && (c->ctx->err == REDIS_ERR_EOF || strstr(why, "reset") != NULL))
            snprintf(why + strlen(why), sizeof why - strlen(why), " (a TLS port? [redis] tls = yes)");
        snprintf(last_error, sizeof last_error, "%s failed: %.120s", what, why);
        rdl_log(refused ? RDLOCK_LOG_ERROR : RDLOCK_LOG_WARN, "%s: %s failed: %s", c->addr, what, why);
        return refused ? EACCES : EIO;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        rc = rdl_reply_error(r);
        if (rc != EACCES && strcmp(what, "SELECT") == 0)
            rc = EINVAL;
        /* The server's text never contains the password we sent. */
        rdl_log(RDLOCK_LOG_ERROR, "%s: %s refused: %s", c->addr, what, r->str);
    }
    freeReplyObject(r);
    return rc;
}

static int conn_setup(const rdl_config_t *cfg, rdl_conn_t *c, bool probe);

static int conn_open_io(const rdl_config_t *cfg, const char *host, int port, bool probe, rdl_conn_t **out)
{
    rdl_conn_t *c;
    const char *where;
    int rc;

    c = calloc(1, sizeof *c);
    if (c == NULL)
        return ENOMEM;
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    if (port == 0) {
        c->ctx = redisConnectUnixWithTimeout(host, rdl_ms_to_tv(cfg->connect_timeout_ms));
        snprintf(c->addr, sizeof c->addr, "unix:%s", host);
    } else {
        c->ctx = redisConnectWithTimeout(host, port, rdl_ms_to_tv(cfg->connect_timeout_ms));
        snprintf(c->addr, sizeof c->addr, "%s:%d", host, port);
    }
    where = c->addr;
    if (c->ctx == NULL) {
        free(c);
        return ENOMEM;
    }
    if (c->ctx->err) {
        snprintf(last_error, sizeof last_error, "connect failed: %s", c->ctx->errstr);
        rdl_log(RDLOCK_LOG_DEBUG, "%s: connect failed: %s", where,
                c->ctx->errstr);
        rdl_conn_close(c);
        return EIO;
    }
    rc = conn_setup(cfg, c, probe);
    if (rc == 0)
        *out = c;
    return rc;
}

/* [redis] tls: the handshake on a new TCP connection (c->ctx blocking,
 * its timeouts set), before any command.  0, EACCES or EIO (logged; c is
 * not closed). */
static int conn_tls(const rdl_config_t *cfg, rdl_conn_t *c)
{
    int rc;
    if (!cfg->tls || c->port == 0)
        return 0;
    /* The handshake is part of connecting: bounded by connect_timeout_ms
     * (a plain server on the port never answers a ClientHello), then the
     * command timeout again. */
    if (redisSetTimeout(c->ctx, rdl_ms_to_tv(cfg->connect_timeout_ms)) != REDIS_OK)
        return EIO;
    rc = rdl_tls_start(cfg->tls_ctx, c->ctx, c->host, &c->tls_version, &c->tls_cert_asked);
    if (rc == 0 && redisSetTimeout(c->ctx, rdl_ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK)
        rc = EIO;
    if (rc != 0) {
        snprintf(last_error, sizeof last_error, "%s", c->ctx->errstr);
        /* Something answers there, but not as it should: a configuration
         * matter that no retry mends, unless it was a timeout. */
        rdl_log(rc == EACCES ? RDLOCK_LOG_ERROR : RDLOCK_LOG_WARN, "%s: %s", c->addr, c->ctx->errstr);
    }
    return rc;
}

/* What every new connection needs once connected: the command timeout,
 * keepalive, TLS, AUTH, SELECT, and with probe a PING.  0, or an errno (c
 * is closed then). */
static int conn_setup(const rdl_config_t *cfg, rdl_conn_t *c, bool probe)
{
    char dbs[16];
    int rc;
    if (redisSetTimeout(c->ctx, rdl_ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK) {
        rdl_conn_close(c);
        return EIO;
    }
    if (c->port != 0)
        redisEnableKeepAlive(c->ctx);
    if ((rc = conn_tls(cfg, c)) != 0) {
        rdl_conn_close(c);
        return rc;
    }

    rc = 0;
    if (cfg->password != NULL) {
        const char *argv[3] = { "AUTH", cfg->username, cfg->password };
        if (cfg->username != NULL)
            rc = setup_command(c, 3, argv, "AUTH");
        else {
            argv[1] = cfg->password;
            rc = setup_command(c, 2, argv, "AUTH");
        }
    }
    if (rc == 0 && cfg->db != 0) {
        const char *argv[2] = { "SELECT", dbs };
        snprintf(dbs, sizeof dbs, "%d", cfg->db);
        rc = setup_command(c, 2, argv, "SELECT");
    }
    if (rc == 0 && (probe || c->tls_cert_asked) && cfg->password == NULL && cfg->db == 0) {
        /* Nothing was sent yet: find out now whether the server wants a
         * password (NOAUTH), so that open reports EACCES; and, where the
         * TLS server asked for a client certificate that we did not send,
         * whether it refuses us (TLS 1.3 says so only at the first read):
         * here that is EACCES, where a script's read would take it for an
         * outage and retry. */
        const char *argv[1] = { "PING" };
        rc = setup_command(c, 1, argv, "PING");
    }
    if (rc != 0)
        rdl_conn_close(c);
    return rc;
}

int rdl_conn_begin(const rdl_config_t *cfg, const char *host, int port, rdl_conn_t **out)
{
    rdl_conn_t *c = calloc(1, sizeof *c);
    (void)cfg;
    *out = NULL;
    if (c == NULL)
        return ENOMEM;
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    snprintf(c->addr, sizeof c->addr, "%s:%d", host, port);
    if ((c->ctx = redisConnectNonBlock(host, port)) == NULL) {
        free(c);
        return ENOMEM;
    }
    if (c->ctx->err) {
        snprintf(last_error, sizeof last_error, "connect failed: %s", c->ctx->errstr);
        rdl_log(RDLOCK_LOG_DEBUG, "%s: connect failed: %s", c->addr, c->ctx->errstr);
        rdl_conn_close(c);
        return EIO;
    }
    *out = c;
    return 0;
}

int rdl_conn_fd(const rdl_conn_t *c)
{
    return c->ctx->fd;
}

/* The socket connected: blocking from here on.  0, or EIO (c closed). */
static int finish_socket(rdl_conn_t *c)
{
    int err = 0, fl;
    socklen_t len = sizeof err;

    if (getsockopt(c->ctx->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        snprintf(last_error, sizeof last_error, "connect failed: %s", strerror(err));
        rdl_log(RDLOCK_LOG_DEBUG, "%s: connect failed: %s", c->addr, strerror(err));
        rdl_conn_close(c);
        return EIO;
    }
    /* From here on a blocking connection like any other: hiredis 0.14
     * has no call for the switch, so the descriptor and the context's
     * REDIS_BLOCK flag (a public field) are set as redisConnect sets them. */
    if ((fl = fcntl(c->ctx->fd, F_GETFL)) < 0 || fcntl(c->ctx->fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        snprintf(last_error, sizeof last_error, "fcntl: %s", strerror(errno));
        rdl_conn_close(c);
        return EIO;
    }
    c->ctx->flags |= REDIS_BLOCK;
    return 0;
}

int rdl_conn_finish(const rdl_config_t *cfg, rdl_conn_t *c, bool probe)
{
    rdl_nosigpipe_t st;
    int rc;
    if (finish_socket(c) != 0)
        return EIO;
    rdl_nosigpipe_enter(&st);
    rc = conn_setup(cfg, c, probe);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_finish_deferred(const rdl_config_t *cfg, rdl_conn_t *c)
{
    if (finish_socket(c) != 0)
        return EIO;
    if (redisSetTimeout(c->ctx, rdl_ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK) {
        rdl_conn_close(c);
        return EIO;
    }
    redisEnableKeepAlive(c->ctx);
    {
        /* The handshake here, one master at a time: its round trips are
         * few beside the connect's timeout that the parallel connect
         * saves. */
        rdl_nosigpipe_t st;
        int rc;
        rdl_nosigpipe_enter(&st);
        rc = conn_tls(cfg, c);
        rdl_nosigpipe_leave(&st);
        if (rc != 0) {
            rdl_conn_close(c);
            return rc;
        }
    }
    c->login = (cfg->password != NULL) + (cfg->db != 0);
    return 0;
}

int rdl_conn_append_login(const rdl_config_t *cfg, rdl_conn_t *c)
{
    char dbs[16];
    if (cfg->password != NULL) {
        const char *argv[3] = { "AUTH", cfg->username != NULL ? cfg->username : cfg->password, cfg->password };
        if (redisAppendCommandArgv(c->ctx, cfg->username != NULL ? 3 : 2, argv, NULL) != REDIS_OK)
            return EIO;
    }
    if (cfg->db != 0) {
        const char *argv[2] = { "SELECT", dbs };
        snprintf(dbs, sizeof dbs, "%d", cfg->db);
        if (redisAppendCommandArgv(c->ctx, 2, argv, NULL) != REDIS_OK)
            return EIO;
    }
    return 0;
}

int rdl_conn_login_reply(const redisReply *r, const char *what, const rdl_conn_t *c)
{
    int rc;
    if (r->type != REDIS_REPLY_ERROR)
        return 0;
    /* As setup_command judges an answer. */
    rc = rdl_reply_error(r);
    if (rc != EACCES && strcmp(what, "SELECT") == 0)
        rc = EINVAL;
    snprintf(last_error, sizeof last_error, "%s refused: %s", what, r->str);
    rdl_log(RDLOCK_LOG_ERROR, "%s: %s refused: %s", c->addr, what, r->str);
    return rc;
}

void rdl_conn_close(rdl_conn_t *c)
{
    if (c == NULL)
        return;
    if (c->ctx != NULL)
        redisFree(c->ctx);
    free(c);
}

bool rdl_conn_timed_out(const rdl_conn_t *c)
{
    /* hiredis reports a read timeout (SO_RCVTIMEO) as EAGAIN's text. */
    return c->ctx->err == REDIS_ERR_IO && strcmp(c->ctx->errstr, strerror(EAGAIN)) == 0;
}

int rdl_conn_ok(const rdl_conn_t *c)
{
    return c->ctx != NULL && c->ctx->err == 0 && !c->broken;
}

/* Append "*N\r\n" or "$N\r\n". */
static char *resp_head(char *p, char kind, size_t n)
{
    *p++ = kind;
    p += rdl_fmt_u64(p, n);
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* Format "EVALSHA sha nkeys argv..." (or "EVAL body ...") as RESP ourselves
 * and append it pre-formatted: hiredis 0.14 formats each argument through
 * sdscatfmt, which cost more CPU than the rest of a lock call together. */
static int append_eval(rdl_conn_t *c, const char *cmd, const char *shabody, int nkeys, int argc,
                       const char *const *argv, const size_t *lens)
{
    char small[2048], *buf = small, *p, nk[20];
    size_t cmdlen = strlen(cmd), shalen = strlen(shabody), nklen, total, i, len;
    int rc = 0;

    nklen = rdl_fmt_u64(nk, (unsigned long long)nkeys);
    /* Each argument: '$' + up to 20 digits + CRLF + data + CRLF. */
    total = 24 + (cmdlen + 25) + (shalen + 25) + (nklen + 25);
    for (i = 0; i < (size_t)argc; i++)
        total += (lens ? lens[i] : strlen(argv[i])) + 25;
    if (total > sizeof small && (buf = malloc(total)) == NULL)
        return ENOMEM;
    p = resp_head(buf, '*', (size_t)argc + 3);
    p = resp_head(p, '$', cmdlen);
    memcpy(p, cmd, cmdlen);
    p += cmdlen;
    *p++ = '\r';
    *p++ = '\n';
    p = resp_head(p, '$', shalen);
    memcpy(p, shabody, shalen);
    p += shalen;
    *p++ = '\r';
    *p++ = '\n';
    p = resp_head(p, '$', nklen);
    memcpy(p, nk, nklen);
    p += nklen;
    *p++ = '\r';
    *p++ = '\n';
    for (i = 0; i < (size_t)argc; i++) {
        len = lens ? lens[i] : strlen(argv[i]);
        p = resp_head(p, '$', len);
        memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    if (redisAppendFormattedCommand(c->ctx, buf, (size_t)(p - buf)) != REDIS_OK)
        rc = c->ctx->err ? EIO : ENOMEM;
    if (buf != small)
        free(buf);
    return rc;
}

int rdl_conn_append_script(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                           const char *const *argv, const size_t *lens)
{
    return append_eval(c, "EVALSHA", script->sha, nkeys, argc, argv, lens);
}

static int rdl_conn_read_io(rdl_conn_t *c, redisReply **reply)
{
    void *r = NULL;
    if (redisGetReply(c->ctx, &r) != REDIS_OK || r == NULL)
        return EIO;
    *reply = r;
    return 0;
}

/* Append "WAIT replicas timeout_ms" (replicas > 0). */
static int append_wait(rdl_conn_t *c, int replicas, int timeout_ms)
{
    char n[24], t[24];
    const char *argv[3] = { "WAIT", n, t };
    if (replicas <= 0)
        return 0;
    n[rdl_fmt_u64(n, (unsigned long long)replicas)] = '\0';
    t[rdl_fmt_u64(t, (unsigned long long)timeout_ms)] = '\0';
    if (redisAppendCommandArgv(c->ctx, 3, argv, NULL) != REDIS_OK)
        return c->ctx->err ? EIO : ENOMEM;
    return 0;
}

/* Read WAIT's reply into *acked (-1: refused, logged). */
static int read_wait(rdl_conn_t *c, int replicas, int *acked)
{
    redisReply *w;
    int rc;
    if (replicas <= 0)
        return 0;
    if ((rc = rdl_conn_read_io(c, &w)) != 0)
        return rc;
    if (w->type == REDIS_REPLY_INTEGER && w->integer >= 0) {
        *acked = w->integer > INT_MAX ? INT_MAX : (int)w->integer;
    } else if (w->type == REDIS_REPLY_ERROR && rdl_reply_error(w) == EACCES) {
        *acked = -2; /* an ACL without WAIT: no acquisition can ever be confirmed */
        rdl_log(RDLOCK_LOG_ERROR, "WAIT refused: %s", w->str);
    } else if (!(w->type == REDIS_REPLY_ERROR && w->str != NULL && strstr(w->str, "replica") != NULL)) {
        /* (On a replica, a demoted master, the script's READONLY says it.) */
        rdl_log(RDLOCK_LOG_ERROR, "WAIT refused: %s", w->type == REDIS_REPLY_ERROR ? w->str : "unexpected reply");
    }
    freeReplyObject(w);
    return 0;
}

/* ASKING before a request that follows an ASK redirection: one write
 * with it, so the pair costs one round trip. */
static int append_asking(rdl_conn_t *c, bool ask)
{
    if (!ask)
        return 0;
    if (redisAppendCommand(c->ctx, "ASKING") != REDIS_OK)
        return c->ctx->err ? EIO : ENOMEM;
    return 0;
}

static int read_asking(rdl_conn_t *c, bool ask)
{
    redisReply *r;
    int rc;
    if (!ask)
        return 0;
    if ((rc = rdl_conn_read_io(c, &r)) != 0)
        return rc;
    if (r->type == REDIS_REPLY_ERROR)
        rdl_log(RDLOCK_LOG_WARN, "%s: ASKING refused: %s", c->addr, r->str);
    freeReplyObject(r);
    return 0;
}

/* Over TLS every byte goes through the TLS layer: hiredis's own write,
 * which may raise SIGPIPE, so its callers hold the signal-mask guard
 * (rdl_conn_script_wait). */
static int flush_tls(rdl_conn_t *c)
{
    int done = 0;
    while (!done)
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK) {
            c->broken = true;
            return c->ctx->err == REDIS_ERR_OOM ? ENOMEM : EIO;
        }
    return 0;
}

/* Send what hiredis has buffered ourselves, with MSG_NOSIGNAL: then a peer
 * that went away cannot raise SIGPIPE, and a script call needs none of the
 * three signal-mask syscalls around it (rdl_nosigpipe_enter; they were as
 * many as the call's own write and read).  Blocking contexts only (hiredis
 * then writes everything before it reads, as here).  On an error the
 * context is marked as hiredis would (REDIS_ERR_IO, errstr from errno: a
 * send timeout reads as EAGAIN, an ambiguous attempt) and never reused. */
#define RDL_OBUF_KEEP 16384 /* a larger one (a renewal batch) is given back */

static int flush_nosignal(rdl_conn_t *c)
{
    redisContext *ctx = c->ctx;
    size_t len = sdslen(ctx->obuf), off = 0;

    if (c->tls_version != NULL)
        return flush_tls(c);
    while (off < len) {
        ssize_t n = send(ctx->fd, ctx->obuf + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ctx->err = REDIS_ERR_IO;
            snprintf(ctx->errstr, sizeof ctx->errstr, "%s", strerror(n < 0 ? errno : EPIPE));
            c->broken = true;
            return EIO;
        }
        off += (size_t)n;
    }
    if (len > 0 && sdsalloc(ctx->obuf) <= RDL_OBUF_KEEP) {
        /* Kept for the next request.  sdsempty() here (what hiredis does)
         * made the next append allocate again, on every call, and once a
         * request outgrew glibc's per-thread cache (1 KB: an acquire with
         * a long name) each allocation also consolidated the heap. */
        sdsclear(ctx->obuf);
    } else if (len > 0) {
        sdsfree(ctx->obuf);
        ctx->obuf = sdsempty();
        if (ctx->obuf == NULL) {
            ctx->err = REDIS_ERR_OOM;
            snprintf(ctx->errstr, sizeof ctx->errstr, "Out of memory");
            c->broken = true;
            return ENOMEM;
        }
    }
    return 0;
}

static int rdl_conn_script_io(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                    const char *const *argv, const size_t *lens, int replicas, int wait_ms,
                    redisReply **reply, int *acked)
{
    redisReply *r;
    int rc;

    bool ask = c->asking;

    *acked = -1;
    c->asking = false;
    c->redir.kind = RDL_CL_NONE;
    if ((rc = append_asking(c, ask)) != 0 ||
        (rc = append_eval(c, "EVALSHA", script->sha, nkeys, argc, argv, lens)) != 0 ||
        (rc = append_wait(c, replicas, wait_ms)) != 0) {
        c->broken = true; /* maybe half a pipeline buffered: never reuse */
        return rc;
    }
    if ((c->ctx->flags & REDIS_BLOCK) && (rc = flush_nosignal(c)) != 0)
        return rc;
    if ((rc = read_asking(c, ask)) != 0 || (rc = rdl_conn_read_io(c, &r)) != 0)
        return rc;
    if ((rc = read_wait(c, replicas, acked)) != 0) {
        freeReplyObject(r);
        return rc;
    }
    if (rdl_reply_noscript(r)) {
        /* The server lost its script cache (restart, SCRIPT FLUSH): EVAL
         * sends the body once and caches it again. */
        freeReplyObject(r);
        if ((rc = append_asking(c, ask)) != 0 ||
            (rc = append_eval(c, "EVAL", script->body, nkeys, argc, argv, lens)) != 0 ||
            (rc = append_wait(c, replicas, wait_ms)) != 0) {
            c->broken = true;
            return rc;
        }
        if ((c->ctx->flags & REDIS_BLOCK) && (rc = flush_nosignal(c)) != 0)
            return rc;
        if ((rc = read_asking(c, ask)) != 0 || (rc = rdl_conn_read_io(c, &r)) != 0)
            return rc;
        if ((rc = read_wait(c, replicas, acked)) != 0) {
            freeReplyObject(r);
            return rc;
        }
    }
    if (r->type == REDIS_REPLY_ERROR) {
        int cls = rdl_cluster_error(r);
        rc = rdl_reply_error(r);
        if (cls == RDL_CL_MOVED || cls == RDL_CL_ASK) {
            /* Not run: the slot is served elsewhere.  The caller follows
             * c->redir (topology_cluster.c). */
            int prc = rdl_redirect_parse(r, c->host, &c->redir);
            rdl_log(RDLOCK_LOG_DEBUG, "script %s on %s: %s", script->name, c->addr, r->str);
            if (prc == 0 || prc == EAGAIN) {
                if (prc == EAGAIN)
                    c->redir.host[0] = '\0'; /* an unknown endpoint: refresh the map */
                rc = RDL_EREDIRECT;
            } else {
                c->redir.kind = RDL_CL_NONE;
                rdl_log(RDLOCK_LOG_ERROR, "script %s on %s: unreadable redirection: %s", script->name, c->addr,
                        r->str);
                rc = EIO;
            }
        } else if (cls == RDL_CL_CLUSTERDOWN) {
            rdl_log(RDLOCK_LOG_WARN, "script %s on %s: %s; retrying", script->name, c->addr, r->str);
            c->redir.kind = RDL_CL_CLUSTERDOWN; /* the caller refreshes the map */
            rc = EAGAIN;
        } else if (rc == EIO && rdl_reply_readonly(r)) {
            /* A replica: our master was demoted.  Connecting again (the
             * name or address may lead to the new master) is the cure. */
            rdl_log(RDLOCK_LOG_WARN, "script %s: %s; reconnecting", script->name, r->str);
            rc = EROFS;
        } else if (rc == EIO && rdl_reply_transient(r)) {
            /* The server is starting or busy, or has too few replicas to
             * take writes (NOREPLICAS: nothing was written, the request
             * was not confirmed): worth retrying. */
            rdl_log(rdl_reply_noreplicas(r) ? RDLOCK_LOG_WARN : RDLOCK_LOG_DEBUG, "script %s: %s; retrying",
                    script->name, r->str);
            rc = EAGAIN;
        } else {
            rdl_log(RDLOCK_LOG_ERROR, "script %s failed: %s", script->name, r->str ? r->str : "?");
        }
        freeReplyObject(r);
        return rc;
    }
    *reply = r;
    return 0;
}

static int rdl_conn_load_io(rdl_conn_t *c, const rdl_script_t *script)
{
    redisReply *r = redisCommand(c->ctx, "SCRIPT LOAD %s", script->body);
    int rc = 0;
    if (r == NULL)
        return EIO;
    if (r->type == REDIS_REPLY_ERROR)
        rc = rdl_reply_error(r);
    freeReplyObject(r);
    return rc;
}

static int rdl_conn_time_io(rdl_conn_t *c, long long *ms)
{
    redisReply *r = redisCommand(c->ctx, "TIME");
    int rc = EIO;
    if (r == NULL)
        return EIO;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        long long sec = strtoll(r->element[0]->str, NULL, 10), usec = strtoll(r->element[1]->str, NULL, 10);
        if (sec > 0 && usec >= 0 && sec < 100000000000LL) {
            *ms = sec * 1000 + usec / 1000;
            rc = 0;
        }
    }
    if (rc != 0)
        rdl_log(RDLOCK_LOG_ERROR, "TIME failed: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return rc;
}

static int rdl_conn_online_replicas_io(rdl_conn_t *c, int *online)
{
    redisReply *r = redisCommand(c->ctx, "INFO replication");
    int rc;
    if (r == NULL)
        return EIO;
    if (r->type == REDIS_REPLY_ERROR && rdl_reply_transient(r)) {
        rc = EIO; /* loading, busy: asked again */
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* Not permitted, or renamed away (unknown command): asking again
         * would not help, so the acquisition fails with EACCES. */
        rc = EACCES;
        rdl_log(RDLOCK_LOG_ERROR, "%s: INFO replication refused: %s ([replication] wait_replicas = all needs it)",
                c->addr, r->str);
    } else if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        rc = EIO;
        rdl_log(RDLOCK_LOG_ERROR, "%s: INFO replication: unexpected reply", c->addr);
    } else if ((rc = rdl_info_online_replicas(r->str, r->len, online)) == EIO) {
        rdl_log(RDLOCK_LOG_ERROR, "%s: INFO replication does not read as a master's: cannot count its replicas",
                c->addr);
    }
    freeReplyObject(r);
    return rc;
}

static int rdl_conn_check_channel_io(rdl_conn_t *c, const char *channel, size_t len)
{
    const char *pub[3] = { "PUBLISH", channel, "" };
    const char *sub[2] = { "SUBSCRIBE", channel };
    const char *unsub[2] = { "UNSUBSCRIBE", channel };
    size_t publ[3] = { 7, len, 0 }, subl[2] = { 9, len }, unsubl[2] = { 11, len };
    const char *what[3] = { "publish", "subscribe", NULL };
    int i, rc = 0;

    /* One round trip; an empty message is ignored by every subscriber
     * (src/proto/reply.c), and UNSUBSCRIBE leaves subscribe mode again. */
    if (redisAppendCommandArgv(c->ctx, 3, pub, publ) != REDIS_OK ||
        redisAppendCommandArgv(c->ctx, 2, sub, subl) != REDIS_OK ||
        redisAppendCommandArgv(c->ctx, 2, unsub, unsubl) != REDIS_OK) {
        c->broken = true;
        return EIO;
    }
    for (i = 0; i < 3; i++) {
        redisReply *r;
        if (rdl_conn_read_io(c, &r) != 0)
            return EIO;
        if (r->type == REDIS_REPLY_ERROR && rc == 0 && what[i] != NULL) {
            rc = rdl_reply_error(r) == EACCES ? EACCES : EIO;
            if (rc == EACCES)
                rdl_log(RDLOCK_LOG_ERROR,
                        "the Redis user may not %s to channel %.*s (%s): lock wake-ups need channel "
                        "permission, e.g. ACL SETUSER <user> &<key_prefix>*",
                        what[i], (int)len, channel, r->str);
            else
                rdl_log(RDLOCK_LOG_ERROR, "%s %.*s failed: %s", what[i], (int)len, channel, r->str);
        }
        freeReplyObject(r);
    }
    return rc;
}

/* The public entry points: each I/O section runs with SIGPIPE blocked. */
int rdl_conn_time(rdl_conn_t *c, long long *ms)
{
    rdl_nosigpipe_t st;
    int rc;
    rdl_nosigpipe_enter(&st);
    rc = rdl_conn_time_io(c, ms);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_online_replicas(rdl_conn_t *c, int *online)
{
    rdl_nosigpipe_t st;
    int rc;
    rdl_nosigpipe_enter(&st);
    rc = rdl_conn_online_replicas_io(c, online);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_check_channel(rdl_conn_t *c, const char *channel, size_t len)
{
    rdl_nosigpipe_t st;
    int rc;
    rdl_nosigpipe_enter(&st);
    rc = rdl_conn_check_channel_io(c, channel, len);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_open_at(const rdl_config_t *cfg, const char *host, int port, bool probe, rdl_conn_t **out)
{
    rdl_nosigpipe_t st;
    int rc;
    rdl_nosigpipe_enter(&st);
    rc = conn_open_io(cfg, host, port, probe, out);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_append_load(rdl_conn_t *c, const rdl_script_t *script)
{
    const char *argv[3] = { "SCRIPT", "LOAD", script->body };
    if (redisAppendCommandArgv(c->ctx, 3, argv, NULL) != REDIS_OK)
        return c->ctx->err ? EIO : ENOMEM;
    return 0;
}

int rdl_conn_read(rdl_conn_t *c, redisReply **reply)
{
    rdl_nosigpipe_t st;
    int rc;
    rdl_nosigpipe_enter(&st);
    rc = rdl_conn_read_io(c, reply);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_script(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                    const char *const *argv, const size_t *lens, redisReply **reply)
{
    int acked;
    return rdl_conn_script_wait(c, script, nkeys, argc, argv, lens, 0, 0, reply, &acked);
}

int rdl_conn_script_wait(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                         const char *const *argv, const size_t *lens, int replicas, int timeout_ms,
                         redisReply **reply, int *acked)
{
    rdl_nosigpipe_t st;
    int rc;
    /* A blocking context: every write of the call is flush_nosignal's, and
     * reads raise no SIGPIPE.  Anything else, and TLS (whose reads may
     * write too: alerts, key updates): the signal-mask guard. */
    if (c->ctx != NULL && (c->ctx->flags & REDIS_BLOCK) && sdslen(c->ctx->obuf) == 0)
        return rdl_conn_script_io(c, script, nkeys, argc, argv, lens, replicas, timeout_ms, reply, acked);
    rdl_nosigpipe_enter(&st);
    rc = rdl_conn_script_io(c, script, nkeys, argc, argv, lens, replicas, timeout_ms, reply, acked);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_append_command(rdl_conn_t *c, int argc, const char *const *argv, const size_t *lens)
{
    const char *args[8]; /* hiredis 0.14 takes them without the inner const */
    int i;
    if (argc < 1 || argc > 8)
        return EINVAL;
    for (i = 0; i < argc; i++)
        args[i] = argv[i];
    if (redisAppendCommandArgv(c->ctx, argc, args, lens) != REDIS_OK) {
        c->broken = true;
        return c->ctx->err ? EIO : ENOMEM;
    }
    return 0;
}

int rdl_conn_set_timeout(rdl_conn_t *c, int ms)
{
    if (redisSetTimeout(c->ctx, rdl_ms_to_tv(ms)) != REDIS_OK) {
        c->broken = true;
        return EIO;
    }
    return 0;
}

int rdl_conn_load(rdl_conn_t *c, const rdl_script_t *script)
{
    rdl_nosigpipe_t st;
    int rc;
    rdl_nosigpipe_enter(&st);
    rc = rdl_conn_load_io(c, script);
    rdl_nosigpipe_leave(&st);
    return rc;
}
