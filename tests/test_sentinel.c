/* test_sentinel.c - [sentinel] (docs/CONTRACT.md section 9: master discovery and
 * failover through Redis Sentinel), against a private master, a replica of
 * it and a sentinel monitoring them (all redis-server, loopback, no
 * persistence).
 *
 *   discovers_master  a client that knows only the sentinels (the first of
 *       them down, and a [redis] port where nothing listens) finds the
 *       master and locks there.
 *   unknown_master_is_eio  a master name no sentinel knows: client_open
 *       with fail_fast is EIO, a try on a patient client is EIO.
 *   config_rules  both keys or neither, no socket with Sentinel, host:port
 *       entries (IPv6 in brackets), at most 16.
 *   sentinel_auth  a sentinel that wants a password (its own requirepass,
 *       or an ACL user): [sentinel] password, password_file, username;
 *       the right ones find the master and the background thread's link
 *       authenticates too; a wrong or missing password is EACCES at
 *       client_open; the password is never logged.
 *   link_reconnects  the sentinel kills the client's link (CLIENT KILL
 *       TYPE pubsub): the client says so, tries the next sentinel (the
 *       dead one), and listens again on the live one.
 *   deposed_master_left_at_next_round  a failover Sentinel cannot finish
 *       on the old master (which keeps its clients): the watchdog asks the
 *       sentinels each round and moves to the new master, with the pool.
 *   dropped_hold_reported_in_one_round  the same, for a hold the new
 *       master never got (taken after the promotion): the move renews it
 *       there at once, the renewal finds it gone, and it is reported lost
 *       (lost callback, then ENOLCK) within one renewal interval.
 *   failover_followed  SENTINEL FAILOVER: a client that holds nothing
 *       hears of it from its sentinel link and locks on the new master
 *       at once, while the old one is still a master that takes writes
 *       (Sentinel demotes it some 10 s later); a hold taken before the
 *       failover is renewed there and unlocks with 0; once the old master
 *       is a replica, new acquisitions land on the new master.
 *
 * The only sleeps let wall time pass (leases, Sentinel's own timers). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"
#include "topology.h"

#define MASTER_NAME "rdtmaster"

static rdt_server_t g_master, g_replica, g_sentinel;
static redisContext *g_m, *g_r, *g_s;
static int g_dead_port; /* a port where nothing listens */
static char g_sentinels[128];

/* The master's port according to the sentinel, -1 if it has none. */
static int sentinel_says(void)
{
    return rdt_sentinel_master_port(&g_sentinel, MASTER_NAME);
}

/* "master" or "slave" from ROLE on s, into buf.  A fresh connection each
 * time: Sentinel's reconfiguration kills the old master's clients. */
static void role_of(const rdt_server_t *s, char *buf, size_t n)
{
    rdt_role_of(s, buf, n);
}

/* Wait (bounded) until Sentinel could promote the replica of master: a
 * SENTINEL FAILOVER sent before that fails with NOGOODSLAVE (the
 * sentinel lists a replica as soon as the master's INFO names it, before
 * it has a link to it and an INFO of its own). */
static int wait_failover_ready(const rdt_server_t *master, const rdt_server_t *replica, int timeout_ms)
{
    const rdt_server_t *reps[1] = { replica }, *sents[1] = { &g_sentinel };
    return rdt_topology_wait(master, reps, 1, sents, 1, MASTER_NAME, timeout_ms);
}


static const char *write_ini(const char *extra)
{
    char body[1024];
    snprintf(body, sizeof body,
             "[redis]\nhost = 127.0.0.1\nport = %d\n[sentinel]\nmaster_name = %s\nsentinels = %s\n%s", g_dead_port,
             MASTER_NAME, g_sentinels, extra ? extra : "");
    return rdt_write_file(&g_master, "sentinel-client.ini", body);
}

