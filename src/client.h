/* client.h - a client: its configuration, id, connection pool, local
 * tables of holds and wait queues, and its background thread's state; plus
 * the process default client.  One mutex (mu) guards everything here but
 * the connections themselves, and is never held across network I/O. */
#ifndef RDL_CLIENT_H
#define RDL_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <hiredis/hiredis.h>

#include "config.h"
#include "conn.h"
#include "rdlock.h"
#include "script.h"
#include "table.h"
#include "timeutil.h"

#define RDL_ID_HEX 32

/* A lost callback to run on the background thread. */
typedef struct rdl_lostcb {
    struct rdl_lostcb *next;
    rdlock_lost_fn fn;
    void *arg;
    char *name;
} rdl_lostcb_t;
#define RDL_OWNER_MAX (RDL_ID_HEX + 12)

/* A server's clock: server ms >= local monotonic ms + off, as sampled at
 * local time at (ok: sampled since the last pool flush). */
typedef struct rdl_clock {
    char route[RDL_ROUTE_MAX];
    long long off, at;
    bool ok;
} rdl_clock_t;
#define RDL_CLOCKS_MAX 64

struct rdlock_client {
    rdl_config_t cfg;
    const struct rdl_topology_ops *topo; /* which server serves a name (topology.h) */
    const rdl_scripts_t *scripts;  /* the topology's set (script.h) */
    char id[RDL_ID_HEX + 1];  /* 128 random bits from the OS, hex */
    char host[256];
    pid_t pid;
    pthread_mutex_t mu;

    rdl_conn_t *idle;         /* connection pool for user threads */
    int nidle;
    unsigned pool_gen;        /* bumped by a flush: older connections in use
                                 are closed when they come back */
    long long sentinel_check_at; /* background thread only: next Sentinel
                                    check not before (after a failed one) */
    bool net_down;            /* for one log line per outage, not per retry */
    char last_error[256];     /* why the last request to Redis failed
                                 (rdlock_client_info), "" if none did */

    /* The servers' clocks, for the deadlines that make late acquire
     * attempts void (see rdl_call_t.stamp), one per route (topology.h). */
    rdl_clock_t clocks[RDL_CLOCKS_MAX];
    int nclocks;

    /* Lost callbacks owed by unlocks that returned ENOLCK without the
     * watchdog having reported the loss: run by the background thread
     * (the callback's documented thread), then freed. */
    rdl_lostcb_t *lost_later;

    rdl_table_t holds;        /* rdl_hold_t by (key, thread) */
    uint64_t next_serial;
    /* The watchdog's state: only watchdog.c touches it. */
    struct {
        rdl_conn_t *conns;    /* its own connections, one per route (linked by
                                 next; bg thread only) */
        long long next;       /* earliest renewal / expiry due (monotonic ms), 0 none */
        long long retry_at;   /* after a failed round, not before */
        int fails;            /* failed rounds in a row */
    } wdog;

    rdl_table_t waits;        /* rdl_waitq_t by key */
    int listening;            /* threads waiting in BLPOP for a hand-over
                                 (handover.c), each on a connection of its
                                 own: at most RDL_LISTEN_MAX */

    int nhandles;             /* locks initialised on this client, not destroyed */

    /* Background thread (events.c). */
    bool bg_running;
    bool bg_stop;
    pthread_t bg;
    int wake[2];              /* self-pipe: wakes the thread's poll() */
    rdl_conn_t *sub;          /* subscriber connections, one per route
                                 (linked by next; bg thread only) */
    struct rdl_cluster *cluster;   /* [cluster]: the slot map (topology_cluster.c) */
    struct rdl_redlock *redlock;   /* [redlock]: the masters' state (topology_redlock.c) */
    struct rdl_sentinel_watch *sw; /* [sentinel]: +switch-master listener
                                      (bg thread only; sentinel.h) */
    long long sub_retry_at;
    int sub_fails;
    bool sub_denied;          /* the server refused a SUBSCRIBE (logged once) */

    bool is_default;
    bool exiting;        /* the process exit handler has ended this
                            client's holds and waits (lock.c): a waiting
                            thread must not take them up again */
    struct rdlock_client *reg_next; /* registry of clients, for fork() */
};

/* Open a client (rdlock_client_open without argument checks). */
int rdl_client_open(rdlock_client_t **out, const char *ini_path);

/* The process default client, created on first call (docs/CONTRACT.md section 3). */
int rdl_client_default(rdlock_client_t **out);
/* fn(c, arg) for every open client, with the registry locked (lock order:
 * fn may take a client's mutex, never the registry's): the exit handler's
 * walk (lock.c). */
