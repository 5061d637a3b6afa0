#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_private_libcrypto.sh <build-dir>
#
# A program that carries its own libcrypto (kc_private: libcrypto.a linked
# in) and reads a config that activates keycache: loading keycache pulls
# the system's libcrypto.so in beside the program's copy.  keycache must
# refuse to start, say why, and leave the program exactly as it is with
# the default provider alone - also with KEYCACHE_DEBUG, which once
# handed the private copy's library context to the shared one at exit.
#
# KC_PRIVATE_FOREIGN may name a second such program, linked against another
# release's libcrypto.a (tools/compat.sh passes the host's 3.0 one to the
# 3.5 and 4.0 chroots): keycache refuses it too, for whichever reason.
set -uo pipefail
KC_PRIVATE_FOREIGN=${KC_PRIVATE_FOREIGN:-}
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
prog=$build/test/kc_private
[ -x "$prog" ] || prog=
[ -n "$prog$KC_PRIVATE_FOREIGN" ] \
    || { echo "SKIP: no $build/test/kc_private (no usable libcrypto.a)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/kc_check.sh"

# the default provider alone: keycache's lines dropped from the same config
sed -e '/^keycache *=/d' -e '/^default_properties/d' "$build/openssl.cnf" \
    > "$tmp/default.cnf"
grep -q '^keycache *=' "$build/openssl.cnf" \
    || { echo "FAIL: $build/openssl.cnf names no keycache section"; exit 1; }

# private PROGRAM WHY: PROGRAM under keycache's config as with default alone
private() {
    local prog=$1 why=$2 dbg rc what
    OPENSSL_CONF=$tmp/default.cnf "$prog" > "$tmp/def.out" 2> "$tmp/def.err"
    check "$prog, default alone: runs" "$?" 0
    echo "   $(head -1 "$tmp/def.out")"
    for dbg in "" 1 level:2; do
        OPENSSL_CONF=$build/openssl.cnf KEYCACHE_DEBUG=$dbg "$prog" \
            > "$tmp/kc.out" 2> "$tmp/kc.err"
        rc=$?
        what="$(basename "$prog"), KEYCACHE_DEBUG='$dbg'"
        check "$what: exit status 0" "$rc" 0
        if cmp -s "$tmp/def.out" "$tmp/kc.out"; then
            ok "$what: every step and output as with the default alone"
        else
            bad "$what: every step and output as with the default alone" \
                "$(diff "$tmp/def.out" "$tmp/kc.out" | head -8)"
        fi
        check "$what: keycache not available" \
            "$(grep -c '^keycache available: 0$' "$tmp/kc.out")" 1
        if [ -n "$dbg" ]; then
            check "$what: says why" "$(grep -c "$why" "$tmp/kc.err")" 1
            echo "   $(grep -m1 'not started' "$tmp/kc.err")"
            check "$what: no start line" \
                "$(grep -c 'start: keycache' "$tmp/kc.err")" 0
        fi
    done
}

[ -n "$prog" ] && private "$prog" 'not started: the OpenSSL .* that loaded keycache is not the libcrypto keycache is linked to'
if [ -n "${KC_PRIVATE_FOREIGN:-}" ]; then
    private "$KC_PRIVATE_FOREIGN" 'not started: '
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
