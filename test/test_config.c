/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Configuration behaviour: each keycache_sect setting changes what the
 * provider does, visibly in its counters, while output stays that of the
 * default provider; invalid values make loading the configuration fail with
 * an error on the queue.
 *
 * Every configuration is a temporary copy of the build tree's
 * keycache-test.cnf (openssl.cnf with aes_gcm = on) with lines of
 * [keycache_sect] replaced or added, loaded into a library
 * context of its own (so its counters start at zero).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "kc_route.h"
#include "keycache.h"
#include "common/registry.h"

static const unsigned char msg[] = "keycache configuration test message";
static const unsigned char aad[] = "additional data";
static const unsigned char iv[12] = {
    'c', 'o', 'n', 'f', 'i', 'g', ' ', 'i', 'v', ' ', '1', '2'
};

/* ---------------------------------------------------------------------- */
/* Temporary configurations                                               */

/*
 * Load the config with [keycache_sect] changed by |lines| (as for
 * kct_keycache_conf) into a new context, whether keycache starts in it or
 * not; NULL (error queue kept) on failure.
 */
static OSSL_LIB_CTX *ctx_with(const char *lines)
{
    char path[KCT_PATH_LEN];
    OSSL_LIB_CTX *ctx;
    int ok;

    if (!kct_write_conf(path, lines))
        return NULL;
    if ((ctx = OSSL_LIB_CTX_new()) == NULL) {
        unlink(path);
        return NULL;
    }
    ok = OSSL_LIB_CTX_load_config(ctx, path);
    unlink(path);
    if (!ok) {
        OSSL_LIB_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* ---------------------------------------------------------------------- */
/* Operations, run the same way against keycache and the reference        */

static int hmac(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                unsigned char out[32])
{
    size_t outlen = 0;

    return EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL, key, keylen, msg,
                     sizeof(msg), out, 32, &outlen) != NULL
           && outlen == 32;
}

/* AES-256-GCM seal with a fresh EVP_CIPHER_CTX: ciphertext then tag. */
static int seal(OSSL_LIB_CTX *ctx, const unsigned char key[32],
                unsigned char out[sizeof(msg) + 16])
{
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(ctx, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len, fin, ok;

    ok = cipher != NULL && c != NULL
         && EVP_EncryptInit_ex2(c, cipher, key, iv, NULL)
         && EVP_EncryptUpdate(c, NULL, &len, aad, sizeof(aad))
         && EVP_EncryptUpdate(c, out, &len, msg, sizeof(msg))
         && EVP_EncryptFinal_ex(c, out + len, &fin)
         && len + fin == (int)sizeof(msg)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                out + sizeof(msg)) > 0;
    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(cipher);
    return ok;
}

/* Both operations on |ctx| equal the default provider's, for |key|. */
static void check_output(OSSL_LIB_CTX *ctx, const unsigned char key[32])
{
    unsigned char got[sizeof(msg) + 16], want[sizeof(msg) + 16];

    CU_ASSERT_TRUE_FATAL(hmac(kct_default(), key, 32, want));
    CU_ASSERT_TRUE(hmac(ctx, key, 32, got));
    CU_ASSERT_EQUAL(memcmp(got, want, 32), 0);
    CU_ASSERT_TRUE_FATAL(seal(kct_default(), key, want));
    CU_ASSERT_TRUE(seal(ctx, key, got));
    CU_ASSERT_EQUAL(memcmp(got, want, sizeof(got)), 0);
}

/* Which provider |ctx| serves HMAC (mac) or AES-256-GCM (cipher) from. */
static const char *served_by(OSSL_LIB_CTX *ctx, int cipher)
{
    static char name[32];
    EVP_MAC *m;

    if (cipher)
        return kct_cipher_served(ctx, "AES-256-GCM");
    m = EVP_MAC_fetch(ctx, "HMAC", NULL);
    snprintf(name, sizeof(name), "%s",
             kct_provider_name(m != NULL ? EVP_MAC_get0_provider(m) : NULL));
    EVP_MAC_free(m);
    return name;
}

/*
 * Who serves an AES-GCM keycache does not wrap: the default before 3.5;
 * from 3.5, where keycache offers the default's EVP_SKEY key managers
 * while any cipher is on (these tests' config turns OCB and SIV on), its
 * pass-through of the default's own AES-GCM (passthrough.c), so that a
 * query-less key and cipher share a provider.  Either way nothing cached.
 */
static const char *unwrapped_gcm(void)
{
    return OpenSSL_version_num() >= 0x30500000UL
           ? KEYCACHE_PROVIDER_NAME " pass-through" : "default";
}

/* Both the MAC and the cipher are fetched from keycache in |ctx|. */
static void check_routed(OSSL_LIB_CTX *ctx)
{
    CU_ASSERT_STRING_EQUAL(served_by(ctx, 0), KEYCACHE_PROVIDER_NAME);
    CU_ASSERT_STRING_EQUAL(served_by(ctx, 1), KEYCACHE_PROVIDER_NAME);
}

/* ---------------------------------------------------------------------- */
/* Tests                                                                  */

static void test_defaults_cache(void)
{
    OSSL_LIB_CTX *ctx = ctx_with("");
    unsigned char key[32];
    int i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    check_routed(ctx);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE), 64);
    kct_fill(key, sizeof(key), 1);
    for (i = 0; i < 3; i++)
        check_output(ctx, key);
    /* first HMAC and first seal miss, the other four hit */
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES), 2);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), 4);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH), 0);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 2);
    OSSL_LIB_CTX_free(ctx);
}

