/* test_client.c - clients and configuration (docs/CONTRACT.md sections 2, 3, 7, 10):
 * every [redis]/[lock] key that is observable, authentication, fail_fast,
 * Redis killed, restarted or paused under a client, the process default
 * client ($RDLOCK_CONF), client_close, and fork().
 *
 * Each test runs against real redis-servers started by the fixture: `srv`
 * for the whole suite, plus per-test servers that are killed, paused or
 * need a password.  No sleeps as synchronisation: waits use condition
 * variables, pipes, or bounded polling of the server's state; the only
 * naps let wall time pass (leases, "still blocked"). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

static rdt_server_t srv;

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* A marker that rdlock_client_open must leave untouched on failure. */
static int sentinel_obj;
#define SENTINEL ((rdlock_client_t *)&sentinel_obj)

/* Open a client from path; returns rc, *c set on success only. */
static int open_path(const char *path, rdlock_client_t **c)
{
    int rc;
    *c = SENTINEL;
    rc = rdlock_client_open(c, path);
    if (rc != 0) {
        CU_ASSERT_PTR_EQUAL(*c, SENTINEL); /* untouched on failure */
        *c = NULL;
    }
    return rc;
}

/* Open a client on server s with extra ini text; fatal on failure. */
static rdlock_client_t *open_on(const rdt_server_t *s, int use_socket, const char *extra_ini)
{
    const char *ini = rdt_write_ini(s, use_socket, extra_ini);
    rdlock_client_t *c = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    RDT_ASSERT_RC(0, open_path(ini, &c));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

/* Write an ini for server s's TCP address (no password line) followed by
 * extra, into srv's dir under basename. */
static const char *write_ini_raw(const rdt_server_t *s, const char *basename, const char *extra)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "[redis]\nhost = 127.0.0.1\nport = %d\n%s", s->port, extra ? extra : "");
    return rdt_write_file(&srv, basename, buf);
}

/* lease 0 = from config; watchdog < 0 = from config. */
static int init_lock(rdlock_t *m, const char *name, rdlock_client_t *c, unsigned lease, int watchdog,
                     rdlock_lost_fn fn, void *arg)
{
    rdt_lockopts_t o = { .client = c, .lease = lease, .watchdog = watchdog, .lostcb = fn, .lostarg = arg };
    return rdt_mutex_init(m, name, &o);
}

