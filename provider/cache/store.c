/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-thread cache: key (and what else shapes the keyed state) -> a
 * keyed inner template, plus used contexts given back ("spares").  The hot
 * path takes no lock and no atomic read-modify-write.  A key becomes an
 * entry only once seen in admit_after keyed inits; until then only a keyed
 * fingerprint of it is kept.  Design: docs/architecture.md.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"

#ifndef MADV_WIPEONFORK
# define MADV_WIPEONFORK 18     /* Linux 4.14 */
# define MADV_KEEPONFORK 19
#endif

/*
 * A slot is split in two.  What a fork child needs, the default's contexts
 * to free, is in KC_HELD, in the cache's ordinary memory; the rest, the key
 * above all, is in KC_ENTRY, in pages the kernel wipes in a child (see
 * cache_new()).  So the child frees contexts and walks nothing of its own.
 */
typedef struct {
    const KC_ALG *alg;        /* NULL: nothing to free; published last */
    void *tmpl;               /* keyed and never used: duplicated on a hit */
    void *spare[KC_SPARE_MAX];/* used contexts given back (alg->spare_max) */
    unsigned int nspare;
    uint32_t spare_epoch;     /* the cache's fork_epoch at the last give-back */
    unsigned char *rec;       /* a record compared by content, or NULL */
    size_t reclen;            /* set before rec, cleared after */
    uint64_t gen;             /* changes whenever the slot is (re)filled */
    uint64_t pad[2];          /* see below */
} KC_HELD;

typedef struct {
    const KC_ALG *alg;        /* NULL: free slot */
    const void *param;
    uint64_t hash;
    uint32_t prev, next;      /* LRU list (live) or free list (next) */
    time_t last_time;         /* for idle_ttl only */
    size_t keylen;
    size_t reclen;            /* KC_HELD's, read here by a look-up */
    uint64_t pad;
    unsigned char key[KEYCACHE_MAX_KEY_LEN];
} KC_ENTRY;

/* a slot number scales to either in two instructions (hit path) */
_Static_assert(sizeof(KC_HELD) == 128 && sizeof(KC_ENTRY) == 192,
               "a slot's halves keep their sizes");

/*
 * Admission filter: keyed fingerprints of missed keys and how often each
 * was seen, in buckets of KC_SEEN_WAYS.  A fingerprint lives in either of
 * two buckets and replaces the least recently seen slot; at most half full,
 * so keys in rotation never push each other out, whatever the hash key.
 */
typedef struct {
    uint64_t fp;              /* 0: empty */
    uint32_t seen;            /* or KC_SEEN_REFUSED */
    uint32_t stamp;           /* when last seen (KC_CACHE.seen_clock) */
} KC_SEEN;
#define KC_SEEN_REFUSED UINT32_MAX
#define KC_SEEN_WAYS 4

/*
 * Resolved digest names (owner NULL) and the answers to layer/tmpl.c's
 * questions about where a fetch resolves (memo_ask(), owner its question),
 * one memo per instance shared by its threads.  A name goes in a block of
 * its own, published by compare-and-swap (on a miss only) in the first
 * empty slot and never written again while the instance lives: readers
 * take no lock and see whole names.  No secrets.
 * An answer holds for the default properties it was found under (gen):
 * after a change the name is resolved and published again, and once the
 * slots are full it is resolved at every look-up.
 */
#define KC_MEMO_SLOTS 16
#define KC_MEMO_NAME 64
typedef struct {
    const void *owner;        /* NULL: a digest; else what the value means */
    const void *value;
    unsigned int gen;         /* pctx->props_gen it was found at */
    size_t namelen;
    char name[KC_MEMO_NAME];
    char props[KC_MEMO_NAME];
} KC_MEMO;

/* small: one malloc below glibc's large-request path, which consolidates */
struct kc_shared_st {
    KC_MEMO *memo[KC_MEMO_SLOTS]; /* published in order, never changed */
    /*
     * The hash key of threads without a cache (KC_LITE), taken over by
     * their caches.  Written at start and in a forked child only.
     */
    uint64_t key[2];
    /* pass-throughs counted by threads without a cache */
    uint64_t passthrough[KC_STAT_SLOTS];
};

struct kc_cache_st {
    int lite;                 /* 0: see KC_LITE */
    KC_PROVCTX *pctx;
    KC_CACHE *next, *prev;    /* registry list, under registry_lock */
    pthread_t owner;          /* the thread it is made for */
    uint64_t id;              /* unique for the process's lifetime */
    uint64_t sipkey[2];       /* secret (see kc_hash()) */
    uint32_t lru_head, lru_tail; /* most / least recently used */
    uint32_t free_head;
    /*
     * Slots [0, hw) have held an entry; the rest are never read, so never
     * initialised, walked nor wiped.  Raised (release) before a new slot is
     * written, so that a child forked meanwhile frees its contexts.
     */
    uint32_t hw;
    int admitted;             /* has admitted a key (kc_cache_lost()) */
    uint32_t missed;          /* bit KC_ALG.stat: missed on this thread */
    uint64_t gen;
    unsigned int props_gen;   /* pctx->props_gen its contents were made at */
    time_t last_sweep;
    size_t size, used;
    size_t nspares;           /* spare contexts in all entries */
    uint32_t fork_epoch;      /* forks by this thread (caches_prefork()) */
    size_t nidx;              /* power of two, at least twice size */
    uint32_t *idx;            /* hash index: slot + 1, 0 = empty */
    size_t nseen;             /* power of two, at least 2 x size and 64 */
    KC_SEEN *seen;            /* admission filter */
    uint32_t seen_clock;
    KC_COUNTERS n[KC_STAT_SLOTS]; /* per algorithm, KC_ALG.stat */
    unsigned int memo_last;   /* the thread's last slot of the memo */
    /* the last answer about a string pair, see kc_cache_pair_hint() */
    struct {
        const void *owner;
        char a[KC_PAIR_HINT_MAX], b[KC_PAIR_HINT_MAX];
        int value;
    } pair;
    /* side templates holding no key material, see kc_cache_aux_get() */
    struct {
        const void *tag;
        void *ctx;
        void (*freectx)(void *);
    } aux[KC_AUX_SLOTS];
    unsigned int aux_next;
    /* learned values of records, see kc_cache_rec_get() */
    struct {
        const void *owner;    /* NULL: free */
        uint64_t hash;
        unsigned char *bytes;
        size_t len, alen;
        int value;
    } recs[KC_REC_SLOTS];
    unsigned int rec_last[2], rec_next;   /* [blen != 0]: last found */
    /* freed wrapper structs, reused by the next newctx on this thread */
    void *pool[KC_POOL_KINDS][KC_POOL_MAX];
    size_t pool_size[KC_POOL_KINDS];
    unsigned int npool[KC_POOL_KINDS];
    /* adaptive bypass: hit rate over the last window of lookups */
    unsigned int win_lookups, win_hits, bypass, bypass_misses, cold_skips;
    /*
     * alive, entries, seen and idx: whole pages inside this block, [wiped,
     * wiped + nwiped), marked MADV_WIPEONFORK if wof (else a child wipes).
     * *alive is 1 from the cache's start: 0 in a child whose kernel wiped
     * the pages but which skipped the fork handler (cache_find()).
     */
    uint64_t *alive;
    KC_ENTRY *entries;
    unsigned char *wiped;
    size_t nwiped;
    int wof;
    uint64_t idle_ttl;        /* the instance's, read by every hit */
    int marked;               /* pages may carry the advice: see cache_mark() */
    KC_HELD held[];
};

/*
 * A thread's record before it has a cache: a thread that keys a few times
 * and admits nothing (a thread per task) counts its keys here, in static
 * TLS, and allocates nothing, registers no thread stop, leaves nothing to
 * free.  Its cache (body) is made once it has something to keep, and takes
 * over the hash key and fingerprints.  One instance owns the record at a
 * time (inst); other instances make a cache at once.  Handed to callers as
 * a KC_CACHE: lite is 1 where KC_CACHE's is 0 (is_lite()).
 */
#define KC_LITE_SEEN 8
/* wrapper structs freed before the thread's cache is made to pool them */
#define KC_LITE_FREES 8
typedef struct {
    int lite;                 /* 1 */
    uint32_t last_tick;       /* KEYCACHE_DEBUG's report: time()'s low bits */
    uint64_t inst;            /* the owner's KC_PROVCTX.inst, 0: none */
    KC_PROVCTX *pctx;
    KC_CACHE *body;           /* the thread's cache of inst, or NULL */
    unsigned int memo_last;
    unsigned char nseen;      /* seen[0, nseen) used since last wiped */
    unsigned char frees;      /* wrapper structs freed, up to KC_LITE_FREES */
    unsigned char admitted;   /* a cache of the record's admitted a key */
    unsigned char own_stopped; /* its caches wait to be set aside: reap_key */
    KC_SEEN seen[KC_LITE_SEEN];   /* fingerprints under shared->key */
} KC_LITE;

_Static_assert(sizeof(KC_LITE) <= 256, "a thread's record stays small");

static __thread KC_LITE kc_lite __attribute__((tls_model("initial-exec")));
/* pass-through KDF calls in progress on this thread: kc_derive_enter() */
static __thread unsigned int deriving
    __attribute__((tls_model("initial-exec")));

static ossl_inline int is_lite(const KC_CACHE *c)
{
    int v;

    memcpy(&v, c, sizeof(v));
    return v;
}

static ossl_inline KC_LITE *as_lite(KC_CACHE *c)
{
    return (KC_LITE *)(void *)c;
}

static KC_SEEN *seen_slot(KC_CACHE *c, uint64_t fp);

/*
 * The registries of caches and the list of live instances, never on the
 * hot path.  Static and never freed: OpenSSL deregisters thread-stop
 * handlers only after teardown, so one may run after its instance is gone.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static KC_PROVCTX *live_instances;
static uint64_t next_cache_id = 1;
static uint64_t next_inst = 1;

/* the calling thread's cache of an instance, or NULL */
static ossl_inline KC_CACHE *tls_get(KC_PROVCTX *pctx)
{
    if (kc_lite.inst == pctx->inst)
        return kc_lite.body;
    /* stopped, to be set aside by the next cache made (see reap_key) */
    if (kc_lite.own_stopped)
        return NULL;
    return CRYPTO_THREAD_get_local(&pctx->tls);
}

/*
 * fork(): a thread holding registry_lock does not exist in the child, which
 * would wait for it forever.  The forking thread holds it across fork();
 * the child drops what it inherited, then unlocks it (not re-initialises
 * it: ThreadSanitizer would still see it held).
 *
 * Unless the process has one thread (glibc's __libc_single_threaded, true
 * only then, and never in a dlmopen() namespace), as a prefork server's
 * parent has: then no other thread holds the lock or is halfway through
 * linking a cache or an instance, and none can start before fork()
 * returns, so the lists are whole and the lock free without it.  A count
 * of caches would not do: a thread that has none takes the lock too (a
 * record's claim, a report), and a thread may be making the first.
 */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* the forking thread took registry_lock (written by it alone) */
