/*
 * run.c - rdlock NAME -- COMMAND: hold NAME while COMMAND runs, and what
 * happens when the lease is lost or rdlock dies.
 *
 * The lock is an rdrwlock_t on a client opened from -c FILE (or the usual
 * search: $RDLOCK_CONF, $(sysconfdir)/rdlock.ini, defaults): wrlock is the
 * exclusive mode, rdlock (-s) the shared one; it is the same lock as an
 * rdlock_t of that name.  The watchdog is forced on for the hold, so the
 * lease is renewed for as long as COMMAND runs ([watchdog] max_hold_ms
 * still applies: reaching it counts as a lost lease).
 *
 * COMMAND runs in a child made with fork() + execvp(); an exec failure
 * comes back to the parent as an errno through a close-on-exec pipe
 * (ENOENT: 127, anything else: 126).  The child restores the original
 * signal mask and SIGCHLD disposition and gets RDLOCK_FENCING_TOKEN in a
 * copied environment (no setenv() while the background thread runs).
 * The library's fork handler closes its pooled connections in the child;
 * in case one is not in the pool then (or a future version misses one),
 * descriptors opened since rdlock started are also made close-on-exec
 * before the fork (fds.c), so COMMAND never inherits a Redis connection,
 * while descriptors rdlock itself inherited are passed on untouched.
 *
 * COMMAND runs only while NAME is held.  Whether the lock was taken is
 * its own answer (acquire() returns it beside the exit code), never read
 * from the exit code: -E may make "not taken" exit 0, or any code COMMAND
 * itself uses.
 *
 * Lost lease: the lost callback runs on the library's background thread
 * as soon as the watchdog finds the loss (its next renewal round at the
 * latest).  What it does depends on where the main thread is (run_mu
 * guards both): before COMMAND starts, it only sets the flag, and COMMAND
 * is never started; while COMMAND runs, it sends COMMAND SIGTERM (unless
 * --on-lost=ignore) and says so; after COMMAND exited (the unlock found
 * the loss), the main thread reports it.  rdlock exits 75 once COMMAND
 * has exited, whatever COMMAND's own status (which the message reports):
 * the work was not protected to its end, and that is what the caller must
 * learn.
 *
 * rdlock killed (SIGKILL, the OOM killer): flock(1)'s COMMAND inherits
 * the lock, ours cannot, and would run on unprotected once the lease
 * lapses.  So the child asks the kernel for SIGTERM when rdlock's main
 * thread dies (PR_SET_PDEATHSIG, Linux), and checks that rdlock is still
 * its parent after asking, so that a death between fork and prctl is not
 * missed: then COMMAND is never started.  --orphan=keep skips this.
 */
#include "rdl_build.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdlock.h"
#include "rdlock_tool.h"

extern char **environ;

/* Where the main thread is, shared with the lost callback (which runs on
 * the library's background thread); run_mu guards all of it, so that the
 * callback never sees COMMAND started without its pid, and a loss found
 * just before the fork keeps COMMAND from starting. */
enum { PHASE_HELD, PHASE_RUNNING, PHASE_DONE };
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static int phase = PHASE_HELD;
static bool lost;           /* the lease was found lost */
static bool loss_told;      /* the callback reported the loss while COMMAND ran */
static pid_t child;         /* COMMAND's pid in PHASE_RUNNING */
static bool onlost_term = true;
static bool orphan_term = true;

static void on_lost(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    pthread_mutex_lock(&run_mu);
    lost = true;
    /* Before COMMAND, nothing runs unprotected yet: do_run will not start
     * it and says so; after it, do_run reports what the unlock found.  So
     * only a loss while COMMAND runs is told here, at once. */
    if (phase == PHASE_RUNNING && !loss_told) {
        if (onlost_term) {
            kill(child, SIGTERM);
            msg("lock %s: lease lost (expired, taken over, deleted or reset) while COMMAND runs; "
                "sent SIGTERM to COMMAND (pid %ld)", qname, (long)child);
        } else {
            msg("lock %s: lease lost (expired, taken over, deleted or reset) while COMMAND runs; "
                "--on-lost=ignore: COMMAND (pid %ld) keeps running without the lock", qname, (long)child);
        }
        loss_told = true;
    }
    pthread_mutex_unlock(&run_mu);
}

