/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Randomness the wrapped default provider draws comes from the
 * application's library context (issue 9).
 *
 * AES-GCM draws random bytes when it generates an IV (encrypting without
 * one) and for the TLS fixed-IV invocation field.  The default provider
 * takes them from the library context it is loaded into; keycache must do
 * the same, not use its private one: same bytes from the same DRBG, same
 * failures with the same error queue.  Every test makes its own pair of
 * library contexts (default only, and default + keycache from the test
 * config) so that it can configure their DRBGs before first use.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "kc_test.h"
#include "keycache.h"

#define LOGSZ 8192

typedef struct {
    char buf[LOGSZ];
    size_t len;
} LOG;

static void log_add(LOG *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void log_add(LOG *l, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->len += (size_t)n < sizeof(l->buf) - l->len
                  ? (size_t)n : sizeof(l->buf) - l->len - 1;
}

/*
 * The whole error queue, oldest first: everything ERR_get_error_all says.
 * Of the flags only ERR_TXT_STRING: ERR_TXT_MALLOCED on an entry without
 * text says whether its slot of the queue's ring once held text, which
 * differs between two runs of the default provider itself.
 */
static void log_errs(LOG *l)
{
    const char *file, *func, *data;
    int line, flags;
    unsigned long e;

    while ((e = ERR_get_error_all(&file, &line, &func, &data, &flags)) != 0)
        log_add(l, " [lib %d reason %d %s:%d %s data '%s' text %d]",
                ERR_GET_LIB(e), ERR_GET_REASON(e), file, line, func,
                (flags & ERR_TXT_STRING) != 0 ? data : "",
                (flags & ERR_TXT_STRING) != 0);
    log_add(l, "\n");
}

static void log_hex(LOG *l, const char *what, const unsigned char *p,
                    size_t n)
{
    size_t i;

    log_add(l, " %s=", what);
    for (i = 0; i < n; i++)
        log_add(l, "%02x", p[i]);
}

static int same_log(const char *what, const LOG *want, const LOG *got)
{
    if (strcmp(want->buf, got->buf) == 0)
        return 1;
    fprintf(stderr, "\n%s differs\n--- default:\n%s--- keycache:\n%s", what,
            want->buf, got->buf);
    return 0;
}

/* A default-only library context and a keycache one, both fresh. */
static void new_pair(OSSL_LIB_CTX **def, OSSL_LIB_CTX **kc)
{
    *def = OSSL_LIB_CTX_new();
    *kc = OSSL_LIB_CTX_new();
    CU_ASSERT_FATAL(*def != NULL && *kc != NULL);
    /* the provider's reference goes with the context: see free_pair() */
    CU_ASSERT_FATAL(OSSL_PROVIDER_load(*def, "default") != NULL);
    CU_ASSERT_FATAL(OSSL_LIB_CTX_load_config(*kc, kct_conf_path()));
    CU_ASSERT_FATAL(OSSL_PROVIDER_available(*kc, KEYCACHE_PROVIDER_NAME));
}

static int unload_all(OSSL_PROVIDER *prov, void *arg)
{
    return OSSL_PROVIDER_unload(prov);
}

static void free_pair(OSSL_LIB_CTX *def, OSSL_LIB_CTX *kc)
{
    OSSL_LIB_CTX_free(kc);
    OSSL_PROVIDER_do_all(def, unload_all, NULL);
    OSSL_LIB_CTX_free(def);
}

/* The AES-GCM cipher of |ctx|, checked to come from |prov|. */
static EVP_CIPHER *gcm(OSSL_LIB_CTX *ctx, const char *name, const char *prov)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(ctx, name, NULL);

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(kct_provider_name(EVP_CIPHER_get0_provider(c)),
                           prov);
    return c;
}

static const unsigned char msg[] = "a message for a generated IV";
static const unsigned char fixed[4] = { 0xfe, 0xed, 0xfa, 0xce };

/*
 * Everything that makes the inner GCM code draw randomness, with what can
 * be seen of it: return values, outputs, the IV it ended up with, errors.
 */