/* A string/status reply of a command on s, copied into out; 0 or -1. */
static int rstr(const rdt_server_t *s, char *out, size_t n, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;
    int rc = -1;

    out[0] = '\0';
    va_start(ap, fmt);
    r = rdt_vcmd_on(s, 0, fmt, ap);
    va_end(ap);
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) {
        snprintf(out, n, "%s", r->str);
        rc = 0;
    } else if (r) {
        fprintf(stderr, "rstr %s: %s\n", fmt, r->str ? r->str : "unexpected reply");
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* Lock and unlock name on c once; 0 when both worked and the key existed
 * on s while held. */
static void lock_roundtrip(const rdt_server_t *s, rdlock_client_t *c, const char *name)
{
    rdlock_t m;
    char key[600];

    snprintf(key, sizeof key, "rdlock:{%s}", name);
    RDT_ASSERT_RC(0, init_lock(&m, name, c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(s, 0, "EXISTS %s", key));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(s, 0, "EXISTS %s", key));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A thread that calls rdlock_lock, then (if it got it) rdlock_unlock:
 * the owner of a hold is the thread. */
typedef struct locker {
    rdlock_t *m;
    int rc;
    int unlock_rc;
    int done;
    long long done_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
} locker_t;

static void *locker_main(void *arg)
{
    locker_t *l = arg;
    int rc = rdlock_lock(l->m), urc = -1;
    if (rc == 0)
        urc = rdlock_unlock(l->m);
    pthread_mutex_lock(&l->mu);
    l->rc = rc;
    l->unlock_rc = urc;
    l->done = 1;
    l->done_ms = rdt_now_ms();
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static int locker_start(locker_t *l, rdlock_t *m)
{
    pthread_condattr_t ca;
    memset(l, 0, sizeof *l);
    l->m = m;
    l->rc = -1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    return pthread_create(&l->th, NULL, locker_main, l);
}

/* Wait until the locker returned; 1 done (joined), 0 still blocked. */
static int locker_wait(locker_t *l, int timeout_ms)
{
    struct timespec ts;
    int done;

    ts = rdt_abstime(CLOCK_MONOTONIC, timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (!l->done)
        if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT)
            break;
    done = l->done;
    pthread_mutex_unlock(&l->mu);
    if (done)
        pthread_join(l->th, NULL);
    return done;
}

static int locker_done(locker_t *l)
{
    int d;
    pthread_mutex_lock(&l->mu);
    d = l->done;
    pthread_mutex_unlock(&l->mu);
    return d;
}

static rdt_lostrec_t lost; /* lost callbacks (rdt_lost_cb, &lost) */

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* count_threads() once it has stopped changing (the same for 5 looks 20 ms
 * apart, at most 3 s): threads of earlier tests that were told to stop,
 * such as a background thread that ends after its lost callback returns,
 * may still be on their way out, more slowly under TSan or valgrind. */
static int settled_threads(void)
{
    long long end = rdt_now_ms() + 3000;
    int n = count_threads(), same = 0;
    while (same < 5 && rdt_now_ms() < end) {
        int m;
        rdt__nap_ms(20);
        m = count_threads();
        same = m == n ? same + 1 : 0;
        n = m;
    }
    return n;
}

/* Log capture. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[16384];
static size_t log_len;
static int log_lines;

static void capture_log(int level, const char *msg, void *arg)
{
    size_t n = strlen(msg);
    (void)level;
    (void)arg;
    pthread_mutex_lock(&log_mu);
    if (log_len + n + 2 < sizeof log_buf) {
        memcpy(log_buf + log_len, msg, n);
        log_len += n;
        log_buf[log_len++] = '\n';
        log_buf[log_len] = '\0';
    }
    log_lines++;
    pthread_mutex_unlock(&log_mu);
}

static void log_reset(void)
{
    pthread_mutex_lock(&log_mu);
    log_len = 0;
    log_buf[0] = '\0';
    log_lines = 0;
    pthread_mutex_unlock(&log_mu);
}

static int setup(void)
{
    rdt_lost_init(&lost);
    return rdt_suite_start(&srv, NULL);
}

static int teardown(void)
{
    rdt_suite_stop(&srv, NULL);
    return 0;
}

static void fresh(void)
{
    CU_ASSERT_FATAL(rdt_flushall(&srv) == 0);
    rdt_lost_reset(&lost);
}

/* ------------------------------------------------------------------ */
/* [redis] addressing, db, [lock] key_prefix and lease_ms              */
/* ------------------------------------------------------------------ */

static void test_tcp_host_port(void)
{
    rdlock_client_t *c;
    char field[128];
    rdlock_t m;

    fresh();
    c = open_on(&srv, 0, NULL);
    lock_roundtrip(&srv, c, "tcp");
    /* The holder field is "<32 hex client id>:<thread>". */
    RDT_ASSERT_RC(0, init_lock(&m, "tcp2", c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{tcp2}", field, sizeof field, NULL), 1);
    CU_ASSERT(strlen(field) > 33 && field[32] == ':' && strspn(field, "0123456789abcdef") == 32);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);

    /* The unix socket alone works as well. */
    c = open_on(&srv, 1, NULL);
    lock_roundtrip(&srv, c, "unix");
    rdt_close_client(c);
}

static void test_socket_wins(void)
{
    rdlock_client_t *c = NULL;
    char buf[1024];
    const char *path;

    fresh();
    /* Control: nothing listens on port 1, so host/port alone fail fast. */
    path = rdt_write_file(&srv, "tcp-dead.ini", "[redis]\nhost = 127.0.0.1\nport = 1\n[lock]\nfail_fast = yes\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EIO, open_path(path, &c));

    /* With a right socket next to the wrong port, the socket is used. */
    snprintf(buf, sizeof buf, "[redis]\nhost = 127.0.0.1\nport = 1\nsocket = %s\n[lock]\nfail_fast = yes\n",
             srv.sock);
    path = rdt_write_file(&srv, "sock-wins.ini", buf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(0, open_path(path, &c));
    if (c) {
        lock_roundtrip(&srv, c, "sockwins");
        rdt_close_client(c);
    }
    /* Same with the socket line first. */
    snprintf(buf, sizeof buf, "[redis]\nsocket = %s\nhost = 127.0.0.1\nport = 1\n[lock]\nfail_fast = yes\n",
             srv.sock);
    path = rdt_write_file(&srv, "sock-wins2.ini", buf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(0, open_path(path, &c));
    if (c) {
        lock_roundtrip(&srv, c, "sockwins2");
        rdt_close_client(c);
    }
}

static void test_db(void)
{
    rdlock_client_t *c;
    rdlock_t m;

    fresh();
    c = open_on(&srv, 0, "db = 3\n");
    RDT_ASSERT_RC(0, init_lock(&m, "indb3", c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 3, "EXISTS %s", "rdlock:{indb3}"));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 3, "EXISTS %s", rdt_fence_key(NULL, "indb3")));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{indb3}"));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", rdt_fence_key(NULL, "indb3")));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 3, "EXISTS %s", "rdlock:{indb3}"));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
}

static void test_db_rejected(void)
{
    rdlock_client_t *c = NULL;
    const char *path;
    rdlock_t m;

    fresh();
    /* Valid for the config (>= 0), refused by a server with 16 databases. */
    path = rdt_write_ini(&srv, 0, "db = 100000\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EINVAL, open_path(path, &c));
    path = rdt_write_ini(&srv, 1, "db = 16\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EINVAL, open_path(path, &c));
    /* The highest valid one works. */
    c = open_on(&srv, 0, "db = 15\n");
    RDT_ASSERT_RC(0, init_lock(&m, "db15", c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 15, "EXISTS %s", "rdlock:{db15}"));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{db15}"));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
}

static void test_key_prefix(void)
{
    rdlock_client_t *c;
    rdlock_t m;

    fresh();
    c = open_on(&srv, 0, "[lock]\nkey_prefix = myapp:\n");
    RDT_ASSERT_RC(0, init_lock(&m, "pfx", c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 0, "EXISTS %s", "myapp:{pfx}"));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&srv, 0, "EXISTS %s", rdt_fence_key("myapp:", "pfx")));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{pfx}"));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&srv, 0, "EXISTS %s", "myapp:{pfx}"));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
}

static void test_lease_ms(void)
{
    rdlock_client_t *c;
    rdlock_t m, m2;
    long long pttl;

    fresh();
    c = open_on(&srv, 0, "[lock]\nlease_ms = 5000\n");
    RDT_ASSERT_RC(0, init_lock(&m, "lease", c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    pttl = rdt_int_on(&srv, 0, "PTTL %s", "rdlock:{lease}");
    printf("[PTTL %lld for lease_ms 5000] ", pttl);
    CU_ASSERT(pttl > 4000 && pttl <= 5000);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    /* An attribute lease overrides the config. */
    RDT_ASSERT_RC(0, init_lock(&m2, "lease2", c, 1200, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m2));
    pttl = rdt_int_on(&srv, 0, "PTTL %s", "rdlock:{lease2}");
    CU_ASSERT(pttl > 800 && pttl <= 1200);
    RDT_ASSERT_RC(0, rdlock_unlock(&m2));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
    rdt_close_client(c);
}

/* ------------------------------------------------------------------ */
/* authentication                                                      */
/* ------------------------------------------------------------------ */

static void test_auth_password(void)
{
    rdt_server_t as;
    rdlock_client_t *c = NULL;
    const char *path;
    char buf[512];

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&as, "s3cret-pw", NULL) == 0);

    /* Right password (TCP and unix socket). */
    c = open_on(&as, 0, NULL);
    lock_roundtrip(&as, c, "auth-ok");
    rdt_close_client(c);
    c = open_on(&as, 1, NULL);
    lock_roundtrip(&as, c, "auth-ok-unix");
    rdt_close_client(c);

    /* Wrong password. */
    path = write_ini_raw(&as, "auth-wrong.ini", "password = not-it\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));
    /* No password: NOAUTH. */
    path = write_ini_raw(&as, "auth-none.ini", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));
    /* ... also with fail_fast and with a db (different setup paths). */
    path = write_ini_raw(&as, "auth-none2.ini", "db = 2\n[lock]\nfail_fast = yes\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));

    /* password_file: first line is the password. */
    path = rdt_write_file(&srv, "pw-right.txt", "s3cret-pw\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    snprintf(buf, sizeof buf, "password_file = %s\n", path);
    path = write_ini_raw(&as, "auth-file.ini", buf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(0, open_path(path, &c));
    if (c) {
        lock_roundtrip(&as, c, "auth-file");
        rdt_close_client(c);
    }
    path = rdt_write_file(&srv, "pw-wrong.txt", "not-it\nsecond line\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    snprintf(buf, sizeof buf, "password_file = %s\n", path);
    path = write_ini_raw(&as, "auth-file-wrong.ini", buf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));

    rdt_server_stop(&as);
}

static void test_auth_acl(void)
{
    rdt_server_t as;
    rdlock_client_t *c = NULL;
    const char *path;
    char list[8192];

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&as, "admin-pw", NULL) == 0);
    CU_ASSERT_FATAL(rstr(&as, list, sizeof list, "ACL SETUSER bob on >bobs-pw ~* &* +@all") == 0);
    CU_ASSERT_STRING_EQUAL(list, "OK");

    path = write_ini_raw(&as, "acl-ok.ini", "username = bob\npassword = bobs-pw\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(0, open_path(path, &c));
    if (c) {
        rdlock_t m;
        RDT_ASSERT_RC(0, init_lock(&m, "acl", c, 0, -1, NULL, NULL));
        RDT_ASSERT_RC(0, rdlock_lock(&m));
        RDT_ASSERT_EQ_LL(1, rdt_int_on(&as, 0, "EXISTS %s", "rdlock:{acl}"));
        /* The library's connection is authenticated as bob. */
        CU_ASSERT(rstr(&as, list, sizeof list, "CLIENT LIST") == 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(list, "user=bob"));
        RDT_ASSERT_RC(0, rdlock_unlock(&m));
        RDT_ASSERT_RC(0, rdlock_destroy(&m));
        rdt_close_client(c);
    }
    path = write_ini_raw(&as, "acl-wrong.ini", "username = bob\npassword = admin-pw\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));
    path = write_ini_raw(&as, "acl-nouser.ini", "username = alice\npassword = bobs-pw\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));
    /* A disabled user is refused. */
    CU_ASSERT(rstr(&as, list, sizeof list, "ACL SETUSER bob off") == 0);
    path = write_ini_raw(&as, "acl-off.ini", "username = bob\npassword = bobs-pw\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));

    rdt_server_stop(&as);
}

static void test_password_not_logged(void)
{
    static const char *const secrets[] = { "Wr0ng-Passw0rd-XYZ", "Sup3r-S3cret-PW", "Fil3-Passw0rd-QQ" };
    rdt_server_t as;
    rdlock_client_t *c = NULL;
    const char *path;
    char buf[512];
    size_t i;
    int lines;

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&as, "Sup3r-S3cret-PW", NULL) == 0);
    log_reset();
    rdlock_set_logger(capture_log, NULL);

    path = write_ini_raw(&as, "log-wrong.ini", "password = Wr0ng-Passw0rd-XYZ\n");
    CU_ASSERT_PTR_NOT_NULL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));
    path = write_ini_raw(&as, "log-wrong-user.ini", "username = default\npassword = Wr0ng-Passw0rd-XYZ\n");
    CU_ASSERT_PTR_NOT_NULL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));
    path = rdt_write_file(&srv, "log-pw.txt", "Fil3-Passw0rd-QQ\n");
    CU_ASSERT_PTR_NOT_NULL(path);
    snprintf(buf, sizeof buf, "password_file = %s\ndb = 1\n", path ? path : "/nonexistent");
    path = write_ini_raw(&as, "log-file.ini", buf);
    CU_ASSERT_PTR_NOT_NULL(path);
    RDT_ASSERT_RC(EACCES, open_path(path, &c));
    /* Right password: nothing secret is logged on success either. */
    c = open_on(&as, 0, NULL);
    lock_roundtrip(&as, c, "logged");
    rdt_close_client(c);

    rdlock_set_logger(NULL, NULL);
    pthread_mutex_lock(&log_mu);
    lines = log_lines;
    printf("[%d log line(s) captured] ", lines);
    CU_ASSERT(lines >= 1); /* refusals were reported, so the check below means something */
    for (i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (strstr(log_buf, secrets[i]) != NULL) {
            fprintf(stderr, "password %s appears in the log:\n%s\n", secrets[i], log_buf);
            CU_FAIL("a password appears in a log line");
        }
    pthread_mutex_unlock(&log_mu);
    rdt_server_stop(&as);
}

/* ------------------------------------------------------------------ */
/* unreachable, killed, restarted, paused servers                      */
/* ------------------------------------------------------------------ */

static void test_unreachable_at_open(void)
{
    rdt_server_t ds;
    rdlock_client_t *c = NULL;
    const char *path;
    rdlock_t m;
    long long t0, took;

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&ds, NULL, NULL) == 0);
    rdt_server_kill(&ds); /* its port and socket now have nobody listening */

    path = write_ini_raw(&ds, "ff-dead.ini", "command_retries = 1\n[lock]\nfail_fast = yes\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(EIO, open_path(path, &c));

    path = write_ini_raw(&ds, "nff-dead.ini", "command_retries = 2\n[lock]\nfail_fast = no\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    RDT_ASSERT_RC(0, open_path(path, &c));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    RDT_ASSERT_RC(0, init_lock(&m, "dead", c, 2000, -1, NULL, NULL));
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EIO, rdlock_trylock(&m));
    took = rdt_now_ms() - t0;
    printf("[trylock EIO after %lld ms] ", took);
    CU_ASSERT(took <= 2000);
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));

    /* The server comes (back): the same client works. */
    CU_ASSERT_FATAL(rdt_server_restart(&ds) == 0);
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&ds, 0, "EXISTS %s", "rdlock:{dead}"));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    rdt_server_stop(&ds);
}

