/*
 * rdlock(1) - run a command while holding a distributed lock on Redis: what
 * flock(1) is to file locks (docs/CONTRACT.md section 8).
 *
 *   rdlock [-c FILE] [-s] [-n | -w SECONDS] [-E CODE] [--on-lost=term|ignore]
 *          [--orphan=term|keep] [-v | -q] NAME -- COMMAND [ARG...]
 *   rdlock [-c FILE] [--json] --status NAME
 *   rdlock [-c FILE] --reset NAME
 *
 * Design notes
 *
 * - The lock is an rdrwlock_t on a client opened from -c FILE (or the usual
 *   search: $RDLOCK_CONF, $(sysconfdir)/rdlock.ini, defaults): wrlock is the
 *   exclusive mode, rdlock (-s) the shared one; it is the same lock as an
 *   rdlock_t of that name.  The watchdog is forced on for the hold, so the
 *   lease is renewed for as long as COMMAND runs ([watchdog] max_hold_ms
 *   still applies: reaching it counts as a lost lease).
 *
 * - Waiting is done in the main thread in slices of SLICE_MS: a timed acquire
 *   (rdrwlock_clock*lock on CLOCK_MONOTONIC) with a short deadline, repeated,
 *   looking for SIGINT/SIGTERM/SIGHUP between slices.  The library's blocking
 *   calls cannot be interrupted, and a waiter killed in one would leave its
 *   writer queue mark behind, holding back every other writer and reader for
 *   up to lease_ms; a timed call that gives up removes its mark, so Ctrl-C
 *   stops the wait within about SLICE_MS and leaves nothing behind.  (A killed
 *   waiter at the head of the queue would also be handed the lock by the next
 *   release; that grant lapses after its claim window, docs/CONTRACT.md
 *   section 11.5, but holds everyone up meanwhile.)  The price: between two
 *   slices the waiter is briefly (two round trips) out of the writers' queue
 *   and re-enters it at its tail.  So it is not strictly FIFO among exclusive
 *   waiters: if the writers queued ahead of it need longer than SLICE_MS to
 *   get through, it goes back behind the newer ones and can wait for as long
 *   as they keep coming.  And it costs a few more Redis calls per second than
 *   a blocking waiter (measured: about 16/s against 10/s with the default
 *   retry_interval_ms).  Without -n/-w, Redis being unreachable (EIO) just
 *   means another slice, as the library's blocking calls keep waiting; with
 *   [lock] fail_fast = yes it exits 69.
 *
 * - While it waits, a second thread shows who holds NAME (rdlock_status_name()
 *   once a second): a status line redrawn in place on a terminal, separate
 *   lines with -v otherwise; -q shows none ("Waiting status" below).  It is
 *   a thread of its own so that the query never widens the gap between two
 *   slices.  Keeping the waiter's place in the queue through a wait that
 *   signals can end would need the library to let a blocked call be ended
 *   from another thread; until then the slices stay.
 *
 * - Signals: SIGINT, SIGTERM, SIGHUP (those not ignored when rdlock
 *   starts) and SIGCHLD are blocked in the main thread from the start (the
 *   library's background thread blocks every signal) and are taken with
 *   sigtimedwait()/sigwaitinfo(), so no handler races with fork.  While
 *   waiting for the lock they end the wait: rdlock then dies by the same
 *   signal (the shell reports 128+N; re-raising, rather than exit(128+N),
 *   lets a calling shell loop see that the user pressed Ctrl-C).  While
 *   COMMAND runs they are forwarded to it, except a signal the kernel sent
 *   to our whole process group (terminal ^C, ^\, hang-up: si_code
 *   SI_KERNEL) when COMMAND is in that group too, so that it does not get
 *   it twice.
 *
 * - COMMAND runs in a child made with fork() + execvp(); an exec failure
 *   comes back to the parent as an errno through a close-on-exec pipe
 *   (ENOENT: 127, anything else: 126).  The child restores the original
 *   signal mask and SIGCHLD disposition and gets RDLOCK_FENCING_TOKEN in a
 *   copied environment (no setenv() while the background thread runs).
 *   The library's fork handler closes its pooled connections in the child;
 *   in case one is not in the pool then (or a future version misses one),
 *   descriptors opened since rdlock started are also made close-on-exec
 *   before the fork, so COMMAND never inherits a Redis connection, while
 *   descriptors rdlock itself inherited are passed on untouched.
 *
 * - COMMAND runs only while NAME is held.  Whether the lock was taken is
 *   its own answer (acquire() returns it beside the exit code), never read
 *   from the exit code: -E may make "not taken" exit 0, or any code COMMAND
 *   itself uses.
 *
 * - Lost lease: the lost callback runs on the library's background thread
 *   as soon as the watchdog finds the loss (its next renewal round at the
 *   latest).  What it does depends on where the main thread is (run_mu
 *   guards both): before COMMAND starts, it only sets the flag, and COMMAND
 *   is never started; while COMMAND runs, it sends COMMAND SIGTERM (unless
 *   --on-lost=ignore) and says so; after COMMAND exited (the unlock found
 *   the loss), the main thread reports it.  rdlock exits 75 once COMMAND
 *   has exited, whatever COMMAND's own status (which the message reports):
 *   the work was not protected to its end, and that is what the caller must
 *   learn.
 *
 * - rdlock killed (SIGKILL, the OOM killer): flock(1)'s COMMAND inherits
 *   the lock, ours cannot, and would run on unprotected once the lease
 *   lapses.  So the child asks the kernel for SIGTERM when rdlock's main
 *   thread dies (PR_SET_PDEATHSIG, Linux), and checks that rdlock is still
 *   its parent after asking, so that a death between fork and prctl is not
 *   missed: then COMMAND is never started.  --orphan=keep skips this.
 *
 * - Only the public API (<rdlock.h>): rdlock_status_name() and
 *   rdlock_status_kinds() for --status,
 *   rdlock_client_info() for the server's address and fail_fast, and
 *   rdlock_last_error() for the reason behind a failure.
 */
