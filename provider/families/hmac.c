/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HMAC: a cache entry holds the default's HMAC context, digest set and
 * keyed; a hit copies it or takes a spare, restarted by a keyless init
 * when given back.  Anything a keyless init cannot undo passes through to
 * a context of the default's own, whose behaviour and errors stay the
 * reference (docs/families.md).
 */
#include <stddef.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "families/families.h"

/*
 * A thread's first misses (key_app()) over a plain digest are deferred:
 * the key and up to KC_DEFER_MAX bytes of message wait in the wrapper,
 * and the final computes HMAC (RFC 2104) on one context of the default's
 * digest functions (defer_final()).  No default HMAC context, digest
 * fetch or EVP digest contexts are made: a thread or fork child that
 * computes one HMAC pays less than the default alone (thread-per-task,
 * fork-child-*).  Any other call, a longer message or a second final
 * first makes the default's context those calls would have made, by
 * replaying them (defer_settle()): every other answer is the default's.
 * A context that is copied or keylessly restarted after a final is reused:
 * it then becomes the default's for good, so that reuse costs what it
 * costs the default (the first copy makes it, defer_publish()).
 */
#define KC_DEFER_MAX 256
enum { DEFER_NONE, DEFER_KEYED, DEFER_SPENT };

typedef struct {
    KC_PROVCTX *pctx;
    const KC_DIGEST *dg;       /* the default ctx's digest: a table entry */
    char *dg_props;            /* the query dg was resolved with, or NULL */
    unsigned int dg_gen;       /* the default properties it was resolved at */
    /* inner holds a long key's digest, not the key: see KC_TLS_REFUSED */
    int long_key;
    void *inner;               /* inner HMAC ctx, NULL until keyed */
    KC_LEASE lease;            /* where inner goes back to, if anywhere */
    int passthrough;           /* inner is the reference copy: forward all */
    int cold;                  /* made while the thread's hits were rare */
    EVP_MAC *app_mac;          /* inner is the application's default's */
    int app_keyed;             /* that too, kept loaded by its own digest */
    /*
     * The thread's last resolved digest name (no properties) and digest:
     * saves EVP_Q_mac()'s two memo look-ups (set_params, init).
     */
    const KC_DIGEST *hint_dg;
    unsigned int hint_gen;     /* the default properties it holds under */
    char hint[KC_HINT_NAME];
    uint64_t counted;          /* see KC_LOOKUP */
    /*
     * The key inner holds, so that re-keying with the same bytes is a
     * keyless init (OpenVPN re-keys per message).  KEY_LEASED: the leased
     * entry's; KEY_COPY: in key[], wiped when inner goes.  Copied only when
     * a miss brings the key the previous miss brought (missed_hash).
     */
    int have_key;
    int deferred;              /* DEFER_*: keyed, inner not made yet */
    int rekeyed;               /* keyed again while deferred */
    uint64_t missed_hash;      /* the keyed hash of the key a miss last took */
    const KC_DIGEST *key_dg;
    size_t keylen;
    /*
     * Not zeroed at new.  tls_size: the record size last given while
     * long_key and passed through, set with long_key; key[]: see have_key.
     */
    size_t tls_size;
    /*
     * A deferred context's default one, made by its first copy: set at
     * new, outside the head a copy reads whole (copies may publish it).
     */
    void *promoted;
    unsigned char key[KEYCACHE_MAX_KEY_LEN];
    /* while deferred: the key and the message so far (see KC_DEFER_MAX) */
    size_t dkeylen, dlen;
    unsigned char dkey[KEYCACHE_MAX_KEY_LEN];
    unsigned char dbuf[KC_DEFER_MAX];
} KC_HMAC_CTX;

#define KC_HMAC_HEAD offsetof(KC_HMAC_CTX, tls_size)

/*
 * The default's TLS record MAC ("tls-data-size") refuses a key longer than
 * its 128-byte pad before reading key or record, whatever HMAC derives from
 * the key; an inner holding such a key's digest would compute the record
 * MAC instead.  While it does, it is given a record size the record MAC
 * refuses as early (1 MiB or more), so each record fails as the default's:
 * test_hmac_patterns' "TLS mode under a key longer than the cache holds".
 */
#define KC_TLS_REFUSED ((size_t)1 << 20)
/* ... which holds while no key the cache holds is refused there */
_Static_assert(KEYCACHE_MAX_KEY_LEN >= 128, "long keys: see KC_TLS_REFUSED");

/* returned by resolve_digest() for a digest the table does not know */
static const KC_DIGEST unknown_digest;

/*
 * A thread's first misses not admitted are keyed at once in a new default
 * HMAC of the application's library context, neither looked up nor
 * counted (key_app()): a thread or process that computes an HMAC or two
 * pays no key's hash.  Later misses are looked up, and keyed in the same
 * context as cheap copies of the thread's keyless base (new_inner()).
 * A fork child inherits the count, unless its handler emptied the
 * parent's cache: a parent's one HMAC and a child's one stay in the
 * application's context (kc_cache_first_misses).  As many as the template
 * families' first contexts (KC_APP_FIRST), which the registry's "first"
 * counts.
 */
#define KC_APP_MISSES KC_APP_FIRST
#define app_misses kc_cache_first_misses

static OSSL_FUNC_mac_newctx_fn kc_hmac_newctx;
static OSSL_FUNC_mac_dupctx_fn kc_hmac_dupctx;
static OSSL_FUNC_mac_freectx_fn kc_hmac_freectx;
static OSSL_FUNC_mac_init_fn kc_hmac_init;
static OSSL_FUNC_mac_update_fn kc_hmac_update;
static OSSL_FUNC_mac_final_fn kc_hmac_final;
static OSSL_FUNC_mac_gettable_ctx_params_fn kc_hmac_gettable_ctx_params;
static OSSL_FUNC_mac_get_ctx_params_fn kc_hmac_get_ctx_params;
static OSSL_FUNC_mac_settable_ctx_params_fn kc_hmac_settable_ctx_params;
static OSSL_FUNC_mac_set_ctx_params_fn kc_hmac_set_ctx_params;

static const KC_MAC_FNS *fns(const KC_HMAC_CTX *w)
{
    return &w->pctx->hmac;
}

/*
 * The inner now holds a key itself, not a long key's digest: TLS records
 * are its own again, with the record size last given (KC_TLS_REFUSED).
 */
static ossl_inline void key_taken(KC_HMAC_CTX *w)
{
    OSSL_PARAM one[2];

    if (!w->long_key)
        return;
    w->long_key = 0;
    if (w->tls_size == 0)
        return;
    one[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_TLS_DATA_SIZE,
                                         &w->tls_size);
    one[1] = OSSL_PARAM_construct_end();
    fns(w)->set_ctx_params(w->inner, one);
}

/*
 * Give inner the digest named name.  A private inner needs the name alone;
 * one in the application's context needs the query the digest was
 * resolved with, or that context's default properties could pick another
 * provider's.  The list is what OSSL_PARAM_construct_utf8_string() makes,
 * without its calls (every miss comes here).
 */
static int inner_set_name(const KC_HMAC_CTX *w, void *inner,
                          const char *name, const char *props)
{
    OSSL_PARAM p[3] = {
        { OSSL_MAC_PARAM_DIGEST, OSSL_PARAM_UTF8_STRING, (char *)name,
          strlen(name), OSSL_PARAM_UNMODIFIED },
        OSSL_PARAM_END, OSSL_PARAM_END
    };

    if (props != NULL)
        p[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                                (char *)props, 0);
    return fns(w)->set_ctx_params(inner, p);
}

