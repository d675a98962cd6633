/* fuzz_reply.c - libFuzzer target for everything librdlock reads from a
 * server: the input is a byte stream as a connection would deliver it;
 * hiredis parses it into replies (as on our connections), and every reply,
 * and every element of it down to a small depth, goes through every
 * decoder of src/proto/reply.c: the scripts' replies (acquire, release, renew,
 * status, kinds), the subscription's messages, a sentinel's notifications and
 * the error classification.  A
 * malicious or broken server (or a man in the middle of a plain TCP link)
 * must get at most EIO out of the library, never a crash, a leak or
 * undefined behaviour.  Built and run by tests/fuzz/run-fuzz.sh. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "rdlock.h"
#include "proto/reply.h"

/* hiredis 0.14 allocates an array's element table as soon as it reads its
 * header, so "*2000000000\r\n" asks for 16 GB: a limit of hiredis, not of
 * our decoders.  Inputs that declare such lengths are skipped. */
static int declares_huge(const uint8_t *d, size_t n)
{
    size_t i;
    for (i = 0; i + 1 < n; i++)
        if (d[i] == '*' || d[i] == '$') {
            size_t j = i + 1;
            unsigned long v = 0;
            if (j < n && d[j] == '-')
                j++;
            while (j < n && d[j] >= '0' && d[j] <= '9' && v <= 1000000)
                v = v * 10 + (unsigned long)(d[j++] - '0');
            if (v > 100000)
                return 1;
        }
    return 0;
}

static void exercise(const redisReply *r, int depth)
{
    rdl_acquired_t a;
    rdl_released_t rel;
    rdl_event_t ev;
    rdlock_status_t st;
    rdlock_kinds_t k;
    int res[64];
    size_t i, n;
    char addr[32];

    (void)rdl_reply_error(r);
    (void)rdl_reply_transient(r);
    (void)rdl_reply_noscript(r);
    (void)rdl_reply_noreplicas(r);
    memset(addr, 'x', sizeof addr);
    switch (rdl_reply_sentinel(r, "mymaster", addr, sizeof addr)) {
    case RDL_SEV_SWITCH:
    case RDL_SEV_PROMOTED:
        /* A bounded "ip:port" with a port of digits. */
        if (memchr(addr, '\0', sizeof addr) == NULL || strrchr(addr, ':') == NULL ||
            strspn(strrchr(addr, ':') + 1, "0123456789") != strlen(strrchr(addr, ':') + 1))
            __builtin_trap();
        break;
    default:
        break;
    }
    if (rdl_reply_acquire(r, &a) == ESTALE && a.now < 0)
        __builtin_trap(); /* a void attempt's server clock is never negative */
    if (memchr(a.prev, '\0', sizeof a.prev) == NULL)
        __builtin_trap(); /* the marker to restore is a bounded string */
    if (a.now < 0)
        __builtin_trap();
    if (rdl_reply_release(r, &rel) == 0 && rel.kind == 1 && (rel.wholen == 0 || rel.wholen >= RDL_WHO_MAX))
        __builtin_trap(); /* the decoder promised a bounded owner id */
    n = r->type == REDIS_REPLY_ARRAY ? r->elements % 65 : 1;
    if (rdl_reply_renew(r, n, res) == 0)
        for (i = 0; i < n; i++)
            if (res[i] != 0 && res[i] != 1)
                __builtin_trap();
    switch (rdl_reply_event(r, ":c", &ev)) {
    case RDL_EV_GRANT:
        if (ev.ownerlen == 0 || ev.token == 0 || memchr(ev.owner, ' ', ev.ownerlen) != NULL)
            __builtin_trap();
        /* fall through */
    case RDL_EV_WAKE:
    case RDL_EV_SUBSCRIBED:
    case RDL_EV_UNSUBSCRIBED:
        if (ev.key == NULL)
            __builtin_trap();
        break;
    default:
        break;
    }
    if (rdl_reply_status(r, &st) == 0)
        rdlock_status_free(&st);
    k.size = sizeof k;
    if (rdl_reply_kinds(r, &k) != 0 && (k.sem || k.once || k.cond || k.barrier))
        __builtin_trap(); /* a failed decode leaves nothing behind */
    if (k.size != sizeof k)
        __builtin_trap();
    if (r->type == REDIS_REPLY_ARRAY && depth < 3)
        for (i = 0; i < r->elements; i++)
            exercise(r->element[i], depth + 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The decoders log what they reject; the fuzzer would drown in it. */
static void quiet(int level, const char *msg, void *arg)
{
    (void)level;
    (void)msg;
    (void)arg;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rdlock_set_logger(quiet, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *rd;
    int i;

    if (declares_huge(data, size))
        return 0;
    rd = redisReaderCreate();
    if (rd == NULL)
        return 0;
    if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK)
        for (i = 0; i < 32; i++) {
            void *r = NULL;
            if (redisReaderGetReply(rd, &r) != REDIS_OK || r == NULL)
                break;
            exercise(r, 0);
            freeReplyObject(r);
        }
    redisReaderFree(rd);
    return 0;
}
