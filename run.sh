#!/bin/sh
# run.sh - the project's entry point on a fresh Debian machine.
#
#   ./run.sh demo    install what is missing, build, run the demo against a
#                    private redis-server
#   ./run.sh test    install what is missing, build with -Werror, then run
#                    make check: every functional test (unit suites, the
#                    tool, the examples, Sentinel, Cluster, Redlock, the
#                    short torture run); about 10 minutes on 2 cores
#   ./run.sh ci      what CI runs (.ci/run): the test command, then
#                    ./run.sh ci-more
#   ./run.sh ci-more make distcheck, a short run of the server-side bench
#                    scripts, the suites under AddressSanitizer+UBSan,
#                    the threaded ones under ThreadSanitizer, the
#                    single-server ones under valgrind memcheck, a short
#                    fuzz run, the Debian packages (built, lintian-clean,
#                    installed, used, purged), and ./run.sh debian13
#   ./run.sh debian13  the test command in a fresh Debian 13 chroot
#                    (mmdebstrap, Debian's packages), once against Redis 8
#                    and once against Valkey 8, and the packages built and
#                    lintian-checked there (root)
#   ./run.sh check   the same as test (kept for old habits)
#   ./run.sh asan [SUITES]  those CUnit suites (default all) under
#                    AddressSanitizer+UBSan
#   ./run.sh bench   build and run the benchmark
#   ./run.sh fuzz    build and run the fuzz targets (config loader, server
#                    replies, cluster slots and redirections), FUZZ_SECONDS each (default 60)
#   ./run.sh torture build and run the long fault-injection scenarios
#                    (about 7 minutes; docs/RELIABILITY.md)
#   ./run.sh deb     build the Debian packages (librdlock0, librdlock-dev,
#                    rdlock-tools) from a `make dist` tarball in a temp dir
#                    and check them with lintian; the .debs go to build/deb/
#   ./run.sh deb-check  the same, then install them, build and run a
#                    consumer with pkg-config, run the rdlock tool, purge
#                    them (root or sudo; a stage of ./run.sh ci-more)
#
# Builds happen out of tree under build/ (build/asan, build/tsan,
# build/valgrind for the checked runs), so the source tree stays clean.
set -eu
cd "$(dirname "$0")"
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

say() { printf '\n=== %s\n' "$*"; }

# Debian packages the build and the tests need (./run.sh test), with the
# same names on Debian 12 and 13.  python3 for the tool's JSON checks.
PKGS="gcc make autoconf automake libtool pkg-config libhiredis-dev libiniparser-dev
      libcunit1-dev libssl-dev openssl redis-server redis-tools groff-base mandoc python3"
# What ./run.sh ci-more needs on top.  clang's sanitizer runtime is named
# after clang's major version (14 on Debian 12, 19 on 13): clang_rt_pkg.
CI_PKGS="clang valgrind build-essential debhelper dpkg-dev fakeroot lintian mmdebstrap"

clang_rt_pkg() {
    v=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\)\..*/\1/p' | head -n 1)
    [ -n "$v" ] && echo "libclang-rt-$v-dev"
}

need_install() {
    for p in $PKGS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || { echo "$p"; }
    done
}

need_root() { # WHY: sets $sudo to "" (root) or "sudo", else fails saying WHY
    if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
        echo "run.sh: $1, and no root or sudo" >&2
        exit 1
    fi
}

