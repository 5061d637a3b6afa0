/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key material and memory bounds, seen through OpenSSL's allocator.
 *
 * main() installs kc_heap's allocator hooks before any other OpenSSL call:
 * every block knows its size and whether keycache's own code allocated it.
 * When a block is freed or reallocated it is scanned for the test keys'
 * bytes; a hit in a keycache block is a violation (key material left
 * behind in freed memory), a hit in a libcrypto block is reported only.
 * Live keycache blocks are scanned too, for keys that should be gone (for
 * instance evicted ones: a shorter key reusing a slot would leave the tail of
 * an uncleansed longer key behind).
 *
 * Phases: eviction (a cache_size = 4 configuration), thread exit, library
 * context teardown; then one million distinct HMAC keys through one thread,
 * after which the entry count and the number of live allocations must not
 * have grown beyond a small constant.
 */
#define _GNU_SOURCE            /* pthread_timedjoin_np() */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "kc_family.h"
#include "kc_heap.h"
#include "kc_test.h"
#include "keycache.h"

#define MAXKEYS 41
#define KEYLEN 32                        /* the HMAC keys of test_bounded */
#define WKEYLEN KCT_FAM_MAXKEY           /* a watched key: any row's */

static unsigned char keys[MAXKEYS][WKEYLEN];
static unsigned long planted;   /* non-keycache hits test_scanner made */

/* Live keycache blocks holding any of keys[from..to); |say|: print them. */
static unsigned long scan_live(int from, int to, int say)
{
    unsigned long hits = 0;
    char what[64];
    int k;

    for (k = from; k < to; k++) {
        snprintf(what, sizeof(what), "LIVE: key %d still", k);
        hits += kch_live(keys[k], WKEYLEN, 1, say ? what : NULL);
    }
    if (say && hits != 0)
        fputc('\n', stderr);
    return hits;
}

static unsigned long violations(void)
{
    unsigned long v;

    kch_freed(&v, NULL);
    return v;
}

/* ---------------------------------------------------------------------- */
/* Operations, each checked against the default provider                  */

static const unsigned char msg[] = "key material scan message";

/*
 * Every row of the family registry with |key| (its first keylen bytes) on
 * |ctx|, compared with the default provider, which opens keycache's
 * ciphertexts and keycache the default's (a second use of each key):
 * the number of rows that differ.
 */
static int use_rows(OSSL_LIB_CTX *ctx, const unsigned char *key)
{
    return kct_fam_all_same("keyscan", ctx, key, msg, sizeof(msg));
}

/* One row with |key| (len bytes) on |ctx| equals the default's: 0 or 1. */
static int use_row(OSSL_LIB_CTX *ctx, const KCT_FAM *f,
                   const unsigned char *key, size_t len)
{
    return !kct_fam_same("keyscan", ctx, f, key, len, msg, sizeof(msg));
}

/* ---------------------------------------------------------------------- */
/* Phases                                                                 */

/*
 * key roles (WKEYLEN bytes each, a row takes the first keylen): 0-3
 * evicted, 8-11 thread, 12-15 teardown, 16 message tails, 17-18 re-keyed,
 * 19 idle, 20-23 freed outside the lock, 24-27 stopped, 28-31 stopped while
 * keycache's lock is taken, 32-34 and 35-38 the same with a second instance,
 * 39 held by a keyed first GMAC template
 */
#define K_EV 0
#define K_THREAD 8
#define K_TEARDOWN 12
#define K_TAILS 16
#define K_REKEY 17
#define K_IDLE 19
#define K_UNLOCKED 20
#define K_STOPPED 24
#define K_CONTEND 28
#define K_SECOND 32
#define K_SECOND_CONTEND 35
#define K_HELD 39
#define K_USED 40

static int suite_init(void)
{
    kch_watch_new_keys(keys[0], WKEYLEN, K_USED, "KCKEY", 0xC0FFEE00u);
    return 0;
}

/* The scanner itself: a key left in a freed block is seen, half or whole. */
static void test_scanner(void)
{
    unsigned char *p = OPENSSL_malloc(100);
    unsigned long before, after;

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    memset(p, 0, 100);
    /* the second half of key 3 at an odd offset */
    memcpy(p + 37, keys[3] + KEYLEN / 2, KEYLEN / 2);
    kch_freed(NULL, &before);
    OPENSSL_free(p);
    kch_freed(NULL, &after);
    /* allocated by this test, not keycache: counted as libcrypto's */
    CU_ASSERT_EQUAL(after, before + 1);
    planted += after - before;
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_TRUE(kch_keycache_file("/usr/src/keycache/provider/cache/store.c"));
    CU_ASSERT_TRUE(kch_keycache_file("provider/layer/ctmpl.c"));
    CU_ASSERT_FALSE(kch_keycache_file("../crypto/hmac/hmac.c"));
    CU_ASSERT_FALSE(kch_keycache_file("provider/store.c"));
    CU_ASSERT_FALSE(kch_keycache_file("myprovider/cache/store.c"));
    CU_ASSERT_FALSE(
        kch_keycache_file("providers/implementations/macs/hmac.c"));
}

/*
 * What evicts row f's entries: a cipher's sibling with the shortest key
 * (AES-128-OCB for AES-256-OCB: a shorter key in the slot a longer one
 * had must leave no tail), else HMAC with 16-byte keys.
 */
static const KCT_FAM *evictor(const KCT_FAM *f, size_t *keylen)
{
    const KCT_FAM *e = NULL;
    size_t i;

    for (i = 0; i < kct_nfams; i++)
        if (f->kind == KCT_CIPHER && strcmp(kct_fams[i].conf, f->conf) == 0
            && kct_fams[i].keylen < f->keylen
            && (e == NULL || kct_fams[i].keylen < e->keylen))
            e = &kct_fams[i];
    if (e == NULL)
        e = kct_fam_find("HMAC");
    *keylen = e->kind == KCT_CIPHER ? e->keylen : 16;
    return e;
}

