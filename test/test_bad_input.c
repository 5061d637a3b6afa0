/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile and careless calls must behave exactly as with the default
 * provider.
 *
 * Every row of the tables below is a small scenario (a sequence of EVP calls
 * on one fresh context) that fills a RECORD: the return value of each call,
 * the first error on the queue after it (library, reason, function, file,
 * line and data), and the output bytes produced.  A row is run once against
 * kct_default() and twice against kct_keycache(), with a known-good
 * operation on the same key in between so that the second keycache run
 * meets a warm cache.  Both keycache records must equal the default one.
 * A row runs with its library context as the thread's default, as
 * unchanged programs configured through OPENSSL_CONF do, so that error data
 * naming a library context tells the application's from keycache's private
 * one.  After each row the thread's cache must still be correct: a
 * known-good MAC / encryption with the same key must give the default
 * provider's bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_family.h"
#include "kc_test.h"
#include "keycache.h"

#define MAX_STEPS 128            /* the registry tables' rows take more */
#define MAX_OUT   8192

typedef struct {
    int nsteps;
    int ret[MAX_STEPS];
    char err[MAX_STEPS][KCT_ERR_LEN]; /* first queued error, "" = none */
    int nouts;
    size_t outlen[MAX_STEPS];    /* lengths of the chunks appended to out */
    size_t used;
    unsigned char out[MAX_OUT];
    int random_bytes;            /* output depends on a generated IV */
    int overflow;
} RECORD;

typedef void (*ROW_FN)(OSSL_LIB_CTX *libctx, const char *alg, RECORD *r);

typedef struct {
    const char *name;
    ROW_FN fn;
} ROW;

static unsigned char std_key[32];
static unsigned char std_iv[1024];     /* long enough for any IV length row */
static unsigned char std_msg[100];
static unsigned char std_aad[20];

/*
 * Set around calls whose errors keycache's pass-through context raises:
 * its fetches run in keycache's private library context, which their error
 * data names (kct_err_mask_libctx).
 */
static int mask_libctx;

/* ---- recording ---------------------------------------------------------- */

/* Note a call's result and the error it left, then clear the queue. */
static int rec(RECORD *r, int ret)
{
    if (r->nsteps >= MAX_STEPS) {
        r->overflow = 1;
    } else {
        r->ret[r->nsteps] = ret;
        kct_err_next(r->err[r->nsteps], sizeof(r->err[0]));
        if (mask_libctx)
            kct_err_mask_libctx(r->err[r->nsteps]);
        r->nsteps++;
    }
    ERR_clear_error();
    return ret;
}

static void rec_out(RECORD *r, const unsigned char *p, size_t n)
{
    if (r->nouts >= MAX_STEPS || n > MAX_OUT - r->used) {
        r->overflow = 1;
        return;
    }
    r->outlen[r->nouts++] = n;
    memcpy(r->out + r->used, p, n);
    r->used += n;
}

/* A parameter table as output: its names and types, in order. */
static void rec_table(RECORD *r, const OSSL_PARAM *t)
{
    unsigned char buf[2048];
    const OSSL_PARAM *p;
    size_t n = 0, l;

    rec(r, t != NULL);
    for (p = t; p != NULL && p->key != NULL; p++) {
        if ((l = strlen(p->key)) + 2 > sizeof(buf) - n) {
            r->overflow = 1;
            return;
        }
        memcpy(buf + n, p->key, l);
        n += l;
        buf[n++] = '/';
        buf[n++] = (unsigned char)('0' + p->data_type);
    }
    rec_out(r, buf, n);
}

static void run_row(const ROW *row, OSSL_LIB_CTX *libctx, const char *alg,
                    RECORD *r)
{
    memset(r, 0, sizeof(*r));
    ERR_clear_error();
    kct_use(libctx);
    row->fn(libctx, alg, r);
    kct_use(NULL);
    ERR_clear_error();
}

/* Compare a keycache record with the default one; report the first diff. */
static void compare(const char *row, const char *alg, const char *run,
                    const RECORD *d, const RECORD *k)
{
    int i;

    CU_ASSERT_FALSE(d->overflow || k->overflow);
    if (d->nsteps != k->nsteps) {
        fprintf(stderr, "\n%s/%s (%s): %d calls vs %d\n",
                row, alg, run, d->nsteps, k->nsteps);
        CU_FAIL("different number of calls");
        return;
    }
    for (i = 0; i < d->nsteps; i++) {
        if (d->ret[i] != k->ret[i] || strcmp(d->err[i], k->err[i]) != 0) {
            fprintf(stderr, "\n%s/%s (%s) call %d:\n  default  ret %d err %s"
                    "\n  keycache ret %d err %s\n", row, alg, run, i + 1,
                    d->ret[i], d->err[i], k->ret[i], k->err[i]);
            CU_FAIL("return value or error differs from default");
            return;
        }
    }
    if (d->random_bytes)
        return;
    if (d->nouts != k->nouts || d->used != k->used
        || memcmp(d->outlen, k->outlen, d->nouts * sizeof(d->outlen[0])) != 0
        || memcmp(d->out, k->out, d->used) != 0) {
        fprintf(stderr, "\n%s/%s (%s): output bytes differ\n", row, alg, run);
        CU_FAIL("output differs from default");
    }
}

/* ---- HMAC helpers ------------------------------------------------------- */

/* a new MAC context of row f (HMAC: mac_new) */
static EVP_MAC_CTX *fm_new(OSSL_LIB_CTX *lc, const KCT_FAM *f)
{
    EVP_MAC *mac = EVP_MAC_fetch(lc, f->name, NULL);
    EVP_MAC_CTX *c = EVP_MAC_CTX_new(mac);

    EVP_MAC_free(mac);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

static EVP_MAC_CTX *mac_new(OSSL_LIB_CTX *libctx)
{
    return fm_new(libctx, kct_fam_find("HMAC"));
}

static int mac_init(RECORD *r, EVP_MAC_CTX *c, const char *md,
                    const unsigned char *key, size_t keylen)
{
    OSSL_PARAM p[2];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_end();
    return rec(r, EVP_MAC_init(c, key, keylen, p));
}

static void mac_final(RECORD *r, EVP_MAC_CTX *c, size_t outsize)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl = 0;

    if (rec(r, EVP_MAC_final(c, out, &outl, outsize)))
        rec_out(r, out, outl);
}

/* Message, then final with a full-size buffer. */
static void mac_finish(RECORD *r, EVP_MAC_CTX *c)
{
    rec(r, EVP_MAC_update(c, std_msg, sizeof(std_msg)));
    mac_final(r, c, EVP_MAX_MD_SIZE);
}

/* The known-good operation: HMAC(md, key, msg) on a fresh context. */
static void mac_good(OSSL_LIB_CTX *libctx, const char *md,
                     const unsigned char *key, size_t keylen, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(libctx);

    mac_init(r, c, md, key, keylen);
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

/* After a failure, the same context must still work with good input. */
static void mac_recover(RECORD *r, EVP_MAC_CTX *c, const char *md)
{
    mac_init(r, c, md, std_key, sizeof(std_key));
    mac_finish(r, c);
}

/* ---- HMAC rows ---------------------------------------------------------- */

static void h_null_key(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);

    rec(r, EVP_MAC_init(c, NULL, 0, NULL));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);

    /* Same with only the digest given: still no key to re-init from. */
    c = mac_new(lc);
    mac_init(r, c, md, NULL, 0);
    mac_finish(r, c);
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);
}

static void h_zero_len_key(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    static const unsigned char empty[1] = { 0 };
    EVP_MAC_CTX *c = mac_new(lc);

    mac_init(r, c, md, empty, 0);
    mac_finish(r, c);
    /* Again on the same context, as a reused context would. */
    mac_init(r, c, md, empty, 0);
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void h_huge_key(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    size_t len = 1024 * 1024;
    unsigned char *key = malloc(len);
    EVP_MAC_CTX *c = mac_new(lc);

    CU_ASSERT_PTR_NOT_NULL_FATAL(key);
    kct_fill(key, len, 7);
    mac_init(r, c, md, key, len);
    mac_finish(r, c);
    /* A key one byte past the cacheable size, and one exactly at it. */
    mac_init(r, c, md, key, KEYCACHE_MAX_KEY_LEN + 1);
    mac_finish(r, c);
    mac_init(r, c, md, key, KEYCACHE_MAX_KEY_LEN);
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
    free(key);
}

static void h_key_wrong_type(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    OSSL_PARAM p[3];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_KEY,
                                            "not an octet string", 0);
    p[2] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_CTX_set_params(c, p));
    rec(r, EVP_MAC_init(c, NULL, 0, p));
    mac_finish(r, c);
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);
}