/* ... the digest dg, by the default's first name for it */
static int inner_set_digest(const KC_HMAC_CTX *w, void *inner,
                            const KC_DIGEST *dg, const char *props)
{
    return inner_set_name(w, inner, dg->name, props);
}

/* w->dg = dg, resolved with |props| (NULL or "" for none); 0: no memory */
static int set_digest(KC_HMAC_CTX *w, const KC_DIGEST *dg, const char *props)
{
    if (w->dg_props != NULL) {
        OPENSSL_free(w->dg_props);
        w->dg_props = NULL;
    }
    w->dg = dg;
    if (dg == NULL || props == NULL || props[0] == '\0')
        return 1;
    if ((w->dg_props = OPENSSL_strdup(props)) == NULL) {
        w->dg = NULL;
        return 0;
    }
    return 1;
}

static const KC_DIGEST *resolve_digest(KC_HMAC_CTX *w, const char *name,
                                       const char *props);

/*
 * w's digest asked for again, at the default properties now in force: the
 * same table entry keeps w current (the application's context finds the
 * default's digest by that name still, as any context of it would).
 */
static KC_NOINLINE int dg_again(KC_HMAC_CTX *w)
{
    unsigned int gen = kc_props_gen(w->pctx);
    const KC_DIGEST *d;

    ERR_set_mark();
    d = resolve_digest(w, w->dg->name, w->dg_props);
    ERR_pop_to_mark();
    if (d != w->dg)
        return 0;
    w->dg_gen = gen;
    return 1;
}

/*
 * Would the application's context find the digest w was set with, by its
 * name?  Once the default properties changed since, only if it still
 * resolves to it; never if no change would be heard.  Otherwise the
 * default's context keeps the digest it fetched then, which only a
 * private inner (the default's digest, dg) reproduces.
 */
static ossl_inline int app_finds_dg(KC_HMAC_CTX *w)
{
    if (w->dg == NULL)
        return 1;
    if (__atomic_load_n(&w->pctx->props_registered, __ATOMIC_RELAXED) != 1)
        return 0;
    return w->dg_gen == kc_props_gen(w->pctx) || dg_again(w);
}

/*
 * May w's inner be the default's of the application's library context?
 * Not once a provider there was unloaded (the default itself, maybe: a
 * fetch there would fail and leave its errors); nor if the context would
 * not find w's digest again (app_finds_dg()).
 */
static ossl_inline int app_inner_ok(KC_HMAC_CTX *w)
{
    return !__atomic_load_n(&w->pctx->app_gone, __ATOMIC_ACQUIRE)
           && app_finds_dg(w);
}

/*
 * Does w hold a digest the default properties since changed away from?
 * Its inner is then a private one holding the digest the default's
 * context fetched at that time, which no other context may share: it is
 * passed through, never a template or the thread's base.
 */
static ossl_inline int stale_dg(KC_HMAC_CTX *w)
{
    return w->dg != NULL
           && __atomic_load_n(&w->pctx->props_registered,
                              __ATOMIC_RELAXED) == 1
           && !app_finds_dg(w);
}

/*
 * A fresh inner with w's digest, if any; NULL if that fails.  The
 * default's HMAC of the application's library context, where w's digest
 * was resolved (as key_app()'s): that context's digest store is built
 * anyway, where a private inner's fetch builds keycache's own, some 3M
 * instructions in a process that computes a few HMACs.  Keycache's
 * private context only where app_inner_ok() says no.
 */
static void *new_inner(KC_HMAC_CTX *w)
{
    void *inner;
    int ok;

    if (w->dg != NULL && app_inner_ok(w)
        && (inner = kc_inner_app_newctx(w->dg, fns(w)->newctx)) != NULL) {
        if (w->dg_props == NULL) {
            ok = inner_set_name(w, inner, w->dg->name, NULL);
        } else {
            /* a query's fetch raised what it raises already (OpenSSL 4) */
            ERR_set_mark();
            ok = inner_set_digest(w, inner, w->dg, w->dg_props);
            ERR_pop_to_mark();
        }
        if (ok)
            return inner;
        fns(w)->freectx(inner);
    }
    inner = fns(w)->newctx(w->pctx->inner_provctx);

    if (inner != NULL && w->dg != NULL
        && !inner_set_digest(w, inner, w->dg, NULL)) {
        fns(w)->freectx(inner);
        return NULL;
    }
    return inner;
}

static void free_inner(KC_HMAC_CTX *w)
{
    fns(w)->freectx(w->inner);
    if (w->app_mac != NULL) {
        EVP_MAC_free(w->app_mac);
        w->app_mac = NULL;
    }
    w->app_keyed = 0;
}

/*
 * A context given back gets a keyless init: the state a hit needs, and it
 * drops the last MAC or block from the digest state (the default wipes a
 * context the program frees).
 */
static int restart(const void *arg, void *inner)
{
    return fns(arg)->init(inner, NULL, 0, NULL);
}

/* A context keyed a moment ago, never used: as a template it is ready. */
static int as_is(const void *arg, void *inner)
{
    return 1;
}

/* The inner context back to its cache entry (c: this thread's); 0: not. */
static int park_inner(KC_CACHE *c, KC_HMAC_CTX *w)
{
    /* (a lease of no entry, as a miss's or a copy's, parks nowhere) */
    return w->lease.cache_id != 0 && !w->passthrough && !w->app_keyed
           && kc_cache_park_in(c, &w->lease, w->inner, restart, w);
}

enum { KEY_NONE, KEY_LEASED, KEY_COPY };

static void forget_key(KC_HMAC_CTX *w)
{
    if (w->have_key == KEY_COPY)
        OPENSSL_cleanse(w->key, w->keylen);
    w->have_key = KEY_NONE;
}

/* inner was keyed with key: by copying a cached entry (leased), or not */
static void remember_key(KC_HMAC_CTX *w, const unsigned char *key,
                         size_t keylen, int leased)
{
    forget_key(w);
    if (!leased)
        memcpy(w->key, key, keylen);
    w->keylen = keylen;
    w->key_dg = w->dg;
    w->have_key = leased ? KEY_LEASED : KEY_COPY;
}

/* Does inner hold key (for the digest it has)?  Constant-time in the key. */
static int holds_key(KC_CACHE *c, const KC_HMAC_CTX *w,
                     const unsigned char *key, size_t keylen)
{
    if (w->have_key == KEY_NONE || w->inner == NULL || w->key_dg != w->dg
        || w->keylen != keylen)
        return 0;
    return w->have_key == KEY_COPY ? kc_key_equal(w->key, key, keylen)
                                   : kc_cache_lease_is(c, &w->lease, key,
                                                       keylen);
}

/* The inner context back to its entry in c (this thread's), or freed. */
static void release_inner(KC_CACHE *c, KC_HMAC_CTX *w)
{
    forget_key(w);
    w->long_key = 0;
    if (w->inner == NULL)
        return;
    if (!park_inner(c, w))
        free_inner(w);
    w->inner = NULL;
    memset(&w->lease, 0, sizeof(w->lease));
}

