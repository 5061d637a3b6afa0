/*
 * Key material and memory bounds, seen through OpenSSL's allocator.
 *
 * main() installs allocator hooks (CRYPTO_set_mem_functions) before any
 * other OpenSSL call.  Every block remembers its size and the source file
 * that allocated it: the file argument OPENSSL_malloc passes names the
 * caller, so blocks allocated by keycache's own code carry a path under
 * provider/.  When a block is freed or reallocated it is scanned for the
 * test keys' bytes; a hit in a keycache block is a violation (key material
 * left behind in freed memory), a hit in a libcrypto block is reported only.
 * Live keycache blocks are scanned too, for keys that should be gone (for
 * instance evicted ones: a shorter key reusing a slot would leave the tail of
 * an uncleansed longer key behind).
 *
 * Phases: eviction (a cache_size = 4 configuration), thread exit, library
 * context teardown; then one million distinct HMAC keys through one thread,
 * after which the entry count and the number of live allocations must not
 * have grown beyond a small constant.
 */
#define _GNU_SOURCE             /* memmem */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "keycache.h"

/* ---------------------------------------------------------------------- */
/* Allocator hooks                                                        */

typedef struct blk_st {
    struct blk_st *prev, *next;
    size_t size;
    const char *file;          /* allocating source file */
    int line;
    int keycache;              /* allocated by provider/ code */
} BLK;

/* keeps the user's block 16-byte aligned */
#define HDR ((sizeof(BLK) + 15) & ~(size_t)15)

#define MAXKEYS 32
#define KEYLEN 32

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static BLK *live;                      /* all live blocks */
static size_t live_blocks, live_bytes;
static unsigned char keys[MAXKEYS][KEYLEN];
static int nkeys;                      /* keys the free-time scan looks for */
static unsigned long kc_violations, lib_violations;

static const char *const kc_sources[] = {
    "cache.c", "hmac.c", "aes_gcm.c", "keycache_prov.c", "inner.c"
};

/* Was this allocation made by keycache's own sources? */
static int keycache_file(const char *file)
{
    const char *base;
    size_t i;

    if (file == NULL)
        return 0;
    /* libcrypto has a crypto/hmac/hmac.c too: insist on a provider/ dir */
    if (strncmp(file, "provider/", 9) == 0)
        base = file + 9;
    else if ((base = strstr(file, "/provider/")) != NULL)
        base += 10;
    else
        return 0;
    for (i = 0; i < sizeof(kc_sources) / sizeof(kc_sources[0]); i++)
        if (strcmp(base, kc_sources[i]) == 0)
            return 1;
    return 0;
}

/* Index of a test key (either half of it) found in p[0..n), else -1. */
static int find_key(const unsigned char *p, size_t n, int from, int to)
{
    int k, h;

    for (k = from; k < to; k++)
        for (h = 0; h < KEYLEN; h += KEYLEN / 2)
            if (memmem(p, n, keys[k] + h, KEYLEN / 2) != NULL)
                return k;
    return -1;
}

/* Scan a block that is about to be freed (lock held). */
static void scan_dying(const BLK *b, const char *file, int line)
{
    int k = find_key((const unsigned char *)b + HDR, b->size, 0, nkeys);

    if (k < 0)
        return;
    if (b->keycache)
        kc_violations++;
    else
        lib_violations++;
    fprintf(stderr, "\n  %s: key %d in a %zu-byte block from %s:%d,"
            " freed at %s:%d\n",
            b->keycache ? "VIOLATION" : "note (not keycache's)", k, b->size,
            b->file != NULL ? b->file : "?", b->line,
            file != NULL ? file : "?", line);
}

static void link_blk(BLK *b)
{
    b->prev = NULL;
    b->next = live;
    if (live != NULL)
        live->prev = b;
    live = b;
    live_blocks++;
    live_bytes += b->size;
}

static void unlink_blk(BLK *b)
{
    if (b->prev != NULL)
        b->prev->next = b->next;
    else
        live = b->next;
    if (b->next != NULL)
        b->next->prev = b->prev;
    live_blocks--;
    live_bytes -= b->size;
}

