/* wake.h - the poke that wakes a poll() loop through its self-pipe.  In
 * the base layer so that any layer can wake the background thread
 * (events.c) without depending on it: a wait queue that wants a
 * subscription, a hold due sooner, a Redlock master gone down. */
#ifndef RDL_WAKE_H
#define RDL_WAKE_H

/* Write one byte to the pipe's write end fd (non-blocking).  A full pipe
 * already means "look again"; another failure is logged (DEBUG). */
void rdl_wake(int fd);

#endif
