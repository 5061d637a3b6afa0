/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pass-through algorithms: OpenSSL's own users of what keycache caches.
 *
 * Under `default_properties = ?provider=keycache` every query-less fetch
 * prefers keycache, including the ones the default provider makes inside
 * its KDFs (TLS1-PRF, HKDF, TLS13-KDF, KBKDF, SSKDF, PBKDF2 ...) and its
 * HMAC-DRBG.  Their keys are secrets OpenSSL derives (a TLS master secret, a
 * PRK, a DRBG's state) and must never become cache entries.  So keycache
 * offers each KDF of the default provider, and its HMAC-DRBG, as a plain
 * pass-through to the inner default provider in keycache's private library
 * context: there the KDF's own HMAC fetch resolves to the default's HMAC,
 * never to keycache.
 *
 * A pass-through context is the inner context itself, so every function
 * that takes one is the inner function, called directly.  Only the few that
 * take a provider context need a thunk that hands over the inner provider's
 * instead; C has no closures, so there is a fixed set of thunk slots, one
 * per algorithm, generated below.  The tables are built from the running
 * default (the list of KDFs depends on the OpenSSL version) at the first
 * query that needs one (kc_passthrough_ready()): a process that fetches
 * no KDF, DRBG or cipher does not pay for them.
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/provider.h>

#include "core/core.h"

/* enough for every KDF, the ciphers and key managers of 4.0 and room */
#define KC_PT_SLOT_LIST(X)                                                  \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12)     \
    X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)       \
    X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34)       \
    X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45)       \
    X(46) X(47) X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) X(56)       \
    X(57) X(58) X(59) X(60) X(61) X(62) X(63) X(64) X(65) X(66) X(67)       \
    X(68) X(69) X(70) X(71) X(72) X(73) X(74) X(75) X(76) X(77) X(78)       \
    X(79) X(80) X(81) X(82) X(83) X(84) X(85) X(86) X(87) X(88) X(89)       \
    X(90) X(91) X(92) X(93) X(94) X(95) X(96) X(97) X(98) X(99) X(100)      \
    X(101) X(102) X(103) X(104) X(105) X(106) X(107) X(108) X(109) X(110)   \
    X(111) X(112) X(113) X(114) X(115) X(116) X(117) X(118) X(119) X(120)   \
    X(121) X(122) X(123) X(124) X(125) X(126) X(127) X(128) X(129) X(130)   \
    X(131) X(132) X(133) X(134) X(135) X(136) X(137) X(138) X(139) X(140)   \
    X(141) X(142) X(143) X(144) X(145) X(146) X(147) X(148) X(149) X(150)   \
    X(151) X(152) X(153) X(154) X(155) X(156) X(157) X(158) X(159) X(160)   \
    X(161) X(162) X(163) X(164) X(165) X(166) X(167) X(168) X(169) X(170)   \
    X(171) X(172) X(173) X(174) X(175) X(176) X(177) X(178) X(179) X(180)   \
    X(181) X(182) X(183) X(184) X(185) X(186) X(187) X(188) X(189) X(190)   \
    X(191)

/* the inner functions a slot's thunks call */
struct kc_pt_st {
    OSSL_FUNC_kdf_newctx_fn *kdf_newctx;
    OSSL_FUNC_rand_newctx_fn *rand_newctx;
    /* same shapes for KDF and RAND */
    OSSL_FUNC_kdf_gettable_params_fn *gettable_params;
    OSSL_FUNC_kdf_gettable_ctx_params_fn *gettable_ctx_params;
    OSSL_FUNC_kdf_settable_ctx_params_fn *settable_ctx_params;
    /* a key manager's (gettable_params holds its import settables) */
    void *(*skey_import)(void *provctx, int selection,
                         const OSSL_PARAM params[]);
    void *(*skey_generate)(void *provctx, const OSSL_PARAM params[]);
    const OSSL_PARAM *(*skey_gen_settable)(void *provctx);
    OSSL_DISPATCH *table;       /* ours: inner functions and thunks */
};

