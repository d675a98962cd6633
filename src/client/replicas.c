/* replicas.c - the replica counts of [replication] wait_replicas = all
 * (replicas.h).
 *
 * The count rises at once: waiting for one more replica is never less
 * safe.  Falling is the danger, because a replica that leaves a master may
 * be the one a failover is promoting: Sentinel's REPLICAOF NO ONE makes it
 * leave first, and the old master, still taking writes until Sentinel
 * demotes it (seconds later), would then confirm acquisitions on the
 * replicas left, none of them the new master: two holders, a fencing token
 * that goes back.  So:
 *
 *  - an acquisition that got fewer confirmations than it asked for is
 *    undone (lock.c), never counted against a lower count found after it:
 *    the replica that did not answer may be the next master;
 *  - the counts are kept per master address, across pool flushes (every
 *    unconfirmed acquisition flushes the pool with Sentinel, lock.c): a
 *    count on one master never stands for another's;
 *  - a lower count is believed once every look for RDL_WAIT_ALL_DROP_MS
 *    saw fewer (a client hears of a failover well before: the sentinels
 *    name the new master about a second after the promotion, and their
 *    notifications move the client at once), to the most any of them
 *    saw; only that path lowers it, re-checked under the client's mutex,
 *    so threads that look at once cannot lower it early by storing what
 *    they read before another's look;
 *  - with [sentinel], a first count of a master is checked with the
 *    sentinels (a majority must answer) and a lower one, when its time has
 *    come, with every configured sentinel (the one that runs a failover is
 *    the only one that knows of it at first): the count is at least the
 *    replicas one of them could promote (sentinel.h), a failover under way
 *    keeps it, and a master that the newest of them no longer names is not
 *    counted at all (EROFS: the caller looks for the master again);
 *  - without Sentinel nothing promotes a replica on its own, and a first
 *    count is what the master reports (rdlock.ini(5) says what that
 *    leaves to whoever runs a failover by hand). */
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

/* addr's entry (mu held), made (reusing the oldest look) if create; NULL
 * if none. */
static rdl_replicas_t *replicas_of(rdlock_client_t *c, const char *addr, bool create)
{
    rdl_replicas_t *oldest = NULL;
    for (int i = 0; i < c->nreplicas; i++) {
        if (strcmp(c->replicas[i].addr, addr) == 0)
            return &c->replicas[i];
        if (oldest == NULL || c->replicas[i].look_at < oldest->look_at)
            oldest = &c->replicas[i];
    }
    if (!create)
        return NULL;
    if (c->nreplicas < RDL_CLOCKS_MAX)
        oldest = &c->replicas[c->nreplicas++];
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->addr, sizeof oldest->addr, "%s", addr);
    return oldest;
}

/* A look at addr made at now found want (online: the master's figure,
 * for the log): raise the count to it (never lower it: only lower() does),
 * unless a later look stored already.  A look that found no fewer than the
 * count ends a wait to lower it.  Returns what acquisitions wait for. */
static int raise_to(rdlock_client_t *c, const char *addr, int want, long long now, int online)
{
    rdl_replicas_t *e;
    int was;
    RDL_LOCK(c);
    e = replicas_of(c, addr, true);
    was = e->want;
    if (e->look_at > now) {
        /* Another thread looked later (its count read after ours) and
         * stored already: its count stands. */
        want = was;
        RDL_UNLOCK(c);
        return want;
    }
    if (want < was)
        want = was;
    else
        e->low_since = 0;
    e->want = want;
    e->look_at = now;
    e->due = false;
    RDL_UNLOCK(c);
    if (was != want)
        rdl_log(RDLOCK_LOG_INFO, "%s: %d replicas online: acquisitions wait for %d (wait_replicas = all)", addr,
                online, want);
    return want;
}

/* A look at now found n, fewer than the count: believed once every look
 * for RDL_WAIT_ALL_DROP_MS saw fewer, and then, with [sentinel], as far as
 * every configured sentinel allows (rdl_sentinel_replicas) and none sees a
 * failover under way.  0 and *want, or EROFS. */
static int first_count(rdlock_client_t *c, const char *addr, int n, int online, long long now, int *want);

