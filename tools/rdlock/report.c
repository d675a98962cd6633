/*
 * report.c - what rdlock(1) says on stderr: its own messages, the library's
 * log lines (rdlock_set_logger), and for each failure the message and the
 * exit code that go with it; opening the client, whose own log lines are
 * held back until it is known whether the open failed.
 *
 * Every line goes out under log_mu, so that a message, a library line from
 * the library's background thread and the waiting status line
 * (waitstatus.c) never mix: a message first erases the status line.
 */
#include "rdl_build.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdlock.h"
#include "rdlock_tool.h"

/* ------------------------------------------------------------------ */
/* Messages and the library's log lines                                */
/* ------------------------------------------------------------------ */

pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
int verbose;                     /* -v: 1, -vv: 2 */
int quiet;                       /* -q */
static bool stashing;            /* collect ERROR/WARN lines instead of printing */
static char stash[8192];
static size_t stash_len;

void msg(const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_mu);
    status_erase_locked();
    fprintf(stderr, "rdlock: %s\n", line);
    fflush(stderr);
    pthread_mutex_unlock(&log_mu);
}

/* rdlock_set_logger hook; may run on the library's background thread. */
void logger(int level, const char *text, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&log_mu);
    /* rdlock reports a lost lease itself, with what it did about it. */
    if (level == RDLOCK_LOG_WARN && !verbose &&
        (strstr(text, ": lease lost (") != NULL || strstr(text, "had been lost before the unlock") != NULL))
        level = RDLOCK_LOG_INFO;
    /* -q: the library's warnings are chatter; the tool reports every
     * failure that decides its exit status itself, with the reason. */
    if (quiet && !stashing && level >= RDLOCK_LOG_WARN) {
        pthread_mutex_unlock(&log_mu);
        return;
    }
    if (level <= RDLOCK_LOG_WARN) {
        size_t need = strlen(text) + 9; /* "rdlock: " text "\n" */
        if (stashing && stash_len + need >= sizeof stash) {
            /* Too much to collect (a config file with many problems: the
             * open fails, and everything is shown anyway). */
            fputs(stash, stderr);
            stash_len = 0;
            stash[0] = '\0';
        }
        if (stashing && need < sizeof stash) {
            snprintf(stash + stash_len, sizeof stash - stash_len, "rdlock: %s\n", text);
            stash_len += need;
        } else {
            status_erase_locked();
            fprintf(stderr, "rdlock: %s\n", text);
        }
    } else if (verbose >= (level == RDLOCK_LOG_INFO ? 1 : 2)) {
        status_erase_locked();
        fprintf(stderr, "rdlock: %s: %s\n", level == RDLOCK_LOG_INFO ? "info" : "debug", text);
    }
    pthread_mutex_unlock(&log_mu);
}

/* The reason Redis failed us, without a leading "<where>: ": the client's
 * last connection error, else the last error the library logged on this
 * thread. */
void get_why(rdlock_client_t *c, const char *where, char *buf, size_t n)
{
    rdlock_client_info_t info;
    size_t wl = strlen(where);
    char why[512];

    if (c != NULL && rdlock_client_info(c, &info) == 0 && info.last_error[0] != '\0')
        snprintf(why, sizeof why, "%s", info.last_error);
    else
        rdlock_last_error(why, sizeof why);
    if (wl > 0 && strncmp(why, where, wl) == 0 && strncmp(why + wl, ": ", 2) == 0)
        snprintf(buf, n, "%s", why + wl + 2);
    else
        snprintf(buf, n, "%s", why);
}

/* NAME quoted for a POSIX shell (or, with unprintable bytes, $'...'), so
 * that messages show it unambiguously and `rdlock --reset NAME` can be
 * pasted. */
char *shell_quote(const char *s)
{
    size_t n = strlen(s), i, o = 0;
    bool plain = n > 0, printable = true;
    char *out;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f)
            printable = false;
        if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') && !(ch >= '0' && ch <= '9') &&
            strchr("_./:@%+=,-", ch) == NULL)
            plain = false;
    }
    out = malloc(4 * n + 4);
    if (out == NULL)
        return NULL;
    if (plain) {
        memcpy(out, s, n + 1);
        return out;
    }
    if (printable) {
        out[o++] = '\'';
        for (i = 0; i < n; i++) {
            if (s[i] == '\'') {
                memcpy(out + o, "'\\''", 4);
                o += 4;
            } else
                out[o++] = s[i];
        }
        out[o++] = '\'';
        out[o] = '\0';
        return out;
    }
    out[o++] = '$';
    out[o++] = '\'';
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\'' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20 || ch >= 0x7f) {
            o += (size_t)snprintf(out + o, 5, "\\x%02x", ch);
        } else
            out[o++] = (char)ch;
    }
    out[o++] = '\'';
    out[o] = '\0';
    return out;
}

