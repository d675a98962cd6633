/* barrier.c - barriers (rdbarrier_t, docs/CONTRACT.md section 12).  The
 * server side, with the key layout, is src/scripts/barrier.lua; the
 * request and the arrival's lease record are prim.c's.
 *
 * A wait joins the local wait queue of the barrier first (so that the
 * completion, published after the arrival, cannot go unheard), then
 * arrives ('a'): the arrival that completes the generation returns
 * RDBARRIER_SERIAL_THREAD at once; the others sleep until the completion's
 * wake-up ("u"), the re-check period or the deadline, and look ('k').
 * While a thread waits, its arrival is a hold of kind RDL_HOLD_BARRIER
 * (key "<prefix>{name}:b:h") that the watchdog renews; if the process
 * dies the arrival's lease runs out, the completion check drops it, and
 * the generation waits for a live arrival instead: the others' timed waits
 * time out, and the barrier is whole again for the next generation.  A
 * timed wait that gives up withdraws its arrival ('u'), unless the
 * generation completed meanwhile (then it returns 0). */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fmt.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/ident.h"
#include "core/attr.h"
#include "core/clients.h"
#include "core/exit.h"
#include "core/handle.h"
#include "core/hold.h"
#include "core/waitq.h"
#include "prim/barrier.h"
#include "prim/lock.h"
#include "prim/prim.h"

#define BAR_NKEYS 3

#define BAR_HOLD_SFX ":b:h" /* the arrival's lease key */
static const char *const bar_sfx[BAR_NKEYS] = { ":b", BAR_HOLD_SFX, ":b:o:" };

/* How an arrival ends at process exit (exit.h). */
static bool barrier_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline);
static const rdl_exit_ender_t barrier_exit = { RDL_EXIT_WAITS, RDL_HOLD_BARRIER, barrier_exit_end,
                                               rdl_prim_exit_report };

static int get(rdbarrier_t *b, rdl_handle_t **h)
{
    return rdl_handle_get((rdl_lockobj_t *)b, RDBARRIER__MAGIC, RDBARRIER__MAGIC, h);
}

static int req_new(rdl_preq_t *r, rdl_handle_t *h, rdlock_client_t **c)
{
    int rc = rdl_handle_resolve(h, c);
    if (rc == 0)
        rc = rdl_preq_init(r, *c, h, rdl_thread_no(), "barrier", bar_sfx, BAR_NKEYS);
    if (rc == 0)
        r->arg[rdl_fmt_u64(r->arg, h->sem_value)] = '\0'; /* the count */
    return rc;
}

int rdbarrier_init(rdbarrier_t *b, const char *name, unsigned count, const rdlock_attr_t *a)
{
    rdlock_attr_t la;
    rdl_handle_t *h;
    rdlock_client_t *c;
    rdl_preq_t r;
    rdl_preply_t out;
    int rc;

    if (b == NULL || (a != NULL && !rdl_attr_valid(a)))
        return EINVAL;
    if (count == 0 || count > RDBARRIER_COUNT_MAX) {
        rdl_log(RDLOCK_LOG_ERROR, "barrier %s: count %u is not in 1..RDBARRIER_COUNT_MAX", name ? name : "?", count);
        return EINVAL;
    }
    /* Only the client and the lease apply. */
    rdlock_attr_init(&la);
    if (a != NULL) {
        la.__lease_ms = a->__lease_ms;
        la.__client = a->__client;
    }
    rc = rdl_handle_init((rdl_lockobj_t *)b, RDBARRIER__MAGIC, name, &la, RDL_API_BARRIER);
    rdlock_attr_destroy(&la);
    if (rc != 0)
        return rc;
    h = b->__impl;
    h->sem_value = count;
    /* The name's state appears on the server now (section 12). */
    rc = req_new(&r, h, &c);
    if (rc == 0) {
        rc = rdl_preq_run(&r, c->scripts->barrier, 'i', false, -1, &out);
        if (rc == 0 && out.status == -3) {
            rdl_log(RDLOCK_LOG_ERROR, "barrier %s exists on the server with count %lld, not %u", h->name, out.x,
                    count);
            rc = EINVAL;
        }
        rdl_preq_free(&r);
    }
    if (rc != 0) {
        if (rc == EIO)
            rdl_log(RDLOCK_LOG_ERROR, "barrier %s: init could not reach the server", h->name);
        rdl_handle_destroy((rdl_lockobj_t *)b, RDBARRIER__MAGIC, RDBARRIER__MAGIC);
    }
    return rc;
}

