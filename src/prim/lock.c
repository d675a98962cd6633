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

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/ident.h"
#include "client/pool.h"
#include "core/clients.h"
#include "core/events.h"
#include "core/exit.h"
#include "core/hold.h"
#include "core/waitq.h"
#include "core/watchdog.h"
#include "exec/call.h"
#include "exec/exec.h"
#include "prim/handover.h"
#include "prim/lock.h"
#include "prim/lock_keys.h"
#include "proto/reply.h"
#include "proto/script.h"
#include "proto/slotmap.h"
#include "topology/topology.h"

#define RDL_COUNT_MAX ((unsigned)INT_MAX) /* EAGAIN past 2^31-1 */

/* How a lock hold ends at process exit (exit.h). */
static bool lock_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline);
static const rdl_exit_ender_t lock_exit = { RDL_EXIT_LOCKS, RDL_HOLD_LOCK, lock_exit_end, NULL };

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

/* One acquire call of one thread: its identity on the server (owner and
 * call number, see acquire.lua), its arguments, and what its attempts so
 * far left behind. */
typedef struct attempt {
    rdlock_client_t *c;
    rdl_lock_keys_t keys;
    char owner[RDL_OWNER_MAX];
    char mode;
    char lease[16];
    unsigned lease_ms;
    char claim[16];  /* how long a hand-over to us waits for our claim */
    unsigned claim_ms;
    bool listed;     /* waits for a hand-over in BLPOP (handover.h) */
    int listen_fails; /* BLPOP waits in a row that got no answer */
    char info[300];
    char call[21];   /* this call's number, as in info */
    unsigned thread; /* the owner thread's number */
    bool new_call;   /* the next attempt is a call of its own (try_once) */
    bool robust;
    int acked;       /* replicas that confirmed the last try (-1: not asked) */
    int wanted;      /* ... and how many it asked for (0: none) */
    char prev[RDL_WHO_MAX + 2]; /* the robust marker the last grant replaced */
    long long unsure_until; /* until when an attempt that got no answer may
                               still act on the server (monotonic ms, 0 none) */
    /* What the last answered try said. */
    uint64_t token;  /* held */
    long long hint;  /* busy: ms until the holders' leases end, 0 unknown */
    uint64_t fence;  /* busy: the fencing counter now */
    bool first;      /* busy: we head the writers' queue */
    long long sent_at; /* when the attempt that took effect was sent */
} attempt_t;

#define RDL_VOID_MAX 3 /* void attempts in a row (clock trouble) before EIO */

static void info_make(char *buf, char *call, rdlock_client_t *c, unsigned thread);

/* One acquire script call.  0 = held (a->token), EOWNERDEAD = held, the
 * previous exclusive hold ended without unlock (robust callers only),
 * ENOTRECOVERABLE, EBUSY (a->hint, a->fence, a->first), or an error from
 * the client. */