/* The key as a proper octet parameter, and as a NULL/0 one. */
static void h_key_param(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    OSSL_PARAM p[3];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, std_key,
                                             sizeof(std_key));
    p[2] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_CTX_set_params(c, p));
    rec(r, EVP_MAC_init(c, NULL, 0, NULL));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);

    c = mac_new(lc);
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, NULL, 0);
    rec(r, EVP_MAC_init(c, NULL, 0, p));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void bad_digest(OSSL_LIB_CTX *lc, const char *md, RECORD *r,
                       const char *bad)
{
    EVP_MAC_CTX *c = mac_new(lc);

    mac_init(r, c, bad, std_key, sizeof(std_key));
    mac_finish(r, c);
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);

    /* Set through EVP_MAC_CTX_set_params() before a key-only init. */
    c = mac_new(lc);
    {
        OSSL_PARAM p[2];

        p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                (char *)bad, 0);
        p[1] = OSSL_PARAM_construct_end();
        rec(r, EVP_MAC_CTX_set_params(c, p));
    }
    rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), NULL));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void h_digest_nope(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    bad_digest(lc, md, r, "NOPE");
}

static void h_digest_sha257(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    bad_digest(lc, md, r, "SHA-257");
}

static void h_digest_shake128(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    bad_digest(lc, md, r, "SHAKE128");
}

static void h_digest_int(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    int v = 256;
    OSSL_PARAM p[2];

    p[0] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST, &v);
    p[1] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), p));
    mac_finish(r, c);
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);
}

static int props_init(RECORD *r, EVP_MAC_CTX *c, const char *md,
                      const char *props)
{
    OSSL_PARAM p[3];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                            (char *)props, 0);
    p[2] = OSSL_PARAM_construct_end();
    return rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), p));
}

/* Digest properties are honoured (and can fail) like in default. */
static void h_digest_props(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    static const char *const props[] = {
        "provider=default", "provider=nope", "fips=yes", "?provider=nope",
        "provider==", ""
    };
    EVP_MAC_CTX *c;
    size_t i;

    /* each on a fresh context: resolved by the wrapper itself */
    for (i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
        c = mac_new(lc);
        props_init(r, c, md, props[i]);
        mac_finish(r, c);
        EVP_MAC_CTX_free(c);
    }
    /* all on one context: once keyed, a failing digest passes through */
    c = mac_new(lc);
    for (i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
        props_init(r, c, md, props[i]);
        mac_finish(r, c);
    }
    EVP_MAC_CTX_free(c);
}

static void h_update_before_init(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);

    mac_finish(r, c);
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);
}

static void h_final_before_init(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);

    mac_final(r, c, EVP_MAX_MD_SIZE);
    mac_final(r, c, 0);
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);
}

/* A digest set but no key yet: update/final must still fail. */
static void h_digest_only(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    OSSL_PARAM p[2];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_CTX_set_params(c, p));
    rec(r, (int)EVP_MAC_CTX_get_mac_size(c));
    rec(r, (int)EVP_MAC_CTX_get_block_size(c));
    mac_finish(r, c);
    rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), NULL));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void h_final_twice(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);

    mac_init(r, c, md, std_key, sizeof(std_key));
    mac_finish(r, c);
    mac_final(r, c, EVP_MAX_MD_SIZE);
    /* ... and carry on updating a finished context. */
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void h_size_before_init(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    size_t outl = 12345;

    rec(r, (int)EVP_MAC_CTX_get_mac_size(c));
    rec(r, (int)EVP_MAC_CTX_get_block_size(c));
    rec(r, EVP_MAC_final(c, NULL, &outl, 0));
    rec(r, (int)outl);
    mac_init(r, c, md, std_key, sizeof(std_key));
    rec(r, (int)EVP_MAC_CTX_get_mac_size(c));
    rec(r, (int)EVP_MAC_CTX_get_block_size(c));
    outl = 12345;
    rec(r, EVP_MAC_final(c, NULL, &outl, 0));
    rec(r, (int)outl);
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void h_unknown_params(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    int v = 1;
    OSSL_PARAM p[4];

    p[0] = OSSL_PARAM_construct_int("no-such-param", &v);
    p[1] = OSSL_PARAM_construct_utf8_string("keycache-nope", "x", 0);
    p[2] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_CTX_set_params(c, p));
    p[2] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[3] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), p));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void h_small_buffer(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);

    mac_init(r, c, md, std_key, sizeof(std_key));
    rec(r, EVP_MAC_update(c, std_msg, sizeof(std_msg)));
    mac_final(r, c, 16);
    mac_final(r, c, (size_t)EVP_MAC_CTX_get_mac_size(c) - 1);
    mac_final(r, c, EVP_MAX_MD_SIZE);
    EVP_MAC_CTX_free(c);
}

/* Re-init without a key reuses the key (and the digest) of the last init. */
static void h_reinit_no_key(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    OSSL_PARAM p[2];

    mac_init(r, c, md, std_key, sizeof(std_key));
    mac_finish(r, c);
    rec(r, EVP_MAC_init(c, NULL, 0, NULL));
    mac_finish(r, c);
    /* A new digest without a new key: default keeps the old one. */
    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            "SHA512", 0);
    p[1] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_init(c, NULL, 0, p));
    rec(r, (int)EVP_MAC_CTX_get_mac_size(c));
    mac_finish(r, c);
    /* A new key without a digest: the SHA512 set above now applies. */
    rec(r, EVP_MAC_init(c, std_key, 16, NULL));
    rec(r, (int)EVP_MAC_CTX_get_mac_size(c));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void h_dup_midway(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc), *d;

    mac_init(r, c, md, std_key, sizeof(std_key));
    rec(r, EVP_MAC_update(c, std_msg, 10));
    d = EVP_MAC_CTX_dup(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    EVP_MAC_CTX_free(c);
    mac_finish(r, d);
    rec(r, EVP_MAC_init(d, NULL, 0, NULL));
    mac_finish(r, d);
    EVP_MAC_CTX_free(d);
}

/* One context, changing keys: cache entries must not be confused. */
static void h_key_change(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    unsigned char other[sizeof(std_key)];

    memcpy(other, std_key, sizeof(other));
    other[sizeof(other) - 1] ^= 0x80;
    mac_init(r, c, md, std_key, sizeof(std_key));
    mac_finish(r, c);
    mac_init(r, c, md, other, sizeof(other));
    mac_finish(r, c);
    /* A prefix of the key is a different key. */
    mac_init(r, c, md, std_key, sizeof(std_key) - 1);
    mac_finish(r, c);
    mac_init(r, c, md, std_key, sizeof(std_key));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

/* TLS record MAC mode (a pass-through case) on a keyed context. */
static void h_tls_mode(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    size_t tls_size = 160;
    OSSL_PARAM p[3];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE,
                                       &tls_size);
    p[2] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), p));
    rec(r, EVP_MAC_update(c, std_aad, 13));
    rec(r, EVP_MAC_update(c, std_iv, 100));
    mac_final(r, c, EVP_MAX_MD_SIZE);
    EVP_MAC_CTX_free(c);

    /* Then the same key in normal mode on a fresh context. */
    c = mac_new(lc);
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);
}

/* The digest flag parameters are accepted and change nothing visible. */
static void h_digest_flags(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    EVP_MAC_CTX *c = mac_new(lc);
    int one = 1;
    OSSL_PARAM p[3];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_ONESHOT, &one);
    p[2] = OSSL_PARAM_construct_end();
    rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), p));
    mac_finish(r, c);
    p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST_NOINIT,
                                            "yes", 0);
    rec(r, EVP_MAC_init(c, std_key, sizeof(std_key), p));
    mac_finish(r, c);
    EVP_MAC_CTX_free(c);
}

