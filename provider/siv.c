/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-SIV: a template is the default's SIV context keyed - its CMAC
 * context (with the S2V start value) and its AES-CTR context, fetches
 * included - so a hit skips two cipher fetches, a MAC fetch and three key
 * set-ups.  The inner SIV fetches its CMAC from keycache's private library
 * context, so half of the key never reaches keycache's own CMAC.
 *
 * A shape may set the speed flag and the key length.  Keying resets what
 * the speed flag changes, which replaying the shape before the key keeps
 * (the default does the same).  The expected tag is a message's: passed
 * through when it comes before the key, forwarded after it.
 */
#include <openssl/core_names.h>

#include "kc_local.h"

static const char *const siv_shape[] = {
    OSSL_CIPHER_PARAM_SPEED, OSSL_CIPHER_PARAM_KEYLEN, NULL
};

KC_TCIPH_IMPL(kc_aes128siv, KC_CFAM_SIV128)
KC_TCIPH_IMPL(kc_aes192siv, KC_CFAM_SIV192)
KC_TCIPH_IMPL(kc_aes256siv, KC_CFAM_SIV256)

#define KC_SIV_DESC(bits)                                                     \
    { "AES-" #bits "-SIV", "AES-SIV with a per-thread key cache",             \
      kc_aes##bits##siv_functions, siv_shape, NULL, 0, 0, 0 }

const KC_CDESC kc_siv_desc[3] = {
    KC_SIV_DESC(128), KC_SIV_DESC(192), KC_SIV_DESC(256)
};
