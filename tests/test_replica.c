/* test_replica.c - [replication] wait_replicas (docs/CONTRACT.md section 9: confirm
 * each acquisition on N replicas with WAIT before returning), against a
 * private master and a private replica of it (both redis-server, loopback,
 * no persistence).
 *
 *   confirmed_hold_is_on_the_replica  with one replica wanted and one
 *       there, an acquisition returns 0 and the replica already has it.
 *   unconfirmed_try_is_undone  wanting two replicas of one, trylock is EIO
 *       after wait_timeout_ms, says so in the log, and leaves the lock free
 *       on the master (a shared acquisition too).
 *   stopped_replica_blocks_timed_and_blocking  while the replica is stopped
 *       (SIGSTOP) a timed lock ends with EIO at its deadline and a blocking
 *       one keeps waiting; when the replica continues, the blocking one
 *       gets the lock.
 *   robust_marker_survives_undo  undoing a grant keeps the robust state
 *       for the next robust acquirer: an EOWNERDEAD grant's, and a
 *       non-robust grant's that had replaced the owner-dead marker.
 *   handover_confirmed  a hand-over by message is confirmed by the
 *       waiter's own look: with the replica stopped the waiter does not
 *       return until it continues.
 *   config_rules  wait_timeout_ms must be below command_timeout_ms;
 *       wait_replicas is 0..1000.
 *   all_confirmed_on_the_replica  wait_replicas = all, one replica
 *       online: it is counted and confirms the acquisition.
 *   all_info_refused  wait_replicas = all for a user without INFO:
 *       EACCES at once, logged, nothing taken.
 *   info_parser  the INFO replication decoder (src/proto/info.c) on
 *       Redis's text, this master's, and malformed input.
 *   noreplicas_is_not_confirmed  a master with min-replicas-to-write
 *       above its replicas refuses writes (NOREPLICAS): an unlock retries,
 *       then returns EIO and keeps the hold (held, renewed, unlock may be
 *       retried), and succeeds once the master takes writes again; an
 *       acquisition is EIO and leaves nothing behind.
 *   demoted_master_reconnects  a failover by hand (the replica promoted,
 *       the master made its replica, the client's socket path pointed at
 *       the new master, as a DNS name or a proxy would move): the client's
 *       pooled connections answer READONLY; it connects again and carries
 *       on, and the watchdog keeps a hold taken before the failover.
 *
 * The only sleeps let wall time pass (leases, the replica's stop). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "proto/info.h"
#include "testlib.h"
#include "testutil.h"

#define WAIT_MS 300 /* wait_timeout_ms of the confirming clients */
/* ... of the one that must always be confirmed: a replica on a loaded
 * two-core machine has taken longer than 300 ms to acknowledge a write. */
#define WAIT_SURE_MS 5000

static rdt_server_t g_master, g_replica;
static redisContext *g_m, *g_r;    /* plain connections to master, replica */
static rdlock_client_t *g_c0;      /* no confirmation */
static rdlock_client_t *g_c1;      /* wait_replicas = 1 (there is one) */
static rdlock_client_t *g_c2;      /* wait_replicas = 2 (never enough) */
static rdlock_client_t *g_c1sure;  /* wait_replicas = 1, wait_timeout_ms WAIT_SURE_MS */

/* Wait (bounded) until the master reports its replica online and caught
 * up: 0, or -1 (printed). */
static int wait_replica_online(int timeout_ms)
{
    long long end = rdt_now_ms() + timeout_ms;
    for (;;) {
        redisReply *r = redisCommand(g_m, "INFO replication");
        int ok = r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "state=online") != NULL;
        if (r)
            freeReplyObject(r);
        if (ok && rdt_int_cmd(g_m, -1, "WAIT 1 1000") == 1)
            return 0;
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "replica not online after %d ms\n", timeout_ms);
            return -1;
        }
        rdt__nap_ms(20);
    }
}

