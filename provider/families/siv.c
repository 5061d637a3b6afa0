/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-SIV (RFC 5297): templates are keycache's own keyed contexts, S2V and
 * CTR on the default's AES-CBC and AES-CTR contexts directly, state for
 * state as its siv128.c and cipher_aes_siv.c (whose EVP copies cost 13
 * atomic reference counts per hit).  A call failing in the default's own
 * code goes to a default context, so that the error is its own.
 */
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evperr.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>

#include "families/families.h"

/* keying resets a speed flag set before it, as in the default */
static const char *const siv_shape[] = {
    OSSL_CIPHER_PARAM_SPEED, OSSL_CIPHER_PARAM_KEYLEN, NULL
};

#define SIV_BLOCK 16
/* CBC output that CMAC throws away, per call to the cipher */
#define SIV_CHUNK 256

typedef struct {
    const KC_CFAM *f;
    KC_PROVCTX *pctx;
    void *cbc;                  /* the default's AES-CBC, key K1: CMAC */
    void *ctr;                  /* the default's AES-CTR, key K2 */
    size_t keylen;              /* K1 || K2 */
    int enc;
    int final_ret;              /* the default's: 0 once a message is done */
    int crypto_ok;              /* messages left; < 0 with the speed flag */
    unsigned char k1[SIV_BLOCK], k2[SIV_BLOCK];   /* CMAC's subkeys */
    unsigned char d[SIV_BLOCK];                   /* S2V's running value */
    unsigned char tag[SIV_BLOCK];
} KC_SIV_CTX;

static const unsigned char zero_block[SIV_BLOCK];

static const KC_CIPHER_FNS *cbc_fns(const KC_SIV_CTX *s)
{
    return &s->f->sub[0];
}

static const KC_CIPHER_FNS *ctr_fns(const KC_SIV_CTX *s)
{
    return &s->f->sub[1];
}

/* Doubling in GF(2^128), big-endian, as CMAC and S2V define it. */
static void dbl(unsigned char b[SIV_BLOCK])
{
    unsigned char carry = (unsigned char)(0 - (b[0] >> 7));
    size_t i;

    for (i = 0; i < SIV_BLOCK - 1; i++)
        b[i] = (unsigned char)((b[i] << 1) | (b[i + 1] >> 7));
    b[SIV_BLOCK - 1] =
        (unsigned char)((b[SIV_BLOCK - 1] << 1) ^ (carry & 0x87));
}

static void xor_block(unsigned char *x, const unsigned char *y)
{
    size_t i;

    for (i = 0; i < SIV_BLOCK; i++)
        x[i] ^= y[i];
}

/* ---- CMAC with K1 (SP 800-38B), on the CBC context ---- */

/* A CMAC in progress: the last block waits in blk; the chain is CBC's IV. */
typedef struct {
    unsigned char blk[SIV_BLOCK];
    size_t n;
    size_t used;                /* how much of the scratch holds output */
    unsigned char scratch[SIV_CHUNK];
} KC_CMAC_RUN;

static int cmac_start(const KC_SIV_CTX *s, KC_CMAC_RUN *m)
{
    m->n = 0;
    m->used = 0;
    return cbc_fns(s)->einit(s->cbc, NULL, 0, zero_block, SIV_BLOCK, NULL);
}

/* len bytes, a multiple of the block, through CBC; only the chain is kept */
static int cmac_blocks(const KC_SIV_CTX *s, KC_CMAC_RUN *m,
                       const unsigned char *in, size_t len)
{
    size_t n, outl;

    for (; len > 0; in += n, len -= n) {
        n = len > SIV_CHUNK ? SIV_CHUNK : len;
        if (!cbc_fns(s)->cipher(s->cbc, m->scratch, &outl, SIV_CHUNK, in, n))
            return 0;
        if (n > m->used)
            m->used = n;
    }
    return 1;
}