/*
 * Forward every call to w->inner from now on, uncached and counted so
 * (a cold context was counted when it was made).
 */
static void forward_all(KC_HMAC_CTX *w)
{
    forget_key(w);
    w->passthrough = 1;
    memset(&w->lease, 0, sizeof(w->lease));
    if (!w->cold)
        kc_count_passthrough(w->pctx, &w->pctx->hmac_alg);
}

/* Pass through from now on, with an inner in the default's state. */
static int go_passthrough(KC_HMAC_CTX *w)
{
    if (w->passthrough)
        return 1;
    /* an inner context we already had was clean: its state is exact */
    if (w->inner == NULL && (w->inner = new_inner(w)) == NULL)
        return 0;
    forward_all(w);
    return 1;
}

/*
 * The same, but before the key with the default's HMAC in the
 * application's library context, which takes the digests and raises the
 * errors the default would; once keyed, or without one, new_inner()'s.
 */
static int go_passthrough_app(KC_HMAC_CTX *w)
{
    EVP_MAC *mac;
    void *ctx;
    int ok;

    if (w->passthrough || w->inner != NULL || !app_finds_dg(w)
        || (ctx = kc_inner_app_mac(w->pctx, OSSL_MAC_NAME_HMAC,
                                   fns(w)->newctx, &mac)) == NULL)
        return go_passthrough(w);
    ERR_set_mark();
    ok = w->dg == NULL || inner_set_digest(w, ctx, w->dg, w->dg_props);
    ERR_pop_to_mark();
    if (!ok) {
        fns(w)->freectx(ctx);
        EVP_MAC_free(mac);
        return go_passthrough(w);
    }
    w->inner = ctx;
    w->app_mac = mac;
    forward_all(w);
    return 1;
}

/* The digest name resolves to in the application's library context. */
static EVP_MD *app_md_fetch(KC_PROVCTX *pctx, const char *name,
                            const char *props)
{
    return EVP_MD_fetch(pctx->app_libctx != NULL ? pctx->app_libctx
                        : pctx->libctx, name, props);
}

/*
 * Resolve a digest name as the default does, in the application's library
 * context, so a failure (NULL) leaves its very errors.  Only the default
 * provider's digest maps to the table.  Remembered by the instance while
 * the default properties stay the same, so the callback that says they
 * changed is registered before the first answer is kept; a provider loaded
 * later is not seen for a name resolved.
 */
static const KC_DIGEST *resolve_digest(KC_HMAC_CTX *w, const char *name,
                                       const char *props)
{
    KC_PROVCTX *pctx = w->pctx;
    KC_CACHE *c;
    const KC_DIGEST *d = NULL;
    KC_ERRTOP before, after;
    EVP_MD *md;
    unsigned int gen = 0;
    int noisy, keep;

    if (w->hint_dg != NULL && (props == NULL || props[0] == '\0')
        && w->hint_gen == kc_props_gen(pctx) && strcmp(name, w->hint) == 0)
        return w->hint_dg;
    c = kc_cache_get(pctx);
    if (c != NULL && (d = kc_cache_memo_get(c, NULL, name, props)) != NULL) {
        w->hint_dg = kc_cache_memo_last(c, w->hint, &w->hint_gen);
        return d;
    }
    keep = c != NULL && kc_cache_keep_gen(c, &gen);
    /*
     * A successful fetch may queue errors (a query with trailing junk):
     * OpenSSL 4's default keeps them every time, so such a name is not
     * remembered there.
     */
    ERR_set_mark();
    kc_err_top(&before);
    md = app_md_fetch(pctx, name, props);
    if (md == NULL) {
        ERR_clear_last_mark();
        return NULL;
    }
    kc_err_top(&after);
    noisy = kc_quirk_load_keeps_errors && !kc_err_same(&before, &after);
    if (noisy)
        ERR_clear_last_mark();
    else
        ERR_pop_to_mark();
    d = kc_inner_is_default(pctx, EVP_MD_get0_provider(md))
        ? kc_inner_digest(pctx, md) : NULL;
    EVP_MD_free(md);
    if (d == NULL)
        return &unknown_digest;
    if (keep && !noisy) {
        (void)kc_cache_memo_put(c, NULL, name, props, d, gen);
        w->hint_dg = kc_cache_memo_last(c, w->hint, &w->hint_gen);
    }
    return d;
}

/*
 * A context keyed with key by copying the thread's context of the digest
 * keyed with the empty key: a keyed init replaces all HMAC holds, and the
 * copy skips a new context's digest fetch.  NULL if that fails, or if the
 * thread has no cache to keep that base in (one that only derives, in a
 * KDF's calls: a base made for one copy would cost more than it saves);
 * the caller then keys a new context as the default would.
 */
static void *keyed_copy(KC_HMAC_CTX *w, KC_CACHE *c, const unsigned char *key,
                        size_t keylen)
{
    static const unsigned char empty[1];
    const KC_MAC_FNS *f = fns(w);
    void *base = kc_cache_aux_get(c, w->dg), *inner;

    if (base == NULL) {
        if (!kc_cache_keeps(c) || stale_dg(w))
            return NULL;
        ERR_set_mark();
        if ((base = new_inner(w)) != NULL && !f->init(base, empty, 0, NULL)) {
            f->freectx(base);
            base = NULL;
        }
        ERR_pop_to_mark();
        if (base == NULL)
            return NULL;
        kc_cache_aux_put(c, w->dg, base, f->freectx);
    }
    /*
     * No error mark here, on every miss (some 400 instructions on 4.x):
     * base was keyed with this digest already, so copying and keying it
     * fail only where memory runs out, and the default's own path then too.
     */
    if ((inner = f->dupctx(base)) != NULL
        && !f->init(inner, key, keylen, NULL)) {
        f->freectx(inner);
        inner = NULL;
    }
    return inner;
}

/*
 * A miss keyed in the application's context (see app_misses): 1/0 as the
 * default would, -1 if there is no default there (then the private way).
 */
static int key_app_ctx(KC_HMAC_CTX *w, const unsigned char *key,
                       size_t keylen)
{
    void *ctx;
    int ok;

    /* its digest's: a fetch of HMAC would cost a thread about 3,000 */
    if (!app_inner_ok(w)
        || (ctx = kc_inner_app_newctx(w->dg, fns(w)->newctx)) == NULL)
        return -1;
    /*
     * The query the application's fetch resolved, asked again there.  A
     * name alone raises nothing once found; properties may (OpenSSL 4
     * keeps a successful fetch's errors), and those were raised already.
     */
    if (w->dg_props == NULL) {
        /* the application's spelling, if known: its fetch's very look-up */
        ok = inner_set_name(w, ctx, w->dg == w->hint_dg ? w->hint
                                                        : w->dg->name, NULL);
    } else {
        ERR_set_mark();
        ok = inner_set_digest(w, ctx, w->dg, w->dg_props);
        ERR_pop_to_mark();
    }
    if (!ok) {
        fns(w)->freectx(ctx);
        return -1;
    }
    w->inner = ctx;
    w->app_keyed = 1;
    if (!fns(w)->init(ctx, key, keylen, NULL)) {
        /* whatever state that left is the default's: keep it, uncached */
        forward_all(w);
        return 0;
    }
    return 1;
}