static int try_once(attempt_t *a, bool waiting, bool queued, long long deadline)
{
    rdl_call_t call = { .confirm = true };
    rdl_acquired_t ar;
    const char *argv[RDL_LOCK_NKEYS_ACQUIRE + 2];
    size_t lens[RDL_LOCK_NKEYS_ACQUIRE + 2];
    char packed[360];
    size_t n, l;
    int i, rc, voids = 0;

    if (a->new_call) {
        /* What the last attempt was granted was given back: on a quorum
         * a grant without majority ('aq', lock_quorum.c), with
         * wait_replicas one too few replicas confirmed ('ax').  Were
         * this attempt of the same call, a late or duplicated copy of that
         * give-back could take back what this attempt is granted, and the
         * hold would stand on fewer masters than the client counts.  A new
         * call number makes this attempt a hold the old requests cannot
         * name (release.lua matches the call); the old call's leftovers are
         * older, so acquire.lua starts afresh over them, and its late
         * attempts find a newer call here and are void. */
        info_make(a->info, a->call, a->c, a->thread);
        a->new_call = false;
    }
    for (i = 0; i < RDL_LOCK_NKEYS_ACQUIRE; i++) {
        argv[i] = a->keys.v[i];
        lens[i] = a->keys.l[i];
    }
    argv[RDL_LOCK_NKEYS_ACQUIRE] = a->owner;
    lens[RDL_LOCK_NKEYS_ACQUIRE] = strlen(a->owner);
    /* "<mode><waiting><queued><robust><lease>;<claim>;<valid until>;<info>":
     * see acquire.lua; the client stamps <valid until> per attempt. */
    packed[0] = a->mode;
    packed[1] = waiting ? '1' : '0';
    packed[2] = queued ? '1' : '0';
    packed[3] = a->robust ? '1' : '0';
    n = 4;
    l = strlen(a->lease);
    memcpy(packed + n, a->lease, l);
    n += l;
    packed[n++] = ';';
    l = strlen(a->claim);
    memcpy(packed + n, a->claim, l);
    n += l;
    packed[n++] = ';';
    call.stamp = packed + n;
    n += RDL_STAMP_LEN;
    packed[n++] = ';';
    l = strlen(a->info);
    memcpy(packed + n, a->info, l);
    n += l;
    argv[RDL_LOCK_NKEYS_ACQUIRE + 1] = packed;
    lens[RDL_LOCK_NKEYS_ACQUIRE + 1] = n;
    for (;;) {
        rc = a->c->exec->acquire(a->c, argv, lens, RDL_LOCK_NKEYS_ACQUIRE, RDL_LOCK_NKEYS_ACQUIRE + 2, a->lease_ms, deadline,
                                 &ar, &call);
        if (call.unsure_until > a->unsure_until)
            a->unsure_until = call.unsure_until;
        if (call.sent_at >= 0)
            a->sent_at = call.sent_at; /* else nothing went out: keep the last */
        a->acked = call.acked;
        a->wanted = call.wanted;
        if (rc != ESTALE)
            break;
        /* Void on arrival: our idea of the server's clock was off (a
         * clock step, a failover to a server whose clock differs).  The
         * reply brought a fresh sample: once more, at once. */
        if (++voids >= RDL_VOID_MAX) {
            rdl_log(RDLOCK_LOG_ERROR, "%.*s: the server's clock keeps moving under the request deadlines",
                    (int)a->keys.l[0], a->keys.v[0]);
            rc = EIO;
            break;
        }
    }
    /* Where an attempt that did not take the lock may have been granted
     * and given back somewhere (exec.h), the next one is a call of its
     * own. */
    if (a->c->exec->caps & RDL_EXEC_GRANTS_UNDONE)
        a->new_call = rc != 0 && rc != EOWNERDEAD;
    if (rc != 0 && rc != EOWNERDEAD && rc != EBUSY)
        return rc;
    a->token = ar.token;
    memcpy(a->prev, ar.prev, sizeof a->prev);
    if (rc == EBUSY) {
        a->hint = ar.hint;
        a->fence = ar.fence;
        a->first = ar.first;
    }
    return rc;
}

/* The reply of release.lua, and when the attempt that took effect was
 * sent. */
typedef struct leave_reply {
    rdl_released_t r;
    long long sent_at;
    bool ambiguous; /* an earlier attempt got no answer and may have acted */
} leave_reply_t;

static int leave5(rdlock_client_t *c, const rdl_lock_keys_t *keys, const char *owner, const char *op,
                  const char *call, const char *arg4, const char *arg5, long long deadline, leave_reply_t *out);

/* Run release.lua with op "rs", "rx", "rn" (release a shared, exclusive,
 * or inconsistent exclusive hold; followed by digits: how long to keep the
 * caller's finished-call mark), "ax" (undo an exclusive grant; arg4 =
 * the robust marker it replaced) or "u" (unwait; arg4 = the waiter's
 * lease), about the hold or call number `call`; see the script.  arg4 may
 * be NULL.  0 and *out, or an error from the client. */
static int leave(rdlock_client_t *c, const rdl_lock_keys_t *keys, const char *owner, const char *op,
                 const char *call, const char *arg4, long long deadline, leave_reply_t *out)
{
    return leave5(c, keys, owner, op, call, arg4, NULL, deadline, out);
}

/* leave() with a fifth argument: for "rx" on Redlock, the dead owner's
 * robust marker to clear where this hold is not (release.lua). */
