/* lock.c - the core: acquire and release one lock name in one mode for the
 * calling thread, and the wait loop.  See lock.h.
 *
 * An uncontended acquire or release is one EVALSHA.  A caller that finds
 * the lock busy joins the local wait queue of the name (one subscription to
 * the name's channel however many threads wait), tries once more (now that
 * a release can no longer be missed), then sleeps until a wake-up or until
 * the holders' leases would end, at most retry_interval_ms (+ jitter). */
#include "rdl_build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "events.h"
#include "hold.h"
#include "lock.h"
#include "log.h"
#include "reply.h"
#include "script.h"
#include "timeutil.h"

#define RDL_COUNT_MAX ((unsigned)INT_MAX) /* EAGAIN past 2^31-1 */

/* The six keys of a lock (see src/scripts/acquire.lua). */
#define RDL_NKEYS 6
typedef struct lock_keys {
    char *buf;
    const char *v[RDL_NKEYS];
    size_t l[RDL_NKEYS];
} lock_keys_t;

static int keys_make(lock_keys_t *k, const char *key, size_t keylen)
{
    static const char *const sfx[RDL_NKEYS] = { "", ":w", ":wq", ":r", ":fence", ":x" };
    size_t i, off = 0;
    k->buf = malloc(RDL_NKEYS * keylen + 20);
    if (k->buf == NULL)
        return ENOMEM;
    for (i = 0; i < RDL_NKEYS; i++) {
        size_t sl = strlen(sfx[i]);
        memcpy(k->buf + off, key, keylen);
        memcpy(k->buf + off + keylen, sfx[i], sl);
        k->v[i] = k->buf + off;
        k->l[i] = keylen + sl;
        off += keylen + sl;
    }
    return 0;
}

/* Relock by a thread that holds the name already (mutex held). */
static int relock(const rdl_handle_t *h, rdl_hold_t *hold, char mode, int how)
{
    bool counts;
    if (mode == 's')
        counts = hold->mode == 's'; /* read re-entry, even while a writer waits */
    else
        counts = hold->mode == 'x' && h->api == RDL_API_MUTEX && hold->api == RDL_API_MUTEX &&
                 h->type == RDLOCK_RECURSIVE;
    if (!counts)
        return how == RDL_TRY ? EBUSY : EDEADLK;
    if (hold->count >= RDL_COUNT_MAX)
        return EAGAIN;
    hold->count++;
    return 0;
}

typedef struct attempt {
    rdlock_client_t *c;
    lock_keys_t keys;
    char owner[RDL_OWNER_MAX];
    char mode[2];
    char lease[16];
    char info[300];
    char call[21];   /* this call's number, as in info */
    bool robust;
    int acked;       /* replicas that confirmed the last try (-1: not asked) */
    char prev[RDL_WHO_MAX + 2]; /* the robust marker the last grant replaced */
} attempt_t;

/* One acquire script call.  0 = held (*token set), EOWNERDEAD = held, the
 * previous exclusive hold ended without unlock (robust callers only),
 * ENOTRECOVERABLE, EBUSY (*hint = ms until the holders' leases end, 0
 * unknown; *fence = the counter now), or an error from the client. */