static void test_fail_fast_server_dies(void)
{
    rdt_server_t ds;
    rdlock_client_t *c = NULL;
    rdlock_t m, held;
    long long t0, took;
    unsigned count = 0;

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&ds, NULL, NULL) == 0);
    c = open_on(&ds, 0, "command_retries = 2\n[lock]\nfail_fast = yes\n");
    RDT_ASSERT_RC(0, init_lock(&m, "ff", c, 2000, -1, NULL, NULL));
    RDT_ASSERT_RC(0, init_lock(&held, "ff-held", c, 3000, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&held));

    rdt_server_kill(&ds);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EIO, rdlock_trylock(&m));
    took = rdt_now_ms() - t0;
    CU_ASSERT(took <= 1500);
    t0 = rdt_now_ms();
    RDT_ASSERT_RC(EIO, rdlock_lock(&m)); /* blocking, but fail_fast */
    took = rdt_now_ms() - t0;
    printf("[fail_fast lock EIO after %lld ms] ", took);
    CU_ASSERT(took <= 1500);
    /* unlock that cannot reach Redis: EIO, the hold stays recorded. */
    RDT_ASSERT_RC(EIO, rdlock_unlock(&held));
    RDT_ASSERT_RC(0, rdlock_holdcount(&held, &count));
    RDT_ASSERT_EQ_LL(1, count);

    CU_ASSERT_FATAL(rdt_server_restart(&ds) == 0);
    /* The restarted server (no persistence) lost the hold. */
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&held));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&held));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&held));
    rdt_close_client(c);
    rdt_server_stop(&ds);
}

