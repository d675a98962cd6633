/* prim_quorum.c - a primitive's step on a Redlock quorum; see
 * prim_quorum.h for the protocol and pstep.lua for the keys. */
#include "rdl_build.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fmt.h"
#include "base/lease.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "client/clock.h"
#include "client/pool.h"
#include "exec/call.h"
#include "exec/prim_quorum.h"
#include "proto/reply.h"
#include "topology/quorum.h"

#define META 3                      /* P:Qx, P:Qc, P:Qm */
#define KEYS_MAX 8                  /* the primitive's keys (sem: 5, cond: 5, barrier: 3) */
#define WRITE_ARGS (META + KEYS_MAX + 4 + 2 * (KEYS_MAX + 1))
#define VOIDS_MAX 3                 /* void answers in a row for an unstamped caller */
#define NOSCRIPT_MAX 3              /* script cache reloads within one step */

/* Step tokens, unique per process; with the client id, unique. */
static unsigned long long step_seq;

typedef struct step {
    rdlock_client_t *c;
    int n, maj;
    int nkeys;                  /* the primitive's keys, op record last */
    int hkey;                   /* the holder hash among them, -1 none */
    const char *const *argv;
    const size_t *lens;
    char *mbuf;                 /* the meta keys */
    const char *mk[META];
    size_t ml[META];
    char token[RDL_ID_HEX + 24];
    char px[16];
    unsigned px_ms;
    bool granted[RDL_REDLOCK_MAX];
} step_t;

static long long int_of(const redisReply *r)
{
    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING && r->len < 21)
        return strtoll(r->str, NULL, 10);
    return -1;
}

/* pstep.lua op on the masters in `which` (NULL: every one), with the meta
 * keys, then `extra` keys, then op and args; answers in q. */
static int meta_round(step_t *s, const char *op, const char *const *extra, const size_t *extral, int nextra,
                      const char *const *args, const size_t *argl, int nargs, const bool *which, rdl_qcall_t *q)
{
    const char *v[WRITE_ARGS];
    size_t l[WRITE_ARGS];
    int i, a = 0;

    for (i = 0; i < META; i++) {
        v[a] = s->mk[i];
        l[a++] = s->ml[i];
    }
    for (i = 0; i < nextra; i++) {
        v[a] = extra[i];
        l[a++] = extral[i];
    }
    v[a] = op;
    l[a++] = strlen(op);
    for (i = 0; i < nargs; i++) {
        v[a] = args[i];
        l[a++] = argl[i];
    }
    rdl_quorum_init(s->c, q, s->c->scripts->pstep, META + nextra, a, v, l);
    for (i = 0; i < s->n && which != NULL; i++)
        q->skip[i] = !which[i];
    return rdl_quorum_exchange(s->c, q);
}

/* Give the mutex back where it was granted ('e'); what cannot be reached
 * ends with its lease. */
static void step_end(step_t *s)
{
    const char *args[1] = { s->token };
    size_t argl[1] = { strlen(s->token) };
    rdl_qcall_t q;
    bool any = false;
    for (int k = 0; k < s->n; k++)
        any |= s->granted[k];
    if (!any || meta_round(s, "e", NULL, NULL, 0, args, argl, 1, s->granted, &q) != 0)
        return;
    rdl_quorum_free(&q);
    memset(s->granted, 0, sizeof s->granted);
}

/* Raise the step counter to top on the counting masters below it, until
 * `have` and their confirmations make a majority.  0 or EIO. */
static int fence_back(step_t *s, uint64_t top, const bool *has, const bool *member, int have)
{
    const char *v[2];
    size_t l[2];
    char tok[24];
    rdl_qcall_t q;

    tok[rdl_fmt_u64(tok, top)] = '\0';
    v[0] = s->mk[1];
    l[0] = s->ml[1];
    v[1] = tok;
    l[1] = strlen(tok);
    rdl_quorum_init(s->c, &q, s->c->scripts->fence, 1, 2, v, l);
    for (int k = 0; k < s->n; k++)
        q.skip[k] = has[k] || !member[k];
    if (rdl_quorum_exchange(s->c, &q) != 0)
        return EIO;
    for (int k = 0; k < s->n; k++)
        if (!q.skip[k] && q.ans[k].rc == 0 && q.ans[k].votes && q.ans[k].r->type == REDIS_REPLY_INTEGER &&
            (uint64_t)q.ans[k].r->integer >= top)
            have++;
    rdl_quorum_free(&q);
    return have >= s->maj ? 0 : EIO;
}

/* A lease record "<deadline>;<rest>": its deadline, and where rest starts. */
static long long rec_split(const redisReply *e, size_t *rest)
{
    long long d = 0;
    size_t i = 0;
    if (e == NULL || e->type != REDIS_REPLY_STRING)
        return -1;
    while (i < e->len && e->str[i] >= '0' && e->str[i] <= '9' && i < 18)
        d = d * 10 + (e->str[i++] - '0');
    if (i == 0 || i >= e->len || e->str[i] != ';')
        return -1;
    *rest = i;
    return d;
}

