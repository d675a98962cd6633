/* test_config.c - the ini loader (src/base/config.c) against docs/CONTRACT.md section 3 and
 * the fine points of section 10: defaults, every key, every range boundary,
 * syntax, the file search, password_file, and that no log line ever holds
 * a password.
 *
 * Linked with src/base/config.c and src/base/log.c directly; needs no Redis.  Every
 * file is written into a private mkdtemp directory removed at the end. */
#include "rdl_build.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

#ifdef HAVE_INIPARSER_INIPARSER_H
#include <iniparser/iniparser.h>
#else
#include <iniparser.h>
#endif

#include "base/config.h"
#include "base/log.h"
#include "rdlock.h"

/* ------------------------------------------------------------------ */
/* Captured log lines                                                  */
/* ------------------------------------------------------------------ */

#define LOG_MAX 2048

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char *log_lines[LOG_MAX];
static int log_n;      /* lines stored */
static int log_total;  /* lines seen, including those past LOG_MAX */

static void capture(int level, const char *msg, void *arg)
{
    (void)level;
    (void)arg;
    pthread_mutex_lock(&log_mu);
    if (log_n < LOG_MAX)
        log_lines[log_n++] = strdup(msg);
    log_total++;
    pthread_mutex_unlock(&log_mu);
}

static void logs_clear(void)
{
    int i;

    pthread_mutex_lock(&log_mu);
    for (i = 0; i < log_n; i++)
        free(log_lines[i]);
    log_n = 0;
    log_total = 0;
    pthread_mutex_unlock(&log_mu);
}

/* Lines containing all of the given substrings (NULL-terminated). */
static int logs_matching(const char *a, const char *b)
{
    int i, n = 0;

    for (i = 0; i < log_n; i++) {
        if (log_lines[i] != NULL && strstr(log_lines[i], a) != NULL &&
            (b == NULL || strstr(log_lines[i], b) != NULL))
            n++;
    }
    return n;
}

static void logs_dump(const char *why)
{
    int i;

    fprintf(stderr, "    [%s] %d captured log line(s):\n", why, log_n);
    for (i = 0; i < log_n; i++)
        fprintf(stderr, "      | %s\n", log_lines[i] ? log_lines[i] : "(null)");
}

/* ------------------------------------------------------------------ */
/* Assertions that print what they saw                                 */
/* ------------------------------------------------------------------ */

#define EXPECT_INT(actual, expected)                                                     \
    do {                                                                                 \
        long long a_ = (long long)(actual), e_ = (long long)(expected);                  \
        if (a_ != e_)                                                                    \
            fprintf(stderr, "\n    %s:%d: %s = %lld, expected %lld\n", __FILE__,        \
                    __LINE__, #actual, a_, e_);                                          \
        CU_ASSERT(a_ == e_);                                                             \
    } while (0)

#define EXPECT_STR(actual, expected)                                                     \
    do {                                                                                 \
        const char *a_ = (actual), *e_ = (expected);                                     \
        int ok_ = (a_ == NULL && e_ == NULL) ||                                          \
                  (a_ != NULL && e_ != NULL && strcmp(a_, e_) == 0);                     \
        if (!ok_)                                                                        \
            fprintf(stderr, "\n    %s:%d: %s = \"%s\", expected \"%s\"\n", __FILE__,    \
                    __LINE__, #actual, a_ ? a_ : "(NULL)", e_ ? e_ : "(NULL)");          \
        CU_ASSERT(ok_);                                                                  \
    } while (0)

/* Some captured line contains a (and b, if not NULL). */
#define EXPECT_LOG(a, b)                                                                 \
    do {                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                 \
        int n_ = logs_matching(a_, b_);                                                  \
        if (n_ == 0) {                                                                   \
            fprintf(stderr, "\n    %s:%d: no log line with \"%s\"%s%s%s\n", __FILE__,   \
                    __LINE__, a_, b_ ? " and \"" : "", b_ ? b_ : "", b_ ? "\"" : "");     \
            logs_dump("expected line missing");                                          \
        }                                                                                \
        CU_ASSERT(n_ > 0);                                                               \
    } while (0)

#define EXPECT_NO_LOG(a)                                                                 \
    do {                                                                                 \
        int n_ = logs_matching((a), NULL);                                               \
        if (n_ != 0) {                                                                   \
            fprintf(stderr, "\n    %s:%d: %d log line(s) contain \"%s\"\n", __FILE__,   \
                    __LINE__, n_, (a));                                                  \
            logs_dump("forbidden text logged");                                          \
        }                                                                                \
        CU_ASSERT(n_ == 0);                                                              \
    } while (0)

/* ------------------------------------------------------------------ */
/* Temp files                                                          */
/* ------------------------------------------------------------------ */

/* Paths in the temp dir: short, so formatted texts provably fit. */
#define TP 512

static char tmpdir[256];

/* dir/name into out (TP bytes). */
static const char *tpath(char *out, const char *name)
{
    snprintf(out, TP, "%s/%s", tmpdir, name);
    return out;
}

static int write_bytes(const char *path, const char *data, size_t len)
{
    FILE *f;
    size_t w;

    unlink(path);
    f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "\n    cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    w = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || w != len) {
        fprintf(stderr, "\n    cannot write %s\n", path);
        return -1;
    }
    return 0;
}

/* Write text to dir/name; returns the path in out, or NULL. */
static const char *write_file(char *out, const char *name, const char *text)
{
    tpath(out, name);
    return write_bytes(out, text, strlen(text)) == 0 ? out : NULL;
}

/* Write text to dir/t.ini and load it.  Clears the captured log first. */
static int load_text(rdl_config_t *cfg, const char *text)
{
    char p[TP];

    logs_clear();
    if (write_file(p, "t.ini", text) == NULL)
        return -1;
    return rdl_config_load(cfg, p, NULL);
}

static int load_bytes(rdl_config_t *cfg, const char *data, size_t len)
{
    char p[TP];

    logs_clear();
    tpath(p, "t.ini");
    if (write_bytes(p, data, len) != 0)
        return -1;
    return rdl_config_load(cfg, p, NULL);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int is_zeroed(const rdl_config_t *cfg)
{
    static const rdl_config_t zero;
    return memcmp(cfg, &zero, sizeof zero) == 0;
}

static int suite_init(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/rdl-test-config-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    /* The caller's environment must not pick the file for us. */
    unsetenv("RDLOCK_CONF");
    rdlock_set_logger(capture, NULL);
    return 0;
}

static int suite_cleanup(void)
{
    rdlock_set_logger(NULL, NULL);
    logs_clear();
    if (tmpdir[0] != '\0')
        nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Defaults                                                            */
/* ------------------------------------------------------------------ */

static void expect_defaults(const rdl_config_t *c)
{
    EXPECT_STR(c->host, "127.0.0.1");
    EXPECT_STR(c->socket, NULL);
    EXPECT_INT(c->port, 6379);
    EXPECT_STR(c->username, NULL);
    EXPECT_STR(c->password, NULL);
    EXPECT_INT(c->db, 0);
    EXPECT_INT(c->connect_timeout_ms, 1000);
    EXPECT_INT(c->command_timeout_ms, 1000);
    EXPECT_INT(c->command_retries, 3);
    EXPECT_STR(c->key_prefix, "rdlock:");
    EXPECT_INT(c->lease_ms, 30000);
    EXPECT_INT(c->retry_interval_ms, 100);
    EXPECT_INT(c->retry_jitter_ms, 20);
    EXPECT_INT(c->fail_fast, false);
    EXPECT_INT(c->release_at_exit, true);
    EXPECT_INT(c->watchdog_enabled, true);
    EXPECT_INT(c->watchdog_interval_ms, 0);
    EXPECT_INT(c->max_hold_ms, 0);
    EXPECT_INT(c->wait_replicas, 0);
    EXPECT_INT(c->wait_timeout_ms, 500);
    EXPECT_INT(c->nmasters, 0);
    EXPECT_INT(c->drift_ppm, 10000);
    EXPECT_INT(c->restart_delay_ms, -1); /* unset: [lock] lease_ms */
}

static void test_defaults(void)
{
    rdl_config_t c;

    EXPECT_INT(rdl_config_defaults(&c), 0);
    expect_defaults(&c);
    EXPECT_STR(c.source, "built-in defaults");
    rdl_config_free(&c);
    CU_ASSERT(is_zeroed(&c));
    rdl_config_free(&c); /* twice is harmless */
    rdl_config_free(NULL);

    /* No path, no $RDLOCK_CONF, no sysconf file: the defaults. */
    unsetenv("RDLOCK_CONF");
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, NULL, NULL), 0);
    expect_defaults(&c);
    EXPECT_STR(c.source, "built-in defaults");
    EXPECT_INT(log_n, 0);
    rdl_config_free(&c);

    EXPECT_INT(rdl_config_defaults(NULL), EINVAL);
    EXPECT_INT(rdl_config_load(NULL, NULL, NULL), EINVAL);
}

/* An empty file and a file of comments and empty sections are defaults. */
static void test_empty_file(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, ""), 0);
    expect_defaults(&c);
    rdl_config_free(&c);
    EXPECT_INT(load_text(&c, "; nothing\n# at all\n\n[redis]\n[lock]\n[watchdog]\n"), 0);
    expect_defaults(&c);
    rdl_config_free(&c);
}

