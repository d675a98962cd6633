/* step.h - the request loop every primitive step runs (semaphore,
 * condition variable, barrier): the script through the client's step set
 * (exec.h), the void answers of a stamped step sent again with a fresh
 * clock reading, the reply {status, now, x} read, the server's clock
 * sampled.  The scripts' argument layouts differ (sem.c, prim.c build
 * theirs); what they share is this loop and the reply's shape. */
#ifndef RDL_STEP_H
#define RDL_STEP_H

#include <stddef.h>

#include "client/client.h"
#include "proto/script.h"

/* What a step's script answered: {status, now, x}; x an integer, or a
 * string of at most 20 bytes (then also in str, else str is ""). */
typedef struct rdl_step_reply {
    long long status, now, x;
    char str[21];
} rdl_step_reply_t;

/* One step to run. */
typedef struct rdl_step {
    const char *what;  /* "semaphore", "condition", "barrier": for the log */
    const char *name;  /* the primitive's name: for the log */
    const rdl_script_t *script;
    int nkeys, argc;
    const char *const *argv;
    const size_t *lens;
    int stamp_arg;     /* argv[stamp_arg] is the stamp ... */
    char *stamp;       /* ... rewritten per attempt; NULL: not stamped */
    int hkey;          /* KEYS[hkey + 1] is the holders' hash (a quorum reads it) */
    long long deadline; /* monotonic ms, < 0 none */
    /* in/out: raised to when an unanswered attempt may still act; set to
     * when the attempt that answered was sent (left as is if none went). */
    long long *unsure_until, *sent_at;
} rdl_step_t;

/* Run s: 0 and *out (a void answer of a stamped step, status -2, is sent
 * again with a fresh reading, a few times), or EIO (no answer, a reply
 * that is not {status, now, x}, or the clock keeps voiding it: logged),
 * or what the client's step op returns besides (exec.h): EACCES (refused:
 * authentication, ACL), EINVAL (a new connection's SELECT refused; on a
 * quorum, also nkeys or hkey out of range), ENOMEM. */
int rdl_step_run(rdlock_client_t *c, const rdl_step_t *s, rdl_step_reply_t *out);

#endif