/* A holder hash's (field, entry), sorted by field for bsearch. */
typedef struct fe {
    const redisReply *f, *e;
} fe_t;

static int field_cmp(const void *x, const void *y)
{
    const redisReply *a = ((const fe_t *)x)->f, *b = ((const fe_t *)y)->f;
    int c = memcmp(a->str, b->str, a->len < b->len ? a->len : b->len);
    return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/* The sync's (field, entry) pairs for the leader's holder hash, from the
 * other granting masters' copies:
 *  - a record the leader has, with the same rest (the same hold), that
 *    another master saw renewed later: the later deadline;
 *  - a record the leader lacks that a master with the same (newest)
 *    version has: no step removed it (a step would have removed it on
 *    every master it wrote), so the leader lost it on its own (its copy
 *    ran out while it was away from the renewals): it comes back, if its
 *    deadline has not passed (pstep.lua checks).
 * Pointers into the answers of q; *np strings (pairs). */
static int merges(step_t *s, const rdl_qcall_t *q, int leader, uint64_t vmax, const char ***pv, size_t **pl,
                  int *np)
{
    const redisReply *lh = q->ans[leader].r->element[3];
    size_t nf = lh->elements / 2, cap = 0, m = 0, i, j;
    fe_t *lf = NULL;
    const redisReply **best = NULL, **xf = NULL, **xe = NULL;
    size_t nx = 0;
    static const redisReply empty = { .type = REDIS_REPLY_NIL, .str = (char *)"", .len = 0 };
    const char **v = NULL;
    size_t *l = NULL;
    int k, rc = ENOMEM;

    *np = 0;
    *pv = NULL;
    *pl = NULL;
    for (k = 0; k < s->n; k++)
        if (k != leader && s->granted[k] && q->ans[k].rc == 0)
            cap += q->ans[k].r->element[3]->elements / 2;
    if (cap == 0)
        return 0;
    if ((nf > 0 && ((lf = malloc(nf * sizeof *lf)) == NULL || (best = malloc(nf * sizeof *best)) == NULL)) ||
        (xf = malloc(cap * sizeof *xf)) == NULL || (xe = malloc(cap * sizeof *xe)) == NULL)
        goto out;
    for (i = 0; i < nf; i++) {
        lf[i].f = lh->element[2 * i];
        lf[i].e = lh->element[2 * i + 1];
        if (lf[i].f->type != REDIS_REPLY_STRING)
            lf[i].f = &empty; /* never matches a field */
    }
    if (nf > 1)
        qsort(lf, nf, sizeof *lf, field_cmp);
    for (i = 0; i < nf; i++)
        best[i] = lf[i].e;
    for (k = 0; k < s->n; k++) {
        const redisReply *h;
        bool newest;
        if (k == leader || !s->granted[k] || q->ans[k].rc != 0)
            continue;
        h = q->ans[k].r->element[3];
        newest = (uint64_t)int_of(q->ans[k].r->element[2]) == vmax;
        for (j = 0; j + 1 < h->elements; j += 2) {
            const redisReply *f = h->element[j], *e = h->element[j + 1];
            fe_t key = { f, e }, *hit;
            size_t rest, brest;
            long long d, bd;
            if (f->type != REDIS_REPLY_STRING || (d = rec_split(e, &rest)) < 0)
                continue;
            hit = nf > 0 ? bsearch(&key, lf, nf, sizeof *lf, field_cmp) : NULL;
            if (hit != NULL) {
                size_t at = (size_t)(hit - lf);
                bd = rec_split(best[at], &brest);
                if (bd >= 0 && d > bd && e->len - rest == best[at]->len - brest &&
                    memcmp(e->str + rest, best[at]->str + brest, e->len - rest) == 0)
                    best[at] = e;
                continue;
            }
            if (!newest)
                continue;
            for (i = 0; i < nx; i++)
                if (xf[i]->len == f->len && memcmp(xf[i]->str, f->str, f->len) == 0)
                    break;
            if (i == nx) {
                xf[nx] = f;
                xe[nx++] = e;
            } else if (rec_split(xe[i], &brest) < d) {
                xe[i] = e;
            }
        }
    }
    if ((v = malloc(2 * (nf + nx) * sizeof *v)) == NULL || (l = malloc(2 * (nf + nx) * sizeof *l)) == NULL) {
        free(v);
        v = NULL;
        goto out;
    }
    for (i = 0; i < nf; i++) {
        if (best[i] == lf[i].e)
            continue;
        v[m] = lf[i].f->str;
        l[m++] = lf[i].f->len;
        v[m] = best[i]->str;
        l[m++] = best[i]->len;
    }
    for (i = 0; i < nx; i++) {
        v[m] = xf[i]->str;
        l[m++] = xf[i]->len;
        v[m] = xe[i]->str;
        l[m++] = xe[i]->len;
    }
    *pv = v;
    *pl = l;
    *np = (int)m;
    rc = 0;
out:
    free(lf);
    free(best);
    free(xf);
    free(xe);
    return rc;
}

/* Is r the answer of a granting 'b'? */
static bool begin_granted(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 5 && int_of(r->element[0]) == 1 &&
           r->element[3]->type == REDIS_REPLY_ARRAY;
}

/* Read MULTI's, three QUEUEDs and EXEC's answers: the three results,
 * taken out of EXEC's array.  0, or EIO (no answer, or the transaction
 * did not run: then nothing ran). */
static int exec_read(rdl_conn_t *conn, redisReply **a, redisReply **b, redisReply **d)
{
    redisReply *r = NULL, *ex = NULL;
    int i, bad = 0;
    for (i = 0; i < 4; i++) {
        if (rdl_conn_read(conn, &r) != 0)
            return EIO;
        bad |= r->type == REDIS_REPLY_ERROR; /* refused when queued */
        freeReplyObject(r);
    }
    if (rdl_conn_read(conn, &ex) != 0)
        return EIO;
    if (bad || ex->type != REDIS_REPLY_ARRAY || ex->elements != 3) {
        freeReplyObject(ex);
        return EIO;
    }
    *a = ex->element[0];
    *b = ex->element[1];
    *d = ex->element[2];
    for (i = 0; i < 3; i++)
        ex->element[i] = NULL; /* freeReplyObject skips NULL elements */
    freeReplyObject(ex);
    return 0;
}

/* The leader's round trip of a step (leader_round): what it sends, and
 * what comes back. */
typedef struct lead {
    int leader;                 /* the master */
    const rdl_script_t *script; /* the primitive's script: its keys are the step's */
    int argc, stamp_arg;        /* its arguments (the step's argv), the stamped one */
    long long valid_until;      /* of the step mutex */
    const char **mv;            /* the merged holder fields (merges): nm strings */
    size_t *ml;
    int nm;
    long long sent, answered;   /* out: when sent, when answered */
    char route[RDL_ROUTE_MAX];  /* out: the leader's route */
    redisReply *op, *dump;      /* out: the script's answer, the dump */
} lead_t;

/* The arguments of a step's transaction (leader_round): sync, the
 * primitive's script (stamped), dump. */
typedef struct lead_args {
    const char **sv, **ov, *dv[META + KEYS_MAX + 4];
    size_t *sl, *ol, dl[META + KEYS_MAX + 4];
    int nsync, ndump;
    char stamp[RDL_STAMP_LEN], keep[24], hk[12];
} lead_args_t;

/* The sync's arguments (meta keys, the primitive's keys (op record last),
 * 's', token, owner (the op record key's tail is enough: it is unique per
 * owner), holder hash index, pairs), and the script's, stamp not yet
 * set, into a: 0, or ENOMEM.  a's arrays are freed by lead_args_free,
 * whatever this returns. */
static int lead_args_make(const step_t *s, const lead_t *l, lead_args_t *a)
{
    int i, n = 0;

    a->nsync = META + s->nkeys + 4 + l->nm;
    a->ndump = META + s->nkeys + 4;
    a->sv = malloc((size_t)a->nsync * sizeof *a->sv);
    a->sl = malloc((size_t)a->nsync * sizeof *a->sl);
    a->ov = malloc((size_t)l->argc * sizeof *a->ov);
    a->ol = malloc((size_t)l->argc * sizeof *a->ol);
    if (a->sv == NULL || a->sl == NULL || a->ov == NULL || a->ol == NULL)
        return ENOMEM;
    for (i = 0; i < META; i++) {
        a->sv[n] = s->mk[i];
        a->sl[n++] = s->ml[i];
    }
    for (i = 0; i < s->nkeys; i++) {
        a->sv[n] = s->argv[i];
        a->sl[n++] = s->lens[i];
    }
    a->sv[n] = "s";
    a->sl[n++] = 1;
    a->sv[n] = s->token;
    a->sl[n++] = strlen(s->token);
    a->sv[n] = s->argv[s->nkeys - 1];
    a->sl[n++] = s->lens[s->nkeys - 1];
    a->hk[rdl_fmt_u64(a->hk, (unsigned long long)(l->nm > 0 ? META + 1 + s->hkey : 0))] = '\0';
    a->sv[n] = a->hk;
    a->sl[n++] = strlen(a->hk);
    for (i = 0; i < l->nm; i++) {
        a->sv[n] = l->mv[i];
        a->sl[n++] = l->ml[i];
    }
    memcpy(a->ov, s->argv, (size_t)l->argc * sizeof *a->ov);
    memcpy(a->ol, s->lens, (size_t)l->argc * sizeof *a->ol);
    return 0;
}

static void lead_args_free(lead_args_t *a)
{
    free(a->sv);
    free(a->sl);
    free(a->ov);
    free(a->ol);
}

/* The script, stamped: void after its own timeout, and after the mutex's
 * validity, whichever comes first (l->sent: now).  0, or ENOTCONN: not to
 * be sent (the validity is over, or the master's clock is not known: no
 * safe stamp). */
static int lead_stamp(rdlock_client_t *c, rdl_conn_t *conn, lead_t *l, lead_args_t *a)
{
    char late[RDL_STAMP_LEN];

    l->sent = rdl_now_ms();
    if (l->sent >= l->valid_until)
        return ENOTCONN;
    rdl_client_stamp(c, conn->route, a->stamp, l->sent);
    rdl_client_stamp(c, conn->route, late, l->valid_until - c->cfg.command_timeout_ms);
    if (memcmp(late, a->stamp, RDL_STAMP_LEN) < 0)
        memcpy(a->stamp, late, RDL_STAMP_LEN);
    if (memcmp(a->stamp, "000000000000000", RDL_STAMP_LEN) == 0)
        return ENOTCONN; /* the master's clock is not known: no safe stamp */
    a->ov[l->stamp_arg] = a->stamp;
    a->ol[l->stamp_arg] = RDL_STAMP_LEN;
    return 0;
}

/* The dump's arguments: meta keys, the primitive's keys (the sync's), 'd',
 * token, owner, keep. */
static void lead_dump_args(const step_t *s, lead_args_t *a)
{
    int n = META + s->nkeys;

    a->keep[rdl_fmt_u64(a->keep, (unsigned long long)s->c->cfg.command_timeout_ms * 2 + 1000)] = '\0';
    memcpy(a->dv, a->sv, (size_t)(META + s->nkeys) * sizeof *a->dv);
    memcpy(a->dl, a->sl, (size_t)(META + s->nkeys) * sizeof *a->dl);
    a->dv[n] = "d";
    a->dl[n++] = 1;
    a->dv[n] = s->token;
    a->dl[n++] = strlen(s->token);
    a->dv[n] = s->argv[s->nkeys - 1];
    a->dl[n++] = s->lens[s->nkeys - 1];
    a->dv[n] = a->keep;
    a->dl[n++] = strlen(a->keep);
}

/* In one transaction: the script runs only with the sync before it and
 * the dump after it, or not at all (a connection lost halfway through the
 * pipeline runs nothing: no EXEC).  conn is given back (or closed).  0
 * (l->op, l->dump, l->answered), EAGAIN (a script was missing from the
 * master's cache: loaded now; the script may have acted), EIO (no answer:
 * it may have acted; or an unexpected answer, logged). */
static int lead_exchange(const step_t *s, lead_t *l, rdl_conn_t *conn, const lead_args_t *a)
{
    rdlock_client_t *c = s->c;
    redisReply *rs = NULL;
    rdl_nosigpipe_t st;
    int rc;

    rdl_nosigpipe_enter(&st);
    if (redisAppendCommand(conn->ctx, "MULTI") != REDIS_OK ||
        rdl_conn_append_script(conn, c->scripts->pstep, META + s->nkeys, a->nsync, a->sv, a->sl) != 0 ||
        rdl_conn_append_script(conn, l->script, s->nkeys, l->argc, a->ov, a->ol) != 0 ||
        rdl_conn_append_script(conn, c->scripts->pstep, META + s->nkeys, a->ndump, a->dv, a->dl) != 0 ||
        redisAppendCommand(conn->ctx, "EXEC") != REDIS_OK || exec_read(conn, &rs, &l->op, &l->dump) != 0) {
        rdl_nosigpipe_leave(&st);
        rdl_conn_close(conn);
        rdl_redlock_result(c, l->leader, false);
        return EIO;
    }
    l->answered = rdl_now_ms();
    if (rdl_reply_noscript(rs) || rdl_reply_noscript(l->op) || rdl_reply_noscript(l->dump)) {
        if (rdl_reply_noscript(rs) && !rdl_reply_noscript(l->op))
            rdl_log(RDLOCK_LOG_WARN, "%.*s: a master lost its scripts within a step; the step is tried again",
                    (int)s->lens[0], s->argv[0]);
        rc = rdl_conn_load(conn, c->scripts->pstep) == 0 && rdl_conn_load(conn, l->script) == 0 ? EAGAIN : EIO;
    } else if (rs->type != REDIS_REPLY_ARRAY || l->dump->type != REDIS_REPLY_ARRAY || l->dump->elements < 1) {
        rdl_log(RDLOCK_LOG_ERROR, "%.*s: unexpected answer of master %s to a step: %s", (int)s->lens[0],
                s->argv[0], conn->route, rs->type == REDIS_REPLY_ERROR ? rs->str
                : l->dump->type == REDIS_REPLY_ERROR ? l->dump->str : "not an array");
        rc = EIO;
    } else {
        rc = 0;
    }
    rdl_nosigpipe_leave(&st);
    if (rdl_conn_ok(conn))
        rdl_client_conn_put(c, conn);
    else
        rdl_conn_close(conn);
    if (rs != NULL)
        freeReplyObject(rs);
    return rc;
}

/* The leader's round trip: sync, the script, dump, pipelined.  0 and the
 * answers (l->op, l->dump), ENOTCONN (not sent: no connection, the
 * master's clock unknown, or the step mutex's validity over), EAGAIN (a
 * script was missing from the master's cache: loaded now, the step is
 * tried again; the script may have acted), EIO (no answer: it may have
 * acted), EACCES, ENOMEM.  l->sent: when sent. */
static int leader_round(step_t *s, lead_t *l)
{
    lead_args_t a = { 0 };
    rdl_conn_t *conn;
    int rc;

    l->op = l->dump = NULL;
    if ((rc = rdl_quorum_conn(s->c, l->leader, &conn)) != 0)
        return rc == EACCES || rc == ENOMEM ? rc : ENOTCONN;
    snprintf(l->route, sizeof l->route, "%s", conn->route);
    if ((rc = lead_args_make(s, l, &a)) == 0 && (rc = lead_stamp(s->c, conn, l, &a)) == 0) {
        lead_dump_args(s, &a);
        rc = lead_exchange(s, l, conn, &a);
        conn = NULL;
    }
    if (conn != NULL)
        rdl_client_conn_put(s->c, conn);
    if (rc != 0) {
        if (l->op != NULL)
            freeReplyObject(l->op);
        if (l->dump != NULL)
            freeReplyObject(l->dump);
        l->op = l->dump = NULL;
    }
    lead_args_free(&a);
    return rc;
}

/* Write the leader's dump to every granting master as version top.
 * Returns how many voting masters took it. */
static int write_round(step_t *s, uint64_t top, const redisReply *dump)
{
    const char *v[WRITE_ARGS];
    size_t l[WRITE_ARGS];
    char ver[24], hk[12], ttl[KEYS_MAX + 1][24];
    rdl_qcall_t q;
    int a = 0, i, ok = 0, nstate = s->nkeys - 1;

    if ((int)dump->elements != 1 + 2 * (nstate + 1))
        return 0;
    for (i = 0; i < nstate; i++) {
        v[a] = s->argv[i];
        l[a++] = s->lens[i];
    }
    ver[rdl_fmt_u64(ver, top)] = '\0';
    hk[rdl_fmt_u64(hk, (unsigned long long)(s->hkey + 1))] = '\0'; /* 0: none */
    v[a] = s->token;
    l[a++] = strlen(s->token);
    v[a] = ver;
    l[a++] = strlen(ver);
    v[a] = hk;
    l[a++] = strlen(hk);
    for (i = 0; i <= nstate; i++) {
        const redisReply *p = dump->element[1 + 2 * i], *t = dump->element[2 + 2 * i];
        long long ms = int_of(t);
        if (p->type == REDIS_REPLY_STRING) {
            v[a] = p->str;
            l[a++] = p->len;
        } else {
            v[a] = "";
            l[a++] = 0;
        }
        snprintf(ttl[i], sizeof ttl[i], "%lld", ms);
        v[a] = ttl[i];
        l[a++] = strlen(ttl[i]);
    }
    if (meta_round(s, "w", v, l, nstate, v + nstate, l + nstate, a - nstate, s->granted, &q) != 0)
        return 0;
    for (int k = 0; k < s->n; k++) {
        const redisReply *r = q.ans[k].r;
        if (!s->granted[k] || q.ans[k].rc != 0)
            continue;
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && int_of(r->element[0]) == 1) {
            s->granted[k] = false; /* the write ended the mutex there */
            if (q.ans[k].votes)
                ok++;
        }
    }
    rdl_quorum_free(&q);
    return ok;
}

