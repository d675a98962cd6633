/* config_check.c - the end of step 4 of a load: the rules between keys,
 * once every key has been read and checked on its own (config_keys.c),
 * and the files the keys name (config_files.c).
 *
 * Each rule is a function of its own, named after what it guards, and
 * rdl_config_finish() runs them in a fixed order, so the problems of one
 * file are always logged in the same order.  Most rules refuse settings
 * that would otherwise be ignored without a word (credentials for
 * sentinels never asked, TLS files without TLS, a [redis] host beside a
 * cluster): a setting that does nothing hides a mistake. */
#include "rdl_build.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "base/config.h"
#include "base/config_int.h"

/* Longest unix socket path that fits sockaddr_un with its NUL; hiredis
 * would otherwise truncate it silently. */
#define RDL_SOCKET_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* [watchdog] against [lock] lease_ms: a renewal must come before the
 * lease runs out, and a limit on renewing below one lease would limit
 * nothing (the first lease alone outlasts it).  Skipped when lease_ms
 * itself was refused: they would be judged against its default. */
static void check_watchdog(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;

    if (ld->lease_bad)
        return;
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
static void check_sentinel(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;

    if ((cfg->sentinel_master != NULL) != (cfg->nsentinels > 0)) {
        rdl_config_key_problem(ld, "sentinel", cfg->nsentinels > 0 ? "master_name" : "sentinels",
                               "missing: give both master_name and sentinels, or neither");
        ld->problems++;
    } else if (cfg->nsentinels > 0 && cfg->socket != NULL) {
        rdl_config_key_problem(ld, "redis", "socket",
                               "cannot be used with [sentinel] (Sentinel gives a TCP address)");
        ld->problems++;
    }
}

/* [redis] host, port and socket name one server; [cluster] and [redlock]
 * name theirs, and would silently ignore these.  By presence in the file,
 * not by value: `port = 6379` beside [cluster] is refused too. */
static void refuse_single_server(rdl_load_t *ld, const char *why)
{
    static const char *const keys[] = { "host", "port", "socket" };

    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (rdl_config_line_of(ld, "redis", keys[i]) > 0) {
            rdl_config_key_problem(ld, "redis", keys[i], "%s", why);
            ld->problems++;
        }
}

/* A cluster is found through its nodes; the other ways to name a server
 * would be ignored, which hides a mistake.  Without nodes, the keys that
 * tune the cluster client would be ignored too. */
static void check_cluster(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;

    if (cfg->nclusternodes > 0) {
        refuse_single_server(ld, "cannot be used with [cluster] (the nodes are named there)");
        if (cfg->nsentinels > 0 || cfg->sentinel_master != NULL) {
            rdl_config_key_problem(ld, "cluster", "nodes",
                                   "cannot be used with [sentinel]: a cluster fails over by itself");
            ld->problems++;
        }
        if (cfg->db != 0) {
            rdl_config_key_problem(ld, "redis", "db", "must be 0 with [cluster] (a cluster has only database 0)");
            ld->problems++;
        }
    } else if (rdl_config_line_of(ld, "cluster", "refresh_ms") > 0 ||
               rdl_config_line_of(ld, "cluster", "max_redirects") > 0) {
        rdl_config_key_problem(ld, "cluster",
                               rdl_config_line_of(ld, "cluster", "refresh_ms") > 0 ? "refresh_ms" : "max_redirects",
                               "given without [cluster] nodes");
        ld->problems++;
    }
}

/* The Redlock masters as a set: the same master twice would vote twice,
 * and a majority needs an odd number of them. */
static void check_redlock_masters(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;

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
        rdl_config_key_problem(ld, "redlock", "masters",
                               "%d given: an odd number from 3 to %d is needed for a majority",
                               cfg->nmasters, RDL_REDLOCK_MAX);
        ld->problems++;
    }
}

/* Redlock: the masters are named there, each independent (no replicas to
 * WAIT for, no failover).  Without masters, the keys that tune the vote
 * are unused. */
