/* config.c - the client configuration: built-in defaults, the ini file
 * search, parsing with iniparser and validation of every key (docs/CONTRACT.md section
 * 3).
 *
 * Loading a file takes four steps, each reporting every problem it finds
 * (not just the first) through the log hook:
 *
 *  1. read the file ourselves: a clear ENOENT/EACCES, refusal of
 *     directories and other non-regular files (iniparser 4.1 silently
 *     returns an empty dictionary for a directory), a size cap;
 *  2. a "lint" pass over the raw text that splits and classifies lines
 *     exactly as iniparser 4.1 does, and reports the syntax errors itself
 *     (iniparser's own report echoes the line, which may hold a password)
 *     together with the malformed lines iniparser accepts silently (an
 *     unterminated quote, text after a closing quote, an empty or
 *     ':'-containing section name, a backslash continuation on the last
 *     line, a NUL byte);
 *  3. iniparser_load() with our own error callback, which counts and logs
 *     (scrubbed) anything iniparser still reports.  If the lint pass
 *     rejected lines, iniparser gets a copy with those lines blanked, so
 *     the rest of the file is still checked and every problem reported in
 *     one go (iniparser 4.1 returns nothing for a file with a bad line);
 *  4. a walk over the dictionary checking sections, keys, numbers, ranges
 *     and booleans, then the cross-key rules and password_file.
 *
 * Nothing here ever logs a value of an unknown key, of a key in an unknown
 * section or of the password, nor a raw line of the file. */
#include "rdl_build.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef HAVE_INIPARSER_INIPARSER_H
#include <iniparser/iniparser.h>
#else
#include <iniparser.h>
#endif

#include "config.h"
#include "log.h"

#define RDL_DEFAULTS_SOURCE "built-in defaults"

/* A config file is a few hundred bytes; anything this large is a mistake
 * (or an attack on the loader), and the cap bounds the lint pass. */
#define RDL_CONFIG_FILE_MAX (1024 * 1024)

/* Only the first line of password_file is read; a longer "line" is not a
 * password file. */
#define RDL_PASSWORD_MAX 65536

/* A DNS name is at most 253 bytes; leave room for odd but valid forms. */
#define RDL_HOST_MAX 255

/* Longest unix socket path that fits sockaddr_un with its NUL; hiredis
 * would otherwise truncate it silently. */
#define RDL_SOCKET_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* In the copy of a file given to iniparser after lint rejected lines, a
 * rejected section header becomes this one, so that the keys under it are
 * not taken for keys of the previous section.  No section of the file can
 * have this name: a ':' in a section name is rejected. */
#define RDL_REJECTED_SECTION "rdl:rejected"

/* How much of a name is shown in a log line. */
#define RDL_SHOW_MAX 64

/* ------------------------------------------------------------------ */
/* Defaults and freeing                                                */
/* ------------------------------------------------------------------ */

/* Overwrite a string's bytes before freeing it: used for anything that may
 * hold the password, so it does not linger in freed heap memory. */
static void wipe_free(char *s)
{
    if (s == NULL)
        return;
    explicit_bzero(s, strlen(s));
    free(s);
}

void rdl_config_free(rdl_config_t *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->host);
    free(cfg->socket);
    free(cfg->username);
    wipe_free(cfg->password);
    free(cfg->key_prefix);
    free(cfg->source);
    free(cfg->sentinel_master);
    for (int i = 0; i < cfg->nsentinels; i++)
        free(cfg->sentinel_host[i]);
    free(cfg->sentinel_username);
    wipe_free(cfg->sentinel_password);
    /* Zeroed, so freeing twice is harmless (config.h promises it). */
    memset(cfg, 0, sizeof *cfg);
}

int rdl_config_defaults(rdl_config_t *cfg)
{
    if (cfg == NULL)
        return EINVAL;
    memset(cfg, 0, sizeof *cfg);
    cfg->port = 6379;
    cfg->db = 0;
    cfg->connect_timeout_ms = 1000;
    cfg->command_timeout_ms = 1000;
    cfg->command_retries = 3;
    cfg->lease_ms = 30000;
    cfg->retry_interval_ms = 100;
    cfg->retry_jitter_ms = 20;
    cfg->fail_fast = false;
    cfg->watchdog_enabled = true;
    cfg->watchdog_interval_ms = 0;
    cfg->max_hold_ms = 0;
    cfg->wait_replicas = 0;
    cfg->wait_timeout_ms = 500;
    cfg->host = strdup("127.0.0.1");
    cfg->key_prefix = strdup("rdlock:");
    cfg->source = strdup(RDL_DEFAULTS_SOURCE);
    if (cfg->host == NULL || cfg->key_prefix == NULL || cfg->source == NULL) {
        rdl_config_free(cfg);
        return ENOMEM;
    }
    return 0;
}

int rdl_config_parse_bool(const char *s, bool *out)
{
    static const struct { const char *word; bool val; } words[] = {
        { "yes", true },  { "no", false },
        { "true", true }, { "false", false },
        { "on", true },   { "off", false },
        { "1", true },    { "0", false },
    };
    size_t i;

    if (s == NULL || out == NULL)
        return EINVAL;
    for (i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (strcasecmp(s, words[i].word) == 0) {
            *out = words[i].val;
            return 0;
        }
    }
    return EINVAL;
}

/* ------------------------------------------------------------------ */
/* Helpers for log lines                                               */
/* ------------------------------------------------------------------ */

/* Copy a name from the file into buf for a log line: non-printable bytes
 * become '?', and long names are cut with "...", so that a hostile file
 * cannot forge log lines or flood them. */
