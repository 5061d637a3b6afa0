/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admission never starves a key.
 *
 * A key is cached at its admit_after-th keyed init on a thread; until then
 * the thread keeps a fingerprint of it, under a secret hash key drawn at
 * random, in its small record (up to 8 keys) and then in its cache's
 * admission filter, which takes the record's over.  Keys used in rotation
 * - a key ring, multi-tenant JWT verification - must all get in, whatever
 * their fingerprints: a filter whose slots overwrite each other let two
 * keys that share one evict each other's count forever, in 5 to 11 of 50
 * random sets of 3 to 10 keys.  Here many random sets of 3, 5 and 10 keys
 * each run on a new thread (a new record, then a new cache), under the
 * deployed admission policy, after the thread's first contexts (never
 * counted: the registry's "first"), for ROUNDS rounds of EVP_Q_mac: every
 * key must hit in every round after its admission (ROUNDS - admit_after
 * hits each), and every MAC must be the default provider's.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "kc_test.h"
#include "keycache.h"

#define SETS 50
#define ROUNDS 7
#define ADMIT_AFTER 3            /* the deployed default (README) */
#define MAXKEYS 10
#define FIRSTS 3                 /* layer/layer.h's KC_APP_FIRST */

static OSSL_LIB_CTX *deployed;

typedef struct {
    int nkeys;
    int bad_macs;
} SET;

/* EVP_Q_mac HMAC-SHA256 of msg under key, deployed and default: 1 if alike */
static int same_qmac(const unsigned char key[32], const char *msg)
{
    unsigned char got[32], want[32];
    size_t len, wlen;

    return EVP_Q_mac(deployed, "HMAC", NULL, "SHA256", NULL, key, 32,
                     (const unsigned char *)msg, strlen(msg), got,
                     sizeof(got), &len) != NULL
           && EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL, key, 32,
                        (const unsigned char *)msg, strlen(msg), want,
                        sizeof(want), &wlen) != NULL
           && len == wlen && memcmp(got, want, len) == 0;
}

static void *rotate(void *arg)
{
    SET *set = arg;
    unsigned char keys[MAXKEYS][32], first[32];
    int r, k;

    if (RAND_bytes(&keys[0][0], sizeof(keys)) != 1) {
        set->bad_macs++;
        return NULL;
    }
    /* the thread's first contexts, keyed with keys of their own */
    for (k = 0; k < FIRSTS; k++) {
        memset(first, 0xf0 + k, sizeof(first));
        set->bad_macs += !same_qmac(first, "first");
    }
    for (r = 0; r < ROUNDS; r++)
        for (k = 0; k < set->nkeys; k++)
            set->bad_macs += !same_qmac(keys[k], "rotation");
    return NULL;
}

static void test_rotation(void)
{
    static const int sizes[] = { 3, 5, 10 };
    int i, n, starved = 0, sets = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(deployed);
    for (i = 0; i < 3; i++) {
        for (n = 0; n < SETS; n++) {
            SET set = { sizes[i], 0 };
            uint64_t h0 = kct_counter_in(deployed, KEYCACHE_PARAM_HITS), h1;
            pthread_t t;

            CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, rotate, &set), 0);
            pthread_join(t, NULL);
            h1 = kct_counter_in(deployed, KEYCACHE_PARAM_HITS);
            CU_ASSERT_EQUAL(set.bad_macs, 0);
            sets++;
            if (h1 - h0 != (uint64_t)sizes[i] * (ROUNDS - ADMIT_AFTER)) {
                starved++;
                fprintf(stderr, "\n%d keys in rotation: %llu hits, want %d",
                        sizes[i], (unsigned long long)(h1 - h0),
                        sizes[i] * (ROUNDS - ADMIT_AFTER));
            }
        }
    }
    if (starved != 0)
        fprintf(stderr, "\n%d of %d key sets had a key that missed after "
                "its admission was due\n", starved, sets);
    CU_ASSERT_EQUAL(starved, 0);
}

