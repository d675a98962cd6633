/* counter_rdlock.c - counter_pthread.c ported to librdlock: the same
 * threads, but the mutex now lives in Redis, so that copies of this program
 * on other hosts (sharing the file over NFS, or a Redis key instead of a
 * file) would exclude each other too.  counter_rdlock_procs.c runs it as
 * several processes.
 *
 *   counter_rdlock FILE WORKERS ROUNDS      (config: $RDLOCK_CONF)
 *
 * The port (see `diff counter_pthread.c counter_rdlock.c`):
 *   #include <pthread.h>              +  #include <rdlock.h>
 *   pthread_mutex_t lock =            -> rdlock_t lock =
 *       PTHREAD_MUTEX_INITIALIZER;           RDLOCK_INITIALIZER("counter");
 *   pthread_mutex_lock / _unlock      -> rdlock_lock / rdlock_unlock
 *   strerror(rc)                      -> say_why(what, rc): the error's name
 *                                        and the reason the library logged
 * plus the librdlock setup (rdlock_setup: where the lock lives, and what
 * the threads will wait for) and teardown (rdlock_destroy).  Threads of one
 * process contend for an rdlock_t exactly as processes do: each thread is
 * an owner.  What a distributed lock adds: unlock can report ENOLCK (the
 * lease was lost before the unlock: the update may have raced), and the
 * fencing token lets the resource refuse a stale writer (client_fencing.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdlock.h>

static rdlock_t lock = RDLOCK_INITIALIZER("counter");
static const char *path;
static int rounds;

static long read_counter(void)
{
    FILE *f = fopen(path, "r");
    long v = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

static int write_counter(long v)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%ld\n", v);
    return fclose(f);
}

/* A failed librdlock call: the code's name and text, and what the library
 * last logged on this thread (for EIO: which server, and why). */
static void say_why(const char *what, int rc)
{
    char why[256];
    rdlock_last_error(why, sizeof why);
    fprintf(stderr, "counter_rdlock: %s: %s (%s)%s%s\n", what, rdlock_errname(rc), rdlock_strerror(rc),
            why[0] ? ": " : "", why);
}

static void *worker(void *arg)
{
    int i, rc;
    (void)arg;
    for (i = 0; i < rounds; i++) {
        if ((rc = rdlock_lock(&lock)) != 0) {
            say_why("lock", rc);
            exit(1);
        }
        if (write_counter(read_counter() + 1) != 0)
            exit(1);
        if ((rc = rdlock_unlock(&lock)) != 0) {
            say_why("unlock", rc);
            exit(1);
        }
    }
    return NULL;
}

/* The lock lives on the server of the process default client
 * ($RDLOCK_CONF, else $(sysconfdir)/rdlock.ini, else 127.0.0.1:6379).
 * Create that client now, so that a bad configuration is reported here,
 * and say what the threads are about to wait for: lock calls wait through
 * an outage (docs/CONTRACT.md section 2) unless the configuration says
 * [lock] fail_fast = yes, which makes an unreachable server an error. */
static int rdlock_setup(void)
{
    rdlock_client_info_t info;
    char why[256];
    int rc = rdlock_client_info(NULL, &info);

    if (rc != 0) {
        say_why("cannot set up the default client", rc);
        return rc == EINVAL || rc == ENOENT ? 78 : 69;
    }
    /* Unreachable: the library has logged why (to stderr, by default). */
    if (rdlock_last_error(why, sizeof why) == RDLOCK_ERRSRC_REDIS)
        fprintf(stderr, "counter_rdlock: waiting for Redis at %s to come up (stop with Ctrl-C; "
                "[lock] fail_fast = yes fails instead)\n", info.server);
    return 0;
}

int main(int argc, char **argv)
{
    pthread_t t[64];
    int i, n, rc;

    if (argc != 4 || (n = atoi(argv[2])) < 1 || n > 64 || (rounds = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: %s FILE WORKERS ROUNDS\n", argv[0]);
        return 64;
    }
    path = argv[1];
    if ((rc = rdlock_setup()) != 0)
        return rc; /* 78: configuration, 69: Redis unreachable (fail_fast) or refusing */
    for (i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", read_counter());
    rdlock_destroy(&lock);
    return 0;
}
