/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The template core's cipher side (core.c): AES-OCB, AES-SIV, AES-GCM.
 * Before the key only calls of the family's shape names (and GCM's
 * volatile IV or tag) are recorded; the memo also keeps the IV and key
 * lengths EVP asks before every init.  On a hit init(key, iv, params) is a
 * copy of the template, then init(NULL, iv, params) on it: the default keys
 * without looking at the IV or params, so both end alike (OCB keys by
 * direction: a template each).  If that rest fails, the whole init passes
 * through so the error is the default's.  Used contexts are never handed
 * out again: no call resets their per-message state.  Keyed again with the
 * key it holds, a context may skip keying (rekey_keyless, GCM).
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "layer/layer.h"

/*
 * The record memo's value of a shape: CV_VALID, and the IV and key lengths
 * a context in that state reports, as fields: 0 not learned (ask), 1 returns
 * 1 and leaves the value alone, else the value + 2.  Volatile: CV_VALID only.
 */
#define CV_VALID KC_TVALID
#define CV_IVLEN_SHIFT 1
#define CV_KEYLEN_SHIFT 12
#define CV_LEN_MAX 0x7ff
#define CV_IVLEN(v) ((size_t)(((v) >> CV_IVLEN_SHIFT) & CV_LEN_MAX))
#define CV_KEYLEN(v) ((size_t)(((v) >> CV_KEYLEN_SHIFT) & CV_LEN_MAX))

/* an init marker's type bits besides KC_T_NULL: an IV item follows */
#define KC_TF_IV 1
/* a signature's first marker: the direction the volatile calls began in */
#define KC_TF_VDIR 2

/* mixes a record's hash */
#define KC_CALL_SALT 0x2545f4914f6cdd1dULL

/* the longest IV hold_iv() holds back (GCM's usual 12, AES's block) */
#define KC_PIV_MAX 16

typedef struct {
    /* where calls go (ours with w, then the inner's): 3 loads and a jump */
    const KC_CIPHER_FNS *to;
    void *arg;
    KC_PROVCTX *pctx;
    const KC_CFAM *f;
    const KC_CIPHER_FNS *ifn;   /* t.inner's functions: fns, or f->kfns */
    int dir;                    /* the last recorded init's direction, -1 */
    int vdir;                   /* dir when the volatile calls began */
    /*
     * just keyed or keyed_known (see there): the IV length it has now, as
     * a CV_ field; keyed_known: the key length too
     */
    size_t keyed_ivlen, keyed_keylen;
    /* key[] holds the key inner has, keyed to encrypt (2) or decrypt (1) */
    unsigned char held;
    /* a keyless init's IV held back (hold_iv()): piv_len bytes of piv[] */
    unsigned char piv_len;
    unsigned char piv_enc;
    KC_TCORE t;                 /* t.value: the shape's CV_ fields */
    /* not cleared at new: key[] read only while held, piv[] while piv_len */
    unsigned char key[KC_HELD_MAX];
    unsigned char piv[KC_PIV_MAX];
} KC_TCIPH_CTX;

#define KC_TCIPH_HEAD KC_TCORE_HEAD(KC_TCIPH_CTX)
#define W(core) KC_TCORE_OF(KC_TCIPH_CTX, core)

static const KC_TSIDE cipher_side;
static const KC_CIPHER_FNS keyed_known;

static const KC_CIPHER_FNS *fns(const KC_TCIPH_CTX *w)
{
    return &w->f->fns;
}

/* set once by the family's first use (kc_ctmpl_first_use()), 0 till then */
static ossl_inline size_t keylen_of(const KC_CFAM *f)
{
    return __atomic_load_n(&f->keylen, __ATOMIC_RELAXED);
}

/* From now on every call goes to the inner context. */
static void set_inner(KC_TCIPH_CTX *w, void *inner, const KC_CIPHER_FNS *ifn)
{
    w->t.inner = inner;
    w->ifn = ifn;
    w->to = ifn;
    w->arg = inner;
}

/*
 * w keyed, on inner: forwarding all (set_inner()), or where EVP asks the
 * lengths at every init and an IV length is known, keyed_known (see there)
 * with these CV_ fields.  1: keyed_known.
 */
static int set_keyed(KC_TCIPH_CTX *w, void *inner, const KC_CIPHER_FNS *ifn,
                     size_t ivlen_field, size_t keylen_field)
{
    set_inner(w, inner, ifn);
    if (!w->f->asks_lengths || ivlen_field <= 2)
        return 0;
    w->keyed_ivlen = ivlen_field;
    w->keyed_keylen = keylen_field;
    w->to = &keyed_known;
    w->arg = w;
    return 1;
}

static int inner_init(const KC_CIPHER_FNS *f, void *inner, int enc,
                      const unsigned char *key, size_t keylen,
                      const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    return enc ? f->einit(inner, key, keylen, iv, ivlen, params)
               : f->dinit(inner, key, keylen, iv, ivlen, params);
}

/* A table's einit and dinit: name_init(w, enc, ...) in each direction. */
#define KC_INIT_PAIR(name)                                                    \
    static int name##_einit(void *vctx, const unsigned char *key,             \
                            size_t keylen, const unsigned char *iv,           \
                            size_t ivlen, const OSSL_PARAM params[])          \
    {                                                                         \
        return name##_init(vctx, 1, key, keylen, iv, ivlen, params);          \
    }                                                                         \
    static int name##_dinit(void *vctx, const unsigned char *key,             \
                            size_t keylen, const unsigned char *iv,           \
                            size_t ivlen, const OSSL_PARAM params[])          \
    {                                                                         \
        return name##_init(vctx, 0, key, keylen, iv, ivlen, params);          \
    }

/* One recorded call onto an inner context of f's (a KC_TCALL_FN). */
static int replay_call(const void *f, void *ctx, const KC_TITEM *call,
                       OSSL_PARAM *p, size_t n)
{
    const unsigned char *iv = NULL;
    size_t ivlen = 0;

    p[n] = OSSL_PARAM_construct_end();
    /* a keyless init's IV is recorded as its first item */
    if (call->tag != KC_T_CALL && (call->type & KC_TF_IV) != 0) {
        iv = p[0].data;
        ivlen = p[0].data_size;
        p++;
    }
    if ((call->type & KC_T_NULL) != 0)
        p = NULL;
    if (call->tag == KC_T_CALL)
        return ((const KC_CIPHER_FNS *)f)->set_ctx_params(ctx, p);
    return inner_init(f, ctx, call->tag == KC_T_EINIT, NULL, 0, iv, ivlen, p);
}

