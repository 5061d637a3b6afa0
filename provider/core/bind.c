/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Each family of the registry at start; at the first query the private
 * default (inner/) and each family that is on, bound to the default's
 * algorithm of its name, into the tables the query answers (the
 * pass-through comes later).
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>

#include "core/core.h"
#include "families/families.h"

void kc_bind_row(OSSL_ALGORITHM *row, const OSSL_ALGORITHM *a,
                 const OSSL_DISPATCH *fns)
{
    row->algorithm_names = a->algorithm_names;
    row->property_definition = "provider=" KEYCACHE_PROVIDER_NAME;
    row->implementation = fns;
    row->algorithm_description = a->algorithm_description;
}

static int bind_hmac(KC_PROVCTX *pctx, const OSSL_ALGORITHM *a)
{
    if (!kc_inner_load_mac(&pctx->hmac, a->implementation))
        return 0;
    pctx->hmac_alg.names = a->algorithm_names;
    pctx->hmac_alg.freectx = pctx->hmac.freectx;
    pctx->hmac_alg.spare_max = KC_SPARE_MAX;
    return 1;
}

static int bind_mac(KC_PROVCTX *pctx, KC_TFAM *f, const OSSL_ALGORITHM *a)
{
    kc_inner_load_mac(&f->mac, a->implementation);
    if (f->d->guard_default != NULL)
        f->d->guard_default(&f->mac);
    f->direct_on = 0;
    f->direct_state = 0;
    return kc_tmpl_bind(pctx, f, a);
}

static int bind_cipher(KC_PROVCTX *pctx, KC_CFAM *f, const OSSL_ALGORITHM *a)
{
    kc_inner_load_cipher(&f->fns, a->implementation);
    /* the family's first context completes it (gate.c) */
    f->direct_state = 0;
    return kc_ctmpl_bind(pctx, f, a);
}

/* The registry's side of each family: nothing of the default's yet. */
void kc_bind_start(KC_PROVCTX *pctx)
{
    int i;

    int ciphers = kc_quirk_ciphers_pay()    /* 3.0: CMAC's AES-SIV pt */
                  && *kc_registry_on(pctx, KC_ROW_CMAC);

    for (i = 0; i < KC_REGISTRY_ROWS; i++)
        ciphers |= kc_registry[i].kind == KC_KIND_CIPHER
                   && *kc_registry_on(pctx, i);
    for (i = 0; i < KC_REGISTRY_ROWS; i++) {
        const KC_FAMILY_ROW *r = &kc_registry[i];

        if (r->kind == KC_KIND_MAC) {
            KC_TFAM *f = &pctx->fam[r->index];

            f->d = r->desc;
            f->first = r->first;
            f->nested = kc_registry_conf_on(pctx, r->nests);
            f->asks_default = f->nested
                              || (f->d->cipher_param != NULL && ciphers);
        } else if (r->kind == KC_KIND_CIPHER) {
            pctx->cfam[r->index].d = r->desc;
        }
    }
}

/* The private default, and each family that is on bound to its algorithm. */
static int bind_default(KC_PROVCTX *pctx)
{
    const OSSL_ALGORITHM *macs, *ciphers, *a;
    const OSSL_ALGORITHM *near_mac = NULL, *near_cipher = NULL;
    size_t nmac = 0, ncipher = 0;
    int i, ok;

    if (!kc_inner_start(pctx))
        return 0;
    macs = kc_inner_query(pctx, OSSL_OP_MAC);
    ciphers = kc_inner_query(pctx, OSSL_OP_CIPHER);
    for (i = 0; i < KC_REGISTRY_ROWS; i++) {
        const KC_FAMILY_ROW *r = &kc_registry[i];
        int cipher = r->kind == KC_KIND_CIPHER;
        KC_TFAM *f = r->kind == KC_KIND_MAC ? &pctx->fam[r->index] : NULL;
        KC_CFAM *cf = cipher ? &pctx->cfam[r->index] : NULL;

        /* HMAC's functions are bound even when off: others key HMACs */
        if (!*kc_registry_on(pctx, i) && r->kind != KC_KIND_HMAC)
            continue;
        if ((a = kc_inner_find_near(cipher ? ciphers : macs, r->name,
                                    cipher ? &near_cipher : &near_mac))
            == NULL) {
            kc_raise(pctx, KC_R_INNER_MISSING, "default provider has no %s",
                     r->name);
            return 0;
        }
        ok = r->kind == KC_KIND_HMAC ? bind_hmac(pctx, a)
             : cipher ? bind_cipher(pctx, cf, a) : bind_mac(pctx, f, a);
        if (!ok) {
            kc_raise(pctx, KC_R_INNER_MISSING, "default %s lacks functions",
                     r->name);
            return 0;
        }
        if (!*kc_registry_on(pctx, i))
            continue;
        if (cipher)
            kc_bind_row(&pctx->cipher_algs[ncipher++], a, cf->d->functions);
        else if (f != NULL)
            kc_bind_row(&pctx->mac_algs[nmac++], a, f->d->functions);
        else
            kc_bind_row(&pctx->mac_algs[nmac++], a, kc_hmac_functions);
    }
    pctx->ncipher_wrapped = ncipher;
    return 1;
}

/* nothing of the default's: what a failed or forsaken bind leaves */
static void unbound(KC_PROVCTX *pctx)
{
    pctx->libctx = NULL;
    pctx->deflt = pctx->rand_prov = NULL;
    pctx->inner_provctx = NULL;
    memset(pctx->mac_algs, 0, sizeof(pctx->mac_algs));
    memset(pctx->cipher_algs, 0, sizeof(pctx->cipher_algs));
}

/*
 * Bound at the first query, not at start: the private library context
 * and its default cost a start 50,000 instructions on 3.0, 90,000 on 3.5
 * (and as much again to free), which a process that fetches nothing from
 * keycache (`openssl version`) never needs.  A failure, reported in
 * KEYCACHE_DEBUG, leaves keycache offering nothing: every fetch goes to
 * the default, as when a start fails, and the fetching call's error queue
 * is left as it was.  A fork() child takes over a bind its parent's
 * thread left half done, and starts over beside that half.
 */
int kc_bind_ready(KC_PROVCTX *pctx)
{
    if (__atomic_load_n(&pctx->bind_state, __ATOMIC_ACQUIRE) != KC_ONCE_DONE
        && kc_once_claim(&pctx->bind_state)) {
        unbound(pctx);
        ERR_set_mark();
        pctx->bind_ok = bind_default(pctx);
        ERR_pop_to_mark();
        if (!pctx->bind_ok) {
            kc_inner_stop(pctx);
            unbound(pctx);
            kc_debug_log(pctx, 1, "error: %s offers nothing: every fetch "
                         "goes to the default provider", pctx->name);
        }
        kc_once_done(&pctx->bind_state);
    }
    return __atomic_load_n(&pctx->bind_state, __ATOMIC_ACQUIRE) == KC_ONCE_DONE
           && pctx->bind_ok;
}

void kc_bind_stop(KC_PROVCTX *pctx)
{
    /*
     * a fork() child whose parent's thread was binding: what that thread
     * left half made is left alone, as a take-over leaves it
     */
    if (kc_once_foreign(&pctx->bind_state))
        return;
    kc_passthrough_stop(pctx);
    kc_inner_stop(pctx);
}
