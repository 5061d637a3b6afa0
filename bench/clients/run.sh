#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real, unchanged clients with and without keycache: instructions per op.
#
#   bench/clients/run.sh <build-dir> [--fix] [case|prefix ...]
#
# For every case (all of them without arguments; `run.sh <build> --list`
# lists them; a prefix such as rb or dn picks a runtime's cases) whose
# runtime is installed it prints one row:
#   - the OpenSSL path the client took: calls per op its own code makes to
#     the libcrypto entry points that tell the paths apart, and calls per op
#     into keycache.so (bench/clients/cgcalls.py),
#   - instructions per op with the default provider (OPENSSL_CONF=/dev/null)
#     and with keycache (OPENSSL_CONF=<build>/openssl.cnf, or $KC_CONF):
#     valgrind --tool=callgrind, (Ir(N2) - Ir(N1)) / (N2 - N1) with the same
#     32-byte key and 256-byte message every op, as bench/callgrind.sh does,
#     so that start-up, loading and the first ops cancel,
#   - the ratio keycache / default,
#   - keycache's hits, misses and pass-through per op, from two runs without
#     valgrind ((counter(N2) - counter(N1)) / (N2 - N1)), read at exit from
#     keycache's KEYCACHE_DEBUG report (KC_COUNTERS=preload: from the
#     preloaded kc_counters.so instead): the client is not changed.
# N1 and N2 and the settings that make the counts repeatable depend on the
# runtime (kc_clients_iters and kc_clients_repeatable in common.sh); N1 and
# N2 in the environment override them for every case.  JOBS (default 2)
# valgrind runs go at once.  Absent runtimes are reported as SKIP.
# KC_KEEP=DIR keeps the profiles there (CASE.ARM.N.cg; cgincl.py reads them).
#
# --fix: only the cases with a hand-written fix (kc_clients_fix_table in
# common.sh), each also run as its fix variant with the default provider
# (one keyed object per key, reused), checked to print the default's bytes;
# a second table gives default, keycache and fix Ir/op and the share of the
# fix's saving that keycache delivers, (default - keycache) / (default - fix).
set -uo pipefail

