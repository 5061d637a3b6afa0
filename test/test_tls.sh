#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TLS through keycache: libssl fetches its record ciphers and MACs without a
# property query, so with keycache configured they come from keycache (as
# long-lived per-connection contexts, TLS 1.2's GCM and CBC-HMAC with their
# TLS-only parameters).  A keycache server must talk to a default client and
# the other way round, on loopback, for TLS 1.3 and 1.2 GCM and CBC suites.
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
tmp=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
kc="$build/keycache-test.cnf"   # aes_gcm = on on every OpenSSL version
pass=0 fail=0

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/k.pem" \
    -out "$tmp/c.pem" -days 1 -subj /CN=localhost 2>/dev/null \
    || { echo "FAIL: cannot make a test certificate"; exit 1; }

# start_server CONF: an s_server -www on a free loopback port ($port)
start_server() {
    local try
    for try in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 20000))
        OPENSSL_CONF=$1 openssl s_server -accept "127.0.0.1:$port" \
            -cert "$tmp/c.pem" -key "$tmp/k.pem" -www -quiet \
            > "$tmp/server.log" 2>&1 &
        server=$!
        sleep 0.5
        kill -0 "$server" 2>/dev/null && return 0
    done
    return 1
}

run() {   # run NAME SERVER_CONF CLIENT_CONF ARGS...
    local name=$1 sconf=$2 cconf=$3 out
    shift 3
    if ! start_server "$sconf"; then
        fail=$((fail + 1)); echo "FAIL $name: server did not start"; return
    fi
    out=$(printf 'GET / HTTP/1.0\r\n\r\n' | OPENSSL_CONF=$cconf timeout 20 \
          openssl s_client -connect "127.0.0.1:$port" "$@" -quiet 2>&1)
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; server=""
    if printf '%s' "$out" | grep -q "HTTP/1.0 200"; then
        pass=$((pass + 1)); echo "ok   $name"
    else
        fail=$((fail + 1)); echo "FAIL $name"; printf '%s\n' "$out" | head -5
    fi
}

for suite in "-tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384" \
             "-tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256" \
             "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384" \
             "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256" \
             "-tls1_2 -cipher ECDHE-RSA-AES128-SHA256" \
             "-tls1_2 -cipher AES256-SHA"; do
    # shellcheck disable=SC2086
    run "keycache server, default client: $suite" "$kc" /dev/null $suite
    # shellcheck disable=SC2086
    run "default server, keycache client: $suite" /dev/null "$kc" $suite
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
