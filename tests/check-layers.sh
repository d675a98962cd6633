#!/bin/sh
# No include cycle in src/, the tool or the benchmark, and src/'s layers
# are folders whose includes point down (tests/check-layers.py says how it
# counts; tests/layers.known lists the cycles of src/ not yet broken: none;
# tests/layers.order lists the folders bottom-up).
srcdir=${srcdir:-.}
command -v python3 >/dev/null || { echo "check-layers.sh: python3 is missing" >&2; exit 1; }
rc=0
python3 "$srcdir/tests/check-layers.py" "$srcdir/src" "$srcdir/tests/layers.known" "$srcdir/tests/layers.order" || rc=1
for d in tools/rdlock bench; do
    python3 "$srcdir/tests/check-layers.py" "$srcdir/$d" /dev/null || rc=1
done
exit $rc
