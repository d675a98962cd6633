#!/bin/sh
# test_cli.sh - tests of the rdlock(1) tool (docs/CONTRACT.md section 8)
# against a private redis-server.
#
# Run by automake (TESTS) with top_builddir, top_srcdir and REDIS_SERVER in
# the environment, or by hand from the build directory:
#     top_builddir=. top_srcdir=. sh tests/test_cli.sh
# Needs redis-server and redis-cli; python3 for the JSON checks (skipped
# without it).  Uses $top_builddir/tests/cli/holder (tests/cli/holder.c, a C
# program holding a lock name) when it is built; those cases are skipped
# otherwise.
#
# The server listens on a unix socket in a fresh temp dir and on a random
# free loopback port (never 6379), without RDB or AOF; it is killed by PID
# on exit, as are the three more started alike as the masters of a Redlock
# quorum (for --status on Redlock; only with tests/cli/kinds built).  Every
# rdlock run is bounded by timeout(1).  Prints "ok N - ..." or
# "not ok N - ..." per case and "P passed, F failed" at the end; exits 1
# if any failed, 77 (skip) if no redis-server can be found.

set -u

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
top_builddir=$(cd "$top_builddir" && pwd) || exit 99
RDLOCK=$top_builddir/rdlock
HOLDER=$top_builddir/tests/cli/holder
KINDS=$top_builddir/tests/cli/kinds
TMO=20              # seconds allowed to any one rdlock run
LANG=C
LC_ALL=C
export LANG LC_ALL
unset RDLOCK_CONF 2>/dev/null || true

# ---------------------------------------------------------------- tools

if [ ! -x "$RDLOCK" ]; then
    echo "test_cli.sh: $RDLOCK not built" >&2
    exit 99
fi
REDIS_SERVER=${REDIS_SERVER:-}
[ -n "$REDIS_SERVER" ] || REDIS_SERVER=$(command -v redis-server 2>/dev/null)
if [ -z "$REDIS_SERVER" ] || ! command -v "$REDIS_SERVER" >/dev/null 2>&1; then
    echo "test_cli.sh: no redis-server: skipped" >&2
    exit 77
fi
REDIS_CLI=${REDIS_CLI:-}
if [ -z "$REDIS_CLI" ]; then
    d=$(dirname "$(command -v "$REDIS_SERVER")")
    if [ -x "$d/redis-cli" ]; then REDIS_CLI=$d/redis-cli; else REDIS_CLI=$(command -v redis-cli 2>/dev/null); fi
fi
if [ -z "$REDIS_CLI" ]; then
    echo "test_cli.sh: no redis-cli: skipped" >&2
    exit 77
fi
if ! command -v timeout >/dev/null 2>&1; then
    echo "test_cli.sh: no timeout(1): skipped" >&2
    exit 77
fi
HAVE_PY=no
command -v python3 >/dev/null 2>&1 && HAVE_PY=yes
HAVE_HOLDER=no
[ -x "$HOLDER" ] && HAVE_HOLDER=yes
HAVE_KINDS=no
[ -x "$KINDS" ] && HAVE_KINDS=yes

# ---------------------------------------------------------------- temp dir, cleanup