int rdbarrier_destroy(rdbarrier_t *b)
{
    return rdl_handle_destroy((rdl_lockobj_t *)b, RDBARRIER__MAGIC, RDBARRIER__MAGIC);
}

/* How long the server keeps the record of an arrival (its op record):
 * a withdrawal of an arrival whose answer got lost reads it to tell
 * whether, and in which generation, it arrived, so it must outlive the
 * outage that such a withdrawal waits out. */
#define BAR_RECORD_MS 60000LL

/* Withdraw the arrival of generation r->arg ("0": the arrival attempt
 * whose answer got lost, after it can no longer act): 2 if it completed
 * its generation after all (the serial one), 1 if the generation
 * completed with it, 0 withdrawn (or it never arrived), -1 unknown (with
 * fail_fast; or, for generation 0, the server could not be asked by
 * tell_by, after which it may no longer keep the record of the arrival:
 * see bar_wait).  Until the server answers, the arrival may still
 * complete a generation (its lease is renewed while this runs), and a
 * wait that said ETIMEDOUT then would leave the others released without
 * it: so without fail_fast this asks again, with a back-off, until it can
 * tell. */
static int withdraw(rdl_preq_t *r, long long tell_by)
{
    rdl_preply_t out;
    long long pause = 100, tmo = r->c->cfg.command_timeout_ms;
    bool said = false;
    rdl_sleep_until(r->unsure_until);
    for (;;) {
        /* An answer must come while the record surely lasts. */
        if (tell_by >= 0 && rdl_now_ms() + tmo > tell_by) {
            rdl_log(RDLOCK_LOG_ERROR,
                    "barrier %s: could not withdraw an arrival within %lld ms; it may have counted", r->h->name,
                    BAR_RECORD_MS);
            return -1;
        }
        if (rdl_preq_run(r, r->c->scripts->barrier, 'u', false, rdl_now_ms() + tmo, &out) == 0)
            break;
        if (r->c->cfg.fail_fast) {
            rdl_log(RDLOCK_LOG_WARN, "barrier %s: could not withdraw an arrival; it may still count", r->h->name);
            return -1;
        }
        if (!said)
            rdl_log(RDLOCK_LOG_WARN, "barrier %s: could not withdraw an arrival yet; asking again", r->h->name);
        said = true;
        rdl_sleep_ms(pause + rdl_jitter(r->c->cfg.retry_jitter_ms));
        if (pause < 1000)
            pause *= 2;
    }
    return out.status == 2 ? 2 : out.status == 1;
}

/* A wait's code after withdraw() said w (the deadline has passed, or the
 * server failed with rc). */
static int withdrawn_rc(int w, int rc)
{
    return w == 2 ? RDBARRIER_SERIAL_THREAD : w == 1 ? 0 : w == 0 ? rc : EIO;
}

/* The state of one barrier wait (bar_wait). */
typedef struct bar_call {
    rdl_preq_t r;
    rdlock_client_t *c;
    rdl_handle_t *h;
    rdl_waitq_t *q;     /* the barrier's local wait queue, or NULL */
    rdl_waiter_t me;
    rdl_hold_t *hold;   /* the arrival's lease record, once arrived */
    unsigned long gen;  /* the wake-ups seen at the last look */
    long long call_at;  /* when this call's first arrival attempt was made */
    bool arrived;
    int how;
    long long deadline;
} bar_call_t;

/* What the wait loop does after an arrival or a look (bar_arrive,
 * bar_look). */
enum bar_next {
    BAR_DONE,  /* the wait ends, with *rc */
    BAR_AGAIN, /* the next round at once (the arrival is gone: arrive again) */
    BAR_SLEEP  /* sleep until a wake-up, the re-check or the deadline */
};