static void check_redlock(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;

    if (cfg->nmasters == 0) {
        if (cfg->drift_ppm != RDL_DRIFT_PPM_DEFAULT || cfg->restart_delay_ms >= 0) {
            rdl_config_key_problem(ld, "redlock",
                                   cfg->drift_ppm != RDL_DRIFT_PPM_DEFAULT ? "drift_factor" : "restart_delay_ms",
                                   "given without [redlock] masters");
            ld->problems++;
        }
        return;
    }
    /* host/port/socket by presence (as with [cluster]); the others by
     * value, so that an empty or zero key stays harmless. */
    refuse_single_server(ld, "cannot be used with [redlock] (independent masters, named there)");
    if (cfg->sentinel_master != NULL || cfg->nsentinels > 0) {
        rdl_config_key_problem(ld, "sentinel", cfg->nsentinels > 0 ? "sentinels" : "master_name",
                               "cannot be used with [redlock] (independent masters, no failover)");
        ld->problems++;
    }
    if (cfg->nclusternodes > 0) {
        rdl_config_key_problem(ld, "cluster", "nodes", "cannot be used with [redlock]");
        ld->problems++;
    }
    if (rdl_config_wait_on(cfg)) {
        rdl_config_key_problem(ld, "replication", "wait_replicas",
                               "cannot be used with [redlock] (the quorum is the masters' own)");
        ld->problems++;
    }
    check_redlock_masters(ld);
}

/* WAIT runs on the command connection, inside its read timeout. */
static void check_wait(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;

    if (rdl_config_wait_on(cfg) && cfg->wait_timeout_ms >= cfg->command_timeout_ms) {
        rdl_config_key_problem(ld, "replication", "wait_timeout_ms",
                               "%d must be below [redis] command_timeout_ms (%d)", cfg->wait_timeout_ms,
                               cfg->command_timeout_ms);
        ld->problems++;
    }
}

/* [redis] socket, resolved against the file's directory: its length is
 * only known then.  0 or ENOMEM. */
static int check_socket(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;
    char *p;

    if (cfg->socket == NULL)
        return 0;
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
    return 0;
}

/* Credentials for sentinels that are not used would hide a mistake (a
 * [sentinel] block half commented out). */
static void check_sentinel_auth(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;

    if (cfg->nsentinels == 0 && cfg->sentinel_master == NULL &&
        (cfg->sentinel_username != NULL || cfg->sentinel_password != NULL || ld->sentinel_password_file != NULL)) {
        rdl_config_key_problem(ld, "sentinel",
                               cfg->sentinel_password != NULL       ? "password"
                               : ld->sentinel_password_file != NULL ? "password_file"
                                                                    : "username",
                               "given without master_name and sentinels");
        ld->problems++;
    }
}

/* TLS settings that nothing uses hide a mistake (tls = yes forgotten, or
 * commented out).  By value: an empty key is unset.  The first one found
 * is enough. */
static void check_tls_unused(rdl_load_t *ld)
{
    static const char *const files[] = { "tls_ca_cert_file", "tls_ca_cert_dir", "tls_cert_file", "tls_key_file",
                                         "tls_server_name", "tls_verify" };
    const rdl_config_t *cfg = ld->cfg;
    const bool set[] = { cfg->tls_ca_cert_file != NULL, cfg->tls_ca_cert_dir != NULL,
                         cfg->tls_cert_file != NULL, cfg->tls_key_file != NULL, cfg->tls_server_name != NULL,
                         !cfg->tls_verify };

    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (set[i]) {
            rdl_config_key_problem(ld, "redis", files[i], "given without tls = yes");
            ld->problems++;
            return;
        }
}

/* The TLS keys together (docs/CONTRACT.md section 3, TLS).  0, or ENOENT,
 * EACCES, ENOMEM from a file; EINVAL-class problems are counted. */
static int check_tls(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;
    bool any;
    int rc;

    /* [sentinel] tls, kept as written by config_keys.c: empty or absent
     * means as [redis] tls, which is only known now. */
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
        check_tls_unused(ld);
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

int rdl_config_finish(rdl_load_t *ld)
{
    rdl_config_t *cfg = ld->cfg;
    int rc;

    /* This order is the order of the messages for a file with several
     * problems: keep it. */
    check_watchdog(ld);
    check_sentinel(ld);
    check_cluster(ld);
    check_redlock(ld);
    check_wait(ld);
    rc = check_socket(ld);
    if (rc != 0)
        return rc;
    check_sentinel_auth(ld);
    rc = rdl_config_password_from_file(ld, "redis", ld->password_file, &cfg->password);
    if (rc == 0)
        rc = rdl_config_password_from_file(ld, "sentinel", ld->sentinel_password_file, &cfg->sentinel_password);
    if (rc == 0)
        rc = check_tls(ld);
    return rc;
}
