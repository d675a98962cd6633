/* queue_pthread.c - a bounded producer/consumer queue with one
 * pthread_mutex_t and two pthread_cond_t, the starting point of
 * queue_rdlock_procs.c (its port to processes on any hosts).
 *
 *   queue_pthread PRODUCERS CONSUMERS ITEMS CAPACITY
 *
 * Each producer thread puts ITEMS numbers 1..ITEMS in the queue (at most
 * CAPACITY at a time), the consumers take them out; it prints how many
 * were consumed and their sum: PRODUCERS x ITEMS and
 * PRODUCERS x ITEMS x (ITEMS + 1) / 2. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static long *ring, head, len, cap, total, consumed, sum;
static int items;

static void *producer(void *arg)
{
    int i;
    (void)arg;
    for (i = 1; i <= items; i++) {
        pthread_mutex_lock(&mu);
        while (len == cap)
            pthread_cond_wait(&notfull, &mu);
        ring[(head + len++) % cap] = i;
        pthread_cond_signal(&notempty);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (len == 0 && consumed < total)
            pthread_cond_wait(&notempty, &mu);
        if (consumed == total)
            break;
        sum += ring[head];
        head = (head + 1) % cap;
        len--;
        if (++consumed == total)
            pthread_cond_broadcast(&notempty); /* the other consumers stop too */
        pthread_cond_signal(&notfull);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    int np, nc, i;
    pthread_t th[128];
    if (argc != 5 || (np = atoi(argv[1])) < 1 || (nc = atoi(argv[2])) < 1 || np + nc > 128 ||
        (items = atoi(argv[3])) < 1 || (cap = atol(argv[4])) < 1) {
        fprintf(stderr, "usage: queue_pthread PRODUCERS CONSUMERS ITEMS CAPACITY\n");
        return 64;
    }
    if ((ring = calloc((size_t)cap, sizeof *ring)) == NULL)
        return 71;
    total = (long)np * items;
    for (i = 0; i < np + nc; i++)
        pthread_create(&th[i], NULL, i < np ? producer : consumer, NULL);
    for (i = 0; i < np + nc; i++)
        pthread_join(th[i], NULL);
    printf("consumed %ld items, sum %ld\n", consumed, sum);
    free(ring);
    return 0;
}
