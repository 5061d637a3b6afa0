/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cache entries and idle_ttl (issue 9): no entry may outlive its use.
 *
 * An entry holds key bytes, so an entry that nothing can ever use or sweep
 * again keeps a key in memory for the life of the thread.  Such orphans can
 * arise where a keyed HMAC context leaves the thread cache's bookkeeping:
 *   (a) the context is freed on another thread than the one it was keyed on;
 *   (b) its digest is changed after keying (keycache passes it through);
 *   (c) it is re-keyed with a key longer than KEYCACHE_MAX_KEY_LEN (which
 *       passes through too);
 * and, for reference, (d) a plain entry that is simply left alone.
 *
 * With idle_ttl = 1, after sleeping past the limit and one more use of
 * keycache on the owning thread (which sweeps), no live block allocated by
 * keycache's own code (provider/ sources: kc_heap's allocator hooks,
 * installed before OpenSSL starts, see the allocating file) may hold any of
 * those keys, and keycache-entries must have dropped to what that one use
 * added.  Repeating (a)-(c) with new keys must keep entries within
 * cache_size and live memory flat.  Lastly a context freed on a thread
 * whose own cache has a live entry at the same slot and generation must not
 * end up in that entry.  Every HMAC is compared with the default provider's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_heap.h"
#include "kc_test.h"
#include "keycache.h"

#define KEYLEN 32
#define NTRACKED 16

static unsigned char tracked[NTRACKED][KEYLEN];

/* Number of live keycache blocks holding tracked key |k|. */
static int live_with_key(int k)
{
    return (int)kch_live(tracked[k], KEYLEN, 1, NULL);
}

static unsigned long uncleansed(void)
{
    unsigned long n;

    kch_freed(&n, NULL);
    return n;
}

/* ---------------------------------------------------------------------- */
/* Counters and time                                                      */

static uint64_t entries(OSSL_LIB_CTX *ctx)
{
    return kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES);
}

/* Sleep at least |ms| milliseconds. */
static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/*
 * Start just after the clock's second ticks: idle_ttl counts whole seconds,
 * and a setup that straddled a tick could see its entries swept early.
 */
static void align_to_second(void)
{
    time_t t0 = time(NULL);

    while (time(NULL) == t0)
        sleep_ms(1);
}

/* ---------------------------------------------------------------------- */
/* HMAC through keycache and through the default provider, side by side   */

typedef struct {
    OSSL_LIB_CTX *ctx;         /* keycache configured with idle_ttl */
    EVP_MAC *mac, *ref;        /* keycache's HMAC, the default's */
} ENV;

static int env_init(ENV *env, const char *cache_size, const char *idle_ttl)
{
    char conf[128];

    memset(env, 0, sizeof(*env));
    snprintf(conf, sizeof(conf), "cache_size = %s\nidle_ttl = %s\n",
             cache_size, idle_ttl);
    if ((env->ctx = kct_keycache_conf(conf)) == NULL)
        return 0;
    env->mac = EVP_MAC_fetch(env->ctx, "HMAC", NULL);
    env->ref = EVP_MAC_fetch(kct_default(), "HMAC", NULL);
    /* a test of keycache that ran on the default would prove nothing */
    return env->mac != NULL && env->ref != NULL
           && strcmp(kct_provider_name(EVP_MAC_get0_provider(env->mac)),
                     KEYCACHE_PROVIDER_NAME) == 0;
}

static void env_done(ENV *env)
{
    EVP_MAC_free(env->mac);
    EVP_MAC_free(env->ref);
    OSSL_LIB_CTX_free(env->ctx);
}

/* One context of each, always driven through the same calls. */
typedef struct {
    EVP_MAC_CTX *kc, *ref;
} PAIR;

static int pair_new(PAIR *p, const ENV *env)
{
    p->kc = EVP_MAC_CTX_new(env->mac);
    p->ref = EVP_MAC_CTX_new(env->ref);
    return p->kc != NULL && p->ref != NULL;
}

