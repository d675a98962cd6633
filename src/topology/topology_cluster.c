/* topology_cluster.c - [cluster]: every name lives on the master that
 * serves its slot (the CRC16 of the name: all its keys carry the hash tag
 * {name}), and the client follows the cluster's slot map:
 *
 *  - the map comes from CLUSTER SLOTS, asked of a node we know (the
 *    masters of the last map first, then the configured nodes) when the
 *    client opens, when a node says the map changed (MOVED, CLUSTERDOWN,
 *    a shard subscription ended), and never more often than refresh_ms;
 *  - a MOVED also puts its slot on the named node at once, so that the
 *    retry goes there without waiting for a refresh;
 *  - a route is the "host:port" of a master: the pool, the subscribers
 *    and the watchdog keep connections per route (pool.c, events.c,
 *    watchdog.c), so each master gets its own, and nothing here is
 *    per-request I/O but the refresh.
 *
 * An ASK (a slot half migrated) is followed by the caller with ASKING on
 * the target, once, without touching the map (conn.c, call.c).  Failover
 * needs nothing of its own: a promoted replica's node answers MOVED for the
 * slots, or the old master READONLY, and either leads here. */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "proto/reply.h"
#include "proto/slotmap.h"
#include "topology/topology.h"

struct rdl_cluster {
    pthread_mutex_t mu;       /* a leaf lock: the map and the fields below */
    rdl_slotmap_t *map;       /* NULL until the first refresh */
    long long refreshed_at;   /* monotonic ms of the last refresh attempt */
    bool stale;               /* a node said the map changed */
};

static rdl_cluster_t *cluster_of(rdlock_client_t *c)
{
    rdl_cluster_t *cl = __atomic_load_n(&c->cluster, __ATOMIC_ACQUIRE);
    if (cl != NULL)
        return cl;
    RDL_LOCK(c);
    if (c->cluster == NULL && (cl = calloc(1, sizeof *cl)) != NULL) {
        RDL_CHECK(pthread_mutex_init(&cl->mu, NULL));
        __atomic_store_n(&c->cluster, cl, __ATOMIC_RELEASE);
    }
    cl = c->cluster;
    RDL_UNLOCK(c);
    return cl;
}

static void route_of(const rdl_slot_node_t *n, char *out, size_t len)
{
    snprintf(out, len, "%s:%d", n->addr.host, n->addr.port);
}

/* "host:port" (the last ':' ends the host: IPv6) into host and *port. */
static int route_parse(const char *route, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(route, ':');
    char *end;
    long p;
    if (colon == NULL || colon == route || (size_t)(colon - route) >= hostlen)
        return EINVAL;
    p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
        return EINVAL;
    memcpy(host, route, (size_t)(colon - route));
    host[colon - route] = '\0';
    *port = (int)p;
    return 0;
}

/* Ask host:port for the map.  0 and *out, or EIO/EACCES/ENOMEM. */
static int map_from(rdlock_client_t *c, const char *host, int port, bool probe, rdl_slotmap_t **out)
{
    rdl_conn_t *conn;
    redisReply *r;
    int rc = rdl_conn_open_at(&c->cfg, host, port, probe, &conn);
    if (rc != 0)
        return rc;
    r = redisCommand(conn->ctx, "CLUSTER SLOTS");
    if (r == NULL) {
        rdl_conn_set_last_error("%s: CLUSTER SLOTS: %s", conn->addr, conn->ctx->errstr);
        rc = EIO;
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* "ERR This instance has cluster support disabled": a plain server
         * named in [cluster] is a configuration mistake worth its own
         * line. */
        rdl_log(RDLOCK_LOG_ERROR, "%s: CLUSTER SLOTS refused: %s", conn->addr, r->str);
        rdl_conn_set_last_error("%s: CLUSTER SLOTS refused", conn->addr);
        rc = rdl_reply_error(r) == EACCES ? EACCES : EIO;
    } else if ((rc = rdl_slotmap_parse(r, host, out)) != 0) {
        rdl_log(RDLOCK_LOG_ERROR, "%s: CLUSTER SLOTS: unreadable reply", conn->addr);
        rdl_conn_set_last_error("%s: unreadable CLUSTER SLOTS reply", conn->addr);
    } else if ((*out)->nslots == 0) {
        rdl_conn_set_last_error("%s: no slot is served", conn->addr);
        rdl_slotmap_free(*out);
        *out = NULL;
        rc = EIO;
    }
    if (r != NULL)
        freeReplyObject(r);
    rdl_conn_close(conn);
    return rc;
}

