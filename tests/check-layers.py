#!/usr/bin/env python3
"""check-layers.py SRC_DIR KNOWN_FILE [ORDER_FILE] - the layers of src/.

Two rules.  First, no include cycle; second, with ORDER_FILE, the layers
are folders and includes point down.

A module is a file name without .c/.h (lock.c and lock.h are "lock"); it
depends on every module whose header it includes with #include "...".  The
modules' dependency graph must have no cycle (issue 25), so that each layer
can be read, tested and changed knowing only those below it.

KNOWN_FILE lists the cycles not yet broken, one per line (module names,
space-separated).  The check fails when a cycle is not inside a listed one
(a new cycle, or a listed one grown) and when a listed cycle no longer
exists as listed (it shrank or is gone: shorten the list, so that it can
never grow back unnoticed).  An empty KNOWN_FILE means: no cycle at all.

ORDER_FILE names the folders of SRC_DIR bottom-up, one per line (# starts
a comment).  Then every .c and .h of SRC_DIR must sit in one of them, a
file may include a header of its own folder or of one listed before it,
never of one listed after, and the include names the folder
(#include "base/log.h"), so that each include line shows its layer.
"""
import os
import re
import sys

INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def modules(src):
    deps = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(('.c', '.h')):
                continue
            m = f[:-2]
            with open(os.path.join(root, f), errors='replace') as fh:
                for line in fh:
                    r = INCLUDE.match(line)
                    if r and r.group(1).endswith('.h'):
                        deps.setdefault(m, set()).add(os.path.basename(r.group(1))[:-2])
            deps.setdefault(m, set())
    return {m: {d for d in ds if d in deps and d != m} for m, ds in deps.items()}


def cycles(g):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def path_in(g, comp):
    """One cycle through comp's first module, to say what to cut."""
    start = sorted(comp)[0]
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(g[v] & comp):
            if w == start:
                p, node = [start], v
                while node is not None:
                    p.append(node)
                    node = prev[node]
                return ' -> '.join(reversed(p))
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return ''


def read_list(path):
    out = []
    with open(path) as fh:
        for line in fh:
            out += line.split('#', 1)[0].split()
    return out


def folders(src, order):
    """Failures of the folder rule: files outside the listed folders,
    includes pointing up or not naming the folder."""
    rank = {d: i for i, d in enumerate(order)}
    where, fails = {}, []
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        for f in files:
            if not f.endswith(('.c', '.h')):
                continue
            if rel not in rank:
                fails.append('%s/%s is in no layer folder (%s)' % (rel, f, ' '.join(order)))
                continue
            if f[:-2] in where and where[f[:-2]] != rel:
                fails.append('module %s is in two folders: %s and %s' % (f[:-2], where[f[:-2]], rel))
            where[f[:-2]] = rel
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        if rel not in rank:
            continue
        for f in sorted(files):
            if not f.endswith(('.c', '.h')):
                continue
            with open(os.path.join(root, f), errors='replace') as fh:
                for n, line in enumerate(fh, 1):
                    r = INCLUDE.match(line)
                    if not r or not r.group(1).endswith('.h'):
                        continue
                    m = os.path.basename(r.group(1))[:-2]
                    if m not in where:
                        continue
                    at = '%s/%s:%d' % (rel, f, n)
                    if r.group(1) != '%s/%s.h' % (where[m], m):
                        fails.append('%s: #include "%s" should name its folder: "%s/%s.h"' % (at, r.group(1), where[m], m))
                    if rank[where[m]] > rank[rel]:
                        fails.append('%s: %s (layer %s) includes %s/%s.h, a layer above it' % (at, f, rel, where[m], m))
    return fails


def main():
    src, known_file = sys.argv[1], sys.argv[2]
    order = read_list(sys.argv[3]) if len(sys.argv) > 3 else None
    known = []
    with open(known_file) as fh:
        for line in fh:
            line = line.split('#', 1)[0].split()
            if line:
                known.append(set(line))
    g = modules(src)
    bad = 0
    found = cycles(g)
    for comp in found:
        if not any(comp <= k for k in known):
            print('FAIL: include cycle: %s' % ' '.join(sorted(comp)))
            print('      for example %s' % path_in(g, comp))
            bad += 1
    for k in known:
        if not any(k == comp for comp in found):
            print('FAIL: %s lists a cycle that is not there as listed: %s' % (known_file, ' '.join(sorted(k))))
            now = [c for c in found if c & k]
            print('      now: %s' % ('; '.join(' '.join(sorted(c)) for c in now) or 'none'))
            bad += 1
    if order is not None:
        for why in folders(src, order):
            print('FAIL: %s' % why)
            bad += 1
    if bad:
        return 1
    print('ok: %d modules, %d known cycle(s) left, no new one%s' %
          (len(g), len(found), ', includes point down through %d folders' % len(order) if order else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
