/* fixture.h - a private redis-server for tests and the benchmark.
 *
 * Every suite starts its own server from $REDIS_SERVER (else redis-server on
 * PATH, /usr/bin, /usr/sbin) on a free loopback port (never 6379) and on a
 * unix socket inside a fresh temp dir, with no persistence, waits until it
 * answers PING (no sleeps as synchronisation), and stops it by PID.  A
 * missing redis-server is a hard failure, never a skip. */
#ifndef RDT_FIXTURE_H
#define RDT_FIXTURE_H

#include <sys/types.h>
#include <hiredis/hiredis.h>

typedef struct rdt_server {
    pid_t pid;          /* 0 when not running */
    int port;           /* loopback TCP port */
    char dir[256];      /* temp dir owned by the fixture */
    char sock[320];     /* unix socket path inside dir */
    char password[64];  /* requirepass, "" for none */
    char extra[512];    /* extra redis-server arguments given at start */
    char conf[320];     /* a Redis Sentinel's config file (in dir), "" for a server */
    char env[512];      /* "NAME=VALUE ..." added to the server's environment at
                           every start (a restart too); "" for none */
    int tls_only;       /* TLS on port, no plain TCP (rdt_server_start_tls):
                           the fixture itself talks over the unix socket */
} rdt_server_t;

/* Start a server.  password: NULL or "" for none, else --requirepass.
 * extra_args: NULL, or extra command-line arguments separated by spaces
 * (e.g. "--appendonly yes").  Returns 0, or -1 after printing why to
 * stderr (the caller fails the test). */
int rdt_server_start(rdt_server_t *s, const char *password, const char *extra_args);
/* The same with env ("NAME=VALUE ...", no spaces inside an entry) added to
 * the server's environment, e.g. an LD_PRELOAD (test_redlock's master
 * with a fast clock, tests/clockshim.c). */
int rdt_server_start_env(rdt_server_t *s, const char *password, const char *extra_args, const char *env);

/* TLS test material, made by `openssl` in a fresh temp dir (removed at
 * exit): a CA (ca.crt), a server certificate it signed for 127.0.0.1 and
 * localhost (server.crt, server.key), the same key in a certificate that
 * expired in 2020 (expired.crt), a client certificate (client.crt,
 * client.key), and a second CA that signed nothing of these (other-ca.crt).
 * Returns the dir (static), or NULL after printing why. */
const char *rdt_tls_certs(void);
/* A TLS-only server (--port 0 --tls-port N: N is s->port) with the
 * certificates of rdt_tls_certs(): server_cert is "server" or "expired";
 * auth_clients 1 requires a client certificate signed by the CA.  The
 * fixture reaches it over its unix socket (rdt_connect, probes).  Then as
 * rdt_server_start. */
int rdt_server_start_tls(rdt_server_t *s, const char *server_cert, int auth_clients, const char *extra_args);

/* Start a Redis Sentinel (redis-server --sentinel, same binary) that
 * monitors master under the name `name`, with a quorum of 1 and short
 * timers (down after 1 s, failover timeout 3 s), at its own port, socket
 * and temp dir.  Stopped with rdt_server_stop.  0, or -1 (printed). */
int rdt_sentinel_start(rdt_server_t *s, const rdt_server_t *master, const char *name);
/* The same with a quorum (for several sentinels) and, when password is not
 * NULL, a password that the sentinel's own clients must give (AUTH). */
int rdt_sentinel_start_opts(rdt_server_t *s, const rdt_server_t *master, const char *name, int quorum,
                            const char *password);
/* A TLS-only sentinel (--port 0 --tls-port N: N is s->port) with the
 * server certificate of rdt_tls_certs() and no client certificates
 * required, monitoring a TLS-only master (rdt_server_start_tls) with
 * --tls-replication yes, which makes it talk TLS to the master, its
 * replicas and the other sentinels.  Otherwise as rdt_sentinel_start_opts
 * without a password; the fixture reaches it over its unix socket. */
int rdt_sentinel_start_tls(rdt_server_t *s, const rdt_server_t *master, const char *name, int quorum);
/* SIGTERM, wait (SIGKILL after 5 s), remove the temp dir. */
void rdt_server_stop(rdt_server_t *s);

/* SIGKILL the server and reap it, keeping the dir, port and socket so that
 * rdt_server_restart() brings it back at the same addresses. */
void rdt_server_kill(rdt_server_t *s);
int rdt_server_restart(rdt_server_t *s);

/* SIGSTOP / SIGCONT the server process (a hung server). */
void rdt_server_pause(rdt_server_t *s);
void rdt_server_resume(rdt_server_t *s);

/* A plain hiredis connection to it (TCP; a TLS-only server's unix
 * socket), authenticated if needed; NULL on
 * failure (printed).  The caller redisFree()s it. */
redisContext *rdt_connect(const rdt_server_t *s);

/* FLUSHALL on the server; 0 or -1. */
int rdt_flushall(const rdt_server_t *s);

/* Write an ini file for librdlock into the server's dir and return its
 * path (static per call number: copy it if you need several).  The file has
 * [redis] host = 127.0.0.1 and port (or socket when use_socket), the
 * password if any, then extra_ini appended verbatim (may be NULL; it may
 * contain its own [lock] / [watchdog] sections).  NULL on failure. */
const char *rdt_write_ini(const rdt_server_t *s, int use_socket, const char *extra_ini);

/* Write text to a file in the server's dir (e.g. a malformed config or a
 * password file) and return its path, as rdt_write_ini. */
const char *rdt_write_file(const rdt_server_t *s, const char *basename, const char *text);

/* Write a Redlock client's ini into m[0]'s dir and return its path (as
 * rdt_write_file): [redlock] masters = the n servers' TCP addresses, then
 * redlock_extra (more [redlock] keys, may be ""), then command_timeout_ms
 * 1000, lease_ms, retry_interval_ms and a 5 ms jitter.  NULL on failure. */
const char *rdt_quorum_ini(const rdt_server_t *m, int n, const char *basename, const char *redlock_extra,
                           int lease_ms, int retry_interval_ms);

/* Monotonic milliseconds, for test measurements (not synchronisation). */
long long rdt_now_ms(void);

/* The symbolic name of an errno value the library may return
 * (docs/CONTRACT.md section 2), "0" for 0, "?" for any other: for the
 * messages of the suites (testutil.h's assertions), the torture runner and
 * the benchmark, which all link this file.  The one copy of the table. */
const char *rdt_errname(int code);

#endif
