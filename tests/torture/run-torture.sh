#!/bin/sh
# run-torture.sh - run every fault-injection scenario of tests/torture/torture.
#
#   tests/torture/run-torture.sh [--long] [--seconds S] [--table FILE] [TORTURE_BINARY]
#
# Short form (make check): 8 s per scenario (redlock-prims: 24 s for its
# three workloads), 4 processes x 4 threads (slow: 2 x 2; barrier: 4 x 1),
# about 145 s in all.  Long form: 60 s per scenario (redlock-prims: 90 s);
# with --table FILE it writes the markdown table for docs/RELIABILITY.md.
# Prints one line per scenario and the closing line "N passed, M failed";
# exits 1 on any violation, 0 otherwise.
#
# Environment: TORTURE_SKIP="pause slow" skips scenarios (each is then
# reported as SKIP, not as passed); TORTURE_ARGS adds arguments to every run
# (e.g. "--procs 8 --threads 8"); REDIS_SERVER as for the other tests.
set -u

mode=--short
seconds=
table=
bin=
while [ $# -gt 0 ]; do
    case $1 in
    --long) mode=--long ;;
    --short) mode=--short ;;
    --seconds) seconds=$2; shift ;;
    --table) table=$2; shift ;;
    -*) echo "usage: $0 [--long] [--seconds S] [--table FILE] [BINARY]" >&2; exit 64 ;;
    *) bin=$1 ;;
    esac
    shift
done
if [ -z "$bin" ]; then
    for b in "${top_builddir:-.}/tests/torture/torture" "$(dirname "$0")/torture"; do
        if [ -x "$b" ]; then bin=$b; break; fi
    done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "run-torture.sh: tests/torture/torture not built" >&2
    exit 99
fi

scenarios="baseline kill restart restart-aof pause slow cuts stall cluster redlock cond barrier redlock-prims tls"
passed=0
failed=0
skipped=0
results=$(mktemp "${TMPDIR:-/tmp}/torture-results.XXXXXX") || exit 99
trap 'rm -f "$results" "$results.out"' EXIT
child=
# torture runs in its own process group (its time bound kills the group):
# take it down with us.
trap '[ -n "$child" ] && { kill -KILL -"$child" 2>/dev/null || kill -s KILL -- -"$child" 2>/dev/null; kill -KILL "$child" 2>/dev/null; }; exit 130' INT TERM

for s in $scenarios; do
    case " ${TORTURE_SKIP:-} " in
    *" $s "*) echo "SKIP  $s (TORTURE_SKIP)"; skipped=$((skipped + 1)); continue ;;
    esac
    # shellcheck disable=SC2086
    "$bin" --scenario "$s" $mode ${seconds:+--seconds "$seconds"} ${TORTURE_ARGS:-} >"$results.out" 2>&1 &
    child=$!
    wait "$child"
    rc=$?
    child=
    line=$(grep '^RESULT|' "$results.out" | tail -n 1)
    if [ $rc -eq 77 ]; then
        # Scenario tls on a library built without TLS (hiredis < 1.0):
        # nothing to run it against; Debian 13's run covers it.
        echo "SKIP  $s: $(grep '^torture:' "$results.out" | head -n 1)"
        skipped=$((skipped + 1))
        continue
    elif [ $rc -eq 0 ]; then
        echo "PASS  $s: $(echo "$line" | cut -d'|' -f3-10)"
        passed=$((passed + 1))
    else
        echo "FAIL  $s (exit $rc): $(echo "$line" | cut -d'|' -f3-10)"
        grep -E '^(VIOLATION|torture:)' "$results.out" | head -n 8 | sed 's/^/      /'
        keep="${TMPDIR:-/tmp}/torture-$s-failed.$$.log"
        cp "$results.out" "$keep" && echo "      full output: $keep"
        failed=$((failed + 1))
    fi
    [ -n "$line" ] && echo "$line" >>"$results"
    if [ -n "${TORTURE_VERBOSE:-}" ]; then sed 's/^/      /' "$results.out"; fi
done
echo "INFO  bad input: the config loader and server replies are fuzzed by tests/fuzz (./run.sh test runs them; ./run.sh fuzz for longer)"

if [ -n "$table" ]; then
    {
        echo "| scenario | load (processes x threads, duration) | faults injected | sections completed | overlaps found (silent) | holds lost and reported (ENOLCK / lost callbacks) | crashes or hangs | verdict |"
        echo "|---|---|---|---|---|---|---|---|"
        while IFS='|' read -r _ sc load dur faults secs ov lost crashes verdict; do
            echo "| $sc | $load, $dur | $faults | $secs | $ov | $lost | $crashes | $verdict |"
        done <"$results"
    } >"$table"
    echo "table written to $table"
fi

if [ $skipped -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ $failed -eq 0 ]