/*
 * Every registry row, in a library context of its own with a cache of 4
 * (so that no row meets the miss rates the rows before it made): four keys
 * fill the cache, the evictor's keys evict them.
 */
static void test_eviction(void)
{
    unsigned char shortkey[WKEYLEN];
    const KCT_FAM *f, *e;
    OSSL_LIB_CTX *ctx;
    size_t r, elen;
    uint64_t ev;
    int i, bad = 0;

    for (r = 0; r < kct_nfams; r++) {
        f = &kct_fams[r];
        e = evictor(f, &elen);
        ctx = kct_keycache_conf("cache_size = 4\n");
        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE), 4);
        /* four keys fill the cache (each used twice: cached) */
        for (i = 0; i < 4; i++)
            bad += use_row(ctx, f, keys[K_EV + i], f->keylen)
                   + use_row(ctx, f, keys[K_EV + i], f->keylen);
        if (kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) != 4)
            fprintf(stderr, "\n  %s: %llu entries, not 4\n", f->id,
                    (unsigned long long)kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES));
        CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), 4);
        /* the keys are in the cache right now: the live scan sees them */
        CU_ASSERT_TRUE(scan_live(K_EV, K_EV + 4, 0) >= 1);

        /* the evictor's keys take every slot and must leave no tail */
        ev = kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS);
        for (i = 0; i < 6; i++) {
            kct_fill(shortkey, elen, 0x5000 + 16 * (uint32_t)r + (uint32_t)i);
            bad += use_row(ctx, e, shortkey, elen);
        }
        CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS) >= ev + 4);
        if (scan_live(K_EV, K_EV + 4, 0) != 0)
            fprintf(stderr, "\n  %s evicted by %s:", f->id, e->id);
        CU_ASSERT_EQUAL(scan_live(K_EV, K_EV + 4, 1), 0);

        /* evicted keys still compute correctly */
        for (i = 0; i < 4; i++)
            bad += use_row(ctx, f, keys[K_EV + i], f->keylen);
        CU_ASSERT_EQUAL(violations(), 0);
        OSSL_LIB_CTX_free(ctx);
        CU_ASSERT_EQUAL(violations(), 0);
        CU_ASSERT_EQUAL(scan_live(0, K_USED, 1), 0);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/*
 * idle_ttl = 2: every registry row's entry for one key, then a sleep past
 * the limit and one HMAC with another key on this (the owning) thread:
 * the sweep leaves no copy of the key in any family's entry.  (Entries
 * age in whole seconds of time(): one used just before a second ends is
 * a second old just after, so idle_ttl = 1 could sweep an entry while the
 * rows are still being used, where a sanitizer slows them.)
 */
static void test_idle_sweep(void)
{
    static const struct timespec idle = { 3, 500000000L };
    OSSL_LIB_CTX *ctx = kct_keycache_conf("idle_ttl = 2\n");
    unsigned char other[KEYLEN];
    int bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    bad += use_rows(ctx, keys[K_IDLE]);
    bad += use_rows(ctx, keys[K_IDLE]);
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) >= kct_nfams);
    CU_ASSERT_TRUE(scan_live(K_IDLE, K_IDLE + 1, 0) >= 1);
    nanosleep(&idle, NULL);
    kct_fill(other, sizeof(other), 0x1D1E);
    bad += use_row(ctx, kct_fam_find("HMAC"), other, sizeof(other));
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) <= 1);
    CU_ASSERT_EQUAL(scan_live(K_IDLE, K_IDLE + 1, 1), 0);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(bad, 0);
    OSSL_LIB_CTX_free(ctx);
}

/* Entries four keys through every row make at least, in a cache of |size| */
static uint64_t min_entries(uint64_t size)
{
    return 4 * kct_nfams < size ? 4 * kct_nfams : size;
}

struct thread_arg {
    int bad;
    uint64_t entries;        /* ENTRIES seen just before exiting */
};

static void *key_thread(void *varg)
{
    struct thread_arg *a = varg;
    int i;

    for (i = 0; i < 4; i++)
        a->bad += use_rows(kct_keycache(), keys[K_THREAD + i]);
    a->entries = kct_counter(KEYCACHE_PARAM_ENTRIES);
    return NULL;
}

static void test_thread_exit(void)
{
    uint64_t before = kct_counter(KEYCACHE_PARAM_ENTRIES);
    struct thread_arg a = { 0, 0 };
    pthread_t t;

    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, key_thread, &a), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(a.bad, 0);
    /*
     * the thread had an entry per key and registry row at least (a cipher
     * may have one per direction) or a full cache, and took them along
     */
    CU_ASSERT_TRUE(a.entries - before
                   >= min_entries(kct_counter_in(kct_keycache(),
                                          KEYCACHE_PARAM_CACHE_SIZE)));
    CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_ENTRIES), before);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(scan_live(K_THREAD, K_THREAD + 4, 1), 0);
}

/*
 * A thread's cache is freed outside the lock OpenSSL holds, process-wide,
 * while it runs every thread-stop handler: a fork() while another thread
 * holds it leaves the child unable to exit (OPENSSL_cleanup() takes it).
 * Each keycache block the exiting thread frees asks a new thread to take
 * that lock (its first RAND_bytes() registers a thread-stop handler);
 * if that takes over ten seconds, the block was freed under the lock.
 */
#define MAX_PROBES 4096
static __thread int exiting;
static int probes, held;
static pthread_t late[2];