/* One HMAC (cipher 0) or one seal (cipher 1); the output length, 0 on error. */
static size_t one_op(OSSL_LIB_CTX *ctx, int cipher, const unsigned char *key,
                     unsigned char out[sizeof(msg) + 16])
{
    if (cipher)
        return seal(ctx, key, out) ? sizeof(msg) + 16 : 0;
    return hmac(ctx, key, 32, out) ? 32 : 0;
}

/*
 * hmac = off (cipher 0) or aes_gcm = off (cipher 1): keycache does not wrap
 * that algorithm, so the default provider serves it directly (HMAC; AES-GCM
 * before 3.5) or keycache passes the default's own AES-GCM functions
 * through (3.5+, see unwrapped_gcm()): no wrapper, nothing counted, while
 * the other one is still served by keycache and cached.
 */
static void check_off(int cipher)
{
    OSSL_LIB_CTX *ctx = ctx_with(cipher ? "aes_gcm = off" : "hmac = off");
    unsigned char key[32], got[sizeof(msg) + 16], want[sizeof(msg) + 16];
    size_t n;
    int i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_STRING_EQUAL(served_by(ctx, cipher),
                           cipher ? unwrapped_gcm() : "default");
    CU_ASSERT_STRING_EQUAL(served_by(ctx, !cipher), KEYCACHE_PROVIDER_NAME);
    kct_fill(key, sizeof(key), 2 + cipher);
    n = one_op(kct_default(), cipher, key, want);
    CU_ASSERT_TRUE_FATAL(n != 0);
    for (i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(one_op(ctx, cipher, key, got), n);
        CU_ASSERT_EQUAL(memcmp(got, want, n), 0);
    }
    /* keycache never saw a call for the switched-off algorithm */
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH), 0);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), 0);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES), 0);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 0);

    /* the other algorithm is unaffected: its second use is a hit */
    check_output(ctx, key);
    check_output(ctx, key);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), 1);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 1);
    OSSL_LIB_CTX_free(ctx);
}

static void test_hmac_off(void)
{
    check_off(0);
}

static void test_gcm_off(void)
{
    check_off(1);
}

/*
 * aes_gcm = auto, and no aes_gcm line at all (the default): AES-GCM is
 * offered where caching it was measured to pay, OpenSSL 3.0, and left
 * unwrapped elsewhere (see docs/families.md, and unwrapped_gcm()).
 * HMAC is always offered.
 */
static void test_gcm_auto(void)
{
    static const char *const sets[2] = { "aes_gcm = auto", "-aes_gcm" };
    const char *want = OpenSSL_version_num() < 0x30100000UL
                       ? KEYCACHE_PROVIDER_NAME : unwrapped_gcm();
    unsigned char key[32];
    int i;

    kct_fill(key, sizeof(key), 12);
    for (i = 0; i < 2; i++) {
        OSSL_LIB_CTX *ctx = ctx_with(sets[i]);

        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        CU_ASSERT_STRING_EQUAL(served_by(ctx, 0), KEYCACHE_PROVIDER_NAME);
        CU_ASSERT_STRING_EQUAL(served_by(ctx, 1), want);
        check_output(ctx, key);
        /* the HMAC's miss, and the seal's where AES-GCM is wrapped */
        CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES),
                        strcmp(want, KEYCACHE_PROVIDER_NAME) == 0 ? 2 : 1);
        CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH), 0);
        OSSL_LIB_CTX_free(ctx);
    }
}

