/* SPDX-License-Identifier: Apache-2.0 */
/* keycache's entry point: configuration, the algorithm query, counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/conf.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "core/core.h"

/* the spellings OpenSSL takes for its own switches, in any case */
#define KC_BOOL_WORDS "on or off (also yes/no, true/false, 1/0)"

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

/* A plain decimal number: no sign, no spaces, no suffix. */
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

/* keycache's own keys, and those OpenSSL's config module takes itself */
static const char *const our_keys[] = {
    KEYCACHE_CONF_CACHE_SIZE, KEYCACHE_CONF_HMAC, KEYCACHE_CONF_AES_GCM,
    KEYCACHE_CONF_IDLE_TTL, KEYCACHE_CONF_ADMIT_AFTER, KEYCACHE_CONF_CMAC,
    KEYCACHE_CONF_GMAC, KEYCACHE_CONF_KMAC, KEYCACHE_CONF_AES_OCB,
    KEYCACHE_CONF_AES_SIV, KEYCACHE_CONF_PREFER, NULL
};
static const char *const core_keys[] = {
    "module", "activate", "identity", "soft_load", NULL
};
#define KC_KEYS_TEXT "cache_size, hmac, aes_gcm, idle_ttl, admit_after, " \
    "cmac, gmac, kmac, aes_ocb, aes_siv, prefer (and OpenSSL's module, " \
    "activate, identity, soft_load)"
/* how far nested sections are followed; names asked about per call */
#define KC_CONF_DEPTH 3
#define KC_CONF_BATCH 32
#define KC_CONF_NAME 128

/* The config module reads its own keys after the first dot, if any. */
static int is_known_key(const char *name)
{
    const char *dot = strchr(name, '.');

    return kc_name_in_list(our_keys, name)
           || kc_name_in_list(core_keys, dot != NULL ? dot + 1 : name);
}

/* names to ask the core about, a batch at a time: the scan allocates none */
typedef struct {
    KC_PROVCTX *pctx;
    OSSL_FUNC_core_get_params_fn *get;
    const char *file;
    int unknown;              /* the core knew one of them */
    size_t n;
    char name[KC_CONF_BATCH][KC_CONF_NAME];
} KC_KEYSCAN;

static void scan_flush(KC_KEYSCAN *ks)
{
    OSSL_PARAM p[KC_CONF_BATCH + 1];
    char *val[KC_CONF_BATCH];
    size_t i;

    for (i = 0; i < ks->n; i++) {
        val[i] = NULL;
        p[i] = OSSL_PARAM_construct_utf8_ptr(ks->name[i], &val[i], 0);
    }
    p[ks->n] = OSSL_PARAM_construct_end();
    if (ks->n > 0 && ks->get(ks->pctx->handle, p))
        for (i = 0; i < ks->n; i++) {
            if (val[i] == NULL)
                continue;
            kc_raise(ks->pctx, KC_R_BAD_CONFIG, "unknown key \"%s\" in %s's "
                     "section of %s; keycache knows " KC_KEYS_TEXT,
                     ks->name[i], ks->pctx->name, ks->file);
            ks->unknown = 1;
        }
    ks->n = 0;
}

/*
 * "prefix.key" (or key) into out[KC_CONF_NAME]; 0 if too long.  Not
 * snprintf(): a config has dozens of names, and every process starts here.
 */
static int join_name(char *out, const char *prefix, const char *key)
{
    size_t p = prefix != NULL ? strlen(prefix) : 0, k = strlen(key);

    if (p + (p != 0) + k >= KC_CONF_NAME)
        return 0;
    if (p != 0) {
        memcpy(out, prefix, p);
        out[p++] = '.';
    }
    memcpy(out + p, key, k + 1);
    return 1;
}

/* A name seen twice is asked about twice: the core answers once. */
static void scan_add(KC_KEYSCAN *ks, const char *prefix, const char *key)
{
    char *s = ks->name[ks->n];

    if (!join_name(s, prefix, key) || is_known_key(s))
        return;
    if (++ks->n == KC_CONF_BATCH)
        scan_flush(ks);
}

/*
 * Every parameter name a section would give its provider: a key naming a
 * section stands for its keys as "key.sub" (provider_conf_params()).
 */
static void section_names(const CONF *conf, STACK_OF(CONF_VALUE) *sect,
                          const char *prefix, int depth, KC_KEYSCAN *ks)
{
    STACK_OF(CONF_VALUE) *sub;
    char full[KC_CONF_NAME];
    int i;

    for (i = 0; i < sk_CONF_VALUE_num(sect); i++) {
        CONF_VALUE *v = sk_CONF_VALUE_value(sect, i);

        sub = v->value != NULL ? NCONF_get_section(conf, v->value) : NULL;
        if (sub == NULL || sub == sect || depth == KC_CONF_DEPTH) {
            scan_add(ks, prefix, v->name);
            continue;
        }
        if (join_name(full, prefix, v->name))
            section_names(conf, sub, full, depth + 1, ks);
    }
}