static int try_once(attempt_t *a, bool waiting, bool queued, long long deadline, uint64_t *token,
                    long long *hint, uint64_t *fence, bool *first, long long *sent_at)
{
    rdl_call_t call = { .confirm = true };
    rdl_acquired_t ar;
    const char *argv[RDL_NKEYS + 2];
    size_t lens[RDL_NKEYS + 2];
    char packed[340];
    redisReply *r;
    size_t n;
    int i, rc;

    for (i = 0; i < RDL_NKEYS; i++) {
        argv[i] = a->keys.v[i];
        lens[i] = a->keys.l[i];
    }
    argv[RDL_NKEYS] = a->owner;
    lens[RDL_NKEYS] = strlen(a->owner);
    /* "<mode><waiting><queued><robust><lease>;<info>": see acquire.lua. */
    packed[0] = a->mode[0];
    packed[1] = waiting ? '1' : '0';
    packed[2] = queued ? '1' : '0';
    packed[3] = a->robust ? '1' : '0';
    n = 4 + strlen(a->lease);
    memcpy(packed + 4, a->lease, n - 4);
    packed[n++] = ';';
    memcpy(packed + n, a->info, strlen(a->info));
    n += strlen(a->info);
    argv[RDL_NKEYS + 1] = packed;
    lens[RDL_NKEYS + 1] = n;
    rc = rdl_client_script(a->c, &rdl_script_acquire, RDL_NKEYS, RDL_NKEYS + 2, argv, lens, deadline,
                           &r, &call);
    if (call.sent_at >= 0)
        *sent_at = call.sent_at; /* else nothing went out: keep the last */
    a->acked = call.acked;
    if (rc != 0)
        return rc;
    rc = rdl_reply_acquire(r, &ar);
    freeReplyObject(r);
    *token = ar.token;
    memcpy(a->prev, ar.prev, sizeof a->prev);
    if (rc == EBUSY) {
        *hint = ar.hint;
        *fence = ar.fence;
        *first = ar.first;
    }
    return rc;
}

/* The reply of release.lua, and when the attempt that took effect was
 * sent. */
typedef struct leave_reply {
    rdl_released_t r;
    long long sent_at;
} leave_reply_t;

/* Run release.lua with op "rs", "rx", "rn" (release a shared, exclusive,
 * or inconsistent exclusive hold), "ax" (undo an exclusive grant; arg3 =
 * the robust marker it replaced) or "u" (unwait; arg3 = the waiter's lease,
 * arg4 = its call number); see the script.  arg3, arg4 may be NULL.  0
 * and *out, or an error from the client. */
static int leave(rdlock_client_t *c, const lock_keys_t *keys, const char *owner, const char *op,
                 const char *arg3, const char *arg4, long long deadline, leave_reply_t *out)
{
    rdl_call_t call = { 0 };
    const char *argv[RDL_NKEYS + 4];
    size_t lens[RDL_NKEYS + 4];
    redisReply *r;
    int i, rc, argc = RDL_NKEYS + 2;

    for (i = 0; i < RDL_NKEYS; i++) {
        argv[i] = keys->v[i];
        lens[i] = keys->l[i];
    }
    argv[RDL_NKEYS] = owner;
    lens[RDL_NKEYS] = strlen(owner);
    argv[RDL_NKEYS + 1] = op;
    lens[RDL_NKEYS + 1] = strlen(op);
    if (arg3 != NULL) {
        argv[argc] = arg3;
        lens[argc++] = strlen(arg3);
        if (arg4 != NULL) {
            argv[argc] = arg4;
            lens[argc++] = strlen(arg4);
        }
    }
    rc = rdl_client_script(c, &rdl_script_release, RDL_NKEYS, argc, argv, lens, deadline, &r, &call);
    if (rc != 0)
        return rc;
    rc = rdl_reply_release(r, &out->r);
    freeReplyObject(r);
    out->sent_at = call.sent_at;
    if (rc == 0 && out->r.status == 0 && call.ambiguous && op[0] == 'r') {
        /* An earlier attempt went out and its answer was lost; finding
         * nothing now most likely means that attempt released the hold
         * (a hold lost on its own is reported by the watchdog first). */
        rdl_log(RDLOCK_LOG_WARN, "release: reply lost and the retry found the hold gone; "
                                 "taking it as released by the first attempt");
        out->r.status = 1;
    }
    return rc;
}

/* Tell local waiters what a release or unwait did (mu held): hand the lock
 * to a local thread directly instead of waiting for the pub/sub echo, or
 * let local readers look again. */
