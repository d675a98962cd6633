/* config_ini.c - steps 3 and 4 of a load: iniparser reads the file, and
 * every key it found is handed to the key table (config_keys.c).
 *
 * The one file of the loader that knows iniparser, and only through its
 * public API (iniparser_load, getnsec, getsecname, getseckeys, getstring):
 * written against iniparser 4.1 (Debian bookworm's 4.1-6), nothing here
 * reads its dictionary's fields.  iniparser echoes a bad line in its error
 * messages, and a line may hold a password, so its reports are scrubbed
 * here before they are logged. */
#include "rdl_build.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_INIPARSER_INIPARSER_H
#include <iniparser/iniparser.h>
#else
#include <iniparser.h>
#endif

#include "base/config_int.h"
#include "base/log.h"

/* iniparser's error callback is process-global and takes no context, so
 * loads are serialised and the callback reports into this state. */
static pthread_mutex_t ini_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const char *file;    /* the name to log */
    int errors;
    int oom;
} ini_state;

/* iniparser 4.1 prints "syntax error in FILE (N):\n-> LINE": the echoed
 * line may be `password = ...`.  Keep only the first line of the message,
 * and as a second guard cut anything after an '=' or "->" that follows the
 * file name, in case another iniparser version puts it on one line.  The
 * scan refuses every line iniparser 4.1 calls an error, so this is for
 * other versions. */
static int ini_errback(const char *fmt, ...)
{
    char msg[512];
    char *p, *from;
    size_t n;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    p = strchr(msg, '\n');
    if (p != NULL)
        *p = '\0';
    from = msg;
    if (ini_state.file != NULL && (p = strstr(msg, ini_state.file)) != NULL)
        from = p + strlen(ini_state.file);
    if ((p = strchr(from, '=')) != NULL)
        *p = '\0';
    if ((p = strstr(from, "->")) != NULL)
        *p = '\0';
    n = strlen(msg);
    while (n > 0 && (msg[n - 1] == ':' || isspace((unsigned char)msg[n - 1])))
        msg[--n] = '\0';
    if (strstr(msg, "memory allocation") != NULL)
        ini_state.oom = 1;
    ini_state.errors++;
    rdl_log(RDLOCK_LOG_ERROR, "config %s: %s (line text not shown: it may hold a secret)",
            ini_state.file != NULL ? ini_state.file : "?", msg);
    return 0;
}

/* iniparser_load(file) with our callback.  Returns the dictionary or NULL;
 * *errors = iniparser's error count, *oom set if it ran out of memory. */
static dictionary *ini_load(const char *file, int *errors, int *oom)
{
    dictionary *d;

    pthread_mutex_lock(&ini_mu);
    ini_state.file = file;
    ini_state.errors = 0;
    ini_state.oom = 0;
    iniparser_set_error_callback(ini_errback);
    d = iniparser_load(file);
    /* There is no getter for the previous callback; restore the default
     * so that no later iniparser user reaches our (stale) state. */
    iniparser_set_error_callback(NULL);
    *errors = ini_state.errors;
    *oom = ini_state.oom;
    ini_state.file = NULL;
    pthread_mutex_unlock(&ini_mu);
    if (d == NULL && *errors == 0)
        *oom = 1; /* iniparser fails silently only when malloc fails */
    return d;
}

/* Check and apply every key of section sec, read through iniparser's
 * public API (names come lowercased, as "sec:key", in file order). */
static void apply_section(rdl_load_t *ld, dictionary *d, const char *sec)
{
    int nkeys = iniparser_getsecnkeys(d, sec);
    const char **keys;
    size_t seclen = strlen(sec);
    char sbuf[RDL_SHOW_MAX + 4];

    if (!rdl_config_known_section(sec)) {
        int line = rdl_config_line_of(ld, sec, NULL);
        rdl_log(RDLOCK_LOG_ERROR, "config %s:%d: [%s]: unknown section", ld->file, line,
                rdl_config_show(sec, sbuf, sizeof sbuf));
        ld->problems++;
        return;
    }
    if (nkeys <= 0)
        return;
    keys = calloc((size_t)nkeys, sizeof *keys);
    if (keys == NULL) {
        ld->oom = 1;
        return;
    }
    if (iniparser_getseckeys(d, sec, keys) == NULL) {
        free(keys);
        return;
    }
    for (int i = 0; i < nkeys; i++) {
        const char *full = keys[i], *key;
        const rdl_keydef_t *kd;
        char *val;

        if (full == NULL || strncmp(full, sec, seclen) != 0 || full[seclen] != ':')
            continue;
        key = full + seclen + 1;
        /* The dictionary's own copy: the password is wiped from it below. */
        val = (char *)iniparser_getstring(d, full, NULL);
        if (val == NULL)
            continue;
        kd = rdl_config_keydef(sec, key);
        if (kd == NULL) {
            /* Never the value: `pasword = secret` must not leak. */
            rdl_config_key_problem(ld, sec, key, "unknown key");
            ld->problems++;
        } else if (val[0] != '\0') { /* empty: the key's default */
            rdl_config_apply_value(ld, kd, val);
        }
        /* Every value may be a secret mistyped under another key. */
        explicit_bzero(val, strlen(val));
    }
    free(keys);
}

static void apply_dict(rdl_load_t *ld, dictionary *d)
{
    int nsec = iniparser_getnsec(d);

    for (int i = 0; i < nsec && !ld->oom; i++) {
        const char *sec = iniparser_getsecname(d, i);
        if (sec != NULL)
            apply_section(ld, d, sec);
    }
}

bool rdl_config_ini_apply(rdl_load_t *ld, int *ini_oom)
{
    int errors = 0;
    dictionary *d = ini_load(ld->file, &errors, ini_oom);

    ld->problems += errors;
    if (d == NULL)
        return false;
    apply_dict(ld, d);
    iniparser_freedict(d);
    return true;
}
