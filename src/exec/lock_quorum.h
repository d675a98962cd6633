/* lock_quorum.h - the lock's steps on a Redlock quorum: what the masters'
 * answers to acquire.lua and release.lua add up to (lock.c calls these
 * instead of one script call when the topology is a quorum). */
#ifndef RDL_LOCK_QUORUM_H
#define RDL_LOCK_QUORUM_H

#include <stdbool.h>
#include <stddef.h>

#include "client/client.h"
#include "exec/call.h"
#include "proto/reply.h"

/* acquire.lua on every master at once, with lock.c's arguments (nkeys
 * keys, the owner, the packed argument whose stamp is at stamp_off).  A
 * majority of voting masters that granted it in time (lease - elapsed -
 * drift) is a hold: its token is the highest they gave, written back
 * until a majority has a counter at least that high.  Anything short of
 * that is undone on the masters that granted it.  Returns as
 * rdl_reply_acquire (0, EOWNERDEAD, EBUSY, ENOTRECOVERABLE, ESTALE), or
 * EIO (too few masters answered, or the token could not be made known to
 * a majority), EACCES (too few answered, and a master refused us), ENOMEM;
 * *call's sent_at, unsure_until, maybe_ran are set as rdl_client_script
 * sets them. */
int rdl_quorum_acquire(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                       size_t stamp_off, unsigned lease, rdl_acquired_t *out, rdl_call_t *call);

/* release.lua on every master (argv as lock.c's leave()).  For a release
 * ("r..."): status 1 when a majority of voting masters still had the hold
 * (or had released it by an earlier attempt), 0 when too few can have it;
 * masters that did not answer are asked again (command_retries), and once
 * some master has released the hold, until `until` (monotonic ms; -1:
 * command_retries only): the hold is then no longer whole, so EIO, which
 * tells the caller it still holds the lock and may unlock again, is the
 * answer only once the lease would have ended anyway.  For an
 * unwait ("u"): a master that had granted the lock to this call after all
 * gets it released at once (on a quorum that is no hold), so status is
 * never 2.  kind is 2 (waiters look again) if any master woke someone.
 * 0 and *out, or EIO (too few answers to tell), EACCES (too few, and a
 * master refused us: a release only), ENOMEM (the request could not be
 * set up). */
int rdl_quorum_release(rdlock_client_t *c, const char *const *argv, const size_t *lens, int nkeys, int argc,
                       long long until, rdl_released_t *out, long long *sent_at, bool *ambiguous);

#endif
