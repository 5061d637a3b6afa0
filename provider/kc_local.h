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
 * provider/tmpl.c           the template layer shared by the families below
 * provider/cmac.c           CMAC with AES-{128,192,256}-CBC
 * provider/gmac.c           GMAC with AES-{128,192,256}-GCM
 * provider/kmac.c           KMAC128 and KMAC256
 * provider/ctmpl.c          the template layer of the cipher families
 * provider/gcm.c            AES-{128,192,256}-GCM
 * provider/ocb.c            AES-{128,192,256}-OCB
 * provider/siv.c            AES-{128,192,256}-SIV
 * provider/passthrough.c    the default's KDFs and HMAC-DRBG, kept where
 *                           their inner MACs cannot reach keycache
 * provider/debug.c          KEYCACHE_DEBUG: reports for operators
 * provider/origin.c         who keyed a context: admissions only for the
 *                           application's own keys
 * provider/compat.c         what differs between OpenSSL versions
 * provider/early.c          what comes before libcrypto may be called:
 *                           the core's version, refusals, log lines
 * provider/loader.c         keycache.so, which starts the build for the
 *                           host's major version (a module of its own)
 */
#ifndef KC_LOCAL_H
#define KC_LOCAL_H

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
#include "kc_compat.h"
#include "kc_early.h"

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

/*
 * Makes a loaded value opaque to the compiler.  A call forwarded through a
 * wrapper's function table pins the function's load with it: gcc -O2
 * otherwise loads the context argument into a scratch register first and
 * moves it, an instruction more on every call of a reused context.
 */
#if defined(__GNUC__)
# define KC_PIN(v) __asm__("" : "+r"(v))
#else
# define KC_PIN(v) ((void)0)
#endif

/* ---- template families, see tmpl.c ---- */

#define KC_FAM_CMAC 0
#define KC_FAM_GMAC 1
#define KC_FAM_KMAC128 2
#define KC_FAM_KMAC256 3
#define KC_FAM_COUNT 4

/*
 * A record: the set_ctx_params calls a context got before its key, each
 * parameter as (name, type, size, bytes), so that it can be compared by
 * content, hashed and replayed onto another context (see tmpl.c).
 */
#define KC_TREC_MAX 384

/*
 * An item of a record: a marker that starts a call, or a parameter of that
 * call followed by its name and data (see tmpl.c).  Shared by the MAC
 * (tmpl.c) and cipher (ctmpl.c) template layers.
 */
typedef struct {
    uint16_t tag;             /* KC_T_* */
    uint16_t namelen;         /* with the NUL */
    uint32_t type;            /* OSSL_PARAM data_type, | KC_T_NULL */
    uint64_t size;            /* data_size */
} KC_TITEM;

#define KC_T_CALL 1           /* marker: set_ctx_params */
#define KC_T_PARAM 2          /* a parameter with its data */
#define KC_T_SIG 3            /* a parameter without its data */
#define KC_T_EINIT 4          /* marker: a keyless encrypt init */
#define KC_T_DINIT 5          /* marker: a keyless decrypt init */
#define KC_T_NULL 0x80000000u /* a parameter's data (a marker's params) NULL */

/* Can p be recorded?  Its name's length, or 0. */
size_t kc_trec_recordable(const OSSL_PARAM *p);
/*
 * Append a marker (p NULL) or p, whose name is namelen long, to buf (cap
 * bytes) at *len; 0 if it does not fit.
 */
int kc_trec_put(unsigned char *buf, size_t cap, size_t *len, int tag,
                const OSSL_PARAM *p, size_t namelen);
/* Decode the item at off into it (and p for a parameter); the next offset. */
size_t kc_trec_get(const unsigned char *buf, size_t off, KC_TITEM *it,
                   OSSL_PARAM *p);
/*
 * Does the item at off of rec (len bytes) record exactly this call: a
 * marker tag of type, then the params ps[0, n) with their data, and no
 * more?  The offset after it, or 0.
 */
size_t kc_trec_match_call(const unsigned char *rec, size_t off, size_t len,
                          int tag, uint32_t type,
                          const OSSL_PARAM *const *ps, size_t n);
/* The same with items of kind item: KC_T_PARAM, or KC_T_SIG (no data). */
size_t kc_trec_match_sig(const unsigned char *rec, size_t off, size_t len,
                         int tag, uint32_t type, int item,
                         const OSSL_PARAM *const *ps, size_t n);
