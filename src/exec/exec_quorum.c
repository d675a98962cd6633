/* exec_quorum.c - the steps on a Redlock quorum, where every master serves
 * every name: the lock's steps count by majority (lock_quorum.c), a
 * primitive's step runs on a leader and its state is copied to a majority
 * (prim_quorum.c), a name's other scripts go to every master (exec.h). */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "exec/exec.h"
#include "exec/lock_quorum.h"
#include "exec/prim_quorum.h"
#include "topology/quorum.h"

static int quorum_acquire(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                          unsigned lease_ms, long long deadline, rdl_acquired_t *out, rdl_call_t *call)
{
    (void)deadline; /* each master's round is bounded by command_timeout_ms */
    return rdl_quorum_acquire(c, argv, lens, nkeys, argc, (size_t)(call->stamp - argv[argc - 1]), lease_ms, out,
                              call);
}

/* Every master at once: script with nkeys keys and argc arguments, each
 * answer that came handed to take(k, &reply, arg), which says whether it
 * counts and may keep the reply (setting *reply to NULL).  The one loop
 * that counts masters' answers for the name's other scripts (reset,
 * status, run-once marks); enough() says whether they make a majority.
 * 0 and *ok, or ENOMEM (nothing was sent). */
static int tally(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc, const char *const *argv,
                 const size_t *lens, bool (*take)(int k, redisReply **r, void *arg), void *arg, int *ok)
{
    rdl_qcall_t q;
    *ok = 0;
    rdl_quorum_init(c, &q, script, nkeys, argc, argv, lens);
    if (rdl_quorum_exchange(c, &q) != 0)
        return ENOMEM;
    for (int k = 0; k < rdl_redlock_count(c); k++)
        if (q.ans[k].rc == 0 && take(k, &q.ans[k].r, arg))
            (*ok)++;
    rdl_quorum_free(&q);
    return 0;
}

static bool enough(rdlock_client_t *c, int ok)
{
    return ok >= rdl_redlock_majority(c);
}

/* tally's take for quorum_script: every full answer counts, the first is
 * kept in *(redisReply **)arg. */
static bool take_first(int k, redisReply **r, void *arg)
{
    redisReply **first = arg;
    (void)k;
    if ((*r)->type == REDIS_REPLY_ERROR)
        return false;
    if (*first == NULL) {
        *first = *r;
        *r = NULL;
    }
    return true;
}

/* A name's script (reset, status) on every Redlock master: the answer of
 * the first that gave one, if a majority did; else EIO.  A reset must
 * reach them all: the ones that did not answer keep what they have. */
static int quorum_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, const char *const *keys,
                         const size_t *lens, redisReply **reply)
{
    int n = rdl_redlock_count(c), got;
    *reply = NULL;
    if (tally(c, script, nkeys, nkeys, keys, lens, take_first, reply, &got) != 0)
        return ENOMEM;
    if (!enough(c, got) || *reply == NULL) {
        if (*reply != NULL)
            freeReplyObject(*reply);
        *reply = NULL;
        rdl_log(RDLOCK_LOG_ERROR, "%s: %d of %d redlock masters answered", script->name, got, n);
        return EIO;
    }
    if (got < n)
        rdl_log(RDLOCK_LOG_WARN, "%s: %d of %d redlock masters answered", script->name, got, n);
    return 0;
}

static int quorum_script_on(rdlock_client_t *c, const rdl_script_t *script, int nkeys, const char *const *keys,
                            const size_t *lens, unsigned server, char *where, size_t n, redisReply **reply)
{
    rdl_qcall_t q;
    int rc, k;
    if (server >= (unsigned)rdl_redlock_count(c))
        return EINVAL;
    snprintf(where, n, "%s", rdl_redlock_route(c, (int)server));
    rdl_quorum_init(c, &q, script, nkeys, nkeys, keys, lens);
    q.force = true; /* this master, whatever its backoff says */
    for (k = 0; k < rdl_redlock_count(c); k++)
        q.skip[k] = k != (int)server;
    if ((rc = rdl_quorum_exchange(c, &q)) != 0)
        return rc;
    if (q.ans[server].rc != 0 || q.ans[server].r->type == REDIS_REPLY_ERROR) {
        rc = q.ans[server].rc == 0 ? rdl_reply_error(q.ans[server].r) : EIO;
        rdl_quorum_free(&q);
        return rc;
    }
    *reply = q.ans[server].r;
    q.ans[server].r = NULL;
    rdl_quorum_free(&q);
    return 0;
}

