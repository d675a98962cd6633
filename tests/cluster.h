/* cluster.h - a private Redis Cluster for tests: 3 masters and 3 replicas
 * (six redis-server processes from tests/fixture.c, on free loopback
 * ports, with their cluster bus ports chosen too), joined by
 * `redis-cli --cluster create --cluster-replicas 1 --cluster-yes`, and the
 * moves a test makes on it: a slot migrated step by step, a manual
 * failover, a reshard.
 *
 * Every wait is bounded and prints, on failure, the last reason with the
 * reply it was found in; between looks there are short naps (pacing, not
 * synchronisation).  Every command goes over a fresh connection to the
 * node (roles change under a test, and a failover kills clients).  Nothing
 * here calls CUnit or the library: the suites check the library against
 * what these helpers ask the servers themselves.
 *
 * The nodes run with cluster-node-timeout 5000, cluster-replica-no-failover
 * yes and cluster-allow-replica-migration no (see cluster.c for why);
 * extra_args of rdt_cluster_start override them. */
#ifndef RDT_CLUSTER_H
#define RDT_CLUSTER_H

#include <stddef.h>

#include "fixture.h"

#define RDT_CLUSTER_NODES 6
#define RDT_CLUSTER_SLOTS 16384

typedef struct rdt_cluster {
    rdt_server_t node[RDT_CLUSTER_NODES]; /* node[i].port: its client port */
    int bus_port[RDT_CLUSTER_NODES];      /* its cluster bus port */
    char id[RDT_CLUSTER_NODES][41];       /* its node id (CLUSTER MYID) */
    int tls;                              /* 1: made by rdt_cluster_start_tls */
} rdt_cluster_t;

/* Start six nodes, create the cluster, wait until it is ready
 * (rdt_cluster_ready, 60 s).  extra_args: NULL or more redis-server
 * arguments for every node.  0, or -1 (printed; everything started is
 * stopped again). */
int rdt_cluster_start(rdt_cluster_t *cl, const char *extra_args);
/* The same with TLS-only nodes (rdt_server_start_tls: --port 0, TLS on
 * node[i].port with the server certificate of rdt_tls_certs(), no client
 * certificates required) whose cluster bus and replication use TLS too
 * (--tls-cluster yes --tls-replication yes), so MIGRATE between them does
 * as well.  redis-cli creates (and rdt_cluster_reshard reshards) over TLS
 * with the fixture's CA and client certificate; every other command of
 * these helpers goes over the nodes' unix sockets.  Over those, Redis and
 * Valkey give the plain-text port, 0 here, as every node's port in CLUSTER
 * NODES, CLUSTER SLOTS and MOVED (a TLS client is given the TLS port): the
 * helpers know the nodes by their ids. */
int rdt_cluster_start_tls(rdt_cluster_t *cl, const char *extra_args);
/* Stop every node by PID and remove their dirs. */
void rdt_cluster_stop(rdt_cluster_t *cl);

/* One look: 1 if the cluster is really ready, else 0 with the first
 * reason found in why.  Ready means, for every one of the six nodes:
 *   1. CLUSTER INFO: cluster_state:ok, 16384 slots assigned and ok, six
 *      known nodes - a node still in its own "fail" state answers
 *      CLUSTERDOWN to whatever a test sends it;
 *   2. CLUSTER NODES: six nodes, none flagged fail, fail?, handshake or
 *      noaddr, every link connected, and the same view as every other
 *      node (ids, ports, roles, masters, masters' config epochs, slots): a node
 *      that has not heard of the last change yet would redirect a test to
 *      the old owner;
 *   3. every master serves slots and has a replica, and every replica's
 *      INFO says master_link_status:up with the master of that view: a
 *      manual failover needs a replica in sync;
 *   4. each master accepts a write to one of its own slots, and WAIT 1
 *      sees its replica acknowledge it;
 *   5. every node's CLUSTER SLOTS lists a replica with each range: Redis 7
 *      leaves out replicas whose replication offset it has not yet heard
 *      of (a fresh replica's offset is 0 until the master sends it
 *      something, its first ping or a write), so a test reading replicas
 *      from CLUSTER SLOTS right after create would find none. */
int rdt_cluster_ready(rdt_cluster_t *cl, char *why, size_t n);
/* Look until ready or timeout_ms: 0, or -1 (printed). */
int rdt_cluster_wait_ready(rdt_cluster_t *cl, int timeout_ms);

/* A command on a fresh connection to node i: the reply (the caller frees
 * it), or NULL (printed). */
