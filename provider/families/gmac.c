/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GMAC: templates are keycache's own keyed AES-GCM contexts, on the
 * default's cipher context directly (its EVP_CIPHER_CTX copies cost four
 * contended reference counts per message); the IV is volatile, replayed
 * onto each copy.  Used contexts are not kept: a finished one holds its
 * last tag and IV, from which GHASH gives back a short message.
 */
#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

#include "families/families.h"

static const char *const gmac_shape[] = {
    OSSL_MAC_PARAM_CIPHER, OSSL_MAC_PARAM_PROPERTIES, NULL
};

/* the default sets "iv" after "key" in a call; keying keeps an IV set before */
static const char *const gmac_volatile[] = { OSSL_MAC_PARAM_IV, NULL };

/*
 * The GCM parameter names passed on every message, at the start of a page
 * of their own: the default's parameter code compares them with strcmp(),
 * whose vector code takes a slower path when the two strings' page offsets
 * ORed are high (glibc), so where the linker put them cost up to 44
 * instructions a message (hot-new-gmac), changing from build to build.
 */
static const struct {
    char ivlen[sizeof(OSSL_CIPHER_PARAM_AEAD_IVLEN)];
    char tag[sizeof(OSSL_CIPHER_PARAM_AEAD_TAG)];
} gcm_names __attribute__((aligned(4096))) = {
    OSSL_CIPHER_PARAM_AEAD_IVLEN, OSSL_CIPHER_PARAM_AEAD_TAG
};

static const char *const aes_gcm[] = {
    "AES-128-GCM", "AES-192-GCM", "AES-256-GCM", NULL
};

/* ---- The keyed context ---- */

typedef struct {
    KC_PROVCTX *pctx;
    const KC_CIPHER_FNS *c;     /* the default's AES-GCM of this key size */
    const char *cipher;         /* its name */
    size_t keylen;
    void *gcm;                  /* its keyed context */
} KC_GMAC_CTX;

static const KC_MAC_FNS *deflt(const KC_GMAC_CTX *g)
{
    return &g->pctx->fam[KC_FAM_GMAC].mac;
}

static void gmac_free(void *vg)
{
    KC_GMAC_CTX *g = vg;

    if (g == NULL)
        return;
    if (g->gcm != NULL)
        g->c->freectx(g->gcm);
    OPENSSL_free(g);
}

static void *gmac_dup(void *vsrc)
{
    const KC_GMAC_CTX *src = vsrc;
    KC_GMAC_CTX *dst = OPENSSL_malloc(sizeof(*dst));

    if (dst == NULL)
        return NULL;
    *dst = *src;
    if ((dst->gcm = src->c->dupctx(src->gcm)) == NULL) {
        OPENSSL_free(dst);
        return NULL;
    }
    return dst;
}

/* A call failing in GMAC's own code: a default context says why. */
static int default_says(const KC_GMAC_CTX *g, const OSSL_PARAM params[])
{
    const KC_MAC_FNS *m = deflt(g);
    OSSL_PARAM c[2];
    void *t;

    c[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
                                            (char *)g->cipher, 0);
    c[1] = OSSL_PARAM_construct_end();
    if ((t = m->newctx(g->pctx->inner_provctx)) != NULL) {
        if (m->set_ctx_params(t, c))
            (void)m->set_ctx_params(t, params);
        m->freectx(t);
    }
    return 0;
}

/* The default's gmac_setkey(): EVP_EncryptInit_ex() with the key. */
static int set_key(KC_GMAC_CTX *g, const unsigned char *key, size_t keylen)
{
    OSSL_PARAM p[2];

    if (keylen != g->keylen) {
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
                                                 (void *)key, keylen);
        p[1] = OSSL_PARAM_construct_end();
        return default_says(g, p);
    }
    return g->c->einit(g->gcm, key, keylen, NULL, 0, NULL);
}

/*
 * The default's IV: EVP_CTRL_AEAD_SET_IVLEN (an int), then
 * EVP_EncryptInit_ex() with the IV of the length just set.
 */
static int set_iv(KC_GMAC_CTX *g, const unsigned char *iv, size_t len)
{
    int arg = (int)len;
    size_t sz;
    OSSL_PARAM p[2];

    if (arg < 0)
        return 0;
    sz = (size_t)arg;
    p[0] = OSSL_PARAM_construct_size_t(gcm_names.ivlen, &sz);
    p[1] = OSSL_PARAM_construct_end();
    if (g->c->set_ctx_params(g->gcm, p) <= 0)
        return 0;
    return g->c->einit(g->gcm, NULL, 0, iv, iv == NULL ? 0 : sz, NULL);
}

/*
 * The default's gmac_set_ctx_params(), in its order.  tmpl.c gives a
 * cipher to a default context (direct_recipher()) unless a name is given
 * twice where that fails: then, as for any repeat, the default judges.
 */