const char *qname = "";          /* the lock name, shell-quoted, for messages */
char lockdesc[4 * NAME_MAX_BYTES + 16] = "lock"; /* "lock NAME" */

/* ------------------------------------------------------------------ */
/* Client and error reporting                                          */
/* ------------------------------------------------------------------ */

const char *where_of(rdlock_client_t *c, char *buf, size_t n)
{
    rdlock_client_info_t info;
    snprintf(buf, n, "%s", rdlock_client_info(c, &info) == 0 ? info.server : "Redis");
    return buf;
}

/* Report a failed operation on c; returns the exit code. */
int op_failed(rdlock_client_t *c, int rc, const char *what)
{
    char where[300], reason[512];

    switch (rc) {
    case EIO:
        where_of(c, where, sizeof where);
        get_why(c, where, reason, sizeof reason);
        msg("%s: cannot reach Redis at %s: %s", what, where, reason[0] ? reason : rdlock_strerror(EIO));
        return EXIT_UNAVAILABLE;
    case EACCES:
        where_of(c, where, sizeof where);
        get_why(c, where, reason, sizeof reason);
        msg("%s: Redis at %s refused access%s%s", what, where, reason[0] ? ": " : "", reason);
        return EXIT_UNAVAILABLE;
    case EINVAL:
    case ENOENT:
        msg("%s: configuration error: %s", what, rdlock_strerror(rc));
        return EXIT_CONFIG;
    case ENOTRECOVERABLE:
        msg("lock %s is not recoverable: a robust owner's hold ended without unlock and its state was "
            "not repaired; once the protected state is repaired, run: rdlock --reset %s",
            qname, qname);
        return EXIT_SOFTWARE;
    case ENOMEM:
        msg("%s: %s", what, rdlock_strerror(rc));
        return EXIT_OSERR;
    default:
        msg("%s: unexpected error: %s", what, rdlock_strerror(rc));
        return EXIT_SOFTWARE;
    }
}

/* Which file a config error is about. */
static const char *config_source(const char *config)
{
    const char *env = getenv("RDLOCK_CONF");
    if (config != NULL)
        return config;
    if (env != NULL && env[0] != '\0')
        return env;
    return RDLOCK_SYSCONFDIR "/rdlock.ini";
}

/* Open the client; on failure report and return the exit code (0 = ok). */
int open_client(const char *config, rdlock_client_t **c)
{
    int rc, src;
    char reason[512];
    bool said;

    pthread_mutex_lock(&log_mu);
    stashing = true;
    stash_len = 0;
    stash[0] = '\0';
    pthread_mutex_unlock(&log_mu);

    rc = rdlock_client_open(c, config);

    pthread_mutex_lock(&log_mu);
    stashing = false;
    /* On success the only possible line says that Redis is unreachable for
     * now; the operation that follows reports that itself if it matters. */
    if (rc != 0)
        fputs(stash, stderr);
    src = rdlock_last_error(reason, sizeof reason);
    said = reason[0] != '\0' && strstr(stash, reason) != NULL; /* printed just now */
    pthread_mutex_unlock(&log_mu);

    switch (rc) {
    case 0:
        return 0;
    case EINVAL:
    case ENOENT: /* the file, or its password_file: the lines above say which */
        msg("configuration error in %s", config_source(config));
        return EXIT_CONFIG;
    case EACCES:
        if (src == RDLOCK_ERRSRC_CONFIG) { /* unreadable config or password_file */
            msg("configuration error in %s", config_source(config));
            return EXIT_CONFIG;
        }
        msg("%s: Redis refused access%s%s", lockdesc, reason[0] && !said ? ": " : "", said ? "" : reason);
        return EXIT_UNAVAILABLE;
    case EIO:
        msg("%s: cannot reach Redis%s%s", lockdesc, reason[0] && !said ? ": " : "", said ? "" : reason);
        return EXIT_UNAVAILABLE;
    case ENOMEM:
        msg("%s", rdlock_strerror(rc));
        return EXIT_OSERR;
    default:
        msg("%s: cannot open a client: %s", lockdesc, rdlock_strerror(rc));
        return EXIT_SOFTWARE;
    }
}