#include "rdl_build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdlock.h"
#include "rdlock_tool.h"

extern char **environ;

#define SLICE_MS 500          /* one timed wait; bounds the reaction to ^C */
#define MAX_WAIT_SECONDS 1e9  /* -w upper bound */

/* ------------------------------------------------------------------ */
/* Usage                                                               */
/* ------------------------------------------------------------------ */

static const char usage_text[] =
    "usage: rdlock [-c FILE] [-s] [-n | -w SECONDS] [-E CODE] [--on-lost=term|ignore] [--orphan=term|keep]\n"
    "              NAME -- COMMAND [ARG...]\n"
    "       rdlock [-c FILE] [--json] --status NAME\n"
    "       rdlock [-c FILE] --reset NAME\n"
    "       rdlock --help | --version\n";

static const char help_text[] =
    "\n"
    "Run COMMAND while holding the distributed lock NAME (on Redis), exclusively\n"
    "or shared with -s.  The lease is renewed for as long as COMMAND runs; COMMAND\n"
    "gets RDLOCK_FENCING_TOKEN (strictly increasing per NAME) in its environment;\n"
    "SIGINT, SIGTERM and SIGHUP are forwarded to it; the lock is released when it\n"
    "exits, and rdlock exits with its status.  NAME is the same lock as an\n"
    "rdlock_t / rdrwlock_t of that name in C programs using librdlock.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE     ini file (default: $RDLOCK_CONF, else\n"
    "                        " RDLOCK_SYSCONFDIR "/rdlock.ini if it exists, else\n"
    "                        127.0.0.1:6379)\n"
    "  -s, --shared          take NAME shared (any number of shared holders)\n"
    "  -n, --nonblock        do not wait: exit CODE if NAME is held\n"
    "  -w, --wait SECONDS    wait at most SECONDS (fractions allowed), then exit CODE\n"
    "  -E, --conflict-exit-code CODE\n"
    "                        exit code for -n / -w conflicts (0..255, default 1);\n"
    "                        COMMAND never runs then, whatever CODE is\n"
    "      --on-lost=term    if the lease is lost while COMMAND runs, send it\n"
    "                        SIGTERM (default)\n"
    "      --on-lost=ignore  ... let it run on (rdlock still exits 75)\n"
    "      --orphan=term     if rdlock itself dies (SIGKILL, OOM killer) while\n"
    "                        COMMAND runs, COMMAND gets SIGTERM (default)\n"
    "      --orphan=keep     ... COMMAND runs on, unprotected once the lease lapses\n"
    "      --status NAME     show NAME: free / held exclusive / held shared, each\n"
    "                        holder (host, pid, thread, hold count, remaining lease),\n"
    "                        waiting writers and readers, the last fencing token and\n"
    "                        the robust state; then NAME's semaphore, run-once mark,\n"
    "                        condition and barrier, if it has them; exits 0\n"
    "                        whether free or held\n"
    "      --json            with --status: one JSON object (schema below)\n"
    "      --reset NAME      clear every hold and queue mark of NAME and its\n"
    "                        not-recoverable state (the fencing counter is kept);\n"
    "                        current holders find their lease lost\n"
    "  -v, --verbose         also print the waiting status when stderr is not a\n"
    "                        terminal (every 5 s, and when the holder changes),\n"
    "                        \"got NAME after N.N s\" (or why it did not wait) when\n"
    "                        the wait ends, and the library's info lines;\n"
    "                        -vv adds the library's debug lines\n"
    "  -q, --quiet           print errors only: no waiting status, no warnings\n"
    "  -h, --help            this text\n"
    "  -V, --version         print the version\n"
    "\n"
    "Without -n or -w, rdlock waits for NAME as long as it takes, and also while\n"
    "Redis is unreachable (unless [lock] fail_fast = yes).  SIGINT, SIGTERM or\n"
    "SIGHUP end the wait within about half a second, leaving no queue mark\n"
    "behind; rdlock then dies by that signal.  While it waits on a terminal\n"
    "(stderr), after a second it shows one status line, refreshed every second\n"
    "and erased when the wait ends:\n"
    "  rdlock: waiting for NAME for 12 s: held by HOST pid PID, 2 others waiting\n"
    "\n"
    "Exit status:\n"
    "  COMMAND's status   COMMAND ran (128+N if signal N killed it)\n"
    "  CODE (1)           -n: NAME is held; -w: still held after SECONDS; COMMAND\n"
    "                     was not run (-v says so: CODE may equal COMMAND's own)\n"
    "  64                 usage error (also -n together with -w)\n"
    "  69                 Redis unreachable or refusing access (-n, -w, --status,\n"
    "                     --reset, or fail_fast)\n"
    "  70                 NAME is not recoverable (a robust owner died and its\n"
    "                     state was not repaired): see rdlock --reset NAME\n"
    "  71                 system error (fork, pipe, out of memory)\n"
    "  75                 the lease was lost (expired, deleted, reset, or\n"
    "                     [watchdog] max_hold_ms reached) while COMMAND ran, or\n"
    "                     before it started (then it was not run); reported once\n"
    "                     COMMAND has exited, whatever COMMAND's own status, which\n"
    "                     the message on stderr gives\n"
    "  78                 configuration error (bad or missing ini file)\n"
    "  126                COMMAND found but not executable\n"
    "  127                COMMAND not found\n"
    "  128+N              rdlock was killed by signal N while waiting\n"
    "If the release after COMMAND fails because Redis has become unreachable,\n"
    "rdlock says so and still exits with COMMAND's status: the hold was not lost,\n"
    "and the lock frees itself when its lease runs out.\n"
    "\n"
    "--status --json prints one object:\n"
    "  {\"name\": str, \"name_hex\": str, \"state\": \"free\"|\"exclusive\"|\"shared\",\n"
    "   \"holders\": [{\"owner\": str, \"host\": str, \"pid\": int, \"thread\": int,\n"
    "                \"count\": int, \"lease_remaining_ms\": int, \"token\": int}],\n"
    "   \"writers_waiting\": int,\n"
    "   \"writers\": [{\"owner\": str, \"host\": str, \"pid\": int, \"thread\": int,\n"
    "                \"mark_remaining_ms\": int}],\n"
    "   \"readers_waiting\": int, \"last_token\": int,\n"
    "   \"robust\": \"consistent\"|\"owner-dead\"|\"inconsistent\"|\"not-recoverable\",\n"
    "   and only when NAME has them:\n"
    "   \"semaphore\": {\"type\": \"plain\"|\"leased\", \"value\": int, \"permits\": int,\n"
    "                 \"held\": int, \"holders\": int, \"waiting\": int},\n"
    "   \"run_once\": {\"done\": true, \"owner\": str, \"host\": str, \"pid\": int,\n"
    "                \"thread\": int},\n"
    "   \"condition\": {\"waiters\": int, \"woken\": int, \"registrations\": int},\n"
    "   \"barrier\": {\"count\": int, \"arrived\": int, \"generation\": int},\n"
    "   \"server\": str (where the client connects; \" (TLS TLSv1.3)\" with TLS)}\n"
    "  Strings are JSON-escaped; name bytes that are not valid UTF-8 appear as\n"
    "  U+FFFD in \"name\" (\"name_hex\" has the exact bytes).\n";