static int fork_locked;

/*
 * glibc's flag, linked weakly (about a thousand instructions at load):
 * looking it up later with dlsym() would take the loader's lock wherever
 * that happens first, under whatever lock the caller holds.  Another libc,
 * or a glibc before 2.32: absent, and the lock is taken.  Only threads
 * this namespace's libc made count (as for glibc's own fork()).
 */
extern char __libc_single_threaded __attribute__((weak));

static int one_thread(void)
{
    return &__libc_single_threaded != NULL && __libc_single_threaded != 0;
}

static void caches_prefork(void);

static void registry_prefork(void)
{
    if (one_thread()) {
        fork_locked = 0;
    } else {
        pthread_mutex_lock(&registry_lock);
        fork_locked = 1;
    }
    caches_prefork();
}

static void registry_postfork_parent(void)
{
    if (fork_locked)
        pthread_mutex_unlock(&registry_lock);
}

static void caches_forked(void);

static void registry_postfork_child(void)
{
    caches_forked();
    if (fork_locked) {
        /* no admission walks the loader's lists here (origin.c) */
        kc_origin_forked_threaded();
        pthread_mutex_unlock(&registry_lock);
    }
}

static void atfork_register(void)
{
    pthread_atfork(registry_prefork, registry_postfork_parent,
                   registry_postfork_child);
}

/*
 * The handlers are registered when there is first something for them to
 * do: a cache (entries, spares, bases), a fingerprint in a thread's record
 * (a key's, under the hash key), a report, or registry_lock taken while
 * other threads run.  Until then a fork() costs keycache nothing
 * (fork-child-empty): the child inherits nothing of a key, and no thread
 * can hold the lock, since only the thread that took it ran.  Children of
 * such a parent keep its hash key, which hashed nothing there.
 */
static void fork_arm(void)
{
    pthread_once(&atfork_once, atfork_register);
}

void kc_cache_fork_arm(void)
{
    fork_arm();
}

static void registry_take(void)
{
    if (!one_thread())
        fork_arm();
    pthread_mutex_lock(&registry_lock);
}

/* Is pctx, or the instance numbered inst, live?  (registry_lock held) */
static int instance_live(const KC_PROVCTX *pctx, uint64_t inst)
{
    const KC_PROVCTX *p;

    for (p = live_instances; p != NULL; p = p->next_live)
        if (p == pctx || p->inst == inst)
            return 1;
    return 0;
}

/*
 * Counters are written by the owning thread only and read by others:
 * relaxed atomics keep that race-free at the cost of a plain move.
 */
#define KC_BUMP(c, slot, field) \
    __atomic_store_n(&(c)->n[slot].field, (c)->n[slot].field + 1, \
                     __ATOMIC_RELAXED)
#define KC_READ(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/*
 * SipHash-1-3 under the cache's secret key: without a keyed PRF, keys
 * chosen to collide would pile into one probe run.  Host word order.
 */
#define KC_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define KC_SIPROUND                                                         \
    do {                                                                    \
        v0 += v1; v1 = KC_ROTL(v1, 13); v1 ^= v0; v0 = KC_ROTL(v0, 32);     \
        v2 += v3; v3 = KC_ROTL(v3, 16); v3 ^= v2;                           \
        v0 += v3; v3 = KC_ROTL(v3, 21); v3 ^= v0;                           \
        v2 += v1; v1 = KC_ROTL(v1, 17); v1 ^= v2; v2 = KC_ROTL(v2, 32);     \
    } while (0)

static ossl_inline __attribute__((always_inline))
uint64_t kc_hash(const uint64_t k[2], const unsigned char *p, size_t n)
{
    uint64_t v0 = k[0] ^ 0x736f6d6570736575ULL;
    uint64_t v1 = k[1] ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k[0] ^ 0x6c7967656e657261ULL;
    uint64_t v3 = k[1] ^ 0x7465646279746573ULL;
    uint64_t m, last = (uint64_t)n << 56;
    size_t i;

    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&m, p, 8);
        v3 ^= m;
        KC_SIPROUND;
        v0 ^= m;
    }
    /* byte by byte: no stack buffer holds the key's tail */
    for (i = 0; i < n; i++)
        last |= (uint64_t)p[i] << (8 * i);
    v3 ^= last;
    KC_SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    KC_SIPROUND;
    KC_SIPROUND;
    KC_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/*
 * Wipe and free a wrapper struct (no key, but maybe a keyed hash):
 * explicit_bzero() is kept by the compiler as OPENSSL_cleanse() is, but
 * stores whole vectors where that stores byte by byte.
 */
static void wipe_free(void *p, size_t n)
{
    if (p == NULL)
        return;
    explicit_bzero(p, n);
    OPENSSL_free(p);
}

/* LRU as a doubly linked list of slot numbers: O(1) touch and evict. */
#define KC_NIL UINT32_MAX

static ossl_inline void lru_unlink(KC_CACHE *c, uint32_t i)
{
    KC_ENTRY *ent = c->entries, *e = &ent[i];

    if (e->prev != KC_NIL)
        ent[e->prev].next = e->next;
    else
        c->lru_head = e->next;
    if (e->next != KC_NIL)
        ent[e->next].prev = e->prev;
    else
        c->lru_tail = e->prev;
}

static ossl_inline void lru_push_front(KC_CACHE *c, uint32_t i)
{
    KC_ENTRY *ent = c->entries, *e = &ent[i];

    e->prev = KC_NIL;
    e->next = c->lru_head;
    if (c->lru_head != KC_NIL)
        ent[c->lru_head].prev = i;
    else
        c->lru_tail = i;
    c->lru_head = i;
}

/* hash index: linear probing, deletion by backward shift */
static void idx_insert(KC_CACHE *c, uint32_t slot)
{
    size_t m = c->nidx - 1, i = c->entries[slot].hash & m;

    while (c->idx[i] != 0)
        i = (i + 1) & m;
    c->idx[i] = slot + 1;
}

static void idx_remove(KC_CACHE *c, uint32_t slot)
{
    size_t m = c->nidx - 1, i = c->entries[slot].hash & m, j, home;

    while (c->idx[i] != slot + 1)
        i = (i + 1) & m;
    for (j = (i + 1) & m; c->idx[j] != 0; j = (j + 1) & m) {
        home = c->entries[c->idx[j] - 1].hash & m;
        /* the hole at i lies on j's probe path from home: fill it */
        if (((j - home) & m) >= ((j - i) & m)) {
            c->idx[i] = c->idx[j];
            i = j;
        }
    }
    c->idx[i] = 0;
}

/*
 * Free slot i's contexts and record, cleanse its whole key; 1 if it was
 * live.  Each context leaves the slot before it is freed and the spare
 * count is bounded, so that a fork child (held_free_forked()) finds each
 * once at most, whatever this thread was doing.
 */
static int entry_clear(KC_CACHE *c, uint32_t i)
{
    KC_HELD *h = &c->held[i];
    KC_ENTRY *e = &c->entries[i];
    const KC_ALG *alg = h->alg;
    unsigned int n = h->nspare < KC_SPARE_MAX ? h->nspare : KC_SPARE_MAX;
    void *ctx;

    if (alg != NULL) {
        while (n > 0) {
            ctx = h->spare[--n];
            h->spare[n] = NULL;
            h->nspare = n;
            c->nspares--;
            if (ctx != NULL)
                alg->freectx(ctx);
        }
        ctx = h->tmpl;
        h->tmpl = NULL;
        if (ctx != NULL)
            alg->freectx(ctx);
        h->alg = NULL;
    }
    /* vector stores the compiler keeps, see wipe_free() */
    explicit_bzero(e->key, sizeof(e->key));
    ctx = h->rec;
    h->rec = NULL;
    OPENSSL_clear_free(ctx, h->reclen);
    e->reclen = h->reclen = 0;
    e->alg = NULL;
    e->param = NULL;
    e->keylen = 0;
    e->hash = 0;
    return alg != NULL;
}

/* Evict live slot i (counted) and put it on the free list. */
static void entry_kill(KC_CACHE *c, uint32_t i)
{
    KC_ENTRY *e = &c->entries[i];

    KC_BUMP(c, e->alg->stat, evictions);
    idx_remove(c, i);
    lru_unlink(c, i);
    e->next = c->free_head;
    c->free_head = i;
    entry_clear(c, i);
    c->held[i].gen = ++c->gen;
    __atomic_store_n(&c->used, c->used - 1, __ATOMIC_RELAXED);
}

/* caches whose pages carry MADV_WIPEONFORK now (cache_mark()) */
static unsigned int marked_caches;
/* released blocks whose pages could not be unmarked, kept for good */
static KC_CACHE *kept_marked;

/*
 * Free c's block, whose slots are cleared (or, in a fork child, zero with
 * the rest of the wiped pages, held_free_forked()): the hash key and the
 * admission fingerprints wiped first.  The pages go back to what malloc
 * expects before it can hand them out again; if they cannot, the block is
 * never freed.
 */
static void cache_release(KC_CACHE *c, int forked)
{
    OPENSSL_cleanse(c->sipkey, sizeof(c->sipkey));
    if (!forked)
        OPENSSL_cleanse(c->seen, c->nseen * sizeof(*c->seen));
    if (c->marked) {
        if (madvise(c->wiped, c->nwiped, MADV_KEEPONFORK) != 0) {
            /* never malloc's again, but still reachable: not a leak */
            c->next = __atomic_load_n(&kept_marked, __ATOMIC_RELAXED);
            while (!__atomic_compare_exchange_n(&kept_marked, &c->next, c, 1,
                                                __ATOMIC_RELEASE,
                                                __ATOMIC_RELAXED))
                ;
            return;
        }
        __atomic_sub_fetch(&marked_caches, 1, __ATOMIC_RELAXED);
    }
    OPENSSL_free(c);
}

/*
 * In a fork child: free the default's contexts of every slot ever filled,
 * reading KC_HELD only; how many were live (the report's fork_wiped, not
 * evictions).  The slots' own pages are zero already (wof), else wiped
 * whole here.  Up to a bounded hw: other threads' caches are read as they
 * were left.
 */
static size_t held_free_forked(KC_CACHE *c)
{
    size_t i, hw = __atomic_load_n(&c->hw, __ATOMIC_ACQUIRE), live = 0;
    const KC_HELD *h;
    const KC_ALG *alg;
    unsigned int n;

    for (i = 0, h = c->held; i < hw && i < c->size; i++, h++) {
        if (h->rec != NULL)
            OPENSSL_clear_free(h->rec, h->reclen);
        if ((alg = __atomic_load_n(&h->alg, __ATOMIC_ACQUIRE)) == NULL)
            continue;
        for (n = h->nspare < KC_SPARE_MAX ? h->nspare : KC_SPARE_MAX; n > 0;)
            if (h->spare[--n] != NULL)
                alg->freectx(h->spare[n]);
        if (h->tmpl != NULL)
            alg->freectx(h->tmpl);
        live++;
    }
    if (!c->wof)
        explicit_bzero(c->wiped, c->nwiped);
    c->nspares = 0;
    return live;
}