static int suite_setup(void)
{
    char extra[128];
    long long end;
    rdt_server_t dead;

    rdt_log_capture();
    if (rdt_server_start(&g_master, NULL, NULL) != 0)
        return -1;
    snprintf(extra, sizeof extra, "--replicaof 127.0.0.1 %d", g_master.port);
    if (rdt_server_start(&g_replica, NULL, extra) != 0)
        return -1;
    g_m = rdt_connect(&g_master);
    g_r = rdt_connect(&g_replica);
    if (!g_m || !g_r)
        return -1;
    end = rdt_now_ms() + 20000;
    while (rdt_int_cmd(g_m, -1, "WAIT 1 200") != 1)
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "replica not in sync\n");
            return -1;
        }
    if (rdt_sentinel_start(&g_sentinel, &g_master, MASTER_NAME) != 0)
        return -1;
    g_s = rdt_connect(&g_sentinel);
    if (!g_s || wait_failover_ready(&g_master, &g_replica, 30000) != 0)
        return -1;
    /* A port where nothing listens: start a server and stop it. */
    if (rdt_server_start(&dead, NULL, NULL) != 0)
        return -1;
    g_dead_port = dead.port;
    rdt_server_stop(&dead);
    snprintf(g_sentinels, sizeof g_sentinels, "127.0.0.1:%d, 127.0.0.1:%d", g_dead_port, g_sentinel.port);
    return 0;
}

static int suite_teardown(void)
{
    if (g_m)
        redisFree(g_m);
    if (g_r)
        redisFree(g_r);
    if (g_s)
        redisFree(g_s);
    g_m = g_r = g_s = NULL;
    rdt_server_stop(&g_sentinel);
    rdt_server_stop(&g_replica);
    rdt_server_stop(&g_master);
    return 0;
}

/* ------------------------------------------------------------------ */

