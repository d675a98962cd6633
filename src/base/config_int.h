/* config_int.h - what the files of the configuration loader share, and
 * nothing the rest of the library needs (that is config.h).
 *
 * The loader is split by job, listed here in the order a load runs them
 * (config.c's comment tells the steps):
 *
 *   config.c         the entry points: defaults, free, the file search and
 *                    one load from start to end
 *   config_files.c   the files read: the ini file, and the password_file
 *                    and TLS files it names
 *   config_scan.c    the file's form, line by line, before iniparser reads
 *                    it (and the line of every section and key)
 *   config_report.c  where each section and key stands in the file, and
 *                    the problems logged with that line
 *   config_ini.c     iniparser: it reads the file, and each key it found
 *                    goes to the key table
 *   config_keys.c    the table of sections and keys, and each value parsed
 *                    into rdl_config_t
 *   config_check.c   the rules between keys, once all are read
 *
 * Every function here is hidden from the library's users like the rest of
 * src/ (-fvisibility=hidden); the rdl_config_ prefix says whose it is. */
#ifndef RDL_CONFIG_INT_H
#define RDL_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>

/* The configuration (rdl_config_t, config.h) by its struct name: config.c
 * includes this header, so this header does not include config.h back (no
 * include cycle between the two). */
struct rdl_config;

/* How much of a name is shown in a log line. */
#define RDL_SHOW_MAX 64

/* Where a section header or a key stands in the file, for log lines: the
 * first header of a section, the last line of a key (the last one wins, as
 * in iniparser).  key NULL: a header. */
typedef struct rdl_loc {
    char *section;
    char *key;
    int line;
} rdl_loc_t;

/* What one load collects beyond *cfg. */
typedef struct rdl_load {
    const char *file;
    struct rdl_config *cfg;
    int problems;        /* EINVAL-class problems found */
    int oom;
    char *password_file; /* as written in the file */
    char *sentinel_password_file; /* [sentinel]'s, as written */
    char *sentinel_tls;  /* [sentinel] tls as written ("" or NULL: as [redis]) */
    bool lease_bad;      /* lease_ms was invalid: skip the cross checks */
    rdl_loc_t *locs;     /* from the scan, in file order */
    size_t nlocs, caplocs;
} rdl_load_t;

/* ----------------------------------------------------- config_files.c */

/* Read the whole ini file into a NUL-terminated buffer (*len bytes, which
 * may contain NULs).  Returns 0, ENOENT, EACCES, EINVAL or ENOMEM, logged. */
int rdl_config_read_file(const char *path, char **out, size_t *len);

/* p (from the ini file named file) resolved against file's directory.
 * Returns a new string or NULL (out of memory). */
char *rdl_config_resolve_path(const char *file, const char *p);

/* [section] password_file pf (NULL: not given) into *pw, unless password
 * was given too (a problem).  0 or ENOENT, EACCES, ENOMEM; EINVAL-class
 * problems are counted in ld->problems. */
int rdl_config_password_from_file(rdl_load_t *ld, const char *section, const char *pf, char **pw);

/* [redis] key, a TLS file (dir: the CA directory): *path resolved in place,
 * and a readable regular file (or directory) there.  0, ENOENT, EACCES or
 * ENOMEM, logged with the key's line. */
int rdl_config_tls_path(rdl_load_t *ld, const char *key, char **path, bool dir);

/* ------------------------------------------------------ config_scan.c */

/* Check the form of the file's text (buf, len bytes, NULs included), line
 * by line, and note where each section and key is.  Returns the number of
 * problems (logged and counted); ld->oom on ENOMEM. */
int rdl_config_scan(rdl_load_t *ld, const char *buf, size_t len);

/* ---------------------------------------------------- config_report.c */

/* Copy a name from the file into buf for a log line (see config_report.c:
 * never raw bytes, never too long).  Returns buf. */
const char *rdl_config_show(const char *s, char *buf, size_t bufsz);

/* One problem with a line of the file's form: "config FILE:LINE: reason",
 * counted in ld->problems. */
void rdl_config_line_problem(rdl_load_t *ld, int lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One problem with a key, with its line when the file has the key:
 * "config FILE:LINE: section:key: reason".  Not counted: the caller counts
 * it (or returns an error code instead). */
void rdl_config_key_problem(const rdl_load_t *ld, const char *section, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Returns the line of section:key (key NULL: of the section's header), 0
 * if the file does not have it. */
int rdl_config_line_of(const rdl_load_t *ld, const char *section, const char *key);

/* Note where section:key (key NULL: the section's header) stands; sets
 * ld->oom when out of memory. */
void rdl_config_note_loc(rdl_load_t *ld, const char *section, const char *key, int line);

/* Free what the notes hold. */
void rdl_config_locs_free(rdl_load_t *ld);

/* ------------------------------------------------------- config_ini.c */

/* iniparser_load(ld->file), its errors logged (scrubbed) and counted in
 * ld->problems, and every key of every section checked and stored
 * (rdl_config_apply_value).  Returns whether iniparser gave a dictionary,
 * that is whether the keys were read; *ini_oom is set when iniparser ran
 * out of memory (ld->oom when the loader did). */
bool rdl_config_ini_apply(rdl_load_t *ld, int *ini_oom);

/* ------------------------------------------------------ config_keys.c */

/* One entry of the key table: opaque outside config_keys.c. */
typedef struct rdl_keydef rdl_keydef_t;

/* Whether [name] is a section the loader knows. */
bool rdl_config_known_section(const char *name);

/* The table's entry for section:key (both lowercase), NULL if unknown. */
const rdl_keydef_t *rdl_config_keydef(const char *section, const char *key);

/* Check val (not empty) as kd's type and range and store it in ld->cfg (or
 * ld, for what finish checks later); each problem is logged and counted in
 * ld->problems, ENOMEM sets ld->oom. */
void rdl_config_apply_value(rdl_load_t *ld, const rdl_keydef_t *kd, const char *val);

/* ----------------------------------------------------- config_check.c */

/* The rules that involve more than one key, and the files the keys name
 * (socket, password_file, the TLS files), once every key is read.
 * Returns 0 or the error of a file (ENOENT, EACCES, ENOMEM); EINVAL-class
 * problems are logged and counted in ld->problems. */
int rdl_config_finish(rdl_load_t *ld);

#endif
