/* reply.c - decoding Redis replies and messages; see reply.h. */
#include "rdl_build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "proto/reply.h"

static bool is_error(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->str != NULL;
}

static bool starts(const redisReply *r, const char *prefix)
{
    size_t n = strlen(prefix);
    return r->len >= n && memcmp(r->str, prefix, n) == 0;
}

int rdl_reply_error(const redisReply *r)
{
    if (is_error(r) && (starts(r, "NOAUTH") || starts(r, "WRONGPASS") || starts(r, "NOPERM") ||
                        strstr(r->str, "invalid password") != NULL ||
                        strstr(r->str, "invalid username-password") != NULL))
        return EACCES;
    return EIO;
}

bool rdl_reply_transient(const redisReply *r)
{
    return is_error(r) && (starts(r, "LOADING") || starts(r, "BUSY") || starts(r, "TRYAGAIN") ||
                           starts(r, "MASTERDOWN") || rdl_reply_noreplicas(r));
}

bool rdl_reply_noreplicas(const redisReply *r)
{
    /* Redis 7 passes a script's error code through; 6 wraps it in "ERR
     * Error running script ... -NOREPLICAS Not enough good replicas ...". */
    return is_error(r) && (starts(r, "NOREPLICAS") || starts(r, "NOTENOUGHREPLICAS") ||
                           (starts(r, "ERR") && (strstr(r->str, "-NOREPLICAS ") != NULL ||
                                                 strstr(r->str, "-NOTENOUGHREPLICAS ") != NULL)));
}

bool rdl_reply_noscript(const redisReply *r)
{
    return is_error(r) && starts(r, "NOSCRIPT");
}

bool rdl_reply_readonly(const redisReply *r)
{
    /* Redis 7 passes a script's error code through; 6 wraps it in "ERR
     * Error running script ... -READONLY You can't write ...". */
    return is_error(r) && (starts(r, "READONLY") ||
                           (starts(r, "ERR") && strstr(r->str, "READONLY You can't write") != NULL));
}

/* Element i of array r is an integer: its value in *v. */
static bool int_at(const redisReply *r, size_t i, long long *v)
{
    if (i >= r->elements || r->element[i] == NULL || r->element[i]->type != REDIS_REPLY_INTEGER)
        return false;
    *v = r->element[i]->integer;
    return true;
}

/* A decimal number of 1 to 18 digits at s[*at..], up to len: its value in
 * *v, *at past it.  (sscanf costs a lock+unlock pair more instructions
 * than the rest of the reply's handling.) */
static bool dec_at(const char *s, size_t len, size_t *at, long long *v)
{
    size_t i = *at;
    long long x = 0;
    while (i < len && i - *at < 18 && s[i] >= '0' && s[i] <= '9')
        x = x * 10 + (s[i++] - '0');
    if (i == *at || (i < len && s[i] >= '0' && s[i] <= '9'))
        return false;
    *at = i;
    *v = x;
    return true;
}

int rdl_reply_acquire(const redisReply *r, rdl_acquired_t *out)
{
    long long status, v, extra;

    memset(out, 0, sizeof *out);
    if (r->type == REDIS_REPLY_STRING) {
        /* A plain grant (acquire.lua's fast path: not dead, no marker
         * replaced) comes as "<token>;<now>", cheaper for the server than
         * the array {1, token, 0, '', now}. */
        long long tok, now;
        size_t at = 0;
        if (!dec_at(r->str, r->len, &at, &tok) || at >= r->len || r->str[at++] != ';' ||
            !dec_at(r->str, r->len, &at, &now) || at != r->len || tok == 0)
            goto bad;
        out->token = (uint64_t)tok;
        out->now = now;
        return 0;
    }
    if (r->type != REDIS_REPLY_ARRAY || !int_at(r, 0, &status))
        goto bad;
    if (status == -1 && r->elements == 1)
        return ENOTRECOVERABLE;
    if (!int_at(r, 1, &v))
        goto bad;
    if (status == -2) {
        /* Void: the attempt came after its deadline (or a newer call of
         * ours is there); v is the server's clock. */
        out->now = v > 0 ? v : 0;
        return ESTALE;
    }
    if (int_at(r, 4, &extra) && extra > 0)
        out->now = extra;
    if (status == 1) {
        if (v <= 0)
            goto bad; /* tokens start at 1 */
        out->token = (uint64_t)v;
        /* A marker too long to be an owner id is not ours to restore. */
        if (r->elements > 3 && r->element[3]->type == REDIS_REPLY_STRING &&
            r->element[3]->len < sizeof out->prev)
            memcpy(out->prev, r->element[3]->str, r->element[3]->len + 1);
        return int_at(r, 2, &extra) && extra == 1 ? EOWNERDEAD : 0;
    }
    if (status != 0)
        goto bad;
    out->hint = v > 0 ? v : 0;
    if (int_at(r, 2, &extra) && extra > 0)
        out->fence = (uint64_t)extra;
    out->first = int_at(r, 3, &extra) && extra == 1;
    return EBUSY;
bad:
    memset(out, 0, sizeof *out);
    rdl_log(RDLOCK_LOG_ERROR, "acquire: unexpected reply from Redis");
    return EIO;
}

