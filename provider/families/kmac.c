/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KMAC128 and KMAC256 (NIST SP 800-185): templates are keycache's own
 * keyed contexts, customisation string and key absorbed, on the default's
 * KECCAK-KMAC digest context directly (its EVP_MD_CTX copies cost four or
 * five contended reference counts per message).  Every error comes from a
 * default context given the same call (scratch()).
 */
#include <stddef.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "families/families.h"

/* a "key" set before the key is only stored by the default: uncached */
static const char *const kmac_shape[] = {
    OSSL_MAC_PARAM_SIZE, OSSL_MAC_PARAM_XOF, OSSL_MAC_PARAM_CUSTOM, NULL
};

/* SP 800-185's bounds as the default's KMAC applies them */
#define KMAC_KEY_MIN 4
#define KMAC_KEY_MAX 512
#define KMAC_CUSTOM_MAX 512
#define KMAC_OUT_MAX (0xFFFFFF / 8)
#define KMAC_BLOCK_MAX 168
/* bytepad(encode_string(K), w): at most 2 + 3 + 512 bytes, padded to w */
#define KMAC_KEY_ENC_MAX (KMAC_BLOCK_MAX * 4)
/* encode_string(S) */
#define KMAC_CUSTOM_ENC_MAX (KMAC_CUSTOM_MAX + 4)

typedef struct {
    const KC_TFAM *f;
    KC_PROVCTX *pctx;
    void *md;                   /* the default's KECCAK-KMAC context */
    size_t out_len;
    int xof;
    int finalised;              /* EVP's digest has had its final */
    size_t key_len, custom_len;
    /* as the default stores them: encoded */
    unsigned char key[KMAC_KEY_ENC_MAX];
    unsigned char custom[KMAC_CUSTOM_ENC_MAX];
} KC_KMAC_CTX;

/* ---- SP 800-185 encodings ---- */

/* the big-endian bytes of x, at least one, into out: how many */
static size_t be_bytes(unsigned char *out, size_t x)
{
    unsigned char b[sizeof(size_t)];
    size_t n = 0;

    do {
        b[n++] = (unsigned char)(x & 0xff);
        x >>= 8;
    } while (x != 0 && n < sizeof(b));
    for (x = 0; x < n; x++)
        out[x] = b[n - 1 - x];
    return n;
}

/* right_encode(x) into out (room for 1 + sizeof(size_t)): its length */
static size_t right_encode(unsigned char *out, size_t x)
{
    size_t n = be_bytes(out, x);

    out[n] = (unsigned char)n;
    return n + 1;
}

/* left_encode(x) into out: its length */
static size_t left_encode(unsigned char *out, size_t x)
{
    size_t n = be_bytes(out + 1, x);

    out[0] = (unsigned char)n;
    return n + 1;
}

/* encode_string(s) into out, which has room (len <= KMAC_CUSTOM_MAX) */
static size_t encode_string(unsigned char *out, const unsigned char *s,
                            size_t len)
{
    size_t n = left_encode(out, len * 8);

    if (len > 0)
        memcpy(out + n, s, len);
    return n + len;
}

/* ---- The default's answers ---- */

/*
 * The default's KMAC copies a key it is given into a stack buffer it does
 * not wipe (kmac_bytepad_encode_key(), 3.0 through 4.0).  Called from
 * below keycache's frames, that copy outlives the call where the
 * default's own next calls would write over it, and a fork child inherits
 * it (test_fork).  keycache calls the default's init and set_ctx_params
 * through these, which wipe the stack after (KC_TDESC.guard_default).
 */
static OSSL_FUNC_mac_init_fn *dflt_init[KC_FAM_COUNT];
static OSSL_FUNC_mac_set_ctx_params_fn *dflt_set[KC_FAM_COUNT];

static int init_wiped(int which, void *t, const unsigned char *key,
                      size_t keylen, const OSSL_PARAM params[])
{
    OSSL_FUNC_mac_init_fn *init = __atomic_load_n(&dflt_init[which],
                                                  __ATOMIC_ACQUIRE);
    int r = init(t, key, keylen, params);

    if (key != NULL || params != NULL)
        kc_stack_wipe();
    return r;
}

