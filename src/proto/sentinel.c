/* sentinel.c - see sentinel.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "proto/conn.h"
#include "proto/reply.h"
#include "proto/sentinel.h"
#include "proto/tls.h"

#define RDL_SWITCH_CHANNEL "+switch-master"
#define RDL_PROMOTED_CHANNEL "+promoted-slave"
#define RDL_SENTINEL_PING_MS 5000      /* keepalive of a quiet link */
#define RDL_SENTINEL_RETRY_MAX_MS 5000 /* backoff cap between connects */
#define RDL_SENTINEL_ASK_RETRY_MS 1000 /* after an unanswered question */

/* ------------------------------------------------------------------ */
/* Asking the sentinels                                                */
/* ------------------------------------------------------------------ */

/* Connect to sentinel i of cfg and authenticate if [sentinel] has a
 * password.  The context, or NULL with the reason in why (n bytes); *refused
 * set when the sentinel refused the credentials (or wants some). */
static redisContext *sentinel_connect_io(const rdl_config_t *cfg, int i, char *why, size_t n, bool *refused)
{
    redisContext *sc = redisConnectWithTimeout(cfg->sentinel_host[i], cfg->sentinel_port[i],
                                               rdl_ms_to_tv(cfg->connect_timeout_ms));
    redisReply *r;

    *refused = false;
    if (sc == NULL) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    if (sc->err || redisSetTimeout(sc, rdl_ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK) {
        snprintf(why, n, "%s", sc->err ? sc->errstr : "cannot set the timeout");
        redisFree(sc);
        return NULL;
    }
    redisEnableKeepAlive(sc);
    if (cfg->sentinel_tls) {
        /* [sentinel] tls (by default [redis]'s): the same context, checked
         * for the sentinel's own host. */
        const char *version;
        bool asked;
        int rc = redisSetTimeout(sc, rdl_ms_to_tv(cfg->connect_timeout_ms)) == REDIS_OK
                     ? rdl_tls_start(cfg->tls_ctx, sc, cfg->sentinel_host[i], &version, &asked)
                     : EIO;
        if (rc == 0 && redisSetTimeout(sc, rdl_ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK)
            rc = EIO;
        if (rc != 0) {
            snprintf(why, n, "%s", sc->errstr);
            *refused = rc == EACCES;
            redisFree(sc);
            return NULL;
        }
    }
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
    rdl_nosigpipe_t st;
    rdl_nosigpipe_enter(&st);
    sc = sentinel_connect_io(cfg, i, why, n, refused);
    rdl_nosigpipe_leave(&st);
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
 * master's READONLY drops the old ones (call.c, events.c). */
static int sentinel_ask_io(const rdl_config_t *cfg, char *host, size_t hostlen, int *port)
{
    int k, first = __atomic_load_n(&cfg->sentinel_hint, __ATOMIC_RELAXED);
    bool auth_refused = false;
    rdl_conn_set_last_error("no sentinel knows master '%s'", cfg->sentinel_master);
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
        rdl_conn_set_last_error("a sentinel refused authentication");
        return EACCES;
    }
    return EIO;
}

int rdl_sentinel_ask(const rdl_config_t *cfg, char *host, size_t hostlen, int *port)
{
    rdl_nosigpipe_t st;
    int rc;
    rdl_nosigpipe_enter(&st);
    rc = sentinel_ask_io(cfg, host, hostlen, port);
    rdl_nosigpipe_leave(&st);
    return rc;
}

int rdl_sentinel_master(const rdl_config_t *cfg, char *buf, size_t n)
{
    char host[256];
    int port, rc = rdl_sentinel_ask(cfg, host, sizeof host, &port);
    if (rc == 0)
        snprintf(buf, n, "%s:%d", host, port);
    return rc;
}

/* Does the comma-separated flag list [f, f + len) hold flag? */
static bool has_flag(const char *f, size_t len, const char *flag)
{
    size_t fl = strlen(flag), i = 0;
    while (i < len) {
        const char *comma = memchr(f + i, ',', len - i);
        size_t end = comma != NULL ? (size_t)(comma - f) : len;
        if (end - i == fl && memcmp(f + i, flag, fl) == 0)
            return true;
        i = end + 1;
    }
    return false;
}

/* Field name of one replica's entry r in SENTINEL REPLICAS (a flat array
 * of names and values); NULL if absent or not a string. */
static const redisReply *entry_field(const redisReply *r, const char *name)
{
    size_t nl = strlen(name);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k != NULL && k->type == REDIS_REPLY_STRING && k->len == nl && memcmp(k->str, name, nl) == 0)
            return v != NULL && v->type == REDIS_REPLY_STRING ? v : NULL;
    }
    return NULL;
}

