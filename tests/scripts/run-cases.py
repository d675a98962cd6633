#!/usr/bin/env python3
# run-cases.py - the case runner behind tests/scripts/run-tests.sh (which
# starts and stops the server; tests/scripts/README says what a case is).
#
#   run-cases.py SOCKET REDIS_CLI SCRIPTS_DIR CASES_DIR [-v] [-1] [CASE...]
#   run-cases.py --am CASES_DIR        (prints cases.am)
#
# Each case folder CASES_DIR/<script>/<case>/ runs SCRIPTS_DIR/<script>.lua
# once with EVAL on an emptied server and compares what came out with its
# expected-* files.  The whole suite runs twice: with the scripts as they
# are, then with a copy in which every `return` first records its line in a
# set (__rdl_cov), which is how the coverage check knows that every return
# of every script is reached by some case; it fails if one is not, unless
# the file `unreached` says why it cannot be.  Both runs must agree with
# the expected files.  -v: one run, and show what each case got; -1: one
# run, no coverage check (mutate.py).  Prints "ok <case>" or "FAIL <case>"
# and a diff per case; exits 0, 1 (a case failed, a return is not covered,
# cases.am is stale) or 99 (no server, no such script).
#
# The server is spoken to in RESP2 over its unix socket with the small
# client below (no module outside the standard library); the setup lines
# go through redis-cli, so that they are redis-cli commands exactly.

import os
import re
import socket
import subprocess
import sys

COV_KEY = b'__rdl_cov'


class ReplyError(str):
    pass


class Status(str):
    pass


