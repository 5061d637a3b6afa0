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
} KC_FAMILY_ROW;

extern const KC_FAMILY_ROW kc_registry[KC_REGISTRY_ROWS];
/* What "auto" means for row on the running libcrypto: on (1) or off. */
int kc_registry_auto(int row);
/* Is row offered, as configured?  Its on flag in pctx. */
int *kc_registry_on(KC_PROVCTX *pctx, int row);

#endif
