/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenSSL's own MAC users never reach keycache's cache.
 *
 * Under ?provider=keycache the default provider's KDFs and its HMAC-DRBG
 * would fetch HMAC (or CMAC, KMAC) from keycache and key it with secrets
 * OpenSSL derives (a TLS master secret, an HKDF PRK, a DRBG's K), and
 * AES-SIV would key keycache's CMAC with half of its key.  keycache serves
 * them as pass-through copies: KDFs in the application's library context,
 * every call of theirs marked so that the MAC contexts they make are cold
 * and uncounted (cache/store.c, kc_derive_enter()), the rest in keycache's
 * private library context.
 * Each case runs the same derivation in the default-only context and in
 * keycache's (keycache-test.cnf: admit_after = 1, so any key keycache's HMAC
 * saw twice would be cached), requires identical output, and requires that
 * keycache's HMAC was not used at all: hits, misses, pass-through and
 * entries unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "keycache.h"

typedef struct {
    uint64_t hits, misses, passthrough, entries;
} SNAP;

static void snap(SNAP *s)
{
    s->hits = kct_counter(KEYCACHE_PARAM_HITS);
    s->misses = kct_counter(KEYCACHE_PARAM_MISSES);
    s->passthrough = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);
    s->entries = kct_counter(KEYCACHE_PARAM_ENTRIES);
}

static int snap_equal(const SNAP *a, const SNAP *b)
{
    return a->hits == b->hits && a->misses == b->misses
           && a->passthrough == b->passthrough && a->entries == b->entries;
}

static const unsigned char secret[32] = "an internally derived secret!!!";
static const unsigned char salt[16] = "salt for a test";
static const unsigned char info[12] = { 'c', 'o', 'n', 't', 'e', 'x', 't',
                                         ' ', 'i', 'n', 'f', 'o' };

/* One EVP_KDF derivation in ctx; returns 1 and fills out on success. */
static int derive(OSSL_LIB_CTX *ctx, const char *name,
                  const OSSL_PARAM params[], unsigned char *out, size_t n,
                  const char **provider)
{
    EVP_KDF *kdf = EVP_KDF_fetch(ctx, name, NULL);
    EVP_KDF_CTX *kctx = kdf == NULL ? NULL : EVP_KDF_CTX_new(kdf);
    int ok = kctx != NULL && EVP_KDF_derive(kctx, out, n, params) == 1;

    if (kdf != NULL && provider != NULL)
        *provider = kct_provider_name(EVP_KDF_get0_provider(kdf));
    EVP_KDF_CTX_free(kctx);
    EVP_KDF_free(kdf);
    return ok;
}

/*
 * The calling thread's cache made and given wrappers back to pool, as in a
 * program that MACs itself: a MAC context a KDF makes next takes a pooled
 * wrapper on the fast path (store.c's KC_BYPASS_DERIVING), with or without.
 */
static void warm_thread(void)
{
    static const unsigned char app_key[32] = "the application's own key";
    unsigned char out[32];
    size_t n;
    int i;

    for (i = 0; i < 3; i++) {
        CU_ASSERT(EVP_Q_mac(kct_keycache(), "HMAC", NULL, "SHA256", NULL,
                            app_key, sizeof(app_key), info, sizeof(info), out,
                            sizeof(out), &n) != NULL);
        CU_ASSERT(EVP_Q_mac(kct_keycache(), "CMAC", NULL, "AES-256-CBC",
                            NULL, app_key, sizeof(app_key), info,
                            sizeof(info), out, sizeof(out), &n) != NULL);
    }
}

/*
 * Derive |reps| times with keycache (the same secret each time, so an HMAC
 * that reached the cache would be admitted and hit) and once with default.
 */
