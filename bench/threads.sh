#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Thread scaling: kcbench's 1- and 2-thread rows, repeated, as a Markdown
# table of medians and spreads.
#
#   bench/threads.sh <build-dir> [runs]
#
# Runs `kcbench --rows $ROWS --threads $THREADS --sizes 32 --clock cpu` $runs
# times (default 3; each row alternates its arms A B A B as kcbench always
# does) and prints, per row and thread count, the median over the runs of
# each arm's ns/op (per-thread CPU time) and of the ratio keycache/default,
# with the ratio's lowest and highest run.  CPU time counts the cache-line
# transfers of contended locks and refcounts, and is the least disturbed by
# other processes; the wall-clock medians are in the CSVs, kept in
# $KEEP_CSV if set.  The load average before each run is printed: on a
# loaded machine two threads rarely run at once, and contention shows less.
set -euo pipefail

build=${1:?usage: $0 <build-dir> [runs]}
runs=${2:-3}
rows=${ROWS:-qmac-sha256,hmac-fresh-sha256,gcm256-enc-prefetch,gcm256-enc-legacy,macnew-cmac-aes256,macnew-gmac-aes256,macnew-kmac128,aeadnew-ocb-aes128,aeadnew-siv-aes128,cookie,floor-hmac-sha256}
threads=${THREADS:-1,2}
kcbench="$build/bench/kcbench"
[ -x "$kcbench" ] || { echo "no $kcbench" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 1; i <= runs; i++)); do
    echo "run $i/$runs, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$kcbench" --rows "$rows" --threads "$threads" --sizes 32 --clock cpu \
        --csv "$tmp/run$i.csv" >"$tmp/run$i.txt"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ -n "${KEEP_CSV:-}" ]; then
    mkdir -p "$KEEP_CSV"
    cp "$tmp"/run*.csv "$KEEP_CSV"/
fi

python3 - "$rows" "$tmp"/run*.csv <<'EOF'
import csv, statistics, sys

order = sys.argv[1].split(",")
rows = {}
for path in sys.argv[2:]:
    for r in csv.DictReader(open(path)):
        key = (r["scenario"], int(r["threads"]))
        rows.setdefault(key, []).append(r)
threads = sorted({t for _, t in rows})
med = statistics.median

head = "| row |"
rule = "|---|"
for t in threads:
    head += f" {t} thr: left | right | ratio (runs) |"
    rule += "---:|---:|---:|"
print(head)
print(rule)
for name in order:
    line = f"| {name} |"
    for t in threads:
        rs = rows.get((name, t), [])
        if not rs:
            line += " - | - | - |"
            continue
        a = med(float(r["a_ns_median"]) for r in rs)
        b = med(float(r["b_ns_median"]) for r in rs)
        ratios = [float(r["ratio_b_over_a"]) for r in rs]
        line += (f" {a:,.0f} | {b:,.0f} | {med(ratios):.2f}x "
                 f"({min(ratios):.2f}-{max(ratios):.2f}) |")
    print(line)
arms = {(r["arm_a"], r["arm_b"]) for rs in rows.values() for r in rs}
print()
print("left/right: " + "; ".join(f"{a} / {b}" for a, b in sorted(arms))
      + f"; ns/op per thread, CPU time; median of {len(sys.argv) - 2} runs")
EOF
