# private-server.sh - sourced by the server-side bench scripts (calls.sh,
# readers.sh, floor.sh): start a private redis-server for them, and stop
# it by PID whatever way they end.
#
# In:  $srv, $cli (the server and redis-cli to run), $me (the caller's
#      name, for messages).
# Out: $tmp (a temp dir, removed at the end), $pid and $port (the server),
#      r (redis-cli to it), die MESSAGE (print, exit 1).
# The server listens on 127.0.0.1 only, on a port from 20000-40009 that
# nothing answered on, without persistence.  Its INFO must name our own
# process (process_id), so that the callers' FLUSHALLs never reach
# someone else's server that took the port first.  A signal ends the
# caller through exit, so that the EXIT trap stops the server: a shell
# that dies of SIGPIPE or SIGHUP runs no EXIT trap, and one that traps
# INT with the cleanup alone carries on after it.
die() { echo "$me: $*" >&2; exit 1; }
tmp=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || :
        wait "$pid" 2>/dev/null || :
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 141' PIPE
trap 'exit 143' TERM

port=$(( 20000 + ($$ + 7919) % 20000 ))
for _ in 1 2 3 4 5 6 7 8 9 10; do
    if ! "$cli" -p "$port" PING >/dev/null 2>&1; then
        "$srv" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
            --dir "$tmp" >"$tmp/redis.log" 2>&1 &
        pid=$!
        for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            "$cli" -p "$port" PING >/dev/null 2>&1 && break
            kill -s 0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        [ "$("$cli" -p "$port" INFO server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$pid" ] && break
        kill "$pid" 2>/dev/null || :
        wait "$pid" 2>/dev/null || :
        pid=
    fi
    port=$(( port + 1 ))
done
[ -n "$pid" ] || die "could not start $srv (log: $(tail -n 3 "$tmp/redis.log" 2>/dev/null))"
r() { "$cli" -p "$port" "$@"; }
