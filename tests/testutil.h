/* testutil.h - CUnit helpers shared by the test programs (header only).
 *
 *   RDT_ASSERT_RC(expected, actual)     two int return codes (errno values)
 *   RDT_ASSERT_EQ_LL(expected, actual)  two integers, as long long
 *   rdt_main()                          one suite, optional single test, watchdog alarm
 *   rdt_fork() / rdt_wait()             multi-process tests
 *   rdt_pipe_t, rdt_send(), rdt_recv()  a line protocol to drive a child
 *
 * Include it from one .c file per program (its statics are per file).
 */
#ifndef RDT_TESTUTIL_H
#define RDT_TESTUTIL_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdlock.h>

#include "fixture.h" /* rdt_errname, for the messages of RDT_ASSERT_RC */

/* ------------------------------------------------------------------ */
/* assertions                                                          */
/* ------------------------------------------------------------------ */

static inline void rdt__assert_rc(int expected, int actual, const char *expr_e, const char *expr_a,
                                  const char *file, unsigned line)
{
    char msg[768];

    if (expected == actual) {
        CU_assertImplementation(CU_TRUE, line, "RDT_ASSERT_RC", file, "", CU_FALSE);
        return;
    }
    snprintf(msg, sizeof msg, "RDT_ASSERT_RC(%s, %s): expected %s (%d: %s), got %s (%d: %s)", expr_e, expr_a,
             rdt_errname(expected), expected, rdlock_strerror(expected), rdt_errname(actual), actual,
             rdlock_strerror(actual));
    fprintf(stderr, "%s:%u: %s\n", file, line, msg);
    CU_assertImplementation(CU_FALSE, line, msg, file, "", CU_FALSE); /* CUnit copies msg */
}

static inline void rdt__assert_eq_ll(long long expected, long long actual, const char *expr_e,
                                     const char *expr_a, const char *file, unsigned line)
{
    char msg[768];

    if (expected == actual) {
        CU_assertImplementation(CU_TRUE, line, "RDT_ASSERT_EQ_LL", file, "", CU_FALSE);
        return;
    }
    snprintf(msg, sizeof msg, "RDT_ASSERT_EQ_LL(%s, %s): expected %lld, got %lld", expr_e, expr_a, expected,
             actual);
    fprintf(stderr, "%s:%u: %s\n", file, line, msg);
    CU_assertImplementation(CU_FALSE, line, msg, file, "", CU_FALSE);
}