/*
 * Clear every slot ever filled, counting live entries as evictions; returns
 * how many were live.  Walks slots (not the LRU list or the index).
 */
static size_t cache_drop_entries(KC_CACHE *c, int forked)
{
    size_t i, hw = c->hw, dropped = 0;

    if (forked)
        return held_free_forked(c);
    for (i = 0; i < hw && i < c->size; i++) {
        if (c->held[i].alg != NULL)
            KC_BUMP(c, c->held[i].alg->stat, evictions);
        dropped += entry_clear(c, (uint32_t)i);
    }
    c->nspares = 0;
    return dropped;
}

/*
 * What else a cache holds, none of it secret, freed with bounded counts:
 * side templates and learned records (cache_drop_learned(), also when the
 * default properties change), then pooled wrapper structs.  In a forked
 * child a record's length may be a newer one's than its bytes: freed, not
 * cleansed.
 */
static void cache_drop_learned(KC_CACHE *c, int forked)
{
    unsigned int k;
    size_t len;
    void *p;

    /* each unlinked before it is freed, for a child forked meanwhile */
    for (k = 0; k < KC_AUX_SLOTS; k++) {
        if ((p = c->aux[k].ctx) == NULL)
            continue;
        __atomic_store_n(&c->aux[k].ctx, NULL, __ATOMIC_RELEASE);
        if (c->aux[k].freectx != NULL)
            c->aux[k].freectx(p);
    }
    memset(c->aux, 0, sizeof(c->aux));
    c->aux_next = 0;
    for (k = 0; k < KC_REC_SLOTS; k++) {
        if ((p = c->recs[k].bytes) == NULL)
            continue;
        len = c->recs[k].len;
        __atomic_store_n(&c->recs[k].bytes, NULL, __ATOMIC_RELEASE);
        if (forked)
            OPENSSL_free(p);
        else
            OPENSSL_clear_free(p, len);
    }
    memset(c->recs, 0, sizeof(c->recs));
    c->rec_last[0] = c->rec_last[1] = c->rec_next = 0;
    memset(&c->pair, 0, sizeof(c->pair));
}

static void cache_drop_side(KC_CACHE *c, int forked)
{
    unsigned int k, n;

    cache_drop_learned(c, forked);
    for (k = 0; k < KC_POOL_KINDS; k++) {
        n = c->npool[k] < KC_POOL_MAX ? c->npool[k] : KC_POOL_MAX;
        while (n > 0)
            wipe_free(c->pool[k][--n], c->pool_size[k]);
    }
}

/* to[] += from[], KC_STAT_SLOTS counters each */
static void add_counters(KC_COUNTERS *to, const KC_COUNTERS *from)
{
    unsigned int i;

    for (i = 0; i < KC_STAT_SLOTS; i++) {
        to[i].hits += KC_READ(from[i].hits);
        to[i].misses += KC_READ(from[i].misses);
        to[i].evictions += KC_READ(from[i].evictions);
        to[i].passthrough += KC_READ(from[i].passthrough);
    }
}

/* Keep c's counters, wipe and free it; returns how many entries it held. */
static size_t cache_free(KC_PROVCTX *pctx, KC_CACHE *c, int forked)
{
    size_t dropped = cache_drop_entries(c, forked);

    add_counters(pctx->retired, c->n);
    cache_drop_side(c, forked);
    cache_release(c, forked);
    return dropped;
}

/* Unlink c from the registry (lock held) */
static void cache_unlink(KC_PROVCTX *pctx, KC_CACHE *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        pctx->caches = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
}

static size_t cache_retire(KC_PROVCTX *pctx, KC_CACHE *c, int forked)
{
    cache_unlink(pctx, c);
    return cache_free(pctx, c, forked);
}

/* Free pctx's stopped threads' caches (lock held); how many entries. */
static size_t caches_reap(KC_PROVCTX *pctx, int forked)
{
    KC_CACHE *c;
    size_t dropped = 0;

    while ((c = pctx->dying) != NULL) {
        pctx->dying = c->next;
        dropped += cache_free(pctx, c, forked);
    }
    return dropped;
}

/*
 * A thread's cache is freed after OpenSSL's thread-stop lock is let go.
 * OpenSSL 3 runs every thread-stop handler under one process-wide lock,
 * and a fork() while another thread holds it leaves the child unable to
 * exit (OPENSSL_cleanup() takes it).  So the handler only moves the cache
 * to its instance's dying list and sets this key, whose destructor, run
 * next by the exiting thread, frees every dying cache under registry_lock
 * (a fork() waits for it; the child frees what is left).  The handler
 * never waits for registry_lock, which the forking thread holds across
 * fork().  When it is taken, the cache stays linked and is only no longer
 * served: the record's is taken off the record, another instance's (reached
 * only through its instance, which may be gone) hidden by own_stopped.
 * Every cache the thread owns but its record's current one is then set
 * aside by the next cache the thread makes (a look-up of another instance
 * makes one) or by that destructor (own_stopped_aside()), and a forked
 * child frees them.  After an explicit
 * OPENSSL_thread_stop() the cache waits for the thread's exit, the next
 * cache made, or teardown.
 */
static pthread_once_t reap_once = PTHREAD_ONCE_INIT;
static pthread_key_t reap_key;
static int reap_ok;

static void cache_set_aside(KC_PROVCTX *pctx, KC_CACHE *c)
{
    cache_unlink(pctx, c);
    c->next = pctx->dying;
    pctx->dying = c;
}

/* the calling thread's record's cache, detached (its own: no lock) */
static KC_CACHE *lite_detach(void)
{
    KC_CACHE *c = kc_lite.body;

    kc_lite.body = NULL;
    /* the record goes on for a thread that goes on, without keys */
    explicit_bzero(kc_lite.seen, sizeof(kc_lite.seen));
    kc_lite.nseen = 0;
    return c;
}

/* the calling thread's caches, but its record's, set aside (lock held) */
static void caches_own_aside(void)
{
    pthread_t self = pthread_self();
    KC_PROVCTX *pctx;
    KC_CACHE *c, *next;

    for (pctx = live_instances; pctx != NULL; pctx = pctx->next_live)
        for (c = pctx->caches; c != NULL; c = next) {
            next = c->next;
            if (c == kc_lite.body || !pthread_equal(c->owner, self))
                continue;
            /* (a later destructor calling in makes a new cache) */
            CRYPTO_THREAD_set_local(&pctx->tls, NULL);
            cache_set_aside(pctx, c);
        }
}

/* what a stop that found registry_lock taken left, set aside (held) */
static void own_stopped_aside(void)
{
    if (kc_lite.own_stopped) {
        kc_lite.own_stopped = 0;
        caches_own_aside();
    }
}

static void caches_reap_all(void *unused)
{
    KC_PROVCTX *pctx;

    (void)unused;
    registry_take();
    own_stopped_aside();
    for (pctx = live_instances; pctx != NULL; pctx = pctx->next_live)
        caches_reap(pctx, 0);
    pthread_mutex_unlock(&registry_lock);
}

/* the destructor's code must outlive an unload: the module is pinned */
static void reap_key_make(void)
{
    reap_ok = kc_module_pin()
              && pthread_key_create(&reap_key, caches_reap_all) == 0;
}

/*
 * Thread-stop handler: under the registry lock if it is free, so that a
 * teardown at the same time either freed the cache already (instance not
 * live) or waits for us; if it is taken, see reap_key.  Without the key (or
 * if it cannot be set), the cache is freed here.
 */
static void kc_thread_stop(void *arg)
{
    KC_PROVCTX *pctx = arg;
    KC_CACHE *c = NULL;
    int defer = reap_ok && pthread_setspecific(reap_key, pctx) == 0;

    if (pthread_mutex_trylock(&registry_lock) != 0) {
        /*
         * Nothing but the thread's own record is touched before
         * instance_live() says pctx lives (see reap_key); the record's
         * next admission makes a new cache and registers this handler again.
         */
        if (defer) {
            if (kc_lite.pctx == pctx)
                (void)lite_detach();
            kc_lite.own_stopped = 1;
            return;
        }
        registry_take();
    }
    if (!instance_live(pctx, 0))
        c = NULL;
    else if (kc_lite.inst == pctx->inst)
        c = lite_detach();
    else if ((c = CRYPTO_THREAD_get_local(&pctx->tls)) != NULL)
        CRYPTO_THREAD_set_local(&pctx->tls, NULL);
    if (c != NULL && defer)
        cache_set_aside(pctx, c);
    else if (c != NULL)
        cache_retire(pctx, c, 0);
    pthread_mutex_unlock(&registry_lock);
}

/*
 * Straight from the kernel, not RAND_bytes_ex(): a DRBG in the private
 * library context leaves per-thread state there, and 3.0 crashes when a
 * library context is freed while threads that used its RAND exit.  No lock,
 * so a forked child can call it.  Nothing it keys leaves keycache.
 */
static void hash_key_new(uint64_t key[2])
{
    if (getrandom(key, 2 * sizeof(*key), GRND_NONBLOCK)
        != (ssize_t)(2 * sizeof(*key))) {
        key[0] = (uint64_t)(uintptr_t)key ^ (uint64_t)time(NULL);
        key[1] = (uint64_t)(uintptr_t)&key ^ (uint64_t)clock();
    }
}

static void shared_free(struct kc_shared_st *sh)
{
    unsigned int k;

    for (k = 0; k < KC_MEMO_SLOTS; k++)
        OPENSSL_free(sh->memo[k]);
    OPENSSL_cleanse(sh->key, sizeof(sh->key));
    OPENSSL_free(sh);
}


/*
 * Advise the kernel to wipe c's pages in a child (wof).  Each marked range
 * splits its heap mapping in up to three, so at most KC_MARKED_MAX caches
 * are marked at a time, against the process's vm.max_map_count (65530 by
 * default): a cache past that is wiped by the child handler itself.  The
 * advice is given mapping by mapping, so a failure part way (ENOMEM,
 * EAGAIN) may leave some pages marked: undone now, and if that fails too,
 * marked stays and cache_release() tries again before the block may go
 * back to malloc.  Any other failure (EINVAL: Linux < 4.14; EPERM or
 * ENOSYS: a seccomp policy) marked nothing.  A policy may allow the advice
 * but not its undoing (OpenSSH's sandbox answers MADV_KEEPONFORK with
 * EINVAL): the first cache marked tries both, once a process, and if the
 * undoing fails no cache is marked again; that first block is never freed.
 */
#define KC_MARKED_MAX 1024
/* 0: not known yet, 1: the advice can be undone, -1: it cannot */
static int mark_undo;

