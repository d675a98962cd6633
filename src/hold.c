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

rdl_hold_t *rdl_hold_new(const rdl_handle_t *hd)
{
    rdl_hold_t *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->key = malloc(hd->keylen + 1);
    if (h->key == NULL) {
        free(h);
        return NULL;
    }
    memcpy(h->key, hd->key, hd->keylen + 1);
    h->keylen = hd->keylen;
    /* The name sits between the prefix's "{" and the final "}". */
    h->namelen = hd->namelen;
    h->name = h->key + (hd->keylen - hd->namelen - 1);
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
    free(h->dead_owner);
    free(h->key);
    free(h);
}

void rdl_hold_schedule(rdl_hold_t *hold, const rdl_config_t *cfg, unsigned lease, long long sent_at)
{
    hold->lease_ms = lease;
    /* A configured interval that does not fit this lease falls back to a
     * third of it. */
    hold->interval_ms = cfg->watchdog_interval_ms != 0 && cfg->watchdog_interval_ms < lease
                            ? cfg->watchdog_interval_ms
                            : (lease / 3 ? lease / 3 : 1);
    hold->max_hold_ms = cfg->max_hold_ms;
    hold->acquired_at = sent_at;
    hold->renew_at = sent_at + hold->interval_ms;
    /* On a quorum the masters' clocks may drift apart: less of the lease
     * is ours for sure. */
    hold->expires_at = sent_at + (cfg->nmasters > 0 ? rdl_quorum_validity(cfg, lease) : (long long)lease);
}
