#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The documented deployment config (openssl.cnf.sample) must work as
# shipped, once its module line points at the built module, and so must the
# build tree's openssl.cnf (what OPENSSL_CONF=build/openssl.cnf gives):
# both providers active, HMAC served by keycache, AES-GCM wrapped by
# keycache on OpenSSL 3.0 and not elsewhere (aes_gcm = auto), results equal
# to default's.
set -euo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() {
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "ok   $1"
    else fail=$((fail + 1)); echo "FAIL $1: '$2' != '$3'"; fi
}

sed "s#^module = keycache.so#module = $build/keycache.so#" \
    "$src/openssl.cnf.sample" > "$tmp/keycache.cnf"
grep -q "^module = $build/keycache.so" "$tmp/keycache.cnf" \
    || { echo "FAIL: sample has no 'module = keycache.so' line"; exit 1; }
# aes_gcm = auto wraps AES-GCM on 3.0 only; from 3.5 "auto" offers no
# cipher at all (EVP_SKEY: one cipher offered means all passed through,
# docs/families.md), so AES-OCB and -SIV, on before, are listed for the
# default alone there too.
case "$(openssl version)" in
"OpenSSL 3.0."*) gcm_by_keycache=1 ciphers_listed=1 ;;
"OpenSSL 3."[1-4].*) gcm_by_keycache=0 ciphers_listed=1 ;;
*) gcm_by_keycache=0 ciphers_listed=0 ;;
esac
[ "$gcm_by_keycache" = 1 ] && gcm_state=on || gcm_state=off
printf 'what do ya want for nothing?' > "$tmp/msg"

# The sample as shipped, and the build's own openssl.cnf (both aes_gcm = auto).
for conf in "$tmp/keycache.cnf" "$build/openssl.cnf"; do
    export OPENSSL_CONF="$conf"
    n=$(basename "$conf")
    check "$n: both providers active" \
        "$(openssl list -providers | grep -c 'status: active')" 2
    check "$n: HMAC served by keycache" \
        "$(openssl list -mac-algorithms | grep -c 'HMAC @ keycache')" 1
    check "$n: AES-256-GCM wrapped by keycache: $gcm_by_keycache (aes_gcm = auto)" \
        "$(KEYCACHE_DEBUG=1 openssl list -providers 2>&1 >/dev/null \
           | grep -c " aes_gcm=$gcm_state ")" 1
    check "$n: AES-256-GCM listed for keycache: $gcm_by_keycache" \
        "$(openssl list -cipher-algorithms | grep -c 'aes-256-gcm.*@ keycache')" \
        "$gcm_by_keycache"
    check "$n: KEYCACHE_DEBUG says why from 3.5: $((1 - ciphers_listed))" \
        "$(KEYCACHE_DEBUG=1 openssl list -providers 2>&1 >/dev/null \
           | grep -c 'auto leaves cmac, aes_ocb and aes_siv off')" \
        "$((1 - ciphers_listed))"
    check "$n: AES-128-SIV, AES-256-OCB listed for keycache: $ciphers_listed" \
        "$(openssl list -cipher-algorithms \
           | grep -ci 'aes-\(128-siv\|256-ocb\).*@ keycache')" \
        "$((2 * ciphers_listed))"
    check "$n: AES-256-GCM offered by default" \
        "$(openssl list -cipher-algorithms | grep -c 'aes-256-gcm.*@ default')" 1
    # RFC 4231 test case 2
    check "$n: RFC 4231 case 2" \
        "$(openssl mac -digest SHA256 -macopt key:Jefe -in "$tmp/msg" HMAC)" \
        "5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843"
    check "$n: SHA-512 HMAC equals default's" \
        "$(openssl mac -digest SHA512 -macopt key:k -in "$tmp/msg" HMAC)" \
        "$(OPENSSL_CONF=/dev/null openssl mac -digest SHA512 -macopt key:k -in "$tmp/msg" HMAC)"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
