/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CMAC: a template is the default's CMAC context with its cipher loaded
 * and keyed, so a hit skips the cipher fetch, the cipher context set-up and
 * the subkey derivation.  Cached only with AES-128/192/256-CBC; any other
 * cipher (or an engine) is served uncached by the default.
 *
 * The default takes "cipher" and "properties" before "key" in one
 * set_ctx_params call, and a key given there keys the context as init
 * with that key does.  A keyless init of a used context restarts it
 * (CMAC_Init: zero IV, empty buffer, the subkeys kept), so freed contexts
 * that got nothing but updates, finals and keyless inits are kept as
 * spares, restarted when given back, and a hit takes one instead of
 * copying the template.  CMAC keeps a message's last block in its context
 * (a keyless init leaves it; the default wipes it when the program frees
 * the context), so a context first gets 32 zero bytes: its last block
 * becomes zeros, and the restart then clears the chaining value.
 * Every cached cipher is AES, so such a context's size (the cipher's block
 * size, what the default reports) is 16 until something is set on it.
 */
#include <openssl/core_names.h>

#include "families/families.h"

static const char *const cmac_shape[] = {
    OSSL_MAC_PARAM_CIPHER, OSSL_MAC_PARAM_PROPERTIES, NULL
};

static const char *const aes_cbc[] = {
    "AES-128-CBC", "AES-192-CBC", "AES-256-CBC", NULL
};

/* The cipher the key will be used with: the last one loaded. */
static int cmac_cacheable(KC_PROVCTX *pctx, const unsigned char *shape,
                          size_t len)
{
    const char *cipher, *props;

    return kc_trec_last_utf8(shape, len, OSSL_MAC_PARAM_CIPHER,
                             OSSL_MAC_PARAM_PROPERTIES, &cipher, &props)
           && kc_cipher_is_one_of(pctx, cipher, props, aes_cbc);
}

static OSSL_FUNC_mac_newctx_fn kc_cmac_newctx;
static OSSL_FUNC_mac_gettable_ctx_params_fn kc_cmac_gettable_ctx_params;
static OSSL_FUNC_mac_settable_ctx_params_fn kc_cmac_settable_ctx_params;

static void *kc_cmac_newctx(void *provctx)
{
    return kc_tmac_newctx(provctx, KC_FAM_CMAC);
}

static const OSSL_PARAM *kc_cmac_gettable_ctx_params(void *ctx,
                                                     void *provctx)
{
    return kc_tmac_gettable_ctx_params(provctx, KC_FAM_CMAC);
}

static const OSSL_PARAM *kc_cmac_settable_ctx_params(void *ctx,
                                                     void *provctx)
{
    return kc_tmac_settable_ctx_params(provctx, KC_FAM_CMAC);
}

static const OSSL_DISPATCH kc_cmac_functions[] = {
    { OSSL_FUNC_MAC_NEWCTX, (void (*)(void))kc_cmac_newctx },
    { OSSL_FUNC_MAC_DUPCTX, (void (*)(void))kc_tmac_dupctx },
    { OSSL_FUNC_MAC_FREECTX, (void (*)(void))kc_tmac_freectx },
    { OSSL_FUNC_MAC_INIT, (void (*)(void))kc_tmac_init },
    { OSSL_FUNC_MAC_UPDATE, (void (*)(void))kc_tmac_update },
    { OSSL_FUNC_MAC_FINAL, (void (*)(void))kc_tmac_final },
    { OSSL_FUNC_MAC_GETTABLE_CTX_PARAMS,
      (void (*)(void))kc_cmac_gettable_ctx_params },
    { OSSL_FUNC_MAC_GET_CTX_PARAMS, (void (*)(void))kc_tmac_get_ctx_params },
    { OSSL_FUNC_MAC_SETTABLE_CTX_PARAMS,
      (void (*)(void))kc_cmac_settable_ctx_params },
    { OSSL_FUNC_MAC_SET_CTX_PARAMS, (void (*)(void))kc_tmac_set_ctx_params },
    { 0, NULL }
};

const KC_TDESC kc_cmac_desc = {
    .name = "CMAC",
    .description = "CMAC with a per-thread key cache",
    .functions = kc_cmac_functions,
    .shape_names = cmac_shape,
    .cipher_param = OSSL_MAC_PARAM_CIPHER,
    .set_key_keys = 1,
    .reinit_restores = 1,
    .park_scrub = 32,
    .keyed_size = 16,
    .cacheable = cmac_cacheable
};
