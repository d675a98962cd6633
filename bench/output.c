/* output.c - what rdlock-bench prints: the table on stdout (out), hard
 * errors on stderr (fail), the library's log lines (logger), and the one
 * line of JSON with every figure, built key by key as the steps report. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int hard_errors;
int lib_warnings;
int log_verbose;
const char *phase = "start";

static char json[32768];
static size_t json_len;

void json_begin(void)
{
    json[0] = '{';
    json_len = 1;
}

static void json_raw(const char *key, const char *val)
{
    int n = snprintf(json + json_len, sizeof json - json_len, "%s\"%s\":%s", json_len > 1 ? "," : "",
                     key, val);
    if (n > 0 && (size_t)n < sizeof json - json_len)
        json_len += (size_t)n;
}

void json_num(const char *key, double v)
{
    char b[64];
    if (isnan(v) || isinf(v))
        snprintf(b, sizeof b, "null");
    else if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
        snprintf(b, sizeof b, "%.0f", v);
    else
        snprintf(b, sizeof b, "%.4g", v);
    json_raw(key, b);
}

void json_bool(const char *key, int v)
{
    json_raw(key, v ? "true" : "false");
}

void json_str(const char *key, const char *v)
{
    char b[256];
    size_t i, o = 0;
    b[o++] = '"';
    for (i = 0; v[i] != '\0' && o < sizeof b - 3; i++)
        if (v[i] != '"' && v[i] != '\\' && (unsigned char)v[i] >= 0x20)
            b[o++] = v[i];
    b[o++] = '"';
    b[o] = '\0';
    json_raw(key, b);
}

void json_print(void)
{
    json[json_len++] = '}';
    json[json_len] = '\0';
    printf("%s\n", json);
}

void out(const char *fmt, ...)
{
    va_list ap;
    if (json_only)
        return;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

void fail(const char *fmt, ...)
{
    va_list ap;
    hard_errors++;
    fprintf(stderr, "rdlock-bench: ERROR: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void logger(int level, const char *msg, void *arg)
{
    static const char *const lv[] = { "ERROR", "WARN", "INFO", "DEBUG" };
    struct timespec ts;
    (void)arg;
    if (level <= RDLOCK_LOG_WARN)
        __atomic_add_fetch(&lib_warnings, 1, __ATOMIC_RELAXED);
    if (level <= RDLOCK_LOG_WARN || log_verbose) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fprintf(stderr, "rdlock-bench: [%ld.%03ld pid %ld, %s] librdlock %s: %s\n", (long)ts.tv_sec,
                ts.tv_nsec / 1000000, (long)getpid(), phase, level >= 0 && level <= 3 ? lv[level] : "?", msg);
    }
}

const char *mark(int ok)
{
    return ok ? "ok" : "MISSED";
}