base=${TMPDIR:-/tmp}
[ ${#base} -gt 60 ] && base=/tmp   # unix socket paths are short
T=$(mktemp -d "$base/rdlock-cli.XXXXXX") || exit 99
SERVER_PID=
SERVER2_PID=
RL_PIDS=            # the Redlock masters (section "on a Redlock quorum")

cleanup() {
    trap - EXIT
    # Background jobs not reaped yet (so their pids cannot have been
    # reused): timeout(1) passes SIGTERM on to rdlock, which ends its wait
    # or passes it on to its COMMAND; what is left after a moment is killed.
    if [ -n "$(echo $BG_PIDS)" ]; then
        for p in $BG_PIDS; do kill -TERM "$p" 2>/dev/null; done
        sleep 1
        for p in $BG_PIDS; do kill -9 "$p" 2>/dev/null; done
        # Commands of unfinished holders (ID.cpid), if still rdlock's child.
        for f in "$T"/*.cpid; do
            [ -f "$f" ] || continue
            c=$(cat "$f"); r=$(cat "${f%.cpid}.rpid" 2>/dev/null)
            [ -r "/proc/$c/stat" ] && [ "$(sed 's/.*) //' "/proc/$c/stat" | cut -d' ' -f2)" = "$r" ] &&
                kill -9 "$c" 2>/dev/null
        done
    fi
    for p in $SERVER_PID $SERVER2_PID $RL_PIDS; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf "$T"
}
BG_PIDS=
bg_add() { BG_PIDS="$BG_PIDS $1 "; }
# reap PID: wait for a background job (bounded by its timeout(1)), forget
# its pid; its status in rc
reap() {
    wait "$1" 2>/dev/null
    rc=$?
    BG_PIDS=$(echo " $BG_PIDS " | sed "s/ $1 / /g")
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------- reporting

n=0
npass=0
nfail=0
ok() {
    n=$((n + 1)); npass=$((npass + 1))
    echo "ok $n - $1"
}
nok() {
    n=$((n + 1)); nfail=$((nfail + 1))
    echo "not ok $n - $1"
    shift
    for l in "$@"; do printf '#   %s\n' "$l"; done
}
skip() {
    n=$((n + 1)); npass=$((npass + 1))
    echo "ok $n - $1 # SKIP $2"
}
# diag FILE...: show files after a failure
diag() {
    for f in "$@"; do
        [ -s "$f" ] && sed -n "1,15s|^|#   ${f##*/}: |p" "$f"
    done
    return 0
}
check() { # check DESC COMMAND...: ok if COMMAND succeeds
    d=$1; shift
    if "$@"; then ok "$d"; else nok "$d" "failed: $*"; diag "$T/out" "$T/err"; fi
}

now_ms() { date +%s%3N; }

# ---------------------------------------------------------------- running rdlock

# rl ARGS...: run rdlock (bounded), output in $T/out and $T/err, status in rc
rl() {
    timeout -k 5 "$TMO" "$RDLOCK" "$@" >"$T/out" 2>"$T/err"
    rc=$?
}
# expect CODE DESC: check the status of the last rl
expect() {
    if [ "$rc" -eq "$1" ]; then ok "$2"; else nok "$2" "expected exit $1, got $rc"; diag "$T/out" "$T/err"; fi
}
# expect_err CODE PATTERN DESC: status and a pattern (grep -E) on stderr
expect_err() {
    if [ "$rc" -eq "$1" ] && grep -Eq -- "$2" "$T/err"; then
        ok "$3"
    else
        nok "$3" "expected exit $1 and stderr matching /$2/, got $rc"
        diag "$T/out" "$T/err"
    fi
}

# wait_for TENTHS COMMAND...: poll until COMMAND succeeds
wait_for() {
    lim=$1; shift
    i=0
    until "$@"; do
        i=$((i + 1))
        [ "$i" -gt "$lim" ] && return 1
        sleep 0.1
    done
    return 0
}
exists() { [ -e "$1" ]; }

# The command that background holders run: records its pid (.cpid) and its
# parent's, rdlock's (.rpid), then says ready and waits (bounded) for
# ID.release; a SIGTERM/SIGHUP is written to ID.sig and ends it with 7.
HOLD_SCRIPT='echo $$ > "$1.cpid"; echo $PPID > "$1.rpid"
trap "echo TERM >> \"\$1.sig\"; exit 7" TERM
trap "echo HUP >> \"\$1.sig\"; exit 7" HUP
: > "$1.ready"; i=0
while [ ! -e "$1.release" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
exit "${2:-0}"'

# hold ID ARGS...: start "rdlock ARGS -- sh -c HOLD_SCRIPT" in the
# background; its timeout(1) pid in $bgpid.  Returns once the command runs
# (or fails if it does not within 10 s).
hold() {
    id=$1; shift
    rm -f "$T/$id".*
    timeout -k 5 60 "$RDLOCK" "$@" -- sh -c "$HOLD_SCRIPT" sh "$T/$id" >"$T/$id.out" 2>"$T/$id.err" &
    bgpid=$!
    bg_add "$bgpid"
    eval "bg_$id=\$bgpid"
    wait_for 100 exists "$T/$id.ready"
}
release() { : > "$T/$1.release"; }
# finish ID: wait for the background rdlock ID; its status in rc
finish() {
    eval "reap \$bg_$1"
    rm -f "$T/$1.cpid"
}

# hold_c ID [holder options] INI NAME: the C holder, in the background,
# until ID.release exists; returns once it printed "locked".
hold_c() {
    id=$1; shift
    rm -f "$T/$id".*
    (wait_for 600 exists "$T/$id.release"; echo go) |
        timeout -k 5 90 "$HOLDER" "$@" >"$T/$id.out" 2>"$T/$id.err" &
    bgpid=$!
    bg_add "$bgpid"
    eval "bg_$id=\$bgpid"
    wait_for 100 grep -qs '^locked' "$T/$id.out"
}

# json_ok PYTHON-EXPR: the JSON in $T/out parses and EXPR (over d) holds
json_ok() {
    python3 -c 'import json, os, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$T/out" "$1"
}
# status_body: --status's human output in $T/out without a last line
# "server: ..." (where the client connects, when the tool prints it): what
# the lock's and the other kinds' lines are checked against
status_body() { sed '${/^server: /d;}' "$T/out"; }
# status_json NAME: --status --json NAME into $T/out
status_json() { rl -c "$INI" --json --status "$1"; }
# writers_waiting NAME N: the status shows N queued writers
writers_waiting() {
    status_json "$1" && [ "$rc" -eq 0 ] && python3 -c 'import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))["writers_waiting"] == int(sys.argv[2]) else 1)' "$T/out" "$2"
}

# ---------------------------------------------------------------- the server

rand() { od -An -N2 -tu2 /dev/urandom | tr -dc 0-9; }
# port_closed PORT: nothing listens on 127.0.0.1:PORT (connection refused)
port_closed() {
    if [ "$HAVE_PY" = yes ]; then
        python3 -c 'import socket, sys
s = socket.socket()
s.settimeout(2)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0 else 1)' "$1"
    else
        ! "$REDIS_CLI" -h 127.0.0.1 -p "$1" ping >/dev/null 2>&1
    fi
}
# a random loopback port (20000..59999, never 6379) that nothing listens on
free_port() {
    while :; do
        p=$((20000 + $(rand) % 40000))
        port_closed "$p" && { echo "$p"; return; }
    done
}
# ping SOCKET PID: the server on SOCKET answers and is the process PID
is_ours() {
    [ "$("$REDIS_CLI" -s "$1" ping 2>/dev/null)" = PONG ] &&
        "$REDIS_CLI" -s "$1" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$2"
}
# start_server SOCKET PORT LOGNAME: sets spid; PORT 0 = no TCP
start_server() {
    "$REDIS_SERVER" --port "$2" --bind 127.0.0.1 --unixsocket "$1" --unixsocketperm 700 \
        --save '' --appendonly no --dir "$T" --logfile "$T/$3.log" --daemonize no \
        >"$T/$3.stdout" 2>&1 &
    spid=$!
    i=0
    while ! is_ours "$1" "$spid"; do
        i=$((i + 1))
        if [ "$i" -gt 100 ] || ! kill -0 "$spid" 2>/dev/null; then
            kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
            return 1
        fi
        sleep 0.1
    done
    return 0
}

SOCK=$T/redis.sock
tries=0
until PORT=$(free_port) && start_server "$SOCK" "$PORT" redis; do
    tries=$((tries + 1))
    if [ "$tries" -ge 5 ]; then
        echo "test_cli.sh: cannot start $REDIS_SERVER" >&2
        cat "$T/redis.stdout" "$T/redis.log" >&2 2>/dev/null
        exit 99
    fi
done
SERVER_PID=$spid
rcli() { "$REDIS_CLI" -s "$SOCK" "$@"; }

# ---------------------------------------------------------------- configs

INI=$T/main.ini
printf '[redis]\nsocket = %s\n' "$SOCK" >"$INI"
INI_TCP=$T/tcp.ini
printf '[redis]\nhost = 127.0.0.1\nport = %s\n' "$PORT" >"$INI_TCP"
INI_SHORT=$T/short.ini      # 300 ms leases: losses show within ~0.1 s
printf '[redis]\nsocket = %s\n[lock]\nlease_ms = 300\n' "$SOCK" >"$INI_SHORT"
CLOSED=$(free_port)
INI_CLOSED=$T/closed.ini
printf '[redis]\nhost = 127.0.0.1\nport = %s\nconnect_timeout_ms = 500\ncommand_retries = 1\n' "$CLOSED" >"$INI_CLOSED"
INI_FF=$T/failfast.ini
printf '[redis]\nhost = 127.0.0.1\nport = %s\ncommand_retries = 1\n[lock]\nfail_fast = yes\n' "$CLOSED" >"$INI_FF"
INI_ACL=$T/acl.ini
printf '[redis]\nsocket = %s\nusername = nosuchuser\npassword = wrong\n' "$SOCK" >"$INI_ACL"
INI_BAD=$T/bad.ini
printf '[redis]\nsocket = %s\nthis is not an ini line\n[lock\n' "$SOCK" >"$INI_BAD"
INI_BADVAL=$T/badval.ini
printf '[redis]\nsocket = %s\n[lock]\nlease_ms = 5\n' "$SOCK" >"$INI_BADVAL"
LATE_SOCK=$T/late.sock
INI_LATE=$T/late.ini
printf '[redis]\nsocket = %s\nconnect_timeout_ms = 200\n[lock]\nretry_interval_ms = 50\n' "$LATE_SOCK" >"$INI_LATE"

echo "# rdlock: $RDLOCK"
echo "# redis: $REDIS_SERVER (pid $SERVER_PID, $SOCK, port $PORT); closed port $CLOSED"

# ================================================================ usage, version

rl --version
if [ "$rc" -eq 0 ] && grep -Eq '^rdlock \(librdlock\) [0-9]+\.[0-9]+\.[0-9]+$' "$T/out"; then
    ok "--version prints 'rdlock (librdlock) X.Y.Z'"
else nok "--version prints 'rdlock (librdlock) X.Y.Z'" "rc $rc"; diag "$T/out"; fi

rl --help
if [ "$rc" -eq 0 ] && grep -q '^usage: rdlock' "$T/out" && grep -q 'Exit status' "$T/out" &&
    grep -q '"writers_waiting"' "$T/out"; then
    ok "--help: usage, exit codes and the JSON schema on stdout, exit 0"
else nok "--help: usage, exit codes and the JSON schema on stdout, exit 0" "rc $rc"; fi

# usage_case DESC ARGS...: exit 64, one "rdlock: " error line then the usage
usage_case() {
    d=$1; shift
    rl "$@"
    if [ "$rc" -eq 64 ] && head -n 1 "$T/err" | grep -q '^rdlock: ' &&
        sed -n 2p "$T/err" | grep -q '^usage: rdlock' && [ ! -s "$T/out" ]; then
        ok "usage error 64: $d"
    else
        nok "usage error 64: $d" "got $rc"; diag "$T/err"
    fi
}
usage_case "-n with -w" -c "$INI" -n -w 1 u1 -- true
usage_case "unknown option" -c "$INI" --bogus u1 -- true
usage_case "unknown short option" -c "$INI" -x u1 -- true
usage_case "no arguments"
usage_case "missing NAME" -c "$INI" -n
usage_case "missing COMMAND" -c "$INI" u1
usage_case "missing COMMAND after --" -c "$INI" u1 --
usage_case "-w not a number" -c "$INI" -w abc u1 -- true
usage_case "-w negative" -c "$INI" -w -1 u1 -- true
usage_case "-E out of range" -c "$INI" -E 300 -n u1 -- true
usage_case "--on-lost=maybe" -c "$INI" --on-lost=maybe u1 -- true
usage_case "option after NAME" -c "$INI" u1 -n -- true
usage_case "--json without --status" -c "$INI" --json u1 -- true
usage_case "--status with -n" -c "$INI" -n --status u1
usage_case "--status with two names" -c "$INI" --status u1 u2
usage_case "empty NAME" -c "$INI" "" -- true
long=$(printf '%0513d' 0)
usage_case "NAME of 513 bytes" -c "$INI" -n "$long" -- true
rl -c "$INI" -n "$(printf '%0512d' 0)" -- true
expect 0 "NAME of 512 bytes is fine"

# ================================================================ running COMMAND

rl -c "$INI" run1 -- sh -c 'echo "ran $*"' sh a 'b c'
if [ "$rc" -eq 0 ] && [ "$(cat "$T/out")" = "ran a b c" ]; then
    ok "free lock: runs COMMAND with its arguments, exit 0"
else nok "free lock: runs COMMAND with its arguments, exit 0" "rc $rc"; diag "$T/out" "$T/err"; fi

rl -c "$INI" run1 -- sh -c 'exit 3'
expect 3 "COMMAND's exit status 3 is rdlock's"
rl -c "$INI" run1 -- sh -c 'kill -KILL $$'
expect 137 "COMMAND killed by SIGKILL: exit 137"
rl -c "$INI" run1 -- sh -c 'kill -TERM $$'
expect 143 "COMMAND killed by SIGTERM: exit 143"

rl -c "$INI_TCP" run1 -- true
expect 0 "over TCP (host/port config) too"

rl -c "$INI" -n run1 -- true
expect 0 "the lock is free again after each run"

rl -c "$INI" run1 -- nosuchcommand-rdlock-test
expect_err 127 'command not found' "COMMAND not found: 127"
printf '#!/bin/sh\nexit 0\n' >"$T/noexec.sh"
chmod 644 "$T/noexec.sh"
rl -c "$INI" run1 -- "$T/noexec.sh"
expect_err 126 'cannot execute' "COMMAND not executable: 126"
rl -c "$INI" run1 -- "$T"
expect 126 "COMMAND a directory: 126"
rl -c "$INI" -n run1 -- true
expect 0 "the lock is released after a failed exec"

# RDLOCK_FENCING_TOKEN
RDLOCK_FENCING_TOKEN=garbage
export RDLOCK_FENCING_TOKEN
rl -c "$INI" fence1 -- sh -c 'echo "$RDLOCK_FENCING_TOKEN"'
t1=$(cat "$T/out")
rl -c "$INI" -s fence1 -- sh -c 'echo "$RDLOCK_FENCING_TOKEN"'
t2=$(cat "$T/out")
rl -c "$INI" fence1 -- sh -c 'env | grep -c "^RDLOCK_FENCING_TOKEN="'
cnt=$(cat "$T/out")
unset RDLOCK_FENCING_TOKEN
case "$t1$t2" in
*[!0-9]* | "") nok "RDLOCK_FENCING_TOKEN is exported, numeric" "got '$t1' '$t2'" ;;
*) if [ "$t1" -gt 0 ] && [ "$t2" -gt "$t1" ] && [ "$cnt" = 1 ]; then
       ok "RDLOCK_FENCING_TOKEN exported ($t1, then $t2: increasing; replaces an inherited one)"
   else nok "RDLOCK_FENCING_TOKEN increasing" "got '$t1' '$t2' count '$cnt'"; fi ;;
