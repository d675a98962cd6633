/* watchdog.c - renewing the client's holds: which are due, pipelined
 * batches of renew.lua on the watchdog's own connection, and what the
 * replies mean (renewed, lost, unknown).  See watchdog.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/lease.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "base/wake.h"
#include "client/client.h"
#include "client/ident.h"
#include "core/hold.h"
#include "core/watchdog.h"
#include "exec/exec.h"
#include "proto/reply.h"
#include "proto/script.h"
#include "proto/slotmap.h"
#include "topology/topology.h"

#define RDL_RENEW_BATCH 500        /* holds per renew script call */
#define RDL_RENEW_WINDOW 8         /* renew script calls in flight on a connection */
#define RDL_BACKOFF_MAX_MS 1000

static long long backoff_ms(int fails)
{
    long long ms = 50LL << (fails < 5 ? fails : 5);
    return ms > RDL_BACKOFF_MAX_MS ? RDL_BACKOFF_MAX_MS : ms;
}


/* One hold of a round, copied out of the table under the mutex (the hold
 * may be released while the round runs without it).  Small, as a round
 * may carry a million: the key lives in the round's arena, and the owner,
 * lease and count are formatted only when the hold's chunk is sent
 * (renew_args). */
typedef struct renew_item {
    size_t key;         /* offset of the key in the round's arena */
    uint64_t serial;
    unsigned keylen;
    unsigned thread;
    unsigned lease_ms;
    unsigned count;     /* the hold count now */
    unsigned slot;      /* with a cluster: the hash slot of key */
    int route;          /* index into the round's routes: which server */
    signed char result; /* 0 renewed, 1 lost, -1 unknown (I/O failed) */
    bool server_count;  /* a semaphore: send '' for the count (batch_add) */
    char call[21];
} renew_item_t;

typedef struct lost_cb {
    rdlock_lost_fn fn;
    void *arg;
    char *name;
} lost_cb_t;

struct rdl_wd_round {
    renew_item_t *items;
    size_t n, cap;
    char *keys;         /* the items' keys, back to back */
    size_t keyslen, keyscap;
    char (*routes)[RDL_ROUTE_MAX]; /* the servers of this round's holds */
    int nroutes, caproutes;
    long long sent_at;
    lost_cb_t *cbs;
    size_t ncb, cbcap;
};
typedef struct rdl_wd_round renew_batch_t;

static void batch_clear(renew_batch_t *b)
{
    size_t i;
    free(b->items);
    free(b->keys);
    for (i = 0; i < b->ncb; i++)
        free(b->cbs[i].name);
    free(b->cbs);
    free(b->routes);
    memset(b, 0, sizeof *b);
}

/* Mark a hold lost (mutex held) and queue its callback, once. */
static void hold_lost(renew_batch_t *b, rdl_hold_t *h)
{
    void *arg;
    rdlock_lost_fn fn = rdl_hold_lostcb(h, &arg);
    h->lost = true;
    if (h->notified || fn == NULL)
        return;
    h->notified = true;
    if (b->ncb == b->cbcap) {
        size_t cap = b->cbcap ? b->cbcap * 2 : 8;
        lost_cb_t *v = realloc(b->cbs, cap * sizeof *v);
        if (v == NULL)
            return;
        b->cbs = v;
        b->cbcap = cap;
    }
    b->cbs[b->ncb].fn = fn;
    b->cbs[b->ncb].arg = arg;
    b->cbs[b->ncb].name = strndup(rdl_hold_name(h), h->namelen);
    if (b->cbs[b->ncb].name != NULL)
        b->ncb++;
}

static const char *item_key(const renew_batch_t *b, const renew_item_t *it)
{
    return b->keys + it->key;
}