int rdl_reply_release(const redisReply *r, rdl_released_t *out)
{
    long long tok;
    const redisReply *who;

    memset(out, 0, sizeof *out);
    if (r->type == REDIS_REPLY_INTEGER) {
        /* Nothing to announce (kind 0): release.lua answers with the bare
         * status, cheaper for the server than the array {status, 0}. */
        out->status = r->integer;
        return 0;
    }
    if (r->type != REDIS_REPLY_ARRAY || !int_at(r, 0, &out->status) || !int_at(r, 1, &out->kind)) {
        rdl_log(RDLOCK_LOG_ERROR, "release: unexpected reply from Redis");
        memset(out, 0, sizeof *out);
        return EIO;
    }
    if (out->kind != 1)
        return 0;
    /* A hand-over: to whom, with which token.  Malformed, it is only not
     * announced locally; the pub/sub message or a look tells the waiter. */
    who = r->elements >= 4 ? r->element[2] : NULL;
    if (who == NULL || who->type != REDIS_REPLY_STRING || who->len == 0 || who->len >= sizeof out->who ||
        !int_at(r, 3, &tok) || tok <= 0) {
        out->kind = 0;
        return 0;
    }
    memcpy(out->who, who->str, who->len);
    out->wholen = who->len;
    out->token = (uint64_t)tok;
    return 0;
}

int rdl_reply_renew(const redisReply *r, size_t n, int *result)
{
    size_t i;
    long long idx;

    if (r->type != REDIS_REPLY_ARRAY) {
        rdl_log(RDLOCK_LOG_ERROR, "watchdog renewal failed: %s",
                is_error(r) ? r->str : "unexpected reply");
        return EIO;
    }
    for (i = 0; i < r->elements; i++)
        if (!int_at(r, i, &idx) || idx < 1 || (unsigned long long)idx > n) {
            rdl_log(RDLOCK_LOG_ERROR, "watchdog renewal: unexpected reply from Redis");
            return EIO;
        }
    for (i = 0; i < n; i++)
        result[i] = 0;
    for (i = 0; i < r->elements; i++)
        result[r->element[i]->integer - 1] = 1;
    return 0;
}

/* "<digits>" (the whole of s[0..n)) as a token: true and *v, or false. */
static bool parse_token(const char *s, size_t n, uint64_t *v)
{
    uint64_t t = 0;
    size_t i;
    if (n == 0 || n > 20)
        return false;
    for (i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9 || t > (UINT64_MAX - d) / 10)
            return false;
        t = t * 10 + d;
    }
    *v = t;
    return t > 0;
}

static int event_of(const char *k, size_t kl, const redisReply *m, rdl_event_t *ev);

