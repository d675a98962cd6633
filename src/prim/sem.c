/* sem.c - counting semaphores (rdsem_t, docs/CONTRACT.md section 12).  See
 * sem.h; the server side, with the key layout, is src/scripts/sem.lua.
 *
 * Every step is one sem.lua call carrying the caller's identity (owner and
 * a call number, increasing per thread) and, for the steps that act, a
 * server-time deadline (the stamp of rdl_client_script): a late copy of a
 * request is void, a repeat of one that acted does not act twice (the
 * owner's op record on the server), as for the locks (section 11).
 *
 * A wait is the lock's wait loop in small: look (sem.lua 't'), and when
 * no permit is free, join the local wait queue of the semaphore (one
 * subscription to its channel for all local waiters), look once more, then
 * sleep until a wake-up ("u", published by a post when someone waits), a
 * holder's lease end, or the re-check period.  A waiter that gives up
 * first waits until no unanswered look can act, then withdraws ('u'),
 * which also tells it whether a look whose answer got lost took a permit.
 *
 * A leased permit is a hold of kind RDL_HOLD_SEM in the client's hold
 * table (key "<prefix>{name}:s:h", the holder hash), so that the watchdog
 * renews it with renew.lua, as it renews locks, and fork() and process
 * exit treat it as they treat locks. */
#include "rdl_build.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/ident.h"
#include "core/clients.h"
#include "core/exit.h"
#include "core/handle.h"
#include "core/hold.h"
#include "core/waitq.h"
#include "core/watchdog.h"
#include "exec/call.h"
#include "exec/exec.h"
#include "prim/lock.h"
#include "prim/sem.h"
#include "prim/step.h"
#include "proto/script.h"
#include "topology/topology.h"

#define RDL_SEM_ATTR_MAGIC 0x52445341u /* "RDSA" */
#define SEM_NKEYS 5
#define SEM_NARGS 12

/* ---------------------------------------------------------------- attributes */

static int attr_valid(const rdsem_attr_t *a)
{
    return a != NULL && a->__magic == RDL_SEM_ATTR_MAGIC;
}

int rdsem_attr_init(rdsem_attr_t *a)
{
    if (a == NULL)
        return EINVAL;
    memset(a, 0, sizeof *a);
    a->__magic = RDL_SEM_ATTR_MAGIC;
    a->__type = RDSEM_PLAIN;
    return 0;
}

int rdsem_attr_destroy(rdsem_attr_t *a)
{
    if (!attr_valid(a))
        return EINVAL;
    memset(a, 0, sizeof *a);
    return 0;
}

int rdsem_attr_settype(rdsem_attr_t *a, int type)
{
    if (!attr_valid(a) || (type != RDSEM_PLAIN && type != RDSEM_LEASED))
        return EINVAL;
    a->__type = type;
    return 0;
}

int rdsem_attr_gettype(const rdsem_attr_t *a, int *type)
{
    if (!attr_valid(a) || type == NULL)
        return EINVAL;
    *type = a->__type;
    return 0;
}

int rdsem_attr_setlease(rdsem_attr_t *a, unsigned lease_ms)
{
    if (!attr_valid(a) || (lease_ms != 0 && (lease_ms < 10 || lease_ms > 86400000u)))
        return EINVAL;
    a->__lease_ms = lease_ms;
    return 0;
}

int rdsem_attr_setclient(rdsem_attr_t *a, rdlock_client_t *c)
{
    if (!attr_valid(a))
        return EINVAL;
    a->__client = c;
    return 0;
}

/* ---------------------------------------------------------------- one request */

/* The keys and arguments of the sem.lua calls of one call of one thread
 * (see the script for their meaning). */
