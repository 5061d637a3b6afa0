#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test_cli.sh <build-dir>
#
# The unchanged `openssl` command line must behave identically with and
# without keycache: every command is run once with OPENSSL_CONF=/dev/null
# (default provider only) and once with OPENSSL_CONF=<build-dir>/keycache-test.cnf
# (default + keycache, keycache preferred), and stdout plus exit status are
# compared.  Failing commands must fail the same way (same first error code).
# MACs are also checked against published RFC 2202 / RFC 4231 values, and
# the -provider-path route (no config file at all) is checked too.

set -u

BUILD=${1:?usage: test_cli.sh <build-dir>}
BUILD=$(cd "$BUILD" && pwd) || exit 2
# the test config forces aes_gcm = on, so GCM goes through keycache on
# every OpenSSL version (openssl.cnf leaves it to auto)
CONF=$BUILD/keycache-test.cnf
OPENSSL=${OPENSSL:-openssl}
VECTORS=${KC_CAVP_DIR:-/usr/lib/python3/dist-packages/cryptography_vectors}/HMAC

pass=0
fail=0

TMP=$(mktemp -d) || exit 2
trap 'rm -rf "$TMP"' EXIT

ok()
{
    pass=$((pass + 1))
    echo "ok   $1"
}

bad()
{
    fail=$((fail + 1))
    echo "FAIL $1" >&2
    shift
    for line in "$@"; do
        echo "       $line" >&2
    done
}

# Command line under the default provider only, and under keycache.
run_def() { OPENSSL_CONF=/dev/null "$OPENSSL" "$@"; }
run_kc()  { OPENSSL_CONF=$CONF "$OPENSSL" "$@"; }
# keycache loaded by name from the build dir, without any config file.
run_path()
{
    OPENSSL_CONF=/dev/null "$OPENSSL" "$1" -provider-path "$BUILD" \
        -provider keycache -provider default -propquery '?provider=keycache' \
        "${@:2}"
}

# A multi-line listing on one line, for messages.
oneline()
{
    tr -s '\n' ' ' <<< "$1"
}

# First packed error code ("0308010C") in an openssl error dump, if any:
# the leading thread id and the file:line differ legitimately.
first_err()
{
    sed -n 's/^[0-9A-F]*:error:\([0-9A-F]*\):.*/\1/p' "$1" | head -n 1
}

# hex2bin HEX FILE: write the bytes spelled by HEX to FILE.
hex2bin()
{
    printf '%s' "$1" | xxd -r -p > "$2"
}

# same NAME CMD...: run CMD (an openssl subcommand line) without and with
# keycache and require identical stdout, exit status and first error.
# Successful runs must print something, so an empty/empty match cannot pass.
same()
{
    local name=$1
    shift
    local out_d out_k rc_d rc_k err_d err_k

    out_d=$(run_def "$@" 2> "$TMP/err_d")
    rc_d=$?
    out_k=$(run_kc "$@" 2> "$TMP/err_k")
    rc_k=$?
    err_d=$(first_err "$TMP/err_d")
    err_k=$(first_err "$TMP/err_k")

    if [ "$rc_d" != "$rc_k" ]; then
        bad "$name" "exit status: default $rc_d, keycache $rc_k" \
            "keycache stderr: $(head -c 400 "$TMP/err_k")"
    elif [ "$out_d" != "$out_k" ]; then
        bad "$name" "default:  $out_d" "keycache: $out_k"
    elif [ "$err_d" != "$err_k" ]; then
        bad "$name" "first error: default '$err_d', keycache '$err_k'"
    elif [ "$rc_d" = 0 ] && [ -z "$out_d" ]; then
        bad "$name" "no output"
    else
        ok "$name"
        return 0
    fi
    return 1
}

# expect NAME WANT CMD...: stdout of CMD under default, keycache and the
# provider-path route (the routes listed in $ROUTES) must all equal WANT,
# compared case-insensitively as `openssl mac` prints upper-case hex.
expect()
{
    local name=$1 want=${2,,}
    shift 2
    local how out

    for how in ${ROUTES:-def kc path}; do
        if ! out=$("run_$how" "$@" < /dev/null 2> "$TMP/err") \
            || [ "${out,,}" != "$want" ]; then
            bad "$name [$how]" "want: $want" "got:  ${out,,}" \
                "stderr: $(head -c 400 "$TMP/err")"
            return 1
        fi
    done
    ok "$name"
}

# --- preconditions ---------------------------------------------------------

