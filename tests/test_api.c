/* test_api.c - argument validation and the small API (docs/CONTRACT.md sections 1-5):
 * rdlock_strerror / rdlock_version, attribute objects, rdlock_init and the
 * checks every call makes before touching the network, clients, the log
 * hook.  A private redis-server (tests/fixture.c) serves the few tests that
 * need one; every test that uses it starts from an empty database. */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "testlib.h"
#include "testutil.h"

static rdt_server_t g_srv;
static redisContext *g_rc;         /* plain connection for checking state */
static rdlock_client_t *g_cli;     /* explicit client on g_srv */
static char g_ini[512];            /* its ini file */

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* Every code of docs/CONTRACT.md section 2. */
static const int code_table[] = { EINVAL, EBUSY,  ETIMEDOUT, EDEADLK, EPERM,      EAGAIN,         ENOLCK,
                                  EIO,    EACCES, ENOENT,    ENOMEM,  EOWNERDEAD, ENOTRECOVERABLE, EOVERFLOW,
                                  ENOTSUP };
#define N_CODE_TABLE (sizeof code_table / sizeof code_table[0])

static int fresh_db(void)
{
    return rdt_flushall(&g_srv);
}

/* EXISTS on a binary-safe key: 1, 0, or -1 on error. */
static int key_exists(const char *key, size_t len)
{
    return (int)rdt_int_cmd(g_rc, -1, "EXISTS %b", key, len);
}

/* "rdlock:{<name>}" (the default key_prefix), binary-safe. */
static size_t lock_key(char *buf, size_t n, const char *name)
{
    size_t nl = strlen(name);
    if (nl + 10 > n)
        return 0;
    memcpy(buf, "rdlock:{", 8);
    memcpy(buf + 8, name, nl);
    buf[8 + nl] = '}';
    buf[9 + nl] = '\0';
    return nl + 9;
}

/* Run fn(arg) on a new thread and return its int result (-1 if the thread
 * could not be started). */
typedef struct thr_call {
    int (*fn)(void *);
    void *arg;
    int rc;
} thr_call_t;

static void *thr_main(void *p)
{
    thr_call_t *t = p;
    t->rc = t->fn(t->arg);
    return NULL;
}

static int on_thread(int (*fn)(void *), void *arg)
{
    pthread_t th;
    thr_call_t t = { fn, arg, -1 };
    if (pthread_create(&th, NULL, thr_main, &t) != 0)
        return -1;
    pthread_join(th, NULL);
    return t.rc;
}

static int trylock_fn(void *m)
{
    int rc = rdlock_trylock((rdlock_t *)m);
    if (rc == 0)
        rc = rdlock_unlock((rdlock_t *)m) == 0 ? 0 : -2;
    return rc;
}

/* A log hook capturing lines. */
static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;
static int cap_lines;
static int cap_last_level = -1;
static char cap_last[1024];
static void *cap_last_arg;

static void capture_logger(int level, const char *msg, void *arg)
{
    pthread_mutex_lock(&cap_mu);
    cap_lines++;
    cap_last_level = level;
    cap_last_arg = arg;
    snprintf(cap_last, sizeof cap_last, "%s", msg ? msg : "(null)");
    pthread_mutex_unlock(&cap_mu);
}

static int cap_count(void)
{
    int n;
    pthread_mutex_lock(&cap_mu);
    n = cap_lines;
    pthread_mutex_unlock(&cap_mu);
    return n;
}

static void cap_reset(void)
{
    pthread_mutex_lock(&cap_mu);
    cap_lines = 0;
    cap_last_level = -1;
    cap_last[0] = '\0';
    cap_last_arg = NULL;
    pthread_mutex_unlock(&cap_mu);
}

/* The last captured line contains s. */
static int cap_last_has(const char *s)
{
    int has;
    pthread_mutex_lock(&cap_mu);
    has = strstr(cap_last, s) != NULL;
    pthread_mutex_unlock(&cap_mu);
    return has;
}

/* Expected error lines go to the capture hook instead of stderr. */
static void quiet(void)
{
    rdlock_set_logger(capture_logger, NULL);
}

static void loud(void)
{
    rdlock_set_logger(NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* setup                                                               */
/* ------------------------------------------------------------------ */

static int suite_setup(void)
{
    if (rdt_suite_start(&g_srv, &g_rc) != 0 ||
        rdt_ini_copy(&g_srv, 0, "[lock]\nlease_ms = 20000\n", g_ini, sizeof g_ini) != 0)
        return -1;
    if (rdlock_client_open(&g_cli, g_ini) != 0) {
        fprintf(stderr, "suite_setup: rdlock_client_open failed\n");
        return -1;
    }
    return fresh_db();
}

static int suite_teardown(void)
{
    int rc = rdt_close_clients(&g_cli, NULL);
    rdt_suite_stop(&g_srv, &g_rc);
    return rc;
}

/* ------------------------------------------------------------------ */
/* strerror, version                                                   */
/* ------------------------------------------------------------------ */

static void test_strerror(void)
{
    const char *unknown = rdlock_strerror(987654);
    size_t i, j;

    CU_ASSERT_PTR_NOT_NULL_FATAL(unknown);
    CU_ASSERT(unknown[0] != '\0');
    CU_ASSERT_PTR_NOT_NULL(rdlock_strerror(-1));
    CU_ASSERT_PTR_NOT_NULL(rdlock_strerror(INT_MAX));
    CU_ASSERT_PTR_NOT_NULL(rdlock_strerror(INT_MIN));
    if (rdlock_strerror(-1))
        CU_ASSERT_STRING_EQUAL(rdlock_strerror(-1), unknown);
    CU_ASSERT_PTR_NOT_NULL(rdlock_strerror(0));

    for (i = 0; i < N_CODE_TABLE; i++) {
        const char *t = rdlock_strerror(code_table[i]);
        CU_ASSERT_PTR_NOT_NULL(t);
        if (!t)
            continue;
        CU_ASSERT(t[0] != '\0');
        if (strcmp(t, unknown) == 0)
            fprintf(stderr, "rdlock_strerror(%s) is the unknown-code text\n", rdt_errname(code_table[i]));
        CU_ASSERT(strcmp(t, unknown) != 0);
        /* Every code has its own text. */
        for (j = 0; j < i; j++) {
            const char *u = rdlock_strerror(code_table[j]);
            if (u && strcmp(t, u) == 0)
                fprintf(stderr, "rdlock_strerror(%s) == rdlock_strerror(%s)\n", rdt_errname(code_table[i]),
                        rdt_errname(code_table[j]));
            CU_ASSERT(u == NULL || strcmp(t, u) != 0);
        }
    }
}

static void test_version(void)
{
    char want[64];
    const char *v = rdlock_version();

    snprintf(want, sizeof want, "%d.%d.%d", RDLOCK_VERSION_MAJOR, RDLOCK_VERSION_MINOR, RDLOCK_VERSION_PATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_STRING_EQUAL(v, want);
    CU_ASSERT_STRING_EQUAL(rdlock_version(), v);
}

/* ------------------------------------------------------------------ */
/* attributes                                                          */
/* ------------------------------------------------------------------ */

static void test_attr_init_destroy(void)
{
    rdlock_attr_t a;
    int type = -1, robust = -1;

    RDT_ASSERT_RC(EINVAL, rdlock_attr_init(NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_destroy(NULL));
    memset(&a, 0xa5, sizeof a); /* init must not care what was there */
    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_gettype(&a, &type));
    RDT_ASSERT_RC(RDLOCK_ERRORCHECK, type);
    RDT_ASSERT_RC(0, rdlock_attr_getrobust(&a, &robust));
    RDT_ASSERT_RC(RDLOCK_STALLED, robust);
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));
    /* A destroyed attribute object is uninitialised again. */
    RDT_ASSERT_RC(EINVAL, rdlock_attr_destroy(&a));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_settype(&a, RDLOCK_RECURSIVE));
    /* and can be initialised again */
    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));
}

