#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# server_smoke.sh <build-dir> <server>   (ctest test_server_<server>)
#
# A short run of bench/server without load: every arm of the server
# (default provider, keycache with <build-dir>/openssl.cnf and, for
# dn-cookie, the per-thread fix) starts, bench/server/check.py sends each
# the same deterministic requests (cookie chains, altered cookies, the
# other arms' cookies) and requires byte-equal transcripts, and after a
# clean stop keycache's exit report (KEYCACHE_DEBUG=file:) must show hits
# in the keycache arm and no keycache in the others.  Exit 77 (ctest's
# SKIP_RETURN_CODE) when the server's runtime is absent: dotnet for dn-*,
# puma and ActiveSupport for rb-puma.

set -u

BUILD=${1:?usage: server_smoke.sh <build-dir> <server>}
SERVER=${2:?usage: server_smoke.sh <build-dir> <server>}
BUILD=$(cd "$BUILD" && pwd) || exit 2
SRC=$(cd "$(dirname "$0")/.." && pwd) || exit 2
# shellcheck source=../bench/server/common.sh
. "$SRC/bench/server/common.sh"

CONF=$BUILD/openssl.cnf
[ -f "$CONF" ] || { echo "FAIL no $CONF: build the project first" >&2; exit 1; }
kc_server_case "$SERVER" || { echo "FAIL unknown server $SERVER" >&2; exit 1; }
[ "$KC_RUNTIME" != dotnet ] || kc_server_build "$BUILD"
if ! kc_server_have "$KC_RUNTIME"; then
    echo "SKIP $SERVER: $KC_WHY"
    exit 77
fi

TMP=$(mktemp -d) || exit 2
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

fail=
kc_server_up "$SERVER" "$TMP" "$CONF" || fail=1
arms=("${KC_ARMS[@]}")
if [ -z "$fail" ]; then
    if counts=$("$KC_PYTHON" "$SRC/bench/server/check.py" "$SERVER" "$TMP" \
                "${KC_SPECS[@]}"); then
        echo "ok   $SERVER: identical responses ($counts requests)"
    else
        fail=1
    fi
fi
for a in "${arms[@]}"; do
    kc_server_stop "$SERVER" "$(cat "$TMP/$SERVER.$a.pid")"
    h=$(kc_server_counters "$TMP/$SERVER.$a.kc")
    if [ "$a" = kc ]; then
        if [ "$h" = not-loaded ] || [ "${h%% *}" = 0 ]; then
            echo "FAIL $SERVER: keycache had no hits (${h}):" >&2
            cat "$TMP/$SERVER.$a.kc" "$TMP/$SERVER.$a.log" >&2 2>/dev/null
            fail=1
        else
            read -r hh m p <<<"$h"
            echo "ok   $SERVER kc: $hh hits, $m misses, $p pass-through"
        fi
    elif [ "$h" != not-loaded ]; then
        echo "FAIL $SERVER $a: keycache was loaded ($h)" >&2
        fail=1
    fi
done
[ -z "$fail" ]
