/* counter_pthread.c - the "before" of the porting example: threads of ONE
 * process increment a counter kept in a file, under a pthread mutex.
 *
 *   counter_pthread FILE WORKERS ROUNDS
 *
 * Each round reads the number in FILE, adds one and writes it back: a
 * read-modify-write that loses updates without the lock.  Compare with
 * counter_rdlock.c, the same program ported to librdlock
 * (`diff counter_pthread.c counter_rdlock.c`): the same threads, now
 * excluding each other through Redis, so that copies of the program on other
 * hosts could share the counter too (counter_rdlock_procs.c runs several
 * processes). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
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

static void *worker(void *arg)
{
    int i, rc;
    (void)arg;
    for (i = 0; i < rounds; i++) {
        if ((rc = pthread_mutex_lock(&lock)) != 0) {
            fprintf(stderr, "lock: %s\n", strerror(rc));
            exit(1);
        }
        if (write_counter(read_counter() + 1) != 0)
            exit(1);
        if ((rc = pthread_mutex_unlock(&lock)) != 0) {
            fprintf(stderr, "unlock: %s\n", strerror(rc));
            exit(1);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[64];
    int i, n;

    if (argc != 4 || (n = atoi(argv[2])) < 1 || n > 64 || (rounds = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: %s FILE WORKERS ROUNDS\n", argv[0]);
        return 64;
    }
    path = argv[1];
    for (i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("%ld\n", read_counter());
    return 0;
}