static int batch_add(rdlock_client_t *c, renew_batch_t *b, const rdl_hold_t *h)
{
    renew_item_t *it;
    (void)c;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        renew_item_t *v = realloc(b->items, cap * sizeof *v);
        if (v == NULL)
            return ENOMEM;
        b->items = v;
        b->cap = cap;
    }
    if (b->keyslen + h->keylen > b->keyscap) {
        size_t cap = b->keyscap ? b->keyscap * 2 : 4096;
        char *v;
        while (cap < b->keyslen + h->keylen)
            cap *= 2;
        if ((v = realloc(b->keys, cap)) == NULL)
            return ENOMEM;
        b->keys = v;
        b->keyscap = cap;
    }
    it = &b->items[b->n];
    memcpy(b->keys + b->keyslen, h->key, h->keylen);
    it->key = b->keyslen;
    it->keylen = (unsigned)h->keylen;
    b->keyslen += h->keylen;
    it->thread = h->thread;
    it->serial = h->serial;
    it->lease_ms = h->lease_ms;
    it->count = h->count;
    /* A semaphore's permit count is the server's (renew.lua keeps it for
     * ''): a renewal racing a post must not bring a permit back. */
    it->server_count = h->kind == RDL_HOLD_SEM;
    rdl_hold_call_str(h, it->call);
    it->result = -1;
    b->n++;
    return 0;
}

/* Collect the holds to renew now (mutex held): every watched hold due
 * within half its interval, so renewals line up into few batches.  Holds
 * past max_hold_ms stop being renewed and are reported lost when their
 * lease runs out; so are holds whose renewals have failed until past
 * their lease end (the server may already have given them away). */
static void renew_collect(rdlock_client_t *c, long long now, renew_batch_t *b)
{
    size_t i;
    rdl_tnode_t *nd;
    long long next = 0;

    RDL_TABLE_FOREACH(&c->holds, i, nd)
    {
        rdl_hold_t *h = (rdl_hold_t *)nd;
        long long due, interval;
        /* A hold whose unlock is under way is renewed too: the unlock may
         * take a while (its retries, a slot being migrated answering
         * TRYAGAIN for seconds), and must not find the lease run out.
         * renew.lua only extends that very hold, so a renewal that comes
         * after the release changes nothing. */
        if (!h->watchdog || h->lost)
            continue;
        if (h->expires_at <= now && (h->renew_stopped || h->renew_at <= now)) {
            if (!h->releasing) /* else the unlock finds out, and reports it */
                hold_lost(b, h);
            continue;
        }
        if (!h->renew_stopped && c->cfg.max_hold_ms != 0 && now - h->acquired_at >= c->cfg.max_hold_ms) {
            h->renew_stopped = true;
            rdl_log(RDLOCK_LOG_WARN, "lock %.*s held past max_hold_ms: no longer renewed",
                    (int)h->namelen, rdl_hold_name(h));
        }
        due = h->renew_stopped ? h->expires_at : h->renew_at;
        interval = rdl_lease_interval(&c->cfg, h->lease_ms);
        if (!h->renew_stopped && h->renew_at <= now + interval / 2 && batch_add(c, b, h) == 0)
            due = now + interval; /* provisional, until the reply */
        if (next == 0 || due < next)
            next = due;
    }
    c->wdog.next = next;
}

/* Room for one renew script call's arguments (renew_send): argv and lens
 * for the keys and four arguments per hold, and the owner, lease and
 * count strings, formatted per chunk. */
typedef struct renew_argbuf {
    const char *argv[5 * RDL_RENEW_BATCH];
    size_t lens[5 * RDL_RENEW_BATCH];
    char owner[RDL_RENEW_BATCH][RDL_OWNER_MAX];
    char num[RDL_RENEW_BATCH][2][21];
} renew_argbuf_t;

/* Arguments of one renew script call: chunk [start, start+n) of the
 * batch, into ab (valid until it is used for the next chunk). */
static size_t renew_args(const rdlock_client_t *c, const renew_batch_t *b, size_t start, size_t n,
                         renew_argbuf_t *ab)
{
    size_t i, argc = 0;
    for (i = 0; i < n; i++) {
        ab->argv[argc] = item_key(b, &b->items[start + i]);
        ab->lens[argc++] = b->items[start + i].keylen;
    }
    for (i = 0; i < n; i++) {
        const renew_item_t *it = &b->items[start + i];
        ab->argv[argc] = ab->owner[i];
        ab->lens[argc++] = rdl_owner(c, it->thread, ab->owner[i]);
        ab->argv[argc] = ab->num[i][0];
        ab->lens[argc++] = rdl_fmt_u64(ab->num[i][0], it->lease_ms);
        ab->argv[argc] = ab->num[i][1];
        ab->lens[argc++] = it->server_count ? 0 : rdl_fmt_u64(ab->num[i][1], it->count);
        ab->argv[argc] = it->call;
        ab->lens[argc++] = strlen(it->call);
    }
    return argc;
}

