/* exit.c - the process exit handler and its registry of enders (exit.h).
 *
 * The registry is process state, like the atexit handler it serves: one
 * pointer per hold kind, written once (the same value each time) and read
 * at exit. */
#include "rdl_build.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "core/clients.h"
#include "core/exit.h"

#define RDL_HOLD_NKINDS 4

static const rdl_exit_ender_t *enders[RDL_HOLD_NKINDS];
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* One stage on c: the holds of its kinds, copied out under the mutex, each
 * ended by its kind's ender while time is left. */
static void run_stage(rdlock_client_t *c, unsigned stage, long long deadline)
{
    const rdl_exit_ender_t *first = NULL;
    unsigned kinds = 0;
    rdl_exit_hold_t *v;
    size_t n, done = 0, i;

    for (i = 0; i < RDL_HOLD_NKINDS; i++) {
        const rdl_exit_ender_t *en = __atomic_load_n(&enders[i], __ATOMIC_ACQUIRE);
        if (en != NULL && en->stage == stage) {
            kinds |= 1u << i;
            if (first == NULL)
                first = en;
        }
    }
    if (kinds == 0)
        return;
    RDL_LOCK(c);
    v = rdl_exit_holds(c, kinds, &n);
    RDL_UNLOCK(c);
    for (i = 0; i < n; i++) {
        const rdl_exit_ender_t *en = enders[v[i].kind];
        if (rdl_now_ms() < deadline && en->end(c, &v[i], deadline))
            done++;
    }
    rdl_exit_holds_free(v, n);
    if (n > 0 && first->report != NULL)
        first->report(done, n);
}

static void exit_client(rdlock_client_t *c, void *arg)
{
    (void)arg;
    long long deadline = rdl_now_ms() + c->cfg.command_timeout_ms;
    if (c->pid == getpid() && c->cfg.release_at_exit) {
        /* A waiting thread must not take its holds up again. */
        __atomic_store_n(&c->exiting, true, __ATOMIC_RELEASE);
        for (unsigned stage = 0; stage < RDL_EXIT_NSTAGES; stage++)
            run_stage(c, stage, deadline);
    }
}

/* A fork child runs this too, but holds none of its parent's holds
 * (clients.c's child_reset), and its clients' pids are its own. */
static void exit_release_all(void)
{
    rdl_clients_each(exit_client, NULL);
}

static void exit_register(void)
{
    if (atexit(exit_release_all) != 0)
        rdl_log(RDLOCK_LOG_WARN, "atexit failed: holds will end with their leases at process exit");
}

void rdl_exit_add(const rdl_exit_ender_t *en)
{
    if (__atomic_load_n(&enders[en->kind], __ATOMIC_ACQUIRE) == en)
        return;
    pthread_once(&exit_once, exit_register);
    __atomic_store_n(&enders[en->kind], en, __ATOMIC_RELEASE);
}
