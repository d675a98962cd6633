/* test_cluster.c - src/proto/slotmap.c against a real Redis Cluster (3 masters,
 * 3 replicas: tests/cluster.c), and the behaviour of Redis 7.0 Cluster
 * that the routing of locks will rest on: what a node answers to a key it
 * does not serve, during a slot migration and after a failover, what
 * scripts and shard channels do.  The slot map, the hash and the
 * redirections are checked against what the servers say (CLUSTER KEYSLOT,
 * CLUSTER NODES), never against themselves.
 *
 * What Redis 7.0.15 does, as these tests found (and check, so that a
 * server that behaves otherwise fails here, not in the library):
 *   - During a migration (slot MIGRATING on the source, IMPORTING on the
 *     target) the source serves a request whose keys it all still has,
 *     answers ASK for a request whose keys it all lacks (multi-key ones
 *     included), and TRYAGAIN for a multi-key request (an EVAL with
 *     several keys) whose keys are split.  The target serves a single-key
 *     request after ASKING, but answers TRYAGAIN to a multi-key one after
 *     ASKING unless it has every key - also when it has none.  So a lock
 *     script with several declared keys, most of which do not exist,
 *     gets ASK then TRYAGAIN until the migration ends: the library must
 *     back off, not fail.
 *   - A key sent to the target without ASKING gets MOVED back to the
 *     source: the map must not change on ASK.
 *   - EVALSHA of a script the wrong node has never loaded gets MOVED, not
 *     NOSCRIPT: the routing check comes first.
 *   - A script may SPUBLISH to an undeclared channel of its own slot; a
 *     shard subscriber on that slot's master receives it ("smessage").
 *     SSUBSCRIBE on the master's own replica is accepted too (no READONLY
 *     needed) and receives the message through replication; on any
 *     other node it gets MOVED.
 *   - When its slot moves away, a shard subscriber gets an
 *     "sunsubscribe <channel> 0" push from the old owner (and from the old
 *     owner's replica) and stays connected: the library must subscribe
 *     again on the new owner.
 *   - Right after `redis-cli --cluster create`, CLUSTER SLOTS lists no
 *     replicas: Redis leaves out replicas whose replication offset is
 *     still 0 (see cluster.h, readiness condition 5).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "proto/slotmap.h"
#include "proto/slottag.h"
#include "testutil.h"

static rdt_cluster_t cl;
static int owner[RDT_CLUSTER_SLOTS];

static int setup(void)
{
    return rdt_cluster_start(&cl, NULL);
}

static int teardown(void)
{
    rdt_cluster_stop(&cl);
    return 0;
}

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

static int is_error_prefix(const redisReply *r, const char *code)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, code, strlen(code)) == 0;
}

static void print_reply(const char *what, const redisReply *r)
{
    fprintf(stderr, "%s: %s\n", what,
            r == NULL ? "(no reply)" : r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ||
                                                r->type == REDIS_REPLY_STRING
                                           ? r->str
                                           : "(other type)");
}

/* A master other than m. */
static int other_master(int m)
{
    int i;
    for (i = 0; i < RDT_CLUSTER_NODES; i++)
        if (i != m && rdt_cluster_is_master(&cl, i) == 1)
            return i;
    return -1;
}

/* ASKING and then argv on one connection to node i, in one write (as the
 * library will send them): the reply to the command. */
static redisReply *asking(int i, int argc, const char **argv)
{
    redisContext *c = rdt_connect(&cl.node[i]);
    redisReply *a = NULL, *r = NULL;
    if (c == NULL)
        return NULL;
    redisAppendCommand(c, "ASKING");
    redisAppendCommandArgv(c, argc, argv, NULL);
    if (redisGetReply(c, (void **)&a) == REDIS_OK && redisGetReply(c, (void **)&r) != REDIS_OK)
        r = NULL;
    if (a == NULL || a->type != REDIS_REPLY_STATUS)
        print_reply("ASKING", a);
    if (a)
        freeReplyObject(a);
    redisFree(c);
    return r;
}

/* Check that r is a redirection of kind to node `to` for slot. */
static void check_redirect(const redisReply *r, int kind, int slot, int to)
{
    rdl_redirect_t rd;
    int rc;
    if (rdl_cluster_error(r) != kind)
        print_reply(kind == RDL_CL_MOVED ? "expected MOVED" : "expected ASK", r);
    CU_ASSERT_EQUAL_FATAL(rdl_cluster_error(r), kind);
    rc = rdl_redirect_parse(r, "127.0.0.1", &rd);
    RDT_ASSERT_EQ_LL(0, rc);
    RDT_ASSERT_EQ_LL(kind, rd.kind);
    RDT_ASSERT_EQ_LL(slot, rd.slot);
    CU_ASSERT_STRING_EQUAL(rd.host, "127.0.0.1");
    RDT_ASSERT_EQ_LL(cl.node[to].port, rd.port);
}