static int leave5(rdlock_client_t *c, const rdl_lock_keys_t *keys, const char *owner, const char *op,
                  const char *call, const char *arg4, const char *arg5, long long deadline, leave_reply_t *out)
{
    const char *argv[RDL_LOCK_NKEYS_RELEASE + 5];
    size_t lens[RDL_LOCK_NKEYS_RELEASE + 5];
    char keep[24];
    int i, argc = RDL_LOCK_NKEYS_RELEASE + 3;

    for (i = 0; i < RDL_LOCK_NKEYS_RELEASE; i++) {
        argv[i] = keys->v[i];
        lens[i] = keys->l[i];
    }
    argv[RDL_LOCK_NKEYS_RELEASE] = owner;
    lens[RDL_LOCK_NKEYS_RELEASE] = strlen(owner);
    argv[RDL_LOCK_NKEYS_RELEASE + 1] = op;
    lens[RDL_LOCK_NKEYS_RELEASE + 1] = strlen(op);
    argv[RDL_LOCK_NKEYS_RELEASE + 2] = call;
    lens[RDL_LOCK_NKEYS_RELEASE + 2] = strlen(call);
    if (op[0] == 'r') {
        /* Keep the proof of the release for as long as our retries of it
         * can take (each: a command timeout and a backoff of <= 640 ms). */
        long long ms = (long long)(c->cfg.command_retries + 1) * (c->cfg.command_timeout_ms + 640) + 1000;
        keep[rdl_fmt_u64(keep, (unsigned long long)ms)] = '\0';
        arg4 = keep;
    }
    if (arg4 != NULL) {
        argv[argc] = arg4;
        lens[argc++] = strlen(arg4);
        if (arg5 != NULL) {
            argv[argc] = arg5;
            lens[argc++] = strlen(arg5);
        }
    }
    return c->exec->release(c, argv, lens, RDL_LOCK_NKEYS_RELEASE, argc, deadline, &out->r, &out->sent_at,
                            &out->ambiguous);
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
 * take the lock.  Blocking callers keep trying (docs/CONTRACT.md section 2). */
static int try_confirmed(attempt_t *a, bool waiting, bool queued, long long deadline)
{
    rdlock_client_t *c = a->c;
    int rc = try_once(a, waiting, queued, deadline);
    int want = a->wanted; /* wait_replicas, or with all those online then */
    leave_reply_t lr;

    if ((rc != 0 && rc != EOWNERDEAD) || want <= 0 || a->acked >= want)
        return rc;
    rdl_log(RDLOCK_LOG_WARN, "%.*s: acquisition confirmed by %d of %d replicas within %d ms: undone",
            (int)a->keys.l[0], a->keys.v[0], a->acked < 0 ? 0 : a->acked, want, c->cfg.wait_timeout_ms);
    a->new_call = true; /* try_once says why */
    if (leave(c, &a->keys, a->owner, a->mode == 'x' ? "ax" : "rs", a->call, a->mode == 'x' ? a->prev : NULL,
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
 * number also goes to call (21 bytes).  Call numbers increase for each
 * thread (one call at a time), which is what lets the server tell a late
 * request of an older call from a newer one. */
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
    cl = rdl_fmt_u64(call, __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED));
    call[cl] = '\0';
    memcpy(buf + n, call, cl);
    n += cl;
    buf[n++] = ';';
    memcpy(buf + n, c->host, hl);
    buf[n + hl] = '\0';
}

/* Record a fresh hold (mutex held) and make sure the watchdog knows.
 * Returns the record, which may have moved (a dead owner's marker is
 * stored after it). */
static rdl_hold_t *record_hold(rdlock_client_t *c, rdl_handle_t *h, rdl_hold_t *hold, unsigned thread,
                               const attempt_t *a, unsigned lease)
{
    const rdl_config_t *cfg = &c->cfg;
    hold->thread = thread;
    hold->mode = a->mode;
    hold->api = h->api;
    hold->count = 1;
    hold->token = a->token;
    hold->call = strtoull(a->call, NULL, 10);
    hold->serial = ++c->next_serial;
    rdl_hold_schedule(hold, c, lease, a->sent_at);
    /* Kept as a span after the acquire's send: an earlier moment has
     * passed by the time anyone waits for it. */
    if (a->unsure_until > hold->acquired_at)
        hold->unsure_ms = (unsigned)(a->unsure_until - hold->acquired_at);
    hold->watchdog = h->watchdog >= 0 ? h->watchdog != 0 : cfg->watchdog_enabled;
    hold->handle = h; /* its lost callback is the handle's: rdl_hold_lostcb */
    if ((c->exec->caps & RDL_EXEC_DEAD_OWNER) && a->prev[0] != '\0' && a->mode == 'x')
        /* lock_quorum.c; none if short of memory: not cleared elsewhere */
        hold = rdl_hold_set_dead_owner(hold, a->prev);
    /* Insert cannot fail: the table grows before it is full, and a failed
     * grow still leaves room in the existing buckets. */
    rdl_hold_insert(c, hold);
    rdl_watchdog_add(c, hold);
    return hold;
}

/* Set up the attempt of h's name in mode for the calling thread. */
static int attempt_init(attempt_t *a, rdlock_client_t *c, const rdl_handle_t *h, unsigned thread, char mode,
                        unsigned lease)
{
    unsigned claim;
    memset(a, 0, sizeof *a);
    a->c = c;
    a->thread = thread;
    rdl_owner(c, thread, a->owner);
    if (rdl_lock_keys_make(&a->keys, h->key, h->keylen, h->slot, a->owner) != 0)
        return ENOMEM;
    a->mode = mode;
    a->robust = mode == 'x' && h->robust;
    a->lease[rdl_fmt_u64(a->lease, lease)] = '\0';
    a->lease_ms = lease;
    /* A hand-over waits this long for our claim: twice the longest round
     * trip we tolerate, and never more than half a lease (a live waiter
     * looks every third of its lease even without a wake-up).  On a
     * quorum, 0: no hand-over, we take a free lock ourselves
     * (lock_quorum.c says why). */
    claim = 2 * (unsigned)c->cfg.command_timeout_ms;
    if (claim > lease / 2)
        claim = lease / 2 ? lease / 2 : 1;
    if (!(c->exec->caps & RDL_EXEC_HANDOVER))
        claim = 0;
    a->claim[rdl_fmt_u64(a->claim, claim)] = '\0';
    a->claim_ms = claim;
    info_make(a->info, a->call, c, thread);
    return 0;
}

/* The re-check schedule of a waiter that was told busy (rc EBUSY) or
 * could not reach Redis (EIO): when it looks next (monotonic ms), and for
 * wait_turn the period (*wait_out) and when its queue mark needs its own
 * look at the latest (*mark_out). */
static long long turn_until(rdlock_client_t *c, const attempt_t *a, int rc, int how, long long deadline,
                            unsigned lease, unsigned *wait_out, long long *mark_out)
{
    long long now = rdl_now_ms(), until, mark_by;
    unsigned wait_ms;

    /* Re-check when the holders' leases would end, but at least every
     * retry interval (and every third of our lease, which keeps our queue
     * mark alive); while Redis is away, every retry interval. */
    wait_ms = c->cfg.retry_interval_ms;
    /* A queued writer in BLPOP that is not the head hears its hand-over
     * by push: its own looks only keep its mark fresh and find a
     * hand-over that lapsed to a dead head in front of it, for which one
     * claim window is soon enough (and they would cost the server a look
     * per waiter and period, where pub/sub waiters share theirs). */
    if (a->listed && rc == EBUSY && !a->first && a->claim_ms > wait_ms)
        wait_ms = a->claim_ms;
    if (wait_ms > lease / 3 && lease >= 3)
        wait_ms = lease / 3;
    if (rc == EBUSY && a->hint > 0 && a->hint < wait_ms)
        wait_ms = (unsigned)a->hint;
    wait_ms += rdl_jitter(c->cfg.retry_jitter_ms);
    /* From this look's sending, not its answer: so the server sees our
     * queue mark refreshed every wait_ms, whatever the round trip
     * (acquire.lua skips a head silent for half its lease). */
    until = (rc == EBUSY ? a->sent_at : now) + wait_ms;
    mark_by = a->mode == 'x' && rc == EBUSY ? a->sent_at + lease / 3 : LLONG_MAX;
    if (until > mark_by)
        until = mark_by; /* jitter must not silence our queue mark */
    if (until < now)
        until = now;
    if (how == RDL_TIMED && until > deadline)
        until = deadline;
    if (wait_out != NULL)
        *wait_out = wait_ms;
    if (mark_out != NULL)
        *mark_out = mark_by;
    return until;
}

/* Wait for a wake-up of q, a hand-over to me, or the next re-check
 * (turn_until) (mu not held). */
static void wait_turn(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *me, unsigned long gen0, const attempt_t *a,
                      int rc, int how, long long deadline, unsigned lease)
{
    rdl_waitq_share_t share;
    unsigned wait_ms;
    long long mark_by, until = turn_until(c, a, rc, how, deadline, lease, &wait_ms, &mark_by);

    if (q == NULL) {
        rdl_sleep_until(until);
        return;
    }
    /* A queued writer's own look is also what keeps its place in line
     * (acquire.lua drops a mark silent for half its lease): it never
     * leaves that to others for more than a third of it.  Threads of one
     * process share the re-check, except the head of the writers' queue:
     * only it may take a lock whose lease ran out unreleased, so it always
     * looks itself. */
    share.since = a->sent_at;
    share.period = wait_ms;
    share.limit = how == RDL_TIMED && deadline < mark_by ? deadline : mark_by;
    RDL_LOCK(c);
    rdl_waitq_sleep(c, q, me, gen0, until, rc == EBUSY && !a->first ? &share : NULL);
    RDL_UNLOCK(c);
}

/* A queued writer's wait for the next re-check (turn_until), in BLPOP on
 * its grant list (handover.h).  0: the lock was handed to this call and
 * its lease started (a->token, a->sent_at); else rdl_handover_wait's
 * EAGAIN, ENOTSUP, EIO. */
static int handover_turn(attempt_t *a, int how, long long deadline, unsigned lease)
{
    rdlock_client_t *c = a->c;
    rdl_handover_t w = {
        .key = a->keys.v[0],
        .keylen = a->keys.l[0],
        .list = a->keys.v[RDL_LOCK_KEY_GRANTS],
        .listlen = a->keys.l[RDL_LOCK_KEY_GRANTS],
        .owner = a->owner,
        .call = a->call,
        .lease = a->lease,
        .floor = a->fence,
    };
    long long sent;
    uint64_t token;
    int rc = rdl_handover_wait(c, &w, turn_until(c, a, EBUSY, how, deadline, lease, NULL, NULL), &token, &sent);
    if (rc != 0)
        return rc;
    a->token = token;
    a->sent_at = sent; /* the renewal that started the lease came after */
    return 0;
}

/* Giving up (rc an error): nothing of this call may stay behind on the
 * server.  First every attempt without an answer must be void there; then
 * one unwait removes our queue mark, or finds that the lock was given to
 * this call after all (a hand-over, or an attempt whose answer got lost):
 * then we have it, and return 0 (or EOWNERDEAD).  Else rc. */
static int give_up(attempt_t *a, const rdl_handle_t *h, bool queued, int rc)
{
    rdlock_client_t *c = a->c;
    leave_reply_t lr;

    if (!queued && a->unsure_until == 0)
        return rc; /* every attempt was answered, none took or queued */
    rdl_sleep_until(a->unsure_until);
    if (leave(c, &a->keys, a->owner, "u", a->call, a->lease, rdl_now_ms() + c->cfg.command_timeout_ms, &lr) !=
        0) {
        if (a->unsure_until != 0)
            rdl_log(RDLOCK_LOG_WARN, "%s: an attempt without answer may have taken the lock, and Redis "
                                     "cannot be told to undo it: it ends with its lease", h->name);
        return rc;
    }
    if (lr.r.status == 2 && rdl_config_wait_on(&c->cfg)) {
        /* Ours after all, but not yet confirmed on the replicas: one more
         * look does that (or undoes it).  As a try, so that a lock lost
         * meanwhile does not queue us again. */
        int rc2 = try_confirmed(a, false, false, rdl_now_ms() + c->cfg.command_timeout_ms);
        return rc2 == 0 || rc2 == EOWNERDEAD ? rc2 : rc;
    }
    if (lr.r.status == 2) {
        a->token = lr.r.token;
        a->sent_at = lr.sent_at; /* the script restarted the lease */
        return 0;
    }
    RDL_LOCK(c);
    leave_notify(c, h->key, h->keylen, &lr);
    RDL_UNLOCK(c);
    return rc;
}

/* The state of one rdl_acquire past its first look at the local holds:
 * the attempt (with the client, the mode and the lease), the caller's
 * place in the local wait queue of the name, and whether it may have
 * queued on the server. */
typedef struct acquire_loop {
    attempt_t a;
    rdl_handle_t *h;
    rdl_waitq_t *q; /* the local wait queue, once joined (NULL before) */
    rdl_waiter_t me;
    int how;
    long long deadline;
    bool queued; /* an attempt may have left a queue mark on the server */
} acquire_loop_t;

/* Set up l for the calling thread's acquire of h's name in mode.  0, or
 * ENOMEM (attempt_init: nothing to undo). */
static int acquire_setup(acquire_loop_t *l, rdlock_client_t *c, rdl_handle_t *h, unsigned thread, char mode,
                         int how, long long deadline)
{
    l->h = h;
    l->q = NULL;
    l->how = how;
    l->deadline = deadline;
    l->queued = false;
    if (attempt_init(&l->a, c, h, thread, mode, rdl_handle_lease(h)) != 0)
        return ENOMEM;
    memset(&l->me, 0, sizeof l->me);
    l->me.thread = thread;
    /* A queued writer waits for its hand-over in BLPOP (handover.h) where
     * there is a hand-over (not on a quorum), the grant needs no
     * confirmation on replicas, and the watchdog can turn the claim
     * window into a lease; else it claims by a look after a pub/sub
     * message, as readers do. */
    l->a.listed = mode == 'x' && how != RDL_TRY && l->a.claim_ms > 0 && !rdl_config_wait_on(&c->cfg) &&
                  (h->watchdog >= 0 ? h->watchdog != 0 : c->cfg.watchdog_enabled);
    return 0;
}

/* A queued waiter's look before its next attempt (mu not held): *gen0,
 * the wake-ups seen so far.  A hand-over to us (message, or a local
 * release) is claimed by the attempt, like any other.  true: attempt now;
 * false: not this thread's turn to vote (Redlock), and it has waited for
 * the next wake-up or re-check period instead. */
static bool turn_vote(acquire_loop_t *l, unsigned long *gen0)
{
    rdlock_client_t *c = l->a.c;
    bool vote = true;

    RDL_LOCK(c);
    *gen0 = rdl_waitq_look(c, l->q, &l->me);
    if ((c->exec->caps & RDL_EXEC_VOTE_ONE) && l->a.mode == 'x')
        vote = rdl_waitq_vote_begin(c, l->q, &l->me);
    if (!vote) {
        /* Redlock: another thread of ours is voting for this name
         * exclusively; two would only split the vote.  Wait for the next
         * wake-up (or the re-check period) instead.  Readers all vote:
         * their shares do not exclude each other. */
        long long until = rdl_now_ms() + c->cfg.retry_interval_ms + rdl_jitter(c->cfg.retry_jitter_ms);
        if (l->how == RDL_TIMED && until > l->deadline)
            until = l->deadline;
        rdl_waitq_sleep(c, l->q, &l->me, *gen0, until, NULL);
    }
    RDL_UNLOCK(c);
    return vote;
}

/* One attempt of the wait loop, and what the local queue must learn of
 * it.  try_confirmed's code: 0, EOWNERDEAD, EBUSY, EIO, or another error. */
static int turn_try(acquire_loop_t *l)
{
    rdlock_client_t *c = l->a.c;
    int rc = try_confirmed(&l->a, l->how != RDL_TRY, l->queued, l->how == RDL_TIMED ? l->deadline : -1);

    if (l->q != NULL && (c->exec->caps & RDL_EXEC_VOTE_ONE) && l->a.mode == 'x') {
        RDL_LOCK(c);
        rdl_waitq_vote_end(c, l->q, &l->me);
        RDL_UNLOCK(c);
    }
    if (rc == 0 || rc == EOWNERDEAD)
        return rc;
    if (rc == EBUSY || rc == EIO) /* after EIO we may have queued: assume so */
        l->queued = l->how != RDL_TRY;
    if (rc == EBUSY) {
        /* Hand-overs after this look carry tokens above the counter we
         * just saw; older messages are stale. */
        RDL_LOCK(c);
        rdl_waitq_busy(c, l->q, &l->me, l->a.fence);
        RDL_UNLOCK(c);
    }
    return rc;
}

/* The wait loop: attempts until the lock is held (0, EOWNERDEAD), a try
 * or a failure that waiting cannot heal ends it (EBUSY, EIO, EACCES,
 * ENOTRECOVERABLE, ENOMEM...), or the deadline passes (ETIMEDOUT; EIO if
 * Redis did not answer the last attempt). */
static int acquire_wait(acquire_loop_t *l)
{
    rdlock_client_t *c = l->a.c;
    attempt_t *a = &l->a;
    int how = l->how, rc = 0;

    for (;;) {
        unsigned long gen0 = 0;
        long long now;

        if (l->q != NULL && !turn_vote(l, &gen0)) {
            if (how == RDL_TIMED && rdl_now_ms() >= l->deadline)
                return rc == EBUSY ? ETIMEDOUT : EIO;
            continue;
        }
        rc = turn_try(l);
        if (rc == 0 || rc == EOWNERDEAD)
            return rc;
        if (how == RDL_TRY || (rc != EBUSY && rc != EIO) || (rc == EIO && c->cfg.fail_fast))
            return rc;
        now = rdl_now_ms();
        if (how == RDL_TIMED && now >= l->deadline)
            return rc == EBUSY ? ETIMEDOUT : EIO;
        if (a->listed && rc == EBUSY) {
            /* No subscription: a hand-over, or a "look again", after
             * this look waits in the list for the BLPOP. */
            int hr = handover_turn(a, how, l->deadline, l->a.lease_ms);
            if (hr == 0)
                return 0;
            a->listen_fails = hr == EIO ? a->listen_fails + 1 : 0;
            if (hr == EAGAIN)
                continue;
            if (hr == EIO && a->listen_fails < 2) {
                wait_turn(c, NULL, &l->me, 0, a, rc, how, l->deadline, l->a.lease_ms);
                continue;
            }
            /* Refused, or no answer twice while looks get one (a proxy
             * that cuts blocking commands): the pub/sub way from now on. */
            a->listed = false;
        }
        if (l->q == NULL && !a->listed) {
            /* Subscribe, then look again at once: a release between our
             * attempt and the subscription would otherwise go unheard. */
            RDL_LOCK(c);
            l->q = rdl_waitq_join(c, l->h->key, l->h->keylen,
                                  how == RDL_TIMED ? l->deadline : now + c->cfg.command_timeout_ms, &l->me);
            RDL_UNLOCK(c);
            if (l->q != NULL && rc == EBUSY)
                continue;
        }
        wait_turn(c, l->q, &l->me, gen0, a, rc, how, l->deadline, l->a.lease_ms);
    }
}

int rdl_acquire(rdl_handle_t *h, char mode, int how, long long deadline)
{
    rdlock_client_t *c;
    rdl_hold_t *hold;
    acquire_loop_t l;
    unsigned thread;
    int rc;

    if ((rc = rdl_handle_resolve(h, &c)) != 0)
        return rc;
    /* After the client exists (exit.h). */
    rdl_exit_add(&lock_exit);
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
    if (acquire_setup(&l, c, h, thread, mode, how, deadline) != 0) {
        rdl_hold_free(hold);
        return ENOMEM;
    }

    rc = acquire_wait(&l);
    if (rc != 0 && rc != EOWNERDEAD)
        rc = give_up(&l.a, h, l.queued, rc);
    RDL_LOCK(c);
    if (l.q != NULL)
        rdl_waitq_leave(c, l.q, &l.me);
    if (rc == 0 || rc == EOWNERDEAD) {
        hold = record_hold(c, h, hold, thread, &l.a, l.a.lease_ms);
        hold->inconsistent = rc == EOWNERDEAD;
        hold = NULL;
    }
    RDL_UNLOCK(c);
    rdl_hold_free(hold);
    rdl_lock_keys_free(&l.a.keys);
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

/* What an unlock takes out of its hold under the mutex, to tell the
 * server without it (release_local). */
typedef struct release_req {
    rdl_hold_t *hold;
    char owner[RDL_OWNER_MAX], call[21];
    const char *how;   /* release.lua's op: "rs", "rx" or "rn" */
    char *dead_owner;  /* a copy of the dead owner's marker ("rx"), or NULL */
    long long unsure_until, deadline;
    bool was_lost;     /* the watchdog reported the hold lost already */
} release_req_t;

/* The local part of an unlock (takes mu).  true: the unlock ends here with
 * *rc: EPERM (no hold of the caller's through h, or one being released),
 * or 0 (an inner level of a recursive hold).  false: the hold is marked as
 * being released, and r says what to tell the server. */
static bool release_local(rdlock_client_t *c, rdl_handle_t *h, release_req_t *r, int *rc)
{
    rdl_hold_t *hold;

    RDL_LOCK(c);
    hold = caller_hold(c, h);
    if (hold == NULL || hold->releasing) {
        RDL_UNLOCK(c);
        *rc = EPERM;
        return true;
    }
    if (hold->count > 1) {
        hold->count--; /* inner unlock: local, no round trip */
        RDL_UNLOCK(c);
        *rc = 0;
        return true;
    }
    /* A hold the watchdog reported lost still gets a release: the server
     * may yet have a field of ours (its deadline can be later than our
     * conservative estimate), which must not linger.  The answer is
     * ENOLCK whatever the server says. */
    r->was_lost = hold->lost;
    hold->releasing = true;
    /* An EOWNERDEAD hold unlocked without rdlock_consistent() makes the
     * lock not recoverable (POSIX robust mutexes). */
    r->how = hold->mode == 's' ? "rs" : hold->inconsistent ? "rn" : "rx";
    r->dead_owner =
        r->how[1] == 'x' && rdl_hold_dead_owner(hold) != NULL ? strdup(rdl_hold_dead_owner(hold)) : NULL;
    rdl_owner(c, hold->thread, r->owner);
    rdl_hold_call_str(hold, r->call);
    r->unsure_until = rdl_hold_unsure_until(hold);
    /* On a quorum, a release that some masters confirmed asks the others
     * until the lease would have ended (lock_quorum.h); on one server the
     * client's own retries bound it. */
    r->deadline = (c->exec->caps & RDL_EXEC_RELEASE_TO_EXPIRY) ? hold->expires_at : -1;
    r->hold = hold;
    RDL_UNLOCK(c);
    return false;
}

int rdl_release(rdl_handle_t *h)
{
    rdlock_client_t *c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
    release_req_t r;
    rdl_hold_t *hold;
    rdl_lock_keys_t keys;
    leave_reply_t lr;
    char op[24];
    long long keep;
    int rc;

    if (c == NULL)
        return EPERM; /* never acquired through this handle */
    if (release_local(c, h, &r, &rc))
        return rc;
    hold = r.hold;

    /* An acquire attempt of this hold that got no answer may still arrive:
     * released first, it would find the lock free and take it again.  The
     * release leaves the caller's finished-call mark for as long as that
     * can happen (release.lua's 'r' with a time), which voids it, rather
     * than wait that long here (a connection cut cost every unlock up to
     * a command timeout: D11 in docs/RELIABILITY.md).  The mark outlives
     * the wait it replaces by a margin for the two clocks' rates. */
    keep = r.unsure_until - rdl_now_ms();
    if (keep > 0)
        snprintf(op, sizeof op, "%s%lld", r.how, keep + keep / 50 + 5);
    else
        snprintf(op, sizeof op, "%s", r.how);
    rc = rdl_lock_keys_make(&keys, h->key, h->keylen, h->slot, r.owner);
    if (rc != 0)
        free(r.dead_owner);
    if (rc == 0) {
        rc = leave5(c, &keys, r.owner, op, r.call, NULL, r.dead_owner, r.deadline, &lr);
        rdl_lock_keys_free(&keys);
        free(r.dead_owner);
        if (rc == 0 && lr.r.status == 3) {
            lr.r.status = 1; /* our first attempt released it: proved */
        } else if (rc == 0 && lr.r.status != 1) {
            /* Not released by this request, nor provably by an earlier
             * attempt of it (whose proof may have run out, or been
             * overwritten by another reader's release): the hold may have
             * run out before, so the critical section is not known to have
             * been protected to its end: ENOLCK, never 0. */
            if (lr.ambiguous)
                rdl_log(RDLOCK_LOG_WARN, "unlock of %s: an attempt got no answer and the retry found the "
                                         "hold gone: released by it, or lost before; reported lost", h->name);
            rc = ENOLCK;
        }
    }

    RDL_LOCK(c);
    if (r.was_lost) {
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
        if (rc == ENOLCK && !hold->notified && hold->watchdog) {
            /* The watchdog had not noticed (the unlock was under way, or
             * its renewals had not failed yet): its lost callback is owed.
             * A hold without a watchdog has no callback: its unlock is
             * the only report, as before. */
            void *arg;
            rdlock_lost_fn fn = rdl_hold_lostcb(hold, &arg);
            hold->notified = true;
            rdl_events_lost_later(c, fn, arg, rdl_hold_name(hold), hold->namelen);
        }
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

/* Process exit ([lock] release_at_exit): end a lock hold as its owner's
 * death would, now rather than at lease end (an exclusive hold leaves the
 * robust marker: EOWNERDEAD for the next robust locker).  The hold stays in
 * the table, marked as being released: other threads may still be running.
 * Nothing is logged: a lock's waiters are told by the server. */
static bool lock_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline)
{
    rdl_lock_keys_t keys;
    leave_reply_t lr;
    char owner[RDL_OWNER_MAX];
    if (e->unsure_until >= deadline)
        return false;
    /* As unlock does: a late attempt of the acquire must not find the lock
     * free after this. */
    rdl_sleep_until(e->unsure_until);
    rdl_owner(c, e->thread, owner);
    if (rdl_lock_keys_make(&keys, e->key, e->keylen, rdl_key_slot(e->key, e->keylen), owner) != 0)
        return false;
    /* 'd': an exclusive hold keeps its robust marker, as a dead owner's
     * would; a shared one is simply released. */
    leave(c, &keys, owner, e->mode == 's' ? "rs" : "rd", e->call, NULL, deadline, &lr);
    rdl_lock_keys_free(&keys);
    return true;
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

int rdl_lock_script_on(rdlock_client_t *c, const rdl_script_t *script, const char *key, size_t keylen, unsigned server,
                       char *where, size_t n, redisReply **reply)
{
    rdl_lock_keys_t keys;
    int rc = rdl_lock_keys_make(&keys, key, keylen, rdl_key_slot(key, keylen), NULL);
    if (rc != 0)
        return rc;
    rc = c->exec->script_on(c, script, RDL_LOCK_NKEYS, keys.v, keys.l, server, where, n, reply);
    rdl_lock_keys_free(&keys);
    return rc;
}

int rdl_lock_script(rdlock_client_t *c, const rdl_script_t *script, const char *key, size_t keylen,
                    redisReply **reply)
{
    rdl_lock_keys_t keys;
    int rc = rdl_lock_keys_make(&keys, key, keylen, rdl_key_slot(key, keylen), NULL);
    if (rc != 0)
        return rc;
    rc = c->exec->script(c, script, RDL_LOCK_NKEYS, keys.v, keys.l, reply);
    rdl_lock_keys_free(&keys);
    return rc;
}
