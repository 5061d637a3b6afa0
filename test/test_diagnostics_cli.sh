#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_diagnostics_cli.sh <build-dir>
#
# The operator's view through the unchanged `openssl` command line, for the
# bad configurations of issue 11: OpenSSL leaves keycache out without a
# word (so `openssl list -providers` is the check), KEYCACHE_DEBUG says
# why, a forced load prints a registered reason naming the key and the
# accepted values without build paths, and a config without
# default_properties is flagged.
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/kc_check.sh"
# expect NAME TEXT FILE: FILE contains TEXT (fixed string)
expect() {
    if grep -qF -- "$2" "$3"; then ok "$1"; else bad "$1" "no '$2' in:" "$(cat "$3")"; fi
}
expect_not() {
    if grep -qF -- "$2" "$3"; then bad "$1" "unexpected '$2' in:" "$(cat "$3")"; else ok "$1"; fi
}

# conf NAME SED-EXPR: the build's openssl.cnf edited by a sed expression
conf() { sed -e "$2" "$build/openssl.cnf" > "$tmp/$1.cnf"; echo "$tmp/$1.cnf"; }
active() { grep -c '^  keycache$' "$1" || true; }

# key=value settings that must stop keycache, and what the reason names
cases=(
    "cache_size = 99999|cache_size = \"99999\": want a whole number from 0 to 4096"
    "cache_size = lots|cache_size = \"lots\": want a whole number from 0 to 4096"
    "hmac = maybe|hmac = \"maybe\": want on or off (also yes/no, true/false, 1/0)"
    "aes_gcm = maybe|aes_gcm = \"maybe\": want auto, on or off"
    "idle_ttl = -5|idle_ttl = \"-5\": want seconds, a whole number from 0"
    "admit_after = 17|admit_after = \"17\": want a whole number from 1 to 16"
    "cache_sise = 10|unknown key \"cache_sise\" in keycache's section"
)
for c in "${cases[@]}"; do
    setting=${c%%|*} reason=${c#*|} key=${setting%% *}
    # replace the key's line, or add the unknown key after cache_size
    if grep -q "^$key = " "$build/openssl.cnf"; then
        f=$(conf bad "s/^$key = .*/$setting/")
    else
        f=$(conf bad "s/^cache_size = .*/&\n$setting/")
    fi
    # 1. OpenSSL drops keycache silently: listed without it, exit 0
    OPENSSL_CONF=$f openssl list -providers > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ "$rc" = 0 ] && [ "$(active "$tmp/out")" = 0 ] && [ ! -s "$tmp/err" ] \
        && ok "$setting: dropped silently (rc 0, not listed)" \
        || bad "$setting: dropped silently" "rc=$rc" "$(cat "$tmp/out" "$tmp/err")"
    # 2. KEYCACHE_DEBUG tells why, on stderr by default and in a file
    OPENSSL_CONF=$f KEYCACHE_DEBUG=1 openssl list -providers > /dev/null 2> "$tmp/err"
    expect "$setting: KEYCACHE_DEBUG=1 gives the reason on stderr" "error: $reason" "$tmp/err"
    expect "$setting: and says keycache did not start" "error: keycache did not start" "$tmp/err"
    rm -f "$tmp/log"
    OPENSSL_CONF=$f KEYCACHE_DEBUG="file:$tmp/log,level:1" openssl list -providers > /dev/null 2> "$tmp/err"
    expect "$setting: file: gets the reason" "error: $reason" "$tmp/log"
    [ ! -s "$tmp/err" ] && ok "$setting: nothing on stderr with file:" \
        || bad "$setting: nothing on stderr with file:" "$(cat "$tmp/err")"
    # 3. loaded by hand (section not activated): the error names it
    f=$(sed -e '/^\[keycache_sect\]/,/^\[/ s/^activate = 1$//' "$f" > "$tmp/na.cnf"; echo "$tmp/na.cnf")
    OPENSSL_CONF=$f openssl list -providers -provider keycache -provider default \
        > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ "$rc" != 0 ] && ok "$setting: forced load fails (rc $rc)" \
        || bad "$setting: forced load fails" "rc=$rc"
    grep -F "keycache: $reason" "$tmp/err" > "$tmp/line" || true
    expect "$setting: forced load prints the reason" "keycache: $reason" "$tmp/line"
    expect "$setting: with a registered reason string" \
        ":Provider routines:keycache:invalid config data:" "$tmp/line"
    expect_not "$setting: no unregistered reason" "reason(" "$tmp/line"
    # the file field (after the reason) is a base name
    if grep -qE ':invalid config data:[a-z_]+\.c:[0-9]+:keycache: ' "$tmp/line"; then
        ok "$setting: no build path in the error"
    else
        bad "$setting: no build path in the error" "$(cat "$tmp/line")"
    fi