/* The waiting status line on a terminal (see "Waiting status" below): what
 * is on screen now, so that any other message first erases it.  Guarded by
 * log_mu. */
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

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rdlock: %s\n%sTry 'rdlock --help' for more information.\n", line, usage_text);
    exit(EXIT_USAGE);
}

static long long parse_seconds(const char *s)
{
    char *end = NULL;
    double v = -1;
    size_t digits = strspn(s, "0123456789"), frac = 0;

    /* Plain decimal only: DIGITS[.DIGITS] or .DIGITS (strtod alone would
     * also take signs, exponents, hex, "inf" and "nan"). */
    if (s[digits] == '.')
        frac = strspn(s + digits + 1, "0123456789");
    if (digits + frac > 0 && s[digits + (s[digits] == '.' ? 1 + frac : 0)] == '\0') {
        errno = 0;
        v = strtod(s, &end);
    }
    if (end == NULL || *end != '\0' || errno != 0 || v < 0 || v > MAX_WAIT_SECONDS)
        usage_error("-w: '%s' is not a number of seconds (0 to %.0f, fractions allowed)", s,
                    MAX_WAIT_SECONDS);
    return (long long)(v * 1000.0 + 0.5);
}

static int parse_code(const char *s)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || v < 0 || v > 255)
        usage_error("-E: '%s' is not an exit code (0..255)", s);
    return (int)v;
}

