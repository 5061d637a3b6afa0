/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-{128,192,256}-GCM wrappers.
 *
 * A cache entry holds a pristine template: an inner (default provider) GCM
 * context that was created and keyed and never used, so its AES round keys
 * and GHASH table are ready.  A keyed init duplicates the template, which is
 * field for field a fresh context with the key set, and from then on the
 * wrapper only forwards.
 *
 * Used contexts are not reused.  A used GCM context keeps state a fresh one
 * does not have - tag length and tag, IV state, TLS AAD and IV-generator
 * state - and the provider interface can neither reset those (the tag
 * length cannot go back to "unset") nor copy one context into another.  An
 * earlier version parked used contexts and answered for their stale state;
 * the differential fuzzer kept finding sequences where that differed from a
 * fresh context, so it was removed (see README, Performance).
 *
 * Before the key arrives the wrapper only records what the default context
 * would hold (direction, IV length, IV, expected tag) and answers the length
 * queries EVP makes from that record.  When the key comes the record is
 * replayed onto the context.  Anything else before the key - TLS params,
 * updates, other queries, invalid values - makes the wrapper build a plain
 * inner context, replay the record onto it and pass everything through, so
 * the default provider decides every odd case and raises its own errors.
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/proverr.h>

#include "kc_local.h"

/* bounds the default provider accepts; outside them we let it decide */
#define KC_GCM_IV_MAX 128
#define KC_GCM_IV_DEFAULT 12
#define KC_GCM_TAG_MAX 16

typedef struct {
    KC_PROVCTX *pctx;
    const KC_GCM_INNER *g;
    void *inner;               /* NULL until keyed or passed through */

    /* what the default context would hold, while there is no inner */
    int inited;                /* an init was seen (sets direction) */
    int enc;
    int iv_set;
    size_t ivlen;
    size_t taglen;             /* 0: no expected tag set */
    /*
     * The default keeps tags in one buffer and a shorter tag overwrites
     * only its own bytes: tag[] is that buffer's image, tagmax the longest
     * tag written (its bytes beyond taglen are what an encrypt context
     * hands out before final).
     */
    size_t tagmax;
    unsigned char iv[KC_GCM_IV_MAX];
    unsigned char tag[KC_GCM_TAG_MAX];
} KC_GCM_CTX;

/* The parameter names the record looks at, told apart cheaply. */
enum { G_OTHER, G_IVLEN, G_KEYLEN, G_TAGLEN, G_TAG };

static int name_kind(const char *k)
{
    switch (k[0]) {
    case 'i':
        if (strcmp(k, OSSL_CIPHER_PARAM_IVLEN) == 0)   /* = AEAD_IVLEN */
            return G_IVLEN;
        break;
    case 'k':
        if (strcmp(k, OSSL_CIPHER_PARAM_KEYLEN) == 0)
            return G_KEYLEN;
        break;
    case 't':
        if (strcmp(k, OSSL_CIPHER_PARAM_AEAD_TAG) == 0)
            return G_TAG;
        if (strcmp(k, OSSL_CIPHER_PARAM_AEAD_TAGLEN) == 0)
            return G_TAGLEN;
        break;
    }
    return G_OTHER;
}

static OSSL_FUNC_cipher_freectx_fn kc_gcm_freectx;
static OSSL_FUNC_cipher_dupctx_fn kc_gcm_dupctx;
static OSSL_FUNC_cipher_encrypt_init_fn kc_gcm_einit;
static OSSL_FUNC_cipher_decrypt_init_fn kc_gcm_dinit;
static OSSL_FUNC_cipher_update_fn kc_gcm_update;
static OSSL_FUNC_cipher_final_fn kc_gcm_final;
static OSSL_FUNC_cipher_cipher_fn kc_gcm_cipher;
static OSSL_FUNC_cipher_get_ctx_params_fn kc_gcm_get_ctx_params;
static OSSL_FUNC_cipher_set_ctx_params_fn kc_gcm_set_ctx_params;
static OSSL_FUNC_cipher_gettable_ctx_params_fn kc_gcm_gettable_ctx_params;
static OSSL_FUNC_cipher_settable_ctx_params_fn kc_gcm_settable_ctx_params;

