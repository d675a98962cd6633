/* counter_rdlock.c - counter_pthread.c ported to librdlock: the workers
 * are now PROCESSES (they could be on different hosts sharing the file
 * over NFS, or a Redis key instead of a file), and the lock lives in Redis.
 *
 *   counter_rdlock FILE WORKERS ROUNDS      (config: $RDLOCK_CONF)
 *
 * The port, line by line (see `diff counter_pthread.c counter_rdlock.c`):
 *   #include <pthread.h>              -> #include <rdlock.h>
 *   pthread_mutex_t lock =            -> rdlock_t lock =
 *       PTHREAD_MUTEX_INITIALIZER;           RDLOCK_INITIALIZER("counter");
 *   pthread_mutex_lock / _unlock      -> rdlock_lock / rdlock_unlock
 *   pthread_create / pthread_join     -> fork / waitpid
 * plus what a distributed lock adds: unlock can report ENOLCK (the lease was
 * lost before the unlock: the update may have raced), and the fencing token
 * lets the resource refuse a stale writer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

static int worker(void)
{
    int i, rc;
    for (i = 0; i < rounds; i++) {
        if ((rc = rdlock_lock(&lock)) != 0) {
            fprintf(stderr, "lock: %s\n", rdlock_strerror(rc));
            return 1;
        }
        if (write_counter(read_counter() + 1) != 0)
            return 1;
        if ((rc = rdlock_unlock(&lock)) != 0) {
            fprintf(stderr, "unlock: %s\n", rdlock_strerror(rc));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    pid_t pid[64];
    int i, n, status, failed = 0;

    if (argc != 4 || (n = atoi(argv[2])) < 1 || n > 64 || (rounds = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: %s FILE WORKERS ROUNDS\n", argv[0]);
        return 64;
    }
    path = argv[1];
    for (i = 0; i < n; i++) {
        if ((pid[i] = fork()) < 0)
            return 1;
        if (pid[i] == 0)
            _exit(worker());
    }
    for (i = 0; i < n; i++)
        if (waitpid(pid[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    printf("%ld\n", read_counter());
    return failed;
}
