/* slotmap.c - Redis Cluster slots, the slot map and redirections; see
 * slotmap.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/slotmap.h"

/* ---------------------------------------------------------------- hashing */

/* The CRC of each 4-bit value shifted to the top of the register: a
 * nibble at a time is half the speed of Redis' 256-entry table for 1/16 of
 * its size, and a name is hashed once per request, not per byte of data. */
static const uint16_t crc16_nibble[16] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7,
    0x8108, 0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef,
};

uint16_t rdl_crc16(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint16_t crc = 0;
    size_t i;

    for (i = 0; i < len; i++) {
        crc = (uint16_t)((crc << 4) ^ crc16_nibble[((crc >> 12) ^ (p[i] >> 4)) & 0x0f]);
        crc = (uint16_t)((crc << 4) ^ crc16_nibble[((crc >> 12) ^ (p[i] & 0x0f)) & 0x0f]);
    }
    return crc;
}

unsigned rdl_key_slot(const char *key, size_t len)
{
    const char *open, *close;

    /* As keyHashSlot() in Redis' cluster.c: the first '{', the first '}'
     * after it, and something between them; else the whole key. */
    open = len > 0 ? memchr(key, '{', len) : NULL;
    if (open != NULL) {
        size_t rest = len - (size_t)(open - key) - 1;
        close = rest > 0 ? memchr(open + 1, '}', rest) : NULL;
        if (close != NULL && close > open + 1)
            return rdl_crc16(open + 1, (size_t)(close - open - 1)) & (RDL_SLOTS - 1);
    }
    return rdl_crc16(key, len) & (RDL_SLOTS - 1);
}

bool rdl_slot_name_ok(const char *prefix, const char *name, size_t namelen)
{
    return prefix != NULL && name != NULL && namelen > 0 && strchr(prefix, '{') == NULL &&
           memchr(name, '}', namelen) == NULL;
}

unsigned rdl_name_slot(const char *name, size_t namelen)
{
    return rdl_crc16(name, namelen) & (RDL_SLOTS - 1);
}

/* ---------------------------------------------------------------- the map */

static void addr_free(rdl_slot_addr_t *a)
{
    free(a->host);
    a->host = NULL;
}

static void node_free(rdl_slot_node_t *n)
{
    size_t i;
    addr_free(&n->addr);
    for (i = 0; i < n->nreplicas; i++)
        addr_free(&n->replicas[i]);
    free(n->replicas);
    n->replicas = NULL;
    n->nreplicas = 0;
}

void rdl_slotmap_free(rdl_slotmap_t *m)
{
    size_t i;
    if (m == NULL)
        return;
    for (i = 0; i < m->nnodes; i++)
        node_free(&m->nodes[i]);
    free(m->nodes);
    free(m);
}

/* An endpoint that may be kept as a C string: not empty, no NUL inside
 * (it would cut the name short, and with it our idea of the node), not
 * longer than any real host name. */
static bool host_ok(const char *s, size_t len)
{
    return len > 0 && len <= RDL_HOST_MAX && memchr(s, '\0', len) == NULL;
}

enum { EP_OK, EP_UNKNOWN };

/* Node info [endpoint, port, id, ...] into *a (host allocated) and id (41
 * bytes, "" when absent).  EP_OK, EP_UNKNOWN ("?": nothing allocated),
 * EIO or ENOMEM (returned as negative to keep them apart). */
static int node_info(const redisReply *n, const char *self_host, rdl_slot_addr_t *a, char *id)
{
    const redisReply *ep, *port;
    const char *host;
    size_t hl;

    id[0] = '\0';
    a->host = NULL;
    if (n == NULL || n->type != REDIS_REPLY_ARRAY || n->elements < 2)
        return -EIO;
    ep = n->element[0];
    port = n->element[1];
    if (ep == NULL || port == NULL || port->type != REDIS_REPLY_INTEGER || port->integer < 1 ||
        port->integer > 65535)
        return -EIO;
    if (n->elements > 2) {
        const redisReply *nid = n->element[2];
        /* A node id is 40 hex digits; accept any short printable string,
         * as it is only compared, never used as an address. */
        if (nid == NULL || nid->type != REDIS_REPLY_STRING || nid->len > 40 || memchr(nid->str, '\0', nid->len))
            return -EIO;
        memcpy(id, nid->str, nid->len);
        id[nid->len] = '\0';
    }
    if (ep->type == REDIS_REPLY_NIL || (ep->type == REDIS_REPLY_STRING && ep->len == 0)) {
        /* "The address you used to reach me." */
        if (self_host == NULL)
            return -EIO;
        host = self_host;
        hl = strlen(self_host);
    } else if (ep->type == REDIS_REPLY_STRING) {
        if (ep->len == 1 && ep->str[0] == '?')
            return EP_UNKNOWN;
        host = ep->str;
        hl = ep->len;
    } else {
        return -EIO;
    }
    if (!host_ok(host, hl))
        return -EIO;
    a->host = malloc(hl + 1);
    if (a->host == NULL)
        return -ENOMEM;
    memcpy(a->host, host, hl);
    a->host[hl] = '\0';
    a->port = (int)port->integer;
    return EP_OK;
}