class Conn:
    """A minimal RESP2 client over a unix socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(20)
        self.s.connect(path)
        self.f = self.s.makefile('rb')

    def send(self, *args):
        out = [b'*%d\r\n' % len(args)]
        for a in args:
            if isinstance(a, int):
                a = str(a)
            if isinstance(a, str):
                a = a.encode()
            out.append(b'$%d\r\n%s\r\n' % (len(a), a))
        self.s.sendall(b''.join(out))

    def read(self):
        line = self.f.readline()
        if not line.endswith(b'\r\n'):
            raise IOError('connection closed by the server')
        t, rest = line[:1], line[1:-2]
        if t == b'+':
            return Status(rest.decode('latin-1'))
        if t == b'-':
            return ReplyError(rest.decode('latin-1'))
        if t == b':':
            return int(rest)
        if t == b'$':
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2]
        if t == b'*':
            n = int(rest)
            if n < 0:
                return None
            return [self.read() for _ in range(n)]
        raise IOError('not RESP: %r' % line)

    def call(self, *args):
        self.send(*args)
        return self.read()

    def must(self, *args):
        r = self.call(*args)
        if isinstance(r, ReplyError):
            raise IOError('%s: %s' % (args[0], r))
        return r


# ---------------------------------------------------------------- rendering

def quote(b):
    """A string as redis-cli --no-raw shows it: in double quotes, with \\",
    \\\\, \\n, \\r, \\t, \\a, \\b and \\xNN escapes."""
    out = ['"']
    for c in b:
        ch = chr(c)
        if ch in '"\\':
            out.append('\\' + ch)
        elif ch == '\n':
            out.append('\\n')
        elif ch == '\r':
            out.append('\\r')
        elif ch == '\t':
            out.append('\\t')
        elif ch == '\a':
            out.append('\\a')
        elif ch == '\b':
            out.append('\\b')
        elif 32 <= c < 127:
            out.append(ch)
        else:
            out.append('\\x%02x' % c)
    out.append('"')
    return ''.join(out)


def render(r, indent=''):
    """A reply, one value a line; an array's elements follow it, indented
    by two more spaces."""
    if isinstance(r, ReplyError):
        return [indent + '(error) ' + r]
    if isinstance(r, Status):
        return [indent + '(status) ' + r]
    if isinstance(r, int):
        return [indent + '(integer) %d' % r]
    if r is None:
        return [indent + '(nil)']
    if isinstance(r, bytes):
        return [indent + quote(r)]
    lines = [indent + '(array %d)' % len(r)]
    for e in r:
        lines += render(e, indent + '  ')
    return lines


def keyspace(conn):
    """Every key but the coverage set, sorted: its type and TTL, then its
    contents, indented."""
    lines = []
    keys = sorted(k for k in conn.must('KEYS', '*') if k != COV_KEY)
    for k in keys:
        typ = conn.must('TYPE', k)
        pttl = conn.must('PTTL', k)
        ttl = 'no ttl' if pttl == -1 else 'ttl %d' % pttl
        lines.append('%s %s %s' % (quote(k), typ, ttl))
        if typ == 'string':
            lines.append('  ' + quote(conn.must('GET', k)))
        elif typ == 'hash':
            h = conn.must('HGETALL', k)
            for f, v in sorted(zip(h[0::2], h[1::2])):
                lines.append('  %s %s' % (quote(f), quote(v)))
        elif typ == 'zset':
            z = conn.must('ZRANGE', k, 0, -1, 'WITHSCORES')
            for m, s in zip(z[0::2], z[1::2]):
                lines.append('  %s %s' % (s.decode(), quote(m)))
        elif typ == 'list':
            for i, v in enumerate(conn.must('LRANGE', k, 0, -1)):
                lines.append('  %d %s' % (i, quote(v)))
        elif typ == 'set':
            for m in sorted(conn.must('SMEMBERS', k)):
                lines.append('  ' + quote(m))
        else:
            lines.append('  (a %s: not shown)' % typ)
    return lines


# ---------------------------------------------------------------- placeholders

# In setup and argv: ${NOW}, ${NOW+K}, ${NOW-K} (the server's TIME in ms
# read just before the setup, plus or minus K); in argv also ${DUMP:key}
# (DUMP of key after the setup, as bytes).  In expected files: the same
# ${NOW...} match any integer from NOW+K (NOW read before the setup) to
# the server time read after the case was over, plus K; ${LEFT+K} any
# integer from K less the case's duration to K (what is left of K ms
# counted from a moment in the case: a lease, a hint); ${ANY} any integer;
# ${*} any text within the line; ${DUMP:key} key's DUMP after the call,
# escaped as in a quoted reply.
PH = re.compile(r'\$\{(NOW(?:[+-]\d+)?|LEFT\+\d+|ANY|\*|DUMP:(?:[^{}]|\{[^{}]*\})+)\}')


def now_ms(conn):
    t = conn.must('TIME')
    return int(t[0]) * 1000 + int(t[1]) // 1000


def subst_in(text, t0, conn=None):
    """Placeholders of an input line or file replaced (text: str; argv
    lines are decoded as latin-1, so that bytes go through unchanged)."""
    def one(m):
        p = m.group(1)
        if p.startswith('NOW'):
            return str(t0 + int(p[3:] or '0'))
        if p.startswith('DUMP:') and conn is not None:
            d = conn.must('DUMP', p[5:].encode('latin-1'))
            if d is None:
                raise CaseError('${%s}: no such key' % p)
            return d.decode('latin-1')
        raise CaseError('${%s} cannot be used here' % p)
    return PH.sub(one, text)


def line_match(exp, got, t0, t1, conn, dumps):
    """Whether one expected line matches one line got."""
    if '${' not in exp:
        return exp == got
    rx, checks, pos = [], [], 0
    for m in PH.finditer(exp):
        rx.append(re.escape(exp[pos:m.start()]))
        p = m.group(1)
        if p == '*':
            rx.append('(.*?)')
            checks.append(None)
        elif p.startswith('DUMP:'):
            if p not in dumps:
                d = conn.must('DUMP', p[5:])
                dumps[p] = None if d is None else quote(d)[1:-1]
            rx.append('(.*?)')
            checks.append(('eq', dumps[p]))
        else:
            rx.append('(-?\\d+)')
            if p == 'ANY':
                checks.append(None)
            elif p.startswith('LEFT'):
                k = int(p[5:])
                checks.append(('range', k - (t1 - t0), k))
            else:
                k = int(p[3:] or '0')
                checks.append(('range', t0 + k, t1 + k))
        pos = m.end()
    rx.append(re.escape(exp[pos:]))
    mm = re.fullmatch(''.join(rx), got)
    if not mm:
        return False
    for g, c in zip(mm.groups(), checks):
        if c is None:
            continue
        if c[0] == 'eq':
            if c[1] is None or g != c[1]:
                return False
        elif not c[1] <= int(g) <= c[2]:
            return False
    return True


def compare(name, exp_lines, got_lines, t0, t1, conn, dumps):
    """[] if they match, else a diff (expected lines '-', got '+')."""
    ok = len(exp_lines) == len(got_lines) and all(
        line_match(e, g, t0, t1, conn, dumps) for e, g in zip(exp_lines, got_lines))
    if ok:
        return []
    out = ['  %s: expected (-) and got (+), with NOW = %d and the case over at %d:' % (name, t0, t1)]
    n = max(len(exp_lines), len(got_lines))
    for i in range(n):
        e = exp_lines[i] if i < len(exp_lines) else None
        g = got_lines[i] if i < len(got_lines) else None
        if e is not None and g is not None and line_match(e, g, t0, t1, conn, dumps):
            out.append('    ' + g)
            continue
        if e is not None:
            out.append('  - ' + e)
        if g is not None:
            out.append('  + ' + g)
    return out


# ---------------------------------------------------------------- coverage

def return_sites(text):
    """(line, column) of every `return` statement of a Lua source, outside
    comments and strings."""
    sites = []
    for ln, line in enumerate(text.split('\n'), 1):
        i, q = 0, None
        while i < len(line):
            c = line[i]
            if q:
                if c == '\\':
                    i += 1
                elif c == q:
                    q = None
            elif c in '\'"':
                q = c
            elif line.startswith('--', i):
                break
            elif (line.startswith('return', i) and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == '_'))
                  and not (line[i + 6:i + 7].isalnum() or line[i + 6:i + 7] == '_')):
                sites.append((ln, i))
            i += 1
    return sites


def instrument(name, text):
    """The script with a record of each return's line before it, and the
    ids of those returns ("<script>:<line>")."""
    lines = text.split('\n')
    ids = []
    for ln, col in reversed(return_sites(text)):
        rid = '%s:%d' % (name, ln)
        ids.append(rid)
        s = lines[ln - 1]
        lines[ln - 1] = s[:col] + "redis.call('SADD', '%s', '%s') " % (COV_KEY.decode(), rid) + s[col:]
    return '\n'.join(lines), sorted(set(ids), key=lambda r: int(r.split(':')[1]))


# ---------------------------------------------------------------- one case

class CaseError(Exception):
    """A case that cannot be run as written."""


def read_lines(path, binary=False):
    """One item a line: every line counts, an empty one too; the file's
    last newline ends the last line.  None if there is no such file."""
    if not os.path.exists(path):
        return None
    with open(path, 'rb') as f:
        data = f.read()
    if data.endswith(b'\n'):
        data = data[:-1]
    if data == b'':
        return []
    items = data.split(b'\n')
    return items if binary else [i.decode() for i in items]


def run_setup(cli, sock, text):
    p = subprocess.run([cli, '-s', sock, '--no-raw'], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    out = p.stdout.decode('utf-8', 'replace')
    bad = [l for l in out.split('\n') if l.startswith('(error)') or l.startswith('ERR') or
           l.startswith('Could not connect')]
    if p.returncode != 0 or bad:
        raise CaseError('setup failed: ' + (' | '.join(bad) or 'redis-cli exit %d' % p.returncode))


def drain(sub):
    """Messages the subscriber got so far, as lines "<channel> <message>"."""
    sub.send('PING')
    got = []
    while True:
        r = sub.read()
        if isinstance(r, list) and r and r[0] == b'pong':
            return got
        if isinstance(r, list) and len(r) == 4 and r[0] == b'pmessage':
            got.append('%s %s' % (quote(r[2]), quote(r[3])))


def run_case(env, cdir, script, body):
    """Run one case folder; a list of failure lines ([]: passed)."""
    conn, sub = env['conn'], env['sub']
    keys = read_lines(os.path.join(cdir, 'keys')) or []
    argv = read_lines(os.path.join(cdir, 'argv'), binary=True) or []
    expected = read_lines(os.path.join(cdir, 'expected'))
    if expected is None:
        raise CaseError('no expected file')
    if not os.path.exists(os.path.join(cdir, 'about')):
        raise CaseError('no about file')
    conn.must('FLUSHALL')
    t0 = now_ms(conn)
    setup = os.path.join(cdir, 'setup')
    if os.path.exists(setup):
        with open(setup) as f:
            run_setup(env['cli'], env['sock'], subst_in(f.read(), t0))
    drain(sub)
    args = [subst_in(a.decode('latin-1'), t0, conn).encode('latin-1') for a in argv]
    reply = conn.call('EVAL', body, len(keys), *(keys + args))
    got = render(reply)
    msgs = drain(sub)
    cov = conn.must('SMEMBERS', COV_KEY)
    conn.must('DEL', COV_KEY)
    for c in cov:
        env['hit'].add(c.decode())
    fails, dumps = [], {}
    ek = read_lines(os.path.join(cdir, 'expected-keys'))
    ks = keyspace(conn) if ek is not None or env['show'] else None
    t1 = now_ms(conn)
    if env['show']:
        # What the case got, NOW and the end of the case: for writing the
        # expected files of a new case (then checked by hand, line by line).
        print('  NOW = %d, the case over at %d' % (t0, t1))
        for title, lines in (('reply', got), ('keys', ks), ('messages', msgs)):
            print('  %s:' % title)
            print('\n'.join('    ' + l for l in lines))
    fails += compare('reply', expected, got, t0, t1, conn, dumps)
    if ek is not None:
        fails += compare('keys', ek, ks, t0, t1, conn, dumps)
    em = read_lines(os.path.join(cdir, 'expected-messages'))
    if em is not None:
        fails += compare('messages', em, msgs, t0, t1, conn, dumps)
    return fails


def find_cases(cases_dir, filters):
    out = []
    for script in sorted(os.listdir(cases_dir)):
        sdir = os.path.join(cases_dir, script)
        if not os.path.isdir(sdir):
            continue
        for case in sorted(os.listdir(sdir)):
            name = script + '/' + case
            if os.path.isdir(os.path.join(sdir, case)) and (
                    not filters or any(name == f or script == f for f in filters)):
                out.append((script, name, os.path.join(sdir, case)))
    return out


def read_unreached(path):
    """The `unreached` file: "<script>:<line> <why>" a line, # comments."""
    out = {}
    for l in read_lines(path) or []:
        l = l.strip()
        if l and not l.startswith('#'):
            rid, _, why = l.partition(' ')
            out[rid] = why.strip()
    return out


