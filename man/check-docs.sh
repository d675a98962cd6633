#!/bin/sh
# check-docs.sh - check that librdlock's documentation names only what the
# code has, and everything the reader is told to find.
#
#   sh man/check-docs.sh [SRCDIR]
#
# SRCDIR is the top of the source tree: the argument, else $top_srcdir (as
# `make check` sets it), else the parent of this script's directory.  It is
# only read, never written (make distcheck runs this on a read-only source
# tree).  check-man.sh checks the pages' form and that every exported
# function has a man3 page; this script checks what they say against:
#
#   - rdlock(7), the overview, names every function include/rdlock.h
#     exports (RDLOCK_API) in its SEE ALSO section, so that a reader who
#     starts there finds each one;
#   - every reference to one of librdlock's pages, rdsomething(N) or
#     RDSOMETHING(N), in any page, names a page that man/ has;
#   - the configuration keys: rdlock.ini(5) (its KEYS section: each
#     `.TP` + `.B key` under a `.SS [section]`) documents exactly the keys
#     the loader knows (src/base/config_keys.c, its keydefs table), no more, no
#     fewer; conf/rdlock.ini, the sample that docs/CONTRACT.md section 3
#     promises "with a comment on every key", has every key; and every man
#     page, docs/CONTRACT.md and conf/rdlock.ini name only keys that
#     rdlock.ini(5) documents, in whichever of the forms they use:
#       [section] key                 prose: the pages rendered to text,
#                                     CONTRACT.md without its backquotes,
#                                     the comments of conf/rdlock.ini
#       key [= value] in the [section] section   (or "of the")
#       section:key                   as the loader's messages write it
#       | `[section]` | `key`, ... |  the key table of CONTRACT.md; an empty
#                                     first cell continues the section above
#       key = value, ; key = value    the settings of conf/rdlock.ini, and
#                                     those it shows commented out
#     In the prose forms a word counts as a key when it has an underscore
#     or is the name of some key of any section: "[redlock] section" is
#     English, "[lock] enabled" a key in the wrong section.
#
# Exit status: 0 all good, 1 a problem (each one printed), 77 (automake's
# SKIP) when neither groff nor mandoc is installed to render the pages.
set -u
# Byte ranges in the patterns ([a-z]) and one collation for sort and comm.
LC_ALL=C
export LC_ALL

me=check-docs
if [ $# -gt 1 ]; then
    echo "usage: $0 [SRCDIR]" >&2
    exit 2
fi
if [ $# -eq 1 ]; then
    top=$1
elif [ -n "${top_srcdir:-}" ]; then
    top=$top_srcdir
else
    top=$(dirname "$0")/..
fi
top=$(cd "$top" && pwd) || exit 1
mandir=$top/man
header=$top/include/rdlock.h
# The file of the loader that holds its table of keys (keydefs): named
# once, for the messages too.
keytable=src/base/config_keys.c
config=$top/$keytable
contract=$top/docs/CONTRACT.md
sample=$top/conf/rdlock.ini
inipage=$mandir/man5/rdlock.ini.5
overview=$mandir/man7/rdlock.7
for f in "$header" "$config" "$contract" "$sample" "$inipage" "$overview"; do
    if [ ! -f "$f" ]; then
        echo "$me: $f not found (give the top of the source tree)" >&2
        exit 1
    fi
done

# Pages are read as text, as a reader sees them: the source has a word
# split over macros (.BR "[redis] password" ,) and keys in font escapes.
# A very long line keeps groff from breaking (and hyphenating) lines.
bs=$(printf '\b')
if command -v groff >/dev/null 2>&1; then
    render() { groff -man -Tascii -P-cbou -rLL=20000n "$1" 2>/dev/null; }
elif command -v mandoc >/dev/null 2>&1; then
    render() { mandoc -T ascii -O width=1000 "$1" 2>/dev/null | sed "s/.$bs//g"; }
else
    echo "$me: SKIP: neither groff nor mandoc is installed"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

failed=0
fail() {
    echo "$me: FAIL: $*"
    failed=1
}

# A link page is one `.so` line; its target is checked instead.
is_link() {
    sed -n '/^\.\\"/d; /^\.so[ 	]/{p; q;}; q' "$1" | grep -q .
}

# ------------------------------------------------------------ rdlock(7)

# The exported functions: each RDLOCK_API declaration names its function
# on the same line, just before the '('.
awk '/^RDLOCK_API[ \t]/ {
        l = $0; sub(/\(.*/, "", l); n = split(l, w, /[ \t*]+/); print w[n]
    }' "$header" | sort -u >"$tmp/exported"
if [ ! -s "$tmp/exported" ]; then
    fail "$header: no RDLOCK_API functions found"
fi

# The NAME (3) references of rdlock(7)'s SEE ALSO section.
awk '/^\.SH/ { on = ($0 ~ /^\.SH[ \t]+"?SEE ALSO"?[ \t]*$/); next }
    on {
        t = $0
        while (match(t, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(3\)/)) {
            r = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
            sub(/[ \t]*\(3\)$/, "", r); print r
        }
    }' "$overview" | sort -u >"$tmp/seealso"
comm -23 "$tmp/exported" "$tmp/seealso" | while IFS= read -r fn; do
    echo "man/man7/rdlock.7: SEE ALSO does not name $fn(3), which include/rdlock.h exports"
done >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
    failed=1
    sed "s/^/$me: FAIL: /" "$tmp/missing"
fi

# ------------------------------------------------------------ the pages as text

: >"$tmp/pages"
for f in "$mandir"/man[1-9]/*.[1-9]; do
    [ -f "$f" ] || continue
    is_link "$f" && continue
    rel=${f#"$top"/}
    out=$tmp/text.$(printf '%s' "$rel" | tr '/' '_')
    # One line: a key and its section may sit on two lines of the text.
    render "$f" | tr '\n\t' '  ' | tr -s ' ' >"$out"
    echo >>"$out"
    if [ "$(wc -c <"$out")" -lt 10 ]; then
        fail "$rel: renders to nothing"
        continue
    fi
    printf '%s\t%s\n' "$rel" "$out" >>"$tmp/pages"
done

# References to librdlock's own pages (not the page's own title, which
# its header and footer show in capitals).
while IFS='	' read -r rel out; do
    self=$(basename "$rel" | sed 's/\.\([1-9]\)$/(\1)/')
    awk -v rel="$rel" -v self="$self" '{
        t = $0
        while (match(t, /[A-Za-z0-9_.]+\([1-9]\)/)) {
            r = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
            if (r !~ /^(rd|RD)/ || toupper(r) == toupper(self)) continue
            s = r; sub(/.*\(/, "", s); sub(/\)$/, "", s)
            n = r; sub(/\(.*/, "", n)
            print rel "\t" n "\t" s
        }
    }' "$out"
