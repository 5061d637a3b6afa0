#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pattern catalogue (issues 33 and 34): every usage pattern a row,
# default and keycache side by side, instructions per op under callgrind.
#
#   bench/patterns.sh <build-dir> [--markdown FILE] [--update-bounds]
#                     [--set KEY=VALUE ...] [row ...]
#
# Each row of build/bench/kcpatterns (kcpatterns --list) runs twice, each
# time as a process of its own under valgrind --tool=callgrind:
#   default   OPENSSL_CONF = the keycache config with keycache's lines
#             taken out (its provider line, its section, ?provider=keycache):
#             `default` alone, activated by a config, so that both arms
#             read and apply a config the same way
#   keycache  OPENSSL_CONF = $KC_CONF (default <build>/openssl.cnf)
# Rows named *-distro read each arm's config after bench/distro.cnf, a
# file the size of a distribution's default config: what every process
# pays when keycache's lines sit in the file a machine already reads.
# Only the row's measured region is counted (--instr-atstart=no and the
# CALLGRIND_*_INSTRUMENTATION requests in kcpatterns.c), after its warm-up;
# `proc` rows count the whole process.  Fork rows count the parent and
# every child (a file per process, %p); thread rows count every thread.
# Ir/op = Ir / ops counted.  CPU ns/op comes from a run of the same row
# without valgrind (information only: it is noisy, the figure is Ir).
#
# Each row has a bound in bench/patterns.bounds ($PATTERNS_BOUNDS) for the
# running libcrypto's major.minor: keycache/default must not exceed it
# (a ratio, "1.01x"), or for bounds written "+0.5M" keycache - default must
# not exceed that many million instructions.  The file also holds each
# row's target from the issues.  Exit status 1 if a row exceeds its bound
# or fails, 0 otherwise (rows without a bound on this version are shown,
# not judged).
#
#   --markdown FILE   also write the table as Markdown (docs/performance.md)
#   --profiles DIR    keep each run's callgrind files in DIR/<row>.<arm>
#                     (for callgrind_annotate; in a chroot with
#                     tools/compat.sh --keep)
#   --update-bounds   rewrite this version's bounds of the rows run: the
#                     target where the row meets it, else today's figure
#                     + 1% (so that nothing gets worse meanwhile); the
#                     other rows' bounds are left as they are
#   --set KEY=VALUE   the keycache arm's config with KEY = VALUE in
#                     [keycache_sect] (e.g. aes_gcm=on where auto is off):
#                     not the shipped config, so each row is judged
#                     against its target, not its bound
# Environment: KC_CONF, PATTERNS_BOUNDS, PATTERNS_JOBS (parallel runs,
# default 2), PATTERNS_CMD (the command named in the Markdown).
set -euo pipefail

build=${1:?usage: $0 <build-dir> [--markdown FILE] [--profiles DIR] [--update-bounds] [--set KEY=VALUE ...] [row ...]}
shift
markdown=
profiles=
update=0
want=()
sets=()
while [ $# -gt 0 ]; do
    case $1 in
    --markdown) markdown=${2:?}; shift 2 ;;
    --profiles) profiles=${2:?}; shift 2 ;;
    --update-bounds) update=1; shift ;;
    --set)
        [[ ${2:-} =~ ^[a-z_]+=[A-Za-z0-9_.:]+$ ]] \
            || { echo "--set wants KEY=VALUE, not '${2:-}'" >&2; exit 2; }
        sets+=("$2"); shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) want+=("$1"); shift ;;
    esac