static void test_attr_type(void)
{
    rdlock_attr_t a;
    int type = -1;
    static const int bad[] = { 0, 3, -1, 99, INT_MAX, INT_MIN };
    size_t i;

    CU_ASSERT_EQUAL(RDLOCK_NORMAL, RDLOCK_ERRORCHECK);
    CU_ASSERT_EQUAL(RDLOCK_DEFAULT, RDLOCK_ERRORCHECK);
    CU_ASSERT_NOT_EQUAL(RDLOCK_RECURSIVE, RDLOCK_ERRORCHECK);

    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_settype(&a, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(0, rdlock_attr_gettype(&a, &type));
    RDT_ASSERT_RC(RDLOCK_RECURSIVE, type);

    RDT_ASSERT_RC(0, rdlock_attr_settype(&a, RDLOCK_NORMAL));
    type = -1;
    RDT_ASSERT_RC(0, rdlock_attr_gettype(&a, &type));
    RDT_ASSERT_RC(RDLOCK_ERRORCHECK, type);

    RDT_ASSERT_RC(0, rdlock_attr_settype(&a, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(0, rdlock_attr_settype(&a, RDLOCK_DEFAULT));
    type = -1;
    RDT_ASSERT_RC(0, rdlock_attr_gettype(&a, &type));
    RDT_ASSERT_RC(RDLOCK_ERRORCHECK, type);

    /* Bad values are EINVAL and leave the type as it was. */
    RDT_ASSERT_RC(0, rdlock_attr_settype(&a, RDLOCK_RECURSIVE));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (bad[i] == RDLOCK_RECURSIVE || bad[i] == RDLOCK_ERRORCHECK)
            continue;
        RDT_ASSERT_RC(EINVAL, rdlock_attr_settype(&a, bad[i]));
    }
    type = -1;
    RDT_ASSERT_RC(0, rdlock_attr_gettype(&a, &type));
    RDT_ASSERT_RC(RDLOCK_RECURSIVE, type);

    RDT_ASSERT_RC(EINVAL, rdlock_attr_gettype(&a, NULL));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));
}

static void test_attr_lease_range(void)
{
    rdlock_attr_t a;

    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_setlease(&a, 0));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlease(&a, 1));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlease(&a, 9));
    RDT_ASSERT_RC(0, rdlock_attr_setlease(&a, 10));
    RDT_ASSERT_RC(0, rdlock_attr_setlease(&a, 86400000u));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlease(&a, 86400001u));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlease(&a, UINT_MAX));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));
}

/* The lease attribute reaches the server; 0 means the client's lease_ms
 * (20000 in this suite's ini).  Watchdog off so nothing renews. */
static void test_attr_lease_applies(void)
{
    rdlock_attr_t a;
    rdlock_t m1, m2;
    long long pttl;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_setclient(&a, g_cli));
    RDT_ASSERT_RC(0, rdlock_attr_setwatchdog(&a, 0));
    RDT_ASSERT_RC(0, rdlock_attr_setlease(&a, 5000));
    RDT_ASSERT_RC(0, rdlock_init(&m1, "lease-5000", &a));
    /* The lock keeps what the attributes said at init. */
    RDT_ASSERT_RC(0, rdlock_attr_setlease(&a, 0));
    RDT_ASSERT_RC(0, rdlock_init(&m2, "lease-default", &a));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));

    RDT_ASSERT_RC(0, rdlock_lock(&m1));
    pttl = rdt_pttl(g_rc, "rdlock:{lease-5000}");
    if (!(pttl > 0 && pttl <= 5000))
        fprintf(stderr, "PTTL rdlock:{lease-5000} = %lld, want 1..5000\n", pttl);
    CU_ASSERT(pttl > 0 && pttl <= 5000);
    RDT_ASSERT_RC(0, rdlock_unlock(&m1));

    RDT_ASSERT_RC(0, rdlock_lock(&m2));
    pttl = rdt_pttl(g_rc, "rdlock:{lease-default}");
    if (!(pttl > 5000 && pttl <= 20000))
        fprintf(stderr, "PTTL rdlock:{lease-default} = %lld, want 5001..20000\n", pttl);
    CU_ASSERT(pttl > 5000 && pttl <= 20000);
    RDT_ASSERT_RC(0, rdlock_unlock(&m2));

    RDT_ASSERT_RC(0, rdlock_destroy(&m1));
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
}

static void lost_cb(const char *name, void *arg)
{
    (void)name;
    (void)arg;
}

static void test_attr_setters(void)
{
    rdlock_attr_t a;
    int robust = -1;

    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_setwatchdog(&a, 0));
    RDT_ASSERT_RC(0, rdlock_attr_setwatchdog(&a, 1));
    RDT_ASSERT_RC(0, rdlock_attr_setwatchdog(&a, 42)); /* non-zero = on */
    RDT_ASSERT_RC(0, rdlock_attr_setclient(&a, g_cli));
    RDT_ASSERT_RC(0, rdlock_attr_setclient(&a, NULL)); /* the process default */
    RDT_ASSERT_RC(0, rdlock_attr_setlostcb(&a, lost_cb, &a));
    RDT_ASSERT_RC(0, rdlock_attr_setlostcb(&a, NULL, NULL));

    RDT_ASSERT_RC(0, rdlock_attr_setrobust(&a, RDLOCK_ROBUST));
    RDT_ASSERT_RC(0, rdlock_attr_getrobust(&a, &robust));
    RDT_ASSERT_RC(RDLOCK_ROBUST, robust);
    RDT_ASSERT_RC(0, rdlock_attr_setrobust(&a, RDLOCK_STALLED));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setrobust(&a, 2));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setrobust(&a, -1));
    RDT_ASSERT_RC(0, rdlock_attr_getrobust(&a, &robust));
    RDT_ASSERT_RC(RDLOCK_STALLED, robust); /* a refused value changes nothing */
    RDT_ASSERT_RC(EINVAL, rdlock_attr_getrobust(&a, NULL));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));
}

