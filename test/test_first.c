/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A thread's first contexts of a family whose registry row says "first"
 * (HMAC's first misses; CMAC, KMAC, GMAC) are the application's default's,
 * neither counted nor cached (provider/layer/layer.h, kc_tcore_app_first();
 * provider/families/hmac.c, app_misses), so that a process
 * using the family once or twice builds none of keycache's private
 * stores; later contexts count their keys and are cached as usual.  Every
 * row of the family registry, with the deployed admission (admit_after =
 * 3), on a new thread, with every family on and with GCM off (GMAC's
 * first contexts only then): each output and failure must be the
 * default's, a key used only in the first contexts (and once more) is not
 * cached where the row says "first" and is elsewhere, and a key used on
 * is cached and hits.  The size such a context reports follows every change, and in a
 * fresh process (this program again, --child) a first CMAC's failed fetch
 * names the application's library context, as the default's does, and
 * every row's work past its first contexts fetches nothing outside the
 * application's library context: keycache's private one builds no store.
 */
#define _GNU_SOURCE             /* RTLD_NEXT (kc_fetch_count.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/provider.h>

#include "kc_fetch_count.h"
#include "kc_test.h"
#include "kc_family.h"
#include "keycache.h"

/* the key's uses after the first contexts: admitted at the third, then hits */
#define USES 6

static OSSL_LIB_CTX *deployed, *gcm_off;
/* the rows' runs: on deployed, or on gcm_off (aes_gcm = off) */
static OSSL_LIB_CTX *under;
/* this program, for a fresh process (not /proc/self/exe: under valgrind) */
static const char *self;
static unsigned char key[KCT_FAM_MAXKEY];
static unsigned char msg[100];

typedef struct {
    const KCT_FAM *f;
    int bad;                    /* outputs or failures unlike the default's */
    uint64_t entries_first;     /* entries made over the first contexts */
    uint64_t hits_first;        /* and hits */
} RUN;

/* The first error's library and reason, and how many there are: as text. */
static void errs(char *buf, size_t len)
{
    unsigned long e = ERR_peek_error();
    int n = 0;

    while (ERR_get_error() != 0)
        n++;
    snprintf(buf, len, "%d errors, first lib %d reason %d", n,
             ERR_GET_LIB(e), ERR_GET_REASON(e));
}

/* kct_fam_run() on both, with a key length the row may refuse: 1 if alike */
static int same_run(const KCT_FAM *f, size_t keylen)
{
    unsigned char a[KCT_FAM_OUT(sizeof(msg))], b[KCT_FAM_OUT(sizeof(msg))];
    char ea[96], eb[96];
    size_t na, nb;

    ERR_clear_error();
    na = kct_fam_run(kct_default(), f, key, keylen, msg, sizeof(msg), a);
    errs(ea, sizeof(ea));
    nb = kct_fam_run(under, f, key, keylen, msg, sizeof(msg), b);
    errs(eb, sizeof(eb));
    if (na == nb && (na == 0 || memcmp(a, b, na) == 0)
        && strcmp(ea, eb) == 0)
        return 1;
    fprintf(stderr, "\n  %s keylen %zu: default %zu bytes (%s), keycache "
            "%zu bytes (%s)\n", f->id, keylen, na, ea, nb, eb);
    return 0;
}

/* A keyed context copied, both finished: 1 if as the default's. */
static int same_dup(const KCT_FAM *f)
{
    unsigned char out[4][KCT_FAM_OUT(sizeof(msg))];
    size_t n[4];
    OSSL_LIB_CTX *ctx[2] = { kct_default(), under };
    int i;

    for (i = 0; i < 2; i++) {
        KCT_FAM_CTX *c = kct_fam_begin(ctx[i], f, 1, key, f->keylen);
        KCT_FAM_CTX *d = c != NULL ? kct_fam_dup(c) : NULL;

        n[2 * i] = c != NULL ? kct_fam_finish(c, msg, sizeof(msg),
                                              out[2 * i]) : 0;
        n[2 * i + 1] = d != NULL ? kct_fam_finish(d, msg, 7,
                                                  out[2 * i + 1]) : 0;
    }
    ERR_clear_error();
    return n[0] != 0 && n[1] != 0 && n[0] == n[2] && n[1] == n[3]
           && memcmp(out[0], out[2], n[0]) == 0
           && memcmp(out[1], out[3], n[1]) == 0;
}

static void *first_thread(void *arg)
{
    RUN *r = arg;
    uint64_t entries = kct_counter_in(under, KEYCACHE_PARAM_ENTRIES);
    uint64_t hits = kct_counter_in(under, KEYCACHE_PARAM_HITS);
    int i;

    /*
     * The thread's first three contexts of the family (a run, a context
     * and its copy, a key length the row may refuse: HMAC takes it), then
     * a fourth keyed with the same key: only it counts, and once is not
     * enough to be cached.
     */
    r->bad += !same_run(r->f, r->f->keylen);
    r->bad += !same_dup(r->f);
    r->bad += !same_run(r->f, r->f->keylen - 1);
    r->bad += !same_run(r->f, r->f->keylen);
    r->entries_first = kct_counter_in(under, KEYCACHE_PARAM_ENTRIES)
                       - entries;
    r->hits_first = kct_counter_in(under, KEYCACHE_PARAM_HITS) - hits;
    /* then the key on until it is cached, and hits */
    for (i = 0; i < USES; i++)
        r->bad += !same_run(r->f, r->f->keylen);
    r->bad += !same_dup(r->f);
    OPENSSL_thread_stop();
    return NULL;
}

/*
 * Every row on ctx, whose configuration has row key off off (or none),
 * that row skipped.  A row's "first" holds either way: GMAC's first
 * contexts with GCM on ask for the default's GCM (test_first_gcm_inside),
 * with it off they find a pass-through or the default's.
 */
static void rows_on(OSSL_LIB_CTX *ctx, const char *off)
{
    size_t row;

    under = ctx;
    for (row = 0; row < kct_nfams; row++) {
        RUN r = { &kct_fams[row], 0, 0, 0 };
        uint64_t hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
        int first = r.f->first;
        pthread_t t;

        if (off != NULL && strcmp(r.f->conf, off) == 0)
            continue;
        CU_ASSERT_FATAL(pthread_create(&t, NULL, first_thread, &r) == 0);
        pthread_join(t, NULL);
        CU_ASSERT_EQUAL(r.bad, 0);
        /* elsewhere the third keying admits the key */
        if (r.entries_first != (first ? 0 : 1) || r.hits_first != 0)
            fprintf(stderr, "\n  %s (%s off): %llu entries, %llu hits over "
                    "the first contexts\n", r.f->id, off ? off : "none",
                    (unsigned long long)r.entries_first,
                    (unsigned long long)r.hits_first);
        CU_ASSERT_EQUAL(r.entries_first, first ? 0 : 1);
        CU_ASSERT_EQUAL(r.hits_first, 0);
        /* counted from the fourth context on: cached, and hit */
        if (kct_counter_in(ctx, KEYCACHE_PARAM_HITS) <= hits)
            fprintf(stderr, "\n  %s: no hit after the first contexts\n",
                    r.f->id);
        CU_ASSERT_TRUE(kct_counter_in(ctx, KEYCACHE_PARAM_HITS) > hits);
    }
}

static void test_first_contexts(void)
{
    rows_on(deployed, NULL);
    /* GMAC's GCM the default's (or a pass-through) */
    rows_on(gcm_off, KEYCACHE_CONF_AES_GCM);
}

/* A scenario that writes what it sees as text into buf (len bytes). */
typedef void (*TEXT_FN)(OSSL_LIB_CTX *libctx, char *buf, size_t len);

typedef struct {
    TEXT_FN fn;
    OSSL_LIB_CTX *libctx;
    char *buf;
    size_t len;
} TEXT_RUN;

static void *text_thread(void *arg)
{
    TEXT_RUN *t = arg;

    t->fn(t->libctx, t->buf, t->len);
    OPENSSL_thread_stop();
    return NULL;
}

/*
 * fn on the default into def, and on a new thread (its first contexts) of
 * libctx into kc: 1 if it ran and the texts are equal (else both shown).
 */
static int same_on_thread(TEXT_FN fn, OSSL_LIB_CTX *libctx, char *def,
                          char *kc, size_t len)
{
    TEXT_RUN run = { fn, libctx, kc, len };
    pthread_t t;

    def[0] = kc[0] = '\0';
    fn(kct_default(), def, len);
    if (pthread_create(&t, NULL, text_thread, &run) != 0)
        return 0;
    pthread_join(t, NULL);
    if (strcmp(def, kc) != 0 || getenv("KC_SHOW") != NULL)
        fprintf(stderr, "\n  default:\n%s  keycache:\n%s", def, kc);
    CU_ASSERT_STRING_EQUAL(def, kc);
    return 1;
}

/*
 * What a first context reports of its size after a call changes it: KMAC's
 * size set once keyed, CMAC keyed again on 3DES (an 8-byte block), KMAC's
 * size given by a keyless init.  The sizes, the MAC, as text.
 */
static void sizes(OSSL_LIB_CTX *libctx, char *buf, size_t len)
{
    static const unsigned char key24[24] = "0123456789abcdef01234567";
    unsigned char out[64];
    size_t outl = 0, n = 0, i, size = 20, sz[2] = { 0, 0 };
    EVP_MAC *m[3] = { EVP_MAC_fetch(libctx, "KMAC-128", NULL),
                      EVP_MAC_fetch(libctx, "CMAC", NULL),
                      EVP_MAC_fetch(libctx, "KMAC-128", NULL) };
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };

    for (i = 0; i < 3; i++) {
        EVP_MAC_CTX *c = m[i] != NULL ? EVP_MAC_CTX_new(m[i]) : NULL;
        int ok;

        if (i != 1) {
            /* set, or given by a keyless init */
            p[0] = OSSL_PARAM_construct_size_t("size", &size);
            ok = c != NULL && EVP_MAC_init(c, key, 32, NULL)
                 && (sz[0] = EVP_MAC_CTX_get_mac_size(c)) != 0
                 && (i == 0 ? EVP_MAC_CTX_set_params(c, p)
                            : EVP_MAC_init(c, NULL, 0, p));
        } else {
            p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-CBC",
                                                    0);
            ok = c != NULL && EVP_MAC_init(c, key, 32, p)
                 && (sz[0] = EVP_MAC_CTX_get_mac_size(c)) != 0;
            p[0] = OSSL_PARAM_construct_utf8_string("cipher", "DES-EDE3-CBC",
                                                    0);
            ok = ok && EVP_MAC_init(c, key24, sizeof(key24), p);
        }
        sz[1] = c != NULL ? EVP_MAC_CTX_get_mac_size(c) : 0;
        ok = ok && EVP_MAC_update(c, msg, sizeof(msg))
             && EVP_MAC_final(c, out, &outl, sizeof(out));
        n += (size_t)snprintf(buf + n, len - n, "%zu: ok %d sizes %zu %zu "
                              "mac ", i, ok, sz[0], sz[1]);
        for (size = 0; ok && size < outl && n + 3 < len; size++)
            n += (size_t)snprintf(buf + n, len - n, "%02x", out[size]);
        n += (size_t)snprintf(buf + n, len - n, "\n");
        size = 20;
        EVP_MAC_CTX_free(c);
        EVP_MAC_free(m[i]);
    }
    ERR_clear_error();
}