static void check_kdf(const char *name, const OSSL_PARAM params[])
{
    unsigned char want[64], got[64];
    const char *prov = NULL;
    SNAP before, after;
    int i;

    CU_ASSERT_FATAL(derive(kct_default(), name, params, want, sizeof(want),
                           NULL));
    warm_thread();
    snap(&before);
    for (i = 0; i < 4; i++) {
        memset(got, 0, sizeof(got));
        CU_ASSERT(derive(kct_keycache(), name, params, got, sizeof(got),
                         &prov));
        CU_ASSERT(memcmp(got, want, sizeof(want)) == 0);
    }
    snap(&after);
    if (prov != NULL)
        CU_ASSERT_STRING_EQUAL(prov, KEYCACHE_PROVIDER_NAME);
    if (!snap_equal(&before, &after))
        fprintf(stderr, "\n%s reached keycache's HMAC: hits +%llu misses +%llu"
                " pass-through +%llu entries %llu -> %llu\n", name,
                (unsigned long long)(after.hits - before.hits),
                (unsigned long long)(after.misses - before.misses),
                (unsigned long long)(after.passthrough - before.passthrough),
                (unsigned long long)before.entries,
                (unsigned long long)after.entries);
    CU_ASSERT(snap_equal(&before, &after));
}

#define OCT(n, v, l) OSSL_PARAM_construct_octet_string((n), (void *)(v), (l))
#define STR(n, v) OSSL_PARAM_construct_utf8_string((n), (char *)(v), 0)

static void test_hkdf(void)
{
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        OCT(OSSL_KDF_PARAM_KEY, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OCT(OSSL_KDF_PARAM_INFO, info, sizeof(info)),
        OSSL_PARAM_END
    };

    check_kdf("HKDF", p);
}

static void test_tls13_kdf(void)
{
    int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    OSSL_PARAM p[] = {
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
        STR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        OCT(OSSL_KDF_PARAM_KEY, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_PREFIX, "tls13 ", 6),
        OCT(OSSL_KDF_PARAM_LABEL, "key", 3),
        OCT(OSSL_KDF_PARAM_DATA, "", 0),
        OSSL_PARAM_END
    };

    check_kdf("TLS13-KDF", p);
}

static void test_tls1_prf(void)
{
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        OCT(OSSL_KDF_PARAM_SECRET, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SEED, "key expansion", 13),
        OCT(OSSL_KDF_PARAM_SEED, salt, sizeof(salt)),
        OSSL_PARAM_END
    };

    check_kdf("TLS1-PRF", p);
}

static void test_pbkdf2(void)
{
    int iter = 50;
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        OCT(OSSL_KDF_PARAM_PASSWORD, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_ITER, &iter),
        OSSL_PARAM_END
    };

    check_kdf("PBKDF2", p);
}

static void test_kbkdf(void)
{
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_MAC, "HMAC"),
        STR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        OCT(OSSL_KDF_PARAM_KEY, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OCT(OSSL_KDF_PARAM_INFO, info, sizeof(info)),
        OSSL_PARAM_END
    };

    check_kdf("KBKDF", p);
}

static void test_sskdf(void)
{
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_MAC, "HMAC"),
        STR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        OCT(OSSL_KDF_PARAM_KEY, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OCT(OSSL_KDF_PARAM_INFO, info, sizeof(info)),
        OSSL_PARAM_END
    };

    check_kdf("SSKDF", p);
}

/* The KDFs that use the template families: CMAC and KMAC inside */
static void test_kbkdf_cmac(void)
{
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_MAC, "CMAC"),
        STR(OSSL_KDF_PARAM_CIPHER, "AES-128-CBC"),
        OCT(OSSL_KDF_PARAM_KEY, secret, 16),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OCT(OSSL_KDF_PARAM_INFO, info, sizeof(info)),
        OSSL_PARAM_END
    };

    check_kdf("KBKDF", p);
}

/*
 * KBKDF takes KMAC from OpenSSL 3.1 on (the running libcrypto's version);
 * before, keycache's configuration refuses it as the default does.
 */
static void test_kbkdf_kmac(void)
{
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_MAC, "KMAC128"),
        OCT(OSSL_KDF_PARAM_KEY, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OCT(OSSL_KDF_PARAM_INFO, info, sizeof(info)),
        OSSL_PARAM_END
    };
    unsigned char out[64];

    if (OPENSSL_version_major() == 3 && OPENSSL_version_minor() == 0) {
        CU_ASSERT(!derive(kct_default(), "KBKDF", p, out, sizeof(out), NULL));
        CU_ASSERT(!derive(kct_keycache(), "KBKDF", p, out, sizeof(out),
                          NULL));
        ERR_clear_error();
        return;
    }
    check_kdf("KBKDF", p);
}