static void *hook_malloc(size_t num, const char *file, int line)
{
    BLK *b;

    if (num == 0)
        return NULL;         /* as CRYPTO_malloc does */
    if ((b = malloc(HDR + num)) == NULL)
        return NULL;
    b->size = num;
    b->file = file;
    b->line = line;
    b->keycache = keycache_file(file);
    pthread_mutex_lock(&mem_lock);
    link_blk(b);
    pthread_mutex_unlock(&mem_lock);
    return (unsigned char *)b + HDR;
}

static void hook_free(void *p, const char *file, int line)
{
    BLK *b;

    if (p == NULL)
        return;
    b = (BLK *)((unsigned char *)p - HDR);
    pthread_mutex_lock(&mem_lock);
    scan_dying(b, file, line);
    unlink_blk(b);
    pthread_mutex_unlock(&mem_lock);
    free(b);
}

/* Always moves, so the old block is scanned like any freed one. */
static void *hook_realloc(void *p, size_t num, const char *file, int line)
{
    BLK *old;
    unsigned char *q;

    if (p == NULL)
        return hook_malloc(num, file, line);
    if (num == 0) {
        hook_free(p, file, line);
        return NULL;
    }
    old = (BLK *)((unsigned char *)p - HDR);
    if ((q = hook_malloc(num, file, line)) == NULL)
        return NULL;
    /* a block keycache allocated stays keycache's */
    ((BLK *)(q - HDR))->keycache |= old->keycache;
    memcpy(q, p, old->size < num ? old->size : num);
    hook_free(p, file, line);
    return q;
}

/* Live keycache blocks holding any of keys[from..to); |say|: print them. */
static unsigned long scan_live(int from, int to, int say)
{
    unsigned long hits = 0;
    const BLK *b;

    pthread_mutex_lock(&mem_lock);
    for (b = live; b != NULL; b = b->next) {
        int k;

        if (!b->keycache)
            continue;
        k = find_key((const unsigned char *)b + HDR, b->size, from, to);
        if (k < 0)
            continue;
        hits++;
        if (say)
            fprintf(stderr, "\n  LIVE: key %d still in a %zu-byte block"
                    " from %s:%d\n", k, b->size, b->file, b->line);
    }
    pthread_mutex_unlock(&mem_lock);
    return hits;
}

static unsigned long violations(void)
{
    unsigned long v;

    pthread_mutex_lock(&mem_lock);
    v = kc_violations;
    pthread_mutex_unlock(&mem_lock);
    return v;
}

static void mem_counts(size_t *blocks, size_t *bytes)
{
    pthread_mutex_lock(&mem_lock);
    *blocks = live_blocks;
    *bytes = live_bytes;
    pthread_mutex_unlock(&mem_lock);
}

/* Register keys[0..n) for the free-time scan. */
static void set_scan_keys(int n)
{
    pthread_mutex_lock(&mem_lock);
    nkeys = n;
    pthread_mutex_unlock(&mem_lock);
}

/* ---------------------------------------------------------------------- */
/* Configurations and counters                                            */

