#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_loader.sh <build-dir>
#
# The loader keycache.so, through the unchanged `openssl` command line:
# it links no libcrypto and uses none of its symbols; beside the build for
# the host's major version it starts that build (KEYCACHE_DEBUG says which)
# and the HMAC is the default provider's; alone, or beside a file that is
# not a keycache build, it does not start, says why, and the program runs
# on default with the default's output.  (Two major versions on one host:
# tools/mixed-host.sh.)
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/kc_check.sh"

major=$(openssl version | sed 's/^OpenSSL \([0-9]*\).*/\1/')
real=keycache-ossl$major.so
loader=$build/keycache.so
[ -e "$build/$real" ] || { echo "FAIL no $build/$real: build first"; exit 1; }

check "loader: no libcrypto or libssl in DT_NEEDED" \
    "$(readelf -d "$loader" | grep NEEDED | grep -c 'libcrypto\|libssl')" 0
check "loader: no OpenSSL symbol used" \
    "$(nm -D --undefined-only "$loader" | grep -cE ' (OSSL|OPENSSL|EVP|ERR|CRYPTO|BIO)_')" 0
check "loader: exports OSSL_provider_init alone" \
    "$(nm -D --defined-only "$loader" | awk '$2 == "T" {print $3}')" OSSL_provider_init
# libgcc's unwinder is opened at the first admission (cache/origin.c): as a
# dependency every process loading keycache would map and bind it
check "$real: no libgcc_s in DT_NEEDED, no unwinder symbol used" \
    "$(readelf -d "$build/$real" | grep NEEDED | grep -c libgcc_s)$(nm -D --undefined-only "$build/$real" | grep -c _Unwind_)" 00

printf 'what do ya want for nothing?' > "$tmp/msg"
mac() { openssl mac -digest SHA256 -macopt key:Jefe -in "$tmp/msg" HMAC; }
OPENSSL_CONF=/dev/null mac > "$tmp/def.out" 2> "$tmp/def.err"
check "default provider: HMAC computed" "$?" 0

# layout DIR FILE...: DIR holds the loader and FILEs (copied from the build),
# and a config naming DIR/keycache.so
layout() {
    local d=$tmp/$1 f
    shift
    mkdir -p "$d"
    cp "$loader" "$d/keycache.so"
    for f in "$@"; do cp "$build/$f" "$d/"; done
    sed "s#^module = .*#module = $d/keycache.so#" "$build/openssl.cnf" > "$d/openssl.cnf"
}
run() {
    OPENSSL_CONF=$tmp/$1/openssl.cnf KEYCACHE_DEBUG=level:2 mac > "$tmp/kc.out" 2> "$tmp/kc.err"
    echo $? > "$tmp/kc.rc"
}
same_as_default() {
    check "$1: exit status as default's" "$(cat "$tmp/kc.rc")" 0
    cmp -s "$tmp/def.out" "$tmp/kc.out" && ok "$1: output as default's" \
        || bad "$1: output as default's" "$(cat "$tmp/kc.out" "$tmp/kc.err")"
}

# 1. beside its build: started, and says which
layout with "$real"
run with
same_as_default "beside $real"
check "beside $real: the loader says which build it starts" \
    "$(count "loader: OpenSSL $(openssl version | cut -d' ' -f2), major version $major: starting $tmp/with/$real" "$tmp/kc.err")" 1
check "beside $real: the start line names it" "$(count "start: keycache 0.1.0 ($real) with" "$tmp/kc.err")" 1
check "beside $real: keycache served the HMAC" \
    "$(count 'report (exit): all hits=0 misses=0 passthrough=1' "$tmp/kc.err")" 1
OPENSSL_CONF=$tmp/with/openssl.cnf openssl list -providers > "$tmp/list" 2>&1
check "beside $real: listed active" "$(grep -A4 '^  keycache$' "$tmp/list" | grep -c 'status: active')" 1

# 2. alone: not started, why, the program on default
layout alone
run alone
same_as_default "alone"
check "alone: says why" \
    "$(count "not started: loaded by OpenSSL $(openssl version | cut -d' ' -f2), and the keycache built for OpenSSL $major cannot be loaded: $tmp/alone/$real: cannot open shared object file" "$tmp/kc.err")" 1
check "alone: and what to install" "$(count "(install the keycache built for OpenSSL $major)" "$tmp/kc.err")" 1
check "alone: no start line" "$(count 'start: keycache' "$tmp/kc.err")" 0
OPENSSL_CONF=$tmp/alone/openssl.cnf openssl list -providers > "$tmp/list" 2>&1
check "alone: not listed, silently (rc 0)" "$?:$(count '  keycache' "$tmp/list")" 0:0
# loaded by hand, the reason is on the error queue, with no build path
sed '/^\[keycache_sect\]/,/^\[/ s/^activate = 1$//' "$tmp/alone/openssl.cnf" > "$tmp/alone/na.cnf"
OPENSSL_CONF=$tmp/alone/na.cnf openssl list -providers -provider keycache \
    -provider default > /dev/null 2> "$tmp/err"
