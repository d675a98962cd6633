/* fixture.c - a private redis-server for tests and the benchmark.
 *
 * See fixture.h for the interface.  Notes on behaviour:
 *
 * - The server runs on 127.0.0.1 on a port found by binding 127.0.0.1:0 (a
 *   port that another process grabs before redis-server binds it makes the
 *   start fail and is retried with a new port; a foreign server that
 *   answers on "our" port is detected by comparing INFO process_id with the
 *   pid we forked), and on DIR/redis.sock, DIR being a fresh mkdtemp()
 *   directory under $TMPDIR (or /tmp when that is unset or too long for a
 *   unix socket path).  No RDB, no AOF unless the caller passes
 *   "--appendonly yes"; the AOF then lives in DIR and survives a
 *   rdt_server_kill() / rdt_server_restart() cycle.
 * - Readiness is an answered PING (after AUTH when a password is set) over
 *   TCP and over the unix socket, within 10 s.  Between probes the fixture
 *   waits a few milliseconds; that delay is a probe interval, never what
 *   decides readiness.  On failure the tail of the server's log is printed.
 * - The server's stdout/stderr go to DIR/redis.stdout (startup errors that
 *   happen before --logfile is opened land there; both are printed on
 *   failure).
 * - The fixture process ignores SIGPIPE (set by rdt_server_start): a test
 *   that writes to a server it has just killed must get EPIPE, not die.
 *   Note that this also hides a library that would raise SIGPIPE in its
 *   users' processes; test that, if needed, in a forked child that restores
 *   SIG_DFL.
 * - On Linux the server gets PR_SET_PDEATHSIG = SIGKILL, so a test process
 *   that dies (crash, TIMEOUT _exit) does not leave servers behind.  The
 *   "parent" there is the *thread* that forked: start and restart servers
 *   from the main thread, or from a thread that outlives the server.
 * - Every child is reaped (stop, kill, failed starts); servers still running
 *   at exit() are killed and their dirs removed by an atexit handler (only
 *   in the process that started them, not in forked children).
 * - The functions are not thread-safe with respect to one rdt_server_t;
 *   different servers may be handled from different threads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#define RDT_READY_TIMEOUT_MS 10000
#define RDT_STOP_TIMEOUT_MS 5000
#define RDT_START_ATTEMPTS 5
#define RDT_MAX_ARGS 64
#define RDT_LOG_TAIL_BYTES 3000

/* ------------------------------------------------------------------ */
/* small helpers                                                       */
/* ------------------------------------------------------------------ */

long long rdt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *rdt_errname(int code)
{
    switch (code) {
    case 0: return "0";
    case -1: return "RDBARRIER_SERIAL_THREAD"; /* (-1) the only negative code */
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case EAGAIN: return "EAGAIN";
    case ENOLCK: return "ENOLCK";
    case EIO: return "EIO";
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    case ENOMEM: return "ENOMEM";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case EOVERFLOW: return "EOVERFLOW";
    case ENOTSUP: return "ENOTSUP";
    default: return "?";
    }
}

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static int copy_str(char *dst, size_t n, const char *src)
{
    size_t len = strlen(src);
    if (len >= n)
        return -1;
    memcpy(dst, src, len + 1);
    return 0;
}

/* Print the last RDT_LOG_TAIL_BYTES of a file to stderr. */
static void print_tail(const char *path)
{
    FILE *f = fopen(path, "r");
    char buf[RDT_LOG_TAIL_BYTES + 1];
    long size;
    size_t got;

    if (!f) {
        fprintf(stderr, "fixture:   (%s: %s)\n", path, strerror(errno));
        return;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > RDT_LOG_TAIL_BYTES)
        fseek(f, size - RDT_LOG_TAIL_BYTES, SEEK_SET);
    else
        fseek(f, 0, SEEK_SET);
    got = fread(buf, 1, RDT_LOG_TAIL_BYTES, f);
    buf[got] = '\0';
    fclose(f);
    fprintf(stderr, "fixture: ---- tail of %s ----\n%s%s---- end of %s ----\n", path, buf,
            (got > 0 && buf[got - 1] != '\n') ? "\n" : "", path);
}

/* 1 if the file at dir/name contains needle (files here are small). */
static int log_contains(const rdt_server_t *s, const char *name, const char *needle)
{
    char path[400], buf[16384];
    size_t got;
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    f = fopen(path, "r");
    if (!f)
        return 0;
    got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    return strstr(buf, needle) != NULL;
}

static void print_logs(const rdt_server_t *s)
{
    char path[400];
    snprintf(path, sizeof path, "%s/redis.stdout", s->dir);
    print_tail(path);
    snprintf(path, sizeof path, "%s/redis.log", s->dir);
    print_tail(path);
}