static void draw_all(EVP_CIPHER *c, LOG *l)
{
    unsigned char key[32], out[sizeof(msg) + 16], iv[12], tag[16];
    OSSL_PARAM p[2];
    EVP_CIPHER_CTX *ctx;
    int outl, r;

    kct_fill(key, sizeof(key), 9);

    /* 1. no IV given: update generates one */
    ctx = EVP_CIPHER_CTX_new();
    r = EVP_EncryptInit_ex2(ctx, c, key, NULL, NULL);
    log_add(l, "init=%d", r);
    log_errs(l);
    outl = 0;
    r = EVP_EncryptUpdate(ctx, out, &outl, msg, sizeof(msg));
    log_add(l, "update=%d outl=%d", r, outl);
    if (r)
        log_hex(l, "ct", out, outl);
    log_errs(l);
    if (r) {
        r = EVP_CIPHER_CTX_get_updated_iv(ctx, iv, sizeof(iv));
        log_add(l, "get_iv=%d", r);
        if (r)
            log_hex(l, "iv", iv, sizeof(iv));
        log_errs(l);
        r = EVP_EncryptFinal_ex(ctx, out, &outl)
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) > 0;
        log_add(l, "final+tag=%d", r);
        if (r)
            log_hex(l, "tag", tag, 16);
        log_errs(l);
    }
    EVP_CIPHER_CTX_free(ctx);

    /* 2. no IV and no data: final generates one; an error already queued */
    ctx = EVP_CIPHER_CTX_new();
    ERR_raise_data(ERR_LIB_USER, 42, "queued before");
    r = EVP_EncryptInit_ex2(ctx, c, key, NULL, NULL);
    outl = 0;
    r = r && EVP_EncryptFinal_ex(ctx, out, &outl);
    log_add(l, "init+final=%d outl=%d", r, outl);
    log_errs(l);
    EVP_CIPHER_CTX_free(ctx);

    /* 3. the TLS fixed IV on an encrypt context: the rest is random */
    ctx = EVP_CIPHER_CTX_new();
    r = EVP_EncryptInit_ex2(ctx, c, key, NULL, NULL);
    r = r && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IV_FIXED,
                                 sizeof(fixed), (void *)fixed);
    log_add(l, "set_iv_fixed=%d", r);
    log_errs(l);
    if (r) {
        r = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_IV_GEN, 8, iv);
        log_add(l, "iv_gen=%d", r);
        if (r > 0)
            log_hex(l, "invocation", iv, 8);
        log_errs(l);
    }
    EVP_CIPHER_CTX_free(ctx);

    /* 4. the same given as a parameter of init */
    ctx = EVP_CIPHER_CTX_new();
    p[0] = OSSL_PARAM_construct_octet_string(
               OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, (void *)fixed,
               sizeof(fixed));
    p[1] = OSSL_PARAM_construct_end();
    r = EVP_EncryptInit_ex2(ctx, c, key, NULL, p);
    log_add(l, "init_iv_fixed=%d", r);
    log_errs(l);
    EVP_CIPHER_CTX_free(ctx);

    /* 5. the one-shot EVP_Cipher() path */
    ctx = EVP_CIPHER_CTX_new();
    r = EVP_EncryptInit_ex2(ctx, c, key, NULL, NULL);
    r = r ? EVP_Cipher(ctx, out, msg, sizeof(msg)) : -2;
    log_add(l, "cipher=%d", r);
    if (r > 0)
        log_hex(l, "ct", out, r);
    log_errs(l);
    EVP_CIPHER_CTX_free(ctx);
}

/* draw_all() against both contexts, twice over, for each key size. */
static void compare(OSSL_LIB_CTX *def, OSSL_LIB_CTX *kc,
                    void (*prepare)(OSSL_LIB_CTX *, int), const char *what)
{
    static const char *const names[] = { "AES-128-GCM", "AES-256-GCM" };
    size_t i;
    int round;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        EVP_CIPHER *cd = gcm(def, names[i], "default");
        EVP_CIPHER *ck = gcm(kc, names[i], KEYCACHE_PROVIDER_NAME);

        for (round = 0; round < 2; round++) {
            LOG want = { "", 0 }, got = { "", 0 };

            ERR_clear_error();
            if (prepare != NULL)
                prepare(def, round);
            draw_all(cd, &want);
            if (prepare != NULL)
                prepare(kc, round);
            draw_all(ck, &got);
            CU_ASSERT_TRUE(same_log(what, &want, &got));
        }
        EVP_CIPHER_free(cd);
        EVP_CIPHER_free(ck);
    }
}

