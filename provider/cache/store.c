/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-thread cache: key bytes (plus the algorithm and whatever else
 * shapes the keyed state) -> a keyed inner template, and a few used inner
 * contexts given back for reuse ("spares").
 *
 * Each thread owns its cache outright: the hot path reads a thread-local
 * pointer and touches nothing shared, so it takes no lock and does no atomic
 * read-modify-write.  The provider keeps a list of all caches under a lock
 * that is taken only when a thread's cache is created or destroyed and when
 * counters are read, so that teardown can free every thread's cache.
 *
 * Keys are found through SipHash-1-3 under a secret key (the instance's,
 * taken over from the thread's record, see KC_LITE; drawn anew in a forked
 * child) and confirmed with a constant-time compare of the full key.
 * Entries are evicted least recently used first; an entry's key bytes are
 * cleansed when it dies and its contexts are freed by the inner provider,
 * which cleanses its own copies.
 *
 * A key is cached only once it has been seen in several keyed inits
 * (admit_after): a key that lives in one context, or in the two ends of one
 * TLS connection, never becomes an entry.  Until then the cache keeps only
 * a 64-bit keyed fingerprint of it, never the key.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cache/cache.h"

typedef struct {
    const KC_ALG *alg;        /* NULL: free slot */
    const void *param;
    unsigned char *rec;       /* a record compared by content, or NULL */
    size_t reclen;
    void *tmpl;               /* keyed and never used: duplicated on a hit */
    void *spare[KC_SPARE_MAX];/* used contexts given back (alg->spare_max) */
    unsigned int nspare;
    uint64_t hash;
    uint32_t prev, next;      /* LRU list (live) or free list (next) */
    uint64_t gen;             /* changes whenever the slot is (re)filled */
    time_t last_time;         /* for idle_ttl only */
    size_t keylen;
    unsigned char key[KEYCACHE_MAX_KEY_LEN];
} KC_ENTRY;

/*
 * Admission filter: keyed fingerprints of keys that missed, with how often
 * they were seen.  Buckets of KC_SEEN_WAYS slots; a fingerprint may live in
 * either of two buckets, and a new one replaces the least recently seen of
 * their slots.  At most half full with up to cache_size keys, so keys used
 * in rotation never push each other out, whatever the hash key: a
 * direct-mapped table starved two colliding keys forever.
 */
typedef struct {
    uint64_t fp;              /* 0: empty */
    uint32_t seen;            /* or KC_SEEN_REFUSED */
    uint32_t stamp;           /* when last seen (KC_CACHE.seen_clock) */
} KC_SEEN;
#define KC_SEEN_REFUSED UINT32_MAX
#define KC_SEEN_WAYS 4

/*
 * Remembers resolved digest names, so a repeated name costs a strcmp.  One
 * memo per instance, shared by its threads: what one thread resolved no
 * other resolves again (a thread per task, a forked child).  A name is
 * written into a block of its own, which a compare-and-swap (on a miss
 * only) publishes in the first empty slot; a published block is never
 * written again while the instance lives, so readers take no lock and see
 * whole names.  Values are the instance's own (KC_DIGEST tables), names
 * and properties no secrets.
 */
#define KC_MEMO_SLOTS 16
#define KC_MEMO_NAME 64
typedef struct {
    const void *value;
    size_t namelen;
    char name[KC_MEMO_NAME];
    char props[KC_MEMO_NAME];
} KC_MEMO;

/* small (one malloc below glibc's large-request path, which consolidates) */
struct kc_shared_st {
    KC_MEMO *memo[KC_MEMO_SLOTS]; /* published in order, never changed */
    /*
     * The hash key of the threads that hold no cache yet (KC_LITE): a
     * thread's cache takes it over with their fingerprints.  Written at
     * start and in a forked child only, when no other thread runs here.
     */
    uint64_t key[2];
    /* pass-throughs counted by threads without a cache */
    uint64_t passthrough[KC_STAT_SLOTS];
};

struct kc_cache_st {
    int lite;                 /* 0: see KC_LITE */
    KC_PROVCTX *pctx;
    KC_CACHE *next, *prev;    /* registry list, under registry_lock */
    uint64_t id;              /* unique for the process's lifetime */
    uint64_t sipkey[2];       /* secret (see kc_hash()) */
    uint32_t lru_head, lru_tail; /* most / least recently used */
    uint32_t free_head;
    /*
     * Slots [0, hw) have held an entry; [hw, size) never did, are never
     * read, and so are neither initialised, walked nor wiped: a thread
     * that admits nothing pays for none of them, nor does a forked child.
     * Raised (release) before a new slot is written, so that a child
     * forked meanwhile wipes it.
     */
    uint32_t hw;
    int admitted;             /* has admitted a key (kc_cache_lost()) */
    uint32_t missed;          /* bit KC_ALG.stat: missed on this thread */
    uint64_t gen;
    time_t last_sweep;
    size_t size, used;
    size_t nspares;           /* spare contexts in all entries */
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
        size_t alen, blen;
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
    KC_ENTRY entries[];
};

/*
 * A thread's record before it holds anything: a thread that keys a few
 * times and never admits a key (a thread per task) counts its keys here,
 * in static thread-local storage, and allocates nothing, registers no
 * thread-stop work and leaves nothing to free.  Its cache (body) is made
 * when it first has something to keep: an admission, a 9th key to count,
 * a record (kc_cache_rec_put(), kc_cache_pair_hint_put()), a hit to count,
 * an 8th wrapper struct to pool; it takes over the hash key and the
 * fingerprints.  A side template is not kept (kc_cache_aux_put()).  One
 * instance owns a thread's record at a time (inst); a thread's caches of
 * other instances are made at once, as before.  Handed to callers as a
 * KC_CACHE (lite: 1 where KC_CACHE has 0; see is_lite()).
 */
