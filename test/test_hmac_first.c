/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A thread's HMAC keyings, first and later: keycache keys them in the
 * default's HMAC of the application's library context (families/hmac.c,
 * key_app, new_inner) rather than in its private one, whose digest store
 * a process computing a few HMACs would otherwise pay for.  Every state
 * such a context goes through must be the default's.
 *
 * In-process patterns run on a new thread (a thread's first keyings)
 * against keycache with the deployed admission (admit_after = 3), so that
 * keys move from the thread's first misses into the cache within a
 * pattern; the records must equal the default's.
 *
 * A fresh process's first HMAC is observed by running this program again
 * (--child NAME) with OPENSSL_CONF naming either no configuration (the
 * default alone) or keycache's, in the global library context.  There a
 * failed digest fetch's error names the library context it ran in, so a
 * context keyed in keycache's private one would show, unmasked.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_fetch_count.h"
#include "kc_test.h"
#include "keycache.h"

typedef KCT_REC REC;

static OSSL_LIB_CTX *deployed;
/* this program, for a fresh process (not /proc/self/exe: under valgrind) */
static const char *self;

static unsigned char keys[6][200];
/* see EVP_MD_fetch() below; the count when p_many()'s usual work ended */
static int fetched_elsewhere, fetched_usual = -1;
static unsigned char msg[300];

static void inputs(void)
{
    int i;

    for (i = 0; i < 6; i++)
        kct_fill(keys[i], sizeof(keys[i]), 0x6b00 + (uint32_t)i);
    kct_fill(msg, sizeof(msg), 0x6d73);
}

static void rc(REC *r, const char *what, int v)
{
    kct_rec_printf(r, "%s rc=%d", what, v);
    kct_rec_errs(r);
}

static OSSL_PARAM digest(const char *name)
{
    return OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)name, 0);
}

/* update, final, the size and block size the context reports */
static void finish(REC *r, EVP_MAC_CTX *c, const char *what)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t n = 0, bs = 0, sz = 0;
    OSSL_PARAM q[3];
    int ok;

    rc(r, "update", EVP_MAC_update(c, msg, 77));
    q[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
    q[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_BLOCK_SIZE, &bs);
    q[2] = OSSL_PARAM_construct_end();
    rc(r, "get", EVP_MAC_CTX_get_params(c, q));
    kct_rec_printf(r, "size=%zu block=%zu macsize=%zu", sz, bs,
                   EVP_MAC_CTX_get_mac_size(c));
    kct_rec_errs(r);
    ok = EVP_MAC_final(c, out, &n, sizeof(out));
    kct_rec_printf(r, "%s final rc=%d ", what, ok);
    if (ok)
        kct_rec_hex(r, out, n);
    kct_rec_errs(r);
}

static EVP_MAC_CTX *new_ctx(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "HMAC", NULL);
    EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;

    EVP_MAC_free(mac);
    kct_rec_printf(r, "new %s", c != NULL ? "ok" : "failed");
    kct_rec_errs(r);
    return c;
}

static void init_key(REC *r, EVP_MAC_CTX *c, const char *md, int k,
                     size_t len)
{
    OSSL_PARAM p[2] = { digest(md), OSSL_PARAM_END };

    rc(r, "init", EVP_MAC_init(c, keys[k], len, md != NULL ? p : NULL));
}

/* one-shot MACs over several digests: a thread's first misses and on */
static void p_qmac(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *mds[] = { "SHA256", "SHA2-512", "SHA3-256", "SHA1",
                                 "SHA256", "sha-384" };
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t i, n;

    for (i = 0; i < sizeof(mds) / sizeof(mds[0]); i++) {
        n = 0;
        kct_rec_printf(r, "qmac %s %s ", mds[i],
                       EVP_Q_mac(libctx, "HMAC", NULL, mds[i], NULL, keys[i % 4],
                                 32, msg, 100, out, sizeof(out), &n) != NULL
                       ? "ok" : "failed");
        kct_rec_hex(r, out, n);
        kct_rec_errs(r);
    }
}

/*
 * One context keyed again and again: the same key (kept, then re-keyed
 * without a key), keyless inits, other keys past the thread's first
 * misses, the first key again until it is admitted and hits.
 */
static void p_rekey(OSSL_LIB_CTX *libctx, REC *r)
{
    static const int seq[] = { 0, 0, 0, 1, 2, 3, 0, 0, 4, 0 };
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    size_t i;

    if (c == NULL)
        return;
    for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        init_key(r, c, i == 0 || i == 5 ? "SHA256" : NULL, seq[i], 32);
        finish(r, c, "keyed");
        rc(r, "keyless", EVP_MAC_init(c, NULL, 0, NULL));
        finish(r, c, "keyless");
    }
    /* the key in the params, the digest re-stated */
    {
        OSSL_PARAM p[3] = { digest("SHA256"),
            OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, keys[5],
                                              32), OSSL_PARAM_END };

        rc(r, "init params", EVP_MAC_init(c, NULL, 0, p));
        finish(r, c, "params");
    }
    EVP_MAC_CTX_free(c);
}

/* copies of a context keyed in the application's context, and theirs */
static void p_dup(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r), *d, *e;

    if (c == NULL)
        return;
    init_key(r, c, "SHA2-512", 1, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    d = EVP_MAC_CTX_dup(c);
    kct_rec_printf(r, "dup %s", d != NULL ? "ok" : "failed");
    kct_rec_errs(r);
    EVP_MAC_CTX_free(c);
    if (d == NULL)
        return;
    e = EVP_MAC_CTX_dup(d);
    finish(r, d, "copy");
    init_key(r, d, NULL, 2, 32);
    finish(r, d, "copy rekeyed");
    if (e != NULL) {
        init_key(r, e, NULL, 1, 32);
        finish(r, e, "copy of copy");
        EVP_MAC_CTX_free(e);
    }
    EVP_MAC_CTX_free(d);
}

/*
 * What a keyless re-init cannot undo, on a thread's first keyings:
 * digest-noinit before the key (after it, 3.0's own HMAC uses freed
 * memory), digest-oneshot and tls-data-size after it.
 */