done

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/cglib.sh
. "$here/cglib.sh"
build=$(cd "$build" && pwd)
bin=$build/bench/kcpatterns
kc_conf=${KC_CONF:-$build/openssl.cnf}
bounds=${PATTERNS_BOUNDS:-$here/patterns.bounds}
jobs=${PATTERNS_JOBS:-2}
[ -x "$bin" ] || { echo "no $bin: build the kcpatterns target" >&2; exit 2; }
[ -f "$kc_conf" ] || { echo "no config $kc_conf" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

if [ ${#sets[@]} -gt 0 ]; then
    [ "$update" = 1 ] && { echo "--update-bounds is for the shipped config, not --set" >&2; exit 2; }
    # each KEY's line in [keycache_sect] replaced, or added at its top
    awk -v sets="${sets[*]}" '
        BEGIN { n = split(sets, kv, " ")
                for (i = 1; i <= n; i++) { split(kv[i], p, "="); val[p[1]] = p[2] } }
        /^[[:space:]]*\[/ { ins = ($0 ~ /^[[:space:]]*\[[[:space:]]*keycache_sect[[:space:]]*\]/)
                            print
                            if (ins) for (k in val) print k " = " val[k]
                            next }
        ins { k = $1; sub(/=.*/, "", k); if (k in val) next }
        { print }' "$kc_conf" >"$tmp/kc.cnf"
    for kv in "${sets[@]}"; do
        grep -q "^${kv%%=*} = ${kv#*=}\$" "$tmp/kc.cnf" \
            || { echo "no [keycache_sect] in $kc_conf for $kv" >&2; exit 2; }
    done
    kc_conf=$tmp/kc.cnf
fi

# The default arm's config: the keycache config without keycache's lines.
awk '/^[[:space:]]*\[/ { skip = ($0 ~ /^[[:space:]]*\[[[:space:]]*keycache_sect[[:space:]]*\]/) }
     skip { next }
     /^[[:space:]]*keycache[[:space:]]*=/ { next }
     /provider[[:space:]]*=[[:space:]]*keycache/ { next }
     { print }' "$kc_conf" >"$tmp/default.cnf"
if grep -v "^[[:space:]]*#" "$tmp/default.cnf" | grep -q keycache; then
    echo "could not take keycache out of $kc_conf:" >&2
    grep -n keycache "$tmp/default.cnf" >&2
    exit 2
fi
ver=$(OPENSSL_CONF=$tmp/default.cnf "$bin" --version-key)
# "[ default ]" takes the config's own top keys back to the default section
for arm in default keycache; do
    src=$tmp/default.cnf
    [ $arm = keycache ] && src=$kc_conf
    { cat "$here/distro.cnf"; echo "[ default ]"; cat "$src"; } \
        >"$tmp/distro.$arm.cnf"
done

"$bin" --list >"$tmp/rows"
if [ ${#want[@]} -gt 0 ]; then
    for r in "${want[@]}"; do
        awk -F'\t' -v r="$r" '$1 == r { f = 1 } END { exit !f }' "$tmp/rows" \
            || { echo "no row '$r' (kcpatterns --list)" >&2; exit 2; }
    done
    awk -F'\t' -v l=" ${want[*]} " 'index(l, " " $1 " ")' "$tmp/rows" >"$tmp/r"
    mv "$tmp/r" "$tmp/rows"
fi

# One row, one arm: "<Ir> <cpu_ns> <ops>" into $tmp/res.<row>.<arm>.
run_one() {
    local row=$1 arm=$2 kind=$3 conf d ir cpu
    conf=$tmp/default.cnf
    [ "$arm" = keycache ] && conf=$kc_conf
    case $row in *-distro) conf=$tmp/distro.$arm.cnf ;; esac
    d=$tmp/cg.$row.$arm
    mkdir -p "$d"
    local at=no
    [ "$kind" = proc ] && at=yes
    if ! (cd "$d" && OPENSSL_CONF=$conf valgrind --tool=callgrind \
            --instr-atstart=$at --callgrind-out-file="$d/cg.%p" \
            "$bin" --run "$row" >"$d/log" 2>&1); then
        echo "FAILED" >"$tmp/res.$row.$arm"
        { echo "== $row ($arm) failed:"; cat "$d/log"; } >&2
        return 0
    fi
    ir=$(cg_ir "$d"/cg.*)
    cpu=$(OPENSSL_CONF=$conf "$bin" --cpu "$row" 2>/dev/null \
          | awk '/^cpu_ns/ { printf "%.0f", $2 / $4 }')
    echo "$ir ${cpu:-0}" >"$tmp/res.$row.$arm"
    if [ -n "$profiles" ]; then
        rm -rf "$profiles/$row.$arm"
        cp -r "$d" "$profiles/$row.$arm"
    fi
    rm -rf "$d"
}
export -f run_one cg_ir
if [ -n "$profiles" ]; then
    mkdir -p "$profiles"
    profiles=$(cd "$profiles" && pwd)
fi
export tmp bin kc_conf profiles

awk -F'\t' '{ print $1, "default", $2; if ($2 != "ref") print $1, "keycache", $2 }' \
    "$tmp/rows" | xargs -P "$jobs" -n 3 bash -c 'run_one "$@"' _

# ---- the table ----------------------------------------------------------

# bound/target of a row: "<target> <bound>" ("-" where none)
lookup() {
    awk -v r="$1" -v v="$ver" '
        $1 == "target" && $2 == r { t = $3 }
        $1 == "bound" && $2 == v && $3 == r { b = $4 }
        END { print (t == "" ? "-" : t), (b == "" ? "-" : b) }' "$bounds" 2>/dev/null \
        || echo "- -"
}

# judge VALUE_RATIO DELTA_M BOUND -> pass/FAIL/-
judge() {
    awk -v x="$1" -v d="$2" -v b="$3" 'BEGIN {
        if (b == "-") { print "-"; exit }
        if (b ~ /M$/) { v = b; sub(/M$/, "", v); ok = d <= v + 0 }
        else { v = b; sub(/x$/, "", v); ok = x <= v + 0 }
        print ok ? "pass" : "FAIL" }'
}

# new bound from today's figure: target if met, else figure + 1%
new_bound() {
    awk -v x="$1" -v d="$2" -v t="$3" 'BEGIN {
        if (t ~ /M$/) { v = t; sub(/M$/, "", v); sub(/^\+/, "", v)
            if (d <= v + 0) { print t; exit }
            b = d >= 0 ? d * 1.01 : d * 0.99
            printf "%+.2fM\n", int(b * 100 + 0.999999) / 100; exit }
        if (t != "-") { v = t; sub(/x$/, "", v)
            if (x <= v + 0) { print t; exit } }
        printf "%.3fx\n", int(x * 1.01 * 1000 + 0.999999) / 1000 }'
}

status=0
printf 'pattern catalogue: %s, keycache config %s%s\n' \
    "$(OPENSSL_CONF=$tmp/default.cnf openssl version 2>/dev/null || echo "OpenSSL $ver")" \
    "$kc_conf" "${sets[*]:+ with ${sets[*]} (judged against the targets)}"
printf 'Ir/op under callgrind (deterministic, the figure); CPU ns/op natively (information)\n'
printf '%-24s %12s %12s %8s %9s %9s %9s %-5s %8s %8s  %s\n' row "default Ir" \
    "keycache Ir" "kc/def" "kc-def M" target bound "" "def ns" "kc ns" \
    "stands for"
: >"$tmp/table"
: >"$tmp/newbounds"
while IFS=$'\t' read -r row kind ops programs; do
    [ "$kind" = ref ] && continue
    read -r ia ca <"$tmp/res.$row.default" || ia=FAILED
    read -r ib cb <"$tmp/res.$row.keycache" || ib=FAILED
    read -r target bound < <(lookup "$row")
    [ ${#sets[@]} -gt 0 ] && bound=$target
    if [ "$ia" = FAILED ] || [ "$ib" = FAILED ]; then
        printf '%-24s FAILED (see stderr)\n' "$row"
        status=1
        continue
    fi
    read -r pa pb ratio delta < <(awk -v a="$ia" -v b="$ib" -v n="$ops" \
        'BEGIN { printf "%.1f %.1f %.3f %.3f\n", a / n, b / n, b / a, (b - a) / n / 1e6 }')
    res=$(judge "$ratio" "$delta" "$bound")
    [ "$res" = FAIL ] && status=1
    printf '%-24s %12s %12s %7.2fx %+9.3f %9s %9s %-5s %8s %8s  %s\n' "$row" \
        "$pa" "$pb" "$ratio" "$delta" "$target" "$bound" "$res" "$ca" "$cb" \
        "$programs"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$row" "$kind" \
        "$pa" "$pb" "$ratio" "$delta" "$target" "$bound" "$res" "$ca $cb" \
        "$programs" >>"$tmp/table"
    printf 'bound %s %s %s\n' "$ver" "$row" \
        "$(new_bound "$ratio" "$delta" "$target")" >>"$tmp/newbounds"
done <"$tmp/rows"

# the highest ratio (awk, not sort | head: pipefail and SIGPIPE)
worst=$(awk -F'\t' 'NR == 1 || $5 + 0 > m { m = $5 + 0; w = $0 } END { print w }' \
        "$tmp/table")
if [ -n "$worst" ]; then
    IFS=$'\t' read -r wrow _ wa wb wr _ _ wbound _ _ wprog <<<"$worst"
    # (from the Ir, not the ratio already rounded to 3 places: 10.225 -> 10.23)
    wr=$(awk -v a="$wa" -v b="$wb" 'BEGIN { printf "%.6f", b / a }')
    printf '\nworst row: %s %.2fx (%s vs %s Ir/op; bound %s): %s\n' "$wrow" \
        "$wr" "$wb" "$wa" "$wbound" "$wprog"
fi
# Issue 33: per entry of a full parent cache, a fork child does no more
# than the default's own free of that context (the ref row
# free-keyed-hmac): (fork-child-64keys - fork-child-1key) / 63 entries.
entry=
fr=
[ -f "$tmp/res.free-keyed-hmac.default" ] && read -r fr _ <"$tmp/res.free-keyed-hmac.default"
one=$(awk -F'\t' '$1 == "fork-child-1key" { print $4 }' "$tmp/table")
full=$(awk -F'\t' '$1 == "fork-child-64keys" { print $4 }' "$tmp/table")
fops=$(awk -F'\t' '$1 == "free-keyed-hmac" { print $3 }' "$tmp/rows")
if [ -n "$fr" ] && [ "$fr" != FAILED ] && [ -n "$one" ] && [ -n "$full" ]; then
    entry=$(awk -v a="$one" -v b="$full" -v f="$fr" -v n="$fops" 'BEGIN {
        e = (b - a) / 63; d = f / n
        printf "%.1f %.1f %.3f %s", e, d, e / d, e <= d ? "pass" : "FAIL" }')
    read -r ee ed er eres <<<"$entry"
    printf '
per entry of a full parent cache, a fork child: %s Ir; the default'"'"'s own free of that context (free-keyed-hmac): %s Ir; %sx %s
' \
        "$ee" "$ed" "$er" "$eres"
    [ "$eres" = FAIL ] && status=1
fi
nfail=$(awk -F'\t' '$9 == "FAIL"' "$tmp/table" | wc -l)
nnone=$(awk -F'\t' '$9 == "-"' "$tmp/table" | wc -l)
printf 'rows: %d, over their bound: %d, without a bound for %s: %d; %ds\n' \
    "$(wc -l <"$tmp/table")" "$nfail" "$ver" "$nnone" $(( $(date +%s) - t0 ))

if [ -n "$markdown" ]; then
    {
        printf '### OpenSSL %s\n\n' "$ver"
        printf 'Made by `%s` (%s, %s).\n\n' \
            "${PATTERNS_CMD:-bash bench/patterns.sh build}" \
            "$(OPENSSL_CONF=$tmp/default.cnf openssl version 2>/dev/null || echo "OpenSSL $ver")" \
            "$(date -u +%Y-%m-%d)"
        printf '| row | stands for | default Ir/op | keycache Ir/op | kc/def | kc−def (M Ir) | target | bound | result | CPU ns/op def / kc |\n'
        printf '|---|---|---:|---:|---:|---:|---:|---:|---|---:|\n'
        awk -F'\t' '{ split($10, c, " ");
            printf "| `%s` | %s | %s | %s | %.2f× | %+.3f | %s | %s | %s | %s / %s |\n",
                   $1, $11, $3, $4, $5, $6, $7, $8, $9, c[1], c[2] }' "$tmp/table"
        if [ -n "$worst" ]; then
            printf '\nWorst row: `%s`, %.2f× (%s vs %s Ir/op).\n' "$wrow" \
                "$wr" "$wb" "$wa"
        fi
        if [ -n "$entry" ]; then
            printf '\nPer entry of a full parent cache, a fork child spends %s Ir (`(fork-child-64keys − fork-child-1key) / 63`); the default'"'"'s own `EVP_MAC_CTX_free` of that context spends %s Ir (`free-keyed-hmac`): %s×, %s.\n' \
                "$ee" "$ed" "$er" "$eres"
        fi
    } >"$markdown"
    echo "markdown: $markdown"
fi

if [ "$update" = 1 ]; then
    touch "$bounds"
    # the rows this run measured, in place; other rows' bounds stay
    awk -v v="$ver" '
        NR == FNR { nb[$3] = $0; order[++n] = $3; next }
        $1 == "bound" && $2 == v && ($3 in nb) { print nb[$3]; done[$3] = 1; next }
        { print }
        END { for (i = 1; i <= n; i++) if (!(order[i] in done)) print nb[order[i]] }
    ' "$tmp/newbounds" "$bounds" >"$tmp/b"
    cp "$tmp/b" "$bounds"
    echo "bounds for $ver written to $bounds"
fi
exit $status
