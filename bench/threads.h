/* threads.h - the many-threads workload of steps 6 and 7 (threads.c):
 * MT_THREADS threads, each locking and unlocking its own name (no
 * contention), on one server (step 6) and on a 3-master Redis Cluster
 * (step 7).  The floor is redis-benchmark's SET with as many connections,
 * on the same server(s) in the same run: a lock+unlock pair is at best two
 * round trips, so ratio = pairs/s / (SET ops/s / 2). */
#ifndef RDB_THREADS_H
#define RDB_THREADS_H

#include <pthread.h>

#include "../tests/cluster.h" /* Makefile.am gives no -I tests */
#include "bench.h"

#define MT_THREADS 32

typedef struct mt_thread {
    pthread_t th;
    rdlock_client_t *own; /* variant a: this thread's own client */
    rdlock_attr_t attr;
    rdlock_t m;
    int ok; /* m initialised */
    char name[64];
    uint64_t last_token; /* per name: tokens must increase strictly */
    int64_t end_ns;
    long done;
    int err; /* first failure's code (or -1: fencing order) */
    const char *what;
    struct mt_set *set;
} mt_thread_t;

typedef struct mt_set {
    rdlock_client_t *shared; /* variant b and the cluster: one client for all */
    mt_thread_t t[MT_THREADS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready, go;
    long n; /* pairs per thread in this run */
} mt_set_t;

typedef struct mt_target {
    redisContext *c[3]; /* INFO connections, one per master */
    int n;
    pid_t pids[RDT_CLUSTER_NODES]; /* every server process (CPU) */
    int npids;
    int port, cluster; /* where redis-benchmark goes */
} mt_target_t;

/* `redis-benchmark -h 127.0.0.1 -p port -c clients -n n -t set --csv`
 * (with --cluster when cluster): its SET requests/s, or NAN (a hard error,
 * printed). */
double rb_set_rate(int port, int cluster, int clients, long n);
/* Set up MT_THREADS locks, named with names[i] when names is not NULL
 * (else "<stem>-<i>"): on their own clients from ini (own != 0) or all on
 * one shared client.  0 or -1. */
int mt_open(mt_set_t *set, const char *ini, int own, const char *stem, char (*names)[64]);
void mt_close(mt_set_t *set);
/* One run: every thread does n pairs on its own name, all released at
 * once.  Aggregate pairs/s = all pairs / (release -> last thread done), or
 * NAN (a hard error, printed). */
double mt_run(mt_set_t *set, long n);
/* connected_clients summed over the target's servers, less our own INFO
 * connections. */
double mt_clients(const mt_target_t *tg);
/* One repetition: redis-benchmark with MT_THREADS connections and as many
 * round trips as the lock run makes at best (2 per pair), then the lock
 * run.  v[F_*] filled. */
void mt_rep(const mt_target_t *tg, mt_set_t *set, long n, double *v);
/* The medians of reps repetitions' figures, and the range of the ratio. */
void mt_medians(double (*v)[F_N], int reps, mt_fig_t *f);

#endif