/* ------------------------------------------------------------------ */
/* registry of running servers, for the atexit safety net              */
/* ------------------------------------------------------------------ */

#define RDT_REG_MAX 64
static struct {
    pid_t pid;
    pid_t owner; /* getpid() of the process that started it */
    char dir[256];
} reg[RDT_REG_MAX];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static int reg_atexit_done;

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT)
        fprintf(stderr, "fixture: remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void rm_rf(const char *dir)
{
    if (dir[0] == '\0')
        return;
    if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        fprintf(stderr, "fixture: cannot remove %s: %s\n", dir, strerror(errno));
}

static void reg_atexit(void)
{
    int i;
    pthread_mutex_lock(&reg_lock);
    for (i = 0; i < RDT_REG_MAX; i++) {
        if (reg[i].pid > 0 && reg[i].owner == getpid()) {
            fprintf(stderr, "fixture: redis-server pid %ld still running at exit: killing it\n",
                    (long)reg[i].pid);
            kill(reg[i].pid, SIGKILL);
            while (waitpid(reg[i].pid, NULL, 0) == -1 && errno == EINTR)
                ;
            rm_rf(reg[i].dir);
            reg[i].pid = 0;
        }
    }
    pthread_mutex_unlock(&reg_lock);
}

static void reg_add(pid_t pid, const char *dir)
{
    int i;
    pthread_mutex_lock(&reg_lock);
    if (!reg_atexit_done) {
        atexit(reg_atexit);
        reg_atexit_done = 1;
    }
    for (i = 0; i < RDT_REG_MAX; i++) {
        if (reg[i].pid <= 0) {
            reg[i].pid = pid;
            reg[i].owner = getpid();
            copy_str(reg[i].dir, sizeof reg[i].dir, dir);
            break;
        }
    }
    pthread_mutex_unlock(&reg_lock);
}

static void reg_del(pid_t pid)
{
    int i;
    pthread_mutex_lock(&reg_lock);
    for (i = 0; i < RDT_REG_MAX; i++)
        if (reg[i].pid == pid)
            reg[i].pid = 0;
    pthread_mutex_unlock(&reg_lock);
}

/* ------------------------------------------------------------------ */
/* binary lookup, ports, child process                                 */
/* ------------------------------------------------------------------ */

static int is_exe(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* $REDIS_SERVER if set and non-empty, else redis-server on PATH, else
 * /usr/bin/redis-server, /usr/sbin/redis-server. */
static int find_redis_server(char *out, size_t n)
{
    const char *env = getenv("REDIS_SERVER");
    const char *path = getenv("PATH");
    static const char *const fixed[] = { "/usr/bin/redis-server", "/usr/sbin/redis-server" };
    size_t i;

    if (env && *env) {
        if (strchr(env, '/') == NULL) { /* a bare name: look it up on PATH below */
            if (copy_str(out, n, env) != 0)
                return -1;
        } else {
            if (!is_exe(env)) {
                fprintf(stderr, "fixture: REDIS_SERVER=%s is not an executable file\n", env);
                return -1;
            }
            return copy_str(out, n, env);
        }
    }
    if (path) {
        const char *p = path;
        const char *name = (env && *env) ? env : "redis-server";
        while (*p) {
            const char *e = strchr(p, ':');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char cand[1024];
            int w;
            if (len == 0)
                w = snprintf(cand, sizeof cand, "./%s", name);
            else
                w = snprintf(cand, sizeof cand, "%.*s/%s", (int)len, p, name);
            if (w > 0 && (size_t)w < sizeof cand && is_exe(cand))
                return copy_str(out, n, cand);
            if (!e)
                break;
            p = e + 1;
        }
    }
    if (env && *env) {
        fprintf(stderr, "fixture: REDIS_SERVER=%s not found on PATH\n", env);
        return -1;
    }
    for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (is_exe(fixed[i]))
            return copy_str(out, n, fixed[i]);
    fprintf(stderr, "fixture: redis-server not found ($REDIS_SERVER unset, not on PATH, "
                    "not in /usr/bin or /usr/sbin): install redis-server\n");
    return -1;
}

/* A currently free loopback port (never 6379), or -1. */
static int free_port(void)
{
    int tries;
    for (tries = 0; tries < 20; tries++) {
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        int port, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            fprintf(stderr, "fixture: socket: %s\n", strerror(errno));
            return -1;
        }
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa.sin_port = 0;
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
            fprintf(stderr, "fixture: bind 127.0.0.1:0: %s\n", strerror(errno));
            close(fd);
            return -1;
        }
        port = ntohs(sa.sin_port);
        close(fd);
        if (port != 6379 && port > 0)
            return port;
    }
    return -1;
}

