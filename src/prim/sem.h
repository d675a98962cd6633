/* sem.h - counting semaphores (rdsem_t, docs/CONTRACT.md section 12): the
 * steps are src/scripts/sem.lua; the wait loop shares the local wait
 * queues (waitq.h) and the subscriber with the locks, and the leased
 * permits are holds (hold.h, kind RDL_HOLD_SEM) that the watchdog renews. */
#ifndef RDL_SEM_H
#define RDL_SEM_H

#include "client/client.h"

/* rdlock_reset_name: delete the semaphore state of the name whose lock key
 * is key ("<prefix>{name}").  0, or EIO (no answer, an unexpected reply),
 * EACCES (refused: authentication, ACL), EINVAL (a new connection's SELECT
 * refused), ENOMEM. */
int rdl_sem_reset(rdlock_client_t *c, const char *key, size_t keylen);

/* The same for the run-once mark of the name (once.c): 0, or EIO (no
 * answer, an unexpected reply; on a quorum, no majority answered), EACCES,
 * EINVAL (a new connection's SELECT refused), ENOMEM. */
int rdl_once_reset(rdlock_client_t *c, const char *key, size_t keylen);

/* The run-once mark of the name (once.c), as rdonce reads it: asked of
 * every server the name lives on (on a quorum a majority must answer, and
 * one master that has the mark means done).  0 with *done and, if done,
 * the mark's runner in *by; or EIO (no usable answer; on a quorum no
 * majority), EACCES, EINVAL, ENOMEM. */
int rdl_once_status(rdlock_client_t *c, const char *key, size_t keylen, int *done, rdlock_party_t *by);

#endif