esac

# COMMAND does not inherit the library's Redis connections
if [ -d /proc/self/fd ]; then
    # ls lists its own descriptors (one more: the directory it reads)
    direct=$(ls /proc/self/fd | sort -n | tr '\n' ' ')
    rl -c "$INI" fd1 -- ls /proc/self/fd
    if [ "$rc" -eq 0 ] && [ "$(sort -n "$T/out" | tr '\n' ' ')" = "$direct" ]; then
        ok "COMMAND gets the same descriptors as without rdlock (no Redis sockets)"
    else nok "COMMAND gets the same descriptors as without rdlock" "direct '$direct' under rdlock '$(cat "$T/out")'"; fi
else
    skip "COMMAND descriptors" "no /proc"
fi

# ================================================================ conflicts

hold ex1 -c "$INI" ex1 || nok "background holder ex1 started"
rl -c "$INI" -n ex1 -- sh -c 'echo RAN'
if [ "$rc" -eq 1 ] && ! grep -q RAN "$T/out"; then ok "held: -n exits 1 without running COMMAND"
else nok "held: -n exits 1 without running COMMAND" "rc $rc"; diag "$T/out" "$T/err"; fi
rl -c "$INI" -n -E 42 ex1 -- true
expect 42 "held: -n -E 42 exits 42"
rl -c "$INI" -n -s ex1 -- true
expect 1 "held exclusive: -s -n exits 1"
# ... and on a free NAME, -E 0 changes nothing: COMMAND runs, its status
rl -c "$INI" -n -E 0 free-e0 -- sh -c 'echo RAN; exit 5'
if [ "$rc" -eq 5 ] && grep -q RAN "$T/out"; then ok "free: -n -E 0 runs COMMAND and exits with its status"
else nok "free: -n -E 0 runs COMMAND and exits with its status" "rc $rc"; diag "$T/out" "$T/err"; fi
t0=$(now_ms)
rl -c "$INI" -w 0.5 ex1 -- sh -c 'echo RAN'
el=$(($(now_ms) - t0))
if [ "$rc" -eq 1 ] && [ "$el" -ge 450 ] && [ "$el" -lt 5000 ] && ! grep -q RAN "$T/out"; then
    ok "held: -w 0.5 exits 1 after ${el} ms"
else nok "held: -w 0.5 exits 1 after ~0.5 s" "rc $rc after $el ms"; diag "$T/err"; fi
rl -c "$INI" -w 0.3 -E 9 -s ex1 -- true
expect 9 "held: -s -w 0.3 -E 9 exits 9"

# -E never makes a conflict run COMMAND: not with 0, not with the default
# 1 given explicitly, not with a code COMMAND itself returns.
# ran_not CODE DESC: exit CODE, COMMAND did not run (prints RAN), and with
# -v the one line saying so
ran_not() {
    if [ "$rc" -eq "$1" ] && ! grep -q RAN "$T/out" && [ ! -s "$T/out" ]; then ok "$2"
    else nok "$2" "rc $rc (expected $1)"; diag "$T/out" "$T/err"; fi
}
rl -c "$INI" -n -E 0 ex1 -- sh -c 'echo RAN token=$RDLOCK_FENCING_TOKEN'
ran_not 0 "held: -n -E 0 exits 0 and does not run COMMAND"
rl -c "$INI" -w 0.3 -E 0 ex1 -- sh -c 'echo RAN'
ran_not 0 "held: -w 0.3 -E 0 exits 0 and does not run COMMAND"
rl -c "$INI" -n -E 1 ex1 -- sh -c 'echo RAN; exit 1'
ran_not 1 "held: -n -E 1 (COMMAND's own code) exits 1 and does not run COMMAND"
rl -c "$INI" -s -w 0.3 -E 3 ex1 -- sh -c 'echo RAN; exit 3'
ran_not 3 "held: -s -w 0.3 -E 3 (COMMAND's own code) exits 3 and does not run COMMAND"
rl -c "$INI" -v -n -E 0 ex1 -- sh -c 'echo RAN'
if [ "$rc" -eq 0 ] && [ ! -s "$T/out" ] && grep -q 'COMMAND not run' "$T/err"; then
    ok "-v -n -E 0: the one line that tells 'not run' from a run that exited 0"
else nok "-v -n -E 0: says COMMAND was not run" "rc $rc"; diag "$T/out" "$T/err"; fi

# --status while held exclusive
rl -c "$INI" --status ex1
rpid=$(cat "$T/ex1.rpid" 2>/dev/null)
if [ "$rc" -eq 0 ] && grep -q '^lock ex1: held exclusive' "$T/out" && grep -q "pid $rpid," "$T/out" &&
    grep -q 'hold count 1' "$T/out" && grep -Eq 'lease [0-9]+\.[0-9]{3} s left' "$T/out" &&
    grep -q '^writers waiting: none' "$T/out" && grep -q '^fencing counter: [1-9]' "$T/out" &&
    grep -q '^robust state: consistent' "$T/out"; then
    ok "--status: held exclusive, holder pid/count/lease, writers, token, robust state"
else nok "--status: held exclusive" "rc $rc"; diag "$T/out" "$T/err"; fi
if [ "$HAVE_PY" = yes ]; then
    status_json ex1
    if [ "$rc" -eq 0 ] && RDL_HOST=$(uname -n) json_ok "d['state'] == 'exclusive' and len(d['holders']) == 1 and
d['holders'][0]['pid'] == $rpid and d['holders'][0]['count'] == 1 and
0 < d['holders'][0]['lease_remaining_ms'] <= 30000 and d['holders'][0]['token'] == d['last_token'] and
d['holders'][0]['host'] == os.environ['RDL_HOST'] and ':' in d['holders'][0]['owner'] and
d['writers_waiting'] == 0 and d['readers_waiting'] == 0 and d['robust'] == 'consistent' and
d['name'] == 'ex1' and d['name_hex'] == '657831'"; then
        ok "--status --json: held exclusive, fields check"
    else nok "--status --json: held exclusive" "rc $rc"; diag "$T/out" "$T/err"; fi
else
    skip "--status --json held exclusive" "no python3"
fi
release ex1
finish ex1
expect 0 "background holder ex1 exits 0 once released"
rl -c "$INI" -n ex1 -- true
expect 0 "ex1 free again"

# --status free
rl -c "$INI" --status free1
if [ "$rc" -eq 0 ] && grep -q '^lock free1: free$' "$T/out" && grep -q '^robust state: consistent' "$T/out"; then
    ok "--status: free, exit 0"
else nok "--status: free, exit 0" "rc $rc"; diag "$T/out" "$T/err"; fi
if [ "$HAVE_PY" = yes ]; then
    status_json free1
    if [ "$rc" -eq 0 ] && json_ok "d['state'] == 'free' and d['holders'] == [] and d['writers'] == [] and
d['writers_waiting'] == 0 and d['readers_waiting'] == 0 and d['last_token'] == 0 and d['robust'] == 'consistent'"; then
        ok "--status --json: free"
    else nok "--status --json: free" "rc $rc"; diag "$T/out" "$T/err"; fi
else skip "--status --json free" "no python3"; fi

# The last line names the server asked (rdlock_client_info; TLS would
# show as " (TLS TLSv1.3)"), and --json has it as "server".
rl -c "$INI" --status free1
if [ "$rc" -eq 0 ] && [ "$(tail -n 1 "$T/out")" = "server: unix:$SOCK" ]; then
    ok "--status: the last line names the server (unix:$SOCK)"
else nok "--status: the last line names the server" "rc $rc"; diag "$T/out" "$T/err"; fi
if [ "$HAVE_PY" = yes ]; then
    status_json free1
    if [ "$rc" -eq 0 ] && json_ok "d['server'] == 'unix:' + '$SOCK'"; then ok "--status --json: \"server\""
    else nok "--status --json: \"server\"" "rc $rc"; diag "$T/out" "$T/err"; fi