static void leave_notify(rdlock_client_t *c, const char *key, size_t keylen, const leave_reply_t *lr)
{
    if (lr->r.kind == 1)
        rdl_waitq_grant(c, key, keylen, lr->r.who, lr->r.wholen, lr->r.token);
    else if (lr->r.kind == 2)
        rdl_waitq_wake(c, key, keylen);
}

/* try_once, and with [replication] wait_replicas, an acquisition that too
 * few replicas confirmed in time is undone and reported as EIO, as if Redis
 * had not answered: a failover now could lose it and let another client
 * take the lock.  Blocking callers keep trying (SPEC section 2). */
static int try_confirmed(attempt_t *a, bool waiting, bool queued, long long deadline, uint64_t *token,
                         long long *hint, uint64_t *fence, bool *first, long long *sent_at)
{
    rdlock_client_t *c = a->c;
    int want = c->cfg.wait_replicas;
    int rc = try_once(a, waiting, queued, deadline, token, hint, fence, first, sent_at);
    leave_reply_t lr;

    if ((rc != 0 && rc != EOWNERDEAD) || want <= 0 || a->acked >= want)
        return rc;
    rdl_log(RDLOCK_LOG_WARN, "%.*s: acquisition confirmed by %d of %d replicas within %d ms: undone",
            (int)a->keys.l[0], a->keys.v[0], a->acked < 0 ? 0 : a->acked, want, c->cfg.wait_timeout_ms);
    if (leave(c, &a->keys, a->owner, a->mode[0] == 'x' ? "ax" : "rs", a->mode[0] == 'x' ? a->prev : NULL, NULL,
              deadline, &lr) == 0) {
        RDL_LOCK(c);
        leave_notify(c, a->keys.v[0], a->keys.l[0], &lr);
        RDL_UNLOCK(c);
    } else {
        rdl_log(RDLOCK_LOG_WARN, "%.*s: could not undo the unconfirmed acquisition: it ends with its lease",
                (int)a->keys.l[0], a->keys.v[0]);
    }
    if (c->cfg.nsentinels > 0)
        rdl_client_pool_flush(c); /* maybe a deposed master, without replicas */
    /* Refused for want of permission: waiting cannot heal that. */
    return a->acked == -2 ? EACCES : EIO;
}

/* Holder info "1;<pid>;<thread>;<call>;<host>" (see acquire.lua), without
 * stdio: this runs on every acquisition.  buf holds 300 bytes; the call
 * number also goes to call (21 bytes). */
static void info_make(char *buf, char *call, rdlock_client_t *c, unsigned thread)
{
    static unsigned long long calls;
    size_t n = 0, hl = strnlen(c->host, 255), cl;
    buf[n++] = '1';
    buf[n++] = ';';
    n += rdl_fmt_u64(buf + n, (unsigned long long)c->pid);
    buf[n++] = ';';
    n += rdl_fmt_u64(buf + n, thread);
    buf[n++] = ';';
    /* Tells this call's own grant from a leftover of an earlier hold. */
    cl = rdl_fmt_u64(call, __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED));
    call[cl] = '\0';
    memcpy(buf + n, call, cl);
    n += cl;
    buf[n++] = ';';
    memcpy(buf + n, c->host, hl);
    buf[n + hl] = '\0';
}

/* A hand-over announced to waiter w (mu held): is its lease start known
 * closely enough to trust the message without another look?  The server
 * gave us the lock after every look whose answer showed a fencing counter
 * below the hand-over's token, so the latest such look's sending, ours
 * (own_busy: our last look answered busy) or another local waiter's, is a
 * safe (early) start; a look that got no answer proves nothing.  If that
 * leaves less than a third of the lease, the watchdog might not reach the
 * server in time: the caller looks once more instead (acquire.lua restarts
 * the lease of a hand-over it finds).  *start: the estimate when trusted. */