/* The build config with cache_size replaced, loaded into a new context. */
static OSSL_LIB_CTX *ctx_with_cache_size(const char *size)
{
    char path[] = "/tmp/kc-keyscan-XXXXXX", line[1024];
    OSSL_LIB_CTX *ctx = NULL;
    FILE *in, *out;
    int fd, ok;

    if ((in = fopen(kct_conf_path(), "r")) == NULL)
        return NULL;
    if ((fd = mkstemp(path)) < 0 || (out = fdopen(fd, "w")) == NULL) {
        fclose(in);
        return NULL;
    }
    while (fgets(line, sizeof(line), in) != NULL) {
        if (strncmp(line, "cache_size", 10) == 0)
            fprintf(out, "cache_size = %s\n", size);
        else
            fputs(line, out);
    }
    fclose(in);
    ok = fclose(out) == 0 && (ctx = OSSL_LIB_CTX_new()) != NULL
         && OSSL_LIB_CTX_load_config(ctx, path)
         && OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME);
    unlink(path);
    if (!ok) {
        ERR_print_errors_fp(stderr);
        OSSL_LIB_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* A keycache counter of the provider inside |ctx|. */
static uint64_t counter(OSSL_LIB_CTX *ctx, const char *name)
{
    return kct_counter_in(ctx, name);
}

/* ---------------------------------------------------------------------- */
/* Operations, each checked against the default provider                  */

static const unsigned char msg[] = "key material scan message";
static const unsigned char iv[12] = "keyscan iv!";

static int hmac(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                unsigned char out[32])
{
    size_t outlen = 0;

    return EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL, key, keylen, msg,
                     sizeof(msg), out, 32, &outlen) != NULL
           && outlen == 32;
}

/* AES-GCM with a fresh context; key length picks the variant. */
static int seal(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                unsigned char out[sizeof(msg) + 16])
{
    static const char *const names[] = {
        "AES-128-GCM", "AES-192-GCM", "AES-256-GCM"
    };
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(ctx, names[(keylen - 16) / 8],
                                          NULL);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0, ok;

    ok = cipher != NULL && c != NULL
         && EVP_EncryptInit_ex2(c, cipher, key, iv, NULL)
         && EVP_EncryptUpdate(c, out, &len, msg, sizeof(msg))
         && EVP_EncryptFinal_ex(c, out + len, &fin)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                out + sizeof(msg)) > 0;
    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(cipher);
    return ok;
}

/* HMAC and seal with |key| on |ctx| equal the default's: 0 mismatches. */
static int use_key(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t len,
                   int do_mac, int do_gcm)
{
    unsigned char got[sizeof(msg) + 16], want[sizeof(msg) + 16];
    int bad = 0;

    if (do_mac && (!hmac(kct_default(), key, len, want)
                   || !hmac(ctx, key, len, got) || memcmp(got, want, 32) != 0))
        bad++;
    if (do_gcm && (!seal(kct_default(), key, len, want)
                   || !seal(ctx, key, len, got)
                   || memcmp(got, want, sizeof(got)) != 0))
        bad++;
    return bad;
}

/* ---------------------------------------------------------------------- */
/* Phases                                                                 */

/* key roles: 0-3 HMAC evicted, 4-7 GCM evicted, 8-11 thread, 12-15 teardown */
#define K_HMAC_EV 0
#define K_GCM_EV 4
#define K_THREAD 8
#define K_TEARDOWN 12
#define K_USED 16

static int suite_init(void)
{
    int k;

    for (k = 0; k < K_USED; k++) {
        /* distinctive: a marker no real data has, then pseudo-random */
        kct_fill(keys[k], KEYLEN, 0xC0FFEE00u + (uint32_t)k);
        memcpy(keys[k], "KCKEY", 5);
        keys[k][5] = (unsigned char)k;
    }
    set_scan_keys(K_USED);
    return 0;
}

/* The scanner itself: a key left in a freed block is seen, half or whole. */
static void test_scanner(void)
{
    unsigned char *p = OPENSSL_malloc(100);
    unsigned long before;

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    memset(p, 0, 100);
    /* the second half of key 3 at an odd offset */
    memcpy(p + 37, keys[3] + KEYLEN / 2, KEYLEN / 2);
    pthread_mutex_lock(&mem_lock);
    before = lib_violations;
    pthread_mutex_unlock(&mem_lock);
    OPENSSL_free(p);
    pthread_mutex_lock(&mem_lock);
    /* allocated by this test, not keycache: counted as libcrypto's */
    CU_ASSERT_EQUAL(lib_violations, before + 1);
    lib_violations = before;
    pthread_mutex_unlock(&mem_lock);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_TRUE(keycache_file("/work/main/provider/cache.c"));
    CU_ASSERT_TRUE(keycache_file("provider/aes_gcm.c"));
    CU_ASSERT_FALSE(keycache_file("../crypto/hmac/hmac.c"));
    CU_ASSERT_FALSE(keycache_file("providers/implementations/macs/hmac.c"));
}