static void cache_mark(KC_CACHE *c)
{
    int err;

    if (__atomic_load_n(&mark_undo, __ATOMIC_RELAXED) < 0)
        return;
    if (__atomic_add_fetch(&marked_caches, 1, __ATOMIC_RELAXED)
        > KC_MARKED_MAX) {
        __atomic_sub_fetch(&marked_caches, 1, __ATOMIC_RELAXED);
        return;
    }
    c->wof = madvise(c->wiped, c->nwiped, MADV_WIPEONFORK) == 0;
    err = errno;
    if (c->wof && __atomic_load_n(&mark_undo, __ATOMIC_RELAXED) == 0) {
        if (madvise(c->wiped, c->nwiped, MADV_KEEPONFORK) != 0) {
            __atomic_store_n(&mark_undo, -1, __ATOMIC_RELAXED);
            c->marked = 1;          /* and wiped in a child: kept so */
            return;
        }
        __atomic_store_n(&mark_undo, 1, __ATOMIC_RELAXED);
        c->wof = madvise(c->wiped, c->nwiped, MADV_WIPEONFORK) == 0;
        err = errno;
    }
    c->marked = c->wof
                || (madvise(c->wiped, c->nwiped, MADV_KEEPONFORK) != 0
                    && (err == ENOMEM || err == EAGAIN));
    if (!c->marked)
        __atomic_sub_fetch(&marked_caches, 1, __ATOMIC_RELAXED);
}

/*
 * One block: the header with its KC_HELD slots, then whole pages for the
 * slots' keys, the fingerprints and the index, marked MADV_WIPEONFORK: a
 * fork child finds them zero, as the kernel left them, instead of walking
 * and writing them (every write there would copy a page).  They lie strictly
 * inside the block, clear of malloc's own headers, and are marked
 * MADV_KEEPONFORK again before the block is freed (cache_release()).  An
 * allocator or kernel that refuses the advice leaves wof 0: a child then
 * wipes them itself.
 */
#define KC_ALIVE_SIZE 64       /* *alive, a cache line before the slots */

static KC_CACHE *cache_new(KC_PROVCTX *pctx)
{
    KC_CACHE *c;
    size_t nidx = 4, nseen = 64, head, nwiped;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t at;

    while (nidx < 2 * pctx->cache_size)
        nidx *= 2;
    while (nseen < 2 * pctx->cache_size)
        nseen *= 2;
    head = offsetof(KC_CACHE, held) + pctx->cache_size * sizeof(KC_HELD);
    nwiped = KC_ALIVE_SIZE + pctx->cache_size * sizeof(KC_ENTRY)
             + nseen * sizeof(KC_SEEN) + nidx * sizeof(uint32_t);
    nwiped = (nwiped + page - 1) & ~(page - 1);
    /* the slots are made as they are first used (hw) */
    if ((c = OPENSSL_malloc(head + page - 1 + nwiped)) == NULL)
        return NULL;
    memset(c, 0, offsetof(KC_CACHE, held));
    c->pctx = pctx;
    c->size = pctx->cache_size;
    c->idle_ttl = pctx->idle_ttl;
    c->nidx = nidx;
    c->nseen = nseen;
    at = ((uintptr_t)c + head + page - 1) & ~(uintptr_t)(page - 1);
    c->wiped = (unsigned char *)at;
    c->nwiped = nwiped;
    c->alive = (uint64_t *)c->wiped;
    *c->alive = 1;
    c->entries = (KC_ENTRY *)(c->wiped + KC_ALIVE_SIZE);
    /* KC_SEEN (8-byte aligned) before the uint32_t index */
    c->seen = (KC_SEEN *)(c->entries + c->size);
    c->idx = (uint32_t *)(c->seen + nseen);
    memset(c->seen, 0, nseen * sizeof(*c->seen));
    memset(c->idx, 0, nidx * sizeof(*c->idx));
    cache_mark(c);
    hash_key_new(c->sipkey);
    c->lru_head = c->lru_tail = c->free_head = KC_NIL;
    c->last_sweep = time(NULL);
    c->props_gen = __atomic_load_n(&pctx->props_gen, __ATOMIC_ACQUIRE);
    return c;
}

/*
 * c emptied, as a new thread's would be but for a new hash key: no
 * fingerprints, no bypass.  Counters go on; gen goes on too, so no context
 * made before is given back to a slot.  In a fork child (the forking
 * thread's cache) the slots, fingerprints and index are zero already.
 */
static size_t cache_renew(KC_CACHE *c, int forked)
{
    size_t dropped = cache_drop_entries(c, forked);

    hash_key_new(c->sipkey);
    if (!forked) {
        memset(c->idx, 0, c->nidx * sizeof(*c->idx));
        OPENSSL_cleanse(c->seen, c->nseen * sizeof(*c->seen));
    }
    *c->alive = 1;
    c->lru_head = c->lru_tail = c->free_head = KC_NIL;
    c->hw = 0;
    __atomic_store_n(&c->used, 0, __ATOMIC_RELAXED);
    c->win_lookups = c->win_hits = c->bypass = 0;
    c->bypass_misses = c->cold_skips = 0;
    c->missed = 0;
    c->last_sweep = time(NULL);
    return dropped;
}

/*
 * fork(), the parent, before it: the forking thread's given-back contexts
 * (spares) that no hit gave back since its last fork are freed here, since
 * the child would have to free them, each beside its entry's template: so
 * a parent that forks children to do the work frees them once, and each
 * child frees one context per entry, as the application would its own
 * (issue 33).  Keys the parent itself uses between forks keep theirs, or
 * each next hit would copy the template (fork-then-parent-mac).  Other
 * threads' spares stay: their caches are theirs alone.  Unlike the
 * child handler this changes the parent's own cache, which the forking
 * thread cannot be using: fork() from a signal handler that interrupted a
 * keycache call (inside OpenSSL, not async-signal-safe either) is not
 * supported.
 */
static KC_NOINLINE void cache_prefork(KC_CACHE *c)
{
    KC_HELD *h;
    uint32_t i;
    void *ctx;

    for (i = 0; i < c->hw && c->nspares > 0; i++) {
        h = &c->held[i];
        if (h->spare_epoch == c->fork_epoch)
            continue;
        while (h->alg != NULL && h->nspare > 0) {
            ctx = h->spare[--h->nspare];
            h->spare[h->nspare] = NULL;
            c->nspares--;
            h->alg->freectx(ctx);
        }
    }
    c->fork_epoch++;
}

/* the forking thread's caches: one without (the usual forker) walks the
 * instances only */
static void caches_prefork(void)
{
    KC_PROVCTX *pctx;
    KC_CACHE *c;

    for (pctx = live_instances; pctx != NULL; pctx = pctx->next_live)
        if ((c = tls_get(pctx)) != NULL)
            cache_prefork(c);
}

/*
 * fork(), the child: it starts with nothing the parent cached.  A child
 * often drops privileges to handle untrusted input, and other threads'
 * caches would never be freed there (no thread stop comes).  The kernel
 * has zeroed every cache's keys, fingerprints and index (cache_new()'s
 * MADV_WIPEONFORK pages); the pthread_atfork child handler frees the
 * default's contexts each slot held (held_free_forked(), reading KC_HELD
 * only, so it copies no page of keycache's per entry): the forking thread
 * keeps its cache, emptied, with what holds no secret; the others' are
 * unlinked and freed whole.
 *
 * It cannot hang: only this thread runs, holding registry_lock (or the
 * parent's only thread, see registry_prefork()), and nothing here takes an
 * OpenSSL lock (the default's freectx functions cleanse, free and drop
 * references with atomic decrements that never reach zero, since
 * keycache's library context holds its own).  glibc resets malloc's locks
 * before child handlers run; an allocator set with CRYPTO_set_mem_functions
 * must be as usable after fork(), or the child could not use OpenSSL.
 *
 * Other threads may have been anywhere on their lock-free hot path: their
 * writers unlink an object before freeing it and publish one (release)
 * only once in place, so nothing is freed twice; what a thread held between
 * the two is left alone, as the default provider's contexts are.
 */
__thread unsigned char kc_cache_first_misses
    __attribute__((tls_model("initial-exec")));
__thread KC_FIRSTS kc_cache_firsts __attribute__((tls_model("initial-exec")));

static void caches_forked(void)
{
    KC_PROVCTX *pctx;
    KC_CACHE *c, *next, *mine;

    kc_cache_first_misses = 0;
    memset(&kc_cache_firsts, 0, sizeof(kc_cache_firsts));
    /*
     * The forking thread's caches are its own again, wiped; it is not
     * counted again among the child's threads that keyed.
     */
    kc_lite.own_stopped = 0;
    kc_lite.admitted = 0;
    for (pctx = live_instances; pctx != NULL; pctx = pctx->next_live) {
        mine = tls_get(pctx);
        /* the memo (no secrets) stays; thread records get a new hash key */
        hash_key_new(pctx->shared->key);
        if (kc_lite.inst == pctx->inst) {
            memset(kc_lite.seen, 0, sizeof(kc_lite.seen));
            kc_lite.nseen = 0;
        }
        /* the child's own report counts from here (core/report.c) */
        pctx->threads_cached = pctx->threads_admitted = pctx->fork_wiped = 0;
        for (c = pctx->caches; c != NULL; c = next) {
            next = c->next;
            c->admitted = 0;
            if (c == mine)
                pctx->fork_wiped += cache_renew(c, 1);
            else
                pctx->fork_wiped += cache_retire(pctx, c, 1);
        }
        pctx->fork_wiped += caches_reap(pctx, 1);
    }
}

/*
 * A cache for the calling thread, registered with the instance and for
 * thread stop: the body of the thread's record l (taking over its hash key
 * and fingerprints), or (l NULL) found through the instance's TLS key.
 */
static KC_CACHE *cache_create(KC_PROVCTX *pctx, KC_LITE *l)
{
    KC_CACHE *c;
    unsigned int k;

    /* nothing a KDF's call does is worth a cache (kc_derive_enter()) */
    if (deriving != 0)
        return NULL;
    fork_arm();
    pthread_once(&reap_once, reap_key_make);
    if ((c = cache_new(pctx)) == NULL)
        return NULL;
    if (l != NULL) {
        memcpy(c->sipkey, pctx->shared->key, sizeof(c->sipkey));
        for (k = 0; k < l->nseen && k < KC_LITE_SEEN; k++) {
            KC_SEEN *s;

            if (l->seen[k].fp == 0)
                continue;
            s = seen_slot(c, l->seen[k].fp);
            s->seen = l->seen[k].seen;
            s->stamp = ++c->seen_clock;
        }
        c->memo_last = l->memo_last;
    }
    /* Not under our lock: OpenSSL takes its own locks in here. */
    if (!pctx->core_thread_start(pctx->handle, kc_thread_stop, pctx)) {
        cache_release(c, 0);
        return NULL;
    }
    registry_take();
    own_stopped_aside();
    caches_reap(pctx, 0);
    c->id = next_cache_id++;
    c->owner = pthread_self();
    /* a thread with a record was counted when it took the record */
    if (l == NULL)
        __atomic_add_fetch(&pctx->threads_cached, 1, __ATOMIC_RELAXED);
    c->next = pctx->caches;
    if (c->next != NULL)
        c->next->prev = c;
    pctx->caches = c;
    if (l != NULL) {
        l->body = c;
        OPENSSL_cleanse(l->seen, sizeof(l->seen));
        l->nseen = 0;
    } else if (!CRYPTO_THREAD_set_local(&pctx->tls, c)) {
        cache_retire(pctx, c, 0);
        c = NULL;
    }
    pthread_mutex_unlock(&registry_lock);
    return c;
}