redisReply *rdt_cluster_cmd(const rdt_cluster_t *cl, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
redisReply *rdt_cluster_cmd_argv(const rdt_cluster_t *cl, int i, int argc, const char **argv, const size_t *argvlen);

/* The index of the node with client port port, or -1. */
int rdt_cluster_index(const rdt_cluster_t *cl, int port);
/* 1 if node i says ROLE master, 0 if slave, -1 if it does not answer. */
int rdt_cluster_is_master(const rdt_cluster_t *cl, int i);
/* The index of a replica of master m, as node m sees it, or -1. */
int rdt_cluster_replica_of(const rdt_cluster_t *cl, int m);
/* The slot of a key by the server itself (CLUSTER KEYSLOT), -1 on error. */
int rdt_cluster_key_slot(const rdt_cluster_t *cl, const char *key, size_t len);
/* The index of the master that serves slot as node `viewer` sees it
 * (CLUSTER NODES), -1 if none or on error. */
int rdt_cluster_slot_owner(const rdt_cluster_t *cl, int viewer, int slot);
/* The owner of every slot (fixture index, -1 none) as node `viewer` sees
 * it, into owner[RDT_CLUSTER_SLOTS].  0 or -1 (printed). */
int rdt_cluster_owners(const rdt_cluster_t *cl, int viewer, int *owner);
/* The master that serves key, as node 0 sees it, -1 on error. */
int rdt_cluster_master_of_key(const rdt_cluster_t *cl, const char *key, size_t len);

/* Migrating one slot from master `from` to master `to`, step by step, as
 * redis-cli does it (and the Redis Cluster specification orders it):
 *   begin: CLUSTER SETSLOT slot IMPORTING <from> on to, then MIGRATING
 *          <to> on from.  From then on `from` serves the keys it still
 *          has and answers ASK for the others, `to` serves a key after
 *          ASKING;
 *   keys:  MIGRATE the given keys (keys NULL: every key of the slot, by
 *          CLUSTER GETKEYSINSLOT) from `from` to `to`;
 *   end:   CLUSTER SETSLOT slot NODE <to> on to, on from, then on the other
 *          masters, and wait until all six nodes name `to` for slot.
 * Each 0, or -1 (printed).  rdt_cluster_migrate_slot does all three and
 * calls cb (when not NULL) between them: phase RDT_MIG_OPEN after begin,
 * RDT_MIG_KEYS after every key moved; a cb that returns non-zero stops it
 * there (-1, the slot left half-migrated; rdt_cluster_migrate_cancel
 * closes it). */
enum { RDT_MIG_OPEN = 1, RDT_MIG_KEYS = 2 };
typedef int (*rdt_mig_cb)(rdt_cluster_t *cl, int slot, int phase, void *arg);
int rdt_cluster_migrate_begin(rdt_cluster_t *cl, int slot, int from, int to);
int rdt_cluster_migrate_keys(rdt_cluster_t *cl, int slot, int from, int to, const char *const *keys, size_t nkeys);
int rdt_cluster_migrate_end(rdt_cluster_t *cl, int slot, int to);
int rdt_cluster_migrate_slot(rdt_cluster_t *cl, int slot, int from, int to, rdt_mig_cb cb, void *arg);
/* CLUSTER SETSLOT slot STABLE on both (the keys moved stay where they are:
 * move them back first if that matters).  0 or -1. */
int rdt_cluster_migrate_cancel(rdt_cluster_t *cl, int slot, int from, int to);
/* Wait until all six nodes name master `owner` for slot (CLUSTER NODES).
 * 0, or -1 (printed). */
int rdt_cluster_wait_owner(rdt_cluster_t *cl, int slot, int owner, int timeout_ms);

/* A manual failover of master m: CLUSTER FAILOVER on its replica (sent
 * again if the replica is still a replica after Redis' manual-failover
 * timeout of 5 s, which a loaded machine can miss), then wait until the
 * replica says ROLE master, m says ROLE slave, and the cluster is ready
 * again (rdt_cluster_ready: every node agrees on the new roles and slots,
 * the demoted master's link is up).  The new master's index, or -1
 * (printed). */
int rdt_cluster_failover(rdt_cluster_t *cl, int m, int timeout_ms);

/* `redis-cli --cluster reshard` of nslots slots from master `from` to
 * master `to` (--cluster-yes), then wait until the cluster is ready again.
 * 0, or -1 (printed, with redis-cli's output). */
int rdt_cluster_reshard(rdt_cluster_t *cl, int from, int to, int nslots, int timeout_ms);

#endif
