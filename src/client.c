/* client.c - clients, their connection pool, the process default client
 * and fork() handling.  See client.h. */
#include "rdl_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "client.h"
#include "events.h"
#include "handle.h"
#include "hold.h"
#include "log.h"
#include "timeutil.h"
#include "tls.h"
#include "topology.h"
#include "waitq.h"

#ifndef RDLOCK_SYSCONFDIR
#define RDLOCK_SYSCONFDIR "/etc"
#endif

#define RDL_POOL_MAX 16

/* Lock order: default_mu -> registry_mu -> client mu -> the leaf locks
 * (handle resolve, log).  The fork handlers take them all in that order so
 * that the child never inherits a mutex locked by a thread that does not
 * exist there. */
static pthread_mutex_t default_mu = PTHREAD_MUTEX_INITIALIZER;
static rdlock_client_t *default_client;
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static rdlock_client_t *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ---------------------------------------------------------------- ids */

static unsigned thread_counter;
static __thread unsigned thread_no;

unsigned rdl_thread_no(void)
{
    if (thread_no == 0)
        thread_no = __atomic_add_fetch(&thread_counter, 1, __ATOMIC_RELAXED);
    return thread_no;
}

size_t rdl_owner(const rdlock_client_t *c, unsigned thread, char *buf)
{
    size_t n;
    memcpy(buf, c->id, RDL_ID_HEX);
    buf[RDL_ID_HEX] = ':';
    n = RDL_ID_HEX + 1 + rdl_fmt_u64(buf + RDL_ID_HEX + 1, thread);
    buf[n] = '\0';
    return n;
}

static int new_id(char *hex)
{
    unsigned char b[16];
    size_t got = 0;
    int i;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rdl_log(RDLOCK_LOG_ERROR, "getrandom failed: %s", strerror(errno));
            return EIO;
        }
        got += (size_t)n;
    }
    for (i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    return 0;
}

/* ---------------------------------------------------------------- fork */

static void atfork_prepare(void)
{
    rdlock_client_t *c;
    RDL_CHECK(pthread_mutex_lock(&default_mu));
    RDL_CHECK(pthread_mutex_lock(&registry_mu));
    for (c = registry; c != NULL; c = c->reg_next)
        RDL_LOCK(c);
    /* Leaf locks last: they are taken while holding a client's mutex (a
     * log line from the watchdog), never the other way round. */
    rdl_handle_atfork(0);
    rdl_log_atfork(0);
}

static void atfork_parent(void)
{
    rdlock_client_t *c;
    rdl_log_atfork(1);
    rdl_handle_atfork(1);
    for (c = registry; c != NULL; c = c->reg_next)
        RDL_UNLOCK(c);
    RDL_CHECK(pthread_mutex_unlock(&registry_mu));
    RDL_CHECK(pthread_mutex_unlock(&default_mu));
}

/* The child holds none of the parent's locks (docs/CONTRACT.md section 7): a new client
 * id makes it a different owner, so it can never release or renew the
 * parent's holds; its connections and thread start afresh on first use. */
static void child_reset(rdlock_client_t *c)
{
    size_t i;
    rdl_tnode_t *nd, *next;
    rdl_conn_t *conn;

    rdl_events_after_fork(c);
    while ((conn = c->idle) != NULL) {
        c->idle = conn->next;
        rdl_conn_close(conn); /* closes only the child's descriptor */
    }
    c->nidle = 0;
    RDL_TABLE_FOREACH_SAFE(&c->holds, i, nd, next)
    {
        rdl_hold_t *h = (rdl_hold_t *)nd;
        if (h->handle != NULL)
            h->handle->nholds--;
        rdl_hold_free(h);
    }
    rdl_table_free(&c->holds);
    rdl_waitq_free_all(c, true);
    c->listening = 0; /* those threads are the parent's */
    c->pid = getpid();
    if (new_id(c->id) != 0)
        snprintf(c->id, sizeof c->id, "%016llx%016llx", (unsigned long long)rdl_now_ms(),
                 (unsigned long long)c->pid);
}

static void atfork_child(void)
{
    rdlock_client_t *c;
    rdl_log_atfork(1); /* child_reset may log */
    rdl_handle_atfork(1);
    for (c = registry; c != NULL; c = c->reg_next) {
        child_reset(c);
        RDL_UNLOCK(c);
    }
    RDL_CHECK(pthread_mutex_unlock(&registry_mu));
    RDL_CHECK(pthread_mutex_unlock(&default_mu));
}

