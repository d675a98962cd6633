#!/bin/sh
# callgrind.sh PAIRS_BINARY [N1 N2] - the client's instructions per
# uncontended pair (valgrind --tool=callgrind), for a mutex lock+unlock and
# a read-share rdlock+unlock, against a private redis-server on a unix
# socket in a temp dir.  Each kind runs N1 and N2 pairs (default 1000 and
# 6000); the difference over N2-N1 cancels the start-up and the exit.
# Instruction counts are repeatable whatever else the machine does, which
# is why refactors quote them (issue 25: no more than +5 %).
set -eu
bin=$1
n1=${2:-1000}
n2=${3:-6000}
server=${REDIS_SERVER:-redis-server}
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind not installed" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/rdlock-cg.XXXXXX")
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
"$server" --port 0 --unixsocket "$dir/redis.sock" --save '' --appendonly no \
    --daemonize no --dir "$dir" >"$dir/server.log" 2>&1 &
pid=$!
i=0
while [ ! -S "$dir/redis.sock" ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || { cat "$dir/server.log" >&2; exit 1; }
    sleep 0.05
done
printf '[redis]\nsocket = %s\n' "$dir/redis.sock" >"$dir/rdlock.ini"

count() { # KIND N: total instructions of one run
    RDLOCK_CONF="$dir/rdlock.ini" valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
        "$bin" "$2" "$1" >/dev/null 2>"$dir/vg.log" || { cat "$dir/vg.log" >&2; exit 1; }
    sed -n 's/^totals: *//p; s/^summary: *//p' "$dir/cg.out" | head -n 1
}
for kind in mutex read; do
    a=$(count "$kind" "$n1")
    b=$(count "$kind" "$n2")
    echo "$kind pair: $(( (b - a) / (n2 - n1) )) instructions (callgrind, $n1 and $n2 pairs)"
done