static void test_sskdf_kmac(void)
{
    OSSL_PARAM p[] = {
        STR(OSSL_KDF_PARAM_MAC, "KMAC256"),
        OCT(OSSL_KDF_PARAM_KEY, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OCT(OSSL_KDF_PARAM_INFO, info, sizeof(info)),
        OSSL_PARAM_END
    };

    check_kdf("SSKDF", p);
}

/*
 * AES-SIV's S2V is a CMAC keyed with half of the SIV key, which the
 * default's SIV fetches itself: it must not reach keycache's CMAC.
 */
static int siv_seal(OSSL_LIB_CTX *ctx, unsigned char *out)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(ctx, "AES-128-SIV", NULL);
    EVP_CIPHER_CTX *cc = EVP_CIPHER_CTX_new();
    int n = 0, m = 0, ok;

    ok = c != NULL && cc != NULL
         && EVP_EncryptInit_ex2(cc, c, secret, NULL, NULL)
         && EVP_EncryptUpdate(cc, NULL, &n, info, sizeof(info))
         && EVP_EncryptUpdate(cc, out + 16, &n, salt, sizeof(salt))
         && EVP_EncryptFinal_ex(cc, out + 16 + n, &m)
         && EVP_CIPHER_CTX_ctrl(cc, EVP_CTRL_AEAD_GET_TAG, 16, out) > 0;
    EVP_CIPHER_CTX_free(cc);
    EVP_CIPHER_free(c);
    return ok;
}

/*
 * Open siv_seal()'s |in| in |ctx| (on a copy of the keyed context if
 * |copy|), its tag flipped if |forge|: 1 if it opens to salt.
 */
static int siv_open(OSSL_LIB_CTX *ctx, const unsigned char *in, int copy,
                    int forge)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(ctx, "AES-128-SIV", NULL);
    EVP_CIPHER_CTX *k = EVP_CIPHER_CTX_new();
    EVP_CIPHER_CTX *cc = copy ? EVP_CIPHER_CTX_new() : k;
    unsigned char tag[16], pt[sizeof(salt)];
    int n = 0, m = 0, ok;

    memcpy(tag, in, sizeof(tag));
    tag[0] ^= forge;
    ok = c != NULL && k != NULL && cc != NULL
         && EVP_DecryptInit_ex2(k, c, secret, NULL, NULL)
         && (!copy || EVP_CIPHER_CTX_copy(cc, k))
         && EVP_CIPHER_CTX_ctrl(cc, EVP_CTRL_AEAD_SET_TAG, 16, tag) > 0
         && EVP_DecryptUpdate(cc, NULL, &n, info, sizeof(info))
         && EVP_DecryptUpdate(cc, pt, &n, in + 16, sizeof(salt))
         && EVP_DecryptFinal_ex(cc, pt + n, &m) > 0
         && n + m == (int)sizeof(salt)
         && memcmp(pt, salt, sizeof(salt)) == 0;
    if (copy)
        EVP_CIPHER_CTX_free(cc);
    EVP_CIPHER_CTX_free(k);
    EVP_CIPHER_free(c);
    ERR_clear_error();
    return ok;
}

/*
 * AES-SIV keys a CMAC with half of its key.  Served by keycache, the SIV
 * key is one entry (admitted at once by the test config) and hits after
 * that; the CMAC inside runs in keycache's private context and adds
 * nothing.  With aes_siv = off, SIV is passed through and touches no
 * counter at all.  With no cipher wrapped at all on 3.5+, where passing
 * SIV through would pass every cipher through (EVP_SKEY), the default's
 * own SIV keys keycache's CMAC: its key is refused (a cipher entry point
 * keyed it, cache/origin.c), so nothing is stored and nothing hits.
 */
