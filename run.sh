#!/bin/sh
# run.sh - the project's entry point on a fresh Debian machine.
#
#   ./run.sh demo    install what is missing, build, run the demo against a
#                    private redis-server
#   ./run.sh test    install what is missing, build with -Werror, then run
#                    make check, make distcheck, the suite under
#                    AddressSanitizer+UBSan, the threaded suites under
#                    ThreadSanitizer, the CUnit suites under valgrind
#                    memcheck, and a short fuzz run (what CI runs)
#   ./run.sh check   build and make check only (the quick loop)
#   ./run.sh bench   build and run the benchmark
#   ./run.sh fuzz    build and run the fuzz targets (config loader, server
#                    replies, cluster slots and redirections), FUZZ_SECONDS each (default 60)
#   ./run.sh torture build and run the long fault-injection scenarios
#                    (about 7 minutes; docs/RELIABILITY.md)
#
# Builds happen out of tree under build/ (build/asan, build/tsan,
# build/valgrind for the checked runs), so the source tree stays clean.
set -eu
cd "$(dirname "$0")"
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

say() { printf '\n=== %s\n' "$*"; }

# Debian packages this project builds, tests and fuzzes with.
PKGS="gcc make autoconf automake libtool pkg-config libhiredis-dev libiniparser-dev
      libcunit1-dev redis-server redis-tools clang libclang-rt-14-dev groff-base mandoc
      valgrind"

need_install() {
    for p in $PKGS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || { echo "$p"; }
    done
}

install_deps() {
    missing=$(need_install | tr '\n' ' ')
    [ -z "${missing% }" ] && return 0
    say "installing: $missing"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
        echo "run.sh: missing packages ($missing) and no root or sudo to install them" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
    # The package starts a system redis-server on 6379; we never use it.
}

configure_in() { # DIR [configure args...]
    dir=$1
    shift
    if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
        [ "$top/Makefile.am" -nt "$top/Makefile.in" ]; then
        say "autoreconf"
        (cd "$top" && autoreconf -fi >/dev/null 2>&1) || (cd "$top" && autoreconf -fi)
    fi
    mkdir -p "$dir"
    if [ ! -f "$dir/Makefile" ] || [ "$top/configure" -nt "$dir/Makefile" ] || [ "$#" -gt 0 ]; then
        say "configure in $dir $*"
        (cd "$dir" && "$top/configure" "$@" >configure.out 2>&1) || { cat "$dir/configure.out"; exit 1; }
    fi
}

build() {
    install_deps
    configure_in "$top/build" --enable-werror
    say "make"
    make -C "$top/build" -j"$jobs" >/dev/null
}

sanitizer_check() { # NAME CFLAGS TESTS...
    name=$1 flags=$2
    shift 2
    configure_in "$top/build/$name" --enable-werror --disable-shared CC="${TSAN_CC:-${CC:-gcc}}" \
        CFLAGS="-g -O1 -fno-omit-frame-pointer $flags" LDFLAGS="$flags"
    say "make check under $name"
    make -C "$top/build/$name" -j"$jobs" >/dev/null
    make -C "$top/build/$name" check TESTS="$*" || { cat "$top/build/$name"/tests/*.log; exit 1; }
}

# The CUnit suites under valgrind memcheck (tests/valgrind.sh): fails on any
# memory error in a test program or a child it forks, and on any definitely
# or indirectly lost block in a test program.  A static build, so that make
# check runs the programs themselves and not libtool wrapper scripts.
# One suite at a time (no -j): memcheck runs all of a process's threads on
# one core, and a second core free for redis-server and the forked children
# keeps the suites' lease timings further from their limits.
valgrind_check() { # TESTS...
    configure_in "$top/build/valgrind" --enable-werror --disable-shared CFLAGS="-g -O1"
    say "make check under valgrind"
    make -C "$top/build/valgrind" -j"$jobs" >/dev/null
    make -C "$top/build/valgrind" check TESTS="$*" LOG_COMPILER="$top/tests/valgrind.sh" ||
        { cat "$top/build/valgrind"/tests/*.log; exit 1; }
}

case "${1:-}" in
demo)
    build
    say "demo"
    make -C "$top/build" demo
    ;;
check)
    build
    say "make check"
    make -C "$top/build" -j"$jobs" check || { cat "$top"/build/tests/*.log; exit 1; }
    ;;
test)
    build
    say "make check"
    make -C "$top/build" -j"$jobs" check || { cat "$top"/build/tests/*.log; exit 1; }
    say "make distcheck"
    make -C "$top/build" distcheck >"$top/build/distcheck.out" 2>&1 || { tail -80 "$top/build/distcheck.out"; exit 1; }
    tail -4 "$top/build/distcheck.out"
    # Sanitizers report through the test programs' exit codes.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # die_after_fork=0: the fork tests start threads in multi-threaded children on purpose.
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0
    sanitizer_check asan "-fsanitize=address,undefined -fno-sanitize-recover=all" \
        "tests/test_fixture tests/test_config tests/test_api tests/test_mutex tests/test_rwlock tests/test_robust tests/test_regress tests/test_safety tests/test_watchdog tests/test_client tests/test_replica tests/test_sentinel tests/test_failover tests/test_cluster"
    # clang's TSan: gcc 12's loses track of threads in multi-threaded fork
    # children ("dup thread with used id"), and the fork tests do that.
    TSAN_CC=clang sanitizer_check tsan "-fsanitize=thread" \
        "tests/test_mutex tests/test_rwlock tests/test_robust tests/test_regress tests/test_safety tests/test_watchdog tests/test_client tests/test_replica tests/test_sentinel tests/test_failover"
    # Every CUnit suite passes under valgrind, none is left out: each passed
    # every run (at least 6 in a row), the first nine also 5 of 5 with -j2,
    # 2 of them beside two busy loops on this 2-core machine.  About 90 s
    # with the build: the suites mostly wait out leases, so memcheck adds
    # little (test_rwlock 12 s -> 15 s).  tests/valgrind.sh raises each
    # suite's alarm to 600 s (RDT_TIMEOUT).  test_failover, added later, runs
    # about 45 s (a Sentinel failover and the old master's demotion, twice),
    # the same under memcheck; it passed 3 of 3 there and under TSan 2 of 2.
    # test_cluster (no threads, so not under TSan) runs about 15 s: a
    # 3+3 cluster, a migration, a failover and a reshard.
    valgrind_check "tests/test_fixture tests/test_config tests/test_api tests/test_mutex tests/test_rwlock tests/test_robust tests/test_regress tests/test_safety tests/test_watchdog tests/test_client tests/test_replica tests/test_sentinel tests/test_failover tests/test_cluster"
    say "fuzz (short)"
    sh "$top/tests/fuzz/run-fuzz.sh" "$top" "${FUZZ_SECONDS:-30}"
    say "all tests passed"
    ;;
bench)
    build
    shift
    "$top/build/bench/rdlock-bench" "$@"
    ;;
torture)
    build
    make -C "$top/build" torture
    ;;
fuzz)
    install_deps
    sh "$top/tests/fuzz/run-fuzz.sh" "$top" "${FUZZ_SECONDS:-60}"
    ;;
*)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 64
    ;;
esac
