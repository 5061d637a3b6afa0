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
# inside must be 0 where a hit reuses a given-back context or copies a
# context that holds no fetched algorithm (HMAC, CMAC, AES-GCM, AES-OCB,
# and GMAC's and KMAC's own contexts), and no more than the default's
# where the default's own dupctx and freectx reference the template's
# ciphers (AES-SIV).
set -euo pipefail

build=${1:?usage: $0 <build-dir>}
src=$(cd "$(dirname "$0")/.." && pwd)
for tool in valgrind python3 objcopy; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: no $tool"
        exit 0
    fi
done

# scenario and whether keycache's inside refcount calls must be 0
# (one per family: each scenario costs four valgrind runs)
cases="qmac-sha256:0 macnew-cmac-aes256:0 gcm256-enc-prefetch:0
aeadnew-ocb-aes128:0 macnew-gmac-aes256:0 macnew-kmac128:0
aeadnew-siv-aes128:le"
scen=""
for c in $cases; do scen="$scen ${c%%:*}"; done

# keycache-test.cnf: every family on (GCM too on 3.5+), admit_after = 1
out=$(ITERS1=20 ITERS2=40 SIZES=32 KC_CONF="$build/keycache-test.cnf" \
      bash "$src/bench/callgrind.sh" "$build" $scen)
echo "$out"
fail=0
for c in $cases; do
    name=${c%%:*}
    rule=${c#*:}
    # columns: ... B/A, A in, A out, B in, B out (each locks+refs)
    row=$(awk -v n="$name" '$1 == n' <<<"$out")
    read -r -a f <<<"$row"
    if [ "${#f[@]}" -ne 11 ]; then
        echo "FAIL $name: no row with shared-state columns"
        fail=1
        continue
    fi
    ain=${f[7]} aout=${f[8]} bin=${f[9]} bout=${f[10]}
    if [ "${bin%+*}" != 0 ]; then
        echo "FAIL $name: keycache takes ${bin%+*} locks/op inside the providers"
        fail=1
    fi
    if [ "$bout" != "$aout" ]; then
        echo "FAIL $name: outside the providers keycache $bout, default $aout"
        fail=1
    fi
    if [ "$rule" = 0 ] && [ "${bin#*+}" != 0 ]; then
        echo "FAIL $name: keycache makes ${bin#*+} refcount calls/op inside"
        fail=1
    fi
    if [ "$rule" = le ] && ! awk -v b="${bin#*+}" -v a="${ain#*+}" \
            'BEGIN { exit !(b <= a) }'; then
        echo "FAIL $name: keycache ${bin#*+} refcount calls/op inside, default ${ain#*+}"
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "PASS"
exit $fail