/* A waiter in a child process (the test process restarts Redis, which
 * forks, so the blocked caller lives in another process):
 *   child: open the client, report "open RC"; on "go" call rdlock_lock and
 *   report "lock RC"; on "unlock" report "unlock RC"; exit 0. */
typedef struct waiter_ctx {
    rdt_pipe_t p;
    char ini[512];
    const char *name;
} waiter_ctx_t;

static int waiter_child(void *arg)
{
    waiter_ctx_t *x = arg;
    rdlock_client_t *c = NULL;
    rdlock_t m;
    char line[64];
    int rc;

    rdt_pipe_child(&x->p);
    rc = rdlock_client_open(&c, x->ini);
    if (rc == 0)
        rc = init_lock(&m, x->name, c, 2000, -1, NULL, NULL);
    snprintf(line, sizeof line, "open %d", rc);
    rdt_send(x->p.to_parent[1], line);
    if (rc != 0)
        return 2;
    if (rdt_recv(x->p.to_child[0], line, sizeof line, 30000) < 0 || strcmp(line, "go") != 0)
        return 3;
    rc = rdlock_lock(&m);
    snprintf(line, sizeof line, "lock %d", rc);
    rdt_send(x->p.to_parent[1], line);
    if (rc != 0)
        return 4;
    if (rdt_recv(x->p.to_child[0], line, sizeof line, 30000) < 0 || strcmp(line, "unlock") != 0)
        return 5;
    rc = rdlock_unlock(&m);
    snprintf(line, sizeof line, "unlock %d", rc);
    rdt_send(x->p.to_parent[1], line);
    if (rc != 0)
        return 6;
    if (rdlock_destroy(&m) != 0 || rdlock_client_close(c) != 0)
        return 7;
    return 0;
}

