/* test_cluster_locks.c - the locks on a real Redis Cluster (3 masters, 3
 * replicas; tests/cluster.h), through the public API with [cluster] in
 * the configuration (docs/CONTRACT.md section 9, Cluster):
 *
 *   names_on_every_master  one client holds names served by each of the
 *                          three masters; another finds them busy; a
 *                          waiter on each is woken by the release (shard
 *                          channels: the re-check period is 10 s, so only
 *                          a wake-up is fast); the watchdog renews all of
 *                          them past several leases, per master
 *   migration              a held lock's slot migrated to another master
 *                          step by step, with a caller of another client
 *                          blocked on it: while half migrated no call gets
 *                          the lock (TRYAGAIN), the renewals go on (ASK),
 *                          and after the move (MOVED) the unlock wakes
 *                          the blocked caller, whose subscription moved
 *   failover               a held lock's master fails over to its replica
 *                          (CLUSTER FAILOVER: no write is lost); the hold
 *                          is renewed on the new master, unlock and lock
 *                          work there
 *   tool                   rdlock(1): a command under a lock on each
 *                          master, -n against a holder, --status, --reset
 *   cond_and_barrier       a condition signalled across clients and a
 *                          barrier of two, on each master
 *   bad_names              a name that would not hash as one tag: EINVAL
 *
 * Every server is started and stopped by PID; what a test checks on the
 * servers it asks them itself (cluster.h's helpers). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/slotmap.h"
#include "cluster.h"
#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

#define LEASE_MS 1000
#define WAKE_MS 2000   /* a wake-up: far below the 10 s re-check period */
#define REPLY_MS 10000

static rdt_cluster_t g_cl;
static int g_up;
static char g_ini[600];
static rdlock_client_t *g_c1, *g_c2;

static int suite_setup(void)
{
    char text[1024];
    const char *path;
    int n;

    if (rdt_cluster_start(&g_cl, NULL) != 0)
        return -1;
    g_up = 1;
    n = snprintf(text, sizeof text, "[cluster]\nnodes = ");
    /* Two of the six: the client learns the rest from the slot map. */
    n += snprintf(text + n, sizeof text - (size_t)n, "127.0.0.1:%d, 127.0.0.1:%d\n", g_cl.node[1].port,
                  g_cl.node[4].port);
    snprintf(text + n, sizeof text - (size_t)n,
             "[lock]\nlease_ms = %d\nretry_interval_ms = 10000\nretry_jitter_ms = 0\n", LEASE_MS);
    if ((path = rdt_write_file(&g_cl.node[0], "cluster.ini", text)) == NULL)
        return -1;
    snprintf(g_ini, sizeof g_ini, "%s", path);
    if (rdlock_client_open(&g_c1, g_ini) != 0 || rdlock_client_open(&g_c2, g_ini) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open on the cluster failed\n");
        return -1;
    }
    return 0;
}

static int suite_teardown(void)
{
    int rc = rdt_close_clients(&g_c1, &g_c2, NULL);
    if (g_up)
        rdt_cluster_stop(&g_cl);
    g_up = 0;
    return rc;
}

/* A lock name whose keys live on master m (a fixture index), tried as
 * "<stem>-0", "<stem>-1", ...: into buf, 0; -1 if none in 1000 tries. */
static int name_on(int m, const char *stem, char *buf, size_t n)
{
    for (int i = 0; i < 1000; i++) {
        snprintf(buf, n, "%s-%d", stem, i);
        if (rdt_cluster_master_of_key(&g_cl, rdt_key(buf, ""), strlen(rdt_key(buf, ""))) == m)
            return 0;
    }
    fprintf(stderr, "no name %s-* on node %d\n", stem, m);
    return -1;
}

/* The fixture indices of the three masters. */
static int masters(int *m)
{
    int k = 0;
    for (int i = 0; i < RDT_CLUSTER_NODES && k < 3; i++)
        if (rdt_cluster_is_master(&g_cl, i) == 1)
            m[k++] = i;
    return k == 3 ? 0 : -1;
}

static int mx(rdlock_t *m, const char *name, rdlock_client_t *c)
{
    rdt_lockopts_t o = RDT_LOCKOPTS(c);
    o.watchdog = 1;
    return rdt_mutex_init(m, name, &o);
}

