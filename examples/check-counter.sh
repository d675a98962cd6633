#!/bin/sh
# check-counter.sh: run the porting example both ways and check that no
# update was lost: the pthread version (threads) and the librdlock version
# (processes, against a private redis-server on a unix socket in a temp
# dir, stopped by PID).  Run by make check.
set -eu
bin=${top_builddir:-.}/examples
server=${REDIS_SERVER:-$(command -v redis-server || echo /usr/bin/redis-server)}
dir=$(mktemp -d "${TMPDIR:-/tmp}/rdlock-counter.XXXXXX")
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
"$server" --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
until redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 200 ]; then echo "redis-server did not start" >&2; cat "$dir/redis.log" >&2; exit 1; fi
    sleep 0.05
done
printf '[redis]\nsocket = %s\n' "$dir/redis.sock" > "$dir/rdlock.ini"

failed=0
got=$("$bin/counter_pthread" "$dir/pthread.count" 4 50)
if [ "$got" = 200 ]; then echo "ok 1 - pthread version: 4 threads x 50 = $got"
else echo "not ok 1 - pthread version counted $got, want 200"; failed=1; fi
got=$(RDLOCK_CONF="$dir/rdlock.ini" timeout 120 "$bin/counter_rdlock" "$dir/rdlock.count" 4 50)
if [ "$got" = 200 ]; then echo "ok 2 - librdlock version: 4 processes x 50 = $got"
else echo "not ok 2 - librdlock version counted $got, want 200"; failed=1; fi
echo "$((2 - failed)) passed, $failed failed"
exit $failed
