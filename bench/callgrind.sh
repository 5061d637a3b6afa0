#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Deterministic instruction counts: keycache vs default, per op.
#
#   bench/callgrind.sh <build-dir> [scenario[:size] ...]
#
# For each scenario, size and arm, runs
#   valgrind --tool=callgrind kcbench --callgrind SCENARIO:SIZE:ARM:ITERS
# with ITERS = $ITERS1 and $ITERS2 (default 2000 and 4000) and reports
#   Ir/op = (Ir(ITERS2) - Ir(ITERS1)) / (ITERS2 - ITERS1)
# so that process start-up, library setup and the first (missing) op cancel.
# Scenarios without a size are run at $SIZES (default "32 256"); the cookie,
# tls-* and advkeys-* scenarios have a fixed size.  `kcbench --list` shows
# the scenario names, their arms, fixed size and a divisor for ITERS1/ITERS2
# (50 for a TLS handshake per op: 40 and 80 handshakes).  For the tls-*
# rows kcbench also reports keycache's events, printed per handshake (same
# two-length difference, keycache arm).
# $KCBENCH_ARGS is passed to kcbench as well (e.g. "--keys 4000"), and
# KC_CONF selects another keycache config.
#
# The same runs count shared-state operations per op (bench/sharedops.py):
# lock acquisitions and reference-count calls on shared objects, each
# printed as locks+refs, "in" under a provider's dispatch function
# (keycache's or the default's) and "out" outside any (the application's
# fetch, EVP_*_CTX_new/free).  SHARED_DETAIL=1 adds the calls by function
# and by the provider function they run under;
# SHARED=0 (or no python3/objcopy) leaves the columns out.
set -euo pipefail

