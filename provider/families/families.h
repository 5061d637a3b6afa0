/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - the families: one file each, and the registry's table of
 * their descriptors (registry.c).
 */
#ifndef KC_FAMILIES_H
#define KC_FAMILIES_H

#include "layer/layer.h"

extern const KC_TDESC kc_cmac_desc, kc_gmac_desc, kc_kmac128_desc,
    kc_kmac256_desc;
extern const KC_CDESC kc_ocb_desc[3], kc_siv_desc[3], kc_gcm_desc[3];

/* the algorithm wrappers */
extern const OSSL_DISPATCH kc_hmac_functions[];

/*
 * A MAC family's entry points and dispatch table: the template core's
 * functions with the family's index bound in.  get is CTX for getters per
 * context (CMAC, KMAC), or ALG for the algorithm's alone (GMAC, whose
 * size is fixed), as the default has them.  newctx: kc_tmac_newctx, or
 * kc_tmac_newctx_fetching where the default's newctx fetches a digest
 * (KMAC, KC_TDESC.newctx_digest).
 */
#define KC_TMAC_IMPL(prefix, which, get, newctx)                              \
    static OSSL_FUNC_mac_newctx_fn prefix##_newctx;                           \
    static OSSL_FUNC_mac_settable_ctx_params_fn prefix##_settable_ctx;        \
    static void *prefix##_newctx(void *provctx)                               \
    {                                                                         \
        return newctx(provctx, which);                                        \
    }                                                                         \
    static const OSSL_PARAM *prefix##_settable_ctx(void *ctx, void *provctx)  \
    {                                                                         \
        return kc_tmac_settable_ctx_params(provctx, which);                   \
    }                                                                         \
    KC_TMAC_GETTERS_##get(prefix, which)                                      \
    static const OSSL_DISPATCH prefix##_functions[] = {                       \
        { OSSL_FUNC_MAC_NEWCTX, (void (*)(void))prefix##_newctx },            \
        { OSSL_FUNC_MAC_DUPCTX, (void (*)(void))kc_tmac_dupctx },             \
        { OSSL_FUNC_MAC_FREECTX, (void (*)(void))kc_tmac_freectx },           \
        { OSSL_FUNC_MAC_INIT, (void (*)(void))kc_tmac_init },                 \
        { OSSL_FUNC_MAC_UPDATE, (void (*)(void))kc_tmac_update },             \
        { OSSL_FUNC_MAC_FINAL, (void (*)(void))kc_tmac_final },               \
        KC_TMAC_ENTRIES_##get(prefix)                                         \
        { OSSL_FUNC_MAC_SETTABLE_CTX_PARAMS,                                  \
          (void (*)(void))prefix##_settable_ctx },                            \
        { OSSL_FUNC_MAC_SET_CTX_PARAMS,                                       \
          (void (*)(void))kc_tmac_set_ctx_params },                           \
        { 0, NULL }                                                           \
    };
#define KC_TMAC_GETTERS_CTX(prefix, which)                                    \
    static OSSL_FUNC_mac_gettable_ctx_params_fn prefix##_gettable;            \
    static const OSSL_PARAM *prefix##_gettable(void *ctx, void *provctx)      \
    {                                                                         \
        return kc_tmac_gettable_ctx_params(provctx, which);                   \
    }
#define KC_TMAC_ENTRIES_CTX(prefix)                                           \
    { OSSL_FUNC_MAC_GETTABLE_CTX_PARAMS, (void (*)(void))prefix##_gettable }, \
    { OSSL_FUNC_MAC_GET_CTX_PARAMS, (void (*)(void))kc_tmac_get_ctx_params },
#define KC_TMAC_GETTERS_ALG(prefix, which)                                    \
    static OSSL_FUNC_mac_gettable_params_fn prefix##_gettable;                \
    static OSSL_FUNC_mac_get_params_fn prefix##_get;                          \
    static const OSSL_PARAM *prefix##_gettable(void *provctx)                 \
    {                                                                         \
        return kc_tmac_gettable_params(provctx, which);                       \
    }                                                                         \
    static int prefix##_get(OSSL_PARAM params[])                              \
    {                                                                         \
        return kc_tmac_get_params(which, params);                             \
    }
#define KC_TMAC_ENTRIES_ALG(prefix)                                           \
    { OSSL_FUNC_MAC_GETTABLE_PARAMS, (void (*)(void))prefix##_gettable },     \
    { OSSL_FUNC_MAC_GET_PARAMS, (void (*)(void))prefix##_get },

/* A registry row (common/registry.h) as the provider reads it. */
#define KC_KIND_HMAC 0
#define KC_KIND_MAC 1
#define KC_KIND_CIPHER 2
typedef struct {
    int kind;                 /* KC_KIND_* */
    int index;                /* in pctx->fam[] or ->cfam[]; HMAC: -1 */
    const char *conf;         /* the configuration key that switches it */
    const char *name;         /* the default's first name */
    const void *desc;         /* a KC_TDESC or KC_CDESC; HMAC: NULL */
    unsigned int quirks;      /* the KC_Q_* its code asks */
    int first;                /* its first contexts: the application's */
    const char *nests;        /* the key of a family its default fetches */
} KC_FAMILY_ROW;

extern const KC_FAMILY_ROW kc_registry[KC_REGISTRY_ROWS];
/* What "auto" means for row on the running libcrypto: on (1) or off. */
int kc_registry_auto(int row);
/* Is row offered, as configured?  Its on flag in pctx. */
int *kc_registry_on(KC_PROVCTX *pctx, int row);
/* Is a row of configuration key conf on?  0 for NULL. */
int kc_registry_conf_on(KC_PROVCTX *pctx, const char *conf);

#endif