static const KC_CIPHER_FNS *fns(const KC_GCM_CTX *w)
{
    return &w->g->fns;
}

static int inner_init(const KC_GCM_CTX *w, void *inner, int enc,
                      const unsigned char *key, size_t keylen,
                      const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    return enc ? fns(w)->einit(inner, key, keylen, iv, ivlen, params)
               : fns(w)->dinit(inner, key, keylen, iv, ivlen, params);
}

/* Bring an inner context to the state the record describes. */
static int replay(const KC_GCM_CTX *w, void *inner)
{
    OSSL_PARAM p[2];

    /* the usual case: the key came with the first init, nothing to redo */
    if (!w->inited && w->taglen == 0 && !w->iv_set
        && w->ivlen == KC_GCM_IV_DEFAULT)
        return 1;
    p[1] = OSSL_PARAM_construct_end();
    if (w->taglen != 0) {
        /* the tag was accepted while decrypting, so set it that way */
        if (!fns(w)->dinit(inner, NULL, 0, NULL, 0, NULL))
            return 0;
        /* the longest tag fills the buffer, the last one sets the length */
        if (w->tagmax > w->taglen) {
            p[0] = OSSL_PARAM_construct_octet_string(
                       OSSL_CIPHER_PARAM_AEAD_TAG, (void *)w->tag, w->tagmax);
            if (!fns(w)->set_ctx_params(inner, p))
                return 0;
        }
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                                 (void *)w->tag, w->taglen);
        if (!fns(w)->set_ctx_params(inner, p))
            return 0;
    }
    if (w->iv_set) {
        if (!inner_init(w, inner, w->enc, NULL, 0, w->iv, w->ivlen, NULL))
            return 0;
    } else if (w->ivlen != KC_GCM_IV_DEFAULT) {
        size_t ivlen = w->ivlen;

        p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN,
                                           &ivlen);
        if (!fns(w)->set_ctx_params(inner, p))
            return 0;
    }
    if (w->inited && !inner_init(w, inner, w->enc, NULL, 0, NULL, 0, NULL))
        return 0;
    return 1;
}

/* Pass-through from now on: a plain inner context with the record replayed. */
static KC_NOINLINE int materialize(KC_GCM_CTX *w)
{
    void *inner;

    if (w->inner != NULL)
        return 1;
    if ((inner = fns(w)->newctx(w->pctx->inner_provctx)) == NULL)
        return 0;
    if (!replay(w, inner)) {
        fns(w)->freectx(inner);
        return 0;
    }
    w->inner = inner;
    kc_count_passthrough(w->pctx, &w->g->alg);
    return 1;
}

static void *gcm_newctx(KC_PROVCTX *pctx, int which)
{
    KC_GCM_CTX *w = kc_wrapper_new(pctx, KC_POOL_GCM, sizeof(*w));

    if (w == NULL)
        return NULL;
    w->pctx = pctx;
    w->g = &pctx->gcm[which];
    w->ivlen = KC_GCM_IV_DEFAULT;
    return w;
}

static void kc_gcm_freectx(void *vctx)
{
    KC_GCM_CTX *w = vctx;

    if (w == NULL)
        return;
    if (w->inner != NULL)
        fns(w)->freectx(w->inner);
    kc_wrapper_free(w->pctx, KC_POOL_GCM, w, sizeof(*w));
}

static void *kc_gcm_dupctx(void *vctx)
{
    KC_GCM_CTX *src = vctx, *dst;

    if ((dst = kc_wrapper_new(src->pctx, KC_POOL_GCM, sizeof(*dst))) == NULL)
        return NULL;
    *dst = *src;
    if (src->inner != NULL
        && (dst->inner = fns(src)->dupctx(src->inner)) == NULL) {
        kc_wrapper_free(src->pctx, KC_POOL_GCM, dst, sizeof(*dst));
        return NULL;
    }
    return dst;
}