/* Sentinel i's view of our master: its configuration epoch (*epoch), where
 * it is ("host:port" in named, n bytes: during a failover, the replica
 * being promoted once the sentinel has seen it a master) and how many
 * replicas could take its place (*count): those listed that are not down
 * (s_down, o_down), that the sentinel reaches (not disconnected: Sentinel
 * promotes none it cannot reach) and that report themselves replicas.  A
 * replica being promoted stays listed, as a replica, until then.  0, or
 * EIO (no answer, or an answer that does not read as Sentinel's). */
static int sentinel_view_io(const rdl_config_t *cfg, int i, long long *epoch, char *named, size_t n, int *count)
{
    char why[200];
    bool refused;
    redisContext *sc = sentinel_connect_io(cfg, i, why, sizeof why, &refused);
    redisReply *m = NULL, *a = NULL, *r = NULL;
    const redisReply *ep;
    int rc = EIO;

    if (sc == NULL) {
        rdl_log(RDLOCK_LOG_DEBUG, "sentinel %s:%d: %s", cfg->sentinel_host[i], cfg->sentinel_port[i], why);
        return EIO;
    }
    m = redisCommand(sc, "SENTINEL master %s", cfg->sentinel_master);
    if (m != NULL)
        a = redisCommand(sc, "SENTINEL get-master-addr-by-name %s", cfg->sentinel_master);
    if (a != NULL)
        r = redisCommand(sc, "SENTINEL replicas %s", cfg->sentinel_master);
    ep = entry_field(m, "config-epoch");
    if (ep != NULL && a != NULL && a->type == REDIS_REPLY_ARRAY && a->elements == 2 &&
        a->element[0]->type == REDIS_REPLY_STRING && a->element[1]->type == REDIS_REPLY_STRING && r != NULL &&
        r->type == REDIS_REPLY_ARRAY) {
        char *end;
        *epoch = strtoll(ep->str, &end, 10);
        snprintf(named, n, "%s:%s", a->element[0]->str, a->element[1]->str);
        *count = 0;
        for (size_t k = 0; k < r->elements; k++) {
            const redisReply *flags = entry_field(r->element[k], "flags");
            const redisReply *role = entry_field(r->element[k], "role-reported");
            if (flags == NULL || has_flag(flags->str, flags->len, "s_down") ||
                has_flag(flags->str, flags->len, "o_down") || has_flag(flags->str, flags->len, "disconnected"))
                continue;
            if (role != NULL && strcmp(role->str, "master") == 0)
                continue;
            ++*count;
        }
        rc = *end == '\0' && end != ep->str ? 0 : EIO;
    }
    if (rc != 0)
        rdl_log(RDLOCK_LOG_DEBUG, "sentinel %s:%d: no view of master '%s'", cfg->sentinel_host[i],
                cfg->sentinel_port[i], cfg->sentinel_master);
    if (m != NULL)
        freeReplyObject(m);
    if (a != NULL)
        freeReplyObject(a);
    if (r != NULL)
        freeReplyObject(r);
    redisFree(sc);
    return rc;
}

