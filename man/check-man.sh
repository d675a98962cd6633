#!/bin/sh
# check-man.sh - check librdlock's man pages.
#
#   sh man/check-man.sh [MANDIR]
#
# MANDIR is the directory holding man3/, man5/ and man7/: the argument, else
# $top_srcdir/man when top_srcdir is set (as `make check` sets it), else the
# directory of this script.  It is only read, never written (make distcheck
# runs this on a read-only source tree).
#
# For every page:
#   - a link page must be exactly one `.so manN/PAGE.N` line naming a page
#     that exists and is not itself a link;
#   - `groff -man -ww -z` (default device, then -Tutf8 as man(1) uses) must
#     print nothing, run from MANDIR so that .so links resolve as man(1)
#     resolves them;
#   - `mandoc -T lint -W warning` must print nothing, if mandoc is installed
#     (link pages are checked through their target: mandoc calls every .so
#     "fragile", which is the point of a link page);
#   - no line may end in white space;
#   - every name in a page's NAME section must have its own file in that
#     section's directory: the page itself or a link to it.
# And, when include/rdlock.h is found (beside MANDIR, or under $top_srcdir):
#   - every public function has a page in man3;
#   - every declaration in the header (RDLOCK_API functions and function
#     pointer typedefs) appears verbatim, whitespace aside, in the rendered
#     SYNOPSIS of the page documenting it, and every declaration shown in a
#     SYNOPSIS exists in the header.
#
# What the pages say (rdlock(7)'s SEE ALSO, page references, ini keys) is
# checked against the code by check-docs.sh.
#
# Exit status: 0 all good, 1 a problem (each one printed), 77 (automake's
# SKIP) when neither groff nor mandoc is installed.
set -u

