#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite, as the README's test command and CI run it:
#   1. plain build against the system OpenSSL, every ctest (incl. valgrind
#      lifecycle run and the openssl command-line comparison)
#   1b. the pattern catalogue (bench/patterns.sh) on the system OpenSSL:
#      fails when a row's instructions per op exceed its bound in
#      bench/patterns.bounds (needs valgrind)
#   2. ASan + UBSan build, every CUnit test
#   3. TSan build, the threaded tests
#   4. the differential fuzzer for a bounded time (FUZZ_SECONDS, default 120)
#   5. the same suite against OpenSSL 3.5 in a Debian trixie chroot, and
#      against OpenSSL 4.0 in a sid chroot with experimental's OpenSSL
#      (beside sid's 3.6, which python3 links: the mixed-host clients),
#      each with the pattern catalogue against its bounds too (skipped with
#      "patterns" in KC_SKIP), and
#      tools/mixed-host.sh: the loader with builds for 3.6 (sid chroot) and
#      4.0 in one modules directory, and each alone, under 4.0's openssl and
#      a C program and 3.6's python3
#   6. the Debian packages: built, installed, used and removed in trixie and
#      bookworm chroots, and built against OpenSSL 4.0 in the sid chroot
#      with experimental's OpenSSL, there also installed beside the 3.x
#      build for both kinds of programs (tools/deb-check.sh)
# Set KC_SKIP="patterns asan tsan fuzz compat deb" (any subset) to leave
# steps out.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
skip=" ${KC_SKIP:-} "
step() { printf '\n=== %s\n' "$*"; }
want() { [[ "$skip" != *" $1 "* ]]; }

step "plain build, system $(openssl version)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure

if want patterns; then
    step "pattern catalogue, default vs keycache, bounds of $(build/bench/kcpatterns --version-key)"
    bash bench/patterns.sh build
fi

if want asan; then
    step "AddressSanitizer + UndefinedBehaviorSanitizer"
    cmake -S . -B build-asan -DKEYCACHE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    cmake --build build-asan -j"$jobs"
    # diff_families: its full 3,000 sequences a family run in the plain
    # build and the compat chroots; 1,000 here, about 7x slower each
    KC_DIFF_SEQS=1000 ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0 \
        UBSAN_OPTIONS=halt_on_error=1 \
        LSAN_OPTIONS="suppressions=$PWD/tools/lsan.supp" \
        ctest --test-dir build-asan --output-on-failure
fi

if want tsan; then
    # (also an -O0 build whose origin walk is checked against libgcc's)
    step "ThreadSanitizer, threaded tests; origin walks checked"
    cmake -S . -B build-tsan -DKEYCACHE_TSAN=ON -DCMAKE_BUILD_TYPE=Debug \
          -DKEYCACHE_ORIGIN_SELFCHECK=ON
    cmake --build build-tsan -j"$jobs"
    TSAN_OPTIONS=halt_on_error=1 \
        ctest --test-dir build-tsan --output-on-failure \
              -R 'threads|patterns|lifecycle|spare|diagnostics|fork|origin|admission|pending|tls_secrets|hmac_first|copy_reads'
fi

if want fuzz && [ -f fuzz/run.sh ]; then
    step "differential fuzzing, ${FUZZ_SECONDS:-120} s"
    cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DKEYCACHE_FUZZ=ON \
          -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build build-fuzz -j"$jobs"
    # half with the test config (keys cached at once), half with the
    # deployed admission: a fresh thread's first HMACs are deferred
    half=$(( ${FUZZ_SECONDS:-120} / 2 ))
    bash fuzz/run.sh build-fuzz "$half"
    KC_DIFF_ADMIT=3 bash fuzz/run.sh build-fuzz "$half"
fi

if want compat && [ -f tools/compat.sh ]; then
    step "OpenSSL 3.5 (Debian trixie chroot)"
    bash tools/compat.sh trixie
    if want patterns; then
        step "pattern catalogue on OpenSSL 3.5, bounds of 3.5"
        bash tools/compat.sh trixie --bench --patterns
    fi
    step "OpenSSL 4.0 (Debian sid chroot, OpenSSL from experimental)"
    bash tools/compat.sh sid-ossl4
    if want patterns; then
        step "pattern catalogue on OpenSSL 4.0, bounds of 4.0"
        bash tools/compat.sh sid-ossl4 --bench --patterns
    fi
    step "mixed host: the loader, builds for 3.6 and 4.0, in 4.0 and 3.6 programs"
    bash tools/mixed-host.sh --make-chroots
fi

if want deb && [ -f tools/deb-check.sh ]; then
    step "Debian packages, installed and removed in trixie, bookworm and sid + OpenSSL 4.0"
    bash tools/deb-check.sh trixie bookworm sid-ossl4
fi
