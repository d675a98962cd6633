/* slotmap.h - Redis Cluster routing, decoded: the hash slot of a key, the
 * rule that keeps every key of a lock in one slot, the map from slots to
 * the masters that serve them (CLUSTER SLOTS), and the errors by which a
 * node sends a request elsewhere (MOVED, ASK) or asks for patience
 * (TRYAGAIN, CLUSTERDOWN, LOADING).
 *
 * hiredis 0.14 knows nothing of Redis Cluster, so this is ours.  Pure
 * functions in the style of reply.c: no client, no I/O, no lock, no log
 * (the caller knows which node said it and logs that); every reply is
 * untrusted and anything malformed gives EIO, never a crash.
 * tests/fuzz/fuzz_slotmap.c feeds them whatever hiredis parses out of
 * random bytes; tests/test_cluster.c checks them against a real cluster. */
#ifndef RDL_SLOTMAP_H
#define RDL_SLOTMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#define RDL_SLOTS 16384
/* The owner of a slot that no master serves (or whose master's address
 * is unknown): see rdl_slotmap_parse. */
#define RDL_SLOT_NONE 0xFFFFu
/* The longest endpoint kept: a DNS name is at most 253 bytes, an IPv6
 * address 45. */
#define RDL_HOST_MAX 255

/* ---------------------------------------------------------------- hashing */

/* CRC16-CCITT as Redis' crc16.c computes it (the XMODEM variant: polynomial
 * 0x1021, initial value 0, no reflection, no final xor); "123456789" gives
 * 0x31C3. */
uint16_t rdl_crc16(const void *buf, size_t len);

/* The hash slot (0..16383) of key[0, len), by Redis' hash-tag rule: if the
 * key has a '{', and a '}' somewhere after that first '{', and at least one
 * byte between them, only the bytes between that first '{' and the first
 * '}' after it are hashed; otherwise the whole key is.  So "{}x" and "x{"
 * hash whole, "{a}{b}" hashes "a", "{{a}}" hashes "{a". */
unsigned rdl_key_slot(const char *key, size_t len);

/* Whether every key of lock name[0, namelen) under prefix - "<prefix>{name}"
 * and "<prefix>{name}<suffix>" for any suffix - hashes by the tag `name`
 * exactly, so that all of them (and the lock's shard channel) are in slot
 * rdl_name_slot(name).  True iff:
 *
 *   - the prefix has no '{'   (else the tag would begin inside the prefix),
 *   - the name has no '}'     (else the tag would end inside the name),
 *   - the name is not empty   (an empty tag "{}" hashes the whole key, so
 *                              each suffix would go to its own slot).
 *
 * A '}' in the prefix and a '{' in the name are harmless: the tag begins
 * at the first '{', which is the one we put after the prefix, and ends at
 * the first '}' after it, which is the one we put after the name.
 *
 * Stricter than "all keys in one slot", on purpose: a name "a}b" would put
 * its keys in one slot too (by the tag "a"), and a prefix "x{y}" would put
 * every lock of the client in the slot of "y"; both are legal for Redis,
 * but the slot would no longer be the name's, and the second would send
 * every lock to one master.  The configuration already refuses braces in
 * the prefix (config.c); this is the check of the name. */
bool rdl_slot_name_ok(const char *prefix, const char *name, size_t namelen);

/* The slot of every key of name when rdl_slot_name_ok(): the CRC of the
 * name itself. */
unsigned rdl_name_slot(const char *name, size_t namelen);

/* ---------------------------------------------------------------- the map */

/* A node's endpoint as the cluster announces it. */
typedef struct rdl_slot_addr {
    char *host; /* never "": see rdl_slotmap_parse */
    int port;   /* 1..65535 */
} rdl_slot_addr_t;

/* A master: where it is, its node id, and its replicas (those the answering
 * node thought usable: Redis 7 leaves out failed replicas and those that
 * have not synchronised yet). */
typedef struct rdl_slot_node {
    rdl_slot_addr_t addr;
    char id[41];                /* the 40-character node id, "" if not given */
    rdl_slot_addr_t *replicas;
    size_t nreplicas;
} rdl_slot_node_t;

/* A table of 16384 node indices rather than a list of ranges: 32 KiB per
 * client, for a look-up that is one array index with no search, a map
 * that cannot be half-sorted or overlapping once built, and a comparison
 * of two maps (did this refresh change anything?) that is one memcmp of
 * the table (plus the nodes).  A cluster rarely has more than a few
 * hundred ranges, but after a reshard by hand they can be many, and their
 * number is the server's choice; the table's size is not. */
typedef struct rdl_slotmap {
    uint16_t owner[RDL_SLOTS]; /* index into nodes, or RDL_SLOT_NONE */
    rdl_slot_node_t *nodes;    /* the masters, each once, in reply order */
    size_t nnodes;
    size_t nslots;             /* slots with an owner */
} rdl_slotmap_t;

