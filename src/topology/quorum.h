/* quorum.h - one request to every master of a Redlock set at once, and
 * the masters themselves (topology_redlock.c).
 *
 * A quorum step sends its script to every master that answers, on one
 * pooled connection each, all before reading any answer, and then reads
 * the answers as they come (poll()): its wall time is the slowest
 * master's round trip, not the sum.  It waits for every answer up to
 * command_timeout_ms, but once a majority has answered it gives the rest
 * only a short grace (twice the time the majority took, at least
 * RDL_QUORUM_GRACE_MS): a stopped master must not slow every request down
 * to its timeout.  A master that did not answer is not asked again for a
 * backoff (topology_redlock.c). */
#ifndef RDL_QUORUM_H
#define RDL_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#include "base/config.h"
#include "client/client.h"
#include "proto/script.h"

struct rdlock_client;

#define RDL_QUORUM_GRACE_MS 10

/* Once enough masters answered (or connected) at now, of a round started
 * at start: until when the others may still (twice the time so far, at
 * least RDL_QUORUM_GRACE_MS; min_grace instead if larger). */
static inline long long rdl_quorum_grace_end(long long start, long long now, long long min_grace)
{
    long long g = 2 * (now - start);
    if (g < min_grace)
        g = min_grace;
    return now + (g > RDL_QUORUM_GRACE_MS ? g : RDL_QUORUM_GRACE_MS);
}

/* ---- the masters (topology_redlock.c) */
typedef struct rdl_redlock rdl_redlock_t;
/* How many masters, and how many make a majority. */
int rdl_redlock_count(struct rdlock_client *c);
int rdl_redlock_majority(struct rdlock_client *c);
/* Master k's route ("host:port"); rdl_redlock_index returns the index k
 * of a route (-1: none). */
const char *rdl_redlock_route(struct rdlock_client *c, int k);
int rdl_redlock_index(struct rdlock_client *c, const char *route);
/* May master k be asked now (it answered last time, or its backoff is
 * over)?  Does it vote (it has run for the restart delay)? */
bool rdl_redlock_up(struct rdlock_client *c, int k, long long now);
bool rdl_redlock_votes(struct rdlock_client *c, int k, long long now);
/* Master k answered a request, or did not (starts or extends its
 * backoff). */
void rdl_redlock_result(struct rdlock_client *c, int k, bool answered);
/* What a new connection to master k learnt: how long it has run, and its
 * run id (a master younger than the restart delay has no vote yet). */
void rdl_redlock_seen(struct rdlock_client *c, int k, long long uptime_s, const char *run_id);
/* A new connection to master k, not yet ready (conn->ready false).  0, or
 * ENOMEM, or as rdl_conn_open_at: EIO (master k marked down), EACCES,
 * EINVAL (the db), ENOMEM. */
int rdl_redlock_open(struct rdlock_client *c, int k, struct rdl_conn **out);
/* New connections to the masters in want, all opened at once: out[k] (not
 * ready yet) or NULL.  Once `need` of them are connected the others get
 * a grace (RDL_QUORUM_GRACE_MS, at least twice the time so far) instead of
 * the whole connect_timeout_ms; those not connected by then are marked
 * down.  *denied is set if a master refused our password.  0 or ENOMEM. */
int rdl_redlock_open_many(struct rdlock_client *c, const bool *want, int need, struct rdl_conn **out,
                          bool *denied);

/* ---- one request to every master (quorum.c) */

/* What one master made of the request. */
typedef struct rdl_qans {
    int rc;              /* 0: *r is its answer (maybe an error reply);
                            ENOTCONN: not sent (down, or skipped);
                            EIO: sent, no answer (it may still act) */
    redisReply *r;
    bool votes;          /* it has run for the restart delay (an answer
                            from a master that does not vote counts for
                            nothing but its own effects) */
    long long sent_at;   /* monotonic ms (when sent) */
    long long answer_at; /* monotonic ms (when answered) */
} rdl_qans_t;

typedef struct rdl_qcall {
    /* in */
    const rdl_script_t *script;
    int nkeys, argc;
    const char *const *argv[RDL_REDLOCK_MAX]; /* per master: the stamps */
    const size_t *lens[RDL_REDLOCK_MAX];      /* differ, the rest is shared */
    char *stamp[RDL_REDLOCK_MAX]; /* per master, or NULL: RDL_STAMP_LEN bytes
                                     inside its argv, as rdl_call_t.stamp */
    bool skip[RDL_REDLOCK_MAX];   /* not sent to these */
    bool force;                   /* also to masters in their backoff (a
                                     retry that needs every answer) */
    /* out */
    int n;                        /* masters */
    rdl_qans_t ans[RDL_REDLOCK_MAX];
    long long sent_at;            /* when the first went out (monotonic ms) */
    long long unsure_until;       /* stamped calls: until when an
                                     unanswered one may still act, 0 none */
    bool denied;                  /* a master refused us (authentication,
                                     ACL): too few answers mean EACCES */
} rdl_qcall_t;

/* Clear q and set it up for script with the same arguments on every
 * master (nkeys keys among argc). */
void rdl_quorum_init(struct rdlock_client *c, rdl_qcall_t *q, const rdl_script_t *script, int nkeys, int argc,
                     const char *const *argv, const size_t *lens);

/* Send q's request to every master not skipped and read what comes (see
 * above).  Always 0 (q->ans filled: free with rdl_quorum_free): it has no
 * failure of its own, each master's outcome is its q->ans[k].rc (0,
 * ENOTCONN or EIO, above). */
int rdl_quorum_exchange(struct rdlock_client *c, rdl_qcall_t *q);
void rdl_quorum_free(rdl_qcall_t *q);

/* A connection to any master that answers, ready: every master is asked
 * at once, the others' connections go to the pool.  0, or EIO (none
 * answered, or none could be set up: also for want of memory, or a db
 * refused), EACCES (a password is wanted or refused). */
int rdl_quorum_connect(struct rdlock_client *c, struct rdl_conn **out);
/* A connection to master k alone, ready and with its clock known (a
 * step that must run on one master: prim_quorum.c).  0, or EIO (master k
 * down, or no connection to it could be made or set up: also for want of
 * memory, or a db refused), EACCES.  Give it back with
 * rdl_client_conn_put. */
int rdl_quorum_conn(struct rdlock_client *c, int k, struct rdl_conn **out);
/* One argv per master, all the same but for the one argument that
 * carries a stamp (index stamp_arg, the stamp at offset stamp_off in it):
 * copies of that argument, and q's argv/lens/stamp filled.  *buf must be
 * freed by the caller.  0 or ENOMEM. */
int rdl_quorum_argv(rdl_qcall_t *q, int nmasters, const char *const *argv, const size_t *lens, int argc,
                    int stamp_arg, size_t stamp_off, char **buf);

#endif