if [ ! -r "$CONF" ] || [ ! -e "$BUILD/keycache.so" ]; then
    echo "FAIL $BUILD has no keycache-test.cnf or keycache.so: build first" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
if ! command -v xxd > /dev/null; then
    echo "FAIL xxd is needed to decode vectors" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

# --- keycache is really in use under the config ----------------------------

# Prints "name status" pairs from `openssl list -providers`.
provider_status()
{
    awk '/^  [^ ]/ { name = $1 } /^    status:/ { print name, $2 }'
}

plist=$(run_kc list -providers 2> "$TMP/err" | provider_status)
for p in default keycache; do
    if grep -qx "$p active" <<< "$plist"; then
        ok "list -providers: $p active"
    else
        bad "list -providers: $p active" "got: $(oneline "$plist")" \
            "stderr: $(head -c 400 "$TMP/err")"
    fi
done

mlist=$(run_kc list -mac-algorithms 2> /dev/null)
if grep -qE '^ *HMAC @ keycache$' <<< "$mlist"; then
    ok "list -mac-algorithms: HMAC @ keycache"
else
    bad "list -mac-algorithms: HMAC @ keycache" "got: $(oneline "$mlist")"
fi
if grep -qE '^ *HMAC @ default$' <<< "$mlist"; then
    ok "list -mac-algorithms: HMAC @ default still listed"
else
    bad "list -mac-algorithms: HMAC @ default still listed"
fi

clist=$(run_kc list -cipher-algorithms 2> /dev/null)
for bits in 128 192 256; do
    if grep -qiE "aes-$bits-gcm.* @ keycache$" <<< "$clist"; then
        ok "list -cipher-algorithms: aes-$bits-gcm @ keycache"
    else
        bad "list -cipher-algorithms: aes-$bits-gcm @ keycache"
    fi
done

# The provider-path route must also activate keycache.
plist=$(run_path list -providers 2> "$TMP/err" | provider_status)
if grep -qx "keycache active" <<< "$plist"; then
    ok "list -providers -provider-path: keycache active"
else
    bad "list -providers -provider-path: keycache active" \
        "got: $(oneline "$plist")" "stderr: $(head -c 400 "$TMP/err")"
fi

# --- published values -------------------------------------------------------

# RFC 4231 test case 2, spelled out as in the RFC.
printf 'what do ya want for nothing?' > "$TMP/jefe"
expect "RFC 4231 TC2 HMAC-SHA256 (mac key:Jefe)" \
    5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843 \
    mac -digest SHA256 -macopt key:Jefe -in "$TMP/jefe" HMAC

# dgst prints "HMAC-SHA2-256(file)= hex"; the file name is the same in all
# runs, so compare the whole line.  dgst has no -propquery, so the
# provider-path route could pick either HMAC: it is not used here.
ROUTES="def kc" expect "RFC 4231 TC2 HMAC-SHA256 (dgst -hmac Jefe)" \
    "HMAC-SHA2-256($TMP/jefe)= 5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" \
    dgst -sha256 -hmac Jefe "$TMP/jefe"

# Every case of the RFC 2202 / RFC 4231 files shipped with
# python3-cryptography-vectors ("Key =", "Msg =", "MD =" triples).
check_vector_file()
{
    local file=$1 digest=$2 n=0 key="" msg="" line name

    name=$(basename "$file")

    while IFS= read -r line; do
        line=${line%$'\r'}
        case $line in
        "Key = "*) key=${line#Key = } ;;
        "Msg = "*) msg=${line#Msg = } ;;
        "MD = "*)
            n=$((n + 1))
            hex2bin "$msg" "$TMP/msg"
            expect "$name case $n (${#key}-hex-digit key)" \
                "${line#MD = }" \
                mac -digest "$digest" -macopt "hexkey:$key" -in "$TMP/msg" HMAC
            ;;
        esac
    done < "$file"
    if [ "$n" -eq 0 ]; then
        bad "$name" "no vectors found"
    fi
}

if [ -d "$VECTORS" ]; then
    check_vector_file "$VECTORS/rfc-2202-md5.txt" MD5
    check_vector_file "$VECTORS/rfc-2202-sha1.txt" SHA1
    for bits in 224 256 384 512; do
        check_vector_file "$VECTORS/rfc-4231-sha$bits.txt" "SHA$bits"
    done
else
    bad "published HMAC vectors" "$VECTORS not found"
fi

# --- default vs keycache ----------------------------------------------------