static void pair_free(PAIR *p)
{
    EVP_MAC_CTX_free(p->kc);
    EVP_MAC_CTX_free(p->ref);
    p->kc = p->ref = NULL;
}

/* Key both (digest NULL: keep it); 1 if both answered alike. */
static int pair_key(PAIR *p, const char *digest, const unsigned char *key,
                    size_t keylen)
{
    OSSL_PARAM params[2], *pp = NULL;
    int a, b;

    if (digest != NULL) {
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                     (char *)digest, 0);
        params[1] = OSSL_PARAM_construct_end();
        pp = params;
    }
    a = EVP_MAC_init(p->kc, key, keylen, pp);
    b = EVP_MAC_init(p->ref, key, keylen, pp);
    ERR_clear_error();
    return a == b;
}

/* Change the digest of both after keying; 1 if both answered alike. */
static int pair_digest(PAIR *p, const char *digest)
{
    OSSL_PARAM params[2];
    int a, b;

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *)digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    a = EVP_MAC_CTX_set_params(p->kc, params);
    b = EVP_MAC_CTX_set_params(p->ref, params);
    ERR_clear_error();
    return a == b;
}

static int mac_once(EVP_MAC_CTX *c, uint32_t seed, unsigned char out[64],
                    size_t *outlen)
{
    unsigned char msg[100];

    kct_fill(msg, sizeof(msg), seed);
    *outlen = 0;
    return EVP_MAC_init(c, NULL, 0, NULL)
           && EVP_MAC_update(c, msg, sizeof(msg))
           && EVP_MAC_final(c, out, outlen, 64);
}

/* Re-init both without a key and MAC a message: 0 if they agree, else 1. */
static int pair_check(PAIR *p, uint32_t seed)
{
    unsigned char got[64], want[64];
    size_t gotlen, wantlen;
    int a = mac_once(p->kc, seed, got, &gotlen);
    int b = mac_once(p->ref, seed, want, &wantlen);

    ERR_clear_error();
    return a != b || gotlen != wantlen || memcmp(got, want, gotlen) != 0;
}

/* EVP_Q_mac (HMAC-SHA256) through keycache and the default: 0 if equal. */
static int one_shot(const ENV *env, const unsigned char *key, size_t keylen,
                    uint32_t seed)
{
    unsigned char msg[100], got[32], want[32];
    size_t gotlen = 0, wantlen = 0;

    kct_fill(msg, sizeof(msg), seed);
    if (EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL, key, keylen,
                  msg, sizeof(msg), want, sizeof(want), &wantlen) == NULL
        || EVP_Q_mac(env->ctx, "HMAC", NULL, "SHA256", NULL, key, keylen,
                     msg, sizeof(msg), got, sizeof(got), &gotlen) == NULL)
        return 1;
    return gotlen != wantlen || memcmp(got, want, gotlen) != 0;
}

/* ---------------------------------------------------------------------- */
/* The cases                                                              */

/*
 * What each case reports: mismatches with the default provider, and
 * whether a tracked key was in a keycache block right after keying (the
 * live scan can see it: its absence later means something).
 */
typedef struct {
    int bad;
    int unseen;
} TALLY;

/* tracked key |k| (k < 0: not tracked) is in keycache's memory now */
static void seen_now(TALLY *t, int k)
{
    if (k >= 0 && live_with_key(k) == 0) {
        t->unseen++;
        fprintf(stderr, "\n  key %d not in keycache's memory after keying\n",
                k);
    }
}

/* Key a pair with SHA256, first warming the key's entry if |warm|. */
static int start(const ENV *env, PAIR *p, TALLY *t, const unsigned char *key,
                 int k, int warm)
{
    if (!pair_new(p, env)) {
        t->bad++;
        return 0;
    }
    if (warm)
        t->bad += one_shot(env, key, KEYLEN, 1);
    t->bad += !pair_key(p, "SHA256", key, KEYLEN);
    seen_now(t, k);
    t->bad += pair_check(p, 2);
    return 1;
}

