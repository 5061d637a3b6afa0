/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inner provider: the real `default`, loaded into a library context
 * private to keycache.  Its dispatch tables are called directly: there is
 * no EVP layer inside keycache, so keycache can never fetch itself.
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/provider.h>

#include "inner/inner.h"

/* Is the name at s (ended by ':' or NUL) name, in any case? */
static ossl_inline int name_at(const char *s, const char *name)
{
    size_t i;

    for (i = 0; name[i] != '\0'; i++)
        if (s[i] != name[i]
            && ((s[i] | 0x20) != (name[i] | 0x20)
                || (s[i] | 0x20) < 'a' || (s[i] | 0x20) > 'z'))
            return 0;
    return s[i] == '\0' || s[i] == ':';
}

/*
 * name anywhere in the list (4.0 lists KECCAK-KMAC-128 second), but every
 * first name first: the full scan costs a start some 6,000 instructions.
 */
const OSSL_ALGORITHM *kc_inner_find_near(const OSSL_ALGORITHM *algs,
                                         const char *name,
                                         const OSSL_ALGORITHM **near)
{
    const OSSL_ALGORITHM *a;
    const char *s;
    size_t at, d;
    int fwd = 1;

    if (algs == NULL)
        return NULL;
    /*
     * First names outward from the last one found: the registry lists
     * key sizes together, as the default's table does, in either order
     * (a first name is in one row of a table only).
     */
    at = near != NULL && *near != NULL ? (size_t)(*near - algs) : 0;
    for (d = 0; fwd || d <= at; d++) {
        if (fwd && (fwd = algs[at + d].algorithm_names != NULL)
            && name_at(algs[at + d].algorithm_names, name)) {
            a = &algs[at + d];
            goto found;
        }
        if (d > 0 && d <= at && name_at(algs[at - d].algorithm_names, name)) {
            a = &algs[at - d];
            goto found;
        }
    }
    for (a = algs; a->algorithm_names != NULL; a++)
        for (s = strchr(a->algorithm_names, ':'); s != NULL;
             s = strchr(s + 1, ':'))
            if (name_at(s + 1, name))
                goto found;
    return NULL;
 found:
    if (near != NULL)
        *near = a;
    return a;
}

const OSSL_ALGORITHM *kc_inner_find(const OSSL_ALGORITHM *algs,
                                    const char *name)
{
    return kc_inner_find_near(algs, name, NULL);
}

/* One case of a loader's switch: the dispatch entry into its field. */
#define KC_LOAD(id, fn, field)                                              \
    case OSSL_FUNC_##id:                                                    \
        f->field = OSSL_FUNC_##fn(d);                                       \
        break

static void load_mac_fns(KC_MAC_FNS *f, const OSSL_DISPATCH *d)
{
    for (; d->function_id != 0; d++) {
        switch (d->function_id) {
        KC_LOAD(MAC_NEWCTX, mac_newctx, newctx);
        KC_LOAD(MAC_DUPCTX, mac_dupctx, dupctx);
        KC_LOAD(MAC_FREECTX, mac_freectx, freectx);
        KC_LOAD(MAC_INIT, mac_init, init);
        KC_LOAD(MAC_UPDATE, mac_update, update);
        KC_LOAD(MAC_FINAL, mac_final, final);
        KC_LOAD(MAC_GETTABLE_PARAMS, mac_gettable_params, gettable_params);
        KC_LOAD(MAC_GET_PARAMS, mac_get_params, get_params);
        KC_LOAD(MAC_GETTABLE_CTX_PARAMS, mac_gettable_ctx_params,
                gettable_ctx_params);
        KC_LOAD(MAC_GET_CTX_PARAMS, mac_get_ctx_params, get_ctx_params);
        KC_LOAD(MAC_SETTABLE_CTX_PARAMS, mac_settable_ctx_params,
                settable_ctx_params);
        KC_LOAD(MAC_SET_CTX_PARAMS, mac_set_ctx_params, set_ctx_params);
        }
    }
}

