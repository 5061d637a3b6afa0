/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CMAC, GMAC and KMAC call-pattern differential tests (the template
 * families, provider/layer/tmpl.c).
 *
 * Every pattern drives the EVP_MAC API the way some application might and
 * writes everything observable into a text record: return values, sizes,
 * MAC bytes and the errors left on the queue after each call, in full
 * (kct_err_next: code, raising function, file, line and data).  A pattern
 * runs once against the default provider and three times against keycache
 * (keycache-test.cnf: admit_after = 1, with unrelated keys and shapes MACed
 * in between, so that the later runs are served from cached templates); all
 * records must be identical, and patterns that reuse keys must hit.
 * Known answers (RFC 4493, NIST SP 800-38B/D and SP 800-185 samples) are
 * checked as well, independently of either provider.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "keycache.h"

#define OUTMAX 256

/* Short names for the shared transcript recorder (kc_test.h) */
typedef KCT_REC REC;
typedef kct_rec_fn pattern_fn;
#define rec_printf kct_rec_printf
#define rec_errs kct_rec_errs
#define rec_hex kct_rec_hex
#define rec_free kct_rec_free

/* ---------------------------------------------------------------------- */
/* Recorded EVP_MAC steps                                                 */

static OSSL_PARAM p_utf8(const char *name, const char *v)
{
    return OSSL_PARAM_construct_utf8_string(name, (char *)v, 0);
}

static OSSL_PARAM p_oct(const char *name, const void *v, size_t n)
{
    return OSSL_PARAM_construct_octet_string(name, (void *)v, n);
}

static EVP_MAC *fetch(OSSL_LIB_CTX *libctx, REC *r, const char *name)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, name, NULL);

    rec_printf(r, "fetch %s rc=%d", name, mac != NULL);
    rec_errs(r);
    return mac;
}

/* (kc_test.c's; OUTMAX: every final here has room for any MAC) */
#define new_ctx(mac, r) kct_mac_new(r, mac)
#define do_set kct_mac_set
#define do_init kct_mac_init
#define do_update kct_mac_update
#define do_final(r, ctx, out, outl, outsize) \
    kct_mac_final(r, ctx, out, outl, outsize)

/* Without a valid IV GMAC draws one at random: return values only. */
static int do_final_rc(REC *r, EVP_MAC_CTX *ctx, unsigned char *out)
{
    size_t outl = 0;
    int rc = ctx != NULL && EVP_MAC_final(ctx, out, &outl, OUTMAX);

    rec_printf(r, "final rc=%d len=%zu", rc, rc ? outl : 0);
    rec_errs(r);
    return rc;
}

static int do_final_xof(REC *r, EVP_MAC_CTX *ctx, unsigned char *out,
                        size_t outsize)
{
    int rc;

    memset(out, 0x5a, OUTMAX);
    rc = ctx != NULL && EVP_MAC_finalXOF(ctx, out, outsize);
    rec_printf(r, "finalXOF(%zu) rc=%d out=", outsize, rc);
    rec_hex(r, out, outsize);
    rec_errs(r);
    return rc;
}

static void do_sizes(REC *r, EVP_MAC_CTX *ctx, const char *when)
{
    rec_printf(r, "sizes %s mac=%zu block=%zu", when,
               ctx == NULL ? 0 : EVP_MAC_CTX_get_mac_size(ctx),
               ctx == NULL ? 0 : EVP_MAC_CTX_get_block_size(ctx));
    rec_errs(r);
}

/* init + update + final */
static int do_mac(REC *r, EVP_MAC_CTX *ctx, const unsigned char *key,
                  size_t keylen, const OSSL_PARAM *params,
                  const unsigned char *msg, size_t msglen,
                  unsigned char *out, size_t *outl)
{
    int ok = do_init(r, ctx, key, keylen, params);

    ok = do_update(r, ctx, msg, msglen) && ok;
    return do_final(r, ctx, out, outl, OUTMAX) && ok;
}

/* ---------------------------------------------------------------------- */
/* Families and test data                                                 */

enum { F_CMAC, F_GMAC, F_KMAC };

typedef struct {
    const char *mac;
    int kind;
    const char *sub[3];         /* the cached ciphers, by key size */
    size_t keylen[3];
} FAM;

static const FAM fams[] = {
    { "CMAC", F_CMAC, { "AES-128-CBC", "AES-192-CBC", "AES-256-CBC" },
      { 16, 24, 32 } },
    { "GMAC", F_GMAC, { "AES-128-GCM", "AES-192-GCM", "AES-256-GCM" },
      { 16, 24, 32 } },
    { "KMAC-128", F_KMAC, { NULL, NULL, NULL }, { 16, 32, 64 } },
    { "KMAC-256", F_KMAC, { NULL, NULL, NULL }, { 32, 4, 128 } },
};
#define NFAMS (sizeof(fams) / sizeof(fams[0]))

#define NKEYS 4
static unsigned char keys[NKEYS][200];
static unsigned char msgs[4][300];
static const size_t msglens[4] = { 0, 3, 64, 300 };
static unsigned char ivs[4][200];

static void init_data(void)
{
    int i;

    for (i = 0; i < NKEYS; i++)
        kct_fill(keys[i], sizeof(keys[i]), 700 + i);
    for (i = 0; i < 4; i++) {
        kct_fill(msgs[i], sizeof(msgs[i]), 800 + i);
        kct_fill(ivs[i], sizeof(ivs[i]), 900 + i);
    }
}

/*
 * The parameters that make a family's context usable: the cipher (CMAC,
 * GMAC) and an IV (GMAC; without one the default draws it at random).
 */
static int base_params(const FAM *f, int i, int iv, OSSL_PARAM *p)
{
    int n = 0;

    if (f->sub[i] != NULL)
        p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, f->sub[i]);
    if (f->kind == F_GMAC)
        p[n++] = p_oct(OSSL_MAC_PARAM_IV, ivs[iv], 12);
    p[n] = OSSL_PARAM_construct_end();
    return n;
}

static void rec_fam(REC *r, const FAM *f, int i)
{
    rec_printf(r, "-- %s %s/%zu\n", f->mac, f->sub[i] != NULL ? f->sub[i]
               : "-", f->keylen[i]);
}

/* ---------------------------------------------------------------------- */
/* Running a pattern                                                      */

/* Unrelated keys and shapes on keycache, so the cache holds other entries */
static void churn(void)
{
    unsigned char key[sizeof(keys[0])], out[OUTMAX];
    OSSL_PARAM p[3];
    size_t outl, f;
    int i;

    for (i = 0; i < 6; i++) {
        kct_fill(key, sizeof(key), 5000 + i);
        for (f = 0; f < NFAMS; f++) {
            base_params(&fams[f], i % 3, i % 4, p);
            if (fams[f].kind == F_KMAC && i % 2 == 1) {
                p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "churn", 5);
                p[1] = OSSL_PARAM_construct_end();
            }
            EVP_Q_mac(kct_keycache(), fams[f].mac, NULL, NULL, p, key,
                      fams[f].keylen[i % 3], msgs[2], 20, out, sizeof(out),
                      &outl);
        }
    }
    ERR_clear_error();
}

static int served_by_keycache(void)
{
    size_t f;
    int ok = 1;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = EVP_MAC_fetch(kct_keycache(), fams[f].mac, NULL);

        if (mac == NULL
            || strcmp(kct_provider_name(EVP_MAC_get0_provider(mac)),
                      KEYCACHE_PROVIDER_NAME) != 0) {
            fprintf(stderr, "\n%s is not served by keycache\n", fams[f].mac);
            ok = 0;
        }
        EVP_MAC_free(mac);
    }
    ERR_clear_error();
    return ok;
}

/*
 * The keycache runs go on a thread of their own: every pattern starts with
 * an empty per-thread cache, whatever the patterns before it did to this
 * thread's hit rate (a miss-heavy one makes new contexts skip the cache for
 * a while, see test_cold).
 */
#define run_pattern(fn, hits) \
    kct_rec_pattern(#fn, fn, churn, 1, served_by_keycache, hits)

/* ---------------------------------------------------------------------- */
/* Patterns                                                               */

/* EVP_Q_mac, keys alternating, as unchanged one-shot code does */
static void pat_q_mac(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX], *res;
    OSSL_PARAM p[3], *params;
    size_t f, outl;
    int i, j, k;

    for (f = 0; f < NFAMS; f++) {
        for (i = 0; i < 3; i++) {
            rec_fam(r, &fams[f], i);
            for (j = 0; j < 6; j++) {
                k = j % 3 == 2 ? 1 : 0;
                /* the cipher goes in as EVP_Q_mac's subalg */
                params = p;
                if (fams[f].kind == F_GMAC) {
                    p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[j % 4], 12);
                    p[1] = OSSL_PARAM_construct_end();
                } else if (fams[f].kind == F_KMAC && j % 2 == 1) {
                    p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "My Tagged App", 13);
                    p[1] = OSSL_PARAM_construct_end();
                } else {
                    params = NULL;
                }
                res = EVP_Q_mac(libctx, fams[f].mac, NULL, fams[f].sub[i],
                                params, keys[k], fams[f].keylen[i],
                                msgs[j % 4], msglens[j % 4], out, sizeof(out),
                                &outl);
                rec_printf(r, "q_mac res=%s len=%zu mac=",
                           res == out ? "out" : "NULL", outl);
                if (res != NULL)
                    rec_hex(r, out, outl);
                rec_errs(r);
            }
        }
        /* NULL out: EVP_Q_mac allocates */
        base_params(&fams[f], 0, 0, p);
        res = EVP_Q_mac(libctx, fams[f].mac, NULL, NULL, p, keys[2],
                        fams[f].keylen[0], msgs[2], msglens[2], NULL, 0,
                        &outl);
        rec_printf(r, "q_mac alloc len=%zu mac=", outl);
        if (res != NULL)
            rec_hex(r, res, outl);
        rec_errs(r);
        OPENSSL_free(res);
        /* output buffer too small */
        res = EVP_Q_mac(libctx, fams[f].mac, NULL, NULL, p, keys[2],
                        fams[f].keylen[0], msgs[1], msglens[1], out, 8,
                        &outl);
        rec_printf(r, "q_mac small res=%s", res == NULL ? "NULL" : "out");
        rec_errs(r);
    }
}

/*
 * A fresh EVP_MAC_CTX per message: cipher and IV set first, or given with
 * the key to EVP_MAC_init.
 */
static void pat_fresh(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4];
    size_t f, outl;
    int i, j;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            rec_fam(r, &fams[f], i);
            for (j = 0; j < 8; j++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);
                int k = (j / 2) % 3;

                base_params(&fams[f], i, j % 4, p);
                if (j % 2 == 0) {
                    do_set(r, ctx, p);
                    do_mac(r, ctx, keys[k], fams[f].keylen[i], NULL,
                           msgs[j % 4], msglens[j % 4], out, &outl);
                } else {
                    do_mac(r, ctx, keys[k], fams[f].keylen[i], p,
                           msgs[j % 4], msglens[j % 4], out, &outl);
                }
                EVP_MAC_CTX_free(ctx);
            }
        }
        EVP_MAC_free(mac);
    }
}

/* The key as a set_params "key" parameter, alone or with others */
static void pat_key_in_set(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[5];
    size_t f, outl;
    int i, j, n;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            rec_fam(r, &fams[f], i);
            for (j = 0; j < 6; j++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);
                int k = j % 2;

                switch (j % 3) {
                case 0:
                    /* everything in one array, the key first */
                    p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[k],
                                 fams[f].keylen[i]);
                    n = base_params(&fams[f], i, j % 4, p + 1);
                    (void)n;
                    do_set(r, ctx, p);
                    break;
                case 1:
                    /* cipher first, then the key alone */
                    base_params(&fams[f], i, j % 4, p);
                    do_set(r, ctx, p);
                    p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[k],
                                 fams[f].keylen[i]);
                    p[1] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    break;
                default:
                    /* the key and the IV in the last call */
                    n = 0;
                    if (fams[f].sub[i] != NULL) {
                        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[f].sub[i]);
                        p[1] = OSSL_PARAM_construct_end();
                        do_set(r, ctx, p);
                    }
                    p[n++] = p_oct(OSSL_MAC_PARAM_KEY, keys[k],
                                   fams[f].keylen[i]);
                    if (fams[f].kind == F_GMAC)
                        p[n++] = p_oct(OSSL_MAC_PARAM_IV, ivs[j % 4], 16);
                    p[n] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    break;
                }
                /* KMAC only stores such a key: no init, no MAC yet */
                if (j < 3)
                    do_update(r, ctx, msgs[1], msglens[1]);
                do_init(r, ctx, NULL, 0, NULL);
                do_update(r, ctx, msgs[j % 4], msglens[j % 4]);
                do_final(r, ctx, out, &outl, OUTMAX);
                /* and a second message, keyless */
                do_init(r, ctx, NULL, 0, NULL);
                do_update(r, ctx, msgs[1], msglens[1]);
                do_final(r, ctx, out, &outl, OUTMAX);
                EVP_MAC_CTX_free(ctx);
            }
        }
        EVP_MAC_free(mac);
    }
}

/* Keyless re-init after keying, abandoned messages, a new IV each time */
static void pat_reinit(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4], iv[2];
    size_t f, outl;
    int i, j;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r), *other;

            rec_fam(r, &fams[f], i);
            base_params(&fams[f], i, 0, p);
            do_mac(r, ctx, keys[i % 2], fams[f].keylen[i], p, msgs[2],
                   msglens[2], out, &outl);
            for (j = 0; j < 4; j++) {
                /* another context with another key in between */
                other = new_ctx(mac, r);
                do_mac(r, other, keys[3], fams[f].keylen[i], p, msgs[1],
                       msglens[1], out, &outl);
                EVP_MAC_CTX_free(other);
                iv[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[j], 12 + j);
                iv[1] = OSSL_PARAM_construct_end();
                do_mac(r, ctx, NULL, 0, fams[f].kind == F_GMAC ? iv : NULL,
                       msgs[j], msglens[j], out, &outl);
                /* abandoned half-way */
                do_update(r, ctx, msgs[3], 100);
            }
            /* re-keyed in place with another key */
            do_mac(r, ctx, keys[2], fams[f].keylen[i], p, msgs[3], msglens[3],
                   out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
}

/* EVP_MAC_CTX_dup before the key and in the middle of a message */
static void pat_dup(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4];
    size_t f, outl;
    int i;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r), *dup;

            rec_fam(r, &fams[f], i);
            base_params(&fams[f], i, 1, p);
            do_set(r, ctx, p);
            /* before the key: both get keyed, with different keys */
            dup = ctx != NULL ? EVP_MAC_CTX_dup(ctx) : NULL;
            rec_printf(r, "dup rc=%d", dup != NULL);
            rec_errs(r);
            do_mac(r, ctx, keys[0], fams[f].keylen[i], NULL, msgs[2],
                   msglens[2], out, &outl);
            do_mac(r, dup, keys[1], fams[f].keylen[i], NULL, msgs[2],
                   msglens[2], out, &outl);
            EVP_MAC_CTX_free(dup);
            /* in the middle of a message */
            do_init(r, ctx, keys[1], fams[f].keylen[i], NULL);
            do_update(r, ctx, msgs[3], 100);
            dup = ctx != NULL ? EVP_MAC_CTX_dup(ctx) : NULL;
            rec_printf(r, "dup rc=%d", dup != NULL);
            rec_errs(r);
            do_update(r, ctx, msgs[3] + 100, 200);
            do_update(r, dup, msgs[2], 64);
            do_final(r, ctx, out, &outl, OUTMAX);
            do_final(r, dup, out, &outl, OUTMAX);
            EVP_MAC_CTX_free(ctx);
            /* the duplicate keeps the key for a keyless re-init */
            do_mac(r, dup, NULL, 0, NULL, msgs[1], msglens[1], out, &outl);
            EVP_MAC_CTX_free(dup);
        }
        EVP_MAC_free(mac);
    }
}

/*
 * A keyed template duplicated per message (pyca's CMAC.copy(),
 * rust-openssl): the copy used, a copy of the copy, a copy keyed again
 * (another key, its own, none), a cipher set on a copy, the original last.
 */
static void pat_dup_keyed(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4];
    size_t f, outl;
    int i;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);
        EVP_MAC_CTX *t = new_ctx(mac, r), *a, *b;
        size_t kl = fams[f].keylen[0];

        rec_fam(r, &fams[f], 0);
        base_params(&fams[f], 0, 0, p);
        do_init(r, t, keys[0], kl, p);
        for (i = 0; i < 8; i++) {
            a = t != NULL ? EVP_MAC_CTX_dup(t) : NULL;
            rec_printf(r, "dup rc=%d", a != NULL);
            rec_errs(r);
            if (i % 4 == 1)
                do_init(r, a, keys[1], kl, NULL);
            else if (i % 4 == 2)
                do_init(r, a, keys[0], kl, NULL);
            else if (i % 4 == 3)
                do_init(r, a, NULL, 0, NULL);
            do_update(r, a, msgs[3], 50 + i);
            b = a != NULL ? EVP_MAC_CTX_dup(a) : NULL;
            rec_printf(r, "dup of dup rc=%d", b != NULL);
            rec_errs(r);
            if (i >= 4) {
                /* another cipher (or IV) on the copy's copy, then a key */
                base_params(&fams[f], 1, 1, p);
                do_set(r, b, p);
                do_init(r, b, keys[2], fams[f].keylen[1], NULL);
            }
            do_update(r, b, msgs[2], msglens[2]);
            do_final(r, b, out, &outl, OUTMAX);
            do_final(r, a, out, &outl, OUTMAX);
            EVP_MAC_CTX_free(b);
            EVP_MAC_CTX_free(a);
        }
        do_update(r, t, msgs[1], msglens[1]);
        do_final(r, t, out, &outl, OUTMAX);
        EVP_MAC_CTX_free(t);
        EVP_MAC_free(mac);
    }
}

