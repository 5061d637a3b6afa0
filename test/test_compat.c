/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Behaviour that differs between OpenSSL releases, checked against the
 * default provider of whichever libcrypto the test runs on (tools/compat.sh
 * runs the suite on Debian trixie's 3.5 and sid's 3.6):
 *
 * - Repeated parameters.  Which of two equal keys counts has changed with
 *   releases and algorithms: 3.0 reads lists with OSSL_PARAM_locate() (the
 *   first wins), 3.5's AES-GCM decoder keeps the last, and from 3.6 the
 *   generated decoders refuse the list (PROV_R_REPEATED_PARAMETER).
 *   keycache reads some lists itself (HMAC digest and key, GCM IV length
 *   and tag before the key) and must end up in the default's state anyway.
 * - New dispatch functions.  Every function the default implements for a
 *   row of the family registry must be offered by keycache too, or EVP takes another path
 *   (3.5 added cipher/MAC "skey" inits and cipher pipelining).
 * - EVP_SKEY (3.5+): a key object belongs to the provider of its key
 *   manager, and EVP_CipherInit_SKEY() refuses a cipher of another one;
 *   keycache offers the default's key managers (test_skey has the rest).
 *
 * KC_COMPAT_VERBOSE=1 prints every outcome, not only the differing ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/params.h>

#include "kc_family.h"
#include "kc_test.h"
#include "keycache.h"

static const unsigned char msg[] = "keycache compatibility test message";

/* Everything a caller can observe of one attempt. */
typedef struct {
    int set_ok;                /* the call given the repeated parameters */
    unsigned long set_err;     /* first error it raised (lib + reason) */
    int ok;                    /* the rest of the operation */
    unsigned char out[96];
    size_t outlen;
    int ivlen;
} OUTCOME;

static unsigned long first_error(void)
{
    unsigned long e = ERR_peek_error();

    ERR_clear_error();
    /* file, line and function differ legitimately: lib and reason only */
    return e == 0 ? 0 : ERR_PACK(ERR_GET_LIB(e), 0, ERR_GET_REASON(e));
}

static void same_outcome(const OUTCOME *def, const OUTCOME *kc,
                         const char *what)
{
    int same = def->set_ok == kc->set_ok && def->set_err == kc->set_err
               && def->ok == kc->ok && def->ivlen == kc->ivlen
               && def->outlen == kc->outlen
               && memcmp(def->out, kc->out, def->outlen) == 0;

    if (!same || getenv("KC_COMPAT_VERBOSE") != NULL)
        fprintf(stderr, "\n  %s: default set %d err %08lx ok %d len %zu ivlen %d"
                "; keycache set %d err %08lx ok %d len %zu ivlen %d\n", what,
                def->set_ok, def->set_err, def->ok, def->outlen, def->ivlen,
                kc->set_ok, kc->set_err, kc->ok, kc->outlen, kc->ivlen);
    CU_ASSERT_TRUE(same);
}

/* ---------------------------------------------------------------------- */
/* HMAC                                                                   */

enum { HMAC_BY_INIT, HMAC_BY_SET_PARAMS };

/*
 * HMAC with |params| given to EVP_MAC_init() (with a key) or to
 * EVP_MAC_CTX_set_params() (then an init, keyed unless the list was); the
 * MAC of msg if the provider lets the operation go on.
 */