/* ------------------------------------------------------------------ */
/* hashing                                                             */
/* ------------------------------------------------------------------ */

static void test_crc16_vectors(void)
{
    static const char *const keys[] = {
        "123456789", "foo", "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap",
        "foo{bar}{zap}", "{", "}", "{}", "}{", "{a", "a}", "", "{}{a}", "rdlock:{name}:w",
    };
    size_t i;

    RDT_ASSERT_EQ_LL(0x31C3, rdl_crc16("123456789", 9));
    RDT_ASSERT_EQ_LL(0, rdl_crc16("", 0));
    RDT_ASSERT_EQ_LL(rdl_key_slot("{user1000}.following", 20), rdl_key_slot("{user1000}.followers", 20));
    RDT_ASSERT_EQ_LL(rdl_crc16("foo{}{bar}", 10) & 16383, rdl_key_slot("foo{}{bar}", 10)); /* empty tag */
    RDT_ASSERT_EQ_LL(rdl_crc16("{bar", 4) & 16383, rdl_key_slot("foo{{bar}}zap", 13));
    RDT_ASSERT_EQ_LL(rdl_crc16("bar", 3) & 16383, rdl_key_slot("foo{bar}{zap}", 13));
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t len = strlen(keys[i]);
        int server = rdt_cluster_key_slot(&cl, keys[i], len);
        if ((int)rdl_key_slot(keys[i], len) != server)
            fprintf(stderr, "key '%s': ours %u, server %d\n", keys[i], rdl_key_slot(keys[i], len), server);
        RDT_ASSERT_EQ_LL(server, rdl_key_slot(keys[i], len));
    }
}

/* A random key: mostly braces and a few letters, so that tags, empty
 * tags and nested braces are frequent; some bytes anything (NUL too). */
static size_t random_key(char *k, size_t cap, unsigned *seed)
{
    static const char alpha[] = "{{{}}}ab:x";
    size_t len = (size_t)(rand_r(seed) % 24), i;
    if (len > cap)
        len = cap;
    for (i = 0; i < len; i++) {
        int dice = rand_r(seed) % 8;
        k[i] = dice == 0 ? (char)(rand_r(seed) & 0xff) : alpha[rand_r(seed) % (int)(sizeof alpha - 1)];
    }
    return len;
}

static void test_key_slot_random(void)
{
    enum { N = 4000 };
    static char keys[N][24];
    static size_t lens[N];
    redisContext *c = rdt_connect(&cl.node[0]);
    unsigned seed = 20240611;
    int i, bad = 0, tagged = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    /* Pipelined: 4000 round trips would take seconds on a busy machine. */
    for (i = 0; i < N; i++) {
        const char *argv[3] = { "CLUSTER", "KEYSLOT", keys[i] };
        size_t argvlen[3] = { 7, 7, 0 };
        lens[i] = random_key(keys[i], sizeof keys[i], &seed);
        argvlen[2] = lens[i];
        redisAppendCommandArgv(c, 3, argv, argvlen);
    }
    for (i = 0; i < N; i++) {
        redisReply *r = NULL;
        const char *open;
        CU_ASSERT_FATAL(redisGetReply(c, (void **)&r) == REDIS_OK && r != NULL);
        CU_ASSERT_EQUAL(r->type, REDIS_REPLY_INTEGER);
        if (r->type == REDIS_REPLY_INTEGER && (long long)rdl_key_slot(keys[i], lens[i]) != r->integer) {
            if (bad++ < 5)
                fprintf(stderr, "key %d (%zu bytes): ours %u, server %lld\n", i, lens[i],
                        rdl_key_slot(keys[i], lens[i]), r->integer);
        }
        open = lens[i] ? memchr(keys[i], '{', lens[i]) : NULL;
        tagged += open != NULL && memchr(open, '}', lens[i] - (size_t)(open - keys[i])) != NULL;
        freeReplyObject(r);
    }
    redisFree(c);
    RDT_ASSERT_EQ_LL(0, bad);
    CU_ASSERT(tagged > N / 4); /* the generator did make tags */
}

