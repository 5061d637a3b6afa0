/*
 * fork() with warm caches.
 *
 * The parent warms its thread's cache with several HMAC and AES-GCM keys and
 * forks.  The child inherits a copy of that cache: it must compute correct
 * results (checked against the default provider) for the warm keys and for
 * new ones, on its main thread and on a new thread, and exit cleanly; the
 * parent checks the child's exit status and keeps computing correctly.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "kc_test.h"
#include "keycache.h"

#define NKEYS 6
#define MSGLEN 77

static const unsigned char aad[] = "fork aad";

/* HMAC-SHA256 of a message derived from |seed|; 1 on success. */
static int hmac(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                uint32_t seed, unsigned char out[32])
{
    unsigned char msg[MSGLEN];
    size_t outlen = 0;

    kct_fill(msg, sizeof(msg), seed);
    return EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL, key, keylen, msg,
                     sizeof(msg), out, 32, &outlen) != NULL
           && outlen == 32;
}

/* AES-GCM seal with a fresh context, key length 16, 24 or 32. */
static int seal(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                uint32_t seed, unsigned char out[MSGLEN + 16])
{
    static const char *const names[] = {
        "AES-128-GCM", "AES-192-GCM", "AES-256-GCM"
    };
    unsigned char msg[MSGLEN], iv[12];
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(ctx, names[(keylen - 16) / 8],
                                          NULL);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0, ok;

    kct_fill(msg, sizeof(msg), seed);
    kct_fill(iv, sizeof(iv), seed + 1);
    ok = cipher != NULL && c != NULL
         && EVP_EncryptInit_ex2(c, cipher, key, iv, NULL)
         && EVP_EncryptUpdate(c, NULL, &len, aad, sizeof(aad))
         && EVP_EncryptUpdate(c, out, &len, msg, sizeof(msg))
         && EVP_EncryptFinal_ex(c, out + len, &fin)
         && len + fin == MSGLEN
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                out + MSGLEN) > 0;
    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(cipher);
    return ok;
}

/* Open what seal() made, with a fresh context; 1 if the tag verifies. */
static int open_sealed(OSSL_LIB_CTX *ctx, const unsigned char *key,
                       size_t keylen, uint32_t seed,
                       const unsigned char in[MSGLEN + 16])
{
    static const char *const names[] = {
        "AES-128-GCM", "AES-192-GCM", "AES-256-GCM"
    };
    unsigned char msg[MSGLEN], want[MSGLEN], iv[12];
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(ctx, names[(keylen - 16) / 8],
                                          NULL);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0, ok;

    kct_fill(want, sizeof(want), seed);
    kct_fill(iv, sizeof(iv), seed + 1);
    ok = cipher != NULL && c != NULL
         && EVP_DecryptInit_ex2(c, cipher, key, iv, NULL)
         && EVP_DecryptUpdate(c, NULL, &len, aad, sizeof(aad))
         && EVP_DecryptUpdate(c, msg, &len, in, MSGLEN)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16,
                                (void *)(in + MSGLEN)) > 0
         && EVP_DecryptFinal_ex(c, msg + len, &fin) > 0
         && len + fin == MSGLEN
         && memcmp(msg, want, MSGLEN) == 0;
    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(cipher);
    return ok;
}

/* Key |i| of the key set starting at |base|: lengths cycle 16, 24, 32. */
static size_t make_key(unsigned char key[32], uint32_t base, int i)
{
    size_t keylen = 16 + 8 * (size_t)(i % 3);

    kct_fill(key, keylen, base + (uint32_t)i);
    return keylen;
}

/*
 * Run every key of the set through HMAC, seal and open with keycache (the
 * thread's default context) and compare with the default provider.
 * Returns the number of mismatches or failures.
 */
