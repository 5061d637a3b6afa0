/* SPDX-License-Identifier: Apache-2.0 */
/* The per-thread key -> keyed context store (store.c); who adds (origin.c). */
#ifndef KC_CACHE_H
#define KC_CACHE_H

#include "common/common.h"
#include "diag/diag.h"

/* store.c */
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
 * cleared.  *cp (if cp): the thread's cache or NULL.  *cold (if cold): the
 * thread's hit rate is low, so a new context of alg had better not look up
 * (counted as a pass-through; no for one in 32, to keep measuring).  The
 * kc_wrapper_new*() below clear its first head bytes.
 */
void *kc_wrapper_take(KC_PROVCTX *pctx, int kind, size_t size,
                      const KC_ALG *alg, int *cold, KC_CACHE **cp);
/* The same for a copy of a wrapper (no alg, cold or cache wanted). */
void *kc_wrapper_take_copy(KC_PROVCTX *pctx, int kind, size_t size);

static ossl_inline void *kc_wrapper_new_cold(KC_PROVCTX *pctx, int kind,
                                             size_t size, size_t head,
                                             const KC_ALG *alg, int *cold)
{
    void *p = kc_wrapper_take(pctx, kind, size, alg, cold, NULL);

    if (p != NULL)
        memset(p, 0, head);
    return p;
}

static ossl_inline void *kc_wrapper_new_in(KC_PROVCTX *pctx, int kind,
                                           size_t size, size_t head,
                                           KC_CACHE **cp)
{
    void *p = kc_wrapper_take(pctx, kind, size, NULL, NULL, cp);

    if (p != NULL)
        memset(p, 0, head);
    return p;
}

void kc_wrapper_free(KC_PROVCTX *pctx, int kind, void *p, size_t size);
/*
 * The thread's cache or record (store.c's KC_LITE), never made here: one
 * look-up for freectx's kc_cache_park_in() and kc_wrapper_free_in().
 */
KC_CACHE *kc_cache_here(KC_PROVCTX *pctx);
void kc_wrapper_free_in(KC_CACHE *c, int kind, void *p, size_t size);

int kc_cache_start(KC_PROVCTX *pctx);
/* the fork handlers registered now (they are first when there is work) */
void kc_cache_fork_arm(void);
/*
 * The thread's first HMAC misses so far, keyed without a look-up
 * (families/hmac.c): counted again from 0 in a fork child whose handler
 * emptied the forking thread's cache (caches_forked()).
 */
extern __thread unsigned char kc_cache_first_misses
    __attribute__((tls_model("initial-exec")));
/*
 * The same for the template families' first contexts (layer.h's
 * kc_tcore_app_first()), per instance: zeroed with it.  The default's
 * fetches and the family's checks a first context spares are built in a
 * child already, but a miss on the template path is not (fork-child-cmac).
 */
typedef struct {
    uint64_t inst;                      /* whose counts these are */
    unsigned char n[KC_FAM_COUNT];
} KC_FIRSTS;
extern __thread KC_FIRSTS kc_cache_firsts
    __attribute__((tls_model("initial-exec")));
void kc_cache_stop(KC_PROVCTX *pctx);
KC_CACHE *kc_cache_get(KC_PROVCTX *pctx);
void kc_cache_counters(KC_PROVCTX *pctx, KC_COUNTERS *sum, uint64_t *entries);
/* threads that made a cache, those that admitted a key, entries fork wiped */
void kc_cache_lost(KC_PROVCTX *pctx, uint64_t *threads, uint64_t *admitted,
                   uint64_t *wiped);
/* the same per algorithm, by[KC_STAT_SLOTS] */
void kc_cache_counters_by_alg(KC_PROVCTX *pctx, KC_COUNTERS *by,
                              uint64_t *entries);
/*
 * Around a pass-through KDF's calls (core/passthrough.c), nested: the MAC
 * contexts made meanwhile on this thread are cold, keys never counted, and
 * their frees make no cache.
 */
