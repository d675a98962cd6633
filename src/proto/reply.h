/* reply.h - what Redis answers, decoded: the lock scripts' replies, the
 * subscription's messages and the server's error replies, from hiredis
 * reply objects to plain C values.
 *
 * Pure functions: no client, no I/O, no lock, no allocation except the
 * status snapshot's arrays.  Every reply is taken as untrusted: a wrong
 * type, a short array or a value out of range gives EIO (or is ignored, for
 * messages), never a crash.  tests/fuzz/fuzz_reply.c feeds them whatever
 * hiredis parses out of random bytes. */
#ifndef RDL_REPLY_H
#define RDL_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "rdlock.h"

/* An error reply: EACCES (authentication or permission), else EIO; never
 * 0 (a reply that is not an error gives EIO too). */
int rdl_reply_error(const redisReply *r);
/* An error reply worth retrying: the server is loading, busy running a
 * script, has no master (LOADING, BUSY, TRYAGAIN, MASTERDOWN) or too few
 * replicas to take writes (rdl_reply_noreplicas). */
bool rdl_reply_transient(const redisReply *r);
/* NOREPLICAS / NOTENOUGHREPLICAS: a master with min-replicas-to-write has
 * too few good replicas and refused a write.  Nothing was written (a
 * script fails at its first write), so the request was not confirmed: it
 * may be retried, and counts as EIO when retries run out. */
bool rdl_reply_noreplicas(const redisReply *r);
/* NOSCRIPT: the server's script cache lost our script. */
bool rdl_reply_noscript(const redisReply *r);
/* READONLY: the server is a replica now (demoted by a failover): the
 * master is elsewhere, reached by connecting again. */
bool rdl_reply_readonly(const redisReply *r);

/* acquire.lua: {1, token, dead, prev, now} | {0, hint, fence, first, now} |
 * {-1} | {-2, now}, or "<token>;<now>" for {1, token, 0, "", now}. */
typedef struct rdl_acquired {
    uint64_t token;  /* held */
    long long hint;  /* busy: ms until the holders' leases end, 0 unknown */
    uint64_t fence;  /* busy: the fencing counter now */
    bool first;      /* busy: the caller heads the writers' queue */
    char prev[66];   /* held: the robust marker the grant replaced, "" none */
    long long now;   /* the server's clock (ms), 0 unknown */
} rdl_acquired_t;
/* 0 held, EOWNERDEAD held after an unclean end, EBUSY, ENOTRECOVERABLE,
 * ESTALE (void: the attempt arrived after its deadline, or a newer call of
 * the owner is there; nothing was done), or EIO (not a reply of
 * acquire.lua). */
int rdl_reply_acquire(const redisReply *r, rdl_acquired_t *out);

/* release.lua: {status, kind, who, token}, or the bare integer status when
 * kind is 0. */
#define RDL_WHO_MAX 64
typedef struct rdl_released {
    long long status;       /* see release.lua */
    long long kind;         /* 0 nothing, 1 handed to who/token, 2 readers woken */
    char who[RDL_WHO_MAX];  /* kind 1: the new holder's owner id */
    size_t wholen;
    uint64_t token;         /* kind 1: its fencing token */
} rdl_released_t;
/* 0 (*out set; a hand-over whose who or token is malformed reads as kind
 * 0), or EIO. */
int rdl_reply_release(const redisReply *r, rdl_released_t *out);

/* renew.lua for n holds: the 1-based indices of the holds that are gone.
 * 0 and result[i] = 0 (renewed) or 1 (gone) for each i < n, or EIO (then
 * result is untouched: the outcome is unknown). */
int rdl_reply_renew(const redisReply *r, size_t n, int *result);

/* A message on the subscriber connection. */
enum { RDL_EV_NONE, RDL_EV_GRANT, RDL_EV_WAKE, RDL_EV_SUBSCRIBED, RDL_EV_UNSUBSCRIBED };
typedef struct rdl_event {
    const char *key;    /* the lock key: the channel without its suffix */
    size_t keylen;
    const char *owner;  /* RDL_EV_GRANT: "g <owner> <token>" */
    size_t ownerlen;
    uint64_t token;
} rdl_event_t;
/* RDL_EV_* for r, a reply read on a connection subscribed to channels
 * "<key><suffix>", plain or shard channels (smessage, ssubscribe,
 * sunsubscribe: a shard subscription also ends when its slot moves to
 * another node); pointers into r.  RDL_EV_NONE for anything else. */
int rdl_reply_event(const redisReply *r, const char *suffix, rdl_event_t *ev);

/* A message on the link to a sentinel (sentinel.c), subscribed to
 * +switch-master and +promoted-slave: */
enum { RDL_SEV_NONE, RDL_SEV_SWITCH, RDL_SEV_PROMOTED, RDL_SEV_PONG };
/* Returns RDL_SEV_*: RDL_SEV_SWITCH ("<name> <old ip> <old port> <new ip>
 * <new port>") or RDL_SEV_PROMOTED ("slave <ip>:<port> <ip> <port> @
 * <name> <master ip> <master port>") when about master `name`, with the new
 * master's "ip:port" in addr (n bytes); RDL_SEV_PONG for the answer to a
 * PING; RDL_SEV_NONE for anything else (other masters, confirmations,
 * garbage; addr untouched). */
int rdl_reply_sentinel(const redisReply *r, const char *name, char *addr, size_t n);

/* INFO server: how long the server has run (uptime_in_seconds) and its
 * run id (n bytes).  0, EACCES (an error reply about authentication), or
 * EIO. */
int rdl_reply_info_server(const redisReply *r, long long *uptime_s, char *run_id, size_t n);
/* TIME: the server's clock in ms.  0 or EIO. */
int rdl_reply_time(const redisReply *r, long long *ms);

/* status.lua: {now, mode, holders, writers, readers waiting, fence,
 * robust marker}.  0 (free with rdlock_status_free), EIO or ENOMEM. */
int rdl_reply_status(const redisReply *r, rdlock_status_t *st);

/* kinds.lua: {now, sem, once, cond, barrier}, each {} when absent.  0 and
 * *k filled whole (its size field left as it was), or EIO (then *k is
 * zero but for size). */
int rdl_reply_kinds(const redisReply *r, rdlock_kinds_t *k);
/* A run-once mark "<owner>;<pid>;<host>" (once.lua) into p: owner, pid,
 * the thread from the owner "<client id>:<thread>" and host; what does not
 * parse stays 0 / empty. */
void rdl_reply_once_mark(const char *mark, size_t len, rdlock_party_t *p);

#endif
