/* tproxy.c - an in-process TCP proxy for tests; see tproxy.h.
 *
 * One thread polls a self-pipe, the listening socket and both sockets of
 * every connection.  All state is under one mutex, which the thread holds
 * except while it sits in poll(2); the API functions take it, change flags
 * or write held bytes themselves, and poke the thread through the pipe so
 * that it polls again with the new state.  Nothing here sleeps to wait:
 * callers wait on the condition variable, which the thread broadcasts after
 * every round.
 *
 * Per connection, two buffers: `up` (client->server bytes not yet written:
 * held, frozen, or the socket was full) and `down` (server->client).  The
 * proxy always reads what a side sends (up to TP_CAP waiting), so a request
 * is captured as soon as the client writes it, and a client that closes
 * cannot take back what it sent.  An upstream whose client has gone stays
 * open while it has bytes to deliver, and after writing them until the
 * server answers (at most TP_LINGER_MS); then it is closed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tproxy.h"

#define TP_CAP (1u << 20)  /* stop reading a side while this much waits for the other */
#define TP_LINGER_MS 5000  /* an upstream whose client is gone waits this long for an answer */

typedef struct tp_buf {
    char *d;
    size_t len, cap;
} tp_buf_t;

/* One tproxy_deliver* call waiting for answers (on its caller's stack). */
typedef struct tp_batch {
    int pending, answered, failed;
} tp_batch_t;

typedef struct tp_conn {
    struct tp_conn *next;
    long id;
    int cfd, sfd;                /* -1 once closed */
    int held;                    /* client->server bytes are held back */
    int unanswered;              /* bytes written upstream, none came back since */
    long long linger_until;      /* client gone: give up waiting for an answer then */
    unsigned long long first_seq; /* arrival order of the first byte now in up */
    tp_batch_t *batch;           /* delivered, waiting for the answer */
    tp_buf_t up, down;
} tp_conn_t;

struct tproxy {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int lfd, port, upstream_port;
    int wake[2];
    int stop, frozen, hold_new, mute;
    tp_conn_t *conns;
    unsigned long long seq;
    tproxy_stats_t st; /* held_conns, held_bytes, open: computed on demand */
    struct pollfd *pfd;
    tp_conn_t **pconn;
    size_t pcap;
};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timespec mono_at(long long ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    return ts;
}

static int buf_add(tp_buf_t *b, const char *s, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *d;
        while (cap < b->len + n)
            cap *= 2;
        d = realloc(b->d, cap);
        if (d == NULL)
            return -1;
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->len, s, n);
    b->len += n;
    return 0;
}

static void buf_drop(tp_buf_t *b, size_t n)
{
    memmove(b->d, b->d + n, b->len - n);
    b->len -= n;
}

static void poke(tproxy_t *p)
{
    ssize_t w;
    do
        w = write(p->wake[1], "x", 1);
    while (w < 0 && errno == EINTR);
    /* EAGAIN: the pipe is full, the thread will wake anyway */
}

static void batch_done(tproxy_t *p, tp_conn_t *c, int answered)
{
    if (c->batch == NULL)
        return;
    c->batch->pending--;
    if (answered) {
        c->batch->answered++;
        p->st.answered++;
    } else {
        c->batch->failed++;
    }
    c->batch = NULL;
}

static void client_gone(tproxy_t *p, tp_conn_t *c)
{
    (void)p;
    if (c->cfd >= 0)
        close(c->cfd);
    c->cfd = -1;
    c->down.len = 0;
    if (c->unanswered)
        c->linger_until = mono_ms() + TP_LINGER_MS;
}

static void server_gone(tproxy_t *p, tp_conn_t *c)
{
    if (c->sfd >= 0)
        close(c->sfd);
    c->sfd = -1;
    c->up.len = 0;
    c->unanswered = 0;
    batch_done(p, c, 0);
    /* The client sees the server go, as it would without the proxy. */
    if (c->cfd >= 0)
        close(c->cfd);
    c->cfd = -1;
    c->down.len = 0;
}