static void *take_stop_lock(void *unused)
{
    unsigned char b;

    (void)unused;
    RAND_bytes_ex(kct_default(), &b, 1, 0);
    return NULL;
}

static void probe_free(int keycache)
{
    struct timespec ts;
    pthread_t t;

    if (!exiting || !keycache || held == 2 || probes == MAX_PROBES
        || pthread_create(&t, NULL, take_stop_lock, NULL) != 0)
        return;
    probes++;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    if (pthread_timedjoin_np(t, NULL, &ts) != 0)
        late[held++] = t;
}

static void *unlocked_thread(void *varg)
{
    int i, *bad = varg;

    for (i = 0; i < 4; i++)
        *bad += use_rows(kct_keycache(), keys[K_UNLOCKED + i]);
    exiting = 1;
    return NULL;
}

static void test_thread_exit_unlocked(void)
{
    pthread_t t;
    int i, bad = 0;

    kch_on_free(probe_free);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, unlocked_thread, &bad), 0);
    pthread_join(t, NULL);
    kch_on_free(NULL);
    for (i = 0; i < held; i++)
        pthread_join(late[i], NULL);
    CU_ASSERT_EQUAL(bad, 0);
    /* it freed keycache blocks as it exited, none under the lock */
    CU_ASSERT_TRUE(probes > 0);
    CU_ASSERT_EQUAL(held, 0);
    if (held != 0)
        fprintf(stderr, "\n%d keycache block(s) freed under OpenSSL's "
                "thread-stop lock (%d probed)\n", held, probes);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(scan_live(K_UNLOCKED, K_UNLOCKED + 4, 1), 0);
}

/*
 * Nor does a thread's stop handler wait there for keycache's own lock,
 * which a fork() holds across the call, and a thread freeing caches holds
 * while it frees: B exits and, from inside its freeing, lets A exit, then
 * probes OpenSSL's lock as above.
 */
static __thread int role_b;
static sem_t a_ready, a_go;
static int b_fired;

static void probe_from_b(int keycache)
{
    if (!role_b || !exiting || !keycache || b_fired)
        return;
    b_fired = 1;
    sem_post(&a_go);
    usleep(200000);             /* A is in its thread-stop handlers */
    role_b = 0;
    probe_free(1);
}

static OSSL_LIB_CTX *second;  /* a second instance, for the tests that say */

/* A keys k in |on| (and k + 1 in the record's instance if that is not it) */
typedef struct {
    int bad;
    OSSL_LIB_CTX *on;
    int k;
} EXIT_A;

static void *exit_a(void *varg)
{
    EXIT_A *x = varg;

    if (x->on != kct_keycache())
        x->bad += use_rows(kct_keycache(), keys[x->k + 1]);
    x->bad += use_rows(x->on, keys[x->k]);
    /* (A's cache holds that key: there is a cache to stop) */
    x->bad += scan_live(x->k, x->k + 1, 0) == 0;
    sem_post(&a_ready);         /* its cache made, before B takes the lock */
    sem_wait(&a_go);
    return NULL;
}

/* B: keys its key, waits for A's cache, then exits (its hook runs) */
typedef struct {
    int bad, key;
    sem_t *a_ready;
} B_ARG;

static void *b_exits(void *varg)
{
    B_ARG *b = varg;

    b->bad += use_rows(kct_keycache(), keys[b->key]);
    sem_wait(b->a_ready);
    role_b = 1;
    exiting = 1;
    return NULL;
}

/*
 * A and B run with B's hook on; a hook that never fired (B freed nothing)
 * lets A go on by itself.
 */
static void run_a_b(void (*hook)(int), void *(*a_main)(void *), void *a_arg,
                    B_ARG *bb, const int *fired, sem_t *a_go)
{
    pthread_t a, b;

    kch_on_free(hook);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&a, NULL, a_main, a_arg), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&b, NULL, b_exits, bb), 0);
    pthread_join(b, NULL);
    if (!*fired)
        sem_post(a_go);
    pthread_join(a, NULL);
    kch_on_free(NULL);
}

/* A as exit_a() says, B keying the key after A's */
static void run_never_waits(OSSL_LIB_CTX *on, int k)
{
    EXIT_A x = { 0, on, k };
    int i, kb = k + (on != kct_keycache() ? 2 : 1);
    B_ARG bb = { 0, kb, &a_ready };

    probes = held = b_fired = 0;
    CU_ASSERT_EQUAL_FATAL(sem_init(&a_ready, 0, 0), 0);
    CU_ASSERT_EQUAL_FATAL(sem_init(&a_go, 0, 0), 0);
    run_a_b(probe_from_b, exit_a, &x, &bb, &b_fired, &a_go);
    for (i = 0; i < held; i++)
        pthread_join(late[i], NULL);
    sem_destroy(&a_go);
    sem_destroy(&a_ready);
    CU_ASSERT_EQUAL(x.bad + bb.bad, 0);
    CU_ASSERT_TRUE(b_fired);
    CU_ASSERT_EQUAL(probes, 1);
    CU_ASSERT_EQUAL(held, 0);
    if (held != 0)
        fprintf(stderr, "\na thread-stop handler waited for keycache's "
                "lock under OpenSSL's\n");
    CU_ASSERT_EQUAL(violations(), 0);
    /* (a second instance's: before it goes, which would wipe it anyway) */
    CU_ASSERT_EQUAL(scan_live(k, kb + 1, 1), 0);
}

static void test_thread_stop_never_waits(void)
{
    run_never_waits(kct_keycache(), K_UNLOCKED);
}

/*
 * The same for a cache of another instance than the thread's record's (a
 * second library context with keycache): its stop does not wait either,
 * and the thread's exit still wipes it.
 */