/* The fencing counters the names of a slot share (slottag.h): each slot's
 * tag is the first string of 1 to 3 characters of [0-9a-zA-Z] (shortest
 * first, in that order) in the slot, as this test finds it again, and the
 * server puts "{tag}:tokens" in that slot; rdl_counter_key builds the
 * counter of a lock's key in the key's own slot. */
static void test_slot_tags(void)
{
    static const char abc[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    static char want[16384][4];
    static const char *const keys[] = { "rdlock:{jobs}", "myapp:{order-1234}", "{x}", "p}:{a{b}" };
    redisContext *c = rdt_connect(&cl.node[0]);
    char t[4] = { 0 }, buf[64];
    int bad = 0, found = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (size_t len = 1; len <= 3; len++) {
        size_t total = len == 1 ? 62 : len == 2 ? 62 * 62 : 62 * 62 * 62;
        for (size_t k = 0; k < total; k++) {
            size_t v = k;
            for (size_t i = len; i-- > 0; v /= 62)
                t[i] = abc[v % 62];
            t[len] = '\0';
            unsigned s = rdl_crc16(t, len) & 16383;
            if (want[s][0] == '\0') {
                memcpy(want[s], t, len + 1);
                found++;
            }
        }
    }
    RDT_ASSERT_EQ_LL(16384, found);
    for (unsigned s = 0; s < 16384; s++) {
        size_t len;
        const char *tag = rdl_slot_tag(s, &len);
        int n = snprintf(buf, sizeof buf, "{%.*s}:tokens", (int)len, tag);
        const char *argv[3] = { "CLUSTER", "KEYSLOT", buf };
        size_t argvlen[3] = { 7, 7, (size_t)n };
        if (len != strlen(want[s]) || memcmp(tag, want[s], len) != 0) {
            if (bad++ < 5)
                fprintf(stderr, "slot %u: table %.*s, rule %s\n", s, (int)len, tag, want[s]);
        }
        redisAppendCommandArgv(c, 3, argv, argvlen);
    }
    for (unsigned s = 0; s < 16384; s++) {
        redisReply *r = NULL;
        CU_ASSERT_FATAL(redisGetReply(c, (void **)&r) == REDIS_OK && r != NULL);
        if (r->type != REDIS_REPLY_INTEGER || r->integer != (long long)s) {
            if (bad++ < 5)
                fprintf(stderr, "slot %u: the server puts its counter in slot %lld\n", s,
                        r->type == REDIS_REPLY_INTEGER ? r->integer : -1LL);
        }
        freeReplyObject(r);
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t kl = strlen(keys[i]), n = rdl_counter_key(keys[i], kl, rdl_key_slot(keys[i], kl), buf), tl;
        const char *tag = rdl_slot_tag(rdl_key_slot(keys[i], kl), &tl);
        char expect[64];
        const char *brace = strchr(keys[i], '{');
        snprintf(expect, sizeof expect, "%.*s{%.*s}:tokens", (int)(brace - keys[i]), keys[i], (int)tl, tag);
        CU_ASSERT(n <= kl + RDL_COUNTER_KEY_EXTRA);
        CU_ASSERT(n == strlen(expect) && memcmp(buf, expect, n) == 0);
        if (n != strlen(expect) || memcmp(buf, expect, n) != 0)
            fprintf(stderr, "counter key of %s: %.*s, want %s\n", keys[i], (int)n, buf, expect);
        RDT_ASSERT_EQ_LL(rdl_key_slot(keys[i], kl), rdl_key_slot(buf, n));
    }
    redisFree(c);
    RDT_ASSERT_EQ_LL(0, bad);
}

/* Every key and the channel of a lock, for prefix and name. */
static const char *const suffixes[] = { "", ":w", ":wq", ":r", ":fence", ":x", ":rel", ":c" };

static int all_in_name_slot(const char *prefix, const char *name, size_t namelen, int *first_slot)
{
    size_t i;
    int same = 1;
    *first_slot = -1;
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char key[256];
        size_t pl = strlen(prefix), sl = strlen(suffixes[i]), len = pl + namelen + 2 + sl;
        int slot;
        memcpy(key, prefix, pl);
        key[pl] = '{';
        memcpy(key + pl + 1, name, namelen);
        key[pl + 1 + namelen] = '}';
        memcpy(key + pl + 2 + namelen, suffixes[i], sl);
        slot = rdt_cluster_key_slot(&cl, key, len);
        if (*first_slot < 0)
            *first_slot = slot;
        same = same && slot == (int)rdl_name_slot(name, namelen);
    }
    return same;
}

