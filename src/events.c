/* events.c - the client's background thread.  See events.h.
 *
 * One thread per client, started on first need and joined at close.  It
 * owns two connections: a subscriber (SUBSCRIBE to the channels of names
 * that local threads wait on) and a watchdog connection that renews every
 * hold of the client with pipelined batch scripts; with [sentinel], also a
 * link to a sentinel that tells it of failovers (sentinel.h), for which it
 * runs from the client's opening on.  It never holds the client's mutex
 * across network I/O. */
#include "rdl_build.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "events.h"
#include "hold.h"
#include "log.h"
#include "reply.h"
#include "script.h"
#include "sentinel.h"
#include "timeutil.h"
#include "waitq.h"

#define RDL_RENEW_BATCH 500        /* holds per renew script call */
#define RDL_SENTINEL_BACKOFF_MS 30000 /* after no sentinel answered */
#define RDL_UNSUB_IDLE_MS 2000     /* keep a quiet subscription this long */
#define RDL_BACKOFF_MAX_MS 1000
#define RDL_CHAN_SUFFIX ":c"

/* ---------------------------------------------------------------- thread control */

static void *bg_main(void *arg);
static void lost_later_free(rdlock_client_t *c);

int rdl_events_start(rdlock_client_t *c)
{
    int rc;
    if (c->bg_running)
        return 0;
    sigset_t all, old;
    c->bg_stop = false;
    /* The thread starts with every signal blocked, so the application's
     * signals are delivered to its own threads, never to ours. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&c->bg, NULL, bg_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        rdl_log(RDLOCK_LOG_ERROR, "cannot start the background thread: %s", strerror(rc));
        return rc == EAGAIN ? ENOMEM : rc;
    }
    c->bg_running = true;
    return 0;
}

void rdl_events_poke(rdlock_client_t *c)
{
    char b = 1;
    /* A full pipe already means "look again". */
    if (write(c->wake[1], &b, 1) < 0 && errno != EAGAIN)
        rdl_log(RDLOCK_LOG_DEBUG, "wake-up write failed: %s", strerror(errno));
}

void rdl_events_stop(rdlock_client_t *c)
{
    bool running;
    rdl_lostcb_t *owed;
    RDL_LOCK(c);
    running = c->bg_running;
    c->bg_stop = true;
    if (running && pthread_equal(pthread_self(), c->bg)) {
        /* Called from our own thread: a lost callback that exits the
         * process (atexit closes the default client) or closes the client.
         * A thread cannot join itself; it stops when the callback returns,
         * or with the process. */
        RDL_UNLOCK(c);
        return;
    }
    RDL_UNLOCK(c);
    if (running) {
        rdl_events_poke(c);
        RDL_CHECK(pthread_join(c->bg, NULL));
    }
    RDL_LOCK(c);
    c->bg_running = false;
    RDL_UNLOCK(c);
    rdl_conn_close(c->sub);
    rdl_conn_close(c->wd);
    c->sub = c->wd = NULL;
    /* Callbacks owed but not yet run by the thread: run here, not lost. */
    RDL_LOCK(c);
    owed = c->lost_later;
    c->lost_later = NULL;
    RDL_UNLOCK(c);
    while (owed != NULL) {
        rdl_lostcb_t *next = owed->next;
        owed->fn(owed->name, owed->arg);
        free(owed->name);
        free(owed);
        owed = next;
    }
    rdl_sentinel_watch_free(c->sw);
    c->sw = NULL;
}

