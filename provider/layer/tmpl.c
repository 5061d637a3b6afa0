/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The template core's MAC side (core.c): CMAC, GMAC, KMAC.  Before the key
 * a wrapper records its set_ctx_params calls; anything a record cannot
 * hold (a name twice, updates, keyless inits) passes through.  Keyed, it
 * forwards; used contexts are never handed out again but as CMAC's spares.
 */
#include <stddef.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "layer/layer.h"

/* what the record memo learns about a record */
#define KC_REC_VALID KC_TVALID  /* every call returned 1 and raised nothing */
#define KC_REC_CACHEABLE 2      /* a shape whose templates may be cached */
#define KC_REC_PRIVATE 4        /* its cipher named, the built-in default's */
#define KC_SHAPE_SALT 0x5851f42d4c957f2dULL /* mixed into a shape's memo key */

typedef struct {
    KC_PROVCTX *pctx;
    const KC_TFAM *f;
    /* what t.inner is: the default's (f->mac) or the family's own (direct) */
    const KC_MAC_FNS *ops;
    /*
     * reinit_restores: where inner goes back when freed, if still clean;
     * clean too while key[] is held, wiped at the free (free_clean())
     */
    KC_LEASE lease;
    int clean;
    /* the properties' generation when it was made: see deflt_new() */
    unsigned int gen;
    /*
     * The size it reports till a call sets something, 0: ask.  keyed_size
     * once keyed with a cacheable shape; a first context's, as answered.
     */
    size_t size;
    EVP_MAC *app_mac;           /* inner is the application's default's */
    /*
     * A thread's first context (kc_tcore_app_first()) or a copy of one:
     * KC_FIRST_SHAPE while only set_ctx_params calls its record holds made
     * its state (then its copies are usual contexts: settled_copy()),
     * KC_FIRST_PLAIN after; KC_FIRST_COLD: a cold context of a family
     * naming a cipher, or one whose newctx fetch finds another provider's
     * (new_fetch()), the application's default's too; 0: none of them.
     */
    int first;
    /* its record is the shape of one of the thread's bases */
    int based;
    /* a first context's key[] holds the key its inner has, of this length */
    size_t held;
    /* the record: the shape's calls, then the volatile calls, never mixed */
    KC_TCORE t;
    /* not cleared at new: read only while held */
    unsigned char key[KC_HELD_MAX];
} KC_TMAC_CTX;

#define KC_FIRST_PLAIN 1        /* set in each: the application's default's */
#define KC_FIRST_RECORD 2
#define KC_FIRST_SHAPE (KC_FIRST_PLAIN | KC_FIRST_RECORD)
#define KC_FIRST_COLD (KC_FIRST_PLAIN | 4)      /* its size is not learned */
/* keyed in its first init, its record and key[] its state: first_copy() */
#define KC_FIRST_KEYED 8
/* key[] holds the key its inner has (with KEYED, and after while it does) */
#define KC_FIRST_HELD 16
/* what a copy of a first context does not inherit: its inner's state only */
#define KC_FIRST_OWN (KC_FIRST_RECORD | KC_FIRST_KEYED | KC_FIRST_HELD)

#define W(core) KC_TCORE_OF(KC_TMAC_CTX, core)

static const KC_TSIDE mac_side;

/*
 * The default properties' generation, followed from now on (from a
 * family's gate on anyway); KC_GEN_UNKNOWN where the core will not report
 * their changes.
 */
#define KC_GEN_UNKNOWN 0xffffffffU
static ossl_inline int kc_props_followed(KC_PROVCTX *pctx)
{
    return __atomic_load_n(&pctx->props_registered, __ATOMIC_ACQUIRE) == 1;
}

static ossl_inline unsigned int rec_gen(KC_PROVCTX *pctx)
{
    if (!kc_props_followed(pctx)
        && (pctx->props_follow == NULL || !pctx->props_follow(pctx)))
        return KC_GEN_UNKNOWN;
    return kc_props_gen(pctx);
}

static int append_call(KC_TMAC_CTX *w, const OSSL_PARAM *const *ps, size_t n,
                       int how)
{
    return kc_tcore_append(&w->t, &mac_side, KC_T_CALL, 0, ps, n, how);
}

/* One recorded call: set_ctx_params (a KC_TCALL_FN). */
static int mac_call(const void *fns, void *ctx, const KC_TITEM *call,
                    OSSL_PARAM *p, size_t n)
{
    p[n] = OSSL_PARAM_construct_end();
    return ((const KC_MAC_FNS *)fns)->set_ctx_params(ctx, p);
}

int kc_trec_replay(const unsigned char *rec, size_t len, const KC_MAC_FNS *m,
                   void *ctx)
{
    return kc_trec_replay_calls(rec, 0, len, mac_call, m, ctx);
}

static int nested_set(const KC_TMAC_CTX *w, void *ctx,
                      const OSSL_PARAM params[]);

/* The same where calls ask for the default's cipher (nested_set()). */
static int nested_call(const void *vw, void *ctx, const KC_TITEM *call,
                       OSSL_PARAM *p, size_t n)
{
    (void)call;
    p[n] = OSSL_PARAM_construct_end();
    return nested_set(vw, ctx, p);
}

/* Replay the record's calls in [from, to) onto a default context. */
static int replay(const KC_TMAC_CTX *w, void *ctx, size_t from, size_t to)
{
    if (w->f->asks_default)
        return kc_trec_replay_calls((const unsigned char *)w->t.rec, from,
                                    to, nested_call, w, ctx);
    return kc_trec_replay_calls((const unsigned char *)w->t.rec, from, to,
                                mac_call, &w->f->mac, ctx);
}

/*
 * (layer.h) The application's built-in default's provider context, so that
 * the cipher (or KMAC's digest) a default context fetches comes from the
 * store that library context builds anyway: in keycache's private one the
 * first fetch builds a second whole store, some 5.6M instructions on 3.0,
 * which a process making a few CMACs never earns back.  The private one
 * where the application has no built-in default, once a provider there was
 * unloaded (its fetches would fail where the private one's do not).
 * Wherever keycache offers ciphers there (KC_TFAM.asks_default), calls
 * naming one ask for the default's own (to_default(), in replay() and
 * forward()): no context keycache keeps holds keycache's, whose last
 * reference freed from a thread's cache would stop keycache inside it.
 */
void *kc_tmac_provctx(KC_PROVCTX *pctx, const KC_TFAM *f)
{
    void *provctx;

    /* an unload is heard only once the core's child callbacks are in */
    if (rec_gen(pctx) != KC_GEN_UNKNOWN
        && !__atomic_load_n(&pctx->app_gone, __ATOMIC_ACQUIRE)
        && (provctx = kc_inner_app_provctx(pctx, (EVP_MAC **)&f->app_first,
                                           f->d->name)) != NULL)
        return provctx;
    return pctx->inner_provctx;
}

/*
 * Does w's record name its cipher with a query, where keycache offers
 * ciphers in the application's context?  Even "" or "?provider=..." may
 * find keycache's own there, which to_default() leaves as asked.
 */
static int names_query(const KC_TMAC_CTX *w)
{
    const char *cipher, *props = NULL;

    return w->f->asks_default
           && kc_trec_last_utf8((const unsigned char *)w->t.rec, w->t.len,
                                w->f->d->cipher_param,
                                OSSL_MAC_PARAM_PROPERTIES, &cipher, &props)
           && props != NULL;
}

/*
 * A new default context for w: kc_tmac_provctx()'s, but the private one's
 * where the default properties may have changed since w was made (the
 * default's context fetched its cipher at a set since, KMAC its digest at
 * newctx, and keeps it; a context made in the application's context now
 * would fetch under today's properties), or where w's query might find
 * keycache's own cipher there: a context keycache keeps must not refer to
 * keycache, whose last reference, freed from a thread's cache at its
 * exit, would stop keycache inside its own lock.
 */
static void *deflt_new(const KC_TMAC_CTX *w)
{
    void *provctx = w->gen != KC_GEN_UNKNOWN && w->gen == rec_gen(w->pctx)
                    && !names_query(w)
                    ? kc_tmac_provctx(w->pctx, w->f) : w->pctx->inner_provctx;

    return w->f->mac.newctx(provctx);
}

/*
 * (layer.h) kc_tmac_provctx() for learning what the default's code does,
 * if a fresh context can be made there (KMAC's newctx fetches its digest:
 * not under default properties that exclude the default); else the
 * private one's, so that nothing is left unlearned for the process's life.
 */
void *kc_tmac_learn_provctx(KC_PROVCTX *pctx, const KC_TFAM *f)
{
    void *provctx = kc_tmac_provctx(pctx, f), *t;

    if (provctx == pctx->inner_provctx)
        return provctx;
    ERR_set_mark();
    t = f->mac.newctx(provctx);
    ERR_pop_to_mark();
    if (t == NULL)
        return pctx->inner_provctx;
    f->mac.freectx(t);
    return provctx;
}

/*
 * Does cipher |name| (props) resolve, in the application's library context,
 * to one of |names| that the built-in default has?
 */
static int cipher_is_one_of(KC_PROVCTX *pctx, const char *name,
                            const char *props, const char *const *names)
{
    EVP_CIPHER *c = kc_inner_cipher_fetch(pctx, name, props, 0);
    int ok = 0;

    for (; c != NULL && *names != NULL && !ok; names++)
        ok = EVP_CIPHER_is_a(c, *names);
    EVP_CIPHER_free(c);
    return ok;
}

/* the record memo's owner of what needs_app() learns */
static const char cipher_memo_owner;

static int private_lacks(KC_PROVCTX *pctx, const char *name,
                         const char *props)
{
    EVP_CIPHER *c = kc_inner_cipher_fetch(pctx, name, props, 1);

    EVP_CIPHER_free(c);
    return c == NULL;
}

/*
 * The first parameter named param, and the first "properties", in params
 * (may be NULL), as the default locates them.
 */
static void first_named(const char *param, const OSSL_PARAM params[],
                        const OSSL_PARAM **np, const OSSL_PARAM **pp)
{
    const OSSL_PARAM *p;

    *np = *pp = NULL;
    for (p = params; p != NULL && p->key != NULL; p++) {
        if (*np == NULL && p->key[0] == param[0] && strcmp(p->key, param) == 0)
            *np = p;
        else if (*pp == NULL && p->key[0] == 'p'
                 && strcmp(p->key, OSSL_MAC_PARAM_PROPERTIES) == 0)
            *pp = p;
    }
}

/*
 * ask(pctx, name, props), remembered per (owner, name, props) while the
 * default properties stay the same: a fetch's answer may change with them,
 * so the callback that says so is registered first.  In the instance's
 * memo, which a thread needs no cache to read (a thread per task asks
 * once per process); per thread where that is full or the strings long.
 */
#define KC_MEMO_PROPS_MAX 256

static int memo_ask(KC_PROVCTX *pctx, const char *owner, const char *name,
                    const char *props,
                    int (*ask)(KC_PROVCTX *, const char *, const char *))
{
    const char *q = props != NULL ? props : "";
    const void *m;
    KC_CACHE *c;
    size_t nlen, plen;
    uint64_t h;
    unsigned int gen;
    int v;

    if ((c = kc_cache_get(pctx)) == NULL || !kc_cache_keep_gen(c, &gen))
        return ask(pctx, name, props);
    /* no query and an empty one are the same query */
    if ((v = kc_cache_pair_hint(c, owner, name, q)) >= 0)
        return v;
    if ((m = kc_cache_memo_get(c, owner, name, q)) != NULL) {
        v = (int)((uintptr_t)m - 1);
        kc_cache_pair_hint_put(c, owner, name, q, v);
        return v;
    }
    if ((plen = strlen(q) + 1) > KC_MEMO_PROPS_MAX)
        return ask(pctx, name, props);
    nlen = strlen(name) + 1;
    /* the memo compares the bytes: the hash only spreads them */
    h = 0;
    memcpy(&h, name, nlen < sizeof(h) ? nlen : sizeof(h));
    h = (h ^ ((uint64_t)nlen << 40) ^ plen) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 32;
    if ((v = kc_cache_rec_get(c, owner, h, (const unsigned char *)name, nlen,
                              (const unsigned char *)q, plen)) < 0) {
        v = ask(pctx, name, q);
        if (!kc_cache_memo_put(c, owner, name, q,
                               (const void *)(uintptr_t)(v + 1), gen)
            && !kc_cache_rec_put(c, owner, h, (const unsigned char *)name,
                                 nlen, (const unsigned char *)q, plen, v,
                                 gen))
            return v;
    }
    kc_cache_pair_hint_put(c, owner, name, q, v);
    return v;
}

