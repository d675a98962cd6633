/* prim.h - what the condition variables (cond.c) and barriers (barrier.c)
 * share: one request to their script, carrying the caller's identity as
 * every step of a primitive must (docs/CONTRACT.md section 12: owner, call
 * number, and for the steps that act a server-time deadline, the stamp of
 * rdl_client_script), and the local record of a participant's lease (a
 * waiter's registration, a barrier arrival), a hold that the watchdog
 * renews with renew.lua like a lock's.
 *
 * The argument layout of cond.lua and barrier.lua is therefore the same:
 *   KEYS   <prefix>{name}<sfx[0]>, ..., and last <prefix>{name}<sfx[n-1]><owner>
 *   ARGV   op, owner, call, stamp, lease, keep, "<pid>;<thread>", host, arg */
#ifndef RDL_PRIM_H
#define RDL_PRIM_H

#include <stdbool.h>

#include "client/client.h"
#include "core/handle.h"
#include "core/hold.h"
#include "exec/call.h"
#include "prim/step.h"
#include "proto/script.h"

#define RDL_PRIM_KEYS_MAX 6
#define RDL_PRIM_NARGS 9

typedef struct rdl_preq {
    rdlock_client_t *c;
    rdl_handle_t *h;
    const char *what; /* "condition" or "barrier", for the log */
    int nkeys;
    char *buf;
    const char *kv[RDL_PRIM_KEYS_MAX];
    size_t kl[RDL_PRIM_KEYS_MAX];
    char owner[RDL_OWNER_MAX];
    char call[21];
    char stamp[RDL_STAMP_LEN + 1];
    char lease[16];
    char keep[24];
    char pt[48];
    char arg[24];
    unsigned lease_ms;
    unsigned thread;
    long long unsure_until; /* an unanswered stamped request may act until then */
    long long sent_at;      /* the request that answered was sent then */
} rdl_preq_t;

/* What a script answered: {status, now, x} (step.h). */
typedef rdl_step_reply_t rdl_preply_t;

/* Set up the requests of a new call of thread on h, with the keys
 * <key><sfx[i]> (the last one followed by the owner id).  0, or EINVAL
 * (nkeys not in 1..RDL_PRIM_KEYS_MAX), ENOMEM. */
int rdl_preq_init(rdl_preq_t *r, rdlock_client_t *c, rdl_handle_t *h, unsigned thread, const char *what,
                  const char *const *sfx, int nkeys);
void rdl_preq_free(rdl_preq_t *r);
/* A new call number for the same thread: what a fresh attempt of a step
 * that was undone on the server (a lost registration) needs. */
void rdl_preq_newcall(rdl_preq_t *r);
/* Run op (stamped: with the server-time deadline that voids a late copy;
 * a request that arrived void, status -2, is sent again with a fresh
 * reading, a few times).  0 and *out, or as rdl_step_run: EIO (no
 * answer, an unexpected reply, void again and again), EACCES (refused:
 * authentication, ACL), EINVAL (a new connection's SELECT refused),
 * ENOMEM. */
int rdl_preq_run(rdl_preq_t *r, const rdl_script_t *script, char op, bool stamped, long long deadline,
                 rdl_preply_t *out);

/* The record of the caller's lease on <key><sfx> (a registration or an
 * arrival: the kind of ender, RDL_HOLD_COND or RDL_HOLD_BARRIER, which
 * also says how the exit handler ends it), taken by the request
 * r sent at r->sent_at, renewed by the watchdog from now on (mu not held).
 * Marked as releasing from the start: the participant itself ends it on
 * the server, and a renewal that finds it ended there is no loss to
 * report.  NULL on ENOMEM (the lease then runs out unrenewed: a waiter's
 * looks find that out). */
struct rdl_exit_ender;
rdl_hold_t *rdl_prim_hold_add(rdl_preq_t *r, const char *sfx, const struct rdl_exit_ender *ender);
/* Forget it (mu not held); NULL is fine. */
void rdl_prim_hold_drop(rdlock_client_t *c, rdl_hold_t *hold);

/* One op of a primitive outside any handle (a reset, a withdrawal at
 * process exit): a stand-in handle with the keys of key (the name's
 * "<prefix>{name}") only; thread and call (NULL: a new call) are the
 * caller's identity on the server, arg the script's last argument (NULL:
 * "0").  0 and *out, or as rdl_preq_init and rdl_preq_run: EIO, EACCES,
 * EINVAL, ENOMEM. */
int rdl_prim_op_on(rdlock_client_t *c, const char *key, size_t keylen, unsigned thread, const char *call,
                   unsigned lease_ms, const char *what, const char *const *sfx, int nkeys,
                   const rdl_script_t *script, char op, const char *arg, rdl_preply_t *out);

/* The exit handler's log line (exit.h) for the stage that ends condition
 * registrations and barrier arrivals of threads still waiting, so that a
 * signal they had passes on and the barrier's others need not wait for
 * the leases: the report of cond.c's and barrier.c's enders. */
void rdl_prim_exit_report(size_t done, size_t n);

/* A wait whose registration or arrival the exit handler ended: its thread must neither take the lock
 * back nor arrive again, for nothing would end those; it stays here
 * until the process is gone, or for two command timeouts at most (an
 * exit path that joins the thread must not hang). */
void rdl_prim_park_if_exiting(rdlock_client_t *c);

/* Sleep on q until a wake-up after gen, a wake-up addressed to w, the
 * next re-check (every retry_interval_ms, at most a third of the lease)
 * or the deadline (RDL_TIMED) (mu not held). */
struct rdl_waitq;
struct rdl_waiter;
void rdl_prim_sleep(rdl_preq_t *r, struct rdl_waitq *q, struct rdl_waiter *w, unsigned long gen, int how,
                    long long deadline);

#endif