void rdl_events_after_fork(rdlock_client_t *c)
{
    rdl_conn_close(c->sub);
    rdl_conn_close(c->wd);
    c->sub = c->wd = NULL;
    lost_later_free(c);
    rdl_sentinel_watch_free(c->sw); /* closes the child's descriptor only */
    c->sw = NULL;
    c->bg_running = false;
    c->bg_stop = false;
    c->wd_next = 0;
    c->sub_fails = c->wd_fails = 0;
    c->sub_retry_at = c->wd_retry_at = 0;
    /* Fresh pipe: the parent's thread still reads the old one. */
    close(c->wake[0]);
    close(c->wake[1]);
    if (pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        c->wake[0] = c->wake[1] = -1;
}

static long long backoff_ms(int fails)
{
    long long ms = 50LL << (fails < 5 ? fails : 5);
    return ms > RDL_BACKOFF_MAX_MS ? RDL_BACKOFF_MAX_MS : ms;
}

void rdl_events_lost_later(rdlock_client_t *c, rdlock_lost_fn fn, void *arg, const char *name, size_t namelen)
{
    rdl_lostcb_t *cb, **pp;
    if (fn == NULL)
        return;
    cb = calloc(1, sizeof *cb);
    if (cb == NULL || (cb->name = strndup(name, namelen)) == NULL) {
        free(cb);
        rdl_log(RDLOCK_LOG_ERROR, "lock %.*s: out of memory: its lost callback does not run", (int)namelen, name);
        return;
    }
    cb->fn = fn;
    cb->arg = arg;
    for (pp = &c->lost_later; *pp != NULL; pp = &(*pp)->next)
        ; /* in order */
    *pp = cb;
    if (rdl_events_start(c) == 0)
        rdl_events_poke(c);
}

/* Free callbacks still owed (close; fork child: the parent runs its own). */
static void lost_later_free(rdlock_client_t *c)
{
    while (c->lost_later != NULL) {
        rdl_lostcb_t *next = c->lost_later->next;
        free(c->lost_later->name);
        free(c->lost_later);
        c->lost_later = next;
    }
}

/* ---------------------------------------------------------------- subscriptions */

/* Names to (un)subscribe, collected under the mutex, sent without it. */
typedef struct chan_list {
    char **v;
    size_t *l;
    int n, cap;
} chan_list_t;

/* rdl_waitq_chan_fn: add the channel of key to the list arg. */
static void chan_add(void *arg, const char *key, size_t keylen)
{
    chan_list_t *cl = arg;
    size_t sl = strlen(RDL_CHAN_SUFFIX);
    char *s;
    if (cl->n == cl->cap) {
        int cap = cl->cap ? cl->cap * 2 : 16;
        char **v = realloc(cl->v, (size_t)(cap + 1) * sizeof *v);
        size_t *l;
        if (v == NULL)
            return;
        cl->v = v;
        l = realloc(cl->l, (size_t)(cap + 1) * sizeof *l);
        if (l == NULL)
            return;
        cl->l = l;
        cl->cap = cap;
    }
    s = malloc(keylen + sl + 1);
    if (s == NULL)
        return;
    memcpy(s, key, keylen);
    memcpy(s + keylen, RDL_CHAN_SUFFIX, sl + 1);
    cl->v[cl->n + 1] = s; /* slot 0 is the command */
    cl->l[cl->n + 1] = keylen + sl;
    cl->n++;
}

static void chan_clear(chan_list_t *cl)
{
    int i;
    for (i = 1; i <= cl->n; i++)
        free(cl->v[i]);
    free(cl->v);
    free(cl->l);
    memset(cl, 0, sizeof *cl);
}

static int chan_send(rdl_conn_t *conn, chan_list_t *cl, const char *cmd)
{
    if (cl->n == 0)
        return 0;
    cl->v[0] = (char *)cmd;
    cl->l[0] = strlen(cmd);
    if (redisAppendCommandArgv(conn->ctx, cl->n + 1, (const char **)cl->v, cl->l) != REDIS_OK)
        return EIO;
    return 0;
}

/* The two lists sub_collect fills. */
typedef struct chan_lists {
    chan_list_t subs, unsubs;
} chan_lists_t;

static void chan_sub(void *arg, const char *key, size_t keylen)
{
    chan_add(&((chan_lists_t *)arg)->subs, key, keylen);
}

static void chan_unsub(void *arg, const char *key, size_t keylen)
{
    chan_add(&((chan_lists_t *)arg)->unsubs, key, keylen);
}

/* Collect subscription changes (mutex held). */
static void sub_collect(rdlock_client_t *c, long long now, chan_list_t *subs, chan_list_t *unsubs)
{
    chan_lists_t lists = { *subs, *unsubs };
    rdl_waitq_sub_collect(c, now, RDL_UNSUB_IDLE_MS, c->sub_fails == 0, chan_sub, chan_unsub, &lists);
    *subs = lists.subs;
    *unsubs = lists.unsubs;
}

/* The subscriber connection failed (mutex held): every subscription is
 * gone and releases may have been missed, so every waiter looks again. */
static void sub_reset(rdlock_client_t *c)
{
    rdl_waitq_sub_lost(c);
    c->sub_fails++;
    c->sub_retry_at = rdl_now_ms() + backoff_ms(c->sub_fails);
}

/* Handle one pub/sub reply (mutex held).  An error reply (a SUBSCRIBE the
 * server refused: ACL channel permissions) returns EACCES: the caller
 * drops the connection, so every waiter looks again and, while the
 * subscriber backs off, falls back to timed re-checks. */
static int sub_reply(rdlock_client_t *c, redisReply *r)
{
    rdl_event_t ev;
    int kind = rdl_reply_event(r, RDL_CHAN_SUFFIX, &ev);

    if (r->type == REDIS_REPLY_ERROR) {
        /* Once per client, not once per retry of the subscriber. */
        rdl_log(c->sub_denied ? RDLOCK_LOG_DEBUG : RDLOCK_LOG_ERROR,
                "subscriber: %s; waiters re-check every retry_interval_ms instead",
                r->str != NULL ? r->str : "error");
        c->sub_denied = true;
        return EACCES;
    }
    switch (kind) {
    case RDL_EV_GRANT:
        /* Handed to a queued writer: only that waiter (if it is ours)
         * needs to know. */
        rdl_waitq_grant(c, ev.key, ev.keylen, ev.owner, ev.ownerlen, ev.token);
        break;
    case RDL_EV_WAKE:
        rdl_waitq_wake(c, ev.key, ev.keylen); /* readers may enter */
        break;
    case RDL_EV_SUBSCRIBED:
        rdl_waitq_sub_confirmed(c, ev.key, ev.keylen);
        break;
    case RDL_EV_UNSUBSCRIBED:
        rdl_waitq_sub_ended(c, ev.key, ev.keylen);
        break;
    }
    return 0;
}

/* Send pending (un)subscriptions, connecting if needed (mutex not held).
 * Returns 0 or EIO (connection unusable). */
static int sub_flush(rdlock_client_t *c, chan_list_t *subs, chan_list_t *unsubs)
{
    int done = 0, rc;
    if (subs->n == 0 && unsubs->n == 0)
        return 0;
    if (c->sub == NULL) {
        if (subs->n == 0)
            return 0; /* nothing to unsubscribe from on a new connection */
        rc = rdl_conn_open_lazy(&c->cfg, &c->sub);
        if (rc != 0)
            return EIO;
    }
    if (chan_send(c->sub, subs, "SUBSCRIBE") != 0 || chan_send(c->sub, unsubs, "UNSUBSCRIBE") != 0)
        return EIO;
    while (!done)
        if (redisBufferWrite(c->sub->ctx, &done) != REDIS_OK)
            return EIO;
    return 0;
}

/* Read what the subscriber connection has (mutex not held). */
static int sub_read(rdlock_client_t *c)
{
    void *r;
    int rc;
    if (redisBufferRead(c->sub->ctx) != REDIS_OK)
        return EIO;
    RDL_LOCK(c);
    for (;;) {
        r = NULL;
        if (redisGetReplyFromReader(c->sub->ctx, &r) != REDIS_OK) {
            RDL_UNLOCK(c);
            return EIO;
        }
        if (r == NULL)
            break;
        rc = sub_reply(c, r);
        freeReplyObject(r);
        if (rc != 0) {
            RDL_UNLOCK(c);
            return rc;
        }
    }
    RDL_UNLOCK(c);
    return 0;
}

/* ---------------------------------------------------------------- watchdog */

typedef struct renew_item {
    char *key;
    size_t keylen;
    unsigned thread;
    uint64_t serial;
    char owner[RDL_OWNER_MAX];
    char lease[16];
    char count[16];
    char call[21];
    int result; /* 0 renewed, 1 lost, -1 unknown (I/O failed) */
} renew_item_t;

typedef struct lost_cb {
    rdlock_lost_fn fn;
    void *arg;
    char *name;
} lost_cb_t;

typedef struct renew_batch {
    renew_item_t *items;
    size_t n, cap;
    long long sent_at;
    lost_cb_t *cbs;
    size_t ncb, cbcap;
} renew_batch_t;

static void batch_clear(renew_batch_t *b)
{
    size_t i;
    for (i = 0; i < b->n; i++)
        free(b->items[i].key);
    free(b->items);
    for (i = 0; i < b->ncb; i++)
        free(b->cbs[i].name);
    free(b->cbs);
    memset(b, 0, sizeof *b);
}

/* Mark a hold lost (mutex held) and queue its callback, once. */
static void hold_lost(renew_batch_t *b, rdl_hold_t *h)
{
    h->lost = true;
    if (h->notified || h->lostcb == NULL)
        return;
    h->notified = true;
    if (b->ncb == b->cbcap) {
        size_t cap = b->cbcap ? b->cbcap * 2 : 8;
        lost_cb_t *v = realloc(b->cbs, cap * sizeof *v);
        if (v == NULL)
            return;
        b->cbs = v;
        b->cbcap = cap;
    }
    b->cbs[b->ncb].fn = h->lostcb;
    b->cbs[b->ncb].arg = h->lostarg;
    b->cbs[b->ncb].name = strndup(h->name, h->namelen);
    if (b->cbs[b->ncb].name != NULL)
        b->ncb++;
}

static int batch_add(rdlock_client_t *c, renew_batch_t *b, const rdl_hold_t *h)
{
    renew_item_t *it;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        renew_item_t *v = realloc(b->items, cap * sizeof *v);
        if (v == NULL)
            return ENOMEM;
        b->items = v;
        b->cap = cap;
    }
    it = &b->items[b->n];
    it->key = malloc(h->keylen + 1);
    if (it->key == NULL)
        return ENOMEM;
    memcpy(it->key, h->key, h->keylen + 1);
    it->keylen = h->keylen;
    it->thread = h->thread;
    it->serial = h->serial;
    rdl_owner(c, h->thread, it->owner);
    it->lease[rdl_fmt_u64(it->lease, h->lease_ms)] = '\0';
    it->count[rdl_fmt_u64(it->count, h->count)] = '\0';
    memcpy(it->call, h->call, sizeof it->call);
    it->result = -1;
    b->n++;
    return 0;
}

