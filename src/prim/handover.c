/* handover.c - waiting in BLPOP for a hand-over; see handover.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/pool.h"
#include "exec/call.h"
#include "prim/handover.h"
#include "proto/conn.h"
#include "proto/reply.h"
#include "proto/slotmap.h"
#include "topology/topology.h"

/* A grant item "<call>;<token>": 1 and the two numbers, or 0 (the "u"
 * item, or anything else: look again). */
static int item_parse(const redisReply *v, uint64_t *call, uint64_t *token)
{
    const char *p, *end;
    uint64_t a = 0, b = 0;
    if (v->type != REDIS_REPLY_STRING || v->len < 3)
        return 0;
    p = v->str;
    end = v->str + v->len;
    while (p < end && *p >= '0' && *p <= '9')
        a = a * 10 + (uint64_t)(*p++ - '0');
    if (p == v->str || p >= end || *p++ != ';' || p == end)
        return 0;
    while (p < end && *p >= '0' && *p <= '9')
        b = b * 10 + (uint64_t)(*p++ - '0');
    if (p != end)
        return 0;
    *call = a;
    *token = b;
    return 1;
}

/* The BLPOP's answer was an error: what the caller does next. */
static int refused(rdlock_client_t *c, const rdl_handover_t *w, rdl_conn_t *conn, const redisReply *r)
{
    int cls = rdl_cluster_error(r);
    if (rdl_reply_readonly(r)) {
        /* A deposed master: every pooled connection leads there. */
        rdl_log(RDLOCK_LOG_WARN, "%.*s: hand-over wait: %s; reconnecting", (int)w->keylen, w->key, r->str);
        rdl_topo_redirected(c, conn);
        rdl_client_pool_flush(c);
        return EIO;
    }
    if (cls != RDL_CL_NONE || rdl_reply_transient(r)) {
        /* Another node serves the slot, or this one cannot now: the next
         * look follows the redirection or waits. */
        rdl_log(RDLOCK_LOG_DEBUG, "%.*s: hand-over wait: %s", (int)w->keylen, w->key, r->str);
        return EIO;
    }
    rdl_log(RDLOCK_LOG_DEBUG, "%.*s: hand-over wait refused: %s", (int)w->keylen, w->key, r->str);
    return ENOTSUP;
}

/* renew.lua's arguments for this call's hold: its key, then owner, lease,
 * '' (keep the count) and call. */
typedef struct renew_args {
    const char *v[5];
    size_t l[5];
} renew_args_t;

static void renew_args(const rdl_handover_t *w, renew_args_t *a)
{
    const char *v[5] = { w->key, w->owner, w->lease, "", w->call };
    size_t i;
    for (i = 0; i < 5; i++) {
        a->v[i] = v[i];
        a->l[i] = i == 0 ? w->keylen : strlen(v[i]);
    }
}

/* The renewal's answer (renew.lua: the holds that are gone): 0 renewed,
 * EAGAIN gone, EIO no answer.  A server that lost the script (NOSCRIPT)
 * gets it again, once, on the same connection. */
static int renewed(rdlock_client_t *c, const renew_args_t *ra, rdl_conn_t *conn, redisReply *r)
{
    redisReply *again = NULL;
    int rc = 0;
    if (rdl_reply_noscript(r)) {
        rc = rdl_conn_script(conn, c->scripts->renew, 1, 5, ra->v, ra->l, &again);
        if (rc != 0)
            return rc == EIO ? EIO : EAGAIN;
        r = again;
    }
    rc = r->type == REDIS_REPLY_ARRAY && r->elements == 0 ? 0 : EAGAIN;
    if (again != NULL)
        freeReplyObject(again);
    return rc;
}

/* One wait on conn; see rdl_handover_wait.  *drop: the connection must
 * not be reused. */