static int open_client(rdlock_client_t **c, const char *extra)
{
    const char *ini = rdt_write_ini(&g_master, 0, extra);
    int rc = ini ? rdlock_client_open(c, ini) : -1;
    if (rc != 0)
        fprintf(stderr, "open_client(%s): %d\n", extra ? extra : "", rc);
    return rc;
}

static int suite_setup(void)
{
    char extra[128];
    rdt_log_capture();
    if (rdt_server_start(&g_master, NULL, NULL) != 0)
        return -1;
    snprintf(extra, sizeof extra, "--replicaof 127.0.0.1 %d", g_master.port);
    if (rdt_server_start(&g_replica, NULL, extra) != 0)
        return -1;
    g_m = rdt_connect(&g_master);
    g_r = rdt_connect(&g_replica);
    if (!g_m || !g_r || wait_replica_online(20000) != 0)
        return -1;
    snprintf(extra, sizeof extra, "[replication]\nwait_replicas = 1\nwait_timeout_ms = %d\n", WAIT_MS);
    if (open_client(&g_c0, NULL) != 0 || open_client(&g_c1, extra) != 0)
        return -1;
    snprintf(extra, sizeof extra, "[redis]\ncommand_timeout_ms = %d\n[replication]\nwait_replicas = 1\nwait_timeout_ms = %d\n",
             2 * WAIT_SURE_MS, WAIT_SURE_MS);
    if (open_client(&g_c1sure, extra) != 0)
        return -1;
    snprintf(extra, sizeof extra, "[replication]\nwait_replicas = 2\nwait_timeout_ms = %d\n", WAIT_MS);
    return open_client(&g_c2, extra);
}

static int suite_teardown(void)
{
    rdlock_client_t **cs[4] = { &g_c0, &g_c1, &g_c2, &g_c1sure };
    int i, rc = 0;
    for (i = 0; i < 4; i++) {
        if (*cs[i] && rdlock_client_close(*cs[i]) != 0)
            rc = -1;
        *cs[i] = NULL;
    }
    if (g_m)
        redisFree(g_m);
    if (g_r)
        redisFree(g_r);
    g_m = g_r = NULL;
    rdt_server_stop(&g_replica);
    rdt_server_stop(&g_master);
    return rc;
}

static void fresh(void)
{
    CU_ASSERT_EQUAL_FATAL(rdt_flushall(&g_master), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_int_cmd(g_m, -1, "WAIT 1 2000"), 1);
    rdt_log_clear();
}

/* Fields of hash key on the replica (0 if none or missing). */
static long long replica_hlen(const char *key)
{
    return rdt_int_cmd(g_r, -1, "HLEN %s", key);
}

/* ------------------------------------------------------------------ */

static void test_confirmed_hold_is_on_the_replica(void)
{
    rdlock_t m;
    rdrwlock_t rw;
    const char *k = rdt_key("rep-ok", "");

    fresh();
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "rep-ok", g_c1sure, 0), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    /* WAIT returned only once the replica had it: 'm' and our field. */
    RDT_ASSERT_EQ_LL(2, replica_hlen(k));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_EQ_LL(2, replica_hlen(k));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));

    CU_ASSERT_EQUAL_FATAL(rdt_rwlock_on(&rw, "rep-ok", g_c1sure), 0);
    RDT_ASSERT_RC(0, rdrwlock_rdlock(&rw));
    RDT_ASSERT_EQ_LL(2, replica_hlen(k));
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    CU_ASSERT(!rdt_log_has("undone"));
    if (rdt_log_has("undone"))
        fprintf(stderr, "\n%s", rdt_log_text());
}

static void test_unconfirmed_try_is_undone(void)
{
    rdlock_t m, other;
    rdrwlock_t rw;
    long long t0, el;
    const char *k = rdt_key("rep-two", "");

    fresh();
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "rep-two", g_c2, 0), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&other, "rep-two", g_c0, 0), 0);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EIO, rdlock_trylock(&m));
    el = rdt_now_ms() - t0;
    fprintf(stderr, "unconfirmed trylock: EIO after %lld ms (wait_timeout_ms %d)\n", el, WAIT_MS);
    CU_ASSERT(el >= WAIT_MS - 20 && el < 5000);
    CU_ASSERT(rdt_log_has("confirmed by 1 of 2 replicas"));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, k));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, rdt_key("rep-two", ":x")));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m)); /* nothing held */
    RDT_ASSERT_RC(0, rdlock_trylock(&other)); /* free for everyone else */
    RDT_ASSERT_RC(0, rdlock_unlock(&other));

    CU_ASSERT_EQUAL_FATAL(rdt_rwlock_on(&rw, "rep-two", g_c2), 0);
    RDT_ASSERT_RC(EIO, rdrwlock_tryrdlock(&rw));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, k));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