static void hmac_with(OSSL_LIB_CTX *libctx, const char *want_prov, int how,
                      const OSSL_PARAM *params, OUTCOME *o)
{
    static const unsigned char key[] = "init key for the repeated test";
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "HMAC", NULL);
    EVP_MAC_CTX *ctx = NULL;

    memset(o, 0, sizeof(*o));
    CU_ASSERT_PTR_NOT_NULL_FATAL(mac);
    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_MAC_get0_provider(mac)),
                           want_prov);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx = EVP_MAC_CTX_new(mac));
    ERR_clear_error();
    if (how == HMAC_BY_INIT) {
        o->set_ok = EVP_MAC_init(ctx, key, sizeof(key), params);
        o->set_err = first_error();
        o->ok = o->set_ok;
    } else {
        int keyed = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_KEY) != NULL;

        o->set_ok = EVP_MAC_CTX_set_params(ctx, params);
        o->set_err = first_error();
        /* go on regardless: what a failed set left behind counts too */
        o->ok = keyed ? EVP_MAC_init(ctx, NULL, 0, NULL)
                      : EVP_MAC_init(ctx, key, sizeof(key), NULL);
    }
    o->ok = o->ok && EVP_MAC_update(ctx, msg, sizeof(msg))
            && EVP_MAC_final(ctx, o->out, &o->outlen, sizeof(o->out));
    if (!o->ok)
        o->outlen = 0;
    ERR_clear_error();
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
}

static void check_hmac(int how, const OSSL_PARAM *params, const char *what)
{
    OUTCOME d, k;

    hmac_with(kct_default(), "default", how, params, &d);
    hmac_with(kct_keycache(), KEYCACHE_PROVIDER_NAME, how, params, &k);
    same_outcome(&d, &k, what);
}

static void test_hmac_repeated(void)
{
    static unsigned char k1[] = "first key", k2[] = "second key";
    OSSL_PARAM two_digests[] = {
        OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA1", 0),
        OSSL_PARAM_END
    };
    OSSL_PARAM two_keys[] = {
        OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_octet_string(OSSL_MAC_PARAM_KEY, k1, sizeof(k1)),
        OSSL_PARAM_octet_string(OSSL_MAC_PARAM_KEY, k2, sizeof(k2)),
        OSSL_PARAM_END
    };
    OSSL_PARAM two_props[] = {
        OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_PROPERTIES, "", 0),
        OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_PROPERTIES, "provider=default", 0),
        OSSL_PARAM_END
    };

    check_hmac(HMAC_BY_INIT, two_digests, "HMAC init, digest twice");
    check_hmac(HMAC_BY_SET_PARAMS, two_digests, "HMAC set, digest twice");
    check_hmac(HMAC_BY_SET_PARAMS, two_keys, "HMAC set, key twice");
    check_hmac(HMAC_BY_INIT, two_keys, "HMAC init, key twice");
    check_hmac(HMAC_BY_SET_PARAMS, two_props, "HMAC set, properties twice");
}

/* ---------------------------------------------------------------------- */
/* AES-GCM                                                                */

static const unsigned char gcm_iv[16] = "sixteen byte iv";

enum { GCM_BEFORE_KEY, GCM_AFTER_KEY };

static void fam_cipher_repeated_from(const KCT_FAM *f, size_t ivlen);

/* AES-256-GCM's repeated parameters, a 16-byte IV length first */
static void test_gcm_repeated(void)
{
    fam_cipher_repeated_from(kct_fam_find("AES-256-GCM"), 16);
}

/* ---------------------------------------------------------------------- */
/* Every row of the family registry                                       */

static const unsigned char fam_key[KCT_FAM_MAXKEY] =
    "a key for every registry row, as long as the longest one needs..";

/*
 * Row f's MAC with |params| given to EVP_MAC_init() (keyed, its own
 * parameters first) or to EVP_MAC_CTX_set_params() (then an init with
 * the row's parameters and, unless the list had one, the key).
 */