/* Replay the record's calls in [from, to) onto an inner context of f's. */
static int replay(const KC_TCIPH_CTX *w, const KC_CIPHER_FNS *f, void *ctx,
                  size_t from, size_t to)
{
    return kc_trec_replay_calls((const unsigned char *)w->t.rec, from, to,
                                replay_call, f, ctx);
}

/* The volatile calls, in their direction (keying touches no IV or tag). */
static int replay_volatile(const KC_TCIPH_CTX *w, const KC_CIPHER_FNS *f,
                           void *inner)
{
    return inner_init(f, inner, w->vdir, NULL, 0, NULL, 0, NULL)
           && replay(w, f, inner, w->t.shape_len, w->t.len);
}

/*
 * A plain default context in the state the calls before the key left: the
 * shape, then the volatile calls, or else the last keyless init's direction
 * (not recorded, see record(); no shape depends on it).  NULL on failure.
 */
static void *fresh_state(const KC_TCIPH_CTX *w)
{
    const KC_CIPHER_FNS *f = fns(w);
    void *ctx;
    int ok;

    if ((ctx = f->newctx(w->pctx->inner_provctx)) == NULL)
        return NULL;
    ok = replay(w, f, ctx, 0, w->t.shape_len);
    if (ok && w->t.len > w->t.shape_len)
        ok = replay_volatile(w, f, ctx);
    else if (ok && w->dir >= 0)
        ok = inner_init(f, ctx, w->dir, NULL, 0, NULL, 0, NULL);
    if (ok)
        return ctx;
    f->freectx(ctx);
    return NULL;
}

/* Is p one of the family's shape names (and not a message's)? */
static int in_shape(const KC_CDESC *d, const OSSL_PARAM *p)
{
    return kc_name_in_list(d->shape_names, p->key)
           && (d->per_message == NULL || !d->per_message(p));
}

/* Is p a message's that the family replays after the key (GCM's tag)? */
static int in_volatile(const KC_CDESC *d, const OSSL_PARAM *p)
{
    return d->volatile_ok && d->per_message != NULL && d->per_message(p);
}

/*
 * Append a call: a marker, a keyless init's IV (an item "iv"), its params:
 * all shape (vol 0) or all volatile ones, none twice (which counts differs
 * between versions: the default decides).  0: the caller rolls back.
 */
static int append(KC_TCIPH_CTX *w, int tag, const unsigned char *iv,
                  size_t ivlen, const OSSL_PARAM params[], int vol)
{
    const OSSL_PARAM *ps[KC_TCALL_MAX + 1], *p, *q;
    uint32_t type = (params == NULL ? KC_T_NULL : 0)
                    | (iv != NULL ? KC_TF_IV : 0);
    OSSL_PARAM ivp;
    size_t n = 0;

    if (iv != NULL) {
        ivp = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_IV,
                                                (void *)iv, ivlen);
        ps[n++] = &ivp;
    }
    for (p = params; p != NULL && p->key != NULL; p++) {
        if (p - params == KC_TCALL_MAX
            || !(vol ? in_volatile(w->f->d, p) : in_shape(w->f->d, p)))
            return 0;
        for (q = params; q < p; q++)
            if (strcmp(q->key, p->key) == 0)
                return 0;
        ps[n++] = p;
    }
    /* the volatile calls' signature starts with the direction they began in */
    if (vol && w->t.len == w->t.shape_len
        && !kc_trec_marker((unsigned char *)w->t.sig, KC_TSIG_MAX,
                           &w->t.sig_len, w->vdir ? KC_T_EINIT : KC_T_DINIT,
                           KC_TF_VDIR))
        return 0;
    return kc_tcore_append(&w->t, &cipher_side, tag, type, ps, n,
                           vol ? KC_AS_VOLATILE : KC_AS_SHAPE);
}

/* A context's answer to EVP's lone size_t query of name, as a CV_ field. */
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

