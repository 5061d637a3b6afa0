#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# deb-check.sh [suite ...]        (default: trixie bookworm)
#
# Build the Debian packages (Release build, cpack -G DEB): keycache (the
# loader keycache.so, configs, docs) and keycache-ossl<major> (the module
# for the host's OpenSSL), check their metadata and contents, then, per
# suite, in a throwaway overlay on a cached Debian chroot: dpkg -i both,
# activate the shipped configs (OPENSSL_CONF, and the machine-wide
# .include), check `openssl list -providers` and an HMAC served by the
# build for the suite's OpenSSL, roll the .include back, dpkg -r, and check
# that no file is left behind.
#
# A suite whose openssl is of another major version than the host's
# (compat.sh's sid-ossl4: OpenSSL 4.0, beside sid's 3.6) first builds the
# packages against it inside the overlay and checks those; once they are
# installed it adds the host's keycache-ossl<major>, and under each shipped
# config both python3 (linked to OpenSSL 3) and `openssl mac` (4.0) must be
# served, each by the build of its major version, with the default
# provider's output; then all three packages are removed.
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

# ---- the packages --------------------------------------------------------

MULTIARCH=$(gcc -print-multiarch)
MODDIR=usr/lib/$MULTIARCH/ossl-modules
VERSION=$(sed -n 's/^project(keycache VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")

# check_debs LABEL DIR MAJOR: DIR's keycache_*.deb and keycache-ossl<MAJOR>_*.deb
check_debs()
{
    local label=$1 dir=$2 major=$3 common build depends f m want libc need x=$TMP/x-$1
    common=$(ls "$dir"/keycache_*.deb)
    build=$(ls "$dir"/keycache-ossl"$major"_*.deb)
    say "$label: $(basename "$common") $(basename "$build")"
    check "$label: Package: keycache" "$(dpkg-deb -f "$common" Package)" keycache
    check "$label: Package: keycache-ossl$major" "$(dpkg-deb -f "$build" Package)" \
        "keycache-ossl$major"
    for f in "$common" "$build"; do
        check "$label: $(basename "$f"): Architecture: $(dpkg --print-architecture)" \
            "$(dpkg-deb -f "$f" Architecture)" "$(dpkg --print-architecture)"
    done
    depends=$(dpkg-deb -f "$build" Depends)
    for want in "libssl$major (>= $major.0)" "keycache (= $VERSION)"; do
        case ", $depends," in
        *", $want,"*) ok "$label: keycache-ossl$major Depends: $want" ;;
        *) bad "$label: keycache-ossl$major Depends: $want" "$depends" ;;
        esac
    done
    # the loader serves either major version: no libssl
    check "$label: keycache depends on no libssl" \
        "$(dpkg-deb -f "$common" Depends | grep -c libssl || true)" 0
    dpkg-deb -c "$common" | awk '{print $6}' | sed 's#^\./##' > "$TMP/contents"
    for f in "$MODDIR/keycache.so" usr/share/man/man7/provider-keycache.7 \
             usr/share/doc/keycache/copyright usr/share/doc/keycache/LICENSE \
             usr/share/keycache/keycache.cnf usr/share/keycache/keycache-system.cnf \
             usr/share/keycache/keycache-include.cnf usr/include/keycache/keycache.h; do
        grep -qx "$f" "$TMP/contents" && ok "$label: keycache contains /$f" \
            || bad "$label: keycache contains /$f"
    done
    dpkg-deb -c "$build" | awk '{print $6}' | sed 's#^\./##' | grep -v '/$' \
        > "$TMP/files-build"
    check "$label: keycache-ossl$major holds its module and copyright only" \
        "$(tr '\n' ' ' < "$TMP/files-build")" \
        "$MODDIR/keycache-ossl$major.so usr/share/doc/keycache-ossl$major/copyright "
    # dpkg refuses a file that two packages ship: the builds share none
    check "$label: no file in both packages" \
        "$(grep -v '/$' "$TMP/contents" | grep -cxFf "$TMP/files-build" || true)" 0
    check "$label: nothing under /etc (no conffiles to outlive dpkg -r)" \
        "$(cat "$TMP/contents" "$TMP/files-build" | grep -c '^etc/' || true)" 0
    mkdir -p "$x"
    dpkg-deb -x "$common" "$x"
    dpkg-deb -x "$build" "$x"
    for m in keycache.so "keycache-ossl$major.so"; do
        check "$label: $m is stripped" \
            "$(readelf -S "$x/$MODDIR/$m" | grep -c '\.symtab' || true)" 0
        # the libc6 version in Depends covers every GLIBC_ symbol version needed
        f=$common
        [ "$m" = keycache.so ] || f=$build
        libc=$(dpkg-deb -f "$f" Depends | sed -n 's/.*libc6 (>= \([0-9.]*\)).*/\1/p')
        need=$(objdump -T "$x/$MODDIR/$m" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' \
               | sort -Vu | tail -n 1)
        check "$label: $m: libc6 (>= $libc) covers GLIBC_$need" \
            "$(printf '%s\n%s\n' "$need" "$libc" | sort -V | tail -n 1)" "$libc"
    done
    check "$label: the loader links no libcrypto" \
        "$(readelf -d "$x/$MODDIR/keycache.so" | grep NEEDED | grep -c 'libcrypto\|libssl' || true)" 0
    grep -q '^module = keycache.so$' "$x/usr/share/keycache/keycache.cnf" \
        && ok "$label: keycache.cnf loads the loader by name from the modules directory" \
        || bad "$label: keycache.cnf: module = keycache.so"
}

