/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A family's first use (layer.h, kc_tfam_ready()): its own keyed contexts
 * (GMAC, KMAC, AES-SIV) run on the default's ciphers or digest it names, if
 * all are there and what it learns holds; else on the default's MAC/cipher.
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

/* AES-SIV's own keyed contexts, once kc_ctmpl_bind() checked the default's */
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
    kc_ctmpl_first_use(pctx, f);
    bind_cdirect(pctx, f);
    kc_once_done(&f->direct_state);
    return 1;
}
