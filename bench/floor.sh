#!/bin/sh
# floor.sh [SCRIPTS_DIR] - how low could the server time of an uncontended
# lock+unlock pair go, next to redis-py's Lock (issue 26)?
#
# Step 11 of the bench (bench/README.md) puts the library's pair next to
# redis-py's Lock, which makes 2 commands and 2 redis.call()s.  The
# library's scripts pay for guarantees that Lock does not give: deadlines
# on the server's clock (TIME), a fencing token from a counter shared by
# the slot, a release proof that voids a late copy of a released call's
# acquire, and robust state (a marker that tells the next acquirer that a
# hold ended without unlock).  Any script design that keeps them makes
# their bare calls; this measures the barest such designs, as the lower
# bound the library's scripts can be held against, on a private
# redis-server started here (loopback, free port, no persistence), in the
# same server and interleaved repetitions as the peer:
#   peer    redis-py's Lock: SET <key> <token> NX PX 30000 (a new 32-hex-
#           digit token per pair), then EVALSHA of its release script
#           (Lock.LUA_RELEASE_SCRIPT: the same statements, on one line)
#   lib     SCRIPTS_DIR's acquire.lua and release.lua (default: src/scripts
#           beside this file), sent as calls.sh's pairs() sends its 'x'
#           kind: the same 11 keys and arguments
#   floor7  acquire: TIME, attempt-deadline check, MGET of the hold, the
#           robust marker, the call's release proof and the name's old
#           counter, INCR of the shared counter, SET hold PXAT deadline,
#           SET marker owner; release: GET hold, compare, DEL hold marker,
#           SET proof <owner>;<call> PX 10000 (7 redis.call()s beside TIME)
#   floor6  floor7 without the robust marker (6)
#   lean5   acquire: TIME, deadline check, GET hold (a value starting with
#           'r' is a release proof and counts as free), INCR, SET hold PXAT
#           deadline; release: GET hold, compare, SET hold 'r;'..value PX
#           5000 (5)
# Each design is an acquire script and a release script, two EVALSHA per
# pair; all keys of a workload share one hash tag, the shared counter
# included.  A workload is N pairs on one hot name (acquire, then release
# of the same keys), pipelined with redis-cli --pipe.  Every measurement
# starts from FLUSHALL and sends one pair first, whose replies must be the
# success path's (OK / the holder value / the library's "<token>;<now>",
# then 1) and whose commandstats are the measurement's template; then
# CONFIG RESETSTAT, the N pairs, INFO commandstats: every command's calls
# must be N times the checked pair's, no failed_calls or rejected_calls,
# no error reply, and the counter must have given N + 1 tokens; else exit
# 1.  Server time per pair: the usec of the commands sent (the peer's SET
# and EVALSHA, the others' EVALSHA; a redis.call() is inside its script's
# usec) / N.  REPS repetitions, each measuring the five workloads in a
# rotating order; each ratio is to the peer of the same repetition.
# Prints a line per repetition, then per workload: commands sent and
# redis.call()s per pair, the median server usec per pair, the median
# ratio to the peer and the range of the repetitions' ratios.
# Needs redis-server (6.2 or later: PXAT), redis-cli and awk.  Variables:
# REDIS_SERVER, REDIS_CLI (default: on PATH); FLOOR_ITER (pairs per
# measurement, default 20000); FLOOR_REPS (repetitions, default 5);
# FLOOR_SCRIPTS (the library's scripts when no SCRIPTS_DIR is given).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-${FLOOR_SCRIPTS:-$here/../src/scripts}}
srv=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
iter=${FLOOR_ITER:-20000}
reps=${FLOOR_REPS:-5}
me=floor.sh
die() { echo "$me: $*" >&2; exit 1; }
case $iter in '' | *[!0-9]* | 0*) die "FLOOR_ITER must be a positive integer" ;; esac
case $reps in '' | *[!0-9]* | 0*) die "FLOOR_REPS must be a positive integer" ;; esac
for f in acquire.lua release.lua; do
    [ -r "$dir/$f" ] || die "no $dir/$f"
done
. "$here/private-server.sh"

