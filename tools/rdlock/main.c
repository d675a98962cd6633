/*
 * rdlock(1) - run a command while holding a distributed lock on Redis: what
 * flock(1) is to file locks (docs/CONTRACT.md section 8).
 *
 *   rdlock [-c FILE] [-s] [-n | -w SECONDS] [-E CODE] [--on-lost=term|ignore]
 *          [--orphan=term|keep] [-v | -q] NAME -- COMMAND [ARG...]
 *   rdlock [-c FILE] [--json] --status NAME
 *   rdlock [-c FILE] --reset NAME
 *
 * This file: the usage text, the options, and the dispatch to a command
 * (run.c, status.c, reset.c).  rdlock_tool.h lists the other files; the
 * design notes are at the top of the file whose code they explain.
 *
 * Only the public API (<rdlock.h>): rdlock_status_name() and
 * rdlock_status_kinds() for --status,
 * rdlock_client_info() for the server's address and fail_fast, and
 * rdlock_last_error() for the reason behind a failure.
 */
#include "rdl_build.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdlock.h"
#include "rdlock_tool.h"

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
    "                        waiting writers and readers, the fencing counter and\n"
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

/* ------------------------------------------------------------------ */
/* Dispatch                                                            */
/* ------------------------------------------------------------------ */

/* scan_fds(false) comes before the client opens any descriptor, so that
 * what it notes is what rdlock inherited (fds.c). */
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
    fds_free();
    fflush(stdout);
    return code;
}
