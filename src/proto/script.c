/* script.c - the tables of embedded scripts; bodies and SHA1s are
 * generated at build time by embed-scripts.sh into scripts.gen.h. */
#include "rdl_build.h"

#include "proto/script.h"
#include "scripts.gen.h"

#define RDL_SCRIPT(n) static const rdl_script_t s_##n = { #n, rdl_script_##n##_sha, rdl_script_##n##_body }
RDL_SCRIPT(acquire);
RDL_SCRIPT(release);
RDL_SCRIPT(renew);
RDL_SCRIPT(reset);
RDL_SCRIPT(status);
RDL_SCRIPT(sem);
RDL_SCRIPT(once);
RDL_SCRIPT(fence);
RDL_SCRIPT(cond);
RDL_SCRIPT(barrier);
RDL_SCRIPT(kinds);
RDL_SCRIPT(pstep);
RDL_SCRIPT(acquire_sharded);
RDL_SCRIPT(release_sharded);
RDL_SCRIPT(renew_sharded);
RDL_SCRIPT(reset_sharded);
RDL_SCRIPT(status_sharded);
RDL_SCRIPT(sem_sharded);
RDL_SCRIPT(once_sharded);
RDL_SCRIPT(fence_sharded);
RDL_SCRIPT(cond_sharded);
RDL_SCRIPT(barrier_sharded);
RDL_SCRIPT(kinds_sharded);
RDL_SCRIPT(pstep_sharded);

const rdl_scripts_t rdl_scripts_plain = {
    .acquire = &s_acquire,
    .release = &s_release,
    .renew = &s_renew,
    .reset = &s_reset,
    .status = &s_status,
    .sem = &s_sem,
    .once = &s_once,
    .fence = &s_fence,
    .cond = &s_cond,
    .barrier = &s_barrier,
    .kinds = &s_kinds,
    .pstep = &s_pstep,
};
const rdl_scripts_t rdl_scripts_sharded = {
    .acquire = &s_acquire_sharded,
    .release = &s_release_sharded,
    .renew = &s_renew_sharded,
    .reset = &s_reset_sharded,
    .status = &s_status_sharded,
    .sem = &s_sem_sharded,
    .once = &s_once_sharded,
    .fence = &s_fence_sharded,
    .cond = &s_cond_sharded,
    .barrier = &s_barrier_sharded,
    .kinds = &s_kinds_sharded,
    .pstep = &s_pstep_sharded,
};