static int cmac_update(const KC_SIV_CTX *s, KC_CMAC_RUN *m,
                       const unsigned char *in, size_t len)
{
    size_t take;

    while (len > 0) {
        if (m->n == SIV_BLOCK) {
            if (!cmac_blocks(s, m, m->blk, SIV_BLOCK))
                return 0;
            m->n = 0;
        }
        if (m->n == 0 && len > SIV_BLOCK) {
            /* whole blocks straight from the input, all but the last */
            take = (len - 1) / SIV_BLOCK * SIV_BLOCK;
            if (!cmac_blocks(s, m, in, take))
                return 0;
        } else {
            take = SIV_BLOCK - m->n < len ? SIV_BLOCK - m->n : len;
            memcpy(m->blk + m->n, in, take);
            m->n += take;
        }
        in += take;
        len -= take;
    }
    return 1;
}

static int cmac_final(const KC_SIV_CTX *s, KC_CMAC_RUN *m,
                      unsigned char out[SIV_BLOCK])
{
    size_t outl;
    int ok;

    if (m->n == SIV_BLOCK) {
        xor_block(m->blk, s->k1);
    } else {
        m->blk[m->n] = 0x80;
        memset(m->blk + m->n + 1, 0, SIV_BLOCK - m->n - 1);
        xor_block(m->blk, s->k2);
    }
    ok = cbc_fns(s)->cipher(s->cbc, out, &outl, SIV_BLOCK, m->blk, SIV_BLOCK);
    OPENSSL_cleanse(m->blk, sizeof(m->blk));
    if (m->used > 0)
        OPENSSL_cleanse(m->scratch, m->used);
    return ok;
}

/* CMAC(a || b) */
static int cmac(const KC_SIV_CTX *s, const unsigned char *a, size_t alen,
                const unsigned char *b, size_t blen,
                unsigned char out[SIV_BLOCK])
{
    KC_CMAC_RUN m;

    if (!cmac_start(s, &m))
        return 0;
    if (!cmac_update(s, &m, a, alen) || !cmac_update(s, &m, b, blen)) {
        (void)cmac_final(s, &m, out);
        OPENSSL_cleanse(out, SIV_BLOCK);
        return 0;
    }
    return cmac_final(s, &m, out);
}

/* ---- SIV: RFC 5297, in the default's steps ---- */

/* The default's initkey: CBC and CTR keyed, D = CMAC(<zero>). */
static int rekey(KC_SIV_CTX *s, const unsigned char *key)
{
    size_t half = s->keylen / 2;
    unsigned char l[SIV_BLOCK];
    size_t outl;
    int ok;

    memset(s->d, 0, sizeof(s->d));
    ok = cbc_fns(s)->einit(s->cbc, key, half, zero_block, SIV_BLOCK, NULL)
         && ctr_fns(s)->einit(s->ctr, key + half, half, NULL, 0, NULL)
         /* L = E(K1, 0), then the subkeys */
         && cbc_fns(s)->cipher(s->cbc, l, &outl, SIV_BLOCK, zero_block,
                               SIV_BLOCK);
    if (ok) {
        dbl(l);
        memcpy(s->k1, l, SIV_BLOCK);
        dbl(l);
        memcpy(s->k2, l, SIV_BLOCK);
        ok = cmac(s, zero_block, SIV_BLOCK, NULL, 0, s->d);
    }
    OPENSSL_cleanse(l, sizeof(l));
    s->final_ret = -1;
    s->crypto_ok = 1;
    return ok;
}

/* The default's AAD: D = dbl(D) xor CMAC(aad). */
static int add_aad(KC_SIV_CTX *s, const unsigned char *aad, size_t len)
{
    unsigned char t[SIV_BLOCK];

    dbl(s->d);
    if (!cmac(s, aad, len, NULL, 0, t))
        return 0;
    xor_block(s->d, t);
    OPENSSL_cleanse(t, sizeof(t));
    return 1;
}

/*
 * S2V's last step into v: CMAC(P xorend D) for 16 bytes or more, else
 * CMAC(dbl(D) xor pad(P)), leaving D doubled as the default's does.
 */
