#!/bin/sh
# calls.sh [SCRIPTS_DIR...] - what the lock scripts' fast paths cost the
# server, call by call (project issue 15).
#
# On a private redis-server started here (loopback, free port, no
# persistence), for each scripts directory (default: src/scripts beside
# this file; give two, e.g. an older version from `git show`, to compare
# them in the same run):
#   pairs   N uncontended pairs sent straight to the scripts with EVALSHA
#           through redis-cli: x (exclusive lock + unlock), s (read share +
#           unlock), w (exclusive lock + one watchdog renewal + unlock).
#           For each: EVALSHA calls, redis.call()s made inside them, and
#           the server time per pair (INFO commandstats: cmdstat_evalsha
#           usec / N), then the redis.call()s by command.
# and once, independent of the scripts:
#   costs   the server time of each kind of redis.call() the fast paths
#           make, from a Lua loop of N calls (EVAL usec / N, less an empty
#           loop's; the least of 3 runs, the machine being shared): the
#           call as the script makes it, arguments included;
#           and the fixed cost of an EVALSHA with the lock's 11 keys and 2
#           arguments,
#           and of a table reply.
# Only the scripts are measured, not the client library; see
# bench/README.md for what the figures say.  Needs redis-server, redis-cli
# and awk.  Variables: REDIS_SERVER, REDIS_CLI (default: on PATH);
# CALLS_ITER (pairs and loop length, default 20000).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- "$here/../src/scripts"
srv=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
iter=${CALLS_ITER:-20000}
me=calls.sh
. "$here/private-server.sh"

N='rdlock:{calls}'
# KEYS[5] the counter (a slot's shared one in the library: any key of the
# slot will do here), KEYS[9] the grant list, KEYS[10] the finished-call
# mark, KEYS[11] a name's counter of earlier versions (acquire.lua);
# scripts that take fewer ignore the rest.
keys="11 $N $N:w $N:wq $N:r $N:tokens $N:x $N:sd $N:rel $N:g:bench:1 $N:f:bench:1 $N:fence"

pairs() { # DIR LABEL KIND
    sa=$(r SCRIPT LOAD "$(cat "$1/acquire.lua")")
    sr=$(r SCRIPT LOAD "$(cat "$1/release.lua")")
    sw=$(r SCRIPT LOAD "$(cat "$1/renew.lua")")
    r FLUSHALL >/dev/null
    awk -v n="$iter" -v a="$sa" -v l="$sr" -v w="$sw" -v k="$keys" -v name="$N" -v kind="$3" 'BEGIN {
        m = kind == "s" ? "s" : "x"; op = kind == "s" ? "rs" : "rx"
        for (i = 1; i <= n; i++) {
            print "EVALSHA " a " " k " bench:1 " m "00030000;0;0;1;1;1;" i ";host"
            if (kind == "w") print "EVALSHA " w " 1 " name " bench:1 30000 1 " i
            print "EVALSHA " l " " k " bench:1 " op " " i " 5000"
        } }' >"$tmp/pairs"
    r CONFIG RESETSTAT >/dev/null
    r --pipe <"$tmp/pairs" >/dev/null 2>&1
    r INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$iter" -v label="$2" -v kind="$3" '
        /^cmdstat_evalsha:/ { ev = $3; us = $5; next }
        /^cmdstat_(config|info|echo)/ { next }
        /^cmdstat_/ { c = substr($1, 9); inner += $3; by = by sprintf(" %s %.0f", toupper(c), $3 / n) }
        END { printf "%-8s %-4s %8.1f %12.1f %12.2f  %s\n", label, kind, ev / n, inner / n, us / n, by }'
    [ "$(r GET "$N:tokens")" = "$iter" ] || die "$2 $3: not every acquire was granted"
}

cost() { # LABEL LUA (one iteration's body): the least of 3 runs
    for _ in 1 2 3; do cost1 "$@"; done | awk '{ v = $NF; $NF = ""; if (NR == 1 || v < m) m = v; l = $0 } END { printf "%s%.4f\n", l, m }'
}

cost1() {
    r FLUSHALL >/dev/null
    r SET "$N:tokens" 5 >/dev/null
    r SET "$N:rel" 'bench:1;5' >/dev/null
    r SET "$N:x" 'bench:1' >/dev/null
    r HSET "$N" m x bench:1 '1795586714124;1;1;1;1;5;host' >/dev/null
    r PEXPIRE "$N" 600000 >/dev/null
    r CONFIG RESETSTAT >/dev/null
    r EVAL "local now = 1795586714124 for i = 1, $iter do $2 end return 1" 8 \
        "$N" "$N:w" "$N:wq" "$N:r" "$N:tokens" "$N:x" "$N:sd" "$N:rel" >/dev/null
    r INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$iter" -v label="$1" '
        /^cmdstat_eval:/ { printf "%s %.4f\n", label, $5 / n }'
}