/* Cipher, IV, customisation string, size set after the key */
static void pat_after_key(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4], q[3];
    size_t f, outl, sz = 20;
    int i;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            rec_fam(r, &fams[f], i);
            base_params(&fams[f], i, 2, p);
            do_mac(r, ctx, keys[0], fams[f].keylen[i], p, msgs[1],
                   msglens[1], out, &outl);
            switch (fams[f].kind) {
            case F_KMAC:
                q[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "after", 5);
                q[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
                q[2] = OSSL_PARAM_construct_end();
                break;
            case F_GMAC:
                q[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[3], 7);
                q[1] = OSSL_PARAM_construct_end();
                break;
            default:
                /* another cipher for the same key: the next key uses it */
                q[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[f].sub[(i + 1) % 3]);
                q[1] = OSSL_PARAM_construct_end();
                break;
            }
            do_set(r, ctx, q);
            do_sizes(r, ctx, "after set");
            do_mac(r, ctx, NULL, 0, NULL, msgs[2], msglens[2], out, &outl);
            do_mac(r, ctx, keys[1], fams[f].keylen[(i + 1) % 3], NULL,
                   msgs[2], msglens[2], out, &outl);
            do_mac(r, ctx, keys[1], fams[f].keylen[i], NULL, msgs[2],
                   msglens[2], out, &outl);
            EVP_MAC_CTX_free(ctx);
            /*
             * Set after the key and freed at once: what was set must not
             * reach the next context with this key (CMAC keeps a cipher
             * given after the key for the next keyed init).
             */
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[0], fams[f].keylen[i], p, msgs[1],
                   msglens[1], out, &outl);
            do_set(r, ctx, q);
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[0], fams[f].keylen[i], p, msgs[1],
                   msglens[1], out, &outl);
            do_mac(r, ctx, keys[1], fams[f].keylen[i], NULL, msgs[1],
                   msglens[1], out, &outl);
            do_sizes(r, ctx, "re-keyed");
            EVP_MAC_CTX_free(ctx);
        }
        if (fams[f].kind == F_CMAC) {
            /* re-keyed with a cipher of another block size */
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            base_params(&fams[f], 0, 0, p);
            do_mac(r, ctx, keys[0], 16, p, msgs[1], msglens[1], out, &outl);
            do_sizes(r, ctx, "AES");
            q[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "DES-EDE3-CBC");
            q[1] = OSSL_PARAM_construct_end();
            do_set(r, ctx, q);
            do_mac(r, ctx, keys[1], 24, NULL, msgs[2], msglens[2], out,
                   &outl);
            do_sizes(r, ctx, "DES");
            do_final(r, ctx, out, &outl, 8);
            EVP_MAC_CTX_free(ctx);
            /* the same in one set_params call, and in init's params */
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[0], 16, p, msgs[1], msglens[1], out, &outl);
            q[1] = p_oct(OSSL_MAC_PARAM_KEY, keys[1], 24);
            q[2] = OSSL_PARAM_construct_end();
            do_set(r, ctx, q);
            do_sizes(r, ctx, "DES by set");
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[0], 16, p, msgs[1], msglens[1], out, &outl);
            q[1] = OSSL_PARAM_construct_end();
            do_init(r, ctx, keys[1], 24, q);
            do_sizes(r, ctx, "DES by init");
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
}

/* KMAC output length and XOF mode, before and after the key */
static void pat_kmac_out(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t sizes[] = { 0, 1, 16, 32, 64, 100, 200 };
    static const char *const names[] = { "KMAC-128", "KMAC-256" };
    unsigned char out[OUTMAX];
    size_t s, outl, sz;
    int n, xof, before, i;

    for (n = 0; n < 2; n++) {
        EVP_MAC *mac = fetch(libctx, r, names[n]);

        for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            for (i = 0; i < 4; i++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);
                OSSL_PARAM p[3];

                xof = i & 1;
                before = (i & 2) != 0;
                sz = sizes[s];
                rec_printf(r, "-- %s size %zu xof %d before %d\n", names[n],
                           sz, xof, before);
                p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
                p[1] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_XOF, &xof);
                p[2] = OSSL_PARAM_construct_end();
                if (before) {
                    do_set(r, ctx, p);
                    do_sizes(r, ctx, "before key");
                    do_init(r, ctx, keys[s % 2], 32, NULL);
                } else {
                    do_init(r, ctx, keys[s % 2], 32, NULL);
                    do_set(r, ctx, p);
                }
                do_sizes(r, ctx, "keyed");
                do_update(r, ctx, msgs[2], msglens[2]);
                if (xof)
                    do_final_xof(r, ctx, out, sz < OUTMAX ? sz : OUTMAX);
                else
                    do_final(r, ctx, out, &outl, OUTMAX);
                /* final into a buffer that is too small */
                do_init(r, ctx, NULL, 0, NULL);
                do_final(r, ctx, out, &outl, sz > 0 ? sz - 1 : 0);
                EVP_MAC_CTX_free(ctx);
            }
        }
        EVP_MAC_free(mac);
    }
}

/*
 * GMAC messages on fresh contexts with the key cached: the IV with the
 * key, before it, or not at all (then the default draws one at random:
 * return values only), an empty one set together with the key, one without
 * data (which sets only the length); some contexts get a keyless re-init
 * after their message (their IV spent), some live together.  Were used
 * contexts handed out again, those without a new IV of their own would
 * fail where a fresh context succeeds.
 */
static void pat_gmac_messages(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch(libctx, r, "GMAC");
    EVP_MAC_CTX *live[3];
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4];
    size_t outl;
    int i, j, k;

    for (i = 0; i < 3; i++) {
        const unsigned char *key = keys[i];
        size_t keylen = fams[1].keylen[i];

        rec_fam(r, &fams[1], i);
        for (j = 0; j < 18; j++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            rec_printf(r, "message %d\n", j);
            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
            p[1] = p_oct(OSSL_MAC_PARAM_IV, ivs[j % 4], j % 3 == 0 ? 16 : 12);
            p[2] = OSSL_PARAM_construct_end();
            switch (j % 9) {
            case 0: case 1: case 5:
                do_mac(r, ctx, key, keylen, p, msgs[j % 4], msglens[j % 4],
                       out, &outl);
                break;
            case 2:                     /* no IV at all */
                p[1] = OSSL_PARAM_construct_end();
                do_init(r, ctx, key, keylen, p);
                do_update(r, ctx, msgs[2], msglens[2]);
                do_final_rc(r, ctx, out);
                break;
            case 3:                     /* the IV before the key */
                do_set(r, ctx, p);
                do_mac(r, ctx, key, keylen, NULL, msgs[3], msglens[3], out,
                       &outl);
                break;
            case 4:                     /* key and an empty IV in one set */
                p[1] = p_oct(OSSL_MAC_PARAM_KEY, key, keylen);
                p[2] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 0);
                p[3] = OSSL_PARAM_construct_end();
                do_set(r, ctx, p);
                do_update(r, ctx, msgs[1], msglens[1]);
                do_final_rc(r, ctx, out);
                break;
            case 6:                     /* a keyless re-init: IV spent */
                do_mac(r, ctx, key, keylen, p, msgs[2], msglens[2], out,
                       &outl);
                do_init(r, ctx, NULL, 0, NULL);
                do_update(r, ctx, msgs[2], msglens[2]);
                do_final_rc(r, ctx, out);
                break;
            case 7:                     /* an IV without data: a length */
                p[1] = p_oct(OSSL_MAC_PARAM_IV, NULL, 12);
                do_init(r, ctx, key, keylen, p);
                do_update(r, ctx, msgs[2], msglens[2]);
                do_final_rc(r, ctx, out);
                break;
            case 8:                     /* the same before the key */
                p[1] = p_oct(OSSL_MAC_PARAM_IV, NULL, 16);
                do_set(r, ctx, p);
                do_init(r, ctx, key, keylen, NULL);
                do_update(r, ctx, msgs[1], msglens[1]);
                do_final_rc(r, ctx, out);
                break;
            }
            EVP_MAC_CTX_free(ctx);
        }
        /* three used at once, given back together, then without an IV */
        for (k = 0; k < 3; k++) {
            live[k] = new_ctx(mac, r);
            p[1] = p_oct(OSSL_MAC_PARAM_IV, ivs[k], 12);
            do_mac(r, live[k], key, keylen, p, msgs[k], msglens[k], out,
                   &outl);
        }
        for (k = 0; k < 3; k++)
            EVP_MAC_CTX_free(live[k]);
        for (k = 0; k < 4; k++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            p[1] = OSSL_PARAM_construct_end();
            do_init(r, ctx, key, keylen, p);
            do_update(r, ctx, msgs[2], msglens[2]);
            do_final_rc(r, ctx, out);
            EVP_MAC_CTX_free(ctx);
        }
    }
    EVP_MAC_free(mac);
}

/* GMAC IV lengths, valid and not, before and after the key */
static void pat_gmac_iv(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t lens[] = { 0, 1, 8, 12, 13, 16, 60, 128, 129, 199 };
    EVP_MAC *mac = fetch(libctx, r, "GMAC");
    unsigned char out[OUTMAX];
    OSSL_PARAM p[3];
    size_t l, outl;
    int i, valid;

    for (i = 0; i < 3; i++) {
        for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            rec_printf(r, "-- %s iv %zu\n", fams[1].sub[i], lens[l]);
            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
            p[1] = OSSL_PARAM_construct_end();
            do_set(r, ctx, p);
            p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[l % 4], lens[l]);
            valid = do_set(r, ctx, p);
            do_init(r, ctx, keys[i], fams[1].keylen[i], NULL);
            do_update(r, ctx, msgs[2], msglens[2]);
            if (valid)
                do_final(r, ctx, out, &outl, OUTMAX);
            else
                do_final_rc(r, ctx, out);
            /* the same length again, set after the key */
            p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[(l + 1) % 4], lens[l]);
            valid = do_init(r, ctx, NULL, 0, p);
            do_update(r, ctx, msgs[1], msglens[1]);
            if (valid)
                do_final(r, ctx, out, &outl, OUTMAX);
            else
                do_final_rc(r, ctx, out);
            EVP_MAC_CTX_free(ctx);
        }
        /* IV set twice before the key, and IV before the cipher */
        {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
            p[1] = OSSL_PARAM_construct_end();
            do_set(r, ctx, p);
            p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 16);
            do_set(r, ctx, p);
            p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
            do_set(r, ctx, p);
            do_mac(r, ctx, keys[i], fams[1].keylen[i], NULL, msgs[2],
                   msglens[2], out, &outl);
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 12);
            do_set(r, ctx, p);
            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
            do_set(r, ctx, p);
            do_init(r, ctx, keys[i], fams[1].keylen[i], NULL);
            do_update(r, ctx, msgs[1], msglens[1]);
            /* no IV: the default draws one, so only the return values */
            rec_printf(r, "final rc=%d", ctx != NULL
                       && EVP_MAC_final(ctx, out, &outl, OUTMAX));
            rec_errs(r);
            EVP_MAC_CTX_free(ctx);
            /*
             * IV, then the cipher again: that drops the IV, so the default
             * draws one per message; two messages must then differ.
             */
            for (l = 0; l < 2; l++) {
                unsigned char first[OUTMAX];
                size_t firstl = 0;
                int k;

                for (k = 0; k < 2; k++) {
                    ctx = new_ctx(mac, r);
                    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
                    do_set(r, ctx, p);
                    p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 16);
                    do_set(r, ctx, p);
                    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER,
                                  fams[1].sub[(i + l) % 3]);
                    do_set(r, ctx, p);
                    do_init(r, ctx, keys[i], fams[1].keylen[(i + l) % 3],
                            NULL);
                    do_update(r, ctx, msgs[2], msglens[2]);
                    if (k == 0)
                        do_final_rc(r, ctx, first);
                    else
                        do_final_rc(r, ctx, out);
                    if (k == 0)
                        firstl = ctx != NULL ? 16 : 0;
                    EVP_MAC_CTX_free(ctx);
                }
                rec_printf(r, "two messages alike: %d\n", firstl > 0
                           && memcmp(first, out, firstl) == 0);
            }
            /* IV then cipher then IV: the cipher resets the IV */
            ctx = new_ctx(mac, r);
            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
            do_set(r, ctx, p);
            p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 12);
            do_set(r, ctx, p);
            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[(i + 1) % 3]);
            do_set(r, ctx, p);
            p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[2], 12);
            do_set(r, ctx, p);
            do_mac(r, ctx, keys[i], fams[1].keylen[(i + 1) % 3], NULL,
                   msgs[2], msglens[2], out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
    }
    EVP_MAC_free(mac);
}

/*
 * A keyed GMAC context from the cache is keycache's own, on the default's
 * AES-GCM (gmac.c): every call after the key, mid-message, must do what
 * the default's GMAC does - a cipher that fails or succeeds, keys of the
 * wrong and right length and type, IVs of odd sizes and types, a NULL IV,
 * init with params, dup, updates and finals out of order.
 */
#define GD_OPS 22
static void gmac_direct_op(REC *r, EVP_MAC_CTX **pctx, int i, int op)
{
    static char many[24][12];
    EVP_MAC_CTX *ctx = *pctx, *d;
    unsigned char out[OUTMAX];
    OSSL_PARAM p[26];
    size_t outl, k, j = (size_t)(i + 1) % 3;

    p[1] = p[2] = p[3] = OSSL_PARAM_construct_end();
    switch (op) {
    case 0:   /* nothing: the plain hit */
        return;
    case 1:   /* a cipher that does not resolve: nothing changes */
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-128-NOPE");
        do_set(r, ctx, p);
        return;
    case 2:   /* a cipher that is not GCM: refused, nothing changes */
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-128-CBC");
        p[1] = p_oct(OSSL_MAC_PARAM_KEY, keys[1], 16);
        do_set(r, ctx, p);
        return;
    case 3:   /* another GCM, its key and an IV in one call */
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[2], 16);
        p[1] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[j]);
        p[2] = p_oct(OSSL_MAC_PARAM_KEY, keys[2], fams[1].keylen[j]);
        do_set(r, ctx, p);
        return;
    case 4:   /* the same cipher again, then a key of the wrong length */
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
        p[1] = p_oct(OSSL_MAC_PARAM_KEY, keys[2], 5);
        do_set(r, ctx, p);
        return;
    case 5:   /* a key of the wrong length: refused, nothing changes */
        p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[2], fams[1].keylen[j]);
        do_set(r, ctx, p);
        return;
    case 6:   /* another key mid-message */
        p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[2], fams[1].keylen[i]);
        do_set(r, ctx, p);
        return;
    case 7:   /* a key that is not an octet string */
        p[0] = p_utf8(OSSL_MAC_PARAM_KEY, "0123456789abcdef");
        do_set(r, ctx, p);
        return;
    case 8:   /* a new IV mid-message, then one of another length */
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[3], 12);
        do_set(r, ctx, p);
        do_update(r, ctx, msgs[3], 40);
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 60);
        do_set(r, ctx, p);
        return;
    case 9:   /* IVs the default refuses, and one that is no octet string */
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[3], 0);
        do_set(r, ctx, p);
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[3], 129);
        do_set(r, ctx, p);
        p[0] = p_utf8(OSSL_MAC_PARAM_IV, "twelve bytes");
        do_set(r, ctx, p);
        return;
    case 10:  /* an IV length past an int: EVP's ctrl takes an int */
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[3], (size_t)1 << 31);
        do_set(r, ctx, p);
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[3], ((size_t)1 << 32) + 12);
        do_set(r, ctx, p);
        return;
    case 11:  /* an IV without data: the length is set, the IV is not */
        p[0] = p_oct(OSSL_MAC_PARAM_IV, NULL, 16);
        do_set(r, ctx, p);
        return;
    case 12:  /* a keyless init with an IV, then a wrong-length key */
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 13);
        do_init(r, ctx, NULL, 0, p);
        do_update(r, ctx, msgs[1], msglens[1]);
        do_init(r, ctx, keys[2], 7, NULL);
        return;
    case 13:  /* init with another cipher in its params, and its key */
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[j]);
        p[1] = p_oct(OSSL_MAC_PARAM_IV, ivs[2], 12);
        do_init(r, ctx, keys[3], fams[1].keylen[j], p);
        return;
    case 14:  /* init with a cipher that fails, then a keyed init */
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-128-NOPE");
        do_init(r, ctx, keys[3], fams[1].keylen[i], p);
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[2], 12);
        do_init(r, ctx, keys[3], fams[1].keylen[i], p);
        return;
    case 15:  /* a copy mid-message, finished first; then the original */
        d = EVP_MAC_CTX_dup(ctx);
        rec_printf(r, "dup rc=%d\n", d != NULL);
        do_update(r, d, msgs[3], 17);
        do_final(r, d, out, &outl, OUTMAX);
        EVP_MAC_CTX_free(d);
        return;
    case 16:  /* a cipher set, then a copy of the default's context */
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[j]);
        p[1] = p_oct(OSSL_MAC_PARAM_KEY, keys[1], fams[1].keylen[j]);
        p[2] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
        do_set(r, ctx, p);
        d = EVP_MAC_CTX_dup(ctx);
        rec_printf(r, "dup rc=%d\n", d != NULL);
        EVP_MAC_CTX_free(ctx);
        *pctx = d;
        return;
    case 17:  /* final, then update and final again */
        do_final(r, ctx, out, &outl, OUTMAX);
        do_update(r, ctx, msgs[1], msglens[1]);
        return;
    case 18:  /* many params with a cipher (more than fit on the stack) */
        for (k = 0; k < 24; k++) {
            memcpy(many[k], "provider=x", 11);
            p[k] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, k == 23 ? "" : many[k]);
        }
        p[24] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
        p[25] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[1], fams[1].keylen[i]);
        p[1] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 12);
        p[2] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        return;
    case 19:  /* params that are not GMAC's, and none */
        p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "c", 1);
        do_set(r, ctx, p);
        do_set(r, ctx, NULL);
        do_init(r, ctx, NULL, 0, NULL);
        return;
    case 20:  /* a keyless init mid-message: the message goes on */
        do_init(r, ctx, NULL, 0, NULL);
        return;
    case 21:  /* an empty update, and a final into a short buffer */
        do_update(r, ctx, msgs[0], 0);
        rec_printf(r, "short final rc=%d\n",
                   EVP_MAC_final(ctx, out, &outl, 15));
        rec_errs(r);
        return;
    }
}

