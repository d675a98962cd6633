/* hold.c - local hold records; see hold.h. */
#include "rdl_build.h"

#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "handle.h"
#include "hold.h"
#include "lock_quorum.h"

struct hold_key {
    const char *key;
    size_t keylen;
    unsigned thread;
};

size_t rdl_hold_hash(const char *key, size_t keylen, unsigned thread)
{
    return rdl_hash(key, keylen, thread * 0x9e3779b97f4a7c15ULL);
}

static int hold_eq(const rdl_tnode_t *nd, const void *k)
{
    const rdl_hold_t *h = (const rdl_hold_t *)nd;
    const struct hold_key *hk = k;
    return h->thread == hk->thread && h->keylen == hk->keylen && memcmp(h->key, hk->key, hk->keylen) == 0;
}

rdl_hold_t *rdl_hold_find(rdlock_client_t *c, const char *key, size_t keylen, unsigned thread)
{
    struct hold_key hk = { key, keylen, thread };
    return (rdl_hold_t *)rdl_table_find(&c->holds, rdl_hold_hash(key, keylen, thread), hold_eq, &hk);
}

/* Packed as hold.h says; a field added without care shows here first
 * (LP64: 136 bytes, a 144-byte malloc chunk). */
_Static_assert(sizeof(void *) != 8 || sizeof(rdl_hold_t) <= 136, "rdl_hold_t grew past 136 bytes");

rdl_hold_t *rdl_hold_new(const rdl_handle_t *hd)
{
    rdl_hold_t *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    /* A lock hold's key is its handle's: no copy per hold.  The handle
     * cannot go away first (its destroy is EBUSY while it has holds), and
     * its key never changes once set. */
    h->key = hd->key;
    h->keylen = hd->keylen;
    h->name = hd->name;
    h->namelen = (uint16_t)hd->namelen;
    h->key_borrowed = true;
    return h;
}

int rdl_hold_insert(rdlock_client_t *c, rdl_hold_t *h)
{
    int rc;
    h->node.hash = rdl_hold_hash(h->key, h->keylen, h->thread);
    rc = rdl_table_insert(&c->holds, &h->node);
    if (rc == 0 && h->handle != NULL)
        h->handle->nholds++;
    return rc;
}

void rdl_hold_remove(rdlock_client_t *c, rdl_hold_t *h)
{
    rdl_table_remove(&c->holds, &h->node);
    if (h->handle != NULL)
        h->handle->nholds--;
}

void rdl_hold_free(rdl_hold_t *h)
{
    if (h == NULL)
        return;
    if (!h->key_borrowed)
        free(h->key); /* sem.c's and prim.c's records own theirs */
    free(h);
}

rdlock_lost_fn rdl_hold_lostcb(const rdl_hold_t *h, void **arg)
{
    *arg = NULL;
    return h->kind == RDL_HOLD_LOCK && h->handle != NULL ? rdl_handle_lostcb(h->handle, arg) : NULL;
}

const char *rdl_hold_dead_owner(const rdl_hold_t *h)
{
    return h->has_dead_owner ? (const char *)(h + 1) : NULL;
}

rdl_hold_t *rdl_hold_set_dead_owner(rdl_hold_t *h, const char *owner)
{
    size_t n = strlen(owner);
    rdl_hold_t *nh = realloc(h, sizeof *h + n + 1);
    if (nh == NULL)
        return h;
    memcpy(nh + 1, owner, n + 1);
    nh->has_dead_owner = true;
    return nh;
}

unsigned rdl_hold_interval(const rdl_config_t *cfg, unsigned lease)
{
    /* A configured interval that does not fit this lease falls back to a
     * third of it. */
    return cfg->watchdog_interval_ms != 0 && cfg->watchdog_interval_ms < lease ? cfg->watchdog_interval_ms
                                                                              : (lease / 3 ? lease / 3 : 1);
}

void rdl_hold_schedule(rdl_hold_t *hold, const rdl_config_t *cfg, unsigned lease, long long sent_at)
{
    hold->lease_ms = lease;
    hold->acquired_at = sent_at;
    hold->renew_at = sent_at + rdl_hold_interval(cfg, lease);
    /* On a quorum the masters' clocks may drift apart: less of the lease
     * is ours for sure. */
    hold->expires_at = sent_at + (cfg->nmasters > 0 ? rdl_quorum_validity(cfg, lease) : (long long)lease);
}
