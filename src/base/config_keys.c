/* config_keys.c - the keys of the ini file (rdlock.ini(5)): the table of
 * every section and key the loader knows, with its type and range, and the
 * parsing of each value into rdl_config_t.
 *
 * man/check-docs.sh reads the keydefs table below to check that
 * rdlock.ini(5), conf/rdlock.ini and docs/CONTRACT.md name exactly these
 * keys: keep one `{ "section", "key", ...` entry a line.  A value is
 * checked on its own here; the rules between keys are checked once every
 * key is read. */
#include "rdl_build.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/config.h"
#include "base/config_int.h"

/* A DNS name is at most 253 bytes; leave room for odd but valid forms. */
#define RDL_HOST_MAX 255

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

struct rdl_keydef {
    const char *section;
    const char *key;
    enum rdl_key_id id;
    enum rdl_key_type type;
    unsigned long long min, max; /* T_NUM range; T_STR max length (0: none) */
};

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
    /* or "all" (RDL_WAIT_ALL): apply_num. */
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

/* The booleans of the ini file, also for callers outside the loader
 * (config.h). */
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

    if (kd->id == K_WAIT_REPLICAS && strcmp(val, "all") == 0) {
        /* The one word a number key takes, written as documented (lower
         * case): "All" or "-1" is a typo, not a choice. */
        cfg->wait_replicas = RDL_WAIT_ALL;
        return;
    }
    switch (parse_num(val, &v)) {
    case NUM_NEGATIVE:
        rdl_config_key_problem(ld, kd->section, kd->key, "must not be negative (range %llu..%llu)",
                               kd->min, kd->max);
        goto bad;
    case NUM_GARBAGE:
        rdl_config_key_problem(ld, kd->section, kd->key, "not a decimal number%s",
                               kd->id == K_WAIT_REPLICAS ? " (0..1000) or all" : "");
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

bool rdl_config_known_section(const char *name)
{
    for (size_t i = 0; i < sizeof known_sections / sizeof known_sections[0]; i++)
        if (strcmp(name, known_sections[i]) == 0)
            return true;
    return false;
}

const rdl_keydef_t *rdl_config_keydef(const char *section, const char *key)
{
    for (size_t i = 0; i < sizeof keydefs / sizeof keydefs[0]; i++)
        if (strcmp(keydefs[i].section, section) == 0 && strcmp(keydefs[i].key, key) == 0)
            return &keydefs[i];
    return NULL;
}

void rdl_config_apply_value(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val)
{
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