static void test_thread_stop_second_never_waits(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(second = kct_keycache_conf(""));
    run_never_waits(second, K_SECOND);
    OSSL_LIB_CTX_free(second);
}

/*
 * An explicit OPENSSL_thread_stop() that finds keycache's lock taken (here
 * by B, freeing its cache as it exits) still takes A's cache off A: A's
 * next use of a key it cached is no hit, and once A makes a new cache (that
 * use makes one) the old cache's other key is gone while A lives on.
 */
static sem_t c_ready, c_stop, c_stopped;
static int c_fired, c_timeout;

static void contend_from_b(int keycache)
{
    struct timespec ts;

    if (!role_b || !exiting || !keycache || c_fired)
        return;
    c_fired = 1;
    sem_post(&c_stop);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    c_timeout = sem_timedwait(&c_stopped, &ts) != 0;
}

typedef struct {
    int bad;
    uint64_t hits;              /* A's hits from its old key after the stop */
    unsigned long left;         /* its other old key in live blocks, then */
    OSSL_LIB_CTX *on;           /* where A keys: the record's instance or not */
    int k;                      /* A's keys k, k + 1; the record's k + 2 */
} CONTEND;

static void *contend_a(void *varg)
{
    CONTEND *x = varg;
    const KCT_FAM *f = kct_fam_find("HMAC");
    uint64_t h;
    int i;

    /* (another instance than the record's: the record is this one's) */
    if (x->on != kct_keycache())
        x->bad += use_rows(kct_keycache(), keys[x->k + 2]);
    x->bad += use_rows(x->on, keys[x->k]);
    x->bad += use_rows(x->on, keys[x->k + 1]);
    /* (A's cache holds that key: there is a cache to stop) */
    x->bad += scan_live(x->k + 1, x->k + 2, 0) == 0;
    sem_post(&c_ready);         /* its cache made, before B takes the lock */
    sem_wait(&c_stop);
    OPENSSL_thread_stop();
    sem_post(&c_stopped);
    h = kct_counter_in(x->on, KEYCACHE_PARAM_HITS);
    x->bad += use_row(x->on, f, keys[x->k], f->keylen);
    x->hits = kct_counter_in(x->on, KEYCACHE_PARAM_HITS) - h;
    /* again, enough for an admission: a new cache */
    for (i = 0; i < 4; i++)
        x->bad += use_row(x->on, f, keys[x->k], f->keylen);
    x->left = scan_live(x->k + 1, x->k + 2, 1);
    return NULL;
}

/* A keys in |on|, keys k to k + 2 its, k + 3 B's */
static void run_contended(OSSL_LIB_CTX *on, int k)
{
    CONTEND x = { 0, 0, 0, on, k };
    B_ARG bb = { 0, k + 3, &c_ready };

    c_fired = c_timeout = 0;
    CU_ASSERT_EQUAL_FATAL(sem_init(&c_ready, 0, 0), 0);
    CU_ASSERT_EQUAL_FATAL(sem_init(&c_stop, 0, 0), 0);
    CU_ASSERT_EQUAL_FATAL(sem_init(&c_stopped, 0, 0), 0);
    run_a_b(contend_from_b, contend_a, &x, &bb, &c_fired, &c_stop);
    sem_destroy(&c_stop);
    sem_destroy(&c_ready);
    sem_destroy(&c_stopped);
    CU_ASSERT_EQUAL(bb.bad + x.bad, 0);
    CU_ASSERT_TRUE(c_fired);
    /* the stop did not wait for B's lock */
    CU_ASSERT_FALSE(c_timeout);
    if (x.hits != 0 || x.left != 0)
        fprintf(stderr, "\nafter the stop: %llu hit(s), old key in %lu live "
                "block(s) once a new cache was made\n",
                (unsigned long long)x.hits, x.left);
    CU_ASSERT_EQUAL(x.hits, 0);
    CU_ASSERT_EQUAL(x.left, 0);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(scan_live(k, k + 4, 1), 0);
}

static void test_thread_stop_contended(void)
{
    run_contended(kct_keycache(), K_CONTEND);
}

/*
 * The same stop with a cache of a second instance: that cache is no longer
 * served after the stop, and the thread's next look-up frees it.
 */
static void test_thread_stop_second_contended(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(second = kct_keycache_conf(""));
    run_contended(second, K_SECOND_CONTEND);
    OSSL_LIB_CTX_free(second);
}

/*
 * OPENSSL_thread_stop() then more time alive: the cache, set aside under
 * OpenSSL's lock, is wiped by the thread's exit at the latest.
 */
static void *stopped_thread(void *varg)
{
    int i, *bad = varg;

    for (i = 0; i < 4; i++)
        *bad += use_rows(kct_keycache(), keys[K_STOPPED + i]);
    OPENSSL_thread_stop();
    return NULL;
}

static void test_thread_stop_then_exit(void)
{
    pthread_t t;
    int bad = 0;

    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, stopped_thread, &bad), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(scan_live(K_STOPPED, K_STOPPED + 4, 1), 0);
}

static void *teardown_thread(void *varg)
{
    OSSL_LIB_CTX *ctx = varg;

    /* warm this thread's cache too, then exit before the teardown */
    if (use_rows(ctx, keys[K_TEARDOWN]) != 0)
        return varg;
    return NULL;
}