static bool addr_eq(const rdl_slot_addr_t *a, const rdl_slot_addr_t *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* The replicas of range e (elements 3...) into n: EP_OK, -EIO, -ENOMEM. */
static int replicas_of(const redisReply *e, const char *self_host, rdl_slot_node_t *n)
{
    size_t i;
    char id[41];

    if (e->elements <= 3)
        return EP_OK;
    n->replicas = calloc(e->elements - 3, sizeof *n->replicas);
    if (n->replicas == NULL)
        return -ENOMEM;
    for (i = 3; i < e->elements; i++) {
        int rc = node_info(e->element[i], self_host, &n->replicas[n->nreplicas], id);
        if (rc < 0)
            return rc;
        if (rc == EP_OK)
            n->nreplicas++;
    }
    return EP_OK;
}

/* The index of master (addr, id) in m, adding it with the replicas of e if
 * new.  Takes addr->host in every case.  >= 0, -EIO, -ENOMEM. */
static int master_index(rdl_slotmap_t *m, size_t *cap, rdl_slot_addr_t *addr, const char *id, const redisReply *e,
                        const char *self_host)
{
    rdl_slot_node_t *n;
    size_t i;
    int rc;

    for (i = 0; i < m->nnodes; i++) {
        bool same_id = id[0] != '\0' && strcmp(id, m->nodes[i].id) == 0;
        bool same_addr = addr_eq(addr, &m->nodes[i].addr);
        if (!same_id && !same_addr)
            continue;
        /* One node at two addresses, or two nodes at one: not a snapshot
         * of a real cluster. */
        rc = (same_addr && (same_id || id[0] == '\0' || m->nodes[i].id[0] == '\0')) ? (int)i : -EIO;
        addr_free(addr);
        if (rc >= 0) {
            /* Its replicas were taken from its first range; those of this
             * one must still be well-formed. */
            rdl_slot_node_t tmp;
            memset(&tmp, 0, sizeof tmp);
            int vr = replicas_of(e, self_host, &tmp);
            node_free(&tmp);
            if (vr < 0)
                return vr;
        }
        return rc;
    }
    if (m->nnodes >= RDL_SLOT_NONE) {
        addr_free(addr);
        return -EIO;
    }
    if (m->nnodes == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        rdl_slot_node_t *nn = realloc(m->nodes, nc * sizeof *nn);
        if (nn == NULL) {
            addr_free(addr);
            return -ENOMEM;
        }
        m->nodes = nn;
        *cap = nc;
    }
    n = &m->nodes[m->nnodes++];
    memset(n, 0, sizeof *n);
    n->addr = *addr;
    addr->host = NULL;
    strcpy(n->id, id);
    rc = replicas_of(e, self_host, n);
    return rc < 0 ? rc : (int)(m->nnodes - 1);
}

int rdl_slotmap_parse(const redisReply *r, const char *self_host, rdl_slotmap_t **out)
{
    /* Which slots some range named already, owner known or not: ranges
     * may not overlap. */
    uint8_t seen[RDL_SLOTS / 8];
    rdl_slotmap_t *m;
    size_t cap = 0, i;
    int rc = 0;

    *out = NULL;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return EIO;
    m = calloc(1, sizeof *m);
    if (m == NULL)
        return ENOMEM;
    memset(m->owner, 0xff, sizeof m->owner); /* RDL_SLOT_NONE everywhere */
    memset(seen, 0, sizeof seen);
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        rdl_slot_addr_t addr;
        char id[41];
        long long start, end, s;
        int idx;

        if (e == NULL || e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0] == NULL ||
            e->element[1] == NULL || e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER) {
            rc = EIO;
            break;
        }
        start = e->element[0]->integer;
        end = e->element[1]->integer;
        if (start < 0 || end < start || end >= RDL_SLOTS) {
            rc = EIO;
            break;
        }
        for (s = start; s <= end; s++) {
            if (seen[s >> 3] & (1u << (s & 7)))
                break;
            seen[s >> 3] |= (uint8_t)(1u << (s & 7));
        }
        if (s <= end) {
            rc = EIO;
            break;
        }
        idx = node_info(e->element[2], self_host, &addr, id);
        if (idx < 0) {
            rc = -idx;
            break;
        }
        if (idx == EP_UNKNOWN)
            continue; /* its slots stay without owner */
        idx = master_index(m, &cap, &addr, id, e, self_host);
        if (idx < 0) {
            rc = -idx;
            break;
        }
        for (s = start; s <= end; s++)
            m->owner[s] = (uint16_t)idx;
        m->nslots += (size_t)(end - start + 1);
    }
    if (rc != 0) {
        rdl_slotmap_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

const rdl_slot_node_t *rdl_slotmap_node(const rdl_slotmap_t *m, unsigned slot)
{
    if (m == NULL || slot >= RDL_SLOTS || m->owner[slot] == RDL_SLOT_NONE)
        return NULL;
    return &m->nodes[m->owner[slot]];
}

int rdl_slotmap_find(const rdl_slotmap_t *m, const char *host, int port)
{
    size_t i;
    if (m == NULL || host == NULL)
        return -1;
    for (i = 0; i < m->nnodes; i++)
        if (m->nodes[i].addr.port == port && strcmp(m->nodes[i].addr.host, host) == 0)
            return (int)i;
    return -1;
}

bool rdl_slotmap_same(const rdl_slotmap_t *a, const rdl_slotmap_t *b)
{
    uint16_t *to;
    size_t i;
    bool same = true;

    if (a == NULL || b == NULL)
        return a == b;
    if (a->nslots != b->nslots)
        return false;
    /* a's node i is b's node to[i] (RDL_SLOT_NONE: b has no such node). */
    to = malloc((a->nnodes ? a->nnodes : 1) * sizeof *to);
    if (to == NULL)
        return false; /* "changed": the caller refreshes, which is safe */
    for (i = 0; i < a->nnodes; i++) {
        int j = rdl_slotmap_find(b, a->nodes[i].addr.host, a->nodes[i].addr.port);
        to[i] = j < 0 ? RDL_SLOT_NONE : (uint16_t)j;
    }
    for (i = 0; i < RDL_SLOTS && same; i++) {
        uint16_t oa = a->owner[i], ob = b->owner[i];
        same = oa == RDL_SLOT_NONE ? ob == RDL_SLOT_NONE : (to[oa] != RDL_SLOT_NONE && to[oa] == ob);
    }
    free(to);
    return same;
}

/* ---------------------------------------------------------------- errors */

static bool is_error(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR && r->str != NULL;
}

/* The error's code is the word prefix: followed by a blank or the end. */
static bool code_is(const redisReply *r, const char *code)
{
    size_t n = strlen(code);
    return r->len >= n && memcmp(r->str, code, n) == 0 && (r->len == n || r->str[n] == ' ');
}

int rdl_cluster_error(const redisReply *r)
{
    if (!is_error(r))
        return RDL_CL_NONE;
    if (code_is(r, "MOVED"))
        return RDL_CL_MOVED;
    if (code_is(r, "ASK"))
        return RDL_CL_ASK;
    if (code_is(r, "TRYAGAIN"))
        return RDL_CL_TRYAGAIN;
    if (code_is(r, "CLUSTERDOWN"))
        return RDL_CL_CLUSTERDOWN;
    if (code_is(r, "LOADING"))
        return RDL_CL_LOADING;
    if (code_is(r, "CROSSSLOT"))
        return RDL_CL_CROSSSLOT;
    return RDL_CL_NONE;
}

bool rdl_cluster_backoff(int cls)
{
    return cls == RDL_CL_TRYAGAIN || cls == RDL_CL_CLUSTERDOWN || cls == RDL_CL_LOADING;
}

/* Decimal digits s[0, n) as a value <= max: true and *v. */
static bool digits(const char *s, size_t n, unsigned long max, unsigned long *v)
{
    unsigned long x = 0;
    size_t i;
    if (n == 0 || n > 5)
        return false;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (unsigned long)(s[i] - '0');
    }
    if (x > max)
        return false;
    *v = x;
    return true;
}

