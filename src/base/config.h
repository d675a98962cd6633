/* config.h - the client configuration: defaults, ini loading, validation
 * (docs/CONTRACT.md section 3).  Loading never crashes on any input and never logs a
 * password. */
#ifndef RDL_CONFIG_H
#define RDL_CONFIG_H

#include <stdbool.h>

#define RDL_NAME_MAX 512
#define RDL_PREFIX_MAX 128
#define RDL_SENTINELS_MAX 16
#define RDL_CLUSTER_SEEDS_MAX 64
#define RDL_REDLOCK_MAX 15
#define RDL_DRIFT_PPM_DEFAULT 10000 /* drift_factor 0.01 */
/* [replication] wait_replicas = all: every replica the master reports
 * online, and at least one (client/replicas.h). */
#define RDL_WAIT_ALL (-1)

typedef struct rdl_config {
    /* [redis] */
    char *host;          /* never NULL after load/defaults */
    char *socket;        /* NULL = TCP; wins over host/port */
    int port;            /* 1..65535 */
    char *username;      /* NULL = none */
    char *password;      /* NULL = none; from password or password_file */
    int db;              /* >= 0 */
    int connect_timeout_ms;
    int command_timeout_ms;
    int command_retries; /* 0..100 */
    /* [redis] tls*: TLS to every data server (and, by default, to the
     * sentinels).  The paths are resolved against the file's directory
     * and exist; the context built from them is tls_ctx. */
    bool tls;
    bool tls_verify;               /* no: any certificate (tests only) */
    char *tls_ca_cert_file;        /* NULL = none; both CA NULL: the system's store */
    char *tls_ca_cert_dir;
    char *tls_cert_file;           /* client certificate: with tls_key_file or not at all */
    char *tls_key_file;
    char *tls_server_name;         /* NULL = each server's own host */
    /* [lock] */
    char *key_prefix;    /* never NULL; no '{' or '}' */
    unsigned lease_ms;
    unsigned retry_interval_ms;
    unsigned retry_jitter_ms;
    bool fail_fast;
    bool release_at_exit;          /* exit() ends the process's holds (lock.c) */
    /* [watchdog] */
    bool watchdog_enabled;
    unsigned watchdog_interval_ms; /* 0 = lease_ms / 3 */
    unsigned max_hold_ms;          /* 0 = unlimited; else >= lease_ms */
    /* [replication] */
    int wait_replicas;             /* 0 = off; 1..1000, or RDL_WAIT_ALL: confirm
                                      acquisitions (WAIT); rdl_config_wait_on */
    int wait_timeout_ms;           /* < command_timeout_ms when wait_replicas is on */
    /* [sentinel]: the master's address comes from these instead of host
     * and port (both set, or neither). */
    char *sentinel_master;         /* NULL = no Sentinel; else the master's name */
    int nsentinels;
    char *sentinel_host[RDL_SENTINELS_MAX];
    int sentinel_port[RDL_SENTINELS_MAX];
    char *sentinel_username;       /* NULL = none; AUTH to the sentinels */
    char *sentinel_password;       /* NULL = none; from password or password_file */
    bool sentinel_tls;             /* [sentinel] tls, by default [redis] tls */
    /* [cluster]: the nodes to learn the slot map from (none: not a
     * cluster), how often at most to ask again, how many redirections one
     * request may follow. */
    int nclusternodes;
    char *cluster_host[RDL_CLUSTER_SEEDS_MAX];
    int cluster_port[RDL_CLUSTER_SEEDS_MAX];
    int cluster_refresh_ms;
    int cluster_max_redirects;
    /* [redlock]: independent masters, a lock counts when a majority grant
     * it (none: not Redlock; else odd, 3..RDL_REDLOCK_MAX); the clock
     * drift allowance in millionths of a lease; how long a master that
     * (re)started stays out of every vote (-1, unset: [lock] lease_ms;
     * 0: not at all). */
    int nmasters;
    char *master_host[RDL_REDLOCK_MAX];
    int master_port[RDL_REDLOCK_MAX];
    unsigned drift_ppm;
    long long restart_delay_ms;
    /* Not configuration: the sentinel that answered last, asked first next
     * time (a dead one costs a connect timeout).  The one field written
     * after load, only with __atomic builtins (conn.c). */
    int sentinel_hint;
    /* Not configuration either: the TLS context built from the tls keys at
     * client open (tls.h; NULL without TLS), owned by the client. */
    struct rdl_tls *tls_ctx;
    /* Where it came from, for log lines ("built-in defaults" if no file). */
    char *source;
} rdl_config_t;

/* Fill *cfg with the built-in defaults (127.0.0.1:6379, docs/CONTRACT.md section 3).
 * Returns 0, or EINVAL (cfg NULL), ENOMEM. */
int rdl_config_defaults(rdl_config_t *cfg);

/* Whether any connection of a client with cfg uses TLS (to the data
 * servers, or to the sentinels it has): then it needs a TLS context. */
bool rdl_config_uses_tls(const rdl_config_t *cfg);

/* Load and validate.  path NULL: $RDLOCK_CONF if set (ENOENT if it names a
 * missing file), else sysconf_path if that file exists, else defaults.
 * sysconf_path is $(sysconfdir)/rdlock.ini, passed in so tests can point
 * elsewhere.  Returns 0, or
 *   EINVAL  cfg NULL; the file is not a regular file or is too large; a
 *           problem in it (each logged with file, section:key and reason)
 *   ENOENT  the file, or a password_file or TLS file it names, is missing
 *   EACCES  one of those cannot be read
 *   ENOMEM
 * On failure *cfg is zeroed and owns nothing. */
int rdl_config_load(rdl_config_t *cfg, const char *path, const char *sysconf_path);

/* Free what *cfg owns; safe on a zeroed or already freed config. */
void rdl_config_free(rdl_config_t *cfg);

/* Parse a boolean as the ini file does (yes/no, true/false, on/off, 1/0,
 * case-insensitive).  Returns 0 and sets *out, or EINVAL. */
int rdl_config_parse_bool(const char *s, bool *out);

/* Whether acquisitions are confirmed on replicas ([replication]
 * wait_replicas: a number above 0, or all). */
static inline bool rdl_config_wait_on(const rdl_config_t *cfg)
{
    return cfg->wait_replicas > 0 || cfg->wait_replicas == RDL_WAIT_ALL;
}

#endif