/* Collect the holds to renew now (mutex held): every watched hold due
 * within half its interval, so renewals line up into few batches.  Holds
 * past max_hold_ms stop being renewed and are reported lost when their
 * lease runs out; so are holds whose renewals have failed until past
 * their lease end (the server may already have given them away). */
static void renew_collect(rdlock_client_t *c, long long now, renew_batch_t *b)
{
    size_t i;
    rdl_tnode_t *nd;
    long long next = 0;

    RDL_TABLE_FOREACH(&c->holds, i, nd)
    {
        rdl_hold_t *h = (rdl_hold_t *)nd;
        long long due;
        if (!h->watchdog || h->lost || h->releasing)
            continue;
        if (h->expires_at <= now && (h->renew_stopped || h->renew_at <= now)) {
            hold_lost(b, h);
            continue;
        }
        if (!h->renew_stopped && h->max_hold_ms != 0 && now - h->acquired_at >= h->max_hold_ms) {
            h->renew_stopped = true;
            rdl_log(RDLOCK_LOG_WARN, "lock %.*s held past max_hold_ms: no longer renewed",
                    (int)h->namelen, h->name);
        }
        due = h->renew_stopped ? h->expires_at : h->renew_at;
        if (!h->renew_stopped && h->renew_at <= now + h->interval_ms / 2 && batch_add(c, b, h) == 0)
            due = now + h->interval_ms; /* provisional, until the reply */
        if (next == 0 || due < next)
            next = due;
    }
    c->wd_next = next;
}

