/* admin.h - looking at and clearing a lock name from outside its holders:
 * the snapshot behind rdlock_status_name() (and `rdlock --status`) and
 * rdlock_reset_name().  The types are the public ones of rdlock.h. */
#ifndef RDL_ADMIN_H
#define RDL_ADMIN_H

#include "rdlock.h"

typedef rdlock_party_t rdl_party_t;
typedef rdlock_status_t rdl_status_t;

/* rdlock_status_name() without the argument checks: c NULL is the default
 * client.  0, or EINVAL (bad name, config), ENOENT, EACCES, EIO, ENOMEM. */
int rdl_status(rdlock_client_t *c, const char *name, rdl_status_t *st);

#endif