static void p_unresettable(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *names[] = { OSSL_MAC_PARAM_DIGEST_NOINIT,
                                   OSSL_MAC_PARAM_DIGEST_ONESHOT,
                                   OSSL_MAC_PARAM_TLS_DATA_SIZE };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        EVP_MAC_CTX *c = new_ctx(libctx, r);
        OSSL_PARAM p[3] = { digest("SHA256"), OSSL_PARAM_END, OSSL_PARAM_END };
        size_t recsize = 100;
        int one = 1;

        if (c == NULL)
            return;
        p[1] = i == 2 ? OSSL_PARAM_construct_size_t(names[i], &recsize)
                      : OSSL_PARAM_construct_int(names[i], &one);
        if (i == 0)
            rc(r, names[i], EVP_MAC_CTX_set_params(c, p));
        init_key(r, c, NULL, (int)i, 32);
        if (i > 0)
            rc(r, names[i], EVP_MAC_CTX_set_params(c, p + 1));
        if (i == 2)
            rc(r, "header", EVP_MAC_update(c, msg + 200, 13));
        finish(r, c, names[i]);
        EVP_MAC_CTX_free(c);
    }
}

/*
 * A digest with properties on the thread's first keyings (the query asked
 * again in the application's context), one no provider has, then keys
 * longer than the block or the cache.
 */
static void p_keys_props(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t lens[] = { 200, 100, 65, 64, 0 };
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    OSSL_PARAM p[3];
    size_t i;

    if (c == NULL)
        return;
    p[0] = digest("SHA2-256");
    p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                            "provider=default", 0);
    p[2] = OSSL_PARAM_construct_end();
    rc(r, "props", EVP_MAC_CTX_set_params(c, p));
    init_key(r, c, NULL, 1, 32);
    finish(r, c, "props");
    p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                            "provider=nosuch", 0);
    rc(r, "props none", EVP_MAC_CTX_set_params(c, p));
    init_key(r, c, NULL, 2, 32);
    finish(r, c, "props none");
    EVP_MAC_CTX_free(c);
    if ((c = new_ctx(libctx, r)) == NULL)
        return;
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        init_key(r, c, "SHA256", (int)i, lens[i]);
        finish(r, c, "long");
    }
    EVP_MAC_CTX_free(c);
}

/*
 * Asked before the key, then keyed, then its digest changed or refused
 * (after the first keying: an inner in the application's context answers
 * with that context's errors).
 */
static void p_params(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    OSSL_PARAM p[2] = { digest("SHA256"), OSSL_PARAM_END };

    if (c == NULL)
        return;
    rc(r, "set", EVP_MAC_CTX_set_params(c, p));
    kct_rec_printf(r, "unkeyed macsize=%zu", EVP_MAC_CTX_get_mac_size(c));
    kct_rec_errs(r);
    init_key(r, c, NULL, 4, 32);
    finish(r, c, "keyed");
    rc(r, "same digest", EVP_MAC_CTX_set_params(c, p));
    finish(r, c, "same");
    p[0] = digest("SHA512");
    rc(r, "other digest", EVP_MAC_CTX_set_params(c, p));
    init_key(r, c, NULL, 4, 32);
    finish(r, c, "other");
    p[0] = digest("NOPE");
    rc(r, "no digest", EVP_MAC_CTX_set_params(c, p));
    init_key(r, c, NULL, 4, 32);
    finish(r, c, "none");
    EVP_MAC_CTX_free(c);
}

/*
 * A fresh process: its first HMAC, then a context keyed second whose
 * digest fetch fails (in the private context it would say so).
 */
static void p_process(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    EVP_MAC_CTX *c;
    OSSL_PARAM p[2] = { digest("NOPE"), OSSL_PARAM_END };
    size_t n = 0;

    kct_rec_printf(r, "qmac %s ",
                   EVP_Q_mac(libctx, "HMAC", NULL, "SHA256", NULL, keys[0], 32,
                             msg, 100, out, sizeof(out), &n) != NULL
                   ? "ok" : "failed");
    kct_rec_hex(r, out, n);
    kct_rec_errs(r);
    if ((c = new_ctx(libctx, r)) == NULL)
        return;
    init_key(r, c, "SHA256", 5, 32);
    finish(r, c, "keyed");
    rc(r, "no digest", EVP_MAC_CTX_set_params(c, p));
    finish(r, c, "none");
    EVP_MAC_CTX_free(c);
}

/* one EVP_Q_mac HMAC-SHA256 (or md) with key k of len bytes, recorded */
static void qmac(OSSL_LIB_CTX *libctx, REC *r, const char *md, int k,
                 size_t len)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t n = 0;

    kct_rec_printf(r, "qmac %s key %d/%zu %s ", md, k, len,
                   EVP_Q_mac(libctx, "HMAC", NULL, md, NULL, keys[k], len,
                             msg, 100, out, sizeof(out), &n) != NULL
                   ? "ok" : "failed");
    kct_rec_hex(r, out, n);
    kct_rec_errs(r);
}

/* passed through (a record size), then a digest no provider has; freed */
static void none_passed(REC *r, EVP_MAC_CTX *c)
{
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    OSSL_PARAM none[2] = { digest("NOPE"), OSSL_PARAM_END };
    size_t recsize = 100;

    p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE, &recsize);
    rc(r, "record size", EVP_MAC_CTX_set_params(c, p));
    rc(r, "no digest", EVP_MAC_CTX_set_params(c, none));
    EVP_MAC_CTX_free(c);
}

/*
 * Past the first misses, a digest resolved with a query, for an inner
 * made in the application's context with that query; passed through, a
 * digest no provider has must fail with that context's errors, which in a
 * fresh process (the global context) read apart from keycache's private
 * one.
 */
static void many_query(OSSL_LIB_CTX *libctx, REC *r)
{
    OSSL_PARAM p[3] = { digest("SHA2-384"),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                         "provider=default", 0),
        OSSL_PARAM_END };
    EVP_MAC_CTX *c = new_ctx(libctx, r);

    if (c == NULL)
        return;
    rc(r, "query", EVP_MAC_CTX_set_params(c, p));
    init_key(r, c, NULL, 3, 32);
    finish(r, c, "query");
    none_passed(r, c);
}

/*
 * The default properties changed after the digest was resolved: only a
 * private inner keeps the digest the default's context fetched then.
 * Passed through, a digest no provider has fails as in many_query().
 */
static void many_stale(OSSL_LIB_CTX *libctx, REC *r)
{
    OSSL_PARAM p[2] = { digest("SHA2-224"), OSSL_PARAM_END };
    EVP_MAC_CTX *c = new_ctx(libctx, r);

    if (c == NULL)
        return;
    rc(r, "set", EVP_MAC_CTX_set_params(c, p));
    rc(r, "properties", EVP_set_default_properties(libctx, "?provider=default"));
    init_key(r, c, NULL, 4, 32);
    finish(r, c, "stale");
    none_passed(r, c);
    rc(r, "properties back",
       EVP_set_default_properties(libctx, "?provider=" KEYCACHE_PROVIDER_NAME));
}

