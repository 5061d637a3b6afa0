/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An HMAC key is admitted without a copy of its context.
 *
 * At admission keycache adds the key's entry without a template: the
 * template is the admitting context itself, restarted when it is given
 * back (hmac.c).  Until then the key misses, and the next context keyed
 * with it gives the entry a copy of its own just-keyed context.  Here
 * (keycache-test.cnf: admit_after = 1), with the admitting context kept
 * open, or handed to another thread and freed there (so never given
 * back): the context keyed next misses, the one after hits, and so does
 * every one after the admitting context is gone; every MAC, the admitting
 * context's included, is the default provider's.
 */
#include <pthread.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "kc_test.h"
#include "keycache.h"

static const unsigned char msg[] = "pending entry";

static EVP_MAC_CTX *keyed(OSSL_LIB_CTX *ctx, const unsigned char *key)
{
    EVP_MAC *mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    EVP_MAC_CTX *c = mac == NULL ? NULL : EVP_MAC_CTX_new(mac);
    OSSL_PARAM p[2];

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)"SHA256", 0);
    p[1] = OSSL_PARAM_construct_end();
    EVP_MAC_free(mac);
    if (c != NULL && !EVP_MAC_init(c, key, 32, p)) {
        EVP_MAC_CTX_free(c);
        c = NULL;
    }
    return c;
}

/* c's MAC of msg is the default's for key; c is freed */
static int same_as_default(EVP_MAC_CTX *c, const unsigned char *key)
{
    unsigned char got[32], want[32];
    size_t glen = 0, wlen = 0;
    EVP_MAC_CTX *d = keyed(kct_default(), key);
    int ok = c != NULL && d != NULL
             && EVP_MAC_update(c, msg, sizeof(msg) - 1)
             && EVP_MAC_final(c, got, &glen, sizeof(got))
             && EVP_MAC_update(d, msg, sizeof(msg) - 1)
             && EVP_MAC_final(d, want, &wlen, sizeof(want))
             && glen == wlen && memcmp(got, want, wlen) == 0;

    EVP_MAC_CTX_free(c);
    EVP_MAC_CTX_free(d);
    return ok;
}

/* a new context keyed with key, checked and freed: did it hit? */
static int hit_once(const unsigned char *key)
{
    uint64_t h = kct_counter(KEYCACHE_PARAM_HITS);

    CU_ASSERT(same_as_default(keyed(kct_keycache(), key), key));
    return kct_counter(KEYCACHE_PARAM_HITS) != h;
}

/* the first two contexts stay open while later ones key the same key */
static void test_kept(void)
{
    unsigned char key[32];
    uint64_t h;
    EVP_MAC_CTX *first, *second;

    CU_ASSERT_FATAL(RAND_bytes(key, sizeof(key)) == 1);
    h = kct_counter(KEYCACHE_PARAM_HITS);
    first = keyed(kct_keycache(), key);            /* admits the key */
    second = keyed(kct_keycache(), key);           /* gives it a copy */
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    CU_ASSERT_PTR_NOT_NULL_FATAL(second);
    CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_HITS), h);
    CU_ASSERT_TRUE(hit_once(key));
    CU_ASSERT_TRUE(same_as_default(second, key));  /* given back */
    CU_ASSERT_TRUE(same_as_default(first, key));
    CU_ASSERT_TRUE(hit_once(key));
    CU_ASSERT_TRUE(hit_once(key));
}

typedef struct {
    EVP_MAC_CTX *c;
    const unsigned char *key;
    int ok;
} HANDED;

static void *finish_there(void *arg)
{
    HANDED *h = arg;

    h->ok = same_as_default(h->c, h->key);
    return NULL;
}

static void test_freed_elsewhere(void)
{
    unsigned char key[32];
    HANDED handed;
    pthread_t t;

    CU_ASSERT_FATAL(RAND_bytes(key, sizeof(key)) == 1);
    handed.c = keyed(kct_keycache(), key);         /* admits the key */
    handed.key = key;
    handed.ok = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(handed.c);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, finish_there, &handed), 0);
    pthread_join(t, NULL);
    CU_ASSERT_TRUE(handed.ok);
    CU_ASSERT_FALSE(hit_once(key));                /* gives it a copy */
    CU_ASSERT_TRUE(hit_once(key));
    CU_ASSERT_TRUE(hit_once(key));
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("pending_entry", NULL, NULL);

    CU_add_test(s, "the admitting context kept open", test_kept);
    CU_add_test(s, "the admitting context freed on another thread",
                test_freed_elsewhere);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
