/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Threads: contexts that cross threads, and many threads sharing keys.
 *
 * A keyed context of any row of the family registry (kc_family: HMAC,
 * CMAC, GMAC, KMAC, AES-OCB/SIV/GCM) may come from one thread's cache and
 * be updated, finalised and freed on another, possibly after the first thread
 * (and with it its cache) is gone.  Meanwhile other threads use the same keys
 * one-shot and counters are read.  Every result is compared with the default
 * provider's, computed up front.  Built with -DKEYCACHE_TSAN=ON this is the
 * ThreadSanitizer test of the provider's per-thread design.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "kc_family.h"
#include "kc_fetch_count.h"
#include "kc_test.h"
#include "keycache.h"

#define NKEYS 8
#define NMSGS 4
#define MSGLEN 100
#define ROUNDS 60            /* items each producer makes */
#define NPROD 4
#define NCONS 4
#define NONESHOT 6

static const unsigned char aad[] = "threads aad";

static unsigned char keys[NKEYS][KCT_FAM_MAXKEY];
static unsigned char msgs[NMSGS][MSGLEN];
static unsigned char ivs[NMSGS][12];
/* the default provider's answers */
static unsigned char want_mac[NKEYS][NMSGS][32];
static unsigned char want_ct[NKEYS][NMSGS][MSGLEN + 16];
/* ... and every registry row's (kc_family: MAC, or ciphertext and tag) */
static unsigned char want_row[KC_REGISTRY_ROWS][NKEYS][NMSGS][KCT_FAM_OUT(MSGLEN)];
static size_t want_row_len[KC_REGISTRY_ROWS][NKEYS][NMSGS];

/* ---------------------------------------------------------------------- */
/* Operations                                                             */

static EVP_CIPHER_CTX *gcm_keyed(OSSL_LIB_CTX *ctx, int enc,
                                 const unsigned char *key,
                                 const unsigned char *iv)
{
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(ctx, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();

    if (cipher == NULL || c == NULL
        || !EVP_CipherInit_ex2(c, cipher, key, iv, enc, NULL)) {
        EVP_CIPHER_CTX_free(c);
        c = NULL;
    }
    EVP_CIPHER_free(cipher);
    return c;
}

/* One-shot use through the thread's default context, as apps do it. */
static int oneshot(int k, int m)
{
    unsigned char out[MSGLEN + 16];
    EVP_CIPHER_CTX *c;
    size_t outlen = 0;
    int len = 0, fin = 0, ok;

    if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, keys[k], 32, msgs[m],
                  MSGLEN, out, 32, &outlen) == NULL
        || outlen != 32 || memcmp(out, want_mac[k][m], 32) != 0)
        return 0;
    if ((c = EVP_CIPHER_CTX_new()) == NULL)
        return 0;
    ok = EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, keys[k], ivs[m])
         && EVP_EncryptUpdate(c, NULL, &len, aad, sizeof(aad))
         && EVP_EncryptUpdate(c, out, &len, msgs[m], MSGLEN)
         && EVP_EncryptFinal_ex(c, out + len, &fin)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                out + MSGLEN) > 0
         && memcmp(out, want_ct[k][m], sizeof(out)) == 0;
    EVP_CIPHER_CTX_free(c);
    return ok;
}

/* ---------------------------------------------------------------------- */
/* Work items handed from thread to thread                                */

/*
 * An item is a context of one registry row keyed on one thread and
 * finished on another: W_RUN a MAC or a seal, W_DUP a copy of one made
 * and finished where the original was, W_OPEN a cipher's open (a MAC
 * row's W_OPEN is a W_RUN).
 */
enum { W_RUN, W_DUP, W_OPEN, W_KINDS };

typedef struct {
    int kind, row, k, m;
    KCT_FAM_CTX *ctx;
} ITEM;

static const KCT_FAM *row_of(int row)
{
    return &kct_fams[row];
}

/* Finish a row context on message m with key k: 1 if it is the default's */
static int row_finish(KCT_FAM_CTX *c, int enc, int row, int k, int m)
{
    unsigned char out[KCT_FAM_OUT(MSGLEN)];
    size_t want = want_row_len[row][k][m];

    if (c == NULL)
        return 0;
    if (enc)
        return kct_fam_finish(c, msgs[m], MSGLEN, out) == want
               && memcmp(out, want_row[row][k][m], want) == 0;
    return kct_fam_finish(c, want_row[row][k][m], want, out) == MSGLEN
           && memcmp(out, msgs[m], MSGLEN) == 0;
}

/* Make an item of |kind| for row, key k and message m here. */
static int item_make(ITEM *it, int kind, int row, int k, int m)
{
    const KCT_FAM *f = row_of(row);
    KCT_FAM_CTX *orig;

    if (kind == W_OPEN && f->kind != KCT_CIPHER)
        kind = W_RUN;
    it->kind = kind;
    it->row = row;
    it->k = k;
    it->m = m;
    switch (kind) {
    case W_RUN:
    case W_OPEN:
        it->ctx = kct_fam_begin(kct_keycache(), f, kind == W_RUN, keys[k],
                                f->keylen);
        break;
    case W_DUP:
        /* the duplicate travels; the original is used up here */
        orig = kct_fam_begin(kct_keycache(), f, 1, keys[k], f->keylen);
        it->ctx = orig == NULL ? NULL : kct_fam_dup(orig);
        if (!row_finish(orig, 1, row, k, m)) {
            kct_fam_free(it->ctx);
            it->ctx = NULL;
        }
        break;
    }
    if (it->ctx == NULL)
        fprintf(stderr, "\n  %s: item %d not made\n", f->id, kind);
    return it->ctx != NULL;
}