static void test_first_sizes(void)
{
    char def[768], kc[768];

    CU_ASSERT_FATAL(same_on_thread(sizes, deployed, def, kc, sizeof(def)));
    /* both MACs ran, at the sizes asked for */
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "0: ok 1 sizes 32 20"));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "1: ok 1 sizes 16 8"));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "2: ok 1 sizes 32 20"));
}

/* One copy's line (made, MAC'd, the MAC, the first error): buf's new end */
static size_t put_copy(char *buf, size_t len, size_t n, int i, int made,
                       int r, const unsigned char *out, size_t outl)
{
    size_t j;

    n += (size_t)snprintf(buf + n, len - n, "copy %d: %d %d ", i, made, r);
    for (j = 0; j < outl && n + 3 < len; j++)
        n += (size_t)snprintf(buf + n, len - n, "%02x", out[j]);
    n += (size_t)snprintf(buf + n, len - n, " err %d\n",
                          ERR_GET_REASON(ERR_peek_error()));
    ERR_clear_error();
    return n;
}

/* Copy c (freed) keyed with params, the message MAC'd, its line written. */
static size_t key_copy(char *buf, size_t len, size_t n, int i, EVP_MAC_CTX *c,
                       const OSSL_PARAM params[])
{
    unsigned char out[32];
    size_t outl = 0;
    int r = c != NULL && EVP_MAC_init(c, key, 32, params)
            && EVP_MAC_update(c, msg, sizeof(msg))
            && EVP_MAC_final(c, out, &outl, sizeof(out));

    n = put_copy(buf, len, n, i, c != NULL, r, out, outl);
    EVP_MAC_CTX_free(c);
    return n;
}

/*
 * Unkeyed templates (a thread's first contexts; GMAC's where GCM is off)
 * set up with these calls, each then copied, and each copy given an IV
 * (GMAC) and keyed, as an application with a template per algorithm does:
 * GMAC with its cipher; a refused cipher, then its own (no longer a
 * record: plain copies); its cipher and an empty array (the default loads
 * its cipher again); fresh (a 4th context: no copy then); KMAC with a
 * customisation, a size and XOF.  What each call returned, the MACs and the first error, as
 * text.
 */
static void template_copies(OSSL_LIB_CTX *libctx, char *buf, size_t len)
{
    static const char *const macs[] = { "GMAC", "GMAC", "GMAC", "GMAC",
                                        "KMAC-128" };
    unsigned char iv[12];
    size_t n = 0, size = 24, k;
    int i, ok, one = 1;

    for (k = 0; k < sizeof(macs) / sizeof(macs[0]); k++) {
        EVP_MAC *mac = EVP_MAC_fetch(libctx, macs[k], NULL);
        EVP_MAC_CTX *t = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        OSSL_PARAM p[3] = { OSSL_PARAM_END, OSSL_PARAM_END, OSSL_PARAM_END };

        ok = t != NULL;
        if (k == 1) {
            p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-CBC",
                                                    0);
            n += (size_t)snprintf(buf + n, len - n, "refused %d %d\n",
                                  EVP_MAC_CTX_set_params(t, p),
                                  ERR_GET_REASON(ERR_peek_error()));
            ERR_clear_error();
        }
        if (k == 4) {
            p[0] = OSSL_PARAM_construct_octet_string("custom", "tmpl", 4);
            p[1] = OSSL_PARAM_construct_size_t("size", &size);
            ok = ok && EVP_MAC_CTX_set_params(t, p);
            p[0] = OSSL_PARAM_construct_int("xof", &one);
            p[1] = OSSL_PARAM_construct_end();
        } else if (k != 3) {
            p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-GCM",
                                                    0);
        }
        ok = ok && (k == 3 || EVP_MAC_CTX_set_params(t, p));
        if (k == 2) {
            p[0] = OSSL_PARAM_construct_end();
            ok = ok && EVP_MAC_CTX_set_params(t, p);
        }
        n += (size_t)snprintf(buf + n, len - n, "template %zu: %d\n", k, ok);
        for (i = 0; ok && i < 6; i++) {
            EVP_MAC_CTX *c = EVP_MAC_CTX_dup(t);

            memset(iv, i, sizeof(iv));
            p[0] = OSSL_PARAM_construct_octet_string("iv", iv, sizeof(iv));
            p[1] = OSSL_PARAM_construct_end();
            n = key_copy(buf, len, n, i, c, k < 4 ? p : NULL);
        }
        EVP_MAC_CTX_free(t);
        EVP_MAC_free(mac);
    }
    ERR_clear_error();
}

/* ... on a new thread, GCM off: the default's MACs, and cached after all */
static void test_first_copies(void)
{
    uint64_t hits = kct_counter_in(gcm_off, KEYCACHE_PARAM_HITS);
    char def[4096], kc[4096];

    CU_ASSERT_FATAL(same_on_thread(template_copies, gcm_off, def, kc,
                                   sizeof(def)));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "template 0: 1\ncopy 0: 1 1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "template 2: 1\ncopy 0: 1 1 "));
    /*
     * the copies of a record are usual contexts, once the thread's first
     * contexts are spent (the first two copies are among them): keys
     * cached, and hit
     */
    CU_ASSERT_TRUE(kct_counter_in(gcm_off, KEYCACHE_PARAM_HITS) >= hits + 5);
}

/*
 * Keyed templates (a thread's first GMAC contexts), each copied per message
 * as rust-openssl does: once the thread's first contexts are spent (the
 * template and two copies), a copy of one keyed in one init looks its key
 * up, and is the family's own context once the key is cached.  Each
 * scenario (keyed_scenario) changes the template between its keying and
 * its copies in one way, which must end the look-ups or be carried into
 * them: a message begun, an IV set, a keyless init with an IV, a second
 * key, the key's bytes changed in place, a final between the copies, an
 * IV given to each copy, the cipher set before the key, cipher and IV set
 * before the key, copies of a copy served from the cache.  What each call
 * returned and the MACs, as text.
 */
