/* topology.h - a master, its replicas and the sentinels that watch them,
 * for the suites about Sentinel (test_sentinel, test_failover): what the
 * sentinels say, and waiting until such a topology is really ready for a
 * failover.
 *
 * "Ready" is what Sentinel itself checks before it promotes a replica
 * (sentinelSelectSlave in Redis' sentinel.c), seen from outside: a
 * `SENTINEL FAILOVER` sent earlier fails with NOGOODSLAVE, and a client
 * test then measures Sentinel's start-up rather than the library.  Every
 * check uses a fresh connection per command (rdt_cmd_on), as servers here
 * change roles and Sentinel kills the clients of a server it reconfigures.
 * Nothing here calls CUnit. */
#ifndef RDT_TOPOLOGY_H
#define RDT_TOPOLOGY_H

#include <stddef.h>

#include "fixture.h"

/* The master's port according to sentinel s (SENTINEL
 * get-master-addr-by-name), -1 if it does not know or does not answer. */
int rdt_sentinel_master_port(const rdt_server_t *s, const char *name);

/* "master" or "slave" (ROLE) of server s into buf, "" if it does not
 * answer. */
void rdt_role_of(const rdt_server_t *s, char *buf, size_t n);

/* One look at the whole topology: 1 if it is ready for a failover, else 0
 * with the first reason found, and the reply it was found in, in why.
 * Ready means:
 *   - each replica: ROLE slave of master's port, master_link_status:up;
 *   - the master: ROLE master, WAIT for every replica answered in time;
 *   - each sentinel: names master's port for `name`, sees the master with
 *     flags "master" and nsentinels - 1 other sentinels, and lists each
 *     replica with flags "slave" (not down, not disconnected), its master
 *     link "ok", a fresh INFO (info-refresh) and a recent ping reply: the
 *     conditions under which Sentinel would promote it. */
int rdt_topology_ready(const rdt_server_t *master, const rdt_server_t *const *replicas, int nreplicas,
                       const rdt_server_t *const *sentinels, int nsentinels, const char *name, char *why,
                       size_t n);

/* Look until ready or timeout_ms (short naps between looks are pacing):
 * 0, or -1 after printing the last reason with its reply. */
int rdt_topology_wait(const rdt_server_t *master, const rdt_server_t *const *replicas, int nreplicas,
                      const rdt_server_t *const *sentinels, int nsentinels, const char *name, int timeout_ms);

/* Write on the master and WAIT on the same connection until a replica
 * has every write made so far (bounded: 20 s).  0, or -1 (printed). */
int rdt_sync_replica(const rdt_server_t *master);

/* Send `SENTINEL FAILOVER name` to s: 0 if it answered +OK, else -1 after
 * printing the reply (NOGOODSLAVE, INPROG ...). */
int rdt_sentinel_failover(const rdt_server_t *s, const char *name);

#endif
