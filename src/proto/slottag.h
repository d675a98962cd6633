/* slottag.h - the fencing counter that the names of one Redis Cluster slot
 * share.
 *
 * A lock's tokens come from a counter of its slot, not of its name, so that
 * a name leaves no key behind once its short-lived records lapse (section
 * 1 of docs/CONTRACT.md), while its tokens still strictly increase for as
 * long as the dataset lives: the counter is never expired or deleted, and
 * every grant of the name takes its next value.  The counter's key must be
 * in the name's slot (a script touches one slot), so it lives under a tag
 * chosen for that slot: "<prefix>{<tag>}:tokens".  One counter a slot is
 * also what a single server gets: at most 16384 keys, whatever the names.
 *
 * The tag of each slot is fixed forever (slottag-gen.py writes slottag_table.c and says the rule;
 * tests/test_cluster.c checks the table against it): another tag would be
 * another counter, and tokens could go back. */
#ifndef RDL_SLOTTAG_H
#define RDL_SLOTTAG_H

#include <stddef.h>

/* slottag_table.c: the tags, 3 bytes a slot, '.'-padded. */
extern const char rdl_slot_tags[16384 * 3 + 1];

/* The tag of slot (0..16383; higher bits ignored): *len bytes, 1 to 3 of
 * [0-9a-zA-Z], not NUL-terminated. */
const char *rdl_slot_tag(unsigned slot, size_t *len);

/* The most bytes rdl_counter_key adds to a key's length. */
#define RDL_COUNTER_KEY_EXTRA 12

/* The counter key of the lock whose main key is key[0, keylen)
 * ("<prefix>{<name>}", braces-free prefix) in slot, rdl_key_slot(key,
 * keylen) (the caller may know it already): "<prefix>{<tag>}:tokens", the
 * tag that of the slot, into out (keylen + RDL_COUNTER_KEY_EXTRA bytes at
 * least; not NUL-terminated).  Returns its length. */
size_t rdl_counter_key(const char *key, size_t keylen, unsigned slot, char *out);

#endif
