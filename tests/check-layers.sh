#!/bin/sh
# No new include cycle in src/ (tests/check-layers.py says how it counts).
srcdir=${srcdir:-.}
command -v python3 >/dev/null || { echo "check-layers.sh: python3 is missing" >&2; exit 1; }
exec python3 "$srcdir/tests/check-layers.py" "$srcdir/src" "$srcdir/tests/layers.known"