enum {
    KS_PLAIN, KS_BEGUN, KS_SET_IV, KS_KEYLESS_IV, KS_REKEYED, KS_IN_PLACE,
    KS_FINAL_BETWEEN, KS_IV_PER_COPY, KS_CIPHER_FIRST, KS_IV_BEFORE_KEY,
    KS_COPY_OF_COPY, KS_COUNT
};
static int keyed_scenario;
static int keyed_ncopies = 10;

static void keyed_copies(OSSL_LIB_CTX *libctx, char *buf, size_t len)
{
    unsigned char k[32], iv[12], iv2[12], out[16];
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "GMAC", NULL);
    EVP_MAC_CTX *t = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    EVP_MAC_CTX *from = t, *first = NULL;
    OSSL_PARAM p[3], q[2];
    size_t n = 0, outl;
    int i, ok, sc = keyed_scenario;

    memcpy(k, key, sizeof(k));
    memset(iv, 0x49, sizeof(iv));
    memset(iv2, 0x32, sizeof(iv2));
    p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-GCM", 0);
    p[1] = OSSL_PARAM_construct_octet_string("iv", iv, sizeof(iv));
    p[2] = OSSL_PARAM_construct_end();
    q[0] = OSSL_PARAM_construct_octet_string("iv", iv2, sizeof(iv2));
    q[1] = OSSL_PARAM_construct_end();
    ok = t != NULL;
    if (sc == KS_CIPHER_FIRST) {
        p[1] = OSSL_PARAM_construct_end();
        ok = ok && EVP_MAC_CTX_set_params(t, p) && EVP_MAC_init(t, k, 32, q);
    } else if (sc == KS_IV_BEFORE_KEY) {
        p[1] = OSSL_PARAM_construct_end();
        ok = ok && EVP_MAC_CTX_set_params(t, p) && EVP_MAC_CTX_set_params(t, q)
             && EVP_MAC_init(t, k, 32, NULL);
    } else {
        if (sc == KS_IV_PER_COPY)
            p[1] = OSSL_PARAM_construct_end();
        ok = ok && EVP_MAC_init(t, k, 32, p);
    }
    if (sc == KS_BEGUN)
        ok = ok && EVP_MAC_update(t, msg, 10);
    if (sc == KS_SET_IV)
        ok = ok && EVP_MAC_CTX_set_params(t, q);
    if (sc == KS_KEYLESS_IV)
        ok = ok && EVP_MAC_init(t, NULL, 0, q);
    if (sc == KS_REKEYED) {
        k[0] ^= 0x5a;
        ok = ok && EVP_MAC_init(t, k, 32, NULL);
    }
    if (sc == KS_IN_PLACE)
        memset(k, 0xee, sizeof(k));
    /* (the template's fifth copy: served from the cache) */
    for (i = 0; sc == KS_COPY_OF_COPY && ok && i < 5; i++) {
        EVP_MAC_CTX_free(first);
        ok = (from = first = EVP_MAC_CTX_dup(t)) != NULL;
    }
    n += (size_t)snprintf(buf + n, len - n, "scenario %d: %d\n", sc, ok);
    for (i = 0; ok && i < keyed_ncopies; i++) {
        EVP_MAC_CTX *c = EVP_MAC_CTX_dup(from);
        int r;

        outl = 0;
        memset(iv2, i, sizeof(iv2));
        r = c != NULL
            && (sc != KS_IV_PER_COPY || EVP_MAC_init(c, NULL, 0, q))
            && EVP_MAC_update(c, msg + 10, sizeof(msg) - 10 - (size_t)i)
            && EVP_MAC_final(c, out, &outl, sizeof(out));
        n = put_copy(buf, len, n, i, c != NULL, r, out, outl);
        EVP_MAC_CTX_free(c);
        if (sc == KS_FINAL_BETWEEN && i == 3) {
            outl = 0;
            r = EVP_MAC_final(t, out, &outl, sizeof(out));
            n += (size_t)snprintf(buf + n, len - n, "final %d %zu\n", r,
                                  outl);
        }
    }
    EVP_MAC_CTX_free(first);
    EVP_MAC_CTX_free(t);
    EVP_MAC_free(mac);
    ERR_clear_error();
}

/* ... each scenario on a new thread, GCM on and off: as the default's */
static void test_first_keyed_copies(void)
{
    OSSL_LIB_CTX *ctx[2] = { deployed, gcm_off };
    char def[2048], kc[2048];
    uint64_t hits;
    int i;

    for (i = 0; i < 2; i++) {
        for (keyed_scenario = 0; keyed_scenario < KS_COUNT;
             keyed_scenario++) {
            hits = kct_counter_in(ctx[i], KEYCACHE_PARAM_HITS);
            CU_ASSERT_FATAL(same_on_thread(keyed_copies, ctx[i], def, kc,
                                           sizeof(def)));
            CU_ASSERT_PTR_NOT_NULL(strstr(def, ": 1\ncopy 0: 1 1 "));
            /* counted from the third copy, admitted at the fifth: hits */
            if (keyed_scenario == KS_PLAIN || keyed_scenario == KS_IN_PLACE
                || keyed_scenario == KS_CIPHER_FIRST)
                CU_ASSERT_TRUE(kct_counter_in(ctx[i], KEYCACHE_PARAM_HITS)
                               >= hits + 4);
        }
    }
}

/* An unkeyed GMAC template copied three times, each copy keyed: as text. */
static void unkeyed_copies(OSSL_LIB_CTX *libctx, char *buf, size_t len)
{
    unsigned char iv[12];
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "GMAC", NULL);
    EVP_MAC_CTX *t = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[2], q[2];
    size_t n = 0;
    int i, ok;

    memset(iv, 0x49, sizeof(iv));
    p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-GCM", 0);
    p[1] = OSSL_PARAM_construct_end();
    q[0] = OSSL_PARAM_construct_octet_string("iv", iv, sizeof(iv));
    q[1] = OSSL_PARAM_construct_end();
    ok = t != NULL && EVP_MAC_CTX_set_params(t, p);
    for (i = 0; ok && i < 3; i++) {
        n = key_copy(buf, len, n, i, EVP_MAC_CTX_dup(t), q);
    }
    EVP_MAC_CTX_free(t);
    EVP_MAC_free(mac);
}

/*
 * ... copied three times: a copy is a new context, so the template and its
 * first two copies are the thread's first contexts and the third only
 * counts the key once (a process copying a template twice builds no
 * private store: first-gmac-copies).  Keyed, and unkeyed then each copy
 * keyed.
 */
static void test_first_copies_spent(void)
{
    char def[1024], kc[1024];
    /* (entries: the thread's go at its exit, counted as evictions) */
    uint64_t misses = kct_counter_in(gcm_off, KEYCACHE_PARAM_MISSES);
    uint64_t evicted = kct_counter_in(gcm_off, KEYCACHE_PARAM_EVICTIONS);

    keyed_scenario = KS_PLAIN;
    keyed_ncopies = 3;
    CU_ASSERT_FATAL(same_on_thread(keyed_copies, gcm_off, def, kc,
                                   sizeof(def)));
    keyed_ncopies = 10;
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "copy 2: 1 1 "));
    CU_ASSERT_FATAL(same_on_thread(unkeyed_copies, gcm_off, def, kc,
                                   sizeof(def)));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "copy 2: 1 1 "));
    CU_ASSERT_EQUAL(kct_counter_in(gcm_off, KEYCACHE_PARAM_MISSES), misses);
    CU_ASSERT_EQUAL(kct_counter_in(gcm_off, KEYCACHE_PARAM_EVICTIONS),
                    evicted);
}

/*
 * A fresh process's first CMAC, in the global library context as
 * configured: a cipher no provider has, then the usual one.  A failed
 * fetch's error names the library context it ran in, so a first context
 * made in keycache's private one would show (the default's is the global
 * one).  The record, as text.
 */
static void p_cmac(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "CMAC", NULL);
    EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    unsigned char out[16];
    size_t n = 0;
    int ok;

    kct_rec_printf(r, "served %s\n", mac != NULL
                   ? kct_provider_name(EVP_MAC_get0_provider(mac))
                   : "(none)");
    p[0] = OSSL_PARAM_construct_utf8_string("cipher", "NOPE-256-CBC", 0);
    kct_rec_printf(r, "set nope rc=%d", c != NULL
                   && EVP_MAC_CTX_set_params(c, p));
    kct_rec_errs(r);
    p[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-CBC", 0);
    ok = c != NULL && EVP_MAC_init(c, key, 32, p)
         && EVP_MAC_update(c, msg, sizeof(msg))
         && EVP_MAC_final(c, out, &n, sizeof(out));
    kct_rec_printf(r, "mac rc=%d ", ok);
    kct_rec_hex(r, out, ok ? n : 0);
    kct_rec_errs(r);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
}