/*
 * Must w's default context be the application's default's (as
 * kc_inner_app_mac() makes one), not deflt_new()'s, which may be
 * keycache's private one?  Yes if the cipher it fetches (named in params,
 * else last in the record) resolves in the application's library context
 * to another provider's or to none, which only a fetch there reproduces.
 * Learned per (cipher, properties), memo_ask().  One passing through with
 * no cipher yet fetches whatever later calls name: the application's,
 * then.
 */
static int needs_app(const KC_TMAC_CTX *w, const OSSL_PARAM params[],
                     int passing)
{
    const char *param = w->f->d->cipher_param, *name = NULL, *props = NULL;
    const OSSL_PARAM *np, *pp;

    if (param == NULL || w->pctx->app_libctx == NULL)
        return 0;
    first_named(param, params, &np, &pp);
    if (np != NULL) {
        /* the default fetches only what it reads as a string */
        if (np->data_type != OSSL_PARAM_UTF8_STRING || !kc_trec_utf8_ends(np)
            || (pp != NULL && (pp->data_type != OSSL_PARAM_UTF8_STRING
                               || !kc_trec_utf8_ends(pp))))
            return 0;
        name = np->data;
        props = pp != NULL ? pp->data : NULL;
    } else if (w->based
               || (w->t.value > 0
                   && (w->t.value & (KC_REC_CACHEABLE | KC_REC_PRIVATE)))) {
        /*
         * its cipher was resolved when the shape was learned (a cipher
         * keycache caches, or one it does not, such as 3DES), or, a
         * base's shape, when it was set: the private default's then,
         * whatever the default properties are now, as the default's
         * context keeps what its set fetched (the base may be gone)
         */
        return 0;
    } else {
        /* (a recorded cipher is a string: the default took the call) */
        (void)kc_trec_last_utf8((const unsigned char *)w->t.rec, w->t.len,
                                param, OSSL_MAC_PARAM_PROPERTIES, &name,
                                &props);
    }
    if (name == NULL)
        return passing;
    return memo_ask(w->pctx, &cipher_memo_owner, name, props, private_lacks);
}

/* the record memo's owner of what to_default() learns */
static const char nest_memo_owner;

static int nested_mine(KC_PROVCTX *pctx, const char *name, const char *props)
{
    (void)props;
    return kc_inner_cipher_mine(pctx, name);
}

/*
 * params for a context of the application's default (a first context, or
 * one kc_inner_app_mac() made) of a family whose default fetches its cipher
 * from a family keycache wraps (the registry's nests: GMAC's GCM while
 * aes_gcm is on).  That fetch would find keycache's own there, and the
 * context and its copies pay two wrappers; so a call naming such a cipher
 * and no properties gets "properties=provider=default" too: the default's
 * own cipher, the one keycache's wraps.  Else params.  buf holds cap.
 */
static const OSSL_PARAM *to_default(const KC_TMAC_CTX *w,
                                    const OSSL_PARAM params[],
                                    OSSL_PARAM *buf, size_t cap)
{
    static char props[] = "provider=default";
    const OSSL_PARAM *np, *pp;
    OSSL_PARAM *out;
    size_t n;

    first_named(w->f->d->cipher_param, params, &np, &pp);
    if (np == NULL || pp != NULL || np->data_type != OSSL_PARAM_UTF8_STRING
        || np->data == NULL || !kc_trec_utf8_ends(np)
        || !memo_ask(w->pctx, &nest_memo_owner, np->data, NULL, nested_mine))
        return params;
    for (n = 0; params[n].key != NULL; n++)
        continue;
    if (n + 2 <= cap) {
        out = buf;
    } else {
        /* out of memory: the call as made, correct if slower, and quiet */
        ERR_set_mark();
        out = OPENSSL_malloc((n + 2) * sizeof(*out));
        ERR_pop_to_mark();
        if (out == NULL)
            return params;
    }
    memcpy(out, params, n * sizeof(*out));
    out[n] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                              props, 0);
    out[n + 1] = params[n];
    return out;
}

/* set_ctx_params on a default context ctx of w's family, as forward() */
static int nested_set(const KC_TMAC_CTX *w, void *ctx,
                      const OSSL_PARAM params[])
{
    OSSL_PARAM b[16];
    const OSSL_PARAM *p = params;
    int ok;

    if (w->f->asks_default && params != NULL)
        p = to_default(w, params, b, 16);
    ok = w->f->mac.set_ctx_params(ctx, p);
    if (p != params && p != b)
        OPENSSL_free((void *)p);
    return ok;
}

/* A default context for w: the application's if needs_app() (*mac kept). */
static void *new_inner(const KC_TMAC_CTX *w, const OSSL_PARAM params[],
                       EVP_MAC **mac)
{
    const KC_MAC_FNS *f = &w->f->mac;
    void *ctx;

    *mac = NULL;
    if (needs_app(w, params, 1)
        && (ctx = kc_inner_app_mac(w->pctx, w->f->d->name, f->newctx,
                                   mac)) != NULL)
        return ctx;
    return deflt_new(w);
}

static void free_inner(const KC_TMAC_CTX *w, void *ctx, EVP_MAC *mac)
{
    w->f->mac.freectx(ctx);
    EVP_MAC_free(mac);
}

/* Does a default context take the shape (and volatile calls) quietly? */
static int probe(const KC_TMAC_CTX *w, int vol)
{
    const KC_MAC_FNS *f = &w->f->mac;
    KC_ERRTOP before, after;
    void *t;
    int ok;

    ERR_set_mark();
    kc_err_top(&before);
    /* what the default's code says: where a context can be made */
    ERR_set_mark();
    if ((t = deflt_new(w)) == NULL) {
        ERR_pop_to_mark();
        t = f->newctx(w->pctx->inner_provctx);
    } else {
        ERR_clear_last_mark();
    }
    ok = t != NULL && replay(w, t, 0, w->t.shape_len)
         && (!vol || replay(w, t, w->t.shape_len, w->t.len));
    kc_err_top(&after);
    ok = ok && kc_err_same(&before, &after);
    if (t != NULL)
        f->freectx(t);
    ERR_pop_to_mark();
    return ok;
}

/* The last cipher the shape loads is one of the family's ciphers. */
static int cipher_cacheable(KC_PROVCTX *pctx, const KC_TDESC *d,
                            const unsigned char *shape, size_t len)
{
    const char *cipher, *props;

    return kc_trec_last_utf8(shape, len, d->cipher_param,
                             OSSL_MAC_PARAM_PROPERTIES, &cipher, &props)
           && cipher_is_one_of(pctx, cipher, props, d->ciphers);
}

/* Every name of the shape is one the family caches, and it agrees. */
static int shape_cacheable(const KC_TMAC_CTX *w)
{
    const unsigned char *rec = (const unsigned char *)w->t.rec;
    const KC_TDESC *d = w->f->d;
    size_t off = 0;
    OSSL_PARAM p;
    KC_TITEM it;

    while (off < w->t.shape_len) {
        off = kc_trec_get(rec, off, &it, &p);
        if ((it.tag == KC_T_PARAM || it.tag == KC_T_SIG)
            && !kc_name_in_list(d->shape_names, p.key))
            return 0;
    }
    return d->ciphers == NULL || cipher_cacheable(w->pctx, d, rec,
                                                  w->t.shape_len);
}

/*
 * Has any thread learned a shape the default takes, naming its cipher, that
 * its family does not cache?  Until then uncacheable_as_last() is not
 * asked: one load where every shape is cached.  A hint only (the check
 * stands alone), for every family and instance, never cleared.
 */
static int uncacheable_seen;

/* What the default says of w's shape, as a record memo value. */
static int shape_value(const KC_TMAC_CTX *w)
{
    const char *cipher, *props;
    int v;

    /* what the built-in default says is not the application's: pass */
    if (needs_app(w, NULL, 0) || !probe(w, 0))
        return 0;
    v = KC_REC_VALID | (shape_cacheable(w) ? KC_REC_CACHEABLE : 0);
    /* a cipher named: needs_app() just found it the built-in default's */
    if (w->f->d->cipher_param == NULL
        || kc_trec_last_utf8((const unsigned char *)w->t.rec, w->t.shape_len,
                             w->f->d->cipher_param, OSSL_MAC_PARAM_PROPERTIES,
                             &cipher, &props))
        v |= KC_REC_PRIVATE;
    if ((v & (KC_REC_CACHEABLE | KC_REC_PRIVATE)) == KC_REC_PRIVATE
        && w->t.shape_len > 0)
        __atomic_store_n(&uncacheable_seen, 1, __ATOMIC_RELAXED);
    return v;
}

/* The memo value of the shape, or of the volatile calls (valid or not). */
static int mac_value(KC_TCORE *t, int vol)
{
    if (!vol)
        return shape_value(W(t));
    return probe(W(t), 1) ? KC_REC_VALID : 0;
}

static KC_NOINLINE int learn_shape(KC_TMAC_CTX *w, KC_CACHE *c)
{
    return kc_tcore_learn(&w->t, &mac_side, c, w->f, 0);
}

static KC_NOINLINE int learn_volatile(KC_TMAC_CTX *w, KC_CACHE *c)
{
    return kc_tcore_learn(&w->t, &mac_side, c, w->f, 1);
}

/*
 * One set_ctx_params call split into the key, the volatile parameters and
 * the shape's.  0 if not recordable: too many, or a name twice (which one
 * counts differs between versions: the default decides).
 */
typedef struct {
    const OSSL_PARAM *key;
    const OSSL_PARAM *shape[KC_TCALL_MAX], *vol[KC_TCALL_MAX];
    size_t ns, nv;
} SPLIT;

static int split(const KC_TFAM *f, const OSSL_PARAM params[], SPLIT *s)
{
    const OSSL_PARAM *p, *q;

    s->key = NULL;
    s->ns = s->nv = 0;
    for (p = params; p->key != NULL; p++) {
        if (s->ns + s->nv == KC_TCALL_MAX)
            return 0;
        for (q = params; q < p; q++)
            if (q->key[0] == p->key[0] && strcmp(q->key, p->key) == 0)
                return 0;
        if (p->key[0] == 'k' && strcmp(p->key, OSSL_MAC_PARAM_KEY) == 0)
            s->key = p;
        else if (kc_name_in_list(f->d->volatile_names, p->key))
            s->vol[s->nv++] = p;
        else
            s->shape[s->ns++] = p;
    }
    return 1;
}

/*
 * The usual keying init of a fresh context, in one pass: init(key, params)
 * with exactly the thread's last shape (one call) and, if volatile_last_wins,
 * volatile ones of the signature last valid with it.  What split(), record()
 * and volatile_valid() would conclude, without encoding or lookups; spelt
 * out, not kc_tcore_same_as_last(): 3 instructions a message.  Else 0, w
 * untouched.
 */
static int same_init_as_last(KC_TMAC_CTX *w, KC_CACHE *c,
                             const OSSL_PARAM params[], SPLIT *s)
{
    const KC_TFAM *f = w->f;
    const unsigned char *shape, *pair = NULL;
    size_t alen, slen, palen, plen = 0, so, po = 0;
    uint64_t hash, phash;
    int value, pvalue;
    const OSSL_PARAM *p;

    shape = kc_cache_rec_last(c, f, 0, &alen, &slen, &hash, &value);
    if (shape == NULL || alen != slen || (value & KC_REC_VALID) == 0
        || (so = kc_trec_marker_at(shape, 0, slen, KC_T_CALL, 0)) == 0)
        return 0;
    s->key = NULL;
    s->ns = s->nv = 0;
    for (p = params; p->key != NULL; p++) {
        size_t next;

        if (s->ns + s->nv == KC_TCALL_MAX)
            return 0;
        /* a shape item's name is not volatile, a signature's is */
        if ((next = kc_trec_item_at(shape, so, slen, KC_T_PARAM, p)) != 0) {
            so = next;
            s->shape[s->ns++] = p;
            continue;
        }
        if (pair == NULL) {
            if (!f->d->volatile_last_wins
                || (pair = kc_cache_rec_last(c, f, 1, &palen, &plen, &phash,
                                             &pvalue)) == NULL
                || palen != slen || (pvalue & KC_REC_VALID) == 0
                || memcmp(pair, shape, slen) != 0
                || (po = kc_trec_marker_at(pair, slen, plen, KC_T_CALL,
                                           0)) == 0)
                return 0;
        }
        if ((po = kc_trec_item_at(pair, po, plen, KC_T_SIG, p)) == 0)
            return 0;
        s->vol[s->nv++] = p;
    }
    /* every recorded item matched, once: no name twice, nothing left */
    if (s->ns == 0 || so != slen || po != plen)
        return 0;
    memcpy(w->t.rec, shape, slen);
    w->t.len = w->t.shape_len = slen;
    w->t.hash = hash ^ KC_SHAPE_SALT;
    w->t.value = value;
    return 1;
}

