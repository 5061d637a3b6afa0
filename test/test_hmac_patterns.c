/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HMAC call-pattern differential tests.
 *
 * Every pattern drives the EVP_MAC API the way some real application does
 * and writes everything observable into a text record: return values, MAC
 * sizes and bytes, and the errors left on the queue after each call, in
 * full (kct_err_next: code, raising function, file, line and data).
 * A pattern is run once against the default provider and three times
 * against keycache (with unrelated keys in between, so the second and third
 * runs are served from the cache); all records must be identical.  MAC bytes
 * are also checked against an HMAC built by hand from the default provider's
 * digests (and RFC 4231), never against anything keycache produced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "keycache.h"

/* Short names for the shared transcript recorder (kc_test.h) */
typedef KCT_REC REC;
typedef kct_rec_fn pattern_fn;
#define rec_printf kct_rec_printf
#define rec_errs kct_rec_errs
#define rec_hex kct_rec_hex
#define rec_free kct_rec_free

static void rec_rc(REC *r, const char *what, int rc)
{
    rec_printf(r, "%s rc=%d", what, rc);
    rec_errs(r);
}

/* Independent reference: HMAC built from the default provider's digests */

static int ref_hmac_in(OSSL_LIB_CTX *libctx, const char *mdname,
                       const unsigned char *key, size_t keylen,
                       const unsigned char *msg, size_t msglen,
                       unsigned char *out, size_t *outlen)
{
    EVP_MD *md = EVP_MD_fetch(libctx, mdname, NULL);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char k0[256] = { 0 }, pad[256], inner[EVP_MAX_MD_SIZE];
    unsigned int n = 0, innerlen = 0;
    size_t bs, i;
    int ok = 0;

    if (md == NULL || c == NULL || EVP_MD_get_block_size(md) < 0
        || (size_t)EVP_MD_get_block_size(md) > sizeof(k0))
        goto end;
    bs = (size_t)EVP_MD_get_block_size(md);
    /* RFC 2104: keys longer than the block are hashed first */
    if (keylen > bs) {
        if (!EVP_Digest(key, keylen, k0, &n, md, NULL))
            goto end;
    } else if (keylen > 0) {
        memcpy(k0, key, keylen);
    }
    for (i = 0; i < bs; i++)
        pad[i] = k0[i] ^ 0x36;
    if (!EVP_DigestInit_ex(c, md, NULL)
        || !EVP_DigestUpdate(c, pad, bs)
        || !EVP_DigestUpdate(c, msg, msglen)
        || !EVP_DigestFinal_ex(c, inner, &innerlen))
        goto end;
    for (i = 0; i < bs; i++)
        pad[i] = k0[i] ^ 0x5c;
    if (!EVP_DigestInit_ex(c, md, NULL)
        || !EVP_DigestUpdate(c, pad, bs)
        || !EVP_DigestUpdate(c, inner, innerlen)
        || !EVP_DigestFinal_ex(c, out, &n))
        goto end;
    *outlen = n;
    ok = 1;
 end:
    EVP_MD_CTX_free(c);
    EVP_MD_free(md);
    return ok;
}

static int ref_hmac(const char *mdname, const unsigned char *key, size_t keylen,
                    const unsigned char *msg, size_t msglen,
                    unsigned char *out, size_t *outlen)
{
    return ref_hmac_in(kct_default(), mdname, key, keylen, msg, msglen, out,
                       outlen);
}

/*
 * Check a MAC against the reference.  The verdict also goes into the record
 * so that a keycache run that disagrees shows up in the diff.
 */
static int check_ref_at(REC *r, const char *mdname,
                        const unsigned char *key, size_t keylen,
                        const unsigned char *msg, size_t msglen,
                        const unsigned char *mac, size_t maclen, int line)
{
    unsigned char ref[EVP_MAX_MD_SIZE];
    size_t reflen = 0;
    int ok = ref_hmac(mdname, key, keylen, msg, msglen, ref, &reflen)
             && reflen == maclen && memcmp(ref, mac, maclen) == 0;

    rec_printf(r, "ref %s\n", ok ? "ok" : "MISMATCH");
    CU_ASSERT(ok);
    if (!ok)
        fprintf(stderr, "\nline %d: %s MAC (keylen %zu, msglen %zu) differs "
                "from reference\n", line, mdname, keylen, msglen);
    ERR_clear_error();
    return ok;
}

#define check_ref(r, md, k, kl, m, ml, mac, macl) \
    check_ref_at(r, md, k, kl, m, ml, mac, macl, __LINE__)

/* Small helpers used by the patterns */

static OSSL_PARAM p_digest(const char *name)
{
    return OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)name, 0);
}

static OSSL_PARAM p_key(const unsigned char *key, size_t keylen)
{
    return OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
                                             (void *)key, keylen);
}

static EVP_MAC *fetch_hmac(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "HMAC", NULL);

    rec_rc(r, "fetch", mac != NULL);
    return mac;
}

/* (kc_test.c's) */
#define new_ctx(mac, r) kct_mac_new(r, mac)
#define do_set kct_mac_set
#define do_init kct_mac_init
#define do_update kct_mac_update
#define do_final(r, ctx, out, outl) \
    kct_mac_final(r, ctx, out, outl, EVP_MAX_MD_SIZE)

/* init + update + final; returns 1 if a MAC came out */
static int do_mac(REC *r, EVP_MAC_CTX *ctx, const unsigned char *key,
                  size_t keylen, const OSSL_PARAM *params,
                  const unsigned char *msg, size_t msglen,
                  unsigned char *out, size_t *outl)
{
    int ok = do_init(r, ctx, key, keylen, params);

    ok = do_update(r, ctx, msg, msglen) && ok;
    return do_final(r, ctx, out, outl) && ok;
}

/* do_mac(), then the MAC checked against the reference if one came out */
static int mac_ref_at(REC *r, EVP_MAC_CTX *ctx, const char *md,
                      const unsigned char *key, size_t keylen,
                      const OSSL_PARAM *params, const unsigned char *msg,
                      size_t msglen, int line)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;

    return do_mac(r, ctx, key, keylen, params, msg, msglen, out, &outl)
           && check_ref_at(r, md, key, keylen, msg, msglen, out, outl, line);
}

#define mac_ref(r, ctx, md, k, kl, p, m, ml) \
    mac_ref_at(r, ctx, md, k, kl, p, m, ml, __LINE__)

/* Test data: distinct deterministic keys and messages */

#define NKEYS 6
static unsigned char keys[NKEYS][32];
static unsigned char msgs[4][300];
static const size_t msglens[4] = { 0, 3, 64, 300 };

static void init_data(void)
{
    int i;

    for (i = 0; i < NKEYS; i++)
        kct_fill(keys[i], sizeof(keys[i]), 100 + i);
    for (i = 0; i < 4; i++)
        kct_fill(msgs[i], sizeof(msgs[i]), 200 + i);
}

/* Running a pattern */

/* MAC with unrelated keys on keycache so the cache holds more than one key */
static void churn(void)
{
    unsigned char key[48], out[EVP_MAX_MD_SIZE];
    size_t outl;
    int i;

    for (i = 0; i < 8; i++) {
        kct_fill(key, sizeof(key), 9000 + i);
        EVP_Q_mac(kct_keycache(), "HMAC", NULL, i % 2 ? "SHA1" : "SHA256",
                  NULL, key, 16 + i * 4, msgs[1], msglens[1], out,
                  sizeof(out), &outl);
    }
    ERR_clear_error();
}

static int served_by_keycache(void)
{
    EVP_MAC *mac = EVP_MAC_fetch(kct_keycache(), "HMAC", NULL);
    int ok = mac != NULL
        && strcmp(kct_provider_name(EVP_MAC_get0_provider(mac)),
                  KEYCACHE_PROVIDER_NAME) == 0;

    EVP_MAC_free(mac);
    ERR_clear_error();
    return ok;
}

#define run_pattern(fn, hits) \
    kct_rec_pattern(#fn, fn, churn, 0, served_by_keycache, hits)

/* Patterns */

static const char jefe_msg[] = "what do ya want for nothing?";
static const char jefe_mac[] =
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";

/* One-shot EVP_Q_mac against the thread's default context */
static void pat_q_mac(OSSL_LIB_CTX *libctx, REC *r)
{
    unsigned char out[EVP_MAX_MD_SIZE], *res, *expect;
    size_t outl, explen;
    int i, k;

    expect = kct_unhex(jefe_mac, &explen);
    for (i = 0; i < 3; i++) {
        res = EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, "Jefe", 4,
                        (const unsigned char *)jefe_msg, strlen(jefe_msg),
                        out, sizeof(out), &outl);
        rec_printf(r, "q_mac jefe res=%s len=%zu mac=",
                   res == out ? "out" : "NULL", outl);
        if (res != NULL)
            rec_hex(r, out, outl);
        rec_errs(r);
        CU_ASSERT(res == out && outl == explen
                  && memcmp(out, expect, explen) == 0);
    }
    for (i = 0; i < 4 * NKEYS; i++) {
        k = i % NKEYS;
        res = EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, keys[k],
                        sizeof(keys[k]), msgs[i % 4], msglens[i % 4],
                        out, sizeof(out), &outl);
        rec_printf(r, "q_mac res=%s len=%zu mac=",
                   res == out ? "out" : "NULL", outl);
        if (res != NULL)
            rec_hex(r, out, outl);
        rec_errs(r);
        if (res != NULL)
            check_ref(r, "SHA256", keys[k], sizeof(keys[k]), msgs[i % 4],
                      msglens[i % 4], out, outl);
    }
    /* NULL out: EVP_Q_mac allocates the result */
    res = EVP_Q_mac(NULL, "HMAC", NULL, "SHA1", NULL, keys[0],
                    sizeof(keys[0]), msgs[2], msglens[2], NULL, 0, &outl);
    rec_printf(r, "q_mac alloc len=%zu mac=", outl);
    if (res != NULL)
        rec_hex(r, res, outl);
    rec_errs(r);
    if (res != NULL)
        check_ref(r, "SHA1", keys[0], sizeof(keys[0]), msgs[2], msglens[2],
                  res, outl);
    OPENSSL_free(res);
    /* Output buffer too small */
    res = EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, keys[1],
                    sizeof(keys[1]), msgs[1], msglens[1], out, 16, &outl);
    rec_printf(r, "q_mac small res=%s len=%zu", res == NULL ? "NULL" : "out",
               outl);
    rec_errs(r);
    OPENSSL_free(expect);
    (void)libctx;
}

/* A fresh EVP_MAC_CTX for every message, key given to EVP_MAC_init */
static void pat_ctx_per_msg(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    int i;

    for (i = 0; i < 24; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);
        int k = (i * 5) % NKEYS, m = i % 4;

        mac_ref(r, ctx, "SHA256", keys[k], sizeof(keys[k]), params, msgs[m],
                msglens[m]);
        EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
}

/*
 * Key passed as OSSL_MAC_PARAM_KEY to EVP_MAC_CTX_set_params, then
 * EVP_MAC_init(ctx, NULL, 0, NULL), as TLS session-ticket callbacks do.
 */
static void pat_key_in_params(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;
    int i;

    for (i = 0; i < 12; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);
        int k = i % 3, m = i % 4;
        const char *md = i % 2 ? "SHA256" : "SHA1";
        /* key listed before the digest, as in ssl/t1_lib.c */
        OSSL_PARAM params[3] = {
            p_key(keys[k], sizeof(keys[k])), p_digest(md), OSSL_PARAM_END
        };

        do_set(r, ctx, params);
        if (do_mac(r, ctx, NULL, 0, NULL, msgs[m], msglens[m], out, &outl))
            check_ref(r, md, keys[k], sizeof(keys[k]), msgs[m], msglens[m],
                      out, outl);
        /* a second message on the same context, re-initialised keyless */
        if (do_mac(r, ctx, NULL, 0, NULL, msgs[3], msglens[3], out, &outl))
            check_ref(r, md, keys[k], sizeof(keys[k]), msgs[3], msglens[3],
                      out, outl);
        EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
}

/* Re-init with a NULL key must keep MACing with the previous key */
static void pat_reinit_null_key(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    EVP_MAC_CTX *ctx = new_ctx(mac, r);
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;
    int i, k;

    for (i = 0; i < 8; i++) {
        k = i % 3;
        mac_ref(r, ctx, "SHA256", keys[k], sizeof(keys[k]), params, msgs[1],
                msglens[1]);
        /* another context with another key in between must not matter */
        {
            EVP_MAC_CTX *other = new_ctx(mac, r);

            do_mac(r, other, keys[k + 3], sizeof(keys[k + 3]), params,
                   msgs[0], msglens[0], out, &outl);
            EVP_MAC_CTX_free(other);
        }
        if (do_mac(r, ctx, NULL, 0, NULL, msgs[2], msglens[2], out, &outl))
            check_ref(r, "SHA256", keys[k], sizeof(keys[k]), msgs[2],
                      msglens[2], out, outl);
        /* abandoned half-way, then re-initialised keyless */
        do_update(r, ctx, msgs[3], 100);
        if (do_mac(r, ctx, NULL, 0, NULL, msgs[3], msglens[3], out, &outl))
            check_ref(r, "SHA256", keys[k], sizeof(keys[k]), msgs[3],
                      msglens[3], out, outl);
    }
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
}