/*
 * This program again (--child what) in a fresh process, the default alone
 * into *def and keycache (admit_after = 3) into *kc: 1 if both wrote.
 */
static int fresh_pair(const char *what, char **def, char **kc)
{
    char conf[KCT_PATH_LEN];

    *def = *kc = NULL;
    CU_ASSERT_FATAL(kct_write_conf(conf, "admit_after = 3\n"));
    CU_ASSERT_TRUE(kct_child_output(self, "/dev/null", what, def));
    CU_ASSERT_TRUE(kct_child_output(self, conf, what, kc));
    unlink(conf);
    return *def != NULL && *kc != NULL;
}

/* the same in a fresh process, the default alone and keycache */
static void test_first_process(void)
{
    char *def, *kc;

    if (!fresh_pair("cmac", &def, &kc))
        goto end;
    /* keycache served the second, not the first */
    CU_ASSERT_TRUE(strncmp(def, "served default\n", 15) == 0);
    CU_ASSERT_TRUE(strncmp(kc, "served keycache\n", 16) == 0);
    /* the fetch failed, naming the global library context */
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "Global default library context"));
    if (strchr(def, '\n') == NULL || strchr(kc, '\n') == NULL
        || strcmp(strchr(def, '\n'), strchr(kc, '\n')) != 0) {
        fprintf(stderr, "\n[cmac] fresh process differs:\n--- default\n%s"
                "--- keycache\n%s", def, kc);
        CU_FAIL("a fresh process's first CMAC differs");
    }
 end:
    free(def);
    free(kc);
}

/*
 * First GMAC contexts set up as applications do, each with a cipher named
 * as given (keycache's GCM under each of its names, another mode, one no
 * provider has, a query given with it), keyed, finished and copied; three
 * to a new thread, so that each is among its thread's first.  The
 * default's GMAC fetches the cipher by name; in a fresh process a failed
 * fetch names its library context and query.  What each call returned,
 * the MACs and the errors, as text.
 */
static const char *const gmac_names[][2] = {
    { "AES-256-GCM", NULL }, { "aes-128-gcm", NULL },
    { "id-aes192-GCM", NULL }, { "AES-256-CBC", NULL },
    { "NOPE-256-GCM", NULL }, { "AES-256-GCM", "" },
    { "AES-128-GCM", "provider=default" }, { "AES-256-GCM", "-fips" },
};
#define GMAC_NAMES (sizeof(gmac_names) / sizeof(gmac_names[0]))

typedef struct {
    OSSL_LIB_CTX *libctx;
    KCT_REC *r;
    size_t from;
    int queryless;              /* only those naming no query */
} GMAC_RUN;

static void *gmac_thread(void *arg)
{
    GMAC_RUN *g = arg;
    unsigned char iv[12], out[16];
    size_t i, n;

    memset(iv, 0x49, sizeof(iv));
    for (i = g->from; i < g->from + 3 && i < GMAC_NAMES; i++) {
        const char *const *nm = gmac_names[i];
        EVP_MAC *mac;
        EVP_MAC_CTX *c, *d;
        OSSL_PARAM p[20];
        size_t keylen = strstr(nm[0], "128") != NULL ? 16
                        : strstr(nm[0], "192") != NULL ? 24 : 32;
        int ok, k = 0, pad = 0;

        if (g->queryless && nm[1] != NULL)
            continue;
        mac = EVP_MAC_fetch(g->libctx, "GMAC", NULL);
        c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        p[k++] = OSSL_PARAM_construct_utf8_string("cipher", (char *)nm[0], 0);
        if (nm[1] != NULL)
            p[k++] = OSSL_PARAM_construct_utf8_string("properties",
                                                      (char *)nm[1], 0);
        /* one with more parameters than a wrapper's array on its stack */
        while (i == 2 && k < 17)
            p[k++] = OSSL_PARAM_construct_int("kc-unknown", &pad);
        p[k++] = OSSL_PARAM_construct_octet_string("iv", iv, sizeof(iv));
        p[k] = OSSL_PARAM_construct_end();
        /* half set first, half at the keying: both reach the default */
        ok = c != NULL
             && ((i & 1) ? EVP_MAC_CTX_set_params(c, p)
                           && EVP_MAC_init(c, key, keylen, NULL)
                         : EVP_MAC_init(c, key, keylen, p));
        kct_rec_printf(g->r, "%s/%s keyed %d", nm[0],
                       nm[1] != NULL ? nm[1] : "-", ok);
        kct_rec_errs(g->r);
        d = ok ? EVP_MAC_CTX_dup(c) : NULL;
        n = 0;
        ok = ok && EVP_MAC_update(c, msg, sizeof(msg))
             && EVP_MAC_final(c, out, &n, sizeof(out));
        kct_rec_printf(g->r, "  mac %d ", ok);
        kct_rec_hex(g->r, out, ok ? n : 0);
        n = 0;
        ok = d != NULL && EVP_MAC_update(d, msg, 9)
             && EVP_MAC_final(d, out, &n, sizeof(out));
        kct_rec_printf(g->r, " copy %d ", ok);
        kct_rec_hex(g->r, out, ok ? n : 0);
        kct_rec_errs(g->r);
        EVP_MAC_CTX_free(d);
        EVP_MAC_CTX_free(c);
        EVP_MAC_free(mac);
    }
    OPENSSL_thread_stop();
    return NULL;
}

static void gmac_runs(OSSL_LIB_CTX *libctx, KCT_REC *r, int queryless)
{
    GMAC_RUN g = { libctx, r, 0, queryless };
    pthread_t t;

    for (g.from = 0; g.from < GMAC_NAMES; g.from += 3) {
        if (pthread_create(&t, NULL, gmac_thread, &g) != 0) {
            kct_rec_printf(r, "no thread\n");
            return;
        }
        pthread_join(t, NULL);
    }
}

static void p_gmac(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    gmac_runs(libctx, r, 0);
}

/* A fresh process's p_gmac: the default alone and keycache, GCM on. */
static void test_first_gmac_process(void)
{
    char *def, *kc;

    if (!fresh_pair("gmac", &def, &kc))
        goto end;
    /* the GCM ones ran, and the failed fetch named its query */
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "AES-256-GCM/- keyed 1\n  mac 1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "id-aes192-GCM/- keyed 1\n  mac 1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "Properties (<null>)"));
    if (strcmp(def, kc) != 0 || getenv("KC_SHOW") != NULL)
        fprintf(stderr, "\n[gmac] fresh process:\n--- default\n%s"
                "--- keycache\n%s", def, kc);
    CU_ASSERT_STRING_EQUAL(def, kc);
 end:
    free(def);
    free(kc);
}

/* ciphers and digests fetched outside the application's context */
static int fetched_elsewhere;
KCT_COUNT_FETCHES(EVP_CIPHER, EVP_CIPHER_fetch, fetched_elsewhere)
KCT_COUNT_FETCHES(EVP_MD, EVP_MD_fetch, fetched_elsewhere)

/* the row p_past() runs alone ("past-ID"), or NULL: all */
static const char *past_row;

/*
 * Every row past its first contexts, in one thread of a fresh process:
 * a hot key among keys used once, so that shapes are learned, probed,
 * templates made and keys admitted and hit, then a keyed context copied.
 * Each output, and what the row fetched outside the application's context.
 */
static void p_past(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    unsigned char k[KCT_FAM_MAXKEY], out[KCT_FAM_OUT(sizeof(msg))];
    size_t row, n;
    int i, before;

    memcpy(k, key, sizeof(k));
    for (row = 0; row < kct_nfams; row++) {
        const KCT_FAM *f = &kct_fams[row];
        KCT_FAM_CTX *c, *d;

        if (past_row != NULL && strcmp(past_row, f->id) != 0)
            continue;
        before = fetched_elsewhere;
        kct_rec_printf(r, "%s:", f->id);
        for (i = 0; i < 12; i++) {
            k[0] = (unsigned char)(i % 3 == 0 ? 0x11 : 0x20 + i);
            n = kct_fam_run(libctx, f, k, f->keylen, msg, sizeof(msg), out);
            kct_rec_printf(r, " ");
            kct_rec_hex(r, out, n > 8 ? 8 : n);
        }
        c = kct_fam_begin(libctx, f, 1, k, f->keylen);
        d = c != NULL ? kct_fam_dup(c) : NULL;
        n = c != NULL ? kct_fam_finish(c, msg, sizeof(msg), out) : 0;
        kct_rec_printf(r, " copied ");
        kct_rec_hex(r, out, n > 8 ? 8 : n);
        n = d != NULL ? kct_fam_finish(d, msg, 7, out) : 0;
        kct_rec_printf(r, " ");
        kct_rec_hex(r, out, n > 8 ? 8 : n);
        kct_rec_errs(r);
        kct_rec_printf(r, "\n  fetched outside the application's context: "
                       "%d\n", fetched_elsewhere - before);
    }
}

