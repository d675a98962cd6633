/* client_fencing.c - an explicit client, and a storage write guarded by
 * the fencing token.
 *
 *   client_fencing INI STORE
 *
 * Opens a client from INI (rdlock_client_open), sets up two handles of the
 * lock "orders:42" on it (rdlock_init with attributes naming the client),
 * and plays the case that leases alone cannot handle:
 *
 *   A takes the lock with a short lease and no watchdog, writes to STORE,
 *     then stalls (a long GC pause, a stopped VM) past its lease;
 *   B, waiting meanwhile, gets the lock with a higher fencing token and
 *     writes;
 *   A wakes up and writes again, believing it still holds the lock.
 *
 * STORE is a file standing for a database that remembers the highest token
 * it has seen and refuses writes with a lower one, so A's late write is
 * refused, and A's unlock reports ENOLCK (its hold had ended).  Threads of
 * one client are different owners, as in pthreads, so A and B are two
 * threads here; they could as well be two hosts.
 *
 * A server that cannot be reached is not an error for rdlock_client_open()
 * (lock calls wait for it, docs/CONTRACT.md section 3); this program would
 * rather not wait, and says why it stops.  Exit status: 0 when the story
 * went as told, 69 Redis unreachable or refusing, 78 configuration error,
 * 1 anything else. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdlock.h>

static const char *store_path;
static rdlock_t lock_a, lock_b;
static int b_ok;

/* ---- the protected resource: refuses writes with an older token ---- */

/* Write value if token is not older than the newest token the store has
 * seen.  A real store does the comparison and the write in one atomic step
 * (UPDATE ... SET value = ?, fence = ? WHERE fence <= ?); here the two
 * writers never write at the same moment. */
static int store_write(uint64_t token, const char *value)
{
    uint64_t seen = 0;
    char old[64] = "";
    FILE *f = fopen(store_path, "r");
    if (f != NULL) {
        if (fscanf(f, "%" SCNu64 " %63s", &seen, old) < 1)
            seen = 0;
        fclose(f);
    }
    if (token < seen) {
        printf("store: token %" PRIu64 " writes \"%s\": refused (the store has seen token %" PRIu64 ")\n", token,
               value, seen);
        return EPERM;
    }
    if ((f = fopen(store_path, "w")) == NULL)
        return errno;
    fprintf(f, "%" PRIu64 " %s\n", token, value);
    fclose(f);
    printf("store: token %" PRIu64 " writes \"%s\": accepted\n", token, value);
    return 0;
}

/* ---- the lock side ---- */

static void say_why(const char *who, const char *what, int rc)
{
    char why[256];
    rdlock_last_error(why, sizeof why);
    fprintf(stderr, "client_fencing: %s: %s: %s (%s)%s%s\n", who, what, rdlock_errname(rc), rdlock_strerror(rc),
            why[0] ? ": " : "", why);
}

static void *b_main(void *arg)
{
    struct timespec deadline;
    uint64_t token;
    int rc;
    (void)arg;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10; /* a bound for this demonstration; rdlock_lock would do */
    if ((rc = rdlock_timedlock(&lock_b, &deadline)) != 0) {
        say_why("B", "timedlock", rc);
        return NULL;
    }
    rdlock_fencing_token(&lock_b, &token);
    printf("B: holds orders:42 now, fencing token %" PRIu64 "\n", token);
    if (store_write(token, "B1") == 0)
        b_ok = 1;
    rc = rdlock_unlock(&lock_b);
    printf("B: unlock: %s\n", rc == 0 ? "ok" : rdlock_errname(rc));
    if (rc != 0)
        b_ok = 0;
    return NULL;
}

int main(int argc, char **argv)
{
    rdlock_client_t *client;
    rdlock_client_info_t info;
    rdlock_attr_t attr;
    pthread_t b;
    uint64_t token;
    char why[256];
    int rc, ok = 1;

    if (argc != 3) {
        fprintf(stderr, "usage: %s INI STORE\n", argv[0]);
        return 64;
    }
    store_path = argv[2];
    remove(store_path);

    /* 1. The client: one configuration, its connections and its thread. */
    if ((rc = rdlock_client_open(&client, argv[1])) != 0) {
        say_why("client", argv[1], rc); /* ENOENT, EINVAL (which key), EACCES, EIO (fail_fast) */
        return rc == EINVAL || rc == ENOENT ? 78 : rc == EIO || rc == EACCES ? 69 : 1;
    }
    rdlock_client_info(client, &info);
    if (rdlock_last_error(why, sizeof why) == RDLOCK_ERRSRC_REDIS) {
        fprintf(stderr, "client_fencing: Redis at %s is unreachable, and this program does not wait for it "
                "(the library said: %s)\n", info.server, why);
        rdlock_client_close(client);
        return 69;
    }
    printf("client: Redis at %s, fail_fast %s\n", info.server, info.fail_fast ? "yes" : "no");

    /* 2. Two handles of one lock on that client: A's with a 300 ms lease
     * that nobody renews, B's with the configured lease and watchdog. */
    rdlock_attr_init(&attr);
    rdlock_attr_setclient(&attr, client);
    rdlock_init(&lock_b, "orders:42", &attr);
    rdlock_attr_setlease(&attr, 300);
    rdlock_attr_setwatchdog(&attr, 0);
    rdlock_init(&lock_a, "orders:42", &attr);
    rdlock_attr_destroy(&attr);

    /* 3. A holds it and writes with its token. */
    if ((rc = rdlock_lock(&lock_a)) != 0) {
        say_why("A", "lock", rc);
        return rc == EIO || rc == EACCES ? 69 : 1;
    }
    rdlock_fencing_token(&lock_a, &token);
    printf("A: holds orders:42, fencing token %" PRIu64 " (lease 0.3 s, no watchdog)\n", token);
    if (store_write(token, "A1") != 0)
        ok = 0;

    /* 4. A stalls; B, waiting, gets the lock once A's lease runs out. */
    printf("A: stalls (a long pause) while B waits for the lock\n");
    fflush(stdout);
    pthread_create(&b, NULL, b_main, NULL);
    pthread_join(b, NULL);
    if (!b_ok)
        ok = 0;

    /* 5. A wakes up and writes as if it still held the lock. */
    printf("A: wakes up, writes again with token %" PRIu64 "\n", token);
    if (store_write(token, "A2") != EPERM)
        ok = 0;
    rc = rdlock_unlock(&lock_a);
    printf("A: unlock: %s%s\n", rdlock_errname(rc),
           rc == ENOLCK ? " (its hold had ended before the unlock: the store's refusal was the only guard)" : "");
    if (rc != ENOLCK)
        ok = 0;

    /* 6. Teardown: every lock destroyed, then the client closed. */
    rdlock_destroy(&lock_a);
    rdlock_destroy(&lock_b);
    if ((rc = rdlock_client_close(client)) != 0) {
        say_why("client", "close", rc);
        ok = 0;
    }
    printf("%s\n", ok ? "fencing: the stale write was refused" : "fencing: UNEXPECTED OUTCOME");
    return ok ? 0 : 1;
}
