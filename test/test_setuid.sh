#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_setuid.sh <build-dir>
#
# A set-uid program run by another user: the environment is the caller's.
#  1. OPENSSL_CONF is read by libcrypto with its safe getenv: the caller
#     cannot make the program load keycache (openssl, set-uid root).
#  2. A program that loads its own configuration (kc_setuid, set-uid root)
#     does load keycache, and KEYCACHE_DEBUG, read with secure_getenv,
#     must still not make it write to a file of the caller's choosing.
#  3. Its argv[0], also the caller's, must not be opened (a FIFO there
#     would hang it; origin.c looks at the main program by link map).
# The same binaries without the set-uid bit are the controls.  Needs root
# (to make set-uid root copies) and setpriv; skipped (77) otherwise.
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
[ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null \
    || { echo "SKIP: needs root and setpriv"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
. "$(dirname "$0")/kc_check.sh"

# the modules and a config beside them, readable by anyone
major=$(openssl version | sed 's/^OpenSSL \([0-9]*\).*/\1/')
cp "$build/keycache.so" "$build/keycache-ossl$major.so" "$tmp/"
sed "s#^module = .*#module = $tmp/keycache.so#" "$build/openssl.cnf" > "$tmp/kc.cnf"
cp "$(command -v openssl)" "$tmp/openssl-plain"
cp "$(command -v openssl)" "$tmp/openssl-suid"
chown root:root "$tmp/openssl-suid"
chmod 4755 "$tmp/openssl-suid"
mkdir "$tmp/user" && chown nobody "$tmp/user"

as_nobody() {  # program log
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env OPENSSL_CONF="$tmp/kc.cnf" KEYCACHE_DEBUG="file:$2,level:2" \
        "$1" list -providers 2>&1
}
out=$(as_nobody "$tmp/openssl-plain" "$tmp/user/plain.log")
check "control (no set-uid bit): keycache listed" \
    "$(grep -c '^  keycache$' <<< "$out")" 1
check "control: debug lines written" "$([ -s "$tmp/user/plain.log" ] && echo yes)" yes
out=$(as_nobody "$tmp/openssl-suid" "$tmp/user/suid.log")
check "set-uid: runs" "$?" 0
check "set-uid: OPENSSL_CONF ignored, keycache not loaded" \
    "$(grep -c '^  keycache$' <<< "$out")" 0
check "set-uid: KEYCACHE_DEBUG ignored, no file written" \
    "$([ -e "$tmp/user/suid.log" ] && echo written || echo none)" none

# 2. and 3.: a program that loads keycache from its own configuration
sed "s#^module = .*#module = $tmp/keycache.so#" "$build/keycache-test.cnf" \
    > "$tmp/kc-test.cnf"
cp "$build/test/kc_setuid" "$tmp/kc_setuid-plain"
cp "$build/test/kc_setuid" "$tmp/kc_setuid-suid"
chown root:root "$tmp/kc_setuid-suid"
chmod 4755 "$tmp/kc_setuid-suid"
mkfifo "$tmp/fifo"
chmod 666 "$tmp/fifo"
own_conf() {  # program log [argv0]
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env KEYCACHE_DEBUG="file:$2,level:2" timeout 20 \
        bash -c 'exec -a "$2" "$1" "$3"' _ "$1" "${3:-$1}" "$tmp/kc-test.cnf" 2>&1
}
want=$(OPENSSL_CONF=/dev/null "$build/test/kc_setuid" /dev/null 2>/dev/null | tail -3)
out=$(own_conf "$tmp/kc_setuid-plain" "$tmp/user/own-plain.log")
check "control, own config: keycache available" \
    "$(grep -c '^keycache available: 1$' <<< "$out")" 1
check "control, own config: debug lines written" \
    "$([ -s "$tmp/user/own-plain.log" ] && echo yes)" yes
out=$(own_conf "$tmp/kc_setuid-suid" "$tmp/user/own-suid.log")
check "set-uid, own config: runs" "$?" 0
check "set-uid, own config: keycache available" \
    "$(grep -c '^keycache available: 1$' <<< "$out")" 1
check "set-uid, own config: the default's HMACs" "$(tail -3 <<< "$out")" "$want"
check "set-uid, own config: KEYCACHE_DEBUG ignored, no file written" \
    "$([ -e "$tmp/user/own-suid.log" ] && echo written || echo none)" none
out=$(own_conf "$tmp/kc_setuid-suid" "$tmp/user/fifo-suid.log" "$tmp/fifo")
check "set-uid, argv[0] a FIFO: finishes, HMACs the default's" \
    "$(tail -3 <<< "$out")" "$want"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
