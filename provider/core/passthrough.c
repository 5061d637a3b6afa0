/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pass-through algorithms: OpenSSL's own users of what keycache caches.
 * Under `default_properties = ?provider=keycache` the default's KDFs and
 * HMAC-DRBG would fetch keycache's HMAC, keyed with secrets that must never
 * become cache entries.  So keycache offers them as pass-throughs to the
 * inner default, whose fetches stay in the private library context.  Only
 * functions taking a provider context need a thunk handing over the
 * inner's; C has no closures, so there is a fixed set of thunk slots, one
 * per algorithm.  Built from the running default at the first query.
 *
 * KDFs run in the application's library context instead (kdf_provctx()),
 * where their digest fetches find the store the application built: in the
 * private one a process's first TLS handshake built a second, some 3M
 * instructions.  There their MAC fetches find keycache's, so each call of
 * theirs runs between kc_derive_enter() and kc_derive_leave(): the MAC
 * contexts made and keyed in it are cold, their keys never looked up,
 * counted or admitted (cache/store.c), and admission's origin check stays
 * behind that as before.
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/provider.h>

#include "core/core.h"
#include "inner/inner.h"

/*
 * The kinds of function that take a provider context, each a thunk per
 * slot: X(slot, suffix, kind, return type, parameters, inner arguments).
 */
#define KC_PT_KINDS(X, i, s)                                                \
    X(i, s, NEWCTX, void *, (void *provctx), (p->inner_provctx))            \
    X(i, s, RAND_NEWCTX, void *,                                            \
      (void *provctx, void *parent, const OSSL_DISPATCH *parent_calls),     \
      (p->inner_provctx, parent, parent_calls))                             \
    X(i, s, PARAMS, const OSSL_PARAM *, (void *provctx), (p->inner_provctx))\
    X(i, s, GEN_SETTABLE, const OSSL_PARAM *, (void *provctx),              \
      (p->inner_provctx))                                                   \
    X(i, s, GETTABLE_CTX, const OSSL_PARAM *, (void *ctx, void *provctx),   \
      (ctx, p->inner_provctx))                                              \
    X(i, s, SETTABLE_CTX, const OSSL_PARAM *, (void *ctx, void *provctx),   \
      (ctx, p->inner_provctx))                                              \
    X(i, s, SKEY_IMPORT, void *,                                            \
      (void *provctx, int selection, const OSSL_PARAM params[]),            \
      (p->inner_provctx, selection, params))                                \
    X(i, s, SKEY_GENERATE, void *,                                          \
      (void *provctx, const OSSL_PARAM params[]), (p->inner_provctx, params))

#define KC_PT_KIND_ENUM(i, s, kind, ...) PT_##kind,
enum { KC_PT_KINDS(KC_PT_KIND_ENUM, 0, 0) PT_KINDS };

/* which function ids of an operation are of which kind, by operation */
static const struct {
    int op, id, kind;
} pt_ids[] = {
    { OSSL_OP_KDF, OSSL_FUNC_KDF_NEWCTX, PT_NEWCTX },
    { OSSL_OP_KDF, OSSL_FUNC_KDF_GETTABLE_PARAMS, PT_PARAMS },
    { OSSL_OP_KDF, OSSL_FUNC_KDF_GETTABLE_CTX_PARAMS, PT_GETTABLE_CTX },
    { OSSL_OP_KDF, OSSL_FUNC_KDF_SETTABLE_CTX_PARAMS, PT_SETTABLE_CTX },
    { OSSL_OP_RAND, OSSL_FUNC_RAND_NEWCTX, PT_RAND_NEWCTX },
    { OSSL_OP_RAND, OSSL_FUNC_RAND_GETTABLE_PARAMS, PT_PARAMS },
    { OSSL_OP_RAND, OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS, PT_GETTABLE_CTX },
    { OSSL_OP_RAND, OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS, PT_SETTABLE_CTX },
    { OSSL_OP_CIPHER, OSSL_FUNC_CIPHER_NEWCTX, PT_NEWCTX },
    { OSSL_OP_CIPHER, OSSL_FUNC_CIPHER_GETTABLE_PARAMS, PT_PARAMS },
    { OSSL_OP_CIPHER, OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS, PT_GETTABLE_CTX },
    { OSSL_OP_CIPHER, OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS, PT_SETTABLE_CTX },
    { KC_OP_SKEYMGMT, KC_FUNC_SKEYMGMT_IMPORT, PT_SKEY_IMPORT },
    { KC_OP_SKEYMGMT, KC_FUNC_SKEYMGMT_GENERATE, PT_SKEY_GENERATE },
    { KC_OP_SKEYMGMT, KC_FUNC_SKEYMGMT_IMP_SETTABLE_PARAMS, PT_PARAMS },
    { KC_OP_SKEYMGMT, KC_FUNC_SKEYMGMT_GEN_SETTABLE_PARAMS, PT_GEN_SETTABLE }
};