void kc_derive_enter(void);
void kc_derive_leave(void);
/* a pass-through of alg, in this thread's cache if any (never made here) */
void kc_count_passthrough(KC_PROVCTX *pctx, const KC_ALG *alg);
/* Is the entry a lease names still in c and keyed with key?  Constant-time. */
int kc_cache_lease_is(KC_CACHE *c, const KC_LEASE *lease,
                      const unsigned char *key, size_t keylen);
/* A hit served without the cache (a context re-keyed with its own key). */
void kc_count_hit(KC_PROVCTX *pctx, const KC_ALG *alg);
/* Constant-time: do the n bytes at a and b agree? */
int kc_key_equal(const unsigned char *a, const unsigned char *b, size_t n);
/*
 * Has alg missed on this thread before (since start, or fork() in a
 * child)?  Counts this call as one.  Always no on a thread without a cache.
 */
int kc_cache_missed_before(KC_CACHE *c, const KC_ALG *alg);
/* Can c keep what kc_cache_aux_put() gives it (a thread with a cache)? */
int kc_cache_keeps(KC_CACHE *c);
/*
 * The default properties' generation now (c: a thread's cache or record):
 * an answer worked out across a change is not kept.
 */
unsigned int kc_cache_props_gen(KC_CACHE *c);
/*
 * May an answer about what fetches find, worked out now, be kept?  1 once
 * the core will say when the default properties change (the callback is
 * registered first), with *gen (if gen) their generation read after: the
 * one to give the put (kept in the cache itself, an answer needs none: the
 * cache drops its contents at a change).  0 if no change would be heard.
 */
int kc_cache_keep_gen(KC_CACHE *c, unsigned int *gen);
/*
 * The instance's memo of (owner, name, properties) -> value (owner NULL:
 * resolved digests; else the answers to owner's question about a fetch),
 * under the default properties in force: put drops an answer found under
 * gen (kc_cache_props_gen(), read before resolving) if they changed since,
 * and returns 1 if it kept it.  A thread needs no cache to use it.
 */
const void *kc_cache_memo_get(KC_CACHE *c, const void *owner,
                              const char *name, const char *props);
int kc_cache_memo_put(KC_CACHE *c, const void *owner, const char *name,
                      const char *props, const void *value, unsigned int gen);
/*
 * The digest last found or put, if it has no properties and its name fits;
 * *gen says under which default properties it holds (the caller checks).
 */
#define KC_HINT_NAME 16
const void *kc_cache_memo_last(KC_CACHE *c, char name[KC_HINT_NAME],
                               unsigned int *gen);
/*
 * The thread's last answer about a pair of strings (a, b, by content) for
 * owner, or -1 if another pair: a one-entry memo for what a new context
 * asks every time, gone with the cache's contents when the default
 * properties change.  Longer pairs are not kept.  No secrets.
 */
#define KC_PAIR_HINT_MAX 32
int kc_cache_pair_hint(const KC_CACHE *c, const void *owner, const char *a,
                       const char *b);
void kc_cache_pair_hint_put(KC_CACHE *c, const void *owner, const char *a,
                            const char *b, int value);

/*
 * Per-thread side templates holding no key material (an HMAC context with
 * a digest and an empty key), by a tag the caller chooses, freed with the
 * cache.  A put replaces its tag's, or may evict another; without a cache
 * nothing is kept (the caller still owns ctx: kc_cache_aux_get() says).
 */
#define KC_AUX_SLOTS 8
void *kc_cache_aux_get(KC_CACHE *c, const void *tag);
void kc_cache_aux_put(KC_CACHE *c, const void *tag, void *ctx,
                      void (*freectx)(void *));

/* What a lookup found, and what kc_cache_add() and a later park need. */
typedef struct {
    /*
     * In: the fingerprint the context last counted towards admission (0:
     * none), so that a key keyed again and again in one context counts once.
     */
    uint64_t *counted;
    KC_LEASE lease;           /* names the entry (hit or add) */
    uint64_t hash;            /* of the key, for kc_cache_add() */
    void *spare;              /* hit: a used context handed over, or NULL */
    int admit;                /* miss: cache this key now */
    int pending;              /* miss: the key's entry awaits its template */
} KC_LOOKUP;

