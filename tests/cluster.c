/* cluster.c - see cluster.h.
 *
 * Choices, and why:
 * - cluster-node-timeout 5000: a node is flagged PFAIL after that long
 *   without an answer on the bus.  On a loaded 2-core machine (parallel
 *   builds and suites) a few hundred ms without scheduling happen; 5 s
 *   keeps a slow node from being taken for a dead one.
 * - cluster-replica-no-failover yes: no automatic failover, so a stall of
 *   the machine can never promote a replica behind a test's back.  Manual
 *   failovers (CLUSTER FAILOVER) still work; a suite that wants automatic
 *   ones passes "--cluster-replica-no-failover no".
 * - cluster-allow-replica-migration no: after a reshard that empties a
 *   master, Redis 7 would move its replica to another master on its own;
 *   the tests decide where replicas are.
 * - The bus port is chosen like the client port (a free loopback port)
 *   and given as cluster-port, not left at port + 10000, which may be
 *   anyone's.  A bus port taken in between makes redis-server exit at
 *   start; the start is then tried again with new ports.
 * - The readiness check reads CLUSTER NODES and INFO, not CLUSTER SLOTS
 *   through src/proto/slotmap.c: the fixture must not depend on the code it is
 *   used to test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NODES RDT_CLUSTER_NODES
#define MASTERS 3
#define START_TIMEOUT_MS 60000
#define CLI_TIMEOUT_MS 120000

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------------ */
/* commands                                                            */
/* ------------------------------------------------------------------ */

static redisContext *connect_node(const rdt_cluster_t *cl, int i)
{
    if (i < 0 || i >= NODES || cl->node[i].pid <= 0) {
        fprintf(stderr, "cluster: no node %d\n", i);
        return NULL;
    }
    return rdt_connect(&cl->node[i]);
}

static redisReply *vcmd(const rdt_cluster_t *cl, int i, const char *fmt, va_list ap)
{
    redisContext *c = connect_node(cl, i);
    redisReply *r;
    if (c == NULL)
        return NULL;
    r = redisvCommand(c, fmt, ap);
    if (r == NULL)
        fprintf(stderr, "cluster: node %d (port %d): %s: %s\n", i, cl->node[i].port, fmt, c->errstr);
    redisFree(c);
    return r;
}

