/*
 * status.c - rdlock --status NAME: who holds NAME, who waits, the last
 * fencing token, the robust state; then NAME's other primitives and, with
 * Redlock, each master's view.  As text for a person (here), or as one
 * JSON object (--json: json.c writes it, this file decides what goes in).
 *
 * Only public calls: rdlock_status_name(), rdlock_status_name_on(),
 * rdlock_status_kinds() and rdlock_client_info().  Host names and owner
 * ids come from the server, so the text shows their control bytes
 * escaped (print_safe()).
 */
#include "rdl_build.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rdlock.h"
#include "rdlock_tool.h"

/* The robust state as one word, the same in the text and in JSON. */
const char *robust_word(int r)
{
    switch (r) {
    case RDLOCK_STATE_OWNER_DEAD:
        return "owner-dead";
    case RDLOCK_STATE_INCONSISTENT:
        return "inconsistent";
    case RDLOCK_STATE_NOTRECOVERABLE:
        return "not-recoverable";
    default:
        return "consistent";
    }
}

/* Host names and owner ids come from the server: show them safely. */
static void print_safe(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
}

static void print_human(FILE *f, const rdlock_status_t *st)
{
    size_t i;
    fprintf(f, "lock %s: %s", qname,
            st->mode == 'x' ? "held exclusive" : st->mode == 's' ? "held shared" : "free");
    if (st->mode == 's')
        fprintf(f, " (%zu holder%s)", st->nholders, st->nholders == 1 ? "" : "s");
    fputc('\n', f);
    for (i = 0; i < st->nholders; i++) {
        const rdlock_party_t *p = &st->holders[i];
        long long ms = p->remaining_ms > 0 ? p->remaining_ms : 0;
        fputs("  holder: host ", f);
        print_safe(f, p->host[0] ? p->host : "?");
        fprintf(f, ", pid %ld, thread %u, hold count %u, lease %lld.%03lld s left, token %" PRIu64 "\n",
                p->pid, p->thread, p->count, ms / 1000, ms % 1000, p->token);
        fputs("          owner ", f);
        print_safe(f, p->owner);
        fputc('\n', f);
    }
    if (st->nwriters == 0)
        fputs("writers waiting: none\n", f);
    else
        fprintf(f, "writers waiting: %zu (new shared holders wait behind them)\n", st->nwriters);
    for (i = 0; i < st->nwriters; i++) {
        const rdlock_party_t *p = &st->writers[i];
        long long ms = p->remaining_ms > 0 ? p->remaining_ms : 0;
        fputs("  writer: host ", f);
        print_safe(f, p->host[0] ? p->host : "?");
        fprintf(f, ", pid %ld, thread %u, queue mark %lld.%03lld s left\n", p->pid, p->thread, ms / 1000,
                ms % 1000);
    }
    fprintf(f, "readers waiting: %lld\n", st->readers_waiting);
    fprintf(f, "fencing counter: %" PRIu64 "\n", st->fence);
    fprintf(f, "robust state: %s", robust_word(st->robust));
    switch (st->robust) {
    case RDLOCK_STATE_OWNER_DEAD:
        fputs(" (the last exclusive hold ended by lease expiry or loss, not by unlock)", f);
        break;
    case RDLOCK_STATE_INCONSISTENT:
        fputs(" (handed to a robust owner with EOWNERDEAD, not yet made consistent)", f);
        break;
    case RDLOCK_STATE_NOTRECOVERABLE:
        fprintf(f, " (every acquisition fails until: rdlock --reset %s)", qname);
        break;
    default:
        break;
    }
    fputc('\n', f);
}

/* With several servers (Redlock's masters), each one's view in a line
 * (JSON: a "servers" array before the closing brace), after the summary:
 * which of them hold the name, and how. */
