/* pool.c - a client's idle connections, per route (pool.h).  A container:
 * it never connects (call.c does, through the topology), so the topology
 * itself may look into it. */
#include "rdl_build.h"

#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "client/pool.h"

#define RDL_POOL_MAX 16

void rdl_client_follow_start(rdlock_client_t *c)
{
    if (c->always_on && !c->bg_running && !c->bg_stop)
        (void)c->bg_start(c); /* logs why it could not; retried by the next call */
}

rdl_conn_t *rdl_client_conn_idle(rdlock_client_t *c, const char *route)
{
    rdl_conn_t **pp, *conn = NULL;
    RDL_LOCK(c);
    rdl_client_follow_start(c); /* after fork(), in the child */
    for (pp = &c->idle; *pp != NULL; pp = &(*pp)->next)
        if (strcmp((*pp)->route, route) == 0) {
            conn = *pp;
            *pp = conn->next;
            c->nidle--;
            break;
        }
    RDL_UNLOCK(c);
    return conn;
}

void rdl_client_conn_put(rdlock_client_t *c, rdl_conn_t *conn)
{
    rdl_conn_t *o;
    int same = 0;
    RDL_LOCK(c);
    /* RDL_POOL_MAX idle connections per server. */
    for (o = c->idle; o != NULL; o = o->next)
        same += strcmp(o->route, conn->route) == 0;
    /* One opened before a flush may lead where a flush was meant to take
     * us away from (a deposed master): it is not reused. */
    if (same < RDL_POOL_MAX && conn->gen == c->pool_gen) {
        conn->next = c->idle;
        c->idle = conn;
        c->nidle++;
        conn = NULL;
    }
    RDL_UNLOCK(c);
    rdl_conn_close(conn);
}

/* A broken connection usually means every idle one is broken too (server
 * restart): drop them all so retries are spent on fresh connections. */
void rdl_client_pool_flush(rdlock_client_t *c)
{
    rdl_conn_t *list, *conn;
    RDL_LOCK(c);
    list = c->idle;
    c->idle = NULL;
    c->nidle = 0;
    /* Maybe another server now (a failover), with a clock of its own: the
     * next stamped call samples it before it sends (see rdl_client_stamp, clock.c). */
    for (int i = 0; i < c->nclocks; i++)
        c->clocks[i].ok = false;
    __atomic_add_fetch(&c->pool_gen, 1, __ATOMIC_RELAXED); /* also read without mu */
    RDL_UNLOCK(c);
    while ((conn = list) != NULL) {
        list = conn->next;
        rdl_conn_close(conn);
    }
}

bool rdl_client_pool_elsewhere(rdlock_client_t *c, const char *addr, char *where, size_t n)
{
    rdl_conn_t *conn;
    bool found = false;
    RDL_LOCK(c);
    for (conn = c->idle; conn != NULL && !found; conn = conn->next)
        if (conn->addr[0] != '\0' && strcmp(conn->addr, addr) != 0) {
            snprintf(where, n, "%s", conn->addr);
            found = true;
        }
    RDL_UNLOCK(c);
    return found;
}
