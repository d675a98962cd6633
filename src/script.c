/* script.c - the table of embedded scripts; bodies and SHA1s are generated
 * at build time by embed-scripts.sh into scripts.gen.h. */
#include "rdl_build.h"

#include "script.h"
#include "scripts.gen.h"

#define RDL_SCRIPT(n) const rdl_script_t rdl_script_##n = { #n, rdl_script_##n##_sha, rdl_script_##n##_body }
RDL_SCRIPT(acquire);
RDL_SCRIPT(release);
RDL_SCRIPT(renew);
RDL_SCRIPT(reset);
RDL_SCRIPT(status);