static int set_wiped(int which, void *t, const OSSL_PARAM params[])
{
    int r = __atomic_load_n(&dflt_set[which], __ATOMIC_ACQUIRE)(t, params);

    if (params != NULL)
        kc_stack_wipe();
    return r;
}

static const KC_MAC_FNS *deflt(const KC_KMAC_CTX *k)
{
    return &k->f->mac;
}

static void *scratch(const KC_KMAC_CTX *k)
{
    return deflt(k)->newctx(k->pctx->inner_provctx);
}

/*
 * The default's answer to an update or final (EVP refuses its update
 * alike) after its digest's final: a default context, finished quietly,
 * gets the call.
 */
static int after_final(const KC_KMAC_CTX *k, int final)
{
    static const unsigned char one[1];
    unsigned char out[64];
    const KC_MAC_FNS *m = deflt(k);
    size_t l;
    void *t = scratch(k);
    int ok;

    if (t == NULL)
        return 0;
    ERR_set_mark();
    ok = kc_mac_key_final(m, t);
    ERR_pop_to_mark();
    ok = ok
         && (final ? m->final(t, out, &l, sizeof(out))
                   : m->update(t, one, sizeof(one)));
    m->freectx(t);
    OPENSSL_cleanse(out, sizeof(out));
    return ok;
}

/* ---- Parameters ---- */

static void set_key(KC_KMAC_CTX *k, const unsigned char *key, size_t keylen)
{
    unsigned char *p = k->key;
    size_t n, w = k->f->dig_block;

    n = left_encode(p, w);
    n += left_encode(p + n, keylen * 8);
    memcpy(p + n, key, keylen);
    n += keylen;
    /* bytepad: zeros up to a multiple of the rate */
    if (n % w != 0) {
        memset(p + n, 0, w - n % w);
        n += w - n % w;
    }
    k->key_len = n;
}

/* 1: EVP's call after the key (one "xof" int, one "size" in range), taken */
static int set_plain(KC_KMAC_CTX *k, const OSSL_PARAM params[])
{
    const OSSL_PARAM *p, *xof = NULL, *size = NULL;

    for (p = params; p->key != NULL; p++) {
        if (xof == NULL && kc_name_is(p->key, OSSL_MAC_PARAM_XOF)
            && p->data_type == OSSL_PARAM_INTEGER
            && p->data_size == sizeof(int) && p->data != NULL)
            xof = p;
        else if (size == NULL && kc_name_is(p->key, OSSL_MAC_PARAM_SIZE)
                 && p->data_type == OSSL_PARAM_UNSIGNED_INTEGER
                 && p->data_size == sizeof(size_t) && p->data != NULL
                 && *(const size_t *)p->data <= KMAC_OUT_MAX)
            size = p;
        else
            return 0;
    }
    if (xof != NULL)
        k->xof = *(const int *)xof->data;
    if (size != NULL)
        k->out_len = *(const size_t *)size->data;
    return 1;
}

/* the names the default takes, in the order it takes them */
static const char *const settable[] = {
    OSSL_MAC_PARAM_XOF, OSSL_MAC_PARAM_SIZE, OSSL_MAC_PARAM_KEY,
    OSSL_MAC_PARAM_CUSTOM, NULL
};

static int named_twice(const OSSL_PARAM params[])
{
    const OSSL_PARAM *p;
    size_t i;

    for (i = 0; settable[i] != NULL; i++)
        if ((p = OSSL_PARAM_locate_const(params, settable[i])) != NULL
            && OSSL_PARAM_locate_const(p + 1, settable[i]) != NULL)
            return 1;
    return 0;
}

