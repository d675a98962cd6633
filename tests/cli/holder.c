/* holder.c - a C program that holds a lock name for tests/test_cli.sh, to
 * show that rdlock(1) and librdlock users exclude each other
 * (docs/CONTRACT.md sections 1, 8).
 *
 *   holder [-t] [-s] INI NAME
 *
 * Opens a client from INI and takes NAME: exclusively through an rdlock_t
 * (rdlock_lock), or shared through an rdrwlock_t with -s (rdrwlock_rdlock);
 * with -t the try form.  Prints "locked TOKEN" (or "busy" and exits 1 when
 * a try finds it held), then waits for a line (or EOF) on stdin, unlocks
 * and prints "unlocked RC".  Exit 0, 1 busy, 2 error. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdlock.h"

int main(int argc, char **argv)
{
    rdlock_client_t *c;
    rdlock_attr_t a;
    rdlock_t m;
    rdrwlock_t rw;
    uint64_t token = 0;
    char line[256];
    int try = 0, shared = 0, opt, rc;

    while ((opt = getopt(argc, argv, "ts")) != -1) {
        if (opt == 't')
            try = 1;
        else if (opt == 's')
            shared = 1;
        else
            return 2;
    }
    if (argc - optind != 2) {
        fprintf(stderr, "usage: holder [-t] [-s] INI NAME\n");
        return 2;
    }
    if ((rc = rdlock_client_open(&c, argv[optind])) != 0) {
        fprintf(stderr, "holder: client_open: %s\n", rdlock_strerror(rc));
        return 2;
    }
    rdlock_attr_init(&a);
    rdlock_attr_setclient(&a, c);
    if (shared) {
        rc = rdrwlock_init(&rw, argv[optind + 1], &a);
        if (rc == 0)
            rc = try ? rdrwlock_tryrdlock(&rw) : rdrwlock_rdlock(&rw);
        if (rc == 0)
            rdrwlock_fencing_token(&rw, &token);
    } else {
        rc = rdlock_init(&m, argv[optind + 1], &a);
        if (rc == 0)
            rc = try ? rdlock_trylock(&m) : rdlock_lock(&m);
        if (rc == 0)
            rdlock_fencing_token(&m, &token);
    }
    rdlock_attr_destroy(&a);
    if (rc == EBUSY) {
        printf("busy\n");
        return 1;
    }
    if (rc != 0) {
        fprintf(stderr, "holder: lock: %s\n", rdlock_strerror(rc));
        return 2;
    }
    printf("locked %" PRIu64 "\n", token);
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL && ferror(stdin))
        fprintf(stderr, "holder: stdin: %s\n", strerror(errno));
    rc = shared ? rdrwlock_unlock(&rw) : rdlock_unlock(&m);
    printf("unlocked %d\n", rc);
    fflush(stdout);
    if (shared)
        rdrwlock_destroy(&rw);
    else
        rdlock_destroy(&m);
    rdlock_client_close(c);
    return rc == 0 ? 0 : 2;
}
