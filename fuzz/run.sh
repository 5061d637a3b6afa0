#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Run the differential fuzzer for a bounded time.
#
#   fuzz/run.sh <build-dir> <seconds> [libFuzzer options...]
#
# e.g. fuzz/run.sh /tmp/fuzz-build 120
#      fuzz/run.sh /tmp/fuzz-build 0 -runs=10000000     (0 = no time limit)
#
# The committed seeds (fuzz/corpus) are read, never written: new inputs go to
# <build-dir>/fuzz/corpus-work, crash/divergence inputs (with their op trace
# in the log) to <build-dir>/fuzz/artifacts.  Exits non-zero on a divergence,
# a crash or a sanitizer report, and prints the number of executions.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 <build-dir> <seconds> [libFuzzer options...]" >&2
    exit 2
fi
build=$(cd "$1" && pwd) || exit 2
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/fuzz/fuzz_diff"
if [ ! -x "$bin" ]; then
    echo "$bin not found: configure with -DCMAKE_C_COMPILER=clang" \
         "-DKEYCACHE_FUZZ=ON and build" >&2
    exit 2
fi

work="$build/fuzz/corpus-work"
art="$build/fuzz/artifacts"
log="$build/fuzz/run-$(date +%Y%m%d-%H%M%S).log"
mkdir -p "$work" "$art"
before=$(ls "$art" | wc -l)

# OPENSSL_CONF: nothing but our own library contexts may load providers.
# -rss_limit_mb: ASan's quarantine and the per-input threads need headroom.
OPENSSL_CONF=/dev/null "$bin" \
    -max_total_time="$secs" -max_len=1024 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$art/" \
    "$@" "$work" "$here/corpus" >"$log" 2>&1
rc=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
after=$(ls "$art" | wc -l)
echo "fuzz_diff: ${execs:-?} executions, ${rate:-?} exec/s, exit $rc, log $log"
if [ "$rc" -ne 0 ] || [ "$after" -ne "$before" ] \
   || grep -q "DIVERGENCE\|ERROR: AddressSanitizer\|runtime error:" "$log"; then
    grep -m1 -B2 -A60 "op trace\|ERROR: AddressSanitizer\|runtime error:" \
        "$log" >&2
    echo "fuzz_diff: FAILED (artifacts in $art)" >&2
    [ "$rc" -ne 0 ] && exit "$rc"
    exit 1
fi
echo "fuzz_diff: no divergence"
