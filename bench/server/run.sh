#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real servers, unchanged, under concurrent load on loopback: default
# provider vs keycache (and, for dn-cookie, the per-thread reuse fix).
#
#   bench/server/run.sh [--build DIR] [--rounds N] [--duration S]
#                       [--warmup S] [--connections C] [--threads T]
#                       [--users N] [--out DIR] [--svg FILE] [server ...]
#
# Servers (all without arguments; see common.sh): dn-cookie, dn-auth
# (ASP.NET Core on Kestrel, built offline into DIR/server) and rb-puma
# (Rack on Debian's puma, -t 2:2 -w 0).  Per server, every arm is started
# once (def: OPENSSL_CONF=/dev/null; kc: DIR/openssl.cnf or $KC_CONF; fix:
# the default provider, the program's /reuse path), check.py requires
# byte-equal deterministic responses from all arms, each arm is warmed up
# with wrk for --warmup seconds, then --rounds rounds run wrk against each
# arm in turn, the order reversed every other round (def kc fix, fix kc
# def, ...).  Per wrk run: the server's utime+stime from /proc/PID/stat
# just before and after it, divided by the requests wrk completed;
# requests/s and p99 from wrk --latency.  At the end every arm is stopped
# and keycache's exit report (KEYCACHE_DEBUG=file:) gives its hits per
# request served.  The table (medians [min-max] over rounds) is printed and
# written to OUT/table.md with OUT/results.csv, OUT/counters.csv and the
# plot OUT/servers.svg (--svg FILE: elsewhere).  dn-auth's requests carry
# the cookies of --users users in turn (each cookie has its own derived
# keys; one cookie for all would make them look cacheable).  Defaults: DIR
# build, 5 rounds of 10 s, 5 s warm-up, wrk -t2 -c4, 1000 users, OUT
# DIR/server-bench.
# Nothing is pinned: on 2 cores the server's threads and wrk's share both.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cmdline="bash bench/server/run.sh${*:+ $*}"
build=build rounds=5 duration=10 warmup=5 conns=4 threads=2 out= svg=
users=1000
while [ $# -gt 0 ]; do
    case $1 in
    --build)       build=$2; shift 2 ;;
    --rounds)      rounds=$2; shift 2 ;;
    --duration)    duration=$2; shift 2 ;;
    --warmup)      warmup=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --threads)     threads=$2; shift 2 ;;
    --out)         out=$2; shift 2 ;;
    --svg)         svg=$2; shift 2 ;;
    --users)       users=$2; shift 2 ;;
    -h|--help)     sed -n '3,29p' "$0"; exit 0 ;;
    -*)            echo "unknown option $1" >&2; exit 2 ;;
    *)             break ;;
    esac