static const char *show(const char *s, char *buf, size_t bufsz)
{
    size_t i, n = 0;

    if (s == NULL)
        s = "";
    for (i = 0; s[i] != '\0' && n + 4 < bufsz; i++)
        buf[n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (s[i] != '\0' && n + 3 < bufsz) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

/* One problem with a key: "config FILE: section:key: reason". */
static void key_problem(const char *file, const char *section, const char *key,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void key_problem(const char *file, const char *section, const char *key,
                        const char *fmt, ...)
{
    char reason[256], sbuf[RDL_SHOW_MAX + 4], kbuf[RDL_SHOW_MAX + 4];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    rdl_log(RDLOCK_LOG_ERROR, "config %s: %s:%s: %s", file,
            show(section, sbuf, sizeof sbuf), show(key, kbuf, sizeof kbuf), reason);
}

/* ------------------------------------------------------------------ */
/* Step 1: reading the file                                            */
/* ------------------------------------------------------------------ */

/* Map an open(2) failure on a file the user named to our codes. */
static int open_errno(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return ENOENT;
    case ENOMEM:
        return ENOMEM;
    default:
        /* EACCES, EPERM, ELOOP, EIO...: it exists but cannot be read. */
        return EACCES;
    }
}

/* Read the whole config file into a NUL-terminated buffer (*len bytes,
 * which may contain NULs).  Returns 0, ENOENT, EACCES, EINVAL or ENOMEM,
 * logged. */
static int read_config_file(const char *path, char **out, size_t *len)
{
    struct stat st;
    char *buf;
    size_t n = 0, cap;
    int fd, e;

    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO must not hang; it is refused below. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        e = errno;
        rdl_log(RDLOCK_LOG_ERROR, "config %s: cannot open: %s", path, strerror(e));
        return open_errno(e);
    }
    if (fstat(fd, &st) != 0) {
        e = errno;
        close(fd);
        rdl_log(RDLOCK_LOG_ERROR, "config %s: cannot stat: %s", path, strerror(e));
        return open_errno(e);
    }
    /* iniparser reads the file again by name, so it must be a plain file:
     * a directory would load as an empty file, a pipe would be drained. */
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        rdl_log(RDLOCK_LOG_ERROR, "config %s: not a regular file", path);
        return EINVAL;
    }
    if (st.st_size > RDL_CONFIG_FILE_MAX) {
        close(fd);
        rdl_log(RDLOCK_LOG_ERROR, "config %s: larger than %d bytes", path, RDL_CONFIG_FILE_MAX);
        return EINVAL;
    }
    /* Sized from st_size, grown if the file grows meanwhile, never past
     * the cap (+1 byte to notice a file over it). */
    cap = (size_t)st.st_size + 1;
    if (cap < 4096)
        cap = 4096;
    buf = malloc(cap + 1);
    if (buf == NULL) {
        close(fd);
        return ENOMEM;
    }
    for (;;) {
        ssize_t r;

        if (n == cap) {
            size_t ncap = cap * 2 > RDL_CONFIG_FILE_MAX + 1 ? RDL_CONFIG_FILE_MAX + 1 : cap * 2;
            char *nbuf = malloc(ncap + 1);
            if (nbuf == NULL) {
                close(fd);
                explicit_bzero(buf, n);
                free(buf);
                return ENOMEM;
            }
            memcpy(nbuf, buf, n);
            explicit_bzero(buf, n);
            free(buf);
            buf = nbuf;
            cap = ncap;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            close(fd);
            explicit_bzero(buf, n);
            free(buf);
            rdl_log(RDLOCK_LOG_ERROR, "config %s: cannot read: %s", path, strerror(e));
            return e == ENOMEM ? ENOMEM : EACCES;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > RDL_CONFIG_FILE_MAX) {
            close(fd);
            explicit_bzero(buf, n);
            free(buf);
            rdl_log(RDLOCK_LOG_ERROR, "config %s: larger than %d bytes", path, RDL_CONFIG_FILE_MAX);
            return EINVAL;
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Step 2: lint, an emulation of iniparser 4.1's line reader           */
/* ------------------------------------------------------------------ */

/* iniparser 4.1 reads with fgets() into a buffer of this many bytes
 * (ASCIILINESZ), continuation lines included. */
#define RDL_INI_LINESZ 1024

static void lint_problem(const char *file, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void lint_problem(const char *file, int lineno, const char *fmt, ...)
{
    char reason[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    rdl_log(RDLOCK_LOG_ERROR, "config %s:%d: %s", file, lineno, reason);
}

/* "[section]: " for a message about a line, "" before any section. */
static const char *in_section(const char *section, char *buf, size_t bufsz)
{
    char sbuf[RDL_SHOW_MAX + 4];

    if (section[0] == '\0')
        return "";
    snprintf(buf, bufsz, "[%s]: ", show(section, sbuf, sizeof sbuf));
    return buf;
}

static char *strip(char *s)
{
    size_t len;

    while (isspace((unsigned char)*s))
        s++;
    len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

/* Check one logical line (continuations joined, as iniparser joins them)
 * the way iniparser_line() classifies it.  section (RDL_SHOW_MAX + 1
 * bytes) tracks the current section for messages.  Returns the number of
 * problems reported: syntax errors iniparser would report (it echoes the
 * line, which may hold a password, so we report them instead, without the
 * text) and malformed lines it would accept silently. */
static int lint_line(const char *file, int lineno, char *s, char *section, int *is_section)
{
    char sbuf[RDL_SHOW_MAX + 4], kbuf[RDL_SHOW_MAX + 4];
    size_t len;
    char *eq, *v, *q;

    *is_section = 0;
    s = strip(s);
    len = strlen(s);
    if (len == 0 || s[0] == '#' || s[0] == ';')
        return 0;

    if (s[0] == '[' && s[len - 1] == ']') {
        /* Not NULL: the line ends with ']'. */
        char *name = s + 1, *rb = strchr(name, ']');
        int problems = 0;

        *is_section = 1;
        if (rb == NULL)
            return 0;
        *rb = '\0';
        name = strip(name);
        for (q = name; *q != '\0'; q++)
            *q = (char)tolower((unsigned char)*q);
        snprintf(section, RDL_SHOW_MAX + 1, "%s", name);
        /* iniparser 4.1 keeps (a garbled copy of) the previous section
         * for "[]", stores "[a:b]" where keys of [a] would go, and ignores
         * what follows the first ']'. */
        if (name[0] == '\0') {
            lint_problem(file, lineno, "empty section name");
            problems++;
        } else if (strchr(name, ':') != NULL) {
            lint_problem(file, lineno, "[%s]: a section name cannot contain ':'",
                         show(name, sbuf, sizeof sbuf));
            problems++;
        }
        if (rb[1] != '\0') {
            lint_problem(file, lineno, "unexpected text after the ']' of a section name");
            problems++;
        }
        return problems;
    }

    eq = strchr(s, '=');
    if (eq == NULL || eq == s) {
        lint_problem(file, lineno,
                     "%ssyntax error: expected `key = value`, `[section]` or a comment "
                     "(line text not shown: it may hold a secret)",
                     in_section(section, sbuf, sizeof sbuf));
        return 1;
    }
    *eq = '\0';
    s = strip(s);
    for (q = s; *q != '\0'; q++)
        *q = (char)tolower((unsigned char)*q);

    v = eq + 1;
    while (isspace((unsigned char)*v))
        v++;
    if (*v != '"' && *v != '\'')
        return 0;
    /* A quoted value: iniparser 4.1 takes `"abc` as abc and ignores
     * anything after the closing quote; both hide mistakes. */
    q = strchr(v + 1, *v);
    if (q == NULL) {
        lint_problem(file, lineno, "%s:%s: unterminated quote",
                     show(section, sbuf, sizeof sbuf), show(s, kbuf, sizeof kbuf));
        return 1;
    }
    q++;
    while (isspace((unsigned char)*q))
        q++;
    if (*q != '\0' && *q != ';' && *q != '#') {
        lint_problem(file, lineno, "%s:%s: unexpected text after the closing quote",
                     show(section, sbuf, sizeof sbuf), show(s, kbuf, sizeof kbuf));
        return 1;
    }
    return 0;
}

/* Lint the whole file, splitting and joining lines exactly as iniparser
 * 4.1's iniparser_load() does.  Returns the number of problems reported
 * (0 if none), or -1 on ENOMEM.  When there are problems, *cleaned is a
 * copy of buf (*cleaned_len bytes) with every rejected line emptied (line
 * numbers kept), for a second iniparser pass that checks the rest of the
 * file; else NULL. */
static int lint(const char *file, const char *buf, size_t len, char **cleaned,
                size_t *cleaned_len)
{
    char section[RDL_SHOW_MAX + 1] = "";
    char sbuf[RDL_SHOW_MAX + 8];
    char *lb;            /* the logical line being assembled */
    char *clean;
    size_t lbn = 0;      /* its length */
    size_t cn = 0;       /* length of clean */
    size_t pos = 0, lstart = 0;
    int lineno = 0, start = 1, problems = 0, n;
    int cont = 0;        /* a continuation is pending */
    int bad = 0;         /* the logical line is rejected */
    int is_section = 0;  /* it is a section header */

    *cleaned = NULL;
    *cleaned_len = 0;
    lb = malloc(len + 1);
    /* Room for a placeholder section per line of up to 2 bytes. */
    clean = malloc(len + 1 + (len / 2 + 1) * (sizeof RDL_REJECTED_SECTION + 1));
    if (lb == NULL || clean == NULL) {
        free(lb);
        free(clean);
        return -1;
    }
    while (pos < len) {
        const char *line = buf + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t plen = nl != NULL ? (size_t)(nl - line) : len - pos;

        lineno++;
        if (!cont) {
            start = lineno;
            lstart = pos;
        }
        pos += plen + (nl != NULL);
        if (memchr(line, '\0', plen) != NULL) {
            /* Mid-file iniparser calls it a too long line; on the last line
             * it silently drops everything after the NUL. */
            lint_problem(file, lineno, "the line contains a NUL byte");
            problems++;
            bad = 1;
        } else if (lbn + plen >= RDL_INI_LINESZ - 1) {
            lint_problem(file, lineno, "line too long (iniparser's limit is %d bytes%s)",
                         RDL_INI_LINESZ - 2, cont ? ", continuations included" : "");
            problems++;
            bad = 1;
        } else if (nl == NULL && plen == 1 && !cont && !isspace((unsigned char)line[0]) &&
                   line[0] != '#' && line[0] != ';') {
            /* iniparser skips a one-byte last line ("len <= 0"). */
            lint_problem(file, lineno, "%ssyntax error: a lone character at the end of the file",
                         in_section(section, sbuf, sizeof sbuf));
            problems++;
            bad = 1;
        }
        memcpy(lb + lbn, line, plen);
        lbn += plen;
        while (lbn > 0 && isspace((unsigned char)lb[lbn - 1]))
            lbn--;
        cont = 0;
        if (lbn > 0 && lb[lbn - 1] == '\\') {
            /* Continuation: the next line replaces the backslash. */
            lbn--;
            if (lbn > 0 && pos < len) {
                cont = 1;
                continue;
            }
            if (lbn > 0 && !bad) {
                lint_problem(file, start, "continuation ('\\' at the end) on the last line: "
                             "iniparser would ignore the line");
                problems++;
                bad = 1;
            }
        }
        lb[lbn] = '\0';
        is_section = 0;
        if (!bad) {
            n = lint_line(file, start, lb, section, &is_section);
            problems += n;
            bad = n > 0;
        }
        if (bad) {
            /* Keep only the newlines: line numbers stay right, and
             * nothing of the line (too long, NUL...) reaches iniparser. */
            size_t i;
            if (is_section) {
                memcpy(clean + cn, "[" RDL_REJECTED_SECTION "]", sizeof RDL_REJECTED_SECTION + 1);
                cn += sizeof RDL_REJECTED_SECTION + 1;
            }
            for (i = lstart; i < pos; i++) {
                if (buf[i] == '\n')
                    clean[cn++] = '\n';
            }
        } else {
            memcpy(clean + cn, buf + lstart, pos - lstart);
            cn += pos - lstart;
        }
        lbn = 0;
        bad = 0;
    }
    /* A continuation pending at the end was reported above; its lines
     * are dropped from the copy like any rejected line. */
    explicit_bzero(lb, len + 1);
    free(lb);
    clean[cn] = '\0';
    if (problems > 0) {
        *cleaned = clean;
        *cleaned_len = cn;
    } else {
        explicit_bzero(clean, len + 1);
        free(clean);
    }
    return problems;
}

/* ------------------------------------------------------------------ */
/* Step 3: iniparser with a scrubbing error callback                   */
/* ------------------------------------------------------------------ */

/* iniparser's error callback is process-global and takes no context, so
 * loads are serialised and the callback reports into this state. */
static pthread_mutex_t ini_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const char *file;    /* the name to log */
    const char *ininame; /* the name iniparser was given */
    int errors;
    int oom;
} ini_state;

/* iniparser 4.1 prints "syntax error in FILE (N):\n-> LINE": the echoed
 * line may be `password = ...`.  Keep only the first line of the message,
 * and as a second guard cut anything after an '=' or "->" that follows the
 * file name, in case another iniparser version puts it on one line.  (The
 * lint pass reports the syntax errors it can predict, so this is a
 * fallback.) */
static int ini_errback(const char *fmt, ...)
{
    char msg[512];
    char *p, *from;
    size_t n;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    p = strchr(msg, '\n');
    if (p != NULL)
        *p = '\0';
    from = msg;
    if (ini_state.ininame != NULL && (p = strstr(msg, ini_state.ininame)) != NULL)
        from = p + strlen(ini_state.ininame);
    if ((p = strchr(from, '=')) != NULL)
        *p = '\0';
    if ((p = strstr(from, "->")) != NULL)
        *p = '\0';
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == ':' || isspace((unsigned char)msg[n - 1])))
        msg[--n] = '\0';
    /* The second pass reads /proc/self/fd/N: name the real file. */
    if (ini_state.ininame != NULL && ini_state.file != NULL &&
        strcmp(ini_state.ininame, ini_state.file) != 0 &&
        (p = strstr(msg, ini_state.ininame)) != NULL) {
        char tail[sizeof msg];
        snprintf(tail, sizeof tail, "%s", p + strlen(ini_state.ininame));
        snprintf(p, sizeof msg - (size_t)(p - msg), "%s%s", ini_state.file, tail);
    }

    if (strstr(msg, "memory allocation") != NULL)
        ini_state.oom = 1;
    ini_state.errors++;
    rdl_log(RDLOCK_LOG_ERROR, "config %s: %s (line text not shown: it may hold a secret)",
            ini_state.file != NULL ? ini_state.file : "?", msg);
    return 0;
}

/* iniparser_load(ininame) with our callback; errors are logged as coming
 * from file.  Returns the dictionary or NULL; *errors = iniparser's error
 * count, *oom set if it ran out of memory. */
static dictionary *ini_load(const char *file, const char *ininame, int *errors, int *oom)
{
    dictionary *d;

    pthread_mutex_lock(&ini_mu);
    ini_state.file = file;
    ini_state.ininame = ininame;
    ini_state.errors = 0;
    ini_state.oom = 0;
    iniparser_set_error_callback(ini_errback);
    d = iniparser_load(ininame);
    /* There is no getter for the previous callback; restore the default
     * so that no later iniparser user reaches our (stale) state. */
    iniparser_set_error_callback(NULL);
    *errors = ini_state.errors;
    *oom = ini_state.oom;
    ini_state.file = NULL;
    ini_state.ininame = NULL;
    pthread_mutex_unlock(&ini_mu);
    if (d == NULL && *errors == 0)
        *oom = 1; /* iniparser fails silently only when malloc fails */
    return d;
}

/* iniparser 4.1 loads only from a path.  To check the rest of a file after
 * its rejected lines were blanked, hand it the cleaned text through an
 * anonymous memory file: nothing of the (password-holding) text touches
 * the disk.  Returns NULL, logged, where that is not possible. */
static dictionary *ini_load_text(const char *file, const char *text, size_t len, int *errors,
                                 int *oom)
{
    dictionary *d = NULL;

    *errors = 0;
    *oom = 0;
#if defined(__linux__) && defined(MFD_CLOEXEC)
    {
        char ininame[64];
        size_t off = 0;
        int fd = memfd_create("rdlock-config", MFD_CLOEXEC);

        if (fd < 0)
            goto unavailable;
        while (off < len) {
            ssize_t w = write(fd, text + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                close(fd);
                goto unavailable;
            }
            off += (size_t)w;
        }
        snprintf(ininame, sizeof ininame, "/proc/self/fd/%d", fd);
        if (access(ininame, R_OK) != 0) {
            close(fd);
            goto unavailable;
        }
        d = ini_load(file, ininame, errors, oom);
        close(fd);
        return d;
    }
unavailable:
#else
    (void)text;
    (void)len;
#endif
    rdl_log(RDLOCK_LOG_ERROR, "config %s: fix the lines above to have the rest of the file checked",
            file);
    return NULL;
}

/* Free a dictionary after overwriting every value: one may be the
 * password. */
static void ini_free(dictionary *d)
{
    ssize_t i;

    if (d == NULL)
        return;
    for (i = 0; i < d->size; i++) {
        if (d->key[i] != NULL && d->val[i] != NULL)
            explicit_bzero(d->val[i], strlen(d->val[i]));
    }
    iniparser_freedict(d);
}

/* ------------------------------------------------------------------ */
/* Step 4: keys and values                                             */
/* ------------------------------------------------------------------ */

enum rdl_key_id {
    K_HOST, K_SOCKET, K_PORT, K_USERNAME, K_PASSWORD, K_PASSWORD_FILE, K_DB,
    K_CONNECT_TIMEOUT, K_COMMAND_TIMEOUT, K_RETRIES,
    K_PREFIX, K_LEASE, K_RETRY_INTERVAL, K_JITTER, K_FAIL_FAST,
    K_WD_ENABLED, K_WD_INTERVAL, K_MAX_HOLD, K_WAIT_REPLICAS, K_WAIT_TIMEOUT, K_SENTINEL_MASTER,
    K_SENTINELS, K_SENTINEL_USERNAME, K_SENTINEL_PASSWORD, K_SENTINEL_PASSWORD_FILE
};

enum rdl_key_type { T_STR, T_SECRET, T_NUM, T_BOOL };

typedef struct rdl_keydef {
    const char *section;
    const char *key;
    enum rdl_key_id id;
    enum rdl_key_type type;
    unsigned long long min, max; /* T_NUM range; T_STR max length (0: none) */
} rdl_keydef_t;

static const char *const known_sections[] = { "redis", "lock", "watchdog", "replication", "sentinel" };

static const rdl_keydef_t keydefs[] = {
    { "redis", "host", K_HOST, T_STR, 0, RDL_HOST_MAX },
    { "redis", "socket", K_SOCKET, T_STR, 0, 0 /* checked once resolved */ },
    { "redis", "port", K_PORT, T_NUM, 1, 65535 },
    { "redis", "username", K_USERNAME, T_STR, 0, 0 },
    { "redis", "password", K_PASSWORD, T_SECRET, 0, 0 },
    { "redis", "password_file", K_PASSWORD_FILE, T_STR, 0, PATH_MAX - 1 },
    { "redis", "db", K_DB, T_NUM, 0, INT_MAX },
    { "redis", "connect_timeout_ms", K_CONNECT_TIMEOUT, T_NUM, 1, 3600000 },
    { "redis", "command_timeout_ms", K_COMMAND_TIMEOUT, T_NUM, 1, 3600000 },
    { "redis", "command_retries", K_RETRIES, T_NUM, 0, 100 },
    { "lock", "key_prefix", K_PREFIX, T_STR, 0, RDL_PREFIX_MAX },
    { "lock", "lease_ms", K_LEASE, T_NUM, 10, 86400000 },
    { "lock", "retry_interval_ms", K_RETRY_INTERVAL, T_NUM, 1, 60000 },
    { "lock", "retry_jitter_ms", K_JITTER, T_NUM, 0, 60000 },
    { "lock", "fail_fast", K_FAIL_FAST, T_BOOL, 0, 0 },
    { "watchdog", "enabled", K_WD_ENABLED, T_BOOL, 0, 0 },
    /* 0 or 1..lease_ms-1: the upper bound is checked against lease_ms. */
    { "watchdog", "interval_ms", K_WD_INTERVAL, T_NUM, 0, 86400000 - 1 },
    /* 0 or >= lease_ms: the lower bound is checked against lease_ms. */
    { "watchdog", "max_hold_ms", K_MAX_HOLD, T_NUM, 0, UINT_MAX },
    { "replication", "wait_replicas", K_WAIT_REPLICAS, T_NUM, 0, 1000 },
    /* below [redis] command_timeout_ms: checked against it. */
    { "replication", "wait_timeout_ms", K_WAIT_TIMEOUT, T_NUM, 1, 3600000 },
    { "sentinel", "master_name", K_SENTINEL_MASTER, T_STR, 0, 255 },
    /* "host:port, host:port ...": parsed by set_sentinels(). */
    { "sentinel", "sentinels", K_SENTINELS, T_STR, 0, 8192 },
    /* AUTH to the sentinels themselves (Sentinel's requirepass / ACL):
     * the same rules as [redis]'s. */
    { "sentinel", "username", K_SENTINEL_USERNAME, T_STR, 0, 0 },
    { "sentinel", "password", K_SENTINEL_PASSWORD, T_SECRET, 0, 0 },
    { "sentinel", "password_file", K_SENTINEL_PASSWORD_FILE, T_STR, 0, PATH_MAX - 1 },
};

/* What one load collects beyond *cfg. */
typedef struct rdl_load {
    const char *file;
    rdl_config_t *cfg;
    int problems;        /* EINVAL-class problems found */
    int oom;
    char *password_file; /* as written in the file */
    char *sentinel_password_file; /* [sentinel]'s, as written */
    bool lease_bad;      /* lease_ms was invalid: skip the cross checks */
} rdl_load_t;

enum { NUM_OK, NUM_GARBAGE, NUM_NEGATIVE, NUM_HUGE };

/* Decimal digits only: no sign, no spaces, no 0x; leading zeros are
 * decimal, not octal (strtol's base-0 surprises are why this exists). */
static int parse_num(const char *s, unsigned long long *out)
{
    unsigned long long v = 0;
    int huge = 0;

    if (*s == '-')
        return NUM_NEGATIVE;
    if (*s == '\0')
        return NUM_GARBAGE;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return NUM_GARBAGE;
        if (v > (ULLONG_MAX - 9) / 10)
            huge = 1;
        else
            v = v * 10 + (unsigned long long)(*s - '0');
    }
    if (huge)
        return NUM_HUGE;
    *out = v;
    return NUM_OK;
}

/* Replace *slot by a copy of s. */
static int set_str(rdl_load_t *ld, char **slot, const char *s)
{
    char *copy = strdup(s);

    if (copy == NULL) {
        ld->oom = 1;
        return ENOMEM;
    }
    free(*slot);
    *slot = copy;
    return 0;
}

static void apply_num(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val)
{
    rdl_config_t *cfg = ld->cfg;
    unsigned long long v = 0;

    switch (parse_num(val, &v)) {
    case NUM_NEGATIVE:
        key_problem(ld->file, kd->section, kd->key, "must not be negative (range %llu..%llu)",
                    kd->min, kd->max);
        goto bad;
    case NUM_GARBAGE:
        key_problem(ld->file, kd->section, kd->key, "not a decimal number");
        goto bad;
    case NUM_HUGE:
        key_problem(ld->file, kd->section, kd->key, "number too large (range %llu..%llu)",
                    kd->min, kd->max);
        goto bad;
    default:
        break;
    }
    if (v < kd->min || v > kd->max) {
        key_problem(ld->file, kd->section, kd->key, "%llu is out of range %llu..%llu",
                    v, kd->min, kd->max);
        goto bad;
    }
    switch (kd->id) {
    case K_PORT: cfg->port = (int)v; break;
    case K_DB: cfg->db = (int)v; break;
    case K_CONNECT_TIMEOUT: cfg->connect_timeout_ms = (int)v; break;
    case K_COMMAND_TIMEOUT: cfg->command_timeout_ms = (int)v; break;
    case K_RETRIES: cfg->command_retries = (int)v; break;
    case K_LEASE: cfg->lease_ms = (unsigned)v; break;
    case K_RETRY_INTERVAL: cfg->retry_interval_ms = (unsigned)v; break;
    case K_JITTER: cfg->retry_jitter_ms = (unsigned)v; break;
    case K_WD_INTERVAL: cfg->watchdog_interval_ms = (unsigned)v; break;
    case K_MAX_HOLD: cfg->max_hold_ms = (unsigned)v; break;
    case K_WAIT_REPLICAS: cfg->wait_replicas = (int)v; break;
    case K_WAIT_TIMEOUT: cfg->wait_timeout_ms = (int)v; break;
    default: break;
    }
    return;
bad:
    ld->problems++;
    if (kd->id == K_LEASE)
        ld->lease_bad = true;
}

/* "host:port" entries separated by commas and/or blanks ("[v6 addr]:port"
 * for IPv6) into cfg's sentinel list, replacing it.  Problems logged. */
static void set_sentinels(rdl_load_t *ld, const char *val)
{
    rdl_config_t *cfg = ld->cfg;
    const char *p = val;
    int i, n = 0;

    for (i = 0; i < cfg->nsentinels; i++)
        free(cfg->sentinel_host[i]);
    cfg->nsentinels = 0;
    for (;;) {
        const char *start, *end, *colon, *h, *he;
        unsigned long port = 0;
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        start = p;
        while (*p != '\0' && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        end = p;
        colon = NULL;
        for (const char *q = start; q < end; q++)
            if (*q == ':')
                colon = q;
        h = start;
        he = colon;
        if (colon != NULL && h < he && *h == '[' && he[-1] == ']') {
            h++;
            he--;
        }
        if (colon != NULL)
            for (const char *q = colon + 1; q < end && port <= 65535; q++)
                port = *q >= '0' && *q <= '9' ? port * 10 + (unsigned long)(*q - '0') : 65536;
        if (colon == NULL || he <= h || (size_t)(he - h) > RDL_HOST_MAX || colon + 1 == end || port < 1 ||
            port > 65535) {
            key_problem(ld->file, "sentinel", "sentinels", "entry %d is not host:port with a port 1..65535",
                        n + 1);
            ld->problems++;
            return;
        }
        if (n == RDL_SENTINELS_MAX) {
            key_problem(ld->file, "sentinel", "sentinels", "more than %d entries", RDL_SENTINELS_MAX);
            ld->problems++;
            return;
        }
        cfg->sentinel_host[n] = strndup(h, (size_t)(he - h));
        if (cfg->sentinel_host[n] == NULL) {
            ld->oom = 1;
            return;
        }
        cfg->sentinel_port[n] = (int)port;
        cfg->nsentinels = ++n;
    }
}

static void apply_str(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val)
{
    rdl_config_t *cfg = ld->cfg;
    size_t len = strlen(val);

    if (kd->max != 0 && len > kd->max) {
        key_problem(ld->file, kd->section, kd->key, "longer than %llu bytes", kd->max);
        ld->problems++;
        return;
    }
    switch (kd->id) {
    case K_HOST:
        set_str(ld, &cfg->host, val);
        break;
    case K_SOCKET:
        set_str(ld, &cfg->socket, val);
        break;
    case K_USERNAME:
        set_str(ld, &cfg->username, val);
        break;
    case K_PASSWORD:
        set_str(ld, &cfg->password, val);
        break;
    case K_PASSWORD_FILE:
        set_str(ld, &ld->password_file, val);
        break;
    case K_PREFIX:
        /* The prefix is outside the hash tag "{name}": a brace in it would
         * move the tag and split a lock's keys across cluster slots. */
        if (strpbrk(val, "{}") != NULL) {
            key_problem(ld->file, kd->section, kd->key, "must not contain '{' or '}'");
            ld->problems++;
            return;
        }
        set_str(ld, &cfg->key_prefix, val);
        break;
    case K_SENTINEL_MASTER:
        set_str(ld, &cfg->sentinel_master, val);
        break;
    case K_SENTINELS:
        set_sentinels(ld, val);
        break;
    case K_SENTINEL_USERNAME:
        set_str(ld, &cfg->sentinel_username, val);
        break;
    case K_SENTINEL_PASSWORD:
        set_str(ld, &cfg->sentinel_password, val);
        break;
    case K_SENTINEL_PASSWORD_FILE:
        set_str(ld, &ld->sentinel_password_file, val);
        break;
    default:
        break;
    }
}

static void apply_bool(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val)
{
    bool b;

    if (rdl_config_parse_bool(val, &b) != 0) {
        key_problem(ld->file, kd->section, kd->key,
                    "not a boolean (yes/no, true/false, on/off, 1/0)");
        ld->problems++;
        return;
    }
    if (kd->id == K_FAIL_FAST)
        ld->cfg->fail_fast = b;
    else
        ld->cfg->watchdog_enabled = b;
}

static const char *known_section(const char *entry, size_t *seclen)
{
    size_t i, n;

    for (i = 0; i < sizeof known_sections / sizeof known_sections[0]; i++) {
        n = strlen(known_sections[i]);
        if (strncmp(entry, known_sections[i], n) == 0 && (entry[n] == ':' || entry[n] == '\0')) {
            *seclen = n;
            return known_sections[i];
        }
    }
    return NULL;
}

/* Walk the dictionary in file order (iniparser appends entries and this
 * loader never deletes any).  Sections are entries with a NULL value,
 * keys are "section:key". */
static void apply_dict(rdl_load_t *ld, const dictionary *d)
{
    ssize_t i;
    size_t j, seclen;

    for (i = 0; i < d->size; i++) {
        const char *entry = d->key[i], *val = d->val[i], *sec, *key;
        const rdl_keydef_t *kd = NULL;
        char sbuf[RDL_SHOW_MAX + 4];

        if (entry == NULL)
            continue;
        sec = known_section(entry, &seclen);
        if (val == NULL) {
            /* A section header.  "" comes from "[]", reported by lint. */
            if ((sec == NULL || entry[seclen] != '\0') && entry[0] != '\0' &&
                strcmp(entry, RDL_REJECTED_SECTION) != 0) {
                rdl_log(RDLOCK_LOG_ERROR, "config %s: [%s]: unknown section", ld->file,
                        show(entry, sbuf, sizeof sbuf));
                ld->problems++;
            }
            continue;
        }
        if (entry[0] == ':') {
            /* Before any section header. */
            rdl_log(RDLOCK_LOG_ERROR, "config %s: %s: key outside any section", ld->file,
                    show(entry + 1, sbuf, sizeof sbuf));
            ld->problems++;
            continue;
        }
        if (sec == NULL || entry[seclen] != ':')
            continue; /* in an unknown section: reported with its header */
        key = entry + seclen + 1;
        for (j = 0; j < sizeof keydefs / sizeof keydefs[0]; j++) {
            if (strcmp(keydefs[j].section, sec) == 0 && strcmp(keydefs[j].key, key) == 0) {
                kd = &keydefs[j];
                break;
            }
        }
        if (kd == NULL) {
            /* Never the value: `pasword = secret` must not leak. */
            key_problem(ld->file, sec, key, "unknown key");
            ld->problems++;
            continue;
        }
        if (val[0] == '\0')
            continue; /* empty value: the key's default */
        switch (kd->type) {
        case T_NUM:
            apply_num(ld, kd, val);
            break;
        case T_BOOL:
            apply_bool(ld, kd, val);
            break;
        case T_STR:
        case T_SECRET:
            apply_str(ld, kd, val);
            break;
        }
    }
}

/* Relative paths in the file (socket, password_file) are relative to the
 * directory holding the file, not to the process's working directory,
 * which for a service is usually '/'.  Returns a new string or NULL. */
static char *resolve_path(const char *file, const char *p)
{
    const char *slash = strrchr(file, '/');
    size_t dlen;
    char *out;

    if (p[0] == '/' || slash == NULL)
        return strdup(p);
    dlen = (size_t)(slash - file) + 1;
    out = malloc(dlen + strlen(p) + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, file, dlen);
    strcpy(out + dlen, p);
    return out;
}

/* Read the first line of password_file (of [section]) into *out.  Returns
 * 0, ENOENT, EACCES, EINVAL or ENOMEM, logged (never the content). */
static int read_password_file(const char *file, const char *section, const char *pf, char **out)
{
    struct stat st;
    char *buf;
    size_t n = 0, linelen;
    char *nl;
    int fd, e, rc = 0;

    *out = NULL;
    fd = open(pf, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        e = errno;
        key_problem(file, section, "password_file", "cannot open %s: %s", pf, strerror(e));
        return open_errno(e);
    }
    /* A directory or device is not a readable password file; refusing
     * them also keeps a FIFO or /dev/zero from hanging the load. */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        key_problem(file, section, "password_file", "%s is not a readable regular file", pf);
        return EACCES;
    }
    buf = malloc(RDL_PASSWORD_MAX + 2);
    if (buf == NULL) {
        close(fd);
        return ENOMEM;
    }
    while (n < RDL_PASSWORD_MAX + 1 && memchr(buf, '\n', n) == NULL) {
        ssize_t r = read(fd, buf + n, RDL_PASSWORD_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            key_problem(file, section, "password_file", "cannot read %s: %s", pf, strerror(e));
            rc = e == ENOMEM ? ENOMEM : EACCES;
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    nl = memchr(buf, '\n', n);
    if (nl == NULL && n > RDL_PASSWORD_MAX) {
        key_problem(file, section, "password_file", "first line of %s is longer than %d bytes",
                    pf, RDL_PASSWORD_MAX);
        rc = EINVAL;
        goto out;
    }
    linelen = nl != NULL ? (size_t)(nl - buf) : n;
    if (linelen > 0 && buf[linelen - 1] == '\r')
        linelen--;
    if (linelen == 0) {
        key_problem(file, section, "password_file", "%s: the first line is empty", pf);
        rc = EINVAL;
        goto out;
    }
    if (memchr(buf, '\0', linelen) != NULL) {
        key_problem(file, section, "password_file", "%s: the first line contains a NUL byte", pf);
        rc = EINVAL;
        goto out;
    }
    *out = malloc(linelen + 1);
    if (*out == NULL) {
        rc = ENOMEM;
        goto out;
    }
    memcpy(*out, buf, linelen);
    (*out)[linelen] = '\0';
out:
    close(fd);
    explicit_bzero(buf, RDL_PASSWORD_MAX + 2);
    free(buf);
    return rc;
}

/* [section] password_file pf (NULL: not given) into *pw, unless password
 * was given too (a problem).  0 or ENOENT, EACCES, ENOMEM; EINVAL-class
 * problems are counted in ld->problems. */
static int password_from_file(rdl_load_t *ld, const char *section, const char *pf, char **pw)
{
    char *p;
    int rc;

    if (pf == NULL)
        return 0;
    if (*pw != NULL) {
        /* Two sources for one secret: refusing is clearer than a silent
         * precedence rule. */
        key_problem(ld->file, section, "password_file", "give either password or password_file, not both");
        ld->problems++;
        return 0;
    }
    p = resolve_path(ld->file, pf);
    if (p == NULL)
        return ENOMEM;
    rc = read_password_file(ld->file, section, p, pw);
    free(p);
    if (rc == EINVAL) {
        ld->problems++;
        rc = 0;
    }
    return rc;
}

/* Rules that involve more than one key, and the paths.  Returns 0 or the
 * password_file error (ENOENT, EACCES, ENOMEM); EINVAL-class problems are
 * counted in ld->problems. */
static int finish(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;
    char *p;
    int rc;

    if (!ld->lease_bad) {
        if (cfg->watchdog_interval_ms != 0 && cfg->watchdog_interval_ms >= cfg->lease_ms) {
            key_problem(ld->file, "watchdog", "interval_ms",
                        "%u must be 0 or below [lock] lease_ms (%u)",
                        cfg->watchdog_interval_ms, cfg->lease_ms);
            ld->problems++;
        }
        if (cfg->max_hold_ms != 0 && cfg->max_hold_ms < cfg->lease_ms) {
            key_problem(ld->file, "watchdog", "max_hold_ms",
                        "%u must be 0 or at least [lock] lease_ms (%u)",
                        cfg->max_hold_ms, cfg->lease_ms);
            ld->problems++;
        }
    }

    /* Sentinel needs both; it finds a TCP address, not a socket path. */
    if ((cfg->sentinel_master != NULL) != (cfg->nsentinels > 0)) {
        key_problem(ld->file, "sentinel", cfg->nsentinels > 0 ? "master_name" : "sentinels",
                    "missing: give both master_name and sentinels, or neither");
        ld->problems++;
    } else if (cfg->nsentinels > 0 && cfg->socket != NULL) {
        key_problem(ld->file, "redis", "socket", "cannot be used with [sentinel] (Sentinel gives a TCP address)");
        ld->problems++;
    }

    /* WAIT runs on the command connection, inside its read timeout. */
    if (cfg->wait_replicas > 0 && cfg->wait_timeout_ms >= cfg->command_timeout_ms) {
        key_problem(ld->file, "replication", "wait_timeout_ms",
                    "%d must be below [redis] command_timeout_ms (%d)", cfg->wait_timeout_ms,
                    cfg->command_timeout_ms);
        ld->problems++;
    }

    if (cfg->socket != NULL) {
        p = resolve_path(ld->file, cfg->socket);
        if (p == NULL)
            return ENOMEM;
        free(cfg->socket);
        cfg->socket = p;
        if (strlen(p) > RDL_SOCKET_MAX) {
            key_problem(ld->file, "redis", "socket", "path longer than %zu bytes",
                        (size_t)RDL_SOCKET_MAX);
            ld->problems++;
        }
    }

    /* Credentials for sentinels that are not used would hide a mistake
     * (a [sentinel] block half commented out). */
    if (cfg->nsentinels == 0 && cfg->sentinel_master == NULL &&
        (cfg->sentinel_username != NULL || cfg->sentinel_password != NULL || ld->sentinel_password_file != NULL)) {
        key_problem(ld->file, "sentinel",
                    cfg->sentinel_password != NULL   ? "password"
                    : ld->sentinel_password_file != NULL ? "password_file"
                                                         : "username",
                    "given without master_name and sentinels");
        ld->problems++;
    }

    rc = password_from_file(ld, "redis", ld->password_file, &cfg->password);
    if (rc == 0)
        rc = password_from_file(ld, "sentinel", ld->sentinel_password_file, &cfg->sentinel_password);
    return rc;
}

/* Load one named file into *cfg (already zeroed by the caller). */
static int load_file(rdl_config_t *cfg, const char *path)
{
    rdl_load_t ld;
    dictionary *d;
    char *text = NULL, *cleaned = NULL;
    size_t len = 0, clen = 0;
    int rc, lint_problems, ini_errors = 0, ini_oom = 0, pf_rc;

    rc = read_config_file(path, &text, &len);
    if (rc != 0)
        return rc;
    lint_problems = lint(path, text, len, &cleaned, &clen);
    explicit_bzero(text, len);
    free(text);
    if (lint_problems < 0)
        return ENOMEM;

    rc = rdl_config_defaults(cfg);
    if (rc == 0) {
        free(cfg->source);
        cfg->source = strdup(path);
        if (cfg->source == NULL)
            rc = ENOMEM;
    }
    if (rc != 0) {
        if (cleaned != NULL) {
            explicit_bzero(cleaned, clen);
            free(cleaned);
        }
        rdl_config_free(cfg);
        return rc;
    }

    memset(&ld, 0, sizeof ld);
    ld.file = path;
    ld.cfg = cfg;
    ld.problems = lint_problems;

    /* A clean file goes to iniparser as it is.  A file with rejected lines
     * fails anyway; iniparser 4.1 would return nothing for it, so the rest
     * is checked from a copy without those lines, to report every problem
     * in one go. */
    if (cleaned == NULL) {
        d = ini_load(path, path, &ini_errors, &ini_oom);
    } else {
        d = ini_load_text(path, cleaned, clen, &ini_errors, &ini_oom);
        explicit_bzero(cleaned, clen);
        free(cleaned);
    }
    ld.problems += ini_errors;
    if (d != NULL) {
        apply_dict(&ld, d);
        ini_free(d);
    }
    pf_rc = ld.oom || ini_oom ? ENOMEM : finish(&ld);
    wipe_free(ld.password_file);
    wipe_free(ld.sentinel_password_file);

    if (ld.oom || ini_oom || pf_rc == ENOMEM)
        rc = ENOMEM;
    else if (ld.problems > 0)
        rc = EINVAL;
    else
        rc = pf_rc;
    if (rc != 0) {
        if (rc == EINVAL)
            rdl_log(RDLOCK_LOG_ERROR, "config %s: %d problem%s, not loaded", path,
                    ld.problems, ld.problems == 1 ? "" : "s");
        rdl_config_free(cfg);
    }
    return rc;
}

int rdl_config_load(rdl_config_t *cfg, const char *path, const char *sysconf_path)
{
    struct stat st;
    const char *env;

    if (cfg == NULL)
        return EINVAL;
    memset(cfg, 0, sizeof *cfg);
    if (path == NULL) {
        env = getenv("RDLOCK_CONF");
        if (env != NULL && env[0] != '\0')
            path = env; /* named: a missing file is ENOENT */
        else if (sysconf_path != NULL && sysconf_path[0] != '\0' &&
                 (stat(sysconf_path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR)))
            path = sysconf_path; /* exists (perhaps unreadable: say so) */
        else
            return rdl_config_defaults(cfg);
    }
    {
        /* Its complaints are about the file (rdlock_last_error). */
        int was = rdl_log_source(RDLOCK_ERRSRC_CONFIG), rc = load_file(cfg, path);
        rdl_log_source(was);
        return rc;
    }
}
