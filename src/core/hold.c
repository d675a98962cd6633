/* hold.c - local hold records; see hold.h. */
#include "rdl_build.h"

#include <stdlib.h>
#include <string.h>

#include "base/lease.h"
#include "client/client.h"
#include "core/handle.h"
#include "core/hold.h"
#include "exec/exec.h"

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
 * (LP64: 104 bytes, a 112-byte malloc chunk: glibc's chunks are 16-byte
 * steps of usable size + 8). */
_Static_assert(sizeof(void *) != 8 || sizeof(rdl_hold_t) <= 104, "rdl_hold_t grew past 104 bytes");

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
    h->namelen = hd->namelen;
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

const char *rdl_hold_name(const rdl_hold_t *h)
{
    /* "<prefix>{<name>}<suffix>": the handle's key ends at the "}".  Every
     * record has its handle (which outlives it); a search for the "{" is
     * only a fallback. */
    const char *p;
    if (h->handle != NULL && h->handle->keylen > h->namelen)
        return h->key + (h->handle->keylen - h->namelen - 1);
    p = memchr(h->key, '{', h->keylen);
    return p != NULL ? p + 1 : h->key;
}

char *rdl_hold_call_str(const rdl_hold_t *h, char *buf)
{
    buf[rdl_fmt_u64(buf, h->call)] = '\0';
    return buf;
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

rdl_exit_hold_t *rdl_exit_holds(rdlock_client_t *c, unsigned kinds, size_t *n)
{
    rdl_exit_hold_t *v = NULL;
    size_t cap = 0, i;
    rdl_tnode_t *nd;

    *n = 0;
    RDL_TABLE_FOREACH(&c->holds, i, nd)
    {
        rdl_hold_t *hold = (rdl_hold_t *)nd;
        rdl_exit_hold_t *e;
        bool prim = hold->kind == RDL_HOLD_COND || hold->kind == RDL_HOLD_BARRIER;
        if (!(kinds & (1u << hold->kind)) || hold->lost || (hold->releasing && !prim))
            continue;
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            rdl_exit_hold_t *nv = realloc(v, ncap * sizeof *nv);
            if (nv == NULL)
                break;
            v = nv;
            cap = ncap;
        }
        e = &v[*n];
        if ((e->key = malloc(hold->keylen)) == NULL)
            break;
        memcpy(e->key, hold->key, hold->keylen);
        e->keylen = hold->keylen;
        e->handle = hold->handle;
        e->unsure_until = rdl_hold_unsure_until(hold);
        e->thread = hold->thread;
        e->lease_ms = hold->lease_ms;
        e->kind = hold->kind;
        e->mode = hold->mode;
        rdl_hold_call_str(hold, e->call);
        hold->releasing = true;
        (*n)++;
    }
    return v;
}

void rdl_exit_holds_free(rdl_exit_hold_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
}

void rdl_hold_schedule(rdl_hold_t *hold, const rdlock_client_t *c, unsigned lease, long long sent_at)
{
    hold->lease_ms = lease;
    hold->acquired_at = sent_at;
    hold->renew_at = sent_at + rdl_lease_interval(&c->cfg, lease);
    hold->expires_at = sent_at + rdl_lease_validity(&c->cfg, lease, (c->exec->caps & RDL_EXEC_DRIFT) != 0);
}
