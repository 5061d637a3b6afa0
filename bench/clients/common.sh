# SPDX-License-Identifier: Apache-2.0
# bench/clients/common.sh - sourced by bench/clients/run.sh and
# test/test_clients.sh: the client cases, how to run them, which runtimes
# are present, and building the two small native pieces (c_client and the
# kc_counters.so reader) and the .NET program into <build>/clients.
#
# Every case is an unchanged runtime running one of the client programs in
# this directory (clients.rb, clients.py, clients.php, clients.js,
# dotnet/Program.cs, c_client.c) with the arguments
#   CASE bench N   N ops, the same 32-byte key and 256-byte message
#   CASE test      fixed keys and messages, one output line per operation

KC_CLIENTS_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../dotnet.sh
. "$KC_CLIENTS_SRC/../dotnet.sh"
# Debian's python3 with python3-cryptography, not whatever is first on PATH
KC_PYTHON=${KC_PYTHON:-/usr/bin/python3}

# case  runtime  gains  label (markdown)
# runtime: what must be installed; gains: 1 where keycache serves the
# client's keyed inits (the test insists on hits there), 0 where it cannot.
kc_clients_table()
{
    cat <<'EOF'
rb-hmac         ruby          1 Ruby `OpenSSL::HMAC.digest("SHA256", key, data)`
rb-gcm          ruby          1 Ruby `OpenSSL::Cipher` aes-256-gcm, new object per message
rb-mv-generate  activesupport 1 ActiveSupport `MessageVerifier#generate` (HMAC-SHA1)
rb-mv-verified  activesupport 1 ActiveSupport `MessageVerifier#verified` (HMAC-SHA1)
rb-me-encrypt   activesupport 1 ActiveSupport `MessageEncryptor#encrypt_and_sign` aes-256-gcm
rb-me-decrypt   activesupport 1 ActiveSupport `MessageEncryptor#decrypt_and_verify` aes-256-gcm
py-hmac-digest  python        1 Python `hmac.digest(key, msg, "sha256")`
py-hmac-new     python        0 Python `hmac.new(key, msg, "sha256").digest()`
py-crypto-hmac  cryptography  0 Python `cryptography` `hmac.HMAC` SHA-256
py-aesgcm       cryptography  1 Python `cryptography` `AESGCM(key).encrypt`
py-fernet       cryptography  0 Python `cryptography` `Fernet.decrypt` (AES-128-CBC + HMAC-SHA256)
php-gcm         php           1 PHP `openssl_encrypt` aes-256-gcm
php-hash-hmac   php           0 PHP `hash_hmac("sha256", ...)`
node-hmac       node          0 Node `crypto.createHmac("sha256", key)`, `--openssl-shared-config`
node-gcm        node          0 Node `createCipheriv("aes-256-gcm")`, `--openssl-shared-config`
node-gcm-noflag node          0 Node `createCipheriv("aes-256-gcm")`, without the flag
dn-hmac-sha256  dotnet        1 .NET `HMACSHA256.HashData(key, msg)`
dn-hmac-sha1    dotnet        1 .NET `HMACSHA1.HashData(key, msg)`
dn-aesgcm       dotnet        1 .NET `new AesGcm(key)` per message, encrypt and decrypt
c-hmac          c             1 C `HMAC()` (OpenSSL 3: `EVP_Q_mac`)
c-pkey          c             1 C `EVP_PKEY_new_raw_private_key(EVP_PKEY_HMAC)` + `EVP_DigestSign*` per message
c-hmac-ctx      c             0 C legacy `HMAC_CTX` (`HMAC_Init_ex`) per message
c-pbkdf2        c             0 C `PKCS5_PBKDF2_HMAC`, 1,000 iterations of HMAC-SHA256
EOF
}

# The hand-written fix of a gaining case (run.sh --fix): its base case, the
# fix variant (run like any case, printing the base case's lines) and what
# it does.  Cases without a row have no fix here: ActiveSupport keeps its
# HMAC and Cipher objects inside the library, and PHP's openssl_encrypt has
# no API that keeps a keyed context.
kc_clients_fix_table()
{
    cat <<'EOF'
rb-hmac        rb-hmac-fix        one `OpenSSL::HMAC` per key, `reset` after each message
rb-gcm         rb-gcm-fix         one keyed `OpenSSL::Cipher` per key and direction, new `iv=` per message
py-hmac-digest py-hmac-digest-fix one `hmac.new(key, digestmod=)` per key, `.copy()` per message
py-aesgcm      py-aesgcm-fix      one `AESGCM(key)` per key, reused
dn-hmac-sha256 dn-hmac-sha256-fix one `IncrementalHash.CreateHMAC` per key, `AppendData` + `GetHashAndReset`
dn-hmac-sha1   dn-hmac-sha1-fix   one `IncrementalHash.CreateHMAC` per key, `AppendData` + `GetHashAndReset`
dn-aesgcm      dn-aesgcm-fix      one `AesGcm` per key for both directions
c-hmac         c-hmac-fix         one keyed `EVP_MAC_CTX` per key, `EVP_MAC_init(ctx, NULL, 0, NULL)` per message
c-pkey         c-pkey-fix         one keyed `EVP_MD_CTX` per key, each message on an `EVP_MD_CTX_copy_ex`
EOF
}