def case_files(cases_dir):
    """Every file of every case, relative to the folder above cases_dir."""
    top = os.path.dirname(os.path.abspath(cases_dir))
    out = []
    for d, dirs, files in os.walk(cases_dir):
        dirs.sort()
        for f in sorted(files):
            out.append(os.path.relpath(os.path.join(d, f), top))
    return out


def am_fragment(cases_dir):
    """cases.am: the case files as an automake variable (for EXTRA_DIST:
    automake takes no wildcards)."""
    lines = ['# Generated by `make update-script-cases` (tests/scripts/run-cases.py --am):',
             '# every file of tests/scripts/cases/, for EXTRA_DIST.  run-tests.sh fails',
             '# when this list and the folders differ.',
             'RDL_SCRIPT_CASES = \\']
    files = ['tests/scripts/' + f for f in case_files(cases_dir)]
    lines += ['\t%s%s' % (f, ' \\' if i < len(files) - 1 else '') for i, f in enumerate(files)]
    return '\n'.join(lines) + '\n'


def check_coverage(sdir, sites, hit, un):
    """Every return of every script of sdir: reached by a case, or listed
    in `unreached` with the reason (and then not reached).  Prints a
    FAIL line per miss; False if there is one."""
    ok, total, reached = True, 0, 0
    for script in sorted(f for f in os.listdir(sdir) if f.endswith('.lua')):
        name = script[:-4]
        with open(os.path.join(sdir, script)) as f:
            src = f.read()
        if name not in sites:
            sites[name] = instrument(name, src)[1]
        src = src.split('\n')
        for rid in sites[name]:
            total += 1
            reached += rid in hit
            text = src[int(rid.split(':')[1]) - 1].strip()
            if rid in hit and rid in un:
                print('FAIL coverage: %s is reached, but `unreached` says: %s' % (rid, un[rid]))
                ok = False
            elif rid not in hit and rid not in un:
                print('FAIL coverage: no case reaches %s: %s' % (rid, text))
                ok = False
    for rid in un:
        name = rid.split(':')[0]
        if rid not in sites.get(name, []):
            print('FAIL coverage: `unreached` names %s, which is no return' % rid)
            ok = False
    print('%s coverage: %d of %d returns reached, %d listed in `unreached`' % (
        'ok' if ok else 'FAIL', reached, total, len(un)))
    return ok