static void atfork_register(void)
{
    RDL_CHECK(pthread_atfork(atfork_prepare, atfork_parent, atfork_child));
}

/* ---------------------------------------------------------------- open/close */

static int clock_sample(rdlock_client_t *c, rdl_conn_t *conn);

/* With [sentinel] the background thread runs from the opening on, holds or
 * not: it listens for failovers (events.c, sentinel.h), so that even a
 * client holding nothing stops using a deposed master at once.  Also
 * restarted by the first call after fork() in the child, and never after
 * rdl_events_stop (process exit). */
static void sentinel_follow_start(rdlock_client_t *c) /* mu held */
{
    if (c->topo->always_on && !c->bg_running && !c->bg_stop)
        (void)rdl_events_start(c); /* logs why it could not; retried by the next call */
}

static void client_free(rdlock_client_t *c)
{
    rdl_conn_t *conn;
    while ((conn = c->idle) != NULL) {
        c->idle = conn->next;
        rdl_conn_close(conn);
    }
    rdl_table_free(&c->holds);
    rdl_waitq_free_all(c, false);
    if (c->wake[0] >= 0)
        close(c->wake[0]);
    if (c->wake[1] >= 0)
        close(c->wake[1]);
    pthread_mutex_destroy(&c->mu);
    rdl_tls_free(c->cfg.tls_ctx);
    rdl_config_free(&c->cfg);
    free(c);
}

