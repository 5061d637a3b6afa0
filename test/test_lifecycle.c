/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cache lifecycle: a thread's cache is released when the thread ends, the
 * cache stays within its bound, and provider teardown with warm caches
 * releases everything (the ctest wrapper also runs this under valgrind).
 */
#include <pthread.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/err.h>

#include "kc_test.h"
#include "keycache.h"

static const unsigned char msg[] = "lifecycle message";

/* HMAC-SHA256 with the thread's default lib ctx; 1 if it equals |want|. */
static int mac_matches(const unsigned char *key, size_t keylen,
                       const unsigned char *want)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t outlen = 0;

    if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, keylen, msg,
                  sizeof(msg), out, sizeof(out), &outlen) == NULL)
        return 0;
    return outlen == 32 && memcmp(out, want, 32) == 0;
}

static void reference(const unsigned char *key, size_t keylen,
                      unsigned char *out)
{
    size_t outlen;

    CU_ASSERT_PTR_NOT_NULL_FATAL(EVP_Q_mac(kct_default(), "HMAC", NULL,
                                           "SHA256", NULL, key, keylen, msg,
                                           sizeof(msg), out, 32, &outlen));
}

struct warm_arg {
    int keys;
    int ok;
};

static void *warm_thread(void *varg)
{
    struct warm_arg *a = varg;
    unsigned char key[32], want[32];
    int i;

    kct_use(kct_keycache());
    a->ok = 1;
    for (i = 0; i < a->keys; i++) {
        kct_fill(key, sizeof(key), (uint32_t)i + 1000);
        /* the default-only ctx gives the reference */
        {
            size_t outlen;

            if (EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL, key,
                          sizeof(key), msg, sizeof(msg), want, 32,
                          &outlen) == NULL)
                a->ok = 0;
        }
        if (!mac_matches(key, sizeof(key), want)
            || !mac_matches(key, sizeof(key), want))
            a->ok = 0;
    }
    kct_use(NULL);
    return NULL;
}

static void test_thread_exit_releases_cache(void)
{
    uint64_t before = kct_counter(KEYCACHE_PARAM_ENTRIES);
    uint64_t hits = kct_counter(KEYCACHE_PARAM_HITS);
    pthread_t t[8];
    struct warm_arg a[8];
    int i;

    for (i = 0; i < 8; i++) {
        a[i].keys = 10;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, warm_thread, &a[i]), 0);
    }
    for (i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT_TRUE(a[i].ok);
    }
    /* each thread hit its own cache, and took its entries with it */
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_HITS) >= hits + 80);
    CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_ENTRIES), before);
}

static void test_many_short_threads(void)
{
    uint64_t before = kct_counter(KEYCACHE_PARAM_ENTRIES);
    int i;

    for (i = 0; i < 1000; i++) {
        pthread_t t;
        struct warm_arg a = { 2, 0 };

        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, warm_thread, &a), 0);
        pthread_join(t, NULL);
        CU_ASSERT_TRUE(a.ok);
    }
    CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_ENTRIES), before);
}

static void test_cache_is_bounded(void)
{
    uint64_t size = kct_counter(KEYCACHE_PARAM_CACHE_SIZE);
    uint64_t ev = kct_counter(KEYCACHE_PARAM_EVICTIONS)
                  + kct_counter(KEYCACHE_PARAM_PASSTHROUGH);
    unsigned char key[16], want[32];
    int i, n = (int)size * 4;

    CU_ASSERT_TRUE_FATAL(size > 0 && size < 100000);
    kct_use(kct_keycache());
    for (i = 0; i < n; i++) {
        kct_fill(key, sizeof(key), (uint32_t)i + 77);
        reference(key, sizeof(key), want);
        CU_ASSERT_TRUE(mac_matches(key, sizeof(key), want));
    }
    /*
     * Only this thread is running: its cache holds at most cache_size, and
     * every key beyond that either evicted an entry or, once the hit rate
     * had collapsed, bypassed the cache.
     */
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_ENTRIES) <= size);
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_EVICTIONS)
                   + kct_counter(KEYCACHE_PARAM_PASSTHROUGH)
                   >= ev + (uint64_t)(n - size));
    /* and the oldest keys, long evicted, still compute correctly */
    for (i = 0; i < 4; i++) {
        kct_fill(key, sizeof(key), (uint32_t)i + 77);
        reference(key, sizeof(key), want);
        CU_ASSERT_TRUE(mac_matches(key, sizeof(key), want));
    }
    kct_use(NULL);
}

