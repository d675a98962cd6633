/* mutex.c - the rdlock_t API (docs/CONTRACT.md section 5): argument checks and
 * deadlines, then one call into the core (lock.c).  The mutex is the
 * exclusive mode of the lock of its name. */
#include "rdl_build.h"

#include <errno.h>

#include "base/timeutil.h"
#include "core/handle.h"
#include "core/hold.h"
#include "prim/lock.h"

static int get(rdlock_t *m, rdl_handle_t **h)
{
    return rdl_handle_get((rdl_lockobj_t *)m, RDLOCK__MAGIC, RDLOCK__STATIC_MAGIC, h);
}

int rdlock_init(rdlock_t *m, const char *name, const rdlock_attr_t *a)
{
    return rdl_handle_init((rdl_lockobj_t *)m, RDLOCK__MAGIC, name, a, RDL_API_MUTEX);
}

int rdlock_destroy(rdlock_t *m)
{
    return rdl_handle_destroy((rdl_lockobj_t *)m, RDLOCK__MAGIC, RDLOCK__STATIC_MAGIC);
}

static int acquire(rdlock_t *m, int how, clockid_t clock, const struct timespec *abstime)
{
    return rdl_lock_call((rdl_lockobj_t *)m, RDLOCK__MAGIC, RDLOCK__STATIC_MAGIC, 'x', how, clock,
                         abstime);
}

int rdlock_lock(rdlock_t *m)
{
    return acquire(m, RDL_BLOCK, CLOCK_REALTIME, NULL);
}

int rdlock_trylock(rdlock_t *m)
{
    return acquire(m, RDL_TRY, CLOCK_REALTIME, NULL);
}

int rdlock_clocklock(rdlock_t *m, clockid_t clock, const struct timespec *abstime)
{
    return acquire(m, RDL_TIMED, clock, abstime);
}

int rdlock_timedlock(rdlock_t *m, const struct timespec *abstime)
{
    return acquire(m, RDL_TIMED, CLOCK_REALTIME, abstime);
}

int rdlock_unlock(rdlock_t *m)
{
    rdl_handle_t *h;
    int rc = get(m, &h);
    return rc != 0 ? rc : rdl_release(h);
}

int rdlock_consistent(rdlock_t *m)
{
    rdl_handle_t *h;
    int rc = get(m, &h);
    return rc != 0 ? rc : rdl_consistent(h);
}

int rdlock_fencing_token(rdlock_t *m, uint64_t *token)
{
    rdl_handle_t *h;
    int rc = get(m, &h);
    if (rc == 0 && token == NULL)
        rc = EINVAL;
    return rc != 0 ? rc : rdl_token(h, token);
}

int rdlock_holdcount(rdlock_t *m, unsigned *count)
{
    rdl_handle_t *h;
    int rc = get(m, &h);
    if (rc == 0 && count == NULL)
        rc = EINVAL;
    return rc != 0 ? rc : rdl_holdcount(h, count);
}