static bool grant_fresh(const rdlock_client_t *c, const rdl_waitq_t *q, const rdl_waiter_t *w, unsigned lease,
                        long long own_busy, long long *start)
{
    long long t = own_busy;
    if (c->cfg.wait_replicas > 0)
        return false; /* only our own look can WAIT for the replicas to have it */
    if (q->look_fence < w->token && q->look_sent > t)
        t = q->look_sent;
    if (t + lease - rdl_now_ms() < (long long)lease / 3)
        return false;
    *start = t;
    return true;
}

/* Record a fresh hold (mutex held) and make sure the watchdog knows. */
static void record_hold(rdlock_client_t *c, rdl_handle_t *h, rdl_hold_t *hold, unsigned thread,
                        char mode, uint64_t token, unsigned lease, long long sent_at)
{
    const rdl_config_t *cfg = &c->cfg;
    hold->thread = thread;
    hold->mode = mode;
    hold->api = h->api;
    hold->count = 1;
    hold->token = token;
    hold->serial = ++c->next_serial;
    hold->lease_ms = lease;
    /* A configured interval that does not fit this lock's own lease falls
     * back to a third of it. */
    hold->interval_ms = cfg->watchdog_interval_ms != 0 && cfg->watchdog_interval_ms < lease
                            ? cfg->watchdog_interval_ms
                            : (lease / 3 ? lease / 3 : 1);
    hold->max_hold_ms = cfg->max_hold_ms;
    hold->watchdog = h->watchdog >= 0 ? h->watchdog != 0 : cfg->watchdog_enabled;
    hold->acquired_at = sent_at;
    hold->renew_at = sent_at + hold->interval_ms;
    hold->expires_at = sent_at + lease;
    hold->lostcb = h->lostcb;
    hold->lostarg = h->lostarg;
    hold->handle = h;
    /* Insert cannot fail: the table grows before it is full, and a failed
     * grow still leaves room in the existing buckets. */
    rdl_hold_insert(c, hold);
    if (hold->watchdog) {
        if (c->wd_next == 0 || hold->renew_at < c->wd_next) {
            c->wd_next = hold->renew_at;
            if (c->bg_running)
                rdl_events_poke(c); /* it may be asleep with a longer timeout */
        }
        if (rdl_events_start(c) != 0)
            rdl_log(RDLOCK_LOG_ERROR, "cannot start the watchdog thread; lock %.*s will not be renewed",
                    (int)hold->namelen, hold->name);
    }
}

