/* topology_single.c - [redis]: every name lives on one server, reached at
 * host:port or through a unix socket.  A failover that moves what that
 * address leads to (a DNS record, a virtual IP, a proxy) is followed
 * without help from here: a demoted master answers READONLY, and the pool
 * (call.c) and the watchdog drop their connections and connect again. */
#include "rdl_build.h"

#include "client/client.h"
#include "topology/topology.h"

#include <stdio.h>

static int single_connect(rdlock_client_t *c, const char *key, size_t keylen, bool probe, rdl_conn_t **out)
{
    (void)key;
    (void)keylen;
    if (c->cfg.socket != NULL)
        return rdl_conn_open_at(&c->cfg, c->cfg.socket, 0, probe, out);
    return rdl_conn_open_at(&c->cfg, c->cfg.host, c->cfg.port, probe, out);
}

static const char *single_where(const rdl_config_t *cfg, char *buf, size_t n)
{
    if (cfg->socket != NULL)
        snprintf(buf, n, "unix:%s", cfg->socket);
    else
        snprintf(buf, n, "%s:%d", cfg->host, cfg->port);
    return buf;
}

const rdl_topology_ops_t rdl_topology_single = {
    .name = "single",
    .connect = single_connect,
    .where = single_where,
};