build=${1:?usage: $0 <build-dir> [scenario[:size] ...]}
shift
kcbench="$build/bench/kcbench"
iters1=${ITERS1:-2000}
iters2=${ITERS2:-4000}
read -r -a extra <<<"${KCBENCH_ARGS:-}"
sizes=${SIZES:-32 256}
if [ $# -eq 0 ]; then
    set -- qmac-sha256 hmac-fresh-sha256 gcm256-enc-legacy \
           gcm256-dec-legacy gcm256-enc-prefetch cookie
fi

[ -x "$kcbench" ] || { echo "no $kcbench: build the kcbench target" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }
if [ "$iters2" -le "$iters1" ]; then
    echo "ITERS2 must be larger than ITERS1" >&2
    exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/cglib.sh
. "$here/cglib.sh"
# A copy of libcrypto with the default's dispatch functions named, and the
# callgrind option that gives every call its chain (see sharedops.py); the
# code and so Ir are the same.
cg_opts=()
shared=${SHARED:-1}
if [ "$shared" = 1 ]; then
    if command -v python3 >/dev/null && command -v objcopy >/dev/null \
            && [ -x "$build/bench/kcdispatch" ] \
            && opt=$(python3 "$here/sharedops.py" prep "$build" "$tmp/so"); then
        cg_opts=("$opt")
    else
        echo "shared-state columns left out (needs python3, objcopy, kcdispatch)" >&2
        shared=0
    fi
fi
# The process-wide default context is never used; keep it from loading
# anything the caller's environment points at.
export OPENSSL_CONF=/dev/null

# Total instructions (Ir) of one kcbench --callgrind run; keycache's event
# counts, if kcbench printed them, are left in $tmp/kc.<$2>.
ir_of() {
    local out="$tmp/cg.$2.out" lp=${LD_LIBRARY_PATH:-}

    [ "$shared" = 1 ] && lp=$tmp/so${lp:+:$lp}
    if ! LD_LIBRARY_PATH=$lp valgrind --tool=callgrind "${cg_opts[@]}" \
            --callgrind-out-file="$out" \
            "$kcbench" "${extra[@]}" --callgrind "$1" >"$tmp/log" 2>&1; then
        echo "run failed: kcbench --callgrind $1" >&2
        cat "$tmp/log" >&2
        return 1
    fi
    grep '^kc-counters:' "$tmp/log" >"$tmp/kc.$2" || true
    cg_ir "$out"
}

# Ir/op for one scenario:size:arm, printed with one decimal; ops per run
# are the global counts divided by $div.
ir_per_op() {
    local a b n1=$((iters1 / div)) n2=$((iters2 / div))
    a=$(ir_of "$1:$n1" 1) || return 1
    b=$(ir_of "$1:$n2" 2) || return 1
    awk -v a="$a" -v b="$b" -v n=$((n2 - n1)) \
        'BEGIN { printf "%.1f", (b - a) / n }'
}

# Shared-state ops per op of the last ir_per_op, arm $1, as "in out", each
# locks+refs; the calls by function go to $tmp/detail.
shared_per_op() {
    local v
    [ "$shared" = 1 ] || return 0
    python3 "$here/sharedops.py" perop $((iters1 / div)) "$tmp/cg.1.out" \
        $((iters2 / div)) "$tmp/cg.2.out" "$tmp/so" --detail >"$tmp/sh" || return 1
    read -r -a v <"$tmp/sh"
    printf '%s+%s %s+%s' "${v[0]}" "${v[1]}" "${v[2]}" "${v[3]}"
    tail -n +2 "$tmp/sh" | sed "s/^/  $1/" >>"$tmp/detail"
}

# keycache events per op from the last ir_per_op, if kcbench counted them.
events_per_op() {
    [ -s "$tmp/kc.1" ] && [ -s "$tmp/kc.2" ] || return 0
    paste -d' ' "$tmp/kc.1" "$tmp/kc.2" | awk -v n=$(((iters2 - iters1) / div)) '
        { printf "%-20s keycache events per op (%d ops):", "", n
          for (i = 2; i <= 9; i += 2)
              printf " %s %.2f", $i, ($(i + 10) - $(i + 1)) / n
          printf "\n" }'
}

printf 'callgrind: Ir/op = (Ir(%d ops) - Ir(%d ops)) / %d, single thread\n' \
    "$iters2" "$iters1" $((iters2 - iters1))
if [ "$shared" = 1 ]; then
    printf 'shared-state ops/op: locks+refs, in = under a provider'"'"'s dispatch function\n'
fi
printf '%-20s %6s %-9s %14s %-9s %14s %8s' scenario size "arm A" "Ir/op" \
    "arm B" "Ir/op" "B/A"
[ "$shared" = 1 ] && printf ' %7s %7s %7s %7s' "A in" "A out" "B in" "B out"
printf '\n'

status=0
for spec in "$@"; do
    name=${spec%%:*}
    line=$("$kcbench" --list | awk -v n="$name" '$1 == n')
    if [ -z "$line" ]; then
        echo "unknown scenario '$name' (see kcbench --list)" >&2
        status=1
        continue
    fi
    read -r _ arm_a arm_b fixed div <<<"$line"
    div=${div:-1}
    if [ "$fixed" != 0 ]; then
        run_sizes=$fixed
    elif [ "$spec" != "$name" ]; then
        run_sizes=${spec#*:}
    else
        run_sizes=$sizes
    fi
    for size in $run_sizes; do
        : >"$tmp/detail"
        # each arm's shared ops before the next runs overwrite its profiles
        if ! ia=$(ir_per_op "$name:$size:$arm_a") \
                || ! sa=$(shared_per_op "$arm_a") \
                || ! ib=$(ir_per_op "$name:$size:$arm_b") \
                || ! sb=$(shared_per_op "$arm_b"); then
            printf '%-20s %6s   FAILED (see stderr)\n' "$name" "$size"
            status=1
            continue
        fi
        ratio=$(awk -v a="$ia" -v b="$ib" 'BEGIN { printf "%.2fx", b / a }')
        printf '%-20s %6s %-9s %14s %-9s %14s %8s' "$name" "$size" \
            "$arm_a" "$ia" "$arm_b" "$ib" "$ratio"
        # shellcheck disable=SC2086 # "in out" of each arm, split on purpose
        [ "$shared" = 1 ] && printf ' %7s %7s %7s %7s' $sa $sb
        printf '\n'
        [ -n "${SHARED_DETAIL:-}" ] && cat "$tmp/detail"
        events_per_op
    done
done
exit $status