static void pat_gmac_direct(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch(libctx, r, "GMAC");
    unsigned char out[OUTMAX];
    OSSL_PARAM p[3];
    size_t outl;
    int i, op, n;

    for (i = 0; i < 3; i++) {
        for (op = 0; op < GD_OPS; op++) {
            /* the second time round, the key comes from the cache */
            for (n = 0; n < 2; n++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);

                rec_printf(r, "-- %s op %d #%d\n", fams[1].sub[i], op, n);
                base_params(&fams[1], i, op % 4, p);
                do_init(r, ctx, keys[0], fams[1].keylen[i], p);
                do_update(r, ctx, msgs[2], msglens[2]);
                gmac_direct_op(r, &ctx, i, op);
                do_update(r, ctx, msgs[3], msglens[3]);
                /* ops 9 to 12 may leave no IV, drawn at random */
                if (op >= 9 && op <= 12)
                    do_final_rc(r, ctx, out);
                else
                    do_final(r, ctx, out, &outl, OUTMAX);
                EVP_MAC_CTX_free(ctx);
            }
        }
    }
    EVP_MAC_free(mac);
}

/*
 * Every call a KMAC context keyed from the cache may get after its key
 * (keycache's own context, provider/families/kmac.c), each answered as the
 * default's: output length and XOF mode in every parameter type, bad
 * values, a key and a customisation string for the next init, names it
 * ignores or names twice, partial failures, updates and finals after the
 * final, size queries, a copy, and keyed and keyless re-inits.
 */
#define KD_OPS 27
static void kmac_direct_op(REC *r, EVP_MAC_CTX **pctx, int op)
{
    static const unsigned char big[600];
    EVP_MAC_CTX *ctx = *pctx, *dup;
    unsigned char out[OUTMAX];
    OSSL_PARAM p[5];
    size_t outl, sz = 100, toobig = 0xFFFFFF / 8 + 1, zero = 0;
    int one = 1, i32 = 20;
    uint64_t u64 = 1;

    switch (op) {
    case 0:
        break;
    case 1:
        p[0] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_XOF, &one);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 2:
        do_update(r, ctx, msgs[1], msglens[1]);
        do_final_xof(r, ctx, out, 77);
        break;
    case 3:
        p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 4:
        p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &toobig);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 5:                             /* a size as an int */
        p[0] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_SIZE, &i32);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 6:                             /* XOF as a uint64 */
        p[0] = OSSL_PARAM_construct_uint64(OSSL_MAC_PARAM_XOF, &u64);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 7:                             /* a key for the next init */
        p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[2], 16);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_update(r, ctx, msgs[1], msglens[1]);
        do_final(r, ctx, out, &outl, OUTMAX);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 8:
        p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[2], 3);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 9:
        p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "zz", 2);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 10:
        p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, big, 513);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 11:                            /* a custom string without data */
        p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, NULL, 0);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 12:
        p[0] = p_utf8("foo", "bar");
        p[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
        p[2] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 13:                            /* a name twice */
        p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
        p[1] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_XOF, &one);
        p[2] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &zero);
        p[3] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 14:                            /* what precedes a failure stays */
        p[0] = p_oct(OSSL_MAC_PARAM_KEY, keys[2], 2);
        p[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
        p[2] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_XOF, &one);
        p[3] = p_oct(OSSL_MAC_PARAM_CUSTOM, "c", 1);
        p[4] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 15:
        do_final(r, ctx, out, &outl, OUTMAX);
        do_final(r, ctx, out, &outl, OUTMAX);
        break;
    case 16:
        do_final(r, ctx, out, &outl, OUTMAX);
        do_update(r, ctx, msgs[1], msglens[1]);
        break;
    case 17:
        do_final(r, ctx, out, &outl, OUTMAX);
        do_update(r, ctx, msgs[0], 0);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 18:
        do_sizes(r, ctx, "keyed");
        p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_sizes(r, ctx, "sized");
        break;
    case 19: {                          /* a size query of the wrong type */
        int32_t q = 0;
        int rc;

        p[0] = OSSL_PARAM_construct_int32(OSSL_MAC_PARAM_SIZE, &q);
        p[1] = OSSL_PARAM_construct_end();
        rc = EVP_MAC_CTX_get_params(ctx, p);
        rec_printf(r, "get size int32 rc=%d q=%d", rc, (int)q);
        rec_errs(r);
        break;
    }
    case 20:
        dup = EVP_MAC_CTX_dup(ctx);
        rec_printf(r, "dup rc=%d", dup != NULL);
        rec_errs(r);
        do_update(r, dup, msgs[3], msglens[3]);
        do_final(r, dup, out, &outl, OUTMAX);
        EVP_MAC_CTX_free(dup);
        break;
    case 21:
        p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "q", 1);
        p[1] = OSSL_PARAM_construct_end();
        do_init(r, ctx, keys[3], 40, p);
        break;
    case 22:
        do_init(r, ctx, keys[3], 2, NULL);
        break;
    case 23:                            /* a key of another type */
        p[0] = p_utf8(OSSL_MAC_PARAM_KEY, "a utf8 key");
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_init(r, ctx, NULL, 0, NULL);
        break;
    case 24:
        p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &zero);
        p[1] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        break;
    case 25:
        p[0] = OSSL_PARAM_construct_end();
        do_set(r, ctx, p);
        do_init(r, ctx, keys[1], 4, p);
        break;
    case 26:                            /* a key too long */
        do_init(r, ctx, big, 513, NULL);
        do_update(r, ctx, msgs[1], msglens[1]);
        break;
    }
    *pctx = ctx;
}

static void pat_kmac_direct(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[3];
    size_t f, outl, sz = 48;
    int op, n, shaped;

    for (f = 2; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (shaped = 0; shaped < 2; shaped++) {
            for (op = 0; op < KD_OPS; op++) {
                /* the second time round, the key comes from the cache */
                for (n = 0; n < 2; n++) {
                    EVP_MAC_CTX *ctx = new_ctx(mac, r);

                    rec_printf(r, "-- %s shaped %d op %d #%d\n", fams[f].mac,
                               shaped, op, n);
                    p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "app", 3);
                    p[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE,
                                                       &sz);
                    p[2] = OSSL_PARAM_construct_end();
                    if (shaped)
                        do_set(r, ctx, p);
                    do_init(r, ctx, keys[0], fams[f].keylen[0], NULL);
                    do_update(r, ctx, msgs[2], msglens[2]);
                    kmac_direct_op(r, &ctx, op);
                    do_update(r, ctx, msgs[3], msglens[3]);
                    do_final(r, ctx, out, &outl, OUTMAX);
                    EVP_MAC_CTX_free(ctx);
                }
            }
        }
        EVP_MAC_free(mac);
    }
}

/*
 * A cipher that fails to resolve, set on a keyed CMAC or GMAC context:
 * the default's fetch fails naming the application's library context, and
 * the message goes on.
 */
static void pat_cipher_after_key(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const bad[] = { "AES-128-NOPE", "AES-128-ECB" };
    unsigned char out[OUTMAX];
    OSSL_PARAM p[3];
    size_t f, outl, b;
    int i, n;

    for (f = 0; f < 2; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            for (b = 0; b < 2; b++) {
                for (n = 0; n < 2; n++) {
                    EVP_MAC_CTX *ctx = new_ctx(mac, r);

                    rec_fam(r, &fams[f], i);
                    base_params(&fams[f], i, 1, p);
                    do_init(r, ctx, keys[0], fams[f].keylen[i], p);
                    do_update(r, ctx, msgs[2], msglens[2]);
                    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, bad[b]);
                    p[1] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    do_update(r, ctx, msgs[1], msglens[1]);
                    do_final(r, ctx, out, &outl, OUTMAX);
                    /* and the next keyed init, which CMAC keys with it */
                    do_mac(r, ctx, keys[1], fams[f].keylen[i], NULL, msgs[1],
                           msglens[1], out, &outl);
                    EVP_MAC_CTX_free(ctx);
                }
            }
        }
        EVP_MAC_free(mac);
    }
}

/*
 * An IV without data before the key sets only the length: an IV set
 * before at that length stays, at another length GCM fails the message.
 * Neither may be taken for "the last IV wins" (review of stop 24).
 */
static void pat_gmac_null_iv(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t first[] = { 12, 13 };
    EVP_MAC *mac = fetch(libctx, r, "GMAC");
    unsigned char out[OUTMAX];
    OSSL_PARAM p[3];
    size_t outl, l;
    int i, in_init, n;

    for (i = 0; i < 3; i++)
        for (l = 0; l < 2; l++)
            for (in_init = 0; in_init < 2; in_init++)
                for (n = 0; n < 2; n++) {
                    EVP_MAC_CTX *ctx = new_ctx(mac, r);

                    rec_printf(r, "-- %s iv %zu then NULL/12 %s #%d\n",
                               fams[1].sub[i], first[l],
                               in_init ? "in init" : "set", n);
                    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[1].sub[i]);
                    p[1] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], first[l]);
                    do_set(r, ctx, p);
                    p[0] = p_oct(OSSL_MAC_PARAM_IV, NULL, 12);
                    if (in_init) {
                        do_init(r, ctx, keys[i], fams[1].keylen[i], p);
                    } else {
                        do_set(r, ctx, p);
                        do_init(r, ctx, keys[i], fams[1].keylen[i], NULL);
                    }
                    do_update(r, ctx, msgs[2], msglens[2]);
                    do_final(r, ctx, out, &outl, OUTMAX);
                    EVP_MAC_CTX_free(ctx);
                }
    EVP_MAC_free(mac);
}

/* Wrong key lengths, odd ciphers, odd parameters, calls out of order */
/*
 * Does keycache offer AES-128-CBC?  From OpenSSL 3.5, while any cipher is
 * on (the test config's), it passes every
 * default cipher it does not wrap through, as the default's own functions,
 * so that a query-less EVP_SKEY and cipher share a provider (passthrough.c).
 * A program asking for it with provider=keycache, keycache's own name, then
 * gets it; without keycache (the reference) no provider has that name.
 */
static int kc_offers_cbc(void)
{
    return OpenSSL_version_num() >= 0x30500000UL;
}

static void pat_bad(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t klens[] = { 0, 1, 3, 4, 15, 17, 33, 128, 129, 200 };
    static const char *const cmac_ciphers[] = {
        "DES-EDE3-CBC", "ARIA-128-CBC", "aes-128-cbc", "AES128",
        "2.16.840.1.101.3.4.1.42", "AES-128-ECB", "AES-128-GCM",
        "no-such-cipher", "", "AES-128-CBC-HMAC-SHA1", "SM4-CBC",
        "CAMELLIA-256-CBC"
    };
    static const char *const gmac_ciphers[] = {
        "ARIA-128-GCM", "aes-256-gcm", "id-aes128-GCM", "AES-128-CBC",
        "AES-128-CCM", "no-such-cipher", "SM4-GCM", "CHACHA20-POLY1305"
    };
    static const char *const props[] = {
        "provider=default", "provider=keycache", "fips=yes", "?fips=yes",
        "-fips", "provider=", ""
    };
    unsigned char out[OUTMAX];
    OSSL_PARAM p[5];
    size_t f, l, outl, sz;
    int i, n;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);
        EVP_MAC_CTX *ctx;

        /* a GMAC context whose IV set failed draws one at random */
        r->rc_only = fams[f].kind == F_GMAC;
        rec_printf(r, "-- %s key lengths\n", fams[f].mac);
        for (l = 0; l < sizeof(klens) / sizeof(klens[0]); l++) {
            ctx = new_ctx(mac, r);
            base_params(&fams[f], 2, 0, p);
            do_set(r, ctx, p);
            do_mac(r, ctx, keys[0], klens[l], NULL, msgs[1], msglens[1], out,
                   &outl);
            /* keyless re-init after a failed key */
            do_mac(r, ctx, NULL, 0, NULL, msgs[1], msglens[1], out, &outl);
            /* and the right length after a wrong one */
            do_mac(r, ctx, keys[0], fams[f].keylen[2], NULL, msgs[1],
                   msglens[1], out, &outl);
            EVP_MAC_CTX_free(ctx);
        }

        rec_printf(r, "-- %s out of order\n", fams[f].mac);
        ctx = new_ctx(mac, r);
        do_sizes(r, ctx, "fresh");
        do_update(r, ctx, msgs[1], msglens[1]);
        do_final(r, ctx, out, &outl, OUTMAX);
        do_init(r, ctx, NULL, 0, NULL);
        EVP_MAC_CTX_free(ctx);
        ctx = new_ctx(mac, r);
        base_params(&fams[f], 0, 0, p);
        do_set(r, ctx, p);
        do_sizes(r, ctx, "params set");
        do_init(r, ctx, NULL, 0, p);
        do_update(r, ctx, msgs[1], msglens[1]);
        do_final(r, ctx, out, &outl, OUTMAX);
        do_mac(r, ctx, keys[1], fams[f].keylen[0], NULL, msgs[1], msglens[1],
               out, &outl);
        EVP_MAC_CTX_free(ctx);

        rec_printf(r, "-- %s odd parameters\n", fams[f].mac);
        for (i = 0; i < 13; i++) {
            ctx = new_ctx(mac, r);
            n = base_params(&fams[f], 0, 0, p);
            sz = 16;
            switch (i) {
            case 0:             /* empty array */
                p[0] = OSSL_PARAM_construct_end();
                break;
            case 1:             /* an unknown name */
                p[n++] = OSSL_PARAM_construct_size_t("kc-no-such", &sz);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 2:             /* a name twice */
                p[n++] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE,
                                                     &sz);
                p[n++] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE,
                                                     &sz);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 3:             /* cipher as an octet string */
                p[0] = p_oct(OSSL_MAC_PARAM_CIPHER, "AES-128-CBC", 11);
                p[1] = OSSL_PARAM_construct_end();
                break;
            case 4:             /* key as a UTF-8 string */
                p[n++] = p_utf8(OSSL_MAC_PARAM_KEY, "0123456789abcdef");
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 5:             /* customisation string too long */
                p[n++] = p_oct(OSSL_MAC_PARAM_CUSTOM, keys[0], 200);
                p[n++] = p_oct(OSSL_MAC_PARAM_SALT, keys[1], 7);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 6:             /* output length too large */
                sz = (size_t)1 << 40;
                p[n++] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE,
                                                     &sz);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 7:             /* xof as a size_t, size as an int */
                p[n++] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_XOF, &sz);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 8:             /* an IV with a NULL buffer */
                p[n++] = p_oct(OSSL_MAC_PARAM_IV, NULL, 0);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 9:             /* custom with a NULL buffer */
                p[n++] = p_oct(OSSL_MAC_PARAM_CUSTOM, NULL, 0);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 12:            /* the key twice in one array */
                p[n++] = p_oct(OSSL_MAC_PARAM_KEY, keys[0],
                               fams[f].keylen[0]);
                p[n++] = p_oct(OSSL_MAC_PARAM_KEY, keys[1],
                               fams[f].keylen[0]);
                p[n] = OSSL_PARAM_construct_end();
                break;
            case 10:            /* an empty customisation string */
                p[n++] = p_oct(OSSL_MAC_PARAM_CUSTOM, "", 0);
                p[n] = OSSL_PARAM_construct_end();
                break;
            default:            /* an engine */
                p[n++] = p_utf8("engine", "no-such-engine");
                p[n] = OSSL_PARAM_construct_end();
                break;
            }
            rec_printf(r, "case %d\n", i);
            do_set(r, ctx, p);
            if (i == 12) {
                /* keyed by the set (CMAC, GMAC): which key counts? */
                do_init(r, ctx, NULL, 0, NULL);
                do_update(r, ctx, msgs[2], msglens[2]);
                do_final(r, ctx, out, &outl, OUTMAX);
            }
            do_mac(r, ctx, keys[2], fams[f].keylen[0], NULL, msgs[2],
                   msglens[2], out, &outl);
            EVP_MAC_CTX_free(ctx);
            /* the same in init's params */
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[2], fams[f].keylen[0], p, msgs[2],
                   msglens[2], out, &outl);
            EVP_MAC_CTX_free(ctx);
        }

        if (fams[f].kind != F_KMAC) {
            const char *const *cs = fams[f].kind == F_CMAC ? cmac_ciphers
                                    : gmac_ciphers;
            size_t nc = fams[f].kind == F_CMAC
                        ? sizeof(cmac_ciphers) / sizeof(cmac_ciphers[0])
                        : sizeof(gmac_ciphers) / sizeof(gmac_ciphers[0]);

            rec_printf(r, "-- %s ciphers and properties\n", fams[f].mac);
            /*
             * Served uncached, and a failed fetch names the application's
             * library context, as the default's does.
             */
            for (l = 0; l < nc + sizeof(props) / sizeof(props[0]); l++) {
                /*
                 * keycache offers AES-GCM itself, so where it is loaded the
                 * default's GMAC finds one under provider=keycache, which
                 * the reference cannot; from 3.5 so does CMAC's AES-CBC
                 * (keycache passes it through beside its EVP_SKEY key
                 * managers): see test_cipher_where.
                 */
                if (l >= nc && (fams[f].kind == F_GMAC || kc_offers_cbc())
                    && strcmp(props[l - nc], "provider=keycache") == 0)
                    continue;
                n = 0;
                if (l < nc) {
                    p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, cs[l]);
                    rec_printf(r, "cipher %s\n", cs[l]);
                } else {
                    p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[f].sub[0]);
                    p[n++] = p_utf8(OSSL_MAC_PARAM_PROPERTIES,
                                    props[l - nc]);
                    rec_printf(r, "props %s\n", props[l - nc]);
                }
                if (fams[f].kind == F_GMAC)
                    p[n++] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 12);
                p[n] = OSSL_PARAM_construct_end();
                for (i = 0; i < 2; i++) {
                    ctx = new_ctx(mac, r);
                    do_set(r, ctx, p);
                    do_sizes(r, ctx, "unkeyed");
                    do_mac(r, ctx, keys[i], 16, NULL, msgs[2], msglens[2],
                           out, &outl);
                    do_mac(r, ctx, keys[i], 24, NULL, msgs[2], msglens[2],
                           out, &outl);
                    do_sizes(r, ctx, "keyed");
                    EVP_MAC_CTX_free(ctx);
                }
            }
        }
        r->rc_only = 0;
        EVP_MAC_free(mac);
    }
}

