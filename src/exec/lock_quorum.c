/* lock_quorum.c - the lock's acquire and release on a Redlock quorum; see
 * lock_quorum.h.
 *
 * Every master runs the same acquire.lua as a single server does, so each
 * keeps the whole lock state of the name (holders, writers' queue marks,
 * robust marker, fencing counter); what this file adds is the vote:
 *
 *  - granted: a majority of the masters that vote (topology_redlock.c:
 *    not restarted within restart_delay_ms) granted this very call, and
 *    the time since the first request went out leaves some of the lease
 *    after the drift allowance.  EOWNERDEAD if any granting master found
 *    the last exclusive hold ended uncleanly (every later majority meets
 *    a master that still has that hold's robust marker).
 *  - fencing: each master's counter is its own.  The token is the
 *    highest that the granting masters gave, and it is written back
 *    (fence.lua) to the masters whose counters are lower until a
 *    majority holds a counter at least that high: every later majority
 *    includes one of them, whose next token is higher.  While the
 *    masters have seen the same grants (the usual case) their counters
 *    agree and nothing is written back: one round trip.
 *  - otherwise what was granted is given back at once, so a split vote
 *    does not keep the lock from everyone for a lease.
 *
 * Waiters queue on every master (their marks hold new readers back:
 * writer preference) but with claim 0: a release never hands the lock to
 * one of them (a grant on one master is no hold, and per-master FIFO
 * orders could differ and split the vote for good); it wakes them and
 * they vote again. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fmt.h"
#include "base/lease.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "client/clock.h"
#include "exec/call.h"
#include "exec/lock_quorum.h"
#include "proto/script.h"
#include "topology/quorum.h"

/* release.lua's arguments: keys (an undo passes acquire.lua's, one more),
 * owner, op, call, arg4, arg5. */
#define ARG_MAX (RDL_LOCK_NKEYS_CALL + 6)
#define KEY_FENCE 4 /* the fencing counter among the lock's keys (lock.c) */

/* release.lua on the masters in `which` (op, arg4 per master: arg4[k] may
 * be NULL), once; answers into q (free with rdl_quorum_free). */
static int release_on(rdlock_client_t *c, const char *const *keys, const size_t *klens, int nkeys,
                      const char *owner, const char *op, const char *call, const char *const *arg4,
                      const char *arg5, const bool *which, bool force, rdl_qcall_t *q)
{
    const char *v[RDL_REDLOCK_MAX][ARG_MAX];
    size_t l[RDL_REDLOCK_MAX][ARG_MAX];
    int n = rdl_redlock_count(c), argc = 0;

    memset(q, 0, sizeof *q);
    if (nkeys + 5 > ARG_MAX)
        return EINVAL; /* more keys than the argument rows hold */
    q->script = c->scripts->release;
    q->nkeys = nkeys;
    for (int k = 0; k < n; k++) {
        argc = 0;
        for (int i = 0; i < nkeys; i++) {
            v[k][argc] = keys[i];
            l[k][argc++] = klens[i];
        }
        v[k][argc] = owner;
        l[k][argc++] = strlen(owner);
        v[k][argc] = op;
        l[k][argc++] = strlen(op);
        v[k][argc] = call;
        l[k][argc++] = strlen(call);
        if (arg4 != NULL && arg4[k] != NULL) {
            v[k][argc] = arg4[k];
            l[k][argc++] = strlen(arg4[k]);
            if (arg5 != NULL) {
                v[k][argc] = arg5;
                l[k][argc++] = strlen(arg5);
            }
        }
        q->argv[k] = v[k];
        q->lens[k] = l[k];
        q->skip[k] = !which[k];
    }
    /* Every master gets the same number of arguments or none at all. */
    q->argc = argc;
    q->force = force;
    return rdl_quorum_exchange(c, q);
}

/* Give back the grants of this call on the masters in `granted`:
 * exclusive ones undone ('aq': the robust marker each replaced comes
 * back), shared ones released.  What cannot be reached ends with its
 * lease. */