static int s2v(KC_SIV_CTX *s, const unsigned char *p, size_t len,
               unsigned char v[SIV_BLOCK])
{
    unsigned char t[SIV_BLOCK];
    int ok;

    if (len >= SIV_BLOCK) {
        memcpy(t, p + len - SIV_BLOCK, SIV_BLOCK);
        xor_block(t, s->d);
        ok = cmac(s, p, len - SIV_BLOCK, t, SIV_BLOCK, v);
    } else {
        memset(t, 0, sizeof(t));
        if (len > 0)
            memcpy(t, p, len);
        t[len] = 0x80;
        dbl(s->d);
        xor_block(t, s->d);
        ok = cmac(s, t, SIV_BLOCK, NULL, 0, v);
    }
    OPENSSL_cleanse(t, sizeof(t));
    return ok;
}

/* CTR from Q (V with two bits cleared), as EVP would: len as an int. */
static int ctr(KC_SIV_CTX *s, const unsigned char v[SIV_BLOCK],
               unsigned char *out, const unsigned char *in, size_t len)
{
    unsigned char q[SIV_BLOCK];
    int n = (int)len, ok;
    size_t outl;

    if (n < 0) {
        ERR_raise(ERR_LIB_EVP, EVP_R_INVALID_LENGTH);
        return 0;
    }
    memcpy(q, v, SIV_BLOCK);
    q[8] &= 0x7f;
    q[12] &= 0x7f;
    ok = ctr_fns(s)->einit(s->ctr, NULL, 0, q, SIV_BLOCK, NULL)
         && ctr_fns(s)->update(s->ctr, out, &outl, (size_t)n, in, (size_t)n);
    OPENSSL_cleanse(q, sizeof(q));
    return ok;
}

static int encrypt(KC_SIV_CTX *s, const unsigned char *in, unsigned char *out,
                   size_t len)
{
    unsigned char v[SIV_BLOCK];

    if (kc_quirk(s->f->quirks, KC_Q_TRY_REOPENS))
        s->final_ret = -1;
    /* one message per keying, unless the speed flag is set */
    if (s->crypto_ok == 0)
        return 0;
    s->crypto_ok--;
    if (!s2v(s, in, len, v))
        return 0;
    memcpy(s->tag, v, SIV_BLOCK);
    if (!ctr(s, v, out, in, len))
        return 0;
    s->final_ret = 0;
    return 1;
}

static int decrypt(KC_SIV_CTX *s, const unsigned char *in, unsigned char *out,
                   size_t len)
{
    unsigned char v[SIV_BLOCK];
    int ok;

    if (kc_quirk(s->f->quirks, KC_Q_TRY_REOPENS))
        s->final_ret = -1;
    if (s->crypto_ok == 0)
        return 0;
    s->crypto_ok--;
    if (!ctr(s, s->tag, out, in, len) || !s2v(s, out, len, v))
        return 0;
    ok = CRYPTO_memcmp(v, s->tag, SIV_BLOCK) == 0;
    OPENSSL_cleanse(v, sizeof(v));
    if (!ok) {
        OPENSSL_cleanse(out, len);
        return 0;
    }
    s->final_ret = 0;
    return 1;
}

/* ---- What the default says ---- */

/* The default's, unkeyed, in this direction: no refusal needs a key. */
static void *scratch(const KC_SIV_CTX *s)
{
    return kc_cipher_new_init(s->pctx->inner_provctx, &s->f->fns, s->enc,
                              NULL, 0, NULL);
}

/* The default refuses params: its return value and errors. */
static KC_NOINLINE int default_set(const KC_SIV_CTX *s,
                                   const OSSL_PARAM params[])
{
    void *t = scratch(s);
    int r;

    if (t == NULL)
        return 0;
    r = s->f->fns.set_ctx_params(t, params);
    s->f->fns.freectx(t);
    return r;
}

/* The default refuses a key: its errors. */
static KC_NOINLINE int default_init(const KC_SIV_CTX *s,
                                    const unsigned char *key, size_t keylen)
{
    void *t = scratch(s);

    if (t == NULL)
        return 0;
    (void)(s->enc ? s->f->fns.einit : s->f->fns.dinit)(t, key, keylen, NULL,
                                                       0, NULL);
    s->f->fns.freectx(t);
    return 0;
}