/* Size queries before and after the key */
static void pat_sizes(OSSL_LIB_CTX *libctx, REC *r)
{
    OSSL_PARAM p[4];
    size_t f;
    int i;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            rec_fam(r, &fams[f], i);
            do_sizes(r, ctx, "new");
            base_params(&fams[f], i, 0, p);
            do_set(r, ctx, p);
            do_sizes(r, ctx, "params");
            do_init(r, ctx, keys[0], fams[f].keylen[i], NULL);
            do_sizes(r, ctx, "keyed");
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
}

/* Two live contexts with one key, interleaved; keys alternating */
static void pat_interleave(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4];
    size_t f, outl;
    int i;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 12; i++) {
            EVP_MAC_CTX *a = new_ctx(mac, r), *b = new_ctx(mac, r);
            int k = i % 2, s = i % 3;

            base_params(&fams[f], s, i % 4, p);
            do_init(r, a, keys[k], fams[f].keylen[s], p);
            do_update(r, a, msgs[3], 50);
            base_params(&fams[f], s, (i + 1) % 4, p);
            do_init(r, b, keys[k], fams[f].keylen[s], p);
            do_update(r, b, msgs[2], 30);
            do_update(r, a, msgs[3] + 50, 250);
            do_final(r, b, out, &outl, OUTMAX);
            do_final(r, a, out, &outl, OUTMAX);
            EVP_MAC_CTX_free(b);
            EVP_MAC_CTX_free(a);
        }
        EVP_MAC_free(mac);
    }
}

/* The key buffer rewritten in place: same pointer and length */
static void pat_inplace_key(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char key[sizeof(keys[0])], out[OUTMAX];
    OSSL_PARAM p[4];
    size_t f, outl;
    int i;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        memcpy(key, keys[0], sizeof(key));
        for (i = 0; i < 8; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            if (i % 2 == 1)
                key[i] ^= 0x40;
            base_params(&fams[f], 2, 0, p);
            do_mac(r, ctx, key, fams[f].keylen[2], p, msgs[2], msglens[2],
                   out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
}

/*
 * Keys that differ in exactly one byte, at every position, back to back on
 * one thread: A, A', A, A' (the most recently used entry holds the other
 * key each time), then with another key in between (the index), and one
 * context re-keyed A then A'.  CMAC and GMAC take the AES key sizes; KMAC
 * any length from 4 bytes, cached up to 128: lengths that are and are not
 * multiples of 8, and a 1-byte key the default refuses.
 */
static void near_one(EVP_MAC *mac, EVP_MAC_CTX *reused, REC *r,
                     const FAM *f, int s, const unsigned char *a,
                     const unsigned char *b, size_t len)
{
    const unsigned char *other = keys[3];
    const unsigned char *seq[8] = { a, b, a, b, other, b, other, a };
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4];
    size_t outl;
    int i;

    for (i = 0; i < 8; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);

        base_params(f, s, 0, p);
        do_mac(r, ctx, seq[i], len, p, msgs[1], msglens[1], out, &outl);
        EVP_MAC_CTX_free(ctx);
    }
    for (i = 0; i < 2; i++) {
        base_params(f, s, 1, p);
        do_mac(r, reused, seq[i], len, p, msgs[2], msglens[2], out, &outl);
    }
}

static void pat_near_keys(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t kmac_lens[] = { 1, 4, 7, 13, 20, 31, 32, 33, 64, 65,
                                        127, 128 };
    unsigned char a[128], b[128];
    size_t f, n, pos, len;
    int s;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);
        EVP_MAC_CTX *reused = new_ctx(mac, r);
        int kmac = fams[f].kind == F_KMAC;
        size_t nlens = kmac ? sizeof(kmac_lens) / sizeof(kmac_lens[0]) : 3;

        for (n = 0; n < nlens; n++) {
            s = kmac ? 0 : (int)n;
            len = kmac ? kmac_lens[n] : fams[f].keylen[n];
            kct_fill(a, sizeof(a), 6200 + (uint32_t)(f * 200 + len));
            for (pos = 0; pos < len; pos++) {
                memcpy(b, a, sizeof(b));
                b[pos] ^= (unsigned char)(0x80u >> (pos % 8));
                rec_printf(r, "-- %s len %zu pos %zu\n", fams[f].mac, len,
                           pos);
                near_one(mac, reused, r, &fams[f], s, a, b, len);
            }
        }
        EVP_MAC_CTX_free(reused);
        EVP_MAC_free(mac);
    }
}

/*
 * String parameters that are a prefix of the previous one, or differ from
 * it in the last byte only, back to back: a KMAC customisation "ab" right
 * after "abc" (and back), a CMAC cipher "AES-128-CB" right after
 * "AES-128-CBC" and a GMAC one "AES-128-GC" after "AES-128-GCM" (the
 * default refuses those: so must keycache, with the same errors), and
 * "AES-128-CBX" / "AES-128-GCX".  In the keying init, and set before the
 * key.
 */
static void prefix_one(EVP_MAC *mac, REC *r, const FAM *f, const char *name,
                       const void *v, size_t vlen, int in_init)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM p[3];
    EVP_MAC_CTX *ctx = new_ctx(mac, r);
    size_t outl;
    int n = 0;

    if (f->kind == F_KMAC) {
        p[n++] = p_oct(OSSL_MAC_PARAM_CUSTOM, v, vlen);
    } else {
        p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, v);
        if (f->kind == F_GMAC)
            p[n++] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 12);
    }
    p[n] = OSSL_PARAM_construct_end();
    rec_printf(r, "-- %s %s=%s %s\n", f->mac, name, (const char *)v,
               in_init ? "in init" : "set first");
    /* a GMAC whose cipher was refused draws a random IV: return values only */
    r->rc_only = f->kind == F_GMAC && strcmp(v, f->sub[0]) != 0;
    if (!in_init)
        do_set(r, ctx, p);
    do_init(r, ctx, keys[0], f->keylen[0], in_init ? p : NULL);
    do_update(r, ctx, msgs[2], msglens[2]);
    do_final(r, ctx, out, &outl, OUTMAX);
    EVP_MAC_CTX_free(ctx);
    r->rc_only = 0;
}

static void pat_param_prefix(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const cmac[] = { "AES-128-CBC", "AES-128-CB",
                                        "AES-128-CBC", "AES-128-CBX" };
    static const char *const gmac[] = { "AES-128-GCM", "AES-128-GC",
                                        "AES-128-GCM", "AES-128-GCX" };
    static const char *const kmac[] = { "abc", "ab", "abc", "abd", "abc",
                                        "a", "" };
    size_t f, i, n;
    int rep, in_init;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);
        const char *const *vals = fams[f].kind == F_CMAC ? cmac
                                  : fams[f].kind == F_GMAC ? gmac : kmac;

        n = fams[f].kind == F_KMAC ? 7 : 4;
        for (in_init = 1; in_init >= 0; in_init--)
            for (rep = 0; rep < 3; rep++)
                for (i = 0; i < n; i++)
                    prefix_one(mac, r, &fams[f],
                               fams[f].kind == F_KMAC ? "custom" : "cipher",
                               vals[i], strlen(vals[i]), in_init);
        EVP_MAC_free(mac);
    }
}

/* ---------------------------------------------------------------------- */
/* Known answers                                                          */

typedef struct {
    const char *mac, *sub, *key, *iv, *custom, *msg, *tag;
    size_t size;
    int xof;
} KAT;

static const KAT kats[] = {
    /* RFC 4493 examples 1 and 2 */
    { "CMAC", "AES-128-CBC", "2b7e151628aed2a6abf7158809cf4f3c", NULL, NULL,
      "", "bb1d6929e95937287fa37d129b756746", 0, 0 },
    { "CMAC", "AES-128-CBC", "2b7e151628aed2a6abf7158809cf4f3c", NULL, NULL,
      "6bc1bee22e409f96e93d7e117393172a",
      "070a16b46b4d4144f79bdd9dd04a287c", 0, 0 },
    /* NIST SP 800-38B, AES-256 example 2 */
    { "CMAC", "AES-256-CBC",
      "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
      NULL, NULL, "6bc1bee22e409f96e93d7e117393172a",
      "28a7023f452e8f82bd4bf28d8c37c35c", 0, 0 },
    /* NIST SP 800-185 KMAC samples 1, 2 and 4 */
    { "KMAC-128", NULL,
      "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
      NULL, NULL, "00010203",
      "e5780b0d3ea6f7d3a429c5706aa43a00fadbd7d49628839e3187243f456ee14e",
      32, 0 },
    { "KMAC-128", NULL,
      "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
      NULL, "My Tagged Application", "00010203",
      "3b1fba963cd8b0b59e8c1a6d71888b7143651af8ba0a7070c0979e2811324aa5",
      32, 0 },
    { "KMAC-256", NULL,
      "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
      NULL, "My Tagged Application", "00010203",
      "20c570c31346f703c9ac36c61c03cb64c3970d0cfc787e9b79599d273a68d2f7"
      "f69d4cc3de9d104a351689f27cf6f5951f0103f33f4f24871024d9c27773a8dd",
      64, 0 },
};

static void check_kat(OSSL_LIB_CTX *libctx, const KAT *k)
{
    unsigned char *key, *msg, *want, *iv = NULL, out[OUTMAX];
    size_t keylen, msglen, wantlen, ivlen = 0, outl = 0, sz = k->size;
    OSSL_PARAM p[5];
    int n = 0, run, ok;

    key = kct_unhex(k->key, &keylen);
    msg = kct_unhex(k->msg, &msglen);
    want = kct_unhex(k->tag, &wantlen);
    if (k->sub != NULL)
        p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, k->sub);
    if (k->iv != NULL) {
        iv = kct_unhex(k->iv, &ivlen);
        p[n++] = p_oct(OSSL_MAC_PARAM_IV, iv, ivlen);
    }
    if (k->custom != NULL)
        p[n++] = p_oct(OSSL_MAC_PARAM_CUSTOM, k->custom, strlen(k->custom));
    if (k->size != 0)
        p[n++] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &sz);
    p[n] = OSSL_PARAM_construct_end();
    /* three times: the later runs are served from the cache */
    for (run = 0; run < 3; run++) {
        ok = EVP_Q_mac(libctx, k->mac, NULL, NULL, p, key, keylen, msg,
                       msglen, out, sizeof(out), &outl) != NULL
             && outl == wantlen && memcmp(out, want, wantlen) == 0;
        CU_ASSERT(ok);
        if (!ok)
            fprintf(stderr, "\n%s %s: known answer %s differs (run %d)\n",
                    k->mac, k->sub != NULL ? k->sub : "", k->tag, run);
    }
    OPENSSL_free(key);
    free(msg);
    free(want);
    free(iv);
}

static void test_known_answers(void)
{
    size_t i;
    uint64_t h0 = kct_counter(KEYCACHE_PARAM_HITS);

    for (i = 0; i < sizeof(kats) / sizeof(kats[0]); i++) {
        check_kat(kct_default(), &kats[i]);
        check_kat(kct_keycache(), &kats[i]);
    }
    CU_ASSERT(kct_counter(KEYCACHE_PARAM_HITS) > h0);
    ERR_clear_error();
}

/*
 * Only AES-CBC (CMAC) and AES-GCM (GMAC) keys are cached: other ciphers,
 * names and all, are served by a private default context, never a hit.
 */
static void test_uncached_ciphers(void)
{
    static const char *const uncached[][2] = {
        { "CMAC", "DES-EDE3-CBC" }, { "CMAC", "ARIA-128-CBC" },
        { "CMAC", "AES-128-ECB" }, { "GMAC", "ARIA-128-GCM" }
    };
    static const char *const cached[][2] = {
        { "CMAC", "aes-128-cbc" }, { "CMAC", "AES128" },
        { "GMAC", "id-aes128-GCM" }
    };
    unsigned char out[OUTMAX];
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    uint64_t h0, p0;
    size_t i, outl;
    int j;

    p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 12);
    for (i = 0; i < sizeof(uncached) / sizeof(uncached[0]); i++) {
        h0 = kct_counter(KEYCACHE_PARAM_HITS);
        p0 = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);
        for (j = 0; j < 3; j++)
            EVP_Q_mac(kct_keycache(), uncached[i][0], NULL, uncached[i][1],
                      uncached[i][0][0] == 'G' ? p : NULL, keys[0],
                      uncached[i][1][0] == 'D' ? 24 : 16, msgs[1], 3, out,
                      sizeof(out), &outl);
        CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_HITS), h0);
        CU_ASSERT(kct_counter(KEYCACHE_PARAM_PASSTHROUGH) >= p0 + 3);
    }
    for (i = 0; i < sizeof(cached) / sizeof(cached[0]); i++) {
        h0 = kct_counter(KEYCACHE_PARAM_HITS);
        for (j = 0; j < 3; j++)
            EVP_Q_mac(kct_keycache(), cached[i][0], NULL, cached[i][1],
                      cached[i][0][0] == 'G' ? p : NULL, keys[0], 16,
                      msgs[1], 3, out, sizeof(out), &outl);
        CU_ASSERT(kct_counter(KEYCACHE_PARAM_HITS) >= h0 + 2);
    }
    ERR_clear_error();
}

/* a MAC, its cipher and that cipher's key length */
typedef struct {
    const char *mac, *cipher;
    size_t keylen;
} MAC_CIPHER;

/*
 * Ciphers keycache does not cache (CMAC with 3DES, as EMV and payment MACs
 * use it): once the thread has learned the shape, a fresh context whose
 * first call is exactly it goes to the default at once.  Outputs, sizes,
 * copies, a cacheable cipher set after it, and errors are the default's.
 */
static void pat_uncached(OSSL_LIB_CTX *libctx, REC *r)
{
    static const MAC_CIPHER u[] = {
        { "CMAC", "DES-EDE3-CBC", 24 }, { "CMAC", "ARIA-128-CBC", 16 },
        { "CMAC", "AES-128-ECB", 16 }, { "GMAC", "ARIA-128-GCM", 16 }
    };
    unsigned char out[OUTMAX], *res;
    OSSL_PARAM p[3], q[2], iv[2];
    EVP_MAC_CTX *ctx, *dup;
    size_t i, outl;
    int round;

    iv[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 12);
    iv[1] = OSSL_PARAM_construct_end();
    for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
        EVP_MAC *mac = fetch(libctx, r, u[i].mac);
        const OSSL_PARAM *ivp = u[i].mac[0] == 'G' ? iv : NULL;

        rec_printf(r, "-- %s %s\n", u[i].mac, u[i].cipher);
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, u[i].cipher);
        p[1] = OSSL_PARAM_construct_end();
        for (round = 0; round < 4; round++) {
            res = EVP_Q_mac(libctx, u[i].mac, NULL, u[i].cipher, ivp,
                            keys[round % 2], u[i].keylen, msgs[round % 4],
                            msglens[round % 4], out, sizeof(out), &outl);
            rec_printf(r, "q_mac res=%s len=%zu mac=",
                       res == out ? "out" : "NULL", outl);
            if (res != NULL)
                rec_hex(r, out, outl);
            rec_errs(r);
            /* set, sized, then keyed */
            ctx = new_ctx(mac, r);
            do_set(r, ctx, p);
            do_sizes(r, ctx, "unkeyed");
            do_mac(r, ctx, keys[2], u[i].keylen, ivp, msgs[3], msglens[3],
                   out, &outl);
            do_sizes(r, ctx, "keyed");
            /* keyed again: the key kept, then another */
            do_mac(r, ctx, NULL, 0, ivp, msgs[2], msglens[2], out, &outl);
            do_mac(r, ctx, keys[3], u[i].keylen, ivp, msgs[1], msglens[1],
                   out, &outl);
            EVP_MAC_CTX_free(ctx);
            /* copied before the key; the copy of a copy keyed */
            ctx = new_ctx(mac, r);
            do_set(r, ctx, p);
            dup = ctx != NULL ? EVP_MAC_CTX_dup(ctx) : NULL;
            rec_printf(r, "dup rc=%d", dup != NULL);
            rec_errs(r);
            do_mac(r, dup, keys[1], u[i].keylen, ivp, msgs[2], msglens[2],
                   out, &outl);
            do_mac(r, ctx, keys[0], u[i].keylen, ivp, msgs[2], msglens[2],
                   out, &outl);
            EVP_MAC_CTX_free(dup);
            EVP_MAC_CTX_free(ctx);
            /* a key the cipher refuses; no key at all */
            ctx = new_ctx(mac, r);
            do_set(r, ctx, p);
            do_mac(r, ctx, keys[0], u[i].keylen - 1, ivp, msgs[2],
                   msglens[2], out, &outl);
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            do_set(r, ctx, p);
            do_update(r, ctx, msgs[2], msglens[2]);
            do_final(r, ctx, out, &outl, OUTMAX);
            EVP_MAC_CTX_free(ctx);
            /* properties the default's fetch must see, then the shape */
            ctx = new_ctx(mac, r);
            q[0] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, "provider=nope");
            q[1] = OSSL_PARAM_construct_end();
            do_set(r, ctx, q);
            do_set(r, ctx, p);
            do_mac(r, ctx, keys[0], u[i].keylen, ivp, msgs[2], msglens[2],
                   out, &outl);
            EVP_MAC_CTX_free(ctx);
            /* then a cipher keycache caches, before the key */
            ctx = new_ctx(mac, r);
            do_set(r, ctx, p);
            q[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, u[i].mac[0] == 'G'
                          ? "AES-128-GCM" : "AES-128-CBC");
            q[1] = OSSL_PARAM_construct_end();
            do_set(r, ctx, q);
            do_mac(r, ctx, keys[round % 2], 16, ivp, msgs[2], msglens[2],
                   out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
    ERR_clear_error();
}