/*
 * Record params given before the key when they are the simple ones (IV
 * length, expected tag) and valid.  Returns 1 if recorded, 0 if the caller
 * must pass through instead.
 */
static int record_params(KC_GCM_CTX *w, const OSSL_PARAM params[])
{
    const OSSL_PARAM *settable, *p, *tag = NULL, *ivl = NULL;
    size_t ivlen = 0;

    settable = fns(w)->settable_ctx_params == NULL ? NULL
               : fns(w)->settable_ctx_params(NULL, w->pctx->inner_provctx);
    for (p = params; p->key != NULL; p++) {
        /* a repeated name is resolved differently by each OpenSSL version */
        int kind = name_kind(p->key);

        if (kind == G_TAG) {
            if (tag != NULL)
                return 0;
            tag = p;
        } else if (kind == G_IVLEN) {
            if (ivl != NULL)
                return 0;
            ivl = p;
        } else if (settable == NULL
                 || OSSL_PARAM_locate_const(settable, p->key) != NULL)
            return 0;
        /* names the default does not know it ignores, and so do we */
    }
    if (tag != NULL
        && (tag->data_type != OSSL_PARAM_OCTET_STRING || tag->data == NULL
            || tag->data_size == 0 || tag->data_size > KC_GCM_TAG_MAX
            || w->enc))
        return 0;
    if (ivl != NULL
        && (!OSSL_PARAM_get_size_t(ivl, &ivlen) || ivlen == 0
            || ivlen > KC_GCM_IV_MAX
            /* a new length voids an IV already given: let the default say */
            || (w->iv_set && ivlen != w->ivlen)))
        return 0;
    if (tag != NULL) {
        memcpy(w->tag, tag->data, tag->data_size);
        w->taglen = tag->data_size;
        if (w->tagmax < w->taglen)
            w->tagmax = w->taglen;
    }
    if (ivl != NULL)
        w->ivlen = ivlen;
    return 1;
}

/* set_ctx_params before the key: record, or pass through if it cannot */
static KC_NOINLINE int unkeyed_set_params(KC_GCM_CTX *w,
                                          const OSSL_PARAM params[])
{
    if (params == NULL || record_params(w, params))
        return 1;
    return materialize(w) && fns(w)->set_ctx_params(w->inner, params);
}

static int kc_gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    KC_GCM_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->set_ctx_params(w->inner, params);
    return unkeyed_set_params(w, params);
}

/* Key the wrapper from the cache: 1 done, 0 failed, -1 pass through. */
static int init_cached(KC_GCM_CTX *w, int enc, const unsigned char *key,
                       size_t keylen, const unsigned char *iv, size_t ivlen,
                       const OSSL_PARAM params[])
{
    KC_PROVCTX *pctx = w->pctx;
    const KC_ALG *alg = &w->g->alg;
    KC_LOOKUP lk;
    KC_CACHE *c;
    void *tmpl, *inner;

    if (keylen != w->g->keylen || keylen > KEYCACHE_MAX_KEY_LEN
        || (iv != NULL && (ivlen == 0 || ivlen > KC_GCM_IV_MAX))
        || (c = kc_cache_get(pctx)) == NULL)
        return -1;

    tmpl = kc_cache_find(c, alg, NULL, key, keylen, &lk);
    if (tmpl == NULL) {
        /* not (yet) seen often enough to cache: a plain context */
        if (!lk.admit)
            return -1;
        if ((tmpl = fns(w)->newctx(pctx->inner_provctx)) == NULL)
            return 0;
        if (!fns(w)->einit(tmpl, key, keylen, NULL, 0, NULL)) {
            fns(w)->freectx(tmpl);
            return -1;
        }
        if (!kc_cache_add(c, alg, NULL, key, keylen, tmpl, &lk)) {
            /* not cacheable: use the template itself */
            kc_count_passthrough(pctx, alg);
            inner = tmpl;
            goto keyed;
        }
    }
    if ((inner = fns(w)->dupctx(tmpl)) == NULL)
        return 0;
 keyed:
    if (!replay(w, inner)) {
        fns(w)->freectx(inner);
        return 0;
    }
    w->inner = inner;
    /* the rest of this init, as the default does it after the key */
    return inner_init(w, inner, enc, NULL, 0, iv, ivlen, params);
}