static void test_siv(void)
{
    unsigned char want[16 + sizeof(salt)], got[sizeof(want)];
    static const char *const names[4] = {
        KEYCACHE_PARAM_HITS, KEYCACHE_PARAM_MISSES,
        KEYCACHE_PARAM_PASSTHROUGH, KEYCACHE_PARAM_ENTRIES
    };
    static const uint64_t cached[4] = { 3, 1, 0, 1 };
    static const char *const what[3] = { "on", "off", "off, no cipher" };
    int before35 = OpenSSL_version_num() < 0x30500000UL;
    OSSL_LIB_CTX *off = kct_keycache_conf("aes_siv = off\n");
    OSSL_LIB_CTX *bare = kct_keycache_conf("aes_siv = off\naes_ocb = off\n"
                                           "aes_gcm = off\n");
    OSSL_LIB_CTX *ctxs[3];
    EVP_CIPHER *c;
    uint64_t before[4], after[4], d;
    int i, k, n;

    CU_ASSERT_FATAL(off != NULL && bare != NULL);
    ctxs[0] = kct_keycache();
    ctxs[1] = off;
    ctxs[2] = bare;
    CU_ASSERT_FATAL(siv_seal(kct_default(), want));
    c = EVP_CIPHER_fetch(bare, "AES-128-SIV", NULL);
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_STRING_EQUAL(OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c)),
                           before35 ? KEYCACHE_PROVIDER_NAME : "default");
    EVP_CIPHER_free(c);
    for (k = 0; k < 3; k++) {
        for (n = 0; n < 4; n++)
            before[n] = kct_counter_in(ctxs[k], names[n]);
        for (i = 0; i < 4; i++) {
            memset(got, 0, sizeof(got));
            CU_ASSERT(siv_seal(ctxs[k], got));
            CU_ASSERT(memcmp(got, want, sizeof(want)) == 0);
        }
        for (n = 0; n < 4; n++) {
            after[n] = kct_counter_in(ctxs[k], names[n]);
            d = after[n] - before[n];
            /* the refused CMAC's misses and pass-throughs: below */
            if (k == 2 && !before35 && (n == 1 || n == 2))
                continue;
            if (d != (k == 0 ? cached[n] : 0))
                fprintf(stderr, "\nAES-SIV (aes_siv %s): %s +%llu, want "
                        "+%llu\n", what[k], names[n], (unsigned long long)d,
                        (unsigned long long)(k == 0 ? cached[n] : 0));
            CU_ASSERT(d == (k == 0 ? cached[n] : 0));
        }
    }
    if (!before35) {
        EVP_MAC *cmac = EVP_MAC_fetch(bare, "CMAC", NULL);

        /* the default's SIV did reach keycache's CMAC */
        CU_ASSERT(after[1] - before[1] + after[2] - before[2] >= 4);
        CU_ASSERT_FATAL(cmac != NULL);
        CU_ASSERT_STRING_EQUAL(
            OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(cmac)),
            KEYCACHE_PROVIDER_NAME);
        EVP_MAC_free(cmac);
    }
    /* opened, on a copy too, and a forged tag refused, as the default */
    for (k = 0; k < 2; k++) {
        CU_ASSERT(siv_open(kct_default(), want, k, 0));
        CU_ASSERT(siv_open(bare, want, k, 0));
        CU_ASSERT(!siv_open(kct_default(), want, k, 1));
        CU_ASSERT(!siv_open(bare, want, k, 1));
    }
    CU_ASSERT(kct_counter_in(bare, KEYCACHE_PARAM_ENTRIES) == 0);
    OSSL_LIB_CTX_free(bare);
    OSSL_LIB_CTX_free(off);
    ERR_clear_error();
}

/* EVP_PKEY_derive with an HKDF key: the default's kdf exchange fetches it */
static int pkey_hkdf(OSSL_LIB_CTX *ctx, unsigned char *out, size_t n)
{
    EVP_PKEY_CTX *pctx = EVP_PKEY_CTX_new_from_name(ctx, "HKDF", NULL);
    size_t len = n;
    int ok = pctx != NULL
             && EVP_PKEY_derive_init(pctx) == 1
             && EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) == 1
             && EVP_PKEY_CTX_set1_hkdf_key(pctx, secret, sizeof(secret)) == 1
             && EVP_PKEY_CTX_set1_hkdf_salt(pctx, salt, sizeof(salt)) == 1
             && EVP_PKEY_CTX_add1_hkdf_info(pctx, info, sizeof(info)) == 1
             && EVP_PKEY_derive(pctx, out, &len) == 1 && len == n;

    EVP_PKEY_CTX_free(pctx);
    return ok;
}

