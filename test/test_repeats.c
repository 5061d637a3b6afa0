/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A parameter named twice in one array, for every family keycache wraps.
 *
 * OpenSSL 3.x takes the first of a repeated name (the default's
 * OSSL_PARAM_locate); OpenSSL 4 fails the whole call with "repeated
 * parameter" and sets nothing.  Whichever the running default does,
 * keycache must do too, on a fresh context, before the key, and on
 * contexts keyed from the cache.  Each pattern sets every settable name
 * twice with two different valid values (so that first-or-last shows in
 * the output), then finishes the message; the records of the default and
 * of three keycache runs (the later ones served from the cache) must be
 * identical.
 */
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_family.h"
#include "kc_test.h"
#include "keycache.h"

typedef KCT_REC REC;

enum { V_OCT, V_UTF8, V_SIZE, V_UINT, V_INT };

/* one name and its two values: octet strings are given as text */
typedef struct {
    const char *name;
    int type;
    const char *s1, *s2;
    size_t n1, n2;
} REP;

typedef struct {
    const char *alg;            /* MAC or cipher name */
    int cipher;                 /* an EVP_CIPHER, not an EVP_MAC */
    const char *shape_name;     /* the MAC's digest or cipher, or NULL */
    const char *shape;
    const char *iv;             /* an IV set with the shape (GMAC), or NULL */
    size_t keylen;
    REP rep[5];
} FAM;

#define K1 "0123456789abcdef0123456789abcdef"
#define K2 "fedcba9876543210fedcba9876543210"

static const FAM fams[] = {
    { "HMAC", 0, OSSL_MAC_PARAM_DIGEST, "SHA256", NULL, 32, {
        { OSSL_MAC_PARAM_DIGEST, V_UTF8, "SHA256", "SHA384", 0, 0 },
        { OSSL_MAC_PARAM_KEY, V_OCT, K1, K2, 32, 32 },
        { OSSL_MAC_PARAM_PROPERTIES, V_UTF8, "", "provider=default", 0, 0 },
        { NULL } } },
    { "CMAC", 0, OSSL_MAC_PARAM_CIPHER, "AES-256-CBC", NULL, 32, {
        { OSSL_MAC_PARAM_CIPHER, V_UTF8, "AES-256-CBC", "AES-128-CBC", 0, 0 },
        { OSSL_MAC_PARAM_KEY, V_OCT, K1, K2, 32, 32 },
        { OSSL_MAC_PARAM_PROPERTIES, V_UTF8, "", "provider=default", 0, 0 },
        { NULL } } },
    { "GMAC", 0, OSSL_MAC_PARAM_CIPHER, "AES-256-GCM", "the first iv", 32, {
        { OSSL_MAC_PARAM_IV, V_OCT, "iv of twelve", "another iv..", 12, 12 },
        { OSSL_MAC_PARAM_KEY, V_OCT, K1, K2, 32, 32 },
        { OSSL_MAC_PARAM_CIPHER, V_UTF8, "AES-256-GCM", "AES-128-GCM", 0, 0 },
        { OSSL_MAC_PARAM_PROPERTIES, V_UTF8, "", "provider=default", 0, 0 },
        { NULL } } },
    { "KMAC-128", 0, NULL, NULL, NULL, 32, {
        { OSSL_MAC_PARAM_CUSTOM, V_OCT, "first", "second", 5, 6 },
        { OSSL_MAC_PARAM_SIZE, V_SIZE, NULL, NULL, 32, 20 },
        { OSSL_MAC_PARAM_XOF, V_INT, NULL, NULL, 0, 1 },
        { OSSL_MAC_PARAM_KEY, V_OCT, K1, K2, 32, 32 },
        { NULL } } },
    { "KMAC-256", 0, NULL, NULL, NULL, 32, {
        { OSSL_MAC_PARAM_CUSTOM, V_OCT, "first", "second", 5, 6 },
        { OSSL_MAC_PARAM_SIZE, V_SIZE, NULL, NULL, 64, 24 },
        { OSSL_MAC_PARAM_XOF, V_INT, NULL, NULL, 1, 0 },
        { NULL } } },
    { "AES-256-GCM", 1, NULL, NULL, NULL, 32, {
        { OSSL_CIPHER_PARAM_AEAD_IVLEN, V_SIZE, NULL, NULL, 12, 16 },
        { OSSL_CIPHER_PARAM_AEAD_TAGLEN, V_SIZE, NULL, NULL, 16, 12 },
        { NULL } } },
    { "AES-128-OCB", 1, NULL, NULL, NULL, 16, {
        { OSSL_CIPHER_PARAM_AEAD_IVLEN, V_SIZE, NULL, NULL, 12, 15 },
        { OSSL_CIPHER_PARAM_AEAD_TAG, V_OCT, NULL, NULL, 16, 12 },
        { NULL } } },
    { "AES-128-SIV", 1, NULL, NULL, NULL, 32, {
        { OSSL_CIPHER_PARAM_SPEED, V_UINT, NULL, NULL, 0, 1 },
        { OSSL_CIPHER_PARAM_KEYLEN, V_SIZE, NULL, NULL, 32, 64 },
        { NULL } } },
};
#define NFAMS (sizeof(fams) / sizeof(fams[0]))