#define KC_PT_THUNKS(i)                                                     \
    static void *pt_kdf_newctx_##i(void *provctx)                           \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].kdf_newctx(p->inner_provctx);                       \
    }                                                                       \
    static void *pt_rand_newctx_##i(void *provctx, void *parent,            \
                                    const OSSL_DISPATCH *parent_calls)      \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].rand_newctx(p->inner_provctx, parent, parent_calls);\
    }                                                                       \
    static const OSSL_PARAM *pt_gettable_params_##i(void *provctx)          \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].gettable_params(p->inner_provctx);                  \
    }                                                                       \
    static const OSSL_PARAM *pt_gettable_ctx_params_##i(void *ctx,          \
                                                        void *provctx)      \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].gettable_ctx_params(ctx, p->inner_provctx);         \
    }                                                                       \
    static const OSSL_PARAM *pt_settable_ctx_params_##i(void *ctx,          \
                                                        void *provctx)      \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].settable_ctx_params(ctx, p->inner_provctx);         \
    }                                                                       \
    static void *pt_skey_import_##i(void *provctx, int selection,           \
                                    const OSSL_PARAM params[])              \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].skey_import(p->inner_provctx, selection, params);   \
    }                                                                       \
    static void *pt_skey_generate_##i(void *provctx,                        \
                                      const OSSL_PARAM params[])            \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].skey_generate(p->inner_provctx, params);            \
    }                                                                       \
    static const OSSL_PARAM *pt_skey_gen_settable_##i(void *provctx)        \
    {                                                                       \
        KC_PROVCTX *p = provctx;                                            \
                                                                            \
        return p->pt[i].skey_gen_settable(p->inner_provctx);                \
    }
KC_PT_SLOT_LIST(KC_PT_THUNKS)

typedef struct {
    void (*kdf_newctx)(void);
    void (*rand_newctx)(void);
    void (*gettable_params)(void);
    void (*gettable_ctx_params)(void);
    void (*settable_ctx_params)(void);
    void (*skey_import)(void);
    void (*skey_generate)(void);
    void (*skey_gen_settable)(void);
} KC_PT_THUNK_SET;