/* The memo value of rec[0, to): the shape's, or the whole's (no lengths). */
static int probe(const KC_TCIPH_CTX *w, size_t to)
{
    const KC_CIPHER_FNS *f = fns(w);
    KC_ERRTOP before, after;
    size_t ivlen, keylen;
    void *t;
    int v = 0;

    ERR_set_mark();
    kc_err_top(&before);
    if ((t = f->newctx(w->pctx->inner_provctx)) != NULL) {
        if (replay(w, f, t, 0, w->t.shape_len)
            && (to == w->t.shape_len || replay_volatile(w, f, t))) {
            kc_err_top(&after);
            v = kc_err_same(&before, &after) ? CV_VALID : 0;
        }
        if (v != 0 && to == w->t.shape_len) {
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

/* kc_tcore_same_as_last() with params: the same keyless init and lengths. */
static int same_as_last(KC_TCIPH_CTX *w, KC_CACHE *c, int tag,
                        const OSSL_PARAM params[])
{
    const OSSL_PARAM *ps[KC_TCALL_MAX];
    size_t n = 0;

    for (; params != NULL && params[n].key != NULL; n++)
        if (n == KC_TCALL_MAX)
            return 0;
        else
            ps[n] = &params[n];
    return kc_tcore_same_as_last(&w->t, &cipher_side, c, w->f, tag,
                                 params == NULL ? KC_T_NULL : 0, ps, n);
}

/* The memo value of the shape, or of the volatile calls (CV_VALID). */
static int cipher_value(KC_TCORE *t, int vol)
{
    return vol ? probe(W(t), t->len) & CV_VALID : probe(W(t), t->shape_len);
}

/* The shape's memo value (a fresh wrapper's is f->empty_value). */
static KC_NOINLINE int learn_shape(KC_TCIPH_CTX *w, KC_CACHE *c)
{
    return kc_tcore_learn(&w->t, &cipher_side, c, w->f, 0);
}

/* The volatile calls' validity: by signature (an IV's bytes fail nothing). */
static KC_NOINLINE int learn_volatile(KC_TCIPH_CTX *w, KC_CACHE *c)
{
    return kc_tcore_learn(&w->t, &cipher_side, c, w->f, 1);
}

/*
 * A cold wrapper records nothing and looks nothing up: the default's
 * context serves it, unless its family keys contexts of its own
 * (AES-SIV), whose keys not admitted get one of those (keyed_init()).
 */
static ossl_inline int cold_passes(const KC_TCIPH_CTX *w)
{
    return w->t.cold && w->f->kfns == &w->f->fns;
}

static int record(KC_TCIPH_CTX *w, int tag, const unsigned char *iv,
                  size_t ivlen, const OSSL_PARAM params[]);
static KC_NOINLINE int materialize(KC_TCIPH_CTX *w);

/*
 * The usual first volatile call (HAProxy, .NET), a keyless init with just
 * an IV of the shape's length, which the default accepts: held back, not
 * recorded, for the keying init to give the copy.  0: recorded or passed.
 */
static int hold_iv(KC_TCIPH_CTX *w, int enc, const unsigned char *iv,
                   size_t ivlen, const OSSL_PARAM params[])
{
    if (w->t.cold || iv == NULL || params != NULL || w->piv_len != 0
        || !w->f->d->volatile_ok || w->t.len != w->t.shape_len
        || w->t.value < 0 || ivlen + 2 != CV_IVLEN(w->t.value)
        || ivlen > sizeof(w->piv))
        return 0;
    memcpy(w->piv, iv, ivlen);
    w->piv_len = (unsigned char)ivlen;
    w->piv_enc = (unsigned char)enc;
    w->dir = enc;
    return 1;
}

/*
 * A call other than the keying init after an IV init held back: that init
 * recorded now, or else given to the default's context the call passes
 * to.  0 (no context to be had): still held, the call fails.
 */
static KC_NOINLINE int flush_held_iv(KC_TCIPH_CTX *w)
{
    size_t n = w->piv_len;
    int tag = w->piv_enc ? KC_T_EINIT : KC_T_DINIT;

    w->piv_len = 0;
    if (record(w, tag, w->piv, n, NULL))
        return 1;
    if (materialize(w))
        return inner_init(w->ifn, w->t.inner, w->piv_enc, NULL, 0, w->piv, n,
                          NULL);
    w->piv_len = (unsigned char)n;
    return 0;
}

static ossl_inline int flush_iv(KC_TCIPH_CTX *w)
{
    return w->piv_len == 0 || flush_held_iv(w);
}

/*
 * Record a call if the default accepts it: shape calls (IV-less inits too)
 * until a volatile one (volatile params, an init with an IV or after one).
 * 0: rolled back, the caller passes it through.
 */
static int record(KC_TCIPH_CTX *w, int tag, const unsigned char *iv,
                  size_t ivlen, const OSSL_PARAM params[])
{
    int dir = w->dir, vdir = w->vdir, vol, v;
    KC_TMARK m;
    KC_CACHE *c;

    if (cold_passes(w) || !flush_iv(w))
        return 0;
    /*
     * A bare keyless init only sets the direction (OCB's buffers are empty
     * before a key): kept in dir, unless an empty array acts (SIV): passed.
     */
    if (tag != KC_T_CALL && iv == NULL && w->t.len == w->t.shape_len
        && (params == NULL || params[0].key == NULL)) {
        if (params != NULL && w->f->d->empty_set_acts)
            return 0;
        w->dir = tag == KC_T_EINIT;
        return 1;
    }
    if ((c = kc_cache_get(w->pctx)) == NULL)
        return 0;
    kc_tcore_mark(&w->t, &m);
    if (tag == KC_T_CALL)
        vol = params != NULL && params[0].key != NULL
              && in_volatile(w->f->d, &params[0]);
    else
        vol = iv != NULL || w->t.len > w->t.shape_len;
    if (vol) {
        /* a volatile set needs a direction to replay in, an init no params */
        if (!w->f->d->volatile_ok
            || (tag == KC_T_CALL && w->t.len == w->t.shape_len && w->dir < 0)
            || (tag != KC_T_CALL && params != NULL && params[0].key != NULL))
            goto fail;
        if (w->t.len == w->t.shape_len)
            w->vdir = tag == KC_T_CALL ? w->dir : tag == KC_T_EINIT;
    } else if (w->t.len > w->t.shape_len) {
        /* the shape is replayed before the volatile calls: no going back */
        goto fail;
    }
    if (!vol && iv == NULL && same_as_last(w, c, tag, params))
        goto done;
    if (!append(w, tag, iv, ivlen, params, vol))
        goto fail;
    if (!vol) {
        if (((v = learn_shape(w, c)) & CV_VALID) == 0)
            goto fail;
        w->t.value = v;
    } else if ((learn_volatile(w, c) & CV_VALID) == 0) {
        goto fail;
    }
 done:
    if (tag != KC_T_CALL)
        w->dir = tag == KC_T_EINIT;
    return 1;
 fail:
    kc_tcore_back(&w->t, &m);
    w->dir = dir;
    w->vdir = vdir;
    return 0;
}

/* Every call to the inner context from now on: just keyed, or passed. */
static KC_NOINLINE int materialize(KC_TCIPH_CTX *w)
{
    void *inner;

    if (!flush_iv(w))
        return 0;
    if (w->t.inner != NULL) {
        set_inner(w, w->t.inner, w->ifn);
        return 1;
    }
    if ((inner = fresh_state(w)) == NULL)
        return 0;
    set_inner(w, inner, fns(w));
    /* a cold wrapper was counted when it was made */
    if (!w->t.cold)
        kc_count_passthrough(w->pctx, &w->f->alg[1]);
    return 1;
}

/* Before the key or just keyed: to the inner context from now on. */
static int unkeyed_update(void *vctx, unsigned char *out, size_t *outl,
                          size_t outsize, const unsigned char *in, size_t inl)
{
    KC_TCIPH_CTX *w = vctx;

    return materialize(w)
           && w->ifn->update(w->t.inner, out, outl, outsize, in, inl);
}

static int unkeyed_final(void *vctx, unsigned char *out, size_t *outl,
                         size_t outsize)
{
    KC_TCIPH_CTX *w = vctx;

    return materialize(w) && w->ifn->final(w->t.inner, out, outl, outsize);
}

static int unkeyed_cipher(void *vctx, unsigned char *out, size_t *outl,
                          size_t outsize, const unsigned char *in, size_t inl)
{
    KC_TCIPH_CTX *w = vctx;

    return materialize(w)
           && w->ifn->cipher(w->t.inner, out, outl, outsize, in, inl);
}

/* Is p EVP's lone size_t length query: 'i' the IV's, 'k' the key's, or 0? */
static ossl_inline int len_query(const OSSL_PARAM *p)
{
    const char *k = p[0].key;

    if (k == NULL || p[1].key != NULL || p->data == NULL
        || p->data_type != OSSL_PARAM_UNSIGNED_INTEGER
        || p->data_size != sizeof(size_t))
        return 0;
    /* EVP asks before every init: "ivlen", "keylen" compared by hand */
    if (k[0] == 'i' && k[1] == 'v' && k[2] == 'l' && k[3] == 'e'
        && k[4] == 'n' && k[5] == '\0')
        return 'i';
    if (k[0] == 'k' && k[1] == 'e' && k[2] == 'y' && k[3] == 'l'
        && k[4] == 'e' && k[5] == 'n' && k[6] == '\0')
        return 'k';
    return 0;
}

/* Answer such a query with a CV_ field as the default would: 0 if unknown. */
static ossl_inline int put_len(OSSL_PARAM *p, size_t field)
{
    if (field == 0)
        return 0;
    if (field > 1) {
        *(size_t *)p->data = field - 2;
        p->return_size = sizeof(size_t);
    }
    return 1;
}

/*
 * Just keyed (from the cache, no IV yet): EVP asks the IV length before the
 * IV's init, and the default walks every name it knows for it (~550
 * instructions on 3.0, per message with .NET's AesGcm).  So keycache
 * answers the lone length queries itself, from the shape or a lone
 * accepted "ivlen" set (ivlen_set_sets), until any other call.
 */
static KC_NOINLINE int jk_init(KC_TCIPH_CTX *w, int enc,
                               const unsigned char *key, size_t keylen,
                               const unsigned char *iv, size_t ivlen,
                               const OSSL_PARAM params[])
{
    set_inner(w, w->t.inner, w->ifn);
    return inner_init(w->ifn, w->t.inner, enc, key, keylen, iv, ivlen, params);
}
KC_INIT_PAIR(jk)

/*
 * Just keyed and keyed_known: the lone length queries answered as the
 * default would, a getter changing no length; a set forwarded, then these
 * lengths kept if it changed none, or the IV length alone as the default
 * took it (EVP_CTRL_AEAD_SET_IVLEN's call: GCM's just keyed, and on 3.0
 * keyed_known's), else the state ends.
 */
static int lens_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;
    int q;

    if (params != NULL && (q = len_query(params)) != 0
        && put_len(params, q == 'i' ? w->keyed_ivlen : w->keyed_keylen))
        return 1;
    return w->ifn->get_ctx_params(w->t.inner, params);
}

static int lens_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;
    int ret = w->ifn->set_ctx_params(w->t.inner, params);
    size_t v;

    if (params == NULL || params[0].key == NULL)
        return ret;
    if (ret == 1 && (w->f->d->ivlen_set_sets || w->to == &keyed_known)
        && len_query(params) == 'i') {
        memcpy(&v, params[0].data, sizeof(v));
        if (v <= CV_LEN_MAX - 2) {
            w->keyed_ivlen = v + 2;
            return ret;
        }
    }
    set_inner(w, w->t.inner, w->ifn);
    return ret;
}

static const KC_CIPHER_FNS just_keyed = {
    .einit = jk_einit,
    .dinit = jk_dinit,
    .update = unkeyed_update,
    .final = unkeyed_final,
    .cipher = unkeyed_cipher,
    .get_ctx_params = lens_get_ctx_params,
    .set_ctx_params = lens_set_ctx_params,
};

/* KC_TSIDE.make: a keyed context's (the family's own, or the default's). */
static void *cipher_make(KC_TCORE *t, int enc, const unsigned char *key,
                         size_t keylen, int *ok)
{
    const KC_TCIPH_CTX *w = W(t);
    const KC_CFAM *fam = w->f;
    const KC_CIPHER_FNS *f = fam->kfns;
    void *tmpl = f != &fam->fns ? fam->d->direct_new(w->pctx, fam)
                                : f->newctx(w->pctx->inner_provctx);

    *ok = tmpl != NULL && replay(w, f, tmpl, 0, t->shape_len)
          && inner_init(f, tmpl, enc, key, keylen, NULL, 0, NULL);
    return tmpl;
}

static const KC_TSIDE cipher_side = {
    cipher_make, cipher_value, KC_CALL_SALT, 0, 1
};

/*
 * The key arrives: a copy of the template (or, for a key not admitted yet,
 * the family's own fresh context), the volatile calls, then the rest of
 * the init.  0 if not served so: the caller passes.
 */
static int keyed_init(KC_TCIPH_CTX *w, int enc, const unsigned char *key,
                      size_t keylen, const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    const KC_CFAM *f = w->f;
    const KC_ALG *alg = &f->alg[f->d->key_by_direction ? enc : 1];
    KC_LOOKUP lk;
    KC_CACHE *c;
    void *tmpl, *inner;
    int why = -1;

    if (cold_passes(w) || keylen != keylen_of(f)
        || keylen > KEYCACHE_MAX_KEY_LEN
        || (c = kc_cache_get(w->pctx)) == NULL)
        return 0;
    if (w->t.value < 0)
        w->t.value = learn_shape(w, c);
    if ((w->t.value & CV_VALID) == 0)
        return 0;
    /* an IV held back, then an init the usual path would not take */
    if (w->piv_len != 0 && (params != NULL
                            || (iv != NULL
                                && ivlen + 2 != CV_IVLEN(w->t.value)))
        && (!flush_iv(w) || w->t.inner != NULL))
        return 0;
    if (w->t.cold) {
        tmpl = NULL;
        why = -2;
    } else {
        tmpl = kc_tcore_template(&w->t, &cipher_side, c, alg, enc, key,
                                 keylen, &lk, &why);
    }
    /*
     * A key not admitted yet, of a family with its own keyed contexts
     * (AES-SIV): one of those, uncached.  The default's would fetch
     * AES-CBC, AES-CTR and CMAC in the private library context (its whole
     * cipher store, the first time) and cost 13 atomic references a copy.
     */
    if (tmpl == NULL && why == -2 && f->kfns != &f->fns) {
        if ((inner = kc_tcore_make(&w->t, &cipher_side, alg, enc, key,
                                   keylen)) == NULL)
            return 0;
        /* counted as a pass-through, as the default's context was */
        if (!w->t.cold)
            kc_count_passthrough(w->pctx, &f->alg[1]);
    } else if (tmpl == NULL || (inner = f->kfns->dupctx(tmpl)) == NULL)
        return 0;
    /* the IV held back, then the rest: each as usual, no error mark */
    if (w->piv_len != 0) {
        if (!inner_init(f->kfns, inner, w->piv_enc, NULL, 0, w->piv,
                        w->piv_len, NULL)
            || !inner_init(f->kfns, inner, enc, NULL, 0, iv, ivlen, NULL)) {
            f->kfns->freectx(inner);
            return 0;
        }
        w->piv_len = 0;
        set_inner(w, inner, f->kfns);
        return 1;
    }
    /*
     * The usual init: nothing volatile, no params, an IV (if any) of the
     * length reported; the default checks nothing else: no error mark.
     */
    if (w->t.len == w->t.shape_len && params == NULL) {
        if (iv != NULL && ivlen + 2 == CV_IVLEN(w->t.value)) {
            if (!inner_init(f->kfns, inner, enc, NULL, 0, iv, ivlen, NULL)) {
                f->kfns->freectx(inner);
                return 0;
            }
            set_inner(w, inner, f->kfns);
            return 1;
        }
        if (iv == NULL) {
            if (!inner_init(f->kfns, inner, enc, NULL, 0, NULL, 0, NULL)) {
                f->kfns->freectx(inner);
                return 0;
            }
            /* (keyed_known answers the IV length for good, where asked) */
            if (set_keyed(w, inner, f->kfns, CV_IVLEN(w->t.value),
                          CV_KEYLEN(w->t.value))
                || !f->d->ivlen_set_sets)
                return 1;
            /* the IV comes in a later init: just keyed (see there) */
            w->to = &just_keyed;
            w->arg = w;
            w->keyed_ivlen = CV_IVLEN(w->t.value);
            w->keyed_keylen = CV_KEYLEN(w->t.value);
            return 1;
        }
    }
    /* otherwise, if the default refuses any of it, it says so itself */
    ERR_set_mark();
    if ((w->t.len > w->t.shape_len && !replay_volatile(w, f->kfns, inner))
        || !inner_init(f->kfns, inner, enc, NULL, 0, iv, ivlen, params)) {
        ERR_pop_to_mark();
        f->kfns->freectx(inner);
        return 0;
    }
    ERR_clear_last_mark();
    set_inner(w, inner, f->kfns);
    return 1;
}

static void forget_key(KC_TCIPH_CTX *w)
{
    if (w->held)
        OPENSSL_cleanse(w->key, keylen_of(w->f));
    w->held = 0;
}

/*
 * Keyed again in a way KC_REKEY_INIT cannot shortcut: the default's keyed
 * init.  The key is remembered only from this context's own keyed init,
 * never a template's, so a context keyed once copies nothing.
 */
static KC_NOINLINE int rekey_keyed(KC_TCIPH_CTX *w, int enc,
                                   const unsigned char *key, size_t keylen,
                                   const unsigned char *iv, size_t ivlen,
                                   const OSSL_PARAM params[])
{
    size_t n = keylen_of(w->f);
    int ret;

    forget_key(w);
    ret = inner_init(w->ifn, w->t.inner, enc, key, keylen, iv, ivlen,
                     params);
    /* only a whole keyed init that succeeded says what inner holds */
    if (ret == 1 && keylen == n && n <= sizeof(w->key)) {
        memcpy(w->key, key, n);
        w->held = (unsigned char)(enc + 1);
    }
    return ret;
}

/*
 * Keyed again with an IV and no params, successfully: the default took that
 * key and IV, so its lengths are theirs (AES-GCM checks the key's, sets the
 * IV's), and where EVP asks them before each init (3.0) keyed_known answers
 * them from the next init on: a context keyed per message with its IV
 * (gcm-encinit-per-msg).
 */
static void rekeyed_lengths(KC_TCIPH_CTX *w, size_t keylen,
                            const unsigned char *iv, size_t ivlen,
                            const OSSL_PARAM params[])
{
    if (iv != NULL && params == NULL && ivlen <= CV_LEN_MAX - 2
        && keylen <= CV_LEN_MAX - 2)
        set_keyed(w, w->t.inner, w->ifn, ivlen + 2, keylen + 2);
}

/*
 * A keyed context keyed again with the key it holds, in the same direction,
 * with an IV: a keyless init leaves the state the keyed one would
 * (rekey_keyless: the IV's set-up resets what a message used; without an IV
 * a half-done message would go on).  Compared in constant time, so a key
 * changed in place is keyed anew.  Not counted as a hit: counting costs a
 * tenth of the gain.  Out of line, so the forwarders stay a jump.
 */
#define KC_REKEY_INIT(name, enc)                                              \
    static KC_NOINLINE int rekey_##name(KC_TCIPH_CTX *w,                      \
                                        const unsigned char *key,             \
                                        size_t keylen,                        \
                                        const unsigned char *iv,              \
                                        size_t ivlen,                         \
                                        const OSSL_PARAM params[])            \
    {                                                                         \
        int r;                                                                \
                                                                              \
        if (w->held == enc + 1 && iv != NULL && keylen == keylen_of(w->f)      \
            && kc_key_equal(w->key, key, keylen))                             \
            r = w->ifn->name(w->t.inner, NULL, 0, iv, ivlen, params);         \
        else                                                                  \
            r = rekey_keyed(w, enc, key, keylen, iv, ivlen, params);          \
        if (r == 1 && w->f->asks_lengths)                                     \
            rekeyed_lengths(w, keylen, iv, ivlen, params);                    \
        return r;                                                             \
    }