/* Use up an item on the calling thread; 1 if the result is right. */
static int item_finish(ITEM *it)
{
    int ok = row_finish(it->ctx, it->kind != W_OPEN, it->row, it->k, it->m);

    if (!ok)
        fprintf(stderr, "\n  %s: item %d not as the default\n",
                row_of(it->row)->id, it->kind);
    return ok;
}

/* A bounded queue between producer and consumer threads. */
#define QSIZE 16

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    ITEM items[QSIZE];
    int head, count, producing;
} q = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void q_push(const ITEM *it)
{
    pthread_mutex_lock(&q.lock);
    while (q.count == QSIZE)
        pthread_cond_wait(&q.cond, &q.lock);
    q.items[(q.head + q.count++) % QSIZE] = *it;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
}

/* 0 when the queue is drained and nobody produces any more. */
static int q_pop(ITEM *it)
{
    pthread_mutex_lock(&q.lock);
    while (q.count == 0 && q.producing > 0)
        pthread_cond_wait(&q.cond, &q.lock);
    if (q.count == 0) {
        pthread_mutex_unlock(&q.lock);
        return 0;
    }
    *it = q.items[q.head];
    q.head = (q.head + 1) % QSIZE;
    q.count--;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
    return 1;
}

static void q_producer_done(void)
{
    pthread_mutex_lock(&q.lock);
    q.producing--;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
}

typedef struct {
    int id;
    int bad, done;
} WORKER;

static void *producer(void *arg)
{
    WORKER *w = arg;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        ITEM it;

        if (item_make(&it, (w->id + i) % W_KINDS,
                      (int)((size_t)(w->id * 5 + i) % kct_nfams),
                      (w->id * 3 + i) % NKEYS, i % NMSGS)) {
            q_push(&it);
            w->done++;
        } else {
            w->bad++;
        }
    }
    q_producer_done();
    return NULL;
}

static void *consumer(void *arg)
{
    WORKER *w = arg;
    ITEM it;

    while (q_pop(&it)) {
        if (item_finish(&it))
            w->done++;
        else
            w->bad++;
    }
    return NULL;
}

/* One-shot traffic on the same keys, through the thread default context. */
static void *oneshot_worker(void *arg)
{
    WORKER *w = arg;
    int i;

    kct_use(kct_keycache());
    for (i = 0; i < ROUNDS; i++) {
        if (oneshot((w->id + i) % NKEYS, (w->id + 2 * i) % NMSGS))
            w->done++;
        else
            w->bad++;
    }
    kct_use(NULL);
    return NULL;
}

static volatile int stop_reader;

/* Counters are read while every other thread works. */
static void *counter_reader(void *arg)
{
    WORKER *w = arg;

    while (!__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE)) {
        if (kct_counter(KEYCACHE_PARAM_HITS) == UINT64_MAX
            || kct_counter(KEYCACHE_PARAM_ENTRIES) == UINT64_MAX)
            w->bad++;
        w->done++;
        sched_yield();
    }
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Tests                                                                  */

static int suite_init(void)
{
    int k, m, row;
    EVP_CIPHER_CTX *c;

    for (k = 0; k < NKEYS; k++)
        kct_fill(keys[k], sizeof(keys[k]), 0x7000 + (uint32_t)k);
    for (m = 0; m < NMSGS; m++) {
        kct_fill(msgs[m], MSGLEN, 0x8000 + (uint32_t)m);
        kct_fill(ivs[m], 12, 0x9000 + (uint32_t)m);
    }
    for (k = 0; k < NKEYS; k++) {
        for (m = 0; m < NMSGS; m++) {
            size_t outlen;
            int len = 0, fin = 0;
            unsigned char *ct = want_ct[k][m];

            if (EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL,
                          keys[k], 32, msgs[m], MSGLEN, want_mac[k][m], 32,
                          &outlen) == NULL)
                return 1;
            c = gcm_keyed(kct_default(), 1, keys[k], ivs[m]);
            if (c == NULL
                || !EVP_EncryptUpdate(c, NULL, &len, aad, sizeof(aad))
                || !EVP_EncryptUpdate(c, ct, &len, msgs[m], MSGLEN)
                || !EVP_EncryptFinal_ex(c, ct + len, &fin)
                || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                       ct + MSGLEN) <= 0) {
                EVP_CIPHER_CTX_free(c);
                return 1;
            }
            EVP_CIPHER_CTX_free(c);
            for (row = 0; row < (int)kct_nfams; row++)
                if ((want_row_len[row][k][m] = kct_fam_run(
                         kct_default(), row_of(row), keys[k],
                         row_of(row)->keylen, msgs[m], MSGLEN,
                         want_row[row][k][m])) == 0)
                    return 1;
        }
    }
    return 0;
}