/*
 * A thread's work past its first misses: keys used once or twice, a key
 * used until it is admitted and hits, a long key, another digest, a
 * context re-keyed with the key it holds, a copy, and sizes asked before
 * the key.  Run in a fresh process too (test_process), where no digest
 * may be fetched outside the application's library context: keycache's
 * HMAC contexts are made there, so its private context never builds a
 * digest store of its own (some 3M instructions a process).
 */
static void p_many(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c, *d;
    OSSL_PARAM p[2] = { digest("SHA256"), OSSL_PARAM_END };
    int i;

    for (i = 0; i < 12; i++)
        qmac(libctx, r, "SHA256", i % 6, 32);
    for (i = 0; i < 8; i++)
        qmac(libctx, r, "SHA256", 1, 32);
    for (i = 0; i < 4; i++)
        qmac(libctx, r, i % 2 ? "SHA2-512" : "SHA256", 2, 200);
    if ((c = new_ctx(libctx, r)) == NULL)
        return;
    rc(r, "set", EVP_MAC_CTX_set_params(c, p));
    kct_rec_printf(r, "unkeyed macsize=%zu", EVP_MAC_CTX_get_mac_size(c));
    kct_rec_errs(r);
    for (i = 0; i < 6; i++) {
        init_key(r, c, NULL, i / 3, 32);
        finish(r, c, "rekeyed");
    }
    d = EVP_MAC_CTX_dup(c);
    kct_rec_printf(r, "dup %s", d != NULL ? "ok" : "failed");
    kct_rec_errs(r);
    if (d != NULL) {
        init_key(r, d, NULL, 1, 32);
        finish(r, d, "copy");
        EVP_MAC_CTX_free(d);
    }
    EVP_MAC_CTX_free(c);
    many_query(libctx, r);
    fetched_usual = fetched_elsewhere;
    many_stale(libctx, r);
}

/* digests fetched outside the application's context (kc_fetch_count.h) */
KCT_COUNT_FETCHES(EVP_MD, EVP_MD_fetch, fetched_elsewhere)

/*
 * Another provider's SHA2-256 ("kctestmd", kc_test.c), preferred by the
 * default properties: it counts its updates, so a record shows whose
 * SHA-256 an HMAC ran on.
 */

/* keycache's HMAC asked for by name where kctestmd is preferred */
static const char *other_hmac_q;

/*
 * Contexts set by name while the default's digest was preferred, keyed
 * once each after theirs became preferred (the default's contexts keep
 * the digest their set fetched; so does a private inner, which keycache
 * gives them), until their key would be admitted; then a new context
 * keyed with that key and switched to theirs by query: it must not have
 * taken one of their private inners, which cannot find theirs.
 */
static void other_stale(OSSL_LIB_CTX *libctx, REC *r, EVP_MAC *mac,
                        const OSSL_PARAM *dflt)
{
    OSSL_PARAM byname[2] = { digest("SHA256"), OSSL_PARAM_END };
    OSSL_PARAM theirs[3] = { digest("SHA256"),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                         "provider=kctestmd", 0),
        OSSL_PARAM_END };
    EVP_MAC_CTX *s[4] = { NULL, NULL, NULL, NULL }, *c;
    int i, before;

    kct_rec_printf(r, "-- stale");
    rc(r, "properties", EVP_set_default_properties(libctx,
                                                   "?provider=default"));
    for (i = 0; i < 4; i++)
        if ((s[i] = EVP_MAC_CTX_new(mac)) != NULL)
            rc(r, "set", EVP_MAC_CTX_set_params(s[i], byname));
    rc(r, "properties", EVP_set_default_properties(libctx,
                                                   "?provider=kctestmd"));
    /* one keying each: the key is looked up, and admitted at the third */
    before = kct_testmd_updates;
    for (i = 0; i < 4; i++) {
        if (s[i] == NULL)
            continue;
        init_key(r, s[i], NULL, 5, 32);
        finish(r, s[i], "stale");
        EVP_MAC_CTX_free(s[i]);
    }
    kct_rec_printf(r, "kctestmd updates %d", kct_testmd_updates - before);
    if ((c = EVP_MAC_CTX_new(mac)) != NULL) {
        rc(r, "set", EVP_MAC_CTX_set_params(c, dflt));
        init_key(r, c, NULL, 5, 32);
        finish(r, c, "fresh");
        before = kct_testmd_updates;
        rc(r, "theirs", EVP_MAC_CTX_set_params(c, theirs));
        init_key(r, c, NULL, 5, 32);
        finish(r, c, "fresh theirs");
        kct_rec_printf(r, "kctestmd updates %d", kct_testmd_updates - before);
        kct_rec_errs(r);
        EVP_MAC_CTX_free(c);
    }
}

/*
 * On a thread's first keyings, then past them: a context keyed with the
 * default's SHA-256 (asked for by its properties) then re-stated to theirs
 * and keyed again, which its inner in the application's context resolves
 * as the default does (an inner in keycache's private context would keep
 * the default's: a limit of the private path, docs/limits.md); then the
 * default's (the application's context must be told the query: by name
 * alone it finds kctestmd's) and theirs by default.
 */
static void p_other(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "HMAC", other_hmac_q);
    OSSL_PARAM dflt[3] = { digest("SHA256"),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                         "provider=default", 0),
        OSSL_PARAM_END };
    OSSL_PARAM theirs[2] = { digest("SHA256"), OSSL_PARAM_END };
    static const int order[] = { 3, 0, 1, 2 };
    int j, i, before;

    /* twice: the second round is past the thread's first misses */
    for (j = 0; j < 8; j++) {
        EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;

        if (c == NULL)
            break;
        i = order[j % 4];
        kct_rec_printf(r, "-- case %d", i);
        kct_rec_errs(r);
        before = kct_testmd_updates;
        rc(r, "set", EVP_MAC_CTX_set_params(c, i == 1 ? theirs : dflt));
        init_key(r, c, NULL, i, 32);
        if (i == 3)
            rc(r, "theirs after", EVP_MAC_CTX_set_params(c, theirs));
        finish(r, c, "other");
        init_key(r, c, NULL, i, 32);
        finish(r, c, "again");
        kct_rec_printf(r, "kctestmd updates %d", kct_testmd_updates - before);
        kct_rec_errs(r);
        EVP_MAC_CTX_free(c);
    }
    if (mac != NULL)
        other_stale(libctx, r, mac, dflt);
    EVP_MAC_free(mac);
}