/* The default refuses an update before it looks at the context. */
static KC_NOINLINE int default_update(const KC_SIV_CTX *s,
                                      unsigned char *out, size_t *outl,
                                      size_t outsize,
                                      const unsigned char *in, size_t inl)
{
    void *t = scratch(s);

    if (t == NULL)
        return 0;
    (void)s->f->fns.update(t, out, outl, outsize, in, inl);
    s->f->fns.freectx(t);
    return 0;
}

/* A default context with this tag and direction answers (set decrypting). */
static KC_NOINLINE int default_get(const KC_SIV_CTX *s, OSSL_PARAM params[])
{
    const KC_CIPHER_FNS *m = &s->f->fns;
    OSSL_PARAM p[2];
    void *t;
    int r = 0;

    p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                             (void *)s->tag, SIV_BLOCK);
    p[1] = OSSL_PARAM_construct_end();
    if ((t = kc_cipher_new_init(s->pctx->inner_provctx, m, 0, NULL, 0, p))
        == NULL)
        return 0;
    if (!s->enc || m->einit(t, NULL, 0, NULL, 0, NULL))
        r = m->get_ctx_params(t, params);
    m->freectx(t);
    return r;
}

/* ---- The keyed context's functions ---- */

static void siv_free(void *vs)
{
    KC_SIV_CTX *s = vs;

    if (s == NULL)
        return;
    if (s->cbc != NULL)
        cbc_fns(s)->freectx(s->cbc);
    if (s->ctr != NULL)
        ctr_fns(s)->freectx(s->ctr);
    OPENSSL_clear_free(s, sizeof(*s));
}

static void *siv_dup(void *vsrc)
{
    const KC_SIV_CTX *src = vsrc;
    KC_SIV_CTX *dst = OPENSSL_malloc(sizeof(*dst));

    if (dst == NULL)
        return NULL;
    *dst = *src;
    dst->cbc = cbc_fns(src)->dupctx(src->cbc);
    dst->ctr = ctr_fns(src)->dupctx(src->ctr);
    if (dst->cbc == NULL || dst->ctr == NULL) {
        siv_free(dst);
        return NULL;
    }
    return dst;
}

/*
 * The default's aes_siv_set_ctx_params(), in its order: the first of each
 * name, the tag only when decrypting (encrypting, a tag ends the call
 * successfully), the speed flag, the key length.  A failure is the
 * default's to say, after what came before was set, as there.
 */
static int siv_set_ctx_params(void *vs, const OSSL_PARAM params[])
{
    KC_SIV_CTX *s = vs;
    const OSSL_PARAM *p, *tag = NULL, *speed = NULL, *klen = NULL;
    unsigned int sp;
    size_t kl;
    int twice = 0, sp_ok, kl_ok;

    if (params == NULL || params[0].key == NULL) {
        if (kc_quirk(s->f->quirks, params == NULL ? KC_Q_NULL_REOPENS
                                                  : KC_Q_EMPTY_REOPENS))
            s->final_ret = -1;
        return 1;
    }
    for (p = params; p->key != NULL; p++) {
        const OSSL_PARAM **slot =
            kc_name_is(p->key, OSSL_CIPHER_PARAM_AEAD_TAG) ? &tag
            : kc_name_is(p->key, OSSL_CIPHER_PARAM_SPEED) ? &speed
            : kc_name_is(p->key, OSSL_CIPHER_PARAM_KEYLEN) ? &klen
            : NULL;

        if (slot == NULL)
            continue;
        if (*slot != NULL)
            twice = 1;
        else
            *slot = p;
    }
    if (twice && kc_quirk(s->f->quirks, KC_Q_REPEATS_FAIL))
        return default_set(s, params);
    if (tag != NULL) {
        if (s->enc)
            return 1;
        if (tag->data_type != OSSL_PARAM_OCTET_STRING
            || tag->data_size != SIV_BLOCK || tag->data == NULL)
            return default_set(s, params);
        memcpy(s->tag, tag->data, SIV_BLOCK);
    }
    /* the values as the default reads them (reading sets nothing) */
    if (speed != NULL || klen != NULL) {
        ERR_set_mark();
        sp_ok = speed == NULL || OSSL_PARAM_get_uint(speed, &sp);
        kl_ok = klen == NULL || OSSL_PARAM_get_size_t(klen, &kl);
        ERR_pop_to_mark();
    }
    if (speed != NULL) {
        if (!sp_ok)
            return default_set(s, params);
        s->crypto_ok = sp == 1 ? -1 : 1;
    }
    if (klen != NULL && (!kl_ok || kl != s->keylen))
        return default_set(s, params);
    if (kc_quirk(s->f->quirks, KC_Q_SET_REOPENS))
        s->final_ret = -1;
    return 1;
}

