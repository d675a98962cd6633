/* prim.c - the request and lease record shared by cond.c and barrier.c;
 * see prim.h.  It follows sem.c's request (sem_req_t) closely: the same
 * identity, the same stamps, the same lease records. */
#include "rdl_build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fmt.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/ident.h"
#include "core/exit.h"
#include "core/waitq.h"
#include "core/watchdog.h"
#include "exec/call.h"
#include "exec/exec.h"
#include "prim/lock.h"
#include "prim/prim.h"
#include "topology/topology.h"


/* Call numbers, increasing per process (so per thread too): a late copy
 * of an older call of the thread is told from the current one. */
static unsigned long long prim_calls;

void rdl_preq_newcall(rdl_preq_t *r)
{
    r->call[rdl_fmt_u64(r->call, __atomic_add_fetch(&prim_calls, 1, __ATOMIC_RELAXED))] = '\0';
    r->unsure_until = 0;
}

int rdl_preq_init(rdl_preq_t *r, rdlock_client_t *c, rdl_handle_t *h, unsigned thread, const char *what,
                  const char *const *sfx, int nkeys)
{
    size_t kl = h->keylen, ol, off = 0, total = 0, n;
    long long keep;
    int i;

    memset(r, 0, sizeof *r);
    if (nkeys < 1 || nkeys > RDL_PRIM_KEYS_MAX)
        return EINVAL;
    r->c = c;
    r->h = h;
    r->what = what;
    r->thread = thread;
    r->nkeys = nkeys;
    ol = rdl_owner(c, thread, r->owner);
    for (i = 0; i < nkeys; i++)
        total += kl + strlen(sfx[i]);
    if ((r->buf = malloc(total + ol + 1)) == NULL)
        return ENOMEM;
    for (i = 0; i < nkeys; i++) {
        size_t sl = strlen(sfx[i]);
        memcpy(r->buf + off, h->key, kl);
        memcpy(r->buf + off + kl, sfx[i], sl);
        n = kl + sl;
        if (i == nkeys - 1) {
            memcpy(r->buf + off + n, r->owner, ol);
            n += ol;
        }
        r->kv[i] = r->buf + off;
        r->kl[i] = n;
        off += n;
    }
    rdl_preq_newcall(r);
    memset(r->stamp, '0', RDL_STAMP_LEN);
    r->lease_ms = rdl_handle_lease(h);
    r->lease[rdl_fmt_u64(r->lease, r->lease_ms)] = '\0';
    /* The op record outlives every retry of a request (each: a command
     * timeout and a backoff of <= 640 ms), as sem.c's does. */
    keep = (long long)(c->cfg.command_retries + 1) * (c->cfg.command_timeout_ms + 640) + 1000;
    r->keep[rdl_fmt_u64(r->keep, (unsigned long long)keep)] = '\0';
    n = rdl_fmt_u64(r->pt, (unsigned long long)c->pid);
    r->pt[n++] = ';';
    r->pt[n + rdl_fmt_u64(r->pt + n, thread)] = '\0';
    strcpy(r->arg, "0");
    return 0;
}

void rdl_preq_free(rdl_preq_t *r)
{
    free(r->buf);
    r->buf = NULL;
}

int rdl_preq_run(rdl_preq_t *r, const rdl_script_t *script, char op, bool stamped, long long deadline,
                 rdl_preply_t *out)
{
    rdlock_client_t *c = r->c;
    const char *argv[RDL_PRIM_KEYS_MAX + RDL_PRIM_NARGS];
    size_t lens[RDL_PRIM_KEYS_MAX + RDL_PRIM_NARGS];
    char opb[2] = { op, '\0' };
    int i, n = r->nkeys;

    for (i = 0; i < n; i++) {
        argv[i] = r->kv[i];
        lens[i] = r->kl[i];
    }
    argv[i++] = opb;
    argv[i++] = r->owner;
    argv[i++] = r->call;
    argv[i++] = stamped ? r->stamp : "0";
    argv[i++] = r->lease;
    argv[i++] = r->keep;
    argv[i++] = r->pt;
    argv[i++] = c->host;
    argv[i++] = r->arg;
    for (i = n; i < n + RDL_PRIM_NARGS; i++)
        lens[i] = argv[i] == r->stamp ? RDL_STAMP_LEN : strlen(argv[i]);
    {
        rdl_step_t s = { .what = r->what, .name = r->h->name, .script = script, .nkeys = n,
                         .argc = n + RDL_PRIM_NARGS, .argv = argv, .lens = lens, .stamp_arg = n + 3,
                         .stamp = stamped ? r->stamp : NULL, .hkey = 1, /* both scripts' holders: KEYS[2] */
                         .deadline = deadline, .unsure_until = &r->unsure_until, .sent_at = &r->sent_at };
        return rdl_step_run(c, &s, out);
    }
}

