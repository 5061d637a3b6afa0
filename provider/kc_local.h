/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - internal declarations shared by the provider's sources.
 *
 * provider/keycache_prov.c  provider entry point, config, counters
 * provider/inner.c          private library context holding `default`,
 *                           and the inner dispatch tables we wrap
 * provider/rand.c           that context's RAND: the application's
 * provider/cache.c          per-thread key -> keyed inner context cache
 * provider/hmac.c           the HMAC wrapper
 * provider/aes_gcm.c        the AES-{128,192,256}-GCM wrappers
 * provider/passthrough.c    the default's KDFs and HMAC-DRBG, kept where
 *                           their inner MACs cannot reach keycache
 * provider/debug.c          KEYCACHE_DEBUG: reports for operators
 */
#ifndef KC_LOCAL_H
#define KC_LOCAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "keycache.h"

/* the build passes the project version */
#ifndef KC_VERSION_STR
# define KC_VERSION_STR "0.1.0"
#endif

typedef struct kc_provctx_st KC_PROVCTX;
typedef struct kc_cache_st KC_CACHE;

/* ---- inner (default provider) dispatch, see inner.c ---- */

typedef struct {
    OSSL_FUNC_mac_newctx_fn *newctx;
    OSSL_FUNC_mac_dupctx_fn *dupctx;
    OSSL_FUNC_mac_freectx_fn *freectx;
    OSSL_FUNC_mac_init_fn *init;
    OSSL_FUNC_mac_update_fn *update;
    OSSL_FUNC_mac_final_fn *final;
    OSSL_FUNC_mac_gettable_params_fn *gettable_params;
    OSSL_FUNC_mac_get_params_fn *get_params;
    OSSL_FUNC_mac_gettable_ctx_params_fn *gettable_ctx_params;
    OSSL_FUNC_mac_get_ctx_params_fn *get_ctx_params;
    OSSL_FUNC_mac_settable_ctx_params_fn *settable_ctx_params;
    OSSL_FUNC_mac_set_ctx_params_fn *set_ctx_params;
} KC_MAC_FNS;

typedef struct {
    OSSL_FUNC_cipher_newctx_fn *newctx;
    OSSL_FUNC_cipher_dupctx_fn *dupctx;
    OSSL_FUNC_cipher_freectx_fn *freectx;
    OSSL_FUNC_cipher_encrypt_init_fn *einit;
    OSSL_FUNC_cipher_decrypt_init_fn *dinit;
    OSSL_FUNC_cipher_update_fn *update;
    OSSL_FUNC_cipher_final_fn *final;
    OSSL_FUNC_cipher_cipher_fn *cipher;
    OSSL_FUNC_cipher_get_params_fn *get_params;
    OSSL_FUNC_cipher_get_ctx_params_fn *get_ctx_params;
    OSSL_FUNC_cipher_set_ctx_params_fn *set_ctx_params;
    OSSL_FUNC_cipher_gettable_params_fn *gettable_params;
    OSSL_FUNC_cipher_gettable_ctx_params_fn *gettable_ctx_params;
    OSSL_FUNC_cipher_settable_ctx_params_fn *settable_ctx_params;
} KC_CIPHER_FNS;

/*
 * What a cache entry's context is: the inner algorithm it belongs to and how
 * to free it.  Entries match only when their KC_ALG pointers are equal.
 */
typedef struct {
    const char *names;        /* the default provider's name string */
    void (*freectx)(void *);  /* inner free, which cleanses key material */
    unsigned int spare_max;   /* used contexts an entry keeps for reuse */
    unsigned int stat;        /* counter slot, KC_STAT_* */
} KC_ALG;

/*
 * The most used contexts any entry keeps (KC_ALG.spare_max); a thread keeps
 * no more spares in all than it has entries (cache_size).
 */
#define KC_SPARE_MAX 8

/* A digest the inner HMAC accepts, resolved once at provider start. */
typedef struct {
    EVP_MD *md;               /* fetched from the private library context */
    const char *name;         /* canonical name, replayed into inner ctxs */
    size_t size;              /* output size, what HMAC's "size" reports */
    int block_size;
} KC_DIGEST;

/*
 * Keeps a wrapper's rarely taken path out of line, so that the path it
 * forwards on every call needs no stack frame.
 */
#if defined(__GNUC__)
# define KC_NOINLINE __attribute__((noinline))
#else
# define KC_NOINLINE
#endif

#define KC_GCM_128 0
#define KC_GCM_192 1
#define KC_GCM_256 2
#define KC_GCM_COUNT 3