/* another provider's digest beside the default's, on a new thread */
static void test_other_provider(void)
{
    KCT_OTHER o;
    REC def = { 0 }, got = { 0 };

    CU_ASSERT_FATAL(kct_testmd_begin());
    CU_ASSERT_FATAL(kct_other_start_conf(&o, "kctestmd", OSSL_OP_DIGEST,
                                         kct_testmd_algs, "-admit_after\n"));
    CU_ASSERT_FATAL(EVP_set_default_properties(o.ref, "?provider=kctestmd")
                    && EVP_set_default_properties(o.kc,
                                                  "?provider=kctestmd"));
    other_hmac_q = NULL;
    kct_rec_run(p_other, o.ref, &def);
    other_hmac_q = "provider=" KEYCACHE_PROVIDER_NAME;
    CU_ASSERT_FATAL(kct_rec_run_thread(p_other, o.kc, &got));
    CU_ASSERT_TRUE(kct_rec_same("[other] first keyings of a thread", &def,
                                &got));
    /* both SHA-256s ran in the reference */
    CU_ASSERT(def.buf != NULL && strstr(def.buf, "kctestmd updates 0") != NULL
              && strstr(def.buf, "kctestmd updates 4") != NULL);
    kct_rec_free(&def);
    kct_rec_free(&got);
    kct_other_stop(&o);
    kct_testmd_end();
}

/*
 * The application unloads its default provider while its contexts live
 * (they keep working: they hold the provider): keyed again, and a context
 * set before keyed for the first time.  A fetch in the application's
 * context would fail now; keycache must not leave that failure's errors
 * behind a call that succeeds.
 */
static OSSL_PROVIDER *unload_me;

static void p_unload(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c1 = new_ctx(libctx, r), *c2 = new_ctx(libctx, r);
    EVP_MAC_CTX *c3 = new_ctx(libctx, r);
    OSSL_PARAM p[2] = { digest("SHA256"), OSSL_PARAM_END };
    int one = 1;
    OSSL_PARAM oneshot[2] = {
        OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_ONESHOT, &one),
        OSSL_PARAM_END };
    int i;

    if (c1 != NULL && c2 != NULL && c3 != NULL) {
        rc(r, "set", EVP_MAC_CTX_set_params(c1, p));
        rc(r, "set", EVP_MAC_CTX_set_params(c2, p));
        rc(r, "set", EVP_MAC_CTX_set_params(c3, p));
        init_key(r, c1, NULL, 0, 32);
        finish(r, c1, "before");
        rc(r, "unload", OSSL_PROVIDER_unload(unload_me));
        for (i = 0; i < 6; i++) {
            init_key(r, c1, NULL, i % 3, 32);
            finish(r, c1, "after");
        }
        init_key(r, c2, NULL, 1, 32);
        finish(r, c2, "first after");
        /*
         * keyed now (keycache's inner a private one), passed through by a
         * flag no keyless init undoes, then named a digest: the
         * application's context, without its default, finds none
         */
        init_key(r, c3, NULL, 2, 32);
        rc(r, "oneshot", EVP_MAC_CTX_set_params(c3, oneshot));
        rc(r, "digest again", EVP_MAC_CTX_set_params(c3, p));
        finish(r, c3, "passed through");
    }
    EVP_MAC_CTX_free(c1);
    EVP_MAC_CTX_free(c2);
    EVP_MAC_CTX_free(c3);
}

/* the test config, its default not activated (the test loads it) */
static void no_default(FILE *out, const char *line, void *arg)
{
    (void)arg;
    if (line != NULL && strncmp(line, "default = ", 10) != 0
        && strncmp(line, "admit_after", 11) != 0)
        fputs(line, out);
}

static int unload_same(const REC *def, const REC *got)
{
    return kct_rec_same("[unload] the application's default unloaded", def,
                        got);
}

static void test_unload(void)
{
    CU_ASSERT_TRUE(kct_unload_child(p_unload, &unload_me, no_default,
                                    unload_same));
}

static void final_rec(REC *r, EVP_MAC_CTX *c, const char *what);

/*
 * The application's default unloaded while a thread's first contexts are
 * deferred (families/hmac.c), one of them copied before.
 */
static void p_unload_deferred(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c1 = new_ctx(libctx, r), *c2 = new_ctx(libctx, r), *d = NULL;
    OSSL_PARAM p[2] = { digest("SHA256"), OSSL_PARAM_END };

    if (c1 != NULL && c2 != NULL) {
        rc(r, "set", EVP_MAC_CTX_set_params(c2, p));
        init_key(r, c1, "SHA2-384", 0, 32);
        rc(r, "update", EVP_MAC_update(c1, msg, 100));
        d = EVP_MAC_CTX_dup(c1);
        rc(r, "unload", OSSL_PROVIDER_unload(unload_me));
        final_rec(r, c1, "final");
        rc(r, "update after", EVP_MAC_update(c1, msg, 10));
        final_rec(r, c1, "final again");
        rc(r, "keyless", EVP_MAC_init(c1, NULL, 0, NULL));
        finish(r, c1, "after keyless");
        init_key(r, c2, NULL, 1, 32);
        finish(r, c2, "first after");
        if (d != NULL) {
            rc(r, "update", EVP_MAC_update(d, msg, 200));
            finish(r, d, "dup");
        }
    }
    EVP_MAC_CTX_free(d);
    EVP_MAC_CTX_free(c1);
    EVP_MAC_CTX_free(c2);
}
static int unload_deferred_same(const REC *def, const REC *got)
{
    return kct_rec_same("[unload] the default unloaded while deferred", def,
                        got);
}

static void test_unload_deferred(void)
{
    CU_ASSERT_TRUE(kct_unload_child(p_unload_deferred, &unload_me, no_default,
                                    unload_deferred_same));
}

/*
 * A template keyed, then the default properties changed to a query that
 * finds the same digest, then copies keyed per message (libssl's record
 * MAC, rust-openssl): the copies are cached still.  (A change that picks
 * another digest passes them through: other_stale().)
 */