/*
 * Key w as a miss is keyed: a copy of the thread's keyless base (copy), or
 * else a new context set up as the default's.  0: that failed, and the
 * state it left, the default's, is kept and forwarded from now on.
 */
static int key_missed(KC_HMAC_CTX *w, KC_CACHE *c, const unsigned char *key,
                      size_t keylen, int copy)
{
    const KC_MAC_FNS *f = fns(w);
    void *inner = copy ? keyed_copy(w, c, key, keylen) : NULL;

    if (inner != NULL) {
        w->inner = inner;
        return 1;
    }
    if ((w->inner = new_inner(w)) == NULL)
        return 0;
    if (!f->init(w->inner, key, keylen, NULL)) {
        forward_all(w);
        return 0;
    }
    if (stale_dg(w))
        forward_all(w);
    return 1;
}

/* The deferred key and message wiped: not deferred any more. */
static void defer_wipe(KC_HMAC_CTX *w)
{
    OPENSSL_cleanse(w->dkey, w->dkeylen);
    OPENSSL_cleanse(w->dbuf, w->dlen);
    w->dkeylen = w->dlen = 0;
    w->deferred = DEFER_NONE;
}

/*
 * The default's context a copy made for w meanwhile, taken as w's own
 * (the copy made it from w's state, which only w's calls change).  1: w
 * is the default's now.
 */
static int defer_adopt(KC_HMAC_CTX *w)
{
    void *p = __atomic_exchange_n(&w->promoted, NULL, __ATOMIC_ACQ_REL);

    if (p == NULL)
        return 0;
    w->inner = p;
    w->app_keyed = 1;
    defer_wipe(w);
    return 1;
}

/*
 * w's inner keyed with its deferred key, as key_app_ctx() keys (or, the
 * application's default gone meanwhile, as any later miss): 1/0.
 */
static int defer_key(KC_HMAC_CTX *w)
{
    int r = key_app_ctx(w, w->dkey, w->dkeylen);

    return r >= 0 ? r : key_missed(w, NULL, w->dkey, w->dkeylen, 0);
}

/*
 * w's deferred calls after its key, on ctx keyed with it: the message,
 * and the final if w was finished (its output dropped).  1/0.
 */
static int defer_replay(const KC_HMAC_CTX *w, void *ctx)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t n = 0;
    int ok = w->dlen == 0 || fns(w)->update(ctx, w->dbuf, w->dlen);

    if (ok && w->deferred == DEFER_SPENT) {
        ok = fns(w)->final(ctx, out, &n, sizeof(out));
        OPENSSL_cleanse(out, sizeof(out));
    }
    return ok;
}

/*
 * The default's context the deferred calls would have made: keyed as
 * defer_key() keys, the calls replayed; every call from here on is the
 * default's.  0: that failed.
 */
static KC_NOINLINE int defer_settle(KC_HMAC_CTX *w)
{
    int ok;

    if (defer_adopt(w))
        return 1;
    ok = defer_key(w) == 1 && defer_replay(w, w->inner);
    defer_wipe(w);
    kc_vector_wipe();
    return ok;
}

/*
 * HMAC of the deferred key and message on one context of the default's
 * digest functions, as HMAC_Init_ex() and HMAC_Final() compute it: a key
 * longer than the block is its digest, padded with zeros to the block.
 */
static int defer_mac(KC_HMAC_CTX *w, unsigned char *out, size_t *outl,
                     size_t outsize)
{
    const KC_DIGEST *d = w->dg;
    const KC_DIGEST_FNS *f = &d->fns;
    size_t bs = (size_t)d->block_size, kl = w->dkeylen, n = 0, i;
    unsigned char pad[KC_HMAC_BLOCK_MAX], ih[EVP_MAX_MD_SIZE];
    void *dc;
    int ok = 1;

    if (outsize < d->size
        || (dc = f->newctx(w->pctx->inner_provctx)) == NULL)
        return 0;
    if (kl > bs)
        ok = f->init(dc, NULL) && f->update(dc, w->dkey, kl)
             && f->final(dc, pad, &kl, sizeof(pad)) && kl <= bs;
    else
        memcpy(pad, w->dkey, kl);
    if (ok) {
        memset(pad + kl, 0, bs - kl);
        for (i = 0; i < bs; i++)
            pad[i] ^= 0x36;
        ok = f->init(dc, NULL) && f->update(dc, pad, bs)
             && f->update(dc, w->dbuf, w->dlen)
             && f->final(dc, ih, &n, sizeof(ih));
        for (i = 0; i < bs; i++)
            pad[i] ^= 0x36 ^ 0x5c;
        ok = ok && f->init(dc, NULL) && f->update(dc, pad, bs)
             && f->update(dc, ih, n) && f->final(dc, out, outl, outsize);
    }
    f->freectx(dc);
    OPENSSL_cleanse(pad, sizeof(pad));
    OPENSSL_cleanse(ih, sizeof(ih));
    kc_vector_wipe();
    return ok;
}

static KC_NOINLINE int defer_update(KC_HMAC_CTX *w, const unsigned char *data,
                                    size_t datalen)
{
    if (!defer_adopt(w)) {
        if (w->deferred == DEFER_KEYED && datalen <= KC_DEFER_MAX - w->dlen) {
            if (datalen != 0)
                memcpy(w->dbuf + w->dlen, data, datalen);
            w->dlen += datalen;
            return 1;
        }
        if (!defer_settle(w))
            return 0;
    }
    return fns(w)->update(w->inner, data, datalen);
}

static KC_NOINLINE int defer_final(KC_HMAC_CTX *w, unsigned char *out,
                                   size_t *outl, size_t outsize)
{
    if (!defer_adopt(w)) {
        if (w->deferred == DEFER_KEYED && defer_mac(w, out, outl, outsize)) {
            w->deferred = DEFER_SPENT;
            return 1;
        }
        if (!defer_settle(w))
            return 0;
    }
    return fns(w)->final(w->inner, out, outl, outsize);
}

/*
 * A keyless re-init: of a message not finished, the key alone again; once
 * finished, the context is reused and becomes the default's, keyed (the
 * state a keyless re-init leaves, whatever came before).
 */
static KC_NOINLINE int defer_restart(KC_HMAC_CTX *w)
{
    int r;

    if (defer_adopt(w))
        return fns(w)->init(w->inner, NULL, 0, NULL);
    if (w->deferred == DEFER_KEYED) {
        OPENSSL_cleanse(w->dbuf, w->dlen);
        w->dlen = 0;
        return 1;
    }
    r = defer_key(w);
    defer_wipe(w);
    kc_vector_wipe();
    return r == 1;
}

/*
 * A default context in the state w's deferred calls made, w unchanged (a
 * copy's source): keyed, the message replayed, finished if it was.  NULL
 * where the application's default cannot give the same digest now.
 */
static void *defer_make(const KC_HMAC_CTX *w)
{
    const KC_MAC_FNS *f = fns(w);
    void *ctx;
    int ok;

    if (__atomic_load_n(&w->pctx->app_gone, __ATOMIC_ACQUIRE)
        || w->dg_gen != kc_props_gen(w->pctx)
        || (ctx = kc_inner_app_newctx(w->dg, f->newctx)) == NULL)
        return NULL;
    ok = inner_set_name(w, ctx, w->dg == w->hint_dg ? w->hint : w->dg->name,
                        NULL)
         && f->init(ctx, w->dkey, w->dkeylen, NULL)
         && defer_replay(w, ctx);
    kc_vector_wipe();
    if (!ok) {
        f->freectx(ctx);
        return NULL;
    }
    return ctx;
}