/* Start the waiter child on ini; 0 when it reported "open 0". */
static pid_t waiter_start(waiter_ctx_t *x, const char *ini, const char *name)
{
    pid_t pid;

    snprintf(x->ini, sizeof x->ini, "%s", ini);
    x->name = name;
    pid = rdt_spawn(&x->p, waiter_child, x);
    if (pid < 0)
        return -1;
    if (rdt_expect_line(&x->p, "open 0", 10000, "waiter child") != 0) {
        rdt_pipe_close(&x->p);
        rdt_wait(pid, 5000);
        return -1;
    }
    return pid;
}

/* A blocking lock started while Redis is down returns 0 once Redis is
 * back (fail_fast = no): "Redis killed and restarted while a call
 * blocks". */
static void test_lock_waits_for_restart(void)
{
    rdt_server_t ds;
    waiter_ctx_t x;
    const char *ini;
    char line[64];
    long long t_restart;
    pid_t pid;

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&ds, NULL, NULL) == 0);
    ini = rdt_write_ini(&ds, 0, "command_retries = 1\nconnect_timeout_ms = 300\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    pid = waiter_start(&x, ini, "comeback");
    CU_ASSERT_FATAL(pid > 0);

    rdt_server_kill(&ds);
    CU_ASSERT(rdt_send(x.p.to_child[1], "go") == 0);
    /* It keeps waiting while Redis is away (wall time passes). */
    CU_ASSERT(rdt_recv(x.p.to_parent[0], line, sizeof line, 800) < 0);
    CU_ASSERT_EQUAL(line[0], '\0');
    CU_ASSERT(rdt_server_restart(&ds) == 0);
    t_restart = rdt_now_ms();
    CU_ASSERT(rdt_recv(x.p.to_parent[0], line, sizeof line, 8000) >= 0);
    printf("['%s' %lld ms after the restart] ", line, rdt_now_ms() - t_restart);
    CU_ASSERT_STRING_EQUAL(line, "lock 0");
    CU_ASSERT(rdt_now_ms() - t_restart <= 3000);
    RDT_ASSERT_EQ_LL(1, rdt_int_on(&ds, 0, "EXISTS %s", "rdlock:{comeback}"));
    CU_ASSERT(rdt_send(x.p.to_child[1], "unlock") == 0);
    CU_ASSERT(rdt_recv(x.p.to_parent[0], line, sizeof line, 8000) >= 0);
    CU_ASSERT_STRING_EQUAL(line, "unlock 0");
    rdt_pipe_close(&x.p);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 10000));
    RDT_ASSERT_EQ_LL(0, rdt_int_on(&ds, 0, "EXISTS %s", "rdlock:{comeback}"));
    rdt_server_stop(&ds);
}

/* Redis killed and restarted while a lock call blocks behind another
 * owner: the restart frees the name, the waiter gets it, the old owner
 * hears of its loss. */
static void test_waiter_across_restart(void)
{
    rdt_server_t ds;
    rdlock_client_t *cb;
    rdlock_t mb;
    waiter_ctx_t x;
    const char *ini;
    char line[64];
    long long t0;
    pid_t pid;
    int queued = 0;

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&ds, NULL, NULL) == 0);
    ini = rdt_write_ini(&ds, 0, "command_retries = 1\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    pid = waiter_start(&x, ini, "restart-w");
    CU_ASSERT_FATAL(pid > 0);
    cb = open_on(&ds, 0, "command_retries = 1\n");
    RDT_ASSERT_RC(0, init_lock(&mb, "restart-w", cb, 2000, -1, rdt_lost_cb, &lost));
    RDT_ASSERT_RC(0, rdlock_lock(&mb));
    CU_ASSERT(rdt_send(x.p.to_child[1], "go") == 0);
    /* Wait (bounded) until the waiter has queued on the server. */
    t0 = rdt_now_ms();
    while (rdt_now_ms() - t0 < 3000) {
        if (rdt_int_on(&ds, 0, "ZCARD %s", "rdlock:{restart-w}:w") == 1) {
            queued = 1;
            break;
        }
        rdt__nap_ms(5); /* polling the server's state */
    }
    CU_ASSERT(queued);

    rdt_server_kill(&ds);
    CU_ASSERT(rdt_server_restart(&ds) == 0);
    t0 = rdt_now_ms();
    CU_ASSERT(rdt_recv(x.p.to_parent[0], line, sizeof line, 8000) >= 0);
    printf("['%s' %lld ms after the restart] ", line, rdt_now_ms() - t0);
    CU_ASSERT_STRING_EQUAL(line, "lock 0");
    CU_ASSERT_EQUAL(rdt_lost_wait(&lost, 1, 4000), 1);
    RDT_ASSERT_RC(ENOLCK, rdlock_unlock(&mb));
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mb));
    CU_ASSERT(rdt_send(x.p.to_child[1], "unlock") == 0);
    CU_ASSERT(rdt_recv(x.p.to_parent[0], line, sizeof line, 8000) >= 0);
    CU_ASSERT_STRING_EQUAL(line, "unlock 0");
    rdt_pipe_close(&x.p);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 10000));
    RDT_ASSERT_RC(0, rdlock_trylock(&mb));
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(cb);
    rdt_server_stop(&ds);
}

