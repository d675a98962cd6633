/* counter_rdlock_procs.c - counter_rdlock.c with PROCESSES as well as
 * threads: PROCS processes (made with fork(); on several hosts they would
 * simply be started there) each run THREADS threads, and every thread of
 * every process increments the shared counter ROUNDS times under one
 * rdlock_t.  The final count is exact: PROCS x THREADS x ROUNDS.
 *
 *   counter_rdlock_procs FILE PROCS THREADS ROUNDS    (config: $RDLOCK_CONF)
 *
 * The parent sets up the process default client before forking; each child
 * inherits it and becomes an owner of its own, with its own connections and
 * background thread (docs/CONTRACT.md section 7), and its threads are owners
 * too: nobody holds the lock twice at once, whatever process or thread. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    fprintf(stderr, "counter_rdlock_procs[%ld]: %s: %s (%s)%s%s\n", (long)getpid(), what, rdlock_errname(rc),
            rdlock_strerror(rc), why[0] ? ": " : "", why);
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

/* One process: its threads, then exit. */
static int process(int nthreads)
{
    pthread_t t[64];
    int i;
    for (i = 0; i < nthreads; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 1;
    for (i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    return 0;
}

/* As in counter_rdlock.c: create the default client now, and say what the
 * workers are about to wait for. */
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
        fprintf(stderr, "counter_rdlock_procs: waiting for Redis at %s to come up (stop with Ctrl-C; "
                "[lock] fail_fast = yes fails instead)\n", info.server);
    return 0;
}

int main(int argc, char **argv)
{
    pid_t pid[64];
    int i, np, nt, status, rc, failed = 0;

    if (argc != 5 || (np = atoi(argv[2])) < 1 || np > 64 || (nt = atoi(argv[3])) < 1 || nt > 64 ||
        (rounds = atoi(argv[4])) < 1) {
        fprintf(stderr, "usage: %s FILE PROCS THREADS ROUNDS\n", argv[0]);
        return 64;
    }
    path = argv[1];
    if ((rc = rdlock_setup()) != 0)
        return rc; /* 78: configuration, 69: Redis unreachable (fail_fast) or refusing */
    fflush(NULL);
    for (i = 0; i < np; i++) {
        if ((pid[i] = fork()) < 0) {
            perror("fork");
            return 71;
        }
        if (pid[i] == 0) {
            rc = process(nt);
            fflush(NULL);
            _exit(rc);
        }
    }
    for (i = 0; i < np; i++)
        if (waitpid(pid[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    printf("%ld\n", read_counter());
    rdlock_destroy(&lock);
    return failed;
}
