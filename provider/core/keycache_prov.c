/* SPDX-License-Identifier: Apache-2.0 */
/* keycache's entry point: start and teardown, the algorithm query, counters. */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "core/core.h"

static const OSSL_PARAM kc_gettable[] = {
    OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, NULL, 0),
    OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, NULL, 0),
    OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, NULL, 0),
    OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, NULL),
    OSSL_PARAM_uint64(KEYCACHE_PARAM_HITS, NULL),
    OSSL_PARAM_uint64(KEYCACHE_PARAM_MISSES, NULL),
    OSSL_PARAM_uint64(KEYCACHE_PARAM_EVICTIONS, NULL),
    OSSL_PARAM_uint64(KEYCACHE_PARAM_PASSTHROUGH, NULL),
    OSSL_PARAM_uint64(KEYCACHE_PARAM_ENTRIES, NULL),
    OSSL_PARAM_uint64(KEYCACHE_PARAM_CACHE_SIZE, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM *kc_gettable_params(void *provctx)
{
    return kc_gettable;
}

static int set_u64(OSSL_PARAM params[], const char *name, uint64_t v)
{
    OSSL_PARAM *p = OSSL_PARAM_locate(params, name);

    return p == NULL || OSSL_PARAM_set_uint64(p, v);
}

static int kc_get_params(void *provctx, OSSL_PARAM params[])
{
    KC_PROVCTX *pctx = provctx;
    KC_COUNTERS n;
    uint64_t entries;
    OSSL_PARAM *p;

    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME);
    if (p != NULL && !OSSL_PARAM_set_utf8_ptr(p, "keycache key-schedule cache"))
        return 0;
    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION);
    if (p != NULL && !OSSL_PARAM_set_utf8_ptr(p, KC_VERSION_STR))
        return 0;
    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO);
    if (p != NULL && !OSSL_PARAM_set_utf8_ptr(p, "keycache " KC_VERSION_STR
                                              " built with "
                                              OPENSSL_VERSION_TEXT))
        return 0;
    p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS);
    if (p != NULL && !OSSL_PARAM_set_int(p, 1))
        return 0;

    kc_cache_counters(pctx, &n, &entries);
    return set_u64(params, KEYCACHE_PARAM_HITS, n.hits)
           && set_u64(params, KEYCACHE_PARAM_MISSES, n.misses)
           && set_u64(params, KEYCACHE_PARAM_EVICTIONS, n.evictions)
           && set_u64(params, KEYCACHE_PARAM_PASSTHROUGH, n.passthrough)
           && set_u64(params, KEYCACHE_PARAM_ENTRIES, entries)
           && set_u64(params, KEYCACHE_PARAM_CACHE_SIZE, pctx->cache_size);
}

static const OSSL_ALGORITHM *kc_query(void *provctx, int operation_id,
                                      int *no_cache)
{
    KC_PROVCTX *pctx = provctx;

    *no_cache = 0;
    switch (operation_id) {
    case OSSL_OP_RAND:
        /* the DRBGs pass through for HMAC's sake alone: no bind for them */
        if (!pctx->hmac_on)
            return NULL;
        /* fall through */
    case OSSL_OP_MAC:
    case OSSL_OP_CIPHER:
    case OSSL_OP_KDF:
    case KC_OP_SKEYMGMT:
        if (kc_bind_ready(pctx))
            break;
        /* asked again from inside the bind: not yet, and not for good */
        *no_cache = __atomic_load_n(&pctx->bind_state, __ATOMIC_ACQUIRE)
                    != KC_ONCE_DONE;
        return NULL;
    default:
        return NULL;
    }
    switch (operation_id) {
    /* an algorithm switched off is not offered: default serves it directly */
    case OSSL_OP_MAC:
        /* none if the pass-through failed: KDFs must not reach them */
        if (__atomic_load_n(&pctx->pt_state, __ATOMIC_ACQUIRE) == KC_ONCE_DONE
            && !pctx->pt_ok)
            return NULL;
        return pctx->mac_algs[0].algorithm_names != NULL ? pctx->mac_algs
                                                          : NULL;
    case OSSL_OP_CIPHER:
        /* with the pass-through ciphers, if any (else the wrapped alone) */
        kc_passthrough_ready(pctx);
        return pctx->cipher_algs[0].algorithm_names != NULL
               ? pctx->cipher_algs : NULL;
    /* the default's MAC users, kept from the cache: KDFs, HMAC-DRBG */
    case OSSL_OP_KDF:
        return pctx->mac_algs[0].algorithm_names != NULL
               && kc_passthrough_ready(pctx) ? pctx->kdf_algs : NULL;
    case OSSL_OP_RAND:
        return kc_passthrough_ready(pctx) ? pctx->rand_algs : NULL;
    /* EVP_SKEY keys for keycache's ciphers, see passthrough.c */
    case KC_OP_SKEYMGMT:
        return kc_passthrough_ready(pctx) && pctx->skeymgmt_algs != NULL
               && pctx->skeymgmt_algs[0].algorithm_names != NULL
               ? pctx->skeymgmt_algs : NULL;
    }
    return NULL;
}