load() { # FILE: SCRIPT LOAD the file, its SHA1 on stdout (a subshell: die ends
    # it, and set -e the script)
    s=$(r SCRIPT LOAD "$(cat "$1")")
    case $s in
    *[!0-9a-f]*) die "SCRIPT LOAD $1: $s" ;;
    esac
    [ ${#s} -eq 40 ] || die "SCRIPT LOAD $1: $s"
    echo "$s"
}

# ---- the scripts ---------------------------------------------------------
# redis-py's release script (redis/lock.py): the same statements, on one line.
cat >"$tmp/peer_rel.lua" <<'EOF'
local token = redis.call('get', KEYS[1]) if not token or token ~= ARGV[1] then return 0 end redis.call('del', KEYS[1]) return 1
EOF

# The designs: the bare calls, and only as much Lua as deciding needs.
# The holder value starts with the owner, so that the release, sent the
# owner, can check it by prefix and be pipelined without the acquire's
# reply (it tells holds apart by owner only, as if the call were part of
# the owner id; an owner must not start with 'r', lean5's proof mark).
# The release proof of floor7 and floor6 is one stable key per name,
# "<owner>;<call>", overwritten by each release (a key made per call costs
# the server about 2 us more than one overwritten); lean5's is the hold
# key itself, 'r;' and the released value.
# Acquire: KEYS floor7: 1 hold, 2 robust marker, 3 release proof, 4 the
# name's old counter, 5 the shared token counter; floor6: 1 hold, 2 proof,
# 3 old counter, 4 counter; lean5: 1 hold, 2 counter.  ARGV: 1 owner,
# 2 lease ms, 3 the attempt's deadline (server ms), 4 the call (floor7,
# floor6).  Returns the holder value, 0 busy, -1 too late, -2 a released
# call.  Release: KEYS floor7: hold, marker, proof; floor6: hold, proof;
# lean5: hold.  ARGV: 1 owner, 2 the call (floor7, floor6).  Returns 1
# released, 0 not held.
cat >"$tmp/f7_acq.lua" <<'EOF'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[3]) then return -1 end
local st = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if st[1] or st[2] then return 0 end
if st[3] == ARGV[1] .. ';' .. ARGV[4] then return -2 end
local tok = redis.call('INCR', KEYS[5])
local deadline = now + tonumber(ARGV[2])
local val = ARGV[1] .. ';' .. string.format('%d', deadline) .. ';' .. string.format('%d', tok) .. ';1;4242;1;7;myhost'
redis.call('SET', KEYS[1], val, 'PXAT', deadline)
redis.call('SET', KEYS[2], ARGV[1])
return val
EOF
cat >"$tmp/f7_rel.lua" <<'EOF'
local cur = redis.call('GET', KEYS[1])
if not cur or string.sub(cur, 1, #ARGV[1] + 1) ~= ARGV[1] .. ';' then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], ARGV[1] .. ';' .. ARGV[2], 'PX', 10000)
return 1
EOF
cat >"$tmp/f6_acq.lua" <<'EOF'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[3]) then return -1 end
local st = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])
if st[1] then return 0 end
if st[2] == ARGV[1] .. ';' .. ARGV[4] then return -2 end
local tok = redis.call('INCR', KEYS[4])
local deadline = now + tonumber(ARGV[2])
local val = ARGV[1] .. ';' .. string.format('%d', deadline) .. ';' .. string.format('%d', tok) .. ';1;4242;1;7;myhost'
redis.call('SET', KEYS[1], val, 'PXAT', deadline)
return val
EOF
cat >"$tmp/f6_rel.lua" <<'EOF'
local cur = redis.call('GET', KEYS[1])
if not cur or string.sub(cur, 1, #ARGV[1] + 1) ~= ARGV[1] .. ';' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1] .. ';' .. ARGV[2], 'PX', 10000)
return 1
EOF
cat >"$tmp/l5_acq.lua" <<'EOF'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now > tonumber(ARGV[3]) then return -1 end
local h = redis.call('GET', KEYS[1])
if h and string.sub(h, 1, 1) ~= 'r' then return 0 end
local tok = redis.call('INCR', KEYS[2])
local deadline = now + tonumber(ARGV[2])
local val = ARGV[1] .. ';' .. string.format('%d', deadline) .. ';' .. string.format('%d', tok) .. ';1;4242;1;7;myhost'
redis.call('SET', KEYS[1], val, 'PXAT', deadline)
return val
EOF
cat >"$tmp/l5_rel.lua" <<'EOF'
local cur = redis.call('GET', KEYS[1])
if not cur or string.sub(cur, 1, #ARGV[1] + 1) ~= ARGV[1] .. ';' then return 0 end
redis.call('SET', KEYS[1], 'r;' .. cur, 'PX', 5000)
return 1
EOF

peer_r=$(load "$tmp/peer_rel.lua")
lib_a=$(load "$dir/acquire.lua")
lib_r=$(load "$dir/release.lua")
f7_a=$(load "$tmp/f7_acq.lua")
f7_r=$(load "$tmp/f7_rel.lua")
f6_a=$(load "$tmp/f6_acq.lua")
f6_r=$(load "$tmp/f6_rel.lua")
l5_a=$(load "$tmp/l5_acq.lua")
l5_r=$(load "$tmp/l5_rel.lua")

# ---- the workloads -------------------------------------------------------
# Names: one hash tag per workload.  The library's are calls.sh's.  The
# attempt deadline is far ahead (the check is made, never met).  Call 0 is the checked pair, 1..N the timed ones.
owner=bench:1
far=4102444800000
PK='rdlock:{peer}'
LN='rdlock:{calls}'
lkeys="11 $LN $LN:w $LN:wq $LN:r $LN:tokens $LN:x $LN:sd $LN:rel $LN:g:$owner $LN:f:$owner $LN:fence"
F7='rdlock:{floor7}'
F6='rdlock:{floor6}'
L5='rdlock:{lean5}'

pairs() { # WORKLOAD FIRST LAST: the pairs' commands, one a line
    awk -v w="$1" -v i0="$2" -v i1="$3" -v o="$owner" -v far="$far" \
        -v pk="$PK" -v pr="$peer_r" \
        -v lk="$lkeys" -v la="$lib_a" -v lr="$lib_r" \
        -v f7="$F7" -v f7a="$f7_a" -v f7r="$f7_r" \
        -v f6="$F6" -v f6a="$f6_a" -v f6r="$f6_r" \
        -v l5="$L5" -v l5a="$l5_a" -v l5r="$l5_r" 'BEGIN {
        for (i = i0; i <= i1; i++) {
            if (w == "peer") {
                t = sprintf("5f0c3a9e1d7b11ef8a2c%012x", i)
                print "SET " pk " " t " NX PX 30000"
                print "EVALSHA " pr " 1 " pk " " t
            } else if (w == "lib") {
                print "EVALSHA " la " " lk " " o " x00030000;0;0;1;1;1;" i ";host"
                print "EVALSHA " lr " " lk " " o " rx " i " 5000"
            } else if (w == "floor7") {
                print "EVALSHA " f7a " 5 " f7 " " f7 ":x " f7 ":rel " f7 ":fence " f7 ":tokens " o " 30000 " far " " i
                print "EVALSHA " f7r " 3 " f7 " " f7 ":x " f7 ":rel " o " " i
            } else if (w == "floor6") {
                print "EVALSHA " f6a " 4 " f6 " " f6 ":rel " f6 ":fence " f6 ":tokens " o " 30000 " far " " i
                print "EVALSHA " f6r " 2 " f6 " " f6 ":rel " o " " i
            } else {
                print "EVALSHA " l5a " 2 " l5 " " l5 ":tokens " o " 30000 " far
                print "EVALSHA " l5r " 1 " l5 " " o
            }
        } }'
}

workloads="peer lib floor7 floor6 lean5"
for w in $workloads; do
    pairs "$w" 1 "$iter" >"$tmp/$w.pipe"
done

counter() { # WORKLOAD: its token counter key (none for the peer)
    case $1 in
    lib) echo "$LN:tokens" ;;
    floor7) echo "$F7:tokens" ;;
    floor6) echo "$F6:tokens" ;;
    lean5) echo "$L5:tokens" ;;
    esac
}

