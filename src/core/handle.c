/* handle.c - lock handles behind rdlock_t / rdrwlock_t; see handle.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "core/attr.h"
#include "core/handle.h"
#include "proto/slotmap.h"
#include "topology/topology.h"

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

/* The registry of live handles, by the address of the lock object they
 * serve: what tells a second init of a live lock (EBUSY) without reading
 * the object, which before its first init is uninitialised memory. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static rdl_table_t live;

_Static_assert(sizeof(uintptr_t) <= sizeof(size_t), "an object address must fit a table hash");

/* A one-to-one mix of the object's address: equal hashes mean the same
 * object, so the node's hash is all the registry keeps of it (and the
 * low bits that pick the bucket depend on every bit of the address).
 * Each step (xor with a shift, multiplication by an odd constant) can be
 * undone, so the whole is a bijection: splitmix64's finaliser on LP64,
 * murmur3's fmix32 where size_t has 32 bits. */
static size_t live_hash(const void *obj)
{
    size_t x = (size_t)(uintptr_t)obj;
#if SIZE_MAX > 0xffffffffu
    x ^= x >> 30;
    x *= (size_t)0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= (size_t)0x94d049bb133111ebULL;
    x ^= x >> 31;
#else
    x ^= x >> 16;
    x *= (size_t)0x85ebca6bu;
    x ^= x >> 13;
    x *= (size_t)0xc2b2ae35u;
    x ^= x >> 16;
#endif
    return x;
}

static int live_eq(const rdl_tnode_t *nd, const void *obj)
{
    (void)nd, (void)obj;
    return 1; /* rdl_table_find compared the hashes: one-to-one, see above */
}

/* Register h as serving obj (live_mu held).  0 or ENOMEM. */
static int live_add(rdl_handle_t *h, const void *obj)
{
    int rc;
    h->node.hash = live_hash(obj);
    rc = rdl_table_insert(&live, &h->node);
    h->registered = rc == 0;
    return rc;
}

static void handle_free(rdl_handle_t *h)
{
    if (h == NULL)
        return;
    if (!h->key_inline)
        free(h->key);
    free(h);
}

/* The lost callback and its argument, at the start of buf when set
 * (unaligned there: copied in and out). */
typedef struct lostcb_pair {
    rdlock_lost_fn fn;
    void *arg;
} lostcb_pair_t;

rdlock_lost_fn rdl_handle_lostcb(const rdl_handle_t *h, void **arg)
{
    lostcb_pair_t p;
    if (!h->has_lostcb) {
        *arg = NULL;
        return NULL;
    }
    memcpy(&p, h->buf, sizeof p);
    *arg = p.arg;
    return p.fn;
}

static int handle_new(const char *name, const rdlock_attr_t *a, int api, rdl_handle_t **out)
{
    rdl_handle_t *h;
    rdlock_client_t *c = a != NULL ? a->__client : NULL;
    lostcb_pair_t cb = { a != NULL ? a->__lostcb : NULL, a != NULL ? a->__lostarg : NULL };
    size_t n, off, plen = 0, keylen = 0, size;
    int rc;

    if ((rc = rdl_name_check(name, &n)) != 0)
        return rc;
    if (a != NULL && !rdl_attr_valid(a))
        return EINVAL;
    if (c != NULL) {
        if ((rc = name_fits(c, name, n)) != 0)
            return rc;
        plen = strlen(c->cfg.key_prefix);
        keylen = plen + n + 2;
    }
    /* One allocation: [callback] name NUL [key NUL], the key when the
     * client is known now; else it comes with the client (resolve).  From
     * buf's offset, not sizeof, which adds buf's alignment padding: that
     * can cost a 16-byte malloc size class (a 23-byte name: 121 -> 119
     * bytes, a 128-byte chunk instead of 144). */
    size = offsetof(rdl_handle_t, buf) + (cb.fn != NULL ? sizeof cb : 0) + n + 1 + (c != NULL ? keylen + 1 : 0);
    h = calloc(1, size > sizeof *h ? size : sizeof *h);
    if (h == NULL)
        return ENOMEM;
    off = 0;
    if (cb.fn != NULL) {
        memcpy(h->buf, &cb, sizeof cb);
        h->has_lostcb = true;
        off = sizeof cb;
    }
    h->name = h->buf + off;
    memcpy(h->name, name, n);
    h->name[n] = '\0';
    h->namelen = (uint16_t)n;
    h->api = (signed char)api;
    h->type = RDLOCK_ERRORCHECK;
    h->watchdog = -1;
    if (a != NULL) {
        h->type = (signed char)a->__type;
        h->lease_ms = a->__lease_ms;
        h->watchdog = (signed char)a->__watchdog;
        h->robust = a->__robust == RDLOCK_ROBUST;
    }
    if (c != NULL) {
        char *k = h->name + n + 1;
        memcpy(k, c->cfg.key_prefix, plen);
        k[plen] = '{';
        memcpy(k + plen + 1, name, n);
        k[plen + 1 + n] = '}';
        k[keylen] = '\0';
        h->key = k;
        h->keylen = (uint16_t)keylen;
        h->slot = (uint16_t)rdl_key_slot(k, keylen);
        h->key_inline = true;
        h->explicit_client = true;
        h->client = c;
        RDL_LOCK(c);
        c->nhandles++;
        RDL_UNLOCK(c);
    }
    *out = h;
    return 0;
}