/* Aliases, OIDs and odd digests, switched on one context. */
static void h_digest_names(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    static const char *const names[] = {
        "sha256", "SHA2-256", "2.16.840.1.101.3.4.2.1", "NULL", "MD5-SHA1",
        "SHA3-224", "BLAKE2S-256", "SM3", "SHA512-224"
    };
    EVP_MAC_CTX *c = mac_new(lc);
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        mac_init(r, c, names[i], std_key, sizeof(std_key));
        rec(r, (int)EVP_MAC_CTX_get_mac_size(c));
        mac_finish(r, c);
    }
    mac_recover(r, c, md);
    EVP_MAC_CTX_free(c);
}

/*
 * EVP_Q_mac() with a NULL library context, as unchanged code calls it: the
 * thread's default (the row's), whose name is in a failed fetch's data.
 */
static void h_qmac_digests(OSSL_LIB_CTX *lc, const char *md, RECORD *r)
{
    static const char *const mds[] = { "MD4", "NOPE", "SHAKE256", NULL };
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t i, outl;

    for (i = 0; i < sizeof(mds) / sizeof(mds[0]); i++) {
        outl = 0;
        if (rec(r, EVP_Q_mac(NULL, "HMAC", NULL, mds[i] != NULL ? mds[i] : md,
                             NULL, std_key, sizeof(std_key), std_msg,
                             sizeof(std_msg), out, sizeof(out), &outl)
                   != NULL))
            rec_out(r, out, outl);
    }
}

static const ROW hmac_rows[] = {
    { "NULL key, keylen 0, fresh ctx", h_null_key },
    { "zero-length key", h_zero_len_key },
    { "1 MiB key", h_huge_key },
    { "key param as utf8", h_key_wrong_type },
    { "key as octet param / NULL octet", h_key_param },
    { "unknown digest NOPE", h_digest_nope },
    { "misspelled digest SHA-257", h_digest_sha257 },
    { "XOF digest SHAKE128", h_digest_shake128 },
    { "digest param as integer", h_digest_int },
    { "digest properties", h_digest_props },
    { "digest aliases and odd digests", h_digest_names },
    { "update before init", h_update_before_init },
    { "final before init", h_final_before_init },
    { "digest set, no key", h_digest_only },
    { "final twice", h_final_twice },
    { "get_mac_size before init", h_size_before_init },
    { "unknown param names", h_unknown_params },
    { "final with too small buffer", h_small_buffer },
    { "re-init without key", h_reinit_no_key },
    { "dup mid-message", h_dup_midway },
    { "key change on one context", h_key_change },
    { "TLS data size mode", h_tls_mode },
    { "digest flag params", h_digest_flags },
    { "EVP_Q_mac, MD4 and unknown digests", h_qmac_digests },
};

/* ---- AES-GCM helpers ---------------------------------------------------- */

typedef struct {
    EVP_CIPHER *cipher;
    EVP_CIPHER_CTX *ctx;
    int keylen;
} GCM;

static void gcm_open(GCM *g, OSSL_LIB_CTX *libctx, const char *alg)
{
    g->cipher = EVP_CIPHER_fetch(libctx, alg, NULL);
    g->ctx = EVP_CIPHER_CTX_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(g->cipher);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g->ctx);
    g->keylen = EVP_CIPHER_get_key_length(g->cipher);
}

static void gcm_close(GCM *g)
{
    EVP_CIPHER_CTX_free(g->ctx);
    EVP_CIPHER_free(g->cipher);
}

/* First init passes the cipher; later ones reuse the context's. */
static int g_init(RECORD *r, GCM *g, int first, const unsigned char *key,
                  const unsigned char *iv, int enc)
{
    return rec(r, EVP_CipherInit_ex2(g->ctx, first ? g->cipher : NULL,
                                     key, iv, enc, NULL));
}

static int g_aad(RECORD *r, GCM *g, const unsigned char *aad, int len)
{
    int outl = 0;

    return rec(r, EVP_CipherUpdate(g->ctx, NULL, &outl, aad, len));
}

static int g_data(RECORD *r, GCM *g, const unsigned char *in, int len)
{
    unsigned char out[sizeof(std_msg)];
    int outl = 0;

    if (!rec(r, EVP_CipherUpdate(g->ctx, out, &outl, in, len)))
        return 0;
    rec_out(r, out, (size_t)outl);
    return 1;
}

static int g_final(RECORD *r, GCM *g)
{
    unsigned char out[32];
    int outl = 0;

    if (!rec(r, EVP_CipherFinal_ex(g->ctx, out, &outl)))
        return 0;
    rec_out(r, out, (size_t)outl);
    return 1;
}

static int g_get_tag(RECORD *r, GCM *g, int len)
{
    unsigned char tag[32];

    memset(tag, 0xee, sizeof(tag));
    if (rec(r, EVP_CIPHER_CTX_ctrl(g->ctx, EVP_CTRL_AEAD_GET_TAG, len,
                                   tag)) <= 0)
        return 0;
    rec_out(r, tag, (size_t)len);
    return 1;
}

static int g_set_tag(RECORD *r, GCM *g, int len, const unsigned char *tag)
{
    return rec(r, EVP_CIPHER_CTX_ctrl(g->ctx, EVP_CTRL_AEAD_SET_TAG, len,
                                      (void *)tag));
}

/* AAD, message, final and tag: the rest of a normal encryption. */
static void g_seal_rest(RECORD *r, GCM *g)
{
    g_aad(r, g, std_aad, sizeof(std_aad));
    g_data(r, g, std_msg, sizeof(std_msg));
    g_final(r, g);
    g_get_tag(r, g, 16);
}

/* The known-good operation: seal, then open it again, on fresh contexts. */
static void gcm_good(OSSL_LIB_CTX *libctx, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, libctx, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);

    /* Decrypting our own ciphertext must give the message back. */
    if (r->nouts == 3 && r->used == sizeof(std_msg) + 16) {
        unsigned char ct[sizeof(std_msg)], tag[16];

        memcpy(ct, r->out, sizeof(ct));
        memcpy(tag, r->out + sizeof(ct), sizeof(tag));
        gcm_open(&g, libctx, alg);
        g_init(r, &g, 1, std_key, std_iv, 0);
        g_set_tag(r, &g, 16, tag);
        g_aad(r, &g, std_aad, sizeof(std_aad));
        g_data(r, &g, ct, sizeof(ct));
        g_final(r, &g);
        gcm_close(&g);
    }
}

/* Reference ciphertext and tag, always made by the default provider. */
static void gcm_reference(const char *alg, unsigned char *ct,
                          unsigned char *tag)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(kct_default(), alg, NULL);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int outl;

    CU_ASSERT_FATAL(c != NULL && ctx != NULL
                    && EVP_EncryptInit_ex2(ctx, c, std_key, std_iv, NULL)
                    && EVP_EncryptUpdate(ctx, NULL, &outl, std_aad,
                                         sizeof(std_aad))
                    && EVP_EncryptUpdate(ctx, ct, &outl, std_msg,
                                         sizeof(std_msg))
                    && EVP_EncryptFinal_ex(ctx, ct + outl, &outl)
                    && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16,
                                           tag) > 0);
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
}

/* ---- AES-GCM rows ------------------------------------------------------- */