/* Arrive ('a').  BAR_DONE with *rc: RDBARRIER_SERIAL_THREAD (this arrival
 * completed the generation), 0 (it completed meanwhile), or an error: the
 * server's, or EIO (no answer; void arrivals again and again, logged) with
 * fail_fast or past the deadline, or ETIMEDOUT, after the withdrawal of
 * an attempt that may have arrived; withdrawn_rc's codes then.
 * BAR_SLEEP: arrived (w->hold), or EIO to be tried again after a sleep. */
static enum bar_next bar_arrive(bar_call_t *w, int *rc)
{
    rdl_preq_t *r = &w->r;
    rdlock_client_t *c = w->c;
    rdl_preply_t out;
    int how = w->how;

    /* The count goes in arg for 'a'; the generation for 'k', 'u'. */
    r->arg[rdl_fmt_u64(r->arg, w->h->sem_value)] = '\0';
    *rc = rdl_preq_run(r, c->scripts->barrier, 'a', true, how == RDL_TIMED ? w->deadline : -1, &out);
    if (*rc == 0 && out.status == 2) {
        *rc = RDBARRIER_SERIAL_THREAD;
        return BAR_DONE;
    }
    if (*rc == 0 && out.status == 3)
        return BAR_DONE;
    if (*rc == 0 && out.status == 1) {
        w->arrived = true;
        r->arg[rdl_fmt_u64(r->arg, (unsigned long long)out.x)] = '\0';
        w->hold = rdl_prim_hold_add(r, BAR_HOLD_SFX, &barrier_exit);
        /* No look yet: the completion, if it comes, is published after
         * this arrival and we listen already. */
        return BAR_SLEEP;
    }
    if (*rc == 0)
        *rc = EIO; /* void, again and again (logged) */
    if (*rc != EIO || c->cfg.fail_fast || (how == RDL_TIMED && rdl_now_ms() >= w->deadline)) {
        /* An attempt without answer may have arrived: take it back
         * (generation 0: whichever it arrived in).  Once the server
         * answered that, a timed-out wait says so; EIO stays for a server
         * that never answered. */
        if (r->unsure_until != 0) {
            /* Its record, which tells, lasts BAR_RECORD_MS from the first
             * attempt that acted, made after call_at (later attempts of
             * the call find it and leave it). */
            strcpy(r->arg, "0");
            *rc = withdrawn_rc(withdraw(r, w->call_at + BAR_RECORD_MS - 2 * c->cfg.command_timeout_ms),
                               *rc == EIO && how == RDL_TIMED && !c->cfg.fail_fast ? ETIMEDOUT : *rc);
        }
        return BAR_DONE;
    }
    return BAR_SLEEP;
}

/* An arrived waiter's look ('k').  BAR_DONE with *rc: 0 (the generation
 * completed), or the server's error (or EIO with fail_fast), after a
 * withdrawal: withdrawn_rc's codes.  BAR_AGAIN: the arrival is gone (its
 * lease ran out unrenewed, or a reset): arrive again, as a new call.
 * BAR_SLEEP: not yet complete (or EIO: looked at again). */
static enum bar_next bar_look(bar_call_t *w, int *rc)
{
    rdlock_client_t *c = w->c;
    rdl_preply_t out;

    if (w->q != NULL) {
        RDL_LOCK(c);
        w->gen = rdl_waitq_look(c, w->q, &w->me);
        RDL_UNLOCK(c);
    }
    *rc = rdl_preq_run(&w->r, c->scripts->barrier, 'k', false, w->how == RDL_TIMED ? w->deadline : -1, &out);
    if (*rc == 0 && out.status == 1)
        return BAR_DONE;
    if (*rc == 0 && out.status == -1) {
        /* The arrival is gone (its lease ran out unrenewed, or a reset):
         * arrive again, as a new call; not if the process exit handler
         * withdrew it. */
        rdl_prim_park_if_exiting(c);
        rdl_prim_hold_drop(c, w->hold);
        w->hold = NULL;
        w->arrived = false;
        rdl_preq_newcall(&w->r);
        w->call_at = rdl_now_ms();
        return BAR_AGAIN;
    }
    if (*rc != 0 && (*rc != EIO || c->cfg.fail_fast)) {
        *rc = withdrawn_rc(withdraw(&w->r, -1), *rc);
        return BAR_DONE;
    }
    return BAR_SLEEP;
}