evalsha() { # LABEL BODY ARGS...: usec per EVALSHA of BODY with ARGS
    label=$1
    s=$(r SCRIPT LOAD "$2")
    shift 2
    awk -v n="$iter" -v s="$s" -v a="$*" 'BEGIN { for (i = 0; i < n; i++) print "EVALSHA " s " " a }' >"$tmp/noop"
    r CONFIG RESETSTAT >/dev/null
    r --pipe <"$tmp/noop" >/dev/null 2>&1
    r INFO commandstats | tr -d '\r' | awk -F'[:=,]' -v label="$label" '
        /^cmdstat_evalsha:/ { printf "%-44s %6.2f\n", label, $7 }'
}

echo "pairs: $iter each; per pair: EVALSHA calls, redis.call()s inside them, server usec (EVALSHA), calls by command"
printf '%-8s %-4s %8s %12s %12s\n' scripts kind EVALSHA redis.call usec/pair
nset=0
for d in "$@"; do
    nset=$((nset + 1))
    for kind in x s w; do
        pairs "$d" "set$nset" "$kind"
    done
done

echo
echo "costs: usec of one redis.call() as the fast paths make it (Lua loop of $iter, less the empty loop; least of 3)"
{
    cost empty ""
    cost "TIME (and the ms arithmetic)" "local t = redis.call('TIME') local n = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)"
    cost "GET :rel" "redis.call('GET', KEYS[8])"
    cost "EXISTS 4 keys (absent)" "redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4], KEYS[7])"
    cost "INCR :tokens" "redis.call('INCR', KEYS[5])"
    cost "SET :x owner" "redis.call('SET', KEYS[6], 'bench:1')"
    cost "HSET m + holder (string.format)" "redis.call('HSET', KEYS[1], 'm', 'x', 'bench:1', string.format('%d;%d;%s', now + 30000, 7, '1;1;1;5;host'))"
    cost "HSET m + holder (Lua's .. on numbers)" "redis.call('HSET', KEYS[1], 'm', 'x', 'bench:1', (now + 30000) .. ';' .. 7 .. ';1;1;1;5;host')"
    cost "PEXPIREAT (string)" "redis.call('PEXPIREAT', KEYS[1], '1795587014124')"
    cost "PEXPIRE (number)" "redis.call('PEXPIRE', KEYS[1], 600000)"
    cost "HMGET owner m" "redis.call('HMGET', KEYS[1], 'bench:1', 'm')"
    cost "HGET owner" "redis.call('HGET', KEYS[1], 'bench:1')"
    cost "SET :rel PX" "redis.call('SET', KEYS[8], 'bench:1;5', 'PX', '5000')"
    cost "HSET m + DEL 3 keys (less 'HSET m alone': DEL)" "redis.call('HSET', KEYS[1], 'm', 'x') redis.call('DEL', KEYS[1], KEYS[6], KEYS[7])"
    cost "HSET m alone" "redis.call('HSET', KEYS[1], 'm', 'x')"
    cost "EXISTS 2 keys (absent)" "redis.call('EXISTS', KEYS[2], KEYS[4])"
    cost "HLEN" "redis.call('HLEN', KEYS[1])"
    cost "PTTL" "redis.call('PTTL', KEYS[1])"
    cost "HSET holder" "redis.call('HSET', KEYS[1], 'bench:1', '1795587014124;1;1;1;1;5;host')"
} | awk '
    NR == 1 { base = $NF; next }
    { v = $NF; $NF = ""; printf "  %-44s %6.2f\n", $0, v - base }'

echo
echo "fixed: usec per EVALSHA"
evalsha "return 1, no arguments" "return 1" 0
evalsha "return 1, the lock's 11 keys + 2 arguments" "return 1" $keys bench:1 x00030000\;0\;0\;1\;1\;1\;5\;host
evalsha "return {1, 7, 0, '', now}, same arguments" "return {1, 7, 0, '', 1795586714124}" $keys bench:1 x00030000\;0\;0\;1\;1\;1\;5\;host
evalsha "return '7;now', same arguments" "return '7;1795586714124'" $keys bench:1 x00030000\;0\;0\;1\;1\;1\;5\;host