#define KC_PT_THUNK_ROW(i)                                                  \
    { (void (*)(void))pt_kdf_newctx_##i, (void (*)(void))pt_rand_newctx_##i,\
      (void (*)(void))pt_gettable_params_##i,                               \
      (void (*)(void))pt_gettable_ctx_params_##i,                           \
      (void (*)(void))pt_settable_ctx_params_##i,                           \
      (void (*)(void))pt_skey_import_##i,                                   \
      (void (*)(void))pt_skey_generate_##i,                                 \
      (void (*)(void))pt_skey_gen_settable_##i },
static const KC_PT_THUNK_SET thunks[] = { KC_PT_SLOT_LIST(KC_PT_THUNK_ROW) };

#define KC_PT_SLOTS (sizeof(thunks) / sizeof(thunks[0]))

/*
 * The function ids that take a provider context.  KDF and RAND happen to
 * number them alike except for the ctx-params pair; ciphers have the same
 * shapes under other ids.
 */
static void (*thunk_for(const KC_PT_THUNK_SET *t, int op, int id))(void)
{
    if (op == KC_OP_SKEYMGMT) {
        switch (id) {
        case KC_FUNC_SKEYMGMT_IMPORT:
            return t->skey_import;
        case KC_FUNC_SKEYMGMT_GENERATE:
            return t->skey_generate;
        case KC_FUNC_SKEYMGMT_IMP_SETTABLE_PARAMS:
            return t->gettable_params;
        case KC_FUNC_SKEYMGMT_GEN_SETTABLE_PARAMS:
            return t->skey_gen_settable;
        }
        return NULL;
    }
    if (op == OSSL_OP_CIPHER) {
        switch (id) {
        case OSSL_FUNC_CIPHER_NEWCTX:
            return t->kdf_newctx;
        case OSSL_FUNC_CIPHER_GETTABLE_PARAMS:
            return t->gettable_params;
        case OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS:
            return t->gettable_ctx_params;
        case OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS:
            return t->settable_ctx_params;
        }
        return NULL;
    }
    if (op == OSSL_OP_KDF) {
        switch (id) {
        case OSSL_FUNC_KDF_NEWCTX:
            return t->kdf_newctx;
        case OSSL_FUNC_KDF_GETTABLE_PARAMS:
            return t->gettable_params;
        case OSSL_FUNC_KDF_GETTABLE_CTX_PARAMS:
            return t->gettable_ctx_params;
        case OSSL_FUNC_KDF_SETTABLE_CTX_PARAMS:
            return t->settable_ctx_params;
        }
    } else {
        switch (id) {
        case OSSL_FUNC_RAND_NEWCTX:
            return t->rand_newctx;
        case OSSL_FUNC_RAND_GETTABLE_PARAMS:
            return t->gettable_params;
        case OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS:
            return t->gettable_ctx_params;
        case OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS:
            return t->settable_ctx_params;
        }
    }
    return NULL;
}

/* Fill slot |s| from the inner algorithm's dispatch table. */
static int bind_slot(KC_PROVCTX *pctx, size_t s, int op,
                     const OSSL_DISPATCH *in)
{
    struct kc_pt_st *pt = &pctx->pt[s];
    const OSSL_DISPATCH *d;
    size_t n = 0;
    void (*th)(void);

    for (d = in; d->function_id != 0; d++)
        n++;
    if ((pt->table = OPENSSL_zalloc((n + 1) * sizeof(*pt->table))) == NULL)
        return 0;
    for (n = 0, d = in; d->function_id != 0; d++, n++) {
        pt->table[n] = *d;
        if ((th = thunk_for(&thunks[s], op, d->function_id)) == NULL)
            continue;
        pt->table[n].function = th;
        if (op == KC_OP_SKEYMGMT) {
            switch (d->function_id) {
            case KC_FUNC_SKEYMGMT_IMPORT:
                pt->skey_import = (void *(*)(void *, int, const OSSL_PARAM *))
                                  d->function;
                break;
            case KC_FUNC_SKEYMGMT_GENERATE:
                pt->skey_generate = (void *(*)(void *, const OSSL_PARAM *))
                                    d->function;
                break;
            case KC_FUNC_SKEYMGMT_IMP_SETTABLE_PARAMS:
                pt->gettable_params = OSSL_FUNC_kdf_gettable_params(d);
                break;
            case KC_FUNC_SKEYMGMT_GEN_SETTABLE_PARAMS:
                pt->skey_gen_settable = OSSL_FUNC_kdf_gettable_params(d);
                break;
            }
            continue;
        }
        if (op == OSSL_OP_CIPHER) {
            switch (d->function_id) {
            case OSSL_FUNC_CIPHER_NEWCTX:
                pt->kdf_newctx = OSSL_FUNC_kdf_newctx(d);
                break;
            case OSSL_FUNC_CIPHER_GETTABLE_PARAMS:
                pt->gettable_params = OSSL_FUNC_kdf_gettable_params(d);
                break;
            case OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS:
                pt->gettable_ctx_params =
                    OSSL_FUNC_kdf_gettable_ctx_params(d);
                break;
            case OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS:
                pt->settable_ctx_params =
                    OSSL_FUNC_kdf_settable_ctx_params(d);
                break;
            }
            continue;
        }
        switch (d->function_id) {
        case OSSL_FUNC_KDF_NEWCTX:      /* == OSSL_FUNC_RAND_NEWCTX */
            if (op == OSSL_OP_KDF)
                pt->kdf_newctx = OSSL_FUNC_kdf_newctx(d);
            else
                pt->rand_newctx = OSSL_FUNC_rand_newctx(d);
            break;
        case OSSL_FUNC_KDF_GETTABLE_PARAMS:
        case OSSL_FUNC_RAND_GETTABLE_PARAMS:
            pt->gettable_params = OSSL_FUNC_kdf_gettable_params(d);
            break;
        case OSSL_FUNC_KDF_GETTABLE_CTX_PARAMS:
        case OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS:
            pt->gettable_ctx_params = OSSL_FUNC_kdf_gettable_ctx_params(d);
            break;
        case OSSL_FUNC_KDF_SETTABLE_CTX_PARAMS:
        case OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS:
            pt->settable_ctx_params = OSSL_FUNC_kdf_settable_ctx_params(d);
            break;
        }
    }
    return 1;
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
 * none that |except| lists, as pass-through.  Returns the number offered,
 * or -1 on failure.
 */
static int offer(KC_PROVCTX *pctx, int op, const char *const *want,
                 const OSSL_ALGORITHM *except, OSSL_ALGORITHM **out)
{
    const OSSL_ALGORITHM *in, *a;
    OSSL_ALGORITHM *algs;
    int no_cache = 0, n = 0;

    in = OSSL_PROVIDER_query_operation(pctx->deflt, op, &no_cache);
    for (a = in; a != NULL && a->algorithm_names != NULL; a++)
        n++;
    if ((algs = OPENSSL_zalloc((n + 1) * sizeof(*algs))) == NULL)
        return -1;
    *out = algs;
    for (n = 0, a = in; a != NULL && a->algorithm_names != NULL; a++) {
        if (!wanted(a->algorithm_names, want, except))
            continue;
        if (pctx->npt == KC_PT_SLOTS) {
            /* more than we have thunks for: those stay with default */
            /* (at a query: the application's error queue is not ours) */
            kc_debug_log(pctx, 1, "warning: too many algorithms to pass "
                         "through, %s not offered", a->algorithm_names);
            break;
        }
        if (!bind_slot(pctx, pctx->npt, op, a->implementation))
            return -1;
        algs[n].algorithm_names = a->algorithm_names;
        algs[n].property_definition = "provider=" KEYCACHE_PROVIDER_NAME;
        algs[n].implementation = pctx->pt[pctx->npt++].table;
        /*
         * a cipher or key manager serves query-less programs, which read
         * the default's own (EVP_CIPHER_get0_description()); KDFs and the
         * DRBG say why they are here
         */
        algs[n].algorithm_description =
            op == OSSL_OP_CIPHER || op == KC_OP_SKEYMGMT
            ? a->algorithm_description
            : "the default provider's, run where it cannot reach keycache";
        n++;
    }
    return n;
}

/*
 * EVP_SKEY (3.5+).  libcrypto runs a cipher with an EVP_SKEY only when the
 * key's manager comes from the cipher's provider (evp_enc.c,
 * evp_cipher_init_skey_internal(), before any provider code), so while
 * keycache's ciphers had no key manager of their own a query-less
 * AES-OCB/SIV/GCM refused every key.  With keycache wrapping any cipher it
 * also offers the default's key managers and every other default cipher as
 * pass-through: a key and a cipher fetched with the same query then come
 * from the same provider, keycache's (preferred) or the default's (asked
 * for by name).  The key data is the inner default's own object, so the
 * pass-through ciphers' SKEY inits are the default's, unchanged, and it is
 * freed (cleansed) by the default's free.  Not for a MAC: no MAC of the
 * default takes an EVP_SKEY (no OSSL_FUNC_MAC_INIT_SKEY up to 4.0).
 */
static int offer_skey(KC_PROVCTX *pctx, int siv_pt)
{
    int n;

    if (pctx->cipher_algs[0].algorithm_names == NULL && !siv_pt)
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
    /*
     * AES-SIV's S2V is a CMAC keyed with half of the SIV key: the
     * registry's SIV rows, when CMAC is on and they are not
     */
    const char *sivs[KC_REGISTRY_ROWS + 1];
    const OSSL_ALGORITHM *a;
    int siv_pt = 0, i, n = 0;

    for (i = 0; i < KC_REGISTRY_ROWS; i++)
        if (strcmp(kc_registry[i].conf, KEYCACHE_CONF_AES_SIV) == 0
            && !*kc_registry_on(pctx, i))
            sivs[n++] = kc_registry[i].name;
    sivs[n] = NULL;
    siv_pt = n > 0 && *kc_registry_on(pctx, KC_ROW_CMAC);

    pctx->pt = OPENSSL_zalloc(KC_PT_SLOTS * sizeof(*pctx->pt));
    if (pctx->pt == NULL)
        return 0;
    /* every KDF; of the DRBGs only HMAC-DRBG uses a MAC */
    if (offer(pctx, OSSL_OP_KDF, NULL, NULL, &pctx->kdf_algs) < 0
        || offer(pctx, OSSL_OP_RAND, drbgs, NULL, &pctx->rand_algs) < 0
        || !offer_skey(pctx, siv_pt))
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
            OPENSSL_free(pctx->pt[i].table);
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
