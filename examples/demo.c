/* demo.c - two processes contend for one librdlock mutex.
 *
 *   demo INI_FILE
 *
 * Each worker takes the lock "demo:job" three times.  While it holds the
 * lock it works for twice the lease (the watchdog keeps the hold alive).
 *
 * The output is in the order of events, by construction: a worker prints
 * only while it holds the lock, and says it is releasing the lock before it
 * calls rdlock_unlock().  The other worker cannot get the lock before that
 * unlock reaches the server, so its "got the lock" line always comes after
 * the "releasing" line.  A failed unlock (ENOLCK: the hold was lost) goes to
 * stderr and fails the demo.
 *
 * Each worker also records its holds (fencing token, when rdlock_lock()
 * returned, when rdlock_unlock() was called) in memory shared with the
 * parent.  After both exit, the parent checks that the holds did not overlap
 * and that the tokens increased in the order of the holds, and prints the
 * result. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdlock.h>

#define WORKERS 2
#define ROUNDS 3
#define LEASE_MS 500u

struct hold {
    int worker, round;
    uint64_t token;
    double got, released; /* CLOCK_MONOTONIC, shared by all processes */
};

struct holds {
    int n;
    struct hold h[WORKERS * ROUNDS];
};

static struct holds *shared; /* MAP_SHARED: written by the workers, read by the parent */
static const char *const names[WORKERS] = { "worker A", "worker B" };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void say_why(const char *who, const char *what, int rc)
{
    char why[256];
    rdlock_last_error(why, sizeof why);
    fprintf(stderr, "%s: %s: %s (%s)%s%s\n", who, what, rdlock_errname(rc), rdlock_strerror(rc), why[0] ? ": " : "",
            why);
}

static int worker(const char *ini, int w)
{
    const char *who = names[w];
    rdlock_client_t *client;
    rdlock_attr_t attr;
    rdlock_t lock;
    int i, rc;

    /* Each process opens its own client (after fork). */
    if ((rc = rdlock_client_open(&client, ini)) != 0) {
        say_why(who, "client_open", rc);
        return 1;
    }
    rdlock_attr_init(&attr);
    rdlock_attr_setclient(&attr, client);
    rdlock_attr_setlease(&attr, LEASE_MS);
    rdlock_init(&lock, "demo:job", &attr);
    rdlock_attr_destroy(&attr);

    for (i = 1; i <= ROUNDS; i++) {
        struct hold *h;
        uint64_t token = 0;
        double t0 = now_s(), got;

        if ((rc = rdlock_lock(&lock)) != 0) {
            say_why(who, "lock", rc);
            return 1;
        }
        got = now_s();
        rdlock_fencing_token(&lock, &token);
        /* Everything printed from here to rdlock_unlock() is printed while
         * this worker holds the lock. */
        printf("%s: round %d: got the lock after %6.3f s, fencing token %llu; working %.1f s "
               "(2x the %.1f s lease: the watchdog renews it)\n",
               who, i, got - t0, (unsigned long long)token, 2 * LEASE_MS / 1000.0, LEASE_MS / 1000.0);
        fflush(stdout);
        usleep(2 * LEASE_MS * 1000);
        printf("%s: round %d: releasing the lock\n", who, i);
        fflush(stdout);
        h = &shared->h[__atomic_fetch_add(&shared->n, 1, __ATOMIC_SEQ_CST)];
        h->worker = w;
        h->round = i;
        h->token = token;
        h->got = got;
        h->released = now_s();
        if ((rc = rdlock_unlock(&lock)) != 0) {
            say_why(who, "unlock", rc); /* ENOLCK: the hold was lost before the unlock */
            return 1;
        }
    }
    rdlock_destroy(&lock);
    rdlock_client_close(client);
    return 0;
}

static int by_got(const void *a, const void *b)
{
    const struct hold *x = a, *y = b;
    return x->got < y->got ? -1 : x->got > y->got;
}

/* The holds, in the order they were taken, must not overlap and must have
 * increasing fencing tokens.  Prints what is wrong; 0 when nothing is. */
static int check_holds(void)
{
    int i, bad = 0;

    if (shared->n != WORKERS * ROUNDS) {
        fprintf(stderr, "demo: %d holds recorded, want %d\n", shared->n, WORKERS * ROUNDS);
        return 1;
    }
    qsort(shared->h, shared->n, sizeof shared->h[0], by_got);
    for (i = 1; i < shared->n; i++) {
        const struct hold *p = &shared->h[i - 1], *h = &shared->h[i];
        if (h->got < p->released) {
            fprintf(stderr, "demo: %s round %d got the lock while %s round %d still held it\n", names[h->worker],
                    h->round, names[p->worker], p->round);
            bad = 1;
        }
        if (h->token <= p->token) {
            fprintf(stderr, "demo: %s round %d has fencing token %llu, not above %llu of the hold before it\n",
                    names[h->worker], h->round, (unsigned long long)h->token, (unsigned long long)p->token);
            bad = 1;
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    pid_t pids[WORKERS];
    int i, status, failed = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s INI_FILE\n", argv[0]);
        return 64;
    }
    shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(shared, 0, sizeof *shared);
    printf("librdlock %s demo: two processes, one lock, lease %.1f s\n", rdlock_version(), LEASE_MS / 1000.0);
    fflush(stdout); /* before fork: the children must not inherit a full buffer */
    for (i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[i] == 0)
            _exit(worker(argv[1], i));
    }
    for (i = 0; i < WORKERS; i++) {
        if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    if (!failed)
        failed = check_holds();
    if (failed)
        printf("demo FAILED\n");
    else
        printf("demo done: %d holds, each 2x its lease, one at a time, fencing tokens %llu..%llu in order, "
               "every unlock ok\n",
               shared->n, (unsigned long long)shared->h[0].token,
               (unsigned long long)shared->h[shared->n - 1].token);
    return failed;
}