/* The shipped conf/rdlock.ini loads as-is and equals the defaults. */
static void test_sample_file(void)
{
    char cand[4][PATH_MAX + 32];
    const char *srcdir = getenv("top_srcdir");
    char here[PATH_MAX];
    char *slash;
    rdl_config_t c;
    int i, found = -1;

    snprintf(here, sizeof here, "%s", __FILE__);
    slash = strrchr(here, '/');
    if (slash != NULL)
        *slash = '\0';
    else
        snprintf(here, sizeof here, ".");
    snprintf(cand[0], sizeof cand[0], "%s/conf/rdlock.ini", srcdir ? srcdir : ".");
    snprintf(cand[1], sizeof cand[1], "%s/../conf/rdlock.ini", here);
    snprintf(cand[2], sizeof cand[2], "conf/rdlock.ini");
    snprintf(cand[3], sizeof cand[3], "../conf/rdlock.ini");
    for (i = 0; i < 4 && found < 0; i++) {
        if (access(cand[i], R_OK) == 0)
            found = i;
    }
    if (found < 0)
        fprintf(stderr, "\n    conf/rdlock.ini not found (set top_srcdir)\n");
    CU_ASSERT_FATAL(found >= 0);

    logs_clear();
    EXPECT_INT(rdl_config_load(&c, cand[found], NULL), 0);
    if (log_n != 0)
        logs_dump("sample file");
    EXPECT_INT(log_n, 0);
    expect_defaults(&c);
    EXPECT_STR(c.source, cand[found]);
    rdl_config_free(&c);
}

/* ------------------------------------------------------------------ */
/* Every key                                                           */
/* ------------------------------------------------------------------ */

static void test_every_key(void)
{
    rdl_config_t c;
    char sock[TP], text[4096];

    tpath(sock, "redis.sock");
    snprintf(text, sizeof text,
             "[redis]\n"
             "host = redis.example.org\n"
             "socket = %s\n"
             "port = 6380\n"
             "username = alice\n"
             "password = open sesame\n"
             "db = 7\n"
             "connect_timeout_ms = 2500\n"
             "command_timeout_ms = 750\n"
             "command_retries = 9\n"
             "[lock]\n"
             "key_prefix = myapp:locks:\n"
             "lease_ms = 12000\n"
             "retry_interval_ms = 250\n"
             "retry_jitter_ms = 0\n"
             "fail_fast = yes\n"
             "release_at_exit = no\n"
             "[watchdog]\n"
             "enabled = no\n"
             "interval_ms = 4000\n"
             "max_hold_ms = 600000\n",
             sock);
    EXPECT_INT(load_text(&c, text), 0);
    if (log_n)
        logs_dump("every key");
    EXPECT_STR(c.host, "redis.example.org");
    EXPECT_STR(c.socket, sock);
    EXPECT_INT(c.port, 6380);
    EXPECT_STR(c.username, "alice");
    EXPECT_STR(c.password, "open sesame");
    EXPECT_INT(c.db, 7);
    EXPECT_INT(c.connect_timeout_ms, 2500);
    EXPECT_INT(c.command_timeout_ms, 750);
    EXPECT_INT(c.command_retries, 9);
    EXPECT_STR(c.key_prefix, "myapp:locks:");
    EXPECT_INT(c.lease_ms, 12000);
    EXPECT_INT(c.retry_interval_ms, 250);
    EXPECT_INT(c.retry_jitter_ms, 0);
    EXPECT_INT(c.fail_fast, true);
    EXPECT_INT(c.release_at_exit, false);
    EXPECT_INT(c.watchdog_enabled, false);
    EXPECT_INT(c.watchdog_interval_ms, 4000);
    EXPECT_INT(c.max_hold_ms, 600000);
    CU_ASSERT(c.source != NULL && strstr(c.source, "t.ini") != NULL);
    rdl_config_free(&c);
    CU_ASSERT(is_zeroed(&c));
}

/* Section and key names in any case; values keep their case. */
static void test_case_insensitive(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, "[REDIS]\nHost = MyHost\nPORT = 1234\n"
                             "[Lock]\nKey_Prefix = AbC:\nFAIL_FAST = On\n"
                             "[WatchDog]\nEnabled = FALSE\n"),
               0);
    EXPECT_STR(c.host, "MyHost");
    EXPECT_INT(c.port, 1234);
    EXPECT_STR(c.key_prefix, "AbC:");
    EXPECT_INT(c.fail_fast, true);
    EXPECT_INT(c.watchdog_enabled, false);
    rdl_config_free(&c);
}

/* A relative socket path is relative to the ini file's directory. */
static void test_relative_socket(void)
{
    rdl_config_t c;
    char want[TP];

    EXPECT_INT(load_text(&c, "[redis]\nsocket = run/redis.sock\n"), 0);
    tpath(want, "run/redis.sock");
    EXPECT_STR(c.socket, want);
    rdl_config_free(&c);
}

/* ------------------------------------------------------------------ */
/* Range boundaries                                                    */
/* ------------------------------------------------------------------ */

static long long field(const rdl_config_t *c, const char *key)
{
    if (!strcmp(key, "port")) return c->port;
    if (!strcmp(key, "db")) return c->db;
    if (!strcmp(key, "connect_timeout_ms")) return c->connect_timeout_ms;
    if (!strcmp(key, "command_timeout_ms")) return c->command_timeout_ms;
    if (!strcmp(key, "command_retries")) return c->command_retries;
    if (!strcmp(key, "lease_ms")) return c->lease_ms;
    if (!strcmp(key, "retry_interval_ms")) return c->retry_interval_ms;
    if (!strcmp(key, "retry_jitter_ms")) return c->retry_jitter_ms;
    if (!strcmp(key, "interval_ms")) return c->watchdog_interval_ms;
    if (!strcmp(key, "max_hold_ms")) return c->max_hold_ms;
    if (!strcmp(key, "wait_replicas")) return c->wait_replicas;
    if (!strcmp(key, "wait_timeout_ms")) return c->wait_timeout_ms;
    return -1;
}

static void test_numeric_ranges(void)
{
    static const struct {
        const char *section, *key, *value, *extra;
        int ok;
    } cases[] = {
        { "redis", "port", "0", NULL, 0 },
        { "redis", "port", "1", NULL, 1 },
        { "redis", "port", "65535", NULL, 1 },
        { "redis", "port", "65536", NULL, 0 },
        { "redis", "db", "0", NULL, 1 },
        { "redis", "db", "2147483647", NULL, 1 },
        { "redis", "db", "2147483648", NULL, 0 },
        { "redis", "connect_timeout_ms", "0", NULL, 0 },
        { "redis", "connect_timeout_ms", "1", NULL, 1 },
        { "redis", "connect_timeout_ms", "3600000", NULL, 1 },
        { "redis", "connect_timeout_ms", "3600001", NULL, 0 },
        { "redis", "command_timeout_ms", "0", NULL, 0 },
        { "redis", "command_timeout_ms", "1", NULL, 1 },
        { "redis", "command_timeout_ms", "3600000", NULL, 1 },
        { "redis", "command_timeout_ms", "3600001", NULL, 0 },
        { "redis", "command_retries", "0", NULL, 1 },
        { "redis", "command_retries", "100", NULL, 1 },
        { "redis", "command_retries", "101", NULL, 0 },
        { "lock", "lease_ms", "9", NULL, 0 },
        { "lock", "lease_ms", "10", NULL, 1 },
        { "lock", "lease_ms", "86400000", NULL, 1 },
        { "lock", "lease_ms", "86400001", NULL, 0 },
        { "lock", "retry_interval_ms", "0", NULL, 0 },
        { "lock", "retry_interval_ms", "1", NULL, 1 },
        { "lock", "retry_interval_ms", "60000", NULL, 1 },
        { "lock", "retry_interval_ms", "60001", NULL, 0 },
        { "lock", "retry_jitter_ms", "0", NULL, 1 },
        { "lock", "retry_jitter_ms", "60000", NULL, 1 },
        { "lock", "retry_jitter_ms", "60001", NULL, 0 },
        /* interval_ms: 0 or 1..lease_ms-1 (default lease 30000) */
        { "watchdog", "interval_ms", "0", NULL, 1 },
        { "watchdog", "interval_ms", "1", NULL, 1 },
        { "watchdog", "interval_ms", "29999", NULL, 1 },
        { "watchdog", "interval_ms", "30000", NULL, 0 },
        { "watchdog", "interval_ms", "9", "[lock]\nlease_ms = 10\n", 1 },
        { "watchdog", "interval_ms", "10", "[lock]\nlease_ms = 10\n", 0 },
        { "watchdog", "interval_ms", "86399999", "[lock]\nlease_ms = 86400000\n", 1 },
        /* max_hold_ms: 0 or >= lease_ms */
        { "watchdog", "max_hold_ms", "0", NULL, 1 },
        { "watchdog", "max_hold_ms", "1", NULL, 0 },
        { "watchdog", "max_hold_ms", "29999", NULL, 0 },
        { "watchdog", "max_hold_ms", "30000", NULL, 1 },
        { "watchdog", "max_hold_ms", "10", "[lock]\nlease_ms = 10\n", 1 },
        { "watchdog", "max_hold_ms", "4294967295", NULL, 1 },
        { "watchdog", "max_hold_ms", "4294967296", NULL, 0 },
        { "replication", "wait_replicas", "0", NULL, 1 },
        { "replication", "wait_replicas", "1000", NULL, 1 },
        { "replication", "wait_replicas", "1001", NULL, 0 },
        { "replication", "wait_replicas", "-1", NULL, 0 },
        /* wait_timeout_ms: 1..3600000, below command_timeout_ms (default
         * 1000) when wait_replicas is set */
        { "replication", "wait_timeout_ms", "0", NULL, 0 },
        { "replication", "wait_timeout_ms", "1", NULL, 1 },
        { "replication", "wait_timeout_ms", "3600000", NULL, 1 },
        { "replication", "wait_timeout_ms", "3600001", NULL, 0 },
        { "replication", "wait_timeout_ms", "999", "[replication]\nwait_replicas = 1\n", 1 },
        { "replication", "wait_timeout_ms", "1000", "[replication]\nwait_replicas = 1\n", 0 },
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512], key[64];
        rdl_config_t c;
        int rc;

        snprintf(text, sizeof text, "%s[%s]\n%s = %s\n", cases[i].extra ? cases[i].extra : "",
                 cases[i].section, cases[i].key, cases[i].value);
        rc = load_text(&c, text);
        snprintf(key, sizeof key, "%s:%s", cases[i].section, cases[i].key);
        if (rc != (cases[i].ok ? 0 : EINVAL))
            fprintf(stderr, "\n    %s = %s: rc %d, expected %s\n", key, cases[i].value, rc,
                    cases[i].ok ? "0" : "EINVAL");
        if (cases[i].ok) {
            EXPECT_INT(rc, 0);
            EXPECT_INT(field(&c, cases[i].key), strtoll(cases[i].value, NULL, 10));
            if (log_n)
                logs_dump(key);
            EXPECT_INT(log_n, 0);
        } else {
            EXPECT_INT(rc, EINVAL);
            CU_ASSERT(is_zeroed(&c));
            /* The line names the file and section:key. */
            EXPECT_LOG(key, "t.ini");
        }
        rdl_config_free(&c);
    }
}

