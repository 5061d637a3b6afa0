/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The template layer for ciphers (AES-OCB, AES-SIV): what tmpl.c is for
 * the MAC families, with a cipher's calls.
 *
 * A cache entry is a pristine template: an inner (default provider) cipher
 * context that got the calls the application made before the key (its
 * "shape": keyless inits, an IV or tag length ...) and was then keyed with
 * init(key) alone, and never used.  The keying init of a wrapper, init(key,
 * iv, params), becomes on a hit a copy of the template and init(NULL, iv,
 * params) on the copy: the default handles the IV and the params of an
 * init apart from the key and keys without looking at them, so both end in
 * the same state (a family whose key set-up depends on the direction, OCB,
 * keeps a template per direction).  If that rest of the init fails, the
 * copy is dropped and the whole init is passed to a plain default context,
 * so the error is the default's own.
 *
 * Before the key, the wrapper records its calls (tmpl.c's records) when
 * every parameter is one the family lists as part of a shape and none of
 * them changes per message; the record is part of the cache key.  Whether
 * the default accepts a record (and what IV and key length such a context
 * reports, which EVP asks before every init) is learned once per thread
 * and record from a transient default context.  Anything else - an IV or a
 * tag given before the key, an update before the key, a name the family
 * does not list - makes the wrapper build a plain default context, replay
 * the record onto it and pass everything through from then on.
 *
 * Used contexts are never handed out again (as for GCM: a used cipher
 * context keeps per-message state that no call resets).
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "kc_local.h"

/* the most parameters one recorded call may have */
#define KC_CCALL_MAX 8

/*
 * What the record memo learns about a record: accepted (every call
 * returned 1 and raised nothing), and the IV and key lengths a context in
 * that state reports (0: not learned, ask a transient context).
 */
#define CV_VALID 1
#define CV_IVLEN_SHIFT 1
#define CV_KEYLEN_SHIFT 12
#define CV_LEN_MAX 0x7ff
#define CV_IVLEN(v) ((size_t)(((v) >> CV_IVLEN_SHIFT) & CV_LEN_MAX))
#define CV_KEYLEN(v) ((size_t)(((v) >> CV_KEYLEN_SHIFT) & CV_LEN_MAX))

typedef struct {
    KC_PROVCTX *pctx;
    const KC_CFAM *f;
    void *inner;                /* the default's context, once there is one */
    int value;                  /* memo value of rec, -1: not learned yet */
    size_t len;
    uint64_t hash;
    uint64_t rec[KC_TREC_MAX / 8];
} KC_TCIPH_CTX;

/* a new wrapper clears only this much: the record is written before read */
#define KC_TCIPH_HEAD offsetof(KC_TCIPH_CTX, rec)

static const KC_CIPHER_FNS *fns(const KC_TCIPH_CTX *w)
{
    return &w->f->fns;
}

static int inner_init(const KC_CIPHER_FNS *f, void *inner, int enc,
                      const unsigned char *key, size_t keylen,
                      const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    return enc ? f->einit(inner, key, keylen, iv, ivlen, params)
               : f->dinit(inner, key, keylen, iv, ivlen, params);
}

/* ---------------------------------------------------------------------- */
/* Records                                                                */

/* One recorded call onto an inner context: its params are p[0, n). */
static int replay_call(const KC_TCIPH_CTX *w, void *ctx, const KC_TITEM *call,
                       OSSL_PARAM *p, size_t n)
{
    const OSSL_PARAM *ps = (call->type & KC_T_NULL) != 0 ? NULL : p;

    p[n] = OSSL_PARAM_construct_end();
    if (call->tag == KC_T_CALL)
        return fns(w)->set_ctx_params(ctx, ps);
    return inner_init(fns(w), ctx, call->tag == KC_T_EINIT, NULL, 0, NULL, 0,
                      ps);
}

/* Replay the record's calls onto an inner context, stopping at a failure. */
static int replay(const KC_TCIPH_CTX *w, void *ctx)
{
    const unsigned char *rec = (const unsigned char *)w->rec;
    OSSL_PARAM p[KC_CCALL_MAX + 1];
    KC_TITEM it, call;
    size_t off = 0, n = 0;
    int open = 0;

    while (off < w->len) {
        off = kc_trec_get(rec, off, &it, &p[n]);
        if (it.tag == KC_T_PARAM) {
            n++;
            continue;
        }
        if (open && !replay_call(w, ctx, &call, p, n))
            return 0;
        call = it;
        open = 1;
        n = 0;
    }
    return !open || replay_call(w, ctx, &call, p, n);
}

/* May p be part of a shape (a name the family lists, not per message)? */
static int in_shape(const KC_CDESC *d, const OSSL_PARAM *p)
{
    const char *const *n;

    for (n = d->shape_names; *n != NULL; n++)
        if ((*n)[0] == p->key[0] && strcmp(*n, p->key) == 0)
            return d->per_message == NULL || !d->per_message(p);
    return 0;
}

/*
 * Append one call (a marker, then its params) to the record; 0 if a
 * parameter may not be part of a shape, is there twice (which of them
 * counts differs between OpenSSL versions: the default decides) or does
 * not fit.  The caller rolls back.
 */
static int append(KC_TCIPH_CTX *w, int tag, const OSSL_PARAM params[])
{
    unsigned char *rec = (unsigned char *)w->rec;
    const OSSL_PARAM *p, *q;
    size_t start = w->len, n = 0, nl;
    KC_TITEM it;

    if (!kc_trec_put(rec, KC_TREC_MAX, &w->len, tag, NULL, 0))
        return 0;
    if (params == NULL) {
        memcpy(&it, rec + start, sizeof(it));
        it.type = KC_T_NULL;
        memcpy(rec + start, &it, sizeof(it));
    }
    for (p = params; p != NULL && p->key != NULL; p++, n++) {
        if (n == KC_CCALL_MAX || !in_shape(w->f->d, p)
            || (nl = kc_trec_recordable(p)) == 0)
            return 0;
        for (q = params; q < p; q++)
            if (strcmp(q->key, p->key) == 0)
                return 0;
        if (!kc_trec_put(rec, KC_TREC_MAX, &w->len, KC_T_PARAM, p, nl))
            return 0;
    }
    w->hash = kc_trec_hash(w->hash ^ 0x2545f4914f6cdd1dULL,
                           (const uint64_t *)(rec + start), w->len - start);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* What the default says                                                  */

/*
 * A context's answer to EVP's lone size_t query of name, as a CV_ field:
 * 0 not learned, 1 returns 1 and leaves it alone, else the value + 2.
 */
static size_t ask_len(const KC_CIPHER_FNS *f, void *ctx, const char *name)
{
    size_t v = 0;
    OSSL_PARAM q[2];

    q[0] = OSSL_PARAM_construct_size_t(name, &v);
    q[1] = OSSL_PARAM_construct_end();
    if (f->get_ctx_params(ctx, q) != 1)
        return 0;
    if (!OSSL_PARAM_modified(&q[0]))
        return 1;
    return v <= CV_LEN_MAX - 2 ? v + 2 : 0;
}

/*
 * Replay the record onto a transient default context: the memo value (see
 * CV_*).  Leaves the error queue as it was.
 */
static int probe(const KC_TCIPH_CTX *w)
{
    const KC_CIPHER_FNS *f = fns(w);
    KC_ERRTOP before, after;
    size_t ivlen, keylen;
    void *t;
    int v = 0;

    ERR_set_mark();
    kc_err_top(&before);
    if ((t = f->newctx(w->pctx->inner_provctx)) != NULL) {
        if (replay(w, t)) {
            kc_err_top(&after);
            v = kc_err_same(&before, &after) ? CV_VALID : 0;
        }
        if (v != 0 && f->get_ctx_params != NULL) {
            ivlen = ask_len(f, t, OSSL_CIPHER_PARAM_IVLEN);
            keylen = ask_len(f, t, OSSL_CIPHER_PARAM_KEYLEN);
            kc_err_top(&after);
            /* answers that raised an error are left to a real context */
            if (kc_err_same(&before, &after))
                v |= (int)(ivlen << CV_IVLEN_SHIFT)
                     | (int)(keylen << CV_KEYLEN_SHIFT);
        }
        f->freectx(t);
    }
    ERR_pop_to_mark();
    return v;
}

static KC_NOINLINE int learn(const KC_TCIPH_CTX *w, KC_CACHE *c)
{
    const unsigned char *rec = (const unsigned char *)w->rec;
    int v;

    if (w->len == 0)
        return w->f->empty_value;
    if ((v = kc_cache_rec_get(c, w->f, w->hash, rec, w->len, NULL, 0)) >= 0)
        return v;
    v = probe(w);
    kc_cache_rec_put(c, w->f, w->hash, rec, w->len, NULL, 0, v);
    return v;
}

/*
 * Record a call made before the key, if it can be part of a shape and the
 * default accepts it.  1 recorded (the call returns 1), 0 rolled back (the
 * caller passes it through).
 */
static int record(KC_TCIPH_CTX *w, int tag, const OSSL_PARAM params[])
{
    size_t len = w->len;
    uint64_t hash = w->hash;
    KC_CACHE *c;
    int v;

    if ((c = kc_cache_get(w->pctx)) != NULL && append(w, tag, params)
        && ((v = learn(w, c)) & CV_VALID) != 0) {
        w->value = v;
        return 1;
    }
    w->len = len;
    w->hash = hash;
    return 0;
}

/* Pass-through from now on: a plain inner context with the record replayed. */
static KC_NOINLINE int materialize(KC_TCIPH_CTX *w)
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
    kc_count_passthrough(w->pctx, &w->f->alg[1]);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Keying                                                                 */

/*
 * A new template: a fresh inner context with the record replayed and keyed
 * with init(key) alone.  NULL if any of it fails or raises an error (the
 * caller passes through and the default says why); the error queue is
 * left as it was.
 */
static void *make_template(const KC_TCIPH_CTX *w, int enc,
                           const unsigned char *key, size_t keylen)
{
    const KC_CIPHER_FNS *f = fns(w);
    KC_ERRTOP before, after;
    void *t;
    int ok;

    ERR_set_mark();
    kc_err_top(&before);
    ok = (t = f->newctx(w->pctx->inner_provctx)) != NULL && replay(w, t)
         && inner_init(f, t, enc, key, keylen, NULL, 0, NULL);
    kc_err_top(&after);
    if (!ok || !kc_err_same(&before, &after)) {
        if (t != NULL)
            f->freectx(t);
        t = NULL;
    }
    ERR_pop_to_mark();
    return t;
}

/*
 * The key arrives: a copy of the template for (record, key), made and
 * cached on a miss once the key is admitted, then the rest of the init.
 * 1 done, 0 when this cannot be served from the cache (the caller passes
 * the whole init through).
 */
static int keyed_init(KC_TCIPH_CTX *w, int enc, const unsigned char *key,
                      size_t keylen, const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    const KC_CFAM *f = w->f;
    const KC_ALG *alg = &f->alg[f->d->key_by_direction ? enc : 1];
    const unsigned char *rec = (const unsigned char *)w->rec;
    KC_LOOKUP lk;
    KC_CACHE *c;
    void *tmpl, *inner;

    if (keylen != f->keylen || keylen > KEYCACHE_MAX_KEY_LEN
        || (w->value & CV_VALID) == 0 || (c = kc_cache_get(w->pctx)) == NULL)
        return 0;
    tmpl = kc_cache_find_rec(c, alg, rec, w->len, w->hash, key, keylen, &lk);
    if (tmpl == NULL) {
        /* not (yet) seen often enough: the default's own calls, uncached */
        if (!lk.admit || (tmpl = make_template(w, enc, key, keylen)) == NULL)
            return 0;
        if (!kc_cache_add_rec(c, alg, rec, w->len, key, keylen, tmpl, &lk)) {
            f->fns.freectx(tmpl);
            return 0;
        }
    }
    if ((inner = f->fns.dupctx(tmpl)) == NULL)
        return 0;
    /* the IV and params: if the default refuses them, it says so itself */
    ERR_set_mark();
    if (!inner_init(&f->fns, inner, enc, NULL, 0, iv, ivlen, params)) {
        ERR_pop_to_mark();
        f->fns.freectx(inner);
        return 0;
    }
    ERR_clear_last_mark();
    w->inner = inner;
    return 1;
}

/* ---------------------------------------------------------------------- */
/* The dispatch functions                                                 */

/*
 * get_params has no provider context, so the inner functions are kept here.
 * They are libcrypto's own static functions: the same for every instance.
 */
static OSSL_FUNC_cipher_get_params_fn *inner_get_params[KC_CFAM_COUNT];

void *kc_tciph_newctx(KC_PROVCTX *pctx, int which)
{
    const KC_CFAM *f = &pctx->cfam[which];
    KC_TCIPH_CTX *w;
    int cold;

    w = kc_wrapper_new_cold(pctx, KC_POOL_CTMPL, sizeof(*w), KC_TCIPH_HEAD,
                            &f->alg[1], &cold);
    if (w == NULL)
        return NULL;
    w->pctx = pctx;
    w->f = f;
    w->value = f->empty_value;
    /* almost every key misses on this thread: the default's from the start */
    if (cold && (w->inner = f->fns.newctx(pctx->inner_provctx)) == NULL) {
        kc_wrapper_free(pctx, KC_POOL_CTMPL, w, sizeof(*w));
        return NULL;
    }
    return w;
}

void kc_tciph_freectx(void *vctx)
{
    KC_TCIPH_CTX *w = vctx;

    if (w == NULL)
        return;
    if (w->inner != NULL)
        fns(w)->freectx(w->inner);
    kc_wrapper_free(w->pctx, KC_POOL_CTMPL, w, sizeof(*w));
}

/* Before the key: can the default duplicate a context in this state? */
static KC_NOINLINE int unkeyed_dup_ok(const KC_TCIPH_CTX *w)
{
    void *t, *d = NULL;

    if ((t = fns(w)->newctx(w->pctx->inner_provctx)) == NULL)
        return 0;
    if (replay(w, t) && (d = fns(w)->dupctx(t)) != NULL)
        fns(w)->freectx(d);
    fns(w)->freectx(t);
    return d != NULL;
}

void *kc_tciph_dupctx(void *vctx)
{
    KC_TCIPH_CTX *src = vctx, *dst;

    if (src->inner == NULL && !unkeyed_dup_ok(src))
        return NULL;
    dst = kc_wrapper_new_head(src->pctx, KC_POOL_CTMPL, sizeof(*dst),
                              KC_TCIPH_HEAD);
    if (dst == NULL)
        return NULL;
    memcpy(dst, src, KC_TCIPH_HEAD);
    memcpy(dst->rec, src->rec, src->len);
    if (src->inner != NULL
        && (dst->inner = fns(src)->dupctx(src->inner)) == NULL) {
        kc_wrapper_free(src->pctx, KC_POOL_CTMPL, dst, sizeof(*dst));
        return NULL;
    }
    return dst;
}

static KC_NOINLINE int unkeyed_init(KC_TCIPH_CTX *w, int enc,
                                    const unsigned char *key, size_t keylen,
                                    const unsigned char *iv, size_t ivlen,
                                    const OSSL_PARAM params[])
{
    if (key != NULL) {
        if (keyed_init(w, enc, key, keylen, iv, ivlen, params))
            return 1;
    } else if (iv == NULL
               && record(w, enc ? KC_T_EINIT : KC_T_DINIT, params)) {
        return 1;
    }
    return materialize(w)
           && inner_init(fns(w), w->inner, enc, key, keylen, iv, ivlen,
                         params);
}

int kc_tciph_einit(void *vctx, const unsigned char *key, size_t keylen,
                   const unsigned char *iv, size_t ivlen,
                   const OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->einit(w->inner, key, keylen, iv, ivlen, params);
    return unkeyed_init(w, 1, key, keylen, iv, ivlen, params);
}

int kc_tciph_dinit(void *vctx, const unsigned char *key, size_t keylen,
                   const unsigned char *iv, size_t ivlen,
                   const OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->dinit(w->inner, key, keylen, iv, ivlen, params);
    return unkeyed_init(w, 0, key, keylen, iv, ivlen, params);
}

static KC_NOINLINE int unkeyed_update(KC_TCIPH_CTX *w, unsigned char *out,
                                      size_t *outl, size_t outsize,
                                      const unsigned char *in, size_t inl)
{
    return materialize(w)
           && fns(w)->update(w->inner, out, outl, outsize, in, inl);
}

int kc_tciph_update(void *vctx, unsigned char *out, size_t *outl,
                    size_t outsize, const unsigned char *in, size_t inl)
{
    KC_TCIPH_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->update(w->inner, out, outl, outsize, in, inl);
    return unkeyed_update(w, out, outl, outsize, in, inl);
}

static KC_NOINLINE int unkeyed_final(KC_TCIPH_CTX *w, unsigned char *out,
                                     size_t *outl, size_t outsize)
{
    return materialize(w) && fns(w)->final(w->inner, out, outl, outsize);
}

int kc_tciph_final(void *vctx, unsigned char *out, size_t *outl,
                   size_t outsize)
{
    KC_TCIPH_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->final(w->inner, out, outl, outsize);
    return unkeyed_final(w, out, outl, outsize);
}

static KC_NOINLINE int unkeyed_cipher(KC_TCIPH_CTX *w, unsigned char *out,
                                      size_t *outl, size_t outsize,
                                      const unsigned char *in, size_t inl)
{
    return materialize(w)
           && fns(w)->cipher(w->inner, out, outl, outsize, in, inl);
}

int kc_tciph_cipher(void *vctx, unsigned char *out, size_t *outl,
                    size_t outsize, const unsigned char *in, size_t inl)
{
    KC_TCIPH_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->cipher(w->inner, out, outl, outsize, in, inl);
    return unkeyed_cipher(w, out, outl, outsize, in, inl);
}

static KC_NOINLINE int unkeyed_set_params(KC_TCIPH_CTX *w,
                                          const OSSL_PARAM params[])
{
    return record(w, KC_T_CALL, params)
           || (materialize(w) && fns(w)->set_ctx_params(w->inner, params));
}

int kc_tciph_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->set_ctx_params(w->inner, params);
    return unkeyed_set_params(w, params);
}

/*
 * EVP asks for the key and IV lengths, one at a time into a size_t, before
 * every init: the default's answer for this record, as learned.  1 if
 * answered, 0 if a real context must say.
 */
static int answer_len(const KC_TCIPH_CTX *w, OSSL_PARAM *p)
{
    const char *k = p[0].key;
    size_t field;

    if (k == NULL || p[1].key != NULL || p->data == NULL || w->value < 0
        || p->data_type != OSSL_PARAM_UNSIGNED_INTEGER
        || p->data_size != sizeof(size_t))
        return 0;
    if (strcmp(k, OSSL_CIPHER_PARAM_IVLEN) == 0)
        field = CV_IVLEN(w->value);
    else if (strcmp(k, OSSL_CIPHER_PARAM_KEYLEN) == 0)
        field = CV_KEYLEN(w->value);
    else
        return 0;
    if (field == 0)
        return 0;
    if (field > 1) {
        *(size_t *)p->data = field - 2;
        p->return_size = sizeof(size_t);
    }
    return 1;
}

/*
 * Anything else before the key: ask a transient default context with the
 * record replayed, so the answer and any error are the default's and this
 * context stays cacheable.
 */
static KC_NOINLINE int unkeyed_get_params(KC_TCIPH_CTX *w,
                                          OSSL_PARAM params[])
{
    void *t;
    int ok;

    if (params != NULL && answer_len(w, params))
        return 1;
    if ((t = fns(w)->newctx(w->pctx->inner_provctx)) == NULL)
        return 0;
    ok = replay(w, t) && fns(w)->get_ctx_params(t, params);
    fns(w)->freectx(t);
    return ok;
}

int kc_tciph_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->get_ctx_params(w->inner, params);
    return unkeyed_get_params(w, params);
}

