#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_fips_include.sh <build-dir>
#
# The machine-wide include (docs/keycache-include.cnf), appended as the
# last line of a host's openssl.cnf, never weakens the default_properties
# that host has in force: with fips=yes (no FIPS module needed to see it)
# FIPS mode stays on and query-less HMAC and AES-256-GCM fetches (and, from
# 3.5, EVP_SKEY key managers) are still refused; custom properties stay as they are; KEYCACHE_DEBUG says what is
# in force and that keycache is unused.  On a host without default_properties
# keycache still serves query-less fetches.
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
props=$build/test/kc_props
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/kc_check.sh"
has() { if grep -qF -- "$2" "$3"; then ok "$1"; else bad "$1" "no \"$2\" in:" "$(cat "$3")"; fi; }
hasnt() { if grep -qF -- "$2" "$3"; then bad "$1" "\"$2\" in:" "$(cat "$3")"; else ok "$1"; fi; }
[ -x "$props" ] || { echo "FAIL: $props not built"; exit 1; }

# the documented include, with the build tree's module
sed "s#^module = keycache.so#module = $build/keycache.so#" \
    "$src/docs/keycache-include.cnf" > "$tmp/keycache-include.cnf"
grep -q "^module = $build/keycache.so" "$tmp/keycache-include.cnf" \
    || { echo "FAIL: the include has no 'module = keycache.so' line"; exit 1; }

# host CONF-NAME ALG-LINES: a host openssl.cnf with the default provider
# and, when ALG-LINES is not empty, an alg_section holding them; then the
# include appended as its last line, as docs/deployment.md says
host() {
    local f=$tmp/$1.cnf
    {
        echo "openssl_conf = openssl_init"
        echo "[openssl_init]"
        echo "providers = host_providers"
        [ -n "$2" ] && echo "alg_section = host_algorithms"
        echo "[host_providers]"
        echo "default = host_default"
        echo "[host_default]"
        echo "activate = 1"
        [ -n "$2" ] && printf '[host_algorithms]\n%s\n' "$2"
        echo ".include $tmp/keycache-include.cnf"
    } > "$f"
    echo "$f"
}
# run CONF LEVEL: kc_props under CONF, KEYCACHE_DEBUG=level:LEVEL to err
run() {
    OPENSSL_CONF=$1 KEYCACHE_DEBUG=level:$2 "$props" > "$tmp/out" 2> "$tmp/err"
    cat "$tmp/out"
}
loaded() {
    OPENSSL_CONF=$1 openssl list -providers 2>&1 | grep -c '^  keycache$'
}

# What a query-less AES-256-GCM fetch reaches where keycache is preferred
# (the families = auto): its wrapper on 3.0; the default on 3.1 to 3.4; from
# 3.5 the default too, for "auto" offers no cipher there (an EVP_SKEY key
# and its cipher must share a provider, so one cipher offered means all
# passed through: docs/families.md), and CMAC (whose isolation from the
# default's AES-SIV needs a cipher offered) stays off.  kc_props also
# reports the provider of a query-less AES key manager there (skey=).
skey=0 cmac=1
case "$(openssl version)" in
"OpenSSL 3.0."*) gcm=keycache ;;
"OpenSSL 3."[1-4].*) gcm=default ;;
*) gcm=default skey=1 cmac=0 ;;
esac
# want FIPS HMAC GCM SKEY: kc_props's line
want() {
    if [ "$skey" = 1 ]; then
        echo "fips=$1 hmac=$2 gcm=$3 skey=$4"
    else
        echo "fips=$1 hmac=$2 gcm=$3"
    fi
}

# ---- a FIPS host: default_properties = fips=yes ---------------------------
f=$(host fips "default_properties = fips=yes")
check "fips=yes + include: FIPS mode stays on, query-less fetches refused" \
    "$(run "$f" 1)" "$(want 1 refused refused refused)"
check "fips=yes + include: keycache is loaded (and unused)" "$(loaded "$f")" 1
has "fips=yes + include: KEYCACHE_DEBUG says what is in force at start" \
    'prefer = if_unset: default_properties = "fips=yes" are in force (FIPS mode on); keycache leaves them as they are and, having no FIPS implementations, will not be used' "$tmp/err"
has "fips=yes + include: KEYCACHE_DEBUG says HMAC is refused, at exit" \
    'a query-less HMAC fetch reaches nothing, not keycache: default_properties in force are "fips=yes", FIPS mode is on' "$tmp/err"
if [ "$cmac" = 1 ]; then
    has "fips=yes + include: the same for CMAC" \
        'a query-less CMAC fetch reaches nothing, not keycache' "$tmp/err"
else
    hasnt "fips=yes + include: CMAC not offered, not checked" \
        'query-less CMAC fetch' "$tmp/err"
fi
# keycache offers AES-256-GCM (and checks its route) where aes_gcm = auto is on
if [ "$gcm" = keycache ]; then
    has "fips=yes + include: the same for AES-256-GCM" \
        'a query-less AES-256-GCM fetch reaches nothing, not keycache' "$tmp/err"
fi
hasnt "fips=yes + include: nothing claims keycache is reached" \
    'reaches keycache' "$tmp/err"
run "$f" 2 > /dev/null
has "fips=yes + include: level 2 shows the properties when keycache starts" \
    'default_properties in force when keycache starts: "fips=yes"' "$tmp/err"
hasnt "fips=yes + include: keycache sets nothing" \
    'set default_properties' "$tmp/err"