static int gmac_set_ctx_params(void *vg, const OSSL_PARAM params[])
{
    KC_GMAC_CTX *g = vg;
    const OSSL_PARAM *p, *key = NULL, *iv = NULL;
    int twice = 0, props = 0, cipher = 0;

    if (params == NULL)
        return 1;
    /* the first of each name, as the default locates them, in one pass */
    for (p = params; p->key != NULL; p++) {
        if (kc_name_is(p->key, OSSL_MAC_PARAM_CIPHER)) {
            twice |= cipher++;
        } else if (kc_name_is(p->key, OSSL_MAC_PARAM_KEY)) {
            twice |= key != NULL;
            key = key != NULL ? key : p;
        } else if (kc_name_is(p->key, OSSL_MAC_PARAM_IV)) {
            twice |= iv != NULL;
            iv = iv != NULL ? iv : p;
        } else if (kc_name_is(p->key, OSSL_MAC_PARAM_PROPERTIES)) {
            twice |= props++;
        }
    }
    if (twice
        && kc_tmac_repeats_fail(g->pctx, &g->pctx->fam[KC_FAM_GMAC]))
        return default_says(g, params);
    if (cipher)
        return 0;
    if (key != NULL && (key->data_type != OSSL_PARAM_OCTET_STRING
                        || !set_key(g, key->data, key->data_size)))
        return 0;
    if (iv != NULL)
        return iv->data_type == OSSL_PARAM_OCTET_STRING
               && set_iv(g, iv->data, iv->data_size);
    return 1;
}

static int gmac_init(void *vg, const unsigned char *key, size_t keylen,
                     const OSSL_PARAM params[])
{
    KC_GMAC_CTX *g = vg;

    if (!gmac_set_ctx_params(g, params))
        return 0;
    if (key != NULL)
        return set_key(g, key, keylen);
    return g->c->einit(g->gcm, NULL, 0, NULL, 0, NULL);
}

/* EVP_EncryptUpdate() with no output: the data is AAD. */
static int gmac_update(void *vg, const unsigned char *data, size_t datalen)
{
    KC_GMAC_CTX *g = vg;
    size_t outl, n;

    /* in pieces that fit EVP's int, as the default does */
    for (; datalen > 0; data += n, datalen -= n) {
        n = datalen > INT_MAX ? INT_MAX : datalen;
        if (!g->c->update(g->gcm, NULL, &outl, n, data, n))
            return 0;
    }
    return 1;
}

/* EVP_EncryptFinal_ex(), then the tag, GCM's whole one. */
static int gmac_final(void *vg, unsigned char *out, size_t *outl,
                      size_t outsize)
{
    KC_GMAC_CTX *g = vg;
    OSSL_PARAM p[2];
    size_t n;

    if (!g->c->final(g->gcm, out, &n, 0))
        return 0;
    p[0] = OSSL_PARAM_construct_octet_string(gcm_names.tag, out,
                                             EVP_GCM_TLS_TAG_LEN);
    p[1] = OSSL_PARAM_construct_end();
    if (!g->c->get_ctx_params(g->gcm, p))
        return 0;
    *outl = EVP_GCM_TLS_TAG_LEN;
    return 1;
}

static const KC_MAC_FNS gmac_direct = {
    .dupctx = gmac_dup,
    .freectx = gmac_free,
    .init = gmac_init,
    .update = gmac_update,
    .final = gmac_final,
    .set_ctx_params = gmac_set_ctx_params
};

/* A template: the default's AES-GCM for the shape's cipher, keyed. */
static void *gmac_direct_new(KC_PROVCTX *pctx, const unsigned char *shape,
                             size_t len, const unsigned char *key,
                             size_t keylen)
{
    const char *name, *props;
    EVP_CIPHER *ciph;
    KC_GMAC_CTX *g;
    size_t i;

    if (!kc_trec_last_utf8(shape, len, OSSL_MAC_PARAM_CIPHER,
                           OSSL_MAC_PARAM_PROPERTIES, &name, &props)
        || (ciph = kc_inner_cipher_fetch(pctx, name, props, 0)) == NULL)
        return NULL;
    for (i = 0; aes_gcm[i] != NULL && !EVP_CIPHER_is_a(ciph, aes_gcm[i]);
         i++)
        continue;
    /* an ENGINE for the cipher takes EVP's legacy path: not cached */
    if (aes_gcm[i] == NULL || kc_quirk_cipher_engine(EVP_CIPHER_get_nid(ciph))
        || (g = OPENSSL_zalloc(sizeof(*g))) == NULL) {
        EVP_CIPHER_free(ciph);
        return NULL;
    }
    g->pctx = pctx;
    g->c = &pctx->fam[KC_FAM_GMAC].ciph[i];
    g->cipher = aes_gcm[i];
    /* what gmac_setkey() compares with: the EVP_CIPHER_CTX's, the cipher's */
    g->keylen = (size_t)EVP_CIPHER_get_key_length(ciph);
    EVP_CIPHER_free(ciph);
    if (keylen != g->keylen
        || (g->gcm = g->c->newctx(pctx->inner_provctx)) == NULL
        || !g->c->einit(g->gcm, key, keylen, NULL, 0, NULL)) {
        gmac_free(g);
        return NULL;
    }
    return g;
}

/* like the default's: no per-context getters, the size is fixed */
KC_TMAC_IMPL(kc_gmac, KC_FAM_GMAC, ALG, kc_tmac_newctx)

const KC_TDESC kc_gmac_desc = {
    .name = "GMAC",
    .functions = kc_gmac_functions,
    .shape_names = gmac_shape,
    .cipher_param = OSSL_MAC_PARAM_CIPHER,
    .volatile_names = gmac_volatile,
    .set_key_keys = 1,
    .volatile_last_wins = 1,
    .copies_look_up = 1,
    .base = KC_BASE_COPY,
    .ciphers = aes_gcm,
    .direct = &gmac_direct,
    .direct_ciphers = aes_gcm,
    .direct_new = gmac_direct_new
};