/* Does EVP_CIPHER_fetch() above see libcrypto's own calls?  (A CMAC.) */
static int own_fetches_seen(void)
{
    OSSL_LIB_CTX *l = OSSL_LIB_CTX_new();
    unsigned char out[16];
    int before = fetched_elsewhere;
    size_t n;

    if (l == NULL)
        return 0;
    (void)EVP_Q_mac(l, "CMAC", NULL, "AES-128-CBC", NULL, key, 16, msg, 10,
                    out, sizeof(out), &n);
    OSSL_LIB_CTX_free(l);
    return fetched_elsewhere > before;
}

#define KOCT(n, v, l) OSSL_PARAM_construct_octet_string((n), (void *)(v), (l))
#define KSTR(n, v) OSSL_PARAM_construct_utf8_string((n), (char *)(v), 0)

/* one KDF derivation's output or errors, and what it fetched elsewhere */
static void kdf_out(OSSL_LIB_CTX *libctx, KCT_REC *r, const char *name,
                    const OSSL_PARAM *params)
{
    EVP_KDF *kdf = EVP_KDF_fetch(libctx, name, NULL);
    EVP_KDF_CTX *c = kdf != NULL ? EVP_KDF_CTX_new(kdf) : NULL;
    unsigned char out[48];
    int before = fetched_elsewhere, i, ok;

    for (i = 0; i < 2; i++) {
        ok = c != NULL && EVP_KDF_derive(c, out, sizeof(out), params) > 0;
        kct_rec_printf(r, "%s %d ", name, ok);
        kct_rec_hex(r, out, ok ? 8 : 0);
        kct_rec_errs(r);
    }
    kct_rec_printf(r, "  fetched outside the application's context: %d\n",
                   fetched_elsewhere - before);
    EVP_KDF_CTX_free(c);
    EVP_KDF_free(kdf);
}

/* a KDF over a MAC: its name, the MAC's digest or cipher, a key and salt */
static void mac_kdf_out(OSSL_LIB_CTX *libctx, KCT_REC *r, const char *kdf,
                        const char *mac, const char *what, const char *alg)
{
    OSSL_PARAM p[] = {
        KSTR(OSSL_KDF_PARAM_MAC, mac),
        KSTR(what, alg),
        KOCT(OSSL_KDF_PARAM_KEY, key, 32),
        KOCT(OSSL_KDF_PARAM_SALT, msg, 16),
        OSSL_PARAM_END
    };

    kdf_out(libctx, r, kdf, p);
}

/*
 * A fresh process's KDFs, as a TLS handshake's key schedule runs them:
 * the digest and MAC fetches of keycache's pass-through KDFs are made in
 * the application's context, not in keycache's private one, which would
 * build its own digest store (about 3M instructions a process); a digest
 * no provider has fails as the default's does.
 */
static void p_kdf(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    OSSL_PARAM prf[] = {
        KSTR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        KOCT(OSSL_KDF_PARAM_SECRET, key, 32),
        KOCT(OSSL_KDF_PARAM_SEED, msg, 16),
        OSSL_PARAM_END
    }, tls13[] = {
        OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
        KSTR(OSSL_KDF_PARAM_DIGEST, "SHA384"),
        KOCT(OSSL_KDF_PARAM_KEY, key, 48),
        KOCT(OSSL_KDF_PARAM_PREFIX, "tls13 ", 6),
        KOCT(OSSL_KDF_PARAM_LABEL, "key", 3),
        KOCT(OSSL_KDF_PARAM_DATA, "", 0),
        OSSL_PARAM_END
    }, hkdf[] = {
        KSTR(OSSL_KDF_PARAM_DIGEST, "SHA256"),
        KOCT(OSSL_KDF_PARAM_KEY, key, 32),
        KOCT(OSSL_KDF_PARAM_SALT, msg, 16),
        OSSL_PARAM_END
    }, nope[] = {
        KSTR(OSSL_KDF_PARAM_DIGEST, "SHA-NOPE"),
        KOCT(OSSL_KDF_PARAM_KEY, key, 32),
        OSSL_PARAM_END
    };

    kdf_out(libctx, r, "TLS1-PRF", prf);
    kdf_out(libctx, r, "TLS13-KDF", tls13);
    kdf_out(libctx, r, "HKDF", hkdf);
    mac_kdf_out(libctx, r, "KBKDF", "HMAC", OSSL_KDF_PARAM_DIGEST, "SHA512");
    mac_kdf_out(libctx, r, "KBKDF", "CMAC", OSSL_KDF_PARAM_CIPHER,
                "AES-256-CBC");
    mac_kdf_out(libctx, r, "SSKDF", "HMAC", OSSL_KDF_PARAM_DIGEST, "SHA256");
    kdf_out(libctx, r, "HKDF", nope);
}

/*
 * A fresh process's p_past, all rows and then each alone (the first calls
 * of its kind in that process): as the default's, and no row fetches
 * outside the application's context, where keycache's private one would
 * build its own cipher or digest store: millions of instructions a process.
 */
static void past_process(const char *id)
{
    char what[64], *def, *kc;
    const char *p;

    snprintf(what, sizeof(what), "past%s%s", id != NULL ? "-" : "",
             id != NULL ? id : "");
    if (!fresh_pair(what, &def, &kc))
        goto end;
    /* the reference fetches only in its own context */
    for (p = def; (p = strstr(p, "context: ")) != NULL; p += 9)
        CU_ASSERT_EQUAL(p[9], '0');
    if (strstr(kc, "own fetches seen: yes") == NULL)
        fprintf(stderr, "\n[past] note: libcrypto binds its own fetches: "
                "fetches elsewhere not counted\n");
    if (strcmp(def, kc) != 0 || getenv("KC_SHOW") != NULL)
        fprintf(stderr, "\n[%s] fresh process:\n--- default\n%s"
                "--- keycache\n%s", what, def, kc);
    CU_ASSERT_STRING_EQUAL(def, kc);
 end:
    free(def);
    free(kc);
}

static void test_kdf_process(void)
{
    char *def, *kc;
    const char *p;

    if (!fresh_pair("kdf", &def, &kc))
        goto end;
    for (p = def; (p = strstr(p, "context: ")) != NULL; p += 9)
        CU_ASSERT_EQUAL(p[9], '0');
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "TLS1-PRF 1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(def, "HKDF 0 "));
    if (strcmp(def, kc) != 0 || getenv("KC_SHOW") != NULL)
        fprintf(stderr, "\n[kdf] fresh process:\n--- default\n%s"
                "--- keycache\n%s", def, kc);
    CU_ASSERT_STRING_EQUAL(def, kc);
 end:
    free(def);
    free(kc);
}

static void test_past_process(void)
{
    size_t row;

    past_process(NULL);
    for (row = 0; row < kct_nfams; row++)
        past_process(kct_fams[row].id);
}

/*
 * A thread's GMAC contexts past its first ones, GCM on: the cipher named
 * before the key, at the keying, and again after it; a hot key and new
 * ones.  Each runs on the default's GCM: keycache counts the GMAC
 * contexts it served and nothing more (test_first_gcm_past).
 */
#define GMAC_PAST 16

static void *gmac_past_thread(void *arg)
{
    GMAC_RUN *g = arg;
    static const char *const ciphers[] = { "AES-256-GCM", "aes-128-gcm" };
    unsigned char iv[12], k[32], out[16];
    EVP_MAC *mac = EVP_MAC_fetch(g->libctx, "GMAC", NULL);
    size_t i, n;

    memset(iv, 0x50, sizeof(iv));
    memcpy(k, key, sizeof(k));
    for (i = 0; mac != NULL && i < GMAC_PAST; i++) {
        const char *cn = ciphers[(i / 4) % 2];
        size_t keylen = cn[4] == '1' ? 16 : 32;
        EVP_MAC_CTX *c = EVP_MAC_CTX_new(mac);
        OSSL_PARAM p[3], q[2];
        int ok;

        k[0] = (unsigned char)(i % 4 == 1 ? 0x30 + i : 0x11);
        p[0] = OSSL_PARAM_construct_utf8_string("cipher", (char *)cn, 0);
        p[1] = OSSL_PARAM_construct_octet_string("iv", iv, sizeof(iv));
        p[2] = OSSL_PARAM_construct_end();
        q[0] = p[1];
        q[1] = p[2];
        switch (i % 4) {
        case 0:
            ok = EVP_MAC_CTX_set_params(c, p)
                 && EVP_MAC_init(c, k, keylen, NULL);
            break;
        case 1:
            ok = EVP_MAC_init(c, k, keylen, p);
            break;
        case 2:
            /* the cipher again once keyed, then a keyless init */
            ok = EVP_MAC_init(c, k, keylen, p)
                 && EVP_MAC_CTX_set_params(c, p)
                 && EVP_MAC_init(c, k, keylen, q);
            break;
        default:
            p[1] = p[2];
            ok = EVP_MAC_CTX_set_params(c, p)
                 && EVP_MAC_CTX_set_params(c, q)
                 && EVP_MAC_init(c, k, keylen, NULL);
        }
        n = 0;
        ok = ok && EVP_MAC_update(c, msg, sizeof(msg))
             && EVP_MAC_final(c, out, &n, sizeof(out));
        kct_rec_printf(g->r, "%zu %s: %d ", i, cn, ok);
        kct_rec_hex(g->r, out, ok ? n : 0);
        kct_rec_errs(g->r);
        EVP_MAC_CTX_free(c);
    }
    EVP_MAC_free(mac);
    OPENSSL_thread_stop();
    return NULL;
}

