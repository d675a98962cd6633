/* fuzz_slotmap.c - libFuzzer target for what librdlock will read from a
 * Redis Cluster node: the input is a byte stream as a connection would
 * deliver it; hiredis parses it into replies, and every reply, and every
 * element of it down to a small depth, goes through src/proto/slotmap.c: the
 * CLUSTER SLOTS parser (with and without a host for "the address you used
 * to reach me"), the MOVED / ASK parser, the error classes and the key
 * hash.  A broken or hostile node must get at most EIO out of them, never
 * a crash, a leak, undefined behaviour, or a map that breaks its own
 * promises (checked below).  Built and run by tests/fuzz/run-fuzz.sh. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "proto/slotmap.h"

/* As in fuzz_reply.c: hiredis 0.14 allocates an array's element table
 * from its declared length at once, so inputs that declare huge lengths
 * test hiredis's memory, not our parsers. */
static int declares_huge(const uint8_t *d, size_t n)
{
    size_t i;
    for (i = 0; i + 1 < n; i++)
        if (d[i] == '*' || d[i] == '$') {
            size_t j = i + 1;
            unsigned long v = 0;
            if (j < n && d[j] == '-')
                j++;
            while (j < n && d[j] >= '0' && d[j] <= '9' && v <= 1000000)
                v = v * 10 + (unsigned long)(d[j++] - '0');
            if (v > 100000)
                return 1;
        }
    return 0;
}

static void check_addr(const rdl_slot_addr_t *a)
{
    size_t len;
    if (a->host == NULL)
        __builtin_trap();
    len = strlen(a->host);
    if (len == 0 || len > RDL_HOST_MAX || a->port < 1 || a->port > 65535)
        __builtin_trap();
}

/* What rdl_slotmap_parse promises of a map it returns. */
static void check_map(const rdl_slotmap_t *m)
{
    size_t i, k, owned = 0;
    for (i = 0; i < RDL_SLOTS; i++) {
        if (m->owner[i] == RDL_SLOT_NONE) {
            if (rdl_slotmap_node(m, (unsigned)i) != NULL)
                __builtin_trap();
            continue;
        }
        if (m->owner[i] >= m->nnodes || rdl_slotmap_node(m, (unsigned)i) != &m->nodes[m->owner[i]])
            __builtin_trap();
        owned++;
    }
    if (owned != m->nslots || rdl_slotmap_node(m, RDL_SLOTS) != NULL)
        __builtin_trap();
    for (i = 0; i < m->nnodes; i++) {
        check_addr(&m->nodes[i].addr);
        if (memchr(m->nodes[i].id, '\0', sizeof m->nodes[i].id) == NULL)
            __builtin_trap();
        /* Each master once: its address finds it. */
        if (rdl_slotmap_find(m, m->nodes[i].addr.host, m->nodes[i].addr.port) != (int)i)
            __builtin_trap();
        for (k = 0; k < m->nodes[i].nreplicas; k++)
            check_addr(&m->nodes[i].replicas[k]);
    }
    if (!rdl_slotmap_same(m, m))
        __builtin_trap();
}

static void check_redirect(const redisReply *r, const char *self)
{
    rdl_redirect_t rd;
    int cls = rdl_cluster_error(r);
    int rc = rdl_redirect_parse(r, self, &rd);

    if (memchr(rd.host, '\0', sizeof rd.host) == NULL)
        __builtin_trap();
    switch (rc) {
    case 0:
        if ((rd.kind != RDL_CL_MOVED && rd.kind != RDL_CL_ASK) || rd.kind != cls || rd.slot >= RDL_SLOTS ||
            rd.host[0] == '\0' || rd.port < 1 || rd.port > 65535)
            __builtin_trap();
        break;
    case EAGAIN:
        if (rd.kind != cls || rd.host[0] != '\0' || rd.slot >= RDL_SLOTS)
            __builtin_trap();
        break;
    case ENOENT:
        if (cls == RDL_CL_MOVED || cls == RDL_CL_ASK)
            __builtin_trap();
        break;
    case EIO:
        if (cls != RDL_CL_MOVED && cls != RDL_CL_ASK)
            __builtin_trap();
        break;
    default:
        __builtin_trap();
    }
    (void)rdl_cluster_backoff(cls);
}

static void exercise(const redisReply *r, int depth)
{
    rdl_slotmap_t *m = NULL, *m2 = NULL;
    size_t i;
    int rc;

    rc = rdl_slotmap_parse(r, "self.example", &m);
    if (rc == 0) {
        if (m == NULL)
            __builtin_trap();
        check_map(m);
    } else if ((rc != EIO && rc != ENOMEM) || m != NULL) {
        __builtin_trap();
    }
    /* Without a host for "" and nil: the same map, or EIO. */
    rc = rdl_slotmap_parse(r, NULL, &m2);
    if (rc == 0) {
        check_map(m2);
        if (m == NULL || !rdl_slotmap_same(m, m2))
            __builtin_trap();
    }
    rdl_slotmap_free(m);
    rdl_slotmap_free(m2);

    check_redirect(r, "self.example");
    check_redirect(r, NULL);
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS) {
        if (rdl_key_slot(r->str, r->len) >= RDL_SLOTS)
            __builtin_trap();
        if (rdl_slot_name_ok("rdlock:", r->str, r->len) &&
            rdl_name_slot(r->str, r->len) != rdl_key_slot(r->str, r->len) && memchr(r->str, '{', r->len) == NULL)
            __builtin_trap(); /* a name without braces hashes whole */
    }
    if (r->type == REDIS_REPLY_ARRAY && depth < 3)
        for (i = 0; i < r->elements; i++)
            exercise(r->element[i], depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *rd;
    int i;

    if (declares_huge(data, size))
        return 0;
    rd = redisReaderCreate();
    if (rd == NULL)
        return 0;
    if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK)
        for (i = 0; i < 32; i++) {
            void *r = NULL;
            if (redisReaderGetReply(rd, &r) != REDIS_OK || r == NULL)
                break;
            exercise(r, 0);
            freeReplyObject(r);
        }
    redisReaderFree(rd);
    return 0;
}