static bool lease_lost(void)
{
    bool l;
    pthread_mutex_lock(&run_mu);
    l = lost;
    pthread_mutex_unlock(&run_mu);
    return l;
}

/* environ plus RDLOCK_FENCING_TOKEN=token (replacing any old one), which
 * is the last entry; free with free_env(). */
static char **child_env(uint64_t token)
{
    static const char var[] = "RDLOCK_FENCING_TOKEN=";
    size_t n = 0, i, o = 0;
    char **env;
    char *def;

    while (environ != NULL && environ[n] != NULL)
        n++;
    env = malloc((n + 2) * sizeof *env);
    def = malloc(sizeof var + 24);
    if (env == NULL || def == NULL) {
        free(env);
        free(def);
        return NULL;
    }
    snprintf(def, sizeof var + 24, "%s%" PRIu64, var, token);
    for (i = 0; i < n; i++)
        if (strncmp(environ[i], var, sizeof var - 1) != 0)
            env[o++] = environ[i];
    env[o++] = def;
    env[o] = NULL;
    return env;
}

static void free_env(char **env)
{
    size_t n = 0;
    while (env[n] != NULL)
        n++;
    free(env[n - 1]); /* ours; the others belong to environ */
    free(env);
}

static const char *signame(int sig)
{
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return NULL;
    }
}

static void describe_status(int status, char *buf, size_t n)
{
    if (WIFEXITED(status))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status) && signame(WTERMSIG(status)) != NULL)
        snprintf(buf, n, "was killed by %s", signame(WTERMSIG(status)));
    else if (WIFSIGNALED(status))
        snprintf(buf, n, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, n, "ended with wait status %#x", (unsigned)status);
}

/* COMMAND has exited: its pid is no longer ours to signal. */
static void finish_phase(void)
{
    pthread_mutex_lock(&run_mu);
    phase = PHASE_DONE;
    child = 0;
    pthread_mutex_unlock(&run_mu);
}

/* What the child reports through the close-on-exec pipe when it cannot
 * run COMMAND. */
typedef struct child_err {
    int stage; /* CHILD_EXEC, CHILD_PDEATHSIG */
    int err;   /* errno */
} child_err_t;
enum { CHILD_EXEC, CHILD_PDEATHSIG };

/* The child, before exec: COMMAND gets SIGTERM when rdlock dies
 * (--orphan=term).  0, or an errno.  Async-signal-safe. */
static int child_pdeathsig(pid_t parent)
{
#ifdef PR_SET_PDEATHSIG
    if (!orphan_term)
        return 0;
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
        return errno;
    /* rdlock died between fork and prctl: no signal will come, and nobody
     * holds the lock for COMMAND.  Do not start it. */
    if (getppid() != parent)
        _exit(EXIT_TEMPFAIL);
    return 0;
#else
    (void)parent;
    return 0;
#endif
}

/* The child, after the fork: COMMAND's own signal state and environment,
 * then exec.  Async-signal-safe calls only until exec (the parent has
 * other threads, whose locks may be held in this copy).  What went wrong
 * goes to the parent through wfd, which the exec closes when it works. */