static void test_pkey_hkdf(void)
{
    unsigned char want[42], got[42];
    SNAP before, after;
    int i;

    CU_ASSERT_FATAL(pkey_hkdf(kct_default(), want, sizeof(want)));
    warm_thread();
    snap(&before);
    for (i = 0; i < 4; i++) {
        CU_ASSERT(pkey_hkdf(kct_keycache(), got, sizeof(got)));
        CU_ASSERT(memcmp(got, want, sizeof(want)) == 0);
    }
    snap(&after);
    CU_ASSERT(snap_equal(&before, &after));
}

/*
 * HMAC-DRBG over a TEST-RAND parent with fixed entropy: deterministic, so
 * both contexts must produce the same bytes; its K changes with every
 * request but is re-keyed several times within one.
 */
static int drbg_bytes(OSSL_LIB_CTX *ctx, unsigned char *out, size_t n)
{
    static unsigned char entropy[256];
    unsigned int strength = 256;
    EVP_RAND *tr = EVP_RAND_fetch(ctx, "TEST-RAND", NULL);
    EVP_RAND *hr = EVP_RAND_fetch(ctx, "HMAC-DRBG", NULL);
    EVP_RAND_CTX *parent = NULL, *drbg = NULL;
    OSSL_PARAM tp[4], hp[3];
    size_t i;
    int ok = 0;

    kct_fill(entropy, sizeof(entropy), 7);
    tp[0] = OSSL_PARAM_construct_uint(OSSL_RAND_PARAM_STRENGTH, &strength);
    tp[1] = OCT(OSSL_RAND_PARAM_TEST_ENTROPY, entropy, sizeof(entropy));
    tp[2] = OCT(OSSL_RAND_PARAM_TEST_NONCE, salt, sizeof(salt));
    tp[3] = OSSL_PARAM_construct_end();
    hp[0] = STR(OSSL_DRBG_PARAM_MAC, "HMAC");
    hp[1] = STR(OSSL_DRBG_PARAM_DIGEST, "SHA256");
    hp[2] = OSSL_PARAM_construct_end();
    if (tr == NULL || hr == NULL
        || (parent = EVP_RAND_CTX_new(tr, NULL)) == NULL
        || !EVP_RAND_instantiate(parent, strength, 0, NULL, 0, tp)
        || (drbg = EVP_RAND_CTX_new(hr, parent)) == NULL
        || !EVP_RAND_CTX_set_params(drbg, hp)
        || !EVP_RAND_instantiate(drbg, 0, 0, info, sizeof(info), NULL))
        goto end;
    for (i = 0; i < n; i += 100)
        if (!EVP_RAND_generate(drbg, out + i, n - i < 100 ? n - i : 100,
                               0, 0, NULL, 0))
            goto end;
    ok = 1;
 end:
    EVP_RAND_CTX_free(drbg);
    EVP_RAND_CTX_free(parent);
    EVP_RAND_free(hr);
    EVP_RAND_free(tr);
    return ok;
}

static void test_hmac_drbg(void)
{
    unsigned char want[400], got[400];
    SNAP before, after;

    CU_ASSERT_FATAL(drbg_bytes(kct_default(), want, sizeof(want)));
    snap(&before);
    CU_ASSERT(drbg_bytes(kct_keycache(), got, sizeof(got)));
    snap(&after);
    CU_ASSERT(memcmp(got, want, sizeof(want)) == 0);
    CU_ASSERT(snap_equal(&before, &after));
}

/* The application's own HMAC still is keycache's: the control case. */
/*
 * Blocks of 4 KiB or more keycache's own code allocates (its threads'
 * caches: wrappers are far smaller) on threads that set counting_big.
 * libcrypto's calls to CRYPTO_malloc go through the symbol table.
 */
static __thread int counting_big;
static int big_allocs;

void *CRYPTO_malloc(size_t num, const char *file, int line)
{
    static void *(*real)(size_t, const char *, int);
    Dl_info info_of;

    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "CRYPTO_malloc");
    if (counting_big && num >= 4096
        && dladdr(__builtin_return_address(0), &info_of) != 0
        && info_of.dli_fname != NULL
        && strstr(info_of.dli_fname, "keycache") != NULL)
        __atomic_add_fetch(&big_allocs, 1, __ATOMIC_RELAXED);
    return real != NULL ? real(num, file, line) : NULL;
}

typedef struct {
    OSSL_LIB_CTX *libctx;
    OSSL_LIB_CTX *other;        /* a keycache instance used first, or NULL */
    int cmac;                   /* KBKDF with CMAC, else TLS1-PRF */
    unsigned char first[16], last[16];
    int ok;
} REUSE;

