#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Break keycache's cache on purpose and check that the tests notice.

Each mutant is one small edit to a copy of the provider that makes the cache
hand out a wrong or stale context.  For every mutant the copy is built and
the test suite run; a mutant that no test kills is a hole in the tests.

usage: tools/mutants.py [--keep] [NAME ...]     (from the repository root)
"""
import os, shutil, subprocess, sys, tempfile

MUTANTS = {
    # keys compared by length only, not by content (a key changed in place
    # in the same buffer would hit the old entry)
    "key-by-length": [("provider/cache.c",
        "&& e->keylen == keylen && keys_equal(e->key, key, keylen);",
        "&& e->keylen == keylen;"),
        ("provider/cache.c",
         "if (e->alg == alg && e->param == param && e->keylen == keylen\n"
         "            && keys_equal(e->key, key, keylen))",
         "if (e->alg == alg && e->param == param && e->keylen == keylen)"),
        # every key hashes alike, so the index finds other keys' entries
        ("provider/cache.c", "    return v0 ^ v1 ^ v2 ^ v3;", "    return 0;")],
    # HMAC: no keyless re-init of a given-back context (message state of
    # the last use leaks into the next)
    "hmac-no-reinit": ("provider/hmac.c",
        "if (!f->init(lk.spare, NULL, 0, NULL)) {", "if (0) {"),
    # HMAC: a hit hands out the entry's template instead of a copy
    "hmac-share-template": ("provider/hmac.c",
        "} else if ((inner = f->dupctx(tmpl)) == NULL) {",
        "} else if ((inner = tmpl) == NULL) {"),
    # HMAC: a missed key's context is a copy of the per-thread base
    # context that is never re-keyed (it computes with the empty key)
    "hmac-copy-no-rekey": ("provider/hmac.c",
        "    if ((inner = f->dupctx(base)) != NULL\n        && !f->init(inner, key, keylen, NULL)) {",
        "    if ((inner = f->dupctx(base)) != NULL\n        && 0) {"),
    # HMAC: digest-noinit / digest-oneshot / tls-data-size go to the cached
    # context instead of a private one
    "hmac-flags-cached": ("provider/hmac.c",
        "if (strcmp(k, OSSL_MAC_PARAM_TLS_DATA_SIZE) == 0)\n            return P_UNRESETTABLE;",
        "if (strcmp(k, OSSL_MAC_PARAM_TLS_DATA_SIZE) == 0)\n            return P_OTHER;"),
    # a context given back on another thread is parked in that thread's
    # entry with the same slot and generation (under another key)
    "park-any-thread": ("provider/cache.c",
        "if (c == NULL || c->id != lease->cache_id || lease->idx >= c->size)",
        "if (c == NULL || lease->idx >= c->size)"),
    # every missed key is cached at once, whatever admit_after says
    # (per-connection TLS secrets end up in the cache)
    "admit-at-once": ("provider/cache.c",
        "    if (c->pctx->admit_after <= 1)\n        return bypass_allows(c);",
        "    if (1)\n        return bypass_allows(c);"),
    # the default's KDFs and HMAC-DRBG are not served as pass-through, so
    # their inner HMAC (keyed with derived secrets) reaches the cache
    "kdf-not-passthrough": [("provider/keycache_prov.c",
        "        return pctx->hmac_on ? pctx->kdf_algs : NULL;",
        "        return NULL;"),
        ("provider/keycache_prov.c",
         "        return pctx->hmac_on ? pctx->rand_algs : NULL;",
         "        return NULL;")],
    # GCM: the IV length set before the key is not replayed
    "gcm-drop-ivlen": ("provider/aes_gcm.c",
        "} else if (w->ivlen != KC_GCM_IV_DEFAULT) {", "} else if (0) {"),
    # GCM: the expected tag set before the key is not replayed
    "gcm-drop-tag": ("provider/aes_gcm.c",
        "    if (w->taglen != 0) {\n        /* the tag", "    if (0) {\n        /* the tag"),
    # GCM: the direction chosen before the key is not replayed
    "gcm-drop-direction": ("provider/aes_gcm.c",
        "if (w->inited && !inner_init(w, inner, w->enc, NULL, 0, NULL, 0, NULL))",
        "if (0)"),
    # GCM: replay's nothing-recorded shortcut misses a recorded direction
    # (Not a mutant: the same shortcut missing a recorded IV length, since
    # through EVP every context gets an init, so a direction, before any
    # params; the check stays for callers of the dispatch table itself.)
    "gcm-replay-shortcut-direction": ("provider/aes_gcm.c",
        "if (!w->inited && w->taglen == 0", "if (w->taglen == 0"),
    # GCM: the one-length answer before the key ignores a recorded IV length
    "gcm-one-length-stale": ("provider/aes_gcm.c",
        "kind == G_IVLEN ? w->ivlen : w->g->keylen",
        "kind == G_IVLEN ? KC_GCM_IV_DEFAULT : w->g->keylen"),
    # GCM: a keyed init hands out the entry's template itself, not a copy
    # (the first user's state - IV, tag - reaches every later one)
    # (and a freed wrapper leaves it to the cache)
    "gcm-share-template": [("provider/aes_gcm.c",
        "    if ((inner = fns(w)->dupctx(tmpl)) == NULL)\n        return 0;",
        "    inner = tmpl;"),
        ("provider/aes_gcm.c", "    if (w->inner != NULL)\n        fns(w)->freectx(w->inner);\n    kc_wrapper_free",
         "    kc_wrapper_free")],
    # (Not a mutant: dropping the algorithm from the entry compare changes
    # nothing observable, since AES key sizes differ in length and HMAC
    # entries carry their digest as param; the compare stays as a guard.)
}

def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True)

def main(argv):
    keep = "--keep" in argv
    names = [a for a in argv if not a.startswith("--")] or list(MUTANTS)
    root = os.getcwd()
    failed = 0
    for name in names:
        edits = MUTANTS[name]
        if isinstance(edits, tuple):
            edits = [edits]
        work = tempfile.mkdtemp(prefix="kc-mutant-")
        # same parent layout as the checkout so ../shared/vectors resolves
        src = os.path.join(os.path.dirname(root), os.path.basename(work))
        # only what git tracks: work in progress elsewhere stays out
        files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True,
                               text=True, check=True).stdout.split()
        for f in files:
            os.makedirs(os.path.join(src, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(os.path.join(root, f), os.path.join(src, f))
        applies = True
        for path, old, new in edits:
            text = open(os.path.join(src, path)).read()
            applies = applies and old in text
            open(os.path.join(src, path), "w").write(text.replace(old, new, 1))
        if not applies:
            print(f"{name:20} PATCH DOES NOT APPLY (update tools/mutants.py)")
            failed += 1
            continue
        b = run(f"cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build build -j2", src)
        if b.returncode != 0:
            print(f"{name:20} BUILD FAILED\n{b.stdout[-2000:]}{b.stderr[-2000:]}")
            failed += 1
            continue
        t = run("ctest --test-dir build -E valgrind 2>&1", src)
        killed = [l.split(" - ")[1].split()[0] for l in t.stdout.splitlines()
                  if l.strip().startswith(tuple("0123456789")) and " - " in l]
        if t.returncode == 0:
            print(f"{name:20} SURVIVED: no test failed")
            failed += 1
        else:
            print(f"{name:20} killed by: {', '.join(killed)}")
        if not keep:
            shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