done

# The documented spellings of booleans load.
for v in on off yes no true false 1 0 ON Off; do
    f=$(conf bool "s/^hmac = .*/hmac = $v/")
    OPENSSL_CONF=$f openssl list -providers > "$tmp/out" 2>&1
    [ "$(active "$tmp/out")" = 1 ] && ok "hmac = $v loads" || bad "hmac = $v loads" "$(cat "$tmp/out")"
done

# Keycache active but unused: flagged at exit, with the properties in force.
f=$(conf noalg '/^alg_section/d; /^default_properties/d')
printf 'what do ya want for nothing?' > "$tmp/msg"
OPENSSL_CONF=$f KEYCACHE_DEBUG=1 openssl mac -digest SHA256 -macopt key:Jefe \
    -in "$tmp/msg" HMAC > "$tmp/out" 2> "$tmp/err"
expect "no alg_section: HMAC still right (RFC 4231 case 2)" \
    5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843 "$tmp/out"
expect "no alg_section: the properties in force are named" \
    'default_properties in force are "", and need ?provider=keycache' "$tmp/err"
expect "no alg_section: flagged at exit" \
    "warning: a query-less HMAC fetch reaches default, not keycache" "$tmp/err"
expect "no alg_section: the report shows nothing served" \
    "report (exit): all hits=0 misses=0 passthrough=0" "$tmp/err"
OPENSSL_CONF=$build/openssl.cnf KEYCACHE_DEBUG=1 openssl mac -digest SHA256 \
    -macopt key:Jefe -in "$tmp/msg" HMAC > "$tmp/out" 2> "$tmp/err"
expect_not "build openssl.cnf: no warning" "warning" "$tmp/err"
expect "build openssl.cnf: start line" "start: keycache" "$tmp/err"
# one keyed init with a new key: served by keycache, not (yet) cached
expect "build openssl.cnf: keycache served the HMAC" \
    "report (exit): all hits=0 misses=0 passthrough=1" "$tmp/err"

# Beyond keycache's reach (documented): a wrong module path and a missing
# OPENSSL_CONF file never load it, so only the provider list shows it.
f=$(conf nomod "s#^module = .*#module = $tmp/nonexistent/keycache.so#")
OPENSSL_CONF=$f KEYCACHE_DEBUG=1 openssl list -providers > "$tmp/out" 2>&1
[ "$(active "$tmp/out")" = 0 ] && ok "wrong module path: not listed" \
    || bad "wrong module path: not listed" "$(cat "$tmp/out")"
OPENSSL_CONF=$tmp/missing.cnf openssl list -providers > "$tmp/out" 2>&1
[ "$(active "$tmp/out")" = 0 ] && ok "missing OPENSSL_CONF file: not listed" \
    || bad "missing OPENSSL_CONF file: not listed" "$(cat "$tmp/out")"

# The loader's lines (before the module's) read KEYCACHE_DEBUG as the
# module does: a file: path of any length is the file's or nobody's, never
# stderr's; a level the module refuses (3) or reads (02) is read so too.
# (A module the loader cannot load shows its "not started" line.)
f=$(conf nosib "s#^module = .*#module = $tmp/kc/keycache.so#")
mkdir -p "$tmp/kc" && cp "$build/keycache.so" "$tmp/kc/"
long=$tmp/$(printf 'd%.0s' $(seq 1 200))/$(printf 'e%.0s' $(seq 1 200))
mkdir -p "$long"
OPENSSL_CONF=$f KEYCACHE_DEBUG="file:$long/$(printf 'f%.0s' $(seq 1 150)).log" \
    openssl list -providers > /dev/null 2> "$tmp/err"
expect_not "a long file: path: the loader writes nothing on stderr" \
    "not started" "$tmp/err"
OPENSSL_CONF=$f KEYCACHE_DEBUG=level:3 openssl list -providers > /dev/null \
    2> "$tmp/err"
expect "level:3: the loader's line at level 1 still" "not started" "$tmp/err"
OPENSSL_CONF=$build/openssl.cnf KEYCACHE_DEBUG=level:3 openssl list \
    -providers > /dev/null 2> "$tmp/err"
expect_not "level:3: refused, no loader line of level 2" "loader:" "$tmp/err"
OPENSSL_CONF=$build/openssl.cnf KEYCACHE_DEBUG=level:02 openssl list \
    -providers > /dev/null 2> "$tmp/err"
expect "level:02: the loader's line of level 2" "loader: OpenSSL" "$tmp/err"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