static void *use_and_free(void *arg)
{
    PAIR *p = arg;
    intptr_t bad = pair_check(p, 3) + pair_check(p, 4);

    pair_free(p);
    return (void *)bad;
}

/* (a) keyed here, used and freed on another thread; this one runs on */
static void case_a(const ENV *env, TALLY *t, const unsigned char *key,
                   int k, int warm)
{
    PAIR p;
    pthread_t th;
    void *ret = NULL;

    if (!start(env, &p, t, key, k, warm))
        return;
    if (pthread_create(&th, NULL, use_and_free, &p) != 0) {
        pair_free(&p);
        t->bad++;
        return;
    }
    pthread_join(th, &ret);
    t->bad += (int)(intptr_t)ret;
}

/* (b) digest changed after keying, used, re-keyed, freed */
static void case_b(const ENV *env, TALLY *t, const unsigned char *key,
                   int k, int warm)
{
    PAIR p;

    if (!start(env, &p, t, key, k, warm))
        return;
    t->bad += !pair_digest(&p, "SHA384");
    t->bad += pair_check(&p, 5);
    t->bad += !pair_key(&p, NULL, key, KEYLEN);
    t->bad += pair_check(&p, 6);
    pair_free(&p);
}

/* (c) re-keyed with a key too long to cache, used, freed */
static void case_c(const ENV *env, TALLY *t, const unsigned char *key,
                   int k, int warm)
{
    unsigned char longkey[KEYCACHE_MAX_KEY_LEN + 72];
    PAIR p;

    if (!start(env, &p, t, key, k, warm))
        return;
    kct_fill(longkey, sizeof(longkey), 77);
    t->bad += !pair_key(&p, NULL, longkey, sizeof(longkey));
    t->bad += pair_check(&p, 7);
    pair_free(&p);
}

/* (d) an entry made by a one-shot MAC and left alone */
static void case_d(const ENV *env, TALLY *t, const unsigned char *key, int k)
{
    t->bad += one_shot(env, key, KEYLEN, 8);
    seen_now(t, k);
}

/* ---------------------------------------------------------------------- */
/* Tests                                                                  */

#define IDLE_MS 2500            /* past idle_ttl = 1 by a whole second */

/* tracked keys: the seven cases of test_idle_sweep, then the lockstep pair */
static const char *const case_names[] = {
    "(a) freed on another thread",
    "(b) digest changed after keying",
    "(c) re-keyed with a long key",
    "(d) plain entry",
    "(a) freed on another thread, key warmed first",
    "(b) digest changed after keying, key warmed first",
    "(c) re-keyed with a long key, key warmed first"
};
#define NCASES 7
#define K_A 7                   /* thread A's key in the lockstep test */
#define K_B 8                   /* thread B's */

static int suite_init(void)
{
    kch_watch_new_keys(tracked[0], KEYLEN, NTRACKED, "KCENT", 0xE7E7E700u);
    return 0;
}

/* The hooks see keycache's blocks and find key bytes in them. */
static void test_scanner(void)
{
    ENV env;
    TALLY t = { 0, 0 };

    CU_ASSERT_TRUE_FATAL(env_init(&env, "8", "0"));
    CU_ASSERT_TRUE(kch_keycache_file("/work/x/provider/cache/store.c"));
    CU_ASSERT_TRUE(kch_keycache_file("provider/families/hmac.c"));
    CU_ASSERT_FALSE(kch_keycache_file("../crypto/hmac/hmac.c"));
    CU_ASSERT_FALSE(
        kch_keycache_file("providers/implementations/macs/hmac.c"));
    case_d(&env, &t, tracked[15], 15);
    CU_ASSERT_EQUAL(t.bad, 0);
    CU_ASSERT_EQUAL(t.unseen, 0);
    env_done(&env);
    /* unloading freed the entry, cleansed, and nothing of keycache's holds
     * the key any more */
    CU_ASSERT_EQUAL(live_with_key(15), 0);
    CU_ASSERT_EQUAL(uncleansed(), 0);
}

/*
 * Every case once with idle_ttl = 1, then a sleep past the limit and one
 * use of keycache on this (the owning) thread: every key must be gone.
 */