/* Arguments of one renew script call: chunk [start, start+n) of the batch. */
static size_t renew_args(const renew_batch_t *b, size_t start, size_t n, const char **argv, size_t *lens)
{
    size_t i, argc = 0;
    for (i = 0; i < n; i++) {
        argv[argc] = b->items[start + i].key;
        lens[argc++] = b->items[start + i].keylen;
    }
    for (i = 0; i < n; i++) {
        argv[argc] = b->items[start + i].owner;
        lens[argc++] = strlen(b->items[start + i].owner);
        argv[argc] = b->items[start + i].lease;
        lens[argc++] = strlen(b->items[start + i].lease);
        argv[argc] = b->items[start + i].count;
        lens[argc++] = strlen(b->items[start + i].count);
        argv[argc] = b->items[start + i].call;
        lens[argc++] = strlen(b->items[start + i].call);
    }
    return argc;
}

/* Record one chunk's reply.  Returns 1 if the server lost its script cache
 * (NOSCRIPT): the chunk must be sent again; 2 if it is a replica now
 * (READONLY): the connection must be made again. */
static int renew_result(renew_batch_t *b, size_t start, size_t n, const redisReply *r)
{
    int res[RDL_RENEW_BATCH];
    size_t i;
    if (rdl_reply_noscript(r))
        return 1;
    if (rdl_reply_readonly(r)) {
        rdl_log(RDLOCK_LOG_WARN, "watchdog: %s; reconnecting", r->str);
        return 2;
    }
    if (rdl_reply_renew(r, n, res) == 0) /* else results stay unknown: retried soon */
        for (i = 0; i < n; i++)
            b->items[start + i].result = res[i];
    return 0;
}

