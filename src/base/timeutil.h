/* timeutil.h - monotonic time, deadline conversion and timed waits.
 * Waits use condition variables on CLOCK_MONOTONIC so that a wall-clock
 * step never stretches or cuts a wait (libuv's uv_cond_init habit). */
#ifndef RDL_TIMEUTIL_H
#define RDL_TIMEUTIL_H

#include <pthread.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC. */
long long rdl_now_ms(void);

/* Convert an absolute time on `clock` (CLOCK_REALTIME or CLOCK_MONOTONIC)
 * to monotonic ms, once: 0 and *mono_ms (>= 0), or EINVAL for NULL,
 * tv_nsec outside [0, 1e9) or another clock; a negative tv_sec is a
 * deadline in the past. */
int rdl_deadline_from(clockid_t clock, const struct timespec *abstime, long long *mono_ms);

/* A condition variable that waits on CLOCK_MONOTONIC. */
void rdl_cond_init(pthread_cond_t *cond);

/* Wait on cond until signalled or monotonic ms `until` (< 0: no limit).
 * Returns 0 or ETIMEDOUT. */
int rdl_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, long long until);

/* Sleep ms milliseconds (restarting on EINTR). */
void rdl_sleep_ms(long long ms);
/* Sleep until monotonic ms `until` (at once if it has passed). */
void rdl_sleep_until(long long until);

/* A uniform random number in [0, n] (n 0 gives 0): retry jitter. */
unsigned rdl_jitter(unsigned n);

/* Abort with a message: for failures of pthread calls that cannot fail in
 * a correct program (libuv's habit: programmer errors abort). */
void rdl_fatal(const char *what, int err) __attribute__((noreturn));

#define RDL_CHECK(call)                     \
    do {                                    \
        int rdl_check_rc_ = (call);         \
        if (rdl_check_rc_ != 0)             \
            rdl_fatal(#call, rdl_check_rc_); \
    } while (0)

#endif
