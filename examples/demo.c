/* demo.c - two processes contend for one librdlock mutex.
 *
 *   demo INI_FILE
 *
 * Each worker takes the lock "demo:job" three times.  While it holds the
 * lock it works for twice the lease (the watchdog keeps the hold alive), and
 * prints how long it waited and its fencing token.  The tokens strictly
 * increase across both processes, and no two holds overlap. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdlock.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int worker(const char *ini, const char *who, unsigned lease_ms)
{
    rdlock_client_t *client;
    rdlock_attr_t attr;
    rdlock_t lock;
    int i, rc;

    /* Each process opens its own client (after fork). */
    if ((rc = rdlock_client_open(&client, ini)) != 0) {
        fprintf(stderr, "%s: client_open: %s\n", who, rdlock_strerror(rc));
        return 1;
    }
    rdlock_attr_init(&attr);
    rdlock_attr_setclient(&attr, client);
    rdlock_attr_setlease(&attr, lease_ms);
    rdlock_init(&lock, "demo:job", &attr);
    rdlock_attr_destroy(&attr);

    for (i = 1; i <= 3; i++) {
        uint64_t token;
        double t0 = now_s(), waited;
        if ((rc = rdlock_lock(&lock)) != 0) {
            fprintf(stderr, "%s: lock: %s\n", who, rdlock_strerror(rc));
            return 1;
        }
        waited = now_s() - t0;
        rdlock_fencing_token(&lock, &token);
        printf("%s: round %d: got the lock after %6.3f s, fencing token %llu; working %.1f s "
               "(2x the %.1f s lease: the watchdog renews it)\n",
               who, i, waited, (unsigned long long)token, 2 * lease_ms / 1000.0, lease_ms / 1000.0);
        fflush(stdout);
        usleep(2 * lease_ms * 1000);
        rc = rdlock_unlock(&lock);
        printf("%s: round %d: unlock -> %s\n", who, i, rc == 0 ? "ok" : rdlock_strerror(rc));
        fflush(stdout);
        if (rc != 0)
            return 1;
        usleep(50 * 1000); /* let the other process in */
    }
    rdlock_destroy(&lock);
    rdlock_client_close(client);
    return 0;
}

int main(int argc, char **argv)
{
    const char *names[2] = { "worker A", "worker B" };
    pid_t pids[2];
    int i, status, failed = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s INI_FILE\n", argv[0]);
        return 64;
    }
    printf("librdlock %s demo: two processes, one lock, lease 0.5 s\n", rdlock_version());
    fflush(stdout);
    for (i = 0; i < 2; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[i] == 0)
            _exit(worker(argv[1], names[i], 500));
    }
    for (i = 0; i < 2; i++) {
        if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    printf(failed ? "demo FAILED\n" : "demo done: every hold outlived its lease, tokens increased, no overlap\n");
    return failed;
}
