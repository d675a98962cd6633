/* lock_keys.c - the keys of one lock name (lock_keys.h). */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prim/lock_keys.h"
#include "proto/slottag.h"

int rdl_lock_keys_make(rdl_lock_keys_t *k, const char *key, size_t keylen, unsigned slot, const char *owner)
{
    /* The counter is made apart (rdl_counter_key). */
    static const char *const sfx[RDL_LOCK_NKEYS_ACQUIRE] = { "", ":w", ":wq", ":r", NULL, ":x", ":sd", ":rel", ":g:",
                                                             ":f:", ":fence" };
    static const size_t sfxlen[RDL_LOCK_NKEYS_ACQUIRE] = { 0, 2, 3, 2, 0, 2, 3, 4, 3, 3, 6 };
    size_t i, off = 0, ol = owner != NULL ? strlen(owner) : 0;
    /* Ten of key and a suffix (28 bytes of suffixes), the counter, the
     * owner twice. */
    size_t need = (RDL_LOCK_NKEYS_ACQUIRE - 1) * keylen + 28 + keylen + RDL_COUNTER_KEY_EXTRA + 2 * ol;
    k->buf = need <= sizeof k->inline_buf ? k->inline_buf : malloc(need);
    if (k->buf == NULL)
        return ENOMEM;
    for (i = 0; i < RDL_LOCK_NKEYS_ACQUIRE; i++) {
        k->v[i] = k->buf + off;
        if (i == RDL_LOCK_KEY_COUNTER) {
            k->l[i] = rdl_counter_key(key, keylen, slot, k->buf + off);
        } else {
            memcpy(k->buf + off, key, keylen);
            memcpy(k->buf + off + keylen, sfx[i], sfxlen[i]);
            k->l[i] = keylen + sfxlen[i];
            if (i == RDL_LOCK_KEY_GRANTS || i == RDL_LOCK_KEY_DONE) {
                /* the grant list and the finished-call mark: the owner
                 * after ":g:", ":f:" */
                memcpy(k->buf + off + k->l[i], owner != NULL ? owner : "", ol);
                k->l[i] += ol;
            }
        }
        off += k->l[i];
    }
    return 0;
}

void rdl_lock_keys_free(rdl_lock_keys_t *k)
{
    if (k->buf != k->inline_buf)
        free(k->buf);
    k->buf = NULL;
}
