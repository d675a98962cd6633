/* events.h - the client's background thread: pub/sub wake-ups to the
 * local wait queues (waitq.h) and watchdog renewals, each on a connection
 * of its own, driven by one poll() loop. */
#ifndef RDL_EVENTS_H
#define RDL_EVENTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/table.h"
#include "client/client.h"

/* Start the thread if it is not running (mu held).  0, or ENOMEM (no
 * resources for a thread: pthread_create's EAGAIN; logged).  Its other
 * errors (EINVAL, EPERM) come only from thread attributes, and none are
 * given. */
int rdl_events_start(rdlock_client_t *c);
/* Stop and join it, close its connections (mu not held). */
void rdl_events_stop(rdlock_client_t *c);
/* Run fn(name, arg) on the background thread, soon (mu held): a lost
 * callback owed by an unlock that found its hold gone. */
void rdl_events_lost_later(rdlock_client_t *c, rdlock_lost_fn fn, void *arg, const char *name, size_t namelen);
/* The server(s) serving the client's names moved (a failover; mu not
 * held): drop the pool, the watchdog's and the subscriber's connections
 * (every waiter looks again) and renew every hold on the new server at
 * once.  Background thread only. */
void rdl_events_moved(rdlock_client_t *c);
/* After fork(), in the child (mu held by the fork handler): forget the
 * thread and close (not shut down) its connections. */
void rdl_events_after_fork(rdlock_client_t *c);

#endif
