/* rwlock.c - the rdrwlock_t API (docs/CONTRACT.md section 6): argument checks and
 * deadlines, then one call into the core (lock.c).  wrlock is the
 * exclusive mode of the lock of its name (the mutex's), rdlock the shared
 * mode. */
#include "rdl_build.h"

#include <errno.h>

#include "base/timeutil.h"
#include "core/handle.h"
#include "core/hold.h"
#include "prim/lock.h"

static int get(rdrwlock_t *rw, rdl_handle_t **h)
{
    return rdl_handle_get((rdl_lockobj_t *)rw, RDRWLOCK__MAGIC, RDRWLOCK__STATIC_MAGIC, h);
}

static int acquire(rdrwlock_t *rw, char mode, int how, clockid_t clock, const struct timespec *abstime)
{
    return rdl_lock_call((rdl_lockobj_t *)rw, RDRWLOCK__MAGIC, RDRWLOCK__STATIC_MAGIC, mode, how, clock,
                         abstime);
}

int rdrwlock_init(rdrwlock_t *rw, const char *name, const rdlock_attr_t *a)
{
    return rdl_handle_init((rdl_lockobj_t *)rw, RDRWLOCK__MAGIC, name, a, RDL_API_RWLOCK);
}

int rdrwlock_destroy(rdrwlock_t *rw)
{
    return rdl_handle_destroy((rdl_lockobj_t *)rw, RDRWLOCK__MAGIC, RDRWLOCK__STATIC_MAGIC);
}

int rdrwlock_rdlock(rdrwlock_t *rw)
{
    return acquire(rw, 's', RDL_BLOCK, CLOCK_REALTIME, NULL);
}

int rdrwlock_tryrdlock(rdrwlock_t *rw)
{
    return acquire(rw, 's', RDL_TRY, CLOCK_REALTIME, NULL);
}

int rdrwlock_timedrdlock(rdrwlock_t *rw, const struct timespec *abstime)
{
    return acquire(rw, 's', RDL_TIMED, CLOCK_REALTIME, abstime);
}

int rdrwlock_clockrdlock(rdrwlock_t *rw, clockid_t clock, const struct timespec *abstime)
{
    return acquire(rw, 's', RDL_TIMED, clock, abstime);
}

int rdrwlock_wrlock(rdrwlock_t *rw)
{
    return acquire(rw, 'x', RDL_BLOCK, CLOCK_REALTIME, NULL);
}

int rdrwlock_trywrlock(rdrwlock_t *rw)
{
    return acquire(rw, 'x', RDL_TRY, CLOCK_REALTIME, NULL);
}

int rdrwlock_timedwrlock(rdrwlock_t *rw, const struct timespec *abstime)
{
    return acquire(rw, 'x', RDL_TIMED, CLOCK_REALTIME, abstime);
}

int rdrwlock_clockwrlock(rdrwlock_t *rw, clockid_t clock, const struct timespec *abstime)
{
    return acquire(rw, 'x', RDL_TIMED, clock, abstime);
}

int rdrwlock_unlock(rdrwlock_t *rw)
{
    rdl_handle_t *h;
    int rc = get(rw, &h);
    return rc != 0 ? rc : rdl_release(h);
}

int rdrwlock_consistent(rdrwlock_t *rw)
{
    rdl_handle_t *h;
    int rc = get(rw, &h);
    return rc != 0 ? rc : rdl_consistent(h);
}

int rdrwlock_fencing_token(rdrwlock_t *rw, uint64_t *token)
{
    rdl_handle_t *h;
    int rc = get(rw, &h);
    if (rc == 0 && token == NULL)
        rc = EINVAL;
    return rc != 0 ? rc : rdl_token(h, token);
}