static void load_cipher_fns(KC_CIPHER_FNS *f, const OSSL_DISPATCH *d)
{
    for (; d->function_id != 0; d++) {
        switch (d->function_id) {
        KC_LOAD(CIPHER_NEWCTX, cipher_newctx, newctx);
        KC_LOAD(CIPHER_DUPCTX, cipher_dupctx, dupctx);
        KC_LOAD(CIPHER_FREECTX, cipher_freectx, freectx);
        KC_LOAD(CIPHER_ENCRYPT_INIT, cipher_encrypt_init, einit);
        KC_LOAD(CIPHER_DECRYPT_INIT, cipher_decrypt_init, dinit);
        KC_LOAD(CIPHER_UPDATE, cipher_update, update);
        KC_LOAD(CIPHER_FINAL, cipher_final, final);
        KC_LOAD(CIPHER_CIPHER, cipher_cipher, cipher);
        KC_LOAD(CIPHER_GET_PARAMS, cipher_get_params, get_params);
        KC_LOAD(CIPHER_GET_CTX_PARAMS, cipher_get_ctx_params, get_ctx_params);
        KC_LOAD(CIPHER_SET_CTX_PARAMS, cipher_set_ctx_params, set_ctx_params);
        KC_LOAD(CIPHER_GETTABLE_PARAMS, cipher_gettable_params,
                gettable_params);
        KC_LOAD(CIPHER_GETTABLE_CTX_PARAMS, cipher_gettable_ctx_params,
                gettable_ctx_params);
        KC_LOAD(CIPHER_SETTABLE_CTX_PARAMS, cipher_settable_ctx_params,
                settable_ctx_params);
        }
    }
}

static void load_digest_fns(KC_DIGEST_FNS *f, const OSSL_DISPATCH *d)
{
    for (; d->function_id != 0; d++) {
        switch (d->function_id) {
        KC_LOAD(DIGEST_NEWCTX, digest_newctx, newctx);
        KC_LOAD(DIGEST_DUPCTX, digest_dupctx, dupctx);
        KC_LOAD(DIGEST_FREECTX, digest_freectx, freectx);
        KC_LOAD(DIGEST_INIT, digest_init, init);
        KC_LOAD(DIGEST_UPDATE, digest_update, update);
        KC_LOAD(DIGEST_FINAL, digest_final, final);
        KC_LOAD(DIGEST_GET_PARAMS, digest_get_params, get_params);
        KC_LOAD(DIGEST_SET_CTX_PARAMS, digest_set_ctx_params, set_ctx_params);
        }
    }
}

static size_t digest_size(const KC_DIGEST_FNS *d, const char *name);

/* also where a binding taken over after fork() starts over */
static void free_digests(KC_PROVCTX *pctx)
{
    size_t i;

    for (i = 0; i < pctx->ndigests; i++) {
        OPENSSL_free((char *)pctx->digests[i].name);
        EVP_MD_free(pctx->digests[i].md);
    }
    OPENSSL_free(pctx->digests);
    pctx->digests = NULL;
    pctx->ndigests = 0;
}

/*
 * A fixed-output hash HMAC runs over as RFC 2104 says, re-initialised on
 * one context: SHA-1, SHA-2 and SHA-3 by the default's first names (not
 * SHAKE, KECCAK-KMAC nor 3.5's ML-DSA-MU, which want more than init).
 */
static int hmac_plain(const KC_DIGEST *d)
{
    return (strcmp(d->name, "SHA1") == 0
            || strncmp(d->name, "SHA2-", 5) == 0
            || strncmp(d->name, "SHA3-", 5) == 0)
           && d->size > 0 && d->size <= EVP_MAX_MD_SIZE
           && d->block_size > 0 && d->block_size <= KC_HMAC_BLOCK_MAX
           && (size_t)d->block_size >= d->size;
}

/*
 * The default's digests by first name (as EVP_MD_get0_name() says), with
 * the sizes get_params reports.  Not from EVP_MDs: listing those builds
 * the private context's digest store (some 3M instructions), which a
 * process whose HMACs all use the application's context never needs.
 */