static void *same_digest_main(void *arg)
{
    OSSL_LIB_CTX *ctx = arg;
    EVP_MAC *mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    EVP_MAC_CTX *t = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL, *c;
    OSSL_PARAM p[2] = { digest("SHA256"), OSSL_PARAM_END };
    unsigned char out[EVP_MAX_MD_SIZE];
    uint64_t hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    size_t n;
    int i, ok;

    ok = t != NULL && EVP_MAC_CTX_set_params(t, p)
         && EVP_MAC_init(t, keys[0], 32, NULL)
         && EVP_set_default_properties(ctx, "?provider="
                                       KEYCACHE_PROVIDER_NAME ",?fips=no");
    for (i = 0; ok && i < 20; i++) {
        ok = (c = EVP_MAC_CTX_dup(t)) != NULL
             && EVP_MAC_init(c, keys[0], 32, NULL)
             && EVP_MAC_update(c, msg, 64)
             && EVP_MAC_final(c, out, &n, sizeof(out));
        EVP_MAC_CTX_free(c);
    }
    hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS) - hits;
    EVP_set_default_properties(ctx, "?provider=" KEYCACHE_PROVIDER_NAME);
    EVP_MAC_CTX_free(t);
    EVP_MAC_free(mac);
    OPENSSL_thread_stop();
    return ok && hits >= 10 ? arg : NULL;
}

/*
 * A deferred context keyed again and again with its key (OpenVPN's
 * re-key per packet, on a thread's first context): keyed again, it is
 * looked up as any context keyed again, so the key is admitted and hits
 * within the thread's first misses.  Each MAC is the default's.
 */
static void *rekeyed_main(void *arg)
{
    OSSL_LIB_CTX *ctx = arg;
    EVP_MAC *mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[2] = { digest("SHA256"), OSSL_PARAM_END };
    unsigned char out[EVP_MAX_MD_SIZE], want[EVP_MAX_MD_SIZE];
    uint64_t hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    size_t n = 0, wn = 0;
    int i, ok;

    ok = c != NULL
         && EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL, keys[3],
                      32, msg, 40, want, sizeof(want), &wn) != NULL;
    /* looked up at the 2nd, admitted at the 4th, a hit at the 5th */
    for (i = 0; ok && i < 5; i++)
        ok = EVP_MAC_init(c, keys[3], 32, i == 0 ? p : NULL)
             && EVP_MAC_update(c, msg, 40)
             && EVP_MAC_final(c, out, &n, sizeof(out))
             && n == wn && memcmp(out, want, n) == 0;
    hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS) - hits;
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    OPENSSL_thread_stop();
    if (ok && hits == 0)
        fprintf(stderr, "\n  a deferred context keyed again: no hit\n");
    return ok && hits > 0 ? arg : NULL;
}

static void test_rekeyed_deferred(void)
{
    pthread_t th;
    void *ret = NULL;

    CU_ASSERT_FATAL(pthread_create(&th, NULL, rekeyed_main, deployed) == 0);
    pthread_join(th, &ret);
    CU_ASSERT_PTR_NOT_NULL(ret);
}

static void test_same_digest(void)
{
    pthread_t th;
    void *ret = NULL;

    CU_ASSERT_FATAL(pthread_create(&th, NULL, same_digest_main,
                                   deployed) == 0);
    pthread_join(th, &ret);
    CU_ASSERT_PTR_NOT_NULL(ret);
}

/*
 * ---- Deferred first keyings (families/hmac.c, KC_DEFER_MAX) ----
 * A thread's first keyings over a SHA digest keep key and message until
 * the final, which keycache computes itself; any other call first makes
 * the default's context by replaying them.  Each pattern below runs on a
 * new thread, so its keyings are such first ones.
 */
static void final_rec(REC *r, EVP_MAC_CTX *c, const char *what)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t n = 0;
    int ok = EVP_MAC_final(c, out, &n, sizeof(out));

    kct_rec_printf(r, "%s final rc=%d ", what, ok);
    if (ok)
        kct_rec_hex(r, out, n);
    kct_rec_errs(r);
}

static const char *d_md;
static size_t d_keylen, d_msglen;

/* a MAC in updates of 100 bytes, d_md keyed with d_keylen bytes */
static void p_d_sweep(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    size_t off, n;

    if (c == NULL)
        return;
    init_key(r, c, d_md, 0, d_keylen);
    for (off = 0; off < d_msglen; off += n) {
        n = d_msglen - off < 100 ? d_msglen - off : 100;
        rc(r, "update", EVP_MAC_update(c, msg + off, n));
    }
    final_rec(r, c, "sweep");
    EVP_MAC_CTX_free(c);
}

/* finished, copied, then finished again, updated, restarted */
static void p_d_spent(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r), *d;

    if (c == NULL)
        return;
    init_key(r, c, "SHA256", 1, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 32));
    final_rec(r, c, "first");
    if ((d = EVP_MAC_CTX_dup(c)) != NULL) {
        final_rec(r, d, "copy of finished");
        rc(r, "keyless copy", EVP_MAC_init(d, NULL, 0, NULL));
        final_rec(r, d, "copy restarted");
        EVP_MAC_CTX_free(d);
    }
    final_rec(r, c, "second");
    rc(r, "update after", EVP_MAC_update(c, msg, 10));
    final_rec(r, c, "third");
    rc(r, "keyless", EVP_MAC_init(c, NULL, 0, NULL));
    rc(r, "update", EVP_MAC_update(c, msg, 40));
    final_rec(r, c, "restarted");
    EVP_MAC_CTX_free(c);
    if ((c = new_ctx(libctx, r)) == NULL)
        return;
    init_key(r, c, "SHA2-384", 2, 48);
    rc(r, "update", EVP_MAC_update(c, msg, 20));
    final_rec(r, c, "first");
    rc(r, "update after", EVP_MAC_update(c, msg, 20));
    final_rec(r, c, "second");
    EVP_MAC_CTX_free(c);
}

/* keyless re-inits on a deferred context, an empty message, sizes asked */
static void p_d_restart(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    OSSL_PARAM q[2];
    size_t bs = 0;

    if (c == NULL)
        return;
    init_key(r, c, "SHA3-256", 3, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 50));
    rc(r, "keyless before final", EVP_MAC_init(c, NULL, 0, NULL));
    rc(r, "update", EVP_MAC_update(c, msg + 50, 60));
    final_rec(r, c, "restarted before final");
    EVP_MAC_CTX_free(c);
    if ((c = new_ctx(libctx, r)) == NULL)
        return;
    init_key(r, c, "SHA3-256", 3, 32);
    final_rec(r, c, "empty");
    rc(r, "keyless", EVP_MAC_init(c, NULL, 0, NULL));
    rc(r, "update", EVP_MAC_update(c, msg, 50));
    rc(r, "keyless mid-message", EVP_MAC_init(c, NULL, 0, NULL));
    rc(r, "update", EVP_MAC_update(c, msg + 50, 60));
    kct_rec_printf(r, "macsize=%zu", EVP_MAC_CTX_get_mac_size(c));
    final_rec(r, c, "restarted");
    rc(r, "keyless", EVP_MAC_init(c, NULL, 0, NULL));
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    q[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_BLOCK_SIZE, &bs);
    q[1] = OSSL_PARAM_construct_end();
    rc(r, "block size", EVP_MAC_CTX_get_params(c, q));
    kct_rec_printf(r, "block=%zu", bs);
    rc(r, "update", EVP_MAC_update(c, msg + 10, 10));
    final_rec(r, c, "asked");
    EVP_MAC_CTX_free(c);
}

