/* handover.c - waiting in BLPOP for a hand-over; see handover.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "conn.h"
#include "handover.h"
#include "log.h"
#include "timeutil.h"
#include "topology.h"

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

static int listen_on(rdlock_client_t *c, const char *key, size_t keylen, const char *list, size_t listlen,
                     uint64_t call, long long until, uint64_t *token);

int rdl_handover_wait(rdlock_client_t *c, const char *key, size_t keylen, const char *list, size_t listlen,
                      uint64_t call, long long until, uint64_t *token)
{
    int rc;

    RDL_LOCK(c);
    if (c->listening >= RDL_LISTEN_MAX) {
        RDL_UNLOCK(c);
        return ENOTSUP;
    }
    c->listening++;
    RDL_UNLOCK(c);
    rc = listen_on(c, key, keylen, list, listlen, call, until, token);
    RDL_LOCK(c);
    c->listening--;
    RDL_UNLOCK(c);
    return rc;
}

static int listen_on(rdlock_client_t *c, const char *key, size_t keylen, const char *list, size_t listlen,
                     uint64_t call, long long until, uint64_t *token)
{
    char route[RDL_ROUTE_MAX], secs[32];
    const char *argv[3] = { "BLPOP", list, secs };
    size_t lens[3] = { 5, listlen, 0 };
    rdl_conn_t *conn;
    int rc;

    if (rdl_topo_route(c, key, keylen, route, sizeof route) != 0)
        return EIO;
    if ((conn = rdl_client_conn_idle(c, route)) == NULL) {
        unsigned gen = __atomic_load_n(&c->pool_gen, __ATOMIC_RELAXED);
        if (rdl_topo_connect_route(c, route, &conn) != 0)
            return EIO;
        conn->gen = gen; /* read before connecting: a flush meanwhile wins */
    }
    for (;;) {
        long long ms = until - rdl_now_ms();
        redisReply *r;
        uint64_t gcall, gtoken;
        if (ms <= 0) {
            rc = EAGAIN;
            break;
        }
        /* BLPOP's timeout in seconds, with milliseconds (Redis >= 6). */
        lens[2] = rdl_fmt_u64(secs, (unsigned long long)(ms / 1000));
        secs[lens[2]++] = '.';
        secs[lens[2]++] = (char)('0' + ms / 100 % 10);
        secs[lens[2]++] = (char)('0' + ms / 10 % 10);
        secs[lens[2]++] = (char)('0' + ms % 10);
        secs[lens[2]] = '\0';
        rc = rdl_conn_blocking(conn, 3, argv, lens, (int)ms + c->cfg.command_timeout_ms, c->cfg.command_timeout_ms,
                               &r);
        if (rc != 0) {
            /* No answer: the server may still hold our BLPOP, and would
             * hand it a grant that nobody reads.  Closing the connection
             * ends it there; such a lost grant is claimed by the next look
             * while its window lasts (acquire.lua). */
            rdl_log(RDLOCK_LOG_DEBUG, "%.*s: no answer to the hand-over wait: %s", (int)keylen, key,
                    conn->ctx->errstr[0] ? conn->ctx->errstr : "failed");
            rdl_conn_close(conn);
            return EIO;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && item_parse(r->element[1], &gcall, &gtoken)) {
            freeReplyObject(r);
            if (gcall != call)
                continue; /* an older call's grant, which lapsed: the next */
            *token = gtoken;
            rc = 0;
            break;
        }
        rc = EAGAIN; /* timed out (nil), or "look again" */
        if (r->type == REDIS_REPLY_ERROR) {
            /* Refused (an ACL without BLPOP, a slot served elsewhere): the
             * caller waits the other way. */
            rdl_log(RDLOCK_LOG_DEBUG, "%.*s: hand-over wait refused: %s", (int)keylen, key, r->str);
            rc = ENOTSUP;
        }
        freeReplyObject(r);
        break;
    }
    rdl_client_conn_put(c, conn);
    return rc;
}