int rdl_reply_event(const redisReply *r, const char *suffix, rdl_event_t *ev)
{
    const redisReply *kind, *chan, *m;
    size_t sl = strlen(suffix);

    memset(ev, 0, sizeof *ev);
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3)
        return RDL_EV_NONE;
    kind = r->element[0];
    chan = r->element[1];
    m = r->element[2];
    if (kind->type != REDIS_REPLY_STRING || chan->type != REDIS_REPLY_STRING || chan->len <= sl ||
        memcmp(chan->str + chan->len - sl, suffix, sl) != 0)
        return RDL_EV_NONE;
    ev->key = chan->str;
    ev->keylen = chan->len - sl;
    /* Shard channels (Redis Cluster: SSUBSCRIBE) say the same with an 's'
     * in front: "smessage", "ssubscribe", "sunsubscribe". */
    if (kind->len > 1 && kind->str[0] == 's' && kind->str[1] != 'u') {
        const char *k = kind->str + 1;
        size_t kl = kind->len - 1;
        if (!(kl == 7 && memcmp(k, "message", 7) == 0) && !(kl == 9 && memcmp(k, "subscribe", 9) == 0))
            return RDL_EV_NONE;
        return event_of(k, kl, m, ev);
    }
    if (kind->len == 12 && memcmp(kind->str, "sunsubscribe", 12) == 0)
        return RDL_EV_UNSUBSCRIBED;
    return event_of(kind->str, kind->len, m, ev);
}

/* The event of a message of kind k[0, kl) ("message", "subscribe",
 * "unsubscribe") with payload m, ev->key set. */
static int event_of(const char *k, size_t kl, const redisReply *m, rdl_event_t *ev)
{
    if (kl == 7 && memcmp(k, "message", 7) == 0) {
        const char *own, *sp;
        if (m->type != REDIS_REPLY_STRING)
            return RDL_EV_NONE;
        if (m->len == 1 && m->str[0] == 'u')
            return RDL_EV_WAKE; /* waiting readers may enter */
        /* "g <owner> <token>": handed to a queued writer. */
        if (m->len < 5 || m->str[0] != 'g' || m->str[1] != ' ')
            return RDL_EV_NONE;
        own = m->str + 2;
        sp = memchr(own, ' ', m->len - 2);
        if (sp == NULL || sp == own || !parse_token(sp + 1, (size_t)(m->str + m->len - sp - 1), &ev->token))
            return RDL_EV_NONE;
        ev->owner = own;
        ev->ownerlen = (size_t)(sp - own);
        return RDL_EV_GRANT;
    }
    if (kl == 9 && memcmp(k, "subscribe", 9) == 0)
        return RDL_EV_SUBSCRIBED;
    if (kl == 11 && memcmp(k, "unsubscribe", 11) == 0)
        return RDL_EV_UNSUBSCRIBED;
    return RDL_EV_NONE;
}

/* The n fields of msg[0, len) separated by single blanks, from the right:
 * f[n - 1] is the last.  What is left of them, without the blank before
 * the first, ends at *rest.  false if there are fewer or an empty one. */
static bool fields_right(const char *msg, size_t len, int n, const char **f, size_t *fl, const char **rest)
{
    const char *p = msg + len;
    int k;
    for (k = n - 1; k >= 0; k--) {
        const char *e = p;
        while (p > msg && p[-1] != ' ')
            p--;
        if (p == e || p == msg)
            return false;
        f[k] = p;
        fl[k] = (size_t)(e - p);
        p--; /* the blank */
    }
    *rest = p;
    return true;
}

/* Exactly n non-empty fields in msg[0, len), separated by single blanks,
 * into f and fl: true, else false. */
static bool fields_left(const char *msg, size_t len, int n, const char **f, size_t *fl)
{
    const char *p = msg, *end = msg + len;
    int k;
    for (k = 0; k < n; k++) {
        const char *b = p;
        while (p < end && *p != ' ')
            p++;
        if (p == b)
            return false;
        f[k] = b;
        fl[k] = (size_t)(p - b);
        if (k < n - 1) {
            if (p == end)
                return false;
            p++; /* the blank */
        }
    }
    return p == end;
}

/* "<ip>:<port>" of two fields into addr, if it fits.  The port is digits
 * only: a field with a blank or a colon cannot pass for one. */
static bool addr_of(const char *ip, size_t il, const char *port, size_t pl, char *addr, size_t n)
{
    size_t i;
    if (il + pl + 2 > n || pl == 0 || pl > 5)
        return false;
    for (i = 0; i < pl; i++)
        if (port[i] < '0' || port[i] > '9')
            return false;
    snprintf(addr, n, "%.*s:%.*s", (int)il, ip, (int)pl, port);
    return true;
}