/* Each argument is evaluated exactly once. */
#define RDT_ASSERT_RC(expected, actual) \
    rdt__assert_rc((int)(expected), (int)(actual), #expected, #actual, __FILE__, __LINE__)
#define RDT_ASSERT_EQ_LL(expected, actual) \
    rdt__assert_eq_ll((long long)(expected), (long long)(actual), #expected, #actual, __FILE__, __LINE__)

/* ------------------------------------------------------------------ */
/* rdt_main                                                            */
/* ------------------------------------------------------------------ */

typedef struct rdt_test {
    const char *name;
    void (*fn)(void);
} rdt_test_t;

/* State shared by rdt_main's hooks.  volatile sig_atomic_t-sized reads of
 * a pointer are what the SIGALRM handler does. */
typedef struct rdt__main_state {
    const char *volatile current; /* name of the running test, or a phase */
    CU_TestStartMessageHandler basic_start;
    int (*setup)(void);
    int (*teardown)(void);
} rdt__main_state_t;

static inline rdt__main_state_t *rdt__state(void)
{
    static rdt__main_state_t st;
    return &st;
}

static inline void rdt__write_all(int fd, const char *s)
{
    size_t len = strlen(s);
    while (len > 0) {
        ssize_t w = write(fd, s, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        len -= (size_t)w;
    }
}

static inline void rdt__alarm_handler(int sig)
{
    const char *name = rdt__state()->current;
    (void)sig;
    /* async-signal-safe: write(2) and _exit(2) only */
    rdt__write_all(2, "\nTIMEOUT in test ");
    rdt__write_all(2, name ? name : "(none)");
    rdt__write_all(2, "\n");
    _exit(1);
}

/* Chained after CUnit basic's own start handler (which prints the name). */
static inline void rdt__test_start(const CU_pTest test, const CU_pSuite suite)
{
    rdt__state()->current = test->pName;
    if (rdt__state()->basic_start)
        rdt__state()->basic_start(test, suite);
}

/* CU_basic_run_*() installs its own handlers just before the run, so ours is
 * installed from the suite's init function, which CUnit calls after that
 * and before the first test. */
static inline int rdt__suite_init(void)
{
    rdt__main_state_t *st = rdt__state();
    CU_TestStartMessageHandler cur = CU_get_test_start_handler();
    if (cur != rdt__test_start) {
        st->basic_start = cur;
        CU_set_test_start_handler(rdt__test_start);
    }
    st->current = "(suite setup)";
    return st->setup ? st->setup() : 0;
}

static inline int rdt__suite_cleanup(void)
{
    rdt__main_state_t *st = rdt__state();
    st->current = "(suite teardown)";
    return st->teardown ? st->teardown() : 0;
}

/* Register one suite with the NULL-terminated tests, run them (all, or only
 * argv[1] when given) in CU_BRM_VERBOSE mode, and return the exit status:
 * 0 only if at least one test ran and nothing failed (no failed assertion,
 * suite setup or teardown), else 1.
 *
 * timeout_s bounds the whole program run (not each test): when it passes,
 * "TIMEOUT in test NAME" is printed and the process _exit(1)s.  0 disables
 * it.  $RDT_TIMEOUT (seconds) overrides it, e.g. for runs under valgrind. */
static inline int rdt_main(int argc, char **argv, const char *suite_name, const rdt_test_t *tests,
                           int (*setup)(void), int (*teardown)(void), unsigned timeout_s)
{
    rdt__main_state_t *st = rdt__state();
    CU_pSuite suite;
    const rdt_test_t *t;
    const char *only = argc > 1 ? argv[1] : NULL;
    const char *env = getenv("RDT_TIMEOUT");
    unsigned ran, failed;
    int err;
    struct sigaction sa;

    setvbuf(stdout, NULL, _IONBF, 0);
    st->setup = setup;
    st->teardown = teardown;
    st->current = "(startup)";

    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "CU_initialize_registry: %s\n", CU_get_error_msg());
        return 1;
    }
    suite = CU_add_suite(suite_name, rdt__suite_init, rdt__suite_cleanup);
    if (!suite) {
        fprintf(stderr, "CU_add_suite: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
    }
    for (t = tests; t && t->name; t++) {
        if (!CU_add_test(suite, t->name, t->fn)) {
            fprintf(stderr, "CU_add_test %s: %s\n", t->name, CU_get_error_msg());
            CU_cleanup_registry();
            return 1;
        }
    }

    if (env && *env)
        timeout_s = (unsigned)strtoul(env, NULL, 10);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rdt__alarm_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(timeout_s);

    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (only) {
        CU_pTest test = CU_get_test(suite, only);
        if (!test) {
            fprintf(stderr, "%s: no test named '%s' in suite %s; tests are:\n", argv[0], only, suite_name);
            for (t = tests; t && t->name; t++)
                fprintf(stderr, "  %s\n", t->name);
            alarm(0);
            CU_cleanup_registry();
            return 1;
        }
        CU_basic_run_test(suite, test);
    } else {
        CU_basic_run_tests();
    }
    alarm(0);
    st->current = "(finished)";

    ran = CU_get_number_of_tests_run();
    failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed() +
             CU_get_number_of_failure_records();
    err = CU_get_error();
    printf("\n%s: %u test(s) run, %u failed assertion(s), %u failed test(s), %u failed suite(s)%s\n",
           suite_name, ran, CU_get_number_of_failures(), CU_get_number_of_tests_failed(),
           CU_get_number_of_suites_failed(), err ? ", CUnit error" : "");
    CU_cleanup_registry();
    if (ran == 0)
        fprintf(stderr, "%s: no test ran\n", suite_name);
    return (ran > 0 && failed == 0 && err == CUE_SUCCESS) ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* processes                                                           */
/* ------------------------------------------------------------------ */

/* Fork a child that runs fn(arg) and _exit()s with its return value (low 8
 * bits).  stdio is flushed before the fork so the child does not repeat
 * the parent's buffered output, and the child never flushes it again.
 * Returns the child's pid, or -1 (printed). */
static inline pid_t rdt_fork(int (*fn)(void *), void *arg)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rdt_fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0)
        _exit(fn(arg)); /* _exit: the parent's stdio buffers and atexit handlers stay the parent's */
    return pid;
}

static inline void rdt__nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static inline long long rdt__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for child pid at most timeout_ms (< 0: forever).  Returns its exit
 * code, 128+N if signal N killed it, or -1 on timeout (it is then SIGKILLed
 * and reaped) or error.  The loop polls waitpid(WNOHANG) with short sleeps:
 * this is process reaping, not synchronisation of the code under test. */
static inline int rdt_wait(pid_t pid, int timeout_ms)
{
    long long deadline = rdt__mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    long nap = 1;
    int status;
    pid_t r;

    if (pid <= 0)
        return -1;
    for (;;) {
        r = waitpid(pid, &status, timeout_ms < 0 ? 0 : WNOHANG);
        if (r == pid) {
            if (WIFEXITED(status))
                return WEXITSTATUS(status);
            if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
            continue; /* stopped/continued: keep waiting */
        }
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "rdt_wait(%ld): %s\n", (long)pid, strerror(errno));
            return -1;
        }
        if (r == 0 && rdt__mono_ms() >= deadline) {
            fprintf(stderr, "rdt_wait: child %ld still running after %d ms: SIGKILL\n", (long)pid, timeout_ms);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        if (r == 0) {
            rdt__nap_ms(nap);
            if (nap < 10)
                nap *= 2;
        }
    }
}