/* The values of a section's keys that name config module |module|. */
static const char *module_value(const CONF *conf, const char *sect,
                                const char *module, int nth)
{
    STACK_OF(CONF_VALUE) *s = NCONF_get_section(conf, sect);
    size_t n = strlen(module);
    int i;

    for (i = 0; i < sk_CONF_VALUE_num(s); i++) {
        CONF_VALUE *v = sk_CONF_VALUE_value(s, i);

        /* "providers" or "providers.anything": the module is before a dot */
        if (strncmp(v->name, module, n) == 0
            && (v->name[n] == '\0' || v->name[n] == '.') && nth-- == 0)
            return v->value;
    }
    return NULL;
}

/* KEYCACHE_DEBUG only: does this file load keycache at all? */
static void check_routing(KC_PROVCTX *pctx, const CONF *conf,
                          const char *file)
{
    const char *init, *sect, *name;
    STACK_OF(CONF_VALUE) *provs;
    int i, j, found = 0;

    if ((init = NCONF_get_string(conf, NULL, "openssl_conf")) == NULL) {
        kc_debug_log(pctx, 2, "config: %s has no openssl_conf", file);
        return;
    }
    for (i = 0; !found && (sect = module_value(conf, init, "providers", i))
                          != NULL; i++) {
        provs = NCONF_get_section(conf, sect);
        for (j = 0; !found && j < sk_CONF_VALUE_num(provs); j++) {
            CONF_VALUE *v = sk_CONF_VALUE_value(provs, j);
            const char *dot = strchr(v->name, '.');

            name = NCONF_get_string(conf, v->value, "identity");
            if (name == NULL)
                name = dot != NULL ? dot + 1 : v->name;
            found = strcmp(name, pctx->name) == 0;
        }
    }
    if (!found) {
        kc_debug_log(pctx, 2, "config: %s does not load %s: it was "
                     "configured from elsewhere", file, pctx->name);
        return;
    }
    /* which default_properties win only the library knows: see props.c */
    kc_debug_log(pctx, 2, "config: %s loads %s", file, pctx->name);
}

/*
 * The core answers only for names asked about, so a misspelt key would be
 * ignored.  So every name any section of the default config file could
 * give a provider is asked about: the core's answer says which are in
 * ours.  Another config file gets the value checks only.  0: unknown keys.
 */
static int check_unknown_keys(KC_PROVCTX *pctx,
                              OSSL_FUNC_core_get_params_fn *get)
{
    KC_KEYSCAN ks;
    char *file = NULL;
    CONF *conf = NULL;
    STACK_OF(OPENSSL_CSTRING) *sects;
    long eline = 0;
    int i;

    ERR_set_mark();
    if ((file = CONF_get1_default_config_file()) == NULL
        || (conf = NCONF_new(NULL)) == NULL
        || NCONF_load(conf, file, &eline) <= 0) {
        ERR_pop_to_mark();
        kc_debug_log(pctx, 2, "config: cannot read %s to look for unknown "
                     "keys", file != NULL ? file : "the default config");
        NCONF_free(conf);
        OPENSSL_free(file);
        return 1;
    }
    if (kc_debug_level(pctx) > 0)
        check_routing(pctx, conf, file);
    sects = NCONF_get_section_names(conf);
    ERR_pop_to_mark();

    ks.pctx = pctx;
    ks.get = get;
    ks.file = file;
    ks.unknown = 0;
    ks.n = 0;
    for (i = 0; i < sk_OPENSSL_CSTRING_num(sects); i++)
        section_names(conf,
                      NCONF_get_section(conf,
                                        sk_OPENSSL_CSTRING_value(sects, i)),
                      NULL, 0, &ks);
    scan_flush(&ks);
    sk_OPENSSL_CSTRING_free(sects);
    NCONF_free(conf);
    OPENSSL_free(file);
    return !ks.unknown;
}

