/* call.c - one script call on a client's topology: a connection to the
 * server of the key (pooled, or new through the topology), the stamp, the
 * retries and redirections, and what they mean for the result (call.h). */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/pool.h"
#include "client/replicas.h"
#include "exec/call.h"
#include "topology/topology.h"

int rdl_client_conn_get(rdlock_client_t *c, const char *route, rdl_conn_t **out)
{
    unsigned gen;
    int rc;
    if ((*out = rdl_client_conn_idle(c, route)) != NULL)
        return 0;
    /* Read before connecting: a flush meanwhile wins, and rdl_client_conn_put then
     * closes this one instead of keeping it. */
    gen = __atomic_load_n(&c->pool_gen, __ATOMIC_RELAXED);
    if ((rc = rdl_topo_connect_route(c, route, out)) == 0)
        (*out)->gen = gen;
    return rc;
}

static void net_state(rdlock_client_t *c, bool down, const char *why)
{
    char where[300];
    bool was;
    RDL_LOCK(c);
    was = c->net_down;
    c->net_down = down;
    if (down)
        snprintf(c->last_error, sizeof c->last_error, "%s", why);
    RDL_UNLOCK(c);
    if (down && !was)
        rdl_log(RDLOCK_LOG_WARN, "%s: connection lost: %s", rdl_topology_where(&c->cfg, where, sizeof where),
                why);
    else if (!down && was)
        rdl_log(RDLOCK_LOG_INFO, "%s: connected", rdl_topology_where(&c->cfg, where, sizeof where));
}

/* The state of one script call across its attempts (rdl_client_script):
 * why the last attempt failed, where the next one goes, and the bounds of
 * the waits.  Never initialised whole: zeroing the buffers costs more than
 * the rest of the call on a fast path. */
typedef struct script_try {
    rdlock_client_t *c;
    const rdl_script_t *script;
    rdl_call_t *call;
    long long deadline;
    int redirects, busy;               /* redirections followed, "not now" answers */
    long long busy_since, busy_budget; /* the first "not now", and how long they are waited out */
    char why[128];                     /* the last failure: the log's and last_error's */
    char route[RDL_ROUTE_MAX];         /* this attempt's server */
    char ask_route[RDL_ROUTE_MAX];     /* an ASK's node, for the next attempt only */
} script_try_t;

/* What the attempt loop does after an attempt that got no success
 * (script_failed, script_busy). */
enum script_next {
    TRY_RETURN,  /* return the attempt's code: the server answered with an error */
    TRY_AGAIN,   /* at once, or after a wait of its own: not a retry */
    TRY_RETRY,   /* a retry: counted, after a backoff */
    TRY_GIVE_UP, /* stop: EIO, the connection reported lost */
    TRY_SEND     /* (script_want) go on: send the attempt */
};

/* Sleep pause ms, but never past deadline (monotonic ms, < 0 none): the
 * backoffs of rdl_client_script.  false (no sleep) if no time is left. */
static bool sleep_within(long long pause, long long deadline)
{
    long long now = rdl_now_ms();
    if (deadline >= 0 && now + pause > deadline)
        pause = deadline - now;
    if (pause <= 0)
        return false;
    rdl_sleep_ms(pause);
    return true;
}

/* The connection for this attempt: to the node an ASK named (ask), else to
 * the server of key, with that server's clock known for a stamped call.
 * 0 and *conn; EIO (none now, t->why says why: retried); or what cannot
 * heal by retrying: EACCES, EINVAL (db), ENOMEM, or another error of the
 * topology's route. */
static int script_conn(script_try_t *t, const char *key, size_t keylen, bool ask, rdl_conn_t **conn)
{
    rdlock_client_t *c = t->c;
    int rc;

    if (ask) {
        /* A slot half migrated: this request, once, to the node that
         * imports it, with ASKING. */
        memcpy(t->route, t->ask_route, strlen(t->ask_route) + 1);
        t->ask_route[0] = '\0';
    } else {
        rc = rdl_topo_route(c, key, keylen, t->route, sizeof t->route);
        if (rc == EAGAIN) {
            snprintf(t->why, sizeof t->why, "%s", rdl_conn_last_error());
            return EIO; /* nobody serves it now: wait and ask again */
        } else if (rc != 0 && rc != EIO) {
            return rc;
        } else if (rc == EIO) {
            snprintf(t->why, sizeof t->why, "%s", rdl_conn_last_error());
            return EIO;
        }
    }
    /* A new connection needs no probe: the script's own reply reports
     * NOAUTH. */
    rc = rdl_client_conn_get(c, t->route, conn);
    if (rc != 0 && rc != EIO)
        return rc; /* EACCES, EINVAL (db), ENOMEM: retrying won't help */
    if (rc == EIO) {
        snprintf(t->why, sizeof t->why, "%s", rdl_conn_last_error());
        return EIO;
    }
    if (t->call->stamp != NULL) {
        /* A stamped call needs the server's clock: once per server. */
        bool clock_ok = rdl_client_clock_known(c, (*conn)->route);
        if (!clock_ok && rdl_client_clock_sample(c, *conn) != 0) {
            snprintf(t->why, sizeof t->why, "%s", (*conn)->ctx->errstr[0] ? (*conn)->ctx->errstr : "TIME failed");
            rdl_conn_close(*conn);
            rdl_client_pool_flush(c);
            *conn = NULL;
            return EIO;
        }
    }
    return 0;
}