/* A library context with warm caches, freed while a thread still lives. */
static void *idle_thread(void *varg)
{
    OSSL_LIB_CTX *ctx = varg;
    unsigned char out[32];
    size_t outlen;

    EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL, "k", 1, msg, sizeof(msg),
              out, sizeof(out), &outlen);
    return NULL;
}

static void test_libctx_free_with_warm_cache(void)
{
    int round;

    for (round = 0; round < 20; round++) {
        OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();
        unsigned char out[32], want[32];
        size_t outlen;
        pthread_t t;

        CU_ASSERT_TRUE_FATAL(OSSL_LIB_CTX_load_config(ctx, kct_conf_path()));
        reference((const unsigned char *)"k", 1, want);
        CU_ASSERT_PTR_NOT_NULL(EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL,
                                         "k", 1, msg, sizeof(msg), out,
                                         sizeof(out), &outlen));
        CU_ASSERT_EQUAL(memcmp(out, want, 32), 0);
        CU_ASSERT_EQUAL(pthread_create(&t, NULL, idle_thread, ctx), 0);
        pthread_join(t, NULL);
        /* this thread's cache is still warm: teardown must release it */
        OSSL_LIB_CTX_free(ctx);
    }
}

/*
 * Two library contexts with keycache each, used in turns on one thread:
 * each instance counts its own hits in its own cache.  Then one is freed
 * and the other goes on (a freed instance's caches are never reached).
 */
static void test_two_instances_one_thread(void)
{
    OSSL_LIB_CTX *ctx[2] = { OSSL_LIB_CTX_new(), OSSL_LIB_CTX_new() };
    unsigned char out[32], want[32];
    size_t outlen;
    int i, round, k;

    CU_ASSERT_TRUE_FATAL(ctx[0] != NULL && ctx[1] != NULL);
    CU_ASSERT_TRUE_FATAL(OSSL_LIB_CTX_load_config(ctx[0], kct_conf_path()));
    CU_ASSERT_TRUE_FATAL(OSSL_LIB_CTX_load_config(ctx[1], kct_conf_path()));
    reference((const unsigned char *)"two", 3, want);
    for (round = 0; round < 3; round++) {
        for (k = 0; k < 2; k++) {
            uint64_t mine = kct_counter_in(ctx[k], KEYCACHE_PARAM_HITS);
            uint64_t other = kct_counter_in(ctx[1 - k], KEYCACHE_PARAM_HITS);

            for (i = 0; i < 5; i++) {
                CU_ASSERT_PTR_NOT_NULL(EVP_Q_mac(ctx[k], "HMAC", NULL,
                                                 "SHA256", NULL, "two", 3,
                                                 msg, sizeof(msg), out,
                                                 sizeof(out), &outlen));
                CU_ASSERT_EQUAL(memcmp(out, want, 32), 0);
            }
            CU_ASSERT(kct_counter_in(ctx[k], KEYCACHE_PARAM_HITS) > mine);
            CU_ASSERT_EQUAL(kct_counter_in(ctx[1 - k], KEYCACHE_PARAM_HITS),
                            other);
        }
    }
    OSSL_LIB_CTX_free(ctx[0]);
    for (i = 0; i < 5; i++) {
        CU_ASSERT_PTR_NOT_NULL(EVP_Q_mac(ctx[1], "HMAC", NULL, "SHA256",
                                         NULL, "two", 3, msg, sizeof(msg),
                                         out, sizeof(out), &outlen));
        CU_ASSERT_EQUAL(memcmp(out, want, 32), 0);
    }
    OSSL_LIB_CTX_free(ctx[1]);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("lifecycle", NULL, NULL);

    CU_add_test(s, "thread exit releases its cache",
                test_thread_exit_releases_cache);
    CU_add_test(s, "1,000 short-lived threads", test_many_short_threads);
    CU_add_test(s, "cache stays at its bound", test_cache_is_bounded);
    CU_add_test(s, "lib ctx freed with warm caches",
                test_libctx_free_with_warm_cache);
    CU_add_test(s, "two instances in turns on one thread",
                test_two_instances_one_thread);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