static void test_teardown(void)
{
    OSSL_LIB_CTX *ctx = kct_keycache_conf("cache_size = 64\n");
    pthread_t t;
    void *tret = NULL;
    int i, bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (i = 0; i < 4; i++)
        bad += use_rows(ctx, keys[K_TEARDOWN + i]);
    CU_ASSERT_EQUAL(pthread_create(&t, NULL, teardown_thread, ctx), 0);
    pthread_join(t, &tret);
    CU_ASSERT_PTR_NULL(tret);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES)
                   >= min_entries(kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE)));
    CU_ASSERT_TRUE(scan_live(K_TEARDOWN, K_TEARDOWN + 4, 0) >= 1);
    /* the main thread's cache is warm: teardown frees it */
    OSSL_LIB_CTX_free(ctx);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(scan_live(K_TEARDOWN, K_TEARDOWN + 4, 1), 0);
}

/*
 * One million distinct keys through one thread: the cache stays at its
 * bound, and after warm-up the number of live allocations stays flat.  Half
 * the keys are used once each (a miss storm, which keycache may answer by
 * bypassing its cache); half twice in a row, each after a use of one hot key
 * (a hit rate that keeps the cache in use, so new keys evict old ones).
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define BOUNDED_KEYS 250000     /* sanitizers are several times slower */
#else
# define BOUNDED_KEYS 1000000
#endif
#define WARMUP 20000
#define SLACK_BLOCKS 16
#define SLACK_BYTES (64 * 1024)

typedef struct {
    EVP_MAC *mac;
    OSSL_PARAM params[2];
    unsigned char key[KEYLEN], hot[KEYLEN];
    int bad;
    size_t max_blocks;       /* highest live counts seen */
    size_t max_bytes;
} BOUNDED;

static void bounded_mac(BOUNDED *b, const unsigned char *key,
                        unsigned char out[32])
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_new(b->mac);
    size_t outlen = 0;

    if (c == NULL || !EVP_MAC_init(c, key, KEYLEN, b->params)
        || !EVP_MAC_update(c, msg, sizeof(msg))
        || !EVP_MAC_final(c, out, &outlen, 32) || outlen != 32)
        b->bad++;
    EVP_MAC_CTX_free(c);
}

/* Keys first..first+n-1, each used |reps| times, after the hot key if set. */
static void bounded_run(BOUNDED *b, long first, long n, int reps, int hot)
{
    unsigned char out[32], want[KCT_FAM_OUT(sizeof(msg))];
    size_t blocks, bytes;
    long i;
    int r;

    for (i = first; i < first + n; i++) {
        memcpy(b->key, &i, sizeof(i));         /* distinct for every i */
        if (hot)
            bounded_mac(b, b->hot, out);
        for (r = 0; r < reps; r++) {
            bounded_mac(b, b->key, out);
            if (i % 25000 == 7
                && (kct_fam_run(kct_default(), kct_fam_find("HMAC"), b->key,
                                sizeof(b->key), msg, sizeof(msg), want) != 32
                    || memcmp(out, want, 32) != 0))
                b->bad++;
        }
        if (i % 1000 == 0) {
            kch_counts(&blocks, &bytes);
            if (blocks > b->max_blocks)
                b->max_blocks = blocks;
            if (bytes > b->max_bytes)
                b->max_bytes = bytes;
        }
    }
}

static void test_bounded(void)
{
    OSSL_LIB_CTX *ctx = kct_keycache();
    uint64_t size = kct_counter_in(ctx, KEYCACHE_PARAM_CACHE_SIZE);
    uint64_t misses, pass, hits, ev;
    size_t blocks0, bytes0, blocks, bytes;
    long half = BOUNDED_KEYS / 2;
    BOUNDED b;

    memset(&b, 0, sizeof(b));
    b.mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    b.params[0] = OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0);
    b.params[1] = OSSL_PARAM_construct_end();
    kct_fill(b.key, sizeof(b.key), 0xB0B0);
    kct_fill(b.hot, sizeof(b.hot), 0xB0B1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b.mac);
    CU_ASSERT_TRUE_FATAL(size > 0 && size <= KEYCACHE_MAX_CACHE_SIZE);
    /* the million keys are not test keys: no free-time scan cost */
    kch_watch(NULL, 0, 0);

    /* warm-up: both patterns once, then take the baseline */
    bounded_run(&b, 0, WARMUP / 2, 1, 0);
    bounded_run(&b, WARMUP / 2, WARMUP / 2, 2, 1);
    kch_counts(&blocks0, &bytes0);
    b.max_blocks = blocks0;
    b.max_bytes = bytes0;

    misses = kct_counter_in(ctx, KEYCACHE_PARAM_MISSES);
    pass = kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH);
    hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    bounded_run(&b, WARMUP, half - WARMUP, 1, 0);
    /* every key missed or, with the cache bypassed, passed through */
    CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS), hits);
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES) - misses
                   + kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH) - pass
                   >= (uint64_t)(half - WARMUP));
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) <= size);

    misses = kct_counter_in(ctx, KEYCACHE_PARAM_MISSES);
    hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    ev = kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS);
    bounded_run(&b, half, BOUNDED_KEYS - half, 2, 1);
    /* here the cache was in use: each key missed, hit, and was evicted */
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_MISSES) - misses
                   >= (uint64_t)(BOUNDED_KEYS - half) / 2);
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_HITS) - hits
                   >= (uint64_t)(BOUNDED_KEYS - half) / 2);
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS) - ev
                   >= (uint64_t)(BOUNDED_KEYS - half) / 2 - size);
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) <= size);

    kch_counts(&blocks, &bytes);
    EVP_MAC_free(b.mac);
    kch_watch(keys, WKEYLEN, K_USED);
    CU_ASSERT_EQUAL(b.bad, 0);
    CU_ASSERT_TRUE(b.max_blocks <= blocks0 + SLACK_BLOCKS);
    CU_ASSERT_TRUE(b.max_bytes <= bytes0 + SLACK_BYTES);
    CU_ASSERT_TRUE(blocks <= blocks0 + SLACK_BLOCKS);
    if (b.max_blocks > blocks0 + SLACK_BLOCKS
        || b.max_bytes > bytes0 + SLACK_BYTES)
        fprintf(stderr, "\n  live memory grew: %zu blocks / %zu bytes after"
                " warm-up, max %zu / %zu, at the end %zu / %zu\n",
                blocks0, bytes0, b.max_blocks, b.max_bytes, blocks, bytes);
    else
        printf("\n  live after warm-up %zu blocks / %zu bytes, max %zu / %zu"
               " ", blocks0, bytes0, b.max_blocks, b.max_bytes);
}

