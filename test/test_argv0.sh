#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_argv0.sh <build-dir>
#
# A program's argv[0] is its caller's choice.  When keycache admits a key
# keyed from the main program, it asks whether that code is libssl's; the
# main program must then be looked at through its link map, never opened by
# the name dladdr() gives for it (argv[0]): a FIFO there would hang the
# program, and a set-uid one would open whatever the caller named.  The
# openssl command line keys its MAC from main, and keycache-test.cnf admits
# at the first use.
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/kc_check.sh"

printf 'what do ya want for nothing?' > "$tmp/msg"
mkfifo "$tmp/fifo"
mac() {  # argv0
    ( exec -a "$1" openssl mac -digest SHA256 -macopt key:Jefe \
          -in "$tmp/msg" HMAC ) 2> "$tmp/err"
}
want=$(OPENSSL_CONF=/dev/null mac openssl)
for name in "$tmp/fifo" fifo-on-the-path "$tmp/no-such-file"; do
    got=$(OPENSSL_CONF=$build/keycache-test.cnf KEYCACHE_DEBUG=level:1 \
          timeout 20 bash -c "$(declare -f mac); tmp=$tmp; mac '$name'")
    rc=$?
    check "argv[0] = $name: finishes (no hang)" "$rc" 0
    check "argv[0] = $name: the default's MAC" "$(head -1 <<< "$got")" "$want"
    check "argv[0] = $name: keycache served it" \
        "$(grep -c 'HMAC hits=0 misses=1' "$tmp/err")" 1
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