typedef struct sem_req {
    rdlock_client_t *c;
    rdl_handle_t *h;
    char *buf; /* the keys */
    const char *kv[SEM_NKEYS];
    size_t kl[SEM_NKEYS];
    char owner[RDL_OWNER_MAX];
    char type[2];
    char value[16];
    char call[21];
    char stamp[RDL_STAMP_LEN + 1];
    char flags[3];
    char lease[16];
    char holdcall[21];
    char keep[24];
    char pt[48];
    unsigned lease_ms;
    unsigned thread;
    long long unsure_until; /* an unanswered request may act until then */
    long long sent_at;      /* the request that took effect was sent then */
} sem_req_t;

/* What sem.lua answered: {status, now, x}, x an integer or a string (a
 * hold's call number, or the type letter of status -3) also in str. */
typedef rdl_step_reply_t sem_reply_t;

static unsigned long long sem_calls;

/* How a semaphore hold's leased permits end at process exit (exit.h). */
static bool sem_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline);
static void sem_exit_report(size_t done, size_t n);
static const rdl_exit_ender_t sem_exit = { RDL_EXIT_PERMITS, RDL_HOLD_SEM, sem_exit_end, sem_exit_report };

/* Set up the requests of a new call of thread on h (a new call number). */
static int req_init(sem_req_t *r, rdlock_client_t *c, rdl_handle_t *h, unsigned thread)
{
    static const char *const sfx[SEM_NKEYS - 1] = { ":s", ":s:h", ":s:w", ":s:wq" };
    size_t kl = h->keylen, ol, off = 0, i, n;
    long long keep;

    memset(r, 0, sizeof *r);
    r->c = c;
    r->h = h;
    r->thread = thread;
    ol = rdl_owner(c, thread, r->owner);
    r->buf = malloc(SEM_NKEYS * kl + 32 + ol);
    if (r->buf == NULL)
        return ENOMEM;
    for (i = 0; i < SEM_NKEYS; i++) {
        const char *s = i < SEM_NKEYS - 1 ? sfx[i] : ":s:o:";
        size_t sl = strlen(s);
        memcpy(r->buf + off, h->key, kl);
        memcpy(r->buf + off + kl, s, sl);
        n = kl + sl;
        if (i == SEM_NKEYS - 1) {
            memcpy(r->buf + off + n, r->owner, ol);
            n += ol;
        }
        r->kv[i] = r->buf + off;
        r->kl[i] = n;
        off += n;
    }
    r->type[0] = h->sem_type == RDSEM_LEASED ? 'l' : 'p';
    r->value[rdl_fmt_u64(r->value, h->sem_value)] = '\0';
    r->call[rdl_fmt_u64(r->call, __atomic_add_fetch(&sem_calls, 1, __ATOMIC_RELAXED))] = '\0';
    memset(r->stamp, '0', RDL_STAMP_LEN);
    strcpy(r->flags, "00");
    r->lease_ms = rdl_handle_lease(h);
    r->lease[rdl_fmt_u64(r->lease, r->lease_ms)] = '\0';
    strcpy(r->holdcall, "0");
    /* The op record outlives every retry of the request (each: a command
     * timeout and a backoff of <= 640 ms), as release.lua's proof does. */
    keep = (long long)(c->cfg.command_retries + 1) * (c->cfg.command_timeout_ms + 640) + 1000;
    r->keep[rdl_fmt_u64(r->keep, (unsigned long long)keep)] = '\0';
    n = rdl_fmt_u64(r->pt, (unsigned long long)c->pid);
    r->pt[n++] = ';';
    r->pt[n + rdl_fmt_u64(r->pt + n, thread)] = '\0';
    return 0;
}

static void req_free(sem_req_t *r)
{
    free(r->buf);
    r->buf = NULL;
}

/* Run op for r: 0 and *out, or an error of the client (EIO, EACCES,
 * ENOMEM).  The ops that act ('t', 'p', 'd') are stamped; a request that
 * arrived void (the client's idea of the server's clock was off) is sent
 * again with the fresh reading. */