/* NULL and uninitialised (zeroed) attribute objects: EINVAL everywhere,
 * and rdlock_init refuses them too. */
static void test_attr_null_uninit(void)
{
    rdlock_attr_t z;
    rdlock_t m;
    int v = 12345;

    RDT_ASSERT_RC(EINVAL, rdlock_attr_settype(NULL, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_gettype(NULL, &v));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlease(NULL, 1000));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setwatchdog(NULL, 1));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setclient(NULL, g_cli));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlostcb(NULL, lost_cb, NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setrobust(NULL, RDLOCK_STALLED));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_getrobust(NULL, &v));
    CU_ASSERT_EQUAL(v, 12345);

    memset(&z, 0, sizeof z);
    RDT_ASSERT_RC(EINVAL, rdlock_attr_destroy(&z));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_settype(&z, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_gettype(&z, &v));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlease(&z, 1000));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setwatchdog(&z, 1));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setclient(&z, g_cli));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setlostcb(&z, lost_cb, NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_setrobust(&z, RDLOCK_STALLED));
    RDT_ASSERT_RC(EINVAL, rdlock_attr_getrobust(&z, &v));
    CU_ASSERT_EQUAL(v, 12345);

    /* The failed setters left the zeroed object alone. */
    {
        rdlock_attr_t zz;
        memset(&zz, 0, sizeof zz);
        CU_ASSERT(memcmp(&z, &zz, sizeof z) == 0);
    }

    memset(&m, 0, sizeof m);
    quiet();
    RDT_ASSERT_RC(EINVAL, rdlock_init(&m, "attr-uninit", &z));
    loud();
    CU_ASSERT_EQUAL(m.__magic, 0u); /* left as it was */
}

/* The lock copies its attributes: destroying the attribute object after
 * init changes nothing. */
static void test_attr_copied_at_init(void)
{
    rdlock_attr_t a;
    rdlock_t m;
    unsigned n = 0;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_setclient(&a, g_cli));
    RDT_ASSERT_RC(0, rdlock_attr_settype(&a, RDLOCK_RECURSIVE));
    RDT_ASSERT_RC(0, rdlock_init(&m, "attr-copied", &a));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));
    memset(&a, 0xee, sizeof a);

    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&m)); /* recursive */
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 2);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* ------------------------------------------------------------------ */
/* rdlock_init                                                         */
/* ------------------------------------------------------------------ */

static void test_init_args(void)
{
    rdlock_t m, zero;
    char name[600];

    memset(&zero, 0, sizeof zero);
    quiet();
    RDT_ASSERT_RC(EINVAL, rdlock_init(NULL, "x", NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_init(NULL, NULL, NULL));

    memset(&m, 0, sizeof m);
    RDT_ASSERT_RC(EINVAL, rdlock_init(&m, NULL, NULL));
    CU_ASSERT(memcmp(&m, &zero, sizeof m) == 0);
    RDT_ASSERT_RC(EINVAL, rdlock_init(&m, "", NULL));
    CU_ASSERT(memcmp(&m, &zero, sizeof m) == 0);

    /* 513 bytes: too long, whatever follows. */
    memset(name, 'n', sizeof name);
    name[513] = '\0';
    RDT_ASSERT_RC(EINVAL, rdlock_init(&m, name, NULL));
    CU_ASSERT(memcmp(&m, &zero, sizeof m) == 0);
    name[599] = '\0';
    memset(name, 'n', 599);
    RDT_ASSERT_RC(EINVAL, rdlock_init(&m, name, NULL));
    loud();

    /* 512 bytes: fine (default client, but init does no network I/O). */
    name[512] = '\0';
    RDT_ASSERT_RC(0, rdlock_init(&m, name, NULL));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));

    /* 1 byte */
    RDT_ASSERT_RC(0, rdlock_init(&m, "1", NULL));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* 512- and 1-byte names work on the server too. */
static void test_name_length_limits_locked(void)
{
    char name[513], key[600];
    rdlock_t m;
    size_t kl;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    memset(name, 'L', 512);
    name[512] = '\0';
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, name, g_cli, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    kl = lock_key(key, sizeof key, name);
    CU_ASSERT_EQUAL(key_exists(key, kl), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(key_exists(key, kl), 0);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));

    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "x", g_cli, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    CU_ASSERT_EQUAL(key_exists("rdlock:{x}", 10), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* Any bytes but NUL make a name, and distinct names are distinct locks
 * even when one looks like another's key suffix or hash tag. */
static void test_name_any_bytes(void)
{
    static const char *const names[] = {
        "{",        "}",         "{}",          ":",      "a:b",          "a b",  " ",
        "a{b}c",    "a",         "a}:w",        "a}:fence", "a}:c",      "tab\tnl\ncr\r",
        "verrou-\xc3\xa9-\xe9\x94\x81", "\xff",  "\xff\xfe\x01", "%s%n%d", "rdlock:{a}",
    };
    enum { N = sizeof names / sizeof names[0] };
    rdlock_t m[N];
    size_t i, j;
    char key[600];
    size_t kl;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    for (i = 0; i < N; i++)
        RDT_ASSERT_RC(0, rdt_mutex_on(&m[i], names[i], g_cli, 0));

    for (i = 0; i < N; i++) {
        int rc = rdlock_lock(&m[i]);
        RDT_ASSERT_RC(0, rc);
        if (rc != 0)
            continue;
        /* The key is exactly "rdlock:{" NAME "}". */
        kl = lock_key(key, sizeof key, names[i]);
        CU_ASSERT_EQUAL(key_exists(key, kl), 1);
        for (j = 0; j < N; j++) {
            if (j == i)
                continue;
            /* Another thread, so that the result is about the name, not
             * about this thread's own hold. */
            rc = on_thread(trylock_fn, &m[j]);
            if (rc != 0)
                fprintf(stderr, "holding name #%zu, trylock of name #%zu -> %s\n", i, j, rdt_errname(rc));
            RDT_ASSERT_RC(0, rc);
        }
        /* and the same name is the same lock */
        RDT_ASSERT_RC(EBUSY, on_thread(trylock_fn, &m[i]));
        RDT_ASSERT_RC(0, rdlock_unlock(&m[i]));
        CU_ASSERT_EQUAL(key_exists(key, kl), 0);
    }
    for (i = 0; i < N; i++)
        RDT_ASSERT_RC(0, rdlock_destroy(&m[i]));
}

/* ------------------------------------------------------------------ */
/* uninitialised and destroyed locks                                   */
/* ------------------------------------------------------------------ */

static void expect_all_einval(rdlock_t *m)
{
    struct timespec ts;
    uint64_t tok = 77;
    unsigned n = 77;

    quiet();
    ts = rdt_abstime(CLOCK_REALTIME, 1000);
    RDT_ASSERT_RC(EINVAL, rdlock_lock(m));
    RDT_ASSERT_RC(EINVAL, rdlock_trylock(m));
    RDT_ASSERT_RC(EINVAL, rdlock_timedlock(m, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 1000);
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(m, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(EINVAL, rdlock_unlock(m));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(m));
    RDT_ASSERT_RC(EINVAL, rdlock_fencing_token(m, &tok));
    RDT_ASSERT_RC(EINVAL, rdlock_holdcount(m, &n));
    RDT_ASSERT_RC(EINVAL, rdlock_destroy(m));
    loud();
    CU_ASSERT_EQUAL(tok, 77);
    CU_ASSERT_EQUAL(n, 77);
}

static void test_null_lock(void)
{
    expect_all_einval(NULL);
}

static void test_uninitialised_lock(void)
{
    rdlock_t m;
    memset(&m, 0, sizeof m);
    expect_all_einval(&m);
    /* garbage is not an initialised lock either */
    memset(&m, 0x5a, sizeof m);
    expect_all_einval(&m);
}

static void test_destroyed_lock(void)
{
    rdlock_t m;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    /* never used */
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "destroyed-1", g_cli, 0));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    expect_all_einval(&m);

    /* used, then destroyed */
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "destroyed-2", g_cli, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    expect_all_einval(&m);

    /* a destroyed lock may be initialised again */
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "destroyed-2", g_cli, 0));
    RDT_ASSERT_RC(0, rdlock_trylock(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* rdlock_consistent on a lock that is not robust: EINVAL, held or not
 * (docs/CONTRACT.md section 2); the robust cases are in test_robust. */
static void test_consistent_not_robust(void)
{
    rdlock_t m;
    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "not-robust", g_cli, 0));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&m));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(EINVAL, rdlock_consistent(&m));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