static void g_null_key(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, std_iv, 1);
    g_seal_rest(r, &g);
    /* Now the key, IV kept from before. */
    g_init(r, &g, 0, std_key, NULL, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

static void g_no_key(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char iv[16];

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, NULL, 1);
    rec(r, EVP_CIPHER_CTX_get_updated_iv(g.ctx, iv, sizeof(iv)));
    g_seal_rest(r, &g);
    g_init(r, &g, 0, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

/* Key given after the IV, in a separate init: the IV must survive. */
static void g_iv_then_key(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, std_iv, 1);
    g_init(r, &g, 0, std_key, NULL, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

static void g_key_length(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    size_t kl = 16;
    OSSL_PARAM p[2];

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, NULL, 1);
    rec(r, EVP_CIPHER_CTX_set_key_length(g.ctx, g.keylen == 16 ? 32 : 16));
    rec(r, EVP_CIPHER_CTX_get_key_length(g.ctx));
    rec(r, EVP_CIPHER_CTX_set_key_length(g.ctx, 7));
    rec(r, EVP_CIPHER_CTX_set_key_length(g.ctx, 0));
    rec(r, EVP_CIPHER_CTX_get_key_length(g.ctx));
    p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN, &kl);
    p[1] = OSSL_PARAM_construct_end();
    rec(r, EVP_CipherInit_ex2(g.ctx, NULL, std_key, std_iv, 1, p));
    g_seal_rest(r, &g);
    gcm_close(&g);
}

static void ivlen_row(OSSL_LIB_CTX *lc, const char *alg, RECORD *r, int n)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, NULL, 1);
    rec(r, EVP_CIPHER_CTX_ctrl(g.ctx, EVP_CTRL_AEAD_SET_IVLEN, n, NULL));
    rec(r, EVP_CIPHER_CTX_get_iv_length(g.ctx));
    g_init(r, &g, 0, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);

    /* The same IV length set after key and IV are in place. */
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    rec(r, EVP_CIPHER_CTX_ctrl(g.ctx, EVP_CTRL_AEAD_SET_IVLEN, n, NULL));
    g_seal_rest(r, &g);
    gcm_close(&g);
}

static void g_ivlen_0(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    ivlen_row(lc, alg, r, 0);
}

static void g_ivlen_1(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    ivlen_row(lc, alg, r, 1);
}

static void g_ivlen_129(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    ivlen_row(lc, alg, r, 129);
}

static void g_ivlen_1024(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    ivlen_row(lc, alg, r, 1024);
}

/* Decrypt the reference with a tag of length n set up front. */
static void taglen_row(OSSL_LIB_CTX *lc, const char *alg, RECORD *r, int n)
{
    GCM g;
    unsigned char ct[sizeof(std_msg)], tag[32];

    memset(tag, 0, sizeof(tag));
    gcm_reference(alg, ct, tag);
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 0);
    g_set_tag(r, &g, n, tag);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, ct, sizeof(ct));
    g_final(r, &g);
    gcm_close(&g);
}

static void g_taglen_0(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    taglen_row(lc, alg, r, 0);
}

static void g_taglen_3(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    taglen_row(lc, alg, r, 3);
}

static void g_taglen_17(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    taglen_row(lc, alg, r, 17);
}

/* Tag set on a decrypt context before it has a key. */
static void g_tag_then_key(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char ct[sizeof(std_msg)], tag[16];

    gcm_reference(alg, ct, tag);
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, NULL, 0);
    g_set_tag(r, &g, 16, tag);
    g_init(r, &g, 0, std_key, std_iv, 0);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, ct, sizeof(ct));
    g_final(r, &g);
    gcm_close(&g);
}

static void g_set_tag_encrypt(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char tag[16] = { 0 };

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_set_tag(r, &g, 16, tag);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

static void g_wrong_tag(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char ct[sizeof(std_msg)], tag[16];

    gcm_reference(alg, ct, tag);
    tag[15] ^= 1;
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 0);
    g_set_tag(r, &g, 16, tag);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, ct, sizeof(ct));
    g_final(r, &g);
    /* Retry on the same context with the right tag and a fresh init. */
    tag[15] ^= 1;
    g_init(r, &g, 0, std_key, std_iv, 0);
    g_set_tag(r, &g, 16, tag);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, ct, sizeof(ct));
    g_final(r, &g);
    gcm_close(&g);
}

static void g_update_after_final(OSSL_LIB_CTX *lc, const char *alg,
                                 RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    g_data(r, &g, std_msg, sizeof(std_msg));
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_get_tag(r, &g, 16);
    gcm_close(&g);
}

static void g_final_twice(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    g_final(r, &g);
    g_get_tag(r, &g, 16);
    gcm_close(&g);
}

/* Encrypt without an IV: default generates a random one. */
static void g_no_iv_encrypt(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    r->random_bytes = 1;
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, NULL, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);

    /* Data first, no AAD. */
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, NULL, 1);
    g_data(r, &g, std_msg, sizeof(std_msg));
    g_final(r, &g);
    g_get_tag(r, &g, 16);
    gcm_close(&g);
}

static void g_no_iv_decrypt(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char ct[sizeof(std_msg)], tag[16];

    gcm_reference(alg, ct, tag);
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, NULL, 0);
    g_set_tag(r, &g, 16, tag);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, ct, sizeof(ct));
    g_final(r, &g);
    gcm_close(&g);
}

static void g_tag_before_final(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_get_tag(r, &g, 16);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, std_msg, sizeof(std_msg));
    g_get_tag(r, &g, 16);
    g_final(r, &g);
    g_get_tag(r, &g, 16);
    gcm_close(&g);
}

static void g_tag_odd_len(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    g_get_tag(r, &g, 0);
    g_get_tag(r, &g, 17);
    g_get_tag(r, &g, 4);
    gcm_close(&g);
}

static void g_unknown_params(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    int v = 1;
    OSSL_PARAM p[3];

    p[0] = OSSL_PARAM_construct_int("no-such-param", &v);
    p[1] = OSSL_PARAM_construct_utf8_string("keycache-nope", "x", 0);
    p[2] = OSSL_PARAM_construct_end();
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    rec(r, EVP_CIPHER_CTX_set_params(g.ctx, p));
    rec(r, EVP_CipherInit_ex2(g.ctx, NULL, std_key, std_iv, 1, p));
    g_seal_rest(r, &g);
    gcm_close(&g);
}

static void g_aad_after_data(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, std_msg, 33);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, std_msg + 33, sizeof(std_msg) - 33);
    g_final(r, &g);
    g_get_tag(r, &g, 16);
    gcm_close(&g);
}

/* One context, many messages: new IV only, then same key and IV again. */
static void g_reinit(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    g_init(r, &g, 0, NULL, std_iv + 12, 1);
    g_seal_rest(r, &g);
    g_init(r, &g, 0, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    /* Switch direction on the same context. */
    g_init(r, &g, 0, std_key, std_iv, 0);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, std_msg, sizeof(std_msg));
    g_get_tag(r, &g, 16);
    gcm_close(&g);
}

static void g_key_change(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char other[sizeof(std_key)];

    memcpy(other, std_key, sizeof(other));
    other[0] ^= 1;
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    g_init(r, &g, 0, other, std_iv, 1);
    g_seal_rest(r, &g);
    g_init(r, &g, 0, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

/* Copy a context mid-message and finish both, the original freed first. */
static void g_copy(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g, h;

    gcm_open(&g, lc, alg);
    gcm_open(&h, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, std_msg, 33);
    rec(r, EVP_CIPHER_CTX_copy(h.ctx, g.ctx));
    g_data(r, &g, std_msg + 33, sizeof(std_msg) - 33);
    g_final(r, &g);
    g_get_tag(r, &g, 16);
    gcm_close(&g);
    g_data(r, &h, std_msg + 33, sizeof(std_msg) - 33);
    g_final(r, &h);
    g_get_tag(r, &h, 16);
    /* Reset, then use the copy's context for a new message. */
    rec(r, EVP_CIPHER_CTX_reset(h.ctx));
    g_init(r, &h, 1, std_key, std_iv + 12, 1);
    g_seal_rest(r, &h);
    gcm_close(&h);

    /* Freed mid-message: must not leak into the next user of the key. */
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    g_aad(r, &g, std_aad, 7);
    gcm_close(&g);
}

/* The low-level EVP_Cipher() interface. */
static void g_evp_cipher(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char out[sizeof(std_msg)];
    int n;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, std_key, std_iv, 1);
    rec(r, EVP_Cipher(g.ctx, NULL, std_aad, sizeof(std_aad)));
    n = rec(r, EVP_Cipher(g.ctx, out, std_msg, sizeof(std_msg)));
    if (n > 0)
        rec_out(r, out, (size_t)n);
    rec(r, EVP_Cipher(g.ctx, NULL, NULL, 0));
    g_get_tag(r, &g, 16);
    gcm_close(&g);
}

/* The legacy "tag length only" call: SET_TAG with a NULL pointer. */
static void g_set_tag_null(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;
    unsigned char ct[sizeof(std_msg)], tag[16];

    gcm_reference(alg, ct, tag);
    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, NULL, 0);
    g_set_tag(r, &g, 16, NULL);
    g_init(r, &g, 0, std_key, std_iv, 0);
    g_set_tag(r, &g, 16, NULL);
    g_set_tag(r, &g, 16, tag);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, ct, sizeof(ct));
    g_final(r, &g);
    gcm_close(&g);
}

