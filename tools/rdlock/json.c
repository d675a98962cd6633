/*
 * json.c - rdlock --status --json: the JSON writer.  status.c decides what
 * goes in the object (which primitives, which servers), this file how it
 * is spelled; it is written straight to the stream, piece by piece.
 *
 * --json schema (one object on one line):
 *   {
 *     "name":            string, the name; bytes that are not valid UTF-8
 *                        appear as U+FFFD (use name_hex for the exact bytes)
 *     "name_hex":        string, the name's bytes in lower-case hex
 *     "state":           "free" | "exclusive" | "shared"
 *     "holders":         [ { "owner": string ("<client id>:<thread>"),
 *                            "host": string, "pid": int, "thread": int,
 *                            "count": int (hold count as last reported),
 *                            "lease_remaining_ms": int (>= 0),
 *                            "token": int (its fencing token) } ... ]
 *     "writers_waiting": int, queued exclusive waiters
 *     "writers":         [ { "owner", "host", "pid", "thread",
 *                            "mark_remaining_ms": int } ... ] in queue order
 *     "readers_waiting": int
 *     "last_token":      int, the fencing counter of the name's slot: at
 *                        least the name's last token (0: never used)
 *     "robust":          "consistent" | "owner-dead" | "inconsistent" |
 *                        "not-recoverable"
 *     and only for the primitives the name has (rdlock_status_kinds()):
 *     "semaphore":       { "type": "plain" | "leased", "value": int (free
 *                          permits), "permits": int, "held": int,
 *                          "holders": int, "waiting": int }
 *     "run_once":        { "done": true, "owner", "host", "pid", "thread" }
 *     "condition":       { "waiters": int, "woken": int, "registrations": int }
 *     "barrier":         { "count": int, "arrived": int, "generation": int }
 *     "servers":         Redlock only: one object per master
 *     "server":          string, where the client connects, as
 *                        rdlock_client_info() says it ("host:port",
 *                        "unix:/path", ...; " (TLS TLSv1.3)" when TLS)
 *   }
 *
 * Strings are escaped here (json_str()); bytes that are not valid UTF-8
 * become U+FFFD, so that the output is always valid JSON, whatever the
 * server holds.
 */
#include "rdl_build.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rdlock.h"
#include "rdlock_tool.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len, i;
    uint32_t cp;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        cp = s[0] & 0x07;
    } else
        return 0;
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void json_str(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str), i = 0;
    fputc('"', f);
    while (i < n) {
        unsigned char ch = s[i];
        size_t l;
        switch (ch) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\b':
            fputs("\\b", f);
            break;
        case '\f':
            fputs("\\f", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (ch < 0x20 || ch == 0x7f) {
                fprintf(f, "\\u%04x", ch);
            } else if (ch < 0x80) {
                fputc(ch, f);
            } else if ((l = utf8_len(s + i, n - i)) > 0) {
                fwrite(s + i, 1, l, f);
                i += l;
                continue;
            } else {
                fputs("\\ufffd", f);
            }
        }
        i++;
    }
    fputc('"', f);
}

static void json_party(FILE *f, const rdlock_party_t *p, bool holder)
{
    fputs("{\"owner\":", f);
    json_str(f, p->owner);
    fputs(",\"host\":", f);
    json_str(f, p->host);
    fprintf(f, ",\"pid\":%ld,\"thread\":%u", p->pid, p->thread);
    if (holder)
        fprintf(f, ",\"count\":%u,\"lease_remaining_ms\":%lld,\"token\":%" PRIu64, p->count,
                p->remaining_ms > 0 ? p->remaining_ms : 0, p->token);
    else
        fprintf(f, ",\"mark_remaining_ms\":%lld", p->remaining_ms > 0 ? p->remaining_ms : 0);
    fputc('}', f);
}

/* The lock part of the object, from "{" to "robust" (no closing brace:
 * status.c adds the other primitives, the servers and "server"). */
void json_status(FILE *f, const char *name, const rdlock_status_t *st)
{
    size_t i;
    fputs("{\"name\":", f);
    json_str(f, name);
    fputs(",\"name_hex\":\"", f);
    for (i = 0; name[i] != '\0'; i++)
        fprintf(f, "%02x", (unsigned char)name[i]);
    fprintf(f, "\",\"state\":\"%s\",\"holders\":[",
            st->mode == 'x' ? "exclusive" : st->mode == 's' ? "shared" : "free");
    for (i = 0; i < st->nholders; i++) {
        if (i > 0)
            fputc(',', f);
        json_party(f, &st->holders[i], true);
    }
    fprintf(f, "],\"writers_waiting\":%zu,\"writers\":[", st->nwriters);
    for (i = 0; i < st->nwriters; i++) {
        if (i > 0)
            fputc(',', f);
        json_party(f, &st->writers[i], false);
    }
    fprintf(f, "],\"readers_waiting\":%lld,\"last_token\":%" PRIu64 ",\"robust\":\"%s\"",
            st->readers_waiting, st->fence, robust_word(st->robust));
}

/* One Redlock master's view as an element of the "servers" array: k is its
 * index (0 opens the array, which print_servers() closes), rc its answer
 * (st is read only when rc is 0). */
void json_server(FILE *f, unsigned k, const char *where, int rc, const rdlock_status_t *st)
{
    fputs(k == 0 ? ",\"servers\":[{\"server\":" : ",{\"server\":", f);
    json_str(f, where);
    if (rc != 0)
        fprintf(f, ",\"error\":\"%s\"}", rdlock_errname(rc));
    else
        fprintf(f, ",\"state\":\"%s\",\"holders\":%zu,\"writers_waiting\":%zu,\"last_token\":%" PRIu64
                   ",\"robust\":\"%s\"}",
                st->mode == 'x' ? "exclusive" : st->mode == 's' ? "shared" : "free", st->nholders, st->nwriters,
                st->fence, robust_word(st->robust));
}

/* The other primitives of the name (docs/CONTRACT.md section 12): keys
 * "semaphore", "run_once", "condition", "barrier", each only when there. */
void json_kinds(FILE *f, const rdlock_kinds_t *k)
{
    if (k->sem)
        fprintf(f, ",\"semaphore\":{\"type\":\"%s\",\"value\":%lld,\"permits\":%lld,\"held\":%lld,"
                   "\"holders\":%lld,\"waiting\":%lld}",
                k->sem_type == RDSEM_LEASED ? "leased" : "plain", k->sem_value, k->sem_permits, k->sem_held,
                k->sem_holders, k->sem_waiting);
    if (k->once) {
        fputs(",\"run_once\":{\"done\":true,\"owner\":", f);
        json_str(f, k->once_by.owner);
        fputs(",\"host\":", f);
        json_str(f, k->once_by.host);
        fprintf(f, ",\"pid\":%ld,\"thread\":%u}", k->once_by.pid, k->once_by.thread);
    }
    if (k->cond)
        fprintf(f, ",\"condition\":{\"waiters\":%lld,\"woken\":%lld,\"registrations\":%" PRIu64 "}",
                k->cond_waiters, k->cond_woken, k->cond_registrations);
    if (k->barrier)
        fprintf(f, ",\"barrier\":{\"count\":%u,\"arrived\":%u,\"generation\":%" PRIu64 "}", k->barrier_count,
                k->barrier_arrived, k->barrier_generation);
}
