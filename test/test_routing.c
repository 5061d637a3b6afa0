/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which provider serves which fetch once keycache is configured.
 *
 * With the build tree's keycache-test.cnf (default + keycache, aes_gcm = on,
 * default_properties = ?provider=keycache) made the thread's default
 * context, query-less fetches of HMAC and AES-GCM must land on keycache,
 * and so must the KDFs and HMAC-DRBG (served as pass-through, so that their
 * inner HMAC cannot reach keycache); everything else on default; explicit
 * queries must still be honoured.
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "keycache.h"

#define KC  KEYCACHE_PROVIDER_NAME
#define DEF "default"

static const char *mac_provider(const char *name, const char *propq)
{
    EVP_MAC *m = EVP_MAC_fetch(NULL, name, propq);
    const char *p = m == NULL ? "(none)"
                              : kct_provider_name(EVP_MAC_get0_provider(m));

    EVP_MAC_free(m);
    ERR_clear_error();
    return p;
}

static const char *cipher_provider(const char *name, const char *propq)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, name, propq);
    const char *p = c == NULL ? "(none)"
                              : kct_provider_name(EVP_CIPHER_get0_provider(c));

    EVP_CIPHER_free(c);
    ERR_clear_error();
    return p;
}

static const char *md_provider(const char *name, const char *propq)
{
    EVP_MD *d = EVP_MD_fetch(NULL, name, propq);
    const char *p = d == NULL ? "(none)"
                              : kct_provider_name(EVP_MD_get0_provider(d));

    EVP_MD_free(d);
    ERR_clear_error();
    return p;
}

static const char *rand_provider(const char *name, const char *propq)
{
    EVP_RAND *r = EVP_RAND_fetch(NULL, name, propq);
    const char *p = r == NULL ? "(none)"
                              : kct_provider_name(EVP_RAND_get0_provider(r));

    EVP_RAND_free(r);
    ERR_clear_error();
    return p;
}

static const char *kdf_provider(const char *name, const char *propq)
{
    EVP_KDF *k = EVP_KDF_fetch(NULL, name, propq);
    const char *p = k == NULL ? "(none)"
                              : kct_provider_name(EVP_KDF_get0_provider(k));

    EVP_KDF_free(k);
    ERR_clear_error();
    return p;
}

/* Every test runs with keycache's context as the thread default. */
static int suite_init(void)
{
    kct_use(kct_keycache());
    return 0;
}

static int suite_clean(void)
{
    kct_use(NULL);
    return 0;
}

static void test_hmac_to_keycache(void)
{
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", NULL), KC);
    CU_ASSERT_STRING_EQUAL(mac_provider("hmac", NULL), KC);
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", ""), KC);
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", "provider=" KC), KC);
    /* the same fetch through the explicit context */
    {
        EVP_MAC *m = EVP_MAC_fetch(kct_keycache(), "HMAC", NULL);

        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_MAC_get0_provider(m)),
                               KC);
        EVP_MAC_free(m);
    }
}

static void test_gcm_to_keycache(void)
{
    static const char *names[] = {
        "AES-128-GCM", "AES-192-GCM", "AES-256-GCM",
        "aes-256-gcm", "id-aes128-GCM", "id-aes192-GCM", "id-aes256-GCM",
        "2.16.840.1.101.3.4.1.6", "2.16.840.1.101.3.4.1.26",
        "2.16.840.1.101.3.4.1.46", NULL
    };
    int i;

    for (i = 0; names[i] != NULL; i++) {
        const char *p = cipher_provider(names[i], NULL);

        CU_ASSERT_STRING_EQUAL(p, KC);
        if (strcmp(p, KC) != 0)
            fprintf(stderr, "\n%s served by %s\n", names[i], p);
    }
}

/* EVP_aes_*_gcm() in EVP_EncryptInit_ex fetches implicitly */
static void test_implicit_gcm_fetch(void)
{
    const EVP_CIPHER *legacy[] = {
        EVP_aes_128_gcm(), EVP_aes_192_gcm(), EVP_aes_256_gcm()
    };
    unsigned char key[32], iv[12];
    size_t i;

    kct_fill(key, sizeof(key), 1);
    kct_fill(iv, sizeof(iv), 2);
    for (i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        CU_ASSERT(EVP_EncryptInit_ex(ctx, legacy[i], NULL, key, iv) == 1);
        CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_CIPHER_get0_provider(
                                   EVP_CIPHER_CTX_get0_cipher(ctx))), KC);
        EVP_CIPHER_CTX_free(ctx);
        /* also for decryption */
        ctx = EVP_CIPHER_CTX_new();
        CU_ASSERT(EVP_DecryptInit_ex(ctx, legacy[i], NULL, key, iv) == 1);
        CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_CIPHER_get0_provider(
                                   EVP_CIPHER_CTX_get0_cipher(ctx))), KC);
        EVP_CIPHER_CTX_free(ctx);
    }
    ERR_clear_error();
}

