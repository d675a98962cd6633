/* config.c - the client configuration: built-in defaults, the ini file
 * search, parsing with iniparser and validation of every key
 * (docs/CONTRACT.md section 3, rdlock.ini(5)).
 *
 * Loading a file takes four steps:
 *
 *  1. read the file ourselves: a clear ENOENT/EACCES, refusal of
 *     directories and other non-regular files (iniparser 4.1 silently
 *     returns an empty dictionary for a directory), a size cap;
 *  2. scan its form line by line against the syntax rdlock.ini(5)
 *     describes, reporting each bad line by number, and note the line of
 *     every section and key for later messages.  The rules are ours; they
 *     are stricter than iniparser's reader where iniparser would accept a
 *     mistake silently (an unterminated quote, text after a closing quote
 *     or a section's ']', "[a:b]", a continuation on the last line, a NUL
 *     byte, a line longer than its buffer), so a file that passes reads
 *     the same to both;
 *  3. only then iniparser_load(), with an error callback that scrubs what
 *     iniparser reports (it echoes lines, which may hold a password);
 *  4. the keys, through iniparser's public API only (getnsec, getsecname,
 *     getseckeys, getstring), against a validation table: sections, keys,
 *     numbers, ranges, booleans, then the cross-key rules and
 *     password_file.  Every problem of steps 2 and 4 is reported, each
 *     with its line, not just the first.
 *
 * Written against iniparser 4.1 (Debian bookworm's 4.1-6); nothing here
 * reads its dictionary's fields.  Nothing here ever logs a value of an
 * unknown key, of a key in an unknown section or of the password, nor a
 * raw line of the file. */
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
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef HAVE_INIPARSER_INIPARSER_H
#include <iniparser/iniparser.h>
#else
#include <iniparser.h>
#endif

#include "config_int.h"
#include "log.h"

#define RDL_DEFAULTS_SOURCE "built-in defaults"

/* A DNS name is at most 253 bytes; leave room for odd but valid forms. */
#define RDL_HOST_MAX 255

/* Longest unix socket path that fits sockaddr_un with its NUL; hiredis
 * would otherwise truncate it silently. */
#define RDL_SOCKET_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

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
    for (int i = 0; i < cfg->nclusternodes; i++)
        free(cfg->cluster_host[i]);
    for (int i = 0; i < cfg->nmasters; i++)
        free(cfg->master_host[i]);
    free(cfg->sentinel_username);
    wipe_free(cfg->sentinel_password);
    free(cfg->tls_ca_cert_file);
    free(cfg->tls_ca_cert_dir);
    free(cfg->tls_cert_file);
    free(cfg->tls_key_file);
    free(cfg->tls_server_name);
    /* tls_ctx is the client's (client_free). */
    /* Zeroed, so freeing twice is harmless (config.h promises it). */
    memset(cfg, 0, sizeof *cfg);
}

bool rdl_config_uses_tls(const rdl_config_t *cfg)
{
    return cfg->tls || (cfg->sentinel_tls && cfg->nsentinels > 0);
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
    cfg->tls_verify = true;
    cfg->lease_ms = 30000;
    cfg->retry_interval_ms = 100;
    cfg->retry_jitter_ms = 20;
    cfg->fail_fast = false;
    cfg->release_at_exit = true;
    cfg->watchdog_enabled = true;
    cfg->watchdog_interval_ms = 0;
    cfg->max_hold_ms = 0;
    cfg->wait_replicas = 0;
    cfg->wait_timeout_ms = 500;
    cfg->cluster_refresh_ms = 1000;
    cfg->cluster_max_redirects = 5;
    cfg->drift_ppm = RDL_DRIFT_PPM_DEFAULT;
    cfg->restart_delay_ms = -1; /* [lock] lease_ms */
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
/* Step 3: iniparser with a scrubbing error callback                   */
/* ------------------------------------------------------------------ */

/* iniparser's error callback is process-global and takes no context, so
 * loads are serialised and the callback reports into this state. */
static pthread_mutex_t ini_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const char *file;    /* the name to log */
    int errors;
    int oom;
} ini_state;

