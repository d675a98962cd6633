#!/bin/sh
# run-fuzz.sh SRCDIR SECONDS - build the config loader's libFuzzer target
# with ASan and UBSan (clang >= 14) and run it for SECONDS seconds on a copy
# of the seed corpus, in a temp dir.  Exits non-zero on any crash, leak or
# undefined-behaviour report, or if the target cannot be built.
#
#   CC=clang-15 tests/fuzz/run-fuzz.sh . 60     # another clang
#   FUZZ_KEEP=1 ...                             # keep the work dir
set -eu

usage() { echo "usage: $0 SRCDIR SECONDS" >&2; exit 64; }
[ $# -eq 2 ] || usage
srcdir=$1
seconds=$2
case $seconds in ''|*[!0-9]*) usage ;; esac
[ -f "$srcdir/src/config.c" ] || { echo "$0: $srcdir/src/config.c not found" >&2; exit 66; }
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

echo "building fuzz_config with $cc"
"$cc" -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -D_GNU_SOURCE -I"$work" -I"$srcdir/include" -I"$srcdir/src" \
    "$srcdir/tests/fuzz/fuzz_config.c" "$srcdir/src/config.c" "$srcdir/src/log.c" \
    -liniparser -lpthread -o "$work/fuzz_config"

mkdir "$work/corpus" "$work/artifacts"
cp "$srcdir"/tests/fuzz/corpus/* "$work/corpus/"
[ -f "$srcdir/conf/rdlock.ini" ] && cp "$srcdir/conf/rdlock.ini" "$work/corpus/sample-rdlock.ini"

echo "fuzzing for $seconds s"
cd "$work"
set +e
TMPDIR=$work \
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
./fuzz_config -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" > "$work/fuzz.log" 2>&1
rc=$?
set -e
tail -n 25 "$work/fuzz.log"

found=$(ls "$work/artifacts" 2>/dev/null | wc -l)
if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ] ||
   grep -q -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$work/fuzz.log"; then
    echo "FUZZ FAILED (exit $rc); log and reproducers kept in $work:" >&2
    ls -l "$work/artifacts" >&2
    echo "reproduce: $work/fuzz_config $work/artifacts/<file>" >&2
    FUZZ_KEEP=1
    exit 1
fi
echo "fuzz: no crash, leak or UB in $seconds s"
exit 0