/*
 * Made on one thread, which exits; used and freed on another: every kind
 * for every registry row, with two keys each.
 */
#define BATCH_KEYS 2
#define BATCH_ITEMS (W_KINDS * KC_REGISTRY_ROWS * BATCH_KEYS)
typedef struct {
    ITEM items[BATCH_ITEMS];
    int n, bad;
} BATCH;

static void *batch_make(void *arg)
{
    BATCH *b = arg;
    int kind, row, j, k;

    for (kind = 0; kind < W_KINDS; kind++)
        for (row = 0; row < (int)kct_nfams; row++)
            for (j = 0; j < BATCH_KEYS; j++) {
                k = (row + 3 * j) % NKEYS;
                if (!item_make(&b->items[b->n++], kind, row, k,
                               (kind + k) % NMSGS))
                    b->bad++;
            }
    return NULL;
}

static void *batch_finish(void *arg)
{
    BATCH *b = arg;
    int i;

    for (i = 0; i < b->n; i++)
        if (!item_finish(&b->items[i]))
            b->bad++;
    return NULL;
}

static void test_handoff_after_exit(void)
{
    static BATCH b[2];
    uint64_t entries = kct_counter(KEYCACHE_PARAM_ENTRIES);
    pthread_t t[2];
    int round, i;

    for (round = 0; round < 3; round++) {
        memset(b, 0, sizeof(b));
        /* A: make and exit; its cache is freed under the leased contexts */
        for (i = 0; i < 2; i++)
            CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, batch_make,
                                                 &b[i]), 0);
        for (i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_ENTRIES), entries);
        /* B: use and free each batch on another new thread */
        for (i = 0; i < 2; i++)
            CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, batch_finish,
                                                 &b[i]), 0);
        for (i = 0; i < 2; i++) {
            pthread_join(t[i], NULL);
            CU_ASSERT_EQUAL(b[i].n, BATCH_ITEMS);
            CU_ASSERT_EQUAL(b[i].bad, 0);
        }
    }
    CU_ASSERT_EQUAL(kct_counter(KEYCACHE_PARAM_ENTRIES), entries);
}

/* Made on a live thread, used on the main thread; the maker keeps going. */
static void *batch_make_and_wait(void *arg)
{
    BATCH *b = arg;

    batch_make(b);
    /* then keep using the same keys one-shot from this thread's cache */
    kct_use(kct_keycache());
    {
        int i;

        for (i = 0; i < 3 * NKEYS; i++)
            if (!oneshot(i % NKEYS, i % NMSGS))
                b->bad++;
    }
    kct_use(NULL);
    return NULL;
}

static void test_handoff_live(void)
{
    static BATCH b;
    pthread_t t;
    int i, bad = 0;

    memset(&b, 0, sizeof(b));
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, batch_make, &b), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(b.bad, 0);
    /* main thread finishes them while a second maker works on the keys */
    {
        static BATCH b2;

        memset(&b2, 0, sizeof(b2));
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, batch_make_and_wait,
                                             &b2), 0);
        for (i = 0; i < b.n; i++)
            if (!item_finish(&b.items[i]))
                bad++;
        pthread_join(t, NULL);
        CU_ASSERT_EQUAL(b2.bad, 0);
        batch_finish(&b2);
        CU_ASSERT_EQUAL(b2.bad, 0);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_pipeline(void)
{
    WORKER prod[NPROD], cons[NCONS], one[NONESHOT], reader;
    pthread_t tp[NPROD], tc[NCONS], to[NONESHOT], tr;
    uint64_t hits = kct_counter(KEYCACHE_PARAM_HITS);
    int i, made = 0, used = 0;

    memset(prod, 0, sizeof(prod));
    memset(cons, 0, sizeof(cons));
    memset(one, 0, sizeof(one));
    memset(&reader, 0, sizeof(reader));
    q.producing = NPROD;
    stop_reader = 0;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&tr, NULL, counter_reader,
                                         &reader), 0);
    for (i = 0; i < NCONS; i++) {
        cons[i].id = i;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tc[i], NULL, consumer,
                                             &cons[i]), 0);
    }
    for (i = 0; i < NPROD; i++) {
        prod[i].id = i;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&tp[i], NULL, producer,
                                             &prod[i]), 0);
    }
    for (i = 0; i < NONESHOT; i++) {
        one[i].id = i;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&to[i], NULL, oneshot_worker,
                                             &one[i]), 0);
    }
    for (i = 0; i < NPROD; i++) {
        pthread_join(tp[i], NULL);
        CU_ASSERT_EQUAL(prod[i].bad, 0);
        made += prod[i].done;
    }
    for (i = 0; i < NCONS; i++) {
        pthread_join(tc[i], NULL);
        CU_ASSERT_EQUAL(cons[i].bad, 0);
        used += cons[i].done;
    }
    for (i = 0; i < NONESHOT; i++) {
        pthread_join(to[i], NULL);
        CU_ASSERT_EQUAL(one[i].bad, 0);
        CU_ASSERT_EQUAL(one[i].done, ROUNDS);
    }
    __atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
    pthread_join(tr, NULL);
    CU_ASSERT_EQUAL(reader.bad, 0);
    CU_ASSERT_EQUAL(made, NPROD * ROUNDS);
    CU_ASSERT_EQUAL(used, made);
    /* keys repeat on every thread: the caches were used */
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_HITS) > hits);
}