/* IV given, then a different IV length, then the key. */
static void g_iv_newlen_key(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, std_iv, 1);
    rec(r, EVP_CIPHER_CTX_ctrl(g.ctx, EVP_CTRL_AEAD_SET_IVLEN, 16, NULL));
    rec(r, EVP_CIPHER_CTX_get_iv_length(g.ctx));
    g_init(r, &g, 0, std_key, NULL, 1);
    g_seal_rest(r, &g);
    g_init(r, &g, 0, NULL, std_iv, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

/* Copy a context that has an IV and a direction but no key yet. */
static void g_copy_before_key(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    GCM g, h;

    gcm_open(&g, lc, alg);
    gcm_open(&h, lc, alg);
    g_init(r, &g, 1, NULL, std_iv, 1);
    rec(r, EVP_CIPHER_CTX_ctrl(g.ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL));
    rec(r, EVP_CIPHER_CTX_copy(h.ctx, g.ctx));
    g_init(r, &g, 0, std_key, NULL, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
    g_init(r, &h, 0, std_key, NULL, 1);
    g_seal_rest(r, &h);
    gcm_close(&h);
}

/*
 * Encrypt direction chosen before the key, then a tag: refused, because the
 * context encrypts.  keycache must have replayed the direction onto the
 * context it builds for the tag (a fresh context would decrypt).
 */
static void g_enc_then_tag(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    static const unsigned char tag[16] = { 1, 2, 3 };
    GCM g;

    gcm_open(&g, lc, alg);
    g_init(r, &g, 1, NULL, NULL, 1);
    g_set_tag(r, &g, sizeof(tag), tag);
    g_init(r, &g, 0, std_key, std_iv, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

/*
 * Tags set on a decrypt context before the key, a long one then a short
 * one, then an encrypt init with the key: the default keeps one tag buffer
 * that the short tag overwrites only in part, and an encrypting context
 * hands it out before final.  Once with the record replayed at the key,
 * once with a call before the key that needs a real context.
 */
static void g_tag_image(OSSL_LIB_CTX *lc, const char *alg, RECORD *r)
{
    unsigned char tag[16], iv[16];
    GCM g;
    int early;

    for (early = 0; early <= 1; early++) {
        gcm_open(&g, lc, alg);
        g_init(r, &g, 1, NULL, NULL, 0);
        memset(tag, 0xee, sizeof(tag));
        g_set_tag(r, &g, 16, tag);
        memset(tag, 0x11, sizeof(tag));
        g_set_tag(r, &g, 4, tag);
        memset(tag, 0x22, sizeof(tag));
        g_set_tag(r, &g, 8, tag);
        rec(r, EVP_CIPHER_CTX_get_tag_length(g.ctx));
        if (early)
            rec(r, EVP_CIPHER_CTX_get_updated_iv(g.ctx, iv, sizeof(iv)));
        g_init(r, &g, 0, std_key, std_iv, 1);
        g_get_tag(r, &g, 16);
        g_get_tag(r, &g, 8);
        g_seal_rest(r, &g);
        gcm_close(&g);
    }
}

static const ROW gcm_rows[] = {
    { "NULL key", g_null_key },
    { "init without key", g_no_key },
    { "IV first, key later", g_iv_then_key },
    { "wrong key length", g_key_length },
    { "IV length 0", g_ivlen_0 },
    { "IV length 1", g_ivlen_1 },
    { "IV length 129", g_ivlen_129 },
    { "IV length 1024", g_ivlen_1024 },
    { "decrypt tag length 0", g_taglen_0 },
    { "decrypt tag length 3", g_taglen_3 },
    { "decrypt tag length 17", g_taglen_17 },
    { "tag set before key", g_tag_then_key },
    { "set tag on encrypt", g_set_tag_encrypt },
    { "wrong tag", g_wrong_tag },
    { "update after final", g_update_after_final },
    { "final twice", g_final_twice },
    { "encrypt without IV", g_no_iv_encrypt },
    { "decrypt without IV", g_no_iv_decrypt },
    { "get tag before final", g_tag_before_final },
    { "get tag length 0/17", g_tag_odd_len },
    { "unknown params", g_unknown_params },
    { "AAD after data", g_aad_after_data },
    { "re-init on one context", g_reinit },
    { "key change on one context", g_key_change },
    { "copy, reset, free mid-message", g_copy },
    { "EVP_Cipher()", g_evp_cipher },
    { "SET_TAG with NULL pointer", g_set_tag_null },
    { "IV, new IV length, then key", g_iv_newlen_key },
    { "copy before key", g_copy_before_key },
    { "encrypt direction, tag, then key", g_enc_then_tag },
    { "long tag, shorter tags, then encrypt", g_tag_image },
};

/* ---- every row of the family registry ----------------------------------- */

/*
 * The same abuse for every row of KC_REGISTRY (kc_family), whatever the
 * family: a table for the MAC rows and one for the cipher rows, each run
 * with |alg| the row's id.  The HMAC and AES-GCM tables above go further
 * into what only those take (digest flags, TLS modes, EVP_Cipher() ...).
 */
static unsigned char fam_key[KCT_FAM_MAXKEY];
static unsigned char fam_key2[KCT_FAM_MAXKEY];

static const KCT_FAM *fam_of(const char *id)
{
    const KCT_FAM *f = kct_fam_find(id);

    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    return f;
}

/* init with the row's parameters (its sub value, GMAC's IV) */
static int fm_init(RECORD *r, EVP_MAC_CTX *c, const KCT_FAM *f,
                   const unsigned char *key, size_t keylen)
{
    OSSL_PARAM p[3];

    return rec(r, EVP_MAC_init(c, key, keylen,
                               kct_fam_mac_params(f, p, std_iv)));
}

static void fm_final(RECORD *r, EVP_MAC_CTX *c, size_t outsize)
{
    unsigned char out[128];
    size_t outl = 0;

    if (rec(r, EVP_MAC_final(c, out, &outl, outsize)))
        rec_out(r, out, outl);
}

static void fm_finish(RECORD *r, EVP_MAC_CTX *c)
{
    rec(r, EVP_MAC_update(c, std_msg, sizeof(std_msg)));
    fm_final(r, c, 128);
}

static void fam_mac_good(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_MAC_CTX *c = fm_new(lc, f);

    fm_init(r, c, f, fam_key, f->keylen);
    fm_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void fm_null_key(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_MAC_CTX *c = fm_new(lc, f);

    fm_init(r, c, f, NULL, 0);
    fm_finish(r, c);
    /* then a key: the context recovers */
    fm_init(r, c, f, fam_key, f->keylen);
    fm_finish(r, c);
    EVP_MAC_CTX_free(c);
}

static void fm_key_lengths(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const size_t lens[] = { 0, 1, 3, 4, 7, 15, 16, 17, 24, 31, 33,
                                   48, 63, 64 };
    const KCT_FAM *f = fam_of(id);
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        EVP_MAC_CTX *c = fm_new(lc, f);

        fm_init(r, c, f, fam_key, lens[i]);
        fm_finish(r, c);
        EVP_MAC_CTX_free(c);
    }
}

/* no parameters at all: no digest or cipher, no GMAC IV */
static void fm_no_params(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_MAC_CTX *c = fm_new(lc, f);

    /* GMAC without an IV draws one at random */
    r->random_bytes = kct_fam_ivlen(f) != 0;
    rec(r, EVP_MAC_init(c, fam_key, f->keylen, NULL));
    fm_finish(r, c);
    EVP_MAC_CTX_free(c);
}

/* the sub parameter naming nothing, or the wrong kind of thing */
static void fm_bad_sub(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const char *const subs[] = { "no-such-alg", "", "SHAKE256",
                                        "AES-128-XTS" };
    const KCT_FAM *f = fam_of(id);
    size_t i;

    for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        EVP_MAC_CTX *c = fm_new(lc, f);
        KCT_FAM g = *f;
        OSSL_PARAM p[3];

        g.sub = f->sub != NULL ? f->sub : OSSL_MAC_PARAM_DIGEST;
        g.sub_value = subs[i];
        rec(r, EVP_MAC_init(c, fam_key, f->keylen,
                            kct_fam_mac_params(&g, p, std_iv)));
        fm_finish(r, c);
        EVP_MAC_CTX_free(c);
    }
}

/* an IV of odd lengths: GMAC's own parameter, unknown to the others */
static void fm_iv_lengths(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const size_t lens[] = { 0, 1, 12, 16, 17, 128 };
    const KCT_FAM *f = fam_of(id);
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        EVP_MAC_CTX *c = fm_new(lc, f);
        OSSL_PARAM p[3];
        int n = 0;

        if (f->sub != NULL)
            p[n++] = OSSL_PARAM_construct_utf8_string(f->sub,
                                                      (char *)f->sub_value, 0);
        p[n++] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                   std_iv, lens[i]);
        p[n] = OSSL_PARAM_construct_end();
        rec(r, EVP_MAC_init(c, fam_key, f->keylen, p));
        fm_finish(r, c);
        EVP_MAC_CTX_free(c);
    }
}

static void fm_after_final(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_MAC_CTX *c = fm_new(lc, f);

    fm_init(r, c, f, fam_key, f->keylen);
    fm_finish(r, c);
    /* update after final, final twice, then a keyless re-init */
    fm_finish(r, c);
    fm_final(r, c, 128);
    rec(r, EVP_MAC_init(c, NULL, 0, NULL));
    fm_finish(r, c);
    EVP_MAC_CTX_free(c);
}

/* data and a final before any key: with nothing set, and with the rest */
static void fm_no_key(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_MAC_CTX *c = fm_new(lc, f);
    OSSL_PARAM p[3];

    fm_final(r, c, 128);
    fm_finish(r, c);
    EVP_MAC_CTX_free(c);
    c = fm_new(lc, f);
    rec(r, EVP_MAC_CTX_set_params(c, kct_fam_mac_params(f, p, std_iv)));
    fm_final(r, c, 128);
    fm_finish(r, c);
    EVP_MAC_CTX_free(c);
}

/* the parameter tables, of the algorithm and of a context before and after
 * its key */
static void fm_tables(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_MAC *mac = EVP_MAC_fetch(lc, f->name, NULL);
    EVP_MAC_CTX *c = fm_new(lc, f);

    rec_table(r, EVP_MAC_gettable_params(mac));
    rec_table(r, EVP_MAC_gettable_ctx_params(mac));
    rec_table(r, EVP_MAC_settable_ctx_params(mac));
    rec_table(r, EVP_MAC_CTX_gettable_params(c));
    rec_table(r, EVP_MAC_CTX_settable_params(c));
    fm_init(r, c, f, fam_key, f->keylen);
    rec_table(r, EVP_MAC_CTX_gettable_params(c));
    rec_table(r, EVP_MAC_CTX_settable_params(c));
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
}

/* final into too small a buffer, and empty or NULL updates */
static void fm_odd_sizes(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const size_t sizes[] = { 0, 1, 15, 16, 31, 32, 63 };
    const KCT_FAM *f = fam_of(id);
    size_t i;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        EVP_MAC_CTX *c = fm_new(lc, f);

        fm_init(r, c, f, fam_key, f->keylen);
        rec(r, EVP_MAC_update(c, NULL, 0));
        rec(r, EVP_MAC_update(c, std_msg, 0));
        rec(r, EVP_MAC_update(c, std_msg, 1));
        fm_final(r, c, sizes[i]);
        EVP_MAC_CTX_free(c);
    }
}