/*
 * A new thread that used another instance first (so that its record is
 * that one's) or made and freed two MAC contexts of its own, then derives
 * again and again with one KDF context: TLS1-PRF, whose every
 * set_ctx_params frees its HMAC context and makes another (enough freed
 * wrappers would make the thread a cache to pool them in, and a context
 * made after that in the same call must be as cold as the first), or
 * KBKDF with CMAC (whose cipher name CMAC remembers in a cache).
 */
static void *reuse_kdf(void *arg)
{
    static const unsigned char k16[16] = "sixteen byte key";
    REUSE *u = arg;
    EVP_KDF *kdf = EVP_KDF_fetch(u->libctx, u->cmac ? "KBKDF" : "TLS1-PRF",
                                 NULL);
    EVP_KDF_CTX *k = kdf != NULL ? EVP_KDF_CTX_new(kdf) : NULL;
    EVP_MAC *mac = EVP_MAC_fetch(u->libctx, u->cmac ? "CMAC" : "HMAC", NULL);
    OSSL_PARAM prf[] = {
        STR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        OCT(OSSL_KDF_PARAM_SECRET, secret, sizeof(secret)),
        OCT(OSSL_KDF_PARAM_SEED, salt, sizeof(salt)),
        OSSL_PARAM_END
    }, kb[] = {
        STR(OSSL_KDF_PARAM_MAC, "CMAC"),
        STR(OSSL_KDF_PARAM_CIPHER, "AES-128-CBC"),
        OCT(OSSL_KDF_PARAM_KEY, k16, sizeof(k16)),
        OCT(OSSL_KDF_PARAM_SALT, salt, sizeof(salt)),
        OSSL_PARAM_END
    };
    unsigned char out[32];
    size_t n;
    int i;

    if (u->other != NULL)
        (void)EVP_Q_mac(u->other, "HMAC", NULL, "SHA256", NULL, k16,
                        sizeof(k16), info, sizeof(info), out, sizeof(out), &n);
    counting_big = 1;
    for (i = 0; u->other == NULL && mac != NULL && i < 2; i++)
        EVP_MAC_CTX_free(EVP_MAC_CTX_new(mac));
    u->ok = k != NULL && mac != NULL;
    for (i = 0; u->ok && i < 24; i++)
        u->ok = EVP_KDF_derive(k, i == 0 ? u->first : u->last, 16,
                               u->cmac ? kb : prf) == 1;
    counting_big = 0;
    EVP_MAC_free(mac);
    EVP_KDF_CTX_free(k);
    EVP_KDF_free(kdf);
    OPENSSL_thread_stop();
    return NULL;
}

static void run_reuse(OSSL_LIB_CTX *libctx, OSSL_LIB_CTX *other, int cmac,
                      REUSE *u)
{
    pthread_t t;

    memset(u, 0, sizeof(*u));
    u->libctx = libctx;
    u->other = other;
    u->cmac = cmac;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, reuse_kdf, u) == 0);
    pthread_join(t, NULL);
    CU_ASSERT(u->ok);
}

/*
 * ... as the default's, counting nothing, and a thread that only derives
 * makes no cache of keycache's (a TLS worker thread's memory).
 */
static void test_kdf_reused(void)
{
    static const char *const what[] = {
        "TLS1-PRF", "KBKDF (CMAC)", "TLS1-PRF, another instance's record"
    };
    OSSL_LIB_CTX *other = kct_keycache_conf("");
    REUSE want, got;
    SNAP before, after;
    int big, run;

    CU_ASSERT_FATAL(other != NULL);
    for (run = 0; run < 3; run++) {
        run_reuse(kct_default(), NULL, run == 1, &want);
        snap(&before);
        big = big_allocs;
        run_reuse(kct_keycache(), run == 2 ? other : NULL, run == 1, &got);
        snap(&after);
        CU_ASSERT(memcmp(want.first, got.first, 16) == 0
                  && memcmp(want.last, got.last, 16) == 0);
        if (!snap_equal(&before, &after) || big_allocs != big)
            fprintf(stderr, "\n%s reused: pass-through +%llu, keycache's"
                    " blocks of 4 KiB or more %d\n", what[run],
                    (unsigned long long)(after.passthrough
                                         - before.passthrough),
                    big_allocs - big);
        CU_ASSERT(snap_equal(&before, &after));
        CU_ASSERT_EQUAL(big_allocs, big);
    }
    OSSL_LIB_CTX_free(other);
}

