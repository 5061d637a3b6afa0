#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Inclusive instructions per op of named functions, from two callgrind
profiles of a client (run.sh keeps them with KC_KEEP=DIR).

usage: cgincl.py N1 PROFILE1 N2 PROFILE2 FUNCTION...

Prints, for each FUNCTION, (Ir(N2) - Ir(N1)) / (N2 - N1) of its inclusive
cost as callgrind_annotate --inclusive=yes reports it (every caller, every
object of that name), e.g. how much of a keycache op is still the
runtime's own EVP_CIPHER_fetch or ERR_clear_error, which no provider sees.
"""
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\S*?:(\S+)\s")


def inclusive(path):
    """Inclusive Ir of every function of a profile, summed over objects."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes",
                          "--threshold=100", path], check=True,
                         capture_output=True, text=True).stdout
    cost = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m and "=>" not in line:
            name = m.group(2).split("'")[0]
            cost[name] = cost.get(name, 0) + int(m.group(1).replace(",", ""))
    return cost


def main(argv):
    if len(argv) < 6:
        sys.stderr.write(__doc__)
        return 2
    n1, n2 = int(argv[1]), int(argv[3])
    a, b = inclusive(argv[2]), inclusive(argv[4])
    for name in argv[5:]:
        print(f"{name} {(b.get(name, 0) - a.get(name, 0)) / (n2 - n1):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
