/* admin.c - rdlock_reset_name() and the status snapshot; see admin.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "barrier.h"
#include "client.h"
#include "cond.h"
#include "handle.h"
#include "lock.h"
#include "log.h"
#include "reply.h"
#include "sem.h"
#include "topology.h"

/* Resolve the client and the key of a name. */
static int name_key(rdlock_client_t **c, const char *name, char **key, size_t *keylen)
{
    size_t n;
    int rc = rdl_name_check(name, &n);
    if (rc == 0 && *c == NULL)
        rc = rdl_client_default(c);
    if (rc != 0)
        return rc;
    *key = rdl_make_key(*c, name, n, keylen);
    return *key == NULL ? ENOMEM : 0;
}

int rdlock_reset_name(rdlock_client_t *c, const char *name)
{
    redisReply *r;
    char *key;
    size_t keylen;
    int rc = name_key(&c, name, &key, &keylen);
    if (rc != 0)
        return rc;
    rc = rdl_lock_script(c, c->scripts->reset, key, keylen, &r);
    if (rc == 0) {
        rdl_log(RDLOCK_LOG_INFO, "lock %s reset (%lld keys cleared)", name,
                r->type == REDIS_REPLY_INTEGER ? r->integer : 0);
        freeReplyObject(r);
        /* The other primitives of the name (section 12): the semaphore's
         * state, the run-once mark, the condition's and the barrier's
         * state go too. */
        rc = c->topo->quorum ? 0 : rdl_sem_reset(c, key, keylen);
    }
    if (rc == 0)
        rc = rdl_once_reset(c, key, keylen);
    /* On Redlock these primitives do not exist (ENOTSUP), nor their keys. */
    if (rc == 0 && !c->topo->quorum)
        rc = rdl_cond_reset(c, key, keylen);
    if (rc == 0 && !c->topo->quorum)
        rc = rdl_barrier_reset(c, key, keylen);
    free(key);
    return rc;
}

int rdl_status(rdlock_client_t *c, const char *name, rdl_status_t *st)
{
    redisReply *r;
    char *key;
    size_t keylen;
    int rc = name_key(&c, name, &key, &keylen);

    memset(st, 0, sizeof *st);
    if (rc != 0)
        return rc;
    rc = rdl_lock_script(c, c->scripts->status, key, keylen, &r);
    free(key);
    if (rc != 0)
        return rc;
    rc = rdl_reply_status(r, st);
    freeReplyObject(r);
    return rc;
}

int rdlock_status_name_on(rdlock_client_t *c, const char *name, unsigned server, char *where, size_t n,
                          rdlock_status_t *st)
{
    redisReply *r;
    char *key;
    size_t keylen;
    int rc;

    if (st == NULL || where == NULL || n == 0)
        return EINVAL;
    memset(st, 0, sizeof *st);
    where[0] = '\0';
    if ((rc = name_key(&c, name, &key, &keylen)) != 0)
        return rc;
    rc = rdl_lock_script_on(c, c->scripts->status, key, keylen, server, where, n, &r);
    free(key);
    if (rc != 0)
        return rc;
    rc = rdl_reply_status(r, st);
    freeReplyObject(r);
    return rc;
}

int rdlock_status_name(rdlock_client_t *c, const char *name, rdlock_status_t *st)
{
    if (st == NULL)
        return EINVAL;
    return rdl_status(c, name, st);
}

/* The smallest rdlock_kinds_t a caller may pass: the first version's. */
#define KINDS_SIZE_MIN sizeof(rdlock_kinds_t)

/* kinds.lua on the single server, Sentinel master or Cluster slot of
 * key: 0 and *k, or an errno. */
static int kinds_read(rdlock_client_t *c, const char *key, size_t keylen, rdlock_kinds_t *k)
{
    static const char *const sfx[] = { ":s", ":s:h", ":s:w", ":s:wq", ":once", ":cv", ":cv:h", ":cv:p", ":b", ":b:h" };
    enum { NK = sizeof sfx / sizeof sfx[0] };
    const char *argv[NK];
    size_t lens[NK], off = 0, i;
    char *buf = malloc(NK * (keylen + 6));
    redisReply *r;
    int rc;

    if (buf == NULL)
        return ENOMEM;
    for (i = 0; i < NK; i++) {
        size_t sl = strlen(sfx[i]);
        memcpy(buf + off, key, keylen);
        memcpy(buf + off + keylen, sfx[i], sl);
        argv[i] = buf + off;
        lens[i] = keylen + sl;
        off += keylen + sl;
    }
    rc = rdl_client_script(c, c->scripts->kinds, NK, NK, argv, lens, -1, &r, NULL);
    free(buf);
    if (rc != 0)
        return rc;
    if (r->type == REDIS_REPLY_ERROR)
        rc = rdl_reply_error(r);
    else
        rc = rdl_reply_kinds(r, k);
    freeReplyObject(r);
    return rc;
}

int rdlock_status_kinds(rdlock_client_t *c, const char *name, rdlock_kinds_t *k)
{
    rdlock_kinds_t all;
    char *key;
    size_t keylen, size;
    int rc;

    if (k == NULL || k->size < KINDS_SIZE_MIN)
        return EINVAL;
    size = k->size;
    /* A caller built against a later version passes a larger struct: the
     * fields this version does not know read 0. */
    memset(k, 0, size);
    k->size = size;
    memset(&all, 0, sizeof all);
    all.size = sizeof all;
    if ((rc = name_key(&c, name, &key, &keylen)) != 0)
        return rc;
    if (c->topo->quorum) /* Redlock: no semaphores, conditions, barriers */
        rc = rdl_once_status_quorum(c, key, keylen, &all.once, &all.once_by);
    else
        rc = kinds_read(c, key, keylen, &all);
    free(key);
    if (rc != 0)
        return rc;
    all.size = size;
    memcpy(k, &all, size < sizeof all ? size : sizeof all);
    return 0;
}
