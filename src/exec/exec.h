/* exec.h - how a step runs on the client's topology: one set of operations
 * chosen once at client open (c->exec), as curl chooses one TLS backend
 * (lib/vtls: struct Curl_ssl and its SSLSUPP_* bits).  Two sets:
 *
 *   exec_single.c  one server serves a name (single, Sentinel, Cluster):
 *                  each step is one script call (call.h)
 *   exec_quorum.c  Redlock: every master serves every name, a step counts
 *                  by majority (lock_quorum.h, prim_quorum.h, quorum.h)
 *
 * The layers above (the lock, the primitives, the admin calls) run their
 * steps through these and read the capability bits; none of them asks
 * which topology it is on.  Every operation returns as its comment says,
 * with errno codes. */
#ifndef RDL_EXEC_H
#define RDL_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#include "client/client.h"
#include "exec/call.h"
#include "proto/reply.h"
#include "proto/script.h"

/* What differs between the sets, named by what it means to the caller. */
enum {
    /* A release may hand the lock to the head of the writers' queue, who
     * claims it within a claim window (acquire.lua).  Without it a free
     * lock is taken by whoever asks first: on a quorum a hand-over would
     * need a majority to agree on the same waiter. */
    RDL_EXEC_HANDOVER = 1u << 0,
    /* Exclusive waiters of one name in one client try one at a time: on a
     * quorum two would only split the masters' votes. */
    RDL_EXEC_VOTE_ONE = 1u << 1,
    /* An acquire that did not take the lock may have been granted on some
     * servers and given back there: the next attempt is a call of its own,
     * so that a late copy of that give-back cannot name it. */
    RDL_EXEC_GRANTS_UNDONE = 1u << 2,
    /* A hold taken over a dead owner's robust marker keeps the marker, so
     * that its clean unlock clears it on the servers that did not grant the
     * hold. */
    RDL_EXEC_DEAD_OWNER = 1u << 3,
    /* An unlock that some servers confirmed keeps asking the others until
     * the lease would have ended (not only for the client's retries). */
    RDL_EXEC_RELEASE_TO_EXPIRY = 1u << 4,
    /* A primitive's state lives on several servers as copies, each with a
     * step version (prim_quorum.h), and a run-once mark counts by vote: a
     * reader takes each kind from the newest copy among the answers, the
     * mark from rdl_once_status. */
    RDL_EXEC_COPIES = 1u << 5,
    /* A lease is timed by several servers' clocks, which may drift apart:
     * a hold is surely ours only for the lease less the drift allowance
     * (rdl_lease_quorum_validity, lease.h), not the whole lease. */
    RDL_EXEC_DRIFT = 1u << 6,
};

typedef struct rdl_exec_ops {
    const char *name;
    unsigned caps; /* RDL_EXEC_* */
    /* acquire.lua with the lock's nkeys keys and argc arguments, whose last
     * one holds the attempt's stamp at call->stamp.  0 held, EOWNERDEAD,
     * EBUSY, ENOTRECOVERABLE, ESTALE (void: send again with a fresh
     * stamp), *out set as rdl_reply_acquire sets it; or EIO (no answer, or
     * on a quorum too few), EACCES (refused: authentication, ACL), EINVAL
     * (one server: a new connection's SELECT refused), ENOMEM.  *call as
     * rdl_client_script sets it. */
    int (*acquire)(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                   unsigned lease_ms, long long deadline, rdl_acquired_t *out, rdl_call_t *call);
    /* release.lua: 0 and *out, *sent_at (when the attempt that took effect
     * was sent), *ambiguous (an earlier attempt may have acted); or EIO (no
     * answer, or on a quorum too few to tell), EACCES (refused:
     * authentication, ACL), EINVAL (one server: a new connection's SELECT
     * refused), ENOMEM. */
    int (*release)(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                   long long deadline, rdl_released_t *out, long long *sent_at, bool *ambiguous);
    /* One step of a semaphore, condition or barrier: script with nkeys
     * keys and argc arguments, argv[stamp_arg] the stamp (call->stamp) and
     * KEYS[hkey + 1] the holders' hash.  0 and *reply, or EIO, EACCES,
     * EINVAL, ENOMEM, as rdl_client_script (one server) and
     * rdl_prim_quorum_script (a quorum) say. */
    int (*step)(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc, const char *const *argv,
                const size_t *lens, int stamp_arg, int hkey, long long deadline, redisReply **reply,
                rdl_call_t *call);
    /* A script that takes exactly a name's keys and no argument (reset,
     * status), where the name lives: 0 and *reply (the first full answer),
     * or EIO (no answer; on a quorum: fewer than a majority answered),
     * EACCES (one server: refused), EINVAL (one server: a new connection's
     * SELECT refused), ENOMEM. */
    int (*script)(rdlock_client_t *c, const rdl_script_t *script, int nkeys, const char *const *keys,
                  const size_t *lens, redisReply **reply);
    /* The same on one server, index `server` of those a name lives on
     * (its description into where, n bytes): 0 and *reply, or EINVAL past
     * the last, or as script: EIO, EACCES (also an error reply of a quorum
     * master that refused us), EINVAL, ENOMEM. */
    int (*script_on)(rdlock_client_t *c, const rdl_script_t *script, int nkeys, const char *const *keys,
                     const size_t *lens, unsigned server, char *where, size_t n, redisReply **reply);
    /* A script on every server a name lives on (the one, or every master
     * of a quorum), each answer that came handed to use(server, reply,
     * arg), which says whether it is usable.  0 when enough were (the one
     * server's; a majority of the masters'), else EIO, logged as "<what> <name>:
     * unexpected reply from the server" or "<what> <name>: N of M redlock
     * masters answered"; or EACCES, EINVAL, ENOMEM when no answer could be sought
     * (one server: as rdl_client_script; a quorum: ENOMEM). */
    int (*each)(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc, const char *const *argv,
                const size_t *lens, bool (*use)(int server, const redisReply *r, void *arg), void *arg,
                const char *what, const char *name);
    /* renew.lua for n holds (n keys, argc arguments) on every server a
     * name lives on at once, each hold's result by vote into result[i]: 0
     * renewed, 1 lost, -1 unknown (to be retried).  NULL where one server
     * serves each name and the watchdog renews on its own connections,
     * pipelined per server (watchdog.c).  0, or EIO (some result is
     * unknown), ENOMEM (nothing was sent). */
    int (*renew)(rdlock_client_t *c, int n, int argc, const char *const *argv, const size_t *lens, int *result);
} rdl_exec_ops_t;

extern const rdl_exec_ops_t rdl_exec_single;
extern const rdl_exec_ops_t rdl_exec_quorum;

/* The set for a topology: chosen once, at client open. */
const rdl_exec_ops_t *rdl_exec_of(const struct rdl_topology_ops *topo);

#endif
