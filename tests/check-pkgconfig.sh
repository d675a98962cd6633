#!/bin/sh
# check-pkgconfig.sh PREFIX LIBDIR - an installed librdlock is usable
# through pkg-config alone.
#
# Run by `make installcheck` after `make install`, possibly staged with
# DESTDIR: PREFIX and LIBDIR are then the staged paths ($DESTDIR$prefix,
# $DESTDIR$libdir).  It compiles a program that includes <rdlock.h> and
# calls rdlock_version() and rdlock_strerror(EINVAL), using only the flags
# from `pkg-config --cflags --libs rdlock` with PKG_CONFIG_PATH=LIBDIR/pkgconfig,
# runs it with LD_LIBRARY_PATH=LIBDIR and checks that it prints the version
# of the .pc file.  If LIBDIR/librdlock.a exists it also links librdlock
# statically with `pkg-config --static --libs rdlock` (the system libraries
# stay shared), which checks Libs.private / Requires.private.
# Exit 0 pass, nonzero on any failure.  $CC, $CFLAGS and $PKG_CONFIG are
# honoured.
#
# DESTDIR staging: rdlock.pc says prefix=<the configured prefix>, which is
# not where the staged files are.  We pass --define-variable=prefix=PREFIX,
# which re-roots every path that the .pc derives from ${prefix} (the
# default libdir and includedir) and nothing else.  We do not use
# PKG_CONFIG_SYSROOT_DIR: it would also prefix the -I/-L paths of the
# dependencies (hiredis.pc uses absolute /usr paths), pointing them into the
# staging tree where they do not exist.  When libdir or includedir were
# configured as absolute paths outside ${prefix}, DESTDIR is recovered as
# PREFIX minus the configured prefix and those two variables are defined as
# DESTDIR + their configured value (pkg-config applies such definitions to
# every module, so hiredis's -L may then point into the staging tree too:
# a harmless extra -L).  The resolved libdir must be LIBDIR (checked), and
# the program must load the library from LIBDIR (checked with ldd), so the
# test never silently uses another installed copy.

set -u
LC_ALL=C
export LC_ALL

if [ $# -ne 2 ]; then
    echo "usage: $0 PREFIX LIBDIR   (the installed, possibly DESTDIR-staged, paths)" >&2
    exit 2
fi
prefix=$1
libdir=$2
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
CC=${CC:-cc}
CFLAGS=${CFLAGS:-}

fail() {
    echo "check-pkgconfig: FAIL: $*" >&2
    exit 1
}

# Physical path of an existing directory, for comparisons.
canon() {
    (cd "$1" 2>/dev/null && pwd -P) || printf '%s\n' "$1"
}

command -v "$PKG_CONFIG" >/dev/null 2>&1 || fail "$PKG_CONFIG not found"
command -v "$CC" >/dev/null 2>&1 || fail "C compiler '$CC' not found (set CC)"
[ -d "$prefix" ] || fail "PREFIX $prefix is not a directory"
[ -d "$libdir" ] || fail "LIBDIR $libdir is not a directory"
[ -f "$libdir/pkgconfig/rdlock.pc" ] || fail "$libdir/pkgconfig/rdlock.pc not installed"

PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
unset PKG_CONFIG_SYSROOT_DIR

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-pkgconfig.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# --- the variables to define ------------------------------------------------
pc_prefix=$($PKG_CONFIG --variable=prefix rdlock) || fail "pkg-config cannot read rdlock.pc"
set -- "--define-variable=prefix=$prefix"
lib_resolved=$($PKG_CONFIG "$@" --variable=libdir rdlock)
if [ "$(canon "$lib_resolved")" != "$(canon "$libdir")" ]; then
    # libdir/includedir are absolute in the .pc: re-root them by hand.
    case $prefix in
    *"$pc_prefix") destdir=${prefix%"$pc_prefix"} ;;
    *) fail "rdlock.pc has prefix=$pc_prefix, which PREFIX=$prefix does not end with: cannot tell the DESTDIR" ;;
    esac
    set -- "$@" \
        "--define-variable=libdir=$destdir$($PKG_CONFIG --variable=libdir rdlock)" \
        "--define-variable=includedir=$destdir$($PKG_CONFIG --variable=includedir rdlock)"
    lib_resolved=$($PKG_CONFIG "$@" --variable=libdir rdlock)
    [ "$(canon "$lib_resolved")" = "$(canon "$libdir")" ] ||
        fail "rdlock.pc resolves libdir to $lib_resolved, not LIBDIR=$libdir"
fi
inc_resolved=$($PKG_CONFIG "$@" --variable=includedir rdlock)
[ -f "$inc_resolved/rdlock.h" ] || fail "rdlock.pc's includedir $inc_resolved has no rdlock.h"