typedef struct {
    bool (*use)(int server, const redisReply *r, void *arg);
    void *arg;
} each_use_t;

static bool take_use(int k, redisReply **r, void *arg)
{
    const each_use_t *u = arg;
    return u->use(k, *r, u->arg);
}

/* Every master at once; the answers usable by use counted against a
 * majority (exec.h). */
static int quorum_each(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc, const char *const *argv,
                       const size_t *lens, bool (*use)(int server, const redisReply *r, void *arg), void *arg,
                       const char *what, const char *name)
{
    each_use_t u = { use, arg };
    int ok;
    if (tally(c, script, nkeys, argc, argv, lens, take_use, &u, &ok) != 0)
        return ENOMEM;
    if (!enough(c, ok)) {
        rdl_log(RDLOCK_LOG_WARN, "%s %s: %d of %d redlock masters answered", what, name, ok, rdl_redlock_count(c));
        return EIO;
    }
    return 0;
}

/* Renewals on every master at once, each hold's result by majority.  A
 * master that does not vote yet (restarted within restart_delay_ms) counts
 * for the hold: it cannot vote for anyone else either.  Renewed: renewals
 * plus such masters make a majority; lost: even the masters that did not
 * answer could not make one; else unknown, retried. */
static int quorum_renew(rdlock_client_t *c, int n, int argc, const char *const *argv, const size_t *lens,
                        int *result)
{
    int nm = rdl_redlock_count(c), maj = rdl_redlock_majority(c), err = 0;
    bool got[RDL_REDLOCK_MAX] = { false }, idle[RDL_REDLOCK_MAX] = { false };
    int *res = malloc((size_t)nm * (size_t)n * sizeof *res);
    rdl_qcall_t q;

    if (res == NULL)
        return ENOMEM;
    rdl_quorum_init(c, &q, c->scripts->renew, n, argc, argv, lens);
    if (rdl_quorum_exchange(c, &q) != 0) {
        free(res);
        return ENOMEM;
    }
    for (int k = 0; k < nm; k++) {
        if (q.ans[k].rc == 0 && !q.ans[k].votes)
            idle[k] = true;
        else if (q.ans[k].rc == 0 && rdl_reply_renew(q.ans[k].r, (size_t)n, res + (size_t)k * n) == 0)
            got[k] = true;
    }
    rdl_quorum_free(&q);
    for (int i = 0; i < n; i++) {
        int yes = 0, maybe = 0;
        for (int k = 0; k < nm; k++) {
            if (idle[k] || (got[k] && res[(size_t)k * n + i] == 0))
                yes++;
            else if (!got[k])
                maybe++;
        }
        result[i] = yes >= maj ? 0 : yes + maybe < maj ? 1 : -1;
        if (result[i] == -1)
            err = EIO;
    }
    free(res);
    return err;
}

const rdl_exec_ops_t rdl_exec_quorum = {
    .name = "quorum",
    .caps = RDL_EXEC_VOTE_ONE | RDL_EXEC_GRANTS_UNDONE | RDL_EXEC_DEAD_OWNER | RDL_EXEC_RELEASE_TO_EXPIRY |
            RDL_EXEC_COPIES | RDL_EXEC_DRIFT,
    .acquire = quorum_acquire,
    .release = rdl_quorum_release,
    .step = rdl_prim_quorum_script,
    .script = quorum_script,
    .script_on = quorum_script_on,
    .each = quorum_each,
    .renew = quorum_renew,
};