/* Record one chunk's reply, [start, start + n) of the batch.  Returns 1 if
 * the server lost its script cache (NOSCRIPT): the chunk must be sent
 * again; 2 if it is a replica now (READONLY): the connection must be made
 * again; 3 if a cluster node sent it elsewhere or said to wait (conn->redir
 * says how: an ASK is followed at once, the rest next round). */
static int renew_result(rdlock_client_t *c, rdl_conn_t *conn, renew_batch_t *b, size_t start, size_t n,
                        const redisReply *r)
{
    int res[RDL_RENEW_BATCH], cls;
    size_t i;
    if (rdl_reply_noscript(r))
        return 1;
    if (rdl_reply_readonly(r)) {
        rdl_log(RDLOCK_LOG_WARN, "watchdog: %s; reconnecting", r->str);
        return 2;
    }
    cls = rdl_cluster_error(r);
    if (cls == RDL_CL_MOVED || cls == RDL_CL_ASK) {
        if (rdl_redirect_parse(r, conn->host, &conn->redir) != 0)
            conn->redir.kind = RDL_CL_CLUSTERDOWN; /* unreadable: learn the map again */
        rdl_topo_redirected(c, conn);
        return 3;
    }
    if (cls != RDL_CL_NONE) {
        /* TRYAGAIN (a slot migrating under this chunk), CLUSTERDOWN: the
         * results stay unknown, retried soon. */
        conn->redir.kind = RDL_CL_CLUSTERDOWN;
        rdl_topo_redirected(c, conn);
        return 0;
    }
    if (rdl_reply_renew(r, n, res) == 0) /* else results stay unknown: retried soon */
        for (i = 0; i < n; i++)
            b->items[start + i].result = res[i];
    return 0;
}

/* Holds in one renew script call from start, below end: at most
 * RDL_RENEW_BATCH, and with a cluster all of one slot (a script's keys
 * must be). */
static size_t chunk_len(const rdlock_client_t *c, const renew_batch_t *b, size_t start, size_t end)
{
    size_t n = 1;
    while (start + n < end && n < RDL_RENEW_BATCH &&
           (!c->topo->sharded || b->items[start + n].slot == b->items[start].slot))
        n++;
    return n;
}

/* The watchdog's connection to route's server, connecting if needed
 * (mutex not held).  *fresh: just made (its scripts are not loaded). */
static int wd_conn(rdlock_client_t *c, const char *route, rdl_conn_t **out, bool *fresh)
{
    rdl_conn_t *conn;
    int rc;
    *fresh = false;
    for (conn = c->wdog.conns; conn != NULL; conn = conn->next)
        if (strcmp(conn->route, route) == 0) {
            *out = conn;
            return 0;
        }
    if ((rc = rdl_topo_connect_route(c, route, &conn)) != 0)
        return rc;
    conn->next = c->wdog.conns;
    c->wdog.conns = conn;
    *fresh = true;
    *out = conn;
    return 0;
}

static void wd_drop(rdlock_client_t *c, rdl_conn_t *conn)
{
    rdl_conn_t **pp;
    for (pp = &c->wdog.conns; *pp != NULL; pp = &(*pp)->next)
        if (*pp == conn) {
            *pp = conn->next;
            rdl_conn_close(conn);
            return;
        }
}

/* One server's share of a renewal round (renew_route): the holds [s, e)
 * of b, on the watchdog's connection to that server, and what its replies
 * asked for. */
typedef struct route_run {
    rdlock_client_t *c;
    renew_batch_t *b;
    size_t s, e;
    renew_argbuf_t *ab;
    rdl_conn_t *conn;
    bool reload;   /* a chunk met NOSCRIPT: load, send it again */
    bool readonly; /* the server is a replica now: a new connection */
    bool ask;      /* a chunk met ASK: to the node it names */
} route_run_t;