/* Where and when the digest is given */
static void pat_digest_order(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    EVP_MAC_CTX *ctx;
    OSSL_PARAM sha1[2] = { p_digest("SHA1"), OSSL_PARAM_END };
    OSSL_PARAM sha256[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    OSSL_PARAM key2[2] = { p_key(keys[2], sizeof(keys[2])), OSSL_PARAM_END };
    OSSL_PARAM props[3] = {
        p_digest("SHA512"),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                         "provider=default", 0),
        OSSL_PARAM_END
    };
    OSSL_PARAM badprops[3] = {
        p_digest("SHA512"),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                         "provider=nosuchprovider", 0),
        OSSL_PARAM_END
    };
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;

    /* digest set first, key at init */
    ctx = new_ctx(mac, r);
    do_set(r, ctx, sha1);
    mac_ref(r, ctx, "SHA1", keys[0], sizeof(keys[0]), NULL, msgs[2],
            msglens[2]);
    EVP_MAC_CTX_free(ctx);

    /* digest only in the init params */
    ctx = new_ctx(mac, r);
    mac_ref(r, ctx, "SHA1", keys[0], sizeof(keys[0]), sha1, msgs[2],
            msglens[2]);
    EVP_MAC_CTX_free(ctx);

    /* digest set, then replaced in the init params: the latter wins */
    ctx = new_ctx(mac, r);
    do_set(r, ctx, sha1);
    mac_ref(r, ctx, "SHA256", keys[0], sizeof(keys[0]), sha256, msgs[2],
            msglens[2]);
    /* digest changed on a keyed context, keyless re-init */
    do_set(r, ctx, sha1);
    do_mac(r, ctx, NULL, 0, NULL, msgs[1], msglens[1], out, &outl);
    do_mac(r, ctx, keys[0], sizeof(keys[0]), NULL, msgs[1], msglens[1],
           out, &outl);
    EVP_MAC_CTX_free(ctx);

    /* no digest at all */
    ctx = new_ctx(mac, r);
    do_mac(r, ctx, keys[1], sizeof(keys[1]), NULL, msgs[1], msglens[1],
           out, &outl);
    EVP_MAC_CTX_free(ctx);

    /* key set before any digest exists, digest later, keyless init */
    ctx = new_ctx(mac, r);
    do_set(r, ctx, key2);
    do_set(r, ctx, sha256);
    do_mac(r, ctx, NULL, 0, NULL, msgs[1], msglens[1], out, &outl);
    do_mac(r, ctx, keys[2], sizeof(keys[2]), NULL, msgs[1], msglens[1],
           out, &outl);
    EVP_MAC_CTX_free(ctx);

    /* property query for the digest */
    ctx = new_ctx(mac, r);
    mac_ref(r, ctx, "SHA512", keys[3], sizeof(keys[3]), props, msgs[3],
            msglens[3]);
    EVP_MAC_CTX_free(ctx);
    ctx = new_ctx(mac, r);
    do_mac(r, ctx, keys[3], sizeof(keys[3]), badprops, msgs[3], msglens[3],
           out, &outl);
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
}

/*
 * The digest and properties from heap buffers of exactly the string's
 * size, data_size counting the NUL (which OpenSSL allows) or not, set
 * before the key and in the keying init, each form several times.
 */
static void pat_digest_heap(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const strs[2] = { "SHA256", "provider=default" };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    OSSL_PARAM params[3];
    char *buf[2];
    size_t len;
    int counted, i, j;

    for (counted = 0; counted < 2; counted++) {
        for (i = 0; i < 4; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            for (j = 0; j < 2; j++) {
                len = strlen(strs[j]);
                buf[j] = malloc(len + 1);
                if (buf[j] != NULL)
                    memcpy(buf[j], strs[j], len + 1);
                params[j] = OSSL_PARAM_construct_utf8_string(
                                j == 0 ? OSSL_MAC_PARAM_DIGEST
                                       : OSSL_MAC_PARAM_PROPERTIES,
                                buf[j], counted ? len + 1 : len);
            }
            /* the properties on every other message only */
            params[i % 2 + 1] = OSSL_PARAM_construct_end();
            if (i < 2)
                do_set(r, ctx, params);
            mac_ref(r, ctx, "SHA256", keys[0], sizeof(keys[0]),
                    i < 2 ? NULL : params, msgs[2], msglens[2]);
            EVP_MAC_CTX_free(ctx);
            free(buf[0]);
            free(buf[1]);
        }
    }
    EVP_MAC_free(mac);
}

/* EVP_MAC_CTX_dup in the middle of a message; both halves finish */
static void pat_dup_mid(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    OSSL_PARAM params[2] = { p_digest("SHA384"), OSSL_PARAM_END };
    unsigned char out[EVP_MAX_MD_SIZE], joined[400];
    size_t outl;
    int i;

    for (i = 0; i < 4; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r), *dup;
        int k = i % 2;

        do_init(r, ctx, keys[k], sizeof(keys[k]), params);
        do_update(r, ctx, msgs[3], 100);
        dup = ctx != NULL ? EVP_MAC_CTX_dup(ctx) : NULL;
        rec_rc(r, "dup", dup != NULL);
        /* the two contexts continue with different data */
        do_update(r, ctx, msgs[3] + 100, 200);
        do_update(r, dup, msgs[2], 64);
        if (do_final(r, ctx, out, &outl))
            check_ref(r, "SHA384", keys[k], sizeof(keys[k]), msgs[3], 300,
                      out, outl);
        memcpy(joined, msgs[3], 100);
        memcpy(joined + 100, msgs[2], 64);
        if (do_final(r, dup, out, &outl))
            check_ref(r, "SHA384", keys[k], sizeof(keys[k]), joined, 164,
                      out, outl);
        /* the duplicate keeps the key for keyless re-init */
        if (do_mac(r, dup, NULL, 0, NULL, msgs[1], msglens[1], out, &outl))
            check_ref(r, "SHA384", keys[k], sizeof(keys[k]), msgs[1],
                      msglens[1], out, outl);
        EVP_MAC_CTX_free(ctx);
        if (do_mac(r, dup, NULL, 0, NULL, msgs[0], msglens[0], out, &outl))
            check_ref(r, "SHA384", keys[k], sizeof(keys[k]), msgs[0],
                      msglens[0], out, outl);
        EVP_MAC_CTX_free(dup);
    }
    EVP_MAC_free(mac);
}

/* K1, K2, K1, K2, ... on one thread, fresh contexts and one reused one */
static void pat_alternating(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    EVP_MAC_CTX *reused = new_ctx(mac, r);
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    int i;

    for (i = 0; i < 200; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);
        int k = i % 2, m = (i / 2) % 4;

        mac_ref(r, ctx, "SHA256", keys[k], sizeof(keys[k]), params, msgs[m],
                msglens[m]);
        EVP_MAC_CTX_free(ctx);
        mac_ref(r, reused, "SHA256", keys[k], sizeof(keys[k]), params, msgs[m],
                msglens[m]);
    }
    EVP_MAC_CTX_free(reused);
    EVP_MAC_free(mac);
}

/* Two live contexts with the same key, updates interleaved */
static void pat_two_live(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;
    int i;

    for (i = 0; i < 6; i++) {
        EVP_MAC_CTX *a = new_ctx(mac, r), *b = new_ctx(mac, r);
        int k = i % 2;

        do_init(r, a, keys[k], sizeof(keys[k]), params);
        do_update(r, a, msgs[3], 50);
        /* b is keyed with the same key while a is mid-message */
        do_init(r, b, keys[k], sizeof(keys[k]), params);
        do_update(r, b, msgs[2], 30);
        do_update(r, a, msgs[3] + 50, 250);
        do_update(r, b, msgs[2] + 30, 34);
        if (do_final(r, b, out, &outl))
            check_ref(r, "SHA256", keys[k], sizeof(keys[k]), msgs[2], 64,
                      out, outl);
        if (do_final(r, a, out, &outl))
            check_ref(r, "SHA256", keys[k], sizeof(keys[k]), msgs[3], 300,
                      out, outl);
        EVP_MAC_CTX_free(b);
        EVP_MAC_CTX_free(a);
    }
    EVP_MAC_free(mac);
}

/*
 * The key buffer is rewritten in place between calls: same pointer and
 * length, different content.  A cache keyed on the pointer would fail.
 */
static void pat_inplace_key(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    unsigned char key[32], out[EVP_MAX_MD_SIZE], *res;
    size_t outl;
    int i;

    for (i = 0; i < 12; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);
        OSSL_PARAM kp[3] = { p_key(key, sizeof(key)), p_digest("SHA256"),
                             OSSL_PARAM_END };

        memcpy(key, keys[i % 3], sizeof(key));
        if (i % 4 == 3)
            key[31] ^= 0x01;          /* only the last byte differs */
        else if (i % 4 == 2)
            key[0] ^= 0x80;           /* only the first byte differs */
        mac_ref(r, ctx, "SHA256", key, sizeof(key), params, msgs[1],
                msglens[1]);
        EVP_MAC_CTX_free(ctx);

        res = EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, sizeof(key),
                        msgs[2], msglens[2], out, sizeof(out), &outl);
        rec_printf(r, "q_mac res=%s len=%zu", res == NULL ? "NULL" : "out",
                   outl);
        rec_errs(r);
        if (res != NULL)
            check_ref(r, "SHA256", key, sizeof(key), msgs[2], msglens[2],
                      out, outl);

        /* same buffer handed over as the "key" parameter */
        ctx = new_ctx(mac, r);
        do_set(r, ctx, kp);
        if (do_mac(r, ctx, NULL, 0, NULL, msgs[3], msglens[3], out, &outl))
            check_ref(r, "SHA256", key, sizeof(key), msgs[3], msglens[3],
                      out, outl);
        EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
}

/*
 * One context kept and keyed again for every message (OpenVPN's data
 * channel: EVP_MAC_init with the key in the params or as the argument):
 * keyed again with the key it holds, it is served by a keyless re-init
 * (a hit); with a key changed in place in the same buffer, another
 * length, or another digest, it must take the new one.
 */
static void pat_rekey_kept(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    EVP_MAC_CTX *ctx = new_ctx(mac, r);
    OSSL_PARAM dg[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    unsigned char key[32], out[EVP_MAX_MD_SIZE];
    size_t outl, klen;
    const char *digest;
    int i;

    memcpy(key, keys[0], sizeof(key));
    for (i = 0; i < 40; i++) {
        OSSL_PARAM kp[3];

        digest = i % 13 == 12 ? "SHA384" : "SHA256";
        klen = i % 11 == 10 ? 31 : sizeof(key);
        if (i % 7 == 6)
            key[i % 32] ^= 0x10;          /* changed in place */
        if (i % 9 == 8)
            memcpy(key, keys[1 + i % 2], sizeof(key));
        kp[0] = p_digest(digest);
        kp[1] = p_key(key, klen);
        kp[2] = OSSL_PARAM_construct_end();
        dg[0] = p_digest(digest);
        if (i % 2 == 0) {
            /* the key in the params, as OpenVPN keys its HMAC */
            if (do_mac(r, ctx, NULL, 0, kp, msgs[i % 4], msglens[i % 4], out,
                       &outl))
                check_ref(r, digest, key, klen, msgs[i % 4], msglens[i % 4],
                          out, outl);
        } else if (do_mac(r, ctx, key, klen, dg, msgs[i % 4], msglens[i % 4],
                          out, &outl)) {
            check_ref(r, digest, key, klen, msgs[i % 4], msglens[i % 4], out,
                      outl);
        }
    }
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
}

/*
 * More keys than the cache holds (64 in the build config): entries are
 * evicted and refilled while contexts from them are still alive.
 */
static void pat_many_keys(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    EVP_MAC_CTX *held[4] = { NULL, NULL, NULL, NULL };
    unsigned char key[32], out[EVP_MAX_MD_SIZE];
    size_t outl;
    int i, round;

    for (round = 0; round < 4; round++) {
        int nkeys = round < 2 ? 100 : 40;

        for (i = 0; i < nkeys; i++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            kct_fill(key, sizeof(key), 5000 + (uint32_t)i);
            mac_ref(r, ctx, "SHA256", key, sizeof(key), params, msgs[1],
                    msglens[1]);
            /* keep a few alive across evictions, freed much later */
            if (i % 25 == 0) {
                EVP_MAC_CTX_free(held[i / 25]);
                held[i / 25] = ctx;
            } else {
                EVP_MAC_CTX_free(ctx);
            }
        }
    }
    for (i = 0; i < 4; i++) {
        kct_fill(key, sizeof(key), 5000 + (uint32_t)i * 25);
        if (held[i] != NULL
            && do_mac(r, held[i], NULL, 0, NULL, msgs[2], msglens[2], out,
                      &outl))
            check_ref(r, "SHA256", key, sizeof(key), msgs[2], msglens[2],
                      out, outl);
        EVP_MAC_CTX_free(held[i]);
    }
    EVP_MAC_free(mac);
}

/* Key lengths around the block sizes and the cache's key-length limit */
static void pat_key_lengths(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t lens[] = { 0, 1, 64, 65, 128, 129, 200 };
    static const char *mds[] = { "SHA256", "SHA512", "SHA1" };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char key[200];
    size_t i, d;
    int rep;

    for (rep = 0; rep < 2; rep++) {
        for (d = 0; d < sizeof(mds) / sizeof(mds[0]); d++) {
            OSSL_PARAM params[2] = { p_digest(mds[d]), OSSL_PARAM_END };

            for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);

                kct_fill(key, sizeof(key), 300 + (uint32_t)i);
                mac_ref(r, ctx, mds[d], key, lens[i], params, msgs[2],
                        msglens[2]);
                EVP_MAC_CTX_free(ctx);
            }
        }
    }
    EVP_MAC_free(mac);
}