typedef struct {
    KC_ALG alg;
    KC_CIPHER_FNS fns;
    size_t keylen;
    const char *names;
    /* a fresh context's tag length, asked at start (0: unknown) */
    size_t fresh_taglen;
} KC_GCM_INNER;

/* Counters kept per thread; only the owning thread writes them. */
typedef struct {
    uint64_t hits, misses, evictions, passthrough;
} KC_COUNTERS;

/*
 * Counters are kept per algorithm (KC_ALG.stat), for KEYCACHE_DEBUG's
 * reports; the provider's counter parameters are their sums.
 */
#define KC_STAT_OTHER 0       /* not attributed to an algorithm */
#define KC_STAT_HMAC 1
#define KC_STAT_GCM 2         /* + KC_GCM_128, _192, _256 */
#define KC_STAT_SLOTS (KC_STAT_GCM + KC_GCM_COUNT)

typedef struct kc_debug_st KC_DEBUG;

struct kc_provctx_st {
    const OSSL_CORE_HANDLE *handle;
    OSSL_LIB_CTX *app_libctx;
    OSSL_FUNC_core_thread_start_fn *core_thread_start;
    OSSL_FUNC_core_new_error_fn *core_new_error;
    OSSL_FUNC_core_set_error_debug_fn *core_set_error_debug;
    OSSL_FUNC_core_vset_error_fn *core_vset_error;
    const char *name;         /* the provider's name, as the core knows it */
    KC_DEBUG *dbg;            /* KEYCACHE_DEBUG, NULL when unset */
    int started;              /* OSSL_provider_init() succeeded */

    /* configuration */
    size_t cache_size;
    int hmac_on, gcm_on;
    uint64_t idle_ttl;        /* seconds, 0 = never expire */
    int timed;                /* idle_ttl or periodic reports: check time */
    unsigned int admit_after; /* keyed inits before a key is cached */

    /* the wrapped default provider */
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *deflt;
    OSSL_PROVIDER *rand_prov;  /* the application's RAND, see rand.c */
    void *inner_provctx;
    KC_ALG hmac_alg;
    KC_MAC_FNS hmac;
    const char *hmac_names;
    KC_GCM_INNER gcm[KC_GCM_COUNT];
    KC_DIGEST *digests;
    size_t ndigests;
    OSSL_ALGORITHM mac_algs[2];
    OSSL_ALGORITHM cipher_algs[KC_GCM_COUNT + 1];
    /* pass-through KDFs and DRBGs, see passthrough.c */
    struct kc_pt_st *pt;
    size_t npt;
    OSSL_ALGORITHM *kdf_algs, *rand_algs;

    /* registry of thread caches, under cache.c's registry lock */
    KC_PROVCTX *next_live;
    CRYPTO_THREAD_LOCAL tls;
    int tls_ok;
    KC_CACHE *caches;
    KC_COUNTERS retired[KC_STAT_SLOTS]; /* of caches already freed */
};

/*
 * keycache_prov.c: raise an error (and write it to KEYCACHE_DEBUG's log).
 * All of these happen while the provider starts, before the core would
 * register a provider's own reason strings, so they are raised with
 * libcrypto's registered reasons and say what went wrong in their text.
 */
#define KC_R_INIT_FAILED      1
#define KC_R_BAD_CONFIG       2
#define KC_R_INNER_MISSING    3
void kc_raise_at(KC_PROVCTX *pctx, int reason, const char *file, int line,
                 const char *fmt, ...);
#ifdef __FILE_NAME__
# define KC_FILE_NAME __FILE_NAME__
#else
# define KC_FILE_NAME "keycache"
#endif
#define kc_raise(pctx, reason, ...) \
    kc_raise_at(pctx, reason, KC_FILE_NAME, __LINE__, __VA_ARGS__)

/* debug.c: KEYCACHE_DEBUG=file:PATH,level:N,interval:S */
void kc_debug_init(KC_PROVCTX *pctx);
void kc_debug_start(KC_PROVCTX *pctx);
void kc_debug_stop(KC_PROVCTX *pctx);
int kc_debug_level(const KC_PROVCTX *pctx);
uint64_t kc_debug_interval(const KC_PROVCTX *pctx);
void kc_debug_log(KC_PROVCTX *pctx, int level, const char *fmt, ...);
/* from kc_cache_get() when pctx->timed: a periodic report if one is due */
void kc_debug_tick(KC_PROVCTX *pctx, time_t now);