/*
 * A process-wide slot that every instance's start may fill, from any
 * thread (library contexts start keycache concurrently): the first value
 * stays, and readers load it atomically.  Only for values that are the same
 * for every instance, or equally valid.
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
/* A fast hash over whole words, for records (which are not secrets). */
uint64_t kc_trec_hash(uint64_t h, const uint64_t *p, size_t nbytes);

/*
 * The newest error on the queue, to tell whether a call raised any: a call
 * that raised one leaves another newest error (OpenSSL 3.0 cannot count
 * errors since a mark).
 */
typedef struct {
    unsigned long code;
    const char *file, *func, *data;
    int line;
} KC_ERRTOP;
void kc_err_top(KC_ERRTOP *t);
int kc_err_same(const KC_ERRTOP *a, const KC_ERRTOP *b);

typedef struct kc_tdesc_st KC_TDESC;
typedef struct kc_tfam_st KC_TFAM;

/* the most zero bytes a family's park_scrub may ask for */
#define KC_SCRUB_MAX 32

/* What a family's file tells the shared layer: only what differs. */
struct kc_tdesc_st {
    const char *name;               /* the default's first name for it */
    const char *description;
    const OSSL_DISPATCH *functions; /* ours */
    /*
     * Parameter names a shape may hold for its template to be cached
     * (others are served uncached), and the volatile names: recorded apart
     * and replayed onto each copy after the key, so not part of the cache
     * key (GMAC's IV).  The default must process volatile names after the
     * key and after all other names of one set_ctx_params call, and keying
     * before or after them must end in the same state.
     */
    const char *const *shape_names;
    const char *const *volatile_names;
    /*
     * The parameter naming a cipher the default fetches (CMAC's, GMAC's;
     * its query is "properties" in the same call), or NULL.  A context
     * whose cipher only the application's library context resolves the
     * built-in default's way is served there (see tmpl.c).
     */
    const char *cipher_param;
    /*
     * Does a "key" parameter of set_ctx_params key the context the way
     * init with that key does (CMAC, GMAC)?  If not (KMAC only stores
     * it), such calls are passed through.
     */
    int set_key_keys;
    /*
     * Does each volatile call replace what an earlier one set, whatever
     * that was (GMAC's IV)?  Then only the last one is replayed.
     */
    int volatile_last_wins;
    /*
     * Does a keyless init bring a used context back to exactly the state
     * the key left, leaving nothing of its messages (CMAC, after
     * park_scrub)?  Then freed contexts that got nothing but updates,
     * finals and keyless inits are kept as spares, restarted by a keyless
     * init, and a hit takes one instead of copying the template.
     */
    int reinit_restores;
    /*
     * Zero bytes a given-back context is updated with before it is kept,
     * so that it holds nothing of the caller's message: the default wipes
     * a context the program frees, and CMAC keeps a message's last block
     * (32: whole or partial, it is overwritten) even through a keyless
     * init.  At most KC_SCRUB_MAX.
     */
    size_t park_scrub;
    /*
     * What the default's get_ctx_params reports as "size" for a context
     * keyed with a shape it caches and set nothing since (CMAC: the AES
     * block), so that EVP_MAC_final's query needs no call; 0 to ask.
     */
    size_t keyed_size;
    /*
     * Optional: may a template be cached for a valid record of names from
     * shape_names (say, the cipher it names)?  Asked once per thread and
     * record.
     */
    int (*cacheable)(KC_PROVCTX *pctx, const unsigned char *shape,
                     size_t len);
    /*
     * Optional (GMAC): keycache's own keyed context, which runs on the
     * default's ciphers named in direct_ciphers (bound at start into
     * KC_TFAM.ciph) instead of through the default's MAC, whose copies
     * take references on shared objects.  Templates are made by
     * direct_new() from a shape and key the default's own context took
     * quietly; a hit forwards to direct's functions, which answer every
     * call as the default's MAC would.
     */
    const KC_MAC_FNS *direct;
    const char *const *direct_ciphers;
    /* or the default's digest it runs on (KMAC's Keccak), bound in KC_TFAM */
    const char *direct_digest;
    void *(*direct_new)(KC_PROVCTX *pctx, const unsigned char *shape,
                        size_t len, const unsigned char *key, size_t keylen);
    /*
     * Optional: learn at start what the running default does where
     * versions differ (KC_TFAM.quirks); 0 keeps the family off direct.
     */
    int (*direct_bind)(KC_PROVCTX *pctx, KC_TFAM *f);
};