/* ------------------------------------------------------------------ */
/* line protocol over pipes                                            */
/* ------------------------------------------------------------------ */

/* Two pipes between a parent and one forked child:
 *   parent writes to_child[1]  -> child reads to_child[0]
 *   child writes to_parent[1]  -> parent reads to_parent[0]
 * Typical use:
 *   rdt_pipe_t p; rdt_pipe_open(&p);
 *   pid = rdt_fork(child_fn, &p);      child_fn: rdt_pipe_child(p) first
 *   rdt_pipe_parent(&p);
 *   rdt_send(p.to_child[1], "lock"); rdt_recv(p.to_parent[0], buf, sizeof buf, 5000);
 *   ...; rdt_pipe_close(&p); rdt_wait(pid, 5000);
 * The fds are close-on-exec. */
typedef struct rdt_pipe {
    int to_child[2];
    int to_parent[2];
} rdt_pipe_t;

static inline int rdt_pipe_open(rdt_pipe_t *p)
{
    p->to_child[0] = p->to_child[1] = p->to_parent[0] = p->to_parent[1] = -1;
    if (pipe(p->to_child) != 0 || pipe(p->to_parent) != 0) {
        fprintf(stderr, "rdt_pipe_open: %s\n", strerror(errno));
        if (p->to_child[0] >= 0) {
            close(p->to_child[0]);
            close(p->to_child[1]);
        }
        p->to_child[0] = p->to_child[1] = p->to_parent[0] = p->to_parent[1] = -1;
        return -1;
    }
    fcntl(p->to_child[0], F_SETFD, FD_CLOEXEC);
    fcntl(p->to_child[1], F_SETFD, FD_CLOEXEC);
    fcntl(p->to_parent[0], F_SETFD, FD_CLOEXEC);
    fcntl(p->to_parent[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

static inline void rdt__close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* In the child: close the parent's ends. */
static inline void rdt_pipe_child(rdt_pipe_t *p)
{
    rdt__close_fd(&p->to_child[1]);
    rdt__close_fd(&p->to_parent[0]);
}

/* In the parent after the fork: close the child's ends, so that the
 * child's exit is seen as EOF. */
static inline void rdt_pipe_parent(rdt_pipe_t *p)
{
    rdt__close_fd(&p->to_child[0]);
    rdt__close_fd(&p->to_parent[1]);
}

static inline void rdt_pipe_close(rdt_pipe_t *p)
{
    rdt__close_fd(&p->to_child[0]);
    rdt__close_fd(&p->to_child[1]);
    rdt__close_fd(&p->to_parent[0]);
    rdt__close_fd(&p->to_parent[1]);
}

/* Write line and a '\n'.  0, or -1 if the line contains '\n' or the write
 * fails (EPIPE included: SIGPIPE is blocked around the write and a pending
 * one is consumed, so a dead peer never kills the caller). */
static inline int rdt_send(int fd, const char *line)
{
    size_t len = strlen(line);
    char *buf;
    const char *p;
    sigset_t pipe_set, old;
    int rc = 0, saved;

    if (memchr(line, '\n', len)) {
        fprintf(stderr, "rdt_send: line contains a newline\n");
        return -1;
    }
    buf = (char *)malloc(len + 1);
    if (!buf)
        return -1;
    memcpy(buf, line, len);
    buf[len++] = '\n';

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    for (p = buf; len > 0;) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = -1;
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    saved = errno;
    if (rc != 0 && saved == EPIPE && !sigismember(&old, SIGPIPE)) {
        struct timespec zero = { 0, 0 };
        sigset_t pending;
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE))
            sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(buf);
    errno = saved;
    return rc;
}

/* Read one line (without its '\n') into buf, NUL-terminated, waiting at
 * most timeout_ms in all (< 0: forever).  Returns its length, or -1 on
 * timeout, EOF before a full line, error, or a line longer than n-1 bytes.
 * Reads byte by byte so nothing after the line is consumed. */
static inline int rdt_recv(int fd, char *buf, size_t n, int timeout_ms)
{
    long long deadline = rdt__mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    size_t len = 0;

    if (!buf || n == 0)
        return -1;
    buf[0] = '\0';
    for (;;) {
        struct pollfd pfd;
        int left, pr;
        ssize_t r;
        char ch;

        if (timeout_ms < 0) {
            left = -1;
        } else {
            long long now = rdt__mono_ms();
            left = now >= deadline ? 0 : (int)(deadline - now);
        }
        pfd.fd = fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return -1;
        if (pr == 0) {
            buf[len] = '\0';
            return -1; /* timeout */
        }
        r = read(fd, &ch, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            buf[len] = '\0';
            return -1; /* EOF or error */
        }
        if (ch == '\n') {
            buf[len] = '\0';
            return (int)len;
        }
        if (len + 1 >= n) {
            buf[len] = '\0';
            return -1; /* too long */
        }
        buf[len++] = ch;
    }
}

#endif /* RDT_TESTUTIL_H */
