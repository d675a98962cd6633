/*
 * signals.c - rdlock's signals: which ones it takes, how it takes them, and
 * how it dies by one.
 *
 * Signals: SIGINT, SIGTERM, SIGHUP (those not ignored when rdlock
 * starts) and SIGCHLD are blocked in the main thread from the start (the
 * library's background thread blocks every signal) and are taken with
 * sigtimedwait()/sigwaitinfo(), so no handler races with fork.  While
 * waiting for the lock they end the wait: rdlock then dies by the same
 * signal (the shell reports 128+N; re-raising, rather than exit(128+N),
 * lets a calling shell loop see that the user pressed Ctrl-C).  While
 * COMMAND runs they are forwarded to it, except a signal the kernel sent
 * to our whole process group (terminal ^C, ^\, hang-up: si_code
 * SI_KERNEL) when COMMAND is in that group too, so that it does not get
 * it twice.
 */
#include "rdl_build.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdlock.h"
#include "rdlock_tool.h"

static sigset_t orig_mask;        /* as inherited: restored for COMMAND */
static sigset_t fwd_set;          /* SIGINT/TERM/HUP not ignored at start */
static sigset_t wait_set;         /* fwd_set + SIGCHLD */
static struct sigaction orig_chld;

static void on_sigchld(int sig)
{
    (void)sig; /* never runs: SIGCHLD stays blocked and is taken by sigwaitinfo */
}

void signals_setup(void)
{
    static const int fwd[] = { SIGINT, SIGTERM, SIGHUP };
    struct sigaction sa;
    size_t i;

    sigemptyset(&fwd_set);
    for (i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
        struct sigaction cur;
        /* A signal ignored at start (a background job's SIGINT) stays
         * ignored, for us and for COMMAND. */
        if (sigaction(fwd[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
            sigaddset(&fwd_set, fwd[i]);
    }
    wait_set = fwd_set;
    sigaddset(&wait_set, SIGCHLD);
    /* A handler (not SIG_DFL or an inherited SIG_IGN, which would reap
     * COMMAND behind our back), so that SIGCHLD is never discarded. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, &orig_chld);
    pthread_sigmask(SIG_BLOCK, &wait_set, &orig_mask);
}

/* A pending SIGINT/TERM/HUP, taken; 0 if none. */
int pending_signal(void)
{
    static const struct timespec zero = { 0, 0 };
    siginfo_t si;
    int s = sigtimedwait(&fwd_set, &si, &zero);
    return s > 0 ? s : 0;
}

/* Die by sig (the shell then reports 128+sig). */
void die_by_signal(int sig)
{
    sigset_t one;
    fflush(stdout);
    fflush(stderr);
    signal(sig, SIG_DFL);
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig); /* pending while blocked */
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    _exit(128 + sig);
}

/* COMMAND's signal state as rdlock inherited it (mask, SIGCHLD's
 * disposition): called in the child between fork and exec, so
 * async-signal-safe calls only. */
void signals_restore(void)
{
    sigaction(SIGCHLD, &orig_chld, NULL);
    sigprocmask(SIG_SETMASK, &orig_mask, NULL);
}

/* Take the next SIGINT/TERM/HUP or SIGCHLD (all blocked since
 * signals_setup()), waiting for it: the signal, or -1 (EINTR). */
int signals_wait(siginfo_t *si)
{
    return sigwaitinfo(&wait_set, si);
}
