/* cond.c - condition variables (rdcond_t, docs/CONTRACT.md section 12),
 * paired with an rdlock_t that may be on another client.  The server
 * side, with the key layout, is src/scripts/cond.lua; the request and the
 * registration's lease record are prim.c's.
 *
 * A wait:
 *   1. joins the local wait queue of the condition (one subscription to
 *      its channel for all the local waiters), so that no wake-up
 *      published after step 2 goes unheard;
 *   2. registers the caller on the server (cond.lua 'w') while it still
 *      holds the lock: a signal sent after the caller's release of the
 *      lock (a signaller must take the lock first to change the predicate
 *      before it signals, in the usual pattern) finds the registration;
 *   3. releases the lock, and sleeps until a wake-up addressed to it ("g
 *      <owner> <number>"), a broadcast ("u"), the re-check period or the
 *      deadline; then looks ('k': woken? then the registration ends);
 *   4. gives up at the deadline by withdrawing ('u'), which also tells
 *      whether a signal came after all (then 0, not ETIMEDOUT: the signal
 *      is not lost);
 *   5. takes the lock again, on every path, before it returns.
 * The registration's lease is a hold of kind RDL_HOLD_COND (key
 * "<prefix>{name}:cv:h"), renewed by the watchdog like a lock's, dropped
 * with the other holds in a fork child. */
#include "rdl_build.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/ident.h"
#include "core/clients.h"
#include "core/exit.h"
#include "core/handle.h"
#include "core/hold.h"
#include "core/waitq.h"
#include "prim/cond.h"
#include "prim/lock.h"
#include "prim/prim.h"

#define RDL_COND_ATTR_MAGIC 0x52444341u /* "RDCA" */
#define COND_NKEYS 5

/* The keys of cond.lua (the last one followed by the owner). */
#define COND_HOLD_SFX ":cv:h" /* the registration's lease key */
static const char *const cond_sfx[COND_NKEYS] = { ":cv", COND_HOLD_SFX, ":cv:q", ":cv:p", ":cv:o:" };

/* How a registration ends at process exit (exit.h). */
static bool cond_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline);
static const rdl_exit_ender_t cond_exit = { RDL_EXIT_WAITS, RDL_HOLD_COND, cond_exit_end, rdl_prim_exit_report };

/* ---------------------------------------------------------------- attributes */

static int attr_valid(const rdcond_attr_t *a)
{
    return a != NULL && a->__magic == RDL_COND_ATTR_MAGIC;
}

int rdcond_attr_init(rdcond_attr_t *a)
{
    if (a == NULL)
        return EINVAL;
    memset(a, 0, sizeof *a);
    a->__magic = RDL_COND_ATTR_MAGIC;
    return 0;
}

int rdcond_attr_destroy(rdcond_attr_t *a)
{
    if (!attr_valid(a))
        return EINVAL;
    memset(a, 0, sizeof *a);
    return 0;
}

int rdcond_attr_setlease(rdcond_attr_t *a, unsigned lease_ms)
{
    if (!attr_valid(a) || (lease_ms != 0 && (lease_ms < 10 || lease_ms > 86400000u)))
        return EINVAL;
    a->__lease_ms = lease_ms;
    return 0;
}

int rdcond_attr_setclient(rdcond_attr_t *a, rdlock_client_t *c)
{
    if (!attr_valid(a))
        return EINVAL;
    a->__client = c;
    return 0;
}

/* ---------------------------------------------------------------- handles */

static int get(rdcond_t *cond, rdl_handle_t **h)
{
    return rdl_handle_get((rdl_lockobj_t *)cond, RDCOND__MAGIC, RDCOND__MAGIC, h);
}

static int req_new(rdl_preq_t *r, rdl_handle_t *h, rdlock_client_t **c)
{
    int rc = rdl_handle_resolve(h, c);
    return rc != 0 ? rc : rdl_preq_init(r, *c, h, rdl_thread_no(), "condition", cond_sfx, COND_NKEYS);
}