/* What a magic number makes of an object, for log lines that name the
 * call's own kind rather than "lock" for all of them. */
static const char *kind_of(unsigned magic)
{
    switch (magic) {
    case RDRWLOCK__MAGIC:
        return "read-write lock";
    case RDSEM__MAGIC:
        return "semaphore";
    case RDCOND__MAGIC:
        return "condition variable";
    case RDBARRIER__MAGIC:
        return "barrier";
    case RDONCE__MAGIC:
        return "run-once object";
    default:
        return "lock";
    }
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
            rdl_log(RDLOCK_LOG_ERROR, "init of a %s that is initialised and not destroyed (name %s): EBUSY",
                    kind_of(magic), name);
        if (h->explicit_client) {
            RDL_LOCK(h->client);
            h->client->nhandles--;
            RDL_UNLOCK(h->client);
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
        rdl_log(RDLOCK_LOG_ERROR, "%s not initialised (or destroyed): EINVAL", kind_of(magic));
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

/* rdl_handle_bind runs once per handle (the slow path of
 * rdl_handle_resolve, clients.c); a mutex keeps it simple. */
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

int rdl_handle_bind(rdl_handle_t *h, rdlock_client_t *c)
{
    int rc;

    if ((rc = name_fits(c, h->name, h->namelen)) != 0)
        return rc;
    RDL_CHECK(pthread_mutex_lock(&resolve_mu));
    if (h->client == NULL) {
        size_t keylen;
        h->key = rdl_make_key(c, h->name, h->namelen, &keylen);
        if (h->key == NULL) {
            rc = ENOMEM;
        } else {
            h->keylen = (uint16_t)keylen;
            h->slot = (uint16_t)rdl_key_slot(h->key, keylen);
            __atomic_store_n(&h->client, c, __ATOMIC_RELEASE); /* key first, then client */
        }
    }
    RDL_CHECK(pthread_mutex_unlock(&resolve_mu));
    return rc;
}

int rdl_handle_destroy(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic)
{
    rdl_handle_t *h;
    rdlock_client_t *c;

    if (obj == NULL)
        return EINVAL;
    if (obj->magic != magic && obj->magic != static_magic) {
        /* As a call on it would say: a second destroy is a bug too. */
        rdl_log(RDLOCK_LOG_ERROR, "destroy of a %s that is not initialised (or destroyed already): EINVAL",
                kind_of(magic));
        return EINVAL;
    }
    h = obj->impl;
    if (h != NULL && (c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE)) != NULL) {
        RDL_LOCK(c);
        if (h->nholds > 0) {
            RDL_UNLOCK(c);
            return EBUSY;
        }
        if (h->explicit_client)
            c->nhandles--;
        RDL_UNLOCK(c);
    }
    obj->magic = 0;
    obj->impl = NULL;
    if (h != NULL && h->registered) {
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
