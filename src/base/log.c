/* log.c - the log hook.  The default sink prints ERROR and WARN lines to
 * stderr; rdlock_set_logger() replaces it.  The hook is read and replaced
 * under a lock so that a logger swapped while the background thread logs
 * never sees a torn (fn, arg) pair. */
#include "rdl_build.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static rdlock_log_fn log_fn;
static void *log_arg;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* rdlock_last_error(): this thread's last ERROR or WARN line and where it
 * came from (the config loader says so while it runs). */
static __thread char last_text[512];
static __thread int last_src = RDLOCK_ERRSRC_NONE;
static __thread int cur_src = RDLOCK_ERRSRC_REDIS;

int rdl_log_source(int src)
{
    int was = cur_src;
    cur_src = src;
    return was;
}

int rdlock_last_error(char *buf, size_t n)
{
    if (buf != NULL && n > 0)
        snprintf(buf, n, "%s", last_text);
    return last_src;
}

void rdl_log_atfork(int after)
{
    if (after)
        pthread_mutex_unlock(&log_mu);
    else
        pthread_mutex_lock(&log_mu);
}

void rdlock_set_logger(rdlock_log_fn fn, void *arg)
{
    pthread_mutex_lock(&log_mu);
    log_fn = fn;
    log_arg = arg;
    pthread_mutex_unlock(&log_mu);
}

void rdl_log(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    rdlock_log_fn fn;
    void *arg;

    if (level < RDLOCK_LOG_ERROR)
        level = RDLOCK_LOG_ERROR;
    if (level > RDLOCK_LOG_DEBUG)
        level = RDLOCK_LOG_DEBUG;
    pthread_mutex_lock(&log_mu);
    fn = log_fn;
    arg = log_arg;
    pthread_mutex_unlock(&log_mu);
    if (fn == NULL && level > RDLOCK_LOG_WARN)
        return;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (level <= RDLOCK_LOG_WARN) {
        size_t n = strnlen(buf, sizeof last_text - 1);
        memcpy(last_text, buf, n); /* cut to fit: the start says why */
        last_text[n] = '\0';
        last_src = cur_src;
    }

    if (fn != NULL)
        fn(level, buf, arg);
    else
        fprintf(stderr, "rdlock: %s: %s\n", level_names[level], buf);
}
