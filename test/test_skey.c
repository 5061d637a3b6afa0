/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opaque symmetric keys (EVP_SKEY, OpenSSL 3.5+) under keycache.
 *
 * An unchanged program imports a key with EVP_SKEY_import_raw_key(NULL,
 * "AES" or "GENERIC-SECRET", ...) and runs a query-less cipher with
 * EVP_CipherInit_SKEY().  libcrypto accepts the pair only when the key's
 * manager and the cipher come from one provider, so keycache offers the
 * default's key managers and passes every cipher it does not wrap through
 * (passthrough.c).  Every step of such a program - each return value, the
 * output, the tag, the errors with their origin - is recorded and compared
 * with the default provider alone, for each cipher family keycache offers
 * (AES-GCM, on in the test config, AES-OCB, AES-SIV), for ciphers it does
 * not wrap, for keys and ciphers both asked of default by name, for a key
 * moved with EVP_SKEY_to_provider(), for bad keys, and for
 * EVP_MAC_init_SKEY() on the MACs keycache wraps and others.
 *
 * Built against headers older than 3.5, or run on an older libcrypto, the
 * test only says it skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "kc_test.h"
#include "keycache.h"

#if OPENSSL_VERSION_NUMBER >= 0x30500000L

static const unsigned char aad[] = "keycache skey header";
static const unsigned char msg[] = "keycache EVP_SKEY test message, 47 bytes long";

/* how one program gets its key and its cipher */
typedef struct {
    const char *cipher;
    const char *skeymgmt;       /* "AES" or "GENERIC-SECRET" */
    size_t keylen;
    size_t ivlen;               /* 0: no IV */
    int aead;
    const char *key_propq, *cipher_propq;
    int move;                   /* EVP_SKEY_to_provider(key, default) */
} CASE;

static const CASE *cur;

static int running_has_skey(void)
{
    return OpenSSL_version_num() >= 0x30500000L;
}

static void rec_outcome(KCT_REC *r, const char *what, int rc)
{
    kct_rec_printf(r, "%s=%d", what, rc);
    kct_rec_errs(r);
}

/* one direction: init, (tag), aad, update, final, (tag); out gets it all */
static int run_dir(KCT_REC *r, const EVP_CIPHER *c, EVP_SKEY *skey, int enc,
                   const unsigned char *iv, const unsigned char *in,
                   size_t inlen, unsigned char *tag, unsigned char *out)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0, f = 0, rc, ok = 0;

    if (ctx == NULL)
        return 0;
    rc = EVP_CipherInit_SKEY(ctx, c, skey, iv, cur->ivlen, enc, NULL);
    rec_outcome(r, enc ? "enc_init" : "dec_init", rc);
    if (rc != 1)
        goto end;
    if (cur->aead && !enc) {
        rc = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag);
        rec_outcome(r, "set_tag", rc);
    }
    if (cur->aead) {
        rc = EVP_CipherUpdate(ctx, NULL, &n, aad, sizeof(aad));
        rec_outcome(r, "aad", rc);
    }
    rc = EVP_CipherUpdate(ctx, out, &n, in, (int)inlen);
    kct_rec_printf(r, "update=%d n=%d ", rc, n);
    if (rc == 1)
        kct_rec_hex(r, out, (size_t)n);
    kct_rec_errs(r);
    if (rc != 1)
        goto end;
    rc = EVP_CipherFinal_ex(ctx, out + n, &f);
    kct_rec_printf(r, "final=%d f=%d ", rc, f);
    if (rc == 1)
        kct_rec_hex(r, out + n, (size_t)f);
    kct_rec_errs(r);
    if (rc == 1 && cur->aead && enc) {
        rc = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag);
        kct_rec_printf(r, "get_tag=%d ", rc);
        kct_rec_hex(r, tag, 16);
        kct_rec_errs(r);
    }
    ok = rc == 1 ? n + f : 0;
    /* the same context again, cipher kept: EVP's re-init path */
    if (rc == 1 && enc) {
        rc = EVP_CipherInit_SKEY(ctx, NULL, skey, iv, cur->ivlen, -1, NULL);
        rec_outcome(r, "reinit", rc);
        if (rc == 1 && cur->aead) {
            rc = EVP_CipherUpdate(ctx, NULL, &n, aad, sizeof(aad));
            rec_outcome(r, "reinit_aad", rc);
        }
        if (rc == 1) {
            unsigned char again[sizeof(msg) + 32];

            rc = EVP_CipherUpdate(ctx, again, &n, in, (int)inlen)
                 && EVP_CipherFinal_ex(ctx, again + n, &f);
            kct_rec_printf(r, "reinit_same=%d ", rc);
            kct_rec_hex(r, again, rc ? (size_t)(n + f) : 0);
            kct_rec_errs(r);
        }
    }
 end:
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* The program: import, fetch, encrypt, decrypt, every step recorded. */
static void skey_program(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    unsigned char key[64], iv[16], tag[16] = { 0 };
    unsigned char ct[sizeof(msg) + 32], pt[sizeof(msg) + 32];
    EVP_SKEY *skey, *moved = NULL;
    EVP_CIPHER *c;
    OSSL_PROVIDER *def = NULL;
    int n;

    (void)libctx;               /* the program passes NULL: the default */
    kct_fill(key, sizeof(key), 1);
    kct_fill(iv, sizeof(iv), 2);
    skey = EVP_SKEY_import_raw_key(NULL, cur->skeymgmt, key, cur->keylen,
                                   cur->key_propq);
    kct_rec_printf(r, "import=%s", skey != NULL ? "key" : "NULL");
    kct_rec_errs(r);
    /*
     * Moved only from another provider: EVP_SKEY_to_provider() to the
     * key's own provider frees a reference to the key manager it never
     * took (s_lib.c, its short cut, 3.5 to 4.0), on default alone too.
     */
    if (skey != NULL && cur->move
        && strcmp(EVP_SKEY_get0_provider_name(skey), "default") != 0) {
        def = OSSL_PROVIDER_load(NULL, "default");
        moved = EVP_SKEY_to_provider(skey, NULL, def, NULL);
        EVP_SKEY_free(skey);
        skey = moved;
    }
    if (cur->move) {
        kct_rec_printf(r, "to_provider=%s", skey != NULL ? "key" : "NULL");
        kct_rec_errs(r);
    }
    c = EVP_CIPHER_fetch(NULL, cur->cipher, cur->cipher_propq);
    kct_rec_printf(r, "fetch=%s", c != NULL ? "cipher" : "NULL");
    kct_rec_errs(r);
    if (c != NULL && skey != NULL) {
        n = run_dir(r, c, skey, 1, iv, msg, sizeof(msg), tag, ct);
        if (n > 0)
            run_dir(r, c, skey, 0, iv, ct, (size_t)n, tag, pt);
        if (cur->aead && n > 0) {
            /* a forged tag must fail as the default's does */
            tag[0] ^= 1;
            run_dir(r, c, skey, 0, iv, ct, (size_t)n, tag, pt);
        }
    }
    EVP_CIPHER_free(c);
    EVP_SKEY_free(skey);
    OSSL_PROVIDER_unload(def);
}

