/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - the family registry: every algorithm keycache wraps, one row
 * each, in the order of its counters.  The provider, the tests (which
 * include it after keycache.h alone) and the fuzzer learn the families
 * from this list: a new family is a row here plus its file.
 *
 * X(id, kind, conf, auto, name, keylen, sub, sub_value, desc, quirks, first,
 *   nests)
 *   id         KC_FAM_<id> (MAC) or KC_CFAM_<id> (cipher); HMAC has none
 *   kind       HMAC, MAC (layer/tmpl.c) or CIPHER (layer/ctmpl.c)
 *   conf       the configuration key that switches it
 *   auto       what "auto" means on the running libcrypto: 1 where caching
 *              pays and offering the family costs no process that does not
 *              use it (docs/families.md)
 *   name       the default provider's first name for it
 *   keylen     a key length it takes, in bytes (for the tests)
 *   sub        the parameter naming its cipher or digest, or NULL;
 *              sub_value one the tests use
 *   desc       its descriptor (families/)
 *   quirks     the version differences its code asks about: KC_Q_* bits
 *              (quirks/quirks.h), learned of the running default at its
 *              first use and named in KEYCACHE_DEBUG's reports
 *   first      1: a thread's first contexts are the application's default's,
 *              neither looked up nor counted (layer/layer.h,
 *              kc_tcore_app_first()); for HMAC, read by the tests only:
 *              a thread's first misses of contexts keyed the first time,
 *              whatever the instance (families/hmac.c, app_misses)
 *   nests      the configuration key of a family the default fetches by
 *              name (GMAC: GCM, AES-SIV: CMAC), or NULL: in the
 *              application's context that fetch finds keycache's own when
 *              the family is on, so a first context's call naming it asks
 *              for the default's (layer/tmpl.c, to_default()); AES-SIV has
 *              no first contexts: its default's fetch takes no properties
 */
#ifndef KC_REGISTRY_H
#define KC_REGISTRY_H

#define KC_REGISTRY(X)                                                   \
    X(HMAC, HMAC, KEYCACHE_CONF_HMAC, 1,                                 \
      "HMAC", 32, "digest", "SHA256", NULL, 0, 1, NULL)                  \
    X(CMAC, MAC, KEYCACHE_CONF_CMAC, kc_quirk_ciphers_pay(),             \
      "CMAC", 32, "cipher", "AES-256-CBC", &kc_cmac_desc, KC_QS_TMAC,    \
      1, NULL)                                                           \
    X(GMAC, MAC, KEYCACHE_CONF_GMAC, 1,                                  \
      "GMAC", 32, "cipher", "AES-256-GCM", &kc_gmac_desc, KC_QS_TMAC,    \
      1, KEYCACHE_CONF_AES_GCM)                                          \
    X(KMAC128, MAC, KEYCACHE_CONF_KMAC, 1,                               \
      "KMAC-128", 32, NULL, NULL, &kc_kmac128_desc, KC_QS_KMAC, 1, NULL) \
    X(KMAC256, MAC, KEYCACHE_CONF_KMAC, 1,                               \
      "KMAC-256", 32, NULL, NULL, &kc_kmac256_desc, KC_QS_KMAC, 1, NULL) \
    X(OCB128, CIPHER, KEYCACHE_CONF_AES_OCB, kc_quirk_ciphers_pay(),     \
      "AES-128-OCB", 16, NULL, NULL, &kc_ocb_desc[0], 0, 0, NULL)        \
    X(OCB192, CIPHER, KEYCACHE_CONF_AES_OCB, kc_quirk_ciphers_pay(),     \
      "AES-192-OCB", 24, NULL, NULL, &kc_ocb_desc[1], 0, 0, NULL)        \
    X(OCB256, CIPHER, KEYCACHE_CONF_AES_OCB, kc_quirk_ciphers_pay(),     \
      "AES-256-OCB", 32, NULL, NULL, &kc_ocb_desc[2], 0, 0, NULL)        \
    X(SIV128, CIPHER, KEYCACHE_CONF_AES_SIV, kc_quirk_ciphers_pay(),     \
      "AES-128-SIV", 32, NULL, NULL, &kc_siv_desc[0], KC_QS_SIV,         \
      0, KEYCACHE_CONF_CMAC)                                             \
    X(SIV192, CIPHER, KEYCACHE_CONF_AES_SIV, kc_quirk_ciphers_pay(),     \
      "AES-192-SIV", 48, NULL, NULL, &kc_siv_desc[1], KC_QS_SIV,         \
      0, KEYCACHE_CONF_CMAC)                                             \
    X(SIV256, CIPHER, KEYCACHE_CONF_AES_SIV, kc_quirk_ciphers_pay(),     \
      "AES-256-SIV", 64, NULL, NULL, &kc_siv_desc[2], KC_QS_SIV,         \
      0, KEYCACHE_CONF_CMAC)                                             \
    X(GCM128, CIPHER, KEYCACHE_CONF_AES_GCM, kc_quirk_gcm_copy_pays(),   \
      "AES-128-GCM", 16, NULL, NULL, &kc_gcm_desc[0], 0, 0, NULL)        \
    X(GCM192, CIPHER, KEYCACHE_CONF_AES_GCM, kc_quirk_gcm_copy_pays(),   \
      "AES-192-GCM", 24, NULL, NULL, &kc_gcm_desc[1], 0, 0, NULL)        \
    X(GCM256, CIPHER, KEYCACHE_CONF_AES_GCM, kc_quirk_gcm_copy_pays(),   \
      "AES-256-GCM", 32, NULL, NULL, &kc_gcm_desc[2], 0, 0, NULL)

/* the indices: KC_FAM_<id> among the MACs, KC_CFAM_<id> among the ciphers */
#define KC_REG_F_HMAC(id)
#define KC_REG_F_MAC(id) KC_FAM_##id,
#define KC_REG_F_CIPHER(id)
#define KC_REG_C_HMAC(id)
#define KC_REG_C_MAC(id)
#define KC_REG_C_CIPHER(id) KC_CFAM_##id,
#define KC_REG_FAM_INDEX(id, kind, ...) KC_REG_F_##kind(id)
#define KC_REG_CFAM_INDEX(id, kind, ...) KC_REG_C_##kind(id)
enum { KC_REGISTRY(KC_REG_FAM_INDEX) KC_FAM_COUNT };
enum { KC_REGISTRY(KC_REG_CFAM_INDEX) KC_CFAM_COUNT };
/* and KC_ROW_<id> among all rows, which is also its counter slot - 1 */
#define KC_REG_ROW_INDEX(id, ...) KC_ROW_##id,
enum { KC_REGISTRY(KC_REG_ROW_INDEX) KC_REGISTRY_ROWS };

#endif
