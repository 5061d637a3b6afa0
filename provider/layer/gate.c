/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A family's first use: what it learns of the running default by trying
 * it, once per family and instance, before its first context is made
 * (layer.h, kc_tfam_ready()).  A family with its own keyed contexts (GMAC,
 * KMAC, AES-SIV) runs on the default's ciphers or digest it names; without
 * all of them, or if what it learns fails, it runs through the default's
 * own MAC or cipher, as any other family.
 */
#include <string.h>
#include <openssl/core_names.h>

#include "layer/layer.h"

static void bind_direct(KC_PROVCTX *pctx, KC_TFAM *f)
{
    const char *const *n = f->d->direct_ciphers;

    f->direct_on = 0;
    if (f->d->direct == NULL || (n == NULL && f->d->direct_digest == NULL)
        || !kc_inner_bind_ciphers(kc_inner_query(pctx, OSSL_OP_CIPHER), n,
                                  f->ciph, KC_TFAM_CIPHERS))
        return;
    if (f->d->direct_digest != NULL
        && !kc_inner_bind_digest(kc_inner_query(pctx, OSSL_OP_DIGEST),
                                 f->d->direct_digest, &f->dig, &f->dig_block,
                                 &f->dig_size))
        return;
    f->direct_on = f->d->direct_bind == NULL || f->d->direct_bind(pctx, f);
}

/*
 * A cipher family's own keyed contexts (AES-SIV's), on the default's
 * ciphers it names, once kc_ctmpl_bind() has checked the default's own
 * (which direct_bind() asks first); the default's stay if any is missing
 * or incomplete, or if direct_bind() refuses what it finds.
 */
static void bind_cdirect(KC_PROVCTX *pctx, KC_CFAM *f)
{
    if (f->d->direct != NULL && f->d->direct_ciphers != NULL
        && kc_inner_bind_ciphers(kc_inner_query(pctx, OSSL_OP_CIPHER),
                                 f->d->direct_ciphers, f->sub, KC_CFAM_SUBS)
        && f->d->direct_bind(pctx, f))
        kc_ctmpl_keyed_fns(f, f->d->direct);
}

int kc_gate_tfam(KC_PROVCTX *pctx, const KC_TFAM *cf)
{
    /* the family's lazily completed part: this thread alone writes it */
    KC_TFAM *f = (KC_TFAM *)cf;

    if (!kc_once_claim(&f->direct_state))
        return __atomic_load_n(&f->direct_state, __ATOMIC_ACQUIRE)
               == KC_ONCE_DONE;
    bind_direct(pctx, f);
    kc_tmpl_first_use(pctx, f);
    kc_once_done(&f->direct_state);
    return 1;
}

int kc_gate_cfam(KC_PROVCTX *pctx, const KC_CFAM *cf)
{
    KC_CFAM *f = (KC_CFAM *)cf;

    if (!kc_once_claim(&f->direct_state))
        return __atomic_load_n(&f->direct_state, __ATOMIC_ACQUIRE)
               == KC_ONCE_DONE;
    bind_cdirect(pctx, f);
    kc_once_done(&f->direct_state);
    return 1;
}
