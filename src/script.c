/* script.c - the tables of embedded scripts; bodies and SHA1s are
 * generated at build time by embed-scripts.sh into scripts.gen.h. */
#include "rdl_build.h"

#include "script.h"
#include "scripts.gen.h"

#define RDL_SCRIPT(n) static const rdl_script_t s_##n = { #n, rdl_script_##n##_sha, rdl_script_##n##_body }
RDL_SCRIPT(acquire);
RDL_SCRIPT(release);
RDL_SCRIPT(renew);
RDL_SCRIPT(reset);
RDL_SCRIPT(status);
RDL_SCRIPT(sem);
RDL_SCRIPT(once);
RDL_SCRIPT(cond);
RDL_SCRIPT(barrier);
RDL_SCRIPT(acquire_sharded);
RDL_SCRIPT(release_sharded);
RDL_SCRIPT(renew_sharded);
RDL_SCRIPT(reset_sharded);
RDL_SCRIPT(status_sharded);
RDL_SCRIPT(sem_sharded);
RDL_SCRIPT(once_sharded);
RDL_SCRIPT(cond_sharded);
RDL_SCRIPT(barrier_sharded);

const rdl_scripts_t rdl_scripts_plain = { &s_acquire, &s_release, &s_renew, &s_reset, &s_status, &s_sem, &s_once,
                                          &s_cond, &s_barrier };
const rdl_scripts_t rdl_scripts_sharded = { &s_acquire_sharded, &s_release_sharded, &s_renew_sharded,
                                            &s_reset_sharded,   &s_status_sharded,  &s_sem_sharded,
                                            &s_once_sharded,    &s_cond_sharded,    &s_barrier_sharded };