/*
 * OPENSSL_thread_stop() in the middle of a thread's life drops the
 * thread's cache; the thread goes on with a new one, which must be the
 * cache keycache then counts in (not the one dropped: the provider keeps
 * the thread's cache pointer in a native thread-local as well).
 */
static int keycache_mac(int k, int m)
{
    unsigned char out[32];
    size_t outlen = 0;

    return EVP_Q_mac(kct_keycache(), "HMAC", NULL, "SHA256", NULL, keys[k],
                     32, msgs[m], MSGLEN, out, 32, &outlen) != NULL
           && outlen == 32 && memcmp(out, want_mac[k][m], 32) == 0;
}

static void *stop_and_go(void *arg)
{
    int *bad = arg, i;
    uint64_t h;

    for (i = 0; i < 6; i++)
        if (!keycache_mac(1, i % NMSGS))
            (*bad)++;
    OPENSSL_thread_stop();
    h = kct_counter(KEYCACHE_PARAM_HITS);
    for (i = 0; i < 6; i++)
        if (!keycache_mac(1, i % NMSGS))
            (*bad)++;
    if (h == UINT64_MAX || kct_counter(KEYCACHE_PARAM_HITS) <= h) {
        fprintf(stderr, "\nno hits counted after OPENSSL_thread_stop()\n");
        (*bad)++;
    }
    OPENSSL_thread_stop();
    return NULL;
}

static void test_stop_and_go(void)
{
    CU_ASSERT_EQUAL(kct_thread_problems(stop_and_go), 0);
}

/*
 * Library contexts of their own, one per thread, starting keycache at the
 * same time (a program with a library context per tenant): the starts
 * publish process-wide tables (the default's get_params, GMAC's size) that
 * the other contexts read; under ThreadSanitizer a plain write there is a
 * race; and each family's first contexts there learn what they need at
 * the same time (first_uses()).  Each context's GMAC tag (its final asks
 * for the size), AES-OCB cipher parameters and first uses' outputs must
 * be the default's.
 */
#define NSTARTERS 4
static pthread_barrier_t start_line;

static int gmac_tag(OSSL_LIB_CTX *ctx, unsigned char tag[16])
{
    EVP_MAC *m = EVP_MAC_fetch(ctx, "GMAC", NULL);
    EVP_MAC_CTX *c = m != NULL ? EVP_MAC_CTX_new(m) : NULL;
    OSSL_PARAM p[3];
    size_t len = 0;
    int ok;

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
                                            "AES-256-GCM", 0);
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                             (void *)ivs[0], 12);
    p[2] = OSSL_PARAM_construct_end();
    ok = c != NULL && EVP_MAC_init(c, keys[0], 32, p)
         && EVP_MAC_update(c, msgs[0], MSGLEN)
         && EVP_MAC_final(c, tag, &len, 16) && len == 16;
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    return ok;
}

static size_t ocb_keylen(OSSL_LIB_CTX *ctx)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(ctx, "AES-192-OCB", NULL);
    size_t n = c != NULL ? (size_t)EVP_CIPHER_get_key_length(c) : 0;

    EVP_CIPHER_free(c);
    return n;
}

/*
 * Every family's first contexts in a fresh instance, from several threads
 * at once: what each family learns at its first context (inner.c's gate)
 * is learned once while the others wait.  Into out: every registry row's
 * output (kc_family: a MAC, or a seal) for one key, twice each (the second
 * from the cache where the first admitted the key).
 */
#define FIRST_OUT KCT_FAM_OUT(32)
static int first_uses(OSSL_LIB_CTX *ctx,
                      unsigned char out[2 * KC_REGISTRY_ROWS][FIRST_OUT])
{
    size_t row;
    int i, ok = 1;

    for (row = 0; row < kct_nfams; row++)
        for (i = 0; i < 2; i++)
            ok &= kct_fam_run(ctx, row_of((int)row), keys[1],
                              row_of((int)row)->keylen, msgs[1], 32,
                              out[2 * row + i]) != 0;
    return ok;
}

static int starter_bad[NSTARTERS];