static void test_out_pointer_null(void)
{
    rdlock_t m;
    uint64_t tok = 0;
    unsigned n = 99;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "outptr", g_cli, 0));
    RDT_ASSERT_RC(EINVAL, rdlock_fencing_token(&m, NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_holdcount(&m, NULL));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 0);
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(EINVAL, rdlock_fencing_token(&m, NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_holdcount(&m, NULL));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &tok));
    CU_ASSERT(tok > 0);
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* ------------------------------------------------------------------ */
/* init does no network I/O                                            */
/* ------------------------------------------------------------------ */

/* A loopback TCP socket bound to a free port; listening if `listening`,
 * else bound only (connections to it are refused).  Returns the fd and
 * sets *port, or -1. */
static int loopback_socket(int listening, int *port)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || (listening && listen(fd, 64) != 0) ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

static const char *ini_for_port(int port, const char *extra)
{
    char text[512];
    snprintf(text, sizeof text,
             "[redis]\nhost = 127.0.0.1\nport = %d\nconnect_timeout_ms = 200\ncommand_timeout_ms = 200\n"
             "command_retries = 0\n[lock]\nfail_fast = no\n%s",
             port, extra ? extra : "");
    return rdt_write_file(&g_srv, "noserver.ini", text);
}

/* Nobody listens: open succeeds (fail_fast = no), init succeeds at once,
 * a trylock reports EIO after command_retries (0). */