/* wait_replicas = all: the one word the key takes besides 0..1000, in
 * lower case only; it turns the wait_timeout_ms rule on as a number does. */
static void test_wait_replicas_all(void)
{
    static const char *const bad[][2] = {
        { "All", "not a decimal number (0..1000) or all" },
        { "ALL", "not a decimal number (0..1000) or all" },
        { "alll", "not a decimal number (0..1000) or all" },
        { "all1", "not a decimal number (0..1000) or all" },
        { "-1", "must not be negative" },
    };
    rdl_config_t c;
    char text[256];
    size_t i;

    EXPECT_INT(load_text(&c, "[replication]\nwait_replicas = all\n"), 0);
    if (log_n)
        logs_dump("wait_replicas = all");
    EXPECT_INT(log_n, 0);
    EXPECT_INT(c.wait_replicas, RDL_WAIT_ALL);
    CU_ASSERT(rdl_config_wait_on(&c));
    rdl_config_free(&c);
    /* Quoted, as any value may be. */
    EXPECT_INT(load_text(&c, "[replication]\nwait_replicas = \"all\"\n"), 0);
    EXPECT_INT(c.wait_replicas, RDL_WAIT_ALL);
    rdl_config_free(&c);
    /* The numbers still mean what they meant. */
    EXPECT_INT(load_text(&c, "[replication]\nwait_replicas = 0\n"), 0);
    CU_ASSERT(!rdl_config_wait_on(&c));
    rdl_config_free(&c);
    EXPECT_INT(load_text(&c, "[replication]\nwait_replicas = 3\n"), 0);
    EXPECT_INT(c.wait_replicas, 3);
    CU_ASSERT(rdl_config_wait_on(&c));
    rdl_config_free(&c);

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "[replication]\nwait_replicas = %s\n", bad[i][0]);
        EXPECT_INT(load_text(&c, text), EINVAL);
        EXPECT_LOG("t.ini:2: replication:wait_replicas", bad[i][1]);
        CU_ASSERT(is_zeroed(&c));
        rdl_config_free(&c);
    }

    /* all is "on": wait_timeout_ms must stay below command_timeout_ms. */
    EXPECT_INT(load_text(&c, "[replication]\nwait_replicas = all\nwait_timeout_ms = 1000\n"), EINVAL);
    EXPECT_LOG("t.ini:3: replication:wait_timeout_ms", "below [redis] command_timeout_ms");
    rdl_config_free(&c);
    EXPECT_INT(load_text(&c, "[replication]\nwait_replicas = all\nwait_timeout_ms = 999\n"), 0);
    EXPECT_INT(c.wait_timeout_ms, 999);
    rdl_config_free(&c);
    /* (Refused beside [redlock] as a number is: test_redlock_section.) */
}

static void test_string_limits(void)
{
    rdl_config_t c;
    char text[2048], v[512], sock[TP];
    size_t base;

    /* key_prefix: 1..128 bytes, no braces */
    memset(v, 'p', 128);
    v[128] = '\0';
    snprintf(text, sizeof text, "[lock]\nkey_prefix = %s\n", v);
    EXPECT_INT(load_text(&c, text), 0);
    EXPECT_INT(c.key_prefix ? strlen(c.key_prefix) : 0, 128);
    rdl_config_free(&c);
    v[128] = 'p';
    v[129] = '\0';
    snprintf(text, sizeof text, "[lock]\nkey_prefix = %s\n", v);
    EXPECT_INT(load_text(&c, text), EINVAL);
    EXPECT_LOG("lock:key_prefix", "t.ini");
    EXPECT_INT(load_text(&c, "[lock]\nkey_prefix = a{b\n"), EINVAL);
    EXPECT_LOG("lock:key_prefix", "'{'");
    EXPECT_INT(load_text(&c, "[lock]\nkey_prefix = ab}\n"), EINVAL);
    EXPECT_LOG("lock:key_prefix", "t.ini");

    /* host: at most 255 bytes */
    memset(v, 'h', 255);
    v[255] = '\0';
    snprintf(text, sizeof text, "[redis]\nhost = %s\n", v);
    EXPECT_INT(load_text(&c, text), 0);
    EXPECT_INT(c.host ? strlen(c.host) : 0, 255);
    rdl_config_free(&c);
    v[255] = 'h';
    v[256] = '\0';
    snprintf(text, sizeof text, "[redis]\nhost = %s\n", v);
    EXPECT_INT(load_text(&c, text), EINVAL);
    EXPECT_LOG("redis:host", "t.ini");

    /* socket: the resolved path fits sun_path (107 bytes + NUL) */
    tpath(sock, "");
    base = strlen(sock);
    CU_ASSERT_FATAL(base < 100);
    memset(v, 's', 107 - base);
    v[107 - base] = '\0';
    snprintf(text, sizeof text, "[redis]\nsocket = %s%s\n", sock, v);
    EXPECT_INT(load_text(&c, text), 0);
    EXPECT_INT(c.socket ? strlen(c.socket) : 0, 107);
    rdl_config_free(&c);
    snprintf(text, sizeof text, "[redis]\nsocket = %s%ss\n", sock, v);
    EXPECT_INT(load_text(&c, text), EINVAL);
    EXPECT_LOG("redis:socket", "t.ini");
}

/* ------------------------------------------------------------------ */
/* Numbers, booleans, sections and keys                                */
/* ------------------------------------------------------------------ */

static void test_bad_numbers(void)
{
    static const struct { const char *value, *reason; } bad[] = {
        { "12abc", "not a decimal number" },
        { "abc", "not a decimal number" },
        { "1.5", "not a decimal number" },
        { "1e3", "not a decimal number" },
        { "0x10", "not a decimal number" },
        { "+5", "not a decimal number" },
        { "\" 80\"", "not a decimal number" },
        { "8 0", "not a decimal number" },
        { "-1", "negative" },
        { "-0", "negative" },
        { "99999999999999999999999", "too large" },
        { "18446744073709551616", "too large" },
        { "4294967296", "out of range" },
    };
    rdl_config_t c;
    char text[256];
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "[redis]\nport = %s\n", bad[i].value);
        EXPECT_INT(load_text(&c, text), EINVAL);
        EXPECT_LOG("redis:port", bad[i].reason);
        CU_ASSERT(is_zeroed(&c));
    }
    /* Leading zeros are decimal, not octal. */
    EXPECT_INT(load_text(&c, "[redis]\nport = 0080\n"), 0);
    EXPECT_INT(c.port, 80);
    rdl_config_free(&c);
}

static void test_parse_bool(void)
{
    static const struct { const char *s; bool v; } good[] = {
        { "yes", true }, { "YES", true }, { "Yes", true }, { "yEs", true },
        { "no", false }, { "NO", false }, { "No", false },
        { "true", true }, { "TRUE", true }, { "True", true },
        { "false", false }, { "FALSE", false }, { "False", false },
        { "on", true }, { "ON", true }, { "On", true },
        { "off", false }, { "OFF", false }, { "Off", false },
        { "1", true }, { "0", false },
    };
    static const char *const badv[] = { "", "y", "n", "t", "f", "2", "01", "yess",
                                        "enable", "true ", " on", "-1", "nope" };
    size_t i;
    bool b;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        b = !good[i].v;
        EXPECT_INT(rdl_config_parse_bool(good[i].s, &b), 0);
        if (b != good[i].v)
            fprintf(stderr, "\n    parse_bool(\"%s\") = %d\n", good[i].s, b);
        CU_ASSERT(b == good[i].v);
    }
    for (i = 0; i < sizeof badv / sizeof badv[0]; i++) {
        b = true;
        if (rdl_config_parse_bool(badv[i], &b) != EINVAL)
            fprintf(stderr, "\n    parse_bool(\"%s\") accepted\n", badv[i]);
        EXPECT_INT(rdl_config_parse_bool(badv[i], &b), EINVAL);
        CU_ASSERT(b == true); /* untouched */
    }
    EXPECT_INT(rdl_config_parse_bool(NULL, &b), EINVAL);
    EXPECT_INT(rdl_config_parse_bool("yes", NULL), EINVAL);
}

static void test_bool_keys(void)
{
    static const struct { const char *s; bool v; } spell[] = {
        { "yes", true }, { "No", false }, { "TRUE", true }, { "false", false },
        { "oN", true }, { "OFF", false }, { "1", true }, { "0", false },
    };
    rdl_config_t c;
    char text[256];
    size_t i;

    for (i = 0; i < sizeof spell / sizeof spell[0]; i++) {
        snprintf(text, sizeof text, "[lock]\nfail_fast = %s\n[watchdog]\nenabled = %s\n",
                 spell[i].s, spell[i].s);
        EXPECT_INT(load_text(&c, text), 0);
        EXPECT_INT(c.fail_fast, spell[i].v);
        EXPECT_INT(c.watchdog_enabled, spell[i].v);
        rdl_config_free(&c);
    }
    EXPECT_INT(load_text(&c, "[lock]\nfail_fast = maybe\n"), EINVAL);
    EXPECT_LOG("lock:fail_fast", "not a boolean");
    EXPECT_INT(load_text(&c, "[watchdog]\nenabled = 2\n"), EINVAL);
    EXPECT_LOG("watchdog:enabled", "not a boolean");
}