static void check_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > NAME_MAX_BYTES)
        usage_error("NAME must be 1 to %d bytes (got %zu)", NAME_MAX_BYTES, n);
}

enum { OPT_ONLOST = 256, OPT_ORPHAN, OPT_STATUS, OPT_RESET, OPT_JSON };

typedef struct seen {
    bool n, w, E, onlost, orphan;
} seen_t;

/* Options up to the first non-option argument (or the end). */
static void parse_opts(int argc, char **argv, opts_t *o, seen_t *seen)
{
    static const struct option longopts[] = {
        { "config", required_argument, NULL, 'c' },
        { "shared", no_argument, NULL, 's' },
        { "nonblock", no_argument, NULL, 'n' },
        { "nb", no_argument, NULL, 'n' },
        { "wait", required_argument, NULL, 'w' },
        { "timeout", required_argument, NULL, 'w' },
        { "conflict-exit-code", required_argument, NULL, 'E' },
        { "on-lost", required_argument, NULL, OPT_ONLOST },
        { "orphan", required_argument, NULL, OPT_ORPHAN },
        { "status", no_argument, NULL, OPT_STATUS },
        { "reset", no_argument, NULL, OPT_RESET },
        { "json", no_argument, NULL, OPT_JSON },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    int ch;

    opterr = 0;
    /* '+': stop at NAME, never look into COMMAND's arguments.
     * ':': report a missing option argument as ':'. */
    while ((ch = getopt_long(argc, argv, "+:c:snw:E:vqhV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->config = optarg;
            break;
        case 's':
            o->shared = true;
            break;
        case 'n':
            seen->n = true;
            o->wait = WAIT_TRY;
            break;
        case 'w':
            seen->w = true;
            o->wait = WAIT_TIMED;
            o->wait_ms = parse_seconds(optarg);
            break;
        case 'E':
            seen->E = true;
            o->conflict_code = parse_code(optarg);
            break;
        case OPT_ONLOST:
            seen->onlost = true;
            if (strcmp(optarg, "term") == 0)
                o->onlost_term = true;
            else if (strcmp(optarg, "ignore") == 0)
                o->onlost_term = false;
            else
                usage_error("--on-lost: '%s' is neither 'term' nor 'ignore'", optarg);
            break;
        case OPT_ORPHAN:
            seen->orphan = true;
            if (strcmp(optarg, "term") == 0)
                o->orphan_term = true;
            else if (strcmp(optarg, "keep") == 0)
                o->orphan_term = false;
            else
                usage_error("--orphan: '%s' is neither 'term' nor 'keep'", optarg);
            break;
        case OPT_STATUS:
        case OPT_RESET:
            if (o->mode != MODE_RUN && o->mode != (ch == OPT_STATUS ? MODE_STATUS : MODE_RESET))
                usage_error("--status and --reset exclude each other");
            o->mode = ch == OPT_STATUS ? MODE_STATUS : MODE_RESET;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case 'v':
            verbose++;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            printf("%s%s", usage_text, help_text);
            exit(fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_OSERR);
        case 'V':
            printf("rdlock (librdlock) %s\n", rdlock_version());
            exit(fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_OSERR);
        case ':':
            if (strncmp(argv[optind - 1], "--", 2) != 0 && optopt != 0 && optopt < 256)
                usage_error("option '-%c' needs an argument", optopt);
            usage_error("option '%s' needs an argument", argv[optind - 1]);
        default:
            if (optopt != 0 && optopt < 256)
                usage_error("unknown option '-%c'", optopt);
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
}

static void parse_args(int argc, char **argv, opts_t *o)
{
    seen_t seen = { false, false, false, false, false };

    memset(o, 0, sizeof *o);
    o->mode = MODE_RUN;
    o->wait = WAIT_BLOCK;
    o->conflict_code = EXIT_CONFLICT_DEFAULT;
    o->onlost_term = true;
    o->orphan_term = true;

    parse_opts(argc, argv, o, &seen);
    if (o->mode != MODE_RUN) {
        const char *what = o->mode == MODE_STATUS ? "--status" : "--reset";
        if (optind >= argc)
            usage_error("%s needs a NAME", what);
        o->name = argv[optind++];
        /* Options may also follow NAME here (rdlock --status NAME --json). */
        parse_opts(argc, argv, o, &seen);
        if (optind < argc)
            usage_error("%s takes one NAME (got also '%s')", what, argv[optind]);
        if (o->shared || seen.n || seen.w || seen.E || seen.onlost || seen.orphan)
            usage_error("%s takes no -s, -n, -w, -E, --on-lost or --orphan", what);
        if (o->json && o->mode != MODE_STATUS)
            usage_error("--json goes with --status only");
        if (verbose && quiet)
            usage_error("-v and -q exclude each other");
        check_name(o->name);
        return;
    }
    if (verbose && quiet)
        usage_error("-v and -q exclude each other");
    if (seen.n && seen.w)
        usage_error("-n and -w exclude each other");
    if (o->json)
        usage_error("--json goes with --status only");
    if (optind >= argc)
        usage_error("no NAME given");
    o->name = argv[optind++];
    check_name(o->name);
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    else if (optind < argc && argv[optind][0] == '-')
        usage_error("'%s' after NAME: options go before NAME, and COMMAND after '--'", argv[optind]);
    if (optind >= argc)
        usage_error("no COMMAND given (rdlock NAME -- COMMAND [ARG...])");
    o->cmd = argv + optind;
}

static bool fail_fast(rdlock_client_t *c)
{
    rdlock_client_info_t info;
    return rdlock_client_info(c, &info) == 0 && info.fail_fast;
}

/* ------------------------------------------------------------------ */
/* Signals                                                             */
/* ------------------------------------------------------------------ */

static sigset_t orig_mask;        /* as inherited: restored for COMMAND */
static sigset_t fwd_set;          /* SIGINT/TERM/HUP not ignored at start */
static sigset_t wait_set;         /* fwd_set + SIGCHLD */
static struct sigaction orig_chld;

static void on_sigchld(int sig)
{
    (void)sig; /* never runs: SIGCHLD stays blocked and is taken by sigwaitinfo */
}

static void signals_setup(void)
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
static int pending_signal(void)
{
    static const struct timespec zero = { 0, 0 };
    siginfo_t si;
    int s = sigtimedwait(&fwd_set, &si, &zero);
    return s > 0 ? s : 0;
}

/* Die by sig (the shell then reports 128+sig). */
static void die_by_signal(int sig) __attribute__((noreturn));
static void die_by_signal(int sig)
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

/* ------------------------------------------------------------------ */
/* Descriptors: COMMAND must not inherit the library's connections      */
/* ------------------------------------------------------------------ */

static unsigned char *fd_inherited; /* bitmap of descriptors open at start */
static int fd_inherited_max = -1;

static void scan_fds(bool mark)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int dfd;
    if (d == NULL)
        return;
    dfd = dirfd(d);
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end != '\0' || fd < 0 || fd > INT_MAX || fd == dfd)
            continue;
        if (!mark) {
            if (fd > fd_inherited_max) {
                unsigned char *nb = realloc(fd_inherited, (size_t)fd / 8 + 1);
                if (nb == NULL)
                    continue;
                memset(nb + (fd_inherited_max + 8) / 8, 0, (size_t)fd / 8 + 1 - (size_t)(fd_inherited_max + 8) / 8);
                fd_inherited = nb;
                fd_inherited_max = (int)fd;
            }
            fd_inherited[fd / 8] |= (unsigned char)(1u << (fd % 8));
        } else if (fd > fd_inherited_max || !(fd_inherited[fd / 8] & (1u << (fd % 8)))) {
            int fl = fcntl((int)fd, F_GETFD);
            if (fl >= 0 && !(fl & FD_CLOEXEC))
                fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC);
        }
    }
    closedir(d);
}

