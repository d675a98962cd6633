/* handle.c - lock handles behind rdlock_t / rdrwlock_t; see handle.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "client.h"
#include "config.h"
#include "handle.h"
#include "hold.h"
#include "log.h"
#include "slotmap.h"
#include "topology.h"
#include "timeutil.h"

int rdl_name_check(const char *name, size_t *len)
{
    size_t n;
    if (name == NULL)
        return EINVAL;
    n = strnlen(name, RDL_NAME_MAX + 1);
    if (n == 0 || n > RDL_NAME_MAX) {
        rdl_log(RDLOCK_LOG_ERROR, "lock name must be 1 to %d bytes (got %s)", RDL_NAME_MAX,
                n == 0 ? "an empty name" : "a longer one");
        return EINVAL;
    }
    *len = n;
    return 0;
}

/* On a cluster, every key of a lock must hash by the tag {name} to the
 * name's own slot; a '}' in the name would end the tag early (and an
 * empty tag hashes each key apart).  Elsewhere any name works, as before. */
static int name_fits(const rdlock_client_t *c, const char *name, size_t n)
{
    if (!c->topo->sharded || rdl_slot_name_ok(c->cfg.key_prefix, name, n))
        return 0;
    rdl_log(RDLOCK_LOG_ERROR, "lock name %.*s%s: a name with '}' cannot be used on a Redis Cluster (its keys "
            "would not share the name's hash slot)", n > 64 ? 64 : (int)n, name, n > 64 ? "..." : "");
    return EINVAL;
}

char *rdl_make_key(const rdlock_client_t *c, const char *name, size_t namelen, size_t *keylen)
{
    size_t plen = strlen(c->cfg.key_prefix);
    char *k = malloc(plen + namelen + 3);
    if (k == NULL)
        return NULL;
    memcpy(k, c->cfg.key_prefix, plen);
    k[plen] = '{';
    memcpy(k + plen + 1, name, namelen);
    k[plen + 1 + namelen] = '}';
    k[plen + 2 + namelen] = '\0';
    *keylen = plen + namelen + 2;
    return k;
}

static char *make_key(const rdlock_client_t *c, const rdl_handle_t *h, size_t *keylen)
{
    return rdl_make_key(c, h->name, h->namelen, keylen);
}

/* The registry of live handles, by the address of the lock object they
 * serve: what tells a second init of a live lock (EBUSY) without reading
 * the object, which before its first init is uninitialised memory. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static rdl_table_t live;

static int live_eq(const rdl_tnode_t *nd, const void *obj)
{
    return ((const rdl_handle_t *)nd)->obj == obj;
}

static size_t live_hash(const void *obj)
{
    return rdl_hash(&obj, sizeof obj, 0);
}

/* Register h as serving obj (live_mu held).  0 or ENOMEM. */
static int live_add(rdl_handle_t *h, const void *obj)
{
    h->obj = obj;
    h->node.hash = live_hash(obj);
    return rdl_table_insert(&live, &h->node);
}

static void handle_free(rdl_handle_t *h)
{
    if (h == NULL)
        return;
    free(h->key);
    free(h->name);
    free(h);
}

static int handle_new(const char *name, const rdlock_attr_t *a, int api, rdl_handle_t **out)
{
    rdl_handle_t *h;
    size_t n;
    int rc;

    if ((rc = rdl_name_check(name, &n)) != 0)
        return rc;
    if (a != NULL && !rdl_attr_valid(a))
        return EINVAL;
    h = calloc(1, sizeof *h);
    if (h == NULL || (h->name = malloc(n + 1)) == NULL) {
        free(h);
        return ENOMEM;
    }
    memcpy(h->name, name, n + 1);
    h->namelen = n;
    h->api = api;
    h->type = RDLOCK_ERRORCHECK;
    h->watchdog = -1;
    if (a != NULL) {
        h->type = a->__type;
        h->lease_ms = a->__lease_ms;
        h->watchdog = a->__watchdog;
        h->robust = a->__robust == RDLOCK_ROBUST;
        h->lostcb = a->__lostcb;
        h->lostarg = a->__lostarg;
        h->explicit_client = a->__client;
    }
    if (h->explicit_client != NULL) {
        rdlock_client_t *c = h->explicit_client;
        if ((rc = name_fits(c, h->name, h->namelen)) != 0) {
            handle_free(h);
            return rc;
        }
        h->key = make_key(c, h, &h->keylen);
        if (h->key == NULL) {
            handle_free(h);
            return ENOMEM;
        }
        h->client = c;
        RDL_LOCK(c);
        c->nhandles++;
        RDL_UNLOCK(c);
    }
    *out = h;
    return 0;
}