/* a slot: the inner functions its thunks call, and its dispatch table */
struct kc_pt_st {
    void (*fn[PT_KINDS])(void);
    OSSL_DISPATCH *table;       /* inner functions and thunks */
    OSSL_DISPATCH *block;       /* an offer's tables, in its first slot */
};

/* 192 slots, enough for every KDF, cipher and key manager of 4.0: X(i, s) */
#define KC_PT_16(X, h)                                                      \
    X(h * 16 + 0, h##_0) X(h * 16 + 1, h##_1) X(h * 16 + 2, h##_2)          \
    X(h * 16 + 3, h##_3) X(h * 16 + 4, h##_4) X(h * 16 + 5, h##_5)          \
    X(h * 16 + 6, h##_6) X(h * 16 + 7, h##_7) X(h * 16 + 8, h##_8)          \
    X(h * 16 + 9, h##_9) X(h * 16 + 10, h##_10) X(h * 16 + 11, h##_11)      \
    X(h * 16 + 12, h##_12) X(h * 16 + 13, h##_13) X(h * 16 + 14, h##_14)    \
    X(h * 16 + 15, h##_15)
#define KC_PT_SLOT_LIST(X)                                                  \
    KC_PT_16(X, 0) KC_PT_16(X, 1) KC_PT_16(X, 2) KC_PT_16(X, 3)             \
    KC_PT_16(X, 4) KC_PT_16(X, 5) KC_PT_16(X, 6) KC_PT_16(X, 7)             \
    KC_PT_16(X, 8) KC_PT_16(X, 9) KC_PT_16(X, 10) KC_PT_16(X, 11)

#define KC_PT_THUNK(i, s, kind, ret, params, args)                          \
    static ret pt_##kind##_##s params                                       \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return ((ret (*)params)p->pt[i].fn[PT_##kind])args;                 \
    }
#define KC_PT_THUNKS(i, s) KC_PT_KINDS(KC_PT_THUNK, i, s)
KC_PT_SLOT_LIST(KC_PT_THUNKS)

#define KC_PT_THUNK_FN(i, s, kind, ...) (void (*)(void))pt_##kind##_##s,
#define KC_PT_THUNK_ROW(i, s) { KC_PT_KINDS(KC_PT_THUNK_FN, i, s) },
static void (*const thunks[][PT_KINDS])(void) = {
    KC_PT_SLOT_LIST(KC_PT_THUNK_ROW)
};

#define KC_PT_SLOTS (sizeof(thunks) / sizeof(thunks[0]))

/*
 * A KDF's functions that take its context, each called inside
 * kc_derive_enter()/leave().  They get no provider context to find the
 * inner function by, so they take it from kdf_fn, shared by every instance:
 * the built-in default's KDFs, bound to the same slots in each (bind_kdf()
 * checks).  X(slot, suffix, kind, type, parameters, arguments); the first
 * KC_KDF_SLOTS slots, where KDFs are bound first.
 */
#define KC_KDF_VALUE_KINDS(X, i, s)                                         \
    X(i, s, DUPCTX, void *, (void *ctx), (ctx))                             \
    X(i, s, DERIVE, int, (void *ctx, unsigned char *key, size_t keylen,     \
                          const OSSL_PARAM params[]),                      \
      (ctx, key, keylen, params))                                           \
    X(i, s, GET_CTX_PARAMS, int, (void *ctx, OSSL_PARAM params[]),          \
      (ctx, params))                                                        \
    X(i, s, SET_CTX_PARAMS, int, (void *ctx, const OSSL_PARAM params[]),    \
      (ctx, params))
#define KC_KDF_VOID_KINDS(X, i, s)                                          \
    X(i, s, FREECTX, void, (void *ctx), (ctx))                              \
    X(i, s, RESET, void, (void *ctx), (ctx))

#define KC_KDF_KIND_ENUM(i, s, kind, ...) KDF_##kind,
enum {
    KC_KDF_VALUE_KINDS(KC_KDF_KIND_ENUM, 0, 0)
    KC_KDF_VOID_KINDS(KC_KDF_KIND_ENUM, 0, 0) KDF_NEWCTX, KDF_KINDS
};

#define KC_KDF_SLOTS 32
static void (*kdf_fn[KC_KDF_SLOTS][KDF_KINDS])(void);

#define KC_KDF_VALUE_THUNK(i, s, kind, ret, params, args)                   \
    static ret kdf_##kind##_##s params                                      \
    {                                                                       \
        ret r;                                                              \
                                                                            \
        kc_derive_enter();                                                  \
        r = ((ret (*)params)kdf_fn[i][KDF_##kind])args;                     \
        kc_derive_leave();                                                  \
        return r;                                                           \
    }
#define KC_KDF_VOID_THUNK(i, s, kind, ret, params, args)                    \
    static void kdf_##kind##_##s params                                     \
    {                                                                       \
        kc_derive_enter();                                                  \
        ((void (*)params)kdf_fn[i][KDF_##kind])args;                        \
        kc_derive_leave();                                                  \
    }
static void *kdf_provctx(KC_PROVCTX *pctx);
#define KC_KDF_THUNKS(i, s)                                                 \
    KC_KDF_VALUE_KINDS(KC_KDF_VALUE_THUNK, i, s)                            \
    KC_KDF_VOID_KINDS(KC_KDF_VOID_THUNK, i, s)                              \
    static void *kdf_NEWCTX_##s(void *provctx)                              \
    {                                                                       \
        void *r;                                                            \
                                                                            \
        kc_derive_enter();                                                  \
        r = ((void *(*)(void *))kdf_fn[i][KDF_NEWCTX])(kdf_provctx(provctx));\
        kc_derive_leave();                                                  \
        return r;                                                           \
    }
#define KC_KDF_SLOT_LIST(X) KC_PT_16(X, 0) KC_PT_16(X, 1)
KC_KDF_SLOT_LIST(KC_KDF_THUNKS)

#define KC_KDF_THUNK_FN(i, s, kind, ...) (void (*)(void))kdf_##kind##_##s,
#define KC_KDF_THUNK_ROW(i, s)                                              \
    { KC_KDF_VALUE_KINDS(KC_KDF_THUNK_FN, i, s)                             \
      KC_KDF_VOID_KINDS(KC_KDF_THUNK_FN, i, s)                              \
      (void (*)(void))kdf_NEWCTX_##s },
static void (*const kdf_thunks[][KDF_KINDS])(void) = {
    KC_KDF_SLOT_LIST(KC_KDF_THUNK_ROW)
};

/* the KDF function ids kdf_thunks serve: any other keeps a KDF private */
static const signed char kdf_kind[] = {
    [OSSL_FUNC_KDF_NEWCTX] = KDF_NEWCTX + 1,
    [OSSL_FUNC_KDF_DUPCTX] = KDF_DUPCTX + 1,
    [OSSL_FUNC_KDF_FREECTX] = KDF_FREECTX + 1,
    [OSSL_FUNC_KDF_RESET] = KDF_RESET + 1,
    [OSSL_FUNC_KDF_DERIVE] = KDF_DERIVE + 1,
    [OSSL_FUNC_KDF_GET_CTX_PARAMS] = KDF_GET_CTX_PARAMS + 1,
    [OSSL_FUNC_KDF_SET_CTX_PARAMS] = KDF_SET_CTX_PARAMS + 1,
    /* the rest take no context, or the provider's: thunks[] as before */
    [OSSL_FUNC_KDF_GETTABLE_PARAMS] = -1,
    [OSSL_FUNC_KDF_GETTABLE_CTX_PARAMS] = -1,
    [OSSL_FUNC_KDF_SETTABLE_CTX_PARAMS] = -1,
    [OSSL_FUNC_KDF_GET_PARAMS] = -1
};

/*
 * The provider context a KDF is made in: the application's built-in
 * default's (kept by the pin), else the private default's.  Also once the
 * application unloaded its default, as its own KDFs made before run on.
 */
static void *kdf_provctx(KC_PROVCTX *pctx)
{
    void *provctx = kc_inner_app_provctx(pctx, &pctx->kdf_pin,
                                         OSSL_MAC_NAME_HMAC);

    return provctx != NULL ? provctx : pctx->inner_provctx;
}

/*
 * Bind KDF |in| to slot |s|'s kdf_thunks in |table|: 0 (nothing written)
 * if a function of it is not one kdf_thunks serve, or another instance
 * bound another function to that slot.
 */
static int bind_kdf(size_t s, const OSSL_DISPATCH *in, OSSL_DISPATCH *table)
{
    void (*none)(void);
    size_t n;
    int id, k;

    if (s >= KC_KDF_SLOTS)
        return 0;
    for (n = 0; (id = in[n].function_id) != 0; n++)
        if (id < 0 || (size_t)id >= sizeof(kdf_kind) || kdf_kind[id] == 0)
            return 0;
    for (n = 0; in[n].function_id != 0; n++) {
        if ((k = kdf_kind[in[n].function_id] - 1) < 0)
            continue;
        none = NULL;
        if (!__atomic_compare_exchange_n(&kdf_fn[s][k], &none, in[n].function,
                                         0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
            && none != in[n].function)
            return 0;
    }
    for (n = 0; in[n].function_id != 0; n++)
        if ((k = kdf_kind[in[n].function_id] - 1) >= 0)
            table[n].function = kdf_thunks[s][k];
    return 1;
}

/*
 * Function id -> kind (pt_ids) of one operation, -1: called as is.  0 if
 * an id does not fit: its thunk would be left out, and the inner function
 * given keycache's provider context.
 */
#define KC_PT_IDS 64
static int kinds_of(int op, signed char kind[KC_PT_IDS])
{
    size_t k;

    memset(kind, -1, KC_PT_IDS);
    for (k = 0; k < sizeof(pt_ids) / sizeof(pt_ids[0]); k++) {
        if (pt_ids[k].op != op)
            continue;
        if (pt_ids[k].id < 0 || pt_ids[k].id >= KC_PT_IDS)
            return 0;
        kind[pt_ids[k].id] = (signed char)pt_ids[k].kind;
    }
    return 1;
}

static size_t table_len(const OSSL_DISPATCH *d)
{
    size_t n = 0;

    while (d[n].function_id != 0)
        n++;
    return n + 1;
}

/*
 * Fill slot |s| from the inner algorithm's dispatch table into |table|
 * (3.5+ passes some 130 ciphers of ~15 functions each through at the
 * first cipher fetch of a process: a look-up per function).
 */
static size_t bind_slot(KC_PROVCTX *pctx, int op, size_t s,
                        const OSSL_DISPATCH *in, OSSL_DISPATCH *table,
                        const signed char *kind)
{
    struct kc_pt_st *pt = &pctx->pt[s];
    size_t n;
    int k;

    pt->table = table;
    for (n = 0; in[n].function_id != 0; n++) {
        table[n] = in[n];
        k = (unsigned int)in[n].function_id < KC_PT_IDS
            ? kind[in[n].function_id] : -1;
        if (k >= 0) {
            pt->fn[k] = in[n].function;
            table[n].function = thunks[s][k];
        }
    }
    table[n] = in[n];
    if (op == OSSL_OP_KDF)
        (void)bind_kdf(s, in, table);
    return n + 1;
}

static int wanted(const char *names, const char *const *want,
                  const OSSL_ALGORITHM *except)
{
    /* keycache's own wrappers carry the inner's name list itself */
    for (; except != NULL && except->algorithm_names != NULL; except++)
        if (except->algorithm_names == names)
            return 0;
    if (want == NULL)
        return 1;
    for (; *want != NULL; want++)
        if (kc_names_start_with(names, *want))
            return 1;
    return 0;
}

/*
 * Offer the inner algorithms of |op| named in |want| (all when NULL), but
 * none that |except| lists, as pass-through: how many, or -1 on failure.
 */
static int offer(KC_PROVCTX *pctx, int op, const char *const *want,
                 const OSSL_ALGORITHM *except, OSSL_ALGORITHM **out)
{
    const OSSL_ALGORITHM *in = kc_inner_query(pctx, op), *a;
    OSSL_ALGORITHM *algs;
    OSSL_DISPATCH *tables;
    signed char kind[KC_PT_IDS];
    size_t len = 0, first = pctx->npt, l;
    int n = 0;

    /* every table in one block, the offer's first slot's (room for those
     * |except| lists: telling them costs more than their few entries) */
    for (a = in; a != NULL && a->algorithm_names != NULL; a++, n++)
        if (want == NULL || wanted(a->algorithm_names, want, NULL))
            len += table_len(a->implementation);
    if ((algs = OPENSSL_zalloc((n + 1) * sizeof(*algs))) == NULL)
        return -1;
    *out = algs;
    if (len == 0)
        return 0;
    if (!kinds_of(op, kind)
        || (tables = OPENSSL_malloc(len * sizeof(*tables))) == NULL)
        return -1;
    for (n = 0, a = in; a->algorithm_names != NULL; a++) {
        if (!wanted(a->algorithm_names, want, except))
            continue;
        if (pctx->npt == KC_PT_SLOTS) {
            /* those stay with default; not raised: the queue is the app's */
            kc_debug_log(pctx, 1, "warning: too many algorithms to pass "
                         "through, %s not offered", a->algorithm_names);
            break;
        }
        pctx->pt[pctx->npt].block = pctx->npt == first ? tables : NULL;
        l = bind_slot(pctx, op, pctx->npt, a->implementation, tables, kind);
        kc_bind_row(&algs[n++], a, pctx->pt[pctx->npt++].table);
        tables += l;
    }
    if (pctx->npt == first)
        OPENSSL_free(tables);
    return n;
}

/*
 * EVP_SKEY (3.5+): libcrypto runs a cipher with an EVP_SKEY only if the
 * key's manager is the cipher's provider's (evp_cipher_init_skey_internal).
 * So with any cipher offered, the default's key managers and every other
 * default cipher are passed through, the key data the inner default's.
 * No MAC takes an EVP_SKEY (no OSSL_FUNC_MAC_INIT_SKEY up to 4.0).  An
 * AES-SIV pass-through alone (siv_pt in build()) never comes here: 3.5+
 * passes it through only beside a wrapped cipher.
 */
static int offer_skey(KC_PROVCTX *pctx)
{
    int n;

    if (pctx->ncipher_wrapped == 0)
        return 1;
    n = offer(pctx, KC_OP_SKEYMGMT, NULL, NULL, &pctx->skeymgmt_algs);
    if (n <= 0)
        return n == 0;          /* before 3.5: nothing to offer */
    return offer(pctx, OSSL_OP_CIPHER, NULL, pctx->cipher_algs,
                 &pctx->cipher_pt_algs) >= 0;
}

static int build(KC_PROVCTX *pctx)
{
    static const char *const drbgs[] = { "HMAC-DRBG", NULL };
    static const char *const none[] = { NULL };
    /* AES-SIV's S2V is a CMAC: its rows, when CMAC is on and they are not */
    const char *sivs[KC_REGISTRY_ROWS + 1];
    const OSSL_ALGORITHM *a;
    int siv_pt = 0, i, n = 0;

    for (i = 0; i < KC_REGISTRY_ROWS; i++)
        if (strcmp(kc_registry[i].conf, KEYCACHE_CONF_AES_SIV) == 0
            && !*kc_registry_on(pctx, i))
            sivs[n++] = kc_registry[i].name;
    sivs[n] = NULL;
    /*
     * Only where it adds no other cipher: before 3.5, or beside a wrapped
     * cipher, which passes every cipher through anyway (offer_skey()).
     * Otherwise the default's SIV keys keycache's CMAC, and admission
     * refuses a key that a cipher entry point gave (cache/origin.c).
     */
    siv_pt = n > 0 && *kc_registry_on(pctx, KC_ROW_CMAC)
             && (kc_quirk_ciphers_pay() || pctx->ncipher_wrapped > 0);

    pctx->pt = OPENSSL_zalloc(KC_PT_SLOTS * sizeof(*pctx->pt));
    if (pctx->pt == NULL)
        return 0;
    /* every KDF; of the DRBGs only HMAC-DRBG uses a MAC */
    if (offer(pctx, OSSL_OP_KDF, NULL, NULL, &pctx->kdf_algs) < 0
        || offer(pctx, OSSL_OP_RAND, drbgs, NULL, &pctx->rand_algs) < 0
        || !offer_skey(pctx))
        return 0;
    /* with the key managers every other cipher is passed through already */
    if (pctx->cipher_pt_algs == NULL
        && offer(pctx, OSSL_OP_CIPHER, siv_pt ? sivs : none, NULL,
                 &pctx->cipher_pt_algs) < 0)
        return 0;
    /* after the wrapped ciphers in the table the query answers */
    n = (int)pctx->ncipher_wrapped;
    for (a = pctx->cipher_pt_algs; a->algorithm_names != NULL
         && n < KC_CFAM_COUNT + KC_PT_CIPHERS; a++)
        pctx->cipher_algs[n++] = *a;
    return 1;
}

int kc_passthrough_ready(KC_PROVCTX *pctx)
{
    if (__atomic_load_n(&pctx->pt_state, __ATOMIC_ACQUIRE) != KC_ONCE_DONE
        && kc_once_claim(&pctx->pt_state)) {
        /* what a claim lost to fork() left: rows first, then their tables */
        memset(&pctx->cipher_algs[pctx->ncipher_wrapped], 0,
               (KC_CFAM_COUNT + KC_PT_CIPHERS + 1 - pctx->ncipher_wrapped)
               * sizeof(pctx->cipher_algs[0]));
        kc_passthrough_stop(pctx);
        if (!(pctx->pt_ok = build(pctx)))
            kc_debug_log(pctx, 1, "error: cannot build the pass-through "
                         "tables: keycache withdraws its MACs, so that the "
                         "default's KDFs and DRBGs cannot reach them");
        kc_once_done(&pctx->pt_state);
    }
    return __atomic_load_n(&pctx->pt_state, __ATOMIC_ACQUIRE) == KC_ONCE_DONE
           && pctx->pt_ok;
}

void kc_passthrough_stop(KC_PROVCTX *pctx)
{
    size_t i;

    if (pctx->pt != NULL)
        for (i = 0; i < pctx->npt; i++)
            OPENSSL_free(pctx->pt[i].block);
    OPENSSL_free(pctx->pt);
    OPENSSL_free(pctx->kdf_algs);
    OPENSSL_free(pctx->rand_algs);
    OPENSSL_free(pctx->cipher_pt_algs);
    OPENSSL_free(pctx->skeymgmt_algs);
    pctx->pt = NULL;
    pctx->npt = 0;
    pctx->kdf_algs = pctx->rand_algs = pctx->cipher_pt_algs = NULL;
    pctx->skeymgmt_algs = NULL;
}