static void test_timedlock_server_down(void)
{
    rdt_server_t ds;
    rdlock_client_t *c;
    rdlock_t m;
    struct timespec abst;
    long long t0, took;

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&ds, NULL, NULL) == 0);
    c = open_on(&ds, 0, "command_retries = 1\n");
    RDT_ASSERT_RC(0, init_lock(&m, "timed-down", c, 2000, -1, NULL, NULL));
    lock_roundtrip(&ds, c, "warm-up");
    rdt_server_kill(&ds);

    clock_gettime(CLOCK_REALTIME, &abst);
    t0 = rdt_now_ms();
    abst.tv_nsec += 800 * 1000000L;
    if (abst.tv_nsec >= 1000000000L) {
        abst.tv_sec++;
        abst.tv_nsec -= 1000000000L;
    }
    RDT_ASSERT_RC(EIO, rdlock_timedlock(&m, &abst));
    took = rdt_now_ms() - t0;
    printf("[timedlock EIO after %lld ms for an 800 ms deadline] ", took);
    CU_ASSERT(took >= 790);
    CU_ASSERT(took <= 800 + 700);
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    rdt_server_stop(&ds);
}

static void test_command_timeout_paused(void)
{
    rdt_server_t ds;
    rdlock_client_t *c;
    rdlock_t m;
    long long t0, took;
    int rc;

    fresh();
    CU_ASSERT_FATAL(rdt_server_start(&ds, NULL, NULL) == 0);
    c = open_on(&ds, 0, "command_timeout_ms = 200\nconnect_timeout_ms = 200\ncommand_retries = 1\n");
    RDT_ASSERT_RC(0, init_lock(&m, "paused", c, 2000, 0, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    rdt_server_pause(&ds);
    t0 = rdt_now_ms();
    rc = rdlock_trylock(&m);
    took = rdt_now_ms() - t0;
    rdt_server_resume(&ds);
    printf("[trylock on a paused server: %s after %lld ms] ", rdt_errname(rc), took);
    RDT_ASSERT_RC(EIO, rc);
    /* About command_timeout x (retries + 1) + backoff: 400 ms; bounded
     * generously, and not before one timeout. */
    CU_ASSERT(took >= 190);
    CU_ASSERT(took <= 1500);

    /* After resume it works again (a timed-out attempt may have been
     * executed by the server late: it is this owner's either way). */
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    rdt_close_client(c);
    rdt_server_stop(&ds);
}

/* ------------------------------------------------------------------ */
/* the process default client                                          */
/* ------------------------------------------------------------------ */

typedef struct default_case {
    const char *conf;
    int expect; /* 0: locks work; else the code of the first lock op */
} default_case_t;

#define CHILD_CHECK(step, expected, actual)                                                              \
    do {                                                                                                 \
        int rc_ = (actual);                                                                              \
        if (rc_ != (expected)) {                                                                         \
            fprintf(stderr, "child step %d: %s: expected %s, got %s\n", step, #actual,                   \
                    rdt_errname(expected), rdt_errname(rc_));                                            \
            return step;                                                                                 \
        }                                                                                                \
    } while (0)

static int default_child(void *arg)
{
    const default_case_t *dc = arg;
    rdlock_t m;
    rdlock_client_t *c = NULL;

    if (setenv("RDLOCK_CONF", dc->conf, 1) != 0)
        return 99;
    CHILD_CHECK(1, 0, rdlock_init(&m, "dflt", NULL)); /* no network, no config yet */
    CHILD_CHECK(2, dc->expect, rdlock_lock(&m));
    if (dc->expect == 0) {
        if (rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{dflt}") != 1) {
            fprintf(stderr, "child: the default client's lock is not on the server\n");
            return 3;
        }
        CHILD_CHECK(4, 0, rdlock_unlock(&m));
        CHILD_CHECK(5, 0, rdlock_trylock(&m));
        CHILD_CHECK(6, 0, rdlock_unlock(&m));
        if (rdt_int_on(&srv, 0, "EXISTS %s", "rdlock:{dflt}") != 0)
            return 7;
    } else {
        /* Not cached: the next call reports it again. */
        CHILD_CHECK(8, dc->expect, rdlock_trylock(&m));
        CHILD_CHECK(9, EPERM, rdlock_unlock(&m));
    }
    CHILD_CHECK(10, 0, rdlock_destroy(&m));
    /* ini_path NULL means the same search. */
    CHILD_CHECK(11, dc->expect, rdlock_client_open(&c, NULL));
    if (c)
        CHILD_CHECK(12, 0, rdlock_client_close(c));
    return 0;
}

static void run_default_case(const char *conf, int expect)
{
    default_case_t dc = { conf, expect };
    pid_t pid = rdt_fork(default_child, &dc);
    CU_ASSERT_FATAL(pid > 0);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 15000));
}

