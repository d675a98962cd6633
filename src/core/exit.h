/* exit.h - process exit ([lock] release_at_exit): one atexit handler ends
 * the holds of every client of this process, so that waiters elsewhere need
 * not wait for the leases.  Each primitive registers how to end a hold of
 * its kind; this file knows none of them, which is what lets the lock, the
 * semaphore and the waits sit on top of it instead of calling each other
 * at exit. */
#ifndef RDL_EXIT_H
#define RDL_EXIT_H

#include <stdbool.h>
#include <stddef.h>

#include "client/client.h"
#include "core/hold.h"

/* The order in which the stages run at exit: locks, then semaphore
 * permits, then condition registrations and barrier arrivals. */
enum { RDL_EXIT_LOCKS, RDL_EXIT_PERMITS, RDL_EXIT_WAITS, RDL_EXIT_NSTAGES };

typedef struct rdl_exit_ender {
    unsigned stage;      /* RDL_EXIT_* */
    unsigned char kind;  /* the RDL_HOLD_* it ends */
    /* End one hold of that kind, e (a copy: the record may go meanwhile),
     * giving up at deadline (monotonic ms): true if it ended on the
     * server. */
    bool (*end)(rdlock_client_t *c, const rdl_exit_hold_t *e, long long deadline);
    /* The stage's log line when it found n > 0 holds and ended done of
     * them, or NULL for none; the same for every ender of a stage (the
     * first registered one's is used). */
    void (*report)(size_t done, size_t n);
} rdl_exit_ender_t;

/* Register en (static storage) before the first hold of its kind exists,
 * and the atexit handler with it, once per process.  Cheap after the
 * first time (one load), so call it on every acquisition.  Call it only
 * after the client exists: the default client's own exit handler is
 * registered then, and must run after this one (atexit's order). */
void rdl_exit_add(const rdl_exit_ender_t *en);

#endif