/*
 * Every MAC row with the application's default unloaded while its
 * contexts live (they hold the provider), past the thread's first ones:
 * one context keyed before and again after, one set before and keyed for
 * the first time after.  The default's contexts fetched their cipher or
 * digest before; a template keycache makes now must not fetch in the
 * application's context, where that would fail.
 */
static OSSL_PROVIDER *unload_me;
/* the row p_unload() runs alone, or NULL: every MAC row */
static const char *unload_row;

static void mac_out(KCT_REC *r, EVP_MAC_CTX *c, const unsigned char *k,
                    size_t keylen, const char *what)
{
    unsigned char out[64];
    size_t n = 0;
    int ok = c != NULL && EVP_MAC_init(c, k, keylen, NULL)
             && EVP_MAC_update(c, msg, sizeof(msg))
             && EVP_MAC_final(c, out, &n, sizeof(out));

    kct_rec_printf(r, "%s %d ", what, ok);
    kct_rec_hex(r, out, ok ? n : 0);
    kct_rec_errs(r);
}

static void p_unload(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    EVP_MAC *mac[KC_REGISTRY_ROWS] = { NULL };
    EVP_MAC_CTX *c[KC_REGISTRY_ROWS][2] = { { NULL } };
    unsigned char k[KCT_FAM_MAXKEY];
    OSSL_PARAM p[3];
    size_t row;
    int i;

    memcpy(k, key, sizeof(k));
    for (row = 0; row < kct_nfams; row++) {
        const KCT_FAM *f = &kct_fams[row];

        if (f->kind != KCT_MAC
            || (unload_row != NULL && strcmp(unload_row, f->id) != 0))
            continue;
        /* past the thread's first contexts: a hot key cached */
        for (i = 0; i < 8; i++) {
            EVP_MAC *m = EVP_MAC_fetch(libctx, f->name, NULL);
            EVP_MAC_CTX *h = m != NULL ? EVP_MAC_CTX_new(m) : NULL;

            mac_out(r, h != NULL && EVP_MAC_CTX_set_params(h,
                           kct_fam_mac_params(f, p, NULL)) ? h : NULL,
                    k, f->keylen, f->id);
            EVP_MAC_CTX_free(h);
            EVP_MAC_free(m);
        }
        mac[row] = EVP_MAC_fetch(libctx, f->name, NULL);
        for (i = 0; i < 2; i++) {
            c[row][i] = mac[row] != NULL ? EVP_MAC_CTX_new(mac[row]) : NULL;
            kct_rec_printf(r, "%s set %d\n", f->id, c[row][i] != NULL
                           && EVP_MAC_CTX_set_params(c[row][i],
                                  kct_fam_mac_params(f, p, NULL)));
        }
        k[0] = 0x70;
        mac_out(r, c[row][0], k, f->keylen, "before");
    }
    kct_rec_printf(r, "unload %d\n", OSSL_PROVIDER_unload(unload_me));
    for (row = 0; row < kct_nfams; row++) {
        const KCT_FAM *f = &kct_fams[row];

        if (f->kind != KCT_MAC
            || (unload_row != NULL && strcmp(unload_row, f->id) != 0))
            continue;
        for (i = 0; i < 6; i++) {
            k[0] = (unsigned char)(0x70 + i % 3);
            mac_out(r, c[row][0], k, f->keylen, "after");
        }
        k[0] = 0x71;
        mac_out(r, c[row][1], k, f->keylen, "first after");
        EVP_MAC_CTX_free(c[row][0]);
        EVP_MAC_CTX_free(c[row][1]);
        EVP_MAC_free(mac[row]);
    }
}

/* the deployed config, its default not activated (the test loads it) */
static void no_default(FILE *out, const char *line, void *arg)
{
    (void)arg;
    if (line != NULL && strncmp(line, "default = ", 10) != 0)
        fputs(line, out);
}

/* as the reference's, which unloaded it and still ran what it had set */
static int unload_same(const KCT_REC *def, const KCT_REC *got)
{
    int ok = kct_rec_same("[unload] the application's default unloaded",
                          def, got)
             && def->buf != NULL && strstr(def->buf, "unload 1\n") != NULL
             && strstr(def->buf, "first after 0") == NULL;

    if (!ok || getenv("KC_SHOW") != NULL)
        fprintf(stderr, "\n[unload] reference:\n%s", def->buf);
    return ok;
}

/* every MAC row together, then each alone (its instance's first work) */
static void test_unload(void)
{
    size_t row;
    int ok;

    for (row = 0; row <= kct_nfams; row++) {
        if (row < kct_nfams && kct_fams[row].kind != KCT_MAC)
            continue;
        unload_row = row < kct_nfams ? kct_fams[row].id : NULL;
        ok = kct_unload_child(p_unload, &unload_me, no_default, unload_same);
        if (!ok)
            fprintf(stderr, "\n  [unload] %s failed\n",
                    unload_row != NULL ? unload_row : "every row");
        CU_ASSERT_TRUE(ok);
    }
    unload_row = NULL;
}

/*
 * A family's first use (what it learns of the default's code, gate.c)
 * under default properties no provider meets, in a new instance: each
 * MAC row fetched by query first, 6 contexts made and keyed then (not
 * compared: keycache's KMAC defers its digest's fetch, and so makes a
 * context the default's newctx fails to), the properties restored, then
 * one key on.  Outputs and failures as the default's, and the key is
 * cached at last: nothing was left unlearned for good.
 */
static void p_learn_nope(OSSL_LIB_CTX *libctx, KCT_REC *r, const char *q,
                         const KCT_FAM *f)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, f->name, q);
    unsigned char k[KCT_FAM_MAXKEY];
    OSSL_PARAM p[3];
    int i;

    memcpy(k, key, sizeof(k));
    (void)EVP_set_default_properties(libctx, "provider=nope");
    for (i = 0; i < 16; i++) {
        EVP_MAC_CTX *c;

        if (i == 6) {
            (void)EVP_set_default_properties(libctx, "");
            ERR_clear_error();
            kct_rec_free(r);
        }
        c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        kct_rec_printf(r, "%s %d new %d ", f->id, i, c != NULL);
        mac_out(r, c != NULL && EVP_MAC_CTX_set_params(c,
                       kct_fam_mac_params(f, p, NULL)) ? c : NULL,
                k, f->keylen, "");
        EVP_MAC_CTX_free(c);
    }
    EVP_MAC_free(mac);
}

static void test_learn_nope(void)
{
    size_t row;

    for (row = 0; row < kct_nfams; row++) {
        const KCT_FAM *f = &kct_fams[row];
        OSSL_LIB_CTX *kc;
        KCT_REC want = { 0 }, got = { 0 };
        uint64_t hits;

        if (f->kind != KCT_MAC)
            continue;
        kc = kct_keycache_conf("");
        CU_ASSERT_FATAL(kc != NULL);
        p_learn_nope(kct_default(), &want, "provider=default", f);
        (void)EVP_set_default_properties(kct_default(), "");
        p_learn_nope(kc, &got, "provider=" KEYCACHE_PROVIDER_NAME, f);
        hits = kct_counter_in(kc, KEYCACHE_PARAM_HITS);
        CU_ASSERT_TRUE(kct_rec_same(f->id, &want, &got));
        if (hits == 0)
            fprintf(stderr, "\n  %s: no hit after a first use under "
                    "provider=nope\n", f->id);
        CU_ASSERT_TRUE(hits > 0);
        kct_rec_free(&want);
        kct_rec_free(&got);
        OSSL_LIB_CTX_free(kc);
    }
}

