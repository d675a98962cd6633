/* config.c - the client configuration: its built-in defaults, the search
 * for the ini file, and one load of it from start to end (docs/CONTRACT.md
 * section 3, rdlock.ini(5)).  The work of a load is split by job; loading
 * a file takes four steps:
 *
 *  1. read the file ourselves (config_files.c): a clear ENOENT/EACCES,
 *     refusal of directories and other non-regular files (iniparser 4.1
 *     silently returns an empty dictionary for a directory), a size cap;
 *  2. scan its form line by line against the syntax rdlock.ini(5)
 *     describes (config_scan.c), reporting each bad line by number, and
 *     note the line of every section and key for later messages
 *     (config_report.c);
 *  3. only then iniparser_load() (config_ini.c), with an error callback
 *     that scrubs what iniparser reports (it echoes lines, which may hold
 *     a password);
 *  4. the keys, through iniparser's public API only, against the key
 *     table (config_keys.c): sections, keys, numbers, ranges, booleans;
 *     then the rules between keys and the files they name
 *     (config_check.c, config_files.c).  Every problem of steps 2 and 4
 *     is reported, each with its line, not just the first.
 *
 * Nothing in the loader ever logs a value of an unknown key, of a key in
 * an unknown section or of the password, nor a raw line of the file. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/config.h"
#include "base/config_int.h"
#include "base/log.h"

#define RDL_DEFAULTS_SOURCE "built-in defaults"

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

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

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
        pf_rc = rdl_config_finish(&ld);
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
