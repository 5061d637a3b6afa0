/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - what every layer shares: the provider context, the default's
 * function tables, a cache entry's algorithm, small helpers.  The layers,
 * bottom up; an include or call only points down (test/check_layers.py):
 *
 *   early/ common/ quirks/ diag/ cache/ inner/ layer/ families/ core/
 *
 * docs/architecture.md says what each holds.
 */
#ifndef KC_COMMON_H
#define KC_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "keycache.h"
#include "early/early.h"
#include "common/registry.h"

/* the build passes the project version */
#ifndef KC_VERSION_STR
# define KC_VERSION_STR "0.1.0"
#endif

typedef struct kc_provctx_st KC_PROVCTX;
typedef struct kc_cache_st KC_CACHE;

/* ---- the default provider's functions, loaded by inner.c ---- */

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

typedef struct {
    OSSL_FUNC_digest_newctx_fn *newctx;
    OSSL_FUNC_digest_dupctx_fn *dupctx;
    OSSL_FUNC_digest_freectx_fn *freectx;
    OSSL_FUNC_digest_init_fn *init;
    OSSL_FUNC_digest_update_fn *update;
    OSSL_FUNC_digest_final_fn *final;
    OSSL_FUNC_digest_get_params_fn *get_params;
    OSSL_FUNC_digest_set_ctx_params_fn *set_ctx_params;
} KC_DIGEST_FNS;

/* A cache entry's algorithm; entries match only if these pointers do. */
typedef struct {
    const char *names;        /* the default provider's name string */
    void (*freectx)(void *);  /* inner free, which cleanses key material */
    unsigned int spare_max;   /* used contexts an entry keeps for reuse */
    unsigned int stat;        /* counter slot, KC_STAT_* */
} KC_ALG;

/* the most spares an entry keeps; a thread's total is at most cache_size */
#define KC_SPARE_MAX 8

/* the largest block HMAC pads a key to (SHA3-224's) */
#define KC_HMAC_BLOCK_MAX 144

/* A digest of the default's, listed at the first digest asked for. */
typedef struct {
    EVP_MD *md;               /* the application's first of it, or NULL */
    const char *name;         /* first name, replayed into inner ctxs */
    size_t size;              /* output size, what HMAC's "size" reports */
    int block_size;
    /* the default's functions for it, loaded with the table (inner.c) */
    KC_DIGEST_FNS fns;
    int fns_ok;
    int key_hash;             /* kc_inner_digest_key(): 0 untried, 1, -1 */
    /* SHA-1, -2 or -3, fns complete: HMAC may run on fns (families/hmac.c) */
    int hmac_plain;
} KC_DIGEST;

/*
 * A rare path kept out of line: the forwarding path needs no frame.  And
 * a body shared by entry points, specialised into each (constant flags).
 */
#if defined(__GNUC__)
# define KC_NOINLINE __attribute__((noinline))
# define KC_INLINE_ALWAYS inline __attribute__((always_inline))
#else
# define KC_NOINLINE
# define KC_INLINE_ALWAYS ossl_inline
#endif

/*
 * Overwrites the KC_STACK_WIPE bytes of stack below the caller's frame,
 * where the calls it just made kept their locals: after a default's call
 * that leaves a copy of a key there (families/kmac.c).
 */
#define KC_STACK_WIPE 1024
void kc_stack_wipe(void);

/*
 * Zeroes the vector registers (x86-64; elsewhere nothing): after a keyed
 * init keycache served, whose copies of a cached context or key left key
 * bytes there that nothing may overwrite before a lazily bound program's
 * next symbol resolution saves them on its stack (docs/keys.md).
 */
void kc_vector_wipe(void);

/*
 * Makes a loaded value opaque: pinning a forwarded call's function load
 * saves gcc -O2 a register move of the context on every call.
 */
#if defined(__GNUC__)
# define KC_PIN(v) __asm__("" : "+r"(v))
#else
# define KC_PIN(v) ((void)0)
#endif

/*
 * A process-wide slot any instance's start may fill, from any thread: the
 * first value stays.  Only for values every instance finds alike.
 */