/* iniparser 4.1 prints "syntax error in FILE (N):\n-> LINE": the echoed
 * line may be `password = ...`.  Keep only the first line of the message,
 * and as a second guard cut anything after an '=' or "->" that follows the
 * file name, in case another iniparser version puts it on one line.  The
 * scan refuses every line iniparser 4.1 calls an error, so this is for
 * other versions. */
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
    if (ini_state.file != NULL && (p = strstr(msg, ini_state.file)) != NULL)
        from = p + strlen(ini_state.file);
    if ((p = strchr(from, '=')) != NULL)
        *p = '\0';
    if ((p = strstr(from, "->")) != NULL)
        *p = '\0';
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == ':' || isspace((unsigned char)msg[n - 1])))
        msg[--n] = '\0';
    if (strstr(msg, "memory allocation") != NULL)
        ini_state.oom = 1;
    ini_state.errors++;
    rdl_log(RDLOCK_LOG_ERROR, "config %s: %s (line text not shown: it may hold a secret)",
            ini_state.file != NULL ? ini_state.file : "?", msg);
    return 0;
}

/* iniparser_load(file) with our callback.  Returns the dictionary or NULL;
 * *errors = iniparser's error count, *oom set if it ran out of memory. */
static dictionary *ini_load(const char *file, int *errors, int *oom)
{
    dictionary *d;

    pthread_mutex_lock(&ini_mu);
    ini_state.file = file;
    ini_state.errors = 0;
    ini_state.oom = 0;
    iniparser_set_error_callback(ini_errback);
    d = iniparser_load(file);
    /* There is no getter for the previous callback; restore the default
     * so that no later iniparser user reaches our (stale) state. */
    iniparser_set_error_callback(NULL);
    *errors = ini_state.errors;
    *oom = ini_state.oom;
    ini_state.file = NULL;
    pthread_mutex_unlock(&ini_mu);
    if (d == NULL && *errors == 0)
        *oom = 1; /* iniparser fails silently only when malloc fails */
    return d;
}

/* ------------------------------------------------------------------ */
/* Step 4: keys and values                                             */
/* ------------------------------------------------------------------ */

enum rdl_key_id {
    K_HOST, K_SOCKET, K_PORT, K_USERNAME, K_PASSWORD, K_PASSWORD_FILE, K_DB,
    K_CONNECT_TIMEOUT, K_COMMAND_TIMEOUT, K_RETRIES,
    K_PREFIX, K_LEASE, K_RETRY_INTERVAL, K_JITTER, K_FAIL_FAST, K_RELEASE_AT_EXIT,
    K_WD_ENABLED, K_WD_INTERVAL, K_MAX_HOLD, K_WAIT_REPLICAS, K_WAIT_TIMEOUT, K_SENTINEL_MASTER,
    K_SENTINELS, K_SENTINEL_USERNAME, K_SENTINEL_PASSWORD, K_SENTINEL_PASSWORD_FILE,
    K_CLUSTER_NODES, K_CLUSTER_REFRESH, K_CLUSTER_REDIRECTS,
    K_REDLOCK_MASTERS, K_REDLOCK_DRIFT, K_REDLOCK_RESTART_DELAY,
    K_TLS, K_TLS_CA_FILE, K_TLS_CA_DIR, K_TLS_CERT, K_TLS_KEY, K_TLS_SERVER_NAME, K_TLS_VERIFY, K_SENTINEL_TLS
};

/* T_FRAC: a decimal fraction ("0.01"), kept in millionths; its range in
 * millionths too. */
enum rdl_key_type { T_STR, T_SECRET, T_NUM, T_BOOL, T_FRAC };

typedef struct rdl_keydef {
    const char *section;
    const char *key;
    enum rdl_key_id id;
    enum rdl_key_type type;
    unsigned long long min, max; /* T_NUM range; T_STR max length (0: none) */
} rdl_keydef_t;