fi

# A name with a lock only: no block of another kind (human or JSON).
rl -c "$INI" --status free1
if [ "$rc" -eq 0 ] && ! grep -Eq '^(semaphore|run-once|condition|barrier):' "$T/out" &&
    [ "$(status_body | tail -n 1)" = "robust state: consistent" ]; then
    ok "--status: a lock-only name shows no semaphore, run-once, condition or barrier"
else nok "--status: a lock-only name shows no other kind" "rc $rc"; diag "$T/out" "$T/err"; fi
if [ "$HAVE_PY" = yes ]; then
    status_json free1
    if [ "$rc" -eq 0 ] && json_ok "not any(k in d for k in ('semaphore', 'run_once', 'condition', 'barrier'))"; then
        ok "--status --json: a lock-only name has no semaphore/run_once/condition/barrier keys"
    else nok "--status --json: a lock-only name has no other kinds' keys" "rc $rc"; diag "$T/out" "$T/err"; fi
else skip "--status --json: no other kinds" "no python3"; fi

# ================================================================ the other kinds of a name

# tests/cli/kinds gives the name kd a leased semaphore of 3 with one permit
# taken, a done rdonce, a condition with one waiter registered and a
# barrier of 2 with one arrival; on a line it undoes all but the mark.
# kinds_up NAME [INI]: --status shows the waiter and the arrival in Redis
# (they get there a moment after the helper says "ready")
kinds_up() {
    rl -c "${2:-$INI}" --status "$1" && [ "$rc" -eq 0 ] && grep -q '^condition: 1 waiter registered$' "$T/out" &&
        grep -q '^barrier: 1 of 2 arrived, generation 1$' "$T/out"
}
if [ "$HAVE_KINDS" = yes ]; then
    rm -f "$T"/kd.*
    (wait_for 600 exists "$T/kd.release"; echo go) | timeout -k 5 90 "$KINDS" "$INI" kd >"$T/kd.out" 2>"$T/kd.err" &
    kbg=$!
    bg_add "$kbg"
    wait_for 100 grep -qs '^ready' "$T/kd.out"
    kpid=$(sed -n 's/^ready //p' "$T/kd.out")
    host=$(uname -n)
    if [ -n "$kpid" ] && wait_for 100 kinds_up kd && grep -q '^lock kd: free$' "$T/out" &&
        [ "$(sed -n '/^robust state: /{n;p;}' "$T/out")" = \
            "semaphore: value 2, 1 of 3 permits held by 1 thread (leased), 0 waiting" ] &&
        grep -qx "run-once: done (by host $host, pid $kpid, thread [0-9]*)" "$T/out" &&
        [ "$(status_body | tail -n 1)" = "barrier: 1 of 2 arrived, generation 1" ]; then
        ok "--status: after the lock's lines, the semaphore, run-once, condition and barrier blocks"
    else nok "--status: semaphore, run-once, condition and barrier blocks" "rc $rc, helper pid '$kpid'"
        diag "$T/out" "$T/err" "$T/kd.out" "$T/kd.err"; fi
    if [ "$HAVE_PY" = yes ]; then
        status_json kd
        if [ "$rc" -eq 0 ] && RDL_HOST=$host json_ok "d['state'] == 'free' and d['holders'] == [] and
d['semaphore'] == {'type': 'leased', 'value': 2, 'permits': 3, 'held': 1, 'holders': 1, 'waiting': 0} and
d['run_once']['done'] is True and d['run_once']['pid'] == ${kpid:-0} and d['run_once']['host'] == os.environ['RDL_HOST'] and
d['run_once']['owner'].endswith(':' + str(d['run_once']['thread'])) and
d['condition'] == {'waiters': 1, 'woken': 0, 'registrations': 1} and
d['barrier'] == {'count': 2, 'arrived': 1, 'generation': 1}"; then
            ok "--status --json: semaphore, run_once, condition and barrier keys"
        else nok "--status --json: semaphore, run_once, condition and barrier keys" "rc $rc"; diag "$T/out" "$T/err"; fi
    else skip "--status --json: other kinds" "no python3"; fi
    release kd
    wait_for 200 grep -qs '^done' "$T/kd.out"
    reap "$kbg"
    if [ "$rc" -eq 0 ]; then ok "kinds helper: woke its waiter, completed the barrier, posted, exit 0"
    else nok "kinds helper exits 0" "rc $rc"; diag "$T/kd.out" "$T/kd.err"; fi
    # What stays after the helper: the semaphore whole, the mark, the
    # condition without waiters, the barrier in its next generation.
    rl -c "$INI" --status kd
    if [ "$rc" -eq 0 ] && grep -qx 'semaphore: value 3, 0 of 3 permits held by 0 threads (leased), 0 waiting' "$T/out" &&
        grep -q '^run-once: done ' "$T/out" && grep -qx 'condition: 0 waiters registered' "$T/out" &&
        grep -qx 'barrier: 0 of 2 arrived, generation 2' "$T/out"; then
        ok "--status: permit back, waiter gone, barrier in generation 2, mark kept"
    else nok "--status: after the helper" "rc $rc"; diag "$T/out" "$T/err"; fi
    # --reset removes all of them: nothing but the lock's lines again.
    rl -c "$INI" --reset kd
    rl -c "$INI" --status kd
    if [ "$rc" -eq 0 ] && ! grep -Eq '^(semaphore|run-once|condition|barrier):' "$T/out"; then
        ok "--status after --reset: no other kind left"
    else nok "--status after --reset: no other kind left" "rc $rc"; diag "$T/out" "$T/err"; fi
else
    skip "--status of the other kinds" "tests/cli/kinds not built"
fi

# ================================================================ the other kinds on a Redlock quorum

# Three more servers as the masters of a Redlock quorum (TCP; stopped by
# PID in cleanup and at the end of this part), restart_delay_ms = 0 since
# they have just started.  The kinds helper gives rk, through the quorum,
# its semaphore, run-once mark, condition and barrier, and rdlock holds the
# lock rk.  --status then shows the lock (the view of the first master),
# one line per master (print_servers), then each kind (read from the
# master with its newest state): docs/CONTRACT.md sections 8 and 9.5.
RL_ADDRS=
rl_start() {
    for k in 1 2 3; do
        tries=0
        until mp=$(free_port) && start_server "$T/rl$k.sock" "$mp" "rl$k"; do
            tries=$((tries + 1))
            [ "$tries" -ge 5 ] && return 1
        done
        RL_PIDS="$RL_PIDS $spid"
        RL_ADDRS="$RL_ADDRS 127.0.0.1:$mp"
    done
    return 0
}
# rl_tail: --status's output from "masters:" on (status_body), thread
# numbers as N
rl_tail() { status_body | sed -n '/^masters:$/,$p' | sed 's/, thread [0-9]*)$/, thread N)/'; }
# rl_masters STATE TOKEN: the masters' lines expected when each has STATE
# and TOKEN as its fencing counter
rl_masters() {
    echo "masters:"
    for a in $RL_ADDRS; do echo "  $a: $1, writers waiting 0, counter $2, robust consistent"; done
}
if [ "$HAVE_KINDS" = yes ] && rl_start; then
    INI_RL=$T/redlock.ini
    printf '[redlock]\nmasters = %s\nrestart_delay_ms = 0\n' "$(echo "$RL_ADDRS" | sed 's/^ //; s/ /, /g')" >"$INI_RL"
    echo "# redlock masters:$RL_ADDRS (pids$RL_PIDS)"
    # A name with only its lock (used once: token 1 on every master): the
    # masters' lines, no other kind.
    rl -c "$INI_RL" -n rk -- true
    expect 0 "Redlock: rdlock -n rk runs COMMAND on the quorum"
    rl -c "$INI_RL" --status rk
    if [ "$rc" -eq 0 ] && grep -qx 'lock rk: free' "$T/out" && [ "$(rl_tail)" = "$(rl_masters free 1)" ]; then
        ok "Redlock --status: a lock-only name shows a line per master and no other kind"
    else nok "Redlock --status: a lock-only name shows a line per master and no other kind" "rc $rc"
        diag "$T/out" "$T/err"; fi
    # The helper first (its rdonce takes the lock rk for its run), then
    # rdlock holds rk, so that each master's line shows the hold.
    rm -f "$T"/rk.*
    (wait_for 600 exists "$T/rk.release"; echo go) | timeout -k 5 90 "$KINDS" "$INI_RL" rk >"$T/rk.out" 2>"$T/rk.err" &
    kbg=$!
    bg_add "$kbg"
    wait_for 100 grep -qs '^ready' "$T/rk.out"
    kpid=$(sed -n 's/^ready //p' "$T/rk.out")
    host=$(uname -n)
    [ -n "$kpid" ] && wait_for 100 kinds_up rk "$INI_RL"
    hold rkh -c "$INI_RL" rk || nok "rdlock holds rk on the quorum"
    rpid=$(cat "$T/rkh.rpid" 2>/dev/null)
    rl -c "$INI_RL" --status rk
    # the hold's token, the last one given out (1 was the run above)
    tok=$(sed -n 's/^fencing counter: //p' "$T/out")
    exp=$(rl_masters 'held exclusive (1 holder)' "$tok"
        echo 'semaphore: value 2, 1 of 3 permits held by 1 thread (leased), 0 waiting'
        echo "run-once: done (by host $host, pid $kpid, thread N)"
        echo 'condition: 1 waiter registered'
        echo 'barrier: 1 of 2 arrived, generation 1')
    if [ "$rc" -eq 0 ] && [ -n "$kpid" ] && [ "${tok:-0}" -gt 1 ] && grep -qx 'lock rk: held exclusive' "$T/out" &&
        grep -q "^  holder: host $host, pid $rpid, thread [0-9]*, hold count 1, lease .*, token $tok\$" "$T/out" &&
        [ "$(rl_tail)" = "$exp" ]; then
        ok "Redlock --status: the lock, a line per master, then semaphore, run-once, condition and barrier"
    else nok "Redlock --status: the lock, the masters, semaphore, run-once, condition and barrier" \
        "rc $rc, helper pid '$kpid', holder pid '$rpid', token '$tok'"
        echo "$exp" >"$T/exp"; diag "$T/out" "$T/exp" "$T/err" "$T/rk.err"; fi
    if [ "$HAVE_PY" = yes ]; then
        rl -c "$INI_RL" --json --status rk
        if [ "$rc" -eq 0 ] && RDL_HOST=$host RDL_ADDRS=$RL_ADDRS json_ok "d['state'] == 'exclusive' and