/* The provider's section: every problem is raised, so one start names all. */
static int read_config(KC_PROVCTX *pctx, OSSL_FUNC_core_get_params_fn *get)
{
    /* the registry's configuration keys, each once: the row that has it first */
    int keyrow[KC_REGISTRY_ROWS];
    char *val[KC_REGISTRY_ROWS] = { NULL };
    char *size = NULL, *ttl = NULL, *admit = NULL;
    char *name = NULL, *prefer = NULL;
    OSSL_PARAM p[5 + KC_REGISTRY_ROWS + 1];
    uint64_t n;
    size_t i, nkeys = 0;
    int ok = 1, on, j, r;

    pctx->cache_size = KEYCACHE_DEFAULT_CACHE_SIZE;
    pctx->idle_ttl = 0;
    pctx->admit_after = KEYCACHE_DEFAULT_ADMIT_AFTER;
    for (r = 0; r < KC_REGISTRY_ROWS; r++) {
        *kc_registry_on(pctx, r) = kc_registry_auto(r);
        for (i = 0; i < nkeys; i++)
            if (strcmp(kc_registry[keyrow[i]].conf, kc_registry[r].conf) == 0)
                break;
        if (i == nkeys)
            keyrow[nkeys++] = r;
    }
    if (get == NULL)
        return 1;
    p[0] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_CACHE_SIZE, &size, 0);
    p[1] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_IDLE_TTL, &ttl, 0);
    p[2] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_ADMIT_AFTER, &admit, 0);
    p[3] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_CORE_PROV_NAME,
                                         &name, 0);
    p[4] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_PREFER, &prefer, 0);
    for (i = 0; i < nkeys; i++)
        p[5 + i] = OSSL_PARAM_construct_utf8_ptr(kc_registry[keyrow[i]].conf,
                                                 &val[i], 0);
    p[5 + i] = OSSL_PARAM_construct_end();
    if (!get(pctx->handle, p))
        return 1;
    if (name != NULL)
        pctx->name = name;
    if (size != NULL) {
        if (parse_uint(size, KEYCACHE_MAX_CACHE_SIZE, &n)) {
            pctx->cache_size = (size_t)n;
        } else {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want a whole "
                     "number from 0 to %d (default %d)",
                     KEYCACHE_CONF_CACHE_SIZE, size, KEYCACHE_MAX_CACHE_SIZE,
                     KEYCACHE_DEFAULT_CACHE_SIZE);
            ok = 0;
        }
    }
    /* a family's key: auto (its rows' own rule), or on or off for them all */
    for (i = 0; i < nkeys; i++) {
        const KC_FAMILY_ROW *k = &kc_registry[keyrow[i]];
        int is_auto = 0;

        if (val[i] == NULL)
            continue;
        if (k->kind != KC_KIND_HMAC && strcasecmp(val[i], "auto") == 0) {
            is_auto = 1;
        } else if (!parse_bool(val[i], &on)) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want %s"
                     KC_BOOL_WORDS, k->conf, val[i],
                     k->kind != KC_KIND_HMAC ? "auto, " : "");
            ok = 0;
            continue;
        }
        for (j = keyrow[i]; j < KC_REGISTRY_ROWS; j++)
            if (strcmp(kc_registry[j].conf, k->conf) == 0)
                *kc_registry_on(pctx, j) = is_auto ? kc_registry_auto(j) : on;
    }
    if (ttl != NULL) {
        if (parse_uint(ttl, UINT32_MAX, &n)) {
            pctx->idle_ttl = n;
        } else {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want seconds, a "
                     "whole number from 0 (no limit) to %lu",
                     KEYCACHE_CONF_IDLE_TTL, ttl, (unsigned long)UINT32_MAX);
            ok = 0;
        }
    }
    if (admit != NULL) {
        if (parse_uint(admit, KEYCACHE_MAX_ADMIT_AFTER, &n) && n > 0) {
            pctx->admit_after = (unsigned int)n;
        } else {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want a whole "
                     "number from 1 to %d (default %d)",
                     KEYCACHE_CONF_ADMIT_AFTER, admit,
                     KEYCACHE_MAX_ADMIT_AFTER, KEYCACHE_DEFAULT_ADMIT_AFTER);
            ok = 0;
        }
    }
    /* never "on": default_properties in force (fips=yes) are never replaced */
    if (prefer != NULL) {
        if (strcasecmp(prefer, "if_unset") == 0) {
            pctx->prefer = 1;
        } else if (!parse_bool(prefer, &on) || on) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want if_unset or "
                     "off (also no, false, 0)", KEYCACHE_CONF_PREFER, prefer);
            ok = 0;
        }
    }
    return check_unknown_keys(pctx, get) && ok;
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
        return pctx->hmac_on && kc_passthrough_ready(pctx) ? pctx->rand_algs
                                                           : NULL;
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
    if (!read_config(pctx, core_get_params))
        goto err;
    /* follow the application's default properties when they matter */
    if ((pctx->prefer || kc_debug_level(pctx) > 0)
        && !kc_props_start(pctx, in) && pctx->prefer) {
        kc_raise(pctx, KC_R_INIT_FAILED, "prefer = if_unset: the core "
                 "offers no way to see the default properties in force");
        goto err;
    }
    if (!kc_cache_start(pctx)
        || !kc_bind_start(pctx))
        goto err;
    pctx->hmac_alg.stat = KC_STAT_HMAC;
    pctx->timed = pctx->idle_ttl != 0 || kc_debug_interval(pctx) != 0;
    if (pctx->props_registered && kc_debug_level(pctx) > 1) {
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