check "alone, loaded by hand: the reason on the error queue" \
    "$(grep -c ":loader.c:[0-9]*:keycache: loaded by OpenSSL .*, and the keycache built for OpenSSL $major cannot be loaded" "$tmp/err")" 1

# 3. beside a file that is not a keycache build: a copy of the loader
layout notkc
cp "$loader" "$tmp/notkc/$real"
run notkc
same_as_default "beside a copy of itself"
check "beside a copy of itself: says why" \
    "$(count "$tmp/notkc/$real is not a keycache build (it is the loader)" "$tmp/kc.err")" 1

# 4. a broken sibling is refused with a reason: never SIGBUS inside
# dlopen (a file cut short) nor a hang (a FIFO): `timeout` turns a hang
# into status 124 and a crash shows as 128+signal
broken() {  # name reason
    OPENSSL_CONF=$tmp/$1/openssl.cnf KEYCACHE_DEBUG=level:2 timeout 20 \
        bash -c 'openssl mac -digest SHA256 -macopt key:Jefe -in "$1" HMAC' \
        _ "$tmp/msg" > "$tmp/kc.out" 2> "$tmp/kc.err"
    echo $? > "$tmp/kc.rc"
    same_as_default "$1"
    check "$1: says why" "$(count "$2" "$tmp/kc.err")" 1
    check "$1: not started" "$(count 'start: keycache' "$tmp/kc.err")" 0
}
# the end of the loadable segments, as the program headers give it
load_end() {
    local off size m=0
    while read -r off size; do
        [ $((off + size)) -gt "$m" ] && m=$((off + size))
    done < <(readelf -lW "$1" | awk '$1 == "LOAD" { print $2, $5 }')
    echo "$m"
}
layout stripped-half
strip -o "$tmp/stripped" "$build/$real"
head -c $(($(stat -c %s "$tmp/stripped") / 2)) "$tmp/stripped" > "$tmp/stripped-half/$real"
broken stripped-half "$tmp/stripped-half/$real is cut short"
layout load-half
head -c $(($(load_end "$build/$real") / 2)) "$build/$real" > "$tmp/load-half/$real"
broken load-half "$tmp/load-half/$real is cut short"
layout fifo
mkfifo "$tmp/fifo/$real"
broken fifo "$tmp/fifo/$real is not a regular file"
layout dir
mkdir "$tmp/dir/$real"
broken dir "$tmp/dir/$real is not a regular file"
# another machine's build (its e_machine, bytes 18-19, set to another's):
# glibc's dlopen would call it missing
layout arch "$real"
if [ "$(uname -m)" = x86_64 ]; then em='\xb7\x00'; else em='\x3e\x00'; fi
printf "$em" | dd of="$tmp/arch/$real" bs=1 seek=18 conv=notrunc status=none
broken arch "$tmp/arch/$real is not a shared object of this machine"
# 5. a sibling importing a symbol the host's libcrypto lacks is refused,
# not run until its first call kills the program (RTLD_NOW, loader.c):
# in a version node the host has (a libcrypto built no-engine keeps
# OPENSSL_3.0.0 without ENGINE_*), and in one it lacks
mkdir -p "$tmp/fake"
echo 'int kc_missing_fn(void) { return 1; }' > "$tmp/fake/f.c"
printf '%s\n' 'int kc_missing_fn(void);' \
    'int OSSL_provider_init(const void *h, const void *in, const void **out,' \
    '                       void **ctx) { return kc_missing_fn(); }' > "$tmp/fake/m.c"
sibling_needing() {  # node
    echo "$1 { global: kc_missing_fn; local: *; };" > "$tmp/fake/v.map"
    layout "missing-$1"
    ${CC:-cc} -shared -fPIC -o "$tmp/fake/libcrypto.so.3" \
        -Wl,-soname,libcrypto.so.3 -Wl,--version-script="$tmp/fake/v.map" \
        "$tmp/fake/f.c" \
    && ${CC:-cc} -shared -fPIC -o "$tmp/missing-$1/$real" "$tmp/fake/m.c" \
        -L"$tmp/fake" -l:libcrypto.so.3
}
if sibling_needing OPENSSL_3.0.0; then
    broken missing-OPENSSL_3.0.0 "undefined symbol: kc_missing_fn"
else
    bad "a sibling importing kc_missing_fn@OPENSSL_3.0.0 could not be built" ""
fi
if sibling_needing OPENSSL_9.9.0; then
    broken missing-OPENSSL_9.9.0 "version \`OPENSSL_9.9.0' not found"
else
    bad "a sibling needing OPENSSL_9.9.0 could not be built" ""
fi
if [ "$(id -u)" -ne 0 ]; then
    layout unreadable "$real"
    chmod 000 "$tmp/unreadable/$real"
    broken unreadable "$tmp/unreadable/$real cannot be read: Permission denied"
else
    echo "skip unreadable sibling: root reads any file"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
