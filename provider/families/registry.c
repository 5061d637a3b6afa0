/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registry's table: common/registry.h's rows with their descriptors,
 * for the provider's start, configuration and reports.
 */
#include <string.h>

#include "families/families.h"

#define KC_REG_IDX_HMAC(id) -1
#define KC_REG_IDX_MAC(id) KC_FAM_##id
#define KC_REG_IDX_CIPHER(id) KC_CFAM_##id
#define KC_REG_TABLE_ROW(id, kind, conf, autorule, name, keylen, sub,      \
                         sub_value, desc, quirks, first, nests)           \
    { KC_KIND_##kind, KC_REG_IDX_##kind(id), conf, name, desc, quirks,     \
      first, nests },

const KC_FAMILY_ROW kc_registry[KC_REGISTRY_ROWS] = {
    KC_REGISTRY(KC_REG_TABLE_ROW)
};

#define KC_REG_AUTO_CASE(id, kind, conf, autorule, ...)                    \
    case KC_ROW_##id:                                                      \
        return (autorule);

int kc_registry_auto(int row)
{
    switch (row) {
    KC_REGISTRY(KC_REG_AUTO_CASE)
    }
    return 0;
}

int kc_registry_conf_on(KC_PROVCTX *pctx, const char *conf)
{
    int i;

    for (i = 0; conf != NULL && i < KC_REGISTRY_ROWS; i++)
        if (strcmp(kc_registry[i].conf, conf) == 0 && *kc_registry_on(pctx, i))
            return 1;
    return 0;
}

int *kc_registry_on(KC_PROVCTX *pctx, int row)
{
    const KC_FAMILY_ROW *r = &kc_registry[row];

    return r->kind == KC_KIND_HMAC ? &pctx->hmac_on
           : r->kind == KC_KIND_MAC ? &pctx->fam[r->index].on
           : &pctx->cfam[r->index].on;
}