static void test_default_client_conf(void)
{
    const char *path;
    char copy[512];

    fresh();
    path = rdt_write_ini(&srv, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    snprintf(copy, sizeof copy, "%s", path);
    run_default_case(copy, 0);
}

static void test_default_client_missing(void)
{
    char path[512];
    fresh();
    snprintf(path, sizeof path, "%s/no-such-file.ini", srv.dir);
    run_default_case(path, ENOENT);
}

static void test_default_client_malformed(void)
{
    const char *path;
    char copy[512];

    fresh();
    path = rdt_write_file(&srv, "malformed.ini", "[redis]\nhost = 127.0.0.1\nport = not-a-number\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    snprintf(copy, sizeof copy, "%s", path);
    run_default_case(copy, EINVAL);
    path = rdt_write_file(&srv, "malformed2.ini", "[redis]\nhost = 127.0.0.1\n[nonsense]\nkey = 1\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    snprintf(copy, sizeof copy, "%s", path);
    run_default_case(copy, EINVAL);
}

/* ------------------------------------------------------------------ */
/* client_close                                                        */
/* ------------------------------------------------------------------ */

static void test_close_busy(void)
{
    rdlock_client_t *c;
    rdlock_t m, m2;

    fresh();
    c = open_on(&srv, 0, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "busy", c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(0, init_lock(&m2, "busy2", c, 0, -1, NULL, NULL));
    RDT_ASSERT_RC(EBUSY, rdlock_client_close(c));
    /* Still open and usable. */
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(EBUSY, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(EBUSY, rdlock_client_close(c));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
    RDT_ASSERT_RC(EINVAL, rdlock_client_close(NULL));
}

static void test_close_joins_thread(void)
{
    rdlock_client_t *c, *cb;
    rdlock_t m, mb;
    int n0, n1, n2;

    fresh();
    n0 = settled_threads();
    CU_ASSERT_FATAL(n0 >= 1);
    c = open_on(&srv, 0, NULL);
    cb = open_on(&srv, 0, NULL);
    RDT_ASSERT_RC(0, init_lock(&m, "thr", c, 300, -1, NULL, NULL));
    RDT_ASSERT_RC(0, init_lock(&mb, "thr", cb, 300, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&m)); /* watchdog on: starts c's thread */
    n1 = count_threads();
    printf("[threads: %d before, %d while holding] ", n0, n1);
    CU_ASSERT(n1 > n0);
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mb));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(c);
    rdt_close_client(cb);
    n2 = count_threads(); /* joined, not merely told to stop */
    RDT_ASSERT_EQ_LL(n0, n2);
}

/* ------------------------------------------------------------------ */
/* fork                                                                */
/* ------------------------------------------------------------------ */

typedef struct fork_ctx {
    rdt_pipe_t p;
    rdlock_client_t *c;
    rdlock_t *parent_lock;
} fork_ctx_t;

static int fork_child(void *arg)
{
    fork_ctx_t *x = arg;
    rdlock_t mc;
    unsigned count = 99;
    char line[64];
    int rc;

    rdt_pipe_child(&x->p);
    /* None of the parent's holds are the child's. */
    rc = rdlock_holdcount(x->parent_lock, &count);
    if (rc != 0 || count != 0) {
        fprintf(stderr, "child: holdcount of the parent's lock: rc %d count %u\n", rc, count);
        return 2;
    }
    rc = rdlock_unlock(x->parent_lock);
    if (rc != EPERM) {
        fprintf(stderr, "child: unlock of the parent's lock gave %s, expected EPERM\n", rdt_errname(rc));
        return 3;
    }
    if (init_lock(&mc, "fork-child", x->c, 300, -1, NULL, NULL) != 0)
        return 4;
    rc = rdlock_lock(&mc);
    if (rc != 0) {
        fprintf(stderr, "child: lock gave %s\n", rdt_errname(rc));
        return 5;
    }
    if (rdt_send(x->p.to_parent[1], "locked") != 0)
        return 6;
    if (rdt_recv(x->p.to_child[0], line, sizeof line, 15000) < 0 || strcmp(line, "unlock") != 0)
        return 7;
    rc = rdlock_unlock(&mc);
    snprintf(line, sizeof line, "unlocked %d", rc);
    rdt_send(x->p.to_parent[1], line);
    rdlock_destroy(&mc);
    return rc == 0 ? 0 : 8;
}

static void test_fork(void)
{
    rdlock_client_t *c, *cb;
    rdlock_t mp, mbp, mbc;
    fork_ctx_t x;
    pid_t pid;
    char line[64], fp[128], fc[128];
    long long t0;
    int bad = 0, checks = 0, rc;

    fresh();
    c = open_on(&srv, 0, NULL);
    cb = open_on(&srv, 0, NULL);
    RDT_ASSERT_RC(0, init_lock(&mp, "fork-parent", c, 300, -1, NULL, NULL));
    RDT_ASSERT_RC(0, init_lock(&mbp, "fork-parent", cb, 300, -1, NULL, NULL));
    RDT_ASSERT_RC(0, init_lock(&mbc, "fork-child", cb, 300, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&mp));

    CU_ASSERT_FATAL(rdt_pipe_open(&x.p) == 0);
    x.c = c;
    x.parent_lock = &mp;
    pid = rdt_fork(fork_child, &x);
    CU_ASSERT_FATAL(pid > 0);
    rdt_pipe_parent(&x.p);

    if (rdt_recv(x.p.to_parent[0], line, sizeof line, 10000) < 0 || strcmp(line, "locked") != 0) {
        CU_FAIL("child did not report its lock");
    } else {
        /* Different owners: the child has a client id of its own. */
        CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{fork-parent}", fp, sizeof fp, NULL), 1);
        CU_ASSERT_EQUAL(rdt_holders_on(&srv, "rdlock:{fork-child}", fc, sizeof fc, NULL), 1);
        CU_ASSERT(strlen(fp) > 32 && strlen(fc) > 32 && strncmp(fp, fc, 32) != 0);
        /* 1 s (> 3 leases of 300 ms): both holds stay alive, each renewed
         * by its own process's watchdog. */
        t0 = rdt_now_ms();
        do {
            if ((rc = rdlock_trylock(&mbc)) != EBUSY) {
                fprintf(stderr, "fork: child's lock: trylock gave %s\n", rdt_errname(rc));
                bad++;
            }
            if ((rc = rdlock_trylock(&mbp)) != EBUSY) {
                fprintf(stderr, "fork: parent's lock: trylock gave %s\n", rdt_errname(rc));
                bad++;
            }
            checks++;
            rdt__nap_ms(50); /* pacing */
        } while (rdt_now_ms() - t0 < 1000);
        RDT_ASSERT_EQ_LL(0, bad);
        CU_ASSERT(checks >= 10);
        RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mbc));
        CU_ASSERT(rdt_send(x.p.to_child[1], "unlock") == 0);
        CU_ASSERT(rdt_recv(x.p.to_parent[0], line, sizeof line, 10000) >= 0);
        CU_ASSERT_STRING_EQUAL(line, "unlocked 0");
    }
    rdt_pipe_close(&x.p);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 10000));

    /* The parent's hold is intact. */
    RDT_ASSERT_RC(EBUSY, rdlock_trylock(&mbp));
    RDT_ASSERT_RC(0, rdlock_unlock(&mp));
    RDT_ASSERT_RC(0, rdlock_trylock(&mbc));
    RDT_ASSERT_RC(0, rdlock_unlock(&mbc));
    RDT_ASSERT_RC(0, rdlock_trylock(&mbp));
    RDT_ASSERT_RC(0, rdlock_unlock(&mbp));
    RDT_ASSERT_RC(0, rdlock_destroy(&mp));
    RDT_ASSERT_RC(0, rdlock_destroy(&mbp));
    RDT_ASSERT_RC(0, rdlock_destroy(&mbc));
    rdt_close_client(c);
    rdt_close_client(cb);
}