static void undo(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, const char *call,
                 char mode, const bool *granted, char prev[][RDL_WHO_MAX + 2])
{
    const char *arg4[RDL_REDLOCK_MAX];
    rdl_qcall_t q;
    int n = rdl_redlock_count(c), left = 0;
    char keep[24];
    bool any = false;

    keep[rdl_fmt_u64(keep, (unsigned long long)c->cfg.command_timeout_ms * 2 + 1000)] = '\0';
    for (int k = 0; k < n; k++) {
        arg4[k] = mode == 'x' ? prev[k] : keep;
        any |= granted[k];
    }
    if (!any)
        return;
    if (release_on(c, argv, lens, nkeys, argv[nkeys], mode == 'x' ? "aq" : "rs", call, arg4, NULL, granted, false, &q) != 0)
        return;
    for (int k = 0; k < n; k++)
        left += granted[k] && q.ans[k].rc != 0;
    rdl_quorum_free(&q);
    if (left > 0)
        rdl_log(RDLOCK_LOG_WARN, "%.*s: a grant without majority could not be given back on %d master%s: it ends "
                "with its lease there", (int)lens[0], argv[0], left, left == 1 ? "" : "s");
}

/* Write token back to the voting masters not in `has`, until `have` plus
 * their confirmations make a majority.  0, or EIO. */
static int fence_back(rdlock_client_t *c, const char *const *argv, const size_t *lens, uint64_t token,
                      const bool *has, int have)
{
    const char *v[2];
    size_t l[2];
    char tok[24];
    rdl_qcall_t q;
    int n = rdl_redlock_count(c), maj = rdl_redlock_majority(c);

    tok[rdl_fmt_u64(tok, token)] = '\0';
    v[0] = argv[KEY_FENCE];
    l[0] = lens[KEY_FENCE];
    v[1] = tok;
    l[1] = strlen(tok);
    rdl_quorum_init(c, &q, c->scripts->fence, 1, 2, v, l);
    for (int k = 0; k < n; k++)
        q.skip[k] = has[k];
    if (rdl_quorum_exchange(c, &q) != 0)
        return EIO;
    for (int k = 0; k < n; k++) {
        const redisReply *r = q.ans[k].r;
        if (!has[k] && q.ans[k].rc == 0 && q.ans[k].votes && r->type == REDIS_REPLY_INTEGER &&
            (uint64_t)r->integer >= token)
            have++;
    }
    rdl_quorum_free(&q);
    return have >= maj ? 0 : EIO;
}

#define CALL_NO_MAX 24 /* a call number's digits and NUL */

/* One acquire on the masters (rdl_quorum_acquire): the request, and what
 * each master said to it, tallied. */
typedef struct acq_vote {
    rdlock_client_t *c;
    const char *const *argv; /* the request: the lock's keys first */
    const size_t *lens;
    int nkeys;
    char mode;
    char call[CALL_NO_MAX];  /* its call number, for an undo */
    char prev[RDL_REDLOCK_MAX][RDL_WHO_MAX + 2]; /* the marker each grant replaced */
    bool granted[RDL_REDLOCK_MAX], known_fence[RDL_REDLOCK_MAX];
    uint64_t tok[RDL_REDLOCK_MAX], fence[RDL_REDLOCK_MAX];
    uint64_t top;            /* the highest token a voting master granted */
    uint64_t fmax;           /* the highest counter a busy master showed */
    int votes, answered, stale, ngranted;
    long long hint;          /* the shortest wait a busy master suggested */
    bool dead, notrec;       /* EOWNERDEAD, ENOTRECOVERABLE somewhere */
} acq_vote_t;

/* The call number of an acquire: the fourth field of the holder info in
 * its packed argument arg (len bytes), after
 * "<flags><lease>;<claim>;<stamp>;1;<pid>;<thread>;" with the stamp at
 * stamp_off; into call (CALL_NO_MAX bytes), "" if not found. */
static void call_number(const char *arg, size_t len, size_t stamp_off, char *call)
{
    /* "...;<stamp>;1;<pid>;<thread>;<call>;<host>" */
    const char *p = arg + stamp_off + RDL_STAMP_LEN + 1;
    size_t cl = 0;
    for (int f = 0; f < 3 && p != NULL; f++)
        if ((p = memchr(p, ';', len - (size_t)(p - arg))) != NULL)
            p++;
    while (p != NULL && cl < CALL_NO_MAX - 1 && p[cl] >= '0' && p[cl] <= '9')
        cl++;
    if (p != NULL)
        memcpy(call, p, cl);
    call[cl] = '\0';
}

/* Tally the masters' answers to the acquire q into v (the clock samples
 * they carry go to the client).  An error reply is logged (debug) and
 * counts as no answer. */