#define KC_PUBLISH_ONCE(slot, v)                                           \
    do {                                                                   \
        __typeof__(*(slot)) kc_unset_ = 0;                                 \
        __atomic_compare_exchange_n((slot), &kc_unset_, (v), 0,            \
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED);   \
    } while (0)

/* Is key the parameter name name?  (The first byte settles most.) */
static ossl_inline int kc_name_is(const char *key, const char *name)
{
    return key[0] == name[0] && strcmp(key, name) == 0;
}
/* Is name one of the NULL-terminated list (which may be NULL)? */
int kc_name_in_list(const char *const *list, const char *name);
/* Does the colon separated name list names start with first? */
int kc_names_start_with(const char *names, const char *first);

/*
 * Answer EVP_MAC_final's lone size_t "size" query, as OSSL_PARAM_set_size_t
 * would; 0 if params is something else.  Compared by hand: this is hot.
 */
static ossl_inline int kc_answer_size(OSSL_PARAM params[], size_t size)
{
    const char *k;

    if (params == NULL || (k = params[0].key) == NULL
        || params[1].key != NULL
        || params[0].data_type != OSSL_PARAM_UNSIGNED_INTEGER
        || params[0].data_size != sizeof(size_t) || params[0].data == NULL
        || k[0] != 's' || k[1] != 'i' || k[2] != 'z' || k[3] != 'e'
        || k[4] != '\0')
        return 0;
    *(size_t *)params[0].data = size;
    params[0].return_size = sizeof(size_t);
    return 1;
}

/* A new context of m, after init(key, params) to encrypt (enc) or not. */
void *kc_cipher_new_init(void *provctx, const KC_CIPHER_FNS *m, int enc,
                         const unsigned char *key, size_t keylen,
                         const OSSL_PARAM params[]);
/* Key t, a context of m, with 32 zero bytes and finish it: both done? */
int kc_mac_key_final(const KC_MAC_FNS *m, void *t);

/*
 * The newest error on the queue: a call that raised one leaves another
 * newest (OpenSSL 3.0 cannot count errors since a mark).
 */
typedef struct {
    unsigned long code;
    const char *file, *func, *data;
    int line;
} KC_ERRTOP;
void kc_err_top(KC_ERRTOP *t);
int kc_err_same(const KC_ERRTOP *a, const KC_ERRTOP *b);

/*
 * Run-once work one thread of the process claims: kc_once_claim() returns
 * 1 to the one that must do it (then kc_once_done()), the others wait; 0
 * when done, or when asked again from inside the claimer's own work.
 */
#define KC_ONCE_DONE 2
int kc_once_claim(long *state);
void kc_once_done(long *state);
/* claimed by a thread of another process: a fork() parent's, half done */
int kc_once_foreign(const long *state);

/* keep this module mapped for good (dlopen RTLD_NODELETE); 0: cannot */
int kc_module_pin(void);

#include "common/family.h"

/* ciphers passed through: AES-SIV, or with EVP_SKEY every one not wrapped */
#define KC_PT_CIPHERS 192

/* Counters kept per thread; only the owning thread writes them. */
typedef struct {
    uint64_t hits, misses, evictions, passthrough;
} KC_COUNTERS;

/* KC_ALG.stat's slots, for the reports; slot 0 is no algorithm's */
#define KC_STAT_HMAC 1
#define KC_STAT_FAM 2         /* + KC_FAM_* */
#define KC_STAT_CFAM (KC_STAT_FAM + KC_FAM_COUNT)  /* + KC_CFAM_* */
#define KC_STAT_SLOTS (KC_STAT_CFAM + KC_CFAM_COUNT)

typedef struct kc_debug_st KC_DEBUG;