#define CHUNK(b, start) ((b)->n - (start) < RDL_RENEW_BATCH ? (b)->n - (start) : RDL_RENEW_BATCH)

/* Run the batch on the watchdog connection: pipelined renew scripts of up
 * to RDL_RENEW_BATCH holds each (mutex not held).  Every pipelined reply is
 * read before anything else is sent, so replies never pair with the wrong
 * chunk; chunks that met NOSCRIPT are sent again after a SCRIPT LOAD. */
static int renew_send(rdlock_client_t *c, renew_batch_t *b)
{
    size_t start, argc;
    const char **argv = NULL;
    size_t *lens = NULL;
    bool reload = false, fresh = false, readonly = false;
    int rc = 0;

    if (c->wd == NULL) {
        if ((rc = rdl_conn_open_lazy(&c->cfg, &c->wd)) != 0)
            return rc;
        /* Load once per connection, in the same pipeline as the first
         * batch, so a fresh connection costs no extra round trip. */
        fresh = true;
        if ((rc = rdl_conn_append_load(c->wd, &rdl_script_renew)) != 0)
            goto out;
    }
    argv = malloc(5 * RDL_RENEW_BATCH * sizeof *argv);
    lens = malloc(5 * RDL_RENEW_BATCH * sizeof *lens);
    if (argv == NULL || lens == NULL) {
        rc = ENOMEM;
        goto out;
    }
    b->sent_at = rdl_now_ms();
    for (start = 0; start < b->n && rc == 0; start += RDL_RENEW_BATCH) {
        argc = renew_args(b, start, CHUNK(b, start), argv, lens);
        rc = rdl_conn_append_script(c->wd, &rdl_script_renew, (int)CHUNK(b, start), (int)argc, argv,
                                    lens);
    }
    if (rc == 0 && fresh) {
        redisReply *r;
        if ((rc = rdl_conn_read(c->wd, &r)) == 0) {
            if (r->type == REDIS_REPLY_ERROR) {
                rc = rdl_reply_error(r);
                rdl_log(RDLOCK_LOG_ERROR, "watchdog: SCRIPT LOAD failed: %s", r->str ? r->str : "?");
            }
            freeReplyObject(r);
        }
    }
    for (start = 0; start < b->n && rc == 0; start += RDL_RENEW_BATCH) {
        redisReply *r;
        if ((rc = rdl_conn_read(c->wd, &r)) != 0)
            break;
        switch (renew_result(b, start, CHUNK(b, start), r)) {
        case 1: reload = true; break;
        case 2: readonly = true; break;
        }
        freeReplyObject(r);
    }
    if (rc == 0 && readonly)
        rc = EIO; /* below: the connection is dropped; the caller retries on a new one */
    if (rc == 0 && reload) {
        rc = rdl_conn_load(c->wd, &rdl_script_renew);
        for (start = 0; start < b->n && rc == 0; start += RDL_RENEW_BATCH) {
            redisReply *r;
            if (b->items[start].result != -1)
                continue; /* this chunk was answered */
            argc = renew_args(b, start, CHUNK(b, start), argv, lens);
            rc = rdl_conn_script(c->wd, &rdl_script_renew, (int)CHUNK(b, start), (int)argc, argv, lens,
                                 &r);
            if (rc == 0) {
                renew_result(b, start, CHUNK(b, start), r);
                freeReplyObject(r);
            }
        }
    }
out:
    free(argv);
    free(lens);
    if (c->wd != NULL && (rc != 0 || !rdl_conn_ok(c->wd))) {
        /* Replies may be left unread: never reuse such a connection. */
        rdl_conn_close(c->wd);
        c->wd = NULL;
        if (rc == 0)
            rc = EIO;
    }
    return rc;
}