/*
 * volatile_last_wins: does the thread's last learned (shape, signature) say
 * this shape takes a call of these names, types and sizes?  In place.
 */
static int volatile_known(const KC_TMAC_CTX *w, KC_CACHE *c, const SPLIT *s)
{
    const unsigned char *last;
    size_t alen, len;
    uint64_t hash;
    int value;

    last = kc_cache_rec_last(c, w->f, 1, &alen, &len, &hash, &value);
    /* (a parameter whose signature matches a recorded one is recordable) */
    return last != NULL && alen == w->t.shape_len
           && (value & KC_REC_VALID) != 0
           && memcmp(last, w->t.rec, alen) == 0
           && kc_trec_match(last, alen, len, KC_T_CALL, 0, KC_T_SIG,
                            s->vol, s->nv) == len;
}

/* The same, learned if not known, leaving the record as it was. */
static int volatile_valid(const KC_TMAC_CTX *w, KC_CACHE *c, const SPLIT *s)
{
    KC_TMAC_CTX tmp;

    if (volatile_known(w, c, s))
        return 1;
    tmp = *w;
    tmp.t.len = tmp.t.shape_len;
    tmp.t.sig_len = 0;
    tmp.t.sig_hash = 0;
    return append_call(&tmp, s->vol, s->nv, KC_AS_VOLATILE)
           && (learn_volatile(&tmp, c) & KC_REC_VALID) != 0;
}

/* Set volatile parameters of this call on the keyed copy, after the key. */
static int apply_volatile(const KC_TMAC_CTX *w, const SPLIT *s)
{
    static const OSSL_PARAM end = OSSL_PARAM_END;
    OSSL_PARAM post[KC_TCALL_MAX + 1];
    size_t i;

    /* the caller's own array when they end it (GMAC's usual cipher, iv) */
    for (i = 1; i < s->nv && s->vol[i] == s->vol[0] + i; i++)
        continue;
    if (i == s->nv && s->vol[0][i].key == NULL)
        return w->ops->set_ctx_params(w->t.inner, s->vol[0]);
    for (i = 0; i < s->nv; i++)
        post[i] = *s->vol[i];
    post[i] = end;
    return w->ops->set_ctx_params(w->t.inner, post);
}

/*
 * A volatile parameter without data (GMAC: an IV length alone) replaces no
 * earlier value (GCM keeps or fails an IV set before): passed through.
 */
static int volatile_unset(const SPLIT *s)
{
    size_t i;

    for (i = 0; i < s->nv; i++)
        if (s->vol[i]->data == NULL)
            return 1;
    return 0;
}

/* Record a call if the default accepts it; 0: rolled back, to pass. */
static int record(KC_TMAC_CTX *w, KC_CACHE *c, const SPLIT *s)
{
    uint64_t old[KC_TREC_MAX / 8];
    size_t oldlen = 0;
    KC_TMARK sv;

    /* no parameters on a fresh context: nothing to record (see bind) */
    if (s->ns == 0 && s->nv == 0 && w->t.len == 0
        && kc_quirk(__atomic_load_n(&w->f->quirks, __ATOMIC_RELAXED),
                    KC_Q_EMPTY_SET_OK))
        return 1;
    kc_tcore_mark(&w->t, &sv);
    if (s->ns > 0 || s->nv == 0) {
        /* the shape is replayed before the volatile calls: no going back */
        if (w->t.len > w->t.shape_len)
            goto fail;
        if (!kc_tcore_same_as_last(&w->t, &mac_side, c, w->f, KC_T_CALL, 0,
                                   s->shape, s->ns)) {
            if (!append_call(w, s->shape, s->ns, KC_AS_SHAPE))
                goto fail;
            /* (what it was is another shape's: see needs_app()) */
            w->t.value = -1;
            w->t.value = learn_shape(w, c);
        }
        if ((w->t.value & KC_REC_VALID) == 0)
            goto fail;
    }
    if (s->nv > 0) {
        if (volatile_unset(s))
            goto fail;
        /* a call that replaces the last: keep only it (and the old one) */
        if (w->f->d->volatile_last_wins && w->t.len > w->t.shape_len) {
            oldlen = w->t.len - w->t.shape_len;
            memcpy(old, w->t.rec + w->t.shape_len / 8, oldlen);
            w->t.len = w->t.shape_len;
            w->t.sig_len = 0;
            w->t.sig_hash = 0;
        }
        if (w->f->d->volatile_last_wins && volatile_known(w, c, s)) {
            /* its signature stays unwritten: no later call needs it */
            if (!append_call(w, s->vol, s->nv, KC_AS_VOLATILE_ONLY))
                goto fail;
        } else if (!append_call(w, s->vol, s->nv, KC_AS_VOLATILE)
                   || (learn_volatile(w, c) & KC_REC_VALID) == 0) {
            goto fail;
        }
    }
    return 1;
 fail:
    if (oldlen > 0)
        memcpy(w->t.rec + w->t.shape_len / 8, old, oldlen);
    kc_tcore_back(&w->t, &sv);
    return 0;
}

/*
 * KC_TSIDE.make: the default's context keyed with init(key) alone; a direct
 * family's own, made once the default's has taken shape and key quietly.
 */
static void *mac_make(KC_TCORE *t, int enc, const unsigned char *key,
                      size_t keylen, int *ok)
{
    const KC_TMAC_CTX *w = W(t);
    const KC_MAC_FNS *f = &w->f->mac;
    void *tmpl;

    *ok = (tmpl = deflt_new(w)) != NULL
          && replay(w, tmpl, 0, t->shape_len)
          && f->init(tmpl, key, keylen, NULL);
    if (!w->f->direct_on || tmpl == NULL)
        return tmpl;
    f->freectx(tmpl);
    if (!*ok)
        return NULL;
    tmpl = w->f->d->direct_new(w->pctx, (const unsigned char *)t->rec,
                               t->shape_len, key, keylen);
    *ok = tmpl != NULL;
    return tmpl;
}

static const KC_TSIDE mac_side = {
    mac_make, mac_value, 0, KC_SHAPE_SALT, 0
};

/*
 * w keyed from tmpl (or lk's spare: a used context, restarted by a keyless
 * init when given back), the volatile calls replayed if vol.  1, or -1.
 */
static ossl_inline int take_template(KC_TMAC_CTX *w, const KC_MAC_FNS *ops,
                                     void *tmpl, const KC_LOOKUP *lk, int vol)
{
    void *inner;

    if ((inner = lk->spare) == NULL && (inner = ops->dupctx(tmpl)) == NULL)
        return -1;
    /* validated without the key; keying first ends in the same state */
    if (vol
        && !kc_trec_replay_calls((const unsigned char *)w->t.rec,
                                 w->t.shape_len, w->t.len, mac_call, ops,
                                 inner)) {
        ops->freectx(inner);
        return -1;
    }
    w->t.inner = inner;
    w->ops = ops;
    w->size = w->f->d->keyed_size;
    if (w->f->d->reinit_restores) {
        w->lease = lk->lease;
        w->clean = 1;
    }
    return 1;
}

/*
 * The key arrives: a copy of the template (or a spare), the volatile calls
 * replayed.  1 done; else -1, or -2 if the key is not admitted yet.
 */
static int keyed(KC_TMAC_CTX *w, KC_CACHE *c, const unsigned char *key,
                 size_t keylen)
{
    const KC_TFAM *f = w->f;
    const KC_MAC_FNS *ops;
    KC_LOOKUP lk;
    void *tmpl;
    int why = -1;

    if (key == NULL || keylen > KEYCACHE_MAX_KEY_LEN)
        return -1;
    /* settled before this wrapper was made (kc_tmac_newctx()) */
    ops = f->direct_on ? f->d->direct : &f->mac;
    if (w->t.value < 0)
        w->t.value = learn_shape(w, c);
    if ((w->t.value & KC_REC_CACHEABLE) == 0)
        return -1;
    if ((tmpl = kc_tcore_template(&w->t, &mac_side, c, &f->alg, 1, key,
                                  keylen, &lk, &why)) == NULL)
        return why;
    return take_template(w, ops, tmpl, &lk, w->t.len > w->t.shape_len);
}

/* Pass-through from now on: a default context (for params) in this state. */
static KC_NOINLINE int materialize(KC_TMAC_CTX *w, const OSSL_PARAM params[])
{
    EVP_MAC *mac;
    void *inner;

    if (w->t.inner != NULL)
        return 1;
    if ((inner = new_inner(w, params, &mac)) == NULL)
        return 0;
    /* (a cold context has nothing to replay) */
    if (w->t.len > 0 && !replay(w, inner, 0, w->t.len)) {
        free_inner(w, inner, mac);
        return 0;
    }
    w->t.inner = inner;
    w->ops = &w->f->mac;
    w->app_mac = mac;
    /* (a cold context was counted when it was made) */
    if (!w->t.cold)
        kc_count_passthrough(w->pctx, &w->f->alg);
    return 1;
}

/* A new context of the application's default (a first or cold context) */
static void *app_first_inner(const KC_TMAC_CTX *w)
{
    return kc_inner_app_first(w->pctx, (EVP_MAC **)&w->f->app_first,
                              w->f->d->name, w->f->mac.newctx);
}

/*
 * A thread's base for a family's cold contexts (KC_TDESC.base: CMAC, GMAC,
 * KMAC): a default context (deflt_new()) given the thread's last cold
 * shape and, where the default copies no unkeyed context (KC_BASE_KEYED:
 * CMAC, KMAC), keyed with zeros at the first key of a length.  A cold
 * context of that shape copies it and keys the copy, instead of fetching
 * the cipher (or KMAC's digest) again, some 2,500 instructions, into new
 * contexts on every miss.  No key material.  Only where a shape's cipher is the
 * built-in default's in the application's context too (needs_app()),
 * under the default properties it was made with; kept in the thread's
 * cache, so a thread without one makes none.
 */
typedef struct {
    void *ctx;                  /* NULL: the shape makes no base */
    size_t keylen;              /* KC_BASE_KEYED: its zeros' length, or 0 */
    size_t len;                 /* the shape's call, as recorded */
    uint64_t hash;
    uint64_t rec[KC_TREC_MAX / 8];
} KC_TBASE;

/*
 * A thread's bases of one family, one a shape: a few, for shapes used in
 * turn (CMAC over AES-128, -192 and -256 keys, newkey-cmac-sizes).
 */
#define KC_BASES 3
typedef struct {
    const KC_TFAM *f;
    unsigned int n;             /* b[0, n) made */
    unsigned int next;          /* the one to make anew when all are */
    unsigned int misses;        /* another shape's, in a row (miss_fp) */
    uint64_t miss_fp;
    KC_TBASE b[KC_BASES];
} KC_TBASES;

/* once all are made, another shape this often in a row makes one anew */
#define KC_BASE_MISSES 2

static void bases_free(void *vset)
{
    KC_TBASES *set = vset;
    unsigned int i;

    for (i = 0; i < set->n; i++)
        if (set->b[i].ctx != NULL)
            set->f->mac.freectx(set->b[i].ctx);
    OPENSSL_free(set);
}

/* Does family f have bases? */
static ossl_inline int bases_on(const KC_TFAM *f)
{
    return f->d->base != 0;
}

/* The thread's bases of family f, if any. */
static KC_TBASES *bases_of(const KC_TFAM *f, KC_CACHE *c)
{
    return bases_on(f) ? kc_cache_aux_get(c, f) : NULL;
}

static int base_is(const KC_TMAC_CTX *w, const KC_TBASE *b, const SPLIT *s);

/*
 * The thread's base of w's family for the call s; w NULL: any with a
 * context.  (All were made under the default properties in force: the
 * cache drops them when those change, kc_cache_get().)
 */