/* the most ciphers a direct family runs on */
#define KC_TFAM_CIPHERS 3

/* A family as bound to the running default provider. */
struct kc_tfam_st {
    const KC_TDESC *d;
    KC_ALG alg;
    KC_MAC_FNS mac;
    int on;                         /* offered: the config says so */
    /* learned at start: set_ctx_params(NULL) and (empty) return 1 quietly */
    int null_set_ok, empty_set_ok;
    /* learned at start: the record memo's value of the empty shape */
    int empty_value;
    /* learned at start: what get_params (no context) says "size" is, or 0 */
    size_t fixed_size;
    /* d->direct is in use: every cipher it names was found complete */
    int direct_on;
    KC_CIPHER_FNS ciph[KC_TFAM_CIPHERS];
    KC_DIGEST_FNS dig;
    size_t dig_block, dig_size;     /* its block and output sizes */
    unsigned int quirks;            /* what direct_bind learned */
    /* learned at the first repeated name, see kc_tmac_repeats_fail() */
    int repeats;
    /* learned at first use yet?  See kc_tfam_ready() */
    long direct_state;
};

extern const KC_TDESC kc_cmac_desc, kc_gmac_desc, kc_kmac128_desc,
    kc_kmac256_desc;

/*
 * Does the running default's set_ctx_params of a family that takes a
 * cipher (CMAC, GMAC) fail a call naming a parameter twice, setting
 * nothing (OpenSSL 4's decoders), rather than take the first (3.x)?
 * Asked of the default at the first such call, then kept.
 */
int kc_tmac_repeats_fail(KC_PROVCTX *pctx, const KC_TFAM *f);

/* ---- cipher template families, see ctmpl.c ---- */

#define KC_CFAM_OCB128 0
#define KC_CFAM_OCB192 1
#define KC_CFAM_OCB256 2
#define KC_CFAM_SIV128 3
#define KC_CFAM_SIV192 4
#define KC_CFAM_SIV256 5
#define KC_CFAM_GCM128 6
#define KC_CFAM_GCM192 7
#define KC_CFAM_GCM256 8
#define KC_CFAM_COUNT 9

typedef struct kc_cfam_st KC_CFAM;

/* What a cipher family's file tells the shared layer. */
typedef struct {
    const char *name;               /* the default's first name for it */
    const char *description;
    const OSSL_DISPATCH *functions; /* ours */
    /*
     * Parameter names a call before the key may hold to be recorded as
     * part of the shape (OCB: the IV and tag lengths); others, and those
     * per_message() says carry a message's data, are passed through.
     */
    const char *const *shape_names;
    int (*per_message)(const OSSL_PARAM *p);
    /* Does the default's key set-up depend on the direction (OCB)? */
    int key_by_direction;
    /*
     * Are per-message params (an expected tag) and an IV given before the
     * key recorded as volatile calls, replayed onto each keyed copy
     * instead of being part of the cache key (GCM)?  Keying must then
     * leave what they set alone.  Otherwise such calls pass through.
     */
    int volatile_ok;
    /*
     * Does an "ivlen" set_ctx_params the default accepts give the context
     * that IV length (GCM)?  Then a context keyed from the cache without
     * an IV answers EVP's IV-length query before its IV init itself
     * (ctmpl.c, "Just keyed").
     */
    int ivlen_set_sets;
    /*
     * Keyed contexts of keycache's own (AES-SIV), instead of copies of the
     * default's: run on the default's ciphers named in direct_ciphers
     * (bound at start into KC_CFAM.sub), made unkeyed by direct_new() and
     * then given the same calls a default context gets.  direct_bind()
     * learns what versions differ in (KC_CFAM.quirks); 0 keeps the family
     * on the default's contexts.
     */
    const KC_CIPHER_FNS *direct;
    const char *const *direct_ciphers;
    void *(*direct_new)(KC_PROVCTX *pctx, const KC_CFAM *f);
    int (*direct_bind)(KC_PROVCTX *pctx, KC_CFAM *f);
    /*
     * Does an empty parameter array change the default's context (AES-SIV:
     * it reopens the final on some releases)?  Then a keyless init with
     * one is passed through, not taken for a change of direction alone.
     */
    int empty_set_acts;
} KC_CDESC;

