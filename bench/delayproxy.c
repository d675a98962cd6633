/* delayproxy.c - see delayproxy.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll: a delay finer than poll's millisecond */
#endif
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

#include "delayproxy.h"

#define DP_ROUTES 8
#define DP_CONNS 64 /* connection pairs in all */

typedef struct chunk {
    struct chunk *next;
    long long due_us; /* monotonic */
    size_t len, off;
    char data[];
} chunk_t;

/* One direction of a connection pair: bytes read from `from`, queued,
 * written to `to`. */
typedef struct pipe_dir {
    int from, to;
    chunk_t *head, *tail;
} pipe_dir_t;

typedef struct conn_pair {
    int used;
    pipe_dir_t d[2]; /* 0: client -> server, 1: server -> client */
} conn_pair_t;

struct dproxy {
    pthread_t th;
    int started;
    int wake[2]; /* self-pipe: stop */
    int n;
    int lfd[DP_ROUTES], port[DP_ROUTES], up[DP_ROUTES];
    long delay_us;
    conn_pair_t c[DP_CONNS];
};

static long long mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void dir_free(pipe_dir_t *d)
{
    while (d->head != NULL) {
        chunk_t *c = d->head;
        d->head = c->next;
        free(c);
    }
    d->tail = NULL;
}

static void pair_close(conn_pair_t *c)
{
    close(c->d[0].from);
    close(c->d[0].to);
    dir_free(&c->d[0]);
    dir_free(&c->d[1]);
    memset(c, 0, sizeof *c);
}