static void *starter(void *arg)
{
    int *bad = arg, round;
    static unsigned char want1[NSTARTERS][2 * KC_REGISTRY_ROWS][FIRST_OUT];
    static unsigned char got1[NSTARTERS][2 * KC_REGISTRY_ROWS][FIRST_OUT];
    unsigned char want[16], got[16];
    int me = (int)(bad - starter_bad);
    OSSL_LIB_CTX *ctx;

    memset(want1[me], 0, sizeof(want1[me]));
    if (!gmac_tag(kct_default(), want) || !first_uses(kct_default(), want1[me])) {
        (*bad)++;
        return NULL;
    }
    for (round = 0; round < 3; round++) {
        pthread_barrier_wait(&start_line);
        ctx = OSSL_LIB_CTX_new();
        if (ctx == NULL || !OSSL_LIB_CTX_load_config(ctx, kct_conf_path())
            || !OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME)
            || !gmac_tag(ctx, got) || memcmp(got, want, 16) != 0
            || ocb_keylen(ctx) != ocb_keylen(kct_default())
            || (memset(got1[me], 0, sizeof(got1[me])),
                !first_uses(ctx, got1[me]))
            || memcmp(got1[me], want1[me], sizeof(got1[me])) != 0) {
            fprintf(stderr, "\nown library context, round %d: not as the "
                    "default\n", round);
            (*bad)++;
        }
        OSSL_LIB_CTX_free(ctx);
    }
    return NULL;
}

static void test_concurrent_starts(void)
{
    pthread_t t[NSTARTERS];
    int *bad = starter_bad, i, made = 0;

    memset(starter_bad, 0, sizeof(starter_bad));
    CU_ASSERT_FATAL(pthread_barrier_init(&start_line, NULL, NSTARTERS) == 0);
    for (i = 0; i < NSTARTERS; i++)
        made += pthread_create(&t[i], NULL, starter, &bad[i]) == 0;
    CU_ASSERT_FATAL(made == NSTARTERS);
    for (i = 0; i < NSTARTERS; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT_EQUAL(bad[i], 0);
    }
    pthread_barrier_destroy(&start_line);
}

/*
 * Threads of a fresh instance resolving digest names at the same time, in
 * different orders: the instance's memo of names is filled by all of them
 * at once, and more pairs are asked than it holds.  Every HMAC must be the
 * default's for that name.
 */
#define NNAMERS 4
static const char *const dg_names[] = {
    "SHA1", "SHA224", "SHA256", "SHA384", "SHA512", "SHA512-224",
    "SHA512-256", "SHA3-224", "SHA3-256", "SHA3-384", "SHA3-512", "MD5",
    "sha256", "SHA2-256", "SHA-256", "sha1", "SHA2-512", "sha3-256",
    "BLAKE2S-256", "SM3"
};
#define NDG (sizeof(dg_names) / sizeof(dg_names[0]))
static const char *const dg_props[] = { NULL, "provider=default" };
static unsigned char want_dg[NDG][64];
static size_t want_dglen[NDG];
static OSSL_LIB_CTX *namers_ctx;
static int namer_bad[NNAMERS];

static int dg_mac(OSSL_LIB_CTX *ctx, size_t d, const char *props,
                  unsigned char out[64], size_t *len)
{
    EVP_MAC *m = EVP_MAC_fetch(ctx, "HMAC", NULL);
    EVP_MAC_CTX *c = m != NULL ? EVP_MAC_CTX_new(m) : NULL;
    OSSL_PARAM p[3], *q = p;
    int ok;

    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)dg_names[d], 0);
    if (props != NULL)
        *q++ = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_PROPERTIES,
                                                (char *)props, 0);
    *q = OSSL_PARAM_construct_end();
    ok = c != NULL && EVP_MAC_init(c, keys[d % NKEYS], 32, p)
         && EVP_MAC_update(c, msgs[0], MSGLEN)
         && EVP_MAC_final(c, out, len, 64);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    return ok;
}

static void *namer(void *arg)
{
    int *bad = arg, round;
    size_t i, d, len;
    unsigned char got[64];

    pthread_barrier_wait(&start_line);
    for (round = 0; round < 3; round++)
        for (i = 0; i < NDG * 2; i++) {
            d = (i / 2 + (size_t)(bad - namer_bad) * 7) % NDG;
            if (want_dglen[d] == 0)
                continue;
            len = 0;
            if (!dg_mac(namers_ctx, d, dg_props[(i + round) % 2], got, &len)
                || len != want_dglen[d]
                || memcmp(got, want_dg[d], len) != 0) {
                fprintf(stderr, "\n  HMAC-%s: not the default's\n",
                        dg_names[d]);
                (*bad)++;
            }
        }
    return NULL;
}

static void test_concurrent_names(void)
{
    pthread_t t[NNAMERS];
    int i, made = 0;
    size_t d;

    /* a name the default does not have here is left out (its length 0) */
    for (d = 0; d < NDG; d++)
        if (!dg_mac(kct_default(), d, NULL, want_dg[d], &want_dglen[d]))
            want_dglen[d] = 0;
    ERR_clear_error();
    namers_ctx = OSSL_LIB_CTX_new();
    CU_ASSERT_FATAL(namers_ctx != NULL
                    && OSSL_LIB_CTX_load_config(namers_ctx, kct_conf_path())
                    && OSSL_PROVIDER_available(namers_ctx,
                                               KEYCACHE_PROVIDER_NAME));
    CU_ASSERT_FATAL(pthread_barrier_init(&start_line, NULL, NNAMERS) == 0);
    for (i = 0; i < NNAMERS; i++)
        made += pthread_create(&t[i], NULL, namer, &namer_bad[i]) == 0;
    CU_ASSERT_FATAL(made == NNAMERS);
    for (i = 0; i < NNAMERS; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT_EQUAL(namer_bad[i], 0);
    }
    pthread_barrier_destroy(&start_line);
    OSSL_LIB_CTX_free(namers_ctx);
    namers_ctx = NULL;
}

