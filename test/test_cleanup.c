/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OPENSSL_cleanup() with warm caches.
 *
 * Unlike the CUnit tests this program configures keycache into the global
 * default library context, the way an application's openssl.cnf would, warms
 * caches on the main thread and on threads that have exited, and then calls
 * OPENSSL_cleanup() itself: provider teardown must free every cache and
 * inner context and must not touch freed memory afterwards (run it under
 * valgrind or ASan to see that).  Prints "N passed, M failed".
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "kc_family.h"
#include "kc_test.h"
#include "keycache.h"

#define NKEYS 5
#define MSGLEN 64

static int passed, failed;
static OSSL_LIB_CTX *ref;
static OSSL_PROVIDER *ref_prov;

static void check(int ok, const char *what)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAILED: %s\n", what);
        ERR_print_errors_fp(stderr);
    }
}

/* A counter of the keycache loaded into the global default context. */
static uint64_t counter(const char *name)
{
    return kct_counter_in(NULL, name);
}

/* AES-256-GCM seal; with |ctx| NULL through EVP_aes_256_gcm() as apps do. */
static int seal(OSSL_LIB_CTX *ctx, const unsigned char *key,
                const unsigned char *msg, unsigned char out[MSGLEN + 16])
{
    static const unsigned char iv[12] = "cleanup iv!";
    EVP_CIPHER *fetched = NULL;
    const EVP_CIPHER *cipher = EVP_aes_256_gcm();
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0, ok;

    if (ctx != NULL)
        cipher = fetched = EVP_CIPHER_fetch(ctx, "AES-256-GCM", NULL);
    ok = cipher != NULL && c != NULL
         && EVP_EncryptInit_ex(c, cipher, NULL, key, iv)
         && EVP_EncryptUpdate(c, out, &len, msg, MSGLEN)
         && EVP_EncryptFinal_ex(c, out + len, &fin) && len + fin == MSGLEN
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                out + MSGLEN) > 0;
    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(fetched);
    return ok;
}

/*
 * Every key twice through keycache, compared with the default provider:
 * AES-256-GCM the way older applications call it (a legacy
 * EVP_aes_256_gcm()), then every row of the family registry on a context
 * of its own, each with its key length.
 */
static int warm(uint32_t base)
{
    unsigned char key[KCT_FAM_MAXKEY], msg[MSGLEN];
    unsigned char got[MSGLEN + 16], want[MSGLEN + 16];
    size_t f;
    int i, round, bad = 0;

    for (round = 0; round < 2; round++) {
        for (i = 0; i < NKEYS; i++) {
            kct_fill(key, sizeof(key), base + (uint32_t)i);
            kct_fill(msg, sizeof(msg), base + (uint32_t)(i + round));
            if (!seal(ref, key, msg, want) || !seal(NULL, key, msg, got)
                || memcmp(got, want, sizeof(got)) != 0)
                bad++;
            for (f = 0; f < kct_nfams; f++)
                bad += !kct_fam_same_ref("cleanup", ref, NULL, &kct_fams[f],
                                         key, kct_fams[f].keylen, msg,
                                         MSGLEN);
        }
    }
    return bad;
}

static void *warm_thread(void *arg)
{
    *(int *)arg = warm(500);
    return NULL;
}

int main(void)
{
    EVP_MAC *mac;
    pthread_t t;
    int tbad = -1;

    check(OSSL_LIB_CTX_load_config(NULL, kct_conf_path()) == 1,
          "load config into the default context");
    check(OSSL_PROVIDER_available(NULL, KEYCACHE_PROVIDER_NAME),
          "keycache available in the default context");
    mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    check(mac != NULL
          && strcmp(kct_provider_name(EVP_MAC_get0_provider(mac)),
                    KEYCACHE_PROVIDER_NAME) == 0,
          "HMAC served by keycache");
    EVP_MAC_free(mac);

    ref = OSSL_LIB_CTX_new();
    check(ref != NULL
          && (ref_prov = OSSL_PROVIDER_load(ref, "default")) != NULL,
          "reference context");

    check(warm(100) == 0, "main thread results");
    check(pthread_create(&t, NULL, warm_thread, &tbad) == 0
          && pthread_join(t, NULL) == 0 && tbad == 0,
          "exited thread results");
    /* warm again after the thread: main's cache is the one left warm */
    check(warm(200) == 0, "main thread results, second key set");
    /* each warm()'s second round hits every key in every row */
    check(counter(KEYCACHE_PARAM_HITS) >= 3 * kct_nfams * NKEYS,
          "caches were hit");
    check(counter(KEYCACHE_PARAM_ENTRIES) > 0, "main cache is warm");

    /* the reference goes first; keycache's caches are still warm */
    OSSL_PROVIDER_unload(ref_prov);
    OSSL_LIB_CTX_free(ref);
    ref = NULL;
    OPENSSL_cleanup();

    printf("%d passed, %d failed\n", failed == 0 ? 1 : 0, failed == 0 ? 0 : 1);
    if (failed != 0)
        fprintf(stderr, "%d of %d checks failed\n", failed, passed + failed);
    return failed == 0 ? 0 : 1;
}
