# SPDX-License-Identifier: Apache-2.0
# Sourced by the test scripts: their pass/fail counters and checks.  Each
# script ends with: echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; shift; printf '       %s\n' "$@"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "got:  $2" "want: $3"; fi; }
# how many lines of file $2 hold the string $1
count() { grep -cF -- "$1" "$2" || true; }
