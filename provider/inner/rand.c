/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Randomness for the inner default, drawn from the application: the
 * private context's own DRBGs (GCM IVs, the TLS invocation field) would
 * hide the application's DRBG configuration and failures.  So a tiny
 * built-in provider there offers the DRBG type, generating with
 * RAND_bytes_ex() on the application's context, as the default would.
 *
 * Error queue: a failed EVP_RAND_generate() adds EVP_R_GENERATE_ERROR,
 * which the default's queue would not have; generate sets a mark and the
 * unlock EVP calls right after pops back to it.
 *
 * Lifetime: per-thread DRBGs are freed by a thread-stop handler that would
 * run on a freed private context in a thread outliving keycache.  So a
 * context whose other threads still hold DRBGs is parked, the module
 * pinned (the DRBGs' code is ours), and freed once those threads stopped.
 */
#include <pthread.h>
#include <stdint.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include "inner/inner.h"

#define KC_RAND_PROVIDER "keycache-rand"
#define KC_RAND_NAME "KEYCACHE-APP-RAND"
/* reported, not enforced: requests go on with their strength */
#define KC_RAND_STRENGTH 256

/* The built-in provider's context, one per private library context. */
typedef struct {
    OSSL_LIB_CTX *app;        /* where randomness comes from */
    uint64_t threads;         /* live per-thread DRBGs, atomic */
} KC_RAND_PROV;

typedef struct {
    KC_RAND_PROV *prov;
    CRYPTO_RWLOCK *lock;      /* only once locking is enabled (shared) */
    int state;
    int per_thread;           /* counted in prov->threads */
    int pop;                  /* a generate failed: drop what EVP adds */
} KC_RAND;

static const OSSL_DISPATCH kc_rand_functions[];

static void *kc_rand_newctx(void *provctx, void *parent,
                            const OSSL_DISPATCH *parent_calls)
{
    KC_RAND *r = OPENSSL_zalloc(sizeof(*r));

    if (r == NULL)
        return NULL;
    r->prov = provctx;
    r->state = EVP_RAND_STATE_UNINITIALISED;
    /* the primary's parent is the seed source; children of ours are not */
    r->per_thread = parent != NULL && parent_calls == kc_rand_functions;
    if (r->per_thread)
        __atomic_add_fetch(&r->prov->threads, 1, __ATOMIC_ACQ_REL);
    return r;
}

static void kc_rand_freectx(void *vctx)
{
    KC_RAND *r = vctx;

    if (r == NULL)
        return;
    if (r->per_thread)
        __atomic_sub_fetch(&r->prov->threads, 1, __ATOMIC_ACQ_REL);
    CRYPTO_THREAD_lock_free(r->lock);
    OPENSSL_free(r);
}

static int kc_rand_instantiate(void *vctx, unsigned int strength, int pr,
                               const unsigned char *pstr, size_t pstr_len,
                               const OSSL_PARAM params[])
{
    ((KC_RAND *)vctx)->state = EVP_RAND_STATE_READY;
    return 1;
}

static int kc_rand_uninstantiate(void *vctx)
{
    ((KC_RAND *)vctx)->state = EVP_RAND_STATE_UNINITIALISED;
    return 1;
}

static int kc_rand_generate(void *vctx, unsigned char *out, size_t outlen,
                            unsigned int strength, int pr,
                            const unsigned char *addin, size_t addin_len)
{
    KC_RAND *r = vctx;
    EVP_RAND_CTX *app;
    int ok;

    /* what RAND_bytes_ex() cannot express goes to the public DRBG */
    if (!pr && addin_len == 0)
        ok = RAND_bytes_ex(r->prov->app, out, outlen, strength) > 0;
    else
        ok = (app = RAND_get0_public(r->prov->app)) != NULL
             && EVP_RAND_generate(app, out, outlen, strength, pr, addin,
                                  addin_len);
    if (!ok) {
        /* an empty queue takes no mark: then popping empties it, as well */
        ERR_set_mark();
        r->pop = 1;
    }
    return ok;
}

static int kc_rand_reseed(void *vctx, int pr, const unsigned char *ent,
                          size_t ent_len, const unsigned char *addin,
                          size_t addin_len)
{
    /* nothing to reseed: the application's DRBGs reseed themselves */
    return 1;
}

static int kc_rand_enable_locking(void *vctx)
{
    KC_RAND *r = vctx;

    if (r->lock == NULL && (r->lock = CRYPTO_THREAD_lock_new()) == NULL)
        return 0;
    return 1;
}

static int kc_rand_lock(void *vctx)
{
    KC_RAND *r = vctx;

    return r->lock == NULL || CRYPTO_THREAD_write_lock(r->lock);
}

/* Called by EVP after every call on the DRBG, after its own errors. */
static void kc_rand_unlock(void *vctx)
{
    KC_RAND *r = vctx;

    if (r->pop) {
        r->pop = 0;
        ERR_pop_to_mark();
    }
    if (r->lock != NULL)
        CRYPTO_THREAD_unlock(r->lock);
}

static const OSSL_PARAM kc_rand_gettable[] = {
    OSSL_PARAM_int(OSSL_RAND_PARAM_STATE, NULL),
    OSSL_PARAM_uint(OSSL_RAND_PARAM_STRENGTH, NULL),
    OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM *kc_rand_gettable_ctx_params(void *vctx,
                                                     void *provctx)
{
    return kc_rand_gettable;
}

static int kc_rand_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_RAND *r = vctx;
    OSSL_PARAM *p;

    p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STATE);
    if (p != NULL && !OSSL_PARAM_set_int(p, r->state))
        return 0;
    p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STRENGTH);
    if (p != NULL && !OSSL_PARAM_set_uint(p, KC_RAND_STRENGTH))
        return 0;
    /* no chunking here: the application's DRBG chunks as it would anyway */
    p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_MAX_REQUEST);
    if (p != NULL && !OSSL_PARAM_set_size_t(p, SIZE_MAX))
        return 0;
    return 1;
}