/* The pipeline: every chunk of [s, e) sent, at most RDL_RENEW_WINDOW
 * ahead of its reply, and every reply read and recorded (renew_result),
 * the reply of a SCRIPT LOAD appended first unless loaded.  0; or EIO (no
 * answer, replies may be left unread), an error of the SCRIPT LOAD
 * (rdl_reply_error's code, logged), ENOMEM; rr->reload, readonly, ask say
 * what the replies asked for. */
static int renew_pipelined(route_run_t *rr, bool loaded)
{
    rdlock_client_t *c = rr->c;
    renew_batch_t *b = rr->b;
    rdl_conn_t *conn = rr->conn;
    size_t start, n, argc, next, inflight = 0, e = rr->e;
    int rc = 0;

    /* next: the first chunk not sent; start: the first not answered. */
    for (next = start = rr->s; rc == 0 && start < e;) {
        redisReply *r;
        if (next < e && inflight < RDL_RENEW_WINDOW) {
            n = chunk_len(c, b, next, e);
            argc = renew_args(c, b, next, n, rr->ab);
            rc = rdl_conn_append_script(conn, c->scripts->renew, (int)n, (int)argc, rr->ab->argv, rr->ab->lens);
            next += n;
            inflight++;
            continue;
        }
        if ((rc = rdl_conn_read(conn, &r)) != 0)
            break;
        if (!loaded) { /* the SCRIPT LOAD's reply comes first */
            loaded = true;
            if (r->type == REDIS_REPLY_ERROR) {
                rc = rdl_reply_error(r);
                rdl_log(RDLOCK_LOG_ERROR, "watchdog: SCRIPT LOAD failed: %s", r->str ? r->str : "?");
            }
            freeReplyObject(r);
            continue;
        }
        n = chunk_len(c, b, start, e);
        switch (renew_result(c, conn, b, start, n, r)) {
        case 1: rr->reload = true; break;
        case 2: rr->readonly = true; break;
        case 3: rr->ask |= conn->redir.kind == RDL_CL_ASK && conn->redir.host[0] != '\0'; break;
        }
        freeReplyObject(r);
        start += n;
        inflight--;
    }
    return rc;
}

/* After NOSCRIPT: the script loaded again, and the chunks still without
 * an answer sent again, one at a time.  0, or the first error of the
 * SCRIPT LOAD or of a call (EIO...). */
static int renew_reloaded(route_run_t *rr)
{
    rdlock_client_t *c = rr->c;
    renew_batch_t *b = rr->b;
    size_t start, n, argc;
    int rc = rdl_conn_load(rr->conn, c->scripts->renew);

    for (start = rr->s; start < rr->e && rc == 0; start += n) {
        redisReply *r;
        n = chunk_len(c, b, start, rr->e);
        if (b->items[start].result != -1)
            continue; /* this chunk was answered */
        argc = renew_args(c, b, start, n, rr->ab);
        rc = rdl_conn_script(rr->conn, c->scripts->renew, (int)n, (int)argc, rr->ab->argv, rr->ab->lens, &r);
        if (rc == 0) {
            renew_result(c, rr->conn, b, start, n, r);
            freeReplyObject(r);
        }
    }
    return rc;
}

/* A slot half migrated: the holds already on the importing node are
 * renewed there now, with ASKING, chunk by chunk (rare).  What fails stays
 * unknown, retried next round; a connection to that node that failed is
 * dropped. */
