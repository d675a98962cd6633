/* topology.h - which server serves a lock name, and how the client follows
 * it when it moves.  One small interface, a struct of function pointers
 * (as hiredis's async adapters are), with one implementation per topology
 * of the configuration:
 *
 *   topology_single.c    [redis]: one server (host:port or a socket); a
 *                        failover behind a DNS name or proxy is followed
 *                        by reconnecting when the old one answers READONLY
 *   topology_sentinel.c  [sentinel]: the master that the sentinels name,
 *                        followed through a kept, subscribed sentinel link
 *                        and a question after each renewal round
 *
 *   topology_cluster.c   [cluster]: the master that serves the name's slot,
 *                        from the cluster's slot map, followed through
 *                        MOVED and ASK
 *
 *   topology_redlock.c   [redlock]: every one of N independent masters;
 *                        a lock step goes to all at once (quorum.c) and
 *                        counts when a majority agree (lock_quorum.c)
 *
 * Everything above it (the retries in call.c, the subscriber and the
 * watchdog) reaches servers only through rdl_topo_connect(); the pool
 * below it (pool.c) only keeps what they opened.  The background thread
 * gives a topology its own descriptor and timer. */
#ifndef RDL_TOPOLOGY_H
#define RDL_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/conn.h"

struct rdlock_client;

typedef struct rdl_topology_ops {
    const char *name;
    /* A new connection to the server that serves key now (keylen 0: the
     * server every name lives on, for one-server topologies).  probe: find
     * out at once whether the server wants a password (client open).  0, or
     * EIO, EACCES, EINVAL (db), ENOMEM. */
    int (*connect)(struct rdlock_client *c, const char *key, size_t keylen, bool probe, rdl_conn_t **out);
    /* The route of key: which of the topology's servers serves it now, as
     * the conn->route of connections to it ("host:port" of a cluster
     * master).  NULL: one server, route "".  0, or EAGAIN (no server for
     * it now: retry later), EIO, EACCES, ENOMEM. */
    int (*route)(struct rdlock_client *c, const char *key, size_t keylen, char *out, size_t n);
    /* A new connection to the server of a route that route() gave (or a
     * redirection named).  NULL: connect(c, NULL, 0, false, out).  0, or
     * as connect: EIO (also a route that is not one of the topology's
     * servers), EACCES, EINVAL (db; or a route that does not parse),
     * ENOMEM. */
    int (*connect_route)(struct rdlock_client *c, const char *route, rdl_conn_t **out);
    /* conn's server sent a request elsewhere or said the topology is
     * changing (conn->redir): learn where things are now.  May be NULL. */
    void (*redirected)(struct rdlock_client *c, const rdl_conn_t *conn);
    /* What the configuration leads to, for log lines and
     * rdlock_client_info ("host:port", "unix:path", "master 'x' (via
     * Sentinel)"): buf, n bytes. */
    const char *(*where)(const rdl_config_t *cfg, char *buf, size_t n);
    /* Wake-ups on shard channels (SPUBLISH, SSUBSCRIBE: Redis Cluster)
     * rather than plain ones. */
    bool sharded;
    /* Every name lives on every server: lock steps go to all of them and
     * count by majority (Redlock), rather than to the one route(). */
    bool quorum;
    /* Whether the background thread must run from the client's opening on
     * (to follow the topology even while the client holds nothing). */
    bool always_on;
    /* Background thread only, mu not held.  The descriptor to poll (fd()
     * returns the descriptor, -1: none), when the topology next has work
     * (monotonic ms, 0: never), its work when that descriptor is readable
     * or the time has come, and a look after each renewal round that went
     * to the server.  Any of them may be NULL. */
    int (*fd)(struct rdlock_client *c);
    long long (*due)(struct rdlock_client *c);
    void (*service)(struct rdlock_client *c, bool readable);
    void (*after_round)(struct rdlock_client *c);
    /* Whether route's server is known not to answer now (a Redlock master
     * in its backoff), so that the background thread moves subscriptions
     * off it.  May be NULL: never. */
    bool (*route_down)(struct rdlock_client *c, const char *route);
    /* Free what the topology keeps (mu not held; after_fork: in a fork
     * child, where only descriptors are closed). */
    void (*release)(struct rdlock_client *c, bool after_fork);
} rdl_topology_ops_t;

extern const rdl_topology_ops_t rdl_topology_single;
extern const rdl_topology_ops_t rdl_topology_sentinel;
extern const rdl_topology_ops_t rdl_topology_cluster;
extern const rdl_topology_ops_t rdl_topology_redlock;

typedef struct rdl_cluster rdl_cluster_t; /* topology_cluster.c's state */

/* The topology a configuration chooses. */
const rdl_topology_ops_t *rdl_topology_of(const rdl_config_t *cfg);
/* Its where() for cfg. */
const char *rdl_topology_where(const rdl_config_t *cfg, char *buf, size_t n);

/* rdl_topo_*: the client's topology, NULL hooks skipped.  Each returns as
 * its hook's comment says: */
/* connect, without probe: 0, or EIO, EACCES, EINVAL (db), ENOMEM. */
int rdl_topo_connect(struct rdlock_client *c, const char *key, size_t keylen, rdl_conn_t **out);
/* route ("" without the hook): 0, or EAGAIN, EIO, EACCES, ENOMEM. */
int rdl_topo_route(struct rdlock_client *c, const char *key, size_t keylen, char *out, size_t n);
/* connect_route (connect for route "" or without the hook): 0, or EIO,
 * EACCES, EINVAL, ENOMEM. */
int rdl_topo_connect_route(struct rdlock_client *c, const char *route, rdl_conn_t **out);
void rdl_topo_redirected(struct rdlock_client *c, const rdl_conn_t *conn);
/* fd: returns the descriptor to poll (-1: none, also without the hook). */
int rdl_topo_fd(struct rdlock_client *c);
long long rdl_topo_due(struct rdlock_client *c);
void rdl_topo_service(struct rdlock_client *c, bool readable);
void rdl_topo_after_round(struct rdlock_client *c);
bool rdl_topo_route_down(struct rdlock_client *c, const char *route);
void rdl_topo_release(struct rdlock_client *c, bool after_fork);

#endif
