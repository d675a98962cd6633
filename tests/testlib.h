/* testlib.h - helpers the CUnit suites (tests/test_*.c) share.
 *
 * Each suite used to carry its own copy of these: how to build a deadline,
 * look at a lock's keys in Redis, set up a lock on a client, open and close
 * clients, run a forked child, record lost callbacks.  The copies had
 * drifted apart in small ways (default values, what they printed), so that
 * a reader had to check each one.  Here each concept is written once; a
 * suite keeps only the helpers that are about what it tests.
 *
 * Kept apart from the neighbours on purpose:
 *   fixture.h   the private redis-server (also used by bench/ and torture/)
 *   testutil.h  CUnit runner glue, assertions, fork/wait, the pipe protocol
 *               (header only, its statics per file)
 *   testlib.h   this: plain functions, linked into every test program that
 *               uses librdlock (not test_config, which links src/base/config.c
 *               instead of the library)
 *
 * Unless a comment says otherwise, nothing here calls CUnit: helpers return
 * what they saw and the suite asserts, so that a failure points at the
 * test's own line.  Helpers that talk to Redis take the connection to use
 * (the suite's plain connection, or one of a child's own); the "_on"
 * variants take a server and use a fresh connection for one command, for
 * suites whose servers restart, drop connections or count them.  On error
 * they print why to stderr and return a value no successful call returns,
 * as documented for each. */
#ifndef RDT_TESTLIB_H
#define RDT_TESTLIB_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <rdlock.h>

#include "fixture.h"
#include "testutil.h" /* rdt_pipe_t; its per-file statics serve rdt_main, which only a suite calls */

/* ------------------------------------------------------------------ */
/* 1. time                                                             */
/* ------------------------------------------------------------------ */

/* The absolute time ms from now on clock clk (CLOCK_REALTIME for
 * rdlock_timedlock, CLOCK_MONOTONIC for rdlock_clocklock and for condition
 * variables set to it).  ms may be negative, for deadlines in the past; a
 * time before the clock's epoch is clamped to 0, so the result is always a
 * valid timespec (tv_nsec in range): tests of past deadlines test the
 * library, not an invalid argument.
 *
 * (Sleeping is rdt__nap_ms() in testutil.h; it lets wall time pass, for
 * leases or pacing, and is never used as synchronisation.) */
struct timespec rdt_abstime(clockid_t clk, long long ms);

/* ------------------------------------------------------------------ */
/* 2. lock keys                                                        */
/* ------------------------------------------------------------------ */

/* "rdlock:{name}<suffix>", the keys of lock name under the default
 * key_prefix (src/scripts/acquire.lua): suffix "" is the lock hash, then
 * ":w" (writers' queue), ":wq" (queue marks), ":r", ":c" (wake-up
 * channel), ":x" (robust marker), ":fence" (the name's own counter of
 * earlier versions).  The result is in one of 4 static buffers used in
 * turn: valid until the 4th next call, so copy it to keep it longer.  Main
 * thread (or a forked child) only. */
const char *rdt_key(const char *name, const char *suffix);

/* "<prefix>{<tag>}:tokens", the fencing counter that name shares with the
 * other names of its Cluster slot (src/proto/slottag.h), prefix NULL for
 * the default "rdlock:".  The tag is found here by the rule itself (the
 * first of the strings of 1 to 3 characters of [0-9a-zA-Z], shortest
 * first, in that order, in the slot), not by the library's table, so the
 * tests check the table too.  Buffers as rdt_key's. */
const char *rdt_fence_key(const char *prefix, const char *name);

/* ------------------------------------------------------------------ */
/* 3. Redis state, on a connection the caller owns                     */
/* ------------------------------------------------------------------ */

/* Reply decoding.  Both free r (NULL is fine), so that
 * rdt_reply_int(redisCommand(c, ...), -1) is a whole look.
 *   rdt_reply_int: the integer, else dflt (silently: the caller may expect
 *                  an error reply, e.g. of a script).
 *   rdt_reply_str: a string copied into buf (truncated to n-1 bytes): 1;
 *                  nil: 0; anything else: -1; buf is "" unless 1. */