/* Which provider serves a MAC, KDF or DRBG by that name in |ctx|. */
static const char *mac_by(OSSL_LIB_CTX *ctx, int op, const char *alg)
{
    static char name[32];
    EVP_MAC *m = op == 0 ? EVP_MAC_fetch(ctx, alg, NULL) : NULL;
    EVP_KDF *k = op == 1 ? EVP_KDF_fetch(ctx, alg, NULL) : NULL;
    EVP_RAND *r = op == 2 ? EVP_RAND_fetch(ctx, alg, NULL) : NULL;
    const OSSL_PROVIDER *p = m != NULL ? EVP_MAC_get0_provider(m)
                             : k != NULL ? EVP_KDF_get0_provider(k)
                             : r != NULL ? EVP_RAND_get0_provider(r) : NULL;

    snprintf(name, sizeof(name), "%s", kct_provider_name(p));
    EVP_MAC_free(m);
    EVP_KDF_free(k);
    EVP_RAND_free(r);
    return name;
}

/*
 * cmac, gmac, kmac = off leave that family to default; the KDFs (which use
 * HMAC, CMAC and KMAC inside) stay pass-through while any MAC is offered,
 * and go back to default only when none is; HMAC-DRBG follows hmac.
 */
static void test_fam_off(void)
{
    static const char *const offs[] = {
        "cmac = off", "gmac = off", "kmac = off"
    };
    static const char *const macs[] = {
        "CMAC", "GMAC", "KMAC-128", "KMAC-256"
    };
    OSSL_LIB_CTX *ctx;
    size_t i, m;

    for (i = 0; i < 3; i++) {
        ctx = ctx_with(offs[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        for (m = 0; m < 4; m++) {
            /* kmac switches both KMACs */
            int off = m == i || (i == 2 && m == 3);

            CU_ASSERT_STRING_EQUAL(mac_by(ctx, 0, macs[m]),
                                   off ? "default" : KEYCACHE_PROVIDER_NAME);
        }
        CU_ASSERT_STRING_EQUAL(mac_by(ctx, 1, "KBKDF"),
                               KEYCACHE_PROVIDER_NAME);
        OSSL_LIB_CTX_free(ctx);
    }
    ctx = ctx_with("hmac = off\ncmac = off\ngmac = off");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_STRING_EQUAL(mac_by(ctx, 0, "HMAC"), "default");
    CU_ASSERT_STRING_EQUAL(mac_by(ctx, 0, "KMAC-128"), KEYCACHE_PROVIDER_NAME);
    CU_ASSERT_STRING_EQUAL(mac_by(ctx, 1, "SSKDF"), KEYCACHE_PROVIDER_NAME);
    CU_ASSERT_STRING_EQUAL(mac_by(ctx, 2, "HMAC-DRBG"), "default");
    OSSL_LIB_CTX_free(ctx);
    ctx = ctx_with("hmac = off\ncmac = off\ngmac = off\nkmac = off");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (m = 0; m < 4; m++)
        CU_ASSERT_STRING_EQUAL(mac_by(ctx, 0, macs[m]), "default");
    CU_ASSERT_STRING_EQUAL(mac_by(ctx, 1, "KBKDF"), "default");
    CU_ASSERT_STRING_EQUAL(mac_by(ctx, 2, "HMAC-DRBG"), "default");
    OSSL_LIB_CTX_free(ctx);
    ERR_clear_error();
}

/*
 * cmac, gmac, kmac, aes_ocb, aes_siv = auto, and no line at all: GMAC and
 * KMAC offered everywhere; CMAC, AES-OCB and AES-SIV before 3.5 only.  From
 * 3.5 a cipher offered means every cipher passed through for EVP_SKEY,
 * built at every process's first cipher fetch, and CMAC's isolation from
 * the default's AES-SIV needs one (docs/families.md): no cipher and no key
 * manager of keycache's is reached there.
 */
/* keycache's answer in |ctx| to a query for |op| is not empty */
static int offers(OSSL_LIB_CTX *ctx, int op)
{
    OSSL_PROVIDER *kc = kct_keycache_provider_in(ctx);
    const OSSL_ALGORITHM *a;
    int no_cache = 0, any;

    if (kc == NULL)
        return -1;
    a = OSSL_PROVIDER_query_operation(kc, op, &no_cache);
    any = a != NULL && a->algorithm_names != NULL;
    OSSL_PROVIDER_unquery_operation(kc, op, a);
    return any;
}

/* the operation's number, stable ABI, for headers older than 3.5 too */
#ifdef OSSL_OP_SKEYMGMT
# define KCT_OP_SKEYMGMT OSSL_OP_SKEYMGMT
#else
# define KCT_OP_SKEYMGMT 15
#endif

static void test_fam_auto(void)
{
    static const char *const sets[2] = {
        "cmac = auto\ngmac = auto\nkmac = auto\naes_gcm = auto\n"
        "aes_ocb = auto\naes_siv = auto",
        "-cmac\n-gmac\n-kmac\n-aes_gcm\n-aes_ocb\n-aes_siv"
    };
    static const char *const ciphers[] = {
        "AES-128-SIV", "AES-256-OCB", "AES-256-CBC", "ChaCha20-Poly1305"
    };
    int before35 = OpenSSL_version_num() < 0x30500000UL;
    const char *fam = before35 ? KEYCACHE_PROVIDER_NAME : "default";
    size_t c;
    int i;

    for (i = 0; i < 2; i++) {
        OSSL_LIB_CTX *ctx = ctx_with(sets[i]);
        EVP_CIPHER *ci;

        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        CU_ASSERT_STRING_EQUAL(mac_by(ctx, 0, "CMAC"), fam);
        CU_ASSERT_STRING_EQUAL(mac_by(ctx, 0, "GMAC"), KEYCACHE_PROVIDER_NAME);
        CU_ASSERT_STRING_EQUAL(mac_by(ctx, 0, "KMAC-256"),
                               KEYCACHE_PROVIDER_NAME);
        for (c = 0; c < sizeof(ciphers) / sizeof(ciphers[0]); c++) {
            ci = EVP_CIPHER_fetch(ctx, ciphers[c], NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ci);
            CU_ASSERT_STRING_EQUAL(
                OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(ci)),
                c < 2 ? fam : "default");
            EVP_CIPHER_free(ci);
        }
        /* no cipher at all, and (3.5+) no EVP_SKEY key manager */
        CU_ASSERT_EQUAL(offers(ctx, OSSL_OP_CIPHER), before35);
        CU_ASSERT_EQUAL(offers(ctx, KCT_OP_SKEYMGMT), 0);
#if OPENSSL_VERSION_NUMBER >= 0x30500000L
        {
            EVP_SKEYMGMT *km = EVP_SKEYMGMT_fetch(ctx, "AES", NULL);

            CU_ASSERT_PTR_NOT_NULL_FATAL(km);
            CU_ASSERT_STRING_EQUAL(
                OSSL_PROVIDER_get0_name(EVP_SKEYMGMT_get0_provider(km)),
                "default");
            EVP_SKEYMGMT_free(km);
        }
#endif
        OSSL_LIB_CTX_free(ctx);
    }
}

/*
 * Every configuration key of the registry, switched off, leaves exactly
 * its own rows to the default.  Told apart by the provider and, for a
 * cipher, by its functions: on 3.5+ keycache also passes the default's own
 * ciphers through (the EVP_SKEY key managers), under its own name.
 */
#define ROW_NAME(id, kind, conf, autorule, name, ...) name,
#define ROW_CONF(id, kind, conf, ...) conf,
#define ROW_CIPHER(id, kind, ...) (sizeof(#kind) == sizeof("CIPHER")),
static const char *const row_names[] = { KC_REGISTRY(ROW_NAME) };
static const char *const row_confs[] = { KC_REGISTRY(ROW_CONF) };
static const int row_cipher[] = { KC_REGISTRY(ROW_CIPHER) };
#define NROWS (sizeof(row_names) / sizeof(row_names[0]))

/* Is the implementation of row r in ctx keycache's own wrapper? */
static int wrapped(OSSL_LIB_CTX *ctx, size_t r)
{
    EVP_CIPHER *c = row_cipher[r] ? EVP_CIPHER_fetch(ctx, row_names[r], NULL)
                                  : NULL;
    EVP_MAC *m = row_cipher[r] ? NULL : EVP_MAC_fetch(ctx, row_names[r], NULL);
    const OSSL_PROVIDER *p = c != NULL ? EVP_CIPHER_get0_provider(c)
                             : m != NULL ? EVP_MAC_get0_provider(m) : NULL;
    int yes = p != NULL
              && strcmp(kct_provider_name(p), KEYCACHE_PROVIDER_NAME) == 0
              && (c == NULL || !kc_route_is_passthrough(ctx, c, row_names[r]));

    EVP_CIPHER_free(c);
    EVP_MAC_free(m);
    return yes;
}

/*
 * Each row's description is the default's (what `openssl list -verbose`
 * and EVP_*_get0_description() show), as is every other algorithm's that
 * keycache offers: a KDF it passes through, say.
 */
static int same_text(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void test_descriptions(void)
{
    OSSL_LIB_CTX *ctx = ctx_with(KEYCACHE_CONF_AES_GCM " = on");
    const char *say = NULL;
    size_t r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (r = 0; r < NROWS; r++) {
        EVP_CIPHER *c = NULL, *dc = NULL;
        EVP_MAC *m = NULL, *dm = NULL;
        int same;

        CU_ASSERT(wrapped(ctx, r));
        if (row_cipher[r]) {
            c = EVP_CIPHER_fetch(ctx, row_names[r], NULL);
            dc = EVP_CIPHER_fetch(kct_default(), row_names[r], NULL);
            same = c != NULL && dc != NULL
                   && same_text(say = EVP_CIPHER_get0_description(c),
                                EVP_CIPHER_get0_description(dc));
        } else {
            m = EVP_MAC_fetch(ctx, row_names[r], NULL);
            dm = EVP_MAC_fetch(kct_default(), row_names[r], NULL);
            same = m != NULL && dm != NULL
                   && same_text(say = EVP_MAC_get0_description(m),
                                EVP_MAC_get0_description(dm));
        }
        if (!same)
            printf("\n  %s: \"%s\"\n", row_names[r], say ? say : "(null)");
        CU_ASSERT(same);
        EVP_CIPHER_free(c);
        EVP_CIPHER_free(dc);
        EVP_MAC_free(m);
        EVP_MAC_free(dm);
    }
    {
        EVP_KDF *k = EVP_KDF_fetch(ctx, "HKDF", NULL);
        EVP_KDF *dk = EVP_KDF_fetch(kct_default(), "HKDF", NULL);

        CU_ASSERT(k != NULL && dk != NULL
                  && same_text(EVP_KDF_get0_description(k),
                               EVP_KDF_get0_description(dk)));
        EVP_KDF_free(k);
        EVP_KDF_free(dk);
    }
    OSSL_LIB_CTX_free(ctx);
    ERR_clear_error();
}

static void test_registry_off(void)
{
    char lines[128];
    size_t k, r;

    for (k = 0; k < NROWS; k++) {
        OSSL_LIB_CTX *ctx;

        if (k > 0 && strcmp(row_confs[k], row_confs[k - 1]) == 0)
            continue;           /* one key switches its rows together */
        snprintf(lines, sizeof(lines), "%s%s = off",
                 strcmp(row_confs[k], KEYCACHE_CONF_AES_GCM) == 0 ? ""
                 : KEYCACHE_CONF_AES_GCM " = on\n", row_confs[k]);
        ctx = ctx_with(lines);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        for (r = 0; r < NROWS; r++) {
            int off = strcmp(row_confs[r], row_confs[k]) == 0;

            if (wrapped(ctx, r) == off) {
                printf("\n  %s: %s is %s\n", lines, row_names[r],
                       off ? "still keycache's" : "not keycache's");
                CU_FAIL("a key switched another row");
            }
        }
        OSSL_LIB_CTX_free(ctx);
    }
    ERR_clear_error();
}

/* cache_size = 0: nothing is ever cached, everything passes through. */
static void test_cache_size_zero(void)
{
    OSSL_LIB_CTX *ctx = ctx_with("cache_size = 0");
    unsigned char key[32];
    uint64_t pass;
    int i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    check_routed(ctx);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE), 0);
    kct_fill(key, sizeof(key), 4);
    for (i = 0; i < 4; i++) {
        pass = kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH);
        check_output(ctx, key);
        /* one HMAC and one seal, both uncached */
        CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH), pass + 2);
    }
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), 0);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 0);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS), 0);
    OSSL_LIB_CTX_free(ctx);
}

