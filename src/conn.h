/* conn.h - one Redis connection: connect over TCP or a unix socket, AUTH,
 * SELECT, timeouts, and script calls (EVALSHA, EVAL on NOSCRIPT).
 * A connection is used by one thread at a time (hiredis contexts are not
 * thread-safe): the client's pool hands it out. */
#ifndef RDL_CONN_H
#define RDL_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#include "config.h"
#include "fmt.h"
#include "script.h"

typedef struct rdl_conn {
    redisContext *ctx;
    struct rdl_conn *next; /* pool link */
    char master[272];      /* with [sentinel]: "host:port" it was told, else "" */
    unsigned gen;          /* the client's pool generation when opened */
    bool broken;           /* a half-written pipeline: never reuse */
} rdl_conn_t;

/* With [sentinel]: where the sentinels say the master is now, as
 * "host:port" in buf (at least 272 bytes).  0, EIO (none knows, none
 * answers) or EACCES (none knows, and one refused our credentials).
 * The sentinel that answers is asked first next time. */
int rdl_sentinel_master(const rdl_config_t *cfg, char *buf, size_t n);

/* A connection to sentinel i of cfg (its connect and command timeouts),
 * authenticated with [sentinel]'s credentials if any: the context, or NULL
 * with the reason in why (n bytes, never the password) and *refused set if
 * the sentinel refused the credentials. */
redisContext *rdl_sentinel_connect(const rdl_config_t *cfg, int i, char *why, size_t n, bool *refused);

/* Connect, authenticate and select the db.  Returns 0 and *out, or
 *   EIO     unreachable or no answer within the timeouts
 *   EACCES  authentication refused (also NOAUTH: a password is needed),
 *           by the server or, with [sentinel], by the sentinels
 *   EINVAL  the server rejected the db number
 *   ENOMEM */
int rdl_conn_open(const rdl_config_t *cfg, rdl_conn_t **out);

/* As rdl_conn_open without the PING that otherwise finds out at once
 * whether the server wants a password: for connections whose first
 * command reports NOAUTH anyway (one round trip less, which matters on a
 * slow network for the watchdog's first renewal). */
int rdl_conn_open_lazy(const rdl_config_t *cfg, rdl_conn_t **out);
void rdl_conn_close(rdl_conn_t *c);

/* Why this thread's last rdl_conn_open failed with EIO ("connect failed:
 * Connection refused"), for log lines; never NULL. */
const char *rdl_conn_last_error(void);

/* 1 while no I/O error happened on the connection. */
int rdl_conn_ok(const rdl_conn_t *c);

/* Run `script` with nkeys keys followed by the other arguments in argv
 * (argc in all).  Returns 0 with *reply (the caller frees it; never an
 * error reply), EIO (connection failed: close it; or the script failed:
 * logged), EAGAIN (the server is loading or busy: retry later), EROFS (the
 * server is a replica now: close the connection, connect again), EACCES
 * (the server wants authentication) or ENOMEM. */
int rdl_conn_script(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                    const char *const *argv, const size_t *lens, redisReply **reply);
/* The same, followed in the same round trip by WAIT replicas timeout_ms
 * (replicas > 0): *acked is how many replicas confirmed every write of the
 * connection so far, the script's included; -1 if WAIT was refused
 * (logged), -2 if refused for want of permission (ACL). */
int rdl_conn_script_wait(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                         const char *const *argv, const size_t *lens, int replicas, int timeout_ms,
                         redisReply **reply, int *acked);

/* Pipelining: append an EVALSHA without waiting, then read replies in
 * order with rdl_conn_read.  0, or EIO/ENOMEM. */
int rdl_conn_append_script(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                           const char *const *argv, const size_t *lens);
/* Read one reply (an error reply is returned as is).  0 or EIO. */
int rdl_conn_read(rdl_conn_t *c, redisReply **reply);

/* The server's clock (TIME) in ms: 0 and *ms, or EIO (also an error
 * reply: logged). */
int rdl_conn_time(rdl_conn_t *c, long long *ms);

/* May this connection's user publish and subscribe to channel (Redis 7
 * ACL channel permissions)?  0 yes, EACCES no (logged, naming what is
 * missing), EIO no answer.  Leaves the connection in its normal mode. */
int rdl_conn_check_channel(rdl_conn_t *c, const char *channel, size_t len);

/* Load a script into the server's cache (after NOSCRIPT in a pipeline). */
int rdl_conn_load(rdl_conn_t *c, const rdl_script_t *script);
/* Pipelining: append a SCRIPT LOAD (its reply is read with rdl_conn_read). */
int rdl_conn_append_load(rdl_conn_t *c, const rdl_script_t *script);


/* "host:port" or "unix:path", for log lines. */
const char *rdl_conn_where(const rdl_config_t *cfg, char *buf, size_t n);

#endif