long long rdt_reply_int(redisReply *r, long long dflt);
int rdt_reply_str(redisReply *r, char *buf, size_t n);

/* A command with an integer reply (hiredis format: %s, %b, %d ...); dflt
 * if it fails or the reply is not an integer (printed with the reason).
 * c may be NULL (a connection that could not be made): dflt. */
long long rdt_int_cmd(redisContext *c, long long dflt, const char *fmt, ...);
long long rdt_int_vcmd(redisContext *c, long long dflt, const char *fmt, va_list ap);

/* The usual looks, each with the error value every suite used for it. */
int rdt_exists(redisContext *c, const char *key);     /* EXISTS: 1, 0; -1 error */
long long rdt_zcard(redisContext *c, const char *key); /* ZCARD; -1 error */
long long rdt_pttl(redisContext *c, const char *key);  /* PTTL (-2 none, -1 no expiry); -100 error */

/* GET key as a decimal integer: the value; -1 if missing; -2 on error or a
 * value that is not a whole number (fencing counters, test counters). */
long long rdt_get_ll(redisContext *c, const char *key);

/* GET key / HGET key field into buf: 1 found, 0 missing, -1 error (buf ""). */
int rdt_get_str(redisContext *c, const char *key, char *buf, size_t n);
int rdt_hget(redisContext *c, const char *key, const char *field, char *buf, size_t n);

/* The server's clock (TIME) in ms, -1 on error: holder deadlines and queue
 * scores are in it, not in this host's. */
long long rdt_server_ms(redisContext *c);

/* One look at lock hash key (HGETALL).  Returns the number of holders:
 * every field but the mode field 'm' and except (NULL: none); -1 on error
 * (printed).  A holder's field is its owner id, its value
 * "<deadline>;<token>;<count>;<pid>;<thread>;<call>;<host>" (acquire.lua).
 * Each output may be NULL:
 *   *mode      first character of 'm' ('x' exclusive, 's' shared), '\0' if none
 *   field, fn  the owner id of the first holder; with pid > 0, of the holder
 *              whose <pid> field is pid (the last one if several); "" if
 *              none
 *   *deadline  that holder's deadline in server ms, -1 if none
 * One function for what test_regress, test_rwlock, test_watchdog and
 * test_client each parsed on their own; it is the superset of the four. */
int rdt_holders(redisContext *c, const char *key, const char *except, long pid, char *mode, char *field,
                size_t fn, long long *deadline);

/* Bounded polls of the real state, for the tests that wait for the server
 * rather than for a reply: until key is gone (a lease ran out), or until
 * ZCARD key >= n (n waiters queued).  1 when it happened, 0 after
 * timeout_ms (printed).  Short naps between looks are pacing, not
 * synchronisation. */
int rdt_wait_gone(redisContext *c, const char *key, int timeout_ms);
int rdt_wait_zcard(redisContext *c, const char *key, long long n, int timeout_ms);
/* ... or until at least n clients are blocked on the server (INFO clients
 * blocked_clients): queued writers waiting in BLPOP for their hand-over
 * (src/prim/handover.h). */
int rdt_wait_blocked(redisContext *c, long long n, int timeout_ms);
/* Clients blocked on the server now (INFO clients), -1 on error. */
long long rdt_blocked_clients(redisContext *c);

/* ------------------------------------------------------------------ */
/* 4. one command on a fresh connection                                */
/* ------------------------------------------------------------------ */

/* For suites whose servers restart, get paused or drop every connection
 * (CLIENT KILL), and that count connections: a new plain connection to s
 * per command (rdt_connect: TCP, authenticated), SELECT db first when db
 * is not 0, closed before returning.
 *   rdt_cmd_on / rdt_vcmd_on: the reply (the caller frees it), or NULL
 *                             (printed)
 *   rdt_int_on:               an integer reply, else -1000 (printed), a
 *                             value no command these tests send returns
 *   rdt_holders_on:           rdt_holders() on key, with no except, mode or
 *                             pid */
