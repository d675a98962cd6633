/*
 * acquire.c - taking NAME: at once (-n), within SECONDS (-w), or waiting as
 * long as it takes.
 *
 * Waiting is done in the main thread in slices of SLICE_MS: a timed acquire
 * (rdrwlock_clock*lock on CLOCK_MONOTONIC) with a short deadline, repeated,
 * looking for SIGINT/SIGTERM/SIGHUP between slices.  The library's blocking
 * calls cannot be interrupted, and a waiter killed in one would leave its
 * writer queue mark behind, holding back every other writer and reader for
 * up to lease_ms; a timed call that gives up removes its mark, so Ctrl-C
 * stops the wait within about SLICE_MS and leaves nothing behind.  (A killed
 * waiter at the head of the queue would also be handed the lock by the next
 * release; that grant lapses after its claim window, docs/CONTRACT.md
 * section 11.5, but holds everyone up meanwhile.)  The price: between two
 * slices the waiter is briefly (two round trips) out of the writers' queue
 * and re-enters it at its tail.  So it is not strictly FIFO among exclusive
 * waiters: if the writers queued ahead of it need longer than SLICE_MS to
 * get through, it goes back behind the newer ones and can wait for as long
 * as they keep coming.  And it costs a few more Redis calls per second than
 * a blocking waiter (measured: about 16/s against 10/s with the default
 * retry_interval_ms).  Without -n/-w, Redis being unreachable (EIO) just
 * means another slice, as the library's blocking calls keep waiting; with
 * [lock] fail_fast = yes it exits 69.
 *
 * While it waits, a second thread shows who holds NAME (rdlock_status_name()
 * once a second): a status line redrawn in place on a terminal, separate
 * lines with -v otherwise; -q shows none (waitstatus.c).  It is a thread
 * of its own so that the query never widens the gap between two slices.
 * Keeping the waiter's place in the queue through a wait that signals can
 * end would need the library to let a blocked call be ended from another
 * thread; until then the slices stay.
 */
#include "rdl_build.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "rdlock.h"
#include "rdlock_tool.h"

#define SLICE_MS 500          /* one timed wait; bounds the reaction to ^C */

/* [lock] fail_fast = yes: Redis unreachable ends even a wait without -n
 * or -w (exit 69), as it ends the library's own blocking calls. */
static bool fail_fast(rdlock_client_t *c)
{
    rdlock_client_info_t info;
    return rdlock_client_info(c, &info) == 0 && info.fail_fast;
}

/* The wait's clock (and the waiting status's): never jumps. */
long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Take the lock as -n / -w / blocking say, from t0 on.  Returns true when
 * it is held; else false with *code, the exit code (*conflict set for
 * -n / -w conflicts: then *code is -E's CODE, which may be 0).  Dies by a
 * signal that arrives while waiting. */
static bool acquire_wait(rdrwlock_t *rw, rdlock_client_t *c, const opts_t *o, long long t0, int *code,
                         bool *conflict)
{
    long long deadline = o->wait == WAIT_TIMED ? t0 + o->wait_ms : -1;
    bool told_down = false;
    int rc, sig;

    *conflict = false;
    *code = 0;
    if (o->wait == WAIT_TRY) {
        rc = o->shared ? rdrwlock_tryrdlock(rw) : rdrwlock_trywrlock(rw);
        if (rc == 0)
            return true;
        if (rc == EBUSY) {
            *conflict = true;
            *code = o->conflict_code;
        } else {
            *code = op_failed(c, rc, lockdesc);
        }
        return false;
    }
    for (;;) {
        long long now = mono_ms(), until = now + SLICE_MS;
        bool last = false;
        struct timespec ts;

        if (deadline >= 0 && until >= deadline) {
            until = deadline;
            last = true;
        }
        ts.tv_sec = (time_t)(until / 1000);
        ts.tv_nsec = (long)(until % 1000) * 1000000L;
        rc = o->shared ? rdrwlock_clockrdlock(rw, CLOCK_MONOTONIC, &ts)
                       : rdrwlock_clockwrlock(rw, CLOCK_MONOTONIC, &ts);
        if ((sig = pending_signal()) != 0) {
            status_stop();
            if (rc == 0)
                rdrwlock_unlock(rw);
            die_by_signal(sig);
        }
        if (rc == 0)
            return true;
        if (rc == ETIMEDOUT && !last)
            continue;
        if (rc == ETIMEDOUT) {
            *conflict = true;
            *code = o->conflict_code;
            return false;
        }
        if (rc == EIO && !last && !fail_fast(c)) {
            if (!told_down && o->wait == WAIT_BLOCK && !quiet) {
                char where[300], reason[512];
                where_of(c, where, sizeof where);
                get_why(c, where, reason, sizeof reason);
                msg("lock %s: Redis at %s unreachable%s%s; still waiting (give up with -n or -w)", qname,
                    where, reason[0] ? ": " : "", reason);
                told_down = true;
            }
            continue;
        }
        *code = op_failed(c, rc, lockdesc);
        return false;
    }
}

/* acquire_wait() with the waiting status (and, with -v, how it ended):
 * true when held, else false with the exit code in *code. */
bool acquire(rdrwlock_t *rw, rdlock_client_t *c, const opts_t *o, int *code)
{
    long long t0 = mono_ms();
    bool conflict, held;

    if (o->wait != WAIT_TRY)
        status_start(c, o, t0);
    held = acquire_wait(rw, c, o, t0, code, &conflict);
    status_stop();
    if (verbose && held)
        msg("got %s after %.1f s", qname, (double)(mono_ms() - t0) / 1000.0);
    else if (verbose && conflict && o->wait == WAIT_TRY)
        msg("%s is held: not waiting (-n), COMMAND not run; exit status %d", qname, *code);
    else if (verbose && conflict)
        msg("%s still held after %.1f s: giving up (-w), COMMAND not run; exit status %d", qname,
            (double)(mono_ms() - t0) / 1000.0, *code);
    return held;
}

