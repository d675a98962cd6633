/* prim_quorum.h - one step of a semaphore, condition variable or barrier
 * on a Redlock quorum (prim.c and sem.c call it instead of
 * rdl_client_script when the topology is a quorum).
 *
 * A lock counts votes: every master keeps its own copy of the lock and a
 * majority of grants is a hold (lock_quorum.c).  A semaphore's permits,
 * a condition's registrations and a barrier's arrivals do not add up that
 * way (V+1 takers can each find a majority of masters with a permit
 * left), so a primitive's state is kept whole, the same on a majority, and
 * changed one step at a time:
 *
 *  1. begin, on every master: a short mutex for the primitive's steps
 *     (pstep.lua 'b').  A majority of voting masters in time (its lease
 *     less the drift allowance), or it is given back and tried again
 *     after a jittered pause.  Each grant raises the master's step
 *     counter; the step's version is the highest counter of the granting
 *     majority, written back (fence.lua) until a majority has it, so
 *     every later step's version is higher than this one's.
 *  2. on one master, the leader: the granting voting master with the
 *     newest state (highest version; the first in configuration order
 *     among equals, which is also where the subscribers listen, so the
 *     script's own wake-ups reach them), in one pipelined round trip:
 *     sync (the caller's op record as of that state, and leases that
 *     other masters saw renewed later), the primitive's own script
 *     (stamped so that it is void once the mutex may have run out), dump
 *     (the state's keys, DUMP and PTTL).
 *  3. write, on every master that granted: the dumped state, as the
 *     step's version, and the end of the mutex.  Done when a majority of
 *     voting masters took it.
 *
 * A majority holds every finished step, so every later step's majority
 * meets a master with the newest state.  A step that did not finish is
 * tried again whole with the same call number: the op record (kept in
 * the replicated state) tells the script whether the leader's history
 * already holds it.  Each step costs three round trips (four when a
 * counter lags) and copies the primitive's whole state: a few hundred
 * bytes for a handful of waiters or holders. */
#ifndef RDL_PRIM_QUORUM_H
#define RDL_PRIM_QUORUM_H

#include "client/client.h"
#include "exec/call.h"
#include "proto/script.h"

/* script with argv as for rdl_client_script: nkeys keys, the
 * primitive's state keys with the caller's op record key last; argv
 * [stamp_arg] is the request's stamp argument (RDL_STAMP_LEN digits, or
 * "0" for an unstamped op: on a quorum every op is stamped, and an
 * unstamped caller's void answer is retried here); argv[hkey] is the
 * holder hash of the lease records (-1: none).  Returns as
 * rdl_client_script: 0 and *reply (the script's answer), or EIO (no
 * majority within the retries, or the script's error reply), EACCES (too
 * few answered, and a master refused us), ENOMEM; and EINVAL when nkeys
 * is below 2 or above the keys it has room for, or hkey is not below
 * nkeys - 1.  call (may be NULL) as there, with route the leader's. */
int rdl_prim_quorum_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc,
                           const char *const *argv, const size_t *lens, int stamp_arg, int hkey,
                           long long deadline, redisReply **reply, rdl_call_t *call);

#endif