# The fix variant of a case: sets KC_FIX and KC_FIX_LABEL; 1 if it has none.
kc_clients_fix()
{
    local line

    line=$(kc_clients_fix_table | awk -v c="$1" '$1 == c')
    [ -n "$line" ] || return 1
    read -r _ KC_FIX KC_FIX_LABEL <<<"$line"
}

# Fields of one case: sets KC_RUNTIME, KC_GAINS, KC_LABEL; 1 if unknown.
kc_clients_case()
{
    local line

    line=$(kc_clients_table | awk -v c="$1" '$1 == c')
    [ -n "$line" ] || return 1
    read -r _ KC_RUNTIME KC_GAINS KC_LABEL <<<"$line"
}

# The command that runs a case, into the array KC_CMD (arguments follow).
kc_clients_cmd()
{
    local bin=$KC_CLIENTS_BIN src=$KC_CLIENTS_SRC

    case $1 in
    rb-*)   KC_CMD=(ruby "$src/clients.rb" "$1") ;;
    py-*)   KC_CMD=("$KC_PYTHON" "$src/clients.py" "$1") ;;
    php-*)  KC_CMD=(php "$src/clients.php" "$1") ;;
    node-gcm-noflag)
            KC_CMD=(node ${KC_NODE_FLAGS:-} "$src/clients.js" node-gcm) ;;
    node-*) KC_CMD=(node ${KC_NODE_FLAGS:-} --openssl-shared-config \
                    "$src/clients.js" "$1") ;;
    dn-*)   KC_CMD=(dotnet "$bin/dotnet/KcClients.dll" "$1") ;;
    c-*)    KC_CMD=("$bin/c_client" "$1") ;;
    *)      return 1 ;;
    esac
}

# The instruction counts of bench/clients/run.sh: "N1 N2" ops of a case
# (Ir/op = (Ir(N2) - Ir(N1)) / (N2 - N1)), and the settings that make a
# runtime's count repeatable from run to run.  None of them changes which
# OpenSSL calls the client makes.
#   Python, .NET, node: hash seeds and background threads (JIT, GC) vary the
#   instructions from run to run by far more than an op costs: fixed with
#   PYTHONHASHSEED=0, DOTNET_TieredCompilation=0 (methods are compiled once,
#   fully optimised, on the calling thread) and node --predictable
#   (single-threaded V8, fixed seeds).
#   node: V8 keeps compiling and re-optimising for thousands of calls, so
#   the first 5,000 ops are a warm-up and the counted ones come after.
#   Ruby: its start-up varies by up to 150,000 instructions, so N2 - N1 is
#   800, not 200 (rows still move by about 0.3% from run to run).
#   c-pbkdf2: each op is 1,000 HMACs.
# N1 and N2 in the environment override the defaults for every case.
kc_clients_iters()
{
    local n

    case $1 in
    rb-*)     n="200 1000" ;;
    node-*)   n="5000 7000" ;;
    c-pbkdf2) n="20 40" ;;
    *)        n="200 400" ;;
    esac
    echo "${N1:-${n% *}} ${N2:-${n#* }}"
}

# Environment and node flags for a repeatable count (see above).
kc_clients_repeatable()
{
    export PYTHONHASHSEED=0 DOTNET_TieredCompilation=0
    KC_NODE_FLAGS=--predictable
}

# Whether a runtime is usable; if not, KC_WHY says why.
kc_clients_have()
{
    local py=$KC_PYTHON

    KC_WHY=
    case $1 in
    ruby)
        command -v ruby >/dev/null || kc_why "no ruby (Debian: ruby)" \
            || return 1
        ruby -ropenssl -e 0 >/dev/null 2>&1 \
            || kc_why "ruby without its openssl extension" ;;
    activesupport)
        kc_clients_have ruby || return 1
        ruby -ractive_support -ractive_support/message_verifier \
             -ractive_support/message_encryptor -e 0 >/dev/null 2>&1 \
            || kc_why "no ActiveSupport (Debian: ruby-activesupport)" ;;
    python)
        [ -x "$py" ] || kc_why "no $py (Debian: python3)" || return 1
        "$py" -c 'import _hashlib' >/dev/null 2>&1 \
            || kc_why "$py without _hashlib" ;;
    cryptography)
        kc_clients_have python || return 1
        "$py" -c 'import cryptography.hazmat.primitives.ciphers.aead' \
            >/dev/null 2>&1 \
            || kc_why "no python3-cryptography for $py" ;;
    php)
        command -v php >/dev/null || kc_why "no php (Debian: php-cli)" \
            || return 1
        php -r 'exit(extension_loaded("openssl") ? 0 : 1);' >/dev/null 2>&1 \
            || kc_why "php without its openssl extension" ;;
    node)
        command -v node >/dev/null || kc_why "no node" || return 1
        node -e 'process.exit(/^3\./.test(process.versions.openssl) ? 0 : 1)' \
            >/dev/null 2>&1 \
            || kc_why "node without OpenSSL 3" ;;
    dotnet)
        [ -f "$KC_CLIENTS_BIN/dotnet/KcClients.dll" ] \
            || kc_why "${KC_DOTNET_WHY:-no .NET SDK (dotnet)}" ;;
    c)
        [ -x "$KC_CLIENTS_BIN/c_client" ] \
            || kc_why "${KC_C_WHY:-c_client not built}" ;;
    *)
        kc_why "unknown runtime $1" ;;
    esac
}