redisReply *rdt_cmd_on(const rdt_server_t *s, const char *fmt, ...);
redisReply *rdt_vcmd_on(const rdt_server_t *s, int db, const char *fmt, va_list ap);
long long rdt_int_on(const rdt_server_t *s, int db, const char *fmt, ...);
int rdt_holders_on(const rdt_server_t *s, const char *key, char *field, size_t fn, long long *deadline);

/* ------------------------------------------------------------------ */
/* 5. lock set-up                                                      */
/* ------------------------------------------------------------------ */

/* The attributes a test gives a lock.  Every suite set them through its
 * own chain of rdlock_attr_set*() calls with the same conventions, which
 * this keeps: a zero field leaves the attribute at its default (the
 * config file's value for lease and type, no lost callback), except
 * watchdog, where 0 means off and < 0 means from the config file.  Start
 * from RDT_LOCKOPTS(c) so that watchdog is -1. */
typedef struct rdt_lockopts {
    rdlock_client_t *client; /* NULL: the process default client */
    int robust;              /* RDLOCK_STALLED (0, the default) or RDLOCK_ROBUST */
    int type;                /* 0: default (RDLOCK_ERRORCHECK), or RDLOCK_RECURSIVE ... */
    unsigned lease;          /* ms; 0: from config */
    int watchdog;            /* 1 on, 0 off, < 0: from config */
    rdlock_lost_fn lostcb;   /* NULL: none */
    void *lostarg;
} rdt_lockopts_t;

#define RDT_LOCKOPTS(c) { (c), RDLOCK_STALLED, 0, 0, -1, NULL, NULL }

/* rdlock_attr_init(a), then a setter for each field that is not its
 * default; the first error code, or 0.  The caller destroys a either way
 * (as rdlock_attr_destroy on a failed init is a harmless EINVAL). */
int rdt_attr_make(rdlock_attr_t *a, const rdt_lockopts_t *o);

/* rdlock_init / rdrwlock_init with those attributes (made and destroyed
 * here): 0 or the first error code. */
int rdt_mutex_init(rdlock_t *m, const char *name, const rdt_lockopts_t *o);
int rdt_rwlock_init(rdrwlock_t *rw, const char *name, const rdt_lockopts_t *o);

/* The commonest cases: on client c, type (0: default) for the mutex,
 * everything else from the config. */
int rdt_mutex_on(rdlock_t *m, const char *name, rdlock_client_t *c, int type);
int rdt_rwlock_on(rdrwlock_t *rw, const char *name, rdlock_client_t *c);

/* The fencing token of the caller's hold, or 0 if the call fails (tokens
 * start at 1, so 0 never passes a "greater than" check). */
uint64_t rdt_mutex_token(rdlock_t *m);
uint64_t rdt_rwlock_token(rdrwlock_t *rw);

/* ------------------------------------------------------------------ */
/* 6. the suite's server and clients                                   */
/* ------------------------------------------------------------------ */

/* Suite set-up and teardown (CUnit suite init/cleanup: no assertions).
 * rdt_suite_start starts the suite's server and, when rc is not NULL,
 * opens *rc, the plain connection the suite checks state with: 0 or -1
 * (printed by the fixture).  rdt_suite_stop frees *rc (rc may be NULL)
 * and stops the server. */
int rdt_suite_start(rdt_server_t *s, redisContext **rc);
void rdt_suite_stop(rdt_server_t *s, redisContext **rc);

/* rdt_write_ini() and a copy of its path into out (rdt_write_ini returns
 * a slot that later calls reuse): 0, or -1 if it failed or does not fit. */
int rdt_ini_copy(const rdt_server_t *s, int use_socket, const char *extra_ini, char *out, size_t n);

/* Teardown of the suite's own clients: rdlock_client_close() each
 * non-NULL *c of the NULL-terminated list of rdlock_client_t ** and set it
 * to NULL, so that a second teardown is harmless.  0, or -1 if a close
 * failed (printed). */
int rdt_close_clients(rdlock_client_t **c, ...) __attribute__((sentinel));