static ossl_inline KC_TBASE *base_at(const KC_TMAC_CTX *w, KC_TBASES *set,
                                     const SPLIT *s)
{
    unsigned int i;

    for (i = 0; set != NULL && i < set->n; i++)
        if (w != NULL ? base_is(w, &set->b[i], s) : set->b[i].ctx != NULL)
            return &set->b[i];
    return NULL;
}

/* FNV-1a of a call's shape names, types and data */
static uint64_t shape_fp(const SPLIT *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *d;
    size_t i, j, n;

    for (i = 0; i < s->ns; i++) {
        for (d = (const unsigned char *)s->shape[i]->key; *d != '\0'; d++)
            h = (h ^ *d) * 0x100000001b3ULL;
        h = (h ^ (0x100 | s->shape[i]->data_type)) * 0x100000001b3ULL;
        d = s->shape[i]->data;
        n = d != NULL ? s->shape[i]->data_size : 0;
        for (j = 0; j < n; j++)
            h = (h ^ d[j]) * 0x100000001b3ULL;
        h = (h ^ 0x200) * 0x100000001b3ULL;
    }
    return h;
}

/*
 * A cold call of shape names only that no base of set (NULL: none) has:
 * time for a base of its shape?  While one is still to make, yes; then
 * once the same shape missed twice in a row, so that more shapes in
 * rotation than there are bases do not remake one at every context.
 */
static int base_missed(KC_TBASES *set, const SPLIT *s)
{
    uint64_t fp;

    if (s->key != NULL || s->nv > 0 || s->ns == 0)
        return 0;
    if (set == NULL || set->n < KC_BASES)
        return 1;
    fp = shape_fp(s);
    if (set->misses == 0 || fp != set->miss_fp) {
        set->miss_fp = fp;
        set->misses = 1;
        return 0;
    }
    return ++set->misses >= KC_BASE_MISSES;
}

/*
 * Where the next base of set goes: a free one, or the oldest made's (its
 * context unlinked before it is freed, for a child forked meanwhile).
 */
static KC_TBASE *base_slot(KC_TBASES *set)
{
    KC_TBASE *b;
    void *ctx;

    if (set->n < KC_BASES)
        return &set->b[set->n++];
    b = &set->b[set->next++ % KC_BASES];
    if ((ctx = b->ctx) != NULL) {
        __atomic_store_n(&b->ctx, NULL, __ATOMIC_RELEASE);
        set->f->mac.freectx(ctx);
    }
    return b;
}

/*
 * A base for the shape of s (shape names only; none: a fresh context's),
 * among the thread's: one without a context if the call raised anything or
 * its cipher is the application's to fetch, so that the shape is not tried
 * again.
 */
static KC_NOINLINE void base_make(KC_PROVCTX *pctx, const KC_TFAM *f,
                                  KC_CACHE *c, const SPLIT *s)
{
    KC_ERRTOP before, after;
    KC_TMAC_CTX tmp;
    KC_TBASES *set;
    KC_TBASE *b;
    EVP_MAC *mac = NULL;
    void *ctx;
    int ok;

    /* the cache must hear of a change of the default properties */
    if (!kc_cache_keep_gen(c, NULL))
        return;
    /* a fresh context's fields (needs_app() reads based) */
    memset(&tmp, 0, KC_TCORE_HEAD(KC_TMAC_CTX));
    tmp.pctx = pctx;
    tmp.f = f;
    tmp.ops = &f->mac;
    tmp.t.value = -1;
    tmp.gen = rec_gen(pctx);
    if (s->ns > 0 && !append_call(&tmp, s->shape, s->ns, KC_AS_SHAPE))
        return;
    ERR_set_mark();
    kc_err_top(&before);
    ok = (ctx = new_inner(&tmp, NULL, &mac)) != NULL && mac == NULL
         && replay(&tmp, ctx, 0, tmp.t.len);
    kc_err_top(&after);
    ok = ok && kc_err_same(&before, &after);
    ERR_pop_to_mark();
    if (!ok && ctx != NULL) {
        free_inner(&tmp, ctx, mac);
        ctx = NULL;
    }
    /*
     * Only now into the cache: new_inner() looks up (kc_cache_get()), which
     * drops the bases if the default properties changed meanwhile.
     */
    if ((set = kc_cache_aux_get(c, f)) == NULL) {
        if ((set = OPENSSL_zalloc(sizeof(*set))) != NULL) {
            set->f = f;
            kc_cache_aux_put(c, f, set, bases_free);
            if (kc_cache_aux_get(c, f) != set) {
                bases_free(set);
                set = NULL;
            }
        }
        if (set == NULL) {
            if (ctx != NULL)
                f->mac.freectx(ctx);
            return;
        }
    }
    b = base_slot(set);
    set->misses = 0;
    set->miss_fp = 0;
    b->keylen = 0;
    b->len = tmp.t.len;
    b->hash = tmp.t.hash;
    memcpy(b->rec, tmp.t.rec, b->len);
    /* last, for a child forked meanwhile (bases_free()) */
    __atomic_store_n(&b->ctx, ctx, __ATOMIC_RELEASE);
}

/*
 * Is a cold context's call (params split into s) b's shape: its shape
 * names b's, or (once base_shape() recorded it) the record b's and the
 * call's none or the same again?  Volatile names only where b is unkeyed.
 */
static int base_is(const KC_TMAC_CTX *w, const KC_TBASE *b, const SPLIT *s)
{
    if (s->key != NULL
        || (s->nv > 0
            && (w->f->d->base == KC_BASE_KEYED || volatile_unset(s))))
        return 0;
    if (s->ns > 0
        && (b->len == 0
            || kc_trec_match((const unsigned char *)b->rec, 0, b->len,
                             KC_T_CALL, 0, KC_T_PARAM, s->shape, s->ns)
               != b->len))
        return 0;
    /* (a context naming its cipher has a shape: CMAC, GMAC) */
    if (w->t.len == 0)
        return s->ns > 0 || (b->len == 0 && w->f->d->cipher_param == NULL);
    return w->t.len == b->len && memcmp(w->t.rec, b->rec, b->len) == 0;
}

/*
 * w's inner from now on: a copy of the base's, given s's volatile names
 * and the key if any, as the default sets them after the shape.  1 done;
 * 0 failed as the default's in that state would; -1 nothing done (the
 * default's way then: no copy, or a keyed base's copy refusing a key of
 * the length it was keyed with, which only a lack of memory does).
 */
static int base_copy(KC_TMAC_CTX *w, const KC_TBASE *b, const SPLIT *s,
                     const unsigned char *key, size_t keylen)
{
    const KC_MAC_FNS *f = &w->f->mac;
    void *inner = f->dupctx(b->ctx);
    int ok;

    if (inner == NULL)
        return -1;
    w->t.inner = inner;
    w->ops = f;
    w->app_mac = NULL;
    w->size = 0;
    ok = (s->nv == 0 || apply_volatile(w, s))
         && (key == NULL || f->init(inner, key, keylen, NULL));
    if (!ok && key != NULL && w->f->d->base == KC_BASE_KEYED) {
        f->freectx(inner);
        w->t.inner = NULL;
        return -1;
    }
    /* as materialize() counts (a cold context was when it was made) */
    if (!w->t.cold)
        kc_count_passthrough(w->pctx, &w->f->alg);
    return ok;
}

/*
 * A cold context's first call, shape names only (and volatile ones): if
 * the thread's base's, a copy of it now, or (KC_BASE_KEYED) the call recorded
 * as any, for a copy at the key (base_key()).  1 done, 0 failed as the
 * default, -1 pass; *make: time for a base of this shape.
 */
static KC_NOINLINE int base_shape(KC_TMAC_CTX *w, KC_CACHE *c,
                                  const OSSL_PARAM params[], SPLIT *s,
                                  int *make)
{
    KC_TBASES *set = bases_of(w->f, c);
    KC_TBASE *b;

    *make = 0;
    if (!split(w->f, params, s))
        return -1;
    if ((b = base_at(w, set, s)) == NULL) {
        *make = base_missed(set, s);
        return -1;
    }
    set->misses = 0;
    if (b->ctx == NULL)
        return -1;
    if (w->f->d->base == KC_BASE_COPY)
        return base_copy(w, b, s, NULL, 0);
    if (s->nv > 0)
        return -1;
    memcpy(w->t.rec, b->rec, b->len);
    w->t.len = w->t.shape_len = b->len;
    w->t.hash = b->hash;
    w->t.value = -1;
    w->based = 1;
    return 1;
}

/*
 * init(key, params) of a cold context of the base's shape (recorded by
 * base_shape(), or named in params): a copy of the base keyed with key.  A
 * keyed base takes zeros of this length first, so that keying its copies
 * fails only where memory runs out.  As base_copy().
 */
static KC_NOINLINE int base_key(KC_TMAC_CTX *w, const unsigned char *key,
                                size_t keylen, const OSSL_PARAM params[])
{
    static const unsigned char zeros[EVP_MAX_KEY_LENGTH];
    KC_CACHE *c;
    KC_TBASE *b;
    SPLIT s;
    int ok;

    s.key = NULL;
    s.ns = s.nv = 0;
    /* a recorded shape: the default fetched its cipher then, not now */
    if ((c = kc_cache_get(w->pctx)) == NULL
        || (params != NULL && !split(w->f, params, &s))
        || (b = base_at(w, bases_of(w->f, c), &s)) == NULL
        || b->ctx == NULL)
        return -1;
    /* (0 is an unkeyed base's keylen: a key of none is keyed as any) */
    if (w->f->d->base == KC_BASE_KEYED
        && (b->keylen != keylen || keylen == 0)) {
        ok = keylen > 0 && keylen <= sizeof(zeros);
        if (ok) {
            ERR_set_mark();
            ok = w->f->mac.init(b->ctx, zeros, keylen, NULL);
            ERR_pop_to_mark();
        }
        /* (a failure leaves the base as it was, or unkeyed: keyed again) */
        b->keylen = ok ? keylen : 0;
        if (!ok)
            return -1;
    }
    return base_copy(w, b, &s, key, keylen);
}

/* params without the entries named a, or in list (a may be NULL) */
static OSSL_PARAM *without(const OSSL_PARAM params[], const char *a,
                           const char *const *list, OSSL_PARAM *buf,
                           size_t cap)
{
    const OSSL_PARAM *p;
    OSSL_PARAM *out;
    size_t n = 0;

    for (p = params; p->key != NULL; p++)
        n++;
    out = n < cap ? buf : OPENSSL_malloc((n + 1) * sizeof(*out));
    if (out == NULL)
        return NULL;
    n = 0;
    for (p = params; p->key != NULL; p++)
        if ((a == NULL || strcmp(p->key, a) != 0)
            && !kc_name_in_list(list, p->key))
            out[n++] = *p;
    out[n] = *p;
    return out;
}

/*
 * A new default context where the fetch of params' cipher belongs, given
 * params but the key and volatile names; *ok: it took them.  NULL: none.
 */
static void *cipher_part(const KC_TMAC_CTX *w, const OSSL_PARAM params[],
                         EVP_MAC **mac, int *ok)
{
    OSSL_PARAM b[16], *first;
    void *t = NULL;

    *ok = 0;
    *mac = NULL;
    first = without(params, OSSL_MAC_PARAM_KEY, w->f->d->volatile_names, b,
                    16);
    if (first == NULL)
        return NULL;
    if ((t = new_inner(w, params, mac)) != NULL)
        *ok = nested_set(w, t, first);
    if (first != b)
        OPENSSL_free(first);
    return t;
}

/* w's inner replaced by t, which took params' cipher part: then the rest */
static int recipher_to(KC_TMAC_CTX *w, const OSSL_PARAM params[], void *t,
                       EVP_MAC *mac)
{
    const KC_TFAM *f = w->f;
    OSSL_PARAM b[16], *rest;
    int ok;

    if ((rest = without(params, f->d->cipher_param, NULL, b, 16)) == NULL) {
        free_inner(w, t, mac);
        return 0;
    }
    ok = f->mac.set_ctx_params(t, rest);
    if (rest != b)
        OPENSSL_free(rest);
    w->ops->freectx(w->t.inner);
    w->t.inner = t;
    w->ops = &f->mac;
    EVP_MAC_free(w->app_mac);
    w->app_mac = mac;
    return ok;
}

/*
 * A cipher set on a direct family's keyed context (GMAC): a new default one
 * takes the cipher part, then the rest; if the first fails, nothing changes.
 */