static KC_NOINLINE int gcm_init(KC_GCM_CTX *w, int enc, const unsigned char *key,
                    size_t keylen, const unsigned char *iv, size_t ivlen,
                    const OSSL_PARAM params[])
{
    int r;

    if (key != NULL) {
        r = init_cached(w, enc, key, keylen, iv, ivlen, params);
        if (r >= 0)
            return r;
    } else if (iv == NULL || (ivlen != 0 && ivlen <= KC_GCM_IV_MAX)) {
        /* no key yet: record direction and IV, then the params */
        w->inited = 1;
        w->enc = enc;
        if (iv != NULL) {
            memcpy(w->iv, iv, ivlen);
            w->ivlen = ivlen;
            w->iv_set = 1;
        }
        return kc_gcm_set_ctx_params(w, params);
    }
    return materialize(w)
           && inner_init(w, w->inner, enc, key, keylen, iv, ivlen, params);
}

/* Once keyed (the steady state of a reused context) a wrapper forwards. */
static int kc_gcm_einit(void *vctx, const unsigned char *key, size_t keylen,
                        const unsigned char *iv, size_t ivlen,
                        const OSSL_PARAM params[])
{
    KC_GCM_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->einit(w->inner, key, keylen, iv, ivlen, params);
    return gcm_init(w, 1, key, keylen, iv, ivlen, params);
}

static int kc_gcm_dinit(void *vctx, const unsigned char *key, size_t keylen,
                        const unsigned char *iv, size_t ivlen,
                        const OSSL_PARAM params[])
{
    KC_GCM_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->dinit(w->inner, key, keylen, iv, ivlen, params);
    return gcm_init(w, 0, key, keylen, iv, ivlen, params);
}

/*
 * The calls below on a wrapper that has no inner yet: anything but the
 * recorded init and params makes it a plain pass-through context.  Kept
 * out of line so that the keyed (forwarding) path needs no stack frame.
 */
static KC_NOINLINE int unkeyed_update(KC_GCM_CTX *w, unsigned char *out,
                                      size_t *outl, size_t outsize,
                                      const unsigned char *in, size_t inl)
{
    return materialize(w)
           && fns(w)->update(w->inner, out, outl, outsize, in, inl);
}

static KC_NOINLINE int unkeyed_final(KC_GCM_CTX *w, unsigned char *out,
                                     size_t *outl, size_t outsize)
{
    return materialize(w) && fns(w)->final(w->inner, out, outl, outsize);
}

static KC_NOINLINE int unkeyed_cipher(KC_GCM_CTX *w, unsigned char *out,
                                      size_t *outl, size_t outsize,
                                      const unsigned char *in, size_t inl)
{
    return materialize(w)
           && fns(w)->cipher(w->inner, out, outl, outsize, in, inl);
}

static int kc_gcm_update(void *vctx, unsigned char *out, size_t *outl,
                         size_t outsize, const unsigned char *in, size_t inl)
{
    KC_GCM_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->update(w->inner, out, outl, outsize, in, inl);
    return unkeyed_update(w, out, outl, outsize, in, inl);
}

static int kc_gcm_final(void *vctx, unsigned char *out, size_t *outl,
                        size_t outsize)
{
    KC_GCM_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->final(w->inner, out, outl, outsize);
    return unkeyed_final(w, out, outl, outsize);
}

static int kc_gcm_cipher(void *vctx, unsigned char *out, size_t *outl,
                         size_t outsize, const unsigned char *in, size_t inl)
{
    KC_GCM_CTX *w = vctx;

    if (fns(w)->cipher == NULL)
        return 0;
    if (w->inner != NULL)
        return fns(w)->cipher(w->inner, out, outl, outsize, in, inl);
    return unkeyed_cipher(w, out, outl, outsize, in, inl);
}

