/* threads.c - the many-threads workload of steps 6 and 7: MT_THREADS
 * threads locking and unlocking their own names, all released at once,
 * and its floor, redis-benchmark's SET with as many connections on the
 * same server(s) in the same repetition (see threads.h). */
#include "threads.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MT_CHILD_ALARM_S 120 /* a hung redis-benchmark is killed */

/* redis-benchmark: $REDIS_BENCHMARK, else next to the redis-server the
 * fixture runs ($REDIS_SERVER's directory), else PATH, /usr/bin. */
static const char *redis_benchmark_path(void)
{
    static char path[512];
    const char *e = getenv("REDIS_BENCHMARK"), *p;
    if (e != NULL && *e != '\0')
        return e;
    if ((e = getenv("REDIS_SERVER")) != NULL && (p = strrchr(e, '/')) != NULL) {
        snprintf(path, sizeof path, "%.*s/redis-benchmark", (int)(p - e), e);
        if (access(path, X_OK) == 0)
            return path;
    }
    if ((e = getenv("PATH")) != NULL) {
        while (*e != '\0') {
            size_t n = strcspn(e, ":");
            snprintf(path, sizeof path, "%.*s/redis-benchmark", (int)n, n ? e : ".");
            if (access(path, X_OK) == 0)
                return path;
            e += n + (e[n] == ':');
        }
    }
    if (access("/usr/bin/redis-benchmark", X_OK) == 0)
        return "/usr/bin/redis-benchmark";
    return NULL;
}