static void acquire_tally(acq_vote_t *v, const rdl_qcall_t *q)
{
    rdlock_client_t *c = v->c;
    int n = rdl_redlock_count(c);

    for (int k = 0; k < n; k++) {
        rdl_acquired_t ar;
        int r;
        v->prev[k][0] = '\0';
        if (q->ans[k].rc != 0)
            continue;
        if (q->ans[k].r->type == REDIS_REPLY_ERROR) {
            rdl_log(RDLOCK_LOG_DEBUG, "redlock master %s: %s", rdl_redlock_route(c, k), q->ans[k].r->str);
            continue;
        }
        r = rdl_reply_acquire(q->ans[k].r, &ar);
        if (ar.now > 0)
            rdl_client_clock(c, rdl_redlock_route(c, k), ar.now, q->ans[k].answer_at);
        if (r == EIO)
            continue;
        v->answered++;
        if (r == ESTALE) {
            v->stale++;
            continue;
        }
        if (r == ENOTRECOVERABLE) {
            v->notrec = true;
            continue;
        }
        if (r == 0 || r == EOWNERDEAD) {
            v->granted[k] = true;
            v->ngranted++;
            v->tok[k] = ar.token;
            memcpy(v->prev[k], ar.prev, sizeof ar.prev < sizeof v->prev[k] ? sizeof ar.prev : sizeof v->prev[k]);
            v->prev[k][sizeof v->prev[k] - 1] = '\0';
            v->dead |= r == EOWNERDEAD;
            if (q->ans[k].votes) {
                v->votes++;
                if (ar.token > v->top)
                    v->top = ar.token;
            }
        } else {
            v->known_fence[k] = true;
            v->fence[k] = ar.fence;
            if (ar.fence > v->fmax)
                v->fmax = ar.fence;
            if (ar.hint > 0 && (v->hint == 0 || ar.hint < v->hint))
                v->hint = ar.hint;
        }
    }
}

/* A majority of the voting masters granted the acquire q in time: its
 * token (v->top) is made known to a majority, written back where it is
 * not (fence_back).  0 or EOWNERDEAD (out->token, and out->prev for a
 * dead owner's marker); EIO (the token could not be made known to a
 * majority) or EBUSY (the time ran out meanwhile), the grants given back. */
static int acquire_won(acq_vote_t *v, const rdl_qcall_t *q, unsigned lease, rdl_acquired_t *out)
{
    rdlock_client_t *c = v->c;
    bool has[RDL_REDLOCK_MAX] = { false }, lag = false;
    int n = rdl_redlock_count(c), maj = rdl_redlock_majority(c), k, have = 0;

    /* Which masters' counters are at the token already (only what a
     * master said counts: granted or busy, not void or an error), and
     * whether an answering one lags. */
    for (k = 0; k < n; k++) {
        bool known = q->ans[k].rc == 0 && (v->granted[k] || v->known_fence[k]);
        has[k] = known && (v->granted[k] ? v->tok[k] : v->fence[k]) >= v->top;
        lag |= known && !has[k];
        if (has[k] && q->ans[k].votes)
            have++;
    }
    /* A lagging master that answered (it was away, or restarted without
     * its data) catches up now, so that it never helps a later majority
     * hand out a lower token; a round trip only then, or when fewer than
     * a majority have the token. */
    if ((have < maj || lag) && fence_back(c, v->argv, v->lens, v->top, has, have) != 0 && have < maj) {
        rdl_log(RDLOCK_LOG_WARN, "%.*s: fencing token %llu could not be made known to a majority: "
                "acquisition given back", (int)v->lens[0], v->argv[0], (unsigned long long)v->top);
        undo(c, v->argv, v->lens, v->nkeys, v->call, v->mode, v->granted, v->prev);
        return EIO;
    }
    if (have < maj && rdl_now_ms() - q->sent_at >= rdl_lease_quorum_validity(&c->cfg, lease)) {
        undo(c, v->argv, v->lens, v->nkeys, v->call, v->mode, v->granted, v->prev);
        return EBUSY;
    }
    out->token = v->top;
    /* The dead owner's marker, without the '?' of a hand-over with
     * EOWNERDEAD: masters that did not grant this hold may still have it
     * (their copy of the dead hold ran out a little later), and a clean
     * unlock clears it there too. */
    for (k = 0; v->dead && k < n; k++)
        if (v->granted[k] && v->prev[k][0] != '\0') {
            const char *m = v->prev[k][0] == '?' ? v->prev[k] + 1 : v->prev[k];
            snprintf(out->prev, sizeof out->prev, "%s", m);
            break;
        }
    return v->dead ? EOWNERDEAD : 0;
}

