/* lock.h - the core: acquire, release and inspect one name in one mode for
 * the calling thread.  mutex.c and rwlock.c are thin layers over this. */
#ifndef RDL_LOCK_H
#define RDL_LOCK_H

#include <stdint.h>

#include "client.h"
#include "handle.h"
#include "script.h"

enum { RDL_TRY, RDL_BLOCK, RDL_TIMED };

/* mode 'x' or 's'; how RDL_*; deadline monotonic ms (RDL_TIMED only). */
int rdl_acquire(rdl_handle_t *h, char mode, int how, long long deadline);

/* The public lock calls: validate abstime first (RDL_TIMED; EINVAL even on
 * a free lock, docs/CONTRACT.md section 1), then look up the handle of obj and acquire.
 * magic/static_magic say which kind of lock object obj is. */
int rdl_lock_call(rdl_lockobj_t *obj, unsigned magic, unsigned static_magic, char mode, int how,
                  clockid_t clock, const struct timespec *abstime);
int rdl_release(rdl_handle_t *h);
/* The caller's hold through h's API: count 0 if none (returns 0), token
 * EPERM if none. */
int rdl_holdcount(rdl_handle_t *h, unsigned *count);
int rdl_token(rdl_handle_t *h, uint64_t *token);
/* rdlock_consistent: EINVAL unless h is robust and the caller holds it
 * after EOWNERDEAD. */
int rdl_consistent(rdl_handle_t *h);
/* The same on one server: index `server` of a Redlock set (its
 * "host:port" into where, n bytes), or 0 on the other topologies (their
 * description).  EINVAL past the last. */
int rdl_lock_script_on(rdlock_client_t *c, const rdl_script_t *script, const char *key, size_t keylen, unsigned server,
                       char *where, size_t n, redisReply **reply);
/* Run a script that takes exactly the lock's keys (reset, status). */
int rdl_lock_script(rdlock_client_t *c, const rdl_script_t *script, const char *key, size_t keylen,
                    redisReply **reply);

#endif