/* the most ciphers a direct cipher family runs on */
#define KC_CFAM_SUBS 2

/* A cipher family as bound to the running default provider. */
struct kc_cfam_st {
    const KC_CDESC *d;
    /* what entries are: [1] keyed to encrypt (or either way), [0] decrypt */
    KC_ALG alg[2];
    KC_CIPHER_FNS fns;
    /* a keyed context's functions: d->direct's once bound, else fns */
    const KC_CIPHER_FNS *kfns;
    KC_CIPHER_FNS sub[KC_CFAM_SUBS];
    unsigned int quirks;            /* what direct_bind learned */
    int on;                         /* offered: the config says so */
    size_t keylen;                  /* the one the default accepts */
    int empty_value;                /* what a fresh context is (ctmpl.c) */
    int draws_iv;                   /* an IV drawn at an IV-less init (4.x GCM) */
    long direct_state;              /* see kc_cfam_ready() */
};

extern const KC_CDESC kc_ocb_desc[3], kc_siv_desc[3], kc_gcm_desc[3];

/*
 * ciphers passed through: AES-SIV, which keys a CMAC inside, or, with the
 * EVP_SKEY key managers, every default cipher keycache does not wrap
 */
#define KC_PT_CIPHERS 192

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

    /* the default properties in force in app_libctx, see props.c */
    pthread_mutex_t props_lock;
    int props_lock_ok, props_registered, props_lost;
    char *props;              /* a copy, under props_lock */
    OSSL_FUNC_provider_deregister_child_cb_fn *props_dereg;

    /* the wrapped default provider */
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *deflt;
    OSSL_PROVIDER *rand_prov;  /* the application's RAND, see rand.c */
    void *inner_provctx;
    KC_ALG hmac_alg;
    KC_MAC_FNS hmac;
    const char *hmac_names;
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
    OSSL_ALGORITHM *kdf_algs, *rand_algs, *cipher_pt_algs;
    OSSL_ALGORITHM *skeymgmt_algs;  /* 3.5+, with cipher_pt_algs */

    /* registry of thread caches, under cache.c's registry lock */
    KC_PROVCTX *next_live;
    CRYPTO_THREAD_LOCAL tls;
    int tls_ok;
    KC_CACHE *caches;
    KC_COUNTERS retired[KC_STAT_SLOTS]; /* of caches already freed */
    struct kc_shared_st *shared; /* shared by its threads (cache.c) */
    uint64_t inst;              /* this instance's number, never reused */
    /* for the report (debug.c): see kc_cache_lost() */
    uint64_t threads_cached, threads_admitted, fork_wiped;
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

/* props.c: the application's default properties */
int kc_props_start(KC_PROVCTX *pctx, const OSSL_DISPATCH *in);
void kc_props_stop(KC_PROVCTX *pctx);
int kc_props_get(KC_PROVCTX *pctx, char *buf, size_t len);
int kc_props_prefer(KC_PROVCTX *pctx);

/* inner.c */
int kc_names_start_with(const char *names, const char *first);
int kc_inner_start(KC_PROVCTX *pctx);
void kc_inner_stop(KC_PROVCTX *pctx);
/*
 * What a family learns of the default by trying it (its own keyed
 * contexts' checks, d->direct_bind(): GMAC, KMAC, AES-SIV; a fresh MAC
 * context's no-op calls) is learned at its first context, not at start:
 * it costs millions of instructions that a process never using the family
 * must not pay.  Every wrapper but a cold one is made after the gate
 * below, so whose functions keyed contexts run on (direct_on, kfns, the
 * entries' free) never changes under one.  Another thread of the process
 * waits while one learns; 0 only if asked again from inside that learning
 * (a cold context, the default's, then).
 */
