/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-OCB: a template is the default's OCB context keyed (both key
 * schedules and the L table), one per direction: the default picks its
 * bulk function by the direction the key is set in.
 */
#include <openssl/core_names.h>

#include "families/families.h"

static const char *const ocb_shape[] = {
    OSSL_CIPHER_PARAM_AEAD_IVLEN, OSSL_CIPHER_PARAM_AEAD_TAG,
    OSSL_CIPHER_PARAM_KEYLEN, NULL
};

/* a tag with bytes is the expected tag of one message */
static int ocb_per_message(const OSSL_PARAM *p)
{
    return p->key[0] == 't' && p->data != NULL;
}

KC_TCIPH_IMPL(kc_aes128ocb, KC_CFAM_OCB128)
KC_TCIPH_IMPL(kc_aes192ocb, KC_CFAM_OCB192)
KC_TCIPH_IMPL(kc_aes256ocb, KC_CFAM_OCB256)

#define KC_OCB_DESC(bits)                                                     \
    { .name = "AES-" #bits "-OCB",                                            \
      .functions = kc_aes##bits##ocb_functions,                               \
      .shape_names = ocb_shape,                                               \
      .per_message = ocb_per_message,                                         \
      .key_by_direction = 1 }

const KC_CDESC kc_ocb_desc[3] = {
    KC_OCB_DESC(128), KC_OCB_DESC(192), KC_OCB_DESC(256)
};