static int req_run(sem_req_t *r, char op, long long deadline, sem_reply_t *out)
{
    rdlock_client_t *c = r->c;
    const char *argv[SEM_NKEYS + SEM_NARGS];
    size_t lens[SEM_NKEYS + SEM_NARGS];
    char opb[2] = { op, '\0' };
    bool stamped = op == 't' || op == 'p' || op == 'd';
    int i;

    for (i = 0; i < SEM_NKEYS; i++) {
        argv[i] = r->kv[i];
        lens[i] = r->kl[i];
    }
    argv[i++] = opb;
    argv[i++] = r->owner;
    argv[i++] = r->type;
    argv[i++] = r->value;
    argv[i++] = r->call;
    argv[i++] = stamped ? r->stamp : "0";
    argv[i++] = r->flags;
    argv[i++] = r->lease;
    argv[i++] = r->holdcall;
    argv[i++] = r->keep;
    argv[i++] = r->pt;
    argv[i++] = c->host;
    for (i = SEM_NKEYS; i < SEM_NKEYS + SEM_NARGS; i++)
        lens[i] = argv[i] == r->stamp ? RDL_STAMP_LEN : strlen(argv[i]);
    {
        /* Counting permits per master does not add up to a quorum (V+1
         * takers can each find a majority with a permit left): on Redlock
         * the semaphore's whole state moves from step to step
         * (prim_quorum.h).  The stamp is ARGV[6], the holders KEYS[2]. */
        rdl_step_t s = { .what = "semaphore", .name = r->h->name, .script = c->scripts->sem, .nkeys = SEM_NKEYS,
                         .argc = SEM_NKEYS + SEM_NARGS, .argv = argv, .lens = lens, .stamp_arg = SEM_NKEYS + 5,
                         .stamp = stamped ? r->stamp : NULL, .hkey = 1, .deadline = deadline,
                         .unsure_until = &r->unsure_until, .sent_at = &r->sent_at };
        int rc = rdl_step_run(c, &s, out);
        if (rc != 0)
            return rc;
    }
    if (out->status == -3) {
        rdl_log(RDLOCK_LOG_ERROR, "semaphore %s exists on the server as a %s semaphore, not a %s one", r->h->name,
                out->str[0] == 'l' ? "leased" : "plain", r->type[0] == 'l' ? "leased" : "plain");
        return EINVAL;
    }
    return 0;
}

/* ---------------------------------------------------------------- handles */

static int get(rdsem_t *sem, rdl_handle_t **h)
{
    return rdl_handle_get((rdl_lockobj_t *)sem, RDSEM__MAGIC, RDSEM__MAGIC, h);
}

int rdsem_init(rdsem_t *sem, const char *name, unsigned value, const rdsem_attr_t *a)
{
    rdlock_attr_t la;
    rdl_handle_t *h;
    rdlock_client_t *c;
    sem_req_t r;
    sem_reply_t out;
    int rc;

    if (sem == NULL || (a != NULL && !attr_valid(a)))
        return EINVAL;
    if (value > RDSEM_VALUE_MAX) {
        rdl_log(RDLOCK_LOG_ERROR, "semaphore %s: initial value %u is above RDSEM_VALUE_MAX", name ? name : "?",
                value);
        return EINVAL;
    }
    /* The handle is a lock handle with the attributes that apply. */
    rdlock_attr_init(&la);
    if (a != NULL) {
        la.__lease_ms = a->__lease_ms;
        la.__client = a->__client;
    }
    rc = rdl_handle_init((rdl_lockobj_t *)sem, RDSEM__MAGIC, name, &la, RDL_API_SEM);
    rdlock_attr_destroy(&la);
    if (rc != 0)
        return rc;
    h = sem->__impl;
    h->sem_type = a != NULL ? a->__type : RDSEM_PLAIN;
    h->sem_value = value;
    /* The name's state appears on the server now (section 12). */
    rc = rdl_handle_resolve(h, &c);
    if (rc == 0)
        rc = req_init(&r, c, h, rdl_thread_no());
    if (rc == 0) {
        rc = req_run(&r, 'i', -1, &out);
        req_free(&r);
    }
    if (rc != 0) {
        if (rc == EIO)
            rdl_log(RDLOCK_LOG_ERROR, "semaphore %s: init could not reach the server", h->name);
        rdl_handle_destroy((rdl_lockobj_t *)sem, RDSEM__MAGIC, RDSEM__MAGIC);
    }
    return rc;
}