/*
 * Keys longer than the cache holds (128 bytes): HMAC keys one longer than
 * its digest's block with the key's digest, so such keys are cached by it
 * (SHA-256, SHA-512, SHA-1 blocks are 64 or 128 bytes), while one of
 * SHA3-256 no longer than its 136-byte block is not.  Each key twice (the
 * second a hit where cached), then changed in place at its first, a middle
 * and its last byte: a changed key must never be served the old entry.
 */
static void pat_long_keys(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t lens[] = { 129, 136, 137, 200, 300 };
    static const char *mds[] = { "SHA256", "SHA512", "SHA1", "SHA3-256" };
    static const size_t flips[] = { 0, 150, 299 };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char key[300];
    size_t i, d, f;
    int rep;

    for (d = 0; d < sizeof(mds) / sizeof(mds[0]); d++) {
        OSSL_PARAM params[2] = { p_digest(mds[d]), OSSL_PARAM_END };

        for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            kct_fill(key, sizeof(key), 700 + (uint32_t)i);
            for (f = 0; f <= sizeof(flips) / sizeof(flips[0]); f++) {
                if (f > 0)
                    key[flips[f - 1] % lens[i]] ^= 0x01;
                for (rep = 0; rep < 2; rep++) {
                    EVP_MAC_CTX *ctx = new_ctx(mac, r);

                    mac_ref(r, ctx, mds[d], key, lens[i], params, msgs[1],
                            msglens[1]);
                    EVP_MAC_CTX_free(ctx);
                }
            }
        }
    }
    EVP_MAC_free(mac);
}

/*
 * Keys that differ in exactly one byte, at every position (the first, the
 * last and all between), for lengths that are and are not multiples of 8,
 * back to back on one thread: A, A', A, A' (the most recently used entry
 * holds the other key each time), then with another key in between, so
 * the index has to tell them apart too.  "Jefe" then "Jeff" as well.  A
 * compare that skips any byte of some length serves A' the context of A.
 */
static void near_one(EVP_MAC *mac, EVP_MAC_CTX *reused, REC *r,
                     const char *md, const unsigned char *a,
                     const unsigned char *b, size_t len)
{
    static const unsigned char other[8] = "other-k";
    const unsigned char *seq[8] = { a, b, a, b, other, b, other, a };
    OSSL_PARAM params[2] = { p_digest(md), OSSL_PARAM_END };
    size_t i, l;

    for (i = 0; i < 8; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);

        l = seq[i] == other ? sizeof(other) : len;
        mac_ref(r, ctx, md, seq[i], l, params, msgs[1], msglens[1]);
        EVP_MAC_CTX_free(ctx);
    }
    /* one context re-keyed: A, then A' */
    for (i = 0; i < 2; i++)
        mac_ref(r, reused, md, seq[i], len, params, msgs[2], msglens[2]);
}

static void pat_near_keys(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t lens[] = { 1, 7, 13, 16, 20, 31, 32, 33, 64, 65,
                                   127, 128 };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    EVP_MAC_CTX *reused = new_ctx(mac, r);
    unsigned char a[128], b[128];
    size_t i, pos;

    near_one(mac, reused, r, "SHA256", (const unsigned char *)"Jefe",
             (const unsigned char *)"Jeff", 4);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        /* within the block: the key is used as it is */
        const char *md = lens[i] <= 64 ? "SHA256" : "SHA512";

        kct_fill(a, sizeof(a), 6100 + (uint32_t)lens[i]);
        for (pos = 0; pos < lens[i]; pos++) {
            memcpy(b, a, sizeof(b));
            b[pos] ^= (unsigned char)(1u << (pos % 8));
            rec_printf(r, "-- len %zu pos %zu\n", lens[i], pos);
            near_one(mac, reused, r, md, a, b, lens[i]);
        }
    }
    EVP_MAC_CTX_free(reused);
    EVP_MAC_free(mac);
}

/*
 * Digest names that are a prefix of the one before, back to back: the
 * default refuses "SHA2-25" and "SHA25" after "SHA2-256" and "SHA256", on
 * a new context, on the same context before the key and in the keying
 * init, and so must keycache (whatever it remembers of the last name).
 */
static void pat_digest_prefix(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const names[][2] = {
        { "SHA2-256", "SHA2-25" }, { "SHA256", "SHA25" },
        { "SHA2-512", "SHA2-51" }, { "SHA1", "SHA" },
    };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl, i;
    int rep;

    for (rep = 0; rep < 3; rep++)
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            OSSL_PARAM good[2] = { p_digest(names[i][0]), OSSL_PARAM_END };
            OSSL_PARAM bad[2] = { p_digest(names[i][1]), OSSL_PARAM_END };
            EVP_MAC_CTX *ctx;

            rec_printf(r, "-- %s then %s\n", names[i][0], names[i][1]);
            /* a new context each */
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[0], sizeof(keys[0]), good, msgs[1],
                   msglens[1], out, &outl);
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            do_set(r, ctx, bad);
            do_mac(r, ctx, keys[0], sizeof(keys[0]), NULL, msgs[1],
                   msglens[1], out, &outl);
            EVP_MAC_CTX_free(ctx);
            ctx = new_ctx(mac, r);
            do_mac(r, ctx, keys[0], sizeof(keys[0]), bad, msgs[1],
                   msglens[1], out, &outl);
            EVP_MAC_CTX_free(ctx);
            /* one context: the good name set, then the prefix */
            ctx = new_ctx(mac, r);
            do_set(r, ctx, good);
            do_set(r, ctx, bad);
            do_mac(r, ctx, keys[1], sizeof(keys[1]), NULL, msgs[1],
                   msglens[1], out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
    EVP_MAC_free(mac);
}

/* Every digest the task lists; all must work with HMAC on default */
static const char *listed_mds[] = {
    "SHA1", "SHA2-224", "SHA2-256", "SHA2-384", "SHA2-512", "SHA2-512/224",
    "SHA2-512/256", "SHA3-224", "SHA3-256", "SHA3-384", "SHA3-512", "SM3",
    "MD5", "BLAKE2s256", "BLAKE2b512", "RIPEMD160", NULL
};

/* Every digest the default provider offers, filled in by add_suites() */
static char *offered_mds[128];

static void mac_with_digest(EVP_MAC *mac, REC *r, const char *md)
{
    static const size_t lens[] = { 20, 129 };
    unsigned char key[129], out[EVP_MAX_MD_SIZE];
    OSSL_PARAM params[2] = { p_digest(md), OSSL_PARAM_END };
    EVP_MD *emd = EVP_MD_fetch(kct_default(), md, NULL);
    int xof = emd != NULL && (EVP_MD_get_flags(emd) & EVP_MD_FLAG_XOF) != 0;
    size_t outl, i;

    EVP_MD_free(emd);
    ERR_clear_error();
    rec_printf(r, "digest %s\n", md);
    for (i = 0; i < 2; i++) {
        EVP_MAC_CTX *ctx = new_ctx(mac, r);

        kct_fill(key, sizeof(key), 400 + (uint32_t)i);
        if (do_mac(r, ctx, key, lens[i], params, msgs[3], msglens[3], out,
                   &outl) && !xof)
            check_ref(r, md, key, lens[i], msgs[3], msglens[3], out, outl);
        /* reused with the same key: the cached path on keycache */
        if (do_mac(r, ctx, key, lens[i], NULL, msgs[1], msglens[1], out,
                   &outl) && !xof)
            check_ref(r, md, key, lens[i], msgs[1], msglens[1], out, outl);
        EVP_MAC_CTX_free(ctx);
    }
}

static void pat_listed_digests(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    int i;

    for (i = 0; listed_mds[i] != NULL; i++) {
        EVP_MD *md = EVP_MD_fetch(kct_default(), listed_mds[i], NULL);

        ERR_clear_error();
        /* RIPEMD160 only counts when the default provider has it */
        if (md == NULL && strcmp(listed_mds[i], "RIPEMD160") == 0)
            continue;
        CU_ASSERT_PTR_NOT_NULL(md);
        EVP_MD_free(md);
        mac_with_digest(mac, r, listed_mds[i]);
    }
    EVP_MAC_free(mac);
}

static void pat_offered_digests(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    int i;

    for (i = 0; offered_mds[i] != NULL; i++)
        mac_with_digest(mac, r, offered_mds[i]);
    EVP_MAC_free(mac);
}

/*
 * A key longer than the block with every digest the default offers, twice
 * each: XOFs and digests that want more than a name (ML-DSA-MU on 4.x)
 * are refused as the default refuses them, with its errors only.
 */
