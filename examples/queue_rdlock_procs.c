/* queue_rdlock_procs.c - queue_pthread.c ported to PROCESSES (made with
 * fork() here; on several hosts they would simply be started there): the
 * pthread_mutex_t becomes an rdlock_t, the two pthread_cond_t become
 * rdcond_t, and the queue, which no longer lives in one address space,
 * becomes a file that is only read and written under the lock.
 *
 *   queue_rdlock_procs FILE PRODUCERS CONSUMERS ITEMS CAPACITY
 *                                                  (config: $RDLOCK_CONF)
 *
 * Prints the same line as queue_pthread.  The loops are those of the
 * pthread version, call for call: pthread_cond_wait(&c, &mu) becomes
 * rdcond_wait(&c, &lock), which releases the lock while it sleeps and
 * holds it again when it returns. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdlock.h>

static rdlock_t lock = RDLOCK_INITIALIZER("queue");
static rdcond_t notfull, notempty;
static const char *path;
static long cap, total;
static int items;

/* The queue file: "<consumed> <sum> <len> <item>...". */
typedef struct queue {
    long consumed, sum, len, item[1024];
} queue_t;

static void load(queue_t *q)
{
    FILE *f = fopen(path, "r");
    long i;
    q->consumed = q->sum = q->len = 0;
    if (f == NULL)
        return;
    if (fscanf(f, "%ld %ld %ld", &q->consumed, &q->sum, &q->len) != 3)
        q->len = 0;
    for (i = 0; i < q->len; i++)
        if (fscanf(f, "%ld", &q->item[i]) != 1)
            q->len = i;
    fclose(f);
}

static void store(const queue_t *q)
{
    FILE *f = fopen(path, "w");
    long i;
    if (f == NULL) {
        perror(path);
        exit(74);
    }
    fprintf(f, "%ld %ld %ld", q->consumed, q->sum, q->len);
    for (i = 0; i < q->len; i++)
        fprintf(f, " %ld", q->item[i]);
    fputc('\n', f);
    fclose(f);
}

static void check(const char *what, int rc)
{
    if (rc != 0) {
        fprintf(stderr, "queue_rdlock_procs: %s: %s (%s)\n", what, rdlock_errname(rc), rdlock_strerror(rc));
        exit(70);
    }
}

static void producer(void)
{
    queue_t q;
    int i;
    for (i = 1; i <= items; i++) {
        check("rdlock_lock", rdlock_lock(&lock));
        for (load(&q); q.len == cap; load(&q))
            check("rdcond_wait", rdcond_wait(&notfull, &lock));
        q.item[q.len++] = i;
        store(&q);
        check("rdcond_signal", rdcond_signal(&notempty));
        check("rdlock_unlock", rdlock_unlock(&lock));
    }
}

static void consumer(void)
{
    queue_t q;
    long i;
    check("rdlock_lock", rdlock_lock(&lock));
    for (;;) {
        for (load(&q); q.len == 0 && q.consumed < total; load(&q))
            check("rdcond_wait", rdcond_wait(&notempty, &lock));
        if (q.consumed == total)
            break;
        q.sum += q.item[0];
        for (i = 1; i < q.len; i++)
            q.item[i - 1] = q.item[i];
        q.len--;
        q.consumed++;
        store(&q);
        if (q.consumed == total)
            check("rdcond_broadcast", rdcond_broadcast(&notempty)); /* the other consumers stop too */
        check("rdcond_signal", rdcond_signal(&notfull));
    }
    check("rdlock_unlock", rdlock_unlock(&lock));
}

int main(int argc, char **argv)
{
    int np, nc, i, status, bad = 0;
    queue_t q = { 0 };
    if (argc != 6 || (np = atoi(argv[2])) < 1 || (nc = atoi(argv[3])) < 1 || np + nc > 64 ||
        (items = atoi(argv[4])) < 1 || (cap = atol(argv[5])) < 1 || cap > 1024) {
        fprintf(stderr, "usage: queue_rdlock_procs FILE PRODUCERS CONSUMERS ITEMS CAPACITY (<= 1024)\n");
        return 64;
    }
    path = argv[1];
    total = (long)np * items;
    store(&q);
    check("rdcond_init", rdcond_init(&notfull, "queue-notfull", NULL));
    check("rdcond_init", rdcond_init(&notempty, "queue-notempty", NULL));
    for (i = 0; i < np + nc; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 71;
        }
        if (pid == 0) {
            if (i < np)
                producer();
            else
                consumer();
            exit(0);
        }
    }
    for (i = 0; i < np + nc; i++)
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad = 1;
    load(&q);
    printf("consumed %ld items, sum %ld\n", q.consumed, q.sum);
    return bad ? 70 : 0;
}