/* copies mid-message and finished, each continued */
static void p_d_dup(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r), *d, *e = NULL;

    if (c == NULL)
        return;
    init_key(r, c, "SHA1", 4, 20);
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    d = EVP_MAC_CTX_dup(c);
    kct_rec_printf(r, "dup %s", d != NULL ? "ok" : "failed");
    rc(r, "update", EVP_MAC_update(c, msg + 10, 20));
    final_rec(r, c, "original");
    if (d != NULL) {
        rc(r, "update copy", EVP_MAC_update(d, msg + 40, 250));
        final_rec(r, d, "copy");
        e = EVP_MAC_CTX_dup(d);
        EVP_MAC_CTX_free(d);
    }
    d = EVP_MAC_CTX_dup(c);
    EVP_MAC_CTX_free(c);
    if (d != NULL) {
        final_rec(r, d, "copy of finished");
        rc(r, "keyless", EVP_MAC_init(d, NULL, 0, NULL));
        final_rec(r, d, "copy restarted");
        EVP_MAC_CTX_free(d);
    }
    if (e != NULL) {
        rc(r, "keyless", EVP_MAC_init(e, NULL, 0, NULL));
        rc(r, "update", EVP_MAC_update(e, msg, 5));
        final_rec(r, e, "copy of settled");
        EVP_MAC_CTX_free(e);
    }
}

/* parameters on a deferred context: digest, the same again, a new key */
static void p_d_params(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    OSSL_PARAM p[2] = { digest("SHA2-512"), OSSL_PARAM_END };

    if (c == NULL)
        return;
    init_key(r, c, "SHA256", 5, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    rc(r, "other digest", EVP_MAC_CTX_set_params(c, p));
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    final_rec(r, c, "digest changed unkeyed");
    rc(r, "keyless", EVP_MAC_init(c, NULL, 0, NULL));
    final_rec(r, c, "keyless");
    init_key(r, c, NULL, 5, 32);
    final_rec(r, c, "keyed again");
    EVP_MAC_CTX_free(c);
    if ((c = new_ctx(libctx, r)) == NULL)
        return;
    init_key(r, c, "SHA256", 1, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    p[0] = digest("SHA256");
    rc(r, "init with params", EVP_MAC_init(c, NULL, 0, p));
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    final_rec(r, c, "params at init");
    init_key(r, c, NULL, 2, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    init_key(r, c, NULL, 3, 16);
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    final_rec(r, c, "rekeyed mid-message");
    EVP_MAC_CTX_free(c);
}

/* an XOF final (refused by HMAC), then a plain one */
static void p_d_xof(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    unsigned char out[64];

    if (c == NULL)
        return;
    init_key(r, c, "SHA256", 1, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 10));
    rc(r, "xof final", EVP_MAC_finalXOF(c, out, 32));
    final_rec(r, c, "after xof");
    EVP_MAC_CTX_free(c);
}

/*
 * A key longer than the cache holds, which HMAC keys with its digest
 * (setkey_long()), then a TLS record MAC, which refuses such a key.
 */
static void p_d_tls_long(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r);
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    size_t recsize = 100;

    if (c == NULL)
        return;
    init_key(r, c, "SHA256", 0, 200);
    p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE, &recsize);
    rc(r, "record size", EVP_MAC_CTX_set_params(c, p));
    rc(r, "header", EVP_MAC_update(c, msg + 200, 13));
    rc(r, "record", EVP_MAC_update(c, msg, 80));
    final_rec(r, c, "record");
    EVP_MAC_CTX_free(c);
}

/*
 * A context keyed on a thread past its first misses (remembering its key
 * there), then keyed on a new thread with that key (deferred), another
 * key, and the first again: it must never MAC with the key it held.
 */
static OSSL_LIB_CTX *mv_lib;
static EVP_MAC_CTX *mv_c;
static REC *mv_r;

static void *moved_first(void *arg)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t n, i;

    (void)arg;
    for (i = 0; i < 3; i++)
        (void)EVP_Q_mac(mv_lib, "HMAC", NULL, "SHA256", NULL, keys[5] + i,
                        32, msg, 10, out, sizeof(out), &n);
    ERR_clear_error();
    init_key(mv_r, mv_c, "SHA256", 2, 32);
    final_rec(mv_r, mv_c, "t0 K2");
    return NULL;
}

static void moved(OSSL_LIB_CTX *libctx, REC *r, int longk)
{
    pthread_t t;

    if ((mv_c = new_ctx(libctx, r)) == NULL)
        return;
    mv_lib = libctx;
    mv_r = r;
    if (pthread_create(&t, NULL, moved_first, NULL) != 0) {
        EVP_MAC_CTX_free(mv_c);
        return;
    }
    pthread_join(t, NULL);
    init_key(r, mv_c, NULL, 2, 32);
    final_rec(r, mv_c, "K2 on new thread");
    if (longk) {
        init_key(r, mv_c, NULL, 3, 200);
    } else {
        init_key(r, mv_c, NULL, 3, 32);
        kct_rec_printf(r, "block=%zu", EVP_MAC_CTX_get_block_size(mv_c));
    }
    final_rec(r, mv_c, "K3");
    init_key(r, mv_c, NULL, 2, 32);
    rc(r, "update", EVP_MAC_update(mv_c, msg, 10));
    final_rec(r, mv_c, "K2 again");
    EVP_MAC_CTX_free(mv_c);
}
static void p_d_moved(OSSL_LIB_CTX *libctx, REC *r)
{
    moved(libctx, r, 0);
}

static void p_d_moved_long(OSSL_LIB_CTX *libctx, REC *r)
{
    moved(libctx, r, 1);
}

