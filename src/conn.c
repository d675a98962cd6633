/* conn.c - see conn.h. */
#include "rdl_build.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "conn.h"
#include "fmt.h"
#include "log.h"
#include "reply.h"

/* hiredis 0.14 writes with write(2): a peer that went away raises SIGPIPE,
 * which would kill a process that did not ignore it.  A library must not
 * change the process's signal dispositions, so each I/O section blocks
 * SIGPIPE in the calling thread and consumes one it caused (the usual
 * idiom; three cheap syscalls against a network round trip, none when the
 * thread blocks SIGPIPE already). */
typedef struct nosigpipe {
    sigset_t old;
    bool was_blocked; /* the caller blocks SIGPIPE itself: nothing to do */
} nosigpipe_t;

static void nosigpipe_enter(nosigpipe_t *st)
{
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &st->old);
    st->was_blocked = sigismember(&st->old, SIGPIPE);
}

static void nosigpipe_leave(nosigpipe_t *st)
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

static struct timeval ms_to_tv(int ms)
{
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

const char *rdl_conn_where(const rdl_config_t *cfg, char *buf, size_t n)
{
    if (cfg->nsentinels > 0)
        snprintf(buf, n, "master '%s' (via Sentinel)", cfg->sentinel_master);
    else if (cfg->socket != NULL)
        snprintf(buf, n, "unix:%s", cfg->socket);
    else
        snprintf(buf, n, "%s:%d", cfg->host, cfg->port);
    return buf;
}

/* One setup command; 0, or EACCES/EINVAL/EIO as `what` dictates. */
static int setup_command(rdl_conn_t *c, const rdl_config_t *cfg, int argc, const char **argv,
                         const char *what)
{
    char where[300];
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, NULL);
    int rc = 0;

    if (r == NULL) {
        snprintf(last_error, sizeof last_error, "%s failed: %s", what, c->ctx->errstr);
        rdl_log(RDLOCK_LOG_WARN, "%s: %s failed: %s", rdl_conn_where(cfg, where, sizeof where), what,
                c->ctx->errstr);
        return EIO;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        rc = rdl_reply_error(r);
        if (rc != EACCES && strcmp(what, "SELECT") == 0)
            rc = EINVAL;
        /* The server's text never contains the password we sent. */
        rdl_log(RDLOCK_LOG_ERROR, "%s: %s refused: %s", rdl_conn_where(cfg, where, sizeof where), what,
                r->str);
    }
    freeReplyObject(r);
    return rc;
}

/* Connect to sentinel i of cfg and authenticate if [sentinel] has a
 * password.  The context, or NULL with the reason in why (n bytes); *refused
 * set when the sentinel refused the credentials (or wants some). */
