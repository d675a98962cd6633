/* clients.h - the clients of this process: open and close, the registry
 * (for fork() and the exit handler), the process default client, and what
 * fork() does to them (docs/CONTRACT.md section 7). */
#ifndef RDL_CLIENTS_H
#define RDL_CLIENTS_H

#include "client.h"

/* Open a client (rdlock_client_open without argument checks). */
int rdl_client_open(rdlock_client_t **out, const char *ini_path);

/* The process default client, created on first call (docs/CONTRACT.md section 3). */
int rdl_client_default(rdlock_client_t **out);
/* fn(c, arg) for every open client, with the registry locked (lock order:
 * fn may take a client's mutex, never the registry's): the exit handler's
 * walk (lock.c). */
/* A handle's client (creating the process default one if the handle has
 * none yet) and its key.  Returns the default client's open error
 * (EINVAL, ENOENT, EACCES, EIO with fail_fast, ENOMEM) or
 * rdl_handle_bind's. */
struct rdl_handle;
int rdl_handle_resolve(struct rdl_handle *h, rdlock_client_t **out);

void rdl_clients_each(void (*fn)(rdlock_client_t *c, void *arg), void *arg);

#endif