static void test_init_no_network_refused(void)
{
    rdlock_client_t *c = NULL;
    rdlock_t m;
    int port = 0, fd = loopback_socket(0, &port);
    const char *ini;
    long long t0, dt;

    CU_ASSERT_FATAL(fd >= 0);
    ini = ini_for_port(port, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    rdlock_set_logger(capture_logger, NULL); /* expected warnings stay quiet */
    cap_reset();
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    /* The warning says what a try call then does (EIO), not that every
     * lock call waits. */
    CU_ASSERT(cap_last_has("unreachable for now") && cap_last_has("try calls give EIO"));
    if (c) {
        t0 = rdt_now_ms();
        RDT_ASSERT_RC(0, rdt_mutex_on(&m, "no-network", c, 0));
        dt = rdt_now_ms() - t0;
        CU_ASSERT(dt < 100);
        RDT_ASSERT_RC(EIO, rdlock_trylock(&m));
        RDT_ASSERT_RC(EPERM, rdlock_unlock(&m));
        RDT_ASSERT_RC(0, rdlock_destroy(&m));
        RDT_ASSERT_RC(0, rdlock_client_close(c));
    }
    rdlock_set_logger(NULL, NULL);
    close(fd);
}

/* Somebody listens but never answers: after client_open (whose PING
 * times out) no further connection is made by rdlock_init. */
static void test_init_no_network_silent(void)
{
    rdlock_client_t *c = NULL;
    rdlock_t m[4];
    struct pollfd pfd;
    int port = 0, fd = loopback_socket(1, &port), i, drained = 0, cfd;
    const char *ini;

    CU_ASSERT_FATAL(fd >= 0);
    ini = ini_for_port(port, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ini);
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    /* open connected once (in the backlog): take whatever it made */
    while ((cfd = accept(fd, NULL, NULL)) >= 0) {
        drained++;
        close(cfd);
    }
    CU_ASSERT(drained >= 1); /* proves the probe below can see connections */
    if (c) {
        for (i = 0; i < 4; i++)
            RDT_ASSERT_RC(0, rdt_mutex_on(&m[i], i % 2 ? "silent-a" : "silent-b", c, i % 2 ? RDLOCK_RECURSIVE : 0));
        /* no new connection attempt is pending */
        pfd.fd = fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        CU_ASSERT_EQUAL(poll(&pfd, 1, 50), 0);
        for (i = 0; i < 4; i++)
            RDT_ASSERT_RC(0, rdlock_destroy(&m[i]));
        RDT_ASSERT_RC(0, rdlock_client_close(c));
    }
    rdlock_set_logger(NULL, NULL);
    close(fd);
}

/* ------------------------------------------------------------------ */
/* deadlines                                                           */
/* ------------------------------------------------------------------ */

static void test_abstime_validation(void)
{
    rdlock_t m;
    struct timespec ts;
    unsigned n = 9;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "abstime", g_cli, 0));

    /* The lock is free: abstime is checked first anyway. */
    RDT_ASSERT_RC(EINVAL, rdlock_timedlock(&m, NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_REALTIME, NULL));
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_MONOTONIC, NULL));

    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    ts.tv_nsec = -1;
    RDT_ASSERT_RC(EINVAL, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_REALTIME, &ts));
    ts.tv_nsec = 1000000000L;
    RDT_ASSERT_RC(EINVAL, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_REALTIME, &ts));
    ts = rdt_abstime(CLOCK_MONOTONIC, 5000);
    ts.tv_nsec = -1;
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_MONOTONIC, &ts));
    ts.tv_nsec = 1000000000L;
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_MONOTONIC, &ts));

    /* Only CLOCK_REALTIME and CLOCK_MONOTONIC. */
    ts = rdt_abstime(CLOCK_REALTIME, 5000);
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts));
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, CLOCK_THREAD_CPUTIME_ID, &ts));
    RDT_ASSERT_RC(EINVAL, rdlock_clocklock(&m, (clockid_t)4242, &ts));

    /* None of that took the lock. */
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(key_exists("rdlock:{abstime}", 16), 0);

    /* A NULL lock with a bad abstime is EINVAL too. */
    RDT_ASSERT_RC(EINVAL, rdlock_timedlock(NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A deadline already past on a free lock still acquires (POSIX). */
static void test_past_deadline_free_lock(void)
{
    rdlock_t m;
    struct timespec ts;
    unsigned n = 0;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "past", g_cli, 0));

    ts = rdt_abstime(CLOCK_REALTIME, -10000);
    RDT_ASSERT_RC(0, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(key_exists("rdlock:{past}", 13), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    ts.tv_sec = 0;
    ts.tv_nsec = 0; /* long past on CLOCK_MONOTONIC */
    RDT_ASSERT_RC(0, rdlock_clocklock(&m, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(0, rdlock_holdcount(&m, &n));
    CU_ASSERT_EQUAL(n, 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    ts = rdt_abstime(CLOCK_MONOTONIC, -1);
    RDT_ASSERT_RC(0, rdlock_clocklock(&m, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    ts = rdt_abstime(CLOCK_REALTIME, -1000);
    RDT_ASSERT_RC(0, rdlock_clocklock(&m, CLOCK_REALTIME, &ts));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));

    /* and a far-future deadline on a free lock acquires at once */
    ts.tv_sec = (time_t)LONG_MAX;
    ts.tv_nsec = 999999999L;
    RDT_ASSERT_RC(0, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_clocklock(&m, CLOCK_MONOTONIC, &ts));
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    CU_ASSERT_EQUAL(key_exists("rdlock:{past}", 13), 0);
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* A negative tv_sec is a time before the epoch: past, not malformed.  Only
 * tv_nsec outside [0, 1e9) is EINVAL (docs/CONTRACT.md section 1, rdlock.h, POSIX), and
 * a past deadline on a free lock acquires. */
static void test_negative_tv_sec_is_past(void)
{
    rdlock_t m;
    struct timespec ts;
    int rc;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "negative", g_cli, 0));
    ts.tv_sec = -5;
    ts.tv_nsec = 0;
    rc = rdlock_timedlock(&m, &ts);
    RDT_ASSERT_RC(0, rc);
    if (rc == 0)
        RDT_ASSERT_RC(0, rdlock_unlock(&m));
    ts.tv_sec = -1;
    ts.tv_nsec = 999999999L;
    rc = rdlock_clocklock(&m, CLOCK_MONOTONIC, &ts);
    RDT_ASSERT_RC(0, rc);
    if (rc == 0)
        RDT_ASSERT_RC(0, rdlock_unlock(&m));
    /* tv_nsec is still checked with a negative tv_sec */
    ts.tv_nsec = -1;
    RDT_ASSERT_RC(EINVAL, rdlock_timedlock(&m, &ts));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
}

/* ------------------------------------------------------------------ */
/* clients                                                             */
/* ------------------------------------------------------------------ */

static void test_client_open_args(void)
{
    rdlock_client_t *sentinel = (rdlock_client_t *)&g_srv;
    rdlock_client_t *c = sentinel;
    char missing[400];

    RDT_ASSERT_RC(EINVAL, rdlock_client_open(NULL, g_ini));
    RDT_ASSERT_RC(EINVAL, rdlock_client_open(NULL, NULL));
    snprintf(missing, sizeof missing, "%s/does-not-exist.ini", g_srv.dir);
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(ENOENT, rdlock_client_open(&c, missing));
    rdlock_set_logger(NULL, NULL);
    CU_ASSERT_PTR_EQUAL(c, sentinel); /* untouched on failure */
    RDT_ASSERT_RC(EINVAL, rdlock_client_close(NULL));

    c = NULL;
    RDT_ASSERT_RC(0, rdlock_client_open(&c, g_ini));
    CU_ASSERT_PTR_NOT_NULL(c);
    if (c)
        RDT_ASSERT_RC(0, rdlock_client_close(c));
}

static void test_client_close_busy(void)
{
    rdlock_client_t *c = NULL;
    rdlock_t m1, m2;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, g_ini));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m1, "close-busy-1", c, 0));
    RDT_ASSERT_RC(0, rdt_mutex_on(&m2, "close-busy-2", c, 0));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EBUSY, rdlock_client_close(c));
    rdlock_set_logger(NULL, NULL);
    /* still open and usable */
    RDT_ASSERT_RC(0, rdlock_lock(&m1));
    CU_ASSERT_EQUAL(key_exists("rdlock:{close-busy-1}", 21), 1);
    RDT_ASSERT_RC(0, rdlock_unlock(&m1));
    RDT_ASSERT_RC(0, rdlock_destroy(&m1));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EBUSY, rdlock_client_close(c)); /* m2 is still there */
    rdlock_set_logger(NULL, NULL);
    RDT_ASSERT_RC(0, rdlock_destroy(&m2));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

/* How many times count_run ran (in this process). */
static int g_once_runs;

static void count_run(void)
{
    __atomic_add_fetch(&g_once_runs, 1, __ATOMIC_RELAXED);
}

/* cap holds exactly one line (the EBUSY of an init), naming the kind and
 * the name; each failure its own step for the child's report. */
static int one_ebusy_line(const char *kind, const char *name)
{
    if (cap_count() != 1)
        return 1;
    if (!cap_last_has(kind) || !cap_last_has(name) || !cap_last_has("EBUSY"))
        return 2;
    return 0;
}

/* In a child (static initialisers use the process default client, which
 * $RDLOCK_CONF points at g_srv here): an init of a static initialiser
 * that a call has used is EBUSY, as for a live handle (rdonce(3),
 * rdrwlock_init(3)), and leaves it working.  Returns the failing step. */