static const char *const known_sections[] = { "redis", "lock", "watchdog", "replication", "sentinel", "cluster",
                                              "redlock" };

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
    { "redis", "tls", K_TLS, T_BOOL, 0, 0 },
    { "redis", "tls_ca_cert_file", K_TLS_CA_FILE, T_STR, 0, PATH_MAX - 1 },
    { "redis", "tls_ca_cert_dir", K_TLS_CA_DIR, T_STR, 0, PATH_MAX - 1 },
    { "redis", "tls_cert_file", K_TLS_CERT, T_STR, 0, PATH_MAX - 1 },
    { "redis", "tls_key_file", K_TLS_KEY, T_STR, 0, PATH_MAX - 1 },
    { "redis", "tls_server_name", K_TLS_SERVER_NAME, T_STR, 0, 255 },
    { "redis", "tls_verify", K_TLS_VERIFY, T_BOOL, 0, 0 },
    { "lock", "key_prefix", K_PREFIX, T_STR, 0, RDL_PREFIX_MAX },
    { "lock", "lease_ms", K_LEASE, T_NUM, 10, 86400000 },
    { "lock", "retry_interval_ms", K_RETRY_INTERVAL, T_NUM, 1, 60000 },
    { "lock", "retry_jitter_ms", K_JITTER, T_NUM, 0, 60000 },
    { "lock", "fail_fast", K_FAIL_FAST, T_BOOL, 0, 0 },
    { "lock", "release_at_exit", K_RELEASE_AT_EXIT, T_BOOL, 0, 0 },
    { "watchdog", "enabled", K_WD_ENABLED, T_BOOL, 0, 0 },
    /* 0 or 1..lease_ms-1: the upper bound is checked against lease_ms. */
    { "watchdog", "interval_ms", K_WD_INTERVAL, T_NUM, 0, 86400000 - 1 },
    /* 0 or >= lease_ms: the lower bound is checked against lease_ms. */
    { "watchdog", "max_hold_ms", K_MAX_HOLD, T_NUM, 0, UINT_MAX },
    { "replication", "wait_replicas", K_WAIT_REPLICAS, T_NUM, 0, 1000 },
    /* below [redis] command_timeout_ms: checked against it. */
    { "replication", "wait_timeout_ms", K_WAIT_TIMEOUT, T_NUM, 1, 3600000 },
    { "sentinel", "master_name", K_SENTINEL_MASTER, T_STR, 0, 255 },
    /* "host:port, host:port ...": parsed by set_hostports(). */
    { "sentinel", "sentinels", K_SENTINELS, T_STR, 0, 8192 },
    /* AUTH to the sentinels themselves (Sentinel's requirepass / ACL):
     * the same rules as [redis]'s. */
    { "sentinel", "username", K_SENTINEL_USERNAME, T_STR, 0, 0 },
    { "sentinel", "password", K_SENTINEL_PASSWORD, T_SECRET, 0, 0 },
    { "sentinel", "password_file", K_SENTINEL_PASSWORD_FILE, T_STR, 0, PATH_MAX - 1 },
    /* empty: as [redis] tls (a boolean otherwise; finish()) */
    { "sentinel", "tls", K_SENTINEL_TLS, T_STR, 0, 16 },
    /* "host:port, host:port ...": any nodes of the cluster, to learn the
     * slot map from (set_hostports). */
    { "cluster", "nodes", K_CLUSTER_NODES, T_STR, 0, 8192 },
    { "cluster", "refresh_ms", K_CLUSTER_REFRESH, T_NUM, 10, 3600000 },
    { "cluster", "max_redirects", K_CLUSTER_REDIRECTS, T_NUM, 1, 100 },
    /* "host:port, host:port ...": the independent masters (set_hostports). */
    { "redlock", "masters", K_REDLOCK_MASTERS, T_STR, 0, 8192 },
    { "redlock", "drift_factor", K_REDLOCK_DRIFT, T_FRAC, 0, 500000 },
    { "redlock", "restart_delay_ms", K_REDLOCK_RESTART_DELAY, T_NUM, 0, 86400000 },
};


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

/* A decimal fraction "D[.DDDDDD]" (at most six decimals) in millionths:
 * NUM_OK, NUM_GARBAGE, NUM_NEGATIVE or NUM_HUGE. */
static int parse_frac(const char *s, unsigned long long *out)
{
    unsigned long long whole = 0, frac = 0;
    int digits = 0, r;
    const char *dot = strchr(s, '.');
    char ibuf[32];
    size_t il = dot != NULL ? (size_t)(dot - s) : strlen(s);

    if (*s == '-')
        return NUM_NEGATIVE;
    if (il == 0 || il >= sizeof ibuf)
        return il == 0 ? NUM_GARBAGE : NUM_HUGE;
    memcpy(ibuf, s, il);
    ibuf[il] = '\0';
    if ((r = parse_num(ibuf, &whole)) != NUM_OK)
        return r;
    if (whole > 1000000)
        return NUM_HUGE;
    if (dot != NULL) {
        const char *p = dot + 1;
        if (*p == '\0')
            return NUM_GARBAGE;
        for (; *p != '\0'; p++, digits++) {
            if (*p < '0' || *p > '9' || digits >= 6)
                return NUM_GARBAGE;
            frac = frac * 10 + (unsigned long long)(*p - '0');
        }
    }
    for (; digits < 6; digits++)
        frac *= 10;
    *out = whole * 1000000 + frac;
    return NUM_OK;
}

