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

/* One sentinel's view of our master (sentinel_view_io). */
typedef struct sview {
    long long epoch;                 /* its configuration epoch */
    char named[RDL_MASTER_ADDR_MAX]; /* where it says the master is */
    int could;                       /* replicas it could promote */
    int listed;                      /* replicas listed and not down */
    bool failing;                    /* the master down or failing over */
} sview_t;

/* The replies of one sentinel, in the order sent: SENTINEL replicas, then
 * get-master-addr-by-name, then master.  Sent as one pipeline, so that
 * the sentinel answers them in one pass (no INFO or hello of its own in
 * between), and in that order, so that a change between them can only
 * make the later ones newer: a master it names after listing the old
 * master's replicas is the new one (EROFS), never the reverse. */
#define VIEW_CMDS 3

/* Is r an error that asking again will not cure (permission, a command or
 * subcommand the sentinel does not know)? */
static bool view_refused(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR &&
           (rdl_reply_error(r) == EACCES || strncmp(r->str, "ERR unknown", 11) == 0 ||
            strncmp(r->str, "ERR Unknown", 11) == 0);
}

/* Does replica entry e of the master at addr count, and could Sentinel
 * promote it?  The one it is promoting (flag promoted) always, even if it
 * sees it down (the promotion cut its links to it): 2.  Else not if it is
 * addr itself, if it is down (s_down, o_down) or has priority 0 (Sentinel never promotes those):
 * 0.  A replica that reports itself a master is listed but not one it
 * could promote (1), unless this sentinel is promoting it (flag promoted):
 * after a failover the old master is listed so until Sentinel turns it
 * into a replica; so is one it has not looked at yet.  Else 2.  A disconnected replica still counts: Sentinel's
 * own promotion kills every client of the replica it promotes, its own
 * links too, for a moment. */
static int replica_class(const redisReply *e, const char *addr)
{
    const redisReply *flags = entry_field(e, "flags");
    const redisReply *ip = entry_field(e, "ip"), *port = entry_field(e, "port");
    char at[RDL_MASTER_ADDR_MAX];
    const redisReply *role = entry_field(e, "role-reported");
    const redisReply *prio = entry_field(e, "slave-priority");
    const redisReply *mhost = entry_field(e, "master-host");
    /* The master itself: the replica this sentinel has promoted stays in
     * the old master's list until the failover ends. */
    if (ip != NULL && port != NULL) {
        snprintf(at, sizeof at, "%s:%s", ip->str, port->str);
        if (strcmp(at, addr) == 0)
            return 0;
    }
    if (flags == NULL)
        return 2; /* unreadable: counted, the safe side */
    /* The one this sentinel promotes, even if it sees it down: the
     * promotion cut its links to it. */
    if (has_flag(flags->str, flags->len, "promoted"))
        return 2;
    if (has_flag(flags->str, flags->len, "s_down") || has_flag(flags->str, flags->len, "o_down"))
        return 0;
    if (prio != NULL && strcmp(prio->str, "0") == 0)
        return 0;
    if (role != NULL && strcmp(role->str, "master") == 0)
        return 1;
    /* Never looked at yet (no INFO of it, so its master is unknown: a
     * record made as a failover ends): Sentinel promotes no replica whose
     * INFO is not recent, and looks at it within a second. */
    if (mhost != NULL && strcmp(mhost->str, "?") == 0)
        return 1;
    return 2;
}

/* Sentinel i's view of our master into v (addr: the master we count).  0; EACCES (it refuses one of
 * the commands: logged); EIO (no answer, or one that does not read as
 * Sentinel's). */