# Inputs: empty, one byte, odd size, and 1 MiB of non-repeating bytes.
: > "$TMP/empty"
printf 'x' > "$TMP/one"
head -c 1000 /dev/zero | tr '\0' 'a' > "$TMP/odd"
openssl enc -aes-128-ctr -K 000102030405060708090a0b0c0d0e0f \
    -iv 00000000000000000000000000000000 -in /dev/zero 2> /dev/null \
    | head -c 1048576 > "$TMP/big"
inputs="empty one odd big"

# Key lengths in bytes: tiny, typical, block-sized (64/128), just past the
# SHA-512 block, and past KEYCACHE_MAX_KEY_LEN (uncached pass-through).
keylens="1 16 32 64 65 128 129 200"
digests="SHA1 SHA224 SHA256 SHA384 SHA512 SHA512-256 SHA3-256 SHA3-512 MD5"

key_hex()
{
    head -c "$1" "$TMP/big" | xxd -p | tr -d '\n'
}

for d in $digests; do
    for kl in $keylens; do
        k=$(key_hex "$kl")
        for in in $inputs; do
            same "mac HMAC $d key=$kl in=$in" \
                mac -digest "$d" -macopt "hexkey:$k" -in "$TMP/$in" HMAC
        done
    done
done

# Same key twice in one process is not possible from the CLI, but the same
# key across different digests and stdin input must agree too.
k=$(key_hex 32)
for d in SHA256 SHA512 SHA3-256; do
    out_d=$(run_def mac -digest "$d" -macopt "hexkey:$k" HMAC < "$TMP/odd")
    out_k=$(run_kc mac -digest "$d" -macopt "hexkey:$k" HMAC < "$TMP/odd")
    if [ -n "$out_d" ] && [ "$out_d" = "$out_k" ]; then
        ok "mac HMAC $d from stdin"
    else
        bad "mac HMAC $d from stdin" "default:  $out_d" "keycache: $out_k"
    fi
done

run_def mac -binary -digest SHA256 -macopt "hexkey:$k" -in "$TMP/odd" \
    -out "$TMP/bin_d" HMAC 2> /dev/null
run_kc mac -binary -digest SHA256 -macopt "hexkey:$k" -in "$TMP/odd" \
    -out "$TMP/bin_k" HMAC 2> /dev/null
if [ -s "$TMP/bin_d" ] && cmp -s "$TMP/bin_d" "$TMP/bin_k"; then
    ok "mac HMAC SHA256 -binary -out file"
else
    bad "mac HMAC SHA256 -binary -out file" "binary outputs differ"
fi

# `openssl dgst -hmac` (legacy EVP_PKEY HMAC through EVP_DigestSign).
for d in sha1 sha256 sha512 sha3-256; do
    for in in empty odd big; do
        same "dgst -$d -hmac in=$in" dgst "-$d" -hmac "a secret key" "$TMP/$in"
    done
done
same "dgst -sha256 -hmac with a 200-byte key" \
    dgst -sha256 -hmac "$(head -c 200 /dev/zero | tr '\0' k)" "$TMP/odd"

# `openssl dgst -mac HMAC -macopt` (EVP_PKEY_CTX ctrl strings).
for kl in 4 32 128 129; do
    k=$(key_hex "$kl")
    for in in empty odd big; do
        same "dgst -sha512 -mac HMAC key=$kl in=$in" \
            dgst -sha512 -mac HMAC -macopt "hexkey:$k" "$TMP/$in"
    done
done
same "dgst -sha256 -mac HMAC -macopt key:" \
    dgst -sha256 -mac HMAC -macopt key:Jefe "$TMP/jefe"

# --- the provider-path route ------------------------------------------------

k=$(key_hex 32)
for d in SHA1 SHA256 SHA512 SHA3-256; do
    for in in one big; do
        out_d=$(run_def mac -digest "$d" -macopt "hexkey:$k" \
                -in "$TMP/$in" HMAC 2> /dev/null)
        out_p=$(run_path mac -digest "$d" -macopt "hexkey:$k" \
                -in "$TMP/$in" HMAC 2> "$TMP/err")
        if [ -n "$out_d" ] && [ "$out_d" = "$out_p" ]; then
            ok "mac -provider-path keycache HMAC $d in=$in"
        else
            bad "mac -provider-path keycache HMAC $d in=$in" \
                "default:       $out_d" "provider-path: $out_p" \
                "stderr: $(head -c 400 "$TMP/err")"
        fi
    done