static void test_unknown_section_and_key(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, "[redis]\nport = 6380\n[bogus]\nx = 1\n"), EINVAL);
    EXPECT_LOG("[bogus]", "unknown section");
    EXPECT_LOG("t.ini", "unknown section");
    CU_ASSERT(is_zeroed(&c));

    /* An empty unknown section is still unknown. */
    EXPECT_INT(load_text(&c, "[clusters]\n"), EINVAL);
    EXPECT_LOG("[clusters]", "unknown section");

    EXPECT_INT(load_text(&c, "[redis]\nprot = 6380\n"), EINVAL);
    EXPECT_LOG("redis:prot", "unknown key");
    EXPECT_LOG("redis:prot", "t.ini");

    /* A key of one section in another is unknown there. */
    EXPECT_INT(load_text(&c, "[lock]\nport = 6380\n"), EINVAL);
    EXPECT_LOG("lock:port", "unknown key");

    /* A key before any section header. */
    EXPECT_INT(load_text(&c, "port = 6380\n[redis]\n"), EINVAL);
    EXPECT_LOG("port", "outside any section");
}

/* Every problem is reported, not just the first. */
static void test_all_problems_reported(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, "[redis]\nport = 0\nprot = 1\ndb = x\n"
                             "[lock]\nlease_ms = -5\nfail_fast = perhaps\n"
                             "[watchdog]\nmax_hold_ms = 99999999999\n[extra]\n"),
               EINVAL);
    /* Each with the line of the key. */
    EXPECT_LOG("t.ini:2: redis:port", "out of range");
    EXPECT_LOG("t.ini:3: redis:prot", "unknown key");
    EXPECT_LOG("t.ini:4: redis:db", "not a decimal number");
    EXPECT_LOG("t.ini:6: lock:lease_ms", "negative");
    EXPECT_LOG("t.ini:7: lock:fail_fast", "not a boolean");
    EXPECT_LOG("t.ini:9: watchdog:max_hold_ms", "out of range");
    EXPECT_LOG("t.ini:10: [extra]", "unknown section");
    CU_ASSERT(is_zeroed(&c));

    /* A key given twice is named at its last line (the one that counts),
     * a cross-key rule at the line of the key it names. */
    EXPECT_INT(load_text(&c, "[lock]\nlease_ms = 1\n\n[redis]\nport = 1\n[lock]\nlease_ms = 2\n"
                             "[replication]\nwait_replicas = 1\nwait_timeout_ms = 5000\n"),
               EINVAL);
    EXPECT_LOG("t.ini:7: lock:lease_ms", "out of range");
    EXPECT_LOG("t.ini:10: replication:wait_timeout_ms", "below [redis] command_timeout_ms");
    CU_ASSERT(is_zeroed(&c));

    /* Lines with a bad form are all reported, each by number; the values
     * are checked once the form is sound (in a file with a bad line,
     * which section a later key belongs to is a guess). */
    EXPECT_INT(load_text(&c, "[redis]\nport = 0\nthis is not a line\n"
                             "host = \"unterminated\n[lock]\nlease_ms = x\n[]\n"
                             "[watchdog]\nenabled = maybe\n"),
               EINVAL);
    EXPECT_LOG("t.ini:3:", "syntax error");
    EXPECT_LOG("t.ini:4:", "redis:host: unterminated quote");
    EXPECT_LOG("t.ini:7:", "empty section name");
    EXPECT_NO_LOG("redis:port");
    EXPECT_LOG("t.ini", "3 problems");
    CU_ASSERT(is_zeroed(&c));

    /* Keys under a rejected section header are not taken for keys of the
     * section before it (no "redis:lease_ms: unknown key"). */
    EXPECT_INT(load_text(&c, "[redis]\nport = 1\n[lock:x]\nlease_ms = 5\n[]\nfail_fast = 1\n"
                             "[lock]x]\nretry_jitter_ms = 1\n"),
               EINVAL);
    EXPECT_LOG("t.ini:3:", "cannot contain ':'");
    EXPECT_LOG("t.ini:5:", "empty section name");
    EXPECT_LOG("t.ini:7:", "after the ']'");
    EXPECT_NO_LOG("redis:lease_ms");
    EXPECT_NO_LOG("redis:fail_fast");
    EXPECT_NO_LOG("redis:retry_jitter_ms");
    EXPECT_NO_LOG("unknown");
    EXPECT_LOG("t.ini", "3 problems");
}

/* ------------------------------------------------------------------ */
/* Values: quoting, duplicates, empties                                */
/* ------------------------------------------------------------------ */

/* [cluster]: the seed nodes, the refresh period and the redirection
 * limit; a cluster excludes the other ways to name a server, and db. */
static void test_cluster_section(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, "[cluster]\nnodes = 127.0.0.1:7000, [::1]:7001 node.example:7002\n"
                             "refresh_ms = 250\nmax_redirects = 8\n"),
               0);
    EXPECT_INT(c.nclusternodes, 3);
    EXPECT_STR(c.cluster_host[0], "127.0.0.1");
    EXPECT_INT(c.cluster_port[0], 7000);
    EXPECT_STR(c.cluster_host[1], "::1");
    EXPECT_INT(c.cluster_port[1], 7001);
    EXPECT_STR(c.cluster_host[2], "node.example");
    EXPECT_INT(c.cluster_refresh_ms, 250);
    EXPECT_INT(c.cluster_max_redirects, 8);
    rdl_config_free(&c);

    EXPECT_INT(load_text(&c, "[lock]\nlease_ms = 1000\n"), 0);
    EXPECT_INT(c.nclusternodes, 0);
    EXPECT_INT(c.cluster_refresh_ms, 1000);
    EXPECT_INT(c.cluster_max_redirects, 5);
    rdl_config_free(&c);

    EXPECT_INT(load_text(&c, "[redis]\nhost = h\ndb = 2\n[cluster]\nnodes = a:1\n"
                             "[sentinel]\nmaster_name = m\nsentinels = s:26379\n"),
               EINVAL);
    EXPECT_LOG("t.ini:2: redis:host", "cannot be used with [cluster]");
    EXPECT_LOG("t.ini:3: redis:db", "must be 0");
    EXPECT_LOG("t.ini:5: cluster:nodes", "cannot be used with [sentinel]");
    CU_ASSERT(is_zeroed(&c));

    EXPECT_INT(load_text(&c, "[cluster]\nnodes = a:0\n"), EINVAL);
    EXPECT_LOG("t.ini:2: cluster:nodes", "entry 1 is not host:port");
    EXPECT_INT(load_text(&c, "[cluster]\nrefresh_ms = 5\n"), EINVAL);
    EXPECT_LOG("cluster:refresh_ms", "out of range");
    EXPECT_INT(load_text(&c, "[cluster]\nmax_redirects = 3\n"), EINVAL);
    EXPECT_LOG("t.ini:2: cluster:max_redirects", "without [cluster] nodes");
}

/* [redlock] with masters = "127.0.0.1:7001, ..." (n of them) and extra
 * lines after it, loaded into c. */
static int load_redlock(rdl_config_t *c, int n, const char *extra)
{
    char text[2048];
    int off = snprintf(text, sizeof text, "[redlock]\nmasters = ");
    for (int k = 0; k < n; k++)
        off += snprintf(text + off, sizeof text - (size_t)off, "%s127.0.0.1:%d", k ? ", " : "", 7001 + k);
    snprintf(text + off, sizeof text - (size_t)off, "\n%s", extra);
    return load_text(c, text);
}

/* [redlock]: an odd number (3..15) of masters, the drift allowance as a
 * decimal fraction 0..0.5 (at most six decimals), the restart delay; a
 * Redlock set excludes every other way to name a server, and replicas. */