/* the calling thread's record as a handle (see KC_LITE) */
static ossl_inline KC_CACHE *lite_handle(void)
{
    return (KC_CACHE *)(void *)&kc_lite;
}

/* l's cache, made now if it has none; NULL: none could be made */
static KC_CACHE *lite_body(KC_LITE *l)
{
    if (l->body != NULL)
        return l->body;
    return cache_create(l->pctx, l);
}

/*
 * Make the calling thread's record pctx's if it is no live instance's
 * (instance numbers are never reused, so one torn down is never live).
 */
static int lite_claim(KC_PROVCTX *pctx)
{
    int taken;

    if (kc_lite.inst != 0) {
        registry_take();
        taken = instance_live(NULL, kc_lite.inst);
        pthread_mutex_unlock(&registry_lock);
        if (taken)
            return 0;
        /* a dead instance's (a new thread's is all zero) */
        explicit_bzero(&kc_lite, sizeof(kc_lite));
    }
    kc_lite.lite = 1;
    kc_lite.pctx = pctx;
    kc_lite.inst = pctx->inst;
    /* the threads that used keycache, for the report (kc_cache_lost()) */
    __atomic_add_fetch(&pctx->threads_cached, 1, __ATOMIC_RELAXED);
    return 1;
}

/* At most once a second: drop idle entries, KEYCACHE_DEBUG's report. */
static KC_NOINLINE void cache_timed(KC_CACHE *c)
{
    time_t now;
    size_t i;

    if (c->used == 0 && kc_debug_interval(c->pctx) == 0)
        return;
    now = time(NULL);
    if (now == c->last_sweep)
        return;
    for (i = 0; c->idle_ttl != 0 && i < c->hw; i++)
        if (c->entries[i].alg != NULL
            && (uint64_t)(now - c->entries[i].last_time) >= c->idle_ttl)
            entry_kill(c, (uint32_t)i);
    c->last_sweep = now;
    kc_debug_tick(c->pctx, now);
}

/*
 * The default properties changed since c's contents were made (the core's
 * callback, core/props.c): its entries, learned records and side templates
 * may hold what a fetch no longer finds, so c starts again as a new
 * thread's would, keeping its pooled wrappers.
 */
static KC_NOINLINE void cache_props_moved(KC_CACHE *c, unsigned int gen)
{
    cache_renew(c, 0);
    cache_drop_learned(c, 0);
    c->props_gen = gen;
}

static KC_NOINLINE KC_CACHE *cache_get_slower(KC_PROVCTX *pctx, KC_CACHE *c)
{
    unsigned int gen;
    time_t now;

    if (c != NULL) {
        gen = __atomic_load_n(&pctx->props_gen, __ATOMIC_ACQUIRE);
        if (c->props_gen != gen)
            cache_props_moved(c, gen);
        if (pctx->timed)
            cache_timed(c);
        return c;
    }
    if (kc_lite.inst != pctx->inst && !lite_claim(pctx))
        return cache_create(pctx, NULL);
    /* a record without a cache: only the periodic report is timed */
    if (pctx->timed && kc_debug_interval(pctx) != 0
        && (uint32_t)(now = time(NULL)) != kc_lite.last_tick) {
        kc_lite.last_tick = (uint32_t)now;
        kc_debug_tick(pctx, now);
    }
    return lite_handle();
}

/* the thread's record without a cache, untimed, has no frame to pay */
static KC_NOINLINE KC_CACHE *cache_get_slow(KC_PROVCTX *pctx, KC_CACHE *c)
{
    if (c == NULL && kc_lite.inst == pctx->inst && !pctx->timed)
        return lite_handle();
    return cache_get_slower(pctx, c);
}

KC_CACHE *kc_cache_get(KC_PROVCTX *pctx)
{
    KC_CACHE *c = tls_get(pctx);

    /* the usual case without a stack frame: the rest is out of line */
    if (c == NULL || pctx->timed
        || c->props_gen != __atomic_load_n(&pctx->props_gen,
                                           __ATOMIC_RELAXED))
        return cache_get_slow(pctx, c);
    return c;
}

static ossl_inline const KC_MEMO *memo_at(const struct kc_shared_st *sh,
                                           unsigned int i)
{
    return __atomic_load_n(&sh->memo[i], __ATOMIC_ACQUIRE);
}

static ossl_inline KC_PROVCTX *pctx_of(KC_CACHE *c)
{
    return is_lite(c) ? as_lite(c)->pctx : c->pctx;
}

static ossl_inline unsigned int *memo_last_of(KC_CACHE *c)
{
    return is_lite(c) ? &as_lite(c)->memo_last : &c->memo_last;
}

const void *kc_cache_memo_get(KC_CACHE *c, const void *owner,
                              const char *name, const char *props)
{
    KC_PROVCTX *pctx = pctx_of(c);
    const struct kc_shared_st *sh = pctx->shared;
    unsigned int gen = kc_props_gen(pctx);
    const KC_MEMO *m;
    unsigned int i;

    if (props == NULL)
        props = "";
    /* slots are filled in order: the first empty one ends them */
    for (i = 0; i < KC_MEMO_SLOTS && (m = memo_at(sh, i)) != NULL; i++) {
        if (m->gen == gen && m->owner == owner && strcmp(m->name, name) == 0
            && (m->props[0] == props[0]
                && (props[0] == '\0' || strcmp(m->props, props) == 0))) {
            if (owner == NULL)
                *memo_last_of(c) = i;
            return m->value;
        }
    }
    return NULL;
}