/* CMAC, GMAC and KMAC by every name the default gives them */
static void test_fam_to_keycache(void)
{
    static const char *names[] = {
        "CMAC", "GMAC", "1.0.9797.3.4", "KMAC-128", "KMAC128", "kmac128",
        "2.16.840.1.101.3.4.2.19", "KMAC-256", "KMAC256",
        "2.16.840.1.101.3.4.2.20", NULL
    };
    int i;

    for (i = 0; names[i] != NULL; i++) {
        const char *p = mac_provider(names[i], NULL);

        CU_ASSERT_STRING_EQUAL(p, KC);
        if (strcmp(p, KC) != 0)
            fprintf(stderr, "\n%s served by %s\n", names[i], p);
    }
    CU_ASSERT_STRING_EQUAL(mac_provider("CMAC", "provider=" DEF), DEF);
}

/*
 * From OpenSSL 3.5, while any cipher is on (the test config turns them
 * on), keycache also offers the default's EVP_SKEY key managers
 * and with them passes every other default cipher through, so that a key
 * and a cipher fetched alike share a provider (passthrough.c, test_skey).
 */
static const char *other_ciphers(void)
{
    return OpenSSL_version_num() >= 0x30500000L ? KC : DEF;
}

/*
 * A cipher keycache does not wrap: the default's, or (3.5+) keycache's
 * pass-through of the default's own functions with the default's own
 * description, as a program reading it on default alone sees.
 */
static void check_other_cipher(const char *name)
{
    EVP_CIPHER *k = EVP_CIPHER_fetch(NULL, name, NULL);
    EVP_CIPHER *d = EVP_CIPHER_fetch(kct_default(), name, NULL);
    const char *kd, *dd;

    CU_ASSERT_STRING_EQUAL(kct_cipher_served(NULL, name),
                           strcmp(other_ciphers(), KC) == 0
                           ? KC " pass-through" : DEF);
    CU_ASSERT_FATAL(k != NULL && d != NULL);
    kd = EVP_CIPHER_get0_description(k);
    dd = EVP_CIPHER_get0_description(d);
    CU_ASSERT(kd == dd || (kd != NULL && dd != NULL && strcmp(kd, dd) == 0));
    EVP_CIPHER_free(k);
    EVP_CIPHER_free(d);
}

static void test_others_to_default(void)
{
    CU_ASSERT_STRING_EQUAL(md_provider("SHA256", NULL), DEF);
    CU_ASSERT_STRING_EQUAL(md_provider("SHA2-512", NULL), DEF);
    check_other_cipher("AES-256-CBC");
    check_other_cipher("AES-256-CCM");
    check_other_cipher("AES-128-CTR");
    check_other_cipher("ChaCha20-Poly1305");
    CU_ASSERT_STRING_EQUAL(mac_provider("BLAKE2BMAC", NULL), DEF);
    CU_ASSERT_STRING_EQUAL(mac_provider("SIPHASH", NULL), DEF);
    CU_ASSERT_STRING_EQUAL(mac_provider("POLY1305", NULL), DEF);
    CU_ASSERT_STRING_EQUAL(rand_provider("CTR-DRBG", NULL), DEF);
    CU_ASSERT_STRING_EQUAL(rand_provider("HASH-DRBG", NULL), DEF);
    CU_ASSERT_STRING_EQUAL(rand_provider("SEED-SRC", NULL), DEF);
}

/*
 * OpenSSL's own HMAC users - every KDF and HMAC-DRBG - land on keycache's
 * pass-through copies (test_internal checks they never reach the cache).
 */
static void test_internal_users_to_keycache(void)
{
    static const char *const kdfs[] = {
        "HKDF", "TLS13-KDF", "TLS1-PRF", "PBKDF2", "KBKDF", "SSKDF",
        "X963KDF", "SSHKDF", "PKCS12KDF", "X942KDF-ASN1", "SCRYPT", "KRB5KDF"
    };
    size_t i;

    for (i = 0; i < sizeof(kdfs) / sizeof(kdfs[0]); i++)
        CU_ASSERT_STRING_EQUAL(kdf_provider(kdfs[i], NULL), KC);
    CU_ASSERT_STRING_EQUAL(rand_provider("HMAC-DRBG", NULL), KC);
    /* AES-SIV keys a CMAC inside */
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-128-SIV", NULL), KC);
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-256-SIV", NULL), KC);
    CU_ASSERT_STRING_EQUAL(kdf_provider("HKDF", "provider=" DEF), DEF);
}