int rdl_reply_sentinel(const redisReply *r, const char *name, char *addr, size_t n)
{
    const redisReply *kind, *chan, *m;
    const char *f[4], *rest;
    size_t fl[4], nl = strlen(name);

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_STRING)
        return RDL_SEV_NONE;
    kind = r->element[0];
    if (kind->len == 4 && memcmp(kind->str, "pong", 4) == 0)
        return RDL_SEV_PONG;
    if (r->elements != 3 || kind->len != 7 || memcmp(kind->str, "message", 7) != 0)
        return RDL_SEV_NONE;
    chan = r->element[1];
    m = r->element[2];
    if (chan->type != REDIS_REPLY_STRING || m->type != REDIS_REPLY_STRING)
        return RDL_SEV_NONE;
    if (chan->len == 14 && memcmp(chan->str, "+switch-master", 14) == 0) {
        /* From the right, so that a name with blanks still matches. */
        if (!fields_right(m->str, m->len, 4, f, fl, &rest) || (size_t)(rest - m->str) != nl ||
            memcmp(m->str, name, nl) != 0 || !addr_of(f[2], fl[2], f[3], fl[3], addr, n))
            return RDL_SEV_NONE;
        return RDL_SEV_SWITCH;
    }
    if (chan->len == 15 && memcmp(chan->str, "+promoted-slave", 15) == 0) {
        const char *at;
        /* The master's name ends two fields from the right, after " @ ";
         * before that, exactly the replica's four fields. */
        if (!fields_right(m->str, m->len, 2, f, fl, &rest) || (size_t)(rest - m->str) < nl + 3 ||
            memcmp(rest - nl, name, nl) != 0 || memcmp(rest - nl - 3, " @ ", 3) != 0)
            return RDL_SEV_NONE;
        at = rest - nl - 3;
        if (!fields_left(m->str, (size_t)(at - m->str), 4, f, fl) || fl[0] != 5 || memcmp(f[0], "slave", 5) != 0 ||
            !addr_of(f[2], fl[2], f[3], fl[3], addr, n))
            return RDL_SEV_NONE;
        return RDL_SEV_PROMOTED;
    }
    return RDL_SEV_NONE;
}

/* A holder's "<deadline>;<token>;<count>;<pid>;<thread>;<call>;<host>" or a
 * queued writer's "<deadline>;<lease>;<claim>;<count>;<pid>;<thread>;<call>;<host>"
 * (see acquire.lua) into p; fields that do not parse stay 0 / empty. */
static void party_parse(rdlock_party_t *p, const redisReply *owner, const redisReply *val, long long now,
                        bool holder)
{
    long long deadline = 0;
    unsigned long long second = 0;
    int off = 0;

    memset(p, 0, sizeof *p);
    snprintf(p->owner, sizeof p->owner, "%.*s", (int)owner->len, owner->str);
    int got = holder ? sscanf(val->str, "%lld;%llu;%u;%ld;%u;%*u;%n", &deadline, &second, &p->count, &p->pid,
                              &p->thread, &off)
                     : sscanf(val->str, "%lld;%llu;%*u;%u;%ld;%u;%*u;%n", &deadline, &second, &p->count,
                              &p->pid, &p->thread, &off);
    if (got >= 5 && off > 0)
        snprintf(p->host, sizeof p->host, "%s", val->str + off);
    if (__builtin_sub_overflow(deadline, now, &p->remaining_ms))
        p->remaining_ms = 0;
    if (holder)
        p->token = second;
}

/* A flat array of owner, value pairs into *out (calloc'd). */
static int parties(const redisReply *arr, long long now, bool holder, rdlock_party_t **out, size_t *n)
{
    size_t i;

    *n = 0;
    *out = NULL;
    if (arr->type != REDIS_REPLY_ARRAY || arr->elements % 2 != 0)
        return EIO;
    for (i = 0; i < arr->elements; i++)
        if (arr->element[i]->type != REDIS_REPLY_STRING)
            return EIO;
    if (arr->elements == 0)
        return 0;
    *out = calloc(arr->elements / 2, sizeof **out);
    if (*out == NULL)
        return ENOMEM;
    for (i = 0; i + 1 < arr->elements; i += 2)
        party_parse(&(*out)[(*n)++], arr->element[i], arr->element[i + 1], now, holder);
    return 0;
}