/* Apply the replies (mutex held).  Holds released or replaced meanwhile
 * (serial mismatch, or an unlock in flight) are left alone: a release
 * racing a renewal must not look like a loss. */
static void renew_apply(rdlock_client_t *c, renew_batch_t *b, long long now)
{
    size_t i;
    bool failed = false;
    for (i = 0; i < b->n; i++) {
        renew_item_t *it = &b->items[i];
        rdl_hold_t *h = rdl_hold_find(c, it->key, it->keylen, it->thread);
        if (h == NULL || h->serial != it->serial || h->releasing || h->lost)
            continue;
        if (it->result == 0) {
            h->renew_at = b->sent_at + h->interval_ms;
            h->expires_at = b->sent_at + h->lease_ms;
        } else if (it->result == 1) {
            rdl_log(RDLOCK_LOG_WARN, "lock %.*s: lease lost (expired, taken over or deleted)",
                    (int)h->namelen, h->name);
            hold_lost(b, h);
        } else {
            failed = true;
            /* Try again soon, and while the lease still has time left;
             * hold_lost() comes when it runs out. */
            h->renew_at = now + backoff_ms(c->wd_fails);
            if (h->expires_at > now && h->renew_at > now + (h->expires_at - now) / 2)
                h->renew_at = now + (h->expires_at - now) / 2;
        }
        if (!h->lost && (c->wd_next == 0 || h->renew_at < c->wd_next))
            c->wd_next = h->renew_at;
    }
    c->wd_fails = failed ? c->wd_fails + 1 : 0;
}

/* Every watched hold is due now (mutex held): after a move to a new
 * master, whose copies of our holds date from before the failover.  The
 * renewal that finds one gone reports it lost, in this very round. */
static void renew_all_now(rdlock_client_t *c, long long now)
{
    size_t i;
    rdl_tnode_t *nd;
    RDL_TABLE_FOREACH(&c->holds, i, nd)
    {
        rdl_hold_t *h = (rdl_hold_t *)nd;
        if (h->watchdog && !h->lost && !h->releasing && !h->renew_stopped && h->renew_at > now)
            h->renew_at = now;
    }
    c->wd_next = now;
    c->wd_fails = 0;
    c->wd_retry_at = 0;
}

/* The master moved from `from` to `to` (mutex not held): leave the old
 * one at once, wherever we are on it.  A deposed master keeps serving its
 * clients until Sentinel reconfigures it, which can take many seconds;
 * what went there meanwhile (acquisitions, renewals) is lost with it.  So
 * the watchdog's connection, the pool (lock calls: connections in use are
 * closed when they come back) and the subscriber (wake-ups: every waiter
 * looks again) all go, and every hold is renewed on the new master now. */
static void move_master(rdlock_client_t *c, const char *from, const char *to, const char *how)
{
    /* (from may be c->wd's, closed below.) */
    rdl_log(RDLOCK_LOG_WARN, "Sentinel: master '%s' moved from %s to %s (%s); reconnecting", c->cfg.sentinel_master,
            from[0] ? from : "?", to, how);
    if (c->sw != NULL)
        rdl_sentinel_watch_set_master(c->sw, to);
    rdl_conn_close(c->wd);
    c->wd = NULL;
    rdl_client_pool_flush(c);
    if (c->sub != NULL) {
        rdl_conn_close(c->sub);
        c->sub = NULL;
    }
    RDL_LOCK(c);
    sub_reset(c);
    c->sub_fails = 0; /* resubscribe on the new master at once, no backoff */
    renew_all_now(c, rdl_now_ms());
    RDL_UNLOCK(c);
}