/* HMAC-SHA256 of msg on ctx, keyed with key (compared with the default's) */
static int mac_on(EVP_MAC_CTX *ctx, const unsigned char *key)
{
    static const unsigned char msg[] = "re-keyed";
    unsigned char got[32], want[32];
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    size_t n = 0, m = 0;

    p[0] = OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0);
    return ctx != NULL && EVP_MAC_init(ctx, key, 32, p)
           && EVP_MAC_update(ctx, msg, sizeof(msg))
           && EVP_MAC_final(ctx, got, &n, sizeof(got))
           && EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL, key, 32,
                        msg, sizeof(msg), want, sizeof(want), &m) != NULL
           && n == m && memcmp(got, want, n) == 0;
}

typedef struct {
    int warm;                   /* keys used first: 9, past the record */
    int bad_macs;
    uint64_t entries[3];        /* before, after two contexts, after three */
} REKEY;

static EVP_MAC_CTX *new_hmac(void)
{
    EVP_MAC *mac = EVP_MAC_fetch(deployed, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;

    EVP_MAC_free(mac);
    return ctx;
}

static void *rekey_thread(void *arg)
{
    REKEY *r = arg;
    unsigned char warm[9][32], key[32];
    EVP_MAC_CTX *ctx;
    int i;

    if (RAND_bytes(&warm[0][0], sizeof(warm)) != 1
        || RAND_bytes(key, sizeof(key)) != 1) {
        r->bad_macs++;
        return NULL;
    }
    /* more keys than the thread's record holds: its cache counts then */
    for (i = 0; i < r->warm; i++) {
        ctx = new_hmac();
        r->bad_macs += !mac_on(ctx, warm[i]);
        EVP_MAC_CTX_free(ctx);
    }
    r->entries[0] = kct_counter_in(deployed, KEYCACHE_PARAM_ENTRIES);
    /* one context keyed three times with the key, then a second once */
    ctx = new_hmac();
    for (i = 0; i < 3; i++)
        r->bad_macs += !mac_on(ctx, key);
    EVP_MAC_CTX_free(ctx);
    ctx = new_hmac();
    r->bad_macs += !mac_on(ctx, key);
    EVP_MAC_CTX_free(ctx);
    r->entries[1] = kct_counter_in(deployed, KEYCACHE_PARAM_ENTRIES);
    /* a third context: the key's third use */
    ctx = new_hmac();
    r->bad_macs += !mac_on(ctx, key);
    EVP_MAC_CTX_free(ctx);
    r->entries[2] = kct_counter_in(deployed, KEYCACHE_PARAM_ENTRIES);
    OPENSSL_thread_stop();
    return NULL;
}

/*
 * Re-keying one context with a key counts once towards its admission
 * (docs/keys.md): after one context keyed with it three times and a
 * second once, the key has two uses and is not cached; a third context
 * caches it.  The MACs are the default's throughout.
 */
static void test_rekeyed_counts_once(void)
{
    static const int warm[2] = { 0, 9 };
    REKEY r;
    pthread_t t;
    int i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(deployed);
    /* counted in the thread's small record, then in its cache */
    for (i = 0; i < 2; i++) {
        memset(&r, 0, sizeof(r));
        r.warm = warm[i];
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, rekey_thread, &r), 0);
        pthread_join(t, NULL);
        CU_ASSERT_EQUAL(r.bad_macs, 0);
        if (r.entries[1] != r.entries[0] || r.entries[2] != r.entries[0] + 1)
            fprintf(stderr, "\n  %d keys first: entries %llu, then %llu, "
                    "then %llu\n", r.warm, (unsigned long long)r.entries[0],
                    (unsigned long long)r.entries[1],
                    (unsigned long long)r.entries[2]);
        CU_ASSERT_EQUAL(r.entries[1], r.entries[0]);
        CU_ASSERT_EQUAL(r.entries[2], r.entries[0] + 1);
    }
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("admission", NULL, NULL);

    /* the deployed policy: the test config admits at the first use */
    deployed = kct_keycache_conf("-" KEYCACHE_CONF_ADMIT_AFTER "\n");
    CU_add_test(s, "keys in rotation are all admitted, whatever the hash key",
                test_rotation);
    CU_add_test(s, "a context re-keyed with a key counts it once",
                test_rekeyed_counts_once);
}

int main(int argc, char **argv)
{
    int rc;

    rc = kct_main(argc, argv, add_suites);
    OSSL_LIB_CTX_free(deployed);
    return rc;
}
