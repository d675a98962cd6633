#!/bin/sh
# run-bench.sh BINARY [ARGS...] - run the librdlock benchmark.
#
# BINARY is bench/rdlock-bench (or its libtool wrapper); ARGS are passed
# through (--quick, --json-only, --cold-script-cache, --cluster,
# --no-redlock, --no-prims, --no-million, --watchdog-only, --tls-only,
# --cost-only, --no-names).  The benchmark
# starts its own redis-server ($REDIS_SERVER, else redis-server on PATH,
# /usr/bin, /usr/sbin), for step 8 (unless --no-redlock) five more for
# the Redlock quorums, and with --cluster a
# 3-master Redis Cluster (redis-cli: $REDIS_CLI, else beside
# $REDIS_SERVER, else on PATH).
# Steps 6 and 7 run redis-benchmark for their floors ($REDIS_BENCHMARK,
# else beside $REDIS_SERVER, else on PATH).  Exits with the benchmark's
# status: 0, or 1 on a hard error (mutual exclusion violated, a lock call
# failed, a child crashed).  Missed performance targets are reported in the
# output, not in the status.
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 BINARY [--quick] [--json-only] [--cold-script-cache] [--cluster] [--no-redlock] [--no-prims] [--no-million] [--watchdog-only] [--tls-only] [--cost-only] [--no-names]" >&2
    exit 64
fi
bin=$1
shift
case $bin in
*/*) ;;
*) [ -f "$bin" ] && bin=./$bin ;;
esac
if [ ! -x "$bin" ]; then
    echo "run-bench.sh: $bin: not found or not executable (build it: make bench/rdlock-bench)" >&2
    exit 66
fi
exec "$bin" "$@"