double rb_set_rate(int port, int cluster, int clients, long n)
{
    const char *bin = redis_benchmark_path();
    char sport[16], sc[16], sn[32], out_buf[8192];
    int fd[2], st;
    ssize_t got;
    pid_t pid;
    const char *p;

    if (bin == NULL) {
        fail("redis-benchmark not found (Debian: redis-tools; or set $REDIS_BENCHMARK)");
        return NAN;
    }
    snprintf(sport, sizeof sport, "%d", port);
    snprintf(sc, sizeof sc, "%d", clients);
    snprintf(sn, sizeof sn, "%ld", n);
    if (pipe(fd) != 0) {
        fail("pipe: %s", strerror(errno));
        return NAN;
    }
    fflush(NULL);
    if ((pid = fork()) < 0) {
        fail("fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return NAN;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        alarm(MT_CHILD_ALARM_S); /* kept across exec: a hang ends */
        if (cluster)
            execl(bin, "redis-benchmark", "--cluster", "-h", "127.0.0.1", "-p", sport, "-c", sc, "-n", sn, "-t", "set",
                  "--csv", (char *)NULL);
        else
            execl(bin, "redis-benchmark", "-h", "127.0.0.1", "-p", sport, "-c", sc, "-n", sn, "-t", "set", "--csv",
                  (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    got = read_all(fd[0], out_buf, sizeof out_buf - 1);
    close(fd[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    out_buf[got > 0 ? got : 0] = '\0';
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || (p = strstr(out_buf, "\"SET\",\"")) == NULL) {
        fail("%s %s-p %d -c %d -n %ld -t set --csv: %s %d; output: %.300s", bin, cluster ? "--cluster " : "", port,
             clients, n, WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
             out_buf);
        return NAN;
    }
    return strtod(p + 7, NULL);
}

static void *mt_main(void *arg)
{
    mt_thread_t *t = arg;
    mt_set_t *set = t->set;
    long i;
    int rc;
    uint64_t tok;

    pthread_mutex_lock(&set->mu);
    set->ready++;
    pthread_cond_broadcast(&set->cv);
    while (!set->go)
        pthread_cond_wait(&set->cv, &set->mu);
    pthread_mutex_unlock(&set->mu);
    for (i = 0; i < set->n; i++) {
        if ((rc = rdlock_lock(&t->m)) != 0) {
            t->err = rc, t->what = "rdlock_lock";
            break;
        }
        if ((rc = rdlock_fencing_token(&t->m, &tok)) != 0 || tok <= t->last_token) {
            t->err = rc ? rc : -1, t->what = "rdlock_fencing_token";
            rdlock_unlock(&t->m);
            break;
        }
        t->last_token = tok;
        if ((rc = rdlock_unlock(&t->m)) != 0) {
            t->err = rc, t->what = "rdlock_unlock";
            break;
        }
    }
    t->done = i;
    t->end_ns = now_ns();
    return NULL;
}

double mt_run(mt_set_t *set, long n)
{
    int64_t t0, end = 0;
    long total = 0;
    int i, started = 0, bad = 0;

    set->ready = set->go = 0;
    set->n = n;
    for (i = 0; i < MT_THREADS; i++) {
        set->t[i].err = 0;
        set->t[i].done = 0;
        if (pthread_create(&set->t[i].th, NULL, mt_main, &set->t[i]) != 0) {
            fail("pthread_create failed");
            break;
        }
        started++;
    }
    pthread_mutex_lock(&set->mu);
    while (set->ready < started)
        pthread_cond_wait(&set->cv, &set->mu);
    t0 = now_ns();
    set->go = 1;
    pthread_cond_broadcast(&set->cv);
    pthread_mutex_unlock(&set->mu);
    for (i = 0; i < started; i++) {
        mt_thread_t *t = &set->t[i];
        pthread_join(t->th, NULL);
        total += t->done;
        if (t->end_ns > end)
            end = t->end_ns;
        if (t->err != 0) {
            bad = 1;
            if (t->err == -1)
                fail("%s: thread %d: fencing token not above the name's previous one", t->name, i);
            else
                fail("%s: thread %d: %s: %s (%s)", t->name, i, t->what, rdlock_strerror(t->err),
                     rdt_errname(t->err));
        }
    }
    if (bad || started < MT_THREADS)
        return NAN;
    return (double)total / ((double)(end - t0) / 1e9);
}

int mt_open(mt_set_t *set, const char *ini, int own, const char *stem, char (*names)[64])
{
    int i, rc;
    memset(set, 0, sizeof *set);
    pthread_mutex_init(&set->mu, NULL);
    pthread_cond_init(&set->cv, NULL);
    if (!own && (rc = rdlock_client_open(&set->shared, ini)) != 0) {
        fail("rdlock_client_open(%s): %s", ini, rdlock_strerror(rc));
        return -1;
    }
    for (i = 0; i < MT_THREADS; i++) {
        mt_thread_t *t = &set->t[i];
        t->set = set;
        if (names != NULL)
            snprintf(t->name, sizeof t->name, "%s", names[i]);
        else
            snprintf(t->name, sizeof t->name, "%s-%d", stem, i);
        if (own && (rc = rdlock_client_open(&t->own, ini)) != 0) {
            fail("rdlock_client_open(%s): %s", ini, rdlock_strerror(rc));
            return -1;
        }
        rdlock_attr_init(&t->attr);
        rdlock_attr_setclient(&t->attr, own ? t->own : set->shared);
        if ((rc = rdlock_init(&t->m, t->name, &t->attr)) != 0) {
            fail("rdlock_init(%s): %s", t->name, rdlock_strerror(rc));
            return -1;
        }
        t->ok = 1;
    }
    return 0;
}

void mt_close(mt_set_t *set)
{
    int i, rc;
    for (i = 0; i < MT_THREADS; i++) {
        mt_thread_t *t = &set->t[i];
        if (t->ok && (rc = rdlock_destroy(&t->m)) != 0)
            fail("rdlock_destroy(%s): %s", t->name, rdlock_strerror(rc));
        if (t->ok)
            rdlock_attr_destroy(&t->attr);
        t->ok = 0;
        if (t->own != NULL && (rc = rdlock_client_close(t->own)) != 0)
            fail("rdlock_client_close: %s", rdlock_strerror(rc));
        t->own = NULL;
    }
    if (set->shared != NULL && (rc = rdlock_client_close(set->shared)) != 0)
        fail("rdlock_client_close: %s", rdlock_strerror(rc));
    set->shared = NULL;
    pthread_mutex_destroy(&set->mu);
    pthread_cond_destroy(&set->cv);
}

double mt_clients(const mt_target_t *tg)
{
    srv_counts_t k;
    double sum = 0;
    int j;
    for (j = 0; j < tg->n; j++) {
        srv_counts(tg->c[j], &k);
        sum += (double)(k.clients - 1);
    }
    return sum;
}

void mt_rep(const mt_target_t *tg, mt_set_t *set, long n, double *v)
{
    srv_counts_t b[3], a[3];
    cpu_snap_t c0, c1, c2;
    long long dc = 0, dn = 0, dk[3];
    long nrt = 2L * MT_THREADS * n;
    int j;

    cpu_snap(&c0, tg->pids, tg->npids);
    v[F_FLOOR] = rb_set_rate(tg->port, tg->cluster, MT_THREADS, nrt);
    for (j = 0; j < tg->n; j++)
        srv_counts(tg->c[j], &b[j]);
    cpu_snap(&c1, tg->pids, tg->npids);
    v[F_PAIRS] = mt_run(set, n);
    cpu_snap(&c2, tg->pids, tg->npids);
    for (j = 0; j < tg->n; j++) {
        srv_counts(tg->c[j], &a[j]);
        dc += a[j].conns - b[j].conns;
        dk[j] = a[j].evalsha - b[j].evalsha;
        dn += dk[j];
    }
    v[F_RATIO] = v[F_PAIRS] / (v[F_FLOOR] / 2);
    v[F_CONNS] = (double)dc;
    v[F_RT] = (double)dn / ((double)MT_THREADS * n);
    v[F_CPU_CL] = (c2.self_us - c1.self_us) / ((double)MT_THREADS * n);
    v[F_CPU_SRV] = (c2.server_us - c1.server_us) / ((double)MT_THREADS * n);
    v[F_CPU_RB] = (c1.children_us - c0.children_us) / (double)nrt;
    v[F_CPU_RBS] = (c1.server_us - c0.server_us) / (double)nrt;
    for (j = 0; j < 3; j++)
        v[F_SHARE0 + j] = j < tg->n && dn > 0 ? (double)dk[j] / (double)dn : NAN;
}

void mt_medians(double (*v)[F_N], int reps, mt_fig_t *f)
{
    double col[64];
    int k, r;
    for (k = 0; k < F_N; k++) {
        for (r = 0; r < reps; r++)
            col[r] = v[r][k];
        f->v[k] = median(col, reps);
        if (k == F_RATIO) {
            f->ratio_hi = maxd(col, reps);
            for (r = 0; r < reps; r++)
                col[r] = -col[r];
            f->ratio_lo = -maxd(col, reps);
        }
    }
}