/*
 * A thread whose record holds a cache of an instance another thread then
 * unloads (its library context freed), deriving afterwards in another
 * instance: nothing of the freed cache may be touched (ASan, valgrind).
 */
typedef struct {
    OSSL_LIB_CTX *first, *second;
    int keyed, freed, entries, ok;
} UNLOADED;

static void *cache_then_derive(void *arg)
{
    static const unsigned char k[32] = "a key of the first instance";
    UNLOADED *x = arg;
    unsigned char out[32];
    size_t n;
    REUSE u;
    int i;

    for (i = 0; i < 4; i++)
        (void)EVP_Q_mac(x->first, "HMAC", NULL, "SHA256", NULL, k, sizeof(k),
                        info, sizeof(info), out, sizeof(out), &n);
    x->entries = (int)kct_counter_in(x->first, KEYCACHE_PARAM_ENTRIES);
    __atomic_store_n(&x->keyed, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&x->freed, __ATOMIC_ACQUIRE))
        sched_yield();
    memset(&u, 0, sizeof(u));
    u.libctx = x->second;
    (void)reuse_kdf(&u);
    x->ok = u.ok;
    return NULL;
}

static void test_kdf_after_unload(void)
{
    UNLOADED x = { kct_keycache_conf(""), kct_keycache(), 0, 0, 0, 0 };
    pthread_t t;

    CU_ASSERT_FATAL(x.first != NULL);
    CU_ASSERT_FATAL(pthread_create(&t, NULL, cache_then_derive, &x) == 0);
    while (!__atomic_load_n(&x.keyed, __ATOMIC_ACQUIRE))
        sched_yield();
    OSSL_LIB_CTX_free(x.first);
    __atomic_store_n(&x.freed, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    /* the thread's record had a cache of the first instance's */
    CU_ASSERT(x.entries > 0);
    CU_ASSERT(x.ok);
}

static void test_app_hmac_still_cached(void)
{
    unsigned char a[32], b[32];
    size_t la = 0, lb = 0;
    SNAP before, after;
    int i;

    CU_ASSERT_FATAL(EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL,
                              secret, sizeof(secret), info, sizeof(info),
                              a, sizeof(a), &la) != NULL);
    snap(&before);
    for (i = 0; i < 4; i++) {
        CU_ASSERT(EVP_Q_mac(kct_keycache(), "HMAC", NULL, "SHA256", NULL,
                            secret, sizeof(secret), info, sizeof(info),
                            b, sizeof(b), &lb) != NULL);
        CU_ASSERT(la == lb && memcmp(a, b, la) == 0);
    }
    snap(&after);
    CU_ASSERT(after.hits > before.hits);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("internal HMAC users", NULL, NULL);

    CU_add_test(s, "HKDF", test_hkdf);
    CU_add_test(s, "TLS1-PRF, one context reused on a new thread",
                test_kdf_reused);
    CU_add_test(s, "a KDF after another instance's unload",
                test_kdf_after_unload);
    CU_add_test(s, "TLS13-KDF", test_tls13_kdf);
    CU_add_test(s, "TLS1-PRF", test_tls1_prf);
    CU_add_test(s, "PBKDF2", test_pbkdf2);
    CU_add_test(s, "KBKDF (HMAC)", test_kbkdf);
    CU_add_test(s, "SSKDF (HMAC)", test_sskdf);
    CU_add_test(s, "KBKDF (CMAC)", test_kbkdf_cmac);
    CU_add_test(s, "KBKDF (KMAC128)", test_kbkdf_kmac);
    CU_add_test(s, "SSKDF (KMAC256)", test_sskdf_kmac);
    CU_add_test(s, "AES-SIV (CMAC inside)", test_siv);
    CU_add_test(s, "EVP_PKEY HKDF derive", test_pkey_hkdf);
    CU_add_test(s, "HMAC-DRBG", test_hmac_drbg);
    CU_add_test(s, "control: the application's HMAC is cached",
                test_app_hmac_still_cached);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
