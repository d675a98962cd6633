/* topology.c - see topology.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "topology.h"

/* Sentinel promotes only a replica whose INFO it got recently and that
 * answered its pings within 5 pings: ask for a margin below both. */
#define INFO_FRESH_MS 20000
#define PING_FRESH_MS 3000

int rdt_sentinel_master_port(const rdt_server_t *s, const char *name)
{
    redisReply *r = rdt_cmd_on(s, "SENTINEL get-master-addr-by-name %s", name);
    int port = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return port;
}

void rdt_role_of(const rdt_server_t *s, char *buf, size_t n)
{
    redisReply *r = rdt_cmd_on(s, "ROLE");
    buf[0] = '\0';
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING)
        snprintf(buf, n, "%s", r->element[0]->str);
    if (r)
        freeReplyObject(r);
}

/* A reply as one line, for the reasons printed on failure. */
static void dump(const redisReply *r, char *buf, size_t n)
{
    size_t len = strlen(buf), i;
    if (len + 1 >= n)
        return;
    if (r == NULL) {
        snprintf(buf + len, n - len, "(no reply)");
        return;
    }
    switch (r->type) {
    case REDIS_REPLY_ARRAY:
        snprintf(buf + len, n - len, "[");
        for (i = 0; i < r->elements; i++) {
            if (i > 0) {
                len = strlen(buf);
                snprintf(buf + len, n - len, " ");
            }
            dump(r->element[i], buf, n);
        }
        len = strlen(buf);
        snprintf(buf + len, n - len, "]");
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(buf + len, n - len, "%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        snprintf(buf + len, n - len, "(nil)");
        break;
    case REDIS_REPLY_ERROR:
        snprintf(buf + len, n - len, "(error %s)", r->str);
        break;
    default:
        snprintf(buf + len, n - len, "%s", r->str);
        break;
    }
}

/* Field name of a flat key/value array (SENTINEL master, replicas). */
static const char *field(const redisReply *e, const char *name)
{
    size_t i;
    if (e == NULL || e->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (i = 0; i + 1 < e->elements; i += 2)
        if (e->element[i]->type == REDIS_REPLY_STRING && strcmp(e->element[i]->str, name) == 0 &&
            e->element[i + 1]->type == REDIS_REPLY_STRING)
            return e->element[i + 1]->str;
    return NULL;
}

/* Line "name:value" of an INFO text into buf ("" if absent). */
static void info_line(const char *text, const char *name, char *buf, size_t n)
{
    size_t nl = strlen(name);
    const char *p = text;
    buf[0] = '\0';
    while (p != NULL && *p) {
        if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
            size_t k = strcspn(p + nl + 1, "\r\n");
            snprintf(buf, n, "%.*s", (int)k, p + nl + 1);
            return;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
}

/* Set why to "<what>: <reply>" and return 0. */
static int not_ready(char *why, size_t n, const redisReply *r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int not_ready(char *why, size_t n, const redisReply *r, const char *fmt, ...)
{
    va_list ap;
    size_t len;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    len = strlen(why);
    if (len + 3 < n) {
        snprintf(why + len, n - len, ": ");
        dump(r, why, n);
    }
    return 0;
}

static int replica_ready(const rdt_server_t *master, const rdt_server_t *rep, char *why, size_t n)
{
    redisReply *r = rdt_cmd_on(rep, "INFO replication");
    char role[32], port[32], link[32];
    int ok;
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        ok = not_ready(why, n, r, "replica %d: INFO replication", rep->port);
    } else {
        info_line(r->str, "role", role, sizeof role);
        info_line(r->str, "master_port", port, sizeof port);
        info_line(r->str, "master_link_status", link, sizeof link);
        ok = strcmp(role, "slave") == 0 && atoi(port) == master->port && strcmp(link, "up") == 0;
        if (!ok)
            not_ready(why, n, NULL, "replica %d: role %s of %s, master_link_status %s (want slave of %d, up)",
                      rep->port, role, port, link, master->port);
    }
    if (r)
        freeReplyObject(r);
    return ok;
}

/* Sentinel s's entry for replica port in reply r (SENTINEL replicas). */
static const redisReply *replica_entry(const redisReply *r, int port)
{
    size_t i;
    for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const char *p = field(r->element[i], "port");
        if (p && atoi(p) == port)
            return r->element[i];
    }
    return NULL;
}

static int sentinel_ready(const rdt_server_t *master, const rdt_server_t *const *replicas, int nreplicas,
                          const rdt_server_t *s, int nsentinels, const char *name, char *why, size_t n)
{
    redisReply *r;
    const char *flags, *others;
    int i, ok = 1, port = rdt_sentinel_master_port(s, name);

    if (port != master->port)
        return not_ready(why, n, NULL, "sentinel %d names port %d for %s, not %d", s->port, port, name, master->port);
    r = rdt_cmd_on(s, "SENTINEL master %s", name);
    flags = field(r, "flags");
    others = field(r, "num-other-sentinels");
    if (!flags || strcmp(flags, "master") != 0 || !others || atoi(others) != nsentinels - 1)
        ok = not_ready(why, n, r, "sentinel %d: master %s (want flags master, %d other sentinels)", s->port, name,
                       nsentinels - 1);
    if (r)
        freeReplyObject(r);
    if (!ok)
        return 0;
    r = rdt_cmd_on(s, "SENTINEL replicas %s", name);
    for (i = 0; ok && i < nreplicas; i++) {
        const redisReply *e = replica_entry(r, replicas[i]->port);
        const char *link = field(e, "master-link-status"), *info = field(e, "info-refresh"),
                   *ping = field(e, "last-ok-ping-reply");
        flags = field(e, "flags");
        if (!e || !flags || strcmp(flags, "slave") != 0 || !link || strcmp(link, "ok") != 0 || !info ||
            atoll(info) > INFO_FRESH_MS || !ping || atoll(ping) > PING_FRESH_MS)
            ok = not_ready(why, n, r, "sentinel %d: replica %d not usable (want flags slave, link ok, fresh info)",
                           s->port, replicas[i]->port);
    }
    if (r)
        freeReplyObject(r);
    return ok;
}

int rdt_topology_ready(const rdt_server_t *master, const rdt_server_t *const *replicas, int nreplicas,
                       const rdt_server_t *const *sentinels, int nsentinels, const char *name, char *why,
                       size_t n)
{
    char role[32];
    long long acked;
    int i;

    why[0] = '\0';
    rdt_role_of(master, role, sizeof role);
    if (strcmp(role, "master") != 0)
        return not_ready(why, n, NULL, "server %d: role '%s', not master", master->port, role);
    for (i = 0; i < nreplicas; i++)
        if (!replica_ready(master, replicas[i], why, n))
            return 0;
    acked = rdt_int_on(master, 0, "WAIT %d 1000", nreplicas);
    if (acked < nreplicas)
        return not_ready(why, n, NULL, "master %d: WAIT %d answered %lld", master->port, nreplicas, acked);
    for (i = 0; i < nsentinels; i++)
        if (!sentinel_ready(master, replicas, nreplicas, sentinels[i], nsentinels, name, why, n))
            return 0;
    return 1;
}

int rdt_topology_wait(const rdt_server_t *master, const rdt_server_t *const *replicas, int nreplicas,
                      const rdt_server_t *const *sentinels, int nsentinels, const char *name, int timeout_ms)
{
    long long start = rdt_now_ms(), end = start + timeout_ms;
    char why[4096];
    for (;;) {
        if (rdt_topology_ready(master, replicas, nreplicas, sentinels, nsentinels, name, why, sizeof why))
            return 0;
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "topology not ready after %d ms: %s\n", timeout_ms, why);
            return -1;
        }
        rdt__nap_ms(50);
    }
}

int rdt_sentinel_failover(const rdt_server_t *s, const char *name)
{
    redisReply *r = rdt_cmd_on(s, "SENTINEL FAILOVER %s", name);
    int ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    if (!ok) {
        char buf[512] = "";
        dump(r, buf, sizeof buf);
        fprintf(stderr, "SENTINEL FAILOVER %s to sentinel %d: %s\n", name, s->port, buf);
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int rdt_sync_replica(const rdt_server_t *master)
{
    long long end = rdt_now_ms() + 20000;
    redisContext *c = rdt_connect(master);
    int ok = 0;
    while (c && !ok && rdt_now_ms() < end) {
        if (rdt_int_cmd(c, -1, "INCR rdt:sync-probe") < 0)
            break;
        ok = rdt_int_cmd(c, -1, "WAIT 1 1000") >= 1;
    }
    if (c)
        redisFree(c);
    if (!ok)
        fprintf(stderr, "rdt_sync_replica: no replica of port %d caught up\n", master->port);
    return ok ? 0 : -1;
}