/*
 * Look up (alg, param, key).  A hit returns the entry's keyed template,
 * which stays the cache's (duplicate it), and a spare in lk->spare if any.
 * A miss returns NULL; lk->admit says whether to cache the key now.
 */
void *kc_cache_find(KC_CACHE *c, const KC_ALG *alg, const void *param,
                    const unsigned char *key, size_t keylen, KC_LOOKUP *lk);
/*
 * After an admitted miss: cache tmpl (keyed, never used) for the key looked
 * up into lk; the cache owns it on success, 0 leaves it the caller's.  With
 * tmpl NULL the template is the first context parked on lk->lease; until
 * then the key misses with lk->pending set and the lease naming the entry.
 */
int kc_cache_add(KC_CACHE *c, const KC_ALG *alg, const void *param,
                 const unsigned char *key, size_t keylen, void *tmpl,
                 KC_LOOKUP *lk);
/*
 * The same for entries that also carry a record, compared by content (the
 * cache keeps a copy; rechash is mixed into the key's hash).  An algorithm
 * uses one kind of lookup only.
 */
void *kc_cache_find_rec(KC_CACHE *c, const KC_ALG *alg,
                        const unsigned char *rec, size_t reclen,
                        uint64_t rechash, const unsigned char *key,
                        size_t keylen, KC_LOOKUP *lk);
int kc_cache_add_rec(KC_CACHE *c, const KC_ALG *alg, const unsigned char *rec,
                     size_t reclen, const unsigned char *key, size_t keylen,
                     void *tmpl, KC_LOOKUP *lk);
/*
 * Per-thread values learned about records (the bytes a + b, of owner):
 * the value put, or -1 if none is known (or overwritten).  No secrets.
 * Put keeps a value only while the default properties are those of gen
 * (kc_cache_props_gen(), read before working it out: working it out may
 * itself start the thread's cache again); 0 if they moved, and the value
 * is then kept nowhere else either.
 */
#define KC_REC_SLOTS 32
int kc_cache_rec_get(KC_CACHE *c, const void *owner, uint64_t hash,
                     const unsigned char *a, size_t alen,
                     const unsigned char *b, size_t blen);
int kc_cache_rec_put(KC_CACHE *c, const void *owner, uint64_t hash,
                     const unsigned char *a, size_t alen,
                     const unsigned char *b, size_t blen, int value,
                     unsigned int gen);
/*
 * The record last found or put for owner, of one piece (pair 0) or two:
 * its bytes, first piece's and whole length, hash and value; or NULL.
 */
const unsigned char *kc_cache_rec_last(KC_CACHE *c, const void *owner,
                                       int pair, size_t *alen, size_t *len,
                                       uint64_t *hash, int *value);
/*
 * Give a used context back to the entry the lease names in c
 * (kc_cache_here()'s, may be NULL) for a later hit.  If it can be kept,
 * ready(arg, ctx) first makes it what a hit takes (re-initialised without
 * a key, nothing of its messages left).  0: not kept, the caller frees it.
 */
int kc_cache_park_in(KC_CACHE *c, const KC_LEASE *lease, void *ctx,
                     int (*ready)(const void *arg, void *ctx),
                     const void *arg);

/*
 * origin.c: was the context keyed by the application, directly or through
 * a libcrypto entry point of its kind (1), or by OpenSSL's own code -
 * libssl, a KDF, a DRBG, a signature - or a path it cannot read (0)?
 * Asked before a key is admitted, never on a hit.
 */
int kc_origin_admits(const KC_PROVCTX *pctx, int cipher);
/*
 * In a child forked while other threads ran: 0 from now on, without
 * walking (store.c's fork handler says so).  The loader's lock that
 * dl_iterate_phdr() takes may have been held by one of them - keycache's
 * own walk, say - and glibc does not free it in the child.
 */
void kc_origin_forked_threaded(void);
/* Do a and b lie in the same loaded object?  (Cheaper than dladdr.) */
int kc_same_object(const void *a, const void *b);
/* The file of the loaded object holding a (for messages), or "?". */
const char *kc_object_path(const void *a);

#endif