done

# --- failures must fail the same way ----------------------------------------

same "mac unknown digest NOPE fails alike" \
    mac -digest NOPE -macopt hexkey:00 -in "$TMP/one" HMAC
same "mac misspelled digest SHA-257 fails alike" \
    mac -digest SHA-257 -macopt hexkey:00 -in "$TMP/one" HMAC
same "mac XOF digest SHAKE128 fails alike" \
    mac -digest SHAKE128 -macopt hexkey:00 -in "$TMP/one" HMAC
same "mac bad hex key fails alike" \
    mac -digest SHA256 -macopt hexkey:zz -in "$TMP/one" HMAC
same "mac unknown macopt fails alike" \
    mac -digest SHA256 -macopt nosuchopt:1 -in "$TMP/one" HMAC
same "mac empty hex key" \
    mac -digest SHA256 -macopt hexkey: -in "$TMP/one" HMAC
same "mac without key fails alike" \
    mac -digest SHA256 -in "$TMP/one" HMAC

# --- another provider's digest (legacy MD4, WHIRLPOOL) -----------------------

# `openssl mac` and `openssl dgst -hmac` under the test config with the
# legacy provider added, against default + legacy alone.

# beside_legacy NAME SUBCOMMAND ARGS...: the same, non-empty output from
# default + legacy alone and from the test config with legacy added
beside_legacy()
{
    local name=$1 out_d out_k
    shift

    out_d=$(OPENSSL_CONF=/dev/null "$OPENSSL" "$1" -provider default \
            -provider legacy "${@:2}" 2> /dev/null)
    out_k=$(OPENSSL_CONF=$TMP/legacy.cnf "$OPENSSL" "$@" 2> "$TMP/err")
    if [ -n "$out_d" ] && [ "$out_d" = "$out_k" ]; then
        ok "$name"
    else
        bad "$name" "default: $out_d" "keycache: $out_k" \
            "stderr: $(head -c 400 "$TMP/err")"
    fi
}

sed 's/^keycache = keycache_sect$/&\nlegacy = legacy_sect/' "$CONF" \
    > "$TMP/legacy.cnf"
printf '[legacy_sect]\nactivate = 1\n' >> "$TMP/legacy.cnf"
if OPENSSL_CONF=/dev/null "$OPENSSL" list -provider legacy -providers \
       > /dev/null 2>&1 \
   && grep -q '^legacy = legacy_sect$' "$TMP/legacy.cnf"; then
    for d in MD4 WHIRLPOOL; do
        beside_legacy "mac HMAC $d beside legacy" mac -digest "$d" \
            -macopt "hexkey:$k" -in "$TMP/one" HMAC
        beside_legacy "dgst -hmac -${d,,} beside legacy" dgst -hmac key \
            -"${d,,}" "$TMP/one"
    done
else
    echo "skip another provider's digest: no legacy provider"
fi

# --- a config file that is not a plain file ---------------------------------

# OPENSSL_CONF naming a FIFO fed once: the library reads it whole, and
# keycache must not open it again (that open waits for a writer for good).
# With KEYCACHE_DEBUG too, whose start line shows keycache ran.
fifo_run()
{
    local name=$1 want out rc
    shift
    rm -f "$TMP/fifo"
    mkfifo "$TMP/fifo" || { echo "skip $name: no mkfifo"; return; }
    (timeout 30 cat "$CONF" > "$TMP/fifo" &)
    out=$(env "$@" OPENSSL_CONF="$TMP/fifo" timeout 30 "$OPENSSL" mac \
          -digest SHA256 -macopt "hexkey:$k" -in "$TMP/one" HMAC \
          2> "$TMP/err")
    rc=$?
    want=$(run_def mac -digest SHA256 -macopt "hexkey:$k" -in "$TMP/one" \
           HMAC 2> /dev/null)
    if [ "$rc" -eq 0 ] && [ -n "$want" ] && [ "$out" = "$want" ]; then
        ok "$name"
    else
        bad "$name" "exit $rc (124: hung)" "default: $want" "keycache: $out" \
            "stderr: $(head -c 400 "$TMP/err")"
    fi
}
fifo_run "config in a FIFO"
fifo_run "config in a FIFO, KEYCACHE_DEBUG" KEYCACHE_DEBUG=1
if ! grep -q "start: keycache" "$TMP/err"; then
    bad "config in a FIFO loads keycache" "stderr: $(head -c 400 "$TMP/err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