/*
 * EVP's lone queries answered here: the tag after encrypting, key and tag
 * lengths, names the default does not know (SIV has no IV length).
 */
static int siv_get_ctx_params(void *vs, OSSL_PARAM params[])
{
    KC_SIV_CTX *s = vs;
    OSSL_PARAM *p = params;

    if (p == NULL || p[0].key == NULL || p[1].key != NULL)
        return default_get(s, params);
    if (kc_name_is(p->key, OSSL_CIPHER_PARAM_AEAD_TAG)) {
        if (!s->enc || p->data_type != OSSL_PARAM_OCTET_STRING
            || p->data_size != SIV_BLOCK || p->data == NULL)
            return default_get(s, params);
        memcpy(p->data, s->tag, SIV_BLOCK);
        p->return_size = SIV_BLOCK;
        return 1;
    }
    if (kc_name_is(p->key, OSSL_CIPHER_PARAM_KEYLEN)
        || kc_name_is(p->key, OSSL_CIPHER_PARAM_AEAD_TAGLEN)) {
        if (p->data_type != OSSL_PARAM_UNSIGNED_INTEGER || p->data == NULL
            || p->data_size != sizeof(size_t))
            return default_get(s, params);
        return OSSL_PARAM_set_size_t(p, p->key[0] == 'k' ? s->keylen
                                                         : SIV_BLOCK);
    }
    return 1;
}

static int siv_init(KC_SIV_CTX *s, int enc, const unsigned char *key,
                    size_t keylen, const OSSL_PARAM params[])
{
    s->enc = enc;
    if (key != NULL) {
        if (keylen != s->keylen)
            return default_init(s, key, keylen);
        if (!rekey(s, key))
            return 0;
    }
    return siv_set_ctx_params(s, params);
}

static int siv_einit(void *vs, const unsigned char *key, size_t keylen,
                     const unsigned char *iv, size_t ivlen,
                     const OSSL_PARAM params[])
{
    return siv_init(vs, 1, key, keylen, params);
}

static int siv_dinit(void *vs, const unsigned char *key, size_t keylen,
                     const unsigned char *iv, size_t ivlen,
                     const OSSL_PARAM params[])
{
    return siv_init(vs, 0, key, keylen, params);
}

/*
 * The default's siv_cipher(): data without output is AAD, with output the
 * message (one per keying), no data the final's status.
 */
static int siv_cipher(void *vs, unsigned char *out, size_t *outl,
                      size_t outsize, const unsigned char *in, size_t inl)
{
    KC_SIV_CTX *s = vs;
    int ok;

    if (out != NULL) {
        if (inl == 0 && !kc_quirk(s->f->quirks, KC_Q_EMPTY_IS_MESSAGE)) {
            if (outl != NULL)
                *outl = 0;
            return 1;
        }
        if (outsize < inl)
            return default_update(s, out, outl, outsize, in, inl);
    }
    if (in == NULL)
        ok = s->final_ret == 0;
    else if (out == NULL)
        ok = add_aad(s, in, inl);
    else
        ok = s->enc ? encrypt(s, in, out, inl) : decrypt(s, in, out, inl);
    if (!ok)
        return 0;
    if (outl != NULL)
        *outl = inl;
    return 1;
}

static int siv_final(void *vs, unsigned char *out, size_t *outl,
                     size_t outsize)
{
    KC_SIV_CTX *s = vs;

    if (s->final_ret != 0)
        return 0;
    if (outl != NULL)
        *outl = 0;
    return 1;
}

static const KC_CIPHER_FNS siv_direct = {
    .dupctx = siv_dup,
    .freectx = siv_free,
    .einit = siv_einit,
    .dinit = siv_dinit,
    .update = siv_cipher,
    .final = siv_final,
    .cipher = siv_cipher,
    .get_ctx_params = siv_get_ctx_params,
    .set_ctx_params = siv_set_ctx_params
};