/*
 * Threads copying one keyed template at the same time (rust-openssl's
 * CipherCtx::copy takes the template shared): a copy only reads it.  Each
 * thread seals with every copy and checks the default's bytes; TSan runs
 * this (tools/test-all.sh).
 */
#define NCOPIERS 4
#define NCOPIES 40
static const char *const copy_ciphers[] = { "AES-256-GCM", "AES-256-OCB" };
static EVP_CIPHER_CTX *copy_tmpl;
static unsigned char copy_want[NCOPIES][48];
static int copy_bad[NCOPIERS];

/* each copy keyed (keys[n % 3]), not given an IV: copies_of(2, ...) */
static int copy_keys;

/* ct || tag of msgs[n] under a copy of t (ivs[n], 12 bytes), into out */
static int seal_copy(const EVP_CIPHER_CTX *t, int n, unsigned char out[48])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l = 0, l2 = 0, ok;

    ok = c != NULL && EVP_CIPHER_CTX_copy(c, t)
         && EVP_EncryptInit_ex(c, NULL, NULL, copy_keys ? keys[n % 3] : NULL,
                               copy_keys ? NULL : ivs[n % NMSGS])
         && EVP_EncryptUpdate(c, out, &l, msgs[n % NMSGS], 32) && l == 32
         && EVP_EncryptFinal_ex(c, out + 32, &l2)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, out + 32);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

/* what each copier makes: the n-th output of a copy of the template */
static int (*copy_one)(int n, unsigned char out[48]);
static size_t copy_len;

static void *copier(void *arg)
{
    int *bad = arg, n;
    unsigned char got[48];

    pthread_barrier_wait(&start_line);
    for (n = 0; n < NCOPIES; n++)
        if (!copy_one(n, got) || memcmp(got, copy_want[n], copy_len) != 0)
            (*bad)++;
    return NULL;
}

/* NCOPIERS threads copying the template at once, each checked */
static void run_copiers(const char *what)
{
    pthread_t t[NCOPIERS];
    int i, made = 0;

    CU_ASSERT_FATAL(pthread_barrier_init(&start_line, NULL, NCOPIERS) == 0);
    for (i = 0; i < NCOPIERS; i++) {
        copy_bad[i] = 0;
        made += pthread_create(&t[i], NULL, copier, &copy_bad[i]) == 0;
    }
    CU_ASSERT_FATAL(made == NCOPIERS);
    for (i = 0; i < NCOPIERS; i++) {
        pthread_join(t[i], NULL);
        if (copy_bad[i] != 0)
            fprintf(stderr, "\n  %s: %d copies not the default's\n", what,
                    copy_bad[i]);
        CU_ASSERT_EQUAL(copy_bad[i], 0);
    }
    pthread_barrier_destroy(&start_line);
}

static int seal_tmpl(int n, unsigned char out[48])
{
    return seal_copy(copy_tmpl, n, out);
}

/* the template: keyed alone (0), keyed with an IV (1), or its IV alone */
static EVP_CIPHER_CTX *copy_template(OSSL_LIB_CTX *ctx, const char *name,
                                     int how)
{
    EVP_CIPHER *ci = EVP_CIPHER_fetch(ctx, name, NULL);
    EVP_CIPHER_CTX *t = EVP_CIPHER_CTX_new();

    if (ci == NULL || t == NULL
        || !EVP_EncryptInit_ex(t, ci, NULL, how < 2 ? keys[0] : NULL,
                               how > 0 ? ivs[1] : NULL)) {
        EVP_CIPHER_CTX_free(t);
        t = NULL;
    }
    EVP_CIPHER_free(ci);
    return t;
}

/*
 * NCOPIERS threads copying templates made as copy_template(how) says, a
 * fresh one each of rounds, against the default's copies of its own
 */
static void copies_of(int how, int rounds)
{
    static const char *const hows[] = {
        "", " with IV", ", IV before the key"
    };
    EVP_CIPHER_CTX *ref;
    char what[64];
    size_t c;
    int n, round;

    copy_one = seal_tmpl;
    copy_len = 48;
    copy_keys = how == 2;
    for (c = 0; c < sizeof(copy_ciphers) / sizeof(copy_ciphers[0]); c++)
        for (round = 0; round < rounds; round++) {
            ref = copy_template(kct_default(), copy_ciphers[c], how);
            copy_tmpl = copy_template(kct_keycache(), copy_ciphers[c], how);
            CU_ASSERT_FATAL(ref != NULL && copy_tmpl != NULL);
            for (n = 0; n < NCOPIES; n++)
                CU_ASSERT_FATAL(seal_copy(ref, n, copy_want[n]));
            snprintf(what, sizeof(what), "%s%s", copy_ciphers[c], hows[how]);
            run_copiers(what);
            EVP_CIPHER_CTX_free(copy_tmpl);
            EVP_CIPHER_CTX_free(ref);
        }
    copy_keys = 0;
}