rdl_hold_t *rdl_prim_hold_add(rdl_preq_t *r, const char *sfx, const rdl_exit_ender_t *ender)
{
    rdlock_client_t *c = r->c;
    rdl_handle_t *h = r->h;
    size_t sl = strlen(sfx);
    int kind = ender->kind;
    rdl_hold_t *hold;
    rdl_hold_t *old;

    /* Registrations and arrivals are ended at process exit too: before the
     * first record of its kind exists, the exit handler knows how. */
    rdl_exit_add(ender);
    hold = calloc(1, sizeof *hold);

    if (hold == NULL || (hold->key = malloc(h->keylen + sl + 1)) == NULL) {
        free(hold);
        return NULL;
    }
    memcpy(hold->key, h->key, h->keylen);
    memcpy(hold->key + h->keylen, sfx, sl + 1);
    hold->keylen = h->keylen + sl;
    /* The name sits between the prefix's "{" and "}<sfx>". */
    hold->namelen = h->namelen;
    hold->thread = r->thread;
    hold->mode = 's';
    hold->api = kind == RDL_HOLD_COND ? RDL_API_COND : RDL_API_BARRIER;
    hold->kind = kind;
    hold->count = 1;
    hold->call = strtoull(r->call, NULL, 10);
    hold->releasing = true;
    hold->handle = h;
    RDL_LOCK(c);
    /* A record of an earlier call of this thread (its end on the server
     * failed) is replaced: the server replaced it too. */
    if ((old = rdl_hold_find(c, hold->key, hold->keylen, r->thread)) != NULL) {
        rdl_hold_remove(c, old);
        rdl_hold_free(old);
    }
    hold->serial = ++c->next_serial;
    rdl_hold_schedule(hold, c, r->lease_ms, r->sent_at);
    hold->watchdog = c->cfg.watchdog_enabled;
    if (rdl_hold_insert(c, hold) != 0) {
        RDL_UNLOCK(c);
        rdl_hold_free(hold);
        return NULL;
    }
    rdl_watchdog_add(c, hold);
    RDL_UNLOCK(c);
    return hold;
}

void rdl_prim_hold_drop(rdlock_client_t *c, rdl_hold_t *hold)
{
    if (hold == NULL)
        return;
    RDL_LOCK(c);
    rdl_hold_remove(c, hold);
    RDL_UNLOCK(c);
    rdl_hold_free(hold);
}

int rdl_prim_op_on(rdlock_client_t *c, const char *key, size_t keylen, unsigned thread, const char *call,
                   unsigned lease_ms, const char *what, const char *const *sfx, int nkeys,
                   const rdl_script_t *script, char op, const char *arg, rdl_preply_t *out)
{
    rdl_handle_t h;
    rdl_preq_t r;
    int rc;

    memset(&h, 0, sizeof h);
    h.key = (char *)key;
    h.keylen = keylen;
    h.name = (char *)"";
    h.client = c;
    h.lease_ms = lease_ms;
    if ((rc = rdl_preq_init(&r, c, &h, thread, what, sfx, nkeys)) != 0)
        return rc;
    if (call != NULL)
        snprintf(r.call, sizeof r.call, "%s", call);
    if (arg != NULL)
        snprintf(r.arg, sizeof r.arg, "%s", arg);
    rc = rdl_preq_run(&r, script, op, false, -1, out);
    rdl_preq_free(&r);
    return rc;
}

void rdl_prim_exit_report(size_t done, size_t n)
{
    rdl_log(done == n ? RDLOCK_LOG_INFO : RDLOCK_LOG_WARN,
            "process exit: ended %zu of %zu condition wait%s and barrier arrival%s%s", done, n,
            n == 1 ? "" : "s", n == 1 ? "" : "s", done == n ? "" : "; the others end with their leases");
}

void rdl_prim_park_if_exiting(rdlock_client_t *c)
{
    long long until;
    if (!__atomic_load_n(&c->exiting, __ATOMIC_ACQUIRE))
        return;
    /* exit() ends the process once its handlers return.  Bounded, for a
     * program whose exit path joins this thread: it goes on (and may take
     * its lock back, a hold that then ends with its lease) rather than
     * hang the exit. */
    until = rdl_now_ms() + 2LL * c->cfg.command_timeout_ms;
    while (rdl_now_ms() < until)
        rdl_sleep_ms(until - rdl_now_ms());
}

void rdl_prim_sleep(rdl_preq_t *r, rdl_waitq_t *q, rdl_waiter_t *w, unsigned long gen, int how,
                    long long deadline)
{
    rdlock_client_t *c = r->c;
    long long now = rdl_now_ms(), until;
    unsigned wait_ms = c->cfg.retry_interval_ms, lease = r->lease_ms;

    /* The backstop: a wake-up that pub/sub lost, or a signal passed on
     * from a waiter that died (the server notices at someone's look). */
    if (wait_ms > lease / 3 && lease >= 3)
        wait_ms = lease / 3;
    until = now + wait_ms + rdl_jitter(c->cfg.retry_jitter_ms);
    if (how == RDL_TIMED && until > deadline)
        until = deadline;
    if (q == NULL) {
        rdl_sleep_ms(until - now);
        return;
    }
    RDL_LOCK(c);
    rdl_waitq_sleep(c, q, w, gen, until, NULL);
    RDL_UNLOCK(c);
}