int rdsem_destroy(rdsem_t *sem)
{
    return rdl_handle_destroy((rdl_lockobj_t *)sem, RDSEM__MAGIC, RDSEM__MAGIC);
}

/* The holder hash key "<prefix>{name}:s:h" of h, which keys its leased
 * holds in the client's table.  NULL on ENOMEM. */
static char *hold_key(const rdl_handle_t *h, uint16_t *len)
{
    char *k = malloc(h->keylen + 5);
    if (k == NULL)
        return NULL;
    memcpy(k, h->key, h->keylen);
    memcpy(k + h->keylen, ":s:h", 5);
    *len = (uint16_t)(h->keylen + 4);
    return k;
}

/* A fresh record of a leased hold of h (not inserted), or NULL. */
static rdl_hold_t *hold_new(const rdl_handle_t *h)
{
    rdl_hold_t *hold = calloc(1, sizeof *hold);
    if (hold == NULL)
        return NULL;
    if ((hold->key = hold_key(h, &hold->keylen)) == NULL) {
        free(hold);
        return NULL;
    }
    /* The name sits between the prefix's "{" and "}:s:h". */
    hold->namelen = h->namelen;
    return hold;
}

/* A take of r's call succeeded, with the hold call hc (leased; mu held):
 * count it in the caller's hold, or record a new hold (fresh, already
 * allocated; set to NULL when used). */
static void record_take(sem_req_t *r, const char *hc, rdl_hold_t **fresh)
{
    rdlock_client_t *c = r->c;
    rdl_handle_t *h = r->h;
    const rdl_config_t *cfg = &c->cfg;
    rdl_hold_t *hold = rdl_hold_find(c, (*fresh)->key, (*fresh)->keylen, r->thread);
    unsigned lease = r->lease_ms;

    char cs[21];
    if (hold != NULL && !hold->lost && strcmp(rdl_hold_call_str(hold, cs), hc) == 0) {
        hold->count++;
        hold->expires_at = r->sent_at + lease; /* the take renewed it */
        return;
    }
    if (hold != NULL) {
        /* Its permits were lost (the server started a new hold): gone. */
        if (!hold->lost)
            rdl_log(RDLOCK_LOG_WARN, "semaphore %s: the permits this thread held had been lost", h->name);
        rdl_hold_remove(c, hold);
        rdl_hold_free(hold);
    }
    hold = *fresh;
    *fresh = NULL;
    hold->thread = r->thread;
    hold->mode = 's';
    hold->api = RDL_API_SEM;
    hold->kind = RDL_HOLD_SEM;
    hold->count = 1;
    hold->call = strtoull(hc, NULL, 10);
    hold->serial = ++c->next_serial;
    rdl_hold_schedule(hold, c, lease, r->sent_at);
    hold->watchdog = cfg->watchdog_enabled;
    hold->handle = h;
    rdl_hold_insert(c, hold);
    rdl_watchdog_add(c, hold);
}

/* ---------------------------------------------------------------- wait */

/* Sleep until a wake-up of q, the re-check time or the deadline (mu not
 * held): the re-check comes when a holder's lease would end (hint), but at
 * least every retry interval and every third of the lease (which keeps
 * the queue mark alive). */