int kc_cache_memo_put(KC_CACHE *c, const void *owner, const char *name,
                      const char *props, const void *value, unsigned int gen)
{
    KC_PROVCTX *pctx = pctx_of(c);
    struct kc_shared_st *sh = pctx->shared;
    KC_MEMO *m, *expect;
    unsigned int i;

    if (props == NULL)
        props = "";
    /* an answer found under properties no longer in force */
    if (gen != kc_props_gen(pctx)
        || strlen(name) >= KC_MEMO_NAME || strlen(props) >= KC_MEMO_NAME
        || memo_at(sh, KC_MEMO_SLOTS - 1) != NULL
        || (m = OPENSSL_malloc(sizeof(*m))) == NULL)
        return 0;
    m->owner = owner;
    m->namelen = strlen(name);
    strcpy(m->name, name);
    strcpy(m->props, props);
    m->value = value;
    m->gen = gen;
    for (i = 0; i < KC_MEMO_SLOTS; i++) {
        expect = NULL;
        if (!__atomic_compare_exchange_n(&sh->memo[i], &expect, m, 0,
                                         __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
            /*
             * taken; by the same answer from a thread that asked at the
             * same time (threads starting together), it is kept once
             */
            if (expect->gen != gen || expect->owner != owner
                || strcmp(expect->name, name) != 0
                || strcmp(expect->props, props) != 0)
                continue;
            OPENSSL_free(m);
        }
        if (owner == NULL)
            *memo_last_of(c) = i;
        return 1;
    }
    /* full: the name is resolved again next time */
    OPENSSL_free(m);
    return 0;
}

int kc_cache_pair_hint(const KC_CACHE *c, const void *owner, const char *a,
                       const char *b)
{
    if (is_lite(c)
        && (c = ((const KC_LITE *)(const void *)c)->body) == NULL)
        return -1;
    if (c->pair.owner != owner
        || strcmp(c->pair.a, a) != 0 || strcmp(c->pair.b, b) != 0)
        return -1;
    return c->pair.value;
}

void kc_cache_pair_hint_put(KC_CACHE *c, const void *owner, const char *a,
                            const char *b, int value)
{
    size_t alen = strnlen(a, KC_PAIR_HINT_MAX) + 1;
    size_t blen = strnlen(b, KC_PAIR_HINT_MAX) + 1;

    if (alen > KC_PAIR_HINT_MAX || blen > KC_PAIR_HINT_MAX)
        return;
    /* a hint is not worth a cache of its own (a thread per task) */
    if (is_lite(c) && (c = as_lite(c)->body) == NULL)
        return;
    c->pair.owner = NULL;
    memcpy(c->pair.a, a, alen);
    memcpy(c->pair.b, b, blen);
    c->pair.value = value;
    c->pair.owner = owner;
}

unsigned int kc_cache_props_gen(KC_CACHE *c)
{
    return kc_props_gen(pctx_of(c));
}

int kc_cache_keep_gen(KC_CACHE *c, unsigned int *gen)
{
    KC_PROVCTX *pctx = pctx_of(c);

    if (pctx->props_follow == NULL || !pctx->props_follow(pctx))
        return 0;
    if (gen != NULL)
        *gen = kc_props_gen(pctx);
    return 1;
}

const void *kc_cache_memo_last(KC_CACHE *c, char name[KC_HINT_NAME],
                               unsigned int *gen)
{
    const KC_MEMO *m = memo_at(pctx_of(c)->shared, *memo_last_of(c));

    /* a digest's whole name with room for its NUL, no properties */
    if (m == NULL || m->owner != NULL || m->props[0] != '\0'
        || m->namelen >= KC_HINT_NAME)
        return NULL;
    memcpy(name, m->name, KC_HINT_NAME);
    *gen = m->gen;
    return m->value;
}

void *kc_cache_aux_get(KC_CACHE *c, const void *tag)
{
    unsigned int i;

    if (is_lite(c) && (c = as_lite(c)->body) == NULL)
        return NULL;
    for (i = 0; i < KC_AUX_SLOTS; i++)
        if (c->aux[i].tag == tag && c->aux[i].ctx != NULL)
            return c->aux[i].ctx;
    return NULL;
}

void kc_cache_aux_put(KC_CACHE *c, const void *tag, void *ctx,
                      void (*freectx)(void *))
{
    unsigned int i;
    void *old;

    /* a thread without a cache keeps none: ctx stays the caller's */
    if (is_lite(c) && (c = as_lite(c)->body) == NULL)
        return;
    /* the tag's own slot if it has one, else the next in turn */
    for (i = 0; i < KC_AUX_SLOTS; i++)
        if (c->aux[i].tag == tag && c->aux[i].ctx != NULL)
            break;
    if (i == KC_AUX_SLOTS)
        i = c->aux_next++ % KC_AUX_SLOTS;
    old = c->aux[i].ctx;

    /* in this order for a child forked meanwhile, see cache_drop_side() */
    c->aux[i].ctx = NULL;
    if (old != NULL)
        c->aux[i].freectx(old);
    c->aux[i].tag = tag;
    c->aux[i].freectx = freectx;
    __atomic_store_n(&c->aux[i].ctx, ctx, __ATOMIC_RELEASE);
}

/*
 * Learned values of records in two pieces (the split is part of the
 * identity): the last one found first, then open addressing; a full probe
 * window overwrites a slot round robin.
 */
#define KC_REC_PROBE 4

static int rec_slot_is(KC_CACHE *c, unsigned int i, const void *owner,
                       uint64_t hash, const unsigned char *a, size_t alen,
                       const unsigned char *b, size_t blen)
{
    return c->recs[i].owner == owner && c->recs[i].hash == hash
           && c->recs[i].alen == alen && c->recs[i].len == alen + blen
           && (alen == 0 || memcmp(c->recs[i].bytes, a, alen) == 0)
           && (blen == 0 || memcmp(c->recs[i].bytes + alen, b, blen) == 0);
}

int kc_cache_rec_get(KC_CACHE *c, const void *owner, uint64_t hash,
                     const unsigned char *a, size_t alen,
                     const unsigned char *b, size_t blen)
{
    unsigned int i, n;

    if (is_lite(c) && (c = as_lite(c)->body) == NULL)
        return -1;
    if (rec_slot_is(c, c->rec_last[blen != 0], owner, hash, a, alen, b,
                    blen))
        return c->recs[c->rec_last[blen != 0]].value;
    for (n = 0, i = hash % KC_REC_SLOTS; n < KC_REC_PROBE;
         n++, i = (i + 1) % KC_REC_SLOTS) {
        if (c->recs[i].owner == NULL)
            break;
        if (rec_slot_is(c, i, owner, hash, a, alen, b, blen)) {
            c->rec_last[blen != 0] = i;
            return c->recs[i].value;
        }
    }
    return -1;
}

const unsigned char *kc_cache_rec_last(KC_CACHE *c, const void *owner,
                                       int pair, size_t *alen, size_t *len,
                                       uint64_t *hash, int *value)
{
    unsigned int i;

    if (is_lite(c) && (c = as_lite(c)->body) == NULL)
        return NULL;
    i = c->rec_last[pair != 0];

    /* the slot may since hold a record of the other kind */
    if (c->recs[i].owner != owner
        || (c->recs[i].len > c->recs[i].alen) != (pair != 0))
        return NULL;
    *alen = c->recs[i].alen;
    *len = c->recs[i].len;
    *hash = c->recs[i].hash;
    *value = c->recs[i].value;
    return c->recs[i].bytes;
}

int kc_cache_rec_put(KC_CACHE *c, const void *owner, uint64_t hash,
                     const unsigned char *a, size_t alen,
                     const unsigned char *b, size_t blen, int value,
                     unsigned int gen)
{
    unsigned char *bytes, *old;
    unsigned int i, n;

    if (gen != kc_props_gen(pctx_of(c)))
        return 0;
    /* something to keep: the thread's cache is made for it */
    if (is_lite(c) && (c = lite_body(as_lite(c))) == NULL)
        return 1;
    if ((bytes = OPENSSL_malloc(alen + blen + 1)) == NULL)
        return 1;
    if (alen > 0)
        memcpy(bytes, a, alen);
    if (blen > 0)
        memcpy(bytes + alen, b, blen);
    for (n = 0, i = hash % KC_REC_SLOTS; n < KC_REC_PROBE;
         n++, i = (i + 1) % KC_REC_SLOTS)
        if (c->recs[i].owner == NULL)
            break;
    if (n == KC_REC_PROBE)
        i = (unsigned int)((hash + c->rec_next++ % KC_REC_PROBE)
                           % KC_REC_SLOTS);
    old = c->recs[i].bytes;
    /* in this order for a child forked meanwhile, see cache_drop_side() */
    c->recs[i].bytes = NULL;
    OPENSSL_clear_free(old, c->recs[i].len);
    c->recs[i].owner = owner;
    c->recs[i].hash = hash;
    c->recs[i].alen = alen;
    c->recs[i].len = alen + blen;
    __atomic_store_n(&c->recs[i].bytes, bytes, __ATOMIC_RELEASE);
    c->recs[i].value = value;
    c->rec_last[blen != 0] = i;
    return 1;
}

/*
 * When almost every lookup misses, admitting every missed key only builds
 * entries that die unused.  After a window of KC_WINDOW lookups with fewer
 * than KC_WINDOW_MIN_HITS hits, one admission in KC_ADMIT_ONE_IN goes ahead
 * (a new hot key still gets in soon); a window with enough hits ends it.
 */
#define KC_WINDOW 64
#define KC_WINDOW_MIN_HITS 8
#define KC_ADMIT_ONE_IN 16

/*
 * A pass-through KDF's call in progress on this thread (deriving): every
 * MAC context made in it is cold (cold_in(), kc_wrapper_take()), and a
 * copy keeps its original's coldness, so no key OpenSSL derives is looked
 * up, counted or admitted; nor is a cache made for anything it does
 * (cache_create(): its wrappers' frees, CMAC's memo).  A thread-local
 * count, not a mark on the thread's cache, which another thread's unload
 * of its instance may free.
 */
void kc_derive_enter(void)
{
    deriving++;
}

void kc_derive_leave(void)
{
    deriving--;
}

static int bypass_allows(KC_CACHE *c)
{
    /* filling free slots costs no eviction: only bypass a full cache */
    if (!c->bypass || c->used < c->size)
        return 1;
    return ++c->bypass_misses % KC_ADMIT_ONE_IN == 0;
}

/* every KC_COLD_ONE_IN-th new context still looks up, to see hits return */
#define KC_COLD_ONE_IN 32

static int cold_in(KC_CACHE *c, const KC_ALG *alg)
{
    /* (not counted: OpenSSL's own use, as the private default's was) */
    if (deriving != 0)
        return 1;
    if (c == NULL || !c->bypass || ++c->cold_skips % KC_COLD_ONE_IN == 0)
        return 0;
    KC_BUMP(c, alg->stat, passthrough);
    return 1;
}

static void window_note(KC_CACHE *c, int hit)
{
    c->win_hits += hit;
    if (++c->win_lookups < KC_WINDOW)
        return;
    c->bypass = c->win_hits < KC_WINDOW_MIN_HITS;
    c->win_lookups = c->win_hits = 0;
}

/*
 * fp's slot in the filter, or the one it replaces (seen 0 for it): the
 * least recently seen of its two buckets' slots.
 */
static KC_SEEN *seen_slot(KC_CACHE *c, uint64_t fp)
{
    size_t nb = c->nseen / KC_SEEN_WAYS;
    size_t b1 = (size_t)(fp >> 32) & (nb - 1), b2 = (size_t)fp & (nb - 1);
    KC_SEEN *s[2], *old = NULL;
    unsigned int i, k;

    if (b2 == b1)
        b2 = b1 ^ 1;
    s[0] = &c->seen[b1 * KC_SEEN_WAYS];
    s[1] = &c->seen[b2 * KC_SEEN_WAYS];
    /* a miss (most calls here) reads both buckets: match and empty first */
    for (k = 0; k < 2; k++)
        for (i = 0; i < KC_SEEN_WAYS; i++) {
            if (s[k][i].fp == fp)
                return &s[k][i];
            if (s[k][i].fp == 0)
                old = &s[k][i];
        }
    if (old == NULL) {
        /* both full (keys never seen twice fill the filter): the oldest */
        old = s[0];
        for (k = 0; k < 2; k++)
            for (i = 0; i < KC_SEEN_WAYS; i++)
                if ((int32_t)(s[k][i].stamp - old->stamp) < 0)
                    old = &s[k][i];
    }
    old->fp = fp;
    old->seen = 0;
    return old;
}

/* fp seen once more in slot s (of c's filter, or c NULL: a KC_LITE's) */
static int admit_in(KC_PROVCTX *pctx, KC_CACHE *c, KC_SEEN *s,
                    const KC_ALG *alg, uint64_t fp)
{
    if (s->seen == KC_SEEN_REFUSED)
        return 0;
    if (pctx->admit_after > 1 && ++s->seen < pctx->admit_after)
        return 0;
    if (c != NULL && !bypass_allows(c))
        return 0;
    /* a key OpenSSL keyed inside its own code stays refused (origin.c) */
    if (!kc_origin_admits(pctx, alg->stat >= KC_STAT_CFAM)) {
        s->fp = fp;
        s->seen = KC_SEEN_REFUSED;
        return 0;
    }
    s->fp = 0;
    s->seen = 0;
    return 1;
}

static int admit(KC_CACHE *c, const KC_ALG *alg, uint64_t fp)
{
    KC_SEEN *s = seen_slot(c, fp);

    s->stamp = ++c->seen_clock;
    return admit_in(c->pctx, c, s, alg, fp);
}

static uint64_t fingerprint(uint64_t h, const KC_ALG *alg, const void *param)
{
    uint64_t fp = h ^ ((uint64_t)(uintptr_t)alg * 0x9e3779b97f4a7c15ULL)
                  ^ ((uint64_t)(uintptr_t)param * 0xc2b2ae3d27d4eb4fULL);

    return fp != 0 ? fp : 1;
}

/*
 * Wrapper structs come from a per-thread pool, so a hit does not allocate.
 * The key a wrapper holds for its own context (layer/: a re-keyed cipher's,
 * a keyed first GMAC template's) is wiped before it comes back here.
 */
static KC_NOINLINE void *wrapper_take_slow(KC_PROVCTX *pctx, int kind,
                                           size_t size, const KC_ALG *alg,
                                           int *cold, KC_CACHE **cp)
{
    KC_CACHE *c = kc_cache_get(pctx);

    if (cp != NULL)
        *cp = c;
    /* a thread without a cache keeps no pool: it would have to be freed */
    if (c != NULL && is_lite(c)) {
        if (cold != NULL)
            *cold = cold_in(NULL, alg);
        return OPENSSL_malloc(size);
    }
    if (cold != NULL)
        *cold = cold_in(c, alg);
    /* the caller zeroes what must start zeroed (kc_wrapper_new_*()) */
    if (c == NULL || c->npool[kind] == 0)
        return OPENSSL_malloc(size);
    return c->pool[kind][--c->npool[kind]];
}

/* A pooled wrapper while the cache is bypassed (cold_in()). */
static KC_NOINLINE void *pool_take_cold(KC_CACHE *c, int kind,
                                        const KC_ALG *alg, int *cold)
{
    *cold = cold_in(c, alg);
    return c->pool[kind][--c->npool[kind]];
}

/*
 * The usual case, a thread's cache with a pooled wrapper and no bypass,
 * without a stack frame: every new context and copy comes here.
 */
void *kc_wrapper_take(KC_PROVCTX *pctx, int kind, size_t size,
                      const KC_ALG *alg, int *cold, KC_CACHE **cp)
{
    KC_CACHE *c;

    if (kc_lite.inst != pctx->inst || (c = kc_lite.body) == NULL
        || pctx->timed || c->npool[kind] == 0)
        return wrapper_take_slow(pctx, kind, size, alg, cold, cp);
    if (cp != NULL)
        *cp = c;
    if (cold != NULL) {
        if (c->bypass | deriving)
            return pool_take_cold(c, kind, alg, cold);
        *cold = 0;
    }
    return c->pool[kind][--c->npool[kind]];
}

/*
 * A copy's wrapper: a copy neither counts nor asks whether to look up, so
 * it passes fewer arguments and tests none of them (dup-keyed-gmac).
 */
void *kc_wrapper_take_copy(KC_PROVCTX *pctx, int kind, size_t size)
{
    KC_CACHE *c;

    if (kc_lite.inst != pctx->inst || (c = kc_lite.body) == NULL
        || pctx->timed || c->npool[kind] == 0)
        return wrapper_take_slow(pctx, kind, size, NULL, NULL, NULL);
    return c->pool[kind][--c->npool[kind]];
}

KC_CACHE *kc_cache_here(KC_PROVCTX *pctx)
{
    KC_CACHE *c = tls_get(pctx);

    if (c == NULL && kc_lite.inst == pctx->inst)
        return lite_handle();
    return c;
}

static ossl_inline void pool_put(KC_CACHE *c, int kind, void *p, size_t size)
{
    c->pool_size[kind] = size;
    c->pool[kind][c->npool[kind]] = p;
    /* counted once in place, for a child forked meanwhile */
    __atomic_store_n(&c->npool[kind], c->npool[kind] + 1, __ATOMIC_RELEASE);
}

static KC_NOINLINE void wrapper_free_slow(KC_CACHE *c, int kind, void *p,
                                          size_t size)
{
    if (c != NULL && is_lite(c)) {
        KC_LITE *l = as_lite(c);

        /* pooled by the thread's cache, made at the KC_LITE_FREES-th */
        c = l->body != NULL || ++l->frees >= KC_LITE_FREES ? lite_body(l)
                                                             : NULL;
    }
    if (c == NULL || c->npool[kind] == KC_POOL_MAX) {
        wipe_free(p, size);
        return;
    }
    pool_put(c, kind, p, size);
}

/* the usual case, into a thread's cache's pool, without a stack frame */
void kc_wrapper_free_in(KC_CACHE *c, int kind, void *p, size_t size)
{
    if (p == NULL)
        return;
    if (c == NULL || is_lite(c) || c->npool[kind] == KC_POOL_MAX) {
        wrapper_free_slow(c, kind, p, size);
        return;
    }
    pool_put(c, kind, p, size);
}

static KC_NOINLINE void wrapper_free_here(KC_PROVCTX *pctx, int kind,
                                          void *p, size_t size)
{
    kc_wrapper_free_in(kc_cache_here(pctx), kind, p, size);
}

/* the usual case without a stack frame: the cache look-up is out of line */
void kc_wrapper_free(KC_PROVCTX *pctx, int kind, void *p, size_t size)
{
    KC_CACHE *c;

    if (p != NULL && kc_lite.inst == pctx->inst && (c = kc_lite.body) != NULL
        && c->npool[kind] != KC_POOL_MAX) {
        pool_put(c, kind, p, size);
        return;
    }
    wrapper_free_here(pctx, kind, p, size);
}

_Static_assert(KC_STAT_SLOTS <= 32, "KC_CACHE.missed has a bit per slot");

int kc_cache_keeps(KC_CACHE *c)
{
    return !is_lite(c) || as_lite(c)->body != NULL;
}

int kc_cache_missed_before(KC_CACHE *c, const KC_ALG *alg)
{
    uint32_t bit = (uint32_t)1 << alg->stat;
    int before;

    /* a thread without a cache keeps nothing for its misses */
    if (is_lite(c))
        return 0;
    before = (c->missed & bit) != 0;
    c->missed |= bit;
    return before;
}

void kc_count_hit(KC_PROVCTX *pctx, const KC_ALG *alg)
{
    KC_CACHE *c = tls_get(pctx);

    /* a hit without a cache (a context re-keyed): make one to count it */
    if (c == NULL && kc_lite.inst == pctx->inst)
        c = lite_body(&kc_lite);
    if (c != NULL)
        KC_BUMP(c, alg->stat, hits);
}

void kc_count_passthrough(KC_PROVCTX *pctx, const KC_ALG *alg)
{
    KC_CACHE *c = tls_get(pctx);

    if (c != NULL)
        KC_BUMP(c, alg->stat, passthrough);
    else if (kc_lite.inst == pctx->inst)
        /* no cache to count in: the instance's (a miss's path, not a hit's) */
        __atomic_add_fetch(&pctx->shared->passthrough[alg->stat], 1,
                           __ATOMIC_RELAXED);
}

/*
 * Constant-time key compare: all words' differences are OR-ed, so the time
 * depends on the length only; the empty asm hides the accumulator from the
 * compiler, which could stop at the first difference.  (CRYPTO_memcmp is a
 * call and some seven instructions a byte.)
 */
static ossl_inline uint64_t word_diff(const unsigned char *a,
                                      const unsigned char *b)
{
    uint64_t x, y;

    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    return x ^ y;
}

static int keys_equal(const unsigned char *a, const unsigned char *b,
                      size_t n)
{
    uint64_t d = 0;

    /* straight-line for the usual AES and HMAC key sizes */
    if (n == 32) {
        d = word_diff(a, b) | word_diff(a + 8, b + 8)
            | word_diff(a + 16, b + 16) | word_diff(a + 24, b + 24);
        __asm__ ("" : "+r" (d));
        return d == 0;
    }
    if (n == 16) {
        d = word_diff(a, b) | word_diff(a + 8, b + 8);
        __asm__ ("" : "+r" (d));
        return d == 0;
    }
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        d |= word_diff(a, b);
        __asm__ ("" : "+r" (d));
    }
    for (; n > 0; a++, b++, n--) {
        d |= (uint64_t)(*a ^ *b);
        __asm__ ("" : "+r" (d));
    }
    return d == 0;
}

