/* sentinel.h - following the master through Redis Sentinel's
 * notifications (docs/CONTRACT.md section 9, Sentinel).
 *
 * With [sentinel], the client's background thread keeps one connection to
 * a sentinel, subscribed to `+switch-master` (and `+promoted-slave`, the
 * same news earlier from the sentinel that runs a failover): when the
 * sentinels name a new master, the client moves at once (events.c drops its pool, the
 * watchdog's and the subscriber's connections and renews every hold on the
 * new master), whether or not it holds anything.  The link reconnects to
 * the next sentinel when it drops or stops answering its keepalive PING,
 * and after each (re)connection asks where the master is, so that a
 * switch published while no link was up is not missed.
 *
 * A watch is used by the background thread only (no locking); it does
 * blocking I/O bounded by the configured timeouts. */
#ifndef RDL_SENTINEL_H
#define RDL_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "base/config.h"

#define RDL_MASTER_ADDR_MAX 272 /* "host:port", as rdl_conn_t's addr */

/* A connection to sentinel i of cfg (its connect and command timeouts),
 * authenticated with [sentinel]'s credentials if any: the context, or NULL
 * with the reason in why (n bytes, never the password) and *refused set if
 * the sentinel refused the credentials. */
redisContext *rdl_sentinel_connect(const rdl_config_t *cfg, int i, char *why, size_t n, bool *refused);

/* Ask the sentinels, the one that answered last first, where the master
 * is: the first that knows wins.  0 (host, *port), EIO (none knows or
 * answers: rdl_conn_last_error says why) or EACCES (none knows, and one
 * refused our credentials: logged). */
int rdl_sentinel_ask(const rdl_config_t *cfg, char *host, size_t hostlen, int *port);
/* The same as "host:port" in buf (n bytes): 0, or EIO, EACCES as
 * rdl_sentinel_ask. */
int rdl_sentinel_master(const rdl_config_t *cfg, char *buf, size_t n);

/* For [replication] wait_replicas = all: ask every sentinel about the
 * master that addr ("host:port") is.  A majority of the configured
 * sentinels must answer, or with all every one of them.  0 and *count: the
 * most replicas that a sentinel naming addr could promote (listed, not
 * down, priority above 0, looked at, reporting themselves replicas, or the
 * one it is promoting), or for one that sees the master down or failing
 * over, every replica it lists that is not down; *frozen if there is such
 * a one (the count must not fall now).  EROFS: the sentinels with the
 * newest configuration epoch name another master (logged; the client asks
 * one of them first from then on).  EACCES: too few answered and one
 * refuses a command (logged).  EIO: too few answered. */
int rdl_sentinel_replicas(const rdl_config_t *cfg, const char *addr, bool all, int *count, bool *frozen);

typedef struct rdl_sentinel_watch rdl_sentinel_watch_t;

/* A watch with no link yet; NULL on ENOMEM. */
rdl_sentinel_watch_t *rdl_sentinel_watch_new(void);
/* Close its link (also in a fork child: closes the descriptor only). */
void rdl_sentinel_watch_free(rdl_sentinel_watch_t *w);

/* Everything that is due at now (monotonic ms): connect to a sentinel
 * (one attempt per call, the next sentinel after a failure) and ask where
 * the master is, send a keepalive PING, drop a link whose PING went
 * unanswered.  1 if a new link learned where the master is (its address
 * in addr, n bytes), else 0: not an error code. */
int rdl_sentinel_watch_service(rdl_sentinel_watch_t *w, const rdl_config_t *cfg, long long now, char *addr,
                               size_t n);

/* Returns the descriptor of the link, for poll(); -1 while there is
 * none. */
int rdl_sentinel_watch_fd(const rdl_sentinel_watch_t *w);
/* When rdl_sentinel_watch_service next has something to do (monotonic
 * ms). */
long long rdl_sentinel_watch_due(const rdl_sentinel_watch_t *w, const rdl_config_t *cfg);

/* The link is readable (or hung up): read what arrived.  Not an error
 * code: 1 if a notification about our master came (the new master's
 * address in addr; the last one if several; *event names it), 0 if
 * nothing of interest, -1 if the link failed (closed, logged; the next
 * sentinel is tried after a backoff).  The notifications:
 * `+switch-master` (every sentinel, once it adopts the new master) and
 * `+promoted-slave` (the sentinel that runs the failover, as soon as the
 * replica it promoted is a master: from then on Sentinel names it to new
 * connections, and the old master's writes are lost). */
int rdl_sentinel_watch_read(rdl_sentinel_watch_t *w, const rdl_config_t *cfg, char *addr, size_t n,
                            const char **event);

/* The master's address as the watch last learned it ("" if never):
 * events.c compares new addresses with it. */
const char *rdl_sentinel_watch_master(const rdl_sentinel_watch_t *w);
void rdl_sentinel_watch_set_master(rdl_sentinel_watch_t *w, const char *addr);

#endif