static void wait_turn(sem_req_t *r, rdl_waitq_t *q, rdl_waiter_t *me, unsigned long gen0, int rc, long long hint,
                      int how, long long deadline)
{
    rdlock_client_t *c = r->c;
    long long now = rdl_now_ms(), until, mark_by;
    unsigned wait_ms = c->cfg.retry_interval_ms, lease = r->lease_ms;

    if (wait_ms > lease / 3 && lease >= 3)
        wait_ms = lease / 3;
    if (rc == EBUSY && hint > 0 && hint < wait_ms)
        wait_ms = (unsigned)hint;
    wait_ms += rdl_jitter(c->cfg.retry_jitter_ms);
    until = (rc == EBUSY ? r->sent_at : now) + wait_ms;
    mark_by = rc == EBUSY ? r->sent_at + (lease >= 3 ? lease / 3 : 1) : LLONG_MAX;
    if (until > mark_by)
        until = mark_by;
    if (until < now)
        until = now;
    if (how == RDL_TIMED && until > deadline)
        until = deadline;
    if (q == NULL) {
        rdl_sleep_ms(until - now);
        return;
    }
    RDL_LOCK(c);
    rdl_waitq_sleep(c, q, me, gen0, until, NULL);
    RDL_UNLOCK(c);
}

/* Giving up (rc an error): once no look without an answer can act any
 * more, withdraw from the queue; if a look whose answer got lost took a
 * permit, the call has it after all: 0 (hc set).  Else rc. */
static int give_up(sem_req_t *r, bool queued, int rc, char *hc)
{
    sem_reply_t out;
    if (!queued && r->unsure_until == 0)
        return rc;
    rdl_sleep_until(r->unsure_until);
    if (req_run(r, 'u', rdl_now_ms() + r->c->cfg.command_timeout_ms, &out) != 0) {
        if (r->unsure_until != 0)
            rdl_log(RDLOCK_LOG_WARN, "semaphore %s: a wait without answer may have taken a permit, and Redis "
                                     "cannot be asked: %s", r->h->name,
                    r->h->sem_type == RDSEM_LEASED ? "it comes back with its lease" : "it may be lost");
        return rc;
    }
    if (out.status == 2) {
        snprintf(hc, 21, "%s", out.str[0] ? out.str : "0");
        return 0;
    }
    return rc;
}

/* rdsem_wait, trywait, timedwait: how RDL_TRY, RDL_BLOCK or RDL_TIMED
 * (deadline monotonic ms). */
static int sem_take(rdl_handle_t *h, int how, long long deadline)
{
    rdlock_client_t *c;
    rdl_waitq_t *q = NULL;
    rdl_waiter_t me;
    rdl_hold_t *fresh = NULL, *hold;
    sem_req_t r;
    sem_reply_t out;
    char hc[21] = "0";
    size_t waitkeylen;
    bool queued = false, leased = h->sem_type == RDSEM_LEASED;
    long long hint = 0;
    int rc;

    if ((rc = rdl_handle_resolve(h, &c)) != 0)
        return rc;
    if ((rc = req_init(&r, c, h, rdl_thread_no())) != 0)
        return rc;
    if (leased) {
        /* Allocated before the permit is taken, so that a permit taken is
         * never dropped for want of memory; the exit handler gives leased
         * permits back at exit. */
        rdl_exit_add(&sem_exit);
        if ((fresh = hold_new(h)) == NULL) {
            req_free(&r);
            return ENOMEM;
        }
        RDL_LOCK(c);
        hold = rdl_hold_find(c, fresh->key, fresh->keylen, r.thread);
        if (hold != NULL && !hold->lost)
            rdl_hold_call_str(hold, r.holdcall);
        RDL_UNLOCK(c);
    }
    memset(&me, 0, sizeof me);
    me.thread = r.thread;
    /* The wait queue is the semaphore's base key, "<prefix>{name}:s",
     * whose channel is that + ":c" (sem.lua publishes there). */
    waitkeylen = r.kl[0];

    for (;;) {
        unsigned long gen0 = 0;
        long long now;

        if (q != NULL) {
            RDL_LOCK(c);
            gen0 = rdl_waitq_look(c, q, &me);
            RDL_UNLOCK(c);
        }
        r.flags[0] = how != RDL_TRY ? '1' : '0';
        r.flags[1] = queued ? '1' : '0';
        rc = req_run(&r, 't', how == RDL_TIMED ? deadline : -1, &out);
        if (rc == 0 && out.status == 1) {
            snprintf(hc, sizeof hc, "%s", out.str[0] ? out.str : "0");
            break;
        }
        if (rc == 0) {
            rc = EBUSY;
            hint = out.x;
        }
        if (rc == EBUSY || rc == EIO)
            queued = how != RDL_TRY; /* after EIO we may have queued: assume so */
        if (how == RDL_TRY || (rc != EBUSY && rc != EIO) || (rc == EIO && c->cfg.fail_fast))
            break;
        now = rdl_now_ms();
        if (how == RDL_TIMED && now >= deadline) {
            rc = rc == EBUSY ? ETIMEDOUT : EIO;
            break;
        }
        if (q == NULL) {
            /* Subscribe, then look again at once: a post between the look
             * and the subscription would otherwise go unheard. */
            RDL_LOCK(c);
            q = rdl_waitq_join(c, r.kv[0], waitkeylen,
                               how == RDL_TIMED ? deadline : now + c->cfg.command_timeout_ms, &me);
            RDL_UNLOCK(c);
            if (q != NULL && rc == EBUSY)
                continue;
        }
        wait_turn(&r, q, &me, gen0, rc, hint, how, deadline);
    }

    if (rc != 0)
        rc = give_up(&r, queued, rc, hc);
    if (rc == EBUSY)
        rc = EAGAIN; /* sem_trywait's word */
    RDL_LOCK(c);
    if (q != NULL)
        rdl_waitq_leave(c, q, &me);
    if (rc == 0 && leased)
        record_take(&r, hc, &fresh);
    RDL_UNLOCK(c);
    if (fresh != NULL)
        rdl_hold_free(fresh);
    req_free(&r);
    return rc;
}

