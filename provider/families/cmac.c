/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CMAC, with AES-CBC only: a template is the default's context, cipher
 * loaded and keyed.  Spares are restarted by a keyless init, after 32 zero
 * bytes overwrite the message's last block, which CMAC keeps through it.
 */
#include <openssl/core_names.h>

#include "families/families.h"

static const char *const cmac_shape[] = {
    OSSL_MAC_PARAM_CIPHER, OSSL_MAC_PARAM_PROPERTIES, NULL
};

static const char *const aes_cbc[] = {
    "AES-128-CBC", "AES-192-CBC", "AES-256-CBC", NULL
};

KC_TMAC_IMPL(kc_cmac, KC_FAM_CMAC, CTX, kc_tmac_newctx)

const KC_TDESC kc_cmac_desc = {
    .name = "CMAC",
    .functions = kc_cmac_functions,
    .shape_names = cmac_shape,
    .cipher_param = OSSL_MAC_PARAM_CIPHER,
    .set_key_keys = 1,
    .reinit_restores = 1,
    .park_scrub = 32,
    .base = KC_BASE_KEYED,
    .keyed_size = 16,           /* AES's block, until something is set */
    .ciphers = aes_cbc
};