/* one context: keys changed, re-init without key, dup mid-message */
static void fm_rekey_dup(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_MAC_CTX *c = fm_new(lc, f), *d;

    fm_init(r, c, f, fam_key, f->keylen);
    rec(r, EVP_MAC_update(c, std_msg, 10));
    fm_init(r, c, f, fam_key2, f->keylen);
    fm_finish(r, c);
    rec(r, EVP_MAC_init(c, NULL, 0, NULL));
    rec(r, EVP_MAC_update(c, std_msg, 33));
    d = EVP_MAC_CTX_dup(c);
    rec(r, d != NULL);
    fm_finish(r, c);
    if (d != NULL) {
        fm_finish(r, d);
        fm_init(r, d, f, fam_key, f->keylen);
        fm_finish(r, d);
    }
    EVP_MAC_CTX_free(d);
    EVP_MAC_CTX_free(c);
}

static const ROW fam_mac_rows[] = {
    { "NULL key, then a key", fm_null_key },
    { "key lengths 0..64", fm_key_lengths },
    { "no parameters", fm_no_params },
    { "digest/cipher naming nothing or the wrong kind", fm_bad_sub },
    { "IV of odd lengths", fm_iv_lengths },
    { "update and final after final", fm_after_final },
    { "empty updates, small final buffers", fm_odd_sizes },
    { "re-key, keyless re-init, dup mid-message", fm_rekey_dup },
    { "data and final before any key", fm_no_key },
    { "parameter tables", fm_tables },
};

/* The row's cipher through the GCM helpers above, which are EVP's own. */
static const unsigned char *fc_iv(const KCT_FAM *f)
{
    return kct_fam_ivlen(f) != 0 ? std_iv : NULL;
}

/*
 * OpenSSL's own AES-SIV dereferences NULL on data, a final or a copy
 * before an init with a key has worked (the fuzzer steers round it the
 * same way): may the row go on after a key init that returned |ret|?
 */
static int fc_may_go_on(const KCT_FAM *f, int keyed_ret)
{
    return kct_fam_mode(f) != KCT_MODE_SIV || keyed_ret == 1;
}

static void fam_cipher_good(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    GCM g;

    gcm_open(&g, lc, f->name);
    g_init(r, &g, 1, fam_key, fc_iv(f), 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

/* What the default seals with fam_key: ciphertext and 16-byte tag. */
static void fc_sealed(const KCT_FAM *f, unsigned char ct[sizeof(std_msg)],
                      unsigned char tag[16])
{
    RECORD s;

    memset(&s, 0, sizeof(s));
    fam_cipher_good(kct_default(), f->id, &s);
    CU_ASSERT_FATAL(s.used == sizeof(std_msg) + 16);
    memcpy(ct, s.out, sizeof(std_msg));
    memcpy(tag, s.out + sizeof(std_msg), 16);
}

/* Open ct/tag on a fresh context, the tag set first as SIV needs. */
static void fc_open(RECORD *r, OSSL_LIB_CTX *lc, const KCT_FAM *f,
                    const unsigned char *key, const unsigned char *iv,
                    const unsigned char *ct, const unsigned char *tag,
                    int taglen)
{
    GCM g;

    gcm_open(&g, lc, f->name);
    g_init(r, &g, 1, key, iv, 0);
    if (tag != NULL)
        g_set_tag(r, &g, taglen, tag);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, ct, sizeof(std_msg));
    g_final(r, &g);
    gcm_close(&g);
}

static void fc_null_key(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    GCM g;

    gcm_open(&g, lc, f->name);
    g_init(r, &g, 1, NULL, fc_iv(f), 1);
    if (kct_fam_mode(f) != KCT_MODE_SIV)       /* see fc_may_go_on() */
        g_seal_rest(r, &g);
    /* the key later, on the same context */
    g_init(r, &g, 0, fam_key, NULL, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
}

static void fc_no_iv(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    unsigned char ct[sizeof(std_msg)], tag[16];
    GCM g;

    /* an IV the default may make up: return values and errors only */
    r->random_bytes = kct_fam_ivlen(f) != 0;
    gcm_open(&g, lc, f->name);
    g_init(r, &g, 1, fam_key, NULL, 1);
    g_seal_rest(r, &g);
    gcm_close(&g);
    fc_sealed(f, ct, tag);
    fc_open(r, lc, f, fam_key, NULL, ct, tag, 16);
}

static void fc_iv_lengths(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const size_t lens[] = { 0, 1, 7, 8, 15, 16, 17, 64, 1024 };
    const KCT_FAM *f = fam_of(id);
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        OSSL_PARAM p[2];
        size_t len = lens[i];
        GCM g;

        p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN,
                                           &len);
        p[1] = OSSL_PARAM_construct_end();
        gcm_open(&g, lc, f->name);
        g_init(r, &g, 1, NULL, NULL, 1);
        rec(r, EVP_CIPHER_CTX_set_params(g.ctx, p));
        if (fc_may_go_on(f, g_init(r, &g, 0, fam_key, std_iv, 1)))
            g_seal_rest(r, &g);
        gcm_close(&g);
    }
}