int kc_key_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
    return keys_equal(a, b, n);
}

static int entry_matches(const KC_ENTRY *e, uint64_t h, const KC_ALG *alg,
                         const void *param, const unsigned char *key,
                         size_t keylen)
{
    return e->hash == h && e->alg == alg && e->param == param
           && e->keylen == keylen && keys_equal(e->key, key, keylen);
}

/*
 * A record (kc_cache_find_rec()) matches by content; other algorithms'
 * entries have none, and for them (rec NULL, a constant) this folds away.
 */
static ossl_inline int rec_matches(const KC_CACHE *c, uint32_t slot,
                                   const unsigned char *rec, size_t reclen)
{
    return rec == NULL
           || (c->entries[slot].reclen == reclen
               && (reclen == 0
                   || memcmp(c->held[slot].rec, rec, reclen) == 0));
}

/*
 * fp's slot in a record's filter, or an empty one (seen 0), or NULL: a
 * record never drops a key it counts, or keys in rotation never get in.
 * Slots past nseen are empty: a new thread's or a child's first key looks
 * at none.
 */
static KC_SEEN *lite_seen_slot(KC_LITE *l, uint64_t fp)
{
    KC_SEEN *s, *empty = NULL;
    unsigned int i, n = l->nseen < KC_LITE_SEEN ? l->nseen : KC_LITE_SEEN;

    for (i = 0; i < n; i++) {
        s = &l->seen[i];
        if (s->fp == fp)
            return s;
        if (s->fp == 0 && empty == NULL)
            empty = s;
    }
    if (empty == NULL && n < KC_LITE_SEEN) {
        empty = &l->seen[n];
        l->nseen = n + 1;
    }
    if (empty != NULL) {
        empty->fp = fp;
        empty->seen = 0;
    }
    return empty;
}

/* A look-up on a thread without a cache: always a miss, counted. */
static KC_NOINLINE void *lite_find(KC_LITE *l, const KC_ALG *alg,
                                   const void *param,
                                   const unsigned char *rec,
                                   uint64_t rechash,
                                   const unsigned char *key, size_t keylen,
                                   KC_LOOKUP *lk)
{
    KC_CACHE *c;
    KC_SEEN *s;
    uint64_t fp;

    if (l->pctx->cache_size == 0 || keylen > KEYCACHE_MAX_KEY_LEN)
        return NULL;
    fork_arm();
    lk->hash = kc_hash(l->pctx->shared->key, key, keylen);
    if (rec != NULL)
        lk->hash ^= rechash * 0x9fb21c651e98df25ULL;
    fp = fingerprint(lk->hash, alg, param);
    if (*lk->counted == fp)
        return NULL;
    *lk->counted = fp;
    if ((s = lite_seen_slot(l, fp)) != NULL) {
        lk->admit = admit_in(l->pctx, NULL, s, alg, fp);
        return NULL;
    }
    /*
     * More keys than the record holds: the thread's cache takes them over
     * and counts this one (under the same hash key: lk->hash stays good).
     */
    if ((c = lite_body(l)) != NULL) {
        window_note(c, 0);
        lk->admit = admit(c, alg, fp);
    }
    return NULL;
}

static ossl_inline __attribute__((always_inline))
void *cache_find(KC_CACHE *c, const KC_ALG *alg, const void *param,
                 const unsigned char *rec, size_t reclen, uint64_t rechash,
                 const unsigned char *key, size_t keylen, KC_LOOKUP *lk)
{
    KC_ENTRY *e;
    KC_HELD *h;
    uint32_t slot;
    size_t i, m;

    lk->spare = NULL;
    lk->admit = 0;
    lk->pending = 0;
    if (is_lite(c)) {
        if (as_lite(c)->body == NULL)
            return lite_find(as_lite(c), alg, param, rec, rechash, key,
                             keylen, lk);
        c = as_lite(c)->body;
    }
    if (c->size == 0 || keylen > KEYCACHE_MAX_KEY_LEN)
        return NULL;
    /*
     * The most recently used entry first, without hashing.  (Whether a key
     * hits was never hidden: a hit is far faster than a miss.)
     */
    if ((slot = c->lru_head) != KC_NIL) {
        e = &c->entries[slot];
        if (e->alg == alg && e->param == param && e->keylen == keylen
            && rec_matches(c, slot, rec, reclen)
            && keys_equal(e->key, key, keylen))
            goto hit;
    }
    /*
     * A child of _Fork() or a raw clone: the kernel wiped the slots, the
     * fingerprints and the index the header still names (evicting one
     * would look for it in an empty index forever), and the default's
     * contexts are the child's copies.  Started again before hashing, so
     * that what this look-up finds and adds is under the new hash key.
     */
    if (__builtin_expect(*c->alive == 0, 0))
        cache_renew(c, 1);
    lk->hash = kc_hash(c->sipkey, key, keylen);
    if (rec != NULL)
        lk->hash ^= rechash * 0x9fb21c651e98df25ULL;
    m = c->nidx - 1;
    for (i = lk->hash & m; ; i = (i + 1) & m) {
        if ((slot = c->idx[i]) == 0) {
            uint64_t fp = fingerprint(lk->hash, alg, param);

            window_note(c, 0);
            if (*lk->counted != fp) {
                *lk->counted = fp;
                lk->admit = admit(c, alg, fp);
            }
            return NULL;
        }
        e = &c->entries[--slot];
        if (entry_matches(e, lk->hash, alg, param, key, keylen)
            && rec_matches(c, slot, rec, reclen))
            break;
    }
 hit:
    if (c->lru_head != slot) {
        lru_unlink(c, slot);
        lru_push_front(c, slot);
    }
    if (c->idle_ttl != 0)
        e->last_time = time(NULL);
    h = &c->held[slot];
    lk->lease.cache_id = c->id;
    lk->lease.idx = slot;
    lk->lease.gen = h->gen;
    if (h->tmpl == NULL) {
        /* its first context has not given it back yet: a miss (see park) */
        lk->pending = 1;
        window_note(c, 0);
        return NULL;
    }
    if (h->nspare > 0) {
        lk->spare = h->spare[--h->nspare];
        h->spare[h->nspare] = NULL;
        c->nspares--;
    }
    KC_BUMP(c, alg->stat, hits);
    window_note(c, 1);
    return h->tmpl;
}