static void apply_frac(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val)
{
    unsigned long long v = 0;
    switch (parse_frac(val, &v)) {
    case NUM_OK:
        if (v >= kd->min && v <= kd->max) {
            if (kd->id == K_REDLOCK_DRIFT)
                ld->cfg->drift_ppm = (unsigned)v;
            return;
        }
        /* fall through */
    case NUM_HUGE:
    case NUM_NEGATIVE:
        rdl_config_key_problem(ld, kd->section, kd->key, "out of range %llu.%06llu..%llu.%06llu", kd->min / 1000000,
                    kd->min % 1000000, kd->max / 1000000, kd->max % 1000000);
        break;
    default:
        rdl_config_key_problem(ld, kd->section, kd->key, "not a decimal fraction (like 0.01, at most six decimals)");
        break;
    }
    ld->problems++;
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
        rdl_config_key_problem(ld, kd->section, kd->key, "must not be negative (range %llu..%llu)",
                    kd->min, kd->max);
        goto bad;
    case NUM_GARBAGE:
        rdl_config_key_problem(ld, kd->section, kd->key, "not a decimal number");
        goto bad;
    case NUM_HUGE:
        rdl_config_key_problem(ld, kd->section, kd->key, "number too large (range %llu..%llu)",
                    kd->min, kd->max);
        goto bad;
    default:
        break;
    }
    if (v < kd->min || v > kd->max) {
        rdl_config_key_problem(ld, kd->section, kd->key, "%llu is out of range %llu..%llu",
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
    case K_CLUSTER_REFRESH: cfg->cluster_refresh_ms = (int)v; break;
    case K_CLUSTER_REDIRECTS: cfg->cluster_max_redirects = (int)v; break;
    case K_REDLOCK_RESTART_DELAY: cfg->restart_delay_ms = (long long)v; break;
    default: break;
    }
    return;
bad:
    ld->problems++;
    if (kd->id == K_LEASE)
        ld->lease_bad = true;
}

/* "host:port" entries separated by commas and/or blanks ("[v6 addr]:port"
 * for IPv6) of section:key into hosts/ports (at most max), replacing what
 * is there (*n entries).  Problems logged. */
static void set_hostports(rdl_load_t *ld, const char *section, const char *key, const char *val, char **hosts,
                          int *ports, int *n, int max)
{
    const char *p = val;
    int i;

    for (i = 0; i < *n; i++) {
        free(hosts[i]);
        hosts[i] = NULL;
    }
    *n = 0;
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
            rdl_config_key_problem(ld, section, key, "entry %d is not host:port with a port 1..65535", *n + 1);
            ld->problems++;
            return;
        }
        if (*n == max) {
            rdl_config_key_problem(ld, section, key, "more than %d entries", max);
            ld->problems++;
            return;
        }
        hosts[*n] = strndup(h, (size_t)(he - h));
        if (hosts[*n] == NULL) {
            ld->oom = 1;
            return;
        }
        ports[*n] = (int)port;
        (*n)++;
    }
}