static void renew_asked(route_run_t *rr)
{
    rdlock_client_t *c = rr->c;
    renew_batch_t *b = rr->b;
    rdl_conn_t *conn = rr->conn;
    renew_argbuf_t *ab = rr->ab;
    size_t start, n, argc;

    for (start = rr->s; start < rr->e; start += n) {
        char route[RDL_ROUTE_MAX];
        rdl_conn_t *to;
        redisReply *r = NULL;
        bool tofresh;
        n = chunk_len(c, b, start, rr->e);
        if (b->items[start].result != -1)
            continue;
        /* Where an ASK for this slot sent us: asked again, to be sure
         * which chunk it was about (cheap, and rare). */
        argc = renew_args(c, b, start, n, ab);
        if (rdl_conn_script(conn, c->scripts->renew, (int)n, (int)argc, ab->argv, ab->lens, &r) == 0) {
            renew_result(c, conn, b, start, n, r);
            freeReplyObject(r);
            continue;
        }
        if (conn->redir.kind != RDL_CL_ASK || conn->redir.host[0] == '\0')
            continue;
        snprintf(route, sizeof route, "%s:%d", conn->redir.host, conn->redir.port);
        if (wd_conn(c, route, &to, &tofresh) != 0)
            continue;
        to->asking = true;
        if (rdl_conn_script(to, c->scripts->renew, (int)n, (int)argc, ab->argv, ab->lens, &r) == 0) {
            renew_result(c, to, b, start, n, r);
            freeReplyObject(r);
        } else if (!rdl_conn_ok(to)) {
            wd_drop(c, to);
        }
    }
}

/* Run the unanswered holds of [s, e), all of one server, on the
 * watchdog's connection to it: pipelined renew scripts (mutex not held).
 * At most RDL_RENEW_WINDOW calls are ahead of their replies, so the
 * server starts on the first while the client formats the next, and the
 * output buffer stays small however many holds the round has (all of a
 * million holds' calls at once took ~100 bytes per hold).  Every
 * pipelined reply is read before anything else is sent, so replies
 * never pair with the wrong chunk; chunks that met NOSCRIPT are sent again
 * after a SCRIPT LOAD, chunks that met ASK to the node it names.  0, or
 * an error (EIO, ENOMEM, EACCES...): the connection is dropped, the holds
 * without an answer stay unknown. */
static int renew_route(rdlock_client_t *c, renew_batch_t *b, size_t s, size_t e, renew_argbuf_t *ab)
{
    route_run_t rr = { .c = c, .b = b, .s = s, .e = e, .ab = ab };
    bool fresh;
    int rc;

    if ((rc = wd_conn(c, b->routes[b->items[s].route], &rr.conn, &fresh)) != 0)
        return rc;
    /* Load once per connection, in the same pipeline as the first batch,
     * so a fresh connection costs no extra round trip. */
    if (!fresh || (rc = rdl_conn_append_load(rr.conn, c->scripts->renew)) == 0)
        rc = renew_pipelined(&rr, !fresh);
    if (rc == 0 && rr.readonly)
        rc = EIO; /* below: the connection is dropped; the caller retries on a new one */
    if (rc == 0 && rr.reload)
        rc = renew_reloaded(&rr);
    if (rc == 0 && rr.ask)
        renew_asked(&rr);
    if (rc != 0 || !rdl_conn_ok(rr.conn)) {
        /* Replies may be left unread: never reuse such a connection. */
        wd_drop(c, rr.conn);
        if (rc == 0)
            rc = EIO;
    }
    return rc;
}

