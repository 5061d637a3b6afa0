/*
 * AES-{128,192,256}-GCM wrappers.
 *
 * A cache entry holds a pristine template - an inner (default provider)
 * GCM context that was created and keyed and never used: its AES round keys
 * and GHASH table are ready - and at most one spare, a used context parked
 * there by the last wrapper that finished with it.
 *
 * A used GCM context keeps state a fresh one does not have: tag length and
 * tag buffer, IV state, TLS AAD and IV-generator state.  The provider
 * interface can neither reset those (the tag length cannot go back to
 * "unset") nor copy one context into another.  So:
 *
 * - A wrapper whose use stayed on the plain path (no TLS parameters, no new
 *   key, nothing passed through) parks its context as the entry's spare.
 * - The spare is handed out only to an init that also sets the IV, which
 *   resets the IV state; from then on the only difference from a fresh
 *   context is the tag length and tag left by the last use.  Until the user
 *   sets a tag or an encryption finishes (after which both contexts agree),
 *   the wrapper answers the questions that could see them - the tag length,
 *   getting the tag, decrypt final without a tag - as a fresh context does.
 *   The answers (error codes included) are measured on the running default
 *   provider when keycache starts, so they follow its version.
 * - Otherwise a keyed init duplicates the template, which is field for
 *   field a fresh context with the key set.
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

    KC_LEASE lease;            /* the cache entry inner may be parked in */

    /* what the default context would hold, while there is no inner */
    int inited;                /* an init was seen (sets direction) */
    int enc;
    int iv_set;
    size_t ivlen;
    size_t taglen;             /* 0: no expected tag set */
    unsigned char iv[KC_GCM_IV_MAX];
    unsigned char tag[KC_GCM_TAG_MAX];

    /* once keyed */
    unsigned int stale : 1;    /* inner is a spare: its tag state is old */
    unsigned int tag_set : 1;  /* a fresh context would have a tag length */
    unsigned int finished : 1; /* a fresh context's IV state is FINISHED */
    unsigned int tainted : 1;  /* inner may not be parked again */
    unsigned int tls_seen : 1; /* TLS params were used: final is theirs */
} KC_GCM_CTX;

/* The parameter names this file looks at, told apart cheaply: this is hot. */
enum { G_OTHER, G_IVLEN, G_KEYLEN, G_TAGLEN, G_TAG, G_IV, G_UPDATED_IV };

static int name_kind(const char *k)
{
    switch (k[0]) {
    case 'i':
        if (strcmp(k, OSSL_CIPHER_PARAM_IVLEN) == 0)   /* = AEAD_IVLEN */
            return G_IVLEN;
        if (strcmp(k, OSSL_CIPHER_PARAM_IV) == 0)
            return G_IV;
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
    case 'u':
        if (strcmp(k, OSSL_CIPHER_PARAM_UPDATED_IV) == 0)
            return G_UPDATED_IV;
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

    p[1] = OSSL_PARAM_construct_end();
    if (w->taglen != 0) {
        /* the tag was accepted while decrypting, so set it that way */
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                                 (void *)w->tag, w->taglen);
        if (!fns(w)->dinit(inner, NULL, 0, NULL, 0, NULL)
            || !fns(w)->set_ctx_params(inner, p))
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
static int materialize(KC_GCM_CTX *w)
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
    kc_count_passthrough(kc_cache_get(w->pctx));
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
    if (!pctx->gcm_on && !materialize(w)) {
        kc_wrapper_free(pctx, KC_POOL_GCM, w, sizeof(*w));
        return NULL;
    }
    return w;
}

/*
 * Park the inner context as its entry's spare.  Its tag buffer is cleared
 * first (a 16-byte all-zero expected tag, set while decrypting): nothing of
 * the last use's tag can show through a shorter tag set by the next user,
 * no stale tag can ever verify a message, and the tag length then is the
 * one a fresh context reports.  What still differs from a fresh context -
 * that a tag length is set at all - keyed_get() and stale_decrypt_final()
 * answer for.
 */
/*
 * Spares are switched off for now: the differential fuzzer found that a
 * spare re-keyed without a new IV can still differ from a fresh context
 * (the zeroed parked tag matches the zeroed GHASH state a new key leaves,
 * and a skipped setiv is lost to the re-key).  Until that is fixed every
 * keyed init duplicates the template, which is exact.
 */
#define KC_GCM_SPARES 0

static int park(KC_GCM_CTX *w)
{
    static const unsigned char zero_tag[KC_GCM_TAG_MAX] = { 0 };
    OSSL_PARAM p[2];

    if (!KC_GCM_SPARES || w->tainted || w->lease.cache_id == 0
        || !w->g->park_ok)
        return 0;
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                             (void *)zero_tag,
                                             sizeof(zero_tag));
    p[1] = OSSL_PARAM_construct_end();
    return fns(w)->dinit(w->inner, NULL, 0, NULL, 0, NULL)
           && fns(w)->set_ctx_params(w->inner, p)
           && kc_cache_return_spare(w->pctx, &w->lease, w->inner);
}