len(d['holders']) == 1 and d['holders'][0]['pid'] == ${rpid:-0} and d['holders'][0]['token'] == d['last_token'] > 1 and
d['semaphore'] == {'type': 'leased', 'value': 2, 'permits': 3, 'held': 1, 'holders': 1, 'waiting': 0} and
d['run_once']['done'] is True and d['run_once']['pid'] == ${kpid:-0} and d['run_once']['host'] == os.environ['RDL_HOST'] and
d['run_once']['owner'].endswith(':' + str(d['run_once']['thread'])) and
d['condition'] == {'waiters': 1, 'woken': 0, 'registrations': 1} and
d['barrier'] == {'count': 2, 'arrived': 1, 'generation': 1} and
d['servers'] == [{'server': a, 'state': 'exclusive', 'holders': 1, 'writers_waiting': 0,
                  'last_token': d['last_token'], 'robust': 'consistent'} for a in os.environ['RDL_ADDRS'].split()]"; then
            ok "Redlock --status --json: semaphore, run_once, condition, barrier and a servers entry per master"
        else nok "Redlock --status --json: semaphore, run_once, condition, barrier and servers" "rc $rc"
            diag "$T/out" "$T/err"; fi
    else skip "Redlock --status --json" "no python3"; fi
    release rkh
    finish rkh
    expect 0 "rdlock holding rk on the quorum exits 0"
    release rk
    wait_for 200 grep -qs '^done' "$T/rk.out"
    reap "$kbg"
    if [ "$rc" -eq 0 ]; then ok "kinds helper on the quorum: woke its waiter, completed the barrier, posted, exit 0"
    else nok "kinds helper on the quorum exits 0" "rc $rc"; diag "$T/rk.out" "$T/rk.err"; fi
    # The steps of the helper's last calls reached the quorum too.
    rl -c "$INI_RL" --status rk
    exp=$(rl_masters free "$tok"
        echo 'semaphore: value 3, 0 of 3 permits held by 0 threads (leased), 0 waiting'
        echo "run-once: done (by host $host, pid $kpid, thread N)"
        echo 'condition: 0 waiters registered'
        echo 'barrier: 0 of 2 arrived, generation 2')
    if [ "$rc" -eq 0 ] && grep -qx 'lock rk: free' "$T/out" && [ "$(rl_tail)" = "$exp" ]; then
        ok "Redlock --status: permit back, waiter gone, barrier in generation 2, mark kept"
    else nok "Redlock --status: after the helper" "rc $rc"; echo "$exp" >"$T/exp"; diag "$T/out" "$T/exp" "$T/err"; fi
    rl -c "$INI_RL" --reset rk
    expect 0 "Redlock --reset rk: exit 0"
    rl -c "$INI_RL" --status rk
    if [ "$rc" -eq 0 ] && [ "$(rl_tail)" = "$(rl_masters free "$tok")" ]; then
        ok "Redlock --status after --reset: the masters' lines, no other kind left"
    else nok "Redlock --status after --reset: no other kind left" "rc $rc"; diag "$T/out" "$T/err"; fi
    for p in $RL_PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    RL_PIDS=
elif [ "$HAVE_KINDS" = yes ]; then
    nok "three redis-servers started as Redlock masters"
else
    skip "--status of the other kinds on a Redlock quorum" "tests/cli/kinds not built"
fi

# ================================================================ shared mode

hold sA -c "$INI" -s shr || nok "shared holder A started"
hold sB -c "$INI" -s shr
if [ -e "$T/sA.ready" ] && [ -e "$T/sB.ready" ] && [ ! -e "$T/sA.release" ]; then
    ok "shared: two rdlock -s hold NAME at the same time"
else nok "shared: two rdlock -s hold NAME at the same time"; diag "$T/sB.err"; fi
rl -c "$INI" -n shr -- true
expect 1 "shared: exclusive -n exits 1 while shared holders hold"
rl -c "$INI" -n -s shr -- true
expect 0 "shared: a third -s -n gets in"
rl -c "$INI" --status shr
if [ "$rc" -eq 0 ] && grep -q '^lock shr: held shared (2 holders)' "$T/out" &&
    [ "$(grep -c '^  holder: ' "$T/out")" -eq 2 ]; then
    ok "--status: held shared, both holders listed"
else nok "--status: held shared" "rc $rc"; diag "$T/out" "$T/err"; fi
if [ "$HAVE_PY" = yes ]; then
    status_json shr
    if [ "$rc" -eq 0 ] && json_ok "d['state'] == 'shared' and len(d['holders']) == 2 and
sorted(h['pid'] for h in d['holders']) == sorted([$(cat "$T/sA.rpid"), $(cat "$T/sB.rpid")])"; then
        ok "--status --json: held shared, two holders with their pids"
    else nok "--status --json: held shared" "rc $rc"; diag "$T/out"; fi

    # A writer waits behind the readers; new readers wait behind it.
    rm -f "$T/W.ran"
    timeout -k 5 60 "$RDLOCK" -c "$INI" shr -- sh -c ': > "$1"' sh "$T/W.ran" >"$T/W.out" 2>"$T/W.err" &
    wpid=$!
    bg_add "$wpid"
    if wait_for 100 writers_waiting shr 1; then
        ok "--status --json: a blocked exclusive rdlock shows as a waiting writer"
    else nok "--status --json: a blocked exclusive rdlock shows as a waiting writer"; diag "$T/out" "$T/W.err"; fi
    rl -c "$INI" --status shr
    if grep -q '^writers waiting: 1' "$T/out" && grep -q '^  writer: host ' "$T/out"; then
        ok "--status: writers waiting: 1"
    else nok "--status: writers waiting: 1"; diag "$T/out"; fi
    # Writer preference, seen by rdlock -s -n: the waiting writer here is
    # a C program blocked in rdlock_lock, which stays in the writers' queue
    # throughout.  (rdlock itself waits in slices and is out of the queue
    # for two round trips between them, as its man page says: with it as
    # the only writer this check failed about once in a few hundred runs.)
    cwpid=
    if [ "$HAVE_HOLDER" = yes ]; then
        rm -f "$T/cw".*
        (wait_for 600 exists "$T/cw.release"; echo go) |
            timeout -k 5 90 "$HOLDER" "$INI" shr >"$T/cw.out" 2>"$T/cw.err" &
        cwpid=$!
        bg_add "$cwpid"
        if wait_for 100 writers_waiting shr 2; then
            rl -c "$INI" -n -s shr -- true
            expect 1 "shared: with a writer waiting, a new -s -n exits 1 (writer preference)"
        else nok "shared: a C writer queues behind the readers"; diag "$T/out" "$T/cw.err"; fi
    else
        skip "shared: writer preference against a C writer" "tests/cli/holder not built"
    fi
    release sA
    release sB
    finish sA; a=$rc
    finish sB
    if [ "$a" -eq 0 ] && [ "$rc" -eq 0 ]; then ok "shared holders exit 0"; else nok "shared holders exit 0" "$a $rc"; fi
    # The two writers get it in turn (in either order), the C one until
    # told to let go.
    if [ -n "$cwpid" ]; then
        : > "$T/cw.release"
        reap "$cwpid"
        if [ "$rc" -eq 0 ] && grep -q '^unlocked 0' "$T/cw.out"; then ok "the waiting C writer got it and let go"
        else nok "the waiting C writer got it and let go" "rc $rc"; diag "$T/cw.out" "$T/cw.err"; fi
    fi
    reap "$wpid"
    if [ "$rc" -eq 0 ] && [ -e "$T/W.ran" ]; then ok "the waiting writer runs once the readers leave"
    else nok "the waiting writer runs once the readers leave" "rc $rc"; diag "$T/W.err"; fi