static int take_call(rdsem_t *sem, int how, clockid_t clock, const struct timespec *abstime)
{
    rdl_handle_t *h;
    long long deadline = -1;
    int rc = 0;
    if (how == RDL_TIMED)
        rc = rdl_deadline_from(clock, abstime, &deadline);
    if (rc == 0)
        rc = get(sem, &h);
    return rc != 0 ? rc : sem_take(h, how, deadline);
}

int rdsem_wait(rdsem_t *sem)
{
    return take_call(sem, RDL_BLOCK, CLOCK_REALTIME, NULL);
}

int rdsem_trywait(rdsem_t *sem)
{
    return take_call(sem, RDL_TRY, CLOCK_REALTIME, NULL);
}

int rdsem_timedwait(rdsem_t *sem, const struct timespec *abstime)
{
    return take_call(sem, RDL_TIMED, CLOCK_REALTIME, abstime);
}

int rdsem_clockwait(rdsem_t *sem, clockid_t clock, const struct timespec *abstime)
{
    return take_call(sem, RDL_TIMED, clock, abstime);
}

/* ---------------------------------------------------------------- post */

static int post_plain(rdl_handle_t *h, rdlock_client_t *c)
{
    sem_req_t r;
    sem_reply_t out;
    int rc = req_init(&r, c, h, rdl_thread_no());
    if (rc != 0)
        return rc;
    rc = req_run(&r, 'p', -1, &out);
    req_free(&r);
    if (rc == 0 && out.status == -4) {
        rdl_log(RDLOCK_LOG_WARN, "semaphore %s: post would pass RDSEM_VALUE_MAX", h->name);
        rc = EOVERFLOW;
    }
    return rc;
}

