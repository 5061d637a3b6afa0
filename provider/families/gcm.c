/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-GCM: a template is the default's GCM context keyed (round keys,
 * GHASH table), one for both directions: the default keys without looking
 * at the IV or the direction.
 */
#include <openssl/core_names.h>

#include "families/families.h"

static const char *const gcm_shape[] = {
    OSSL_CIPHER_PARAM_AEAD_IVLEN, OSSL_CIPHER_PARAM_KEYLEN, NULL
};

/* the expected tag of a message (the default refuses one without data) */
static int gcm_per_message(const OSSL_PARAM *p)
{
    return p->key[0] == 't' && p->key[1] == 'a' && p->key[2] == 'g'
           && p->key[3] == '\0' && p->data != NULL;
}

KC_TCIPH_IMPL(kc_gcm128, KC_CFAM_GCM128)
KC_TCIPH_IMPL(kc_gcm192, KC_CFAM_GCM192)
KC_TCIPH_IMPL(kc_gcm256, KC_CFAM_GCM256)

#define KC_GCM_DESC(bits)                                                     \
    { .name = "AES-" #bits "-GCM",                                            \
      .functions = kc_gcm##bits##_functions,                                  \
      .shape_names = gcm_shape,                                               \
      .per_message = gcm_per_message,                                         \
      .volatile_ok = 1,                                                       \
      .ivlen_set_sets = 1,                                                    \
      .may_draw_iv = 1,                                                       \
      .rekey_keyless = 1 }

const KC_CDESC kc_gcm_desc[3] = {
    KC_GCM_DESC(128), KC_GCM_DESC(192), KC_GCM_DESC(256)
};