int rdl_acquire(rdl_handle_t *h, char mode, int how, long long deadline)
{
    rdlock_client_t *c;
    rdl_hold_t *hold;
    rdl_waitq_t *q = NULL;
    rdl_waiter_t me;
    attempt_t a;
    unsigned thread, lease;
    uint64_t token = 0;
    long long sent_at = 0, busy_sent = 0;
    bool queued = false;
    int rc;

    if ((rc = rdl_handle_resolve(h, &c)) != 0)
        return rc;
    thread = rdl_thread_no();

    RDL_LOCK(c);
    hold = rdl_hold_find(c, h->key, h->keylen, thread);
    if (hold != NULL) {
        rc = relock(h, hold, mode, how);
        RDL_UNLOCK(c);
        return rc;
    }
    RDL_UNLOCK(c);

    /* Allocate everything before taking the lock on the server, so that a
     * hold we got is never dropped for want of memory. */
    hold = rdl_hold_new(h);
    if (hold == NULL)
        return ENOMEM;
    memset(&a, 0, sizeof a);
    memset(&me, 0, sizeof me);
    me.thread = thread;
    a.c = c;
    if (keys_make(&a.keys, h->key, h->keylen) != 0) {
        rdl_hold_free(hold);
        return ENOMEM;
    }
    lease = rdl_handle_lease(h);
    rdl_owner(c, thread, a.owner);
    a.mode[0] = mode;
    a.robust = mode == 'x' && h->robust;
    a.lease[rdl_fmt_u64(a.lease, lease)] = '\0';
    info_make(a.info, a.call, c, thread);

    for (;;) {
        long long now, until, mark_by, hint = 0;
        unsigned long gen0 = 0;
        unsigned wait_ms;
        uint64_t fence = 0;
        bool first = false;

        if (q != NULL) {
            RDL_LOCK(c);
            if (me.granted && grant_fresh(c, q, &me, lease, busy_sent, &sent_at)) {
                RDL_UNLOCK(c);
                token = me.token;
                rc = 0;
                break;
            }
            /* A hand-over whose lease we cannot date closely enough is
             * confirmed by the look below, which also restarts its lease. */
            me.granted = false;
            gen0 = q->gen;
            q->last_poll = rdl_now_ms();
            RDL_UNLOCK(c);
        }
        /* When the attempt that took effect was sent: the local,
         * conservative start of the lease (also for a hand-over, which
         * comes after our last look). */
        rc = try_confirmed(&a, how != RDL_TRY, queued, how == RDL_TIMED ? deadline : -1, &token, &hint, &fence,
                           &first, &sent_at);
        if (rc == 0 || rc == EOWNERDEAD)
            break;
        if (rc == EBUSY || rc == EIO) /* after EIO we may have queued: assume so */
            queued = how != RDL_TRY;
        if (rc == EBUSY) {
            /* Hand-overs after this look carry tokens above the counter we
             * just saw; older messages are stale.  Set, not raised: after a
             * restart without persistence the counter starts again low. */
            busy_sent = sent_at; /* answered: the server saw it */
            RDL_LOCK(c);
            me.floor = fence;
            if (q != NULL) {
                if (q->last_grant > fence)
                    q->last_grant = fence;
                if (sent_at >= q->look_sent) {
                    q->look_sent = sent_at;
                    q->look_fence = fence;
                }
            }
            RDL_UNLOCK(c);
        }
        if (how == RDL_TRY || (rc != EBUSY && rc != EIO) || (rc == EIO && c->cfg.fail_fast))
            break;
        now = rdl_now_ms();
        if (how == RDL_TIMED && now >= deadline) {
            rc = rc == EBUSY ? ETIMEDOUT : EIO;
            break;
        }
        if (q == NULL) {
            /* Subscribe, then look again at once: a release between our
             * attempt and the subscription would otherwise go unheard. */
            RDL_LOCK(c);
            q = rdl_waitq_join(c, h->key, h->keylen,
                               how == RDL_TIMED ? deadline : now + c->cfg.command_timeout_ms, &me);
            RDL_UNLOCK(c);
            if (q != NULL && rc == EBUSY)
                continue;
        }
        /* Re-check when the holders' leases would end, but at least every
         * retry interval (and every third of our lease, which keeps our
         * queue mark alive and a hand-over's lease estimate fresh); while
         * Redis is away, every retry interval. */
        wait_ms = c->cfg.retry_interval_ms;
        if (wait_ms > lease / 3 && lease >= 3)
            wait_ms = lease / 3;
        if (rc == EBUSY && hint > 0 && hint < wait_ms)
            wait_ms = (unsigned)hint;
        wait_ms += rdl_jitter(c->cfg.retry_jitter_ms);
        /* From this look's sending, not its answer: so the server sees our
         * queue mark refreshed every wait_ms, whatever the round trip
         * (acquire.lua skips a head silent for half its lease). */
        until = (rc == EBUSY ? sent_at : now) + wait_ms;
        mark_by = mode == 'x' && rc == EBUSY ? sent_at + lease / 3 : LLONG_MAX;
        if (until > mark_by)
            until = mark_by; /* jitter must not silence our queue mark */
        if (until < now)
            until = now;
        if (how == RDL_TIMED && until > deadline)
            until = deadline;
        if (q == NULL) {
            rdl_sleep_ms(until - now);
            continue;
        }
        /* A queued writer's own look is also what keeps its place in
         * line (acquire.lua drops a mark silent for half its lease): it
         * never leaves that to others for more than a third of it. */
        RDL_LOCK(c);
        while (q->gen == gen0 && !me.granted) {
            if (rdl_cond_wait_until(&q->cond, &c->mu, until) != ETIMEDOUT)
                continue;
            /* Threads of one process share the re-check: if another one
             * looked in the meantime, wait a further period.  Not the head
             * of the writers' queue: only it may take a lock whose lease
             * ran out unreleased, so it always looks itself. */
            now = rdl_now_ms();
            if (rc == EBUSY && !first && q->last_poll > sent_at && (how != RDL_TIMED || now < deadline) &&
                now - q->last_poll < (long long)wait_ms && now < mark_by) {
                until = q->last_poll + wait_ms;
                if (until > mark_by)
                    until = mark_by;
                if (how == RDL_TIMED && until > deadline)
                    until = deadline;
                continue;
            }
            break;
        }
        RDL_UNLOCK(c);
    }

    if (rc != 0 && rc != EOWNERDEAD && queued) {
        /* Giving up: leave the queue so we hold nobody back.  The lock may
         * have been handed to us meanwhile: then we have it after all. */
        leave_reply_t lr;
        bool granted;
        RDL_LOCK(c);
        granted = me.granted && grant_fresh(c, q, &me, lease, busy_sent, &sent_at);
        RDL_UNLOCK(c);
        if (granted) {
            token = me.token;
            rc = 0;
        } else if (leave(c, &a.keys, a.owner, "u", a.lease, a.call, rdl_now_ms() + c->cfg.command_timeout_ms,
                         &lr) == 0) {
            if (lr.r.status == 2 && c->cfg.wait_replicas > 0) {
                /* Ours after all, but not yet confirmed on the replicas:
                 * one more look does that (or undoes it).  As a try, so
                 * that a lock lost meanwhile does not queue us again. */
                long long hint2;
                uint64_t fence2;
                bool first2;
                int rc2 = try_confirmed(&a, false, false, rdl_now_ms() + c->cfg.command_timeout_ms, &token,
                                        &hint2, &fence2, &first2, &sent_at);
                if (rc2 == 0 || rc2 == EOWNERDEAD)
                    rc = rc2;
            } else if (lr.r.status == 2) {
                token = lr.r.token;
                sent_at = lr.sent_at; /* the script restarted the lease */
                rc = 0;
            } else {
                RDL_LOCK(c);
                leave_notify(c, h->key, h->keylen, &lr);
                RDL_UNLOCK(c);
            }
        }
    }
    RDL_LOCK(c);
    if (q != NULL)
        rdl_waitq_leave(c, q, &me);
    if (rc == 0 || rc == EOWNERDEAD) {
        record_hold(c, h, hold, thread, mode, token, lease, sent_at);
        hold->inconsistent = rc == EOWNERDEAD;
        hold = NULL;
    }
    RDL_UNLOCK(c);
    rdl_hold_free(hold);
    free(a.keys.buf);
    return rc;
}