/* keycache really served the query-less cipher, with a key of its own */
static void check_served(const CASE *k)
{
    EVP_SKEY *skey;
    EVP_CIPHER *c;
    unsigned char key[64] = { 0 };

    kct_use(kct_keycache());
    skey = EVP_SKEY_import_raw_key(NULL, k->skeymgmt, key, k->keylen, NULL);
    c = EVP_CIPHER_fetch(NULL, k->cipher, NULL);
    CU_ASSERT_PTR_NOT_NULL(skey);
    CU_ASSERT_PTR_NOT_NULL(c);
    if (skey != NULL && c != NULL) {
        CU_ASSERT_STRING_EQUAL(EVP_SKEY_get0_provider_name(skey),
                               KEYCACHE_PROVIDER_NAME);
        CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_CIPHER_get0_provider(c)),
                               KEYCACHE_PROVIDER_NAME);
    }
    EVP_CIPHER_free(c);
    EVP_SKEY_free(skey);
    kct_use(NULL);
    ERR_clear_error();
}

static int compare(const CASE *k)
{
    KCT_REC d = { 0 }, kc = { 0 };
    char what[160];
    int same;

    cur = k;
    kct_rec_run(skey_program, kct_default(), &d);
    kct_rec_run(skey_program, kct_keycache(), &kc);
    snprintf(what, sizeof(what), "%s key %s/%zu (%s) cipher %s (%s)%s",
             k->cipher, k->skeymgmt, k->keylen,
             k->key_propq ? k->key_propq : "no query",
             k->cipher, k->cipher_propq ? k->cipher_propq : "no query",
             k->move ? " moved to default" : "");
    same = kct_rec_same(what, &d, &kc);
    if (getenv("KC_SHOW_RECORDS") != NULL)
        fprintf(stderr, "\n[%s]\n%s", what, d.buf);
    CU_ASSERT(same);
    kct_rec_free(&d);
    kct_rec_free(&kc);
    return same;
}

