/* topology_redlock.c - [redlock]: every name lives on every one of N
 * independent masters, and a lock counts when a majority of them grant it
 * (quorum.c runs the requests, lock_quorum.c decides what the answers
 * mean).  This file knows the masters: their routes ("host:port"), which
 * of them answer, and which must stay out of every vote for now.
 *
 *  - A master that failed to answer (refused, timed out) is not asked
 *    again for a backoff (100 ms doubling to 2 s): a SIGSTOPped master
 *    would otherwise cost every request a wait for its answer.
 *  - A master that started less than restart_delay_ms ago (INFO server's
 *    uptime, read on every new connection) has no vote until then: a
 *    master restarted without persistence has forgotten the holds it
 *    granted, and giving its vote to another caller at once could make a
 *    second majority while the first holder's lease runs.  Every client
 *    sees the same uptime, so none of them counts it.
 *  - route() gives the first master that answers: the one whose channels
 *    carry the wake-ups (events.c subscribes there), and where the
 *    scripts that are not quorum steps run.  A step publishes on every
 *    master it runs on (a majority), so wake-ups go on when that one
 *    changes; and once the master that carries the subscriptions stops
 *    answering (route_down), events.c moves them to the one route()
 *    gives now: a stopped master keeps its connections open, so no read
 *    of them fails, and the wake-ups that the majority publishes would
 *    reach no waiter before its re-check. */
#include "rdl_build.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "base/wake.h"
#include "client/client.h"
#include "topology/quorum.h"
#include "topology/topology.h"

#define DOWN_MIN_MS 100
#define DOWN_MAX_MS 2000

typedef struct rdl_master {
    char route[RDL_ROUTE_MAX]; /* "host:port" */
    long long down_until;      /* monotonic ms: not asked before (0: up) */
    int fails;                 /* failures in a row, for the backoff */
    long long out_until;       /* monotonic ms: no vote before (restarted) */
    char run_id[48];           /* as last seen, "" unknown */
} rdl_master_t;

struct rdl_redlock {
    pthread_mutex_t mu; /* a leaf lock over the masters' state */
    int n;
    rdl_master_t m[RDL_REDLOCK_MAX];
};

static rdl_redlock_t *state_of(rdlock_client_t *c)
{
    rdl_redlock_t *rl = __atomic_load_n(&c->redlock, __ATOMIC_ACQUIRE);
    if (rl != NULL)
        return rl;
    RDL_LOCK(c);
    if (c->redlock == NULL && (rl = calloc(1, sizeof *rl)) != NULL) {
        RDL_CHECK(pthread_mutex_init(&rl->mu, NULL));
        rl->n = c->cfg.nmasters;
        for (int i = 0; i < rl->n; i++)
            snprintf(rl->m[i].route, sizeof rl->m[i].route, "%s:%d", c->cfg.master_host[i], c->cfg.master_port[i]);
        __atomic_store_n(&c->redlock, rl, __ATOMIC_RELEASE);
    }
    rl = c->redlock;
    RDL_UNLOCK(c);
    return rl;
}

int rdl_redlock_count(rdlock_client_t *c)
{
    return c->cfg.nmasters;
}

int rdl_redlock_majority(rdlock_client_t *c)
{
    return c->cfg.nmasters / 2 + 1;
}

const char *rdl_redlock_route(rdlock_client_t *c, int k)
{
    rdl_redlock_t *rl = state_of(c);
    return rl != NULL ? rl->m[k].route : "";
}

int rdl_redlock_index(rdlock_client_t *c, const char *route)
{
    rdl_redlock_t *rl = state_of(c);
    for (int k = 0; rl != NULL && k < rl->n; k++)
        if (strcmp(rl->m[k].route, route) == 0)
            return k;
    return -1;
}

bool rdl_redlock_up(rdlock_client_t *c, int k, long long now)
{
    rdl_redlock_t *rl = state_of(c);
    bool up;
    if (rl == NULL)
        return false;
    RDL_CHECK(pthread_mutex_lock(&rl->mu));
    up = rl->m[k].down_until <= now;
    RDL_CHECK(pthread_mutex_unlock(&rl->mu));
    return up;
}

bool rdl_redlock_votes(rdlock_client_t *c, int k, long long now)
{
    rdl_redlock_t *rl = state_of(c);
    bool votes;
    if (rl == NULL)
        return false;
    RDL_CHECK(pthread_mutex_lock(&rl->mu));
    votes = rl->m[k].out_until <= now;
    RDL_CHECK(pthread_mutex_unlock(&rl->mu));
    return votes;
}