static int static_reinit_child(void *arg)
{
    static rdonce_t so = RDONCE_INITIALIZER("double-init-once-static");
    static rdrwlock_t srw = RDRWLOCK_INITIALIZER("double-init-rw-static");
    (void)arg;

    g_rc = rdt_connect(&g_srv); /* the parent's connection stays the parent's */
    if (!g_rc)
        return 9;
    quiet();
    if (setenv("RDLOCK_CONF", g_ini, 1) != 0)
        return 10;
    __atomic_store_n(&g_once_runs, 0, __ATOMIC_RELAXED);

    /* RDONCE_INITIALIZER, used by an rdonce() call */
    if (rdonce(&so, count_run) != 0 || __atomic_load_n(&g_once_runs, __ATOMIC_RELAXED) != 1)
        return 11;
    if (key_exists("rdlock:{double-init-once-static}:once", 37) != 1)
        return 12;
    cap_reset();
    if (rdonce_init(&so, "double-init-once-static", NULL) != EBUSY)
        return 13;
    if (one_ebusy_line("run-once object", "double-init-once-static") != 0)
        return 14;
    if (rdonce(&so, count_run) != 0 || __atomic_load_n(&g_once_runs, __ATOMIC_RELAXED) != 1)
        return 15; /* still done: not run again */
    if (rdonce_destroy(&so) != 0)
        return 16;

    /* RDRWLOCK_INITIALIZER, used by a read lock */
    if (rdrwlock_rdlock(&srw) != 0 || rdrwlock_unlock(&srw) != 0)
        return 21;
    cap_reset();
    if (rdrwlock_init(&srw, "double-init-rw-static", NULL) != EBUSY)
        return 22;
    if (one_ebusy_line("read-write lock", "double-init-rw-static") != 0)
        return 23;
    if (rdrwlock_wrlock(&srw) != 0) /* the handle still works */
        return 24;
    if (key_exists("rdlock:{double-init-rw-static}", 30) != 1)
        return 25;
    if (rdrwlock_unlock(&srw) != 0 || key_exists("rdlock:{double-init-rw-static}", 30) != 0)
        return 26;
    if (rdrwlock_destroy(&srw) != 0)
        return 27;
    cap_reset();
    if (rdrwlock_destroy(&srw) != EINVAL || cap_count() != 1) /* destroyed: gone for good */
        return 28;
    return 0;
}

/* Misuse that pthreads leaves undefined gets a code here, never a leak or
 * a crash: a second init of a live lock is EBUSY (its handle would leak
 * and its client's close be EBUSY for ever), a second close of a client
 * is EINVAL. */
static void test_double_init_double_close(void)
{
    static rdlock_t st = RDLOCK_INITIALIZER("double-init-static");
    rdlock_client_t *c = NULL;
    rdlock_attr_t a;
    rdlock_t m;
    rdrwlock_t rw;
    rdonce_t once;
    int rc;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, g_ini));
    RDT_ASSERT_RC(0, rdlock_attr_init(&a));
    RDT_ASSERT_RC(0, rdlock_attr_setclient(&a, c));
    RDT_ASSERT_RC(0, rdlock_init(&m, "double-init", &a));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EBUSY, rdlock_init(&m, "double-init", &a));
    rdlock_set_logger(NULL, NULL);
    RDT_ASSERT_RC(0, rdlock_lock(&m)); /* the first handle still works */
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_init(&m, "double-init", &a)); /* after destroy: fine */
    RDT_ASSERT_RC(0, rdlock_destroy(&m));

    RDT_ASSERT_RC(0, rdrwlock_init(&rw, "double-init", &a));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EBUSY, rdrwlock_init(&rw, "double-init", &a));
    rdlock_set_logger(NULL, NULL);
    RDT_ASSERT_RC(0, rdrwlock_wrlock(&rw)); /* the first handle still works */
    RDT_ASSERT_RC(0, rdrwlock_unlock(&rw));
    RDT_ASSERT_RC(0, rdrwlock_destroy(&rw));

    /* A live rdonce_t: EBUSY, before its first rdonce() and after it; the
     * handle keeps its client and its done state (rdonce(3)). */
    g_once_runs = 0;
    RDT_ASSERT_RC(0, rdonce_init(&once, "double-init-once", &a));
    quiet();
    cap_reset();
    RDT_ASSERT_RC(EBUSY, rdonce_init(&once, "double-init-once", &a));
    RDT_ASSERT_EQ_LL(0, one_ebusy_line("run-once object", "double-init-once"));
    loud();
    RDT_ASSERT_RC(0, rdonce(&once, count_run)); /* the first handle still works */
    CU_ASSERT_EQUAL(g_once_runs, 1);
    CU_ASSERT_EQUAL(key_exists("rdlock:{double-init-once}:once", 30), 1);
    quiet();
    cap_reset();
    RDT_ASSERT_RC(EBUSY, rdonce_init(&once, "double-init-once", &a));
    RDT_ASSERT_EQ_LL(0, one_ebusy_line("run-once object", "double-init-once"));
    loud();
    RDT_ASSERT_RC(0, rdonce(&once, count_run)); /* done, and stays done */
    CU_ASSERT_EQUAL(g_once_runs, 1);
    RDT_ASSERT_RC(0, rdonce_destroy(&once));
    RDT_ASSERT_RC(0, rdonce_init(&once, "double-init-once", &a)); /* after destroy: fine */
    RDT_ASSERT_RC(0, rdonce(&once, count_run));                   /* the mark is on the server */
    CU_ASSERT_EQUAL(g_once_runs, 1);
    RDT_ASSERT_RC(0, rdonce_destroy(&once));

    /* Used static initialisers (RDONCE_INITIALIZER, RDRWLOCK_INITIALIZER):
     * in a child, for the process default client. */
    rc = rdt_run_child(static_reinit_child, NULL, 20000);
    if (rc != 0)
        fprintf(stderr, "static_reinit_child failed at step %d\n", rc);
    RDT_ASSERT_EQ_LL(0, rc);

    /* A static initialiser may be initialised before first use only. */
    RDT_ASSERT_RC(0, rdlock_init(&st, "double-init-static", &a));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EBUSY, rdlock_init(&st, "double-init-static", &a));
    rdlock_set_logger(NULL, NULL);
    RDT_ASSERT_RC(0, rdlock_destroy(&st));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&a));

    RDT_ASSERT_RC(0, rdlock_client_close(c));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EINVAL, rdlock_client_close(c)); /* closed already: no crash */
    rdlock_set_logger(NULL, NULL);
}

/* A log line names the kind of object the call was made on (issue 23):
 * a condition variable's misuse says "condition variable", not "lock",
 * and a second destroy logs as any other call on a destroyed handle. */