/*
 * The default's context of a deferred w, for a copy: made by w's first copy
 * and published in w (a copy only reads w otherwise; copies may run in
 * several threads at once), taken over by w's next call (defer_adopt()).
 * The one published, or NULL if none can be made.
 */
static KC_NOINLINE void *defer_publish(KC_HMAC_CTX *w)
{
    void *p, *none = NULL;

    ERR_set_mark();
    p = defer_make(w);
    ERR_pop_to_mark();
    if (p != NULL
        && !__atomic_compare_exchange_n(&w->promoted, &none, p, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        fns(w)->freectx(p);
        p = none;
    }
    return p;
}

/*
 * A thread's first miss, not admitted (see app_misses): deferred if plain
 * (a key as given, the default's SHA digest by name), else keyed in the
 * application's context.
 */
static KC_NOINLINE int key_app(KC_HMAC_CTX *w, const unsigned char *key,
                               size_t keylen, int plain)
{
    int r;

    if (plain && w->dg->hmac_plain && w->dg_props == NULL && app_inner_ok(w)
        && __atomic_load_n(&w->dg->md, __ATOMIC_ACQUIRE) != NULL) {
        memcpy(w->dkey, key, keylen);
        w->dkeylen = keylen;
        w->dlen = 0;
        w->deferred = DEFER_KEYED;
        app_misses++;
        return 1;
    }
    if ((r = key_app_ctx(w, key, keylen)) >= 0)
        app_misses++;
    return r;
}

/*
 * Key the wrapper from the cache: 1/0 as the default would, -1 to pass.
 * plain: key is the application's (not a long key's digest).
 */
static int setkey_cached_as(KC_HMAC_CTX *w, const unsigned char *key,
                            size_t keylen, int plain)
{
    KC_PROVCTX *pctx = w->pctx;
    const KC_MAC_FNS *f = fns(w);
    KC_LOOKUP lk;
    KC_CACHE *c;
    void *tmpl, *inner;
    int r, tried = 0;

    if (key == NULL || w->dg == NULL || keylen > KEYCACHE_MAX_KEY_LEN
        || (c = kc_cache_get(pctx)) == NULL)
        return -1;

    /*
     * Keyed again with the key it holds (compared in constant time; a key
     * changed in place never matches): a keyless init gives the same state.
     */
    if (holds_key(c, w, key, keylen)) {
        if (!f->init(w->inner, NULL, 0, NULL))
            return -1;
        /* (a long key's digest given as the key: the inner's key now) */
        key_taken(w);
        kc_count_hit(pctx, &pctx->hmac_alg);
        return 1;
    }

    /*
     * A thread's first misses, in contexts keyed for the first time, are
     * neither looked up nor counted: a thread or fork child that keys once
     * or twice would pay the key's hash for nothing.  Not with admit_after
     * 1, which caches a key at its first keying.  A context keyed again
     * takes the usual way.
     */
    if (app_misses < KC_APP_MISSES && w->inner == NULL
        && pctx->admit_after > 1 && !w->rekeyed) {
        if ((r = key_app(w, key, keylen, plain)) >= 0) {
            if (r == 1)
                kc_count_passthrough(pctx, &pctx->hmac_alg);
            return r;
        }
        tried = 1;
    }

    /* the old inner goes back to its entry, restarted, or is freed */
    release_inner(c, w);

    lk.counted = &w->counted;
    lk.hash = 0;
    tmpl = kc_cache_find(c, &pctx->hmac_alg, w->dg, key, keylen, &lk);
    if (tmpl != NULL) {
        if (lk.spare != NULL) {
            /* re-initialised when it was given back: "just keyed" */
            inner = lk.spare;
        } else if ((inner = f->dupctx(tmpl)) == NULL) {
            return -1;
        }
        w->inner = inner;
        w->lease = lk.lease;
        remember_key(w, key, keylen, 1);
        return 1;
    }

    /*
     * A miss: among the thread's first, keyed at once unless admitted (its
     * context becomes a template); else key a context as the default
     * would, or from the thread's second miss on a copy (a thread that
     * keys once pays no copy).
     */
    if (app_misses < KC_APP_MISSES && !tried && !lk.admit && !lk.pending) {
        if ((r = key_app(w, key, keylen, plain)) >= 0) {
            /* the second time this context misses with this key: kept */
            if (r == 1 && lk.hash != 0 && lk.hash == w->missed_hash)
                remember_key(w, key, keylen, 0);
            w->missed_hash = lk.hash;
            /* counted as any miss not admitted (a failure was, forwarded) */
            if (r == 1)
                kc_count_passthrough(pctx, &pctx->hmac_alg);
            return r;
        }
    }
    if (!key_missed(w, c, key, keylen,
                    kc_cache_missed_before(c, &pctx->hmac_alg)))
        return 0;
    /* (a stale digest's private inner: passed through, counted so) */
    if (w->passthrough)
        return 1;
    inner = w->inner;
    /* the second time this context misses with this key: keyed again */
    if (lk.hash != 0 && lk.hash == w->missed_hash)
        remember_key(w, key, keylen, 0);
    w->missed_hash = lk.hash;
    /*
     * Admitted (its admit_after-th use): the template is this very context,
     * restarted when given back, as a key used exactly admit_after times
     * never hits and its admission must cost next to nothing.  Should it
     * not come back, the next miss gives the entry a copy (lk.pending).
     */
    if (lk.pending) {
        if ((tmpl = f->dupctx(inner)) != NULL
            && !kc_cache_park_in(c, &lk.lease, tmpl, as_is, w))
            f->freectx(tmpl);
        w->lease = lk.lease;
    }
    if (!lk.admit
        || !kc_cache_add(c, &pctx->hmac_alg, w->dg, key, keylen, NULL, &lk)) {
        kc_count_passthrough(pctx, &pctx->hmac_alg);
        return 1;
    }
    w->lease = lk.lease;
    return 1;
}

/*
 * A cold context (made while the thread's look-ups almost all missed:
 * kc_wrapper_take()) looks nothing up, admits nothing and keeps no key:
 * keyed as a miss is, any length as given, and counted when it was made.
 */
static KC_NOINLINE int setkey_cold(KC_HMAC_CTX *w, const unsigned char *key,
                                   size_t keylen)
{
    KC_CACHE *c;

    if (key == NULL || w->dg == NULL || (c = kc_cache_get(w->pctx)) == NULL)
        return -1;
    /* (never leased, nor holding a key or a long key's digest) */
    if (w->inner != NULL) {
        free_inner(w);
        w->inner = NULL;
    }
    return key_missed(w, c, key, keylen, 1);
}

/*
 * HMAC keys with the digest of a key longer than the block (RFC 2104), so
 * such a key is cached as its digest: the same state, and a key the cache
 * can hold.  Keys too long for the cache but within the block pass through.
 */
static KC_NOINLINE int setkey_long(KC_HMAC_CTX *w, const unsigned char *key,
                                   size_t keylen)
{
    unsigned char kd[EVP_MAX_MD_SIZE];
    int r;

    w->long_key = 0;
    if (key == NULL || w->dg == NULL || w->dg->block_size <= 0
        || keylen <= (size_t)w->dg->block_size
        || !kc_inner_digest_key(w->pctx, w->dg, key, keylen, kd, sizeof(kd)))
        return -1;
    r = setkey_cached_as(w, kd, w->dg->size, 0);
    OPENSSL_cleanse(kd, sizeof(kd));
    /* given to an inner, kept or not (a failure forwards all): see tls */
    w->long_key = r >= 0 && w->inner != NULL;
    w->tls_size = 0;
    return r;
}

static ossl_inline int setkey_cached(KC_HMAC_CTX *w, const unsigned char *key,
                                     size_t keylen)
{
    int r = w->cold ? setkey_cold(w, key, keylen)
            : keylen <= KEYCACHE_MAX_KEY_LEN ? setkey_cached_as(w, key, keylen, 1)
            : setkey_long(w, key, keylen);

    /* what copies of the key or its cached state left in them */
    kc_vector_wipe();
    return r;
}

static void *kc_hmac_newctx(void *provctx)
{
    KC_PROVCTX *pctx = provctx;
    KC_CACHE *c;
    int cold;
    KC_HMAC_CTX *w = kc_wrapper_take(pctx, KC_POOL_HMAC, sizeof(*w),
                                     &pctx->hmac_alg, &cold, &c);

    if (w == NULL)
        return NULL;
    memset(w, 0, KC_HMAC_HEAD);
    w->promoted = NULL;
    w->pctx = pctx;
    w->cold = cold;
    if (c != NULL)
        w->hint_dg = kc_cache_memo_last(c, w->hint, &w->hint_gen);
    return w;
}

/* a deferred context freed: its default one if a copy made it, or wiped */
static KC_NOINLINE void defer_free(KC_HMAC_CTX *w)
{
    if (defer_adopt(w))
        free_inner(w);
    else
        defer_wipe(w);
}

static void kc_hmac_freectx(void *vctx)
{
    KC_HMAC_CTX *w = vctx;
    KC_CACHE *c;

    if (w == NULL)
        return;
    c = kc_cache_here(w->pctx);
    forget_key(w);
    /* (a deferred context has no inner: a copy may have made its own) */
    if (w->inner != NULL) {
        if (!park_inner(c, w))
            free_inner(w);
    } else if (w->deferred != DEFER_NONE) {
        defer_free(w);
    }
    if (w->dg_props != NULL)
        OPENSSL_free(w->dg_props);
    kc_wrapper_free_in(c, KC_POOL_HMAC, w, sizeof(*w));
}

/* dst deferred as src is (its head, deferred included, copied already) */
static KC_NOINLINE void defer_copy(const KC_HMAC_CTX *src, KC_HMAC_CTX *dst)
{
    memcpy(dst->dkey, src->dkey, src->dkeylen);
    memcpy(dst->dbuf, src->dbuf, src->dlen);
    dst->dkeylen = src->dkeylen;
    dst->dlen = src->dlen;
}

static void *kc_hmac_dupctx(void *vctx)
{
    KC_HMAC_CTX *src = vctx, *dst;

    if ((dst = kc_wrapper_take_copy(src->pctx, KC_POOL_HMAC,
                                    sizeof(*dst))) == NULL)
        return NULL;
    memcpy(dst, src, KC_HMAC_HEAD);
    dst->promoted = NULL;
    dst->tls_size = src->tls_size;
    /* the copy owns its inner outright; only the original holds the lease */
    memset(&dst->lease, 0, sizeof(dst->lease));
    /* nor the key: a copy keyed again takes the usual way */
    dst->have_key = KEY_NONE;
    /* (a deferred src holds no inner, query, application MAC or lease) */
    if (src->deferred != DEFER_NONE) {
        void *p = __atomic_load_n(&src->promoted, __ATOMIC_ACQUIRE);

        /* a copy of its default context, made by its first copy */
        if (p == NULL)
            p = defer_publish(src);
        if (p != NULL && (dst->inner = fns(src)->dupctx(p)) != NULL) {
            dst->deferred = DEFER_NONE;
            dst->app_keyed = 1;
        } else {
            defer_copy(src, dst);
        }
        return dst;
    }
    if (src->dg_props != NULL
        && (dst->dg_props = OPENSSL_strdup(src->dg_props)) == NULL)
        goto err;
    if (src->inner != NULL
        && (dst->inner = fns(src)->dupctx(src->inner)) == NULL)
        goto err;
    /* an application default's context keeps that provider loaded */
    if (dst->app_mac != NULL && !EVP_MAC_up_ref(dst->app_mac)) {
        fns(dst)->freectx(dst->inner);
        goto err;
    }
    return dst;
 err:
    OPENSSL_free(dst->dg_props);
    kc_wrapper_free(src->pctx, KC_POOL_HMAC, dst, sizeof(*dst));
    return NULL;
}

static int set_key_param(KC_HMAC_CTX *w, const OSSL_PARAM *p)
{
    OSSL_PARAM one[2];
    int r;

    if (p->data_type != OSSL_PARAM_OCTET_STRING)
        return 0;
    r = setkey_cached(w, p->data, p->data_size);
    if (r >= 0)
        return r;
    if (!go_passthrough(w))
        return 0;
    one[0] = *p;
    one[1] = OSSL_PARAM_construct_end();
    r = fns(w)->set_ctx_params(w->inner, one);
    /* the default drops the key it held before it can fail to take this */
    key_taken(w);
    return r;
}

enum { P_OTHER, P_DIGEST, P_PROPS, P_KEY, P_UNRESETTABLE };

/* One pass over the names instead of a locate per name: this is hot. */
static int classify(const char *k)
{
    switch (k[0]) {
    case 'd':
        if (strcmp(k, OSSL_MAC_PARAM_DIGEST) == 0)
            return P_DIGEST;
        if (strcmp(k, OSSL_MAC_PARAM_DIGEST_NOINIT) == 0
            || strcmp(k, OSSL_MAC_PARAM_DIGEST_ONESHOT) == 0)
            return P_UNRESETTABLE;
        break;
    case 'p':
        if (strcmp(k, OSSL_MAC_PARAM_PROPERTIES) == 0)
            return P_PROPS;
        break;
    case 'k':
        if (strcmp(k, OSSL_MAC_PARAM_KEY) == 0)
            return P_KEY;
        break;
    case 't':
        if (strcmp(k, OSSL_MAC_PARAM_TLS_DATA_SIZE) == 0)
            return P_UNRESETTABLE;
        break;
    case 'e':
        if (kc_quirk_is_engine_param(k))
            return P_UNRESETTABLE;
        break;
    }
    return P_OTHER;
}

static int pt_set_ctx_params(KC_HMAC_CTX *w, const OSSL_PARAM params[]);

/* params to the inner; a success drops what its own fetches raised */
static int inner_set_quietly(KC_HMAC_CTX *w, const OSSL_PARAM params[])
{
    ERR_set_mark();
    if (fns(w)->set_ctx_params(w->inner, params) != 1) {
        ERR_clear_last_mark();
        return 0;
    }
    ERR_pop_to_mark();
    return 1;
}

static KC_NOINLINE int set_params(KC_HMAC_CTX *w, const OSSL_PARAM params[])
{
    const OSSL_PARAM *p, *dig = NULL, *props = NULL, *key = NULL;
    const char *pq;

    if (w->deferred != DEFER_NONE && !defer_settle(w))
        return 0;

    for (p = params; p->key != NULL; p++) {
        switch (classify(p->key)) {
        case P_DIGEST:
            if (dig != NULL)
                goto passthrough;
            dig = p;
            break;
        case P_PROPS:
            if (props != NULL)
                goto passthrough;
            props = p;
            break;
        case P_KEY:
            if (key != NULL)
                goto passthrough;
            key = p;
            break;
        case P_UNRESETTABLE:
            /* state a keyless re-init cannot undo: an inner of its own */
            goto passthrough;
        }
    }
    /* (a name twice passes through too: versions differ on which wins) */

    /* the default checks the properties' type even without a digest */
    if (props != NULL && props->data_type != OSSL_PARAM_UTF8_STRING)
        return 0;
    pq = props != NULL ? props->data : NULL;
    if (dig != NULL) {
        const KC_DIGEST *d;

        if (dig->data_type != OSSL_PARAM_UTF8_STRING)
            return 0;
        if (w->inner != NULL) {
            /*
             * Re-stating the keyed digest changes nothing; another is the
             * inner's to set.  A success leaves what the application's
             * context's fetch left, as the default's would (OpenSSL 4),
             * not what the inner's own fetch raises.
             */
            ERR_set_mark();
            d = resolve_digest(w, dig->data, pq);
            if (d == NULL) {
                ERR_pop_to_mark();
                goto passthrough;
            }
            ERR_clear_last_mark();
            if (d != w->dg)
                goto passthrough_quiet;
        } else {
            /* read first: what resolves is of this generation or later */
            unsigned int gen = kc_props_gen(w->pctx);

            d = resolve_digest(w, dig->data, pq);
            if (d == NULL) {
                /* the default forgets its digest when a fetch fails */
                set_digest(w, NULL, NULL);
                return 0;
            }
            if (d == &unknown_digest)
                goto passthrough;
            if (!set_digest(w, d, pq))
                return 0;
            w->dg_gen = gen;
        }
    }
    if (key != NULL)
        return set_key_param(w, key);
    return 1;

 passthrough:
    if (!go_passthrough_app(w))
        return 0;
    return pt_set_ctx_params(w, params);

 passthrough_quiet:
    if (!go_passthrough_app(w))
        return 0;
    if (!inner_set_quietly(w, params))
        return 0;
    /* a key with the new digest: the inner holds that key itself */
    if (key != NULL)
        key_taken(w);
    return 1;
}

/* Does a name stand twice in params?  (4.x's decoders refuse that first.) */
static int names_twice(const OSSL_PARAM params[])
{
    const OSSL_PARAM *p, *q;

    for (p = params; p->key != NULL; p++)
        for (q = p + 1; q->key != NULL; q++)
            if (strcmp(p->key, q->key) == 0)
                return 1;
    return 0;
}

/*
 * The state the default's set of params leaves where its digest fetch
 * fails: its old digest dropped, nothing after it taken.  The inner may
 * find the name (keycache's private context has the default's digests),
 * so it is given a name no provider has.
 */
static void pt_fail_digest(KC_HMAC_CTX *w, const OSSL_PARAM params[],
                           const OSSL_PARAM *dig)
{
    static char none[] = "keycache: no such digest";
    OSSL_PARAM cp[16];
    size_t n;

    for (n = 0; params[n].key != NULL; n++)
        if (n + 1 == sizeof(cp) / sizeof(cp[0])) {
            (void)fns(w)->set_ctx_params(w->inner, params);
            return;
        }
    memcpy(cp, params, (n + 1) * sizeof(cp[0]));
    cp[dig - params] = OSSL_PARAM_construct_utf8_string(dig->key, none, 0);
    (void)fns(w)->set_ctx_params(w->inner, cp);
}

/*
 * A digest for an inner that may be keycache's private one (new_inner()),
 * passed through.  Such an inner fetches it in keycache's library
 * context, the default in the application's: whether
 * the name is found there, and what a fetch leaves on the error queue,
 * are that context's to say.  So the name is fetched there first.  If
 * that fails, the default's set fails with those errors, and the inner
 * fails quietly at the same point (pt_fail_digest()).
 * Otherwise the inner's set decides; where OpenSSL 4 keeps a successful
 * fetch's errors, the application's context's stay, not the inner's.
 */
static KC_NOINLINE int pt_set_digest(KC_HMAC_CTX *w, const OSSL_PARAM params[],
                                     const OSSL_PARAM *dig)
{
    const OSSL_PARAM *props =
        OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_PROPERTIES);
    EVP_MD *md;
    int ok;

    /*
     * A list the default may refuse before any fetch (a type it cannot
     * read, a name twice): the inner refuses it the same way.
     */
    if (dig->data_type != OSSL_PARAM_UTF8_STRING
        || (props != NULL && props->data_type != OSSL_PARAM_UTF8_STRING)
        || names_twice(params))
        return fns(w)->set_ctx_params(w->inner, params);
    ERR_set_mark();
    md = app_md_fetch(w->pctx, dig->data, props != NULL ? props->data : NULL);
    if (md == NULL) {
        ERR_set_mark();
        pt_fail_digest(w, params, dig);
        ERR_pop_to_mark();
        ERR_clear_last_mark();
        return 0;
    }
    EVP_MD_free(md);
    if (!kc_quirk_load_keeps_errors) {
        ERR_pop_to_mark();
        return fns(w)->set_ctx_params(w->inner, params);
    }
    ERR_set_mark();
    ok = fns(w)->set_ctx_params(w->inner, params);
    if (ok == 1)
        ERR_pop_to_mark();
    else
        ERR_clear_last_mark();
    ERR_clear_last_mark();
    return ok;
}

