#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_install.sh <build-dir>
#
# `cmake --install` writes everything under --prefix (and DESTDIR), the
# modules directory follows libcrypto's and can be overridden, and what it
# installs works: the loader keycache.so and the module it starts,
# keycache-ossl<major>.so, beside it (both stripped in Release builds), the
# header under
# include/keycache/, the three configs with the installed module path, the
# man page (renders without warnings), docs (their links resolving), license
# and copyright, and the
# systemd drop-in example, whose environment (as systemd parses it, when
# systemd-analyze is there) gives a service keycache and its reports.
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/kc_check.sh"

moddir_sys=$(pkg-config --variable=modulesdir libcrypto)
prefix_sys=$(pkg-config --variable=prefix libcrypto)
moddir_rel=${moddir_sys#"$prefix_sys"/}
buildtype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
printf 'what do ya want for nothing?' > "$tmp/msg"
rfc4231_2=5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843
# this build's module, which the loader keycache.so starts
real=keycache-ossl$(pkg-config --modversion libcrypto | cut -d. -f1).so

# What is in the system's modules directory and /usr/share now, to see
# that no install below touches it.
sys_state() {
    ls -la --time-style=full-iso "$moddir_sys" 2>&1
    ls -d /usr/share/keycache /usr/include/keycache 2>&1
}
sys_state > "$tmp/sys.before"

# Files under $1 and the install manifest of build tree $3 (default: the
# tested one) with DESTDIR $2 in front (the manifest leaves it out), both
# sorted: must be the same.
same_as_manifest() {
    find "$1" -type f | sort > "$tmp/found"
    sed "s#^#${2:-}#" "${3:-$build}/install_manifest.txt" | sort > "$tmp/manifest"
    cmp -s "$tmp/found" "$tmp/manifest"
}

# ---- 1. --prefix --------------------------------------------------------
P=$tmp/prefix
cmake --install "$build" --prefix "$P" > "$tmp/log" 2>&1 \
    || bad "cmake --install --prefix" "$(cat "$tmp/log")"
outside=$(grep -v "^$P/" "$build/install_manifest.txt" || true)
check "--prefix: nothing installed outside the prefix" "$outside" ""
same_as_manifest "$P" && ok "--prefix: the files are the manifest's" \
    || bad "--prefix: the files are the manifest's" "$(diff "$tmp/found" "$tmp/manifest")"
for f in "$moddir_rel/keycache.so" "$moddir_rel/$real" \
         "share/doc/${real%.so}/copyright" include/keycache/keycache.h \
         share/keycache/keycache.cnf share/keycache/keycache-system.cnf \
         share/keycache/keycache-include.cnf share/man/man7/provider-keycache.7 \
         share/doc/keycache/README.md share/doc/keycache/LICENSE \
         share/doc/keycache/copyright share/doc/keycache/docs/deployment.md \
         share/doc/keycache/docs/architecture.md \
         share/doc/keycache/docs/families.md \
         share/doc/keycache/examples/keycache-systemd.conf; do
    [ -s "$P/$f" ] && ok "--prefix: $f" || bad "--prefix: $f missing"
done
cmp -s "$src/LICENSE" "$P/share/doc/keycache/LICENSE" && ok "LICENSE is the source's" \
    || bad "LICENSE is the source's"
grep -q "^License: Apache-2.0" "$P/share/doc/keycache/copyright" \
    && ok "copyright: machine-readable, Apache-2.0" || bad "copyright: Apache-2.0"
# every relative link in the installed Markdown finds its file, as in the
# source tree (README's docs/..., docs' ../bench/README.md)
unlinked=$(cd "$P/share/doc/keycache" && for md in $(find . -name '*.md'); do
    grep -o '](\([^)#:]*\)[#)]' "$md" | sed 's/^](//; s/[#)]$//' \
        | while read -r to; do
            [ -z "$to" ] || [ -e "$(dirname "$md")/$to" ] || echo "$md -> $to"
        done
done)
check "docs: every relative link resolves where installed" "$unlinked" ""
mod=$P/$moddir_rel/keycache.so
check "keycache.cnf names the installed module" \
    "$(grep '^module' "$P/share/keycache/keycache.cnf")" "module = $mod"
check "keycache-include.cnf names the installed module" \
    "$(grep '^module' "$P/share/keycache/keycache-include.cnf")" "module = $mod"
check "keycache-system.cnf includes the include file" \
    "$(grep -c "^.include $P/share/keycache/keycache-include.cnf$" \
        "$P/share/keycache/keycache-system.cnf")" 1
case "$buildtype" in
Release|MinSizeRel)
    for m in "$mod" "$P/$moddir_rel/$real"; do
        check "$buildtype: installed $(basename "$m") is stripped" \
            "$(readelf -S "$m" | grep -c '\.symtab')" 0
    done ;;