/* The step may have acted and may yet be adopted by a later step (its
 * leader, or a minority, keeps its effect): the caller must settle it
 * with a step of its own (a withdrawal, sem.c's 'u'), which it does when
 * unsure_until is set; there is no later moment to wait for. */
static void unsure(rdl_call_t *call)
{
    long long now = rdl_now_ms();
    call->maybe_ran = true;
    if (call->unsure_until < now)
        call->unsure_until = now;
}

static int op_status(const redisReply *r)
{
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1)
        return (int)int_of(r->element[0]);
    return 0;
}

/* One rdl_prim_quorum_script call: the step's keys (s), the primitive's
 * script, and its bounds and counts across the steps it takes. */
typedef struct step_call {
    step_t s;
    const rdl_script_t *script;
    int argc, stamp_arg;      /* the script's arguments are s.argv, s.lens */
    rdl_call_t *call;
    bool stamped;             /* the caller asked for a stamp */
    long long deadline;       /* of the backoffs (-1 none) */
    long long budget_end;     /* of the whole call: its retries' time */
    int voids, reloads;       /* void answers, script cache reloads so far */
} step_call_t;

/* What the call does after a step (step_once). */
enum step_next {
    STEP_DONE,   /* return the step's code */
    STEP_AGAIN,  /* another step at once, or after a wait of its own */
    STEP_FAILED  /* another step after a backoff, if retries remain */
};