static void test_discovers_master(void)
{
    rdlock_client_t *c = NULL;
    rdlock_t m;
    const char *ini = write_ini("[lock]\nfail_fast = yes\n");

    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini)); /* fail_fast: the probe reached a server */
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "sent-ok", c, 0), 0);
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_exists(g_m, rdt_key("sent-ok", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(0, rdt_exists(g_m, rdt_key("sent-ok", "")));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

static void test_unknown_master_is_eio(void)
{
    char body[512];
    const char *ini;
    rdlock_client_t *c = NULL;
    rdlock_t m;

    snprintf(body, sizeof body,
             "[redis]\ncommand_retries = 1\n[lock]\nfail_fast = yes\n[sentinel]\nmaster_name = nosuch\n"
             "sentinels = 127.0.0.1:%d\n",
             g_sentinel.port);
    ini = rdt_write_file(&g_master, "unknown.ini", body);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    RDT_ASSERT_RC(EIO, rdlock_client_open(&c, ini));
    CU_ASSERT_PTR_NULL(c);

    snprintf(body, sizeof body,
             "[redis]\ncommand_retries = 1\n[sentinel]\nmaster_name = nosuch\nsentinels = 127.0.0.1:%d\n",
             g_sentinel.port);
    ini = rdt_write_file(&g_master, "unknown2.ini", body);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini)); /* patient: unreachable is not an error */
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&m, "sent-none", c, 0), 0);
    RDT_ASSERT_RC(EIO, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

static void test_config_rules(void)
{
    static const struct {
        const char *text;
        int rc;
        const char *says;
    } cases[] = {
        { "[sentinel]\nmaster_name = m\n", EINVAL, "sentinel:sentinels" },
        { "[sentinel]\nsentinels = 127.0.0.1:26379\n", EINVAL, "sentinel:master_name" },
        { "[redis]\nsocket = /tmp/x.sock\n[sentinel]\nmaster_name = m\nsentinels = 127.0.0.1:26379\n", EINVAL,
          "redis:socket" },
        { "[sentinel]\nmaster_name = m\nsentinels = 127.0.0.1\n", EINVAL, "sentinel:sentinels" },
        { "[sentinel]\nmaster_name = m\nsentinels = 127.0.0.1:0\n", EINVAL, "sentinel:sentinels" },
        { "[sentinel]\nmaster_name = m\nsentinels = 127.0.0.1:65536\n", EINVAL, "sentinel:sentinels" },
        { "[sentinel]\nmaster_name = m\nsentinels = :26379\n", EINVAL, "sentinel:sentinels" },
        { "[sentinel]\nmaster_name = m\nsentinels = a:1 b:2 c:3 d:4 e:5 f:6 g:7 h:8 i:9 j:10 k:11 l:12 m:13 "
          "n:14 o:15 p:16 q:17\n",
          EINVAL, "more than 16" },
        { "[sentinel]\nmaster_name = m\nsentinels = [::1]:26379, 127.0.0.1:26380,h:1\n[lock]\nfail_fast = no\n", 0,
          NULL },
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rdlock_client_t *c = NULL;
        const char *ini = rdt_write_file(&g_master, "rules.ini", cases[i].text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
        rdt_log_clear();
        RDT_ASSERT_RC(cases[i].rc, rdlock_client_open(&c, ini));
        if (cases[i].says && !rdt_log_has(cases[i].says)) {
            fprintf(stderr, "config_rules %zu: no log line with '%s':\n%s", i, cases[i].says, rdt_log_text());
            CU_FAIL("log line missing");
        }
        if (c != NULL)
            RDT_ASSERT_RC(0, rdlock_client_close(c));
    }
}

/* Where a trylock of m lands now: 1 on server `want`, 0 elsewhere, -1 if
 * the trylock failed.  The hold is released again either way (ENOLCK is
 * fine: the client may move to the new master in between). */
static int trylock_lands_on(rdlock_t *m, const char *name, const rdt_server_t *want)
{
    int rc = rdlock_trylock(m), on;
    if (rc != 0) {
        fprintf(stderr, "trylock %s: %s\n", name, rdt_errname(rc));
        return -1;
    }
    on = rdt_int_on(want, 0, "EXISTS %s", rdt_key(name, "")) == 1;
    rc = rdlock_unlock(m);
    if (rc != 0 && rc != ENOLCK)
        fprintf(stderr, "unlock %s: %s\n", name, rdt_errname(rc));
    return on;
}

#define AUTH_NAME "rdtauth"        /* another name for the same master */
#define AUTH_PW "Sx9-sentinel-pw" /* the fixture passes it on a command line */

/* A client of the password sentinel sa with the [sentinel] lines extra. */
static int open_auth_client(rdlock_client_t **c, const rdt_server_t *sa, const char *extra)
{
    char body[1024];
    const char *ini;
    snprintf(body, sizeof body,
             "[redis]\nport = %d\n[lock]\nfail_fast = yes\n[sentinel]\nmaster_name = %s\nsentinels = 127.0.0.1:%d\n%s",
             g_dead_port, AUTH_NAME, sa->port, extra);
    ini = rdt_write_file(&g_master, "auth.ini", body);
    *c = NULL;
    return ini ? rdlock_client_open(c, ini) : -1;
}

/* Lock and unlock a name through c: 0 if it landed on the master. */
static int lock_on_master(rdlock_client_t *c)
{
    rdlock_t m;
    int rc = rdt_mutex_on(&m, "sent-auth", c, 0);
    if (rc == 0 && (rc = rdlock_trylock(&m)) == 0) {
        if (rdt_exists(g_m, rdt_key("sent-auth", "")) != 1)
            rc = -1;
        if (rdlock_unlock(&m) != 0)
            rc = -1;
    }
    rdlock_destroy(&m);
    return rc;
}

static void test_sentinel_auth(void)
{
    rdt_server_t sa;
    rdlock_client_t *c = NULL;
    char extra[PATH_MAX + 64];
    const char *pf;
    long long end;
    redisReply *r;

    /* A second sentinel, with a password, watching the same master under
     * another name (so the suite's sentinel is not concerned). */
    CU_ASSERT_FATAL(rdt_sentinel_start_opts(&sa, &g_master, AUTH_NAME, 1, AUTH_PW) == 0);
    end = rdt_now_ms() + 10000;
    while (rdt_sentinel_master_port(&sa, AUTH_NAME) != g_master.port && rdt_now_ms() < end)
        rdt__nap_ms(20);
    rdt_log_clear();

    /* The right password: found, and the link listens. */
    RDT_ASSERT_RC(0, open_auth_client(&c, &sa, "password = " AUTH_PW "\n"));
    if (c != NULL) {
        RDT_ASSERT_RC(0, lock_on_master(c));
        end = rdt_now_ms() + 5000;
        while (!rdt_log_has("listening for failovers") && rdt_now_ms() < end)
            rdt__nap_ms(10);
        CU_ASSERT(rdt_log_has("listening for failovers"));
        RDT_ASSERT_RC(0, rdlock_client_close(c));
    }
    /* From password_file. */
    pf = rdt_write_file(&g_master, "sentinel.pw", AUTH_PW "\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pf);
    snprintf(extra, sizeof extra, "password_file = %s\n", pf);
    RDT_ASSERT_RC(0, open_auth_client(&c, &sa, extra));
    if (c != NULL) {
        RDT_ASSERT_RC(0, lock_on_master(c));
        RDT_ASSERT_RC(0, rdlock_client_close(c));
    }
    /* An ACL user of the sentinel. */
    r = rdt_cmd_on(&sa, "ACL SETUSER watcher on >watcher-pw +@all");
    CU_ASSERT(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    RDT_ASSERT_RC(0, open_auth_client(&c, &sa, "username = watcher\npassword = watcher-pw\n"));
    if (c != NULL) {
        RDT_ASSERT_RC(0, lock_on_master(c));
        RDT_ASSERT_RC(0, rdlock_client_close(c));
    }
    /* Wrong or missing: refused, EACCES at open, whatever fail_fast says. */
    rdt_log_clear();
    RDT_ASSERT_RC(EACCES, open_auth_client(&c, &sa, "password = wrong-" AUTH_PW "\n"));
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT(rdt_log_has("sentinel 127.0.0.1:"));
    RDT_ASSERT_RC(EACCES, open_auth_client(&c, &sa, "username = watcher\npassword = " AUTH_PW "\n"));
    RDT_ASSERT_RC(EACCES, open_auth_client(&c, &sa, ""));
    CU_ASSERT(!rdt_log_has(AUTH_PW));
    CU_ASSERT(!rdt_log_has("watcher-pw"));
    rdt_server_stop(&sa);
}

/* Wait (bounded) until the captured log says s: 1, or 0. */
static int wait_log(const char *s, int timeout_ms)
{
    long long end = rdt_now_ms() + timeout_ms;
    while (!rdt_log_has(s) && rdt_now_ms() < end)
        rdt__nap_ms(5);
    return rdt_log_has(s);
}

static void test_link_reconnects(void)
{
    rdlock_client_t *c = NULL;
    redisReply *r;

    rdt_log_clear();
    RDT_ASSERT_RC(0, rdlock_client_open(&c, write_ini(NULL)));
    CU_ASSERT_FATAL(wait_log("listening for failovers", 5000));
    rdt_log_clear(); /* the client's only link is up: what follows is the new one */
    r = redisCommand(g_s, "CLIENT KILL TYPE pubsub");
    CU_ASSERT(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1);
    if (r)
        freeReplyObject(r);
    CU_ASSERT(wait_log("listening for failovers", 5000));
    CU_ASSERT(rdt_log_has("link lost"));
    CU_ASSERT(rdt_log_has("cannot listen for failovers")); /* the dead one, tried in between */
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

static void test_failover_followed(void)
{
    rdlock_client_t *c = NULL, *idle = NULL;
    rdt_lockopts_t o;
    rdlock_t held, fresh_m, idle_m;
    rdt_holder_t h;
    char role[32] = "";
    long long end, t0, t_switch, t_idle = -1;
    int on;
    /* Longer than the time between the replica's promotion (it stops
     * replicating) and the sentinel naming it (about 1-2 s): renewals in
     * between go to the old master and are lost with it. */
    const char *ini = write_ini("[lock]\nlease_ms = 4000\n");

    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    rdt_log_clear();
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    RDT_ASSERT_RC(0, rdlock_client_open(&idle, ini));
    o = (rdt_lockopts_t)RDT_LOCKOPTS(c);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&held, "sent-held", &o), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&fresh_m, "sent-new", &o), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_on(&idle_m, "sent-idle", idle, 0), 0);
    /* The idle client has a pooled connection to the master, and then
     * holds nothing. */
    RDT_ASSERT_EQ_LL(1, trylock_lands_on(&idle_m, "sent-idle", &g_master));
    CU_ASSERT_EQUAL_FATAL(rdt_holder_start(&h, &held), 0);
    CU_ASSERT_FATAL(rdt_holder_wait(&h, 10000));
    RDT_ASSERT_RC(0, h.lock_rc);
    CU_ASSERT_EQUAL_FATAL(rdt_sync_replica(&g_master), 0); /* the replica has the hold */
    CU_ASSERT_EQUAL_FATAL(wait_failover_ready(&g_master, &g_replica, 30000), 0);

    /* The failover.  Sentinel names the new master at once, but demotes
     * the old one only seconds later; until then it takes writes. */
    t0 = rdt_now_ms();
    CU_ASSERT_FATAL(rdt_sentinel_failover(&g_sentinel, MASTER_NAME) == 0);
    end = rdt_now_ms() + 20000;
    while (sentinel_says() != g_replica.port && rdt_now_ms() < end)
        rdt__nap_ms(5);
    t_switch = rdt_now_ms();
    CU_ASSERT_EQUAL_FATAL(sentinel_says(), g_replica.port);

    /* The client that holds nothing follows +switch-master at once: its
     * next lock call goes to the new master while the old one still
     * takes writes.  (Looks a few ms apart: the notification reaches the
     * client and this test at about the same time.) */
    end = t_switch + 2000;
    while ((on = trylock_lands_on(&idle_m, "sent-idle", &g_replica)) == 0 && rdt_now_ms() < end)
        rdt__nap_ms(5);
    if (on == 1)
        t_idle = rdt_now_ms();
    role_of(&g_master, role, sizeof role);
    fprintf(stderr, "\n    failover: the sentinel named port %d %lld ms after SENTINEL FAILOVER; the idle client "
                    "locked there %lld ms later, the old master still a '%s'\n",
            g_replica.port, t_switch - t0, t_idle < 0 ? -1 : t_idle - t_switch, role);
    RDT_ASSERT_EQ_LL(1, on);
    CU_ASSERT_STRING_EQUAL(role, "master"); /* followed the notification, not READONLY */
    CU_ASSERT(rdt_log_has("moved from"));

    /* Sentinel's reconfiguration of the old master. */
    end = rdt_now_ms() + 40000;
    while (rdt_now_ms() < end) {
        role_of(&g_master, role, sizeof role);
        if (strcmp(role, "slave") == 0)
            break;
        rdt__nap_ms(100);
    }
    fprintf(stderr, "    old master is '%s' after %lld ms\n", role, rdt_now_ms() - t0);
    CU_ASSERT_STRING_EQUAL_FATAL(role, "slave");

    RDT_ASSERT_RC(0, rdlock_trylock(&fresh_m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_replica, 0, "EXISTS %s", rdt_key("sent-new", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&fresh_m));
    /* Renewed on the new master: without that the hold's copy there
     * would have expired long ago (the failover began 11 s or so before). */
    rdt__nap_ms(1000);
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&g_replica, 0, "EXISTS %s", rdt_key("sent-held", "")));
    RDT_ASSERT_RC(0, rdt_holder_finish(&h));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&g_replica, 0, "EXISTS %s", rdt_key("sent-held", "")));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&fresh_m));
    RDT_ASSERT_RC(0, rdlock_destroy(&idle_m));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
    RDT_ASSERT_RC(0, rdlock_client_close(idle));
    /* More than 5 s of quiet links: their keepalive PINGs were answered. */
    CU_ASSERT(!rdt_log_has("no answer to PING"));
}

