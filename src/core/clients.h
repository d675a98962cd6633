/* clients.h - the clients of this process: open and close, the registry
 * (for fork() and the exit handler), the process default client, and what
 * fork() does to them (docs/CONTRACT.md section 7). */
#ifndef RDL_CLIENTS_H
#define RDL_CLIENTS_H

#include "client/client.h"

/* Open a client (rdlock_client_open without argument checks).  0 and
 * *out, or
 *   EINVAL  the configuration has a problem, a TLS file does not load, or
 *           the server rejected the db number
 *   ENOENT  the file, or a file it names, does not exist
 *   EACCES  one of those cannot be read; the server (or a sentinel, a
 *           cluster node) refused our credentials; the Redis user may not
 *           PUBLISH or SUBSCRIBE to the lock channels
 *   EIO     unreachable with fail_fast; also no random bytes for the id,
 *           or no descriptor left for the wake-up pipe
 *   ENOMEM */
int rdl_client_open(rdlock_client_t **out, const char *ini_path);

/* The process default client, created on first call (docs/CONTRACT.md
 * section 3).  0 and *out, or as rdl_client_open: EINVAL, ENOENT, EACCES,
 * EIO, ENOMEM (not kept: the next call tries to open it again). */
int rdl_client_default(rdlock_client_t **out);

/* A handle's client (creating the process default one if the handle has
 * none yet) and its key.  0 and *out, or the default client's open error
 * (EINVAL, ENOENT, EACCES, EIO, ENOMEM, as rdl_client_default) or
 * rdl_handle_bind's (EINVAL: the name does not fit the client, ENOMEM). */
struct rdl_handle;
int rdl_handle_resolve(struct rdl_handle *h, rdlock_client_t **out);

/* fn(c, arg) for every open client, with the registry locked (lock order:
 * fn may take a client's mutex, never the registry's): the exit handler's
 * walk (exit.c). */
void rdl_clients_each(void (*fn)(rdlock_client_t *c, void *arg), void *arg);

#endif
