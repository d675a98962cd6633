/* info.h - a master's INFO replication text, decoded: how many replicas
 * it reports online, for [replication] wait_replicas = all (the count
 * every acquisition waits for, client/replicas.h).
 *
 * A pure function in the style of reply.c and slotmap.c: no client, no
 * I/O, no lock, no log (the caller knows which server said it), no
 * allocation.  The text is untrusted: anything that does not read as a
 * master's replication section gives EIO, never a crash, and never a
 * count it does not show.  tests/test_replica.c checks it on Redis's own
 * text and on malformed input. */
#ifndef RDL_INFO_H
#define RDL_INFO_H

#include <stddef.h>

/* In text (len bytes, NUL not needed; lines end in "\r\n" or "\n"): the
 * replicas listed as "slave<N>:...,state=online,..." into *online.  The
 * "role:" line must say master, and the "slave<N>:" lines must be as many
 * as "connected_slaves:" says, each with a state= field: what a master
 * writes.  0 and *online; EROFS: the server is a replica ("role:slave");
 * EIO: anything else (no role line, a count that does not match, a
 * replica line without its state, a number out of range). */
int rdl_info_online_replicas(const char *text, size_t len, int *online);

#endif
