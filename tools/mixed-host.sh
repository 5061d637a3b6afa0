#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# mixed-host.sh - a host with both OpenSSL 3 and 4, both directions.
#
# mixed-host.sh [--make-chroots]
#
# Uses the chroots tools/compat.sh caches (run `tools/compat.sh sid` and
# `tools/compat.sh sid-ossl4` once first, or pass --make-chroots to have
# compat.sh make a missing one; this script never refreshes or deletes
# them):
#   sid        OpenSSL 3.6: builds keycache.so (the loader) and
#              keycache-ossl3.so
#   sid-ossl4  OpenSSL 4.0 (experimental's libssl-dev and openssl) beside
#              sid's libssl3t64 3.6, which python3 links: builds the loader
#              and keycache-ossl4.so, and runs every program
#
# Programs, each run under a config that activates keycache and with
# OPENSSL_CONF=/dev/null (the default provider alone):
#   openssl-mac  4.0's `openssl mac`, HMAC-SHA256 of a file (keys once)
#   c-qmac       a C program built against 4.0, EVP_Q_mac, 8 messages
#   python3      sid's python3 (linked to 3.6), hmac.digest, 8 messages
# Layouts, one modules directory and one config each:
#   both         the loader (built for 3.6) + keycache-ossl3.so +
#                keycache-ossl4.so: every program starts the build of its
#                major version
#   only-3       the loader built for 3.6 + keycache-ossl3.so
#   only-4       the loader built for 4.0 + keycache-ossl4.so
#   direct-3     the config names keycache-ossl3.so itself (no loader)
#   direct-4     the config names keycache-ossl4.so itself
# Every run must give the default's stdout and exit status, and
# KEYCACHE_DEBUG=1 must say: where a build for the program's major version
# is there, "start: keycache ... (keycache-ossl<major>.so)" and, for the
# programs that key more than admit_after times, hits in the exit report;
# where it is not, "not started:" with the reason (the loader: that build
# cannot be loaded; a build named directly: which versions met) and no
# start.  Both loaders must link no libcrypto.
#
# Each run copies the tree into a fresh directory inside each chroot (as
# compat.sh does) and removes it at exit, so it can run beside compat.sh.
# KC_MIXED_KEEP=1 keeps those directories.  Builds only the module
# targets.  Needs root.  Exit status: 0 all passed,
# 1 a check failed, 2 set-up failed.

set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${KC_COMPAT_CACHE:-/var/cache/keycache-compat}
CH3=$CACHE/sid
CH4=$CACHE/sid-ossl4

if [ "$(id -u)" -ne 0 ]; then
    SUDO=$(command -v sudo) || { echo "mixed-host.sh: needs root or sudo" >&2; exit 2; }
    exec "$SUDO" env KC_COMPAT_CACHE="$CACHE" KC_MIXED_KEEP="${KC_MIXED_KEEP:-0}" "$0" "$@"
fi

MAKE=0
for arg in "$@"; do
    case $arg in
    --make-chroots) MAKE=1 ;;
    *) echo "usage: $0 [--make-chroots]" >&2; exit 2 ;;
    esac
done

for ch in "$CH3" "$CH4"; do
    if [ "$MAKE" = 1 ] && [ ! -f "$ch/.keycache-compat" ]; then
        # one-off: compat.sh makes and caches the chroot (and runs one test)
        KC_COMPAT_CTEST_ARGS="-R test_vectors" KC_COMPAT_CACHE="$CACHE" \
            bash "$SRC/tools/compat.sh" "$(basename "$ch")" || exit 2
    fi
    if [ ! -f "$ch/.keycache-compat" ] || [ ! -c "$ch/dev/null" ]; then
        echo "mixed-host.sh: no usable chroot $ch (run tools/compat.sh" \
             "$(basename "$ch") once)" >&2
        exit 2
    fi
done

