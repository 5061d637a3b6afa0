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
#   sid        OpenSSL 3.6: builds keycache.so for 3.x
#   sid-ossl4  OpenSSL 4.0 (experimental's libssl-dev and openssl) beside
#              sid's libssl3t64 3.6, which python3 links: builds keycache.so
#              for 4.0, and runs both programs
#
# For each module (built for 3.6, built for 4.0) one config activates it,
# and two programs run under that config:
#   `openssl mac` (4.0's command line)  HMAC-SHA256 of a file
#   python3 (linked to 3.6)            hmac.digest, 8 messages, one key
# Each must give the same stdout and exit status as with
# OPENSSL_CONF=/dev/null (the default provider alone), and KEYCACHE_DEBUG=1
# must say: for a program of the module's major version, "start:" (python3
# with hits in its exit report; one `openssl mac` run keys once, below
# admit_after, so only the start is checked there); for a program of the
# other major version, "not started: built for OpenSSL X, loaded by
# OpenSSL Y" and no start.
#
# Each run copies the tree into a fresh directory inside each chroot (as
# compat.sh does) and removes it at exit, so it can run beside compat.sh.
# KC_MIXED_KEEP=1 keeps those directories.  Builds only the module
# target.  Needs root.  Exit status: 0 all passed,
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
cp "$R3/src/build/keycache.so" "$R4/keycache-3.so"
cp "$R4/src/build/keycache.so" "$R4/keycache-4.so"
printf 'keycache for HMAC-SHA256, on a host with two majors\n' > "$R4/msg"
cat > "$R4/kc_hmac.py" << 'EOF'
import hmac, ssl, sys
for i in range(8):
    print(hmac.digest(b"k" * 32, b"message %d" % i, "sha256").hex())
print(ssl.OPENSSL_VERSION, file=sys.stderr)
EOF

for m in 3 4; do
    cat > "$R4/keycache-$m.cnf" << EOF
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
module = $I4/keycache-$m.so
activate = 1

[algorithm_sect]
default_properties = ?provider=keycache
EOF
done

# the programs: name, the major version of the libcrypto it runs on, command
PROG_NAMES=(openssl-mac python3-hmac)
PROG_MAJOR=(4 3)
PROG_CMDS=("openssl mac -digest SHA256 -macopt hexkey:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -in $I4/msg HMAC"
           "python3 $I4/kc_hmac.py")
# the program's libcrypto must be the major version the table says
v=$(in_chroot "$CH4" openssl version)
case $v in "OpenSSL 4."*) ;; *) echo "mixed-host.sh: openssl is $v, want 4.x" >&2; exit 2 ;; esac
v=$(in_chroot "$CH4" python3 -c 'import ssl; print(ssl.OPENSSL_VERSION)')
case $v in "OpenSSL 3."*) ;; *) echo "mixed-host.sh: python3 links $v, want 3.x" >&2; exit 2 ;; esac

pass=0
fail=0
for m in 3 4; do
    for i in "${!PROG_NAMES[@]}"; do
        name="${PROG_NAMES[$i]} with keycache built for $m.x"
        cmd=${PROG_CMDS[$i]}
        set +e
        in_chroot "$CH4" env OPENSSL_CONF=/dev/null $cmd > "$R4/def.out" 2> "$R4/def.err"
        rc_def=$?
        in_chroot "$CH4" env OPENSSL_CONF="$I4/keycache-$m.cnf" KEYCACHE_DEBUG=1 $cmd \
            > "$R4/kc.out" 2> "$R4/kc.err"
        rc_kc=$?
        set -e
        why=
        [ "$rc_def" -eq 0 ] || why="default run failed ($rc_def)"
        [ "$rc_kc" -eq "$rc_def" ] || why="${why:+$why; }exit status $rc_kc, default's $rc_def"
        cmp -s "$R4/def.out" "$R4/kc.out" || why="${why:+$why; }output differs from default's"
        [ -s "$R4/def.out" ] || why="${why:+$why; }no output"
        refused=$(grep -o 'not started: built for OpenSSL [^ ]*, loaded by OpenSSL [^;]*' \
                  "$R4/kc.err" | head -n 1 || true)
        started=$(grep -c 'start: ' "$R4/kc.err" || true)
        hits=$(grep 'report (exit)' "$R4/kc.err" | grep -o 'hits=[0-9]*' \
               | sed 's/hits=//' | sort -n | tail -n 1 || true)
        if [ "${PROG_MAJOR[$i]}" = "$m" ]; then
            [ -z "$refused" ] || why="${why:+$why; }refused to start: $refused"
            [ "$started" -ge 1 ] || why="${why:+$why; }no start line"
            if [ "${PROG_NAMES[$i]}" = python3-hmac ] && [ "${hits:-0}" -lt 1 ]; then
                why="${why:+$why; }no hits"
            fi
            what="started, hits=${hits:-?}"
        else
            [ -n "$refused" ] || why="${why:+$why; }did not say it refused"
            [ "$started" -eq 0 ] || why="${why:+$why; }started"
            what="${refused#not started: }"
        fi
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