int rdl_quorum_acquire(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                       size_t stamp_off, unsigned lease, rdl_acquired_t *out, rdl_call_t *call)
{
    rdl_qcall_t q;
    acq_vote_t v;
    char *buf = NULL;
    int n = rdl_redlock_count(c), maj = rdl_redlock_majority(c), rc;
    long long now;

    memset(out, 0, sizeof *out);
    memset(&q, 0, sizeof q);
    q.script = c->scripts->acquire;
    q.nkeys = nkeys;
    q.argc = argc;
    if (rdl_quorum_argv(&q, n, argv, lens, argc, argc - 1, stamp_off, &buf) != 0)
        return ENOMEM;
    rc = rdl_quorum_exchange(c, &q);
    call->sent_at = q.sent_at;
    call->unsure_until = q.unsure_until;
    call->maybe_ran = q.unsure_until != 0;
    call->acked = -1;
    call->wanted = 0;
    if (rc != 0) {
        free(buf);
        return rc;
    }
    memset(&v, 0, sizeof v);
    v.c = c;
    v.argv = argv;
    v.lens = lens;
    v.nkeys = nkeys;
    v.mode = argv[argc - 1][0];
    acquire_tally(&v, &q);
    /* The call number, for an undo. */
    call_number(argv[argc - 1], lens[argc - 1], stamp_off, v.call);

    now = rdl_now_ms();
    if (!v.notrec && v.votes >= maj && now - q.sent_at < rdl_lease_quorum_validity(&c->cfg, lease)) {
        rc = acquire_won(&v, &q, lease, out);
    } else {
        /* No majority in time: what was granted goes back. */
        undo(c, argv, lens, nkeys, v.call, v.mode, v.granted, v.prev);
        if (v.notrec)
            rc = ENOTRECOVERABLE;
        else if (v.stale > 0 && v.answered - v.stale < maj)
            rc = ESTALE; /* our idea of some clocks was off: at once again */
        else if (v.answered >= maj)
            rc = EBUSY;
        else
            rc = q.denied ? EACCES : EIO;
    }
    if (rc == EBUSY) {
        /* A split vote (some granted): look again soon, after jitter. */
        out->hint = v.ngranted > 0 ? 1 : v.hint;
        out->fence = v.fmax > v.top ? v.fmax : v.top;
        out->first = false;
    }
    if (rc == EIO)
        rdl_log(RDLOCK_LOG_DEBUG, "%.*s: %d of %d redlock masters answered", (int)lens[0], argv[0], v.answered, n);
    rdl_quorum_free(&q);
    free(buf);
    return rc;
}

/* One release or unwait on the masters (rdl_quorum_release): the request,
 * and what the masters said to it over its attempts. */
typedef struct rel_vote {
    rdlock_client_t *c;
    const char *const *argv; /* keys, owner, op, call, [arg4, [arg5]] */
    const size_t *lens;
    int nkeys, argc;
    const char *op, *call;
    const char *arg4[RDL_REDLOCK_MAX];
    bool which[RDL_REDLOCK_MAX];   /* not answered yet: asked again */
    bool mine[RDL_REDLOCK_MAX];    /* unwait: the lock was given to this call there */
    long long st[RDL_REDLOCK_MAX]; /* release.lua's status on each, -1 no answer yet */
    int ok, gone, noans;           /* released, did not have it, no answer */
    bool woke, denied;             /* some woke waiters; some refused us */
} rel_vote_t;

/* One attempt: release.lua on the masters that have not answered (with
 * force, even those in their backoff), their answers into v, then the
 * counts.  *sent_at: when the first attempt went out; *ambiguous: an
 * attempt got no answer (it may have acted).  0, or ENOMEM. */
static int release_round(rel_vote_t *v, bool force, long long *sent_at, bool *ambiguous)
{
    rdl_qcall_t q;
    int n = rdl_redlock_count(v->c), k;

    if (release_on(v->c, v->argv, v->lens, v->nkeys, v->argv[v->nkeys], v->op, v->call, v->arg4,
                   v->argc > v->nkeys + 4 ? v->argv[v->nkeys + 4] : NULL, v->which, force, &q) != 0)
        return ENOMEM;
    if (*sent_at < 0)
        *sent_at = q.sent_at;
    v->denied |= q.denied;
    for (k = 0; k < n; k++) {
        rdl_released_t rr;
        if (!v->which[k])
            continue;
        if (q.ans[k].rc == EIO)
            *ambiguous = true; /* sent: it may have acted */
        if (q.ans[k].rc != 0 || q.ans[k].r->type == REDIS_REPLY_ERROR || rdl_reply_release(q.ans[k].r, &rr) != 0)
            continue;
        v->which[k] = false;
        /* A master that does not vote yet (restarted within the restart
         * delay) could not have given the lock to anyone else: it counts
         * for the hold, as in the renewals (watchdog.c). */
        v->st[k] = q.ans[k].votes || v->op[0] != 'r' ? rr.status : 1;
        v->woke |= rr.kind != 0;
        v->mine[k] = rr.status == 2;
    }
    rdl_quorum_free(&q);
    v->ok = v->gone = v->noans = 0;
    for (k = 0; k < n; k++) {
        if (v->st[k] < 0)
            v->noans++;
        else if (v->st[k] == 1 || v->st[k] == 3)
            v->ok++;
        else
            v->gone++;
    }
    return 0;
}