/* A failover that Sentinel cannot finish on the old master (a partition
 * keeps it out of Sentinel's reach, not out of ours): the old master stays
 * a master and keeps its clients.  Made by hand here: the current replica
 * promoted, the sentinel told to monitor it instead, the old master left
 * alone.  The watchdog asks the sentinels every round and moves to the
 * new master: a hold from before is renewed there, new acquisitions go
 * there.  Without that check, renewals would keep going to the old master
 * and the hold's copy on the new one would expire. */
static void test_deposed_master_left_at_next_round(void)
{
    rdlock_client_t *c = NULL;
    rdt_lockopts_t o;
    rdlock_t held, fresh_m;
    rdt_holder_t h;
    rdt_server_t *oldm, *newm;
    char role[32];
    redisReply *r;
    const char *ini = write_ini("[lock]\nlease_ms = 1500\n");

    /* Who is who after failover_followed (or without it). */
    role_of(&g_master, role, sizeof role);
    oldm = strcmp(role, "master") == 0 ? &g_master : &g_replica;
    newm = oldm == &g_master ? &g_replica : &g_master;
    CU_ASSERT_EQUAL_FATAL(sentinel_says(), oldm->port);

    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    rdt_log_clear();
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    o = (rdt_lockopts_t)RDT_LOCKOPTS(c);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&held, "dep-held", &o), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&fresh_m, "dep-new", &o), 0);
    CU_ASSERT_EQUAL_FATAL(rdt_holder_start(&h, &held), 0);
    CU_ASSERT_FATAL(rdt_holder_wait(&h, 10000));
    RDT_ASSERT_RC(0, h.lock_rc);
    CU_ASSERT_EQUAL_FATAL(rdt_sync_replica(oldm), 0); /* the new master will have the hold */

    r = rdt_cmd_on(newm, "REPLICAOF NO ONE");
    if (r)
        freeReplyObject(r);
    r = redisCommand(g_s, "SENTINEL REMOVE %s", MASTER_NAME);
    if (r)
        freeReplyObject(r);
    r = redisCommand(g_s, "SENTINEL MONITOR %s 127.0.0.1 %d 1", MASTER_NAME, newm->port);
    CU_ASSERT(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    CU_ASSERT_EQUAL_FATAL(sentinel_says(), newm->port);

    /* Three leases: the hold lives only if renewed on the new master. */
    rdt__nap_ms(4500);
    RDT_ASSERT_EQ_LL(1, rdt_int_on(newm, 0, "EXISTS %s", rdt_key("dep-held", "")));
    CU_ASSERT(rdt_log_has("moved from"));
    RDT_ASSERT_RC(0, rdlock_trylock(&fresh_m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(newm, 0, "EXISTS %s", rdt_key("dep-new", "")));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(oldm, 0, "EXISTS %s", rdt_key("dep-new", "")));
    RDT_ASSERT_RC(0, rdlock_unlock(&fresh_m));
    RDT_ASSERT_RC(0, rdt_holder_finish(&h));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(newm, 0, "EXISTS %s", rdt_key("dep-held", "")));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    RDT_ASSERT_RC(0, rdlock_destroy(&fresh_m));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

