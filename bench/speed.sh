#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `openssl speed` without and with keycache.
#
#   bench/speed.sh <build-dir>
#
# Runs each test under three setups, alternating them round by round
# ($ROUNDS rounds, default 3, of $SECONDS_PER_RUN s, default 1) and reports
# the median:
#   default   OPENSSL_CONF=/dev/null
#   conf      OPENSSL_CONF=<build>/openssl.cnf (default + keycache,
#             default_properties = ?provider=keycache)
#   cli       OPENSSL_CONF=/dev/null plus -provider-path <build>
#             -provider keycache -provider default -propquery ?provider=keycache
#
# What openssl speed 3.0 times (apps/speed.c):
#   -evp aes-256-gcm          one EVP_CIPHER_CTX, keyed once; per op only
#                             EVP_EncryptUpdate
#   -aead -evp aes-256-gcm    one EVP_CIPHER_CTX; per op re-keys with
#                             EVP_CipherInit_ex(key, iv), 13-byte AAD, update,
#                             final, tag
#   -hmac sha256              one EVP_MAC_CTX, keyed once; per op
#                             EVP_MAC_init(NULL key) + update + final
# None of these creates a context per message, so they show keycache's cost
# on already-reused contexts, not the one-shot savings kcbench measures.
set -euo pipefail

build=${1:?usage: $0 <build-dir>}
build=$(cd "$build" && pwd)
conf="$build/openssl.cnf"
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-1}
bytes=256
openssl=${OPENSSL:-openssl}

[ -f "$conf" ] || { echo "no $conf: configure the build first" >&2; exit 2; }
[ -f "$build/keycache.so" ] || { echo "no $build/keycache.so" >&2; exit 2; }

cli_args=(-provider-path "$build" -provider keycache -provider default
          -propquery '?provider=keycache')
setups=(default conf cli)

# run_setup SETUP openssl-subcommand-args... (prints the command's stdout)
run_setup() {
    local setup=$1
    shift
    case $setup in
    default) OPENSSL_CONF=/dev/null "$openssl" "$@" ;;
    conf)    OPENSSL_CONF="$conf" "$openssl" "$@" ;;
    cli)     OPENSSL_CONF=/dev/null "$openssl" "$@" "${cli_args[@]}" ;;
    esac
}

# The providers each setup really activates, so nothing below is claimed
# for a setup in which keycache did not load.
echo "openssl: $("$openssl" version)"
for setup in "${setups[@]}"; do
    provs=$(run_setup "$setup" list -providers 2>/dev/null \
            | awk '/^  [^ ]/ { sub(/^ +/, ""); printf "%s ", $0 }')
    printf '%-8s providers: %s\n' "$setup" "${provs:-(none)}"
    if [ "$setup" != default ] && [[ " $provs" != *" keycache "* ]]; then
        echo "keycache is not active in setup '$setup'; stopping" >&2
        exit 1
    fi
done

# ns/op of one openssl speed run, from its machine-readable +F line
# (bytes per second at the single size).
speed_ns() {
    local setup=$1
    shift
    run_setup "$setup" speed -mr -seconds "$secs" -bytes "$bytes" "$@" \
            2>/dev/null \
        | awk -F: -v n="$bytes" '/^\+F:/ { printf "%.1f", 1e9 * n / $4; exit }'
}

median() {
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2];
              else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

tests=("-evp aes-256-gcm" "-aead -evp aes-256-gcm" "-hmac sha256")

printf '\nopenssl speed, %d-byte blocks, %d x %ss per setup, median ns/op ' \
    "$bytes" "$rounds" "$secs"
printf '(CPU time per op)\n'
printf '%-24s %12s %12s %12s %9s %9s\n' test default conf cli conf/def cli/def
for t in "${tests[@]}"; do
    declare -A vals=()
    for ((r = 0; r < rounds; r++)); do
        for setup in "${setups[@]}"; do
            # shellcheck disable=SC2086  # $t is a word list on purpose
            v=$(speed_ns "$setup" $t)
            if [ -z "$v" ]; then
                echo "openssl speed $t failed in setup '$setup'" >&2
                exit 1
            fi
            vals[$setup]+="$v "
        done
    done
    d=$(tr ' ' '\n' <<<"${vals[default]}" | grep . | median)
    c=$(tr ' ' '\n' <<<"${vals[conf]}" | grep . | median)
    l=$(tr ' ' '\n' <<<"${vals[cli]}" | grep . | median)
    awk -v t="$t" -v d="$d" -v c="$c" -v l="$l" 'BEGIN {
        printf "%-24s %12.1f %12.1f %12.1f %8.2fx %8.2fx\n",
               t, d, c, l, c / d, l / d }'
    unset vals
done
