/* once.c - rdonce() (docs/CONTRACT.md section 12): pthread_once across
 * hosts.  The run is guarded by the lock of the name, taken exclusively
 * through the rdonce_t's own handle (lock.c): one caller runs the function
 * while the others wait in the lock's queue, woken through pub/sub when it
 * is done; if the runner dies, its lease lapses and the next waiter gets
 * the lock and runs the function.  Whether it has run is a persistent mark
 * beside the lock's keys, "<prefix>{name}:once" (src/scripts/once.lua),
 * set before the lock is released; a process that has seen it remembers
 * it in the rdonce_t and never asks again. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/ident.h"
#include "core/attr.h"
#include "core/clients.h"
#include "core/handle.h"
#include "core/hold.h"
#include "exec/call.h"
#include "exec/exec.h"
#include "prim/lock.h"
#include "prim/sem.h"
#include "proto/reply.h"
#include "proto/script.h"

static rdl_lockobj_t *obj_of(rdonce_t *once)
{
    return (rdl_lockobj_t *)once;
}

int rdonce_init(rdonce_t *once, const char *name, const rdlock_attr_t *a)
{
    rdlock_attr_t la;
    int rc;
    if (once == NULL || (a != NULL && !rdl_attr_valid(a)))
        return EINVAL;
    /* Only the client and the lease apply: the run is an exclusive hold,
     * error-checking (a nested rdonce of the name is EDEADLK), renewed. */
    rdlock_attr_init(&la);
    if (a != NULL) {
        la.__client = a->__client;
        la.__lease_ms = a->__lease_ms;
    }
    rc = rdl_handle_init(obj_of(once), RDONCE__MAGIC, name, &la, RDL_API_MUTEX);
    rdlock_attr_destroy(&la);
    if (rc == 0)
        __atomic_store_n(&once->__done, 0, __ATOMIC_RELEASE);
    return rc;
}

int rdonce_destroy(rdonce_t *once)
{
    return rdl_handle_destroy(obj_of(once), RDONCE__MAGIC, RDONCE__STATIC_MAGIC);
}

/* An answer of once.lua's 'c' (or 's', 'r'): {done}, or {done, mark}.  On
 * a quorum the mark is set only after the function returned, and never
 * taken back (but by a reset), so one master that has it means done; a
 * mark set on a majority is seen by every later majority. */
static bool mark_use(int server, const redisReply *r, void *arg)
{
    int *seen = arg;
    (void)server;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_INTEGER)
        return false;
    *seen |= r->element[0]->integer == 1;
    return true;
}

/* once.lua op on the mark of h's name: 0 and *done (op 'c'), or an errno
 * of the client.  arg: the mark's text (op 's'). */
static int mark(rdlock_client_t *c, const rdl_handle_t *h, const char *op, const char *arg, int *done)
{
    const char *argv[3];
    size_t lens[3];
    char *key = malloc(h->keylen + 6);
    int rc, seen = 0;

    if (key == NULL)
        return ENOMEM;
    memcpy(key, h->key, h->keylen);
    memcpy(key + h->keylen, ":once", 6);
    argv[0] = key;
    lens[0] = h->keylen + 5;
    argv[1] = op;
    lens[1] = strlen(op);
    argv[2] = arg != NULL ? arg : "";
    lens[2] = strlen(argv[2]);
    rc = c->exec->each(c, c->scripts->once, 1, 3, argv, lens, mark_use, &seen, "once", h->name);
    free(key);
    if (rc == 0 && done != NULL)
        *done = seen;
    return rc;
}

int rdl_once_reset(rdlock_client_t *c, const char *key, size_t keylen)
{
    rdl_handle_t h;
    memset(&h, 0, sizeof h);
    h.key = (char *)key;
    h.keylen = keylen;
    h.name = (char *)"";
    return mark(c, &h, "r", NULL, NULL);
}

/* An answer of once.lua's 'c' for rdl_once_status: the first mark seen
 * gives the runner. */
