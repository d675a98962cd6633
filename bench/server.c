/* server.c - plain hiredis next to the library: commands whose failure is
 * a hard error, INFO fields and commandstats (the server time and round
 * trips behind a figure), and the floors every ratio is taken to (PING and
 * a do-nothing EVALSHA round trips). */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

redisReply *cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        fail("redis command failed: %s", c->errstr);
    return r;
}

long long get_int(redisContext *c, const char *key)
{
    redisReply *r = cmd(c, "GET %s", key);
    long long v = -1;
    if (r != NULL && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    else if (r != NULL && r->type == REDIS_REPLY_NIL)
        v = 0;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

long long server_ms(redisContext *c)
{
    redisReply *r = cmd(c, "TIME");
    long long v = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        v = strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

int cmd_stats(redisContext *c, const char *name, long long *calls, long long *usec)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    char tag[64];
    const char *p;
    *calls = *usec = 0;
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    snprintf(tag, sizeof tag, "cmdstat_%s:", name);
    p = strstr(r->str, tag);
    if (p != NULL) {
        const char *q = strstr(p, "calls=");
        const char *u = strstr(p, "usec=");
        if (q)
            *calls = strtoll(q + 6, NULL, 10);
        if (u)
            *usec = strtoll(u + 5, NULL, 10);
    }
    freeReplyObject(r);
    return 0;
}

int evalsha_stats(redisContext *c, long long *calls, long long *usec)
{
    return cmd_stats(c, "evalsha", calls, usec);
}

void info_field(redisContext *c, const char *section, const char *field, char *buf, size_t n)
{
    redisReply *r = redisCommand(c, "INFO %s", section);
    const char *p;
    snprintf(buf, n, "?");
    if (r == NULL)
        return;
    if (r->type == REDIS_REPLY_STRING && (p = strstr(r->str, field)) != NULL) {
        size_t i = 0;
        p += strlen(field);
        if (*p == ':')
            p++;
        while (p[i] != '\0' && p[i] != '\r' && p[i] != '\n' && i < n - 1) {
            buf[i] = p[i];
            i++;
        }
        buf[i] = '\0';
    }
    freeReplyObject(r);
}

static long long info_num(const char *text, const char *field)
{
    const char *p = strstr(text, field);
    return p == NULL ? -1 : strtoll(p + strlen(field), NULL, 10);
}

/* total_commands_processed would count the scripts' redis.call()s too. */
void srv_counts(redisContext *c, srv_counts_t *k)
{
    redisReply *r = cmd(c, "INFO");
    long long u;
    k->conns = k->clients = k->evalsha = -1;
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        k->conns = info_num(r->str, "total_connections_received:");
        k->clients = info_num(r->str, "connected_clients:");
    }
    if (r != NULL)
        freeReplyObject(r);
    evalsha_stats(c, &k->evalsha, &u);
}

void load_noop_script(redisContext *c, char *sha, size_t n)
{
    redisReply *rr = cmd(c, "SCRIPT LOAD %s", "return 1");
    if (rr != NULL && rr->type == REDIS_REPLY_STRING)
        snprintf(sha, n, "%s", rr->str);
    if (rr != NULL)
        freeReplyObject(rr);
}

double ping_rate(redisContext *c, int n)
{
    int64_t t0 = now_ns();
    int i;
    for (i = 0; i < n; i++) {
        redisReply *r = redisCommand(c, "PING");
        if (r == NULL || r->type != REDIS_REPLY_STATUS) {
            fail("PING failed: %s", r ? "bad reply" : c->errstr);
            if (r)
                freeReplyObject(r);
            return NAN;
        }
        freeReplyObject(r);
    }
    return n / ((double)(now_ns() - t0) / 1e9);
}

/* Round trips/s of EVALSHA of a script that does nothing ("return 1"):
 * the floor of any one-script-per-call design (a diagnostic). */
double evalsha_rate(redisContext *c, const char *sha, int n)
{
    int64_t t0 = now_ns();
    int i;
    for (i = 0; i < n; i++) {
        redisReply *r = redisCommand(c, "EVALSHA %s 0", sha);
        if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
            fail("EVALSHA failed: %s", r ? (r->str ? r->str : "bad reply") : c->errstr);
            if (r)
                freeReplyObject(r);
            return NAN;
        }
        freeReplyObject(r);
    }
    return n / ((double)(now_ns() - t0) / 1e9);
}

/* A script runner's usec includes the redis.call()s it makes, which
 * Redis also counts under their own names (checked with Redis 7.0: an
 * EVAL of 20,000 GETs shows its usec above the GETs' sum). */
static int is_runner(const char *name, size_t n)
{
    static const char *const runners[] = { "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro" };
    size_t i;
    for (i = 0; i < sizeof runners / sizeof runners[0]; i++)
        if (strlen(runners[i]) == n && strncmp(name, runners[i], n) == 0)
            return 1;
    return 0;
}

int cmd_totals(redisContext *c, const char *top, cmd_totals_t *t)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    const char *p;

    memset(t, 0, sizeof *t);
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        fail("INFO commandstats failed: %s", r ? "bad reply" : c->errstr);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (p = strstr(r->str, "cmdstat_"); p != NULL; p = strstr(p, "\ncmdstat_")) {
        const char *name = p + (*p == '\n' ? 9 : 8), *colon = strchr(name, ':');
        const char *q, *u;
        long long calls, usec;
        size_t n;
        p = name;
        if (colon == NULL || (q = strstr(colon, "calls=")) == NULL || (u = strstr(colon, "usec=")) == NULL)
            break;
        n = (size_t)(colon - name);
        if (n == 4 && strncmp(name, "info", 4) == 0)
            continue; /* the bench's own INFO calls */
        calls = strtoll(q + 6, NULL, 10);
        usec = strtoll(u + 5, NULL, 10);
        t->all_calls += calls;
        t->all_usec += usec;
        if (is_runner(name, n) || (top != NULL && strlen(top) == n && strncmp(name, top, n) == 0)) {
            t->top_calls += calls;
            t->top_usec += usec;
        }
    }
    freeReplyObject(r);
    return 0;
}
