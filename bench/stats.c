/* stats.c - clocks and order statistics: every figure of the bench is a
 * median of repetitions, a latency a nearest-rank percentile. */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double rnd(double x)
{
    return x != x ? x : (double)(long long)(x + (x >= 0 ? 0.5 : -0.5));
}

double ceil_d(double x)
{
    double t = (double)(long long)x;
    return t < x ? t + 1 : t;
}

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double now_s(void)
{
    return (double)now_ns() / 1e9;
}

void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

double median(const double *v, int n)
{
    double *t, m;
    if (n <= 0 || (t = malloc((size_t)n * sizeof *t)) == NULL)
        return NAN;
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    free(t);
    return m;
}

double maxd(const double *v, int n)
{
    double m = -INFINITY;
    int i;
    for (i = 0; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

int64_t pct(const int64_t *sorted, size_t n, double p)
{
    size_t k;
    if (n == 0)
        return 0;
    k = (size_t)ceil_d(p * (double)n);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return sorted[k - 1];
}

void lat_stats(int64_t *v, size_t n, double *p50, double *p99, double *mx)
{
    *p50 = *p99 = *mx = NAN;
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp_i64);
    *p50 = (double)pct(v, n, 0.50) / 1e6;
    *p99 = (double)pct(v, n, 0.99) / 1e6;
    *mx = (double)v[n - 1] / 1e6;
}