int rdl_redirect_parse(const redisReply *err, const char *self_host, rdl_redirect_t *out)
{
    const char *p, *end, *sp, *colon;
    unsigned long slot, port;
    size_t hl;
    int kind = rdl_cluster_error(err);

    memset(out, 0, sizeof *out);
    if (kind != RDL_CL_MOVED && kind != RDL_CL_ASK)
        return ENOENT;
    p = err->str + (kind == RDL_CL_MOVED ? 5 : 3);
    end = err->str + err->len;
    /* " <slot> <endpoint>:<port>", single blanks, nothing after. */
    if (p == end || *p != ' ')
        goto bad;
    p++;
    sp = memchr(p, ' ', (size_t)(end - p));
    if (sp == NULL || !digits(p, (size_t)(sp - p), RDL_SLOTS - 1, &slot))
        goto bad;
    p = sp + 1;
    colon = NULL;
    for (sp = p; sp < end; sp++) {
        if (*sp == ' ' || *sp == '\0')
            goto bad;
        if (*sp == ':')
            colon = sp;
    }
    if (colon == NULL || !digits(colon + 1, (size_t)(end - colon - 1), 65535, &port) || port == 0)
        goto bad;
    out->kind = kind;
    out->slot = (unsigned)slot;
    out->port = (int)port;
    hl = (size_t)(colon - p);
    if (hl == 1 && p[0] == '?')
        return EAGAIN; /* the owner is known by id only */
    if (hl == 0) {
        if (self_host == NULL)
            goto bad;
        p = self_host;
        hl = strlen(self_host);
    }
    if (!host_ok(p, hl))
        goto bad;
    memcpy(out->host, p, hl);
    out->host[hl] = '\0';
    return 0;
bad:
    memset(out, 0, sizeof *out);
    return EIO;
}
