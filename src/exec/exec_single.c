/* exec_single.c - the steps on a topology where one server serves a name
 * (single, Sentinel, Cluster): each is one script call (exec.h). */
#include "rdl_build.h"

#include <errno.h>

#include "base/log.h"
#include "client/clock.h"
#include "exec/exec.h"
#include "topology/topology.h"

static int single_acquire(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                          unsigned lease_ms, long long deadline, rdl_acquired_t *out, rdl_call_t *call)
{
    redisReply *r;
    int rc;
    (void)lease_ms; /* the server keeps it; one server's clock needs no drift allowance */
    if ((rc = rdl_client_script(c, c->scripts->acquire, nkeys, argc, argv, lens, deadline, &r, call)) != 0)
        return rc;
    rc = rdl_reply_acquire(r, out);
    freeReplyObject(r);
    /* Every answer carries the server's clock: a void one is sent again
     * with this fresher sample. */
    rdl_client_clock(c, call->route, out->now, call->answer_at);
    return rc;
}

static int single_release(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                          long long deadline, rdl_released_t *out, long long *sent_at, bool *ambiguous)
{
    rdl_call_t call = { 0 };
    redisReply *r;
    int rc = rdl_client_script(c, c->scripts->release, nkeys, argc, argv, lens, deadline, &r, &call);
    if (rc != 0)
        return rc;
    rc = rdl_reply_release(r, out);
    freeReplyObject(r);
    *sent_at = call.sent_at;
    *ambiguous = call.maybe_ran;
    return rc;
}

static int single_step(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc, const char *const *argv,
                       const size_t *lens, int stamp_arg, int hkey, long long deadline, redisReply **reply,
                       rdl_call_t *call)
{
    (void)stamp_arg; /* call->stamp points into it already */
    (void)hkey;
    return rdl_client_script(c, script, nkeys, argc, argv, lens, deadline, reply, call);
}

static int single_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, const char *const *keys,
                         const size_t *lens, redisReply **reply)
{
    return rdl_client_script(c, script, nkeys, nkeys, keys, lens, -1, reply, NULL);
}

static int single_script_on(rdlock_client_t *c, const rdl_script_t *script, int nkeys, const char *const *keys,
                            const size_t *lens, unsigned server, char *where, size_t n, redisReply **reply)
{
    if (server != 0)
        return EINVAL;
    rdl_topology_where(&c->cfg, where, n);
    return single_script(c, script, nkeys, keys, lens, reply);
}

static int single_each(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc, const char *const *argv,
                       const size_t *lens, bool (*use)(int server, const redisReply *r, void *arg), void *arg,
                       const char *what, const char *name)
{
    redisReply *r;
    bool ok;
    int rc = rdl_client_script(c, script, nkeys, argc, argv, lens, -1, &r, NULL);
    if (rc != 0)
        return rc;
    ok = use(0, r, arg);
    freeReplyObject(r);
    if (!ok) {
        rdl_log(RDLOCK_LOG_ERROR, "%s %s: unexpected reply from the server", what, name);
        return EIO;
    }
    return 0;
}

const rdl_exec_ops_t rdl_exec_single = {
    .name = "single",
    .caps = RDL_EXEC_HANDOVER,
    .acquire = single_acquire,
    .release = single_release,
    .step = single_step,
    .script = single_script,
    .script_on = single_script_on,
    .each = single_each,
};
