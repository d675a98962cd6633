/* clock.c - each server's clock, as a client sees it, and the stamps that
 * make late acquire attempts void (clock.h). */
#include "rdl_build.h"

#include <stdio.h>
#include <string.h>

#include "base/fmt.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/clock.h"

/* The clock sample of route's server (mu held): each server has a clock
 * of its own (a cluster's masters are different machines).  create: make
 * room for it, reusing the oldest entry when the table is full.  NULL if
 * none. */
static rdl_clock_t *clock_of(rdlock_client_t *c, const char *route, bool create)
{
    rdl_clock_t *oldest = NULL;
    for (int i = 0; i < c->nclocks; i++) {
        if (strcmp(c->clocks[i].route, route) == 0)
            return &c->clocks[i];
        if (oldest == NULL || c->clocks[i].at < oldest->at)
            oldest = &c->clocks[i];
    }
    if (!create)
        return NULL;
    if (c->nclocks < RDL_CLOCKS_MAX)
        oldest = &c->clocks[c->nclocks++];
    snprintf(oldest->route, sizeof oldest->route, "%s", route);
    oldest->ok = false;
    return oldest;
}

void rdl_client_clock(rdlock_client_t *c, const char *route, long long server_ms, long long recv_at)
{
    rdl_clock_t *k;
    if (server_ms <= 0)
        return;
    RDL_LOCK(c);
    /* The server read its clock before we received the answer, so this is
     * a lower bound of the offset; the newest sample, so that drift
     * between the two clocks stays small. */
    if ((k = clock_of(c, route, true)) != NULL) {
        k->off = server_ms - recv_at;
        k->at = recv_at;
        k->ok = true;
    }
    RDL_UNLOCK(c);
}

/* Write into call->stamp the server time after which an attempt sent now
 * is void: its sending + command_timeout_ms in the server's clock, taken
 * low (the offset is a lower bound, less 1000 ppm of drift since the
 * sample), so that when the client gives up on the attempt, command_timeout_ms
 * after sending it, the server's clock is past the stamp.  0 if the clock is
 * not known yet. */
void rdl_client_stamp(rdlock_client_t *c, const char *route, char *stamp, long long sent)
{
    long long s = 0;
    char digits[24];
    size_t n, i;
    rdl_clock_t *k;
    RDL_LOCK(c);
    if ((k = clock_of(c, route, false)) != NULL && k->ok)
        s = sent + k->off - (sent - k->at) / 1000 - 1 + c->cfg.command_timeout_ms;
    RDL_UNLOCK(c);
    if (s < 0)
        s = 0;
    n = rdl_fmt_u64(digits, (unsigned long long)s);
    for (i = 0; i < RDL_STAMP_LEN; i++)
        stamp[i] = i < RDL_STAMP_LEN - n ? '0' : digits[i - (RDL_STAMP_LEN - n)];
}

bool rdl_client_clock_known(rdlock_client_t *c, const char *route)
{
    rdl_clock_t *k;
    bool ok;
    RDL_LOCK(c);
    k = clock_of(c, route, false);
    ok = k != NULL && k->ok;
    RDL_UNLOCK(c);
    return ok;
}

int rdl_client_clock_sample(rdlock_client_t *c, rdl_conn_t *conn)
{
    long long ms;
    int rc = rdl_conn_time(conn, &ms);
    if (rc == 0)
        rdl_client_clock(c, conn->route, ms, rdl_now_ms());
    return rc;
}
