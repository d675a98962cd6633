/* exec.c - which set of operations a topology takes (exec.h). */
#include "rdl_build.h"

#include "exec/exec.h"
#include "topology/topology.h"

const rdl_exec_ops_t *rdl_exec_of(const rdl_topology_ops_t *topo)
{
    return topo->quorum ? &rdl_exec_quorum : &rdl_exec_single;
}
