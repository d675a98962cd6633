/* table.h - an intrusive chained hash table, used for the holds and wait
 * queues of a client.  Not thread-safe: the client's mutex guards it. */
#ifndef RDL_TABLE_H
#define RDL_TABLE_H

#include <stddef.h>

typedef struct rdl_tnode {
    struct rdl_tnode *next;
    size_t hash;
} rdl_tnode_t;

typedef struct rdl_table {
    rdl_tnode_t **b;
    size_t nb; /* buckets, a power of two (0 before the first insert) */
    size_t n;  /* entries */
} rdl_table_t;

size_t rdl_hash(const void *p, size_t n, size_t seed);

/* First node with this hash for which eq(node, key) is true, or NULL. */
rdl_tnode_t *rdl_table_find(const rdl_table_t *t, size_t hash,
                            int (*eq)(const rdl_tnode_t *, const void *), const void *key);
/* Insert node (node->hash set by the caller).  0 or ENOMEM. */
int rdl_table_insert(rdl_table_t *t, rdl_tnode_t *node);
void rdl_table_remove(rdl_table_t *t, rdl_tnode_t *node);
/* Free the bucket array (not the nodes). */
void rdl_table_free(rdl_table_t *t);

#define RDL_TABLE_FOREACH(t, i, nd) \
    for ((i) = 0; (i) < (t)->nb; (i)++) \
        for ((nd) = (t)->b[i]; (nd) != NULL; (nd) = (nd)->next)

/* The same, where the body may remove or free nd. */
#define RDL_TABLE_FOREACH_SAFE(t, i, nd, nx) \
    for ((i) = 0; (i) < (t)->nb; (i)++) \
        for ((nd) = (t)->b[i]; (nd) != NULL && ((nx) = (nd)->next, 1); (nd) = (nx))

#endif
