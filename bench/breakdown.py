#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a keycache op's instructions go: inside keycache's entry points or
outside them (the application's EVP calls, allocation, fetches).

usage: bench/breakdown.py <build-dir> <scenario:size> [...]
e.g.   bench/breakdown.py build gcm256-enc-prefetch:32 qmac-sha256:32

Like callgrind.sh it runs `kcbench --callgrind SCENARIO:SIZE:keycache:N`
under valgrind for N = 2000 and 4000 and reports per-op differences: the
total, the inclusive cost of each keycache dispatch function called by
libcrypto, how many allocation and lock calls an op makes in all, and how
many of those keycache's own code makes directly (the rest are the
application's EVP calls and the default provider's functions), and what
keycache's code spends in calls to other code (mostly the default
provider's dispatch functions it forwards to).

Last, keycache's own code per op, exclusively: the self cost of every
function in keycache.so (inlined helpers included, nothing counted twice)
plus what it spends in named functions of other objects (libc's strcmp
and memset, libcrypto's CRYPTO_THREAD_get_local, ERR marks) - not in the
default provider's dispatch functions, which libcrypto keeps static and
callgrind shows unnamed.
"""
import os, re, subprocess, sys, tempfile

# keycache's code: the module keycache-ossl<major>.so that the loader
# keycache.so starts (or a module named keycache.so, loaded directly)
KC_OBJ = re.compile(r"(^|/)keycache(-ossl\d+)?\.so$")


def is_kc(ob):
    return KC_OBJ.search(ob) is not None

COUNTED = ("malloc", "free", "CRYPTO_malloc", "CRYPTO_zalloc", "CRYPTO_free",
           "CRYPTO_THREAD_read_lock", "CRYPTO_THREAD_write_lock",
           "pthread_mutex_lock")


def compressed_name(table, m):
    """A callgrind "(id) name" reference: the name is given at first use of
    the id (by ob=/cob= or fn=/cfn= alike) and only the id after that."""
    if m.group(2):
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), "")


def profile(kcbench, scen, n, out):
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    kcbench, "--callgrind", f"{scen}:keycache:{n}"],
                   capture_output=True, check=True,
                   env=dict(os.environ, OPENSSL_CONF="/dev/null"))
    incl = {}
    ann = subprocess.run(["callgrind_annotate", "--inclusive=yes",
                          "--threshold=100", out],
                         capture_output=True, text=True).stdout
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S+)", line)
        if m:
            name = m.group(2).split(":", 1)[-1]
            incl[name] = max(incl.get(name, 0), int(m.group(1).replace(",", "")))
    # calls of the COUNTED functions: all of them, and those made directly
    # by a function in keycache.so (its own code, not the default's)
    # and the inclusive cost of every call keycache's code makes into
    # another object (the default provider's functions, libcrypto, libc)
    calls, own, ext, names, objs, cfn = {}, {}, {}, {}, {}, None
    ob, fn_ob, fn, cob, ext_key = "", "", "", None, None
    selfc, after_calls = {}, False
    with open(out) as f:
        for line in f:
            if after_calls:
                after_calls = False
            elif line[:1].isdigit() or line[:1] in "+-*":
                # a cost line of fn itself (not the line after calls=)
                if is_kc(fn_ob):
                    parts = line.split()
                    if len(parts) >= 2:
                        selfc[fn] = selfc.get(fn, 0) + int(parts[1])
            if ext_key is not None:
                # the line after calls= is "<position> <inclusive cost>"
                ext[ext_key] = ext.get(ext_key, 0) + int(line.split()[-1])
                ext_key = None
                continue
            m = re.match(r"^c?ob=\((\d+)\)(?: (.*))?", line)
            if m:
                if line.startswith("ob="):
                    ob = compressed_name(objs, m)
                else:
                    cob = compressed_name(objs, m)
                continue
            m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?", line)
            if m:
                if line.startswith("cfn="):
                    cfn = compressed_name(names, m)
                else:
                    fn_ob, fn, cfn = ob, compressed_name(names, m), None
                    cob = None
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m:
                after_calls = True
            if m and cfn is not None:
                base = cfn.split("'")[0]
                if base in COUNTED:
                    calls[base] = calls.get(base, 0) + int(m.group(1))
                    if is_kc(fn_ob):
                        own[base] = own.get(base, 0) + int(m.group(1))
                callee_ob = cob if cob is not None else fn_ob
                if (is_kc(fn_ob)
                        and not is_kc(callee_ob)):
                    ext_key = (fn, base, os.path.basename(callee_ob))
                cob = None
    return incl, calls, own, ext, selfc


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    kcbench = os.path.join(argv[0], "bench", "kcbench")
    tmp = tempfile.mkdtemp()
    for scen in argv[1:]:
        a, ca, oa, ea, sa = profile(kcbench, scen, 2000,
                                    os.path.join(tmp, "a"))
        b, cb, ob, eb, sb = profile(kcbench, scen, 4000,
                                    os.path.join(tmp, "b"))
        per = {k: (b[k] - a.get(k, 0)) / 2000 for k in b}
        total = per.get("PROGRAM", 0)
        # the dispatch functions libcrypto calls (helpers run inside them)
        entry = {k: v for k, v in per.items() if v >= 1
                 and k.startswith(("kc_hmac_", "kc_gcm", "kc_aes", "kc_tmac_",
                                           "kc_cmac_", "kc_gmac_", "kc_kmac",
                                           "kc_tciph_"))}
        inside = sum(entry.values())
        print(f"{scen}: {total:.0f} instructions/op, {inside:.0f} inside "
              f"keycache's entry points, {total - inside:.0f} outside")
        for k, v in sorted(entry.items(), key=lambda kv: -kv[1]):
            print(f"    {k:32} {v:8.0f}")
        print("    calls/op: " + ", ".join(
            f"{k} {(cb.get(k, 0) - ca.get(k, 0)) / 2000:g}" for k in COUNTED))
        print("    of which made by keycache's own code: " + ", ".join(
            f"{k} {(ob.get(k, 0) - oa.get(k, 0)) / 2000:g}" for k in COUNTED))
        # unnamed libcrypto functions are its static ones: in practice the
        # default provider's dispatch functions keycache forwards to
        ext = {k: (eb[k] - ea.get(k, 0)) / 2000 for k in eb}
        ext = {k: v for k, v in ext.items() if v >= 1}
        print(f"    keycache's calls into other code, inclusive: "
              f"{sum(ext.values()):.0f}/op")
        for (caller, callee, obj), v in sorted(ext.items(),
                                                key=lambda kv: -kv[1]):
            if v >= 10:
                print(f"      {caller:24} -> {callee} ({obj}) {v:.0f}")
        own_self = {k: (sb[k] - sa.get(k, 0)) / 2000 for k in sb}
        own_self = {k: v for k, v in own_self.items() if v >= 0.5}
        named = {k: v for k, v in ext.items() if not k[1].startswith("0x")}
        s_self, s_named = sum(own_self.values()), sum(named.values())
        print(f"    keycache's own code: {s_self + s_named:.0f}/op = "
              f"{s_self:.0f} self cost in keycache.so + {s_named:.0f} in "
              f"named functions it calls")
        for k, v in sorted(own_self.items(), key=lambda kv: -kv[1]):
            if v >= 10:
                print(f"      {k:32} {v:6.0f}")
        for (caller, callee, obj), v in sorted(named.items(),
                                                key=lambda kv: -kv[1]):
            if v >= 10:
                print(f"      {caller + ' -> ' + callee:32} {v:6.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