int rdl_lock_call(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic, char mode, int how,
                  clockid_t clock, const struct timespec *abstime)
{
    rdl_handle_t *h;
    long long deadline = -1;
    int rc = 0;
    if (how == RDL_TIMED)
        rc = rdl_deadline_from(clock, abstime, &deadline);
    if (rc == 0)
        rc = rdl_handle_get(obj, magic, static_magic, &h);
    return rc != 0 ? rc : rdl_acquire(h, mode, how, deadline);
}

/* Find the caller's hold through h's API (mutex held); NULL if none. */
static rdl_hold_t *caller_hold(rdlock_client_t *c, rdl_handle_t *h)
{
    rdl_hold_t *hold = rdl_hold_find(c, h->key, h->keylen, rdl_thread_no());
    return hold != NULL && hold->api == h->api ? hold : NULL;
}

int rdl_release(rdl_handle_t *h)
{
    rdlock_client_t *c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
    rdl_hold_t *hold;
    lock_keys_t keys;
    leave_reply_t lr;
    char owner[RDL_OWNER_MAX];
    const char *how;
    bool was_lost;
    int rc;

    if (c == NULL)
        return EPERM; /* never acquired through this handle */
    RDL_LOCK(c);
    hold = caller_hold(c, h);
    if (hold == NULL || hold->releasing) {
        RDL_UNLOCK(c);
        return EPERM;
    }
    if (hold->count > 1) {
        hold->count--; /* inner unlock: local, no round trip */
        RDL_UNLOCK(c);
        return 0;
    }
    /* A hold the watchdog reported lost still gets a release: the server
     * may yet have a field of ours (its deadline can be later than our
     * conservative estimate), which must not linger.  The answer is
     * ENOLCK whatever the server says. */
    was_lost = hold->lost;
    hold->releasing = true;
    /* An EOWNERDEAD hold unlocked without rdlock_consistent() makes the
     * lock not recoverable (POSIX robust mutexes). */
    how = hold->mode == 's' ? "rs" : hold->inconsistent ? "rn" : "rx";
    rdl_owner(c, hold->thread, owner);
    RDL_UNLOCK(c);

    rc = keys_make(&keys, h->key, h->keylen);
    if (rc == 0) {
        rc = leave(c, &keys, owner, how, NULL, NULL, -1, &lr);
        free(keys.buf);
        if (rc == 0 && lr.r.status != 1)
            rc = ENOLCK;
    }

    RDL_LOCK(c);
    if (was_lost) {
        if (rc == 0 || rc == ENOLCK)
            leave_notify(c, h->key, h->keylen, &lr);
        rdl_hold_remove(c, hold);
        RDL_UNLOCK(c);
        rdl_hold_free(hold);
        return ENOLCK; /* reported already, by the watchdog */
    }
    if (rc == 0 || rc == ENOLCK) {
        rdl_hold_remove(c, hold);
        leave_notify(c, h->key, h->keylen, &lr);
    } else {
        hold->releasing = false; /* still held and renewed: unlock may be retried */
        hold = NULL;
    }
    RDL_UNLOCK(c);
    if (rc == ENOLCK)
        rdl_log(RDLOCK_LOG_WARN, "unlock of %s: the lease had been lost before the unlock", h->name);
    rdl_hold_free(hold);
    return rc;
}

