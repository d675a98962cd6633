#!/usr/bin/env python3
# mutate.py - shows that the cases of tests/scripts/ can fail: breaks each
# `return` of each script on purpose, one at a time, in a copy of the
# scripts directory, and runs that script's cases against the copy
# (run-tests.sh SCRIPTS_DIR -1 SCRIPT).  A mutant that no case notices
# "survived": a return whose answer no case checks, or a change that makes
# no difference (an equivalent mutant: judged by hand).  Not part of make
# check (several minutes).
#
#   python3 tests/scripts/mutate.py [SCRIPTS_DIR] [SCRIPT[:LINE]...]
#
# Two mutants per return:
#   crash  error('mutant') just before it: every case that reaches it fails
#   value  its value changed: the first true/false flipped, else the first
#          integer literal + 10, else a table constructor given one more
#          element, else the value replaced by nil (nil by a string)
# The returns listed in `unreached` are left out.  Prints one line per
# mutant and the survivors at the end (README names the equivalent ones
# known); exits 1 only if the cases fail on the scripts as they are.

import os
import re
import shutil
import subprocess
import sys
import tempfile

import importlib.util

HERE = os.path.dirname(os.path.abspath(__file__))
# run-cases.py's Lua helpers (a dash in its name: loaded by path; no
# bytecode left in the source tree).
sys.dont_write_bytecode = True
_spec = importlib.util.spec_from_file_location('run_cases', os.path.join(HERE, 'run-cases.py'))
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)


def expr_span(line, start):
    """[start, end) of the expression after `return` at start: up to a
    top-level `end`, a comment or the end of the line."""
    i, depth, q = start, 0, None
    while i < len(line):
        c = line[i]
        if q:
            if c == '\\':
                i += 1
            elif c == q:
                q = None
        elif c in '\'"':
            q = c
        elif c in '({[':
            depth += 1
        elif c in ')}]':
            depth -= 1
        elif line.startswith('--', i):
            break
        elif depth == 0 and re.match(r'end\b', line[i:]) and (i == 0 or not line[i - 1].isalnum()):
            break
        i += 1
    end = i
    while end > start and line[end - 1] == ' ':
        end -= 1
    return start, end


def code_tokens(expr):
    """(position, token) of words and numbers outside strings."""
    out, i, q = [], 0, None
    while i < len(expr):
        c = expr[i]
        if q:
            if c == '\\':
                i += 1
            elif c == q:
                q = None
            i += 1
            continue
        if c in '\'"':
            q = c
            i += 1
            continue
        m = re.match(r'-?\d+|[A-Za-z_][A-Za-z_0-9]*', expr[i:])
        if m and (i == 0 or not (expr[i - 1].isalnum() or expr[i - 1] in '_.[')):
            out.append((i, m.group(0)))
            i += len(m.group(0))
            continue
        if m:
            i += len(m.group(0))
            continue
        i += 1
    return out


def value_mutant(expr):
    """(new expression, what) for the value mutant of a return expression."""
    toks = code_tokens(expr)
    for pos, t in toks:
        if t in ('true', 'false'):
            return expr[:pos] + ('false' if t == 'true' else 'true') + expr[pos + len(t):], '%s -> flipped' % t
    for pos, t in toks:
        if re.fullmatch(r'-?\d+', t):
            return expr[:pos] + str(int(t) + 10) + expr[pos + len(t):], '%s -> %d' % (t, int(t) + 10)
    if expr.startswith('{') and expr.endswith('}'):
        return expr[:-1] + ', 99}', 'one more element'
    if expr in ('', 'nil'):
        return "'mutant'", 'nil -> a string'
    return 'nil', 'value -> nil'


def mutants(name, text):
    """(id, description, mutated text) for each return of a script."""
    lines = text.split('\n')
    for ln, col in rc.return_sites(text):
        line = lines[ln - 1]
        s, e = expr_span(line, col + len('return'))
        expr = line[s:e].strip()
        rid = '%s:%d' % (name, ln)
        crash = line[:col] + "error('mutant') " + line[col:]
        yield rid, 'crash', '\n'.join(lines[:ln - 1] + [crash] + lines[ln:])
        new, what = value_mutant(expr)
        changed = line[:col] + 'return ' + new + (' ' if line[e:e + 1] not in ('', ' ') else '') + line[e:]
        yield rid, 'value (%s)' % what, '\n'.join(lines[:ln - 1] + [changed] + lines[ln:])


def run(sdir, script):
    p = subprocess.run(['sh', os.path.join(HERE, 'run-tests.sh'), sdir, '-1'] + ([script] if script else []),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    out = p.stdout.decode('utf-8', 'replace')
    return p.returncode, [l.split()[1] for l in out.split('\n') if l.startswith('FAIL ')], out


def main(argv):
    args = argv[1:]
    sdir = os.path.join(HERE, '..', '..', 'src', 'scripts')
    if args and os.path.isdir(args[0]):
        sdir = args.pop(0)
    sdir = os.path.abspath(sdir)
    want = args
    rcode, fails, out = run(sdir, '')
    if rcode not in (0, 1) or fails:
        print('mutate.py: the cases fail on the scripts as they are:\n' + out)
        return 1
    unreached = rc.read_unreached(os.path.join(HERE, 'unreached'))
    tmp = tempfile.mkdtemp(prefix='rdlock-mutate.')
    survived, total = [], 0
    try:
        for f in sorted(os.listdir(sdir)):
            if not f.endswith('.lua'):
                continue
            name = f[:-4]
            if want and not any(w == name or w.startswith(name + ':') for w in want):
                continue
            with open(os.path.join(sdir, f)) as fh:
                text = fh.read()
            for rid, what, mtext in mutants(name, text):
                if (want and name not in want and rid not in want) or rid in unreached:
                    continue
                mdir = os.path.join(tmp, 'scripts')
                shutil.rmtree(mdir, ignore_errors=True)
                shutil.copytree(sdir, mdir)
                with open(os.path.join(mdir, f), 'w') as fh:
                    fh.write(mtext)
                total += 1
                code, fails, out = run(mdir, name)
                if code == 0:
                    survived.append('%s %s' % (rid, what))
                    print('SURVIVED %s %s' % (rid, what))
                elif not fails:
                    print('killed   %s %s: the run failed: %s' % (rid, what, out.strip().split('\n')[-1]))
                else:
                    print('killed   %s %s: by %s%s' % (rid, what, fails[0],
                                                       ' and %d more' % (len(fails) - 1) if len(fails) > 1 else ''))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('%d mutants, %d killed, %d survived' % (total, total - len(survived), len(survived)))
    for s in survived:
        print('  survived: ' + s)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