/* params passed through: a digest named to a new_inner() one, as above */
static int pt_forward(KC_HMAC_CTX *w, const OSSL_PARAM params[])
{
    const OSSL_PARAM *dig;

    if (w->app_mac == NULL && !w->app_keyed && params != NULL
        && (dig = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_DIGEST))
           != NULL)
        return pt_set_digest(w, params, dig);
    return fns(w)->set_ctx_params(w->inner, params);
}

/*
 * params passed through to an inner holding a long key's digest: a record
 * size is given as KC_TLS_REFUSED; a key (set before the record size, as
 * the default sets them) ends that.  What a set that fails did is not
 * known (it may stop before or after the key): keycache's view stays as it
 * was (docs/limits.md).
 */
static KC_NOINLINE int pt_set_long(KC_HMAC_CTX *w, const OSSL_PARAM params[])
{
    const OSSL_PARAM *p;
    OSSL_PARAM *cp;
    size_t n, size, refused = KC_TLS_REFUSED;
    int ok, got;

    if ((p = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_KEY)) != NULL
        && p->data_type == OSSL_PARAM_OCTET_STRING) {
        if ((ok = pt_forward(w, params)) != 1)
            return ok;
        /* a record size in the same list is the one the inner has now */
        if (OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_TLS_DATA_SIZE)
            != NULL)
            w->tls_size = 0;
        key_taken(w);
        return ok;
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_TLS_DATA_SIZE))
        == NULL)
        return pt_forward(w, params);
    /* the default's own read of it: one it cannot read fails there as is */
    ERR_set_mark();
    got = OSSL_PARAM_get_size_t(p, &size);
    ERR_pop_to_mark();
    for (n = 0; params[n].key != NULL; n++)
        continue;
    if ((cp = OPENSSL_memdup(params, (n + 1) * sizeof(*params))) == NULL)
        return 0;
    if (got && size > 0)
        cp[p - params] = OSSL_PARAM_construct_size_t(
            OSSL_MAC_PARAM_TLS_DATA_SIZE, &refused);
    ok = pt_forward(w, cp);
    OPENSSL_free(cp);
    if (ok == 1 && got)
        w->tls_size = size;
    return ok;
}

