# SPDX-License-Identifier: Apache-2.0
# bench/dotnet.sh - sourced by bench/clients/common.sh and
# bench/server/common.sh: building one of the bench's .NET programs.

# kc_dotnet_build SRC OUT DLL LOG WHAT FILE...: build the .NET project whose
# FILEs (Program.cs, the .csproj, NuGet.Config) are in SRC into OUT, by way
# of a copy beside it (OUT-src), unless OUT/DLL is newer than each FILE.  Offline: the NuGet.Config has no
# package source, and no build server is left running.  Output is appended
# to LOG.  On failure OUT is removed and KC_DOTNET_WHY says "the .NET WHAT
# did not build"; without an SDK it says so.  Returns 0 either way.
kc_dotnet_build()
{
    local src=$1 out=$2 dll=$3 log=$4 what=$5 tmp=$2-src f stale=

    shift 5
    if ! command -v dotnet >/dev/null; then
        KC_DOTNET_WHY="no .NET SDK (dotnet)"
        return 0
    fi
    for f in "$@"; do
        [ "$out/$dll" -nt "$src/$f" ] || stale=1
    done
    [ -n "$stale" ] || return 0
    rm -rf "$tmp" "$out"
    mkdir -p "$tmp"
    for f in "$@"; do
        cp "$src/$f" "$tmp/" || return 0
    done
    if ! (cd "$tmp" \
          && DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 \
             DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1 \
             DOTNET_CLI_USE_MSBUILD_SERVER=0 \
             dotnet build -c Release -o "../${out##*/}" -nologo \
                 -nodeReuse:false -p:UseSharedCompilation=false) \
         >>"$log" 2>&1; then
        KC_DOTNET_WHY="the .NET $what did not build (see $log)"
        rm -rf "$out"
    fi
}