#define KC_LITE_SEEN 8
/*
 * Wrapper structs a thread frees before it keeps them in a pool (which
 * needs its cache): a task's few contexts allocate theirs, a thread that
 * makes contexts all along (copies of one keyed context, keys used once
 * each) soon allocates none.
 */
#define KC_LITE_FREES 8
typedef struct {
    int lite;                 /* 1 */
    uint32_t seen_clock;
    uint64_t inst;            /* the owner's KC_PROVCTX.inst, 0: none */
    KC_PROVCTX *pctx;
    KC_CACHE *body;           /* the thread's cache of inst, or NULL */
    time_t last_tick;         /* KEYCACHE_DEBUG's periodic report */
    unsigned int memo_last;
    unsigned int frees;       /* wrapper structs freed, up to KC_LITE_FREES */
    KC_SEEN seen[KC_LITE_SEEN];   /* fingerprints under shared->key */
} KC_LITE;

_Static_assert(sizeof(KC_LITE) <= 256, "a thread's record stays small");

static __thread KC_LITE kc_lite __attribute__((tls_model("initial-exec")));

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
 * One lock for every instance's registry of caches and for the list of live
 * instances.  It is static and never freed because a thread-stop handler
 * may run while (or after) its instance is torn down: OpenSSL deregisters
 * the handlers only after teardown.  The handler takes this lock and only
 * touches an instance that is still live.  Never taken on the hot path.
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
    return CRYPTO_THREAD_get_local(&pctx->tls);
}

/*
 * fork(): a thread that held registry_lock (say, one reading counters) does
 * not exist in the child, so the child would wait for it forever at its
 * first cache creation or at exit.  Hold the lock across fork() so that it
 * is in a known state; the child, whose one thread is the one that took
 * it, drops what it inherited under it and releases it.  (Unlocking, not
 * re-initialising a held mutex: ThreadSanitizer otherwise still sees it
 * held and reports the child's next lock of it as a double lock.)
 */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void registry_prefork(void)
{
    pthread_mutex_lock(&registry_lock);
}

static void registry_postfork_parent(void)
{
    pthread_mutex_unlock(&registry_lock);
}

static void caches_forked(void);

static void registry_postfork_child(void)
{
    caches_forked();
    pthread_mutex_unlock(&registry_lock);
}

static void atfork_register(void)
{
    pthread_atfork(registry_prefork, registry_postfork_parent,
                   registry_postfork_child);
}

static int instance_live(const KC_PROVCTX *pctx)
{
    const KC_PROVCTX *p;

    for (p = live_instances; p != NULL; p = p->next_live)
        if (p == pctx)
            return 1;
    return 0;
}

/*
 * Counters are written only by the owning thread but read by whoever asks
 * the provider for them: relaxed atomic loads and stores make that a plain
 * move on the hot path and keep it race-free.
 */
#define KC_BUMP(c, slot, field) \
    __atomic_store_n(&(c)->n[slot].field, (c)->n[slot].field + 1, \
                     __ATOMIC_RELAXED)
#define KC_READ(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/*
 * SipHash-1-3 (Aumasson and Bernstein) under the cache's secret key: the
 * index and the admission filter need a keyed PRF, or keys chosen to collide
 * (say, differing only in their last bytes) would pile into one probe run.
 * Words are read in host order, which is fine for a table index.
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
 * Wipe and free a wrapper struct (which holds no key: this is for what
 * else it held, a keyed hash say): explicit_bzero() is a store loop the
 * compiler keeps, as OPENSSL_cleanse() is, but of whole vectors, where
 * OPENSSL_cleanse() stores byte by byte (a wrapper is some 300 bytes, and
 * a thread without a cache frees one for every context).
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

static void lru_unlink(KC_CACHE *c, uint32_t i)
{
    KC_ENTRY *e = &c->entries[i];

    if (e->prev != KC_NIL)
        c->entries[e->prev].next = e->next;
    else
        c->lru_head = e->next;
    if (e->next != KC_NIL)
        c->entries[e->next].prev = e->prev;
    else
        c->lru_tail = e->prev;
}

static void lru_push_front(KC_CACHE *c, uint32_t i)
{
    KC_ENTRY *e = &c->entries[i];

    e->prev = KC_NIL;
    e->next = c->lru_head;
    if (c->lru_head != KC_NIL)
        c->entries[c->lru_head].prev = i;
    else
        c->lru_tail = i;
    c->lru_head = i;
}

/*
 * Open-addressing index over the entries' hashes (linear probing, deletion
 * by backward shift), so a lookup costs a probe or two, not a scan.
 */
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

static void entry_kill(KC_CACHE *c, KC_ENTRY *e)
{
    uint32_t i = (uint32_t)(e - c->entries);
    unsigned char *rec;
    void *tmpl;

    if (e->alg == NULL)
        return;
    idx_remove(c, i);
    lru_unlink(c, i);
    e->next = c->free_head;
    c->free_head = i;
    /*
     * Each context leaves the entry before it is freed, so that a child
     * forked while this thread is in here frees none twice (see
     * cache_drop_entries()).
     */
    while (e->nspare > 0) {
        void *spare = e->spare[--e->nspare];

        e->spare[e->nspare] = NULL;
        c->nspares--;
        e->alg->freectx(spare);
    }
    tmpl = e->tmpl;
    e->tmpl = NULL;
    if (tmpl != NULL)
        e->alg->freectx(tmpl);
    OPENSSL_cleanse(e->key, e->keylen);
    rec = e->rec;
    e->rec = NULL;
    OPENSSL_clear_free(rec, e->reclen);
    e->reclen = 0;
    e->alg = NULL;
    e->param = NULL;
    e->keylen = 0;
    e->hash = 0;
    e->gen = ++c->gen;
    __atomic_store_n(&c->used, c->used - 1, __ATOMIC_RELAXED);
}

static size_t cache_bytes(size_t size, size_t nidx, size_t nseen)
{
    return sizeof(KC_CACHE) + size * sizeof(KC_ENTRY)
           + nseen * sizeof(KC_SEEN) + nidx * sizeof(uint32_t);
}