/* A failover by hand, as in deposed_master_left_at_next_round, but the
 * hold is taken after the promotion, on the old master only.  The first
 * renewal round after the sentinel names the new master moves there and
 * renews every hold at once: this one is gone, so it is reported lost in
 * that round, not a lease or two later. */
static void test_dropped_hold_reported_in_one_round(void)
{
    rdlock_client_t *c = NULL;
    rdt_lockopts_t o;
    rdlock_t m;
    rdt_lostrec_t rec;
    rdt_server_t *cur, *other;
    redisReply *r;
    long long t0, el;
    int port = sentinel_says();

    /* Whoever the sentinel names is the master; the other one becomes
     * its replica again (deposed_master_left_at_next_round leaves two). */
    CU_ASSERT_FATAL(port == g_master.port || port == g_replica.port);
    cur = port == g_master.port ? &g_master : &g_replica;
    other = cur == &g_master ? &g_replica : &g_master;
    r = rdt_cmd_on(other, "REPLICAOF 127.0.0.1 %d", cur->port);
    if (r)
        freeReplyObject(r);
    CU_ASSERT_EQUAL_FATAL(wait_failover_ready(cur, other, 30000), 0);

    rdt_lost_init(&rec);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, write_ini("[lock]\nlease_ms = 3000\n")));
    o = (rdt_lockopts_t)RDT_LOCKOPTS(c);
    o.lostcb = rdt_lost_cb;
    o.lostarg = &rec;
    CU_ASSERT_EQUAL_FATAL(rdt_mutex_init(&m, "drop-held", &o), 0);

    /* The promotion, then the hold: on the old master only. */
    r = rdt_cmd_on(other, "REPLICAOF NO ONE");
    if (r)
        freeReplyObject(r);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(cur, 0, "EXISTS %s", rdt_key("drop-held", "")));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(other, 0, "EXISTS %s", rdt_key("drop-held", "")));

    r = redisCommand(g_s, "SENTINEL REMOVE %s", MASTER_NAME);
    if (r)
        freeReplyObject(r);
    r = redisCommand(g_s, "SENTINEL MONITOR %s 127.0.0.1 %d 1", MASTER_NAME, other->port);
    CU_ASSERT(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    t0 = rdt_now_ms();
    CU_ASSERT_EQUAL(sentinel_says(), other->port);

    /* Renewals every 1000 ms: the next round moves and reports. */
    CU_ASSERT_EQUAL(rdt_lost_wait(&rec, 1, 5000), 1);
    el = rdt_now_ms() - t0;
    fprintf(stderr, "\n    dropped hold reported lost %lld ms after the sentinel named the new master "
                    "(renewal interval 1000 ms)\n", el);
    CU_ASSERT(el <= 1000 + 500);
    CU_ASSERT(rdt_log_has("moved from"));
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

static const rdt_test_t tests[] = {
    { "discovers_master", test_discovers_master },
    { "unknown_master_is_eio", test_unknown_master_is_eio },
    { "config_rules", test_config_rules },
    { "sentinel_auth", test_sentinel_auth },
    { "link_reconnects", test_link_reconnects },
    { "failover_followed", test_failover_followed }, /* swaps the roles */
    { "deposed_master_left_at_next_round", test_deposed_master_left_at_next_round },
    { "dropped_hold_reported_in_one_round", test_dropped_hold_reported_in_one_round },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "sentinel", tests, suite_setup, suite_teardown, 90);
}