void *kc_cache_find(KC_CACHE *c, const KC_ALG *alg, const void *param,
                    const unsigned char *key, size_t keylen, KC_LOOKUP *lk)
{
    return cache_find(c, alg, param, NULL, 0, 0, key, keylen, lk);
}

void *kc_cache_find_rec(KC_CACHE *c, const KC_ALG *alg,
                        const unsigned char *rec, size_t reclen,
                        uint64_t rechash, const unsigned char *key,
                        size_t keylen, KC_LOOKUP *lk)
{
    static const unsigned char none[1];

    return cache_find(c, alg, NULL, rec != NULL ? rec : none, reclen,
                      rechash, key, keylen, lk);
}

static int cache_add(KC_CACHE *c, const KC_ALG *alg, const void *param,
                     const unsigned char *rec, size_t reclen,
                     const unsigned char *key, size_t keylen, void *tmpl,
                     KC_LOOKUP *lk)
{
    unsigned char *copy = NULL;
    KC_ENTRY *e;
    KC_HELD *h;
    uint32_t i;

    if (c->size == 0 || keylen > KEYCACHE_MAX_KEY_LEN)
        return 0;
    if (reclen > 0 && (copy = OPENSSL_memdup(rec, reclen)) == NULL)
        return 0;
    KC_BUMP(c, alg->stat, misses);
    /* a free slot, else a slot never used, else the least recently used */
    if (c->free_head == KC_NIL && c->hw < c->size) {
        i = c->hw;
        e = &c->entries[i];
        h = &c->held[i];
        memset(e, 0, offsetof(KC_ENTRY, key));
        memset(h, 0, sizeof(*h));
        __atomic_store_n(&c->hw, i + 1, __ATOMIC_RELEASE);
    } else {
        if (c->free_head == KC_NIL)
            entry_kill(c, c->lru_tail);
        i = c->free_head;
        e = &c->entries[i];
        h = &c->held[i];
        c->free_head = e->next;
    }
    e->param = param;
    e->reclen = h->reclen = reclen;
    /* after its length, for a child forked meanwhile to cleanse */
    __atomic_store_n(&h->rec, copy, __ATOMIC_RELEASE);
    h->nspare = 0;
    e->hash = lk->hash;
    e->keylen = keylen;
    memcpy(e->key, key, keylen);
    e->alg = alg;
    /* published in this order for a child forked meanwhile to free */
    __atomic_store_n(&h->alg, alg, __ATOMIC_RELEASE);
    __atomic_store_n(&h->tmpl, tmpl, __ATOMIC_RELEASE);
    idx_insert(c, i);
    lru_push_front(c, i);
    h->gen = ++c->gen;
    if (c->idle_ttl != 0)
        e->last_time = time(NULL);
    __atomic_store_n(&c->used, c->used + 1, __ATOMIC_RELAXED);
    if (!c->admitted) {
        c->admitted = 1;
        /* a thread counted once, as threads_cached counts it */
        if (c != kc_lite.body || !kc_lite.admitted)
            __atomic_add_fetch(&c->pctx->threads_admitted, 1,
                               __ATOMIC_RELAXED);
        if (c == kc_lite.body)
            kc_lite.admitted = 1;
    }
    lk->lease.cache_id = c->id;
    lk->lease.gen = h->gen;
    lk->lease.idx = i;
    return 1;
}

int kc_cache_add(KC_CACHE *c, const KC_ALG *alg, const void *param,
                 const unsigned char *key, size_t keylen, void *tmpl,
                 KC_LOOKUP *lk)
{
    /* a thread's first admission makes its cache */
    if (is_lite(c) && (c = lite_body(as_lite(c))) == NULL)
        return 0;
    return cache_add(c, alg, param, NULL, 0, key, keylen, tmpl, lk);
}

int kc_cache_add_rec(KC_CACHE *c, const KC_ALG *alg, const unsigned char *rec,
                     size_t reclen, const unsigned char *key, size_t keylen,
                     void *tmpl, KC_LOOKUP *lk)
{
    if (tmpl == NULL || (is_lite(c) && (c = lite_body(as_lite(c))) == NULL))
        return 0;
    return cache_add(c, alg, NULL, rec, reclen, key, keylen, tmpl, lk);
}

/*
 * The live entry a lease names in c (the calling thread's cache, or its
 * record), or NULL.  Cache id, slot and generation: two threads' caches
 * fill their slots in the same order, so slot and generation alone could
 * name another thread's entry for another key.
 */
static ossl_inline KC_HELD *lease_held(KC_CACHE **cp, const KC_LEASE *lease)
{
    KC_CACHE *c = *cp;
    KC_HELD *h;

    if (c != NULL && is_lite(c))
        *cp = c = as_lite(c)->body;
    if (c == NULL || lease->cache_id != c->id || lease->idx >= c->hw)
        return NULL;
    h = &c->held[lease->idx];
    return h->gen == lease->gen && h->alg != NULL ? h : NULL;
}

int kc_cache_lease_is(KC_CACHE *c, const KC_LEASE *lease,
                      const unsigned char *key, size_t keylen)
{
    const KC_ENTRY *e;

    if (lease_held(&c, lease) == NULL)
        return 0;
    e = &c->entries[lease->idx];
    return e->keylen == keylen && keys_equal(e->key, key, keylen);
}

int kc_cache_park_in(KC_CACHE *c, const KC_LEASE *lease, void *ctx,
                     int (*ready)(const void *arg, void *ctx), const void *arg)
{
    KC_HELD *h = lease_held(&c, lease);

    if (h == NULL)
        return 0;
    /* an entry added without a template (kc_cache_add()): this is it */
    if (h->tmpl == NULL) {
        if (!ready(arg, ctx))
            return 0;
        __atomic_store_n(&h->tmpl, ctx, __ATOMIC_RELEASE);
        return 1;
    }
    /* per entry, and no more spares in all than entries */
    if (h->nspare >= h->alg->spare_max || c->nspares >= c->size
        || !ready(arg, ctx))
        return 0;
    h->spare[h->nspare] = ctx;
    h->spare_epoch = c->fork_epoch;
    /* counted once in place, for a child forked meanwhile */
    __atomic_store_n(&h->nspare, h->nspare + 1, __ATOMIC_RELEASE);
    c->nspares++;
    return 1;
}

void kc_cache_counters_by_alg(KC_PROVCTX *pctx, KC_COUNTERS *by,
                              uint64_t *entries)
{
    KC_CACHE *c;
    unsigned int i;

    *entries = 0;
    registry_take();
    memcpy(by, pctx->retired, sizeof(pctx->retired));
    for (i = 0; pctx->shared != NULL && i < KC_STAT_SLOTS; i++)
        by[i].passthrough += __atomic_load_n(&pctx->shared->passthrough[i],
                                             __ATOMIC_RELAXED);
    for (c = pctx->caches; c != NULL; c = c->next) {
        add_counters(by, c->n);
        *entries += KC_READ(c->used);
    }
    for (c = pctx->dying; c != NULL; c = c->next) {
        add_counters(by, c->n);
        *entries += c->used;
    }
    pthread_mutex_unlock(&registry_lock);
}

void kc_cache_lost(KC_PROVCTX *pctx, uint64_t *threads, uint64_t *admitted,
                   uint64_t *wiped)
{
    registry_take();
    *threads = __atomic_load_n(&pctx->threads_cached, __ATOMIC_RELAXED);
    *admitted = __atomic_load_n(&pctx->threads_admitted, __ATOMIC_RELAXED);
    *wiped = pctx->fork_wiped;
    pthread_mutex_unlock(&registry_lock);
}

void kc_cache_counters(KC_PROVCTX *pctx, KC_COUNTERS *sum, uint64_t *entries)
{
    KC_COUNTERS by[KC_STAT_SLOTS];
    unsigned int i;

    kc_cache_counters_by_alg(pctx, by, entries);
    memset(sum, 0, sizeof(*sum));
    for (i = 0; i < KC_STAT_SLOTS; i++) {
        sum->hits += by[i].hits;
        sum->misses += by[i].misses;
        sum->evictions += by[i].evictions;
        sum->passthrough += by[i].passthrough;
    }
}

int kc_cache_start(KC_PROVCTX *pctx)
{
    if ((pctx->shared = OPENSSL_zalloc(sizeof(*pctx->shared))) == NULL)
        return 0;
    hash_key_new(pctx->shared->key);
    if (!CRYPTO_THREAD_init_local(&pctx->tls, NULL)) {
        shared_free(pctx->shared);
        pctx->shared = NULL;
        return 0;
    }
    pctx->tls_ok = 1;
    registry_take();
    pctx->inst = next_inst++;
    pctx->next_live = live_instances;
    live_instances = pctx;
    pthread_mutex_unlock(&registry_lock);
    return 1;
}

void kc_cache_stop(KC_PROVCTX *pctx)
{
    KC_PROVCTX **pp;
    unsigned int i;

    if (!pctx->tls_ok)
        return;
    registry_take();
    for (pp = &live_instances; *pp != NULL; pp = &(*pp)->next_live)
        if (*pp == pctx) {
            *pp = pctx->next_live;
            break;
        }
    while (pctx->caches != NULL)
        cache_retire(pctx, pctx->caches, 0);
    caches_reap(pctx, 0);
    /* the report at unload (core/report.c) comes after this */
    for (i = 0; i < KC_STAT_SLOTS; i++)
        pctx->retired[i].passthrough += pctx->shared->passthrough[i];
    /*
     * The calling thread may still point at a cache freed above; others'
     * records are never read again (instance numbers are not reused).
     */
    CRYPTO_THREAD_set_local(&pctx->tls, NULL);
    if (kc_lite.inst == pctx->inst)
        OPENSSL_cleanse(&kc_lite, sizeof(kc_lite));
    pthread_mutex_unlock(&registry_lock);
    CRYPTO_THREAD_cleanup_local(&pctx->tls);
    pctx->tls_ok = 0;
    shared_free(pctx->shared);
    pctx->shared = NULL;
}