/*
 * What a thread's base of a shape serves (layer/tmpl.c, KC_TBASE): the
 * cold contexts of CMAC and GMAC once misses made the thread cold (runs 2
 * and 3, after cold_churn()), and CMAC with 3DES, never cached, on any
 * thread.  New keys on one shape, then another shape and back, a key of
 * another length, and contexts set up in steps: the cipher alone first,
 * with the key, a size asked, a copy, an update before the key.
 */
static void pat_base(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const shapes[3][3] = {
        { "AES-256-CBC", "AES-128-CBC", "AES-256-CBC" },
        { "AES-256-GCM", "AES-128-GCM", "AES-256-GCM" },
        { "DES-EDE3-CBC", "AES-256-CBC", "DES-EDE3-CBC" },
    };
    static const size_t klens[3][3] = {
        { 32, 16, 32 }, { 32, 16, 32 }, { 24, 32, 24 }
    };
    static const char *const others[3][3] = {
        { "AES-256-CBC", "AES-128-CBC", "AES-256-CBC" },
        { "AES-256-GCM", "AES-128-GCM", "AES-256-GCM" },
        { "AES-192-CBC", "AES-256-CBC", "AES-192-CBC" },
    };
    unsigned char key[32], out[OUTMAX], *res;
    OSSL_PARAM p[4], ivp[2], *iv;
    EVP_MAC_CTX *ctx2;
    size_t f, outl, klen;
    int i, j, n;

    for (f = 0; f < 3; f++) {
        const FAM *fm = &fams[f == 1 ? 1 : 0];
        EVP_MAC *mac = fetch(libctx, r, fm->mac);

        ivp[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
        ivp[1] = OSSL_PARAM_construct_end();
        iv = fm->kind == F_GMAC ? ivp : NULL;
        for (i = 0; i < 3; i++) {
            rec_printf(r, "-- %s %s\n", fm->mac, shapes[f][i]);
            for (j = 0; j < (i == 0 ? 12 : 6); j++) {
                EVP_MAC_CTX *ctx, *dup;

                kct_fill(key, sizeof(key), 40000 + 100 * (int)f + 10 * i + j);
                /* a key of another length (refused), then the right one */
                klen = j != 4 ? klens[f][i] : klens[f][i] == 16 ? 24 : 16;
                n = 0;
                p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, shapes[f][i]);
                if (fm->kind == F_GMAC)
                    p[n++] = ivp[0];
                p[n] = OSSL_PARAM_construct_end();
                switch (j % 6) {
                case 0: /* EVP_Q_mac: the cipher set alone, then the IV */
                    res = EVP_Q_mac(libctx, fm->mac, NULL, shapes[f][i], iv,
                                    key, klen, msgs[2], msglens[2], out,
                                    sizeof(out), &outl);
                    rec_printf(r, "q_mac res=%s len=%zu mac=",
                               res == out ? "out" : "NULL", outl);
                    if (res != NULL)
                        rec_hex(r, out, outl);
                    rec_errs(r);
                    break;
                case 1: /* the cipher and IV with the key */
                    ctx = new_ctx(mac, r);
                    do_mac(r, ctx, key, klen, p, msgs[3], msglens[3], out,
                           &outl);
                    EVP_MAC_CTX_free(ctx);
                    break;
                case 2: /* the cipher alone, a size asked, the key */
                    ctx = new_ctx(mac, r);
                    p[1] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    do_sizes(r, ctx, "before the key");
                    do_mac(r, ctx, key, klen, iv, msgs[1], msglens[1], out,
                           &outl);
                    do_sizes(r, ctx, "after");
                    EVP_MAC_CTX_free(ctx);
                    break;
                case 3: /* the cipher alone, a copy, both keyed */
                    ctx = new_ctx(mac, r);
                    p[1] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    dup = ctx != NULL ? EVP_MAC_CTX_dup(ctx) : NULL;
                    rec_printf(r, "dup rc=%d", dup != NULL);
                    rec_errs(r);
                    do_mac(r, ctx, key, klen, iv, msgs[2], msglens[2], out,
                           &outl);
                    do_mac(r, dup, keys[1], klen, iv, msgs[2], msglens[2],
                           out, &outl);
                    EVP_MAC_CTX_free(dup);
                    EVP_MAC_CTX_free(ctx);
                    break;
                case 4: /* as case 0 with the key given again, this time */
                    ctx = new_ctx(mac, r);
                    do_set(r, ctx, p);
                    do_init(r, ctx, key, klen, p);
                    do_update(r, ctx, msgs[2], msglens[2]);
                    do_final(r, ctx, out, &outl, OUTMAX);
                    EVP_MAC_CTX_free(ctx);
                    break;
                default: /* an update and a final before the key */
                    ctx = new_ctx(mac, r);
                    p[1] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    do_update(r, ctx, msgs[1], msglens[1]);
                    do_final(r, ctx, out, &outl, OUTMAX);
                    do_mac(r, ctx, key, klen, iv, msgs[1], msglens[1], out,
                           &outl);
                    EVP_MAC_CTX_free(ctx);
                    break;
                }
            }
            /* the shape, then a cipher again (3DES: another, as long a key) */
            ctx2 = new_ctx(mac, r);
            p[1] = OSSL_PARAM_construct_end();
            do_set(r, ctx2, p);
            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, others[f][i]);
            do_set(r, ctx2, p);
            do_mac(r, ctx2, key, klens[f][i], iv, msgs[2], msglens[2], out,
                   &outl);
            EVP_MAC_CTX_free(ctx2);
        }
        EVP_MAC_free(mac);
    }
}

/*
 * Shapes in turn, one a context, on a cold thread: a base each while there
 * are bases to make (KC_BASES, 3), then CMAC's fourth (3DES) among them,
 * then 3DES in a row (a base in place of the oldest), then the others.
 * New keys throughout, one of the wrong length now and then; the cipher
 * set alone then the key, or both at the key, and a copy of a keyed one.
 */
static void pat_base_rotation(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const cmacs[] = {
        "AES-128-CBC", "AES-192-CBC", "AES-256-CBC", "DES-EDE3-CBC"
    };
    static const char *const gmacs[] = {
        "AES-128-GCM", "AES-192-GCM", "AES-256-GCM"
    };
    static const size_t cklen[] = { 16, 24, 32, 24 }, gklen[] = { 16, 24, 32 };
    unsigned char key[32], out[OUTMAX];
    OSSL_PARAM p[3];
    size_t f, outl, klen, n;
    int i;

    for (f = 0; f < 2; f++) {
        const FAM *fm = &fams[f];
        const char *const *ciph = f == 0 ? cmacs : gmacs;
        const size_t *klens = f == 0 ? cklen : gklen;
        size_t nciph = f == 0 ? 4 : 3;
        EVP_MAC *mac = fetch(libctx, r, fm->mac);

        for (i = 0; i < 52; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r), *dup;
            /* from the 40th: the last shape four times, then in turn */
            size_t k = i < 40 ? (size_t)i % nciph
                       : i < 44 ? nciph - 1 : (size_t)(i - 44) % nciph;

            kct_fill(key, sizeof(key), 47000 + 100 * (int)f + i);
            klen = i % 11 == 5 ? (klens[k] == 16 ? 32 : 16) : klens[k];
            rec_printf(r, "-- %s %s key %zu\n", fm->mac, ciph[k], klen);
            n = 0;
            p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, ciph[k]);
            if (fm->kind == F_GMAC)
                p[n++] = p_oct(OSSL_MAC_PARAM_IV, ivs[i % 2], 12);
            p[n] = OSSL_PARAM_construct_end();
            if (i % 3 == 0) {
                do_mac(r, ctx, key, klen, p, msgs[2], msglens[2], out, &outl);
            } else {
                do_set(r, ctx, p);
                do_mac(r, ctx, key, klen, NULL, msgs[3], msglens[3], out,
                       &outl);
            }
            if (i % 4 == 1) {
                dup = EVP_MAC_CTX_dup(ctx);
                rec_printf(r, "dup rc=%d", dup != NULL);
                rec_errs(r);
                do_mac(r, dup, keys[1], klens[k], NULL, msgs[1], msglens[1],
                       out, &outl);
                EVP_MAC_CTX_free(dup);
            }
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
}

/*
 * The same for KMAC-128, whose base is a fresh context's (or one with a
 * customisation string) keyed with zeros: EVP_Q_mac and contexts in steps,
 * keys of other lengths (2 bytes: refused; 100: longer than a base's).
 */
static void pat_base_kmac(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t klens[] = { 32, 16, 2, 64, 100 };
    unsigned char key[128], out[OUTMAX], *res;
    EVP_MAC *mac = fetch(libctx, r, "KMAC-128");
    EVP_MAC_CTX *ctx, *dup;
    OSSL_PARAM p[2];
    size_t outl, klen;
    int i, j;

    p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, "abc", 3);
    p[1] = OSSL_PARAM_construct_end();
    for (i = 0; i < 3; i++) {
        rec_printf(r, "-- KMAC-128 %s\n", i == 1 ? "custom" : "plain");
        for (j = 0; j < 14; j++) {
            klen = j < 9 ? 32 : klens[j - 9];
            kct_fill(key, sizeof(key), 60000 + 100 * i + j);
            if (j % 4 == 0) {
                res = EVP_Q_mac(libctx, "KMAC-128", NULL, NULL,
                                i == 1 ? p : NULL, key, klen, msgs[2],
                                msglens[2], out, sizeof(out), &outl);
                rec_printf(r, "q_mac res=%s len=%zu mac=",
                           res == out ? "out" : "NULL", outl);
                if (res != NULL)
                    rec_hex(r, out, outl);
                rec_errs(r);
                continue;
            }
            ctx = new_ctx(mac, r);
            if (i == 1)
                do_set(r, ctx, p);
            if (j % 4 == 2) {
                /* a size, an update and a final before the key */
                do_sizes(r, ctx, "before the key");
                do_update(r, ctx, msgs[1], msglens[1]);
                do_final(r, ctx, out, &outl, OUTMAX);
            }
            dup = NULL;
            if (j % 4 == 3) {
                dup = ctx != NULL ? EVP_MAC_CTX_dup(ctx) : NULL;
                rec_printf(r, "dup rc=%d", dup != NULL);
                rec_errs(r);
            }
            do_mac(r, ctx, key, klen, NULL, msgs[3], msglens[3], out,
                   &outl);
            if (dup != NULL)
                do_mac(r, dup, keys[1], 32, NULL, msgs[2], msglens[2], out,
                       &outl);
            EVP_MAC_CTX_free(dup);
            EVP_MAC_CTX_free(ctx);
        }
    }
    EVP_MAC_free(mac);
}

/* CMAC, GMAC, KMAC misses until new contexts are cold (see test_cold) */
static void cold_churn(void)
{
    unsigned char key[32], out[OUTMAX];
    OSSL_PARAM p[2];
    size_t f, outl;
    int i;

    for (i = 0; i < 600; i++) {
        f = (size_t)i % 3;
        kct_fill(key, sizeof(key), 30000 + i);
        p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[i % 4], 12);
        p[1] = OSSL_PARAM_construct_end();
        EVP_Q_mac(kct_keycache(), fams[f].mac, NULL, fams[f].sub[2],
                  fams[f].kind == F_GMAC ? p : NULL, key, 32, msgs[2], 40,
                  out, sizeof(out), &outl);
    }
    ERR_clear_error();
}

/*
 * A thread that keys every message with a new key: once its hit rate is
 * low, new contexts are served by the default from the start (cold), with
 * the same results; a key used again and again is cached again soon.
 */
/*
 * A cipher the default refuses, on the thread's default library context as
 * unchanged programs use it: the same first error (its data names that
 * context) from the default and from keycache.
 */
static int cold_refusal_same(const FAM *f)
{
    unsigned char key[32] = { 0 }, out[OUTMAX];
    char want[KCT_ERR_LEN], got[KCT_ERR_LEN];
    OSSL_PARAM p[2];
    OSSL_LIB_CTX *prev;
    size_t outl;

    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "no-such-cipher");
    p[1] = OSSL_PARAM_construct_end();
    ERR_clear_error();
    prev = OSSL_LIB_CTX_set0_default(kct_default());
    EVP_Q_mac(NULL, f->mac, NULL, NULL, p, key, 16, msgs[2], 40, out,
              sizeof(out), &outl);
    kct_err_next(want, sizeof(want));
    ERR_clear_error();
    OSSL_LIB_CTX_set0_default(kct_keycache());
    EVP_Q_mac(NULL, f->mac, NULL, NULL, p, key, 16, msgs[2], 40, out,
              sizeof(out), &outl);
    kct_err_next(got, sizeof(got));
    ERR_clear_error();
    OSSL_LIB_CTX_set0_default(prev);
    if (want[0] == '\0' || strcmp(want, got) != 0) {
        fprintf(stderr, "\ncold %s refusal:\n  default : %s\n  keycache: %s\n",
                f->mac, want, got);
        return 0;
    }
    return 1;
}

static void *cold_main(void *arg)
{
    unsigned char key[32], want[OUTMAX], got[OUTMAX];
    size_t f, wl, gl;
    OSSL_PARAM p[3];
    int i, *bad = arg;
    uint64_t h0, p0 = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);

    for (i = 0; i < 600; i++) {
        f = (size_t)i % NFAMS;
        kct_fill(key, sizeof(key), 20000 + i);
        base_params(&fams[f], 0, i % 4, p);
        wl = gl = 0;
        if (EVP_Q_mac(kct_default(), fams[f].mac, NULL, NULL, p, key,
                      fams[f].keylen[0], msgs[2], 40, want, sizeof(want),
                      &wl) == NULL
            || EVP_Q_mac(kct_keycache(), fams[f].mac, NULL, NULL, p, key,
                         fams[f].keylen[0], msgs[2], 40, got, sizeof(got),
                         &gl) == NULL
            || wl != gl || memcmp(want, got, wl) != 0)
            (*bad)++;
    }
    /* one context per message: each counted once, cold or not */
    if (kct_counter(KEYCACHE_PARAM_PASSTHROUGH) > p0 + 600) {
        fprintf(stderr, "\n%llu pass-throughs for 600 contexts\n",
                (unsigned long long)(kct_counter(KEYCACHE_PARAM_PASSTHROUGH)
                                     - p0));
        (*bad)++;
    }
    /* still cold: a refused cipher is refused as the default refuses it */
    for (f = 0; f < 2; f++)
        if (!cold_refusal_same(&fams[f]))
            (*bad)++;
    /* one key from now on: hits come back within a few windows */
    h0 = kct_counter(KEYCACHE_PARAM_HITS);
    base_params(&fams[0], 0, 0, p);
    for (i = 0; i < 5000 && kct_counter(KEYCACHE_PARAM_HITS) == h0; i++)
        if (EVP_Q_mac(kct_keycache(), fams[0].mac, NULL, NULL, p, keys[0],
                      16, msgs[2], 40, got, sizeof(got), &gl) == NULL)
            (*bad)++;
    if (kct_counter(KEYCACHE_PARAM_HITS) == h0)
        (*bad) += 1000;
    ERR_clear_error();
    OPENSSL_thread_stop();
    return NULL;
}

static void test_cold(void)
{
    /* most of the 600 went through cold contexts */
    kct_check_cold_thread(cold_main, 300);
}

/*
 * A fresh context per message keyed with init(key, params), the params
 * varying the way the one-pass match of the thread's last init must tell
 * apart: the IV before the cipher (the volatile part does not end the
 * caller's array), and a KMAC shape that is a prefix of the last one.
 */
static void pat_init_variants(OSSL_LIB_CTX *libctx, REC *r)
{
    static const unsigned char custom[] = "abc";
    unsigned char out[OUTMAX];
    size_t f, outl, size = 48;
    OSSL_PARAM p[4];
    int i, j;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (i = 0; i < 3; i++) {
            rec_fam(r, &fams[f], i);
            for (j = 0; j < 10; j++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);

                if (fams[f].kind == F_GMAC) {
                    /* IV first for the first half, then cipher first */
                    p[j < 5 ? 0 : 1] = p_oct(OSSL_MAC_PARAM_IV, ivs[j % 4],
                                             12);
                    p[j < 5 ? 1 : 0] = p_utf8(OSSL_MAC_PARAM_CIPHER,
                                              fams[f].sub[i]);
                    p[2] = OSSL_PARAM_construct_end();
                } else if (fams[f].kind == F_KMAC) {
                    /* custom and size, then custom alone, by turns */
                    p[0] = p_oct(OSSL_MAC_PARAM_CUSTOM, custom, 3);
                    p[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE,
                                                       &size);
                    if (j % 2 == 1)
                        p[1] = OSSL_PARAM_construct_end();
                    p[2] = OSSL_PARAM_construct_end();
                } else {
                    base_params(&fams[f], i, 0, p);
                }
                do_mac(r, ctx, keys[0], fams[f].keylen[i], p, msgs[j % 4],
                       msglens[j % 4], out, &outl);
                EVP_MAC_CTX_free(ctx);
            }
        }
        EVP_MAC_free(mac);
    }
}