/* With [sentinel], once per renewal round, after it (mutex not held): has a
 * failover moved the master away from the watchdog's connection?  The
 * sentinel link (below) hears of a failover at once; this question also
 * catches a master moved without one (a sentinel reconfigured by hand)
 * and a notification lost with a link. */
static bool master_check(rdlock_client_t *c)
{
    char now[RDL_MASTER_ADDR_MAX];
    if (rdl_sentinel_master(&c->cfg, now, sizeof now) != 0) {
        /* No sentinel answers: keep going where we are, and do not pay
         * their timeouts every round. */
        c->sentinel_check_at = rdl_now_ms() + RDL_SENTINEL_BACKOFF_MS;
        return false;
    }
    if (strcmp(now, c->wd->master) == 0)
        return false;
    move_master(c, c->wd->master, now, "asked after a renewal round");
    return true;
}

/* The sentinel link says the master is at addr (mutex not held): move
 * there if that is news. */
static void sentinel_follow(rdlock_client_t *c, const char *addr, const char *how)
{
    char prev[RDL_MASTER_ADDR_MAX];
    snprintf(prev, sizeof prev, "%s", rdl_sentinel_watch_master(c->sw));
    if (strcmp(prev, addr) == 0)
        return;
    rdl_sentinel_watch_set_master(c->sw, addr);
    if (prev[0] == '\0') {
        /* Learned for the first time (the link came up): connections
         * opened before asked the sentinels themselves, but a failover may
         * have passed since.  Move only if one of them leads elsewhere. */
        if (c->wd != NULL && strcmp(c->wd->master, addr) != 0)
            snprintf(prev, sizeof prev, "%s", c->wd->master);
        else if (!rdl_client_pool_elsewhere(c, addr, prev, sizeof prev))
            return;
    }
    move_master(c, prev, addr, how);
}

/* The sentinel link's own chores (mutex not held): (re)connect, keepalive,
 * and the question asked after each (re)connection. */
static void sentinel_service(rdlock_client_t *c)
{
    char addr[RDL_MASTER_ADDR_MAX];
    if (c->sw == NULL && (c->sw = rdl_sentinel_watch_new()) == NULL)
        return; /* out of memory: renewal rounds still ask (master_check) */
    if (rdl_sentinel_watch_service(c->sw, &c->cfg, rdl_now_ms(), addr, sizeof addr) == 1)
        sentinel_follow(c, addr, "asked on a new sentinel link");
}

/* ---------------------------------------------------------------- the loop */

