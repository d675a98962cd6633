/* timedlock.c - a job that waits for a lock only until a deadline, and
 * says so when it gives up (rdlock_timedlock, the pthread_mutex_timedlock
 * of librdlock).
 *
 *   timedlock NAME WAIT_SECONDS WORK_SECONDS      (config: $RDLOCK_CONF)
 *
 * Takes NAME, waiting at most WAIT_SECONDS (0: only if it is free now),
 * then "works" for WORK_SECONDS while holding it, and unlocks.  If the
 * deadline passes first, it asks the server who holds NAME
 * (rdlock_status_name) and says so.  Exit status: 0 done, 75 gave up
 * (try again later), 69 Redis unreachable until the deadline (timed calls
 * keep trying through an outage until then: docs/CONTRACT.md section 2),
 * 1 any other error, 64 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdlock.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A failed librdlock call: the code's name and text, and what the library
 * last logged on this thread (for EIO: which server, and why). */
static void say_why(const char *what, int rc)
{
    char why[256];
    rdlock_last_error(why, sizeof why);
    fprintf(stderr, "timedlock: %s: %s (%s)%s%s\n", what, rdlock_errname(rc), rdlock_strerror(rc),
            why[0] ? ": " : "", why);
}

/* Who holds name, in words, from the server's point of view. */
static void who_holds(const char *name, char *buf, size_t n)
{
    rdlock_status_t st;
    if (rdlock_status_name(NULL, name, &st) != 0) {
        snprintf(buf, n, "(status unavailable)");
        return;
    }
    if (st.nholders == 0)
        snprintf(buf, n, "free right now (it was held until the deadline)");
    else
        snprintf(buf, n, "held %s by %s pid %ld%s, %zu writer(s) waiting", st.mode == 's' ? "shared" : "exclusive",
                 st.holders[0].host, st.holders[0].pid, st.nholders > 1 ? " and others" : "", st.nwriters);
    rdlock_status_free(&st);
}

int main(int argc, char **argv)
{
    rdlock_client_info_t info;
    struct timespec deadline;
    rdlock_t lock;
    double wait_s, work_s, t0;
    uint64_t token = 0;
    char who[600];
    int rc;

    if (argc != 4 || (wait_s = atof(argv[2])) < 0 || (work_s = atof(argv[3])) < 0) {
        fprintf(stderr, "usage: %s NAME WAIT_SECONDS WORK_SECONDS\n", argv[0]);
        return 64;
    }
    if ((rc = rdlock_init(&lock, argv[1], NULL)) != 0) {
        say_why("init", rc);
        return 1;
    }
    /* The process default client: $RDLOCK_CONF, $(sysconfdir)/rdlock.ini or
     * 127.0.0.1:6379.  Creating it now reports a bad configuration here. */
    if ((rc = rdlock_client_info(NULL, &info)) != 0) {
        say_why("cannot set up the default client", rc);
        return rc == EIO ? 69 : 1;
    }
    printf("timedlock: waiting up to %.1f s for %s on Redis at %s\n", wait_s, argv[1], info.server);
    fflush(stdout);

    /* Timed calls take an absolute CLOCK_REALTIME deadline, as POSIX's do
     * (rdlock_clocklock takes CLOCK_MONOTONIC as well). */
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)wait_s;
    deadline.tv_nsec += (long)((wait_s - (double)(time_t)wait_s) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    t0 = now_s();
    rc = rdlock_timedlock(&lock, &deadline);
    switch (rc) {
    case 0:
        break;
    case ETIMEDOUT:
        who_holds(argv[1], who, sizeof who);
        fprintf(stderr, "timedlock: gave up on %s after %.1f s: %s; try again later\n", argv[1], now_s() - t0,
                who);
        rdlock_destroy(&lock);
        return 75;
    case EIO:
        /* Redis did not answer until the deadline: info.last_error says
         * why (so does the library's own log line). */
        rdlock_client_info(NULL, &info);
        fprintf(stderr, "timedlock: gave up on %s after %.1f s: Redis at %s unreachable: %s\n", argv[1],
                now_s() - t0, info.server, info.last_error[0] ? info.last_error : rdlock_strerror(rc));
        rdlock_destroy(&lock);
        return 69;
    default:
        say_why("timedlock", rc);
        rdlock_destroy(&lock);
        return 1;
    }
    rdlock_fencing_token(&lock, &token);
    printf("timedlock: got %s after %.1f s (fencing token %llu); working %.1f s\n", argv[1], now_s() - t0,
           (unsigned long long)token, work_s);
    fflush(stdout);
    sleep_s(work_s);
    if ((rc = rdlock_unlock(&lock)) != 0) {
        say_why("unlock", rc); /* ENOLCK: the work was not protected to its end */
        return 1;
    }
    printf("timedlock: done with %s\n", argv[1]);
    rdlock_destroy(&lock);
    return 0;
}
