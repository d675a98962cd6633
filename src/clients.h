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
void rdl_clients_each(void (*fn)(rdlock_client_t *c, void *arg), void *arg);

#endif
