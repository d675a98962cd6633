/* quorum.c - one request to every Redlock master at once; see quorum.h.
 *
 * hiredis 0.14's contexts here are blocking, with a read timeout; the
 * replies are read without blocking all the same: each context's request
 * is written out whole first (small: it fits the socket buffer), then
 * poll() says which descriptor has bytes, redisBufferRead() takes them
 * (one read(2), which does not block on a readable socket) and
 * redisGetReplyFromReader() parses what is complete. */
#include "rdl_build.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/pool.h"
#include "proto/reply.h"
#include "topology/quorum.h"
#include "topology/topology.h"

#include <stdio.h>

void rdl_quorum_init(rdlock_client_t *c, rdl_qcall_t *q, const rdl_script_t *script, int nkeys, int argc,
                     const char *const *argv, const size_t *lens)
{
    memset(q, 0, sizeof *q);
    q->script = script;
    q->nkeys = nkeys;
    q->argc = argc;
    for (int k = 0; k < rdl_redlock_count(c); k++) {
        q->argv[k] = argv;
        q->lens[k] = lens;
    }
}

int rdl_quorum_argv(rdl_qcall_t *q, int nmasters, const char *const *argv, const size_t *lens, int argc,
                    int stamp_arg, size_t stamp_off, char **buf)
{
    size_t al = lens[stamp_arg], per = (size_t)argc * (sizeof(char *) + sizeof(size_t)) + al;
    per = (per + 15) & ~(size_t)15; /* each master's pointers aligned */
    char *b = malloc(per * (size_t)nmasters + 16);
    *buf = b;
    if (b == NULL)
        return ENOMEM;
    for (int k = 0; k < nmasters; k++) {
        const char **v = (const char **)(void *)(b + per * (size_t)k);
        size_t *l = (size_t *)(void *)(v + argc);
        char *copy = (char *)(l + argc);
        memcpy(v, argv, (size_t)argc * sizeof *v);
        memcpy(l, lens, (size_t)argc * sizeof *l);
        memcpy(copy, argv[stamp_arg], al);
        v[stamp_arg] = copy;
        q->argv[k] = v;
        q->lens[k] = l;
        q->stamp[k] = copy + stamp_off;
    }
    return 0;
}

/* A connection to master k: pooled, or new (not ready yet).  NULL if it
 * cannot be had now (master k is then marked down). */
static rdl_conn_t *conn_of(rdlock_client_t *c, int k, bool *denied)
{
    rdl_conn_t *conn = rdl_client_conn_idle(c, rdl_redlock_route(c, k));
    unsigned gen;
    int rc;
    if (conn != NULL)
        return conn;
    gen = __atomic_load_n(&c->pool_gen, __ATOMIC_RELAXED);
    if ((rc = rdl_redlock_open(c, k, &conn)) != 0) {
        *denied |= rc == EACCES;
        return NULL;
    }
    conn->gen = gen;
    return conn;
}

/* Connections to the masters in want: pooled ones, and the others opened
 * all at once (topology_redlock.c), so that a master that does not
 * answer its SYN costs the grace, not its connect timeout.  conns[k] NULL
 * for those not had. */
static void conns_of(rdlock_client_t *c, const bool *want, rdl_conn_t **conns, bool *denied)
{
    rdl_conn_t *fresh[RDL_REDLOCK_MAX];
    bool open[RDL_REDLOCK_MAX] = { false };
    int n = rdl_redlock_count(c), have = 0, missing = 0, k;
    unsigned gen;

    for (k = 0; k < n; k++) {
        conns[k] = NULL;
        if (!want[k])
            continue;
        if ((conns[k] = rdl_client_conn_idle(c, rdl_redlock_route(c, k))) != NULL) {
            have++;
        } else {
            open[k] = true;
            missing++;
        }
    }
    if (missing == 0)
        return;
    gen = __atomic_load_n(&c->pool_gen, __ATOMIC_RELAXED);
    if (rdl_redlock_open_many(c, open, rdl_redlock_majority(c) - have, fresh, denied) != 0)
        return;
    for (k = 0; k < n; k++)
        if (open[k] && fresh[k] != NULL) {
            fresh[k]->gen = gen;
            conns[k] = fresh[k];
        }
}

/* One round of requests to several masters at once: what each was sent,
 * and what came back. */
#define ROUND_MAX_REPLIES 4 /* AUTH, SELECT, INFO, TIME */
typedef struct round {
    rdl_conn_t *conn[RDL_REDLOCK_MAX]; /* NULL: not in this round */
    int expect[RDL_REDLOCK_MAX];       /* replies still to come */
    int ngot[RDL_REDLOCK_MAX];
    redisReply *got[RDL_REDLOCK_MAX][ROUND_MAX_REPLIES];
    long long answer_at[RDL_REDLOCK_MAX];
    bool broken[RDL_REDLOCK_MAX];      /* its connection failed */
} round_t;

