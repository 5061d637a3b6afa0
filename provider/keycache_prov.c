/*
 * keycache provider entry point: configuration, algorithm tables, counters.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "kc_local.h"

#define KC_VERSION_STR "0.1.0"

static const OSSL_ITEM reason_strings[] = {
    { KC_R_INIT_FAILED, "keycache could not start" },
    { KC_R_BAD_CONFIG, "invalid keycache configuration" },
    { KC_R_INNER_MISSING, "default provider lacks a wrapped algorithm" },
    { 0, NULL }
};

void kc_raise(KC_PROVCTX *pctx, int reason, const char *fmt, ...)
{
    va_list ap;

    if (pctx->core_new_error == NULL || pctx->core_vset_error == NULL)
        return;
    pctx->core_new_error(pctx->handle);
    if (pctx->core_set_error_debug != NULL)
        pctx->core_set_error_debug(pctx->handle, OPENSSL_FILE, OPENSSL_LINE,
                                   "keycache");
    va_start(ap, fmt);
    pctx->core_vset_error(pctx->handle, reason, fmt, ap);
    va_end(ap);
}

static int parse_bool(const char *v, int *out)
{
    if (strcasecmp(v, "on") == 0 || strcasecmp(v, "yes") == 0
        || strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = 1;
    else if (strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0
             || strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = 0;
    else
        return 0;
    return 1;
}

/*
 * aes_gcm = auto (the default): on where the cache was measured to pay.
 * Copying the cached template (the inner default's dupctx) beats keying a
 * fresh GCM context on OpenSSL 3.0 (0.82x per one-shot encryption); on 3.5
 * and 3.6 a hit saves 5% and a miss costs 9%; 3.1-3.4 were not measured and
 * are left alone too.  The version asked is that of the libcrypto keycache
 * runs its inner default provider from, which is the one that matters.
 */
#define KC_GCM_AUTO_BELOW 0x30100000UL

static int gcm_auto(void)
{
    return OpenSSL_version_num() < KC_GCM_AUTO_BELOW;
}

/*
 * cmac, gmac, kmac = auto (the default): on where caching was measured to
 * pay, which is every version measured (3.0 and 3.5): each saves a fetch
 * and a key set-up a copy does not need (see README, What it buys).
 */
static int fam_auto(void)
{
    return 1;
}

static int parse_onoffauto(const char *v, int (*autofn)(void), int *out)
{
    if (strcasecmp(v, "auto") == 0) {
        *out = autofn();
        return 1;
    }
    return parse_bool(v, out);
}

static int parse_uint(const char *v, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long n;

    if (*v < '0' || *v > '9')
        return 0;
    n = strtoull(v, &end, 10);
    if (*end != '\0' || n > max)
        return 0;
    *out = n;
    return 1;
}

