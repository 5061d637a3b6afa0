/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GMAC: a template is the default's GMAC context with its AES-GCM cipher
 * context set up and keyed (round keys and GHASH table), so a hit skips
 * the cipher fetch and the key schedule.  The IV differs per message: it
 * is volatile, replayed onto each copy after the key instead of being part
 * of the cache key.  Cached only with AES-128/192/256-GCM.
 *
 * The default takes "cipher" and "properties" before "key" and "iv" after
 * it in one set_ctx_params call; an IV set before the key is kept by the
 * keying, so IV then key ends where key then IV does.
 *
 * Used contexts are not kept for reuse (as CMAC's are): a finished one
 * holds its last tag and IV, from which, with the key schedule the cache
 * holds, GHASH gives back a short message; nothing GMAC offers clears them
 * short of another IV, update and final, dearer than the copy it saves.
 */
#include <openssl/core_names.h>

#include "kc_local.h"

static const char *const gmac_shape[] = {
    OSSL_MAC_PARAM_CIPHER, OSSL_MAC_PARAM_PROPERTIES, NULL
};

static const char *const gmac_volatile[] = { OSSL_MAC_PARAM_IV, NULL };

static const char *const aes_gcm[] = {
    "AES-128-GCM", "AES-192-GCM", "AES-256-GCM", NULL
};

static int gmac_cacheable(KC_PROVCTX *pctx, const unsigned char *shape,
                          size_t len)
{
    const char *cipher, *props;

    return kc_trec_last_utf8(shape, len, OSSL_MAC_PARAM_CIPHER,
                             OSSL_MAC_PARAM_PROPERTIES, &cipher, &props)
           && kc_cipher_is_one_of(pctx, cipher, props, aes_gcm);
}

static OSSL_FUNC_mac_newctx_fn kc_gmac_newctx;
static OSSL_FUNC_mac_gettable_params_fn kc_gmac_gettable_params;
static OSSL_FUNC_mac_get_params_fn kc_gmac_get_params;
static OSSL_FUNC_mac_settable_ctx_params_fn kc_gmac_settable_ctx_params;

static void *kc_gmac_newctx(void *provctx)
{
    return kc_tmac_newctx(provctx, KC_FAM_GMAC);
}

static const OSSL_PARAM *kc_gmac_gettable_params(void *provctx)
{
    return kc_tmac_gettable_params(provctx, KC_FAM_GMAC);
}

static int kc_gmac_get_params(OSSL_PARAM params[])
{
    return kc_tmac_get_params(KC_FAM_GMAC, params);
}

static const OSSL_PARAM *kc_gmac_settable_ctx_params(void *ctx,
                                                     void *provctx)
{
    return kc_tmac_settable_ctx_params(provctx, KC_FAM_GMAC);
}

/* Like the default's: no per-context getters, the size is fixed. */
static const OSSL_DISPATCH kc_gmac_functions[] = {
    { OSSL_FUNC_MAC_NEWCTX, (void (*)(void))kc_gmac_newctx },
    { OSSL_FUNC_MAC_DUPCTX, (void (*)(void))kc_tmac_dupctx },
    { OSSL_FUNC_MAC_FREECTX, (void (*)(void))kc_tmac_freectx },
    { OSSL_FUNC_MAC_INIT, (void (*)(void))kc_tmac_init },
    { OSSL_FUNC_MAC_UPDATE, (void (*)(void))kc_tmac_update },
    { OSSL_FUNC_MAC_FINAL, (void (*)(void))kc_tmac_final },
    { OSSL_FUNC_MAC_GETTABLE_PARAMS, (void (*)(void))kc_gmac_gettable_params },
    { OSSL_FUNC_MAC_GET_PARAMS, (void (*)(void))kc_gmac_get_params },
    { OSSL_FUNC_MAC_SETTABLE_CTX_PARAMS,
      (void (*)(void))kc_gmac_settable_ctx_params },
    { OSSL_FUNC_MAC_SET_CTX_PARAMS, (void (*)(void))kc_tmac_set_ctx_params },
    { 0, NULL }
};

const KC_TDESC kc_gmac_desc = {
    .name = "GMAC",
    .description = "GMAC with a per-thread key cache",
    .functions = kc_gmac_functions,
    .shape_names = gmac_shape,
    .cipher_param = OSSL_MAC_PARAM_CIPHER,
    .volatile_names = gmac_volatile,
    .set_key_keys = 1,
    .volatile_last_wins = 1,
    .cacheable = gmac_cacheable
};