/* ------------------------------------------------------------------ */
/* Running COMMAND                                                     */
/* ------------------------------------------------------------------ */

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
        if ((ce.err = child_pdeathsig(parent)) != 0) {
            ce.stage = CHILD_PDEATHSIG;
        } else {
            sigaction(SIGCHLD, &orig_chld, NULL);
            sigprocmask(SIG_SETMASK, &orig_mask, NULL);
            environ = env;
            execvp(cmd[0], cmd);
            ce.err = errno;
        }
        while (write(pfd[1], &ce, sizeof ce) < 0 && errno == EINTR)
            ;
        _exit(ce.stage == CHILD_EXEC && ce.err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
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

    for (;;) {
        siginfo_t si;
        int s = sigwaitinfo(&wait_set, &si);
        if (s < 0)
            continue; /* EINTR */
        if (s == SIGCHLD) {
            pid_t w = waitpid(pid, status, WNOHANG);
            if (w == pid)
                break;
            if (w < 0 && errno == ECHILD) { /* cannot happen: we own SIGCHLD */
                *status = 0;
                break;
            }
            continue;
        }
        /* A kernel-sent signal to our process group (terminal ^C, hang-up)
         * reached COMMAND already if it is in our group. */
        if (si.si_code == SI_KERNEL && getpgid(pid) == getpgrp())
            continue;
        kill(pid, s);
    }
    finish_phase();
    return 0;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* Waiting status                                                      */
/* ------------------------------------------------------------------ */

/* While the main thread waits (in slices, see acquire()), a second thread
 * asks the server every second who holds NAME (rdlock_status_name(), one
 * round trip on the pool) and shows it:
 *   - stderr a terminal (and rdlock in its foreground process group), not
 *     -q: after STATUS_FIRST_MS, one line redrawn in place every second
 *     ("\r", text, "\033[K"; blanks instead of \033[K when TERM is unset or
 *     "dumb"), cut to the terminal's width and erased when the wait ends
 *     or before any other message;
 *   - -v and stderr not a terminal (a log): separate lines, the first after
 *     STATUS_FIRST_MS, then every STATUS_LOG_MS, or sooner (but not within
 *     STATUS_LOG_MIN_MS of the last) when the holder changes.
 * It is a thread of its own so that the status query never lengthens the
 * gap between two slices, when the waiter is out of the writers' queue. */
#define STATUS_FIRST_MS 1000
#define STATUS_TTY_MS 1000
#define STATUS_LOG_MS 5000
#define STATUS_LOG_MIN_MS 1000

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
static void status_start(rdlock_client_t *c, const opts_t *o, long long t0)
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
static void status_stop(void)
{
    pthread_mutex_lock(&log_mu);
    ws.stop = true;
    status_erase_locked();
    if (ws.running)
        pthread_cond_signal(&ws.cv);
    pthread_mutex_unlock(&log_mu);
}

/* Before the client is closed. */
static void status_join(void)
{
    if (!ws.running)
        return;
    status_stop();
    pthread_join(ws.th, NULL);
    pthread_cond_destroy(&ws.cv);
    ws.running = false;
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
static bool acquire(rdrwlock_t *rw, rdlock_client_t *c, const opts_t *o, int *code)
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

static bool keep_client; /* a hold could not be released: skip the close */

static int do_run(rdlock_client_t *c, const opts_t *o)
{
    rdlock_attr_t a;
    rdrwlock_t rw;
    uint64_t token = 0;
    int rc, code, sig, status = 0, exec_err = 0, tries;
    char desc[128];

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

    for (tries = 0;; tries++) {
        rc = rdrwlock_unlock(&rw);
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
        rdrwlock_destroy(&rw);
    else
        keep_client = true; /* still holds it: no close (EBUSY) */

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

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    rdlock_client_t *c = NULL;
    opts_t o;
    int code;
    char *q;

    parse_args(argc, argv, &o);
    q = shell_quote(o.name);
    if (q != NULL)
        qname = q;
    snprintf(lockdesc, sizeof lockdesc, "lock %s", qname);
    scan_fds(false);
    signals_setup();
    rdlock_set_logger(logger, NULL);

    code = open_client(o.config, &c);
    if (code != 0)
        return code;
    switch (o.mode) {
    case MODE_STATUS:
        code = do_status(c, &o);
        break;
    case MODE_RESET:
        code = do_reset(c, &o);
        break;
    default:
        code = do_run(c, &o);
        break;
    }
    status_join(); /* it uses the client */
    if (!keep_client)
        rdlock_client_close(c);
    free(q);
    free(fd_inherited);
    fflush(stdout);
    return code;
}
