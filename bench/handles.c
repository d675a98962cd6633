/* handles.c - a mutex on a dedicated client, as steps 2, 8 and 11 measure
 * it, and a read-write lock likewise (steps 5a and 11): the client opened
 * on an ini of its own (rdt_write_ini or a quorum's file), so that nothing
 * else shares its connection. */
#include "bench.h"

#include <math.h>
#include <string.h>

int ulock_open_ini(ulock_t *u, const char *ini, const char *name)
{
    int rc;
    memset(u, 0, sizeof *u);
    if (ini == NULL)
        return -1;
    if ((rc = rdlock_client_open(&u->client, ini)) != 0) {
        fail("rdlock_client_open(%s): %s", ini, rdlock_strerror(rc));
        return -1;
    }
    rdlock_attr_init(&u->attr);
    rdlock_attr_setclient(&u->attr, u->client);
    if ((rc = rdlock_init(&u->m, name, &u->attr)) != 0) {
        fail("rdlock_init(%s): %s", name, rdlock_strerror(rc));
        return -1;
    }
    u->ok = 1;
    return 0;
}

int ulock_open(ulock_t *u, const rdt_server_t *s, int use_socket, const char *name)
{
    const char *ini = rdt_write_ini(s, use_socket, "[lock]\nlease_ms = 30000\n");
    if (ini == NULL) {
        memset(u, 0, sizeof *u);
        return -1;
    }
    return ulock_open_ini(u, ini, name);
}

void ulock_close(ulock_t *u)
{
    int rc;
    if (!u->ok)
        return;
    if ((rc = rdlock_destroy(&u->m)) != 0)
        fail("rdlock_destroy: %s", rdlock_strerror(rc));
    rdlock_attr_destroy(&u->attr);
    if ((rc = rdlock_client_close(u->client)) != 0)
        fail("rdlock_client_close: %s", rdlock_strerror(rc));
    u->ok = 0;
}

double pair_rate(ulock_t *u, int n)
{
    int64_t t0 = now_ns();
    int i, rc;
    for (i = 0; i < n; i++) {
        if ((rc = rdlock_lock(&u->m)) != 0) {
            fail("uncontended rdlock_lock: %s", rdlock_strerror(rc));
            return NAN;
        }
        if ((rc = rdlock_unlock(&u->m)) != 0) {
            fail("uncontended rdlock_unlock: %s", rdlock_strerror(rc));
            return NAN;
        }
    }
    return n / ((double)(now_ns() - t0) / 1e9);
}

int rwl_open(rwl_t *u, const rdt_server_t *s, int use_socket, const char *name)
{
    const char *ini = rdt_write_ini(s, use_socket, "[lock]\nlease_ms = 30000\n");
    int rc;
    memset(u, 0, sizeof *u);
    if (ini == NULL)
        return -1;
    if ((rc = rdlock_client_open(&u->client, ini)) != 0) {
        fail("rdlock_client_open: %s", rdlock_strerror(rc));
        return -1;
    }
    rdlock_attr_init(&u->attr);
    rdlock_attr_setclient(&u->attr, u->client);
    if ((rc = rdrwlock_init(&u->rw, name, &u->attr)) != 0) {
        fail("rdrwlock_init: %s", rdlock_strerror(rc));
        return -1;
    }
    u->ok = 1;
    return 0;
}

void rwl_close(rwl_t *u)
{
    int rc;
    if (!u->ok)
        return;
    if ((rc = rdrwlock_destroy(&u->rw)) != 0)
        fail("rdrwlock_destroy: %s", rdlock_strerror(rc));
    rdlock_attr_destroy(&u->attr);
    if ((rc = rdlock_client_close(u->client)) != 0)
        fail("rdlock_client_close: %s", rdlock_strerror(rc));
    u->ok = 0;
}

/* rdrwlock_rdlock (mode 's') or rdrwlock_wrlock ('x') + rdrwlock_unlock
 * pairs per second. */
double rw_pair_rate(rwl_t *u, char mode, int n)
{
    int64_t t0 = now_ns();
    int i, rc;
    for (i = 0; i < n; i++) {
        if ((rc = mode == 's' ? rdrwlock_rdlock(&u->rw) : rdrwlock_wrlock(&u->rw)) != 0) {
            fail("uncontended rdrwlock_%slock: %s", mode == 's' ? "rd" : "wr", rdlock_strerror(rc));
            return NAN;
        }
        if ((rc = rdrwlock_unlock(&u->rw)) != 0) {
            fail("uncontended rdrwlock_unlock (%s): %s", mode == 's' ? "read" : "write", rdlock_strerror(rc));
            return NAN;
        }
    }
    return n / ((double)(now_ns() - t0) / 1e9);
}