static int nodelay(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void accept_one(dproxy_t *p, int r)
{
    struct sockaddr_in a;
    int cfd = accept(p->lfd[r], NULL, NULL), sfd, i;
    if (cfd < 0)
        return;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)p->up[r]);
    if ((sfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 || connect(sfd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (sfd >= 0)
            close(sfd);
        close(cfd);
        return;
    }
    nodelay(cfd);
    nodelay(sfd);
    for (i = 0; i < DP_CONNS && p->c[i].used; i++)
        ;
    if (i == DP_CONNS) {
        close(sfd);
        close(cfd);
        return;
    }
    p->c[i].used = 1;
    p->c[i].d[0].from = cfd;
    p->c[i].d[0].to = sfd;
    p->c[i].d[1].from = sfd;
    p->c[i].d[1].to = cfd;
}

/* Read what `from` has into a new chunk.  0, or -1 (closed or failed). */
static int dir_read(dproxy_t *p, pipe_dir_t *d)
{
    char buf[65536];
    ssize_t n = read(d->from, buf, sizeof buf);
    chunk_t *c;
    if (n <= 0)
        return n < 0 && (errno == EINTR || errno == EAGAIN) ? 0 : -1;
    if ((c = malloc(sizeof *c + (size_t)n)) == NULL)
        return -1;
    c->next = NULL;
    c->due_us = mono_us() + p->delay_us;
    c->len = (size_t)n;
    c->off = 0;
    memcpy(c->data, buf, (size_t)n);
    if (d->tail != NULL)
        d->tail->next = c;
    else
        d->head = c;
    d->tail = c;
    return 0;
}

/* Write what is due.  0, or -1 (failed). */
static int dir_flush(pipe_dir_t *d, long long now)
{
    while (d->head != NULL && d->head->due_us <= now) {
        chunk_t *c = d->head;
        ssize_t w = write(d->to, c->data + c->off, c->len - c->off);
        if (w < 0)
            return errno == EINTR || errno == EAGAIN ? 0 : -1;
        c->off += (size_t)w;
        if (c->off < c->len)
            return 0; /* the socket is full: poll says when */
        d->head = c->next;
        if (d->head == NULL)
            d->tail = NULL;
        free(c);
    }
    return 0;
}

static void *run(void *arg)
{
    dproxy_t *p = arg;
    struct pollfd pfd[1 + DP_ROUTES + 2 * DP_CONNS];
    int who[1 + DP_ROUTES + 2 * DP_CONNS];
    for (;;) {
        long long now = mono_us(), next = -1;
        int np = 0, i, k;
        struct timespec ts, *tsp = NULL;
        pfd[np].fd = p->wake[0];
        pfd[np].events = POLLIN;
        who[np++] = -1;
        for (i = 0; i < p->n; i++) {
            pfd[np].fd = p->lfd[i];
            pfd[np].events = POLLIN;
            who[np++] = -2 - i;
        }
        for (i = 0; i < DP_CONNS; i++) {
            if (!p->c[i].used)
                continue;
            for (k = 0; k < 2; k++) {
                pipe_dir_t *d = &p->c[i].d[k];
                if (dir_flush(d, now) != 0) {
                    pair_close(&p->c[i]);
                    break;
                }
                if (d->head != NULL && (next < 0 || d->head->due_us < next))
                    next = d->head->due_us;
            }
            if (!p->c[i].used)
                continue;
            for (k = 0; k < 2; k++) {
                pipe_dir_t *d = &p->c[i].d[k];
                pfd[np].fd = d->from;
                pfd[np].events = POLLIN;
                /* a chunk due but not all written: wait for room */
                if (d->head != NULL && d->head->due_us <= now && d->head->off > 0) {
                    pfd[np].fd = d->to;
                    pfd[np].events = POLLOUT;
                }
                who[np++] = i * 2 + k;
            }
        }
        if (next >= 0) {
            long long w = next > now ? next - now : 0;
            ts.tv_sec = (time_t)(w / 1000000);
            ts.tv_nsec = (long)(w % 1000000) * 1000;
            tsp = &ts;
        }
        if (ppoll(pfd, (nfds_t)np, tsp, NULL) < 0 && errno != EINTR)
            return NULL;
        if (pfd[0].revents)
            return NULL;
        for (i = 1; i < np; i++) {
            if (pfd[i].revents == 0)
                continue;
            if (who[i] <= -2) {
                accept_one(p, -2 - who[i]);
            } else {
                conn_pair_t *c = &p->c[who[i] / 2];
                pipe_dir_t *d = &c->d[who[i] % 2];
                if (c->used && pfd[i].events == POLLIN && dir_read(p, d) != 0)
                    pair_close(c);
            }
        }
    }
}

int dproxy_start(dproxy_t **out, const int *up, int n, long delay_us)
{
    dproxy_t *p = calloc(1, sizeof *p);
    int i;
    *out = NULL;
    if (p == NULL || n < 1 || n > DP_ROUTES || pipe(p->wake) != 0) {
        fprintf(stderr, "delayproxy: setup failed\n");
        free(p);
        return -1;
    }
    p->n = n;
    p->delay_us = delay_us;
    for (i = 0; i < n; i++) {
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        p->up[i] = up[i];
        if ((p->lfd[i] = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(p->lfd[i], (struct sockaddr *)&a, sizeof a) != 0 ||
            listen(p->lfd[i], 64) != 0 || getsockname(p->lfd[i], (struct sockaddr *)&a, &len) != 0) {
            fprintf(stderr, "delayproxy: listen: %s\n", strerror(errno));
            p->n = i + (p->lfd[i] >= 0);
            dproxy_stop(p);
            return -1;
        }
        p->port[i] = ntohs(a.sin_port);
    }
    if (pthread_create(&p->th, NULL, run, p) == 0)
        p->started = 1;
    else {
        fprintf(stderr, "delayproxy: pthread_create failed\n");
        dproxy_stop(p);
        return -1;
    }
    *out = p;
    return 0;
}

int dproxy_port(const dproxy_t *p, int i)
{
    return p->port[i];
}

void dproxy_stop(dproxy_t *p)
{
    int i;
    if (p == NULL)
        return;
    if (p->started) {
        ssize_t w = write(p->wake[1], "x", 1);
        (void)w;
        pthread_join(p->th, NULL);
    }
    for (i = 0; i < p->n; i++)
        close(p->lfd[i]);
    for (i = 0; i < DP_CONNS; i++)
        if (p->c[i].used)
            pair_close(&p->c[i]);
    close(p->wake[0]);
    close(p->wake[1]);
    free(p);
}
