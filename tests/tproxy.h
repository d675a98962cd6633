/* tproxy.h - an in-process TCP proxy for tests that need the network to
 * hold requests back and deliver them late.
 *
 * A test points a client at the proxy instead of at redis-server; each
 * connection the proxy accepts on 127.0.0.1 gets its own upstream
 * connection to 127.0.0.1:<upstream port>, and bytes flow both ways until
 * the test says otherwise:
 *
 *   hold     client->server bytes of the chosen connections are kept in
 *            the proxy instead of forwarded; server->client keeps flowing.
 *            The client sees a server that does not answer: its command
 *            timeout fires, it closes that connection and retries on a new
 *            one.
 *   deliver  what was held is written to the server, in order, on the
 *            upstream connection it came from, also when the client has
 *            closed its side meanwhile: the proxy keeps such an upstream
 *            open until the server has answered, then closes it.  This is
 *            what TCP does with a segment that was delayed in the network
 *            (retransmitted): a request the client gave up on still
 *            reaches the server, late.
 *   mute     the server's answers are dropped: requests run, their
 *            answers are lost on the way back.
 *   freeze   nothing is forwarded in either direction, on any connection,
 *            new ones included (they are accepted and connected upstream,
 *            then frozen too); connections stay open.  thaw forwards what
 *            queued meanwhile, both ways, on every connection the server
 *            still has, even where the client closed its side.
 *
 * The proxy runs in its own thread: poll(2) over a self-pipe, the listening
 * socket and both sockets of every connection; the functions below talk to
 * it through one mutex and condition variable, so a test waits for what it
 * needs (bytes held, connections accepted, answers) instead of sleeping.
 * Every function is thread-safe.  Failures are printed to stderr.
 *
 * Connections are numbered 1, 2, ... in the order they were accepted.
 * Plain POSIX; no CUnit, no librdlock: also used by the torture program's
 * proxy process. */
#ifndef RDT_TPROXY_H
#define RDT_TPROXY_H

#include <stddef.h>

typedef struct tproxy tproxy_t;

/* flags of tproxy_hold */
enum {
    TPROXY_EXISTING = 1, /* the connections open now */
    TPROXY_NEW = 2       /* the connections accepted from now on */
};

/* Reset every client connection now (RST, not FIN): the client's next
 * write on it fails with EPIPE.  The number of connections reset. */
int tproxy_reset(tproxy_t *p);
/* Start a proxy to 127.0.0.1:upstream_port, listening on a free port of
 * 127.0.0.1 (see tproxy_port).  0 and *p, or -1. */
int tproxy_start(tproxy_t **p, int upstream_port);

/* The port the proxy listens on. */
int tproxy_port(const tproxy_t *p);

/* Stop the thread and close every connection; what is still held back is
 * dropped (never delivered).  p may be NULL. */
void tproxy_stop(tproxy_t *p);

/* From now on, hold back client->server bytes of the connections flags
 * choose (TPROXY_EXISTING, TPROXY_NEW, or both).  Bytes the proxy has
 * already written to the server are not taken back.  0, or -1 (bad
 * flags). */
int tproxy_hold(tproxy_t *p, int flags);

/* Hold back client->server bytes of connection id only.  0, or -1 if no
 * such connection is open. */
int tproxy_hold_conn(tproxy_t *p, long id);

/* Stop holding (every connection, and new ones are no longer held) and
 * write everything held back to the server: per connection in the order
 * it was received, connections in the order their first held byte came
 * (the server may still interleave connections: they are separate
 * sockets).  Then wait until the server has answered on each connection
 * that had bytes held (some bytes came back after the last held byte was
 * written), or timeout_ms has passed.  Returns the number of connections
 * delivered, all answered (0 if none had bytes held); -1 if some did not
 * answer in time or closed without answering, or if the proxy is frozen
 * (nothing can be written then).  timeout_ms 0: do not wait; the number
 * of connections delivered.  The answers go to the client if it is still
 * there, else nowhere. */
int tproxy_deliver(tproxy_t *p, int timeout_ms);

/* The same for connection id only (the others keep their holds; new
 * connections are held as before).  1 delivered (and answered, unless
 * timeout_ms is 0), 0 nothing was held on it (also when it is closed and
 * gone: a connection with bytes held is kept until they are delivered,
 * unless the server closes it), -1 as tproxy_deliver or never
 * accepted. */
int tproxy_deliver_conn(tproxy_t *p, long id, int timeout_ms);

/* Forward nothing, either way, until tproxy_thaw.  0. */
int tproxy_freeze(tproxy_t *p);

/* Forward again what queued during the freeze, and what comes next.
 * Connections under a hold stay held.  0. */
int tproxy_thaw(tproxy_t *p);

/* on: from now on the server's answers, on every connection, are read
 * and dropped (counted in muted) instead of forwarded: a request runs
 * on the server and its answer is lost on the way back.  off: answers
 * flow again (those dropped meanwhile stay lost).  0. */
int tproxy_mute(tproxy_t *p, int on);

/* Wait until at least min_bytes client->server bytes are held back (by a
 * hold or a freeze), so that a test knows its request was captured.  0, or
 * -1 after timeout_ms. */
int tproxy_wait_held(tproxy_t *p, size_t min_bytes, int timeout_ms);

/* Wait until at least n connections have been accepted since the start
 * (e.g. the one a client opens for its retry).  0, or -1 after
 * timeout_ms. */
int tproxy_wait_accepted(tproxy_t *p, long n, int timeout_ms);

/* Wait until the client side of connection id is closed: the proxy has
 * seen the client go (after it gave up on a request held back, say).  0,
 * or -1 after timeout_ms. */
int tproxy_wait_closed(tproxy_t *p, long id, int timeout_ms);

/* The ids of up to max connections whose client side is open, oldest
 * first; the number of such connections (may exceed max; ids may be NULL
 * with max 0). */
int tproxy_conns(tproxy_t *p, long *ids, int max);

/* The same for the connections with bytes held back now (by a hold or a
 * freeze), whether their client is there or not. */
int tproxy_held(tproxy_t *p, long *ids, int max);

typedef struct tproxy_stats {
    long accepted;              /* connections accepted so far */
    long open;                  /* connections whose upstream is open */
    long held_conns;            /* connections with bytes held back now */
    size_t held_bytes;          /* client->server bytes held back now (hold or freeze) */
    long delivered;             /* connections delivered by tproxy_deliver* so far */
    long delivered_late;        /* ... of which the client had closed its side */
    long answered;              /* delivered connections the server answered */
    unsigned long long c2s;     /* bytes written to the server */
    unsigned long long s2c;     /* bytes read from the server */
    unsigned long long muted;   /* ... of which dropped by tproxy_mute */
} tproxy_stats_t;

/* A consistent snapshot of the counters. */
void tproxy_stats(tproxy_t *p, tproxy_stats_t *st);

#endif /* RDT_TPROXY_H */