static void test_stopped_replica_blocks_timed_and_blocking(void)
{
    rdlock_t m, b;
    struct timespec ts;
    rdt_holder_t l;
    long long t0, el, resumed;
    const char *k = rdt_key("rep-stop", "");

    fresh();
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "rep-stop", g_c1, 0), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&b, "rep-stop", g_c1, 0), 0);
    rdt_server_pause(&g_replica);
    t0 = rdt_now_ms();
    ts = rdt_abstime(CLOCK_REALTIME, 1200);
    RDT_ASSERT_RC(EIO, rdlock_timedlock(&m, &ts));
    el = rdt_now_ms() - t0;
    fprintf(stderr, "timedlock with the replica stopped: EIO after %lld ms (deadline 1200)\n", el);
    CU_ASSERT(el >= 1100 && el < 4000);
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, k));

    CU_ASSERT_EQUAL_FATAL(rdt_holder_start(&l, &b), 0);
    rdt__nap_ms(1000); /* the blocking caller keeps trying meanwhile */
    CU_ASSERT(!rdt_holder_locked(&l));
    resumed = rdt_now_ms();
    rdt_server_resume(&g_replica);
    CU_ASSERT(rdt_holder_wait(&l, 10000));
    fprintf(stderr, "blocking lock: %d, %lld ms after the replica continued\n", l.lock_rc, l.locked_at - resumed);
    RDT_ASSERT_RC(0, l.lock_rc);
    CU_ASSERT(l.locked_at >= resumed);
    RDT_ASSERT_EQ_LL(2, replica_hlen(k));
    RDT_ASSERT_RC(0, rdt_holder_finish(&l));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&b));
}

static void test_robust_marker_survives_undo(void)
{
    rdt_lockopts_t o0 = RDT_LOCKOPTS(g_c0), o1 = RDT_LOCKOPTS(g_c1), o2 = RDT_LOCKOPTS(g_c2),
                   o2n = RDT_LOCKOPTS(g_c2);
    rdlock_t dead, r2, r1, n2;

    fresh();
    o0.robust = RDLOCK_ROBUST;
    o0.lease = 200;
    o0.watchdog = 0;
    o1.robust = RDLOCK_ROBUST;
    o2.robust = RDLOCK_ROBUST;
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&dead, "rep-robust", &o0), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&r2, "rep-robust", &o2), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&r1, "rep-robust", &o1), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&n2, "rep-robust", &o2n), 0); /* not robust */
    /* A hold that ends without unlock: its lease runs out. */
    RDT_ASSERT_RC(0, rdlock_lock(&dead));
    CU_ASSERT_EQUAL(rdt_wait_gone(g_m, rdt_key("rep-robust", ""), 3000), 1);
    /* Granted to a non-robust caller (which replaces the owner-dead
     * marker), not confirmable, undone: the marker comes back ... */
    RDT_ASSERT_RC(EIO, rdlock_trylock(&n2));
    /* Granted with EOWNERDEAD, not confirmable, undone ... */
    RDT_ASSERT_RC(EIO, rdlock_trylock(&r2));
    /* ... and the next robust acquirer (confirmed) is still told. */
    RDT_ASSERT_RC(EOWNERDEAD, rdlock_trylock(&r1));
    RDT_ASSERT_RC(0, rdlock_consistent(&r1));
    RDT_ASSERT_RC(0, rdlock_unlock(&r1));
    RDT_ASSERT_RC(0, rdlock_trylock(&r1)); /* clean again */
    RDT_ASSERT_RC(0, rdlock_unlock(&r1));
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&dead));
    RDT_ASSERT_RC(0, rdlock_destroy(&dead));
    RDT_ASSERT_RC(0, rdlock_destroy(&r2));
    RDT_ASSERT_RC(0, rdlock_destroy(&r1));
    RDT_ASSERT_RC(0, rdlock_destroy(&n2));
}