static void close_fds_from(int lowfd)
{
#if defined(__linux__) && defined(SYS_close_range)
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
        return;
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        int fd;
        if (max < 0 || max > 65536)
            max = 65536;
        for (fd = lowfd; fd < max; fd++)
            close(fd);
    }
}

/* Split s->extra on spaces (and tabs) into argv; words point into buf. */
static int split_words(char *buf, char **argv, int max)
{
    int n = 0;
    char *p = buf;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            *p++ = '\0';
        if (!*p)
            break;
        if (n >= max)
            return -1;
        argv[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
    }
    return n;
}

/* fork/exec the server with s's addresses; sets s->pid.  Everything the
 * child needs is prepared before fork (the parent may be multithreaded). */
static int spawn(rdt_server_t *s, const char *exe)
{
    char portbuf[16], logfile[400], outfile[400];
    char extra[sizeof s->extra], envbuf[sizeof s->env];
    char *argv[RDT_MAX_ARGS], *added[RDT_MAX_ARGS], **envp = environ;
    int argc = 0, nextra, nadded = 0, outfd, nullfd;
    pid_t parent = getpid(), pid;
    sigset_t all;

    snprintf(portbuf, sizeof portbuf, "%d", s->port);
    snprintf(logfile, sizeof logfile, "%s/redis.log", s->dir);
    snprintf(outfile, sizeof outfile, "%s/redis.stdout", s->dir);
    memcpy(extra, s->extra, sizeof extra);

    argv[argc++] = (char *)exe;
    if (s->conf[0]) {
        /* A sentinel: its config file must come first. */
        argv[argc++] = s->conf;
        argv[argc++] = "--sentinel";
    }
    if (s->tls_only) {
        argv[argc++] = "--port";
        argv[argc++] = "0";
        argv[argc++] = "--tls-port";
    } else {
        argv[argc++] = "--port";
    }
    argv[argc++] = portbuf;
    argv[argc++] = "--bind";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "--unixsocket";
    argv[argc++] = s->sock;
    argv[argc++] = "--unixsocketperm";
    argv[argc++] = "700";
    argv[argc++] = "--save";
    argv[argc++] = "";
    argv[argc++] = "--appendonly";
    argv[argc++] = "no";
    argv[argc++] = "--dir";
    argv[argc++] = s->dir;
    argv[argc++] = "--daemonize";
    argv[argc++] = "no";
    argv[argc++] = "--logfile";
    argv[argc++] = logfile;
    argv[argc++] = "--protected-mode";
    argv[argc++] = "no";
    if (s->password[0]) {
        argv[argc++] = "--requirepass";
        argv[argc++] = s->password;
    }
    /* extra args come last so that they override the defaults above */
    nextra = split_words(extra, argv + argc, RDT_MAX_ARGS - 1 - argc);
    if (nextra < 0) {
        fprintf(stderr, "fixture: too many extra arguments: %s\n", s->extra);
        return -1;
    }
    argc += nextra;
    argv[argc] = NULL;
    if (s->env[0]) {
        /* environ plus the server's own entries, built before fork */
        size_t ne = 0;
        memcpy(envbuf, s->env, sizeof envbuf);
        if ((nadded = split_words(envbuf, added, RDT_MAX_ARGS)) < 0) {
            fprintf(stderr, "fixture: too many environment entries: %s\n", s->env);
            return -1;
        }
        while (environ[ne] != NULL)
            ne++;
        if ((envp = calloc(ne + (size_t)nadded + 1, sizeof *envp)) == NULL)
            return -1;
        memcpy(envp, added, (size_t)nadded * sizeof *envp);
        /* The rest of environ, less the names given here: they replace
         * them (under valgrind environ has an LD_PRELOAD of its own, and
         * the loader would read that one). */
        for (size_t i = 0, j = (size_t)nadded; i < ne; i++) {
            int dup = 0;
            for (int a = 0; a < nadded && !dup; a++) {
                const char *eq = strchr(added[a], '=');
                size_t nl = eq != NULL ? (size_t)(eq - added[a]) + 1 : strlen(added[a]);
                dup = strncmp(environ[i], added[a], nl) == 0;
            }
            if (!dup)
                envp[j++] = environ[i];
        }
    }

    outfd = open(outfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (outfd < 0 || nullfd < 0) {
        fprintf(stderr, "fixture: open %s or /dev/null: %s\n", outfile, strerror(errno));
        if (outfd >= 0)
            close(outfd);
        if (nullfd >= 0)
            close(nullfd);
        return -1;
    }

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fixture: fork: %s\n", strerror(errno));
        close(outfd);
        close(nullfd);
        return -1;
    }
    if (pid == 0) {
        /* child: async-signal-safe calls only until exec */
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGALRM, SIG_DFL);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
#else
        (void)parent;
#endif
        if (dup2(nullfd, 0) < 0 || dup2(outfd, 1) < 0 || dup2(outfd, 2) < 0)
            _exit(127);
        close_fds_from(3);
        execve(exe, argv, envp);
        {
            static const char msg[] = "fixture: exec of redis-server failed\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
        }
        _exit(127);
    }
    close(outfd);
    close(nullfd);
    if (envp != environ)
        free(envp);
    s->pid = pid;
    reg_add(pid, s->dir);
    return 0;
}

