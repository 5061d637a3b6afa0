#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# compat.sh <suite> [--keep] [--refresh] [--bench [--patterns | --floor] | --mutants]
#
# Build and test keycache against a newer OpenSSL in a Debian chroot:
#   trixie  OpenSSL 3.5
#   sid     OpenSSL 3.6 (a moving target)
#   sid-ossl4  OpenSSL 4.0: sid plus experimental's libssl-dev, openssl and
#              the libssl they need (sid's libssl3t64 3.6 stays installed
#              beside it, as on a host moving from 3 to 4)
#
# The chroot is made once with debootstrap and cached under
# /var/cache/keycache-compat/<suite> (KC_COMPAT_CACHE overrides), so only the
# first run per suite pays for it.  Each run copies this source tree and
# ../shared/vectors into a fresh directory of the chroot with the same
# relative layout, then configures, builds and runs ctest there.  The exit
# status is ctest's (or the failing configure/build step's).
#
#   --keep     keep the run's copy and build tree inside the chroot
#   --refresh  apt-get update + dist-upgrade the cached chroot first (sid
#              moves daily; the cache otherwise stays at its first snapshot)
#   --bench    instead of ctest, run bench/callgrind.sh (instructions per
#              op, default vs keycache) on that OpenSSL, for the scenarios
#              in $KC_COMPAT_BENCH (default: the README's table) at
#              SIZES=${SIZES:-32}, with the build's openssl.cnf (what an
#              operator gets) or the config KC_COMPAT_BENCH_CONF names
#              (e.g. keycache-test.cnf: aes_gcm = on on every version)
#   --patterns with --bench (or KC_COMPAT_PATTERNS=1): run the pattern
#              catalogue, bench/patterns.sh, instead of callgrind.sh, with
#              the build's openssl.cnf, judged against bench/patterns.bounds
#              for that OpenSSL; its Markdown table is printed at the end.
#              KC_COMPAT_PATTERNS_ARGS adds patterns.sh arguments (e.g.
#              "--update-bounds": the bound lines it would write for that
#              OpenSSL are printed, to be copied into the checkout's file)
#   --floor    with --bench: run bench/floor.sh (the catalogue against a
#              provider that only forwards, the floor of any caching
#              wrapper) instead, for the rows in KC_COMPAT_PATTERNS_ARGS
#              (all by default)
#   --mutants  instead of ctest, run tools/mutants.py with the arguments in
#              KC_COMPAT_MUTANTS_ARGS (mutant names, --tests REGEX; all of
#              them by default) on that OpenSSL
#
# Environment: KC_VECTORS (vectors folder, default <src>/../shared/vectors),
# KC_COMPAT_CACHE, KC_COMPAT_MIRROR, KC_COMPAT_CTEST_ARGS (extra ctest args,
# e.g. "-R test_vectors" or "-j2"), KC_COMPAT_BENCH, SIZES, SHARED_DETAIL
# (callgrind.sh's shared-state calls by function), KC_COMPAT_PATTERNS,
# KC_COMPAT_PATTERNS_ARGS, KC_COMPAT_MUTANTS_ARGS.
#
# Needs root (re-runs itself with sudo) and network for the first run.

set -euo pipefail

PKGS=gcc,libc6-dev,libssl-dev,cmake,libcunit1-dev,libcjson-dev,pkg-config
PKGS=$PKGS,python3-cryptography-vectors,valgrind,make
# test_cli.sh drives the openssl command line and converts hex with xxd
PKGS=$PKGS,openssl,xxd

usage()
{
    echo "usage: $0 <trixie|sid|sid-ossl4|suite> [--keep] [--refresh] [--bench [--patterns | --floor] | --mutants]" >&2
    exit 2
}

[ $# -ge 1 ] || usage
SUITE=$1
shift
KEEP=0
REFRESH=0
BENCH=0
MUTANTS=0
FLOOR=0
PATTERNS=${KC_COMPAT_PATTERNS:-0}
for arg in "$@"; do
    case $arg in
    --keep) KEEP=1 ;;
    --refresh) REFRESH=1 ;;
    --bench) BENCH=1 ;;
    --patterns) PATTERNS=1 ;;
    --floor) FLOOR=1 ;;
    --mutants) MUTANTS=1 ;;
    *) usage ;;
    esac