static KC_NOINLINE int direct_recipher(KC_TMAC_CTX *w,
                                       const OSSL_PARAM params[])
{
    EVP_MAC *mac;
    int ok;
    void *t = cipher_part(w, params, &mac, &ok);

    if (t == NULL)
        return 0;
    if (!ok) {
        free_inner(w, t, mac);
        return 0;
    }
    return recipher_to(w, params, t, mac);
}

/* Do params (not NULL) name the parameter c (the family's cipher, say)? */
static ossl_inline int names_param(const char *c, const OSSL_PARAM *params)
{
    for (; params->key != NULL; params++)
        if (params->key[0] == c[0] && strcmp(params->key, c) == 0)
            return 1;
    return 0;
}

/* (layer.h) the default asked once, at the first repeated name */
int kc_tmac_repeats_fail(KC_PROVCTX *pctx, const KC_TFAM *f)
{
    const KC_MAC_FNS *m = &f->mac;
    unsigned int q = __atomic_load_n(&f->quirks, __ATOMIC_RELAXED);
    /* a properties given twice and no cipher: 3.x sets nothing, and is fine */
    OSSL_PARAM p =
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES, "", 0);

    if (kc_quirk(q, KC_Q_REPEATS_KNOWN))
        return kc_quirk(q, KC_Q_REPEATS_FAIL);
    q = kc_quirk_learn_repeats(kc_tmac_learn_provctx(pctx, f), m->newctx,
                               m->freectx,
                               m->set_ctx_params, &p);
    /* not learned (out of memory): the default's own context answers */
    if (!kc_quirk(q, KC_Q_KNOWN))
        return 1;
    /* a memo of the default's answer, not part of the family's identity */
    __atomic_fetch_or((unsigned int *)&f->quirks, q, __ATOMIC_RELAXED);
    return kc_quirk(q, KC_Q_REPEATS_FAIL);
}

/* Does params name one of the family's settable parameters twice? */
static int repeats(KC_PROVCTX *pctx, const KC_TFAM *f,
                   const OSSL_PARAM params[])
{
    const OSSL_PARAM *known = f->mac.settable_ctx_params == NULL ? NULL
        : f->mac.settable_ctx_params(NULL, pctx->inner_provctx);
    const OSSL_PARAM *p, *q;

    if (params == NULL || known == NULL)
        return 0;
    for (p = params; p->key != NULL; p++)
        for (q = p + 1; q->key != NULL; q++)
            if (kc_name_is(q->key, p->key)
                && OSSL_PARAM_locate_const(known, p->key) != NULL)
                return 1;
    return 0;
}

/* Does a parameter's name start as the cipher parameter's (c) does? */
static ossl_inline int may_name(const char *c, const OSSL_PARAM *params)
{
    for (; params->key != NULL; params++)
        if (params->key[0] == c[0])
            return 1;
    return 0;
}

/* forward() of a call that may name a cipher, asking the default's */
static KC_NOINLINE int forward_nested(KC_TMAC_CTX *w, int init,
                                      const unsigned char *key, size_t keylen,
                                      const OSSL_PARAM params[])
{
    OSSL_PARAM b[16];
    const OSSL_PARAM *p = to_default(w, params, b, 16);
    int ok;

    ok = init ? w->ops->init(w->t.inner, key, keylen, p)
              : w->ops->set_ctx_params(w->t.inner, p);
    if (p != params && p != b)
        OPENSSL_free((void *)p);
    return ok;
}

/* set_ctx_params, or init if init, on w's inner context */
static int forward(KC_TMAC_CTX *w, int init, const unsigned char *key,
                   size_t keylen, const OSSL_PARAM params[])
{
    /*
     * (a keyless init with a new IV, per message, names no cipher; in a
     * private context the default's is what the call finds anyway)
     */
    if (w->f->asks_default && params != NULL
        && may_name(w->f->d->cipher_param, params))
        return forward_nested(w, init, key, keylen, params);
    return init ? w->ops->init(w->t.inner, key, keylen, params)
                : w->ops->set_ctx_params(w->t.inner, params);
}

/*
 * set_ctx_params (or init if init) naming a cipher on a keyed context.  A
 * direct family's starts over as the default's, and so does a context of
 * deflt_new()'s given a cipher that resolves elsewhere in the
 * application's library context (another provider's): a context of the
 * application's default takes the call, as the default's fetch would.  A
 * cipher it refuses still goes to this context, whose failing fetch
 * leaves it as the default's would, its errors (naming keycache's library
 * context) dropped for the application's.
 */
static KC_NOINLINE int cipher_call(KC_TMAC_CTX *w, int init,
                                   const unsigned char *key, size_t keylen,
                                   const OSSL_PARAM params[])
{
    EVP_MAC *mac;
    void *t;
    int ok;

    /* the application's default's: it fetches as the default would */
    if (w->app_mac != NULL || w->first)
        return forward(w, init, key, keylen, params);
    /* a name twice may fail the call before any fetch: the context says */
    if (repeats(w->pctx, w->f, params)
        && kc_tmac_repeats_fail(w->pctx, w->f))
        return forward(w, init, key, keylen, params);
    if (w->ops != &w->f->mac)
        return direct_recipher(w, params)
               && (!init || w->ops->init(w->t.inner, key, keylen, NULL));
    if (!needs_app(w, params, 0)
        || (t = cipher_part(w, params, &mac, &ok)) == NULL)
        return forward(w, init, key, keylen, params);
    if (ok)
        return recipher_to(w, params, t, mac)
               && (!init || w->ops->init(w->t.inner, key, keylen, NULL));
    free_inner(w, t, mac);
    ERR_set_mark();
    (void)forward(w, init, key, keylen, params);
    ERR_pop_to_mark();
    return 0;
}

/*
 * Keyed calls whose params may name the cipher (CMAC, GMAC): out of line,
 * so that the others need no frame.
 */
static KC_NOINLINE int keyed_set(KC_TMAC_CTX *w, const OSSL_PARAM params[])
{
    if (names_param(w->f->d->cipher_param, params))
        return cipher_call(w, 0, NULL, 0, params);
    return w->ops->set_ctx_params(w->t.inner, params);
}

static KC_NOINLINE int keyed_init(KC_TMAC_CTX *w, const unsigned char *key,
                                  size_t keylen, const OSSL_PARAM params[])
{
    if (names_param(w->f->d->cipher_param, params))
        return cipher_call(w, 1, key, keylen, params);
    return w->ops->init(w->t.inner, key, keylen, params);
}

/* get_params has no provctx: libcrypto's (and "size"), for every instance */
static OSSL_FUNC_mac_get_params_fn *inner_get_params[KC_FAM_COUNT];
static size_t fixed_size[KC_FAM_COUNT];

/*
 * A cold context of a family naming no cipher (KMAC) waits for its calls
 * where the thread's base serves (1); else it is deflt_new()'s
 * from newctx, and the thread's first such one makes a base of a fresh
 * context.
 */
static int base_defers(KC_PROVCTX *pctx, const KC_TFAM *f)
{
    static const SPLIT fresh;
    KC_CACHE *c;
    KC_TBASES *set;

    if (!bases_on(f) || (c = kc_cache_get(pctx)) == NULL)
        return 0;
    if ((set = bases_of(f, c)) != NULL && set->n > 0)
        return base_at(NULL, set, NULL) != NULL;
    base_make(pctx, f, c, &fresh);
    return 0;
}

/* Has the thread a base of f with a context (see KC_TBASE)? */
static int base_serves(KC_PROVCTX *pctx, const KC_TFAM *f)
{
    KC_CACHE *c;

    return bases_on(f) && (c = kc_cache_get(pctx)) != NULL
           && base_at(NULL, bases_of(f, c), NULL) != NULL;
}

/*
 * set_ctx_params of a cold context of the application's default's, made
 * while the thread had no base serving: its first call of shape names
 * makes one, as base_missed() says.
 */
static KC_NOINLINE int cold_forward(KC_TMAC_CTX *w, const OSSL_PARAM params[])
{
    KC_CACHE *c;
    KC_TBASES *set;
    SPLIT s;

    if (!forward(w, 0, NULL, 0, params))
        return 0;
    if (params != NULL && bases_on(w->f)
        && (c = kc_cache_get(w->pctx)) != NULL && split(w->f, params, &s)) {
        set = bases_of(w->f, c);
        if (base_at(w, set, &s) == NULL && base_missed(set, &s))
            base_make(w->pctx, w->f, c, &s);
    }
    return 1;
}

/* A new wrapper: the record buffers are written before they are read. */
#define KC_TMAC_HEAD KC_TCORE_HEAD(KC_TMAC_CTX)

/*
 * Where the default's newctx fetches a digest (KC_TDESC.newctx_digest,
 * KMAC's KECCAK-KMAC), it does so in the application's context under the
 * default properties in force, and fails if none is found: 1 if that
 * finds the built-in default's, as keycache's own contexts assume; -1 if
 * another provider's; 0 if none, the fetch's errors (the default's own)
 * left queued.  Found once per generation of the default properties (gen,
 * read once by the caller for this and the context's own).
 */
static ossl_inline int new_fetch_known(KC_PROVCTX *pctx, const KC_TFAM *f,
                                       unsigned int gen)
{
    return kc_props_followed(pctx)
           && __atomic_load_n(&f->new_gen, __ATOMIC_RELAXED) == gen + 1;
}

static KC_NOINLINE int new_fetch(KC_PROVCTX *pctx, const KC_TFAM *f,
                                 unsigned int gen)
{
    int followed = rec_gen(pctx) != KC_GEN_UNKNOWN;
    EVP_MD *md;
    int r;

    if (pctx->app_libctx == NULL)
        return 1;
    ERR_set_mark();
    if ((md = EVP_MD_fetch(pctx->app_libctx, f->d->newctx_digest,
                           NULL)) == NULL) {
        ERR_clear_last_mark();
        return 0;
    }
    ERR_pop_to_mark();
    r = kc_inner_is_default(pctx, EVP_MD_get0_provider(md)) ? 1 : -1;
    EVP_MD_free(md);
    if (r == 1 && followed)
        __atomic_store_n((unsigned int *)&f->new_gen, gen + 1,
                         __ATOMIC_RELAXED);
    return r;
}

/*
 * A new context of family which: as kc_tmac_newctx(), or (other) the
 * application's default's, where its newctx would find another provider's
 * digest (new_fetch()).  *gen: the default properties' generation the
 * caller found its digest at; NULL, read here.
 */
static KC_INLINE_ALWAYS void *tmac_new(KC_PROVCTX *pctx, int which,
                                       int other, const unsigned int *gen)
{
    const KC_TFAM *f = &pctx->fam[which];
    KC_TMAC_CTX *w;
    int cold, based;

    w = kc_wrapper_new_cold(pctx, KC_POOL_TMPL, sizeof(*w), KC_TMAC_HEAD,
                            &f->alg, &cold);
    if (w == NULL)
        return NULL;
    w->pctx = pctx;
    w->f = f;
    w->ops = &f->mac;
    if (other) {
        if ((w->t.inner = app_first_inner(w)) != NULL) {
            w->t.cold = 1;
            w->first = KC_FIRST_COLD;
            return w;
        }
        /* never keycache's own in its place, on the built-in digest */
        ERR_raise_data(ERR_LIB_PROV, ERR_R_UNSUPPORTED,
                       "%s: its digest resolves to another provider's, and "
                       "no default %s can be made to run on it", f->d->name,
                       f->d->name);
        kc_wrapper_free(pctx, KC_POOL_TMPL, w, sizeof(*w));
        return NULL;
    }
    if (!cold && f->first && kc_tcore_app_first(pctx, &f->alg)
        && (w->t.inner = app_first_inner(w)) != NULL) {
        w->t.cold = 1;
        w->first = KC_FIRST_SHAPE;
        /* for copies that become usual contexts; followed, or unknown */
        w->gen = !kc_props_followed(pctx) ? KC_GEN_UNKNOWN
                 : gen != NULL ? *gen : kc_props_gen(pctx);
        kc_count_passthrough(pctx, &f->alg);
        return w;
    }
    /*
     * A cold context naming a cipher: the application's default's, which
     * fetches it as the default would, so nothing asks where it resolves
     * (needs_app()); cold_in() counted it.  Not a nested family's: its
     * fetch would need a property query (to_default()), dearer.  (A CMAC
     * whose family asks_default gets its calls naming a cipher so too.)
     */
    if (cold && f->d->cipher_param != NULL && !f->nested
        && !base_serves(pctx, f)
        && (w->t.inner = app_first_inner(w)) != NULL) {
        w->t.cold = 1;
        w->first = KC_FIRST_COLD;
        return w;
    }
    /* the family's first context learns what it needs (gate.c) */
    based = cold && f->d->cipher_param == NULL && base_defers(pctx, f);
    cold = cold || !kc_tfam_ready(pctx, f);
    w->t.value = __atomic_load_n(&f->empty_value, __ATOMIC_RELAXED);
    /* keys miss here: the default's now, or at a call naming its cipher */
    w->t.cold = cold;
    /*
     * the properties its fetches (KMAC's at newctx) are made under,
     * followed since the gate's learning asked kc_tmac_provctx()
     * (deflt_new() checks that they are)
     */
    w->gen = gen != NULL ? *gen : kc_props_gen(pctx);
    if (cold && f->d->cipher_param == NULL && !based
        && (w->t.inner = deflt_new(w)) == NULL) {
        kc_wrapper_free(pctx, KC_POOL_TMPL, w, sizeof(*w));
        return NULL;
    }
    return w;
}