static const unsigned char msg[] = "a message, its MAC or ciphertext";
static const unsigned char iv16[16] = "0123456789abcdef";
static size_t sizes[2];
static unsigned int uints[2];
static int ints[2];

/* {name=v1, name=v2}: the repeated pair */
static void pair(const REP *rp, OSSL_PARAM p[3])
{
    int i;

    for (i = 0; i < 2; i++) {
        const char *s = i == 0 ? rp->s1 : rp->s2;
        size_t n = i == 0 ? rp->n1 : rp->n2;

        switch (rp->type) {
        case V_OCT:
            /* a NULL string: a tag length, as OCB takes it */
            p[i] = OSSL_PARAM_construct_octet_string(rp->name, (void *)s, n);
            break;
        case V_UTF8:
            p[i] = OSSL_PARAM_construct_utf8_string(rp->name, (char *)s, 0);
            break;
        case V_SIZE:
            sizes[i] = n;
            p[i] = OSSL_PARAM_construct_size_t(rp->name, &sizes[i]);
            break;
        case V_UINT:
            uints[i] = (unsigned int)n;
            p[i] = OSSL_PARAM_construct_uint(rp->name, &uints[i]);
            break;
        default:
            ints[i] = (int)n;
            p[i] = OSSL_PARAM_construct_int(rp->name, &ints[i]);
            break;
        }
    }
    p[2] = OSSL_PARAM_construct_end();
}

static void step(REC *r, const char *what, int rc)
{
    kct_rec_printf(r, "%s rc=%d", what, rc);
    kct_rec_errs(r);
}

static void mac_use(EVP_MAC *mac, const FAM *f, const REP *rp, int before,
                    REC *r)
{
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    unsigned char out[128];
    OSSL_PARAM shape[3], rep[3], *sp = shape;
    size_t outl = 0;
    int rc;

    /*
     * GMAC's IV goes with the shape (one without draws a random IV), and
     * again after a cipher set before the key, which resets it
     */
    if (f->shape_name != NULL)
        *sp++ = OSSL_PARAM_construct_utf8_string(f->shape_name,
                                                 (char *)f->shape, 0);
    if (f->iv != NULL)
        *sp++ = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                  (void *)f->iv, 12);
    *sp = OSSL_PARAM_construct_end();
    pair(rp, rep);
    if (before) {
        step(r, "set shape", EVP_MAC_CTX_set_params(ctx, shape));
        step(r, "set twice, before the key", EVP_MAC_CTX_set_params(ctx, rep));
        if (f->iv != NULL && strcmp(rp->name, OSSL_MAC_PARAM_CIPHER) == 0)
            step(r, "set iv", EVP_MAC_CTX_set_params(ctx, shape + 1));
        step(r, "init", EVP_MAC_init(ctx, (const unsigned char *)K1,
                                     f->keylen, NULL));
    } else {
        step(r, "init", EVP_MAC_init(ctx, (const unsigned char *)K1,
                                     f->keylen, shape));
        step(r, "set twice", EVP_MAC_CTX_set_params(ctx, rep));
    }
    step(r, "update", EVP_MAC_update(ctx, msg, sizeof(msg)));
    rc = EVP_MAC_final(ctx, out, &outl, sizeof(out));
    kct_rec_printf(r, "final rc=%d len=%zu ", rc, rc == 1 ? outl : 0);
    kct_rec_hex(r, out, rc == 1 ? outl : 0);
    kct_rec_errs(r);
    EVP_MAC_CTX_free(ctx);
}

