/* clock.h - each server's clock as a client sees it (an offset from local
 * monotonic time, a lower bound), and the stamps it gives acquire attempts
 * so that a late copy of one is void on the server (call.h). */
#ifndef RDL_CLOCK_H
#define RDL_CLOCK_H

#include <stdbool.h>

#include "client/client.h"

/* A sample of the clock of route's server: server_ms read by the server
 * between our sending and local monotonic time recv_at (mu not held). */
void rdl_client_clock(rdlock_client_t *c, const char *route, long long server_ms, long long recv_at);

/* Write into stamp (RDL_STAMP_LEN bytes) the server time after which an
 * attempt sent to route's server at `sent` (monotonic ms) is void; 0 if
 * its clock is not known yet.  Whether route's clock is known; sampling
 * it on conn (TIME): 0, or EIO. */
void rdl_client_stamp(rdlock_client_t *c, const char *route, char *stamp, long long sent);
bool rdl_client_clock_known(rdlock_client_t *c, const char *route);
int rdl_client_clock_sample(rdlock_client_t *c, rdl_conn_t *conn);

#endif