int rdl_holdcount(rdl_handle_t *h, unsigned *count)
{
    rdlock_client_t *c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
    rdl_hold_t *hold;
    *count = 0;
    if (c == NULL)
        return 0;
    RDL_LOCK(c);
    hold = caller_hold(c, h);
    if (hold != NULL)
        *count = hold->count;
    RDL_UNLOCK(c);
    return 0;
}

int rdl_token(rdl_handle_t *h, uint64_t *token)
{
    rdlock_client_t *c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
    rdl_hold_t *hold;
    int rc = EPERM;
    if (c == NULL)
        return EPERM;
    RDL_LOCK(c);
    hold = caller_hold(c, h);
    if (hold != NULL) {
        *token = hold->token;
        rc = 0;
    }
    RDL_UNLOCK(c);
    return rc;
}

int rdl_consistent(rdl_handle_t *h)
{
    rdlock_client_t *c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
    rdl_hold_t *hold;
    int rc = EINVAL;
    if (!h->robust || c == NULL)
        return EINVAL;
    RDL_LOCK(c);
    hold = caller_hold(c, h);
    if (hold != NULL && hold->inconsistent) {
        /* Local only: the release then clears the marker as a clean one. */
        hold->inconsistent = false;
        rc = 0;
    }
    RDL_UNLOCK(c);
    return rc;
}

int rdl_lock_script(rdlock_client_t *c, const rdl_script_t *script, const char *key, size_t keylen,
                    redisReply **reply)
{
    lock_keys_t keys;
    int rc = keys_make(&keys, key, keylen);
    if (rc != 0)
        return rc;
    rc = rdl_client_script(c, script, RDL_NKEYS, RDL_NKEYS, keys.v, keys.l, -1, reply, NULL);
    free(keys.buf);
    return rc;
}
