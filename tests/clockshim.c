/* clockshim.c - a redis-server whose wall clock runs fast or slow, for
 * test_redlock's drift case: LD_PRELOADed into that one server, with
 * RDT_CLOCK_RATE (e.g. 1.02: 2% fast) in its environment.
 *
 * Why not faketime: Debian's redis-server links libjemalloc, and
 * libfaketime's start-up and jemalloc's recurse into each other
 * ("Unexpected recursive calls to clock_gettime", wolfcw/libfaketime#130),
 * so the server never starts under it.  This shim needs no allocation and
 * no dlsym: it reads the real clock with the raw system call, so nothing
 * it calls can come back into it.
 *
 * From the moment the server starts, its wall clock (gettimeofday,
 * clock_gettime on the CLOCK_REALTIME clocks, time) advances RATE times
 * as fast as the real one: Redis's key expiry (PEXPIRE, PX) and its TIME
 * command, which the lock scripts read, both follow it.  The monotonic
 * clocks are left alone.  Built outside libtool (make check builds it
 * with plain -O2: a sanitizer's runtime must not be preloaded into
 * redis-server). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double rate = 1.0;
static long long base_ns = -1; /* real time at start */

static long long real_ns(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((constructor)) static void shim_init(void)
{
    const char *r = getenv("RDT_CLOCK_RATE");
    if (r != NULL && *r != '\0')
        rate = strtod(r, NULL);
    if (!(rate > 0.5 && rate < 2.0))
        rate = 1.0;
    base_ns = real_ns();
}

static long long fake_ns(void)
{
    long long n = real_ns();
    if (base_ns < 0)
        return n;
    return base_ns + (long long)((double)(n - base_ns) * rate);
}

int gettimeofday(struct timeval *tv, void *tz)
{
    long long n = fake_ns();
    (void)tz;
    tv->tv_sec = (time_t)(n / 1000000000LL);
    tv->tv_usec = (suseconds_t)(n % 1000000000LL / 1000);
    return 0;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    long long n;
    if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)
        return (int)syscall(SYS_clock_gettime, id, ts);
    n = fake_ns();
    ts->tv_sec = (time_t)(n / 1000000000LL);
    ts->tv_nsec = (long)(n % 1000000000LL);
    return 0;
}

time_t time(time_t *t)
{
    time_t s = (time_t)(fake_ns() / 1000000000LL);
    if (t != NULL)
        *t = s;
    return s;
}