redisReply *rdt_cluster_cmd(const rdt_cluster_t *cl, int i, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;
    va_start(ap, fmt);
    r = vcmd(cl, i, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *rdt_cluster_cmd_argv(const rdt_cluster_t *cl, int i, int argc, const char **argv, const size_t *argvlen)
{
    redisContext *c = connect_node(cl, i);
    redisReply *r;
    if (c == NULL)
        return NULL;
    r = redisCommandArgv(c, argc, argv, argvlen);
    if (r == NULL)
        fprintf(stderr, "cluster: node %d (port %d): %s: %s\n", i, cl->node[i].port, argv[0], c->errstr);
    redisFree(c);
    return r;
}

/* A reply as one line, for the reasons printed on failure. */
static void dump(const redisReply *r, char *buf, size_t n)
{
    size_t len = strlen(buf), i;
    if (len + 1 >= n)
        return;
    if (r == NULL) {
        snprintf(buf + len, n - len, "(no reply)");
        return;
    }
    switch (r->type) {
    case REDIS_REPLY_ARRAY:
        snprintf(buf + len, n - len, "[");
        for (i = 0; i < r->elements; i++) {
            if (i > 0) {
                len = strlen(buf);
                snprintf(buf + len, n - len, " ");
            }
            dump(r->element[i], buf, n);
        }
        len = strlen(buf);
        snprintf(buf + len, n - len, "]");
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(buf + len, n - len, "%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        snprintf(buf + len, n - len, "(nil)");
        break;
    case REDIS_REPLY_ERROR:
        snprintf(buf + len, n - len, "(error %s)", r->str);
        break;
    default:
        snprintf(buf + len, n - len, "%s", r->str);
        break;
    }
}

/* Set why to the message and the reply; return 0. */
static int not_ready(char *why, size_t n, const redisReply *r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int not_ready(char *why, size_t n, const redisReply *r, const char *fmt, ...)
{
    va_list ap;
    size_t len;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    len = strlen(why);
    if (r != NULL && len + 3 < n) {
        snprintf(why + len, n - len, ": ");
        dump(r, why, n);
    }
    return 0;
}

/* 1 if r is the status reply want. */
static int is_status(const redisReply *r, const char *want)
{
    return r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, want) == 0;
}

/* A command that must answer +OK: 0, or -1 (printed). */
static int cmd_ok(const rdt_cluster_t *cl, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cmd_ok(const rdt_cluster_t *cl, int i, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;
    int ok;
    char buf[512] = "";

    va_start(ap, fmt);
    r = vcmd(cl, i, fmt, ap);
    va_end(ap);
    ok = is_status(r, "OK");
    if (!ok) {
        dump(r, buf, sizeof buf);
        fprintf(stderr, "cluster: node %d (port %d): %s: %s\n", i, cl->node[i].port, fmt, buf);
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Line "name:value" of an INFO text into buf ("" if absent). */
static void info_line(const char *text, const char *name, char *buf, size_t n)
{
    size_t nl = strlen(name);
    const char *p = text;
    buf[0] = '\0';
    while (p != NULL && *p) {
        if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
            size_t k = strcspn(p + nl + 1, "\r\n");
            snprintf(buf, n, "%.*s", (int)k, p + nl + 1);
            return;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
}

int rdt_cluster_index(const rdt_cluster_t *cl, int port)
{
    int i;
    for (i = 0; i < NODES; i++)
        if (cl->node[i].port == port)
            return i;
    return -1;
}

static int index_of_id(const rdt_cluster_t *cl, const char *id)
{
    int i;
    for (i = 0; i < NODES; i++)
        if (cl->id[i][0] && strcmp(cl->id[i], id) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------------ */
/* CLUSTER NODES, as one node sees the cluster                         */
/* ------------------------------------------------------------------ */

typedef struct view_node {
    char id[41];
    int port;
    int master;         /* 1 master, 0 replica */
    char master_id[41]; /* replica: its master's id */
    char flags[128];
    char link[32];
    long long epoch;
    char slots[4096];   /* the slot ranges, without the [..] markers */
} view_node_t;

typedef struct view {
    view_node_t n[16];
    int count;
    unsigned short owner[RDT_CLUSTER_SLOTS]; /* index into n + 1, 0: none */
    char text[8192];                          /* canonical form, for comparing */
} view_t;

/* Whether the comma-separated flags hold exactly flag ("fail" is not
 * "nofailover", which every node here has). */
static int has_flag(const char *flags, const char *flag)
{
    size_t fl = strlen(flag);
    const char *p = flags;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == fl && strncmp(p, flag, fl) == 0)
            return 1;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

static int cmp_view_node(const void *a, const void *b)
{
    return strcmp(((const view_node_t *)a)->id, ((const view_node_t *)b)->id);
}

/* Node i's CLUSTER NODES into v.  0, or -1 with why. */
static int read_view(const rdt_cluster_t *cl, int i, view_t *v, char *why, size_t n)
{
    redisReply *r = rdt_cluster_cmd(cl, i, "CLUSTER NODES");
    const char *line;
    int k;

    memset(v, 0, sizeof *v);
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        not_ready(why, n, r, "node %d (port %d): CLUSTER NODES", i, cl->node[i].port);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (line = r->str; *line && v->count < (int)(sizeof v->n / sizeof v->n[0]); line = strchr(line, '\n') + 1) {
        view_node_t *vn = &v->n[v->count];
        char addr[300], master[64], slotbuf[4096];
        const char *eol = strchr(line, '\n'), *p;
        int len = eol ? (int)(eol - line) : (int)strlen(line), used = 0;
        char tmp[4096];

        snprintf(tmp, sizeof tmp, "%.*s", len, line);
        if (sscanf(tmp, "%40s %299s %127s %63s %*s %*s %lld %31s %n", vn->id, addr, vn->flags, master, &vn->epoch,
                   vn->link, &used) < 6) {
            not_ready(why, n, r, "node %d (port %d): CLUSTER NODES line '%s'", i, cl->node[i].port, tmp);
            freeReplyObject(r);
            return -1;
        }
        p = strrchr(addr, ':');
        vn->port = p ? atoi(p + 1) : 0;
        if (cl->tls) {
            /* Port 0 over a unix socket (cluster.h): the node's TLS port. */
            int j = index_of_id(cl, vn->id);
            if (j >= 0)
                vn->port = cl->node[j].port;
        }
        vn->master = has_flag(vn->flags, "master");
        snprintf(vn->master_id, sizeof vn->master_id, "%.40s", strcmp(master, "-") == 0 ? "" : master);
        /* The slots: ranges "a-b" and single slots; "[s->-id]" / "[s-<-id]"
         * are this node's own migration state, not the cluster's. */
        slotbuf[0] = '\0';
        for (p = tmp + (used > 0 ? used : len); *p;) {
            char word[64];
            int wl = 0;
            while (*p == ' ')
                p++;
            while (*p && *p != ' ' && wl < 63)
                word[wl++] = *p++;
            word[wl] = '\0';
            while (*p && *p != ' ')
                p++;
            if (wl == 0 || word[0] == '[')
                continue;
            {
                int a, b;
                if (sscanf(word, "%d-%d", &a, &b) != 2)
                    b = a = atoi(word);
                if (a >= 0 && b < RDT_CLUSTER_SLOTS)
                    for (; a <= b; a++)
                        v->owner[a] = (unsigned short)(v->count + 1);
            }
            if (strlen(slotbuf) + (size_t)wl + 2 < sizeof slotbuf) {
                strcat(slotbuf, " ");
                strcat(slotbuf, word);
            }
        }
        snprintf(vn->slots, sizeof vn->slots, "%s", slotbuf);
        v->count++;
        if (eol == NULL)
            break;
    }
    freeReplyObject(r);
    /* Canonical text: sorted by id, without what differs between viewers
     * (the myself flag, ping times, link state, replicas' epochs). */
    {
        view_node_t sorted[16];
        size_t tl = 0;
        memcpy(sorted, v->n, sizeof sorted);
        qsort(sorted, (size_t)v->count, sizeof sorted[0], cmp_view_node);
        for (k = 0; k < v->count; k++) {
            /* A master's config epoch decides who owns a contested slot:
             * compared.  A replica's is only what it last heard, and
             * nodes may show it differently: left out. */
            int w = snprintf(v->text + tl, sizeof v->text - tl, "%s %d %s %s e%lld%s\n", sorted[k].id, sorted[k].port,
                             sorted[k].master ? "master" : "replica", sorted[k].master_id,
                             sorted[k].master ? sorted[k].epoch : 0, sorted[k].slots);
            if (w < 0 || (size_t)w >= sizeof v->text - tl)
                break;
            tl += (size_t)w;
        }
    }
    return 0;
}

/* The fixture index of the node that owns slot in v, -1 if none. */
static int view_owner(const rdt_cluster_t *cl, const view_t *v, int slot)
{
    if (slot < 0 || slot >= RDT_CLUSTER_SLOTS || v->owner[slot] == 0)
        return -1;
    return index_of_id(cl, v->n[v->owner[slot] - 1].id);
}

static const view_node_t *view_find(const view_t *v, const char *id)
{
    int k;
    for (k = 0; k < v->count; k++)
        if (strcmp(v->n[k].id, id) == 0)
            return &v->n[k];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* readiness                                                           */
/* ------------------------------------------------------------------ */

static int info_ready(const rdt_cluster_t *cl, int i, char *why, size_t n)
{
    redisReply *r = rdt_cluster_cmd(cl, i, "CLUSTER INFO");
    char state[32], assigned[32], ok[32], known[32];
    int good;

    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        good = not_ready(why, n, r, "node %d (port %d): CLUSTER INFO", i, cl->node[i].port);
    } else {
        info_line(r->str, "cluster_state", state, sizeof state);
        info_line(r->str, "cluster_slots_assigned", assigned, sizeof assigned);
        info_line(r->str, "cluster_slots_ok", ok, sizeof ok);
        info_line(r->str, "cluster_known_nodes", known, sizeof known);
        good = strcmp(state, "ok") == 0 && atoi(assigned) == RDT_CLUSTER_SLOTS && atoi(ok) == RDT_CLUSTER_SLOTS &&
               atoi(known) == NODES;
        if (!good)
            not_ready(why, n, NULL,
                      "node %d (port %d): cluster_state %s, slots assigned %s ok %s, known nodes %s "
                      "(want ok, 16384, 16384, %d)",
                      i, cl->node[i].port, state, assigned, ok, known, NODES);
    }
    if (r)
        freeReplyObject(r);
    return good;
}

/* Conditions 2 and 3 of the view: clean flags, links, shape. */
static int view_sane(const rdt_cluster_t *cl, int i, const view_t *v, char *why, size_t n)
{
    int k, masters = 0;
    if (v->count != NODES)
        return not_ready(why, n, NULL, "node %d (port %d) knows %d nodes, not %d", i, cl->node[i].port, v->count,
                         NODES);
    for (k = 0; k < v->count; k++) {
        const view_node_t *vn = &v->n[k];
        if (has_flag(vn->flags, "fail") || has_flag(vn->flags, "fail?") || has_flag(vn->flags, "handshake") ||
            has_flag(vn->flags, "noaddr") ||
            strcmp(vn->link, "connected") != 0)
            return not_ready(why, n, NULL, "node %d (port %d) sees %s (port %d) as %s, link %s", i, cl->node[i].port,
                             vn->id, vn->port, vn->flags, vn->link);
        if (index_of_id(cl, vn->id) < 0)
            return not_ready(why, n, NULL, "node %d (port %d) knows a node %s (port %d) that is not ours", i,
                             cl->node[i].port, vn->id, vn->port);
        if (vn->master) {
            int j, replicas = 0;
            masters++;
            if (vn->slots[0] == '\0')
                return not_ready(why, n, NULL, "node %d (port %d): master %d serves no slot", i, cl->node[i].port,
                                 vn->port);
            for (j = 0; j < v->count; j++)
                replicas += !v->n[j].master && strcmp(v->n[j].master_id, vn->id) == 0;
            if (replicas == 0)
                return not_ready(why, n, NULL, "node %d (port %d): master %d has no replica", i, cl->node[i].port,
                                 vn->port);
        }
    }
    if (masters != MASTERS)
        return not_ready(why, n, NULL, "node %d (port %d) sees %d masters, not %d", i, cl->node[i].port, masters,
                         MASTERS);
    return 1;
}

static int replica_ready(const rdt_cluster_t *cl, int i, const view_t *v, char *why, size_t n)
{
    const view_node_t *me = view_find(v, cl->id[i]), *m;
    redisReply *r;
    char role[32], port[32], link[32], sync[32];
    int ok;

    if (me == NULL || me->master)
        return 1;
    m = view_find(v, me->master_id);
    if (m == NULL)
        return not_ready(why, n, NULL, "node %d (port %d): its master %s is unknown", i, cl->node[i].port,
                         me->master_id);
    r = rdt_cluster_cmd(cl, i, "INFO replication");
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        ok = not_ready(why, n, r, "node %d (port %d): INFO replication", i, cl->node[i].port);
    } else {
        info_line(r->str, "role", role, sizeof role);
        info_line(r->str, "master_port", port, sizeof port);
        info_line(r->str, "master_link_status", link, sizeof link);
        info_line(r->str, "master_sync_in_progress", sync, sizeof sync);
        ok = strcmp(role, "slave") == 0 && atoi(port) == m->port && strcmp(link, "up") == 0 && strcmp(sync, "0") == 0;
        if (!ok)
            not_ready(why, n, NULL, "replica %d (port %d): role %s of %s, link %s, sync in progress %s (want slave of %d, "
                      "up, 0)", i, cl->node[i].port, role, port, link, sync, m->port);
    }
    if (r)
        freeReplyObject(r);
    return ok;
}

/* Condition 4: a write to one of master i's own slots, acknowledged by a
 * replica.  The key is found by asking: a MOVED means "not this master's",
 * so the next candidate is tried (no hash function of ours involved). */
static int master_writes(const rdt_cluster_t *cl, int i, char *why, size_t n)
{
    redisContext *c = connect_node(cl, i);
    redisReply *r = NULL;
    char key[64];
    int k, ok = 0;

    if (c == NULL)
        return not_ready(why, n, NULL, "master %d (port %d): no connection", i, cl->node[i].port);
    for (k = 0; k < 64; k++) {
        snprintf(key, sizeof key, "rdt:cluster:ready:%d", k);
        r = redisCommand(c, "SET %s 1", key);
        if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0) {
            freeReplyObject(r);
            r = NULL;
            continue;
        }
        break;
    }
    if (!is_status(r, "OK")) {
        not_ready(why, n, r, "master %d (port %d): SET %s", i, cl->node[i].port, key);
    } else {
        freeReplyObject(r);
        r = redisCommand(c, "WAIT 1 2000");
        if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < 1)
            not_ready(why, n, r, "master %d (port %d): WAIT 1 2000 after a write", i, cl->node[i].port);
        else
            ok = 1;
        if (r)
            freeReplyObject(r);
        r = redisCommand(c, "DEL %s", key);
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

/* Condition 5: every range of CLUSTER SLOTS lists a replica. */
static int slots_list_replicas(const rdt_cluster_t *cl, int i, char *why, size_t n)
{
    redisReply *r = rdt_cluster_cmd(cl, i, "CLUSTER SLOTS");
    size_t k;
    int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0;

    for (k = 0; ok && k < r->elements; k++)
        ok = r->element[k]->type == REDIS_REPLY_ARRAY && r->element[k]->elements >= 4;
    if (!ok)
        not_ready(why, n, r, "node %d (port %d): CLUSTER SLOTS has a range without a replica", i, cl->node[i].port);
    if (r)
        freeReplyObject(r);
    return ok;
}

int rdt_cluster_ready(rdt_cluster_t *cl, char *why, size_t n)
{
    static view_t v0, v; /* 40 KiB each: not on the stack; the fixture is single-threaded */
    int i;

    why[0] = '\0';
    for (i = 0; i < NODES; i++)
        if (!info_ready(cl, i, why, n))
            return 0;
    for (i = 0; i < NODES; i++) {
        if (read_view(cl, i, i == 0 ? &v0 : &v, why, n) != 0)
            return 0;
        if (!view_sane(cl, i, i == 0 ? &v0 : &v, why, n))
            return 0;
        if (i > 0 && strcmp(v0.text, v.text) != 0)
            return not_ready(why, n, NULL, "nodes 0 and %d disagree:\n--- node 0 (port %d):\n%s--- node %d (port %d):\n%s",
                             i, cl->node[0].port, v0.text, i, cl->node[i].port, v.text);
    }
    for (i = 0; i < NODES; i++)
        if (!replica_ready(cl, i, &v0, why, n))
            return 0;
    for (i = 0; i < NODES; i++) {
        const view_node_t *me = view_find(&v0, cl->id[i]);
        if (me && me->master && !master_writes(cl, i, why, n))
            return 0;
    }
    for (i = 0; i < NODES; i++)
        if (!slots_list_replicas(cl, i, why, n))
            return 0;
    return 1;
}

int rdt_cluster_wait_ready(rdt_cluster_t *cl, int timeout_ms)
{
    long long end = rdt_now_ms() + timeout_ms;
    static char why[16384];
    for (;;) {
        if (rdt_cluster_ready(cl, why, sizeof why))
            return 0;
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "cluster: not ready after %d ms: %s\n", timeout_ms, why);
            return -1;
        }
        nap_ms(50);
    }
}

/* ------------------------------------------------------------------ */
/* start and stop                                                      */
/* ------------------------------------------------------------------ */

/* A currently free loopback port (never 6379), or -1. */
static int free_port(void)
{
    int tries;
    for (tries = 0; tries < 20; tries++) {
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        int port, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
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

/* $REDIS_CLI, else redis-cli beside $REDIS_SERVER when that is a path,
 * else redis-cli on PATH (execvp), into out. */
static void find_cli(char *out, size_t n)
{
    const char *env = getenv("REDIS_CLI"), *srv = getenv("REDIS_SERVER");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return;
    }
    if (srv && strchr(srv, '/')) {
        const char *slash = strrchr(srv, '/');
        char cand[1024];
        snprintf(cand, sizeof cand, "%.*s/redis-cli", (int)(slash - srv), srv);
        if (access(cand, X_OK) == 0) {
            snprintf(out, n, "%s", cand);
            return;
        }
    }
    snprintf(out, n, "redis-cli");
}

/* Run redis-cli with args (NULL-terminated), its output into log; wait at
 * most timeout_ms.  Its exit status, or -1 (printed). */
static int run_cli(const char *const *args, const char *log, int timeout_ms)
{
    char cli[1024];
    const char *argv[64];
    int argc = 0, fd, st;
    long long end;
    pid_t pid;

    find_cli(cli, sizeof cli);
    argv[argc++] = cli;
    while (*args && argc < 63)
        argv[argc++] = *args++;
    argv[argc] = NULL;
    fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "cluster: open %s: %s\n", log, strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "cluster: fork: %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        signal(SIGPIPE, SIG_DFL);
        alarm(0);
        execvp(cli, (char *const *)argv);
        _exit(127);
    }
    close(fd);
    end = rdt_now_ms() + timeout_ms;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            fprintf(stderr, "cluster: waitpid: %s\n", strerror(errno));
            return -1;
        }
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "cluster: %s %s did not finish in %d ms: killed\n", cli, argv[1], timeout_ms);
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        nap_ms(20); /* process reaping */
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return -1;
}

static void print_file(const char *path)
{
    char buf[8192];
    size_t got;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = '\0';
    fclose(f);
    fprintf(stderr, "cluster: ---- %s ----\n%s\n---- end ----\n", path, buf);
}

static int start_node(rdt_cluster_t *cl, int i, const char *extra_args)
{
    char extra[512];
    int attempt, rc;

    for (attempt = 1; attempt <= 3; attempt++) {
        cl->bus_port[i] = free_port();
        if (cl->bus_port[i] < 0)
            return -1;
        snprintf(extra, sizeof extra,
                 "--cluster-enabled yes --cluster-port %d --cluster-config-file nodes.conf "
                 "--cluster-node-timeout 5000 --cluster-replica-no-failover yes "
                 "--cluster-allow-replica-migration no %s%s",
                 cl->bus_port[i], cl->tls ? "--tls-cluster yes --tls-replication yes " : "",
                 extra_args ? extra_args : "");
        rc = cl->tls ? rdt_server_start_tls(&cl->node[i], "server", 0, extra)
                     : rdt_server_start(&cl->node[i], NULL, extra);
        if (rc == 0)
            return 0;
        fprintf(stderr, "cluster: node %d did not start (bus port %d taken?): again with new ports\n", i,
                cl->bus_port[i]);
    }
    return -1;
}

void rdt_cluster_stop(rdt_cluster_t *cl)
{
    int i;
    if (cl == NULL)
        return;
    for (i = 0; i < NODES; i++)
        if (cl->node[i].pid > 0 || cl->node[i].dir[0])
            rdt_server_stop(&cl->node[i]);
    memset(cl, 0, sizeof *cl);
}

/* redis-cli's TLS options for a TLS cluster's nodes, into args from a:
 * the new a.  paths: room for the file names. */
static int cli_tls_args(const rdt_cluster_t *cl, const char **args, int a, char paths[3][300])
{
    const char *d;
    if (!cl->tls || (d = rdt_tls_certs()) == NULL)
        return a;
    snprintf(paths[0], sizeof paths[0], "%s/ca.crt", d);
    snprintf(paths[1], sizeof paths[1], "%s/client.crt", d);
    snprintf(paths[2], sizeof paths[2], "%s/client.key", d);
    args[a++] = "--tls";
    args[a++] = "--cacert";
    args[a++] = paths[0];
    args[a++] = "--cert";
    args[a++] = paths[1];
    args[a++] = "--key";
    args[a++] = paths[2];
    return a;
}

static int cluster_start(rdt_cluster_t *cl, const char *extra_args, int tls);

int rdt_cluster_start(rdt_cluster_t *cl, const char *extra_args)
{
    return cluster_start(cl, extra_args, 0);
}

int rdt_cluster_start_tls(rdt_cluster_t *cl, const char *extra_args)
{
    return cluster_start(cl, extra_args, 1);
}

static int cluster_start(rdt_cluster_t *cl, const char *extra_args, int tls)
{
    char addrs[NODES][32], log[400], paths[3][300];
    const char *args[NODES + 16];
    int i, a = 0, rc;

    memset(cl, 0, sizeof *cl);
    cl->tls = tls;
    if (tls && rdt_tls_certs() == NULL)
        return -1;
    for (i = 0; i < NODES; i++)
        if (start_node(cl, i, extra_args) != 0)
            goto fail;
    for (i = 0; i < NODES; i++) {
        redisReply *r = rdt_cluster_cmd(cl, i, "CLUSTER MYID");
        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
            char buf[256] = "";
            dump(r, buf, sizeof buf);
            fprintf(stderr, "cluster: node %d: CLUSTER MYID: %s\n", i, buf);
            if (r)
                freeReplyObject(r);
            goto fail;
        }
        memcpy(cl->id[i], r->str, 41);
        freeReplyObject(r);
    }
    args[a++] = "--cluster";
    args[a++] = "create";
    for (i = 0; i < NODES; i++) {
        snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d", cl->node[i].port);
        args[a++] = addrs[i];
    }
    args[a++] = "--cluster-replicas";
    args[a++] = "1";
    args[a++] = "--cluster-yes";
    a = cli_tls_args(cl, args, a, paths);
    args[a] = NULL;
    snprintf(log, sizeof log, "%s/cluster-create.log", cl->node[0].dir);
    rc = run_cli(args, log, CLI_TIMEOUT_MS);
    if (rc != 0) {
        fprintf(stderr, "cluster: redis-cli --cluster create exited with %d\n", rc);
        print_file(log);
        goto fail;
    }
    if (rdt_cluster_wait_ready(cl, START_TIMEOUT_MS) != 0) {
        print_file(log);
        goto fail;
    }
    return 0;
fail:
    rdt_cluster_stop(cl);
    return -1;
}

/* ------------------------------------------------------------------ */
/* questions                                                           */
/* ------------------------------------------------------------------ */

int rdt_cluster_is_master(const rdt_cluster_t *cl, int i)
{
    redisReply *r = rdt_cluster_cmd(cl, i, "ROLE");
    int m = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING)
        m = strcmp(r->element[0]->str, "master") == 0;
    if (r)
        freeReplyObject(r);
    return m;
}

int rdt_cluster_replica_of(const rdt_cluster_t *cl, int m)
{
    static view_t v;
    char why[512];
    int k;
    if (read_view(cl, m, &v, why, sizeof why) != 0) {
        fprintf(stderr, "cluster: %s\n", why);
        return -1;
    }
    for (k = 0; k < v.count; k++)
        if (!v.n[k].master && strcmp(v.n[k].master_id, cl->id[m]) == 0 && !has_flag(v.n[k].flags, "fail"))
            return index_of_id(cl, v.n[k].id);
    return -1;
}

int rdt_cluster_key_slot(const rdt_cluster_t *cl, const char *key, size_t len)
{
    const char *argv[3] = { "CLUSTER", "KEYSLOT", key };
    size_t argvlen[3] = { 7, 7, len };
    redisReply *r = rdt_cluster_cmd_argv(cl, 0, 3, argv, argvlen);
    int slot = -1;
    if (r && r->type == REDIS_REPLY_INTEGER)
        slot = (int)r->integer;
    if (r)
        freeReplyObject(r);
    return slot;
}

int rdt_cluster_slot_owner(const rdt_cluster_t *cl, int viewer, int slot)
{
    static view_t v;
    char why[512];
    if (read_view(cl, viewer, &v, why, sizeof why) != 0) {
        fprintf(stderr, "cluster: %s\n", why);
        return -1;
    }
    return view_owner(cl, &v, slot);
}

int rdt_cluster_owners(const rdt_cluster_t *cl, int viewer, int *owner)
{
    static view_t v;
    char why[512];
    int s;
    if (read_view(cl, viewer, &v, why, sizeof why) != 0) {
        fprintf(stderr, "cluster: %s\n", why);
        return -1;
    }
    for (s = 0; s < RDT_CLUSTER_SLOTS; s++)
        owner[s] = view_owner(cl, &v, s);
    return 0;
}

int rdt_cluster_master_of_key(const rdt_cluster_t *cl, const char *key, size_t len)
{
    int slot = rdt_cluster_key_slot(cl, key, len);
    return slot < 0 ? -1 : rdt_cluster_slot_owner(cl, 0, slot);
}

/* ------------------------------------------------------------------ */
/* moves                                                               */
/* ------------------------------------------------------------------ */

int rdt_cluster_migrate_begin(rdt_cluster_t *cl, int slot, int from, int to)
{
    if (cmd_ok(cl, to, "CLUSTER SETSLOT %d IMPORTING %s", slot, cl->id[from]) != 0 ||
        cmd_ok(cl, from, "CLUSTER SETSLOT %d MIGRATING %s", slot, cl->id[to]) != 0)
        return -1;
    return 0;
}

/* MIGRATE keys[0, n) from `from` to `to`: 0 or -1 (printed). */
static int migrate_batch(rdt_cluster_t *cl, int from, int to, const char *const *keys, const size_t *lens, size_t n)
{
    const char *argv[6 + 128];
    size_t argvlen[6 + 128], k;
    char port[16];
    redisReply *r;
    int ok;

    snprintf(port, sizeof port, "%d", cl->node[to].port);
    argv[0] = "MIGRATE";
    argv[1] = "127.0.0.1";
    argv[2] = port;
    argv[3] = "";
    argv[4] = "0";
    argv[5] = "10000";
    argv[6] = "KEYS";
    for (k = 0; k < 7; k++)
        argvlen[k] = strlen(argv[k]);
    for (k = 0; k < n; k++) {
        argv[7 + k] = keys[k];
        argvlen[7 + k] = lens[k];
    }
    r = rdt_cluster_cmd_argv(cl, from, (int)(7 + n), argv, argvlen);
    ok = is_status(r, "OK") || is_status(r, "NOKEY");
    if (!ok) {
        char buf[512] = "";
        dump(r, buf, sizeof buf);
        fprintf(stderr, "cluster: MIGRATE %zu key(s) from node %d to %d: %s\n", n, from, to, buf);
    }
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int rdt_cluster_migrate_keys(rdt_cluster_t *cl, int slot, int from, int to, const char *const *keys, size_t nkeys)
{
    if (keys != NULL) {
        size_t lens[128], k;
        for (k = 0; k < nkeys; k += 100) {
            size_t j, m = nkeys - k < 100 ? nkeys - k : 100;
            for (j = 0; j < m; j++)
                lens[j] = strlen(keys[k + j]);
            if (migrate_batch(cl, from, to, keys + k, lens, m) != 0)
                return -1;
        }
        return 0;
    }
    for (;;) {
        redisReply *r = rdt_cluster_cmd(cl, from, "CLUSTER GETKEYSINSLOT %d 100", slot);
        const char *ks[100];
        size_t lens[100], k;
        int rc;
        if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
            char buf[256] = "";
            dump(r, buf, sizeof buf);
            fprintf(stderr, "cluster: node %d: CLUSTER GETKEYSINSLOT %d: %s\n", from, slot, buf);
            if (r)
                freeReplyObject(r);
            return -1;
        }
        if (r->elements == 0) {
            freeReplyObject(r);
            return 0;
        }
        for (k = 0; k < r->elements && k < 100; k++) {
            ks[k] = r->element[k]->str;
            lens[k] = r->element[k]->len;
        }
        rc = migrate_batch(cl, from, to, ks, lens, k);
        freeReplyObject(r);
        if (rc != 0)
            return -1;
    }
}

int rdt_cluster_wait_owner(rdt_cluster_t *cl, int slot, int owner, int timeout_ms)
{
    long long end = rdt_now_ms() + timeout_ms;
    static view_t v;
    char why[512];
    int i, seen = -1;

    for (;;) {
        for (i = 0; i < NODES; i++) {
            if (read_view(cl, i, &v, why, sizeof why) != 0) {
                seen = -2;
                break;
            }
            seen = view_owner(cl, &v, slot);
            if (seen != owner)
                break;
        }
        if (i == NODES)
            return 0;
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "cluster: after %d ms node %d (port %d) still names node %d, not %d, for slot %d%s%s\n",
                    timeout_ms, i, cl->node[i].port, seen, owner, slot, seen == -2 ? ": " : "",
                    seen == -2 ? why : "");
            return -1;
        }
        nap_ms(20);
    }
}