static void list_digests(KC_PROVCTX *pctx)
{
    const OSSL_ALGORITHM *a, *algs = kc_inner_query(pctx, OSSL_OP_DIGEST);
    const char *colon;
    KC_DIGEST_FNS *g;
    KC_DIGEST *d;
    size_t n = 0;

    for (a = algs; a != NULL && a->algorithm_names != NULL; a++)
        n++;
    if (n == 0 || (pctx->digests = OPENSSL_zalloc(n * sizeof(*d))) == NULL)
        return;
    for (a = algs; a->algorithm_names != NULL; a++) {
        d = &pctx->digests[pctx->ndigests];
        colon = strchr(a->algorithm_names, ':');
        d->name = colon != NULL
                  ? OPENSSL_strndup(a->algorithm_names,
                                    (size_t)(colon - a->algorithm_names))
                  : OPENSSL_strdup(a->algorithm_names);
        if (d->name == NULL)
            continue;
        g = &d->fns;
        load_digest_fns(g, a->implementation);
        d->fns_ok = g->newctx != NULL && g->freectx != NULL
                    && g->init != NULL && g->update != NULL
                    && g->final != NULL;
        d->size = digest_size(g, OSSL_DIGEST_PARAM_SIZE);
        d->block_size = (int)digest_size(g, OSSL_DIGEST_PARAM_BLOCK_SIZE);
        d->hmac_plain = d->fns_ok && hmac_plain(d);
        pctx->ndigests++;
    }
}

/*
 * The table is made at the first digest asked for, not at start: a
 * process that never computes an HMAC does not pay for it.
 */
static int digests_ready(KC_PROVCTX *pctx)
{
    if (__atomic_load_n(&pctx->digests_state, __ATOMIC_ACQUIRE)
        != KC_ONCE_DONE && kc_once_claim(&pctx->digests_state)) {
        free_digests(pctx);
        list_digests(pctx);
        kc_once_done(&pctx->digests_state);
    }
    return __atomic_load_n(&pctx->digests_state, __ATOMIC_ACQUIRE)
           == KC_ONCE_DONE;
}

static const KC_DIGEST *find_digest(KC_PROVCTX *pctx, const EVP_MD *md)
{
    const char *name = EVP_MD_get0_name(md);
    size_t i;

    for (i = 0; name != NULL && i < pctx->ndigests; i++)
        if (strcmp(name, pctx->digests[i].name) == 0)
            return &pctx->digests[i];
    /* EVP_MD_is_a() takes a lock */
    for (i = 0; i < pctx->ndigests; i++)
        if (EVP_MD_is_a(md, pctx->digests[i].name))
            return &pctx->digests[i];
    return NULL;
}

/*
 * The table's entry for md, a digest of the built-in default, or NULL:
 * pass through.  The entry keeps the first such md of the application's
 * context, its handle on the application's default (kc_inner_app_newctx()).
 */