static void test_eviction(void)
{
    OSSL_LIB_CTX *ctx = ctx_with_cache_size("4");
    unsigned char shortkey[16];
    uint64_t ev;
    int i, bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL(counter(ctx, KEYCACHE_PARAM_CACHE_SIZE), 4);

    /* four 32-byte HMAC keys fill the cache (used twice: cached) */
    for (i = 0; i < 4; i++)
        bad += use_key(ctx, keys[K_HMAC_EV + i], KEYLEN, 1, 0)
               + use_key(ctx, keys[K_HMAC_EV + i], KEYLEN, 1, 0);
    CU_ASSERT_EQUAL(counter(ctx, KEYCACHE_PARAM_ENTRIES), 4);
    /* the keys are in the cache right now: the live scan does see them */
    CU_ASSERT_TRUE(scan_live(K_HMAC_EV, K_HMAC_EV + 4, 0) >= 1);

    /* shorter keys take every slot: 32-byte keys must leave no tail */
    ev = counter(ctx, KEYCACHE_PARAM_EVICTIONS);
    for (i = 0; i < 6; i++) {
        kct_fill(shortkey, sizeof(shortkey), 0x5000 + (uint32_t)i);
        bad += use_key(ctx, shortkey, sizeof(shortkey), 1, 0);
    }
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_EVICTIONS) >= ev + 4);
    CU_ASSERT_EQUAL(scan_live(K_HMAC_EV, K_HMAC_EV + 4, 1), 0);

    /* the same for AES-256-GCM templates evicted by AES-128-GCM ones */
    for (i = 0; i < 4; i++)
        bad += use_key(ctx, keys[K_GCM_EV + i], KEYLEN, 0, 1)
               + use_key(ctx, keys[K_GCM_EV + i], KEYLEN, 0, 1);
    ev = counter(ctx, KEYCACHE_PARAM_EVICTIONS);
    for (i = 0; i < 6; i++) {
        kct_fill(shortkey, sizeof(shortkey), 0x6000 + (uint32_t)i);
        bad += use_key(ctx, shortkey, sizeof(shortkey), 0, 1);
    }
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_EVICTIONS) >= ev + 4);
    CU_ASSERT_EQUAL(scan_live(K_GCM_EV, K_GCM_EV + 4, 1), 0);

    /* evicted keys still compute correctly */
    for (i = 0; i < 4; i++)
        bad += use_key(ctx, keys[K_HMAC_EV + i], KEYLEN, 1, 1);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(violations(), 0);
    OSSL_LIB_CTX_free(ctx);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(scan_live(0, K_USED, 1), 0);
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
        a->bad += use_key(kct_keycache(), keys[K_THREAD + i], KEYLEN, 1, 1)
                  + use_key(kct_keycache(), keys[K_THREAD + i], KEYLEN, 1, 1);
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
    /* the thread had 8 entries (4 HMAC, 4 GCM) and took them along */
    CU_ASSERT_EQUAL(a.entries, before + 8);
    CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_ENTRIES), before);
    CU_ASSERT_EQUAL(violations(), 0);
    CU_ASSERT_EQUAL(scan_live(K_THREAD, K_THREAD + 4, 1), 0);
}

static void *teardown_thread(void *varg)
{
    OSSL_LIB_CTX *ctx = varg;

    /* warm this thread's cache too, then exit before the teardown */
    if (use_key(ctx, keys[K_TEARDOWN], KEYLEN, 1, 1) != 0)
        return varg;
    return NULL;
}