static void fc_tag_lengths(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const int lens[] = { 0, 1, 3, 4, 8, 12, 15, 17, 32 };
    const KCT_FAM *f = fam_of(id);
    unsigned char ct[sizeof(std_msg)], tag[32];
    size_t i;

    fc_sealed(f, ct, tag);
    memset(tag + 16, 0, 16);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        GCM g;

        /* decrypt with a tag of that length */
        fc_open(r, lc, f, fam_key, fc_iv(f), ct, tag, lens[i]);
        /* encrypt, then get a tag of that length */
        gcm_open(&g, lc, f->name);
        g_init(r, &g, 1, fam_key, fc_iv(f), 1);
        g_aad(r, &g, std_aad, sizeof(std_aad));
        g_data(r, &g, std_msg, sizeof(std_msg));
        g_final(r, &g);
        if (lens[i] <= 16)
            g_get_tag(r, &g, lens[i]);
        gcm_close(&g);
    }
}

static void fc_wrong_tag(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    unsigned char ct[sizeof(std_msg)], tag[16];

    fc_sealed(f, ct, tag);
    tag[15] ^= 1;
    fc_open(r, lc, f, fam_key, fc_iv(f), ct, tag, 16);
    tag[15] ^= 1;
    ct[0] ^= 0x80;
    fc_open(r, lc, f, fam_key, fc_iv(f), ct, tag, 16);
    ct[0] ^= 0x80;
    /* another key, and no tag at all */
    fc_open(r, lc, f, fam_key2, fc_iv(f), ct, tag, 16);
    fc_open(r, lc, f, fam_key, fc_iv(f), ct, NULL, 16);
    /* and the right one still opens */
    fc_open(r, lc, f, fam_key, fc_iv(f), ct, tag, 16);
}

static void fc_after_final(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    GCM g;

    gcm_open(&g, lc, f->name);
    g_init(r, &g, 1, fam_key, fc_iv(f), 1);
    g_get_tag(r, &g, 16);               /* before final */
    g_seal_rest(r, &g);
    /* update and final after final, and the tag again */
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, std_msg, sizeof(std_msg));
    g_final(r, &g);
    g_get_tag(r, &g, 16);
    /* set tag on an encryption */
    g_set_tag(r, &g, 16, std_iv);
    gcm_close(&g);
}

static void fc_odd_sizes(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const int lens[] = { 0, 1, 15, 16, 17, 33 };
    const KCT_FAM *f = fam_of(id);
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        GCM g;

        gcm_open(&g, lc, f->name);
        g_init(r, &g, 1, fam_key, fc_iv(f), 1);
        g_aad(r, &g, NULL, 0);
        g_aad(r, &g, std_aad, lens[i] < 20 ? lens[i] : 20);
        g_data(r, &g, NULL, 0);
        g_data(r, &g, std_msg, lens[i]);
        g_data(r, &g, std_msg + lens[i], lens[i]);
        g_final(r, &g);
        g_get_tag(r, &g, 16);
        gcm_close(&g);
    }
}

static void fc_key_length(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    static const size_t lens[] = { 0, 1, 16, 24, 32, 48, 64, 65 };
    const KCT_FAM *f = fam_of(id);
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        OSSL_PARAM p[2];
        size_t len = lens[i];
        GCM g;

        p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN, &len);
        p[1] = OSSL_PARAM_construct_end();
        gcm_open(&g, lc, f->name);
        g_init(r, &g, 1, NULL, NULL, 1);
        rec(r, EVP_CIPHER_CTX_set_params(g.ctx, p));
        if (fc_may_go_on(f, g_init(r, &g, 0, fam_key, fc_iv(f), 1)))
            g_seal_rest(r, &g);
        gcm_close(&g);
    }
}

/* one context: re-init, key changes, copy mid-message */
static void fc_rekey_copy(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    EVP_CIPHER_CTX *d = EVP_CIPHER_CTX_new();
    GCM g, h;

    gcm_open(&g, lc, f->name);
    g_init(r, &g, 1, fam_key, fc_iv(f), 1);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_init(r, &g, 0, fam_key2, fc_iv(f), 1);
    g_seal_rest(r, &g);
    g_init(r, &g, 0, NULL, fc_iv(f), 1);
    g_seal_rest(r, &g);
    g_init(r, &g, 0, fam_key, NULL, 1);
    g_aad(r, &g, std_aad, sizeof(std_aad));
    g_data(r, &g, std_msg, 40);
    rec(r, d != NULL && EVP_CIPHER_CTX_copy(d, g.ctx));
    g_data(r, &g, std_msg + 40, 60);
    g_final(r, &g);
    g_get_tag(r, &g, 16);
    h.ctx = d;
    g_data(r, &h, std_msg + 40, 60);
    g_final(r, &h);
    g_get_tag(r, &h, 16);
    EVP_CIPHER_CTX_free(d);
    gcm_close(&g);
}

/* the parameter tables, of the cipher and of a context before and after
 * its key */
static void fc_tables(OSSL_LIB_CTX *lc, const char *id, RECORD *r)
{
    const KCT_FAM *f = fam_of(id);
    GCM g;

    gcm_open(&g, lc, f->name);
    rec_table(r, EVP_CIPHER_gettable_params(g.cipher));
    rec_table(r, EVP_CIPHER_gettable_ctx_params(g.cipher));
    rec_table(r, EVP_CIPHER_settable_ctx_params(g.cipher));
    rec(r, EVP_EncryptInit_ex2(g.ctx, g.cipher, NULL, NULL, NULL));
    rec_table(r, EVP_CIPHER_CTX_gettable_params(g.ctx));
    rec_table(r, EVP_CIPHER_CTX_settable_params(g.ctx));
    g_init(r, &g, 1, fam_key, fc_iv(f), 1);
    rec_table(r, EVP_CIPHER_CTX_gettable_params(g.ctx));
    rec_table(r, EVP_CIPHER_CTX_settable_params(g.ctx));
    gcm_close(&g);
}

static const ROW fam_cipher_rows[] = {
    { "NULL key, then a key", fc_null_key },
    { "no IV", fc_no_iv },
    { "IV lengths 0..1024", fc_iv_lengths },
    { "tag lengths 0..32", fc_tag_lengths },
    { "wrong tag, ciphertext, key; no tag", fc_wrong_tag },
    { "after final; tag before final; set tag on encrypt", fc_after_final },
    { "NULL and odd-length updates", fc_odd_sizes },
    { "key lengths 0..65", fc_key_length },
    { "re-key, keyless re-init, copy mid-message", fc_rekey_copy },
    { "parameter tables", fc_tables },
};

/* ---- drivers ------------------------------------------------------------ */

static void hmac_good(OSSL_LIB_CTX *libctx, const char *md, RECORD *r)
{
    mac_good(libctx, md, std_key, sizeof(std_key), r);
}

typedef void (*GOOD_FN)(OSSL_LIB_CTX *libctx, const char *alg, RECORD *r);

static void good_matches(const char *row, const char *alg, GOOD_FN good)
{
    RECORD d, k;

    memset(&d, 0, sizeof(d));
    memset(&k, 0, sizeof(k));
    good(kct_default(), alg, &d);
    good(kct_keycache(), alg, &k);
    CU_ASSERT(d.nsteps > 0 && d.ret[0] == 1);
    compare(row, alg, "known-good afterwards", &d, &k);
}