/* cache_size is honoured: never more than that many entries. */
static void test_cache_size_small(void)
{
    OSSL_LIB_CTX *ctx = ctx_with("cache_size = 3");
    unsigned char key[32];
    uint32_t i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE), 3);
    for (i = 0; i < 10; i++) {
        kct_fill(key, sizeof(key), 100 + i);
        check_output(ctx, key);
        CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) <= 3);
    }
    /* 20 misses into 3 slots: 17 evictions */
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES), 20);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS), 17);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 3);
    OSSL_LIB_CTX_free(ctx);
}

/*
 * idle_ttl = 1: entries idle for two seconds are dropped on the thread's
 * next use of its cache, and the dropped keys miss afterwards.
 */
static void test_idle_ttl(void)
{
    OSSL_LIB_CTX *ctx = ctx_with("idle_ttl = 1");
    unsigned char a[32], b[32], c[32], out[32];
    uint64_t ev, hits, misses;
    time_t t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    /*
     * Entries are swept by whole seconds: start right after a tick so that
     * warming up does not straddle one and lose an entry early.
     */
    t0 = time(NULL);
    while (time(NULL) == t0)
        usleep(1000);
    kct_fill(a, sizeof(a), 7);
    kct_fill(b, sizeof(b), 8);
    kct_fill(c, sizeof(c), 9);
    CU_ASSERT_TRUE(hmac(ctx, a, sizeof(a), out));
    CU_ASSERT_TRUE(hmac(ctx, b, sizeof(b), out));
    CU_ASSERT_TRUE(hmac(ctx, c, sizeof(c), out));
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 3);
    /* still fresh: a hit */
    hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    CU_ASSERT_TRUE(hmac(ctx, a, sizeof(a), out));
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), hits + 1);

    ev = kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS);
    hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    misses = kct_counter_in(ctx, KEYCACHE_PARAM_MISSES);
    usleep(2100 * 1000);
    /* the use of a sweeps all three, then caches a again (a miss) */
    check_output(ctx, a);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS), ev + 3);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), hits);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES), misses + 2);
    /* a (HMAC) and a (GCM) are cached; b and c are gone */
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 2);
    misses = kct_counter_in(ctx, KEYCACHE_PARAM_MISSES);
    check_output(ctx, b);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES), misses + 2);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), hits);
    OSSL_LIB_CTX_free(ctx);
}