*)
    for m in keycache.so "$real"; do
        cmp -s "$build/$m" "$P/$moddir_rel/$m" && ok "$buildtype: installed $m is the built one" \
            || bad "$buildtype: installed $m is the built one"
    done ;;
esac
# the loader runs in programs of any OpenSSL major version: no libcrypto
check "the loader links no libcrypto" \
    "$(readelf -d "$mod" | grep NEEDED | grep -c 'libcrypto\|libssl')" 0

# ---- 2. the installed configs work -------------------------------------
# served_by CONF: providers active, HMAC right and reached by a query-less
# fetch (level 2 says so at exit)
served_by() {
    local conf=$1 name=$2
    OPENSSL_CONF=$conf openssl list -providers > "$tmp/out" 2>&1
    check "$name: keycache active" "$(grep -c '^  keycache$' "$tmp/out")" 1
    check "$name: default active" "$(grep -c '^  default$' "$tmp/out")" 1
    OPENSSL_CONF=$conf KEYCACHE_DEBUG=level:2 openssl mac -digest SHA256 \
        -macopt key:Jefe -in "$tmp/msg" HMAC > "$tmp/out" 2> "$tmp/err"
    check "$name: RFC 4231 case 2" "$(cat "$tmp/out")" "$rfc4231_2"
    check "$name: HMAC served by keycache" \
        "$(grep -c 'routing: a query-less HMAC fetch reaches keycache' "$tmp/err")" 1
    check "$name: no warning, no error" "$(grep -c 'warning\|error' "$tmp/err")" 0
}
served_by "$P/share/keycache/keycache.cnf" keycache.cnf
served_by "$P/share/keycache/keycache-system.cnf" keycache-system.cnf
# the machine-wide route, on a copy of the system's openssl.cnf; a config
# that names no openssl_init section (none here) would not take it
if [ -f /usr/lib/ssl/openssl.cnf ]; then
    cp /usr/lib/ssl/openssl.cnf "$tmp/system.cnf"
    echo ".include $P/share/keycache/keycache-include.cnf" >> "$tmp/system.cnf"
    served_by "$tmp/system.cnf" "system openssl.cnf + .include"
    # roll back: the line removed, keycache is gone
    sed -i '$d' "$tmp/system.cnf"
    OPENSSL_CONF=$tmp/system.cnf openssl list -providers > "$tmp/out" 2>&1
    check "rolled back: keycache not loaded" "$(grep -c '^  keycache$' "$tmp/out")" 0
fi

# ---- 3. the man page ----------------------------------------------------
# (groff-base is in the README's dependency lines; compat.sh's chroots
# lack it, and skip this part)
if ! command -v groff > /dev/null; then
    echo "skip man page checks: no groff"
elif groff -man -Tutf8 -ww -z "$P/share/man/man7/provider-keycache.7" > "$tmp/out" 2>&1 \
   && [ ! -s "$tmp/out" ]; then
    ok "man page renders without warnings"
else
    bad "man page renders without warnings" "$(cat "$tmp/out")"
fi
if command -v groff > /dev/null; then
    groff -man -Tascii "$P/share/man/man7/provider-keycache.7" 2> /dev/null \
        | sed 's/.\x08//g' > "$tmp/man.txt"
    for key in cache_size hmac aes_gcm idle_ttl admit_after KEYCACHE_DEBUG \
               OPENSSL_CONF keycache-hits keycache-misses keycache-evictions \
               keycache-passthrough prefer VERIFYING LIMITS; do
        grep -q "^ *$key\b" "$tmp/man.txt" && ok "man page: $key" \
            || bad "man page: $key"
    done
fi

# ---- 4. the systemd drop-in ---------------------------------------------
# systemd's own parse of the example, when systemd-analyze is there; the
# program then runs as a service would: only those variables, no terminal,
# working directory /, stderr (the journal) to a file
dropin=$P/share/doc/keycache/examples/keycache-systemd.conf
if command -v systemd-analyze > /dev/null; then
    mkdir -p "$tmp/unit/kc-test.service.d"
    printf '[Service]\nType=oneshot\nExecStart=/usr/bin/true\n' \
        > "$tmp/unit/kc-test.service"
    cp "$dropin" "$tmp/unit/kc-test.service.d/keycache.conf"
    SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --man=no \
        "$tmp/unit/kc-test.service" 2>&1 \
        | sed -n 's/^[[:space:]]*Environment: //p' > "$tmp/env"
    how="parsed by systemd-analyze"
