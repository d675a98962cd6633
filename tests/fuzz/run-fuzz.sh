#!/bin/sh
# run-fuzz.sh SRCDIR SECONDS - build librdlock's libFuzzer targets with ASan
# and UBSan (clang >= 14) and run each for SECONDS seconds on a copy of its
# seed corpus, in a temp dir:
#   fuzz_config  the ini loader (src/base/config.c), corpus tests/fuzz/corpus-config
#   fuzz_reply   everything read from a server: hiredis parses the bytes,
#                src/proto/reply.c decodes the replies; corpus tests/fuzz/corpus-reply
#   fuzz_slotmap what a Redis Cluster node says: CLUSTER SLOTS, MOVED, ASK
#                and the other cluster errors, through src/proto/slotmap.c; corpus
#                tests/fuzz/corpus-slotmap (replies of a real 7.0 cluster,
#                and the endpoint forms "", nil, "?", IPv6)
# Exits non-zero on any crash, leak or undefined-behaviour report, or if a
# target cannot be built.
#
#   CC=clang-15 tests/fuzz/run-fuzz.sh . 60     # another clang
#   FUZZ_TARGETS=fuzz_reply ...                 # one target only
#   FUZZ_KEEP=1 ...                             # keep the work dir
set -eu

usage() { echo "usage: $0 SRCDIR SECONDS" >&2; exit 64; }
[ $# -eq 2 ] || usage
srcdir=$1
seconds=$2
case $seconds in ''|*[!0-9]*) usage ;; esac
[ -f "$srcdir/src/base/config.c" ] || { echo "$0: $srcdir/src/base/config.c not found" >&2; exit 66; }
srcdir=$(cd "$srcdir" && pwd)

cc=${CC:-clang}
case $cc in *clang*) ;; *) cc=clang ;; esac   # libFuzzer needs clang, not $CC=gcc
command -v "$cc" >/dev/null 2>&1 || { echo "$0: $cc not found (apt-get install clang)" >&2; exit 69; }

work=$(mktemp -d "${TMPDIR:-/tmp}/rdl-fuzz.XXXXXX")
cleanup() { [ -n "${FUZZ_KEEP:-}" ] && echo "work dir kept: $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT INT TERM

# The autoconf header is not generated here: an equivalent one says where
# the iniparser header lives.
if [ -f /usr/include/iniparser/iniparser.h ]; then
    echo '#define HAVE_INIPARSER_INIPARSER_H 1' > "$work/rdl_build.h"
else
    : > "$work/rdl_build.h"
fi

flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -D_GNU_SOURCE -I$work -I$srcdir/include -I$srcdir/src"

# build_target NAME SOURCES-AND-LIBS...
build_target() {
    name=$1
    shift
    echo "building $name with $cc"
    # shellcheck disable=SC2086
    "$cc" $flags "$@" -o "$work/$name"
}

# run_target NAME CORPUS_DIR [extra seed files...]
run_target() {
    name=$1 seeds=$2
    shift 2
    mkdir "$work/$name.corpus" "$work/$name.artifacts"
    cp "$seeds"/* "$work/$name.corpus/"
    for f in "$@"; do [ -f "$f" ] && cp "$f" "$work/$name.corpus/"; done
    echo "fuzzing $name for $seconds s"
    set +e
    (cd "$work" && TMPDIR=$work \
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=0 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "./$name" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/$name.artifacts/" \
        "$work/$name.corpus" > "$work/$name.log" 2>&1)
    rc=$?
    set -e
    tail -n 12 "$work/$name.log"
    found=$(ls "$work/$name.artifacts" 2>/dev/null | wc -l)
    if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ] ||
       grep -q -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$work/$name.log"; then
        echo "FUZZ FAILED: $name (exit $rc); log and reproducers kept in $work:" >&2
        ls -l "$work/$name.artifacts" >&2
        echo "reproduce: $work/$name $work/$name.artifacts/<file>" >&2
        FUZZ_KEEP=1
        failed=1
    else
        echo "fuzz: $name: no crash, leak or UB in $seconds s"
    fi
}

failed=0
targets=${FUZZ_TARGETS:-fuzz_config fuzz_reply fuzz_slotmap}
for t in $targets; do
    case $t in
    fuzz_config)
        # The loader is src/base/config.c and the config_*.c it is split into.
        build_target fuzz_config "$srcdir/tests/fuzz/fuzz_config.c" "$srcdir"/src/base/config*.c "$srcdir/src/base/log.c" \
            -liniparser -lpthread
        run_target fuzz_config "$srcdir/tests/fuzz/corpus-config" "$srcdir/conf/rdlock.ini"
        ;;
    fuzz_reply)
        build_target fuzz_reply "$srcdir/tests/fuzz/fuzz_reply.c" "$srcdir/src/proto/reply.c" "$srcdir/src/base/log.c" \
            -lhiredis -lpthread
        run_target fuzz_reply "$srcdir/tests/fuzz/corpus-reply"
        ;;
    fuzz_slotmap)
        build_target fuzz_slotmap "$srcdir/tests/fuzz/fuzz_slotmap.c" "$srcdir/src/proto/slotmap.c" -lhiredis
        run_target fuzz_slotmap "$srcdir/tests/fuzz/corpus-slotmap"
        ;;
    *) echo "$0: unknown target $t" >&2; exit 64 ;;
    esac
done
exit $failed