check() { # WORKLOAD: one pair (call 0), each reply checked
    # The pair's two commands, word by word (no argument has a space).
    pairs "$1" 0 0 >"$tmp/check"
    { read -r acq; read -r rel; } <"$tmp/check"
    # shellcheck disable=SC2086
    a=$(r $acq)
    # shellcheck disable=SC2086
    b=$(r $rel)
    case $1 in
    peer) want='OK' ;;
    lib) want='1;[0-9][0-9]*' ;; # "<token>;<now>", the fast path, token 1
    *) want="$owner;[0-9][0-9]*;1;1;4242;1;7;myhost" ;; # token 1
    esac
    printf '%s\n' "$a" | grep -qx "$want" || die "$1: the acquire replied '$a', not the success path ($want)"
    [ "$b" = 1 ] || die "$1: the release replied '$b', not 1"
}

stats() { # FILE: "command calls usec failed" per commandstats entry, less ours
    tr -d '\r' <"$1" | awk -F'[:,]' '
        /^cmdstat_(config|info|echo)[:|]/ { next }
        /^cmdstat_/ {
            c = substr($1, 9); calls = usec = bad = 0
            for (f = 2; f <= NF; f++) {
                split($f, kv, "=")
                if (kv[1] == "calls") calls = kv[2]
                else if (kv[1] == "usec") usec = kv[2]
                else if (kv[1] == "failed_calls" || kv[1] == "rejected_calls") bad += kv[2]
            }
            print c, calls, usec, bad
        }'
}