/* One parameter the default took: the same here. */
static void take(KC_KMAC_CTX *k, size_t i, const OSSL_PARAM *p)
{
    switch (i) {
    case 0:
        (void)OSSL_PARAM_get_int(p, &k->xof);
        break;
    case 1:
        (void)OSSL_PARAM_get_size_t(p, &k->out_len);
        break;
    case 2:
        set_key(k, p->data, p->data_size);
        break;
    default:
        /* the default encodes no data as nothing, as if never set */
        k->custom_len = p->data == NULL ? 0
                        : encode_string(k->custom, p->data, p->data_size);
        break;
    }
}

/*
 * Anything else goes to a default context, whose return and errors are
 * the answer (none depend on what was set before); what it took is taken
 * here: all, or on failure what precedes the failing parameter.
 */
static KC_NOINLINE int set_other(KC_KMAC_CTX *k, const OSSL_PARAM params[])
{
    const KC_MAC_FNS *m = deflt(k);
    OSSL_PARAM one[2];
    const OSSL_PARAM *p;
    void *t = scratch(k);
    size_t i;
    int r;

    if (t == NULL)
        return 0;
    r = m->set_ctx_params(t, params);
    if (params != NULL
        && (r == 1 || !kc_quirk(k->f->quirks, KC_Q_REPEATS_FAIL)
            || !named_twice(params))) {
        ERR_set_mark();
        for (i = 0; settable[i] != NULL; i++) {
            if ((p = OSSL_PARAM_locate_const(params, settable[i])) == NULL)
                continue;
            one[0] = *p;
            one[1] = OSSL_PARAM_construct_end();
            if (r != 1 && m->set_ctx_params(t, one) != 1)
                break;
            take(k, i, p);
        }
        ERR_pop_to_mark();
    }
    m->freectx(t);
    return r;
}

static int kmac_set_ctx_params(void *vk, const OSSL_PARAM params[])
{
    KC_KMAC_CTX *k = vk;

    if (params == NULL ? kc_quirk(k->f->quirks, KC_Q_NULL_SET_OK)
                       : set_plain(k, params))
        return 1;
    return set_other(k, params);
}

/* EVP_MAC_final's size query here, else a default context of this size */
static int kmac_get_ctx_params(void *vk, OSSL_PARAM params[])
{
    KC_KMAC_CTX *k = vk;
    const KC_MAC_FNS *m = deflt(k);
    OSSL_PARAM p[2];
    void *t;
    int r;

    if (kc_answer_size(params, k->out_len))
        return 1;
    if ((t = scratch(k)) == NULL)
        return 0;
    p[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &k->out_len);
    p[1] = OSSL_PARAM_construct_end();
    r = m->set_ctx_params(t, p) && m->get_ctx_params(t, params);
    m->freectx(t);
    return r;
}

/* ---- The keyed context ---- */

static void kmac_free(void *vk)
{
    KC_KMAC_CTX *k = vk;

    if (k == NULL)
        return;
    if (k->md != NULL)
        k->f->dig.freectx(k->md);
    OPENSSL_clear_free(k, sizeof(*k));
}

static void *kmac_dup(void *vsrc)
{
    const KC_KMAC_CTX *src = vsrc;
    KC_KMAC_CTX *dst = OPENSSL_malloc(sizeof(*dst));

    if (dst == NULL)
        return NULL;
    memcpy(dst, src, offsetof(KC_KMAC_CTX, key));
    memcpy(dst->key, src->key, src->key_len);
    memcpy(dst->custom, src->custom, src->custom_len);
    if ((dst->md = src->f->dig.dupctx(src->md)) == NULL) {
        OPENSSL_clear_free(dst, sizeof(*dst));
        return NULL;
    }
    return dst;
}

/*
 * The default's kmac_init(): params, the key (or the one it has), then
 * EVP_DigestInit_ex() and bytepad(encode_string("KMAC") ||
 * encode_string(S), w) followed by the encoded key.
 */