static void fam_mac_with(OSSL_LIB_CTX *libctx, const char *want_prov,
                         const KCT_FAM *f, int how, const OSSL_PARAM *params,
                         OUTCOME *o)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, f->name, NULL);
    EVP_MAC_CTX *ctx = NULL;
    OSSL_PARAM p[3];

    memset(o, 0, sizeof(*o));
    CU_ASSERT_PTR_NOT_NULL_FATAL(mac);
    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_MAC_get0_provider(mac)),
                           want_prov);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx = EVP_MAC_CTX_new(mac));
    ERR_clear_error();
    if (how == HMAC_BY_INIT) {
        o->ok = EVP_MAC_CTX_set_params(ctx, kct_fam_mac_params(f, p, NULL));
        o->set_ok = EVP_MAC_init(ctx, fam_key, f->keylen, params);
        o->set_err = first_error();
        o->ok = o->ok && o->set_ok;
    } else {
        int keyed = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_KEY) != NULL;

        o->set_ok = EVP_MAC_CTX_set_params(ctx, params);
        o->set_err = first_error();
        o->ok = keyed ? EVP_MAC_init(ctx, NULL, 0,
                                     kct_fam_mac_params(f, p, NULL))
                      : EVP_MAC_init(ctx, fam_key, f->keylen,
                                     kct_fam_mac_params(f, p, NULL));
    }
    o->ok = o->ok && EVP_MAC_update(ctx, msg, sizeof(msg))
            && EVP_MAC_final(ctx, o->out, &o->outlen, sizeof(o->out));
    if (!o->ok)
        o->outlen = 0;
    ERR_clear_error();
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
}

/*
 * Row f's cipher with |params| set before or after the key, then msg
 * sealed (ciphertext || tag) or, with |ct| given, opened (plaintext).
 */
static void fam_cipher_with(OSSL_LIB_CTX *libctx, const char *want_prov,
                            const KCT_FAM *f, int when,
                            const OSSL_PARAM *params, const unsigned char *ct,
                            size_t ctlen, OUTCOME *o)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(libctx, f->name, NULL);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    const unsigned char *iv = kct_fam_ivlen(f) != 0 ? gcm_iv : NULL;
    int enc = ct == NULL, n = 0, fin = 0;

    memset(o, 0, sizeof(*o));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_CIPHER_get0_provider(c)),
                           want_prov);
    ERR_clear_error();
    if (when == GCM_BEFORE_KEY) {
        o->ok = EVP_CipherInit_ex2(ctx, c, NULL, NULL, enc, NULL);
        o->set_ok = EVP_CIPHER_CTX_set_params(ctx, params);
        o->set_err = first_error();
        o->ok = o->ok && EVP_CipherInit_ex2(ctx, NULL, fam_key, iv, -1, NULL);
    } else {
        o->ok = EVP_CipherInit_ex2(ctx, c, fam_key, NULL, enc, NULL);
        o->set_ok = EVP_CIPHER_CTX_set_params(ctx, params);
        o->set_err = first_error();
        o->ok = o->ok && EVP_CipherInit_ex2(ctx, NULL, NULL, iv, -1, NULL);
    }
    o->ivlen = EVP_CIPHER_CTX_get_iv_length(ctx);
    if (enc) {
        o->ok = o->ok && EVP_EncryptUpdate(ctx, o->out, &n, msg, sizeof(msg))
                && EVP_EncryptFinal_ex(ctx, o->out + n, &fin)
                && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16,
                                       o->out + n + fin);
        o->outlen = o->ok ? (size_t)(n + fin) + 16 : 0;
    } else {
        o->ok = o->ok && EVP_DecryptUpdate(ctx, o->out, &n, ct, (int)ctlen)
                && EVP_DecryptFinal_ex(ctx, o->out + n, &fin);
        o->outlen = o->ok ? (size_t)(n + fin) : 0;
    }
    ERR_clear_error();
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
}

static void check_fam_mac(const KCT_FAM *f, int how,
                          const OSSL_PARAM *params, const char *what)
{
    char name[96];
    OUTCOME d, k;

    snprintf(name, sizeof(name), "%s %s", f->id, what);
    fam_mac_with(kct_default(), "default", f, how, params, &d);
    fam_mac_with(kct_keycache(), KEYCACHE_PROVIDER_NAME, f, how, params, &k);
    same_outcome(&d, &k, name);
}