static const OSSL_DISPATCH kc_rand_functions[] = {
    { OSSL_FUNC_RAND_NEWCTX, (void (*)(void))kc_rand_newctx },
    { OSSL_FUNC_RAND_FREECTX, (void (*)(void))kc_rand_freectx },
    { OSSL_FUNC_RAND_INSTANTIATE, (void (*)(void))kc_rand_instantiate },
    { OSSL_FUNC_RAND_UNINSTANTIATE, (void (*)(void))kc_rand_uninstantiate },
    { OSSL_FUNC_RAND_GENERATE, (void (*)(void))kc_rand_generate },
    { OSSL_FUNC_RAND_RESEED, (void (*)(void))kc_rand_reseed },
    { OSSL_FUNC_RAND_ENABLE_LOCKING, (void (*)(void))kc_rand_enable_locking },
    { OSSL_FUNC_RAND_LOCK, (void (*)(void))kc_rand_lock },
    { OSSL_FUNC_RAND_UNLOCK, (void (*)(void))kc_rand_unlock },
    { OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS,
      (void (*)(void))kc_rand_gettable_ctx_params },
    { OSSL_FUNC_RAND_GET_CTX_PARAMS, (void (*)(void))kc_rand_get_ctx_params },
    { 0, NULL }
};

static const OSSL_ALGORITHM kc_rand_algs[] = {
    { KC_RAND_NAME, "provider=" KC_RAND_PROVIDER, kc_rand_functions,
      "the application's RAND, for keycache's inner default provider" },
    { NULL, NULL, NULL, NULL }
};

static const OSSL_ALGORITHM *kc_rand_query(void *provctx, int operation_id,
                                           int *no_cache)
{
    *no_cache = 0;
    return operation_id == OSSL_OP_RAND ? kc_rand_algs : NULL;
}

static void kc_rand_teardown(void *provctx)
{
    OPENSSL_free(provctx);
}

static const OSSL_DISPATCH kc_rand_prov_functions[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))kc_rand_teardown },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))kc_rand_query },
    { 0, NULL }
};

static int kc_rand_prov_init(const OSSL_CORE_HANDLE *handle,
                             const OSSL_DISPATCH *in,
                             const OSSL_DISPATCH **out, void **provctx)
{
    /* the application's context is filled in once loaded: see below */
    if ((*provctx = OPENSSL_zalloc(sizeof(KC_RAND_PROV))) == NULL)
        return 0;
    *out = kc_rand_prov_functions;
    return 1;
}

/* ---- parked private library contexts ---- */