/* An unkeyed context; NULL if an ENGINE takes the default's ciphers. */
static void *siv_direct_new(KC_PROVCTX *pctx, const KC_CFAM *f)
{
    static const int nids[3][2] = {
        { NID_aes_128_cbc, NID_aes_128_ctr },
        { NID_aes_192_cbc, NID_aes_192_ctr },
        { NID_aes_256_cbc, NID_aes_256_ctr }
    };
    size_t bits = (size_t)(f - &pctx->cfam[KC_CFAM_SIV128]);
    KC_SIV_CTX *s;

    if (bits > 2 || kc_quirk_cipher_engine(nids[bits][0])
        || kc_quirk_cipher_engine(nids[bits][1])
        || (s = OPENSSL_zalloc(sizeof(*s))) == NULL)
        return NULL;
    s->f = f;
    s->pctx = pctx;
    s->keylen = f->keylen;
    s->cbc = f->sub[0].newctx(pctx->inner_provctx);
    s->ctr = f->sub[1].newctx(pctx->inner_provctx);
    if (s->cbc == NULL || s->ctr == NULL || s->keylen != 2 * (s->keylen / 2)
        || s->keylen / 2 > 32) {
        siv_free(s);
        return NULL;
    }
    return s;
}

/*
 * Published answers keycache's own AES-SIV must give before it runs any
 * context, so that no default AES-SIV is keyed for it (that would build a
 * library context's cipher store): RFC 5297's A.1, the same AAD and
 * plaintext under longer keys, and a 40-byte message (S2V's xorend, more
 * than one CTR block), from OpenSSL's evpciph_aes_siv.txt.  Hex.
 */
static const struct {
    const char *key, *aad, *pt, *tag, *ct;
} siv_kat[] = {
    { "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
      "101112131415161718191a1b1c1d1e1f2021222324252627",
      "112233445566778899aabbccddee",
      "85632d07c6e8f37f950acd320a2ecc93", "40c02b9690c4dc04daef7f6afe5c" },
    { "71a7adc7222f471c28f682c12d45feed45556000a986035922924ad154ba5fa5",
      "46a65672d2699267ab27da82",
      "227e714e3efa84e48049142edaa311dab285407f9b628b146f1d6132c2500ca2"
      "8497fbd6e386679c",
      "b30ec3b9c85402c356728391acf04fcc",
      "0d02ba85b6a9e90cf846155d4ab3158952bd1791885370bf23ba26d8d2335963"
      "7b6e24e8763ed107" },
    { "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
      "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0",
      "101112131415161718191a1b1c1d1e1f2021222324252627",
      "112233445566778899aabbccddee",
      "89e869b93256785154f0963962fe0740", "eff356e42dec1f4febded36642f2" },
    { "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
      "f0f1f2f3f4f5f6f7f8f9fafbfcfdfefffffefdfcfbfaf9f8f7f6f5f4f3f2f1f0",
      "101112131415161718191a1b1c1d1e1f2021222324252627",
      "112233445566778899aabbccddee",
      "724dfb2eaf94dbb19b0ba3a299a0801e", "f3b05a55498ec2552690b89810e4" }
};
#define KAT_MAX 64

/* Hex to bytes in out[KAT_MAX] (libcrypto's decoder): their count, 0: bad. */
static size_t unhex(const char *hex, unsigned char *out)
{
    size_t n;

    return OPENSSL_hexstr2buf_ex(out, KAT_MAX, &n, hex, '\0') ? n : 0;
}