static void test_teardown(void)
{
    OSSL_LIB_CTX *ctx = ctx_with_cache_size("64");
    pthread_t t;
    void *tret = NULL;
    int i, bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (i = 0; i < 4; i++)
        bad += use_key(ctx, keys[K_TEARDOWN + i], KEYLEN, 1, 1)
               + use_key(ctx, keys[K_TEARDOWN + i], KEYLEN, 1, 1);
    CU_ASSERT_EQUAL(pthread_create(&t, NULL, teardown_thread, ctx), 0);
    pthread_join(t, &tret);
    CU_ASSERT_PTR_NULL(tret);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(counter(ctx, KEYCACHE_PARAM_ENTRIES), 8);
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
    unsigned char out[32], want[32];
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
                && (!hmac(kct_default(), b->key, sizeof(b->key), want)
                    || memcmp(out, want, sizeof(want)) != 0))
                b->bad++;
        }
        if (i % 1000 == 0) {
            mem_counts(&blocks, &bytes);
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
    uint64_t size = counter(ctx, KEYCACHE_PARAM_CACHE_SIZE);
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
    set_scan_keys(0);

    /* warm-up: both patterns once, then take the baseline */
    bounded_run(&b, 0, WARMUP / 2, 1, 0);
    bounded_run(&b, WARMUP / 2, WARMUP / 2, 2, 1);
    mem_counts(&blocks0, &bytes0);
    b.max_blocks = blocks0;
    b.max_bytes = bytes0;

    misses = counter(ctx, KEYCACHE_PARAM_MISSES);
    pass = counter(ctx, KEYCACHE_PARAM_PASSTHROUGH);
    hits = counter(ctx, KEYCACHE_PARAM_HITS);
    bounded_run(&b, WARMUP, half - WARMUP, 1, 0);
    /* every key missed or, with the cache bypassed, passed through */
    CU_ASSERT_EQUAL(counter(ctx, KEYCACHE_PARAM_HITS), hits);
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_MISSES) - misses
                   + counter(ctx, KEYCACHE_PARAM_PASSTHROUGH) - pass
                   >= (uint64_t)(half - WARMUP));
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_ENTRIES) <= size);

    misses = counter(ctx, KEYCACHE_PARAM_MISSES);
    hits = counter(ctx, KEYCACHE_PARAM_HITS);
    ev = counter(ctx, KEYCACHE_PARAM_EVICTIONS);
    bounded_run(&b, half, BOUNDED_KEYS - half, 2, 1);
    /* here the cache was in use: each key missed, hit, and was evicted */
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_MISSES) - misses
                   >= (uint64_t)(BOUNDED_KEYS - half) / 2);
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_HITS) - hits
                   >= (uint64_t)(BOUNDED_KEYS - half) / 2);
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_EVICTIONS) - ev
                   >= (uint64_t)(BOUNDED_KEYS - half) / 2 - size);
    CU_ASSERT_TRUE(counter(ctx, KEYCACHE_PARAM_ENTRIES) <= size);

    mem_counts(&blocks, &bytes);
    EVP_MAC_free(b.mac);
    set_scan_keys(K_USED);
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

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("keyscan", suite_init, NULL);

    CU_add_test(s, "the scanner finds key bytes", test_scanner);
    CU_add_test(s, "eviction leaves no key bytes", test_eviction);
    CU_add_test(s, "thread exit leaves no key bytes", test_thread_exit);
    CU_add_test(s, "teardown leaves no key bytes", test_teardown);
    CU_add_test(s, "a million keys stay bounded", test_bounded);
}

int main(int argc, char **argv)
{
    int rc;

    /* before anything else allocates through OpenSSL */
    if (!CRYPTO_set_mem_functions(hook_malloc, hook_realloc, hook_free)) {
        fprintf(stderr, "cannot install allocator hooks\n");
        return 1;
    }
    rc = kct_main(argc, argv, add_suites);
    /* kct_main freed its contexts, warm caches included: scan that too */
    if (violations() != 0) {
        fprintf(stderr, "%lu keycache block(s) freed holding key bytes\n",
                violations());
        rc = 1;
    }
    if (lib_violations != 0)
        fprintf(stderr, "note: %lu libcrypto block(s) freed holding key"
                " bytes (not keycache's)\n", lib_violations);
    return rc;
}