else
    release sA; release sB; finish sA; finish sB
    skip "shared: writer waiting" "no python3"
fi

# ================================================================ C program vs rdlock

if [ "$HAVE_HOLDER" = yes ]; then
    if hold_c c1 "$INI" cx; then ok "C holder (rdlock_lock) holds cx"
    else nok "C holder (rdlock_lock) holds cx"; diag "$T/c1.out" "$T/c1.err"; fi
    rl -c "$INI" -n cx -- sh -c 'echo RAN'
    if [ "$rc" -eq 1 ] && [ ! -s "$T/out" ]; then ok "C program holds NAME: rdlock -n exits 1"
    else nok "C program holds NAME: rdlock -n exits 1" "rc $rc"; diag "$T/err"; fi
    rl -c "$INI" -n -s cx -- true
    expect 1 "C program holds NAME: rdlock -s -n exits 1"
    rl -c "$INI" -n -E 42 cx -- true
    expect 42 "C program holds NAME: -E 42 exits 42"
    rl -c "$INI" --status cx
    if grep -q 'held exclusive' "$T/out"; then ok "--status shows the C program's hold"
    else nok "--status shows the C program's hold"; diag "$T/out"; fi

    # -w that succeeds when the C program lets go
    t0=$(now_ms)
    timeout -k 5 30 "$RDLOCK" -c "$INI" -w 15 cx -- sh -c 'echo RAN' >"$T/w.out" 2>"$T/w.err" &
    wp=$!
    bg_add "$wp"
    sleep 0.5
    release c1
    reap "$wp"
    el=$(($(now_ms) - t0))
    if [ "$rc" -eq 0 ] && grep -q RAN "$T/w.out" && [ "$el" -lt 10000 ]; then
        ok "-w 15: runs COMMAND once the C program unlocks (${el} ms)"
    else nok "-w 15: runs COMMAND once the C program unlocks" "rc $rc after $el ms"; diag "$T/w.err"; fi
    finish c1
    if [ "$rc" -eq 0 ] && grep -q '^unlocked 0' "$T/c1.out"; then ok "C holder unlocked cleanly"
    else nok "C holder unlocked cleanly" "rc $rc"; diag "$T/c1.out" "$T/c1.err"; fi

    # the other way round
    hold cy1 -c "$INI" cy || nok "rdlock holds cy"
    echo | timeout -k 5 20 "$HOLDER" -t "$INI" cy >"$T/out" 2>"$T/err"
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q '^busy' "$T/out"; then ok "rdlock holds NAME: C rdlock_trylock gets EBUSY"
    else nok "rdlock holds NAME: C rdlock_trylock gets EBUSY" "rc $rc"; diag "$T/out" "$T/err"; fi
    echo | timeout -k 5 20 "$HOLDER" -t -s "$INI" cy >"$T/out" 2>"$T/err"
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q '^busy' "$T/out"; then ok "rdlock holds NAME: C rdrwlock_tryrdlock gets EBUSY"
    else nok "rdlock holds NAME: C rdrwlock_tryrdlock gets EBUSY" "rc $rc"; diag "$T/out" "$T/err"; fi
    release cy1
    finish cy1
    echo | timeout -k 5 20 "$HOLDER" -t "$INI" cy >"$T/out" 2>"$T/err"
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q '^locked' "$T/out"; then ok "after rdlock exits, the C program takes NAME"
    else nok "after rdlock exits, the C program takes NAME" "rc $rc"; diag "$T/out" "$T/err"; fi

    # shared: rdlock -s and a C reader together
    hold_c c2 -s "$INI" cs
    rl -c "$INI" -n -s cs -- true
    expect 0 "C reader holds NAME shared: rdlock -s -n gets in"
    rl -c "$INI" -n cs -- true
    expect 1 "C reader holds NAME shared: exclusive rdlock -n exits 1"
    release c2
    finish c2
else
    skip "C program vs rdlock" "tests/cli/holder not built"
fi

# ================================================================ signals

# SIGTERM to rdlock is forwarded to COMMAND
hold sig1 -c "$INI" sig1 || nok "holder sig1 started"
kill -TERM "$(cat "$T/sig1.rpid")"
finish sig1
if [ "$rc" -eq 7 ] && grep -q TERM "$T/sig1.sig"; then
    ok "SIGTERM to rdlock reaches COMMAND (its trap runs; exit 7 = COMMAND's status)"
else nok "SIGTERM to rdlock reaches COMMAND" "rc $rc"; diag "$T/sig1.err"; fi
hold sig2 -c "$INI" sig2
kill -HUP "$(cat "$T/sig2.rpid")"
finish sig2
if [ "$rc" -eq 7 ] && grep -q HUP "$T/sig2.sig"; then ok "SIGHUP to rdlock reaches COMMAND"
else nok "SIGHUP to rdlock reaches COMMAND" "rc $rc"; diag "$T/sig2.err"; fi
rm -f "$T/sig3".*
timeout -k 5 30 "$RDLOCK" -c "$INI" sig1 -- sh -c 'echo $PPID > "$1.rpid"; exec sleep 25' sh "$T/sig3" \
    >"$T/sig3.out" 2>"$T/sig3.err" &
sp=$!
bg_add "$sp"
wait_for 100 exists "$T/sig3.rpid" && sleep 0.2
kill -TERM "$(cat "$T/sig3.rpid")"
reap "$sp"
expect 143 "SIGTERM forwarded to a COMMAND without a trap: it dies, rdlock exits 143"
rl -c "$INI" -n sig1 -- true
expect 0 "the lock is released after a forwarded signal"

# a signal while waiting ends the wait and leaves no queue mark
if [ "$HAVE_PY" = yes ]; then
    for s in TERM INT; do
        hold w$s -c "$INI" wq$s
        rm -f "$T/wq.ran"
        # python resets SIGINT to default: a background job of sh ignores it
        timeout -k 5 30 python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$RDLOCK" -c "$INI" "wq$s" -- sh -c ': > "$1"' sh "$T/wq.ran" \
            >"$T/wq.out" 2>"$T/wq.err" &
        wp=$!
        bg_add "$wp"
        if wait_for 100 writers_waiting "wq$s" 1; then
            wpid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["writers"][0]["pid"])' "$T/out")
            t0=$(now_ms)
            kill -"$s" "$wpid"
            reap "$wp"
            el=$(($(now_ms) - t0))
            exp=143; [ "$s" = INT ] && exp=130
            if [ "$rc" -eq "$exp" ] && [ "$el" -lt 3000 ] && [ ! -e "$T/wq.ran" ]; then
                ok "SIG$s while waiting: rdlock ends ($rc) in ${el} ms, COMMAND not run"
            else nok "SIG$s while waiting: rdlock ends with $exp" "rc $rc after $el ms"; diag "$T/wq.err"; fi
            if writers_waiting "wq$s" 0; then ok "SIG$s while waiting: no queue mark left behind"
            else nok "SIG$s while waiting: no queue mark left behind"; diag "$T/out"; fi
        else
            nok "SIG$s while waiting: the waiter never showed in --status"; diag "$T/out" "$T/wq.err"
            kill "$wp" 2>/dev/null; reap "$wp"
        fi
        release w$s
        finish w$s
    done
else
    skip "signals while waiting" "no python3"
fi

# ================================================================ lost lease

hold lost1 -c "$INI_SHORT" lost1
rcli del 'rdlock:{lost1}' >/dev/null
finish lost1
if [ "$rc" -eq 75 ] && grep -q TERM "$T/lost1.sig" &&
    [ "$(grep -c 'lease lost' "$T/lost1.err")" -eq 1 ] && grep -q 'lease lost.*while COMMAND runs; sent SIGTERM' "$T/lost1.err" &&
    ! grep -q 'before COMMAND' "$T/lost1.err" && grep -q 'exit status 75' "$T/lost1.err"; then
    ok "lease lost (key deleted): COMMAND gets SIGTERM, message, exit 75"
else nok "lease lost (key deleted): COMMAND gets SIGTERM, message, exit 75" "rc $rc"; diag "$T/lost1.err"; fi

hold lost2 -c "$INI_SHORT" --on-lost=ignore lost2
rcli del 'rdlock:{lost2}' >/dev/null
wait_for 50 grep -qs 'lease lost' "$T/lost2.err"
sleep 0.3
release lost2
finish lost2
if [ "$rc" -eq 75 ] && [ ! -e "$T/lost2.sig" ] && grep -q 'ignore' "$T/lost2.err"; then
    ok "--on-lost=ignore: COMMAND runs on undisturbed, still exit 75"
else nok "--on-lost=ignore: COMMAND runs on undisturbed, still exit 75" "rc $rc"; diag "$T/lost2.err" "$T/lost2.sig"; fi

