/* config_report.c - where each section and key stands in the ini file, and
 * the problems the loader logs with that line.
 *
 * The scan of the file's form (step 2) notes every header and key with its
 * line; the later steps only have iniparser's dictionary, which knows no
 * lines, so they ask here for the line of a key they object to.  Every name
 * from the file that reaches a log line goes through rdl_config_show(). */
#include "rdl_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config_int.h"
#include "base/log.h"

/* Copy a name from the file into buf for a log line: non-printable bytes
 * become '?', and long names are cut with "...", so that a hostile file
 * cannot forge log lines or flood them. */
const char *rdl_config_show(const char *s, char *buf, size_t bufsz)
{
    size_t i, n = 0;

    if (s == NULL)
        s = "";
    for (i = 0; s[i] != '\0' && n + 4 < bufsz; i++)
        buf[n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (s[i] != '\0' && n + 3 < bufsz) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

void rdl_config_line_problem(rdl_load_t *ld, int lineno, const char *fmt, ...)
{
    char reason[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    rdl_log(RDLOCK_LOG_ERROR, "config %s:%d: %s", ld->file, lineno, reason);
    ld->problems++;
}

int rdl_config_line_of(const rdl_load_t *ld, const char *section, const char *key)
{
    int line = 0;

    for (size_t i = 0; i < ld->nlocs; i++) {
        const rdl_loc_t *l = &ld->locs[i];
        if (strcmp(l->section, section) != 0 || (key == NULL) != (l->key == NULL))
            continue;
        if (key == NULL)
            return l->line;
        if (strcmp(l->key, key) == 0)
            line = l->line;
    }
    return line;
}

void rdl_config_key_problem(const rdl_load_t *ld, const char *section, const char *key, const char *fmt, ...)
{
    char reason[256], where[32] = "", sbuf[RDL_SHOW_MAX + 4], kbuf[RDL_SHOW_MAX + 4];
    int line = rdl_config_line_of(ld, section, key);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(where, sizeof where, ":%d", line);
    rdl_log(RDLOCK_LOG_ERROR, "config %s%s: %s:%s: %s", ld->file, where,
            rdl_config_show(section, sbuf, sizeof sbuf), rdl_config_show(key, kbuf, sizeof kbuf), reason);
}

void rdl_config_locs_free(rdl_load_t *ld)
{
    for (size_t i = 0; i < ld->nlocs; i++) {
        free(ld->locs[i].section);
        free(ld->locs[i].key);
    }
    free(ld->locs);
    ld->locs = NULL;
    ld->nlocs = ld->caplocs = 0;
}

void rdl_config_note_loc(rdl_load_t *ld, const char *section, const char *key, int line)
{
    rdl_loc_t *l;

    if (ld->nlocs == ld->caplocs) {
        size_t ncap = ld->caplocs ? ld->caplocs * 2 : 16;
        rdl_loc_t *n = realloc(ld->locs, ncap * sizeof *n);
        if (n == NULL) {
            ld->oom = 1;
            return;
        }
        ld->locs = n;
        ld->caplocs = ncap;
    }
    l = &ld->locs[ld->nlocs];
    l->section = strdup(section);
    l->key = key != NULL ? strdup(key) : NULL;
    l->line = line;
    if (l->section == NULL || (key != NULL && l->key == NULL)) {
        free(l->section);
        free(l->key);
        ld->oom = 1;
        return;
    }
    ld->nlocs++;
}