build=${1:?usage: $0 <build-dir> [case ...]}
shift
build=$(cd "$build" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"

if [ "${1:-}" = --list ]; then
    kc_clients_table
    exit 0
fi
jobs=${JOBS:-2}
conf=${KC_CONF:-$build/openssl.cnf}
[ -f "$conf" ] || { echo "no $conf: build the project first" >&2; exit 2; }
[ -f "$build/keycache.so" ] || { echo "no $build/keycache.so" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }
if [ "${N2:-1}" -le "${N1:-0}" ]; then
    echo "N2 must be larger than N1" >&2
    exit 2
fi
fixarm=
if [ "${1:-}" = --fix ]; then
    fixarm=1
    shift
fi
# a runtime's prefix (rb, py, php, node, dn, c) stands for all its cases
cases=()
for arg in "${@:-all}"; do
    if [ "$arg" = all ]; then
        cases+=($(kc_clients_table | awk '{ print $1 }'))
    elif kc_clients_case "$arg"; then
        cases+=("$arg")
    else
        more=($(kc_clients_table \
                | awk -v p="$arg-" 'index($1, p) == 1 { print $1 }'))
        [ ${#more[@]} -gt 0 ] || more=("$arg")
        cases+=("${more[@]}")
    fi
done
if [ -n "$fixarm" ]; then
    fixed=()
    for c in "${cases[@]}"; do
        ! kc_clients_fix "$c" || fixed+=("$c")
    done
    cases=("${fixed[@]}")
fi
set -- "${cases[@]}"

kc_clients_build "$build"
kc_clients_repeatable
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One valgrind run: ARM(def|kc|fix) N CASE -> $tmp/CASE.ARM.N.{cg,out,log,rc}
# (fix: CASE's fix variant, default provider)
profile()
{
    local arm=$1 n=$2 case=$3 cnf=/dev/null base=$tmp/$3.$1.$2

    [ "$arm" = kc ] && cnf=$conf
    [ "$arm" = fix ] && kc_clients_fix "$case" && case=$KC_FIX
    kc_clients_cmd "$case"
    OPENSSL_CONF=$cnf valgrind --tool=callgrind \
        --callgrind-out-file="$base.cg" "${KC_CMD[@]}" bench "$n" \
        >"$base.out" 2>"$base.log"
    echo $? >"$base.rc"
}

# 12345 -> 12,345
commas()
{
    sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta' <<<"$1"
}

ir_of()
{
    awk '/^summary:/ { print $2; exit }' "$tmp/$1.cg" 2>/dev/null
}

# Ir per op of CASE.ARM between N1 and N2 ops
ir_per_op()
{
    awk -v x="$(ir_of "$1.$2.$3")" -v y="$(ir_of "$1.$2.$4")" \
        -v n=$(($4 - $3)) 'BEGIN { printf "%.0f", (y - x) / n }'
}

# counters per op between N1 and N2 ops: "hits misses pass" or a word
counters_per_op()
{
    local a b

    a=$(kc_clients_counters "$conf" "$1" bench "$2")
    b=$(kc_clients_counters "$conf" "$1" bench "$3")
    if [ -z "$a" ] || [ -z "$b" ]; then
        echo "? ? ?"
    elif [ "$a" = not-loaded ] || [ "$b" = not-loaded ]; then
        echo "not-loaded - -"
    else
        awk -v a="$a" -v b="$b" -v n=$(($3 - $2)) 'BEGIN {
            split(a, x, " "); split(b, y, " ");
            printf "%.3g %.3g %.3g", (y[1] - x[1]) / n, (y[2] - x[2]) / n,
                   (y[3] - x[3]) / n }'
    fi
}

versions()
{
    local py=$KC_PYTHON

    echo "OpenSSL (system libcrypto): $(openssl version 2>/dev/null)"
    kc_clients_have ruby && ruby -ropenssl -e \
        'puts "ruby #{RUBY_VERSION}, #{OpenSSL::OPENSSL_LIBRARY_VERSION}"'
    kc_clients_have activesupport && ruby -ractive_support -e \
        'puts "ActiveSupport #{ActiveSupport::VERSION::STRING}"'
    kc_clients_have python && "$py" -c 'import ssl, sys
print("python", sys.version.split()[0] + ",", ssl.OPENSSL_VERSION)'
    kc_clients_have cryptography && "$py" -c 'import cryptography
print("cryptography", cryptography.__version__)'
    kc_clients_have php \
        && php -r 'echo "php ", PHP_VERSION, ", ", OPENSSL_VERSION_TEXT, "\n";'
    kc_clients_have node && node -p '"node " + process.version
        + ", its own OpenSSL " + process.versions.openssl
        + (process.config.variables.node_shared_openssl ? " (shared)"
                                                        : " (static)")'
    kc_clients_have dotnet && echo "dotnet runtime $(dotnet --list-runtimes \
        | awk '/NETCore.App/ { v = $2 } END { print v }'), system libcrypto"
}

echo "client bench: callgrind Ir/op = (Ir(N2 ops) - Ir(N1 ops)) / (N2 - N1),"
echo "32-byte key, 256-byte message, same key every op"
printf 'N1 N2:'
for r in c- py- php- rb- node- dn- c-pbkdf2; do
    printf ' %s %s;' "${r%-}" "$(kc_clients_iters "$r")"
done
echo
echo "PYTHONHASHSEED=$PYTHONHASHSEED" \
     "DOTNET_TieredCompilation=$DOTNET_TieredCompilation node $KC_NODE_FLAGS"
echo "default: OPENSSL_CONF=/dev/null; keycache: OPENSSL_CONF=$conf"
versions
echo
rows=()
fixrows=()
status=0
for case in "$@"; do
    if ! kc_clients_case "$case"; then
        echo "unknown case '$case' (run.sh <build> --list)" >&2
        status=1
        continue
    fi
    label=$KC_LABEL
    if ! kc_clients_have "$KC_RUNTIME"; then
        echo "SKIP $case: $KC_WHY"
        rows+=("| $label | skipped: $KC_WHY | | | | | | |")
        fixrows+=("| $label | skipped: $KC_WHY | | | | |")
        continue
    fi
    read -r a b <<<"$(kc_clients_iters "$case")"
    arms=(def kc)
    [ -z "$fixarm" ] || arms+=(fix)
    runs=()
    for arm in "${arms[@]}"; do
        runs+=("$arm $a" "$arm $b")
    done
    for run in "${runs[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
            wait -n
        done
        # shellcheck disable=SC2086
        profile $run "$case" &
    done
    wait
    failed=
    for run in "${runs[@]}"; do
        run=${run/ /.}
        if [ "$(cat "$tmp/$case.$run.rc")" != 0 ] \
           || [ -z "$(ir_of "$case.$run")" ]; then
            failed=$run
        fi
    done
    if [ -n "$failed" ]; then
        echo "FAILED $case ($failed):" >&2
        tail -n 20 "$tmp/$case.$failed.log" >&2
        rows+=("| $label | run failed | | | | | | |")
        status=1
        continue
    fi
    # the same output in both arms (MessageEncryptor draws a random IV)
    if [ "$case" != rb-me-encrypt ] \
       && ! cmp -s "$tmp/$case.def.$b.out" "$tmp/$case.kc.$b.out"; then
        echo "FAILED $case: outputs differ between the arms" >&2
        status=1
    fi
    if [ -n "$fixarm" ] \
       && ! cmp -s "$tmp/$case.def.$b.out" "$tmp/$case.fix.$b.out"; then
        echo "FAILED $case: the fix prints other bytes than the default" >&2
        status=1
    fi
    ird=$(awk -v x="$(ir_of "$case.def.$a")" -v y="$(ir_of "$case.def.$b")" \
              -v n=$((b - a)) 'BEGIN { printf "%.0f", (y - x) / n }')
    irk=$(awk -v x="$(ir_of "$case.kc.$a")" -v y="$(ir_of "$case.kc.$b")" \
              -v n=$((b - a)) 'BEGIN { printf "%.0f", (y - x) / n }')
    ratio=$(awk -v d="$ird" -v k="$irk" 'BEGIN { printf "%.3f", k / d }')
    path=$(python3 "$here/cgcalls.py" "$a" "$tmp/$case.kc.$a.cg" \
                   "$b" "$tmp/$case.kc.$b.cg")
    read -r hits misses pass <<<"$(counters_per_op "$case" "$a" "$b")"
    printf '%-16s %10s %10s %7s  hits %-5s misses %-5s pass %-5s %s\n' \
        "$case" "$ird" "$irk" "$ratio" "$hits" "$misses" "$pass" "$path"
    rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s |' "$label" \
              "$path" "$(commas "$ird")" "$(commas "$irk")" \
              "$ratio" "$hits" "$misses" "$pass")")
    if [ -n "$fixarm" ]; then
        kc_clients_fix "$case"
        irf=$(ir_per_op "$case" fix "$a" "$b")
        share=$(awk -v d="$ird" -v k="$irk" -v f="$irf" 'BEGIN {
            if (d - f <= 0) print "n/a (no saving)";
            else printf "%.0f%%", 100 * (d - k) / (d - f) }')
        printf '%-16s fix %10s  share %s\n' "$case" "$irf" "$share"
        fixrows+=("$(printf '| %s | %s | %s | %s | %s | %s |' "$label" \
                  "$KC_FIX_LABEL" "$(commas "$ird")" "$(commas "$irk")" \
                  "$(commas "$irf")" "$share")")
    fi
    [ -z "${KC_KEEP:-}" ] || { mkdir -p "$KC_KEEP" && cp "$tmp/$case".*.cg "$KC_KEEP/"; }
    rm -f "$tmp/$case".*
done

echo
echo "| client and API | OpenSSL path (calls/op) | default Ir/op" \
     "| keycache Ir/op | ratio | hits/op | misses/op | pass-through/op |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
if [ -n "$fixarm" ]; then
    echo
    echo "| client and API | hand-written fix (default provider) | default Ir/op" \
         "| keycache Ir/op | fix Ir/op | share of the fix keycache delivers |"
    echo "|---|---|---:|---:|---:|---:|"
    printf '%s\n' "${fixrows[@]}"
fi
exit $status