KC_REKEY_INIT(einit, 1)
KC_REKEY_INIT(dinit, 0)

/*
 * Keyed, its lengths known (3.0, f->asks_lengths): EVP asks the IV length
 * before every init with an IV, the key length before every keyed one, and
 * the default walks every name it knows for each (~440 instructions on
 * 3.0 for AES-OCB, per message of pyca's AESOCB3, which copies a keyed
 * context).  So a context keyed alone from its shape, or keyed again with
 * an IV (rekeyed_lengths()), and its copies, answer the lone queries
 * themselves while no call can have changed them: an init without params,
 * its IV (if any) of the length known, getters, an accepted lone "ivlen"
 * set (both AES-GCM and -OCB take it as given on 3.0).  Anything else
 * forwards and ends it.  Never entered by a copy of a forwarding context:
 * copying writes nothing to the original, which other threads may copy.
 */
static int known_init(KC_TCIPH_CTX *w, int enc, const unsigned char *key,
                      size_t keylen, const unsigned char *iv, size_t ivlen,
                      const OSSL_PARAM params[])
{
    if (params != NULL || (iv != NULL && ivlen + 2 != w->keyed_ivlen))
        set_inner(w, w->t.inner, w->ifn);
    /* a key: as the forwarders do (KC_TCIPH_FORWARD_INIT) */
    if (key != NULL && w->f->d->rekey_keyless)
        return enc ? rekey_einit(w, key, keylen, iv, ivlen, params)
                   : rekey_dinit(w, key, keylen, iv, ivlen, params);
    return inner_init(w->ifn, w->t.inner, enc, key, keylen, iv, ivlen,
                      params);
}
KC_INIT_PAIR(known)