static void test_name_rule(void)
{
    static const struct {
        const char *prefix, *name;
        size_t namelen;
        int ok;
    } cases[] = {
        { "rdlock:", "jobs", 4, 1 },
        { "rdlock:", "a{b", 3, 1 },       /* a '{' in the name is harmless */
        { "", "x", 1, 1 },
        { "p}", "x", 1, 1 },              /* so is a '}' in the prefix */
        { "rdlock:", "with space", 10, 1 },
        { "rdlock:", "nul\0byte", 8, 1 },
        { "rdlock:", "\xff\xfe", 2, 1 },
        { "rdlock:", "a}b", 3, 0 },       /* the tag would be "a" */
        { "rdlock:", "}", 1, 0 },         /* the tag would be empty */
        { "rdlock:", "}x", 2, 0 },
        { "rdlock:{", "x", 1, 0 },        /* the tag would begin in the prefix */
        { "r{p}:", "x", 1, 0 },
    };
    size_t i;
    int slot;

    CU_ASSERT(!rdl_slot_name_ok("rdlock:", "", 0));
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int all = all_in_name_slot(cases[i].prefix, cases[i].name, cases[i].namelen, &slot);
        if (rdl_slot_name_ok(cases[i].prefix, cases[i].name, cases[i].namelen) != cases[i].ok)
            fprintf(stderr, "case %zu: rdl_slot_name_ok says %d\n", i, !cases[i].ok);
        CU_ASSERT_EQUAL(rdl_slot_name_ok(cases[i].prefix, cases[i].name, cases[i].namelen), cases[i].ok);
        /* Accepted names: every key in the name's slot, by the server's
         * hash.  Refused ones: the server puts them elsewhere. */
        if (all != cases[i].ok)
            fprintf(stderr, "case %zu ('%s', '%.*s'): all keys in the name's slot: %d\n", i, cases[i].prefix,
                    (int)cases[i].namelen, cases[i].name, all);
        CU_ASSERT_EQUAL(all, cases[i].ok);
    }
}

/* ------------------------------------------------------------------ */
/* the slot map                                                        */
/* ------------------------------------------------------------------ */

/* Parse node i's CLUSTER SLOTS; NULL on failure (asserted). */
static rdl_slotmap_t *map_of(int i)
{
    redisReply *r = rdt_cluster_cmd(&cl, i, "CLUSTER SLOTS");
    rdl_slotmap_t *m = NULL;
    int rc;
    CU_ASSERT_PTR_NOT_NULL(r);
    if (r == NULL)
        return NULL;
    rc = rdl_slotmap_parse(r, "127.0.0.1", &m);
    RDT_ASSERT_EQ_LL(0, rc);
    freeReplyObject(r);
    return m;
}

/* Every slot of m served by the node that CLUSTER NODES on viewer names;
 * every master's replicas those that CLUSTER NODES names. */
static void check_map(const rdl_slotmap_t *m, int viewer)
{
    int s, bad = 0;
    size_t k;

    CU_ASSERT_EQUAL_FATAL(rdt_cluster_owners(&cl, viewer, owner), 0);
    RDT_ASSERT_EQ_LL(RDT_CLUSTER_SLOTS, m->nslots);
    RDT_ASSERT_EQ_LL(3, m->nnodes);
    for (s = 0; s < RDT_CLUSTER_SLOTS; s++) {
        const rdl_slot_node_t *n = rdl_slotmap_node(m, (unsigned)s);
        if (n == NULL || owner[s] < 0 || n->addr.port != cl.node[owner[s]].port || strcmp(n->addr.host, "127.0.0.1")) {
            if (bad++ < 3)
                fprintf(stderr, "slot %d: map says %d, CLUSTER NODES node %d\n", s, n ? n->addr.port : -1, owner[s]);
        }
    }
    RDT_ASSERT_EQ_LL(0, bad);
    for (k = 0; k < m->nnodes; k++) {
        const rdl_slot_node_t *n = &m->nodes[k];
        int i = rdt_cluster_index(&cl, n->addr.port), rep = i < 0 ? -1 : rdt_cluster_replica_of(&cl, i);
        CU_ASSERT(i >= 0);
        CU_ASSERT_STRING_EQUAL(n->id, i >= 0 ? cl.id[i] : "?");
        RDT_ASSERT_EQ_LL(1, n->nreplicas);
        if (n->nreplicas == 1 && rep >= 0)
            RDT_ASSERT_EQ_LL(cl.node[rep].port, n->replicas[0].port);
    }
}