/*
 * EVP asks for one length at a time into a size_t (twice per one-shot
 * init): store it the way OSSL_PARAM_set_size_t() does for that shape.
 * Returns 1 if answered, 0 if the general walk must look.
 */
static int answer_one_length(const KC_GCM_CTX *w, OSSL_PARAM *p)
{
    int kind;

    if (p[0].key == NULL || p[1].key != NULL || p->data == NULL
        || p->data_type != OSSL_PARAM_UNSIGNED_INTEGER
        || p->data_size != sizeof(size_t))
        return 0;
    kind = name_kind(p->key);
    if (kind != G_IVLEN && kind != G_KEYLEN)
        return 0;
    *(size_t *)p->data = kind == G_IVLEN ? w->ivlen : w->g->keylen;
    p->return_size = sizeof(size_t);
    return 1;
}

/*
 * The length queries EVP makes before init, answered from the record.
 * Returns 1 if answered, 0 if the params need a real context.
 */
static KC_NOINLINE int answer_lengths(KC_GCM_CTX *w, OSSL_PARAM params[])
{
    const OSSL_PARAM *gettable = NULL;
    OSSL_PARAM *p, *q[G_TAGLEN + 1] = { NULL };
    size_t v[G_TAGLEN + 1];
    int kind;

    for (p = params; p->key != NULL; p++) {
        kind = name_kind(p->key);
        if (kind == G_IVLEN || kind == G_KEYLEN
            || (kind == G_TAGLEN && w->g->fresh_taglen != 0)) {
            if (q[kind] != NULL)
                return 0;               /* repeated: let the default say */
            q[kind] = p;
            continue;
        }
        if (gettable == NULL && fns(w)->gettable_ctx_params != NULL)
            gettable = fns(w)->gettable_ctx_params(NULL,
                                                   w->pctx->inner_provctx);
        /* a name the default knows needs its context; others it ignores */
        if (gettable == NULL || OSSL_PARAM_locate_const(gettable, p->key))
            return 0;
    }
    v[G_IVLEN] = w->ivlen;
    v[G_KEYLEN] = w->g->keylen;
    v[G_TAGLEN] = w->taglen != 0 ? w->taglen : w->g->fresh_taglen;
    /* in the default's order; a value that does not fit goes to it too */
    for (kind = G_IVLEN; kind <= G_TAGLEN; kind++)
        if (q[kind] != NULL && !OSSL_PARAM_set_size_t(q[kind], v[kind]))
            return 0;
    return 1;
}

static KC_NOINLINE int unkeyed_get_params(KC_GCM_CTX *w, OSSL_PARAM params[])
{
    if (params != NULL
        && (answer_one_length(w, params) || answer_lengths(w, params)))
        return 1;
    return materialize(w) && fns(w)->get_ctx_params(w->inner, params);
}

static int kc_gcm_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_GCM_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->get_ctx_params(w->inner, params);
    return unkeyed_get_params(w, params);
}

static const OSSL_PARAM *kc_gcm_gettable_ctx_params(void *cctx, void *provctx)
{
    KC_PROVCTX *pctx = provctx;
    const KC_CIPHER_FNS *f = &pctx->gcm[KC_GCM_256].fns;

    return f->gettable_ctx_params == NULL ? NULL
           : f->gettable_ctx_params(NULL, pctx->inner_provctx);
}

static const OSSL_PARAM *kc_gcm_settable_ctx_params(void *cctx, void *provctx)
{
    KC_PROVCTX *pctx = provctx;
    const KC_CIPHER_FNS *f = &pctx->gcm[KC_GCM_256].fns;

    return f->settable_ctx_params == NULL ? NULL
           : f->settable_ctx_params(NULL, pctx->inner_provctx);
}

/*
 * get_params has no provider context, so the inner functions are kept here.
 * They are libcrypto's own static functions: the same for every instance.
 */
static OSSL_FUNC_cipher_get_params_fn *inner_get_params[KC_GCM_COUNT];

