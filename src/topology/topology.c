/* topology.c - choosing a topology and calling its hooks; see topology.h. */
#include "rdl_build.h"

#include "client/client.h"
#include "topology/topology.h"

const rdl_topology_ops_t *rdl_topology_of(const rdl_config_t *cfg)
{
    if (cfg->nmasters > 0)
        return &rdl_topology_redlock;
    if (cfg->nclusternodes > 0)
        return &rdl_topology_cluster;
    return cfg->nsentinels > 0 ? &rdl_topology_sentinel : &rdl_topology_single;
}

const char *rdl_topology_where(const rdl_config_t *cfg, char *buf, size_t n)
{
    return rdl_topology_of(cfg)->where(cfg, buf, n);
}

int rdl_topo_connect(rdlock_client_t *c, const char *key, size_t keylen, rdl_conn_t **out)
{
    return c->topo->connect(c, key, keylen, false, out);
}

int rdl_topo_route(rdlock_client_t *c, const char *key, size_t keylen, char *out, size_t n)
{
    if (c->topo->route == NULL) {
        out[0] = '\0';
        return 0;
    }
    return c->topo->route(c, key, keylen, out, n);
}

int rdl_topo_connect_route(rdlock_client_t *c, const char *route, rdl_conn_t **out)
{
    if (c->topo->connect_route == NULL || route[0] == '\0')
        return c->topo->connect(c, NULL, 0, false, out);
    return c->topo->connect_route(c, route, out);
}

void rdl_topo_redirected(rdlock_client_t *c, const rdl_conn_t *conn)
{
    if (c->topo->redirected != NULL)
        c->topo->redirected(c, conn);
}

int rdl_topo_fd(rdlock_client_t *c)
{
    return c->topo->fd != NULL ? c->topo->fd(c) : -1;
}

long long rdl_topo_due(rdlock_client_t *c)
{
    return c->topo->due != NULL ? c->topo->due(c) : 0;
}

void rdl_topo_service(rdlock_client_t *c, bool readable)
{
    if (c->topo->service != NULL)
        c->topo->service(c, readable);
}

void rdl_topo_after_round(rdlock_client_t *c)
{
    if (c->topo->after_round != NULL)
        c->topo->after_round(c);
}

bool rdl_topo_route_down(rdlock_client_t *c, const char *route)
{
    return c->topo->route_down != NULL && c->topo->route_down(c, route);
}

void rdl_topo_release(rdlock_client_t *c, bool after_fork)
{
    if (c->topo->release != NULL)
        c->topo->release(c, after_fork);
}