#define KC_DIRECT_BOUND 2
int kc_inner_bind_tfam(KC_PROVCTX *pctx, const KC_TFAM *f);
int kc_inner_bind_cfam(KC_PROVCTX *pctx, const KC_CFAM *f);
static ossl_inline int kc_tfam_ready(KC_PROVCTX *pctx, const KC_TFAM *f)
{
    return __atomic_load_n(&f->direct_state, __ATOMIC_ACQUIRE)
           == KC_DIRECT_BOUND || kc_inner_bind_tfam(pctx, f);
}
static ossl_inline int kc_cfam_ready(KC_PROVCTX *pctx, const KC_CFAM *f)
{
    return __atomic_load_n(&f->direct_state, __ATOMIC_ACQUIRE)
           == KC_DIRECT_BOUND || kc_inner_bind_cfam(pctx, f);
}
const KC_DIGEST *kc_inner_digest(KC_PROVCTX *pctx, const EVP_MD *md);
/* the application's default's MACs, see inner.c */
int kc_inner_is_default(const KC_PROVCTX *pctx, const OSSL_PROVIDER *prov);
void *kc_inner_app_mac(KC_PROVCTX *pctx, const char *name,
                       OSSL_FUNC_mac_newctx_fn *newctx, EVP_MAC **mac);
EVP_CIPHER *kc_inner_cipher_fetch(KC_PROVCTX *pctx, const char *name,
                                  const char *props, int keep);

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
#define KC_POOL_TMPL 1
#define KC_POOL_CTMPL 2
#define KC_POOL_KINDS 3
#define KC_POOL_MAX 8
/*
 * A wrapper struct of size bytes from the thread's pool (or allocated), not
 * cleared; *cp (if cp) is the thread's cache or NULL, and *cold (if cold)
 * says whether this thread's hit rate is low (see the bypass in cache.c),
 * so that a new context of alg had better not look up at all - no for one
 * context in 32, which keeps the hit rate measured; a yes is counted as a
 * pass-through.  One look-up of the thread's cache for all of it.  Callers
 * use the kc_wrapper_new*() below, which clear the struct (or its first
 * head bytes) where the size is known at compile time.
 */
void *kc_wrapper_take(KC_PROVCTX *pctx, int kind, size_t size,
                      const KC_ALG *alg, int *cold, KC_CACHE **cp);

static ossl_inline void *kc_wrapper_new_cold(KC_PROVCTX *pctx, int kind,
                                             size_t size, size_t head,
                                             const KC_ALG *alg, int *cold)
{
    void *p = kc_wrapper_take(pctx, kind, size, alg, cold, NULL);

    if (p != NULL)
        memset(p, 0, head);
    return p;
}

/* zeroing the first head bytes (the rest is written before it is read) */
static ossl_inline void *kc_wrapper_new_in(KC_PROVCTX *pctx, int kind,
                                           size_t size, size_t head,
                                           KC_CACHE **cp)
{
    void *p = kc_wrapper_take(pctx, kind, size, NULL, NULL, cp);

    if (p != NULL)
        memset(p, 0, head);
    return p;
}

static ossl_inline void *kc_wrapper_new_head(KC_PROVCTX *pctx, int kind,
                                             size_t size, size_t head)
{
    void *p = kc_wrapper_take(pctx, kind, size, NULL, NULL, NULL);

    if (p != NULL)
        memset(p, 0, head);
    return p;
}

static ossl_inline void *kc_wrapper_new(KC_PROVCTX *pctx, int kind,
                                        size_t size)
{
    return kc_wrapper_new_head(pctx, kind, size, size);
}

void kc_wrapper_free(KC_PROVCTX *pctx, int kind, void *p, size_t size);
/*
 * The thread's cache (or its record, cache.c's KC_LITE) if it has one
 * (never creates one), for freectx: one look-up serves kc_cache_park_in()
 * and kc_wrapper_free_in() both.
 */
KC_CACHE *kc_cache_here(KC_PROVCTX *pctx);
void kc_wrapper_free_in(KC_CACHE *c, int kind, void *p, size_t size);

int kc_cache_start(KC_PROVCTX *pctx);
void kc_cache_stop(KC_PROVCTX *pctx);
KC_CACHE *kc_cache_get(KC_PROVCTX *pctx);
void kc_cache_counters(KC_PROVCTX *pctx, KC_COUNTERS *sum, uint64_t *entries);
/*
 * What keycache could not help with in this process: threads that made a
 * cache, those of them that admitted a key, entries a forked child wiped.
 */
void kc_cache_lost(KC_PROVCTX *pctx, uint64_t *threads, uint64_t *admitted,
                   uint64_t *wiped);