static void test_idle_sweep(void)
{
    unsigned char trigger[KEYLEN];
    TALLY t = { 0, 0 };
    uint64_t before, after;
    ENV env;
    int k, left, said;

    CU_ASSERT_TRUE_FATAL(env_init(&env, "16", "1"));
    align_to_second();
    case_a(&env, &t, tracked[0], 0, 0);
    case_b(&env, &t, tracked[1], 1, 0);
    case_c(&env, &t, tracked[2], 2, 0);
    case_d(&env, &t, tracked[3], 3);
    case_a(&env, &t, tracked[4], 4, 1);
    case_b(&env, &t, tracked[5], 5, 1);
    case_c(&env, &t, tracked[6], 6, 1);
    CU_ASSERT_EQUAL(t.bad, 0);
    CU_ASSERT_EQUAL(t.unseen, 0);
    before = entries(env.ctx);

    sleep_ms(IDLE_MS);
    kct_fill(trigger, sizeof(trigger), 0x7E57);
    CU_ASSERT_EQUAL(one_shot(&env, trigger, sizeof(trigger), 9), 0);

    /* all idle entries went; the one use may have added its own */
    after = entries(env.ctx);
    CU_ASSERT_TRUE(after <= 1);
    for (k = 0, said = 0; k < NCASES; k++) {
        left = live_with_key(k);
        CU_ASSERT_EQUAL(left, 0);
        if (left != 0)
            said = fprintf(stderr, "\n  %s: key still in %d keycache"
                           " block(s)", case_names[k], left);
    }
    if (after > 1)
        fprintf(stderr, "\n  entries %llu before the sleep, %llu after"
                " (at most 1 expected)\n", (unsigned long long)before,
                (unsigned long long)after);
    else if (said)
        fprintf(stderr, "\n");
    CU_ASSERT_EQUAL(uncleansed(), 0);
    env_done(&env);
}

/*
 * (a)-(c) again and again with new keys, warmed and not: the number of
 * entries stays within cache_size and, after a warm-up, so does the number
 * of live allocations.
 */
#define CHURN_ROUNDS 400
#define CHURN_WARMUP 40
#define CHURN_SLACK 16          /* blocks: OpenSSL's own per-thread state */

static void test_churn(void)
{
    unsigned char key[KEYLEN];
    TALLY t = { 0, 0 };
    uint64_t n, most = 0;
    size_t base = 0, peak = 0, blocks;
    ENV env;
    int r;

    CU_ASSERT_TRUE_FATAL(env_init(&env, "8", "1"));
    for (r = 0; r < CHURN_ROUNDS; r++) {
        kct_fill(key, sizeof(key), 0xC0000 + 3 * (uint32_t)r);
        case_a(&env, &t, key, -1, r % 2);
        kct_fill(key, sizeof(key), 0xC0001 + 3 * (uint32_t)r);
        case_b(&env, &t, key, -1, r % 2);
        kct_fill(key, sizeof(key), 0xC0002 + 3 * (uint32_t)r);
        case_c(&env, &t, key, -1, r % 2);
        if ((n = entries(env.ctx)) > most)
            most = n;
        kch_counts(&blocks, NULL);
        /*
         * Rounds alternate warmed and not (r % 2), and the entries a round
         * leaves hold different numbers of contexts (one never given back
         * leaves its entry without a template): the base is the larger of
         * one round of each.
         */
        if (r == CHURN_WARMUP || (r == CHURN_WARMUP + 1 && blocks > base))
            base = peak = blocks;
        else if (r > CHURN_WARMUP && blocks > peak)
            peak = blocks;
    }
    CU_ASSERT_EQUAL(t.bad, 0);
    CU_ASSERT_TRUE(most <= 8);
    CU_ASSERT_TRUE(peak <= base + CHURN_SLACK);
    if (most > 8 || peak > base + CHURN_SLACK)
        fprintf(stderr, "\n  up to %llu entries (cache_size 8); live blocks"
                " %zu after warm-up, up to %zu later\n",
                (unsigned long long)most, base, peak);
    env_done(&env);
}