/*
 * The cache's own memory, once its entries are killed (entry_kill() and
 * cache_drop_entries() wipe every key): what is left that derives from
 * keys is the hash key and the admission fingerprints.  Wiped, then freed.
 */
static void cache_release(KC_CACHE *c)
{
    OPENSSL_cleanse(c->sipkey, sizeof(c->sipkey));
    OPENSSL_cleanse(c->seen, c->nseen * sizeof(*c->seen));
    OPENSSL_free(c);
}

static void cache_free(KC_CACHE *c)
{
    size_t i;
    unsigned int k;

    for (i = 0; i < c->hw; i++)
        entry_kill(c, &c->entries[i]);
    for (k = 0; k < KC_AUX_SLOTS; k++)
        if (c->aux[k].ctx != NULL)
            c->aux[k].freectx(c->aux[k].ctx);
    for (k = 0; k < KC_REC_SLOTS; k++)
        OPENSSL_clear_free(c->recs[k].bytes, c->recs[k].len);
    for (k = 0; k < KC_POOL_KINDS; k++)
        while (c->npool[k] > 0)
            wipe_free(c->pool[k][--c->npool[k]], c->pool_size[k]);
    cache_release(c);
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

/* Unlink c from the registry (lock held) and keep its counters. */
static void cache_retire(KC_PROVCTX *pctx, KC_CACHE *c)
{
    size_t i;

    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        pctx->caches = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    /* entries still cached die now: count them as evictions */
    for (i = 0; i < c->hw; i++)
        if (c->entries[i].alg != NULL)
            c->n[c->entries[i].alg->stat].evictions++;
    add_counters(pctx->retired, c->n);
}

/*
 * Thread-stop handler registered through core_thread_start.  Runs on the
 * exiting thread; frees its cache under the registry lock, so a teardown
 * running at the same time either already freed it (and the instance is no
 * longer live) or waits for us.
 */
static void kc_thread_stop(void *arg)
{
    KC_PROVCTX *pctx = arg;
    KC_CACHE *c;

    pthread_mutex_lock(&registry_lock);
    if (!instance_live(pctx)) {
        c = NULL;
    } else if (kc_lite.inst == pctx->inst) {
        c = kc_lite.body;
        kc_lite.body = NULL;
        /* the record goes on for a thread that goes on, without keys */
        explicit_bzero(kc_lite.seen, sizeof(kc_lite.seen));
    } else if ((c = CRYPTO_THREAD_get_local(&pctx->tls)) != NULL) {
        CRYPTO_THREAD_set_local(&pctx->tls, NULL);
    }
    if (c != NULL) {
        cache_retire(pctx, c);
        cache_free(c);
    }
    pthread_mutex_unlock(&registry_lock);
}

/*
 * Straight from the kernel, not RAND_bytes_ex(): a DRBG in the private
 * library context would leave per-thread state there, and OpenSSL 3.0
 * crashes when a library context is freed while threads that used its
 * RAND exit (seen with the default provider alone).  A hash key is not
 * the application's randomness: nothing it produces leaves keycache.
 * (A system call and no lock, so a forked child can call it too.)
 */
static void sipkey_new(KC_CACHE *c)
{
    if (getrandom(c->sipkey, sizeof(c->sipkey), GRND_NONBLOCK)
        != (ssize_t)sizeof(c->sipkey)) {
        c->sipkey[0] = (uint64_t)(uintptr_t)c ^ (uint64_t)time(NULL);
        c->sipkey[1] = (uint64_t)(uintptr_t)&c ^ (uint64_t)clock();
    }
}

static void shared_key_new(struct kc_shared_st *sh)
{
    if (getrandom(sh->key, sizeof(sh->key), GRND_NONBLOCK)
        != (ssize_t)sizeof(sh->key)) {
        sh->key[0] = (uint64_t)(uintptr_t)sh ^ (uint64_t)time(NULL);
        sh->key[1] = (uint64_t)(uintptr_t)&sh ^ (uint64_t)clock();
    }
}

static struct kc_shared_st *shared_new(void)
{
    struct kc_shared_st *sh = OPENSSL_zalloc(sizeof(*sh));

    if (sh != NULL)
        shared_key_new(sh);
    return sh;
}

static void shared_free(struct kc_shared_st *sh)
{
    unsigned int k;

    for (k = 0; k < KC_MEMO_SLOTS; k++)
        OPENSSL_free(sh->memo[k]);
    OPENSSL_cleanse(sh->key, sizeof(sh->key));
    OPENSSL_free(sh);
}

static KC_CACHE *cache_new(KC_PROVCTX *pctx)
{
    KC_CACHE *c;
    size_t nidx = 4, nseen = 64;

    while (nidx < 2 * pctx->cache_size)
        nidx *= 2;
    while (nseen < 2 * pctx->cache_size)
        nseen *= 2;
    /* the slots are made as they are first used (hw) */
    c = OPENSSL_malloc(cache_bytes(pctx->cache_size, nidx, nseen));
    if (c == NULL)
        return NULL;
    memset(c, 0, sizeof(*c));
    c->pctx = pctx;
    c->size = pctx->cache_size;
    c->nidx = nidx;
    c->nseen = nseen;
    /* KC_SEEN (8-byte aligned) before the uint32_t index */
    c->seen = (KC_SEEN *)(c->entries + c->size);
    c->idx = (uint32_t *)(c->seen + nseen);
    memset(c->seen, 0, nseen * sizeof(*c->seen));
    memset(c->idx, 0, nidx * sizeof(*c->idx));
    sipkey_new(c);
    c->lru_head = c->lru_tail = c->free_head = KC_NIL;
    c->last_sweep = time(NULL);
    return c;
}

/*
 * fork(), the child: it starts with nothing the parent cached.  A child
 * often drops privileges to handle untrusted input, and what it inherited
 * of keys the parent has long freed and wiped would be there for it to
 * leak; the other threads' caches cannot even be dropped later, since
 * their threads do not exist in the child and no thread stop will come.
 * So every thread's entries and spares are cleansed and freed here, in the
 * pthread_atfork child handler, before fork() returns; the forking thread
 * keeps its cache, emptied and under a new hash key, with what holds no
 * secret (side templates, records, pooled wrapper structs: the child uses
 * them as the parent would), and the others' are unlinked and freed whole,
 * so that teardown in the child never meets them.
 *
 * Why this cannot hang: only the forking thread runs, and this takes no
 * lock.  registry_lock is held across fork() by this very thread, so the
 * registry is whole, and released once this is done.  It calls the default provider's
 * freectx of MAC and cipher contexts, OPENSSL_cleanse, OPENSSL_clear_free
 * and getrandom(): those take no OpenSSL lock (the freectx functions
 * cleanse and free memory and drop references to fetched digests and
 * ciphers with atomic decrements, which do not reach zero here: keycache's
 * private library context holds its own), so an OpenSSL lock that another
 * thread held at fork time is never waited for.  free() is usable: glibc
 * resets malloc's locks in the child before the child handlers run (and
 * the sanitizers' fork handling does the same for theirs); an allocator
 * installed with CRYPTO_set_mem_functions must be as usable after fork(),
 * or the child could not call OpenSSL at all.
 *
 * Another thread may have been anywhere in its cache when fork() came,
 * lock-free on its hot path: cache_drop_entries() therefore walks slots,
 * not the LRU list or the index, bounds every count, and skips NULL; the
 * writers unlink an object before freeing it and publish one (release
 * store) only once it is in place, so nothing is freed twice.  What that
 * thread was holding between the two, it alone knew of: left alone, as the
 * default provider's contexts on such a thread are.
 */
static size_t cache_drop_entries(KC_CACHE *c)
{
    size_t i, hw = __atomic_load_n(&c->hw, __ATOMIC_ACQUIRE), dropped = 0;
    unsigned int k, n;

    for (i = 0; i < hw && i < c->size; i++) {
        KC_ENTRY *e = &c->entries[i];
        const KC_ALG *alg = e->alg;

        if (alg != NULL) {
            dropped++;
            n = e->nspare < KC_SPARE_MAX ? e->nspare : KC_SPARE_MAX;
            for (k = 0; k < n; k++)
                if (e->spare[k] != NULL)
                    alg->freectx(e->spare[k]);
            if (e->tmpl != NULL)
                alg->freectx(e->tmpl);
        }
        /*
         * every slot's, whatever it said its length was (vector stores
         * the compiler keeps, see wipe_free())
         */
        explicit_bzero(e->key, sizeof(e->key));
        if (e->rec != NULL)
            OPENSSL_clear_free(e->rec, e->reclen);
        memset(e->spare, 0, sizeof(e->spare));
        e->alg = NULL;
        e->param = NULL;
        e->rec = NULL;
        e->reclen = 0;
        e->tmpl = NULL;
        e->nspare = 0;
        e->keylen = 0;
        e->hash = 0;
    }
    c->nspares = 0;
    return dropped;
}

/*
 * What else a cache holds: side templates with no key (kc_cache_aux_put()),
 * records (no secrets) and pooled wrapper structs (keys wiped before they
 * are pooled).  No secrets, but another thread's cache is freed whole.
 */
static void cache_drop_side(KC_CACHE *c)
{
    unsigned int k, n;

    for (k = 0; k < KC_AUX_SLOTS; k++)
        if (c->aux[k].ctx != NULL && c->aux[k].freectx != NULL)
            c->aux[k].freectx(c->aux[k].ctx);
    memset(c->aux, 0, sizeof(c->aux));
    c->aux_next = 0;
    /* records are no secrets, and their length may be a newer one's */
    for (k = 0; k < KC_REC_SLOTS; k++)
        OPENSSL_free(c->recs[k].bytes);
    memset(c->recs, 0, sizeof(c->recs));
    memset(c->rec_last, 0, sizeof(c->rec_last));
    c->rec_next = 0;
    for (k = 0; k < KC_POOL_KINDS; k++) {
        n = c->npool[k] < KC_POOL_MAX ? c->npool[k] : KC_POOL_MAX;
        while (n > 0)
            wipe_free(c->pool[k][--n], c->pool_size[k]);
        c->npool[k] = 0;
    }
    memset(c->pool, 0, sizeof(c->pool));
}

/*
 * The forking thread's cache, dropped and made as new: a new hash key (the
 * parent's keeps hashing the parent's keys), no admission fingerprints, no
 * bypass (the instance's memo of names stays: it holds no secrets).  Its
 * counters stay (the child's parameters go on from the parent's, and
 * KEYCACHE_DEBUG reports from the fork on); each slot gets a generation
 * never used before, so no context made in the parent is given back to a
 * slot.
 */
static size_t cache_renew(KC_CACHE *c)
{
    size_t i, dropped;

    for (i = 0; i < c->hw; i++)
        if (c->entries[i].alg != NULL)
            c->n[c->entries[i].alg->stat].evictions++;
    dropped = cache_drop_entries(c);
    sipkey_new(c);
    memset(c->idx, 0, c->nidx * sizeof(*c->idx));
    memset(c->seen, 0, c->nseen * sizeof(*c->seen));
    /* slots are made anew as they are used (gen goes on: no old lease fits) */
    c->lru_head = c->lru_tail = c->free_head = KC_NIL;
    c->hw = 0;
    __atomic_store_n(&c->used, 0, __ATOMIC_RELAXED);
    c->win_lookups = c->win_hits = c->bypass = 0;
    c->bypass_misses = c->cold_skips = 0;
    c->missed = 0;
    c->last_sweep = time(NULL);
    return dropped;
}

static void caches_forked(void)
{
    KC_PROVCTX *pctx;
    KC_CACHE *c, *next, *mine;

    for (pctx = live_instances; pctx != NULL; pctx = pctx->next_live) {
        mine = tls_get(pctx);
        /*
         * (The memo holds no secrets and stays: a name another thread was
         * writing at fork time was not published, and is only not freed.)
         *
         * A new key for the records of threads without a cache: what the
         * others' records (not to be read again) hold is of the old one,
         * and this thread's counts go.
         */
        shared_key_new(pctx->shared);
        if (kc_lite.inst == pctx->inst) {
            memset(kc_lite.seen, 0, sizeof(kc_lite.seen));
            kc_lite.seen_clock = 0;
        }
        /* the child's own report counts from here (core/report.c) */
        pctx->threads_cached = pctx->threads_admitted = pctx->fork_wiped = 0;
        for (c = pctx->caches; c != NULL; c = next) {
            next = c->next;
            c->admitted = 0;
            if (c == mine) {
                pctx->fork_wiped += cache_renew(c);
                continue;
            }
            cache_retire(pctx, c);
            pctx->fork_wiped += cache_drop_entries(c);
            cache_drop_side(c);
            cache_release(c);
        }
    }
}

/*
 * A cache for the calling thread, registered with the instance and with
 * OpenSSL's thread stop: the body of the thread's record l, which it
 * takes over (hash key, fingerprints), or (l NULL) found through the
 * instance's thread-local key.
 */
static KC_CACHE *cache_create(KC_PROVCTX *pctx, KC_LITE *l)
{
    KC_CACHE *c = cache_new(pctx);
    unsigned int k;

    if (c == NULL)
        return NULL;
    if (l != NULL) {
        memcpy(c->sipkey, pctx->shared->key, sizeof(c->sipkey));
        for (k = 0; k < KC_LITE_SEEN; k++) {
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
        cache_free(c);
        return NULL;
    }
    pthread_mutex_lock(&registry_lock);
    c->id = next_cache_id++;
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
        l->seen_clock = 0;
    } else if (!CRYPTO_THREAD_set_local(&pctx->tls, c)) {
        cache_retire(pctx, c);
        cache_free(c);
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
    const KC_PROVCTX *p;
    int taken = 0;

    if (kc_lite.inst != 0) {
        pthread_mutex_lock(&registry_lock);
        for (p = live_instances; p != NULL; p = p->next_live)
            taken |= p->inst == kc_lite.inst;
        pthread_mutex_unlock(&registry_lock);
        if (taken)
            return 0;
    }
    /* a new thread's is all zero; another instance's is wiped */
    if (kc_lite.inst != 0)
        explicit_bzero(&kc_lite, sizeof(kc_lite));
    kc_lite.lite = 1;
    kc_lite.pctx = pctx;
    kc_lite.inst = pctx->inst;
    /* the threads that used keycache, for the report (kc_cache_lost()) */
    __atomic_add_fetch(&pctx->threads_cached, 1, __ATOMIC_RELAXED);
    return 1;
}

/* Drop entries idle for longer than idle_ttl; checked about once a second. */
static void cache_sweep(KC_CACHE *c, time_t now)
{
    size_t i;

    c->last_sweep = now;
    for (i = 0; i < c->hw; i++) {
        KC_ENTRY *e = &c->entries[i];

        if (e->alg != NULL
            && (uint64_t)(now - e->last_time) >= c->pctx->idle_ttl) {
            KC_BUMP(c, e->alg->stat, evictions);
            entry_kill(c, e);
        }
    }
}

/*
 * Once a second at most per thread: drop idle entries, and let
 * KEYCACHE_DEBUG write a periodic report if one is due.
 */
static KC_NOINLINE void cache_timed(KC_CACHE *c)
{
    time_t now;

    if (c->used == 0 && kc_debug_interval(c->pctx) == 0)
        return;
    now = time(NULL);
    if (now == c->last_sweep)
        return;
    if (c->pctx->idle_ttl != 0)
        cache_sweep(c, now);
    c->last_sweep = now;
    kc_debug_tick(c->pctx, now);
}

static KC_NOINLINE KC_CACHE *cache_get_slow(KC_PROVCTX *pctx, KC_CACHE *c)
{
    time_t now;

    if (c != NULL) {
        cache_timed(c);
        return c;
    }
    if (kc_lite.inst != pctx->inst && !lite_claim(pctx))
        return cache_create(pctx, NULL);
    /* a record without a cache: only the periodic report is timed */
    if (pctx->timed && kc_debug_interval(pctx) != 0
        && (now = time(NULL)) != kc_lite.last_tick) {
        kc_lite.last_tick = now;
        kc_debug_tick(pctx, now);
    }
    return lite_handle();
}

KC_CACHE *kc_cache_get(KC_PROVCTX *pctx)
{
    KC_CACHE *c = tls_get(pctx);

    /* the usual case without a stack frame: the rest is out of line */
    if (c == NULL || pctx->timed)
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

const void *kc_cache_memo_get(KC_CACHE *c, const char *name,
                              const char *props)
{
    const struct kc_shared_st *sh = pctx_of(c)->shared;
    const KC_MEMO *m;
    unsigned int i;

    if (props == NULL)
        props = "";
    /* slots are filled in order: the first empty one ends them */
    for (i = 0; i < KC_MEMO_SLOTS && (m = memo_at(sh, i)) != NULL; i++) {
        if (strcmp(m->name, name) == 0
            && (m->props[0] == props[0]
                && (props[0] == '\0' || strcmp(m->props, props) == 0))) {
            *memo_last_of(c) = i;
            return m->value;
        }
    }
    return NULL;
}

void kc_cache_memo_put(KC_CACHE *c, const char *name, const char *props,
                       const void *value)
{
    struct kc_shared_st *sh = pctx_of(c)->shared;
    KC_MEMO *m, *expect;
    unsigned int i;

    if (props == NULL)
        props = "";
    if (strlen(name) >= KC_MEMO_NAME || strlen(props) >= KC_MEMO_NAME
        || memo_at(sh, KC_MEMO_SLOTS - 1) != NULL
        || (m = OPENSSL_malloc(sizeof(*m))) == NULL)
        return;
    m->namelen = strlen(name);
    strcpy(m->name, name);
    strcpy(m->props, props);
    m->value = value;
    for (i = 0; i < KC_MEMO_SLOTS; i++) {
        expect = NULL;
        if (__atomic_compare_exchange_n(&sh->memo[i], &expect, m, 0,
                                        __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
            *memo_last_of(c) = i;
            return;
        }
    }
    /* full: the name is resolved again next time */
    OPENSSL_free(m);
}

int kc_cache_pair_hint(const KC_CACHE *c, const void *owner, const char *a,
                       size_t alen, const char *b, size_t blen)
{
    if (is_lite(c)
        && (c = ((const KC_LITE *)(const void *)c)->body) == NULL)
        return -1;
    if (c->pair.owner != owner || c->pair.alen != alen
        || c->pair.blen != blen || memcmp(c->pair.a, a, alen) != 0
        || memcmp(c->pair.b, b, blen) != 0)
        return -1;
    return c->pair.value;
}

void kc_cache_pair_hint_put(KC_CACHE *c, const void *owner, const char *a,
                            size_t alen, const char *b, size_t blen,
                            int value)
{
    if (alen > KC_PAIR_HINT_MAX || blen > KC_PAIR_HINT_MAX)
        return;
    if (is_lite(c) && (c = lite_body(as_lite(c))) == NULL)
        return;
    c->pair.owner = NULL;
    c->pair.alen = alen;
    c->pair.blen = blen;
    memcpy(c->pair.a, a, alen);
    memcpy(c->pair.b, b, blen);
    c->pair.value = value;
    c->pair.owner = owner;
}

const void *kc_cache_memo_last(KC_CACHE *c, char name[KC_HINT_NAME])
{
    const KC_MEMO *m = memo_at(pctx_of(c)->shared, *memo_last_of(c));

    /* a whole name with room for its NUL, no properties */
    if (m == NULL || m->props[0] != '\0'
        || m->namelen >= KC_HINT_NAME)
        return NULL;
    memcpy(name, m->name, KC_HINT_NAME);
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
 * Learned values of records, in two pieces compared as they were given
 * (the split point is part of the identity).  Open addressing over
 * KC_REC_SLOTS slots, tried on the last one found first; a full probe
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

void kc_cache_rec_put(KC_CACHE *c, const void *owner, uint64_t hash,
                      const unsigned char *a, size_t alen,
                      const unsigned char *b, size_t blen, int value)
{
    unsigned char *bytes, *old;
    unsigned int i, n;

    /* something to keep: the thread's cache is made for it */
    if (is_lite(c) && (c = lite_body(as_lite(c))) == NULL)
        return;
    if ((bytes = OPENSSL_malloc(alen + blen + 1)) == NULL)
        return;
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
}

/*
 * When almost every lookup misses (a new key per call, or more keys in
 * rotation than the cache holds), admitting every missed key only adds
 * work: its entry is built, then evicted unused.  After a window of
 * KC_WINDOW lookups with fewer than KC_WINDOW_MIN_HITS hits, only one
 * admission in KC_ADMIT_ONE_IN goes ahead (so a new hot key still gets in
 * within a few calls); lookups go on, so cached keys keep hitting and the
 * next window with enough hits ends the bypass.
 */
#define KC_WINDOW 64
#define KC_WINDOW_MIN_HITS 8
#define KC_ADMIT_ONE_IN 16

static int bypass_allows(KC_CACHE *c)
{
    /* filling free slots costs no eviction: only bypass a full cache */
    if (!c->bypass || c->used < c->size)
        return 1;
    return ++c->bypass_misses % KC_ADMIT_ONE_IN == 0;
}

/*
 * Every KC_COLD_ONE_IN-th context still looks up, to see hits return: a
 * window of KC_WINDOW lookups then takes KC_WINDOW * KC_COLD_ONE_IN new
 * contexts (2048).
 */
#define KC_COLD_ONE_IN 32

static int cold_in(KC_CACHE *c, const KC_ALG *alg)
{
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
 * A missed key is admitted at its admit_after-th keyed init seen by the
 * filter.  Keys OpenSSL derives for one use (a TLS record or MAC key, seen
 * once per connection end) are therefore never stored, while a key an
 * application uses again and again gets in on its third call (by default).
 */
/*
 * fp's slot in the filter, or the one it replaces (seen 0 for it): the
 * least recently seen of its two buckets' slots.
 */
static KC_SEEN *seen_slot(KC_CACHE *c, uint64_t fp)
{
    size_t nb = c->nseen / KC_SEEN_WAYS;
    size_t b1 = (size_t)(fp >> 32) & (nb - 1), b2 = (size_t)fp & (nb - 1);
    KC_SEEN *s, *old = NULL;
    unsigned int i, k;

    if (b2 == b1)
        b2 = b1 ^ 1;
    for (k = 0; k < 2; k++) {
        s = &c->seen[(k == 0 ? b1 : b2) * KC_SEEN_WAYS];
        for (i = 0; i < KC_SEEN_WAYS; i++, s++) {
            if (s->fp == fp)
                return s;
            if (old == NULL || s->fp == 0
                || (old->fp != 0
                    && (int32_t)(s->stamp - old->stamp) < 0))
                old = s;
        }
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
 * Wrapper structs come from a small per-thread pool, so that a hit does
 * not allocate either.  They hold no key material (a GCM wrapper's IV and
 * expected tag are public), and are cleared when reused.
 */
void *kc_wrapper_take(KC_PROVCTX *pctx, int kind, size_t size,
                      const KC_ALG *alg, int *cold, KC_CACHE **cp)
{
    KC_CACHE *c = kc_cache_get(pctx);

    if (cp != NULL)
        *cp = c;
    /* a thread without a cache keeps no pool: it would have to be freed */
    if (c != NULL && is_lite(c)) {
        if (cold != NULL)
            *cold = 0;
        return OPENSSL_malloc(size);
    }
    if (cold != NULL)
        *cold = cold_in(c, alg);
    /* the caller zeroes what must start zeroed (kc_wrapper_new_head()) */
    if (c == NULL || c->npool[kind] == 0)
        return OPENSSL_malloc(size);
    return c->pool[kind][--c->npool[kind]];
}

KC_CACHE *kc_cache_here(KC_PROVCTX *pctx)
{
    KC_CACHE *c = tls_get(pctx);

    if (c == NULL && kc_lite.inst == pctx->inst)
        return lite_handle();
    return c;
}

void kc_wrapper_free_in(KC_CACHE *c, int kind, void *p, size_t size)
{
    if (p == NULL)
        return;
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
    c->pool_size[kind] = size;
    c->pool[kind][c->npool[kind]] = p;
    /* counted once in place, for a child forked meanwhile (see
     * cache_drop_side()) */
    __atomic_store_n(&c->npool[kind], c->npool[kind] + 1, __ATOMIC_RELEASE);
}

void kc_wrapper_free(KC_PROVCTX *pctx, int kind, void *p, size_t size)
{
    kc_wrapper_free_in(kc_cache_here(pctx), kind, p, size);
}

_Static_assert(KC_STAT_SLOTS <= 32, "KC_CACHE.missed has a bit per slot");

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

    /* a hit without a cache (a context re-keyed): the cache is made to
     * count it, and the ones after it, on the thread */
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
 * Constant-time key compare: the differences of all words are OR-ed
 * together, so the time depends on the length only.  The empty asm makes
 * the accumulator opaque to the compiler, which could otherwise stop at the
 * first difference.  (libcrypto's CRYPTO_memcmp costs about seven
 * instructions a byte for lengths other than 16, and a call each.)
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
 * A record (see kc_cache_find_rec()) matches by content; entries of the
 * other algorithms have none and are told apart by their KC_ALG alone, so
 * for them (rec == NULL, a constant) this folds away.
 */
static ossl_inline int rec_matches(const KC_ENTRY *e, const unsigned char *rec,
                                   size_t reclen)
{
    return rec == NULL
           || (e->reclen == reclen
               && (reclen == 0 || memcmp(e->rec, rec, reclen) == 0));
}

/*
 * fp's slot in a record's filter, or an empty one for it (seen 0), or NULL
 * when all are taken: a record never drops a key it counts, or keys in
 * rotation could push each other out before their admission.
 */
static KC_SEEN *lite_seen_slot(KC_LITE *l, uint64_t fp)
{
    KC_SEEN *s, *empty = NULL;
    unsigned int i;

    for (i = 0; i < KC_LITE_SEEN; i++) {
        s = &l->seen[i];
        if (s->fp == fp)
            return s;
        if (s->fp == 0 && empty == NULL)
            empty = s;
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
    lk->hash = kc_hash(l->pctx->shared->key, key, keylen);
    if (rec != NULL)
        lk->hash ^= rechash * 0x9fb21c651e98df25ULL;
    fp = fingerprint(lk->hash, alg, param);
    if (*lk->counted == fp)
        return NULL;
    *lk->counted = fp;
    if ((s = lite_seen_slot(l, fp)) != NULL) {
        s->stamp = ++l->seen_clock;
        lk->admit = admit_in(l->pctx, NULL, s, alg, fp);
        return NULL;
    }
    /*
     * More keys than the record holds: the thread's cache, whose filter
     * holds as many as it has slots, takes them over and counts this one
     * (under the same hash key: lk->hash stays good).
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
     * The most recently used entry first: a program that uses one key over
     * and over finds it without hashing.  (Whether a key hits was never
     * hidden: a hit is far faster than a miss.)
     */
    if (c->lru_head != KC_NIL) {
        e = &c->entries[c->lru_head];
        if (e->alg == alg && e->param == param && e->keylen == keylen
            && rec_matches(e, rec, reclen)
            && keys_equal(e->key, key, keylen))
            goto hit;
    }
    lk->hash = kc_hash(c->sipkey, key, keylen);
    if (rec != NULL)
        lk->hash ^= rechash * 0x9fb21c651e98df25ULL;
    m = c->nidx - 1;
    for (i = lk->hash & m; ; i = (i + 1) & m) {
        if (c->idx[i] == 0) {
            uint64_t fp = fingerprint(lk->hash, alg, param);

            window_note(c, 0);
            if (*lk->counted != fp) {
                *lk->counted = fp;
                lk->admit = admit(c, alg, fp);
            }
            return NULL;
        }
        e = &c->entries[c->idx[i] - 1];
        if (entry_matches(e, lk->hash, alg, param, key, keylen)
            && rec_matches(e, rec, reclen))
            break;
    }
 hit:
    slot = (uint32_t)(e - c->entries);
    if (c->lru_head != slot) {
        lru_unlink(c, slot);
        lru_push_front(c, slot);
    }
    if (c->pctx->idle_ttl != 0)
        e->last_time = time(NULL);
    lk->lease.cache_id = c->id;
    lk->lease.gen = e->gen;
    lk->lease.idx = slot;
    if (e->tmpl == NULL) {
        /* its first context has not given it back yet: a miss (see park) */
        lk->pending = 1;
        window_note(c, 0);
        return NULL;
    }
    if (e->nspare > 0) {
        lk->spare = e->spare[--e->nspare];
        e->spare[e->nspare] = NULL;
        c->nspares--;
    }
    KC_BUMP(c, alg->stat, hits);
    window_note(c, 1);
    return e->tmpl;
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
        memset(e, 0, offsetof(KC_ENTRY, key));
        __atomic_store_n(&c->hw, i + 1, __ATOMIC_RELEASE);
    } else {
        if (c->free_head == KC_NIL) {
            KC_BUMP(c, c->entries[c->lru_tail].alg->stat, evictions);
            entry_kill(c, &c->entries[c->lru_tail]);
        }
        i = c->free_head;
        e = &c->entries[i];
        c->free_head = e->next;
    }
    e->param = param;
    e->rec = copy;
    e->reclen = reclen;
    e->nspare = 0;
    e->hash = lk->hash;
    e->keylen = keylen;
    memcpy(e->key, key, keylen);
    /*
     * The entry is there once it has an alg, and its template once stored:
     * a child forked meanwhile (cache_drop_entries()) frees what it sees of
     * them.
     */
    __atomic_store_n(&e->alg, alg, __ATOMIC_RELEASE);
    __atomic_store_n(&e->tmpl, tmpl, __ATOMIC_RELEASE);
    idx_insert(c, i);
    lru_push_front(c, i);
    e->gen = ++c->gen;
    if (c->pctx->idle_ttl != 0)
        e->last_time = time(NULL);
    __atomic_store_n(&c->used, c->used + 1, __ATOMIC_RELAXED);
    if (!c->admitted) {
        c->admitted = 1;
        __atomic_add_fetch(&c->pctx->threads_admitted, 1, __ATOMIC_RELAXED);
    }
    lk->lease.cache_id = c->id;
    lk->lease.gen = e->gen;
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
 * The entry a lease names, if it is still in the current thread's cache:
 * a context is only ever given back to the thread that now holds it, and
 * only to the very entry it came from (cache id, slot and generation: two
 * threads' caches fill their slots in the same order, so slot and
 * generation alone could name another thread's entry for another key).
 */
int kc_cache_lease_is(KC_CACHE *c, const KC_LEASE *lease,
                      const unsigned char *key, size_t keylen)
{
    const KC_ENTRY *e;

    if (c != NULL && is_lite(c))
        c = as_lite(c)->body;
    if (c == NULL || lease->cache_id != c->id || lease->idx >= c->hw)
        return 0;
    e = &c->entries[lease->idx];
    return e->gen == lease->gen && e->alg != NULL && e->keylen == keylen
           && keys_equal(e->key, key, keylen);
}

int kc_cache_park_in(KC_CACHE *c, const KC_LEASE *lease, void *ctx,
                     int (*ready)(const void *arg, void *ctx), const void *arg)
{
    KC_ENTRY *e;

    if (c != NULL && is_lite(c))
        c = as_lite(c)->body;
    if (c == NULL || lease->cache_id != c->id || lease->idx >= c->hw)
        return 0;
    e = &c->entries[lease->idx];
    if (e->gen != lease->gen || e->alg == NULL)
        return 0;
    /* an entry added without a template (kc_cache_add()): this is it */
    if (e->tmpl == NULL) {
        if (!ready(arg, ctx))
            return 0;
        __atomic_store_n(&e->tmpl, ctx, __ATOMIC_RELEASE);
        return 1;
    }
    /* per entry, and no more spares in all than entries */
    if (e->nspare >= e->alg->spare_max || c->nspares >= c->size
        || !ready(arg, ctx))
        return 0;
    e->spare[e->nspare] = ctx;
    /* counted once in place, for a child forked meanwhile, see
     * cache_drop_entries() */
    __atomic_store_n(&e->nspare, e->nspare + 1, __ATOMIC_RELEASE);
    c->nspares++;
    return 1;
}

void kc_cache_counters_by_alg(KC_PROVCTX *pctx, KC_COUNTERS *by,
                              uint64_t *entries)
{
    KC_CACHE *c;
    unsigned int i;

    *entries = 0;
    pthread_mutex_lock(&registry_lock);
    memcpy(by, pctx->retired, sizeof(pctx->retired));
    for (i = 0; pctx->shared != NULL && i < KC_STAT_SLOTS; i++)
        by[i].passthrough += __atomic_load_n(&pctx->shared->passthrough[i],
                                             __ATOMIC_RELAXED);
    for (c = pctx->caches; c != NULL; c = c->next) {
        add_counters(by, c->n);
        *entries += KC_READ(c->used);
    }
    pthread_mutex_unlock(&registry_lock);
}

void kc_cache_lost(KC_PROVCTX *pctx, uint64_t *threads, uint64_t *admitted,
                   uint64_t *wiped)
{
    pthread_mutex_lock(&registry_lock);
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
    if ((pctx->shared = shared_new()) == NULL)
        return 0;
    if (!CRYPTO_THREAD_init_local(&pctx->tls, NULL)) {
        OPENSSL_free(pctx->shared);
        pctx->shared = NULL;
        return 0;
    }
    pthread_once(&atfork_once, atfork_register);
    pctx->tls_ok = 1;
    pthread_mutex_lock(&registry_lock);
    pctx->inst = next_inst++;
    pctx->next_live = live_instances;
    live_instances = pctx;
    pthread_mutex_unlock(&registry_lock);
    return 1;
}

void kc_cache_stop(KC_PROVCTX *pctx)
{
    KC_PROVCTX **pp;
    KC_CACHE *c, *next;
    unsigned int i;

    if (!pctx->tls_ok)
        return;
    pthread_mutex_lock(&registry_lock);
    for (pp = &live_instances; *pp != NULL; pp = &(*pp)->next_live)
        if (*pp == pctx) {
            *pp = pctx->next_live;
            break;
        }
    for (c = pctx->caches; c != NULL; c = next) {
        next = c->next;
        cache_retire(pctx, c);
        cache_free(c);
    }
    pctx->caches = NULL;
    /* the report at unload (core/report.c) comes after this */
    for (i = 0; i < KC_STAT_SLOTS; i++)
        pctx->retired[i].passthrough += pctx->shared->passthrough[i];
    /*
     * The calling thread may still point at a cache freed above.  Other
     * threads' records of this instance are never read again: instance
     * numbers are not reused (lite_claim()).
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
