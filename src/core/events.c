/* events.c - the client's background thread.  See events.h.
 *
 * One thread per client, started on first need (or at the opening, when
 * the topology must be followed: [sentinel]) and joined at close.  Its one
 * poll() loop drives three things, each owned elsewhere except the first:
 *   - the subscriber connections (here), one per server with waiters:
 *     SUBSCRIBE (SSUBSCRIBE on a cluster) to the channels of names that
 *     local threads wait on, and the messages, fed to waitq.c;
 *   - the watchdog (watchdog.c): a renewal round when holds are due;
 *   - the topology (topology.h): its descriptor and timer, and a look after
 *     each renewal round; a move to another server is rdl_events_moved().
 * It also runs the lost callbacks that unlocks owe.  It never holds the
 * client's mutex across network I/O. */
#include "rdl_build.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "base/wake.h"
#include "client/client.h"
#include "client/pool.h"
#include "core/events.h"
#include "core/hold.h"
#include "core/waitq.h"
#include "core/watchdog.h"
#include "proto/reply.h"
#include "proto/slotmap.h"
#include "topology/topology.h"

#define RDL_UNSUB_IDLE_MS 2000     /* keep a quiet subscription this long */
#define RDL_BACKOFF_MAX_MS 1000
#define RDL_CHAN_SUFFIX ":c"

/* ---------------------------------------------------------------- thread control */

static void *bg_main(void *arg);
static void sub_close_all(rdlock_client_t *c);
static void lost_later_free(rdlock_client_t *c);
static void run_owed(rdlock_client_t *c);

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

void rdl_events_stop(rdlock_client_t *c)
{
    bool running;
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
        rdl_wake(c->wake[1]);
        RDL_CHECK(pthread_join(c->bg, NULL));
    }
    RDL_LOCK(c);
    c->bg_running = false;
    RDL_UNLOCK(c);
    sub_close_all(c);
    rdl_watchdog_close(c);
    run_owed(c); /* callbacks owed but not yet run by the thread: not lost */
    rdl_topo_release(c, false);
}

void rdl_events_after_fork(rdlock_client_t *c)
{
    sub_close_all(c); /* closes only the child's descriptors */
    rdl_watchdog_after_fork(c);
    lost_later_free(c);
    rdl_topo_release(c, true);
    c->bg_running = false;
    c->bg_stop = false;
    c->sub_fails = 0;
    c->sub_retry_at = 0;
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
        rdl_wake(c->wake[1]);
}

