/*
 * waitstatus.c - the waiting status.  While the main thread waits (in
 * slices, acquire.c), a second thread asks the server every second who
 * holds NAME (rdlock_status_name(), one round trip on the pool) and shows
 * it:
 *   - stderr a terminal (and rdlock in its foreground process group), not
 *     -q: after STATUS_FIRST_MS, one line redrawn in place every second
 *     ("\r", text, "\033[K"; blanks instead of \033[K when TERM is unset or
 *     "dumb"), cut to the terminal's width and erased when the wait ends
 *     or before any other message;
 *   - -v and stderr not a terminal (a log): separate lines, the first after
 *     STATUS_FIRST_MS, then every STATUS_LOG_MS, or sooner (but not within
 *     STATUS_LOG_MIN_MS of the last) when the holder changes.
 * It is a thread of its own so that the status query never lengthens the
 * gap between two slices, when the waiter is out of the writers' queue.
 */
#include "rdl_build.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "rdlock.h"
#include "rdlock_tool.h"

#define STATUS_FIRST_MS 1000
#define STATUS_TTY_MS 1000
#define STATUS_LOG_MS 5000
#define STATUS_LOG_MIN_MS 1000

/* The waiting status line on a terminal: what is on screen now, so that
 * any other message (report.c) first erases it.  Guarded by log_mu. */
static bool status_shown;        /* a status line is on the terminal */
static size_t status_len;        /* its length (to blank it without ANSI) */
static bool term_ansi;           /* \033[K works (TERM set, not "dumb") */

/* Erase the status line, if one is shown; log_mu held. */
void status_erase_locked(void)
{
    if (!status_shown)
        return;
    if (term_ansi)
        fputs("\r\033[K", stderr);
    else
        fprintf(stderr, "\r%*s\r", (int)status_len, "");
    fflush(stderr);
    status_shown = false;
    status_len = 0;
}

static struct {
    pthread_t th;
    pthread_cond_t cv;
    bool running;          /* started, not joined yet */
    bool stop;             /* under log_mu: print nothing more */
    bool tty;
    rdlock_client_t *c;
    const char *name;
    long long t0;          /* mono_ms() when the wait began */
    char host[256];        /* ours, to leave our own queue mark out */
} ws;

/* s made printable (server data): control bytes as \xNN. */
static void safe_copy(char *dst, size_t n, const char *s)
{
    size_t o = 0;
    for (; *s != '\0' && o + 5 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch == 0x7f)
            o += (size_t)snprintf(dst + o, n - o, "\\x%02x", ch);
        else
            dst[o++] = (char)ch;
    }
    dst[o] = '\0';
}

/* The status text (without "rdlock: ") into buf, and in who what
 * identifies the holders (a change of holder shows at once in a log). */
static void status_text(bool shared, char *buf, size_t n, char *who, size_t wn)
{
    rdlock_status_t st;
    long long secs = (mono_ms() - ws.t0) / 1000, others;
    size_t o, i;
    int rc;

    who[0] = '\0';
    o = (size_t)snprintf(buf, n, "waiting for %s for %lld s: ", qname, secs);
    if (o >= n)
        return;
    rc = rdlock_status_name(ws.c, ws.name, &st);
    if (rc == EIO) {
        char where[300], reason[512];
        where_of(ws.c, where, sizeof where);
        get_why(ws.c, where, reason, sizeof reason);
        snprintf(buf + o, n - o, "Redis at %s unreachable%s%s", where, reason[0] ? ": " : "", reason);
        snprintf(who, wn, "down");
        return;
    }
    if (rc != 0) {
        snprintf(buf + o, n - o, "cannot read its state: %s", rdlock_strerror(rc));
        snprintf(who, wn, "error");
        return;
    }
    if (st.mode != 0 && st.nholders > 0) {
        const rdlock_party_t *p = &st.holders[0];
        char host[1024];
        safe_copy(host, sizeof host, p->host[0] ? p->host : "?");
        o += (size_t)snprintf(buf + o, n - o, "held%s by %s pid %ld", st.mode == 's' ? " shared" : "",
                              host, p->pid);
        if (o < n && st.nholders > 1)
            o += (size_t)snprintf(buf + o, n - o, " and %zu other%s", st.nholders - 1,
                                  st.nholders > 2 ? "s" : "");
        snprintf(who, wn, "%c %zu %s", st.mode, st.nholders, p->owner);
    } else {
        o += (size_t)snprintf(buf + o, n - o, "not held at this moment");
        snprintf(who, wn, "free");
    }
    /* Others waiting: queued writers but this one (when it is in the
     * queue: not between two slices), and waiting readers but this one. */
    others = st.readers_waiting;
    if (shared && others > 0)
        others--;
    for (i = 0; i < st.nwriters; i++)
        if (!(st.writers[i].pid == (long)getpid() && strcmp(st.writers[i].host, ws.host) == 0))
            others++;
    if (o < n) {
        if (others == 0)
            snprintf(buf + o, n - o, ", no one else waiting");
        else
            snprintf(buf + o, n - o, ", %lld other%s waiting", others, others == 1 ? "" : "s");
    }
    rdlock_status_free(&st);
}

