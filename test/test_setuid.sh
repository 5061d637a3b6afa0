#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_setuid.sh <build-dir>
#
# A set-uid program run by another user: the environment is the caller's,
# so OPENSSL_CONF (libcrypto reads it with its safe getenv) may not take
# effect: the caller cannot make the program load keycache, nor so have it
# write debug lines to a file of the caller's choosing.  (Where the
# machine's own openssl.cnf loads keycache, KEYCACHE_DEBUG is read with
# secure_getenv and ignored there too: not covered here, as that needs the
# machine's config changed.)  The same binary without the set-uid bit, as a
# control, does both.  Needs root (to make a set-uid root copy) and
# setpriv; skipped (77) otherwise.
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
[ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null \
    || { echo "SKIP: needs root and setpriv"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; shift; printf '       %s\n' "$@"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "got:  $2" "want: $3"; fi; }

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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