static void kc_gcm_freectx(void *vctx)
{
    KC_GCM_CTX *w = vctx;

    if (w == NULL)
        return;
    if (w->inner != NULL && !park(w))
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
    }
    if (ivl != NULL)
        w->ivlen = ivlen;
    return 1;
}

/*
 * A spare's stale tag shows until a tag is set or an encryption finishes:
 * then the wrapper answers as a fresh context would.
 */
static int stale_tag(const KC_GCM_CTX *w)
{
    return w->stale && !w->tag_set;
}

/* Would the default accept this as the expected tag (ctx direction enc)? */
static int tag_acceptable(const OSSL_PARAM *p, int enc)
{
    return p->data_type == OSSL_PARAM_OCTET_STRING && p->data != NULL
           && p->data_size != 0 && p->data_size <= KC_GCM_TAG_MAX && !enc;
}

/*
 * Follow what params forwarded to a keyed inner do to the state a fresh
 * context would have: whether a tag length is now set, whether the IV was
 * voided by a new IV length, whether TLS state was touched (the context may
 * then not be parked).  |ret| is what the inner returned.
 */
/* Is |k| a name the default's GCM context accepts (looked up lazily)? */
static int settable_name(const KC_GCM_CTX *w, const OSSL_PARAM **settable,
                         const char *k)
{
    if (*settable == NULL && fns(w)->settable_ctx_params != NULL)
        *settable = fns(w)->settable_ctx_params(NULL, w->pctx->inner_provctx);
    return *settable == NULL || OSSL_PARAM_locate_const(*settable, k) != NULL;
}

static void note_param_list(KC_GCM_CTX *w, const OSSL_PARAM params[],
                            int ret)
{
    const OSSL_PARAM *settable = NULL, *p, *tag = NULL, *ivl = NULL;
    int repeated = 0, track = stale_tag(w);
    size_t sz;

    if (w->tainted && !track)
        return;
    for (p = params; p->key != NULL; p++) {
        int kind = name_kind(p->key);

        if (kind == G_TAG) {
            repeated |= tag != NULL;
            tag = p;
        } else if (kind == G_IVLEN) {
            repeated |= ivl != NULL;
            ivl = p;
        } else if (!w->tls_seen && settable_name(w, &settable, p->key)) {
            /* TLS state: never parked, and its final is left to the inner */
            w->tainted = 1;
            w->tls_seen = 1;
        }
    }
    if (!track)
        return;                 /* no stale tag can show any more */
    if (repeated) {
        /* versions differ on repeated names; go by the outcome */
        w->tainted = 1;
        if (tag != NULL && ret && tag_acceptable(tag, w->enc))
            w->tag_set = 1;
        return;
    }
    /* the tag is taken first, so it sticks even if a later param fails */
    if (tag != NULL) {
        if (!tag_acceptable(tag, w->enc))
            return;
        w->tag_set = 1;
    }
    if (ivl != NULL && OSSL_PARAM_get_size_t(ivl, &sz) && sz != 0
        && sz <= KC_GCM_IV_MAX && sz != w->ivlen) {
        w->finished = 1;
        w->ivlen = sz;
    }
}

/* Most calls carry no params: keep that case a single test. */
static void note_params(KC_GCM_CTX *w, const OSSL_PARAM params[], int ret)
{
    if (params != NULL && params->key != NULL)
        note_param_list(w, params, ret);
}

static int kc_gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    KC_GCM_CTX *w = vctx;
    int r;

    if (w->inner != NULL) {
        r = fns(w)->set_ctx_params(w->inner, params);
        note_params(w, params, r);
        return r;
    }
    if (params == NULL || record_params(w, params))
        return 1;
    return materialize(w) && fns(w)->set_ctx_params(w->inner, params);
}