/* Does any error on the queue carry text mentioning |word|?  Clears it. */
static int errors_mention(const char *word)
{
    const char *data = NULL;
    unsigned long e;
    int flags = 0, found = 0;
    char buf[256];

    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        ERR_error_string_n(e, buf, sizeof(buf));
        if (strstr(buf, word) != NULL
            || ((flags & ERR_TXT_STRING) != 0 && data != NULL
                && strstr(data, word) != NULL))
            found = 1;
    }
    return found;
}

/*
 * An invalid value must stop keycache from starting, so it never runs with
 * a configuration the operator did not write.
 *
 * Through the config module (activate = 1) OpenSSL 3.0 treats a provider
 * that fails to activate as a non-fatal problem: OSSL_LIB_CTX_load_config()
 * returns 1 and CONF_modules_load_file_ex() discards the errors (see
 * provider_conf_load() and its ERR_set_mark/ERR_pop_to_mark).  So there we
 * check that keycache is absent and that the library still works; and with
 * the section loaded but not activated, an explicit OSSL_PROVIDER_load()
 * shows the provider's own error, which names the bad setting.
 */
static void check_rejected(const char *name, const char *value)
{
    char lines[128];
    OSSL_LIB_CTX *ctx;
    OSSL_PROVIDER *prov;
    unsigned char key[32], got[32], want[32];
    int loaded;

    snprintf(lines, sizeof(lines), "%s = %s", name, value);
    ERR_clear_error();
    ctx = ctx_with(lines);
    if (ctx != NULL) {
        loaded = OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME);
        CU_ASSERT_FALSE(loaded);
        if (loaded)
            fprintf(stderr, "\n  %s = %s: keycache started\n", name, value);
        /* HMAC still works, served by default */
        kct_fill(key, sizeof(key), 12);
        CU_ASSERT_TRUE(hmac(kct_default(), key, sizeof(key), want));
        CU_ASSERT_TRUE(hmac(ctx, key, sizeof(key), got));
        CU_ASSERT_EQUAL(memcmp(got, want, sizeof(want)), 0);
        OSSL_LIB_CTX_free(ctx);
    } else {
        CU_ASSERT_NOT_EQUAL(ERR_peek_error(), 0);
    }
    ERR_clear_error();

    /* the same section, not activated: load it by hand */
    snprintf(lines, sizeof(lines), "-activate\n%s = %s", name, value);
    ctx = ctx_with(lines);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    prov = OSSL_PROVIDER_load(ctx, KEYCACHE_PROVIDER_NAME);
    CU_ASSERT_PTR_NULL(prov);
    CU_ASSERT_NOT_EQUAL(ERR_peek_error(), 0);
    if (!errors_mention(name)) {
        fprintf(stderr, "\n  %s = %s: no error names the setting\n",
                name, value);
        CU_FAIL("error queue does not name the bad setting");
    }
    OSSL_PROVIDER_unload(prov);
    OSSL_LIB_CTX_free(ctx);
}

