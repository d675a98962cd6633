#!/bin/sh
# readers.sh [SCRIPTS_DIR...] - server time of the lock scripts against a
# name held by many readers (project issue 15).
#
# For each scripts directory (default: src/scripts beside this file; give
# two, e.g. an older version from `git show`, to compare them in the same
# run), on a private redis-server started here (loopback, free port, no
# persistence), and for 1, 100, 1000 and 5000 readers holding one name:
#   s-pair  one more reader's acquire + release, repeated: server time per
#           pair (INFO commandstats, cmdstat_evalsha usec_per_call x 2)
#   x-try   a writer's try against those readers (busy each time): server
#           time per acquire
# plus the uncontended cases (nobody holds the name): s-fast and x-fast,
# acquire + release pairs.  Calls go straight to the scripts with
# EVALSHA through redis-cli, so only the scripts are measured, not the
# client library.  The key layout is read from acquire.lua's header (a
# ":sd" key or not, and an eleventh key or not).  Prints one line per case and the ratios
# 5000-reader / 1-reader.  Takes about a minute per scripts directory.
#
# Variables: REDIS_SERVER, REDIS_CLI (default: on PATH); READERS_ITER
# (calls per case, default 2000); READERS_COUNTS (default "1 100 1000 5000").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- "$here/../src/scripts"
srv=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
iter=${READERS_ITER:-2000}
counts=${READERS_COUNTS:-"1 100 1000 5000"}
me=readers.sh
. "$here/private-server.sh"

# usec per evalsha call since the last CONFIG RESETSTAT
per_call() {
    r INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p'
}

run_dir() { # DIR LABEL
    dir=$1
    label=$2
    sa=$(r SCRIPT LOAD "$(cat "$dir/acquire.lua")")
    sr=$(r SCRIPT LOAD "$(cat "$dir/release.lua")")
    N='rdlock:{rd}'
    if grep -q 'KEYS\[11\]' "$dir/acquire.lua"; then
        keys="11 $N $N:w $N:wq $N:r $N:tokens $N:x $N:sd $N:rel $N:g:bench:1 $N:f:bench:1 $N:fence"
    elif grep -q ':sd' "$dir/acquire.lua"; then
        keys="8 $N $N:w $N:wq $N:r $N:fence $N:x $N:sd $N:rel"
    else
        keys="7 $N $N:w $N:wq $N:r $N:fence $N:x $N:rel"
    fi
    fill() { # COUNT: that many readers with a 10-minute lease
        i=0
        while [ "$i" -lt "$1" ]; do
            echo "EVALSHA $sa $keys fill$i:1 s000600000;1000;0;1;1;1;1;host"
            i=$((i + 1))
        done >"$tmp/fill"
        r <"$tmp/fill" >/dev/null
    }
    pairs() { # MODE: acquire + release pairs of one more owner
        i=1
        while [ "$i" -le "$iter" ]; do
            echo "EVALSHA $sa $keys bench:1 ${1}00060000;1000;0;1;1;1;$i;host"
            echo "EVALSHA $sr $keys bench:1 r$1 $i 5000"
            i=$((i + 1))
        done >"$tmp/pairs"
        r CONFIG RESETSTAT >/dev/null
        r <"$tmp/pairs" >/dev/null
        awk -v v="$(per_call)" 'BEGIN { printf "%.2f", v * 2 }'
    }
    tries() { # writer tries, busy each time
        i=1
        while [ "$i" -le "$iter" ]; do
            echo "EVALSHA $sa $keys writer:1 x00060000;1000;0;1;1;1;$i;host"
            i=$((i + 1))
        done >"$tmp/tries"
        r CONFIG RESETSTAT >/dev/null
        r <"$tmp/tries" >/dev/null
        per_call
    }
    # (A fresh name each: the same owner's call numbers start again at 1,
    # and the release proof left by the other mode's pairs would make every
    # acquire a void one.)
    r FLUSHALL >/dev/null
    printf '%-10s %-8s %6s %10s\n' "$label" s-fast 0 "$(pairs s)"
    r FLUSHALL >/dev/null
    printf '%-10s %-8s %6s %10s\n' "$label" x-fast 0 "$(pairs x)"
    for n in $counts; do
        r FLUSHALL >/dev/null
        fill "$n"
        held=$(r HLEN "$N")
        [ "$held" -eq $((n + 1)) ] || die "$n readers wanted, hash has $held fields"
        s=$(pairs s)
        x=$(tries)
        printf '%-10s %-8s %6s %10s\n' "$label" s-pair "$n" "$s"
        printf '%-10s %-8s %6s %10s\n' "$label" x-try "$n" "$x"
        eval "s_$n=$s x_$n=$x"
    done
    first=${counts%% *}
    last=${counts##* }
    eval "s1=\$s_$first s2=\$s_$last x1=\$x_$first x2=\$x_$last"
    printf '%-10s ratio %s/%s readers: s-pair %s, x-try %s\n' "$label" "$last" "$first" \
        "$(awk -v a="$s2" -v b="$s1" 'BEGIN { printf "%.2f", a / b }')" \
        "$(awk -v a="$x2" -v b="$x1" 'BEGIN { printf "%.2f", a / b }')"
}

printf '%-10s %-8s %6s %10s\n' scripts case readers 'usec/call'
nset=0
for d in "$@"; do
    nset=$((nset + 1))
    run_dir "$d" "set$nset"
done