/* What the masters said to a step's begin ('b'). */
typedef struct begin_tally {
    uint64_t cnt[RDL_REDLOCK_MAX]; /* each granting master's step counter */
    bool member[RDL_REDLOCK_MAX];  /* the voting masters that granted */
    uint64_t top;                  /* the version: the highest counter of a member */
    int votes, answered;           /* members; voting masters that answered */
    bool busy;                     /* one said another step holds the mutex */
    bool anyhist;                  /* a member keeps its history */
    long long valid_until;         /* of the step mutex */
} begin_tally_t;

/* Set up sc for a call of script with the caller's keys (the op record
 * last) and arguments: the meta keys, the step mutex's lease, the budget.
 * 0, or ENOMEM. */
static int step_init(step_call_t *sc, rdlock_client_t *c, int nkeys, const char *const *argv, const size_t *lens,
                     int hkey)
{
    static const char *const sfx[META] = { ":Qx", ":Qc", ":Qm" };
    step_t *s = &sc->s;
    size_t pl = lens[0];

    memset(s, 0, sizeof *s);
    s->c = c;
    s->n = rdl_redlock_count(c);
    s->maj = rdl_redlock_majority(c);
    s->nkeys = nkeys;
    s->argv = argv;
    s->lens = lens;
    s->hkey = hkey;
    if ((s->mbuf = malloc(META * (pl + 4))) == NULL)
        return ENOMEM;
    for (int i = 0; i < META; i++) {
        char *m = s->mbuf + (size_t)i * (pl + 4);
        memcpy(m, argv[0], pl);
        memcpy(m + pl, sfx[i], 3);
        s->mk[i] = m;
        s->ml[i] = pl + 3;
    }
    /* The mutex outlives a step's three round trips with room; a holder
     * that died keeps the others out that long at most. */
    s->px_ms = c->cfg.command_timeout_ms * 2 < 200 ? 200 : (unsigned)c->cfg.command_timeout_ms * 2;
    s->px[rdl_fmt_u64(s->px, s->px_ms)] = '\0';
    sc->budget_end = rdl_now_ms() + (long long)c->cfg.command_timeout_ms * (c->cfg.command_retries + 1);
    return 0;
}