done
build=$(cd "$build" && pwd) || exit 2
# shellcheck source=common.sh
. "$here/common.sh"
conf=${KC_CONF:-$build/openssl.cnf}
[ -f "$conf" ] || { echo "no $conf: build the project first" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk not found (Debian: wrk)" >&2; exit 2; }
out=${out:-$build/server-bench}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
svg=${svg:-$out/servers.svg}
[ "$threads" -le "$conns" ] || threads=$conns

servers=("$@")
[ ${#servers[@]} -gt 0 ] || servers=($(kc_server_table | awk '{ print $1 }'))
for s in "${servers[@]}"; do
    kc_server_case "$s" || { echo "unknown server $s" >&2; exit 2; }
done

kc_server_build "$build"
run=$out/run
rm -rf "$run"
mkdir -p "$run"
pids=()
cleanup()
{
    local p

    for p in "${pids[@]}"; do
        kill -KILL "$p" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "$cmdline"
echo "server bench: wrk -t$threads -c$conns, $rounds rounds of ${duration}s" \
     "per arm after ${warmup}s warm-up; default: OPENSSL_CONF=/dev/null," \
     "keycache: OPENSSL_CONF=$conf"
echo "$(openssl version); $(nproc) CPUs; $(uptime | sed 's/.*load/load/')"
command -v dotnet >/dev/null \
    && echo "dotnet runtime $(dotnet --list-runtimes \
             | awk '/AspNetCore.App/ { v = $2 } END { print v }') (ASP.NET Core)"
command -v puma >/dev/null && echo "$(puma --version 2>/dev/null)," \
    "$(ruby -e 'print "ruby ", RUBY_VERSION')," \
    "$(ruby -ractive_support -e 'print "ActiveSupport ", ActiveSupport::VERSION::STRING' 2>/dev/null)"

echo "server,arm,round,requests,seconds,rps,p99_us,errors,cpu_us_req" \
    >"$out/results.csv"
echo "server,arm,hits,misses,passthrough,served" >"$out/counters.csv"
status=0

# one wrk run against an arm: "requests seconds rps p99_us errors cpu_us_req"
measure()
{
    local server=$1 arm=$2 secs=$3 tag=$4 pid t0 t1 url

    pid=$(cat "$run/$server.$arm.pid")
    url=http://127.0.0.1:${KC_PORT[$arm]}$(kc_server_path "$server" "$arm")
    t0=$(kc_server_cpu "$pid")
    wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "${wrkargs[@]}" \
        "$url" >"$run/$server.$arm.$tag.wrk" 2>&1
    t1=$(kc_server_cpu "$pid")
    "$KC_PYTHON" "$here/report.py" wrk "$run/$server.$arm.$tag.wrk" \
        $((t1 - t0))
}

for server in "${servers[@]}"; do
    kc_server_case "$server"
    if ! kc_server_have "$KC_RUNTIME"; then
        echo "SKIP $server: $KC_WHY"
        continue
    fi
    echo
    echo "== $server: $KC_LABEL"
    declare -A served=()
    failed=
    kc_server_up "$server" "$run" "$conf" || failed=1
    arms=("${KC_ARMS[@]}")
    if [ -z "$failed" ]; then
        if counts=$(KC_CHECK_USERS=$users "$KC_PYTHON" "$here/check.py" \
                    "$server" "$run" "${KC_SPECS[@]}"); then
            echo "responses: identical in all arms ($counts requests;" \
                 "transcripts in $run/$server.*.txt)"
            for kv in $counts; do
                served[${kv%%=*}]=${kv#*=}
            done
        else
            failed=1
        fi
    fi
    if [ -z "$failed" ]; then
        if [ "$(wc -l <"$run/$server.cookie")" -gt 1 ]; then
            # every request the next user's cookie, in turn
            printf '%s\n' "local c = {}" \
                "for l in io.lines(\"$run/$server.cookie\") do c[#c + 1] = l end" \
                "local i = 0" \
                "request = function()" \
                "  i = i % #c + 1" \
                "  return wrk.format(nil, nil, { Cookie = c[i] })" \
                "end" >"$run/$server.lua"
            wrkargs=(-s "$run/$server.lua")
        else
            wrkargs=(-H "Cookie: $(cat "$run/$server.cookie")")
        fi
        for a in "${arms[@]}"; do
            read -r n _ _ _ e _ <<<"$(measure "$server" "$a" "$warmup" warm)"
            served[$a]=$((served[$a] + ${n:-0}))
        done
        for r in $(seq 1 "$rounds"); do
            order=("${arms[@]}")
            if [ $((r % 2)) = 0 ]; then
                order=()
                for ((i = ${#arms[@]} - 1; i >= 0; i--)); do
                    order+=("${arms[$i]}")
                done
            fi
            for a in "${order[@]}"; do
                m=$(measure "$server" "$a" "$duration" "r$r")
                read -r n _ rps p99 e cpu <<<"$m"
                served[$a]=$((served[$a] + ${n:-0}))
                printf '  round %d %-4s %7s requests %8s req/s p99 %6s us' \
                    "$r" "$a" "$n" "$rps" "$p99"
                printf '  CPU %7s us/request\n' "$cpu"
                if [ "${e:-1}" != 0 ]; then
                    echo "FAILED $server $a round $r: $e errors or non-2xx" \
                         "responses (see $run/$server.$a.r$r.wrk)" >&2
                    failed=1
                fi
                echo "$server,$a,$r,${m// /,}" >>"$out/results.csv"
            done
        done
    fi
    for a in "${arms[@]}"; do
        kc_server_stop "$server" "$(cat "$run/$server.$a.pid")"
        read -r h mi p <<<"$(kc_server_counters "$run/$server.$a.kc")"
        echo "$server,$a,$h,${mi:-},${p:-},${served[$a]:-0}" \
            >>"$out/counters.csv"
        echo "  $a: keycache ${h/not-loaded/not loaded}${mi:+ hits, $mi misses, $p pass-through over ${served[$a]:-0} requests}"
    done
    # keycache must be active in kc and absent from the others
    for a in "${arms[@]}"; do
        h=$(kc_server_counters "$run/$server.$a.kc")
        if [ "$a" = kc ] && { [ "$h" = not-loaded ] || [ "${h%% *}" = 0 ]; }; then
            echo "FAILED $server: keycache had no hits ($h)" >&2
            failed=1
        elif [ "$a" != kc ] && [ "$h" != not-loaded ]; then
            echo "FAILED $server $a: keycache was loaded" >&2
            failed=1
        fi
    done
    [ -z "$failed" ] || status=1
    unset port served
done

echo
caption="$cmdline
$(openssl version | cut -d' ' -f1-2), $(nproc) CPUs, wrk -t$threads -c$conns; $(uptime | sed 's/.*load/load/')
bars: median of the per-round ratio to the default arm, whiskers: its min-max; labels: that ratio, the arm's own median"
if [ "$(wc -l <"$out/results.csv")" -gt 1 ]; then
    { printf '%s\n\n' "$cmdline; $(uptime | sed 's/.*load/load/')"
      "$KC_PYTHON" "$here/report.py" table "$out" "$svg" "$caption"; } \
        | tee "$out/table.md"
    echo
    echo "results: $out/results.csv, $out/counters.csv, $out/table.md; plot: $svg"
fi
exit $status