/* An init forwarded to a keyed inner, followed as note_params() does. */
static int keyed_init(KC_GCM_CTX *w, int enc, const unsigned char *key,
                      size_t keylen, const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    int r = inner_init(w, w->inner, enc, key, keylen, iv, ivlen, params);

    w->enc = enc;
    if (key != NULL && keylen != w->g->keylen)
        return r;                     /* refused before the params */
    if (iv != NULL && ivlen != 0 && ivlen <= KC_GCM_IV_MAX) {
        w->ivlen = ivlen;
        w->finished = 0;
        if (key != NULL)
            w->tainted = 1;           /* no longer the entry's key */
        note_params(w, params, r);
    } else if (iv == NULL) {
        if (key != NULL)
            w->tainted = 1;
        note_params(w, params, r);
    }
    return r;
}

/* Key the wrapper from the cache: 1 done, 0 failed, -1 pass through. */
static int init_cached(KC_GCM_CTX *w, int enc, const unsigned char *key,
                       size_t keylen, const unsigned char *iv, size_t ivlen,
                       const OSSL_PARAM params[])
{
    KC_PROVCTX *pctx = w->pctx;
    const KC_ALG *alg = &w->g->alg;
    KC_CACHE *c;
    void *tmpl, *inner = NULL;
    /* a spare is only good for an init that also sets the IV */
    int with_iv = iv != NULL || w->iv_set;

    if (keylen != w->g->keylen || keylen > KEYCACHE_MAX_KEY_LEN
        || (iv != NULL && (ivlen == 0 || ivlen > KC_GCM_IV_MAX))
        || (c = kc_cache_get(pctx)) == NULL)
        return -1;

    tmpl = kc_cache_find(c, alg, NULL, key, keylen, 0, &w->lease,
                         with_iv ? &inner : NULL);
    if (tmpl == NULL) {
        if (!kc_cache_admit(c))
            return -1;
        if ((tmpl = fns(w)->newctx(pctx->inner_provctx)) == NULL)
            return 0;
        if (!fns(w)->einit(tmpl, key, keylen, NULL, 0, NULL)) {
            fns(w)->freectx(tmpl);
            return -1;
        }
        if (!kc_cache_add(c, alg, NULL, key, keylen, tmpl, &w->lease)) {
            /* not cacheable: use the template itself */
            kc_count_passthrough(c);
            memset(&w->lease, 0, sizeof(w->lease));
            inner = tmpl;
            goto keyed;
        }
    }
    if (inner != NULL)
        w->stale = 1;
    else if ((inner = fns(w)->dupctx(tmpl)) == NULL)
        return 0;
 keyed:
    if (!replay(w, inner)) {
        fns(w)->freectx(inner);
        w->stale = 0;
        return 0;
    }
    w->inner = inner;
    w->tag_set = w->taglen != 0;
    w->finished = 0;
    /* the rest of this init, as the default does it after the key */
    return keyed_init(w, enc, NULL, 0, iv, ivlen, params);
}