/* In a test (these call CUnit): a client on s (TCP) with extra_ini added
 * to the file, failing the test fatally when it cannot be opened; and
 * rdlock_client_close() asserted to be 0 (c may be NULL: nothing). */
rdlock_client_t *rdt_open_client(const rdt_server_t *s, const char *extra_ini);
void rdt_close_client(rdlock_client_t *c);

/* ------------------------------------------------------------------ */
/* 7. forked children                                                  */
/* ------------------------------------------------------------------ */

/* Run fn(arg) in a forked child and return fn's result as the child
 * reported it through a pipe, or -1 if it reported nothing within
 * timeout_ms, -2 if it then died by a signal or hung.  Not its exit status
 * alone: under valgrind a forked child's exit status also counts the
 * memory it inherited from the parent's threads as leaked.  A mismatch
 * between the two is printed. */
int rdt_run_child(int (*fn)(void *), void *arg, int timeout_ms);

/* A child driven over the line protocol of testutil.h:
 * rdt_pipe_open(p), rdt_fork(fn, arg), rdt_pipe_parent(p).  The child's
 * pid, or -1 with p closed again (printed).  fn gets arg and usually
 * starts with rdt_child_begin() on the same pipes.  (A child that makes
 * lock calls on command is an actor, section 11.) */
pid_t rdt_spawn(rdt_pipe_t *p, int (*fn)(void *), void *arg);

/* In such a child: close the parent's ends of p and, on Linux, have the
 * kernel SIGKILL the child when the parent dies, so that an actor never
 * outlives a test program that crashed or timed out while it held a lock. */
void rdt_child_begin(rdt_pipe_t *p);

/* In the parent: read the child's next line (at most timeout_ms) and
 * check that it is want, e.g. the "ready" an actor sends once it is set up.
 * 0 if so; else -1, printing who, what came instead and want. */
int rdt_expect_line(rdt_pipe_t *p, const char *want, int timeout_ms, const char *who);

/* ------------------------------------------------------------------ */
/* 8. lost callbacks                                                   */
/* ------------------------------------------------------------------ */

/* A recorder for the rdlock_lost_fn callback, which runs on a client's
 * background thread: the tests wait for it with a deadline (a condition
 * variable on CLOCK_MONOTONIC, no polling) and then look at what it saw.
 * Pass rdt_lost_cb with the recorder as its arg; rdt_lost_init() once per
 * recorder, from the test's main thread, before it is used. */
typedef struct rdt_lostrec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;              /* calls so far */
    char name[600];         /* the lock name of the first call */
    void *arg;              /* the arg of the first call (the recorder itself) */
    long long first_ms;     /* rdt_now_ms() of the first call */
    int on_main;            /* some call ran on the main thread (it must not) */
    pthread_t main_thread;  /* the thread that called rdt_lost_init */
} rdt_lostrec_t;

void rdt_lost_init(rdt_lostrec_t *r);
void rdt_lost_reset(rdt_lostrec_t *r); /* forget the calls, between tests */
void rdt_lost_cb(const char *name, void *arg);

/* Wait until r saw at least n calls or timeout_ms passed; the count seen. */
int rdt_lost_wait(rdt_lostrec_t *r, int n, int timeout_ms);
int rdt_lost_count(rdt_lostrec_t *r);

/* ------------------------------------------------------------------ */
/* 9. library log capture                                              */
/* ------------------------------------------------------------------ */

/* rdt_log_capture() makes the library's log lines ("<level> <msg>\n")
 * collect in one process-wide buffer (16 KiB, later lines dropped when
 * full) instead of going to stderr; rdt_log_has() looks for a substring,
 * rdt_log_clear() empties it, rdt_log_text() is for printing on failure.
 * For suites whose checks are about what the library says; test_client
 * keeps its own, which counts lines and levels. */
void rdt_log_capture(void);
int rdt_log_has(const char *s);
void rdt_log_clear(void);
const char *rdt_log_text(void);

/* ------------------------------------------------------------------ */
/* 10. a thread that holds a mutex                                     */
/* ------------------------------------------------------------------ */

