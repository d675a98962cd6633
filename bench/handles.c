/* handles.c - a mutex on a dedicated client, as steps 2 and 8 measure it:
 * the client opened on an ini of its own (rdt_write_ini or a quorum's
 * file), so that nothing else shares its connection. */
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