/* The server is alive and says "not now" (a slot being migrated answers
 * TRYAGAIN to every lock call until the move ends; a failover,
 * CLUSTERDOWN): waited out for as long as the retries of a dead server
 * would take, not for command_retries answers that come in microseconds.
 * TRY_AGAIN after a wait, TRY_RETRY once that time is spent, TRY_GIVE_UP
 * at the deadline. */
static enum script_next script_busy(script_try_t *t)
{
    long long pause;

    if (t->busy_since == 0)
        t->busy_since = rdl_now_ms();
    if (rdl_now_ms() - t->busy_since >= t->busy_budget)
        return TRY_RETRY;
    pause = 5LL << (t->busy < 5 ? t->busy : 5);
    t->busy++;
    if (!sleep_within(pause, t->deadline))
        return TRY_GIVE_UP;
    t->redirects = 0; /* an ASK then TRYAGAIN is one more wait, not a loop */
    return TRY_AGAIN;
}

/* An attempt sent at `sent` on conn failed with rc (not 0): conn goes back
 * to the pool or is closed, and the call learns what the failure means for
 * it.  Returns what the loop does next (enum script_next); with
 * TRY_RETURN, rc is the answer (the server's error: EACCES, ENOMEM, EINVAL
 * and the like from rdl_conn_script_wait). */
static enum script_next script_failed(script_try_t *t, rdl_conn_t *conn, int rc, long long sent)
{
    rdlock_client_t *c = t->c;
    rdl_call_t *call = t->call;

    if (rc == RDL_EREDIRECT) {
        /* Not run: the slot is served elsewhere.  Not a retry (no
         * backoff), but bounded: a map that keeps changing under us is an
         * error. */
        rdl_topo_redirected(c, conn);
        if (conn->redir.kind == RDL_CL_ASK && conn->redir.host[0] != '\0')
            snprintf(t->ask_route, sizeof t->ask_route, "%s:%d", conn->redir.host, conn->redir.port);
        rdl_client_conn_put(c, conn);
        if (++t->redirects > c->cfg.cluster_max_redirects) {
            snprintf(t->why, sizeof t->why, "more than %d redirections", c->cfg.cluster_max_redirects);
            rdl_log(RDLOCK_LOG_ERROR, "script %s: %s", t->script->name, t->why);
            return TRY_GIVE_UP;
        }
        return TRY_AGAIN;
    }
    if (rc == EROFS) {
        /* A replica now: every pooled connection leads there.  The script
         * did not write (a replica refuses), so a retry on a new
         * connection cannot double it. */
        snprintf(t->why, sizeof t->why, "server is a read-only replica");
        rdl_topo_redirected(c, conn);
        rdl_conn_close(conn);
        rdl_client_pool_flush(c);
        return TRY_RETRY;
    }
    if (rdl_conn_ok(conn)) {
        if (conn->redir.kind == RDL_CL_CLUSTERDOWN)
            rdl_topo_redirected(c, conn);
        rdl_client_conn_put(c, conn); /* the server answered with an error */
        if (rc != EAGAIN)
            return TRY_RETURN;
        snprintf(t->why, sizeof t->why, "server loading, busy, short of replicas or migrating the slot");
        return script_busy(t);
    }
    /* Sent, maybe run, but no answer: a retry may find the effect of this
     * attempt, and the attempt itself may yet arrive (until its stamp).  A
     * timeout (the server is alive but slow) most likely ran it; a closed
     * connection may mean a restart that lost everything. */
    call->maybe_ran = true;
    if (call->stamp != NULL && sent + c->cfg.command_timeout_ms > call->unsure_until)
        call->unsure_until = sent + c->cfg.command_timeout_ms;
    if (rdl_conn_timed_out(conn))
        call->ambiguous = true;
    snprintf(t->why, sizeof t->why, "%s", conn->ctx->errstr);
    rdl_conn_close(conn);
    rdl_client_pool_flush(c);
    return TRY_RETRY;
}