int rdt_cluster_migrate_end(rdt_cluster_t *cl, int slot, int to)
{
    static view_t v;
    char why[512];
    int i, from = -1;

    /* The source is whoever owns the slot now, as `to` sees it. */
    if (read_view(cl, to, &v, why, sizeof why) != 0) {
        fprintf(stderr, "cluster: %s\n", why);
        return -1;
    }
    from = view_owner(cl, &v, slot);
    /* The target first: once it owns the slot it bumps its config epoch
     * and the others follow it; then the source, which stops sending ASK;
     * then the other masters, which would learn it by gossip anyway. */
    if (cmd_ok(cl, to, "CLUSTER SETSLOT %d NODE %s", slot, cl->id[to]) != 0)
        return -1;
    if (from >= 0 && from != to && cmd_ok(cl, from, "CLUSTER SETSLOT %d NODE %s", slot, cl->id[to]) != 0)
        return -1;
    for (i = 0; i < NODES; i++) {
        if (i == to || i == from || rdt_cluster_is_master(cl, i) != 1)
            continue;
        if (cmd_ok(cl, i, "CLUSTER SETSLOT %d NODE %s", slot, cl->id[to]) != 0)
            return -1;
    }
    return rdt_cluster_wait_owner(cl, slot, to, 30000);
}