T0=$(date +%s)
R3=$(mktemp -d "$CH3/kc-mixed.XXXXXX")
R4=$(mktemp -d "$CH4/kc-mixed.XXXXXX")
cleanup()
{
    if [ "${KC_MIXED_KEEP:-0}" = 1 ]; then
        say "kept $R3 and $R4"
    else
        rm -rf --one-file-system "$R3" "$R4"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_chroot()
{
    local root=$1
    shift
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

say()
{
    printf '== mixed-host %s\n' "$*"
}

# build <chroot> <run dir>: keycache.so in <run dir>/src/build
build()
{
    local ch=$1 run=$2 in=${2#"$1"}

    mkdir -p "$run/src"
    tar -C "$SRC" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$run/src" -xf -
    if ! in_chroot "$ch" /bin/sh -c "cd $in/src && \
            cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF && \
            cmake --build build -j$(nproc) --target keycache" > "$run/build.log" 2>&1; then
        tail -n 30 "$run/build.log" >&2
        echo "mixed-host.sh: build in $ch failed" >&2
        exit 2
    fi
    grep -E 'warning:' "$run/build.log" | sort -u || true
}

say "building for $(in_chroot "$CH3" openssl version) in $CH3"
build "$CH3" "$R3"
say "building for $(in_chroot "$CH4" openssl version) in $CH4"
build "$CH4" "$R4"

I4=${R4#"$CH4"}
B3=$R3/src/build
B4=$R4/src/build
# the modules directories, each with what an operator would install
mkdir -p "$R4/both" "$R4/only-3" "$R4/only-4" "$R4/direct"
cp "$B3/keycache.so" "$B3/keycache-ossl3.so" "$B4/keycache-ossl4.so" "$R4/both/"
cp "$B3/keycache.so" "$B3/keycache-ossl3.so" "$R4/only-3/"
cp "$B4/keycache.so" "$B4/keycache-ossl4.so" "$R4/only-4/"
cp "$B3/keycache-ossl3.so" "$B4/keycache-ossl4.so" "$R4/direct/"
LAYOUTS=(both only-3 only-4 direct-3 direct-4)
declare -A MODULE=([both]=both/keycache.so [only-3]=only-3/keycache.so
                   [only-4]=only-4/keycache.so [direct-3]=direct/keycache-ossl3.so
                   [direct-4]=direct/keycache-ossl4.so)
# the major versions a layout has a build for
declare -A HAS=([both]="3 4" [only-3]=3 [only-4]=4 [direct-3]=3 [direct-4]=4)

pass=0
fail=0
for b in "$B3" "$B4"; do
    n=$(readelf -d "$b/keycache.so" | grep NEEDED | grep -c 'libcrypto\|libssl' || true)
    ch=${b%%/kc-mixed*}
    if [ "$n" = 0 ]; then
        pass=$((pass + 1))
        echo "ok   the loader built in $ch links no libcrypto"
    else
        fail=$((fail + 1))
        echo "FAIL the loader built in $ch links libcrypto or libssl"
    fi
done

printf 'keycache for HMAC-SHA256, on a host with two majors\n' > "$R4/msg"
cat > "$R4/kc_hmac.py" << 'EOF'
import hmac, ssl, sys
for i in range(8):
    print(hmac.digest(b"k" * 32, b"message %d" % i, "sha256").hex())
print(ssl.OPENSSL_VERSION, file=sys.stderr)
EOF
cat > "$R4/kc_qmac.c" << 'EOF'
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

int main(void)
{
    unsigned char key[32], out[32];
    char msg[32];
    size_t n, i;
    int m;

    memset(key, 'k', sizeof(key));
    for (m = 0; m < 8; m++) {
        snprintf(msg, sizeof(msg), "message %d", m);
        if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, sizeof(key),
                      (unsigned char *)msg, strlen(msg), out, sizeof(out),
                      &n) == NULL)
            return 1;
        for (i = 0; i < n; i++)
            printf("%02x", out[i]);
        printf("\n");
    }
    fprintf(stderr, "%s\n", OpenSSL_version(OPENSSL_VERSION));
    return 0;
}
EOF
if ! in_chroot "$CH4" gcc -O1 -o "$I4/kc_qmac" "$I4/kc_qmac.c" -lcrypto \
        > "$R4/cc.log" 2>&1; then
    cat "$R4/cc.log" >&2
    echo "mixed-host.sh: building the C program against 4.0 failed" >&2
    exit 2
fi
for l in "${LAYOUTS[@]}"; do
    cat > "$R4/$l.cnf" << EOF
openssl_conf = openssl_init

[openssl_init]
providers = provider_sect
alg_section = algorithm_sect

[provider_sect]
default = default_sect
keycache = keycache_sect

[default_sect]
activate = 1

[keycache_sect]
module = $I4/${MODULE[$l]}
activate = 1

[algorithm_sect]
default_properties = ?provider=keycache
EOF
done

# the programs: name, the major version of the libcrypto it runs on,
# whether it keys one key often enough for hits, command
PROG_NAMES=(openssl-mac c-qmac python3)
PROG_MAJOR=(4 4 3)
PROG_HITS=(0 1 1)
PROG_CMDS=("openssl mac -digest SHA256 -macopt hexkey:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -in $I4/msg HMAC"
           "$I4/kc_qmac"
           "python3 $I4/kc_hmac.py")
# the program's libcrypto must be the major version the table says
v=$(in_chroot "$CH4" openssl version)
case $v in "OpenSSL 4."*) ;; *) echo "mixed-host.sh: openssl is $v, want 4.x" >&2; exit 2 ;; esac
v=$(in_chroot "$CH4" "$I4/kc_qmac" 2>&1 > /dev/null)
case $v in "OpenSSL 4."*) ;; *) echo "mixed-host.sh: kc_qmac links $v, want 4.x" >&2; exit 2 ;; esac
v=$(in_chroot "$CH4" python3 -c 'import ssl; print(ssl.OPENSSL_VERSION)')
case $v in "OpenSSL 3."*) ;; *) echo "mixed-host.sh: python3 links $v, want 3.x" >&2; exit 2 ;; esac