/* The not-activated route itself works with a valid section. */
static void test_load_by_hand(void)
{
    OSSL_LIB_CTX *ctx = ctx_with("-activate\ncache_size = 5");
    OSSL_PROVIDER *prov;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_FALSE(OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME));
    prov = OSSL_PROVIDER_load(ctx, KEYCACHE_PROVIDER_NAME);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prov);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE), 5);
    OSSL_PROVIDER_unload(prov);
    OSSL_LIB_CTX_free(ctx);
}

static void test_invalid_values(void)
{
    check_rejected("cache_size", "lots");
    check_rejected("cache_size", "-1");
    check_rejected("cache_size", "4097");
    check_rejected("cache_size", "");
    check_rejected("hmac", "maybe");
    check_rejected("aes_gcm", "2");
    check_rejected("aes_gcm", "automatic");
    check_rejected("cmac", "1x");
    check_rejected("gmac", "");
    check_rejected("kmac", "auto-on");
    check_rejected("idle_ttl", "soon");
    check_rejected("idle_ttl", "-5");
}

/* The bounds themselves are accepted. */
static void test_boundary_values(void)
{
    OSSL_LIB_CTX *ctx;
    unsigned char key[32];

    kct_fill(key, sizeof(key), 11);
    ctx = ctx_with("cache_size = 4096");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE), 4096);
    check_output(ctx, key);
    OSSL_LIB_CTX_free(ctx);

    ctx = ctx_with("hmac = yes\naes_gcm = TRUE");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    check_output(ctx, key);
    check_output(ctx, key);
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), 2);
    OSSL_LIB_CTX_free(ctx);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("config", NULL, NULL);

    CU_add_test(s, "test config caches both", test_defaults_cache);
    CU_add_test(s, "hmac = off leaves HMAC to default", test_hmac_off);
    CU_add_test(s, "aes_gcm = off leaves AES-GCM to default", test_gcm_off);
    CU_add_test(s, "aes_gcm = auto follows the OpenSSL version",
                test_gcm_auto);
    CU_add_test(s, "cmac, gmac, kmac = off leave them to default",
                test_fam_off);
    CU_add_test(s, "cmac, gmac, kmac, aes_ocb, aes_siv = auto", test_fam_auto);
    CU_add_test(s, "every row's description is the default's",
                test_descriptions);
    CU_add_test(s, "each registry key switches its own rows",
                test_registry_off);
    CU_add_test(s, "cache_size = 0 caches nothing", test_cache_size_zero);
    CU_add_test(s, "cache_size = 3 is the bound", test_cache_size_small);
    CU_add_test(s, "idle_ttl = 1 drops idle entries", test_idle_ttl);
    CU_add_test(s, "section loaded by hand", test_load_by_hand);
    CU_add_test(s, "invalid values stop keycache", test_invalid_values);
    CU_add_test(s, "boundary values load", test_boundary_values);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