static void check_fam_cipher(const KCT_FAM *f, int when,
                             const OSSL_PARAM *params,
                             const unsigned char *ct, size_t ctlen,
                             const char *what)
{
    char name[96];
    OUTCOME d, k;

    snprintf(name, sizeof(name), "%s %s", f->id, what);
    fam_cipher_with(kct_default(), "default", f, when, params, ct, ctlen, &d);
    fam_cipher_with(kct_keycache(), KEYCACHE_PROVIDER_NAME, f, when, params,
                    ct, ctlen, &k);
    same_outcome(&d, &k, name);
}

/* A second value of a MAC row's sub parameter, of the same kind. */
static const char *other_sub(const KCT_FAM *f)
{
    if (strcmp(f->sub, OSSL_MAC_PARAM_DIGEST) == 0)
        return "SHA1";
    return strstr(f->sub_value, "GCM") != NULL ? "AES-128-GCM"
                                                : "AES-128-CBC";
}

static void fam_mac_repeated(const KCT_FAM *f)
{
    static unsigned char k1[] = "first key of 32 bytes, for all!";
    static unsigned char k2[] = "second key of 32 bytes, for all";
    unsigned char iv2[12] = "another iv!";
    size_t size1 = 20, size2 = 32;
    OSSL_PARAM p[4];

    if (f->sub != NULL) {
        p[0] = OSSL_PARAM_construct_utf8_string(f->sub, (char *)f->sub_value,
                                                0);
        p[1] = OSSL_PARAM_construct_utf8_string(f->sub,
                                                (char *)other_sub(f), 0);
        /* GMAC: a cipher set drops the IV, which would then be random */
        p[2] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                 (void *)gcm_iv, 12);
        if (kct_fam_ivlen(f) == 0)
            p[2] = OSSL_PARAM_construct_end();
        p[3] = OSSL_PARAM_construct_end();
        check_fam_mac(f, HMAC_BY_INIT, p, "init, digest/cipher twice");
        check_fam_mac(f, HMAC_BY_SET_PARAMS, p, "set, digest/cipher twice");
    }
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k1, 32);
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k2, 32);
    p[2] = OSSL_PARAM_construct_end();
    check_fam_mac(f, HMAC_BY_SET_PARAMS, p, "set, key twice");
    check_fam_mac(f, HMAC_BY_INIT, p, "init, key twice");
    p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size1);
    p[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size2);
    check_fam_mac(f, HMAC_BY_INIT, p, "init, size twice");
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                             (void *)gcm_iv, 12);
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, iv2, 12);
    check_fam_mac(f, HMAC_BY_SET_PARAMS, p, "set, IV twice");
}

/* A cipher row's repeated parameters, an IV length of |ivlen| first. */
static void fam_cipher_repeated_from(const KCT_FAM *f, size_t ivlen)
{
    size_t len8 = 8, kl1 = f->keylen, kl2 = f->keylen + 8;
    unsigned char good[16], bad[16];
    OSSL_PARAM two_ivlens[] = {
        OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &ivlen),
        OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &len8),
        OSSL_PARAM_END
    };
    OSSL_PARAM two_keylens[] = {
        OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, &kl1),
        OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, &kl2),
        OSSL_PARAM_END
    };
    OSSL_PARAM two_tags[] = {
        OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, good, 16),
        OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, bad, 16),
        OSSL_PARAM_END
    };
    OSSL_PARAM none[] = { OSSL_PARAM_END };
    OUTCOME ref;

    check_fam_cipher(f, GCM_BEFORE_KEY, two_ivlens, NULL, 0,
                     "ivlen twice, no key");
    check_fam_cipher(f, GCM_AFTER_KEY, two_ivlens, NULL, 0,
                     "ivlen twice, keyed");
    check_fam_cipher(f, GCM_BEFORE_KEY, two_keylens, NULL, 0,
                     "keylen twice, no key");
    fam_cipher_with(kct_default(), "default", f, GCM_BEFORE_KEY, none, NULL,
                    0, &ref);
    CU_ASSERT_TRUE_FATAL(ref.ok && ref.outlen == sizeof(msg) + 16);
    memcpy(good, ref.out + sizeof(msg), 16);
    memcpy(bad, good, 16);
    bad[0] ^= 1;
    check_fam_cipher(f, GCM_BEFORE_KEY, two_tags, ref.out, sizeof(msg),
                     "tag twice, no key");
    check_fam_cipher(f, GCM_AFTER_KEY, two_tags, ref.out, sizeof(msg),
                     "tag twice, keyed");
}

