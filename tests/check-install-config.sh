#!/bin/sh
# check-install-config.sh - `make install` never overwrites an existing
# $(sysconfdir)/rdlock.ini, and `make uninstall` never removes an edited one.
#
# Run as an automake test (TESTS_ENVIRONMENT provides top_builddir and
# top_srcdir), or by hand from a configured build directory.  It runs the
# real `make install` and `make uninstall` of the build tree several times
# into a private DESTDIR (the build tree must be built: `make`):
#   1. into an empty DESTDIR: rdlock.ini is the sample, no rdlock.ini.sample;
#   2. the config edited, install again (twice): the edit survives, the
#      sample is installed beside it as rdlock.ini.sample;
#   3. uninstall: the edited rdlock.ini stays, everything else goes;
#   4. the config a symbolic link: install keeps the link, uninstall too;
#   5. the config identical to the sample: install then uninstall leave
#      nothing behind (what `make distcheck` also checks).
# Exit 0 pass, 1 fail (automake protocol).

set -u
LC_ALL=C
export LC_ALL

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
MAKE=${MAKE:-make}
sample=$top_srcdir/conf/rdlock.ini

fail() {
    echo "check-install-config: FAIL: $*" >&2
    exit 1
}

[ -f "$top_builddir/Makefile" ] || fail "$top_builddir/Makefile not found (configure first)"
[ -f "$sample" ] || fail "$sample not found (is top_srcdir right? it is '$top_srcdir')"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-install-config.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT HUP INT TERM
dest=$tmp/dest

# The recursive make must not inherit the jobserver or flags of a `make
# check` running this test.
run_make() { # TARGET
    (unset MAKEFLAGS MFLAGS MAKELEVEL
        $MAKE -C "$top_builddir" "$1" DESTDIR="$dest") >"$tmp/make.out" 2>&1 || {
        cat "$tmp/make.out" >&2
        fail "make $1 DESTDIR=$dest failed"
    }
}

files_left() {
    (cd "$dest" && find . \( -type f -o -type l \) -print | sort)
}

# 1. fresh install
run_make install
conf=$(find "$dest" -name rdlock.ini \( -type f -o -type l \) -print)
[ -n "$conf" ] || fail "make install installed no rdlock.ini"
[ "$(printf '%s\n' "$conf" | wc -l)" -eq 1 ] || fail "more than one rdlock.ini installed: $conf"
cmp -s "$sample" "$conf" || fail "the fresh $conf is not conf/rdlock.ini"
[ ! -e "$conf.sample" ] || fail "a fresh install made $conf.sample"
echo "check-install-config: ok: fresh install: ${conf#"$dest"} is the sample"

# 2. edited, then installed over (twice)
cp "$conf" "$tmp/edited"
printf '\n; edited by check-install-config\n[lock]\nlease_ms = 12345\n' >>"$tmp/edited"
cp "$tmp/edited" "$conf"
for round in 1 2; do
    run_make install
    cmp -s "$tmp/edited" "$conf" || fail "make install (round $round) overwrote the edited $conf"
    [ -f "$conf.sample" ] || fail "make install (round $round) did not put the sample beside an edited $conf"
    cmp -s "$sample" "$conf.sample" || fail "$conf.sample is not conf/rdlock.ini"
done
echo "check-install-config: ok: the edit survives make install; the sample is ${conf#"$dest"}.sample"

# 3. uninstall keeps only the edited file
run_make uninstall
cmp -s "$tmp/edited" "$conf" || fail "make uninstall removed or changed the edited $conf"
left=$(files_left)
[ "$left" = "./${conf#"$dest"/}" ] || fail "make uninstall left other files than the edited config: $left"
echo "check-install-config: ok: make uninstall kept the edited config and removed the rest"

# 4. a symbolic link stays a link (install(1) would replace it)
mv "$conf" "$tmp/target.ini"
ln -s "$tmp/target.ini" "$conf"
run_make install
[ -h "$conf" ] || fail "make install replaced the symbolic link $conf"
cmp -s "$tmp/edited" "$tmp/target.ini" || fail "make install changed the file $conf links to"
run_make uninstall
[ -h "$conf" ] || fail "make uninstall removed the symbolic link $conf"
rm -f "$conf"
echo "check-install-config: ok: a symbolic link stays"

# 5. the pristine sample comes and goes with install/uninstall
run_make install
cmp -s "$sample" "$conf" || fail "install over nothing did not put the sample back"
run_make install
[ ! -e "$conf.sample" ] || fail "installing over the unchanged sample made $conf.sample"
run_make uninstall
left=$(files_left)
[ -z "$left" ] || fail "make uninstall left files behind: $left"
echo "check-install-config: ok: an unedited config is removed by make uninstall"

echo "check-install-config: PASS"
exit 0