static redisContext *sentinel_connect_io(const rdl_config_t *cfg, int i, char *why, size_t n, bool *refused)
{
    redisContext *sc = redisConnectWithTimeout(cfg->sentinel_host[i], cfg->sentinel_port[i],
                                               ms_to_tv(cfg->connect_timeout_ms));
    redisReply *r;

    *refused = false;
    if (sc == NULL) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    if (sc->err || redisSetTimeout(sc, ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK) {
        snprintf(why, n, "%s", sc->err ? sc->errstr : "cannot set the timeout");
        redisFree(sc);
        return NULL;
    }
    redisEnableKeepAlive(sc);
    if (cfg->sentinel_password == NULL)
        return sc;
    {
        const char *argv[3] = { "AUTH", cfg->sentinel_username, cfg->sentinel_password };
        if (cfg->sentinel_username != NULL)
            r = redisCommandArgv(sc, 3, argv, NULL);
        else {
            argv[1] = cfg->sentinel_password;
            r = redisCommandArgv(sc, 2, argv, NULL);
        }
    }
    if (r != NULL && r->type != REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return sc;
    }
    /* The server's text never contains the password we sent. */
    snprintf(why, n, "AUTH %s: %s", r == NULL ? "failed" : "refused", r == NULL ? sc->errstr : r->str);
    *refused = r != NULL;
    if (r != NULL)
        freeReplyObject(r);
    redisFree(sc);
    return NULL;
}

redisContext *rdl_sentinel_connect(const rdl_config_t *cfg, int i, char *why, size_t n, bool *refused)
{
    redisContext *sc;
    nosigpipe_t st;
    nosigpipe_enter(&st);
    sc = sentinel_connect_io(cfg, i, why, n, refused);
    nosigpipe_leave(&st);
    return sc;
}

/* A sentinel's answer that needs credentials, or refuses ours. */
static bool sentinel_wants_auth(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR && rdl_reply_error(r) == EACCES;
}

/* Ask the sentinels, in order, where the master is: the first that
 * knows wins.  0 (host, *port set), EACCES (none knows, and one refused
 * our credentials or wants some: logged) or EIO (last_error says why).  A
 * failover is followed because the background thread listens to a
 * sentinel's notifications and drops the connections to the old master
 * (events.c, sentinel.c), every new connection asks again, and a demoted
 * master's READONLY drops the old ones (client.c, events.c). */
static int sentinel_master(const rdl_config_t *cfg, char *host, size_t hostlen, int *port)
{
    int k, first = __atomic_load_n(&cfg->sentinel_hint, __ATOMIC_RELAXED);
    bool auth_refused = false;
    snprintf(last_error, sizeof last_error, "no sentinel knows master '%s'", cfg->sentinel_master);
    if (first < 0 || first >= cfg->nsentinels)
        first = 0;
    for (k = 0; k < cfg->nsentinels; k++) {
        int i = (first + k) % cfg->nsentinels;
        char why[200];
        bool refused;
        redisContext *sc = sentinel_connect_io(cfg, i, why, sizeof why, &refused);
        redisReply *r = NULL;
        bool ok = false;
        if (sc != NULL)
            r = redisCommand(sc, "SENTINEL get-master-addr-by-name %s", cfg->sentinel_master);
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
            r->element[0]->len > 0 && r->element[0]->len < hostlen) {
            char *end;
            long p = strtol(r->element[1]->str, &end, 10);
            if (*end == '\0' && p >= 1 && p <= 65535) {
                memcpy(host, r->element[0]->str, r->element[0]->len + 1);
                *port = (int)p;
                ok = true;
            }
        }
        if (sentinel_wants_auth(r)) {
            refused = true;
            snprintf(why, sizeof why, "%s", r->str);
        }
        if (refused) {
            auth_refused = true;
            rdl_log(RDLOCK_LOG_ERROR, "sentinel %s:%d: %s", cfg->sentinel_host[i], cfg->sentinel_port[i], why);
        } else if (!ok)
            rdl_log(RDLOCK_LOG_DEBUG, "sentinel %s:%d: %s", cfg->sentinel_host[i], cfg->sentinel_port[i],
                    sc == NULL ? why
                    : r == NULL ? "no answer"
                    : r->type == REDIS_REPLY_ERROR ? r->str
                                                   : "does not know the master");
        if (r != NULL)
            freeReplyObject(r);
        if (sc != NULL)
            redisFree(sc);
        if (ok) {
            /* cfg is shared and const to everyone else: this hint is its
             * only mutable part, an int written atomically. */
            __atomic_store_n((int *)&cfg->sentinel_hint, i, __ATOMIC_RELAXED);
            return 0;
        }
    }
    if (auth_refused) {
        snprintf(last_error, sizeof last_error, "a sentinel refused authentication");
        return EACCES;
    }
    return EIO;
}

int rdl_sentinel_master(const rdl_config_t *cfg, char *buf, size_t n)
{
    char host[256];
    int port, rc;
    nosigpipe_t st;
    nosigpipe_enter(&st);
    rc = sentinel_master(cfg, host, sizeof host, &port);
    nosigpipe_leave(&st);
    if (rc == 0)
        snprintf(buf, n, "%s:%d", host, port);
    return rc;
}