measure() { # WORKLOAD REP: one measurement, appended to $tmp/results
    w=$1
    r FLUSHALL >/dev/null
    r CONFIG RESETSTAT >/dev/null
    check "$w"
    r INFO commandstats >"$tmp/info0"
    r CONFIG RESETSTAT >/dev/null
    r --pipe <"$tmp/$w.pipe" >"$tmp/pipe.out" 2>&1 || die "$w: redis-cli --pipe failed: $(cat "$tmp/pipe.out")"
    r INFO commandstats >"$tmp/info1"
    tr -d '\r' <"$tmp/pipe.out" | grep -q '^errors: 0, replies: ' ||
        die "$w: error replies in the timed run: $(tail -n 1 "$tmp/pipe.out")"
    k=$(counter "$w")
    if [ -n "$k" ]; then
        got=$(r GET "$k")
        [ "$got" = $((iter + 1)) ] || die "$w: $k is '$got', not $((iter + 1)): not every acquire was granted"
    fi
    stats "$tmp/info0" >"$tmp/tpl"
    stats "$tmp/info1" >"$tmp/run"
    case $w in peer) top=' set evalsha ' ;; *) top=' evalsha ' ;; esac
    awk -v n="$iter" -v w="$w" -v rep="$2" -v top="$top" '
        NR == FNR { tpl[$1] = $2; next }
        {
            run[$1] = $2
            if ($4 != 0) { printf "floor.sh: %s: %s failed_calls + rejected_calls = %s\n", w, $1, $4 | "cat >&2"; bad = 1 }
            if (index(top, " " $1 " ")) { sent += $2; us += $3 } else inner += $2
        }
        END {
            for (c in tpl) if (run[c] + 0 != n * tpl[c]) {
                printf "floor.sh: %s: %s calls %d, not %d x %d (as the checked pair)\n", w, c, run[c], n, tpl[c] | "cat >&2"; bad = 1
            }
            for (c in run) if (!(c in tpl)) {
                printf "floor.sh: %s: %s calls %d, the checked pair made none\n", w, c, run[c] | "cat >&2"; bad = 1
            }
            if (sent == 0) { printf "floor.sh: %s: no commands counted\n", w | "cat >&2"; bad = 1 }
            if (bad) exit 1
            printf "%d %s %.4g %.4g %.4f\n", rep, w, sent / n, inner / n, us / n
        }' "$tmp/tpl" "$tmp/run" >>"$tmp/results" || die "$w: the timed run did not make the calls of the checked pair"
}

ver=$(r INFO server | tr -d '\r' | awk -F: '
    $1 == "redis_version" { v = "redis " $2 } $1 == "valkey_version" { k = "valkey " $2 }
    END { print (k != "" ? k " (" v ")" : v) }')
echo "server: $ver on port $port; $iter pairs per workload, $reps repetitions, order rotating"
echo "scripts (lib): $dir"
: >"$tmp/results"
rep=1
while [ "$rep" -le "$reps" ]; do
    order=$(printf "%s\n" "$workloads" | awk -v r="$rep" '{ for (i = 0; i < NF; i++) printf "%s ", $((i + r - 1) % NF + 1) }')
    for w in $order; do
        measure "$w" "$rep"
    done
    awk -v rep="$rep" -v order="$order" '
        $1 == rep { us[$2] = $5 }
        END {
            printf "rep %d: usec per pair", rep
            n = split(order, o, " ")
            for (i = 1; i <= n; i++) printf "  %s %.2f", o[i], us[o[i]]
            printf "\n"
        }' "$tmp/results"
    rep=$((rep + 1))
done

echo
awk -v workloads="$workloads" '
    { us[$2, $1] = $5; sent[$2] = $3; inner[$2] = $4; if ($1 > reps) reps = $1 }
    END {
        printf "%-8s %9s %11s %12s %13s %13s\n", "workload", "sent/pair", "redis.call", "usec/pair", "ratio to peer", "reps min-max"
        nw = split(workloads, W, " ")
        for (i = 1; i <= nw; i++) {
            w = W[i]; lo = hi = ""
            for (r = 1; r <= reps; r++) {
                v[1, r] = us[w, r]
                q = us[w, r] / us["peer", r]; v[2, r] = q
                if (lo == "" || q < lo) lo = q
                if (hi == "" || q > hi) hi = q
            }
            for (m = 1; m <= 2; m++) { # the median of v[m, 1..reps]
                for (r = 2; r <= reps; r++) {
                    t = v[m, r]
                    for (j = r - 1; j >= 1 && v[m, j] > t; j--) v[m, j + 1] = v[m, j]
                    v[m, j + 1] = t
                }
                med[m] = reps % 2 ? v[m, (reps + 1) / 2] : (v[m, reps / 2] + v[m, reps / 2 + 1]) / 2
            }
            mu = med[1]; mq = med[2]
            printf "%-8s %9g %11g %12.2f %13.2f %13s\n", w, sent[w], inner[w], mu, mq, sprintf("%.2f-%.2f", lo, hi)
        }
    }' "$tmp/results"