int rdl_sentinel_replicas(const rdl_config_t *cfg, const char *addr, int *count)
{
    rdl_nosigpipe_t st;
    long long top = -1, ep[RDL_SENTINELS_MAX];
    char named[RDL_SENTINELS_MAX][RDL_MASTER_ADDR_MAX];
    int cnt[RDL_SENTINELS_MAX], answered = 0, best = 0, other = -1;
    bool ok[RDL_SENTINELS_MAX] = { false };

    rdl_nosigpipe_enter(&st);
    for (int i = 0; i < cfg->nsentinels && i < RDL_SENTINELS_MAX; i++) {
        if (sentinel_view_io(cfg, i, &ep[i], named[i], sizeof named[i], &cnt[i]) != 0)
            continue;
        ok[i] = true;
        answered++;
        if (ep[i] > top)
            top = ep[i];
    }
    rdl_nosigpipe_leave(&st);
    if (answered == 0)
        return EIO;
    /* The newest configuration decides where the master is: a sentinel
     * that has not heard of a failover yet names the old one.  Every
     * sentinel that names addr counts, the lagging ones too. */
    for (int i = 0; i < cfg->nsentinels && i < RDL_SENTINELS_MAX; i++) {
        if (!ok[i])
            continue;
        if (strcmp(named[i], addr) == 0) {
            if (cnt[i] > best)
                best = cnt[i];
        } else if (ep[i] == top) {
            other = i;
        }
    }
    if (other >= 0) {
        rdl_log(RDLOCK_LOG_WARN, "sentinel %s:%d names %s the master of '%s' (epoch %lld), not %s",
                cfg->sentinel_host[other], cfg->sentinel_port[other], named[other], cfg->sentinel_master, top, addr);
        return EROFS;
    }
    *count = best;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The kept link                                                       */
/* ------------------------------------------------------------------ */

struct rdl_sentinel_watch {
    redisContext *ctx;  /* subscribed link, NULL while there is none */
    int idx;            /* the linked sentinel, or the next one to try */
    bool started;       /* idx was chosen once (first: the config's hint) */
    int fails;          /* connects failed in a row */
    long long retry_at; /* next connect not before */
    long long heard_at; /* last reply of any kind on the link */
    long long ping_at;  /* a PING awaits its answer since then; 0 none */
    long long ask_at;   /* ask where the master is at; 0 not needed */
    int warned_replicas; /* replica count last warned about (wait_replicas) */
    char master[RDL_MASTER_ADDR_MAX];
};

rdl_sentinel_watch_t *rdl_sentinel_watch_new(void)
{
    return calloc(1, sizeof(rdl_sentinel_watch_t));
}

void rdl_sentinel_watch_free(rdl_sentinel_watch_t *w)
{
    if (w == NULL)
        return;
    if (w->ctx != NULL)
        redisFree(w->ctx);
    free(w);
}

int rdl_sentinel_watch_fd(const rdl_sentinel_watch_t *w)
{
    return w != NULL && w->ctx != NULL ? w->ctx->fd : -1;
}

const char *rdl_sentinel_watch_master(const rdl_sentinel_watch_t *w)
{
    return w->master;
}

void rdl_sentinel_watch_set_master(rdl_sentinel_watch_t *w, const char *addr)
{
    snprintf(w->master, sizeof w->master, "%s", addr);
}

static long long retry_ms(int fails)
{
    long long ms = 100LL << (fails < 7 ? fails - 1 : 6);
    return ms > RDL_SENTINEL_RETRY_MAX_MS ? RDL_SENTINEL_RETRY_MAX_MS : ms;
}

/* The link failed: close it and try the next sentinel after a backoff. */
static void drop(rdl_sentinel_watch_t *w, const rdl_config_t *cfg, long long now, const char *why)
{
    rdl_log(RDLOCK_LOG_WARN, "sentinel %s:%d: link lost (%s); following master '%s' through the next one",
            cfg->sentinel_host[w->idx], cfg->sentinel_port[w->idx], why, cfg->sentinel_master);
    redisFree(w->ctx);
    w->ctx = NULL;
    w->fails = 1;
    w->retry_at = now + retry_ms(w->fails);
    w->idx = (w->idx + 1) % cfg->nsentinels;
}

/* One connect attempt to sentinel w->idx: connect, AUTH, SUBSCRIBE. */
static void link_open(rdl_sentinel_watch_t *w, const rdl_config_t *cfg, long long now)
{
    char why[200];
    bool refused;
    redisReply *r = NULL;
    redisContext *ctx;
    int i;

    if (!w->started) {
        /* The sentinel that answered last: it is up, and new connections
         * ask it first, so the link and they agree. */
        w->idx = __atomic_load_n(&cfg->sentinel_hint, __ATOMIC_RELAXED);
        if (w->idx < 0 || w->idx >= cfg->nsentinels)
            w->idx = 0;
        w->started = true;
    }
    i = w->idx;
    ctx = rdl_sentinel_connect(cfg, i, why, sizeof why, &refused);
    if (ctx != NULL) {
        int k;
        /* Two channels, two confirmations. */
        r = redisCommand(ctx, "SUBSCRIBE %s %s", RDL_SWITCH_CHANNEL, RDL_PROMOTED_CHANNEL);
        for (k = 0; k < 2; k++) {
            if (k == 1) {
                void *v = NULL;
                freeReplyObject(r);
                r = redisGetReply(ctx, &v) == REDIS_OK ? v : NULL;
            }
            if (r == NULL)
                snprintf(why, sizeof why, "SUBSCRIBE: %s", ctx->errstr);
            else if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
                     strcmp(r->element[0]->str, "subscribe") != 0)
                snprintf(why, sizeof why, "SUBSCRIBE refused: %s",
                         r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            else
                continue;
            break;
        }
        if (k == 2) {
            freeReplyObject(r);
            w->ctx = ctx;
            w->fails = 0;
            w->heard_at = now;
            w->ping_at = 0;
            w->ask_at = now; /* a switch may have passed while no link was up */
            __atomic_store_n((int *)&cfg->sentinel_hint, i, __ATOMIC_RELAXED);
            rdl_log(RDLOCK_LOG_DEBUG, "sentinel %s:%d: listening for failovers of master '%s'",
                    cfg->sentinel_host[i], cfg->sentinel_port[i], cfg->sentinel_master);
            return;
        }
        if (r != NULL)
            freeReplyObject(r);
        redisFree(ctx);
    }
    /* The first failure of a series is worth a line; the retries are not
     * (an unreachable sentinel is also reported by every connection). */
    rdl_log(refused ? RDLOCK_LOG_ERROR : w->fails == 0 ? RDLOCK_LOG_WARN : RDLOCK_LOG_DEBUG,
            "sentinel %s:%d: cannot listen for failovers: %s", cfg->sentinel_host[i], cfg->sentinel_port[i], why);
    w->fails++;
    w->retry_at = now + retry_ms(w->fails);
    w->idx = (i + 1) % cfg->nsentinels;
}

/* With wait_replicas, after a new link learned the master: does Sentinel
 * know more replicas than every acquisition waits for?  Then a failover
 * can promote a replica that did not confirm a hold: two holders, a
 * fencing token that goes back.  Said once per count, never refused: the
 * count Sentinel keeps includes replicas that are down. */
static void check_replicas(rdl_sentinel_watch_t *w, const rdl_config_t *cfg)
{
    char why[200];
    bool refused;
    redisContext *sc = rdl_sentinel_connect(cfg, w->idx, why, sizeof why, &refused);
    redisReply *r = sc != NULL ? redisCommand(sc, "SENTINEL replicas %s", cfg->sentinel_master) : NULL;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > (size_t)cfg->wait_replicas &&
        (int)r->elements != w->warned_replicas) {
        w->warned_replicas = (int)r->elements;
        rdl_log(RDLOCK_LOG_WARN,
                "Sentinel knows %zu replicas of master '%s' but [replication] wait_replicas is %d: a failover "
                "to a replica that did not confirm a hold can give the lock to two holders; set wait_replicas "
                "to %zu (rdlock.ini(5))",
                r->elements, cfg->sentinel_master, cfg->wait_replicas, r->elements);
    } else if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
        rdl_log(RDLOCK_LOG_DEBUG, "Sentinel knows %zu replicas of master '%s'; wait_replicas %d covers them",
                r->elements, cfg->sentinel_master, cfg->wait_replicas);
    }
    if (r != NULL)
        freeReplyObject(r);
    if (sc != NULL)
        redisFree(sc);
}

