#!/bin/sh
# Every int-returning internal function of src/*/*.h (and every int hook of
# a struct there) lists the codes it returns, or says what else its int is
# (tests/check-codes.py says what counts).
srcdir=${srcdir:-.}
command -v python3 >/dev/null || { echo "check-codes.sh: python3 is missing" >&2; exit 1; }
exec python3 "$srcdir/tests/check-codes.py" "$srcdir/src"
