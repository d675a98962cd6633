/* delayproxy.h - an in-process TCP proxy that delays every byte by a
 * fixed time in each direction, for bench step 8: on loopback a round
 * trip costs less than the servers' CPU, so a quorum that asks its masters
 * in parallel and one that asks them one after another look alike on a
 * machine with fewer cores than masters; with a network's latency in the
 * way, the round trips are the cost and the difference shows.
 *
 * One thread, one poll() over every socket; the bytes read are queued with
 * the time they may go on, and written once it has come, in order.  Each
 * route (an upstream port on 127.0.0.1) gets its own listening port.
 * Plain POSIX, no librdlock. */
#ifndef RDB_DELAYPROXY_H
#define RDB_DELAYPROXY_H

typedef struct dproxy dproxy_t;

/* Start a proxy for the upstream ports up[0..n-1] (n <= 8), delaying each
 * direction by delay_us.  0 and *p, or -1 (printed). */
int dproxy_start(dproxy_t **p, const int *up, int n, long delay_us);
/* The port that leads to up[i]. */
int dproxy_port(const dproxy_t *p, int i);
/* Stop the thread, close every connection, free p (NULL is fine). */
void dproxy_stop(dproxy_t *p);

#endif
