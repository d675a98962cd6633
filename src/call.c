/* call.c - one script call on a client's topology: a connection to the
 * server of the key (pooled, or new through the topology), the stamp, the
 * retries and redirections, and what they mean for the result (call.h). */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "call.h"
#include "client.h"
#include "clock.h"
#include "log.h"
#include "pool.h"
#include "timeutil.h"
#include "topology.h"

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

int rdl_client_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc,
                      const char *const *argv, const size_t *lens, long long deadline,
                      redisReply **reply, rdl_call_t *call)
{
    rdl_call_t local = { 0 };
    int attempt, rc, replicas, redirects = 0, busy = 0;
    long long busy_since = 0, busy_budget = (long long)c->cfg.command_timeout_ms * (c->cfg.command_retries + 1);
    /* Not initialised whole: zeroing them costs more than the rest of
     * this function on a fast path. */
    char why[128], route[RDL_ROUTE_MAX], ask_route[RDL_ROUTE_MAX];
    /* Every script's first key is a lock key: it says which server. */
    const char *key = nkeys > 0 ? argv[0] : NULL;
    size_t keylen = key == NULL ? 0 : lens != NULL ? lens[0] : strlen(key);
    bool clock_ok;

    if (call == NULL)
        call = &local;
    call->maybe_ran = call->ambiguous = false;
    call->sent_at = -1;
    call->acked = -1;
    call->unsure_until = 0;
    call->route[0] = '\0';
    memcpy(why, "no connection", sizeof "no connection");
    ask_route[0] = '\0';
    replicas = call->confirm ? c->cfg.wait_replicas : 0;

    for (attempt = 0;; attempt++) {
        rdl_conn_t *conn = NULL;
        bool ask = ask_route[0] != '\0';
        if (ask) {
            /* A slot half migrated: this request, once, to the node that
             * imports it, with ASKING. */
            memcpy(route, ask_route, strlen(ask_route) + 1);
            ask_route[0] = '\0';
            rc = 0;
        } else {
            rc = rdl_topo_route(c, key, keylen, route, sizeof route);
            if (rc == EAGAIN) {
                snprintf(why, sizeof why, "%s", rdl_conn_last_error());
                rc = EIO; /* nobody serves it now: wait and ask again */
            } else if (rc != 0 && rc != EIO) {
                return rc;
            } else if (rc == EIO) {
                snprintf(why, sizeof why, "%s", rdl_conn_last_error());
            }
        }
        if (rc == 0) {
            /* A new connection needs no probe: the script's own reply
             * reports NOAUTH. */
            rc = rdl_client_conn_get(c, route, &conn);
            if (rc != 0 && rc != EIO)
                return rc; /* EACCES, EINVAL (db), ENOMEM: retrying won't help */
            if (rc == EIO)
                snprintf(why, sizeof why, "%s", rdl_conn_last_error());
        }
        if (rc == 0 && call->stamp != NULL) {
            /* A stamped call needs the server's clock: once per server. */
            clock_ok = rdl_client_clock_known(c, conn->route);
            if (!clock_ok && rdl_client_clock_sample(c, conn) != 0) {
                snprintf(why, sizeof why, "%s", conn->ctx->errstr[0] ? conn->ctx->errstr : "TIME failed");
                rdl_conn_close(conn);
                rdl_client_pool_flush(c);
                rc = EIO;
                conn = NULL;
            }
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
            if (rc == 0) {
                call->answer_sent = sent;
                call->answer_at = rdl_now_ms();
                memcpy(call->route, conn->route, strlen(conn->route) + 1);
                rdl_client_conn_put(c, conn);
                net_state(c, false, NULL);
                return 0;
            }
            if (rc == RDL_EREDIRECT) {
                /* Not run: the slot is served elsewhere.  Not a retry (no
                 * backoff), but bounded: a map that keeps changing under
                 * us is an error. */
                rdl_topo_redirected(c, conn);
                if (conn->redir.kind == RDL_CL_ASK && conn->redir.host[0] != '\0')
                    snprintf(ask_route, sizeof ask_route, "%s:%d", conn->redir.host, conn->redir.port);
                rdl_client_conn_put(c, conn);
                if (++redirects > c->cfg.cluster_max_redirects) {
                    snprintf(why, sizeof why, "more than %d redirections", c->cfg.cluster_max_redirects);
                    rdl_log(RDLOCK_LOG_ERROR, "script %s: %s", script->name, why);
                    break;
                }
                attempt--;
                continue;
            }
            if (rc == EROFS) {
                /* A replica now: every pooled connection leads there.
                 * The script did not write (a replica refuses), so a
                 * retry on a new connection cannot double it. */
                snprintf(why, sizeof why, "server is a read-only replica");
                rdl_topo_redirected(c, conn);
                rdl_conn_close(conn);
                rdl_client_pool_flush(c);
            } else if (rdl_conn_ok(conn)) {
                if (conn->redir.kind == RDL_CL_CLUSTERDOWN)
                    rdl_topo_redirected(c, conn);
                rdl_client_conn_put(c, conn); /* the server answered with an error */
                if (rc != EAGAIN)
                    return rc;
                snprintf(why, sizeof why, "server loading, busy, short of replicas or migrating the slot");
                /* The server is alive and says "not now" (a slot being
                 * migrated answers TRYAGAIN to every lock call until the
                 * move ends; a failover, CLUSTERDOWN): waited out for as
                 * long as the retries of a dead server would take, not
                 * for command_retries answers that come in microseconds. */
                if (busy_since == 0)
                    busy_since = rdl_now_ms();
                if (rdl_now_ms() - busy_since < busy_budget) {
                    long long pause = 5LL << (busy < 5 ? busy : 5), now = rdl_now_ms();
                    busy++;
                    if (deadline >= 0 && now + pause > deadline)
                        pause = deadline - now;
                    if (pause <= 0)
                        break;
                    rdl_sleep_ms(pause);
                    attempt--;
                    redirects = 0; /* an ASK then TRYAGAIN is one more wait, not a loop */
                    continue;
                }
            } else {
                /* Sent, maybe run, but no answer: a retry may find the
                 * effect of this attempt, and the attempt itself may yet
                 * arrive (until its stamp).  A timeout (the server is
                 * alive but slow) most likely ran it; a closed connection
                 * may mean a restart that lost everything. */
                call->maybe_ran = true;
                if (call->stamp != NULL && sent + c->cfg.command_timeout_ms > call->unsure_until)
                    call->unsure_until = sent + c->cfg.command_timeout_ms;
                if (rdl_conn_timed_out(conn))
                    call->ambiguous = true;
                snprintf(why, sizeof why, "%s", conn->ctx->errstr);
                rdl_conn_close(conn);
                rdl_client_pool_flush(c);
            }
        }
        if (attempt >= c->cfg.command_retries)
            break;
        {
            long long pause = 10LL << (attempt < 6 ? attempt : 6), now = rdl_now_ms();
            if (deadline >= 0 && now + pause > deadline)
                pause = deadline - now;
            if (pause <= 0)
                break;
            rdl_sleep_ms(pause);
        }
    }
    net_state(c, true, why);
    return EIO;
}
