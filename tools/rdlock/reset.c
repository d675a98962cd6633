/*
 * reset.c - rdlock --reset NAME: clear every hold and queue mark of NAME and
 * its not-recoverable state (rdlock_reset_name(); the fencing counter is
 * kept).  The way out of "not recoverable" (exit 70) once the protected
 * state has been repaired; current holders find their lease lost.
 */
#include "rdl_build.h"

#include "rdlock.h"
#include "rdlock_tool.h"

int do_reset(rdlock_client_t *c, const opts_t *o)
{
    int rc = rdlock_reset_name(c, o->name);
    if (rc != 0)
        return op_failed(c, rc, "--reset");
    return 0;
}