void *kc_tmac_newctx(KC_PROVCTX *pctx, int which)
{
    return tmac_new(pctx, which, 0, NULL);
}

/*
 * newctx of a family whose default's newctx fetches a digest (KMAC): where
 * none is found, it fails as the default's does; where another provider's
 * is, the context is the application's default's, on that.
 */
void *kc_tmac_newctx_fetching(KC_PROVCTX *pctx, int which)
{
    const KC_TFAM *f = &pctx->fam[which];
    unsigned int gen = kc_props_gen(pctx);
    int found;

    if (new_fetch_known(pctx, f, gen))
        return tmac_new(pctx, which, 0, &gen);
    if ((found = new_fetch(pctx, f, gen)) == 0)
        return NULL;
    return tmac_new(pctx, which, found < 0, &gen);
}

/*
 * A context given back is scrubbed and restarted by a keyless init: what a
 * hit needs, CMAC's last block and chaining value (its last MAC) gone.
 */
static int restart(const void *arg, void *inner)
{
    static const unsigned char zeros[KC_SCRUB_MAX];
    const KC_TMAC_CTX *w = arg;
    size_t n = w->f->d->park_scrub;

    return (n == 0 || w->ops->update(inner, zeros, n))
           && w->ops->init(inner, NULL, 0, NULL);
}

/*
 * A clean used context: its inner back to its entry if kept there, else
 * freed; the thread's cache is looked up once for both.  A first context
 * holding its key: wiped.
 */
static KC_NOINLINE void free_clean(KC_TMAC_CTX *w)
{
    KC_CACHE *c = kc_cache_here(w->pctx);

    if (w->held != 0)
        OPENSSL_cleanse(w->key, w->held);
    if (!kc_cache_park_in(c, &w->lease, w->t.inner, restart, w))
        w->ops->freectx(w->t.inner);
    if (w->app_mac != NULL)
        EVP_MAC_free(w->app_mac);
    kc_wrapper_free_in(c, KC_POOL_TMPL, w, sizeof(*w));
}

/* Any other (a used copy) needs no cache: no register kept across calls. */
void kc_tmac_freectx(void *vctx)
{
    KC_TMAC_CTX *w = vctx;

    if (w == NULL)
        return;
    if (w->t.inner != NULL && w->clean) {
        free_clean(w);
        return;
    }
    if (w->t.inner != NULL)
        w->ops->freectx(w->t.inner);
    /* (after its inner: *app_mac keeps the provider loaded) */
    if (w->app_mac != NULL)
        EVP_MAC_free(w->app_mac);
    kc_wrapper_free(w->pctx, KC_POOL_TMPL, w, sizeof(*w));
}

/* (a first context is clean only while it holds a key: not leased) */
static KC_NOINLINE void forget_held(KC_TMAC_CTX *w)
{
    if (w->held != 0)
        OPENSSL_cleanse(w->key, w->held);
    w->held = 0;
    w->clean = 0;
    w->first &= ~(KC_FIRST_KEYED | KC_FIRST_HELD);
}

/*
 * A first context keyed in its first init, its record all its calls till
 * then (KC_FIRST_SHAPE): that init's calls are recorded too, as a usual
 * context's would be but not learned, and the key kept while its inner
 * holds it, so that its copies look the key up (first_copy()).  Else as
 * it was: its copies are the default's.
 */
static void hold_keying(KC_TMAC_CTX *w, const unsigned char *key,
                        size_t keylen, const OSSL_PARAM params[])
{
    KC_TMARK sv;
    SPLIT s;

    /* (a spare, restarted by a keyless init, would lack the volatile calls) */
    if (keylen == 0 || keylen > sizeof(w->key) || w->f->d->reinit_restores)
        return;
    kc_tcore_mark(&w->t, &sv);
    /* (an empty array is a call: the default may act on one) */
    if (params != NULL
        && (!split(w->f, params, &s) || s.key != NULL || volatile_unset(&s)
            || ((s.ns > 0 || s.nv == 0)
                && !append_call(w, s.shape, s.ns, KC_AS_SHAPE))
            || (s.nv > 0
                && !append_call(w, s.vol, s.nv, KC_AS_VOLATILE)))) {
        kc_tcore_back(&w->t, &sv);
        return;
    }
    memcpy(w->key, key, keylen);
    w->held = keylen;
    w->clean = 1;
    w->first |= KC_FIRST_KEYED | KC_FIRST_HELD;
}

/*
 * An init with a key or parameters of a thread's first context (the
 * application's default's from the start: every call goes there): the
 * size it reports is asked once keyed and kept, so that its copies (a
 * template copied per message) answer EVP_MAC_final's query at once, as a
 * cached context does.
 */
static KC_NOINLINE int first_init(KC_TMAC_CTX *w, const unsigned char *key,
                                  size_t keylen, const OSSL_PARAM params[])
{
    OSSL_PARAM q[2];
    size_t size = 0;
    int was = w->first, ok;

    /* the key it held is no longer its inner's, whatever this init does */
    if (key != NULL)
        forget_held(w);
    ok = forward(w, 1, key, keylen, params);
    w->first &= ~(KC_FIRST_RECORD | KC_FIRST_KEYED);
    if (key == NULL && params == NULL)
        return ok;
    w->size = 0;
    if (ok != 1 || key == NULL)
        return ok;
    if (was == KC_FIRST_SHAPE && w->f->d->copies_look_up)
        hold_keying(w, key, keylen, params);
    if (w->ops->get_ctx_params == NULL)
        return ok;
    /*
     * No error mark: the default's CMAC, GMAC and KMAC answer "size" of a
     * context they keyed without raising (3.0 to 4.0), and on 4.0 a mark
     * makes a thread that raised nothing its error state (~5,000
     * instructions with its free at exit: thread-per-task-kmac).
     */
    q[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size);
    q[1] = OSSL_PARAM_construct_end();
    if (w->ops->get_ctx_params(w->t.inner, q) == 1
        && q[0].return_size == sizeof(size_t))
        w->size = size;
    return ok;
}

/*
 * Append params (taken) to a first context's record: 0 if it cannot.  An
 * empty array too: the default may act on one (GMAC loads its cipher
 * again).
 */
static int first_record(KC_TMAC_CTX *w, const OSSL_PARAM params[])
{
    SPLIT s;

    if (params == NULL)
        return 1;
    return split(w->f, params, &s) && s.key == NULL && s.nv == 0
           && append_call(w, s.shape, s.ns, KC_AS_SHAPE);
}

/* set_ctx_params of a first context still its record: recorded too */
static KC_NOINLINE int first_set(KC_TMAC_CTX *w, const OSSL_PARAM params[])
{
    int ok = forward(w, 0, NULL, 0, params);

    w->size = 0;
    if (ok != 1 || !first_record(w, params))
        w->first &= ~KC_FIRST_RECORD;
    return ok;
}

/*
 * Can the default duplicate a context before the key (CMAC cannot, GMAC
 * not without a cipher, KMAC on some versions)?  A transient one says (and
 * raises); a quiet yes is kept per thread and record, the only thing it
 * depends on.
 */
#define KC_DUP_SALT 0x9e3779b97f4a7c15ULL

static KC_NOINLINE int unkeyed_dup_ok(const KC_TMAC_CTX *w)
{
    static const char dup_owner[KC_FAM_COUNT];
    const unsigned char *rec = (const unsigned char *)w->t.rec;
    const KC_MAC_FNS *f = &w->f->mac;
    KC_CACHE *c = kc_cache_get(w->pctx);
    uint64_t h = kc_trec_hash(KC_DUP_SALT, w->t.rec, w->t.len);
    KC_ERRTOP before, after;
    EVP_MAC *mac;
    void *t, *d = NULL;
    unsigned int gen;

    if (c != NULL
        && kc_cache_rec_get(c, &dup_owner[w->f - w->pctx->fam], h, rec,
                            w->t.len, NULL, 0) == 1)
        return 1;
    /* the answer may change with the default properties: follow them */
    if (c != NULL && !kc_cache_keep_gen(c, &gen))
        c = NULL;
    kc_err_top(&before);
    if ((t = new_inner(w, NULL, &mac)) == NULL)
        return 0;
    if (replay(w, t, 0, w->t.len) && (d = f->dupctx(t)) != NULL)
        f->freectx(d);
    free_inner(w, t, mac);
    kc_err_top(&after);
    if (d != NULL && c != NULL && kc_err_same(&before, &after))
        kc_cache_rec_put(c, &dup_owner[w->f - w->pctx->fam], h, rec,
                         w->t.len, NULL, 0, 1, gen);
    return d != NULL;
}

/*
 * May a copy of a first context be a usual context of its record
 * (settled_copy(), first_copy())?  A copy is a new context: not while the
 * thread's first few of the family last, so that a process copying a
 * template once or twice builds no private store; and once the family has
 * learned what it needs.
 */
static ossl_inline int copy_looks_up(const KC_TMAC_CTX *src)
{
    return !kc_tcore_app_first(src->pctx, &src->f->alg)
           && kc_tfam_ready(src->pctx, src->f);
}

/*
 * A usual context with src's record (a first context's: its calls), from
 * the thread's pool, not yet learned; NULL if there is no memory, or where
 * the thread's hit rate is low (*cold: a copy that does not look up; also
 * set if memory ran out just after the thread was found cold).
 */
static KC_TMAC_CTX *record_copy(const KC_TMAC_CTX *src, int *cold)
{
    KC_TMAC_CTX *w;

    *cold = 0;
    w = kc_wrapper_take(src->pctx, KC_POOL_TMPL, sizeof(*w), &src->f->alg,
                        cold, NULL);
    if (w == NULL)
        return NULL;
    if (*cold) {
        kc_wrapper_free(src->pctx, KC_POOL_TMPL, w, sizeof(*w));
        return NULL;
    }
    memset(w, 0, KC_TMAC_HEAD);
    w->pctx = src->pctx;
    w->f = src->f;
    w->ops = &src->f->mac;
    w->gen = src->gen;
    w->t.value = -1;
    w->t.shape_len = src->t.shape_len;
    w->t.len = src->t.len;
    w->t.sig_len = src->t.sig_len;
    w->t.hash = src->t.hash;
    w->t.sig_hash = src->t.sig_hash;
    memcpy(w->t.rec, src->t.rec, src->t.len);
    /* (an unkeyed first context's record has no volatile calls) */
    if (src->t.sig_len != 0)
        memcpy(w->t.sig, src->t.sig, src->t.sig_len);
    return w;
}

/*
 * A copy of a first context its record describes (unkeyed): a usual
 * context with that record, once the default said it can copy one, so
 * that copies of an unkeyed template, each keyed, are served from the
 * cache after all (dup-unkeyed-gmac).  src is only read: other threads
 * may copy it too.  NULL: no copy, the default's answer.
 */
static KC_NOINLINE KC_TMAC_CTX *settled_copy(const KC_TMAC_CTX *src,
                                             int *plain)
{
    const KC_TFAM *f = src->f;
    KC_TMAC_CTX *w;

    *plain = 0;
    if (!copy_looks_up(src)) {
        *plain = 1;
        return NULL;
    }
    if (!unkeyed_dup_ok(src) || (w = record_copy(src, plain)) == NULL)
        return NULL;
    if (src->t.len == 0)
        w->t.value = __atomic_load_n(&f->empty_value, __ATOMIC_RELAXED);
    return w;
}