static void round_free(round_t *rd, int n)
{
    for (int k = 0; k < n; k++)
        for (int i = 0; i < rd->ngot[k]; i++)
            freeReplyObject(rd->got[k][i]);
    memset(rd, 0, sizeof *rd);
}

/* Write out what every connection of the round has appended, then read
 * what comes until each has its replies, or until command_timeout_ms
 * after start; once `maj` masters have all theirs, the others get only
 * the grace (quorum.h).  Masters without all their replies at the end
 * are left with expect > 0 (their connections must not be reused). */
static void round_run(rdlock_client_t *c, round_t *rd, int n, int maj, long long start)
{
    struct pollfd pfd[RDL_REDLOCK_MAX];
    int idx[RDL_REDLOCK_MAX], pending = 0, answered = 0, k;
    long long until = start + c->cfg.command_timeout_ms, grace_until = -1, now;

    for (k = 0; k < n; k++) {
        int done = 0;
        if (rd->conn[k] == NULL || rd->expect[k] == 0)
            continue;
        while (!done)
            if (redisBufferWrite(rd->conn[k]->ctx, &done) != REDIS_OK)
                break;
        if (!done) {
            rd->broken[k] = true; /* maybe half written: it may act */
            continue;
        }
        pending++;
    }
    while (pending > 0) {
        int np = 0;
        now = rdl_now_ms();
        if (grace_until < 0 && answered >= maj) {
            grace_until = rdl_quorum_grace_end(start, now, 0);
            if (grace_until < until)
                until = grace_until;
        }
        if (now >= until)
            break;
        for (k = 0; k < n; k++)
            if (rd->conn[k] != NULL && rd->expect[k] > 0 && !rd->broken[k]) {
                pfd[np].fd = rd->conn[k]->ctx->fd;
                pfd[np].events = POLLIN;
                pfd[np].revents = 0;
                idx[np++] = k;
            }
        if (poll(pfd, (nfds_t)np, (int)(until - now)) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < np; i++) {
            void *v = NULL;
            k = idx[i];
            if (pfd[i].revents == 0)
                continue;
            if (redisBufferRead(rd->conn[k]->ctx) != REDIS_OK) {
                rd->broken[k] = true;
                pending--;
                continue;
            }
            while (rd->expect[k] > 0) {
                if (redisGetReplyFromReader(rd->conn[k]->ctx, &v) != REDIS_OK) {
                    rd->broken[k] = true;
                    break;
                }
                if (v == NULL)
                    break;
                rd->got[k][rd->ngot[k]++] = v;
                rd->expect[k]--;
                v = NULL;
            }
            if (rd->broken[k] || rd->expect[k] == 0) {
                pending--;
                if (!rd->broken[k]) {
                    rd->answer_at[k] = rdl_now_ms();
                    answered++;
                }
            }
        }
    }
}

/* The first questions to a new connection, appended: how long the master
 * has run, and its clock.  0 or EIO. */
static int setup_append(rdlock_client_t *c, rdl_conn_t *conn)
{
    if (conn->login > 0 && rdl_conn_append_login(&c->cfg, conn) != 0)
        return EIO;
    if (redisAppendCommand(conn->ctx, "INFO server") != REDIS_OK || redisAppendCommand(conn->ctx, "TIME") != REDIS_OK)
        return EIO;
    return 0;
}

/* Their answers: 0 (conn ready), EACCES, or EIO. */
static int setup_apply(rdlock_client_t *c, int k, rdl_conn_t *conn, const round_t *rd)
{
    long long up = 0, ms = 0;
    char run_id[48];
    int l = conn->login, rc;
    /* The deferred AUTH and SELECT first (their order: conn.c). */
    for (int i = 0; i < l; i++) {
        const char *what = i == 0 && c->cfg.password != NULL ? "AUTH" : "SELECT";
        if ((rc = rdl_conn_login_reply(rd->got[k][i], what, conn)) != 0)
            return rc == EINVAL ? EIO : rc;
    }
    conn->login = 0;
    rc = rdl_reply_info_server(rd->got[k][l], &up, run_id, sizeof run_id);
    if (rc == EACCES) {
        rdl_log(RDLOCK_LOG_ERROR, "redlock master %s: %s", conn->route, rd->got[k][l]->str);
        return EACCES;
    }
    if (rc != 0 || rdl_reply_time(rd->got[k][l + 1], &ms) != 0) {
        rdl_conn_set_last_error("%s: unexpected answer to INFO or TIME", conn->route);
        return EIO;
    }
    rdl_redlock_seen(c, k, up, run_id);
    rdl_client_clock(c, conn->route, ms, rd->answer_at[k]);
    conn->ready = true;
    return 0;
}