static int kmac_init(void *vk, const unsigned char *key, size_t keylen,
                     const OSSL_PARAM params[])
{
    static const unsigned char kmac[] = { 0x01, 0x20, 'K', 'M', 'A', 'C' };
    static const unsigned char zeros[KMAC_BLOCK_MAX];
    KC_KMAC_CTX *k = vk;
    const KC_DIGEST_FNS *g = &k->f->dig;
    unsigned char head[1 + sizeof(size_t)];
    size_t n, w = k->f->dig_block;
    OSSL_PARAM p[2];

    if (!kmac_set_ctx_params(k, params))
        return 0;
    if (key != NULL) {
        if (keylen < KMAC_KEY_MIN || keylen > KMAC_KEY_MAX) {
            /* the default's kmac_setkey() says why */
            p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
                                                     (void *)key, keylen);
            p[1] = OSSL_PARAM_construct_end();
            (void)set_other(k, p);
            return 0;
        }
        set_key(k, key, keylen);
    }
    /* EVP_DigestInit_ex() starts the digest over, its final undone */
    if (!g->init(k->md, NULL))
        return 0;
    k->finalised = 0;
    if (k->custom_len == 0)
        k->custom_len = encode_string(k->custom, NULL, 0);
    n = left_encode(head, w);
    if (!g->update(k->md, head, n) || !g->update(k->md, kmac, sizeof(kmac))
        || !g->update(k->md, k->custom, k->custom_len))
        return 0;
    n += sizeof(kmac) + k->custom_len;
    if (n % w != 0 && !g->update(k->md, zeros, w - n % w))
        return 0;
    return g->update(k->md, k->key, k->key_len);
}

/* EVP_DigestUpdate(): nothing to do for no data, refused after a final */
static int kmac_update(void *vk, const unsigned char *data, size_t datalen)
{
    KC_KMAC_CTX *k = vk;

    if (datalen == 0)
        return 1;
    if (k->finalised && kc_quirk(k->f->quirks, KC_Q_FINAL_SEALS))
        return after_final(k, 0);
    return k->f->dig.update(k->md, data, datalen);
}

/*
 * The default's kmac_final(): right_encode(L) (0 in XOF mode), then
 * EVP_DigestFinalXOF().  *outl is set whatever the outcome, as there.
 */
static int kmac_final(void *vk, unsigned char *out, size_t *outl,
                      size_t outsize)
{
    KC_KMAC_CTX *k = vk;
    const KC_DIGEST_FNS *g = &k->f->dig;
    unsigned char enc[2 + sizeof(size_t)];
    size_t n, sz = k->out_len;
    OSSL_PARAM p[2];
    int ok;

    if (k->finalised && kc_quirk(k->f->quirks, KC_Q_FINAL_SEALS)) {
        ok = after_final(k, 1);
    } else {
        n = right_encode(enc, k->xof ? 0 : k->out_len * 8);
        p[0] = OSSL_PARAM_construct_size_t(OSSL_DIGEST_PARAM_XOFLEN, &sz);
        p[1] = OSSL_PARAM_construct_end();
        ok = g->update(k->md, enc, n) && g->set_ctx_params(k->md, p) > 0
             && g->final(k->md, out, &sz, k->out_len);
        k->finalised = 1;
    }
    *outl = k->out_len;
    return ok;
}

static const KC_MAC_FNS kmac_direct = {
    .dupctx = kmac_dup,
    .freectx = kmac_free,
    .init = kmac_init,
    .update = kmac_update,
    .final = kmac_final,
    .get_ctx_params = kmac_get_ctx_params,
    .set_ctx_params = kmac_set_ctx_params
};

/* A template: the shape replayed onto a context of ours, then keyed. */
static void *kmac_direct_new(KC_PROVCTX *pctx, int which,
                             const unsigned char *shape, size_t len,
                             const unsigned char *key, size_t keylen)
{
    const KC_TFAM *f = &pctx->fam[which];
    KC_KMAC_CTX *k = OPENSSL_zalloc(sizeof(*k));

    if (k == NULL)
        return NULL;
    k->f = f;
    k->pctx = pctx;
    k->out_len = f->dig_size;
    if ((k->md = f->dig.newctx(pctx->inner_provctx)) == NULL
        || !kc_trec_replay(shape, len, &kmac_direct, k)
        || !kmac_init(k, key, keylen, NULL)) {
        kmac_free(k);
        return NULL;
    }
    return k;
}

