/* rwlock.c - readers share a lock, a writer excludes them (rdrwlock_t, the
 * pthread_rwlock_t of librdlock).
 *
 *   rwlock FILE READERS ROUNDS      (config: $RDLOCK_CONF)
 *
 * FILE holds a "configuration": two copies of a version number, which the
 * writer updates in two steps (first copy, a pause, second copy), so that
 * anyone reading between the steps sees a torn state.  READERS reader
 * threads each read it ROUNDS times under the lock in shared mode, holding
 * it a little while; one writer thread updates it ROUNDS times in exclusive
 * mode.  Readers overlap with each other; nobody reads while the writer
 * writes, so no read is torn.  The lock is the same whether the threads
 * are in one process, as here, or on many hosts.
 *
 * Prints (and exits 0 if all holds): the reads done, how many were torn
 * (0), how many readers were inside at most at once (several), the writer's
 * updates, how often a reader was inside while it wrote (0), and the final
 * version (ROUNDS). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdlock.h>

static rdrwlock_t cfg_lock = RDRWLOCK_INITIALIZER("rwlock-example:config");
static const char *path;
static int rounds;

static int inside;               /* readers inside now (atomic) */
static int max_inside, torn, reads, clashes;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void read_config(long *a, long *b)
{
    FILE *f = fopen(path, "r");
    *a = *b = 0;
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", a, b) != 2)
            *a = *b = -1;
        fclose(f);
    }
}

static void write_config(long a, long b)
{
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%ld %ld\n", a, b);
        fclose(f);
    }
}

static void fail(const char *what, int rc)
{
    char why[256];
    rdlock_last_error(why, sizeof why);
    fprintf(stderr, "rwlock: %s: %s (%s)%s%s\n", what, rdlock_errname(rc), rdlock_strerror(rc), why[0] ? ": " : "",
            why);
    exit(1);
}

static void *reader(void *arg)
{
    int i, rc, now, seen;
    long a, b;
    (void)arg;
    for (i = 0; i < rounds; i++) {
        if ((rc = rdrwlock_rdlock(&cfg_lock)) != 0)
            fail("rdlock", rc);
        now = __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        seen = __atomic_load_n(&max_inside, __ATOMIC_SEQ_CST);
        while (now > seen && !__atomic_compare_exchange_n(&max_inside, &seen, now, 0, __ATOMIC_SEQ_CST,
                                                          __ATOMIC_SEQ_CST))
            ;
        read_config(&a, &b);
        if (a != b)
            __atomic_add_fetch(&torn, 1, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&reads, 1, __ATOMIC_SEQ_CST);
        sleep_ms(20); /* reading takes a while: other readers come in */
        __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        if ((rc = rdrwlock_unlock(&cfg_lock)) != 0)
            fail("unlock (reader)", rc);
    }
    return NULL;
}

static void *writer(void *arg)
{
    int i, rc;
    (void)arg;
    for (i = 1; i <= rounds; i++) {
        sleep_ms(15);
        if ((rc = rdrwlock_wrlock(&cfg_lock)) != 0)
            fail("wrlock", rc);
        if (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) != 0)
            clashes++;
        write_config(i, i - 1); /* torn for a moment... */
        sleep_ms(5);
        write_config(i, i);     /* ...and whole again */
        if (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) != 0)
            clashes++;
        if ((rc = rdrwlock_unlock(&cfg_lock)) != 0)
            fail("unlock (writer)", rc);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rdlock_client_info_t info;
    pthread_t r[64], w;
    char why[256];
    long a, b;
    int i, n, rc;

    if (argc != 4 || (n = atoi(argv[2])) < 1 || n > 64 || (rounds = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: %s FILE READERS ROUNDS\n", argv[0]);
        return 64;
    }
    path = argv[1];
    write_config(0, 0);
    /* The default client ($RDLOCK_CONF): set it up now and say what the
     * threads will wait for if Redis is not there (lock calls wait for it
     * unless [lock] fail_fast = yes). */
    if ((rc = rdlock_client_info(NULL, &info)) != 0)
        fail("cannot set up the default client", rc);
    if (rdlock_last_error(why, sizeof why) == RDLOCK_ERRSRC_REDIS)
        fprintf(stderr, "rwlock: waiting for Redis at %s to come up (stop with Ctrl-C; "
                "[lock] fail_fast = yes fails instead)\n", info.server);

    for (i = 0; i < n; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    for (i = 0; i < n; i++)
        pthread_join(r[i], NULL);
    pthread_join(w, NULL);
    read_config(&a, &b);
    printf("readers: %d reads, %d torn, at most %d inside at once\n", reads, torn, max_inside);
    printf("writer: %d updates, %d with a reader inside\n", rounds, clashes);
    printf("final version: %ld %ld\n", a, b);
    rdrwlock_destroy(&cfg_lock);
    return torn == 0 && clashes == 0 && a == rounds && b == rounds ? 0 : 1;
}