int rdcond_init(rdcond_t *cond, const char *name, const rdcond_attr_t *a)
{
    rdlock_attr_t la;
    rdl_handle_t *h;
    rdlock_client_t *c;
    rdl_preq_t r;
    rdl_preply_t out;
    int rc;

    if (cond == NULL || (a != NULL && !attr_valid(a)))
        return EINVAL;
    rdlock_attr_init(&la);
    if (a != NULL) {
        la.__lease_ms = a->__lease_ms;
        la.__client = a->__client;
    }
    rc = rdl_handle_init((rdl_lockobj_t *)cond, RDCOND__MAGIC, name, &la, RDL_API_COND);
    rdlock_attr_destroy(&la);
    if (rc != 0)
        return rc;
    h = cond->__impl;
    /* The name's state appears on the server now (section 12). */
    rc = req_new(&r, h, &c);
    if (rc == 0) {
        rc = rdl_preq_run(&r, c->scripts->cond, 'i', false, -1, &out);
        rdl_preq_free(&r);
    }
    if (rc != 0) {
        if (rc == EIO)
            rdl_log(RDLOCK_LOG_ERROR, "condition %s: init could not reach the server", h->name);
        rdl_handle_destroy((rdl_lockobj_t *)cond, RDCOND__MAGIC, RDCOND__MAGIC);
    }
    return rc;
}

int rdcond_destroy(rdcond_t *cond)
{
    return rdl_handle_destroy((rdl_lockobj_t *)cond, RDCOND__MAGIC, RDCOND__MAGIC);
}

/* ---------------------------------------------------------------- wait */

/* Release the caller's hold of lh, all `count` levels (a recursive hold:
 * the inner ones are local).  0, ENOLCK (the hold had been lost), or EIO
 * (still held: the server could not be asked). */
static int release_all(rdl_handle_t *lh, unsigned count, int how, long long deadline, bool fail_fast)
{
    unsigned i;
    int rc;
    for (i = 1; i < count; i++)
        if ((rc = rdl_release(lh)) != 0)
            return rc;
    for (;;) {
        rc = rdl_release(lh);
        if (rc != EIO || fail_fast || (how == RDL_TIMED && rdl_now_ms() >= deadline))
            return rc;
        /* A blocking wait waits through an outage, as rdlock_lock does:
         * the hold is still ours and renewed. */
        rdl_sleep_ms(100);
    }
}

/* Take the lock back (all `count` levels).  0, EOWNERDEAD (held), or an
 * error of rdlock_lock (not held). */
static int reacquire(rdl_handle_t *lh, unsigned count)
{
    unsigned i;
    int rc = rdl_acquire(lh, 'x', RDL_BLOCK, -1), rc2;
    if (rc != 0 && rc != EOWNERDEAD)
        return rc;
    for (i = 1; i < count; i++)
        if ((rc2 = rdl_acquire(lh, 'x', RDL_BLOCK, -1)) != 0) {
            rdl_log(RDLOCK_LOG_ERROR, "lock %s: could not restore the recursion count after a condition wait",
                    lh->name);
            return rc2;
        }
    return rc;
}

/* Register on the server (the lock still held), through an outage as a
 * blocking call waits.  0 and *seq, or an error. */
static int do_register(rdl_preq_t *r, int how, long long deadline, long long *seq)
{
    rdl_preply_t out;
    int rc;
    for (;;) {
        rc = rdl_preq_run(r, r->c->scripts->cond, 'w', true, how == RDL_TIMED ? deadline : -1, &out);
        if (rc == 0 && out.status == 1) {
            *seq = out.x;
            return 0;
        }
        if (rc == 0)
            rc = EIO; /* void: the server's clock keeps moving (logged) */
        if (r->c->cfg.fail_fast || (how == RDL_TIMED && rdl_now_ms() >= deadline))
            return rc;
        rdl_sleep_ms(r->c->cfg.retry_interval_ms + rdl_jitter(r->c->cfg.retry_jitter_ms));
    }
}

/* End the registration: after any unanswered registration attempt can no
 * longer act, withdraw ('u').  true if a signal had come after all. */
static bool withdraw(rdl_preq_t *r)
{
    rdl_preply_t out;
    rdl_sleep_until(r->unsure_until);
    if (rdl_preq_run(r, r->c->scripts->cond, 'u', false, rdl_now_ms() + r->c->cfg.command_timeout_ms, &out) != 0) {
        rdl_log(RDLOCK_LOG_WARN, "condition %s: could not withdraw a waiter's registration; it ends with its lease",
                r->h->name);
        return false;
    }
    return out.status == 1;
}

/* The state of one condition wait (cond_wait). */
typedef struct cond_call {
    rdl_preq_t r;
    rdlock_client_t *c;
    rdl_waitq_t *q;    /* the condition's local wait queue, or NULL */
    rdl_waiter_t me;
    unsigned long gen; /* the wake-ups seen at the last look */
    int how;
    long long deadline;
} cond_call_t;