/* Build a map from a CLUSTER SLOTS reply, Redis 7.0's format (older
 * servers' are a subset of it):
 *
 *   [ [start, end, master, replica...], ... ]
 *   node: [endpoint, port, id, {metadata}]   (id since 4.0, metadata 7.0)
 *
 * The endpoint is what the server's cluster-preferred-endpoint-type says:
 *   - an IP or a hostname: kept;
 *   - "" (a node that does not know its own IP yet) or nil (type
 *     unknown-endpoint): "the address you used to reach me" - self_host,
 *     the host the caller sent CLUSTER SLOTS to (EIO if self_host is NULL);
 *   - "?" (type hostname, and this node has none): unknown.  A master with
 *     an unknown endpoint cannot be reached, so its slots stay
 *     RDL_SLOT_NONE, as if nobody served them (the caller refreshes later,
 *     as for CLUSTERDOWN); a replica with one is left out.
 * The metadata (hostname, ip: the endpoints that are not the preferred
 * one) is ignored.
 *
 * A master serving several ranges appears once in nodes (the same id, or
 * without ids the same host and port).  Malformed - not an array, a range
 * that is not two integers in 0..16383 in order, ranges that overlap, a
 * port out of 1..65535, an endpoint with a NUL byte or longer than
 * RDL_HOST_MAX, a master given twice with different addresses - gives EIO;
 * ENOMEM.  0 and *out (free with rdl_slotmap_free), which may leave slots
 * without owner: a cluster in the middle of a reshard, or down, answers
 * with holes. */
int rdl_slotmap_parse(const redisReply *r, const char *self_host, rdl_slotmap_t **out);

/* The master that serves slot, or NULL (no owner, or slot out of range). */
const rdl_slot_node_t *rdl_slotmap_node(const rdl_slotmap_t *m, unsigned slot);

/* Returns the index in m->nodes of the master at host:port, or -1. */
int rdl_slotmap_find(const rdl_slotmap_t *m, const char *host, int port);

/* Whether two maps route every slot to the same addresses (nodes compared
 * by address, not by index; replicas not compared). */
bool rdl_slotmap_same(const rdl_slotmap_t *a, const rdl_slotmap_t *b);

void rdl_slotmap_free(rdl_slotmap_t *m);

/* ---------------------------------------------------------------- errors */

/* What a cluster node's error reply means for a request. */
enum {
    RDL_CL_NONE,        /* not an error, or not one of these */
    RDL_CL_MOVED,       /* "MOVED <slot> <endpoint>:<port>": the slot has a new
                         * owner; update the map, send it there */
    RDL_CL_ASK,         /* "ASK <slot> <endpoint>:<port>": the slot is being
                         * migrated and this key is not (or no longer) here;
                         * send ASKING and the request to that node, once;
                         * the map stays */
    RDL_CL_TRYAGAIN,    /* a multi-key request (a script with several keys)
                         * on a slot being migrated whose keys are split
                         * between the two nodes: wait, send again */
    RDL_CL_CLUSTERDOWN, /* "The cluster is down", "Hash slot not served":
                         * wait, refresh the map, send again */
    RDL_CL_LOADING,     /* the node is loading its data set: wait */
    RDL_CL_CROSSSLOT    /* keys of one request in different slots: a bug of
                         * ours (the name rule above), never retried */
};
/* RDL_CL_* for r (any reply; only error replies are more than NONE). */
int rdl_cluster_error(const redisReply *r);
/* Whether the class is one to wait out and retry (TRYAGAIN, CLUSTERDOWN,
 * LOADING).  rdl_reply_transient() in reply.c covers LOADING, TRYAGAIN
 * and BUSY but not CLUSTERDOWN, which only a cluster says. */
bool rdl_cluster_backoff(int cls);

/* A redirection, decoded. */
typedef struct rdl_redirect {
    int kind;                     /* RDL_CL_MOVED or RDL_CL_ASK */
    unsigned slot;                /* 0..16383 */
    char host[RDL_HOST_MAX + 1];  /* never "" */
    int port;                     /* 1..65535 */
} rdl_redirect_t;

/* Decode a MOVED or ASK error.  The endpoint is everything between the
 * blank after the slot and the last ':' (an IPv6 address has colons of
 * its own: "MOVED 1 ::1:7000" is host "::1").  As in CLUSTER SLOTS, an
 * empty endpoint ("MOVED 1 :7000", Redis 7 with cluster-preferred-endpoint-
 * type unknown-endpoint) means the host the caller used for the node that
 * answered: self_host (EIO if NULL); "?" means unknown.
 * 0 (*out set), ENOENT (not a redirection: any other reply), EAGAIN (a
 * redirection to an unknown endpoint, "?": refresh the map later; out->kind
 * and out->slot are set, out->host is ""), or EIO (it says MOVED or ASK but
 * does not parse: slot or port out of range, a blank in the endpoint,
 * anything after the port). */
int rdl_redirect_parse(const redisReply *err, const char *self_host, rdl_redirect_t *out);

#endif
