/* lock_keys.h - the keys of one lock name, as the lock's scripts take them
 * (src/scripts/acquire.lua documents the layout).
 *
 * Seven that every script takes (the fifth: the fencing counter the names
 * of the slot share, proto/slottag.h; the seventh: the readers' index),
 * three more that acquire and release use: the record of the last
 * release, the caller's own grant list (handover.h) and its finished-call
 * mark (an unlock's: late copies of the hold's acquire are void), and an
 * eleventh that only acquire takes: the name's own counter of earlier
 * versions, which it folds into the shared one. */
#ifndef RDL_LOCK_KEYS_H
#define RDL_LOCK_KEYS_H

#include <stddef.h>

#include "proto/script.h"

#define RDL_LOCK_NKEYS 7
#define RDL_LOCK_NKEYS_RELEASE RDL_LOCK_NKEYS_CALL
#define RDL_LOCK_NKEYS_ACQUIRE (RDL_LOCK_NKEYS_CALL + 1)
/* Indexes (from 0) of the keys made apart. */
#define RDL_LOCK_KEY_COUNTER 4 /* <prefix>{<tag>}:tokens */
#define RDL_LOCK_KEY_GRANTS 8  /* <key>:g:<owner> */
#define RDL_LOCK_KEY_DONE 9    /* <key>:f:<owner> */

/* Keys of the usual length fit the record itself: no allocation per call
 * (an acquire and a release each make them).  The record must not be
 * copied or moved once made, as v[] may point into it. */
#define RDL_LOCK_KEYS_INLINE 512

typedef struct rdl_lock_keys {
    char *buf; /* all of them: inline, or allocated if they do not fit */
    const char *v[RDL_LOCK_NKEYS_ACQUIRE];
    size_t l[RDL_LOCK_NKEYS_ACQUIRE];
    char inline_buf[RDL_LOCK_KEYS_INLINE];
} rdl_lock_keys_t;

/* All the keys of the lock whose main key is key[0, keylen), in slot (its
 * rdl_key_slot, which a handle keeps), the grant list "<key>:g:<owner>"
 * and the finished-call mark "<key>:f:<owner>" with owner (without: no
 * owner after the suffix): the first RDL_LOCK_NKEYS of them for the
 * scripts that take no more.  0, or ENOMEM. */
int rdl_lock_keys_make(rdl_lock_keys_t *k, const char *key, size_t keylen, unsigned slot, const char *owner);

/* What rdl_lock_keys_make allocated, if anything. */
void rdl_lock_keys_free(rdl_lock_keys_t *k);

#endif