/*
 * A context leased on thread A and freed on thread B must not be taken in
 * by B's cache, even where B's cache has an entry that looks like the one
 * the context came from.
 *
 * Where an entry lands and what generation it gets depend only on what has
 * happened in that cache since it was created (which slots were handed out
 * and freed, how many entries were made), never on the key bytes or the
 * thread's hash seed.  A and B both start with a fresh cache and do exactly
 * the same thing first - one HMAC context keyed with one new key - so A's
 * entry for KA and B's entry for KB sit at the same slot with the same
 * generation: A's lease matches B's entry in everything but the cache it
 * names.  B frees A's context while its own KB context is checked out (so
 * the KB entry is waiting for a context to come back), then uses KB again.
 */
typedef struct {
    const ENV *env;
    PAIR a;                    /* A's context, handed to B */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stage;                 /* 1: A keyed, 2: B done */
    int bad_a, bad_b;
} LOCKSTEP;

static void stage_set(LOCKSTEP *ls, int stage)
{
    pthread_mutex_lock(&ls->lock);
    ls->stage = stage;
    pthread_cond_broadcast(&ls->cond);
    pthread_mutex_unlock(&ls->lock);
}

static void stage_wait(LOCKSTEP *ls, int stage)
{
    pthread_mutex_lock(&ls->lock);
    while (ls->stage < stage)
        pthread_cond_wait(&ls->cond, &ls->lock);
    pthread_mutex_unlock(&ls->lock);
}

static void *lockstep_a(void *arg)
{
    LOCKSTEP *ls = arg;
    PAIR again;

    /* this thread's first use of keycache: first key, fresh cache */
    if (!pair_new(&ls->a, ls->env)
        || !pair_key(&ls->a, "SHA256", tracked[K_A], KEYLEN))
        ls->bad_a++;
    ls->bad_a += pair_check(&ls->a, 10);
    stage_set(ls, 1);
    stage_wait(ls, 2);
    /* A lives on and still computes KA right */
    ls->bad_a += one_shot(ls->env, tracked[K_A], KEYLEN, 11);
    if (!pair_new(&again, ls->env)
        || !pair_key(&again, "SHA256", tracked[K_A], KEYLEN))
        ls->bad_a++;
    ls->bad_a += pair_check(&again, 12);
    pair_free(&again);
    return NULL;
}

static void *lockstep_b(void *arg)
{
    LOCKSTEP *ls = arg;
    PAIR b, fresh;
    int i;

    stage_wait(ls, 1);
    /* the same first steps as A: the KB entry mirrors A's KA entry */
    if (!pair_new(&b, ls->env)
        || !pair_key(&b, "SHA256", tracked[K_B], KEYLEN))
        ls->bad_b++;
    ls->bad_b += pair_check(&b, 13);

    /* A's context, used and freed here while b is checked out */
    ls->bad_b += pair_check(&ls->a, 14);
    pair_free(&ls->a);

    /* b again, then new contexts for KB: all must compute with KB */
    ls->bad_b += pair_check(&b, 15);
    pair_free(&b);
    /*
     * Several KB contexts alive at once, so that every context the KB
     * entry may have kept for reuse is handed out, whatever the order.
     */
    {
        PAIR live[4];

        for (i = 0; i < 4; i++)
            if (!pair_new(&live[i], ls->env)
                || !pair_key(&live[i], "SHA256", tracked[K_B], KEYLEN))
                ls->bad_b++;
        for (i = 0; i < 4; i++) {
            ls->bad_b += pair_check(&live[i], 30 + (uint32_t)i);
            pair_free(&live[i]);
        }
    }
    for (i = 0; i < 3; i++) {
        if (!pair_new(&fresh, ls->env)
            || !pair_key(&fresh, "SHA256", tracked[K_B], KEYLEN))
            ls->bad_b++;
        ls->bad_b += pair_check(&fresh, 16 + (uint32_t)i);
        pair_free(&fresh);
        ls->bad_b += one_shot(ls->env, tracked[K_B], KEYLEN, 20);
    }
    stage_set(ls, 2);
    return NULL;
}