/* mixed into a whole record's hash (first_copy()) */
#define KC_WHOLE_SALT 0x94d049bb133111ebULL

/*
 * The template of (w's whole record, key): shape, key, then the volatile
 * calls, as a usual keying ends (keyed()), so that a copy of a keyed
 * template (first_copy()) needs no replay.  A record with volatile calls
 * is never a usual entry's (those hold shapes alone).  Learned only on a
 * miss: an entry was learned when admitted, and the thread's cache starts
 * again when the default properties change.  1 done; else -1, or -2 if
 * the key is not admitted yet.
 */
static int keyed_whole(KC_TMAC_CTX *w, KC_CACHE *c, const unsigned char *key,
                       size_t keylen)
{
    const KC_TFAM *f = w->f;
    const KC_MAC_FNS *ops = f->direct_on ? f->d->direct : &f->mac;
    const unsigned char *rec = (const unsigned char *)w->t.rec;
    uint64_t h = w->t.hash ^ w->t.sig_hash * KC_WHOLE_SALT;
    KC_LOOKUP lk;
    void *tmpl;
    int ok;

    lk.counted = &w->t.counted;
    tmpl = kc_cache_find_rec(c, &f->alg, rec, w->t.len, h, key, keylen, &lk);
    if (tmpl == NULL) {
        if (((w->t.value = learn_shape(w, c)) & KC_REC_CACHEABLE) == 0
            || (w->t.len > w->t.shape_len
                && (learn_volatile(w, c) & KC_REC_VALID) == 0))
            return -1;
        if (!lk.admit)
            return -2;
        if ((tmpl = kc_tcore_make(&w->t, &mac_side, &f->alg, 1, key,
                                  keylen)) == NULL)
            return -1;
        /* validated without the key: quiet, as replayed on any copy */
        ERR_set_mark();
        ok = kc_trec_replay_calls(rec, w->t.shape_len, w->t.len, mac_call,
                                  ops, tmpl);
        ERR_pop_to_mark();
        if (!ok || !kc_cache_add_rec(c, &f->alg, rec, w->t.len, key, keylen,
                                     tmpl, &lk)) {
            f->alg.freectx(tmpl);
            return -1;
        }
    }
    return take_template(w, ops, tmpl, &lk, 0);
}

/*
 * A copy of a first context keyed in one init since it was made
 * (KC_FIRST_KEYED): a usual context of its record and key, if that is
 * cached (counted and admitted as a usual keying is), so that a keyed
 * template copied per message gets the family's own contexts, whose copy
 * and use cost less than the default's (dup-keyed-gmac: rust-openssl),
 * when copy_looks_up().  src is only read.  NULL: the default's copy.
 */
static KC_NOINLINE KC_TMAC_CTX *first_copy(const KC_TMAC_CTX *src)
{
    KC_TMAC_CTX *w;
    KC_CACHE *c;
    int cold;

    if (!copy_looks_up(src) || (c = kc_cache_get(src->pctx)) == NULL
        || (w = record_copy(src, &cold)) == NULL)
        return NULL;
    if (keyed_whole(w, c, src->key, src->held) == 1)
        return w;
    kc_wrapper_free(src->pctx, KC_POOL_TMPL, w, sizeof(*w));
    return NULL;
}

/*
 * The usual copy, of a keyed template per message: as kc_tmac_dupctx()'s
 * own, less what such a context lacks (a record, an application's MAC).
 */
static ossl_inline void *dup_keyed(const KC_TMAC_CTX *src)
{
    KC_TMAC_CTX *dst;
    void *inner;

    dst = kc_wrapper_take_copy(src->pctx, KC_POOL_TMPL, sizeof(*dst));
    if (dst == NULL)
        return NULL;
    if ((inner = src->ops->dupctx(src->t.inner)) == NULL) {
        kc_wrapper_free(src->pctx, KC_POOL_TMPL, dst, sizeof(*dst));
        return NULL;
    }
    memcpy(dst, src, KC_TMAC_HEAD);
    dst->t.inner = inner;
    dst->t.len = dst->t.shape_len = dst->t.sig_len = 0;
    memset(&dst->lease, 0, sizeof(dst->lease));
    dst->clean = 0;
    dst->first &= ~KC_FIRST_OWN;
    dst->held = 0;
    return dst;
}

void *kc_tmac_dupctx(void *vctx)
{
    KC_TMAC_CTX *src = vctx, *dst;
    int plain;

    if (src->first == KC_FIRST_SHAPE
        && ((dst = settled_copy(src, &plain)) != NULL || !plain))
        return dst;
    if ((src->first & KC_FIRST_KEYED) != 0 && (dst = first_copy(src)) != NULL)
        return dst;
    if (src->t.inner != NULL && src->app_mac == NULL)
        return dup_keyed(src);

    if (src->t.inner == NULL && !unkeyed_dup_ok(src))
        return NULL;
    /* not cleared: the head is copied whole, the rest written before read */
    dst = kc_wrapper_take_copy(src->pctx, KC_POOL_TMPL, sizeof(*dst));
    if (dst == NULL)
        return NULL;
    /* the used part of the record only */
    memcpy(dst, src, KC_TMAC_HEAD);
    if (src->t.inner == NULL) {
        memcpy(dst->t.rec, src->t.rec, src->t.len);
        memcpy(dst->t.sig, src->t.sig, src->t.sig_len);
    } else {
        /* with an inner context every call goes to it: none reads these */
        dst->t.len = dst->t.shape_len = dst->t.sig_len = 0;
    }
    /* the copy owns its inner outright; only the original holds the lease */
    memset(&dst->lease, 0, sizeof(dst->lease));
    dst->clean = 0;
    /* (a first context's copy has no record: all its state is its inner's) */
    dst->first &= ~KC_FIRST_OWN;
    dst->held = 0;
    if (src->app_mac != NULL && !EVP_MAC_up_ref(src->app_mac)) {
        kc_wrapper_free(src->pctx, KC_POOL_TMPL, dst, sizeof(*dst));
        return NULL;
    }
    if (src->t.inner != NULL
        && (dst->t.inner = src->ops->dupctx(src->t.inner)) == NULL) {
        EVP_MAC_free(dst->app_mac);
        kc_wrapper_free(src->pctx, KC_POOL_TMPL, dst, sizeof(*dst));
        return NULL;
    }
    return dst;
}

/*
 * A fresh context's first call exactly the thread's last shape, one the
 * default takes and the family does not cache (CMAC with 3DES): no key can
 * hit, so it passes through now, with nothing recorded to replay later.
 * Matched item by item, as same_init_as_last(): a recorded call has no name
 * twice, no key and no volatile name, so split() is not needed.  The
 * shape's cipher (named by this very call) was found the built-in
 * default's when it was learned, as needs_app() would find it again
 * (KC_REC_PRIVATE).  0: not that call.
 */
static KC_NOINLINE int uncacheable_as_last(const KC_TMAC_CTX *w,
                                           KC_CACHE *c,
                                           const OSSL_PARAM params[])
{
    const unsigned char *shape;
    const OSSL_PARAM *p;
    size_t alen, slen, off;
    uint64_t hash;
    int value;

    if (w->t.len != 0 || params[0].key == NULL)
        return 0;
    shape = kc_cache_rec_last(c, w->f, 0, &alen, &slen, &hash, &value);
    if (shape == NULL || alen != slen
        || (value & (KC_REC_VALID | KC_REC_CACHEABLE | KC_REC_PRIVATE))
           != (KC_REC_VALID | KC_REC_PRIVATE))
        return 0;
    off = kc_trec_marker_at(shape, 0, slen, KC_T_CALL, 0);
    for (p = params; off != 0 && p->key != NULL; p++)
        off = kc_trec_item_at(shape, off, slen, KC_T_PARAM, p);
    return off == slen;
}

/* A default context (deflt_new()), for a call uncacheable_as_last(). */
static KC_NOINLINE int pass_uncached(KC_TMAC_CTX *w, const OSSL_PARAM params[])
{
    const KC_MAC_FNS *f = &w->f->mac;

    if ((w->t.inner = deflt_new(w)) == NULL)
        return 0;
    w->ops = f;
    kc_count_passthrough(w->pctx, &w->f->alg);
    return forward(w, 0, NULL, 0, params);
}

/*
 * set_ctx_params of a cold context before the key: the default's context,
 * or for a first call of shape names only, the thread's base (made for it
 * first if it is time).
 */
static KC_NOINLINE int cold_set_params(KC_TMAC_CTX *w,
                                       const OSSL_PARAM params[])
{
    KC_CACHE *c = NULL;
    SPLIT s;
    int r, make = 0;

    if (w->t.len == 0 && bases_on(w->f)
        && (c = kc_cache_get(w->pctx)) != NULL
        && (r = base_shape(w, c, params, &s, &make)) >= 0)
        return r;
    /* not the base's: the application's default's, as kc_tmac_newctx() */
    if (w->t.len == 0 && w->f->d->cipher_param != NULL && !w->f->nested
        && (w->t.inner = app_first_inner(w)) != NULL) {
        w->first = KC_FIRST_COLD;
        if (!forward(w, 0, NULL, 0, params))
            return 0;
    } else if (!materialize(w, params)
               || !forward(w, 0, NULL, 0, params)) {
        return 0;
    }
    if (make)
        base_make(w->pctx, w->f, c, &s);
    return 1;
}

/* The same for a shape no key of which is cached (CMAC with 3DES). */
static KC_NOINLINE int uncacheable_set(KC_TMAC_CTX *w, KC_CACHE *c,
                                       const OSSL_PARAM params[])
{
    SPLIT s;
    int r, make;

    if ((r = base_shape(w, c, params, &s, &make)) >= 0)
        return r;
    if (!pass_uncached(w, params))
        return 0;
    if (make)
        base_make(w->pctx, w->f, c, &s);
    return 1;
}

/* set_ctx_params before the key: record, key from the cache, or pass. */
static KC_NOINLINE int unkeyed_set_params(KC_TMAC_CTX *w,
                                          const OSSL_PARAM params[])
{
    KC_CACHE *c;
    SPLIT s;
    KC_TMARK sv;

    if (params == NULL) {
        if (kc_quirk(__atomic_load_n(&w->f->quirks, __ATOMIC_RELAXED),
                     KC_Q_NULL_SET_OK))
            return 1;
        goto pass;
    }
    if (w->t.cold
        && !(params[0].key == NULL
             && kc_quirk(__atomic_load_n(&w->f->quirks, __ATOMIC_RELAXED),
                         KC_Q_EMPTY_SET_OK)))
        return cold_set_params(w, params);
    if ((c = kc_cache_get(w->pctx)) == NULL)
        goto pass;
    if (__atomic_load_n(&uncacheable_seen, __ATOMIC_RELAXED)
        && uncacheable_as_last(w, c, params))
        return uncacheable_set(w, c, params);
    if (!split(w->f, params, &s))
        goto pass;
    if (s.key == NULL) {
        if (record(w, c, &s))
            return 1;
        goto pass;
    }
    /* the default sets the shape's names, keys, then sets the volatile ones */
    if (!w->f->d->set_key_keys || s.key->data_type != OSSL_PARAM_OCTET_STRING)
        goto pass;
    kc_tcore_mark(&w->t, &sv);
    if (s.ns > 0) {
        SPLIT pre = s;

        pre.nv = 0;
        if (!record(w, c, &pre))
            goto pass;
    }
    if (keyed(w, c, s.key->data, s.key->data_size) < 0) {
        kc_tcore_back(&w->t, &sv);
        goto pass;
    }
    /* the default sets them after the key, failing or not: so do we */
    return s.nv == 0 || apply_volatile(w, &s);

 pass:
    return materialize(w, params) && forward(w, 0, NULL, 0, params);
}

/*
 * Is set_ctx_params(params), NULL or empty (EVP_Q_mac makes both), a no-op
 * of w's default context in any state?  NULL: every version's returns at
 * once, if a fresh one took it quietly; empty: only where the family says
 * so too.  Unknown (before the family's first use): no.
 */
static ossl_inline int noop_set(const KC_TMAC_CTX *w,
                                const OSSL_PARAM params[])
{
    unsigned int q = __atomic_load_n(&w->f->quirks, __ATOMIC_RELAXED);

    if (w->ops != &w->f->mac)
        return 0;
    if (params == NULL)
        return kc_quirk(q, KC_Q_NULL_SET_OK);
    return w->f->d->empty_set_inert && kc_quirk(q, KC_Q_EMPTY_SET_OK);
}

