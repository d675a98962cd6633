/* admin.c - rdlock_reset_name() and the status snapshot; see admin.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "base/log.h"
#include "client/client.h"
#include "core/clients.h"
#include "core/handle.h"
#include "exec/call.h"
#include "exec/exec.h"
#include "prim/barrier.h"
#include "prim/cond.h"
#include "prim/lock.h"
#include "prim/sem.h"
#include "proto/reply.h"

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
        rc = rdl_sem_reset(c, key, keylen);
    }
    if (rc == 0)
        rc = rdl_once_reset(c, key, keylen);
    if (rc == 0)
        rc = rdl_cond_reset(c, key, keylen);
    if (rc == 0)
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

static const char *const kinds_sfx[] = { ":s", ":s:h", ":s:w", ":s:wq", ":once", ":cv", ":cv:h", ":cv:p", ":b", ":b:h" };
enum { KINDS_NK = sizeof kinds_sfx / sizeof kinds_sfx[0] };

/* kinds.lua's keys for key: argv, lens into a new *buf.  0 or ENOMEM. */
static int kinds_keys(const char *key, size_t keylen, const char **argv, size_t *lens, char **buf)
{
    size_t off = 0, i;
    if ((*buf = malloc(KINDS_NK * (keylen + 6))) == NULL)
        return ENOMEM;
    for (i = 0; i < KINDS_NK; i++) {
        size_t sl = strlen(kinds_sfx[i]);
        memcpy(*buf + off, key, keylen);
        memcpy(*buf + off + keylen, kinds_sfx[i], sl);
        argv[i] = *buf + off;
        lens[i] = keylen + sl;
        off += keylen + sl;
    }
    return 0;
}

/* kinds.lua on the single server, Sentinel master or Cluster slot of
 * key: 0 and *k, or an errno. */
static int kinds_read(rdlock_client_t *c, const char *key, size_t keylen, rdlock_kinds_t *k)
{
    const char *argv[KINDS_NK];
    size_t lens[KINDS_NK];
    char *buf;
    redisReply *r;
    int rc;

    if ((rc = kinds_keys(key, keylen, argv, lens, &buf)) != 0)
        return rc;
    rc = rdl_client_script(c, c->scripts->kinds, KINDS_NK, KINDS_NK, argv, lens, -1, &r, NULL);
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

/* What kinds_read_copies gathers: each server's kinds (have[m]: it
 * answered), then the server with the newest copy of each kind. */
typedef struct {
    rdlock_kinds_t per[RDL_REDLOCK_MAX];
    bool have[RDL_REDLOCK_MAX];
    long long best_v[3];
    int best[3];
} kinds_copies_t;

static bool kinds_use(int m, const redisReply *r, void *arg)
{
    kinds_copies_t *kc = arg;
    if (m >= RDL_REDLOCK_MAX || r->type == REDIS_REPLY_ERROR)
        return false;
    memset(&kc->per[m], 0, sizeof kc->per[m]);
    kc->per[m].size = sizeof kc->per[m];
    kc->have[m] = rdl_reply_kinds(r, &kc->per[m]) == 0;
    return kc->have[m];
}

static bool version_use(int m, const redisReply *r, void *arg)
{
    kinds_copies_t *kc = arg;
    if (m >= RDL_REDLOCK_MAX || !kc->have[m] || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return false;
    for (int i = 0; i < 3; i++)
        /* Version 0: no step ever ran there (stray keys are not a
         * primitive where the state is copied). */
        if (r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer > 0 &&
            r->element[i]->integer > kc->best_v[i]) {
            kc->best_v[i] = r->element[i]->integer;
            kc->best[i] = m;
        }
    return true;
}

/* The same where a primitive's state is copied (RDL_EXEC_COPIES):
 * kinds.lua on every server of the name, then each kind's fields from the
 * server with its newest state (the highest step version, pstep.lua 'v';
 * prim_quorum.h), the run-once mark by vote (once.c).  Each read needs
 * enough servers answering (exec.h: each). */
static int kinds_read_copies(rdlock_client_t *c, const char *key, size_t keylen, rdlock_kinds_t *k)
{
    static const char *const vsfx[3] = { ":s:Qm", ":cv:Qm", ":b:Qm" };
    const char *argv[KINDS_NK], *vv[4];
    size_t lens[KINDS_NK], vl[4];
    char *buf, *vbuf;
    kinds_copies_t *kc;
    int rc, i;

    if ((rc = kinds_keys(key, keylen, argv, lens, &buf)) != 0)
        return rc;
    vbuf = malloc(3 * (keylen + 7));
    kc = calloc(1, sizeof *kc);
    if (vbuf == NULL || kc == NULL) {
        free(buf);
        free(vbuf);
        free(kc);
        return ENOMEM;
    }
    for (i = 0; i < 3; i++) {
        size_t sl = strlen(vsfx[i]);
        vv[i] = vbuf + (size_t)i * (keylen + 7);
        memcpy(vbuf + (size_t)i * (keylen + 7), key, keylen);
        memcpy(vbuf + (size_t)i * (keylen + 7) + keylen, vsfx[i], sl);
        vl[i] = keylen + sl;
        kc->best_v[i] = -1;
        kc->best[i] = -1;
    }
    vv[3] = "v";
    vl[3] = 1;
    rc = c->exec->each(c, c->scripts->kinds, KINDS_NK, KINDS_NK, argv, lens, kinds_use, kc, "status:", "kinds");
    if (rc == 0)
        rc = c->exec->each(c, c->scripts->pstep, 3, 4, vv, vl, version_use, kc, "status:", "step versions");
    free(buf);
    free(vbuf);
    if (rc == 0 && kc->best[0] >= 0) {
        const rdlock_kinds_t *p = &kc->per[kc->best[0]];
        k->sem = p->sem;
        k->sem_type = p->sem_type;
        k->sem_value = p->sem_value;
        k->sem_permits = p->sem_permits;
        k->sem_held = p->sem_held;
        k->sem_holders = p->sem_holders;
        k->sem_waiting = p->sem_waiting;
    }
    if (rc == 0 && kc->best[1] >= 0) {
        const rdlock_kinds_t *p = &kc->per[kc->best[1]];
        k->cond = p->cond;
        k->cond_waiters = p->cond_waiters;
        k->cond_woken = p->cond_woken;
        k->cond_registrations = p->cond_registrations;
    }
    if (rc == 0 && kc->best[2] >= 0) {
        const rdlock_kinds_t *p = &kc->per[kc->best[2]];
        k->barrier = p->barrier;
        k->barrier_count = p->barrier_count;
        k->barrier_arrived = p->barrier_arrived;
        k->barrier_generation = p->barrier_generation;
    }
    free(kc);
    return rc != 0 ? rc : rdl_once_status(c, key, keylen, &k->once, &k->once_by);
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
    if (c->exec->caps & RDL_EXEC_COPIES)
        rc = kinds_read_copies(c, key, keylen, &all);
    else
        rc = kinds_read(c, key, keylen, &all);
    free(key);
    if (rc != 0)
        return rc;
    all.size = size;
    memcpy(k, &all, size < sizeof all ? size : sizeof all);
    return 0;
}
