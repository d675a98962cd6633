/* admin.c - rdlock_reset_name() and the status snapshot; see admin.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "client.h"
#include "handle.h"
#include "lock.h"
#include "log.h"

/* Resolve the client and the key of a name. */
static int name_key(rdlock_client_t **c, const char *name, char **key, size_t *keylen)
{
    size_t n;
    int rc = rdl_name_check(name, &n);
    if (rc == 0 && *c == NULL)
        rc = rdl_client_default(c);
    if (rc != 0)
        return rc;
    *key = rdl_make_key(*c, name, n, keylen);
    return *key == NULL ? ENOMEM : 0;
}

int rdlock_reset_name(rdlock_client_t *c, const char *name)
{
    redisReply *r;
    char *key;
    size_t keylen;
    int rc = name_key(&c, name, &key, &keylen);
    if (rc != 0)
        return rc;
    rc = rdl_lock_script(c, &rdl_script_reset, key, keylen, &r);
    if (rc == 0) {
        rdl_log(RDLOCK_LOG_INFO, "lock %s reset (%lld keys cleared)", name,
                r->type == REDIS_REPLY_INTEGER ? r->integer : 0);
        freeReplyObject(r);
    }
    free(key);
    return rc;
}

/* Parse "<deadline>;<token>;<count>;<pid>;<thread>;<call>;<host>" (holders)
 * or "<deadline>;<lease>;<count>;<pid>;<thread>;<call>;<host>" (queued
 * writers). */
static void party_parse(rdl_party_t *p, const redisReply *owner, const redisReply *val, long long now,
                        int holder)
{
    unsigned long long deadline = 0, second = 0;
    int off = 0;
    memset(p, 0, sizeof *p);
    snprintf(p->owner, sizeof p->owner, "%.*s", (int)owner->len, owner->str);
    if (sscanf(val->str, "%llu;%llu;%u;%ld;%u;%*u;%n", &deadline, &second, &p->count, &p->pid,
               &p->thread, &off) >= 5 &&
        off > 0)
        snprintf(p->host, sizeof p->host, "%s", val->str + off);
    p->remaining_ms = (long long)deadline - now;
    if (holder)
        p->token = second;
}

static int parties(const redisReply *arr, long long now, int holder, rdl_party_t **out, size_t *n)
{
    size_t i;
    *n = 0;
    *out = NULL;
    if (arr->type != REDIS_REPLY_ARRAY || arr->elements % 2 != 0)
        return EIO;
    if (arr->elements == 0)
        return 0;
    *out = calloc(arr->elements / 2, sizeof **out);
    if (*out == NULL)
        return ENOMEM;
    for (i = 0; i + 1 < arr->elements; i += 2) {
        if (arr->element[i]->type != REDIS_REPLY_STRING || arr->element[i + 1]->type != REDIS_REPLY_STRING)
            return EIO;
        party_parse(&(*out)[*n], arr->element[i], arr->element[i + 1], now, holder);
        (*n)++;
    }
    return 0;
}

int rdl_status(rdlock_client_t *c, const char *name, rdl_status_t *st)
{
    redisReply *r, **e;
    char *key;
    size_t keylen;
    long long now;
    int rc = name_key(&c, name, &key, &keylen);

    memset(st, 0, sizeof *st);
    if (rc != 0)
        return rc;
    rc = rdl_lock_script(c, &rdl_script_status, key, keylen, &r);
    free(key);
    if (rc != 0)
        return rc;
    e = r->element;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 7 || e[0]->type != REDIS_REPLY_INTEGER ||
        e[1]->type != REDIS_REPLY_STRING || e[4]->type != REDIS_REPLY_INTEGER ||
        e[5]->type != REDIS_REPLY_INTEGER || e[6]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        rdl_log(RDLOCK_LOG_ERROR, "status: unexpected reply from Redis");
        return EIO;
    }
    now = e[0]->integer;
    st->mode = e[1]->len == 1 ? e[1]->str[0] : 0;
    rc = parties(e[2], now, 1, &st->holders, &st->nholders);
    if (rc == 0)
        rc = parties(e[3], now, 0, &st->writers, &st->nwriters);
    st->readers_waiting = e[4]->integer;
    st->fence = (uint64_t)e[5]->integer;
    if (e[6]->len == 0)
        st->robust = RDL_ROBUST_CLEAN;
    else if (strcmp(e[6]->str, "!") == 0)
        st->robust = RDL_ROBUST_NOTRECOVERABLE;
    else if (e[6]->str[0] == '?')
        st->robust = RDL_ROBUST_INCONSISTENT;
    else if (st->mode == 'x' && st->nholders == 1 && strcmp(st->holders[0].owner, e[6]->str) == 0)
        st->robust = RDL_ROBUST_CLEAN; /* the marker of the live exclusive holder */
    else
        st->robust = RDL_ROBUST_OWNER_DEAD;
    freeReplyObject(r);
    if (rc != 0)
        rdl_status_free(st);
    return rc;
}

void rdl_status_free(rdl_status_t *st)
{
    free(st->holders);
    free(st->writers);
    memset(st, 0, sizeof *st);
}
