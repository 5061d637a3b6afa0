/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - the private library context holding the real `default`
 * (inner.c) and its RAND, the application's (rand.c).
 */
#ifndef KC_INNER_H
#define KC_INNER_H

#include "common/common.h"
#include "diag/diag.h"

/* inner.c */
int kc_inner_start(KC_PROVCTX *pctx);
void kc_inner_stop(KC_PROVCTX *pctx);
const KC_DIGEST *kc_inner_digest(KC_PROVCTX *pctx, const EVP_MD *md);
/* the application's default's MACs, see inner.c */
int kc_inner_is_default(const KC_PROVCTX *pctx, const OSSL_PROVIDER *prov);
void *kc_inner_app_mac(KC_PROVCTX *pctx, const char *name,
                       OSSL_FUNC_mac_newctx_fn *newctx, EVP_MAC **mac);
void *kc_inner_app_provctx(KC_PROVCTX *pctx, EVP_MAC **pin,
                           const char *name);
void *kc_inner_app_first(KC_PROVCTX *pctx, EVP_MAC **pin, const char *name,
                         OSSL_FUNC_mac_newctx_fn *newctx);
void *kc_inner_app_newctx(const KC_DIGEST *d, void *(*newctx)(void *));
int kc_inner_cipher_mine(KC_PROVCTX *pctx, const char *name);
EVP_CIPHER *kc_inner_cipher_fetch(KC_PROVCTX *pctx, const char *name,
                                  const char *props, int keep);

/* rand.c: the private context's RAND is the application's */
int kc_rand_start(KC_PROVCTX *pctx);
void kc_rand_stop(KC_PROVCTX *pctx);
/*
 * in hashed with d's default functions, as HMAC hashes a key longer than
 * its block: 1 and d's size bytes in out (outsize at least), or 0 if d
 * cannot do it without a trace (the caller then leaves the key to HMAC).
 */
int kc_inner_digest_key(KC_PROVCTX *pctx, const KC_DIGEST *d,
                        const unsigned char *in, size_t inlen,
                        unsigned char *out, size_t outsize);
/* The default's algorithm that has name anywhere in its names, or NULL. */
const OSSL_ALGORITHM *kc_inner_find(const OSSL_ALGORITHM *algs,
                                    const char *name);
/* The same, looking first near *near (if set), which it sets to the find. */
const OSSL_ALGORITHM *kc_inner_find_near(const OSSL_ALGORITHM *algs,
                                         const char *name,
                                         const OSSL_ALGORITHM **near);
/* the default's algorithms of operation op */
const OSSL_ALGORITHM *kc_inner_query(KC_PROVCTX *pctx, int op);
/* Load a dispatch table's functions; 0 if one a wrapper calls is missing. */
int kc_inner_load_mac(KC_MAC_FNS *f, const OSSL_DISPATCH *d);
int kc_inner_load_cipher(KC_CIPHER_FNS *f, const OSSL_DISPATCH *d);
/* For keycache's own keyed contexts: a family's ciphers, or its digest. */
int kc_inner_bind_ciphers(const OSSL_ALGORITHM *ciphers,
                          const char *const *names, KC_CIPHER_FNS *fns,
                          size_t max);
int kc_inner_bind_digest(const OSSL_ALGORITHM *digests, const char *name,
                         KC_DIGEST_FNS *fns, size_t *block, size_t *size);

#endif