/* ---------------------------------------------------------------------- */

/*
 * The application's DRBG cannot be made: the default provider fails each
 * draw with the RAND errors and its own; so must keycache.
 */
static void test_app_drbg_fails(void)
{
    OSSL_LIB_CTX *def, *kc;
    EVP_CIPHER *c;
    LOG l = { "", 0 };

    new_pair(&def, &kc);
    CU_ASSERT_TRUE(RAND_set_DRBG_type(def, "NO-SUCH-DRBG", NULL, NULL, NULL));
    CU_ASSERT_TRUE(RAND_set_DRBG_type(kc, "NO-SUCH-DRBG", NULL, NULL, NULL));
    compare(def, kc, NULL, "failing DRBG");

    /* and the reference did fail, the way the issue describes */
    c = gcm(def, "AES-256-GCM", "default");
    draw_all(c, &l);
    EVP_CIPHER_free(c);
    CU_ASSERT_PTR_NOT_NULL(strstr(l.buf, "update=0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l.buf, "set_iv_fixed=0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l.buf, "NO-SUCH-DRBG"));
    free_pair(def, kc);
}

/* ---------------------------------------------------------------------- */

/* Fixed bytes for TEST-RAND, different per seed. */
static void set_entropy(OSSL_LIB_CTX *ctx, uint32_t seed)
{
    unsigned char ent[256];
    OSSL_PARAM p[2];
    EVP_RAND_CTX *pub = RAND_get0_public(ctx);

    kct_fill(ent, sizeof(ent), seed);
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY,
                                             ent, sizeof(ent));
    p[1] = OSSL_PARAM_construct_end();
    CU_ASSERT_PTR_NOT_NULL_FATAL(pub);
    CU_ASSERT_TRUE(EVP_RAND_CTX_set_params(pub, p));
}

static void test_drbg(OSSL_LIB_CTX *ctx)
{
    CU_ASSERT_TRUE_FATAL(RAND_set_DRBG_type(ctx, "TEST-RAND", NULL, NULL,
                                            NULL));
}

/* every round starts the application's stream anew, from a new seed */
static void reseed_per_round(OSSL_LIB_CTX *ctx, int round)
{
    set_entropy(ctx, 100 + (uint32_t)round);
}

/* The IV bytes keycache generates with the app's DRBG at |seed|. */
static void keycache_iv(OSSL_LIB_CTX *kc, uint32_t seed, unsigned char iv[12])
{
    EVP_CIPHER *c = gcm(kc, "AES-256-GCM", KEYCACHE_PROVIDER_NAME);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char key[32] = { 0 }, out[sizeof(msg)];
    int outl;

    set_entropy(kc, seed);
    CU_ASSERT_TRUE(EVP_EncryptInit_ex2(ctx, c, key, NULL, NULL)
                   && EVP_EncryptUpdate(ctx, out, &outl, msg, sizeof(msg))
                   && EVP_CIPHER_CTX_get_updated_iv(ctx, iv, 12));
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
}

/*
 * Both applications' DRBGs are TEST-RAND with the same fixed bytes: the
 * IVs, invocation fields and ciphertexts keycache makes are the default's,
 * and they are the application's bytes, changing when those change.
 */
static void test_bytes_from_app_drbg(void)
{
    OSSL_LIB_CTX *def, *kc;
    unsigned char want[256], iv[12];

    new_pair(&def, &kc);
    test_drbg(def);
    test_drbg(kc);
    compare(def, kc, reseed_per_round, "TEST-RAND");

    /* the IV is the start of the application's stream, seed by seed */
    kct_fill(want, sizeof(want), 7);
    keycache_iv(kc, 7, iv);
    CU_ASSERT_EQUAL(memcmp(iv, want, 12), 0);
    kct_fill(want, sizeof(want), 8);
    keycache_iv(kc, 8, iv);
    CU_ASSERT_EQUAL(memcmp(iv, want, 12), 0);
    free_pair(def, kc);
}

/* ---------------------------------------------------------------------- */

