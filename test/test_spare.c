/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regressions from review: calls on which a used AES-GCM context answers
 * differently from a fresh one, and provider teardown racing thread exit.
 * keycache once reused used GCM contexts ("spares") and these sequences
 * broke that; each GCM sequence first runs one encryption with the key and
 * frees the context, then makes the calls that could tell a used context
 * from a fresh one.  The record of returns, errors and bytes must equal the
 * default's, so any future reuse of used contexts has to pass them.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_test.h"

#define REC_MAX 4096

typedef struct {
    char text[REC_MAX];
    size_t len;
} REC;

static void note(REC *r, const char *what, int ret, const unsigned char *buf,
                 size_t n)
{
    unsigned long e = ERR_peek_last_error();
    size_t i;

    r->len += snprintf(r->text + r->len, REC_MAX - r->len,
                       "%s ret=%d err=%d/%d", what, ret, ERR_GET_LIB(e),
                       ERR_GET_REASON(e));
    for (i = 0; buf != NULL && i < n && r->len + 3 < REC_MAX; i++)
        r->len += snprintf(r->text + r->len, REC_MAX - r->len, "%s%02x",
                           i == 0 ? " " : "", buf[i]);
    if (r->len + 2 < REC_MAX)
        r->text[r->len++] = '\n', r->text[r->len] = '\0';
    ERR_clear_error();
}

static unsigned char K[32], IV[12], IV2[12], P[32];

/*
 * Encrypt one message and free the context: a keycache that reuses used
 * contexts would park this one for the next init with the key.  Its
 * ciphertext and tag are noted, so compared with the default's.
 */
static void park_one(REC *r, EVP_CIPHER *c, unsigned char *ct,
                     unsigned char *tag)
{
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    unsigned char out[64];
    int outl = 0, ret;

    note(r, "park einit", EVP_EncryptInit_ex2(x, c, K, IV2, NULL), NULL, 0);
    /* (the call before note() reads outl) */
    ret = EVP_EncryptUpdate(x, ct, &outl, P, sizeof(P));
    note(r, "park update", ret, ct, (size_t)outl);
    note(r, "park final", EVP_EncryptFinal_ex(x, out, &outl), NULL, 0);
    note(r, "park tag", EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, tag),
         tag, 16);
    EVP_CIPHER_CTX_free(x);
}

/* A rejected TLS AAD, decrypt final without a tag, then a normal message. */
static void seq_tls_aad(OSSL_LIB_CTX *libctx, REC *r, int zero_update)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(libctx, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *x;
    unsigned char C[32], T[16], out[64], aad[13] = { 0 };
    OSSL_PARAM p[2] = {
        OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD, aad, 13),
        OSSL_PARAM_END
    };
    int outl = 0, ret;

    park_one(r, c, C, T);
    x = EVP_CIPHER_CTX_new();
    note(r, "dinit", EVP_DecryptInit_ex2(x, c, K, IV, NULL), NULL, 0);
    if (zero_update)
        aad[11] = 0, aad[12] = 40;   /* a valid length field */
    note(r, "tlsaad", EVP_CIPHER_CTX_set_params(x, p), NULL, 0);
    if (zero_update)
        note(r, "update0", EVP_DecryptUpdate(x, out, &outl, C, 0), NULL, 0);
    note(r, "final", EVP_DecryptFinal_ex(x, out, &outl), NULL, 0);
    note(r, "dinit iv2", EVP_DecryptInit_ex2(x, NULL, NULL, IV2, NULL),
         NULL, 0);
    note(r, "set tag", EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, 16, T),
         NULL, 0);
    outl = 0;
    ret = EVP_DecryptUpdate(x, out, &outl, C, sizeof(C));
    note(r, "update", ret, out, (size_t)outl);
    note(r, "final", EVP_DecryptFinal_ex(x, out, &outl), NULL, 0);
    EVP_CIPHER_CTX_free(x);
    EVP_CIPHER_free(c);
}

/* A 12-byte tag set after a use of the key, then read back as 16 bytes. */
static void seq_short_tag(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(libctx, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *x;
    unsigned char C[32], T[16], tag12[12], got[16];

    memset(tag12, 0xaa, sizeof(tag12));
    park_one(r, c, C, T);
    x = EVP_CIPHER_CTX_new();
    note(r, "dinit", EVP_DecryptInit_ex2(x, c, K, IV2, NULL), NULL, 0);
    note(r, "set tag12",
         EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, 12, tag12), NULL, 0);
    note(r, "einit", EVP_EncryptInit_ex2(x, NULL, NULL, IV2, NULL), NULL, 0);
    memset(got, 0x5a, sizeof(got));
    note(r, "get tag16", EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, got),
         got, sizeof(got));
    EVP_CIPHER_CTX_free(x);
    EVP_CIPHER_free(c);
}

/*
 * A decrypt that forgets its tag, after a use of the key that decrypted the
 * very same message: no stale tag may verify it.
 */