/* Draw text as the terminal's status line; log_mu held. */
static void status_draw_locked(const char *text)
{
    struct winsize wsz;
    char line[4200];
    size_t len;

    /* Not from the background: no mess on the shell's prompt, and no
     * SIGTTOU stop under `stty tostop`. */
    if (tcgetpgrp(STDERR_FILENO) != getpgrp()) {
        status_erase_locked();
        return;
    }
    snprintf(line, sizeof line, "rdlock: %s", text);
    len = strlen(line);
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &wsz) == 0 && wsz.ws_col > 1 && len > (size_t)wsz.ws_col - 1) {
        len = (size_t)wsz.ws_col - 1; /* one line, never wrapped: \r can redraw it */
        line[len] = '\0';
    }
    if (term_ansi)
        fprintf(stderr, "\r%s\033[K", line);
    else
        fprintf(stderr, "\r%s%*s", line, status_len > len ? (int)(status_len - len) : 0, "");
    fflush(stderr);
    status_shown = true;
    status_len = len;
}

static void *status_main(void *arg)
{
    bool shared = *(const bool *)arg;
    long long next = ws.t0 + STATUS_FIRST_MS, last = -1;
    char text[4096], who[200], last_who[200] = "";

    pthread_mutex_lock(&log_mu);
    for (;;) {
        long long now;
        while (!ws.stop && (now = mono_ms()) < next) {
            struct timespec ts;
            ts.tv_sec = (time_t)(next / 1000);
            ts.tv_nsec = (long)(next % 1000) * 1000000L;
            pthread_cond_timedwait(&ws.cv, &log_mu, &ts);
        }
        if (ws.stop)
            break;
        pthread_mutex_unlock(&log_mu);
        status_text(shared, text, sizeof text, who, sizeof who);
        pthread_mutex_lock(&log_mu);
        if (ws.stop)
            break;
        now = mono_ms();
        if (ws.tty) {
            status_draw_locked(text);
        } else if (last < 0 || now - last >= STATUS_LOG_MS ||
                   (strcmp(who, last_who) != 0 && now - last >= STATUS_LOG_MIN_MS)) {
            fprintf(stderr, "rdlock: %s\n", text);
            fflush(stderr);
            last = now;
            snprintf(last_who, sizeof last_who, "%s", who);
        }
        next = now + STATUS_TTY_MS;
    }
    pthread_mutex_unlock(&log_mu);
    return NULL;
}

/* Start the status thread for a wait that began at t0, if anything is to
 * be shown. */
void status_start(rdlock_client_t *c, const opts_t *o, long long t0)
{
    static bool shared;
    pthread_condattr_t ca;
    sigset_t all, old;
    const char *term = getenv("TERM");

    ws.tty = isatty(STDERR_FILENO) == 1;
    if (quiet || (!ws.tty && !verbose))
        return;
    term_ansi = term != NULL && term[0] != '\0' && strcmp(term, "dumb") != 0;
    ws.c = c;
    ws.name = o->name;
    ws.t0 = t0;
    ws.stop = false;
    shared = o->shared;
    if (gethostname(ws.host, sizeof ws.host - 1) != 0)
        ws.host[0] = '\0';
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ws.cv, &ca);
    pthread_condattr_destroy(&ca);
    /* Signals stay with the main thread (sigtimedwait/sigwaitinfo). */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    ws.running = pthread_create(&ws.th, NULL, status_main, &shared) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ws.running)
        pthread_cond_destroy(&ws.cv);
}

/* The wait is over: nothing more is printed, the line is erased.  Cheap;
 * the thread is joined later (status_join), so that a status query under
 * way does not delay COMMAND. */
void status_stop(void)
{
    pthread_mutex_lock(&log_mu);
    ws.stop = true;
    status_erase_locked();
    if (ws.running)
        pthread_cond_signal(&ws.cv);
    pthread_mutex_unlock(&log_mu);
}

/* Before the client is closed. */
void status_join(void)
{
    if (!ws.running)
        return;
    status_stop();
    pthread_join(ws.th, NULL);
    pthread_cond_destroy(&ws.cv);
    ws.running = false;
}