static void child_exec(char **cmd, char **env, int wfd, pid_t parent) __attribute__((noreturn));
static void child_exec(char **cmd, char **env, int wfd, pid_t parent)
{
    child_err_t ce = { CHILD_EXEC, 0 };

    if ((ce.err = child_pdeathsig(parent)) != 0) {
        ce.stage = CHILD_PDEATHSIG;
    } else {
        signals_restore();
        environ = env;
        execvp(cmd[0], cmd);
        ce.err = errno;
    }
    while (write(wfd, &ce, sizeof ce) < 0 && errno == EINTR)
        ;
    _exit(ce.stage == CHILD_EXEC && ce.err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* COMMAND (pid) runs: wait for its exit into *status, forwarding the
 * signals rdlock gets to it. */
static void wait_command(pid_t pid, int *status)
{
    for (;;) {
        siginfo_t si;
        int s = signals_wait(&si);
        if (s < 0)
            continue; /* EINTR */
        if (s == SIGCHLD) {
            pid_t w = waitpid(pid, status, WNOHANG);
            if (w == pid)
                return;
            if (w < 0 && errno == ECHILD) { /* cannot happen: we own SIGCHLD */
                *status = 0;
                return;
            }
            continue;
        }
        /* A kernel-sent signal to our process group (terminal ^C, hang-up)
         * reached COMMAND already if it is in our group. */
        if (si.si_code == SI_KERNEL && getpgid(pid) == getpgrp())
            continue;
        kill(pid, s);
    }
}

/* Start COMMAND unless the lease was lost already, and wait for it,
 * forwarding signals.  Returns 0 with *status and *exec_err (0, or the
 * errno of a failed exec), -1 when the lease was lost before COMMAND could
 * start (not started), or an exit code for a system failure. */
static int run_command(char **cmd, uint64_t token, int *status, int *exec_err)
{
    char **env = child_env(token);
    int pfd[2];
    child_err_t ce = { CHILD_EXEC, 0 };
    ssize_t r;
    pid_t pid, parent = getpid();

    *exec_err = 0;
    if (env == NULL) {
        msg("%s", strerror(ENOMEM));
        return EXIT_OSERR;
    }
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        msg("pipe: %s", strerror(errno));
        free_env(env);
        return EXIT_OSERR;
    }
    scan_fds(true);
    fflush(stdout);
    fflush(stderr);
    /* Held across the fork (the callback waits a moment): a loss found
     * before it keeps COMMAND from starting, one found after it finds the
     * pid. */
    pthread_mutex_lock(&run_mu);
    if (lost) {
        pthread_mutex_unlock(&run_mu);
        close(pfd[0]);
        close(pfd[1]);
        free_env(env);
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        int e = errno;
        pthread_mutex_unlock(&run_mu);
        close(pfd[0]);
        close(pfd[1]);
        free_env(env);
        msg("fork: %s", strerror(e));
        return EXIT_OSERR;
    }
    if (pid == 0) {
        /* The child: async-signal-safe calls only until exec. */
        close(pfd[0]);
        child_exec(cmd, env, pfd[1], parent);
    }
    child = pid;
    phase = PHASE_RUNNING;
    pthread_mutex_unlock(&run_mu);
    close(pfd[1]);
    free_env(env);
    do
        r = read(pfd[0], &ce, sizeof ce);
    while (r < 0 && errno == EINTR);
    close(pfd[0]);
    if (r == (ssize_t)sizeof ce && ce.stage == CHILD_PDEATHSIG) {
        /* Cannot happen on Linux (prctl only fails for a bad signal), but
         * COMMAND must not run unwatched for it: say so and fail. */
        msg("cannot ask for COMMAND's end at rdlock's death: prctl: %s (use --orphan=keep to run anyway)",
            strerror(ce.err));
        waitpid(pid, status, 0);
        finish_phase();
        return EXIT_OSERR;
    }
    if (r == (ssize_t)sizeof ce)
        *exec_err = ce.err;

    wait_command(pid, status);
    finish_phase();
    return 0;
}

bool keep_client; /* a hold could not be released: skip the close */

/* COMMAND has exited: release NAME, trying three times while Redis is
 * unreachable.  A loss the unlock finds (ENOLCK) is recorded for
 * command_exit_code(); a hold that could not be released keeps the client
 * open (keep_client), as closing it would fail with EBUSY. */
static void release_after_command(rdrwlock_t *rw, rdlock_client_t *c)
{
    int rc, tries;

    for (tries = 0;; tries++) {
        rc = rdrwlock_unlock(rw);
        if (rc != EIO || tries >= 2)
            break;
    }
    if (rc == ENOLCK) {
        pthread_mutex_lock(&run_mu);
        lost = true;
        pthread_mutex_unlock(&run_mu);
    } else if (rc == EIO) {
        char where[300];
        msg("lock %s: could not release it (Redis at %s unreachable); it frees itself when its lease "
            "runs out", qname, where_of(c, where, sizeof where));
    } else if (rc != 0)
        msg("lock %s: unlock: %s", qname, rdlock_strerror(rc));
    if (rc == 0 || rc == ENOLCK)
        rdrwlock_destroy(rw);
    else
        keep_client = true; /* still holds it: no close (EBUSY) */
}

/* rdlock's exit code once COMMAND has run: the exec's failure (126, 127),
 * else 75 when the lease was lost on the way (reported once), else
 * COMMAND's own status. */
static int command_exit_code(const opts_t *o, int status, int exec_err)
{
    char desc[128];

    if (exec_err != 0) {
        if (exec_err == ENOENT) {
            msg("%s: command not found", o->cmd[0]);
            return EXIT_NOTFOUND;
        }
        msg("%s: cannot execute: %s", o->cmd[0], strerror(exec_err));
        return EXIT_NOEXEC;
    }
    describe_status(status, desc, sizeof desc);
    if (lease_lost()) {
        /* One report of the loss: the callback's, when it came while
         * COMMAND ran; else this one (the unlock found it). */
        if (loss_told)
            msg("lock %s: COMMAND %s after the lease was lost; exit status %d", qname, desc, EXIT_TEMPFAIL);
        else
            msg("lock %s: the lease was lost before COMMAND finished (found at the unlock); COMMAND %s; "
                "exit status %d", qname, desc, EXIT_TEMPFAIL);
        return EXIT_TEMPFAIL;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return EXIT_SOFTWARE;
}

/* rdlock NAME -- COMMAND: take NAME, run COMMAND under it, release it;
 * returns the exit code (or dies by a signal that ended the wait). */
int do_run(rdlock_client_t *c, const opts_t *o)
{
    rdlock_attr_t a;
    rdrwlock_t rw;
    uint64_t token = 0;
    int rc, code, sig, status = 0, exec_err = 0;

    onlost_term = o->onlost_term;
    orphan_term = o->orphan_term;
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, c);
    rdlock_attr_setlostcb(&a, on_lost, NULL);
    rdlock_attr_setwatchdog(&a, 1); /* renew for as long as COMMAND runs */
    rc = rdrwlock_init(&rw, o->name, &a);
    rdlock_attr_destroy(&a);
    if (rc != 0)
        return op_failed(c, rc, lockdesc);

    if (!acquire(&rw, c, o, &code)) {
        /* Not held: COMMAND never runs, whatever the exit code says. */
        rdrwlock_destroy(&rw);
        return code;
    }
    if ((sig = pending_signal()) != 0) {
        /* Told to stop before COMMAND started (during -n, say). */
        rdrwlock_unlock(&rw);
        rdrwlock_destroy(&rw);
        die_by_signal(sig);
    }
    rdrwlock_fencing_token(&rw, &token);

    code = run_command(o->cmd, token, &status, &exec_err);
    if (code < 0) {
        /* Lost before COMMAND could start: it does not run unprotected. */
        rdrwlock_unlock(&rw);
        rdrwlock_destroy(&rw);
        msg("lock %s: lease lost (expired, taken over, deleted or reset) before COMMAND started; "
            "COMMAND not run; exit status %d", qname, EXIT_TEMPFAIL);
        return EXIT_TEMPFAIL;
    }
    if (code != 0) {
        rdrwlock_unlock(&rw);
        rdrwlock_destroy(&rw);
        return code;
    }

    release_after_command(&rw, c);
    return command_exit_code(o, status, exec_err);
}