static void seq_forgotten_tag(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(libctx, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *x;
    unsigned char C[32], T[16], out[64];
    int outl, i;

    park_one(r, c, C, T);
    for (i = 0; i < 2; i++) {
        x = EVP_CIPHER_CTX_new();
        note(r, "dinit", EVP_DecryptInit_ex2(x, c, K, IV2, NULL), NULL, 0);
        if (i == 0)
            note(r, "set tag",
                 EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, 16, T), NULL, 0);
        note(r, "update", EVP_DecryptUpdate(x, out, &outl, C, sizeof(C)),
             NULL, 0);
        note(r, i == 0 ? "final with tag" : "final without tag",
             EVP_DecryptFinal_ex(x, out, &outl), NULL, 0);
        EVP_CIPHER_CTX_free(x);
    }
    EVP_CIPHER_free(c);
}

/* TLS params after a use of the key, then EVP_Cipher() data and final. */
static void seq_tls_then_cipher_final(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(libctx, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *x;
    unsigned char C[32], T[16], buf[32], fixed[4] = { 1, 2, 3, 4 }, got[16];
    unsigned char tag5[5] = { 9, 9, 9, 9, 9 };
    /* the tag is refused first (encrypting), so the TLS IV is never set -
     * and never randomised - but the list still names a TLS param */
    OSSL_PARAM p[3] = {
        OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag5, sizeof(tag5)),
        OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, fixed,
                                sizeof(fixed)),
        OSSL_PARAM_END
    };

    park_one(r, c, C, T);
    x = EVP_CIPHER_CTX_new();
    note(r, "einit", EVP_EncryptInit_ex2(x, c, K, IV2, NULL), NULL, 0);
    note(r, "tag + tlsivfixed", EVP_CIPHER_CTX_set_params(x, p), NULL, 0);
    memcpy(buf, P, sizeof(buf));
    note(r, "cipher", EVP_Cipher(x, buf, buf, sizeof(buf)), buf, sizeof(buf));
    note(r, "cipher final", EVP_Cipher(x, NULL, NULL, 0), NULL, 0);
    memset(got, 0, sizeof(got));
    note(r, "get tag", EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, 16, got),
         got, sizeof(got));
    EVP_CIPHER_CTX_free(x);
    EVP_CIPHER_free(c);
}

static void compare(void (*seq)(OSSL_LIB_CTX *, REC *))
{
    REC def = { "", 0 }, kc;
    int run;

    seq(kct_default(), &def);
    for (run = 0; run < 3; run++) {
        memset(&kc, 0, sizeof(kc));
        seq(kct_keycache(), &kc);
        if (strcmp(def.text, kc.text) != 0)
            printf("\n--- default\n%s--- keycache (run %d)\n%s", def.text, run,
                   kc.text);
        CU_ASSERT_STRING_EQUAL(kc.text, def.text);
    }
}

static void tls_rejected(OSSL_LIB_CTX *l, REC *r) { seq_tls_aad(l, r, 0); }
static void tls_zero_update(OSSL_LIB_CTX *l, REC *r) { seq_tls_aad(l, r, 1); }

static void test_tls_rejected(void) { compare(tls_rejected); }
static void test_tls_zero_update(void) { compare(tls_zero_update); }
static void test_short_tag(void) { compare(seq_short_tag); }
static void test_forgotten_tag(void) { compare(seq_forgotten_tag); }
static void test_tls_cipher_final(void) { compare(seq_tls_then_cipher_final); }

/* Threads with warm caches exit while their library context is freed. */
static OSSL_LIB_CTX *race_ctx;
static pthread_barrier_t race_bar;

static void *race_worker(void *arg)
{
    unsigned char out[32], key[32];
    size_t outl;
    int i;

    for (i = 0; i < 16; i++) {
        memset(key, 0, sizeof(key));
        key[0] = (unsigned char)i;
        key[1] = (unsigned char)(size_t)arg;
        EVP_Q_mac(race_ctx, "HMAC", NULL, "SHA256", NULL, key, sizeof(key),
                  (const unsigned char *)"m", 1, out, sizeof(out), &outl);
    }
    pthread_barrier_wait(&race_bar);
    return NULL;
}

static void test_teardown_vs_thread_exit(void)
{
    int round;
    size_t i;

    for (round = 0; round < 10; round++) {
        pthread_t t[8];

        race_ctx = OSSL_LIB_CTX_new();
        CU_ASSERT_FATAL(OSSL_LIB_CTX_load_config(race_ctx, kct_conf_path()));
        pthread_barrier_init(&race_bar, NULL, 9);
        for (i = 0; i < 8; i++)
            pthread_create(&t[i], NULL, race_worker, (void *)i);
        pthread_barrier_wait(&race_bar);
        OSSL_LIB_CTX_free(race_ctx);      /* while the workers exit */
        for (i = 0; i < 8; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&race_bar);
    }
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("spare", NULL, NULL);

    memset(K, 7, sizeof(K));
    memset(IV, 1, sizeof(IV));
    memset(IV2, 2, sizeof(IV2));
    memset(P, 0x55, sizeof(P));
    CU_add_test(s, "rejected TLS AAD, final, next message",
                test_tls_rejected);
    CU_add_test(s, "TLS AAD, empty update, final, next message",
                test_tls_zero_update);
    CU_add_test(s, "short tag read back in full", test_short_tag);
    CU_add_test(s, "forgotten tag never verifies", test_forgotten_tag);
    CU_add_test(s, "TLS params, EVP_Cipher final, get tag",
                test_tls_cipher_final);
    CU_add_test(s, "teardown while threads exit",
                test_teardown_vs_thread_exit);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
