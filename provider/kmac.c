/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KMAC128 and KMAC256: a template is the default's KMAC context after a
 * keyed init, the customisation string and the key already absorbed (two
 * Keccak permutations) and its digest fetched, which is what a fresh
 * context pays for on every message.  Output length and XOF mode set
 * before the key are part of the shape; set after it, they go to the copy
 * like everything else.
 *
 * A "key" given to set_ctx_params is only stored by the default and
 * absorbed at the next init: such calls are served uncached.  A keyless
 * init absorbs the key again (two permutations), dearer than copying the
 * template, so used contexts are not kept.
 */
#include <openssl/core_names.h>

#include "kc_local.h"

static const char *const kmac_shape[] = {
    OSSL_MAC_PARAM_SIZE, OSSL_MAC_PARAM_XOF, OSSL_MAC_PARAM_CUSTOM, NULL
};

#define KC_KMAC_IMPL(bits, which)                                             \
    static OSSL_FUNC_mac_newctx_fn kc_kmac##bits##_newctx;                    \
    static OSSL_FUNC_mac_gettable_ctx_params_fn                               \
        kc_kmac##bits##_gettable_ctx_params;                                  \
    static OSSL_FUNC_mac_settable_ctx_params_fn                               \
        kc_kmac##bits##_settable_ctx_params;                                  \
    static void *kc_kmac##bits##_newctx(void *provctx)                        \
    {                                                                         \
        return kc_tmac_newctx(provctx, which);                                \
    }                                                                         \
    static const OSSL_PARAM *kc_kmac##bits##_gettable_ctx_params(void *ctx,   \
                                                                void *pctx)   \
    {                                                                         \
        return kc_tmac_gettable_ctx_params(pctx, which);                      \
    }                                                                         \
    static const OSSL_PARAM *kc_kmac##bits##_settable_ctx_params(void *ctx,   \
                                                                void *pctx)   \
    {                                                                         \
        return kc_tmac_settable_ctx_params(pctx, which);                      \
    }                                                                         \
    static const OSSL_DISPATCH kc_kmac##bits##_functions[] = {                \
        { OSSL_FUNC_MAC_NEWCTX, (void (*)(void))kc_kmac##bits##_newctx },     \
        { OSSL_FUNC_MAC_DUPCTX, (void (*)(void))kc_tmac_dupctx },             \
        { OSSL_FUNC_MAC_FREECTX, (void (*)(void))kc_tmac_freectx },           \
        { OSSL_FUNC_MAC_INIT, (void (*)(void))kc_tmac_init },                 \
        { OSSL_FUNC_MAC_UPDATE, (void (*)(void))kc_tmac_update },             \
        { OSSL_FUNC_MAC_FINAL, (void (*)(void))kc_tmac_final },               \
        { OSSL_FUNC_MAC_GETTABLE_CTX_PARAMS,                                  \
          (void (*)(void))kc_kmac##bits##_gettable_ctx_params },              \
        { OSSL_FUNC_MAC_GET_CTX_PARAMS,                                       \
          (void (*)(void))kc_tmac_get_ctx_params },                           \
        { OSSL_FUNC_MAC_SETTABLE_CTX_PARAMS,                                  \
          (void (*)(void))kc_kmac##bits##_settable_ctx_params },              \
        { OSSL_FUNC_MAC_SET_CTX_PARAMS,                                       \
          (void (*)(void))kc_tmac_set_ctx_params },                           \
        { 0, NULL }                                                           \
    };                                                                        \
    const KC_TDESC kc_kmac##bits##_desc = {                                   \
        .name = "KMAC-" #bits,                                                \
        .description = "KMAC" #bits " with a per-thread key cache",           \
        .functions = kc_kmac##bits##_functions,                               \
        .shape_names = kmac_shape                                             \
    };

KC_KMAC_IMPL(128, KC_FAM_KMAC128)
KC_KMAC_IMPL(256, KC_FAM_KMAC256)
