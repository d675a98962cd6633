/* admin.h - looking at and clearing a lock name from outside its holders:
 * the state that `rdlock --status` prints, and rdlock_reset_name(). */
#ifndef RDL_ADMIN_H
#define RDL_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "rdlock.h"

/* Robust state of a name's exclusive mode. */
enum {
    RDL_ROBUST_CLEAN,          /* last exclusive hold ended by unlock (or held now) */
    RDL_ROBUST_OWNER_DEAD,     /* last exclusive hold ended by expiry or loss */
    RDL_ROBUST_INCONSISTENT,   /* handed over with EOWNERDEAD, not made consistent */
    RDL_ROBUST_NOTRECOVERABLE  /* every acquisition fails until reset */
};

typedef struct rdl_party {
    char owner[64];            /* "<client id>:<thread>" */
    long long remaining_ms;    /* of the lease (holder) or queue mark (writer) */
    uint64_t token;            /* holders only */
    unsigned count;            /* holders: hold count as last reported */
    long pid;
    unsigned thread;
    char host[256];
} rdl_party_t;

typedef struct rdl_status {
    char mode;                 /* 0 free, 'x' exclusive, 's' shared */
    size_t nholders;
    rdl_party_t *holders;
    size_t nwriters;           /* queued writers, in queue order */
    rdl_party_t *writers;
    long long readers_waiting;
    uint64_t fence;            /* the last fencing token given out */
    int robust;                /* RDL_ROBUST_* */
} rdl_status_t;

/* Snapshot of one name (c NULL: the default client).  0, or EINVAL (bad
 * name, config), ENOENT, EACCES, EIO, ENOMEM.  Free with rdl_status_free. */
int rdl_status(rdlock_client_t *c, const char *name, rdl_status_t *st);
void rdl_status_free(rdl_status_t *st);

#endif