void rdl_clients_each(void (*fn)(rdlock_client_t *c, void *arg), void *arg);

/* This thread's number (1, 2, ...), stable for the thread's life. */
unsigned rdl_thread_no(void);

/* Owner id "<client id>:<thread number>" into buf (RDL_OWNER_MAX). */
size_t rdl_owner(const rdlock_client_t *c, unsigned thread, char *buf);

/* Close every idle pooled connection (mu not held): the next calls
 * connect again. */
void rdl_client_pool_flush(rdlock_client_t *c);

/* Width of a call's stamp: a server time in ms, zero-padded. */
#define RDL_STAMP_LEN 15

/* With [sentinel]: does an idle pooled connection lead to a master other
 * than addr ("host:port")?  If so, true and its address in where (n
 * bytes). */
bool rdl_client_pool_elsewhere(rdlock_client_t *c, const char *addr, char *where, size_t n);

/* What a script call's retries mean for its result. */
typedef struct rdl_call {
    bool maybe_ran;     /* an attempt was sent but got no answer before the
                           one that did: the reply may reflect its effect */
    bool ambiguous;     /* ... and that attempt timed out on a live server,
                           so it most likely did run (a dead server's state
                           may be gone with it: not ambiguous) */
    long long sent_at;  /* monotonic ms when the earliest attempt that may
                           have taken effect was sent */
    bool confirm;       /* in: with [replication] wait_replicas > 0, WAIT
                           for that many replicas after the script */
    int acked;          /* out: replicas that confirmed it (-1: not asked,
                           or WAIT refused) */
    char *stamp;        /* in, or NULL: RDL_STAMP_LEN bytes inside one of the
                           arguments, rewritten before every attempt with the
                           server time after which that attempt is void
                           (acquire.lua): its sending + command_timeout_ms,
                           in the server's clock, never later than the server
                           time when the client gives up on it */
    long long answer_sent; /* out: when the attempt that answered was sent */
    long long answer_at;   /* out: when its answer came (monotonic ms) */
    char route[RDL_ROUTE_MAX]; /* out: the route of the server that answered */
    long long unsure_until; /* out: monotonic ms until which an attempt that
                           got no answer may still act on the server (its
                           stamp); 0 if none (stamp calls only) */
} rdl_call_t;

/* A sample of the clock of route's server: server_ms read by the server
 * between our sending and local monotonic time recv_at (mu not held). */
void rdl_client_clock(rdlock_client_t *c, const char *route, long long server_ms, long long recv_at);

/* The parts of rdl_client_script that a call to several servers at once
 * (quorum.c) uses: an idle pooled connection to route's server (NULL:
 * none), giving one back, writing an attempt's stamp (RDL_STAMP_LEN
 * bytes: the server time after which an attempt sent at `sent` is void),
 * whether route's clock is known, and sampling it on conn (0 or EIO). */
rdl_conn_t *rdl_client_conn_idle(rdlock_client_t *c, const char *route);
void rdl_client_conn_put(rdlock_client_t *c, rdl_conn_t *conn);
void rdl_client_stamp(rdlock_client_t *c, const char *route, char *stamp, long long sent);
bool rdl_client_clock_known(rdlock_client_t *c, const char *route);
int rdl_client_clock_sample(rdlock_client_t *c, rdl_conn_t *conn);

/* A connection to route's server: an idle pooled one, or one opened now
 * and stamped with the pool generation read before connecting (a flush
 * meanwhile keeps it out of the pool).  0, EIO (unreachable), or what
 * rdl_topo_connect_route refuses with for good (EACCES, EINVAL, ENOMEM). */
int rdl_client_conn_get(rdlock_client_t *c, const char *route, rdl_conn_t **out);

/* Run a script through a pooled connection, reconnecting and retrying up
 * to command_retries times (backoff never sleeps past `deadline`, monotonic
 * ms, < 0 for none).  Returns 0 with *reply, or EIO, EACCES, ENOMEM.
 * *call (may be NULL) tells about the retries; its `confirm` is the only
 * field read. */
int rdl_client_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc,
                      const char *const *argv, const size_t *lens, long long deadline,
                      redisReply **reply, rdl_call_t *call);

#define RDL_LOCK(c) RDL_CHECK(pthread_mutex_lock(&(c)->mu))
#define RDL_UNLOCK(c) RDL_CHECK(pthread_mutex_unlock(&(c)->mu))

#endif