static int known_update(void *vctx, unsigned char *out, size_t *outl,
                        size_t outsize, const unsigned char *in, size_t inl)
{
    KC_TCIPH_CTX *w = vctx;

    return w->ifn->update(w->t.inner, out, outl, outsize, in, inl);
}

static int known_final(void *vctx, unsigned char *out, size_t *outl,
                       size_t outsize)
{
    KC_TCIPH_CTX *w = vctx;

    return w->ifn->final(w->t.inner, out, outl, outsize);
}

static int known_cipher(void *vctx, unsigned char *out, size_t *outl,
                        size_t outsize, const unsigned char *in, size_t inl)
{
    KC_TCIPH_CTX *w = vctx;

    return w->ifn->cipher(w->t.inner, out, outl, outsize, in, inl);
}

static const KC_CIPHER_FNS keyed_known = {
    .einit = known_einit,
    .dinit = known_dinit,
    .update = known_update,
    .final = known_final,
    .cipher = known_cipher,
    .get_ctx_params = lens_get_ctx_params,
    .set_ctx_params = lens_set_ctx_params,
};

/* get_params has no provctx: libcrypto's, the same for every instance */
static OSSL_FUNC_cipher_get_params_fn *inner_get_params[KC_CFAM_COUNT];

void kc_tciph_freectx(void *vctx)
{
    KC_TCIPH_CTX *w = vctx;

    if (w == NULL)
        return;
    forget_key(w);
    if (w->t.inner != NULL)
        w->ifn->freectx(w->t.inner);
    kc_wrapper_free(w->pctx, KC_POOL_CTMPL, w, sizeof(*w));
}