int rdl_client_open(rdlock_client_t **out, const char *ini_path)
{
    rdlock_client_t *c;
    rdl_conn_t *conn = NULL;
    char where[300];
    int rc;

    pthread_once(&atfork_once, atfork_register);
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return ENOMEM;
    c->wake[0] = c->wake[1] = -1;
    RDL_CHECK(pthread_mutex_init(&c->mu, NULL));
    rc = rdl_config_load(&c->cfg, ini_path, RDLOCK_SYSCONFDIR "/rdlock.ini");
    if (rc == 0)
        rc = new_id(c->id);
    if (rc == 0 && pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        rc = errno == EMFILE || errno == ENFILE ? EIO : ENOMEM;
    /* TLS: one context for every connection of the client (tls.h); a
     * file that does not load is a configuration error (EINVAL). */
    if (rc == 0 && rdl_config_uses_tls(&c->cfg))
        rc = rdl_tls_new(&c->cfg, &c->cfg.tls_ctx);
    if (rc != 0) {
        client_free(c);
        return rc;
    }
    c->pid = getpid();
    if (gethostname(c->host, sizeof c->host - 1) != 0)
        strcpy(c->host, "?");
    /* ';' separates holder info fields on the server. */
    for (char *p = c->host; *p; p++)
        if (*p == ';')
            *p = '_';

    /* Connect once: refused authentication or a rejected db is an error
     * now; an unreachable server only with fail_fast (docs/CONTRACT.md section 3). */
    c->topo = rdl_topology_of(&c->cfg);
    c->scripts = c->topo->sharded ? &rdl_scripts_sharded : &rdl_scripts_plain;
    rc = c->topo->connect(c, NULL, 0, true, &conn);
    if (rc == 0) {
        /* Wake-ups need PUBLISH and SUBSCRIBE on the lock channels: a Redis
         * 7 user without channel permissions (ACL resetchannels, the
         * default for new users) is refused now, rather than left with
         * waiters that sleep through every release. */
        size_t pl = strlen(c->cfg.key_prefix);
        char *chan = malloc(pl + 16);
        rc = chan == NULL ? ENOMEM : 0;
        if (rc == 0) {
            memcpy(chan, c->cfg.key_prefix, pl);
            memcpy(chan + pl, "acl-probe", 10);
            rc = rdl_conn_check_channel(conn, chan, pl + 9);
            free(chan);
        }
        if (rc == EIO) {
            rdl_conn_close(conn); /* half-read: start afresh on first use */
            rc = 0;
        } else if (rc != 0) {
            rdl_conn_close(conn);
            client_free(c);
            return rc;
        } else {
            /* The server's clock, which stamps acquire attempts (see
             * rdl_client_script): learnt here, so the first lock call
             * does not pay a round trip for it. */
            (void)clock_sample(c, conn);
            /* Beside any the topology pooled already (Redlock: the
             * other masters' connections). */
            conn->next = c->idle;
            c->idle = conn;
            c->nidle++;
        }
    } else if (rc == EIO && !c->cfg.fail_fast) {
        rdl_log(RDLOCK_LOG_WARN, "%s unreachable for now (%s); blocking calls wait for it, timed calls until "
                "their deadline, try calls give EIO (fail_fast = no)",
                rdl_topology_where(&c->cfg, where, sizeof where), rdl_conn_last_error());
        c->net_down = true;
        /* rdlock_client_info() says why from the start. */
        snprintf(c->last_error, sizeof c->last_error, "%s", rdl_conn_last_error());
        rc = 0;
    } else {
        if (rc == EIO)
            rdl_log(RDLOCK_LOG_ERROR, "%s unreachable (fail_fast): %s",
                    rdl_topology_where(&c->cfg, where, sizeof where), rdl_conn_last_error());
        client_free(c);
        return rc;
    }

    RDL_CHECK(pthread_mutex_lock(&registry_mu));
    c->reg_next = registry;
    registry = c;
    RDL_CHECK(pthread_mutex_unlock(&registry_mu));
    RDL_LOCK(c);
    sentinel_follow_start(c);
    RDL_UNLOCK(c);
    *out = c;
    return 0;
}

static void unregister(rdlock_client_t *c)
{
    rdlock_client_t **pp;
    RDL_CHECK(pthread_mutex_lock(&registry_mu));
    for (pp = &registry; *pp != NULL; pp = &(*pp)->reg_next)
        if (*pp == c) {
            *pp = c->reg_next;
            break;
        }
    RDL_CHECK(pthread_mutex_unlock(&registry_mu));
}

int rdlock_client_open(rdlock_client_t **client, const char *ini_path)
{
    if (client == NULL)
        return EINVAL;
    return rdl_client_open(client, ini_path);
}

int rdlock_client_info(rdlock_client_t *c, rdlock_client_info_t *info)
{
    int rc;
    if (info == NULL)
        return EINVAL;
    if (c == NULL && (rc = rdl_client_default(&c)) != 0)
        return rc;
    memset(info, 0, sizeof *info);
    rdl_topology_where(&c->cfg, info->server, sizeof info->server);
    info->fail_fast = c->cfg.fail_fast;
    RDL_LOCK(c);
    if (c->cfg.tls) {
        /* In the server's text, so that the struct (the ABI) stays as it
         * is: the protocol of a pooled connection, if one is open. */
        const char *v = NULL;
        size_t l = strlen(info->server);
        for (rdl_conn_t *conn = c->idle; conn != NULL && v == NULL; conn = conn->next)
            v = conn->tls_version;
        snprintf(info->server + l, sizeof info->server - l, " (TLS%s%s)", v ? " " : "", v ? v : "");
    }
    snprintf(info->last_error, sizeof info->last_error, "%s", c->last_error);
    RDL_UNLOCK(c);
    return 0;
}

/* Is c an open client?  A closed one's memory is gone: only its address
 * is compared, never read. */
static bool registered(const rdlock_client_t *c)
{
    const rdlock_client_t *r;
    bool found = false;
    RDL_CHECK(pthread_mutex_lock(&registry_mu));
    for (r = registry; r != NULL && !found; r = r->reg_next)
        found = r == c;
    RDL_CHECK(pthread_mutex_unlock(&registry_mu));
    return found;
}

int rdlock_client_close(rdlock_client_t *c)
{
    if (c == NULL || !registered(c)) {
        rdl_log(RDLOCK_LOG_ERROR, "client_close: not an open client (closed already?)");
        return EINVAL;
    }
    if (c->is_default)
        return EINVAL;
    RDL_LOCK(c);
    if (c->nhandles > 0) {
        int n = c->nhandles;
        RDL_UNLOCK(c);
        rdl_log(RDLOCK_LOG_WARN, "client_close: %d lock(s) initialised on this client are not destroyed",
                n);
        return EBUSY;
    }
    RDL_UNLOCK(c);
    rdl_events_stop(c);
    unregister(c);
    client_free(c);
    return 0;
}

/* Process exit: stop the default client's thread and close its connections.
 * Holds were ended before, by lock.c's exit handler (registered later, so
 * run earlier), unless [lock] release_at_exit is off; then they end at
 * lease expiry, as after a crash.  The memory stays reachable: another
 * thread may still be inside a call. */
static void default_atexit(void)
{
    rdlock_client_t *c;
    rdl_conn_t *conn;
    RDL_CHECK(pthread_mutex_lock(&default_mu));
    c = default_client;
    RDL_CHECK(pthread_mutex_unlock(&default_mu));
    if (c == NULL || c->pid != getpid())
        return;
    rdl_events_stop(c);
    RDL_LOCK(c);
    while ((conn = c->idle) != NULL) {
        c->idle = conn->next;
        rdl_conn_close(conn);
    }
    c->nidle = 0;
    RDL_UNLOCK(c);
}

void rdl_clients_each(void (*fn)(rdlock_client_t *c, void *arg), void *arg)
{
    rdlock_client_t *c;
    RDL_CHECK(pthread_mutex_lock(&registry_mu));
    for (c = registry; c != NULL; c = c->reg_next)
        fn(c, arg);
    RDL_CHECK(pthread_mutex_unlock(&registry_mu));
}

int rdl_client_default(rdlock_client_t **out)
{
    static int atexit_done;
    rdlock_client_t *c;
    int rc = 0;

    c = __atomic_load_n(&default_client, __ATOMIC_ACQUIRE);
    if (c != NULL) {
        *out = c;
        return 0;
    }
    RDL_CHECK(pthread_mutex_lock(&default_mu));
    if (default_client == NULL) {
        /* A config error is not cached: the next call tries again. */
        rc = rdl_client_open(&c, NULL);
        if (rc == 0) {
            c->is_default = true;
            __atomic_store_n(&default_client, c, __ATOMIC_RELEASE);
            if (!atexit_done) {
                atexit(default_atexit);
                atexit_done = 1;
            }
        }
    }
    if (rc == 0)
        *out = default_client;
    RDL_CHECK(pthread_mutex_unlock(&default_mu));
    return rc;
}

/* ---------------------------------------------------------------- pool */

static rdl_conn_t *pool_get(rdlock_client_t *c, const char *route);
static void pool_put(rdlock_client_t *c, rdl_conn_t *conn);

/* An idle connection to route's server (topology.h), or NULL. */
rdl_conn_t *rdl_client_conn_idle(rdlock_client_t *c, const char *route)
{
    return pool_get(c, route);
}

void rdl_client_conn_put(rdlock_client_t *c, rdl_conn_t *conn)
{
    pool_put(c, conn);
}

int rdl_client_conn_get(rdlock_client_t *c, const char *route, rdl_conn_t **out)
{
    unsigned gen;
    int rc;
    if ((*out = pool_get(c, route)) != NULL)
        return 0;
    /* Read before connecting: a flush meanwhile wins, and pool_put then
     * closes this one instead of keeping it. */
    gen = __atomic_load_n(&c->pool_gen, __ATOMIC_RELAXED);
    if ((rc = rdl_topo_connect_route(c, route, out)) == 0)
        (*out)->gen = gen;
    return rc;
}

static rdl_conn_t *pool_get(rdlock_client_t *c, const char *route)
{
    rdl_conn_t **pp, *conn = NULL;
    RDL_LOCK(c);
    sentinel_follow_start(c); /* after fork(), in the child */
    for (pp = &c->idle; *pp != NULL; pp = &(*pp)->next)
        if (strcmp((*pp)->route, route) == 0) {
            conn = *pp;
            *pp = conn->next;
            c->nidle--;
            break;
        }
    RDL_UNLOCK(c);
    return conn;
}

static void pool_put(rdlock_client_t *c, rdl_conn_t *conn)
{
    rdl_conn_t *o;
    int same = 0;
    RDL_LOCK(c);
    /* RDL_POOL_MAX idle connections per server. */
    for (o = c->idle; o != NULL; o = o->next)
        same += strcmp(o->route, conn->route) == 0;
    /* One opened before a flush may lead where a flush was meant to take
     * us away from (a deposed master): it is not reused. */
    if (same < RDL_POOL_MAX && conn->gen == c->pool_gen) {
        conn->next = c->idle;
        c->idle = conn;
        c->nidle++;
        conn = NULL;
    }
    RDL_UNLOCK(c);
    rdl_conn_close(conn);
}

/* A broken connection usually means every idle one is broken too (server
 * restart): drop them all so retries are spent on fresh connections. */
void rdl_client_pool_flush(rdlock_client_t *c)
{
    rdl_conn_t *list, *conn;
    RDL_LOCK(c);
    list = c->idle;
    c->idle = NULL;
    c->nidle = 0;
    /* Maybe another server now (a failover), with a clock of its own: the
     * next stamped call samples it before it sends (see stamp_write). */
    for (int i = 0; i < c->nclocks; i++)
        c->clocks[i].ok = false;
    __atomic_add_fetch(&c->pool_gen, 1, __ATOMIC_RELAXED); /* also read without mu */
    RDL_UNLOCK(c);
    while ((conn = list) != NULL) {
        list = conn->next;
        rdl_conn_close(conn);
    }
}

bool rdl_client_pool_elsewhere(rdlock_client_t *c, const char *addr, char *where, size_t n)
{
    rdl_conn_t *conn;
    bool found = false;
    RDL_LOCK(c);
    for (conn = c->idle; conn != NULL && !found; conn = conn->next)
        if (conn->addr[0] != '\0' && strcmp(conn->addr, addr) != 0) {
            snprintf(where, n, "%s", conn->addr);
            found = true;
        }
    RDL_UNLOCK(c);
    return found;
}

static void net_state(rdlock_client_t *c, bool down, const char *why)
{
    char where[300];
    bool was;
    RDL_LOCK(c);
    was = c->net_down;
    c->net_down = down;
    if (down)
        snprintf(c->last_error, sizeof c->last_error, "%s", why);
    RDL_UNLOCK(c);
    if (down && !was)
        rdl_log(RDLOCK_LOG_WARN, "%s: connection lost: %s", rdl_topology_where(&c->cfg, where, sizeof where),
                why);
    else if (!down && was)
        rdl_log(RDLOCK_LOG_INFO, "%s: connected", rdl_topology_where(&c->cfg, where, sizeof where));
}

/* The clock sample of route's server (mu held): each server has a clock
 * of its own (a cluster's masters are different machines).  create: make
 * room for it, reusing the oldest entry when the table is full.  NULL if
 * none. */
static rdl_clock_t *clock_of(rdlock_client_t *c, const char *route, bool create)
{
    rdl_clock_t *oldest = NULL;
    for (int i = 0; i < c->nclocks; i++) {
        if (strcmp(c->clocks[i].route, route) == 0)
            return &c->clocks[i];
        if (oldest == NULL || c->clocks[i].at < oldest->at)
            oldest = &c->clocks[i];
    }
    if (!create)
        return NULL;
    if (c->nclocks < RDL_CLOCKS_MAX)
        oldest = &c->clocks[c->nclocks++];
    snprintf(oldest->route, sizeof oldest->route, "%s", route);
    oldest->ok = false;
    return oldest;
}

void rdl_client_clock(rdlock_client_t *c, const char *route, long long server_ms, long long recv_at)
{
    rdl_clock_t *k;
    if (server_ms <= 0)
        return;
    RDL_LOCK(c);
    /* The server read its clock before we received the answer, so this is
     * a lower bound of the offset; the newest sample, so that drift
     * between the two clocks stays small. */
    if ((k = clock_of(c, route, true)) != NULL) {
        k->off = server_ms - recv_at;
        k->at = recv_at;
        k->ok = true;
    }
    RDL_UNLOCK(c);
}

/* Write into call->stamp the server time after which an attempt sent now
 * is void: its sending + command_timeout_ms in the server's clock, taken
 * low (the offset is a lower bound, less 1000 ppm of drift since the
 * sample), so that when the client gives up on the attempt, command_timeout_ms
 * after sending it, the server's clock is past the stamp.  0 if the clock is
 * not known yet. */
static void stamp_write(rdlock_client_t *c, const char *route, char *stamp, long long sent)
{
    long long s = 0;
    char digits[24];
    size_t n, i;
    rdl_clock_t *k;
    RDL_LOCK(c);
    if ((k = clock_of(c, route, false)) != NULL && k->ok)
        s = sent + k->off - (sent - k->at) / 1000 - 1 + c->cfg.command_timeout_ms;
    RDL_UNLOCK(c);
    if (s < 0)
        s = 0;
    n = rdl_fmt_u64(digits, (unsigned long long)s);
    for (i = 0; i < RDL_STAMP_LEN; i++)
        stamp[i] = i < RDL_STAMP_LEN - n ? '0' : digits[i - (RDL_STAMP_LEN - n)];
}

void rdl_client_stamp(rdlock_client_t *c, const char *route, char *stamp, long long sent)
{
    stamp_write(c, route, stamp, sent);
}

bool rdl_client_clock_known(rdlock_client_t *c, const char *route)
{
    rdl_clock_t *k;
    bool ok;
    RDL_LOCK(c);
    k = clock_of(c, route, false);
    ok = k != NULL && k->ok;
    RDL_UNLOCK(c);
    return ok;
}

int rdl_client_clock_sample(rdlock_client_t *c, rdl_conn_t *conn)
{
    return clock_sample(c, conn);
}

/* Sample the server's clock on conn (TIME): 0, or EIO. */
static int clock_sample(rdlock_client_t *c, rdl_conn_t *conn)
{
    long long ms;
    int rc = rdl_conn_time(conn, &ms);
    if (rc == 0)
        rdl_client_clock(c, conn->route, ms, rdl_now_ms());
    return rc;
}

int rdl_client_script(rdlock_client_t *c, const rdl_script_t *script, int nkeys, int argc,
                      const char *const *argv, const size_t *lens, long long deadline,
                      redisReply **reply, rdl_call_t *call)
{
    rdl_call_t local = { 0 };
    int attempt, rc, replicas, redirects = 0, busy = 0;
    long long busy_since = 0, busy_budget = (long long)c->cfg.command_timeout_ms * (c->cfg.command_retries + 1);
    /* Not initialised whole: zeroing them costs more than the rest of
     * this function on a fast path. */
    char why[128], route[RDL_ROUTE_MAX], ask_route[RDL_ROUTE_MAX];
    /* Every script's first key is a lock key: it says which server. */
    const char *key = nkeys > 0 ? argv[0] : NULL;
    size_t keylen = key == NULL ? 0 : lens != NULL ? lens[0] : strlen(key);
    bool clock_ok;

    if (call == NULL)
        call = &local;
    call->maybe_ran = call->ambiguous = false;
    call->sent_at = -1;
    call->acked = -1;
    call->unsure_until = 0;
    call->route[0] = '\0';
    memcpy(why, "no connection", sizeof "no connection");
    ask_route[0] = '\0';
    replicas = call->confirm ? c->cfg.wait_replicas : 0;

    for (attempt = 0;; attempt++) {
        rdl_conn_t *conn = NULL;
        bool ask = ask_route[0] != '\0';
        if (ask) {
            /* A slot half migrated: this request, once, to the node that
             * imports it, with ASKING. */
            memcpy(route, ask_route, strlen(ask_route) + 1);
            ask_route[0] = '\0';
            rc = 0;
        } else {
            rc = rdl_topo_route(c, key, keylen, route, sizeof route);
            if (rc == EAGAIN) {
                snprintf(why, sizeof why, "%s", rdl_conn_last_error());
                rc = EIO; /* nobody serves it now: wait and ask again */
            } else if (rc != 0 && rc != EIO) {
                return rc;
            } else if (rc == EIO) {
                snprintf(why, sizeof why, "%s", rdl_conn_last_error());
            }
        }
        if (rc == 0) {
            /* A new connection needs no probe: the script's own reply
             * reports NOAUTH. */
            rc = rdl_client_conn_get(c, route, &conn);
            if (rc != 0 && rc != EIO)
                return rc; /* EACCES, EINVAL (db), ENOMEM: retrying won't help */
            if (rc == EIO)
                snprintf(why, sizeof why, "%s", rdl_conn_last_error());
        }
        if (rc == 0 && call->stamp != NULL) {
            /* A stamped call needs the server's clock: once per server. */
            rdl_clock_t *k;
            RDL_LOCK(c);
            k = clock_of(c, conn->route, false);
            clock_ok = k != NULL && k->ok;
            RDL_UNLOCK(c);
            if (!clock_ok && clock_sample(c, conn) != 0) {
                snprintf(why, sizeof why, "%s", conn->ctx->errstr[0] ? conn->ctx->errstr : "TIME failed");
                rdl_conn_close(conn);
                rdl_client_pool_flush(c);
                rc = EIO;
                conn = NULL;
            }
        }
        if (rc == 0) {
            long long sent = rdl_now_ms();
            if (!call->maybe_ran)
                call->sent_at = sent; /* else an earlier attempt may have acted */
            if (call->stamp != NULL)
                stamp_write(c, conn->route, call->stamp, sent);
            conn->asking = ask;
            rc = rdl_conn_script_wait(conn, script, nkeys, argc, argv, lens, replicas, c->cfg.wait_timeout_ms,
                                      reply, &call->acked);
            if (rc == 0) {
                call->answer_sent = sent;
                call->answer_at = rdl_now_ms();
                memcpy(call->route, conn->route, strlen(conn->route) + 1);
                pool_put(c, conn);
                net_state(c, false, NULL);
                return 0;
            }
            if (rc == RDL_EREDIRECT) {
                /* Not run: the slot is served elsewhere.  Not a retry (no
                 * backoff), but bounded: a map that keeps changing under
                 * us is an error. */
                rdl_topo_redirected(c, conn);
                if (conn->redir.kind == RDL_CL_ASK && conn->redir.host[0] != '\0')
                    snprintf(ask_route, sizeof ask_route, "%s:%d", conn->redir.host, conn->redir.port);
                pool_put(c, conn);
                if (++redirects > c->cfg.cluster_max_redirects) {
                    snprintf(why, sizeof why, "more than %d redirections", c->cfg.cluster_max_redirects);
                    rdl_log(RDLOCK_LOG_ERROR, "script %s: %s", script->name, why);
                    break;
                }
                attempt--;
                continue;
            }
            if (rc == EROFS) {
                /* A replica now: every pooled connection leads there.
                 * The script did not write (a replica refuses), so a
                 * retry on a new connection cannot double it. */
                snprintf(why, sizeof why, "server is a read-only replica");
                rdl_topo_redirected(c, conn);
                rdl_conn_close(conn);
                rdl_client_pool_flush(c);
            } else if (rdl_conn_ok(conn)) {
                if (conn->redir.kind == RDL_CL_CLUSTERDOWN)
                    rdl_topo_redirected(c, conn);
                pool_put(c, conn); /* the server answered with an error */
                if (rc != EAGAIN)
                    return rc;
                snprintf(why, sizeof why, "server loading, busy, short of replicas or migrating the slot");
                /* The server is alive and says "not now" (a slot being
                 * migrated answers TRYAGAIN to every lock call until the
                 * move ends; a failover, CLUSTERDOWN): waited out for as
                 * long as the retries of a dead server would take, not
                 * for command_retries answers that come in microseconds. */
                if (busy_since == 0)
                    busy_since = rdl_now_ms();
                if (rdl_now_ms() - busy_since < busy_budget) {
                    long long pause = 5LL << (busy < 5 ? busy : 5), now = rdl_now_ms();
                    busy++;
                    if (deadline >= 0 && now + pause > deadline)
                        pause = deadline - now;
                    if (pause <= 0)
                        break;
                    rdl_sleep_ms(pause);
                    attempt--;
                    redirects = 0; /* an ASK then TRYAGAIN is one more wait, not a loop */
                    continue;
                }
            } else {
                /* Sent, maybe run, but no answer: a retry may find the
                 * effect of this attempt, and the attempt itself may yet
                 * arrive (until its stamp).  A timeout (the server is
                 * alive but slow) most likely ran it; a closed connection
                 * may mean a restart that lost everything. */
                call->maybe_ran = true;
                if (call->stamp != NULL && sent + c->cfg.command_timeout_ms > call->unsure_until)
                    call->unsure_until = sent + c->cfg.command_timeout_ms;
                if (rdl_conn_timed_out(conn))
                    call->ambiguous = true;
                snprintf(why, sizeof why, "%s", conn->ctx->errstr);
                rdl_conn_close(conn);
                rdl_client_pool_flush(c);
            }
        }
        if (attempt >= c->cfg.command_retries)
            break;
        {
            long long pause = 10LL << (attempt < 6 ? attempt : 6), now = rdl_now_ms();
            if (deadline >= 0 && now + pause > deadline)
                pause = deadline - now;
            if (pause <= 0)
                break;
            rdl_sleep_ms(pause);
        }
    }
    net_state(c, true, why);
    return EIO;
}
