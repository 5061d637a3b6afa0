#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Shared-state operations per op, inside providers and outside them.

usage: sharedops.py prep <build-dir> <out-dir>
       sharedops.py perop N1 PROFILE1 N2 PROFILE2 <out-dir> [--detail]

An op's calls that touch state every thread shares - process-wide locks
and the reference counts of fetched algorithms - are what serialises
threads doing one-shot crypto, and callgrind counts them exactly.  They are
split by where they happen: "in" is under a provider's dispatch function
(keycache's, or the default provider's: its HMAC init fetching its digest),
"out" is everything else (the application's fetch, EVP_*_CTX_new/free, the
EVP glue around the provider calls).

`prep` prints the callgrind option the profiles need and writes
<out-dir>/libcrypto.so.3 (whatever the library's name is): a
copy of the libcrypto kcbench runs on whose code is byte for byte the same,
with symbols added for the default provider's dispatch functions
(kcdispatch lists them from the provider's own dispatch tables).  Debian's
libcrypto has no symbols for these static functions, and callgrind then
folds a tail call into one (EVP_MAC_init's `return meth->init(...)`) into
its caller, so that no call chain would show it; named, each is a frame of
its own.  callgrind.sh runs kcbench with LD_LIBRARY_PATH=<out-dir> and
--separate-callers, so every call count comes with its whole call chain.

`perop` prints the per-op difference of the two profiles, like Ir/op, as
"in_locks in_refs out_locks out_refs" (with --detail, then one line per
side, function and, inside, the provider function libcrypto called: the
outermost provider frame of the chain).  A call is "in" if any frame of its chain is a function
of keycache's module (keycache-ossl<major>.so behind the loader, or a
keycache.so loaded directly) or a default dispatch function.  Counted:
  locks  lock acquisitions: CRYPTO_THREAD_read_lock/write_lock, and
         pthread_rwlock_*lock / pthread_mutex_lock not made by those (each
         is released once more; --detail shows the unlocks)
  refs   reference counts of shared objects: up_ref and free of fetched
         EVP_MD, EVP_CIPHER, EVP_MAC, EVP_KDF, EVP_RAND, providers (where
         libcrypto exports them), and CRYPTO_atomic_add/and/or/store
         (CRYPTO_UP_REF itself is inline and so counted through these
         callers only)
A *_free call counts even when it frees nothing shared (NULL, a static
legacy EVP_MD): callgrind sees the call, not the object.
"""
import os, re, struct, subprocess, sys

# keycache's code: the build the loader keycache.so starts, or either named
KC_OBJ = re.compile(r"(^|/)keycache(-ossl\d+)?\.so$")

DEPTH = 60     # --separate-callers: deeper than any chain seen (about 30)

LOCKS = {"CRYPTO_THREAD_read_lock", "CRYPTO_THREAD_write_lock"}
UNLOCKS = {"CRYPTO_THREAD_unlock"}
PTHREAD_LOCKS = {"pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
                 "pthread_rwlock_tryrdlock", "pthread_rwlock_trywrlock",
                 "pthread_mutex_lock", "pthread_mutex_trylock"}
PTHREAD_UNLOCKS = {"pthread_rwlock_unlock", "pthread_mutex_unlock"}
REFS = {f"{t}_{op}" for t in ("EVP_MD", "EVP_CIPHER", "EVP_MAC", "EVP_KDF",
                              "EVP_RAND") for op in ("up_ref", "free")}
REFS |= {"ossl_provider_up_ref", "ossl_provider_free",
         "CRYPTO_atomic_add", "CRYPTO_atomic_add64", "CRYPTO_atomic_and",
         "CRYPTO_atomic_or", "CRYPTO_atomic_store"}
CRYPTO_LOCKING = LOCKS | UNLOCKS


def base(component):
    return component.split("@", 1)[0]


def elf_sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
            for i in range(shnum)]


def prep(build, out):
    lines = subprocess.run([os.path.join(build, "bench", "kcdispatch")],
                           capture_output=True, text=True,
                           check=True).stdout.splitlines()
    lib, syms, inside, used = None, {}, set(), set()
    for line in lines:
        obj, off, label, exported = line.split()
        if lib is None:
            lib = obj
        if obj != lib:
            continue            # the default provider lives in libcrypto
        if exported != "-":
            inside.add(exported)    # already named, e.g. SHA1_Update
        else:
            name = "kcdflt." + re.sub(r"[^A-Za-z0-9_.-]", "_", label)
            if name in used:    # encoders repeat names: one per structure
                name += "." + off
            if syms.setdefault(int(off, 16), name) == name:
                used.add(name)
    data = open(lib, "rb").read()
    secs = elf_sections(data)
    rsp = []
    # a shared object is linked at 0, so an offset from the load address
    # is the ELF address; one outside every code section means it is not
    for addr, name in sorted(syms.items()):
        # sh_type 1 PROGBITS with SHF_EXECINSTR (4): .text and its kin
        sec = [i for i, s in enumerate(secs)
               if s[1] == 1 and s[2] & 4 and s[3] <= addr < s[3] + s[5]]
        if not sec:
            sys.exit(f"sharedops: {addr:#x} is in no code section of {lib}")
        shstr = secs[struct.unpack_from("<H", data, 0x3E)[0]]
        nm = secs[sec[0]][0]
        sname = data[shstr[4] + nm:data.index(b"\0", shstr[4] + nm)].decode()
        rsp.append(f"--add-symbol={name}={sname}:{addr - secs[sec[0]][3]:#x}"
                   ",function,global")
        inside.add(name)
    os.makedirs(out, exist_ok=True)
    dst = os.path.join(out, os.path.basename(lib))
    with open(os.path.join(out, "objcopy.rsp"), "w") as f:
        f.write("\n".join(rsp) + "\n")
    subprocess.run(["objcopy", "@" + os.path.join(out, "objcopy.rsp"), lib,
                    dst], check=True)
    # objcopy gives added symbols size 0, and valgrind ignores those; size 1
    # names the entry only, so the function's other blocks stay in its
    # frame rather than becoming functions of their own
    img = bytearray(open(dst, "rb").read())
    for s in elf_sections(img):
        if s[1] != 2:                                   # SHT_SYMTAB
            continue
        strs = elf_sections(img)[s[6]]
        for o in range(s[4], s[4] + s[5], s[9]):
            n, = struct.unpack_from("<I", img, o)
            if img[strs[4] + n:strs[4] + n + 7] == b"kcdflt.":
                struct.pack_into("<Q", img, o + 16, 1)
    open(dst, "wb").write(img)
    with open(os.path.join(out, "inside.txt"), "w") as f:
        f.write("\n".join(sorted(inside)) + "\n")
    # the callgrind option the profiles need, for the caller to pass on
    print(f"--separate-callers={DEPTH}")


def ref(table, ident, name):
    """A compressed "(id) name": the name comes with the id's first use."""
    if name:
        table[ident] = name
    return table.get(ident, "")


def count(path, inside):
    """{(side, kind, function): calls} of one callgrind profile."""
    objs, names, kc_fns = {}, {}, set()
    edges = {}
    ob = cfn = None
    with open(path) as f:
        for line in f:
            m = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                table = objs if m.group(2) == "ob" else names
                name = ref(table, m.group(3), m.group(4))
                if m.group(2) == "ob" and not m.group(1):
                    ob = name
                elif m.group(2) == "fn" and not m.group(1):
                    cfn = None
                    if KC_OBJ.search(ob):
                        kc_fns.add(name.split("'", 1)[0])
                elif m.group(2) == "fn":
                    cfn = name
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m and cfn is not None:
                edges[cfn] = edges.get(cfn, 0) + int(m.group(1))
                cfn = None
    counts, truncated = {}, 0
    for chain_s, n in edges.items():
        chain = [base(c) for c in chain_s.split("'") if not c.isdigit()]
        callee = chain[0]
        if callee in LOCKS or callee in UNLOCKS:
            kind = "lock" if callee in LOCKS else "unlock"
        elif callee in PTHREAD_LOCKS or callee in PTHREAD_UNLOCKS:
            if len(chain) > 1 and chain[1] in CRYPTO_LOCKING:
                continue        # counted as the CRYPTO_THREAD_* call
            kind = "lock" if callee in PTHREAD_LOCKS else "unlock"
        elif callee in REFS:
            kind = "ref"
        else:
            continue
        if len(chain_s.split("'")) > DEPTH:
            truncated += n
        # the outermost provider frame: the dispatch function libcrypto
        # called (keycache's, or the default's when keycache is not there)
        entry = [c for c in chain[1:] if c in inside or c in kc_fns]
        side = "in" if entry else "out"
        key = (side, kind, callee, entry[-1] if entry else "")
        counts[key] = counts.get(key, 0) + n
    return counts, truncated


def perop(n1, p1, n2, p2, out, detail):
    inside = set(open(os.path.join(out, "inside.txt")).read().split())
    c1, t1 = count(p1, inside)
    c2, t2 = count(p2, inside)
    n = n2 - n1
    per = {k: (c2.get(k, 0) - c1.get(k, 0)) / n for k in set(c1) | set(c2)}
    tot = lambda side, kind: sum(v for k, v in per.items()
                                 if k[0] == side and k[1] == kind)
    print(" ".join(f"{tot(s, k):g}" for s in ("in", "out")
                   for k in ("lock", "ref")))
    if t2 > t1:
        print(f"warning: {(t2 - t1) / n:g} calls/op with chains deeper "
              f"than {DEPTH}: attributed as outside", file=sys.stderr)
    if detail:
        for k, v in sorted(per.items()):
            if abs(v) >= 0.005:
                print(f"  {k[0]:3} {k[1]:6} {k[2]:24} {v:5g}  {k[3]}")


def main(argv):
    if len(argv) == 3 and argv[0] == "prep":
        prep(argv[1], argv[2])
    elif len(argv) in (6, 7) and argv[0] == "perop":
        perop(int(argv[1]), argv[2], int(argv[3]), argv[4], argv[5],
              len(argv) == 7 and argv[6] == "--detail")
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