static void test_handover_confirmed(void)
{
    rdlock_t holder, waiter;
    rdt_holder_t l;
    long long resumed;
    const char *k = rdt_key("rep-hand", "");

    fresh();
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&holder, "rep-hand", g_c0, 0), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&waiter, "rep-hand", g_c1, 0), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&holder));
    CU_ASSERT_EQUAL_FATAL(rdt_holder_start(&l, &waiter), 0);
    CU_ASSERT_EQUAL(rdt_wait_zcard(g_m, rdt_key("rep-hand", ":w"), 1, 5000), 1);
    /* The hand-over happens on the master while the replica is stopped:
     * the waiter must not return on the message alone. */
    rdt_server_pause(&g_replica);
    RDT_ASSERT_RC(0, rdlock_unlock(&holder));
    rdt__nap_ms(800);
    CU_ASSERT(!rdt_holder_locked(&l));
    resumed = rdt_now_ms();
    rdt_server_resume(&g_replica);
    CU_ASSERT(rdt_holder_wait(&l, 10000));
    fprintf(stderr, "hand-over: %d, %lld ms after the replica continued\n", l.lock_rc, l.locked_at - resumed);
    RDT_ASSERT_RC(0, l.lock_rc);
    CU_ASSERT(l.locked_at >= resumed);
    RDT_ASSERT_EQ_LL(2, replica_hlen(k));
    RDT_ASSERT_RC(0, rdt_holder_finish(&l));
    RDT_ASSERT_RC(0, rdlock_destroy(&holder));
    RDT_ASSERT_RC(0, rdlock_destroy(&waiter));
}

static void test_config_rules(void)
{
    static const struct {
        const char *extra;
        const char *says;
    } bad[] = {
        { "command_timeout_ms = 500\n[replication]\nwait_replicas = 1\nwait_timeout_ms = 500\n",
          "replication:wait_timeout_ms" },
        { "[replication]\nwait_replicas = 1001\n", "replication:wait_replicas" },
        { "[replication]\nwait_timeout_ms = 0\n", "replication:wait_timeout_ms" },
    };
    rdlock_client_t *c = NULL;
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *ini = rdt_write_ini(&g_master, 0, bad[i].extra);
        rdt_log_clear();
        CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
        RDT_ASSERT_RC(EINVAL, rdlock_client_open(&c, ini));
        if (!rdt_log_has(bad[i].says))
            fprintf(stderr, "config_rules %zu: no log line naming %s:\n%s", i, bad[i].says, rdt_log_text());
        CU_ASSERT(rdt_log_has(bad[i].says));
    }
    /* Without wait_replicas the timeout is not checked against anything. */
    {
        const char *ini =
            rdt_write_ini(&g_master, 0, "command_timeout_ms = 500\n[replication]\nwait_timeout_ms = 900\n");
        CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
        RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
        RDT_ASSERT_RC(0, rdlock_client_close(c));
    }
}

/* wait_replicas = all with the one replica online: the acquisition waits
 * for it (the replica has the hold when lock returns), and the count is
 * logged. */
static void test_all_confirmed_on_the_replica(void)
{
    rdlock_client_t *ca = NULL;
    rdlock_t m;
    char extra[160];
    const char *k = rdt_key("rep-all", "");

    fresh();
    snprintf(extra, sizeof extra, "[redis]\ncommand_timeout_ms = %d\n[replication]\nwait_replicas = all\nwait_timeout_ms = %d\n",
             2 * WAIT_SURE_MS, WAIT_SURE_MS);
    CU_ASSERT_EQUAL_FATAL(open_client(&ca, extra), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "rep-all", ca, 0), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_EQ_LL(2, replica_hlen(k));
    CU_ASSERT(rdt_log_has("1 replicas online: acquisitions wait for 1 (wait_replicas = all)"));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT(!rdt_log_has("undone"));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_client_close(ca));
}