const KC_DIGEST *kc_inner_digest(KC_PROVCTX *pctx, const EVP_MD *md)
{
    KC_DIGEST *d;
    EVP_MD *none = NULL;

    if (!digests_ready(pctx)
        || (d = (KC_DIGEST *)find_digest(pctx, md)) == NULL)
        return NULL;
    if (pctx->app_libctx != NULL
        && __atomic_load_n(&d->md, __ATOMIC_ACQUIRE) == NULL
        && EVP_MD_up_ref((EVP_MD *)md)
        && !__atomic_compare_exchange_n(&d->md, &none, (EVP_MD *)md, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        EVP_MD_free((EVP_MD *)md);
    return d;
}

/*
 * A context of the application's default (d's md's provider) made by the
 * private default's |newctx|: no fetch, and it uses that default's digest
 * store.  d's md keeps the provider loaded until the context holds a
 * digest of its own.  NULL if d has none.
 */
void *kc_inner_app_newctx(const KC_DIGEST *d, void *(*newctx)(void *))
{
    EVP_MD *md = __atomic_load_n(&d->md, __ATOMIC_ACQUIRE);

    if (md == NULL)
        return NULL;
    return newctx(OSSL_PROVIDER_get0_provider_ctx(EVP_MD_get0_provider(md)));
}

/*
 * The default's digest functions themselves: no EVP layer to pay on top.
 * No error mark around the calls (some 400 instructions on 4.x) once a
 * digest hashed a key without raising anything: the default's digests
 * raise nothing on this path then, but for an allocation's failure (an
 * error from 3.2 on), which the default's own HMAC_Init_ex() meets as
 * well.  A digest that fails or raises the first time (SHAKE has no
 * length from 3.4 on, ML-DSA-MU wants a key) is never asked again.
 */
int kc_inner_digest_key(KC_PROVCTX *pctx, const KC_DIGEST *cd,
                        const unsigned char *in, size_t inlen,
                        unsigned char *out, size_t outsize)
{
    KC_DIGEST *d = (KC_DIGEST *)cd;      /* the table is the instance's */
    int tried = __atomic_load_n(&d->key_hash, __ATOMIC_ACQUIRE);
    const KC_DIGEST_FNS *f = &d->fns;
    KC_ERRTOP before, after;
    size_t n = 0;
    void *dc;
    int ok, quiet;

    if (tried < 0 || !d->fns_ok || d->size == 0 || d->size > outsize)
        return 0;
    if (!tried) {
        ERR_set_mark();
        kc_err_top(&before);
    }
    dc = f->newctx(pctx->inner_provctx);
    ok = dc != NULL && f->init(dc, NULL) && f->update(dc, in, inlen)
         && f->final(dc, out, &n, outsize) && n == d->size;
    if (dc != NULL)
        f->freectx(dc);
    if (!tried) {
        kc_err_top(&after);
        quiet = kc_err_same(&before, &after);
        ok = ok && quiet;
        /* memory running out says nothing of the digest: asked again */
        if (ok || (dc != NULL
                   && (quiet || ERR_GET_REASON(ERR_peek_last_error())
                                != ERR_R_MALLOC_FAILURE)))
            __atomic_store_n(&d->key_hash, ok ? 1 : -1, __ATOMIC_RELEASE);
        ERR_pop_to_mark();
    }
    if (!ok)
        OPENSSL_cleanse(out, outsize);
    return ok;
}

/* Whether |prov| is the built-in default (in any library context). */
int kc_inner_is_default(const KC_PROVCTX *pctx, const OSSL_PROVIDER *prov)
{
    return prov != NULL
           && OSSL_PROVIDER_get0_dispatch(prov)
              == OSSL_PROVIDER_get0_dispatch(pctx->deflt);
}

/*
 * A context of |mac| made by |newctx|, a private default's function: only
 * if |mac| is the same built-in default's (same dispatch table).
 */
static void *default_mac_newctx(const KC_PROVCTX *pctx, const EVP_MAC *mac,
                                OSSL_FUNC_mac_newctx_fn *newctx)
{
    const OSSL_PROVIDER *prov = EVP_MAC_get0_provider(mac);

    return kc_inner_is_default(pctx, prov)
           ? newctx(OSSL_PROVIDER_get0_provider_ctx(prov)) : NULL;
}

/*
 * A context of MAC |name| of the application's default, for a digest or
 * cipher the private one lacks (as default_mac_newctx()).  *mac keeps it
 * loaded; NULL if there is none.  The error queue is left as it was.
 */
void *kc_inner_app_mac(KC_PROVCTX *pctx, const char *name,
                       OSSL_FUNC_mac_newctx_fn *newctx, EVP_MAC **mac)
{
    void *ctx = NULL;

    *mac = NULL;
    if (pctx->app_libctx == NULL)
        return NULL;
    ERR_set_mark();
    *mac = EVP_MAC_fetch(pctx->app_libctx, name, "provider=default");
    if (*mac != NULL)
        ctx = default_mac_newctx(pctx, *mac, newctx);
    if (ctx == NULL) {
        EVP_MAC_free(*mac);
        *mac = NULL;
    }
    ERR_pop_to_mark();
    return ctx;
}

/* a kc_inner_app_first() pin: the application's context has none */
static char app_none;
#define KC_APP_NONE ((EVP_MAC *)&app_none)

/*
 * The provider context of the application's built-in default, whose MAC
 * |name| is fetched once and pinned in *pin till kc_inner_stop(), so that
 * contexts made there and their copies count no references.  NULL if that
 * context has none (a FIPS-only application) or another build's
 * "default", whose contexts our functions cannot make: not asked again.
 */
void *kc_inner_app_provctx(KC_PROVCTX *pctx, EVP_MAC **pin, const char *name)
{
    EVP_MAC *m = __atomic_load_n(pin, __ATOMIC_ACQUIRE), *none = NULL;

    if (m == NULL && pctx->app_libctx != NULL) {
        ERR_set_mark();
        m = EVP_MAC_fetch(pctx->app_libctx, name, "provider=default");
        ERR_pop_to_mark();
        if (m != NULL
            && !kc_inner_is_default(pctx, EVP_MAC_get0_provider(m))) {
            EVP_MAC_free(m);
            m = NULL;
        }
        if (m == NULL)
            m = KC_APP_NONE;
        if (!__atomic_compare_exchange_n(pin, &none, m, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            if (m != KC_APP_NONE)
                EVP_MAC_free(m);
            m = none;
        }
    }
    if (m == NULL || m == KC_APP_NONE)
        return NULL;
    return OSSL_PROVIDER_get0_provider_ctx(EVP_MAC_get0_provider(m));
}

/* kc_inner_app_mac() for a family's first and cold contexts, on the pin */
void *kc_inner_app_first(KC_PROVCTX *pctx, EVP_MAC **pin, const char *name,
                         OSSL_FUNC_mac_newctx_fn *newctx)
{
    void *provctx = kc_inner_app_provctx(pctx, pin, name);

    return provctx != NULL ? newctx(provctx) : NULL;
}

/*
 * The cipher (name, props) in the application's context if the private
 * default's stands in for it: the built-in default's, or keycache's own
 * where the private context resolves it too.  NULL otherwise, or (OpenSSL
 * 4) if the fetch queued errors, kept as the default's when |keep| (only
 * a query's first fetch raises them); else the queue is left as it was.
 */
EVP_CIPHER *kc_inner_cipher_fetch(KC_PROVCTX *pctx, const char *name,
                                  const char *props, int keep)
{
    const OSSL_PROVIDER *prov;
    EVP_CIPHER *c, *mine = NULL;
    KC_ERRTOP before, after;
    int ok;

    ERR_set_mark();
    kc_err_top(&before);
    c = EVP_CIPHER_fetch(pctx->app_libctx != NULL ? pctx->app_libctx
                         : pctx->libctx, name, props);
    kc_err_top(&after);
    if (c != NULL && kc_quirk_load_keeps_errors
        && !kc_err_same(&before, &after)) {
        EVP_CIPHER_free(c);
        if (keep)
            ERR_clear_last_mark();
        else
            ERR_pop_to_mark();
        return NULL;
    }
    prov = c != NULL ? EVP_CIPHER_get0_provider(c) : NULL;
    ok = kc_inner_is_default(pctx, prov);
    /*
     * keycache's own: the private default resolves a name alone if its
     * table has it; a fetch there would build that context's whole cipher
     * store (millions of instructions) only to say so.  A query: asked.
     */
    if (!ok && prov != NULL && OSSL_PROVIDER_get0_provider_ctx(prov) == pctx)
        ok = props == NULL || *props == '\0'
             ? kc_inner_find(kc_inner_query(pctx, OSSL_OP_CIPHER), name)
               != NULL
             : (mine = EVP_CIPHER_fetch(pctx->libctx, name, props)) != NULL;
    if (ok && mine != NULL)
        EVP_CIPHER_free(mine);
    if (!ok) {
        EVP_CIPHER_free(c);
        c = NULL;
    }
    ERR_pop_to_mark();
    return c;
}

/*
 * Does a query-less fetch of cipher |name| in the application's library
 * context find keycache's own?  The error queue is left as it was.
 */
int kc_inner_cipher_mine(KC_PROVCTX *pctx, const char *name)
{
    const OSSL_PROVIDER *prov;
    EVP_CIPHER *c;
    int mine;

    if (pctx->app_libctx == NULL)
        return 0;
    ERR_set_mark();
    c = EVP_CIPHER_fetch(pctx->app_libctx, name, NULL);
    prov = c != NULL ? EVP_CIPHER_get0_provider(c) : NULL;
    mine = prov != NULL && OSSL_PROVIDER_get0_provider_ctx(prov) == pctx;
    EVP_CIPHER_free(c);
    ERR_pop_to_mark();
    return mine;
}

int kc_inner_load_mac(KC_MAC_FNS *f, const OSSL_DISPATCH *d)
{
    load_mac_fns(f, d);
    return f->newctx != NULL && f->dupctx != NULL && f->freectx != NULL
           && f->init != NULL && f->update != NULL && f->final != NULL
           && f->get_ctx_params != NULL && f->set_ctx_params != NULL;
}

int kc_inner_load_cipher(KC_CIPHER_FNS *f, const OSSL_DISPATCH *d)
{
    load_cipher_fns(f, d);
    return f->newctx != NULL && f->dupctx != NULL && f->freectx != NULL
           && f->einit != NULL && f->update != NULL && f->final != NULL
           && f->get_ctx_params != NULL && f->set_ctx_params != NULL;
}

/* A size a digest's get_params reports ("blocksize", "size"), or 0. */
static size_t digest_size(const KC_DIGEST_FNS *d, const char *name)
{
    size_t b = 0;
    OSSL_PARAM q[2];

    q[0] = OSSL_PARAM_construct_size_t(name, &b);
    q[1] = OSSL_PARAM_construct_end();
    if (d->get_params == NULL || d->get_params(q) != 1
        || !OSSL_PARAM_modified(&q[0]))
        return 0;
    return b;
}

/*
 * The default's ciphers named in n (NULL: none) into fns[0, max): 0 if more,
 * or one is missing or incomplete.
 */
int kc_inner_bind_ciphers(const OSSL_ALGORITHM *ciphers,
                          const char *const *n, KC_CIPHER_FNS *fns,
                          size_t max)
{
    const OSSL_ALGORITHM *a;
    size_t i;

    for (i = 0; n != NULL && n[i] != NULL; i++) {
        if (i == max || (a = kc_inner_find(ciphers, n[i])) == NULL)
            return 0;
        memset(&fns[i], 0, sizeof(fns[i]));
        if (!kc_inner_load_cipher(&fns[i], a->implementation))
            return 0;
    }
    return 1;
}

int kc_inner_bind_digest(const OSSL_ALGORITHM *digests, const char *name,
                         KC_DIGEST_FNS *g, size_t *block, size_t *size)
{
    const OSSL_ALGORITHM *a;

    if ((a = kc_inner_find(digests, name)) == NULL)
        return 0;
    memset(g, 0, sizeof(*g));
    load_digest_fns(g, a->implementation);
    return g->newctx != NULL && g->dupctx != NULL && g->freectx != NULL
           && g->init != NULL && g->update != NULL && g->final != NULL
           && g->set_ctx_params != NULL
           && (*block = digest_size(g, OSSL_DIGEST_PARAM_BLOCK_SIZE)) != 0
           && (*size = digest_size(g, OSSL_DIGEST_PARAM_SIZE)) != 0;
}

const OSSL_ALGORITHM *kc_inner_query(KC_PROVCTX *pctx, int op)
{
    int no_cache = 0;

    return OSSL_PROVIDER_query_operation(pctx->deflt, op, &no_cache);
}

int kc_inner_start(KC_PROVCTX *pctx)
{
    if ((pctx->libctx = OSSL_LIB_CTX_new()) == NULL
        || !kc_rand_start(pctx)) {
        kc_raise(pctx, KC_R_INIT_FAILED, "cannot set up the inner context");
        return 0;
    }
    if ((pctx->deflt = OSSL_PROVIDER_load(pctx->libctx, "default")) == NULL) {
        kc_raise(pctx, KC_R_INIT_FAILED, "cannot load the default provider");
        return 0;
    }
    pctx->inner_provctx = OSSL_PROVIDER_get0_provider_ctx(pctx->deflt);
    return 1;
}

void kc_inner_stop(KC_PROVCTX *pctx)
{
    size_t i;

    for (i = 0; i < KC_FAM_COUNT; i++)
        if (pctx->fam[i].app_first != KC_APP_NONE)
            EVP_MAC_free(pctx->fam[i].app_first);
    if (pctx->kdf_pin != KC_APP_NONE)
        EVP_MAC_free(pctx->kdf_pin);
    free_digests(pctx);
    OSSL_PROVIDER_unload(pctx->deflt);
    pctx->deflt = NULL;
    kc_rand_stop(pctx);
}