/* what keycache counted on libctx: a context it served counts once */
static uint64_t made(OSSL_LIB_CTX *libctx)
{
    return kct_counter_in(libctx, KEYCACHE_PARAM_PASSTHROUGH)
           + kct_counter_in(libctx, KEYCACHE_PARAM_MISSES)
           + kct_counter_in(libctx, KEYCACHE_PARAM_HITS);
}

/*
 * With GCM on, a thread's first GMAC contexts naming no query run on the
 * default's own GCM, not keycache's: keycache counts each GMAC context it
 * served and nothing more (a GCM of keycache's inside would count too).
 * (One naming a query keeps it, and so keycache's GCM: p_gmac.)
 */
static void test_first_gcm_inside(void)
{
    KCT_REC want = { 0 }, got = { 0 };
    uint64_t before = made(deployed), n;
    size_t i, queryless = 0;

    for (i = 0; i < GMAC_NAMES; i++)
        queryless += gmac_names[i][1] == NULL;
    gmac_runs(kct_default(), &want, 1);
    gmac_runs(deployed, &got, 1);
    n = made(deployed) - before;
    CU_ASSERT_TRUE(kct_rec_same("first GMACs", &want, &got));
    if (n != queryless)
        fprintf(stderr, "\n  %zu GMAC contexts counted %llu\n", queryless,
                (unsigned long long)n);
    CU_ASSERT_EQUAL(n, queryless);
    kct_rec_free(&want);
    kct_rec_free(&got);
}

/* The same past a thread's first GMAC contexts (gmac_past_thread()). */
static void test_first_gcm_past(void)
{
    KCT_REC want = { 0 }, got = { 0 };
    GMAC_RUN g = { NULL, NULL, 0, 0 };
    uint64_t before, n;
    pthread_t t;

    g.libctx = kct_default();
    g.r = &want;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, gmac_past_thread, &g) == 0);
    pthread_join(t, NULL);
    before = made(deployed);
    g.libctx = deployed;
    g.r = &got;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, gmac_past_thread, &g) == 0);
    pthread_join(t, NULL);
    n = made(deployed) - before;
    CU_ASSERT_TRUE(kct_rec_same("GMACs past the first", &want, &got));
    if (n != GMAC_PAST)
        fprintf(stderr, "\n  %d GMAC contexts counted %llu\n", GMAC_PAST,
                (unsigned long long)n);
    CU_ASSERT_EQUAL(n, GMAC_PAST);
    kct_rec_free(&want);
    kct_rec_free(&got);
}

/*
 * A thread's first GMAC contexts on libctx, where the default properties
 * change between them: AES-256-GCM found (keycache's, where keycache is),
 * a "cipher" whose string is NULL, then "fips=yes" in force and the same
 * name asked again (no provider here has it: the failed fetch names the
 * query it was given), then the properties as before.  What each returned
 * and raised, as text.
 */
static const char *props_back;  /* the query in force before */

static void props_change(OSSL_LIB_CTX *libctx, char *buf, size_t len)
{
    const char *const props[] = { NULL, NULL, "fips=yes", props_back };
    EVP_MAC *mac = EVP_MAC_fetch(libctx, "GMAC", NULL);
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    KCT_REC r = { 0 };
    size_t i;

    for (i = 0; i < 4; i++) {
        EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;

        if (props[i] != NULL)
            EVP_set_default_properties(libctx, props[i]);
        p[0] = OSSL_PARAM_construct_utf8_string("cipher",
                                                i != 1 ? "AES-256-GCM" : NULL,
                                                0);
        kct_rec_printf(&r, "%zu: set %d", i,
                       c != NULL && EVP_MAC_CTX_set_params(c, p));
        kct_rec_errs(&r);
        EVP_MAC_CTX_free(c);
    }
    snprintf(buf, len, "%s", r.buf != NULL ? r.buf : "");
    kct_rec_free(&r);
    EVP_MAC_free(mac);
}

/* ... on the default alone and on a keycache of its own, GCM on */
static void test_first_props_change(void)
{
    OSSL_LIB_CTX *def = OSSL_LIB_CTX_new(), *kc;
    OSSL_PROVIDER *dp;
    char a[2048], b[2048];

    kc = kct_keycache_conf("admit_after = 3\n");
    CU_ASSERT_FATAL(def != NULL && kc != NULL);
    CU_ASSERT_FATAL((dp = OSSL_PROVIDER_load(def, "default")) != NULL);
    props_back = "";
    props_change(def, a, sizeof(a));
    /* on a new thread (its first contexts), then keycache's query back */
    props_back = "?provider=" KEYCACHE_PROVIDER_NAME;
    b[0] = '\0';
    {
        TEXT_RUN run = { props_change, kc, b, sizeof(b) };
        pthread_t t;

        CU_ASSERT_FATAL(pthread_create(&t, NULL, text_thread, &run) == 0);
        pthread_join(t, NULL);
    }
    if (strcmp(a, b) != 0 || getenv("KC_SHOW") != NULL)
        fprintf(stderr, "\n  default:\n%s  keycache:\n%s", a, b);
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "0: set 1\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "2: set 0 err="));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "3: set 1\n"));
    OSSL_PROVIDER_unload(dp);
    OSSL_LIB_CTX_free(kc);
    OSSL_LIB_CTX_free(def);
}

/*
 * A thread that keys every message anew goes cold: its new contexts look
 * nothing up, and CMAC's (GMAC's with GCM off) are the application's
 * default's from the start, as a first context is.  After a warm-up of
 * new CMAC keys, each family's contexts through what a context meets once
 * keyed: an empty array and NULL set, a copy mid-message, a keyless init,
 * the size, a refused cipher, keyed again on another cipher (KMAC: a size
 * set after the key), and one copied before its key.  On the thread's own
 * default library context, so that a failed fetch's data says which one.
 */
static const struct {
    const char *mac, *cipher, *cipher2;
    size_t keylen2;
} cold_fams[] = {
    { "CMAC", "AES-256-CBC", "DES-EDE3-CBC", 24 },
    { "GMAC", "AES-256-GCM", "AES-128-GCM", 16 },
    { "KMAC-128", NULL, NULL, 32 }
};

static void cold_mac(KCT_REC *r, EVP_MAC_CTX *c, const unsigned char *in,
                     size_t inl)
{
    unsigned char out[64];
    size_t n = 0;
    int ok = EVP_MAC_update(c, in, inl) && EVP_MAC_final(c, out, &n,
                                                           sizeof(out));

    kct_rec_printf(r, " mac %d ", ok);
    kct_rec_hex(r, out, ok ? n : 0);
    kct_rec_errs(r);
}

/* cipher (if any) and, for GMAC, an IV: into p, ended */
static void cold_params(size_t f, const char *cipher, unsigned char *iv,
                        OSSL_PARAM p[3])
{
    size_t n = 0;

    if (cipher != NULL)
        p[n++] = OSSL_PARAM_construct_utf8_string("cipher", (char *)cipher,
                                                  0);
    if (f == 1)
        p[n++] = OSSL_PARAM_construct_octet_string("iv", iv, 12);
    p[n] = OSSL_PARAM_construct_end();
}

