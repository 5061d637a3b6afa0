#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The forwarding floor: each row of the pattern catalogue for default,
# keycache, and a provider that only forwards each call to a default
# context of the same algorithm, saving nothing (bench/floor.c).  Where
# that floor exceeds a row's target, trimming a wrapper's overhead cannot
# meet it: only work that saves more than the wrapper costs in that row
# can (a hit, or an own context cheaper than the default's).
#
#   bench/floor.sh <build-dir> [--markdown FILE] [row ...]
#
# Five runs of bench/patterns.sh (not judged): keycache, then the floor in
# keycache's place in the same config (its module line swapped), in four
# variants: floor.so or floor-spare.so (a wrapper kept for the thread's
# next context), contexts made in its private library context or with the
# application's default's (FLOOR_APP=1).  A row's floor is its cheapest
# variant (named in the table).  Per row: the three Ir/op, keycache /
# default, floor / default, the row's target (bench/patterns.bounds; for
# "+0.5M" the differences in millions) and where it stands:
#   met          keycache within the target
#   overhead     not met, but the floor is within it: keycache's own work
#   needs saving the floor exceeds the target too
#   not met      a gain (a target below 1x): forwarding gains nothing
#   skey         3.5+, a first call that fetches a cipher: the floor offers
#                no EVP_SKEY key managers, which keycache must (and so
#                every cipher of the default's): not comparable
set -euo pipefail
build=$(cd "${1:?usage: $0 <build-dir> [--markdown FILE] [row ...]}" && pwd)
shift
markdown=
if [ "${1:-}" = --markdown ]; then
    markdown=${2:?}
    shift 2
fi
here=$(cd "$(dirname "$0")" && pwd)
for m in floor floor-spare; do
    [ -f "$build/bench/$m.so" ] \
        || { echo "no $build/bench/$m.so: build kcfloor, kcfloor_spare" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in floor floor-spare; do
    sed "s|^\([[:space:]]*module[[:space:]]*=\).*keycache[^/]*\.so|\1 $build/bench/$m.so|" \
        "$build/openssl.cnf" >"$tmp/$m.cnf"
    grep -q "$m.so" "$tmp/$m.cnf" \
        || { echo "no module line in $build/openssl.cnf" >&2; exit 2; }
done

# "<row> <default Ir> <other Ir>" of one run
run() {
    PATTERNS_BOUNDS=/dev/null bash "$here/patterns.sh" "$build" "$@" \
        | awk '$2 ~ /^[0-9.]+$/ && $3 ~ /^[0-9.]+$/ { print $1, $2, $3 }'
}
run "$@" >"$tmp/kc"
for m in floor floor-spare; do
    for app in 0 1; do
        KC_CONF=$tmp/$m.cnf FLOOR_APP=$app run "$@" >"$tmp/v.$m.app$app"
    done
done
ver=$(OPENSSL_CONF=/dev/null "$build/bench/kcpatterns" --version-key)

made="\`${FLOOR_CMD:-bash bench/floor.sh build}\` ($(openssl version 2>/dev/null || echo "OpenSSL $ver"), $(date -u +%Y-%m-%d))"
awk -v bounds="$here/patterns.bounds" -v md="$markdown" -v ver="$ver" \
    -v made="$made" '
    BEGIN { while ((getline l < bounds) > 0) { split(l, f, " ")
                if (f[1] == "target") target[f[2]] = f[3] }
            skey = ver !~ /^3\.[0-4]$/
            split("first-cmac first-gmac first-gmac-copies first-gcm first-ocb first-siv", s, " ")
            for (i in s) skeyrow[s[i]] = 1 }
    FILENAME ~ /kc$/ { n++; order[n] = $1; def[$1] = $2; kc[$1] = $3; next }
    { v = FILENAME; sub(/.*\/v\./, "", v)
      if (!($1 in fl) || $3 < fl[$1]) { fl[$1] = $3; fv[$1] = v } }
    END {
        printf "forwarding floor, OpenSSL %s: Ir/op under callgrind\n", ver
        printf "%-24s %11s %11s %11s %8s %9s %7s  %-13s %s\n", "row",
               "default", "keycache", "floor", "kc/def", "floor/def",
               "target", "stands", "floor variant"
        if (md != "") {
            printf "### OpenSSL %s\n\nMade by %s; rows with a target.\n\n", ver, made > md
            print "| row | default Ir | keycache Ir | floor Ir | kc/def | floor/def | target | stands | floor variant |" > md
            print "|---|---:|---:|---:|---:|---:|---:|---|---|" > md
        }
        for (i = 1; i <= n; i++) {
            r = order[i]; t = (r in target) ? target[r] : "-"
            x = kc[r] / def[r]; y = fl[r] / def[r]; st = "-"
            if (t ~ /M$/) { v = t; sub(/M$/, "", v); sub(/^\+/, "", v)
                a = (kc[r] - def[r]) / 1e6; b = (fl[r] - def[r]) / 1e6
                st = a <= v ? "met" : b <= v ? "overhead" : "needs saving" }
            else if (t ~ /x$/) { v = t; sub(/x$/, "", v)
                st = x <= v ? "met" : v < 1 ? "not met" \
                    : skey && (r in skeyrow) ? "skey" \
                    : y <= v ? "overhead" : "needs saving" }
            printf "%-24s %11.1f %11.1f %11.1f %7.3fx %8.3fx %7s  %-13s %s\n",
                   r, def[r], kc[r], fl[r], x, y, t, st, fv[r]
            if (md != "" && t != "-")
                printf "| `%s` | %.1f | %.1f | %.1f | %.3f× | %.3f× | %s | %s | %s |\n",
                       r, def[r], kc[r], fl[r], x, y, t, st, fv[r] > md
        }
    }' "$tmp/kc" "$tmp"/v.*