static void kc_teardown(void *provctx)
{
    KC_PROVCTX *pctx = provctx;

    if (pctx == NULL)
        return;
    /* cached contexts belong to the inner provider: free them first */
    kc_cache_stop(pctx);
    /* the final report, with every cache's counters retired */
    kc_report_stop(pctx);
    kc_bind_stop(pctx);
    kc_props_stop(pctx);
    OPENSSL_clear_free(pctx, sizeof(*pctx));
}

static const OSSL_DISPATCH kc_dispatch[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))kc_teardown },
    { OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))kc_gettable_params },
    { OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))kc_get_params },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))kc_query },
    { 0, NULL }
};

/*
 * Is the core's libcrypto the one this module is linked to?  Asked before
 * any libcrypto call (only the core's functions are called): another one's
 * library context would crash it.  If not, keycache does not start.
 */
static int host_matches(const OSSL_CORE_HANDLE *handle,
                        const OSSL_DISPATCH *in)
{
    const char *version = kc_early_core_version(handle, in);
    void *core_fn = (void *)kc_early_fn(in, OSSL_FUNC_CORE_GET_PARAMS);

    /* a core that cannot say is taken at its word: it loaded a 3.x ABI */
    if (version != NULL && !kc_quirk_same_major(version)) {
        kc_early_log(1, "not started: built for OpenSSL %s, loaded by "
                     "OpenSSL %s; the program runs without keycache (install "
                     "the keycache built for OpenSSL %d)",
                     kc_quirk_version, version, kc_early_major(version));
        kc_early_raise(handle, in, KC_FILE_NAME, __LINE__,
                       "built for OpenSSL %s, loaded by OpenSSL %s",
                       kc_quirk_version, version);
        return 0;
    }
    /*
     * Same major, but the same copy?  A program with a private libcrypto
     * (static, or renamed) gets the system's beside it through DT_NEEDED.
     */
    if (core_fn != NULL && kc_same_object((void *)&EVP_MAC_init, core_fn))
        return 1;
    kc_early_log(1, "not started: the OpenSSL %s that loaded keycache is "
                 "not the libcrypto keycache is linked to (%s); the program "
                 "runs without keycache", version != NULL ? version : "?",
                 kc_object_path((void *)&EVP_MAC_init));
    kc_early_raise(handle, in, KC_FILE_NAME, __LINE__, "the core is not the "
                   "libcrypto keycache is linked to: a private copy of "
                   "OpenSSL");
    return 0;
}

__attribute__((visibility("default")))
int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    OSSL_FUNC_core_get_params_fn *core_get_params =
        KC_CORE_FN(in, core_get_params, CORE_GET_PARAMS);
    OSSL_FUNC_core_get_libctx_fn *core_get_libctx =
        KC_CORE_FN(in, core_get_libctx, CORE_GET_LIBCTX);
    KC_PROVCTX *pctx;

    if (!host_matches(handle, in)
        || (pctx = OPENSSL_zalloc(sizeof(*pctx))) == NULL)
        return 0;
    pctx->handle = handle;
    pctx->name = KEYCACHE_PROVIDER_NAME;  /* until the core says otherwise */
    pctx->core_fn = (const void *)core_get_params;
    pctx->core_thread_start = KC_CORE_FN(in, core_thread_start,
                                         CORE_THREAD_START);
    pctx->core_new_error = KC_CORE_FN(in, core_new_error, CORE_NEW_ERROR);
    pctx->core_set_error_debug = KC_CORE_FN(in, core_set_error_debug,
                                            CORE_SET_ERROR_DEBUG);
    pctx->core_vset_error = KC_CORE_FN(in, core_vset_error, CORE_VSET_ERROR);
    /* first, so that it can tell why a start fails */
    kc_debug_init(pctx);
    if (pctx->core_thread_start == NULL) {
        kc_raise(pctx, KC_R_INIT_FAILED, "core offers no thread_start");
        goto err;
    }
    if (core_get_libctx == NULL) {
        kc_raise(pctx, KC_R_INIT_FAILED, "core offers no get_libctx");
        goto err;
    }
    /* the application's library context, as the default provider takes it */
    pctx->app_libctx = (OSSL_LIB_CTX *)core_get_libctx(handle);
    if (!kc_conf_read(pctx, core_get_params))
        goto err;
    /* follow the application's default properties: now if they matter */
    if (!kc_props_start(pctx, in, pctx->prefer || kc_debug_level(pctx) > 0)
        && pctx->prefer) {
        kc_raise(pctx, KC_R_INIT_FAILED, "prefer = if_unset: the core "
                 "offers no way to see the default properties in force");
        goto err;
    }
    if (!kc_cache_start(pctx))
        goto err;
    kc_bind_start(pctx);
    pctx->hmac_alg.stat = KC_STAT_HMAC;
    pctx->timed = pctx->idle_ttl != 0 || kc_debug_interval(pctx) != 0;
    if (pctx->props_registered == 1 && kc_debug_level(pctx) > 1) {
        char now[512];

        kc_props_get(pctx, now, sizeof(now));
        kc_debug_log(pctx, 2, "routing: default_properties in force when "
                     "%s starts: %s", pctx->name, now);
    }
    /* last: nothing may fail once the application's properties are set */
    if (pctx->prefer && !kc_props_prefer(pctx))
        goto err;
    pctx->started = 1;
    kc_report_start(pctx);
    *out = kc_dispatch;
    *provctx = pctx;
    return 1;
 err:
    kc_teardown(pctx);
    return 0;
}