/* Repeated parameters for every registry row, compared with the default. */
static void test_registry_repeated(void)
{
    size_t i;

    for (i = 0; i < kct_nfams; i++)
        if (kct_fams[i].kind == KCT_CIPHER)
            fam_cipher_repeated_from(&kct_fams[i], 12);
        else
            fam_mac_repeated(&kct_fams[i]);
}

/* ---------------------------------------------------------------------- */
/* Dispatch tables                                                        */

static const OSSL_DISPATCH *implementation(OSSL_PROVIDER *prov, int op,
                                           const char *name)
{
    const OSSL_ALGORITHM *a;
    int no_cache = 0;
    size_t n = strlen(name);

    a = OSSL_PROVIDER_query_operation(prov, op, &no_cache);
    for (; a != NULL && a->algorithm_names != NULL; a++)
        if (strncmp(a->algorithm_names, name, n) == 0
            && (a->algorithm_names[n] == ':' || a->algorithm_names[n] == '\0'))
            return a->implementation;
    return NULL;
}

/* The function |id| of dispatch table |d|, or NULL. */
static void (*function(const OSSL_DISPATCH *d, int id))(void)
{
    for (; d != NULL && d->function_id != 0; d++)
        if (d->function_id == id)
            return d->function;
    return NULL;
}

static int offers(const OSSL_DISPATCH *d, int id)
{
    return function(d, id) != NULL;
}

static void check_functions(OSSL_PROVIDER *def, OSSL_PROVIDER *kc, int op,
                            const char *name)
{
    const OSSL_DISPATCH *dd = implementation(def, op, name);
    const OSSL_DISPATCH *kd = implementation(kc, op, name);

    CU_ASSERT_PTR_NOT_NULL_FATAL(dd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kd);
    for (; dd->function_id != 0; dd++) {
        if (!offers(kd, dd->function_id))
            fprintf(stderr, "\n  %s: default has function %d, keycache not\n",
                    name, dd->function_id);
        CU_ASSERT_TRUE(offers(kd, dd->function_id));
    }
}

/*
 * Whatever the default implements, keycache must offer as well: EVP picks
 * its path by which functions exist (e.g. 3.5's *_SKEY_INIT), so a missing
 * one changes behaviour even if keycache could answer the rest.
 */
static void test_same_functions(void)
{
    OSSL_PROVIDER *def = OSSL_PROVIDER_load(kct_keycache(), "default");
    OSSL_PROVIDER *kc = kct_keycache_provider();
    size_t i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(def);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kc);
    /* every row of the family registry */
    for (i = 0; i < kct_nfams; i++)
        check_functions(def, kc, kct_fams[i].kind == KCT_CIPHER
                                 ? OSSL_OP_CIPHER : OSSL_OP_MAC,
                        kct_fams[i].name);
    OSSL_PROVIDER_unload(def);
}

/*
 * A cipher row's context driven through its dispatch table, as a caller
 * other than 3.0's EVP may (3.0's EVP sets an init's params first): keyed
 * alone, copied, then an init with an IV and an "ivlen" among params, or
 * with an IV of another length; keyed with an IV, then again with params;
 * each followed by the lone IV-length query; what each returned, into out.
 */
