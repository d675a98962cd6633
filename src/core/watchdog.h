/* watchdog.h - renewing the client's holds.  The watchdog owns the renewal
 * schedule (the client's wdog state: the next due time, the backoff after
 * failed rounds, its own connection) and the batches of renew.lua; the
 * background thread (events.c) only drives a round:
 *
 *   collect (mu held) -> send (mu not held) -> apply (mu held)
 *   -> finish (mu not held: the lost callbacks run, the round is freed)
 *
 * lock.c tells it about a new hold with rdl_watchdog_add and never touches
 * the schedule itself. */
#ifndef RDL_WATCHDOG_H
#define RDL_WATCHDOG_H

#include <stdbool.h>

#include "client/client.h"
#include "core/hold.h"

typedef struct rdl_wd_round rdl_wd_round_t;

/* A new hold (mu held): renew it on time, starting the thread if needed. */
void rdl_watchdog_add(rdlock_client_t *c, const rdl_hold_t *hold);
/* The holds due now, or NULL if none (mu held).  Holds whose lease ran
 * out unrenewed are marked lost in the round, for finish to report. */
rdl_wd_round_t *rdl_watchdog_collect(rdlock_client_t *c, long long now);
/* Send the round's renewals, pipelined (mu not held).  0, or one of these
 * (logged; the holds without an answer are then unknown, and retried):
 * EIO (no answer, an error reply, a replica; on a quorum, no majority
 * either way), EACCES (refused: authentication, ACL), EINVAL (a new
 * connection's SELECT refused), ENOMEM; and from a renewal sent again
 * after NOSCRIPT, rdl_conn_script's EAGAIN, EROFS, RDL_EREDIRECT. */
int rdl_watchdog_send(rdlock_client_t *c, rdl_wd_round_t *round);
/* Whether the round renewed anything (it went to the server). */
bool rdl_watchdog_sent(const rdl_wd_round_t *round);
/* Record the replies (mu held): new deadlines, lost holds, retries. */
void rdl_watchdog_apply(rdlock_client_t *c, rdl_wd_round_t *round, long long now);
/* Run the lost callbacks of the round and free it (mu not held). */
void rdl_watchdog_finish(rdl_wd_round_t *round);
/* Every watched hold is due now (mu held): after a move to another
 * server, whose copies of our holds may be gone. */
void rdl_watchdog_renew_all_now(rdlock_client_t *c, long long now);
/* ms until the watchdog has work, given the caller's timeout so far. */
long long rdl_watchdog_timeout(const rdlock_client_t *c, long long now, long long timeout);
/* Drop its connection (the next round connects again). */
void rdl_watchdog_close(rdlock_client_t *c);
/* In a fork child: forget the schedule and the connection. */
void rdl_watchdog_after_fork(rdlock_client_t *c);

#endif