/* PTTL of the lock key of name on master i, as that master says. */
static long long pttl_on(int i, const char *name)
{
    redisReply *r = rdt_cluster_cmd(&g_cl, i, "PTTL %s", rdt_key(name, ""));
    long long v = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -100;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* The same on a node that imports the key's slot: ASKING first, on the
 * same connection (else the node sends us to the slot's owner). */
static long long pttl_asking(int i, const char *name)
{
    redisContext *rc = redisConnect("127.0.0.1", g_cl.node[i].port);
    redisReply *a = NULL, *r = NULL;
    long long v = -100;
    if (rc != NULL && !rc->err) {
        a = redisCommand(rc, "ASKING");
        r = redisCommand(rc, "PTTL %s", rdt_key(name, ""));
        if (r != NULL && r->type == REDIS_REPLY_INTEGER)
            v = r->integer;
    }
    if (a != NULL)
        freeReplyObject(a);
    if (r != NULL)
        freeReplyObject(r);
    if (rc != NULL)
        redisFree(rc);
    return v;
}

static void test_names_on_every_master(void)
{
    int m[3];
    char names[3][64];
    rdlock_t held[3], other[3];
    rdt_actor_t w[3];
    long long t0, el;

    CU_ASSERT_FATAL(masters(m) == 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_FATAL(name_on(m[i], "spread", names[i], sizeof names[i]) == 0);
        RDT_ASSERT_RC(0, mx(&held[i], names[i], g_c1));
        RDT_ASSERT_RC(0, mx(&other[i], names[i], g_c2));
        RDT_ASSERT_RC(0, rdlock_lock(&held[i]));
        CU_ASSERT(rdt_mutex_token(&held[i]) > 0);
        RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other[i]));
        /* The keys are where the slot map says, nowhere else. */
        CU_ASSERT(pttl_on(m[i], names[i]) > 0);
        CU_ASSERT(pttl_on(m[(i + 1) % 3], names[i]) == -100); /* MOVED: an error reply */
    }

    /* Renewed per master, well past the lease. */
    rdt__nap_ms(3 * LEASE_MS);
    for (int i = 0; i < 3; i++) {
        RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other[i]));
        CU_ASSERT(pttl_on(m[i], names[i]) > 0);
    }

    /* A waiter on each name, woken by the release through its shard
     * channel on that name's master. */
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_FATAL(rdt_actor_thread(&w[i], &other[i], NULL) == 0);
        RDT_ASSERT_RC(0, rdt_actor_send(&w[i], "lock"));
    }
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(rdt_actor_reply(&w[i], 300, NULL, NULL), RDT_ACTOR_NOREPLY); /* blocked */
    for (int i = 0; i < 3; i++) {
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdlock_unlock(&held[i]));
        RDT_ASSERT_RC(0, rdt_actor_reply(&w[i], REPLY_MS, NULL, NULL));
        el = rdt_now_ms() - t0;
        if (el >= WAKE_MS)
            fprintf(stderr, "waiter on %s took %lld ms after the release\n", names[i], el);
        CU_ASSERT(el < WAKE_MS);
        RDT_ASSERT_RC(0, rdt_actor_call(&w[i], "unlock", REPLY_MS, NULL, NULL));
        rdt_actor_stop(&w[i]);
    }
    for (int i = 0; i < 3; i++) {
        RDT_ASSERT_RC(0, rdlock_destroy(&held[i]));
        RDT_ASSERT_RC(0, rdlock_destroy(&other[i]));
    }
}

/* What the migration test does while the slot is half migrated. */
typedef struct mig {
    rdlock_t *other;
    const char *name;
    int from, to, slot;
    int busy, tryagain, asked;
} mig_t;