typedef struct kc_parked_st {
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *rand_prov;
    KC_RAND_PROV *prov;
    struct kc_parked_st *next;
} KC_PARKED;

static pthread_mutex_t parked_lock = PTHREAD_MUTEX_INITIALIZER;
static KC_PARKED *parked;
static int pinned;

static void free_libctx(OSSL_LIB_CTX *libctx, OSSL_PROVIDER *rand_prov)
{
    OSSL_PROVIDER_unload(rand_prov);
    OSSL_LIB_CTX_free(libctx);
}

/*
 * Free the parked contexts whose threads have all stopped.  Not from a
 * thread-stop handler (where the count drops): freeing a library context
 * takes the lock OpenSSL holds while it runs them.
 */
static void sweep(void)
{
    KC_PARKED **pp, *p, *done = NULL;

    pthread_mutex_lock(&parked_lock);
    for (pp = &parked; (p = *pp) != NULL;) {
        if (__atomic_load_n(&p->prov->threads, __ATOMIC_ACQUIRE) == 0) {
            *pp = p->next;
            p->next = done;
            done = p;
        } else {
            pp = &p->next;
        }
    }
    pthread_mutex_unlock(&parked_lock);
    while ((p = done) != NULL) {
        done = p->next;
        free_libctx(p->libctx, p->rand_prov);
        OPENSSL_free(p);
    }
}

/* Keep this module mapped for good: parked DRBGs may outlive its unload. */
static int pin_module(void)
{
    if (pinned)
        return 1;
    if (!kc_module_pin() || !kc_quirk_at_cleanup(sweep))
        return 0;
    pinned = 1;
    return 1;
}

static int park(OSSL_LIB_CTX *libctx, OSSL_PROVIDER *rand_prov,
                KC_RAND_PROV *prov)
{
    KC_PARKED *p = OPENSSL_malloc(sizeof(*p));
    int ok;

    if (p == NULL)
        return 0;
    p->libctx = libctx;
    p->rand_prov = rand_prov;
    p->prov = prov;
    pthread_mutex_lock(&parked_lock);
    if ((ok = pin_module())) {
        p->next = parked;
        parked = p;
    }
    pthread_mutex_unlock(&parked_lock);
    if (!ok)
        OPENSSL_free(p);
    return ok;
}

/* ---- start and stop, from inner.c ---- */

/*
 * Make the application's RAND the private context's, before anything
 * there can create a DRBG.  The seed source stays the default's: our
 * primary never asks it for anything.
 */
int kc_rand_start(KC_PROVCTX *pctx)
{
    KC_RAND_PROV *prov;

    if (!OSSL_PROVIDER_add_builtin(pctx->libctx, KC_RAND_PROVIDER,
                                   kc_rand_prov_init)
        || (pctx->rand_prov = OSSL_PROVIDER_load(pctx->libctx,
                                                 KC_RAND_PROVIDER)) == NULL
        || (prov = OSSL_PROVIDER_get0_provider_ctx(pctx->rand_prov)) == NULL
        || !RAND_set_DRBG_type(pctx->libctx, KC_RAND_NAME,
                               "provider=" KC_RAND_PROVIDER, NULL, NULL))
        return 0;
    prov->app = pctx->app_libctx;
    return 1;
}

/*
 * Free the private library context, or park it while other threads hold
 * DRBGs there.  A thread exiting while this runs races it as it would race
 * the freeing of any library context it used.
 */
void kc_rand_stop(KC_PROVCTX *pctx)
{
    OSSL_LIB_CTX *libctx = pctx->libctx;
    OSSL_PROVIDER *rand_prov = pctx->rand_prov;
    KC_RAND_PROV *prov = NULL;

    if (libctx == NULL)
        return;
    pctx->libctx = NULL;
    pctx->rand_prov = NULL;
    /* this thread's DRBGs there go now, the way OSSL_LIB_CTX_free would */
    OPENSSL_thread_stop_ex(libctx);
    if (rand_prov != NULL)
        prov = OSSL_PROVIDER_get0_provider_ctx(rand_prov);
    if (prov == NULL
        || __atomic_load_n(&prov->threads, __ATOMIC_ACQUIRE) == 0
        || !park(libctx, rand_prov, prov))
        free_libctx(libctx, rand_prov);
    sweep();
}