static void pat_long_key_offered(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char key[300], out[EVP_MAX_MD_SIZE];
    size_t outl;
    int i, rep;

    kct_fill(key, sizeof(key), 4242);
    for (i = 0; offered_mds[i] != NULL; i++) {
        OSSL_PARAM p[2] = { p_digest(offered_mds[i]), OSSL_PARAM_END };

        for (rep = 0; rep < 2; rep++) {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            rec_printf(r, "-- %s\n", offered_mds[i]);
            /*
             * Not finished after a failed init: 4.0.3's own HMAC_Final
             * then dereferences NULL for an XOF.
             */
            if (do_init(r, ctx, key, sizeof(key), p)
                && do_update(r, ctx, msgs[1], msglens[1]))
                do_final(r, ctx, out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
    }
    EVP_MAC_free(mac);
}

static void collect_md(EVP_MD *md, void *arg)
{
    int *n = arg;

    if (*n < (int)(sizeof(offered_mds) / sizeof(offered_mds[0])) - 1)
        offered_mds[(*n)++] = strdup(EVP_MD_get0_name(md));
}

static void rec_sizes(REC *r, EVP_MAC_CTX *ctx, const char *when)
{
    size_t sz, bs, psz = 0, pbs = 0;
    OSSL_PARAM params[3];
    int rc;

    sz = EVP_MAC_CTX_get_mac_size(ctx);
    rec_printf(r, "%s mac_size=%zu", when, sz);
    rec_errs(r);
    bs = EVP_MAC_CTX_get_block_size(ctx);
    rec_printf(r, "%s block_size=%zu", when, bs);
    rec_errs(r);
    params[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &psz);
    params[1] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_BLOCK_SIZE, &pbs);
    params[2] = OSSL_PARAM_construct_end();
    rc = EVP_MAC_CTX_get_params(ctx, params);
    rec_printf(r, "%s get_params rc=%d size=%zu/%d block=%zu/%d", when, rc,
               psz, OSSL_PARAM_modified(&params[0]), pbs,
               OSSL_PARAM_modified(&params[1]));
    rec_errs(r);
}

/* EVP_MAC_CTX_get_mac_size / get_block_size through a context's life */
static void pat_sizes(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *mds[] = { "SHA256", "SHA512", "SHA3-256", "SHA1" };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl, d;

    for (d = 0; d < sizeof(mds) / sizeof(mds[0]); d++) {
        OSSL_PARAM params[2] = { p_digest(mds[d]), OSSL_PARAM_END };
        EVP_MAC_CTX *ctx = new_ctx(mac, r);
        int rc;

        rec_printf(r, "digest %s\n", mds[d]);
        rec_sizes(r, ctx, "new");
        do_set(r, ctx, params);
        rec_sizes(r, ctx, "digest-set");
        do_init(r, ctx, keys[d], sizeof(keys[d]), NULL);
        rec_sizes(r, ctx, "init");
        do_update(r, ctx, msgs[1], msglens[1]);
        rc = EVP_MAC_final(ctx, NULL, &outl, 0);
        rec_printf(r, "final(NULL) rc=%d len=%zu", rc, outl);
        rec_errs(r);
        if (do_final(r, ctx, out, &outl))
            check_ref(r, mds[d], keys[d], sizeof(keys[d]), msgs[1],
                      msglens[1], out, outl);
        rec_sizes(r, ctx, "final");
        EVP_MAC_CTX_free(ctx);

        /* digest given only at init */
        ctx = new_ctx(mac, r);
        do_init(r, ctx, keys[d], sizeof(keys[d]), params);
        rec_sizes(r, ctx, "init-params");
        EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
}

static void rec_param_names(REC *r, const char *what, const OSSL_PARAM *p)
{
    rec_printf(r, "%s:", what);
    for (; p != NULL && p->key != NULL; p++)
        rec_printf(r, " %s/%u", p->key, p->data_type);
    rec_printf(r, "\n");
}

/* The advertised parameter lists, and key parameters of odd shapes */
static void pat_param_shapes(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    EVP_MAC_CTX *ctx = new_ctx(mac, r);
    OSSL_PARAM sha256[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    OSSL_PARAM nullkey[2] = { p_key(NULL, 0), OSSL_PARAM_END };
    OSSL_PARAM strkey[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_KEY, "Jefe", 0),
        OSSL_PARAM_END
    };
    OSSL_PARAM intdigest[2] = {
        OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST, (int[]){ 1 }),
        OSSL_PARAM_END
    };
    OSSL_PARAM unknown[2] = {
        OSSL_PARAM_construct_int("no-such-param", (int[]){ 1 }),
        OSSL_PARAM_END
    };
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;

    rec_param_names(r, "settable", EVP_MAC_settable_ctx_params(mac));
    rec_param_names(r, "gettable_ctx", EVP_MAC_gettable_ctx_params(mac));
    rec_param_names(r, "gettable", EVP_MAC_gettable_params(mac));
    rec_param_names(r, "ctx_settable", EVP_MAC_CTX_settable_params(ctx));
    rec_param_names(r, "ctx_gettable", EVP_MAC_CTX_gettable_params(ctx));
    ERR_clear_error();

    /* odd parameters on a fresh context, then on a keyed one */
    do_set(r, ctx, nullkey);
    do_set(r, ctx, strkey);
    do_set(r, ctx, intdigest);
    do_set(r, ctx, unknown);
    do_set(r, ctx, sha256);
    do_set(r, ctx, nullkey);
    mac_ref(r, ctx, "SHA256", keys[4], sizeof(keys[4]), NULL, msgs[1],
            msglens[1]);
    do_set(r, ctx, strkey);
    do_set(r, ctx, intdigest);
    do_set(r, ctx, unknown);
    /* an empty key parameter on a keyed context */
    do_set(r, ctx, nullkey);
    do_mac(r, ctx, NULL, 0, NULL, msgs[1], msglens[1], out, &outl);
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
}

/* Digests HMAC cannot use must fail at the same call with the same errors */
static void bad_digest(OSSL_LIB_CTX *libctx, REC *r, const char *md)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    OSSL_PARAM params[2] = { p_digest(md), OSSL_PARAM_END };
    OSSL_PARAM good[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    unsigned char out[EVP_MAX_MD_SIZE], *res;
    EVP_MAC_CTX *ctx;
    size_t outl;

    rec_printf(r, "digest %s\n", md);
    ctx = new_ctx(mac, r);
    do_set(r, ctx, params);
    do_mac(r, ctx, keys[0], sizeof(keys[0]), NULL, msgs[1], msglens[1],
           out, &outl);
    rec_sizes(r, ctx, "after-bad");
    /* the context stays usable with a good digest */
    mac_ref(r, ctx, "SHA256", keys[0], sizeof(keys[0]), good, msgs[1],
            msglens[1]);
    EVP_MAC_CTX_free(ctx);

    ctx = new_ctx(mac, r);
    do_mac(r, ctx, keys[0], sizeof(keys[0]), params, msgs[1], msglens[1],
           out, &outl);
    EVP_MAC_CTX_free(ctx);

    /*
     * bad digest on a context that already has a cached key: keycache
     * passes it to its keyed inner context, in its private library
     * context, but the errors are the application's context's fetch's
     */
    ctx = new_ctx(mac, r);
    do_mac(r, ctx, keys[0], sizeof(keys[0]), good, msgs[1], msglens[1],
           out, &outl);
    do_mac(r, ctx, keys[0], sizeof(keys[0]), params, msgs[1], msglens[1],
           out, &outl);
    /* and by set_ctx_params, as the reviewer's program did */
    do_set(r, ctx, good);
    do_mac(r, ctx, keys[0], sizeof(keys[0]), NULL, msgs[1], msglens[1],
           out, &outl);
    do_set(r, ctx, params);
    do_mac(r, ctx, NULL, 0, NULL, msgs[1], msglens[1], out, &outl);
    EVP_MAC_CTX_free(ctx);

    res = EVP_Q_mac(NULL, "HMAC", NULL, md, NULL, keys[0], sizeof(keys[0]),
                    msgs[1], msglens[1], out, sizeof(out), &outl);
    rec_printf(r, "q_mac res=%s len=%zu", res == NULL ? "NULL" : "out", outl);
    rec_errs(r);
    EVP_MAC_free(mac);
}

static void pat_unknown_digest(OSSL_LIB_CTX *libctx, REC *r)
{
    bad_digest(libctx, r, "NOPE");
}

static void pat_xof_digest(OSSL_LIB_CTX *libctx, REC *r)
{
    bad_digest(libctx, r, "SHAKE256");
    bad_digest(libctx, r, "SHAKE128");
}

/* A normal, fresh context; must give the plain HMAC */
static void plain_mac(EVP_MAC *mac, REC *r, const unsigned char *key,
                      const unsigned char *msg, size_t msglen)
{
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    EVP_MAC_CTX *ctx = new_ctx(mac, r);

    rec_printf(r, "plain\n");
    mac_ref(r, ctx, "SHA256", key, 32, params, msg, msglen);
    EVP_MAC_CTX_free(ctx);
}

static void flag_ctx(EVP_MAC *mac, REC *r, const unsigned char *key,
                     const char *flag, int before_init)
{
    int one = 1;
    OSSL_PARAM fp[3] = {
        p_digest("SHA256"), OSSL_PARAM_construct_int(flag, &one),
        OSSL_PARAM_END
    };
    OSSL_PARAM dp[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    EVP_MAC_CTX *ctx = new_ctx(mac, r);
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;

    rec_printf(r, "flag %s %s\n", flag, before_init ? "before" : "after");
    if (before_init) {
        do_set(r, ctx, fp);
        do_mac(r, ctx, key, 32, NULL, msgs[2], msglens[2], out, &outl);
    } else {
        do_init(r, ctx, key, 32, dp);
        do_set(r, ctx, fp);
        do_update(r, ctx, msgs[2], msglens[2]);
        do_final(r, ctx, out, &outl);
        do_mac(r, ctx, NULL, 0, NULL, msgs[2], msglens[2], out, &outl);
        do_mac(r, ctx, key, 32, NULL, msgs[2], msglens[2], out, &outl);
    }
    EVP_MAC_CTX_free(ctx);
}

/* TLS CBC record MAC mode ("tls-data-size"), as libssl drives it */
static void tls_ctx(EVP_MAC *mac, REC *r, const unsigned char *key,
                    int before_init)
{
    unsigned char header[13], record[256], out[EVP_MAX_MD_SIZE];
    unsigned char joined[13 + 256];
    size_t datalen = 100, recsize = sizeof(record), outl;
    OSSL_PARAM tp[3] = {
        p_digest("SHA256"),
        OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE, &recsize),
        OSSL_PARAM_END
    };
    OSSL_PARAM dp[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    EVP_MAC_CTX *ctx = new_ctx(mac, r);

    kct_fill(header, sizeof(header), 501);
    kct_fill(record, sizeof(record), 502);
    rec_printf(r, "tls %s\n", before_init ? "before" : "after");
    if (before_init) {
        do_set(r, ctx, tp);
        do_init(r, ctx, key, 32, NULL);
    } else {
        /* a keyed (on keycache: cached) context switched to TLS mode */
        do_init(r, ctx, key, 32, dp);
        do_set(r, ctx, tp + 1);       /* tls-data-size alone */
    }
    do_update(r, ctx, header, sizeof(header));
    do_update(r, ctx, record, datalen);
    if (do_final(r, ctx, out, &outl)) {
        /* a TLS record MAC is the HMAC of header || data */
        memcpy(joined, header, sizeof(header));
        memcpy(joined + sizeof(header), record, datalen);
        check_ref(r, "SHA256", key, 32, joined, sizeof(header) + datalen,
                  out, outl);
    }
    EVP_MAC_CTX_free(ctx);
}

/*
 * TLS mode differs from a plain HMAC where libssl's record layout is not
 * followed: a header that is not 13 bytes is refused, and a second record
 * replaces the first instead of being appended.  A wrapper that dropped
 * tls-data-size would compute a plain HMAC here.
 */
static void tls_ctx_odd(EVP_MAC *mac, REC *r, const unsigned char *key)
{
    unsigned char header[13], record[64], out[EVP_MAX_MD_SIZE];
    size_t recsize = sizeof(record), outl;
    OSSL_PARAM tp[3] = {
        p_digest("SHA256"),
        OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE, &recsize),
        OSSL_PARAM_END
    };
    EVP_MAC_CTX *ctx = new_ctx(mac, r);

    kct_fill(header, sizeof(header), 503);
    kct_fill(record, sizeof(record), 504);
    rec_printf(r, "tls odd\n");
    do_set(r, ctx, tp);
    do_init(r, ctx, key, 32, NULL);
    do_update(r, ctx, header, 5);              /* refused in TLS mode */
    do_update(r, ctx, header, sizeof(header));
    do_update(r, ctx, record, 40);
    do_update(r, ctx, record + 40, 24);        /* replaces, not appends */
    do_final(r, ctx, out, &outl);
    EVP_MAC_CTX_free(ctx);
}

/*
 * One TLS record through ctx: its 13-byte header, n bytes, then, if more,
 * a second update of the next more bytes (TLS mode: a record replacing the
 * first; plain mode: more message), then the MAC
 */
static void tls_record(REC *r, EVP_MAC_CTX *ctx, const unsigned char *header,
                       const unsigned char *record, size_t n, size_t more)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;

    do_update(r, ctx, header, 13);
    do_update(r, ctx, record, n);
    if (more > 0)
        do_update(r, ctx, record + n, more);
    do_final(r, ctx, out, &outl);
}

/*
 * TLS mode on a context keyed with a key longer than the cache holds (so,
 * under keycache, cached by its digest): the default's record MAC refuses
 * a key over 128 bytes whatever HMAC derives from it, so each record fails
 * there and must here.  Then a short key in TLS mode (a record MAC again),
 * the long key again (refused again), a short key as a parameter, and
 * plain mode under the long key: its HMAC.  Then sets that fail before
 * their key or record size, the long key's digest as the key after it, and
 * the long key then a short one with another digest, in one set.
 * Each key in several contexts, so that the later ones are hits.
 */