void rdl_redlock_result(rdlock_client_t *c, int k, bool answered)
{
    rdl_redlock_t *rl = state_of(c);
    bool was_down = false, now_down = false;
    if (rl == NULL)
        return;
    RDL_CHECK(pthread_mutex_lock(&rl->mu));
    if (answered) {
        was_down = rl->m[k].fails > 0;
        rl->m[k].fails = 0;
        rl->m[k].down_until = 0;
    } else {
        long long ms = (long long)DOWN_MIN_MS << (rl->m[k].fails < 5 ? rl->m[k].fails : 5);
        now_down = rl->m[k].fails == 0;
        rl->m[k].fails++;
        rl->m[k].down_until = rdl_now_ms() + (ms > DOWN_MAX_MS ? DOWN_MAX_MS : ms);
    }
    RDL_CHECK(pthread_mutex_unlock(&rl->mu));
    if (now_down) {
        rdl_log(RDLOCK_LOG_WARN, "redlock master %s does not answer; the others vote without it", rl->m[k].route);
        rdl_wake(c->wake[1]); /* subscriptions on it move (route_down) */
    }
    else if (was_down)
        rdl_log(RDLOCK_LOG_INFO, "redlock master %s answers again", rl->m[k].route);
}

/* The restart delay in force: configured (0: none), else the client's
 * lease. */
static long long restart_delay(const rdlock_client_t *c)
{
    return c->cfg.restart_delay_ms >= 0 ? c->cfg.restart_delay_ms : (long long)c->cfg.lease_ms;
}

void rdl_redlock_seen(rdlock_client_t *c, int k, long long uptime_s, const char *run_id)
{
    rdl_redlock_t *rl = state_of(c);
    long long left = restart_delay(c) - uptime_s * 1000, now = rdl_now_ms();
    bool restarted, logit = false;
    rdl_master_t *m;
    if (rl == NULL)
        return;
    m = &rl->m[k];
    RDL_CHECK(pthread_mutex_lock(&rl->mu));
    restarted = m->run_id[0] != '\0' && strcmp(m->run_id, run_id) != 0;
    snprintf(m->run_id, sizeof m->run_id, "%s", run_id);
    if (left > 0 && now + left > m->out_until) {
        logit = m->out_until <= now;
        m->out_until = now + left;
    }
    RDL_CHECK(pthread_mutex_unlock(&rl->mu));
    if (logit)
        rdl_log(RDLOCK_LOG_WARN, "redlock master %s %s %lld s ago: no vote for %lld ms more (restart_delay_ms)",
                m->route, restarted ? "restarted" : "started", uptime_s, left);
}

/* A new connection to master k (the uptime and clock are read before its
 * first request, by quorum.c, in parallel with the other masters'). */
static int master_open(rdlock_client_t *c, int k, bool probe, rdl_conn_t **out)
{
    rdl_redlock_t *rl = state_of(c);
    int rc;
    if (rl == NULL)
        return ENOMEM;
    rc = rdl_conn_open_at(&c->cfg, c->cfg.master_host[k], c->cfg.master_port[k], probe, out);
    if (rc == 0)
        snprintf((*out)->route, sizeof (*out)->route, "%s", rl->m[k].route);
    else if (rc == EIO)
        rdl_redlock_result(c, k, false);
    return rc;
}

/* Any master that answers (client open, and one-server callers): every
 * master is asked at once (quorum.c), and the first to answer serves. */
static int redlock_connect(rdlock_client_t *c, const char *key, size_t keylen, bool probe, rdl_conn_t **out)
{
    (void)key;
    (void)keylen;
    (void)probe; /* the setup's INFO finds out about a password as well */
    if (state_of(c) == NULL)
        return ENOMEM;
    return rdl_quorum_connect(c, out);
}

static int redlock_route(rdlock_client_t *c, const char *key, size_t keylen, char *out, size_t n)
{
    long long now = rdl_now_ms();
    (void)key;
    (void)keylen;
    if (state_of(c) == NULL)
        return ENOMEM;
    for (int k = 0; k < c->cfg.nmasters; k++)
        if (rdl_redlock_up(c, k, now)) {
            snprintf(out, n, "%s", rdl_redlock_route(c, k));
            return 0;
        }
    rdl_conn_set_last_error("no redlock master answers");
    return EAGAIN;
}

int rdl_redlock_open(rdlock_client_t *c, int k, rdl_conn_t **out)
{
    return master_open(c, k, false, out);
}

