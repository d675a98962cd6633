/* table.c - see table.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/table.h"

size_t rdl_hash(const void *p, size_t n, size_t seed)
{
    /* FNV-1a; keys are lock names, not attacker-controlled input. */
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ULL ^ seed;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return (size_t)(h ^ (h >> 32));
}

rdl_tnode_t *rdl_table_find(const rdl_table_t *t, size_t hash,
                            int (*eq)(const rdl_tnode_t *, const void *), const void *key)
{
    rdl_tnode_t *nd;
    if (t->nb == 0)
        return NULL;
    for (nd = t->b[hash & (t->nb - 1)]; nd != NULL; nd = nd->next)
        if (nd->hash == hash && eq(nd, key))
            return nd;
    return NULL;
}

static int grow(rdl_table_t *t)
{
    size_t nb = t->nb ? t->nb * 2 : 16, i;
    rdl_tnode_t **b = calloc(nb, sizeof *b), *nd, *next;
    if (b == NULL)
        return ENOMEM;
    for (i = 0; i < t->nb; i++)
        for (nd = t->b[i]; nd != NULL; nd = next) {
            next = nd->next;
            nd->next = b[nd->hash & (nb - 1)];
            b[nd->hash & (nb - 1)] = nd;
        }
    free(t->b);
    t->b = b;
    t->nb = nb;
    return 0;
}

int rdl_table_insert(rdl_table_t *t, rdl_tnode_t *node)
{
    size_t i;
    /* Grown at 2 entries per bucket, not 1: the bucket array then costs
     * 4-8 bytes per entry instead of 8-16 (a client may hold a million
     * locks), for chains of 1-2 nodes on average, whose hashes are
     * compared before any key.  A failed grow is fatal only when there is
     * no bucket array at all. */
    if (t->n >= 2 * t->nb && grow(t) != 0 && t->nb == 0)
        return ENOMEM;
    i = node->hash & (t->nb - 1);
    node->next = t->b[i];
    t->b[i] = node;
    t->n++;
    return 0;
}

void rdl_table_remove(rdl_table_t *t, rdl_tnode_t *node)
{
    rdl_tnode_t **pp;
    if (t->nb == 0)
        return;
    for (pp = &t->b[node->hash & (t->nb - 1)]; *pp != NULL; pp = &(*pp)->next)
        if (*pp == node) {
            *pp = node->next;
            node->next = NULL;
            t->n--;
            return;
        }
}

void rdl_table_free(rdl_table_t *t)
{
    free(t->b);
    t->b = NULL;
    t->nb = t->n = 0;
}
