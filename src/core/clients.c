/* clients.c - the clients of this process: open and close, the registry
 * (for fork() and the exit handler), the process default client and fork()
 * handling.  See clients.h. */
#include "rdl_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/ident.h"
#include "client/pool.h"
#include "core/clients.h"
#include "core/events.h"
#include "core/handle.h"
#include "core/hold.h"
#include "core/waitq.h"
#include "exec/exec.h"
#include "proto/tls.h"
#include "topology/topology.h"

#ifndef RDLOCK_SYSCONFDIR
#define RDLOCK_SYSCONFDIR "/etc"
#endif

/* Lock order: default_mu -> registry_mu -> client mu -> the leaf locks
 * (handle resolve, log).  The fork handlers take them all in that order so
 * that the child never inherits a mutex locked by a thread that does not
 * exist there. */
static pthread_mutex_t default_mu = PTHREAD_MUTEX_INITIALIZER;
static rdlock_client_t *default_client;
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static rdlock_client_t *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

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
    if (rdl_ident_new(c->id) != 0)
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

/* The topology the configuration chooses, how steps run on it (exec.h),
 * and the hooks of the client record (client.h) through which the layers
 * below the background thread start it and report a move. */
static void wire(rdlock_client_t *c)
{
    c->topo = rdl_topology_of(&c->cfg);
    c->exec = rdl_exec_of(c->topo);
    c->always_on = c->topo->always_on;
    c->bg_start = rdl_events_start;
    c->moved = rdl_events_moved;
    c->scripts = c->topo->sharded ? &rdl_scripts_sharded : &rdl_scripts_plain;
}

/* The first connection's checks: wake-ups need PUBLISH and SUBSCRIBE on
 * the lock channels, so a Redis 7 user without channel permissions (ACL
 * resetchannels, the default for new users) is refused now, rather than
 * left with waiters that sleep through every release.  0 (conn pooled,
 * the server's clock sampled), EIO (conn closed: a half-read connection;
 * start afresh on first use), or EACCES, ENOMEM (conn closed). */
static int first_checks(rdlock_client_t *c, rdl_conn_t *conn)
{
    size_t pl = strlen(c->cfg.key_prefix);
    char *chan = malloc(pl + 16);
    int rc = chan == NULL ? ENOMEM : 0;
    if (rc == 0) {
        memcpy(chan, c->cfg.key_prefix, pl);
        memcpy(chan + pl, "acl-probe", 10);
        rc = rdl_conn_check_channel(conn, chan, pl + 9);
        free(chan);
    }
    if (rc != 0) {
        rdl_conn_close(conn);
        return rc;
    }
    /* The server's clock, which stamps acquire attempts (see
     * rdl_client_script): learnt here, so the first lock call does not pay
     * a round trip for it. */
    (void)rdl_client_clock_sample(c, conn);
    /* Beside any the topology pooled already (Redlock: the other masters'
     * connections). */
    conn->next = c->idle;
    c->idle = conn;
    c->nidle++;
    return 0;
}

/* Connect once: refused authentication or a rejected db is an error now;
 * an unreachable server only with fail_fast (docs/CONTRACT.md section 3).
 * 0 (connected, or unreachable for now: logged, and rdlock_client_info()
 * says why), or EACCES, EINVAL, ENOMEM, EIO (unreachable, fail_fast). */
static int first_connect(rdlock_client_t *c)
{
    rdl_conn_t *conn = NULL;
    char where[300];
    int rc = c->topo->connect(c, NULL, 0, true, &conn);

    if (rc == 0) {
        rc = first_checks(c, conn);
        return rc == EIO ? 0 : rc;
    }
    if (rc == EIO && !c->cfg.fail_fast) {
        rdl_log(RDLOCK_LOG_WARN, "%s unreachable for now (%s); blocking calls wait for it, timed calls until "
                "their deadline, try calls give EIO (fail_fast = no)",
                rdl_topology_where(&c->cfg, where, sizeof where), rdl_conn_last_error());
        c->net_down = true;
        snprintf(c->last_error, sizeof c->last_error, "%s", rdl_conn_last_error());
        return 0;
    }
    if (rc == EIO)
        rdl_log(RDLOCK_LOG_ERROR, "%s unreachable (fail_fast): %s", rdl_topology_where(&c->cfg, where, sizeof where),
                rdl_conn_last_error());
    return rc;
}

int rdl_client_open(rdlock_client_t **out, const char *ini_path)
{
    rdlock_client_t *c;
    int rc;

    pthread_once(&atfork_once, atfork_register);
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return ENOMEM;
    c->wake[0] = c->wake[1] = -1;
    RDL_CHECK(pthread_mutex_init(&c->mu, NULL));
    rc = rdl_config_load(&c->cfg, ini_path, RDLOCK_SYSCONFDIR "/rdlock.ini");
    if (rc == 0)
        rc = rdl_ident_new(c->id);
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
    wire(c);
    if ((rc = first_connect(c)) != 0) {
        client_free(c);
        return rc;
    }

    RDL_CHECK(pthread_mutex_lock(&registry_mu));
    c->reg_next = registry;
    registry = c;
    RDL_CHECK(pthread_mutex_unlock(&registry_mu));
    RDL_LOCK(c);
    rdl_client_follow_start(c);
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

int rdl_handle_resolve(rdl_handle_t *h, rdlock_client_t **out)
{
    rdlock_client_t *c = __atomic_load_n(&h->client, __ATOMIC_ACQUIRE);
    int rc;

    if (c == NULL) {
        if ((rc = rdl_client_default(&c)) != 0 || (rc = rdl_handle_bind(h, c)) != 0)
            return rc;
    }
    *out = c;
    return 0;
}