/* the ciphers of the program, with what their init takes */
static const CASE ciphers[] = {
    /* keycache's families (GCM: aes_gcm = on in keycache-test.cnf) */
    { "AES-128-GCM", "AES", 16, 12, 1, NULL, NULL, 0 },
    { "AES-256-GCM", "AES", 32, 12, 1, NULL, NULL, 0 },
    { "AES-128-OCB", "AES", 16, 12, 1, NULL, NULL, 0 },
    { "AES-256-OCB", "AES", 32, 12, 1, NULL, NULL, 0 },
    { "AES-128-SIV", "AES", 32, 0, 1, NULL, NULL, 0 },
    { "AES-256-SIV", "AES", 64, 0, 1, NULL, NULL, 0 },
    /* and others, which had worked before */
    { "AES-128-CBC", "AES", 16, 16, 0, NULL, NULL, 0 },
    { "AES-128-CTR", "AES", 16, 16, 0, NULL, NULL, 0 },
    { "AES-128-ECB", "AES", 16, 0, 0, NULL, NULL, 0 },
    { "AES-256-CCM", "AES", 32, 12, 0, NULL, NULL, 0 },
    { "ChaCha20", "GENERIC-SECRET", 32, 16, 0, NULL, NULL, 0 },
    { "CAMELLIA-128-CBC", "GENERIC-SECRET", 16, 16, 0, NULL, NULL, 0 },
};

#define NCIPHERS (sizeof(ciphers) / sizeof(ciphers[0]))

static void skip_note(void)
{
    fprintf(stderr, " (skipped: libcrypto %s has no EVP_SKEY) ",
            OpenSSL_version(OPENSSL_VERSION_STRING));
}

/* The unchanged program: query-less key and cipher. */
static void test_queryless(void)
{
    size_t i;

    if (!running_has_skey()) {
        skip_note();
        return;
    }
    for (i = 0; i < NCIPHERS; i++) {
        /* keycache's own: check it is in the way (AES keys: 16 to 32) */
        if (i < 6 && ciphers[i].keylen <= 32)
            check_served(&ciphers[i]);
        compare(&ciphers[i]);
    }
}

/* A generic key on the families keycache wraps. */
static void test_generic_key(void)
{
    size_t i;

    if (!running_has_skey()) {
        skip_note();
        return;
    }
    for (i = 0; i < 6; i++) {
        CASE k = ciphers[i];

        k.skeymgmt = "GENERIC-SECRET";
        compare(&k);
    }
}

/* Key and cipher both asked of default, or the key moved there. */
static void test_pinned_and_moved(void)
{
    size_t i;

    if (!running_has_skey()) {
        skip_note();
        return;
    }
    for (i = 0; i < NCIPHERS; i++) {
        CASE k = ciphers[i];

        k.key_propq = k.cipher_propq = "provider=default";
        compare(&k);
        k.key_propq = NULL;
        k.move = 1;
        compare(&k);
    }
}

/* Keys the default refuses or ciphers that refuse them. */
static void test_bad_keys(void)
{
    static const CASE bad[] = {
        { "AES-128-OCB", "AES", 15, 12, 1, NULL, NULL, 0 },  /* no AES key */
        { "AES-128-GCM", "AES", 24, 12, 1, NULL, NULL, 0 },  /* length */
        { "AES-256-OCB", "AES", 16, 12, 1, NULL, NULL, 0 },
        { "AES-128-SIV", "AES", 16, 0, 1, NULL, NULL, 0 },
        { "AES-128-SIV", "GENERIC-SECRET", 20, 0, 1, NULL, NULL, 0 },
        { "AES-128-GCM", "GENERIC-SECRET", 7, 12, 1, NULL, NULL, 0 },
        { "AES-128-CBC", "GENERIC-SECRET", 7, 16, 0, NULL, NULL, 0 },
        { "AES-128-OCB", "NO-SUCH-KEYTYPE", 16, 12, 1, NULL, NULL, 0 },
        { "AES-128-OCB", "AES", 16, 16, 1, NULL, NULL, 0 },  /* IV length */
    };
    size_t i;

    if (!running_has_skey()) {
        skip_note();
        return;
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        compare(&bad[i]);
}

/* EVP_MAC_init_SKEY: what the default's MACs answer, keycache's answer. */
static const char *mac_name;

static void mac_program(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    unsigned char key[32];
    const char *km = strcmp(mac_name, "HMAC") == 0 ? "GENERIC-SECRET" : "AES";
    EVP_SKEY *skey;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, mac_name, NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[3], *p = params;
    unsigned char out[64];
    size_t outl = 0;
    int rc;

    (void)libctx;
    kct_fill(key, sizeof(key), 3);
    skey = EVP_SKEY_import_raw_key(NULL, km, key, 16, NULL);
    kct_rec_printf(r, "import=%s mac=%s", skey != NULL ? "key" : "NULL",
                   ctx != NULL ? "ctx" : "NULL");
    kct_rec_errs(r);
    if (strcmp(mac_name, "HMAC") == 0)
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                "SHA256", 0);
    else if (strcmp(mac_name, "CMAC") == 0)
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
                                                "AES-128-CBC", 0);
    else if (strcmp(mac_name, "GMAC") == 0) {
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
                                                "AES-128-GCM", 0);
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                 key + 16, 12);
    }
    *p = OSSL_PARAM_construct_end();
    if (ctx != NULL && skey != NULL) {
        rc = EVP_MAC_init_SKEY(ctx, skey, params);
        rec_outcome(r, "init_skey", rc);
        if (rc == 1) {
            rc = EVP_MAC_update(ctx, msg, sizeof(msg))
                 && EVP_MAC_final(ctx, out, &outl, sizeof(out));
            kct_rec_printf(r, "mac=%d ", rc);
            kct_rec_hex(r, out, rc ? outl : 0);
            kct_rec_errs(r);
        }
    }
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    EVP_SKEY_free(skey);
}

