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

#include "config_int.h"
#include "log.h"

#define RDL_DEFAULTS_SOURCE "built-in defaults"

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
    char *text = NULL;
    size_t len = 0;
    int rc, ini_oom = 0, pf_rc = 0;

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
    if (ld.problems == 0 && !ld.oom && rdl_config_ini_apply(&ld, &ini_oom) && !ld.oom)
        pf_rc = finish(&ld);
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