/* Before the key: can the default duplicate a context in this state? */
static KC_NOINLINE int unkeyed_dup_ok(const KC_TCIPH_CTX *w)
{
    void *t, *d;

    if ((t = fresh_state(w)) == NULL)
        return 0;
    if ((d = fns(w)->dupctx(t)) != NULL)
        fns(w)->freectx(d);
    fns(w)->freectx(t);
    return d != NULL;
}

/*
 * The usual copy, of a keyed template per message: as kc_tciph_dupctx()'s
 * own, less what such a context lacks (an IV held back, a record).
 */
static ossl_inline void *dup_keyed(const KC_TCIPH_CTX *src)
{
    KC_TCIPH_CTX *dst;
    void *inner;

    dst = kc_wrapper_take_copy(src->pctx, KC_POOL_CTMPL, sizeof(*dst));
    if (dst == NULL)
        return NULL;
    if ((inner = src->ifn->dupctx(src->t.inner)) == NULL) {
        kc_wrapper_free(src->pctx, KC_POOL_CTMPL, dst, sizeof(*dst));
        return NULL;
    }
    memcpy(dst, src, KC_TCIPH_HEAD);
    dst->t.len = dst->t.shape_len = dst->t.sig_len = 0;
    dst->held = 0;
    /* a copy inherits known lengths (src is only read: copies may race) */
    if (src->to == &keyed_known)
        set_keyed(dst, inner, src->ifn, src->keyed_ivlen, src->keyed_keylen);
    else
        set_inner(dst, inner, src->ifn);
    return dst;
}

/*
 * src is only read, as EVP_CIPHER_CTX_copy() promises and other threads
 * may copy it at the same time: an IV it holds back goes to the copy, held
 * there too, and is recorded or given to the copy's context as src's
 * would be.
 */
void *kc_tciph_dupctx(void *vctx)
{
    const KC_TCIPH_CTX *src = vctx;
    KC_TCIPH_CTX *dst;

    if (src->t.inner != NULL && src->piv_len == 0)
        return dup_keyed(src);
    if (src->t.inner == NULL && src->piv_len == 0 && !unkeyed_dup_ok(src))
        return NULL;
    /* not cleared: the head is copied whole, the rest written before read */
    dst = kc_wrapper_take_copy(src->pctx, KC_POOL_CTMPL, sizeof(*dst));
    if (dst == NULL)
        return NULL;
    memcpy(dst, src, KC_TCIPH_HEAD);
    if (src->t.inner == NULL) {
        memcpy(dst->t.rec, src->t.rec, src->t.len);
        memcpy(dst->t.sig, src->t.sig, src->t.sig_len);
    } else {
        /* keyed (or just keyed): no call reads the record again */
        dst->t.len = dst->t.shape_len = dst->t.sig_len = 0;
    }
    memcpy(dst->piv, src->piv, src->piv_len);
    dst->arg = dst;
    /* the copy keys itself afresh (its key[] is not copied) */
    dst->held = 0;
    if (src->t.inner != NULL) {
        void *inner = src->ifn->dupctx(src->t.inner);

        if (inner == NULL) {
            kc_wrapper_free(src->pctx, KC_POOL_CTMPL, dst, sizeof(*dst));
            return NULL;
        }
        set_inner(dst, inner, src->ifn);
    }
    if (src->piv_len != 0
        && (!flush_iv(dst)
            || (dst->t.inner == NULL && !unkeyed_dup_ok(dst)))) {
        kc_tciph_freectx(dst);
        return NULL;
    }
    return dst;
}