say "building the packages ($(openssl version))"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    > "$TMP/build.log" 2>&1 \
    && cmake --build "$BUILD" -j"$(nproc)" --target keycache >> "$TMP/build.log" 2>&1 \
    && (cd "$BUILD" && rm -f ./*.deb && cpack -G DEB) >> "$TMP/build.log" 2>&1 \
    || { cat "$TMP/build.log"; echo "deb-check.sh: build failed" >&2; exit 1; }
HOST_MAJOR=$(pkg-config --modversion libcrypto | cut -d. -f1)
mkdir -p "$TMP/debs-host"
cp "$BUILD"/keycache_*.deb "$BUILD/keycache-ossl$HOST_MAJOR"_*.deb "$TMP/debs-host/"
check_debs host "$TMP/debs-host" "$HOST_MAJOR"

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
    local v major
    v=$(in_root openssl version)
    major=$(sed 's/^OpenSSL \([0-9]*\).*/\1/' <<< "$v")
    say "$suite: $v"
    mkdir -p "$ROOT/tmp/debs"
    if [ "$major" = "$HOST_MAJOR" ]; then
        cp "$TMP"/debs-host/*.deb "$ROOT/tmp/debs/"
    else
        # packages built against the suite's OpenSSL, in the overlay's /tmp
        # (which the snapshots leave out)
        mkdir -p "$ROOT/tmp/src"
        tar -C "$SRC" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$ROOT/tmp/src" -xf -
        if ! in_root sh -c "cd /tmp/src && \
                cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF && \
                cmake --build build -j$(nproc) --target keycache && \
                cd build && cpack -G DEB" > "$run/build.log" 2>&1; then
            bad "$suite: packages built against $v" "$(tail -n 20 "$run/build.log")"
            return
        fi
        mkdir -p "$TMP/debs-$suite"
        cp "$ROOT"/tmp/src/build/keycache_*.deb \
           "$ROOT/tmp/src/build/keycache-ossl$major"_*.deb "$TMP/debs-$suite/"
        check_debs "$suite" "$TMP/debs-$suite" "$major"
        cp "$TMP/debs-$suite"/*.deb "$ROOT/tmp/debs/"
    fi
    local pkgs="keycache keycache-ossl$major"
    printf 'what do ya want for nothing?' > "$ROOT/tmp/msg"
    snapshot "$run/before"

    if in_root sh -c 'dpkg -i /tmp/debs/*.deb' > "$run/log" 2>&1; then
        ok "$suite: dpkg -i $pkgs"
    else
        bad "$suite: dpkg -i $pkgs" "$(cat "$run/log")"
    fi
    local p
    for p in $pkgs; do
        check "$suite: $p installed" "$(in_root dpkg-query -W -f '${Status}' "$p")" \
            "install ok installed"
    done
    # shellcheck disable=SC2086
    in_root dpkg -L $pkgs > "$run/files"

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
        check "$suite, $how: the loader started keycache-ossl$major.so" \
            "$(grep -c "start: keycache [0-9.]* (keycache-ossl$major.so)" "$run/err")" 1
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

    # a host with both: add the host's build for the other major version
    if [ "$major" != "$HOST_MAJOR" ]; then
        mixed_suite "$suite" "$major" "$run"
        pkgs="$pkgs keycache-ossl$HOST_MAJOR"
    fi

    # shellcheck disable=SC2086
    if in_root dpkg -r $pkgs > "$run/log" 2>&1; then
        ok "$suite: dpkg -r $pkgs"
    else
        bad "$suite: dpkg -r $pkgs" "$(cat "$run/log")"
    fi
    local left=
    while read -r f; do
        # dpkg -L puts a blank line between packages
        [ -n "$f" ] || continue
        # directories the package shares with others stay
        [ -d "$ROOT$f" ] && grep -q "^d $f$" "$run/before" && continue
        [ -e "$ROOT$f" ] && left="$left $f"
    done < "$run/files"
    check "$suite: dpkg -r leaves none of the packages' files" "$left" ""
    snapshot "$run/after"
    if cmp -s "$run/before" "$run/after"; then
        ok "$suite: file system as before dpkg -i"
    else
        bad "$suite: file system as before dpkg -i" "$(diff "$run/before" "$run/after")"
    fi
    for p in $pkgs; do
        check "$suite: dpkg knows nothing of $p" \
            "$(in_root dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null || true)" ""
    done

    while [ ${#MOUNTS[@]} -gt 0 ]; do
        umount "${MOUNTS[-1]}"
        unset 'MOUNTS[-1]'
    done
    exec 8>&-
}

# mixed_suite SUITE MAJOR RUN: with keycache and keycache-ossl<MAJOR>
# installed, add the host's keycache-ossl<HOST_MAJOR>; under each shipped
# config a program of each major version must be served by its own build
# with the default's output: `openssl mac` (the suite's) and python3's
# hmac.digest (the suite's python3 links OpenSSL 3), 8 messages, one key.
mixed_suite()
{
    local suite=$1 major=$2 run=$3 f how conf pv hits
    f=$(ls "$TMP/debs-host/keycache-ossl$HOST_MAJOR"_*.deb)
    cp "$f" "$ROOT/tmp/"
    if in_root dpkg -i "/tmp/$(basename "$f")" > "$run/log" 2>&1; then
        ok "$suite: dpkg -i the host's keycache-ossl$HOST_MAJOR beside keycache-ossl$major"
    else
        bad "$suite: dpkg -i the host's keycache-ossl$HOST_MAJOR" "$(cat "$run/log")"
    fi
    in_root dpkg -L "keycache-ossl$HOST_MAJOR" >> "$run/files"
    pv=$(in_root python3 -c 'import ssl; print(ssl.OPENSSL_VERSION)' 2>&1)
    case $pv in
    "OpenSSL $HOST_MAJOR."*) ;;
    *) bad "$suite: python3 links OpenSSL $HOST_MAJOR" "$pv"; return ;;
    esac
    cat > "$ROOT/tmp/kc_hmac.py" << 'EOF'
import hmac
for i in range(8):
    print(hmac.digest(b"k" * 32, b"message %d" % i, "sha256").hex())
EOF
    in_root env OPENSSL_CONF=/dev/null python3 /tmp/kc_hmac.py > "$run/py.def" 2>&1
    cp "$ROOT/etc/ssl/openssl.cnf" "$run/openssl.cnf.orig"
    for how in keycache.cnf keycache-system.cnf include; do
        if [ "$how" = include ]; then
            conf=
            echo '.include /usr/share/keycache/keycache-include.cnf' \
                >> "$ROOT/etc/ssl/openssl.cnf"
        else
            conf=/usr/share/keycache/$how
        fi
        in_root env ${conf:+OPENSSL_CONF=$conf} KEYCACHE_DEBUG=1 \
            python3 /tmp/kc_hmac.py > "$run/py.out" 2> "$run/py.err"
        cmp -s "$run/py.def" "$run/py.out" \
            && ok "$suite + keycache-ossl$HOST_MAJOR, $how: python3 ($pv): output as default's" \
            || bad "$suite + keycache-ossl$HOST_MAJOR, $how: python3: output as default's" \
                   "$(cat "$run/py.out" "$run/py.err")"
        check "$suite + keycache-ossl$HOST_MAJOR, $how: python3 started keycache-ossl$HOST_MAJOR.so" \
            "$(grep -c "start: keycache [0-9.]* (keycache-ossl$HOST_MAJOR.so)" "$run/py.err")" 1
        hits=$(grep 'report (exit): all' "$run/py.err" | grep -o 'hits=[0-9]*' | sed 's/hits=//')
        [ "${hits:-0}" -ge 1 ] \
            && ok "$suite + keycache-ossl$HOST_MAJOR, $how: python3 hits=$hits" \
            || bad "$suite + keycache-ossl$HOST_MAJOR, $how: python3 hits" "$(cat "$run/py.err")"
        in_root env ${conf:+OPENSSL_CONF=$conf} KEYCACHE_DEBUG=1 \
            openssl mac -digest SHA256 -macopt key:Jefe -in /tmp/msg HMAC \
            > "$run/out" 2> "$run/err"
        check "$suite + keycache-ossl$HOST_MAJOR, $how: openssl mac: HMAC is RFC 4231's" \
            "$(cat "$run/out")" 5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843
        check "$suite + keycache-ossl$HOST_MAJOR, $how: openssl mac started keycache-ossl$major.so" \
            "$(grep -c "start: keycache [0-9.]* (keycache-ossl$major.so)" "$run/err")" 1
        check "$suite + keycache-ossl$HOST_MAJOR, $how: no warning or error" \
            "$(cat "$run/err" "$run/py.err" | grep -c 'warning\|error\|not started')" 0
    done
    cp "$run/openssl.cnf.orig" "$ROOT/etc/ssl/openssl.cnf"
}

for suite in "${SUITES[@]}"; do
    check_suite "$suite"
done

say "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