static void pat_tls_long_key(OSSL_LIB_CTX *libctx, REC *r)
{
    static const size_t lens[] = { 129, 200 };
    static const char *mds[] = { "SHA256", "SHA1" };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char key[200], header[13], record[256];
    size_t recsize = sizeof(record), zero = 0, i, d, k, f;
    OSSL_PARAM tp[2] = {
        OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE, &recsize),
        OSSL_PARAM_END
    };
    OSSL_PARAM zp[2] = {
        OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE, &zero),
        OSSL_PARAM_END
    };
    OSSL_PARAM kp[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, keys[4], 32),
        OSSL_PARAM_END
    };
    OSSL_PARAM kz[3] = { kp[0], zp[0], OSSL_PARAM_END };
    int bad = 1, rep;
    OSSL_PARAM bk[3] = {
        OSSL_PARAM_construct_int(OSSL_MAC_PARAM_PROPERTIES, &bad), kp[0],
        OSSL_PARAM_END
    };
    OSSL_PARAM bt[3] = {
        OSSL_PARAM_construct_int(OSSL_MAC_PARAM_PROPERTIES, &bad), tp[0],
        OSSL_PARAM_END
    };
    /* (4.x refuses a list naming a parameter twice before taking any) */
    OSSL_PARAM bk2[3] = { kp[0], kp[0], OSSL_PARAM_END };
    OSSL_PARAM bt2[3] = { tp[0], tp[0], OSSL_PARAM_END };
    const OSSL_PARAM *fails[4] = { bk, bt, bk2, bt2 };

    kct_fill(header, sizeof(header), 505);
    kct_fill(record, sizeof(record), 506);
    for (d = 0; d < sizeof(mds) / sizeof(mds[0]); d++) {
        OSSL_PARAM dp[2] = { p_digest(mds[d]), OSSL_PARAM_END };
        OSSL_PARAM sp[3] = { p_digest(mds[1 - d]), kp[0], OSSL_PARAM_END };

        for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            unsigned char kd[EVP_MAX_MD_SIZE];
            unsigned int kdlen = 0;

            kct_fill(key, sizeof(key), 710 + (uint32_t)i);
            CU_ASSERT_FATAL(EVP_Digest(key, lens[i], kd, &kdlen,
                                       EVP_get_digestbyname(mds[d]), NULL));
            for (rep = 0; rep < 5; rep++) {
                EVP_MAC_CTX *ctx = new_ctx(mac, r);

                rec_printf(r, "tls long %s %zu #%d\n", mds[d], lens[i], rep);
                do_init(r, ctx, key, lens[i], dp);
                do_set(r, ctx, tp);
                for (k = 0; k < 4; k++) {
                    /*
                     * The long key, a short one, the long one, a short
                     * one: the short keys by init and as a parameter, in
                     * turns, so that either comes first after the long.
                     */
                    if (k == 2)
                        do_init(r, ctx, key, lens[i], NULL);
                    else if (k > 0 && (k == 1) == (rep % 2 == 0))
                        do_init(r, ctx, keys[5], 32, NULL);
                    else if (k > 0)
                        do_set(r, ctx, kp);
                    tls_record(r, ctx, header, record, 100, 0);
                }
                do_set(r, ctx, zp);
                mac_ref(r, ctx, mds[d], key, lens[i], NULL, msgs[1],
                        msglens[1]);
                EVP_MAC_CTX_free(ctx);

                /*
                 * Sets that fail before their key or record size (3.x:
                 * properties of the wrong type; 4.x: a name twice): the
                 * long key stays, and so does plain mode.
                 */
                for (f = 0; f < 4; f++) {
                    if (f % 2 == 0) {
                        ctx = new_ctx(mac, r);
                        do_init(r, ctx, key, lens[i], dp);
                        do_set(r, ctx, rep % 2 ? tp : zp);
                        do_set(r, ctx, fails[f]);
                    } else {
                        do_set(r, ctx, fails[f]);
                        do_set(r, ctx, kp);
                    }
                    /* two records: the second replaces in TLS mode */
                    tls_record(r, ctx, header, record, 100, 50);
                    if (f % 2 == 1)
                        EVP_MAC_CTX_free(ctx);
                }

                /*
                 * Keyed again with the long key's digest itself (what HMAC
                 * keys with), by init or as a parameter: the same state,
                 * but the key is now short.
                 */
                ctx = new_ctx(mac, r);
                do_init(r, ctx, key, lens[i], dp);
                if (rep % 2 == 0) {
                    do_init(r, ctx, kd, kdlen, NULL);
                } else {
                    OSSL_PARAM kdp[2] = {
                        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
                                                          kd, kdlen),
                        OSSL_PARAM_END
                    };

                    do_set(r, ctx, kdp);
                }
                do_set(r, ctx, tp);
                tls_record(r, ctx, header, record, 100, 0);
                EVP_MAC_CTX_free(ctx);

                /*
                 * Two sets after the long key: a short key with another
                 * digest in one, then TLS mode (a record); TLS mode, then
                 * a short key and plain mode in one (two updates)
                 */
                for (k = 0; k < 2; k++) {
                    ctx = new_ctx(mac, r);
                    do_init(r, ctx, key, lens[i], dp);
                    do_set(r, ctx, k == 0 ? sp : tp);
                    do_set(r, ctx, k == 0 ? tp : kz);
                    tls_record(r, ctx, header, record, 100, k == 0 ? 0 : 50);
                    EVP_MAC_CTX_free(ctx);
                }
            }
        }
    }
    EVP_MAC_free(mac);
}

/*
 * Unusual parameters must stay on their own context: after a context that
 * used digest-noinit, digest-oneshot or tls-data-size, a normal context
 * with the same key must give the plain HMAC, exactly as on default.
 */
static void pat_flags(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = fetch_hmac(libctx, r);
    static const char *flags[] = {
        OSSL_MAC_PARAM_DIGEST_NOINIT, OSSL_MAC_PARAM_DIGEST_ONESHOT
    };
    int i, before;

    for (i = 0; i < 2; i++) {
        /*
         * digest-noinit set on an already keyed context makes libcrypto's
         * own HMAC_Final/HMAC_Init_ex use freed memory (OpenSSL 3.0), so
         * that flag is only exercised before init.
         */
        for (before = 1; before >= (i == 0 ? 1 : 0); before--) {
            const unsigned char *key = keys[i * 2 + before];

            plain_mac(mac, r, key, msgs[1], msglens[1]);
            flag_ctx(mac, r, key, flags[i], before);
            plain_mac(mac, r, key, msgs[2], msglens[2]);
            plain_mac(mac, r, key, msgs[3], msglens[3]);
        }
    }
    for (before = 1; before >= 0; before--) {
        plain_mac(mac, r, keys[5], msgs[1], msglens[1]);
        tls_ctx(mac, r, keys[5], before);
        plain_mac(mac, r, keys[5], msgs[2], msglens[2]);
        tls_ctx(mac, r, keys[5], before);
        plain_mac(mac, r, keys[5], msgs[3], msglens[3]);
    }
    tls_ctx_odd(mac, r, keys[5]);
    plain_mac(mac, r, keys[5], msgs[1], msglens[1]);
    EVP_MAC_free(mac);
}

/*
 * A digest only another provider of the application's offers (the legacy
 * provider's MD4 and WHIRLPOOL): the default finds it in the application's
 * library context, so keycache must as well.  Run against default + legacy
 * and against keycache's config + legacy.
 */
static OSSL_LIB_CTX *legacy_ref;

static void legacy_mac(EVP_MAC *mac, REC *r, const char *md,
                       const OSSL_PARAM *before, const OSSL_PARAM *at_init,
                       int msg)
{
    EVP_MAC_CTX *ctx = new_ctx(mac, r), *dup;
    unsigned char out[EVP_MAX_MD_SIZE], ref[EVP_MAX_MD_SIZE];
    size_t outl = 0, refl = 0;
    int ok;

    if (before != NULL)
        do_set(r, ctx, before);
    rec_printf(r, "size before key %zu\n",
               ctx != NULL ? EVP_MAC_CTX_get_mac_size(ctx) : 0);
    rec_errs(r);
    ok = do_init(r, ctx, keys[msg], sizeof(keys[msg]), at_init)
         && do_update(r, ctx, msgs[msg], msglens[msg] / 2);
    dup = ok ? EVP_MAC_CTX_dup(ctx) : NULL;
    rec_printf(r, "dup %d\n", dup != NULL);
    ok = ok && do_update(r, ctx, msgs[msg] + msglens[msg] / 2,
                         msglens[msg] - msglens[msg] / 2)
         && do_final(r, ctx, out, &outl);
    if (ok) {
        int same = ref_hmac_in(legacy_ref, md, keys[msg], sizeof(keys[msg]),
                               msgs[msg], msglens[msg], ref, &refl)
                   && refl == outl && memcmp(ref, out, outl) == 0;

        CU_ASSERT(same);
        rec_printf(r, "ref %s\n", same ? "ok" : "MISMATCH");
    }
    if (dup != NULL) {
        do_update(r, dup, msgs[msg] + msglens[msg] / 2,
                  msglens[msg] - msglens[msg] / 2);
        do_final(r, dup, out, &outl);
    }
    EVP_MAC_CTX_free(dup);
    EVP_MAC_CTX_free(ctx);
    ERR_clear_error();
}

/* A KDF derivation, recorded (keycache passes the default's KDFs through) */
static void kdf_derive(OSSL_LIB_CTX *libctx, REC *r, const char *name,
                       const char *md)
{
    static const unsigned char salt[] = "salt", info[] = "info";
    EVP_KDF *kdf = EVP_KDF_fetch(libctx, name, NULL);
    EVP_KDF_CTX *ctx = kdf != NULL ? EVP_KDF_CTX_new(kdf) : NULL;
    unsigned char out[32];
    unsigned int iter = 2;
    OSSL_PARAM p[6], *q = p;
    int rc;

    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                            (char *)md, 0);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                             (void *)salt, 4);
    if (strcmp(name, "PBKDF2") == 0) {
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD,
                                                 keys[0], 16);
        *q++ = OSSL_PARAM_construct_uint(OSSL_KDF_PARAM_ITER, &iter);
    } else {
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                                 keys[0], 16);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
                                                 (void *)info, 4);
    }
    *q = OSSL_PARAM_construct_end();
    rc = ctx != NULL && EVP_KDF_derive(ctx, out, sizeof(out), p) == 1;
    rec_printf(r, "%s-%s rc=%d ", name, md, rc);
    rec_hex(r, out, rc ? sizeof(out) : 0);
    rec_errs(r);
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
}

static void pat_kdf_digests(OSSL_LIB_CTX *libctx, REC *r)
{
    kdf_derive(libctx, r, "PBKDF2", "MD4");
    kdf_derive(libctx, r, "HKDF", "WHIRLPOOL");
    kdf_derive(libctx, r, "HKDF", "NO-SUCH-DIGEST");
    kdf_derive(libctx, r, "PBKDF2", "SHA256");
    kdf_derive(libctx, r, "HKDF", "SHA3-256");
}

/*
 * A KDF's digest: keycache must fail where the default does, and derive
 * the same where it derives, its errors naming the same library context
 * (the pass-through KDFs run in the application's).
 */
static void test_kdf_digests(void)
{
    KCT_REC def = { 0 }, got = { 0 };

    kct_rec_run(pat_kdf_digests, kct_default(), &def);
    kct_rec_run(pat_kdf_digests, kct_keycache(), &got);
    CU_ASSERT(kct_rec_same("KDF digests", &def, &got));
    CU_ASSERT(strstr(def.buf, "PBKDF2-MD4 rc=0") != NULL
              && strstr(def.buf, "PBKDF2-SHA256 rc=1") != NULL);
    kct_rec_free(&def);
    kct_rec_free(&got);
}

static void pat_legacy_digests(OSSL_LIB_CTX *libctx, REC *r)
{
    static const char *const mds[] = { "MD4", "WHIRLPOOL" };
    EVP_MAC *mac = fetch_hmac(libctx, r);
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t i, outl;
    int rc;

    /* the KDFs run where the application's digests are, as the default's */
    kdf_derive(libctx, r, "PBKDF2", "MD4");
    kdf_derive(libctx, r, "HKDF", "WHIRLPOOL");
    for (i = 0; i < 2; i++) {
        OSSL_PARAM md[2] = { p_digest(mds[i]), OSSL_PARAM_END };
        OSSL_PARAM sha[2] = { p_digest("SHA256"), OSSL_PARAM_END };
        OSSL_PARAM both[3] = { p_digest(mds[i]), OSSL_PARAM_END,
                               OSSL_PARAM_END };
        EVP_PKEY *pkey;
        EVP_MD_CTX *mctx;

        rec_printf(r, "-- %s\n", mds[i]);
        outl = 0;
        rc = EVP_Q_mac(libctx, "HMAC", NULL, mds[i], NULL, keys[0],
                       sizeof(keys[0]), msgs[2], msglens[2], out,
                       sizeof(out), &outl) != NULL;
        rec_printf(r, "q_mac rc=%d ", rc);
        rec_hex(r, out, rc ? outl : 0);
        rec_errs(r);
        legacy_mac(mac, r, mds[i], md, NULL, 1);        /* digest, then key */
        legacy_mac(mac, r, mds[i], NULL, md, 2);        /* both at init */
        legacy_mac(mac, r, mds[i], sha, md, 3);         /* known, then this */
        both[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
                                                    keys[4], 16);
        legacy_mac(mac, r, mds[i], both, NULL, 3);      /* key as a param */
        /* this one, then a known digest before the key: the default's way */
        {
            EVP_MAC_CTX *ctx = new_ctx(mac, r);

            do_set(r, ctx, md);
            do_mac(r, ctx, keys[1], sizeof(keys[1]), sha, msgs[1],
                   msglens[1], out, &outl);
            check_ref(r, "SHA256", keys[1], sizeof(keys[1]), msgs[1],
                      msglens[1], out, outl);
            /* keyless re-init, a second message */
            do_mac(r, ctx, NULL, 0, NULL, msgs[3], msglens[3], out, &outl);
            EVP_MAC_CTX_free(ctx);
        }
        /* with a flag a keyless re-init cannot undo, same call or before */
        {
            int one = 1;
            OSSL_PARAM flag[3] = {
                OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_ONESHOT, &one),
                OSSL_PARAM_END, OSSL_PARAM_END
            };
            OSSL_PARAM noinit[2] = {
                OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_NOINIT, &one),
                OSSL_PARAM_END
            };

            flag[1] = p_digest(mds[i]);
            legacy_mac(mac, r, mds[i], flag, NULL, 0);
            flag[1] = OSSL_PARAM_construct_end();
            legacy_mac(mac, r, mds[i], flag, md, 1);
            legacy_mac(mac, r, mds[i], noinit, md, 2);
        }
        /* never keyed: sizes, final, a keyless init, a copy */
        {
            EVP_MAC_CTX *ctx = new_ctx(mac, r), *dup;

            do_set(r, ctx, md);
            rec_printf(r, "unkeyed size %zu block %zu\n",
                       EVP_MAC_CTX_get_mac_size(ctx),
                       EVP_MAC_CTX_get_block_size(ctx));
            rec_errs(r);
            do_final(r, ctx, out, &outl);
            do_init(r, ctx, NULL, 0, NULL);
            dup = EVP_MAC_CTX_dup(ctx);
            rec_printf(r, "unkeyed dup %d\n", dup != NULL);
            rec_errs(r);
            do_mac(r, dup, keys[2], sizeof(keys[2]), NULL, msgs[1],
                   msglens[1], out, &outl);
            do_mac(r, ctx, keys[3], sizeof(keys[3]), NULL, msgs[1],
                   msglens[1], out, &outl);
            EVP_MAC_CTX_free(dup);
            EVP_MAC_CTX_free(ctx);
        }
        /* EVP_PKEY HMAC and EVP_DigestSign*, as Ruby and `openssl dgst` */
        pkey = EVP_PKEY_new_raw_private_key_ex(libctx, "HMAC", NULL, keys[5],
                                               sizeof(keys[5]));
        mctx = EVP_MD_CTX_new();
        outl = sizeof(out);
        rc = pkey != NULL && mctx != NULL
             && EVP_DigestSignInit_ex(mctx, NULL, mds[i], libctx, NULL, pkey,
                                      NULL) == 1
             && EVP_DigestSignUpdate(mctx, msgs[2], msglens[2]) == 1
             && EVP_DigestSignFinal(mctx, out, &outl) == 1;
        rec_printf(r, "digestsign rc=%d ", rc);
        rec_hex(r, out, rc ? outl : 0);
        rec_errs(r);
        EVP_MD_CTX_free(mctx);
        EVP_PKEY_free(pkey);
    }
    EVP_MAC_free(mac);
    ERR_clear_error();
}