static void test_slots_parse_real(void)
{
    rdl_slotmap_t *m0 = map_of(0);
    int i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(m0);
    check_map(m0, 0);
    CU_ASSERT(rdl_slotmap_same(m0, m0));
    /* Every node, replicas too, gives the same map. */
    for (i = 1; i < RDT_CLUSTER_NODES; i++) {
        rdl_slotmap_t *m = map_of(i);
        CU_ASSERT_PTR_NOT_NULL(m);
        if (m)
            CU_ASSERT(rdl_slotmap_same(m0, m));
        rdl_slotmap_free(m);
    }
    rdl_slotmap_free(m0);
}

/* ------------------------------------------------------------------ */
/* redirections                                                        */
/* ------------------------------------------------------------------ */

static void test_moved(void)
{
    const char *key = "{moved}k";
    int slot = rdt_cluster_key_slot(&cl, key, strlen(key)), m = rdt_cluster_master_of_key(&cl, key, strlen(key));
    int i, seen = 0;

    CU_ASSERT_FATAL(slot >= 0 && m >= 0);
    RDT_ASSERT_EQ_LL(slot, rdl_key_slot(key, strlen(key)));
    for (i = 0; i < RDT_CLUSTER_NODES; i++) {
        redisReply *r = rdt_cluster_cmd(&cl, i, "SET %s v", key);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        if (i == m) {
            CU_ASSERT(r->type == REDIS_REPLY_STATUS);
        } else {
            /* Other masters and every replica (no READONLY) send it to m. */
            check_redirect(r, RDL_CL_MOVED, slot, m);
            seen++;
        }
        freeReplyObject(r);
    }
    RDT_ASSERT_EQ_LL(RDT_CLUSTER_NODES - 1, seen);
}

/* The test of the half-migrated slot, in rdt_cluster_migrate_slot's
 * callback: the state checks happen while the slot is open. */
typedef struct mig_ctx {
    int from, to, slot, checked_open, checked_keys;
} mig_ctx_t;

static int mig_check(rdt_cluster_t *c, int slot, int phase, void *arg)
{
    mig_ctx_t *x = arg;
    redisReply *r;
    (void)c;
    if (phase == RDT_MIG_OPEN) {
        const char *get_missing[] = { "GET", "{mig}missing" };
        const char *mget_ax[] = { "MGET", "{mig}a", "{mig}x" };
        const char *get_a[] = { "GET", "{mig}a" };

        /* A key the source still has: served by the source. */
        r = rdt_cluster_cmd(&cl, x->from, "GET {mig}a");
        CU_ASSERT(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "va") == 0);
        if (r)
            freeReplyObject(r);
        /* A key it lacks: ASK to the target... */
        r = rdt_cluster_cmd(&cl, x->from, "GET {mig}missing");
        check_redirect(r, RDL_CL_ASK, slot, x->to);
        if (r)
            freeReplyObject(r);
        /* ...which serves it after ASKING, and without sends it back. */
        r = asking(x->to, 2, get_missing);
        CU_ASSERT(r && r->type == REDIS_REPLY_NIL);
        if (r)
            freeReplyObject(r);
        r = rdt_cluster_cmd(&cl, x->to, "GET {mig}missing");
        check_redirect(r, RDL_CL_MOVED, slot, x->from);
        if (r)
            freeReplyObject(r);
        /* Move one key of two. */
        {
            const char *one[] = { "{mig}a" };
            CU_ASSERT_EQUAL_FATAL(rdt_cluster_migrate_keys(&cl, slot, x->from, x->to, one, 1), 0);
        }
        /* Keys split between the nodes: TRYAGAIN, from a multi-key command
         * and from a script with several keys alike. */
        r = rdt_cluster_cmd(&cl, x->from, "MGET {mig}a {mig}b");
        CU_ASSERT_EQUAL(rdl_cluster_error(r), RDL_CL_TRYAGAIN);
        CU_ASSERT(rdl_cluster_backoff(rdl_cluster_error(r)));
        if (!is_error_prefix(r, "TRYAGAIN"))
            print_reply("MGET of split keys on the source", r);
        if (r)
            freeReplyObject(r);
        r = rdt_cluster_cmd(&cl, x->from, "EVAL %s 2 {mig}a {mig}b", "return redis.call('exists', KEYS[1], KEYS[2])");
        CU_ASSERT_EQUAL(rdl_cluster_error(r), RDL_CL_TRYAGAIN);
        if (r)
            freeReplyObject(r);
        /* Keys all missing on the source: ASK (Redis 7.0), even multi-key. */
        r = rdt_cluster_cmd(&cl, x->from, "EVAL %s 2 {mig}x {mig}y", "return 1");
        check_redirect(r, RDL_CL_ASK, slot, x->to);
        if (r)
            freeReplyObject(r);
        /* The target, after ASKING: one key served; several keys it does
         * not all have (here: one of two, and none of two): TRYAGAIN. */
        r = asking(x->to, 2, get_a);
        CU_ASSERT(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "va") == 0);
        if (r)
            freeReplyObject(r);
        r = asking(x->to, 3, mget_ax);
        CU_ASSERT_EQUAL(rdl_cluster_error(r), RDL_CL_TRYAGAIN);
        if (r)
            freeReplyObject(r);
        {
            const char *eval_xy[] = { "EVAL", "return 1", "2", "{mig}x", "{mig}y" };
            r = asking(x->to, 5, eval_xy);
            CU_ASSERT_EQUAL(rdl_cluster_error(r), RDL_CL_TRYAGAIN);
            if (rdl_cluster_error(r) != RDL_CL_TRYAGAIN)
                print_reply("ASKING + EVAL of two missing keys on the target", r);
            if (r)
                freeReplyObject(r);
        }
        x->checked_open = 1;
    } else if (phase == RDT_MIG_KEYS) {
        /* Every key moved, the slot not yet given: the source sends
         * everything to the target with ASK. */
        r = rdt_cluster_cmd(&cl, x->from, "GET {mig}b");
        check_redirect(r, RDL_CL_ASK, slot, x->to);
        if (r)
            freeReplyObject(r);
        x->checked_keys = 1;
    }
    return 0;
}

