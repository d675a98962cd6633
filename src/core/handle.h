/* handle.h - what an rdlock_t / rdrwlock_t points to: the name, the
 * attributes it was initialised with and, once known, its client and the
 * Redis key.  rdlock_t stays fixed-size (ABI, static initialisers) by
 * keeping only a pointer to this. */
#ifndef RDL_HANDLE_H
#define RDL_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdlock.h"
#include "base/table.h"

/* One allocation per lock object, packed like the holds (hold.h): an
 * application may keep a million of them.  The strings follow the record
 * in the same allocation; so does the lost callback, when there is one. */
/* Which API a lock object or a hold belongs to: a hold is released only
 * through the API that took it. */
enum { RDL_API_MUTEX = 1, RDL_API_RWLOCK = 2, RDL_API_SEM = 3, RDL_API_COND = 4, RDL_API_BARRIER = 5 };

typedef struct rdl_handle {
    rdl_tnode_t node;       /* in the registry of live handles: its hash is
                               the address of the object it serves, mixed
                               one-to-one, so the object itself is not
                               stored (handle.c: live_hash) */
    char *name;             /* NUL-terminated for callbacks (in buf) */
    rdlock_client_t *client; /* resolved: explicit or the default; set (atomically) after key */
    char *key;              /* "<prefix>{<name>}", valid once client is set
                               (in buf when the client was known at init) */
    unsigned lease_ms;      /* 0 = the client's */
    int nholds;             /* holds taken through this handle, and threads
                               inside a condition or barrier wait through
                               it, from before the wait registers (client
                               mutex): destroy is EBUSY while it is > 0 */
    unsigned sem_value;     /* a semaphore's start value; a barrier's count */
    uint16_t namelen;       /* <= RDL_NAME_MAX */
    uint16_t keylen;        /* <= RDL_PREFIX_MAX + RDL_NAME_MAX + 2 */
    uint16_t slot;          /* key's Cluster slot, set with key: that of every
                               key of the name and of its fencing counter
                               (proto/slottag.h), found once, not per call */
    signed char api;        /* RDL_API_MUTEX or RDL_API_RWLOCK (sem.c, ...: theirs) */
    signed char type;       /* RDLOCK_ERRORCHECK or RDLOCK_RECURSIVE */
    signed char watchdog;   /* -1 = the client's, else 0/1 */
    signed char sem_type;   /* a semaphore's (sem.c): RDSEM_PLAIN or RDSEM_LEASED */
    bool robust : 1;        /* RDLOCK_ROBUST: exclusive acquisitions may give EOWNERDEAD */
    bool explicit_client : 1; /* client came from the attributes (counted in its nhandles) */
    bool key_inline : 1;    /* key is in buf, not a separate allocation */
    bool has_lostcb : 1;    /* buf starts with the lost callback and its argument */
    bool registered;        /* in the registry of live handles: a byte of its
                               own, as it is set after the handle is
                               published (a static initialiser's, by
                               rdl_handle_get) and must not share one with
                               fields read meanwhile */
    char buf[];             /* [lost callback, argument] name NUL [key NUL] */
} rdl_handle_t;

/* The public lock objects share this prefix (rdlock_t, rdrwlock_t). */
typedef struct rdl_lockobj {
    unsigned int magic;
    const char *static_name;
    void *impl;
} rdl_lockobj_t;

/* Validate a name (1..512 bytes): 0 or EINVAL. */
int rdl_name_check(const char *name, size_t *len);

/* "<prefix>{<name>}": every key of the lock adds a suffix after this, so
 * all share the hash tag {<name>} (Redis Cluster).  NULL on ENOMEM. */
char *rdl_make_key(const rdlock_client_t *c, const char *name, size_t namelen, size_t *keylen);

/* init: create the handle for obj.  0, or EINVAL (obj NULL, a bad name or
 * attribute object, a name that does not fit the attributes' client),
 * EBUSY (obj is initialised and not destroyed), ENOMEM. */
int rdl_handle_init(rdl_lockobj_t *obj, unsigned magic, const char *name, const rdlock_attr_t *a,
                    int api);
/* Get the handle of an initialised (or statically initialised) object,
 * creating it on first use of a static one, safely under races.  0 and
 * *out, or EINVAL for NULL, uninitialised or destroyed objects, or the
 * wrong kind (also a static initialiser's bad name), ENOMEM. */
int rdl_handle_get(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic, rdl_handle_t **out);
/* Bind a handle made without a client to c (the default client: see
 * rdl_handle_resolve in clients.h) and make its key, once: a second
 * thread's bind finds it done.  0, EINVAL (the name does not fit c's key
 * prefix), ENOMEM. */
int rdl_handle_bind(rdl_handle_t *h, rdlock_client_t *c);
/* fork(): hold the resolve mutex across it (0 before, 1 after). */
void rdl_handle_atfork(int after);

/* destroy: 0, or EINVAL (NULL, not initialised, destroyed already),
 * EBUSY (held through this handle). */
int rdl_handle_destroy(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic);

/* Effective settings. */
unsigned rdl_handle_lease(const rdl_handle_t *h);
/* The lost callback from the attributes and its argument (NULL if none). */
rdlock_lost_fn rdl_handle_lostcb(const rdl_handle_t *h, void **arg);

#endif