/* Vector v (of f's key length) sealed and opened by a fresh own context. */
static int siv_kat_ok(KC_PROVCTX *pctx, const KC_CFAM *f, size_t v)
{
    unsigned char key[KAT_MAX], aad[KAT_MAX], pt[KAT_MAX], tag[SIV_BLOCK];
    unsigned char ct[KAT_MAX], got[SIV_BLOCK], out[KAT_MAX];
    const KC_CIPHER_FNS *c = &siv_direct;
    size_t keylen = unhex(siv_kat[v].key, key), aadlen, len, outl, dir;
    OSSL_PARAM p[2];
    void *k;
    int ok;

    aadlen = unhex(siv_kat[v].aad, aad);
    len = unhex(siv_kat[v].pt, pt);
    ok = keylen > 0 && aadlen > 0 && len > 0
         && unhex(siv_kat[v].tag, tag) == SIV_BLOCK
         && unhex(siv_kat[v].ct, ct) == len;
    for (dir = 0; dir < 2 && ok; dir++) {
        ok = (k = siv_direct_new(pctx, f)) != NULL;
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                                 dir == 0 ? got : tag,
                                                 SIV_BLOCK);
        p[1] = OSSL_PARAM_construct_end();
        ok = ok
             && (dir == 0 ? c->einit(k, key, keylen, NULL, 0, NULL)
                          : c->dinit(k, key, keylen, NULL, 0, p))
             && c->update(k, NULL, &outl, 0, aad, aadlen)
             && c->update(k, out, &outl, sizeof(out), dir == 0 ? pt : ct,
                          len)
             && c->final(k, out, &outl, sizeof(out))
             && (dir == 1 || c->get_ctx_params(k, p))
             && memcmp(out, dir == 0 ? ct : pt, len) == 0
             && (dir == 1 || memcmp(got, tag, SIV_BLOCK) == 0);
        siv_free(k);
    }
    OPENSSL_cleanse(key, sizeof(key));
    return ok;
}

/* Every vector of f's key length; 0 if there is none. */
static int siv_kats_ok(KC_PROVCTX *pctx, const KC_CFAM *f)
{
    size_t v, n = 0;

    for (v = 0; v < sizeof(siv_kat) / sizeof(siv_kat[0]); v++) {
        if (strlen(siv_kat[v].key) / 2 != f->keylen)
            continue;
        if (!siv_kat_ok(pctx, f, v))
            return 0;
        n++;
    }
    return n > 0;
}

/*
 * What the running default does where versions differ (kc_quirk_siv()),
 * then a published message both ways: else the default's contexts.
 */
static int siv_direct_bind(KC_PROVCTX *pctx, KC_CFAM *f)
{
    size_t keylen = f->keylen;
    unsigned int q;
    int ok;

    /* CMAC runs on the CBC context's one-call cipher */
    if (keylen < 32 || keylen > 64 || keylen % 16 != 0
        || f->sub[0].cipher == NULL)
        return 0;
    q = kc_quirk_siv(pctx->quirk_table, pctx->inner_provctx, &f->fns, keylen);
    /* atomic: a report on another thread may read it meanwhile */
    __atomic_store_n(&f->quirks, q, __ATOMIC_RELAXED);
    if (!kc_quirk(q, KC_Q_KNOWN))
        return 0;
    ERR_set_mark();
    ok = siv_kats_ok(pctx, f);
    ERR_pop_to_mark();
    return ok;
}

static const char *const siv_ciphers[3][3] = {
    { "AES-128-CBC", "AES-128-CTR", NULL },
    { "AES-192-CBC", "AES-192-CTR", NULL },
    { "AES-256-CBC", "AES-256-CTR", NULL }
};

KC_TCIPH_IMPL(kc_aes128siv, KC_CFAM_SIV128)
KC_TCIPH_IMPL(kc_aes192siv, KC_CFAM_SIV192)
KC_TCIPH_IMPL(kc_aes256siv, KC_CFAM_SIV256)

#define KC_SIV_DESC(bits, i)                                                  \
    { .name = "AES-" #bits "-SIV",                                            \
      .functions = kc_aes##bits##siv_functions,                               \
      .shape_names = siv_shape,                                               \
      .direct = &siv_direct,                                                  \
      .direct_ciphers = siv_ciphers[i],                                       \
      .direct_new = siv_direct_new,                                           \
      .direct_bind = siv_direct_bind,                                         \
      .empty_set_acts = 1 }

const KC_CDESC kc_siv_desc[3] = {
    KC_SIV_DESC(128, 0), KC_SIV_DESC(192, 1), KC_SIV_DESC(256, 2)
};