# the deprecated spelling merges fips=yes into the properties
f=$(host fipsmode "fips_mode = yes")
check "fips_mode = yes + include: FIPS mode stays on" \
    "$(run "$f" 1)" "$(want 1 refused refused refused)"

# Debian's own openssl.cnf, made a FIPS host by reopening [openssl_init]
if [ -f /usr/lib/ssl/openssl.cnf ]; then
    f=$tmp/debian-fips.cnf
    {
        cat /usr/lib/ssl/openssl.cnf
        printf '[openssl_init]\nalg_section = host_fips\n'
        printf '[host_fips]\ndefault_properties = fips=yes\n'
        echo ".include $tmp/keycache-include.cnf"
    } > "$f"
    check "Debian openssl.cnf, fips=yes + include: FIPS mode stays on" \
        "$(run "$f" 1)" "$(want 1 refused refused refused)"
fi

# ---- custom properties stay as they are ----------------------------------
f=$(host custom "default_properties = ?provider=default")
check "?provider=default + include: fetches still prefer default" \
    "$(run "$f" 2)" "$(want 0 default default default)"
has "?provider=default + include: KEYCACHE_DEBUG says what is in force" \
    'default_properties in force are "?provider=default"' "$tmp/err"
has "?provider=default + include: and that keycache left them alone" \
    'prefer = if_unset: default_properties = "?provider=default" are in force; keycache leaves them as they are' "$tmp/err"
f=$(host mandatory "default_properties = provider=default")
check "provider=default + include: fetches still go to default" \
    "$(run "$f" 1)" "$(want 0 default default default)"

# the host's own properties preferring keycache, as docs/deployment.md
# says to do by hand: kept, and keycache serves
f=$(host byhand "default_properties = ?provider=keycache,-fips")
check "?provider=keycache,-fips + include: keycache serves, FIPS off as set" \
    "$(run "$f" 2)" "$(want 0 keycache "$gcm" default)"
has "?provider=keycache,-fips + include: left as they are" \
    'already prefer keycache; left as they are' "$tmp/err"
hasnt "?provider=keycache,-fips + include: no warning" 'warning' "$tmp/err"

# ---- no default_properties: keycache serves query-less fetches ------------
f=$(host plain "")
check "no alg_section + include: keycache serves query-less fetches" \
    "$(run "$f" 2)" "$(want 0 keycache "$gcm" default)"
has "no alg_section + include: keycache set ?provider=keycache" \
    'no default_properties were in force; set default_properties = ?provider=keycache' "$tmp/err"
has "no alg_section + include: the exit check agrees" \
    'routing: a query-less HMAC fetch reaches keycache (default_properties in force: "?provider=keycache")' "$tmp/err"
hasnt "no alg_section + include: no warning" 'warning' "$tmp/err"
# an alg_section with nothing in it sets nothing either
f=$(host empty "# nothing here")
check "empty alg_section + include: keycache serves query-less fetches" \
    "$(run "$f" 1)" "$(want 0 keycache "$gcm" default)"

# ---- prefer takes if_unset or off, never on ------------------------------
for v in on yes bogus; do
    sed "s/^prefer = .*/prefer = $v/" "$tmp/keycache-include.cnf" > "$tmp/inc-$v.cnf"
    printf 'openssl_conf = openssl_init\n[openssl_init]\n.include %s\n' \
        "$tmp/inc-$v.cnf" > "$tmp/prefer-$v.cnf"
    check "prefer = $v: keycache does not start" "$(loaded "$tmp/prefer-$v.cnf")" 0
    OPENSSL_CONF=$tmp/prefer-$v.cnf KEYCACHE_DEBUG=1 openssl list -providers \
        > /dev/null 2> "$tmp/err"
    has "prefer = $v: KEYCACHE_DEBUG says why" \
        "error: prefer = \"$v\": want if_unset or off" "$tmp/err"
done
sed "s/^prefer = .*/prefer = off/" "$tmp/keycache-include.cnf" > "$tmp/inc-off.cnf"
printf 'openssl_conf = openssl_init\n[openssl_init]\n.include %s\n' \
    "$tmp/inc-off.cnf" > "$tmp/prefer-off.cnf"
check "prefer = off: keycache loaded, query-less fetches reach default" \
    "$(run "$tmp/prefer-off.cnf" 1)" "$(want 0 default default default)"

# ---- keycache under another name in the providers section --------------
# Its algorithms carry provider=keycache whatever the section calls it (as
# the default's carry provider=default): prefer = if_unset asks for that.
sed 's/^keycache = keycache_include_sect$/kcache = keycache_include_sect/' \
    "$tmp/keycache-include.cnf" > "$tmp/inc-renamed.cnf"
grep -q '^kcache = ' "$tmp/inc-renamed.cnf" \
    || { echo "FAIL: the include names keycache otherwise"; exit 1; }
printf 'openssl_conf = openssl_init\n[openssl_init]\n.include %s\n' \
    "$tmp/inc-renamed.cnf" > "$tmp/renamed.cnf"
check "keycache named kcache: it serves query-less fetches" \
    "$(run "$tmp/renamed.cnf" 2)" "$(want 0 kcache "${gcm/keycache/kcache}" default)"
has "keycache named kcache: prefer = if_unset asks for its algorithms' property" \
    'set default_properties = ?provider=keycache' "$tmp/err"
hasnt "keycache named kcache: no warning" 'warning' "$tmp/err"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
