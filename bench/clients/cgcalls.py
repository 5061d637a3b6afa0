#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The OpenSSL path a client took, from two callgrind profiles of it.

usage: cgcalls.py N1 PROFILE1 N2 PROFILE2

Prints one line: the calls per op, (calls(N2) - calls(N1)) / (N2 - N1), that
the client's own code makes to the libcrypto entry points in PATH below (in
that order), and the calls per op into keycache.so from outside it, e.g.

    HMAC 1; keycache 9

so that the table shows which API an unchanged runtime really uses (for
example that Python's hmac.new() calls the legacy HMAC_Init_ex, and so never
reaches keycache: "keycache 0").  The client's own code is any caller outside
libcrypto, libssl and keycache; where a program carries its own libcrypto
(node), a C++ caller in the same object.
"""
import re
import sys

# Entry points that tell the paths apart, in the order they are printed.
PATH = ("HMAC", "EVP_Q_mac", "HMAC_Init_ex", "EVP_PKEY_new_raw_private_key",
        "EVP_DigestSignInit", "EVP_DigestSignInit_ex", "PKCS5_PBKDF2_HMAC",
        "EVP_KDF_derive", "EVP_MAC_fetch", "EVP_MAC_init",
        "EVP_CIPHER_fetch", "EVP_CipherInit_ex", "EVP_CipherInit_ex2",
        "EVP_EncryptInit_ex", "EVP_DecryptInit_ex")
# the module keycache-ossl<major>.so, started by the loader keycache.so
KEYCACHE = re.compile(r"(^|/)keycache(-ossl\d+)?\.so$")
OPENSSL_LIB = re.compile(r"(^|/)(libcrypto|libssl)\.so[^/]*$")


def is_openssl(ob):
    return OPENSSL_LIB.search(ob) is not None or KEYCACHE.search(ob) is not None


def ref(table, ident, name):
    """A compressed "(id) name" reference: the name comes with the first
    use of the id only."""
    if name:
        table[ident] = name
    return table.get(ident, "")


def calls(path):
    """Calls of each PATH function, and calls into keycache.so from other
    objects, in one callgrind profile."""
    counts = dict.fromkeys(PATH, 0)
    into_kc = 0
    objs, names = {}, {}
    ob = cob = cfn = fn = None
    with open(path) as f:
        for line in f:
            m = re.match(r"^(c?)ob=\((\d+)\)(?: (.*))?$", line)
            if m:
                name = ref(objs, m.group(2), m.group(3))
                if m.group(1):
                    cob = name
                else:
                    ob, cob = name, None
                continue
            m = re.match(r"^(c?)fn=\((\d+)\)(?: (.*))?$", line)
            if m:
                name = ref(names, m.group(2), m.group(3))
                if m.group(1):
                    cfn = name
                else:
                    fn, cob, cfn = name, None, None
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m and cfn is not None:
                n = int(m.group(1))
                base = cfn.split("'")[0]
                callee_ob = cob if cob is not None else ob
                if (base in counts and not is_openssl(ob)
                        and (callee_ob != ob or "::" in fn)):
                    counts[base] += n
                if (KEYCACHE.search(callee_ob) is not None
                        and KEYCACHE.search(ob) is None):
                    into_kc += n
                cob = cfn = None
    return counts, into_kc


def main(argv):
    if len(argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    n1, n2 = int(argv[1]), int(argv[3])
    c1, k1 = calls(argv[2])
    c2, k2 = calls(argv[4])
    per_op = lambda a, b: (b - a) / (n2 - n1)
    parts = []
    for name in PATH:
        v = per_op(c1[name], c2[name])
        if v >= 0.05:
            parts.append(f"{name} {v:.3g}")
    out = ", ".join(parts) if parts else "no OpenSSL MAC or cipher call"
    print(f"{out}; keycache {per_op(k1, k2):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