static void run_table(const ROW *rows, size_t n, const char *alg,
                      GOOD_FN good)
{
    static RECORD d, d2, k1, k2, warm;
    size_t i;

    /*
     * The second runs meet library contexts that did it all once already,
     * default's as well as keycache's: OpenSSL 4's default leaves the
     * error of a fetch that succeeds only the first time its query is
     * fetched in a library context (later ones come from the method cache).
     */
    for (i = 0; i < n; i++) {
        run_row(&rows[i], kct_default(), alg, &d);
        run_row(&rows[i], kct_keycache(), alg, &k1);
        memset(&warm, 0, sizeof(warm));
        good(kct_default(), alg, &warm);
        run_row(&rows[i], kct_default(), alg, &d2);
        memset(&warm, 0, sizeof(warm));
        good(kct_keycache(), alg, &warm);
        run_row(&rows[i], kct_keycache(), alg, &k2);
        compare(rows[i].name, alg, "keycache", &d, &k1);
        compare(rows[i].name, alg, "keycache, warm cache", &d2, &k2);
        good_matches(rows[i].name, alg, good);
    }
    ERR_clear_error();
}

/* The tables only mean something if keycache serves these algorithms. */
static void test_keycache_in_use(void)
{
    static const char *const ciphers[] = { "AES-128-GCM", "AES-256-GCM" };
    EVP_MAC *mac = EVP_MAC_fetch(kct_keycache(), "HMAC", NULL);
    uint64_t hits;
    RECORD r;
    size_t i;

    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_MAC_get0_provider(mac)),
                           KEYCACHE_PROVIDER_NAME);
    EVP_MAC_free(mac);
    for (i = 0; i < 2; i++) {
        EVP_CIPHER *c = EVP_CIPHER_fetch(kct_keycache(), ciphers[i], NULL);

        CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_CIPHER_get0_provider(c)),
                               KEYCACHE_PROVIDER_NAME);
        EVP_CIPHER_free(c);
    }

    /* The same key twice: the second keyed init is a cache hit. */
    memset(&r, 0, sizeof(r));
    hmac_good(kct_keycache(), "SHA256", &r);
    hits = kct_counter(KEYCACHE_PARAM_HITS);
    hmac_good(kct_keycache(), "SHA256", &r);
    CU_ASSERT(hits != UINT64_MAX && kct_counter(KEYCACHE_PARAM_HITS) > hits);
    memset(&r, 0, sizeof(r));
    gcm_good(kct_keycache(), "AES-256-GCM", &r);
    hits = kct_counter(KEYCACHE_PARAM_HITS);
    gcm_good(kct_keycache(), "AES-256-GCM", &r);
    CU_ASSERT(kct_counter(KEYCACHE_PARAM_HITS) > hits);
}

static void test_hmac_sha256(void)
{
    run_table(hmac_rows, sizeof(hmac_rows) / sizeof(hmac_rows[0]), "SHA256",
              hmac_good);
}

static void test_hmac_sha512(void)
{
    run_table(hmac_rows, sizeof(hmac_rows) / sizeof(hmac_rows[0]), "SHA512",
              hmac_good);
}

static void test_gcm_128(void)
{
    run_table(gcm_rows, sizeof(gcm_rows) / sizeof(gcm_rows[0]),
              "AES-128-GCM", gcm_good);
}

static void test_gcm_256(void)
{
    run_table(gcm_rows, sizeof(gcm_rows) / sizeof(gcm_rows[0]),
              "AES-256-GCM", gcm_good);
}

/* Every row of the family registry through its kind's table. */
static void test_registry_rows(void)
{
    size_t i;

    for (i = 0; i < kct_nfams; i++) {
        const KCT_FAM *f = &kct_fams[i];

        if (f->kind == KCT_CIPHER)
            run_table(fam_cipher_rows,
                      sizeof(fam_cipher_rows) / sizeof(fam_cipher_rows[0]),
                      f->id, fam_cipher_good);
        else
            run_table(fam_mac_rows,
                      sizeof(fam_mac_rows) / sizeof(fam_mac_rows[0]),
                      f->id, fam_mac_good);
    }
}

/* The registry's rows mean something only if keycache serves them. */
static void test_registry_in_use(void)
{
    size_t i;

    for (i = 0; i < kct_nfams; i++) {
        const KCT_FAM *f = &kct_fams[i];
        GOOD_FN good = f->kind == KCT_CIPHER ? fam_cipher_good : fam_mac_good;
        const OSSL_PROVIDER *prov;
        uint64_t hits;
        RECORD r;

        if (f->kind == KCT_CIPHER) {
            EVP_CIPHER *c = EVP_CIPHER_fetch(kct_keycache(), f->name, NULL);

            prov = c != NULL ? EVP_CIPHER_get0_provider(c) : NULL;
            EVP_CIPHER_free(c);
        } else {
            EVP_MAC *m = EVP_MAC_fetch(kct_keycache(), f->name, NULL);

            prov = m != NULL ? EVP_MAC_get0_provider(m) : NULL;
            EVP_MAC_free(m);
        }
        if (prov == NULL
            || strcmp(kct_provider_name(prov), KEYCACHE_PROVIDER_NAME) != 0)
            fprintf(stderr, "\n  %s (%s) not served by keycache\n", f->id,
                    f->name);
        CU_ASSERT_TRUE(prov != NULL && strcmp(kct_provider_name(prov),
                                              KEYCACHE_PROVIDER_NAME) == 0);
        /* the same key twice: the second keyed init is a cache hit */
        memset(&r, 0, sizeof(r));
        good(kct_keycache(), f->id, &r);
        hits = kct_counter(KEYCACHE_PARAM_HITS);
        memset(&r, 0, sizeof(r));
        good(kct_keycache(), f->id, &r);
        if (kct_counter(KEYCACHE_PARAM_HITS) <= hits)
            fprintf(stderr, "\n  %s: no hit on the second use\n", f->id);
        CU_ASSERT(kct_counter(KEYCACHE_PARAM_HITS) > hits);
    }
}

/* The known-good HMAC must also match RFC 4231 test case 2, not just default. */
static void test_rfc4231_after_abuse(void)
{
    static const char want[] =
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    static const char data[] = "what do ya want for nothing?";
    unsigned char mac[EVP_MAX_MD_SIZE], *exp;
    size_t maclen = 0, explen;

    exp = kct_unhex(want, &explen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(exp);
    kct_use(kct_keycache());
    CU_ASSERT_PTR_NOT_NULL(EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL,
                                     "Jefe", 4, (const unsigned char *)data,
                                     strlen(data), mac, sizeof(mac), &maclen));
    kct_use(NULL);
    CU_ASSERT_EQUAL(maclen, explen);
    CU_ASSERT(maclen == explen && memcmp(mac, exp, explen) == 0);
    free(exp);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("bad_input", NULL, NULL);

    kct_fill(std_key, sizeof(std_key), 1);
    kct_fill(std_iv, sizeof(std_iv), 2);
    kct_fill(std_msg, sizeof(std_msg), 3);
    kct_fill(std_aad, sizeof(std_aad), 4);
    kct_fill(fam_key, sizeof(fam_key), 5);
    kct_fill(fam_key2, sizeof(fam_key2), 6);
    CU_add_test(s, "keycache serves HMAC and AES-GCM", test_keycache_in_use);
    CU_add_test(s, "HMAC-SHA256 bad input table", test_hmac_sha256);
    CU_add_test(s, "HMAC-SHA512 bad input table", test_hmac_sha512);
    CU_add_test(s, "AES-128-GCM bad input table", test_gcm_128);
    CU_add_test(s, "AES-256-GCM bad input table", test_gcm_256);
    CU_add_test(s, "RFC 4231 TC2 after abuse", test_rfc4231_after_abuse);
    CU_add_test(s, "keycache serves every registry row",
                test_registry_in_use);
    CU_add_test(s, "every registry row: its kind's bad input table",
                test_registry_rows);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