static void test_legacy_digests(void)
{
    OSSL_LIB_CTX *kc = kct_keycache_conf("");
    OSSL_PROVIDER *d0 = NULL, *l1 = NULL, *l2 = NULL;
    uint64_t pass0, pass1;
    KCT_REC def = { 0 }, got = { 0 };
    EVP_MAC *mac;

    CU_ASSERT_FATAL(kc != NULL);
    legacy_ref = OSSL_LIB_CTX_new();
    CU_ASSERT_FATAL(legacy_ref != NULL);
    if ((d0 = OSSL_PROVIDER_load(legacy_ref, "default")) == NULL
        || (l1 = OSSL_PROVIDER_load(legacy_ref, "legacy")) == NULL
        || (l2 = OSSL_PROVIDER_load(kc, "legacy")) == NULL) {
        const char *dir = getenv("OPENSSL_MODULES");
        char path[1024];

        /* a skip only where this libcrypto has no legacy module at all */
        if (dir == NULL)
            dir = OPENSSL_info(OPENSSL_INFO_MODULES_DIR);
        snprintf(path, sizeof(path), "%s/legacy.so", dir != NULL ? dir : "");
        CU_ASSERT(access(path, F_OK) != 0);
        fprintf(stderr, "\n[legacy digests] SKIP: %s does not load\n", path);
        ERR_clear_error();
        OSSL_PROVIDER_unload(l1);
        OSSL_PROVIDER_unload(d0);
        OSSL_LIB_CTX_free(legacy_ref);
        OSSL_LIB_CTX_free(kc);
        return;
    }
    /* keycache serves HMAC there */
    mac = EVP_MAC_fetch(kc, "HMAC", NULL);
    CU_ASSERT_FATAL(mac != NULL);
    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_MAC_get0_provider(mac)),
                           KEYCACHE_PROVIDER_NAME);
    EVP_MAC_free(mac);
    kct_rec_run(pat_legacy_digests, legacy_ref, &def);
    pass0 = kct_counter_in(kc, KEYCACHE_PARAM_PASSTHROUGH);
    kct_rec_run(pat_legacy_digests, kc, &got);
    pass1 = kct_counter_in(kc, KEYCACHE_PARAM_PASSTHROUGH);
    CU_ASSERT(kct_rec_same("legacy digests", &def, &got));
    /* the MACs came out (not two equal failures) and keycache passed them */
    CU_ASSERT(strstr(def.buf, "MISMATCH") == NULL
              && strstr(def.buf, "ref ok") != NULL);
    CU_ASSERT(strstr(def.buf, "digestsign rc=1") != NULL);
    CU_ASSERT(strstr(def.buf, "HKDF-WHIRLPOOL rc=1") != NULL);
    CU_ASSERT(pass1 != UINT64_MAX && pass1 > pass0);
    kct_rec_free(&def);
    kct_rec_free(&got);
    OSSL_PROVIDER_unload(l2);
    OSSL_PROVIDER_unload(l1);
    OSSL_PROVIDER_unload(d0);
    OSSL_LIB_CTX_free(legacy_ref);
    legacy_ref = NULL;
    OSSL_LIB_CTX_free(kc);
}

/*
 * A provider of the application's that offers SHA2-256 under the default's
 * names ("kctestmd", built in by the test): its digest delegates to the
 * default's and counts its updates, so a record shows whose SHA-256 an HMAC
 * ran on.  The default's HMAC uses whichever digest the application's
 * library context resolves; keycache must too, and must not swap in its
 * own default's digest because the name matches.  The provider:
 * kct_testmd_algs (kc_test.c).
 */

/* the HMAC's query: keycache's, where the default properties prefer kctestmd */
static const char *other_md_hmac_q;

/* One MAC through a new context; the record says how often kctestmd ran. */
static void other_md_mac(REC *r, EVP_MAC *mac, const OSSL_PARAM *first,
                         const OSSL_PARAM *second, int k)
{
    EVP_MAC_CTX *ctx = new_ctx(mac, r);
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outl;
    int before = kct_testmd_updates;

    do_set(r, ctx, first);
    if (second != NULL)
        do_set(r, ctx, second);
    do_mac(r, ctx, keys[k], sizeof(keys[k]), NULL, msgs[2], msglens[2], out,
           &outl);
    rec_printf(r, "kctestmd updates %d\n", kct_testmd_updates - before);
    EVP_MAC_CTX_free(ctx);
}

static void pat_other_provider_md(OSSL_LIB_CTX *libctx, REC *r)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "HMAC", other_md_hmac_q);
    OSSL_PARAM none[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    OSSL_PARAM dflt[3] = {
        p_digest("SHA256"),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                         "provider=default", 0),
        OSSL_PARAM_END
    };
    OSSL_PARAM theirs[3] = {
        p_digest("SHA256"),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                         "provider=kctestmd", 0),
        OSSL_PARAM_END
    };
    int one = 1, i;
    OSSL_PARAM oneshot[2] = {
        OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_ONESHOT, &one),
        OSSL_PARAM_END
    };

    for (i = 0; i < 6; i++) {
        rec_printf(r, "-- round %d\n", i);
        other_md_mac(r, mac, none, NULL, 0);        /* the preferred: theirs */
        other_md_mac(r, mac, theirs, NULL, 1);
        other_md_mac(r, mac, dflt, NULL, 2);        /* the default's */
        /* resolved as the default's, then passed through before the key */
        other_md_mac(r, mac, dflt, oneshot, 3);
        /*
         * (No EVP_Q_mac here: OpenSSL 4 applies its query to the digest
         * too, so "provider=keycache" would find no SHA-256.)
         */
    }
    EVP_MAC_free(mac);
    ERR_clear_error();
}

static void test_other_provider_md(void)
{
    KCT_OTHER o;
    KCT_REC def = { 0 }, got = { 0 };
    uint64_t hits0, hits1;

    CU_ASSERT_FATAL(kct_testmd_begin());
    CU_ASSERT_FATAL(kct_other_start(&o, "kctestmd", OSSL_OP_DIGEST,
                                    kct_testmd_algs));
    /*
     * Theirs is the preferred SHA-256 where the default's is not asked for;
     * keycache's HMAC is then asked for by name (a query can state only one
     * preferred provider).
     */
    CU_ASSERT_FATAL(
        EVP_set_default_properties(o.ref, "?provider=kctestmd")
        && EVP_set_default_properties(o.kc, "?provider=kctestmd"));
    other_md_hmac_q = NULL;
    kct_rec_run(pat_other_provider_md, o.ref, &def);
    hits0 = kct_counter_in(o.kc, KEYCACHE_PARAM_HITS);
    other_md_hmac_q = "provider=" KEYCACHE_PROVIDER_NAME;
    kct_rec_run(pat_other_provider_md, o.kc, &got);
    hits1 = kct_counter_in(o.kc, KEYCACHE_PARAM_HITS);
    CU_ASSERT(kct_rec_same("another provider's SHA-256", &def, &got));
    /* the reference ran on theirs where it should, and on the default's */
    CU_ASSERT(strstr(def.buf, "kctestmd updates 0") != NULL
              && strstr(def.buf, "kctestmd updates 4") != NULL
              && strstr(def.buf, "MISMATCH") == NULL);
    /* the default's digest under provider=default is still cached */
    CU_ASSERT(hits1 != UINT64_MAX && hits1 > hits0);
    kct_rec_free(&def);
    kct_rec_free(&got);
    kct_other_stop(&o);
    kct_testmd_end();
}

/*
 * The default properties changed while keycache's HMAC knows SHA-256 as
 * the default's: from the change on, the preferred provider's SHA-256
 * runs as often as in the reference (contexts made before the change and
 * set after it too), and the default's again once the change is undone.
 */

/* the digest set on ctx */
static int props_set(EVP_MAC_CTX *ctx)
{
    OSSL_PARAM p[2] = { p_digest("SHA256"), OSSL_PARAM_END };

    return ctx != NULL && EVP_MAC_CTX_set_params(ctx, p);
}

/*
 * One HMAC-SHA256 on ctx with keys[k], the digest set first if set;
 * *calls += kctestmd's updates.
 */
static size_t props_mac(EVP_MAC_CTX *ctx, int set, int k, unsigned char *out,
                        int *calls)
{
    int before = kct_testmd_updates;
    size_t outl = 0;

    if (ctx == NULL || (set && !props_set(ctx))
        || !EVP_MAC_init(ctx, keys[k], sizeof(keys[k]), NULL)
        || !EVP_MAC_update(ctx, msgs[2], msglens[2])
        || !EVP_MAC_final(ctx, out, &outl, EVP_MAX_MD_SIZE))
        outl = 0;
    *calls += kct_testmd_updates - before;
    return outl;
}

/*
 * A new context per message on each side (NEW); or one context made
 * before the default properties are set to props, its digest set and its
 * key given after (MADE); or made and its digest set before, the key
 * given after (SET), which keeps the digest the set found; or the same
 * with a flag that passes it through set between (SET_PT).
 */
enum { PROPS_NEW, PROPS_MADE, PROPS_SET, PROPS_SET_PT };

static int props_change_round(KCT_OTHER *o, int mode, const char *props)
{
    EVP_MAC *macs[2] = {
        EVP_MAC_fetch(o->ref, "HMAC", NULL),
        EVP_MAC_fetch(o->kc, "HMAC", "provider=" KEYCACHE_PROVIDER_NAME)
    };
    EVP_MAC_CTX *ctx[2] = { NULL, NULL };
    unsigned char out[2][EVP_MAX_MD_SIZE];
    int calls[2] = { 0, 0 }, i, m, bad = 0, zero = 0;
    OSSL_PARAM oneshot[2] = {
        OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_ONESHOT, &zero),
        OSSL_PARAM_END
    };

    for (i = 0; mode != PROPS_NEW && i < 2; i++) {
        ctx[i] = macs[i] != NULL ? EVP_MAC_CTX_new(macs[i]) : NULL;
        if (mode >= PROPS_SET && !props_set(ctx[i]))
            bad++;
    }
    if (mode != PROPS_NEW && (!EVP_set_default_properties(o->ref, props)
                              || !EVP_set_default_properties(o->kc, props)))
        bad++;
    for (i = 0; mode == PROPS_SET_PT && i < 2; i++)
        if (ctx[i] == NULL || !EVP_MAC_CTX_set_params(ctx[i], oneshot))
            bad++;
    for (i = 0; i < 2; i++) {
        for (m = 0; m < (mode != PROPS_NEW ? 1 : 40); m++) {
            if (mode == PROPS_NEW)
                ctx[i] = macs[i] != NULL ? EVP_MAC_CTX_new(macs[i]) : NULL;
            if (props_mac(ctx[i], mode < PROPS_SET, m % 3, out[i],
                          &calls[i]) != 32)
                bad++;
            EVP_MAC_CTX_free(ctx[i]);
            ctx[i] = NULL;
        }
        EVP_MAC_free(macs[i]);
    }
    if (memcmp(out[0], out[1], 32) != 0)
        bad++;
    if (calls[0] != calls[1]) {
        fprintf(stderr, "\ntheir SHA-256: %d updates, the reference's %d "
                "(mode %d)\n", calls[1], calls[0], mode);
        bad++;
    }
    ERR_clear_error();
    return bad;
}