version=$($PKG_CONFIG --modversion rdlock) || fail "pkg-config --modversion rdlock"
cflags=$($PKG_CONFIG "$@" --cflags rdlock) || fail "pkg-config --cflags rdlock"
libs=$($PKG_CONFIG "$@" --libs rdlock) || fail "pkg-config --libs rdlock"
echo "check-pkgconfig: rdlock $version: cflags: $cflags"
echo "check-pkgconfig: libs: $libs"

# --- the program --------------------------------------------------------------
cat >"$tmp/prog.c" <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rdlock.h>

#define STR2(x) #x
#define STR(x) STR2(x)

int main(void)
{
    const char *v = rdlock_version();
    const char *e = rdlock_strerror(EINVAL);
    const char *hdr = STR(RDLOCK_VERSION_MAJOR) "." STR(RDLOCK_VERSION_MINOR) "." STR(RDLOCK_VERSION_PATCH);

    if (v == NULL || e == NULL || *e == '\0') {
        fprintf(stderr, "rdlock_version or rdlock_strerror returned nothing\n");
        return 1;
    }
    if (strcmp(v, hdr) != 0) {
        fprintf(stderr, "library version %s but header version %s\n", v, hdr);
        return 1;
    }
    printf("%s\n%s\n", v, e);
    return 0;
}
EOF

# Prints the first line of the program's output and checks it.
check_run() { # LABEL OUTPUT-FILE
    got=$(sed -n 1p "$2")
    [ "$got" = "$version" ] || {
        cat "$2" >&2
        fail "$1: printed version '$got', expected '$version' (the .pc's)"
    }
    echo "check-pkgconfig: ok: $1 prints $got ($(sed -n 2p "$2"))"
}

# --- shared ---------------------------------------------------------------------
# shellcheck disable=SC2086 # word splitting of the flags is intended
$CC $CFLAGS $cflags -o "$tmp/prog" "$tmp/prog.c" $libs >"$tmp/cc.log" 2>&1 || {
    cat "$tmp/cc.log" >&2
    fail "compile/link with: $CC $CFLAGS $cflags prog.c $libs"
}
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/prog" >"$tmp/out" 2>&1 || {
    cat "$tmp/out" >&2
    fail "the program linked against the shared library failed"
}
check_run "shared link" "$tmp/out"
if command -v ldd >/dev/null 2>&1; then
    so=$(LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$tmp/prog" |
        sed -n 's/^[[:space:]]*librdlock\.so[^ ]* => \([^ ]*\) .*/\1/p')
    [ -n "$so" ] || fail "ldd shows no librdlock.so dependency"
    [ "$(canon "$(dirname "$so")")" = "$(canon "$libdir")" ] ||
        fail "the program loaded $so, not the library in $libdir"
fi

# --- static ---------------------------------------------------------------------
if [ -f "$libdir/librdlock.a" ]; then
    slibs=$($PKG_CONFIG "$@" --static --libs rdlock) || fail "pkg-config --static --libs rdlock"
    echo "check-pkgconfig: static libs: $slibs"
    # Take librdlock.a but keep the system libraries shared (their static
    # archives are optional): any dependency missing from Libs.private or
    # Requires.private shows as an undefined reference.
    sflags=
    for f in $slibs; do
        if [ "$f" = "-lrdlock" ]; then
            sflags="$sflags -Wl,-Bstatic -lrdlock -Wl,-Bdynamic"
        else
            sflags="$sflags $f"
        fi
    done
    case $sflags in
    *-Bstatic*) ;;
    *) fail "pkg-config --static --libs rdlock has no -lrdlock" ;;
    esac
    # shellcheck disable=SC2086
    $CC $CFLAGS $cflags -o "$tmp/prog-static" "$tmp/prog.c" $sflags >"$tmp/cc-static.log" 2>&1 || {
        cat "$tmp/cc-static.log" >&2
        fail "static link with: $CC $CFLAGS $cflags prog.c $sflags"
    }
    if command -v readelf >/dev/null 2>&1 &&
        readelf -d "$tmp/prog-static" | grep -q 'NEEDED.*librdlock'; then
        fail "the static link still needs librdlock.so"
    fi
    (unset LD_LIBRARY_PATH; "$tmp/prog-static") >"$tmp/out-static" 2>&1 || {
        cat "$tmp/out-static" >&2
        fail "the statically linked program failed"
    }
    check_run "static link" "$tmp/out-static"
else
    echo "check-pkgconfig: $libdir/librdlock.a not installed: static link not tried"
fi

echo "check-pkgconfig: PASS"
exit 0