static void test_concurrent_copies(void)
{
    copies_of(0, 1);
    copies_of(1, 1);
}

/*
 * A template given its IV alone, before any key (HAProxy's order), each
 * copy then keyed: the IV the template holds back goes to every copy, and
 * the template is only read, so no copy loses it to another's.  A fresh
 * template each round: its IV is held until a copy takes it.
 */
static void test_concurrent_iv_copies(void)
{
    copies_of(2, 8);
}

/*
 * The same with a keyed GMAC template, a new thread's first context: its
 * copies look its key up (layer/tmpl.c, first_copy()) and, once cached,
 * are keycache's own contexts; the template is only read.
 */
static EVP_MAC_CTX *mac_tmpl;

/* the MAC of msgs[n] under a copy of t, into out (16 bytes) */
static int mac_copy(const EVP_MAC_CTX *t, int n, unsigned char *out)
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_dup(t);
    size_t l = 0;
    int ok = c != NULL && EVP_MAC_update(c, msgs[n % NMSGS], 32)
             && EVP_MAC_final(c, out, &l, 16) && l == 16;

    EVP_MAC_CTX_free(c);
    return ok;
}

static int mac_tmpl_copy(int n, unsigned char out[48])
{
    return mac_copy(mac_tmpl, n, out);
}

static void *gmac_template(void *arg)
{
    EVP_MAC *mac = EVP_MAC_fetch(arg, "GMAC", NULL);
    EVP_MAC_CTX *t = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[3];

    p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-GCM", 0);
    p[1] = OSSL_PARAM_construct_octet_string("iv", ivs[2], 12);
    p[2] = OSSL_PARAM_construct_end();
    if (t != NULL && !EVP_MAC_init(t, keys[0], 32, p)) {
        EVP_MAC_CTX_free(t);
        t = NULL;
    }
    EVP_MAC_free(mac);
    return t;
}

static void test_concurrent_mac_copies(void)
{
    OSSL_LIB_CTX *ctx = kct_keycache_conf("-admit_after\n");
    EVP_MAC_CTX *ref;
    pthread_t maker;
    void *made = NULL;
    int n;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    ref = gmac_template(kct_default());
    CU_ASSERT_FATAL(pthread_create(&maker, NULL, gmac_template, ctx) == 0);
    pthread_join(maker, &made);
    mac_tmpl = made;
    CU_ASSERT_FATAL(ref != NULL && mac_tmpl != NULL);
    for (n = 0; n < NCOPIES; n++)
        CU_ASSERT_FATAL(mac_copy(ref, n, copy_want[n]));
    copy_one = mac_tmpl_copy;
    copy_len = 16;
    run_copiers("GMAC");
    /* each copier's keys were admitted and hit */
    CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_HITS) > 0);
    EVP_MAC_CTX_free(mac_tmpl);
    EVP_MAC_CTX_free(ref);
    OSSL_LIB_CTX_free(ctx);
}

/*
 * The same with a keyed HMAC template, a new thread's first context, so
 * deferred (families/hmac.c) and holding part of a message: the first
 * copies race to make and publish its default context, which every copy
 * then copies, and every copier asks the template its block size, which
 * must not settle it under the others.  A fresh template each round.
 */
static int hmac_tmpl_copy(int n, unsigned char out[48])
{
    /* a question is a read too: SHA-256's block, asked of the template */
    size_t bs = EVP_MAC_CTX_get_block_size(mac_tmpl);
    EVP_MAC_CTX *c = EVP_MAC_CTX_dup(mac_tmpl);
    size_t l = 0;
    int ok = bs == 64 && c != NULL && EVP_MAC_update(c, msgs[n % NMSGS], 32)
             && EVP_MAC_final(c, out, &l, 32) && l == 32;

    EVP_MAC_CTX_free(c);
    return ok;
}

static void *hmac_template(void *arg)
{
    EVP_MAC *mac = EVP_MAC_fetch(arg, "HMAC", NULL);
    EVP_MAC_CTX *t = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[2];

    p[0] = OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0);
    p[1] = OSSL_PARAM_construct_end();
    if (t != NULL && (!EVP_MAC_init(t, keys[1], 32, p)
                      || !EVP_MAC_update(t, msgs[2], 10))) {
        EVP_MAC_CTX_free(t);
        t = NULL;
    }
    EVP_MAC_free(mac);
    return t;
}

static void test_concurrent_hmac_copies(void)
{
    OSSL_LIB_CTX *ctx = kct_keycache_conf("-admit_after\n");
    EVP_MAC_CTX *ref, *keep = mac_tmpl;
    pthread_t maker;
    void *made;
    int n, round;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    ref = hmac_template(kct_default());
    CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
    mac_tmpl = ref;
    for (n = 0; n < NCOPIES; n++)
        CU_ASSERT_FATAL(hmac_tmpl_copy(n, copy_want[n]));
    copy_one = hmac_tmpl_copy;
    copy_len = 32;
    for (round = 0; round < 8; round++) {
        made = NULL;
        CU_ASSERT_FATAL(pthread_create(&maker, NULL, hmac_template, ctx) == 0);
        pthread_join(maker, &made);
        CU_ASSERT_PTR_NOT_NULL_FATAL(made);
        mac_tmpl = made;
        run_copiers("HMAC, a deferred template");
        EVP_MAC_CTX_free(mac_tmpl);
    }
    mac_tmpl = keep;
    EVP_MAC_CTX_free(ref);
    OSSL_LIB_CTX_free(ctx);
}

