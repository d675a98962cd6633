#!/bin/sh
# No new function over 100 lines, no new file over 1,000 (tests/check-size.py).
srcdir=${srcdir:-.}
command -v python3 >/dev/null || { echo "check-size.sh: python3 is missing" >&2; exit 1; }
exec python3 "$srcdir/tests/check-size.py" "$srcdir" "$srcdir/tests/size.known"
