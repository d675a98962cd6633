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
 *               (header only, its statics per program)
 *   testlib.h   this: plain functions, linked into every test program that
 *               uses librdlock (not test_config, which links src/config.c
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

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

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

#endif /* RDT_TESTLIB_H */
