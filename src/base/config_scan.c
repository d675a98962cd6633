/* config_scan.c - step 2 of a load: the ini file's form, line by line,
 * before iniparser reads it, and where each section and key stands.
 *
 * The rules are the contract's own syntax (rdlock.ini(5)), stricter than
 * iniparser's reader where iniparser would accept a mistake silently (an
 * unterminated quote, text after a closing quote or a section's ']',
 * "[a:b]", a continuation on the last line, a NUL byte, a line longer than
 * its buffer), so that a file that passes reads the same to both, and a
 * file that does not is refused with each bad line named.  Only the form
 * is looked at here: the values are checked once iniparser has read them
 * (step 4). */
#include "rdl_build.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/config_int.h"

/* The longest logical line, continuations and their line breaks
 * included.  Ours to choose, and chosen below iniparser 4.1's line buffer
 * (1024 bytes, ASCIILINESZ), so that iniparser never sees a line it would
 * split or refuse. */
#define RDL_LINE_MAX 1022

static char *strip(char *s)
{
    size_t len;

    while (isspace((unsigned char)*s))
        s++;
    len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

static void lower(char *s)
{
    for (; *s != '\0'; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* One logical line (continuations joined) that starts on line lineno.
 * section (RDL_LINE_MAX + 1 bytes) is the current section, "" before the
 * first header. */
static void scan_line(rdl_load_t *ld, int lineno, char *s, char *section)
{
    char sbuf[RDL_SHOW_MAX + 4], kbuf[RDL_SHOW_MAX + 4];
    char *eq, *v, *q;

    s = strip(s);
    if (s[0] == '\0' || s[0] == '#' || s[0] == ';')
        return;

    if (s[0] == '[') {
        char *name = s + 1, *rb = strchr(name, ']');

        if (rb == NULL) {
            rdl_config_line_problem(ld, lineno, "syntax error: a section header is `[name]`");
            section[0] = '\0';
            return;
        }
        *rb = '\0';
        name = strip(name);
        lower(name);
        /* Keys under a rejected header belong to no section we know:
         * they are not checked (nor taken for the previous section's). */
        snprintf(section, RDL_LINE_MAX + 1, "%s", name[0] != '\0' && !strchr(name, ':') ? name : ":");
        if (name[0] == '\0')
            rdl_config_line_problem(ld, lineno, "empty section name");
        else if (strchr(name, ':') != NULL)
            /* iniparser names keys "section:key"; [a:b] would read as [a]. */
            rdl_config_line_problem(ld, lineno, "[%s]: a section name cannot contain ':'",
                                    rdl_config_show(name, sbuf, sizeof sbuf));
        else if (rdl_config_line_of(ld, name, NULL) == 0)
            rdl_config_note_loc(ld, name, NULL, lineno);
        if (strip(rb + 1)[0] != '\0')
            rdl_config_line_problem(ld, lineno, "unexpected text after the ']' of a section name "
                                     "(a header takes no comment)");
        return;
    }

    eq = strchr(s, '=');
    if (eq == NULL || eq == s) {
        rdl_config_line_problem(ld, lineno, "syntax error: expected `key = value`, `[section]` or a comment "
                                 "(line text not shown: it may hold a secret)");
        return;
    }
    *eq = '\0';
    s = strip(s);
    lower(s);
    if (section[0] == '\0') {
        rdl_config_line_problem(ld, lineno, "%s: key outside any section", rdl_config_show(s, kbuf, sizeof kbuf));
        return;
    }
    v = eq + 1;
    while (isspace((unsigned char)*v))
        v++;
    if (*v == '"' || *v == '\'') {
        /* iniparser takes `"abc` as abc and drops what follows a closing
         * quote; both would hide a mistake. */
        q = strchr(v + 1, *v);
        if (q == NULL) {
            rdl_config_line_problem(ld, lineno, "%s:%s: unterminated quote",
                                    rdl_config_show(section, sbuf, sizeof sbuf), rdl_config_show(s, kbuf, sizeof kbuf));
            return;
        }
        q++;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != '\0' && *q != ';' && *q != '#') {
            rdl_config_line_problem(ld, lineno, "%s:%s: unexpected text after the closing quote",
                                    rdl_config_show(section, sbuf, sizeof sbuf), rdl_config_show(s, kbuf, sizeof kbuf));
            return;
        }
    }
    if (section[0] != ':')
        rdl_config_note_loc(ld, section, s, lineno);
}

/* Check the file's form, line by line, and note where each section and
 * key is.  This is the contract's own syntax (rdlock.ini(5)), not a copy
 * of iniparser's reader: a file that passes means the same to both, and a
 * file that does not is refused with the line named, before iniparser
 * sees it.  Returns the number of problems (logged); ld->oom on ENOMEM. */
int rdl_config_scan(rdl_load_t *ld, const char *buf, size_t len)
{
    char section[RDL_LINE_MAX + 1] = "";
    char lb[RDL_LINE_MAX + 1];  /* the logical line being joined */
    size_t lbn = 0, raw = 0, pos = 0;
    int lineno = 0, start = 1, before = ld->problems;
    bool cont = false, bad = false;

    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) {
        /* iniparser would read the mark as part of the first line. */
        rdl_config_line_problem(ld, 1, "the file starts with a UTF-8 byte order mark: save it without one");
        return ld->problems - before;
    }
    while (pos < len) {
        const char *line = buf + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t plen = nl != NULL ? (size_t)(nl - line) : len - pos, e;

        lineno++;
        if (!cont) {
            start = lineno;
            lbn = raw = 0;
            bad = false;
        }
        pos += plen + (nl != NULL);
        raw += plen + 1;
        if (!bad && memchr(line, '\0', plen) != NULL) {
            rdl_config_line_problem(ld, lineno, "the line contains a NUL byte");
            bad = true;
        } else if (!bad && raw > RDL_LINE_MAX + 1) {
            rdl_config_line_problem(ld, start, "line too long (at most %d bytes%s)", RDL_LINE_MAX,
                                    cont ? ", continuations included" : "");
            bad = true;
        }
        e = plen;
        while (e > 0 && isspace((unsigned char)line[e - 1]))
            e--;
        /* A backslash at the end joins the next line in its place. */
        cont = e > 0 && line[e - 1] == '\\';
        if (cont)
            e--;
        if (!bad) {
            memcpy(lb + lbn, line, e);
            lbn += e;
        }
        if (cont) {
            if (pos < len)
                continue;
            cont = false;
            if (!bad) {
                rdl_config_line_problem(ld, start, "a continuation ('\\' at the end) on the last line");
                bad = true;
            }
        }
        if (!bad) {
            lb[lbn] = '\0';
            scan_line(ld, start, lb, section);
        }
    }
    explicit_bzero(lb, sizeof lb);
    return ld->problems - before;
}
