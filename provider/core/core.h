/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - the entry (keycache_prov.c), configuration (conf.c), the start
 * (bind.c), pass-through (passthrough.c), default properties, reports.
 */
#ifndef KC_CORE_H
#define KC_CORE_H

#include "families/families.h"

/* conf.c: keycache's section read and checked into pctx; 0: do not start */
int kc_conf_read(KC_PROVCTX *pctx, OSSL_FUNC_core_get_params_fn *get);

/* props.c: the application's default properties */
int kc_props_start(KC_PROVCTX *pctx, const OSSL_DISPATCH *in, int now);
int kc_props_follow(KC_PROVCTX *pctx);
void kc_props_stop(KC_PROVCTX *pctx);
int kc_props_get(KC_PROVCTX *pctx, char *buf, size_t len);
int kc_props_prefer(KC_PROVCTX *pctx);

/* passthrough.c: built at the first query needing them; 0: none offered */
int kc_passthrough_ready(KC_PROVCTX *pctx);
void kc_passthrough_stop(KC_PROVCTX *pctx);

/* bind.c: the private default, the registry's families, the pass-through */
void kc_bind_start(KC_PROVCTX *pctx);
/* the private default bound (at the first query); 0: nothing offered */
int kc_bind_ready(KC_PROVCTX *pctx);
void kc_bind_stop(KC_PROVCTX *pctx);
/*
 * one algorithm row: the default's names and description (a program reads
 * it as on default alone), keycache's functions
 */
void kc_bind_row(OSSL_ALGORITHM *row, const OSSL_ALGORITHM *a,
                 const OSSL_DISPATCH *fns);

/* report.c: KEYCACHE_DEBUG's reports, from start to unload */
void kc_report_start(KC_PROVCTX *pctx);
void kc_report_stop(KC_PROVCTX *pctx);

#endif