static void *props_change_main(void *arg)
{
    KCT_OTHER *o = arg;
    int bad = 0, before, mode;

    /*
     * The default's SHA-256 known and keys cached.  Preferred by name:
     * with none preferred, which of two SHA-256s a fetch finds is the
     * store's choice.
     */
    if (!EVP_set_default_properties(o->ref, "?provider=default")
        || !EVP_set_default_properties(o->kc, "?provider=default"))
        bad++;
    /* a thread's first contexts (keyed in the application's context) */
    bad += props_change_round(o, PROPS_SET, "?provider=kctestmd");
    bad += props_change_round(o, PROPS_SET, "?provider=default");
    before = kct_testmd_updates;
    bad += props_change_round(o, PROPS_NEW, NULL);
    bad += props_change_round(o, PROPS_NEW, NULL);
    if (kct_testmd_updates != before)
        bad++;
    for (mode = PROPS_MADE; mode <= PROPS_SET_PT; mode++) {
        bad += props_change_round(o, mode, "?provider=kctestmd");
        before = kct_testmd_updates;
        bad += props_change_round(o, PROPS_NEW, NULL);
        if (kct_testmd_updates == before)
            bad++;                      /* theirs never ran: nothing tested */
        bad += props_change_round(o, mode, "?provider=default");
        before = kct_testmd_updates;
        bad += props_change_round(o, PROPS_NEW, NULL);
        if (kct_testmd_updates != before)
            bad++;
    }
    EVP_set_default_properties(o->ref, "");
    EVP_set_default_properties(o->kc, "");
    OPENSSL_thread_stop();
    return bad != 0 ? NULL : arg;
}

/* under admit_after 1 (the tests' config) and the deployed 3 */
static void test_props_change(void)
{
    static const char *const lines[] = { "", "-admit_after\n" };
    KCT_OTHER o;
    pthread_t t;
    void *res;
    size_t i;

    CU_ASSERT_FATAL(kct_testmd_begin());
    for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        CU_ASSERT_FATAL(kct_other_start_conf(&o, "kctestmd", OSSL_OP_DIGEST,
                                             kct_testmd_algs, lines[i]));
        /* a thread of its own: a cache of its own */
        res = NULL;
        CU_ASSERT_FATAL(pthread_create(&t, NULL, props_change_main, &o) == 0);
        pthread_join(t, &res);
        CU_ASSERT_PTR_EQUAL(res, &o);
        kct_other_stop(&o);
    }
    kct_testmd_end();
}

/* CUnit wrappers: each pattern is its own test */

static void test_q_mac(void) { run_pattern(pat_q_mac, 1); }
static void test_ctx_per_msg(void) { run_pattern(pat_ctx_per_msg, 1); }
static void test_key_in_params(void) { run_pattern(pat_key_in_params, 1); }
static void test_reinit_null_key(void) { run_pattern(pat_reinit_null_key, 1); }
static void test_digest_order(void) { run_pattern(pat_digest_order, 0); }
static void test_digest_heap(void) { run_pattern(pat_digest_heap, 1); }
static void test_dup_mid(void) { run_pattern(pat_dup_mid, 1); }
static void test_alternating(void) { run_pattern(pat_alternating, 1); }
static void test_two_live(void) { run_pattern(pat_two_live, 1); }
static void test_inplace_key(void) { run_pattern(pat_inplace_key, 1); }
static void test_rekey_kept(void) { run_pattern(pat_rekey_kept, 1); }

/*
 * The same under the deployed admission (admit_after = 3), where a context
 * keyed again never gets its key admitted: it hits by the copy of the key
 * the wrapper makes at its second miss with it, not by a cache entry.
 */
static OSSL_LIB_CTX *deployed;
static KCT_REC deployed_rec;

/* on a thread of its own: a cache of its own, not one in bypass */
static void *rekey_deployed(void *arg)
{
    kct_rec_run(pat_rekey_kept, deployed, &deployed_rec);
    return arg;
}

static void test_rekey_kept_deployed(void)
{
    OSSL_LIB_CTX *kc = kct_keycache_conf("-" KEYCACHE_CONF_ADMIT_AFTER "\n");
    KCT_REC def = { 0 }, got = { 0 };
    uint64_t hits;
    pthread_t t;

    CU_ASSERT_PTR_NOT_NULL_FATAL(kc);
    hits = kct_counter_in(kc, KEYCACHE_PARAM_HITS);
    kct_rec_run(pat_rekey_kept, kct_default(), &def);
    deployed = kc;
    memset(&deployed_rec, 0, sizeof(deployed_rec));
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, rekey_deployed, NULL), 0);
    pthread_join(t, NULL);
    got = deployed_rec;
    CU_ASSERT(kct_rec_same("[pat_rekey_kept, admit_after 3]", &def, &got));
    /*
     * Messages 3 to 5 hit: the thread's first keying is not hashed
     * (hmac.c), the next two find the key again; the key changed in place
     * at 6 takes two misses more, and the digest changed at 12 passes the
     * context through for good.
     */
    CU_ASSERT_EQUAL(kct_counter_in(kc, KEYCACHE_PARAM_HITS), hits + 3);
    kct_rec_free(&def);
    kct_rec_free(&got);
    OSSL_LIB_CTX_free(kc);
}
/* on a thread of its own: its misses would leave this thread's cold */
static void test_many_keys(void)
{
    kct_rec_pattern("pat_many_keys", pat_many_keys, churn, 1,
                    served_by_keycache, 1);
}
static void test_key_lengths(void) { run_pattern(pat_key_lengths, 1); }
static void test_long_keys(void) { run_pattern(pat_long_keys, 1); }
static void test_tls_long_key(void) { run_pattern(pat_tls_long_key, 1); }
static void test_listed_digests(void) { run_pattern(pat_listed_digests, 0); }
static void test_offered_digests(void) { run_pattern(pat_offered_digests, 0); }
static void test_sizes(void) { run_pattern(pat_sizes, 0); }
static void test_long_key_offered(void)
{
    run_pattern(pat_long_key_offered, 0);
}
static void test_param_shapes(void) { run_pattern(pat_param_shapes, 0); }
static void test_unknown_digest(void) { run_pattern(pat_unknown_digest, 0); }
static void test_xof_digest(void) { run_pattern(pat_xof_digest, 0); }
static void test_flags(void) { run_pattern(pat_flags, 0); }
/* on a thread of their own: this thread's hit rate does not matter */
static void test_near_keys(void)
{
    kct_rec_pattern("pat_near_keys", pat_near_keys, churn, 1,
                    served_by_keycache, 1);
}
static void test_digest_prefix(void)
{
    kct_rec_pattern("pat_digest_prefix", pat_digest_prefix, churn, 1,
                    served_by_keycache, 1);
}

/*
 * Cold contexts: in a thread whose look-ups almost all miss, a new context
 * looks nothing up (hmac.c, setkey_cold()), one in 32 excepted.  The
 * patterns run there must give the default's records, while the thread's
 * hits and admissions (its misses counter) stay far below the contexts.
 */
static const struct {
    const char *name;
    pattern_fn fn;
} cold_pats[] = {
    { "pat_q_mac", pat_q_mac },
    { "pat_ctx_per_msg", pat_ctx_per_msg },
    { "pat_key_in_params", pat_key_in_params },
    { "pat_reinit_null_key", pat_reinit_null_key },
    { "pat_digest_order", pat_digest_order },
    { "pat_dup_mid", pat_dup_mid },
    { "pat_alternating", pat_alternating },
    { "pat_inplace_key", pat_inplace_key },
    { "pat_rekey_kept", pat_rekey_kept },
    { "pat_key_lengths", pat_key_lengths },
    { "pat_long_keys", pat_long_keys },
    { "pat_tls_long_key", pat_tls_long_key },
    { "pat_param_shapes", pat_param_shapes },
    { "pat_unknown_digest", pat_unknown_digest },
    { "pat_flags", pat_flags },
};
#define NCOLD (sizeof(cold_pats) / sizeof(cold_pats[0]))

typedef struct {
    KCT_REC rec[NCOLD];
    uint64_t lookups, contexts, forwarded;
    int hits_back, fwd_same;
} COLD_RUN;

/*
 * NFWD contexts keyed before their digest (which the default refuses, as
 * keycache must, with every later call forwarded): each a pass-through,
 * counted once whether it was made cold (counted when made) or not.
 */
#define NFWD 64
static uint64_t forwarded(OSSL_LIB_CTX *ctx, int *same)
{
    EVP_MAC *mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    EVP_MAC *dmac = EVP_MAC_fetch(kct_default(), "HMAC", NULL);
    uint64_t p0 = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);
    OSSL_PARAM p[2];
    EVP_MAC_CTX *c;
    int i, r, want;

    *same = mac != NULL && dmac != NULL;
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, keys[0],
                                             sizeof(keys[0]));
    p[1] = OSSL_PARAM_construct_end();
    for (i = 0; i < NFWD && *same; i++) {
        c = EVP_MAC_CTX_new(mac);
        r = c != NULL ? EVP_MAC_CTX_set_params(c, p) : -1;
        EVP_MAC_CTX_free(c);
        c = EVP_MAC_CTX_new(dmac);
        want = c != NULL ? EVP_MAC_CTX_set_params(c, p) : -2;
        EVP_MAC_CTX_free(c);
        *same = r == want;
    }
    ERR_clear_error();
    EVP_MAC_free(mac);
    EVP_MAC_free(dmac);
    return kct_counter(KEYCACHE_PARAM_PASSTHROUGH) - p0;
}

/* what a look-up counts: a hit, or a miss admitted */
static uint64_t lookups(void)
{
    return kct_counter(KEYCACHE_PARAM_HITS)
           + kct_counter(KEYCACHE_PARAM_MISSES);
}

static void *cold_main(void *arg)
{
    COLD_RUN *x = arg;
    unsigned char key[32], out[EVP_MAX_MD_SIZE];
    uint64_t l0, p0, h0;
    size_t outl, i;

    /* a new key every message: the thread's cache stops looking up */
    for (i = 0; i < 600; i++) {
        kct_fill(key, sizeof(key), 30000 + (uint32_t)i);
        EVP_Q_mac(kct_keycache(), "HMAC", NULL, "SHA256", NULL, key,
                  sizeof(key), msgs[1], msglens[1], out, sizeof(out), &outl);
    }
    ERR_clear_error();
    l0 = lookups();
    p0 = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);
    for (i = 0; i < NCOLD; i++)
        kct_rec_run(cold_pats[i].fn, kct_keycache(), &x->rec[i]);
    x->lookups = lookups() - l0;
    /* a cold context is counted as a pass-through when it is made */
    x->contexts = kct_counter(KEYCACHE_PARAM_PASSTHROUGH) - p0;
    x->forwarded = forwarded(kct_keycache(), &x->fwd_same);
    /* one key from now on: hits come back within a few windows */
    h0 = kct_counter(KEYCACHE_PARAM_HITS);
    for (i = 0; i < 5000 && kct_counter(KEYCACHE_PARAM_HITS) == h0; i++)
        EVP_Q_mac(kct_keycache(), "HMAC", NULL, "SHA256", NULL, keys[0],
                  sizeof(keys[0]), msgs[1], msglens[1], out, sizeof(out),
                  &outl);
    x->hits_back = kct_counter(KEYCACHE_PARAM_HITS) > h0;
    OPENSSL_thread_stop();
    return NULL;
}

static void test_cold(void)
{
    static COLD_RUN got;
    KCT_REC def = { 0 };
    pthread_t t;
    size_t i;

    memset(&got, 0, sizeof(got));
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, cold_main, &got), 0);
    pthread_join(t, NULL);
    for (i = 0; i < NCOLD; i++) {
        kct_rec_run(cold_pats[i].fn, kct_default(), &def);
        CU_ASSERT(kct_rec_same(cold_pats[i].name, &def, &got.rec[i]));
        kct_rec_free(&def);
        kct_rec_free(&got.rec[i]);
    }
    if (got.lookups * 4 > got.contexts)
        fprintf(stderr, "\ncold thread: %llu look-ups for %llu contexts\n",
                (unsigned long long)got.lookups,
                (unsigned long long)got.contexts);
    CU_ASSERT(got.contexts >= 200);
    CU_ASSERT(got.lookups * 4 <= got.contexts);
    CU_ASSERT(got.fwd_same);
    if (got.forwarded != NFWD)
        fprintf(stderr, "\ncold thread: %llu pass-throughs for %d contexts\n",
                (unsigned long long)got.forwarded, NFWD);
    CU_ASSERT_EQUAL(got.forwarded, NFWD);
    CU_ASSERT(got.hits_back);
}