static void direct_lengths(OSSL_PROVIDER *prov, const KCT_FAM *f, char *out,
                           size_t len)
{
    const OSSL_DISPATCH *d = implementation(prov, OSSL_OP_CIPHER, f->name);
    OSSL_FUNC_cipher_newctx_fn *newctx = (OSSL_FUNC_cipher_newctx_fn *)
        function(d, OSSL_FUNC_CIPHER_NEWCTX);
    OSSL_FUNC_cipher_dupctx_fn *dupctx = (OSSL_FUNC_cipher_dupctx_fn *)
        function(d, OSSL_FUNC_CIPHER_DUPCTX);
    OSSL_FUNC_cipher_freectx_fn *freectx = (OSSL_FUNC_cipher_freectx_fn *)
        function(d, OSSL_FUNC_CIPHER_FREECTX);
    OSSL_FUNC_cipher_encrypt_init_fn *einit =
        (OSSL_FUNC_cipher_encrypt_init_fn *)
        function(d, OSSL_FUNC_CIPHER_ENCRYPT_INIT);
    OSSL_FUNC_cipher_get_ctx_params_fn *get =
        (OSSL_FUNC_cipher_get_ctx_params_fn *)
        function(d, OSSL_FUNC_CIPHER_GET_CTX_PARAMS);
    unsigned char key[KCT_FAM_MAXKEY], iv[16];
    size_t eight = 8, v = 0, w = 0, x = 0;
    OSSL_PARAM p[2];
    void *c, *dup;
    int r1, r2 = -1, r3 = -1, r4 = -1, r5 = -1, r6, r7, r8;

    CU_ASSERT_FATAL(newctx != NULL && dupctx != NULL && freectx != NULL
                    && einit != NULL && get != NULL);
    kct_fill(key, sizeof(key), 71);
    kct_fill(iv, sizeof(iv), 72);
    c = newctx(OSSL_PROVIDER_get0_provider_ctx(prov));
    CU_ASSERT_FATAL(c != NULL);
    r1 = einit(c, key, f->keylen, NULL, 0, NULL);
    if ((dup = dupctx(c)) != NULL) {
        p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN,
                                           &eight);
        p[1] = OSSL_PARAM_construct_end();
        r2 = einit(dup, NULL, 0, iv, KCT_FAM_IVLEN, p);
        p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_IVLEN, &v);
        r3 = get(dup, p);
        freectx(dup);
    }
    /* ... and an init with an IV of another length than the last */
    if ((dup = dupctx(c)) != NULL) {
        r4 = einit(dup, NULL, 0, iv, 8, NULL);
        p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_IVLEN, &w);
        r5 = get(dup, p);
        freectx(dup);
    }
    /* keyed with an IV, then keyed again with it and params (GCM's rekey) */
    freectx(c);
    c = newctx(OSSL_PROVIDER_get0_provider_ctx(prov));
    CU_ASSERT_FATAL(c != NULL);
    r6 = einit(c, key, f->keylen, iv, KCT_FAM_IVLEN, NULL);
    p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &eight);
    p[1] = OSSL_PARAM_construct_end();
    r7 = einit(c, key, f->keylen, iv, KCT_FAM_IVLEN, p);
    p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_IVLEN, &x);
    r8 = get(c, p);
    snprintf(out, len, "%s: key %d init %d get %d ivlen %zu, init %d get %d "
             "ivlen %zu, key %d again %d get %d ivlen %zu", f->name, r1, r2,
             r3, v, r4, r5, w, r6, r7, r8, x);
    freectx(c);
    ERR_clear_error();
}

