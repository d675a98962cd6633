#!/usr/bin/env python3
"""check-size.py TOP KNOWN_FILE - no function over 100 lines, no file over
1,000, in src/, tools/ and bench/ (issue 25): past that, a function is
read as several and a file as several concepts.

A function is what this code style writes: a head that starts in column 0
with an identifier and holds "(" but no ";", then a body from a "{" in
column 0 to the next "}" in column 0; its length counts the head's first
line to the closing brace.

KNOWN_FILE lists what is over the limits and not yet split, one per line:
"FILE FUNCTION LINES" or "FILE - LINES" for a whole file.  The check fails
on anything over a limit that is not listed, on a listed one that grew,
and on a listed one that is now within the limits or shorter than listed
(shorten the list: it may only shrink).
"""
import os
import re
import sys

FUNC_MAX = 100
FILE_MAX = 1000
DIRS = ('src', 'tools', 'bench')
HEAD = re.compile(r'^[A-Za-z_][^;]*\(')


def measure(path):
    """(file lines, [(function, lines)])"""
    with open(path, errors='replace') as fh:
        lines = fh.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    funcs, cand, start, name = [], None, None, None
    for i, line in enumerate(lines):
        if start is None and HEAD.match(line) and ';' not in line:
            cand = i
            name = re.split(r'[ *]+', line.split('(', 1)[0].strip())[-1]
        elif line.startswith('{') and cand is not None and start is None:
            start, cand = cand, None
        elif line.startswith('}') and start is not None:
            funcs.append((name, i - start + 1))
            start = None
    return len(lines), funcs


def main():
    top, known_file = sys.argv[1], sys.argv[2]
    known = {}
    with open(known_file) as fh:
        for line in fh:
            f = line.split('#', 1)[0].split()
            if len(f) == 3:
                known[(f[0], f[1])] = int(f[2])
    over = {}
    for d in DIRS:
        for root, _, files in os.walk(os.path.join(top, d)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')) or f.endswith('.gen.h'):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, top)
                n, funcs = measure(path)
                if n > FILE_MAX:
                    over[(rel, '-')] = n
                for name, length in funcs:
                    if length > FUNC_MAX:
                        over[(rel, name)] = max(length, over.get((rel, name), 0))
    bad = 0
    for k, n in sorted(over.items()):
        what = 'file' if k[1] == '-' else 'function %s' % k[1]
        if k not in known:
            print('FAIL: %s: %s is %d lines (at most %d)' % (k[0], what, n, FILE_MAX if k[1] == '-' else FUNC_MAX))
            bad += 1
        elif n > known[k]:
            print('FAIL: %s: %s grew to %d lines (%s says %d)' % (k[0], what, n, known_file, known[k]))
            bad += 1
    for k, n in sorted(known.items()):
        if over.get(k, 0) < n:
            print('FAIL: %s lists %s %s at %d lines; it is %s now: shorten the list'
                  % (known_file, k[0], k[1], n, over.get(k, 'within the limit')))
            bad += 1
    if bad:
        return 1
    print('ok: %d over the limits, all listed in %s, none grown' % (len(over), known_file))
    return 0


if __name__ == '__main__':
    sys.exit(main())