static void *bg_main(void *arg)
{
    rdlock_client_t *c = arg; /* all signals blocked: see rdl_events_start */
    struct pollfd pfd[3];
    char drain[64];

    RDL_LOCK(c);
    while (!c->bg_stop) {
        chan_list_t subs = { 0 }, unsubs = { 0 };
        renew_batch_t batch = { 0 };
        long long now = rdl_now_ms(), timeout;
        size_t i;
        int nfd, src;
        bool moved;
        rdl_lostcb_t *owed;

        if (c->sub_fails > 0 && now >= c->sub_retry_at)
            c->sub_fails = 0; /* time to try the subscriber connection again */
        sub_collect(c, now, &subs, &unsubs);
        if (c->wd_next != 0 && c->wd_next <= now && now >= c->wd_retry_at)
            renew_collect(c, now, &batch);
        RDL_UNLOCK(c);

        if (sub_flush(c, &subs, &unsubs) != 0) {
            rdl_conn_close(c->sub);
            c->sub = NULL;
            RDL_LOCK(c);
            sub_reset(c);
            RDL_UNLOCK(c);
        }
        chan_clear(&subs);
        chan_clear(&unsubs);

        if (batch.n > 0) {
            int rc = renew_send(c, &batch);
            if (rc == EIO)
                /* Usually the connection died while idle (server restart,
                 * CLIENT KILL, idle timeout): a fresh one, at once, before
                 * backing off.  Renewing twice is harmless. */
                rc = renew_send(c, &batch);
            if (rc != 0)
                rdl_log(c->wd_fails == 0 ? RDLOCK_LOG_WARN : RDLOCK_LOG_DEBUG,
                        "watchdog: renewal round failed (%s); retrying", rdlock_strerror(rc));
        }
        /* After the renewals, not before: asking the sentinels must never
         * make them late (a dead sentinel costs a connect timeout). */
        moved = batch.n > 0 && c->cfg.nsentinels > 0 && c->wd != NULL && rdl_now_ms() >= c->sentinel_check_at &&
                master_check(c);
        RDL_LOCK(c);
        if (batch.n > 0) {
            renew_apply(c, &batch, rdl_now_ms());
            /* The per-hold retry times already respect the leases. */
            c->wd_retry_at = c->wd_fails > 0 ? c->wd_next : 0;
        }
        if (moved)
            renew_all_now(c, rdl_now_ms());
        owed = c->lost_later;
        c->lost_later = NULL;
        RDL_UNLOCK(c);
        for (i = 0; i < batch.ncb; i++)
            batch.cbs[i].fn(batch.cbs[i].name, batch.cbs[i].arg); /* on this thread, unlocked */
        batch_clear(&batch);
        while (owed != NULL) {
            rdl_lostcb_t *next = owed->next;
            owed->fn(owed->name, owed->arg);
            free(owed->name);
            free(owed);
            owed = next;
        }
        if (c->cfg.nsentinels > 0)
            sentinel_service(c);

        RDL_LOCK(c);
        if (c->bg_stop)
            break;
        now = rdl_now_ms();
        timeout = 60000;
        if (c->wd_next != 0)
            timeout = c->wd_next - now;
        if (c->wd_fails > 0 && c->wd_retry_at - now > timeout)
            timeout = c->wd_retry_at - now;
        if (c->sub_fails > 0 && c->sub_retry_at - now < timeout)
            timeout = c->sub_retry_at - now;
        if (rdl_waitq_any(c) && timeout > RDL_UNSUB_IDLE_MS)
            timeout = RDL_UNSUB_IDLE_MS; /* idle subscriptions to drop */
        if (c->sw != NULL && rdl_sentinel_watch_due(c->sw, &c->cfg) - now < timeout)
            timeout = rdl_sentinel_watch_due(c->sw, &c->cfg) - now; /* a reconnect, a PING */
        if (timeout < 0)
            timeout = 0;
        RDL_UNLOCK(c);

        pfd[0].fd = c->wake[0];
        pfd[0].events = POLLIN;
        pfd[1].fd = c->sub != NULL ? c->sub->ctx->fd : -1; /* poll() skips -1 */
        pfd[1].events = POLLIN;
        pfd[1].revents = 0;
        pfd[2].fd = rdl_sentinel_watch_fd(c->sw);
        pfd[2].events = POLLIN;
        pfd[2].revents = 0;
        nfd = pfd[2].fd >= 0 ? 3 : 2;
        if (poll(pfd, (nfds_t)nfd, (int)timeout) > 0) {
            char addr[RDL_MASTER_ADDR_MAX];
            const char *event = "";
            if (pfd[0].revents & POLLIN)
                while (read(c->wake[0], drain, sizeof drain) > 0)
                    ;
            if (nfd == 3 && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)) &&
                rdl_sentinel_watch_read(c->sw, &c->cfg, addr, sizeof addr, &event) == 1)
                /* First: the subscriber below may be on the old master. */
                sentinel_follow(c, addr, event);
            if (c->sub != NULL && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) && (src = sub_read(c)) != 0) {
                if (src == EIO)
                    rdl_log(RDLOCK_LOG_WARN, "subscriber connection lost: %s", c->sub->ctx->errstr);
                rdl_conn_close(c->sub);
                c->sub = NULL;
                RDL_LOCK(c);
                sub_reset(c);
                RDL_UNLOCK(c);
            }
        }
        RDL_LOCK(c);
    }
    RDL_UNLOCK(c);
    return NULL;
}