/* Read the provider's openssl.cnf section; unknown keys are left alone. */
static int read_config(KC_PROVCTX *pctx, OSSL_FUNC_core_get_params_fn *get)
{
    static const struct {
        const char *key;
        int fam[2];             /* the families the key switches, -1 none */
    } fams[] = {
        { KEYCACHE_CONF_CMAC, { KC_FAM_CMAC, -1 } },
        { KEYCACHE_CONF_GMAC, { KC_FAM_GMAC, -1 } },
        { KEYCACHE_CONF_KMAC, { KC_FAM_KMAC128, KC_FAM_KMAC256 } },
    };
#define KC_NFAMKEYS (sizeof(fams) / sizeof(fams[0]))
    char *size = NULL, *hmac = NULL, *gcm = NULL, *ttl = NULL, *admit = NULL;
    char *fam[KC_NFAMKEYS] = { NULL };
    OSSL_PARAM p[6 + KC_NFAMKEYS];
    uint64_t n;
    size_t i;
    int on, j;

    pctx->cache_size = KEYCACHE_DEFAULT_CACHE_SIZE;
    pctx->hmac_on = 1;
    pctx->gcm_on = gcm_auto();
    pctx->idle_ttl = 0;
    pctx->admit_after = KEYCACHE_DEFAULT_ADMIT_AFTER;
    for (j = 0; j < KC_FAM_COUNT; j++)
        pctx->fam[j].on = fam_auto();
    if (get == NULL)
        return 1;
    p[0] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_CACHE_SIZE, &size, 0);
    p[1] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_HMAC, &hmac, 0);
    p[2] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_AES_GCM, &gcm, 0);
    p[3] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_IDLE_TTL, &ttl, 0);
    p[4] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_ADMIT_AFTER, &admit, 0);
    for (i = 0; i < KC_NFAMKEYS; i++)
        p[5 + i] = OSSL_PARAM_construct_utf8_ptr(fams[i].key, &fam[i], 0);
    p[5 + i] = OSSL_PARAM_construct_end();
    if (!get(pctx->handle, p))
        return 1;
    if (size != NULL) {
        if (!parse_uint(size, KEYCACHE_MAX_CACHE_SIZE, &n)) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = %s: want 0..%d",
                     KEYCACHE_CONF_CACHE_SIZE, size, KEYCACHE_MAX_CACHE_SIZE);
            return 0;
        }
        pctx->cache_size = (size_t)n;
    }
    if (hmac != NULL && !parse_bool(hmac, &pctx->hmac_on)) {
        kc_raise(pctx, KC_R_BAD_CONFIG, "%s = %s: want on or off",
                 KEYCACHE_CONF_HMAC, hmac);
        return 0;
    }
    if (gcm != NULL && !parse_onoffauto(gcm, gcm_auto, &pctx->gcm_on)) {
        kc_raise(pctx, KC_R_BAD_CONFIG, "%s = %s: want on, off or auto",
                 KEYCACHE_CONF_AES_GCM, gcm);
        return 0;
    }
    for (i = 0; i < KC_NFAMKEYS; i++) {
        if (fam[i] == NULL)
            continue;
        if (!parse_onoffauto(fam[i], fam_auto, &on)) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = %s: want on, off or auto",
                     fams[i].key, fam[i]);
            return 0;
        }
        for (j = 0; j < 2 && fams[i].fam[j] >= 0; j++)
            pctx->fam[fams[i].fam[j]].on = on;
    }
    if (ttl != NULL) {
        if (!parse_uint(ttl, UINT32_MAX, &n)) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = %s: want seconds",
                     KEYCACHE_CONF_IDLE_TTL, ttl);
            return 0;
        }
        pctx->idle_ttl = n;
    }
    if (admit != NULL) {
        if (!parse_uint(admit, KEYCACHE_MAX_ADMIT_AFTER, &n) || n == 0) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = %s: want 1..%d",
                     KEYCACHE_CONF_ADMIT_AFTER, admit,
                     KEYCACHE_MAX_ADMIT_AFTER);
            return 0;
        }
        pctx->admit_after = (unsigned int)n;
    }
    return 1;
}

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
    /* an algorithm switched off is not offered: default serves it directly */
    case OSSL_OP_MAC:
        return pctx->mac_algs[0].algorithm_names != NULL ? pctx->mac_algs
                                                          : NULL;
    case OSSL_OP_CIPHER:
        return pctx->cipher_algs[0].algorithm_names != NULL
               ? pctx->cipher_algs : NULL;
    /*
     * OpenSSL's internal MAC users, kept away from the cache: KDFs use
     * HMAC, CMAC and KMAC (KBKDF, SSKDF), HMAC-DRBG only HMAC.
     */
    case OSSL_OP_KDF:
        return pctx->mac_algs[0].algorithm_names != NULL ? pctx->kdf_algs
                                                          : NULL;
    case OSSL_OP_RAND:
        return pctx->hmac_on ? pctx->rand_algs : NULL;
    }
    return NULL;
}

static const OSSL_ITEM *kc_get_reason_strings(void *provctx)
{
    return reason_strings;
}

static void kc_teardown(void *provctx)
{
    KC_PROVCTX *pctx = provctx;

    if (pctx == NULL)
        return;
    /* cached contexts belong to the inner provider: free them first */
    kc_cache_stop(pctx);
    kc_inner_stop(pctx);
    OPENSSL_clear_free(pctx, sizeof(*pctx));
}

static const OSSL_DISPATCH kc_dispatch[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))kc_teardown },
    { OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))kc_gettable_params },
    { OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))kc_get_params },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))kc_query },
    { OSSL_FUNC_PROVIDER_GET_REASON_STRINGS,
      (void (*)(void))kc_get_reason_strings },
    { 0, NULL }
};


__attribute__((visibility("default")))
int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    OSSL_FUNC_core_get_params_fn *core_get_params = NULL;
    OSSL_FUNC_core_get_libctx_fn *core_get_libctx = NULL;
    KC_PROVCTX *pctx = OPENSSL_zalloc(sizeof(*pctx));

    if (pctx == NULL)
        return 0;
    pctx->handle = handle;
    for (; in->function_id != 0; in++) {
        switch (in->function_id) {
        case OSSL_FUNC_CORE_GET_PARAMS:
            core_get_params = OSSL_FUNC_core_get_params(in);
            break;
        case OSSL_FUNC_CORE_GET_LIBCTX:
            core_get_libctx = OSSL_FUNC_core_get_libctx(in);
            break;
        case OSSL_FUNC_CORE_THREAD_START:
            pctx->core_thread_start = OSSL_FUNC_core_thread_start(in);
            break;
        case OSSL_FUNC_CORE_NEW_ERROR:
            pctx->core_new_error = OSSL_FUNC_core_new_error(in);
            break;
        case OSSL_FUNC_CORE_SET_ERROR_DEBUG:
            pctx->core_set_error_debug = OSSL_FUNC_core_set_error_debug(in);
            break;
        case OSSL_FUNC_CORE_VSET_ERROR:
            pctx->core_vset_error = OSSL_FUNC_core_vset_error(in);
            break;
        }
    }
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
    if (!read_config(pctx, core_get_params)
        || !kc_cache_start(pctx)
        || !kc_inner_start(pctx))
        goto err;
    kc_gcm_bind(pctx);
    *out = kc_dispatch;
    *provctx = pctx;
    return 1;
 err:
    kc_teardown(pctx);
    return 0;
}
