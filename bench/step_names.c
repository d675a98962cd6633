/* step_names.c - step 12: what names used once leave behind on the
 * server (issue 26).  N distinct names, each rdlock_init, rdlock_lock,
 * rdlock_unlock, rdlock_destroy once, on a redis-server of this step's
 * own (so that no other step's keys expire into its figures); then the
 * key count (DBSIZE) and INFO memory's used_memory right after, and the
 * key count polled once a second until it is back where it was before,
 * give or take one key per Cluster slot the names hash to (a counter per
 * slot is what issue 26 allows to stay), or until the wait's limit.  Not
 * being back is a figure, not a hard error. */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES_SLOTS 16384

/* Redis Cluster's key slot of a hash tag: CRC16/XMODEM (polynomial
 * 0x1021, initial 0) mod 16384.  The library puts the name in the tag of
 * each of its keys, so a name's keys all live in the name's slot. */
static unsigned name_slot(const char *s)
{
    unsigned crc = 0;
    int b;
    for (; *s != '\0'; s++) {
        crc ^= (unsigned)(unsigned char)*s << 8;
        for (b = 0; b < 8; b++)
            crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
        crc &= 0xffff;
    }
    return crc % NAMES_SLOTS;
}

static long long dbsize(redisContext *c)
{
    redisReply *r = cmd(c, "DBSIZE");
    long long v = -1;
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

static long long used_memory(redisContext *c)
{
    char buf[64];
    info_field(c, "memory", "used_memory:", buf, sizeof buf);
    return buf[0] == '?' ? -1 : strtoll(buf, NULL, 10);
}

/* PTTL of key: ms, -1 without expiry, -2 if gone (or on error). */
static long long get_pttl(redisContext *c, const char *key)
{
    redisReply *r = cmd(c, "PTTL %s", key);
    long long v = -2;
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* One name used once, as a program that locks a name per job does. */
static int use_name(const rdlock_attr_t *attr, const char *name)
{
    rdlock_t m;
    int rc;
    if ((rc = rdlock_init(&m, name, attr)) != 0) {
        fail("rdlock_init(%s): %s", name, rdlock_strerror(rc));
        return -1;
    }
    if ((rc = rdlock_lock(&m)) != 0 || (rc = rdlock_unlock(&m)) != 0)
        fail("%s: rdlock_lock/unlock: %s", name, rdlock_strerror(rc));
    if (rdlock_destroy(&m) != 0 && rc == 0)
        fail("rdlock_destroy(%s)", name);
    return rc == 0 ? 0 : -1;
}

/* The n names, with the slots they hash to into res->slots, timed. */
static int use_names(const rdlock_attr_t *attr, long n, names_res_t *res)
{
    static unsigned char seen[NAMES_SLOTS];
    char name[64];
    int64_t t0 = now_ns();
    long i;

    memset(seen, 0, sizeof seen);
    res->slots = 0;
    for (i = 0; i < n; i++) {
        unsigned s;
        snprintf(name, sizeof name, "bench-names-%ld", i);
        s = name_slot(name);
        res->slots += !seen[s];
        seen[s] = 1;
        if (use_name(attr, name) != 0)
            return -1;
    }
    res->pairs_per_s = n / ((double)(now_ns() - t0) / 1e9);
    return 0;
}

/* Poll DBSIZE once a second from now until it is back within the
 * allowance or res->wait_limit_s have passed; then the figures after
 * the wait, and one key left (if any) with its PTTL. */
static void wait_back(redisContext *c, names_res_t *res)
{
    double t0 = now_s(), t;
    long long k;
    redisReply *r;

    res->back_s = NAN;
    for (;;) {
        t = now_s() - t0;
        if ((k = dbsize(c)) >= 0 && k <= res->keys_before + res->slots) {
            res->back_s = t;
            break;
        }
        if (t >= res->wait_limit_s || k < 0)
            break;
        sleep_us(1000000);
    }
    res->keys_waited = dbsize(c);
    res->mem_waited = used_memory(c);
    res->sample[0] = '\0';
    res->sample_pttl = -2;
    if ((r = cmd(c, "RANDOMKEY")) != NULL && r->type == REDIS_REPLY_STRING) {
        snprintf(res->sample, sizeof res->sample, "%s", r->str);
        res->sample_pttl = get_pttl(c, res->sample);
    }
    if (r != NULL)
        freeReplyObject(r);
}

/* The step on srv (started and stopped by the caller); 0 or -1. */
static int names_on(const rdt_server_t *srv, redisContext *c, names_res_t *res)
{
    const char *ini = rdt_write_ini(srv, 0, "[lock]\nlease_ms = 30000\n");
    rdlock_client_t *client;
    rdlock_attr_t attr;
    int rc;

    if (ini == NULL)
        return -1;
    if ((rc = rdlock_client_open(&client, ini)) != 0) {
        fail("rdlock_client_open: %s", rdlock_strerror(rc));
        return -1;
    }
    rdlock_attr_init(&attr);
    rdlock_attr_setclient(&attr, client);
    /* warm-up (connections, the scripts loaded), then a clean slate: the
     * script cache stays, the keys go */
    rc = use_name(&attr, "bench-names-warm-up") == 0 && rdt_flushall(srv) == 0 ? 0 : -1;
    if (rc == 0) {
        res->keys_before = dbsize(c);
        res->mem_before = used_memory(c);
        rc = use_names(&attr, res->n, res);
        res->keys_after = dbsize(c);
        res->mem_after = used_memory(c);
    }
    rdlock_attr_destroy(&attr);
    if (rdlock_client_close(client) != 0)
        fail("rdlock_client_close");
    if (rc == 0)
        wait_back(c, res);
    return rc;
}

int bench_names(names_res_t *res)
{
    rdt_server_t srv;
    redisContext *c;
    int rc = -1;

    memset(res, 0, sizeof *res);
    res->n = quick ? 20000 : 100000;
    res->wait_limit_s = quick ? 5 : 60;
    res->back_s = NAN;
    if (rdt_server_start(&srv, NULL, NULL) != 0) {
        fail("names: cannot start a redis-server");
        return -1;
    }
    if ((c = rdt_connect(&srv)) != NULL) {
        rc = names_on(&srv, c, res);
        redisFree(c);
    }
    rdt_server_stop(&srv);
    res->ok = rc == 0;
    return rc;
}

void report_names(const names_res_t *r)
{
    double left = r->n > 0 ? (double)(r->mem_waited - r->mem_before) / r->n : NAN;
    double keys_left = r->n > 0 ? (double)(r->keys_waited - r->keys_before) / r->n : NAN;
    int back = !isnan(r->back_s);

    out("\n12. distinct names used once (issue 26): %ld names, each rdlock_init+lock+unlock+destroy once\n"
        "    (%.0f names/s), on a redis-server of its own\n",
        r->n, r->pairs_per_s);
    out("   keys (DBSIZE)       before %lld, right after %lld, after the wait %lld (%.2f per name left)\n",
        r->keys_before, r->keys_after, r->keys_waited, keys_left);
    out("   used_memory         before %lld, right after %lld, after the wait %lld bytes (%.0f per name left)\n",
        r->mem_before, r->mem_after, r->mem_waited, left);
    out("   allowed to stay: one key per Cluster slot the names hash to (%d of %d slots)\n", r->slots, NAMES_SLOTS);
    if (back)
        out("   back within the allowance %.0f s after the last unlock\n", r->back_s);
    else
        out("   NOT back within %.0f s (polled once a second)%s\n", r->wait_limit_s,
            quick ? "; --quick waits only 5 s" : "");
    if (r->sample[0] != '\0')
        out("   a key left: %s (PTTL %lld ms%s)\n", r->sample, r->sample_pttl,
            r->sample_pttl == -1 ? ": no expiry" : "");
    json_num("names_n", r->n);
    json_num("names_per_s", rnd(r->pairs_per_s));
    json_num("names_keys_before", (double)r->keys_before);
    json_num("names_keys_after", (double)r->keys_after);
    json_num("names_keys_after_wait", (double)r->keys_waited);
    json_num("names_keys_per_name_left", keys_left);
    json_num("names_memory_before_b", (double)r->mem_before);
    json_num("names_memory_after_b", (double)r->mem_after);
    json_num("names_memory_after_wait_b", (double)r->mem_waited);
    json_num("names_bytes_per_name_left", left);
    json_num("names_slots", r->slots);
    json_num("names_wait_limit_s", r->wait_limit_s);
    json_bool("names_back", back);
    json_num("names_back_s", r->back_s);
    json_str("names_key_left", r->sample);
    json_num("names_key_left_pttl_ms", (double)r->sample_pttl);
    json_bool("names_ok", r->ok);
}
