/* testlib.c - helpers the CUnit suites share; see testlib.h for what each
 * does and why it is here. */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "fixture.h"
#include "testlib.h"

/* ------------------------------------------------------------------ */
/* 1. time                                                             */
/* ------------------------------------------------------------------ */

struct timespec rdt_abstime(clockid_t clk, long long ms)
{
    struct timespec ts;
    long long ns;

    clock_gettime(clk, &ts);
    ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + ms * 1000000LL;
    if (ns < 0)
        ns = 0;
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

/* ------------------------------------------------------------------ */
/* 2. lock keys                                                        */
/* ------------------------------------------------------------------ */

static char g_keybuf[4][700];
static int g_keyidx;

const char *rdt_key(const char *name, const char *suffix)
{
    char *b = g_keybuf[g_keyidx++ % 4];
    snprintf(b, sizeof g_keybuf[0], "rdlock:{%s}%s", name, suffix);
    return b;
}

/* Redis' CRC16 (XMODEM), bit by bit: slow and plain, unlike the library's. */
static unsigned crc16_plain(const char *s, size_t n)
{
    unsigned crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (unsigned)(unsigned char)s[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xFFFF : (crc << 1) & 0xFFFF;
    }
    return crc;
}

const char *rdt_fence_key(const char *prefix, const char *name)
{
    static const char abc[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    unsigned slot = crc16_plain(name, strlen(name)) & 16383;
    char *b = g_keybuf[g_keyidx++ % 4], t[4] = { 0 };
    for (size_t len = 1; len <= 3; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= 62;
        for (size_t k = 0; k < total; k++) {
            size_t v = k;
            for (size_t i = len; i-- > 0; v /= 62)
                t[i] = abc[v % 62];
            t[len] = '\0';
            if ((crc16_plain(t, len) & 16383) == slot) {
                snprintf(b, sizeof g_keybuf[0], "%s{%s}:tokens", prefix != NULL ? prefix : "rdlock:", t);
                return b;
            }
        }
    }
    snprintf(b, sizeof g_keybuf[0], "(no tag for slot %u)", slot);
    return b;
}

/* ------------------------------------------------------------------ */
/* 3. Redis state, on a connection the caller owns                     */
/* ------------------------------------------------------------------ */

long long rdt_reply_int(redisReply *r, long long dflt)
{
    long long v = dflt;
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r)
        freeReplyObject(r);
    return v;
}

int rdt_reply_str(redisReply *r, char *buf, size_t n)
{
    int rc = -1;
    buf[0] = '\0';
    if (r && r->type == REDIS_REPLY_NIL)
        rc = 0;
    else if (r && r->type == REDIS_REPLY_STRING) {
        snprintf(buf, n, "%s", r->str);
        rc = 1;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

long long rdt_int_vcmd(redisContext *c, long long dflt, const char *fmt, va_list ap)
{
    redisReply *r;
    long long v = dflt;

    if (!c)
        return dflt;
    r = (redisReply *)redisvCommand(c, fmt, ap);
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else
        fprintf(stderr, "%s: %s\n", fmt, r ? (r->str ? r->str : "non-integer reply") : c->errstr);
    if (r)
        freeReplyObject(r);
    return v;
}

long long rdt_int_cmd(redisContext *c, long long dflt, const char *fmt, ...)
{
    long long v;
    va_list ap;

    va_start(ap, fmt);
    v = rdt_int_vcmd(c, dflt, fmt, ap);
    va_end(ap);
    return v;
}

int rdt_exists(redisContext *c, const char *key)
{
    return (int)rdt_int_cmd(c, -1, "EXISTS %s", key);
}

long long rdt_zcard(redisContext *c, const char *key)
{
    return rdt_int_cmd(c, -1, "ZCARD %s", key);
}

long long rdt_pttl(redisContext *c, const char *key)
{
    return rdt_int_cmd(c, -100, "PTTL %s", key);
}

long long rdt_get_ll(redisContext *c, const char *key)
{
    redisReply *r = c ? (redisReply *)redisCommand(c, "GET %s", key) : NULL;
    long long v = -2;
    if (r && r->type == REDIS_REPLY_NIL)
        v = -1;
    else if (r && r->type == REDIS_REPLY_STRING) {
        char *end;
        v = strtoll(r->str, &end, 10);
        if (*end != '\0')
            v = -2;
    }
    if (r)
        freeReplyObject(r);
    return v;
}

int rdt_get_str(redisContext *c, const char *key, char *buf, size_t n)
{
    return rdt_reply_str(c ? (redisReply *)redisCommand(c, "GET %s", key) : NULL, buf, n);
}

int rdt_hget(redisContext *c, const char *key, const char *field, char *buf, size_t n)
{
    return rdt_reply_str(c ? (redisReply *)redisCommand(c, "HGET %s %s", key, field) : NULL, buf, n);
}

long long rdt_server_ms(redisContext *c)
{
    redisReply *r = c ? (redisReply *)redisCommand(c, "TIME") : NULL;
    long long v = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        v = strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
    if (r)
        freeReplyObject(r);
    return v;
}

int rdt_holders(redisContext *c, const char *key, const char *except, long pid, char *mode, char *field,
                size_t fn, long long *deadline)
{
    redisReply *r;
    size_t i;
    int n = 0;

    if (mode)
        *mode = '\0';
    if (field && fn)
        field[0] = '\0';
    if (deadline)
        *deadline = -1;
    if (!c)
        return -1;
    r = (redisReply *)redisCommand(c, "HGETALL %s", key);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        fprintf(stderr, "HGETALL %s failed: %s\n", key, r ? (r->str ? r->str : "not an array") : c->errstr);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (i = 0; i + 1 < r->elements; i += 2) {
        const char *f = r->element[i]->str, *v = r->element[i + 1]->str;
        if (strcmp(f, "m") == 0) {
            if (mode) /* upper case: someone may wait (acquire.lua) */
                *mode = (char)tolower((unsigned char)v[0]);
            continue;
        }
        if (except && strcmp(f, except) == 0)
            continue;
        if (pid > 0) {
            long long d = -1;
            unsigned long long tok = 0;
            unsigned cnt = 0;
            long p = 0;
            if (sscanf(v, "%lld;%llu;%u;%ld;", &d, &tok, &cnt, &p) == 4 && p == pid) {
                if (field && fn)
                    snprintf(field, fn, "%s", f);
                if (deadline)
                    *deadline = d;
            }
        } else if (n == 0) {
            if (field && fn)
                snprintf(field, fn, "%s", f);
            if (deadline)
                *deadline = strtoll(v, NULL, 10);
        }
        n++;
    }
    freeReplyObject(r);
    return n;
}

int rdt_wait_gone(redisContext *c, const char *key, int timeout_ms)
{
    long long deadline = rdt_now_ms() + timeout_ms;
    for (;;) {
        if (rdt_exists(c, key) == 0)
            return 1;
        if (rdt_now_ms() >= deadline) {
            fprintf(stderr, "%s still exists after %d ms\n", key, timeout_ms);
            return 0;
        }
        rdt__nap_ms(2);
    }
}

int rdt_wait_zcard(redisContext *c, const char *key, long long n, int timeout_ms)
{
    long long deadline = rdt_now_ms() + timeout_ms;
    for (;;) {
        if (rdt_zcard(c, key) >= n)
            return 1;
        if (rdt_now_ms() >= deadline) {
            fprintf(stderr, "%s: fewer than %lld waiters after %d ms\n", key, n, timeout_ms);
            return 0;
        }
        rdt__nap_ms(1);
    }
}

long long rdt_blocked_clients(redisContext *c)
{
    redisReply *r = c ? (redisReply *)redisCommand(c, "INFO clients") : NULL;
    const char *p;
    long long v = -1;
    if (r && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, "blocked_clients:")) != NULL)
        v = strtoll(p + strlen("blocked_clients:"), NULL, 10);
    if (r)
        freeReplyObject(r);
    return v;
}

int rdt_wait_blocked(redisContext *c, long long n, int timeout_ms)
{
    long long deadline = rdt_now_ms() + timeout_ms;
    for (;;) {
        if (rdt_blocked_clients(c) >= n)
            return 1;
        if (rdt_now_ms() >= deadline) {
            fprintf(stderr, "fewer than %lld blocked clients after %d ms\n", n, timeout_ms);
            return 0;
        }
        rdt__nap_ms(1);
    }
}

/* ------------------------------------------------------------------ */
/* 4. one command on a fresh connection                                */
/* ------------------------------------------------------------------ */

redisReply *rdt_vcmd_on(const rdt_server_t *s, int db, const char *fmt, va_list ap)
{
    redisContext *c = rdt_connect(s); /* prints why when it fails */
    redisReply *r;

    if (!c)
        return NULL;
    if (db != 0) {
        r = (redisReply *)redisCommand(c, "SELECT %d", db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "SELECT %d failed\n", db);
            if (r)
                freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    r = (redisReply *)redisvCommand(c, fmt, ap);
    if (!r)
        fprintf(stderr, "%s: %s\n", fmt, c->errstr);
    redisFree(c);
    return r;
}

redisReply *rdt_cmd_on(const rdt_server_t *s, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = rdt_vcmd_on(s, 0, fmt, ap);
    va_end(ap);
    return r;
}

long long rdt_int_on(const rdt_server_t *s, int db, const char *fmt, ...)
{
    redisReply *r;
    long long v = -1000;
    va_list ap;

    va_start(ap, fmt);
    r = rdt_vcmd_on(s, db, fmt, ap);
    va_end(ap);
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r)
        fprintf(stderr, "%s: %s\n", fmt, r->str ? r->str : "non-integer reply");
    if (r)
        freeReplyObject(r);
    return v;
}

int rdt_holders_on(const rdt_server_t *s, const char *key, char *field, size_t fn, long long *deadline)
{
    redisContext *c = rdt_connect(s);
    int n = rdt_holders(c, key, NULL, 0, NULL, field, fn, deadline);
    if (c)
        redisFree(c);
    return n;
}

/* ------------------------------------------------------------------ */
/* 5. lock set-up                                                      */
/* ------------------------------------------------------------------ */

int rdt_attr_make(rdlock_attr_t *a, const rdt_lockopts_t *o)
{
    int rc = rdlock_attr_init(a);
    if (rc == 0 && o->client != NULL)
        rc = rdlock_attr_setclient(a, o->client);
    if (rc == 0 && o->robust != RDLOCK_STALLED)
        rc = rdlock_attr_setrobust(a, o->robust);
    if (rc == 0 && o->type != 0)
        rc = rdlock_attr_settype(a, o->type);
    if (rc == 0 && o->lease != 0)
        rc = rdlock_attr_setlease(a, o->lease);
    if (rc == 0 && o->watchdog >= 0)
        rc = rdlock_attr_setwatchdog(a, o->watchdog);
    if (rc == 0 && o->lostcb != NULL)
        rc = rdlock_attr_setlostcb(a, o->lostcb, o->lostarg);
    return rc;
}

int rdt_mutex_init(rdlock_t *m, const char *name, const rdt_lockopts_t *o)
{
    rdlock_attr_t a;
    int rc = rdt_attr_make(&a, o);
    if (rc == 0)
        rc = rdlock_init(m, name, &a);
    rdlock_attr_destroy(&a);
    return rc;
}

int rdt_rwlock_init(rdrwlock_t *rw, const char *name, const rdt_lockopts_t *o)
{
    rdlock_attr_t a;
    int rc = rdt_attr_make(&a, o);
    if (rc == 0)
        rc = rdrwlock_init(rw, name, &a);
    rdlock_attr_destroy(&a);
    return rc;
}

int rdt_mutex_on(rdlock_t *m, const char *name, rdlock_client_t *c, int type)
{
    rdt_lockopts_t o = RDT_LOCKOPTS(c);
    o.type = type;
    return rdt_mutex_init(m, name, &o);
}

int rdt_rwlock_on(rdrwlock_t *rw, const char *name, rdlock_client_t *c)
{
    rdt_lockopts_t o = RDT_LOCKOPTS(c);
    return rdt_rwlock_init(rw, name, &o);
}

uint64_t rdt_mutex_token(rdlock_t *m)
{
    uint64_t t = 0;
    if (rdlock_fencing_token(m, &t) != 0)
        return 0;
    return t;
}

uint64_t rdt_rwlock_token(rdrwlock_t *rw)
{
    uint64_t t = 0;
    if (rdrwlock_fencing_token(rw, &t) != 0)
        return 0;
    return t;
}

/* ------------------------------------------------------------------ */
/* 6. the suite's server and clients                                   */
/* ------------------------------------------------------------------ */

int rdt_suite_start(rdt_server_t *s, redisContext **rc)
{
    if (rdt_server_start(s, NULL, NULL) != 0)
        return -1;
    if (rc) {
        *rc = rdt_connect(s);
        if (!*rc)
            return -1;
    }
    return 0;
}

void rdt_suite_stop(rdt_server_t *s, redisContext **rc)
{
    if (rc && *rc)
        redisFree(*rc);
    if (rc)
        *rc = NULL;
    rdt_server_stop(s);
}

int rdt_ini_copy(const rdt_server_t *s, int use_socket, const char *extra_ini, char *out, size_t n)
{
    const char *ini = rdt_write_ini(s, use_socket, extra_ini);
    if (!ini)
        return -1;
    if ((size_t)snprintf(out, n, "%s", ini) >= n) {
        fprintf(stderr, "rdt_ini_copy: path %s longer than %zu bytes\n", ini, n - 1);
        return -1;
    }
    return 0;
}

int rdt_close_clients(rdlock_client_t **c, ...)
{
    va_list ap;
    int rc = 0, i = 0;

    va_start(ap, c);
    for (; c != NULL; c = va_arg(ap, rdlock_client_t **), i++) {
        if (*c && rdlock_client_close(*c) != 0) {
            fprintf(stderr, "teardown: rdlock_client_close of client %d failed\n", i + 1);
            rc = -1;
        }
        *c = NULL;
    }
    va_end(ap);
    return rc;
}

rdlock_client_t *rdt_open_client(const rdt_server_t *s, const char *extra_ini)
{
    const char *ini = rdt_write_ini(s, 0, extra_ini);
    rdlock_client_t *c = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

void rdt_close_client(rdlock_client_t *c)
{
    if (c)
        RDT_ASSERT_RC(0, rdlock_client_close(c));
}

/* ------------------------------------------------------------------ */
/* 7. forked children                                                  */
/* ------------------------------------------------------------------ */

typedef struct child_job {
    int (*fn)(void *);
    void *arg;
    int fd;
} child_job_t;

static int child_trampoline(void *p)
{
    child_job_t *j = p;
    char line[32];
    int rc = j->fn(j->arg);
    snprintf(line, sizeof line, "result %d", rc);
    rdt_send(j->fd, line);
    return rc;
}

int rdt_run_child(int (*fn)(void *), void *arg, int timeout_ms)
{
    child_job_t j;
    char line[64];
    int fds[2], rc = -1, st;
    pid_t pid;

    if (pipe(fds) != 0)
        return -1;
    j.fn = fn;
    j.arg = arg;
    j.fd = fds[1];
    pid = rdt_fork(child_trampoline, &j);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return -1;
    }
    if (rdt_recv(fds[0], line, sizeof line, timeout_ms) >= 0 && strncmp(line, "result ", 7) == 0)
        rc = atoi(line + 7);
    close(fds[0]);
    st = rdt_wait(pid, 10000);
    if (st != rc)
        fprintf(stderr, "child %ld reported %d, exit status %d\n", (long)pid, rc, st);
    if (rc == 0 && (st < 0 || st >= 128))
        rc = -2;
    return rc;
}

pid_t rdt_spawn(rdt_pipe_t *p, int (*fn)(void *), void *arg)
{
    pid_t pid;

    if (rdt_pipe_open(p) != 0)
        return -1;
    pid = rdt_fork(fn, arg);
    if (pid < 0) {
        rdt_pipe_close(p);
        return -1;
    }
    rdt_pipe_parent(p);
    return pid;
}

void rdt_child_begin(rdt_pipe_t *p)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that died */
#endif
    rdt_pipe_child(p);
}