done <"$tmp/pages" | sort -u >"$tmp/refs"
while IFS='	' read -r rel n s; do
    [ -f "$mandir/man$s/$n.$s" ] || fail "$rel: refers to $n($s), which man/man$s/ does not have"
done <"$tmp/refs"

# ------------------------------------------------------------ ini keys

# What the loader knows: the keydefs table, { "section", "key", ... }.
awk '/keydefs\[\][ \t]*=[ \t]*\{/ { on = 1; next }
    on && /^\};/ { exit }
    on && match($0, /\{[ \t]*"[a-z_]+",[ \t]*"[a-z0-9_]+"/) {
        e = substr($0, RSTART, RLENGTH); gsub(/[{" \t]/, "", e); sub(/,/, " ", e); print e
    }' "$config" | sort -u >"$tmp/loader"
[ -s "$tmp/loader" ] || fail "$keytable: no keys found in its keydefs table"

# What rdlock.ini(5) documents: each .TP whose tag is `.B key`, under
# `.SS [section]` of the KEYS section.
awk '/^\.SH/ { on = ($0 ~ /^\.SH[ \t]+"?KEYS"?[ \t]*$/); sec = ""; tp = 0; next }
    !on { next }
    /^\.SS/ { sec = ""; if (match($0, /\[[a-z_]+\]/)) sec = substr($0, RSTART + 1, RLENGTH - 2); next }
    /^\.TP/ { tp = 1; next }
    tp {
        tp = 0
        if (sec != "" && $0 ~ /^\.B[ \t]+[a-z][a-z0-9_]*[ \t]*$/) {
            k = $0; sub(/^\.B[ \t]+/, "", k); sub(/[ \t]+$/, "", k); print sec " " k
        }
    }' "$inipage" | sort -u >"$tmp/documented"
[ -s "$tmp/documented" ] || fail "man/man5/rdlock.ini.5: no keys found in its KEYS section"

comm -23 "$tmp/documented" "$tmp/loader" | while read -r sec key; do
    echo "man/man5/rdlock.ini.5 documents [$sec] $key, which the loader ($keytable, keydefs) does not know"
done >"$tmp/p1"
comm -13 "$tmp/documented" "$tmp/loader" | while read -r sec key; do
    echo "the loader ($keytable, keydefs) knows [$sec] $key, which man/man5/rdlock.ini.5 does not document"
done >>"$tmp/p1"
if [ -s "$tmp/p1" ]; then
    failed=1
    sed "s/^/$me: FAIL: /" "$tmp/p1"
fi

# Every key name, of any section, and every section: what tells a key
# from an English word in the prose forms.
cat "$tmp/loader" "$tmp/documented" | cut -d' ' -f2 | sort -u >"$tmp/keynames"
cat "$tmp/loader" "$tmp/documented" | cut -d' ' -f1 | sort -u >"$tmp/sections"

# conf/rdlock.ini: its settings and commented-out settings, by section
# (form E), and its comments as prose, one run of comment lines a line.
awk '/^\[[a-z_]+\]/ { sec = $0; sub(/^\[/, "", sec); sub(/\].*/, "", sec); print "\n" > prose; next }
    /^[a-z][a-z0-9_]*[ \t]*=/ || /^;[ \t]*[a-z][a-z0-9_]*[ \t]*=([ \t]|$)/ {
        k = $0; sub(/^;[ \t]*/, "", k); sub(/[ \t]*=.*/, "", k)
        print sec " " k > settings
        print "\n" > prose
        next
    }
    /^;/ { t = $0; sub(/^;[ \t]*/, "", t); printf "%s ", t > prose; next }
    { print "\n" > prose }' settings="$tmp/sample.settings" prose="$tmp/sample.prose" "$sample"
sort -u "$tmp/sample.settings" >"$tmp/sample.keys"
comm -13 "$tmp/sample.keys" "$tmp/loader" | while read -r sec key; do
    echo "conf/rdlock.ini has no [$sec] $key (set or commented out), though it is the sample of every key"
done >"$tmp/p2"
if [ -s "$tmp/p2" ]; then
    failed=1
    sed "s/^/$me: FAIL: /" "$tmp/p2"
fi

# docs/CONTRACT.md as prose (one line, without backquotes), and its key
# table (form D).
tr -d '`' <"$contract" | tr '\n\t' '  ' | tr -s ' ' >"$tmp/contract.prose"
echo >>"$tmp/contract.prose"
awk '/^\|[ \t]*section[ \t]*\|[ \t]*key[ \t]*\|/ { on = 1; next }
    on && !/^\|/ { on = 0 }
    on {
        n = split($0, c, "|")
        if (n < 3 || c[2] ~ /^[ \t:-]*$/ && c[3] ~ /^[ \t:-]*$/) next
        if (match(c[2], /\[[a-z_]+\]/)) sec = substr(c[2], RSTART + 1, RLENGTH - 2)
        t = c[3]
        while (match(t, /`[a-z][a-z0-9_]*`/)) {
            print sec " " substr(t, RSTART + 1, RLENGTH - 2); t = substr(t, RSTART + RLENGTH)
        }
    }' "$contract" >"$tmp/contract.table"
[ -s "$tmp/contract.table" ] || fail "docs/CONTRACT.md: its table of keys (| section | key | ...) not found"

# The prose forms A, B and C of every text, as "file<TAB>section key".
scan() { # FILE-LABEL TEXT-FILE
    awk -v rel="$1" -v keyfile="$tmp/keynames" -v secfile="$tmp/sections" '
        BEGIN {
            while ((getline k <keyfile) > 0) iskey[k] = 1
            while ((getline s <secfile) > 0) issec[s] = 1
        }
        function key_like(k) { return k ~ /_/ || (k in iskey) }
        {
            t = $0       # A: [section] key
            while (match(t, /\[[a-z][a-z_]*\] +[a-z][a-z0-9_]*/)) {
                m = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
                p = index(m, "]"); sec = substr(m, 2, p - 2)
                k = substr(m, p + 1); sub(/^ +/, "", k)
                if (key_like(k)) print rel "\t" sec " " k
            }
            t = $0       # B: key [= value] in/of the [section] section
            while (match(t, /[a-z][a-z0-9_]*( += +[^ ]+)? +(in|of) +the +\[[a-z][a-z_]*\] +section/)) {
                m = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
                k = m; sub(/[^a-z0-9_].*/, "", k)
                sec = m; sub(/^.*\[/, "", sec); sub(/\].*/, "", sec)
                if (key_like(k)) print rel "\t" sec " " k
            }
            t = $0       # C: section:key, for a section that exists
            while (match(t, /[a-z]+:[a-z][a-z0-9_]*/)) {
                m = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
                p = index(m, ":"); sec = substr(m, 1, p - 1); k = substr(m, p + 1)
                if (sec in issec) print rel "\t" sec " " k
            }
        }' "$2"
}

{
    while IFS='	' read -r rel out; do
        scan "$rel" "$out"
    done <"$tmp/pages"
    scan docs/CONTRACT.md "$tmp/contract.prose"
    sed 's|^|docs/CONTRACT.md	|' "$tmp/contract.table"
    scan conf/rdlock.ini "$tmp/sample.prose"
    sed 's|^|conf/rdlock.ini	|' "$tmp/sample.settings"
} | sort -u >"$tmp/named"
[ -s "$tmp/named" ] || fail "no key named anywhere: the scan is broken"

while IFS='	' read -r rel pair; do
    if ! grep -Fqx -- "$pair" "$tmp/documented"; then
        sec=${pair%% *}
        fail "$rel names [$sec] ${pair#* }, which man/man5/rdlock.ini.5 does not document"
    fi
done <"$tmp/named"

if [ "$failed" -ne 0 ]; then
    echo "$me: problems found in $top"
    exit 1
fi
echo "$me: $(wc -l <"$tmp/exported") exported functions in rdlock(7)'s SEE ALSO;" \
    "$(wc -l <"$tmp/loader") ini keys documented as the loader has them;" \
    "$(cut -f2 "$tmp/named" | sort -u | wc -l) keys named in $(wc -l <"$tmp/pages") pages," \
    "CONTRACT.md and conf/rdlock.ini, all documented"
exit 0