/* 1. begin: a new step token, the step mutex asked of every master ('b'),
 * and their answers into b (q keeps them: free with rdl_quorum_free).
 * 0, or ENOMEM. */
static int step_begin(step_t *s, rdl_qcall_t *q, begin_tally_t *b)
{
    rdlock_client_t *c = s->c;
    const char *bk[1], *args[2];
    size_t bkl[1], argl[2], n = strlen(c->id);
    int k;

    memset(b, 0, sizeof *b);
    memcpy(s->token, c->id, n);
    s->token[n++] = ':';
    s->token[n + rdl_fmt_u64(s->token + n, __atomic_add_fetch(&step_seq, 1, __ATOMIC_RELAXED))] = '\0';
    bk[0] = s->hkey >= 0 ? s->argv[s->hkey] : NULL;
    bkl[0] = s->hkey >= 0 ? s->lens[s->hkey] : 0;
    args[0] = s->token;
    argl[0] = strlen(s->token);
    args[1] = s->px;
    argl[1] = strlen(s->px);
    if (meta_round(s, "b", bk, bkl, s->hkey >= 0 ? 1 : 0, args, argl, 2, NULL, q) != 0)
        return ENOMEM;
    b->valid_until = q->sent_at + rdl_lease_quorum_validity(&c->cfg, s->px_ms);
    for (k = 0; k < s->n; k++) {
        const redisReply *r = q->ans[k].r;
        if (q->ans[k].rc != 0 || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
            continue;
        b->answered += q->ans[k].votes;
        if (!begin_granted(r)) {
            b->busy = true;
            continue;
        }
        s->granted[k] = true;
        b->cnt[k] = (uint64_t)int_of(r->element[1]);
        b->anyhist |= int_of(r->element[4]) == 1 && q->ans[k].votes;
    }
    /* Who counts: the voting masters that granted.  One restarted
     * without its data (no step counter) counts too, but its counter
     * is not raised and its version is 0, so it never leads while one
     * with the history grants, and a step's write gives it the state
     * back.  A majority of the masters must keep their data (as for
     * the lock's fencing tokens): a master restarted without it and
     * two that missed the last step could make a majority without
     * that step.  restart_delay_ms keeps a restarted master out of
     * the vote for its first lease; a semaphore's value never expires,
     * so masters that restart should persist (CONTRACT 9.5).  Not
     * counting such masters until a write repairs them was tried: an
     * idle name whose masters all restarted once could then never take
     * a step again, not even a reset. */
    for (k = 0; k < s->n; k++) {
        b->member[k] = s->granted[k] && q->ans[k].votes;
        if (!b->member[k])
            continue;
        b->votes++;
        if (b->cnt[k] > b->top)
            b->top = b->cnt[k];
    }
    if (b->top == 0)
        b->top = 1; /* a new name's first version */
    return 0;
}

/* The version, b->top, known to a majority (a new name's counters are made
 * by its first write): raised where it lags if a member keeps its
 * history.  0, or EIO (not enough masters took it). */
static int step_version(step_t *s, const begin_tally_t *b)
{
    bool has[RDL_REDLOCK_MAX] = { false };
    int have = 0;

    for (int k = 0; k < s->n; k++) {
        has[k] = b->member[k] && b->cnt[k] >= b->top;
        have += has[k];
    }
    if (b->anyhist && have < s->maj && fence_back(s, b->top, has, b->member, have) != 0)
        return EIO;
    return 0;
}

/* 2. the leader: the newest state among the voting masters (*vmax, its
 * version). */
static int step_leader(const step_t *s, const rdl_qcall_t *q, const begin_tally_t *b, uint64_t *vmax)
{
    int leader = -1;

    *vmax = 0;
    for (int k = 0; k < s->n; k++) {
        uint64_t v;
        if (!b->member[k])
            continue;
        v = (uint64_t)int_of(q->ans[k].r->element[2]);
        if (leader < 0 || v > *vmax) {
            leader = k;
            *vmax = v;
        }
    }
    return leader;
}

/* 3. write the leader's dump to the granting masters as version top; then
 * the script's answer is the step's (*reply, *rc 0; EIO for an error
 * reply, logged; a void answer for an unstamped caller: another step).
 * What the call does next (enum step_next). */
static enum step_next step_write(step_call_t *sc, lead_t *l, uint64_t top, redisReply **reply, int *rc)
{
    step_t *s = &sc->s;
    rdl_call_t *call = sc->call;

    if (write_round(s, top, l->dump) < s->maj) {
        unsure(call);
        if (call->sent_at < 0)
            call->sent_at = l->sent;
        freeReplyObject(l->op);
        freeReplyObject(l->dump);
        step_end(s);
        return STEP_FAILED;
    }
    step_end(s); /* the masters that granted but did not take the write */
    freeReplyObject(l->dump);
    if (!call->maybe_ran)
        call->sent_at = l->sent;
    call->answer_sent = l->sent;
    call->answer_at = l->answered;
    snprintf(call->route, sizeof call->route, "%s", l->route);
    if (l->op->type == REDIS_REPLY_ERROR) {
        rdl_log(RDLOCK_LOG_ERROR, "script %s failed on %s: %s", sc->script->name, l->route, l->op->str);
        freeReplyObject(l->op);
        *rc = EIO;
        return STEP_DONE;
    }
    if (op_status(l->op) == -2 && !sc->stamped && ++sc->voids < VOIDS_MAX) {
        /* Void on arrival (our idea of the leader's clock was off): for a
         * caller that did not ask for a stamp, tried again. */
        freeReplyObject(l->op);
        return STEP_AGAIN;
    }
    *reply = l->op;
    *rc = 0;
    return STEP_DONE;
}

/* After the leader's round trip (leader_round's code *rc): what the call
 * does next (enum step_next; *rc with STEP_DONE: 0, EIO, EACCES, ENOMEM).
 * The step mutex is given back where it is left. */
static enum step_next step_led(step_call_t *sc, lead_t *l, uint64_t top, redisReply **reply, int *rc)
{
    step_t *s = &sc->s;
    rdl_call_t *call = sc->call;

    if (*rc == EAGAIN && sc->reloads++ < NOSCRIPT_MAX) {
        step_end(s);
        return STEP_AGAIN;
    }
    if (*rc == EACCES || *rc == ENOMEM) {
        step_end(s);
        return STEP_DONE;
    }
    if (*rc == ENOTCONN || *rc == EAGAIN) {
        step_end(s); /* not sent, or reloads without end */
        return STEP_FAILED;
    }
    if (*rc != 0) {
        /* Sent, no answer: the script may have run on the leader. */
        call->maybe_ran = true;
        if (call->sent_at < 0 && l->sent > 0)
            call->sent_at = l->sent;
        if (l->sent + s->c->cfg.command_timeout_ms > call->unsure_until)
            call->unsure_until = l->sent + s->c->cfg.command_timeout_ms;
        step_end(s);
        return STEP_FAILED;
    }
    if (int_of(l->dump->element[0]) != 1) {
        /* The mutex ran out on the leader before the step: the stamp
         * made the script void, or it ran unguarded; either way the
         * step is not written and is tried again. */
        rdl_log(RDLOCK_LOG_WARN, "%.*s: a step outlasted its mutex; tried again", (int)s->lens[0], s->argv[0]);
        unsure(call);
        freeReplyObject(l->op);
        freeReplyObject(l->dump);
        step_end(s);
        return STEP_FAILED;
    }
    return step_write(sc, l, top, reply, rc);
}

/* One step: begin, the leader's round trip, write (prim_quorum.h).  What
 * the call does next (enum step_next); with STEP_DONE, *rc: 0 (*reply),
 * EIO, EACCES, ENOMEM. */
static enum step_next step_once(step_call_t *sc, redisReply **reply, int *rc)
{
    step_t *s = &sc->s;
    rdl_qcall_t q;
    begin_tally_t b;
    lead_t l = { .script = sc->script, .argc = sc->argc, .stamp_arg = sc->stamp_arg };
    uint64_t vmax;
    long long now;

    if (step_begin(s, &q, &b) != 0) {
        *rc = ENOMEM;
        return STEP_DONE;
    }
    now = rdl_now_ms();
    if (b.votes < s->maj || now >= b.valid_until) {
        rdl_quorum_free(&q);
        step_end(s);
        if (q.denied && b.answered < s->maj) {
            *rc = EACCES;
            return STEP_DONE;
        }
        if (b.answered >= s->maj && b.busy && now < sc->budget_end && (sc->deadline < 0 || now < sc->deadline)) {
            /* Another step holds the mutex (or a split): steps are
             * short, so look again soon. */
            rdl_sleep_ms(1 + rdl_jitter(2 + 2 * (unsigned)(now - q.sent_at)));
            return STEP_AGAIN;
        }
        return STEP_FAILED;
    }
    if (step_version(s, &b) != 0) {
        rdl_quorum_free(&q);
        step_end(s);
        return STEP_FAILED;
    }
    l.leader = step_leader(s, &q, &b, &vmax);
    if (s->hkey >= 0 && merges(s, &q, l.leader, vmax, &l.mv, &l.ml, &l.nm) != 0) {
        rdl_quorum_free(&q);
        step_end(s);
        *rc = ENOMEM;
        return STEP_DONE;
    }
    l.valid_until = b.valid_until;
    *rc = leader_round(s, &l);
    free(l.mv);
    free(l.ml);
    rdl_quorum_free(&q);
    return step_led(sc, &l, b.top, reply, rc);
}

int rdl_prim_quorum_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc,
                           const char *const *argv, const size_t *lens, int stamp_arg, int hkey,
                           long long deadline, redisReply **reply, rdl_call_t *call)
{
    rdl_call_t local = { 0 };
    step_call_t sc;
    long long now, pause;
    int failures = 0, rc = EIO;

    *reply = NULL;
    if (call == NULL)
        call = &local;
    sc.stamped = call->stamp != NULL;
    call->maybe_ran = call->ambiguous = false;
    call->sent_at = -1;
    call->acked = -1;
    call->wanted = 0;
    call->unsure_until = 0;
    call->route[0] = '\0';
    if (nkeys < 2 || nkeys > KEYS_MAX || hkey >= nkeys - 1)
        return EINVAL;
    if (step_init(&sc, c, nkeys, argv, lens, hkey) != 0)
        return ENOMEM;
    sc.script = script;
    sc.argc = argc;
    sc.stamp_arg = stamp_arg;
    sc.call = call;
    sc.deadline = deadline;
    sc.voids = sc.reloads = 0;

    for (;;) {
        enum step_next next = step_once(&sc, reply, &rc);
        if (next == STEP_DONE)
            break;
        if (next == STEP_AGAIN)
            continue;
        if (++failures > c->cfg.command_retries || (now = rdl_now_ms()) >= sc.budget_end) {
            rc = EIO;
            break;
        }
        pause = 10LL << (failures < 6 ? failures : 6);
        if (deadline >= 0 && now + pause > deadline)
            pause = deadline - now;
        if (pause <= 0) {
            rc = EIO;
            break;
        }
        rdl_sleep_ms(pause);
    }
    if (rc == EIO)
        rdl_log(RDLOCK_LOG_DEBUG, "%.*s: a step found no majority of redlock masters", (int)lens[0], argv[0]);
    free(sc.s.mbuf);
    return rc;
}
