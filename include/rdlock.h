/*
 * rdlock.h - distributed mutexes and read-write locks on Redis, shaped like
 * pthreads.
 *
 * Every function returns 0 on success or a positive errno value (never -1
 * with errno set), exactly as pthread_mutex_lock(3) does.  On failure the
 * objects passed in are left as they were unless the comment says otherwise.
 *
 * One name is one lock with two modes: rdlock_lock() and rdrwlock_wrlock()
 * take it exclusively, rdrwlock_rdlock() shares it.  A service using
 * rdlock_t, another using rdrwlock_t and a shell script using rdlock(1) on
 * the same name all exclude each other.
 *
 * Thread safety: every function may be called from any thread.  One
 * rdlock_t may be used by many threads; they contend with each other as
 * they contend with other processes.  The owner of a hold is the calling
 * thread of one client.
 */
#ifndef RDLOCK_H
#define RDLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* clockid_t */
#include <time.h>      /* struct timespec: compile with _POSIX_C_SOURCE >= 199309L or gnu/c11 */

#ifdef __cplusplus
extern "C" {
#endif

#define RDLOCK_VERSION_MAJOR 0
#define RDLOCK_VERSION_MINOR 1
#define RDLOCK_VERSION_PATCH 0

#if defined(RDLOCK_BUILDING) && defined(__GNUC__)
#define RDLOCK_API __attribute__((visibility("default")))
#else
#define RDLOCK_API
#endif

/* ------------------------------------------------------------------ */
/* Clients and configuration (docs/CONTRACT.md section 3)              */
/* ------------------------------------------------------------------ */

/* A client owns its Redis connections and one background (watchdog and
 * wake-up) thread.  It is safe to share between threads. */
typedef struct rdlock_client rdlock_client_t;

/* Open a client from the ini file at ini_path; NULL searches $RDLOCK_CONF,
 * then $(sysconfdir)/rdlock.ini, then uses built-in defaults.  Tries to
 * connect once: an unreachable server is not an error unless
 * [lock] fail_fast = yes.
 * Returns 0 and sets *client, or:
 *   EINVAL  client is NULL, or the file has a bad section, key or value
 *           (each reported through the log hook)
 *   ENOENT  the named file (or password_file) does not exist
 *   EACCES  Redis refused authentication, password_file is unreadable, or
 *           the Redis user may not PUBLISH or SUBSCRIBE to the lock
 *           channels (Redis 7 ACL channel permissions: grant
 *           &<key_prefix>*); the log names what is missing
 *   EIO     Redis unreachable and fail_fast = yes
 *   ENOMEM  out of memory
 * On failure *client is left untouched. */
RDLOCK_API int rdlock_client_open(rdlock_client_t **client, const char *ini_path);

/* What a program may want to say about a client in its own messages. */
typedef struct rdlock_client_info {
    char server[300];     /* "host:port", "unix:/path" or "master 'NAME' (via Sentinel)" */
    int fail_fast;        /* [lock] fail_fast: blocking calls return EIO in an outage */
    char last_error[256]; /* why the client's last request to Redis failed, "" if none did */
} rdlock_client_info_t;

/* Fill *info for client (NULL: the process default client, which this
 * creates if needed).  0, or EINVAL (info NULL), or what creating the
 * default client returns (EINVAL, ENOENT, EACCES, EIO, ENOMEM). */
RDLOCK_API int rdlock_client_info(rdlock_client_t *client, rdlock_client_info_t *info);

/* Stop the client's thread, close its connections and free it.
 *   EINVAL  client is NULL, not an open client (closed already), or the
 *           process default client
 *   EBUSY   a lock initialised on this client is not destroyed yet; the
 *           client stays open and usable. */
RDLOCK_API int rdlock_client_close(rdlock_client_t *client);

enum { RDLOCK_LOG_ERROR, RDLOCK_LOG_WARN, RDLOCK_LOG_INFO, RDLOCK_LOG_DEBUG };
typedef void (*rdlock_log_fn)(int level, const char *msg, void *arg);

/* Route the library's log lines to fn (NULL restores the default: one line
 * to stderr for ERROR and WARN).  fn may be called from any thread,
 * including the background thread; it must not call back into rdlock. */
RDLOCK_API void rdlock_set_logger(rdlock_log_fn fn, void *arg);

/* Every code the library returns besides 0, with its meaning: one table
 * that rdlock_strerror() and rdlock_errname() are made from, and that a
 * program may expand for its own tables (XX(code, text); the codes are
 * <errno.h> names).  A code outside it is never returned. */
#define RDLOCK_ERRNO_MAP(XX)                                                                         \
    XX(EINVAL, "invalid argument, name, attribute, deadline or configuration")                       \
    XX(EBUSY, "lock is held (try) or still in use (init, destroy, client close)")                    \
    XX(ETIMEDOUT, "deadline passed while the lock stayed held by others")                            \
    XX(EDEADLK, "the caller already holds this lock")                                                \
    XX(EPERM, "the caller does not hold this lock")                                                  \
    XX(EAGAIN, "recursion or re-entry count would overflow, or no semaphore permit is free")        \
    XX(ENOLCK, "the lease was lost before unlock: the critical section was not protected to its end") \
    XX(EIO, "Redis unreachable, timed out or answered with an error")                                \
    XX(EACCES, "Redis refused access (authentication, ACL), or a file is unreadable")                \
    XX(ENOENT, "configuration file does not exist")                                                  \
    XX(ENOMEM, "out of memory")                                                                      \
    XX(EOWNERDEAD, "previous owner died holding the lock; state may be inconsistent")                \
    XX(ENOTRECOVERABLE, "lock is not recoverable; clear it with rdlock --reset")                     \
    XX(EOVERFLOW, "semaphore value would exceed RDSEM_VALUE_MAX")                                     \
    XX(ENOTSUP, "not supported on this client's topology")

/* Text for every code the library returns ("success" for 0); never NULL. */
RDLOCK_API const char *rdlock_strerror(int code);

/* The <errno.h> name of a code the library returns ("EINVAL"; "0" for 0),
 * for messages and JSON; "unknown" for any other value.  Never NULL. */
RDLOCK_API const char *rdlock_errname(int code);

/* The last error or warning the library logged on the calling thread, in
 * words ("" if none): after a failed call, the reason behind its EIO
 * ("127.0.0.1:6379: connect failed: Connection refused"), EACCES or
 * configuration error, for programs that print their own messages (the
 * log hook sees the same lines).  Copied into buf (n bytes, always
 * NUL-terminated when n > 0); returns one of RDLOCK_ERRSRC_* saying where
 * it came from.  Thread-local: other threads' lines, and the background
 * thread's, do not change it. */
enum {
    RDLOCK_ERRSRC_NONE,   /* nothing logged on this thread yet */
    RDLOCK_ERRSRC_CONFIG, /* the configuration file (or password_file) */
    RDLOCK_ERRSRC_REDIS,  /* the server: connecting, authenticating, answering */
    RDLOCK_ERRSRC_OTHER   /* the library itself (memory, threads, names) */
};
RDLOCK_API int rdlock_last_error(char *buf, size_t n);

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
RDLOCK_API const char *rdlock_version(void);

/* ------------------------------------------------------------------ */
/* Attributes (docs/CONTRACT.md section 4)                             */
/* ------------------------------------------------------------------ */

enum {
    RDLOCK_ERRORCHECK = 2,
    RDLOCK_RECURSIVE = 1,
    /* A distributed self-deadlock is never useful: NORMAL and DEFAULT
     * are error-checking. */
    RDLOCK_NORMAL = RDLOCK_ERRORCHECK,
    RDLOCK_DEFAULT = RDLOCK_ERRORCHECK
};

enum { RDLOCK_STALLED = 0, RDLOCK_ROBUST = 1 };

typedef void (*rdlock_lost_fn)(const char *name, void *arg);

/* Fields are private; the size is ABI. */
typedef struct rdlock_attr {
    unsigned int __magic;
    int __type;
    unsigned int __lease_ms;
    int __watchdog; /* -1 = from config */
    int __robust;
    rdlock_client_t *__client;
    rdlock_lost_fn __lostcb;
    void *__lostarg;
    void *__reserved[4];
} rdlock_attr_t;

/* All return EINVAL for a NULL or uninitialised attribute object or an
 * out-of-range value, leaving it unchanged. */
RDLOCK_API int rdlock_attr_init(rdlock_attr_t *a);
RDLOCK_API int rdlock_attr_destroy(rdlock_attr_t *a);
RDLOCK_API int rdlock_attr_settype(rdlock_attr_t *a, int type);
RDLOCK_API int rdlock_attr_gettype(const rdlock_attr_t *a, int *type);
/* lease_ms: 0 = from config, else 10..86400000. */
RDLOCK_API int rdlock_attr_setlease(rdlock_attr_t *a, unsigned lease_ms);
RDLOCK_API int rdlock_attr_setwatchdog(rdlock_attr_t *a, int enabled);
/* c = NULL: the process default client. */
RDLOCK_API int rdlock_attr_setclient(rdlock_attr_t *a, rdlock_client_t *c);
/* fn runs once, on the client's background thread, when a hold taken with
 * these attributes is found lost. */
RDLOCK_API int rdlock_attr_setlostcb(rdlock_attr_t *a, rdlock_lost_fn fn, void *arg);
/* RDLOCK_STALLED (default) or RDLOCK_ROBUST: an exclusive acquisition
 * (rdlock_*lock, rdrwlock_*wrlock) that takes over a hold that ended by
 * lease expiry or loss rather than unlock returns EOWNERDEAD with the lock
 * held (docs/CONTRACT.md section 5.4). */
RDLOCK_API int rdlock_attr_setrobust(rdlock_attr_t *a, int robust);
RDLOCK_API int rdlock_attr_getrobust(const rdlock_attr_t *a, int *robust);

/* ------------------------------------------------------------------ */
/* Mutex (docs/CONTRACT.md section 5)                                  */
/* ------------------------------------------------------------------ */

/* Fields are private.  The size is ABI because RDLOCK_INITIALIZER puts an
 * rdlock_t in static storage. */
typedef struct rdlock {
    unsigned int __magic;
    const char *__static_name;
    void *__impl;
    void *__reserved[5];
} rdlock_t;

#define RDLOCK__STATIC_MAGIC 0x52444c53u /* "RDLS" */
#define RDLOCK__MAGIC 0x52444c4du        /* "RDLM" */
#define RDRWLOCK__MAGIC 0x52445257u      /* "RDRW" */

/* Static initialisation with the process default client and default
 * attributes; the lock is initialised on first use, safely under races.
 * name must be a string that outlives the lock (a literal). */
#define RDLOCK_INITIALIZER(name) { RDLOCK__STATIC_MAGIC, (name), 0, { 0 } }

/* Names are 1 to 512 bytes, any bytes but NUL.  init does no network I/O.
 *   EINVAL  m or name NULL, name empty or longer than 512 bytes, a not an
 *           initialised attribute object
 *   EBUSY   m is initialised and not destroyed (or a static initialiser
 *           already in use): destroy it first
 *   ENOMEM  out of memory */
RDLOCK_API int rdlock_init(rdlock_t *m, const char *name, const rdlock_attr_t *a);

/*   EINVAL  m NULL or not initialised
 *   EBUSY   a thread of this process holds it through this handle */
RDLOCK_API int rdlock_destroy(rdlock_t *m);

/* Blocks until held.  Returns 0, or:
 *   EOWNERDEAD  robust lock: held, but the previous exclusive hold ended
 *           without unlock; repair, then rdlock_consistent()
 *   ENOTRECOVERABLE  the name was left inconsistent (any process, either
 *           mode): every acquisition fails until rdlock_reset_name()
 *   EINVAL  m not initialised, or the default client's config is bad
 *   EDEADLK the caller holds it already (error-checking type)
 *   EAGAIN  the recursion count would pass 2^31-1
 *   EACCES  Redis refused authentication
 *   EIO     only with [lock] fail_fast = yes: Redis unreachable
 *   ENOMEM  out of memory
 * While Redis is unreachable it reconnects with backoff and keeps waiting. */
RDLOCK_API int rdlock_lock(rdlock_t *m);

/* As rdlock_lock but never waits: EBUSY if another owner holds it (or the
 * caller does, error-checking type); EIO after command_retries. */
RDLOCK_API int rdlock_trylock(rdlock_t *m);

/* As rdlock_lock with an absolute CLOCK_REALTIME deadline: ETIMEDOUT when
 * it passes with the lock held by others, EIO when it passes with Redis
 * unreachable.  A past deadline on a free lock still acquires.  EINVAL if
 * abstime is NULL or tv_nsec is outside [0, 1e9), checked first. */
RDLOCK_API int rdlock_timedlock(rdlock_t *m, const struct timespec *abstime);

/* As rdlock_timedlock on clock CLOCK_REALTIME or CLOCK_MONOTONIC; any
 * other clock is EINVAL. */
RDLOCK_API int rdlock_clocklock(rdlock_t *m, clockid_t clock, const struct timespec *abstime);

/* Release one level of the caller's hold.  Inner unlocks of a recursive
 * hold are local and return 0.  The final one returns:
 *   0       released
 *   ENOLCK  the lease had been lost before this unlock (expired, taken
 *           over or deleted), or the release's answer was lost and the
 *           retry cannot prove that it was this release that ended the
 *           hold: the critical section was not known to be protected to
 *           its end.  The whole local hold is cleared; the lost callback
 *           of a hold the watchdog renews has run, or runs, once.
 *   EPERM   the caller does not hold it (or holds it through rdrwlock_t)
 *   EINVAL  m not initialised
 *   EIO     Redis unreachable after command_retries; the hold stays
 *           recorded and renewed, so unlock may be called again. */
RDLOCK_API int rdlock_unlock(rdlock_t *m);

/* After EOWNERDEAD on a robust lock: the shared state is repaired.  Without
 * it, the unlock makes the lock ENOTRECOVERABLE for every process until
 * rdlock_reset_name() (or `rdlock --reset NAME`).  EINVAL if the lock is
 * not robust, not held by the caller or not inconsistent. */
RDLOCK_API int rdlock_consistent(rdlock_t *m);

/* The fencing token of the caller's hold: strictly increasing across all
 * holders of the name.  EPERM unless the caller holds it; EINVAL for NULL. */
RDLOCK_API int rdlock_fencing_token(rdlock_t *m, uint64_t *token);

/* The caller's recursion depth, 0 if it does not hold it. */
RDLOCK_API int rdlock_holdcount(rdlock_t *m, unsigned *count);

/* Clear every hold, queue mark and the robust state (ENOTRECOVERABLE) of
 * a name, keeping the fencing counter it shares with its slot; what
 * `rdlock --reset NAME` does.
 * Holders find their hold lost (ENOLCK on unlock).  c NULL: the default
 * client.  0, EINVAL (bad name), EIO, EACCES, ENOENT, ENOMEM. */
RDLOCK_API int rdlock_reset_name(rdlock_client_t *c, const char *name);

/* The state of a name as `rdlock --status NAME` shows it. */
enum {
    RDLOCK_STATE_CONSISTENT,     /* the last exclusive hold ended by unlock (or is held now) */
    RDLOCK_STATE_OWNER_DEAD,     /* the last exclusive hold ended by expiry or loss */
    RDLOCK_STATE_INCONSISTENT,   /* handed over with EOWNERDEAD, not made consistent yet */
    RDLOCK_STATE_NOTRECOVERABLE  /* every acquisition fails until rdlock_reset_name() */
};
typedef struct rdlock_party {
    char owner[64];              /* "<client id>:<thread>" */
    long long remaining_ms;      /* of its lease (holder) or queue mark (waiting writer) */
    uint64_t token;              /* holders: fencing token of the hold */
    unsigned count;              /* holders: hold count as last renewed */
    long pid;
    unsigned thread;
    char host[256];
} rdlock_party_t;
typedef struct rdlock_status {
    char mode;                   /* 0 free, 'x' held exclusive, 's' held shared */
    size_t nholders;
    rdlock_party_t *holders;     /* nholders entries */
    size_t nwriters;
    rdlock_party_t *writers;     /* queued writers, first in line first */
    long long readers_waiting;
    uint64_t fence;              /* the slot's fencing counter: at least the
                                    name's last token (lower only just after
                                    an upgrade, until the name's next
                                    acquisition folds in the counter an
                                    earlier version kept for the name) */
    int robust;                  /* RDLOCK_STATE_* */
} rdlock_status_t;

/* A consistent snapshot of a name's state on the server (c NULL: the
 * default client).  0 and *st (free it with rdlock_status_free), or EINVAL
 * (bad name or st NULL), EIO, EACCES, ENOENT, ENOMEM; *st is then empty. */
RDLOCK_API int rdlock_status_name(rdlock_client_t *c, const char *name, rdlock_status_t *st);
/* The state of name on one server of the client's topology: server 0 on
 * a single server, Sentinel or Cluster (the same as rdlock_status_name);
 * on Redlock, master `server` (0 .. N-1) as that master alone sees it.
 * Its address goes into where (n bytes).  0, EINVAL past the last server
 * (so a caller can count them), or as rdlock_status_name. */
RDLOCK_API int rdlock_status_name_on(rdlock_client_t *c, const char *name, unsigned server, char *where, size_t n,
                                     rdlock_status_t *st);
/* Free what rdlock_status_name() allocated; st is left empty (freeing
 * twice is harmless). */
RDLOCK_API void rdlock_status_free(rdlock_status_t *st);

/* The other primitives of a name (docs/CONTRACT.md section 12) as
 * `rdlock --status NAME` shows them: its semaphore, run-once mark,
 * condition variable and barrier.  The caller sets `size` to
 * sizeof(rdlock_kinds_t) before the call: later versions only add fields
 * at the end, and fill no more than `size` bytes. */
typedef struct rdlock_kinds {
    size_t size;                 /* in: sizeof(rdlock_kinds_t) as the caller knows it */
    /* semaphore (rdsem_t) */
    int sem;                     /* 1: the name has one (the sem_* fields apply) */
    int sem_type;                /* RDSEM_PLAIN or RDSEM_LEASED */
    long long sem_value;         /* free permits: what rdsem_getvalue gives */
    long long sem_permits;       /* leased: permits in all (fixed); plain: = sem_value */
    long long sem_held;          /* leased: permits held under a live lease; plain: 0 */
    long long sem_holders;       /* leased: threads holding them; plain: 0 */
    long long sem_waiting;       /* live waiters in line */
    /* run-once (rdonce_t) */
    int once;                    /* 1: the name is marked done */
    rdlock_party_t once_by;      /* who ran it: owner, pid, thread, host (the rest 0) */
    /* condition variable (rdcond_t) */
    int cond;                    /* 1: the name has one (the cond_* fields apply) */
    long long cond_waiters;      /* live registrations not woken yet */
    long long cond_woken;        /* live registrations woken, their waiters not back yet */
    uint64_t cond_registrations; /* registrations numbered so far */
    /* barrier (rdbarrier_t) */
    int barrier;                 /* 1: the name has one (the barrier_* fields apply) */
    unsigned barrier_count;
    unsigned barrier_arrived;    /* live arrivals in the current generation */
    uint64_t barrier_generation; /* the current generation, from 1 */
} rdlock_kinds_t;

/* A consistent snapshot of the other primitives of name on the server
 * (c NULL: the default client), read without changing anything; a kind
 * the name does not have is reported absent (0) with its fields 0.  On a
 * Redlock quorum each kind is read from the master with its newest state,
 * and the run-once mark is done if one master of a majority that answered
 * has it.  0 and *k (nothing to free), or EINVAL
 * (bad name, k NULL, k->size too small), EIO, EACCES, ENOENT, ENOMEM. */
RDLOCK_API int rdlock_status_kinds(rdlock_client_t *c, const char *name, rdlock_kinds_t *k);

/* ------------------------------------------------------------------ */
/* Read-write lock (docs/CONTRACT.md section 6)                        */
/* ------------------------------------------------------------------ */

/* The same lock as the mutex of that name: wrlock is its exclusive mode,
 * rdlock its shared mode.  Any number of readers (threads, processes,
 * hosts) or one writer; writer preference: once a writer waits, new
 * readers wait behind it, but a thread that holds a read share may take it
 * again.  Each reader's share has its own lease, renewed by the watchdog.
 * The attribute's type (recursive) applies to mutexes only. */
typedef struct rdrwlock {
    unsigned int __magic;
    const char *__static_name;
    void *__impl;
    void *__reserved[5];
} rdrwlock_t;

#define RDRWLOCK__STATIC_MAGIC 0x52445253u /* "RDRS" */
#define RDRWLOCK_INITIALIZER(name) { RDRWLOCK__STATIC_MAGIC, (name), 0, { 0 } }

/* As rdlock_init / rdlock_destroy. */
RDLOCK_API int rdrwlock_init(rdrwlock_t *rw, const char *name, const rdlock_attr_t *a);
RDLOCK_API int rdrwlock_destroy(rdrwlock_t *rw);

/* Shared mode.  Returns 0 (a thread that holds a share already counts up),
 * or EDEADLK if the caller holds it for writing, EAGAIN past 2^31-1
 * re-entries, and the codes of rdlock_lock.  tryrdlock: EBUSY if a writer
 * holds it or waits (or the caller holds it for writing). */
RDLOCK_API int rdrwlock_rdlock(rdrwlock_t *rw);
RDLOCK_API int rdrwlock_tryrdlock(rdrwlock_t *rw);
RDLOCK_API int rdrwlock_timedrdlock(rdrwlock_t *rw, const struct timespec *abstime);
RDLOCK_API int rdrwlock_clockrdlock(rdrwlock_t *rw, clockid_t clock, const struct timespec *abstime);

/* Exclusive mode: EDEADLK if the caller holds it in either mode (trywrlock:
 * EBUSY), else as rdlock_lock / trylock / timedlock / clocklock. */
RDLOCK_API int rdrwlock_wrlock(rdrwlock_t *rw);
RDLOCK_API int rdrwlock_trywrlock(rdrwlock_t *rw);
RDLOCK_API int rdrwlock_timedwrlock(rdrwlock_t *rw, const struct timespec *abstime);
RDLOCK_API int rdrwlock_clockwrlock(rdrwlock_t *rw, clockid_t clock, const struct timespec *abstime);

/* Release one level of the caller's read or write hold: 0, ENOLCK (the
 * lease of this share or write hold was lost), EPERM (not held through an
 * rdrwlock_t), EINVAL, EIO (still held; may be retried). */
RDLOCK_API int rdrwlock_unlock(rdrwlock_t *rw);

/* The fencing token of the caller's hold (readers take tokens too). */
RDLOCK_API int rdrwlock_fencing_token(rdrwlock_t *rw, uint64_t *token);

/* As rdlock_consistent, for a write hold taken with EOWNERDEAD through a
 * robust rdrwlock_t (an extension of POSIX, which has no robust rwlocks:
 * docs/CONTRACT.md section 5.4). */
RDLOCK_API int rdrwlock_consistent(rdrwlock_t *rw);

/* ------------------------------------------------------------------ */
/* Semaphores (docs/CONTRACT.md section 12)                            */
/* ------------------------------------------------------------------ */

/* A counting semaphore shared by every process that uses its name, shaped
 * like sem_t.  Two types:
 *   RDSEM_PLAIN   POSIX: the value is a count; any thread may post.
 *   RDSEM_LEASED  each permit a wait takes belongs to the calling thread
 *                 and carries a lease that the client's watchdog renews;
 *                 the thread gives it back with rdsem_post (EPERM if it
 *                 holds none), or it comes back by itself when the lease
 *                 ends (the holder crashed): a crash-safe limiter.
 * The name's state lives on the server from the first rdsem_init that
 * reaches it and stays after rdsem_destroy (rdlock_reset_name removes
 * it).  Semaphore keys do not clash with the lock of the same name. */
enum { RDSEM_PLAIN = 0, RDSEM_LEASED = 1 };
#define RDSEM_VALUE_MAX 2147483647 /* as SEM_VALUE_MAX: 2^31 - 1 */

/* Fields are private; the size is ABI. */
typedef struct rdsem_attr {
    unsigned int __magic;
    int __type;
    unsigned int __lease_ms;
    rdlock_client_t *__client;
    void *__reserved[4];
} rdsem_attr_t;

/* All return EINVAL for a NULL or uninitialised attribute object or an
 * out-of-range value, leaving it unchanged. */
RDLOCK_API int rdsem_attr_init(rdsem_attr_t *a);
RDLOCK_API int rdsem_attr_destroy(rdsem_attr_t *a);
/* RDSEM_PLAIN (default) or RDSEM_LEASED. */
RDLOCK_API int rdsem_attr_settype(rdsem_attr_t *a, int type);
RDLOCK_API int rdsem_attr_gettype(const rdsem_attr_t *a, int *type);
/* The lease of a leased permit (and of a waiter's queue mark): 0 = the
 * client's [lock] lease_ms, else 10..86400000. */
RDLOCK_API int rdsem_attr_setlease(rdsem_attr_t *a, unsigned lease_ms);
/* c = NULL: the process default client. */
RDLOCK_API int rdsem_attr_setclient(rdsem_attr_t *a, rdlock_client_t *c);

/* Fields are private; the size is ABI. */
typedef struct rdsem {
    unsigned int __magic;
    const char *__static_name;
    void *__impl;
    void *__reserved[5];
} rdsem_t;

#define RDSEM__MAGIC 0x5244534du /* "RDSM" */

/* Set up sem for the semaphore `name` (1 to 512 bytes) with attributes a
 * (NULL: plain, default client).  Unlike rdlock_init it talks to the
 * server: the name gets the type and `value` if it does not exist yet (an
 * existing name keeps its value).  Returns 0, or:
 *   EINVAL  sem or name NULL, bad name, value > RDSEM_VALUE_MAX, a not an
 *           initialised attribute object, or the name exists on the
 *           server as a semaphore of the other type (logged)
 *   EBUSY   sem is initialised and not destroyed
 *   EIO     the server could not be reached (after command_retries)
 *   EACCES, ENOENT  as rdlock_client_open, for the default client
 *   ENOMEM  out of memory */
RDLOCK_API int rdsem_init(rdsem_t *sem, const char *name, unsigned value, const rdsem_attr_t *a);

/* Forget the local handle; the name's state stays on the server.
 *   EINVAL  sem NULL or not initialised
 *   EBUSY   a thread of this process holds leased permits through it */
RDLOCK_API int rdsem_destroy(rdsem_t *sem);

/* Take one permit, waiting (in arrival order, woken through pub/sub) until
 * one is free.  0, or EINVAL (sem not initialised, or the name is now a
 * semaphore of the other type), EACCES, ENOMEM, and EIO only with
 * [lock] fail_fast = yes: otherwise it waits through an outage. */
RDLOCK_API int rdsem_wait(rdsem_t *sem);
/* As rdsem_wait without waiting: EAGAIN if no permit is free now; EIO
 * after command_retries. */
RDLOCK_API int rdsem_trywait(rdsem_t *sem);
/* As rdsem_wait with an absolute CLOCK_REALTIME deadline: ETIMEDOUT when
 * it passes with no permit free, EIO when it passes with Redis
 * unreachable; EINVAL if abstime is NULL or tv_nsec is outside [0, 1e9),
 * checked first.  A past deadline still takes a permit that is free. */
RDLOCK_API int rdsem_timedwait(rdsem_t *sem, const struct timespec *abstime);
/* As rdsem_timedwait on CLOCK_REALTIME or CLOCK_MONOTONIC (EINVAL for
 * any other clock), like sem_clockwait. */
RDLOCK_API int rdsem_clockwait(rdsem_t *sem, clockid_t clock, const struct timespec *abstime);

/* Give one permit back and wake a waiter.  0, or:
 *   EOVERFLOW  plain: the value would pass RDSEM_VALUE_MAX
 *   EPERM   leased: the calling thread holds no permit of it
 *   ENOLCK  leased: the caller's permits had been lost (their lease ran
 *           out, or the name was reset); they came back to the semaphore
 *           by themselves, and the caller holds none now
 *   EINVAL  sem not initialised
 *   EIO     Redis unreachable after command_retries: not known whether
 *           the post took effect (leased: the permit stays recorded and
 *           renewed) */
RDLOCK_API int rdsem_post(rdsem_t *sem);

/* The number of free permits now, in *sval (never negative).  0, EINVAL
 * (sval NULL, sem not initialised), EIO. */
RDLOCK_API int rdsem_getvalue(rdsem_t *sem, int *sval);

/* ------------------------------------------------------------------ */
/* Condition variables (docs/CONTRACT.md section 12)                   */
/* ------------------------------------------------------------------ */

/* A condition variable shared by every process that uses its name,
 * shaped like pthread_cond_t and used with an rdlock_t (which may be on
 * another client).  A wait registers the caller on the server before it
 * releases the lock, so a signal sent after that release is never lost;
 * the registration carries a lease that the client's watchdog renews, so
 * a waiter whose process died is dropped when the lease ends, and a
 * signal never stays with it.  Signals wake the oldest live waiter first.
 * The name's state lives on the server from the first rdcond_init that
 * reaches it and stays after rdcond_destroy (rdlock_reset_name removes
 * it).  Condition keys do not clash with the lock of the same name. */

/* Fields are private; the size is ABI. */
typedef struct rdcond_attr {
    unsigned int __magic;
    unsigned int __lease_ms;
    rdlock_client_t *__client;
    void *__reserved[4];
} rdcond_attr_t;

/* All return EINVAL for a NULL or uninitialised attribute object or an
 * out-of-range value, leaving it unchanged. */
RDLOCK_API int rdcond_attr_init(rdcond_attr_t *a);
RDLOCK_API int rdcond_attr_destroy(rdcond_attr_t *a);
/* The lease of a waiter's registration: 0 = the client's [lock]
 * lease_ms, else 10..86400000. */
RDLOCK_API int rdcond_attr_setlease(rdcond_attr_t *a, unsigned lease_ms);
/* c = NULL: the process default client. */
RDLOCK_API int rdcond_attr_setclient(rdcond_attr_t *a, rdlock_client_t *c);

/* Fields are private; the size is ABI. */
typedef struct rdcond {
    unsigned int __magic;
    const char *__static_name;
    void *__impl;
    void *__reserved[5];
} rdcond_t;

#define RDCOND__MAGIC 0x5244434eu /* "RDCN" */

/* Set up cond for the condition `name` (1 to 512 bytes) with attributes a
 * (NULL: default client and lease).  Talks to the server: the name's
 * state is created if it does not exist.  Returns 0, or:
 *   EINVAL  cond or name NULL, bad name, a not an initialised attribute
 *           object
 *   EBUSY   cond is initialised and not destroyed
 *   EIO     the server could not be reached (after command_retries)
 *   EACCES, ENOENT  as rdlock_client_open, for the default client
 *   ENOMEM  out of memory */
RDLOCK_API int rdcond_init(rdcond_t *cond, const char *name, const rdcond_attr_t *a);

/* Forget the local handle; the name's state stays on the server.
 *   EINVAL  cond NULL or not initialised
 *   EBUSY   a thread of this process is waiting on it */
RDLOCK_API int rdcond_destroy(rdcond_t *cond);

/* Release lock (held by the calling thread through this rdlock_t, all its
 * recursion levels), wait until signalled, and take lock again (as many
 * levels) before returning, whatever the result.  A wait may end without
 * a signal (a spurious wake-up): check the predicate in a loop, as with
 * pthread_cond_wait.  Returns 0, or:
 *   EPERM   the calling thread does not hold lock (nothing is done)
 *   ENOLCK  the lock's hold had been lost before the wait released it:
 *           the critical section was not protected to its end; the wait
 *           ends at once, with the lock held again
 *   EOWNERDEAD  lock is robust and its previous holder died: held, as
 *           rdlock_lock
 *   EINVAL  cond or lock not initialised
 *   EIO     only with [lock] fail_fast = yes; the lock is then held if it
 *           could be taken again (otherwise the error of rdlock_lock) */
RDLOCK_API int rdcond_wait(rdcond_t *cond, rdlock_t *lock);
/* As rdcond_wait with an absolute CLOCK_REALTIME deadline: ETIMEDOUT when
 * it passes unsignalled (the lock is held again all the same; a signal
 * that came at the last moment gives 0 instead); EINVAL if abstime is
 * NULL or tv_nsec is outside [0, 1e9), checked first. */
RDLOCK_API int rdcond_timedwait(rdcond_t *cond, rdlock_t *lock, const struct timespec *abstime);
/* As rdcond_timedwait on CLOCK_REALTIME or CLOCK_MONOTONIC (EINVAL for
 * any other clock), like pthread_cond_clockwait. */
RDLOCK_API int rdcond_clockwait(rdcond_t *cond, rdlock_t *lock, clockid_t clock, const struct timespec *abstime);

/* Wake at least one waiter registered before the call (signal: the
 * oldest live one), or every one of them (broadcast).  No waiter: nothing
 * happens.  Need not hold the lock (POSIX).  0, or EINVAL (not
 * initialised), EIO (Redis unreachable after command_retries: not known
 * whether it took effect). */
RDLOCK_API int rdcond_signal(rdcond_t *cond);
RDLOCK_API int rdcond_broadcast(rdcond_t *cond);

/* ------------------------------------------------------------------ */
/* Barriers (docs/CONTRACT.md section 12)                              */
/* ------------------------------------------------------------------ */

/* A barrier shared by every process that uses its name, shaped like
 * pthread_barrier_t: each generation releases its waiters when `count`
 * have arrived.  An arrival carries a lease that the watchdog renews
 * while its thread waits: if its process dies, the arrival is dropped
 * when the lease ends, the others' timed waits time out, and the barrier
 * serves the next generation whole. */
#define RDBARRIER_SERIAL_THREAD (-1) /* as PTHREAD_BARRIER_SERIAL_THREAD */
#define RDBARRIER_COUNT_MAX 2147483647u

/* Fields are private; the size is ABI. */
typedef struct rdbarrier {
    unsigned int __magic;
    const char *__static_name;
    void *__impl;
    void *__reserved[5];
} rdbarrier_t;

#define RDBARRIER__MAGIC 0x52444252u /* "RDBR" */

/* Set up b for the barrier `name` with `count` (1..RDBARRIER_COUNT_MAX)
 * participants per generation; a's client and lease are used (its type,
 * robustness and watchdog are not); NULL: the defaults.  Talks to the
 * server: the name gets the count if it does not exist yet.  0, or:
 *   EINVAL  b or name NULL, bad name, count 0 or too big, a not an
 *           initialised attribute object, or the name exists on the
 *           server with another count (logged)
 *   EBUSY   b is initialised and not destroyed
 *   EIO, EACCES, ENOENT, ENOMEM  as rdcond_init */
RDLOCK_API int rdbarrier_init(rdbarrier_t *b, const char *name, unsigned count, const rdlock_attr_t *a);
/* Forget the local handle; the name's state stays on the server.  EINVAL
 * (not initialised), EBUSY (a thread of this process waits on it), 0. */
RDLOCK_API int rdbarrier_destroy(rdbarrier_t *b);

/* Arrive and wait until `count` have arrived in this generation.  Returns
 * RDBARRIER_SERIAL_THREAD to exactly one caller of each generation (the
 * one that completed it) and 0 to the others, or EINVAL (not
 * initialised), EACCES, ENOMEM, and EIO only with [lock] fail_fast = yes:
 * otherwise it waits through an outage. */
RDLOCK_API int rdbarrier_wait(rdbarrier_t *b);
/* As rdbarrier_wait with an absolute CLOCK_REALTIME deadline (an
 * extension: POSIX barriers have none): ETIMEDOUT when it passes before
 * the generation completes; the arrival is then withdrawn, so the
 * generation still needs `count` others.  EINVAL if abstime is NULL or
 * tv_nsec is outside [0, 1e9), checked first. */
RDLOCK_API int rdbarrier_timedwait(rdbarrier_t *b, const struct timespec *abstime);

/* ------------------------------------------------------------------ */
/* Run-once (docs/CONTRACT.md section 12)                              */
/* ------------------------------------------------------------------ */

/* pthread_once across hosts: of all the callers of rdonce() for a name,
 * in every process, one runs the function, once and for all (a persistent
 * "done" mark records it); the others wait until it has returned.  If the
 * runner dies inside the function, its lease lapses and a waiter runs it.
 * The run holds the lock of the same name (rdlock(1) --status NAME shows
 * the runner).  Fields are private; the size is ABI. */
typedef struct rdonce {
    unsigned int __magic;
    const char *__static_name;
    void *__impl;
    int __done;
    void *__reserved[4];
} rdonce_t;

#define RDONCE__STATIC_MAGIC 0x52444f53u /* "RDOS" */
#define RDONCE__MAGIC 0x52444f4eu        /* "RDON" */
/* With the process default client; name must outlive once (a literal). */
#define RDONCE_INITIALIZER(name) { RDONCE__STATIC_MAGIC, (name), 0, 0, { 0 } }

/* For another client or lease: a's client and lease are used (its type,
 * robustness and watchdog are not).  Does no network I/O.  EINVAL, EBUSY,
 * ENOMEM as rdlock_init. */
RDLOCK_API int rdonce_init(rdonce_t *once, const char *name, const rdlock_attr_t *a);
/* EINVAL (not initialised), EBUSY (a thread of this process is running
 * its function), else 0. */
RDLOCK_API int rdonce_destroy(rdonce_t *once);

/* Run init_routine unless some process ran it to its end for this name
 * already; wait while another one runs it.  0 when it has been run (by
 * this call or another), or:
 *   EINVAL  once or init_routine NULL, once not initialised
 *   EDEADLK called again for the same name from inside init_routine
 *   ENOLCK  init_routine ran and returned, and the name is marked done,
 *           but the lease of the run was lost meanwhile: another process
 *           may have run it at the same time
 *   EIO     only with [lock] fail_fast = yes: Redis unreachable
 *   EACCES, ENOENT, ENOMEM  as rdlock_lock
 * Like rdlock_lock it waits through an outage. */
RDLOCK_API int rdonce(rdonce_t *once, void (*init_routine)(void));

#ifdef __cplusplus
}
#endif
#endif /* RDLOCK_H */
