/* lock.h - the core: acquire, release and inspect one name in one mode for
 * the calling thread.  mutex.c and rwlock.c are thin layers over this. */
#ifndef RDL_LOCK_H
#define RDL_LOCK_H

#include <stdint.h>

#include "client/client.h"
#include "core/handle.h"
#include "proto/script.h"

enum { RDL_TRY, RDL_BLOCK, RDL_TIMED };

/* mode 'x' or 's'; how RDL_*; deadline monotonic ms (RDL_TIMED only).
 * Returns
 *   0           held (also a recursive or read re-entry: counted)
 *   EOWNERDEAD  held; the last exclusive holder ended without unlock
 *               (robust handles only)
 *   EBUSY       RDL_TRY: held by another, or by the caller in a way that
 *               does not count again
 *   EDEADLK     the caller holds it already and may not enter again
 *   EAGAIN      the caller's re-entry count is at its maximum
 *   ETIMEDOUT   RDL_TIMED: still busy at the deadline
 *   ENOTRECOVERABLE  the lock was left inconsistent
 *   EIO         no answer (or too few replicas confirmed it, or the
 *               server's clock voided it again and again): from RDL_TRY,
 *               with fail_fast, or from RDL_TIMED at the deadline
 *               (RDL_BLOCK waits on); also the default client's open
 *   EACCES      refused: authentication, permission (also WAIT's)
 *   EINVAL, ENOENT  the default client's configuration (rdl_handle_resolve);
 *               EINVAL also a name that does not fit the client, or a new
 *               connection's SELECT refused
 *   ENOMEM */
int rdl_acquire(rdl_handle_t *h, char mode, int how, long long deadline);

/* The public lock calls: validate abstime first (RDL_TIMED; EINVAL even on
 * a free lock, docs/CONTRACT.md section 1), then look up the handle of obj and acquire.
 * magic/static_magic say which kind of lock object obj is.  Returns as
 * rdl_acquire (0, EOWNERDEAD, EBUSY, EDEADLK, EAGAIN, ETIMEDOUT,
 * ENOTRECOVERABLE, EIO, EACCES, EINVAL, ENOENT, ENOMEM), and EINVAL for a
 * bad abstime or object (rdl_handle_get). */
int rdl_lock_call(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic, char mode, int how,
                  clockid_t clock, const struct timespec *abstime);

/* Release the caller's hold through h.  0 (released; an inner unlock of a
 * recursive hold only counts down), or
 *   EPERM   the caller holds nothing through h (or its unlock is under way)
 *   ENOLCK  released, but the lease had been lost before (or may have been)
 *   EIO     no answer: still held, and renewed; unlock may be called again
 *   EACCES  refused: authentication, permission (still held)
 *   EINVAL  a new connection's SELECT refused (still held)
 *   ENOMEM  (still held) */
int rdl_release(rdl_handle_t *h);

/* The caller's hold through h's API.  rdl_holdcount: always 0, *count 0
 * if none.  rdl_token: 0 and *token, or EPERM if none. */
int rdl_holdcount(rdl_handle_t *h, unsigned *count);
int rdl_token(rdl_handle_t *h, uint64_t *token);
/* rdlock_consistent: 0, or EINVAL unless h is robust and the caller holds
 * it after EOWNERDEAD. */
int rdl_consistent(rdl_handle_t *h);

/* A script that takes exactly the lock's keys (reset, status), on one
 * server: index `server` of a Redlock set (its "host:port" into where, n
 * bytes), or 0 on the other topologies (their description).  0 and
 * *reply, or EINVAL past the last, or as rdl_lock_script: EIO, EACCES,
 * EINVAL, ENOMEM. */
int rdl_lock_script_on(rdlock_client_t *c, const rdl_script_t *script, const char *key, size_t keylen, unsigned server,
                       char *where, size_t n, redisReply **reply);
/* Run a script that takes exactly the lock's keys (reset, status).  0 and
 * *reply, or as the exec op script (exec.h): EIO, EACCES, EINVAL, ENOMEM. */
int rdl_lock_script(rdlock_client_t *c, const rdl_script_t *script, const char *key, size_t keylen,
                    redisReply **reply);

#endif