/* KMAC keyed with no parameters at all: the empty shape is cached too */
static void pat_kmac_bare(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    size_t f, outl;
    int j;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac;

        if (fams[f].kind != F_KMAC)
            continue;
        mac = fetch(libctx, r, fams[f].mac);
        rec_fam(r, &fams[f], 0);
        for (j = 0; j < 6; j++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            do_mac(r, ctx, keys[1], fams[f].keylen[0], NULL, msgs[j % 4],
                   msglens[j % 4], out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
}

/*
 * A GMAC IV the default refuses (empty), after the same key was cached
 * with a good one: refused alike, and never served from the cache - the
 * thread has learned that signature invalid.
 */
/*
 * UTF-8 parameters as an application builds them from a string on the
 * heap, in a buffer of exactly its size: data_size not counting the NUL
 * (OSSL_PARAM_construct_utf8_string(.., 0)), counting it (which OpenSSL
 * allows), and counting a NUL inside the string (the default reads up to
 * it).  Under ASan a read past either buffer fails the test.
 */
enum { U_NO_NUL, U_COUNTED_NUL, U_INNER_NUL, U_FORMS };

typedef struct {
    char *buf[8];
    int n;
} HEAPSTR;

static OSSL_PARAM p_utf8_heap(HEAPSTR *h, const char *name, const char *v,
                              int form)
{
    size_t len = strlen(v), extra = form == U_INNER_NUL ? 4 : 0;
    /* the string, "xyz" after its NUL for U_INNER_NUL, and a last NUL */
    size_t size = form == U_NO_NUL ? len : form == U_COUNTED_NUL ? len + 1
                  : len + 4;
    char *b = malloc(len + extra + 1);

    if (b == NULL || h->n == (int)(sizeof(h->buf) / sizeof(h->buf[0]))) {
        free(b);
        return OSSL_PARAM_construct_utf8_string(name, (char *)v, 0);
    }
    memcpy(b, v, len + 1);
    if (extra > 0)
        memcpy(b + len + 1, "xyz", extra);
    h->buf[h->n++] = b;
    return OSSL_PARAM_construct_utf8_string(name, b, size);
}

static void heapstr_free(HEAPSTR *h)
{
    while (h->n > 0)
        free(h->buf[--h->n]);
}

static void pat_utf8_forms(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const gmac_bad[] = { "AES-128-CBC", "no-such-cipher" };
    unsigned char out[OUTMAX];
    size_t f, outl;
    OSSL_PARAM p[5];
    HEAPSTR h = { { NULL }, 0 };
    int i, j, form, n;

    for (f = 0; f < NFAMS; f++) {
        EVP_MAC *mac = fetch(libctx, r, fams[f].mac);

        for (form = 0; form < U_FORMS; form++) {
            rec_printf(r, "-- %s utf8 form %d\n", fams[f].mac, form);
            for (i = 0; i < 3; i++) {
                /* cipher (and properties) set, then init(key); repeated */
                for (j = 0; j < 3; j++) {
                    EVP_MAC_CTX *ctx = new_ctx(mac, r);

                    n = 0;
                    if (fams[f].sub[i] != NULL) {
                        p[n++] = p_utf8_heap(&h, OSSL_MAC_PARAM_CIPHER,
                                             fams[f].sub[i], form);
                        if (j > 0)
                            p[n++] = p_utf8_heap(&h,
                                                 OSSL_MAC_PARAM_PROPERTIES,
                                                 j == 1 ? "provider=default"
                                                        : "", form);
                    }
                    /* the only UTF-8 one KMAC gets: a name it ignores */
                    if (fams[f].kind == F_KMAC || j == 2)
                        p[n++] = p_utf8_heap(&h, "kc-no-such-utf8", "abc",
                                             form);
                    if (fams[f].kind == F_GMAC)
                        p[n++] = p_oct(OSSL_MAC_PARAM_IV, ivs[j], 12);
                    p[n] = OSSL_PARAM_construct_end();
                    do_set(r, ctx, p);
                    do_mac(r, ctx, keys[2], fams[f].keylen[i], NULL,
                           msgs[j], msglens[j], out, &outl);
                    /* and the same in the keying init, on a fresh context */
                    EVP_MAC_CTX_free(ctx);
                    ctx = new_ctx(mac, r);
                    do_mac(r, ctx, keys[2], fams[f].keylen[i], p, msgs[j],
                           msglens[j], out, &outl);
                    EVP_MAC_CTX_free(ctx);
                    heapstr_free(&h);
                }
            }
            if (fams[f].kind != F_GMAC && fams[f].kind != F_CMAC)
                continue;
            /* ciphers the default refuses for the family */
            for (i = 0; i < 2; i++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);

                p[0] = p_utf8_heap(&h, OSSL_MAC_PARAM_CIPHER,
                                   fams[f].kind == F_GMAC ? gmac_bad[i]
                                   : i == 0 ? "AES-128-GCM" : "AES-128-CB",
                                   form);
                p[1] = OSSL_PARAM_construct_end();
                do_set(r, ctx, p);
                do_mac(r, ctx, keys[2], 16, NULL, msgs[1], msglens[1], out,
                       &outl);
                EVP_MAC_CTX_free(ctx);
                heapstr_free(&h);
            }
        }
        EVP_MAC_free(mac);
    }
}

/* init(key, params) on a fresh context, update, final; 1 if all succeed */
static int fresh_mac(OSSL_LIB_CTX *libctx, const char *name,
                     const unsigned char *key, size_t keylen,
                     const OSSL_PARAM *p, unsigned char *out, size_t *outl)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, name, NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    int ok = ctx != NULL && EVP_MAC_init(ctx, key, keylen, p)
             && EVP_MAC_update(ctx, msgs[2], 40)
             && EVP_MAC_final(ctx, out, outl, OUTMAX);

    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    ERR_clear_error();
    return ok;
}

static void *bad_iv_main(void *arg)
{
    unsigned char want[OUTMAX], got[OUTMAX];
    const FAM *f = &fams[1];
    OSSL_PARAM p[3];
    size_t wl, gl;
    int i, *bad = arg;
    uint64_t h0;

    for (i = 0; i < 6; i++) {
        base_params(f, 2, i % 4, p);
        if (!fresh_mac(kct_default(), f->mac, keys[2], 32, p, want, &wl)
            || !fresh_mac(kct_keycache(), f->mac, keys[2], 32, p, got, &gl)
            || wl != gl || memcmp(want, got, wl) != 0)
            (*bad)++;
    }
    h0 = kct_counter(KEYCACHE_PARAM_HITS);
    if (h0 == UINT64_MAX)
        (*bad)++;
    for (i = 0; i < 6; i++) {
        base_params(f, 2, 0, p);
        p[1] = p_oct(OSSL_MAC_PARAM_IV, ivs[0], 0);
        if (fresh_mac(kct_default(), f->mac, keys[2], 32, p, want, &wl)
            != fresh_mac(kct_keycache(), f->mac, keys[2], 32, p, got, &gl))
            (*bad)++;
    }
    if (kct_counter(KEYCACHE_PARAM_HITS) != h0) {
        fprintf(stderr, "\nrefused GMAC IVs were served from the cache\n");
        (*bad)++;
    }
    OPENSSL_thread_stop();
    return NULL;
}

static void test_bad_iv_uncached(void)
{
    CU_ASSERT_EQUAL(kct_thread_problems(bad_iv_main), 0);
}

/*
 * Where a CMAC's or GMAC's cipher comes from.  A provider of the
 * application's ("kctestciph", built in by the test) offers AES-128-CBC and
 * AES-128-GCM under the default's names, delegating to the default's and
 * counting its cipher calls, so that a record shows whose AES a MAC ran on.
 * The default's CMAC and GMAC use whichever cipher the application's
 * library context resolves; keycache must too, must not swap in its own
 * default's AES because the name matches, and a fetch that fails must name
 * the application's library context, as the default's does.
 */
static EVP_CIPHER *ciph_cbc, *ciph_gcm;
static int ciph_calls;

typedef struct {
    EVP_CIPHER_CTX *c;
    const EVP_CIPHER *which;
} CIPH_CTX;

static void *ciph_new(const EVP_CIPHER *which)
{
    CIPH_CTX *x = calloc(1, sizeof(*x));

    if (x != NULL && (x->c = EVP_CIPHER_CTX_new()) == NULL) {
        free(x);
        x = NULL;
    }
    if (x != NULL)
        x->which = which;
    return x;
}

static void *ciph_cbc_new(void *provctx) { return ciph_new(ciph_cbc); }
static void *ciph_gcm_new(void *provctx) { return ciph_new(ciph_gcm); }

static void ciph_free(void *vx)
{
    CIPH_CTX *x = vx;

    if (x != NULL) {
        EVP_CIPHER_CTX_free(x->c);
        free(x);
    }
}

static void *ciph_dup(void *vx)
{
    CIPH_CTX *x = vx, *d = ciph_new(x->which);

    if (d != NULL && !EVP_CIPHER_CTX_copy(d->c, x->c)) {
        ciph_free(d);
        d = NULL;
    }
    return d;
}

static int ciph_init(CIPH_CTX *x, const unsigned char *key,
                     const unsigned char *iv, const OSSL_PARAM params[],
                     int enc)
{
    const EVP_CIPHER *c = EVP_CIPHER_CTX_get0_cipher(x->c) == NULL ? x->which
                          : NULL;

    return EVP_CipherInit_ex2(x->c, c, key, iv, enc, params);
}

static int ciph_einit(void *x, const unsigned char *key, size_t keylen,
                      const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    return ciph_init(x, key, iv, params, 1);
}

static int ciph_dinit(void *x, const unsigned char *key, size_t keylen,
                      const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    return ciph_init(x, key, iv, params, 0);
}

static int ciph_update(void *vx, unsigned char *out, size_t *outl,
                       size_t outsize, const unsigned char *in, size_t inl)
{
    CIPH_CTX *x = vx;
    int n = 0;

    ciph_calls++;
    if (!EVP_CipherUpdate(x->c, out, &n, in, (int)inl))
        return 0;
    *outl = (size_t)n;
    return 1;
}

static int ciph_final(void *vx, unsigned char *out, size_t *outl,
                      size_t outsize)
{
    CIPH_CTX *x = vx;
    int n = 0;

    ciph_calls++;
    if (!EVP_CipherFinal_ex(x->c, out, &n))
        return 0;
    *outl = (size_t)n;
    return 1;
}

static int ciph_cipher(void *vx, unsigned char *out, size_t *outl,
                       size_t outsize, const unsigned char *in, size_t inl)
{
    CIPH_CTX *x = vx;
    int n;

    ciph_calls++;
    if ((n = EVP_Cipher(x->c, out, in, (unsigned int)inl)) < 0)
        return 0;
    *outl = inl;
    return 1;
}

static int ciph_get_ctx(void *vx, OSSL_PARAM params[])
{
    return EVP_CIPHER_CTX_get_params(((CIPH_CTX *)vx)->c, params);
}

static int ciph_set_ctx(void *vx, const OSSL_PARAM params[])
{
    return EVP_CIPHER_CTX_set_params(((CIPH_CTX *)vx)->c, params);
}

static int ciph_cbc_get(OSSL_PARAM params[])
{
    return EVP_CIPHER_get_params(ciph_cbc, params);
}

static int ciph_gcm_get(OSSL_PARAM params[])
{
    return EVP_CIPHER_get_params(ciph_gcm, params);
}

static const OSSL_PARAM *ciph_cbc_gettable(void *provctx)
{
    return EVP_CIPHER_gettable_params(ciph_cbc);
}

static const OSSL_PARAM *ciph_gcm_gettable(void *provctx)
{
    return EVP_CIPHER_gettable_params(ciph_gcm);
}

static const OSSL_PARAM *ciph_cbc_gettable_ctx(void *x, void *provctx)
{
    return EVP_CIPHER_gettable_ctx_params(ciph_cbc);
}

static const OSSL_PARAM *ciph_gcm_gettable_ctx(void *x, void *provctx)
{
    return EVP_CIPHER_gettable_ctx_params(ciph_gcm);
}

static const OSSL_PARAM *ciph_cbc_settable_ctx(void *x, void *provctx)
{
    return EVP_CIPHER_settable_ctx_params(ciph_cbc);
}

static const OSSL_PARAM *ciph_gcm_settable_ctx(void *x, void *provctx)
{
    return EVP_CIPHER_settable_ctx_params(ciph_gcm);
}

#define CIPH_FNS(m)                                                           \
    static const OSSL_DISPATCH ciph_##m##_fns[] = {                           \
        { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void))ciph_##m##_new },          \
        { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void))ciph_free },              \
        { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void))ciph_dup },                \
        { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void))ciph_einit },        \
        { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void))ciph_dinit },        \
        { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void))ciph_update },             \
        { OSSL_FUNC_CIPHER_FINAL, (void (*)(void))ciph_final },               \
        { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void))ciph_cipher },             \
        { OSSL_FUNC_CIPHER_GET_PARAMS, (void (*)(void))ciph_##m##_get },      \
        { OSSL_FUNC_CIPHER_GETTABLE_PARAMS,                                   \
          (void (*)(void))ciph_##m##_gettable },                              \
        { OSSL_FUNC_CIPHER_GET_CTX_PARAMS, (void (*)(void))ciph_get_ctx },    \
        { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,                               \
          (void (*)(void))ciph_##m##_gettable_ctx },                          \
        { OSSL_FUNC_CIPHER_SET_CTX_PARAMS, (void (*)(void))ciph_set_ctx },    \
        { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,                               \
          (void (*)(void))ciph_##m##_settable_ctx },                          \
        { 0, NULL }                                                           \
    };
CIPH_FNS(cbc)
CIPH_FNS(gcm)

static const OSSL_ALGORITHM ciph_algs[] = {
    { "AES-128-CBC:AES128", "provider=kctestciph", ciph_cbc_fns, NULL },
    { "AES-128-GCM:id-aes128-GCM", "provider=kctestciph", ciph_gcm_fns,
      NULL },
    { NULL, NULL, NULL, NULL }
};

/* the MACs' query: keycache's, where the default properties prefer theirs */
static const char *where_q;

/* "kctestciph" loaded beside the default and beside keycache (its lines) */
static int theirs_start(KCT_OTHER *o, const char *lines)
{
    ciph_cbc = EVP_CIPHER_fetch(kct_default(), "AES-128-CBC", NULL);
    ciph_gcm = EVP_CIPHER_fetch(kct_default(), "AES-128-GCM", NULL);
    return ciph_cbc != NULL && ciph_gcm != NULL
           && kct_other_start_conf(o, "kctestciph", OSSL_OP_CIPHER, ciph_algs,
                                   lines);
}

static void theirs_stop(KCT_OTHER *o)
{
    kct_other_stop(o);
    EVP_CIPHER_free(ciph_cbc);
    EVP_CIPHER_free(ciph_gcm);
    ciph_cbc = ciph_gcm = NULL;
}

static void pat_cipher_where(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const props[] = {
        NULL, "provider=kctestciph", "provider=default", "provider=nope",
        "?provider=kctestciph", "provider=kctestciph,?provider=default"
    };
    unsigned char out[OUTMAX];
    OSSL_PARAM p[4];
    size_t f, i, outl;
    int round, n, before;

    for (f = 0; f < 2; f++) {
        EVP_MAC *mac = EVP_MAC_fetch(libctx, fams[f].mac, where_q);

        rec_printf(r, "fetch %s rc=%d", fams[f].mac, mac != NULL);
        rec_errs(r);
        for (round = 0; round < 4; round++) {
            for (i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);

                n = 0;
                p[n++] = p_utf8(OSSL_MAC_PARAM_CIPHER, fams[f].sub[0]);
                if (props[i] != NULL)
                    p[n++] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, props[i]);
                if (fams[f].kind == F_GMAC)
                    p[n++] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
                p[n] = OSSL_PARAM_construct_end();
                rec_printf(r, "-- %s props %s\n", fams[f].mac,
                           props[i] != NULL ? props[i] : "(none)");
                before = ciph_calls;
                /* in the init, then set before the key */
                do_mac(r, ctx, keys[round % 2], 16, p, msgs[2], msglens[2],
                       out, &outl);
                EVP_MAC_CTX_free(ctx);
                ctx = new_ctx(mac, r);
                do_set(r, ctx, p);
                do_mac(r, ctx, keys[round % 2], 16, NULL, msgs[3],
                       msglens[3], out, &outl);
                EVP_MAC_CTX_free(ctx);
                rec_printf(r, "kctestciph calls %s\n",
                           ciph_calls > before ? "some" : "none");
            }
        }
        /* passed through before any cipher is named: the next one counts */
        for (round = 0; round < 2; round++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r), *dup;

            rec_printf(r, "-- %s keyless init first\n", fams[f].mac);
            before = ciph_calls;
            do_init(r, ctx, NULL, 0, NULL);
            base_params(&fams[f], 0, 1, p);
            do_mac(r, ctx, keys[2], 16, p, msgs[2], msglens[2], out, &outl);
            rec_printf(r, "kctestciph calls %s\n",
                       ciph_calls > before ? "some" : "none");
            EVP_MAC_CTX_free(ctx);

            /* theirs, duplicated before and after the key, sized unkeyed */
            rec_printf(r, "-- %s theirs, duplicated\n", fams[f].mac);
            ctx = new_ctx(mac, r);
            n = base_params(&fams[f], 0, 2, p);
            p[n++] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, "provider=kctestciph");
            p[n] = OSSL_PARAM_construct_end();
            do_set(r, ctx, p);
            do_sizes(r, ctx, "unkeyed");
            dup = EVP_MAC_CTX_dup(ctx);
            rec_printf(r, "dup rc=%d", dup != NULL);
            rec_errs(r);
            do_mac(r, dup, keys[3], 16, NULL, msgs[1], msglens[1], out,
                   &outl);
            EVP_MAC_CTX_free(dup);
            do_init(r, ctx, keys[3], 16, NULL);
            dup = EVP_MAC_CTX_dup(ctx);
            rec_printf(r, "dup rc=%d", dup != NULL);
            rec_errs(r);
            do_update(r, ctx, msgs[2], msglens[2]);
            do_final(r, ctx, out, &outl, OUTMAX);
            EVP_MAC_CTX_free(ctx);
            do_update(r, dup, msgs[2], msglens[2]);
            do_final(r, dup, out, &outl, OUTMAX);
            EVP_MAC_CTX_free(dup);
        }
        /*
         * Properties alone, a shape the default takes and keycache does not
         * cache, made the thread's last; then again, the cipher after it:
         * its fetch is still the application's.
         */
        for (round = 0; round < 2; round++) {
            EVP_MAC_CTX *ctx;
            OSSL_PARAM q[2];

            rec_printf(r, "-- %s properties first\n", fams[f].mac);
            q[0] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, "provider=kctestciph");
            q[1] = OSSL_PARAM_construct_end();
            ctx = new_ctx(mac, r);
            do_set(r, ctx, q);
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            before = ciph_calls;
            do_set(r, ctx, q);
            base_params(&fams[f], 0, 1, p);
            do_set(r, ctx, p);
            do_mac(r, ctx, keys[2], 16, NULL, msgs[2], msglens[2], out,
                   &outl);
            rec_printf(r, "kctestciph calls %s\n",
                       ciph_calls > before ? "some" : "none");
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
    ERR_clear_error();
}

