# SPDX-License-Identifier: Apache-2.0
# bench/server/common.sh - sourced by bench/server/run.sh and
# test/server_smoke.sh: the servers, their arms, building the .NET server
# into <build>/server, starting and stopping a server process, and reading
# its CPU time and keycache's counters.
#
# An arm is one server process: def (OPENSSL_CONF=/dev/null: the default
# provider alone), kc (OPENSSL_CONF=<build>/openssl.cnf, or $KC_CONF) and,
# for dn-cookie, fix (the default provider, requests to /reuse: the
# per-thread reuse fix in the same program).  Every arm runs the same
# program; keycache is switched on by OPENSSL_CONF alone.

KC_SERVER_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../dotnet.sh
. "$KC_SERVER_SRC/../dotnet.sh"
KC_PYTHON=${KC_PYTHON:-/usr/bin/python3}

# server  runtime  label (markdown)
kc_server_table()
{
    cat <<'EOF'
dn-cookie dotnet ASP.NET Core (Kestrel): `HMACSHA1.HashData` + `new AesGcm` cookies, 4 ops/request
dn-auth   dotnet ASP.NET Core cookie authentication (Data Protection)
rb-puma   puma   Rack on puma: ActiveSupport `MessageVerifier` + `MessageEncryptor` (Rails' cookies)
EOF
}

# Fields of one server: sets KC_RUNTIME, KC_LABEL; 1 if unknown.
kc_server_case()
{
    local line

    line=$(kc_server_table | awk -v c="$1" '$1 == c')
    [ -n "$line" ] || return 1
    read -r _ KC_RUNTIME KC_LABEL <<<"$line"
}

kc_server_arms()
{
    case $1 in
    dn-cookie) echo def kc fix ;;
    *)         echo def kc ;;
    esac
}

# The request path of a server's arm.
kc_server_path()
{
    case $1.$2 in
    dn-cookie.fix) echo /reuse ;;
    dn-auth.*)     echo /me ;;
    *)             echo /cookie ;;
    esac
}

# Whether a server's runtime is usable; if not, KC_WHY says why.
kc_server_have()
{
    KC_WHY=
    case $1 in
    dotnet)
        command -v dotnet >/dev/null \
            || { KC_WHY="no .NET SDK (dotnet)"; return 1; }
        [ -f "$KC_SERVER_BIN/dotnet/KcServer.dll" ] \
            || { KC_WHY=${KC_DOTNET_WHY:-the .NET server is not built}
                 return 1; } ;;
    puma)
        command -v puma >/dev/null \
            || { KC_WHY="no puma (Debian: puma)"; return 1; }
        ruby -ractive_support -ractive_support/message_verifier \
             -ractive_support/message_encryptor -e 0 >/dev/null 2>&1 \
            || { KC_WHY="no ActiveSupport (Debian: ruby-activesupport)"
                 return 1; } ;;
    *)
        KC_WHY="unknown runtime $1"
        return 1 ;;
    esac
}

# Build the .NET server into $1/server/dotnet unless it is up to date; sets
# KC_SERVER_BIN, and KC_DOTNET_WHY when there is no SDK or the build failed.
kc_server_build()
{
    KC_SERVER_BIN=$1/server
    mkdir -p "$KC_SERVER_BIN" || return 1
    kc_dotnet_build "$KC_SERVER_SRC/dotnet" "$KC_SERVER_BIN/dotnet" \
        KcServer.dll "$KC_SERVER_BIN/build.log" server \
        Program.cs KcServer.csproj NuGet.Config
}

# Free loopback TCP ports, one per argument.
kc_server_ports()
{
    "$KC_PYTHON" - "$@" <<'EOF'
import socket, sys
socks = []
for _ in sys.argv[1:]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# kc_server_start SERVER ARM PORT DIR CONF: start one arm in the background
# with OPENSSL_CONF=CONF and KEYCACHE_DEBUG=file:DIR/SERVER.ARM.kc; its pid
# goes to DIR/SERVER.ARM.pid, its output to DIR/SERVER.ARM.log.
kc_server_start()
{
    local server=$1 arm=$2 port=$3 dir=$4 conf=$5 cmd base=$4/$1.$2

    case $server in
    dn-cookie) cmd=(dotnet "$KC_SERVER_BIN/dotnet/KcServer.dll" cookie) ;;
    dn-auth)   mkdir -p "$dir/dn-auth.keys"
               cmd=(dotnet "$KC_SERVER_BIN/dotnet/KcServer.dll" auth
                    --keys "$dir/dn-auth.keys") ;;
    rb-puma)   cmd=(puma -q -e production -t 2:2 -w 0
                    -b "tcp://127.0.0.1:$port"
                    "$KC_SERVER_SRC/ruby/config.ru") ;;
    *)         return 1 ;;
    esac
    case $server in
    dn-*) cmd+=(--urls "http://127.0.0.1:$port") ;;
    esac
    rm -f "$base.kc"
    # exec: the pid is the server's own, whose CPU time /proc reports
    DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 \
    OPENSSL_CONF=$conf KEYCACHE_DEBUG=file:$base.kc \
        "${cmd[@]}" </dev/null >"$base.log" 2>&1 &
    echo $! >"$base.pid"
}

