#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Break keycache's cache on purpose and check that the tests notice.

Each mutant is one small edit to a copy of the provider that makes the cache
hand out a wrong or stale context.  For every mutant the copy is built and
the test suite run; a mutant that no test kills is a hole in the tests.

usage: tools/mutants.py [--keep] [--every-test] [--tests REGEX] [NAME ...]
       tools/mutants.py --check
(from the root; tools/compat.sh SUITE --mutants runs it on another OpenSSL)

The copy is built once; each mutant is then an incremental build and the
suite, stopped at the first test that fails (--every-test: all of them, to
see every test that kills it).  --tests REGEX runs only the ctests matching
REGEX (ctest -R).  A mutant in ONLY_ON is skipped, and reported so, on a
libcrypto that cannot tell it apart.  --check builds nothing: it says which
mutants no longer apply (ctest runs it as check_mutants).
"""
import os, shutil, subprocess, sys, tempfile

SIV_CHECK_OFF = ("provider/families/siv.c",
    "    ok = siv_kats_ok(pctx, f);",
    "    ok = 1;")

# Mutants that break the handling of a difference only some versions have:
# on the others the mutated path is never taken, so no test can fail there.
# tools/compat.sh sid-ossl4 --mutants runs them where they can be killed.
ONLY_ON = {
    # a base's shape recorded at the set and keyed after a change of the
    # default properties: killed on 3.0 (pat_base_where); it survives on
    # 4.0.3, where no test's context takes that path (why: not found yet)
    "tmpl-based-resolved-again": ("3.0",),
    # a name twice fails the call only in 4.x's generated decoders
    "gmac-repeats-taken": ("4.",),
    "cipher-call-resolves-first": ("4.",),
    "siv-repeats-taken": ("4.",),
    # AES-SIV's set_ctx_params(NULL) reopens the final in 4.x only
    "siv-null-keeps-final": ("4.",),
    # SHAKE hashing a long key raises from 3.4 on (no default length)
    "digest-key-retried": ("3.5", "3.6", "4."),
    # AES-SIV's empty message and reopened finals came after 3.0
    "siv-empty-never-message": ("3.5", "3.6", "4."),
    "siv-refusal-keeps-final": ("3.5", "3.6", "4."),
    "siv-forged-keeps-final": ("3.5", "3.6", "4."),
    # the known words of one version each (learn.c: 3.0.22, 3.5.9, 4.0.3;
    # another patch release learns its word, and the mutant survives there)
    "siv-table-wrong-3.0": ("3.0",),
    "siv-table-wrong-3.5": ("3.5",),
    "siv-table-wrong-4.0": ("4.",),
    "siv-table-version-typo": ("3.0",),
    # EVP_SKEY came with 3.5: before it the answer is "pay" either way, and
    # after it AES-SIV is passed through only beside a wrapped cipher
    "siv-pt-drags-ciphers": ("3.5", "3.6", "4."),
    "ciphers-pay-always": ("3.5", "3.6", "4."),
    "ciphers-pay-never": ("3.0", "3.1", "3.2", "3.3", "3.4"),
    "siv-not-passthrough": ("3.0", "3.1", "3.2", "3.3", "3.4"),
    # GMAC is nested (GCM on by "auto") where ciphers pay: 3.0 to 3.4
    "tmac-nested-replay-plain": ("3.0", "3.1", "3.2", "3.3", "3.4"),
    "tmac-nested-set-plain": ("3.0", "3.1", "3.2", "3.3", "3.4"),
    "tmac-nested-forward-first": ("3.0", "3.1", "3.2", "3.3", "3.4"),
    "cipher-mine-fetched": ("3.0", "3.1", "3.2", "3.3", "3.4"),
    # just keyed is GCM's from 3.5 on; on 3.0 keyed_known answers instead
    "ctmpl-jk-fresh-ivlen": ("3.5", "3.6", "4."),
}

MUTANTS = {
    # the advertised parameter tables of the template families, and a
    # final before any key
    "tmac-gettable-ctx-wrong": ("provider/layer/tmpl.c",
        "    return KC_CTX_TABLE(pctx->fam[which].mac.gettable_ctx_params, pctx);",
        "    return KC_CTX_TABLE(pctx->fam[which].mac.settable_ctx_params, pctx);"),
    "tmac-gettable-wrong": ("provider/layer/tmpl.c",
        "    return KC_TABLE(pctx->fam[which].mac.gettable_params, pctx);",
        "    return NULL;"),
    "tciph-gettable-wrong": ("provider/layer/ctmpl.c",
        "    return KC_TABLE(pctx->cfam[which].fns.gettable_params, pctx);",
        "    return NULL;"),
    "tmac-unkeyed-final-succeeds": ("provider/layer/tmpl.c",
        "    return materialize(w, NULL)\n           && w->f->mac.final(w->t.inner, out, outl, outsize);",
        "    return 1;"),
    # a thread's base (KC_TBASE): a copy not keyed with the caller's key
    "tmpl-base-key-skipped": ("provider/layer/tmpl.c",
        "         && (key == NULL || f->init(inner, key, keylen, NULL));",
        "         && (key == NULL || 1);"),
    # ...served whatever the call's shape names
    "tmpl-base-any-shape": ("provider/layer/tmpl.c",
        "                             KC_T_CALL, 0, KC_T_PARAM, s->shape, s->ns)\n               != b->len))",
        "                             KC_T_CALL, 0, KC_T_PARAM, s->shape, s->ns)\n               != b->len && 0))"),
    # ...or whatever was recorded before the key
    "tmpl-base-record-unchecked": ("provider/layer/tmpl.c",
        "    return w->t.len == b->len && memcmp(w->t.rec, b->rec, b->len) == 0;",
        "    return 1;"),
    # ...its zeros kept whatever the key's length
    "tmpl-base-keylen-unchecked": ("provider/layer/tmpl.c",
        "        && (b->keylen != keylen || keylen == 0)) {",
        "        && b->keylen == 0) {"),
    # ...a key of none taken for the length of a base never keyed: the
    # copy's refusal raised, then the default's way's again
    "tmpl-base-keylen-zero-matches": ("provider/layer/tmpl.c",
        "        && (b->keylen != keylen || keylen == 0)) {",
        "        && b->keylen != keylen) {"),
    # ...the call's IV dropped
    "tmpl-base-volatile-dropped": ("provider/layer/tmpl.c",
        "    ok = (s->nv == 0 || apply_volatile(w, s))",
        "    ok = (s->nv == 0 || 1)"),
    # ...a CMAC copy made before the key (keyed with zeros)
    "tmpl-base-keyed-early": ("provider/layer/tmpl.c",
        "    if (w->f->d->base == KC_BASE_COPY)\n        return base_copy(w, b, s, NULL, 0);",
        "    if (1)\n        return base_copy(w, b, s, NULL, 0);"),
    # ...a fresh context's (KMAC) served whatever shape the base has
    "tmpl-base-empty-any": ("provider/layer/tmpl.c",
        "        return s->ns > 0 || (b->len == 0 && w->f->d->cipher_param == NULL);",
        "        return 1;"),
    # ...or its recorded shape keyed under the properties of the key's time
    # ...kept across a change of the default properties
    # a thread's bases: the first of them, whatever its shape
    "tmpl-bases-first-any": ("provider/layer/tmpl.c",
        "        if (w != NULL ? base_is(w, &set->b[i], s) : set->b[i].ctx != NULL)",
        "        if (w != NULL ? 1 : set->b[i].ctx != NULL)"),
    # an unkeyed MAC context's copy: remembered as possible for any record
    "tmpl-dup-memo-any": ("provider/layer/tmpl.c",
        "                            w->t.len, NULL, 0) == 1)",
        "                            w->t.len, NULL, 0) == 1 || w->t.len > 0)"),
    # a thread's first misses counted (the registry's "first" for HMAC), or
    # a context keyed again among them not looked up for its own key
    "hmac-first-counted": ("provider/families/hmac.c",
        "    if (app_misses < KC_APP_MISSES && w->inner == NULL",
        "    if (0 && w->inner == NULL"),
    "hmac-first-rekey-skipped": ("provider/families/hmac.c",
        "    if (app_misses < KC_APP_MISSES && w->inner == NULL",
        "    if (app_misses < KC_APP_MISSES"),
    # a context keyed from an entry (or adopted as its template) is never
    # given back: the lease test inverted
    "hmac-park-leased-never": ("provider/families/hmac.c",
        "    return w->lease.cache_id != 0 && !w->passthrough && !w->app_keyed",
        "    return w->lease.cache_id == 0 && !w->passthrough && !w->app_keyed"),
    # a digest named to a passed-through private inner: its failed fetch
    # reads as keycache's library context's
    "hmac-pt-digest-private-errors": ("provider/families/hmac.c",
        "    if (w->app_mac == NULL && !w->app_keyed && params != NULL\n        && (dig",
        "    if (0 && w->app_mac == NULL && !w->app_keyed && params != NULL\n        && (dig"),
    # ... and where that fetch fails, the inner takes the list as given,
    # finds the digest in keycache's context and keeps a digest the
    # default's failed set dropped
    "hmac-pt-digest-fail-kept": ("provider/families/hmac.c",
        "    (void)fns(w)->set_ctx_params(w->inner, cp);",
        "    (void)fns(w)->set_ctx_params(w->inner, params);"),
    # a child forked while other threads ran walks the loader's lists to
    # admit a key (one of them may have held its lock: the child hangs)
    "origin-forked-threaded-walks": ("provider/cache/origin.c",
        "    if (forked_threaded)\n        return 0;",
        "    if (0)\n        return 0;"),
    # a thread's cache freed in its thread-stop handler, under OpenSSL's
    # process-wide lock (a fork() then leaves the child unable to exit);
    # or set aside and never freed, nor by a cache made after
    "thread-stop-frees-under-lock": ("provider/cache/store.c",
        "    int defer = reap_ok && pthread_setspecific(reap_key, pctx) == 0;",
        "    int defer = 0;"),
    "thread-stop-waits-for-registry": ("provider/cache/store.c",
        "    if (pthread_mutex_trylock(&registry_lock) != 0) {",
        "    if (pthread_mutex_lock(&registry_lock) != 0) {"),
    # a stop that finds registry_lock taken leaves the thread its cache,
    # or the cache it took off is freed only at the thread's exit
    "thread-stop-contended-keeps-cache": ("provider/cache/store.c",
        "                (void)lite_detach();",
        "                (void)0;"),
    # ...the stop, the record's or another instance's, waits for it
    # under OpenSSL's lock, or the cache it left outlives the thread's exit
    "thread-stop-second-waits": ("provider/cache/store.c",
        "        if (defer) {\n            if (kc_lite.pctx == pctx)",
        "        if (0) {\n            if (kc_lite.pctx == pctx)"),
    "thread-stop-second-kept": ("provider/cache/store.c",
        "    registry_take();\n    own_stopped_aside();\n    for",
        "    registry_take();\n    for"),
    # ...or still served after an explicit stop the thread goes on from
    "thread-stop-second-still-served": ("provider/cache/store.c",
        "            kc_lite.own_stopped = 1;\n",
        "            (void)0;\n"),
    "thread-stop-second-served-anyway": ("provider/cache/store.c",
        "    if (kc_lite.own_stopped)\n        return NULL;",
        "    if (0)\n        return NULL;"),
    # the report's count of threads that admitted: a thread stopped and
    # cached again counted twice
    "report-thread-admitted-twice": ("provider/cache/store.c",
        "        if (c != kc_lite.body || !kc_lite.admitted)",
        "        if (1)"),
    "thread-stop-contended-kept-till-exit": ("provider/cache/store.c",
        "    own_stopped_aside();\n    caches_reap(pctx, 0);",
        "    caches_reap(pctx, 0);"),
    "thread-stop-never-reaped": ("provider/cache/store.c",
        "    reap_ok = kc_module_pin()\n              && pthread_key_create(&reap_key, caches_reap_all) == 0;",
        "    reap_ok = kc_module_pin()\n              && pthread_key_create(&reap_key, NULL) == 0;"),
    # a context made in a miss-heavy thread looks up all the same, or a
    # cold context keyed again leaks the context its last key made
    "hmac-cold-off": ("provider/families/hmac.c",
        "    w->cold = cold;",
        "    w->cold = 0;"),
    # a cold context (counted when made) counted again when it forwards
    "hmac-cold-counted-twice": ("provider/families/hmac.c",
        "    if (!w->cold)\n        kc_count_passthrough(w->pctx, &w->pctx->hmac_alg);\n}",
        "    kc_count_passthrough(w->pctx, &w->pctx->hmac_alg);\n}"),
    "hmac-cold-inner-leaked": ("provider/families/hmac.c",
        "    if (w->inner != NULL) {\n        free_inner(w);",
        "    if (0) {\n        free_inner(w);"),
    # a long HMAC key cached by its digest: even one no longer than the
    # digest's block (which HMAC uses as it is), or by a digest of a prefix
    "hmac-long-key-any-length": ("provider/families/hmac.c",
        "        || keylen <= (size_t)w->dg->block_size\n        || !kc_inner_digest_key(",
        "        || !kc_inner_digest_key("),
    "hmac-long-key-prefix": ("provider/inner/inner.c",
        "    ok = dc != NULL && f->init(dc, NULL) && f->update(dc, in, inlen)",
        "    ok = dc != NULL && f->init(dc, NULL) && f->update(dc, in, 128)"),
    # a registry row bound to the default's algorithm beside its own, when
    # found looking back from the last one found
    "bind-near-neighbour": ("provider/inner/inner.c",
        "            a = &algs[at - d];",
        "            a = &algs[at - d + 1];"),
    # the registry: a row's on flag read from another row, "auto" off
    "registry-on-first-cipher": ("provider/families/registry.c",
        "           : &pctx->cfam[r->index].on;",
        "           : &pctx->cfam[0].on;"),
    "registry-auto-off": ("provider/families/registry.c",
        "        return (autorule);", "        return 0;"),
    # AES-SIV's word known for a version CI runs, wrong: a reopening the
    # default has left out (each version's entry only runs on that version)
    "siv-table-wrong-3.0": ("provider/quirks/learn.c",
        "    { \"3.0.22\", KC_Q_KNOWN | KC_Q_REPEATS_KNOWN | KC_Q_SET_REOPENS\n                | KC_Q_EMPTY_REOPENS },",
        "    { \"3.0.22\", KC_Q_KNOWN | KC_Q_REPEATS_KNOWN | KC_Q_SET_REOPENS },"),
    "siv-table-wrong-3.5": ("provider/quirks/learn.c",
        "               | KC_Q_SET_REOPENS | KC_Q_TRY_REOPENS },",
        "               | KC_Q_SET_REOPENS },"),
    "siv-table-wrong-4.0": ("provider/quirks/learn.c",
        "               | KC_Q_NULL_REOPENS | KC_Q_TRY_REOPENS },",
        "               | KC_Q_TRY_REOPENS },"),
    # a version CI runs missing from the table (learned: slower, not wrong)
    "siv-table-version-typo": ("provider/quirks/learn.c",
        "    { \"3.0.22\", KC_Q_KNOWN", "    { \"3.0.2x\", KC_Q_KNOWN"),
    # quirk_table = off not heeded, or a bad value of it taken
    "quirk-table-off-ignored": ("provider/quirks/learn.c",
        "    for (i = 0; use_table && v != NULL\n",
        "    for (i = 0; v != NULL\n"),
    "conf-quirk-table-bad-taken": ("provider/core/conf.c",
        "                     KC_BOOL_WORDS, KEYCACHE_CONF_QUIRK_TABLE, qtable);\n            ok = 0;",
        "                     KC_BOOL_WORDS, KEYCACHE_CONF_QUIRK_TABLE, qtable);"),
    # a quirk learned wrong: SIV's set_ctx_params never reopening the final
    "quirk-siv-reopens-unlearned": ("provider/quirks/learn.c",
        "        if (!final_ok(m, t))\n            q |= reopens[i];",
        "        if (!final_ok(m, t))\n            (void)reopens[i];"),
    # the report's quirk answers the opposite of what was learned, or
    # leaves out the quirks the registry row names
    "report-quirks-inverted": ("provider/core/report.c",
        "                    : kc_quirk(word, q) ? \"1\" : \"0\");",
        "                    : kc_quirk(word, q) ? \"0\" : \"1\");"),
    "registry-quirks-column-unread": ("provider/core/report.c",
        "            if ((r->quirks & q) != 0)",
        "            if ((KC_QS_TMAC & q) != 0)"),
    # the quirks word read as if nothing were learned
    "quirk-lookup-never": ("provider/quirks/quirks.h",
        "    return (word & q) != 0;", "    return q == KC_Q_KNOWN;"),
    # every key admitted whoever keyed it: the default's KDFs, DRBGs and
    # libssl, fetched with provider=default, get their secrets cached
    "origin-admits-all": ("provider/cache/origin.c",
        "    pthread_once(&origin_once, origin_init);\n",
        "    return 1;\n    pthread_once(&origin_once, origin_init);\n"),
    # a MAC keyed under a cipher entry point admitted (the default's
    # AES-SIV, fetched with provider=default, keys CMAC with half its key)
    "origin-any-kind": ("provider/cache/origin.c",
        "            return origin.entry_cipher[i] == cipher;",
        "            return 1;"),
    # libssl's frames taken for the application's (TLS 1.3's EVP_Q_mac of
    # its finished keys and the PRF's calls come from there)
    "origin-libssl-is-app": ("provider/cache/origin.c",
        "    ssl = sym != NULL && dladdr(sym, &at) != 0 && at.dli_fbase == base;",
        "    ssl = 0;"),
    # libssl known by its file name only: a renamed or vendored copy's
    # ticket and binder keys admitted (test_tls_secrets_renamed)
    "origin-libssl-by-name": ("provider/cache/origin.c",
        "    ssl = sym != NULL && dladdr(sym, &at) != 0 && at.dli_fbase == base;",
        "    ssl = sym != NULL && dladdr(sym, &at) != 0 && at.dli_fbase == base\n          && strstr(lm->l_name, \"libssl\") != NULL;"),
    # AES-SIV: a keyless init with an empty array taken as a direction
    # change only, where set_ctx_params' empty array may reopen the final
    "siv-empty-init-direction-only": ("provider/families/siv.c",
        "            return 0;\n    }\n    return siv_set_ctx_params(s, params);",
        "            return 0;\n    }\n    if (key == NULL && params != NULL && params[0].key == NULL)\n        return 1;\n    return siv_set_ctx_params(s, params);"),
    # GMAC's own context takes the first of a repeated name where the
    # default fails the call (4.x: test_repeats, diff_families)
    "gmac-repeats-taken": ("provider/families/gmac.c",
        "    if (twice\n        && kc_tmac_repeats_fail(",
        "    if (0 && twice\n        && kc_tmac_repeats_fail("),
    # a keyed CMAC/GMAC call naming a cipher and a name twice resolves the
    # cipher first: the application's fetch error, not the default's
    # "repeated parameter" (4.x: diff_families)
    "cipher-call-resolves-first": ("provider/layer/tmpl.c",
        "    if (repeats(w->pctx, w->f, params)\n        && kc_tmac_repeats_fail(",
        "    if (0 && repeats(w->pctx, w->f, params)\n        && kc_tmac_repeats_fail("),
    # HMAC: a context keyed again with any key of the same length taken
    # for one keyed with its own (a key changed in place hits the old)
    "hmac-rekey-any-key": ("provider/families/hmac.c",
        "    return w->have_key == KEY_COPY ? kc_key_equal(w->key, key, keylen)",
        "    return w->have_key == KEY_COPY ? 1"),
    # ... a leased entry's key not checked (evicted and refilled slots)
    "hmac-rekey-lease-unchecked": ("provider/families/hmac.c",
        "                                   : kc_cache_lease_is(c, &w->lease, key,\n                                                       keylen);",
        "                                   : 1;"),
    # the per-thread memo answers for another object than the caller's
    "origin-memo-any-object": ("provider/cache/origin.c",
        "        if (ssl_memo.base[i] == base)",
        "        if (ssl_memo.base[i] != 0)"),
    # a private libcrypto taken for the one keycache is linked to: keycache
    # starts beside a program's own copy (test_private_libcrypto)
    "host-any-libcrypto": ("provider/core/keycache_prov.c",
        "    if (core_fn != NULL && kc_same_object((void *)&EVP_MAC_init, core_fn))",
        "    if (core_fn != NULL || kc_same_object((void *)&EVP_MAC_init, core_fn))"),
    # the loader hands dlopen a sibling cut short or a FIFO (test_loader)
    "loader-sibling-unchecked": ("provider/early/loader.c",
        "    if (!sibling_sound(path, why, sizeof(why)))",
        "    if (0 && !sibling_sound(path, why, sizeof(why)))"),
    # another provider's digest under a name the table knows taken for the
    # default's (HMAC then runs on keycache's own SHA-256)
    "digest-any-provider": ("provider/families/hmac.c",
        "    d = kc_inner_is_default(pctx, EVP_MD_get0_provider(md))",
        "    d = 1 || kc_inner_is_default(pctx, EVP_MD_get0_provider(md))"),
    # the pass-through to the application's default told the digest's name
    # but not the query it was resolved with
    "passthrough-app-no-props": ("provider/families/hmac.c",
        "    ok = w->dg == NULL || inner_set_digest(w, ctx, w->dg, w->dg_props);",
        "    ok = w->dg == NULL || inner_set_digest(w, ctx, w->dg, NULL);"),
    # a key keyed again and again in one context counts each time
    "admit-per-keying": ("provider/cache/store.c",
        "            if (*lk->counted != fp) {",
        "            if (1) {"),
    # ... and so in the thread's small record
    "admit-per-keying-record": ("provider/cache/store.c",
        "    if (*lk->counted == fp)\n        return NULL;\n    *lk->counted = fp;",
        "    *lk->counted = fp;"),
    # keys compared by length only, not by content (a key changed in place
    # in the same buffer would hit the old entry)
    "key-by-length": [("provider/cache/store.c",
        "&& e->keylen == keylen && keys_equal(e->key, key, keylen);",
        "&& e->keylen == keylen;"),
        ("provider/cache/store.c",
         "            && rec_matches(c, slot, rec, reclen)\n"
         "            && keys_equal(e->key, key, keylen))",
         "            && rec_matches(c, slot, rec, reclen))"),
        # every key hashes alike, so the index finds other keys' entries
        ("provider/cache/store.c", "    return v0 ^ v1 ^ v2 ^ v3;", "    return 0;")],
    # HMAC: no keyless re-init of a given-back context (message state of
    # the last use leaks into the next, and the last MAC stays in it)
    "hmac-no-reinit": ("provider/families/hmac.c",
        "    return fns(arg)->init(inner, NULL, 0, NULL);", "    return 1;"),
    # HMAC: a given-back context restarted when a hit takes it, not when
    # it is kept (as before stop 17): it holds its last MAC meanwhile
    "hmac-restart-on-hit": [("provider/families/hmac.c",
        "    return fns(arg)->init(inner, NULL, 0, NULL);", "    return 1;"),
        ("provider/families/hmac.c",
         "            inner = lk.spare;\n        } else if ((inner = f->dupctx(tmpl)) == NULL) {",
         "            inner = lk.spare;\n            if (!f->init(inner, NULL, 0, NULL))\n                return -1;\n        } else if ((inner = f->dupctx(tmpl)) == NULL) {")],
    # GMAC: used contexts kept and handed out again (they hold their last
    # tag, and without a new IV differ from a fresh copy)
    "gmac-spares": ("provider/families/gmac.c",
        "    .volatile_last_wins = 1,\n",
        "    .volatile_last_wins = 1,\n    .reinit_restores = 1,\n"),
    # CMAC: a given-back context kept with the last block of its message
    "cmac-park-unscrubbed": ("provider/families/cmac.c",
        "    .park_scrub = 32,\n", ""),
    # HMAC: pass-through before the key to the inner default in keycache's
    # private context, which lacks another provider's digest (legacy MD4)
    "hmac-foreign-digest-private": ("provider/families/hmac.c",
        " passthrough:\n    if (!go_passthrough_app(w))\n        return 0;",
        " passthrough:\n    if (!go_passthrough(w))\n        return 0;"),
    # HMAC: a thread's first misses keyed in keycache's private context,
    # not the application's (a failed digest fetch then names another
    # library context: test_hmac_first's fresh process)
    "hmac-app-never": [("provider/families/hmac.c",
        "        if ((r = key_app(w, key, keylen, plain)) >= 0) {\n"
        "            if (r == 1)\n"
        "                kc_count_passthrough(pctx, &pctx->hmac_alg);\n"
        "            return r;",
        "        if (0) {\n"
        "            if (r == 1)\n"
        "                kc_count_passthrough(pctx, &pctx->hmac_alg);\n"
        "            return r;"),
        ("provider/families/hmac.c",
        "    if (app_misses < KC_APP_MISSES && !tried && !lk.admit && !lk.pending) {",
        "    if (0 && app_misses < KC_APP_MISSES && !tried && !lk.admit && !lk.pending) {")],
    # HMAC: every later inner (misses, templates, bases) in keycache's
    # private context, whose digest store a process then builds
    # (test_hmac_first's fresh process counts digests fetched elsewhere)
    "hmac-inner-private": ("provider/families/hmac.c",
        "    if (w->dg != NULL && app_inner_ok(w)\n",
        "    if (0 && w->dg != NULL && app_inner_ok(w)\n"),
    # ... made there by the digest's name alone, though it was resolved
    # with a query (another provider's SHA-256, preferred by default)
    "hmac-inner-app-no-query": ("provider/families/hmac.c",
        "            ok = inner_set_digest(w, inner, w->dg, w->dg_props);",
        "            ok = inner_set_digest(w, inner, w->dg, NULL);"),
    # ... or once the default properties changed since it was resolved
    "hmac-inner-app-stale": ("provider/families/hmac.c",
        "    return !__atomic_load_n(&w->pctx->app_gone, __ATOMIC_ACQUIRE)\n"
        "           && app_finds_dg(w);",
        "    return !__atomic_load_n(&w->pctx->app_gone, __ATOMIC_ACQUIRE);"),
    # ... tried there after a provider of it was unloaded (the default,
    # maybe: the fetch fails and leaves its errors behind a success)
    "hmac-app-gone-ignored": ("provider/families/hmac.c",
        "    return !__atomic_load_n(&w->pctx->app_gone, __ATOMIC_ACQUIRE)\n"
        "           && app_finds_dg(w);",
        "    return app_finds_dg(w);"),
    # CMAC, GMAC, KMAC: their default contexts (probes, templates, bases,
    # passed-through ones) in keycache's private context, whose cipher or
    # digest store a process then builds (test_first's fresh process
    # counts what is fetched outside the application's context)
    # a pass-through KDF's MAC contexts are cold: never counted, looked up
    # or admitted (test_internal: counters unchanged by KDFs)
    "derive-cold-ignored": ("provider/cache/store.c",
        "    if (deriving != 0)\n        return 1;\n",
        "    if (0 && deriving != 0)\n        return 1;\n"),
    # ... also where a pooled wrapper is taken on the fast path (test_internal
    # warms its thread's cache and pool first)
    "derive-fast-path-open": ("provider/cache/store.c",
        "        if (c->bypass | deriving)\n",
        "        if (c->bypass)\n"),
    # ... and nothing it does makes the thread a cache (test_internal: a
    # thread that only derives, with HMAC, CMAC, or another instance's record)
    "derive-makes-cache": ("provider/cache/store.c",
        "    if (deriving != 0)\n        return NULL;\n",
        "    if (0 && deriving != 0)\n        return NULL;\n"),
    # KDFs are made in the application's context, not the private one
    # (test_first: a fresh process's KDFs fetch nothing outside it;
    # test_hmac_patterns: a KDF over another provider's digest, its errors)
    "kdf-provctx-private": ("provider/core/passthrough.c",
        "    return provctx != NULL ? provctx : pctx->inner_provctx;\n",
        "    return pctx->inner_provctx;\n"),
    # a copy of a cipher context holding an IV back writes the IV into the
    # source, which other threads may be copying (test_threads under TSan;
    # often also a copy sealing with no IV at all)
    "tciph-dup-flushes-source": ("provider/layer/ctmpl.c",
        "    if (src->t.inner == NULL && src->piv_len == 0 && !unkeyed_dup_ok(src))\n",
        "    if (!flush_iv((KC_TCIPH_CTX *)src)\n"
        "        || (src->t.inner == NULL && !unkeyed_dup_ok(src)))\n"),
    # KMAC's newctx fetches its digest under the default properties in
    # force: no check, and a cached key MACs where the default's newctx
    # fails (test_fam_patterns, properties then KMAC new)
    "tmac-newctx-fetch-unchecked": ("provider/layer/tmpl.c",
        "    if (new_fetch_known(pctx, f, gen))\n",
        "    if (1 || new_fetch_known(pctx, f, gen))\n"),
    # ... where it found another provider's, keycache's own context runs
    # on the built-in digest (test_fam_patterns, another provider's digest)
    "tmac-newctx-other-own": ("provider/layer/tmpl.c",
        "    return tmac_new(pctx, which, found < 0, &gen);\n",
        "    return tmac_new(pctx, which, 0, &gen);\n"),
    # ... and where it found none, the context is made all the same
    "tmac-newctx-fetch-none-made": ("provider/layer/tmpl.c",
        "    if ((found = new_fetch(pctx, f, gen)) == 0)\n        return NULL;\n",
        "    if ((found = new_fetch(pctx, f, gen)) == 0)\n        found = 1;\n"),
    "tmac-provctx-private": ("provider/layer/tmpl.c",
        "    if (rec_gen(pctx) != KC_GEN_UNKNOWN\n",
        "    if (0 && rec_gen(pctx) != KC_GEN_UNKNOWN\n"),
    # ... made there once a provider of it was unloaded: a recorded cipher
    # fetched there now fails (test_first's unloaded default)
    "tmac-app-gone-ignored": ("provider/layer/tmpl.c",
        "        && !__atomic_load_n(&pctx->app_gone, __ATOMIC_ACQUIRE)\n"
        "        && (provctx = kc_inner_app_provctx(",
        "        && (provctx = kc_inner_app_provctx("),
    # ... or for a context made before the default properties changed
    # (test_fam_patterns: a cipher set, then properties no provider meets)
    "tmac-gen-ignored": ("provider/layer/tmpl.c",
        "    void *provctx = w->gen != KC_GEN_UNKNOWN && w->gen == rec_gen(w->pctx)\n",
        "    void *provctx = 1\n"),
    # ... the generation taken at the first recorded call, not at newctx,
    # where KMAC's default fetches its digest (test_fam_patterns: KMAC
    # new, then properties)
    "tmac-gen-at-record": ("provider/layer/tmpl.c",
        "                       int how)\n{\n    return kc_tcore_append(",
        "                       int how)\n{\n    if (w->t.len == 0)\n"
        "        w->gen = rec_gen(w->pctx);\n    return kc_tcore_append("),
    # what a family learns at first use asked of a context that cannot be
    # made (KMAC under properties that exclude the default): left
    # unlearned for the process's life (test_first: a first use under
    # properties no provider meets)
    "tmac-learn-app-only": ("provider/layer/tmpl.c",
        "    if (t == NULL)\n        return pctx->inner_provctx;\n    f->mac.freectx(t);",
        "    if (t == NULL)\n        return provctx;\n    f->mac.freectx(t);"),
    "tmac-probe-no-fallback": ("provider/layer/tmpl.c",
        "        ERR_pop_to_mark();\n        t = f->newctx(w->pctx->inner_provctx);",
        "        ERR_pop_to_mark();\n        t = NULL;"),
    # GMAC with GCM on: a replayed record's cipher fetched as named, so
    # keycache's GCM inside its own GMAC (test_first: GMACs past the first)
    "tmac-nested-replay-plain": ("provider/layer/tmpl.c",
        "    if (w->f->asks_default)\n        return kc_trec_replay_calls(",
        "    if (0)\n        return kc_trec_replay_calls("),
    # ... a cipher given again once keyed, likewise
    "tmac-nested-set-plain": ("provider/layer/tmpl.c",
        "    if (w->f->asks_default && params != NULL)\n        p = to_default(",
        "    if (0)\n        p = to_default("),
    # ... and a call forwarded to a context not the application's first
    "tmac-nested-forward-first": ("provider/layer/tmpl.c",
        "    if (w->f->asks_default && params != NULL\n"
        "        && may_name(w->f->d->cipher_param, params))",
        "    if (w->f->asks_default && params != NULL && (w->first || w->app_mac)\n"
        "        && may_name(w->f->d->cipher_param, params))"),
    # keycache's own GCM checked in the private context by a fetch, which
    # builds its cipher store (test_first's fresh process)
    "cipher-mine-fetched": ("provider/inner/inner.c",
        "        ok = props == NULL || *props == '\\0'\n",
        "        ok = 0\n"),
    # a stale digest's private inner kept as a template for fresh contexts
    "hmac-stale-shared": ("provider/families/hmac.c",
        "    if (stale_dg(w))\n        forward_all(w);",
        "    if (0)\n        forward_all(w);"),
    # ... or as the thread's keyless base that misses copy
    # a deferred first keying's MAC with a wrong outer pad
    # a question to a deferred context answered by nobody (the context
    # made for it not asked)
    "hmac-defer-get-unasked": ("provider/families/hmac.c",
        "get_ctx_params(w->inner, params);\n    ok = fns(w)->get_ctx_params(tmp, params);",
        "get_ctx_params(w->inner, params);\n    ok = 1;"),
    "hmac-defer-pad": ("provider/families/hmac.c",
        "            pad[i] ^= 0x36 ^ 0x5c;",
        "            pad[i] ^= 0x36 ^ 0x5d;"),
    # ... a key longer than the block used as it is, not its digest
    "hmac-defer-long-key": ("provider/families/hmac.c",
        "    if (kl > bs)\n        ok = f->init(dc, NULL)",
        "    if (kl > 1000)\n        ok = f->init(dc, NULL)"),
    # ... settled, or made for a copy, without the message held (settle
    # and a copy's default context share defer_replay(): the twins
    # hmac-defer-settle-drops and hmac-defer-make-drops, merged)
    "hmac-defer-replay-drops": ("provider/families/hmac.c",
        "    int ok = w->dlen == 0 || fns(w)->update(ctx, w->dbuf, w->dlen);",
        "    int ok = 1;"),
    # ... as if never finished (hmac-defer-settle-unfinished and
    # hmac-defer-copy-unfinished, merged)
    "hmac-defer-replay-unfinished": ("provider/families/hmac.c",
        "    if (ok && w->deferred == DEFER_SPENT) {\n        ok = fns(w)->final(",
        "    if (0) {\n        ok = fns(w)->final("),
    # ... a message longer than the buffer kept anyway (overflow)
    "hmac-defer-no-limit": ("provider/families/hmac.c",
        "    if (w->deferred == DEFER_KEYED && datalen <= KC_DEFER_MAX - w->dlen) {",
        "    if (w->deferred == DEFER_KEYED && datalen <= KC_DEFER_MAX) {"),
    # ... finished twice by keycache itself
    "hmac-defer-final-twice": ("provider/families/hmac.c",
        "    if (w->deferred == DEFER_KEYED && defer_mac(w, out, outl, outsize)) {",
        "    if (w->deferred != DEFER_NONE && defer_mac(w, out, outl, outsize)) {"),
    # ... a keyless re-init that keeps the message
    "hmac-defer-restart-keeps": ("provider/families/hmac.c",
        "        OPENSSL_cleanse(w->dbuf, w->dlen);\n        w->dlen = 0;\n        return 1;",
        "        return 1;"),
    # ... a copy without the message
    "hmac-defer-dup-empty": ("provider/families/hmac.c",
        "    dst->dlen = src->dlen;",
        "    dst->dlen = 0;"),
    # ... parameters taken on the deferred state, not the default's
    "hmac-defer-params-unsettled": ("provider/families/hmac.c",
        "    if (w->deferred != DEFER_NONE && !defer_settle(w))\n        return 0;\n",
        ""),
    # ... updated on without taking over the context its copy made
    "hmac-defer-adopt-skipped": ("provider/families/hmac.c",
        "    if (!defer_adopt(w)) {\n        if (w->deferred == DEFER_KEYED && datalen",
        "    if (1) {\n        if (w->deferred == DEFER_KEYED && datalen"),
    # ... every copy making and publishing its own (a write each copy)
    "hmac-defer-promote-always": ("provider/families/hmac.c",
        "        void *p = __atomic_load_n(&src->promoted, __ATOMIC_ACQUIRE);",
        "        void *p = NULL;"),
    # ... keyed again as if keyed the first time: never looked up
    "hmac-defer-rekey-first": ("provider/families/hmac.c",
        "        && pctx->admit_after > 1 && !w->rekeyed) {",
        "        && pctx->admit_after > 1) {"),
    # ... a long key's digest deferred: its TLS record MAC then takes it
    "hmac-defer-long-digest": ("provider/families/hmac.c",
        "    if (plain && w->dg->hmac_plain",
        "    if (w->dg->hmac_plain"),
    # ... every digest deferred, SHAKE too
    "hmac-defer-any-digest": ("provider/inner/inner.c",
        "        d->hmac_plain = d->fns_ok && hmac_plain(d);",
        "        d->hmac_plain = d->fns_ok && d->size > 0;"),
    "hmac-stale-base": ("provider/families/hmac.c",
        "        if (!kc_cache_keeps(c) || stale_dg(w))\n            return NULL;",
        "        if (!kc_cache_keeps(c))\n            return NULL;"),
    # ... even a miss that admits its key (which then is never cached)
    "hmac-app-admitted": ("provider/families/hmac.c",
        "    if (app_misses < KC_APP_MISSES && !tried && !lk.admit && !lk.pending) {",
        "    if (app_misses < KC_APP_MISSES && !tried && !lk.pending) {"),
    # ... even a miss whose key's entry awaits its template
    "hmac-app-pending": ("provider/families/hmac.c",
        "    if (app_misses < KC_APP_MISSES && !tried && !lk.admit && !lk.pending) {",
        "    if (app_misses < KC_APP_MISSES && !tried && !lk.admit) {"),
    # ... told the digest's name but not the query it was resolved with
    # (another provider's SHA-256, preferred by default, taken instead)
    "hmac-app-no-props": ("provider/families/hmac.c",
        "        ok = inner_set_digest(w, ctx, w->dg, w->dg_props);",
        "        ok = inner_set_digest(w, ctx, w->dg, NULL);"),
    # ... not counted as the pass-through a miss not admitted is
    "hmac-app-uncounted": ("provider/families/hmac.c",
        "            /* counted as any miss not admitted (a failure was, forwarded) */\n"
        "            if (r == 1)\n                kc_count_passthrough(pctx, &pctx->hmac_alg);",
        "            (void)0;"),
    # ... nor a thread's first miss, not looked up
    "hmac-first-uncounted": ("provider/families/hmac.c",
        "        if ((r = key_app(w, key, keylen, plain)) >= 0) {\n"
        "            if (r == 1)\n"
        "                kc_count_passthrough(pctx, &pctx->hmac_alg);\n"
        "            return r;",
        "        if ((r = key_app(w, key, keylen, plain)) >= 0) {\n"
        "            return r;"),
    # a thread's first contexts of a CMAC or KMAC: none on the
    # application's default (each looked up, counted and cached) ...
    "app-first-never": ("provider/layer/layer.h",
        "    if (*n >= KC_APP_FIRST || pctx->admit_after <= 1)",
        "    if (1)"),
    # ... never GMAC's while GCM is on, or GMAC's first contexts on
    # keycache's GCM (counted: the test sees more contexts), for every
    # call or only those that set the cipher before the key
    "first-never-nests": ("provider/core/bind.c",
        "            f->first = r->first;",
        "            f->first = r->first && !kc_registry_conf_on(pctx, r->nests);"),
    "first-nested-wrapper": ("provider/layer/tmpl.c",
        "    if (np == NULL || pp != NULL || np->data_type != OSSL_PARAM_UTF8_STRING",
        "    if (1 || np == NULL || pp != NULL || np->data_type != OSSL_PARAM_UTF8_STRING"),
    "first-nested-init-only": ("provider/layer/tmpl.c",
        "static KC_NOINLINE int first_set(KC_TMAC_CTX *w, const OSSL_PARAM params[])\n{\n    int ok = forward(w, 0, NULL, 0, params);",
        "static KC_NOINLINE int first_set(KC_TMAC_CTX *w, const OSSL_PARAM params[])\n{\n    int ok = w->ops->set_ctx_params(w->t.inner, params);"),
    # ... a NULL cipher string read (crash), or the answer kept across a
    # change of default properties (not kept up to date, not followed)
    "first-nested-null-name": ("provider/layer/tmpl.c",
        "        || np->data == NULL || !kc_trec_utf8_ends(np)",
        "        || !kc_trec_utf8_ends(np)"),
    # a thread's cache kept across a change of the default properties:
    # not started again at all, or its learned records, pair hint or side
    # templates (bases) kept (one mutant since both go in one helper)
    "cache-props-unchecked": ("provider/cache/store.c",
        "        if (c->props_gen != gen)\n            cache_props_moved(c, gen);",
        "        (void)gen;"),
    "cache-get-props-unasked": ("provider/cache/store.c",
        "    if (c == NULL || pctx->timed\n        || c->props_gen != __atomic_load_n(&pctx->props_gen,\n                                           __ATOMIC_RELAXED))",
        "    if (c == NULL || pctx->timed)"),
    "cache-props-keeps-learned": ("provider/cache/store.c",
        "    cache_renew(c, 0);\n    cache_drop_learned(c, 0);\n",
        "    cache_renew(c, 0);\n"),
    "props-gen-not-bumped": ("provider/core/props.c",
        "        __atomic_add_fetch(&pctx->props_gen, 1, __ATOMIC_RELEASE);",
        "        (void)0;"),
    # the registration's own call taken for a change (every cache made
    # before it starts again)
    "props-first-call-changes": ("provider/core/props.c",
        "    changed = pctx->props_seen\n              && (",
        "    changed = (1 ||"),
    # a context set on a base's shape, keyed after the default properties
    # changed: its cipher resolved again, not as the default did at the set
    "tmpl-based-resolved-again": ("provider/layer/tmpl.c",
        "    } else if (w->based\n               || (w->t.value > 0",
        "    } else if (0\n               || (w->t.value > 0"),
    "memo-props-unfollowed": ("provider/layer/tmpl.c",
        "    if ((c = kc_cache_get(pctx)) == NULL || !kc_cache_keep_gen(c, &gen))",
        "    if ((c = kc_cache_get(pctx)) == NULL\n        || ((gen = kc_cache_props_gen(c)), 0))"),
    # the one answer to "may it be kept": yes without the callback
    "keep-gen-unfollowed": ("provider/cache/store.c",
        "    if (pctx->props_follow == NULL || !pctx->props_follow(pctx))\n        return 0;",
        "    if (pctx->props_follow == NULL)\n        return 0;"),
    # ... or the thread's last answer kept across a change of them
    "pair-hint-any-props": ("provider/cache/store.c",
        " || strcmp(c->pair.b, b) != 0)",
        ")"),
    # ... or "provider=default" added where the cipher is not keycache's
    # (the fetch's error then names that query)
    # ... or a call naming the cipher forwarded as it is
    "forward-nested-never": ("provider/layer/tmpl.c",
        "        && may_name(w->f->d->cipher_param, params))\n        return forward_nested(",
        "        && 0)\n        return forward_nested("),
    # a cold AES-SIV wrapper's own context counted again (it was when made)
    "cold-own-counted-twice": ("provider/layer/ctmpl.c",
        "        if (!w->t.cold)\n            kc_count_passthrough(w->pctx, &f->alg[1]);",
        "        kc_count_passthrough(w->pctx, &f->alg[1]);"),
    # a first context's keyless init with params keeps the size it had
    "first-keyless-init-keeps-size": ("provider/layer/tmpl.c",
        "                return w->ops->init(w->t.inner, key, keylen, NULL);\n            w->size = 0;\n",
        "                return w->ops->init(w->t.inner, key, keylen, NULL);\n"),
    # ... or keyed with the wrong key when it decrypts
    "ctmpl-cold-own-wrong-key-decrypt": ("provider/layer/ctmpl.c",
        "        if ((inner = kc_tcore_make(&w->t, &cipher_side, alg, enc, key,",
        "        if ((inner = kc_tcore_make(&w->t, &cipher_side, alg, enc, key + (w->t.cold && !enc),"),
    # a cold CMAC context made the private default's, not the application's
    # (a refused cipher's error then names keycache's library context)
    "cold-mac-private-inner": ("provider/layer/tmpl.c",
        "        && (w->t.inner = app_first_inner(w)) != NULL) {\n        w->t.cold = 1;\n        w->first = KC_FIRST_COLD;",
        "        && (w->t.inner = f->mac.newctx(pctx->inner_provctx)) != NULL) {\n        w->t.cold = 1;\n        w->first = KC_FIRST_COLD;"),
    # a keyed context's every set_ctx_params taken for EVP_Q_mac's no-op
    "keyed-set-skipped-any": ("provider/layer/tmpl.c",
        "        if ((params == NULL || params[0].key == NULL) && noop_set(w, params))",
        "        if (noop_set(w, params))"),
    "first-nested-any-cipher": ("provider/layer/tmpl.c",
        "        || !memo_ask(w->pctx, &nest_memo_owner, np->data, NULL, nested_mine))",
        "        || 0)"),
    # ... an unkeyed one's copies plain copies (never cached)
    "first-copy-plain": ("provider/layer/tmpl.c",
        "    if (src->first == KC_FIRST_SHAPE\n        && ((dst",
        "    if (0 && src->first == KC_FIRST_SHAPE\n        && ((dst"),
    # ... or made in keycache's private library context after all
    "app-first-private": ("provider/inner/inner.c",
        "    return OSSL_PROVIDER_get0_provider_ctx(EVP_MAC_get0_provider(m));",
        "    return pctx->inner_provctx;"),
    # ... a first context's size kept across a set or a keying init
    "first-size-kept-set": ("provider/layer/tmpl.c",
        "        /* whatever it sets, a keyless init may not undo it */\n        w->clean = 0;\n        w->size = 0;",
        "        /* whatever it sets, a keyless init may not undo it */\n        w->clean = 0;"),
    "first-size-kept-init": ("provider/layer/tmpl.c",
        "        return ok;\n    w->size = 0;\n    if (ok != 1 || key == NULL",
        "        return ok;\n    if (ok != 1 || key == NULL"),
    # the digest table: an entry named by all of its names, so none maps
    # (every HMAC passes through), or sized by its block
    "digest-table-all-names": ("provider/inner/inner.c",
        "        colon = strchr(a->algorithm_names, ':');",
        "        colon = NULL;"),
    "digest-table-size-is-block": ("provider/inner/inner.c",
        "        d->size = digest_size(g, OSSL_DIGEST_PARAM_SIZE);",
        "        d->size = digest_size(g, OSSL_DIGEST_PARAM_BLOCK_SIZE);"),
    # HMAC: the digest carried from the thread's memo is taken whatever
    # name is given (HMAC-SHA512 after HMAC-SHA256 computes SHA-256)
    "hmac-hint-any-name": ("provider/families/hmac.c",
        " && strcmp(name, w->hint) == 0)\n        return w->hint_dg;",
        ")\n        return w->hint_dg;"),
    # the straight-line compare of 32- and 16-byte keys skips their last
    # word (a key differing there hits the other key's entry)
    "keys-equal-32-short": ("provider/cache/store.c",
        "            | word_diff(a + 16, b + 16) | word_diff(a + 24, b + 24);",
        "            | word_diff(a + 16, b + 16);"),
    "keys-equal-16-short": ("provider/cache/store.c",
        "        d = word_diff(a, b) | word_diff(a + 8, b + 8);",
        "        d = word_diff(a, b);"),
    # the byte-wise tail of a key whose length is not a multiple of 8 is
    # compared without its last byte (a 1-byte key equals any other)
    "keys-equal-tail-short": ("provider/cache/store.c",
        "    for (; n > 0; a++, b++, n--) {\n        d |= (uint64_t)(*a ^ *b);",
        "    for (; n > 1; a++, b++, n--) {\n        d |= (uint64_t)(*a ^ *b);"),
    # the compare starts at the second byte, whatever the length (the
    # index still checks the hash: the most recently used entry does not)
    "keys-equal-skip-first": ("provider/cache/store.c",
        "    uint64_t d = 0;\n\n    /* straight-line for the usual AES and HMAC key sizes */",
        "    uint64_t d = 0;\n\n    if (n > 0) {\n        a++;\n        b++;\n        n--;\n    }\n"
        "    /* straight-line for the usual AES and HMAC key sizes */"),
    # the most recently used entry taken on its algorithm, parameter, key
    # length and record, without comparing the key
    "mru-length-only": ("provider/cache/store.c",
        "            && rec_matches(c, slot, rec, reclen)\n"
        "            && keys_equal(e->key, key, keylen))\n            goto hit;",
        "            && rec_matches(c, slot, rec, reclen))\n            goto hit;"),
    # ... on the hash alone.  The hash covers the key and the record, not
    # the algorithm, HMAC's digest or OCB's direction: the same key under
    # SHA-512 right after SHA-256 gets the SHA-256 context.  (Two keys are
    # confused only on a collision of SipHash under the thread's secret
    # key, which no test can produce: for keys, mru-length-only.)
    "mru-hash-only": [("provider/cache/store.c",
        "    if ((slot = c->lru_head) != KC_NIL) {\n        e = &c->entries[slot];\n"
        "        if (e->alg == alg",
        "    if (0 && (slot = c->lru_head) != KC_NIL) {\n        e = &c->entries[slot];\n"
        "        if (e->alg == alg"),
        ("provider/cache/store.c",
         "    if (rec != NULL)\n        lk->hash ^= rechash * 0x9fb21c651e98df25ULL;\n    m = c->nidx - 1;",
         "    if (rec != NULL)\n        lk->hash ^= rechash * 0x9fb21c651e98df25ULL;\n"
         "    if ((slot = c->lru_head) != KC_NIL) {\n        e = &c->entries[slot];\n"
         "        if (e->hash == lk->hash)\n            goto hit;\n    }\n    m = c->nidx - 1;")],
    # HMAC: a hit hands out the entry's template instead of a copy
    "hmac-share-template": ("provider/families/hmac.c",
        "} else if ((inner = f->dupctx(tmpl)) == NULL) {",
        "} else if ((inner = tmpl) == NULL) {"),
    # HMAC: a missed key's context is a copy of the per-thread base
    # context that is never re-keyed (it computes with the empty key)
    "hmac-copy-no-rekey": ("provider/families/hmac.c",
        "    if ((inner = f->dupctx(base)) != NULL\n        && !f->init(inner, key, keylen, NULL)) {",
        "    if ((inner = f->dupctx(base)) != NULL\n        && 0) {"),
    # HMAC: digest-noinit / digest-oneshot / tls-data-size go to the cached
    # context instead of a private one
    "hmac-flags-cached": ("provider/families/hmac.c",
        "if (strcmp(k, OSSL_MAC_PARAM_TLS_DATA_SIZE) == 0)\n            return P_UNRESETTABLE;",
        "if (strcmp(k, OSSL_MAC_PARAM_TLS_DATA_SIZE) == 0)\n            return P_OTHER;"),
    # a lease names another thread's entry with the same slot and
    # generation (under another key): a context is parked there
    "park-any-thread": ("provider/cache/store.c",
        "    if (c == NULL || lease->cache_id != c->id || lease->idx >= c->hw)\n        return NULL;",
        "    if (c == NULL || lease->idx >= c->hw)\n        return NULL;"),
    # every missed key is cached at once, whatever admit_after says
    # (per-connection TLS secrets end up in the cache)
    "admit-at-once": ("provider/cache/store.c",
        "    if (pctx->admit_after > 1 && ++s->seen < pctx->admit_after)",
        "    if (0 && pctx->admit_after > 1 && ++s->seen < pctx->admit_after)"),
    # a thread's record does not count the slot it takes: every key, new
    # or not, starts over in the first slot, and none is ever admitted
    "lite-seen-uncounted": ("provider/cache/store.c",
        "        empty = &l->seen[n];\n        l->nseen = n + 1;",
        "        empty = &l->seen[n];\n        l->nseen = n;"),
    # the admission filter takes any fingerprint's slot for another's
    # (keys in rotation starve: test_admission)
    "seen-direct-mapped": ("provider/cache/store.c",
        "    s[1] = &c->seen[b2 * KC_SEEN_WAYS];\n",
        "    s[1] = &c->seen[b2 * KC_SEEN_WAYS];\n    s[0]->fp = fp;\n    s[0]->seen = 0;\n    return s[0];\n"),

    # the default's KDFs and HMAC-DRBG are not served as pass-through, so
    # their inner HMAC (keyed with derived secrets) reaches the cache
    "kdf-not-passthrough": [("provider/core/keycache_prov.c",
        "        return pctx->mac_algs[0].algorithm_names != NULL\n"
        "               && kc_passthrough_ready(pctx) ? pctx->kdf_algs : NULL;",
        "        return NULL;"),
        ("provider/core/keycache_prov.c",
         "        return kc_passthrough_ready(pctx) ? pctx->rand_algs : NULL;",
         "        return NULL;")],
    # Cipher families with volatile calls (GCM): an expected tag or IV
    # given before the key is not replayed onto the copy
    "ctmpl-volatile-dropped": ("provider/layer/ctmpl.c",
        "           && replay(w, f, inner, w->t.shape_len, w->t.len);",
        "           && 1;"),
    # ... is replayed in the keying init's direction, not the one it was
    # made in (a tag set while decrypting meets an encrypt-keyed copy)
    "ctmpl-volatile-direction": ("provider/layer/ctmpl.c",
        "    return inner_init(f, inner, w->vdir, NULL, 0, NULL, 0, NULL)\n",
        "    return inner_init(f, inner, 1, NULL, 0, NULL, 0, NULL)\n"),
    # ... is recorded whatever the default says of it
    "ctmpl-volatile-unchecked": ("provider/layer/ctmpl.c",
        "    } else if ((learn_volatile(w, c) & CV_VALID) == 0) {",
        "    } else if (0) {"),
    # the in-place match against the thread's last shape ignores the data
    # (AES-128-CBC continues a shape learned with AES-256-CBC)
    "trec-match-no-data": ("provider/layer/layer.h",
        "            && memcmp(data, q->data, q->data_size) != 0)\n        || (q->data_type == OSSL_PARAM_UTF8_STRING",
        "            && 0)\n        || (q->data_type == OSSL_PARAM_UTF8_STRING"),
    # ... compares a string parameter without its last byte (a GMAC cipher
    # "AES-128-GCX" right after "AES-128-GCM" continues the latter's shape)
    "trec-match-string-short": ("provider/layer/layer.h",
        "            && memcmp(data, q->data, q->data_size) != 0)\n        || (q->data_type == OSSL_PARAM_UTF8_STRING",
        "            && memcmp(data, q->data, q->data_size\n"
        "                      - (q->data_type == OSSL_PARAM_UTF8_STRING)) != 0)\n"
        "        || (q->data_type == OSSL_PARAM_UTF8_STRING"),
    # ... takes a value that is a prefix of the recorded one (KMAC custom
    # "ab" right after "abc", CMAC cipher "AES-128-CB" after "AES-128-CBC")
    "trec-match-prefix": ("provider/layer/layer.h",
        "    if (it.tag != item || it.size != q->data_size\n",
        "    if (it.tag != item\n"
        "        || (it.size != q->data_size\n"
        "            && (item != KC_T_PARAM || it.size < q->data_size))\n"),
    # HMAC: a digest name that is a prefix of the context's last one, or of
    # one the thread resolved, taken as that digest ("SHA2-25")
    "hmac-hint-prefix": ("provider/families/hmac.c",
        " && strcmp(name, w->hint) == 0)\n        return w->hint_dg;",
        " && strncmp(name, w->hint, strlen(name)) == 0)\n        return w->hint_dg;"),
    "memo-name-prefix": ("provider/cache/store.c",
        " && strcmp(m->name, name) == 0\n            && (m->props[0]",
        " && strncmp(m->name, name, strlen(name)) == 0\n            && (m->props[0]"),
    # the one-pass keying init (same_init_as_last) takes a volatile
    # signature the thread learned invalid
    "tmpl-fast-sig-invalid": ("provider/layer/tmpl.c",
        "                || palen != slen || (pvalue & KC_REC_VALID) == 0\n",
        "                || palen != slen\n"),
    # ... takes a call that gives only part of the last shape
    "tmpl-fast-part-shape": ("provider/layer/tmpl.c",
        "    if (s->ns == 0 || so != slen || po != plen)",
        "    if (s->ns == 0 || po != plen)"),
    # (Not mutants, for the families there are: a call giving part of the
    # last volatile signature - GMAC has one volatile name, so a part is
    # none; a signature learned with another shape - a GMAC IV is valid or
    # not whatever the AES key size; an empty shape taken as cacheable for
    # CMAC and GMAC - the template for it fails to key, so the call passes
    # through as before, only dearer.)
    # the volatile parameters are set from the caller's array even where it
    # goes on with shape parameters (which then hit the keyed copy again)
    "tmpl-volatile-suffix-any": ("provider/layer/tmpl.c",
        "    if (i == s->nv && s->vol[0][i].key == NULL)",
        "    if (i == s->nv)"),
    # a fresh wrapper's empty shape taken as not valid (KMAC without
    # parameters never hits)
    "tmpl-empty-invalid": ("provider/layer/tmpl.c",
        "        __atomic_store_n(&f->empty_value, shape_value(probe_w),",
        "        __atomic_store_n(&f->empty_value, 0 * shape_value(probe_w),"),
    # cipher layer: a copy of an unkeyed context sends its calls to the
    # original's wrapper (its record and state, not its own)
    "ctmpl-dup-calls-original": ("provider/layer/ctmpl.c",
        "    dst->arg = dst;\n", ""),
    # cipher layer: once a default context serves a wrapper, its calls
    # still go to the before-key functions (params recorded, not set;
    # a second key replaces the context)
    "ctmpl-calls-stay-unkeyed": ("provider/layer/ctmpl.c",
        "    w->to = ifn;\n    w->arg = inner;\n", ""),
    # a keyless init's direction (kept, not recorded) is not replayed onto
    # the plain or transient contexts that stand for the unkeyed state
    "ctmpl-direction-dropped": ("provider/layer/ctmpl.c",
        "    else if (ok && w->dir >= 0)\n",
        "    else if (0)\n"),
    # (Not a mutant: answering the IV length before the key from the shape
    # after a volatile IV init - through EVP such an init always passes the
    # context's own IV length, so it never changes it; the check stays for
    # callers of the dispatch table itself.)
    # Template families (tmpl.c): GMAC's IV set before the key is not
    # replayed onto the copy of the template
    "tmpl-drop-volatile": ("provider/layer/tmpl.c",
        "    return take_template(w, ops, tmpl, &lk, w->t.len > w->t.shape_len);",
        "    return take_template(w, ops, tmpl, &lk, 0);"),
    # the shape (cipher, customisation string, size; OCB's tag length) is
    # not part of the cache key: a KMAC with another custom string hits the
    # same entry (the core's, for both sides: ctmpl-shape-not-key merged)
    "tmpl-shape-not-key": [("provider/layer/layer.h",
        "    tmpl = kc_cache_find_rec(c, alg, rec, t->shape_len, t->hash, key, keylen,",
        "    tmpl = kc_cache_find_rec(c, alg, rec, 0, 0, key, keylen,"),
        ("provider/layer/layer.h",
         "    if (!kc_cache_add_rec(c, alg, rec, t->shape_len, key, keylen, tmpl, lk)) {",
         "    if (!kc_cache_add_rec(c, alg, rec, 0, key, keylen, tmpl, lk)) {")],
    # entries with records match whatever their record
    "cache-record-ignored": ("provider/cache/store.c",
        "    return rec == NULL\n           || (c->entries[slot].reclen",
        "    return 1\n           || (c->entries[slot].reclen"),
    # a hit hands out the template itself, not a copy
    "tmpl-share-template": [("provider/layer/tmpl.c",
        "    if ((inner = lk->spare) == NULL && (inner = ops->dupctx(tmpl)) == NULL)",
        "    if ((inner = lk->spare) == NULL && (inner = tmpl) == NULL)"),
        ("provider/layer/tmpl.c", "    if (!kc_cache_park_in(c, &w->lease, w->t.inner, restart, w))\n        w->ops->freectx(w->t.inner);",
         "    if (0 && !kc_cache_park_in(c, &w->lease, w->t.inner, restart, w))\n        w->ops->freectx(w->t.inner);"),
        ("provider/layer/tmpl.c", "    if (w->t.inner != NULL)\n        w->ops->freectx(w->t.inner);\n    /* (after",
         "    if (0 && w->t.inner != NULL)\n        w->ops->freectx(w->t.inner);\n    /* (after")],
    # a record is taken as valid without asking the default (bad cipher
    # names, IV lengths, sizes answered 1)
    "tmpl-shape-unchecked": ("provider/layer/tmpl.c",
        "    if (needs_app(w, NULL, 0) || !probe(w, 0))\n        return 0;",
        "    if (needs_app(w, NULL, 0))\n        return 0;"),
    "tmpl-volatile-unchecked": ("provider/layer/tmpl.c",
        "    return probe(W(t), 1) ? KC_REC_VALID : 0;",
        "    return KC_REC_VALID;"),
    # a call that fails to record leaves its half-recorded parameters
    "tmpl-no-rollback": ("provider/layer/tmpl.c",
        "        memcpy(w->t.rec + w->t.shape_len / 8, old, oldlen);\n    kc_tcore_back(&w->t, &sv);\n    return 0;",
        "        memcpy(w->t.rec + w->t.shape_len / 8, old, oldlen);\n    return 0;"),
    # a context never keyed duplicates although the default cannot
    "tmpl-dup-unkeyed": ("provider/layer/tmpl.c",
        "    if (src->t.inner == NULL && !unkeyed_dup_ok(src))", "    if (0)"),
    # a name twice in one call is recorded (the last "key" wins)
    "tmpl-repeated-names": ("provider/layer/tmpl.c",
        "            if (q->key[0] == p->key[0] && strcmp(q->key, p->key) == 0)\n                return 0;",
        "            if (0)\n                return 0;"),
    # AES-SIV's own context (provider/families/siv.c), each step of S2V, CMAC, CTR
    # and the default's state broken in turn; a broken computation is also
    # let past the start's one-message check (which turns SIV's own
    # context off when it disagrees with the default's), so that the
    # tests themselves must see it
    "siv-short-no-dbl": [("provider/families/siv.c",
        "        dbl(s->d);\n        xor_block(t, s->d);", "        xor_block(t, s->d);"), SIV_CHECK_OFF],
    "siv-aad-no-dbl": [("provider/families/siv.c",
        "    dbl(s->d);\n    if (!cmac(s, aad, len, NULL, 0, t))",
        "    if (!cmac(s, aad, len, NULL, 0, t))"), SIV_CHECK_OFF],
    "siv-q-bits-kept": [("provider/families/siv.c", "    q[8] &= 0x7f;\n", ""), SIV_CHECK_OFF],
    "siv-subkeys-swapped": [("provider/families/siv.c",
        "        xor_block(m->blk, s->k1);", "        xor_block(m->blk, s->k2);"), SIV_CHECK_OFF],
    "siv-last-block-early": [("provider/families/siv.c",
        "            take = (len - 1) / SIV_BLOCK * SIV_BLOCK;",
        "            take = len / SIV_BLOCK * SIV_BLOCK;"), SIV_CHECK_OFF],
    "siv-messages-unlimited": ("provider/families/siv.c",
        "    if (s->crypto_ok == 0)\n        return 0;\n    s->crypto_ok--;\n    if (!s2v",
        "    if (!s2v"),
    "siv-speed-ignored": ("provider/families/siv.c",
        "        s->crypto_ok = sp == 1 ? -1 : 1;", "        s->crypto_ok = 1;"),
    "siv-tag-taken-encrypting": ("provider/families/siv.c",
        "        if (s->enc)\n            return 1;\n", ""),
    "siv-final-always": ("provider/families/siv.c",
        "    if (s->final_ret != 0)\n        return 0;\n", ""),
    "siv-bad-tag-kept": ("provider/families/siv.c",
        "        OPENSSL_cleanse(out, len);\n        return 0;", "        return 0;"),
    "siv-tag-given-decrypting": ("provider/families/siv.c",
        "        if (!s->enc || p->data_type != OSSL_PARAM_OCTET_STRING",
        "        if (p->data_type != OSSL_PARAM_OCTET_STRING"),
    "siv-keylen-unchecked": ("provider/families/siv.c",
        "(!kl_ok || kl != s->keylen)", "(!kl_ok)"),
    "siv-set-keeps-final": ("provider/families/siv.c",
        "    if (kc_quirk(s->f->quirks, KC_Q_SET_REOPENS))\n        s->final_ret = -1;\n", ""),
    "siv-refusal-own-error": ("provider/families/siv.c",
        "    if (twice && kc_quirk(s->f->quirks, KC_Q_REPEATS_FAIL))\n        return default_set(s, params);\n    if (tag != NULL) {\n        if (s->enc)\n            return 1;\n        if (tag->data_type != OSSL_PARAM_OCTET_STRING\n            || tag->data_size != SIV_BLOCK || tag->data == NULL)\n            return default_set(s, params);",
        "    if (twice && kc_quirk(s->f->quirks, KC_Q_REPEATS_FAIL))\n        return default_set(s, params);\n    if (tag != NULL) {\n        if (s->enc)\n            return 1;\n        if (tag->data_type != OSSL_PARAM_OCTET_STRING\n            || tag->data_size != SIV_BLOCK || tag->data == NULL)\n            return 0;"),
    # ... and what differs between releases, each learned quirk ignored
    # (these survive where the running default lacks the quirk: 3.0.22
    # has the reopening by set_ctx_params only; run them through
    # tools/compat.sh trixie and sid-ossl4)
    "siv-empty-never-message": ("provider/families/siv.c",
        "        if (inl == 0 && !kc_quirk(s->f->quirks, KC_Q_EMPTY_IS_MESSAGE)) {",
        "        if (inl == 0) {"),
    "siv-refusal-keeps-final": ("provider/families/siv.c",
        "    if (kc_quirk(s->f->quirks, KC_Q_TRY_REOPENS))\n        s->final_ret = -1;\n    /* one message",
        "    /* one message"),
    "siv-forged-keeps-final": ("provider/families/siv.c",
        "    if (kc_quirk(s->f->quirks, KC_Q_TRY_REOPENS))\n        s->final_ret = -1;\n    if (s->crypto_ok == 0)",
        "    if (s->crypto_ok == 0)"),
    "siv-null-keeps-final": ("provider/families/siv.c",
        "        if (kc_quirk(s->f->quirks, params == NULL ? KC_Q_NULL_REOPENS\n                                                  : KC_Q_EMPTY_REOPENS))",
        "        if (kc_quirk(s->f->quirks, params == NULL ? 0\n                                                  : KC_Q_EMPTY_REOPENS))"),
    "siv-repeats-taken": ("provider/families/siv.c",
        "    if (twice && kc_quirk(s->f->quirks, KC_Q_REPEATS_FAIL))\n        return default_set(s, params);\n",
        ""),
    # KMAC's set_ctx_params key taken as keying (the default only stores
    # it: no update before an init)
    "kmac-set-key-keys": ("provider/families/kmac.c",
        "        .shape_names = kmac_shape,",
        "        .shape_names = kmac_shape, .set_key_keys = 1,"),
    # CMAC: a spare is kept without the keyless init that restarts it
    "cmac-spare-no-reinit": ("provider/layer/tmpl.c",
        "           && w->ops->init(inner, NULL, 0, NULL);", ";"),
    # CMAC: a context given parameters after its key is still parked (a
    # cipher set after the key reaches the next user of the spare)
    "cmac-park-after-set": ("provider/layer/tmpl.c",
        "        /* whatever it sets, a keyless init may not undo it */\n        w->clean = 0;\n        w->size = 0;",
        "        /* whatever it sets, a keyless init may not undo it */\n        w->size = 0;"),
    # CMAC: a context re-keyed in place is still parked under the old key
    "cmac-park-rekeyed": ("provider/layer/tmpl.c",
        "        if (key != NULL || params != NULL) {\n            w->clean = 0;\n            w->size = 0;",
        "        if (key != NULL || params != NULL) {\n            w->size = 0;"),
    # the size answered for a context re-keyed with another cipher
    "cmac-size-kept": [("provider/layer/tmpl.c",
        "        /* whatever it sets, a keyless init may not undo it */\n        w->clean = 0;\n        w->size = 0;",
        "        /* whatever it sets, a keyless init may not undo it */\n        w->clean = 0;"),
        ("provider/layer/tmpl.c",
         "        if (key != NULL || params != NULL) {\n            w->clean = 0;\n            w->size = 0;",
         "        if (key != NULL || params != NULL) {\n            w->clean = 0;")],
    # GMAC: an IV given with the key in init is not set on the copy
    "gmac-drop-direct-iv": ("provider/layer/tmpl.c",
        "        return !direct || apply_volatile(w, &s);", "        return 1;"),
    # fork: the child keeps everything it inherited (every thread's keys)
    "fork-keeps-caches": ("provider/cache/store.c",
        "    kc_lite.admitted = 0;\n    for (pctx = live_instances;",
        "    kc_lite.admitted = 0;\n    return;\n    for (pctx = live_instances;"),
    # fork: the forking thread's own cache is not emptied
    "fork-keeps-own": ("provider/cache/store.c",
        "                pctx->fork_wiped += cache_renew(c, 1);",
        "                (void)0;"),
    # fork: the other (vanished) threads' caches are kept
    "fork-keeps-others": ("provider/cache/store.c",
        "                pctx->fork_wiped += cache_retire(pctx, c, 1);",
        "                (void)0;"),
    # fork: stopped threads' caches, not yet freed, are kept
    "fork-keeps-dying": ("provider/cache/store.c",
        "        pctx->fork_wiped += caches_reap(pctx, 1);",
        "        (void)0;"),
    # fork: a cache's key pages are not marked for the kernel to wipe (the
    # child wipes them itself: test_fork's wiped-pages test sees it)
    "fork-pages-unadvised": [("provider/cache/store.c",
        "    c->wof = madvise(c->wiped, c->nwiped, MADV_WIPEONFORK) == 0;\n    err = errno;\n    if (c->wof &&",
        "    c->wof = 0;\n    err = errno;\n    if (c->wof &&"),
        ("provider/cache/store.c",
         "        c->wof = madvise(c->wiped, c->nwiped, MADV_WIPEONFORK) == 0;\n        err = errno;",
         "        c->wof = 0;\n        err = errno;")],
    # ... or taken for marked when they are not: the child keeps the keys
    "fork-pages-assumed-wiped": [("provider/cache/store.c",
        "    c->wof = madvise(c->wiped, c->nwiped, MADV_WIPEONFORK) == 0;\n    err = errno;\n    if (c->wof &&",
        "    c->wof = 1;\n    err = errno;\n    if (c->wof &&"),
        ("provider/cache/store.c",
         "        c->wof = madvise(c->wiped, c->nwiped, MADV_WIPEONFORK) == 0;\n        err = errno;",
         "        c->wof = 1;\n        err = errno;")],
    # a freed cache's pages go back to malloc still wiped on fork (someone
    # else's block there would be zero in every child)
    "cache-free-pages-still-wiped": ("provider/cache/store.c",
        "        if (madvise(c->wiped, c->nwiped, MADV_KEEPONFORK) != 0) {\n            /* never",
        "        if (0) {\n            /* never"),
    # a refused advice (seccomp's EPERM) taken for a partly applied one:
    # every cache's block is kept from malloc (LSan, in test_fork's
    # fresh-nowipe child under ASan)
    "cache-mark-refusal-kept": ("provider/cache/store.c",
        "                    && (err == ENOMEM || err == EAGAIN));",
        "                    && 1);"),
    # a policy that allows the advice but not its undoing (OpenSSH's
    # sandbox) not noticed: every cache's block is kept from malloc
    "cache-mark-undo-unprobed": ("provider/cache/store.c",
        "    if (c->wof && __atomic_load_n(&mark_undo, __ATOMIC_RELAXED) == 0) {",
        "    if (0) {"),
    # fork: the child frees no template (the default's keyed contexts stay)
    "fork-held-tmpl-kept": ("provider/cache/store.c",
        "        if (h->tmpl != NULL)\n            alg->freectx(h->tmpl);\n        live++;",
        "        live++;"),
    # a fork child counts the template families' first contexts on from
    # its parent's
    "fork-firsts-kept": ("provider/cache/store.c",
        "    memset(&kc_cache_firsts, 0, sizeof(kc_cache_firsts));\n",
        ""),
    # ... nor a spare context given back
    "fork-held-spares-kept": ("provider/cache/store.c",
        "                alg->freectx(h->spare[n]);",
        "                (void)0;"),
    # fork, on a kernel that wipes nothing: the child leaves the keys
    "fork-fallback-unwiped": ("provider/cache/store.c",
        "    if (!c->wof)\n        explicit_bzero(c->wiped, c->nwiped);\n    c->nspares = 0;",
        "    c->nspares = 0;"),
    # a child of _Fork() (no handler) takes the wiped slots for live ones:
    # evicting one looks for it in an empty index forever
    "fork-raw-child-unrepaired": ("provider/cache/store.c",
        "    if (__builtin_expect(*c->alive == 0, 0))\n        cache_renew(c, 1);",
        "    if (0)\n        cache_renew(c, 1);"),
    # ... or repaired at its first admission, as first written: that entry
    # is added under the old hash key (never found again), and a cache
    # empty at _Fork() is repaired one admission late
    "fork-raw-child-repaired-late": [("provider/cache/store.c",
        "    if (__builtin_expect(*c->alive == 0, 0))\n        cache_renew(c, 1);",
        "    (void)0;"),
        ("provider/cache/store.c",
         "    if (reclen > 0 && (copy = OPENSSL_memdup(rec, reclen)) == NULL)",
         "    if (c->hw != 0 && *c->alive == 0)\n        cache_renew(c, 1);\n"
         "    if (reclen > 0 && (copy = OPENSSL_memdup(rec, reclen)) == NULL)")],
    # fork: the other threads' caches are freed but left linked, so the
    # child's teardown frees them again
    "fork-others-linked": ("provider/cache/store.c",
        "    cache_unlink(pctx, c);\n    return cache_free(pctx, c, forked);",
        "    if (!forked)\n        cache_unlink(pctx, c);\n"
        "    return cache_free(pctx, c, forked);"),
    # fork: registry_lock left alone though other threads live, one of
    # which may hold it at fork() (the child hangs: test_fork's storm)
    "fork-unlocked-threaded": ("provider/cache/store.c",
        "    if (one_thread()) {\n        fork_locked = 0;",
        "    if (1) {\n        fork_locked = 0;"),
    # fork handlers registered late: not before a thread's record takes a
    # fingerprint (the child would count the parent's sightings), nor
    # before registry_lock is taken while other threads run (a child of a
    # parent without a cache hangs: test_fork's fresh storm), nor with a
    # cache
    "fork-arm-no-record": ("provider/cache/store.c",
        "        return NULL;\n    fork_arm();\n    lk->hash = kc_hash(",
        "        return NULL;\n    lk->hash = kc_hash("),
    "fork-arm-not-threaded": ("provider/cache/store.c",
        "    if (!one_thread())\n        fork_arm();\n    pthread_mutex_lock(&registry_lock);",
        "    pthread_mutex_lock(&registry_lock);"),
    "fork-arm-no-cache": ("provider/cache/store.c",
        "    fork_arm();\n    pthread_once(&reap_once, reap_key_make);",
        "    pthread_once(&reap_once, reap_key_make);"),
    # a first miss's context given the name the thread resolved last,
    # whatever digest this context has
    "hmac-app-spelling-unchecked": ("provider/families/hmac.c",
        "w->dg == w->hint_dg ? w->hint\n",
        "1 ? w->hint\n"),
    # a digest that failed or raised hashing a long key once is asked
    # again, without an error mark
    "digest-key-retried": ("provider/inner/inner.c",
        "    if (tried < 0 || !d->fns_ok || d->size == 0 || d->size > outsize)",
        "    if (!d->fns_ok || d->size == 0 || d->size > outsize)"),
    # a context keyed by the digest's name in the application's context,
    # where the default properties changed since the digest was set
    "hmac-app-dg-any-gen": ("provider/families/hmac.c",
        "    return w->dg_gen == kc_props_gen(w->pctx) || dg_again(w);",
        "    return 1;"),
    # ... or asked again there and taken as current whatever it finds
    "hmac-dg-again-any": ("provider/families/hmac.c",
        "    if (d != w->dg)\n        return 0;\n    w->dg_gen = gen;",
        "    w->dg_gen = gen;"),
    # an uncached cipher (3DES) set before a change of the default
    # properties is fetched again at the key, under the new ones
    "tmpl-private-resolved-again": ("provider/layer/tmpl.c",
        "                   && (w->t.value & (KC_REC_CACHEABLE | KC_REC_PRIVATE)))) {",
        "                   && (w->t.value & KC_REC_CACHEABLE))) {"),
    # the same for an HMAC context passed through before its key
    "hmac-pt-app-any-gen": ("provider/families/hmac.c",
        "    if (w->passthrough || w->inner != NULL || !app_finds_dg(w)\n",
        "    if (w->passthrough || w->inner != NULL\n"),
    # a digest name's answer served after the default properties changed
    "memo-gen-ignored": ("provider/cache/store.c",
        "        if (m->gen == gen && m->owner == owner && strcmp(m->name, name) == 0\n",
        "        if (m->owner == owner && strcmp(m->name, name) == 0\n"),
    # a thread's question about a fetch is asked of its own cache again,
    # which is made for it (thread-per-task-cmac 1.12x -> 1.53x)
    "memo-ask-per-thread": ("provider/layer/tmpl.c",
        "    if ((m = kc_cache_memo_get(c, owner, name, q)) != NULL) {",
        "    if (0 && (m = kc_cache_memo_get(c, owner, name, q)) != NULL) {"),
    # ... and its answer kept by the thread, not the instance
    "memo-put-per-thread": ("provider/layer/tmpl.c",
        "        if (!kc_cache_memo_put(c, owner, name, q,",
        "        if (1 || !kc_cache_memo_put(c, owner, name, q,"),
    # the instance's memo answers another owner's question (a digest)
    "memo-owner-ignored": ("provider/cache/store.c",
        "        if (m->gen == gen && m->owner == owner && strcmp(m->name, name) == 0",
        "        if (m->gen == gen && strcmp(m->name, name) == 0"),
    # idle entries kept past idle_ttl (test_entries: HMAC; test_keyscan:
    # every family)
    "idle-sweep-off": ("provider/cache/store.c",
        "            && (uint64_t)(now - c->entries[i].last_time) >= c->idle_ttl)",
        "            && 0)"),
    # the default's KMAC key copy left on the stack (test_fork's child scan)
    "kmac-init-unwiped": ("provider/families/kmac.c",
        "    if (key != NULL || params != NULL)\n        kc_stack_wipe();",
        "    if (0)\n        kc_stack_wipe();"),
    "kmac-guard-unbound": ("provider/core/bind.c",
        "    if (f->d->guard_default != NULL)\n        f->d->guard_default(&f->mac);",
        ""),
    "stack-wipe-short": ("provider/common/common.h",
        "#define KC_STACK_WIPE 1024", "#define KC_STACK_WIPE 64"),
    # TLS mode on an inner holding a long key's digest: the record MAC
    # computed where the default's refuses the key
    "hmac-tls-long-unrefused": ("provider/families/hmac.c",
        "    if (got && size > 0)\n        cp[p - params]",
        "    if (0)\n        cp[p - params]"),
    "hmac-long-key-unmarked": ("provider/families/hmac.c",
        "    w->long_key = r >= 0 && w->inner != NULL;",
        "    w->long_key = 0;"),
    # ... and a short key then given in TLS mode still refused
    "hmac-tls-not-again": ("provider/families/hmac.c",
        "    w->long_key = 0;\n    if (w->tls_size == 0)\n        return;",
        "    w->long_key = 0;\n    if (1)\n        return;"),
    "hmac-tls-key-param-ignored": ("provider/families/hmac.c",
        "            w->tls_size = 0;\n        key_taken(w);\n        return ok;",
        "            w->tls_size = 0;\n        return ok;"),
    # ... or, with a record size in the same list, the earlier size given
    "hmac-tls-list-size-overridden": ("provider/families/hmac.c",
        "            != NULL)\n            w->tls_size = 0;",
        "            != NULL)\n            ;"),
    # ... or a key given by a keyed init
    "hmac-tls-init-key-ignored": ("provider/families/hmac.c",
        "    if (key != NULL)\n        key_taken(w);\n    return ok;",
        "    if (0)\n        key_taken(w);\n    return ok;"),
    # ... or a short key given with another digest in one set ignored
    "hmac-tls-digest-key-ignored": ("provider/families/hmac.c",
        "    if (key != NULL)\n        key_taken(w);\n    return 1;",
        "    if (0)\n        key_taken(w);\n    return 1;"),
    # ... or what a failed set would have done taken as done: the key
    # (the record MAC then computed), the record size (TLS mode at the key)
    "hmac-tls-failed-key-trusted": ("provider/families/hmac.c",
        "        if ((ok = pt_forward(w, params)) != 1)\n            return ok;",
        "        ok = pt_forward(w, params);"),
    "hmac-tls-failed-size-kept": ("provider/families/hmac.c",
        "    if (ok == 1 && got)\n        w->tls_size = size;",
        "    if (got)\n        w->tls_size = size;"),
    # ... or the long key's digest, given as the key, taken as still long
    "hmac-tls-digest-as-key-long": ("provider/families/hmac.c",
        "        /* (a long key's digest given as the key: the inner's key now) */\n        key_taken(w);\n",
        ""),
    # a context's last digest name served after the default properties
    # changed
    "hmac-hint-gen-ignored": ("provider/families/hmac.c",
        "        && w->hint_gen == kc_props_gen(pctx) && strcmp(name, w->hint) == 0)",
        "        && strcmp(name, w->hint) == 0)"),
    # HMAC remembers a digest without hearing of a change of the default
    # properties (the only family in the process)
    "hmac-memo-unfollowed": ("provider/families/hmac.c",
        "    keep = c != NULL && kc_cache_keep_gen(c, &gen);",
        "    keep = c != NULL && (gen = kc_cache_props_gen(c), 1);"),
    # a thread's record handed out without its instance checked: a new
    # thread's (no instance's yet) or another instance's
    "record-any-instance": ("provider/cache/store.c",
        "    if (c == NULL && kc_lite.inst == pctx->inst && !pctx->timed)\n        return lite_handle();",
        "    if (c == NULL && !pctx->timed)\n        return lite_handle();"),
    # a miss-heavy thread never goes back to the cache
    "cold-forever": ("provider/cache/store.c",
        "    if (c == NULL || !c->bypass || ++c->cold_skips % KC_COLD_ONE_IN == 0)",
        "    if (c == NULL)"),
    # CMAC (and GMAC) cache any cipher, not only the family's own
    "cmac-any-cipher": ("provider/layer/tmpl.c",
        "           && cipher_is_one_of(pctx, cipher, props, d->ciphers);",
        "           ;"),
    # a fresh context's first call, the thread's last uncacheable shape
    # (CMAC with 3DES), passed through: without the call itself, for a
    # shape that is cached
    "tmpl-uncached-pass-drops-call": ("provider/layer/tmpl.c",
        "    kc_count_passthrough(w->pctx, &w->f->alg);\n    return forward(w, 0, NULL, 0, params);",
        "    kc_count_passthrough(w->pctx, &w->f->alg);\n    return 1;"),
    "tmpl-uncached-pass-cacheable": ("provider/layer/tmpl.c",
        "        || (value & (KC_REC_VALID | KC_REC_CACHEABLE | KC_REC_PRIVATE))\n           != (KC_REC_VALID | KC_REC_PRIVATE))",
        "        || (value & (KC_REC_VALID | KC_REC_PRIVATE))\n           != (KC_REC_VALID | KC_REC_PRIVATE))"),
    # (Taking a shape that names no cipher too, or a shape's cipher as the
    # private default's though none is named, is not a fault any more: the
    # cipher named later is still checked by cipher_call(), which moves a
    # private context to the application's default's where the cipher
    # resolves elsewhere ("properties first" in pat_cipher_where).  The
    # KC_REC_PRIVATE check only spares that move.)
    # a copy of an unkeyed context without its record (a keyed one's is
    # never read again, and not copied)
    "tmpl-dup-drops-record": ("provider/layer/tmpl.c",
        "    if (src->t.inner == NULL) {\n        memcpy(dst->t.rec, src->t.rec, src->t.len);",
        "    if (0) {\n        memcpy(dst->t.rec, src->t.rec, src->t.len);"),
    "ctmpl-copy-drops-record": ("provider/layer/ctmpl.c",
        "    if (src->t.inner == NULL) {\n        memcpy(dst->t.rec, src->t.rec, src->t.len);",
        "    if (0) {\n        memcpy(dst->t.rec, src->t.rec, src->t.len);"),
    # the usual copy of a keyed context (dup_keyed()) shares the
    # original's inner context instead of copying it
    "tmpl-dup-keyed-shares-inner": ("provider/layer/tmpl.c",
        "    if ((inner = src->ops->dupctx(src->t.inner)) == NULL) {",
        "    if ((inner = src->t.inner) == NULL) {"),
    "ctmpl-dup-keyed-shares-inner": ("provider/layer/ctmpl.c",
        "    if ((inner = src->ifn->dupctx(src->t.inner)) == NULL) {",
        "    if ((inner = src->t.inner) == NULL) {"),
    # a pass-through's record not replayed when it has one
    "tmpl-materialize-no-replay": ("provider/layer/tmpl.c",
        "    if (w->t.len > 0 && !replay(w, inner, 0, w->t.len)) {",
        "    if (w->t.cold && !replay(w, inner, 0, w->t.len)) {"),
    # a pass-through's functions that take a provider context called with
    # keycache's (no thunk): the inner default gets the wrong one
    "pt-no-thunks": ("provider/core/passthrough.c",
        "        if (k >= 0) {\n            pt->fn[k]",
        "        if (k >= 0 && 0) {\n            pt->fn[k]"),
    # an offer's tables freed one by one: they are one block
    "pt-frees-tables": ("provider/core/passthrough.c",
        "            OPENSSL_free(pctx->pt[i].block);",
        "            OPENSSL_free(pctx->pt[i].table);"),
    # a cipher family without its own contexts (GCM, OCB) never runs its
    # first-use gate, which learns its key length: no key is ever cached
    "cfam-gate-skipped": ("provider/core/bind.c",
        "    f->direct_state = 0;\n    return kc_ctmpl_bind(pctx, f, a);",
        "    f->direct_state = KC_ONCE_DONE;\n    return kc_ctmpl_bind(pctx, f, a);"),
    # the key length the first use asks the default is dropped
    "ctmpl-keylen-unknown": ("provider/layer/ctmpl.c",
        "    __atomic_store_n(&f->keylen, keylen, __ATOMIC_RELAXED);",
        "    __atomic_store_n(&f->keylen, 0, __ATOMIC_RELAXED);"),
    # the hand scan of the config file follows a line continued with '\\'
    # as two lines: keys there never asked about
    "conf-scan-continued": ("provider/core/conf.c",
        "        if (e > line && e[-1] == '\\\\')\n            return 0;\n",
        ""),
    # lines starting with '.' skipped (.include, .pragma and keys ".name"
    # are NCONF's): an included section, or a key ".x", never asked about
    # (conf-scan-include and conf-dot-key-skipped, merged)
    "conf-dot-lines-scanned": ("provider/core/conf.c",
        "        if (*s == '.')\n            return 0;\n",
        "        if (*s == '.')\n            continue;\n"),
    # a key naming a section not followed to its keys ("key.sub")
    "conf-nested-unfollowed": ("provider/core/conf.c",
        "        k->sub = k->value != NULL ? section_of(c, k->value, 0) : -1;",
        "        k->sub = -1;"),
    # the sibling bound lazily: a symbol the host lacks in a node it has
    # kills the program at its first call
    "loader-lazy": ("provider/early/loader.c",
        "    h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);",
        "    h = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);"),
    # a bind failing at the first query leaves its errors on the caller's
    # queue
    "bind-fail-errors-kept": ("provider/core/bind.c",
        "        pctx->bind_ok = bind_default(pctx);\n        ERR_pop_to_mark();",
        "        pctx->bind_ok = bind_default(pctx);\n        ERR_clear_last_mark();"),
    # a failed bind offers what it bound before it failed
    "bind-fail-offers-half": ("provider/core/bind.c",
        "    return __atomic_load_n(&pctx->bind_state, __ATOMIC_ACQUIRE) == KC_ONCE_DONE\n           && pctx->bind_ok;",
        "    return __atomic_load_n(&pctx->bind_state, __ATOMIC_ACQUIRE) == KC_ONCE_DONE;"),
    # no vector register wiped after a keyed init: copies of cached
    # contexts leave key bytes there
    "vector-wipe-off": ("provider/common/common.c",
        "    int kind = __atomic_load_n(&vector_regs, __ATOMIC_RELAXED);\n",
        "    int kind = __atomic_load_n(&vector_regs, __ATOMIC_RELAXED);\n\n    return;\n"),
    # ... nor after a key given by set_ctx_params
    "vector-wipe-set-skipped": ("provider/layer/tmpl.c",
        "    if (params != NULL && names_param(OSSL_MAC_PARAM_KEY, params))\n        kc_vector_wipe();",
        "    if (params != NULL && names_param(OSSL_MAC_PARAM_KEY, params))\n        (void)0;"),
    # ... only the SSE halves of them, on a CPU with AVX
    "vector-wipe-sse-only": ("provider/common/common.c",
        "    if (kind == 1) {\n        __asm__ __volatile__(KC_XOR16(0)",
        "    if (kind >= 1) {\n        __asm__ __volatile__(KC_XOR16(0)"),
    # ... not the AVX-512 registers glibc's memcpy uses there (a CPU with
    # AVX-512 tells)
    "vector-wipe-no-zmm": ("provider/common/common.c",
        "    if (kind == 3)\n        __asm__ __volatile__(KC_EXOR16(\"xmm\")",
        "    if (kind == 5)\n        __asm__ __volatile__(KC_EXOR16(\"xmm\")"),
    # keycache's own description for what it offers, not the default's
    "bind-own-description": ("provider/core/bind.c",
        "    row->algorithm_description = a->algorithm_description;",
        "    row->algorithm_description = \"with a per-thread key cache\";"),
    # bound at start again: every process pays the private default
    "bind-at-start": ("provider/core/keycache_prov.c",
        "    kc_bind_start(pctx);\n",
        "    kc_bind_start(pctx);\n    (void)kc_bind_ready(pctx);\n"),
    # a nested key named like the core's own (tuning.module) not asked
    "conf-nested-core-key": ("provider/core/conf.c",
        "           || (top && kc_name_in_list(core_keys, skip_dot(name)));",
        "           || kc_name_in_list(core_keys, skip_dot(name));"),
    # a plain value's comment left on it: no section named
    "conf-plain-comment-kept": ("provider/core/conf.c",
        "            v[n] = '\\0';\n            val = v;",
        "            val = v;"),
    # a file with a NUL byte scanned up to it (NCONF reads on)
    # prefer = if_unset asks for the config's name, not the property its
    # algorithms carry (a renamed keycache then serves nothing)
    "props-prefer-config-name": ("provider/core/props.c",
        "    snprintf(want, sizeof(want), \"?provider=%s\", KEYCACHE_PROVIDER_NAME);",
        "    snprintf(want, sizeof(want), \"?provider=%s\", pctx->name);"),
    # the exit report asks a library context freed without unloading keycache
    "report-routing-context-gone": ("provider/core/report.c",
        "        || __atomic_load_n(&pctx->app_gone, __ATOMIC_ACQUIRE)\n",
        "        || 0\n"),
    # another machine's sibling handed to dlopen (which calls it missing)
    "loader-machine-unchecked": ("provider/early/loader.c",
        "        || eh.e_machine != __ehdr_start.e_machine\n",
        "        || 0\n"),
    # a config file that is not a plain file (a FIFO) opened again by NCONF
    "conf-fifo-reopened": ("provider/core/conf.c",
        "        && (!plain_file(file) || (conf = NCONF_new(NULL)) == NULL",
        "        && (!1 || (conf = NCONF_new(NULL)) == NULL"),
    "conf-nul-scanned": ("provider/core/conf.c",
        " || memchr(buf, '\\0', got) != NULL) {",
        ") {"),
    # a quoted value compared with section names as written
    "conf-quotes-kept": ("provider/core/conf.c",
        "        if (*in == '\"' || *in == '\\'' || *in == '`') {\n            for (q = *in++; in < end && *in != q; in++) {",
        "        if (0) {\n            for (q = *in++; in < end && *in != q; in++) {"),
    # a variable taken literally, not as the value it expands to
    "conf-var-literal": ("provider/core/conf.c",
        "        } else if (*in == '$') {",
        "        } else if (0) {"),
    # an escape of nothing at the end of a value kept
    # the unknown-key scan keeps the providers section, not keycache's own
    "conf-scan-wrong-section": ("provider/core/conf.c",
        "            ours[c.key[i].sub] = any = 1;",
        "            ours[c.key[i].sect] = any = 1;"),
    # a dotted providers line (x.keycache) not read as the core reads it
    "conf-scan-line-undotted": ("provider/core/conf.c",
        "        const char *k = skip_dot(c.key[i].name);",
        "        const char *k = c.key[i].name;"),
    # an identity does not widen the scan: a decoy key named keycache wins
    "conf-scan-identity-ignored": ("provider/core/conf.c",
        '        if (strcmp(k, "identity") == 0) {',
        '        if (0 && strcmp(k, "identity") == 0) {'),
    "conf-trailing-escape-kept": ("provider/core/conf.c",
        "        } else if (*in == '\\\\') {\n            if (++in == end)\n                break;",
        "        } else if (*in == '\\\\' && in + 1 < end) {\n            if (++in == end)\n                break;"),
    # AES-SIV switched off is not passed through: its inner CMAC reaches
    # the cache
    "siv-not-passthrough": ("provider/core/passthrough.c",
        "    siv_pt = n > 0 && *kc_registry_on(pctx, KC_ROW_CMAC)\n",
        "    siv_pt = 0 && *kc_registry_on(pctx, KC_ROW_CMAC)\n"),
    # 3.5+, no cipher wrapped: AES-SIV passed through anyway, which drags
    # every cipher in for EVP_SKEY at each process's first cipher fetch
    "siv-pt-drags-ciphers": ("provider/core/passthrough.c",
        "             && (kc_quirk_ciphers_pay() || pctx->ncipher_wrapped > 0);",
        "             && (1 || pctx->ncipher_wrapped > 0);"),
    # "auto" offers no cipher (and no CMAC) on any version, or on all
    "ciphers-pay-never": ("provider/quirks/quirks.c",
        "    return OpenSSL_version_num() < 0x30500000UL;",
        "    return 0;"),
    "ciphers-pay-always": ("provider/quirks/quirks.c",
        "    return OpenSSL_version_num() < 0x30500000UL;",
        "    return 1;"),
    # OCB: one template for both directions (the bulk function follows the
    # direction the key was set in)
    "ocb-one-direction": ("provider/families/ocb.c",
        ".key_by_direction = 1 }",
        ".key_by_direction = 0 }"),
    # cipher families: the rest of the keying init failing on the copy is
    # not handed to the default
    "ctmpl-rest-unchecked": ("provider/layer/ctmpl.c",
        "        || !inner_init(f->kfns, inner, enc, NULL, 0, iv, ivlen, params)) {",
        "        || (inner_init(f->kfns, inner, enc, NULL, 0, iv, ivlen, params)\n            && 0)) {"),
    # cipher families: templates keyed without the recorded shape
    "ctmpl-template-no-replay": ("provider/layer/ctmpl.c",
        "    *ok = tmpl != NULL && replay(w, f, tmpl, 0, t->shape_len)\n"
        "          && inner_init(f, tmpl, enc, key, keylen, NULL, 0, NULL);",
        "    *ok = tmpl != NULL\n"
        "          && inner_init(f, tmpl, enc, key, keylen, NULL, 0, NULL);"),
    # a key not admitted yet: the family's own context keyed with other
    # bytes, or not counted as a pass-through
    "ctmpl-cold-own-wrong-key": ("provider/layer/ctmpl.c",
        "        if ((inner = kc_tcore_make(&w->t, &cipher_side, alg, enc, key,\n",
        "        if ((inner = kc_tcore_make(&w->t, &cipher_side, alg, enc, key + 1,\n"),
    "ctmpl-cold-own-uncounted": ("provider/layer/ctmpl.c",
        "        kc_count_passthrough(w->pctx, &f->alg[1]);\n    } else",
        "    } else"),
    # cipher families: a hit hands out the template itself
    "ctmpl-share-template": ("provider/layer/ctmpl.c",
        "    } else if (tmpl == NULL || (inner = f->kfns->dupctx(tmpl)) == NULL)\n        return 0;",
        "    } else if (tmpl == NULL || (inner = tmpl) == NULL)\n        return 0;"),
    # cipher families: EVP's length queries before the key answered with a
    # fresh context's lengths whatever the record set
    "ctmpl-lengths-stale": ("provider/layer/ctmpl.c",
        "        field = w->t.len == w->t.shape_len ? CV_IVLEN(w->t.value) : 0;",
        "        field = w->t.len == w->t.shape_len ? CV_IVLEN(w->f->empty_value) : 0;"),
    # cipher families: a call before the key recorded whatever the default
    # says of it
    "ctmpl-record-unchecked": ("provider/layer/ctmpl.c",
        "        if (((v = learn_shape(w, c)) & CV_VALID) == 0)",
        "        if (((v = learn_shape(w, c)) | CV_VALID) == 0)"),
    # cipher families, just keyed: the IV length a lone "ivlen" set gives
    # is not noted, EVP's query before the IV init answered with the old
    "ctmpl-jk-set-untracked": ("provider/layer/ctmpl.c",
        "            w->keyed_ivlen = v + 2;\n", ""),
    # keyed_known: an init with params still answered from what was known
    "ctmpl-known-params-stay": ("provider/layer/ctmpl.c",
        "    if (params != NULL || (iv != NULL && ivlen + 2 != w->keyed_ivlen))",
        "    if (iv != NULL && ivlen + 2 != w->keyed_ivlen)"),
    # keyed_known: an init with an IV of another length than the known one
    # (a caller other than EVP) still answered with the old
    "ctmpl-known-ivlen-stays": ("provider/layer/ctmpl.c",
        "    if (params != NULL || (iv != NULL && ivlen + 2 != w->keyed_ivlen))",
        "    if (params != NULL)"),
    # keyed_known: a context keyed again with params (GCM's rekey) answers
    # the lengths of its key and IV as if the params changed nothing
    "ctmpl-rekeyed-params-ignored": ("provider/layer/ctmpl.c",
        "    if (iv != NULL && params == NULL && ivlen <= CV_LEN_MAX - 2\n        && keylen <= CV_LEN_MAX - 2)\n        set_keyed(w, w->t.inner, w->ifn, ivlen + 2, keylen + 2);",
        "    if (iv != NULL && ivlen <= CV_LEN_MAX - 2\n        && keylen <= CV_LEN_MAX - 2)\n        set_keyed(w, w->t.inner, w->ifn, ivlen + 2, keylen + 2);"),
    # ... or another IV length than its IV's
    "ctmpl-rekeyed-ivlen-wrong": ("provider/layer/ctmpl.c",
        "        set_keyed(w, w->t.inner, w->ifn, ivlen + 2, keylen + 2);",
        "        set_keyed(w, w->t.inner, w->ifn, ivlen + 3, keylen + 2);"),
    # keyed_known: a copy answers its template's shape's IV length, not the
    # one the template has when copied
    "ctmpl-known-copy-stale": ("provider/layer/ctmpl.c",
        "        set_keyed(dst, inner, src->ifn, src->keyed_ivlen, src->keyed_keylen);",
        "        set_keyed(dst, inner, src->ifn, CV_IVLEN(src->t.value), src->keyed_keylen);"),
    # keyed_known: a keyed init not through the re-key functions, so the
    # key the context holds is not noted (GCM then takes a later init with
    # the old key as a keyless one)
    "ctmpl-known-rekey-skipped": ("provider/layer/ctmpl.c",
        "    if (key != NULL && w->f->d->rekey_keyless)\n        return enc ? rekey_einit",
        "    if (0 && key != NULL && w->f->d->rekey_keyless)\n        return enc ? rekey_einit"),
    # keyed_known: a context keyed alone, passed through, answers a fresh
    # context's IV length, not its shape's (a length set before the key)
    "ctmpl-known-pass-fresh": ("provider/layer/ctmpl.c",
        "        set_keyed(w, w->t.inner, w->ifn, CV_IVLEN(w->t.value),",
        "        set_keyed(w, w->t.inner, w->ifn, CV_IVLEN(w->f->empty_value),"),
    # keyed_known: the same, keyed from the cache
    "ctmpl-known-hit-fresh": ("provider/layer/ctmpl.c",
        "            if (set_keyed(w, inner, f->kfns, CV_IVLEN(w->t.value),",
        "            if (set_keyed(w, inner, f->kfns, CV_IVLEN(w->f->empty_value),"),
    # just keyed: a refused "ivlen" set noted as if the default took it
    "ctmpl-jk-refused-tracked": ("provider/layer/ctmpl.c",
        "    if (ret == 1 && (w->f->d->ivlen_set_sets || w->to == &keyed_known)",
        "    if ((w->f->d->ivlen_set_sets || w->to == &keyed_known)"),
    # just keyed, keyed_known: other sets (the IV length among other params) leave
    # keycache answering with what it knew
    "ctmpl-jk-other-set-stays": ("provider/layer/ctmpl.c",
        "    set_inner(w, w->t.inner, w->ifn);\n    return ret;\n}",
        "    return ret;\n}"),
    # just keyed: the IV length answered is a fresh context's, not the
    # shape's (an IV length set before the key)
    "ctmpl-jk-fresh-ivlen": ("provider/layer/ctmpl.c",
        "        w->keyed_ivlen = CV_IVLEN(w->t.value);",
        "        w->keyed_ivlen = CV_IVLEN(w->f->empty_value);"),
    # a keyed first MAC template's copies (first_copy()): a message begun
    # on the template is not carried into its copies
    "tmpl-firstcopy-begun": ("provider/layer/tmpl.c",
        "        w->first &= ~(KC_FIRST_RECORD | KC_FIRST_KEYED);\n        return w->ops->update(",
        "        w->first &= ~KC_FIRST_RECORD;\n        return w->ops->update("),
    # ... nor a final on the template
    "tmpl-firstcopy-final-stays": ("provider/layer/tmpl.c",
        "        w->first &= ~(KC_FIRST_RECORD | KC_FIRST_KEYED);\n        return w->ops->final(",
        "        w->first &= ~KC_FIRST_RECORD;\n        return w->ops->final("),
    # ... nor a set on the template (a new IV); nor is the key forgotten
    "tmpl-firstcopy-set-stays": ("provider/layer/tmpl.c",
        "    forget_held(w);\n    return forward(w, 0, NULL, 0, params);",
        "    return forward(w, 0, NULL, 0, params);"),
    # ... nor a keyless init with an IV
    "tmpl-firstcopy-keyless-stays": ("provider/layer/tmpl.c",
        "            if (w->first & KC_FIRST_HELD)\n                return held_keyless_init(w, key, keylen, params);\n",
        ""),
    # ... or ends the look-ups but keeps a key a "key" param replaced
    "tmpl-firstcopy-keyless-key-kept": ("provider/layer/tmpl.c",
        "{\n    forget_held(w);\n    if (params == NULL)",
        "{\n    w->first &= ~KC_FIRST_KEYED;\n    if (params == NULL)"),
    # ... a context keyed after an IV set (its record ended there) holds
    # its key too: copies look up a record without that IV
    "tmpl-firstcopy-any-keying": ("provider/layer/tmpl.c",
        "    if (was == KC_FIRST_SHAPE && w->f->d->copies_look_up)",
        "    if (w->f->d->copies_look_up)"),
    # ... the keying init's IV is not recorded: copies lack it
    "tmpl-firstcopy-no-volatile": ("provider/layer/tmpl.c",
        "            || (s.nv > 0\n                && !append_call(w, s.vol, s.nv, KC_AS_VOLATILE)))) {",
        "            || 0)) {"),
    # ... the key is not wiped when the template is freed
    "tmpl-firstcopy-free-keeps": ("provider/layer/tmpl.c",
        "    if (w->held != 0)\n        OPENSSL_cleanse(w->key, w->held);\n    if (!kc_cache_park_in(",
        "    if (!kc_cache_park_in("),
    # ... nor when it is keyed again
    "tmpl-firstcopy-rekey-keeps": ("provider/layer/tmpl.c",
        "    if (key != NULL)\n        forget_held(w);\n    ok = forward(w, 1, key, keylen, params);",
        "    ok = forward(w, 1, key, keylen, params);"),
    # ... the look-up of the whole record finds the shape's entries (no IV)
    "tmpl-firstcopy-shape-only": ("provider/layer/tmpl.c",
        "    tmpl = kc_cache_find_rec(c, &f->alg, rec, w->t.len, h, key, keylen, &lk);",
        "    tmpl = kc_cache_find_rec(c, &f->alg, rec, w->t.shape_len, w->t.hash, key, keylen, &lk);"),
    # ... a copy of a first template (keyed: first_copy(); unkeyed:
    # settled_copy()) is not a first context: the template's second copy
    # counts its key, and a process copying a template once or twice builds
    # the private store (first-gmac-copies).  Merged from
    # tmpl-firstcopy-no-budget and tmpl-settled-no-budget with the check.
    "tmpl-copy-no-budget": ("provider/layer/tmpl.c",
        "    return !kc_tcore_app_first(src->pctx, &src->f->alg)\n           && kc_tfam_ready(",
        "    return kc_tfam_ready("),
    # origin: an application's EVP_MAC_CTX_dup is not an entry point, so a
    # copy's key is never admitted
    "origin-dup-not-entry": ("provider/cache/origin.c",
        '    "EVP_MAC_CTX_set_params", "EVP_MAC_CTX_dup",',
        '    "EVP_MAC_CTX_set_params", "EVP_MAC_CTX_set_params",'),
    # cipher families, a context re-keyed with the key it holds (rekey):
    # keyless without an IV (a half-done message goes on, not restarted)
    "ctmpl-rekey-without-iv": ("provider/layer/ctmpl.c",
        "        if (w->held == enc + 1 && iv != NULL && keylen == keylen_of(w->f)      \\\n",
        "        if (w->held == enc + 1 && keylen == keylen_of(w->f)                    \\\n"),
    # ... whatever key comes (another key, or the same buffer changed)
    "ctmpl-rekey-any-key": ("provider/layer/ctmpl.c",
        "            && kc_key_equal(w->key, key, keylen))                             \\\n",
        "            && kc_key_equal(w->key, w->key, keylen))                          \\\n"),
    # ... and the key it held left in the wrapper once forgotten (pooled)
    "ctmpl-rekey-key-kept": ("provider/layer/ctmpl.c",
        "        OPENSSL_cleanse(w->key, keylen_of(w->f));\n", ""),
    # GCM's IV init before the key held back (hold_iv()): not given to
    # the copy at the keying init
    "ctmpl-held-iv-dropped": ("provider/layer/ctmpl.c",
        "        if (!inner_init(f->kfns, inner, w->piv_enc, NULL, 0, w->piv,\n"
        "                        w->piv_len, NULL)\n            || ",
        "        if ("),
    # ... still held when another call comes first (recorded after it)
    "ctmpl-held-iv-not-flushed": ("provider/layer/ctmpl.c",
        "    return w->piv_len == 0 || flush_held_iv(w);",
        "    return w->piv_len == 0 || 1 || flush_held_iv(w);"),
    # ... held with the init's params (they are dropped)
    "ctmpl-held-iv-params": ("provider/layer/ctmpl.c",
        "    if (w->t.cold || iv == NULL || params != NULL || w->piv_len != 0\n",
        "    if (w->t.cold || iv == NULL || w->piv_len != 0\n"),
    # ... given to the copy with a keying init's params left out
    "ctmpl-held-iv-keying-params": ("provider/layer/ctmpl.c",
        "    if (w->piv_len != 0 && (params != NULL\n",
        "    if (w->piv_len != 0 && (0\n"),
    # (Not a mutant on OpenSSL 3.0: a just-keyed context kept so through
    # an init.  EVP asks the IV length before an init with an IV and
    # passes that, and EVP_CipherInit_ex2's params reach the provider as a
    # set_ctx_params, which the just-keyed set handles; jk_init ends the
    # state anyway, for an EVP that hands them to the init itself.)
    # (Not mutants, on OpenSSL 3.0: a template whose keying raised an
    # error while succeeding, and set_ctx_params(NULL) refused - the 3.0
    # default does neither; a shape call after a volatile one, which then
    # lands in the shape in order and is only less often cached.)
    # (Not a mutant: dropping the algorithm from the entry compare changes
    # nothing observable, since AES key sizes differ in length and HMAC
    # entries carry their digest as param; the compare stays as a guard.)
    # GMAC's own keyed context (gmac.c): an IV length past an int taken
    # whole, where EVP's ctrl takes it as an int
    "gmac-iv-no-int": ("provider/families/gmac.c",
        "    if (arg < 0)\n        return 0;\n    sz = (size_t)arg;",
        "    sz = len;"),
    # ... the IV set with GCM's default length, not the one just set
    "gmac-iv-len-12": ("provider/families/gmac.c",
        "iv, iv == NULL ? 0 : sz, NULL);", "iv, iv == NULL ? 0 : 12, NULL);"),
    # ... a key of the wrong length refused without the default's error
    "gmac-key-no-error": ("provider/families/gmac.c",
        "        return default_says(g, p);", "        return 0;"),
    # ... a key after the key not set (the message goes on with the old)
    "gmac-rekey-ignored": ("provider/families/gmac.c",
        "    return g->c->einit(g->gcm, key, keylen, NULL, 0, NULL);\n}",
        "    return 1;\n}"),
    # ... the tag's final skipped: the tag read without GCM's final
    "gmac-no-final": ("provider/families/gmac.c",
        "    if (!g->c->final(g->gcm, out, &n, 0))\n        return 0;", ""),
    # a cipher after the key: the default's context taken even when the
    # cipher failed (the message so far is lost)
    "gmac-recipher-adopts-failure": ("provider/layer/tmpl.c",
        "    if (!ok) {\n        free_inner(w, t, mac);\n        return 0;\n    }\n    return recipher_to(",
        "    if (0) {\n        free_inner(w, t, mac);\n        return 0;\n    }\n    return recipher_to("),
    # ... the default's context made in the private library context
    "gmac-recipher-private": ("provider/layer/tmpl.c",
        "    if ((t = new_inner(w, params, mac)) != NULL)",
        "    if ((t = w->f->mac.newctx(w->pctx->inner_provctx)) != NULL)"),
    # ... not intercepted: GMAC's own context refuses it
    "gmac-recipher-none": ("provider/layer/tmpl.c",
        "        if (params->key[0] == c[0] && strcmp(params->key, c) == 0)\n"
        "            return 1;",
        "        if (params->key[0] == c[0] && strcmp(params->key, c) == 0)\n"
        "            return 0;"),

    # a cipher named after the key that the application's context cannot
    # resolve: the private context's errors (naming it) left to show
    "keyed-cipher-private-errors": ("provider/layer/tmpl.c",
        "    if (!needs_app(w, params, 0)\n        || (t = cipher_part(w, params, &mac, &ok)) == NULL)",
        "    if (1 || !needs_app(w, params, 0)\n        || (t = cipher_part(w, params, &mac, &ok)) == NULL)"),
    # a GMAC IV without data before the key taken as the last IV, which
    # drops the IV set before (the default keeps it, or fails the message)
    "gmac-null-iv-replaces": ("provider/layer/tmpl.c",
        "        if (volatile_unset(s))\n            goto fail;", ""),
    # KMAC's own keyed context (kmac.c): XOF mode not encoded in the final
    "kmac-xof-ignored": ("provider/families/kmac.c",
        "n = right_encode(enc, k->xof ? 0 : k->out_len * 8);",
        "n = right_encode(enc, k->out_len * 8);"),
    # ... no customisation string absorbed when none was set
    "kmac-no-empty-custom": ("provider/families/kmac.c",
        "        k->custom_len = encode_string(k->custom, NULL, 0);", ""),
    # ... a failing set_ctx_params taken whole, where the default stops at
    # the parameter that fails
    "kmac-failure-taken-whole": ("provider/families/kmac.c",
        "            if (r != 1 && m->set_ctx_params(t, one) != 1)\n                break;\n",
        ""),
    # ... a key of the wrong length refused without the default's error
    "kmac-key-no-error": ("provider/families/kmac.c",
        "            (void)set_other(k, p);\n            return 0;",
        "            return 0;"),
    # ... any single query answered as the output size
    "kmac-get-any-as-size": ("provider/families/kmac.c",
        "    if (kc_answer_size(params, k->out_len))\n        return 1;",
        "    if (params != NULL && params[0].key != NULL && params[1].key == NULL\n"
        "        && params[0].data_type == OSSL_PARAM_UNSIGNED_INTEGER\n"
        "        && params[0].data_size == sizeof(size_t) && params[0].data != NULL)\n"
        "        return OSSL_PARAM_set_size_t(&params[0], k->out_len);"),
    # ... an output length past SP 800-185's bound taken
    "kmac-size-unbounded": ("provider/families/kmac.c",
        "                 && *(const size_t *)p->data <= KMAC_OUT_MAX)",
        "                 )"),
    # ... the last of a name given twice taken, where the default takes
    # the first
    "kmac-last-of-twice": ("provider/families/kmac.c",
        "        else if (size == NULL && kc_name_is(p->key, OSSL_MAC_PARAM_SIZE)",
        "        else if (kc_name_is(p->key, OSSL_MAC_PARAM_SIZE)"),
    # ... the bytepad of the key's block left out
    "kmac-key-unpadded": ("provider/families/kmac.c",
        "    if (n % w != 0) {\n        memset(p + n, 0, w - n % w);\n        n += w - n % w;\n    }",
        ""),
}

def tracked(root):
    """What git tracks (work in progress elsewhere stays out), or, in a
    copy without git (a tools/compat.sh chroot), every file but builds."""
    try:
        return subprocess.run(["git", "ls-files"], cwd=root,
                              capture_output=True, text=True,
                              check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs
                       if x != ".git" and not x.startswith("build")]
            out += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return out


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True)

def libcrypto_version():
    """The running libcrypto's "major.minor" ("3.0", "4.0"), from openssl(1)."""
    try:
        out = subprocess.run(["openssl", "version"], capture_output=True,
                             text=True).stdout.split()
        return ".".join(out[1].split(".")[:2])
    except (OSError, IndexError):
        return "?"