/* Reap s->pid if it has exited; returns 1 if it is gone (and clears pid). */
static int reap_if_exited(rdt_server_t *s, int *status)
{
    pid_t r;
    int st = 0;
    do
        r = waitpid(s->pid, &st, WNOHANG);
    while (r == -1 && errno == EINTR);
    if (r == s->pid || (r == -1 && errno == ECHILD)) {
        if (status)
            *status = (r == s->pid) ? st : -1;
        reg_del(s->pid);
        s->pid = 0;
        return 1;
    }
    return 0;
}

static void kill_and_reap(rdt_server_t *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGKILL);
    while (waitpid(s->pid, NULL, 0) == -1 && errno == EINTR)
        ;
    reg_del(s->pid);
    s->pid = 0;
}

/* Connect (TCP if sock == NULL), AUTH if needed.  Returns NULL with a
 * reason in why. */
static redisContext *connect_auth(const rdt_server_t *s, const char *sock, int timeout_ms,
                                  char *why, size_t whylen)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = sock          ? redisConnectUnixWithTimeout(sock, tv)
                      : s->tls_only ? redisConnectUnixWithTimeout(s->sock, tv)
                                    : redisConnectWithTimeout("127.0.0.1", s->port, tv);
    redisReply *r;

    if (!c) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    if (c->err) {
        snprintf(why, whylen, "connect: %s", c->errstr);
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (s->password[0]) {
        r = redisCommand(c, "AUTH %s", s->password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(why, whylen, "AUTH: %s", r ? r->str : c->errstr);
            if (r)
                freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}

/* One readiness probe: 1 ready, 0 not yet, -1 answered but not ours. */
static int probe(const rdt_server_t *s, char *why, size_t whylen)
{
    redisContext *c;
    redisReply *r;
    struct stat st;
    int rc = 0;

    c = connect_auth(s, NULL, 500, why, whylen);
    if (!c)
        return 0;
    r = redisCommand(c, "INFO server");
    if (!r || r->type != REDIS_REPLY_STRING) {
        snprintf(why, whylen, "INFO: %s", r ? (r->str ? r->str : "bad reply") : c->errstr);
    } else {
        const char *p = strstr(r->str, "process_id:");
        long pid = p ? strtol(p + 11, NULL, 10) : -1;
        if (pid != (long)s->pid) {
            snprintf(why, whylen, "port %d answered by another server (pid %ld, ours %ld)",
                     s->port, pid, (long)s->pid);
            rc = -1;
        } else {
            rc = 1;
        }
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    if (rc != 1)
        return rc;

    if (stat(s->sock, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        snprintf(why, whylen, "unix socket %s not there yet", s->sock);
        return 0;
    }
    c = connect_auth(s, s->sock, 500, why, whylen);
    if (!c)
        return 0;
    r = redisCommand(c, "PING");
    if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0) {
        rc = 1;
    } else {
        snprintf(why, whylen, "PING over unix socket: %s", r ? (r->str ? r->str : "?") : c->errstr);
        rc = 0;
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

/* Start the server at s's addresses and wait for it.  Returns 0 ready,
 * 1 it exited or someone else owns the port (retry with another port may
 * help), -1 hard failure (logs printed). */
static int launch(rdt_server_t *s, const char *exe)
{
    long long deadline;
    char why[512] = "no probe yet";
    long wait_ms = 2;
    int st, pr;

    unlink(s->sock); /* a stale socket file would pass the existence check */
    if (spawn(s, exe) != 0)
        return -1;
    deadline = rdt_now_ms() + RDT_READY_TIMEOUT_MS;
    for (;;) {
        if (reap_if_exited(s, &st)) {
            if (st != -1 && WIFEXITED(st))
                fprintf(stderr, "fixture: redis-server on port %d exited with status %d during startup\n",
                        s->port, WEXITSTATUS(st));
            else if (st != -1 && WIFSIGNALED(st))
                fprintf(stderr, "fixture: redis-server on port %d killed by signal %d during startup\n",
                        s->port, WTERMSIG(st));
            else
                fprintf(stderr, "fixture: redis-server on port %d vanished during startup\n", s->port);
            if (log_contains(s, "redis.stdout", "FATAL CONFIG")) {
                /* bad arguments: another port will not help */
                print_logs(s);
                return -1;
            }
            return 1;
        }
        pr = probe(s, why, sizeof why);
        if (pr == 1)
            return 0;
        if (pr < 0) {
            fprintf(stderr, "fixture: %s\n", why);
            kill_and_reap(s);
            return 1;
        }
        if (rdt_now_ms() >= deadline) {
            fprintf(stderr, "fixture: redis-server (pid %ld, port %d) not ready after %d ms: %s\n",
                    (long)s->pid, s->port, RDT_READY_TIMEOUT_MS, why);
            kill_and_reap(s);
            print_logs(s);
            return -1;
        }
        nap_ms(wait_ms); /* probe interval, not synchronisation */
        if (wait_ms < 50)
            wait_ms *= 2;
    }
}

static int make_dir(rdt_server_t *s)
{
    const char *tmp = getenv("TMPDIR");
    char tmpl[256];

    /* DIR/redis.sock must fit in sockaddr_un.sun_path. */
    if (!tmp || !*tmp || strlen(tmp) + sizeof "/rdt-XXXXXX/redis.sock" > sizeof(((struct sockaddr_un *)0)->sun_path))
        tmp = "/tmp";
    snprintf(tmpl, sizeof tmpl, "%s/rdt-XXXXXX", tmp);
    if (!mkdtemp(tmpl)) {
        fprintf(stderr, "fixture: mkdtemp %s: %s\n", tmpl, strerror(errno));
        return -1;
    }
    copy_str(s->dir, sizeof s->dir, tmpl);
    snprintf(s->sock, sizeof s->sock, "%s/redis.sock", s->dir);
    return 0;
}

/* ------------------------------------------------------------------ */
/* public interface                                                    */
/* ------------------------------------------------------------------ */

static int start_server(rdt_server_t *s, const char *password, const char *extra_args, const char *env,
                        int tls_only);
static pid_t tls_owner;

int rdt_server_start(rdt_server_t *s, const char *password, const char *extra_args)
{
    return rdt_server_start_env(s, password, extra_args, NULL);
}

int rdt_server_start_env(rdt_server_t *s, const char *password, const char *extra_args, const char *env)
{
    return start_server(s, password, extra_args, env, 0);
}

static int start_server(rdt_server_t *s, const char *password, const char *extra_args, const char *env,
                        int tls_only)
{
    char exe[1024];
    int attempt, rc;

    if (!s)
        return -1;
    memset(s, 0, sizeof *s);
    s->tls_only = tls_only;
    signal(SIGPIPE, SIG_IGN); /* documented above */
    if (env && copy_str(s->env, sizeof s->env, env) != 0) {
        fprintf(stderr, "fixture: environment entries too long\n");
        return -1;
    }

    if (password && copy_str(s->password, sizeof s->password, password) != 0) {
        fprintf(stderr, "fixture: password too long\n");
        return -1;
    }
    if (extra_args && copy_str(s->extra, sizeof s->extra, extra_args) != 0) {
        fprintf(stderr, "fixture: extra arguments too long\n");
        return -1;
    }
    if (find_redis_server(exe, sizeof exe) != 0)
        return -1;
    if (make_dir(s) != 0)
        return -1;

    for (attempt = 1; attempt <= RDT_START_ATTEMPTS; attempt++) {
        s->port = free_port();
        if (s->port < 0) {
            rc = -1;
            break;
        }
        rc = launch(s, exe);
        if (rc == 0)
            return 0;
        if (rc < 0)
            break;
        if (attempt == RDT_START_ATTEMPTS)
            print_logs(s);
        else
            fprintf(stderr, "fixture: retrying with another port (attempt %d of %d)\n", attempt + 1,
                    RDT_START_ATTEMPTS);
    }
    fprintf(stderr, "fixture: could not start %s\n", exe);
    rm_rf(s->dir);
    s->dir[0] = '\0';
    s->sock[0] = '\0';
    s->port = 0;
    return -1;
}

/* ------------------------------------------------------------------ */
/* TLS                                                                 */
/* ------------------------------------------------------------------ */

static char tls_dir[256];

static void tls_dir_remove(void)
{
    if (tls_dir[0] != '\0' && getpid() == tls_owner)
        rm_rf(tls_dir);
}

const char *rdt_tls_certs(void)
{
    /* One openssl run per file; RSA 2048 keeps it under a second or two.
     * expired.crt: -not_before/-not_after (OpenSSL >= 3.4, which every
     * build with TLS has: hiredis >= 1.0 came to Debian with it). */
    static const char script[] =
        "set -e\n"
        "cd \"$1\"\n"
        "subj() { printf '/CN=%s' \"$1\"; }\n"
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj \"$(subj 'rdlock test CA')\"\n"
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 3650 "
        "-subj \"$(subj 'another CA')\"\n"
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext\n"
        "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj \"$(subj localhost)\"\n"
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 3650 "
        "-extfile server.ext\n"
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out expired.crt "
        "-not_before 20200101000000Z -not_after 20200102000000Z -extfile server.ext\n"
        "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj \"$(subj 'rdlock client')\"\n"
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 3650\n";
    char path[400], cmd[1400];
    rdt_server_t tmp;
    FILE *f;
    int st;

    if (tls_dir[0] != '\0')
        return tls_dir;
    if (make_dir(&tmp) != 0)
        return NULL;
    snprintf(path, sizeof path, "%s/mkcerts.sh", tmp.dir);
    if ((f = fopen(path, "w")) == NULL || fputs(script, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "fixture: cannot write %s\n", path);
        rm_rf(tmp.dir);
        return NULL;
    }
    snprintf(cmd, sizeof cmd, "sh '%s' '%s' >'%s/mkcerts.log' 2>&1", path, tmp.dir, tmp.dir);
    st = system(cmd);
    if (st != 0) {
        char log[400];
        snprintf(log, sizeof log, "%s/mkcerts.log", tmp.dir);
        fprintf(stderr, "fixture: making the TLS certificates failed (status %d); its log:\n", st);
        print_tail(log);
        rm_rf(tmp.dir);
        return NULL;
    }
    copy_str(tls_dir, sizeof tls_dir, tmp.dir);
    tls_owner = getpid();
    atexit(tls_dir_remove);
    return tls_dir;
}

/* The arguments of a TLS-only server with rdt_tls_certs()' files, then
 * extra_args, into buf: 0, or -1 (printed). */
static int tls_args(char *buf, size_t n, const char *server_cert, int auth_clients, const char *extra_args)
{
    const char *d = rdt_tls_certs();
    int w;

    if (d == NULL)
        return -1;
    w = snprintf(buf, n,
                 "--tls-cert-file %s/%s.crt --tls-key-file %s/server.key --tls-ca-cert-file %s/ca.crt "
                 "--tls-auth-clients %s%s%s",
                 d, server_cert, d, d, auth_clients ? "yes" : "no", extra_args ? " " : "", extra_args ? extra_args : "");
    if (w < 0 || (size_t)w >= n) {
        fprintf(stderr, "fixture: TLS arguments too long\n");
        return -1;
    }
    return 0;
}

int rdt_server_start_tls(rdt_server_t *s, const char *server_cert, int auth_clients, const char *extra_args)
{
    char extra[2048]; /* start_server says if it is longer than s->extra */

    if (tls_args(extra, sizeof extra, server_cert, auth_clients, extra_args) != 0)
        return -1;
    return start_server(s, NULL, extra, NULL, 1);
}

static int sentinel_start(rdt_server_t *s, const rdt_server_t *master, const char *name, int quorum,
                          const char *password, int tls);

int rdt_sentinel_start(rdt_server_t *s, const rdt_server_t *master, const char *name)
{
    return rdt_sentinel_start_opts(s, master, name, 1, NULL);
}

int rdt_sentinel_start_opts(rdt_server_t *s, const rdt_server_t *master, const char *name, int quorum,
                            const char *password)
{
    return sentinel_start(s, master, name, quorum, password, 0);
}

int rdt_sentinel_start_tls(rdt_server_t *s, const rdt_server_t *master, const char *name, int quorum)
{
    return sentinel_start(s, master, name, quorum, NULL, 1);
}

static int sentinel_start(rdt_server_t *s, const rdt_server_t *master, const char *name, int quorum,
                          const char *password, int tls)
{
    char exe[1024];
    FILE *f;
    int attempt, rc = -1;

    if (!s || !master || !name || quorum < 1)
        return -1;
    memset(s, 0, sizeof *s);
    signal(SIGPIPE, SIG_IGN);
    if (password && copy_str(s->password, sizeof s->password, password) != 0) {
        fprintf(stderr, "fixture: password too long\n");
        return -1;
    }
    if (tls) {
        /* TLS on its own port only, and (tls-replication) to the servers
         * it watches and the other sentinels. */
        char extra[2048];
        if (tls_args(extra, sizeof extra, "server", 0, "--tls-replication yes") != 0)
            return -1;
        if (copy_str(s->extra, sizeof s->extra, extra) != 0) {
            fprintf(stderr, "fixture: extra arguments too long\n");
            return -1;
        }
        s->tls_only = 1;
    }
    if (find_redis_server(exe, sizeof exe) != 0 || make_dir(s) != 0)
        return -1;
    snprintf(s->conf, sizeof s->conf, "%s/sentinel.conf", s->dir);
    /* Sentinel rewrites its file as it learns: it lives in our dir.  (A
     * password becomes --requirepass on the command line, as for a
     * server, and the readiness probe authenticates with it.) */
    f = fopen(s->conf, "w");
    if (!f || fprintf(f,
                      "sentinel monitor %s 127.0.0.1 %d %d\n"
                      "sentinel down-after-milliseconds %s 1000\n"
                      "sentinel failover-timeout %s 3000\n",
                      name, master->port, quorum, name, name) < 0) {
        fprintf(stderr, "fixture: cannot write %s: %s\n", s->conf, strerror(errno));
        if (f)
            fclose(f);
        rm_rf(s->dir);
        return -1;
    }
    fclose(f);
    for (attempt = 1; attempt <= RDT_START_ATTEMPTS; attempt++) {
        s->port = free_port();
        if (s->port < 0)
            break;
        rc = launch(s, exe);
        if (rc <= 0)
            break;
    }
    if (rc == 0)
        return 0;
    fprintf(stderr, "fixture: could not start a sentinel\n");
    rm_rf(s->dir);
    memset(s, 0, sizeof *s);
    return -1;
}

void rdt_server_stop(rdt_server_t *s)
{
    long long deadline;

    if (!s)
        return;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        kill(s->pid, SIGCONT); /* a paused server must see the SIGTERM */
        deadline = rdt_now_ms() + RDT_STOP_TIMEOUT_MS;
        while (!reap_if_exited(s, NULL)) {
            if (rdt_now_ms() >= deadline) {
                fprintf(stderr, "fixture: redis-server pid %ld ignored SIGTERM for %d ms: SIGKILL\n",
                        (long)s->pid, RDT_STOP_TIMEOUT_MS);
                kill_and_reap(s);
                break;
            }
            nap_ms(2); /* process reaping */
        }
    }
    rm_rf(s->dir);
    s->pid = 0;
    s->dir[0] = '\0';
    s->sock[0] = '\0';
}

void rdt_server_kill(rdt_server_t *s)
{
    if (!s)
        return;
    kill_and_reap(s);
    if (s->sock[0])
        unlink(s->sock);
}

int rdt_server_restart(rdt_server_t *s)
{
    char exe[1024];
    int rc;

    if (!s || s->dir[0] == '\0' || s->port <= 0) {
        fprintf(stderr, "fixture: restart of a server that was never started (or was stopped)\n");
        return -1;
    }
    if (s->pid > 0)
        rdt_server_kill(s);
    if (find_redis_server(exe, sizeof exe) != 0)
        return -1;
    rc = launch(s, exe);
    if (rc != 0) {
        if (rc > 0)
            print_logs(s);
        fprintf(stderr, "fixture: restart on port %d failed\n", s->port);
        return -1;
    }
    return 0;
}

/* Wait (bounded) until the process is in a stopped or running state. */
static void wait_state(pid_t pid, int want_stopped)
{
    long long deadline = rdt_now_ms() + 2000;
    char path[64], buf[512];

    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    for (;;) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;
        const char *p;
        if (fd < 0)
            return; /* no /proc: nothing to check */
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            return;
        buf[n] = '\0';
        p = strrchr(buf, ')'); /* "pid (comm) S ..." */
        if (!p || p[1] == '\0' || p[2] == '\0')
            return;
        if ((p[2] == 'T') == (want_stopped != 0))
            return;
        if (rdt_now_ms() >= deadline) {
            fprintf(stderr, "fixture: pid %ld did not %s\n", (long)pid, want_stopped ? "stop" : "continue");
            return;
        }
        nap_ms(1);
    }
}

void rdt_server_pause(rdt_server_t *s)
{
    if (!s || s->pid <= 0)
        return;
    kill(s->pid, SIGSTOP);
    wait_state(s->pid, 1);
}

void rdt_server_resume(rdt_server_t *s)
{
    if (!s || s->pid <= 0)
        return;
    kill(s->pid, SIGCONT);
    wait_state(s->pid, 0);
}

redisContext *rdt_connect(const rdt_server_t *s)
{
    char why[512];
    redisContext *c;

    if (!s || s->port <= 0) {
        fprintf(stderr, "fixture: rdt_connect: no server\n");
        return NULL;
    }
    c = connect_auth(s, NULL, 5000, why, sizeof why);
    if (!c)
        fprintf(stderr, "fixture: rdt_connect to 127.0.0.1:%d: %s\n", s->port, why);
    return c;
}

int rdt_flushall(const rdt_server_t *s)
{
    redisContext *c = rdt_connect(s);
    redisReply *r;
    int rc = -1;

    if (!c)
        return -1;
    r = redisCommand(c, "FLUSHALL");
    if (r && r->type == REDIS_REPLY_STATUS)
        rc = 0;
    else
        fprintf(stderr, "fixture: FLUSHALL: %s\n", r ? (r->str ? r->str : "?") : c->errstr);
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

#define RDT_PATH_SLOTS 8
static char path_slots[RDT_PATH_SLOTS][400];
static unsigned path_counter;

/* Writes text to path atomically enough for tests (write + fsync-free close). */
static const char *write_text(const rdt_server_t *s, const char *basename, const char *text)
{
    unsigned n = __atomic_fetch_add(&path_counter, 1, __ATOMIC_RELAXED);
    char *slot = path_slots[n % RDT_PATH_SLOTS];
    FILE *f;
    int ok;

    if (!s || s->dir[0] == '\0' || !basename || !*basename || strchr(basename, '/')) {
        fprintf(stderr, "fixture: write_file: no server dir or bad basename\n");
        return NULL;
    }
    if ((size_t)snprintf(slot, sizeof path_slots[0], "%s/%s", s->dir, basename) >= sizeof path_slots[0]) {
        fprintf(stderr, "fixture: path too long\n");
        return NULL;
    }
    f = fopen(slot, "w");
    if (!f) {
        fprintf(stderr, "fixture: fopen %s: %s\n", slot, strerror(errno));
        return NULL;
    }
    ok = fputs(text ? text : "", f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        fprintf(stderr, "fixture: write %s failed\n", slot);
        return NULL;
    }
    return slot;
}

const char *rdt_write_file(const rdt_server_t *s, const char *basename, const char *text)
{
    return write_text(s, basename, text);
}

const char *rdt_quorum_ini(const rdt_server_t *m, int n, const char *basename, const char *redlock_extra,
                           int lease_ms, int retry_interval_ms)
{
    char text[2048];
    int off = snprintf(text, sizeof text, "[redlock]\nmasters = "), k;
    for (k = 0; k < n && off < (int)sizeof text; k++)
        off += snprintf(text + off, sizeof text - (size_t)off, "%s127.0.0.1:%d", k ? ", " : "", m[k].port);
    if (off >= (int)sizeof text ||
        snprintf(text + off, sizeof text - (size_t)off,
                 "\n%s[redis]\ncommand_timeout_ms = 1000\n[lock]\nlease_ms = %d\nretry_interval_ms = %d\n"
                 "retry_jitter_ms = 5\n",
                 redlock_extra ? redlock_extra : "", lease_ms, retry_interval_ms) >= (int)sizeof text - off) {
        fprintf(stderr, "fixture: rdt_quorum_ini: too long\n");
        return NULL;
    }
    return rdt_write_file(&m[0], basename, text);
}

const char *rdt_write_ini(const rdt_server_t *s, int use_socket, const char *extra_ini)
{
    static unsigned ini_counter;
    char name[64];
    char *buf;
    size_t cap;
    int len;
    const char *path;

    if (!s || s->dir[0] == '\0') {
        fprintf(stderr, "fixture: rdt_write_ini: no server\n");
        return NULL;
    }
    if (strpbrk(s->password, "\"\n")) {
        fprintf(stderr, "fixture: rdt_write_ini: password with '\"' or newline not supported\n");
        return NULL;
    }
    cap = 1024 + (extra_ini ? strlen(extra_ini) : 0);
    buf = malloc(cap);
    if (!buf)
        return NULL;
    if (use_socket)
        len = snprintf(buf, cap, "[redis]\nsocket = %s\n", s->sock);
    else
        len = snprintf(buf, cap, "[redis]\nhost = 127.0.0.1\nport = %d\n", s->port);
    if (s->password[0]) {
        /* quote when the value holds an ini comment character or spaces at its ends */
        int quote = strpbrk(s->password, ";#") != NULL || s->password[0] == ' ' ||
                    s->password[strlen(s->password) - 1] == ' ';
        len += snprintf(buf + len, cap - (size_t)len, quote ? "password = \"%s\"\n" : "password = %s\n",
                        s->password);
    }
    if (extra_ini)
        snprintf(buf + len, cap - (size_t)len, "%s", extra_ini);
    snprintf(name, sizeof name, "rdlock-%u.ini", __atomic_fetch_add(&ini_counter, 1, __ATOMIC_RELAXED));
    path = write_text(s, name, buf);
    free(buf);
    return path;
}