int rdt_cluster_migrate_cancel(rdt_cluster_t *cl, int slot, int from, int to)
{
    int a = cmd_ok(cl, from, "CLUSTER SETSLOT %d STABLE", slot);
    int b = cmd_ok(cl, to, "CLUSTER SETSLOT %d STABLE", slot);
    return a == 0 && b == 0 ? 0 : -1;
}

int rdt_cluster_migrate_slot(rdt_cluster_t *cl, int slot, int from, int to, rdt_mig_cb cb, void *arg)
{
    if (rdt_cluster_migrate_begin(cl, slot, from, to) != 0)
        return -1;
    if (cb && cb(cl, slot, RDT_MIG_OPEN, arg) != 0)
        return -1;
    if (rdt_cluster_migrate_keys(cl, slot, from, to, NULL, 0) != 0)
        return -1;
    if (cb && cb(cl, slot, RDT_MIG_KEYS, arg) != 0)
        return -1;
    return rdt_cluster_migrate_end(cl, slot, to);
}

int rdt_cluster_failover(rdt_cluster_t *cl, int m, int timeout_ms)
{
    long long end = rdt_now_ms() + timeout_ms, resend;
    int r = rdt_cluster_replica_of(cl, m);

    if (r < 0) {
        fprintf(stderr, "cluster: master %d (port %d) has no replica to fail over to\n", m, cl->node[m].port);
        return -1;
    }
    if (cmd_ok(cl, r, "CLUSTER FAILOVER") != 0)
        return -1;
    /* Redis gives a manual failover 5 s (CLUSTER_MF_TIMEOUT) to catch up
     * with the master's offset and win the election; on a loaded machine
     * it can run out, silently.  The roles tell. */
    resend = rdt_now_ms() + 8000;
    for (;;) {
        int rm = rdt_cluster_is_master(cl, r), mm = rdt_cluster_is_master(cl, m);
        if (rm == 1 && mm == 0)
            break;
        if (rdt_now_ms() >= end) {
            fprintf(stderr, "cluster: failover of master %d (port %d) to %d (port %d): after %d ms ROLE says %d / %d "
                    "(1 master, 0 slave)\n", m, cl->node[m].port, r, cl->node[r].port, timeout_ms, mm, rm);
            return -1;
        }
        if (rm == 0 && rdt_now_ms() >= resend) {
            fprintf(stderr, "cluster: manual failover to node %d not done after 8 s: sent again\n", r);
            if (cmd_ok(cl, r, "CLUSTER FAILOVER") != 0)
                return -1;
            resend = rdt_now_ms() + 8000;
        }
        nap_ms(20);
    }
    {
        long long left = end - rdt_now_ms();
        if (rdt_cluster_wait_ready(cl, left > 1000 ? (int)left : 1000) != 0)
            return -1;
    }
    return r;
}