int rdl_handle_init(rdl_lockobj_t *obj, unsigned magic, const char *name, const rdlock_attr_t *a,
                    int api)
{
    rdl_handle_t *h;
    int rc;
    if (obj == NULL)
        return EINVAL;
    if ((rc = handle_new(name, a, api, &h)) != 0)
        return rc;
    /* Initialising a lock that is initialised (and not destroyed) would
     * leak its handle and leave its client's close EBUSY forever: EBUSY,
     * as pthread_mutex_init(3p) allows.  A static initialiser not yet used
     * has no handle and may be initialised. */
    RDL_CHECK(pthread_mutex_lock(&live_mu));
    if (rdl_table_find(&live, live_hash(obj), live_eq, obj) != NULL)
        rc = EBUSY;
    else
        rc = live_add(h, obj);
    RDL_CHECK(pthread_mutex_unlock(&live_mu));
    if (rc != 0) {
        if (rc == EBUSY)
            rdl_log(RDLOCK_LOG_ERROR, "init of a lock that is initialised and not destroyed");
        if (h->explicit_client != NULL) {
            RDL_LOCK(h->explicit_client);
            h->explicit_client->nhandles--;
            RDL_UNLOCK(h->explicit_client);
        }
        handle_free(h);
        return rc;
    }
    obj->static_name = NULL;
    obj->impl = h;
    obj->magic = magic;
    return 0;
}

int rdl_handle_get(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic, rdl_handle_t **out)
{
    rdl_handle_t *h, *expected = NULL;
    int rc;

    if (obj == NULL)
        return EINVAL;
    if (obj->magic == magic) {
        h = __atomic_load_n((rdl_handle_t **)&obj->impl, __ATOMIC_ACQUIRE);
        if (h == NULL)
            return EINVAL;
        *out = h;
        return 0;
    }
    if (obj->magic != static_magic) {
        rdl_log(RDLOCK_LOG_ERROR, "lock object not initialised (or destroyed)");
        return EINVAL;
    }
    /* Static initialiser: the first user builds the handle; racers publish
     * with a compare-and-swap and the losers free theirs. */
    h = __atomic_load_n((rdl_handle_t **)&obj->impl, __ATOMIC_ACQUIRE);
    if (h != NULL) {
        *out = h;
        return 0;
    }
    /* rdonce_t (once.c) takes the exclusive mode, as a mutex does. */
    rc = handle_new(obj->static_name, NULL, magic == RDRWLOCK__MAGIC ? RDL_API_RWLOCK : RDL_API_MUTEX,
                    &h);
    if (rc != 0)
        return rc;
    if (!__atomic_compare_exchange_n((rdl_handle_t **)&obj->impl, &expected, h, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        handle_free(h);
        h = expected;
    } else {
        /* Now in use: an init of it is EBUSY (best effort without memory). */
        RDL_CHECK(pthread_mutex_lock(&live_mu));
        (void)live_add(h, obj);
        RDL_CHECK(pthread_mutex_unlock(&live_mu));
    }
    *out = h;
    return 0;
}

/* The slow path of rdl_handle_resolve runs once per handle; a mutex keeps
 * it simple. */
static pthread_mutex_t resolve_mu = PTHREAD_MUTEX_INITIALIZER;

void rdl_handle_atfork(int after)
{
    if (after) {
        RDL_CHECK(pthread_mutex_unlock(&live_mu));
        RDL_CHECK(pthread_mutex_unlock(&resolve_mu));
    } else {
        RDL_CHECK(pthread_mutex_lock(&resolve_mu));
        RDL_CHECK(pthread_mutex_lock(&live_mu));
    }
}

int rdl_handle_resolve(rdl_handle_t *h, rdlock_client_t **out)
{
    rdlock_client_t *c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
    int rc = 0;

    if (c != NULL) {
        *out = c;
        return 0;
    }
    if ((rc = rdl_client_default(&c)) != 0)
        return rc;
    if ((rc = name_fits(c, h->name, h->namelen)) != 0)
        return rc;
    RDL_CHECK(pthread_mutex_lock(&resolve_mu));
    if (h->client == NULL) {
        h->key = make_key(c, h, &h->keylen);
        if (h->key == NULL)
            rc = ENOMEM;
        else
            __atomic_store_n(&h->client, c, __ATOMIC_RELEASE); /* key first, then client */
    }
    RDL_CHECK(pthread_mutex_unlock(&resolve_mu));
    if (rc == 0)
        *out = c;
    return rc;
}

int rdl_handle_destroy(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic)
{
    rdl_handle_t *h;
    rdlock_client_t *c;

    if (obj == NULL || (obj->magic != magic && obj->magic != static_magic))
        return EINVAL;
    h = obj->impl;
    if (h != NULL && (c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE)) != NULL) {
        RDL_LOCK(c);
        if (h->nholds > 0 || h->nwaiting > 0) {
            RDL_UNLOCK(c);
            return EBUSY;
        }
        if (h->explicit_client != NULL)
            c->nhandles--;
        RDL_UNLOCK(c);
    }
    obj->magic = 0;
    obj->impl = NULL;
    if (h != NULL && h->obj != NULL) {
        RDL_CHECK(pthread_mutex_lock(&live_mu));
        rdl_table_remove(&live, &h->node);
        RDL_CHECK(pthread_mutex_unlock(&live_mu));
    }
    handle_free(h);
    return 0;
}

unsigned rdl_handle_lease(const rdl_handle_t *h)
{
    return h->lease_ms != 0 ? h->lease_ms : h->client->cfg.lease_ms;
}