static int rdl_conn_open_io(const rdl_config_t *cfg, rdl_conn_t **out, bool probe)
{
    rdl_conn_t *c;
    char where[300], dbs[16];
    int rc;

    c = calloc(1, sizeof *c);
    if (c == NULL)
        return ENOMEM;
    if (cfg->nsentinels > 0) {
        char host[256];
        int port;
        if ((rc = sentinel_master(cfg, host, sizeof host, &port)) != 0) {
            rdl_log(RDLOCK_LOG_DEBUG, "%s: %s", rdl_conn_where(cfg, where, sizeof where), last_error);
            free(c);
            return rc; /* EIO, or EACCES: a sentinel refused our credentials */
        }
        c->ctx = redisConnectWithTimeout(host, port, ms_to_tv(cfg->connect_timeout_ms));
        snprintf(c->master, sizeof c->master, "%s:%d", host, port);
    } else if (cfg->socket != NULL)
        c->ctx = redisConnectUnixWithTimeout(cfg->socket, ms_to_tv(cfg->connect_timeout_ms));
    else
        c->ctx = redisConnectWithTimeout(cfg->host, cfg->port, ms_to_tv(cfg->connect_timeout_ms));
    if (c->ctx == NULL) {
        free(c);
        return ENOMEM;
    }
    if (c->ctx->err) {
        snprintf(last_error, sizeof last_error, "connect failed: %s", c->ctx->errstr);
        rdl_log(RDLOCK_LOG_DEBUG, "%s: connect failed: %s", rdl_conn_where(cfg, where, sizeof where),
                c->ctx->errstr);
        rdl_conn_close(c);
        return EIO;
    }
    if (redisSetTimeout(c->ctx, ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK) {
        rdl_conn_close(c);
        return EIO;
    }
    if (cfg->socket == NULL)
        redisEnableKeepAlive(c->ctx);

    rc = 0;
    if (cfg->password != NULL) {
        const char *argv[3] = { "AUTH", cfg->username, cfg->password };
        if (cfg->username != NULL)
            rc = setup_command(c, cfg, 3, argv, "AUTH");
        else {
            argv[1] = cfg->password;
            rc = setup_command(c, cfg, 2, argv, "AUTH");
        }
    }
    if (rc == 0 && cfg->db != 0) {
        const char *argv[2] = { "SELECT", dbs };
        snprintf(dbs, sizeof dbs, "%d", cfg->db);
        rc = setup_command(c, cfg, 2, argv, "SELECT");
    }
    if (rc == 0 && probe && cfg->password == NULL && cfg->db == 0) {
        /* Nothing was sent yet: find out now whether the server wants a
         * password (NOAUTH), so that open reports EACCES. */
        const char *argv[1] = { "PING" };
        rc = setup_command(c, cfg, 1, argv, "PING");
    }
    if (rc != 0) {
        rdl_conn_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

void rdl_conn_close(rdl_conn_t *c)
{
    if (c == NULL)
        return;
    if (c->ctx != NULL)
        redisFree(c->ctx);
    free(c);
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

static int rdl_conn_script_io(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                    const char *const *argv, const size_t *lens, int replicas, int wait_ms,
                    redisReply **reply, int *acked)
{
    redisReply *r;
    int rc;

    *acked = -1;
    if ((rc = append_eval(c, "EVALSHA", script->sha, nkeys, argc, argv, lens)) != 0 ||
        (rc = append_wait(c, replicas, wait_ms)) != 0) {
        c->broken = true; /* maybe half a pipeline buffered: never reuse */
        return rc;
    }
    if ((rc = rdl_conn_read_io(c, &r)) != 0)
        return rc;
    if ((rc = read_wait(c, replicas, acked)) != 0) {
        freeReplyObject(r);
        return rc;
    }
    if (rdl_reply_noscript(r)) {
        /* The server lost its script cache (restart, SCRIPT FLUSH): EVAL
         * sends the body once and caches it again. */
        freeReplyObject(r);
        if ((rc = append_eval(c, "EVAL", script->body, nkeys, argc, argv, lens)) != 0 ||
            (rc = append_wait(c, replicas, wait_ms)) != 0) {
            c->broken = true;
            return rc;
        }
        if ((rc = rdl_conn_read_io(c, &r)) != 0)
            return rc;
        if ((rc = read_wait(c, replicas, acked)) != 0) {
            freeReplyObject(r);
            return rc;
        }
    }
    if (r->type == REDIS_REPLY_ERROR) {
        rc = rdl_reply_error(r);
        if (rc == EIO && rdl_reply_readonly(r)) {
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

static int rdl_conn_check_channel_io(rdl_conn_t *c, const char *channel, size_t len)
{
    const char *pub[3] = { "PUBLISH", channel, "" };
    const char *sub[2] = { "SUBSCRIBE", channel };
    const char *unsub[2] = { "UNSUBSCRIBE", channel };
    size_t publ[3] = { 7, len, 0 }, subl[2] = { 9, len }, unsubl[2] = { 11, len };
    const char *what[3] = { "publish", "subscribe", NULL };
    int i, rc = 0;

    /* One round trip; an empty message is ignored by every subscriber
     * (src/reply.c), and UNSUBSCRIBE leaves subscribe mode again. */
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
    nosigpipe_t st;
    int rc;
    nosigpipe_enter(&st);
    rc = rdl_conn_time_io(c, ms);
    nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_check_channel(rdl_conn_t *c, const char *channel, size_t len)
{
    nosigpipe_t st;
    int rc;
    nosigpipe_enter(&st);
    rc = rdl_conn_check_channel_io(c, channel, len);
    nosigpipe_leave(&st);
    return rc;
}
int rdl_conn_open(const rdl_config_t *cfg, rdl_conn_t **out)
{
    nosigpipe_t st;
    int rc;
    nosigpipe_enter(&st);
    rc = rdl_conn_open_io(cfg, out, true);
    nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_open_lazy(const rdl_config_t *cfg, rdl_conn_t **out)
{
    nosigpipe_t st;
    int rc;
    nosigpipe_enter(&st);
    rc = rdl_conn_open_io(cfg, out, false);
    nosigpipe_leave(&st);
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
    nosigpipe_t st;
    int rc;
    nosigpipe_enter(&st);
    rc = rdl_conn_read_io(c, reply);
    nosigpipe_leave(&st);
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
    nosigpipe_t st;
    int rc;
    nosigpipe_enter(&st);
    rc = rdl_conn_script_io(c, script, nkeys, argc, argv, lens, replicas, timeout_ms, reply, acked);
    nosigpipe_leave(&st);
    return rc;
}

int rdl_conn_load(rdl_conn_t *c, const rdl_script_t *script)
{
    nosigpipe_t st;
    int rc;
    nosigpipe_enter(&st);
    rc = rdl_conn_load_io(c, script);
    nosigpipe_leave(&st);
    return rc;
}