/* A thread that calls rdlock_lock(m), records the outcome, keeps the lock
 * until rdt_holder_finish() (only the holding thread may unlock), then
 * unlocks.  For tests that need a blocked or holding thread while the
 * main thread acts on the servers. */
typedef struct rdt_holder {
    rdlock_t *m;
    int lock_rc, unlock_rc;
    long long locked_at; /* rdt_now_ms() when rdlock_lock returned */
    int locked, go;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
} rdt_holder_t;

int rdt_holder_start(rdt_holder_t *h, rdlock_t *m);          /* 0 or -1 */
int rdt_holder_locked(rdt_holder_t *h);                      /* has rdlock_lock returned? */
int rdt_holder_wait(rdt_holder_t *h, int timeout_ms);        /* 1 returned, 0 not yet */
int rdt_holder_finish(rdt_holder_t *h);                      /* unlock, join: unlock's code */

/* ------------------------------------------------------------------ */
/* 11. actors: lock calls on command, in a child or a thread           */
/* ------------------------------------------------------------------ */

/* An actor makes lock calls for a test, one at a time, on command over
 * the line protocol of testutil.h: another owner the test drives step by
 * step and whose calls may block while the test goes on.  Two kinds, one
 * vocabulary and one reply format:
 *   process  rdt_actor_start: a forked child with its own client (another
 *            host), holding an rdlock_t and an rdrwlock_t of one name with
 *            the attributes of rdt_actor_opts_t; it can be SIGKILLed (an
 *            owner that dies);
 *   thread   rdt_actor_thread: a thread of this process calling handles the
 *            test made (another thread of the same client, or a handle on
 *            another client), so that the test can also act on them.
 * Both are driven by the same calls below; only starting them differs,
 * because what they need does (an ini and attributes, or handles).
 * test_mutex, test_robust and test_rwlock each had an actor of their own,
 * with different words for the same calls.
 *
 * Commands, one line each (MS: a deadline MS ms from now, on
 * CLOCK_REALTIME for the timed* words, CLOCK_MONOTONIC for clock*):
 *   rdlock_t      lock  trylock  timed MS  clock MS  unlock  consistent
 *                 token  holdcount
 *   rdrwlock_t    rdlock  wrlock  tryrd  trywr  timedrd MS  timedwr MS
 *                 clockrd MS  clockwr MS  rwunlock  rwconsistent  rwtoken
 *   process only  reset (rdlock_reset_name of the name on its client),
 *                 lost (calls of its lost callback so far, see count_lost)
 *   exit          process only, no answer: exit(0) at once, holding what
 *                 it holds (rdt_actor_exit sends it)
 *   quit          no answer: a thread returns; a process releases what it
 *                 still holds, destroys both handles, closes its client and
 *                 exits, with status 0 if all of that returned 0
 * The mutex and the rwlock have words of their own ("unlock", "rwunlock";
 * "token", "rwtoken"): both handles are of one lock, so a word says which
 * API it calls.
 *
 * The answer to each command is one line "<rc> <value> <ms>": rc what the
 * call returned (RDT_ACTOR_BADCMD for a word the actor does not know or a
 * handle it does not have); value the fencing token for token and rwtoken
 * and after an acquisition that returned 0 or EOWNERDEAD (it holds the
 * lock then), the count for holdcount and lost, else 0; ms how long the
 * call took in the actor. */

#define RDT_ACTOR_NOREPLY (-1) /* no answer (in time): no lock call returns it */
#define RDT_ACTOR_BADCMD (-3)  /* the actor's answer to a command it cannot run */

/* A process actor's lock attributes, as rdt_lockopts_t (same defaults)
 * without the client, which is the child's own. */
typedef struct rdt_actor_opts {
    int robust;      /* RDLOCK_STALLED (0, the default) or RDLOCK_ROBUST */
    int type;        /* 0: default (RDLOCK_ERRORCHECK), or RDLOCK_RECURSIVE ... */
    unsigned lease;  /* ms; 0: from the ini */
    int watchdog;    /* 1 on, 0 off, < 0: from the ini */
    int count_lost;  /* 1: a lost callback that counts its calls, for "lost" */
} rdt_actor_opts_t;

