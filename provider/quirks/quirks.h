/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - what differs between OpenSSL versions: what the build
 * knows from its headers (quirks.c), and what is learned of the running
 * default (learn.c).
 *
 * Every difference between OpenSSL 3.x and 4.x that the sources have to
 * know about is behind these declarations; quirks.c is the only
 * file that tests OpenSSL's version or feature macros.
 */
#ifndef KC_QUIRKS_H
#define KC_QUIRKS_H

#include "common/common.h"

/* the major version of the OpenSSL headers this build was made with */
extern const int kc_quirk_major;
/* and their version, "4.0.3" */
extern const char kc_quirk_version[];

/*
 * Whether the core's "openssl-version" ("3.6.5") is of the major version
 * this build was made for.  Another major version's libcrypto has another
 * ABI: this module's calls would go to its own libcrypto (pulled into the
 * process beside the core's, symbol versions keep them apart) with the
 * core's objects.  Calls nothing of libcrypto.
 */
int kc_quirk_same_major(const char *host_version);

/*
 * Whether k is the name of the "engine" parameter that OpenSSL 3's
 * algorithms take beside a digest or cipher name.  OpenSSL 4.0 removed the
 * ENGINE API and with it the parameter: no key is one there.
 */
int kc_quirk_is_engine_param(const char *k);

/*
 * Whether an ENGINE is registered for the cipher nid, which OpenSSL 3's
 * EVP_EncryptInit_ex() then runs instead of a provider's (4.0: never).
 */
int kc_quirk_cipher_engine(int nid);

/*
 * Whether the default provider, loading a digest (HMAC) or a cipher (CMAC,
 * GMAC), keeps the errors that a successful fetch queued (OpenSSL 4: 1), or
 * drops them (3: 0).
 */
extern const int kc_quirk_load_keeps_errors;

/*
 * Whether the default's AES-GCM draws a random IV at an encrypting init
 * that brings none, and reports and keeps it (OpenSSL 4: 1; 3.x draws at
 * the first update and fails an IV query before).
 */
extern const int kc_quirk_gcm_draws_iv;

/*
 * Have fn run once, when libcrypto is about to clean up at exit, while it
 * still works.  OpenSSL 3 runs it from OPENSSL_cleanup() (OPENSSL_atexit);
 * OpenSSL 4.0 has no such hook and cleans up from its own destructor, which
 * the dynamic linker runs after this module's, so fn runs from keycache's
 * destructor, unless libcrypto was stopped already.
 */
int kc_quirk_at_cleanup(void (*fn)(void));

/*
 * Symmetric key management (EVP_SKEY, OpenSSL 3.5+): the operation and the
 * function ids that take a provider context.  Numbers of the stable ABI,
 * spelled out so a build against 3.0's headers still offers it once
 * libcrypto is upgraded in place; quirks.c checks them against the headers
 * that have them.  A libcrypto without the operation answers no algorithms.
 */
#define KC_OP_SKEYMGMT 15
#define KC_FUNC_SKEYMGMT_IMPORT 2
#define KC_FUNC_SKEYMGMT_GENERATE 4
#define KC_FUNC_SKEYMGMT_IMP_SETTABLE_PARAMS 6
#define KC_FUNC_SKEYMGMT_GEN_SETTABLE_PARAMS 7

/*
 * Learned of the running default (learn.c), one bit per quirk, kept in a
 * family's KC_TFAM.quirks or KC_CFAM.quirks.  Family code tests these
 * names and holds no version logic of its own.
 */
/* the word was learned (a word without it: unknown, keep to the default) */
#define KC_Q_KNOWN            (1u << 0)
/*
 * set_ctx_params fails, setting nothing, on a parameter named twice: the
 * generated decoders of OpenSSL 4 (3.x takes the first).  Every family.
 */
#define KC_Q_REPEATS_FAIL     (1u << 1)
/*
 * A fresh MAC context takes set_ctx_params with NULL, or with an empty
 * array, quietly (EVP_Q_mac makes both calls): then they need no record.
 */
#define KC_Q_NULL_SET_OK      (1u << 2)
#define KC_Q_EMPTY_SET_OK     (1u << 3)
/* KMAC: EVP refuses a digest update after the final (3.2 and later) */
#define KC_Q_FINAL_SEALS      (1u << 4)
/* AES-SIV: an empty update with output is a message (3.2 and later) */
#define KC_Q_EMPTY_IS_MESSAGE (1u << 5)
/*
 * AES-SIV: set_ctx_params reopens the final - with a parameter, with an
 * empty array (both in 3.5, and in late 3.0 releases), with NULL (4.x: so
 * every keyless init)
 */
#define KC_Q_SET_REOPENS      (1u << 6)
#define KC_Q_EMPTY_REOPENS    (1u << 7)
#define KC_Q_NULL_REOPENS     (1u << 8)
/*
 * AES-SIV: a message reopens the final first, so a failed one leaves it
 * open (3.5.9, 3.6.5, 4.0.3; 3.0.22 leaves a forged one's final standing)
 */
#define KC_Q_TRY_REOPENS      (1u << 9)
/* REPEATS_FAIL was learned (it may be learned apart from the rest) */
#define KC_Q_REPEATS_KNOWN    (1u << 10)

static ossl_inline int kc_quirk(unsigned int word, unsigned int q)
{
    return (word & q) != 0;
}

/* The learners: KC_Q_KNOWN and the bits found, or 0 if not learned. */
/* NULL_SET_OK, EMPTY_SET_OK of a fresh context of m */
unsigned int kc_quirk_learn_sets(void *provctx, const KC_MAC_FNS *m);
/* REPEATS_FAIL, with p named twice on a fresh context (MAC or cipher) */
unsigned int kc_quirk_learn_repeats(void *provctx, void *(*newctx)(void *),
                                    void (*freectx)(void *),
                                    int (*set)(void *, const OSSL_PARAM *),
                                    const OSSL_PARAM *p);
/* FINAL_SEALS: an update after a keyed context's final (KMAC) */
unsigned int kc_quirk_learn_seal(void *provctx, const KC_MAC_FNS *m);
/* AES-SIV's: EMPTY_IS_MESSAGE, *_REOPENS, TRY_REOPENS, REPEATS_FAIL */
unsigned int kc_quirk_learn_siv(void *provctx, const KC_CIPHER_FNS *m,
                                size_t keylen);

/*
 * Does a hit of AES-GCM (a copy of the cached keyed context) pay on the
 * running libcrypto?  What aes_gcm = auto means (the registry's rule).
 */
int kc_quirk_gcm_copy_pays(void);

#endif
