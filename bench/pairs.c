/* pairs.c - N uncontended lock+unlock pairs on one thread, and nothing
 * else: the program bench/callgrind.sh counts the client's instructions
 * of (run twice, with two N, so that start-up cancels out).
 *
 *   rdlock-pairs N [mutex|read]     RDLOCK_CONF names the server
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdlock.h"

static int mutex_pairs(long n)
{
    rdlock_t m;
    int rc = rdlock_init(&m, "callgrind-pairs", NULL);
    for (long i = 0; rc == 0 && i < n; i++) {
        rc = rdlock_lock(&m);
        if (rc == 0)
            rc = rdlock_unlock(&m);
    }
    int drc = rdlock_destroy(&m);
    return rc ? rc : drc;
}

static int read_pairs(long n)
{
    rdrwlock_t rw;
    int rc = rdrwlock_init(&rw, "callgrind-read", NULL);
    for (long i = 0; rc == 0 && i < n; i++) {
        rc = rdrwlock_rdlock(&rw);
        if (rc == 0)
            rc = rdrwlock_unlock(&rw);
    }
    int drc = rdrwlock_destroy(&rw);
    return rc ? rc : drc;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
    const char *kind = argc > 2 ? argv[2] : "mutex";
    if (n <= 0 || (strcmp(kind, "mutex") != 0 && strcmp(kind, "read") != 0)) {
        fprintf(stderr, "usage: rdlock-pairs N [mutex|read]   (RDLOCK_CONF names the server)\n");
        return 2;
    }
    int rc = strcmp(kind, "mutex") == 0 ? mutex_pairs(n) : read_pairs(n);
    if (rc) {
        fprintf(stderr, "rdlock-pairs: %s\n", strerror(rc));
        return 1;
    }
    return 0;
}