/*
 * The tag length a fresh context reports before any tag is set, asked of
 * the running default provider (0 if it will not say: then the query goes
 * to a real context).
 */
static size_t fresh_taglen(KC_PROVCTX *pctx, const KC_GCM_INNER *g)
{
    size_t taglen = 0;
    OSSL_PARAM p[2];
    void *ctx;

    p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_TAGLEN,
                                       &taglen);
    p[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    if ((ctx = g->fns.newctx(pctx->inner_provctx)) != NULL) {
        if (!g->fns.get_ctx_params(ctx, p) || !OSSL_PARAM_modified(&p[0]))
            taglen = 0;
        g->fns.freectx(ctx);
    }
    ERR_pop_to_mark();
    return taglen;
}

void kc_gcm_bind(KC_PROVCTX *pctx)
{
    int i;

    for (i = 0; i < KC_GCM_COUNT; i++) {
        inner_get_params[i] = pctx->gcm[i].fns.get_params;
        pctx->gcm[i].fresh_taglen = fresh_taglen(pctx, &pctx->gcm[i]);
    }
}

/*
 * Per key size: newctx, the algorithm's fixed params (mode, key length ...)
 * straight from the default, and the dispatch table.
 */
#define KC_GCM_IMPL(bits, which)                                              \
    static OSSL_FUNC_cipher_newctx_fn kc_aes##bits##gcm_newctx;               \
    static OSSL_FUNC_cipher_get_params_fn kc_aes##bits##gcm_get_params;       \
    static OSSL_FUNC_cipher_gettable_params_fn kc_aes##bits##gcm_gettable;    \
    static void *kc_aes##bits##gcm_newctx(void *provctx)                      \
    {                                                                         \
        return gcm_newctx(provctx, which);                                    \
    }                                                                         \
    static int kc_aes##bits##gcm_get_params(OSSL_PARAM params[])              \
    {                                                                         \
        return inner_get_params[which] != NULL                                \
               && inner_get_params[which](params);                            \
    }                                                                         \
    static const OSSL_PARAM *kc_aes##bits##gcm_gettable(void *provctx)        \
    {                                                                         \
        KC_PROVCTX *pctx = provctx;                                           \
        const KC_CIPHER_FNS *f = &pctx->gcm[which].fns;                       \
                                                                              \
        return f->gettable_params == NULL ? NULL                              \
               : f->gettable_params(pctx->inner_provctx);                     \
    }                                                                         \
    const OSSL_DISPATCH kc_aes##bits##gcm_functions[] = {                     \
        { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void))kc_aes##bits##gcm_newctx },\
        { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void))kc_gcm_freectx },         \
        { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void))kc_gcm_dupctx },           \
        { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void))kc_gcm_einit },      \
        { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void))kc_gcm_dinit },      \
        { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void))kc_gcm_update },           \
        { OSSL_FUNC_CIPHER_FINAL, (void (*)(void))kc_gcm_final },             \
        { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void))kc_gcm_cipher },           \
        { OSSL_FUNC_CIPHER_GET_PARAMS,                                        \
          (void (*)(void))kc_aes##bits##gcm_get_params },                     \
        { OSSL_FUNC_CIPHER_GETTABLE_PARAMS,                                   \
          (void (*)(void))kc_aes##bits##gcm_gettable },                       \
        { OSSL_FUNC_CIPHER_GET_CTX_PARAMS,                                    \
          (void (*)(void))kc_gcm_get_ctx_params },                            \
        { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,                               \
          (void (*)(void))kc_gcm_gettable_ctx_params },                       \
        { OSSL_FUNC_CIPHER_SET_CTX_PARAMS,                                    \
          (void (*)(void))kc_gcm_set_ctx_params },                            \
        { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,                               \
          (void (*)(void))kc_gcm_settable_ctx_params },                       \
        { 0, NULL }                                                           \
    };

KC_GCM_IMPL(128, KC_GCM_128)
KC_GCM_IMPL(192, KC_GCM_192)
KC_GCM_IMPL(256, KC_GCM_256)
