#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The forwarding floor: each row of the pattern catalogue for default,
# keycache and build/bench/floor.so, a provider that only forwards each
# call to a default context of its own (bench/floor.c).  A provider that
# caches must own its contexts, so no such design can go below the floor.
#
#   bench/floor.sh <build-dir> [--markdown FILE] [row ...]
#
# Five runs of bench/patterns.sh (not judged): keycache, then floor.so in
# keycache's place in the same config, in four variants: its wrappers from
# malloc or from a thread-local spare (FLOOR_SPARE), its contexts made in
# its private library context or with the application's default's
# (FLOOR_APP).  The floor of a row is its cheapest variant.  Per row: the three Ir/op, keycache/default,
# floor/default, the row's target (bench/patterns.bounds) and where the
# row stands:
#   met          keycache/default within the target
#   above floor  not met, but the floor is within it: keycache's own work
#   floor above  the floor alone exceeds the target: no wrapper meets it
#   not met      a gain (a target below 1x) not reached: forwarding alone
#                gains nothing, so the floor says nothing of it
set -euo pipefail
build=$(cd "${1:?usage: $0 <build-dir> [--markdown FILE] [row ...]}" && pwd)
shift
markdown=
if [ "${1:-}" = --markdown ]; then
    markdown=${2:?}
    shift 2
fi
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$build/bench/floor.so" ] \
    || { echo "no $build/bench/floor.so: build the kcfloor target" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|^\([[:space:]]*module[[:space:]]*=\).*keycache[^/]*\.so|\1 $build/bench/floor.so|" \
    "$build/openssl.cnf" >"$tmp/floor.cnf"
grep -q "floor.so" "$tmp/floor.cnf" \
    || { echo "no module line in $build/openssl.cnf" >&2; exit 2; }

# "<row> <default Ir> <other Ir>" of one run
run() {
    PATTERNS_BOUNDS=/dev/null bash "$here/patterns.sh" "$build" "$@" \
        | awk '$2 ~ /^[0-9.]+$/ && $3 ~ /^[0-9.]+$/ { print $1, $2, $3 }'
}
run "$@" >"$tmp/kc"
for v in 00 01 10 11; do
    KC_CONF=$tmp/floor.cnf FLOOR_SPARE=${v%?} FLOOR_APP=${v#?} run "$@" >"$tmp/fl$v"
done
ver=$(OPENSSL_CONF=/dev/null "$build/bench/kcpatterns" --version-key)

made="\`${FLOOR_CMD:-bash bench/floor.sh build}\` ($(openssl version 2>/dev/null || echo "OpenSSL $ver"), $(date -u +%Y-%m-%d))"
awk -v bounds="$here/patterns.bounds" -v md="$markdown" -v ver="$ver" \
    -v made="$made" '
    BEGIN { while ((getline l < bounds) > 0) { split(l, f, " ")
                if (f[1] == "target") target[f[2]] = f[3] } }
    FILENAME ~ /kc$/ { n++; order[n] = $1; def[$1] = $2; kc[$1] = $3; next }
    { if (!($1 in fl) || $3 < fl[$1]) fl[$1] = $3 }
    END {
        printf "forwarding floor, OpenSSL %s: Ir/op under callgrind\n", ver
        printf "%-24s %11s %11s %11s %8s %9s %7s  %s\n", "row", "default",
               "keycache", "floor", "kc/def", "floor/def", "target", "stands"
        if (md != "") {
            printf "### OpenSSL %s\n\nMade by %s; rows with a target.\n\n", ver, made > md
            print "| row | default Ir | keycache Ir | floor Ir | kc/def | floor/def | target | stands |" > md
            print "|---|---:|---:|---:|---:|---:|---:|---|" > md
        }
        for (i = 1; i <= n; i++) {
            r = order[i]; t = (r in target) ? target[r] : "-"
            x = kc[r] / def[r]; y = fl[r] / def[r]; s = "-"
            if (t ~ /x$/) { v = t; sub(/x$/, "", v)
                s = x <= v ? "met" : v < 1 ? "not met" \
                    : y <= v ? "above floor" : "floor above" }
            printf "%-24s %11.1f %11.1f %11.1f %7.3fx %8.3fx %7s  %s\n",
                   r, def[r], kc[r], fl[r], x, y, t, s
            if (md != "" && t != "-")
                printf "| `%s` | %.1f | %.1f | %.1f | %.3f× | %.3f× | %s | %s |\n",
                       r, def[r], kc[r], fl[r], x, y, t, s > md
        }
    }' "$tmp/kc" "$tmp"/fl??