/* the same per algorithm, by[KC_STAT_SLOTS] */
void kc_cache_counters_by_alg(KC_PROVCTX *pctx, KC_COUNTERS *by,
                              uint64_t *entries);
/* Count a pass-through of alg in this thread's cache if any (never
 * creates one). */
void kc_count_passthrough(KC_PROVCTX *pctx, const KC_ALG *alg);
/*
 * Is the entry a lease names still there (on c, the calling thread's
 * cache) and keyed with key?  Constant-time in the key.
 */
int kc_cache_lease_is(KC_CACHE *c, const KC_LEASE *lease,
                      const unsigned char *key, size_t keylen);
/* A hit served without the cache (a context re-keyed with its own key). */
void kc_count_hit(KC_PROVCTX *pctx, const KC_ALG *alg);
/* Constant-time: do the n bytes at a and b agree? */
int kc_key_equal(const unsigned char *a, const unsigned char *b, size_t n);
/*
 * Has alg missed on this cache's thread before (since it started, or since
 * fork() in a child)?  Counts this call as one.  Always no on a thread
 * that has no cache yet (it keeps nothing for a second miss).
 */
int kc_cache_missed_before(KC_CACHE *c, const KC_ALG *alg);
/* The instance's memo of (name, properties) -> value (resolved digests). */
const void *kc_cache_memo_get(KC_CACHE *c, const char *name,
                              const char *props);
void kc_cache_memo_put(KC_CACHE *c, const char *name, const char *props,
                       const void *value);
/*
 * The value last found or put, if its properties are empty and its name
 * fits in KC_HINT_NAME bytes with its NUL; the name is copied to name.
 */
#define KC_HINT_NAME 16
const void *kc_cache_memo_last(KC_CACHE *c, char name[KC_HINT_NAME]);
/*
 * The thread's last answer about a pair of strings (a[alen], b[blen], by
 * content) for owner, or -1 if that was another pair: a one-entry memo in
 * front of the record memo for what a new context asks every time.  Pairs
 * longer than KC_PAIR_HINT_MAX are not kept.  Not for secrets.
 */
#define KC_PAIR_HINT_MAX 32
int kc_cache_pair_hint(const KC_CACHE *c, const void *owner, const char *a,
                       size_t alen, const char *b, size_t blen);
void kc_cache_pair_hint_put(KC_CACHE *c, const void *owner, const char *a,
                            size_t alen, const char *b, size_t blen,
                            int value);

/*
 * Per-thread side templates that hold no key material (say, an HMAC context
 * with a digest set and an empty key), found by a tag the caller chooses;
 * the cache frees them with the thread's cache.  A put may evict another;
 * on a thread without a cache it keeps nothing (the caller still owns ctx:
 * kc_cache_aux_get() says whether it was kept).
 */
#define KC_AUX_SLOTS 8
void *kc_cache_aux_get(KC_CACHE *c, const void *tag);
void kc_cache_aux_put(KC_CACHE *c, const void *tag, void *ctx,
                      void (*freectx)(void *));