int rdl_redlock_open_many(rdlock_client_t *c, const bool *want, int need, rdl_conn_t **out, bool *denied)
{
    rdl_redlock_t *rl = state_of(c);
    rdl_conn_t *pend[RDL_REDLOCK_MAX] = { 0 };
    struct pollfd pfd[RDL_REDLOCK_MAX];
    int idx[RDL_REDLOCK_MAX], n = c->cfg.nmasters, k, left = 0, done = 0, rc = 0;
    long long start = rdl_now_ms(), until = start + c->cfg.connect_timeout_ms, grace = -1, now;

    for (k = 0; k < n; k++)
        out[k] = NULL;
    if (rl == NULL)
        return ENOMEM;
    for (k = 0; k < n && rc != ENOMEM; k++) {
        if (!want[k])
            continue;
        rc = rdl_conn_begin(&c->cfg, c->cfg.master_host[k], c->cfg.master_port[k], &pend[k]);
        if (rc == 0)
            left++;
        else if (rc == EIO)
            rdl_redlock_result(c, k, false);
    }
    while (left > 0 && rc != ENOMEM) {
        int np = 0;
        now = rdl_now_ms();
        /* Once the caller has enough, the slow ones get a grace, as a
         * quorum round's answers do (quorum.h): a powered-off master must
         * not cost a request its connect timeout. */
        if (grace < 0 && done >= need) {
            long long g = 0;
            if (need <= 0) {
                /* The caller has its majority already: nothing to scale
                 * the grace by, and a master farther away than the
                 * others must still get the time to connect (a quarter
                 * of the connect timeout, at most 250 ms). */
                g = c->cfg.connect_timeout_ms / 4;
                if (g > 250)
                    g = 250;
            }
            grace = rdl_quorum_grace_end(start, now, g);
            if (grace < until)
                until = grace;
        }
        if (now >= until)
            break;
        for (k = 0; k < n; k++)
            if (pend[k] != NULL) {
                pfd[np].fd = rdl_conn_fd(pend[k]);
                pfd[np].events = POLLOUT;
                pfd[np].revents = 0;
                idx[np++] = k;
            }
        if (poll(pfd, (nfds_t)np, (int)(until - now)) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < np; i++) {
            int r;
            if (pfd[i].revents == 0)
                continue;
            k = idx[i];
            /* AUTH and SELECT go with the setup round's questions
             * (quorum.c), not here: a stopped master still completes
             * handshakes, and would hold this loop up for a timeout. */
            r = rdl_conn_finish_deferred(&c->cfg, pend[k]); /* closes it on failure */
            left--;
            if (r == 0) {
                snprintf(pend[k]->route, sizeof pend[k]->route, "%s", rl->m[k].route);
                out[k] = pend[k];
                done++;
            } else if (r == EIO) {
                rdl_redlock_result(c, k, false);
            } else if (r == EACCES) {
                *denied = true;
            }
            pend[k] = NULL;
        }
    }
    for (k = 0; k < n; k++)
        if (pend[k] != NULL) {
            /* Not connected within the time: down for a backoff. */
            rdl_conn_set_last_error("%s: connect timed out", rl->m[k].route);
            rdl_conn_close(pend[k]);
            rdl_redlock_result(c, k, false);
        }
    return rc == ENOMEM ? ENOMEM : 0;
}

static int redlock_connect_route(rdlock_client_t *c, const char *route, rdl_conn_t **out)
{
    int k = rdl_redlock_index(c, route);
    if (k < 0) {
        rdl_conn_set_last_error("%s is not a redlock master", route);
        return EIO;
    }
    /* A connection for a caller outside quorum.c: the subscriber, which
     * needs neither the master's clock nor its uptime, and must not wait
     * for a stopped master's answer on the background thread (renewals
     * would wait with it).  quorum.c's own connections get both. */
    return master_open(c, k, false, out);
}

static const char *redlock_where(const rdl_config_t *cfg, char *buf, size_t n)
{
    size_t off = 0;
    int w = snprintf(buf, n, "redlock over %d masters (", cfg->nmasters);
    off = w > 0 && (size_t)w < n ? (size_t)w : n;
    for (int i = 0; i < cfg->nmasters && off < n; i++) {
        w = snprintf(buf + off, n - off, "%s%s:%d", i ? ", " : "", cfg->master_host[i], cfg->master_port[i]);
        off += w > 0 ? (size_t)w : 0;
    }
    if (off < n)
        snprintf(buf + off, n - off, ")");
    return buf;
}

static void redlock_release(rdlock_client_t *c, bool after_fork)
{
    rdl_redlock_t *rl = c->redlock;
    if (rl == NULL)
        return;
    c->redlock = NULL;
    /* In a fork child another (now gone) thread may have held the mutex:
     * the child starts afresh, and its new connections read each master's
     * uptime again. */
    if (!after_fork)
        pthread_mutex_destroy(&rl->mu);
    free(rl);
}

static bool redlock_route_down(rdlock_client_t *c, const char *route)
{
    int k = rdl_redlock_index(c, route);
    return k >= 0 && !rdl_redlock_up(c, k, rdl_now_ms());
}

const rdl_topology_ops_t rdl_topology_redlock = {
    .name = "redlock",
    .connect = redlock_connect,
    .route = redlock_route,
    .connect_route = redlock_connect_route,
    .where = redlock_where,
    .quorum = true,
    .route_down = redlock_route_down,
    .release = redlock_release,
};