struct kc_provctx_st {
    const OSSL_CORE_HANDLE *handle;
    OSSL_LIB_CTX *app_libctx;
    OSSL_FUNC_core_thread_start_fn *core_thread_start;
    OSSL_FUNC_core_new_error_fn *core_new_error;
    OSSL_FUNC_core_set_error_debug_fn *core_set_error_debug;
    OSSL_FUNC_core_vset_error_fn *core_vset_error;
    const char *name;         /* the provider's name, as the core knows it */
    const void *core_fn;      /* a core function: which libcrypto runs us */
    KC_DEBUG *dbg;            /* KEYCACHE_DEBUG, NULL when unset */
    int started;              /* OSSL_provider_init() succeeded */

    /* configuration */
    size_t cache_size;
    int hmac_on;
    uint64_t idle_ttl;        /* seconds, 0 = never expire */
    int timed;                /* idle_ttl or periodic reports: check time */
    unsigned int admit_after; /* keyed inits before a key is cached */
    int prefer;               /* prefer = if_unset, see props.c */
    int quirk_table;          /* known quirk words taken (learn.c), 1 */

    /* the default properties in force in app_libctx, see props.c */
    pthread_mutex_t props_lock, props_follow_lock;
    /* props_registered: 1, 0 not yet, -1 failed (props_follow) */
    int props_lock_ok, props_registered, props_lost;
    int props_seen;           /* props_cb() called once (props_lock) */
    /* bumped at each change of props: what fetches find may change too */
    unsigned int props_gen;
    char *props;              /* a copy, under props_lock */
    OSSL_FUNC_provider_register_child_cb_fn *props_reg;
    OSSL_FUNC_provider_deregister_child_cb_fn *props_dereg;
    int app_gone;              /* deactivated, maybe its context freed */
    /*
     * Follow props from now on (core/props.c): 1 if followed.  For layers
     * below core that remember what fetches find per props_gen.
     */
    int (*props_follow)(struct kc_provctx_st *pctx);

    /* the wrapped default provider, from the first query (bind.c) */
    long bind_state;
    int bind_ok;
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *deflt;
    OSSL_PROVIDER *rand_prov;  /* the application's RAND, see rand.c */
    void *inner_provctx;
    KC_ALG hmac_alg;
    KC_MAC_FNS hmac;
    KC_TFAM fam[KC_FAM_COUNT];
    KC_CFAM cfam[KC_CFAM_COUNT];
    KC_DIGEST *digests;
    size_t ndigests;
    long digests_state;         /* the table built yet? (inner.c) */
    OSSL_ALGORITHM mac_algs[KC_FAM_COUNT + 2];
    /* AES-OCB, SIV, GCM if on, then pass-through ciphers (cipher_pt_algs) */
    OSSL_ALGORITHM cipher_algs[KC_CFAM_COUNT + KC_PT_CIPHERS + 1];
    /* pass-through KDFs, DRBGs, key managers, see passthrough.c */
    struct kc_pt_st *pt;
    size_t npt;
    long pt_state;              /* built yet?  kc_passthrough_ready() */
    int pt_ok;
    size_t ncipher_wrapped;     /* cipher_algs' rows before pass-through */
    OSSL_ALGORITHM *kdf_algs, *rand_algs, *cipher_pt_algs;
    OSSL_ALGORITHM *skeymgmt_algs;  /* 3.5+, with cipher_pt_algs */
    EVP_MAC *kdf_pin;           /* the application's default, for KDFs */

    /* registry of thread caches, under store.c's registry lock */
    KC_PROVCTX *next_live;
    CRYPTO_THREAD_LOCAL tls;
    int tls_ok;
    KC_CACHE *caches;
    KC_CACHE *dying;            /* stopped threads' caches, not yet freed */
    KC_COUNTERS retired[KC_STAT_SLOTS]; /* of caches already freed */
    struct kc_shared_st *shared; /* shared by its threads (store.c) */
    uint64_t inst;              /* this instance's number, never reused */
    /* for the report (core/report.c): see kc_cache_lost() */
    uint64_t threads_cached, threads_admitted, fork_wiped;
};

/* The count of changes of the default properties heard (core/props.c). */
static ossl_inline unsigned int kc_props_gen(KC_PROVCTX *pctx)
{
    return __atomic_load_n(&pctx->props_gen, __ATOMIC_ACQUIRE);
}

#endif