static void cold_pattern(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    static const OSSL_PARAM empty[] = { OSSL_PARAM_END };
    unsigned char k[32], out[64], iv[12] = { 0 };
    OSSL_PARAM p[3];
    size_t f, i, n;
    int fails = 0, ok;

    for (i = 0; i < 200; i++) {
        kct_fill(k, sizeof(k), 50000 + (uint32_t)i);
        fails += EVP_Q_mac(libctx, "CMAC", NULL, "AES-256-CBC", NULL, k,
                           sizeof(k), msg, 40, out, sizeof(out), &n) == NULL;
    }
    kct_rec_printf(r, "warm-up failures %d\n", fails);
    for (f = 0; f < 3; f++) {
        EVP_MAC *mac = EVP_MAC_fetch(libctx, cold_fams[f].mac, NULL);

        for (i = 0; i < 4; i++) {
            EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL, *d;
            size_t size = 20;

            kct_fill(k, sizeof(k), 60000 + 10 * (uint32_t)f + (uint32_t)i);
            iv[0] = (unsigned char)i;
            cold_params(f, cold_fams[f].cipher, iv, p);
            kct_rec_printf(r, "%s %zu:", cold_fams[f].mac, i);
            if (i == 3) {
                /* copied before its key (CMAC's default cannot) */
                ok = c != NULL && EVP_MAC_CTX_set_params(c, p);
                d = ok ? EVP_MAC_CTX_dup(c) : NULL;
                kct_rec_printf(r, " set %d dup %d", ok, d != NULL);
                kct_rec_errs(r);
                if (d != NULL) {
                    EVP_MAC_CTX_free(c);
                    c = d;
                }
            }
            ok = c != NULL && EVP_MAC_init(c, k, sizeof(k), p);
            kct_rec_printf(r, " init %d", ok);
            kct_rec_errs(r);
            kct_rec_printf(r, " set empty %d",
                           c != NULL && EVP_MAC_CTX_set_params(c, empty));
            kct_rec_printf(r, " set NULL %d",
                           c != NULL && EVP_MAC_CTX_set_params(c, NULL));
            kct_rec_errs(r);
            if (c == NULL)
                continue;
            ok = EVP_MAC_update(c, msg, 40);
            d = EVP_MAC_CTX_dup(c);
            kct_rec_printf(r, " update %d dup %d", ok, d != NULL);
            cold_mac(r, c, msg + 40, 20);
            if (d != NULL) {
                cold_mac(r, d, msg + 60, 7);
                EVP_MAC_CTX_free(d);
            }
            /* a keyless init (GMAC: a new IV) */
            iv[1] = 1;
            cold_params(f, NULL, iv, p);
            kct_rec_printf(r, " reinit %d size %zu",
                           EVP_MAC_init(c, NULL, 0, f == 1 ? p : NULL),
                           EVP_MAC_CTX_get_mac_size(c));
            cold_mac(r, c, msg, sizeof(msg));
            if (cold_fams[f].cipher != NULL) {
                p[0] = OSSL_PARAM_construct_utf8_string("cipher",
                                                        "NOPE-256-CBC", 0);
                p[1] = OSSL_PARAM_construct_end();
                kct_rec_printf(r, " refused %d",
                               EVP_MAC_CTX_set_params(c, p));
                kct_rec_errs(r);
                cold_params(f, cold_fams[f].cipher2, iv, p);
            } else {
                p[0] = OSSL_PARAM_construct_size_t("size", &size);
                p[1] = OSSL_PARAM_construct_end();
            }
            kct_rec_printf(r, " again %d",
                           EVP_MAC_init(c, k, cold_fams[f].keylen2, p));
            kct_rec_errs(r);
            kct_rec_printf(r, " size %zu", EVP_MAC_CTX_get_mac_size(c));
            cold_mac(r, c, msg, 33);
            EVP_MAC_CTX_free(c);
        }
        EVP_MAC_free(mac);
    }
}

/* ... on the default and, GCM off (GMAC's cold contexts too), keycache */
static void test_cold_contexts(void)
{
    KCT_REC want = { 0 }, got = { 0 };
    uint64_t p0 = kct_counter_in(gcm_off, KEYCACHE_PARAM_PASSTHROUGH);

    CU_ASSERT_FATAL(kct_rec_run_thread(cold_pattern, kct_default(), &want));
    CU_ASSERT_FATAL(kct_rec_run_thread(cold_pattern, gcm_off, &got));
    CU_ASSERT_TRUE(kct_rec_same("cold contexts", &want, &got));
    if (getenv("KC_SHOW") != NULL)
        fprintf(stderr, "\n%s", want.buf);
    CU_ASSERT_PTR_NOT_NULL(strstr(want.buf, "warm-up failures 0\n"));
    /* most of the contexts were cold: counted as they were made */
    CU_ASSERT_TRUE(kct_counter_in(gcm_off, KEYCACHE_PARAM_PASSTHROUGH)
                   >= p0 + 100);
    kct_rec_free(&want);
    kct_rec_free(&got);
}

/*
 * A thread keying every message anew, each template MAC row's fresh
 * contexts given a key of a length the default refuses along the way: once
 * the thread's bases are made, such a key reaches a copy of one, and its
 * error must be the default's, raised once.
 */
static void refused_pattern(OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    static const size_t bad[] = { 0, 1 };
    unsigned char k[KCT_FAM_MAXKEY], out[KCT_FAM_OUT(40)];
    OSSL_PARAM p[3];
    size_t f, i, b;

    for (f = 0; f < kct_nfams; f++) {
        const KCT_FAM *fam = &kct_fams[f];
        EVP_MAC *mac;

        if (fam->kind != KCT_MAC)
            continue;
        mac = EVP_MAC_fetch(libctx, fam->name, NULL);
        for (i = 0; i < 100; i++) {
            kct_fill(k, fam->keylen, 70000 + 1000 * (uint32_t)f + (uint32_t)i);
            kct_rec_printf(r, "%s %zu: %zu", fam->id, i,
                           kct_fam_run(libctx, fam, k, fam->keylen, msg, 40,
                                       out));
            kct_rec_errs(r);
            for (b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
                EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;

                kct_rec_printf(r, " key of %zu: %d", bad[b],
                               c != NULL
                               && EVP_MAC_init(c, k, bad[b],
                                               kct_fam_mac_params(fam, p,
                                                                  NULL)));
                kct_rec_errs(r);
                EVP_MAC_CTX_free(c);
            }
        }
        EVP_MAC_free(mac);
    }
}

static void test_refused_keys(void)
{
    OSSL_LIB_CTX *ctx[] = { deployed, kct_keycache() };
    KCT_REC want = { 0 }, got = { 0 };
    size_t n;

    CU_ASSERT_FATAL(kct_rec_run_thread(refused_pattern, kct_default(),
                                       &want));
    for (n = 0; n < 2; n++) {
        CU_ASSERT_FATAL(kct_rec_run_thread(refused_pattern, ctx[n], &got));
        CU_ASSERT_TRUE(kct_rec_same("refused keys", &want, &got));
        kct_rec_free(&got);
    }
    kct_rec_free(&want);
}

static void test_no_conf(void)
{
    CU_FAIL("cannot load keycache with admit_after = 3");
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("a thread's first contexts of a family",
                               NULL, NULL);

    deployed = kct_keycache_conf("admit_after = 3\n");
    gcm_off = kct_keycache_conf("admit_after = 3\naes_gcm = off\n");
    if (deployed == NULL || gcm_off == NULL) {
        CU_add_test(s, "keycache loads with admit_after = 3", test_no_conf);
        return;
    }
    CU_add_test(s, "each the default's, then cached (deployed admission)",
                test_first_contexts);
    CU_add_test(s, "the size a first context reports after a change",
                test_first_sizes);
    CU_add_test(s, "cold contexts of a thread keying every message anew",
                test_cold_contexts);
    CU_add_test(s, "keys the default refuses, on a thread keying anew",
                test_refused_keys);
    CU_add_test(s, "a fresh process's first CMAC, in its own context",
                test_first_process);
    CU_add_test(s, "copies of an unkeyed first GMAC template, cached",
                test_first_copies);
    CU_add_test(s, "copies of a keyed first GMAC template, cached",
                test_first_keyed_copies);
    CU_add_test(s, "a first GMAC template copied twice, uncounted",
                test_first_copies_spent);
    CU_add_test(s, "a first GMAC's GCM is the default's own, not keycache's",
                test_first_gcm_inside);
    CU_add_test(s, "a fresh process past its first contexts, every row",
                test_past_process);
    CU_add_test(s, "a fresh process's KDFs fetch in its own context",
                test_kdf_process);
    CU_add_test(s, "GMACs past the first run on the default's GCM",
                test_first_gcm_past);
    CU_add_test(s, "the application's default unloaded, every MAC row",
                test_unload);
    CU_add_test(s, "a first use under properties no provider meets",
                test_learn_nope);
    CU_add_test(s, "a fresh process's first GMACs, each cipher as named",
                test_first_gmac_process);
    CU_add_test(s, "first GMACs across a change of default properties",
                test_first_props_change);
}

int main(int argc, char **argv)
{
    int ret;

    self = argv[0];
    kct_fill(key, sizeof(key), 0x66697273);
    kct_fill(msg, sizeof(msg), 0x6d736731);
    /* --child cmac: p_cmac in the global context, as configured */
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        KCT_REC r = { 0 };

        if (strncmp(argv[2], "past-", 5) == 0)
            past_row = argv[2] + 5;
        if (strcmp(argv[2], "cmac") != 0 && strcmp(argv[2], "gmac") != 0
            && strcmp(argv[2], "kdf") != 0 && strcmp(argv[2], "past") != 0
            && past_row == NULL)
            return 2;
        ERR_clear_error();
        if (argv[2][0] == 'c')
            p_cmac(NULL, &r);
        else if (argv[2][0] == 'g')
            p_gmac(NULL, &r);
        else if (argv[2][0] == 'k')
            p_kdf(NULL, &r);
        else
            p_past(NULL, &r);
        fputs(r.buf != NULL ? r.buf : "", stdout);
        if (argv[2][0] == 'p')
            printf("own fetches seen: %s\n", own_fetches_seen() ? "yes"
                                                              : "no");
        kct_rec_free(&r);
        return 0;
    }
    ret = kct_main(argc, argv, add_suites);

    OSSL_LIB_CTX_free(deployed);
    OSSL_LIB_CTX_free(gcm_off);
    return ret;
}