static void apply_str(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val)
{
    rdl_config_t *cfg = ld->cfg;
    size_t len = strlen(val);

    if (kd->max != 0 && len > kd->max) {
        rdl_config_key_problem(ld, kd->section, kd->key, "longer than %llu bytes", kd->max);
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
            rdl_config_key_problem(ld, kd->section, kd->key, "must not contain '{' or '}'");
            ld->problems++;
            return;
        }
        set_str(ld, &cfg->key_prefix, val);
        break;
    case K_SENTINEL_MASTER:
        set_str(ld, &cfg->sentinel_master, val);
        break;
    case K_SENTINELS:
        set_hostports(ld, "sentinel", "sentinels", val, cfg->sentinel_host, cfg->sentinel_port, &cfg->nsentinels,
                      RDL_SENTINELS_MAX);
        break;
    case K_CLUSTER_NODES:
        set_hostports(ld, "cluster", "nodes", val, cfg->cluster_host, cfg->cluster_port, &cfg->nclusternodes,
                      RDL_CLUSTER_SEEDS_MAX);
        break;
    case K_REDLOCK_MASTERS:
        set_hostports(ld, "redlock", "masters", val, cfg->master_host, cfg->master_port, &cfg->nmasters,
                      RDL_REDLOCK_MAX);
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
    case K_TLS_CA_FILE:
        set_str(ld, &cfg->tls_ca_cert_file, val);
        break;
    case K_TLS_CA_DIR:
        set_str(ld, &cfg->tls_ca_cert_dir, val);
        break;
    case K_TLS_CERT:
        set_str(ld, &cfg->tls_cert_file, val);
        break;
    case K_TLS_KEY:
        set_str(ld, &cfg->tls_key_file, val);
        break;
    case K_TLS_SERVER_NAME:
        set_str(ld, &cfg->tls_server_name, val);
        break;
    case K_SENTINEL_TLS:
        set_str(ld, &ld->sentinel_tls, val);
        break;
    default:
        break;
    }
}

static void apply_bool(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val)
{
    bool b;

    if (rdl_config_parse_bool(val, &b) != 0) {
        rdl_config_key_problem(ld, kd->section, kd->key,
                    "not a boolean (yes/no, true/false, on/off, 1/0)");
        ld->problems++;
        return;
    }
    if (kd->id == K_TLS)
        ld->cfg->tls = b;
    else if (kd->id == K_TLS_VERIFY)
        ld->cfg->tls_verify = b;
    else if (kd->id == K_FAIL_FAST)
        ld->cfg->fail_fast = b;
    else if (kd->id == K_RELEASE_AT_EXIT)
        ld->cfg->release_at_exit = b;
    else
        ld->cfg->watchdog_enabled = b;
}

static bool known_section(const char *name)
{
    for (size_t i = 0; i < sizeof known_sections / sizeof known_sections[0]; i++)
        if (strcmp(name, known_sections[i]) == 0)
            return true;
    return false;
}

static const rdl_keydef_t *keydef_of(const char *section, const char *key)
{
    for (size_t i = 0; i < sizeof keydefs / sizeof keydefs[0]; i++)
        if (strcmp(keydefs[i].section, section) == 0 && strcmp(keydefs[i].key, key) == 0)
            return &keydefs[i];
    return NULL;
}

/* Check and apply every key of section sec, read through iniparser's
 * public API (names come lowercased, as "sec:key", in file order). */
static void apply_section(rdl_load_t *ld, dictionary *d, const char *sec)
{
    int nkeys = iniparser_getsecnkeys(d, sec);
    const char **keys;
    size_t seclen = strlen(sec);
    char sbuf[RDL_SHOW_MAX + 4];

    if (!known_section(sec)) {
        int line = rdl_config_line_of(ld, sec, NULL);
        rdl_log(RDLOCK_LOG_ERROR, "config %s:%d: [%s]: unknown section", ld->file, line,
                rdl_config_show(sec, sbuf, sizeof sbuf));
        ld->problems++;
        return;
    }
    if (nkeys <= 0)
        return;
    keys = calloc((size_t)nkeys, sizeof *keys);
    if (keys == NULL) {
        ld->oom = 1;
        return;
    }
    if (iniparser_getseckeys(d, sec, keys) == NULL) {
        free(keys);
        return;
    }
    for (int i = 0; i < nkeys; i++) {
        const char *full = keys[i], *key;
        const rdl_keydef_t *kd;
        char *val;

        if (full == NULL || strncmp(full, sec, seclen) != 0 || full[seclen] != ':')
            continue;
        key = full + seclen + 1;
        /* The dictionary's own copy: the password is wiped from it below. */
        val = (char *)iniparser_getstring(d, full, NULL);
        if (val == NULL)
            continue;
        kd = keydef_of(sec, key);
        if (kd == NULL) {
            /* Never the value: `pasword = secret` must not leak. */
            rdl_config_key_problem(ld, sec, key, "unknown key");
            ld->problems++;
        } else if (val[0] != '\0') { /* empty: the key's default */
            switch (kd->type) {
            case T_NUM:
                apply_num(ld, kd, val);
                break;
            case T_BOOL:
                apply_bool(ld, kd, val);
                break;
            case T_FRAC:
                apply_frac(ld, kd, val);
                break;
            case T_STR:
            case T_SECRET:
                apply_str(ld, kd, val);
                break;
            }
        }
        /* Every value may be a secret mistyped under another key. */
        explicit_bzero(val, strlen(val));
    }
    free(keys);
}