int rdl_reply_status(const redisReply *r, rdlock_status_t *st)
{
    redisReply **e;
    long long now;
    int rc;

    memset(st, 0, sizeof *st);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 7 || r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_STRING || r->element[4]->type != REDIS_REPLY_INTEGER ||
        r->element[5]->type != REDIS_REPLY_INTEGER || r->element[6]->type != REDIS_REPLY_STRING) {
        rdl_log(RDLOCK_LOG_ERROR, "status: unexpected reply from Redis");
        return EIO;
    }
    e = r->element;
    now = e[0]->integer;
    st->mode = e[1]->len == 1 ? e[1]->str[0] : 0;
    rc = parties(e[2], now, true, &st->holders, &st->nholders);
    if (rc == 0)
        rc = parties(e[3], now, false, &st->writers, &st->nwriters);
    if (rc != 0) {
        rdlock_status_free(st);
        if (rc == EIO)
            rdl_log(RDLOCK_LOG_ERROR, "status: unexpected reply from Redis");
        return rc;
    }
    st->readers_waiting = e[4]->integer;
    st->fence = e[5]->integer > 0 ? (uint64_t)e[5]->integer : 0;
    if (e[6]->len == 0)
        st->robust = RDLOCK_STATE_CONSISTENT;
    else if (e[6]->len == 1 && e[6]->str[0] == '!')
        st->robust = RDLOCK_STATE_NOTRECOVERABLE;
    else if (e[6]->str[0] == '?')
        st->robust = RDLOCK_STATE_INCONSISTENT;
    else if (st->mode == 'x' && st->nholders == 1 && strlen(st->holders[0].owner) == e[6]->len &&
             memcmp(st->holders[0].owner, e[6]->str, e[6]->len) == 0)
        st->robust = RDLOCK_STATE_CONSISTENT; /* the marker of the live exclusive holder */
    else
        st->robust = RDLOCK_STATE_OWNER_DEAD;
    return 0;
}

/* An integer element of a kinds.lua sub-array, >= 0: 0 and *v, or EIO. */
static int kind_int(const redisReply *a, size_t i, long long *v)
{
    if (i >= a->elements || a->element[i]->type != REDIS_REPLY_INTEGER || a->element[i]->integer < 0)
        return EIO;
    *v = a->element[i]->integer;
    return 0;
}

void rdl_reply_once_mark(const char *mark, size_t len, rdlock_party_t *p)
{
    const char *end = mark + len, *semi, *colon;
    size_t ol;

    memset(p, 0, sizeof *p);
    semi = memchr(mark, ';', len);
    ol = semi != NULL ? (size_t)(semi - mark) : len;
    snprintf(p->owner, sizeof p->owner, "%.*s", (int)(ol < sizeof p->owner ? ol : sizeof p->owner - 1), mark);
    colon = strrchr(p->owner, ':');
    if (colon != NULL)
        sscanf(colon + 1, "%u", &p->thread);
    if (semi == NULL)
        return;
    mark = semi + 1;
    semi = memchr(mark, ';', (size_t)(end - mark));
    if (semi == NULL)
        return;
    {
        char pid[24];
        size_t pl = (size_t)(semi - mark);
        if (pl > 0 && pl < sizeof pid) {
            memcpy(pid, mark, pl);
            pid[pl] = '\0';
            sscanf(pid, "%ld", &p->pid);
        }
    }
    mark = semi + 1;
    snprintf(p->host, sizeof p->host, "%.*s", (int)((size_t)(end - mark) < sizeof p->host ? (size_t)(end - mark)
                                                                                        : sizeof p->host - 1),
             mark);
}

