#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# keycache's hit paths take no process-wide lock and add no shared-state
# operation the default's arm does not have, for every family: the
# shared-state columns of bench/callgrind.sh (call counts, deterministic;
# nothing is timed), over a few ops so that it stays short.
#
#   test_sharedops.sh <build-dir>
#
# Per scenario, keycache's arm must have 0 lock acquisitions inside the
# providers and the same count outside as the default's arm (what the
# application itself does: its fetch, EVP_*_CTX_new/free).  Refcount calls
# inside must be 0: a hit reuses a given-back context or copies one that
# holds no fetched algorithm (HMAC, CMAC, AES-GCM, AES-OCB, and GMAC's,
# KMAC's and AES-SIV's own contexts).
set -euo pipefail

build=${1:?usage: $0 <build-dir>}
src=$(cd "$(dirname "$0")/.." && pwd)
for tool in valgrind python3 objcopy; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: no $tool"
        exit 0
    fi
done

# one scenario per family: each costs four valgrind runs
scen="qmac-sha256 macnew-cmac-aes256 gcm256-enc-prefetch aeadnew-ocb-aes128
macnew-gmac-aes256 macnew-kmac128 aeadnew-siv-aes128"

# keycache-test.cnf: every family on (GCM too on 3.5+), admit_after = 1
out=$(ITERS1=20 ITERS2=40 SIZES=32 KC_CONF="$build/keycache-test.cnf" \
      bash "$src/bench/callgrind.sh" "$build" $scen)
echo "$out"
fail=0
for name in $scen; do
    # columns: ... B/A, A in, A out, B in, B out (each locks+refs)
    row=$(awk -v n="$name" '$1 == n' <<<"$out")
    read -r -a f <<<"$row"
    if [ "${#f[@]}" -ne 11 ]; then
        echo "FAIL $name: no row with shared-state columns"
        fail=1
        continue
    fi
    aout=${f[8]} bin=${f[9]} bout=${f[10]}
    if [ "${bin%+*}" != 0 ]; then
        echo "FAIL $name: keycache takes ${bin%+*} locks/op inside the providers"
        fail=1
    fi
    if [ "$bout" != "$aout" ]; then
        echo "FAIL $name: outside the providers keycache $bout, default $aout"
        fail=1
    fi
    if [ "${bin#*+}" != 0 ]; then
        echo "FAIL $name: keycache makes ${bin#*+} refcount calls/op inside"
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "PASS"
exit $fail
