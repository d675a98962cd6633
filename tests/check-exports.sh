#!/bin/sh
# check-exports.sh - the shared library exports only rdlock_*, rdrwlock_*,
# rdsem_*, rdcond_*, rdbarrier_*, rdonce* and RDLOCK_* symbols (docs/CONTRACT.md section 1), and
# every RDLOCK_API function declared in include/rdlock.h.
#
# Run as an automake test: TESTS_ENVIRONMENT provides top_builddir and
# top_srcdir (defaults: "." and the directory above this script).  Exit 0
# pass, 1 fail (automake protocol).  A missing library is a failure, not a
# skip.  $NM overrides the nm program (libtool's "nm -B" works too).

set -u
LC_ALL=C # sort and comm must agree
export LC_ALL

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
NM=${NM:-nm}
lib=$top_builddir/.libs/librdlock.so
hdr=$top_srcdir/include/rdlock.h

fail() {
    echo "check-exports: FAIL: $*" >&2
    exit 1
}

[ -f "$lib" ] || fail "$lib not found (build the shared library first: make)"
[ -f "$hdr" ] || fail "$hdr not found (is top_srcdir right? it is '$top_srcdir')"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-exports.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# Dynamic symbol table, defined symbols only: "VALUE TYPE NAME[@VERSION]".
# Type A entries are version-node names of a version script, not symbols.
if ! $NM -D --defined-only "$lib" >"$tmp/nm.out" 2>"$tmp/nm.err"; then
    cat "$tmp/nm.err" >&2
    fail "$NM -D --defined-only $lib failed"
fi
awk 'NF >= 3 && $2 != "A" { sub(/@.*/, "", $3); print $2, $3 }' "$tmp/nm.out" | sort -u >"$tmp/exports"

# Linker- and toolchain-provided symbols that are not the library's API.
ignore='^(_init|_fini|_edata|_end|__bss_start|_etext|__data_start|data_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_|_PROCEDURE_LINKAGE_TABLE_|__dso_handle|__TMC_END__|_ITM_.*|__gmon_start__|__cxa_finalize|_IO_stdin_used|__libc_csu_.*|__bss_end__|__end__|_bss_end__|__exidx_start|__exidx_end)$'

awk '{ print $2 }' "$tmp/exports" | grep -Ev "$ignore" | sort -u >"$tmp/names"
[ -s "$tmp/names" ] || fail "$lib exports nothing"

offenders=$(grep -Ev '^(rdlock_|rdrwlock_|rdsem_|rdcond_|rdbarrier_|rdonce|RDLOCK_)' "$tmp/names")
status=0
if [ -n "$offenders" ]; then
    echo "check-exports: FAIL: $lib exports symbols outside rdlock_/rdrwlock_/rdsem_/rdcond_/rdbarrier_/rdonce/RDLOCK_:" >&2
    for s in $offenders; do
        grep " $s\$" "$tmp/exports" | sed 's/^/    /' >&2
    done
    echo "  (build with -fvisibility=hidden and mark only the API RDLOCK_API)" >&2
    status=1
fi

# Functions declared RDLOCK_API in the public header.  Comments are removed
# (joined into one line so that multi-line comments go too), then
# preprocessor lines, then each "RDLOCK_API <type> <name>(" gives <name>.
tr '\n' '\001' <"$hdr" |
    sed -e 's:/\*[^*]*\*\{1,\}\([^/*][^*]*\*\{1,\}\)*/: :g' |
    tr '\001' '\n' |
    sed -e 's://.*$::' -e '/^[[:space:]]*#/d' |
    tr '\n' ' ' |
    grep -o 'RDLOCK_API[^;{}()]*(' |
    sed -e 's/[[:space:]]*($//' -e 's/.*[^A-Za-z0-9_]//' |
    sort -u >"$tmp/declared"

[ -s "$tmp/declared" ] || fail "found no RDLOCK_API function declarations in $hdr"

# A declared function must be exported as code (T, or W/i for weak/ifunc).
grep -E '^[TWi] ' "$tmp/exports" | awk '{ print $2 }' | sort -u >"$tmp/funcs"
missing=$(comm -23 "$tmp/declared" "$tmp/funcs")
if [ -n "$missing" ]; then
    echo "check-exports: FAIL: declared RDLOCK_API in $hdr but not exported by $lib:" >&2
    echo "$missing" | sed 's/^/    /' >&2
    status=1
fi

# Exported functions not in the header are not an error (maybe internal
# API on purpose), but worth a note.
extra=$(comm -13 "$tmp/declared" "$tmp/funcs" | grep -E '^(rdlock_|rdrwlock_|rdsem_|rdonce|RDLOCK_)')
if [ -n "$extra" ]; then
    # shellcheck disable=SC2086 # one line, names separated by spaces
    echo "check-exports: note: exported but not declared in rdlock.h:" $extra >&2
fi

if [ "$status" -eq 0 ]; then
    echo "check-exports: ok: $(wc -l <"$tmp/names") exported symbols, all prefixed;" \
        "$(wc -l <"$tmp/declared") RDLOCK_API functions declared, all exported"
fi
exit $status