static KC_NOINLINE int pt_set_ctx_params(KC_HMAC_CTX *w,
                                         const OSSL_PARAM params[])
{
    if (w->long_key && params != NULL)
        return pt_set_long(w, params);
    return pt_forward(w, params);
}

/* A keyed init passed through: the inner holds that key from then on. */
static KC_NOINLINE int pt_init(KC_HMAC_CTX *w, const unsigned char *key,
                               size_t keylen)
{
    int ok = fns(w)->init(w->inner, key, keylen, NULL);

    if (key != NULL)
        key_taken(w);
    return ok;
}

/* EVP_Q_mac() and EVP_MAC_init() pass NULL or empty lists too: cheaply */
static int kc_hmac_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    KC_HMAC_CTX *w = vctx;

    if (params == NULL)
        return 1;
    if (w->passthrough)
        return pt_set_ctx_params(w, params);
    return params[0].key == NULL || set_params(w, params);
}

static int kc_hmac_init(void *vctx, const unsigned char *key, size_t keylen,
                        const OSSL_PARAM params[])
{
    KC_HMAC_CTX *w = vctx;
    int r;

    if (w->passthrough) {
        /* the default's init sets the params, then the key */
        if (!w->long_key && (params == NULL || params[0].key == NULL))
            return fns(w)->init(w->inner, key, keylen, params);
        if (params != NULL && params[0].key != NULL
            && !pt_set_ctx_params(w, params))
            return 0;
        return pt_init(w, key, keylen);
    }
    if (params != NULL && params[0].key != NULL) {
        if (!set_params(w, params))
            return 0;
        if (w->passthrough) /* the params just switched us over */
            return pt_init(w, key, keylen);
    }
    if (key == NULL) {
        /* keyless re-init; never keyed at all fails like HMAC_Init_ex */
        if (w->inner != NULL)
            return fns(w)->init(w->inner, NULL, 0, NULL);
        return w->deferred != DEFER_NONE ? defer_restart(w) : 0;
    }
    /*
     * A new key replaces all a deferred context holds, the key it may have
     * remembered too (a deferred inner is NULL: nothing releases that),
     * and is keyed as a context keyed again is: looked up.
     */
    if (w->deferred != DEFER_NONE && !defer_adopt(w)) {
        defer_wipe(w);
        forget_key(w);
        w->rekeyed = 1;
    }
    r = setkey_cached(w, key, keylen);
    if (r >= 0)
        return r;
    if (!go_passthrough(w))
        return 0;
    return pt_init(w, key, keylen);
}