static void test_migration(void)
{
    mig_ctx_t x;
    redisReply *r;
    rdl_slotmap_t *m;
    const rdl_slot_node_t *n;

    memset(&x, 0, sizeof x);
    x.slot = rdt_cluster_key_slot(&cl, "{mig}", 5);
    x.from = rdt_cluster_master_of_key(&cl, "{mig}", 5);
    CU_ASSERT_FATAL(x.slot >= 0 && x.from >= 0);
    x.to = other_master(x.from);
    CU_ASSERT_FATAL(x.to >= 0);
    r = rdt_cluster_cmd(&cl, x.from, "MSET {mig}a va {mig}b vb");
    CU_ASSERT_FATAL(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);

    CU_ASSERT_EQUAL_FATAL(rdt_cluster_migrate_slot(&cl, x.slot, x.from, x.to, mig_check, &x), 0);
    CU_ASSERT(x.checked_open && x.checked_keys);

    /* Done: the source sends MOVED, every node's map names the target. */
    r = rdt_cluster_cmd(&cl, x.from, "GET {mig}b");
    check_redirect(r, RDL_CL_MOVED, x.slot, x.to);
    if (r)
        freeReplyObject(r);
    r = rdt_cluster_cmd(&cl, x.to, "GET {mig}b");
    CU_ASSERT(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "vb") == 0);
    if (r)
        freeReplyObject(r);
    m = map_of(x.from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    n = rdl_slotmap_node(m, (unsigned)x.slot);
    CU_ASSERT(n != NULL && n->addr.port == cl.node[x.to].port);
    /* The map has more ranges now (the slot cut one in two or three), and
     * still covers everything. */
    RDT_ASSERT_EQ_LL(RDT_CLUSTER_SLOTS, m->nslots);
    RDT_ASSERT_EQ_LL(3, m->nnodes);
    rdl_slotmap_free(m);
}

/* ------------------------------------------------------------------ */
/* scripts and shard channels                                          */
/* ------------------------------------------------------------------ */