# --reset while COMMAND runs (the issue's case): COMMAND gets SIGTERM by the
# next renewal round (lease 3 s: every second), one true line, exit 75
INI_3S=$T/lease3s.ini
printf '[redis]\nsocket = %s\n[lock]\nlease_ms = 3000\n' "$SOCK" >"$INI_3S"
hold rsd -c "$INI_3S" rsd
t0=$(now_ms)
rl -c "$INI" --reset rsd
finish rsd
el=$(($(now_ms) - t0))
if [ "$rc" -eq 75 ] && grep -q TERM "$T/rsd.sig" && [ "$el" -lt 3000 ] &&
    [ "$(grep -c 'lease lost' "$T/rsd.err")" -eq 1 ] && ! grep -q 'before COMMAND' "$T/rsd.err"; then
    ok "--reset during COMMAND: SIGTERM within a renewal round (${el} ms), one message, exit 75"
else nok "--reset during COMMAND: SIGTERM within a renewal round, one message, exit 75" "rc $rc after $el ms"
    diag "$T/rsd.err" "$T/rsd.sig"; fi

# a loss that only the unlock finds (30 s lease, reset, COMMAND ends before
# the first renewal): one line, saying so, exit 75
hold rsu -c "$INI" rsu
rl -c "$INI" --reset rsu
release rsu
finish rsu
if [ "$rc" -eq 75 ] && [ ! -e "$T/rsu.sig" ] && [ "$(grep -c 'lost' "$T/rsu.err")" -eq 1 ] &&
    grep -q 'lost before COMMAND finished (found at the unlock); COMMAND exited with status 0' "$T/rsu.err"; then
    ok "a loss found by the unlock: one line that says so, exit 75"
else nok "a loss found by the unlock: one line that says so, exit 75" "rc $rc"; diag "$T/rsu.err"; fi

# rdlock SIGKILLed while COMMAND runs (the OOM killer): COMMAND gets
# SIGTERM at once (--orphan=term, the default), so that it does not run
# on unprotected when the lease lapses; --orphan=keep lets it run on.
# cmd_parent ID: the parent pid of ID's COMMAND ("" if it is gone)
cmd_parent() { sed 's/.*) //' "/proc/$(cat "$T/$1.cpid")/stat" 2>/dev/null | cut -d' ' -f2; }
hold ok1 -c "$INI" ok1
kill -KILL "$(cat "$T/ok1.rpid")"
wait_for 50 exists "$T/ok1.sig"
if grep -qs TERM "$T/ok1.sig"; then ok "rdlock SIGKILLed: COMMAND gets SIGTERM (--orphan=term)"
else nok "rdlock SIGKILLed: COMMAND gets SIGTERM (--orphan=term)"; diag "$T/ok1.err"; fi
finish ok1
hold ok2 -c "$INI" --orphan=keep ok2
kill -KILL "$(cat "$T/ok2.rpid")"
sleep 1
if [ ! -e "$T/ok2.sig" ] && [ -n "$(cmd_parent ok2)" ]; then
    ok "rdlock SIGKILLed with --orphan=keep: COMMAND runs on"
else nok "rdlock SIGKILLed with --orphan=keep: COMMAND runs on"; diag "$T/ok2.err" "$T/ok2.sig"; fi
release ok2
wait_for 50 sh -c '[ ! -e "/proc/$1" ]' sh "$(cat "$T/ok2.cpid")"
finish ok2
usage_case "--orphan=maybe" -c "$INI" --orphan=maybe u1 -- true

# a short lease is renewed for as long as COMMAND runs (1 s: renewed
# every 333 ms, so a loaded machine does not lose it by a late renewal)
INI_1S=$T/lease1s.ini
printf '[redis]\nsocket = %s\n[lock]\nlease_ms = 1000\n' "$SOCK" >"$INI_1S"
rl -c "$INI_1S" renew1 -- sleep 2.5
expect 0 "a 1 s lease is renewed through a 2.5 s COMMAND"

# ================================================================ reset, not recoverable

hold rs1 -c "$INI" rs1
rl -c "$INI" --reset rs1
expect 0 "--reset of a held NAME: exit 0"
rl -c "$INI" -n rs1 -- true
expect 0 "after --reset, rdlock -n gets NAME"
finish rs1
if [ "$rc" -eq 75 ] && grep -q TERM "$T/rs1.sig"; then ok "the reset holder finds its lease lost: SIGTERM, exit 75"
else nok "the reset holder finds its lease lost: SIGTERM, exit 75" "rc $rc"; diag "$T/rs1.err"; fi

rcli set 'rdlock:{nr1}:x' '!' >/dev/null
rl -c "$INI" -n nr1 -- sh -c 'echo RAN'
if [ "$rc" -eq 70 ] && grep -q 'rdlock --reset nr1' "$T/err" && [ ! -s "$T/out" ]; then
    ok "ENOTRECOVERABLE: -n exits 70, message names 'rdlock --reset nr1'"
else nok "ENOTRECOVERABLE: -n exits 70 naming --reset" "rc $rc"; diag "$T/err"; fi
rl -c "$INI" nr1 -- true
expect_err 70 'rdlock --reset nr1' "ENOTRECOVERABLE: a blocking rdlock exits 70 at once"
rl -c "$INI" -s -w 2 nr1 -- true
expect 70 "ENOTRECOVERABLE: -s -w exits 70"
rl -c "$INI" --status nr1
if [ "$rc" -eq 0 ] && grep -q '^robust state: not-recoverable' "$T/out"; then ok "--status: robust state not-recoverable"
else nok "--status: robust state not-recoverable" "rc $rc"; diag "$T/out"; fi
if [ "$HAVE_PY" = yes ]; then
    status_json nr1
    if [ "$rc" -eq 0 ] && json_ok "d['robust'] == 'not-recoverable'"; then ok "--status --json: robust not-recoverable"
    else nok "--status --json: robust not-recoverable"; diag "$T/out"; fi
fi
rl -c "$INI" --reset nr1
expect 0 "--reset clears ENOTRECOVERABLE"
rl -c "$INI" -n nr1 -- true
expect 0 "after --reset, nr1 works again"
rl -c "$INI" --status nr1
if grep -q '^robust state: consistent' "$T/out"; then ok "--status: consistent after reset"
else nok "--status: consistent after reset"; diag "$T/out"; fi

# owner-dead: an exclusive hold that ended by loss
hold od1 -c "$INI_SHORT" od1
rcli del 'rdlock:{od1}' >/dev/null
finish od1
rl -c "$INI" --status od1
if grep -q '^robust state: owner-dead' "$T/out"; then ok "--status: owner-dead after a lost exclusive hold"
else nok "--status: owner-dead after a lost exclusive hold"; diag "$T/out"; fi

# ================================================================ names with any bytes

weird=$(printf 'a"b\\c\nd\te\001f\303\251g\377h' )
hold wn1 -c "$INI" "$weird"
if [ "$HAVE_PY" = yes ]; then
    status_json "$weird"
    if [ "$rc" -eq 0 ] && RDL_WEIRD=$weird json_ok "d['state'] == 'exclusive' and
d['name_hex'] == os.environb[b'RDL_WEIRD'].hex() and
d['name'] == os.environb[b'RDL_WEIRD'].decode('utf-8', 'replace')" 2>"$T/py.err"; then
        ok "--status --json escapes a name with quotes, backslash, control and non-UTF-8 bytes"
    else nok "--status --json escapes a strange name" "rc $rc"; diag "$T/out" "$T/err" "$T/py.err"; fi
else skip "--json strange name" "no python3"; fi
rl -c "$INI" --status "$weird"
if [ "$rc" -eq 0 ] && head -n 1 "$T/out" |
    grep -qxF 'lock $'"'"'a"b\\c\x0ad\x09e\x01f\xc3\xa9g\xffh'"'"': held exclusive'; then
    ok "--status shows a strange name shell-quoted"
else nok "--status shows a strange name shell-quoted"; diag "$T/out"; fi
release wn1
finish wn1
expect 0 "holder of the strange name exits 0"

# ================================================================ configuration errors

rl -c "$INI_BAD" -n c1 -- true
expect_err 78 'config' "malformed ini: exit 78"
rl -c "$INI_BADVAL" -n c1 -- true
expect_err 78 'lease_ms' "out-of-range value: exit 78, message names the key"
rl -c "$T/no-such.ini" -n c1 -- true
expect_err 78 'no-such.ini' "missing -c file: exit 78"
RDLOCK_CONF=$T/no-such.ini
export RDLOCK_CONF
rl -n c1 -- true
expect 78 "missing \$RDLOCK_CONF file: exit 78"
RDLOCK_CONF=$INI
rl -n c1 -- sh -c 'echo RAN'
if [ "$rc" -eq 0 ] && grep -q RAN "$T/out"; then ok "\$RDLOCK_CONF is used without -c"
else nok "\$RDLOCK_CONF is used without -c" "rc $rc"; diag "$T/err"; fi
unset RDLOCK_CONF
rl -c "$INI_BAD" --status c1
expect 78 "--status with a malformed ini: exit 78"

