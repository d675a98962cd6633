/* conn.h - one Redis connection: connect over TCP or a unix socket, AUTH,
 * SELECT, timeouts, and script calls (EVALSHA, EVAL on NOSCRIPT).
 * A connection is used by one thread at a time (hiredis contexts are not
 * thread-safe): the client's pool hands it out. */
#ifndef RDL_CONN_H
#define RDL_CONN_H

#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/time.h>
#include <hiredis/hiredis.h>

#include "base/config.h"
#include "base/fmt.h"
#include "proto/script.h"
#include "proto/slotmap.h"

/* A script that a cluster node sent elsewhere (MOVED, ASK): the server
 * did not run it; c->redir says where to go. */
#define RDL_EREDIRECT EXDEV

/* A route (topology.h), with its NUL: "host:port". */
#define RDL_ROUTE_MAX 272

typedef struct rdl_conn {
    redisContext *ctx;
    struct rdl_conn *next; /* pool link */
    char host[256];        /* as connected to (a socket's path), and port (0: socket) */
    int port;
    char route[RDL_ROUTE_MAX]; /* which of the topology's servers this is (topology.h
                            * route(): "" where there is only one) */
    bool asking;           /* send ASKING before the next script (an ASK) */
    rdl_redirect_t redir;  /* after RDL_EREDIRECT: where to (slotmap.h); after
                            * EAGAIN, kind RDL_CL_CLUSTERDOWN if the cluster said so */
    char addr[272];        /* "host:port" or "unix:path": where it leads (log
                            * lines; a topology compares it with where a
                            * name lives now) */
    unsigned gen;          /* the client's pool generation when opened */
    bool broken;           /* a half-written pipeline: never reuse */
    int login;             /* AUTH and SELECT commands still to send first
                            * (rdl_conn_finish with defer: quorum.c
                            * appends them to its setup round) */
    const char *tls_version; /* the TLS protocol ("TLSv1.3"; tls.h), NULL: plain */
    bool tls_cert_asked;   /* the server asked for a client certificate we did not send */
    bool ready;            /* the topology's first questions about this
                            * server were answered (Redlock: its uptime
                            * and clock, topology_redlock.c) */
    bool counted;          /* its server's replicas were counted on it
                            * ([replication] wait_replicas = all,
                            * client/replicas.h) */
} rdl_conn_t;

/* Connect to host:port (port 0: host is a unix socket path), then
 * authenticate and select the db as cfg says; with probe, a PING when
 * nothing else was sent, to find out at once whether the server wants a
 * password (client open; other connections learn it from their first
 * command, one round trip less).  Which address serves a name is the
 * topology's business (topology.h), not this file's.  Returns 0 and *out,
 * or
 *   EIO     unreachable or no answer within the timeouts
 *   EACCES  authentication refused (also NOAUTH: a password is needed), or
 *           TLS: the server's certificate did not verify, or the server
 *           refused ours ([redis] tls; tls.h)
 *   EINVAL  the server rejected the db number
 *   ENOMEM */
int rdl_conn_open_at(const rdl_config_t *cfg, const char *host, int port, bool probe, rdl_conn_t **out);
void rdl_conn_close(rdl_conn_t *c);

/* The same in two halves, so that several connections can be opened at
 * once (Redlock's masters, topology_redlock.c): begin connects without
 * waiting (TCP); once rdl_conn_fd is writable (poll POLLOUT), finish
 * learns whether it connected and sets the connection up as open does
 * (blocking, timeouts, AUTH, SELECT).  begin: 0, EIO, ENOMEM; rdl_conn_fd
 * returns the descriptor of its socket; finish: as rdl_conn_open_at (0,
 * EIO, EACCES, EINVAL, ENOMEM), and c is closed on failure.  A connection
 * never finished is closed with rdl_conn_close. */
int rdl_conn_begin(const rdl_config_t *cfg, const char *host, int port, rdl_conn_t **out);
int rdl_conn_fd(const rdl_conn_t *c);
int rdl_conn_finish(const rdl_config_t *cfg, rdl_conn_t *c, bool probe);
/* finish without waiting for an answer: AUTH and SELECT are left to be
 * appended before the first command (c->login of them, rdl_conn_append_login),
 * so that a server that accepts connections but does not answer (stopped)
 * holds nobody up.  0, or (c closed) EIO, or with [redis] tls EACCES (the
 * server's certificate did not verify, or the server refused ours),
 * ENOMEM. */