/* Learn an update after the final and a name twice (quirks.h). */
static int kmac_direct_bind(KC_PROVCTX *pctx, KC_TFAM *f)
{
    const KC_MAC_FNS *m = &f->mac;
    unsigned int seal, rep;
    int x = 0;
    OSSL_PARAM p = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_XOF, &x);
    void *provctx;

    if (f->dig_block > KMAC_BLOCK_MAX || f->dig_size == 0
        || f->dig_size > KMAC_OUT_MAX)
        return 0;
    provctx = kc_tmac_learn_provctx(pctx, f);
    seal = kc_quirk_learn_seal(provctx, m);
    rep = kc_quirk_learn_repeats(provctx, m->newctx, m->freectx,
                                 m->set_ctx_params, &p);
    if (!kc_quirk(seal, KC_Q_KNOWN) || !kc_quirk(rep, KC_Q_KNOWN))
        return 0;
    /* (cold contexts made meanwhile read it) */
    __atomic_fetch_or(&f->quirks, seal | rep, __ATOMIC_RELAXED);
    return 1;
}

#define KC_KMAC_IMPL(bits, which)                                             \
    KC_TMAC_IMPL(kc_kmac##bits, which, CTX, kc_tmac_newctx_fetching)          \
    static int kc_kmac##bits##_init_wiped(void *t, const unsigned char *key,  \
                                          size_t keylen,                      \
                                          const OSSL_PARAM params[])          \
    {                                                                         \
        return init_wiped(which, t, key, keylen, params);                     \
    }                                                                         \
    static int kc_kmac##bits##_set_wiped(void *t, const OSSL_PARAM params[])  \
    {                                                                         \
        return set_wiped(which, t, params);                                   \
    }                                                                         \
    static void kc_kmac##bits##_guard(KC_MAC_FNS *m)                          \
    {                                                                         \
        if (m->init == NULL || m->set_ctx_params == NULL)                     \
            return;                                                           \
        KC_PUBLISH_ONCE(&dflt_init[which], m->init);                          \
        KC_PUBLISH_ONCE(&dflt_set[which], m->set_ctx_params);                 \
        /* (another default's functions than the first bound: unguarded) */   \
        if (__atomic_load_n(&dflt_init[which], __ATOMIC_ACQUIRE) != m->init   \
            || __atomic_load_n(&dflt_set[which], __ATOMIC_ACQUIRE)            \
               != m->set_ctx_params)                                          \
            return;                                                           \
        m->init = kc_kmac##bits##_init_wiped;                                 \
        m->set_ctx_params = kc_kmac##bits##_set_wiped;                        \
    }                                                                         \
    static void *kc_kmac##bits##_direct_new(KC_PROVCTX *pctx,                 \
                                            const unsigned char *shape,       \
                                            size_t len,                       \
                                            const unsigned char *key,         \
                                            size_t keylen)                    \
    {                                                                         \
        return kmac_direct_new(pctx, which, shape, len, key, keylen);         \
    }                                                                         \
    const KC_TDESC kc_kmac##bits##_desc = {                                   \
        .name = "KMAC-" #bits,                                                \
        .functions = kc_kmac##bits##_functions,                               \
        .shape_names = kmac_shape,                                            \
        .empty_set_inert = 1,                                                 \
        .base = KC_BASE_KEYED,                                                \
        .direct = &kmac_direct,                                               \
        .direct_digest = "KECCAK-KMAC-" #bits,                                \
        .newctx_digest = "KECCAK-KMAC-" #bits,                                \
        .direct_new = kc_kmac##bits##_direct_new,                             \
        .direct_bind = kmac_direct_bind,                                      \
        .guard_default = kc_kmac##bits##_guard                                \
    };

KC_KMAC_IMPL(128, KC_FAM_KMAC128)
KC_KMAC_IMPL(256, KC_FAM_KMAC256)