/* What a lookup found, and what kc_cache_add() and a later park need. */
typedef struct {
    /*
     * In: the context's record of the key it last counted towards
     * admission (0 for none), so that a key keyed again and again in one
     * context (a DRBG's, a program's single long-lived one) counts once.
     */
    uint64_t *counted;
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
 * The same for entries that also carry a record, compared by content
 * (reclen bytes; rechash is the record's hash, mixed into the key's).
 * The cache keeps a copy of the record.  An algorithm uses one kind of
 * lookup only.
 */
void *kc_cache_find_rec(KC_CACHE *c, const KC_ALG *alg,
                        const unsigned char *rec, size_t reclen,
                        uint64_t rechash, const unsigned char *key,
                        size_t keylen, KC_LOOKUP *lk);
int kc_cache_add_rec(KC_CACHE *c, const KC_ALG *alg, const unsigned char *rec,
                     size_t reclen, const unsigned char *key, size_t keylen,
                     void *tmpl, KC_LOOKUP *lk);
/*
 * Per-thread values learned about records (the bytes a + b, owned by
 * owner): kc_cache_rec_get() returns the value put, or -1 if none is known
 * (never put, or overwritten since).  Not for secrets.
 */
#define KC_REC_SLOTS 32
int kc_cache_rec_get(KC_CACHE *c, const void *owner, uint64_t hash,
                     const unsigned char *a, size_t alen,
                     const unsigned char *b, size_t blen);
void kc_cache_rec_put(KC_CACHE *c, const void *owner, uint64_t hash,
                      const unsigned char *a, size_t alen,
                      const unsigned char *b, size_t blen, int value);
/*
 * The record last found or put for owner, of one piece (pair 0) or of
 * two (pair 1): its bytes, the length of its first piece, its whole
 * length, hash and value; NULL if that was another owner's.
 */
const unsigned char *kc_cache_rec_last(KC_CACHE *c, const void *owner,
                                       int pair, size_t *alen, size_t *len,
                                       uint64_t *hash, int *value);
/*
 * Give a used context back to the entry the lease names in c
 * (kc_cache_here()'s, may be NULL) for a later hit.  Only if it can be
 * kept, ready(arg, ctx) first makes it what a hit takes (re-initialised
 * without a key, nothing of its messages left).  0 if it is not kept
 * (entry gone, another thread, spares full, ready failed): the caller
 * frees it.
 */
int kc_cache_park_in(KC_CACHE *c, const KC_LEASE *lease, void *ctx,
                     int (*ready)(const void *arg, void *ctx),
                     const void *arg);

/*
 * origin.c: was the context being keyed keyed by the application through
 * one of libcrypto's MAC or cipher entry points (1), or by OpenSSL's own
 * code - libssl, a KDF, a DRBG, a signature - or by a path it cannot read
 * (0)?  A cipher's key counts only from a cipher entry point, a MAC's from
 * a MAC one.  Asked before a key is admitted, never on a hit.
 */
int kc_origin_admits(const KC_PROVCTX *pctx, int cipher);
/*
 * Do a and b lie in the same loaded object?  (Its mapped extent, found
 * with dl_iterate_phdr: dladdr's symbol search costs far more.)
 */
int kc_same_object(const void *a, const void *b);
/* The file of the loaded object holding a (for messages), or "?". */
const char *kc_object_path(const void *a);

/* passthrough.c */
int kc_passthrough_start(KC_PROVCTX *pctx);
void kc_passthrough_stop(KC_PROVCTX *pctx);

/* the algorithm wrappers */
extern const OSSL_DISPATCH kc_hmac_functions[];

/* tmpl.c: the shared layer of the template families */
int kc_tmpl_bind(KC_PROVCTX *pctx, KC_TFAM *f, const OSSL_ALGORITHM *alg);
void kc_tmpl_first_use(KC_PROVCTX *pctx, KC_TFAM *f);
void *kc_tmac_newctx(KC_PROVCTX *pctx, int which);
OSSL_FUNC_mac_dupctx_fn kc_tmac_dupctx;
OSSL_FUNC_mac_freectx_fn kc_tmac_freectx;
OSSL_FUNC_mac_init_fn kc_tmac_init;
OSSL_FUNC_mac_update_fn kc_tmac_update;
OSSL_FUNC_mac_final_fn kc_tmac_final;
OSSL_FUNC_mac_get_ctx_params_fn kc_tmac_get_ctx_params;
OSSL_FUNC_mac_set_ctx_params_fn kc_tmac_set_ctx_params;
const OSSL_PARAM *kc_tmac_gettable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tmac_settable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tmac_gettable_params(KC_PROVCTX *pctx, int which);
/*
 * get_params (no provider context): the inner's, with a lone size_t "size"
 * query answered from what it said at start.
 */
int kc_tmac_get_params(int which, OSSL_PARAM params[]);
/* Replay a record's calls rec[0, len) onto ctx with m's set_ctx_params. */
int kc_trec_replay(const unsigned char *rec, size_t len, const KC_MAC_FNS *m,
                   void *ctx);
/*
 * For a family's cacheable(): the last UTF-8 parameter |name| of a record,
 * and the UTF-8 parameter |with| of the same call (NULL if absent there).
 * Returns 0 if the record has no such parameter.
 */
int kc_trec_last_utf8(const unsigned char *rec, size_t len, const char *name,
                      const char *with, const char **value,
                      const char **with_value);
/* ctmpl.c: the shared layer of the cipher families */
int kc_ctmpl_bind(KC_PROVCTX *pctx, KC_CFAM *f, const OSSL_ALGORITHM *alg);
void kc_ctmpl_keyed_fns(KC_CFAM *f, const KC_CIPHER_FNS *k);
void *kc_tciph_newctx(KC_PROVCTX *pctx, int which);
OSSL_FUNC_cipher_dupctx_fn kc_tciph_dupctx;
OSSL_FUNC_cipher_freectx_fn kc_tciph_freectx;
OSSL_FUNC_cipher_encrypt_init_fn kc_tciph_einit;
OSSL_FUNC_cipher_decrypt_init_fn kc_tciph_dinit;
OSSL_FUNC_cipher_update_fn kc_tciph_update;
OSSL_FUNC_cipher_final_fn kc_tciph_final;
OSSL_FUNC_cipher_cipher_fn kc_tciph_cipher;
OSSL_FUNC_cipher_get_ctx_params_fn kc_tciph_get_ctx_params;
OSSL_FUNC_cipher_set_ctx_params_fn kc_tciph_set_ctx_params;
const OSSL_PARAM *kc_tciph_gettable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tciph_settable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tciph_gettable_params(KC_PROVCTX *pctx, int which);
int kc_tciph_get_params(int which, OSSL_PARAM params[]);

/*
 * A cipher family's per-key-size entry points and dispatch table: the
 * shared layer's functions with the family's index bound in.
 */
#define KC_TCIPH_IMPL(prefix, which)                                          \
    static OSSL_FUNC_cipher_newctx_fn prefix##_newctx;                        \
    static OSSL_FUNC_cipher_get_params_fn prefix##_get_params;                \
    static OSSL_FUNC_cipher_gettable_params_fn prefix##_gettable_params;      \
    static OSSL_FUNC_cipher_gettable_ctx_params_fn prefix##_gettable_ctx;     \
    static OSSL_FUNC_cipher_settable_ctx_params_fn prefix##_settable_ctx;     \
    static void *prefix##_newctx(void *provctx)                               \
    {                                                                         \
        return kc_tciph_newctx(provctx, which);                               \
    }                                                                         \
    static int prefix##_get_params(OSSL_PARAM params[])                       \
    {                                                                         \
        return kc_tciph_get_params(which, params);                            \
    }                                                                         \
    static const OSSL_PARAM *prefix##_gettable_params(void *provctx)          \
    {                                                                         \
        return kc_tciph_gettable_params(provctx, which);                      \
    }                                                                         \
    static const OSSL_PARAM *prefix##_gettable_ctx(void *cctx, void *provctx) \
    {                                                                         \
        return kc_tciph_gettable_ctx_params(provctx, which);                  \
    }                                                                         \
    static const OSSL_PARAM *prefix##_settable_ctx(void *cctx, void *provctx) \
    {                                                                         \
        return kc_tciph_settable_ctx_params(provctx, which);                  \
    }                                                                         \
    static const OSSL_DISPATCH prefix##_functions[] = {                       \
        { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void))prefix##_newctx },         \
        { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void))kc_tciph_freectx },       \
        { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void))kc_tciph_dupctx },         \
        { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void))kc_tciph_einit },    \
        { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void))kc_tciph_dinit },    \
        { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void))kc_tciph_update },         \
        { OSSL_FUNC_CIPHER_FINAL, (void (*)(void))kc_tciph_final },           \
        { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void))kc_tciph_cipher },         \
        { OSSL_FUNC_CIPHER_GET_PARAMS, (void (*)(void))prefix##_get_params }, \
        { OSSL_FUNC_CIPHER_GETTABLE_PARAMS,                                   \
          (void (*)(void))prefix##_gettable_params },                         \
        { OSSL_FUNC_CIPHER_GET_CTX_PARAMS,                                    \
          (void (*)(void))kc_tciph_get_ctx_params },                          \
        { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,                               \
          (void (*)(void))prefix##_gettable_ctx },                            \
        { OSSL_FUNC_CIPHER_SET_CTX_PARAMS,                                    \
          (void (*)(void))kc_tciph_set_ctx_params },                          \
        { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,                               \
          (void (*)(void))prefix##_settable_ctx },                            \
        { 0, NULL }                                                           \
    };

/*
 * Does the cipher |name| (with properties) resolve, in the application's
 * library context, to one of |names| that the private default has?
 */
int kc_cipher_is_one_of(KC_PROVCTX *pctx, const char *name,
                        const char *props, const char *const *names);

#endif
