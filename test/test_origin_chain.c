/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A remembered origin decision belongs to one whole call chain.
 *
 * keycache decides whether the application or OpenSSL's own code keyed a
 * context (origin.c) and remembers the decision per thread.  Here the
 * same code keys HMAC-SHA256 from the program and from kc_fakessl, a
 * library keycache takes for a libssl: both reach keycache through the
 * same libcrypto frames (EVP_MAC_init called directly, or EVP_Q_mac), so
 * the chains differ only in the frame that called into OpenSSL.  In turn,
 * on one thread, each side keys a new key twice (keycache-test.cnf:
 * admit_after = 1): the program's key must hit the second time, the
 * "libssl"'s never, whichever side was decided before.  A decision kept
 * for the nearest frames alone would cache the libssl's keys or refuse
 * the program's.  Every MAC must be the default provider's.
 */
#include <string.h>
#include <openssl/rand.h>

#include "kc_chain_mac.h"
#include "kc_test.h"
#include "keycache.h"

int kcfs_mac_init(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                  unsigned char *out, size_t *outlen);
int kcfs_mac_q(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
               unsigned char *out, size_t *outlen);

typedef int (*MAC_FN)(OSSL_LIB_CTX *, const unsigned char *, size_t,
                      unsigned char *, size_t *);

static int app_mac_init(OSSL_LIB_CTX *ctx, const unsigned char *key,
                        size_t keylen, unsigned char *out, size_t *outlen)
{
    return chain_mac_init(ctx, key, keylen, out, outlen);
}

static int app_mac_q(OSSL_LIB_CTX *ctx, const unsigned char *key,
                     size_t keylen, unsigned char *out, size_t *outlen)
{
    return chain_mac_q(ctx, key, keylen, out, outlen);
}

static int wrong;

/* A new key keyed twice through fn: the hits keycache counted. */
static uint64_t twice(const char *what, MAC_FN fn)
{
    unsigned char key[32], got[EVP_MAX_MD_SIZE], want[EVP_MAX_MD_SIZE];
    size_t glen = 0, wlen = 0;
    uint64_t h0 = kct_counter(KEYCACHE_PARAM_HITS);
    int i;

    CU_ASSERT_FATAL(RAND_bytes(key, sizeof(key)) == 1);
    CU_ASSERT_FATAL(chain_mac_init(kct_default(), key, sizeof(key), want,
                                   &wlen));
    for (i = 0; i < 2; i++) {
        glen = 0;
        if (!fn(kct_keycache(), key, sizeof(key), got, &glen)
            || glen != wlen || memcmp(got, want, wlen) != 0) {
            fprintf(stderr, "\n%s: not the default's MAC", what);
            wrong++;
        }
    }
    return kct_counter(KEYCACHE_PARAM_HITS) - h0;
}

static void one_way(const char *way, MAC_FN app, MAC_FN ssl)
{
    /* each side decided first, then after the other, several times */
    static const int order[] = { 0, 1, 1, 0, 0, 1, 0, 1, 1, 0 };
    size_t i;

    for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (order[i] == 0) {
            uint64_t h = twice(way, app);

            if (h != 1)
                fprintf(stderr, "\n%s, step %zu: the program's key hit "
                        "%llu times, want 1", way, i, (unsigned long long)h);
            CU_ASSERT_EQUAL(h, 1);
        } else {
            uint64_t h = twice(way, ssl);

            if (h != 0)
                fprintf(stderr, "\n%s, step %zu: the libssl's key hit "
                        "%llu times, want 0", way, i, (unsigned long long)h);
            CU_ASSERT_EQUAL(h, 0);
        }
    }
}

static void test_mac_init(void)
{
    one_way("EVP_MAC_init", app_mac_init, kcfs_mac_init);
    CU_ASSERT_EQUAL(wrong, 0);
}

static void test_q_mac(void)
{
    one_way("EVP_Q_mac", app_mac_q, kcfs_mac_q);
    CU_ASSERT_EQUAL(wrong, 0);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("origin_chain", NULL, NULL);

    CU_add_test(s, "EVP_MAC_init from the program and from a libssl",
                test_mac_init);
    CU_add_test(s, "EVP_Q_mac from the program and from a libssl",
                test_q_mac);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