/*
 * Used contexts keycache keeps for reuse hold no part of the messages they
 * MACed, nor their MACs, once given back: the default wipes a context the
 * program frees, so a kept one must not hold more (CMAC keeps a message's
 * last block until its next use, a digest context its last output).  Each
 * MAC runs over messages whose tail is bytes nothing else has - a whole
 * last block, a partial one, a message shorter than a block - on fresh
 * contexts until the key is cached and contexts are given back, then
 * leaves messages open (freed after an update, or HMAC given a new key);
 * after each, no live block may hold a tail or a MAC.  The scan is checked
 * once on a CMAC context still in use, which does hold a tail.  Every row
 * of the family registry runs (the AEAD ciphers seal the messages: an OCB
 * context holds a partial block, and ciphertext and tag count as "MAC"),
 * then the other digests and ciphers of tails_more[].
 */
static KCT_FAM tails_fams[32];          /* what the test runs */
static size_t n_tails_fams;
/* beside the registry's rows: the other sub values that really differ */
static const struct {
    const char *id, *sub_value;
    size_t keylen;
} tails_more[] = {
    { "CMAC", "AES-128-CBC", 16 }, { "HMAC", "SHA512", 32 },
    { "HMAC", "SHA3-256", 32 },
};
#define TAIL_MSGS 3
static unsigned char tails_msg[TAIL_MSGS][64];
static const size_t tails_len[TAIL_MSGS] = { 48, 45, 13 };
static const size_t tails_tail[TAIL_MSGS] = { 16, 13, 13 };

/* Every registry row, then tails_more[]. */
static void tails_fams_init(void)
{
    size_t i;

    n_tails_fams = 0;
    for (i = 0; i < kct_nfams; i++)
        tails_fams[n_tails_fams++] = kct_fams[i];
    for (i = 0; i < sizeof(tails_more) / sizeof(tails_more[0]); i++) {
        tails_fams[n_tails_fams] = *kct_fam_find(tails_more[i].id);
        tails_fams[n_tails_fams].sub_value = tails_more[i].sub_value;
        tails_fams[n_tails_fams++].keylen = tails_more[i].keylen;
    }
}

/* Message i through tails_fams[m]: its MAC, or ciphertext and tag. */
static int tails_q_mac(OSSL_LIB_CTX *ctx, size_t m, int i,
                       unsigned char *out, size_t *outl)
{
    *outl = kct_fam_run(ctx, &tails_fams[m], keys[K_TAILS],
                        tails_fams[m].keylen, tails_msg[i], tails_len[i],
                        out);
    return *outl != 0;
}

/*
 * A message left open: init, update, then free (how = 0) or, on HMAC, a
 * new key (how = 1: the old key's context goes back) and then free.
 */
static int tails_unfinished(OSSL_LIB_CTX *ctx, size_t m, int i, int how)
{
    static const unsigned char other_key[32] = "keyscan: another key";
    const KCT_FAM *f = &tails_fams[m];
    EVP_MAC *mac = NULL;
    EVP_MAC_CTX *c = NULL;
    EVP_CIPHER *cipher = NULL;
    EVP_CIPHER_CTX *cc = NULL;
    unsigned char out[64 + 16];
    OSSL_PARAM p[3];
    int ok, len;

    if (f->kind == KCT_CIPHER) {
        cipher = EVP_CIPHER_fetch(ctx, f->name, NULL);
        cc = EVP_CIPHER_CTX_new();
        ok = cipher != NULL && cc != NULL
             && EVP_EncryptInit_ex2(cc, cipher, keys[K_TAILS],
                                    kct_fam_ivlen(f) ? kct_fam_iv : NULL,
                                    NULL)
             && EVP_EncryptUpdate(cc, NULL, &len, kct_fam_aad,
                                  sizeof(kct_fam_aad))
             && EVP_EncryptUpdate(cc, out, &len, tails_msg[i],
                                  (int)tails_len[i]);
        EVP_CIPHER_CTX_free(cc);
        EVP_CIPHER_free(cipher);
        return ok;
    }
    mac = EVP_MAC_fetch(ctx, f->name, NULL);
    c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    ok = c != NULL
         && EVP_MAC_init(c, keys[K_TAILS], f->keylen,
                         kct_fam_mac_params(f, p, NULL))
         && EVP_MAC_update(c, tails_msg[i], tails_len[i]);
    if (how == 1)
        ok = ok && EVP_MAC_init(c, other_key, sizeof(other_key), NULL);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    return ok;
}

/* the MACs of the messages, as the default computed them */
static unsigned char tails_mac[TAIL_MSGS][KCT_FAM_OUT(64)];
static size_t tails_maclen[TAIL_MSGS];

/*
 * Live blocks holding a message's tail or its MAC: as bytes, and as the
 * 32- and 64-bit words of a digest state in host order (the SHA-2 state a
 * digest context keeps is its output, word by word).
 */
