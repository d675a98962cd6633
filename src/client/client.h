/* client.h - a client's state: its configuration, id, connection pool,
 * server clocks, local tables of holds and wait queues, and its background
 * thread's state.  One mutex (mu) guards everything here but the
 * connections themselves, and is never held across network I/O.
 *
 * Only the record: the functions that work on it live with their job, in
 * the layer that job belongs to (ident.h, pool.h, clock.h, call.h,
 * clients.h, ...), so that including this file ties a module to no other
 * module's code.  Where a lower layer needs an upper one to act (start the
 * background thread), the record carries a function pointer that the
 * upper layer sets at open. */
#ifndef RDL_CLIENT_H
#define RDL_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <hiredis/hiredis.h>

#include "base/config.h"
#include "proto/conn.h"
#include "rdlock.h"
#include "base/table.h"
#include "base/timeutil.h"
#include "proto/script.h"

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

/* [replication] wait_replicas = all: how many replicas an acquisition on
 * a master waits for (client/replicas.h says when it is looked at again). */
typedef struct rdl_replicas {
    char addr[272];      /* the master ("host:port", as rdl_conn_t's addr) */
    int want;            /* what acquisitions wait for now, >= 1 */
    long long look_at;   /* last look (monotonic ms) */
    bool due;            /* look again at the next acquisition (one got
                            fewer confirmations than it asked for) */
    long long low_since; /* since when looks saw fewer than want; 0 not */
    int low_max;         /* the most a look saw since then */
} rdl_replicas_t;

struct rdlock_client {
    rdl_config_t cfg;
    const struct rdl_topology_ops *topo; /* which server serves a name (topology.h) */
    const rdl_scripts_t *scripts;  /* the topology's set (script.h) */
    const struct rdl_exec_ops *exec; /* how steps run on it (exec.h) */
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
    /* The replica counts of wait_replicas = all, one per master address;
     * unlike the clocks, kept across pool flushes (replicas.c says why). */
    rdl_replicas_t replicas[RDL_CLOCKS_MAX];
    int nreplicas;

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

    /* Set at open by clients.c, for the layers below the background
     * thread (pool.c, waitq.c, watchdog.c): start it, if not running (mu
     * held; as rdl_events_start: 0 or ENOMEM, logged), and whether it runs
     * from the opening on (the topology's always_on). */
    int (*bg_start)(struct rdlock_client *c);
    bool always_on;
    /* The topology's report that the server every name lives on moved
     * ([sentinel]: a failover), for the background thread to act on
     * (rdl_events_moved: drop every connection to the old one, renew every
     * hold on the new one).  Background thread only, mu not held. */
    void (*moved)(struct rdlock_client *c);

    bool is_default;
    bool exiting;        /* the process exit handler has ended this
                            client's holds and waits (exit.c): a waiting
                            thread must not take them up again */
    struct rdlock_client *reg_next; /* registry of clients, for fork() */
};

/* Width of a call's stamp: a server time in ms, zero-padded. */
#define RDL_STAMP_LEN 15

/* Where the watchdog's connection leads ("host:port"), NULL if it has
 * none: with [sentinel], the master this client renews its holds on
 * (background thread only). */
static inline const char *rdl_client_wd_master(const struct rdlock_client *c)
{
    return c->wdog.conns != NULL ? c->wdog.conns->addr : NULL;
}

#define RDL_LOCK(c) RDL_CHECK(pthread_mutex_lock(&(c)->mu))
#define RDL_UNLOCK(c) RDL_CHECK(pthread_mutex_unlock(&(c)->mu))

#endif