/* Learn the map again: from the masters of the map we have, then from the
 * configured nodes; the first answer wins.  force: even within refresh_ms
 * of the last attempt.  0 (a map is there, new or old), or the last
 * error. */
static int refresh(rdlock_client_t *c, rdl_cluster_t *cl, bool force, bool probe)
{
    char (*hosts)[RDL_HOST_MAX + 1] = NULL;
    int *ports = NULL, n = 0, rc = EIO;
    long long now = rdl_now_ms();
    rdl_slotmap_t *map = NULL;
    size_t i;

    RDL_CHECK(pthread_mutex_lock(&cl->mu));
    if (!force && cl->map != NULL && now - cl->refreshed_at < c->cfg.cluster_refresh_ms) {
        RDL_CHECK(pthread_mutex_unlock(&cl->mu));
        return 0;
    }
    cl->refreshed_at = now;
    {
        size_t known = cl->map != NULL ? cl->map->nnodes : 0;
        hosts = calloc(known + (size_t)c->cfg.nclusternodes, sizeof *hosts);
        ports = calloc(known + (size_t)c->cfg.nclusternodes, sizeof *ports);
        if (hosts == NULL || ports == NULL) {
            RDL_CHECK(pthread_mutex_unlock(&cl->mu));
            free(hosts);
            free(ports);
            return ENOMEM;
        }
        for (i = 0; i < known; i++, n++) {
            snprintf(hosts[n], sizeof hosts[n], "%s", cl->map->nodes[i].addr.host);
            ports[n] = cl->map->nodes[i].addr.port;
        }
    }
    RDL_CHECK(pthread_mutex_unlock(&cl->mu));
    for (i = 0; i < (size_t)c->cfg.nclusternodes; i++, n++) {
        snprintf(hosts[n], sizeof hosts[n], "%s", c->cfg.cluster_host[i]);
        ports[n] = c->cfg.cluster_port[i];
    }
    for (i = 0; i < (size_t)n; i++) {
        rc = map_from(c, hosts[i], ports[i], probe, &map);
        if (rc == 0 || rc == EACCES || rc == ENOMEM)
            break;
    }
    free(hosts);
    free(ports);
    if (map != NULL) {
        rdl_slotmap_t *old;
        bool same;
        RDL_CHECK(pthread_mutex_lock(&cl->mu));
        old = cl->map;
        same = old != NULL && rdl_slotmap_same(old, map);
        cl->map = map;
        cl->stale = false;
        RDL_CHECK(pthread_mutex_unlock(&cl->mu));
        if (!same)
            rdl_log(RDLOCK_LOG_INFO, "cluster: slot map of %zu master%s learnt", map->nnodes,
                    map->nnodes == 1 ? "" : "s");
        rdl_slotmap_free(old);
        return 0;
    }
    RDL_CHECK(pthread_mutex_lock(&cl->mu));
    rc = cl->map != NULL && rc == EIO ? 0 : rc; /* keep using the old map */
    RDL_CHECK(pthread_mutex_unlock(&cl->mu));
    return rc;
}

static int cluster_route(rdlock_client_t *c, const char *key, size_t keylen, char *out, size_t n)
{
    rdl_cluster_t *cl = cluster_of(c);
    unsigned slot;
    const rdl_slot_node_t *node;
    bool want, none;
    int rc;

    if (cl == NULL)
        return ENOMEM;
    if (keylen == 0) {
        out[0] = '\0'; /* any node: a probe */
        return 0;
    }
    slot = rdl_key_slot(key, keylen);
    RDL_CHECK(pthread_mutex_lock(&cl->mu));
    want = cl->map == NULL || cl->stale;
    none = cl->map == NULL;
    RDL_CHECK(pthread_mutex_unlock(&cl->mu));
    /* No map at all: ask now, whatever refresh_ms says. */
    if (want && (rc = refresh(c, cl, none, false)) != 0)
        return rc;
    RDL_CHECK(pthread_mutex_lock(&cl->mu));
    node = cl->map != NULL ? rdl_slotmap_node(cl->map, slot) : NULL;
    if (node != NULL)
        route_of(node, out, n);
    else
        cl->stale = true; /* a hole: the cluster is resharding or down */
    RDL_CHECK(pthread_mutex_unlock(&cl->mu));
    if (node == NULL) {
        rdl_conn_set_last_error("no master serves slot %u", slot);
        return EAGAIN;
    }
    return 0;
}

