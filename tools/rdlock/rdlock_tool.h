/*
 * rdlock_tool.h - what the files of rdlock(1) share (tools/rdlock/).  Private
 * to the tool, never installed: the tool itself uses only the public API,
 * <rdlock.h>, like any program that links librdlock.
 *
 *   main.c      the options, the usage text, dispatch to a command
 *   report.c    what rdlock says on stderr: its messages, the library's
 *               log lines, the exit code of each failure; opening the client
 *   status.c    --status NAME, as text
 *   json.c      --status --json: the JSON writer
 *   reset.c     --reset NAME
 *   run.c       NAME -- COMMAND: COMMAND runs only while NAME is held; the
 *               lost lease; --orphan
 *   acquire.c   taking NAME: -n, -w, or waiting as long as it takes
 *   waitstatus.c  who holds NAME, shown while waiting
 *   signals.c   the signals rdlock takes, forwards to COMMAND, dies by
 *   fds.c       descriptors COMMAND must not inherit
 */
#ifndef RDLOCK_TOOL_H
#define RDLOCK_TOOL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rdlock.h"

/* Exit codes (sysexits.h values, and the shell's). */
enum {
    EXIT_CONFLICT_DEFAULT = 1,
    EXIT_USAGE = 64,
    EXIT_UNAVAILABLE = 69,
    EXIT_SOFTWARE = 70,
    EXIT_OSERR = 71,
    EXIT_TEMPFAIL = 75,
    EXIT_CONFIG = 78,
    EXIT_NOEXEC = 126,
    EXIT_NOTFOUND = 127
};

#define NAME_MAX_BYTES 512    /* docs/CONTRACT.md section 5 */

/* ------------------------------------------------------------------ */
/* Options (main.c)                                                    */
/* ------------------------------------------------------------------ */

enum { MODE_RUN, MODE_STATUS, MODE_RESET };
enum { WAIT_BLOCK, WAIT_TRY, WAIT_TIMED };

typedef struct opts {
    const char *config;
    int mode;
    bool shared;
    int wait;
    long long wait_ms;
    int conflict_code;
    bool onlost_term;
    bool orphan_term;
    bool json;
    const char *name;
    char **cmd;
} opts_t;

/* ------------------------------------------------------------------ */
/* Messages and error reporting (report.c)                             */
/* ------------------------------------------------------------------ */

/* Guards stderr, so that a message, a library log line (from the library's
 * background thread) and the waiting status line never mix. */
extern pthread_mutex_t log_mu;
extern int verbose;              /* -v: 1, -vv: 2 */
extern int quiet;                /* -q */
extern const char *qname;        /* the lock name, shell-quoted, for messages */
extern char lockdesc[4 * NAME_MAX_BYTES + 16]; /* "lock NAME" */

void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void logger(int level, const char *text, void *arg);
void get_why(rdlock_client_t *c, const char *where, char *buf, size_t n);
char *shell_quote(const char *s);
const char *where_of(rdlock_client_t *c, char *buf, size_t n);
int op_failed(rdlock_client_t *c, int rc, const char *what);
int open_client(const char *config, rdlock_client_t **c);

/* ------------------------------------------------------------------ */
/* The commands: each returns rdlock's exit code                       */
/* ------------------------------------------------------------------ */

int do_status(rdlock_client_t *c, const opts_t *o);  /* status.c */
int do_reset(rdlock_client_t *c, const opts_t *o);   /* reset.c */
int do_run(rdlock_client_t *c, const opts_t *o);     /* run.c */

/* A hold could not be released (run.c): main() skips the client's close. */
extern bool keep_client;

/* The robust state as one word, the same in the text and in JSON. */
const char *robust_word(int r);

/* ------------------------------------------------------------------ */
/* JSON (json.c)                                                       */
/* ------------------------------------------------------------------ */

void json_str(FILE *f, const char *str);
void json_status(FILE *f, const char *name, const rdlock_status_t *st);
void json_server(FILE *f, unsigned k, const char *where, int rc, const rdlock_status_t *st);
void json_kinds(FILE *f, const rdlock_kinds_t *k);

/* ------------------------------------------------------------------ */
/* Waiting for NAME (acquire.c, waitstatus.c)                          */
/* ------------------------------------------------------------------ */

/* Take NAME as -n / -w / blocking say: true when held, else false with
 * the exit code in *code. */
bool acquire(rdrwlock_t *rw, rdlock_client_t *c, const opts_t *o, int *code);
long long mono_ms(void);  /* CLOCK_MONOTONIC in ms: the wait's clock */

void status_start(rdlock_client_t *c, const opts_t *o, long long t0);
void status_stop(void);
void status_join(void);
/* Erase the waiting status line, if one is shown; log_mu held. */
void status_erase_locked(void);

/* ------------------------------------------------------------------ */
/* Signals (signals.c) and descriptors (fds.c)                         */
/* ------------------------------------------------------------------ */

void signals_setup(void);
int pending_signal(void);
void die_by_signal(int sig) __attribute__((noreturn));
void signals_restore(void);
int signals_wait(siginfo_t *si);

void scan_fds(bool mark);
void fds_free(void);

#endif
