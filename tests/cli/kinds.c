/* kinds.c - a C program that gives one name every other primitive for
 * tests/test_cli.sh, so that `rdlock --status NAME` has something of each
 * kind to show (docs/CONTRACT.md sections 8 and 12).
 *
 *   kinds INI NAME
 *
 * Opens a client from INI, then on NAME: takes one permit of a leased
 * semaphore of 3 permits, runs rdonce, registers a thread as a waiter of
 * the condition (with the lock "NAME-m") and arrives at a barrier of count
 * 2 with another thread.  Prints "ready PID" (the waiter and the arrival
 * may reach the server a moment later), then waits for a line (or EOF) on
 * stdin, wakes the waiter, completes the barrier's generation, posts the
 * permit and prints "done".  Exit 0, or 2 on an error (said on stderr). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdlock.h"

static rdlock_client_t *c;
static rdlock_t m;
static rdcond_t cv;
static rdbarrier_t b;
static int go; /* set under m */
static int cond_rc, bar_rc;

static void ran(void)
{
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    if ((cond_rc = rdlock_lock(&m)) != 0)
        return NULL;
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE) && cond_rc == 0)
        cond_rc = rdcond_wait(&cv, &m);
    rdlock_unlock(&m);
    return NULL;
}

static void *arriver(void *arg)
{
    (void)arg;
    bar_rc = rdbarrier_wait(&b);
    if (bar_rc == RDBARRIER_SERIAL_THREAD)
        bar_rc = 0;
    return NULL;
}

#define TRY(what, call)                                                                                                \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != 0 && rc_ != RDBARRIER_SERIAL_THREAD) {                                                              \
            fprintf(stderr, "kinds: %s: %s\n", what, rdlock_strerror(rc_));                                            \
            return 2;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(int argc, char **argv)
{
    rdlock_attr_t a;
    rdsem_attr_t sa;
    rdcond_attr_t ca;
    rdsem_t s;
    rdonce_t once;
    pthread_t t1, t2;
    char line[256], mname[200];

    if (argc != 3) {
        fprintf(stderr, "usage: kinds INI NAME\n");
        return 2;
    }
    snprintf(mname, sizeof mname, "%s-m", argv[2]);
    TRY("client_open", rdlock_client_open(&c, argv[1]));
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, c);
    rdsem_attr_init(&sa);
    rdsem_attr_setclient(&sa, c);
    rdsem_attr_settype(&sa, RDSEM_LEASED);
    rdcond_attr_init(&ca);
    rdcond_attr_setclient(&ca, c);
    TRY("rdsem_init", rdsem_init(&s, argv[2], 3, &sa));
    TRY("rdsem_wait", rdsem_wait(&s));
    TRY("rdonce_init", rdonce_init(&once, argv[2], &a));
    TRY("rdonce", rdonce(&once, ran));
    TRY("rdlock_init", rdlock_init(&m, mname, &a));
    TRY("rdcond_init", rdcond_init(&cv, argv[2], &ca));
    TRY("rdbarrier_init", rdbarrier_init(&b, argv[2], 2, &a));
    TRY("pthread_create", pthread_create(&t1, NULL, cond_waiter, NULL));
    TRY("pthread_create", pthread_create(&t2, NULL, arriver, NULL));
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL && ferror(stdin))
        return 2;
    TRY("rdlock_lock", rdlock_lock(&m));
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    TRY("rdcond_broadcast", rdcond_broadcast(&cv));
    TRY("rdlock_unlock", rdlock_unlock(&m));
    TRY("rdbarrier_wait", rdbarrier_wait(&b));
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    TRY("waiter", cond_rc);
    TRY("arrival", bar_rc);
    TRY("rdsem_post", rdsem_post(&s));
    printf("done\n");
    fflush(stdout);
    rdcond_destroy(&cv);
    rdbarrier_destroy(&b);
    rdlock_destroy(&m);
    rdonce_destroy(&once);
    rdsem_destroy(&s);
    rdsem_attr_destroy(&sa);
    rdcond_attr_destroy(&ca);
    rdlock_attr_destroy(&a);
    rdlock_client_close(c);
    return 0;
}