static unsigned long tails_live(const char *say)
{
    unsigned char sw[KCT_FAM_OUT(64)];
    unsigned long hits = 0;
    size_t w, k, n;
    int i;

    for (i = 0; i < TAIL_MSGS; i++) {
        hits += kch_live(tails_msg[i] + tails_len[i] - tails_tail[i],
                         tails_tail[i], 0, say);
        n = tails_maclen[i];
        if (n == 0)
            continue;
        hits += kch_live(tails_mac[i], n, 0, say != NULL ? "a MAC" : NULL);
        for (w = 4; w <= 8 && n % w == 0; w += 4) {
            for (k = 0; k < n; k++)
                sw[k] = tails_mac[i][k - k % w + (w - 1 - k % w)];
            hits += kch_live(sw, n, 0, say != NULL ? "a MAC as words" : NULL);
        }
    }
    return hits;
}

struct tails_arg {
    OSSL_LIB_CTX *ctx;
    size_t m;
    int bad;
    unsigned long left, in_use;
};

static void *tails_thread(void *varg)
{
    struct tails_arg *a = varg;
    unsigned char want[KCT_FAM_OUT(64)], got[KCT_FAM_OUT(64)];
    size_t wl, gl;
    int r, i, how;

    for (r = 0; r < 6; r++) {
        for (i = 0; i < TAIL_MSGS; i++) {
            if (!tails_q_mac(kct_default(), a->m, i, want, &wl)
                || !tails_q_mac(a->ctx, a->m, i, got, &gl) || wl != gl
                || memcmp(want, got, wl) != 0)
                a->bad++;
            memcpy(tails_mac[i], want, wl);
            tails_maclen[i] = wl;
        }
    }
    a->left = tails_live("a message tail");
    /*
     * Messages left open, with the key cached and contexts given back;
     * scanned after each way, since the next hit takes (and so hides) the
     * context given back last.
     */
    for (how = tails_fams[a->m].kind == KCT_HMAC; how >= 0; how--) {
        for (r = 0; r < 3; r++)
            for (i = 0; i < TAIL_MSGS; i++)
                a->bad += !tails_unfinished(a->ctx, a->m, i, how);
        a->left += tails_live("a message tail");
    }
    return NULL;
}

static void test_message_tails(void)
{
    EVP_MAC *mac = EVP_MAC_fetch(kct_default(), "CMAC", NULL);
    EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[2];
    unsigned char out[16];
    size_t outl, m;
    int i;

    for (i = 0; i < TAIL_MSGS; i++) {
        memcpy(tails_msg[i], "KCMSG", 5);
        kct_fill(tails_msg[i] + 5, sizeof(tails_msg[i]) - 5, 0x7a11 + i);
    }
    memset(tails_maclen, 0, sizeof(tails_maclen));
    /* the scan sees a tail in a context still in use */
    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
                                            "AES-128-CBC", 0);
    p[1] = OSSL_PARAM_construct_end();
    CU_ASSERT_FATAL(c != NULL && EVP_MAC_init(c, keys[K_TAILS], 16, p)
                    && EVP_MAC_update(c, tails_msg[0], tails_len[0])
                    && EVP_MAC_final(c, out, &outl, sizeof(out)));
    CU_ASSERT_TRUE(tails_live(NULL) >= 1);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    CU_ASSERT_EQUAL(tails_live(NULL), 0);

    tails_fams_init();
    for (m = 0; m < n_tails_fams; m++) {
        struct tails_arg a = { kct_keycache(), m, 0, 0, 0 };
        uint64_t hits = kct_counter(KEYCACHE_PARAM_HITS);
        pthread_t t;

        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, tails_thread, &a), 0);
        pthread_join(t, NULL);
        CU_ASSERT_EQUAL(a.bad, 0);
        /* served from the cache, with contexts given back */
        CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_HITS) > hits);
        if (a.left != 0)
            fprintf(stderr, "\n  %s %s: %lu block(s) kept a message tail or MAC\n",
                    tails_fams[m].name, tails_fams[m].sub != NULL
                    ? tails_fams[m].sub_value : "", a.left);
        CU_ASSERT_EQUAL(a.left, 0);
    }
}

/*
 * A GCM context keyed again and again remembers its key (ctmpl.c's
 * rekey): gone once it is keyed with another, and at its free (the
 * wrapper is pooled, not freed).  Its first key, looked up (and maybe
 * cached), is not a watched one.  AES-256-GCM switched on, whatever
 * "auto" says on this version.
 */
static void test_rekey_forgets(void)
{
    static const unsigned char iv[12] = { 1 }, first[32] = { 2 };
    OSSL_LIB_CTX *on = kct_keycache_conf("aes_gcm = on\n");
    EVP_CIPHER *c = on != NULL ? EVP_CIPHER_fetch(on, "AES-256-GCM", NULL)
                               : NULL;
    EVP_CIPHER_CTX *cc = EVP_CIPHER_CTX_new();
    unsigned char out[sizeof(msg) + 16];
    int i, len, ok;

    CU_ASSERT_FATAL(c != NULL && cc != NULL);
    CU_ASSERT_STRING_EQUAL_FATAL(
        kct_provider_name(EVP_CIPHER_get0_provider(c)),
        KEYCACHE_PROVIDER_NAME);
    ok = EVP_EncryptInit_ex(cc, c, NULL, first, iv);
    for (i = 0; ok && i < 5; i++)
        ok = EVP_EncryptInit_ex(cc, NULL, NULL, keys[K_REKEY + (i == 4)], iv)
             && EVP_EncryptUpdate(cc, out, &len, msg, sizeof(msg))
             && EVP_EncryptFinal_ex(cc, out, &len);
    CU_ASSERT_TRUE(ok);
    /* the second key is held now, and the scan sees it; the first is gone */
    CU_ASSERT_TRUE(scan_live(K_REKEY + 1, K_REKEY + 2, 0) >= 1);
    CU_ASSERT_EQUAL(scan_live(K_REKEY, K_REKEY + 1, 1), 0);
    EVP_CIPHER_CTX_free(cc);
    CU_ASSERT_EQUAL(scan_live(K_REKEY, K_REKEY + 2, 1), 0);
    CU_ASSERT_EQUAL(violations(), 0);
    EVP_CIPHER_free(c);
    OSSL_LIB_CTX_free(on);
}

