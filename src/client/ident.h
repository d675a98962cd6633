/* ident.h - who is asking: this thread's number, a client's random id and
 * the owner id "<client id>:<thread number>" the server keeps. */
#ifndef RDL_IDENT_H
#define RDL_IDENT_H

#include <stddef.h>

#include "client/client.h"

/* This thread's number (1, 2, ...), stable for the thread's life. */
unsigned rdl_thread_no(void);

/* Owner id "<client id>:<thread number>" into buf (RDL_OWNER_MAX). */
size_t rdl_owner(const rdlock_client_t *c, unsigned thread, char *buf);

/* A new random client id: RDL_ID_HEX hex digits of 128 random bits from
 * the OS into hex (RDL_ID_HEX + 1 bytes).  0, or EIO (logged). */
int rdl_ident_new(char *hex);

#endif