static int run_keys(uint32_t base, uint32_t msgseed)
{
    unsigned char key[32], got[MSGLEN + 16], want[MSGLEN + 16];
    int i, bad = 0;

    for (i = 0; i < NKEYS; i++) {
        size_t keylen = make_key(key, base, i);
        uint32_t seed = msgseed + (uint32_t)i;

        if (!hmac(kct_default(), key, keylen, seed, want)
            || !hmac(NULL, key, keylen, seed, got)
            || memcmp(got, want, 32) != 0)
            bad++;
        if (!seal(kct_default(), key, keylen, seed, want)
            || !seal(NULL, key, keylen, seed, got)
            || memcmp(got, want, sizeof(got)) != 0)
            bad++;
        if (!open_sealed(NULL, key, keylen, seed, want))
            bad++;
    }
    return bad;
}

static void *child_thread(void *arg)
{
    int *bad = arg;

    kct_use(kct_keycache());
    *bad = run_keys(100, 7) + run_keys(300, 8);
    kct_use(NULL);
    return NULL;
}

/*
 * The child's work; the return value is its exit status.  With |spawn| it
 * also starts a thread (only done when the parent had a single thread:
 * POSIX and TSan both frown on new threads after a multi-threaded fork).
 */
static int child_main(int spawn)
{
    uint64_t hits = kct_counter(KEYCACHE_PARAM_HITS);
    int bad = 0, tbad = -1;
    pthread_t t;

    kct_use(kct_keycache());
    /* warm keys (inherited cache), new keys, then the warm keys again */
    bad += run_keys(100, 3);
    bad += run_keys(200, 4);
    bad += run_keys(100, 5);
    /* a new thread: a new cache, registered and freed in the child */
    if (spawn
        && (pthread_create(&t, NULL, child_thread, &tbad) != 0
            || pthread_join(t, NULL) != 0 || tbad != 0))
        bad++;
    if (kct_counter(KEYCACHE_PARAM_HITS) <= hits)
        bad++;
    kct_use(NULL);
    if (bad != 0)
        fprintf(stderr, "child: %d failures\n", bad);
    return bad == 0 ? 0 : 1;
}

/* Fork; the child runs child_main() and exits; return its wait status. */
static int fork_and_wait(int use_exit, int spawn)
{
    int status = -1;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        int rc = child_main(spawn);

        /* exit() runs OpenSSL's atexit cleanup in the child too */
        if (use_exit)
            exit(rc);
        _exit(rc);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

static void test_fork_warm(void)
{
    uint64_t hits;
    int status;

    kct_use(kct_keycache());
    CU_ASSERT_EQUAL(run_keys(100, 1), 0);
    hits = kct_counter(KEYCACHE_PARAM_HITS);
    CU_ASSERT_EQUAL(run_keys(100, 2), 0);
    /* every key hit: HMAC and seal and open per key */
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_HITS) >= hits + 3 * NKEYS);

    status = fork_and_wait(1, 1);
    CU_ASSERT_TRUE(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "\n  child status %#x\n", status);

    /* the parent's cache is untouched by what the child did */
    hits = kct_counter(KEYCACHE_PARAM_HITS);
    CU_ASSERT_EQUAL(run_keys(100, 6), 0);
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_HITS) >= hits + 3 * NKEYS);
    CU_ASSERT_EQUAL(run_keys(200, 6), 0);
    kct_use(NULL);
}

/* Fork twice more, with _exit() this time, and from a warmed thread. */
static void *fork_thread(void *arg)
{
    int *status = arg;

    kct_use(kct_keycache());
    if (run_keys(400, 1) == 0)
        *status = fork_and_wait(0, 0);
    kct_use(NULL);
    return NULL;
}

static void test_fork_repeated(void)
{
    int i, status;
    pthread_t t;

    kct_use(kct_keycache());
    for (i = 0; i < 3; i++) {
        status = fork_and_wait(i % 2, 1);
        CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CU_ASSERT_EQUAL(run_keys(100 + 100 * (uint32_t)i, 9), 0);
    }
    kct_use(NULL);

    status = -1;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, fork_thread, &status), 0);
    pthread_join(t, NULL);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("fork", NULL, NULL);

    CU_add_test(s, "child of a warm parent", test_fork_warm);
    CU_add_test(s, "repeated forks, from a thread", test_fork_repeated);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