/*
 * A thread's keyed first GMAC template keeps its key for its copies'
 * look-ups (layer/tmpl.c, first_copy()): gone once it is keyed again, by
 * init or by a keyless init's "key", and at its free (the wrapper is
 * pooled, not freed).  Copied once only, so the key is never counted, nor
 * cached.  Each run on a new thread (its first contexts): 0 keyed again;
 * 1 freed; 2 a "key" given.
 */
static OSSL_LIB_CTX *held_ctx;

static void *held_thread(void *arg)
{
    EVP_MAC *mac = EVP_MAC_fetch(held_ctx, "GMAC", NULL);
    EVP_MAC_CTX *t, *c;
    OSSL_PARAM p[3], q[2];
    unsigned char iv[12] = { 7 }, other[32] = { 3 };
    unsigned char tag[32];
    size_t n;
    long bad = 0;
    int run = *(int *)arg, i;

    /*
     * a cache for the thread first (an HMAC key admitted), so that the
     * template's wrapper is pooled at its free, not wiped with it
     */
    for (i = 0; i < 8; i++)
        bad += EVP_Q_mac(held_ctx, "HMAC", NULL, "SHA256", NULL, other,
                         sizeof(other), iv, sizeof(iv), tag, sizeof(tag),
                         &n) == NULL;
    p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-GCM", 0);
    p[1] = OSSL_PARAM_construct_octet_string("iv", iv, sizeof(iv));
    p[2] = OSSL_PARAM_construct_end();
    q[0] = OSSL_PARAM_construct_octet_string("key", other, sizeof(other));
    q[1] = OSSL_PARAM_construct_end();
    t = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    if (t == NULL || !EVP_MAC_init(t, keys[K_HELD], 32, p)
        || (c = EVP_MAC_CTX_dup(t)) == NULL) {
        bad++;
    } else {
        EVP_MAC_CTX_free(c);
        /* held while the template has it: the scan sees it */
        bad += scan_live(K_HELD, K_HELD + 1, 0) == 0;
        if (run != 1)
            bad += !EVP_MAC_init(t, run == 0 ? other : NULL, run == 0 ? 32 : 0,
                                 run == 0 ? NULL : q)
                   || scan_live(K_HELD, K_HELD + 1, 1) != 0;
    }
    EVP_MAC_CTX_free(t);
    bad += scan_live(K_HELD, K_HELD + 1, 1) != 0;
    EVP_MAC_free(mac);
    OPENSSL_thread_stop();
    return (void *)bad;
}

static void test_first_held_forgets(void)
{
    pthread_t t;
    void *bad;
    int run;

    held_ctx = kct_keycache_conf("admit_after = 3\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(held_ctx);
    for (run = 0; run < 3; run++) {
        bad = (void *)1;
        CU_ASSERT_FATAL(pthread_create(&t, NULL, held_thread, &run) == 0);
        pthread_join(t, &bad);
        CU_ASSERT_PTR_NULL(bad);
    }
    CU_ASSERT_EQUAL(violations(), 0);
    OSSL_LIB_CTX_free(held_ctx);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("keyscan", suite_init, NULL);

    CU_add_test(s, "the scanner finds key bytes", test_scanner);
    CU_add_test(s, "eviction leaves no key bytes", test_eviction);
    CU_add_test(s, "thread exit leaves no key bytes", test_thread_exit);
    CU_add_test(s, "a thread's keys are freed outside OpenSSL's lock",
                test_thread_exit_unlocked);
    CU_add_test(s, "a thread's stop never waits for keycache's lock",
                test_thread_stop_never_waits);
    CU_add_test(s, "nor does another instance's",
                test_thread_stop_second_never_waits);
    CU_add_test(s, "OPENSSL_thread_stop() with keycache's lock taken",
                test_thread_stop_contended);
    CU_add_test(s, "nor with another instance's",
                test_thread_stop_second_contended);
    CU_add_test(s, "OPENSSL_thread_stop() then exit leaves no key bytes",
                test_thread_stop_then_exit);
    CU_add_test(s, "teardown leaves no key bytes", test_teardown);
    CU_add_test(s, "a million keys stay bounded", test_bounded);
    CU_add_test(s, "given-back contexts keep no message bytes",
                test_message_tails);
    CU_add_test(s, "a re-keyed context forgets its key", test_rekey_forgets);
    CU_add_test(s, "a keyed first GMAC template forgets its key",
                test_first_held_forgets);
    CU_add_test(s, "idle_ttl sweeps every family's entries", test_idle_sweep);
}

int main(int argc, char **argv)
{
    unsigned long kc, other;
    int rc;

    /* before anything else allocates through OpenSSL */
    if (!kch_install())
        return 1;
    rc = kct_main(argc, argv, add_suites);
    /* kct_main freed its contexts, warm caches included: scan that too */
    kch_freed(&kc, &other);
    if (kc != 0) {
        fprintf(stderr, "%lu keycache block(s) freed holding key bytes\n",
                kc);
        rc = 1;
    }
    if (other > planted)
        fprintf(stderr, "note: %lu libcrypto block(s) freed holding key"
                " bytes (not keycache's)\n", other - planted);
    return rc;
}