/* Explicit queries still reach default */
static void test_explicit_default(void)
{
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", "provider=" DEF), DEF);
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", "?provider=" DEF), DEF);
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-256-GCM", "provider=" DEF),
                           DEF);
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-128-GCM", "provider=" DEF),
                           DEF);
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-256-CBC", "provider=" DEF),
                           DEF);
    /* keycache offers nothing else (before 3.5: no other cipher) */
    CU_ASSERT_STRING_EQUAL(md_provider("SHA256", "provider=" KC), "(none)");
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-256-CBC", "provider=" KC),
                           strcmp(other_ciphers(), KC) == 0 ? KC : "(none)");
}

/* keycache claims no FIPS property: fips=yes finds nothing at all */
static void test_no_fips_property(void)
{
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", "fips=yes"), "(none)");
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-128-GCM", "fips=yes"),
                           "(none)");
    CU_ASSERT_STRING_EQUAL(cipher_provider("AES-256-GCM", "fips=yes"),
                           "(none)");
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", "provider=" KC ",fips=yes"),
                           "(none)");
    /* and keycache's algorithms advertise it as not FIPS, like default */
    CU_ASSERT_STRING_EQUAL(mac_provider("HMAC", "fips=no"), KC);
}

/* The default-only context knows nothing of keycache */
static void test_default_ctx_unaffected(void)
{
    EVP_MAC *m = EVP_MAC_fetch(kct_default(), "HMAC", NULL);
    EVP_CIPHER *c = EVP_CIPHER_fetch(kct_default(), "AES-256-GCM", NULL);

    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_MAC_get0_provider(m)), DEF);
    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_CIPHER_get0_provider(c)),
                           DEF);
    EVP_MAC_free(m);
    EVP_CIPHER_free(c);
}

static void test_provider_params(void)
{
    static const char *counters[] = {
        KEYCACHE_PARAM_HITS, KEYCACHE_PARAM_MISSES, KEYCACHE_PARAM_EVICTIONS,
        KEYCACHE_PARAM_PASSTHROUGH, KEYCACHE_PARAM_ENTRIES,
        KEYCACHE_PARAM_CACHE_SIZE
    };
    enum { N = sizeof(counters) / sizeof(counters[0]) };
    OSSL_PROVIDER *prov = kct_keycache_provider();
    uint64_t vals[N];
    OSSL_PARAM params[N + 1];
    const OSSL_PARAM *gettable;
    size_t i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(prov);
    for (i = 0; i < N; i++) {
        vals[i] = UINT64_MAX;
        params[i] = OSSL_PARAM_construct_uint64(counters[i], &vals[i]);
    }
    params[N] = OSSL_PARAM_construct_end();
    CU_ASSERT_FATAL(OSSL_PROVIDER_get_params(prov, params) == 1);
    gettable = OSSL_PROVIDER_gettable_params(prov);
    for (i = 0; i < N; i++) {
        CU_ASSERT(OSSL_PARAM_modified(&params[i]));
        CU_ASSERT(vals[i] != UINT64_MAX);
        /* the counters are advertised, too */
        CU_ASSERT_PTR_NOT_NULL(OSSL_PARAM_locate_const(gettable, counters[i]));
    }
    CU_ASSERT_EQUAL(vals[N - 1], 64);
    CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_CACHE_SIZE), 64);
    /* entries can never exceed capacity on this single thread */
    CU_ASSERT(vals[4] <= 64);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("routing", suite_init, suite_clean);

    CU_add_test(s, "HMAC -> keycache", test_hmac_to_keycache);
    CU_add_test(s, "AES-GCM names and OIDs -> keycache", test_gcm_to_keycache);
    CU_add_test(s, "implicit fetch in EVP_*Init_ex", test_implicit_gcm_fetch);
    CU_add_test(s, "CMAC, GMAC, KMAC names and OIDs -> keycache",
                test_fam_to_keycache);
    CU_add_test(s, "everything else -> default", test_others_to_default);
    CU_add_test(s, "KDFs and HMAC-DRBG -> keycache pass-through",
                test_internal_users_to_keycache);
    CU_add_test(s, "provider=default honoured", test_explicit_default);
    CU_add_test(s, "no fips=yes", test_no_fips_property);
    CU_add_test(s, "default ctx unaffected", test_default_ctx_unaffected);
    CU_add_test(s, "provider params", test_provider_params);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