done
case $SUITE in
[a-z]*) ;;
*) usage ;;
esac
[ "$PATTERNS" = 1 ] && [ "$BENCH" = 0 ] && usage
[ "$FLOOR" = 1 ] && { [ "$BENCH" = 0 ] || [ "$PATTERNS" = 1 ]; } && usage
[ "$MUTANTS" = 1 ] && [ "$BENCH" = 1 ] && usage
PATTERNS_ARGS=${KC_COMPAT_PATTERNS_ARGS:-}
MUTANTS_ARGS=${KC_COMPAT_MUTANTS_ARGS:-}
# <dist>-ossl4: debootstrap <dist>, then take OpenSSL from experimental
DIST=$SUITE
EXP_PKGS=
case $SUITE in
*-ossl4)
    DIST=${SUITE%-ossl4}
    EXP_PKGS="libssl-dev openssl"
    ;;
esac
CACHE_KEY=$PKGS${EXP_PKGS:+ experimental:$EXP_PKGS}

SRC=$(cd "$(dirname "$0")/.." && pwd)
VECTORS=${KC_VECTORS:-$SRC/../shared/vectors}
CACHE=${KC_COMPAT_CACHE:-/var/cache/keycache-compat}
MIRROR=${KC_COMPAT_MIRROR:-http://deb.debian.org/debian}
CTEST_ARGS=${KC_COMPAT_CTEST_ARGS:-}
BENCH_SCEN=${KC_COMPAT_BENCH:-qmac-sha256 floor-hmac-sha256 gcm256-enc-prefetch gcm256-enc-legacy gcm256-dec-prefetch cookie steady-hmac-sha256 steady-gcm256-enc steady-gcm256-dec newkey-qmac-sha256 newkey-gcm256-enc rrkeys-qmac-sha256 rrkeys-gcm256-enc}
BENCH_SIZES=${SIZES:-32}
BENCH_CONF=${KC_COMPAT_BENCH_CONF:-openssl.cnf}

if [ "$(id -u)" -ne 0 ]; then
    SUDO=$(command -v sudo) || { echo "compat.sh: needs root or sudo" >&2; exit 2; }
    exec "$SUDO" env KC_VECTORS="$VECTORS" KC_COMPAT_CACHE="$CACHE" \
        KC_COMPAT_MIRROR="$MIRROR" KC_COMPAT_CTEST_ARGS="$CTEST_ARGS" \
        KC_COMPAT_BENCH="$BENCH_SCEN" SIZES="$BENCH_SIZES" \
        KC_COMPAT_BENCH_CONF="$BENCH_CONF" SHARED_DETAIL="${SHARED_DETAIL:-}" \
        KC_COMPAT_PATTERNS="$PATTERNS" KC_COMPAT_PATTERNS_ARGS="$PATTERNS_ARGS" \
        KC_COMPAT_MUTANTS_ARGS="$MUTANTS_ARGS" \
        "$0" "$SUITE" "$@"
fi

[ -d "$VECTORS" ] || { echo "compat.sh: no vectors at $VECTORS" >&2; exit 2; }
VECTORS=$(cd "$VECTORS" && pwd)

CH=$CACHE/$SUITE
T0=$(date +%s)

say()
{
    printf '== compat[%s] %s\n' "$SUITE" "$*"
}

elapsed()
{
    echo $(( $(date +%s) - $1 ))
}

# Never delete a chroot that still has something mounted inside it.
mounted_inside()
{
    grep -q " $1/" /proc/self/mounts
}

# One run per suite at a time: the chroot is shared state.
mkdir -p "$CACHE"
exec 9> "$CACHE/$SUITE.lock"
flock 9

# ---- the cached chroot ---------------------------------------------------

make_chroot()
{
    if ! command -v debootstrap > /dev/null; then
        say "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap \
            || { apt-get update -qq && \
                 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }
    fi
    if mounted_inside "$CH" || mounted_inside "$CH.tmp"; then
        echo "compat.sh: stale mounts under $CH, unmount them first" >&2
        exit 2
    fi
    say "debootstrap $DIST into $CH (one-off)"
    rm -rf --one-file-system "$CH.tmp"
    debootstrap --variant=minbase --include="$PKGS" "$DIST" "$CH.tmp" "$MIRROR" \
        > "$CACHE/$SUITE.debootstrap.log" 2>&1 || {
        tail -n 30 "$CACHE/$SUITE.debootstrap.log" >&2
        echo "compat.sh: debootstrap failed, log in $CACHE/$SUITE.debootstrap.log" >&2
        exit 2
    }
    if [ -n "$EXP_PKGS" ]; then
        add_experimental "$CH.tmp" >> "$CACHE/$SUITE.debootstrap.log" 2>&1 || {
            tail -n 30 "$CACHE/$SUITE.debootstrap.log" >&2
            echo "compat.sh: installing from experimental failed, log in $CACHE/$SUITE.debootstrap.log" >&2
            exit 2
        }
    fi
    # the package lists are the cache key: changing them rebuilds the chroot
    echo "$CACHE_KEY" > "$CH.tmp/.keycache-compat"
    rm -rf --one-file-system "$CH"
    mv "$CH.tmp" "$CH"
}

APT_OPTS="-o Acquire::Check-Valid-Until=false"
in_root()
{
    local root=$1
    shift
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive "$@"
}

# experimental's packages over a fresh chroot $1.  A cached or mirrored
# archive's Release file may be past its Valid-Until date: accept it (the
# signatures are still checked).
add_experimental()
{
    local root=$1

    echo "deb $MIRROR experimental main" > "$root/etc/apt/sources.list.d/experimental.list"
    mount -t proc proc "$root/proc"
    local rc=0
    # && rather than set -e, which a caller's || switches off
    in_root "$root" apt-get $APT_OPTS update \
        && in_root "$root" apt-get $APT_OPTS install -y -t experimental $EXP_PKGS \
        && in_root "$root" apt-cache policy $EXP_PKGS \
        && in_root "$root" apt-get clean \
        || rc=$?
    umount "$root/proc" || umount -l "$root/proc"
    return $rc
}

T_CHROOT=$(date +%s)
if [ "$(cat "$CH/.keycache-compat" 2>/dev/null)" != "$CACHE_KEY" ]; then
    make_chroot
else
    say "reusing cached chroot $CH"
fi
T_CHROOT=$(elapsed "$T_CHROOT")

# ---- mounts and the run's copy of the tree -------------------------------

RUN=$(mktemp -d "$CH/kc-compat.XXXXXX")
RUN_IN=${RUN#"$CH"}
MOUNTS=()

cleanup()
{
    local i

    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[$i]}" || umount -l "${MOUNTS[$i]}" || true
    done
    if [ "$KEEP" = 1 ]; then
        say "kept $RUN (enter with: chroot $CH /bin/bash, cd $RUN_IN)"
    else
        rm -rf --one-file-system "$RUN"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount -t proc proc "$CH/proc"
MOUNTS+=("$CH/proc")
# debootstrap makes /dev nodes itself, except where mknod is not allowed
if [ ! -c "$CH/dev/null" ]; then
    mount --bind /dev "$CH/dev"
    MOUNTS+=("$CH/dev")
fi
cp -L /etc/resolv.conf "$CH/etc/resolv.conf" 2>/dev/null || true

in_chroot()
{
    chroot "$CH" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive "$@"
}

if [ "$REFRESH" = 1 ]; then
    say "refreshing packages"
    in_chroot sh -c "apt-get $APT_OPTS update -qq && apt-get $APT_OPTS dist-upgrade -y -qq" > /dev/null
fi

# Same relative layout as the checkout: <run>/<name> and <run>/shared/vectors.
NAME=$(basename "$SRC")
mkdir -p "$RUN/$NAME" "$RUN/shared"
tar -C "$SRC" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$RUN/$NAME" -xf -
cp -a "$VECTORS" "$RUN/shared/vectors"
# A program with the host's own libcrypto linked in, run in the chroot by
# test_private_libcrypto.sh: a private libcrypto of another release.
FOREIGN=
if [ -f /usr/lib/x86_64-linux-gnu/libcrypto.a ] && [ "$BENCH" = 0 ] \
   && gcc -O1 -o "$RUN/kc_private_host" "$SRC/test/kc_private.c" \
          /usr/lib/x86_64-linux-gnu/libcrypto.a -ldl -pthread 2> /dev/null; then
    FOREIGN=$RUN_IN/kc_private_host
fi

# ---- configure, build, test ----------------------------------------------

cat > "$RUN/run.sh" << 'EOF'
set -u
cd "$1"
echo "== openssl: $(openssl version) (libcrypto $(pkg-config --modversion libcrypto))"
echo "== cmake: $(cmake --version | head -n 1), $(gcc --version | head -n 1)"
t=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > build.log 2>&1 \
    && cmake --build build -j"$(nproc)" >> build.log 2>&1
rc=$?
echo "== build: $(( $(date +%s) - t ))s"
if [ $rc -ne 0 ]; then
    cat build.log
    echo "== configure/build failed ($rc)"
    exit $rc
fi
# compiler warnings are worth seeing: new headers deprecate things
grep -E 'warning:' build.log | sort -u
t=$(date +%s)
if [ "$3" = mutants ]; then
    # word splitting of $4 (mutants.py's arguments) is intended
    python3 tools/mutants.py $4
    rc=$?
    echo "== mutants: $(( $(date +%s) - t ))s"
    exit $rc
fi
if [ "$3" = patterns ] || [ "$3" = floor ]; then
    # bench/patterns.sh or bench/floor.sh; word splitting of $4 (its extra
    # arguments) is intended
    cmd="tools/compat.sh $9 --bench --$3"
    PATTERNS_CMD=$cmd FLOOR_CMD=$cmd bash "bench/$3.sh" build \
        --markdown "$3.md" $4
    rc=$?
    echo "== $3: $(( $(date +%s) - t ))s"
    [ -f "$3.md" ] && { echo "== Markdown:"; cat "$3.md"; }
    case " $3 $4 " in
    " patterns "*" --update-bounds "*)
        echo "== bounds for this OpenSSL (copy into bench/patterns.bounds):"
        grep "^bound $(OPENSSL_CONF=/dev/null build/bench/kcpatterns --version-key) " \
            bench/patterns.bounds ;;
    esac
    exit $rc
fi
if [ "$3" = bench ]; then
    # word splitting of $4 (the scenario list) is intended
    echo "== bench config: build/$6"
    SIZES="$5" KC_CONF="$PWD/build/$6" SHARED_DETAIL="$7" \
        bash bench/callgrind.sh build $4
    rc=$?
    echo "== bench: $(( $(date +%s) - t ))s"
    exit $rc
fi
cd build
export KC_PRIVATE_FOREIGN="$8"
ctest --output-on-failure $2 2>&1 | tee ../ctest.log
rc=${PIPESTATUS[0]}
echo "== ctest: $(( $(date +%s) - t ))s"
exit $rc
EOF

T_RUN=$(date +%s)
set +e
MODE=test
[ "$BENCH" = 1 ] && MODE=bench
[ "$PATTERNS" = 1 ] && MODE=patterns && BENCH_SCEN=$PATTERNS_ARGS
[ "$FLOOR" = 1 ] && MODE=floor && BENCH_SCEN=$PATTERNS_ARGS
[ "$MUTANTS" = 1 ] && MODE=mutants && BENCH_SCEN=$MUTANTS_ARGS
in_chroot /bin/bash "$RUN_IN/run.sh" "$RUN_IN/$NAME" "$CTEST_ARGS" "$MODE" \
    "$BENCH_SCEN" "$BENCH_SIZES" "$BENCH_CONF" "${SHARED_DETAIL:-}" \
    "$FOREIGN" "$SUITE"
RC=$?
set -e
T_RUN=$(elapsed "$T_RUN")

say "summary"
echo "openssl:  $(in_chroot openssl version)"
if [ -f "$RUN/$NAME/ctest.log" ]; then
    grep -E 'tests passed|tests failed' "$RUN/$NAME/ctest.log" || true
    sed -n '/The following tests FAILED/,$p' "$RUN/$NAME/ctest.log"
fi
echo "time:     chroot ${T_CHROOT}s, build+test ${T_RUN}s, total $(elapsed "$T0")s"
echo "status:   $RC"
exit $RC