int rdt_expect_line(rdt_pipe_t *p, const char *want, int timeout_ms, const char *who)
{
    char line[256];

    if (rdt_recv(p->to_parent[0], line, sizeof line, timeout_ms) < 0 || strcmp(line, want) != 0) {
        fprintf(stderr, "%s: \"%s\" instead of \"%s\" within %d ms\n", who, line, want, timeout_ms);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* 8. lost callbacks                                                   */
/* ------------------------------------------------------------------ */

void rdt_lost_init(rdt_lostrec_t *r)
{
    pthread_condattr_t ca;

    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    r->main_thread = pthread_self();
}

void rdt_lost_reset(rdt_lostrec_t *r)
{
    pthread_mutex_lock(&r->mu);
    r->count = 0;
    r->name[0] = '\0';
    r->arg = NULL;
    r->first_ms = 0;
    r->on_main = 0;
    pthread_mutex_unlock(&r->mu);
}

void rdt_lost_cb(const char *name, void *arg)
{
    rdt_lostrec_t *r = arg;

    pthread_mutex_lock(&r->mu);
    if (pthread_equal(pthread_self(), r->main_thread))
        r->on_main = 1;
    if (r->count++ == 0) {
        snprintf(r->name, sizeof r->name, "%s", name ? name : "(null)");
        r->arg = arg;
        r->first_ms = rdt_now_ms();
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int rdt_lost_wait(rdt_lostrec_t *r, int n, int timeout_ms)
{
    struct timespec ts = rdt_abstime(CLOCK_MONOTONIC, timeout_ms);
    int count;

    pthread_mutex_lock(&r->mu);
    while (r->count < n)
        if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) == ETIMEDOUT)
            break;
    count = r->count;
    pthread_mutex_unlock(&r->mu);
    return count;
}

int rdt_lost_count(rdt_lostrec_t *r)
{
    int n;

    pthread_mutex_lock(&r->mu);
    n = r->count;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ------------------------------------------------------------------ */
/* 9. library log capture                                              */
/* ------------------------------------------------------------------ */

static pthread_mutex_t g_logcap_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_logcap[16384];

static void logcap_fn(int level, const char *msg, void *arg)
{
    static int echo = -1; /* read once, by whichever thread logs first */
    int e = __atomic_load_n(&echo, __ATOMIC_RELAXED);
    size_t n;
    (void)arg;
    /* RDT_LOG_ECHO=1: every captured line on stderr too, with the
     * monotonic ms, for a test that failed on timing. */
    if (e < 0) {
        e = getenv("RDT_LOG_ECHO") != NULL;
        __atomic_store_n(&echo, e, __ATOMIC_RELAXED);
    }
    if (e)
        fprintf(stderr, "[%lld] %d %s\n", rdt_now_ms(), level, msg);
    pthread_mutex_lock(&g_logcap_mu);
    n = strlen(g_logcap);
    if (n < sizeof g_logcap - 1)
        snprintf(g_logcap + n, sizeof g_logcap - n, "%d %s\n", level, msg);
    pthread_mutex_unlock(&g_logcap_mu);
}

void rdt_log_capture(void)
{
    rdlock_set_logger(logcap_fn, NULL);
}

int rdt_log_has(const char *s)
{
    int found;
    pthread_mutex_lock(&g_logcap_mu);
    found = strstr(g_logcap, s) != NULL;
    pthread_mutex_unlock(&g_logcap_mu);
    return found;
}

void rdt_log_clear(void)
{
    pthread_mutex_lock(&g_logcap_mu);
    g_logcap[0] = '\0';
    pthread_mutex_unlock(&g_logcap_mu);
}

const char *rdt_log_text(void)
{
    return g_logcap; /* for printing after the fact: no lock */
}

/* ------------------------------------------------------------------ */
/* 10. a thread that holds a mutex                                     */
/* ------------------------------------------------------------------ */

static void *holder_main(void *arg)
{
    rdt_holder_t *h = arg;
    int rc = rdlock_lock(h->m);
    pthread_mutex_lock(&h->mu);
    h->lock_rc = rc;
    h->locked_at = rdt_now_ms();
    h->locked = 1;
    pthread_cond_broadcast(&h->cv);
    while (!h->go)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    h->unlock_rc = rc == 0 ? rdlock_unlock(h->m) : -1;
    return NULL;
}

int rdt_holder_start(rdt_holder_t *h, rdlock_t *m)
{
    memset(h, 0, sizeof *h);
    h->m = m;
    h->lock_rc = h->unlock_rc = -1;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    return pthread_create(&h->th, NULL, holder_main, h) == 0 ? 0 : -1;
}

int rdt_holder_locked(rdt_holder_t *h)
{
    int l;
    pthread_mutex_lock(&h->mu);
    l = h->locked;
    pthread_mutex_unlock(&h->mu);
    return l;
}

int rdt_holder_wait(rdt_holder_t *h, int timeout_ms)
{
    long long end = rdt_now_ms() + timeout_ms;
    while (!rdt_holder_locked(h) && rdt_now_ms() < end)
        rdt__nap_ms(5);
    return rdt_holder_locked(h);
}

int rdt_holder_finish(rdt_holder_t *h)
{
    pthread_mutex_lock(&h->mu);
    h->go = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->th, NULL);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    return h->unlock_rc;
}

/* ------------------------------------------------------------------ */
/* 11. actors: lock calls on command, in a child or a thread           */
/* ------------------------------------------------------------------ */

/* What one actor calls: the handles it has, and (process actors) its
 * client and name for reset. */
typedef struct actor_ctx {
    rdlock_t *m;
    rdrwlock_t *rw;
    rdlock_client_t *c;
    const char *name;
    int *lost; /* process actors with count_lost: the callback's count */
} actor_ctx_t;

static int g_actor_lost; /* a process actor's lost callbacks (atomic: the watchdog thread counts) */

static void actor_lost_cb(const char *name, void *arg)
{
    (void)name;
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

/* Run one command: its rc (RDT_ACTOR_BADCMD if it cannot), *val and *ms
 * as the answer reports them. */
static int actor_exec(const actor_ctx_t *x, const char *line, unsigned long long *val, long long *ms)
{
    rdlock_t *m = x->m;
    rdrwlock_t *rw = x->rw;
    struct timespec ts;
    long long t0, arg = 0;
    uint64_t tok = 0;
    unsigned n = 0;
    int rc = RDT_ACTOR_BADCMD, acq_m = 0, acq_rw = 0;

    t0 = rdt_now_ms();
    if (m && strcmp(line, "lock") == 0) {
        rc = rdlock_lock(m);
        acq_m = 1;
    } else if (m && strcmp(line, "trylock") == 0) {
        rc = rdlock_trylock(m);
        acq_m = 1;
    } else if (m && sscanf(line, "timed %lld", &arg) == 1) {
        ts = rdt_abstime(CLOCK_REALTIME, arg);
        rc = rdlock_timedlock(m, &ts);
        acq_m = 1;
    } else if (m && sscanf(line, "clock %lld", &arg) == 1) {
        ts = rdt_abstime(CLOCK_MONOTONIC, arg);
        rc = rdlock_clocklock(m, CLOCK_MONOTONIC, &ts);
        acq_m = 1;
    } else if (m && strcmp(line, "unlock") == 0) {
        rc = rdlock_unlock(m);
    } else if (m && strcmp(line, "consistent") == 0) {
        rc = rdlock_consistent(m);
    } else if (m && strcmp(line, "token") == 0) {
        rc = rdlock_fencing_token(m, &tok);
        *val = tok;
    } else if (m && strcmp(line, "holdcount") == 0) {
        rc = rdlock_holdcount(m, &n);
        *val = n;
    } else if (rw && strcmp(line, "rdlock") == 0) {
        rc = rdrwlock_rdlock(rw);
        acq_rw = 1;
    } else if (rw && strcmp(line, "wrlock") == 0) {
        rc = rdrwlock_wrlock(rw);
        acq_rw = 1;
    } else if (rw && strcmp(line, "tryrd") == 0) {
        rc = rdrwlock_tryrdlock(rw);
        acq_rw = 1;
    } else if (rw && strcmp(line, "trywr") == 0) {
        rc = rdrwlock_trywrlock(rw);
        acq_rw = 1;
    } else if (rw && sscanf(line, "timedrd %lld", &arg) == 1) {
        ts = rdt_abstime(CLOCK_REALTIME, arg);
        rc = rdrwlock_timedrdlock(rw, &ts);
        acq_rw = 1;
    } else if (rw && sscanf(line, "timedwr %lld", &arg) == 1) {
        ts = rdt_abstime(CLOCK_REALTIME, arg);
        rc = rdrwlock_timedwrlock(rw, &ts);
        acq_rw = 1;
    } else if (rw && sscanf(line, "clockrd %lld", &arg) == 1) {
        ts = rdt_abstime(CLOCK_MONOTONIC, arg);
        rc = rdrwlock_clockrdlock(rw, CLOCK_MONOTONIC, &ts);
        acq_rw = 1;
    } else if (rw && sscanf(line, "clockwr %lld", &arg) == 1) {
        ts = rdt_abstime(CLOCK_MONOTONIC, arg);
        rc = rdrwlock_clockwrlock(rw, CLOCK_MONOTONIC, &ts);
        acq_rw = 1;
    } else if (rw && strcmp(line, "rwunlock") == 0) {
        rc = rdrwlock_unlock(rw);
    } else if (rw && strcmp(line, "rwconsistent") == 0) {
        rc = rdrwlock_consistent(rw);
    } else if (rw && strcmp(line, "rwtoken") == 0) {
        rc = rdrwlock_fencing_token(rw, &tok);
        *val = tok;
    } else if (x->c && strcmp(line, "reset") == 0) {
        rc = rdlock_reset_name(x->c, x->name);
    } else if (x->lost && strcmp(line, "lost") == 0) {
        rc = 0;
        *val = (unsigned long long)__atomic_load_n(x->lost, __ATOMIC_SEQ_CST);
    }
    *ms = rdt_now_ms() - t0;
    /* an acquisition that holds the lock reports the hold's token */
    if ((rc == 0 || rc == EOWNERDEAD) && (acq_m || acq_rw)) {
        if ((acq_m ? rdlock_fencing_token(m, &tok) : rdrwlock_fencing_token(rw, &tok)) == 0)
            *val = tok;
    }
    return rc;
}

/* Answer commands from in on out until "quit", EOF or a broken pipe. */
static void actor_serve(const actor_ctx_t *x, int in, int out)
{
    char line[128], reply[96];

    while (rdt_recv(in, line, sizeof line, -1) >= 0) {
        unsigned long long val = 0;
        long long ms = 0;
        int rc;

        if (strcmp(line, "quit") == 0)
            return;
        if (x->c != NULL && strcmp(line, "exit") == 0)
            exit(0); /* a normal exit, holds and all: atexit handlers run */
        rc = actor_exec(x, line, &val, &ms);
        snprintf(reply, sizeof reply, "%d %llu %lld", rc, val, ms);
        if (rdt_send(out, reply) != 0)
            return;
    }
}

/* A process actor: set up, report "ready <rc>", serve, clean up. */
static int actor_child(void *arg)
{
    rdt_actor_t *a = arg;
    rdt_lockopts_t lo = RDT_LOCKOPTS(NULL);
    rdlock_client_t *c = NULL;
    actor_ctx_t x = { NULL, NULL, NULL, a->name, NULL };
    rdlock_t m;
    rdrwlock_t rw;
    char ready[32];
    int rc, ret = 0;

    rdt_child_begin(&a->p);
    rc = rdlock_client_open(&c, a->ini);
    if (rc == 0) {
        lo.client = c;
        lo.robust = a->o.robust;
        lo.type = a->o.type;
        lo.lease = a->o.lease;
        lo.watchdog = a->o.watchdog;
        if (a->o.count_lost) {
            lo.lostcb = actor_lost_cb;
            lo.lostarg = &g_actor_lost;
            x.lost = &g_actor_lost;
        }
        rc = rdt_mutex_init(&m, a->name, &lo);
        if (rc == 0) {
            x.m = &m;
            rc = rdt_rwlock_init(&rw, a->name, &lo);
        }
        if (rc == 0) {
            x.rw = &rw;
            x.c = c;
        }
    }
    snprintf(ready, sizeof ready, "ready %d", rc);
    if (rdt_send(a->p.to_parent[1], ready) == 0 && rc == 0)
        actor_serve(&x, a->p.to_child[0], a->p.to_parent[1]);
    else
        ret = 1;

    if (x.m) {
        while (rdlock_unlock(x.m) == 0)
            ; /* leave nothing held */
        if (rdlock_destroy(x.m) != 0)
            ret = ret ? ret : 12;
    }
    if (x.rw) {
        while (rdrwlock_unlock(x.rw) == 0)
            ;
        if (rdrwlock_destroy(x.rw) != 0)
            ret = ret ? ret : 12;
    }
    if (c && rdlock_client_close(c) != 0)
        ret = ret ? ret : 13;
    return ret;
}

static void *actor_thread_main(void *arg)
{
    const rdt_actor_t *a = arg;
    actor_ctx_t x = { a->m, a->rw, NULL, NULL, NULL };
    /* copies: nothing of *a is read once it serves */
    int in = a->p.to_child[0], out = a->p.to_parent[1];

    actor_serve(&x, in, out);
    return NULL;
}

/* Live process actors, by value (their rdt_actor_t may be on the stack of
 * a test that failed fatally), for rdt_actor_reap_all. */
#define RDT_MAX_LIVE_ACTORS 32
static struct {
    pid_t pid;
    int to_child, to_parent;
} g_live[RDT_MAX_LIVE_ACTORS];

static void live_add(const rdt_actor_t *a)
{
    int i;
    for (i = 0; i < RDT_MAX_LIVE_ACTORS; i++)
        if (g_live[i].pid <= 0) {
            g_live[i].pid = a->pid;
            g_live[i].to_child = a->p.to_child[1];
            g_live[i].to_parent = a->p.to_parent[0];
            return;
        }
    fprintf(stderr, "%s: more than %d live actors: not reaped after a failure\n", a->who, RDT_MAX_LIVE_ACTORS);
}

static void live_del(pid_t pid)
{
    int i;
    for (i = 0; i < RDT_MAX_LIVE_ACTORS; i++)
        if (g_live[i].pid == pid)
            g_live[i].pid = 0;
}

static void actor_reset(rdt_actor_t *a)
{
    memset(a, 0, sizeof *a);
    a->pid = -1;
    a->p.to_child[0] = a->p.to_child[1] = a->p.to_parent[0] = a->p.to_parent[1] = -1;
}

int rdt_actor_start(rdt_actor_t *a, const char *ini, const char *name, const rdt_actor_opts_t *o)
{
    static const rdt_actor_opts_t dflt = RDT_ACTOR_OPTS;

    actor_reset(a);
    if ((size_t)snprintf(a->ini, sizeof a->ini, "%s", ini) >= sizeof a->ini ||
        (size_t)snprintf(a->name, sizeof a->name, "%s", name) >= sizeof a->name) {
        fprintf(stderr, "rdt_actor_start: ini path or name too long\n");
        return -1;
    }
    a->o = o ? *o : dflt;
    a->pid = rdt_spawn(&a->p, actor_child, a);
    if (a->pid < 0)
        return -1;
    a->live = 1;
    snprintf(a->who, sizeof a->who, "actor %ld (%s)", (long)a->pid, a->name);
    live_add(a);
    if (rdt_expect_line(&a->p, "ready 0", 10000, a->who) != 0) {
        rdt_actor_kill(a);
        return -1;
    }
    return 0;
}

int rdt_actor_thread(rdt_actor_t *a, rdlock_t *m, rdrwlock_t *rw)
{
    actor_reset(a);
    a->thread = 1;
    a->m = m;
    a->rw = rw;
    snprintf(a->who, sizeof a->who, "thread actor");
    if (rdt_pipe_open(&a->p) != 0)
        return -1;
    if (pthread_create(&a->th, NULL, actor_thread_main, a) != 0) {
        fprintf(stderr, "rdt_actor_thread: pthread_create failed\n");
        rdt_pipe_close(&a->p);
        return -1;
    }
    a->live = 1;
    return 0;
}

int rdt_actor_send(rdt_actor_t *a, const char *cmd)
{
    if (!a->live) {
        fprintf(stderr, "%s: not running, '%s' not sent\n", a->who, cmd);
        return -1;
    }
    if (rdt_send(a->p.to_child[1], cmd) != 0) {
        fprintf(stderr, "%s: cannot send '%s'\n", a->who, cmd);
        return -1;
    }
    a->pending++;
    return 0;
}

int rdt_actor_reply(rdt_actor_t *a, int timeout_ms, unsigned long long *val, long long *ms)
{
    char line[160];
    unsigned long long v = 0;
    long long e = 0;
    int rc;

    if (!a->live || a->pending == 0) {
        fprintf(stderr, "%s: %s\n", a->who, a->live ? "no command to answer" : "not running");
        return RDT_ACTOR_NOREPLY;
    }
    if (rdt_recv(a->p.to_parent[0], line, sizeof line, timeout_ms) < 0)
        return RDT_ACTOR_NOREPLY;
    a->pending--;
    if (sscanf(line, "%d %llu %lld", &rc, &v, &e) != 3) {
        fprintf(stderr, "%s: malformed answer \"%s\"\n", a->who, line);
        return RDT_ACTOR_NOREPLY;
    }
    if (val)
        *val = v;
    if (ms)
        *ms = e;
    return rc;
}

int rdt_actor_call(rdt_actor_t *a, const char *cmd, int timeout_ms, unsigned long long *val, long long *ms)
{
    int rc;

    if (a->pending != 0) {
        fprintf(stderr, "%s: still in an earlier call, '%s' not sent\n", a->who, cmd);
        return RDT_ACTOR_NOREPLY;
    }
    if (rdt_actor_send(a, cmd) != 0)
        return RDT_ACTOR_NOREPLY;
    rc = rdt_actor_reply(a, timeout_ms, val, ms);
    if (rc == RDT_ACTOR_NOREPLY)
        fprintf(stderr, "%s: no answer to '%s' within %d ms\n", a->who, cmd, timeout_ms);
    return rc;
}

int rdt_actor_silent(rdt_actor_t *a)
{
    struct pollfd pfd;

    if (!a->live)
        return 0;
    pfd.fd = a->p.to_parent[0];
    pfd.events = POLLIN;
    pfd.revents = 0;
    return poll(&pfd, 1, 0) == 0;
}

int rdt_actor_kill(rdt_actor_t *a)
{
    int st;

    if (!a->live || a->thread || a->pid <= 0) {
        if (a->thread)
            fprintf(stderr, "%s: a thread cannot be killed\n", a->who);
        return -1;
    }
    kill(a->pid, SIGKILL);
    st = rdt_wait(a->pid, 5000);
    live_del(a->pid);
    a->pid = -1;
    a->live = 0;
    a->pending = 0;
    rdt_pipe_close(&a->p);
    return st;
}

int rdt_actor_exit(rdt_actor_t *a)
{
    int st;

    if (!a->live || a->thread || a->pid <= 0) {
        fprintf(stderr, "%s: not a running process actor\n", a->who);
        return -1;
    }
    if (rdt_send(a->p.to_child[1], "exit") != 0) {
        fprintf(stderr, "%s: cannot send exit\n", a->who);
        return -1;
    }
    st = rdt_wait(a->pid, 10000);
    live_del(a->pid);
    a->pid = -1;
    a->live = 0;
    a->pending = 0;
    rdt_pipe_close(&a->p);
    if (st != 0)
        fprintf(stderr, "%s: exit status %d\n", a->who, st);
    return st;
}

int rdt_actor_stop(rdt_actor_t *a)
{
    int st;

    if (!a->live)
        return -1;
    if (a->thread) {
        rdt_send(a->p.to_child[1], "quit");
        pthread_join(a->th, NULL);
        rdt_pipe_close(&a->p);
        a->live = 0;
        a->pending = 0;
        return 0;
    }
    if (a->pending != 0) {
        fprintf(stderr, "%s: still in a call at stop: SIGKILL\n", a->who);
        return rdt_actor_kill(a);
    }
    rdt_send(a->p.to_child[1], "quit");
    st = rdt_wait(a->pid, 10000);
    if (st != 0)
        fprintf(stderr, "%s exited with %d\n", a->who, st);
    live_del(a->pid);
    a->pid = -1;
    a->live = 0;
    rdt_pipe_close(&a->p);
    return st;
}

void rdt_actor_reap_all(void)
{
    int i;
    for (i = 0; i < RDT_MAX_LIVE_ACTORS; i++) {
        if (g_live[i].pid <= 0)
            continue;
        kill(g_live[i].pid, SIGKILL);
        rdt_wait(g_live[i].pid, 5000);
        close(g_live[i].to_child);
        close(g_live[i].to_parent);
        g_live[i].pid = 0;
    }
}