#define RDT_ACTOR_OPTS { RDLOCK_STALLED, 0, 0, -1, 0 }

/* Fields are the helpers'; a test reads pid (e.g. to find the child's
 * holder entry) and nothing else. */
typedef struct rdt_actor {
    rdt_pipe_t p;      /* to_child: commands; to_parent: answers */
    pid_t pid;         /* process actor: the child, -1 when there is none */
    int thread;        /* 1: a thread actor */
    pthread_t th;
    int live;          /* started and not yet stopped or killed */
    int pending;       /* commands sent and not answered yet */
    char who[640];     /* for messages */
    /* what the actor starts with */
    char name[600];
    char ini[512];
    rdt_actor_opts_t o;
    rdlock_t *m;       /* thread actor: the handles it calls (NULL: none) */
    rdrwlock_t *rw;
} rdt_actor_t;

/* Fork a process actor with its own client from ini, on lock name, with
 * attributes o (NULL: all from the ini, RDT_ACTOR_OPTS).  0 once it has
 * set up (within 10 s); else -1, printed, with the child reaped. */
int rdt_actor_start(rdt_actor_t *a, const char *ini, const char *name, const rdt_actor_opts_t *o);

/* Start a thread actor on the handles m and rw (either may be NULL; the
 * test keeps them alive until rdt_actor_stop).  0 or -1. */
int rdt_actor_thread(rdt_actor_t *a, rdlock_t *m, rdrwlock_t *rw);

/* Send one command without waiting for its answer (for a call that
 * blocks while the test acts): 0, or -1 (printed). */
int rdt_actor_send(rdt_actor_t *a, const char *cmd);

/* The answer to the oldest unanswered command, waiting at most timeout_ms:
 * its rc, with *val and *ms set (either may be NULL); or RDT_ACTOR_NOREPLY
 * if none came (silently: a test may expect none), leaving *val and *ms
 * alone.  The command then stays unanswered: a later rdt_actor_reply
 * still reads its answer. */
int rdt_actor_reply(rdt_actor_t *a, int timeout_ms, unsigned long long *val, long long *ms);

/* Send cmd and wait for its answer: rdt_actor_reply's result, printed when
 * it is RDT_ACTOR_NOREPLY.  An actor with an unanswered command (one that
 * did not answer in time, still in its call) is out of step: the call
 * fails at once rather than read that earlier answer or wait again. */
int rdt_actor_call(rdt_actor_t *a, const char *cmd, int timeout_ms, unsigned long long *val, long long *ms);

/* 1 if the actor has not answered yet, without reading the answer (a
 * blocked call is still blocked); 0 if an answer is there or the actor is
 * not running. */
int rdt_actor_silent(rdt_actor_t *a);

/* SIGKILL a process actor and reap it: an owner that dies without
 * unlocking.  rdt_wait()'s result (128 + SIGKILL), or -1 if the actor is
 * not a running process. */
int rdt_actor_kill(rdt_actor_t *a);

/* A process actor calls exit(0) while it holds what it holds (a normal
 * process end without unlock), and is reaped: rdt_wait()'s result (0 for
 * exit status 0), or -1 if not a running process actor. */
int rdt_actor_exit(rdt_actor_t *a);

/* Orderly end.  A process actor is sent "quit" and waited for (10 s, then
 * SIGKILL); one still in a call would not read it, so it is killed.  The
 * result is rdt_wait()'s (exit status 0: the child released and closed
 * everything), printed when not 0; -1 if not running.  A thread actor is
 * sent "quit" and joined (after the call it is in, if any): 0. */
int rdt_actor_stop(rdt_actor_t *a);

/* Kill and reap every process actor still running: after a test that
 * failed fatally (its actors were on its stack), and in suite teardown.
 * Only between tests. */
void rdt_actor_reap_all(void);

#endif /* RDT_TESTLIB_H */