static void lockstep(const char *idle_ttl)
{
    pthread_t ta, tb;
    LOCKSTEP ls;
    ENV env;

    CU_ASSERT_TRUE_FATAL(env_init(&env, "8", idle_ttl));
    memset(&ls, 0, sizeof(ls));
    ls.env = &env;
    pthread_mutex_init(&ls.lock, NULL);
    pthread_cond_init(&ls.cond, NULL);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&ta, NULL, lockstep_a, &ls), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&tb, NULL, lockstep_b, &ls), 0);
    pthread_join(tb, NULL);
    pthread_join(ta, NULL);
    CU_ASSERT_EQUAL(ls.bad_a, 0);
    CU_ASSERT_EQUAL(ls.bad_b, 0);
    if (ls.bad_a != 0 || ls.bad_b != 0)
        fprintf(stderr, "\n  idle_ttl %s: %d mismatches on A, %d on B\n",
                idle_ttl, ls.bad_a, ls.bad_b);
    pthread_cond_destroy(&ls.cond);
    pthread_mutex_destroy(&ls.lock);
    env_done(&env);
}

static void test_lockstep(void)
{
    lockstep("0");
    lockstep("1");
}

/*
 * A thread that keys a few keys once each (a thread per task) holds no
 * more of the heap than it would with the default provider: keycache
 * keeps what it counts in a small record of the thread's, not in a cache
 * (nor in anything a thread stop would have to free).  Counted on the
 * thread, after its work, before it exits: the live blocks it added.
 */
typedef struct {
    OSSL_LIB_CTX *ctx;
    uint32_t seed;
    int bad;
    size_t added;
} TASK;

static void *task_thread(void *arg)
{
    TASK *t = arg;
    unsigned char key[KEYLEN], msg[64], out[32];
    size_t before, after, len;
    int i;

    kch_counts(&before, NULL);
    for (i = 0; i < 4; i++) {
        kct_fill(key, sizeof(key), t->seed + (uint32_t)i);
        kct_fill(msg, sizeof(msg), t->seed + 100 + (uint32_t)i);
        t->bad += EVP_Q_mac(t->ctx, "HMAC", NULL, "SHA256", NULL, key,
                            sizeof(key), msg, sizeof(msg), out, sizeof(out),
                            &len) == NULL;
    }
    kch_counts(&after, NULL);
    t->added = after - before;
    OPENSSL_cleanse(key, sizeof(key));
    return NULL;
}

static size_t task_added(OSSL_LIB_CTX *ctx, uint32_t seed, int *bad)
{
    TASK t = { ctx, seed, 0, 0 };
    pthread_t th;

    if (pthread_create(&th, NULL, task_thread, &t) != 0) {
        (*bad)++;
        return 0;
    }
    pthread_join(th, NULL);
    *bad += t.bad;
    return t.added;
}

static void test_thread_per_task(void)
{
    /* the deployed admission (the tests' config admits at the first use) */
    OSSL_LIB_CTX *ctx = kct_keycache_conf("-" KEYCACHE_CONF_ADMIT_AFTER "\n");
    size_t def, kc;
    int bad = 0, r;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    /* a first thread of each, for what a library context sets up once */
    task_added(kct_default(), 0xD000, &bad);
    task_added(ctx, 0xD100, &bad);
    for (r = 0; r < 3; r++) {
        def = task_added(kct_default(), 0xD200 + 16 * (uint32_t)r, &bad);
        kc = task_added(ctx, 0xD300 + 16 * (uint32_t)r, &bad);
        CU_ASSERT_TRUE(kc <= def);
        if (kc > def)
            fprintf(stderr, "\n  a thread per task: %zu live blocks added "
                    "with keycache, %zu with the default\n", kc, def);
    }
    CU_ASSERT_EQUAL(bad, 0);
    OSSL_LIB_CTX_free(ctx);
}