static int gcm_init(KC_GCM_CTX *w, int enc, const unsigned char *key,
                    size_t keylen, const unsigned char *iv, size_t ivlen,
                    const OSSL_PARAM params[])
{
    int r;

    if (w->inner != NULL)
        return keyed_init(w, enc, key, keylen, iv, ivlen, params);

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

static int kc_gcm_einit(void *vctx, const unsigned char *key, size_t keylen,
                        const unsigned char *iv, size_t ivlen,
                        const OSSL_PARAM params[])
{
    return gcm_init(vctx, 1, key, keylen, iv, ivlen, params);
}

static int kc_gcm_dinit(void *vctx, const unsigned char *key, size_t keylen,
                        const unsigned char *iv, size_t ivlen,
                        const OSSL_PARAM params[])
{
    return gcm_init(vctx, 0, key, keylen, iv, ivlen, params);
}

/*
 * Decrypt final on a spare with no tag set: a fresh context fails here
 * without touching its GHASH state, and, unless its IV is already used up,
 * raises the error measured at start (none on OpenSSL 3.0).  The inner is
 * not asked: it would compare against the parked tag and finish its GHASH.
 */
static int stale_decrypt_final(KC_GCM_CTX *w, size_t *outl)
{
    if (!w->finished && w->g->dec_final_err != 0)
        ERR_raise(ERR_GET_LIB(w->g->dec_final_err),
                  ERR_GET_REASON(w->g->dec_final_err));
    *outl = 0;
    return 0;
}

static int kc_gcm_update(void *vctx, unsigned char *out, size_t *outl,
                         size_t outsize, const unsigned char *in, size_t inl)
{
    KC_GCM_CTX *w = vctx;

    if (w->inner == NULL && !materialize(w))
        return 0;
    return fns(w)->update(w->inner, out, outl, outsize, in, inl);
}

static int kc_gcm_final(void *vctx, unsigned char *out, size_t *outl,
                        size_t outsize)
{
    KC_GCM_CTX *w = vctx;
    int r;

    if (w->inner == NULL && !materialize(w))
        return 0;
    if (!stale_tag(w))              /* the common case: nothing to follow */
        return fns(w)->final(w->inner, out, outl, outsize);
    if (!w->enc && !w->tls_seen)
        return stale_decrypt_final(w, outl);
    r = fns(w)->final(w->inner, out, outl, outsize);
    if (r) {
        w->finished = 1;
        w->tag_set |= w->enc;
    }
    return r;
}

static int kc_gcm_cipher(void *vctx, unsigned char *out, size_t *outl,
                         size_t outsize, const unsigned char *in, size_t inl)
{
    KC_GCM_CTX *w = vctx;
    int r;

    if (fns(w)->cipher == NULL || (w->inner == NULL && !materialize(w)))
        return 0;
    if (!stale_tag(w))
        return fns(w)->cipher(w->inner, out, outl, outsize, in, inl);
    /* with no input, this is the final */
    if (in == NULL && !w->enc && !w->tls_seen)
        return stale_decrypt_final(w, outl);
    r = fns(w)->cipher(w->inner, out, outl, outsize, in, inl);
    /* a TLS record never succeeds without input: this was a real final */
    if (in == NULL && r) {
        w->finished = 1;
        w->tag_set |= w->enc;
    }
    return r;
}

/*
 * The params a GCM context reads after the tag (in every version's order):
 * a fresh context that fails on the tag never gets to them.
 */
static int read_after_tag(const char *k)
{
    return name_kind(k) == G_TAG
           || strcmp(k, OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN) == 0
           || strcmp(k, "iv-generated") == 0;      /* 3.5+ */
}

/*
 * get_ctx_params on a keyed inner.  A spare's tag length and tag are left
 * from its last use, so while they could show (no tag set, no encryption
 * finished yet) the tag length is reported as a fresh context reports it,
 * and getting the tag on an encrypting context fails as it does on a fresh
 * one - after the params a fresh context reads before the tag.  Both
 * answers were measured on the running default provider at start.
 */
static int keyed_get(KC_GCM_CTX *w, OSSL_PARAM params[])
{
    OSSL_PARAM *p, local[16], *rest = local;
    size_t n = 0, i;
    int tagq = 0, lenq = 0, r;

    /*
     * Reads change nothing a spare could carry to the next user (the TLS
     * IV generator only moves once a TLS fixed IV was set, which already
     * keeps the context from being parked), so they pass straight through
     * unless a stale tag could show.
     */
    if (!stale_tag(w))
        return fns(w)->get_ctx_params(w->inner, params);
    for (p = params; p != NULL && p->key != NULL; p++, n++) {
        int kind = name_kind(p->key);

        tagq |= kind == G_TAG && w->enc;
        lenq |= kind == G_TAGLEN;
    }
    if (!tagq && !lenq)
        return fns(w)->get_ctx_params(w->inner, params);

    if (n + 1 > sizeof(local) / sizeof(local[0])
        && (rest = OPENSSL_malloc((n + 1) * sizeof(*rest))) == NULL)
        return 0;
    /* a fresh context failing on the tag never reads what comes after it */
    for (p = params, i = 0; p->key != NULL; p++) {
        if (tagq && read_after_tag(p->key))
            continue;
        rest[i] = *p;
        if (name_kind(p->key) == G_TAGLEN)
            rest[i].return_size = OSSL_PARAM_UNMODIFIED;
        i++;
    }
    rest[i] = *p;                       /* the end marker */
    r = fns(w)->get_ctx_params(w->inner, rest);
    for (p = params, i = 0; p->key != NULL; p++) {
        if (tagq && read_after_tag(p->key))
            continue;
        if (name_kind(p->key) != G_TAGLEN)
            p->return_size = rest[i].return_size;
        else if (OSSL_PARAM_modified(&rest[i])
                 && !OSSL_PARAM_set_size_t(p, w->g->fresh_taglen))
            r = 0;                      /* cannot happen: the inner fit */
        i++;
    }
    if (rest != local)
        OPENSSL_free(rest);
    if (!r || !tagq)
        return r;
    if (w->g->tag_get_err != 0)
        ERR_raise(ERR_GET_LIB(w->g->tag_get_err),
                  ERR_GET_REASON(w->g->tag_get_err));
    return 0;
}

/*
 * The length queries EVP makes before init, answered from the record.
 * Returns 1 if answered, 0 if the params need a real context.
 */
static int answer_lengths(KC_GCM_CTX *w, OSSL_PARAM params[])
{
    const OSSL_PARAM *gettable = NULL;
    OSSL_PARAM *p, *q[G_TAGLEN + 1] = { NULL };
    size_t v[G_TAGLEN + 1];
    int kind;

    for (p = params; p->key != NULL; p++) {
        kind = name_kind(p->key);
        if (kind == G_IVLEN || kind == G_KEYLEN || kind == G_TAGLEN) {
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

static int kc_gcm_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_GCM_CTX *w = vctx;

    if (w->inner != NULL)
        return keyed_get(w, params);
    if (params != NULL && answer_lengths(w, params))
        return 1;
    if (!materialize(w))
        return 0;
    return fns(w)->get_ctx_params(w->inner, params);
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
 * Measure how the running default provider answers, on a fresh keyed
 * context, the questions a spare's stale tag would answer differently: the
 * tag length, getting the tag, and decrypt final without a tag.
 */
static void calibrate(KC_PROVCTX *pctx, KC_GCM_INNER *g)
{
    static const unsigned char zero[32] = { 0 };
    /* marks where our probes' errors start; removed again below */
    const unsigned long sentinel = ERR_PACK(ERR_LIB_PROV, 0, ERR_R_INTERNAL_ERROR);
    unsigned char buf[KC_GCM_TAG_MAX];
    size_t taglen = KC_GCM_TAG_MAX, outl;
    unsigned long e;
    OSSL_PARAM p[2];
    void *enc, *dec;

    g->fresh_taglen = KC_GCM_TAG_MAX;
    g->park_ok = 0;
    g->tag_get_err = g->dec_final_err = 0;
    p[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    enc = g->fns.newctx(pctx->inner_provctx);
    dec = g->fns.newctx(pctx->inner_provctx);
    if (enc != NULL && g->fns.einit(enc, zero, g->keylen, zero, 12, NULL)) {
        p[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_TAGLEN,
                                           &taglen);
        /* a parked spare's tag length is 16; if a fresh context reports
         * anything else, spares are not used */
        if (g->fns.get_ctx_params(enc, p) && taglen == KC_GCM_TAG_MAX) {
            g->fresh_taglen = taglen;
            g->park_ok = 1;
        }
        ERR_raise(ERR_GET_LIB(sentinel), ERR_GET_REASON(sentinel));
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                                 buf, sizeof(buf));
        if (!g->fns.get_ctx_params(enc, p)
            && (e = ERR_peek_last_error()) != sentinel)
            g->tag_get_err = e;
    }
    if (dec != NULL && g->fns.dinit(dec, zero, g->keylen, zero, 12, NULL)) {
        ERR_raise(ERR_GET_LIB(sentinel), ERR_GET_REASON(sentinel));
        if (!g->fns.final(dec, buf, &outl, sizeof(buf))
            && (e = ERR_peek_last_error()) != sentinel)
            g->dec_final_err = e;
    }
    if (enc != NULL)
        g->fns.freectx(enc);
    if (dec != NULL)
        g->fns.freectx(dec);
    ERR_pop_to_mark();
}

void kc_gcm_bind(KC_PROVCTX *pctx)
{
    int i;

    for (i = 0; i < KC_GCM_COUNT; i++) {
        inner_get_params[i] = pctx->gcm[i].fns.get_params;
        calibrate(pctx, &pctx->gcm[i]);
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