static void test_messages_name_the_kind(void)
{
    rdcond_attr_t ca;
    rdlock_attr_t la;
    rdsem_attr_t sa;
    rdcond_t cv;
    rdbarrier_t b;
    rdsem_t sem;
    rdlock_t m;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdcond_attr_init(&ca));
    RDT_ASSERT_RC(0, rdcond_attr_setclient(&ca, g_cli));
    RDT_ASSERT_RC(0, rdlock_attr_init(&la));
    RDT_ASSERT_RC(0, rdlock_attr_setclient(&la, g_cli));
    RDT_ASSERT_RC(0, rdsem_attr_init(&sa));
    RDT_ASSERT_RC(0, rdsem_attr_setclient(&sa, g_cli));
    quiet();

    RDT_ASSERT_RC(0, rdcond_init(&cv, "kind-cv", &ca));
    cap_reset();
    RDT_ASSERT_RC(EBUSY, rdcond_init(&cv, "kind-cv", &ca));
    CU_ASSERT(cap_count() == 1 && cap_last_has("condition variable") && cap_last_has("kind-cv"));
    RDT_ASSERT_RC(0, rdcond_destroy(&cv));
    cap_reset();
    RDT_ASSERT_RC(EINVAL, rdcond_signal(&cv));
    CU_ASSERT(cap_count() == 1 && cap_last_has("condition variable") && !cap_last_has("lock"));
    cap_reset();
    RDT_ASSERT_RC(EINVAL, rdcond_destroy(&cv));
    CU_ASSERT(cap_count() == 1 && cap_last_has("destroy of a condition variable"));

    RDT_ASSERT_RC(0, rdbarrier_init(&b, "kind-bar", 2, &la));
    cap_reset();
    RDT_ASSERT_RC(EBUSY, rdbarrier_init(&b, "kind-bar", 2, &la));
    CU_ASSERT(cap_count() == 1 && cap_last_has("barrier"));
    RDT_ASSERT_RC(0, rdbarrier_destroy(&b));

    RDT_ASSERT_RC(0, rdsem_init(&sem, "kind-sem", 1, &sa));
    cap_reset();
    RDT_ASSERT_RC(EBUSY, rdsem_init(&sem, "kind-sem", 1, &sa));
    CU_ASSERT(cap_count() == 1 && cap_last_has("semaphore"));
    RDT_ASSERT_RC(0, rdsem_destroy(&sem));

    /* A second destroy logs, as a lock call on the destroyed handle does. */
    RDT_ASSERT_RC(0, rdlock_init(&m, "kind-lock", &la));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    cap_reset();
    RDT_ASSERT_RC(EINVAL, rdlock_lock(&m));
    CU_ASSERT(cap_count() == 1 && cap_last_has("lock not initialised"));
    cap_reset();
    RDT_ASSERT_RC(EINVAL, rdlock_destroy(&m));
    CU_ASSERT(cap_count() == 1 && cap_last_has("destroy of a lock"));
    if (cap_count() != 1)
        printf("[last line: %s] ", cap_last);

    loud();
    RDT_ASSERT_RC(0, rdcond_attr_destroy(&ca));
    RDT_ASSERT_RC(0, rdlock_attr_destroy(&la));
    RDT_ASSERT_RC(0, rdsem_attr_destroy(&sa));
}

/* The public error table and the detail of the last error. */
static void test_errname_last_error(void)
{
    static const struct {
        int code;
        const char *name;
    } want[] = {
#define RDT_NAME(code, text) { code, #code },
        RDLOCK_ERRNO_MAP(RDT_NAME)
#undef RDT_NAME
    };
    char buf[512], ini[4096];
    rdlock_client_t *c = NULL;
    rdlock_client_info_t info;
    size_t i;

    CU_ASSERT_STRING_EQUAL(rdlock_errname(0), "0");
    CU_ASSERT_STRING_EQUAL(rdlock_errname(-1), "unknown");
    CU_ASSERT_EQUAL(sizeof want / sizeof want[0], N_CODE_TABLE);
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        CU_ASSERT_STRING_EQUAL(rdlock_errname(want[i].code), want[i].name);
        CU_ASSERT_STRING_EQUAL(rdlock_errname(want[i].code), rdt_errname(want[i].code));
        CU_ASSERT(strcmp(rdlock_strerror(want[i].code), "unknown rdlock error code") != 0);
    }

    /* A config error: the reason, from the config loader. */
    snprintf(ini, sizeof ini, "%s", rdt_write_file(&g_srv, "bad-key.ini", "[lock]\nno_such_key = 1\n"));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EINVAL, rdlock_client_open(&c, ini));
    rdlock_set_logger(NULL, NULL);
    RDT_ASSERT_EQ_LL(RDLOCK_ERRSRC_CONFIG, rdlock_last_error(buf, sizeof buf));
    if (strstr(buf, "bad-key.ini") == NULL)
        fprintf(stderr, "last error: %s\n", buf);
    CU_ASSERT(strstr(buf, "bad-key.ini") != NULL);

    /* An unreachable server with fail_fast: the reason, from the network. */
    snprintf(ini, sizeof ini, "%s",
             rdt_write_file(&g_srv, "dead.ini", "[redis]\nhost = 127.0.0.1\nport = 1\nconnect_timeout_ms = 200\n"
                                               "[lock]\nfail_fast = yes\n"));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EIO, rdlock_client_open(&c, ini));
    rdlock_set_logger(NULL, NULL);
    RDT_ASSERT_EQ_LL(RDLOCK_ERRSRC_REDIS, rdlock_last_error(buf, sizeof buf));
    CU_ASSERT(strstr(buf, "127.0.0.1:1") != NULL);
    CU_ASSERT_EQUAL(rdlock_last_error(buf, 1), RDLOCK_ERRSRC_REDIS);
    CU_ASSERT_EQUAL(buf[0], '\0');

    /* client info */
    RDT_ASSERT_RC(EINVAL, rdlock_client_info(NULL, NULL));
    RDT_ASSERT_RC(0, rdlock_client_open(&c, g_ini));
    RDT_ASSERT_RC(0, rdlock_client_info(c, &info));
    CU_ASSERT(strstr(info.server, "unix:") == info.server || strstr(info.server, "127.0.0.1:") == info.server);
    CU_ASSERT_EQUAL(info.fail_fast, 0);
    CU_ASSERT_STRING_EQUAL(info.last_error, "");
    RDT_ASSERT_RC(0, rdlock_client_close(c));

    /* Unreachable at the opening, without fail_fast: the client is made,
     * and its info says why from the start. */
    snprintf(ini, sizeof ini, "%s",
             rdt_write_file(&g_srv, "dead-wait.ini", "[redis]\nhost = 127.0.0.1\nport = 1\nconnect_timeout_ms = 200\n"));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, ini));
    rdlock_set_logger(NULL, NULL);
    RDT_ASSERT_RC(0, rdlock_client_info(c, &info));
    if (strstr(info.last_error, "connect") == NULL)
        fprintf(stderr, "client info last_error: \"%s\"\n", info.last_error);
    CU_ASSERT(strstr(info.last_error, "connect") != NULL);
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

/* rdlock_status_name(): argument checks and a held lock's snapshot. */
static void test_status_name(void)
{
    rdlock_client_t *c = NULL;
    rdlock_status_t st;
    rdlock_t m;
    uint64_t tok = 0;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    RDT_ASSERT_RC(0, rdlock_client_open(&c, g_ini));
    RDT_ASSERT_RC(EINVAL, rdlock_status_name(c, "x", NULL));
    rdlock_set_logger(capture_logger, NULL);
    RDT_ASSERT_RC(EINVAL, rdlock_status_name(c, "", &st));
    rdlock_set_logger(NULL, NULL);
    CU_ASSERT_EQUAL(st.nholders, 0);
    RDT_ASSERT_RC(0, rdlock_status_name(c, "status-api", &st));
    CU_ASSERT_EQUAL(st.mode, 0);
    CU_ASSERT_EQUAL(st.nholders, 0);
    rdlock_status_free(&st);
    RDT_ASSERT_RC(0, rdt_mutex_on(&m, "status-api", c, 0));
    RDT_ASSERT_RC(0, rdlock_lock(&m));
    RDT_ASSERT_RC(0, rdlock_fencing_token(&m, &tok));
    RDT_ASSERT_RC(0, rdlock_status_name(c, "status-api", &st));
    CU_ASSERT_EQUAL(st.mode, 'x');
    CU_ASSERT_EQUAL_FATAL(st.nholders, 1);
    CU_ASSERT_EQUAL(st.holders[0].token, tok);
    CU_ASSERT_EQUAL(st.holders[0].pid, (long)getpid());
    CU_ASSERT(st.holders[0].remaining_ms > 0);
    CU_ASSERT_EQUAL(st.fence, tok);
    CU_ASSERT_EQUAL(st.robust, RDLOCK_STATE_CONSISTENT);
    rdlock_status_free(&st);
    rdlock_status_free(&st); /* twice: harmless */
    CU_ASSERT_PTR_NULL(st.holders);
    RDT_ASSERT_RC(0, rdlock_unlock(&m));
    RDT_ASSERT_RC(0, rdlock_destroy(&m));
    RDT_ASSERT_RC(0, rdlock_client_close(c));
}