static int trivial_child(void *arg)
{
    (void)arg;
    return 0;
}

/* fork() while a thread of the parent waits in rdlock_lock: the child
 * starts normally (docs/CONTRACT.md section 7: it holds none of the parent's locks and the
 * parent is unaffected), and the parent's waiter still gets the lock. */
static void test_fork_while_waiting(void)
{
    rdlock_client_t *ca, *cb;
    rdlock_t ma, mb;
    locker_t l;
    pid_t pid;
    int listening;

    fresh();
    ca = open_on(&srv, 0, NULL);
    cb = open_on(&srv, 0, NULL);
    RDT_ASSERT_RC(0, init_lock(&ma, "fork-wait", ca, 2000, -1, NULL, NULL));
    RDT_ASSERT_RC(0, init_lock(&mb, "fork-wait", cb, 2000, -1, NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_lock(&mb));
    CU_ASSERT_FATAL(locker_start(&l, &ma) == 0);
    /* Until the waiter listens for its hand-over: queued, and blocked in
     * BLPOP on its grant list (src/prim/handover.h). */
    {
        redisContext *rc = rdt_connect(&srv);
        listening = rdt_wait_zcard(rc, "rdlock:{fork-wait}:w", 1, 3000) && rdt_wait_blocked(rc, 1, 3000);
        if (rc)
            redisFree(rc);
    }
    CU_ASSERT(listening);
    CU_ASSERT(!locker_done(&l));

    pid = rdt_fork(trivial_child, NULL);
    CU_ASSERT(pid > 0);
    if (pid > 0) {
        int st = rdt_wait(pid, 5000);
        if (st != 0)
            fprintf(stderr, "fork_while_waiting: the child did not exit (%d): stuck in the library's "
                            "fork handler?\n", st);
        RDT_ASSERT_EQ_LL(0, st);
    }

    /* The parent's waiter is unaffected. */
    RDT_ASSERT_RC(0, rdlock_unlock(&mb));
    if (!locker_wait(&l, 5000)) {
        CU_FAIL("waiter not woken 5 s after the unlock");
        pthread_detach(l.th);
        return; /* leak: the thread still uses ma and ca */
    }
    RDT_ASSERT_RC(0, l.rc);
    RDT_ASSERT_RC(0, l.unlock_rc);
    RDT_ASSERT_RC(0, rdlock_destroy(&ma));
    RDT_ASSERT_RC(0, rdlock_destroy(&mb));
    rdt_close_client(ca);
    rdt_close_client(cb);
}

static const rdt_test_t tests[] = {
    { "tcp_host_port", test_tcp_host_port },
    { "socket_wins", test_socket_wins },
    { "db", test_db },
    { "db_rejected", test_db_rejected },
    { "key_prefix", test_key_prefix },
    { "lease_ms", test_lease_ms },
    { "auth_password", test_auth_password },
    { "auth_acl", test_auth_acl },
    { "password_not_logged", test_password_not_logged },
    { "unreachable_at_open", test_unreachable_at_open },
    { "fail_fast_server_dies", test_fail_fast_server_dies },
    { "lock_waits_for_restart", test_lock_waits_for_restart },
    { "waiter_across_restart", test_waiter_across_restart },
    { "timedlock_server_down", test_timedlock_server_down },
    { "command_timeout_paused", test_command_timeout_paused },
    { "default_client_conf", test_default_client_conf },
    { "default_client_missing", test_default_client_missing },
    { "default_client_malformed", test_default_client_malformed },
    { "close_busy", test_close_busy },
    { "close_joins_thread", test_close_joins_thread },
    { "fork", test_fork },
    { "fork_while_waiting", test_fork_while_waiting },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "client", tests, setup, teardown, 85);
}