/* EVP_PKEY HMAC signing, copies, a CBC-style record MAC (libssl's) */
static void p_d_pkey(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key_ex(libctx, "HMAC", NULL,
                                                  keys[1], 32);
    EVP_MD_CTX *m = EVP_MD_CTX_new(), *m2 = EVP_MD_CTX_new();
    unsigned char sig[EVP_MAX_MD_SIZE];
    size_t sl;
    OSSL_PARAM p[2];
    size_t recsize = 100;

    if (k == NULL || m == NULL || m2 == NULL)
        goto end;
    rc(r, "signinit",
       EVP_DigestSignInit_ex(m, NULL, "SHA256", libctx, NULL, k, NULL));
    rc(r, "upd", EVP_DigestSignUpdate(m, msg, 100));
    sl = 0;
    rc(r, "size", EVP_DigestSignFinal(m, NULL, &sl));
    kct_rec_printf(r, "sl=%zu", sl);
    sl = sizeof(sig);
    rc(r, "final", EVP_DigestSignFinal(m, sig, &sl));
    kct_rec_hex(r, sig, sl);
    rc(r, "copy", EVP_MD_CTX_copy_ex(m2, m));
    rc(r, "upd", EVP_DigestSignUpdate(m, msg, 200));
    sl = sizeof(sig);
    rc(r, "final2", EVP_DigestSignFinal(m, sig, &sl));
    kct_rec_hex(r, sig, sl);
    p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE, &recsize);
    p[1] = OSSL_PARAM_construct_end();
    rc(r, "tls", EVP_PKEY_CTX_set_params(EVP_MD_CTX_get_pkey_ctx(m2), p));
    rc(r, "hdr", EVP_DigestSignUpdate(m2, msg + 200, 13));
    rc(r, "rec", EVP_DigestSignUpdate(m2, msg, 100));
    sl = sizeof(sig);
    rc(r, "recfinal", EVP_DigestSignFinal(m2, sig, &sl));
    kct_rec_hex(r, sig, sl);
    sl = sizeof(sig);
    rc(r, "oneshot",
       EVP_DigestSignInit_ex(m, NULL, "SHA3-512", libctx, NULL, k, NULL)
       && EVP_DigestSign(m, sig, &sl, msg, 250));
    kct_rec_hex(r, sig, sl);
 end:
    EVP_MD_CTX_free(m);
    EVP_MD_CTX_free(m2);
    EVP_PKEY_free(k);
}

/* the key in the params, messages at the limit, copies of copies */
static void p_d_keyparam(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r), *d;
    OSSL_PARAM p[3];
    size_t sz = 0, bs = 0;

    if (c == NULL)
        return;
    p[0] = digest("SHA2-512");
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, keys[1], 100);
    p[2] = OSSL_PARAM_construct_end();
    rc(r, "set", EVP_MAC_CTX_set_params(c, p));
    rc(r, "update", EVP_MAC_update(c, msg, 256));
    d = EVP_MAC_CTX_dup(c);
    rc(r, "update", EVP_MAC_update(c, msg, 1));
    final_rec(r, c, "257");
    if (d != NULL) {
        EVP_MAC_CTX *e = EVP_MAC_CTX_dup(d);
        final_rec(r, d, "256");
        final_rec(r, d, "256 again");
        if (e != NULL) {
            p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
            p[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_BLOCK_SIZE, &bs);
            p[2] = OSSL_PARAM_construct_end();
            rc(r, "get", EVP_MAC_CTX_get_params(e, p));
            kct_rec_printf(r, "sz=%zu bs=%zu", sz, bs);
            final_rec(r, e, "dup of dup");
            EVP_MAC_CTX_free(e);
        }
        EVP_MAC_CTX_free(d);
    }
    EVP_MAC_CTX_free(c);
}

/* the default properties changed while deferred */
static void d_props(OSSL_LIB_CTX *libctx, REC *r, const char *q)
{
    EVP_MAC_CTX *c = new_ctx(libctx, r), *d = NULL;

    if (c == NULL)
        return;
    init_key(r, c, "SHA256", 1, 32);
    rc(r, "update", EVP_MAC_update(c, msg, 20));
    rc(r, "props", EVP_set_default_properties(libctx, q));
    d = EVP_MAC_CTX_dup(c);
    final_rec(r, c, "final");
    final_rec(r, c, "final again");
    rc(r, "keyless", EVP_MAC_init(c, NULL, 0, NULL));
    rc(r, "update", EVP_MAC_update(c, msg, 300));
    final_rec(r, c, "after keyless");
    kct_rec_printf(r, "block=%zu", EVP_MAC_CTX_get_block_size(c));
    kct_rec_errs(r);
    init_key(r, c, NULL, 2, 32);
    final_rec(r, c, "rekeyed");
    if (d != NULL) {
        kct_rec_printf(r, "block=%zu", EVP_MAC_CTX_get_block_size(d));
        kct_rec_errs(r);
        final_rec(r, d, "dup");
        EVP_MAC_CTX_free(d);
    }
    EVP_MAC_CTX_free(c);
    /* a fresh context under those properties */
    if ((c = new_ctx(libctx, r)) != NULL) {
        init_key(r, c, "SHA256", 3, 32);
        final_rec(r, c, "fresh");
        EVP_MAC_CTX_free(c);
    }
    rc(r, "props back",
       EVP_set_default_properties(libctx, "?provider=" KEYCACHE_PROVIDER_NAME));
}
static void p_d_fips(OSSL_LIB_CTX *libctx, REC *r)
{
    d_props(libctx, r, "fips=yes");
}

static void p_d_nodefault(OSSL_LIB_CTX *libctx, REC *r)
{
    d_props(libctx, r, "-provider=default");
}

static const struct {
    const char *name;
    kct_rec_fn fn;
} d_patterns[] = {
    { "fips", p_d_fips }, { "no-default", p_d_nodefault },
    { "moved", p_d_moved }, { "moved-long", p_d_moved_long },
    { "pkey", p_d_pkey }, { "key-param", p_d_keyparam },
    { "spent", p_d_spent }, { "restart", p_d_restart }, { "dup", p_d_dup },
    { "params", p_d_params }, { "xof", p_d_xof }, { "tls-long", p_d_tls_long },
};

static int d_same(const char *what, kct_rec_fn fn)
{
    REC def = { 0 }, got = { 0 };
    int same;

    kct_rec_run(fn, kct_default(), &def);
    same = kct_rec_run_thread(fn, deployed, &got)
           && kct_rec_same(what, &def, &got);
    kct_rec_free(&def);
    kct_rec_free(&got);
    return same;
}