/* Write what may be written upstream now. */
static void flush_up(tproxy_t *p, tp_conn_t *c)
{
    while (!p->frozen && !c->held && c->sfd >= 0 && c->up.len > 0) {
        ssize_t w = send(c->sfd, c->up.d, c->up.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w <= 0) {
            server_gone(p, c);
            return;
        }
        buf_drop(&c->up, (size_t)w);
        p->st.c2s += (unsigned long long)w;
        c->unanswered = 1;
        if (c->cfd < 0)
            c->linger_until = mono_ms() + TP_LINGER_MS;
    }
}

static void flush_down(tproxy_t *p, tp_conn_t *c)
{
    while (!p->frozen && c->cfd >= 0 && c->down.len > 0) {
        ssize_t w = send(c->cfd, c->down.d, c->down.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w <= 0) {
            client_gone(p, c);
            return;
        }
        buf_drop(&c->down, (size_t)w);
    }
}

static void read_client(tproxy_t *p, tp_conn_t *c)
{
    char buf[65536];
    for (;;) {
        ssize_t r = recv(c->cfd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            client_gone(p, c);
            return;
        }
        if (c->up.len == 0)
            c->first_seq = ++p->seq;
        if (buf_add(&c->up, buf, (size_t)r) != 0) {
            fprintf(stderr, "tproxy: out of memory: connection %ld dropped\n", c->id);
            server_gone(p, c);
            return;
        }
        flush_up(p, c);
        return;
    }
}

static void read_server(tproxy_t *p, tp_conn_t *c)
{
    char buf[65536];
    for (;;) {
        ssize_t r = recv(c->sfd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            server_gone(p, c);
            return;
        }
        p->st.s2c += (unsigned long long)r;
        c->unanswered = 0;
        if (c->up.len == 0)
            batch_done(p, c, 1); /* an answer after everything delivered was written */
        if (p->mute) {
            p->st.muted += (unsigned long long)r; /* lost on the way back */
            return;
        }
        if (c->cfd >= 0) {
            if (buf_add(&c->down, buf, (size_t)r) != 0) {
                fprintf(stderr, "tproxy: out of memory: connection %ld dropped\n", c->id);
                server_gone(p, c);
                return;
            }
            flush_down(p, c);
        }
        return;
    }
}

static int connect_upstream(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Blocking: on loopback the kernel completes it at once, also for a
     * stopped server. */
    while (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EINTR)
            continue;
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void accept_all(tproxy_t *p)
{
    for (;;) {
        int cfd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), sfd, one = 1;
        tp_conn_t *c, **pp;
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        sfd = connect_upstream(p->upstream_port);
        c = sfd >= 0 ? calloc(1, sizeof *c) : NULL;
        if (c == NULL) {
            fprintf(stderr, "tproxy: cannot connect to 127.0.0.1:%d: %s\n", p->upstream_port,
                    sfd < 0 ? strerror(errno) : "out of memory");
            close(cfd);
            if (sfd >= 0)
                close(sfd);
            continue;
        }
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->cfd = cfd;
        c->sfd = sfd;
        c->id = ++p->st.accepted;
        c->held = p->hold_new;
        for (pp = &p->conns; *pp != NULL; pp = &(*pp)->next)
            ;
        *pp = c;
    }
}

static void conn_free(tp_conn_t *c)
{
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->sfd >= 0)
        close(c->sfd);
    free(c->up.d);
    free(c->down.d);
    free(c);
}

/* Close what is over: connections both of whose sides are gone, and
 * upstreams whose client is gone and that have nothing more to deliver or
 * wait for.  Returns the nearest linger deadline (0: none). */
static long long reap(tproxy_t *p)
{
    tp_conn_t **pp = &p->conns;
    long long now = mono_ms(), next = 0;
    while (*pp != NULL) {
        tp_conn_t *c = *pp;
        if (c->cfd < 0 && c->sfd >= 0 && c->up.len == 0) {
            if (c->unanswered && c->linger_until > now) {
                if (next == 0 || c->linger_until < next)
                    next = c->linger_until;
            } else {
                close(c->sfd);
                c->sfd = -1;
            }
        }
        if (c->cfd < 0 && c->sfd < 0) {
            batch_done(p, c, 0);
            *pp = c->next;
            conn_free(c);
            continue;
        }
        pp = &c->next;
    }
    return next;
}

