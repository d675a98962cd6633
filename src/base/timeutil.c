/* timeutil.c - see timeutil.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timeutil.h"

long long rdl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rdl_deadline_from(clockid_t clock, const struct timespec *abstime, long long *mono_ms)
{
    struct timespec now;
    long long abs_ms, now_ms;

    if (abstime == NULL || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
        return EINVAL; /* a negative tv_sec is merely in the past */
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    /* Round up so a deadline never ends a wait early; clamp far futures
     * and pasts so the arithmetic cannot overflow. */
    if (abstime->tv_sec > (long long)(9e15 / 1000))
        abs_ms = (long long)9e15;
    else if (abstime->tv_sec < 0)
        abs_ms = 0;
    else
        abs_ms = (long long)abstime->tv_sec * 1000 + (abstime->tv_nsec + 999999) / 1000000;
    if (clock == CLOCK_REALTIME) {
        clock_gettime(CLOCK_REALTIME, &now);
        now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
        abs_ms = rdl_now_ms() + (abs_ms - now_ms);
    }
    /* Callers treat a negative deadline as "none": a past one is 0. */
    *mono_ms = abs_ms < 0 ? 0 : abs_ms;
    return 0;
}

void rdl_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    RDL_CHECK(pthread_condattr_init(&attr));
    RDL_CHECK(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC));
    RDL_CHECK(pthread_cond_init(cond, &attr));
    pthread_condattr_destroy(&attr);
}

int rdl_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, long long until)
{
    struct timespec ts;
    int rc;

    if (until < 0) {
        RDL_CHECK(pthread_cond_wait(cond, mu));
        return 0;
    }
    ts.tv_sec = until / 1000;
    ts.tv_nsec = (until % 1000) * 1000000;
    rc = pthread_cond_timedwait(cond, mu, &ts);
    if (rc != 0 && rc != ETIMEDOUT)
        rdl_fatal("pthread_cond_timedwait", rc);
    return rc;
}

void rdl_sleep_ms(long long ms)
{
    struct timespec ts;
    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

unsigned rdl_jitter(unsigned n)
{
    /* Per-thread state seeded from the clock and the thread's address:
     * jitter only needs to spread waiters, not to be unpredictable. */
    static __thread unsigned state;
    if (n == 0)
        return 0;
    if (state == 0)
        state = (unsigned)rdl_now_ms() ^ (unsigned)(size_t)&state ^ 0x9e3779b9u;
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state % (n + 1);
}

void rdl_fatal(const char *what, int err)
{
    fprintf(stderr, "rdlock: fatal: %s failed: %s\n", what, strerror(err));
    abort();
}

void rdl_sleep_until(long long until)
{
    long long now = rdl_now_ms();
    if (until > now)
        rdl_sleep_ms(until - now);
}