/* wait_replicas = all needs INFO: a user without it gets EACCES from a
 * try and from a blocking lock alike, at once and with a log line that
 * says why, not retries without end. */
static void test_all_info_refused(void)
{
    rdlock_client_t *ca = NULL;
    rdlock_t m;
    char extra[256];
    long long t0;

    fresh();
    {
        redisReply *r = redisCommand(g_m, "ACL SETUSER rep-noinfo on >pw-noinfo ~* &* +@all -info");
        CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    snprintf(extra, sizeof extra,
             "[redis]\nusername = rep-noinfo\npassword = pw-noinfo\ncommand_timeout_ms = %d\n[replication]\n"
             "wait_replicas = all\nwait_timeout_ms = %d\n",
             2 * WAIT_SURE_MS, WAIT_SURE_MS);
    CU_ASSERT_EQUAL_FATAL(open_client(&ca, extra), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "rep-noinfo", ca, 0), 0);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EACCES, rdlock_trylock(&m));
    RDT_ASSERT_RC(EACCES, rdlock_lock(&m));
    CU_ASSERT(rdt_now_ms() - t0 < 2 * WAIT_SURE_MS);
    CU_ASSERT(rdt_log_has("INFO replication refused"));
    CU_ASSERT(rdt_log_has("wait_replicas = all needs it"));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, rdt_key("rep-noinfo", "")));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_client_close(ca));
    {
        redisReply *r = redisCommand(g_m, "ACL DELUSER rep-noinfo");
        if (r != NULL)
            freeReplyObject(r);
    }
}

/* rdl_info_online_replicas on one text: its code, and *online (-1 if
 * not set). */
static int info_count(const char *text, int *online)
{
    *online = -1;
    return rdl_info_online_replicas(text, strlen(text), online);
}

/* The INFO replication decoder (src/proto/info.c, linked in: the library
 * hides it): Redis's own text, then what a master never writes. */
