/* script.h - the embedded Lua scripts (src/scripts/NAME.lua), each called with
 * EVALSHA and re-sent with EVAL when the server answers NOSCRIPT (after a
 * restart or SCRIPT FLUSH). */
#ifndef RDL_SCRIPT_H
#define RDL_SCRIPT_H

typedef struct rdl_script {
    const char *name;
    const char *sha;  /* 40 hex digits */
    const char *body;
} rdl_script_t;

extern const rdl_script_t rdl_script_acquire;
extern const rdl_script_t rdl_script_release;
extern const rdl_script_t rdl_script_renew;
extern const rdl_script_t rdl_script_reset;
extern const rdl_script_t rdl_script_status;

#endif