/*
 * Under mandatory default properties that only theirs meets: after a shape
 * the default's AES takes, a cipher theirs lacks fails as the default's
 * fetch fails, not as keycache's private one would succeed.
 */
static void pat_cipher_mandatory(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[OUTMAX];
    OSSL_PARAM a[3], b[2];
    size_t outl;
    int i;
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "CMAC", where_q);

    rec_printf(r, "fetch CMAC rc=%d", mac != NULL);
    rec_errs(r);
    a[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-128-CBC");
    a[1] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, "provider=default");
    a[2] = OSSL_PARAM_construct_end();
    b[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-192-CBC");
    b[1] = OSSL_PARAM_construct_end();
    for (i = 0; i < 4; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);

        do_set(r, ctx, a);
        do_set(r, ctx, b);
        do_mac(r, ctx, keys[i % 2], 24, NULL, msgs[2], msglens[2], out,
               &outl);
        EVP_MAC_CTX_free(ctx);
        ctx = new_ctx(mac, r);
        do_mac(r, ctx, keys[i % 2], 16, a, msgs[2], msglens[2], out, &outl);
        EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
    ERR_clear_error();
}

/*
 * A cipher set, then the default properties changed to ones no provider
 * meets, then the key: the default's context keeps the cipher its set
 * fetched, so each MAC succeeds, cached cipher or not (3DES, Camellia:
 * CMAC; ARIA: GMAC), on a thread past its first contexts.
 */
static void pat_set_then_props(OSSL_LIB_CTX *libctx, REC *r)
{
    static const MAC_CIPHER cases[] = {
        { "CMAC", "DES-EDE3-CBC", 24 }, { "CMAC", "CAMELLIA-128-CBC", 16 },
        { "CMAC", "AES-128-CBC", 16 }, { "GMAC", "ARIA-128-GCM", 16 },
        { "GMAC", "AES-128-GCM", 16 }
    };
    unsigned char out[OUTMAX];
    OSSL_PARAM p[3];
    size_t i, outl;
    int rep, warm;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        /* by query: the default properties are changed and reset below */
        EVP_MAC *mac = EVP_MAC_fetch(libctx, cases[i].mac, where_q);

        rec_printf(r, "fetch %s rc=%d", cases[i].mac, mac != NULL);
        p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, cases[i].cipher);
        p[1] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
        p[2] = OSSL_PARAM_construct_end();
        if (cases[i].mac[0] == 'C')
            p[1] = OSSL_PARAM_construct_end();
        /* past a thread's first contexts, under no properties */
        for (warm = 0; warm < 4; warm++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            if (do_set(r, ctx, p))
                do_mac(r, ctx, keys[warm], cases[i].keylen, NULL, msgs[1],
                       msglens[1], out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
        for (rep = 0; rep < 3; rep++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            rec_printf(r, "-- %s %s set, then provider=nope\n",
                       cases[i].mac, cases[i].cipher);
            do_set(r, ctx, p);
            if (!EVP_set_default_properties(libctx, "provider=nope"))
                rec_printf(r, "set_default_properties failed\n");
            do_mac(r, ctx, keys[rep], cases[i].keylen, NULL, msgs[1],
                   msglens[1], out, &outl);
            EVP_set_default_properties(libctx, "");
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
    ERR_clear_error();
}

/*
 * The reference in the tests' long-lived default context (it has no
 * default properties to restore): a fresh one made the thread's default
 * meets OpenSSL 3.0's leak of the "dynamic" engine's data (tools/lsan.supp).
 */
static void test_set_then_props(void)
{
    OSSL_LIB_CTX *kc = kct_keycache_conf("");
    KCT_REC def = { 0 }, got = { 0 };

    CU_ASSERT_FATAL(kc != NULL);
    where_q = NULL;
    kct_rec_run(pat_set_then_props, kct_default(), &def);
    where_q = "provider=" KEYCACHE_PROVIDER_NAME;
    CU_ASSERT_FATAL(kct_rec_run_thread(pat_set_then_props, kc, &got));
    CU_ASSERT(kct_rec_same("[set, then properties no provider meets]", &def,
                           &got));
    /* the reference kept its ciphers: no refusal to compare against */
    CU_ASSERT(def.buf != NULL && strstr(def.buf, "final rc=0") == NULL);
    kct_rec_free(&def);
    kct_rec_free(&got);
    OSSL_LIB_CTX_free(kc);
}

/*
 * KMAC's digest is fetched by its newctx: a context made, then the
 * default properties changed to ones no provider meets, then keyed (with
 * or without a customisation string first): the default's context keeps
 * the digest its newctx fetched.  Past a thread's first contexts.
 */
static void pat_kmac_new_then_props(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const names[] = { "KMAC-128", "KMAC-256" };
    unsigned char out[OUTMAX], nk[32];
    OSSL_PARAM p[2];
    size_t i, outl;
    int rep, warm;

    p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_CUSTOM,
                                             (void *)"abc", 3);
    p[1] = OSSL_PARAM_construct_end();
    for (i = 0; i < 2; i++) {
        EVP_MAC *mac = EVP_MAC_fetch(libctx, names[i], where_q);

        rec_printf(r, "fetch %s rc=%d", names[i], mac != NULL);
        for (warm = 0; warm < 4; warm++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            do_mac(r, ctx, keys[warm], 32, NULL, msgs[1], msglens[1], out,
                   &outl);
            EVP_MAC_CTX_free(ctx);
        }
        for (rep = 0; rep < 3; rep++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            rec_printf(r, "-- %s new, then provider=nope (%d)\n", names[i],
                       rep);
            EVP_set_default_properties(libctx, "provider=nope");
            if (rep == 1)
                do_set(r, ctx, p);
            /* a key not used before: a miss, keyed from a new context */
            memcpy(nk, keys[rep], sizeof(nk));
            nk[0] ^= 0x5a;
            do_mac(r, ctx, nk, 32, rep == 2 ? p : NULL, msgs[1], msglens[1],
                   out, &outl);
            EVP_set_default_properties(libctx, "");
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
    ERR_clear_error();
}

static void test_kmac_new_then_props(void)
{
    OSSL_LIB_CTX *kc = kct_keycache_conf("");
    KCT_REC def = { 0 }, got = { 0 };

    CU_ASSERT_FATAL(kc != NULL);
    where_q = NULL;
    kct_rec_run(pat_kmac_new_then_props, kct_default(), &def);
    where_q = "provider=" KEYCACHE_PROVIDER_NAME;
    CU_ASSERT_FATAL(kct_rec_run_thread(pat_kmac_new_then_props, kc, &got));
    CU_ASSERT(kct_rec_same("[KMAC new, then properties no provider meets]",
                           &def, &got));
    kct_rec_free(&def);
    kct_rec_free(&got);
    OSSL_LIB_CTX_free(kc);
}

/*
 * The default properties changed first, then a new KMAC context: the
 * default's newctx fetches its digest under them and fails where none
 * meets them (no provider; fips=yes without a FIPS provider), also for a
 * key the thread has cached; with them restored, contexts work again.
 */
static void pat_kmac_props_then_new(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const names[] = { "KMAC-128", "KMAC-256" };
    unsigned char out[OUTMAX];
    EVP_MAC_CTX *ctx;
    size_t i, outl;
    int rep, warm;

    for (i = 0; i < 2; i++) {
        EVP_MAC *mac = EVP_MAC_fetch(libctx, names[i], where_q);

        rec_printf(r, "fetch %s rc=%d", names[i], mac != NULL);
        /* one key, used until it is cached */
        for (warm = 0; warm < 6; warm++) {
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[0], 32, NULL, msgs[1], msglens[1], out,
                   &outl);
            EVP_MAC_CTX_free(ctx);
        }
        for (rep = 0; rep < 4; rep++) {
            rec_printf(r, "-- %s: properties %d, then new\n", names[i], rep);
            if (rep % 2 == 0)
                EVP_set_default_properties(libctx, "provider=nope");
            else
                EVP_default_properties_enable_fips(libctx, 1);
            ctx = new_ctx(mac, r);
            if (ctx != NULL)
                do_mac(r, ctx, keys[0], 32, NULL, msgs[1], msglens[1], out,
                       &outl);
            EVP_MAC_CTX_free(ctx);
            EVP_set_default_properties(libctx, "");
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[rep & 1], 32, NULL, msgs[1], msglens[1], out,
                   &outl);
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
    ERR_clear_error();
}

static void test_kmac_props_then_new(void)
{
    OSSL_LIB_CTX *kc = kct_keycache_conf("");
    KCT_REC def = { .mask_name_id = 1 }, got = { .mask_name_id = 1 };

    CU_ASSERT_FATAL(kc != NULL);
    where_q = NULL;
    kct_rec_run(pat_kmac_props_then_new, kct_default(), &def);
    where_q = "provider=" KEYCACHE_PROVIDER_NAME;
    CU_ASSERT_FATAL(kct_rec_run_thread(pat_kmac_props_then_new, kc, &got));
    CU_ASSERT(kct_rec_same("[properties no provider meets, then KMAC new]",
                           &def, &got));
    /* the reference refused them: something to compare against */
    CU_ASSERT(def.buf != NULL && strstr(def.buf, "ctx_new rc=0") != NULL);
    kct_rec_free(&def);
    kct_rec_free(&got);
    OSSL_LIB_CTX_free(kc);
}

/*
 * KMAC's digest from another provider: "kctestkmac" (fips=yes, built in by
 * the test) offers the default's KECCAK-KMAC-128, counting its updates and
 * flipping its output's first byte, so a MAC shows whose digest ran.  With
 * the default properties preferring it, the default's KMAC (fetched with
 * fips=no) runs on it, and keycache's must too: a context of the
 * application's default's.  Where it cannot have one (its fetch of the
 * default's KMAC fails under fips=yes), it fails the context, never
 * running the built-in digest in its place.
 */
static OSSL_DISPATCH kmacd_fns[32];
static OSSL_FUNC_digest_newctx_fn *kmacd_newctx;
static OSSL_FUNC_digest_update_fn *kmacd_update;
static OSSL_FUNC_digest_final_fn *kmacd_final;
static void *kmacd_provctx;
static int kmacd_updates;

static void *kmacd_w_newctx(void *provctx)
{
    return kmacd_newctx(kmacd_provctx);
}

static int kmacd_w_update(void *c, const unsigned char *in, size_t n)
{
    kmacd_updates++;
    return kmacd_update(c, in, n);
}

static int kmacd_w_final(void *c, unsigned char *out, size_t *outl,
                         size_t outsz)
{
    int r = kmacd_final(c, out, outl, outsz);

    if (r && *outl > 0)
        out[0] ^= 1;
    return r;
}

static const OSSL_ALGORITHM kmacd_algs[] = {
    { "KECCAK-KMAC-128:KECCAK-KMAC128", "provider=kctestkmac,fips=yes",
      kmacd_fns, NULL },
    { NULL, NULL, NULL, NULL }
};

/* the default's KECCAK-KMAC-128, wrapped; its provider (to unload) */
static OSSL_PROVIDER *kmacd_wrap(void)
{
    OSSL_PROVIDER *d = OSSL_PROVIDER_load(kct_default(), "default");
    const OSSL_ALGORITHM *a = NULL;
    const OSSL_DISPATCH *f;
    int nc, i = 0;

    if (d != NULL)
        a = OSSL_PROVIDER_query_operation(d, OSSL_OP_DIGEST, &nc);
    for (; a != NULL && a->algorithm_names != NULL; a++)
        if (strstr(a->algorithm_names, "KECCAK-KMAC-128") != NULL)
            break;
    if (a == NULL || a->algorithm_names == NULL) {
        OSSL_PROVIDER_unload(d);
        return NULL;
    }
    kmacd_provctx = OSSL_PROVIDER_get0_provider_ctx(d);
    for (f = a->implementation; f->function_id != 0 && i < 31; f++, i++) {
        kmacd_fns[i] = *f;
        if (f->function_id == OSSL_FUNC_DIGEST_NEWCTX) {
            kmacd_newctx = (OSSL_FUNC_digest_newctx_fn *)f->function;
            kmacd_fns[i].function = (void (*)(void))kmacd_w_newctx;
        } else if (f->function_id == OSSL_FUNC_DIGEST_UPDATE) {
            kmacd_update = (OSSL_FUNC_digest_update_fn *)f->function;
            kmacd_fns[i].function = (void (*)(void))kmacd_w_update;
        } else if (f->function_id == OSSL_FUNC_DIGEST_FINAL) {
            kmacd_final = (OSSL_FUNC_digest_final_fn *)f->function;
            kmacd_fns[i].function = (void (*)(void))kmacd_w_final;
        }
    }
    kmacd_fns[i].function_id = 0;
    return d;
}

/* 4 KMACs of msgs[1] under keys[0]: rc, the MAC, the wrapper's updates */
static int kmacd_run(OSSL_LIB_CTX *lc, const char *props, const char *q,
                     unsigned char *out, int *updates, unsigned long *err)
{
    EVP_MAC *mac;
    size_t outl = 0;
    int round, rc = 0;

    *err = 0;
    EVP_set_default_properties(lc, props);
    mac = EVP_MAC_fetch(lc, "KMAC-128", q);
    for (round = 0; mac != NULL && round < 4; round++) {
        EVP_MAC_CTX *c;

        kmacd_updates = 0;
        ERR_clear_error();
        c = EVP_MAC_CTX_new(mac);
        rc = c != NULL && EVP_MAC_init(c, keys[0], 32, NULL)
             && EVP_MAC_update(c, msgs[1], msglens[1])
             && EVP_MAC_final(c, out, &outl, 32) && outl == 32;
        *err = ERR_peek_error();
        *updates = kmacd_updates;
        EVP_MAC_CTX_free(c);
    }
    ERR_clear_error();
    EVP_MAC_free(mac);
    return rc;
}

static void test_kmac_other_digest(void)
{
    static const char *const props[] = { "?fips=yes", "fips=yes" };
    OSSL_PROVIDER *d = kmacd_wrap();
    unsigned char want[32], got[32];
    unsigned long err;
    int i, wu, gu, rc;
    KCT_OTHER o;

    CU_ASSERT_FATAL(d != NULL);
    for (i = 0; i < 2; i++) {
        CU_ASSERT_FATAL(kct_other_start(&o, "kctestkmac", OSSL_OP_DIGEST,
                                        kmacd_algs));
        CU_ASSERT(kmacd_run(o.ref, props[i], "provider=default,fips=no",
                            want, &wu, &err));
        /* the reference ran the other provider's digest */
        CU_ASSERT(wu > 0);
        rc = kmacd_run(o.kc, props[i],
                       "provider=" KEYCACHE_PROVIDER_NAME ",fips=no", got,
                       &gu, &err);
        if (i == 0) {
            CU_ASSERT(rc && gu == wu && memcmp(got, want, 32) == 0);
        } else {
            /* no default of the application's to be had: refused */
            CU_ASSERT(!rc);
            CU_ASSERT(ERR_GET_REASON(err) == ERR_R_UNSUPPORTED);
        }
        kct_other_stop(&o);
    }
    OSSL_PROVIDER_unload(d);
}

/*
 * A thread's base (KC_TBASE) follows the default properties: made for
 * AES-128-CBC while nothing is preferred, it no longer serves once theirs
 * is (their cipher runs, as the reference's does), and the tags stay the
 * reference's throughout.  On a thread made cold by new keys.
 */
static KCT_OTHER *base_other;

/*
 * One CMAC-AES-128 of a message: the cipher set, then the key.  Not
 * EVP_Q_mac(): 4.x passes its query on to the cipher's fetch, which the
 * reference, fetched without one, would not share.
 */
static size_t base_props_mac(EVP_MAC *mac, const unsigned char *key,
                             unsigned char *out)
{
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    OSSL_PARAM p[2];
    size_t outl = 0;

    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-128-CBC");
    p[1] = OSSL_PARAM_construct_end();
    if (ctx == NULL || !EVP_MAC_CTX_set_params(ctx, p)
        || !EVP_MAC_init(ctx, key, 16, NULL)
        || !EVP_MAC_update(ctx, msgs[2], msglens[2])
        || !EVP_MAC_final(ctx, out, &outl, 16))
        outl = 0;
    EVP_MAC_CTX_free(ctx);
    return outl;
}

static int base_props_run(OSSL_LIB_CTX *libctx, const char *q, int *calls)
{
    unsigned char key[16], want[16], tag[16];
    EVP_MAC *ref = EVP_MAC_fetch(base_other->ref, "CMAC", NULL);
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "CMAC", q);
    int i, before, refcalls = 0, bad = ref == NULL || mac == NULL;

    *calls = 0;
    for (i = 0; !bad && i < 300; i++) {
        kct_fill(key, sizeof(key), 50000 + i);
        before = ciph_calls;
        if (base_props_mac(ref, key, want) != 16)
            bad++;
        refcalls += ciph_calls - before;
        before = ciph_calls;
        if (base_props_mac(mac, key, tag) != 16 || memcmp(want, tag, 16) != 0)
            bad++;
        *calls += ciph_calls - before;
    }
    EVP_MAC_free(ref);
    EVP_MAC_free(mac);
    /*
     * Theirs ran as often under keycache as in the reference: what a
     * thread learned (shapes, entries, bases) before the change does not
     * serve after it.
     */
    if (*calls != refcalls) {
        fprintf(stderr, "\ntheir AES-128-CBC: %d calls, the reference's %d\n",
                *calls, refcalls);
        bad++;
    }
    ERR_clear_error();
    return bad;
}

static void *base_props_main(void *arg)
{
    int *bad = arg, quiet, preferred;

    if (!EVP_set_default_properties(base_other->ref, "?provider=default")
        || !EVP_set_default_properties(base_other->kc, "?provider=default"))
        (*bad)++;
    *bad += base_props_run(base_other->kc, where_q, &quiet);
    if (!EVP_set_default_properties(base_other->ref, "?provider=kctestciph")
        || !EVP_set_default_properties(base_other->kc,
                                       "?provider=kctestciph"))
        (*bad)++;
    *bad += base_props_run(base_other->kc, where_q, &preferred);
    if (quiet != 0 || preferred < 300) {
        fprintf(stderr, "\ntheir AES-128-CBC ran %d, then %d times\n", quiet,
                preferred);
        (*bad)++;
    }
    EVP_set_default_properties(base_other->ref, "");
    EVP_set_default_properties(base_other->kc, "");
    OPENSSL_thread_stop();
    return NULL;
}

static void test_cipher_where(void)
{
    KCT_OTHER o;
    KCT_REC def = { 0 }, got = { 0 };
    unsigned char want[16], tag[16];
    uint64_t hits0, hits1;
    size_t l1 = 0, l2 = 0;
    OSSL_PARAM p[4];

    CU_ASSERT_FATAL(theirs_start(&o, ""));

    /*
     * keycache offers AES-GCM itself: where it is loaded, the default's
     * GMAC takes keycache's under provider=keycache (the default's AES-GCM
     * underneath), which the reference has not.  Before theirs is
     * preferred: the same tag as the default's.
     */
    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-128-GCM");
    p[1] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
    p[2] = OSSL_PARAM_construct_end();
    CU_ASSERT(EVP_Q_mac(o.ref, "GMAC", NULL, NULL, p, keys[0], 16, msgs[2],
                        msglens[2], want, sizeof(want), &l1) != NULL);
    p[1] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, "provider=keycache");
    p[2] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
    p[3] = OSSL_PARAM_construct_end();
    CU_ASSERT(EVP_Q_mac(o.kc, "GMAC", "provider=" KEYCACHE_PROVIDER_NAME,
                        NULL, p, keys[0], 16, msgs[2], msglens[2], tag,
                        sizeof(tag), &l2) != NULL);
    CU_ASSERT(l1 == 16 && l2 == 16 && memcmp(want, tag, 16) == 0);
    ERR_clear_error();

    /*
     * The same for CMAC's AES-128-CBC under provider=keycache: from 3.5
     * keycache's pass-through of the default's AES-CBC, so the default's
     * tag; before, no such cipher, so CMAC fails where the reference does.
     */
    p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, "AES-128-CBC");
    p[1] = OSSL_PARAM_construct_end();
    l1 = l2 = 0;
    CU_ASSERT(EVP_Q_mac(o.ref, "CMAC", NULL, NULL, p, keys[0], 16, msgs[2],
                        msglens[2], want, sizeof(want), &l1) != NULL);
    p[1] = p_utf8(OSSL_MAC_PARAM_PROPERTIES, "provider=keycache");
    p[2] = OSSL_PARAM_construct_end();
    CU_ASSERT(EVP_Q_mac(o.ref, "CMAC", NULL, NULL, p, keys[0], 16, msgs[2],
                        msglens[2], tag, sizeof(tag), &l2) == NULL);
    l2 = 0;
    if (kc_offers_cbc()) {
        CU_ASSERT(EVP_Q_mac(o.kc, "CMAC", "provider=" KEYCACHE_PROVIDER_NAME,
                            NULL, p, keys[0], 16, msgs[2], msglens[2], tag,
                            sizeof(tag), &l2) != NULL);
        CU_ASSERT(l1 == 16 && l2 == 16 && memcmp(want, tag, 16) == 0);
    } else {
        CU_ASSERT(EVP_Q_mac(o.kc, "CMAC", "provider=" KEYCACHE_PROVIDER_NAME,
                            NULL, p, keys[0], 16, msgs[2], msglens[2], tag,
                            sizeof(tag), &l2) == NULL);
    }
    ERR_clear_error();

    base_other = &o;
    where_q = "provider=" KEYCACHE_PROVIDER_NAME;
    CU_ASSERT_EQUAL(kct_thread_problems(base_props_main), 0);

    CU_ASSERT_FATAL(
        EVP_set_default_properties(o.ref, "?provider=kctestciph")
        && EVP_set_default_properties(o.kc, "?provider=kctestciph"));
    where_q = NULL;
    kct_rec_run(pat_cipher_where, o.ref, &def);
    hits0 = kct_counter_in(o.kc, KEYCACHE_PARAM_HITS);
    where_q = "provider=" KEYCACHE_PROVIDER_NAME;
    kct_rec_run(pat_cipher_where, o.kc, &got);
    hits1 = kct_counter_in(o.kc, KEYCACHE_PARAM_HITS);
    CU_ASSERT(kct_rec_same("another provider's AES", &def, &got));
    /* the reference ran on theirs where it should, and on the default's */
    CU_ASSERT(strstr(def.buf, "kctestciph calls some") != NULL
              && strstr(def.buf, "kctestciph calls none") != NULL
              && strstr(def.buf, "Global default") == NULL);
    /* the default's AES under provider=default is still cached */
    CU_ASSERT(hits1 != UINT64_MAX && hits1 > hits0);
    kct_rec_free(&def);
    kct_rec_free(&got);

    CU_ASSERT_FATAL(EVP_set_default_properties(o.ref, "provider=kctestciph")
                    && EVP_set_default_properties(o.kc, "provider=kctestciph"));
    where_q = "provider=default";
    kct_rec_run(pat_cipher_mandatory, o.ref, &def);
    where_q = "provider=" KEYCACHE_PROVIDER_NAME;
    kct_rec_run(pat_cipher_mandatory, o.kc, &got);
    CU_ASSERT(kct_rec_same("mandatory properties", &def, &got));
    /* not vacuous: the reference's second set fails, its first MAC works */
    CU_ASSERT(strstr(def.buf, "set_params rc=0") != NULL
              && strstr(def.buf, "final rc=1") != NULL);
    kct_rec_free(&def);
    kct_rec_free(&got);
    theirs_stop(&o);
}

