/* test_fixture.c - tests of the test fixture (tests/fixture.c) and of the
 * helpers in tests/testutil.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

/* Run a command; returns the reply (caller frees) or NULL. */
static redisReply *cmd(redisContext *c, const char *fmt, const char *arg)
{
    return (redisReply *)redisCommand(c, fmt, arg);
}

static int reply_is_status(redisReply *r, const char *want)
{
    return r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, want) == 0;
}

static int ping_ok(redisContext *c)
{
    redisReply *r;
    int ok;
    if (!c || c->err)
        return 0;
    r = (redisReply *)redisCommand(c, "PING");
    ok = reply_is_status(r, "PONG");
    if (r)
        freeReplyObject(r);
    return ok;
}

static int set_key(const rdt_server_t *s, const char *key, const char *val)
{
    redisContext *c = rdt_connect(s);
    redisReply *r;
    int ok;
    if (!c)
        return 0;
    r = (redisReply *)redisCommand(c, "SET %s %s", key, val);
    ok = reply_is_status(r, "OK");
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* GET key into out ("(nil)" for none); 0 if the command failed. */
static int get_key(const rdt_server_t *s, const char *key, char *out, size_t n)
{
    redisContext *c = rdt_connect(s);
    redisReply *r;
    int ok = 0;
    if (!c)
        return 0;
    r = cmd(c, "GET %s", key);
    if (r && r->type == REDIS_REPLY_NIL) {
        snprintf(out, n, "(nil)");
        ok = 1;
    } else if (r && r->type == REDIS_REPLY_STRING) {
        snprintf(out, n, "%s", r->str);
        ok = 1;
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

static int process_exists(pid_t pid)
{
    return kill(pid, 0) == 0 || errno != ESRCH;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    size_t n;
    if (!f)
        return NULL;
    buf = calloc(1, 8192);
    if (buf) {
        n = fread(buf, 1, 8191, f);
        buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

/* ------------------------------------------------------------------ */
/* server lifecycle                                                    */
/* ------------------------------------------------------------------ */

static void test_start_tcp_and_unix(void)
{
    rdt_server_t s;
    redisContext *c;
    redisReply *r;
    struct stat st;

    CU_ASSERT_FATAL(rdt_server_start(&s, NULL, NULL) == 0);
    CU_ASSERT(s.pid > 0);
    CU_ASSERT(s.port > 0 && s.port < 65536);
    CU_ASSERT(s.port != 6379);
    CU_ASSERT(s.password[0] == '\0');
    CU_ASSERT(stat(s.dir, &st) == 0 && S_ISDIR(st.st_mode));
    CU_ASSERT(stat(s.sock, &st) == 0 && S_ISSOCK(st.st_mode));
    CU_ASSERT(strncmp(s.sock, s.dir, strlen(s.dir)) == 0);

    c = rdt_connect(&s);
    CU_ASSERT(ping_ok(c));
    /* no persistence */
    r = cmd(c, "CONFIG GET %s", "save");
    CU_ASSERT(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->str[0] == '\0');
    if (r)
        freeReplyObject(r);
    r = cmd(c, "CONFIG GET %s", "appendonly");
    CU_ASSERT(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && strcmp(r->element[1]->str, "no") == 0);
    if (r)
        freeReplyObject(r);
    r = cmd(c, "CONFIG GET %s", "bind");
    CU_ASSERT(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
              strcmp(r->element[1]->str, "127.0.0.1") == 0);
    if (r)
        freeReplyObject(r);
    if (c)
        redisFree(c);

    c = redisConnectUnix(s.sock);
    CU_ASSERT(ping_ok(c));
    if (c)
        redisFree(c);

    RDT_ASSERT_RC(0, rdt_flushall(&s));
    rdt_server_stop(&s);
}

static void test_two_servers(void)
{
    rdt_server_t a, b;
    char v[64];

    CU_ASSERT_FATAL(rdt_server_start(&a, NULL, NULL) == 0);
    if (rdt_server_start(&b, NULL, NULL) != 0) {
        CU_FAIL("second server");
        rdt_server_stop(&a);
        return;
    }
    CU_ASSERT(a.port != b.port);
    CU_ASSERT(strcmp(a.dir, b.dir) != 0);
    CU_ASSERT(a.pid != b.pid);
    CU_ASSERT(set_key(&a, "k", "a"));
    CU_ASSERT(get_key(&b, "k", v, sizeof v) && strcmp(v, "(nil)") == 0);
    rdt_server_stop(&a);
    rdt_server_stop(&b);
}

static void test_requirepass(void)
{
    rdt_server_t s;
    redisContext *c;
    redisReply *r;

    CU_ASSERT_FATAL(rdt_server_start(&s, "s3cr3t-pw", NULL) == 0);
    CU_ASSERT(strcmp(s.password, "s3cr3t-pw") == 0);

    /* unauthenticated: NOAUTH, over TCP and over the socket */
    c = redisConnect("127.0.0.1", s.port);
    CU_ASSERT_FATAL(c != NULL && !c->err);
    r = (redisReply *)redisCommand(c, "PING");
    CU_ASSERT(r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0);
    if (r)
        freeReplyObject(r);
    r = cmd(c, "AUTH %s", "wrong");
    CU_ASSERT(r && r->type == REDIS_REPLY_ERROR);
    if (r)
        freeReplyObject(r);
    redisFree(c);

    c = redisConnectUnix(s.sock);
    CU_ASSERT_FATAL(c != NULL && !c->err);
    r = (redisReply *)redisCommand(c, "GET k");
    CU_ASSERT(r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0);
    if (r)
        freeReplyObject(r);
    redisFree(c);

    /* rdt_connect authenticates */
    c = rdt_connect(&s);
    CU_ASSERT(ping_ok(c));
    if (c)
        redisFree(c);
    RDT_ASSERT_RC(0, rdt_flushall(&s));
    rdt_server_stop(&s);
}

static void test_kill_restart_loses_data(void)
{
    rdt_server_t s;
    pid_t old_pid;
    int old_port;
    char old_sock[sizeof s.sock], v[64];

    CU_ASSERT_FATAL(rdt_server_start(&s, NULL, NULL) == 0);
    CU_ASSERT(set_key(&s, "k", "v1"));
    CU_ASSERT(get_key(&s, "k", v, sizeof v) && strcmp(v, "v1") == 0);
    old_pid = s.pid;
    old_port = s.port;
    strcpy(old_sock, s.sock);

    rdt_server_kill(&s);
    CU_ASSERT(s.pid == 0);
    CU_ASSERT(!process_exists(old_pid)); /* killed and reaped: no zombie */
    {
        redisContext *c = redisConnect("127.0.0.1", old_port);
        CU_ASSERT(c == NULL || c->err != 0); /* nothing listens */
        if (c)
            redisFree(c);
    }

    RDT_ASSERT_RC(0, rdt_server_restart(&s));
    CU_ASSERT(s.pid > 0 && s.pid != old_pid);
    CU_ASSERT(s.port == old_port);
    CU_ASSERT(strcmp(s.sock, old_sock) == 0);
    CU_ASSERT(get_key(&s, "k", v, sizeof v) && strcmp(v, "(nil)") == 0);
    {
        redisContext *c = redisConnectUnix(s.sock);
        CU_ASSERT(ping_ok(c));
        if (c)
            redisFree(c);
    }
    /* restart of a running server kills it first */
    old_pid = s.pid;
    RDT_ASSERT_RC(0, rdt_server_restart(&s));
    CU_ASSERT(s.pid != old_pid && !process_exists(old_pid));
    CU_ASSERT(s.port == old_port);
    rdt_server_stop(&s);
}

static void test_appendonly_restart_keeps_data(void)
{
    rdt_server_t s;
    char v[64];
    int port;

    CU_ASSERT_FATAL(rdt_server_start(&s, "pw", "--appendonly yes") == 0);
    CU_ASSERT(strcmp(s.extra, "--appendonly yes") == 0);
    CU_ASSERT(set_key(&s, "k", "kept"));
    port = s.port;
    rdt_server_kill(&s);
    RDT_ASSERT_RC(0, rdt_server_restart(&s));
    CU_ASSERT(s.port == port);
    CU_ASSERT(get_key(&s, "k", v, sizeof v) && strcmp(v, "kept") == 0);
    rdt_server_stop(&s);
}

static void test_pause_resume(void)
{
    rdt_server_t s;
    redisContext *c;
    redisReply *r;
    struct timeval tv = { 0, 300 * 1000 };
    long long t0;

    CU_ASSERT_FATAL(rdt_server_start(&s, NULL, NULL) == 0);
    rdt_server_pause(&s);

    /* the kernel still accepts the connection, but nothing answers */
    c = redisConnectWithTimeout("127.0.0.1", s.port, tv);
    CU_ASSERT_FATAL(c != NULL);
    if (!c->err) {
        redisSetTimeout(c, tv);
        t0 = rdt_now_ms();
        r = (redisReply *)redisCommand(c, "PING");
        CU_ASSERT(r == NULL);
        CU_ASSERT(rdt_now_ms() - t0 >= 250);
        if (r)
            freeReplyObject(r);
    }
    redisFree(c);

    rdt_server_resume(&s);
    c = rdt_connect(&s);
    CU_ASSERT(ping_ok(c));
    if (c)
        redisFree(c);

    /* stop works on a paused server too */
    rdt_server_pause(&s);
    t0 = rdt_now_ms();
    rdt_server_stop(&s);
    CU_ASSERT(rdt_now_ms() - t0 < 4000);
    CU_ASSERT(s.pid == 0);
}

static void test_stop_removes_dir(void)
{
    rdt_server_t s;
    char dir[sizeof s.dir];
    pid_t pid;
    struct stat st;

    CU_ASSERT_FATAL(rdt_server_start(&s, NULL, "--appendonly yes") == 0);
    CU_ASSERT(set_key(&s, "k", "v"));
    CU_ASSERT(rdt_write_file(&s, "junk.txt", "x\n") != NULL);
    strcpy(dir, s.dir);
    pid = s.pid;
    rdt_server_stop(&s);
    CU_ASSERT(s.pid == 0);
    CU_ASSERT(!process_exists(pid));
    CU_ASSERT(stat(dir, &st) == -1 && errno == ENOENT);
    rdt_server_stop(&s); /* twice is harmless */
    CU_ASSERT(rdt_server_restart(&s) == -1); /* nothing to restart */
}

static void test_missing_binary_fails(void)
{
    rdt_server_t s;
    const char *old = getenv("REDIS_SERVER");
    char *saved = old ? strdup(old) : NULL;

    setenv("REDIS_SERVER", "/nonexistent/redis-server", 1);
    CU_ASSERT(rdt_server_start(&s, NULL, NULL) == -1);
    CU_ASSERT(s.pid == 0);
    setenv("REDIS_SERVER", "no-such-redis-server-binary", 1);
    CU_ASSERT(rdt_server_start(&s, NULL, NULL) == -1);
    if (saved) {
        setenv("REDIS_SERVER", saved, 1);
        free(saved);
    } else {
        unsetenv("REDIS_SERVER");
    }
}

static void test_bad_extra_args_fail(void)
{
    rdt_server_t s;
    long long t0 = rdt_now_ms();
    /* redis-server exits at once on an unknown option; the fixture gives up
     * after its retries instead of waiting for the 10 s deadline */
    CU_ASSERT(rdt_server_start(&s, NULL, "--no-such-option 1") == -1);
    CU_ASSERT(rdt_now_ms() - t0 < 9000);
    CU_ASSERT(s.pid == 0);
}

/* ------------------------------------------------------------------ */
/* files                                                               */
/* ------------------------------------------------------------------ */

static void test_write_ini(void)
{
    rdt_server_t s;
    const char *p;
    char path1[512], want[1024], *text;

    CU_ASSERT_FATAL(rdt_server_start(&s, NULL, NULL) == 0);

    p = rdt_write_ini(&s, 0, NULL);
    CU_ASSERT_FATAL(p != NULL);
    CU_ASSERT(strncmp(p, s.dir, strlen(s.dir)) == 0);
    snprintf(path1, sizeof path1, "%s", p);
    text = slurp(path1);
    snprintf(want, sizeof want, "[redis]\nhost = 127.0.0.1\nport = %d\n", s.port);
    CU_ASSERT(text && strcmp(text, want) == 0);
    free(text);

    p = rdt_write_ini(&s, 1, "[lock]\nlease_ms = 500\n");
    CU_ASSERT_FATAL(p != NULL);
    CU_ASSERT(strcmp(p, path1) != 0); /* a new file per call */
    text = slurp(p);
    snprintf(want, sizeof want, "[redis]\nsocket = %s\n[lock]\nlease_ms = 500\n", s.sock);
    CU_ASSERT(text && strcmp(text, want) == 0);
    free(text);
    text = slurp(path1); /* the first one is untouched */
    snprintf(want, sizeof want, "[redis]\nhost = 127.0.0.1\nport = %d\n", s.port);
    CU_ASSERT(text && strcmp(text, want) == 0);
    free(text);

    p = rdt_write_file(&s, "pw.txt", "secret\n");
    CU_ASSERT_FATAL(p != NULL);
    text = slurp(p);
    CU_ASSERT(text && strcmp(text, "secret\n") == 0);
    free(text);
    CU_ASSERT(rdt_write_file(&s, "../escape", "x") == NULL);
    rdt_server_stop(&s);

    CU_ASSERT_FATAL(rdt_server_start(&s, "p;w#1", NULL) == 0);
    p = rdt_write_ini(&s, 0, "[watchdog]\nenabled = no\n");
    CU_ASSERT_FATAL(p != NULL);
    text = slurp(p);
    snprintf(want, sizeof want,
             "[redis]\nhost = 127.0.0.1\nport = %d\npassword = \"p;w#1\"\n[watchdog]\nenabled = no\n", s.port);
    CU_ASSERT(text && strcmp(text, want) == 0);
    free(text);
    {
        redisContext *c = rdt_connect(&s);
        CU_ASSERT(ping_ok(c));
        if (c)
            redisFree(c);
    }
    rdt_server_stop(&s);

    CU_ASSERT_FATAL(rdt_server_start(&s, "plain", NULL) == 0);
    p = rdt_write_ini(&s, 1, NULL);
    CU_ASSERT_FATAL(p != NULL);
    text = slurp(p);
    snprintf(want, sizeof want, "[redis]\nsocket = %s\npassword = plain\n", s.sock);
    CU_ASSERT(text && strcmp(text, want) == 0);
    free(text);
    rdt_server_stop(&s);
}

/* ------------------------------------------------------------------ */
/* testutil.h                                                          */
/* ------------------------------------------------------------------ */

static int child_exit7(void *arg)
{
    (void)arg;
    return 7;
}

static int child_signal(void *arg)
{
    (void)arg;
    signal(SIGUSR1, SIG_DFL);
    raise(SIGUSR1);
    return 0;
}

static int child_hang(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return 0;
}

static void test_fork_wait(void)
{
    pid_t pid;
    long long t0;

    pid = rdt_fork(child_exit7, NULL);
    CU_ASSERT_FATAL(pid > 0);
    RDT_ASSERT_EQ_LL(7, rdt_wait(pid, 5000));
    CU_ASSERT(!process_exists(pid));

    pid = rdt_fork(child_signal, NULL);
    CU_ASSERT_FATAL(pid > 0);
    RDT_ASSERT_EQ_LL(128 + SIGUSR1, rdt_wait(pid, 5000));

    pid = rdt_fork(child_hang, NULL);
    CU_ASSERT_FATAL(pid > 0);
    t0 = rdt_now_ms();
    RDT_ASSERT_EQ_LL(-1, rdt_wait(pid, 200));
    CU_ASSERT(rdt_now_ms() - t0 >= 200);
    CU_ASSERT(rdt_now_ms() - t0 < 3000);
    CU_ASSERT(!process_exists(pid)); /* killed and reaped */
    RDT_ASSERT_EQ_LL(-1, rdt_wait(pid, 100)); /* already reaped: ECHILD */
}

static int child_echo(void *arg)
{
    rdt_pipe_t *p = (rdt_pipe_t *)arg;
    char line[128], out[160];

    rdt_pipe_child(p);
    for (;;) {
        if (rdt_recv(p->to_child[0], line, sizeof line, 10000) < 0)
            return 2;
        if (strcmp(line, "quit") == 0)
            return 0;
        snprintf(out, sizeof out, "echo:%s", line);
        if (rdt_send(p->to_parent[1], out) != 0)
            return 3;
    }
}

static void test_send_recv(void)
{
    rdt_pipe_t p;
    pid_t pid;
    char buf[64];
    long long t0;

    CU_ASSERT_FATAL(rdt_pipe_open(&p) == 0);
    pid = rdt_fork(child_echo, &p);
    CU_ASSERT_FATAL(pid > 0);
    rdt_pipe_parent(&p);

    /* nothing sent: timeout */
    t0 = rdt_now_ms();
    RDT_ASSERT_EQ_LL(-1, rdt_recv(p.to_parent[0], buf, sizeof buf, 150));
    CU_ASSERT(rdt_now_ms() - t0 >= 150);

    RDT_ASSERT_EQ_LL(0, rdt_send(p.to_child[1], "hello"));
    RDT_ASSERT_EQ_LL(10, rdt_recv(p.to_parent[0], buf, sizeof buf, 5000));
    CU_ASSERT_STRING_EQUAL(buf, "echo:hello");

    /* two lines in one go are read one at a time */
    RDT_ASSERT_EQ_LL(0, rdt_send(p.to_child[1], "a"));
    RDT_ASSERT_EQ_LL(0, rdt_send(p.to_child[1], ""));
    RDT_ASSERT_EQ_LL(6, rdt_recv(p.to_parent[0], buf, sizeof buf, 5000));
    CU_ASSERT_STRING_EQUAL(buf, "echo:a");
    RDT_ASSERT_EQ_LL(5, rdt_recv(p.to_parent[0], buf, sizeof buf, 5000));
    CU_ASSERT_STRING_EQUAL(buf, "echo:");

    RDT_ASSERT_EQ_LL(-1, rdt_send(p.to_child[1], "two\nlines"));

    /* child exits: EOF is -1 at once, not after the timeout */
    RDT_ASSERT_EQ_LL(0, rdt_send(p.to_child[1], "quit"));
    t0 = rdt_now_ms();
    RDT_ASSERT_EQ_LL(-1, rdt_recv(p.to_parent[0], buf, sizeof buf, 5000));
    CU_ASSERT(rdt_now_ms() - t0 < 4000);
    RDT_ASSERT_EQ_LL(0, rdt_wait(pid, 5000));

    /* writing to a dead child is an error, not a SIGPIPE death */
    {
        struct sigaction dfl, old;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGPIPE, &dfl, &old);
        RDT_ASSERT_EQ_LL(-1, rdt_send(p.to_child[1], "anyone?"));
        CU_ASSERT(errno == EPIPE);
        sigaction(SIGPIPE, &old, NULL);
    }
    rdt_pipe_close(&p);
}

static void test_assert_helpers(void)
{
    CU_ASSERT_STRING_EQUAL(rdt_errname(EINVAL), "EINVAL");
    CU_ASSERT_STRING_EQUAL(rdt_errname(ENOTRECOVERABLE), "ENOTRECOVERABLE");
    CU_ASSERT_STRING_EQUAL(rdt_errname(EOWNERDEAD), "EOWNERDEAD");
    CU_ASSERT_STRING_EQUAL(rdt_errname(0), "0");
    CU_ASSERT_STRING_EQUAL(rdt_errname(-12345), "?");
    RDT_ASSERT_RC(EBUSY, EBUSY);
    RDT_ASSERT_EQ_LL(1LL << 40, 1LL << 40);
    {
        int n = 0;
        RDT_ASSERT_RC(1, ++n); /* evaluated once */
        RDT_ASSERT_EQ_LL(1, n);
    }
}

static const rdt_test_t tests[] = {
    { "start_tcp_and_unix", test_start_tcp_and_unix },
    { "two_servers", test_two_servers },
    { "requirepass", test_requirepass },
    { "kill_restart_loses_data", test_kill_restart_loses_data },
    { "appendonly_restart_keeps_data", test_appendonly_restart_keeps_data },
    { "pause_resume", test_pause_resume },
    { "stop_removes_dir", test_stop_removes_dir },
    { "missing_binary_fails", test_missing_binary_fails },
    { "bad_extra_args_fail", test_bad_extra_args_fail },
    { "write_ini", test_write_ini },
    { "fork_wait", test_fork_wait },
    { "send_recv", test_send_recv },
    { "assert_helpers", test_assert_helpers },
    { NULL, NULL }
};

int main(int argc, char **argv)
{
    return rdt_main(argc, argv, "fixture", tests, NULL, NULL, 120);
}