static void test_scripts(void)
{
    const char *key = "rdlock:{script}";
    const char *body = "return redis.call('set', KEYS[1], ARGV[1])";
    int slot = (int)rdl_name_slot("script", 6), m = rdt_cluster_master_of_key(&cl, key, strlen(key));
    int o = other_master(m);
    redisReply *r;
    char sha[41];

    CU_ASSERT_FATAL(m >= 0 && o >= 0);
    RDT_ASSERT_EQ_LL(rdt_cluster_key_slot(&cl, key, strlen(key)), slot);
    r = rdt_cluster_cmd(&cl, m, "EVAL %s 1 %s v", body, key);
    CU_ASSERT(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    r = rdt_cluster_cmd(&cl, o, "EVAL %s 1 %s v", body, key);
    check_redirect(r, RDL_CL_MOVED, slot, m);
    if (r)
        freeReplyObject(r);
    /* Loaded on the owner only. */
    r = rdt_cluster_cmd(&cl, m, "SCRIPT LOAD %s", body);
    CU_ASSERT_FATAL(r && r->type == REDIS_REPLY_STRING && r->len == 40);
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
    r = rdt_cluster_cmd(&cl, m, "EVALSHA %s 1 %s w", sha, key);
    CU_ASSERT(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    /* The other master has never seen it: still MOVED, not NOSCRIPT. */
    r = rdt_cluster_cmd(&cl, o, "SCRIPT FLUSH");
    if (r)
        freeReplyObject(r);
    r = rdt_cluster_cmd(&cl, o, "EVALSHA %s 1 %s w", sha, key);
    check_redirect(r, RDL_CL_MOVED, slot, m);
    if (r)
        freeReplyObject(r);
    /* Keys of two slots in one script: CROSSSLOT, never retried. */
    r = rdt_cluster_cmd(&cl, m, "EVAL %s 2 %s {other}", "return 1", key);
    CU_ASSERT_EQUAL(rdl_cluster_error(r), RDL_CL_CROSSSLOT);
    CU_ASSERT(!rdl_cluster_backoff(rdl_cluster_error(r)));
    if (r)
        freeReplyObject(r);
}

/* Read one push from a subscribed connection (bounded by its timeout). */
static redisReply *next_push(redisContext *c)
{
    redisReply *r = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK) {
        fprintf(stderr, "subscriber: %s\n", c->errstr);
        return NULL;
    }
    return r;
}

static int push_is(const redisReply *r, const char *kind, const char *chan)
{
    return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_STRING &&
           strcmp(r->element[0]->str, kind) == 0 && r->element[1]->type == REDIS_REPLY_STRING &&
           strcmp(r->element[1]->str, chan) == 0;
}

static void test_shard_channels(void)
{
    const char *key = "rdlock:{chan}", *chan = "rdlock:{chan}:c";
    int slot = (int)rdl_name_slot("chan", 4), m = rdt_cluster_master_of_key(&cl, key, strlen(key));
    int o = other_master(m), rep = rdt_cluster_replica_of(&cl, m);
    struct timeval tv = { 10, 0 };
    redisContext *sub, *subr;
    redisReply *r;

    CU_ASSERT_FATAL(m >= 0 && o >= 0 && rep >= 0);
    RDT_ASSERT_EQ_LL(rdt_cluster_key_slot(&cl, chan, strlen(chan)), slot);
    /* Not on another master: MOVED. */
    r = rdt_cluster_cmd(&cl, o, "SSUBSCRIBE %s", chan);
    check_redirect(r, RDL_CL_MOVED, slot, m);
    if (r)
        freeReplyObject(r);

    sub = rdt_connect(&cl.node[m]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sub);
    redisSetTimeout(sub, tv);
    r = redisCommand(sub, "SSUBSCRIBE %s", chan);
    CU_ASSERT(push_is(r, "ssubscribe", chan));
    if (r)
        freeReplyObject(r);
    /* On the owner's replica, without READONLY: accepted too. */
    subr = rdt_connect(&cl.node[rep]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(subr);
    redisSetTimeout(subr, tv);
    r = redisCommand(subr, "SSUBSCRIBE %s", chan);
    CU_ASSERT(push_is(r, "ssubscribe", chan));
    if (!push_is(r, "ssubscribe", chan))
        print_reply("SSUBSCRIBE on the owner's replica", r);
    if (r)
        freeReplyObject(r);

    /* A script whose declared key is the lock's publishes on the lock's
     * channel, undeclared, in the same slot. */
    r = rdt_cluster_cmd(&cl, m, "EVAL %s 1 %s %s g", "return redis.call('spublish', ARGV[1], ARGV[2])", key, chan);
    CU_ASSERT(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (!(r && r->type == REDIS_REPLY_INTEGER))
        print_reply("EVAL spublish", r);
    if (r)
        freeReplyObject(r);
    r = next_push(sub);
    CU_ASSERT(push_is(r, "smessage", chan) && strcmp(r->element[2]->str, "g") == 0);
    if (r)
        freeReplyObject(r);
    /* The replica's subscriber gets it too (SPUBLISH is replicated). */
    r = next_push(subr);
    CU_ASSERT(push_is(r, "smessage", chan) && strcmp(r->element[2]->str, "g") == 0);
    if (r)
        freeReplyObject(r);
    /* SPUBLISH to the wrong master: MOVED. */
    r = rdt_cluster_cmd(&cl, o, "SPUBLISH %s u", chan);
    check_redirect(r, RDL_CL_MOVED, slot, m);
    if (r)
        freeReplyObject(r);

    /* The slot moves away: the old owner tells its shard subscribers
     * "sunsubscribe <channel> 0", and the connection stays. */
    CU_ASSERT_EQUAL_FATAL(rdt_cluster_migrate_slot(&cl, slot, m, o, NULL, NULL), 0);
    r = next_push(sub);
    CU_ASSERT(push_is(r, "sunsubscribe", chan) && r->element[2]->type == REDIS_REPLY_INTEGER &&
              r->element[2]->integer == 0);
    if (r)
        freeReplyObject(r);
    r = redisCommand(sub, "PING");
    CU_ASSERT(r != NULL && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    redisFree(sub);
    /* So does the old owner's replica, when it learns the slot moved. */
    r = next_push(subr);
    CU_ASSERT(push_is(r, "sunsubscribe", chan));
    if (r)
        freeReplyObject(r);
    redisFree(subr);
}

/* ------------------------------------------------------------------ */
/* failover and reshard                                                */
/* ------------------------------------------------------------------ */

static void test_failover(void)
{
    const char *key = "{fo}k";
    int slot = rdt_cluster_key_slot(&cl, key, strlen(key)), m = rdt_cluster_master_of_key(&cl, key, strlen(key));
    int nm, i;
    redisReply *r;

    CU_ASSERT_FATAL(slot >= 0 && m >= 0);
    r = rdt_cluster_cmd(&cl, m, "SET %s before", key);
    CU_ASSERT_FATAL(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    nm = rdt_cluster_failover(&cl, m, 40000);
    CU_ASSERT_FATAL(nm >= 0 && nm != m);
    /* Every node's CLUSTER SLOTS names the new master for the slot, with
     * the old one as its replica. */
    for (i = 0; i < RDT_CLUSTER_NODES; i++) {
        rdl_slotmap_t *map = map_of(i);
        const rdl_slot_node_t *n = map ? rdl_slotmap_node(map, (unsigned)slot) : NULL;
        CU_ASSERT(n != NULL && n->addr.port == cl.node[nm].port);
        CU_ASSERT(n != NULL && n->nreplicas == 1 && n->replicas[0].port == cl.node[m].port);
        rdl_slotmap_free(map);
    }
    /* The old master, a replica now, sends the key to the new one, which
     * has the value. */
    r = rdt_cluster_cmd(&cl, m, "GET %s", key);
    check_redirect(r, RDL_CL_MOVED, slot, nm);
    if (r)
        freeReplyObject(r);
    r = rdt_cluster_cmd(&cl, nm, "GET %s", key);
    CU_ASSERT(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "before") == 0);
    if (r)
        freeReplyObject(r);
}

static void test_reshard(void)
{
    int from = rdt_cluster_master_of_key(&cl, "{rs}", 4), to, s, before = 0, after = 0, moved = 0;
    static int prev[RDT_CLUSTER_SLOTS];
    rdl_slotmap_t *m;

    CU_ASSERT_FATAL(from >= 0);
    to = other_master(from);
    CU_ASSERT_FATAL(to >= 0);
    CU_ASSERT_EQUAL_FATAL(rdt_cluster_owners(&cl, 0, prev), 0);
    for (s = 0; s < RDT_CLUSTER_SLOTS; s++)
        before += prev[s] == from;
    CU_ASSERT_EQUAL_FATAL(rdt_cluster_reshard(&cl, from, to, 20, 60000), 0);
    m = map_of(to);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    check_map(m, to);
    for (s = 0; s < RDT_CLUSTER_SLOTS; s++) {
        const rdl_slot_node_t *n = rdl_slotmap_node(m, (unsigned)s);
        after += n && n->addr.port == cl.node[from].port;
        moved += prev[s] == from && n && n->addr.port == cl.node[to].port;
    }
    RDT_ASSERT_EQ_LL(before - 20, after);
    RDT_ASSERT_EQ_LL(20, moved);
    rdl_slotmap_free(m);
}

int main(int argc, char **argv)
{
    static const rdt_test_t tests[] = {
        { "crc16_vectors", test_crc16_vectors },
        { "key_slot_random", test_key_slot_random },
        { "name_rule", test_name_rule },
        { "slot_tags", test_slot_tags },
        { "slots_parse_real", test_slots_parse_real },
        { "moved", test_moved },
        { "migration", test_migration },
        { "scripts", test_scripts },
        { "shard_channels", test_shard_channels },
        { "failover", test_failover },
        { "reshard", test_reshard },
        { NULL, NULL },
    };
    return rdt_main(argc, argv, "cluster", tests, setup, teardown, 240);
}
