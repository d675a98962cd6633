/* topology_sentinel.c - [sentinel]: every name lives on the master that
 * the sentinels name, and the client follows it when it moves:
 *
 *  - a kept, subscribed sentinel link (sentinel.c) hears +switch-master and
 *    +promoted-slave and moves the client at once, holding or not (the
 *    background thread runs from the client's opening on);
 *  - after each renewal round that went to the server, the sentinels are
 *    asked where the master is, which catches a move without a
 *    notification (a sentinel reconfigured by hand, a link lost);
 *  - a move is reported (c->moved); the background thread then drops
 *    every connection to the old master (pool, watchdog, subscriber:
 *    rdl_events_moved) and renews every hold on the new one at once, so a
 *    hold the failover dropped is reported lost in that round.
 *
 * New connections ask the sentinels where the master is (sentinel_connect). */
#include "rdl_build.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/pool.h"
#include "proto/sentinel.h"
#include "topology/topology.h"

#define RDL_SENTINEL_BACKOFF_MS 30000 /* after no sentinel answered */

/* Every new connection asks the sentinels where the master is: a pool
 * refilled after a failover must not lead back to the old master, and the
 * question costs only connections, not lock calls. */
static int sentinel_connect(rdlock_client_t *c, const char *key, size_t keylen, bool probe, rdl_conn_t **out)
{
    char host[256], where[300];
    int port, rc;

    (void)key;
    (void)keylen;
    if ((rc = rdl_sentinel_ask(&c->cfg, host, sizeof host, &port)) != 0) {
        rdl_log(RDLOCK_LOG_DEBUG, "%s: %s", rdl_topology_where(&c->cfg, where, sizeof where),
                rdl_conn_last_error());
        return rc; /* EIO, or EACCES: a sentinel refused our credentials */
    }
    return rdl_conn_open_at(&c->cfg, host, port, probe, out);
}

static const char *sentinel_where(const rdl_config_t *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "master '%s' (via Sentinel)", cfg->sentinel_master);
    return buf;
}

/* The master moved from `from` to `to` (mutex not held): leave the old
 * one at once, wherever we are on it.  A deposed master keeps serving its
 * clients until Sentinel reconfigures it, which can take many seconds;
 * what went there meanwhile (acquisitions, renewals) is lost with it.  So
 * the watchdog's connection, the pool (lock calls: connections in use are
 * closed when they come back) and the subscriber (wake-ups: every waiter
 * looks again) all go, and every hold is renewed on the new master now. */
static void move_master(rdlock_client_t *c, const char *from, const char *to, const char *how)
{
    /* (from may be the watchdog connection's, closed below.) */
    rdl_log(RDLOCK_LOG_WARN, "Sentinel: master '%s' moved from %s to %s (%s); reconnecting", c->cfg.sentinel_master,
            from[0] ? from : "?", to, how);
    if (c->sw != NULL)
        rdl_sentinel_watch_set_master(c->sw, to);
    c->moved(c); /* events.c acts on it */
}

/* With [sentinel], once per renewal round, after it (mutex not held): has a
 * failover moved the master away from the watchdog's connection?  The
 * sentinel link (below) hears of a failover at once; this question also
 * catches a master moved without one (a sentinel reconfigured by hand)
 * and a notification lost with a link. */
static void master_check(rdlock_client_t *c)
{
    char now[RDL_MASTER_ADDR_MAX];
    const char *wd = rdl_client_wd_master(c);
    if (wd == NULL || rdl_now_ms() < c->sentinel_check_at)
        return; /* not connected, or backing off */
    if (rdl_sentinel_master(&c->cfg, now, sizeof now) != 0) {
        /* No sentinel answers: keep going where we are, and do not pay
         * their timeouts every round. */
        c->sentinel_check_at = rdl_now_ms() + RDL_SENTINEL_BACKOFF_MS;
        return;
    }
    if (strcmp(now, wd) == 0)
        return;
    move_master(c, wd, now, "asked after a renewal round");
}

/* The sentinel link says the master is at addr (mutex not held): move
 * there if that is news. */
static void sentinel_follow(rdlock_client_t *c, const char *addr, const char *how)
{
    char prev[RDL_MASTER_ADDR_MAX];
    snprintf(prev, sizeof prev, "%s", rdl_sentinel_watch_master(c->sw));
    if (strcmp(prev, addr) == 0)
        return;
    rdl_sentinel_watch_set_master(c->sw, addr);
    if (prev[0] == '\0') {
        /* Learned for the first time (the link came up): connections
         * opened before asked the sentinels themselves, but a failover may
         * have passed since.  Move only if one of them leads elsewhere. */
        const char *wd = rdl_client_wd_master(c);
        if (wd != NULL && strcmp(wd, addr) != 0)
            snprintf(prev, sizeof prev, "%s", wd);
        else if (!rdl_client_pool_elsewhere(c, addr, prev, sizeof prev))
            return;
    }
    move_master(c, prev, addr, how);
}

/* The sentinel link's own chores (mutex not held): (re)connect, keepalive,
 * and the question asked after each (re)connection. */
static void sentinel_service(rdlock_client_t *c, bool readable)
{
    char addr[RDL_MASTER_ADDR_MAX];
    const char *event = "";
    if (readable && c->sw != NULL && rdl_sentinel_watch_read(c->sw, &c->cfg, addr, sizeof addr, &event) == 1)
        /* Before anything else: the subscriber may be on the old master. */
        sentinel_follow(c, addr, event);
    if (c->sw == NULL && (c->sw = rdl_sentinel_watch_new()) == NULL)
        return; /* out of memory: renewal rounds still ask (master_check) */
    if (rdl_sentinel_watch_service(c->sw, &c->cfg, rdl_now_ms(), addr, sizeof addr) == 1)
        sentinel_follow(c, addr, "asked on a new sentinel link");
}

static int sentinel_fd(rdlock_client_t *c)
{
    return rdl_sentinel_watch_fd(c->sw);
}

static long long sentinel_due(rdlock_client_t *c)
{
    /* No watch yet: the first service creates it, now. */
    return c->sw != NULL ? rdl_sentinel_watch_due(c->sw, &c->cfg) : rdl_now_ms();
}

static void sentinel_release(rdlock_client_t *c, bool after_fork)
{
    (void)after_fork; /* in a child, freeing the watch closes its descriptor only */
    rdl_sentinel_watch_free(c->sw);
    c->sw = NULL;
}

const rdl_topology_ops_t rdl_topology_sentinel = {
    .name = "sentinel",
    .connect = sentinel_connect,
    .where = sentinel_where,
    .always_on = true,
    .fd = sentinel_fd,
    .due = sentinel_due,
    .service = sentinel_service,
    .after_round = master_check,
    .release = sentinel_release,
};
