/* lease.h - the formulas of a lease's timing, from the configuration
 * alone: when a hold is renewed, and how much of a lease is surely ours.
 * No state; the hold record, the watchdog and both Redlock steps use them,
 * so they live below all of them. */
#ifndef RDL_LEASE_H
#define RDL_LEASE_H

#include <stdbool.h>

#include "base/config.h"

/* The renewal period of a lease: the configured watchdog interval if it
 * fits the lease, else a third of the lease (at least 1 ms). */
unsigned rdl_lease_interval(const rdl_config_t *cfg, unsigned lease);

/* What a quorum's lease allows: lease less the clock drift allowance
 * (drift_factor of it, and 2 ms for the masters' clock granularity). */
long long rdl_lease_quorum_validity(const rdl_config_t *cfg, unsigned lease);

/* How long after its request was sent a lease of `lease` ms is surely
 * ours: the whole lease where one server's clock times it, else (drift:
 * several servers' clocks, which may drift apart; RDL_EXEC_DRIFT)
 * rdl_lease_quorum_validity. */
long long rdl_lease_validity(const rdl_config_t *cfg, unsigned lease, bool drift);

#endif
