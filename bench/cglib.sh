# SPDX-License-Identifier: Apache-2.0
# Helpers shared by bench/callgrind.sh and bench/patterns.sh (sourced).

# cg_ir FILE... : the instructions (Ir) counted in callgrind output files,
# summed over them: one run, or a run's parts (CALLGRIND_DUMP_STATS) and
# the files of the children it forked (--callgrind-out-file=...%p).  Each
# file's "totals:" line (its "summary:" line where a valgrind writes none).
cg_ir() {
    awk '/^totals:/ { t += $2; nt++ } /^summary:/ { s += $2 }
         END { printf "%.0f\n", nt ? t : s }' "$@"
}
