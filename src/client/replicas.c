/* replicas.c - the replica counts of [replication] wait_replicas = all
 * (replicas.h).
 *
 * The count rises at once: waiting for one more replica is never less
 * safe.  It falls only slowly, because a replica that leaves a master may
 * be the one a failover is promoting: Sentinel's REPLICAOF NO ONE makes it
 * leave first, and the old master, still taking writes until Sentinel
 * demotes it (seconds later), would then confirm acquisitions on the
 * replicas left, none of them the new master: two holders, a fencing token
 * that goes back.  So:
 *
 *  - an acquisition that got fewer confirmations than it asked for is
 *    undone (lock.c), never counted against a lower count found after it:
 *    the replica that did not answer may be the next master;
 *  - a lower count is believed only once every look for
 *    RDL_WAIT_ALL_DROP_MS saw it (clients hear of a failover well before:
 *    Sentinel names the new master about a second after the promotion),
 *    and with [sentinel] only if the sentinels still name this master;
 *  - the counts outlive pool flushes (every unconfirmed acquisition flushes
 *    the pool with Sentinel, lock.c), and a new master (another address on
 *    the route) starts afresh: its replicas are what they are. */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/replicas.h"
#include "proto/sentinel.h"

/* route's entry (mu held), made (reusing the oldest look) if create;
 * NULL if none. */
static rdl_replicas_t *replicas_of(rdlock_client_t *c, const char *route, bool create)
{
    rdl_replicas_t *oldest = NULL;
    for (int i = 0; i < c->nreplicas; i++) {
        if (strcmp(c->replicas[i].route, route) == 0)
            return &c->replicas[i];
        if (oldest == NULL || c->replicas[i].look_at < oldest->look_at)
            oldest = &c->replicas[i];
    }
    if (!create)
        return NULL;
    if (c->nreplicas < RDL_CLOCKS_MAX)
        oldest = &c->replicas[c->nreplicas++];
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->route, sizeof oldest->route, "%s", route);
    return oldest;
}

/* With [sentinel]: do the sentinels still name addr as the master?  A
 * sentinel that does not answer is no reason to lower the count. */
static bool still_master(const rdl_config_t *cfg, const char *addr)
{
    char now[RDL_MASTER_ADDR_MAX];
    if (cfg->sentinel_master == NULL)
        return true;
    return rdl_sentinel_master(cfg, now, sizeof now) == 0 && strcmp(now, addr) == 0;
}

/* A look at conn's master found online replicas at now: update e (mu
 * held) and return what acquisitions wait for.  *drop: the count is to
 * fall now, if the sentinels agree (asked without mu; then
 * rdl_client_wait_want calls this again with the answer in sure). */
static int count_update(rdl_replicas_t *e, const rdl_conn_t *conn, int online, long long now, bool sure, bool *drop)
{
    int n = online > 0 ? online : 1; /* at least one: none is no confirmation */
    *drop = false;
    e->seen = online;
    e->look_at = now;
    if (e->want == 0 || strcmp(e->addr, conn->addr) != 0) {
        snprintf(e->addr, sizeof e->addr, "%s", conn->addr);
        e->want = n;
        e->low_since = 0;
        rdl_log(RDLOCK_LOG_INFO, "%s: %d replicas online: acquisitions wait for %d (wait_replicas = all)",
                conn->addr, online, n);
    } else if (n >= e->want) {
        if (n > e->want)
            rdl_log(RDLOCK_LOG_INFO, "%s: %d replicas online: acquisitions wait for %d (wait_replicas = all)",
                    conn->addr, online, n);
        e->want = n;
        e->low_since = 0;
    } else if (e->low_since == 0) {
        e->low_since = now;
        rdl_log(RDLOCK_LOG_WARN,
                "%s: %d replicas online, acquisitions wait for %d: still so for %d ms, if no failover "
                "explains it (wait_replicas = all)",
                conn->addr, online, e->want, RDL_WAIT_ALL_DROP_MS);
    } else if (now - e->low_since >= RDL_WAIT_ALL_DROP_MS) {
        if (!sure) {
            *drop = true;
        } else {
            rdl_log(RDLOCK_LOG_WARN, "%s: %d replicas online for %lld ms: acquisitions wait for %d (wait_replicas = all)",
                    conn->addr, online, now - e->low_since, n);
            e->want = n;
            e->low_since = 0;
        }
    }
    return e->want;
}

int rdl_client_wait_want(rdlock_client_t *c, rdl_conn_t *conn, int *want)
{
    rdl_replicas_t *e;
    long long now = rdl_now_ms();
    int online = 0, rc;
    bool drop;

    if (c->cfg.wait_replicas != RDL_WAIT_ALL) {
        *want = c->cfg.wait_replicas > 0 ? c->cfg.wait_replicas : 0;
        return 0;
    }
    RDL_LOCK(c);
    e = replicas_of(c, conn->route, false);
    if (conn->counted && e != NULL && e->look_at != 0 && now - e->look_at < RDL_WAIT_ALL_LOOK_MS &&
        strcmp(e->addr, conn->addr) == 0) {
        *want = e->want;
        RDL_UNLOCK(c);
        return 0;
    }
    RDL_UNLOCK(c);
    if ((rc = rdl_conn_online_replicas(conn, &online)) != 0)
        return rc;
    conn->counted = true;
    RDL_LOCK(c);
    e = replicas_of(c, conn->route, true);
    *want = count_update(e, conn, online, now, false, &drop);
    RDL_UNLOCK(c);
    if (drop && still_master(&c->cfg, conn->addr)) {
        RDL_LOCK(c);
        e = replicas_of(c, conn->route, true);
        *want = count_update(e, conn, online, now, true, &drop);
        RDL_UNLOCK(c);
    } else if (drop) {
        RDL_LOCK(c);
        if ((e = replicas_of(c, conn->route, false)) != NULL)
            e->low_since = now; /* not the master: keep the count, ask again later */
        RDL_UNLOCK(c);
        rdl_log(RDLOCK_LOG_WARN, "%s: the sentinels do not name it the master: acquisitions still wait for %d",
                conn->addr, *want);
    }
    return 0;
}

void rdl_client_wait_acked(rdlock_client_t *c, const rdl_conn_t *conn, int want, int acked)
{
    rdl_replicas_t *e;
    if (c->cfg.wait_replicas != RDL_WAIT_ALL || want <= 0 || acked >= want)
        return;
    RDL_LOCK(c);
    if ((e = replicas_of(c, conn->route, false)) != NULL)
        e->look_at = 0;
    RDL_UNLOCK(c);
}