static void test_redlock_section(void)
{
    static const char *const bad_drift[][2] = {
        { "0.6", "out of range" },
        { "0.500001", "out of range" },
        { "1", "out of range" },
        { "-0.1", "out of range" },
        { "abc", "not a decimal fraction" },
        { "0.1234567", "not a decimal fraction" },
        { "1.", "not a decimal fraction" },
        { ".5", "not a decimal fraction" },
        { "0.0x", "not a decimal fraction" },
    };
    /* Each alone beside a valid [redlock] (its section header at line 3,
     * after [redlock] and masters): the lines the problem is logged at. */
    static const char *const excluded[][3] = {
        { "[redis]\nhost = 10.0.0.9\n", "t.ini:4: redis:host", NULL },
        { "[redis]\nport = 6380\n", "t.ini:4: redis:port", NULL },
        { "[redis]\nsocket = /tmp/r.sock\n", "t.ini:4: redis:socket", NULL },
        { "[sentinel]\nmaster_name = m\nsentinels = s:26379\n", "t.ini:5: sentinel:sentinels", NULL },
        { "[cluster]\nnodes = n:7000\n", "t.ini:4: cluster:nodes", NULL },
        { "[replication]\nwait_replicas = 1\n", "t.ini:4: replication:wait_replicas", NULL },
        { "[replication]\nwait_replicas = all\n", "t.ini:4: replication:wait_replicas", NULL },
    };
    rdl_config_t c;
    char extra[128];

    /* Three masters, with every key given. */
    EXPECT_INT(load_text(&c, "[redlock]\nmasters = 10.0.0.1:6379, [::1]:6380 m3.example:6381\n"
                             "drift_factor = 0.05\nrestart_delay_ms = 60000\n"
                             "[redis]\ncommand_timeout_ms = 200\n"),
               0);
    if (log_n != 0)
        logs_dump("3 masters");
    EXPECT_INT(c.nmasters, 3);
    EXPECT_STR(c.master_host[0], "10.0.0.1");
    EXPECT_INT(c.master_port[0], 6379);
    EXPECT_STR(c.master_host[1], "::1");
    EXPECT_INT(c.master_port[1], 6380);
    EXPECT_STR(c.master_host[2], "m3.example");
    EXPECT_INT(c.master_port[2], 6381);
    EXPECT_INT(c.drift_ppm, 50000);
    EXPECT_INT(c.restart_delay_ms, 60000);
    EXPECT_INT(c.command_timeout_ms, 200);
    rdl_config_free(&c);

    /* Five masters, and the defaults of the other two keys. */
    EXPECT_INT(load_redlock(&c, 5, ""), 0);
    EXPECT_INT(c.nmasters, 5);
    EXPECT_STR(c.master_host[4], "127.0.0.1");
    EXPECT_INT(c.master_port[4], 7005);
    EXPECT_INT(c.drift_ppm, 10000);
    EXPECT_INT(c.restart_delay_ms, -1);
    rdl_config_free(&c);

    /* Fifteen is the most. */
    EXPECT_INT(load_redlock(&c, 15, ""), 0);
    EXPECT_INT(c.nmasters, 15);
    rdl_config_free(&c);

    /* A majority needs an odd number, from 3 to 15. */
    EXPECT_INT(load_redlock(&c, 4, ""), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:masters", "4 given: an odd number from 3 to 15");
    CU_ASSERT(is_zeroed(&c));
    EXPECT_INT(load_redlock(&c, 2, ""), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:masters", "2 given");
    EXPECT_INT(load_redlock(&c, 1, ""), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:masters", "1 given");
    CU_ASSERT(is_zeroed(&c));
    EXPECT_INT(load_redlock(&c, 17, ""), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:masters", "more than 15 entries");
    CU_ASSERT(is_zeroed(&c));
    EXPECT_INT(load_redlock(&c, 16, ""), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:masters", "more than 15 entries");
    EXPECT_INT(load_text(&c, "[redlock]\nmasters = a:1, b:0, c:3\n"), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:masters", "entry 2 is not host:port");

    /* drift_factor: a decimal fraction 0..0.5, at most six decimals. */
    EXPECT_INT(load_redlock(&c, 3, "drift_factor = 0.01\n"), 0);
    EXPECT_INT(c.drift_ppm, 10000);
    rdl_config_free(&c);
    EXPECT_INT(load_redlock(&c, 3, "drift_factor = 0.5\n"), 0);
    EXPECT_INT(c.drift_ppm, 500000);
    rdl_config_free(&c);
    EXPECT_INT(load_redlock(&c, 3, "drift_factor = 0\n"), 0);
    EXPECT_INT(c.drift_ppm, 0);
    rdl_config_free(&c);
    EXPECT_INT(load_redlock(&c, 3, "drift_factor = 0.000001\n"), 0);
    EXPECT_INT(c.drift_ppm, 1);
    rdl_config_free(&c);
    EXPECT_INT(load_redlock(&c, 3, "drift_factor = 0.123456\n"), 0);
    EXPECT_INT(c.drift_ppm, 123456);
    rdl_config_free(&c);
    for (size_t i = 0; i < sizeof bad_drift / sizeof bad_drift[0]; i++) {
        snprintf(extra, sizeof extra, "drift_factor = %s\n", bad_drift[i][0]);
        EXPECT_INT(load_redlock(&c, 3, extra), EINVAL);
        EXPECT_LOG("t.ini:3: redlock:drift_factor", bad_drift[i][1]);
        CU_ASSERT(is_zeroed(&c));
    }

    /* restart_delay_ms: 0 (none) .. one day; unset, the lease. */
    EXPECT_INT(load_redlock(&c, 3, "restart_delay_ms = 0\n"), 0);
    EXPECT_INT(c.restart_delay_ms, 0);
    rdl_config_free(&c);
    EXPECT_INT(load_redlock(&c, 3, "restart_delay_ms = 1\n"), 0);
    EXPECT_INT(c.restart_delay_ms, 1);
    rdl_config_free(&c);
    EXPECT_INT(load_redlock(&c, 3, "restart_delay_ms = 86400000\n"), 0);
    EXPECT_INT(c.restart_delay_ms, 86400000);
    rdl_config_free(&c);
    EXPECT_INT(load_redlock(&c, 3, "restart_delay_ms = 86400001\n"), EINVAL);
    EXPECT_LOG("t.ini:3: redlock:restart_delay_ms", "out of range 0..86400000");
    CU_ASSERT(is_zeroed(&c));
    EXPECT_INT(load_redlock(&c, 3, "restart_delay_ms = -1\n"), EINVAL);
    EXPECT_LOG("t.ini:3: redlock:restart_delay_ms", "negative");
    EXPECT_INT(load_redlock(&c, 3, "restart_delay_ms = 5s\n"), EINVAL);
    EXPECT_LOG("t.ini:3: redlock:restart_delay_ms", "not a decimal number");

    /* Every other way to name a server, and replicas to WAIT for, is
     * refused beside [redlock], each at its own line. */
    for (size_t i = 0; i < sizeof excluded / sizeof excluded[0]; i++) {
        EXPECT_INT(load_redlock(&c, 3, excluded[i][0]), EINVAL);
        EXPECT_LOG(excluded[i][1], "cannot be used with [redlock]");
        if (excluded[i][2] != NULL)
            EXPECT_LOG(excluded[i][2], "cannot be used with [redlock]");
        EXPECT_NO_LOG("redlock:masters");
        CU_ASSERT(is_zeroed(&c));
    }
    /* [redis] still gives what every master's connection needs. */
    EXPECT_INT(load_redlock(&c, 3, "[redis]\ndb = 2\nconnect_timeout_ms = 300\n"
                                   "[replication]\nwait_timeout_ms = 100\n"),
               0);
    EXPECT_INT(c.db, 2);
    EXPECT_INT(c.connect_timeout_ms, 300);
    rdl_config_free(&c);

    /* The other [redlock] keys need masters. */
    EXPECT_INT(load_text(&c, "[redlock]\ndrift_factor = 0.02\n"), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:drift_factor", "given without [redlock] masters");
    CU_ASSERT(is_zeroed(&c));
    EXPECT_INT(load_text(&c, "[lock]\nlease_ms = 1000\n[redlock]\nrestart_delay_ms = 5000\n"), EINVAL);
    EXPECT_LOG("t.ini:4: redlock:restart_delay_ms", "given without [redlock] masters");
    CU_ASSERT(is_zeroed(&c));
    /* A master listed twice would vote twice. */
    EXPECT_INT(load_text(&c, "[redlock]\nmasters = a:1, B:2, b:2\n"), EINVAL);
    EXPECT_LOG("t.ini:2: redlock:masters", "B:2 is listed twice");
    CU_ASSERT(is_zeroed(&c));
    /* Keys that are empty or zero beside [redlock] conflict with nothing. */
    EXPECT_INT(load_redlock(&c, 3, "[replication]\nwait_replicas = 0\n[sentinel]\nmaster_name =\n"), 0);
    EXPECT_INT(c.nmasters, 3);
    rdl_config_free(&c);
    /* An empty [redlock] is no Redlock. */
    EXPECT_INT(load_text(&c, "[redlock]\n[redis]\nport = 6390\n"), 0);
    EXPECT_INT(c.nmasters, 0);
    EXPECT_INT(c.port, 6390);
    rdl_config_free(&c);
}

static void test_quoted_values(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, "[redis]\nhost = \"a;b#c\"\npassword = \"p;a#s s\" ; comment\n"
                             "username = 'x;y'\n[lock]\nkey_prefix = \"app;#:\"  # trailing\n"),
               0);
    if (log_n)
        logs_dump("quoted");
    EXPECT_STR(c.host, "a;b#c");
    EXPECT_STR(c.password, "p;a#s s");
    EXPECT_STR(c.username, "x;y");
    EXPECT_STR(c.key_prefix, "app;#:");
    rdl_config_free(&c);

    /* Unquoted, ';' and '#' start a comment. */
    EXPECT_INT(load_text(&c, "[redis]\nhost = h1 ; comment\nusername = u1#c\n"), 0);
    EXPECT_STR(c.host, "h1");
    EXPECT_STR(c.username, "u1");
    rdl_config_free(&c);

    /* Quotes keep inner spaces. */
    EXPECT_INT(load_text(&c, "[redis]\nusername = \"  spaced  \"\n"), 0);
    EXPECT_STR(c.username, "  spaced  ");
    rdl_config_free(&c);

    EXPECT_INT(load_text(&c, "[redis]\nhost = \"unterminated;x\n"), EINVAL);
    EXPECT_LOG("redis:host", "unterminated quote");
    CU_ASSERT(is_zeroed(&c));
    EXPECT_INT(load_text(&c, "[redis]\nhost = \"a\" b\n"), EINVAL);
    EXPECT_LOG("redis:host", "after the closing quote");
}

/* For a key given twice the last one wins (docs/CONTRACT.md section 10). */
static void test_duplicate_key(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, "[redis]\nport = 1111\nport = 2222\n"), 0);
    EXPECT_INT(c.port, 2222);
    rdl_config_free(&c);
    EXPECT_INT(load_text(&c, "[redis]\nport = 1111\n[lock]\nlease_ms = 100\n"
                             "[REDIS]\nPort = 3333\n"),
               0);
    EXPECT_INT(c.port, 3333);
    EXPECT_INT(c.lease_ms, 100);
    rdl_config_free(&c);
    EXPECT_INT(load_text(&c, "[lock]\nfail_fast = yes\nfail_fast = no\n"), 0);
    EXPECT_INT(c.fail_fast, false);
    rdl_config_free(&c);
    /* The last one wins even when the first was invalid... */
    EXPECT_INT(load_text(&c, "[redis]\nport = nope\nport = 7000\n"), 0);
    EXPECT_INT(c.port, 7000);
    rdl_config_free(&c);
    /* ...and loses when it is the invalid one. */
    EXPECT_INT(load_text(&c, "[redis]\nport = 7000\nport = nope\n"), EINVAL);
    EXPECT_LOG("redis:port", "not a decimal number");
}

/* An empty value means the key's default, for every key. */
static void test_empty_values(void)
{
    rdl_config_t c;

    EXPECT_INT(load_text(&c, "[redis]\nhost =\nsocket =\nport =\nusername =\npassword =\n"
                             "password_file =\ndb =\nconnect_timeout_ms =\n"
                             "command_timeout_ms = \"\"\ncommand_retries = ''\n"
                             "[lock]\nkey_prefix =\nlease_ms =\nretry_interval_ms = ; c\n"
                             "retry_jitter_ms =\nfail_fast =\n"
                             "[watchdog]\nenabled =\ninterval_ms =\nmax_hold_ms = # c\n"),
               0);
    if (log_n)
        logs_dump("empty values");
    expect_defaults(&c);
    rdl_config_free(&c);

    /* An empty value after a real one resets it to the default. */
    EXPECT_INT(load_text(&c, "[redis]\nport = 1\nport =\n"), 0);
    EXPECT_INT(c.port, 6379);
    rdl_config_free(&c);
}

/* ------------------------------------------------------------------ */
/* Syntax errors and odd files                                         */
/* ------------------------------------------------------------------ */

static void test_syntax_errors(void)
{
    static const struct { const char *text; size_t len; const char *what; } bad[] = {
#define T(s, w) { s, sizeof(s) - 1, w }
        T("[redis\nport = 1\n", "missing ]"),
        T("[redis]\njust some words\n", "no ="),
        T("[redis]\n= 5\n", "no key"),
        T("[]\nport = 1\n", "empty section"),
        T("[ ]\n", "blank section"),
        T("[redis:x]\n", "':' in section"),
        T("[redis]x]\n", "text after ]"),
        T("[redis] ; comment\n", "comment after section"),
        T("[redis]\nport = 1\\", "continuation at EOF"),
        T("[redis]\nport = 1\nx", "lone char at EOF"),
        T("[redis]\nport = 1\n\0garbage\nhost = h\n", "NUL mid-file"),
        T("[redis]\nport=1\0garbage", "NUL in last line"),
        T("\xef\xbb\xbf[redis]\n", "UTF-8 BOM"),
        T("[redis]\nhost = 'x\n", "unterminated single quote"),
#undef T
    };
    rdl_config_t c;
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = load_bytes(&c, bad[i].text, bad[i].len);
        if (rc != EINVAL)
            fprintf(stderr, "\n    syntax case \"%s\": rc %d\n", bad[i].what, rc);
        EXPECT_INT(rc, EINVAL);
        CU_ASSERT(is_zeroed(&c));
        EXPECT_LOG("t.ini", NULL);
        rdl_config_free(&c);
    }
}

static void test_long_lines(void)
{
    rdl_config_t c;
    char *text = malloc(8192);
    size_t n;

    CU_ASSERT_FATAL(text != NULL);
    /* Longer than iniparser's 1024-byte line buffer. */
    n = (size_t)snprintf(text, 8192, "[redis]\nhost = ");
    memset(text + n, 'a', 3000);
    n += 3000;
    memcpy(text + n, "\nport = 1\n", 11);
    EXPECT_INT(load_bytes(&c, text, n + 10), EINVAL);
    EXPECT_LOG("t.ini", "too long");
    CU_ASSERT(is_zeroed(&c));

    /* Continuations adding up past the buffer. */
    n = (size_t)snprintf(text, 8192, "[redis]\nhost = ");
    for (int i = 0; i < 10; i++) {
        memset(text + n, 'b', 300);
        n += 300;
        memcpy(text + n, "\\\n", 2);
        n += 2;
    }
    memcpy(text + n, "end\n", 4);
    n += 4;
    EXPECT_INT(load_bytes(&c, text, n), EINVAL);
    CU_ASSERT(is_zeroed(&c));

    /* A short continuation is joined, as iniparser does. */
    EXPECT_INT(load_text(&c, "[redis]\nhost = ab\\\ncd\n"), 0);
    EXPECT_STR(c.host, "abcd");
    rdl_config_free(&c);
    free(text);
}

static void test_not_a_file(void)
{
    rdl_config_t c;
    char p[TP];

    tpath(p, "adir.ini");
    mkdir(p, 0700);
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, p, NULL), EINVAL);
    EXPECT_LOG(p, "not a regular file");
    CU_ASSERT(is_zeroed(&c));

    tpath(p, "fifo.ini");
    unlink(p);
    CU_ASSERT_FATAL(mkfifo(p, 0600) == 0);
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, p, NULL), EINVAL); /* and no hang */
    EXPECT_LOG(p, "not a regular file");
    unlink(p);

    /* Over the 1 MiB cap, even if every line is a valid comment. */
    {
        size_t n = 1024 * 1024 + 1, i;
        char *big = malloc(n);
        CU_ASSERT_FATAL(big != NULL);
        for (i = 0; i < n; i++)
            big[i] = (i % 64 == 63) ? '\n' : ';';
        EXPECT_INT(load_bytes(&c, big, n), EINVAL);
        EXPECT_LOG("t.ini", "larger than");
        CU_ASSERT(is_zeroed(&c));
        /* Just under: loads (all comments). */
        EXPECT_INT(load_bytes(&c, big, n - 2), 0);
        rdl_config_free(&c);
        free(big);
    }
}