static long long keys_left(int from, int slot)
{
    redisReply *r = rdt_cluster_cmd(&g_cl, from, "CLUSTER COUNTKEYSINSLOT %d", slot);
    long long v = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* Half migrated, the lock stays held for everyone else.  A lock call
 * touches all of the lock's keys in one script, so while some of them are
 * missing on either node, both answer TRYAGAIN (the target too, after
 * ASKING) until the slot is handed over: the library waits that out for
 * as long as its retries would take and then reports EIO, never 0.  The
 * holder's renewals touch only the lock's main key, so they go on
 * throughout (served where that key is, after an ASK once it moved):
 * checked by staying half migrated, every key moved, for two leases. */
static int mig_cb(rdt_cluster_t *cl, int slot, int phase, void *arg)
{
    mig_t *g = arg;
    long long left = keys_left(g->from, slot);
    int rc = rdlock_trylock(g->other);
    (void)cl;
    if (rc == EBUSY)
        g->busy++;
    else if (rc == EIO)
        g->tryagain++;
    else {
        fprintf(stderr, "half-migrated (phase %d, %lld keys left): trylock of %s gave %d\n", phase, left, g->name,
                rc);
        return -1;
    }
    if (phase == RDT_MIG_KEYS && left == 0) {
        /* Every key on the target, the slot not handed over: the renewals
         * reach the main key there through ASK. */
        long long t0 = rdt_now_ms();
        while (rdt_now_ms() - t0 < 2 * LEASE_MS) {
            if (pttl_asking(g->to, g->name) <= 0) {
                fprintf(stderr, "half migrated: %s's lease ran out on the target\n", g->name);
                return -1;
            }
            rdt__nap_ms(50); /* pacing */
        }
        g->asked++;
    }
    return 0;
}

static void test_migration(void)
{
    int m[3], slot, from, to;
    char name[64];
    rdlock_t held, other, waiting;
    rdt_actor_t w, early;
    mig_t g = { &other, name, 0, 0, 0, 0, 0, 0 };
    long long t0;

    CU_ASSERT_FATAL(masters(m) == 0);
    CU_ASSERT_FATAL(name_on(m[0], "mig", name, sizeof name) == 0);
    from = m[0];
    to = m[1];
    slot = rdt_cluster_key_slot(&g_cl, name, strlen(name)); /* the tag is the name */
    CU_ASSERT_FATAL(slot >= 0);
    g.from = from;
    g.to = to;
    g.slot = slot;
    RDT_ASSERT_RC(0, mx(&held, name, g_c1));
    RDT_ASSERT_RC(0, mx(&other, name, g_c2));
    RDT_ASSERT_RC(0, mx(&waiting, name, g_c2));
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    /* A caller of another client blocked on it since before the move: its
     * shard subscription ends with the move and is made again on the new
     * master, and its looks wait out TRYAGAIN meanwhile. */
    CU_ASSERT_FATAL(rdt_actor_thread(&early, &waiting, NULL) == 0);
    RDT_ASSERT_RC(0, rdt_actor_send(&early, "lock"));
    CU_ASSERT_EQUAL(rdt_actor_reply(&early, 300, NULL, NULL), RDT_ACTOR_NOREPLY);

    CU_ASSERT_FATAL(rdt_cluster_migrate_slot(&g_cl, slot, from, to, mig_cb, &g) == 0);
    CU_ASSERT(g.asked == 1); /* the all-moved phase was seen */
    CU_ASSERT(g.busy + g.tryagain >= 2);
    fprintf(stderr, "[half migrated: %d EBUSY, %d EIO (TRYAGAIN)] ", g.busy, g.tryagain);
    CU_ASSERT(pttl_on(to, name) > 0);

    /* After the move: still held, renewed on the target. */
    rdt__nap_ms(2 * LEASE_MS);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    CU_ASSERT(pttl_on(to, name) > 0);

    /* The early waiter (still blocked) and a new one, which subscribes on
     * the new master from the start: the unlock wakes the first (FIFO), its
     * unlock the second, each within a wake-up's time (the re-check period
     * is 10 s). */
    CU_ASSERT(rdt_actor_silent(&early));
    CU_ASSERT_FATAL(rdt_actor_thread(&w, &other, NULL) == 0);
    RDT_ASSERT_RC(0, rdt_actor_send(&w, "lock"));
    CU_ASSERT_EQUAL(rdt_actor_reply(&w, 300, NULL, NULL), RDT_ACTOR_NOREPLY);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    RDT_ASSERT_RC(0, rdt_actor_reply(&early, REPLY_MS, NULL, NULL));
    CU_ASSERT(rdt_now_ms() - t0 < WAKE_MS);
    CU_ASSERT_EQUAL(rdt_actor_reply(&w, 100, NULL, NULL), RDT_ACTOR_NOREPLY);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(0, rdt_actor_call(&early, "unlock", REPLY_MS, NULL, NULL));
    RDT_ASSERT_RC(0, rdt_actor_reply(&w, REPLY_MS, NULL, NULL));
    CU_ASSERT(rdt_now_ms() - t0 < WAKE_MS);
    RDT_ASSERT_RC(0, rdt_actor_call(&w, "unlock", REPLY_MS, NULL, NULL));
    rdt_actor_stop(&w);
    rdt_actor_stop(&early);
    RDT_ASSERT_RC(0, rdlock_destroy(&waiting));
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* An unlock sent while the lock's slot is half migrated waits (every
 * multi-key call meets TRYAGAIN) until the slot is handed over, and
 * returns 0: the hold is renewed meanwhile (the watchdog renews holds
 * whose unlock is under way), although the wait, two leases here, is
 * longer than the lease. */
typedef struct umig {
    rdt_actor_t *holder;
    int from, to;
    const char *name;
    int sent, waited;
} umig_t;

static int umig_cb(rdt_cluster_t *cl, int slot, int phase, void *arg)
{
    umig_t *u = arg;
    (void)cl;
    if (phase == RDT_MIG_OPEN && !u->sent) {
        if (rdt_actor_send(u->holder, "unlock") != 0)
            return -1;
        u->sent = 1;
        rdt__nap_ms(2 * LEASE_MS);
        if (!rdt_actor_silent(u->holder)) {
            fprintf(stderr, "unlock of %s returned while the slot was half migrated\n", u->name);
            return -1;
        }
        u->waited = 1;
    }
    (void)slot;
    return 0;
}

static void test_unlock_while_migrating(void)
{
    int m[3], slot;
    char name[64];
    rdlock_t held, other;
    rdt_actor_t h;
    umig_t u;
    long long ms = 0;

    CU_ASSERT_FATAL(masters(m) == 0);
    CU_ASSERT_FATAL(name_on(m[1], "umig", name, sizeof name) == 0);
    slot = rdt_cluster_key_slot(&g_cl, name, strlen(name));
    CU_ASSERT_FATAL(slot >= 0);
    RDT_ASSERT_RC(0, mx(&held, name, g_c1));
    RDT_ASSERT_RC(0, mx(&other, name, g_c2));
    CU_ASSERT_FATAL(rdt_actor_thread(&h, &held, NULL) == 0);
    RDT_ASSERT_RC(0, rdt_actor_call(&h, "lock", REPLY_MS, NULL, NULL));
    memset(&u, 0, sizeof u);
    u.holder = &h;
    u.from = m[1];
    u.to = m[2];
    u.name = name;
    CU_ASSERT(rdt_cluster_migrate_slot(&g_cl, slot, m[1], m[2], umig_cb, &u) == 0);
    CU_ASSERT(u.waited == 1);
    RDT_ASSERT_RC(0, rdt_actor_reply(&h, REPLY_MS, NULL, &ms));
    fprintf(stderr, "[unlock took %lld ms across the migration] ", ms);
    RDT_ASSERT_RC(0, rdlock_trylock(&other)); /* released, on the new master */
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    rdt_actor_stop(&h);
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

static void test_failover(void)
{
    int m[3], nm;
    char name[64];
    rdlock_t held, other;
    uint64_t tok;

    CU_ASSERT_FATAL(masters(m) == 0);
    CU_ASSERT_FATAL(name_on(m[2], "fo", name, sizeof name) == 0);
    RDT_ASSERT_RC(0, mx(&held, name, g_c1));
    RDT_ASSERT_RC(0, mx(&other, name, g_c2));
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    tok = rdt_mutex_token(&held);

    nm = rdt_cluster_failover(&g_cl, m[2], 60000);
    CU_ASSERT_FATAL(nm >= 0);
    /* The new master has the hold (a manual failover loses no write) and
     * renews it: still busy for others after two leases. */
    rdt__nap_ms(2 * LEASE_MS);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&other));
    CU_ASSERT(pttl_on(nm, name) > 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    RDT_ASSERT_RC(0, rdlock_trylock(&other));
    CU_ASSERT(rdt_mutex_token(&other) > tok);
    RDT_ASSERT_RC(0, rdlock_unlock(&other));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

/* ------------------------------------------------------------------ */
/* under load: a reshard and a failover while threads of two clients   */
/* take and release names whose slots move                             */
/* ------------------------------------------------------------------ */

#define LOAD_NAMES 12
#define LOAD_THREADS 6

typedef struct load {
    rdlock_t h[2][LOAD_NAMES];   /* per client, per name */
    char names[LOAD_NAMES][64];
    int inside[LOAD_NAMES];      /* threads inside the section (atomic) */
    int stop;
    long ops, overlaps, lost, failed;
} load_t;

typedef struct load_arg {
    load_t *l;
    int client;
    unsigned seed;
} load_arg_t;

static void *load_thread(void *arg)
{
    load_arg_t *a = arg;
    load_t *l = a->l;
    while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
        int k = (int)(rand_r(&a->seed) % LOAD_NAMES);
        struct timespec dl = rdt_abstime(CLOCK_REALTIME, 20000);
        int rc = rdlock_timedlock(&l->h[a->client][k], &dl);
        if (rc != 0) {
            __atomic_add_fetch(&l->failed, 1, __ATOMIC_RELAXED);
            fprintf(stderr, "load: timedlock of %s: %d\n", l->names[k], rc);
            continue;
        }
        if (__atomic_fetch_add(&l->inside[k], 1, __ATOMIC_ACQ_REL) != 0)
            __atomic_add_fetch(&l->overlaps, 1, __ATOMIC_RELAXED);
        rdt__nap_ms(1); /* the protected work */
        __atomic_sub_fetch(&l->inside[k], 1, __ATOMIC_ACQ_REL);
        rc = rdlock_unlock(&l->h[a->client][k]);
        if (rc == ENOLCK)
            __atomic_add_fetch(&l->lost, 1, __ATOMIC_RELAXED);
        else if (rc != 0)
            __atomic_add_fetch(&l->failed, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&l->ops, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* LOAD_NAMES names in the lowest `span` slots that master m serves (the
 * ones `redis-cli --cluster reshard` takes first). */
static int names_in_first_slots(int m, int span, load_t *l)
{
    static int owner[RDT_CLUSTER_SLOTS];
    int lo = -1, found = 0;
    if (rdt_cluster_owners(&g_cl, 0, owner) != 0)
        return -1;
    for (int i = 0; i < RDT_CLUSTER_SLOTS && lo < 0; i++)
        if (owner[i] == m)
            lo = i;
    for (int i = 0; i < 200000 && found < LOAD_NAMES && lo >= 0; i++) {
        char name[64];
        unsigned slot;
        snprintf(name, sizeof name, "load-%d", i);
        slot = rdl_key_slot(name, strlen(name));
        if ((int)slot >= lo && (int)slot < lo + span && owner[slot] == m)
            snprintf(l->names[found++], sizeof l->names[0], "%s", name);
    }
    return found == LOAD_NAMES ? 0 : -1;
}

/* Start the workload on clients c[0], c[1]; 0 or -1. */
static int load_start(load_t *l, rdlock_client_t *const *c, pthread_t *th, load_arg_t *args)
{
    for (int k = 0; k < LOAD_NAMES; k++)
        for (int j = 0; j < 2; j++)
            if (mx(&l->h[j][k], l->names[k], c[j]) != 0)
                return -1;
    for (int t = 0; t < LOAD_THREADS; t++) {
        args[t].l = l;
        args[t].client = t % 2;
        args[t].seed = (unsigned)t * 7919u + 1;
        if (pthread_create(&th[t], NULL, load_thread, &args[t]) != 0)
            return -1;
    }
    return 0;
}

static void load_stop(load_t *l, pthread_t *th)
{
    __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < LOAD_THREADS; t++)
        pthread_join(th[t], NULL);
    for (int k = 0; k < LOAD_NAMES; k++)
        for (int j = 0; j < 2; j++)
            RDT_ASSERT_RC(0, rdlock_destroy(&l->h[j][k]));
}

/* redis-cli --cluster reshard moves the workload's slots (and a few
 * more) from one master to another under it: no two holders ever, no hold
 * lost, every call served. */
static void test_reshard_under_load(void)
{
    static load_t l;
    pthread_t th[LOAD_THREADS];
    load_arg_t args[LOAD_THREADS];
    rdlock_client_t *c[2] = { g_c1, g_c2 };
    int m[3];
    long before;

    memset(&l, 0, sizeof l);
    CU_ASSERT_FATAL(masters(m) == 0);
    CU_ASSERT_FATAL(names_in_first_slots(m[0], 48, &l) == 0);
    CU_ASSERT_FATAL(load_start(&l, c, th, args) == 0);
    rdt__nap_ms(500); /* under way before the move */
    before = __atomic_load_n(&l.ops, __ATOMIC_RELAXED);
    CU_ASSERT(rdt_cluster_reshard(&g_cl, m[0], m[1], 64, 60000) == 0);
    rdt__nap_ms(500); /* and after it */
    load_stop(&l, th);
    fprintf(stderr, "[%ld sections, %ld during the reshard or after, %ld overlaps, %ld lost, %ld failed] ", l.ops,
            l.ops - before, l.overlaps, l.lost, l.failed);
    CU_ASSERT(l.ops - before > 0);
    CU_ASSERT_EQUAL(l.overlaps, 0);
    CU_ASSERT_EQUAL(l.lost, 0);
    CU_ASSERT_EQUAL(l.failed, 0);
    for (int k = 0; k < LOAD_NAMES; k++)
        CU_ASSERT(rdt_cluster_master_of_key(&g_cl, rdt_key(l.names[k], ""), strlen(rdt_key(l.names[k], ""))) ==
                  m[1]);
}

/* A manual failover of the master that serves the workload, with every
 * acquisition confirmed on the replica ([replication] wait_replicas = 1):
 * no two holders. */
static void test_failover_under_load(void)
{
    static load_t l;
    pthread_t th[LOAD_THREADS];
    load_arg_t args[LOAD_THREADS];
    rdlock_client_t *c[2] = { NULL, NULL };
    char text[1024];
    const char *path;
    int m, nm;
    long before;

    memset(&l, 0, sizeof l);
    snprintf(text, sizeof text,
             "[cluster]\nnodes = 127.0.0.1:%d\n[lock]\nlease_ms = %d\nretry_interval_ms = 200\n"
             "[replication]\nwait_replicas = 1\nwait_timeout_ms = 500\n",
             g_cl.node[2].port, LEASE_MS);
    CU_ASSERT_FATAL((path = rdt_write_file(&g_cl.node[0], "cluster-wait.ini", text)) != NULL);
    RDT_ASSERT_RC(0, rdlock_client_open(&c[0], path));
    RDT_ASSERT_RC(0, rdlock_client_open(&c[1], path));
    CU_ASSERT_FATAL(c[0] != NULL && c[1] != NULL);
    for (int i = 0, found = 0; found < LOAD_NAMES; i++) {
        snprintf(l.names[found], sizeof l.names[0], "fol-%d", i);
        if (found == 0) {
            found++;
            continue;
        }
        /* All on the master of the first name. */
        if (rdl_key_slot(l.names[found], strlen(l.names[found])) == rdl_key_slot(l.names[0], strlen(l.names[0])) ||
            rdt_cluster_master_of_key(&g_cl, rdt_key(l.names[found], ""), strlen(rdt_key(l.names[found], ""))) ==
                rdt_cluster_master_of_key(&g_cl, rdt_key(l.names[0], ""), strlen(rdt_key(l.names[0], ""))))
            found++;
    }
    m = rdt_cluster_master_of_key(&g_cl, rdt_key(l.names[0], ""), strlen(rdt_key(l.names[0], "")));
    CU_ASSERT_FATAL(m >= 0);
    CU_ASSERT_FATAL(load_start(&l, c, th, args) == 0);
    rdt__nap_ms(500);
    before = __atomic_load_n(&l.ops, __ATOMIC_RELAXED);
    nm = rdt_cluster_failover(&g_cl, m, 60000);
    CU_ASSERT(nm >= 0);
    rdt__nap_ms(1000);
    load_stop(&l, th);
    fprintf(stderr, "[%ld sections, %ld during the failover or after, %ld overlaps, %ld lost, %ld failed] ", l.ops,
            l.ops - before, l.overlaps, l.lost, l.failed);
    CU_ASSERT(l.ops - before > 0);
    CU_ASSERT_EQUAL(l.overlaps, 0);
    CU_ASSERT_EQUAL(l.failed, 0);
    RDT_ASSERT_RC(0, rdt_close_clients(&c[0], &c[1], NULL));
}

/* Run the rdlock tool (the libtool wrapper in the build tree) with args,
 * its output into out: its exit status, or -1. */
static int tool(const char *args, char *out, size_t n)
{
    const char *top = getenv("top_builddir");
    char cmd[1400];
    FILE *f;
    size_t got = 0;
    int st;
    snprintf(cmd, sizeof cmd, "%s/rdlock -c %s %s 2>&1", top != NULL ? top : ".", g_ini, args);
    if ((f = popen(cmd, "r")) == NULL)
        return -1;
    while (got + 1 < n && fgets(out + got, (int)(n - got), f) != NULL)
        got += strlen(out + got);
    out[got] = '\0';
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* rdlock(1) on a cluster: a command under a lock on each master, a
 * conflict with -n, --status naming the holder, --reset. */
static void test_tool(void)
{
    int m[3];
    char name[64], args[256], out[4096];
    rdlock_t held;

    CU_ASSERT_FATAL(masters(m) == 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_FATAL(name_on(m[i], "tool", name, sizeof name) == 0);
        snprintf(args, sizeof args, "%s -- sh -c 'echo token=$RDLOCK_FENCING_TOKEN'", name);
        CU_ASSERT_EQUAL(tool(args, out, sizeof out), 0);
        CU_ASSERT(strstr(out, "token=1") != NULL);
        if (strstr(out, "token=1") == NULL)
            fprintf(stderr, "rdlock %s: %s\n", args, out);
    }
    CU_ASSERT_FATAL(name_on(m[1], "tool-held", name, sizeof name) == 0);
    RDT_ASSERT_RC(0, mx(&held, name, g_c1));
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    snprintf(args, sizeof args, "-n %s -- true", name);
    CU_ASSERT_EQUAL(tool(args, out, sizeof out), 1);
    snprintf(args, sizeof args, "--status %s", name);
    CU_ASSERT_EQUAL(tool(args, out, sizeof out), 0);
    {
        char pid[32];
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        CU_ASSERT(strstr(out, "exclusive") != NULL && strstr(out, pid) != NULL);
        if (strstr(out, pid) == NULL)
            fprintf(stderr, "rdlock --status %s: %s\n", name, out);
    }
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    snprintf(args, sizeof args, "--reset %s", name);
    CU_ASSERT_EQUAL(tool(args, out, sizeof out), 0);
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
}

/* A semaphore on each master: a waiter blocked on it is woken by a post
 * through the shard channel of its name's slot; leased permits are renewed
 * there.  And rdonce on a cluster. */
typedef struct semw {
    rdsem_t *s;
    int rc;
    long long took_at;
} semw_t;

static void *sem_waiter(void *arg)
{
    semw_t *w = arg;
    w->rc = rdsem_wait(w->s);
    w->took_at = rdt_now_ms();
    return NULL;
}

static int g_once_runs;
static void once_fn(void)
{
    g_once_runs++;
}

static void test_sem_and_once(void)
{
    int m[3], v = -1;
    char name[64];
    rdsem_attr_t a;
    rdsem_t s[3], leased;
    rdonce_t once;
    rdlock_attr_t la;

    CU_ASSERT_FATAL(masters(m) == 0);
    RDT_ASSERT_RC(0, rdsem_attr_init(&a));
    RDT_ASSERT_RC(0, rdsem_attr_setclient(&a, g_c1));
    for (int i = 0; i < 3; i++) {
        pthread_t th;
        semw_t w = { &s[i], -1, 0 };
        long long t0;
        CU_ASSERT_FATAL(name_on(m[i], "sem", name, sizeof name) == 0);
        RDT_ASSERT_RC(0, rdsem_init(&s[i], name, 0, &a));
        RDT_ASSERT_RC(EAGAIN, rdsem_trywait(&s[i]));
        CU_ASSERT_FATAL(pthread_create(&th, NULL, sem_waiter, &w) == 0);
        rdt__nap_ms(300); /* blocked (pacing: nothing to post before) */
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdsem_post(&s[i]));
        pthread_join(th, NULL);
        RDT_ASSERT_RC(0, w.rc);
        if (w.took_at - t0 >= WAKE_MS)
            fprintf(stderr, "semaphore waiter on %s took %lld ms after the post\n", name, w.took_at - t0);
        CU_ASSERT(w.took_at - t0 < WAKE_MS);
        RDT_ASSERT_RC(0, rdsem_getvalue(&s[i], &v));
        RDT_ASSERT_EQ_LL(0, v);
        RDT_ASSERT_RC(0, rdsem_destroy(&s[i]));
    }
    /* A leased permit outlives several leases (renewed on its master). */
    RDT_ASSERT_RC(0, rdsem_attr_settype(&a, RDSEM_LEASED));
    CU_ASSERT_FATAL(name_on(m[2], "lsem", name, sizeof name) == 0);
    RDT_ASSERT_RC(0, rdsem_init(&leased, name, 1, &a));
    RDT_ASSERT_RC(0, rdsem_trywait(&leased));
    rdt__nap_ms(3 * LEASE_MS);
    RDT_ASSERT_RC(0, rdsem_getvalue(&leased, &v));
    RDT_ASSERT_EQ_LL(0, v);
    RDT_ASSERT_RC(0, rdsem_post(&leased));
    RDT_ASSERT_RC(0, rdsem_destroy(&leased));
    RDT_ASSERT_RC(0, rdsem_attr_destroy(&a));

    RDT_ASSERT_RC(0, rdlock_attr_init(&la));
    RDT_ASSERT_RC(0, rdlock_attr_setclient(&la, g_c2));
    RDT_ASSERT_RC(0, rdonce_init(&once, "once-cl", &la));
    RDT_ASSERT_RC(0, rdonce(&once, once_fn));
    RDT_ASSERT_RC(0, rdonce(&once, once_fn));
    CU_ASSERT_EQUAL(g_once_runs, 1);
    RDT_ASSERT_RC(0, rdonce_destroy(&once));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&la));
}

static void test_bad_names(void)
{
    rdlock_t m;
    RDT_ASSERT_RC(EINVAL, mx(&m, "a}b", g_c1));
    RDT_ASSERT_RC(EINVAL, mx(&m, "}", g_c1));
}

/* A condition waiter on another client, and its signaller. */
typedef struct condw {
    rdcond_t *cv;
    rdlock_t *lk;
    volatile int *flag;
    int rc;
    long long woke_at;
} condw_t;

static void *cond_waiter(void *arg)
{
    condw_t *w = arg;
    w->rc = rdlock_lock(w->lk);
    while (w->rc == 0 && !*w->flag)
        w->rc = rdcond_wait(w->cv, w->lk);
    w->woke_at = rdt_now_ms();
    if (w->rc == 0)
        w->rc = rdlock_unlock(w->lk);
    return NULL;
}

typedef struct barw {
    rdbarrier_t *b;
    int rc;
} barw_t;

static void *bar_waiter(void *arg)
{
    barw_t *w = arg;
    w->rc = rdbarrier_wait(w->b);
    return NULL;
}

/* A condition variable and a barrier on each master: the waiter on one
 * client is woken by the other's signal through the shard channel of the
 * name's slot (the re-check period is 10 s), and a barrier of two on two
 * clients releases both, one of them serial. */
static void test_cond_and_barrier(void)
{
    int m[3];
    char name[64];

    CU_ASSERT_FATAL(masters(m) == 0);
    for (int i = 0; i < 3; i++) {
        rdlock_attr_t a1, a2;
        rdcond_attr_t ca;
        rdcond_t cv1, cv2;
        rdlock_t l1, l2;
        rdbarrier_t b1, b2;
        volatile int flag = 0;
        condw_t w;
        barw_t bw;
        pthread_t th;
        long long t0;
        int rc;

        CU_ASSERT_FATAL(name_on(m[i], "cv", name, sizeof name) == 0);
        rdlock_attr_init(&a1);
        rdlock_attr_setclient(&a1, g_c1);
        rdlock_attr_init(&a2);
        rdlock_attr_setclient(&a2, g_c2);
        RDT_ASSERT_RC(0, rdlock_init(&l1, name, &a1));
        RDT_ASSERT_RC(0, rdlock_init(&l2, name, &a2));
        rdcond_attr_init(&ca);
        rdcond_attr_setclient(&ca, g_c1);
        RDT_ASSERT_RC(0, rdcond_init(&cv1, name, &ca));
        rdcond_attr_setclient(&ca, g_c2);
        RDT_ASSERT_RC(0, rdcond_init(&cv2, name, &ca));
        rdcond_attr_destroy(&ca);
        w.cv = &cv1;
        w.lk = &l1;
        w.flag = &flag;
        w.rc = -1;
        CU_ASSERT_FATAL(pthread_create(&th, NULL, cond_waiter, &w) == 0);
        rdt__nap_ms(300); /* waiting (pacing: nothing to signal before) */
        RDT_ASSERT_RC(0, rdlock_lock(&l2));
        flag = 1;
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdcond_signal(&cv2));
        RDT_ASSERT_RC(0, rdlock_unlock(&l2));
        pthread_join(th, NULL);
        RDT_ASSERT_RC(0, w.rc);
        CU_ASSERT(w.woke_at - t0 < WAKE_MS);
        rdcond_destroy(&cv1);
        rdcond_destroy(&cv2);
        rdlock_destroy(&l1);
        rdlock_destroy(&l2);

        CU_ASSERT_FATAL(name_on(m[i], "bar", name, sizeof name) == 0);
        RDT_ASSERT_RC(0, rdbarrier_init(&b1, name, 2, &a1));
        RDT_ASSERT_RC(0, rdbarrier_init(&b2, name, 2, &a2));
        bw.b = &b1;
        bw.rc = -1;
        CU_ASSERT_FATAL(pthread_create(&th, NULL, bar_waiter, &bw) == 0);
        rc = rdbarrier_wait(&b2);
        pthread_join(th, NULL);
        CU_ASSERT(rc == 0 || rc == RDBARRIER_SERIAL_THREAD);
        CU_ASSERT(bw.rc == 0 || bw.rc == RDBARRIER_SERIAL_THREAD);
        CU_ASSERT((rc == RDBARRIER_SERIAL_THREAD) + (bw.rc == RDBARRIER_SERIAL_THREAD) == 1);
        rdbarrier_destroy(&b1);
        rdbarrier_destroy(&b2);
        rdlock_attr_destroy(&a1);
        rdlock_attr_destroy(&a2);
    }
}

static const rdt_test_t tests[] = {
    { "names_on_every_master", test_names_on_every_master },
    { "migration", test_migration },
    { "unlock_while_migrating", test_unlock_while_migrating },
    { "failover", test_failover },
    { "reshard_under_load", test_reshard_under_load },
    { "failover_under_load", test_failover_under_load },
    { "sem_and_once", test_sem_and_once },
    { "cond_and_barrier", test_cond_and_barrier },
    { "tool", test_tool },
    { "bad_names", test_bad_names },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "cluster_locks", tests, suite_setup, suite_teardown, 240);
}