/* inner.c */
int kc_names_start_with(const char *names, const char *first);
int kc_inner_start(KC_PROVCTX *pctx);
void kc_inner_stop(KC_PROVCTX *pctx);
const KC_DIGEST *kc_inner_digest(KC_PROVCTX *pctx, const EVP_MD *md);

/* rand.c: the private context's RAND is the application's */
int kc_rand_start(KC_PROVCTX *pctx);
void kc_rand_stop(KC_PROVCTX *pctx);

/* cache.c */
typedef struct {
    uint64_t cache_id;        /* 0 = not leased from any cache */
    uint64_t gen;
    uint32_t idx;
} KC_LEASE;

/* per-thread pools of freed wrapper structs, one per kind */
#define KC_POOL_HMAC 0
#define KC_POOL_GCM 1
#define KC_POOL_KINDS 2
#define KC_POOL_MAX 8
void *kc_wrapper_new(KC_PROVCTX *pctx, int kind, size_t size);
void kc_wrapper_free(KC_PROVCTX *pctx, int kind, void *p, size_t size);

int kc_cache_start(KC_PROVCTX *pctx);
void kc_cache_stop(KC_PROVCTX *pctx);
KC_CACHE *kc_cache_get(KC_PROVCTX *pctx);
void kc_cache_counters(KC_PROVCTX *pctx, KC_COUNTERS *sum, uint64_t *entries);
/* the same per algorithm, by[KC_STAT_SLOTS] */
void kc_cache_counters_by_alg(KC_PROVCTX *pctx, KC_COUNTERS *by,
                              uint64_t *entries);
/* Count a pass-through of alg in this thread's cache if any (never
 * creates one). */
void kc_count_passthrough(KC_PROVCTX *pctx, const KC_ALG *alg);
/* Per-thread memo of (name, properties) -> value, e.g. resolved digests. */
const void *kc_cache_memo_get(KC_CACHE *c, const char *name,
                              const char *props);
void kc_cache_memo_put(KC_CACHE *c, const char *name, const char *props,
                       const void *value);

/*
 * Per-thread side templates that hold no key material (say, an HMAC context
 * with a digest set and an empty key), found by a tag the caller chooses;
 * the cache frees them with the thread's cache.  A put may evict another.
 */
#define KC_AUX_SLOTS 8
void *kc_cache_aux_get(KC_CACHE *c, const void *tag);
void kc_cache_aux_put(KC_CACHE *c, const void *tag, void *ctx,
                      void (*freectx)(void *));

/* What a lookup found, and what kc_cache_add() and a later park need. */
typedef struct {
    KC_LEASE lease;           /* names the entry (hit or add) */
    uint64_t hash;            /* of the key, for kc_cache_add() */
    void *spare;              /* hit: a used context handed over, or NULL */
    int admit;                /* miss: cache this key now */
} KC_LOOKUP;

/*
 * Look up (alg, param, key).  On a hit returns the entry's keyed template,
 * which stays the cache's (duplicate it), and hands over a spare context
 * in lk->spare if the entry has one.  On a miss returns NULL and says in
 * lk->admit whether the key has now been seen often enough to be cached.
 */
void *kc_cache_find(KC_CACHE *c, const KC_ALG *alg, const void *param,
                    const unsigned char *key, size_t keylen, KC_LOOKUP *lk);
/*
 * After an admitted miss: cache tmpl (keyed, never used) for the key looked
 * up into lk.  The cache owns tmpl on success; returns 0 if nothing was
 * cached, and the caller keeps it.
 */
int kc_cache_add(KC_CACHE *c, const KC_ALG *alg, const void *param,
                 const unsigned char *key, size_t keylen, void *tmpl,
                 KC_LOOKUP *lk);
/*
 * Give a used context back to the entry the lease names, for a later hit
 * to reuse after a keyless re-init.  0 if it cannot be kept (entry gone,
 * another thread, spares full): the caller frees it.
 */
int kc_cache_park(KC_PROVCTX *pctx, const KC_LEASE *lease, void *ctx);

/* passthrough.c */
int kc_passthrough_start(KC_PROVCTX *pctx);
void kc_passthrough_stop(KC_PROVCTX *pctx);

/* the algorithm wrappers */
extern const OSSL_DISPATCH kc_hmac_functions[];
extern const OSSL_DISPATCH kc_aes128gcm_functions[];
extern const OSSL_DISPATCH kc_aes192gcm_functions[];
extern const OSSL_DISPATCH kc_aes256gcm_functions[];
void kc_gcm_bind(KC_PROVCTX *pctx);

#endif