/* A failed load leaves *cfg all zero, whatever it held before. */
static void test_failure_zeroes(void)
{
    rdl_config_t c;
    char p[TP];

    memset(&c, 0xa5, sizeof c);
    EXPECT_INT(load_text(&c, "[redis]\nport = 0\n"), EINVAL);
    CU_ASSERT(is_zeroed(&c));
    memset(&c, 0xa5, sizeof c);
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, tpath(p, "missing.ini"), NULL), ENOENT);
    CU_ASSERT(is_zeroed(&c));
    rdl_config_free(&c);
}

/* Deterministic garbage: never a crash, only 0 or EINVAL. */
static void test_garbage(void)
{
    static const char alphabet[] = "[]=;#\"'\\ \t\r\nabcdeprtsklo0123456789:{}-_\x01\xff";
    unsigned seed = 12345;
    char buf[600];
    rdl_config_t c;
    int i, bad = 0;

    for (i = 0; i < 400; i++) {
        size_t len, j;
        int rc;

        seed = seed * 1103515245u + 12345u;
        len = (seed >> 8) % sizeof buf;
        for (j = 0; j < len; j++) {
            seed = seed * 1103515245u + 12345u;
            buf[j] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        rc = load_bytes(&c, buf, len);
        if (rc != 0 && rc != EINVAL) {
            fprintf(stderr, "\n    garbage case %d: rc %d\n", i, rc);
            bad++;
        }
        if (rc != 0 && !is_zeroed(&c))
            bad++;
        rdl_config_free(&c);
    }
    EXPECT_INT(bad, 0);
}

/* ------------------------------------------------------------------ */
/* The search: argument, $RDLOCK_CONF, sysconf path, defaults          */
/* ------------------------------------------------------------------ */

static void test_search(void)
{
    rdl_config_t c;
    char envf[TP], sysf[TP], argf[TP], missing[TP];

    CU_ASSERT_FATAL(write_file(envf, "env.ini", "[redis]\nport = 1001\n") != NULL);
    CU_ASSERT_FATAL(write_file(sysf, "sys.ini", "[redis]\nport = 1002\n") != NULL);
    CU_ASSERT_FATAL(write_file(argf, "arg.ini", "[redis]\nport = 1003\n") != NULL);
    tpath(missing, "missing.ini");

    /* $RDLOCK_CONF wins over the sysconf file. */
    setenv("RDLOCK_CONF", envf, 1);
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, NULL, sysf), 0);
    EXPECT_INT(c.port, 1001);
    EXPECT_STR(c.source, envf);
    rdl_config_free(&c);

    /* An explicit path wins over $RDLOCK_CONF. */
    EXPECT_INT(rdl_config_load(&c, argf, sysf), 0);
    EXPECT_INT(c.port, 1003);
    EXPECT_STR(c.source, argf);
    rdl_config_free(&c);

    /* $RDLOCK_CONF naming a missing file: ENOENT, even with a sysconf file. */
    setenv("RDLOCK_CONF", missing, 1);
    logs_clear();
    memset(&c, 0x5a, sizeof c);
    EXPECT_INT(rdl_config_load(&c, NULL, sysf), ENOENT);
    CU_ASSERT(is_zeroed(&c));
    EXPECT_LOG(missing, NULL);

    /* Empty $RDLOCK_CONF counts as unset: the sysconf file. */
    setenv("RDLOCK_CONF", "", 1);
    EXPECT_INT(rdl_config_load(&c, NULL, sysf), 0);
    EXPECT_INT(c.port, 1002);
    EXPECT_STR(c.source, sysf);
    rdl_config_free(&c);

    /* Unset: the sysconf file if it exists... */
    unsetenv("RDLOCK_CONF");
    EXPECT_INT(rdl_config_load(&c, NULL, sysf), 0);
    EXPECT_INT(c.port, 1002);
    rdl_config_free(&c);

    /* ...else the defaults, silently. */
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, NULL, missing), 0);
    expect_defaults(&c);
    EXPECT_STR(c.source, "built-in defaults");
    EXPECT_INT(log_n, 0);
    rdl_config_free(&c);

    /* A sysconf file that exists but is invalid is an error, not skipped. */
    CU_ASSERT_FATAL(write_file(sysf, "sys.ini", "[redis]\nport = 0\n") != NULL);
    EXPECT_INT(rdl_config_load(&c, NULL, sysf), EINVAL);
    EXPECT_LOG("redis:port", "sys.ini");

    /* A named missing file: ENOENT with a log line naming it. */
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, missing, NULL), ENOENT);
    EXPECT_LOG(missing, NULL);
    CU_ASSERT(is_zeroed(&c));
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, "", NULL), ENOENT);

    /* A config file that exists but cannot be read: EACCES.  Root reads
     * anything, so this part only runs unprivileged. */
    if (geteuid() != 0) {
        CU_ASSERT_FATAL(write_file(argf, "noread.ini", "[redis]\n") != NULL);
        chmod(argf, 0);
        logs_clear();
        EXPECT_INT(rdl_config_load(&c, argf, NULL), EACCES);
        EXPECT_LOG(argf, NULL);
    } else {
        fprintf(stderr, "(running as root: unreadable config file via chmod 000 not testable) ");
    }
}