/* 3, 4. Sleep until woken, registered and with the lock released: until a
 * wake-up, the re-check period or the deadline, then look ('k').  0 (woken:
 * a signal, a broadcast, or the registration gone; or at the deadline a
 * signal came after all), ETIMEDOUT (withdrawn at the deadline), or the
 * look's error: the server's, or EIO with fail_fast (withdrawn). */
static int cond_sleep(cond_call_t *w)
{
    rdlock_client_t *c = w->c;
    rdl_preply_t out;
    int rc;

    for (;;) {
        rdl_prim_sleep(&w->r, w->q, &w->me, w->gen, w->how, w->deadline);
        if (w->how == RDL_TIMED && rdl_now_ms() >= w->deadline)
            return withdraw(&w->r) ? 0 : ETIMEDOUT;
        if (w->q != NULL) {
            RDL_LOCK(c);
            w->gen = rdl_waitq_look(c, w->q, &w->me);
            RDL_UNLOCK(c);
        }
        rc = rdl_preq_run(&w->r, c->scripts->cond, 'k', false, w->how == RDL_TIMED ? w->deadline : -1, &out);
        if (rc == 0 && out.status != 0) {
            /* Woken (1), or the registration is gone (-1: its lease ran
             * out, a reset, or the process exit handler withdrew it): a
             * wake-up either way, but not one to act on at exit. */
            if (out.status < 0)
                rdl_prim_park_if_exiting(c);
            return rc;
        }
        if (rc != 0 && rc != EIO)
            return rc;
        if (rc == EIO && c->cfg.fail_fast) {
            withdraw(&w->r);
            return rc;
        }
    }
}

/* 2 to 5: register, release the lock (count levels of it through lh),
 * sleep until woken, and take the lock back; the caller has joined the
 * local wait queue.  0, EOWNERDEAD (held again), ETIMEDOUT, ENOLCK (the
 * lock's hold had been lost before the release: the critical section was
 * not protected to its end), or an error: of the registration (the lock
 * still held), of the release (EIO: still held, not waiting), of the look,
 * or of rdlock_lock (the lock not held again). */
static int cond_registered_wait(cond_call_t *w, rdl_handle_t *lh, unsigned count)
{
    rdlock_client_t *c = w->c;
    rdl_hold_t *hold;
    long long seq = 0;
    bool lost = false;
    int rc, rrc;

    /* 2. Register, the lock still held. */
    if ((rc = do_register(&w->r, w->how, w->deadline, &seq)) != 0) {
        if (w->r.unsure_until != 0)
            withdraw(&w->r);
        return rc;
    }
    if (w->q != NULL) {
        /* Wake-ups for this registration (number seq) count; one from an
         * earlier wait of this thread does not. */
        RDL_LOCK(c);
        rdl_waitq_busy(c, w->q, &w->me, (uint64_t)(seq - 1));
        RDL_UNLOCK(c);
    }
    hold = rdl_prim_hold_add(&w->r, COND_HOLD_SFX, &cond_exit);

    /* 3. Release the lock, then sleep until woken. */
    rrc = release_all(lh, count, w->how, w->deadline, c->cfg.fail_fast);
    if (rrc == ENOLCK) {
        /* The critical section was not protected to its end: say so now
         * rather than after a wait (a wake-up without a signal is allowed). */
        lost = true;
        withdraw(&w->r);
        rc = 0;
    } else if (rrc != 0) {
        /* Still held (EIO): do not sleep holding it. */
        rc = withdraw(&w->r) ? 0 : rrc;
        rdl_prim_hold_drop(c, hold);
        return rc;
    } else {
        rc = cond_sleep(w);
    }

    rdl_prim_hold_drop(c, hold);
    RDL_LOCK(c);
    if (w->q != NULL)
        rdl_waitq_leave(c, w->q, &w->me);
    RDL_UNLOCK(c);
    w->q = NULL;
    /* 5. The lock again, whatever happened. */
    rrc = reacquire(lh, count);
    if (rrc != 0)
        rc = rrc; /* EOWNERDEAD (held), or the lock could not be had */
    else if (lost)
        rc = ENOLCK;
    return rc;
}