static int bar_wait(rdl_handle_t *h, int how, long long deadline)
{
    bar_call_t w;
    rdlock_client_t *c;
    int rc;

    if ((rc = req_new(&w.r, h, &c)) != 0)
        return rc;
    w.c = c;
    w.h = h;
    w.hold = NULL;
    w.arrived = false;
    w.how = how;
    w.deadline = deadline;
    w.call_at = rdl_now_ms();
    if (strtoll(w.r.keep, NULL, 10) < BAR_RECORD_MS)
        w.r.keep[rdl_fmt_u64(w.r.keep, BAR_RECORD_MS)] = '\0';
    memset(&w.me, 0, sizeof w.me);
    w.me.thread = w.r.thread;
    RDL_LOCK(c);
    h->nholds++; /* destroy is EBUSY from here on (handle.h) */
    w.q = rdl_waitq_join(c, w.r.kv[0], w.r.kl[0], rdl_now_ms() + c->cfg.command_timeout_ms, &w.me);
    w.gen = w.q != NULL ? rdl_waitq_look(c, w.q, &w.me) : 0;
    RDL_UNLOCK(c);

    for (;;) {
        enum bar_next next = w.arrived ? bar_look(&w, &rc) : bar_arrive(&w, &rc);
        if (next == BAR_DONE)
            break;
        if (next == BAR_AGAIN)
            continue;
        if (how == RDL_TIMED && rdl_now_ms() >= deadline) {
            rc = w.arrived ? withdrawn_rc(withdraw(&w.r, -1), ETIMEDOUT) : ETIMEDOUT;
            break;
        }
        rdl_prim_sleep(&w.r, w.q, &w.me, w.gen, how, deadline);
        if (how == RDL_TIMED && rdl_now_ms() >= deadline && w.arrived) {
            rc = withdrawn_rc(withdraw(&w.r, -1), ETIMEDOUT);
            break;
        }
    }
    rdl_prim_hold_drop(c, w.hold);
    RDL_LOCK(c);
    if (w.q != NULL)
        rdl_waitq_leave(c, w.q, &w.me);
    h->nholds--;
    RDL_UNLOCK(c);
    rdl_preq_free(&w.r);
    return rc;
}

static int wait_call(rdbarrier_t *b, int how, const struct timespec *abstime)
{
    rdl_handle_t *h;
    long long deadline = -1;
    int rc = 0;
    if (how == RDL_TIMED)
        rc = rdl_deadline_from(CLOCK_REALTIME, abstime, &deadline);
    if (rc == 0)
        rc = get(b, &h);
    return rc != 0 ? rc : bar_wait(h, how, deadline);
}

int rdbarrier_wait(rdbarrier_t *b)
{
    return wait_call(b, RDL_BLOCK, NULL);
}

int rdbarrier_timedwait(rdbarrier_t *b, const struct timespec *abstime)
{
    return wait_call(b, RDL_TIMED, abstime);
}

int rdl_barrier_reset(rdlock_client_t *c, const char *key, size_t keylen)
{
    rdl_preply_t out;
    return rdl_prim_op_on(c, key, keylen, rdl_thread_no(), NULL, c->cfg.lease_ms, "barrier", bar_sfx, BAR_NKEYS,
                          c->scripts->barrier, 'r', NULL, &out);
}

/* Process exit (exit.h): end the arrival on key (the hold's key less
 * ":b:h"): 'u' with generation 0, whichever generation it is in. */
static bool barrier_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline)
{
    const size_t sl = sizeof BAR_HOLD_SFX - 1;
    rdl_preply_t out;
    (void)deadline;
    return e->keylen > sl &&
           rdl_prim_op_on(c, e->key, e->keylen - sl, e->thread, e->call, e->lease_ms, "barrier", bar_sfx, BAR_NKEYS,
                          c->scripts->barrier, 'u', "0", &out) == 0 &&
           out.status >= 0;
}
