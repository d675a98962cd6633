/* testlib.c - helpers the CUnit suites share; see testlib.h for what each
 * does and why it is here. */
#include <time.h>

#include "testlib.h"

/* ------------------------------------------------------------------ */
/* 1. time                                                             */
/* ------------------------------------------------------------------ */

struct timespec rdt_abstime(clockid_t clk, long long ms)
{
    struct timespec ts;
    long long ns;

    clock_gettime(clk, &ts);
    ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + ms * 1000000LL;
    if (ns < 0)
        ns = 0;
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}