typedef struct {
    OSSL_LIB_CTX *def, *kc;
    uint32_t seed;
    int stop_ex;              /* OPENSSL_thread_stop_ex() before waiting */
    int ok;
} DRAWER;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int drawn, may_exit;

/* IVs generated through keycache equal the default's, in this thread. */
static int draw_in_thread(DRAWER *d)
{
    EVP_CIPHER *cd = EVP_CIPHER_fetch(d->def, "AES-256-GCM", NULL);
    EVP_CIPHER *ck = EVP_CIPHER_fetch(d->kc, "AES-256-GCM", NULL);
    int i, ok = cd != NULL && ck != NULL
                && strcmp(kct_provider_name(EVP_CIPHER_get0_provider(ck)),
                          KEYCACHE_PROVIDER_NAME) == 0;

    for (i = 0; ok && i < 3; i++) {
        LOG want = { "", 0 }, got = { "", 0 };

        set_entropy(d->def, d->seed + (uint32_t)i);
        draw_all(cd, &want);
        set_entropy(d->kc, d->seed + (uint32_t)i);
        draw_all(ck, &got);
        ok = same_log("thread", &want, &got)
             && strstr(got.buf, "update=1") != NULL;
    }
    EVP_CIPHER_free(cd);
    EVP_CIPHER_free(ck);
    return ok;
}

static void *drawer(void *arg)
{
    DRAWER *d = arg;

    d->ok = draw_in_thread(d);
    if (d->stop_ex) {
        /* what OpenSSL asks of threads that outlive a library context */
        OPENSSL_thread_stop_ex(d->kc);
        OPENSSL_thread_stop_ex(d->def);
    }
    pthread_mutex_lock(&mu);
    drawn++;
    pthread_cond_broadcast(&cv);
    while (d->stop_ex && !may_exit)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

#define NTHREADS 4

/*
 * Threads draw randomness through keycache, then exit while the library
 * contexts live (before) or after they are freed (having called
 * OPENSSL_thread_stop_ex(), as OpenSSL asks).  Run under valgrind by
 * ctest: a thread-stop handler on keycache's freed private context shows.
 */
static void threads_then_free(int exit_after)
{
    OSSL_LIB_CTX *def, *kc;
    pthread_t t[NTHREADS];
    DRAWER d[NTHREADS];
    int i, round;

    for (round = 0; round < 3; round++) {
        new_pair(&def, &kc);
        test_drbg(def);
        test_drbg(kc);
        drawn = may_exit = 0;
        for (i = 0; i < NTHREADS; i++) {
            d[i].def = def;
            d[i].kc = kc;
            d[i].seed = 1000 * (uint32_t)(round + 1) + 10 * (uint32_t)i;
            d[i].stop_ex = exit_after;
            d[i].ok = 0;
            CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, drawer, &d[i]),
                                  0);
        }
        if (exit_after) {
            pthread_mutex_lock(&mu);
            while (drawn < NTHREADS)
                pthread_cond_wait(&cv, &mu);
            pthread_mutex_unlock(&mu);
        } else {
            for (i = 0; i < NTHREADS; i++)
                pthread_join(t[i], NULL);
        }
        /* this thread drew too: its state goes with the contexts */
        {
            DRAWER me = { def, kc, 77, 0, 0 };

            CU_ASSERT_TRUE(draw_in_thread(&me));
        }
        free_pair(def, kc);
        if (exit_after) {
            pthread_mutex_lock(&mu);
            may_exit = 1;
            pthread_cond_broadcast(&cv);
            pthread_mutex_unlock(&mu);
            for (i = 0; i < NTHREADS; i++)
                pthread_join(t[i], NULL);
        }
        for (i = 0; i < NTHREADS; i++)
            CU_ASSERT_TRUE(d[i].ok);
    }
}

static void test_threads_exit_before_free(void)
{
    threads_then_free(0);
}

static void test_threads_exit_after_free(void)
{
    threads_then_free(1);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("rand", NULL, NULL);

    CU_add_test(s, "application DRBG fails: same errors",
                test_app_drbg_fails);
    CU_add_test(s, "bytes come from the application DRBG",
                test_bytes_from_app_drbg);
    CU_add_test(s, "threads exit before the contexts are freed",
                test_threads_exit_before_free);
    CU_add_test(s, "threads exit after the contexts are freed",
                test_threads_exit_after_free);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