int rdt_cluster_reshard(rdt_cluster_t *cl, int from, int to, int nslots, int timeout_ms)
{
    char addr[32], count[16], log[400], paths[3][300];
    const char *args[24];
    long long start = rdt_now_ms();
    int a = 0, rc;

    snprintf(addr, sizeof addr, "127.0.0.1:%d", cl->node[from].port);
    snprintf(count, sizeof count, "%d", nslots);
    snprintf(log, sizeof log, "%s/cluster-reshard.log", cl->node[0].dir);
    args[a++] = "--cluster";
    args[a++] = "reshard";
    args[a++] = addr;
    args[a++] = "--cluster-from";
    args[a++] = cl->id[from];
    args[a++] = "--cluster-to";
    args[a++] = cl->id[to];
    args[a++] = "--cluster-slots";
    args[a++] = count;
    args[a++] = "--cluster-yes";
    a = cli_tls_args(cl, args, a, paths);
    args[a] = NULL;
    rc = run_cli(args, log, timeout_ms);
    if (rc != 0) {
        fprintf(stderr, "cluster: redis-cli --cluster reshard exited with %d\n", rc);
        print_file(log);
        return -1;
    }
    {
        long long left = timeout_ms - (rdt_now_ms() - start);
        return rdt_cluster_wait_ready(cl, left > 1000 ? (int)left : 1000);
    }
}