/* Before the key (before_key): record what can be, else pass through. */
static KC_NOINLINE int unkeyed_init(KC_TCIPH_CTX *w, int enc,
                                    const unsigned char *key, size_t keylen,
                                    const unsigned char *iv, size_t ivlen,
                                    const OSSL_PARAM params[])
{
    int known = 0;

    if (key != NULL) {
        if (keyed_init(w, enc, key, keylen, iv, ivlen, params))
            return 1;
        /* keyed alone, made just now from its shape: the shape's lengths */
        known = iv == NULL && params == NULL && w->f->asks_lengths
                && w->t.inner == NULL && w->piv_len == 0
                && w->t.len == w->t.shape_len && w->t.value >= 0
                && (w->t.value & CV_VALID) != 0;
    } else if (hold_iv(w, enc, iv, ivlen, params)
               || record(w, enc ? KC_T_EINIT : KC_T_DINIT, iv, ivlen,
                         params)) {
        return 1;
    }
    if (!materialize(w)
        || !inner_init(w->ifn, w->t.inner, enc, key, keylen, iv, ivlen,
                       params))
        return 0;
    if (known)
        set_keyed(w, w->t.inner, w->ifn, CV_IVLEN(w->t.value),
                  CV_KEYLEN(w->t.value));
    return 1;
}
KC_INIT_PAIR(unkeyed)

static int unkeyed_set_params(void *vctx, const OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;

    return record(w, KC_T_CALL, NULL, 0, params)
           || (materialize(w) && w->ifn->set_ctx_params(w->t.inner, params));
}

/* EVP's key and IV length queries before every init, as learned; 0: ask */
static ossl_inline int answer_len(const KC_TCIPH_CTX *w, OSSL_PARAM *p)
{
    size_t field;
    int q;

    if (w->t.value < 0 || (q = len_query(p)) == 0)
        return 0;
    if (q == 'i')
        /* a volatile init's IV sets the IV length: a real context says */
        field = w->t.len == w->t.shape_len ? CV_IVLEN(w->t.value) : 0;
    else
        field = CV_KEYLEN(w->t.value);
    return put_len(p, field);
}

static int asks_iv(const OSSL_PARAM *p)
{
    for (; p->key != NULL; p++)
        if (strcmp(p->key, OSSL_CIPHER_PARAM_IV) == 0
            || strcmp(p->key, OSSL_CIPHER_PARAM_UPDATED_IV) == 0)
            return 1;
    return 0;
}

/* Else a transient default context in this state answers (and raises). */
static KC_NOINLINE int unkeyed_get_params(KC_TCIPH_CTX *w,
                                          OSSL_PARAM params[])
{
    KC_CACHE *c;
    void *t;
    int ok;

    /* EVP's length queries were answered (the IV length is the shape's) */
    if (!flush_iv(w))
        return 0;
    /* a shape taken as a prefix of the last one: its lengths, learned */
    if (w->t.value < 0 && (c = kc_cache_get(w->pctx)) != NULL)
        w->t.value = learn_shape(w, c);
    if (params != NULL && answer_len(w, params))
        return 1;
    /*
     * An IV drawn at an IV-less encrypting init and kept through keying
     * (OpenSSL 4's GCM): a transient context would draw another, so this
     * one becomes the default's, its IV the one it will use.
     */
    if (w->f->draws_iv && params != NULL && asks_iv(params))
        return materialize(w) && w->ifn->get_ctx_params(w->t.inner, params);
    if ((t = fresh_state(w)) == NULL)
        return 0;
    ok = fns(w)->get_ctx_params(t, params);
    fns(w)->freectx(t);
    return ok;
}

static int unkeyed_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_TCIPH_CTX *w = vctx;

    /* EVP's length queries before every init, without a further call */
    if (params != NULL && w->t.value >= 0 && answer_len(w, params))
        return 1;
    return unkeyed_get_params(w, params);
}

static const KC_CIPHER_FNS before_key = {
    .einit = unkeyed_einit,
    .dinit = unkeyed_dinit,
    .update = unkeyed_update,
    .final = unkeyed_final,
    .cipher = unkeyed_cipher,
    .get_ctx_params = unkeyed_get_ctx_params,
    .set_ctx_params = unkeyed_set_params,
};

/* The dispatch functions: a new wrapper, then wherever w->to says. */
void *kc_tciph_newctx(KC_PROVCTX *pctx, int which)
{
    const KC_CFAM *f = &pctx->cfam[which];
    KC_TCIPH_CTX *w;
    int cold;

    w = kc_wrapper_new_cold(pctx, KC_POOL_CTMPL, sizeof(*w), KC_TCIPH_HEAD,
                            &f->alg[1], &cold);
    if (w == NULL)
        return NULL;
    /* the family's first context, cold or not, completes it (gate.c) */
    cold = !kc_cfam_ready(pctx, f) || cold;
    w->to = &before_key;
    w->arg = w;
    w->pctx = pctx;
    w->f = f;
    w->t.value = __atomic_load_n(&f->empty_value, __ATOMIC_RELAXED);
    w->dir = -1;
    /* a low hit rate: no record or lookup, a plain context when needed */
    w->t.cold = cold;
    return w;
}

/* Each forwards wherever w->to says; KC_PIN saves a move per call. */
#define KC_TCIPH_FORWARD(name, type, args, call)                              \
    int kc_tciph_##name args                                                  \
    {                                                                         \
        KC_TCIPH_CTX *w = vctx;                                               \
        type *fn = w->to->name;                                               \
                                                                              \
        KC_PIN(fn);                                                           \
        return fn call;                                                       \
    }

