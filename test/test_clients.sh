#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test_clients.sh <build-dir>
#
# Real, unchanged clients must give the same bytes with and without keycache.
# Every client case of bench/clients (Ruby's openssl and ActiveSupport,
# Python's hmac and cryptography, PHP, Node, .NET, C) whose runtime is
# installed runs its fixed keys and messages (`CASE test`: several keys and
# message lengths, each key used often enough to be cached, MACs verified
# and forged, GCM sealed, opened and opened with a forged tag) three times:
# with the default provider only (OPENSSL_CONF=/dev/null), with
# <build-dir>/openssl.cnf (as deployed) and with keycache-test.cnf (GCM
# forced on, keys cached from their first use).  stdout and exit status must
# be identical.  So that a comparison cannot pass merely because keycache
# was not there, keycache's counters are read at exit (its KEYCACHE_DEBUG
# report, or with KC_COUNTERS=preload the preloaded kc_counters.so: the
# clients are not changed): keycache must have started, and where it
# serves the client's API (the "gains" column of the case table) it must
# have had hits.  A runtime that is not installed is a SKIP.  A runtime
# linked to another major version of libcrypto than the build's must give
# the default's bytes with keycache refusing to start (KEYCACHE_DEBUG says
# so) instead.  A case with a hand-written fix (kc_clients_fix_table: one
# keyed object reused) also runs its fix variant with the default provider,
# which must print the same bytes as the case itself.

set -u

BUILD=${1:?usage: test_clients.sh <build-dir>}
BUILD=$(cd "$BUILD" && pwd) || exit 2
SRC=$(cd "$(dirname "$0")/.." && pwd) || exit 2
# shellcheck source=../bench/clients/common.sh
. "$SRC/bench/clients/common.sh"

CONF=$BUILD/openssl.cnf
TCONF=$BUILD/keycache-test.cnf
for f in "$CONF" "$TCONF" "$BUILD/keycache.so"; do
    [ -f "$f" ] || { echo "FAIL no $f: build the project first" >&2; exit 1; }
done

TMP=$(mktemp -d) || exit 2
trap 'rm -rf "$TMP"' EXIT

pass=0
fail=0
skip=0

kc_clients_build "$BUILD"
if [ "${KC_COUNTERS:-debug}" = preload ] \
   && [ ! -f "$KC_CLIENTS_BIN/kc_counters.so" ]; then
    echo "FAIL ${KC_COUNTERS_WHY:-kc_counters.so missing}" >&2
    cat "$KC_CLIENTS_BIN/build.log" >&2
    exit 1
fi

# arm NAME CONF CASE: stdout to $TMP/NAME, exit status to $TMP/NAME.rc and,
# unless CONF is /dev/null, keycache's counters to $TMP/NAME.kc
arm()
{
    local name=$1 conf=$2 case=$3

    kc_clients_cmd "$case"
    KC_CENV=()
    [ "$conf" = /dev/null ] || kc_clients_counters_env "$TMP/$name.log"
    env "${KC_CENV[@]}" OPENSSL_CONF="$conf" "${KC_CMD[@]}" test \
        >"$TMP/$name" 2>"$TMP/$name.err"
    echo $? >"$TMP/$name.rc"
    [ "$conf" = /dev/null ] \
        || kc_clients_counters_read "$TMP/$name.log" >"$TMP/$name.kc"
}

# differs A B: why the two arms' results are not identical, or nothing
differs()
{
    local a=$1 b=$2 line

    if [ "$(cat "$TMP/$a.rc")" != "$(cat "$TMP/$b.rc")" ]; then
        echo "exit status $(cat "$TMP/$a.rc") vs $(cat "$TMP/$b.rc")"
    elif ! cmp -s "$TMP/$a" "$TMP/$b"; then
        line=$(cmp "$TMP/$a" "$TMP/$b" | sed -E 's/.* line ([0-9]+).*/\1/')
        echo "stdout differs from line $line:"
        echo "  $a: $(sed -n "${line}p" "$TMP/$a" | cut -c1-160)"
        echo "  $b: $(sed -n "${line}p" "$TMP/$b" | cut -c1-160)"
    fi
}

# hits NAME: keycache's hits in that arm's client process, "not-loaded", or
# "?" when the counters could not be read
hits()
{
    local h

    read -r h _ <"$TMP/$1.kc" 2>/dev/null
    echo "${h:-?}"
}

for case in $(kc_clients_table | awk '{ print $1 }'); do
    kc_clients_case "$case"
    if ! kc_clients_have "$KC_RUNTIME"; then
        echo "SKIP $case: $KC_WHY"
        skip=$((skip + 1))
        continue
    fi
    arm def /dev/null "$case"
    arm kc "$CONF" "$case"
    arm kct "$TCONF" "$case"
    why=
    if [ "$(cat "$TMP/def.rc")" != 0 ] || [ ! -s "$TMP/def" ]; then
        why="the client failed with the default provider"
        why="$why (exit $(cat "$TMP/def.rc")): $(tail -n 3 "$TMP/def.err")"
    fi
    for a in kc kct; do
        d=$(differs def $a)
        [ -z "$d" ] || why="${why:+$why; }$a: $d"
    done
    fixed=
    if kc_clients_fix "$case"; then
        arm fix /dev/null "$KC_FIX"
        d=$(differs def fix)
        [ -z "$d" ] || why="${why:+$why; }$KC_FIX: $d"
        fixed="; $KC_FIX: same bytes"
    fi
    hk=$(hits kc)
    ht=$(hits kct)
    # a runtime linked to another major version of libcrypto than the build
    # (sid's python3 with OpenSSL 3.6 beside a build for 4.0): the loader
    # finds no build for it (or a module its guard), keycache must refuse to
    # start, and the client run on default as above, unharmed
    other=$(grep -ho 'not started: [^;]*' \
            "$TMP/kc.log" "$TMP/kct.log" 2>/dev/null | head -n 1)
    if [ -n "$other" ]; then
        if [ "$hk" != not-loaded ] || [ "$ht" != not-loaded ]; then
            why="${why:+$why; }keycache $other, but it reported counters"
        fi
        if [ -z "$why" ]; then
            pass=$((pass + 1))
            echo "ok   $case ($(wc -l <"$TMP/def") lines; keycache ${other#not started: })"
            continue
        fi
    elif [ "$case" = node-gcm-noflag ]; then
        # without --openssl-shared-config node ignores openssl_conf: keycache
        # is not loaded, and the outputs above are the default's twice
        :
    elif [ "$hk" = not-loaded ] || [ "$hk" = "?" ] \
         || [ "$ht" = not-loaded ] || [ "$ht" = "?" ]; then
        why="${why:+$why; }keycache was not active"
        why="$why (openssl.cnf: $hk, keycache-test.cnf: $ht)"
    elif [ "$KC_GAINS" = 1 ] && [ "$ht" = 0 ]; then
        why="${why:+$why; }keycache served no cached key"
        why="$why (0 hits with keycache-test.cnf)"
    fi
    if [ -n "$why" ]; then
        fail=$((fail + 1))
        echo "FAIL $case: $why" >&2
    else
        pass=$((pass + 1))
        echo "ok   $case ($(wc -l <"$TMP/def") lines;" \
             "hits: openssl.cnf $hk, keycache-test.cnf $ht$fixed)"
    fi
done

echo "clients: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