static int kc_hmac_update(void *vctx, const unsigned char *data,
                          size_t datalen)
{
    KC_HMAC_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->update(w->inner, data, datalen);
    /* an unkeyed default ctx has no digest and refuses quietly */
    return w->deferred != DEFER_NONE ? defer_update(w, data, datalen) : 0;
}

static int kc_hmac_final(void *vctx, unsigned char *out, size_t *outl,
                         size_t outsize)
{
    KC_HMAC_CTX *w = vctx;

    if (w->inner != NULL)
        return fns(w)->final(w->inner, out, outl, outsize);
    return w->deferred != DEFER_NONE ? defer_final(w, out, outl, outsize) : 0;
}

static const OSSL_PARAM *kc_hmac_gettable_ctx_params(void *vctx,
                                                     void *provctx)
{
    KC_PROVCTX *pctx = provctx;

    return KC_CTX_TABLE(pctx->hmac.gettable_ctx_params, pctx);
}

static const OSSL_PARAM *kc_hmac_settable_ctx_params(void *vctx,
                                                     void *provctx)
{
    KC_PROVCTX *pctx = provctx;

    return KC_CTX_TABLE(pctx->hmac.settable_ctx_params, pctx);
}

/* Never keyed (rare): a default context with the digest answers. */
static KC_NOINLINE int unkeyed_get_params(KC_HMAC_CTX *w, OSSL_PARAM params[])
{
    void *tmp = new_inner(w);
    int ok;

    if (tmp == NULL)
        return 0;
    ok = fns(w)->get_ctx_params(tmp, params);
    fns(w)->freectx(tmp);
    return ok;
}

/*
 * Deferred: the size known; else asked of a default context in w's state,
 * the one a copy published or one made for the question, w unchanged
 * (copies may be reading it on other threads, and a get is a read too);
 * w settled only where none can be made.
 */
static KC_NOINLINE int defer_get_params(KC_HMAC_CTX *w, OSSL_PARAM params[])
{
    void *tmp;
    int ok;

    if (kc_answer_size(params, w->dg->size))
        return 1;
    if ((tmp = __atomic_load_n(&w->promoted, __ATOMIC_ACQUIRE)) != NULL)
        return fns(w)->get_ctx_params(tmp, params);
    if ((tmp = defer_make(w)) == NULL)
        return defer_settle(w) && fns(w)->get_ctx_params(w->inner, params);
    ok = fns(w)->get_ctx_params(tmp, params);
    fns(w)->freectx(tmp);
    return ok;
}

static int kc_hmac_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_HMAC_CTX *w = vctx;

    /* before every final, without the default's param walk */
    if (w->inner != NULL && !w->passthrough
        && kc_answer_size(params, w->dg->size))
        return 1;
    /* a clean inner holds exactly the default's digest and key */
    if (w->inner != NULL)
        return fns(w)->get_ctx_params(w->inner, params);
    if (w->deferred != DEFER_NONE)
        return defer_get_params(w, params);
    return unkeyed_get_params(w, params);
}

const OSSL_DISPATCH kc_hmac_functions[] = {
    { OSSL_FUNC_MAC_NEWCTX, (void (*)(void))kc_hmac_newctx },
    { OSSL_FUNC_MAC_DUPCTX, (void (*)(void))kc_hmac_dupctx },
    { OSSL_FUNC_MAC_FREECTX, (void (*)(void))kc_hmac_freectx },
    { OSSL_FUNC_MAC_INIT, (void (*)(void))kc_hmac_init },
    { OSSL_FUNC_MAC_UPDATE, (void (*)(void))kc_hmac_update },
    { OSSL_FUNC_MAC_FINAL, (void (*)(void))kc_hmac_final },
    { OSSL_FUNC_MAC_GETTABLE_CTX_PARAMS,
      (void (*)(void))kc_hmac_gettable_ctx_params },
    { OSSL_FUNC_MAC_GET_CTX_PARAMS, (void (*)(void))kc_hmac_get_ctx_params },
    { OSSL_FUNC_MAC_SETTABLE_CTX_PARAMS,
      (void (*)(void))kc_hmac_settable_ctx_params },
    { OSSL_FUNC_MAC_SET_CTX_PARAMS, (void (*)(void))kc_hmac_set_ctx_params },
    { 0, NULL }
};
