/* slottag.c - the counter a slot's names share (slottag.h). */
#include "rdl_build.h"

#include <string.h>

#include "proto/slottag.h"

const char *rdl_slot_tag(unsigned slot, size_t *len)
{
    const char *t = rdl_slot_tags + (size_t)(slot & 16383) * 3;
    *len = t[1] == '.' ? 1 : t[2] == '.' ? 2 : 3;
    return t;
}

size_t rdl_counter_key(const char *key, size_t keylen, unsigned slot, char *out)
{
    /* The prefix has no '{' (config_keys.c refuses one), so the first '{'
     * opens the name's tag; the key's slot is the name's on every
     * topology (on a single server too: one code path, one layout). */
    const char *brace = memchr(key, '{', keylen);
    size_t plen = brace != NULL ? (size_t)(brace - key) : 0, tl;
    const char *tag = rdl_slot_tag(slot, &tl);
    memcpy(out, key, plen);
    out[plen] = '{';
    memcpy(out + plen + 1, tag, tl);
    memcpy(out + plen + 1 + tl, "}:tokens", 8);
    return plen + 1 + tl + 8;
}