int rdl_sentinel_watch_service(rdl_sentinel_watch_t *w, const rdl_config_t *cfg, long long now, char *addr,
                               size_t n)
{
    if (w->ctx == NULL) {
        if (now < w->retry_at)
            return 0;
        link_open(w, cfg, now);
        if (w->ctx == NULL)
            return 0;
    }
    if (w->ping_at != 0 && now - w->ping_at >= cfg->command_timeout_ms) {
        drop(w, cfg, now, "no answer to PING");
        return 0;
    }
    if (w->ping_at == 0 && now - w->heard_at >= RDL_SENTINEL_PING_MS) {
        int done = 0;
        if (redisAppendCommand(w->ctx, "PING") != REDIS_OK) {
            drop(w, cfg, now, "out of memory");
            return 0;
        }
        while (!done)
            if (redisBufferWrite(w->ctx, &done) != REDIS_OK) {
                drop(w, cfg, now, w->ctx->errstr);
                return 0;
            }
        w->ping_at = now;
    }
    if (w->ask_at != 0 && now >= w->ask_at) {
        /* Asked on a connection of its own (this one only listens),
         * starting with the sentinel we listen to. */
        if (rdl_sentinel_master(cfg, addr, n) == 0) {
            w->ask_at = 0;
            if (cfg->wait_replicas > 0) /* not all: it counts what is there */
                check_replicas(w, cfg);
            return 1;
        }
        w->ask_at = now + RDL_SENTINEL_ASK_RETRY_MS;
    }
    return 0;
}