static void apply_dict(rdl_load_t *ld, dictionary *d)
{
    int nsec = iniparser_getnsec(d);

    for (int i = 0; i < nsec && !ld->oom; i++) {
        const char *sec = iniparser_getsecname(d, i);
        if (sec != NULL)
            apply_section(ld, d, sec);
    }
}

/* The TLS keys together (docs/CONTRACT.md section 3, TLS).  0, or ENOENT,
 * EACCES, ENOMEM from a file; EINVAL-class problems are counted. */
static int finish_tls(rdl_load_t *ld)
{
    static const char *const files[] = { "tls_ca_cert_file", "tls_ca_cert_dir", "tls_cert_file", "tls_key_file",
                                         "tls_server_name", "tls_verify" };
    rdl_config_t *cfg = ld->cfg;
    bool any;
    int rc;

    cfg->sentinel_tls = cfg->tls;
    if (ld->sentinel_tls != NULL && ld->sentinel_tls[0] != '\0' &&
        rdl_config_parse_bool(ld->sentinel_tls, &cfg->sentinel_tls) != 0) {
        rdl_config_key_problem(ld, "sentinel", "tls", "not a boolean (yes/no, true/false, on/off, 1/0), nor empty");
        ld->problems++;
    }
    any = rdl_config_uses_tls(cfg);
#ifndef RDL_HAVE_TLS
    /* Never a plain connection where TLS was asked for. */
    if (any) {
        rdl_config_key_problem(ld, cfg->tls ? "redis" : "sentinel", "tls",
                    "this librdlock was built without TLS (hiredis >= 1.0 with hiredis_ssl is needed)");
        ld->problems++;
        return 0;
    }
#endif
    if (!any) {
        /* TLS settings that nothing uses hide a mistake (tls = yes
         * forgotten, or commented out).  By value: an empty key is unset. */
        const bool set[] = { cfg->tls_ca_cert_file != NULL, cfg->tls_ca_cert_dir != NULL,
                             cfg->tls_cert_file != NULL, cfg->tls_key_file != NULL, cfg->tls_server_name != NULL,
                             !cfg->tls_verify };
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
            if (set[i]) {
                rdl_config_key_problem(ld, "redis", files[i], "given without tls = yes");
                ld->problems++;
                return 0;
            }
        return 0;
    }
    if (cfg->tls && cfg->socket != NULL) {
        rdl_config_key_problem(ld, "redis", "tls", "cannot be used with socket (a unix socket never uses TLS)");
        ld->problems++;
    }
    if ((cfg->tls_cert_file == NULL) != (cfg->tls_key_file == NULL)) {
        rdl_config_key_problem(ld, "redis", cfg->tls_cert_file == NULL ? "tls_key_file" : "tls_cert_file",
                    "needs %s too (a client certificate and its key go together)",
                    cfg->tls_cert_file == NULL ? "tls_cert_file" : "tls_key_file");
        ld->problems++;
    }
    if ((rc = rdl_config_tls_path(ld, "tls_ca_cert_file", &cfg->tls_ca_cert_file, false)) != 0 ||
        (rc = rdl_config_tls_path(ld, "tls_ca_cert_dir", &cfg->tls_ca_cert_dir, true)) != 0 ||
        (rc = rdl_config_tls_path(ld, "tls_cert_file", &cfg->tls_cert_file, false)) != 0 ||
        (rc = rdl_config_tls_path(ld, "tls_key_file", &cfg->tls_key_file, false)) != 0)
        return rc;
    return 0;
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
            rdl_config_key_problem(ld, "watchdog", "interval_ms",
                        "%u must be 0 or below [lock] lease_ms (%u)",
                        cfg->watchdog_interval_ms, cfg->lease_ms);
            ld->problems++;
        }
        if (cfg->max_hold_ms != 0 && cfg->max_hold_ms < cfg->lease_ms) {
            rdl_config_key_problem(ld, "watchdog", "max_hold_ms",
                        "%u must be 0 or at least [lock] lease_ms (%u)",
                        cfg->max_hold_ms, cfg->lease_ms);
            ld->problems++;
        }
    }

    /* Sentinel needs both; it finds a TCP address, not a socket path. */
    if ((cfg->sentinel_master != NULL) != (cfg->nsentinels > 0)) {
        rdl_config_key_problem(ld, "sentinel", cfg->nsentinels > 0 ? "master_name" : "sentinels",
                    "missing: give both master_name and sentinels, or neither");
        ld->problems++;
    } else if (cfg->nsentinels > 0 && cfg->socket != NULL) {
        rdl_config_key_problem(ld, "redis", "socket", "cannot be used with [sentinel] (Sentinel gives a TCP address)");
        ld->problems++;
    }

    /* A cluster is found through its nodes; the other ways to name a
     * server would be ignored, which hides a mistake. */
    if (cfg->nclusternodes > 0) {
        static const char *const not_with[][2] = { { "redis", "host" }, { "redis", "port" }, { "redis", "socket" } };
        for (size_t i = 0; i < sizeof not_with / sizeof not_with[0]; i++)
            if (rdl_config_line_of(ld, not_with[i][0], not_with[i][1]) > 0) {
                rdl_config_key_problem(ld, not_with[i][0], not_with[i][1],
                            "cannot be used with [cluster] (the nodes are named there)");
                ld->problems++;
            }
        if (cfg->nsentinels > 0 || cfg->sentinel_master != NULL) {
            rdl_config_key_problem(ld, "cluster", "nodes", "cannot be used with [sentinel]: a cluster fails over by itself");
            ld->problems++;
        }
        if (cfg->db != 0) {
            rdl_config_key_problem(ld, "redis", "db", "must be 0 with [cluster] (a cluster has only database 0)");
            ld->problems++;
        }
    } else if (rdl_config_line_of(ld, "cluster", "refresh_ms") > 0 || rdl_config_line_of(ld, "cluster", "max_redirects") > 0) {
        rdl_config_key_problem(ld, "cluster", rdl_config_line_of(ld, "cluster", "refresh_ms") > 0 ? "refresh_ms" : "max_redirects",
                    "given without [cluster] nodes");
        ld->problems++;
    }

    /* Redlock: the masters are named there, each independent (no
     * replicas to WAIT for, no failover), and a majority needs an odd
     * number of them. */
    if (cfg->nmasters > 0) {
        /* host/port/socket by presence (as with [cluster]); the others by
         * value, so that an empty or zero key stays harmless. */
        static const char *const not_with[][2] = { { "redis", "host" }, { "redis", "port" }, { "redis", "socket" } };
        for (size_t i = 0; i < sizeof not_with / sizeof not_with[0]; i++)
            if (rdl_config_line_of(ld, not_with[i][0], not_with[i][1]) > 0) {
                rdl_config_key_problem(ld, not_with[i][0], not_with[i][1],
                            "cannot be used with [redlock] (independent masters, named there)");
                ld->problems++;
            }
        if (cfg->sentinel_master != NULL || cfg->nsentinels > 0) {
            rdl_config_key_problem(ld, "sentinel", cfg->nsentinels > 0 ? "sentinels" : "master_name",
                        "cannot be used with [redlock] (independent masters, no failover)");
            ld->problems++;
        }
        if (cfg->nclusternodes > 0) {
            rdl_config_key_problem(ld, "cluster", "nodes", "cannot be used with [redlock]");
            ld->problems++;
        }
        if (cfg->wait_replicas > 0) {
            rdl_config_key_problem(ld, "replication", "wait_replicas",
                        "cannot be used with [redlock] (the quorum is the masters' own)");
            ld->problems++;
        }
        /* The same master twice would vote twice. */
        for (int i = 0; i < cfg->nmasters; i++)
            for (int j = i + 1; j < cfg->nmasters; j++)
                if (cfg->master_port[i] == cfg->master_port[j] &&
                    strcasecmp(cfg->master_host[i], cfg->master_host[j]) == 0) {
                    rdl_config_key_problem(ld, "redlock", "masters", "%s:%d is listed twice: each master votes once",
                                cfg->master_host[i], cfg->master_port[i]);
                    ld->problems++;
                    i = cfg->nmasters; /* once is enough */
                    break;
                }
        if (cfg->nmasters < 3 || cfg->nmasters % 2 == 0) {
            rdl_config_key_problem(ld, "redlock", "masters", "%d given: an odd number from 3 to %d is needed for a majority",
                        cfg->nmasters, RDL_REDLOCK_MAX);
            ld->problems++;
        }
    } else if (cfg->drift_ppm != RDL_DRIFT_PPM_DEFAULT || cfg->restart_delay_ms >= 0) {
        rdl_config_key_problem(ld, "redlock", cfg->drift_ppm != RDL_DRIFT_PPM_DEFAULT ? "drift_factor" : "restart_delay_ms",
                    "given without [redlock] masters");
        ld->problems++;
    }

    /* WAIT runs on the command connection, inside its read timeout. */
    if (cfg->wait_replicas > 0 && cfg->wait_timeout_ms >= cfg->command_timeout_ms) {
        rdl_config_key_problem(ld, "replication", "wait_timeout_ms",
                    "%d must be below [redis] command_timeout_ms (%d)", cfg->wait_timeout_ms,
                    cfg->command_timeout_ms);
        ld->problems++;
    }

    if (cfg->socket != NULL) {
        p = rdl_config_resolve_path(ld->file, cfg->socket);
        if (p == NULL)
            return ENOMEM;
        free(cfg->socket);
        cfg->socket = p;
        if (strlen(p) > RDL_SOCKET_MAX) {
            rdl_config_key_problem(ld, "redis", "socket", "path longer than %zu bytes",
                        (size_t)RDL_SOCKET_MAX);
            ld->problems++;
        }
    }

    /* Credentials for sentinels that are not used would hide a mistake
     * (a [sentinel] block half commented out). */
    if (cfg->nsentinels == 0 && cfg->sentinel_master == NULL &&
        (cfg->sentinel_username != NULL || cfg->sentinel_password != NULL || ld->sentinel_password_file != NULL)) {
        rdl_config_key_problem(ld, "sentinel",
                    cfg->sentinel_password != NULL   ? "password"
                    : ld->sentinel_password_file != NULL ? "password_file"
                                                         : "username",
                    "given without master_name and sentinels");
        ld->problems++;
    }

    rc = rdl_config_password_from_file(ld, "redis", ld->password_file, &cfg->password);
    if (rc == 0)
        rc = rdl_config_password_from_file(ld, "sentinel", ld->sentinel_password_file, &cfg->sentinel_password);
    if (rc == 0)
        rc = finish_tls(ld);
    return rc;
}