/*
 * The inits the same, but a keyed context's keyed init is rekey_init()'s,
 * and a keyed init leaves no key bytes in the vector registers.
 */
#define KC_TCIPH_FORWARD_INIT(name, type)                                     \
    int kc_tciph_##name(void *vctx, const unsigned char *key, size_t keylen,  \
                        const unsigned char *iv, size_t ivlen,                \
                        const OSSL_PARAM params[])                            \
    {                                                                         \
        KC_TCIPH_CTX *w = vctx;                                               \
        type *fn = w->to->name;                                               \
        int r;                                                                \
                                                                              \
        if (key == NULL) {                                                    \
            KC_PIN(fn);                                                       \
            return fn(w->arg, key, keylen, iv, ivlen, params);                \
        }                                                                     \
        if (w->to == w->ifn && w->f->d->rekey_keyless)                        \
            r = rekey_##name(w, key, keylen, iv, ivlen, params);              \
        else                                                                  \
            r = fn(w->arg, key, keylen, iv, ivlen, params);                   \
        kc_vector_wipe();                                                     \
        return r;                                                             \
    }

KC_TCIPH_FORWARD_INIT(einit, OSSL_FUNC_cipher_encrypt_init_fn)
KC_TCIPH_FORWARD_INIT(dinit, OSSL_FUNC_cipher_decrypt_init_fn)
KC_TCIPH_FORWARD(update, OSSL_FUNC_cipher_update_fn,
                 (void *vctx, unsigned char *out, size_t *outl,
                  size_t outsize, const unsigned char *in, size_t inl),
                 (w->arg, out, outl, outsize, in, inl))
KC_TCIPH_FORWARD(final, OSSL_FUNC_cipher_final_fn,
                 (void *vctx, unsigned char *out, size_t *outl,
                  size_t outsize),
                 (w->arg, out, outl, outsize))
KC_TCIPH_FORWARD(cipher, OSSL_FUNC_cipher_cipher_fn,
                 (void *vctx, unsigned char *out, size_t *outl,
                  size_t outsize, const unsigned char *in, size_t inl),
                 (w->arg, out, outl, outsize, in, inl))
KC_TCIPH_FORWARD(set_ctx_params, OSSL_FUNC_cipher_set_ctx_params_fn,
                 (void *vctx, const OSSL_PARAM params[]), (w->arg, params))
KC_TCIPH_FORWARD(get_ctx_params, OSSL_FUNC_cipher_get_ctx_params_fn,
                 (void *vctx, OSSL_PARAM params[]), (w->arg, params))

const OSSL_PARAM *kc_tciph_gettable_ctx_params(KC_PROVCTX *pctx, int which)
{
    return KC_CTX_TABLE(pctx->cfam[which].fns.gettable_ctx_params, pctx);
}

const OSSL_PARAM *kc_tciph_settable_ctx_params(KC_PROVCTX *pctx, int which)
{
    return KC_CTX_TABLE(pctx->cfam[which].fns.settable_ctx_params, pctx);
}

const OSSL_PARAM *kc_tciph_gettable_params(KC_PROVCTX *pctx, int which)
{
    return KC_TABLE(pctx->cfam[which].fns.gettable_params, pctx);
}

int kc_tciph_get_params(int which, OSSL_PARAM params[])
{
    OSSL_FUNC_cipher_get_params_fn *get =
        __atomic_load_n(&inner_get_params[which], __ATOMIC_ACQUIRE);

    return get != NULL && get(params);
}

/* Whose functions a keyed context of f (a template, a hit) runs on. */
void kc_ctmpl_keyed_fns(KC_CFAM *f, const KC_CIPHER_FNS *k)
{
    f->kfns = k;
    f->alg[0].freectx = f->alg[1].freectx = k->freectx;
}

/*
 * The key length every keyed init must bring (none known: no key is
 * cached) and what a fresh context is: asked at the family's first context
 * (gate.c), not at the binding, which every process's first fetch pays.
 */
void kc_ctmpl_first_use(KC_PROVCTX *pctx, KC_CFAM *f)
{
    KC_TCIPH_CTX probe_w;
    OSSL_PARAM q[2];
    size_t keylen = 0;

    q[0] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN, &keylen);
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    if (f->fns.get_params(q) != 1 || !OSSL_PARAM_modified(&q[0]))
        keylen = 0;
    ERR_pop_to_mark();
    if (keylen == 0)
        kc_debug_log(pctx, 1, "warning: the default's %s says no key length: "
                     "its keys are not cached", f->alg[0].names);
    __atomic_store_n(&f->keylen, keylen, __ATOMIC_RELAXED);
    memset(&probe_w, 0, KC_TCIPH_HEAD);
    probe_w.pctx = pctx;
    probe_w.f = f;
    __atomic_store_n(&f->empty_value, probe(&probe_w, 0), __ATOMIC_RELAXED);
}

int kc_ctmpl_bind(KC_PROVCTX *pctx, KC_CFAM *f, const OSSL_ALGORITHM *alg)
{
    const KC_CIPHER_FNS *m = &f->fns;
    int which = (int)(f - pctx->cfam), i;

    if (m->newctx == NULL || m->dupctx == NULL || m->freectx == NULL
        || m->einit == NULL || m->dinit == NULL || m->update == NULL
        || m->final == NULL || m->cipher == NULL || m->get_params == NULL
        || m->get_ctx_params == NULL || m->set_ctx_params == NULL)
        return 0;
    for (i = 0; i < 2; i++) {
        f->alg[i].names = alg->algorithm_names;
        f->alg[i].spare_max = 0;
        f->alg[i].stat = KC_STAT_CFAM + (unsigned int)which;
    }
    /* the default's, unless gate.c binds the family's own at first use */
    kc_ctmpl_keyed_fns(f, m);
    KC_PUBLISH_ONCE(&inner_get_params[which], m->get_params);
    /* none and unknown (learned when needed) until kc_ctmpl_first_use() */
    f->keylen = 0;
    f->empty_value = -1;
    /* not tried here: an IV drawn now would make a private DRBG (rand.c) */
    f->draws_iv = kc_quirk_gcm_draws_iv && f->d->may_draw_iv;
    f->asks_lengths = kc_quirk_evp_asks_lengths();
    return 1;
}
