#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deb-check.sh [suite ...]        (default: trixie bookworm)
#
# Build the Debian package (Release build, cpack -G DEB), check its
# metadata and contents, then, per suite, in a throwaway overlay on a cached
# Debian chroot: dpkg -i, activate the shipped configs (OPENSSL_CONF, and
# the machine-wide .include), check `openssl list -providers` and an HMAC
# served by keycache, roll the .include back, dpkg -r, and check that no
# file is left behind.
#
# Chroots: compat.sh's /var/cache/keycache-compat/<suite> when it exists
# (only read: the overlay takes every write, under compat.sh's lock for the
# suite), else <suite>-deb beside it, made here once (debootstrap minbase
# with openssl).  KC_COMPAT_CACHE and KC_COMPAT_MIRROR as for compat.sh.
# Needs root (re-runs itself with sudo), overlayfs, and network the first
# time per suite.  The exit status is 0 when every check passed.

set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${KC_COMPAT_CACHE:-/var/cache/keycache-compat}
MIRROR=${KC_COMPAT_MIRROR:-http://deb.debian.org/debian}
SUITES=("$@")
[ ${#SUITES[@]} -gt 0 ] || SUITES=(trixie bookworm)
PKGS=openssl
BUILD=$SRC/build-deb

if [ "$(id -u)" -ne 0 ]; then
    SUDO=$(command -v sudo) || { echo "deb-check.sh: needs root or sudo" >&2; exit 2; }
    exec "$SUDO" env KC_COMPAT_CACHE="$CACHE" KC_COMPAT_MIRROR="$MIRROR" \
        "$0" "$@"
fi

pass=0 fail=0
say() { printf '== deb-check %s\n' "$*"; }
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; shift; printf '       %s\n' "$@"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "got:  $2" "want: $3"; fi; }

TMP=$(mktemp -d)
MOUNTS=()
cleanup()
{
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[$i]}" 2> /dev/null || umount -l "${MOUNTS[$i]}" || true
    done
    rm -rf --one-file-system "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the package ---------------------------------------------------------

say "building the package ($(openssl version))"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    > "$TMP/build.log" 2>&1 \
    && cmake --build "$BUILD" -j"$(nproc)" --target keycache >> "$TMP/build.log" 2>&1 \
    && (cd "$BUILD" && rm -f ./*.deb && cpack -G DEB) >> "$TMP/build.log" 2>&1 \
    || { cat "$TMP/build.log"; echo "deb-check.sh: build failed" >&2; exit 1; }
DEB=$(ls "$BUILD"/keycache_*.deb)
say "$(basename "$DEB")"

MULTIARCH=$(gcc -print-multiarch)
MODULE=usr/lib/$MULTIARCH/ossl-modules/keycache.so
depends=$(dpkg-deb -f "$DEB" Depends)
check "Package: keycache" "$(dpkg-deb -f "$DEB" Package)" keycache
check "Architecture: $(dpkg --print-architecture)" "$(dpkg-deb -f "$DEB" Architecture)" \
    "$(dpkg --print-architecture)"
case ", $depends," in
*", libssl3 (>= 3.0),"*) ok "Depends: libssl3 (>= 3.0) ($depends)" ;;
*) bad "Depends: libssl3 (>= 3.0)" "$depends" ;;
esac
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's#^\./##' > "$TMP/contents"
for f in "$MODULE" usr/share/man/man7/provider-keycache.7 \
         usr/share/doc/keycache/copyright usr/share/doc/keycache/LICENSE \
         usr/share/keycache/keycache.cnf usr/share/keycache/keycache-system.cnf \
         usr/share/keycache/keycache-include.cnf usr/include/keycache/keycache.h; do
    grep -qx "$f" "$TMP/contents" && ok "contains /$f" || bad "contains /$f"
done
check "nothing under /etc (no conffiles to outlive dpkg -r)" \
    "$(grep -c '^etc/' "$TMP/contents" || true)" 0
dpkg-deb -x "$DEB" "$TMP/x"
check "module is stripped" "$(readelf -S "$TMP/x/$MODULE" | grep -c '\.symtab' || true)" 0
# the libc6 version in Depends covers every GLIBC_ symbol version needed
libc=$(sed -n 's/.*libc6 (>= \([0-9.]*\)).*/\1/p' <<< "$depends")
need=$(objdump -T "$TMP/x/$MODULE" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' \
       | sort -Vu | tail -n 1)
check "libc6 (>= $libc) covers GLIBC_$need" \
    "$(printf '%s\n%s\n' "$need" "$libc" | sort -V | tail -n 1)" "$libc"
grep -q '^module = keycache.so$' "$TMP/x/usr/share/keycache/keycache.cnf" \
    && ok "keycache.cnf loads the module by name from the modules directory" \
    || bad "keycache.cnf: module = keycache.so"

# ---- per suite: install, use, remove -------------------------------------

make_chroot()
{
    local ch=$1 suite=$2
    if ! command -v debootstrap > /dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
    fi
    say "debootstrap $suite into $ch (one-off)"
    rm -rf --one-file-system "$ch.tmp"
    debootstrap --variant=minbase --include="$PKGS" "$suite" "$ch.tmp" "$MIRROR" \
        > "$ch.debootstrap.log" 2>&1 || {
        tail -n 30 "$ch.debootstrap.log" >&2
        return 1
    }
    echo "$PKGS" > "$ch.tmp/.keycache-deb"
    rm -rf --one-file-system "$ch"
    mv "$ch.tmp" "$ch"
}

in_root()
{
    chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive "$@"
}

# Everything but dpkg's own records, logs and scratch space.
snapshot()
{
    in_root find / -xdev \( -path /proc -o -path /sys -o -path /dev \
        -o -path /tmp -o -path /var/lib/dpkg -o -path /var/log \
        -o -path /var/cache -o -path /run \) -prune -o -printf '%y %p\n' \
        | sort > "$1"
}

check_suite()
{
    local suite=$1 ch lockname rfc=5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843
    if [ -f "$CACHE/$suite/.keycache-compat" ]; then
        ch=$CACHE/$suite lockname=$suite
        say "$suite: reusing compat.sh's chroot $ch (read-only, overlay)"
    else
        ch=$CACHE/$suite-deb lockname=$suite-deb
    fi
    mkdir -p "$CACHE"
    exec 8> "$CACHE/$lockname.lock"
    flock 8
    if [ "$lockname" = "$suite-deb" ] \
       && [ "$(cat "$ch/.keycache-deb" 2>/dev/null)" != "$PKGS" ]; then
        make_chroot "$ch" "$suite" || { bad "$suite: debootstrap"; exec 8>&-; return; }
    fi

    local run=$TMP/$suite
    mkdir -p "$run/upper" "$run/work" "$run/root"
    mount -t overlay overlay \
        -o "lowerdir=$ch,upperdir=$run/upper,workdir=$run/work" "$run/root"
    MOUNTS+=("$run/root")
    ROOT=$run/root
    if [ ! -c "$ROOT/dev/null" ]; then
        mount --bind /dev "$ROOT/dev"
        MOUNTS+=("$ROOT/dev")
    fi
    say "$suite: $(in_root openssl version)"
    cp "$DEB" "$ROOT/tmp/keycache.deb"
    printf 'what do ya want for nothing?' > "$ROOT/tmp/msg"
    snapshot "$run/before"

    if in_root dpkg -i /tmp/keycache.deb > "$run/log" 2>&1; then
        ok "$suite: dpkg -i"
    else
        bad "$suite: dpkg -i" "$(cat "$run/log")"
    fi
    check "$suite: installed" "$(in_root dpkg-query -W -f '${Status}' keycache)" \
        "install ok installed"
    in_root dpkg -L keycache > "$run/files"

    # the shipped configs, with OPENSSL_CONF and machine-wide
    local how conf
    for how in keycache.cnf keycache-system.cnf include; do
        if [ "$how" = include ]; then
            conf=
            cp "$ROOT/etc/ssl/openssl.cnf" "$run/openssl.cnf.orig"
            echo '.include /usr/share/keycache/keycache-include.cnf' \
                >> "$ROOT/etc/ssl/openssl.cnf"
        else
            conf=/usr/share/keycache/$how
        fi
        in_root env ${conf:+OPENSSL_CONF=$conf} openssl list -providers \
            > "$run/out" 2>&1
        check "$suite, $how: openssl list -providers shows keycache active" \
            "$(grep -A4 '^  keycache$' "$run/out" | grep -c 'status: active')" 1
        in_root env ${conf:+OPENSSL_CONF=$conf} KEYCACHE_DEBUG=level:2 \
            openssl mac -digest SHA256 -macopt key:Jefe -in /tmp/msg HMAC \
            > "$run/out" 2> "$run/err"
        check "$suite, $how: HMAC is RFC 4231's" "$(cat "$run/out")" "$rfc"
        check "$suite, $how: a query-less HMAC fetch reaches keycache" \
            "$(grep -c 'routing: a query-less HMAC fetch reaches keycache' "$run/err")" 1
        check "$suite, $how: keycache served it" \
            "$(grep -c 'report (exit): all hits=0 misses=0 passthrough=1' "$run/err")" 1
        check "$suite, $how: no warning or error" \
            "$(grep -c 'warning\|error' "$run/err")" 0
    done
    # roll back the machine-wide route
    cp "$run/openssl.cnf.orig" "$ROOT/etc/ssl/openssl.cnf"
    in_root openssl list -providers > "$run/out" 2>&1
    check "$suite: .include removed, keycache gone" \
        "$(grep -c '^  keycache$' "$run/out")" 0
    in_root man -w provider-keycache > /dev/null 2>&1 \
        || [ -f "$ROOT/usr/share/man/man7/provider-keycache.7" ] \
        && ok "$suite: man page installed" || bad "$suite: man page installed"

    if in_root dpkg -r keycache > "$run/log" 2>&1; then
        ok "$suite: dpkg -r"
    else
        bad "$suite: dpkg -r" "$(cat "$run/log")"
    fi
    local left=
    while read -r f; do
        # directories the package shares with others stay
        [ -d "$ROOT$f" ] && grep -q "^d $f$" "$run/before" && continue
        [ -e "$ROOT$f" ] && left="$left $f"
    done < "$run/files"
    check "$suite: dpkg -r leaves none of the package's files" "$left" ""
    snapshot "$run/after"
    if cmp -s "$run/before" "$run/after"; then
        ok "$suite: file system as before dpkg -i"
    else
        bad "$suite: file system as before dpkg -i" "$(diff "$run/before" "$run/after")"
    fi
    check "$suite: dpkg knows nothing of keycache" \
        "$(in_root dpkg-query -W -f '${db:Status-Abbrev}' keycache 2>/dev/null || true)" ""

    while [ ${#MOUNTS[@]} -gt 0 ]; do
        umount "${MOUNTS[-1]}"
        unset 'MOUNTS[-1]'
    done
    exec 8>&-
}

for suite in "${SUITES[@]}"; do
    check_suite "$suite"
done

say "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