/* An unwait found the lock given to this call on some masters after all
 * (a hand-over, or a grant whose answer got lost): on a quorum that is no
 * hold, so it goes back now ('rx': the server's mode decides how).  What
 * cannot be reached ends with its lease. */
static void release_given_back(rel_vote_t *v)
{
    rdlock_client_t *c = v->c;
    int n = rdl_redlock_count(c), k;
    bool any = false;

    for (k = 0; k < n; k++)
        any |= v->mine[k];
    if (any) {
        char keep[24];
        const char *a4[RDL_REDLOCK_MAX];
        rdl_qcall_t q;
        keep[rdl_fmt_u64(keep, 1000)] = '\0';
        for (k = 0; k < n; k++)
            a4[k] = keep;
        if (release_on(c, v->argv, v->lens, v->nkeys, v->argv[v->nkeys], "rx", v->call, a4, NULL, v->mine, false,
                       &q) == 0) {
            for (k = 0; k < n; k++) {
                rdl_released_t rr;
                if (v->mine[k] && q.ans[k].rc == 0 && q.ans[k].r->type != REDIS_REPLY_ERROR &&
                    rdl_reply_release(q.ans[k].r, &rr) == 0)
                    v->woke |= rr.kind != 0;
            }
            rdl_quorum_free(&q);
        }
    }
}

int rdl_quorum_release(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                       long long until, rdl_released_t *out, long long *sent_at, bool *ambiguous)
{
    rel_vote_t v;
    int n = rdl_redlock_count(c), maj = rdl_redlock_majority(c), k, attempt;

    memset(out, 0, sizeof *out);
    *ambiguous = false;
    *sent_at = -1;
    memset(&v, 0, sizeof v);
    v.c = c;
    v.argv = argv;
    v.lens = lens;
    v.nkeys = nkeys;
    v.argc = argc;
    v.op = argv[nkeys + 1];
    v.call = argv[nkeys + 2];
    for (k = 0; k < n; k++) {
        v.which[k] = true;
        v.st[k] = -1;
        v.arg4[k] = argc > nkeys + 3 ? argv[nkeys + 3] : NULL;
    }
    for (attempt = 0;; attempt++) {
        long long pause;
        /* A retry asks the masters that did not answer even in their
         * backoff: the unlock's outcome depends on them. */
        if (release_round(&v, attempt > 0, sent_at, ambiguous) != 0)
            return ENOMEM;
        if (v.op[0] != 'r' || v.ok >= maj || v.ok + v.noans < maj)
            break;
        pause = 20LL << (attempt < 5 ? attempt : 5);
        /* Released on some masters already: a fresh unlock could not count
         * those (their proof of this release lasts only until another
         * owner's release replaces it), and would report a hold lost that
         * was released in time. */
        if (attempt >= c->cfg.command_retries && (v.ok == 0 || until < 0 || rdl_now_ms() + pause >= until))
            break;
        rdl_sleep_ms(pause);
    }
    if (v.op[0] == 'u') {
        release_given_back(&v);
        out->status = 0;
        out->kind = v.woke ? 2 : 0;
        return v.noans > n - maj ? EIO : 0;
    }
    out->kind = v.woke ? 2 : 0;
    if (v.ok < maj)
        rdl_log(RDLOCK_LOG_DEBUG, "%.*s: release %s: %d of %d masters released it, %d did not have it, %d did not "
                "answer (%d attempts)", (int)lens[0], argv[0], v.call, v.ok, n, v.gone, v.noans, attempt + 1);
    if (v.ok >= maj)
        out->status = 1;
    else if (v.ok + v.noans < maj)
        out->status = 0;
    else
        return v.denied ? EACCES : EIO;
    return 0;
}
