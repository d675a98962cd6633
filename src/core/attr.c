/* attr.c - attribute objects: setters so that new options never change the
 * ABI (pthread's *attr_set* habit). */
#include "rdl_build.h"

#include <errno.h>
#include <string.h>

#include "core/attr.h"

int rdl_attr_valid(const rdlock_attr_t *a)
{
    return a != NULL && a->__magic == RDL_ATTR_MAGIC;
}

int rdlock_attr_init(rdlock_attr_t *a)
{
    if (a == NULL)
        return EINVAL;
    memset(a, 0, sizeof *a);
    a->__magic = RDL_ATTR_MAGIC;
    a->__type = RDLOCK_ERRORCHECK;
    a->__watchdog = -1;
    a->__robust = RDLOCK_STALLED;
    return 0;
}

int rdlock_attr_destroy(rdlock_attr_t *a)
{
    if (!rdl_attr_valid(a))
        return EINVAL;
    memset(a, 0, sizeof *a);
    return 0;
}

int rdlock_attr_settype(rdlock_attr_t *a, int type)
{
    if (!rdl_attr_valid(a) || (type != RDLOCK_ERRORCHECK && type != RDLOCK_RECURSIVE))
        return EINVAL;
    a->__type = type;
    return 0;
}

int rdlock_attr_gettype(const rdlock_attr_t *a, int *type)
{
    if (!rdl_attr_valid(a) || type == NULL)
        return EINVAL;
    *type = a->__type;
    return 0;
}

int rdlock_attr_setlease(rdlock_attr_t *a, unsigned lease_ms)
{
    if (!rdl_attr_valid(a) || (lease_ms != 0 && (lease_ms < 10 || lease_ms > 86400000u)))
        return EINVAL;
    a->__lease_ms = lease_ms;
    return 0;
}

int rdlock_attr_setwatchdog(rdlock_attr_t *a, int enabled)
{
    if (!rdl_attr_valid(a))
        return EINVAL;
    a->__watchdog = enabled != 0;
    return 0;
}

int rdlock_attr_setclient(rdlock_attr_t *a, rdlock_client_t *c)
{
    if (!rdl_attr_valid(a))
        return EINVAL;
    a->__client = c;
    return 0;
}

int rdlock_attr_setlostcb(rdlock_attr_t *a, rdlock_lost_fn fn, void *arg)
{
    if (!rdl_attr_valid(a))
        return EINVAL;
    a->__lostcb = fn;
    a->__lostarg = arg;
    return 0;
}

int rdlock_attr_setrobust(rdlock_attr_t *a, int robust)
{
    if (!rdl_attr_valid(a))
        return EINVAL;
    if (robust != RDLOCK_STALLED && robust != RDLOCK_ROBUST)
        return EINVAL;
    a->__robust = robust;
    return 0;
}

int rdlock_attr_getrobust(const rdlock_attr_t *a, int *robust)
{
    if (!rdl_attr_valid(a) || robust == NULL)
        return EINVAL;
    *robust = a->__robust;
    return 0;
}
