#!/bin/sh
# valgrind.sh - run one test program under valgrind memcheck (./run.sh test).
#
#   tests/valgrind.sh PROGRAM [ARG...]
#
# Used as automake's LOG_COMPILER, in a build configured with
# --disable-shared (PROGRAM must be the real executable, not a libtool
# wrapper script):
#   make check TESTS='tests/test_api ...' LOG_COMPILER=$srcdir/tests/valgrind.sh
#
# Exits with PROGRAM's status, or 99 if memcheck found
#   - a memory error (invalid read/write/free, use of uninitialised
#     values, bad syscall arguments...) in PROGRAM or in any process it
#     forked: valgrind follows fork, and the suites fork children that run
#     library code;
#   - a definitely or indirectly lost block in PROGRAM itself.
# Leaks are not checked in forked children: a child has only the thread
# that forked, so whatever the parent's other threads held at the fork (a
# hold being acquired, the watchdog's state) has no pointer left to it and
# shows as "definitely lost" although no code leaked it (test_client's
# fork_while_waiting); and test children _exit() without cleaning up on
# purpose (test_regress's head_not_starved_after_expiry abandons its hold
# and its connection, test_api's default_client_conf replaces the
# parent's connection).  The children's reports still list those blocks,
# for reading.  "Still reachable" and "possibly lost" blocks are not
# errors anywhere.
# Children that exec (the fixture's redis-server) are not traced
# (--trace-children=no, the default).
#
# Each process logs to its own file, so that no child's report is lost or
# interleaved; every report with errors is printed (to stderr, so into the
# test's .log under make check).
#
# Suppressions: tests/valgrind.supp (third-party internals only, never
# librdlock's or the tests' code).  $VALGRIND overrides the valgrind
# command, $VALGRIND_OPTS (read by valgrind itself) adds options, and
# $RDT_TIMEOUT (default here 600 s) bounds each suite's run instead of its
# own alarm, which is sized for native speed (testutil.h: rdt_main).
set -u

[ "$#" -ge 1 ] || { echo "usage: $0 PROGRAM [ARG...]" >&2; exit 64; }
here=$(cd "$(dirname "$0")" && pwd)
logdir=$(mktemp -d "${TMPDIR:-/tmp}/rdlock-vg.XXXXXX") || exit 99
trap 'rm -rf "$logdir"' EXIT
trap 'exit 130' INT TERM HUP

RDT_TIMEOUT=${RDT_TIMEOUT:-600}
export RDT_TIMEOUT

# Leaks are reported (--show-leak-kinds) but are not valgrind "errors"
# (--errors-for-leak-kinds=none): otherwise --error-exitcode would change a
# forked child's exit status for its inherited blocks, and the tests that
# check their children's status would fail.
${VALGRIND:-valgrind} --tool=memcheck --leak-check=full \
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=none \
    --error-exitcode=99 --track-fds=no --trace-children=no --num-callers=30 \
    --suppressions="$here/valgrind.supp" --log-file="$logdir/vg.%p.log" "$@"
rc=$?

# has_errors LOG IS_MAIN: whether that process's report has errors.
has_errors() {
    # memory errors; leaks are not counted here (see above)
    grep -q 'ERROR SUMMARY: [1-9]' "$1" && return 0
    if [ "$2" = yes ]; then
        grep -Eq '(definitely|indirectly) lost: [1-9]' "$1" && return 0
        grep -q 'ERROR SUMMARY:' "$1" || return 0 # it must not end without its summary
    fi
    # A child the test SIGKILLed (robust and crash tests do that) ends
    # without a summary: then any stack trace it printed was an error.
    grep -q 'ERROR SUMMARY:' "$1" && return 1
    grep -Eq '^==[0-9]+== +(at|by) 0x' "$1"
}

bad=0 n=0 main=""
for f in "$logdir"/vg.*.log; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    is_main=no
    if grep -q "^==[0-9]*== Parent PID: $$\$" "$f"; then
        is_main=yes main=$f
    fi
    if has_errors "$f" "$is_main"; then
        bad=1
        pid=${f##*/vg.}
        echo "--- valgrind: errors in process ${pid%.log}$([ $is_main = yes ] && echo ' (the test program)') of: $*" >&2
        cat "$f" >&2
    fi
done
if [ -z "$main" ]; then
    echo "--- valgrind: no report from the test program itself ($*)" >&2
    bad=1
fi
if [ "$bad" -ne 0 ]; then
    echo "valgrind: FAILED: $* (exit status $rc)" >&2
    exit 99
fi
echo "valgrind: no memory errors in $n process(es), no leaks in the test program: $*"
exit "$rc"
