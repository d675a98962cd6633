/* info.c - see info.h. */
#include "rdl_build.h"

#include <errno.h>
#include <string.h>

#include "proto/info.h"

#define INFO_REPLICAS_MAX 100000 /* far above any real master's */

/* Does the line [p, end) start with the len bytes of s? */
static int starts(const char *p, const char *end, const char *s, size_t len)
{
    return (size_t)(end - p) >= len && memcmp(p, s, len) == 0;
}

/* The decimal number [p, end), at most INFO_REPLICAS_MAX: 0 and *n, or
 * EIO (empty, not digits, too large). */
static int number(const char *p, const char *end, int *n)
{
    long v = 0;
    if (p == end)
        return EIO;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return EIO;
        v = v * 10 + (*p - '0');
        if (v > INFO_REPLICAS_MAX)
            return EIO;
    }
    *n = (int)v;
    return 0;
}

/* A "slave<N>:" line's fields [p, end) ("ip=..,port=..,state=online,..."):
 * 1 if its state is online, 0 if another, -1 if it has no state (or an
 * empty one). */
static int replica_state(const char *p, const char *end)
{
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *fend = comma != NULL ? comma : end;
        if (starts(p, fend, "state=", 6))
            return fend == p + 6 ? -1 : fend - (p + 6) == 6 && memcmp(p + 6, "online", 6) == 0;
        p = fend + (comma != NULL);
    }
    return -1;
}

int rdl_info_online_replicas(const char *text, size_t len, int *online)
{
    const char *p = text, *end = text + len;
    int role = 0, connected = -1, listed = 0, up = 0; /* role: 1 master, 2 replica */

    if (text == NULL)
        return EIO;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *lend = nl != NULL ? nl : end;
        const char *colon;
        if (lend > p && lend[-1] == '\r')
            lend--;
        colon = memchr(p, ':', (size_t)(lend - p));
        if (starts(p, lend, "role:", 5)) {
            role = lend - (p + 5) == 6 && memcmp(p + 5, "master", 6) == 0  ? 1
                   : lend - (p + 5) == 5 && memcmp(p + 5, "slave", 5) == 0 ? 2
                                                                            : -1;
        } else if (starts(p, lend, "connected_slaves:", 17)) {
            if (number(p + 17, lend, &connected) != 0)
                return EIO;
        } else if (starts(p, lend, "slave", 5) && colon != NULL && colon > p + 5) {
            /* "slave0:", not "slave_read_only:" or "slaves": digits only. */
            int idx, st;
            if (number(p + 5, colon, &idx) == 0) {
                if ((st = replica_state(colon + 1, lend)) < 0)
                    return EIO;
                listed++;
                up += st;
            }
        }
        p = nl != NULL ? nl + 1 : end;
    }
    if (role == 2)
        return EROFS;
    /* Redis leaves out of the list a replica whose address it cannot
     * read or whose state has no name (one that only takes an RDB):
     * never online, so fewer lines than connected_slaves count is fine. */
    if (role != 1 || connected < listed)
        return EIO;
    *online = up;
    return 0;
}