static void test_direct_lengths(void)
{
    OSSL_PROVIDER *def = OSSL_PROVIDER_load(kct_keycache(), "default");
    OSSL_PROVIDER *kc = kct_keycache_provider();
    char want[256], got[256];
    size_t i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(def);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kc);
    for (i = 0; i < kct_nfams; i++) {
        if (kct_fams[i].kind != KCT_CIPHER)
            continue;
        direct_lengths(def, &kct_fams[i], want, sizeof(want));
        direct_lengths(kc, &kct_fams[i], got, sizeof(got));
        if (strcmp(want, got) != 0)
            fprintf(stderr, "\n  default %s\n  keycache %s\n", want, got);
        CU_ASSERT_STRING_EQUAL(want, got);
    }
    OSSL_PROVIDER_unload(def);
}

/* ---------------------------------------------------------------------- */
/* EVP_SKEY (OpenSSL 3.5+)                                                */

#if OPENSSL_VERSION_NUMBER >= 0x30500000L
/* AES-256-GCM of msg keyed through an EVP_SKEY; out = ct || tag. */
static int skey_encrypt(OSSL_LIB_CTX *libctx, const char *key_propq,
                        const char *propq, OUTCOME *o)
{
    EVP_SKEY *skey;
    EVP_CIPHER *c = EVP_CIPHER_fetch(libctx, "AES-256-GCM", propq);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0, f = 0;

    memset(o, 0, sizeof(*o));
    skey = EVP_SKEY_import_raw_key(libctx, "GENERIC-SECRET",
                                   (unsigned char *)fam_key, 32,
                                   key_propq);
    if (c == NULL || ctx == NULL || skey == NULL) {
        o->ok = -1;
        goto end;
    }
    ERR_clear_error();
    o->set_ok = EVP_CipherInit_SKEY(ctx, c, skey, gcm_iv, 12, 1, NULL);
    o->set_err = first_error();
    o->ok = o->set_ok && EVP_EncryptUpdate(ctx, o->out, &n, msg, sizeof(msg))
            && EVP_EncryptFinal_ex(ctx, o->out + n, &f)
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16,
                                   o->out + n + f);
    o->outlen = o->ok ? (size_t)(n + f) + 16 : 0;
 end:
    ERR_clear_error();
    EVP_SKEY_free(skey);
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
    return o->ok >= 0;
}

/*
 * EVP_CipherInit_SKEY() requires the key manager and the cipher to come
 * from one provider, checked in libcrypto before any provider code runs.
 * keycache offers the default's key managers, so a query-less
 * GENERIC-SECRET key is keycache's like the query-less AES-GCM, and the
 * program runs as on default alone; so does one that asks default for the
 * key and the cipher.
 */
static void test_skey_init(void)
{
    OUTCOME d, k, w;

    if (OpenSSL_version_num() < 0x30500000L)
        return;
    CU_ASSERT_TRUE_FATAL(skey_encrypt(kct_default(), NULL, NULL, &d));
    CU_ASSERT_TRUE(d.set_ok && d.ok);
    CU_ASSERT_TRUE_FATAL(skey_encrypt(kct_keycache(), "provider=default",
                                      "provider=default", &w));
    same_outcome(&d, &w, "EVP_CipherInit_SKEY, key and cipher from default");
    CU_ASSERT_TRUE_FATAL(skey_encrypt(kct_keycache(), NULL, NULL, &k));
    same_outcome(&d, &k, "EVP_CipherInit_SKEY, query-less");
}
#endif

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("compat", NULL, NULL);

    CU_add_test(s, "HMAC repeated parameters", test_hmac_repeated);
    CU_add_test(s, "AES-GCM repeated parameters", test_gcm_repeated);
    CU_add_test(s, "every registry row: repeated parameters",
                test_registry_repeated);
    CU_add_test(s, "same dispatch functions as default, every registry row",
                test_same_functions);
    CU_add_test(s, "an init's params given to the init, every cipher row",
                test_direct_lengths);
#if OPENSSL_VERSION_NUMBER >= 0x30500000L
    CU_add_test(s, "EVP_CipherInit_SKEY (3.5+)", test_skey_init);
#endif
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
