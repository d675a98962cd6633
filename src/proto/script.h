/* script.h - the embedded Lua scripts (src/scripts/NAME.lua), each called with
 * EVALSHA and re-sent with EVAL when the server answers NOSCRIPT (after a
 * restart or SCRIPT FLUSH). */
#ifndef RDL_SCRIPT_H
#define RDL_SCRIPT_H

typedef struct rdl_script {
    const char *name;
    const char *sha;  /* 40 hex digits */
    const char *body;
} rdl_script_t;

/* One set of the scripts; a client uses the set its topology chooses
 * (client.h: c->scripts). */
typedef struct rdl_scripts {
    const rdl_script_t *acquire;
    const rdl_script_t *release;
    const rdl_script_t *renew;
    const rdl_script_t *reset;
    const rdl_script_t *status;
    const rdl_script_t *sem;  /* every step of a semaphore (sem.c) */
    const rdl_script_t *once; /* the done mark of rdonce (once.c) */
    const rdl_script_t *fence; /* raise a fencing counter (Redlock: lock_quorum.c) */
    const rdl_script_t *cond; /* every step of a condition variable (cond.c) */
    const rdl_script_t *barrier; /* every step of a barrier (barrier.c) */
    const rdl_script_t *kinds; /* read the other primitives of a name (admin.c) */
    const rdl_script_t *pstep; /* a primitive's step on a Redlock quorum (prim_quorum.c) */
} rdl_scripts_t;

/* The keys acquire.lua and release.lua take (lock_keys.h says which): the
 * lock's own, the record of the last release, the caller's grant list and
 * its finished-call mark.  A property of the scripts, so both the lock
 * (lock.c) and its Redlock steps (lock_quorum.c) take it from here. */
#define RDL_LOCK_NKEYS_CALL 10

/* As written: wake-ups with PUBLISH. */
extern const rdl_scripts_t rdl_scripts_plain;
/* For Redis Cluster: wake-ups with SPUBLISH, heard on the shard channel
 * of the lock's own slot (SSUBSCRIBE), not broadcast to every node. */
extern const rdl_scripts_t rdl_scripts_sharded;

#endif