/* ------------------------------------------------------------------ */
/* password_file                                                       */
/* ------------------------------------------------------------------ */

static int load_pwfile(rdl_config_t *c, const char *pf)
{
    char text[PATH_MAX + 64];

    snprintf(text, sizeof text, "[redis]\npassword_file = %s\n", pf);
    return load_text(c, text);
}

static void test_password_file(void)
{
    rdl_config_t c;
    char pf[TP], cwd[PATH_MAX];

    /* First line, trailing \r\n removed, inner spaces kept. */
    CU_ASSERT_FATAL(write_file(pf, "pw1", "  s3cret pw \r\nsecond line\n") != NULL);
    EXPECT_INT(load_pwfile(&c, pf), 0);
    EXPECT_STR(c.password, "  s3cret pw ");
    rdl_config_free(&c);

    /* No newline at all. */
    CU_ASSERT_FATAL(write_file(pf, "pw2", "nonewline") != NULL);
    EXPECT_INT(load_pwfile(&c, pf), 0);
    EXPECT_STR(c.password, "nonewline");
    rdl_config_free(&c);

    /* Relative to the ini file's directory, not the working directory. */
    CU_ASSERT_FATAL(getcwd(cwd, sizeof cwd) != NULL);
    CU_ASSERT_FATAL(chdir("/") == 0);
    EXPECT_INT(load_pwfile(&c, "pw2"), 0);
    EXPECT_STR(c.password, "nonewline");
    rdl_config_free(&c);
    CU_ASSERT_FATAL(chdir(cwd) == 0);

    /* Missing: ENOENT. */
    EXPECT_INT(load_pwfile(&c, tpath(pf, "no-such-pw")), ENOENT);
    EXPECT_LOG("redis:password_file", "no-such-pw");
    CU_ASSERT(is_zeroed(&c));

    /* Unreadable: EACCES.  As root chmod 000 does not stop reading, so a
     * directory stands in for an unreadable file; chmod 000 runs only
     * unprivileged. */
    tpath(pf, "pwdir");
    mkdir(pf, 0700);
    EXPECT_INT(load_pwfile(&c, pf), EACCES);
    EXPECT_LOG("redis:password_file", "pwdir");
    CU_ASSERT(is_zeroed(&c));
    if (geteuid() != 0) {
        CU_ASSERT_FATAL(write_file(pf, "pw000", "secret\n") != NULL);
        chmod(pf, 0);
        EXPECT_INT(load_pwfile(&c, pf), EACCES);
        EXPECT_LOG("redis:password_file", "pw000");
    } else {
        fprintf(stderr, "(running as root: chmod 000 password_file not testable, "
                        "directory used instead) ");
    }

    /* A FIFO is refused, not waited on. */
    tpath(pf, "pwfifo");
    unlink(pf);
    CU_ASSERT_FATAL(mkfifo(pf, 0600) == 0);
    EXPECT_INT(load_pwfile(&c, pf), EACCES);
    unlink(pf);

    /* Empty: EINVAL. */
    CU_ASSERT_FATAL(write_file(pf, "pwempty", "") != NULL);
    EXPECT_INT(load_pwfile(&c, pf), EINVAL);
    EXPECT_LOG("redis:password_file", "empty");
    CU_ASSERT_FATAL(write_file(pf, "pwempty2", "\r\nsecond\n") != NULL);
    EXPECT_INT(load_pwfile(&c, pf), EINVAL);
    EXPECT_LOG("redis:password_file", "empty");

    /* Both password and password_file: EINVAL. */
    CU_ASSERT_FATAL(write_file(pf, "pw3", "fromfile\n") != NULL);
    {
        char text[PATH_MAX + 64];
        snprintf(text, sizeof text, "[redis]\npassword = inline\npassword_file = %s\n", pf);
        EXPECT_INT(load_text(&c, text), EINVAL);
        EXPECT_LOG("redis:password_file", "not both");
    }
}

/* ------------------------------------------------------------------ */
/* [sentinel] credentials                                              */
/* ------------------------------------------------------------------ */

#define SENT_KEYS "[sentinel]\nmaster_name = m\nsentinels = 127.0.0.1:26379\n"

/* AUTH to the sentinels: username, password, password_file, validated as
 * [redis]'s are, and independent of them. */
static void test_sentinel_credentials(void)
{
    rdl_config_t c;
    char pf[TP], text[PATH_MAX + 256];

    /* None by default; username and password as given. */
    EXPECT_INT(load_text(&c, SENT_KEYS), 0);
    EXPECT_STR(c.sentinel_username, NULL);
    EXPECT_STR(c.sentinel_password, NULL);
    rdl_config_free(&c);
    EXPECT_INT(load_text(&c, "[redis]\nusername = app\npassword = forredis\n" SENT_KEYS
                             "username = watcher\npassword = \"for;sentinel\"\n"),
               0);
    EXPECT_STR(c.username, "app");
    EXPECT_STR(c.password, "forredis");
    EXPECT_STR(c.sentinel_username, "watcher");
    EXPECT_STR(c.sentinel_password, "for;sentinel");
    rdl_config_free(&c);

    /* password_file: first line, relative to the ini file's directory. */
    CU_ASSERT_FATAL(write_file(pf, "spw1", "  sentinel pw \r\nsecond\n") != NULL);
    EXPECT_INT(load_text(&c, SENT_KEYS "password_file = spw1\n"), 0);
    EXPECT_STR(c.sentinel_password, "  sentinel pw ");
    EXPECT_STR(c.password, NULL);
    rdl_config_free(&c);

    /* Missing ENOENT, not a regular file EACCES, empty EINVAL, both
     * password and password_file EINVAL: each said about [sentinel]. */
    snprintf(text, sizeof text, SENT_KEYS "password_file = %s\n", tpath(pf, "no-such-spw"));
    EXPECT_INT(load_text(&c, text), ENOENT);
    EXPECT_LOG("sentinel:password_file", "no-such-spw");
    CU_ASSERT(is_zeroed(&c));
    tpath(pf, "spwdir");
    mkdir(pf, 0700);
    snprintf(text, sizeof text, SENT_KEYS "password_file = %s\n", pf);
    EXPECT_INT(load_text(&c, text), EACCES);
    EXPECT_LOG("sentinel:password_file", "spwdir");
    CU_ASSERT_FATAL(write_file(pf, "spwempty", "\n") != NULL);
    snprintf(text, sizeof text, SENT_KEYS "password_file = %s\n", pf);
    EXPECT_INT(load_text(&c, text), EINVAL);
    EXPECT_LOG("sentinel:password_file", "empty");
    CU_ASSERT_FATAL(write_file(pf, "spw2", "fromfile\n") != NULL);
    snprintf(text, sizeof text, SENT_KEYS "password = inline\npassword_file = %s\n", pf);
    EXPECT_INT(load_text(&c, text), EINVAL);
    EXPECT_LOG("sentinel:password_file", "not both");
    /* [redis]'s password_file does not count for [sentinel]'s password. */
    snprintf(text, sizeof text, "[redis]\npassword_file = %s\n" SENT_KEYS "password = inline\n", pf);
    EXPECT_INT(load_text(&c, text), 0);
    EXPECT_STR(c.password, "fromfile");
    EXPECT_STR(c.sentinel_password, "inline");
    rdl_config_free(&c);

    /* Credentials without sentinels to use them on. */
    EXPECT_INT(load_text(&c, "[sentinel]\npassword = x\n"), EINVAL);
    EXPECT_LOG("sentinel:password", "without master_name");
    EXPECT_INT(load_text(&c, "[sentinel]\nusername = x\n"), EINVAL);
    EXPECT_LOG("sentinel:username", "without master_name");

    /* Never the secret in a log line. */
    {
        static const char *const bad[] = {
            "[sentinel]\npassword = Zq9-sentinel-SECRET\n",
            SENT_KEYS "pasword = Zq9-sentinel-SECRET\n",
            SENT_KEYS "password = Zq9-sentinel-SECRET\nport = 1\n",
            SENT_KEYS "password Zq9-sentinel-SECRET\n",
            SENT_KEYS "password = \"Zq9-sentinel-SECRET\n",
        };
        size_t i;
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            EXPECT_INT(load_text(&c, bad[i]), EINVAL);
            CU_ASSERT(log_n > 0);
            EXPECT_NO_LOG("Zq9-sentinel-SECRET");
        }
    }
    CU_ASSERT_FATAL(write_file(pf, "spw3", "Zq9-sentinel-SECRET\n") != NULL);
    snprintf(text, sizeof text, SENT_KEYS "password_file = %s\nsentinels = x\n", pf);
    EXPECT_INT(load_text(&c, text), EINVAL);
    EXPECT_NO_LOG("Zq9-sentinel-SECRET");
}

/* ------------------------------------------------------------------ */
/* No log line ever holds a password                                   */
/* ------------------------------------------------------------------ */

#define SECRET "Zq9-hunter2-SECRET"