else
    sed -n 's/^Environment=//p' "$dropin" > "$tmp/env"
    how="Environment= lines"
fi
check "drop-in ($how): two variables" "$(wc -l < "$tmp/env")" 2
# the example names the /usr install; point it at this prefix
mapfile -t env < <(sed "s#/usr/share/keycache#$P/share/keycache#" "$tmp/env")
(cd / && env -i PATH=/usr/bin:/bin "${env[@]}" openssl mac -digest SHA256 \
    -macopt key:Jefe -in "$tmp/msg" HMAC < /dev/null > "$tmp/out" 2> "$tmp/journal")
check "drop-in: RFC 4231 case 2" "$(cat "$tmp/out")" "$rfc4231_2"
check "drop-in: start line in the journal" \
    "$(grep -c 'keycache\[[0-9]*\]: start: keycache' "$tmp/journal")" 1
check "drop-in: exit report in the journal" \
    "$(grep -c 'report (exit): all hits=0 misses=0 passthrough=1' "$tmp/journal")" 1

# ---- 5. DESTDIR, with a system prefix -----------------------------------
D=$tmp/destdir
DESTDIR=$D cmake --install "$build" --prefix "$prefix_sys" > "$tmp/log" 2>&1 \
    || bad "DESTDIR install" "$(cat "$tmp/log")"
outside=$(grep -v "^$prefix_sys/" "$build/install_manifest.txt" || true)
check "DESTDIR: everything under the prefix" "$outside" ""
same_as_manifest "$D" "$D" && ok "DESTDIR: the files are the manifest's" \
    || bad "DESTDIR: the files are the manifest's" "$(diff "$tmp/found" "$tmp/manifest")"
[ -s "$D$moddir_sys/keycache.so" ] && [ -s "$D$moddir_sys/$real" ] \
    && ok "DESTDIR: loader and module in libcrypto's modules directory" \
    || bad "DESTDIR: loader and module in $D$moddir_sys"
check "DESTDIR: in libcrypto's directory the config names the module by name" \
    "$(grep '^module' "$D$prefix_sys/share/keycache/keycache.cnf")" "module = keycache.so"

# ---- 6. KEYCACHE_MODULESDIR, documented override -------------------------
# a build tree of the module alone, configured with the override
B=$tmp/build-override
if cmake -S "$src" -B "$B" -DBUILD_TESTING=OFF -DKEYCACHE_MODULESDIR=lib/kc-modules \
        -DCMAKE_BUILD_TYPE=Release > "$tmp/log" 2>&1 \
   && cmake --build "$B" -j2 --target keycache >> "$tmp/log" 2>&1 \
   && cmake --install "$B" --prefix "$tmp/p2" >> "$tmp/log" 2>&1; then
    [ -s "$tmp/p2/lib/kc-modules/keycache.so" ] && ok "override: relative directory under the prefix" \
        || bad "override: relative directory under the prefix"
    check "override: config names it" \
        "$(grep '^module' "$tmp/p2/share/keycache/keycache.cnf")" \
        "module = $tmp/p2/lib/kc-modules/keycache.so"
    for m in keycache.so "$real"; do
        check "Release: installed $m is stripped" \
            "$(readelf -S "$tmp/p2/lib/kc-modules/$m" | grep -c '\.symtab')" 0
    done
    OPENSSL_CONF=$tmp/p2/share/keycache/keycache.cnf openssl list -providers > "$tmp/out" 2>&1
    check "override: keycache active" "$(grep -c '^  keycache$' "$tmp/out")" 1
    cmake -S "$src" -B "$B" -DKEYCACHE_MODULESDIR=/opt/kc/modules > "$tmp/log" 2>&1 \
        && DESTDIR=$tmp/d2 cmake --install "$B" --prefix "$tmp/p3" >> "$tmp/log" 2>&1
    [ -s "$tmp/d2/opt/kc/modules/keycache.so" ] && ok "override: absolute directory, under DESTDIR" \
        || bad "override: absolute directory, under DESTDIR" "$(cat "$tmp/log")"
    same_as_manifest "$tmp/d2" "$tmp/d2" "$B" && ok "override: all under DESTDIR" \
        || bad "override: all under DESTDIR" "$(diff "$tmp/found" "$tmp/manifest")"
    [ ! -e /opt/kc ] && ok "override: /opt/kc not created" || bad "override: /opt/kc created"
else
    bad "override build" "$(tail -20 "$tmp/log")"
fi

sys_state > "$tmp/sys.after"
cmp -s "$tmp/sys.before" "$tmp/sys.after" && ok "system directories untouched" \
    || bad "system directories untouched" "$(diff "$tmp/sys.before" "$tmp/sys.after")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
