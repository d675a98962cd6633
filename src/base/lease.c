/* lease.c - the formulas of a lease's timing (lease.h). */
#include "rdl_build.h"

#include "base/lease.h"

unsigned rdl_lease_interval(const rdl_config_t *cfg, unsigned lease)
{
    /* A configured interval that does not fit this lease falls back to a
     * third of it. */
    return cfg->watchdog_interval_ms != 0 && cfg->watchdog_interval_ms < lease ? cfg->watchdog_interval_ms
                                                                              : (lease / 3 ? lease / 3 : 1);
}

long long rdl_lease_quorum_validity(const rdl_config_t *cfg, unsigned lease)
{
    return (long long)lease - (long long)((unsigned long long)lease * cfg->drift_ppm / 1000000) - 2;
}

long long rdl_lease_validity(const rdl_config_t *cfg, unsigned lease, bool drift)
{
    return drift ? rdl_lease_quorum_validity(cfg, lease) : (long long)lease;
}
