#!/bin/sh
# check-examples.sh: run every example program (examples/*.c; README.md,
# "A pthread_mutex port") and the demo against a private redis-server and
# check what they print: exact counts, a give-up that says so, readers that
# never see a torn write, a stale write refused by its fencing token, clear
# messages when Redis is unreachable, and the demo's lines in the order of
# events.  Run by make check (top_builddir and
# REDIS_SERVER in the environment), or by hand from the build directory:
#     top_builddir=. sh ../examples/check-examples.sh
#
# The server listens only on a unix socket in a fresh temp dir (no TCP
# port, no persistence) and is stopped by PID.  "Unreachable" is a socket
# path where nothing listens.  Every example run is bounded by timeout(1).
# Prints "ok N - ..." / "not ok N - ..." and exits 1 if any failed.
set -u
bin=${top_builddir:-.}/examples
src=${top_srcdir:-$(dirname "$0")/..}/examples
server=${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}
cli=$(dirname "$(command -v "$server")")/redis-cli
[ -x "$cli" ] || cli=redis-cli
LC_ALL=C
export LC_ALL
unset RDLOCK_CONF 2>/dev/null || true

base=${TMPDIR:-/tmp}
[ ${#base} -gt 60 ] && base=/tmp # unix socket paths are short
dir=$(mktemp -d "$base/rdlock-examples.XXXXXX") || exit 99
pid=
bgpids=
cleanup() {
    for p in $bgpids; do kill "$p" 2>/dev/null; done
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$server" --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
until "$cli" -s "$dir/redis.sock" ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
        echo "redis-server did not start" >&2; cat "$dir/redis.log" >&2; exit 99
    fi
    sleep 0.05
done
INI=$dir/rdlock.ini
printf '[redis]\nsocket = %s\n' "$dir/redis.sock" >"$INI"
# Nothing listens there: connect fails at once with ENOENT.
DOWN=$dir/down.ini
printf '[redis]\nsocket = %s\nconnect_timeout_ms = 200\n' "$dir/nobody.sock" >"$DOWN"
DOWN_FF=$dir/down-ff.ini
printf '[redis]\nsocket = %s\ncommand_retries = 1\n[lock]\nfail_fast = yes\n' "$dir/nobody.sock" >"$DOWN_FF"

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() {
    n=$((n + 1)); failed=$((failed + 1))
    echo "not ok $n - $1"
    shift
    for f in "$@"; do [ -s "$f" ] && sed -n "1,12s|^|#   ${f##*/}: |p" "$f"; done
}
# run SECONDS PROGRAM ARGS...: output in $dir/out and $dir/err, status in rc
run() {
    t=$1; shift
    timeout -k 5 "$t" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
}
out=$dir/out
err=$dir/err

# ---------------------------------------------------------------- counters

run 60 "$bin/counter_pthread" "$dir/pthread.count" 4 50
if [ "$rc" -eq 0 ] && [ "$(cat "$out")" = 200 ]; then ok "counter_pthread: 4 threads x 50 = 200"
else nok "counter_pthread: 4 threads x 50, want 200 (exit $rc)" "$out" "$err"; fi

run 120 env RDLOCK_CONF="$INI" "$bin/counter_rdlock" "$dir/rdlock.count" 4 50
if [ "$rc" -eq 0 ] && [ "$(cat "$out")" = 200 ]; then ok "counter_rdlock: 4 threads x 50 = 200 under an rdlock_t"
else nok "counter_rdlock: 4 threads x 50, want 200 (exit $rc)" "$out" "$err"; fi
# The port keeps the threads: no fork() in it.
if grep -q 'pthread_create' "$src/counter_rdlock.c" && ! grep -q 'fork *(' "$src/counter_rdlock.c"; then
    ok "counter_rdlock.c keeps the threads of counter_pthread.c"
else nok "counter_rdlock.c keeps the threads of counter_pthread.c"; fi

run 120 env RDLOCK_CONF="$INI" "$bin/counter_rdlock_procs" "$dir/procs.count" 3 3 20
if [ "$rc" -eq 0 ] && [ "$(cat "$out")" = 180 ]; then ok "counter_rdlock_procs: 3 processes x 3 threads x 20 = 180"
else nok "counter_rdlock_procs: 3 x 3 x 20, want 180 (exit $rc)" "$out" "$err"; fi

# Unreachable: with fail_fast, a clear error naming the server and why;
# without, it says what it waits for before blocking.
run 20 env RDLOCK_CONF="$DOWN_FF" "$bin/counter_rdlock" "$dir/x.count" 2 2
if [ "$rc" -eq 69 ] && grep -q "counter_rdlock: .*EIO.*$dir/nobody.sock.*No such file" "$err"; then
    ok "counter_rdlock, Redis unreachable, fail_fast: exit 69, names the server, EIO and why"
else nok "counter_rdlock, Redis unreachable, fail_fast: exit 69 with a clear message (exit $rc)" "$err"; fi
run 3 env RDLOCK_CONF="$DOWN" "$bin/counter_rdlock" "$dir/x.count" 2 2
if [ "$rc" -eq 124 ] && grep -q "counter_rdlock: waiting for Redis at unix:$dir/nobody.sock" "$err"; then
    ok "counter_rdlock, Redis unreachable: says it waits for unix:.../nobody.sock (and waits)"
else nok "counter_rdlock, Redis unreachable: says what it waits for (exit $rc)" "$err"; fi
run 3 env RDLOCK_CONF="$DOWN" "$bin/counter_rdlock_procs" "$dir/x.count" 2 2 2
if [ "$rc" -eq 124 ] && grep -q "counter_rdlock_procs: waiting for Redis at unix:$dir/nobody.sock" "$err"; then
    ok "counter_rdlock_procs, Redis unreachable: says what it waits for"
else nok "counter_rdlock_procs, Redis unreachable: says what it waits for (exit $rc)" "$err"; fi
run 20 env RDLOCK_CONF="$dir/no-such.ini" "$bin/counter_rdlock" "$dir/x.count" 2 2
if [ "$rc" -eq 78 ] && grep -q "ENOENT.*no-such.ini" "$err"; then
    ok "counter_rdlock, missing \$RDLOCK_CONF file: exit 78, names the file"
else nok "counter_rdlock, missing \$RDLOCK_CONF file: exit 78 (exit $rc)" "$err"; fi

# ---------------------------------------------------------------- bounded queue

# 3 producers x 40 items (1..40), capacity 2: 120 items, sum 3 x 820.
run 60 "$bin/queue_pthread" 3 2 40 2
if [ "$rc" -eq 0 ] && [ "$(cat "$out")" = "consumed 120 items, sum 2460" ]; then
    ok "queue_pthread: 3 producers x 40, 2 consumers: 120 items, sum 2460"
else nok "queue_pthread: want 120 items, sum 2460 (exit $rc)" "$out" "$err"; fi
run 120 env RDLOCK_CONF="$INI" "$bin/queue_rdlock_procs" "$dir/queue" 3 2 40 2
if [ "$rc" -eq 0 ] && [ "$(cat "$out")" = "consumed 120 items, sum 2460" ]; then
    ok "queue_rdlock_procs: the same in 5 processes, rdlock_t + 2 rdcond_t"
else nok "queue_rdlock_procs: want 120 items, sum 2460 (exit $rc)" "$out" "$err"; fi

# ---------------------------------------------------------------- timedlock

# The holder (deadline 0, works 3 s: bounded by itself), so that $hp is
# its own pid.
RDLOCK_CONF="$INI" "$bin/timedlock" tl 0 3 >"$dir/h.out" 2>"$dir/h.err" &
hp=$!
bgpids="$bgpids $hp"
i=0
until grep -qs '^timedlock: got tl' "$dir/h.out" || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
htoken=$(sed -n 's/.*fencing token \([0-9]*\).*/\1/p' "$dir/h.out")
run 20 env RDLOCK_CONF="$INI" "$bin/timedlock" tl 0.5 0
if [ "$rc" -eq 75 ] && grep -q "^timedlock: waiting up to 0.5 s for tl on Redis at unix:" "$out" &&
    grep -Eq "^timedlock: gave up on tl after 0\.[5-9] s: held exclusive by .* pid $hp," "$err"; then
    ok "timedlock: gives up after its 0.5 s deadline (exit 75) and names the holder's pid $hp"
else nok "timedlock: gives up after its deadline, naming the holder (exit $rc)" "$out" "$err" "$dir/h.out"; fi
run 20 env RDLOCK_CONF="$INI" "$bin/timedlock" tl 10 0
wait "$hp"
hrc=$?
token=$(sed -n 's/.*fencing token \([0-9]*\).*/\1/p' "$out")
if [ "$rc" -eq 0 ] && [ "$hrc" -eq 0 ] && grep -q '^timedlock: got tl after' "$out" && [ -n "$htoken" ] &&
    [ -n "$token" ] && [ "$token" -gt "$htoken" ]; then
    ok "timedlock: with 10 s it gets tl once the holder is done (token $token > $htoken)"
else nok "timedlock: with 10 s it gets tl (exit $rc, holder $hrc)" "$out" "$err" "$dir/h.err"; fi
run 20 env RDLOCK_CONF="$DOWN" "$bin/timedlock" tl 1 0
if [ "$rc" -eq 69 ] && grep -q "gave up on tl after .* s: Redis at unix:$dir/nobody.sock unreachable: .*No such file" "$err"; then
    ok "timedlock, Redis unreachable: exit 69 at the deadline, names the server and why"
else nok "timedlock, Redis unreachable: exit 69 naming the server (exit $rc)" "$out" "$err"; fi

# ---------------------------------------------------------------- rwlock

run 120 env RDLOCK_CONF="$INI" "$bin/rwlock" "$dir/config" 4 10
most=$(sed -n 's/.*at most \([0-9]*\) inside.*/\1/p' "$out")
if [ "$rc" -eq 0 ] && grep -q '^readers: 40 reads, 0 torn' "$out" && grep -q '^writer: 10 updates, 0 with a reader inside' "$out" &&
    grep -q '^final version: 10 10$' "$out" && [ -n "$most" ] && [ "$most" -ge 2 ]; then
    ok "rwlock: 4 readers x 10 shared ($most at once), 10 exclusive updates, no torn read"
else nok "rwlock: readers share, the writer excludes them (exit $rc)" "$out" "$err"; fi

# ---------------------------------------------------------------- explicit client, fencing

run 60 "$bin/client_fencing" "$INI" "$dir/store"
if [ "$rc" -eq 0 ] && grep -q "^client: Redis at unix:$dir/redis.sock" "$out" &&
    grep -q '^store: token [0-9]* writes "A2": refused' "$out" && grep -q '^A: unlock: ENOLCK' "$out" &&
    grep -q '^B: unlock: ok' "$out" && grep -q ' B1$' "$dir/store"; then
    ok "client_fencing: the stale holder's write is refused by its token, its unlock is ENOLCK"
else nok "client_fencing: stale write refused, ENOLCK (exit $rc)" "$out" "$err"; fi
run 20 "$bin/client_fencing" "$DOWN" "$dir/store"
if [ "$rc" -eq 69 ] && grep -q "client_fencing: Redis at unix:$dir/nobody.sock is unreachable.*No such file" "$err"; then
    ok "client_fencing, Redis unreachable: exit 69 at once, names the server and why"
else nok "client_fencing, Redis unreachable: exit 69 (exit $rc)" "$out" "$err"; fi
run 20 "$bin/client_fencing" "$dir/no-such.ini" "$dir/store"
if [ "$rc" -eq 78 ] && grep -q "no-such.ini: ENOENT" "$err"; then
    ok "client_fencing, missing ini: exit 78, names the file"
else nok "client_fencing, missing ini: exit 78 (exit $rc)" "$err"; fi

# ---------------------------------------------------------------- demo (./run.sh demo)

# Its lines follow the order of events: a worker's "got the lock" comes
# only after the previous holder's "releasing the lock", the tokens rise,
# and the summary comes last.
run 60 "$bin/demo" "$INI"
if [ "$rc" -eq 0 ] && awk '
    NR == 1 { next }
    /^demo done: 6 holds, / { done = NR; next }
    {
        if (done) bad = 1
        if ($0 ~ /^worker [AB]: round [0-9]+: got the lock after .* fencing token [0-9]+;/) {
            if (held != "") bad = 1
            split($0, f, ": ")
            held = f[1] ": " f[2]
            t = $0
            sub(/.*fencing token /, "", t)
            sub(/;.*/, "", t)
            if (t + 0 <= last) bad = 1
            last = t + 0
            n++
        } else if ($0 == held ": releasing the lock") {
            held = ""
        } else bad = 1
    }
    END { exit !(!bad && held == "" && n == 6 && done == NR) }' "$out"; then
    ok "demo: 6 holds, each line after the event before it, tokens rising"
else nok "demo: lines in the order of events (exit $rc)" "$out" "$err"; fi

echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
