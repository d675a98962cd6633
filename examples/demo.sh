#!/bin/sh
# demo.sh DEMO_BINARY: run the demo against a private redis-server on a
# unix socket in a temp dir (no TCP port, no persistence), stopped by PID.
set -eu
demo=${1:?usage: demo.sh DEMO_BINARY}
server=${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}
dir=$(mktemp -d "${TMPDIR:-/tmp}/rdlock-demo.XXXXXX")
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
"$server" --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
until redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then echo "redis-server did not start:" >&2; cat "$dir/redis.log" >&2; exit 1; fi
    sleep 0.05
done
printf '[redis]\nsocket = %s\n' "$dir/redis.sock" > "$dir/rdlock.ini"
"$demo" "$dir/rdlock.ini"