static int cluster_connect(rdlock_client_t *c, const char *key, size_t keylen, bool probe, rdl_conn_t **out)
{
    char route[RDL_ROUTE_MAX], host[RDL_HOST_MAX + 1];
    int port, rc;

    if (keylen == 0) {
        /* The client's opening: learn the map (which also finds out about
         * credentials), then hand back a connection to some master. */
        rdl_cluster_t *cl = cluster_of(c);
        if (cl == NULL)
            return ENOMEM;
        if ((rc = refresh(c, cl, true, probe)) != 0)
            return rc;
        RDL_CHECK(pthread_mutex_lock(&cl->mu));
        route_of(&cl->map->nodes[0], route, sizeof route);
        RDL_CHECK(pthread_mutex_unlock(&cl->mu));
    } else if ((rc = cluster_route(c, key, keylen, route, sizeof route)) != 0) {
        return rc == EAGAIN ? EIO : rc;
    }
    if (route_parse(route, host, sizeof host, &port) != 0)
        return EIO;
    if ((rc = rdl_conn_open_at(&c->cfg, host, port, probe, out)) == 0)
        snprintf((*out)->route, sizeof (*out)->route, "%s", route);
    return rc;
}

static int cluster_connect_route(rdlock_client_t *c, const char *route, rdl_conn_t **out)
{
    char host[RDL_HOST_MAX + 1];
    int port, rc;
    if (route_parse(route, host, sizeof host, &port) != 0)
        return EINVAL;
    if ((rc = rdl_conn_open_at(&c->cfg, host, port, false, out)) == 0)
        snprintf((*out)->route, sizeof (*out)->route, "%s", route);
    return rc;
}

/* Add master host:port to map (cl->mu held): its index, or -1 (ENOMEM).
 * The next refresh brings its id and replicas. */
static int map_add(rdl_slotmap_t *map, const char *host, int port)
{
    rdl_slot_node_t *v;
    char *h;
    if (map->nnodes + 1 >= RDL_SLOT_NONE || (h = strdup(host)) == NULL)
        return -1;
    v = realloc(map->nodes, (map->nnodes + 1) * sizeof *v);
    if (v == NULL) {
        free(h);
        return -1;
    }
    map->nodes = v;
    memset(&v[map->nnodes], 0, sizeof v[0]);
    v[map->nnodes].addr.host = h;
    v[map->nnodes].addr.port = port;
    return (int)map->nnodes++;
}

/* A node sent a request elsewhere or said the cluster is down (conn->redir):
 * put a MOVED slot on its new master now, and have the whole map asked
 * again (within refresh_ms). */
static void cluster_redirected(rdlock_client_t *c, const rdl_conn_t *conn)
{
    rdl_cluster_t *cl = cluster_of(c);
    const rdl_redirect_t *rd = &conn->redir;
    if (cl == NULL)
        return;
    RDL_CHECK(pthread_mutex_lock(&cl->mu));
    cl->stale = true;
    if (rd->kind == RDL_CL_MOVED && rd->host[0] != '\0' && cl->map != NULL && rd->slot < RDL_SLOTS) {
        int idx = rdl_slotmap_find(cl->map, rd->host, rd->port);
        if (idx < 0)
            idx = map_add(cl->map, rd->host, rd->port); /* a promoted replica, a new master */
        if (idx >= 0)
            cl->map->owner[rd->slot] = (uint16_t)idx;
    }
    RDL_CHECK(pthread_mutex_unlock(&cl->mu));
}

static const char *cluster_where(const rdl_config_t *cfg, char *buf, size_t n)
{
    if (cfg->nclusternodes > 1)
        snprintf(buf, n, "cluster via %s:%d (+%d)", cfg->cluster_host[0], cfg->cluster_port[0],
                 cfg->nclusternodes - 1);
    else
        snprintf(buf, n, "cluster via %s:%d", cfg->cluster_host[0], cfg->cluster_port[0]);
    return buf;
}

static void cluster_release(rdlock_client_t *c, bool after_fork)
{
    rdl_cluster_t *cl = c->cluster;
    if (cl == NULL)
        return;
    c->cluster = NULL;
    rdl_slotmap_free(cl->map);
    /* In a fork child another (now gone) thread may have held the mutex:
     * the child starts with a new one, learnt afresh on first use. */
    if (!after_fork)
        pthread_mutex_destroy(&cl->mu);
    free(cl);
}

const rdl_topology_ops_t rdl_topology_cluster = {
    .name = "cluster",
    .connect = cluster_connect,
    .connect_route = cluster_connect_route,
    .route = cluster_route,
    .redirected = cluster_redirected,
    .where = cluster_where,
    .sharded = true,
    .release = cluster_release,
};