static void cipher_use(EVP_CIPHER *ci, const FAM *f, const REP *rp,
                       int before, REC *r)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char out[128], tag[16];
    OSSL_PARAM rep[3], g[2];
    int n = 0, rc;

    pair(rp, rep);
    if (before) {
        step(r, "init cipher", EVP_EncryptInit_ex2(ctx, ci, NULL, NULL, NULL));
        step(r, "set twice, before the key",
             EVP_CIPHER_CTX_set_params(ctx, rep));
        step(r, "init key", EVP_EncryptInit_ex2(ctx, NULL,
                                                (const unsigned char *)K1,
                                                iv16, NULL));
    } else {
        step(r, "init key", EVP_EncryptInit_ex2(ctx, ci,
                                                (const unsigned char *)K1,
                                                NULL, NULL));
        step(r, "set twice", EVP_CIPHER_CTX_set_params(ctx, rep));
        step(r, "init iv", EVP_EncryptInit_ex2(ctx, NULL, NULL, iv16, NULL));
    }
    rc = EVP_EncryptUpdate(ctx, out, &n, msg, (int)sizeof(msg));
    kct_rec_printf(r, "update rc=%d len=%d ", rc, n);
    kct_rec_hex(r, out, rc == 1 && n > 0 ? (size_t)n : 0);
    kct_rec_errs(r);
    step(r, "final", EVP_EncryptFinal_ex(ctx, out, &n));
    memset(tag, 0, sizeof(tag));
    g[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag,
                                             (size_t)EVP_CIPHER_CTX_get_tag_length(ctx));
    g[1] = OSSL_PARAM_construct_end();
    rc = EVP_CIPHER_CTX_get_params(ctx, g);
    kct_rec_printf(r, "tag rc=%d ", rc);
    kct_rec_hex(r, tag, rc == 1 ? g[0].data_size : 0);
    kct_rec_errs(r);
    EVP_CIPHER_CTX_free(ctx);
    (void)f;
}

/* Every family, every name, after and before the key, a few times. */
static void pat_repeats(OSSL_LIB_CTX *libctx, REC *r)
{
    size_t i;
    int j, before, use;

    for (i = 0; i < NFAMS; i++) {
        const FAM *f = &fams[i];
        EVP_MAC *mac = f->cipher ? NULL : EVP_MAC_fetch(libctx, f->alg, NULL);
        EVP_CIPHER *ci = f->cipher ? EVP_CIPHER_fetch(libctx, f->alg, NULL)
                                   : NULL;

        step(r, f->alg, mac != NULL || ci != NULL);
        for (j = 0; f->rep[j].name != NULL; j++) {
            for (before = 0; before < 2; before++) {
                kct_rec_printf(r, "%s %s twice%s\n", f->alg, f->rep[j].name,
                               before ? ", before the key" : "");
                for (use = 0; use < 3; use++) {
                    if (mac != NULL)
                        mac_use(mac, f, &f->rep[j], before, r);
                    else if (ci != NULL)
                        cipher_use(ci, f, &f->rep[j], before, r);
                }
            }
        }
        EVP_MAC_free(mac);
        EVP_CIPHER_free(ci);
    }
}

static int served_by_keycache(void)
{
    size_t i;
    int ok = 1;

    for (i = 0; i < NFAMS; i++) {
        const OSSL_PROVIDER *prov = NULL;
        EVP_MAC *mac = NULL;
        EVP_CIPHER *ci = NULL;

        if (fams[i].cipher) {
            if ((ci = EVP_CIPHER_fetch(kct_keycache(), fams[i].alg, NULL))
                != NULL)
                prov = EVP_CIPHER_get0_provider(ci);
        } else if ((mac = EVP_MAC_fetch(kct_keycache(), fams[i].alg, NULL))
                   != NULL) {
            prov = EVP_MAC_get0_provider(mac);
        }
        if (prov == NULL || strcmp(kct_provider_name(prov),
                                   KEYCACHE_PROVIDER_NAME) != 0) {
            fprintf(stderr, "\n%s is not served by keycache\n", fams[i].alg);
            ok = 0;
        }
        EVP_MAC_free(mac);
        EVP_CIPHER_free(ci);
    }
    ERR_clear_error();
    return ok;
}

static void test_repeats(void)
{
    kct_rec_pattern("pat_repeats", pat_repeats, NULL, 1, served_by_keycache,
                    1);
}

/*
 * fams[] holds what each family's parameters are, so it is written by
 * hand: every family of the registry (its configuration key) must have a
 * row there, so that a new one is not left out.
 */
static void test_every_family(void)
{
    size_t i, j, r;
    int covered;

    for (i = 0; i < kct_nfams; i++) {
        covered = 0;
        for (j = 0; j < NFAMS; j++)
            for (r = 0; r < kct_nfams; r++)
                if (strcmp(kct_fams[r].name, fams[j].alg) == 0
                    && strcmp(kct_fams[r].conf, kct_fams[i].conf) == 0)
                    covered = 1;
        if (!covered)
            fprintf(stderr, "\n%s (%s): no row in test_repeats.c's fams[]\n",
                    kct_fams[i].id, kct_fams[i].conf);
        CU_ASSERT(covered);
    }
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("a parameter named twice", NULL, NULL);

    CU_add_test(s, "every family, after and before the key, cached",
                test_repeats);
    CU_add_test(s, "every registry family has a row", test_every_family);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