/* Run the lost callbacks that unlocks owe (mu not held), in order. */
static void run_owed(rdlock_client_t *c)
{
    rdl_lostcb_t *owed;
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

/* The subscriber connection to route's server, connecting if create
 * (mutex not held; background thread only).  NULL if there is none. */
static rdl_conn_t *sub_conn(rdlock_client_t *c, const char *route, bool create)
{
    rdl_conn_t *conn;
    for (conn = c->sub; conn != NULL; conn = conn->next)
        if (strcmp(conn->route, route) == 0)
            return conn;
    if (!create || rdl_topo_connect_route(c, route, &conn) != 0)
        return NULL;
    conn->next = c->sub;
    c->sub = conn;
    return conn;
}

/* Close every subscriber connection (background thread, or after it
 * stopped). */
static void sub_close_all(rdlock_client_t *c)
{
    rdl_conn_t *conn;
    while ((conn = c->sub) != NULL) {
        c->sub = conn->next;
        rdl_conn_close(conn);
    }
}

/* Append one (un)subscription of a channel to the connection of its
 * key's server: with a cluster, each shard channel on the master of its
 * slot.  Returns 0 (also: nothing to do), or EIO. */
static int sub_send(rdlock_client_t *c, const char *chan, size_t len, bool subscribe)
{
    char route[RDL_ROUTE_MAX];
    const char *argv[2];
    size_t lens[2];
    rdl_conn_t *conn;
    bool sharded = c->topo->sharded;

    if (rdl_topo_route(c, chan, len - strlen(RDL_CHAN_SUFFIX), route, sizeof route) != 0)
        return EIO;
    /* Nothing to unsubscribe from on a new connection. */
    if ((conn = sub_conn(c, route, subscribe)) == NULL)
        return subscribe ? EIO : 0;
    argv[0] = subscribe ? (sharded ? "SSUBSCRIBE" : "SUBSCRIBE") : (sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE");
    lens[0] = strlen(argv[0]);
    argv[1] = chan;
    lens[1] = len;
    if (redisAppendCommandArgv(conn->ctx, 2, argv, lens) != REDIS_OK)
        return EIO;
    return 0;
}

/* Send pending (un)subscriptions, connecting if needed (mutex not held).
 * Returns 0 or EIO (some connection unusable: all are dropped). */
static int sub_flush(rdlock_client_t *c, chan_list_t *subs, chan_list_t *unsubs)
{
    rdl_conn_t *conn;
    int i, done;
    for (i = 1; i <= subs->n; i++)
        if (sub_send(c, subs->v[i], subs->l[i], true) != 0)
            return EIO;
    for (i = 1; i <= unsubs->n; i++)
        if (sub_send(c, unsubs->v[i], unsubs->l[i], false) != 0)
            return EIO;
    for (conn = c->sub; conn != NULL; conn = conn->next)
        for (done = 0; !done;)
            if (redisBufferWrite(conn->ctx, &done) != REDIS_OK)
                return EIO;
    return 0;
}

/* Read what a subscriber connection has (mutex not held). */
static int sub_read(rdlock_client_t *c, rdl_conn_t *conn)
{
    void *r;
    int rc;
    bool moved = false;
    if (redisBufferRead(conn->ctx) != REDIS_OK)
        return EIO;
    RDL_LOCK(c);
    for (;;) {
        r = NULL;
        if (redisGetReplyFromReader(conn->ctx, &r) != REDIS_OK) {
            RDL_UNLOCK(c);
            return EIO;
        }
        if (r == NULL)
            break;
        if (((redisReply *)r)->type == REDIS_REPLY_ERROR && rdl_cluster_error(r) != RDL_CL_NONE) {
            /* An SSUBSCRIBE sent to a node that no longer serves the
             * slot (MOVED), or a cluster in trouble: not a refusal.  The
             * map is learnt again and every channel subscribed anew. */
            if (rdl_redirect_parse(r, conn->host, &conn->redir) != 0)
                conn->redir.kind = RDL_CL_CLUSTERDOWN;
            freeReplyObject(r);
            RDL_UNLOCK(c);
            rdl_topo_redirected(c, conn);
            return EAGAIN;
        }
        /* A shard subscription the server ended: its slot moved. */
        moved |= c->topo->sharded && rdl_reply_event(r, RDL_CHAN_SUFFIX, &(rdl_event_t){ 0 }) == RDL_EV_UNSUBSCRIBED;
        rc = sub_reply(c, r);
        freeReplyObject(r);
        if (rc != 0) {
            RDL_UNLOCK(c);
            return rc;
        }
    }
    RDL_UNLOCK(c);
    if (moved) {
        conn->redir.kind = RDL_CL_CLUSTERDOWN; /* "the map may have changed" */
        rdl_topo_redirected(c, conn);
    }
    return 0;
}

/* A subscriber connection failed (mutex not held): drop them all, and
 * every waiter looks again (sub_reset).  moved: it was sent elsewhere
 * (a cluster's slot moved), so subscribe again at once, without backoff. */
static void sub_failed(rdlock_client_t *c, bool moved)
{
    sub_close_all(c);
    RDL_LOCK(c);
    sub_reset(c);
    if (moved)
        c->sub_fails = 0;
    RDL_UNLOCK(c);
}

/* Whether a subscriber connection is on a server that the topology knows
 * not to answer now (a Redlock master in its backoff).  A SIGSTOPped or
 * cut-off server keeps its connections open, so no read of them fails;
 * meanwhile the wake-ups that the masters which do answer publish would
 * reach no waiter before its re-check (retry_interval_ms). */
static bool sub_on_down(rdlock_client_t *c)
{
    rdl_conn_t *conn;
    for (conn = c->sub; conn != NULL; conn = conn->next)
        if (rdl_topo_route_down(c, conn->route))
            return true;
    return false;
}

void rdl_events_moved(rdlock_client_t *c)
{
    rdl_watchdog_close(c);
    rdl_client_pool_flush(c);
    sub_close_all(c);
    RDL_LOCK(c);
    sub_reset(c);
    c->sub_fails = 0; /* resubscribe on the new server at once, no backoff */
    rdl_watchdog_renew_all_now(c, rdl_now_ms());
    RDL_UNLOCK(c);
}

/* ---------------------------------------------------------------- the loop */

/* The subscriber's and the watchdog's work of one round of the loop,
 * collected under the mutex (held): the subscription changes into subs
 * and unsubs, and the renewal round due now (NULL: none). */
static rdl_wd_round_t *bg_collect(rdlock_client_t *c, chan_list_t *subs, chan_list_t *unsubs)
{
    long long now = rdl_now_ms();

    if (c->sub_fails > 0 && now >= c->sub_retry_at)
        c->sub_fails = 0; /* time to try the subscriber connection again */
    sub_collect(c, now, subs, unsubs);
    return rdl_watchdog_collect(c, now);
}

/* Do what bg_collect found (mutex not held): the (un)subscriptions, the
 * renewals with a look at the topology after them, the lost callbacks
 * owed, and the topology's timed work.  The lists are freed. */
static void bg_work(rdlock_client_t *c, chan_list_t *subs, chan_list_t *unsubs, rdl_wd_round_t *round)
{
    if (sub_flush(c, subs, unsubs) != 0) {
        sub_failed(c, false);
    } else if (sub_on_down(c)) {
        /* Subscribed again at once where route() leads now; every
         * waiter looks, for what was published meanwhile. */
        rdl_log(RDLOCK_LOG_INFO, "subscriber: moving off a server that does not answer");
        sub_failed(c, true);
    }
    chan_clear(subs);
    chan_clear(unsubs);

    if (round != NULL) {
        rdl_watchdog_send(c, round);
        RDL_LOCK(c);
        rdl_watchdog_apply(c, round, rdl_now_ms());
        RDL_UNLOCK(c);
        /* After the renewals, not before: a look at the topology (asking
         * the sentinels) must never make them late. */
        if (rdl_watchdog_sent(round))
            rdl_topo_after_round(c);
        rdl_watchdog_finish(round); /* the lost callbacks, unlocked */
    }
    run_owed(c);
    rdl_topo_service(c, false);
}

/* How long poll() may wait from now for what the mutex guards (held): the
 * next renewal, the subscriber's retry, idle subscriptions to drop.  At
 * most a minute. */
static long long bg_timeout(rdlock_client_t *c, long long now)
{
    long long timeout = rdl_watchdog_timeout(c, now, 60000);

    if (c->sub_fails > 0 && c->sub_retry_at - now < timeout)
        timeout = c->sub_retry_at - now;
    if (rdl_waitq_any(c) && timeout > RDL_UNSUB_IDLE_MS)
        timeout = RDL_UNSUB_IDLE_MS; /* idle subscriptions to drop */
    return timeout;
}

/* The loop's poll() set: the wake-up pipe, the topology's descriptor, one
 * per subscriber connection (one per server with waiters: a cluster has
 * several).  Four on the stack; past that on the heap, kept from round to
 * round. */
typedef struct bg_pollset {
    struct pollfd fixed[4], *pfd, *heap;
    int npfd;
} bg_pollset_t;

/* Fill ps for this round (mutex not held; the subscriber list is this
 * thread's).  Returns how many subscriber connections it holds: all of
 * them, or the first ones only if the set could not grow. */
static int bg_pollset_fill(rdlock_client_t *c, bg_pollset_t *ps)
{
    struct pollfd *pfd;
    rdl_conn_t *conn;
    int nsub = 0;

    for (conn = c->sub; conn != NULL; conn = conn->next)
        nsub++;
    if (nsub + 2 > ps->npfd) {
        struct pollfd *v = realloc(ps->heap, (size_t)(nsub + 2) * sizeof *v);
        if (v != NULL) { /* else the first ones only, this time */
            ps->pfd = ps->heap = v;
            ps->npfd = nsub + 2;
        }
    }
    pfd = ps->pfd;
    pfd[0].fd = c->wake[0];
    pfd[0].events = POLLIN;
    pfd[0].revents = 0;
    pfd[1].fd = rdl_topo_fd(c); /* poll() skips -1 */
    pfd[1].events = POLLIN;
    pfd[1].revents = 0;
    nsub = 0;
    for (conn = c->sub; conn != NULL && nsub + 2 < ps->npfd; conn = conn->next, nsub++) {
        pfd[nsub + 2].fd = conn->ctx->fd;
        pfd[nsub + 2].events = POLLIN;
        pfd[nsub + 2].revents = 0;
    }
    return nsub;
}

/* Wait up to timeout ms for the wake-up pipe, the topology or a
 * subscriber, and serve what is ready (mutex not held).  A subscriber
 * that fails drops them all (sub_failed). */
static void bg_poll(rdlock_client_t *c, bg_pollset_t *ps, long long timeout)
{
    int nsub = bg_pollset_fill(c, ps), src;
    struct pollfd *pfd = ps->pfd;
    rdl_conn_t *conn;
    char drain[64];

    if (poll(pfd, (nfds_t)(nsub + 2), (int)timeout) <= 0)
        return;
    if (pfd[0].revents & POLLIN)
        while (read(c->wake[0], drain, sizeof drain) > 0)
            ;
    if (pfd[1].fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
        /* First: a subscriber below may be on a server we leave. */
        rdl_topo_service(c, true);
    /* The list is as it was at poll() (only this thread changes it),
     * unless the topology moved us: then it is empty. */
    conn = c->sub;
    for (int k = 0; conn != NULL && k < nsub; k++, conn = conn->next) {
        if (!(pfd[k + 2].revents & (POLLIN | POLLHUP | POLLERR)) || pfd[k + 2].fd != conn->ctx->fd)
            continue;
        if ((src = sub_read(c, conn)) != 0) {
            if (src == EIO)
                rdl_log(RDLOCK_LOG_WARN, "subscriber connection to %s lost: %s", conn->addr, conn->ctx->errstr);
            sub_failed(c, src == EAGAIN);
            break;
        }
    }
}

static void *bg_main(void *arg)
{
    rdlock_client_t *c = arg; /* all signals blocked: see rdl_events_start */
    bg_pollset_t ps;

    ps.pfd = ps.fixed;
    ps.heap = NULL;
    ps.npfd = 4;
    RDL_LOCK(c);
    while (!c->bg_stop) {
        chan_list_t subs = { 0 }, unsubs = { 0 };
        rdl_wd_round_t *round = bg_collect(c, &subs, &unsubs);
        long long now, timeout, due;

        RDL_UNLOCK(c);
        bg_work(c, &subs, &unsubs, round);

        RDL_LOCK(c);
        if (c->bg_stop)
            break;
        now = rdl_now_ms();
        timeout = bg_timeout(c, now);
        RDL_UNLOCK(c);
        due = rdl_topo_due(c);
        if (due != 0 && due - now < timeout)
            timeout = due - now; /* the topology's own work: a reconnect, a PING */
        if (timeout < 0)
            timeout = 0;
        bg_poll(c, &ps, timeout);
        RDL_LOCK(c);
    }
    RDL_UNLOCK(c);
    free(ps.heap);
    return NULL;
}