/*
 * A thread per task: a new thread that uses a family once, in a process
 * whose main thread uses it all the time, keeps nothing of keycache's: no
 * cache (no range of pages the kernel wipes in a child, which every cache
 * has), and it fetches no more than the default does for that use.  What
 * its contexts ask about fetches the instance remembers, not a cache made
 * for the thread.  A library context per row under the deployed
 * admission, warmed on the main thread; then two threads.  Outputs are
 * the default's.
 */
static unsigned long fetches;
KCT_COUNT_FETCHES(EVP_CIPHER, EVP_CIPHER_fetch, fetches)
KCT_COUNT_FETCHES(EVP_MD, EVP_MD_fetch, fetches)

static OSSL_LIB_CTX *once_ctx;

typedef struct {
    const KCT_FAM *f;
    int bad, ranges;
    unsigned long fetched, ref_fetched;
} ONCE;

static size_t once_run(OSSL_LIB_CTX *ctx, const KCT_FAM *f,
                       unsigned char *out, unsigned long *fetched)
{
    unsigned long before = __atomic_load_n(&fetches, __ATOMIC_RELAXED);
    size_t n = kct_fam_run(ctx, f, keys[0], f->keylen, msgs[0], MSGLEN, out);

    *fetched = __atomic_load_n(&fetches, __ATOMIC_RELAXED) - before;
    return n;
}

static void *once_task(void *arg)
{
    ONCE *o = arg;
    unsigned char got[KCT_FAM_OUT(MSGLEN)], want[KCT_FAM_OUT(MSGLEN)];
    size_t n = once_run(once_ctx, o->f, got, &o->fetched);

    o->ranges = kct_wf_ranges();
    o->bad = n == 0
             || once_run(kct_default(), o->f, want, &o->ref_fetched) != n
             || memcmp(got, want, n) != 0;
    return NULL;
}

static void test_thread_once_no_cache(void)
{
    pthread_t t;
    ONCE o;
    size_t i;
    int round, before, k;

    if (!kct_kernel_wipes()) {
        fprintf(stderr, "\n  (this kernel wipes nothing on fork: no pages "
                "to count)\n");
        return;
    }
    for (i = 0; i < kct_nfams; i++) {
        once_ctx = kct_keycache_conf("-admit_after\n");
        CU_ASSERT_FATAL(once_ctx != NULL);
        /* past the main thread's first contexts, its key admitted */
        for (k = 0; k < 8; k++)
            CU_ASSERT(kct_fam_same("the main thread's", once_ctx,
                                   &kct_fams[i], keys[1], kct_fams[i].keylen,
                                   msgs[0], MSGLEN));
        before = kct_wf_ranges();
        CU_ASSERT_FATAL(before >= 0);
        for (round = 0; round < 2; round++) {
            memset(&o, 0, sizeof(o));
            o.f = &kct_fams[i];
            CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, once_task, &o), 0);
            pthread_join(t, NULL);
            if (o.bad || o.ranges != before || o.fetched > o.ref_fetched)
                fprintf(stderr, "\n%s, thread %d: %s, %d ranges wiped in a "
                        "child (%d before), %lu fetches (the default %lu)\n",
                        o.f->id, round, o.bad ? "not the default's output"
                        : "the default's output", o.ranges, before,
                        o.fetched, o.ref_fetched);
            CU_ASSERT_EQUAL(o.bad, 0);
            CU_ASSERT_EQUAL(o.ranges, before);
            CU_ASSERT(o.fetched <= o.ref_fetched);
        }
        OSSL_LIB_CTX_free(once_ctx);
    }
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("threads", suite_init, NULL);

    CU_add_test(s, "contexts outlive the thread that keyed them",
                test_handoff_after_exit);
    CU_add_test(s, "contexts used on another live thread",
                test_handoff_live);
    CU_add_test(s, "producers, consumers, one-shot users, reader",
                test_pipeline);
    CU_add_test(s, "a thread stopped by OPENSSL_thread_stop() goes on",
                test_stop_and_go);
    CU_add_test(s, "library contexts start keycache at the same time",
                test_concurrent_starts);
    CU_add_test(s, "threads resolve digest names at the same time",
                test_concurrent_names);
    CU_add_test(s, "threads copy one keyed template at the same time",
                test_concurrent_copies);
    CU_add_test(s, "threads copying a template holding an IV before its key",
                test_concurrent_iv_copies);
    CU_add_test(s, "threads copy one keyed GMAC template at the same time",
                test_concurrent_mac_copies);
    CU_add_test(s, "threads copy one deferred HMAC template at the same time",
                test_concurrent_hmac_copies);
    CU_add_test(s, "a thread using each family once makes no cache",
                test_thread_once_no_cache);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