const OSSL_PARAM *kc_tciph_gettable_ctx_params(KC_PROVCTX *pctx, int which)
{
    const KC_CIPHER_FNS *f = &pctx->cfam[which].fns;

    return f->gettable_ctx_params == NULL ? NULL
           : f->gettable_ctx_params(NULL, pctx->inner_provctx);
}

const OSSL_PARAM *kc_tciph_settable_ctx_params(KC_PROVCTX *pctx, int which)
{
    const KC_CIPHER_FNS *f = &pctx->cfam[which].fns;

    return f->settable_ctx_params == NULL ? NULL
           : f->settable_ctx_params(NULL, pctx->inner_provctx);
}

const OSSL_PARAM *kc_tciph_gettable_params(KC_PROVCTX *pctx, int which)
{
    const KC_CIPHER_FNS *f = &pctx->cfam[which].fns;

    return f->gettable_params == NULL ? NULL
           : f->gettable_params(pctx->inner_provctx);
}

int kc_tciph_get_params(int which, OSSL_PARAM params[])
{
    return inner_get_params[which] != NULL && inner_get_params[which](params);
}

/* ---------------------------------------------------------------------- */
/* Start                                                                  */

int kc_ctmpl_bind(KC_PROVCTX *pctx, KC_CFAM *f, const OSSL_ALGORITHM *alg)
{
    const KC_CIPHER_FNS *m = &f->fns;
    int which = (int)(f - pctx->cfam), i;
    KC_TCIPH_CTX probe_w;
    OSSL_PARAM q[2];
    size_t keylen = 0;

    if (m->newctx == NULL || m->dupctx == NULL || m->freectx == NULL
        || m->einit == NULL || m->dinit == NULL || m->update == NULL
        || m->final == NULL || m->cipher == NULL || m->get_params == NULL
        || m->get_ctx_params == NULL || m->set_ctx_params == NULL)
        return 0;
    for (i = 0; i < 2; i++) {
        f->alg[i].names = alg->algorithm_names;
        f->alg[i].freectx = m->freectx;
        f->alg[i].spare_max = 0;
        f->alg[i].stat = KC_STAT_CFAM + (unsigned int)which;
    }
    inner_get_params[which] = m->get_params;
    /* the key length every init must bring (the default checks it too) */
    q[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN, &keylen);
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    if (m->get_params(q) != 1 || !OSSL_PARAM_modified(&q[0]))
        keylen = 0;
    ERR_pop_to_mark();
    f->keylen = keylen;
    /* what a fresh context is, for every wrapper before its first call */
    memset(&probe_w, 0, KC_TCIPH_HEAD);
    probe_w.pctx = pctx;
    probe_w.f = f;
    f->empty_value = probe(&probe_w);
    return keylen != 0;
}