static void test_password_never_logged(void)
{
    static const struct { const char *text; size_t len; int rc; } cases[] = {
#define T(s, rc) { s, sizeof(s) - 1, rc }
        T("[redis]\npassword = " SECRET "\n", 0),
        T("[redis]\npassword = \"" SECRET ";#\"\n", 0),
        T("[redis]\npassword " SECRET "\n", EINVAL),
        T("[redis]\npassword \"" SECRET "\n", EINVAL),
        T("[redis]\npassword: " SECRET "\n", EINVAL),
        T("[redis]\npassword = \"" SECRET "\n", EINVAL),
        T("[redis]\npassword = '" SECRET "\n", EINVAL),
        T("[redis]\npassword = \"" SECRET "\" trailing\n", EINVAL),
        T("[redis]\n" SECRET "\n", EINVAL),
        T("[" SECRET "\n", EINVAL),
        T("[lock]\npassword = " SECRET "\n", EINVAL),
        T("[bogus]\npassword = " SECRET "\n", EINVAL),
        T("password = " SECRET "\n[redis]\n", EINVAL),
        T("[redis]\npasswd = " SECRET "\n", EINVAL),
        T("[redis]\npassword = " SECRET "\nport = 0\n", EINVAL),
        T("[redis]\npassword = " SECRET "\npassword_file = /nonexistent\n", EINVAL),
        T("[redis]\nport = " SECRET "\n", EINVAL),
        T("[redis]\npassword = " SECRET "\\", EINVAL),
        T("[redis]\npassword = " SECRET "\0tail", EINVAL),
#undef T
    };
    char errpath[TP], pf[TP], text[PATH_MAX + 64];
    rdl_config_t c;
    size_t i;
    int saved, fd, rc;
    char *long_line;

    /* Capture fd 2 too: iniparser's default callback writes there. */
    tpath(errpath, "stderr.txt");
    fflush(stderr);
    saved = dup(2);
    fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rc = load_bytes(&c, cases[i].text, cases[i].len);
        EXPECT_INT(rc, cases[i].rc);
        if (cases[i].rc != 0)
            CU_ASSERT(log_n > 0); /* something was said about it */
        EXPECT_NO_LOG(SECRET);
        rdl_config_free(&c);
    }

    /* A line too long for iniparser, holding the password. */
    long_line = malloc(4096);
    CU_ASSERT_FATAL(long_line != NULL);
    snprintf(long_line, 4096, "[redis]\npassword = " SECRET);
    i = strlen(long_line);
    memset(long_line + i, 'x', 2000);
    strcpy(long_line + i + 2000, "\n");
    EXPECT_INT(load_text(&c, long_line), EINVAL);
    EXPECT_NO_LOG(SECRET);
    free(long_line);

    /* From password_file, with other errors in the file. */
    CU_ASSERT_FATAL(write_file(pf, "pwsecret", SECRET "\n") != NULL);
    snprintf(text, sizeof text, "[redis]\npassword_file = %s\n", pf);
    EXPECT_INT(load_text(&c, text), 0);
    EXPECT_STR(c.password, SECRET);
    EXPECT_NO_LOG(SECRET);
    rdl_config_free(&c);
    snprintf(text, sizeof text, "[redis]\npassword_file = %s\nport = 0\n[x]\n", pf);
    EXPECT_INT(load_text(&c, text), EINVAL);
    EXPECT_NO_LOG(SECRET);

    /* With the default (stderr) logger as well. */
    rdlock_set_logger(NULL, NULL);
    {
        char p[TP];
        CU_ASSERT_FATAL(write_file(p, "t2.ini", "[redis]\npassword " SECRET "\n") != NULL);
        EXPECT_INT(rdl_config_load(&c, p, NULL), EINVAL);
    }
    rdlock_set_logger(capture, NULL);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    {
        char buf[65536];
        FILE *f = fopen(errpath, "r");
        size_t n = 0;
        CU_ASSERT_FATAL(f != NULL);
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        if (strstr(buf, SECRET) != NULL)
            fprintf(stderr, "\n    stderr held the password:\n%s\n", buf);
        CU_ASSERT(strstr(buf, SECRET) == NULL);
        /* The default logger did report the syntax error on stderr. */
        if (strstr(buf, "t2.ini") == NULL)
            fprintf(stderr, "\n    stderr lacks the t2.ini error:\n%s\n", buf);
        CU_ASSERT(strstr(buf, "t2.ini") != NULL);
    }
}

/* ------------------------------------------------------------------ */
/* iniparser's own error reports, scrubbed                             */
/* ------------------------------------------------------------------ */

/* config.c predicts every line iniparser 4.1 rejects and reports it itself,
 * so iniparser's error callback (which echoes the line) only fires for
 * cases that prediction misses.  To test that fallback, this program
 * interposes the two iniparser entry points config.c calls (an executable's
 * definitions win over the shared library's) and forwards them to the real
 * ones, optionally loading another file or calling the callback with a
 * message shaped as another iniparser version might shape it. */
static int (*seen_errback)(const char *, ...);
/* Per thread, so that concurrent loads can differ (test_concurrent). */
static __thread const char *swap_path;   /* iniparser loads this instead */
static __thread int inject_oneline;      /* one-line message holding the password */

void iniparser_set_error_callback(int (*errback)(const char *, ...))
{
    void (*real)(int (*)(const char *, ...));

    *(void **)&real = dlsym(RTLD_NEXT, "iniparser_set_error_callback");
    seen_errback = errback;
    if (real != NULL)
        real(errback);
}

dictionary *iniparser_load(const char *ininame)
{
    dictionary *(*real)(const char *);

    *(void **)&real = dlsym(RTLD_NEXT, "iniparser_load");
    if (real == NULL)
        abort();
    if (inject_oneline && seen_errback != NULL)
        seen_errback("iniparser: syntax error in %s (%d): %s\n", ininame, 2,
                     "password = " SECRET);
    return real(swap_path != NULL ? swap_path : ininame);
}

static void test_iniparser_errors_scrubbed(void)
{
    char good[TP], evil[TP];
    rdl_config_t c;

    CU_ASSERT_FATAL(write_file(good, "good-swap.ini", "[redis]\nport = 1\n") != NULL);
    CU_ASSERT_FATAL(write_file(evil, "evil.ini", "[redis]\npassword " SECRET "\nport = 2\n") != NULL);

    /* Sanity: the interposer is in use and passes loads through. */
    logs_clear();
    seen_errback = NULL;
    EXPECT_INT(rdl_config_load(&c, good, NULL), 0);
    EXPECT_INT(c.port, 1);
    CU_ASSERT(seen_errback == NULL); /* restored to the default afterwards */
    rdl_config_free(&c);

    /* The real iniparser reports "syntax error ... -> password SECRET". */
    swap_path = evil;
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, good, NULL), EINVAL);
    swap_path = NULL;
    EXPECT_LOG("syntax error", "not shown");
    EXPECT_NO_LOG(SECRET);
    EXPECT_NO_LOG("->");
    CU_ASSERT(is_zeroed(&c));

    /* A one-line report with `password = SECRET` after the file name. */
    inject_oneline = 1;
    logs_clear();
    EXPECT_INT(rdl_config_load(&c, good, NULL), EINVAL);
    inject_oneline = 0;
    EXPECT_LOG("syntax error", good);
    EXPECT_NO_LOG(SECRET);
    CU_ASSERT(is_zeroed(&c));
}

/* ------------------------------------------------------------------ */
/* Concurrent loads share iniparser's global error callback            */
/* ------------------------------------------------------------------ */

struct thr_arg {
    int good;       /* a clean load, or one where iniparser reports an error */
    int failures;
};

static char good_path[TP];

/* Half the threads load a clean file; the other half load the same file
 * but have (the interposed) iniparser report an error through the global
 * callback.  Each load must see exactly its own errors. */
static void *thr_load(void *p)
{
    struct thr_arg *a = p;
    int i;

    inject_oneline = !a->good;
    for (i = 0; i < 300; i++) {
        rdl_config_t c;
        int rc = rdl_config_load(&c, good_path, NULL);
        if (a->good ? (rc != 0 || c.port != 4242) : rc != EINVAL)
            a->failures++;
        rdl_config_free(&c);
    }
    inject_oneline = 0;
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t t[8];
    struct thr_arg a[8];
    int i, failures = 0;

    CU_ASSERT_FATAL(write_file(good_path, "good.ini", "[redis]\nport = 4242\n") != NULL);
    logs_clear();
    for (i = 0; i < 8; i++) {
        a[i].good = i % 2;
        a[i].failures = 0;
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, thr_load, &a[i]) == 0);
    }
    for (i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        failures += a[i].failures;
    }
    EXPECT_INT(failures, 0);
    EXPECT_NO_LOG(SECRET);
}

/* ------------------------------------------------------------------ */

int main(void)
{
    static const struct { const char *name; CU_TestFunc fn; } tests[] = {
        { "defaults", test_defaults },
        { "empty file", test_empty_file },
        { "shipped sample file", test_sample_file },
        { "every key parsed", test_every_key },
        { "case-insensitive names", test_case_insensitive },
        { "relative socket path", test_relative_socket },
        { "numeric range boundaries", test_numeric_ranges },
        { "wait_replicas = all", test_wait_replicas_all },
        { "string limits", test_string_limits },
        { "bad numbers", test_bad_numbers },
        { "rdl_config_parse_bool", test_parse_bool },
        { "boolean keys", test_bool_keys },
        { "unknown section and key", test_unknown_section_and_key },
        { "all problems reported", test_all_problems_reported },
        { "quoted values", test_quoted_values },
        { "cluster section", test_cluster_section },
        { "redlock section", test_redlock_section },
        { "duplicate key: last wins", test_duplicate_key },
        { "empty values are defaults", test_empty_values },
        { "syntax errors", test_syntax_errors },
        { "long lines", test_long_lines },
        { "not a regular file", test_not_a_file },
        { "failure zeroes cfg", test_failure_zeroes },
        { "garbage input", test_garbage },
        { "file search", test_search },
        { "password_file", test_password_file },
        { "password never logged", test_password_never_logged },
        { "sentinel credentials", test_sentinel_credentials },
        { "iniparser's own errors scrubbed", test_iniparser_errors_scrubbed },
        { "concurrent loads", test_concurrent },
    };
    CU_pSuite suite;
    unsigned failed;
    size_t i;

    alarm(120); /* never hang a test run */
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    suite = CU_add_suite("config", suite_init, suite_cleanup);
    if (suite == NULL)
        goto fail;
    for (i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (CU_add_test(suite, tests[i].name, tests[i].fn) == NULL)
            goto fail;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (CU_basic_run_tests() != CUE_SUCCESS)
        goto fail;
    failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
             CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    return failed != 0;
fail:
    fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
    CU_cleanup_registry();
    return 2;
}