static void test_mac_init_skey(void)
{
    static const char *const macs[] = {
        "HMAC", "CMAC", "GMAC", "KMAC-128", "KMAC-256", "POLY1305", "SIPHASH"
    };
    size_t i;

    if (!running_has_skey()) {
        skip_note();
        return;
    }
    for (i = 0; i < sizeof(macs) / sizeof(macs[0]); i++) {
        KCT_REC d = { 0 }, kc = { 0 };

        mac_name = macs[i];
        kct_rec_run(mac_program, kct_default(), &d);
        kct_rec_run(mac_program, kct_keycache(), &kc);
        CU_ASSERT(kct_rec_same(macs[i], &d, &kc));
        kct_rec_free(&d);
        kct_rec_free(&kc);
    }
}

/*
 * What no provider can mend: libcrypto compares the key's provider with
 * the cipher's before either is asked (evp_enc.c,
 * evp_cipher_init_skey_internal()).  A key and a cipher asked of different
 * providers - one by name, one query-less - meet two providers under
 * keycache where default alone has one.  Flag any change.
 */
static void test_mixed_queries_refused(void)
{
    static const char *const cnames[] = { "AES-128-OCB", "AES-128-CBC" };
    size_t i, j;

    if (!running_has_skey()) {
        skip_note();
        return;
    }
    kct_use(kct_keycache());
    for (i = 0; i < 2; i++)
        for (j = 0; j < 2; j++) {
            unsigned char key[16] = { 0 }, iv[12] = { 0 };
            EVP_SKEY *skey = EVP_SKEY_import_raw_key(NULL, "AES", key, 16,
                                                     j ? "provider=default"
                                                       : NULL);
            EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, cnames[i],
                                             j ? NULL : "provider=default");
            EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

            ERR_clear_error();
            CU_ASSERT_EQUAL(EVP_CipherInit_SKEY(ctx, c, skey, iv, 12, 1, NULL),
                            0);
            CU_ASSERT_EQUAL(ERR_GET_REASON(ERR_peek_error()),
                            EVP_R_INITIALIZATION_ERROR);
            ERR_clear_error();
            EVP_CIPHER_CTX_free(ctx);
            EVP_CIPHER_free(c);
            EVP_SKEY_free(skey);
        }
    kct_use(NULL);
}

/*
 * Every cipher the default offers must then be keycache's too (wrapped or
 * passed through): one left out, past the pass-through's slots say, would
 * be the default's alone and refuse a query-less key.
 */
static void note_missing(EVP_CIPHER *c, void *arg)
{
    EVP_CIPHER *k = EVP_CIPHER_fetch(kct_keycache(), EVP_CIPHER_get0_name(c),
                                     "provider=" KEYCACHE_PROVIDER_NAME);

    if (k == NULL) {
        fprintf(stderr, "\n%s is not offered by keycache\n",
                EVP_CIPHER_get0_name(c));
        (*(int *)arg)++;
    }
    EVP_CIPHER_free(k);
}

static void test_every_cipher_offered(void)
{
    int missing = 0;

    if (!running_has_skey()) {
        skip_note();
        return;
    }
    EVP_CIPHER_do_all_provided(kct_default(), note_missing, &missing);
    ERR_clear_error();
    CU_ASSERT_EQUAL(missing, 0);
}
#endif

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("skey", NULL, NULL);

#if OPENSSL_VERSION_NUMBER >= 0x30500000L
    CU_add_test(s, "query-less key and cipher, every family",
                test_queryless);
    CU_add_test(s, "generic key on keycache's families", test_generic_key);
    CU_add_test(s, "pinned to default, and moved there",
                test_pinned_and_moved);
    CU_add_test(s, "bad keys", test_bad_keys);
    CU_add_test(s, "EVP_MAC_init_SKEY", test_mac_init_skey);
    CU_add_test(s, "mixed queries: refused by libcrypto",
                test_mixed_queries_refused);
    CU_add_test(s, "every cipher of the default's offered",
                test_every_cipher_offered);
#else
    (void)s;
    fprintf(stderr, "test_skey: built without EVP_SKEY (OpenSSL %s headers),"
            " skipped\n", OPENSSL_VERSION_TEXT);
#endif
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