/* a set of a first context past its record: it may set a key */
static KC_NOINLINE int first_forward_set(KC_TMAC_CTX *w,
                                         const OSSL_PARAM params[])
{
    forget_held(w);
    return forward(w, 0, NULL, 0, params);
}

static int tmac_set_ctx_params(KC_TMAC_CTX *w, const OSSL_PARAM params[])
{
    const char *c;

    if (w->t.inner != NULL) {
        if (w->first == KC_FIRST_SHAPE)
            return first_set(w, params);
        if ((params == NULL || params[0].key == NULL) && noop_set(w, params))
            return 1;
        /* whatever it sets, a keyless init may not undo it */
        w->clean = 0;
        w->size = 0;
        /* the application's default's: it fetches as the default would */
        if (w->first == KC_FIRST_COLD)
            return cold_forward(w, params);
        if (w->first != 0)
            return first_forward_set(w, params);
        if ((c = w->f->d->cipher_param) != NULL && params != NULL
            && may_name(c, params))
            return keyed_set(w, params);
        return w->ops->set_ctx_params(w->t.inner, params);
    }
    return unkeyed_set_params(w, params);
}

int kc_tmac_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    int r = tmac_set_ctx_params(vctx, params);

    /* a key given here: as kc_tmac_init() */
    if (params != NULL && names_param(OSSL_MAC_PARAM_KEY, params))
        kc_vector_wipe();
    return r;
}

/* init before the key: the default sets params, then keys (or fails). */
static KC_NOINLINE int unkeyed_init(KC_TMAC_CTX *w, const unsigned char *key,
                                    size_t keylen, const OSSL_PARAM params[])
{
    KC_CACHE *c;
    SPLIT s;
    KC_TMARK sv;
    int direct = 0, r = -1;

    if (key == NULL || w->t.cold || (c = kc_cache_get(w->pctx)) == NULL)
        goto pass;
    /* no lookup: base_shape() recorded no shape cached, or a cold one */
    if (w->based)
        goto pass;
    kc_tcore_mark(&w->t, &sv);
    if (params != NULL && params[0].key != NULL && w->t.len == 0
        && same_init_as_last(w, c, params, &s)) {
        direct = s.nv > 0;
    } else if (params != NULL) {
        if (!split(w->f, params, &s) || s.key != NULL)
            goto pass;
        /*
         * These volatile parameters replace any recorded: checked, then set
         * on the keyed copy (the default sets them first; keying keeps them).
         */
        if (s.nv > 0 && w->f->d->volatile_last_wins) {
            SPLIT pre = s;

            if (volatile_unset(&s))
                goto pass;
            pre.nv = 0;
            if (pre.ns > 0 && !record(w, c, &pre))
                goto pass;
            if (!volatile_valid(w, c, &s)) {
                kc_tcore_back(&w->t, &sv);
                goto pass;
            }
            w->t.len = w->t.shape_len;
            direct = 1;
        } else if (!record(w, c, &s)) {
            goto pass;
        }
    }
    if ((r = keyed(w, c, key, keylen)) > 0)
        return !direct || apply_volatile(w, &s);
    kc_tcore_back(&w->t, &sv);
 pass:
    if ((w->t.cold || w->based) && key != NULL && bases_on(w->f)
        && (r = base_key(w, key, keylen, params)) >= 0)
        return r;
    if (!materialize(w, params) || !forward(w, 1, key, keylen, params))
        return 0;
    /* keyed the default's way with a shape it caches: as if cached */
    w->size = r == -2 ? w->f->d->keyed_size : 0;
    return 1;
}

/*
 * A keyless init of a first context holding its key: a "key" in params
 * replaces the one held, so it goes first; then as tmac_init().  Out of
 * line: the usual inits keep their registers.
 */
static KC_NOINLINE int held_keyless_init(KC_TMAC_CTX *w,
                                         const unsigned char *key,
                                         size_t keylen,
                                         const OSSL_PARAM params[])
{
    forget_held(w);
    if (params == NULL)
        return w->ops->init(w->t.inner, key, keylen, NULL);
    w->size = 0;
    return forward(w, 1, key, keylen, params);
}

static int tmac_init(KC_TMAC_CTX *w, const unsigned char *key, size_t keylen,
                     const OSSL_PARAM params[])
{
    const char *c;

    if (w->t.inner != NULL) {
        if (w->first != 0) {
            if (w->first == KC_FIRST_SHAPE
                || (key != NULL && w->first != KC_FIRST_COLD))
                return first_init(w, key, keylen, params);
            if (w->first & KC_FIRST_HELD)
                return held_keyless_init(w, key, keylen, params);
            /* a keyless init (a new IV per message, say), or a cold one's */
            if (params == NULL)
                return w->ops->init(w->t.inner, key, keylen, NULL);
            w->size = 0;
            return forward(w, 1, key, keylen, params);
        }
        if (key != NULL || params != NULL) {
            w->clean = 0;
            w->size = 0;
        }
        if ((c = w->f->d->cipher_param) != NULL && params != NULL
            && may_name(c, params))
            return keyed_init(w, key, keylen, params);
        return w->ops->init(w->t.inner, key, keylen, params);
    }
    return unkeyed_init(w, key, keylen, params);
}

int kc_tmac_init(void *vctx, const unsigned char *key, size_t keylen,
                 const OSSL_PARAM params[])
{
    int r;

    if (key == NULL)
        return tmac_init(vctx, key, keylen, params);
    r = tmac_init(vctx, key, keylen, params);
    /* what copies of a cached context or the key left in them */
    kc_vector_wipe();
    return r;
}

static KC_NOINLINE int unkeyed_update(KC_TMAC_CTX *w,
                                      const unsigned char *data,
                                      size_t datalen)
{
    return materialize(w, NULL) && w->f->mac.update(w->t.inner, data, datalen);
}

int kc_tmac_update(void *vctx, const unsigned char *data, size_t datalen)
{
    KC_TMAC_CTX *w = vctx;

    if (w->t.inner != NULL) {
        w->first &= ~(KC_FIRST_RECORD | KC_FIRST_KEYED);
        return w->ops->update(w->t.inner, data, datalen);
    }
    return unkeyed_update(w, data, datalen);
}

static KC_NOINLINE int unkeyed_final(KC_TMAC_CTX *w, unsigned char *out,
                                     size_t *outl, size_t outsize)
{
    return materialize(w, NULL)
           && w->f->mac.final(w->t.inner, out, outl, outsize);
}

int kc_tmac_final(void *vctx, unsigned char *out, size_t *outl,
                  size_t outsize)
{
    KC_TMAC_CTX *w = vctx;

    if (w->t.inner != NULL) {
        w->first &= ~(KC_FIRST_RECORD | KC_FIRST_KEYED);
        return w->ops->final(w->t.inner, out, outl, outsize);
    }
    return unkeyed_final(w, out, outl, outsize);
}

static ossl_inline int answer_size(OSSL_PARAM params[], size_t size)
{
    return size != 0 && kc_answer_size(params, size);
}

int kc_tmac_get_params(int which, OSSL_PARAM params[])
{
    /* EVP_MAC_final asks for the size alone: the default's answer, learned */
    OSSL_FUNC_mac_get_params_fn *get;

    if (answer_size(params, __atomic_load_n(&fixed_size[which],
                                            __ATOMIC_RELAXED)))
        return 1;
    get = __atomic_load_n(&inner_get_params[which], __ATOMIC_ACQUIRE);
    return get != NULL && get(params);
}

static KC_NOINLINE int sized_get_params(KC_TMAC_CTX *w, OSSL_PARAM params[])
{
    if (kc_answer_size(params, w->size))
        return 1;
    return w->ops->get_ctx_params(w->t.inner, params);
}

/* Never keyed: a transient default context in this state answers. */
static KC_NOINLINE int unkeyed_get_params(KC_TMAC_CTX *w, OSSL_PARAM params[])
{
    const KC_MAC_FNS *f = &w->f->mac;
    EVP_MAC *mac;
    void *t = new_inner(w, NULL, &mac);
    int ok;

    if (t == NULL)
        return 0;
    ok = replay(w, t, 0, w->t.len) && f->get_ctx_params(t, params);
    free_inner(w, t, mac);
    return ok;
}

int kc_tmac_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    KC_TMAC_CTX *w = vctx;

    if (w->t.inner != NULL) {
        if (w->size != 0)
            return sized_get_params(w, params);
        return w->ops->get_ctx_params(w->t.inner, params);
    }
    return unkeyed_get_params(w, params);
}

const OSSL_PARAM *kc_tmac_gettable_ctx_params(KC_PROVCTX *pctx, int which)
{
    return KC_CTX_TABLE(pctx->fam[which].mac.gettable_ctx_params, pctx);
}

const OSSL_PARAM *kc_tmac_settable_ctx_params(KC_PROVCTX *pctx, int which)
{
    return KC_CTX_TABLE(pctx->fam[which].mac.settable_ctx_params, pctx);
}

const OSSL_PARAM *kc_tmac_gettable_params(KC_PROVCTX *pctx, int which)
{
    return KC_TABLE(pctx->fam[which].mac.gettable_params, pctx);
}

/*
 * At the family's first context (gate.c): does the default take
 * set_ctx_params with NULL or no parameters as a no-op (EVP_Q_mac makes
 * both)?  Not at start: a fresh KMAC context builds the whole private
 * digest store.  Atomic: a cold context may read them meanwhile.
 */
void kc_tmpl_first_use(KC_PROVCTX *pctx, KC_TFAM *f)
{
    KC_TMAC_CTX *probe_w;

    __atomic_fetch_or(&f->quirks,
                      kc_quirk_learn_sets(kc_tmac_learn_provctx(pctx, f),
                                          &f->mac),
                      __ATOMIC_RELAXED);
    /* what a fresh context's (empty) shape is, for every new wrapper */
    if ((probe_w = OPENSSL_zalloc(sizeof(*probe_w))) != NULL) {
        probe_w->pctx = pctx;
        probe_w->f = f;
        probe_w->gen = rec_gen(pctx);
        __atomic_store_n(&f->empty_value, shape_value(probe_w),
                         __ATOMIC_RELAXED);
        OPENSSL_free(probe_w);
    }
    if (f->d->direct_new == NULL || f->d->direct->dupctx == NULL
        || f->d->direct->freectx == NULL)
        f->direct_on = 0;
    if (f->direct_on)
        f->alg.freectx = f->d->direct->freectx;
}

int kc_tmpl_bind(KC_PROVCTX *pctx, KC_TFAM *f, const OSSL_ALGORITHM *alg)
{
    const KC_MAC_FNS *m = &f->mac;
    KC_ERRTOP before, after;
    size_t size;

    if (m->newctx == NULL || m->dupctx == NULL || m->freectx == NULL
        || m->init == NULL || m->update == NULL || m->final == NULL
        || m->set_ctx_params == NULL || f->d->park_scrub > KC_SCRUB_MAX)
        return 0;
    f->alg.names = alg->algorithm_names;
    /* the default's, unless kc_tmpl_first_use() finds the family's own */
    f->alg.freectx = m->freectx;
    f->alg.spare_max = f->d->reinit_restores ? KC_SPARE_MAX : 0;
    f->alg.stat = KC_STAT_FAM + (unsigned int)(f - pctx->fam);
    KC_PUBLISH_ONCE(&inner_get_params[f - pctx->fam], m->get_params);
    /* set_ctx_params' no-ops: learned at first use (kc_tmpl_first_use()) */
    f->quirks = 0;
    /* a context-free size (GMAC): ask once, answer EVP's query ever after */
    size = 0;
    ERR_set_mark();
    kc_err_top(&before);
    if (m->get_params != NULL && m->get_ctx_params == NULL) {
        OSSL_PARAM q[2];

        q[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size);
        q[1] = OSSL_PARAM_construct_end();
        if (m->get_params(q) != 1 || !OSSL_PARAM_modified(&q[0]))
            size = 0;
    }
    kc_err_top(&after);
    if (!kc_err_same(&before, &after))
        size = 0;
    ERR_pop_to_mark();
    KC_PUBLISH_ONCE(&fixed_size[f - pctx->fam], size);
    /* a fresh context's shape: learned at first use, unknown (-1) till then */
    f->empty_value = -1;
    return 1;
}