static void test_info_parser(void)
{
    static const struct {
        const char *text;
        int rc, online;
    } cases[] = {
        { "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n", 0, 0 },
        { "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"
          "slave0:ip=127.0.0.1,port=7001,state=online,offset=100,lag=0\r\n"
          "slave1:ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0\r\nmaster_failover_state:no-failover\r\n",
          0, 1 },
        { "role:master\nconnected_slaves:3\nslave0:state=online\nslave1:ip=a,state=online,lag=1\n"
          "slave12:ip=b,port=1,state=online\n", 0, 3 },
        /* "onlinex" and "send_bulk" are not online. */
        { "role:master\nconnected_slaves:2\nslave0:state=onlinex\nslave1:state=send_bulk\n", 0, 0 },
        /* A replica. */
        { "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nslave_read_only:1\r\nconnected_slaves:0\r\n",
          EROFS, -1 },
        /* Malformed: no role, an unknown role, more replica lines than
         * connected_slaves, a
         * replica line without its state, numbers that are not. */
        { "", EIO, -1 },
        { "connected_slaves:0\n", EIO, -1 },
        { "role:sentinel\nconnected_slaves:0\n", EIO, -1 },
        { "role:master\n", EIO, -1 },
        /* Fewer lines than connected_slaves: Redis leaves out replicas it
         * cannot name (never online). */
        { "role:master\nconnected_slaves:2\nslave0:state=online\n", 0, 1 },
        { "role:master\nconnected_slaves:0\nslave0:state=online\n", EIO, -1 },
        { "role:master\nconnected_slaves:1\nslave0:ip=1.2.3.4,port=1\n", EIO, -1 },
        { "role:master\nconnected_slaves:x\n", EIO, -1 },
        { "role:master\nconnected_slaves:\n", EIO, -1 },
        { "role:master\nconnected_slaves:99999999999999999999\n", EIO, -1 },
        { "role:master\nconnected_slaves:-1\n", EIO, -1 },
        { "role:master\nconnected_slaves:1\nslave0:\n", EIO, -1 },
        { "role:master\nconnected_slaves:1\nslave0:state=", EIO, -1 },
        { "role:masterx\nconnected_slaves:0\n", EIO, -1 },
        { "\n\n\r\n:::,,,\n", EIO, -1 },
        /* "slaveX:" is not a replica line: not counted, not refused. */
        { "role:master\nconnected_slaves:0\nslavex:state=online\nslave:state=online\n", 0, 0 },
    };
    char big[4096];
    int online;
    size_t i, n;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = info_count(cases[i].text, &online);
        if (rc != cases[i].rc || online != cases[i].online)
            fprintf(stderr, "\n    info case %zu: rc %d online %d, expected %d %d\n", i, rc, online, cases[i].rc,
                    cases[i].online);
        RDT_ASSERT_RC(cases[i].rc, rc);
        RDT_ASSERT_EQ_LL(cases[i].online, online);
    }
    /* A NUL inside the text, and a text cut short: read as given (len), no
     * further (the replica line cut off is not counted). */
    RDT_ASSERT_RC(0, rdl_info_online_replicas("role:master\nconnected_slaves:0\n\0slave0:state=online\n", 50,
                                              &online));
    RDT_ASSERT_EQ_LL(0, online);
    RDT_ASSERT_RC(0, rdl_info_online_replicas("role:master\nconnected_slaves:1\nslave0:state=online\n", 30,
                                              &online));
    RDT_ASSERT_EQ_LL(0, online);
    RDT_ASSERT_RC(EIO, rdl_info_online_replicas(NULL, 0, &online));
    /* Bytes that are no text at all. */
    for (n = 0; n < sizeof big; n++)
        big[n] = (char)(n * 131 + 7);
    RDT_ASSERT_RC(EIO, rdl_info_online_replicas(big, sizeof big, &online));
    /* And the master of this suite, as it answers. */
    {
        redisReply *r = redisCommand(g_m, "INFO replication");
        CU_ASSERT_FATAL(r != NULL && r->type == REDIS_REPLY_STRING);
        RDT_ASSERT_RC(0, rdl_info_online_replicas(r->str, r->len, &online));
        RDT_ASSERT_EQ_LL(1, online);
        freeReplyObject(r);
    }
}

/* Point the symlink at path target (replacing it atomically). */
static int point_link(const char *link, const char *target)
{
    char tmp[420];
    snprintf(tmp, sizeof tmp, "%s.new", link);
    unlink(tmp);
    if (symlink(target, tmp) != 0 || rename(tmp, link) != 0) {
        perror("point_link");
        return -1;
    }
    return 0;
}

/* Make `to` the master and `from` its replica; wait until in sync. */
static int switch_roles(const rdt_server_t *to, redisContext *to_c, redisContext *from_c)
{
    long long end = rdt_now_ms() + 20000;
    redisReply *r = redisCommand(to_c, "REPLICAOF NO ONE");
    if (r)
        freeReplyObject(r);
    r = redisCommand(from_c, "REPLICAOF 127.0.0.1 %d", to->port);
    if (r)
        freeReplyObject(r);
    while (rdt_now_ms() < end) {
        if (rdt_int_cmd(to_c, -1, "WAIT 1 500") == 1)
            return 0;
        rdt__nap_ms(20);
    }
    fprintf(stderr, "switch_roles: no replica in sync after 20 s\n");
    return -1;
}

