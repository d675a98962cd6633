/* handle.h - what an rdlock_t / rdrwlock_t points to: the name, the
 * attributes it was initialised with and, once known, its client and the
 * Redis key.  rdlock_t stays fixed-size (ABI, static initialisers) by
 * keeping only a pointer to this. */
#ifndef RDL_HANDLE_H
#define RDL_HANDLE_H

#include <stddef.h>

#include "rdlock.h"
#include "table.h"

typedef struct rdl_handle {
    rdl_tnode_t node;       /* in the registry of live handles, by obj address */
    const void *obj;        /* the rdlock_t / rdrwlock_t it serves */
    char *name;             /* owned copy, NUL-terminated for callbacks */
    size_t namelen;
    int api;                /* RDL_API_MUTEX or RDL_API_RWLOCK */
    int type;               /* RDLOCK_ERRORCHECK or RDLOCK_RECURSIVE */
    unsigned lease_ms;      /* 0 = the client's */
    int watchdog;           /* -1 = the client's, else 0/1 */
    int robust;             /* RDLOCK_ROBUST: exclusive acquisitions may give EOWNERDEAD */
    rdlock_lost_fn lostcb;
    void *lostarg;
    rdlock_client_t *explicit_client; /* from the attributes, or NULL */
    rdlock_client_t *client; /* resolved: explicit or the default; set (atomically) after key */
    char *key;              /* "<prefix>{<name>}", valid once client is set */
    size_t keylen;
    int nholds;             /* holds taken through this handle (client mutex) */
    int nwaiting;           /* threads inside a condition or barrier wait
                               through it (client mutex): destroy is EBUSY
                               from before the wait registers, not only
                               once its lease record exists */
    int sem_type;           /* a semaphore's (sem.c): RDSEM_PLAIN or RDSEM_LEASED */
    unsigned sem_value;     /* ... and the value it starts with */
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

/* init: create the handle for obj (EINVAL, ENOMEM). */
int rdl_handle_init(rdl_lockobj_t *obj, unsigned magic, const char *name, const rdlock_attr_t *a,
                    int api);
/* Get the handle of an initialised (or statically initialised) object,
 * creating it on first use of a static one, safely under races.  EINVAL
 * for NULL, uninitialised or destroyed objects, or the wrong kind. */
int rdl_handle_get(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic, rdl_handle_t **out);
/* Resolve the client (creating the process default one if needed) and the
 * key.  Returns the default client's open error (EINVAL, ENOENT, EACCES,
 * EIO with fail_fast, ENOMEM). */
int rdl_handle_resolve(rdl_handle_t *h, rdlock_client_t **out);
/* fork(): hold the resolve mutex across it (0 before, 1 after). */
void rdl_handle_atfork(int after);

/* destroy: EINVAL, EBUSY (held through this handle), or 0. */
int rdl_handle_destroy(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic);

/* Effective settings. */
unsigned rdl_handle_lease(const rdl_handle_t *h);

#endif