static void test_deferred(void)
{
    /* the SHA digests deferred, the rest not (SHAKE is refused) */
    static const char *mds[] = { "SHA1", "SHA2-224", "SHA256", "SHA2-384",
                                 "SHA2-512", "SHA2-512/224", "SHA2-512/256",
                                 "SHA3-224", "SHA3-256", "SHA3-384",
                                 "SHA3-512", "SHAKE-128", "SHAKE-256",
                                 "KECCAK-KMAC-128", "MD5", "BLAKE2S-256" };
    static const size_t keylens[] = { 0, 1, 64, 65, 128, 129 };
    static const size_t msglens[] = { 0, 255, 256, 257, 300 };
    char what[96];
    size_t i, k, m;

    for (i = 0; i < sizeof(mds) / sizeof(mds[0]); i++)
        for (k = 0; k < sizeof(keylens) / sizeof(keylens[0]); k++)
            for (m = 0; m < sizeof(msglens) / sizeof(msglens[0]); m++) {
                d_md = mds[i];
                d_keylen = keylens[k];
                d_msglen = msglens[m];
                snprintf(what, sizeof(what), "[deferred %s key %zu msg %zu]",
                         d_md, d_keylen, d_msglen);
                CU_ASSERT_TRUE(d_same(what, p_d_sweep));
            }
    for (i = 0; i < sizeof(d_patterns) / sizeof(d_patterns[0]); i++) {
        snprintf(what, sizeof(what), "[deferred %s]", d_patterns[i].name);
        CU_ASSERT_TRUE(d_same(what, d_patterns[i].fn));
    }
}

static const struct {
    const char *name;
    kct_rec_fn fn;
} patterns[] = {
    { "qmac", p_qmac }, { "rekey", p_rekey }, { "dup", p_dup },
    { "unresettable", p_unresettable }, { "keys-props", p_keys_props },
    { "params", p_params }, { "process", p_process }, { "many", p_many },
};
#define NPATTERNS (sizeof(patterns) / sizeof(patterns[0]))

/* each pattern on a new thread of keycache, against the default */
static void test_threads(void)
{
    size_t i;

    for (i = 0; i < NPATTERNS; i++) {
        REC def = { 0 }, got = { 0 };
        char what[64];

        kct_rec_run(patterns[i].fn, kct_default(), &def);
        CU_ASSERT_FATAL(kct_rec_run_thread(patterns[i].fn, deployed, &got));
        snprintf(what, sizeof(what), "[%s] first keyings of a thread",
                 patterns[i].name);
        CU_ASSERT_TRUE(kct_rec_same(what, &def, &got));
        kct_rec_free(&def);
        kct_rec_free(&got);
    }
}

/* a fresh process's first HMAC: the default's records, unmasked */
static void test_process(void)
{
    static const char *names[] = { "process", "rekey", "params", "many" };
    char conf[KCT_PATH_LEN];
    size_t i;

    CU_ASSERT_FATAL(kct_write_conf(conf, "-admit_after\n"));
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char *def = NULL, *kc = NULL;

        CU_ASSERT_TRUE(kct_child_output(self, "/dev/null", names[i], &def));
        CU_ASSERT_TRUE(kct_child_output(self, conf, names[i], &kc));
        if (def != NULL && kc != NULL) {
            /* keycache served the second, not the first */
            CU_ASSERT_TRUE(strncmp(def, "served default\n", 15) == 0);
            CU_ASSERT_TRUE(strncmp(kc, "served keycache\n", 16) == 0);
            if (strstr(kc, "libcrypto's own fetches seen: yes") == NULL)
                fprintf(stderr, "\n[%s] note: libcrypto binds its own "
                        "EVP_MD_fetch calls: digests fetched elsewhere not "
                        "counted\n", names[i]);
            if (strchr(def, '\n') != NULL && strchr(kc, '\n') != NULL
                && strcmp(strchr(def, '\n'), strchr(kc, '\n')) != 0) {
                fprintf(stderr, "\n[%s] fresh process differs:\n--- "
                        "default\n%s--- keycache\n%s", names[i], def, kc);
                CU_FAIL("a fresh process's first HMAC differs");
            }
        }
        free(def);
        free(kc);
    }
    unlink(conf);
}

/*
 * Does EVP_MD_fetch() above see libcrypto's own calls?  Not where
 * libcrypto binds its calls to itself (-Bsymbolic-functions): then every
 * count is 0 and says nothing.  An HMAC in a new library context fetches
 * its digest there.
 */
static int own_fetches_seen(void)
{
    OSSL_LIB_CTX *l = OSSL_LIB_CTX_new();
    unsigned char out[EVP_MAX_MD_SIZE];
    int before = fetched_elsewhere;
    size_t n;

    if (l == NULL)
        return 0;
    (void)EVP_Q_mac(l, "HMAC", NULL, "SHA256", NULL, keys[0], 32, msg, 10,
                    out, sizeof(out), &n);
    OSSL_LIB_CTX_free(l);
    return fetched_elsewhere > before;
}

/* --child NAME: the pattern in the global context, as configured */
static int child(const char *name)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    REC r = { 0 };
    size_t i;

    printf("served %s\n", mac != NULL
           ? kct_provider_name(EVP_MAC_get0_provider(mac)) : "(none)");
    EVP_MAC_free(mac);
    for (i = 0; i < NPATTERNS; i++)
        if (strcmp(patterns[i].name, name) == 0)
            break;
    if (i == NPATTERNS)
        return 2;
    ERR_clear_error();
    fetched_elsewhere = 0;
    fetched_usual = -1;
    patterns[i].fn(NULL, &r);
    fputs(r.buf != NULL ? r.buf : "", stdout);
    printf("digests fetched outside the application's context: %d\n",
           fetched_usual >= 0 ? fetched_usual : fetched_elsewhere);
    kct_rec_free(&r);
    printf("libcrypto's own fetches seen: %s\n",
           own_fetches_seen() ? "yes" : "no");
    return 0;
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("hmac first keyings", NULL, NULL);

    CU_add_test(s, "a thread's first keyings, in the application's context",
                test_threads);
    CU_add_test(s, "a fresh process's first HMAC", test_process);
    CU_add_test(s, "deferred first keyings: every state the default's",
                test_deferred);
    CU_add_test(s, "another provider's digest, first keyings and past them",
                test_other_provider);
    CU_add_test(s, "the application's default unloaded", test_unload);
    CU_add_test(s, "the application's default unloaded while deferred",
                test_unload_deferred);
    CU_add_test(s, "copies after a change of the default properties",
                test_same_digest);
    CU_add_test(s, "a deferred context keyed again with its key",
                test_rekeyed_deferred);
}

int main(int argc, char **argv)
{
    int r;

    inputs();
    self = argv[0];
    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(argv[2]);
    deployed = kct_keycache_conf("-admit_after\n");
    if (deployed == NULL) {
        fprintf(stderr, "cannot load keycache with the deployed admission\n");
        return 1;
    }
    r = kct_main(argc, argv, add_suites);
    OSSL_LIB_CTX_free(deployed);
    return r;
}