/* Load one named file into *cfg (already zeroed by the caller). */
static int load_file(rdl_config_t *cfg, const char *path)
{
    rdl_load_t ld;
    dictionary *d = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc, ini_errors = 0, ini_oom = 0, pf_rc = 0;

    rc = rdl_config_read_file(path, &text, &len);
    if (rc != 0)
        return rc;
    rc = rdl_config_defaults(cfg);
    if (rc == 0) {
        free(cfg->source);
        cfg->source = strdup(path);
        if (cfg->source == NULL) {
            rdl_config_free(cfg);
            rc = ENOMEM;
        }
    }
    if (rc != 0) {
        explicit_bzero(text, len);
        free(text);
        return rc;
    }

    memset(&ld, 0, sizeof ld);
    ld.file = path;
    ld.cfg = cfg;
    rdl_config_scan(&ld, text, len);
    explicit_bzero(text, len);
    free(text);

    /* Values are checked once the form is sound: in a file with a bad
     * line, which key a later line belongs to is a guess (iniparser 4.1
     * itself returns nothing for such a file). */
    if (ld.problems == 0 && !ld.oom) {
        d = ini_load(path, &ini_errors, &ini_oom);
        ld.problems += ini_errors;
    }
    if (d != NULL) {
        apply_dict(&ld, d);
        iniparser_freedict(d);
        if (!ld.oom)
            pf_rc = finish(&ld);
    }
    wipe_free(ld.password_file);
    wipe_free(ld.sentinel_password_file);
    free(ld.sentinel_tls);
    rdl_config_locs_free(&ld);

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
