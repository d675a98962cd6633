/* procs.c - other processes: the pipes the contending children report
 * through, and the CPU time of this process, its children and the
 * servers (what a pair costs besides its wall time). */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static double tv_us(struct timeval tv)
{
    return (double)tv.tv_sec * 1e6 + (double)tv.tv_usec;
}

static double proc_cpu_us(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long ut = 0, st = 0;
    FILE *f;
    size_t n;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if ((f = fopen(path, "r")) == NULL)
        return NAN;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* after "(comm)": state is field 3, utime 14, stime 15 */
    if ((p = strrchr(buf, ')')) == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return NAN;
    return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

void cpu_snap(cpu_snap_t *c, const pid_t *servers, int nservers)
{
    struct rusage ru;
    int i;
    getrusage(RUSAGE_SELF, &ru);
    c->self_us = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
    getrusage(RUSAGE_CHILDREN, &ru);
    c->children_us = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
    c->server_us = 0;
    for (i = 0; i < nservers; i++)
        c->server_us += proc_cpu_us(servers[i]);
}