static void print_servers(FILE *f, rdlock_client_t *c, const char *name, bool json)
{
    char where[300];
    rdlock_status_t st;
    unsigned k;
    int rc = rdlock_status_name_on(c, name, 1, where, sizeof where, &st);
    if (rc == EINVAL)
        return; /* one server: the summary is its view */
    if (rc == 0)
        rdlock_status_free(&st);
    if (!json)
        fputs("masters:\n", f);
    for (k = 0;; k++) {
        rc = rdlock_status_name_on(c, name, k, where, sizeof where, &st);
        if (rc == EINVAL)
            break;
        if (json) {
            json_server(f, k, where, rc, &st);
        } else if (rc != 0) {
            fprintf(f, "  %s: no answer (%s)\n", where, rdlock_errname(rc));
        } else {
            fprintf(f, "  %s: %s", where, st.mode == 'x' ? "held exclusive" : st.mode == 's' ? "held shared" : "free");
            if (st.mode != 0)
                fprintf(f, " (%zu holder%s)", st.nholders, st.nholders == 1 ? "" : "s");
            fprintf(f, ", writers waiting %zu, counter %" PRIu64 ", robust %s\n", st.nwriters, st.fence,
                    robust_word(st.robust));
        }
        if (rc == 0)
            rdlock_status_free(&st);
    }
    if (json)
        fputc(']', f); /* json_server() opened it */
}

/* The other primitives of the name (docs/CONTRACT.md section 12), one
 * block each that exists; nothing for those that do not (JSON: json_kinds()). */
static void print_kinds(FILE *f, const rdlock_kinds_t *k)
{
    if (k->sem) {
        fprintf(f, "semaphore: value %lld", k->sem_value);
        if (k->sem_type == RDSEM_LEASED)
            fprintf(f, ", %lld of %lld permit%s held by %lld thread%s (leased)", k->sem_held, k->sem_permits,
                    k->sem_permits == 1 ? "" : "s", k->sem_holders, k->sem_holders == 1 ? "" : "s");
        else
            fputs(" (plain)", f);
        fprintf(f, ", %lld waiting\n", k->sem_waiting);
    }
    if (k->once) {
        fputs("run-once: done (by host ", f);
        print_safe(f, k->once_by.host[0] ? k->once_by.host : "?");
        fprintf(f, ", pid %ld, thread %u)\n", k->once_by.pid, k->once_by.thread);
    }
    if (k->cond) {
        fprintf(f, "condition: %lld waiter%s registered", k->cond_waiters, k->cond_waiters == 1 ? "" : "s");
        if (k->cond_woken > 0)
            fprintf(f, ", %lld woken and not back yet", k->cond_woken);
        fputc('\n', f);
    }
    if (k->barrier)
        fprintf(f, "barrier: %u of %u arrived, generation %" PRIu64 "\n", k->barrier_arrived, k->barrier_count,
                k->barrier_generation);
}

int do_status(rdlock_client_t *c, const opts_t *o)
{
    rdlock_status_t st;
    rdlock_kinds_t k;
    int rc = rdlock_status_name(c, o->name, &st);
    if (rc != 0)
        return op_failed(c, rc, "--status");
    k.size = sizeof k;
    if ((rc = rdlock_status_kinds(c, o->name, &k)) != 0) {
        rdlock_status_free(&st);
        return op_failed(c, rc, "--status");
    }
    if (o->json) {
        rdlock_client_info_t info;
        json_status(stdout, o->name, &st);
        json_kinds(stdout, &k);
        print_servers(stdout, c, o->name, true);
        /* Where it was asked, and how: "(TLS TLSv1.3)" when TLS. */
        if (rdlock_client_info(c, &info) == 0) {
            fputs(", \"server\": ", stdout);
            json_str(stdout, info.server);
        }
        fputs("}\n", stdout);
    } else {
        rdlock_client_info_t info;
        print_human(stdout, &st);
        print_servers(stdout, c, o->name, false);
        print_kinds(stdout, &k);
        if (rdlock_client_info(c, &info) == 0) {
            fputs("server: ", stdout);
            print_safe(stdout, info.server);
            fputc('\n', stdout);
        }
    }
    rdlock_status_free(&st);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        msg("--status: cannot write the output: %s", strerror(errno));
        return EXIT_OSERR;
    }
    return 0;
}