static void *proxy_thread(void *arg)
{
    tproxy_t *p = arg;
    long long linger = 0;

    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        size_t n = 2, i;
        int timeout = -1, pr;
        tp_conn_t *c;

        for (c = p->conns; c != NULL; c = c->next)
            n += 2;
        if (n > p->pcap) {
            struct pollfd *np = realloc(p->pfd, n * 2 * sizeof *np);
            tp_conn_t **nc = np ? realloc(p->pconn, n * 2 * sizeof *nc) : NULL;
            if (np)
                p->pfd = np;
            if (nc == NULL) {
                fprintf(stderr, "tproxy: out of memory: the proxy stops\n");
                break;
            }
            p->pconn = nc;
            p->pcap = n * 2;
        }
        p->pfd[0] = (struct pollfd){ p->wake[0], POLLIN, 0 };
        p->pfd[1] = (struct pollfd){ p->lfd, POLLIN, 0 };
        for (i = 2, c = p->conns; c != NULL; c = c->next, i += 2) {
            p->pconn[i] = p->pconn[i + 1] = c;
            p->pfd[i].fd = c->cfd;
            p->pfd[i].events = (short)((c->up.len < TP_CAP ? POLLIN : 0) |
                                       (c->down.len > 0 && !p->frozen ? POLLOUT : 0));
            p->pfd[i].revents = 0;
            p->pfd[i + 1].fd = c->sfd;
            p->pfd[i + 1].events = (short)((c->down.len < TP_CAP ? POLLIN : 0) |
                                           (c->up.len > 0 && !p->frozen && !c->held ? POLLOUT : 0));
            p->pfd[i + 1].revents = 0;
        }
        if (linger > 0) {
            long long left = linger - mono_ms();
            timeout = left < 0 ? 0 : (int)left;
        }
        pthread_mutex_unlock(&p->mu);
        pr = poll(p->pfd, (nfds_t)n, timeout);
        pthread_mutex_lock(&p->mu);
        if (pr < 0 && errno != EINTR) {
            fprintf(stderr, "tproxy: poll: %s: the proxy stops\n", strerror(errno));
            break;
        }
        if (pr > 0) {
            if (p->pfd[0].revents & POLLIN) {
                char b[64];
                while (read(p->wake[0], b, sizeof b) > 0)
                    ;
            }
            /* Connections in the arrays are still in the list: only this
             * thread removes them, in reap() below.  An fd closed meanwhile
             * (by a deliver that met a dead server) reads as -1. */
            for (i = 2; i < n; i += 2) {
                c = p->pconn[i];
                if (c->cfd >= 0 && (p->pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                    read_client(p, c);
                if (c->sfd >= 0 && (p->pfd[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                    read_server(p, c);
                flush_up(p, c);
                flush_down(p, c);
            }
            if (p->pfd[1].revents & POLLIN)
                accept_all(p);
        }
        linger = reap(p);
        pthread_cond_broadcast(&p->cv);
    }
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int tproxy_start(tproxy_t **out, int upstream_port)
{
    tproxy_t *p = calloc(1, sizeof *p);
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    pthread_condattr_t ca;

    if (p == NULL)
        return -1;
    p->lfd = -1;
    p->wake[0] = p->wake[1] = -1;
    p->upstream_port = upstream_port;
    if (pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0)
        goto fail;
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(p->lfd, 128) != 0 ||
        getsockname(p->lfd, (struct sockaddr *)&sa, &sl) != 0)
        goto fail;
    p->port = ntohs(sa.sin_port);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&p->th, NULL, proxy_thread, p) != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        errno = EAGAIN;
        goto fail;
    }
    *out = p;
    return 0;
fail:
    fprintf(stderr, "tproxy_start: %s\n", strerror(errno));
    if (p->lfd >= 0)
        close(p->lfd);
    if (p->wake[0] >= 0) {
        close(p->wake[0]);
        close(p->wake[1]);
    }
    free(p);
    return -1;
}

int tproxy_port(const tproxy_t *p)
{
    return p->port;
}

void tproxy_stop(tproxy_t *p)
{
    tp_conn_t *c;
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    poke(p);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    while ((c = p->conns) != NULL) {
        p->conns = c->next;
        conn_free(c);
    }
    close(p->lfd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->pfd);
    free(p->pconn);
    free(p);
}

int tproxy_hold(tproxy_t *p, int flags)
{
    tp_conn_t *c;
    if (flags == 0 || (flags & ~(TPROXY_EXISTING | TPROXY_NEW)) != 0) {
        fprintf(stderr, "tproxy_hold: bad flags %d\n", flags);
        return -1;
    }
    pthread_mutex_lock(&p->mu);
    if (flags & TPROXY_EXISTING)
        for (c = p->conns; c != NULL; c = c->next)
            if (c->sfd >= 0)
                c->held = 1;
    if (flags & TPROXY_NEW)
        p->hold_new = 1;
    poke(p);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int tproxy_hold_conn(tproxy_t *p, long id)
{
    tp_conn_t *c;
    int rc = -1;
    pthread_mutex_lock(&p->mu);
    for (c = p->conns; c != NULL; c = c->next)
        if (c->id == id && c->sfd >= 0) {
            c->held = 1;
            rc = 0;
        }
    poke(p);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static int cmp_first(const void *a, const void *b)
{
    const tp_conn_t *x = *(tp_conn_t *const *)a, *y = *(tp_conn_t *const *)b;
    return x->first_seq < y->first_seq ? -1 : x->first_seq > y->first_seq;
}

/* id 0: every connection, and new ones are no longer held. */
static int deliver(tproxy_t *p, long id, int timeout_ms, const char *fn)
{
    tp_batch_t b = { 0, 0, 0 };
    tp_conn_t *c, **v = NULL;
    size_t n = 0, cap = 0, i;
    int found = 0, total, rc;
    long long deadline = mono_ms() + timeout_ms;

    pthread_mutex_lock(&p->mu);
    if (p->frozen || p->stop) {
        int frozen = p->frozen;
        pthread_mutex_unlock(&p->mu);
        fprintf(stderr, "%s: the proxy is %s: nothing delivered\n", fn, frozen ? "frozen" : "stopped");
        return -1;
    }
    if (id == 0)
        p->hold_new = 0;
    for (c = p->conns; c != NULL; c = c->next) {
        if (id != 0 && c->id != id)
            continue;
        found = 1;
        if (!c->held)
            continue;
        c->held = 0;
        if (c->up.len == 0 || c->sfd < 0 || c->batch != NULL)
            continue;
        if (n == cap) {
            tp_conn_t **nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *nv);
            if (nv == NULL) {
                free(v);
                pthread_mutex_unlock(&p->mu);
                fprintf(stderr, "%s: out of memory\n", fn);
                return -1;
            }
            v = nv;
        }
        v[n++] = c;
    }
    if (id != 0 && !found && id > p->st.accepted) {
        pthread_mutex_unlock(&p->mu);
        free(v);
        fprintf(stderr, "%s: no connection %ld\n", fn, id);
        return -1;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_first);
    for (i = 0; i < n; i++) {
        c = v[i];
        c->batch = &b;
        b.pending++;
        p->st.delivered++;
        if (c->cfd < 0)
            p->st.delivered_late++;
        flush_up(p, c); /* here and now, in order; the thread writes any rest */
    }
    free(v);
    total = (int)n;
    poke(p);
    while (timeout_ms > 0 && b.pending > 0 && !p->stop) {
        struct timespec ts = mono_at(deadline);
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT)
            break;
    }
    rc = timeout_ms == 0 || b.answered == total ? total : -1;
    if (rc < 0)
        fprintf(stderr, "%s: %d of %d connection(s) answered within %d ms (%d closed without an answer)\n", fn,
                b.answered, total, timeout_ms, b.failed);
    for (c = p->conns; c != NULL; c = c->next)
        if (c->batch == &b)
            c->batch = NULL; /* b is about to go */
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int tproxy_deliver(tproxy_t *p, int timeout_ms)
{
    return deliver(p, 0, timeout_ms < 0 ? 0 : timeout_ms, "tproxy_deliver");
}

int tproxy_deliver_conn(tproxy_t *p, long id, int timeout_ms)
{
    if (id <= 0) {
        fprintf(stderr, "tproxy_deliver_conn: bad id %ld\n", id);
        return -1;
    }
    return deliver(p, id, timeout_ms < 0 ? 0 : timeout_ms, "tproxy_deliver_conn");
}

int tproxy_reset(tproxy_t *p)
{
    /* SO_LINGER 0: close() sends RST instead of FIN, so the client's next
     * write fails with EPIPE (and raises SIGPIPE where not blocked). */
    struct linger lg = { 1, 0 };
    tp_conn_t *c;
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (c = p->conns; c != NULL; c = c->next)
        if (c->cfd >= 0) {
            setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            client_gone(p, c);
            n++;
        }
    poke(p);
    pthread_mutex_unlock(&p->mu);
    return n;
}

int tproxy_freeze(tproxy_t *p)
{
    pthread_mutex_lock(&p->mu);
    p->frozen = 1;
    poke(p);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int tproxy_thaw(tproxy_t *p)
{
    tp_conn_t *c;
    pthread_mutex_lock(&p->mu);
    p->frozen = 0;
    for (c = p->conns; c != NULL; c = c->next) {
        flush_up(p, c);
        flush_down(p, c);
    }
    poke(p);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int tproxy_mute(tproxy_t *p, int on)
{
    pthread_mutex_lock(&p->mu);
    p->mute = on != 0;
    poke(p);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* mu held */
static size_t held_now(const tproxy_t *p, long *conns)
{
    const tp_conn_t *c;
    size_t bytes = 0;
    long nc = 0;
    for (c = p->conns; c != NULL; c = c->next)
        if ((c->held || p->frozen) && c->up.len > 0 && c->sfd >= 0) {
            bytes += c->up.len;
            nc++;
        }
    if (conns != NULL)
        *conns = nc;
    return bytes;
}

int tproxy_wait_held(tproxy_t *p, size_t min_bytes, int timeout_ms)
{
    struct timespec ts = mono_at(mono_ms() + timeout_ms);
    size_t have;
    pthread_mutex_lock(&p->mu);
    while ((have = held_now(p, NULL)) < min_bytes && !p->stop)
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT) {
            have = held_now(p, NULL);
            break;
        }
    pthread_mutex_unlock(&p->mu);
    if (have >= min_bytes)
        return 0;
    fprintf(stderr, "tproxy_wait_held: %zu of %zu bytes held after %d ms\n", have, min_bytes, timeout_ms);
    return -1;
}

int tproxy_wait_accepted(tproxy_t *p, long n, int timeout_ms)
{
    struct timespec ts = mono_at(mono_ms() + timeout_ms);
    long have;
    pthread_mutex_lock(&p->mu);
    while (p->st.accepted < n && !p->stop)
        if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT)
            break;
    have = p->st.accepted;
    pthread_mutex_unlock(&p->mu);
    if (have >= n)
        return 0;
    fprintf(stderr, "tproxy_wait_accepted: %ld of %ld connections after %d ms\n", have, n, timeout_ms);
    return -1;
}

int tproxy_wait_closed(tproxy_t *p, long id, int timeout_ms)
{
    struct timespec ts = mono_at(mono_ms() + timeout_ms);
    int open = 1;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        const tp_conn_t *c;
        open = p->st.accepted < id;
        for (c = p->conns; c != NULL && !open; c = c->next)
            open = c->id == id && c->cfd >= 0;
        if (!open || p->stop || pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&p->mu);
    if (!open)
        return 0;
    fprintf(stderr, "tproxy_wait_closed: the client of connection %ld is still there after %d ms\n", id,
            timeout_ms);
    return -1;
}

int tproxy_held(tproxy_t *p, long *ids, int max)
{
    const tp_conn_t *c;
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (c = p->conns; c != NULL; c = c->next)
        if ((c->held || p->frozen) && c->up.len > 0 && c->sfd >= 0) {
            if (n < max)
                ids[n] = c->id;
            n++;
        }
    pthread_mutex_unlock(&p->mu);
    return n;
}

int tproxy_conns(tproxy_t *p, long *ids, int max)
{
    const tp_conn_t *c;
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (c = p->conns; c != NULL; c = c->next)
        if (c->cfd >= 0 && c->sfd >= 0) {
            if (n < max)
                ids[n] = c->id;
            n++;
        }
    pthread_mutex_unlock(&p->mu);
    return n;
}

void tproxy_stats(tproxy_t *p, tproxy_stats_t *st)
{
    const tp_conn_t *c;
    pthread_mutex_lock(&p->mu);
    *st = p->st;
    st->held_bytes = held_now(p, &st->held_conns);
    st->open = 0;
    for (c = p->conns; c != NULL; c = c->next)
        st->open += c->sfd >= 0;
    pthread_mutex_unlock(&p->mu);
}
