#!/bin/sh
# run-tests.sh - every Lua script of the library (src/scripts/*.lua) run
# directly against a real server, one case folder at a time:
# tests/scripts/cases/<script>/<case>/ (tests/scripts/README: the format).
#
#     sh tests/scripts/run-tests.sh [SCRIPTS_DIR] [-v] [-1] [CASE...]
#
# SCRIPTS_DIR (the first argument, if it is a directory of *.lua files, else
# $RDL_SCRIPTS_DIR, else src/scripts of this source tree) holds the scripts
# under test: a changed copy of it shows which cases catch the change.
# CASE: "acquire/void-stamp-lapsed", or "acquire" for all of one script;
# none: every case, and then the check that every `return` of every script
# is reached by one (run-cases.py).  -v: show what each case got (for
# writing a new case's expected files); -1: one run only, without the
# coverage run and check (mutate.py).
#
# Starts one private redis-server ($REDIS_SERVER, else redis-server from
# PATH) on a unix socket in a fresh temp dir, with no TCP port and no
# persistence, and stops it by PID on exit; setup lines go through
# redis-cli ($REDIS_CLI, else the one beside redis-server, else from PATH).
# Needs python3.  Prints "ok <case>" or "FAIL <case>" with a diff per
# case; exits 1 if one failed, 77 (skip) if there is no redis-server.
set -u
LC_ALL=C
export LC_ALL

here=$(cd "$(dirname "$0")" && pwd) || exit 99
scripts=
if [ $# -gt 0 ] && [ -d "$1" ] && ls "$1"/*.lua >/dev/null 2>&1; then
    scripts=$1
    shift
fi
[ -n "$scripts" ] || scripts=${RDL_SCRIPTS_DIR:-}
[ -n "$scripts" ] || scripts=$here/../../src/scripts
if ! ls "$scripts"/*.lua >/dev/null 2>&1; then
    echo "run-tests.sh: no scripts in $scripts" >&2
    exit 99
fi

server=${REDIS_SERVER:-}
[ -n "$server" ] || server=$(command -v redis-server 2>/dev/null)
if [ -z "$server" ] || ! command -v "$server" >/dev/null 2>&1; then
    echo "run-tests.sh: no redis-server: skipped" >&2
    exit 77
fi
cli=${REDIS_CLI:-}
if [ -z "$cli" ]; then
    cli=$(dirname "$(command -v "$server")")/redis-cli
    [ -x "$cli" ] || cli=$(command -v redis-cli 2>/dev/null)
fi
if [ -z "$cli" ] || ! command -v "$cli" >/dev/null 2>&1; then
    echo "run-tests.sh: no redis-cli (REDIS_CLI)" >&2
    exit 99
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "run-tests.sh: no python3" >&2
    exit 99
fi

base=${TMPDIR:-/tmp}
[ ${#base} -gt 60 ] && base=/tmp # unix socket paths are short
dir=$(mktemp -d "$base/rdlock-scripts.XXXXXX") || exit 99
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$server" --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" --daemonize no &
pid=$!
i=0
until "$cli" -s "$dir/redis.sock" ping >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
        echo "run-tests.sh: $server did not start" >&2
        cat "$dir/redis.log" >&2
        exit 99
    fi
    sleep 0.05
done

python3 "$here/run-cases.py" "$dir/redis.sock" "$cli" "$scripts" "$here/cases" "$@"
rc=$?
exit $rc