def main(argv):
    if len(argv) == 3 and argv[1] == '--am':
        sys.stdout.write(am_fragment(argv[2]))
        return 0
    if len(argv) < 5:
        print('usage: run-cases.py SOCKET REDIS_CLI SCRIPTS_DIR CASES_DIR [-v] [-1] [CASE...]\n'
              '       run-cases.py --am CASES_DIR', file=sys.stderr)
        return 99
    sock, cli, sdir, cdir = argv[1:5]
    show = '-v' in argv[5:]
    once = '-1' in argv[5:]
    filters = [f.strip('/') for f in argv[5:] if f not in ('-v', '-1')]
    filters = [f[len('cases/'):] if f.startswith('cases/') else f for f in filters]
    cases = find_cases(cdir, filters)
    if not cases:
        print('run-cases.py: no case matches %s' % ' '.join(filters), file=sys.stderr)
        return 99
    env = {'sock': sock, 'cli': cli, 'conn': Conn(sock), 'sub': Conn(sock), 'hit': set(), 'show': show}
    env['sub'].must('PSUBSCRIBE', '*')
    bodies, instrumented, sites = {}, {}, {}
    for script, _, _ in cases:
        if script in bodies:
            continue
        path = os.path.join(sdir, script + '.lua')
        if not os.path.exists(path):
            print('run-cases.py: %s: no such script' % path, file=sys.stderr)
            return 99
        with open(path) as f:
            bodies[script] = f.read()
        instrumented[script], sites[script] = instrument(script, bodies[script])

    # Both runs must match the expected files: the scripts as they are,
    # then the copy that records which returns are reached.
    failed, xfailed = set(), set()
    runs = (('', bodies), (' (instrumented)', instrumented))
    for label, texts in runs[:1] if show or once else runs:
        for script, name, path in cases:
            try:
                fails = run_case(env, path, script, texts[script])
            except CaseError as e:
                fails = ['  ' + str(e)]
            xfail = read_lines(os.path.join(path, 'xfail'))
            if xfail is not None and fails:
                # A known fault of the script, shown by this case (README).
                xfailed.add(name)
                if not label:
                    print('xfail %s: %s' % (name, ' '.join(xfail)))
            elif xfail is not None:
                failed.add(name)
                print('FAIL %s%s: passes, but its xfail file says it shows a fault: remove the file' % (name, label))
            elif fails:
                failed.add(name)
                print('FAIL %s%s' % (name, label))
                print('\n'.join(fails))
            elif not label:
                print('ok %s' % name)

    ok = True
    if not filters and not show and not once:
        ok = check_coverage(sdir, sites, env['hit'],
                            read_unreached(os.path.join(os.path.dirname(os.path.abspath(cdir)), 'unreached')))
        am = os.path.join(os.path.dirname(os.path.abspath(cdir)), 'cases.am')
        if os.path.exists(am):
            with open(am) as f:
                if f.read() != am_fragment(cdir):
                    print('FAIL cases.am does not list the case files as they are: make update-script-cases')
                    ok = False
    print('%d cases: %d passed, %d failed, %d expected to fail (xfail)' % (
        len(cases), len(cases) - len(failed) - len(xfailed), len(failed), len(xfailed)))
    return 1 if failed or not ok else 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except (IOError, OSError, subprocess.SubprocessError) as e:
        print('run-cases.py: %s' % e, file=sys.stderr)
        sys.exit(99)