static int item_order(const void *x, const void *y)
{
    const renew_item_t *a = x, *b = y;
    if (a->route != b->route)
        return a->route < b->route ? -1 : 1;
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

/* Where the step set renews by vote (exec.h: Redlock), the batch's
 * holds chunk by chunk on every server at once (mutex not held).  0, or
 * EIO (some hold's result unknown, retried), ENOMEM. */
static int renew_voted(rdlock_client_t *c, renew_batch_t *b, renew_argbuf_t *ab)
{
    int err = 0;
    size_t start, m;

    b->sent_at = rdl_now_ms();
    for (start = 0; start < b->n; start += m) {
        int res[RDL_RENEW_BATCH], rc;
        size_t argc, i;
        for (m = 0; start + m < b->n && m < RDL_RENEW_BATCH; m++)
            ;
        argc = renew_args(c, b, start, m, ab);
        rc = c->exec->renew(c, (int)m, (int)argc, ab->argv, ab->lens, res);
        if (rc == ENOMEM)
            return ENOMEM;
        for (i = 0; i < m; i++)
            b->items[start + i].result = res[i];
        if (rc != 0)
            err = rc;
    }
    return err;
}

/* Run the batch (mutex not held): the holds grouped by server (and slot),
 * each group on the watchdog's connection to its server.  Only holds whose
 * result is still unknown are sent (a second call retries the rest).
 * Returns 0, or the last group's error (its holds stay unknown). */
static int renew_send(rdlock_client_t *c, renew_batch_t *b)
{
    renew_argbuf_t *ab = NULL;
    size_t i, s, e;
    int rc = 0, err = 0;

    if (c->exec->renew != NULL) {
        ab = malloc(sizeof *ab);
        rc = ab == NULL ? ENOMEM : renew_voted(c, b, ab);
        free(ab);
        return rc;
    }
    /* Which server each hold is on now.  Routes are few (one, or the
     * masters of a cluster): a linear look-up. */
    for (i = 0; i < b->n; i++) {
        char route[RDL_ROUTE_MAX];
        int k;
        renew_item_t *it = &b->items[i];
        it->route = -1;
        if (it->result != -1)
            continue;
        if ((rc = rdl_topo_route(c, item_key(b, it), it->keylen, route, sizeof route)) != 0) {
            err = rc == EAGAIN ? EIO : rc; /* nobody serves it now: unknown, retried */
            continue;
        }
        for (k = 0; k < b->nroutes && strcmp(b->routes[k], route) != 0; k++)
            ;
        if (k == b->nroutes) {
            if (b->nroutes == b->caproutes) {
                int cap = b->caproutes ? b->caproutes * 2 : 4;
                char(*v)[RDL_ROUTE_MAX] = realloc(b->routes, (size_t)cap * sizeof *v);
                if (v == NULL) {
                    err = ENOMEM;
                    continue;
                }
                b->routes = v;
                b->caproutes = cap;
            }
            memcpy(b->routes[b->nroutes++], route, sizeof route);
        }
        it->route = k;
        it->slot = c->topo->sharded ? rdl_key_slot(item_key(b, it), it->keylen) : 0;
    }
    qsort(b->items, b->n, sizeof *b->items, item_order);
    if ((ab = malloc(sizeof *ab)) == NULL)
        return ENOMEM;
    b->sent_at = rdl_now_ms();
    for (s = 0; s < b->n; s = e) {
        for (e = s + 1; e < b->n && b->items[e].route == b->items[s].route; e++)
            ;
        if (b->items[s].route < 0)
            continue; /* answered before, or no route */
        if ((rc = renew_route(c, b, s, e, ab)) != 0)
            err = rc;
    }
    free(ab);
    return err;
}

/* Apply the replies (mutex held).  Holds released or replaced meanwhile
 * (serial mismatch) are left alone, and a hold with an unlock in flight is
 * never marked lost here: a release racing a renewal must not look like a
 * loss (the unlock reports a real one, ENOLCK). */
static void renew_apply(rdlock_client_t *c, renew_batch_t *b, long long now)
{
    size_t i;
    bool failed = false;
    for (i = 0; i < b->n; i++) {
        renew_item_t *it = &b->items[i];
        rdl_hold_t *h = rdl_hold_find(c, item_key(b, it), it->keylen, it->thread);
        if (h == NULL || h->serial != it->serial || h->lost)
            continue;
        if (it->result == 0) {
            h->renew_at = b->sent_at + rdl_lease_interval(&c->cfg, h->lease_ms);
            h->expires_at = b->sent_at + rdl_lease_validity(&c->cfg, h->lease_ms, (c->exec->caps & RDL_EXEC_DRIFT) != 0);
        } else if (it->result == 1 && h->releasing) {
            /* Released meanwhile, most likely: the unlock says. */
            h->renew_at = now + rdl_lease_interval(&c->cfg, h->lease_ms);
        } else if (it->result == 1) {
            rdl_log(RDLOCK_LOG_WARN, "lock %.*s: lease lost (expired, taken over or deleted)",
                    (int)h->namelen, rdl_hold_name(h));
            hold_lost(b, h);
        } else {
            failed = true;
            /* Try again soon, and while the lease still has time left;
             * hold_lost() comes when it runs out. */
            h->renew_at = now + backoff_ms(c->wdog.fails);
            if (h->expires_at > now && h->renew_at > now + (h->expires_at - now) / 2)
                h->renew_at = now + (h->expires_at - now) / 2;
        }
        if (!h->lost && (c->wdog.next == 0 || h->renew_at < c->wdog.next))
            c->wdog.next = h->renew_at;
    }
    c->wdog.fails = failed ? c->wdog.fails + 1 : 0;
}

/* Every watched hold is due now (mutex held): after a move to a new
 * master, whose copies of our holds date from before the failover.  The
 * renewal that finds one gone reports it lost, in this very round. */
void rdl_watchdog_renew_all_now(rdlock_client_t *c, long long now)
{
    size_t i;
    rdl_tnode_t *nd;
    RDL_TABLE_FOREACH(&c->holds, i, nd)
    {
        rdl_hold_t *h = (rdl_hold_t *)nd;
        if (h->watchdog && !h->lost && !h->renew_stopped && h->renew_at > now)
            h->renew_at = now;
    }
    c->wdog.next = now;
    c->wdog.fails = 0;
    c->wdog.retry_at = 0;
}

void rdl_watchdog_add(rdlock_client_t *c, const rdl_hold_t *hold)
{
    if (!hold->watchdog)
        return;
    if (c->wdog.next == 0 || hold->renew_at < c->wdog.next) {
        c->wdog.next = hold->renew_at;
        if (c->bg_running)
            rdl_wake(c->wake[1]); /* it may be asleep with a longer timeout */
    }
    if (c->bg_start(c) != 0)
        rdl_log(RDLOCK_LOG_ERROR, "cannot start the watchdog thread; lock %.*s will not be renewed",
                (int)hold->namelen, rdl_hold_name(hold));
}

rdl_wd_round_t *rdl_watchdog_collect(rdlock_client_t *c, long long now)
{
    rdl_wd_round_t *b;
    if (c->wdog.next == 0 || c->wdog.next > now || now < c->wdog.retry_at)
        return NULL;
    b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL; /* tried again next time round */
    renew_collect(c, now, b);
    return b;
}

int rdl_watchdog_send(rdlock_client_t *c, rdl_wd_round_t *b)
{
    int rc;
    if (b->n == 0)
        return 0;
    rc = renew_send(c, b);
    if (rc == EIO)
        /* Usually the connection died while idle (server restart, CLIENT
         * KILL, idle timeout): a fresh one, at once, before backing off.
         * Renewing twice is harmless. */
        rc = renew_send(c, b);
    if (rc != 0)
        rdl_log(c->wdog.fails == 0 ? RDLOCK_LOG_WARN : RDLOCK_LOG_DEBUG,
                "watchdog: renewal round failed (%s); retrying", rdlock_strerror(rc));
    return rc;
}

bool rdl_watchdog_sent(const rdl_wd_round_t *b)
{
    return b != NULL && b->n > 0;
}

void rdl_watchdog_apply(rdlock_client_t *c, rdl_wd_round_t *b, long long now)
{
    if (b->n == 0)
        return;
    renew_apply(c, b, now);
    /* The per-hold retry times already respect the leases. */
    c->wdog.retry_at = c->wdog.fails > 0 ? c->wdog.next : 0;
}

void rdl_watchdog_finish(rdl_wd_round_t *b)
{
    size_t i;
    if (b == NULL)
        return;
    for (i = 0; i < b->ncb; i++)
        b->cbs[i].fn(b->cbs[i].name, b->cbs[i].arg); /* on this thread, unlocked */
    batch_clear(b);
    free(b);
}

long long rdl_watchdog_timeout(const rdlock_client_t *c, long long now, long long timeout)
{
    if (c->wdog.next != 0)
        timeout = c->wdog.next - now;
    if (c->wdog.fails > 0 && c->wdog.retry_at - now > timeout)
        timeout = c->wdog.retry_at - now;
    return timeout;
}

void rdl_watchdog_close(rdlock_client_t *c)
{
    rdl_conn_t *conn;
    while ((conn = c->wdog.conns) != NULL) {
        c->wdog.conns = conn->next;
        rdl_conn_close(conn);
    }
}

void rdl_watchdog_after_fork(rdlock_client_t *c)
{
    rdl_watchdog_close(c);
    c->wdog.next = 0;
    c->wdog.fails = 0;
    c->wdog.retry_at = 0;
}