typedef struct once_status {
    int *done;
    rdlock_party_t *by;
} once_status_t;

static bool status_use(int server, const redisReply *r, void *arg)
{
    once_status_t *st = arg;
    (void)server;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_INTEGER)
        return false;
    if (r->element[0]->integer == 1 && !*st->done && r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING) {
        *st->done = 1;
        rdl_reply_once_mark(r->element[1]->str, r->element[1]->len, st->by);
    }
    return true;
}

int rdl_once_status(rdlock_client_t *c, const char *key, size_t keylen, int *done, rdlock_party_t *by)
{
    const char *argv[3];
    size_t lens[3];
    once_status_t st = { done, by };
    char *k = malloc(keylen + 6);
    int rc;

    *done = 0;
    memset(by, 0, sizeof *by);
    if (k == NULL)
        return ENOMEM;
    memcpy(k, key, keylen);
    memcpy(k + keylen, ":once", 6);
    argv[0] = k;
    lens[0] = keylen + 5;
    argv[1] = "c";
    lens[1] = 1;
    argv[2] = "";
    lens[2] = 0;
    rc = c->exec->each(c, c->scripts->once, 1, 3, argv, lens, status_use, &st, "status:", "once mark");
    free(k);
    if (rc != 0) {
        *done = 0;
        memset(by, 0, sizeof *by);
    }
    return rc;
}

/* mark(), through an outage as a blocking call waits (docs/CONTRACT.md
 * section 2): EIO only with fail_fast. */
static int mark_patient(rdlock_client_t *c, const rdl_handle_t *h, const char *op, const char *arg, int *done)
{
    for (;;) {
        int rc = mark(c, h, op, arg, done);
        if (rc != EIO || c->cfg.fail_fast)
            return rc;
        rdl_sleep_ms(c->cfg.retry_interval_ms + rdl_jitter(c->cfg.retry_jitter_ms));
    }
}

int rdonce(rdonce_t *once, void (*init_routine)(void))
{
    rdl_handle_t *h;
    rdlock_client_t *c;
    char who[RDL_OWNER_MAX + 300];
    size_t n;
    int rc, done = 0, rel;

    if (once == NULL || init_routine == NULL)
        return EINVAL;
    if (__atomic_load_n(&once->__done, __ATOMIC_ACQUIRE))
        return 0;
    if ((rc = rdl_handle_get(obj_of(once), RDONCE__MAGIC, RDONCE__STATIC_MAGIC, &h)) != 0)
        return rc;
    if ((rc = rdl_handle_resolve(h, &c)) != 0)
        return rc;
    if ((rc = mark_patient(c, h, "c", NULL, &done)) != 0)
        return rc;
    if (!done) {
        /* Wait for the runner, if any, or become it. */
        rc = rdl_acquire(h, 'x', RDL_BLOCK, -1);
        if (rc != 0)
            return rc;
        rc = mark_patient(c, h, "c", NULL, &done);
        if (rc == 0 && !done) {
            init_routine();
            n = rdl_owner(c, rdl_thread_no(), who);
            snprintf(who + n, sizeof who - n, ";%ld;%s", (long)c->pid, c->host);
            rc = mark_patient(c, h, "s", who, NULL);
            if (rc != 0)
                rdl_log(RDLOCK_LOG_ERROR, "once %s: ran, but could not mark it done (%s): it will run again",
                        h->name, rdlock_strerror(rc));
        }
        rel = rdl_release(h);
        if (rc == 0 && rel == ENOLCK && !done) {
            rdl_log(RDLOCK_LOG_WARN, "once %s: the lease of the run was lost while it ran: another process may "
                                     "have run it too", h->name);
            rc = ENOLCK;
        }
        if (rc != 0 && rc != ENOLCK)
            return rc;
    }
    __atomic_store_n(&once->__done, 1, __ATOMIC_RELEASE);
    return rc;
}