me=check-man
if [ $# -gt 1 ]; then
    echo "usage: $0 [MANDIR]" >&2
    exit 2
fi
if [ $# -eq 1 ]; then
    mandir=$1
elif [ -n "${top_srcdir:-}" ]; then
    mandir="${top_srcdir:-.}/man"
else
    mandir=$(dirname "$0")
fi
if [ ! -d "$mandir/man3" ]; then
    echo "$me: $mandir has no man3/ directory" >&2
    exit 1
fi
mandir=$(cd "$mandir" && pwd) || exit 1

have_groff=no
have_mandoc=no
command -v groff >/dev/null 2>&1 && have_groff=yes
command -v mandoc >/dev/null 2>&1 && have_mandoc=yes
if [ "$have_groff" = no ] && [ "$have_mandoc" = no ]; then
    echo "$me: SKIP: neither groff nor mandoc is installed"
    exit 77
fi
[ "$have_groff" = yes ] || echo "$me: note: groff not installed: groff checks skipped"
[ "$have_mandoc" = yes ] || echo "$me: note: mandoc not installed: mandoc lint skipped"

header=
for h in "$mandir/../include/rdlock.h" "${top_srcdir:-.}/include/rdlock.h"; do
    if [ -f "$h" ]; then
        header="$(cd "$(dirname "$h")" && pwd)/$(basename "$h")"
        break
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

failed=0
fail() {
    echo "$me: FAIL: $*"
    failed=1
}

cd "$mandir" || exit 1

# Echo the target of a link page (manN/PAGE.N), or nothing for a real page.
link_target() {
    sed -n '/^\.\\"/d; /^\.so[ 	]/{s/^\.so[ 	]*//; s/[ 	]*$//; p; q;}; q' "$1"
}

# The names in a page's NAME section, one per line.
page_names() {
    awk '
        /^\.SH[ \t]+"?NAME"?[ \t]*$/ { inname = 1; next }
        inname && /^\.(SH|SS)/ { exit }
        inname && /^\.\\"/ { next }
        inname {
            line = $0
            if (line ~ /\\-/) { sub(/[ \t]*\\-.*/, "", line); last = 1 }
            gsub(/\\&/, "", line)
            n = split(line, w, /[ \t]*,[ \t]*/)
            for (i = 1; i <= n; i++) { gsub(/[ \t]/, "", w[i]); if (w[i] != "") print w[i] }
            if (last) exit
        }' "$1"
}

pages=0
links=0
for f in man[1-9]/*.[1-9]; do
    [ -f "$f" ] || continue
    target=$(link_target "$f")
    if [ -n "$target" ]; then
        links=$((links + 1))
        nlines=$(grep -cv '^\.\\"' "$f")
        if [ "$nlines" -ne 1 ]; then
            fail "$f: a link page must hold only its .so line"
        fi
        if [ ! -f "$target" ]; then
            fail "$f: .so target $target does not exist"
            continue
        fi
        if [ -n "$(link_target "$target")" ]; then
            fail "$f: .so target $target is itself a link"
        fi
    else
        pages=$((pages + 1))
    fi

    if [ "$have_groff" = yes ]; then
        for dev in "" -Tutf8; do
            # shellcheck disable=SC2086
            out=$(groff -man -ww -z $dev "$f" 2>&1)
            rc=$?
            if [ $rc -ne 0 ] || [ -n "$out" ]; then
                fail "$f: groff -man -ww -z $dev (status $rc):"
                printf '%s\n' "$out" | sed 's/^/    /'
            fi
        done
    fi
    if grep -n '[ 	]$' "$f" >"$tmp/ws"; then
        fail "$f: trailing whitespace:"
        sed 's/^/    line /' "$tmp/ws"
    fi
    if [ -z "$target" ] && [ "$have_mandoc" = yes ]; then
        out=$(mandoc -T lint -W warning "$f" 2>&1)
        rc=$?
        if [ $rc -ne 0 ] || [ -n "$out" ]; then
            fail "$f: mandoc -T lint -W warning (status $rc):"
            printf '%s\n' "$out" | sed 's/^/    /'
        fi
    fi

    if [ -z "$target" ]; then
        dir=${f%%/*}
        sec=${f##*.}
        names=$(page_names "$f")
        if [ -z "$names" ]; then
            fail "$f: no names found in its NAME section"
        fi
        for n in $names; do
            nf="$dir/$n.$sec"
            if [ "$nf" = "$f" ]; then
                continue
            elif [ ! -f "$nf" ]; then
                fail "$f: NAME lists $n but $nf does not exist"
            elif [ "$(link_target "$nf")" != "$f" ]; then
                fail "$f: NAME lists $n but $nf is not a link to $f"
            fi
        done
    fi
done

if [ "$pages" -eq 0 ]; then
    fail "no man pages found under $mandir"
fi

# ------------------------------------------------------------ header sync

# Collapse whitespace, and drop it after '(' and before ')' and ','.
normalise() {
    sed -e 's/[ 	][ 	]*/ /g' -e 's/^ //' -e 's/ $//' \
        -e 's/( /(/g' -e 's/ )/)/g' -e 's/ ,/,/g'
}

# The declarations of a rendered page's SYNOPSIS, one per line, normalised:
# function prototypes and function pointer typedefs (no '=', no '#', no
# enum), each ending in ')'.
synopsis_decls() {
    awk '
        /^SYNOPSIS[ \t]*$/ { on = 1; next }
        on && /^[A-Z]/ { exit }
        on { printf "%s ", $0 }' "$1" |
        sed -e 's/#include[ 	]*<[^>]*>//g' | tr ';' '\n' | normalise |
        grep -E '^[A-Za-z_][A-Za-z0-9_ *]*\(.*\)$' | grep -v -e '=' -e '^enum' || true
}

if [ -z "$header" ]; then
    echo "$me: note: include/rdlock.h not found: header checks skipped"
elif [ "$have_groff" = no ]; then
    echo "$me: note: groff not installed: header checks skipped"
else
    # Header declarations, one per line, without RDLOCK_API and ';'.
    awk '
        /^RDLOCK_API[ \t]/ { buf = ""; on = 1 }
        /^typedef[ \t].*\(\*/ { buf = ""; on = 1 }
        on {
            buf = buf " " $0
            if ($0 ~ /;/) { sub(/;.*/, "", buf); sub(/^[ \t]*RDLOCK_API[ \t]+/, "", buf); sub(/^[ \t]*/, "", buf); print buf; on = 0 }
        }' "$header" | normalise >"$tmp/header"
    if [ ! -s "$tmp/header" ]; then
        fail "$header: no declarations found"
    fi

    : >"$tmp/all"
    for f in man3/*.3; do
        [ -n "$(link_target "$f")" ] && continue
        b=$(basename "$f" .3)
        groff -man -Tascii -P-cbou "$f" 2>/dev/null >"$tmp/$b.txt"
        synopsis_decls "$tmp/$b.txt" >"$tmp/$b.decl"
        sed "s|^|$f	|" "$tmp/$b.decl" >>"$tmp/all"
    done

    while IFS= read -r decl; do
        case $decl in
        typedef*)
            if ! cut -f2 "$tmp/all" | grep -Fqx -- "$decl"; then
                fail "no SYNOPSIS shows the header's: $decl"
            fi
            ;;
        *)
            fn=$(printf '%s\n' "$decl" | sed 's/(.*//; s/.*[ *]//')
            page=man3/$fn.3
            if [ ! -f "$page" ]; then
                fail "$fn has no man page ($page)"
                continue
            fi
            t=$(link_target "$page")
            [ -n "$t" ] && page=$t
            b=$(basename "$page" .3)
            if [ ! -f "$tmp/$b.decl" ] || ! grep -Fqx -- "$decl" "$tmp/$b.decl"; then
                fail "$page: SYNOPSIS does not show the header's: $decl"
            fi
            ;;
        esac
    done <"$tmp/header"

    while IFS='	' read -r f decl; do
        if ! grep -Fqx -- "$decl" "$tmp/header"; then
            fail "$f: SYNOPSIS shows a declaration that rdlock.h does not have: $decl"
        fi
    done <"$tmp/all"
fi

if [ "$failed" -ne 0 ]; then
    echo "$me: problems found in $mandir"
    exit 1
fi
echo "$me: $pages pages and $links links in $mandir are clean" \
    "(groff: $have_groff, mandoc: $have_mandoc${header:+, synopses match $header})"
exit 0