/* Make ready the connections in conns that need it (not ready, or their
 * master's clock is needed and unknown: want_clock), all at once.  The
 * ones that fail are closed and taken out (NULL).  Returns 0, or EACCES
 * if a master refused us. */
static int setup_round(rdlock_client_t *c, rdl_conn_t **conns, const bool *want_clock)
{
    int n = rdl_redlock_count(c), k, rc = 0, need = 0, ready = 0;
    round_t rd;
    memset(&rd, 0, sizeof rd);
    for (k = 0; k < n; k++) {
        if (conns[k] == NULL)
            continue;
        if (conns[k]->ready && !(want_clock[k] && !rdl_client_clock_known(c, conns[k]->route))) {
            ready++;
            continue;
        }
        if (setup_append(c, conns[k]) != 0) {
            rdl_conn_close(conns[k]);
            conns[k] = NULL;
            rdl_redlock_result(c, k, false);
            continue;
        }
        rd.conn[k] = conns[k];
        rd.expect[k] = 2 + conns[k]->login;
        need++;
    }
    if (need == 0)
        return 0;
    /* The masters ready already count toward the majority after which
     * the slow ones get only the grace. */
    round_run(c, &rd, n, rdl_redlock_majority(c) - ready, rdl_now_ms());
    for (k = 0; k < n; k++) {
        int r;
        if (rd.conn[k] == NULL)
            continue;
        r = rd.expect[k] == 0 && !rd.broken[k] ? setup_apply(c, k, conns[k], &rd) : EIO;
        if (r != 0) {
            if (r == EIO && rd.expect[k] > 0)
                rdl_conn_set_last_error("%s: no answer", conns[k]->route);
            rdl_conn_close(conns[k]);
            conns[k] = NULL;
            rdl_redlock_result(c, k, r != EIO);
            if (r == EACCES)
                rc = EACCES;
        }
    }
    round_free(&rd, n);
    return rc;
}

int rdl_quorum_connect(rdlock_client_t *c, rdl_conn_t **out)
{
    rdl_conn_t *conns[RDL_REDLOCK_MAX] = { 0 };
    bool want[RDL_REDLOCK_MAX] = { false };
    int n = rdl_redlock_count(c), k, rc;
    bool open[RDL_REDLOCK_MAX] = { false };
    long long now = rdl_now_ms();
    *out = NULL;
    bool denied = false;
    for (k = 0; k < n; k++) {
        want[k] = true;
        open[k] = rdl_redlock_up(c, k, now);
    }
    conns_of(c, open, conns, &denied);
    rc = setup_round(c, conns, want);
    for (k = 0; k < n; k++) {
        if (conns[k] == NULL)
            continue;
        if (*out == NULL && rc == 0)
            *out = conns[k];
        else
            rdl_client_conn_put(c, conns[k]);
    }
    if (rc != 0)
        return rc;
    if (*out == NULL) {
        if (denied)
            return EACCES; /* refused by some, unreachable the others */
        rdl_conn_set_last_error("no redlock master answers");
        return EIO;
    }
    return 0;
}

int rdl_quorum_conn(rdlock_client_t *c, int k, rdl_conn_t **out)
{
    rdl_conn_t *conns[RDL_REDLOCK_MAX] = { 0 };
    bool want[RDL_REDLOCK_MAX] = { false }, denied = false;
    int rc;

    *out = NULL;
    if ((conns[k] = conn_of(c, k, &denied)) == NULL)
        return denied ? EACCES : EIO;
    want[k] = true;
    rc = setup_round(c, conns, want);
    if (conns[k] == NULL)
        return rc == EACCES ? EACCES : EIO;
    *out = conns[k];
    return 0;
}

/* Append q's request on every connection in conns, each stamped as it
 * goes (q->sent_at: when the first went out).  A connection that cannot
 * take it is closed and taken out (nothing went out); the others join rd,
 * each expecting one reply. */
static void exchange_send(rdlock_client_t *c, rdl_qcall_t *q, rdl_conn_t **conns, round_t *rd)
{
    q->sent_at = rdl_now_ms();
    for (int k = 0; k < q->n; k++) {
        rdl_qans_t *a = &q->ans[k];
        if (conns[k] == NULL)
            continue;
        a->votes = rdl_redlock_votes(c, k, q->sent_at);
        a->sent_at = rdl_now_ms();
        if (q->stamp[k] != NULL)
            rdl_client_stamp(c, conns[k]->route, q->stamp[k], a->sent_at);
        if (rdl_conn_append_script(conns[k], q->script, q->nkeys, q->argc, q->argv[k], q->lens[k]) != 0) {
            rdl_conn_close(conns[k]);
            conns[k] = NULL;
            continue; /* nothing went out */
        }
        rd->conn[k] = conns[k];
        rd->expect[k] = 1;
    }
}