static int lower(rdlock_client_t *c, const char *addr, int n, int online, long long now, int *want)
{
    rdl_replicas_t *e;
    long long since;
    int known, s = 0, rc;
    bool frozen = false;
    const char *why = NULL;

    RDL_LOCK(c);
    e = replicas_of(c, addr, false);
    if (e == NULL || e->want == 0) {
        /* Gone from the table meanwhile (another master took its place):
         * a first count again. */
        RDL_UNLOCK(c);
        return first_count(c, addr, n, online, now, want);
    }
    known = e->want;
    if (known <= n || e->look_at > now) {
        /* Another thread lowered it, or looked later.  A look that found
         * no fewer than the count ends a wait to lower it. */
        if (e->look_at <= now) {
            e->look_at = now;
            e->low_since = 0;
            e->due = false;
        }
        *want = known;
        RDL_UNLOCK(c);
        return 0;
    }
    if (e->low_since == 0) {
        e->low_since = now;
        e->low_max = n;
        rdl_log(RDLOCK_LOG_WARN,
                "%s: %d replicas online, acquisitions wait for %d: if still so after %d ms, they may wait for "
                "fewer (wait_replicas = all)",
                addr, online, known, RDL_WAIT_ALL_DROP_MS);
    } else if (n > e->low_max) {
        e->low_max = n; /* the most that a look during the wait saw */
    }
    since = e->low_since;
    n = e->low_max;
    e->look_at = now;
    e->due = false;
    RDL_UNLOCK(c);
    *want = known;
    if (now - since < RDL_WAIT_ALL_DROP_MS)
        return 0;
    if (c->cfg.sentinel_master != NULL) {
        if ((rc = rdl_sentinel_replicas(&c->cfg, addr, true, &s, &frozen)) == EROFS)
            return EROFS;
        if (rc != 0)
            why = "not every sentinel answers";
        else if (frozen)
            why = "a sentinel sees the master down or failing over";
        else if (s >= known)
            why = "the sentinels could still promote them all";
        else if (s > n)
            n = s;
    }
    RDL_LOCK(c);
    /* Unless a look found the replicas back meanwhile (it ended the wait)
     * or the entry went to another master. */
    if (e == replicas_of(c, addr, false) && e->low_since == since) {
        if (why != NULL) {
            /* The count stays; the sentinels are asked again after the
             * same wait, not at every look. */
            e->low_since = rdl_now_ms();
        } else if (n < e->want) {
            rdl_log(RDLOCK_LOG_WARN, "%s: fewer replicas online for %lld ms: acquisitions wait for %d "
                    "(wait_replicas = all)", addr, now - since, n);
            e->want = n;
            e->low_since = 0;
        }
    }
    *want = e->want;
    RDL_UNLOCK(c);
    if (why != NULL)
        rdl_log(RDLOCK_LOG_WARN, "%s: %s: acquisitions still wait for %d (wait_replicas = all)", addr, why, known);
    return 0;
}

/* A first count of addr, n: with [sentinel], at least what the sentinels
 * could promote (every replica they list, during a failover).  0 and
 * *want, EROFS, or EIO / EACCES (too few sentinels answered). */
static int first_count(rdlock_client_t *c, const char *addr, int n, int online, long long now, int *want)
{
    int s = 0, rc;
    bool frozen;
    if (c->cfg.sentinel_master != NULL) {
        if ((rc = rdl_sentinel_replicas(&c->cfg, addr, false, &s, &frozen)) == EROFS)
            return EROFS;
        if (rc != 0) {
            rdl_log(RDLOCK_LOG_WARN, "%s: too few sentinels answer: its replicas cannot be counted "
                    "(wait_replicas = all)", addr);
            return rc == EACCES ? EACCES : EIO;
        }
    }
    *want = raise_to(c, addr, s > n ? s : n, now, online);
    return 0;
}

int rdl_client_wait_want(rdlock_client_t *c, rdl_conn_t *conn, int *want)
{
    rdl_replicas_t *e;
    long long now;
    int online = 0, known = 0, n, rc;

    if (c->cfg.wait_replicas != RDL_WAIT_ALL) {
        *want = c->cfg.wait_replicas > 0 ? c->cfg.wait_replicas : 0;
        return 0;
    }
    now = rdl_now_ms();
    RDL_LOCK(c);
    e = replicas_of(c, conn->addr, false);
    if (e != NULL) {
        known = e->want;
        if (conn->counted && !e->due && now - e->look_at < RDL_WAIT_ALL_LOOK_MS) {
            *want = known;
            RDL_UNLOCK(c);
            return 0;
        }
    }
    RDL_UNLOCK(c);
    if ((rc = rdl_conn_online_replicas(conn, &online)) != 0)
        return rc;
    conn->counted = true;
    n = online > 0 ? online : 1; /* at least one: none is no confirmation */
    if (known == 0)
        return first_count(c, conn->addr, n, online, now, want);
    if (n >= known) {
        *want = raise_to(c, conn->addr, n, now, online);
        return 0;
    }
    return lower(c, conn->addr, n, online, now, want);
}

void rdl_client_wait_acked(rdlock_client_t *c, const rdl_conn_t *conn, int want, int acked)
{
    rdl_replicas_t *e;
    if (c->cfg.wait_replicas != RDL_WAIT_ALL || want <= 0 || acked >= want)
        return;
    RDL_LOCK(c);
    if ((e = replicas_of(c, conn->addr, false)) != NULL)
        e->due = true;
    RDL_UNLOCK(c);
}