int rdl_conn_finish_deferred(const rdl_config_t *cfg, rdl_conn_t *c);
/* Append the deferred AUTH and SELECT (c->login replies to read first).
 * 0 or EIO. */
int rdl_conn_append_login(const rdl_config_t *cfg, rdl_conn_t *c);
/* Their answers: 0, EACCES (refused), EINVAL (the db), EIO. */
int rdl_conn_login_reply(const redisReply *r, const char *what, const rdl_conn_t *c);

/* Why this thread's last connection attempt failed with EIO ("connect
 * failed: Connection refused"), for log lines; never NULL.  A topology
 * that fails before connecting (no sentinel answers) sets it. */
const char *rdl_conn_last_error(void);
void rdl_conn_set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* hiredis 0.14 writes with write(2): a peer gone raises SIGPIPE.  Every
 * section of socket I/O runs between these (conn.c says how). */
typedef struct rdl_nosigpipe {
    sigset_t old;
    bool was_blocked; /* the caller blocks SIGPIPE itself: nothing to do */
} rdl_nosigpipe_t;
void rdl_nosigpipe_enter(rdl_nosigpipe_t *st);
void rdl_nosigpipe_leave(rdl_nosigpipe_t *st);

static inline struct timeval rdl_ms_to_tv(int ms)
{
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

/* 1 if no I/O error happened on the connection (and it may be reused),
 * else 0. */
int rdl_conn_ok(const rdl_conn_t *c);
/* After a failed read: did it time out (the server may be alive but
 * slow, and may have run the request), rather than lose the connection? */
bool rdl_conn_timed_out(const rdl_conn_t *c);

/* Run `script` with nkeys keys followed by the other arguments in argv
 * (argc in all).  Returns 0 with *reply (the caller frees it; never an
 * error reply), EIO (connection failed: close it; or the script failed:
 * logged), EAGAIN (the server is loading or busy, or the cluster is down:
 * retry later), EROFS (the server is a replica now: close the connection,
 * connect again), RDL_EREDIRECT (a cluster node sent it elsewhere:
 * c->redir), EACCES (the server wants authentication, or denies
 * permission) or ENOMEM. */
int rdl_conn_script(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                    const char *const *argv, const size_t *lens, redisReply **reply);
/* The same, followed in the same round trip by WAIT replicas timeout_ms
 * (replicas > 0): *acked is how many replicas confirmed every write of the
 * connection so far, the script's included; -1 if WAIT was refused
 * (logged), -2 if refused for want of permission (ACL).  Returns as
 * rdl_conn_script: 0, EIO, EAGAIN, EROFS, RDL_EREDIRECT, EACCES, ENOMEM. */
int rdl_conn_script_wait(rdl_conn_t *c, const rdl_script_t *script, int nkeys, int argc,
                         const char *const *argv, const size_t *lens, int replicas, int timeout_ms,
                         redisReply **reply, int *acked);

/* How many replicas the server reports online (INFO replication; the
 * text decoded by rdl_info_online_replicas, info.h).  0 and *online; EIO
 * (no answer: rdl_conn_ok says the connection is lost; or a text that does
 * not read as a master's: logged), EROFS (the server is a replica now),
 * EACCES (INFO refused: not permitted or renamed away, logged); a
 * loading or busy server is EIO. */
int rdl_conn_online_replicas(rdl_conn_t *c, int *online);

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

/* Pipelining a plain command (at most 8 arguments), e.g. a BLPOP before
 * a script (handover.c); its reply is read with rdl_conn_read.  0, or
 * EIO/ENOMEM/EINVAL (the connection is then not reused). */
int rdl_conn_append_command(rdl_conn_t *c, int argc, const char *const *argv, const size_t *lens);
/* The socket's read and write timeout from now on: a command that blocks
 * on the server needs its own wait on top of the command timeout.  0 or
 * EIO. */
int rdl_conn_set_timeout(rdl_conn_t *c, int ms);

/* Load a script into the server's cache (after NOSCRIPT in a pipeline).
 * 0, or EIO (no answer, or an error reply), EACCES (the error reply says
 * authentication or permission). */
int rdl_conn_load(rdl_conn_t *c, const rdl_script_t *script);
/* Pipelining: append a SCRIPT LOAD (its reply is read with rdl_conn_read).
 * 0, or EIO/ENOMEM. */
int rdl_conn_append_load(rdl_conn_t *c, const rdl_script_t *script);


#endif
