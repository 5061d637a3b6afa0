/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - every OpenSSL version difference the sources know of: from
 * the build's headers (quirks.c, the only file that tests version or
 * feature macros), or learned of the running default (learn.c).
 */
#ifndef KC_QUIRKS_H
#define KC_QUIRKS_H

#include "common/common.h"

/* the version of the OpenSSL headers this build was made with, "4.0.3" */
extern const char kc_quirk_version[];

/*
 * Is the core's "openssl-version" of the major version this build was made
 * for?  Another major's ABI differs: our calls would go to our own
 * libcrypto, beside the core's, with the core's objects.  Calls no libcrypto.
 */
int kc_quirk_same_major(const char *host_version);

/* Is k OpenSSL 3's "engine" parameter?  (4.0 removed ENGINEs: never.) */
int kc_quirk_is_engine_param(const char *k);

/* Is an ENGINE registered for cipher nid, run by 3.x's EVP (4.0: never)? */
int kc_quirk_cipher_engine(int nid);

/*
 * Does the default, loading a digest or cipher, keep the errors a
 * successful fetch queued (OpenSSL 4), or drop them (3)?
 */
extern const int kc_quirk_load_keeps_errors;

/*
 * Does the default's AES-GCM draw an IV at an encrypting init without one
 * and report it (OpenSSL 4)?  3.x draws at the first update.
 */
extern const int kc_quirk_gcm_draws_iv;

/*
 * Run fn once at exit while libcrypto still works: from OPENSSL_cleanup()
 * on 3.x; 4.0 has no such hook and cleans up in its destructor, which runs
 * after this module's, so from keycache's destructor.
 */
int kc_quirk_at_cleanup(void (*fn)(void));

/*
 * EVP_SKEY key management (3.5+): stable ABI numbers, spelled out so that a
 * build on 3.0's headers offers it once libcrypto is upgraded in place
 * (quirks.c checks them against headers that have them).
 */
#define KC_OP_SKEYMGMT 15
#define KC_FUNC_SKEYMGMT_IMPORT 2
#define KC_FUNC_SKEYMGMT_GENERATE 4
#define KC_FUNC_SKEYMGMT_IMP_SETTABLE_PARAMS 6
#define KC_FUNC_SKEYMGMT_GEN_SETTABLE_PARAMS 7

/*
 * Learned of the running default (learn.c) into KC_TFAM.quirks or
 * KC_CFAM.quirks, so that families hold no version logic.  KNOWN: the word
 * was learned (without it: unknown, keep to the default).
 */
#define KC_Q_KNOWN            (1u << 0)
/* set_ctx_params fails on a name given twice (4.x's decoders; 3.x: first) */
#define KC_Q_REPEATS_FAIL     (1u << 1)
/* a fresh MAC ctx takes set_ctx_params(NULL), (empty) quietly (EVP_Q_mac) */
#define KC_Q_NULL_SET_OK      (1u << 2)
#define KC_Q_EMPTY_SET_OK     (1u << 3)
/* KMAC: EVP refuses a digest update after the final (3.2 and later) */
#define KC_Q_FINAL_SEALS      (1u << 4)
/* AES-SIV: an empty update with output is a message (3.2 and later) */
#define KC_Q_EMPTY_IS_MESSAGE (1u << 5)
/*
 * AES-SIV: set_ctx_params reopens the final - with a parameter, with an
 * empty array (3.5, late 3.0), with NULL (4.x: every keyless init)
 */
#define KC_Q_SET_REOPENS      (1u << 6)
#define KC_Q_EMPTY_REOPENS    (1u << 7)
#define KC_Q_NULL_REOPENS     (1u << 8)
/* AES-SIV: a failed message leaves the final open (3.5.9+; not 3.0.22) */
#define KC_Q_TRY_REOPENS      (1u << 9)
/* REPEATS_FAIL was learned (perhaps apart from the rest) */
#define KC_Q_REPEATS_KNOWN    (1u << 10)
/* the word is kc_quirk_siv()'s table's, for the running version, not asked */
#define KC_Q_FROM_TABLE       (1u << 11)

/* what each family's code asks (the registry's quirks column) */
#define KC_QS_TMAC (KC_Q_NULL_SET_OK | KC_Q_EMPTY_SET_OK | KC_Q_REPEATS_FAIL)
#define KC_QS_KMAC (KC_QS_TMAC | KC_Q_FINAL_SEALS)
#define KC_QS_SIV (KC_Q_EMPTY_IS_MESSAGE | KC_Q_SET_REOPENS                  \
                   | KC_Q_EMPTY_REOPENS | KC_Q_NULL_REOPENS                  \
                   | KC_Q_TRY_REOPENS | KC_Q_REPEATS_FAIL)

/* a quirk's name in reports ("repeats-fail"), NULL for no single bit */
const char *kc_quirk_name(unsigned int q);

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
 * AES-SIV's word: learn.c's table's for a version CI runs, if use_table
 * (quirk_table = on), with KC_Q_FROM_TABLE; else learned as above.
 */
unsigned int kc_quirk_siv(int use_table, void *provctx,
                          const KC_CIPHER_FNS *m, size_t keylen);

/* Does an AES-GCM hit (a copy) pay on the running libcrypto?  "auto" */
int kc_quirk_gcm_copy_pays(void);
/*
 * Does EVP ask a cipher context's IV length (and key length) before every
 * init (3.0), or keep what it was told in the EVP_CIPHER_CTX (3.5, 4.0)?
 */
int kc_quirk_evp_asks_lengths(void);
/* May "auto" offer ciphers and CMAC: no EVP_SKEY (before 3.5)?  "auto" */
int kc_quirk_ciphers_pay(void);

#endif
