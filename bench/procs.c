/* procs.c - other processes: the contending children of steps 3 and 5b
 * (forked behind a start barrier, reporting through a pipe each), and the
 * CPU time of this process, its children and the servers (what a pair
 * costs besides its wall time). */
#include "bench.h"

#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
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

int children_start(children_t *ch, redisContext *parent, child_fn_t fn, void *arg)
{
    int ready[2], go[2], resp[NPROC][2];
    int p, ok = 1;
    char b;

    ch->n = 0;
    if (pipe(ready) != 0 || pipe(go) != 0) {
        fail("pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    for (p = 0; p < NPROC; p++) {
        if (pipe(resp[p]) != 0) {
            fail("pipe: %s", strerror(errno));
            ok = 0;
            break;
        }
        ch->pid[p] = fork();
        if (ch->pid[p] < 0) {
            fail("fork: %s", strerror(errno));
            close(resp[p][0]);
            close(resp[p][1]);
            ok = 0;
            break;
        }
        if (ch->pid[p] == 0) {
            int q;
            close(ready[0]);
            close(go[1]);
            close(resp[p][0]);
            for (q = 0; q < p; q++)
                close(resp[q][0]);
            redisFree(parent); /* the parent's; frees only our copy */
            fn(p, ready[1], go[0], resp[p][1], arg);
        }
        close(resp[p][1]);
        ch->res[p] = resp[p][0];
    }
    ch->n = p; /* the children started run anyway, then are reaped */
    close(ready[1]);
    close(go[0]);
    for (p = 0; p < ch->n; p++)
        if (read_all(ready[0], &b, 1) != 1) {
            ok = 0; /* a child failed before the barrier: its header says why */
            break;
        }
    close(ready[0]);
    for (p = 0; p < ch->n; p++)
        if (write_all(go[1], "g", 1) != 0)
            ok = 0;
    close(go[1]);
    return ok;
}

int children_barrier(int ready_fd, int go_fd)
{
    char b = 'r';
    if (write_all(ready_fd, &b, 1) != 0)
        return -1;
    close(ready_fd); /* so the parent sees EOF if a sibling fails early */
    if (read_all(go_fd, &b, 1) != 1)
        return -1;
    return 0;
}

int children_reap(children_t *ch, int p, const char *what)
{
    int status;
    close(ch->res[p]);
    while (waitpid(ch->pid[p], &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            fail("%s %d killed by signal %d%s", what, p, WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (hung: alarm)" : "");
        return -1;
    }
    return 0;
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