static int sentinel_view_io(const rdl_config_t *cfg, int i, const char *addr, sview_t *v)
{
    char why[200];
    bool refused;
    redisContext *sc = sentinel_connect_io(cfg, i, why, sizeof why, &refused);
    redisReply *rep[VIEW_CMDS] = { NULL, NULL, NULL };
    const redisReply *r, *a, *m, *ep, *mflags;
    int rc = EIO, k;

    memset(v, 0, sizeof *v);
    if (sc == NULL) {
        rdl_log(RDLOCK_LOG_DEBUG, "sentinel %s:%d: %s", cfg->sentinel_host[i], cfg->sentinel_port[i], why);
        return refused ? EACCES : EIO;
    }
    if (redisAppendCommand(sc, "SENTINEL replicas %s", cfg->sentinel_master) == REDIS_OK &&
        redisAppendCommand(sc, "SENTINEL get-master-addr-by-name %s", cfg->sentinel_master) == REDIS_OK &&
        redisAppendCommand(sc, "SENTINEL master %s", cfg->sentinel_master) == REDIS_OK)
        for (k = 0; k < VIEW_CMDS; k++)
            if (redisGetReply(sc, (void **)&rep[k]) != REDIS_OK)
                break;
    r = rep[0], a = rep[1], m = rep[2];
    for (k = 0; k < VIEW_CMDS; k++)
        if (view_refused(rep[k])) {
            rdl_log(RDLOCK_LOG_ERROR, "sentinel %s:%d refuses what [replication] wait_replicas = all asks: %s",
                    cfg->sentinel_host[i], cfg->sentinel_port[i], rep[k]->str);
            rc = EACCES;
        }
    ep = entry_field(m, "config-epoch");
    mflags = entry_field(m, "flags");
    if (rc != EACCES && ep != NULL && mflags != NULL && a != NULL && a->type == REDIS_REPLY_ARRAY &&
        a->elements == 2 && a->element[0]->type == REDIS_REPLY_STRING &&
        a->element[1]->type == REDIS_REPLY_STRING && r != NULL && r->type == REDIS_REPLY_ARRAY) {
        char *end;
        v->epoch = strtoll(ep->str, &end, 10);
        snprintf(v->named, sizeof v->named, "%s:%s", a->element[0]->str, a->element[1]->str);
        v->failing = has_flag(mflags->str, mflags->len, "failover_in_progress") ||
                     has_flag(mflags->str, mflags->len, "s_down") || has_flag(mflags->str, mflags->len, "o_down");
        for (size_t e = 0; e < r->elements; e++) {
            int cl = replica_class(r->element[e], addr);
            v->listed += cl > 0;
            v->could += cl == 2;
        }
        rc = *end == '\0' && end != ep->str ? 0 : EIO;
    }
    if (rc == EIO)
        rdl_log(RDLOCK_LOG_DEBUG, "sentinel %s:%d: no view of master '%s'", cfg->sentinel_host[i],
                cfg->sentinel_port[i], cfg->sentinel_master);
    for (k = 0; k < VIEW_CMDS; k++)
        if (rep[k] != NULL)
            freeReplyObject(rep[k]);
    redisFree(sc);
    return rc;
}

int rdl_sentinel_replicas(const rdl_config_t *cfg, const char *addr, bool all, int *count, bool *frozen)
{
    rdl_nosigpipe_t st;
    sview_t v[RDL_SENTINELS_MAX];
    bool ok[RDL_SENTINELS_MAX] = { false };
    long long top = -1;
    int n = cfg->nsentinels < RDL_SENTINELS_MAX ? cfg->nsentinels : RDL_SENTINELS_MAX;
    int answered = 0, refused = 0, could = 0, newest = -1;

    *frozen = false;
    rdl_nosigpipe_enter(&st);
    for (int i = 0; i < n; i++) {
        int rc = sentinel_view_io(cfg, i, addr, &v[i]);
        refused += rc == EACCES;
        if (rc != 0)
            continue;
        ok[i] = true;
        answered++;
        rdl_log(RDLOCK_LOG_DEBUG, "sentinel %s:%d: epoch %lld, master %s: %d replicas it could promote, %d listed%s",
                cfg->sentinel_host[i], cfg->sentinel_port[i], v[i].epoch, v[i].named, v[i].could, v[i].listed,
                v[i].failing ? ", down or failing over" : "");
        if (v[i].epoch > top) {
            top = v[i].epoch;
            newest = i;
        }
    }
    rdl_nosigpipe_leave(&st);
    /* At first only the sentinel that runs a failover knows of it (a vote
     * leaves no trace in what the others answer, and a SENTINEL FAILOVER
     * takes none): with all, every sentinel must answer; else a majority,
     * enough to find a master that most of them have moved from. */
    if (answered < (all ? n : n / 2 + 1)) {
        rdl_log(RDLOCK_LOG_DEBUG, "%d of %d sentinels answered about master '%s'", answered, n,
                cfg->sentinel_master);
        return refused > 0 ? EACCES : EIO;
    }
    /* The newest configuration decides where the master is: a sentinel
     * that has not heard of a failover yet names the old one.  One of the
     * newest that names addr settles it (two may write one master
     * differently). */
    for (int i = 0; i < n; i++)
        if (ok[i] && v[i].epoch == top && strcmp(v[i].named, addr) == 0)
            newest = i;
    if (strcmp(v[newest].named, addr) != 0) {
        /* Look for the master there first. */
        __atomic_store_n((int *)&cfg->sentinel_hint, newest, __ATOMIC_RELAXED);
        rdl_log(RDLOCK_LOG_WARN, "sentinel %s:%d names %s the master of '%s' (epoch %lld), not %s",
                cfg->sentinel_host[newest], cfg->sentinel_port[newest], v[newest].named, cfg->sentinel_master, top,
                addr);
        return EROFS;
    }
    /* Every sentinel that names addr counts, the lagging ones too, and
     * every one of the newest (it may write the same master another way);
     * one that sees the master down or failing over with every replica it
     * lists (the one it promotes may not look like one yet).  Any one that
     * sees that freezes the count: the safe side. */
    for (int i = 0; i < n; i++) {
        int c;
        if (!ok[i])
            continue;
        *frozen |= v[i].failing;
        if (strcmp(v[i].named, addr) != 0 && v[i].epoch != top)
            continue;
        c = v[i].failing ? v[i].listed : v[i].could;
        if (c > could)
            could = c;
    }
    *count = could;
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