/*
 * Contexts a base served (KC_TBASE), then given a cipher only the
 * application's preference finds (their AES, by "properties" after the
 * key), or keyed after the default properties changed since their cipher
 * was set: their cipher runs exactly where the reference's does.  GCM is
 * off in keycache's config, so GMAC's cold contexts are not nested.
 */
static void pat_base_where(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const sub[2] = { "AES-128-CBC", "AES-128-GCM" };
    unsigned char key[16], out[OUTMAX];
    OSSL_PARAM p[4], ivp[2];
    size_t f, outl;
    int round, before;

    ivp[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[2], 12);
    ivp[1] = OSSL_PARAM_construct_end();
    for (f = 0; f < 2; f++) {
        EVP_MAC *mac = EVP_MAC_fetch(libctx, fams[f].mac, where_q);

        rec_printf(r, "fetch %s rc=%d", fams[f].mac, mac != NULL);
        rec_errs(r);
        for (round = 0; round < 6; round++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            kct_fill(key, sizeof(key), 70000 + 10 * (int)f + round);
            rec_printf(r, "-- %s round %d\n", fams[f].mac, round);
            p[0] = p_utf8(OSSL_MAC_PARAM_CIPHER, sub[f]);
            p[1] = OSSL_PARAM_construct_end();
            /* first a plain one: a cold thread's base under these properties */
            do_set(r, ctx, p);
            do_mac(r, ctx, key, 16, f == 1 ? ivp : NULL, msgs[1], msglens[1],
                   out, &outl);
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            before = ciph_calls;
            do_set(r, ctx, p);
            if (round % 2 == 0) {
                /* keyed, then their cipher by name, keyed again */
                do_mac(r, ctx, key, 16, f == 1 ? ivp : NULL, msgs[2],
                       msglens[2], out, &outl);
                p[1] = p_utf8(OSSL_MAC_PARAM_PROPERTIES,
                              round == 2 ? "provider=nope"
                              : "provider=kctestciph");
                p[2] = OSSL_PARAM_construct_end();
                do_set(r, ctx, p);
            } else if (!EVP_set_default_properties(libctx,
                                                   "?provider=kctestciph")) {
                rec_printf(r, "set default properties failed");
            }
            do_mac(r, ctx, key, 16, f == 1 ? ivp : NULL, msgs[3],
                   msglens[3], out, &outl);
            EVP_set_default_properties(libctx, "?provider=default");
            EVP_MAC_CTX_free(ctx);
            rec_printf(r, "kctestciph calls %s\n",
                       ciph_calls > before ? "some" : "none");
        }
        EVP_MAC_free(mac);
    }
}

typedef struct {
    OSSL_LIB_CTX *libctx;
    KCT_REC *rec;
} BASE_WHERE;

/* keycache's run on a thread whose CMAC and GMAC misses made it cold */
static void *base_where_main(void *arg)
{
    BASE_WHERE *x = arg;
    unsigned char key[16], out[OUTMAX];
    OSSL_PARAM p[2];
    size_t outl;
    int i;

    p[0] = p_oct(OSSL_MAC_PARAM_IV, ivs[1], 12);
    p[1] = OSSL_PARAM_construct_end();
    for (i = 0; i < 600; i++) {
        kct_fill(key, sizeof(key), 80000 + i);
        EVP_Q_mac(x->libctx, fams[i % 2].mac, where_q,
                  i % 2 == 0 ? "AES-128-CBC" : "AES-128-GCM",
                  i % 2 == 0 ? NULL : p, key, 16, msgs[2], 40, out,
                  sizeof(out), &outl);
    }
    ERR_clear_error();
    kct_rec_run(pat_base_where, x->libctx, x->rec);
    OPENSSL_thread_stop();
    return NULL;
}

static void test_base_where(void)
{
    KCT_OTHER o;
    KCT_REC def = { 0 }, warm = { 0 }, cold = { 0 };
    BASE_WHERE x;
    pthread_t t;

    CU_ASSERT_FATAL(theirs_start(&o, "aes_gcm = off\n"));
    CU_ASSERT_FATAL(
        EVP_set_default_properties(o.ref, "?provider=default")
        && EVP_set_default_properties(o.kc, "?provider=default"));
    where_q = NULL;
    kct_rec_run(pat_base_where, o.ref, &def);
    where_q = "provider=" KEYCACHE_PROVIDER_NAME;
    kct_rec_run(pat_base_where, o.kc, &warm);
    CU_ASSERT(kct_rec_same("based contexts, warm", &def, &warm));
    x.libctx = o.kc;
    x.rec = &cold;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, base_where_main, &x) == 0);
    pthread_join(t, NULL);
    CU_ASSERT(kct_rec_same("based contexts, cold", &def, &cold));
    /* not vacuous: theirs ran in some rounds and not in others */
    CU_ASSERT(strstr(def.buf, "kctestciph calls some") != NULL
              && strstr(def.buf, "kctestciph calls none") != NULL);
    kct_rec_free(&def);
    kct_rec_free(&warm);
    kct_rec_free(&cold);
    theirs_stop(&o);
}

static void test_q_mac(void) { run_pattern(pat_q_mac, 1); }
static void test_fresh(void) { run_pattern(pat_fresh, 1); }
static void test_key_in_set(void) { run_pattern(pat_key_in_set, 1); }
static void test_reinit(void) { run_pattern(pat_reinit, 1); }
static void test_dup(void) { run_pattern(pat_dup, 1); }
static void test_dup_keyed(void) { run_pattern(pat_dup_keyed, 1); }
static void test_after_key(void) { run_pattern(pat_after_key, 1); }
static void test_kmac_out(void) { run_pattern(pat_kmac_out, 1); }
static void test_gmac_iv(void) { run_pattern(pat_gmac_iv, 1); }
static void test_gmac_messages(void) { run_pattern(pat_gmac_messages, 1); }
static void test_bad(void) { run_pattern(pat_bad, 0); }
static void test_gmac_direct(void) { run_pattern(pat_gmac_direct, 1); }
static void test_gmac_null_iv(void) { run_pattern(pat_gmac_null_iv, 0); }
static void test_cipher_after_key(void)
{
    run_pattern(pat_cipher_after_key, 1);
}
static void test_sizes(void) { run_pattern(pat_sizes, 1); }
static void test_interleave(void) { run_pattern(pat_interleave, 1); }
static void test_inplace_key(void) { run_pattern(pat_inplace_key, 1); }
static void test_init_variants(void) { run_pattern(pat_init_variants, 1); }
static void test_kmac_bare(void) { run_pattern(pat_kmac_bare, 1); }
static void test_kmac_direct(void) { run_pattern(pat_kmac_direct, 1); }
static void test_near_keys(void) { run_pattern(pat_near_keys, 1); }
static void test_param_prefix(void) { run_pattern(pat_param_prefix, 1); }
static void test_utf8_forms(void) { run_pattern(pat_utf8_forms, 1); }
static void test_uncached(void) { run_pattern(pat_uncached, 0); }

/* runs 2 and 3 on a thread made cold first: its bases serve */
#define run_pattern_cold(fn) \
    kct_rec_pattern(#fn " (cold)", fn, cold_churn, 1, served_by_keycache, 0)
static void test_base(void)
{
    run_pattern_cold(pat_base);
    run_pattern_cold(pat_base_rotation);
    run_pattern_cold(pat_base_kmac);
}
static void test_cold_patterns(void)
{
    run_pattern_cold(pat_q_mac);
    run_pattern_cold(pat_fresh);
    run_pattern_cold(pat_dup);
    run_pattern_cold(pat_after_key);
    run_pattern_cold(pat_gmac_iv);
    run_pattern_cold(pat_gmac_messages);
    run_pattern_cold(pat_bad);
    run_pattern_cold(pat_gmac_null_iv);
    run_pattern_cold(pat_cipher_after_key);
    run_pattern_cold(pat_sizes);
    run_pattern_cold(pat_interleave);
    run_pattern_cold(pat_init_variants);
    run_pattern_cold(pat_utf8_forms);
    run_pattern_cold(pat_kmac_out);
    run_pattern_cold(pat_kmac_bare);
    run_pattern_cold(pat_key_in_set);
    run_pattern_cold(pat_reinit);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("fam_patterns", NULL, NULL);

    init_data();
    CU_add_test(s, "known answers", test_known_answers);
    CU_add_test(s, "only AES keys are cached", test_uncached_ciphers);
    CU_add_test(s, "uncached ciphers, fresh contexts: the default's",
                test_uncached);
    CU_add_test(s, "EVP_Q_mac", test_q_mac);
    CU_add_test(s, "fresh EVP_MAC_CTX per message", test_fresh);
    CU_add_test(s, "key as a set_params parameter", test_key_in_set);
    CU_add_test(s, "keyless re-init", test_reinit);
    CU_add_test(s, "EVP_MAC_CTX_dup before the key and mid-message",
                test_dup);
    CU_add_test(s, "a keyed template duplicated per message",
                test_dup_keyed);
    CU_add_test(s, "cipher, IV, custom, size after the key",
                test_after_key);
    CU_add_test(s, "KMAC output length and XOF", test_kmac_out);
    CU_add_test(s, "GMAC IV lengths", test_gmac_iv);
    CU_add_test(s, "GMAC messages with and without an IV",
                test_gmac_messages);
    CU_add_test(s, "bad inputs", test_bad);
    CU_add_test(s, "GMAC keyed from the cache: every call after the key",
                test_gmac_direct);
    CU_add_test(s, "GMAC IV without data before the key", test_gmac_null_iv);
    CU_add_test(s, "a cipher that fails, set after the key",
                test_cipher_after_key);
    CU_add_test(s, "size queries", test_sizes);
    CU_add_test(s, "two live contexts", test_interleave);
    CU_add_test(s, "key changed in place", test_inplace_key);
    CU_add_test(s, "keys one byte apart, every position", test_near_keys);
    CU_add_test(s, "string params a prefix of the last", test_param_prefix);
    CU_add_test(s, "init params: IV first, a shape's prefix",
                test_init_variants);
    CU_add_test(s, "KMAC keyed without params", test_kmac_bare);
    CU_add_test(s, "KMAC keyed from the cache: every call after the key",
                test_kmac_direct);
    CU_add_test(s, "UTF-8 params with and without a counted NUL",
                test_utf8_forms);
    CU_add_test(s, "a refused GMAC IV is never served",
                test_bad_iv_uncached);
    CU_add_test(s, "a new key per message, then one key", test_cold);
    CU_add_test(s, "a thread's base: new keys, shapes, steps", test_base);
    CU_add_test(s, "a cipher set, then default properties no provider meets",
                test_set_then_props);
    CU_add_test(s, "KMAC new, then properties", test_kmac_new_then_props);
    CU_add_test(s, "properties, then KMAC new", test_kmac_props_then_new);
    CU_add_test(s, "KMAC's digest from another provider",
                test_kmac_other_digest);
    CU_add_test(s, "patterns on a thread made cold", test_cold_patterns);
    CU_add_test(s, "a base's contexts given another provider's cipher",
                test_base_where);
    CU_add_test(s, "a cipher of another provider's, or none",
                test_cipher_where);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