static void test_demoted_master_reconnects(void)
{
    rdt_lockopts_t o;
    rdlock_client_t *cs = NULL;
    rdlock_t held, fresh_m;
    char link[400], body[700];
    const char *ini;

    fresh();
    snprintf(link, sizeof link, "%s/redis-endpoint.sock", g_master.dir);
    CU_ASSERT_EQUAL_FATAL(point_link(link, g_master.sock), 0);
    /* The client knows the master only by the link's path. */
    snprintf(body, sizeof body, "[redis]\nsocket = %s\n[lock]\nlease_ms = 1500\n", link);
    ini = rdt_write_file(&g_master, "endpoint.ini", body);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    CU_ASSERT_EQUAL_FATAL(rdlock_client_open(&cs, ini), 0);
    o = (rdt_lockopts_t)RDT_LOCKOPTS(cs);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&held, "rep-demote", &o), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&fresh_m, "rep-demote-2", &o), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&held));
    CU_ASSERT_EQUAL_FATAL(rdt_int_cmd(g_m, -1, "WAIT 1 2000"), 1);

    /* The failover. */
    rdt_log_clear();
    CU_ASSERT_EQUAL_FATAL(switch_roles(&g_replica, g_r, g_m), 0);
    CU_ASSERT_EQUAL_FATAL(point_link(link, g_replica.sock), 0);

    /* New acquisitions reach the new master ... */
    RDT_ASSERT_RC(0, rdlock_trylock(&fresh_m));
    RDT_ASSERT_EQ_LL(1, rdt_exists(g_r, rdt_key("rep-demote-2", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&fresh_m));
    CU_ASSERT(rdt_log_has("READONLY"));
    /* ... and the hold from before lives on: three leases of renewals. */
    rdt__nap_ms(4500);
    RDT_ASSERT_EQ_LL(1, rdt_exists(g_r, rdt_key("rep-demote", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&held));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_r, rdt_key("rep-demote", "")));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&fresh_m));
    RDT_ASSERT_RC(0, rdlock_client_close(cs));

    /* Back to the suite's topology. */
    CU_ASSERT_EQUAL(switch_roles(&g_master, g_m, g_r), 0);
}

/* CONFIG SET min-replicas-to-write n on the master: 0 or -1 (printed). */
static int min_replicas(int n)
{
    redisReply *r = redisCommand(g_m, "CONFIG SET min-replicas-to-write %d", n);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "CONFIG SET min-replicas-to-write %d: %s\n", n, r && r->str ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static void test_noreplicas_is_not_confirmed(void)
{
    rdlock_t m, other;
    unsigned count = 0;
    long long t0, el;
    int rc;
    const char *k = rdt_key("rep-norep", "");

    fresh();
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "rep-norep", g_c0, 0), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&other, "rep-norep2", g_c0, 0), 0);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_FATAL(min_replicas(2) == 0);

    t0 = rdt_now_ms();
    rc = rdlock_unlock(&m);
    el = rdt_now_ms() - t0;
    fprintf(stderr, "unlock against NOREPLICAS: %s after %lld ms\n", rdt_errname(rc), el);
    RDT_ASSERT_RC(EIO, rc);
    CU_ASSERT(el >= 70); /* retried: 10 + 20 + 40 ms of backoff */
    CU_ASSERT(rdt_log_has("NOREPLICAS"));
    RDT_ASSERT_EQ_LL(1, rdt_exists(g_m, k)); /* not released ... */
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &count));
    RDT_ASSERT_EQ_LL(1, count);              /* ... and still ours */
    RDT_ASSERT_RC(EIO, rdlock_trylock(&other));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, rdt_key("rep-norep2", "")));

    CU_ASSERT(min_replicas(0) == 0);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, k));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&other));
}

static const rdt_test_t tests[] = {
    { "confirmed_hold_is_on_the_replica", test_confirmed_hold_is_on_the_replica },
    { "unconfirmed_try_is_undone", test_unconfirmed_try_is_undone },
    { "stopped_replica_blocks_timed_and_blocking", test_stopped_replica_blocks_timed_and_blocking },
    { "robust_marker_survives_undo", test_robust_marker_survives_undo },
    { "handover_confirmed", test_handover_confirmed },
    { "config_rules", test_config_rules },
    { "all_confirmed_on_the_replica", test_all_confirmed_on_the_replica },
    { "all_info_refused", test_all_info_refused },
    { "info_parser", test_info_parser },
    { "noreplicas_is_not_confirmed", test_noreplicas_is_not_confirmed },
    { "demoted_master_reconnects", test_demoted_master_reconnects },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "replica", tests, suite_setup, suite_teardown, 60);
}
