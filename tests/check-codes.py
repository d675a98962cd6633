#!/usr/bin/env python3
"""check-codes.py SRC_DIR - every internal int says what it means.

Issue 25: a caller of an internal function must find, in the comment above
its declaration, every code it can get back and when (as nghttp2's lib/*.h
say for theirs), without reading the function and all it calls.  Checked:
each prototype in SRC_DIR/*/*.h that returns `int` and whose name starts with
rdl_, and each `int (*name)(...)` member of a struct there (the exec ops of
exec.h, the topology hooks of topology.h, client.h's bg_start).

The comment that counts is the block comment right above the declaration,
or, where declarations are grouped under one comment (no blank line between
them), the group's comment.  It must either

  - list the codes: mention 0 and at least one errno name (EIO, EACCES,
    ENOMEM, ...: the names <errno.h> has), e.g.
        "0, or EIO (no answer), EACCES (refused), ENOMEM."
    A function that passes its callee's codes through lists them too
    ("0, or as rdl_conn_open_at: EIO, EACCES, EINVAL, ENOMEM"), so that
    the list is where the caller reads; or

  - say that the int is not an error code, with one of these phrases
    (case does not matter):
        "1 if"                    a boolean, 1 or 0
        "returns the number",
        "how many"                a count
        "returns the index"       an index (-1: none)
        "returns the descriptor"  a file descriptor (-1: none)
        "returns the line"        a line number (0: none)
        "returns the previous"    the value before, to put back
        "RDL_XX_*"                one of the values of an enum, named

The list of phrases is short on purpose: a new kind of return value adds
its phrase here, where a reviewer sees it.  The check cannot tell whether
a list is complete; it makes sure there is one to keep complete.
"""
import errno
import os
import re
import sys

# Every name of the errno module, aliases included (errorcode keeps one name
# per number: ENOTSUP and EOPNOTSUPP are one number on Linux).
ERRNO_NAMES = {n for n in dir(errno) if re.match(r'E[A-Z0-9]+$', n)}
ERRNO_WORD = re.compile(r'\bE[A-Z0-9]+\b')
ZERO = re.compile(r'(?<![\w.\-])0(?!\w|\.\d)')
NOT_A_CODE = [re.compile(p, re.I) for p in (
    r'\b1 if\b',
    r'\breturns the number\b',
    r'\bhow many\b',
    r'\breturns the index\b',
    r'\breturns the descriptor\b',
    r'\breturns the line\b',
    r'\breturns the previous\b',
)] + [re.compile(r'\bRDL_[A-Z0-9]+_\*')]

PROTO = re.compile(r'(?:static\s+)?(?:inline\s+)?int\s+(rdl_\w+)\s*\(')
MEMBER = re.compile(r'int\s*\(\s*\*\s*(\w+)\s*\)\s*\(')


def mask(text):
    """text with comments, string and char literals and preprocessor lines
    blanked (newlines kept, so offsets and line numbers stay)."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        ch = text[i]
        if line_start and ch in ' \t':
            i += 1
            continue
        if line_start and ch == '#':
            # A directive, with its continuation lines.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out[i] = ' '
                    i += 2
                    continue
                out[i] = ' '
                i += 1
            continue
        line_start = False
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if text[k] != '\n':
                    out[k] = ' '
            i = j
            continue
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                out[i] = ' '
                i += 1
            continue
        if ch in '"\'':
            j = i + 1
            while j < n and text[j] != ch and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            for k in range(i, min(j + 1, n)):
                out[k] = ' '
            i = j + 1
            continue
        if ch == '\n':
            line_start = True
        i += 1
    return ''.join(out)


def declarations(text):
    """(offset, name, kind) of each checked declaration: kind 'function'
    for a top-level int rdl_* prototype, 'member' for an int (*name)()
    member of a struct."""
    m = mask(text)
    found = []
    braces = parens = 0
    start = True  # at the start of a statement
    i, n = 0, len(m)
    while i < n:
        ch = m[i]
        if ch.isspace():
            i += 1
            continue
        if start and parens == 0:
            rx = PROTO if braces == 0 else MEMBER
            r = rx.match(m, i)
            if r:
                found.append((i, r.group(1), 'function' if braces == 0 else 'member'))
        start = False
        if ch == '(':
            parens += 1
        elif ch == ')':
            parens -= 1
        elif ch == '{':
            braces += 1
            start = True
        elif ch == '}':
            braces -= 1
            start = True
        elif ch == ';' and parens == 0:
            start = True
        i += 1
    return found


def comment_above(lines, lineno):
    """The block comment above line lineno (1-based), skipping the
    declarations of its group; None if there is none."""
    i = lineno - 2
    while i >= 0:
        s = lines[i].strip()
        if s == '' or s.endswith('{'):
            return None
        if s.endswith('*/'):
            j = i
            while j >= 0 and '/*' not in lines[j]:
                j -= 1
            if j < 0:
                return None
            if lines[j].split('/*', 1)[0].strip() == '':
                return '\n'.join(lines[j:i + 1])
            i = j - 1  # a comment after code on its line: part of the group
            continue
        i -= 1
    return None


def judge(comment):
    if comment is None:
        return 'has no comment above it (nor a group comment)'
    if any(p.search(comment) for p in NOT_A_CODE):
        return None
    has_zero = ZERO.search(comment) is not None
    has_errno = any(w in ERRNO_NAMES for w in ERRNO_WORD.findall(comment))
    if has_zero and has_errno:
        return None
    if not has_zero and not has_errno:
        what = 'mentions neither 0 nor an errno name'
    elif not has_zero:
        what = 'does not mention 0'
    else:
        what = 'names no errno code (EIO, EACCES, ENOMEM, ...)'
    return ('its comment %s: list the codes it returns, or say what else the int is '
            '(the phrases are at the top of tests/check-codes.py)' % what)


def main():
    src = sys.argv[1]
    bad = checked = 0
    headers = sorted(os.path.join(root, f) for root, _, files in os.walk(src) for f in files if f.endswith('.h'))
    for path in headers:
        with open(path, errors='replace') as fh:
            text = fh.read()
        lines = text.split('\n')
        for off, name, kind in declarations(text):
            lineno = text.count('\n', 0, off) + 1
            checked += 1
            why = judge(comment_above(lines, lineno))
            if why:
                what = name if kind == 'function' else 'int (*%s)() member' % name
                print('FAIL: %s:%d: %s: %s' % (path, lineno, what, why))
                bad += 1
    if checked == 0:
        print('FAIL: no int declaration found in %s/**/*.h: is the parser broken?' % src)
        return 1
    if bad:
        print('%d of %d int declarations in %s/**/*.h do not say what they return' % (bad, checked, src))
        return 1
    print('ok: %d int declarations in %d headers say what they return' % (checked, len(headers)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