/* the provider a fetch of |name| in |ctx| finds, and its HMAC-SHA256 */
static const char *mac_provider(OSSL_LIB_CTX *ctx, const char *name,
                                unsigned char *out, size_t *outlen)
{
    static const char key[] = "Jefe", msg[] = "what do ya want for nothing?";
    OSSL_PARAM params[2];
    EVP_MAC *mac = EVP_MAC_fetch(ctx, name, NULL);
    const char *prov = kct_provider_name(mac != NULL
                                         ? EVP_MAC_get0_provider(mac) : NULL);

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 "SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    *outlen = 0;
    if (mac != NULL
        && EVP_Q_mac(ctx, name, NULL, NULL, params, key, sizeof(key) - 1,
                     (const unsigned char *)msg, sizeof(msg) - 1, out, 32,
                     outlen) == NULL)
        *outlen = 0;
    EVP_MAC_free(mac);
    return prov;
}

/*
 * keycache binds the default at its first query, not at start (bind.c).
 * A bind that fails there (here: no library context can be made) leaves
 * keycache offering nothing for good: the fetch finds the default's, with
 * the caller's error queue as it was.  (Control: the same first fetch
 * finds keycache's when nothing fails.)
 */
static void test_bind_fails(void)
{
    /* RFC 4231, test case 2 */
    static const unsigned char want[32] = {
        0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
        0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
        0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43
    };
    OSSL_LIB_CTX *ok = kct_keycache_conf(""), *bad = kct_keycache_conf("");
    unsigned char out[32];
    size_t outlen;
    EVP_CIPHER *c;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    CU_ASSERT_STRING_EQUAL(mac_provider(ok, "HMAC", out, &outlen),
                           KEYCACHE_PROVIDER_NAME);
    CU_ASSERT_TRUE(outlen == 32 && memcmp(out, want, 32) == 0);
    ERR_clear_error();
    ERR_raise_data(ERR_LIB_USER, 7, "before");
    kch_fail_file("crypto/context.c");
    c = EVP_CIPHER_fetch(bad, "AES-256-GCM", NULL);
    kch_fail_file(NULL);
    CU_ASSERT_PTR_NOT_NULL(c);
    if (c != NULL)
        CU_ASSERT_STRING_EQUAL(OSSL_PROVIDER_get0_name(
                                   EVP_CIPHER_get0_provider(c)), "default");
    EVP_CIPHER_free(c);
    CU_ASSERT_EQUAL(ERR_GET_LIB(ERR_peek_last_error()), ERR_LIB_USER);
    CU_ASSERT_EQUAL(ERR_GET_REASON(ERR_peek_last_error()), 7);
    ERR_clear_error();
    /* failed for good: no later fetch binds */
    CU_ASSERT_STRING_EQUAL(mac_provider(bad, "HMAC", out, &outlen),
                           "default");
    CU_ASSERT_TRUE(outlen == 32 && memcmp(out, want, 32) == 0);
    CU_ASSERT_EQUAL(ERR_peek_error(), 0);
    OSSL_LIB_CTX_free(ok);
    OSSL_LIB_CTX_free(bad);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("entries", suite_init, NULL);

    CU_add_test(s, "the heap scan sees keycache's key bytes", test_scanner);
    CU_add_test(s, "idle_ttl sweeps every kind of entry", test_idle_sweep);
    CU_add_test(s, "entries and memory stay bounded", test_churn);
    CU_add_test(s, "a thread per task holds no more than the default's",
                test_thread_per_task);
    CU_add_test(s, "a context freed on another thread stays out of its cache",
                test_lockstep);
    CU_add_test(s, "a bind failing at the first query offers nothing",
                test_bind_fails);
}

int main(int argc, char **argv)
{
    int rc;

    /* before OpenSSL allocates anything */
    if (!kch_install())
        return 1;
    rc = kct_main(argc, argv, add_suites);
    if (uncleansed() != 0) {
        fprintf(stderr, "%lu keycache block(s) freed holding key bytes\n",
                uncleansed());
        rc = 1;
    }
    return rc;
}