int rdl_reply_kinds(const redisReply *r, rdlock_kinds_t *k)
{
    size_t size = k->size;
    const redisReply *a;
    long long v[5];
    size_t i;

    memset(k, 0, sizeof *k);
    k->size = size;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 5 || r->element[0]->type != REDIS_REPLY_INTEGER)
        goto bad;
    for (i = 1; i < 5; i++)
        if (r->element[i]->type != REDIS_REPLY_ARRAY)
            goto bad;
    a = r->element[1];
    if (a->elements > 0) {
        if (a->elements != 5 || a->element[0]->type != REDIS_REPLY_STRING || a->element[0]->len != 1 ||
            (a->element[0]->str[0] != 'p' && a->element[0]->str[0] != 'l'))
            goto bad;
        for (i = 1; i < 5; i++)
            if (kind_int(a, i, &v[i]) != 0)
                goto bad;
        k->sem = 1;
        k->sem_type = a->element[0]->str[0] == 'l' ? RDSEM_LEASED : RDSEM_PLAIN;
        k->sem_permits = v[1];
        if (k->sem_type == RDSEM_LEASED) {
            k->sem_held = v[2];
            k->sem_holders = v[3];
            k->sem_value = v[1] > v[2] ? v[1] - v[2] : 0;
        } else {
            k->sem_value = v[1];
        }
        k->sem_waiting = v[4];
    }
    a = r->element[2];
    if (a->elements > 0) {
        if (a->elements != 1 || a->element[0]->type != REDIS_REPLY_STRING)
            goto bad;
        k->once = 1;
        rdl_reply_once_mark(a->element[0]->str, a->element[0]->len, &k->once_by);
    }
    a = r->element[3];
    if (a->elements > 0) {
        if (a->elements != 3)
            goto bad;
        for (i = 0; i < 3; i++)
            if (kind_int(a, i, &v[i]) != 0)
                goto bad;
        k->cond = 1;
        k->cond_registrations = (uint64_t)v[0];
        k->cond_waiters = v[1];
        k->cond_woken = v[2];
    }
    a = r->element[4];
    if (a->elements > 0) {
        if (a->elements != 3)
            goto bad;
        for (i = 0; i < 3; i++)
            if (kind_int(a, i, &v[i]) != 0)
                goto bad;
        if (v[0] > UINT_MAX || v[2] > UINT_MAX)
            goto bad;
        k->barrier = 1;
        k->barrier_count = (unsigned)v[0];
        k->barrier_generation = (uint64_t)v[1];
        k->barrier_arrived = (unsigned)v[2];
    }
    return 0;
bad:
    memset(k, 0, sizeof *k);
    k->size = size;
    rdl_log(RDLOCK_LOG_ERROR, "status: unexpected reply from Redis (kinds)");
    return EIO;
}

/* Beside the decoder that allocates what it frees (and so linked with it
 * in the fuzz target). */
void rdlock_status_free(rdlock_status_t *st)
{
    if (st == NULL)
        return;
    free(st->holders);
    free(st->writers);
    memset(st, 0, sizeof *st);
}

/* "field:value\r\n" lines of an INFO reply: the value of field into out
 * (n bytes). */
static bool info_field(const char *info, size_t len, const char *field, char *out, size_t n)
{
    size_t fl = strlen(field);
    const char *p = info, *end = info + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl != NULL ? nl : end;
        if ((size_t)(eol - p) > fl && memcmp(p, field, fl) == 0 && p[fl] == ':') {
            size_t l = (size_t)(eol - (p + fl + 1));
            if (l > 0 && p[fl + 1 + l - 1] == '\r')
                l--;
            if (l == 0 || l >= n)
                return false;
            memcpy(out, p + fl + 1, l);
            out[l] = '\0';
            return true;
        }
        p = eol + 1;
    }
    return false;
}

int rdl_reply_info_server(const redisReply *r, long long *uptime_s, char *run_id, size_t n)
{
    char up[24];
    long long v = 0;
    size_t i;
    if (r->type == REDIS_REPLY_ERROR)
        return rdl_reply_error(r);
    if (r->type != REDIS_REPLY_STRING || r->str == NULL ||
        !info_field(r->str, r->len, "uptime_in_seconds", up, sizeof up) ||
        !info_field(r->str, r->len, "run_id", run_id, n))
        return EIO;
    for (i = 0; up[i] != '\0'; i++) {
        if (up[i] < '0' || up[i] > '9' || i > 15)
            return EIO;
        v = v * 10 + (up[i] - '0');
    }
    *uptime_s = v;
    return 0;
}

int rdl_reply_time(const redisReply *r, long long *ms)
{
    long long sec, usec;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return EIO;
    sec = strtoll(r->element[0]->str, NULL, 10);
    usec = strtoll(r->element[1]->str, NULL, 10);
    if (sec <= 0 || usec < 0 || sec >= 100000000000LL)
        return EIO;
    *ms = sec * 1000 + usec / 1000;
    return 0;
}