def edits_of(name):
    """A mutant's edits as a list: one (path, old, new), or several."""
    edits = MUTANTS[name]
    return [edits] if isinstance(edits, tuple) else edits

def check(root):
    """Each mutant's text found exactly once: run by ctest (check_mutants),
    so an edit that moves code moves its mutants with it."""
    stale = 0
    for name in MUTANTS:
        for path, old, new in edits_of(name):
            n = open(os.path.join(root, path)).read().count(old)
            if n != 1:
                print(f"{name}: found {n} times in {path}")
                stale += 1
    print(f"{len(MUTANTS)} mutants, {stale} not applying")
    return 1 if stale else 0

def main(argv):
    if "--check" in argv:
        return check(os.getcwd())
    keep = "--keep" in argv
    every = "--every-test" in argv
    tests = ""
    if "--tests" in argv:
        i = argv.index("--tests")
        tests = f" -R '{argv[i + 1]}'"
        argv = argv[:i] + argv[i + 2:]
    names = [a for a in argv if not a.startswith("--")] or list(MUTANTS)
    unknown = [n for n in names if n not in MUTANTS]
    if unknown:
        print("no such mutant:", " ".join(unknown))
        return 2
    root = os.getcwd()
    version = libcrypto_version()
    # One copy and one build; each mutant is an edit, an incremental build
    # and the suite, stopped at its first failure, then the edit undone.
    # The copy sits beside the checkout so ../shared/vectors resolves.
    src = tempfile.mkdtemp(prefix="kc-mutant-", dir=os.path.dirname(root))
    for f in tracked(root):
        os.makedirs(os.path.join(src, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(os.path.join(root, f), os.path.join(src, f))
    b = run("cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null"
            " && cmake --build build -j2", src)
    if b.returncode != 0:
        print(f"the unmutated copy does not build\n{b.stdout[-2000:]}{b.stderr[-2000:]}")
        return 1
    stop = "" if every else " --stop-on-failure"
    failed = skipped = 0
    for name in names:
        edits = edits_of(name)
        only = ONLY_ON.get(name)
        if only is not None and not version.startswith(only):
            print(f"{name:20} n/a on {version}: only OpenSSL {', '.join(only)} can tell")
            skipped += 1
            continue
        saved = {}
        applies = True
        for path, old, new in edits:
            f = os.path.join(src, path)
            text = open(f).read()
            saved.setdefault(f, text)
            applies = applies and text.count(old) == 1
            open(f, "w").write(text.replace(old, new, 1))
        if applies:
            b = run("cmake --build build -j2", src)
            if b.returncode != 0:
                print(f"{name:20} BUILD FAILED\n{b.stdout[-2000:]}{b.stderr[-2000:]}")
                failed += 1
            else:
                t = run(f"ctest --test-dir build -j2 -E 'valgrind|check_mutants'{stop}{tests} 2>&1", src)
                killed = [l.split(" - ")[1].split()[0] for l in t.stdout.splitlines()
                          if l.strip().startswith(tuple("0123456789")) and " - " in l]
                if t.returncode == 0:
                    print(f"{name:20} SURVIVED: no test failed")
                    failed += 1
                else:
                    print(f"{name:20} killed by: {', '.join(killed)}")
        else:
            print(f"{name:20} PATCH DOES NOT APPLY (update tools/mutants.py)")
            failed += 1
        for f, text in saved.items():
            open(f, "w").write(text)
        sys.stdout.flush()
    print(f"{len(names)} mutants on OpenSSL {version}: {failed} survived or failed,"
          f" {skipped} left to another version")
    if keep:
        print("kept", src)
    else:
        shutil.rmtree(src, ignore_errors=True)
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