/* The master lost its script cache (restarted; master k answered
 * NOSCRIPT on conn): loaded and run again on it alone (conn.c falls back
 * to EVAL).  q->ans[k] says how that went: rc 0 and its answer, ENOTCONN
 * (not run: conn still usable), or EIO (sent, no answer: it may act). */
static void exchange_rerun(rdlock_client_t *c, rdl_qcall_t *q, int k, rdl_conn_t *conn)
{
    rdl_qans_t *a = &q->ans[k];
    redisReply *r2 = NULL;

    freeReplyObject(a->r);
    a->r = NULL;
    a->sent_at = rdl_now_ms();
    if (q->stamp[k] != NULL)
        rdl_client_stamp(c, conn->route, q->stamp[k], a->sent_at);
    if (rdl_conn_script(conn, q->script, q->nkeys, q->argc, q->argv[k], q->lens[k], &r2) == 0) {
        a->r = r2;
        a->answer_at = rdl_now_ms();
    } else {
        a->rc = rdl_conn_ok(conn) ? ENOTCONN : EIO;
        if (a->rc == EIO && q->stamp[k] != NULL && a->sent_at + c->cfg.command_timeout_ms > q->unsure_until)
            q->unsure_until = a->sent_at + c->cfg.command_timeout_ms;
    }
}

/* What master k, sent q's request in rd, made of it, into q->ans[k]: its
 * answer (rc 0; the reply taken out of rd), or EIO (no answer: its
 * connection closed and taken out of conns, the master marked down). */
static void exchange_answer(rdlock_client_t *c, rdl_qcall_t *q, int k, rdl_conn_t **conns, round_t *rd)
{
    rdl_qans_t *a = &q->ans[k];

    if (rd->expect[k] > 0 || rd->broken[k]) {
        /* Sent, unanswered: it may still act (a stamped one until its
         * stamp), and its reply may yet come on this connection, which is
         * never reused. */
        a->rc = EIO;
        rdl_conn_close(conns[k]);
        conns[k] = NULL;
        rdl_redlock_result(c, k, false);
        if (q->stamp[k] != NULL && a->sent_at + c->cfg.command_timeout_ms > q->unsure_until)
            q->unsure_until = a->sent_at + c->cfg.command_timeout_ms;
        return;
    }
    a->rc = 0;
    a->r = rd->got[k][0];
    if (a->r->type == REDIS_REPLY_ERROR && rdl_reply_error(a->r) == EACCES)
        q->denied = true;
    rd->got[k][0] = NULL;
    rd->ngot[k] = 0;
    a->answer_at = rd->answer_at[k];
    rdl_redlock_result(c, k, true);
    if (rdl_reply_noscript(a->r))
        exchange_rerun(c, q, k, conns[k]);
}

int rdl_quorum_exchange(rdlock_client_t *c, rdl_qcall_t *q)
{
    rdl_conn_t *conns[RDL_REDLOCK_MAX] = { 0 };
    bool want[RDL_REDLOCK_MAX] = { false }, open[RDL_REDLOCK_MAX] = { false };
    round_t rd;
    int n = rdl_redlock_count(c), maj = rdl_redlock_majority(c), k;
    long long now = rdl_now_ms();
    rdl_nosigpipe_t st;

    q->n = n;
    q->unsure_until = 0;
    q->denied = false;
    memset(&rd, 0, sizeof rd);
    rdl_nosigpipe_enter(&st);
    for (k = 0; k < n; k++) {
        memset(&q->ans[k], 0, sizeof q->ans[k]);
        q->ans[k].rc = ENOTCONN;
        want[k] = q->stamp[k] != NULL;
        open[k] = !q->skip[k] && (q->force || rdl_redlock_up(c, k, now));
    }
    conns_of(c, open, conns, &q->denied);
    /* New connections first learn their master's uptime and clock (a
     * stamped request needs the clock), all masters at once. */
    if (setup_round(c, conns, want) == EACCES)
        q->denied = true;

    exchange_send(c, q, conns, &rd);
    round_run(c, &rd, n, maj, q->sent_at);
    for (k = 0; k < n; k++)
        if (rd.conn[k] != NULL)
            exchange_answer(c, q, k, conns, &rd);
    for (k = 0; k < n; k++) {
        if (conns[k] == NULL)
            continue;
        if (rdl_conn_ok(conns[k]))
            rdl_client_conn_put(c, conns[k]);
        else
            rdl_conn_close(conns[k]);
    }
    rdl_nosigpipe_leave(&st);
    round_free(&rd, n);
    return 0;
}

void rdl_quorum_free(rdl_qcall_t *q)
{
    for (int k = 0; k < q->n; k++) {
        if (q->ans[k].r != NULL)
            freeReplyObject(q->ans[k].r);
        q->ans[k].r = NULL;
    }
}