/* RFC 4231 test case 2 on both contexts through the EVP_MAC_CTX API too */
static void test_rfc4231_case2(void)
{
    OSSL_LIB_CTX *ctxs[2] = { kct_default(), kct_keycache() };
    unsigned char out[EVP_MAX_MD_SIZE], *expect;
    size_t outl, explen;
    int i, rep;

    expect = kct_unhex(jefe_mac, &explen);
    CU_ASSERT_FATAL(expect != NULL && explen == 32);
    for (i = 0; i < 2; i++) {
        EVP_MAC *mac = EVP_MAC_fetch(ctxs[i], "HMAC", NULL);
        OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };

        CU_ASSERT_PTR_NOT_NULL_FATAL(mac);
        for (rep = 0; rep < 3; rep++) {
            EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);

            outl = 0;
            CU_ASSERT(EVP_MAC_init(ctx, (const unsigned char *)"Jefe", 4,
                                   params));
            CU_ASSERT(EVP_MAC_update(ctx, (const unsigned char *)jefe_msg,
                                     strlen(jefe_msg)));
            CU_ASSERT(EVP_MAC_final(ctx, out, &outl, sizeof(out)));
            CU_ASSERT(outl == explen && memcmp(out, expect, explen) == 0);
            EVP_MAC_CTX_free(ctx);
        }
        EVP_MAC_free(mac);
    }
    OPENSSL_free(expect);
}

/* 8 threads sharing nothing but keys */

#define NTHREADS 8
#define THREAD_OPS 2000
#define TKEYS 12
#define TMSGS 8
#define TMDS 3

static const char *tmds[TMDS] = { "SHA256", "SHA1", "SHA512" };
static const size_t tkeylens[TKEYS] = {
    16, 32, 20, 64, 1, 0, 48, 128, 100, 65, 200, 32
};
static const size_t tmsglens[TMSGS] = { 0, 1, 13, 55, 64, 65, 200, 1000 };
static unsigned char tkeys[TKEYS][200];
static unsigned char tmsgs[TMSGS][1000];
static unsigned char tref[TMDS][TKEYS][TMSGS][EVP_MAX_MD_SIZE];
static size_t treflen[TMDS];

typedef struct {
    int id;
    int mismatches;
    int failures;
} THREAD_ARG;

static int thread_mac(EVP_MAC *mac, EVP_MAC_CTX *reused, int api, int d,
                      int k, int m, unsigned char *out, size_t *outl)
{
    OSSL_PARAM params[2] = { p_digest(tmds[d]), OSSL_PARAM_END };
    OSSL_PARAM kp[3] = { p_key(tkeys[k], tkeylens[k]), p_digest(tmds[d]),
                         OSSL_PARAM_END };
    EVP_MAC_CTX *ctx;
    int ok;

    if (api == 0)
        return EVP_Q_mac(NULL, "HMAC", NULL, tmds[d], NULL, tkeys[k],
                         tkeylens[k], tmsgs[m], tmsglens[m], out,
                         EVP_MAX_MD_SIZE, outl) != NULL;
    if (api == 3)
        return EVP_MAC_init(reused, tkeys[k], tkeylens[k], params)
               && EVP_MAC_update(reused, tmsgs[m], tmsglens[m])
               && EVP_MAC_final(reused, out, outl, EVP_MAX_MD_SIZE);
    ctx = EVP_MAC_CTX_new(mac);
    if (api == 1)
        ok = EVP_MAC_init(ctx, tkeys[k], tkeylens[k], params);
    else
        ok = EVP_MAC_CTX_set_params(ctx, kp)
             && EVP_MAC_init(ctx, NULL, 0, NULL);
    ok = ok && EVP_MAC_update(ctx, tmsgs[m], tmsglens[m])
         && EVP_MAC_final(ctx, out, outl, EVP_MAX_MD_SIZE);
    EVP_MAC_CTX_free(ctx);
    return ok;
}

static void *thread_main(void *varg)
{
    THREAD_ARG *arg = varg;
    uint32_t x = 0x9e3779b9u * (uint32_t)(arg->id + 1);
    unsigned char out[EVP_MAX_MD_SIZE];
    EVP_MAC *mac;
    EVP_MAC_CTX *reused;
    int i;

    /* the default library context is per thread */
    kct_use(kct_keycache());
    mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    reused = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    if (reused == NULL) {
        arg->failures = THREAD_OPS;
        goto end;
    }
    for (i = 0; i < THREAD_OPS; i++) {
        int d, k, m, api;
        size_t outl = 0;

        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        /* a few hot keys per thread plus the shared ones */
        k = (x >> 4) % 4 == 0 ? (int)((x >> 8) % TKEYS)
                              : (arg->id + (int)((x >> 8) % 3)) % TKEYS;
        d = (int)((x >> 16) % TMDS);
        m = (int)((x >> 20) % TMSGS);
        api = (int)((x >> 24) % 4);
        if (!thread_mac(mac, reused, api, d, k, m, out, &outl))
            arg->failures++;
        else if (outl != treflen[d] || memcmp(out, tref[d][k][m], outl) != 0)
            arg->mismatches++;
    }
 end:
    ERR_clear_error();
    EVP_MAC_CTX_free(reused);
    EVP_MAC_free(mac);
    kct_use(NULL);
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[NTHREADS];
    THREAD_ARG args[NTHREADS];
    uint64_t hits0;
    int d, k, m, i;

    /* references from the default provider, before any thread starts */
    for (k = 0; k < TKEYS; k++)
        kct_fill(tkeys[k], sizeof(tkeys[k]), 700 + k);
    for (m = 0; m < TMSGS; m++)
        kct_fill(tmsgs[m], sizeof(tmsgs[m]), 800 + m);
    for (d = 0; d < TMDS; d++)
        for (k = 0; k < TKEYS; k++)
            for (m = 0; m < TMSGS; m++)
                CU_ASSERT_PTR_NOT_NULL_FATAL(
                    EVP_Q_mac(kct_default(), "HMAC", NULL, tmds[d], NULL,
                              tkeys[k], tkeylens[k], tmsgs[m], tmsglens[m],
                              tref[d][k][m], EVP_MAX_MD_SIZE, &treflen[d]));

    CU_ASSERT_FATAL(served_by_keycache());
    hits0 = kct_counter(KEYCACHE_PARAM_HITS);
    for (i = 0; i < NTHREADS; i++) {
        args[i].id = i;
        args[i].mismatches = args[i].failures = 0;
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, thread_main,
                                       &args[i]) == 0);
    }
    for (i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(args[i].failures, 0);
        CU_ASSERT_EQUAL(args[i].mismatches, 0);
        if (args[i].failures != 0 || args[i].mismatches != 0)
            fprintf(stderr, "\nthread %d: %d failures, %d wrong MACs\n", i,
                    args[i].failures, args[i].mismatches);
    }
    CU_ASSERT(kct_counter(KEYCACHE_PARAM_HITS) > hits0);
}

/* A context keyed on one thread and finished on another after it exited */

typedef struct {
    EVP_MAC_CTX *ctx;
    int ok;
} HANDOFF;

static void *handoff_main(void *varg)
{
    HANDOFF *h = varg;
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    EVP_MAC *mac;

    kct_use(kct_keycache());
    mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    h->ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    /* twice, so the second init is served from this thread's cache */
    h->ok = h->ctx != NULL
            && EVP_MAC_init(h->ctx, keys[0], sizeof(keys[0]), params)
            && EVP_MAC_init(h->ctx, keys[0], sizeof(keys[0]), params)
            && EVP_MAC_update(h->ctx, msgs[3], 100);
    EVP_MAC_free(mac);
    ERR_clear_error();
    kct_use(NULL);
    return NULL;
}

static void test_thread_handoff(void)
{
    OSSL_PARAM params[2] = { p_digest("SHA256"), OSSL_PARAM_END };
    unsigned char out[EVP_MAX_MD_SIZE];
    HANDOFF h = { NULL, 0 };
    size_t outl = 0;
    REC r = { 0 };
    pthread_t th;

    CU_ASSERT_FATAL(served_by_keycache());
    CU_ASSERT_FATAL(pthread_create(&th, NULL, handoff_main, &h) == 0);
    pthread_join(th, NULL);
    CU_ASSERT_FATAL(h.ok);
    kct_use(kct_keycache());
    /* finish the message begun on the dead thread */
    CU_ASSERT(EVP_MAC_update(h.ctx, msgs[3] + 100, 200));
    CU_ASSERT(EVP_MAC_final(h.ctx, out, &outl, sizeof(out)));
    CU_ASSERT(check_ref(&r, "SHA256", keys[0], sizeof(keys[0]), msgs[3], 300,
                        out, outl));
    /* keyless re-init, then re-keyed on this thread */
    CU_ASSERT(EVP_MAC_init(h.ctx, NULL, 0, NULL));
    CU_ASSERT(EVP_MAC_update(h.ctx, msgs[2], msglens[2]));
    CU_ASSERT(EVP_MAC_final(h.ctx, out, &outl, sizeof(out)));
    CU_ASSERT(check_ref(&r, "SHA256", keys[0], sizeof(keys[0]), msgs[2],
                        msglens[2], out, outl));
    CU_ASSERT(EVP_MAC_init(h.ctx, keys[1], sizeof(keys[1]), params));
    CU_ASSERT(EVP_MAC_update(h.ctx, msgs[2], msglens[2]));
    CU_ASSERT(EVP_MAC_final(h.ctx, out, &outl, sizeof(out)));
    CU_ASSERT(check_ref(&r, "SHA256", keys[1], sizeof(keys[1]), msgs[2],
                        msglens[2], out, outl));
    EVP_MAC_CTX_free(h.ctx);
    ERR_clear_error();
    kct_use(NULL);
    rec_free(&r);
}

static int suite_init(void)
{
    int n = 0;

    init_data();
    EVP_MD_do_all_provided(kct_default(), collect_md, &n);
    offered_mds[n] = NULL;
    return n > 0 ? 0 : 1;
}

static int suite_clean(void)
{
    int i;

    for (i = 0; offered_mds[i] != NULL; i++) {
        free(offered_mds[i]);
        offered_mds[i] = NULL;
    }
    return 0;
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("hmac_patterns", suite_init, suite_clean);

    CU_add_test(s, "RFC 4231 case 2", test_rfc4231_case2);
    CU_add_test(s, "EVP_Q_mac on the thread default", test_q_mac);
    CU_add_test(s, "new EVP_MAC_CTX per message", test_ctx_per_msg);
    CU_add_test(s, "key as set_params key param", test_key_in_params);
    CU_add_test(s, "re-init with NULL key", test_reinit_null_key);
    CU_add_test(s, "digest set before key / at init", test_digest_order);
    CU_add_test(s, "digest from exact heap buffers, NUL counted or not",
                test_digest_heap);
    CU_add_test(s, "EVP_MAC_CTX_dup mid-message", test_dup_mid);
    CU_add_test(s, "alternating keys", test_alternating);
    CU_add_test(s, "two live contexts, same key", test_two_live);
    CU_add_test(s, "key rewritten in place", test_inplace_key);
    CU_add_test(s, "one context keyed again per message", test_rekey_kept);
    CU_add_test(s, "the same, deployed admission", test_rekey_kept_deployed);
    CU_add_test(s, "more keys than the cache holds", test_many_keys);
    CU_add_test(s, "key lengths", test_key_lengths);
    CU_add_test(s, "keys longer than the cache holds", test_long_keys);
    CU_add_test(s, "TLS mode under a key longer than the cache holds",
                test_tls_long_key);
    CU_add_test(s, "keys one byte apart, every position", test_near_keys);
    CU_add_test(s, "digest names a prefix of the last", test_digest_prefix);
    CU_add_test(s, "listed digests", test_listed_digests);
    CU_add_test(s, "every digest default offers", test_offered_digests);
    CU_add_test(s, "mac and block size", test_sizes);
    CU_add_test(s, "a long key with every digest default offers",
                test_long_key_offered);
    CU_add_test(s, "parameter lists and odd key params", test_param_shapes);
    CU_add_test(s, "unknown digest", test_unknown_digest);
    CU_add_test(s, "XOF digest", test_xof_digest);
    CU_add_test(s, "KDF digests, unknown ones too", test_kdf_digests);
    CU_add_test(s, "digests of another provider (legacy)",
                test_legacy_digests);
    CU_add_test(s, "a digest of another provider, under the default's name",
                test_other_provider_md);
    CU_add_test(s, "the default properties change under a known digest",
                test_props_change);
    CU_add_test(s, "noinit/oneshot/tls params do not leak", test_flags);
    CU_add_test(s, "cold contexts in a miss-heavy thread", test_cold);
    CU_add_test(s, "8 threads, mixed keys", test_threads);
    CU_add_test(s, "context outlives its thread", test_thread_handoff);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