/* ------------------------------------------------------------------ */
/* the log hook                                                        */
/* ------------------------------------------------------------------ */

static void test_logger(void)
{
    rdlock_t m;
    int sentinel_arg, saved, tmpfd, n_before;
    char path[400], buf[2048];
    ssize_t got;

    cap_reset();
    rdlock_set_logger(capture_logger, &sentinel_arg);
    memset(&m, 0, sizeof m);
    RDT_ASSERT_RC(EINVAL, rdlock_init(&m, "", NULL));
    CU_ASSERT(cap_count() >= 1);
    pthread_mutex_lock(&cap_mu);
    CU_ASSERT(cap_last_level == RDLOCK_LOG_ERROR || cap_last_level == RDLOCK_LOG_WARN);
    CU_ASSERT(cap_last[0] != '\0');
    CU_ASSERT_PTR_EQUAL(cap_last_arg, &sentinel_arg);
    pthread_mutex_unlock(&cap_mu);

    /* NULL restores the default: a line on stderr, nothing captured. */
    rdlock_set_logger(NULL, NULL);
    n_before = cap_count();
    snprintf(path, sizeof path, "%s/stderr-XXXXXX", g_srv.dir);
    tmpfd = mkstemp(path);
    CU_ASSERT_FATAL(tmpfd >= 0);
    fflush(stderr);
    saved = dup(2);
    CU_ASSERT_FATAL(saved >= 0);
    dup2(tmpfd, 2);
    {
        int rc = rdlock_init(&m, "", NULL);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        RDT_ASSERT_RC(EINVAL, rc);
    }
    CU_ASSERT_EQUAL(cap_count(), n_before);
    lseek(tmpfd, 0, SEEK_SET);
    got = read(tmpfd, buf, sizeof buf - 1);
    close(tmpfd);
    unlink(path);
    CU_ASSERT(got > 0);
    if (got > 0) {
        buf[got] = '\0';
        CU_ASSERT_PTR_NOT_NULL(strchr(buf, '\n'));
    }
}

/* ------------------------------------------------------------------ */
/* the process default client                                          */
/* ------------------------------------------------------------------ */

/* In a child (the default client and $RDLOCK_CONF are process-wide):
 * init never reads the config; a missing $RDLOCK_CONF is ENOENT from the
 * first lock call, and is not cached: once it points at a good file the
 * default client comes up. */
static const char *g_child_missing;
static const char *g_child_good;

static int default_client_child(void *arg)
{
    rdlock_t m;
    unsigned n = 0;
    (void)arg;

    /* The parent's connection stays the parent's. */
    g_rc = rdt_connect(&g_srv);
    if (!g_rc)
        return 9;
    rdlock_set_logger(capture_logger, NULL);
    if (setenv("RDLOCK_CONF", g_child_missing, 1) != 0)
        return 10;
    if (rdlock_init(&m, "default-client", NULL) != 0)
        return 11; /* init does not read the config */
    if (rdlock_lock(&m) != ENOENT)
        return 12;
    if (rdlock_trylock(&m) != ENOENT)
        return 13;
    if (setenv("RDLOCK_CONF", g_child_good, 1) != 0)
        return 14;
    if (rdlock_lock(&m) != 0)
        return 15;
    if (rdlock_holdcount(&m, &n) != 0 || n != 1)
        return 16;
    if (key_exists("rdlock:{default-client}", 23) != 1)
        return 17;
    if (rdlock_unlock(&m) != 0)
        return 18;
    if (key_exists("rdlock:{default-client}", 23) != 0)
        return 19;
    if (rdlock_destroy(&m) != 0)
        return 20;
    return 0;
}

static void test_default_client_conf(void)
{
    char missing[400], good[600];
    int rc;

    CU_ASSERT_EQUAL_FATAL(fresh_db(), 0);
    snprintf(missing, sizeof missing, "%s/no-such-rdlock.ini", g_srv.dir);
    snprintf(good, sizeof good, "%s", g_ini);
    g_child_missing = missing;
    g_child_good = good;
    rc = rdt_run_child(default_client_child, NULL, 20000);
    if (rc != 0)
        fprintf(stderr, "default_client_child failed at step %d\n", rc);
    RDT_ASSERT_EQ_LL(0, rc);
}

/* ------------------------------------------------------------------ */

static const rdt_test_t tests[] = {
    { "strerror", test_strerror },
    { "version", test_version },
    { "attr_init_destroy", test_attr_init_destroy },
    { "attr_type", test_attr_type },
    { "attr_lease_range", test_attr_lease_range },
    { "attr_lease_applies", test_attr_lease_applies },
    { "attr_setters", test_attr_setters },
    { "attr_null_uninit", test_attr_null_uninit },
    { "attr_copied_at_init", test_attr_copied_at_init },
    { "init_args", test_init_args },
    { "name_length_limits_locked", test_name_length_limits_locked },
    { "name_any_bytes", test_name_any_bytes },
    { "null_lock", test_null_lock },
    { "uninitialised_lock", test_uninitialised_lock },
    { "destroyed_lock", test_destroyed_lock },
    { "consistent_not_robust", test_consistent_not_robust },
    { "out_pointer_null", test_out_pointer_null },
    { "init_no_network_refused", test_init_no_network_refused },
    { "init_no_network_silent", test_init_no_network_silent },
    { "abstime_validation", test_abstime_validation },
    { "past_deadline_free_lock", test_past_deadline_free_lock },
    { "negative_tv_sec_is_past", test_negative_tv_sec_is_past },
    { "client_open_args", test_client_open_args },
    { "client_close_busy", test_client_close_busy },
    { "double_init_double_close", test_double_init_double_close },
    { "messages_name_the_kind", test_messages_name_the_kind },
    { "errname_last_error", test_errname_last_error },
    { "status_name", test_status_name },
    { "logger", test_logger },
    { "default_client_conf", test_default_client_conf },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "api", tests, suite_setup, suite_teardown, 60);
}