kc_why()
{
    KC_WHY=$1
    return 1
}

# Build c_client, kc_counters.so and (if an SDK is there) the .NET program
# into $1/clients; sets KC_CLIENTS_BIN.  Rebuilds only what is out of date.
# Failures leave the piece out, with the reason in KC_C_WHY, KC_DOTNET_WHY or
# KC_COUNTERS_WHY.
kc_clients_build()
{
    local build=$1 src=$KC_CLIENTS_SRC cc=${CC:-cc} cflags libs log
    local top=$KC_CLIENTS_SRC/../..

    KC_CLIENTS_BIN=$build/clients
    mkdir -p "$KC_CLIENTS_BIN" || return 1
    log=$KC_CLIENTS_BIN/build.log
    : >"$log"
    cflags=$(pkg-config --cflags libcrypto 2>/dev/null)
    libs=$(pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)
    # shellcheck disable=SC2086
    if [ ! "$KC_CLIENTS_BIN/c_client" -nt "$src/c_client.c" ] \
       && ! "$cc" -O2 -g -Wall -Wextra $cflags -o "$KC_CLIENTS_BIN/c_client" \
            "$src/c_client.c" $libs >>"$log" 2>&1; then
        KC_C_WHY="c_client did not build (see $log)"
    fi
    # shellcheck disable=SC2086
    if [ ! "$KC_CLIENTS_BIN/kc_counters.so" -nt "$src/kc_counters.c" ] \
       && ! "$cc" -O2 -g -Wall -Wextra -shared -fPIC -I"$top/include" \
            $cflags -o "$KC_CLIENTS_BIN/kc_counters.so" \
            "$src/kc_counters.c" $libs >>"$log" 2>&1; then
        KC_COUNTERS_WHY="kc_counters.so did not build (see $log)"
    fi
    kc_dotnet_build "$src/dotnet" "$KC_CLIENTS_BIN/dotnet" KcClients.dll \
        "$log" client Program.cs KcClients.csproj NuGet.Config
}

# How keycache's counters are read from an unchanged client, at its exit:
#   KC_COUNTERS=debug (default): the provider's own report, KEYCACHE_DEBUG=
#     file:PATH (provider/diag/debug.c), one "report (exit): all hits=..." line
#     per process;
#   KC_COUNTERS=preload: kc_counters.so, preloaded, asks the provider with
#     OSSL_PROVIDER_get_params() (for a keycache without KEYCACHE_DEBUG).
# kc_clients_counters_env FILE sets KC_CENV, the environment to run the
# client with; kc_clients_counters_read FILE prints "hits misses passthrough"
# of the client's process, or "not-loaded" when keycache did not start in it.
kc_clients_counters_env()
{
    rm -f "$1"
    if [ "${KC_COUNTERS:-debug}" = preload ]; then
        KC_CENV=(KC_COUNTERS_FILE="$1"
                 LD_PRELOAD="$KC_CLIENTS_BIN/kc_counters.so")
    else
        KC_CENV=(KEYCACHE_DEBUG="file:$1")
    fi
}

kc_clients_counters_read()
{
    local line

    # the last process to report is the client itself (a runtime may start
    # helpers that also load libcrypto; they end first)
    if [ "${KC_COUNTERS:-debug}" = preload ]; then
        line=$(tail -n 1 "$1" 2>/dev/null)
    else
        line=$(grep -E ': report \([a-z]+\): all hits=' "$1" 2>/dev/null \
               | tail -n 1)
        [ -n "$line" ] || line=not-loaded
    fi
    case $line in
    *not-loaded*) echo not-loaded ;;
    *hits=*)
        sed -E 's/.* hits=([0-9]+) misses=([0-9]+) passthrough=([0-9]+).*/\1 \2 \3/' <<<"$line" ;;
    esac
}

# Run a case and read keycache's counters (see above):
#   kc_clients_counters CONF CASE ARGS...
kc_clients_counters()
{
    local conf=$1 out=$KC_CLIENTS_BIN/counters.$$ r

    shift
    kc_clients_cmd "$1" || return 1
    shift
    kc_clients_counters_env "$out"
    env "${KC_CENV[@]}" OPENSSL_CONF="$conf" "${KC_CMD[@]}" "$@" \
        >/dev/null 2>&1
    r=$(kc_clients_counters_read "$out")
    rm -f "$out"
    echo "$r"
}