long long rdl_sentinel_watch_due(const rdl_sentinel_watch_t *w, const rdl_config_t *cfg)
{
    long long due;
    if (w->ctx == NULL)
        return w->retry_at;
    due = w->ping_at != 0 ? w->ping_at + cfg->command_timeout_ms : w->heard_at + RDL_SENTINEL_PING_MS;
    if (w->ask_at != 0 && w->ask_at < due)
        due = w->ask_at;
    return due;
}

int rdl_sentinel_watch_read(rdl_sentinel_watch_t *w, const rdl_config_t *cfg, char *addr, size_t n,
                            const char **event)
{
    long long now = 0;
    int found = 0;

    if (w->ctx == NULL)
        return 0;
    if (redisBufferRead(w->ctx) != REDIS_OK) {
        drop(w, cfg, rdl_now_ms(), w->ctx->errstr);
        return -1;
    }
    for (;;) {
        void *v = NULL;
        redisReply *r;
        int kind;
        if (redisGetReplyFromReader(w->ctx, &v) != REDIS_OK) {
            drop(w, cfg, rdl_now_ms(), "protocol error");
            return -1;
        }
        if (v == NULL)
            break;
        r = v;
        if (now == 0)
            now = rdl_now_ms();
        w->heard_at = now;
        switch ((kind = rdl_reply_sentinel(r, cfg->sentinel_master, addr, n))) {
        case RDL_SEV_PONG:
            w->ping_at = 0;
            break;
        case RDL_SEV_SWITCH:
        case RDL_SEV_PROMOTED:
            found = 1;
            *event = kind == RDL_SEV_SWITCH ? RDL_SWITCH_CHANNEL : RDL_PROMOTED_CHANNEL;
            /* New connections ask this sentinel first: it names the new
             * master too (Sentinel answers with the promoted replica from
             * the promotion on). */
            __atomic_store_n((int *)&cfg->sentinel_hint, w->idx, __ATOMIC_RELAXED);
            break;
        default:
            break;
        }
        freeReplyObject(r);
    }
    return found;
}