for l in "${LAYOUTS[@]}"; do
    for i in "${!PROG_NAMES[@]}"; do
        major=${PROG_MAJOR[$i]}
        name="${PROG_NAMES[$i]} (OpenSSL $major), $l"
        cmd=${PROG_CMDS[$i]}
        set +e
        in_chroot "$CH4" env OPENSSL_CONF=/dev/null $cmd > "$R4/def.out" 2> "$R4/def.err"
        rc_def=$?
        in_chroot "$CH4" env OPENSSL_CONF="$I4/$l.cnf" KEYCACHE_DEBUG=1 $cmd \
            > "$R4/kc.out" 2> "$R4/kc.err"
        rc_kc=$?
        set -e
        why=
        [ "$rc_def" -eq 0 ] || why="default run failed ($rc_def)"
        [ "$rc_kc" -eq "$rc_def" ] || why="${why:+$why; }exit status $rc_kc, default's $rc_def"
        cmp -s "$R4/def.out" "$R4/kc.out" || why="${why:+$why; }output differs from default's"
        [ -s "$R4/def.out" ] || why="${why:+$why; }no output"
        refused=$(grep -o 'not started: [^;]*' "$R4/kc.err" | head -n 1 || true)
        started=$(grep -c 'start: keycache' "$R4/kc.err" || true)
        built=$(grep -o 'start: keycache [^ ]* ([^)]*)' "$R4/kc.err" | head -n 1 \
                | sed 's/.*(\(.*\))/\1/' || true)
        hits=$(grep 'report (exit): all' "$R4/kc.err" | grep -o 'hits=[0-9]*' \
               | sed 's/hits=//' | sort -n | tail -n 1 || true)
        case " ${HAS[$l]} " in
        *" $major "*)
            [ -z "$refused" ] || why="${why:+$why; }refused to start: $refused"
            [ "$started" -ge 1 ] || why="${why:+$why; }no start line"
            [ "$built" = "keycache-ossl$major.so" ] \
                || why="${why:+$why; }started ${built:-nothing}, want keycache-ossl$major.so"
            if [ "${PROG_HITS[$i]}" = 1 ] && [ "${hits:-0}" -lt 1 ]; then
                why="${why:+$why; }no hits"
            fi
            what="started $built, hits=${hits:-?}"
            ;;
        *)
            case $l in
            direct-*) want="built for OpenSSL ${l#direct-}\.[0-9.]*, loaded by OpenSSL $major\." ;;
            *) want="loaded by OpenSSL $major\.[0-9.]*, and the keycache built for OpenSSL $major cannot be loaded: .*/keycache-ossl$major\.so: cannot open shared object file" ;;
            esac
            [ -n "$refused" ] || why="${why:+$why; }did not say it refused"
            grep -q "not started: $want" "$R4/kc.err" \
                || why="${why:+$why; }the refusal does not say \"$want\""
            [ "$started" -eq 0 ] || why="${why:+$why; }started"
            what="${refused#not started: }"
            ;;
        esac
        if [ -z "$why" ]; then
            pass=$((pass + 1))
            echo "ok   $name: output and status as default's; $what"
        else
            fail=$((fail + 1))
            echo "FAIL $name: $why"
            sed 's/^/     | /' "$R4/kc.err" | head -n 20
        fi
    done
done
say "$pass passed, $fail failed, $(( $(date +%s) - T0 ))s"
[ "$fail" -eq 0 ]