# kc_server_up SERVER DIR CONF: start every arm of SERVER (kc_server_start;
# keycache's arm with CONF, the others with /dev/null) and wait until each
# listens.  Each pid is appended to the caller's array pids as soon as the
# arm starts, for its EXIT trap.  Sets KC_ARMS (the arms, in order),
# KC_PORT[arm] and KC_SPECS (arm=port:path, as check.py takes them).  1 if
# an arm did not start, with the tail of its log on standard error.
kc_server_up()
{
    local server=$1 dir=$2 conf=$3 a c i ports failed=

    KC_ARMS=($(kc_server_arms "$server"))
    read -r -a ports <<<"$(kc_server_ports "${KC_ARMS[@]}")"
    declare -gA KC_PORT=()
    KC_SPECS=()
    for i in "${!KC_ARMS[@]}"; do
        a=${KC_ARMS[$i]}
        KC_PORT[$a]=${ports[$i]}
        c=/dev/null
        [ "$a" = kc ] && c=$conf
        kc_server_start "$server" "$a" "${ports[$i]}" "$dir" "$c"
        pids+=("$(cat "$dir/$server.$a.pid")")
        KC_SPECS+=("$a=${ports[$i]}:$(kc_server_path "$server" "$a")")
    done
    for a in "${KC_ARMS[@]}"; do
        if ! kc_server_wait "${KC_PORT[$a]}" "$(cat "$dir/$server.$a.pid")"
        then
            echo "FAILED $server $a: did not start" >&2
            tail -n 20 "$dir/$server.$a.log" >&2
            failed=1
        fi
    done
    [ -z "$failed" ]
}

# kc_server_wait PORT PID [SECONDS]: 0 once the port accepts connections,
# 1 if the process died or SECONDS (60) passed.
kc_server_wait()
{
    local port=$1 pid=$2 n=$((${3:-60} * 10))

    while [ "$n" -gt 0 ]; do
        kill -0 "$pid" 2>/dev/null || return 1
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
        n=$((n - 1))
    done
    return 1
}

# kc_server_stop SERVER PID: the signal on which each server shuts down and
# exits normally, so that keycache writes its exit report (puma re-raises
# SIGTERM and dies of it; SIGINT is its clean stop); SIGKILL after 30 s.
kc_server_stop()
{
    local sig=TERM n=300

    [ "${1#rb-}" != "$1" ] && sig=INT
    kill -"$sig" "$2" 2>/dev/null || return 0
    while kill -0 "$2" 2>/dev/null && [ "$n" -gt 0 ]; do
        sleep 0.1
        n=$((n - 1))
    done
    if kill -0 "$2" 2>/dev/null; then
        echo "$1 (pid $2) did not stop; killed" >&2
        kill -KILL "$2" 2>/dev/null
    fi
    wait "$2" 2>/dev/null
    return 0
}

# CPU time of a process so far, user + system, all threads, in clock ticks.
kc_server_cpu()
{
    # fields 14 and 15 of /proc/PID/stat; the name (field 2) may hold
    # spaces, so count from the last ')'
    sed -E 's/.*\) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# keycache's counters from an arm's exit report: "hits misses passthrough",
# or not-loaded when keycache did not report (did not start).
kc_server_counters()
{
    local line

    line=$(grep -E ': report \(exit\): all hits=' "$1" 2>/dev/null \
           | tail -n 1)
    if [ -z "$line" ]; then
        echo not-loaded
    else
        sed -E 's/.* hits=([0-9]+) misses=([0-9]+) passthrough=([0-9]+).*/\1 \2 \3/' <<<"$line"
    fi
}