# ================================================================ Redis unreachable / refusing

rl -c "$INI_CLOSED" -n un1 -- sh -c 'echo RAN'
if [ "$rc" -eq 69 ] && grep -q "127.0.0.1:$CLOSED" "$T/err" && grep -qi 'refused' "$T/err" && [ ! -s "$T/out" ]; then
    ok "unreachable Redis with -n: exit 69, message names the server and why"
else nok "unreachable Redis with -n: exit 69 naming the server" "rc $rc"; diag "$T/err"; fi
rl -c "$INI_CLOSED" -w 0.5 un1 -- true
expect_err 69 "127.0.0.1:$CLOSED" "unreachable Redis with -w 0.5: exit 69"
rl -c "$INI_CLOSED" --status un1
expect_err 69 "127.0.0.1:$CLOSED" "unreachable Redis with --status: exit 69"
rl -c "$INI_CLOSED" --reset un1
expect_err 69 "127.0.0.1:$CLOSED" "unreachable Redis with --reset: exit 69"
rl -c "$INI_FF" un1 -- true
expect_err 69 "127.0.0.1:$CLOSED" "unreachable Redis with fail_fast = yes: exit 69"
if [ "$(grep -c . "$T/err")" -ge 1 ] && ! grep -v '^rdlock: ' "$T/err" | grep -q . &&
    grep -q '^rdlock: lock un1: cannot reach Redis' "$T/err"; then
    ok "fail_fast: the tool's own line names the lock"
else nok "fail_fast: the tool's own line names the lock"; diag "$T/err"; fi
rl -c "$INI_ACL" -n un1 -- true
expect_err 69 'refused' "Redis refusing the credentials: exit 69"
rl -c "$INI_ACL" --status un1
expect 69 "Redis refusing the credentials, --status: exit 69"

# without -n/-w rdlock waits for Redis to come up
rm -f "$T/late.ran"
timeout -k 5 40 "$RDLOCK" -c "$INI_LATE" late1 -- sh -c ': > "$1"' sh "$T/late.ran" >"$T/late.out" 2>"$T/late.err" &
lp=$!
bg_add "$lp"
wait_for 100 grep -qs 'still waiting' "$T/late.err"
if [ ! -e "$T/late.ran" ] && kill -0 "$lp" 2>/dev/null && grep -q 'still waiting' "$T/late.err"; then
    ok "unreachable Redis without -n/-w: rdlock waits (and says so)"
else nok "unreachable Redis without -n/-w: rdlock waits"; diag "$T/late.err"; fi
if start_server "$LATE_SOCK" 0 late; then
    SERVER2_PID=$spid
    reap "$lp"
    if [ "$rc" -eq 0 ] && [ -e "$T/late.ran" ]; then ok "... and runs COMMAND once Redis is up"
    else nok "... and runs COMMAND once Redis is up" "rc $rc"; diag "$T/late.err"; fi
    kill "$SERVER2_PID"; wait "$SERVER2_PID" 2>/dev/null; SERVER2_PID=
else
    nok "second redis-server started"
    kill "$lp" 2>/dev/null; reap "$lp"
fi

# ================================================================ waiting status (-v, -q, terminal)

# -v with stderr not a terminal: a "waiting for" line naming the holder's
# pid (the holder is the first rdlock: its pid is in ws1.rpid), then "got".
hold ws1 -c "$INI" ws1 || nok "holder ws1 started"
rpid=$(cat "$T/ws1.rpid" 2>/dev/null)
timeout -k 5 30 "$RDLOCK" -v -c "$INI" ws1 -- sh -c 'echo RAN' >"$T/wv.out" 2>"$T/wv.err" &
wp=$!
bg_add "$wp"
if wait_for 100 grep -qs '^rdlock: waiting for ws1 for [0-9]* s: held by .* pid '"$rpid"',' "$T/wv.err"; then
    ok "-v, stderr not a tty: 'waiting for ws1 ... held by HOST pid $rpid' while it waits"
else nok "-v, stderr not a tty: a 'waiting for' line naming the holder's pid $rpid"; diag "$T/wv.err"; fi
release ws1
finish ws1
reap "$wp"
if [ "$rc" -eq 0 ] && grep -q RAN "$T/wv.out" && grep -Eq '^rdlock: got ws1 after [0-9]+\.[0-9] s$' "$T/wv.err" &&
    [ "$(grep -n 'waiting for' "$T/wv.err" | head -n 1 | cut -d: -f1)" -lt "$(grep -n 'got ws1' "$T/wv.err" | cut -d: -f1)" ]; then
    ok "-v: 'got ws1 after N.N s' once acquired, after the status line"
else nok "-v: 'got ws1 after N.N s' once acquired" "rc $rc"; diag "$T/wv.err"; fi
if ! grep -q "$(printf '\r')" "$T/wv.err" && ! grep -q "$(printf '\033')" "$T/wv.err"; then
    ok "-v, stderr not a tty: plain lines (no \\r, no escape sequences)"
else nok "-v, stderr not a tty: plain lines"; diag "$T/wv.err"; fi

# Without -v, stderr not a terminal: nothing while waiting.
hold ws2 -c "$INI" ws2
timeout -k 5 30 "$RDLOCK" -c "$INI" ws2 -- true >"$T/wn.out" 2>"$T/wn.err" &
wp=$!
bg_add "$wp"
sleep 1.5
release ws2
finish ws2
reap "$wp"
if [ "$rc" -eq 0 ] && [ ! -s "$T/wn.err" ]; then ok "no -v, stderr not a tty: waits silently"
else nok "no -v, stderr not a tty: waits silently" "rc $rc"; diag "$T/wn.err"; fi

# -q: not even the "still waiting" notice of an unreachable Redis (which
# the test of INI_LATE above shows without -q).
INI_NOSOCK=$T/nosock.ini
printf '[redis]\nsocket = %s\nconnect_timeout_ms = 200\n' "$T/no-such.sock" >"$INI_NOSOCK"
timeout -k 5 2 "$RDLOCK" -q -c "$INI_NOSOCK" ws3 -- true >"$T/out" 2>"$T/err"
rc=$?
if [ "$rc" -eq 124 ] && [ ! -s "$T/err" ]; then ok "-q: an unreachable Redis is waited for without a word"
else nok "-q: waits for an unreachable Redis without a word" "rc $rc"; diag "$T/err"; fi
timeout -k 5 2 "$RDLOCK" -c "$INI_NOSOCK" ws3 -- true >"$T/out" 2>"$T/err"
if grep -q 'still waiting' "$T/err"; then ok "... while without -q it says 'still waiting'"
else nok "... while without -q it says 'still waiting'"; diag "$T/err"; fi
usage_case "-v with -q" -c "$INI" -v -q u1 -- true

# A terminal (script(1) gives rdlock a pty): the status line is drawn with
# \r and erased (\r ESC[K) before COMMAND runs; -q draws nothing.
if command -v script >/dev/null 2>&1 && script -qec true /dev/null </dev/null >/dev/null 2>&1; then
    for q in "" -q; do
        hold ws4 -c "$INI" ws4
        rpid=$(cat "$T/ws4.rpid" 2>/dev/null)
        TERM=xterm timeout -k 5 30 script -qec "$RDLOCK $q -c $INI ws4 -- echo RAN" /dev/null \
            </dev/null >"$T/tty.out" 2>&1 &
        wp=$!
        bg_add "$wp"
        if [ -z "$q" ]; then
            wait_for 100 grep -qs 'waiting for ws4' "$T/tty.out"
            sleep 2 # a second redraw (one a second)
        else
            sleep 2
        fi
        release ws4
        finish ws4
        reap "$wp"
        cr=$(printf '\r')
        esc=$(printf '\033')
        if [ -z "$q" ]; then
            if [ "$rc" -eq 0 ] && grep -q "${cr}rdlock: waiting for ws4 for [0-9]* s: held by .* pid $rpid," "$T/tty.out" &&
                [ "$(grep -o "${cr}rdlock: waiting for ws4" "$T/tty.out" | wc -l)" -ge 2 ] &&
                grep -q "${cr}${esc}\[KRAN" "$T/tty.out" && [ "$(grep -c 'waiting for' "$T/tty.out")" -eq 1 ]; then
                ok "terminal: one status line redrawn in place (\\r, pid $rpid), erased before COMMAND"
            else nok "terminal: one status line redrawn in place, erased before COMMAND" "rc $rc"
                od -c "$T/tty.out" | sed -n '1,12s/^/#   /p'; fi
        else
            if [ "$rc" -eq 0 ] && grep -q RAN "$T/tty.out" && ! grep -q 'waiting' "$T/tty.out"; then
                ok "terminal, -q: no status line"
            else nok "terminal, -q: no status line" "rc $rc"; diag "$T/tty.out"; fi
        fi
    done
else
    skip "status line on a terminal" "script(1) from util-linux (bsdutils) is missing or has no -e/-c: no pty to test with"
fi

# ================================================================ summary

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