static int listen_on(rdlock_client_t *c, const rdl_handover_t *w, rdl_conn_t *conn, long long until, uint64_t *token,
                     long long *sent_at, bool *drop)
{
    const char *argv[3] = { "BLPOP", w->list, NULL };
    size_t lens[3] = { 5, w->listlen, 0 };
    renew_args_t ra;
    uint64_t call = strtoull(w->call, NULL, 10);
    char secs[32];

    argv[2] = secs;
    renew_args(w, &ra);
    for (;;) {
        long long ms = until - rdl_now_ms(), sent;
        redisReply *r = NULL, *rr = NULL;
        uint64_t gcall, gtoken;
        int rc;
        if (ms <= 0)
            return EAGAIN;
        /* BLPOP's timeout in seconds, with milliseconds (Redis >= 6). */
        lens[2] = rdl_fmt_u64(secs, (unsigned long long)(ms / 1000));
        secs[lens[2]++] = '.';
        secs[lens[2]++] = (char)('0' + ms / 100 % 10);
        secs[lens[2]++] = (char)('0' + ms / 10 % 10);
        secs[lens[2]++] = (char)('0' + ms % 10);
        secs[lens[2]] = '\0';
        /* The renewal behind the BLPOP runs when the pop answers: a grant
         * then arrives with its lease started, and a timed-out wait only
         * costs the renewal a look at our (absent) field. */
        sent = rdl_now_ms();
        if ((rc = rdl_conn_append_command(conn, 3, argv, lens)) != 0 ||
            (rc = rdl_conn_append_script(conn, c->scripts->renew, 1, 5, ra.v, ra.l)) != 0 ||
            (rc = rdl_conn_set_timeout(conn, (int)ms + c->cfg.command_timeout_ms)) != 0 ||
            (rc = rdl_conn_read(conn, &r)) != 0 || (rc = rdl_conn_set_timeout(conn, c->cfg.command_timeout_ms)) != 0 ||
            (rc = rdl_conn_read(conn, &rr)) != 0) {
            /* No answer: the server may still hold our BLPOP, and would
             * hand it a grant that nobody reads.  Closing the connection
             * ends it there; such a grant is claimed by the next look while
             * its window lasts (acquire.lua). */
            rdl_log(RDLOCK_LOG_DEBUG, "%.*s: no answer to the hand-over wait: %s", (int)w->keylen, w->key,
                    conn->ctx->errstr[0] ? conn->ctx->errstr : "failed");
            if (r != NULL)
                freeReplyObject(r);
            *drop = true;
            return EIO;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && item_parse(r->element[1], &gcall, &gtoken)) {
            freeReplyObject(r);
            if (gcall != call || gtoken <= w->floor) {
                freeReplyObject(rr);
                continue; /* stale: an older call's grant, or a resurrected copy */
            }
            rc = renewed(c, &ra, conn, rr);
            freeReplyObject(rr);
            if (rc == EIO)
                *drop = true;
            if (rc != 0)
                return rc;
            *token = gtoken;
            *sent_at = sent;
            return 0;
        }
        freeReplyObject(rr);
        rc = r->type == REDIS_REPLY_ERROR ? refused(c, w, conn, r) : EAGAIN; /* nil: time up; "u" */
        freeReplyObject(r);
        return rc;
    }
}

int rdl_handover_wait(rdlock_client_t *c, const rdl_handover_t *w, long long until, uint64_t *token,
                      long long *sent_at)
{
    char route[RDL_ROUTE_MAX];
    rdl_conn_t *conn;
    bool drop = false;
    int rc;

    RDL_LOCK(c);
    if (c->listening >= RDL_LISTEN_MAX) {
        RDL_UNLOCK(c);
        return ENOTSUP;
    }
    c->listening++;
    RDL_UNLOCK(c);
    rc = rdl_topo_route(c, w->key, w->keylen, route, sizeof route) != 0 ? EIO : 0;
    if (rc == 0 && rdl_client_conn_get(c, route, &conn) != 0)
        rc = EIO;
    if (rc == 0) {
        rc = listen_on(c, w, conn, until, token, sent_at, &drop);
        if (drop || !rdl_conn_ok(conn))
            rdl_conn_close(conn);
        else
            rdl_client_conn_put(c, conn);
    }
    RDL_LOCK(c);
    c->listening--;
    RDL_UNLOCK(c);
    return rc;
}
