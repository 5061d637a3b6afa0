/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - OpenSSL version differences: what the build's headers have
 * (ENGINEs, EVP_SKEY's numbers), and what "auto" asks of the running
 * libcrypto (OpenSSL_version_num(), never the headers' version).
 */
/* ENGINE_get_cipher_engine(), deprecated in 3.0 and gone in 4.0 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/opensslconf.h>
#include <openssl/opensslv.h>
#if OPENSSL_VERSION_MAJOR < 4 && !defined(OPENSSL_NO_ENGINE)
# include <openssl/engine.h>
# define KC_HAVE_ENGINE 1
#endif

#include <openssl/core_dispatch.h>

#include "quirks/quirks.h"

#ifdef OSSL_OP_SKEYMGMT
_Static_assert(KC_OP_SKEYMGMT == OSSL_OP_SKEYMGMT
               && KC_FUNC_SKEYMGMT_IMPORT == OSSL_FUNC_SKEYMGMT_IMPORT
               && KC_FUNC_SKEYMGMT_GENERATE == OSSL_FUNC_SKEYMGMT_GENERATE
               && KC_FUNC_SKEYMGMT_IMP_SETTABLE_PARAMS
                  == OSSL_FUNC_SKEYMGMT_IMP_SETTABLE_PARAMS
               && KC_FUNC_SKEYMGMT_GEN_SETTABLE_PARAMS
                  == OSSL_FUNC_SKEYMGMT_GEN_SETTABLE_PARAMS,
               "quirks.h's SKEYMGMT numbers are OpenSSL's");
#endif
#include "early/early.h"

const char kc_quirk_version[] = OPENSSL_VERSION_STR;

int kc_quirk_same_major(const char *host_version)
{
    return kc_early_major(host_version) == OPENSSL_VERSION_MAJOR;
}

/*
 * 3.x's ossl_prov_digest_load() and ossl_prov_cipher_load() fetch under an
 * error mark (for the legacy fallback) and pop it on success; 4.0 keeps
 * what a successful fetch queued (a query that parses with errors).
 */
const int kc_quirk_load_keeps_errors = OPENSSL_VERSION_MAJOR >= 4;

/* seen with 4.0.3: get_updated_iv right after EVP_CipherInit_ex(c, NULL...) */
const int kc_quirk_gcm_draws_iv = OPENSSL_VERSION_MAJOR >= 4;

const char *kc_quirk_name(unsigned int q)
{
    switch (q) {
    case KC_Q_REPEATS_FAIL:
        return "repeats-fail";
    case KC_Q_NULL_SET_OK:
        return "null-set-ok";
    case KC_Q_EMPTY_SET_OK:
        return "empty-set-ok";
    case KC_Q_FINAL_SEALS:
        return "final-seals";
    case KC_Q_EMPTY_IS_MESSAGE:
        return "empty-is-message";
    case KC_Q_SET_REOPENS:
        return "set-reopens";
    case KC_Q_EMPTY_REOPENS:
        return "empty-reopens";
    case KC_Q_NULL_REOPENS:
        return "null-reopens";
    case KC_Q_TRY_REOPENS:
        return "try-reopens";
    }
    return NULL;
}

int kc_quirk_cipher_engine(int nid)
{
#ifdef KC_HAVE_ENGINE
    ENGINE *e = ENGINE_get_cipher_engine(nid);

    if (e != NULL) {
        ENGINE_finish(e);
        return 1;
    }
#else
    (void)nid;
#endif
    return 0;
}

int kc_quirk_is_engine_param(const char *k)
{
#ifdef OSSL_ALG_PARAM_ENGINE
    return strcmp(k, OSSL_ALG_PARAM_ENGINE) == 0;
#else
    (void)k;
    return 0;
#endif
}

#if OPENSSL_VERSION_MAJOR < 4

int kc_quirk_at_cleanup(void (*fn)(void))
{
    return OPENSSL_atexit(fn);
}

#else

static void (*at_cleanup)(void);

int kc_quirk_at_cleanup(void (*fn)(void))
{
    __atomic_store_n(&at_cleanup, fn, __ATOMIC_RELEASE);
    return 1;
}

/*
 * Runs at exit (the module is pinned when there is work) before the
 * destructor of libcrypto, which we depend on: OpenSSL 4 cleans up there
 * (the program's OPENSSL_cleanup() only marks it done).
 */
__attribute__((destructor))
static void kc_quirk_unload(void)
{
    void (*fn)(void) = __atomic_load_n(&at_cleanup, __ATOMIC_ACQUIRE);

    if (fn != NULL)
        fn();
}

#endif

/*
 * aes_gcm = auto: a copy beats keying a fresh context on 3.0 (0.82x per
 * one-shot encryption); on 3.5-4.0 a hit saves 5-9% and a miss costs
 * 3-13%; 3.1-3.4 were not measured.  Asked at run time: libcrypto may be
 * upgraded in place.
 */
int kc_quirk_gcm_copy_pays(void)
{
    return OpenSSL_version_num() < 0x30100000UL;
}

/*
 * 3.0's EVP_CIPHER_CTX_get_iv_length() and _get_key_length() ask the
 * provider every time, and EVP asks before every init with an IV or key;
 * 3.5 and 4.0 keep the answer in the EVP_CIPHER_CTX (measured with
 * `bash bench/patterns.sh build copy-keyed-ocb` and --profiles).  3.1-3.4
 * are taken as 3.5; either way only the cost differs, not an answer.
 */
int kc_quirk_evp_asks_lengths(void)
{
    return OpenSSL_version_num() < 0x30100000UL;
}

/*
 * cmac, aes_ocb, aes_siv = auto.  From 3.5 libcrypto runs an EVP_SKEY only
 * with a cipher of its key manager's provider, so offering one cipher
 * means passing every default cipher through (core/passthrough.c), and
 * libcrypto builds those methods at every process's first cipher fetch,
 * used or not (docs/families.md).  CMAC goes with them: keeping the
 * default's AES-SIV off it takes AES-SIV passed through, a cipher.
 */
int kc_quirk_ciphers_pay(void)
{
    return OpenSSL_version_num() < 0x30500000UL;
}