static int cond_wait(rdl_handle_t *ch, rdl_handle_t *lh, int how, long long deadline)
{
    cond_call_t w;
    rdlock_client_t *c;
    unsigned count = 0;
    int rc;

    rdl_holdcount(lh, &count);
    if (count == 0)
        return EPERM; /* the lock is not held by the calling thread through lh */
    if ((rc = req_new(&w.r, ch, &c)) != 0)
        return rc;
    w.c = c;
    w.how = how;
    w.deadline = deadline;
    memset(&w.me, 0, sizeof w.me);
    w.me.thread = w.r.thread;

    /* 1. Subscribe first (bounded by a command timeout: without it the
     * waiter looks on its own schedule). */
    RDL_LOCK(c);
    ch->nholds++; /* destroy is EBUSY from here on (handle.h) */
    w.q = rdl_waitq_join(c, w.r.kv[0], w.r.kl[0], rdl_now_ms() + c->cfg.command_timeout_ms, &w.me);
    if (w.q != NULL)
        w.gen = rdl_waitq_look(c, w.q, &w.me);
    else
        w.gen = 0;
    RDL_UNLOCK(c);

    rc = cond_registered_wait(&w, lh, count);

    RDL_LOCK(c);
    if (w.q != NULL)
        rdl_waitq_leave(c, w.q, &w.me);
    ch->nholds--;
    RDL_UNLOCK(c);
    rdl_preq_free(&w.r);
    return rc;
}

static int wait_call(rdcond_t *cond, rdlock_t *lock, int how, clockid_t clock, const struct timespec *abstime)
{
    rdl_handle_t *ch, *lh;
    long long deadline = -1;
    int rc = 0;
    if (how == RDL_TIMED)
        rc = rdl_deadline_from(clock, abstime, &deadline);
    if (rc == 0)
        rc = get(cond, &ch);
    if (rc == 0)
        rc = rdl_handle_get((rdl_lockobj_t *)lock, RDLOCK__MAGIC, RDLOCK__STATIC_MAGIC, &lh);
    return rc != 0 ? rc : cond_wait(ch, lh, how, deadline);
}

int rdcond_wait(rdcond_t *cond, rdlock_t *lock)
{
    return wait_call(cond, lock, RDL_BLOCK, CLOCK_REALTIME, NULL);
}

int rdcond_timedwait(rdcond_t *cond, rdlock_t *lock, const struct timespec *abstime)
{
    return wait_call(cond, lock, RDL_TIMED, CLOCK_REALTIME, abstime);
}

int rdcond_clockwait(rdcond_t *cond, rdlock_t *lock, clockid_t clock, const struct timespec *abstime)
{
    return wait_call(cond, lock, RDL_TIMED, clock, abstime);
}

/* ---------------------------------------------------------------- signal */

static int wake(rdcond_t *cond, char op)
{
    rdl_handle_t *h;
    rdlock_client_t *c;
    rdl_preq_t r;
    rdl_preply_t out;
    int rc = get(cond, &h);
    if (rc == 0)
        rc = req_new(&r, h, &c);
    if (rc != 0)
        return rc;
    rc = rdl_preq_run(&r, c->scripts->cond, op, true, -1, &out);
    rdl_preq_free(&r);
    return rc;
}

int rdcond_signal(rdcond_t *cond)
{
    return wake(cond, 's');
}

int rdcond_broadcast(rdcond_t *cond)
{
    return wake(cond, 'b');
}

/* ---------------------------------------------------------------- reset */

int rdl_cond_reset(rdlock_client_t *c, const char *key, size_t keylen)
{
    rdl_preply_t out;
    return rdl_prim_op_on(c, key, keylen, rdl_thread_no(), NULL, c->cfg.lease_ms, "condition", cond_sfx, COND_NKEYS,
                          c->scripts->cond, 'r', NULL, &out);
}

/* Process exit (exit.h): end the registration on key (the hold's key less
 * ":cv:h") as 'x' does: a signal it had passes on to a live waiter. */
static bool cond_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline)
{
    const size_t sl = sizeof COND_HOLD_SFX - 1;
    rdl_preply_t out;
    (void)deadline;
    return e->keylen > sl &&
           rdl_prim_op_on(c, e->key, e->keylen - sl, e->thread, e->call, e->lease_ms, "condition", cond_sfx,
                          COND_NKEYS, c->scripts->cond, 'x', NULL, &out) == 0 &&
           out.status >= 0;
}