install_deps() { # [more packages...]
    [ $# -eq 0 ] || PKGS="$PKGS $*"
    missing=$(need_install | tr '\n' ' ')
    [ -z "${missing% }" ] && return 0
    say "installing: $missing"
    need_root "missing packages to install ($missing)"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
    # The package starts a system redis-server on 6379; we never use it.
}

# failed_logs DIR: the logs of the tests that failed under DIR/tests, each
# whole, and nothing else; every log when no .trs names a failure (make
# stopped before writing them).  Only the failing suites' logs are printed,
# so that a CI page that keeps the head and the tail of the output shows
# the failure itself rather than the passing suites around it.
failed_logs() { # DIR
    # find, not a glob: the torture suite's .trs lives in tests/torture/.
    bad=$(find "$1"/tests -name '*.trs' -exec grep -l -E '^:test-result: (FAIL|ERROR|XPASS)' {} + 2>/dev/null || true)
    if [ -z "$bad" ]; then
        find "$1"/tests -name '*.log' ! -name 'test-suite.log' -exec cat {} +
        return
    fi
    for trs in $bad; do
        echo "==================== ${trs%.trs}.log"
        cat "${trs%.trs}.log"
    done
    echo "run.sh: failed: $(echo "$bad" | sed 's|.*/||; s|\.trs$||' | tr '\n' ' ')" >&2
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
    make -C "$top/build/$name" check TESTS="$*" || { failed_logs "$top/build/$name"; exit 1; }
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
        { failed_logs "$top/build/valgrind"; exit 1; }
}

# ---------------------------------------------------------------- Debian packages
DEB_PKGS="librdlock0 librdlock-dev rdlock-tools"

# Builds the packages with dpkg-buildpackage from the `make dist` tarball,
# unpacked in a temp dir (the source tree and its parent stay untouched),
# checks them with lintian (any error or warning fails) and leaves the
# .debs and .changes in build/deb/.
deb_build() {
    build
    say "make dist"
    make -C "$top/build" dist >/dev/null
    version=$(sed -n 's/^VERSION = //p' "$top/build/Makefile")
    debwork=$(mktemp -d "${TMPDIR:-/tmp}/rdlock-deb.XXXXXX")
    tar -xzf "$top/build/rdlock-$version.tar.gz" -C "$debwork"
    say "dpkg-buildpackage -us -uc -b (in $debwork)"
    (cd "$debwork/rdlock-$version" && dpkg-buildpackage -us -uc -b) >"$debwork/build.log" 2>&1 || {
        tail -60 "$debwork/build.log"
        echo "run.sh: dpkg-buildpackage failed (log: $debwork/build.log)" >&2
        exit 1
    }
    rm -rf "$top/build/deb"
    mkdir -p "$top/build/deb"
    mv "$debwork"/*.deb "$debwork"/*.changes "$debwork"/*.buildinfo "$debwork/build.log" "$top/build/deb/"
    rm -rf "$debwork"
    changes=$(ls "$top"/build/deb/*.changes)
    say "lintian $(basename "$changes")"
    # As root (CI), lintian says it would rather not be: that line is no finding.
    if ! lintian --fail-on error,warning "$changes" >"$top/build/deb/lintian.out" 2>&1; then
        grep -v '^running with root privileges' "$top/build/deb/lintian.out" >&2
        echo "run.sh: lintian reports errors or warnings (above)" >&2
        exit 1
    fi
    grep -v '^running with root privileges' "$top/build/deb/lintian.out" || true
    ls -1 "$top"/build/deb/*.deb
}

deb_remove() {
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $DEB_PKGS >/dev/null 2>&1 || true
}

# Builds the packages (deb_build), installs the three of them, checks that
# /etc/rdlock.ini is a conffile, builds a consumer with nothing but
# `pkg-config --cflags --libs rdlock` (and a static one with --static), runs
# it and the installed rdlock tool against a private redis-server, and
# purges the packages again.  Refuses to run when one of them is installed
# already (it could not leave the machine as it found it).
package_check() {
    need_root "the package check installs and removes packages"
    for p in $DEB_PKGS; do
        if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
            echo "run.sh: $p is installed; the package check installs and purges its own build:" \
                "remove it first (apt-get purge $DEB_PKGS)" >&2
            exit 1
        fi
    done
    deb_build
    pkgtmp=$(mktemp -d "${TMPDIR:-/tmp}/rdlock-pkgcheck.XXXXXX")
    redis_pid=
    trap 'deb_remove; [ -z "$redis_pid" ] || kill "$redis_pid" 2>/dev/null; rm -rf "$pkgtmp"' EXIT
    say "installing $DEB_PKGS"
    # shellcheck disable=SC2046
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $(for p in $DEB_PKGS; do ls "$top/build/deb/${p}_"*.deb; done) >"$pkgtmp/apt.log" 2>&1 ||
        { cat "$pkgtmp/apt.log"; exit 1; }
    dpkg-query -W -f='${Conffiles}\n' rdlock-tools | grep -q '^ /etc/rdlock.ini ' ||
        { echo "run.sh: /etc/rdlock.ini is not a conffile of rdlock-tools" >&2; exit 1; }

    say "a consumer of the installed librdlock-dev, and the installed rdlock"
    redis-server --port 0 --unixsocket "$pkgtmp/redis.sock" --save '' --appendonly no \
        --dir "$pkgtmp" >"$pkgtmp/redis.log" 2>&1 &
    redis_pid=$!
    printf '[redis]\nsocket = %s\n' "$pkgtmp/redis.sock" >"$pkgtmp/rdlock.ini"
    cat >"$pkgtmp/consumer.c" <<'EOF'
#include <stdio.h>
#include <rdlock.h>

int main(int argc, char **argv)
{
    rdlock_client_t *client;
    rdlock_attr_t attr;
    rdlock_t lock;
    uint64_t token = 0;
    int rc;

    if (argc != 2)
        return 2;
    if ((rc = rdlock_client_open(&client, argv[1])) != 0) {
        fprintf(stderr, "consumer: rdlock_client_open: %s\n", rdlock_strerror(rc));
        return 1;
    }
    rdlock_attr_init(&attr);
    rdlock_attr_setclient(&attr, client);
    if ((rc = rdlock_init(&lock, "run.sh-package-check", &attr)) != 0 ||
        (rc = rdlock_lock(&lock)) != 0 ||
        (rc = rdlock_fencing_token(&lock, &token)) != 0 ||
        (rc = rdlock_unlock(&lock)) != 0 ||
        (rc = rdlock_destroy(&lock)) != 0) {
        fprintf(stderr, "consumer: %s\n", rdlock_strerror(rc));
        return 1;
    }
    rdlock_attr_destroy(&attr);
    rdlock_client_close(client);
    printf("consumer: librdlock %s: locked and unlocked, fencing token %llu\n",
           rdlock_version(), (unsigned long long)token);
    return token > 0 ? 0 : 1;
}
EOF
    # Only the installed files: no -I or -L into the tree, pkg-config's
    # default search path.
    # shellcheck disable=SC2046
    (cd "$pkgtmp" && cc -o consumer consumer.c $(pkg-config --cflags --libs rdlock)) ||
        { echo "run.sh: the consumer does not build with pkg-config --cflags --libs rdlock" >&2; exit 1; }
    ldd "$pkgtmp/consumer" | grep -Eq "librdlock\.so\.0 => (/usr)?/lib/" ||
        { ldd "$pkgtmp/consumer"; echo "run.sh: the consumer does not load the installed librdlock.so.0" >&2; exit 1; }
    # Static: librdlock.a, its dependencies from Libs.private, and the
    # system libraries (-static); glibc's linker note about getaddrinfo in
    # a static program is expected, so the compiler's output goes to a log.
    # shellcheck disable=SC2046
    (cd "$pkgtmp" && cc -static -o consumer-static consumer.c \
        $(pkg-config --static --cflags --libs rdlock) >cc.log 2>&1) || {
        cat "$pkgtmp/cc.log"
        echo "run.sh: no static link with pkg-config --static --cflags --libs rdlock" >&2
        exit 1
    }
    if readelf -d "$pkgtmp/consumer-static" | grep -q NEEDED; then
        echo "run.sh: the static consumer still needs shared libraries" >&2
        exit 1
    fi
    i=0
    while [ ! -S "$pkgtmp/redis.sock" ]; do
        i=$((i + 1))
        [ "$i" -le 100 ] || { cat "$pkgtmp/redis.log"; echo "run.sh: redis-server did not start" >&2; exit 1; }
        sleep 0.1
    done
    "$pkgtmp/consumer" "$pkgtmp/rdlock.ini"
    "$pkgtmp/consumer-static" "$pkgtmp/rdlock.ini" >"$pkgtmp/static.out"
    sed 's/^consumer:/consumer (static):/' "$pkgtmp/static.out"
    # shellcheck disable=SC2016 # $RDLOCK_FENCING_TOKEN is for the inner sh
    out=$(/usr/bin/rdlock -c "$pkgtmp/rdlock.ini" -n run.sh-package-check -- sh -c 'echo "token $RDLOCK_FENCING_TOKEN"')
    echo "rdlock: $out"
    case $out in
    "token "[1-9]*) ;;
    *) echo "run.sh: the installed rdlock did not run the command with a fencing token" >&2; exit 1 ;;
    esac
    /usr/bin/rdlock -c "$pkgtmp/rdlock.ini" --status run.sh-package-check >/dev/null

    say "removing $DEB_PKGS"
    kill "$redis_pid"
    redis_pid=
    deb_remove
    for p in $DEB_PKGS; do
        if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -qv '^un'; then
            echo "run.sh: $p is still installed after apt-get purge" >&2
            exit 1
        fi
    done
    [ ! -e /etc/rdlock.ini ] || { echo "run.sh: /etc/rdlock.ini left after purge" >&2; exit 1; }
    trap - EXIT
    rm -rf "$pkgtmp"
    say "Debian packages: built, lintian-clean, installed, used, removed"
}

# Stage timer: CI's limit is 90 minutes and ours 60, so each stage says
# what it took.
stage_t0=0
stage() { # NAME: start a stage (and end the previous one)
    now=$(date +%s)
    [ "$stage_t0" -eq 0 ] || echo "(stage took $((now - stage_t0)) s)"
    stage_t0=$now
    say "$*"
}

# Everything CI runs besides the test command.  Each checker covers what
# it can find that the others cannot:
#   - distcheck: the tarball is complete and builds out of a read-only
#     tree; the quick suites that read files from the source tree run
#     there (the full suite ran already in ./run.sh test);
#   - ASan+UBSan: memory and undefined-behaviour errors, in every CUnit
#     suite (about 2x slower, so all of them fit);
#   - TSan: data races, in the suites that run threads;
#   - valgrind memcheck: reads of uninitialised memory (ASan cannot see
#     them) and leaks of the forked children, in the suites that drive the
#     library's own code on one server; the topology suites (replica,
#     Sentinel, Cluster, Redlock) spend their time waiting for servers and
#     add little under memcheck beyond what ASan finds in them;
#   - the fuzzers: hostile config files and server replies;
#   - the packages, and Debian 13 (Redis 8, Valkey 8, hiredis 1.2).
ci_more() {
    install_deps $CI_PKGS
    install_deps "$(clang_rt_pkg)"
    build
    stage "make distcheck (quick suites)"
    make -C "$top/build" distcheck TESTS="$DISTCHECK_TESTS" >"$top/build/distcheck.out" 2>&1 ||
        { tail -80 "$top/build/distcheck.out"; exit 1; }
    tail -4 "$top/build/distcheck.out"
    # The server-side bench scripts, shrunk: each checks its own replies
    # and counts and exits 1 on a wrong one, so a script change that breaks
    # their measurement shows here rather than in the next bench run.
    stage "bench scripts (calls.sh, readers.sh, floor.sh: a short run each)"
    { CALLS_ITER=500 sh "$top/bench/calls.sh" &&
        READERS_ITER=50 READERS_COUNTS="1 20" sh "$top/bench/readers.sh" &&
        FLOOR_ITER=500 FLOOR_REPS=1 sh "$top/bench/floor.sh"; } >"$top/build/bench-scripts.out" 2>&1 ||
        { tail -40 "$top/build/bench-scripts.out"; exit 1; }
    tail -4 "$top/build/bench-scripts.out"
    # Sanitizers report through the test programs' exit codes.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # die_after_fork=0: the fork tests start threads in multi-threaded children on purpose.
    export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0
    stage "AddressSanitizer + UBSan"
    sanitizer_check asan "-fsanitize=address,undefined -fno-sanitize-recover=all" "$SUITES_ALL"
    # clang's TSan: gcc 12's loses track of threads in multi-threaded fork
    # children ("dup thread with used id"), and the fork tests do that.
    stage "ThreadSanitizer"
    TSAN_CC=clang sanitizer_check tsan "-fsanitize=thread" "$SUITES_THREADED"
    stage "valgrind memcheck"
    valgrind_check "$SUITES_ONE_SERVER"
    stage "fuzz (short)"
    sh "$top/tests/fuzz/run-fuzz.sh" "$top" "${FUZZ_SECONDS:-30}"
    stage "Debian packages"
    package_check
    stage "Debian 13"
    debian13
    stage "done"
}

DISTCHECK_TESTS="tests/check-exports.sh tests/check-layers.sh tests/check-size.sh tests/check-codes.sh
    tests/scripts/run-tests.sh
    man/check-man.sh man/check-docs.sh tests/test_cli.sh examples/check-examples.sh tests/test_config tests/test_api"
SUITES_ONE_SERVER="tests/test_fixture tests/test_config tests/test_api tests/test_mutex tests/test_rwlock
    tests/test_robust tests/test_regress tests/test_safety tests/test_watchdog tests/test_client tests/test_sem
    tests/test_cond tests/test_tls"
SUITES_TOPOLOGY="tests/test_replica tests/test_sentinel tests/test_failover tests/test_cluster
    tests/test_cluster_locks tests/test_redlock tests/test_redlock_prims"
SUITES_ALL="$SUITES_ONE_SERVER $SUITES_TOPOLOGY"
# test_fixture, test_config, test_api and test_cluster run no threads of
# their own that race.
SUITES_THREADED="tests/test_mutex tests/test_rwlock tests/test_robust tests/test_regress tests/test_safety
    tests/test_watchdog tests/test_client tests/test_replica tests/test_sentinel tests/test_failover
    tests/test_cluster_locks tests/test_sem tests/test_cond tests/test_redlock tests/test_redlock_prims"

# One line each (make takes them as TESTS=...).
DISTCHECK_TESTS=$(echo $DISTCHECK_TESTS)
SUITES_ALL=$(echo $SUITES_ALL)
SUITES_THREADED=$(echo $SUITES_THREADED)
SUITES_ONE_SERVER=$(echo $SUITES_ONE_SERVER)

# ---------------------------------------------------------------- Debian 13
# The packages ./run.sh test needs there: all of them are in the chroot
# from the start, so run.sh inside installs nothing.  valkey-server for the
# second run; debhelper and lintian for the packages.
D13_PKGS="build-essential autoconf automake libtool pkg-config libhiredis-dev libiniparser-dev libcunit1-dev
    libssl-dev openssl redis-server redis-tools valkey-server groff-base mandoc python3 procps
    debhelper dpkg-dev fakeroot lintian git ca-certificates"

# A fresh Debian 13 (trixie) chroot from Debian's packages, the source tree
# copied in (the files git tracks, as a clone has them), and in it: the
# test command against Redis 8, again against Valkey 8, and the Debian
# packages built and lintian-checked.  Removed afterwards.
debian13() {
    need_root "the Debian 13 chroot needs root (mmdebstrap, mount, chroot)"
    install_deps mmdebstrap
    d13=$(mktemp -d "${TMPDIR:-/tmp}/rdlock-d13.XXXXXX")
    trap 'd13_cleanup' EXIT
    say "Debian 13 chroot (mmdebstrap) in $d13"
    mmdebstrap --quiet --variant=apt --include="$(echo $D13_PKGS | tr ' ' ',')" trixie "$d13/root" \
        http://deb.debian.org/debian >"$d13/mmdebstrap.log" 2>&1 ||
        { tail -40 "$d13/mmdebstrap.log"; echo "run.sh: mmdebstrap failed" >&2; exit 1; }
    mount -t proc proc "$d13/root/proc"
    mount --rbind /dev "$d13/root/dev"
    mount -t sysfs sysfs "$d13/root/sys"
    mkdir -p "$d13/root/src"
    if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$top" ls-files -z | (cd "$top" && xargs -0 tar -cf -) | tar -xf - -C "$d13/root/src"
    else
        (cd "$top" && tar -cf - --exclude=./build .) | tar -xf - -C "$d13/root/src"
    fi
    chroot "$d13/root" sh -c 'redis-server --version; valkey-server --version; gcc --version | head -n 1;
        echo "hiredis $(pkg-config --modversion hiredis), iniparser $(dpkg-query -W -f="\${Version}" libiniparser-dev)"'
    say "Debian 13: ./run.sh test against Redis 8"
    chroot "$d13/root" sh -c 'cd /src && ./run.sh test'
    say "Debian 13: ./run.sh test against Valkey 8"
    chroot "$d13/root" sh -c 'cd /src && REDIS_SERVER=/usr/bin/valkey-server REDIS_CLI=/usr/bin/valkey-cli ./run.sh test'
    # The TLS code exists only on this release (hiredis 1.2): its suite
    # under AddressSanitizer+UBSan too (gcc's; the host's pass cannot
    # build it).
    say "Debian 13: the TLS suite under AddressSanitizer+UBSan"
    chroot "$d13/root" sh -c 'cd /src && ./run.sh asan tests/test_tls'
    say "Debian 13: the Debian packages"
    chroot "$d13/root" sh -c 'cd /src && ./run.sh deb'
    d13_cleanup
    trap - EXIT
    say "Debian 13: Redis 8, Valkey 8 and the packages passed"
}

d13_cleanup() {
    [ -n "${d13:-}" ] || return 0
    for m in sys dev proc; do
        umount -R "$d13/root/$m" 2>/dev/null || umount -l "$d13/root/$m" 2>/dev/null || true
    done
    # Only once nothing is mounted below it any more.
    if ! grep -q " $d13/" /proc/mounts; then rm -rf "$d13"; fi
    d13=
}

case "${1:-}" in
demo)
    build
    say "demo"
    make -C "$top/build" demo
    ;;
check | test)
    build
    say "make check"
    # REDIS_SERVER given to run.sh (./run.sh debian13's Valkey run) wins
    # over the one configure found.
    make -C "$top/build" -j"$jobs" check ${REDIS_SERVER:+REDIS_SERVER="$REDIS_SERVER"} ||
        { failed_logs "$top/build"; exit 1; }
    say "all functional tests passed"
    ;;
ci)
    "$top/run.sh" test
    exec "$top/run.sh" ci-more
    ;;
asan)
    # ./run.sh asan [TESTS...]: those suites (default: every CUnit suite)
    # under AddressSanitizer+UBSan.
    build
    shift
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    sanitizer_check asan "-fsanitize=address,undefined -fno-sanitize-recover=all" "${*:-$SUITES_ALL}"
    ;;
ci-more)
    ci_more
    say "all CI stages passed"
    ;;
debian13)
    debian13
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
deb)
    deb_build
    ;;
deb-check)
    package_check
    ;;
fuzz)
    install_deps
    sh "$top/tests/fuzz/run-fuzz.sh" "$top" "${FUZZ_SECONDS:-60}"
    ;;
*)
    sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'
    exit 64
    ;;
esac