/* With call->confirm, how many replicas this attempt on *conn waits for
 * (rdl_client_wait_want: wait_replicas = all counts them on the
 * connection first).  TRY_SEND and *want; else the attempt is over before
 * it was sent, and conn is put back or closed: TRY_RETURN with *rc
 * (EACCES: INFO refused), TRY_RETRY (the connection was lost, the count
 * unreadable, or the server is a replica now). */
static enum script_next script_want(script_try_t *t, rdl_conn_t *conn, int *want, int *rc)
{
    rdlock_client_t *c = t->c;

    *want = 0;
    if (!t->call->confirm || c->cfg.wait_replicas == 0 || (*rc = rdl_client_wait_want(c, conn, want)) == 0)
        return TRY_SEND;
    if (*rc == EROFS)
        return script_failed(t, conn, EROFS, 0);
    if (*rc == EACCES) {
        rdl_client_conn_put(c, conn);
        return TRY_RETURN;
    }
    snprintf(t->why, sizeof t->why, "cannot count the replicas: %.90s",
             rdl_conn_ok(conn) ? "INFO replication unreadable, or too few sentinels answer" : conn->ctx->errstr);
    if (rdl_conn_ok(conn)) {
        rdl_client_conn_put(c, conn);
    } else {
        rdl_conn_close(conn);
        rdl_client_pool_flush(c);
    }
    return TRY_RETRY;
}

int rdl_client_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc,
                      const char *const *argv, const size_t *lens, long long deadline,
                      redisReply **reply, rdl_call_t *call)
{
    rdl_call_t local = { 0 };
    script_try_t t; /* not initialised whole: see script_try_t */
    int attempt, rc, replicas;
    /* Every script's first key is a lock key: it says which server. */
    const char *key = nkeys > 0 ? argv[0] : NULL;
    size_t keylen = key == NULL ? 0 : lens != NULL ? lens[0] : strlen(key);

    if (call == NULL)
        call = &local;
    call->maybe_ran = call->ambiguous = false;
    call->sent_at = -1;
    call->acked = -1;
    call->wanted = 0;
    call->unsure_until = 0;
    call->route[0] = '\0';
    t.c = c;
    t.script = script;
    t.call = call;
    t.deadline = deadline;
    t.redirects = t.busy = 0;
    t.busy_since = 0;
    t.busy_budget = (long long)c->cfg.command_timeout_ms * (c->cfg.command_retries + 1);
    memcpy(t.why, "no connection", sizeof "no connection");
    t.ask_route[0] = '\0';

    for (attempt = 0;; attempt++) {
        rdl_conn_t *conn = NULL;
        bool ask = t.ask_route[0] != '\0';
        enum script_next next;
        rc = script_conn(&t, key, keylen, ask, &conn);
        if (rc != 0 && rc != EIO)
            return rc;
        if (rc == 0 && (next = script_want(&t, conn, &replicas, &rc)) != TRY_SEND) {
            if (next == TRY_RETURN)
                return rc;
            rc = EIO; /* TRY_RETRY: nothing sent */
        }
        if (rc == 0) {
            long long sent = rdl_now_ms();
            if (!call->maybe_ran)
                call->sent_at = sent; /* else an earlier attempt may have acted */
            if (call->stamp != NULL)
                rdl_client_stamp(c, conn->route, call->stamp, sent);
            conn->asking = ask;
            rc = rdl_conn_script_wait(conn, script, nkeys, argc, argv, lens, replicas, c->cfg.wait_timeout_ms,
                                      reply, &call->acked);
            call->wanted = replicas;
            if (rc == 0) {
                rdl_client_wait_acked(c, conn, replicas, call->acked);
                call->answer_sent = sent;
                call->answer_at = rdl_now_ms();
                memcpy(call->route, conn->route, strlen(conn->route) + 1);
                rdl_client_conn_put(c, conn);
                net_state(c, false, NULL);
                return 0;
            }
            next = script_failed(&t, conn, rc, sent);
            if (next == TRY_RETURN)
                return rc;
            if (next == TRY_GIVE_UP)
                break;
            if (next == TRY_AGAIN) {
                attempt--;
                continue;
            }
        }
        if (attempt >= c->cfg.command_retries)
            break;
        if (!sleep_within(10LL << (attempt < 6 ? attempt : 6), deadline))
            break;
    }
    net_state(c, true, t.why);
    return EIO;
}