static int post_leased(rdl_handle_t *h, rdlock_client_t *c)
{
    rdl_hold_t *hold;
    sem_req_t r;
    sem_reply_t out;
    char *key;
    uint16_t keylen;
    bool final;
    int rc;

    if ((key = hold_key(h, &keylen)) == NULL)
        return ENOMEM;
    if ((rc = req_init(&r, c, h, rdl_thread_no())) != 0) {
        free(key);
        return rc;
    }
    RDL_LOCK(c);
    hold = rdl_hold_find(c, key, keylen, r.thread);
    free(key);
    if (hold == NULL || hold->releasing) {
        RDL_UNLOCK(c);
        req_free(&r);
        return EPERM;
    }
    /* The last permit: the watchdog must not take a renewal that finds it
     * gone for a loss. */
    final = hold->count <= 1;
    if (final)
        hold->releasing = true;
    rdl_hold_call_str(hold, r.holdcall);
    RDL_UNLOCK(c);

    rc = req_run(&r, 'p', -1, &out);
    req_free(&r);

    RDL_LOCK(c);
    if (rc == 0 && (out.status == 1 || out.status == 3) && !final) {
        hold->count--;
    } else if (rc == 0) {
        if (out.status != 1 && out.status != 3)
            rc = ENOLCK;
        rdl_hold_remove(c, hold);
    } else {
        hold->releasing = false; /* still held and renewed: post may be called again */
        hold = NULL;
    }
    RDL_UNLOCK(c);
    if (rc == ENOLCK)
        rdl_log(RDLOCK_LOG_WARN, "semaphore %s: the permits of this thread had been lost before the post",
                h->name);
    if (hold != NULL && (rc != 0 || final))
        rdl_hold_free(hold);
    return rc;
}

int rdsem_post(rdsem_t *sem)
{
    rdl_handle_t *h;
    rdlock_client_t *c;
    int rc = get(sem, &h);
    if (rc != 0)
        return rc;
    if (h->sem_type == RDSEM_LEASED) {
        /* No client yet: this process never took a permit through it. */
        c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
        return c == NULL ? EPERM : post_leased(h, c);
    }
    if ((rc = rdl_handle_resolve(h, &c)) != 0)
        return rc;
    return post_plain(h, c);
}

int rdsem_getvalue(rdsem_t *sem, int *sval)
{
    rdl_handle_t *h;
    rdlock_client_t *c;
    sem_req_t r;
    sem_reply_t out;
    int rc = get(sem, &h);
    if (rc == 0 && sval == NULL)
        rc = EINVAL;
    if (rc == 0)
        rc = rdl_handle_resolve(h, &c);
    if (rc == 0)
        rc = req_init(&r, c, h, rdl_thread_no());
    if (rc != 0)
        return rc;
    rc = req_run(&r, 'g', -1, &out);
    req_free(&r);
    if (rc == 0)
        *sval = out.x < 0 ? 0 : out.x > INT_MAX ? INT_MAX : (int)out.x;
    return rc;
}

/* ---------------------------------------------------------------- exit, reset */

/* Process exit (exit.h): give back a hold's leased permits now rather than
 * at lease end. */
static bool sem_exit_end(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline)
{
    sem_req_t r;
    sem_reply_t out;
    bool done;
    if (e->handle == NULL || req_init(&r, c, e->handle, e->thread) != 0)
        return false;
    memcpy(r.holdcall, e->call, sizeof r.holdcall);
    done = req_run(&r, 'd', deadline, &out) == 0 && (out.status == 1 || out.status == 3);
    req_free(&r);
    return done;
}

static void sem_exit_report(size_t done, size_t n)
{
    rdl_log(done == n ? RDLOCK_LOG_INFO : RDLOCK_LOG_WARN,
            "process exit: gave back the leased permits of %zu of %zu semaphore hold%s%s", done, n,
            n == 1 ? "" : "s", done == n ? "" : "; the others come back with their leases");
}

int rdl_sem_reset(rdlock_client_t *c, const char *key, size_t keylen)
{
    rdl_handle_t h;
    sem_req_t r;
    sem_reply_t out;
    int rc;

    /* A stand-in handle: the reset needs only the keys. */
    memset(&h, 0, sizeof h);
    h.key = (char *)key;
    h.keylen = keylen;
    h.name = (char *)"";
    h.client = c;
    h.lease_ms = c->cfg.lease_ms;
    if ((rc = req_init(&r, c, &h, rdl_thread_no())) != 0)
        return rc;
    rc = req_run(&r, 'r', -1, &out);
    req_free(&r);
    return rc;
}
