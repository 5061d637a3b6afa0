/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-GCM call-pattern differential tests.
 *
 * Every pattern below drives the EVP cipher API the way some application
 * might, and logs everything it can observe: return values, output bytes and
 * lengths, tags, the context's lengths and the errors left on the queue (in
 * full: code, raising function, file, line and data, see kct_err_next).  The
 * log made against the default provider is the reference; keycache must
 * reproduce it exactly, run after run, with other traffic on the same keys in
 * between so that cached contexts are handed out again.  A context that
 * comes back from the cache with somebody else's IV length, tag, TLS state or
 * key shows up as a differing log line.
 *
 * Independent checks: the default provider's log, and published vectors
 * (McGrew & Viega GCM spec test cases, NIST CAVP) hard-coded below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "kc_test.h"
#include "keycache.h"

#define MAXIN 512               /* largest message a pattern uses */
#define OUTSZ (MAXIN + 32)      /* GCM never outputs more than its input */

/* ---------------------------------------------------------------------- */
/* The log                                                                */

/* Short names for the shared transcript recorder (kc_test.h) */
typedef KCT_REC REC;
#define rec_add kct_rec_printf
#define rec_free kct_rec_free
#define rec_same kct_rec_same

static void rec_hex(REC *r, const char *what, const unsigned char *p,
                    size_t n)
{
    rec_add(r, " %s[%zu]=", what, n);
    kct_rec_hex(r, p, n);
}

/* Moves the error queue into the log, each entry in full (kct_err_next). */
static void rec_errs(REC *r)
{
    char err[KCT_ERR_LEN];

    while (kct_err_next(err, sizeof(err)) != 0)
        rec_add(r, " err(%s)", err);
    rec_add(r, "\n");
}

static int rec_ret(REC *r, const char *what, int ret)
{
    rec_add(r, "%s=%d", what, ret);
    rec_errs(r);
    return ret;
}

/* ---------------------------------------------------------------------- */
/* Recorded EVP steps                                                     */

static void rec_ctx(REC *r, EVP_CIPHER_CTX *ctx)
{
    const EVP_CIPHER *c = EVP_CIPHER_CTX_get0_cipher(ctx);
    int ivlen, keylen, taglen;

    if (c == NULL) {
        rec_add(r, "  ctx: no cipher");
        rec_errs(r);
        return;
    }
    ivlen = EVP_CIPHER_CTX_get_iv_length(ctx);
    keylen = EVP_CIPHER_CTX_get_key_length(ctx);
    taglen = EVP_CIPHER_CTX_get_tag_length(ctx);
    rec_add(r, "  ctx: nid=%d flags=%lx mode=%d block=%d ivlen=%d keylen=%d"
            " taglen=%d enc=%d", EVP_CIPHER_get_nid(c),
            EVP_CIPHER_get_flags(c), EVP_CIPHER_get_mode(c),
            EVP_CIPHER_CTX_get_block_size(ctx), ivlen, keylen, taglen,
            EVP_CIPHER_CTX_is_encrypting(ctx));
    rec_errs(r);
}

/* enc: 1 encrypt, 0 decrypt, -1 keep the context's direction */
static int r_init(REC *r, EVP_CIPHER_CTX *ctx, const EVP_CIPHER *c,
                  const unsigned char *key, const unsigned char *iv, int enc)
{
    int ret;

    rec_add(r, "init(%s,%s,%s,%d)", c == NULL ? "-" : "c",
            key == NULL ? "-" : "k", iv == NULL ? "-" : "iv", enc);
    ret = rec_ret(r, "", EVP_CipherInit_ex(ctx, c, NULL, key, iv, enc));
    rec_ctx(r, ctx);
    return ret;
}

/* out NULL: in is AAD.  Output is logged whole, and left in out. */
static int r_update(REC *r, EVP_CIPHER_CTX *ctx, unsigned char *out,
                    const unsigned char *in, int inl)
{
    int outl = -1, ret;

    ret = EVP_CipherUpdate(ctx, out, &outl, in, inl);
    rec_add(r, "%s(%d)=%d outl=%d", out == NULL ? "aad" : "update", inl, ret,
            outl);
    if (out != NULL && outl > 0 && outl <= OUTSZ)
        rec_hex(r, "out", out, outl);
    rec_errs(r);
    return ret;
}

static int r_aad(REC *r, EVP_CIPHER_CTX *ctx, const unsigned char *aad,
                 int len)
{
    return r_update(r, ctx, NULL, aad, len);
}

static int r_final(REC *r, EVP_CIPHER_CTX *ctx)
{
    unsigned char out[32];
    int outl = -1, ret;

    memset(out, 0x3c, sizeof(out));
    ret = EVP_CipherFinal_ex(ctx, out, &outl);
    rec_add(r, "final=%d outl=%d", ret, outl);
    rec_hex(r, "buf", out, sizeof(out));
    rec_errs(r);
    return ret;
}

/* The whole buffer is logged so that writes past len show up too. */
static int r_get_tag(REC *r, EVP_CIPHER_CTX *ctx, unsigned char *tag,
                     int len)
{
    unsigned char buf[32];
    int ret;

    memset(buf, 0xa5, sizeof(buf));
    ret = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, len, buf);
    rec_add(r, "get_tag(%d)=%d", len, ret);
    rec_hex(r, "buf", buf, sizeof(buf));
    rec_errs(r);
    if (tag != NULL && ret > 0 && len > 0 && len <= 16)
        memcpy(tag, buf, len);
    return ret;
}

static int r_set_tag(REC *r, EVP_CIPHER_CTX *ctx, const unsigned char *tag,
                     int len)
{
    unsigned char buf[32];
    int ret;

    memset(buf, 0, sizeof(buf));
    memcpy(buf, tag, len > 16 ? 16 : len);
    rec_add(r, "set_tag(%d)", len);
    ret = rec_ret(r, "",
                  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, len, buf));
    rec_ctx(r, ctx);
    return ret;
}

static int r_ctrl(REC *r, const char *what, EVP_CIPHER_CTX *ctx, int type,
                  int arg, void *ptr)
{
    rec_add(r, "%s(%d)", what, arg);
    return rec_ret(r, "", EVP_CIPHER_CTX_ctrl(ctx, type, arg, ptr));
}

static int r_set_ivlen(REC *r, EVP_CIPHER_CTX *ctx, int len)
{
    int ret = r_ctrl(r, "set_ivlen", ctx, EVP_CTRL_AEAD_SET_IVLEN, len, NULL);

    rec_ctx(r, ctx);
    return ret;
}

static EVP_CIPHER_CTX *new_ctx(void)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

    if (ctx == NULL)
        abort();
    return ctx;
}

/* ---------------------------------------------------------------------- */
/* Test environment: which cipher object, which keys                      */

typedef struct {
    int bits;
    int fetch;                  /* 1: EVP_CIPHER_fetch, 0: EVP_aes_*_gcm() */
    int keylen;
    const EVP_CIPHER *cipher;
    EVP_CIPHER *fetched;
    unsigned char k1[32], k2[32], k3[32];
} ENV;

static const char *gcm_name(int bits)
{
    return bits == 128 ? "AES-128-GCM" : bits == 192 ? "AES-192-GCM"
                                                     : "AES-256-GCM";
}

static const EVP_CIPHER *gcm_legacy(int bits)
{
    return bits == 128 ? EVP_aes_128_gcm() : bits == 192 ? EVP_aes_192_gcm()
                                                         : EVP_aes_256_gcm();
}

/* Fetches against the calling thread's default library context. */
static void env_init(ENV *e, int bits, int fetch)
{
    memset(e, 0, sizeof(*e));
    e->bits = bits;
    e->fetch = fetch;
    e->keylen = bits / 8;
    kct_fill(e->k1, sizeof(e->k1), 1000 + bits);
    kct_fill(e->k2, sizeof(e->k2), 2000 + bits);
    kct_fill(e->k3, sizeof(e->k3), 3000 + bits);
    if (fetch) {
        e->fetched = EVP_CIPHER_fetch(NULL, gcm_name(bits), NULL);
        e->cipher = e->fetched;
    } else {
        e->cipher = gcm_legacy(bits);
    }
}

static void env_free(ENV *e)
{
    EVP_CIPHER_free(e->fetched);
    e->fetched = NULL;
}

/* One message with its buffers; ivlen 12 means "leave the default alone". */
typedef struct {
    const unsigned char *key;
    int ivlen, aadlen, inlen, taglen;
    unsigned char iv[160];
    unsigned char aad[64];
    unsigned char pt[MAXIN];
    unsigned char ct[OUTSZ];
    unsigned char tag[32];
    unsigned char out[OUTSZ];
} MSG;

static void msg_set(MSG *m, const unsigned char *key, int ivlen, int aadlen,
                    int inlen, uint32_t seed)
{
    memset(m, 0, sizeof(*m));
    m->key = key;
    m->ivlen = ivlen;
    m->aadlen = aadlen;
    m->inlen = inlen;
    m->taglen = 16;
    kct_fill(m->iv, sizeof(m->iv), seed);
    kct_fill(m->aad, sizeof(m->aad), seed + 1);
    kct_fill(m->pt, sizeof(m->pt), seed + 2);
}

/* Keyed init of a fresh context, setting a non-default IV length first. */
static void r_start(REC *r, const ENV *e, EVP_CIPHER_CTX *ctx, const MSG *m,
                    int enc)
{
    if (m->ivlen == 12) {
        r_init(r, ctx, e->cipher, m->key, m->iv, enc);
        return;
    }
    r_init(r, ctx, e->cipher, NULL, NULL, enc);
    r_set_ivlen(r, ctx, m->ivlen);
    r_init(r, ctx, NULL, m->key, m->iv, enc);
}

/* Encrypt m->pt on a fresh context into m->ct and m->tag. */
static int r_seal(REC *r, const ENV *e, MSG *m)
{
    EVP_CIPHER_CTX *ctx = new_ctx();
    int ok;

    rec_add(r, "seal ivlen=%d aad=%d in=%d tag=%d\n", m->ivlen, m->aadlen,
            m->inlen, m->taglen);
    r_start(r, e, ctx, m, 1);
    if (m->aadlen > 0)
        r_aad(r, ctx, m->aad, m->aadlen);
    r_update(r, ctx, m->ct, m->pt, m->inlen);
    ok = r_final(r, ctx);
    ok = r_get_tag(r, ctx, m->tag, m->taglen) > 0 && ok;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* Decrypt m->ct with m->tag on a fresh context; tag_early: before the key. */
static int r_open(REC *r, const ENV *e, MSG *m, int tag_early)
{
    EVP_CIPHER_CTX *ctx = new_ctx();
    int ok;

    rec_add(r, "open ivlen=%d aad=%d in=%d tag=%d early=%d\n", m->ivlen,
            m->aadlen, m->inlen, m->taglen, tag_early);
    if (tag_early) {
        r_init(r, ctx, e->cipher, NULL, NULL, 0);
        r_set_tag(r, ctx, m->tag, m->taglen);
        if (m->ivlen != 12)
            r_set_ivlen(r, ctx, m->ivlen);
        r_init(r, ctx, NULL, m->key, m->iv, 0);
    } else {
        r_start(r, e, ctx, m, 0);
        r_set_tag(r, ctx, m->tag, m->taglen);
    }
    if (m->aadlen > 0)
        r_aad(r, ctx, m->aad, m->aadlen);
    memset(m->out, 0, sizeof(m->out));
    r_update(r, ctx, m->out, m->ct, m->inlen);
    ok = r_final(r, ctx);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* ---------------------------------------------------------------------- */
/* The runner                                                             */

typedef void (*PATTERN)(REC *r, ENV *e);

/*
 * Traffic run between the keycache repetitions of a pattern: the pattern's
 * own keys used with odd state (long IV, short tag, TLS AAD, abandoned
 * messages) and some other key, so that the cache holds contexts with that
 * history when the pattern runs again.  Logged and compared as well.
 */
static void churn(REC *r, ENV *e)
{
    static const unsigned char fixed[12] = "churn-fixed";
    unsigned char tls_aad[13] = { 0 };
    MSG m;
    EVP_CIPHER_CTX *ctx;

    msg_set(&m, e->k1, 60, 20, 33, 77);
    m.taglen = 4;
    r_seal(r, e, &m);
    r_open(r, e, &m, 1);

    msg_set(&m, e->k2, 16, 0, 17, 78);
    r_seal(r, e, &m);
    m.tag[3] ^= 1;
    m.taglen = 13;
    r_open(r, e, &m, 0);

    /* Abandoned mid-message with an 8-byte IV. */
    ctx = new_ctx();
    r_init(r, ctx, e->cipher, NULL, NULL, 1);
    r_set_ivlen(r, ctx, 8);
    r_init(r, ctx, NULL, e->k1, m.iv, 1);
    r_aad(r, ctx, m.aad, 5);
    r_update(r, ctx, m.ct, m.pt, 7);
    EVP_CIPHER_CTX_free(ctx);

    /* A decrypt context left with a short tag set and never finished. */
    ctx = new_ctx();
    r_init(r, ctx, e->cipher, e->k1, m.iv, 0);
    r_set_tag(r, ctx, m.tag, 4);
    r_update(r, ctx, m.out, m.ct, 9);
    EVP_CIPHER_CTX_free(ctx);

    /* TLS state set up and dropped without a record. */
    ctx = new_ctx();
    r_init(r, ctx, e->cipher, e->k1, NULL, 1);
    r_ctrl(r, "iv_fixed", ctx, EVP_CTRL_GCM_SET_IV_FIXED, -1, (void *)fixed);
    tls_aad[11] = 0;
    tls_aad[12] = 40;
    r_ctrl(r, "tls_aad", ctx, EVP_CTRL_AEAD_TLS1_AAD, 13, tls_aad);
    EVP_CIPHER_CTX_free(ctx);

    /* Encrypted, finished, tag read, freed. */
    msg_set(&m, e->k1, 12, 3, 5, 79);
    r_seal(r, e, &m);
    msg_set(&m, e->k3, 12, 0, 64, 80);
    r_seal(r, e, &m);
}

static int check_keycache_cipher(ENV *e)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, gcm_name(e->bits), NULL);
    const char *prov = kct_provider_name(c == NULL ? NULL
                                         : EVP_CIPHER_get0_provider(c));
    int ok = strcmp(prov, KEYCACHE_PROVIDER_NAME) == 0;

    if (!ok)
        fprintf(stderr, "\n%s comes from %s, not keycache\n",
                gcm_name(e->bits), prov);
    EVP_CIPHER_free(c);
    return ok;
}

static void run_one(const char *name, PATTERN fn, int bits, int fetch)
{
    char what[128], cwhat[160];
    REC ref = { 0 }, ref2 = { 0 }, cref = { 0 }, got = { 0 };
    ENV e;
    uint64_t hits = 0, h0;
    int round;

    snprintf(what, sizeof(what), "%s AES-%d %s", name, bits,
             fetch ? "fetched" : "EVP_aes_*_gcm()");
    snprintf(cwhat, sizeof(cwhat), "churn after %s", what);

    /* Reference, twice: the pattern itself must be deterministic. */
    kct_use(kct_default());
    ERR_clear_error();
    env_init(&e, bits, fetch);
    CU_ASSERT_PTR_NOT_NULL(e.cipher);
    fn(&ref, &e);
    churn(&cref, &e);
    fn(&ref2, &e);
    env_free(&e);
    CU_ASSERT(rec_same(what, &ref, &ref2));

    kct_use(kct_keycache());
    ERR_clear_error();
    env_init(&e, bits, fetch);
    CU_ASSERT(check_keycache_cipher(&e));
    for (round = 0; round < 3; round++) {
        h0 = kct_counter(KEYCACHE_PARAM_HITS);
        fn(&got, &e);
        if (round > 0)
            hits += kct_counter(KEYCACHE_PARAM_HITS) - h0;
        CU_ASSERT(rec_same(what, &ref, &got));
        rec_free(&got);
        churn(&got, &e);
        CU_ASSERT(rec_same(cwhat, &cref, &got));
        rec_free(&got);
    }
    env_free(&e);
    kct_use(NULL);
    /* Rounds 2 and 3 repeat round 1's keys: some inits must hit. */
    if (hits == 0)
        fprintf(stderr, "\n%s: no keycache hits on repeated keys\n", what);
    CU_ASSERT(hits > 0);
    rec_free(&ref);
    rec_free(&ref2);
    rec_free(&cref);
}

static void run_pattern(const char *name, PATTERN fn)
{
    static const int bits[] = { 128, 192, 256 };
    size_t i;
    int fetch;

    for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
        for (fetch = 0; fetch <= 1; fetch++)
            run_one(name, fn, bits[i], fetch);
}

/* ---------------------------------------------------------------------- */
/* Patterns                                                               */

/* Fresh context per message, key and IV in one init, keys alternating. */
static void pat_fresh(REC *r, ENV *e)
{
    static const int lens[] = { 1, 16, 61, 0, 300, 17 };
    MSG m;
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        msg_set(&m, i % 3 == 2 ? e->k2 : e->k1, 12, (int)(i * 7) % 21,
                lens[i], 10 + (uint32_t)i);
        r_seal(r, e, &m);
        r_open(r, e, &m, 0);
    }
}

/* Key and IV in separate inits, in both orders, for both directions. */
static void pat_split_init(REC *r, ENV *e)
{
    MSG m;
    int enc, order;

    msg_set(&m, e->k1, 12, 13, 40, 20);
    r_seal(r, e, &m);
    for (enc = 1; enc >= 0; enc--) {
        for (order = 0; order < 3; order++) {
            EVP_CIPHER_CTX *ctx = new_ctx();

            rec_add(r, "split enc=%d order=%d\n", enc, order);
            if (order == 0) {
                r_init(r, ctx, e->cipher, NULL, NULL, enc);
                r_init(r, ctx, NULL, m.key, NULL, enc);
                r_init(r, ctx, NULL, NULL, m.iv, enc);
            } else if (order == 1) {
                r_init(r, ctx, e->cipher, NULL, NULL, enc);
                r_init(r, ctx, NULL, NULL, m.iv, enc);
                r_init(r, ctx, NULL, m.key, NULL, enc);
            } else {
                r_init(r, ctx, e->cipher, m.key, NULL, enc);
                r_init(r, ctx, NULL, NULL, m.iv, -1);
            }
            if (!enc)
                r_set_tag(r, ctx, m.tag, 16);
            r_aad(r, ctx, m.aad, m.aadlen);
            r_update(r, ctx, m.out, enc ? m.pt : m.ct, m.inlen);
            r_final(r, ctx);
            if (enc)
                r_get_tag(r, ctx, NULL, 16);
            EVP_CIPHER_CTX_free(ctx);
        }
    }
}

/* IV lengths set before the key, after it, and through init params. */
static void pat_ivlen(REC *r, ENV *e)
{
    static const int lens[] = { 1, 8, 12, 16, 60, 128, 0, 129, -1 };
    MSG m;
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        EVP_CIPHER_CTX *ctx;

        msg_set(&m, e->k1, 12, 9, 33, 30 + (uint32_t)i);
        /* Explicit SET_IVLEN even for 12 and the invalid lengths. */
        ctx = new_ctx();
        rec_add(r, "ivlen %d before key\n", lens[i]);
        r_init(r, ctx, e->cipher, NULL, NULL, 1);
        r_set_ivlen(r, ctx, lens[i]);
        r_init(r, ctx, NULL, m.key, m.iv, 1);
        r_aad(r, ctx, m.aad, m.aadlen);
        r_update(r, ctx, m.ct, m.pt, m.inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, m.tag, 16);
        EVP_CIPHER_CTX_free(ctx);

        ctx = new_ctx();
        rec_add(r, "ivlen %d decrypt\n", lens[i]);
        r_init(r, ctx, e->cipher, NULL, NULL, 0);
        r_set_ivlen(r, ctx, lens[i]);
        r_init(r, ctx, NULL, m.key, m.iv, 0);
        r_set_tag(r, ctx, m.tag, 16);
        r_aad(r, ctx, m.aad, m.aadlen);
        r_update(r, ctx, m.out, m.ct, m.inlen);
        r_final(r, ctx);
        EVP_CIPHER_CTX_free(ctx);

        /* Before the key, IV in a later init still. */
        ctx = new_ctx();
        rec_add(r, "ivlen %d, key, then iv\n", lens[i]);
        r_init(r, ctx, e->cipher, NULL, NULL, 1);
        r_set_ivlen(r, ctx, lens[i]);
        r_init(r, ctx, NULL, m.key, NULL, 1);
        r_init(r, ctx, NULL, NULL, m.iv, 1);
        r_update(r, ctx, m.ct, m.pt, m.inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        EVP_CIPHER_CTX_free(ctx);

        /* After the key, before the IV. */
        ctx = new_ctx();
        rec_add(r, "ivlen %d after key\n", lens[i]);
        r_init(r, ctx, e->cipher, m.key, NULL, 1);
        r_set_ivlen(r, ctx, lens[i]);
        r_init(r, ctx, NULL, NULL, m.iv, 1);
        r_update(r, ctx, m.ct, m.pt, m.inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        EVP_CIPHER_CTX_free(ctx);
    }

    /* Changed after key and IV: the buffered IV becomes unusable. */
    {
        EVP_CIPHER_CTX *ctx = new_ctx();

        rec_add(r, "ivlen after iv\n");
        r_init(r, ctx, e->cipher, m.key, m.iv, 1);
        r_set_ivlen(r, ctx, 16);
        r_update(r, ctx, m.ct, m.pt, m.inlen);
        r_final(r, ctx);
        EVP_CIPHER_CTX_free(ctx);
    }

    /* EVP_CipherInit_ex2 with the IV length as an init parameter. */
    for (i = 0; i < 3; i++) {
        static const size_t plens[] = { 16, 7, 0 };
        size_t len = plens[i];
        OSSL_PARAM params[2];
        EVP_CIPHER_CTX *ctx = new_ctx();

        params[0] = OSSL_PARAM_construct_size_t("ivlen", &len);
        params[1] = OSSL_PARAM_construct_end();
        rec_add(r, "init_ex2 ivlen %zu", len);
        rec_ret(r, "", EVP_CipherInit_ex2(ctx, e->cipher, m.key, m.iv, 1,
                                          params));
        rec_ctx(r, ctx);
        r_update(r, ctx, m.ct, m.pt, m.inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        EVP_CIPHER_CTX_free(ctx);
    }
}

/* A long IV on one context must not leak into the next with the same key. */
static void pat_ivlen_leak(REC *r, ENV *e)
{
    static const int lens[] = { 60, 8, 1, 128 };
    MSG odd, plain;
    size_t i;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        EVP_CIPHER_CTX *held = new_ctx();

        msg_set(&odd, e->k1, lens[i], 4, 24, 40 + (uint32_t)i);
        msg_set(&plain, e->k1, 12, 4, 24, 50 + (uint32_t)i);
        r_seal(r, e, &odd);
        r_seal(r, e, &plain);
        r_open(r, e, &odd, 0);
        r_open(r, e, &plain, 0);
        r_open(r, e, &plain, 1);

        /* The odd context still alive while a plain one runs. */
        rec_add(r, "held\n");
        r_start(r, e, held, &odd, 1);
        r_seal(r, e, &plain);
        r_update(r, held, odd.out, odd.pt, odd.inlen);
        r_final(r, held);
        r_get_tag(r, held, NULL, 16);
        EVP_CIPHER_CTX_free(held);
        r_seal(r, e, &plain);

        /* Keyed only, no IV given: the IV length is all that is visible. */
        held = new_ctx();
        r_init(r, held, e->cipher, plain.key, NULL, 1);
        EVP_CIPHER_CTX_free(held);
    }
}

/* Expected tag set before or after key and IV, with every tag length. */
static void pat_tags(REC *r, ENV *e)
{
    static const int lens[] = { 4, 8, 12, 13, 16, 0, 17 };
    MSG m;
    size_t i;
    int early;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        msg_set(&m, e->k1, 12, 11, 29, 60 + (uint32_t)i);
        m.taglen = lens[i];
        r_seal(r, e, &m);
        for (early = 0; early <= 1; early++) {
            r_open(r, e, &m, early);
            /* A tag wrong in its last checked byte. */
            if (lens[i] > 0 && lens[i] <= 16) {
                m.tag[lens[i] - 1] ^= 0x40;
                r_open(r, e, &m, early);
                m.tag[lens[i] - 1] ^= 0x40;
            }
        }
    }

    /* A decrypt without any tag must fail even after short tags were set. */
    msg_set(&m, e->k1, 12, 0, 10, 67);
    r_seal(r, e, &m);
    for (early = 0; early <= 1; early++) {
        EVP_CIPHER_CTX *ctx = new_ctx();

        m.taglen = 4;
        r_open(r, e, &m, early);
        rec_add(r, "no tag\n");
        r_init(r, ctx, e->cipher, m.key, m.iv, 0);
        r_update(r, ctx, m.out, m.ct, m.inlen);
        r_final(r, ctx);
        EVP_CIPHER_CTX_free(ctx);
    }

    /*
     * Tags of several lengths set before the key, then an encrypt init:
     * the default keeps one tag buffer, each tag overwriting only its own
     * bytes, and an encrypting context hands it out before final.
     */
    {
        static const int seqs[][3] = {
            { 16, 4, 0 }, { 4, 16, 0 }, { 12, 8, 4 }, { 16, 13, 16 },
            { 5, 0, 0 }
        };
        unsigned char tag[16];
        size_t j;

        for (i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
            EVP_CIPHER_CTX *ctx = new_ctx();

            rec_add(r, "tag image %zu\n", i);
            r_init(r, ctx, e->cipher, NULL, NULL, 0);
            for (j = 0; j < 3 && seqs[i][j] != 0; j++) {
                memset(tag, 0x11 * (int)(j + 1), sizeof(tag));
                r_set_tag(r, ctx, tag, seqs[i][j]);
            }
            r_init(r, ctx, NULL, m.key, m.iv, 1);
            r_get_tag(r, ctx, NULL, 16);
            r_get_tag(r, ctx, NULL, seqs[i][j - 1]);
            r_update(r, ctx, m.out, m.pt, m.inlen);
            r_final(r, ctx);
            r_get_tag(r, ctx, NULL, 16);
            EVP_CIPHER_CTX_free(ctx);
        }
    }

    /* Setting a tag on an encrypting context is refused. */
    {
        EVP_CIPHER_CTX *ctx = new_ctx();

        r_init(r, ctx, e->cipher, m.key, m.iv, 1);
        r_set_tag(r, ctx, m.tag, 16);
        r_update(r, ctx, m.out, m.pt, m.inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        EVP_CIPHER_CTX_free(ctx);
    }
}

/* AAD in one piece, several pieces, none, or only AAD. */
static void pat_aad(REC *r, ENV *e)
{
    static const int pieces[][5] = {
        { 0 }, { 37 }, { 1, 15, 16, 5 }, { 16, 0, 21 }, { 13, 24 }
    };
    MSG m;
    size_t i, j;
    int enc;

    msg_set(&m, e->k1, 12, 37, 45, 70);
    for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        for (enc = 1; enc >= 0; enc--) {
            EVP_CIPHER_CTX *ctx = new_ctx();
            int off = 0;

            rec_add(r, "aad pieces %zu enc=%d\n", i, enc);
            r_init(r, ctx, e->cipher, m.key, m.iv, enc);
            if (!enc)
                r_set_tag(r, ctx, m.tag, 16);
            for (j = 0; j < 5 && (j == 0 || pieces[i][j] != 0); j++) {
                r_aad(r, ctx, m.aad + off, pieces[i][j]);
                off += pieces[i][j];
            }
            r_update(r, ctx, enc ? m.ct : m.out, enc ? m.pt : m.ct, m.inlen);
            r_final(r, ctx);
            if (enc)
                r_get_tag(r, ctx, m.tag, 16);
            EVP_CIPHER_CTX_free(ctx);
        }
    }

    /* AAD only (GMAC), and AAD after data, which GCM refuses. */
    for (enc = 1; enc >= 0; enc--) {
        EVP_CIPHER_CTX *ctx = new_ctx();

        rec_add(r, "gmac enc=%d\n", enc);
        r_init(r, ctx, e->cipher, m.key, m.iv, enc);
        if (!enc)
            r_set_tag(r, ctx, m.tag, 16);
        r_aad(r, ctx, m.aad, 20);
        r_final(r, ctx);
        if (enc)
            r_get_tag(r, ctx, m.tag, 16);
        EVP_CIPHER_CTX_free(ctx);
    }
    {
        EVP_CIPHER_CTX *ctx = new_ctx();

        rec_add(r, "aad after data\n");
        r_init(r, ctx, e->cipher, m.key, m.iv, 1);
        r_update(r, ctx, m.ct, m.pt, 7);
        r_aad(r, ctx, m.aad, 5);
        r_update(r, ctx, m.ct, m.pt, 7);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        EVP_CIPHER_CTX_free(ctx);
    }
}

/* Empty plaintext: no update at all, or zero-length updates. */
static void pat_empty(REC *r, ENV *e)
{
    MSG m;
    int enc, style;

    msg_set(&m, e->k2, 12, 0, 0, 80);
    for (style = 0; style < 3; style++) {
        for (enc = 1; enc >= 0; enc--) {
            EVP_CIPHER_CTX *ctx = new_ctx();

            rec_add(r, "empty style=%d enc=%d\n", style, enc);
            r_init(r, ctx, e->cipher, m.key, m.iv, enc);
            if (!enc)
                r_set_tag(r, ctx, m.tag, 16);
            if (style == 1)
                r_update(r, ctx, m.out, m.pt, 0);
            if (style == 2) {
                r_aad(r, ctx, m.aad, 0);
                r_update(r, ctx, m.out, m.pt, 0);
                r_update(r, ctx, m.out, m.pt, 0);
            }
            r_final(r, ctx);
            if (enc)
                r_get_tag(r, ctx, m.tag, 16);
            EVP_CIPHER_CTX_free(ctx);
        }
    }
    m.tag[0] ^= 1;
    r_open(r, e, &m, 0);
}

/* A wrong tag fails; the very next decrypt with the same key succeeds. */
static void pat_wrong_tag(REC *r, ENV *e)
{
    static const int flip[] = { 0, 15, 7 };
    MSG m;
    size_t i;

    for (i = 0; i < sizeof(flip) / sizeof(flip[0]); i++) {
        msg_set(&m, e->k1, 12, 8, 50, 90 + (uint32_t)i);
        r_seal(r, e, &m);
        m.tag[flip[i]] ^= 0x01;
        r_open(r, e, &m, i % 2);
        m.tag[flip[i]] ^= 0x01;
        r_open(r, e, &m, i % 2);
        r_open(r, e, &m, 1 - i % 2);
        /* Wrong truncated tag, then the right truncated one. */
        m.taglen = 12;
        m.tag[11] ^= 0x80;
        r_open(r, e, &m, 0);
        m.tag[11] ^= 0x80;
        r_open(r, e, &m, 0);
    }
}

/* GET_TAG before final fails, also right after a finished same-key ctx. */
static void pat_get_tag_early(REC *r, ENV *e)
{
    MSG m;
    EVP_CIPHER_CTX *ctx, *held;

    msg_set(&m, e->k1, 12, 10, 20, 100);

    ctx = new_ctx();
    rec_add(r, "early get_tag\n");
    r_init(r, ctx, e->cipher, NULL, NULL, 1);
    r_get_tag(r, ctx, NULL, 16);
    r_init(r, ctx, NULL, m.key, m.iv, 1);
    r_get_tag(r, ctx, NULL, 16);
    r_aad(r, ctx, m.aad, m.aadlen);
    r_get_tag(r, ctx, NULL, 16);
    r_update(r, ctx, m.ct, m.pt, m.inlen);
    r_get_tag(r, ctx, NULL, 16);
    r_final(r, ctx);
    r_get_tag(r, ctx, m.tag, 16);
    r_get_tag(r, ctx, NULL, 8);
    EVP_CIPHER_CTX_free(ctx);

    /* Same key, same IV, fresh context: no tag yet. */
    ctx = new_ctx();
    rec_add(r, "after finished\n");
    r_init(r, ctx, e->cipher, m.key, m.iv, 1);
    r_get_tag(r, ctx, NULL, 16);
    r_update(r, ctx, m.out, m.pt, 3);
    r_get_tag(r, ctx, NULL, 16);
    EVP_CIPHER_CTX_free(ctx);

    ctx = new_ctx();
    r_init(r, ctx, e->cipher, m.key, NULL, 1);
    r_get_tag(r, ctx, NULL, 4);
    EVP_CIPHER_CTX_free(ctx);

    /* While the finished context is still alive. */
    held = new_ctx();
    rec_add(r, "held finished\n");
    r_init(r, held, e->cipher, m.key, m.iv, 1);
    r_update(r, held, m.out, m.pt, m.inlen);
    r_final(r, held);
    r_get_tag(r, held, NULL, 16);
    ctx = new_ctx();
    r_init(r, ctx, e->cipher, m.key, m.iv, 1);
    r_get_tag(r, ctx, NULL, 16);
    EVP_CIPHER_CTX_free(held);
    EVP_CIPHER_CTX_free(ctx);

    /* Decrypting contexts never hand out a tag. */
    ctx = new_ctx();
    rec_add(r, "decrypt get_tag\n");
    r_init(r, ctx, e->cipher, m.key, m.iv, 0);
    r_get_tag(r, ctx, NULL, 16);
    r_set_tag(r, ctx, m.tag, 16);
    r_aad(r, ctx, m.aad, m.aadlen);
    r_update(r, ctx, m.out, m.ct, m.inlen);
    r_final(r, ctx);
    r_get_tag(r, ctx, NULL, 16);
    EVP_CIPHER_CTX_free(ctx);
}

/* EVP_CIPHER_CTX_copy mid-message; both copies finished independently. */
static void pat_copy(REC *r, ENV *e)
{
    MSG m;
    int enc, variant;

    msg_set(&m, e->k1, 16, 12, 64, 110);
    r_seal(r, e, &m);
    for (enc = 1; enc >= 0; enc--) {
        for (variant = 0; variant < 3; variant++) {
            EVP_CIPHER_CTX *a = new_ctx(), *b = new_ctx();
            const unsigned char *in = enc ? m.pt : m.ct;
            unsigned char alt[32];

            rec_add(r, "copy enc=%d variant=%d\n", enc, variant);
            kct_fill(alt, sizeof(alt), 111);
            r_start(r, e, a, &m, enc);
            if (!enc)
                r_set_tag(r, a, m.tag, 16);
            r_aad(r, a, m.aad, m.aadlen);
            r_update(r, a, m.out, in, 32);
            rec_ret(r, "copy", EVP_CIPHER_CTX_copy(b, a));
            rec_ctx(r, b);
            if (variant == 1) {
                /* The original goes away before the copy is used. */
                EVP_CIPHER_CTX_free(a);
                a = NULL;
            }
            r_update(r, b, m.out, variant == 2 ? alt : in + 32, 32);
            r_final(r, b);
            if (enc)
                r_get_tag(r, b, NULL, 16);
            if (a != NULL) {
                r_update(r, a, m.out, in + 32, 32);
                r_final(r, a);
                if (enc)
                    r_get_tag(r, a, NULL, 16);
            }
            EVP_CIPHER_CTX_free(a);
            EVP_CIPHER_CTX_free(b);
        }
    }

    /* Copies made before the key: IV length and expected tag go along. */
    for (enc = 1; enc >= 0; enc--) {
        EVP_CIPHER_CTX *a = new_ctx(), *b = new_ctx();

        rec_add(r, "copy before key enc=%d\n", enc);
        r_init(r, a, e->cipher, NULL, NULL, enc);
        r_set_ivlen(r, a, 16);
        if (!enc)
            r_set_tag(r, a, m.tag, 16);
        r_init(r, a, NULL, NULL, m.iv, enc);
        rec_ret(r, "copy", EVP_CIPHER_CTX_copy(b, a));
        rec_ctx(r, b);
        EVP_CIPHER_CTX_free(a);
        r_init(r, b, NULL, m.key, NULL, enc);
        r_aad(r, b, m.aad, m.aadlen);
        r_update(r, b, m.out, enc ? m.pt : m.ct, m.inlen);
        r_final(r, b);
        r_get_tag(r, b, NULL, 16);
        EVP_CIPHER_CTX_free(b);
    }

    /* Copy of a keyed context without IV; each gets its own IV. */
    {
        EVP_CIPHER_CTX *a = new_ctx(), *b = new_ctx();

        rec_add(r, "copy keyed only\n");
        r_init(r, a, e->cipher, e->k2, NULL, 1);
        rec_ret(r, "copy", EVP_CIPHER_CTX_copy(b, a));
        r_init(r, a, NULL, NULL, m.iv, 1);
        r_init(r, b, NULL, NULL, m.iv + 12, 1);
        r_update(r, b, m.out, m.pt, 20);
        r_update(r, a, m.out, m.pt, 20);
        r_final(r, a);
        r_final(r, b);
        r_get_tag(r, a, NULL, 16);
        r_get_tag(r, b, NULL, 16);
        EVP_CIPHER_CTX_free(b);
        EVP_CIPHER_CTX_free(a);
    }
}

static void r_message(REC *r, EVP_CIPHER_CTX *ctx, MSG *m)
{
    r_aad(r, ctx, m->aad, m->aadlen);
    r_update(r, ctx, m->ct, m->pt, m->inlen);
    r_final(r, ctx);
    r_get_tag(r, ctx, m->tag, 16);
}

/* One context re-initialised: new key, same key new IV, same cipher. */
static void pat_reinit(REC *r, ENV *e)
{
    EVP_CIPHER_CTX *ctx = new_ctx();
    MSG m1, m2;

    msg_set(&m1, e->k1, 12, 5, 30, 120);
    msg_set(&m2, e->k2, 12, 6, 31, 121);

    rec_add(r, "reinit\n");
    r_init(r, ctx, e->cipher, m1.key, m1.iv, 1);
    r_message(r, ctx, &m1);
    r_init(r, ctx, NULL, m2.key, m2.iv, 1);
    r_get_tag(r, ctx, NULL, 16);
    r_message(r, ctx, &m2);
    r_init(r, ctx, NULL, NULL, m1.iv, 1);
    r_message(r, ctx, &m2);
    r_init(r, ctx, e->cipher, m1.key, m1.iv, 1);
    r_get_tag(r, ctx, NULL, 16);
    r_message(r, ctx, &m1);
    /* Same context turned round to decrypt what it produced. */
    r_init(r, ctx, NULL, m1.key, m1.iv, 0);
    r_set_tag(r, ctx, m1.tag, 16);
    r_aad(r, ctx, m1.aad, m1.aadlen);
    r_update(r, ctx, m1.out, m1.ct, m1.inlen);
    r_final(r, ctx);
    EVP_CIPHER_CTX_free(ctx);

    /* A set IV length survives re-keying without a cipher... */
    ctx = new_ctx();
    rec_add(r, "reinit ivlen\n");
    r_init(r, ctx, e->cipher, NULL, NULL, 1);
    r_set_ivlen(r, ctx, 16);
    r_init(r, ctx, NULL, m1.key, m1.iv, 1);
    r_message(r, ctx, &m1);
    r_init(r, ctx, NULL, m2.key, m2.iv, 1);
    r_message(r, ctx, &m2);
    r_init(r, ctx, NULL, m1.key, NULL, 1);
    r_init(r, ctx, NULL, NULL, m2.iv, 1);
    r_message(r, ctx, &m2);
    /* ...and is reset by an init that names the cipher again. */
    r_init(r, ctx, e->cipher, m2.key, m2.iv, 1);
    r_message(r, ctx, &m2);
    EVP_CIPHER_CTX_free(ctx);

    /* Re-init in the middle of a message. */
    ctx = new_ctx();
    rec_add(r, "reinit mid-message\n");
    r_init(r, ctx, e->cipher, m1.key, m1.iv, 1);
    r_update(r, ctx, m1.ct, m1.pt, 10);
    r_init(r, ctx, NULL, m2.key, m2.iv, 1);
    r_message(r, ctx, &m2);
    EVP_CIPHER_CTX_free(ctx);
}

/* Encryption and decryption interleaved on live contexts with one key. */
static void pat_interleave(REC *r, ENV *e)
{
    EVP_CIPHER_CTX *enc = new_ctx(), *dec = new_ctx(), *third = new_ctx();
    MSG a, b, c;

    msg_set(&a, e->k1, 12, 16, 48, 130);
    msg_set(&b, e->k1, 12, 8, 40, 131);
    msg_set(&c, e->k1, 12, 0, 16, 132);
    r_seal(r, e, &b);

    rec_add(r, "interleave\n");
    r_init(r, enc, e->cipher, a.key, a.iv, 1);
    r_init(r, dec, e->cipher, b.key, b.iv, 0);
    r_aad(r, dec, b.aad, b.aadlen);
    r_aad(r, enc, a.aad, a.aadlen);
    r_update(r, enc, a.ct, a.pt, 20);
    r_set_tag(r, dec, b.tag, 16);
    r_update(r, dec, b.out, b.ct, 25);
    r_init(r, third, e->cipher, c.key, c.iv, 1);
    r_update(r, enc, a.ct + 20, a.pt + 20, 28);
    r_message(r, third, &c);
    r_update(r, dec, b.out + 25, b.ct + 25, 15);
    r_final(r, dec);
    r_final(r, enc);
    r_get_tag(r, enc, a.tag, 16);
    EVP_CIPHER_CTX_free(third);
    EVP_CIPHER_CTX_free(dec);
    EVP_CIPHER_CTX_free(enc);

    r_open(r, e, &a, 0);
    r_open(r, e, &c, 1);
}

/* A key changed in place in the same buffer between messages. */
static void pat_key_in_place(REC *r, ENV *e)
{
    enum { SAME, FLIP_LAST, RESTORE, FLIP_FIRST, OTHER };
    static const int steps[] = { SAME, FLIP_LAST, RESTORE, FLIP_FIRST, OTHER };
    unsigned char key[32];
    unsigned char first_ct[OUTSZ], first_tag[16];
    MSG m;
    EVP_CIPHER_CTX *ctx;
    size_t i;

    memcpy(key, e->k1, sizeof(key));
    msg_set(&m, key, 12, 4, 32, 140);
    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (steps[i] == FLIP_LAST)
            key[e->keylen - 1] ^= 0x01;
        else if (steps[i] == FLIP_FIRST)
            key[0] ^= 0x80;
        else if (steps[i] == RESTORE)
            memcpy(key, e->k1, sizeof(key));
        else if (steps[i] == OTHER)
            memcpy(key, e->k2, sizeof(key));
        rec_add(r, "key step %d\n", steps[i]);
        r_seal(r, e, &m);
        if (i == 0) {
            memcpy(first_ct, m.ct, sizeof(first_ct));
            memcpy(first_tag, m.tag, sizeof(first_tag));
        }
        rec_add(r, "same as first: ct=%d tag=%d\n",
                memcmp(first_ct, m.ct, m.inlen) == 0,
                memcmp(first_tag, m.tag, 16) == 0);
        r_open(r, e, &m, 0);
    }

    /* Changing the buffer under a live context does not change its key. */
    memcpy(key, e->k1, sizeof(key));
    ctx = new_ctx();
    rec_add(r, "changed under live ctx\n");
    r_init(r, ctx, e->cipher, key, m.iv, 1);
    key[0] ^= 0xff;
    r_message(r, ctx, &m);
    EVP_CIPHER_CTX_free(ctx);
    rec_add(r, "same as first: ct=%d tag=%d\n",
            memcmp(first_ct, m.ct, m.inlen) == 0,
            memcmp(first_tag, m.tag, 16) == 0);
    /* Decrypting with the changed key fails, with the original succeeds. */
    r_open(r, e, &m, 0);
    memcpy(key, e->k1, sizeof(key));
    r_open(r, e, &m, 0);
}

/*
 * Keys that differ from k1 in exactly one byte, at every position of the
 * key, back to back: A, A', A, A' (the most recently used entry holds the
 * other key each time), then with k3 in between (the index), each sealed
 * on a fresh context and the last one opened.
 */
static void pat_near_keys(REC *r, ENV *e)
{
    unsigned char b[32];
    const unsigned char *seq[8];
    MSG m;
    int pos, i;

    for (pos = 0; pos < e->keylen; pos++) {
        memcpy(b, e->k1, sizeof(b));
        b[pos] ^= (unsigned char)(1u << (pos % 8));
        seq[0] = seq[2] = seq[7] = e->k1;
        seq[1] = seq[3] = seq[5] = b;
        seq[4] = seq[6] = e->k3;
        rec_add(r, "pos %d\n", pos);
        for (i = 0; i < 8; i++) {
            msg_set(&m, seq[i], 12, 5, 20, 150);
            r_seal(r, e, &m);
        }
        r_open(r, e, &m, 0);
    }
}

/* Key length changes refused (or not) exactly like default. */
static void pat_wrong_keylen(REC *r, ENV *e)
{
    static const int lens[] = { 16, 24, 32, 0, 64 };
    MSG m;
    size_t i;

    msg_set(&m, e->k1, 12, 0, 16, 150);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        EVP_CIPHER_CTX *ctx = new_ctx();

        rec_add(r, "keylen %d\n", lens[i]);
        r_init(r, ctx, e->cipher, NULL, NULL, 1);
        rec_ret(r, "set_key_length",
                EVP_CIPHER_CTX_set_key_length(ctx, lens[i]));
        rec_ctx(r, ctx);
        r_init(r, ctx, NULL, m.key, m.iv, 1);
        r_message(r, ctx, &m);
        EVP_CIPHER_CTX_free(ctx);

        ctx = new_ctx();
        r_init(r, ctx, e->cipher, NULL, NULL, 1);
        r_ctrl(r, "ctrl_set_key_length", ctx, EVP_CTRL_SET_KEY_LENGTH,
               lens[i], NULL);
        rec_ctx(r, ctx);
        r_init(r, ctx, NULL, m.key, m.iv, 1);
        r_message(r, ctx, &m);
        EVP_CIPHER_CTX_free(ctx);
    }
}

/* Update and final without an IV, without a key, without either. */
static void pat_missing(REC *r, ENV *e)
{
    MSG m;
    EVP_CIPHER_CTX *ctx;
    unsigned char buf[OUTSZ];
    int outl, enc;

    msg_set(&m, e->k1, 12, 8, 24, 160);
    r_seal(r, e, &m);

    /*
     * Encrypting without an IV makes GCM draw a random one: only results
     * and lengths are logged, not bytes.
     */
    ctx = new_ctx();
    rec_add(r, "encrypt, no iv\n");
    r_init(r, ctx, e->cipher, m.key, NULL, 1);
    rec_ret(r, "aad", EVP_CipherUpdate(ctx, NULL, &outl, m.aad, 8));
    rec_add(r, "outl=%d\n", outl);
    rec_ret(r, "update", EVP_CipherUpdate(ctx, buf, &outl, m.pt, 24));
    rec_add(r, "outl=%d\n", outl);
    rec_ret(r, "final", EVP_CipherFinal_ex(ctx, buf, &outl));
    rec_add(r, "outl=%d\n", outl);
    rec_ret(r, "get_tag", EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG,
                                              16, buf));
    EVP_CIPHER_CTX_free(ctx);

    /* Too short an IV for generating one. */
    ctx = new_ctx();
    rec_add(r, "encrypt, no iv, ivlen 8\n");
    r_init(r, ctx, e->cipher, NULL, NULL, 1);
    r_set_ivlen(r, ctx, 8);
    r_init(r, ctx, NULL, m.key, NULL, 1);
    r_update(r, ctx, m.out, m.pt, 24);
    r_final(r, ctx);
    r_get_tag(r, ctx, NULL, 16);
    EVP_CIPHER_CTX_free(ctx);

    ctx = new_ctx();
    rec_add(r, "decrypt, no iv\n");
    r_init(r, ctx, e->cipher, m.key, NULL, 0);
    r_set_tag(r, ctx, m.tag, 16);
    r_aad(r, ctx, m.aad, 8);
    r_update(r, ctx, m.out, m.ct, 24);
    r_final(r, ctx);
    EVP_CIPHER_CTX_free(ctx);

    /* A same-key context was just freed: nothing keyed may come back. */
    for (enc = 1; enc >= 0; enc--) {
        ctx = new_ctx();
        rec_add(r, "no key enc=%d\n", enc);
        r_init(r, ctx, e->cipher, NULL, m.iv, enc);
        if (!enc)
            r_set_tag(r, ctx, m.tag, 16);
        r_aad(r, ctx, m.aad, 8);
        r_update(r, ctx, m.out, enc ? m.pt : m.ct, 24);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        EVP_CIPHER_CTX_free(ctx);

        ctx = new_ctx();
        rec_add(r, "nothing enc=%d\n", enc);
        r_init(r, ctx, e->cipher, NULL, NULL, enc);
        r_update(r, ctx, m.out, m.pt, 24);
        r_final(r, ctx);
        EVP_CIPHER_CTX_free(ctx);
    }
}

/* Update after final, final twice. */
static void pat_after_final(REC *r, ENV *e)
{
    MSG m;
    int enc;

    msg_set(&m, e->k2, 12, 8, 24, 170);
    r_seal(r, e, &m);
    for (enc = 1; enc >= 0; enc--) {
        EVP_CIPHER_CTX *ctx = new_ctx();

        rec_add(r, "after final enc=%d\n", enc);
        r_init(r, ctx, e->cipher, m.key, m.iv, enc);
        if (!enc)
            r_set_tag(r, ctx, m.tag, 16);
        r_aad(r, ctx, m.aad, m.aadlen);
        r_update(r, ctx, m.out, enc ? m.pt : m.ct, m.inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        r_final(r, ctx);
        r_update(r, ctx, m.out, enc ? m.pt : m.ct, m.inlen);
        r_aad(r, ctx, m.aad, m.aadlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        /* A new IV makes the context usable again. */
        r_init(r, ctx, NULL, NULL, m.iv, -1);
        r_aad(r, ctx, m.aad, m.aadlen);
        r_update(r, ctx, m.out, enc ? m.pt : m.ct, m.inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, NULL, 16);
        EVP_CIPHER_CTX_free(ctx);
    }
}

static int r_evp_cipher(REC *r, EVP_CIPHER_CTX *ctx, unsigned char *out,
                        const unsigned char *in, unsigned int inl)
{
    int ret = EVP_Cipher(ctx, out, in, inl);

    rec_add(r, "EVP_Cipher(%s,%u)=%d", out == NULL ? "-" : "out", inl, ret);
    if (out != NULL && inl <= OUTSZ)
        rec_hex(r, "out", out, inl);
    rec_errs(r);
    return ret;
}

/* The one-shot EVP_Cipher() path. */
static void pat_evp_cipher(REC *r, ENV *e)
{
    MSG m;
    int enc, bad;

    msg_set(&m, e->k1, 12, 20, 60, 180);
    for (bad = 0; bad <= 1; bad++) {
        for (enc = 1; enc >= 0; enc--) {
            EVP_CIPHER_CTX *ctx = new_ctx();

            rec_add(r, "EVP_Cipher enc=%d bad=%d\n", enc, bad);
            r_init(r, ctx, e->cipher, m.key, m.iv, enc);
            if (!enc) {
                m.tag[5] ^= bad;
                r_set_tag(r, ctx, m.tag, 16);
                m.tag[5] ^= bad;
            }
            r_evp_cipher(r, ctx, NULL, m.aad, m.aadlen);
            if (enc)
                r_evp_cipher(r, ctx, m.ct, m.pt, m.inlen);
            else
                r_evp_cipher(r, ctx, m.out, m.ct, m.inlen);
            r_evp_cipher(r, ctx, NULL, NULL, 0);
            if (enc)
                r_get_tag(r, ctx, m.tag, 16);
            EVP_CIPHER_CTX_free(ctx);
        }
    }
    r_open(r, e, &m, 0);
}

/*
 * Which IV a context reports, through get_updated_iv / get_original_iv.
 * Before the caller gives an IV (known 0), OpenSSL 4's GCM already has one
 * it drew at random for encryption (3.x has none and fails): then only the
 * results and how many bytes were written are logged (two reads into
 * differently filled buffers agree on exactly those), and that the IV
 * stays put between reads.
 */
static void r_ivs(REC *r, EVP_CIPHER_CTX *ctx, int known)
{
    static const size_t sizes[] = { 16, 12, 8, 128 };
    unsigned char buf[160], again[160];
    size_t i, n;
    int k, ret;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (k = 0; k < 2; k++) {
            memset(buf, 0x5a, sizeof(buf));
            rec_add(r, "%s_iv(%zu)", k == 0 ? "updated" : "original",
                    sizes[i]);
            ret = k == 0 ? EVP_CIPHER_CTX_get_updated_iv(ctx, buf, sizes[i])
                         : EVP_CIPHER_CTX_get_original_iv(ctx, buf, sizes[i]);
            rec_ret(r, "", ret);
            if (known) {
                rec_hex(r, "buf", buf, sizes[i] + 4);
            } else {
                memset(again, 0xa5, sizeof(again));
                (void)(k == 0
                       ? EVP_CIPHER_CTX_get_updated_iv(ctx, again, sizes[i])
                       : EVP_CIPHER_CTX_get_original_iv(ctx, again,
                                                        sizes[i]));
                for (n = 0; n < sizes[i] + 4 && buf[n] == again[n]; n++)
                    ;
                rec_add(r, " written=%zu", n);
            }
            rec_add(r, "\n");
        }
    }
}

/* An IV drawn for a fresh keyed context: two such contexts differ. */
static int drawn_iv(const EVP_CIPHER *c, const unsigned char *key,
                    unsigned char iv[12])
{
    EVP_CIPHER_CTX *ctx = new_ctx();
    int ok;

    memset(iv, 0, 12);
    ok = EVP_CipherInit_ex(ctx, c, NULL, key, NULL, 1) == 1
         && EVP_CIPHER_CTX_get_updated_iv(ctx, iv, 12) == 1;
    EVP_CIPHER_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* EVP_CIPHER_CTX_get_updated_iv / get_original_iv through a context's life. */
static void pat_get_iv(REC *r, ENV *e)
{
    static const int ivlens[] = { 12, 16, 8, 60 };
    unsigned char iv1[12], iv2[12];
    MSG m;
    size_t i;
    int got;

    for (i = 0; i < sizeof(ivlens) / sizeof(ivlens[0]); i++) {
        EVP_CIPHER_CTX *ctx = new_ctx();

        msg_set(&m, e->k1, ivlens[i], 8, 24, 190 + (uint32_t)i);
        rec_add(r, "ivs ivlen=%d\n", ivlens[i]);
        r_init(r, ctx, e->cipher, NULL, NULL, 1);
        r_ivs(r, ctx, 0);
        if (ivlens[i] != 12)
            r_set_ivlen(r, ctx, ivlens[i]);
        r_init(r, ctx, NULL, m.key, NULL, 1);
        r_ivs(r, ctx, 0);
        r_init(r, ctx, NULL, NULL, m.iv, 1);
        r_ivs(r, ctx, 1);
        r_message(r, ctx, &m);
        r_ivs(r, ctx, 1);
        EVP_CIPHER_CTX_free(ctx);

        /* A fresh keyed context has none of the caller's IVs. */
        ctx = new_ctx();
        r_init(r, ctx, e->cipher, m.key, NULL, 1);
        r_ivs(r, ctx, 0);
        EVP_CIPHER_CTX_free(ctx);

        /* and one it drew (4.x) is its own, never a cached context's */
        got = drawn_iv(e->cipher, m.key, iv1);
        got += drawn_iv(e->cipher, m.key, iv2);
        rec_add(r, "drawn ivs=%d distinct=%d\n", got,
                got == 2 && memcmp(iv1, iv2, sizeof(iv1)) != 0);
    }
}

/* A TLS 1.2 record context: fixed IV, TLS AAD, in-place EVP_Cipher. */
static int r_tls_record(REC *r, EVP_CIPHER_CTX *ctx, unsigned char *rec,
                        int payload, int enc)
{
    unsigned char aad[13];
    int len = 8 + payload + 16, field = enc ? 8 + payload : len;

    kct_fill(aad, sizeof(aad), 200 + payload);
    aad[11] = (unsigned char)(field >> 8);
    aad[12] = (unsigned char)field;
    r_ctrl(r, "tls_aad", ctx, EVP_CTRL_AEAD_TLS1_AAD, sizeof(aad), aad);
    return r_evp_cipher(r, ctx, rec, rec, len);
}

static void pat_tls(REC *r, ENV *e)
{
    unsigned char fixed[12], rec1[8 + 40 + 16], rec2[8 + 25 + 16];
    unsigned char gen[16];
    EVP_CIPHER_CTX *tls, *ctx;
    MSG m;
    int enc;

    kct_fill(fixed, sizeof(fixed), 210);
    msg_set(&m, e->k1, 12, 13, 40, 211);
    memset(rec1, 0, sizeof(rec1));
    memcpy(rec1 + 8, m.pt, 40);
    memset(rec2, 0, sizeof(rec2));
    memcpy(rec2 + 8, m.pt, 25);

    /* Sender: whole fixed IV (-1) so the explicit part is deterministic. */
    tls = new_ctx();
    rec_add(r, "tls encrypt\n");
    r_init(r, tls, e->cipher, m.key, NULL, 1);
    r_ctrl(r, "iv_fixed", tls, EVP_CTRL_GCM_SET_IV_FIXED, -1, fixed);
    r_tls_record(r, tls, rec1, 40, 1);
    r_tls_record(r, tls, rec2, 25, 1);

    /* A plain context with the same key while the TLS one lives. */
    r_seal(r, e, &m);
    r_open(r, e, &m, 0);
    EVP_CIPHER_CTX_free(tls);
    r_seal(r, e, &m);

    /* Receiver: 4-byte fixed part, explicit part from the record. */
    tls = new_ctx();
    rec_add(r, "tls decrypt\n");
    r_init(r, tls, e->cipher, m.key, NULL, 0);
    r_ctrl(r, "iv_fixed", tls, EVP_CTRL_GCM_SET_IV_FIXED, 4, fixed);
    r_tls_record(r, tls, rec1, 40, 0);
    rec2[20] ^= 1;
    r_tls_record(r, tls, rec2, 25, 0);
    EVP_CIPHER_CTX_free(tls);
    r_open(r, e, &m, 0);

    /* TLS AAD set and dropped: the next plain EVP_Cipher() must be plain. */
    tls = new_ctx();
    rec_add(r, "tls aad dropped\n");
    r_init(r, tls, e->cipher, m.key, NULL, 1);
    r_ctrl(r, "iv_fixed", tls, EVP_CTRL_GCM_SET_IV_FIXED, -1, fixed);
    memset(rec1, 0, sizeof(rec1));
    {
        unsigned char aad[13] = { 0 };

        aad[12] = 48;
        r_ctrl(r, "tls_aad", tls, EVP_CTRL_AEAD_TLS1_AAD, 13, aad);
    }
    EVP_CIPHER_CTX_free(tls);
    for (enc = 1; enc >= 0; enc--) {
        ctx = new_ctx();
        rec_add(r, "plain EVP_Cipher enc=%d\n", enc);
        r_init(r, ctx, e->cipher, m.key, m.iv, enc);
        if (!enc)
            r_set_tag(r, ctx, m.tag, 16);
        r_evp_cipher(r, ctx, NULL, m.aad, m.aadlen);
        r_evp_cipher(r, ctx, enc ? m.ct : m.out, enc ? m.pt : m.ct, m.inlen);
        r_evp_cipher(r, ctx, NULL, NULL, 0);
        r_get_tag(r, ctx, NULL, 16);
        r_ctrl(r, "tls_aad_pad", ctx, EVP_CTRL_AEAD_TLS1_AAD, 12, rec1);
        EVP_CIPHER_CTX_free(ctx);
    }

    /* IV generation (GCM_IV_GEN) needs the fixed IV; fresh contexts lack it. */
    tls = new_ctx();
    rec_add(r, "iv_gen\n");
    r_init(r, tls, e->cipher, m.key, NULL, 1);
    r_ctrl(r, "iv_fixed", tls, EVP_CTRL_GCM_SET_IV_FIXED, -1, fixed);
    memset(gen, 0, sizeof(gen));
    r_ctrl(r, "iv_gen", tls, EVP_CTRL_GCM_IV_GEN, 8, gen);
    rec_hex(r, "gen", gen, sizeof(gen));
    rec_add(r, "\n");
    r_message(r, tls, &m);
    EVP_CIPHER_CTX_free(tls);

    ctx = new_ctx();
    r_init(r, ctx, e->cipher, m.key, m.iv, 1);
    memset(gen, 0, sizeof(gen));
    r_ctrl(r, "iv_gen", ctx, EVP_CTRL_GCM_IV_GEN, 8, gen);
    rec_hex(r, "gen", gen, sizeof(gen));
    rec_add(r, "\n");
    r_message(r, ctx, &m);
    EVP_CIPHER_CTX_free(ctx);
    r_seal(r, e, &m);
}

/*
 * .NET's AesGcm on Linux, in the calls its OpenSSL shim makes: an init with
 * the cipher alone (direction 0), the key with the direction kept (-1),
 * the nonce length, then per message the nonce with the direction.  A
 * context keyed so from the cache answers EVP's IV-length query before
 * that init itself ("just keyed" in ctmpl.c), so every way the IV length
 * can change between the key and the IV is here, each followed by the
 * queries (rec_ctx) and a message.
 */
static void r_dotnet_key(REC *r, const ENV *e, EVP_CIPHER_CTX *ctx,
                         const unsigned char *key, int dir0)
{
    rec_add(r, "reset=%d\n", EVP_CIPHER_CTX_reset(ctx));
    r_init(r, ctx, e->cipher, NULL, NULL, dir0);
    r_init(r, ctx, NULL, key, NULL, -1);
    kct_cipher_lens(r, ctx);
}

static void r_dotnet_msg(REC *r, EVP_CIPHER_CTX *ctx, MSG *m, int enc)
{
    r_init(r, ctx, NULL, NULL, m->iv, enc);
    r_aad(r, ctx, m->aad, m->aadlen);
    if (enc) {
        r_update(r, ctx, m->ct, m->pt, m->inlen);
        r_final(r, ctx);
        r_get_tag(r, ctx, m->tag, 16);
    } else {
        r_update(r, ctx, m->out, m->ct, m->inlen);
        r_set_tag(r, ctx, m->tag, 16);
        r_final(r, ctx);
    }
}

static void pat_dotnet(REC *r, ENV *e)
{
    static const int lens[] = { 12, 16, 8, 1, 128, 0, 129, -1 };
    EVP_CIPHER_CTX *ctx, *b;
    OSSL_PARAM params[3];
    size_t len;
    MSG m;
    size_t i;
    int dir0, enc;

    /* The shim's own sequence, one object per message, both directions. */
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (dir0 = 0; dir0 <= 1; dir0++) {
            msg_set(&m, i % 2 ? e->k2 : e->k1, lens[i] > 0 ? lens[i] : 12,
                    i % 3 == 0 ? 0 : 13, 40, 400 + (uint32_t)i);
            for (enc = 1; enc >= 0; enc--) {
                rec_add(r, "dotnet ivlen=%d dir0=%d enc=%d\n", lens[i],
                        dir0, enc);
                ctx = new_ctx();
                r_dotnet_key(r, e, ctx, m.key, dir0);
                r_set_ivlen(r, ctx, lens[i]);
                kct_cipher_lens(r, ctx);
                r_dotnet_msg(r, ctx, &m, enc);
                kct_cipher_lens(r, ctx);
                /* AesGcm is reusable: a second message on the object */
                r_dotnet_msg(r, ctx, &m, enc);
                EVP_CIPHER_CTX_free(ctx);
            }
        }

    msg_set(&m, e->k1, 16, 7, 33, 420);
    /* The IV length set before the key: a hit answers the shape's. */
    for (enc = 1; enc >= 0; enc--) {
        ctx = new_ctx();
        rec_add(r, "ivlen before the key enc=%d\n", enc);
        r_init(r, ctx, e->cipher, NULL, NULL, enc);
        r_set_ivlen(r, ctx, 16);
        r_init(r, ctx, NULL, m.key, NULL, enc);
        kct_cipher_lens(r, ctx);
        r_dotnet_msg(r, ctx, &m, enc);
        EVP_CIPHER_CTX_free(ctx);
    }

    /* The IV length set twice, and a refused set between. */
    ctx = new_ctx();
    rec_add(r, "dotnet ivlen twice\n");
    r_dotnet_key(r, e, ctx, m.key, 0);
    r_set_ivlen(r, ctx, 60);
    kct_cipher_lens(r, ctx);
    r_set_ivlen(r, ctx, 0);
    kct_cipher_lens(r, ctx);
    r_set_ivlen(r, ctx, 16);
    kct_cipher_lens(r, ctx);
    r_dotnet_msg(r, ctx, &m, 1);
    EVP_CIPHER_CTX_free(ctx);

    /* The IV length among other parameters, in either order. */
    for (i = 0; i < 2; i++) {
        ctx = new_ctx();
        rec_add(r, "dotnet ivlen with tag %zu\n", i);
        r_dotnet_key(r, e, ctx, m.key, 0);
        len = 16;
        params[i] = OSSL_PARAM_construct_size_t("ivlen", &len);
        params[1 - i] = OSSL_PARAM_construct_octet_string("tag", m.tag, 16);
        params[2] = OSSL_PARAM_construct_end();
        rec_ret(r, "set_params", EVP_CIPHER_CTX_set_params(ctx, params));
        rec_ctx(r, ctx);
        kct_cipher_lens(r, ctx);
        r_init(r, ctx, NULL, NULL, m.iv, 0);
        r_update(r, ctx, m.out, m.ct, m.inlen);
        r_final(r, ctx);
        EVP_CIPHER_CTX_free(ctx);
    }

    /* The IV length as a parameter of the IV's init. */
    ctx = new_ctx();
    rec_add(r, "dotnet ivlen in init_ex2\n");
    r_dotnet_key(r, e, ctx, m.key, 0);
    len = 16;
    params[0] = OSSL_PARAM_construct_size_t("ivlen", &len);
    params[1] = OSSL_PARAM_construct_end();
    rec_ret(r, "init_ex2", EVP_CipherInit_ex2(ctx, NULL, NULL, m.iv, 1,
                                             params));
    rec_ctx(r, ctx);
    kct_cipher_lens(r, ctx);
    r_dotnet_msg(r, ctx, &m, 1);
    EVP_CIPHER_CTX_free(ctx);

    /* An IV length as another type: the default converts it. */
    ctx = new_ctx();
    rec_add(r, "dotnet ivlen as uint\n");
    r_dotnet_key(r, e, ctx, m.key, 0);
    {
        unsigned int u = 8;

        params[0] = OSSL_PARAM_construct_uint("ivlen", &u);
        params[1] = OSSL_PARAM_construct_end();
        rec_ret(r, "set_params", EVP_CIPHER_CTX_set_params(ctx, params));
    }
    rec_ctx(r, ctx);
    kct_cipher_lens(r, ctx);
    r_dotnet_msg(r, ctx, &m, 1);
    EVP_CIPHER_CTX_free(ctx);

    /* Copied between the key and the IV; each goes its own way. */
    ctx = new_ctx();
    b = new_ctx();
    rec_add(r, "dotnet copy\n");
    r_dotnet_key(r, e, ctx, m.key, 0);
    r_set_ivlen(r, ctx, 8);
    rec_ret(r, "copy", EVP_CIPHER_CTX_copy(b, ctx));
    rec_ctx(r, b);
    kct_cipher_lens(r, b);
    r_set_ivlen(r, b, 16);
    r_set_ivlen(r, ctx, 60);
    r_dotnet_msg(r, b, &m, 1);
    r_dotnet_msg(r, ctx, &m, 1);
    EVP_CIPHER_CTX_free(b);
    EVP_CIPHER_CTX_free(ctx);

    /*
     * No IV at all: a message straight after the key and IV length (to
     * decrypt, which fails; an encryption would draw a random IV).
     */
    ctx = new_ctx();
    rec_add(r, "dotnet no iv\n");
    r_dotnet_key(r, e, ctx, m.key, 0);
    r_set_ivlen(r, ctx, 16);
    r_aad(r, ctx, m.aad, m.aadlen);
    r_update(r, ctx, m.out, m.ct, m.inlen);
    r_set_tag(r, ctx, m.tag, 16);
    r_final(r, ctx);
    EVP_CIPHER_CTX_free(ctx);

    /* Keyed again in place with another key before the IV. */
    ctx = new_ctx();
    rec_add(r, "dotnet rekeyed\n");
    r_dotnet_key(r, e, ctx, m.key, 0);
    r_set_ivlen(r, ctx, 16);
    r_init(r, ctx, NULL, e->k3, NULL, -1);
    r_dotnet_msg(r, ctx, &m, 1);
    EVP_CIPHER_CTX_free(ctx);
}

/* The rest of a message after its keying init: sealed, or opened. */
static void r_finish(REC *r, EVP_CIPHER_CTX *ctx, MSG *m, int enc)
{
    if (enc) {
        r_message(r, ctx, m);
        return;
    }
    r_set_tag(r, ctx, m->tag, m->taglen);
    r_aad(r, ctx, m->aad, m->aadlen);
    r_update(r, ctx, m->out, m->ct, m->inlen);
    r_final(r, ctx);
}

/*
 * One context keyed again and again with the key it holds: from its third
 * keyed init on, ctmpl.c gives the default a keyless init (with the IV, in
 * the direction the key was set in).  Every state a message can leave
 * behind, then keys that differ, change in place, or come without an IV.
 */
static void r_rekey_msg(REC *r, EVP_CIPHER_CTX *ctx, MSG *m, int enc)
{
    r_init(r, ctx, NULL, m->key, m->iv, enc);
    r_finish(r, ctx, m, enc);
}

static EVP_CIPHER_CTX *rekey_ctx(REC *r, const ENV *e, const char *what)
{
    EVP_CIPHER_CTX *ctx = new_ctx();

    rec_add(r, "rekey %s\n", what);
    r_init(r, ctx, e->cipher, NULL, NULL, 1);
    return ctx;
}

static void pat_rekey(REC *r, ENV *e)
{
    static const int order[] = { 1, 1, 1, 2, 1, 1, 2, 2, 2, 1 };
    unsigned char key[32], first_ct[OUTSZ], good[16];
    EVP_CIPHER_CTX *ctx, *ctx2, *dup;
    MSG m1, m2;
    int i;

    msg_set(&m1, e->k1, 12, 5, 30, 150);
    msg_set(&m2, e->k2, 12, 6, 31, 151);

    /* a new IV per message; the last tag read, then the key again */
    ctx = rekey_ctx(r, e, "per message");
    for (i = 0; i < 5; i++) {
        m1.iv[0] = (unsigned char)i;
        r_rekey_msg(r, ctx, &m1, 1);
        r_init(r, ctx, NULL, m1.key, m1.iv, 1);
        r_get_tag(r, ctx, NULL, 16);
        rec_ctx(r, ctx);
    }
    /* a copy keys itself; the original goes on */
    dup = EVP_CIPHER_CTX_new();
    rec_add(r, "copy=%d\n", EVP_CIPHER_CTX_copy(dup, ctx));
    rec_errs(r);
    for (i = 0; i < 3; i++) {
        r_rekey_msg(r, dup, &m1, 1);
        r_rekey_msg(r, ctx, &m1, 1);
    }
    EVP_CIPHER_CTX_free(dup);
    EVP_CIPHER_CTX_free(ctx);

    /* turned round: decrypt what it sealed, a wrong tag, back to encrypt */
    ctx = rekey_ctx(r, e, "direction");
    for (i = 0; i < 3; i++)
        r_rekey_msg(r, ctx, &m1, 1);
    memcpy(good, m1.tag, sizeof(good));
    for (i = 0; i < 4; i++) {
        m1.tag[0] = (unsigned char)(good[0] ^ (i == 1));
        r_rekey_msg(r, ctx, &m1, 0);
        /* a failed final's context keyed again, its tag read */
        r_get_tag(r, ctx, NULL, 16);
    }
    memcpy(m1.tag, good, sizeof(good));
    r_init(r, ctx, NULL, NULL, m1.iv, 0);
    for (i = 0; i < 3; i++)
        r_rekey_msg(r, ctx, &m1, 1);
    /* a short tag set, then the key again without one */
    for (i = 0; i < 3; i++) {
        r_init(r, ctx, NULL, m1.key, m1.iv, 0);
        if (i == 0)
            r_set_tag(r, ctx, m1.tag, 8);
        r_aad(r, ctx, m1.aad, m1.aadlen);
        r_update(r, ctx, m1.out, m1.ct, m1.inlen);
        r_final(r, ctx);
        rec_ctx(r, ctx);
    }
    EVP_CIPHER_CTX_free(ctx);

    /* IV lengths set after the key, between re-keys */
    ctx = rekey_ctx(r, e, "ivlen");
    r_set_ivlen(r, ctx, 16);
    for (i = 0; i < 3; i++)
        r_rekey_msg(r, ctx, &m1, 1);
    r_set_ivlen(r, ctx, 8);
    r_message(r, ctx, &m1);
    for (i = 0; i < 3; i++)
        r_rekey_msg(r, ctx, &m1, 1);
    r_set_ivlen(r, ctx, 12);
    r_init(r, ctx, NULL, m1.key, NULL, 1);
    r_message(r, ctx, &m1);
    r_rekey_msg(r, ctx, &m1, 1);
    EVP_CIPHER_CTX_free(ctx);

    /* the key alone, then the IV alone; mid-message with and without IV */
    ctx = rekey_ctx(r, e, "key then IV");
    for (i = 0; i < 3; i++) {
        r_init(r, ctx, NULL, m1.key, NULL, 1);
        r_init(r, ctx, NULL, NULL, m1.iv, 1);
        r_message(r, ctx, &m1);
    }
    for (i = 0; i < 4; i++) {
        r_init(r, ctx, NULL, m1.key, i == 3 ? NULL : m1.iv, 1);
        r_aad(r, ctx, m1.aad, 3);
        r_update(r, ctx, m1.ct, m1.pt, 10 + i);
    }
    r_update(r, ctx, m1.ct, m1.pt, 17);
    r_final(r, ctx);
    r_get_tag(r, ctx, NULL, 16);
    EVP_CIPHER_CTX_free(ctx);

    /* other keys in between, and the key's own buffer changed in place */
    ctx = rekey_ctx(r, e, "keys");
    for (i = 0; i < (int)(sizeof(order) / sizeof(order[0])); i++)
        r_rekey_msg(r, ctx, order[i] == 1 ? &m1 : &m2, 1);
    memcpy(key, e->k1, sizeof(key));
    m1.key = key;
    for (i = 0; i < 7; i++) {
        if (i == 3)
            key[e->keylen - 1] ^= 0x01;
        else if (i == 5)
            key[0] ^= 0x80;
        else if (i == 6)
            memcpy(key, e->k1, sizeof(key));
        r_rekey_msg(r, ctx, &m1, 1);
        if (i == 0)
            memcpy(first_ct, m1.ct, sizeof(first_ct));
        rec_add(r, "same as first: %d\n",
                memcmp(first_ct, m1.ct, m1.inlen) == 0);
    }
    m1.key = e->k1;
    /*
     * Another key alone between two with the first key (on 3.0 its lengths
     * are known then), a refused set, then the first key again: each keyed
     * init must note the key the context holds, or the last would be
     * taken as a keyless init under the other key
     */
    ctx2 = rekey_ctx(r, e, "another key alone between");
    for (i = 0; i < 2; i++) {
        r_rekey_msg(r, ctx2, &m1, 1);
        r_rekey_msg(r, ctx2, &m1, 1);
        r_init(r, ctx2, NULL, m2.key, NULL, 1);
        r_set_tag(r, ctx2, m1.tag, 16);
        r_rekey_msg(r, ctx2, &m1, 1);
    }
    EVP_CIPHER_CTX_free(ctx2);
    /* TLS AAD set on a context holding the key */
    r_ctrl(r, "tls_aad", ctx, EVP_CTRL_AEAD_TLS1_AAD, 13, m1.aad);
    r_rekey_msg(r, ctx, &m1, 1);
    r_rekey_msg(r, ctx, &m1, 1);
    EVP_CIPHER_CTX_free(ctx);
}

/* An init logged without the context's lengths (asking would end it). */
static int r_init_quiet(REC *r, EVP_CIPHER_CTX *ctx,
                        const unsigned char *key, const unsigned char *iv,
                        int enc)
{
    rec_add(r, "init(-,%s,%s,%d)", key == NULL ? "-" : "k",
            iv == NULL ? "-" : "iv", enc);
    return rec_ret(r, "", EVP_CipherInit_ex(ctx, NULL, NULL, key, iv, enc));
}

/*
 * An init with the IV alone before the key, which ctmpl.c holds back for
 * the keying init (HAProxy's converter, .NET), then every kind of call
 * that may come between them, each on a fresh context.  Nothing else asks
 * the context anything in between.
 */
static void pat_held_iv(REC *r, ENV *e)
{
    unsigned char got[16];
    OSSL_PARAM p[2];
    EVP_CIPHER_CTX *ctx, *dup;
    MSG m, m16;
    int step, enc;

    msg_set(&m, e->k1, 12, 5, 30, 160);
    r_seal(r, e, &m);
    msg_set(&m16, e->k1, 16, 4, 20, 161);
    r_seal(r, e, &m16);
    p[0] = OSSL_PARAM_construct_octet_string("tag", m.tag, 16);
    p[1] = OSSL_PARAM_construct_end();
    for (step = 0; step < 28; step++) {
        enc = step % 2;
        ctx = new_ctx();
        rec_add(r, "held iv step %d\n", step);
        r_init(r, ctx, e->cipher, NULL, NULL, enc);
        if (step / 2 == 1)
            r_set_ivlen(r, ctx, 12);
        if (step / 2 == 9) {
            r_set_ivlen(r, ctx, 16);
            r_init_quiet(r, ctx, NULL, m16.iv, enc);
            r_init(r, ctx, NULL, m16.key, NULL, enc);
            r_finish(r, ctx, &m16, enc);
            EVP_CIPHER_CTX_free(ctx);
            continue;
        }
        /* the IV in the other direction than the key (steps 4, 5) */
        if (step / 2 == 13) {
            /* the IV's init with params (refused when encrypting) */
            rec_add(r, "iv init_ex2");
            rec_ret(r, "", EVP_CipherInit_ex2(ctx, NULL, NULL, m.iv, enc,
                                              p));
        } else {
            r_init_quiet(r, ctx, NULL, m.iv, step / 2 == 2 ? !enc : enc);
        }
        switch (step / 2) {
        case 3:         /* the expected tag before the key */
            if (!enc)
                r_set_tag(r, ctx, m.tag, m.taglen);
            break;
        case 4:         /* the IV asked for */
            rec_add(r, "get_updated_iv=%d",
                    EVP_CIPHER_CTX_get_updated_iv(ctx, got, 12));
            rec_hex(r, "iv", got, 12);
            rec_errs(r);
            break;
        case 5:         /* data before the key */
            r_update(r, ctx, m.out, m.pt, 5);
            break;
        case 6:         /* another IV */
            r_init_quiet(r, ctx, NULL, m16.iv, enc);
            r_init_quiet(r, ctx, NULL, m.iv, enc);
            break;
        case 7:         /* a bare init turning it round and back */
            r_init_quiet(r, ctx, NULL, NULL, !enc);
            r_init_quiet(r, ctx, NULL, NULL, enc);
            break;
        case 8:         /* the IV length queried, then set to what it is */
            rec_add(r, "ivlen=%d\n", EVP_CIPHER_CTX_get_iv_length(ctx));
            r_set_ivlen(r, ctx, 12);
            break;
        case 10:        /* an IV longer than is held back */
            r_set_ivlen(r, ctx, 20);
            r_init_quiet(r, ctx, NULL, m.iv, enc);
            break;
        }
        if (step / 2 == 11) {
            /* a copy before the key: each keyed and used */
            dup = EVP_CIPHER_CTX_new();
            rec_add(r, "copy=%d\n", EVP_CIPHER_CTX_copy(dup, ctx));
            rec_errs(r);
            r_init(r, dup, NULL, m.key, NULL, enc);
            r_finish(r, dup, &m, enc);
            EVP_CIPHER_CTX_free(dup);
        }
        if (step / 2 == 12) {
            /* the keying init with params (refused when encrypting) */
            rec_add(r, "init_ex2");
            rec_ret(r, "", EVP_CipherInit_ex2(ctx, NULL, m.key, NULL, enc,
                                              p));
            rec_ctx(r, ctx);
        } else {
            /* the keying init with an IV of its own on odd steps past 16 */
            r_init(r, ctx, NULL, m.key, step > 16 && step % 4 == 1 ? m.iv
                                                                   : NULL,
                   enc);
        }
        r_finish(r, ctx, &m, enc);
        EVP_CIPHER_CTX_free(ctx);
    }
}

#define PATTERN_TEST(name)                                              \
    static void test_##name(void)                                       \
    {                                                                   \
        run_pattern(#name, pat_##name);                                 \
    }

PATTERN_TEST(fresh)
PATTERN_TEST(split_init)
PATTERN_TEST(ivlen)
PATTERN_TEST(ivlen_leak)
PATTERN_TEST(tags)
PATTERN_TEST(aad)
PATTERN_TEST(empty)
PATTERN_TEST(wrong_tag)
PATTERN_TEST(get_tag_early)
PATTERN_TEST(copy)
PATTERN_TEST(reinit)
PATTERN_TEST(interleave)
PATTERN_TEST(key_in_place)
PATTERN_TEST(near_keys)
PATTERN_TEST(wrong_keylen)
PATTERN_TEST(missing)
PATTERN_TEST(after_final)
PATTERN_TEST(evp_cipher)
PATTERN_TEST(get_iv)
PATTERN_TEST(tls)
PATTERN_TEST(dotnet)
PATTERN_TEST(rekey)
PATTERN_TEST(held_iv)

/*
 * A pattern on a thread of its own (a cache of its own, not one in bypass
 * after other patterns' many keys, so that its keying inits hit): k1 first
 * sealed on fresh contexts until it is cached, then the pattern, with the
 * fetched cipher.  The log against the default's, made the same way.
 */
typedef struct {
    PATTERN fn;
    int bits;
    REC rec;
} HOT_ARG;

static void hot_run(REC *r, PATTERN fn, int bits)
{
    ENV e;
    MSG m;
    int i;

    env_init(&e, bits, 1);
    for (i = 0; i < 4; i++) {
        msg_set(&m, e.k1, 12, 0, 16, 170 + (uint32_t)i);
        r_seal(r, &e, &m);
    }
    fn(r, &e);
    env_free(&e);
}

static void *hot_main(void *arg)
{
    HOT_ARG *a = arg;

    kct_use(kct_keycache());
    ERR_clear_error();
    hot_run(&a->rec, a->fn, a->bits);
    kct_use(NULL);
    return NULL;
}

static void run_hot(const char *name, PATTERN fn)
{
    static const int bits[] = { 128, 192, 256 };
    char what[96];
    REC ref;
    HOT_ARG a;
    uint64_t h0;
    pthread_t t;
    size_t i;

    for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
        snprintf(what, sizeof(what), "%s AES-%d on a hot thread", name,
                 bits[i]);
        memset(&ref, 0, sizeof(ref));
        kct_use(kct_default());
        ERR_clear_error();
        hot_run(&ref, fn, bits[i]);
        kct_use(NULL);
        memset(&a, 0, sizeof(a));
        a.fn = fn;
        a.bits = bits[i];
        h0 = kct_counter(KEYCACHE_PARAM_HITS);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, hot_main, &a), 0);
        pthread_join(t, NULL);
        CU_ASSERT(rec_same(what, &ref, &a.rec));
        /* the keying inits of k1 hit */
        CU_ASSERT(kct_counter(KEYCACHE_PARAM_HITS) > h0);
        rec_free(&ref);
        rec_free(&a.rec);
    }
}

static void test_held_iv_hot(void)
{
    run_hot("held_iv", pat_held_iv);
}

static void test_rekey_hot(void)
{
    run_hot("rekey", pat_rekey);
}

/* ---------------------------------------------------------------------- */
/* Published vectors                                                      */

typedef struct {
    const char *source;
    const char *key, *iv, *aad, *pt, *ct, *tag;
} VECTOR;

static const VECTOR vectors[] = {
    /* McGrew & Viega, "The Galois/Counter Mode of Operation", test case 16 */
    { "GCM spec test case 16",
      "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
      "cafebabefacedbaddecaf888",
      "feedfacedeadbeeffeedfacedeadbeefabaddad2",
      "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
      "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
      "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
      "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
      "76fc6ece0f4e1768cddf8853bb2d551b" },
    /* Same document, test case 17: 8-byte IV */
    { "GCM spec test case 17",
      "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
      "cafebabefacedbad",
      "feedfacedeadbeeffeedfacedeadbeefabaddad2",
      "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
      "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
      "c3762df1ca787d32ae47c13bf19844cbaf1ae14d0b976afac52ff7d79bba9de0"
      "feb582d33934a4f0954cc2363bc73f7862ac430e64abe499f47c9b1f",
      "3a337dbf46a792c45e454913fe2ea8f2" },
    /* Same document, test case 18: 60-byte IV */
    { "GCM spec test case 18",
      "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
      "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728"
      "c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b",
      "feedfacedeadbeeffeedfacedeadbeefabaddad2",
      "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
      "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
      "5a8def2f0c9e53f1f75d7853659e2a20eeb2b22aafde6419a058ab4f6f746bf4"
      "0fc0c3b780f244452da3ebf1c5d82cdea2418997200ef82e44ae7e3f",
      "a44a8266ee1c8eb0c8b5d4cf5ae9f19a" },
    /* NIST CAVP gcmEncryptExtIV256.rsp (CAVS 14.0), first vector, Count = 0 */
    { "CAVP gcmEncryptExtIV256 Count 0",
      "b52c505a37d78eda5dd34f20c22540ea1b58963cf8e5bf8ffa85f9f2492505b4",
      "516c33929df5a3284ff463d7", "", "", "",
      "bdc1ac884d332457a1d2664f168c76f0" },
};

static unsigned char *unhex(const char *hex, size_t *len)
{
    unsigned char *p = kct_unhex(hex, len);

    if (p == NULL)
        abort();
    return p;
}

/* Encrypt and decrypt one vector through EVP_aes_256_gcm() and a fetch. */
static void check_vector(const VECTOR *v, int fetch, const char *where)
{
    size_t kl, ivl, al, pl, cl, tl;
    unsigned char *key = unhex(v->key, &kl), *iv = unhex(v->iv, &ivl);
    unsigned char *aad = unhex(v->aad, &al), *pt = unhex(v->pt, &pl);
    unsigned char *ct = unhex(v->ct, &cl), *tag = unhex(v->tag, &tl);
    unsigned char out[OUTSZ], got[16];
    EVP_CIPHER *fetched = NULL;
    const EVP_CIPHER *c = EVP_aes_256_gcm();
    EVP_CIPHER_CTX *ctx = new_ctx();
    int n = 0, n2 = 0, ok, bad;

    if (fetch)
        c = fetched = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    ok = c != NULL
        && EVP_EncryptInit_ex(ctx, c, NULL, NULL, NULL)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)ivl, NULL)
        && EVP_EncryptInit_ex(ctx, NULL, NULL, key, iv)
        && EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)al)
        && EVP_EncryptUpdate(ctx, out, &n, pt, (int)pl)
        && EVP_EncryptFinal_ex(ctx, out + n, &n2)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, got);
    if (!ok || (size_t)(n + n2) != cl || memcmp(out, ct, cl) != 0
        || memcmp(got, tag, 16) != 0) {
        fprintf(stderr, "\n%s: %s encrypt mismatch\n", where, v->source);
        CU_FAIL("published vector: encrypt");
    }

    /* Decrypt, then again with the tag's last bit flipped. */
    for (bad = 0; bad <= 1; bad++) {
        memcpy(got, tag, 16);
        got[15] ^= bad;
        ok = EVP_DecryptInit_ex(ctx, c, NULL, NULL, NULL)
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)ivl,
                                   NULL)
            && EVP_DecryptInit_ex(ctx, NULL, NULL, key, iv)
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, got)
            && EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)al)
            && EVP_DecryptUpdate(ctx, out, &n, ct, (int)cl);
        ok = ok && (size_t)n == pl && memcmp(out, pt, pl) == 0;
        ok = ok && EVP_DecryptFinal_ex(ctx, out + n, &n2) == !bad;
        if (!ok) {
            fprintf(stderr, "\n%s: %s decrypt (bad tag %d) mismatch\n",
                    where, v->source, bad);
            CU_FAIL("published vector: decrypt");
        }
        ERR_clear_error();
    }
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(fetched);
    free(key);
    free(iv);
    free(aad);
    free(pt);
    free(ct);
    free(tag);
}

static void test_published_vectors(void)
{
    size_t i;
    int fetch, round;

    kct_use(kct_default());
    for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
        for (fetch = 0; fetch <= 1; fetch++)
            check_vector(&vectors[i], fetch, "default");
    kct_use(kct_keycache());
    for (round = 0; round < 3; round++)
        for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
            for (fetch = 0; fetch <= 1; fetch++)
                check_vector(&vectors[i], fetch, "keycache");
    kct_use(NULL);
}

/* ---------------------------------------------------------------------- */
/* Counters                                                               */

/* N fresh contexts with one key: at least N-1 keyed inits come from cache. */
static void test_hits_counted(void)
{
    enum { N = 50 };
    ENV e;
    MSG m;
    REC r = { 0 };
    int fetch, i;

    kct_use(kct_keycache());
    for (fetch = 0; fetch <= 1; fetch++) {
        uint64_t h0, h1;

        env_init(&e, 256, fetch);
        msg_set(&m, e.k3, 12, 0, 16, 300);
        h0 = kct_counter(KEYCACHE_PARAM_HITS);
        for (i = 0; i < N; i++) {
            CU_ASSERT(r_seal(&r, &e, &m));
            rec_free(&r);
        }
        h1 = kct_counter(KEYCACHE_PARAM_HITS);
        CU_ASSERT(h0 != UINT64_MAX && h1 != UINT64_MAX);
        CU_ASSERT(h1 - h0 >= N - 1);
        env_free(&e);
    }
    kct_use(NULL);
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                */

#define NTHREADS 8
#define NMSGS 2000
#define NKEYS 24                /* shared by all threads, 8 per key size */
#define TMAXIN 96

typedef struct {
    int key, ivlen, aadlen, inlen, op, fetch;
    unsigned char iv[16], aad[32], pt[TMAXIN];
} TMSG;

typedef struct {
    unsigned char ct[TMAXIN], tag[16];
    int bad_tag_ok;             /* default's verdict on a corrupted tag */
    int early_tag;              /* default's GET_TAG result before final */
} TREF;

static unsigned char tkeys[NKEYS][32];
static TREF *trefs;

static int tkey_bits(int key)
{
    return 128 + 64 * (key % 3);
}

static void tmsg(TMSG *m, int t, int i)
{
    uint32_t seed = (uint32_t)(t * NMSGS + i) * 3 + 7;

    m->key = (t * 5 + i * 7 + i / 3) % NKEYS;
    m->ivlen = i % 9 == 0 ? 16 : 12;
    m->aadlen = (i * 5) % 32;
    m->inlen = (i * 13 + t) % TMAXIN;
    m->op = i % 4;              /* seal, open, open with bad tag, probe */
    m->fetch = (i / 2) % 2;
    kct_fill(m->iv, sizeof(m->iv), seed);
    kct_fill(m->aad, sizeof(m->aad), seed + 1);
    kct_fill(m->pt, sizeof(m->pt), seed + 2);
}

/*
 * Plain EVP: returns 1 if every call succeeded.  With early set, also asks
 * for the tag right after the keyed init (a stale tag would come out).
 */
static int t_seal(const EVP_CIPHER *c, const TMSG *m, unsigned char *ct,
                  unsigned char *tag, int *early)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n, n2, ok;

    ok = ctx != NULL
        && EVP_EncryptInit_ex(ctx, c, NULL, NULL, NULL)
        && (m->ivlen == 12
            || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, m->ivlen,
                                   NULL))
        && EVP_EncryptInit_ex(ctx, NULL, NULL, tkeys[m->key], m->iv);
    if (ok && early != NULL) {
        *early = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag);
        ERR_clear_error();
    }
    ok = ok
        && EVP_EncryptUpdate(ctx, NULL, &n, m->aad, m->aadlen)
        && EVP_EncryptUpdate(ctx, ct, &n, m->pt, m->inlen)
        && n == m->inlen
        && EVP_EncryptFinal_ex(ctx, ct + n, &n2)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* Returns the final's verdict (1 tag good), -1 if anything else failed. */
static int t_open(const EVP_CIPHER *c, const TMSG *m, const unsigned char *ct,
                  const unsigned char *tag, unsigned char *pt)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n, n2, ok, ret = -1;

    ok = ctx != NULL
        && EVP_DecryptInit_ex(ctx, c, NULL, tkeys[m->key], NULL)
        && (m->ivlen == 12
            || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, m->ivlen,
                                   NULL))
        && EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, m->iv)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)tag)
        && EVP_DecryptUpdate(ctx, NULL, &n, m->aad, m->aadlen)
        && EVP_DecryptUpdate(ctx, pt, &n, ct, m->inlen)
        && n == m->inlen;
    if (ok)
        ret = EVP_DecryptFinal_ex(ctx, pt + n, &n2) > 0;
    EVP_CIPHER_CTX_free(ctx);
    ERR_clear_error();
    return ret;
}

typedef struct {
    int t;
    OSSL_LIB_CTX *libctx;
    int failures;
    char first[160];
} TJOB;

static void t_fail(TJOB *j, int i, const char *what)
{
    if (j->failures++ == 0)
        snprintf(j->first, sizeof(j->first), "thread %d message %d: %s",
                 j->t, i, what);
}

/* Runs all of thread t's messages against the calling thread's default. */
static void t_run(TJOB *j, int make_refs)
{
    EVP_CIPHER *fetched[3];
    unsigned char ct[TMAXIN + 16], tag[16], pt[TMAXIN + 16];
    int b, i;

    for (b = 0; b < 3; b++)
        fetched[b] = EVP_CIPHER_fetch(NULL, gcm_name(128 + 64 * b), NULL);
    for (i = 0; i < NMSGS; i++) {
        TREF *ref = &trefs[j->t * NMSGS + i];
        TMSG m;
        const EVP_CIPHER *c;
        int bits;

        tmsg(&m, j->t, i);
        bits = tkey_bits(m.key);
        c = m.fetch ? fetched[(bits - 128) / 64] : gcm_legacy(bits);
        if (make_refs) {
            if (!t_seal(c, &m, ref->ct, ref->tag, &ref->early_tag))
                t_fail(j, i, "default seal failed");
            memcpy(tag, ref->tag, 16);
            tag[i % 16] ^= 0x80;
            ref->bad_tag_ok = t_open(c, &m, ref->ct, tag, pt);
            continue;
        }
        if (m.op == 0 || m.op == 3) {
            int early = -2;

            if (!t_seal(c, &m, ct, tag, m.op == 3 ? &early : NULL))
                t_fail(j, i, "seal failed");
            else if (memcmp(ct, ref->ct, m.inlen) != 0
                     || memcmp(tag, ref->tag, 16) != 0)
                t_fail(j, i, "ciphertext or tag differs from default");
            else if (m.op == 3 && early != ref->early_tag)
                t_fail(j, i, "GET_TAG before final differs from default");
        } else if (m.op == 1) {
            if (t_open(c, &m, ref->ct, ref->tag, pt) != 1)
                t_fail(j, i, "open failed");
            else if (memcmp(pt, m.pt, m.inlen) != 0)
                t_fail(j, i, "plaintext differs");
        } else {
            memcpy(tag, ref->tag, 16);
            tag[i % 16] ^= 0x80;
            if (t_open(c, &m, ref->ct, tag, pt) != ref->bad_tag_ok)
                t_fail(j, i, "bad tag verdict differs from default");
        }
    }
    for (b = 0; b < 3; b++) {
        if (!make_refs
            && strcmp(kct_provider_name(fetched[b] == NULL ? NULL
                          : EVP_CIPHER_get0_provider(fetched[b])),
                      KEYCACHE_PROVIDER_NAME) != 0)
            t_fail(j, -1, "fetched cipher is not keycache's");
        EVP_CIPHER_free(fetched[b]);
    }
}

static void *t_main(void *arg)
{
    TJOB *j = arg;

    /* set0_default is per thread: each thread picks keycache itself. */
    kct_use(j->libctx);
    t_run(j, 0);
    kct_use(NULL);
    OPENSSL_thread_stop();
    return NULL;
}

static void test_threads(void)
{
    TJOB jobs[NTHREADS];
    pthread_t tid[NTHREADS];
    uint64_t h0;
    int t, k;

    trefs = calloc(NTHREADS * NMSGS, sizeof(*trefs));
    CU_ASSERT_PTR_NOT_NULL_FATAL(trefs);
    for (k = 0; k < NKEYS; k++)
        kct_fill(tkeys[k], sizeof(tkeys[k]), 5000 + k);

    /* References first, single-threaded, with the default provider. */
    kct_use(kct_default());
    for (t = 0; t < NTHREADS; t++) {
        memset(&jobs[t], 0, sizeof(jobs[t]));
        jobs[t].t = t;
        t_run(&jobs[t], 1);
        if (jobs[t].failures != 0)
            fprintf(stderr, "\nreference: %s\n", jobs[t].first);
        CU_ASSERT_EQUAL(jobs[t].failures, 0);
        jobs[t].failures = 0;
        jobs[t].libctx = kct_keycache();
    }
    kct_use(NULL);

    h0 = kct_counter(KEYCACHE_PARAM_HITS);
    for (t = 0; t < NTHREADS; t++)
        CU_ASSERT_FATAL(pthread_create(&tid[t], NULL, t_main,
                                       &jobs[t]) == 0);
    for (t = 0; t < NTHREADS; t++)
        pthread_join(tid[t], NULL);
    for (t = 0; t < NTHREADS; t++) {
        if (jobs[t].failures != 0)
            fprintf(stderr, "\n%d failures, first: %s\n", jobs[t].failures,
                    jobs[t].first);
        CU_ASSERT_EQUAL(jobs[t].failures, 0);
    }
    CU_ASSERT(kct_counter(KEYCACHE_PARAM_HITS) > h0);
    free(trefs);
    trefs = NULL;
}

/*
 * Contexts crossing threads: one keyed in the main thread is finished in a
 * worker, one keyed in the worker is finished in the main thread after the
 * worker (and so its per-thread cache) is gone.
 */
typedef struct {
    const EVP_CIPHER *cipher;
    const TMSG *m;
    EVP_CIPHER_CTX *from_main, *to_main;
    unsigned char ct[TMAXIN + 16], tag[16];
    int ok;
} XJOB;

static int x_finish(EVP_CIPHER_CTX *ctx, const TMSG *m, unsigned char *ct,
                    unsigned char *tag)
{
    int n, n2;

    return EVP_EncryptUpdate(ctx, ct, &n, m->pt, m->inlen)
        && EVP_EncryptFinal_ex(ctx, ct + n, &n2)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag);
}

static EVP_CIPHER_CTX *x_start(const EVP_CIPHER *c, const TMSG *m)
{
    EVP_CIPHER_CTX *ctx = new_ctx();
    int n;

    if (!EVP_EncryptInit_ex(ctx, c, NULL, tkeys[m->key], m->iv)
        || !EVP_EncryptUpdate(ctx, NULL, &n, m->aad, m->aadlen)) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void *x_main(void *arg)
{
    XJOB *x = arg;
    unsigned char ct[TMAXIN + 16], tag[16];
    int i;

    kct_use(kct_keycache());
    /* Fill this thread's cache with the same key first. */
    for (i = 0; i < 3; i++)
        x->ok = t_seal(x->cipher, x->m, ct, tag, NULL);
    x->ok = x->ok && x_finish(x->from_main, x->m, x->ct, x->tag);
    x->to_main = x_start(x->cipher, x->m);
    kct_use(NULL);
    OPENSSL_thread_stop();
    return NULL;
}

static void test_cross_thread(void)
{
    unsigned char ref_ct[TMAXIN + 16], ref_tag[16], ct[TMAXIN + 16], tag[16];
    XJOB x;
    TMSG m;
    pthread_t tid;

    kct_fill(tkeys[0], sizeof(tkeys[0]), 5000);
    tmsg(&m, 0, 4);
    m.key = 0;
    m.ivlen = 12;
    kct_use(kct_default());
    CU_ASSERT_FATAL(t_seal(EVP_aes_128_gcm(), &m, ref_ct, ref_tag, NULL));

    kct_use(kct_keycache());
    memset(&x, 0, sizeof(x));
    x.cipher = EVP_aes_128_gcm();
    x.m = &m;
    x.from_main = x_start(x.cipher, &m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x.from_main);
    CU_ASSERT_FATAL(pthread_create(&tid, NULL, x_main, &x) == 0);
    pthread_join(tid, NULL);
    CU_ASSERT(x.ok);
    CU_ASSERT(memcmp(x.ct, ref_ct, m.inlen) == 0);
    CU_ASSERT(memcmp(x.tag, ref_tag, 16) == 0);
    CU_ASSERT_PTR_NOT_NULL(x.to_main);
    if (x.to_main != NULL) {
        CU_ASSERT(x_finish(x.to_main, &m, ct, tag));
        CU_ASSERT(memcmp(ct, ref_ct, m.inlen) == 0);
        CU_ASSERT(memcmp(tag, ref_tag, 16) == 0);
    }
    EVP_CIPHER_CTX_free(x.from_main);
    EVP_CIPHER_CTX_free(x.to_main);
    kct_use(NULL);
}

/* ---------------------------------------------------------------------- */

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("gcm_patterns", NULL, NULL);

    CU_add_test(s, "published vectors", test_published_vectors);
    CU_add_test(s, "fresh ctx per message", test_fresh);
    CU_add_test(s, "key and IV in separate inits", test_split_init);
    CU_add_test(s, "IV lengths", test_ivlen);
    CU_add_test(s, "IV length does not leak", test_ivlen_leak);
    CU_add_test(s, "tag before/after key, tag lengths", test_tags);
    CU_add_test(s, "AAD pieces", test_aad);
    CU_add_test(s, "empty plaintext", test_empty);
    CU_add_test(s, "wrong tag then right tag", test_wrong_tag);
    CU_add_test(s, "GET_TAG before final", test_get_tag_early);
    CU_add_test(s, "EVP_CIPHER_CTX_copy mid-message", test_copy);
    CU_add_test(s, "re-init same context", test_reinit);
    CU_add_test(s, "encrypt/decrypt interleaved", test_interleave);
    CU_add_test(s, "key changed in place", test_key_in_place);
    CU_add_test(s, "keys one byte apart, every position", test_near_keys);
    CU_add_test(s, "wrong key length", test_wrong_keylen);
    CU_add_test(s, "missing IV or key", test_missing);
    CU_add_test(s, "update/final after final", test_after_final);
    CU_add_test(s, "EVP_Cipher one-shot", test_evp_cipher);
    CU_add_test(s, "get_updated_iv/get_original_iv", test_get_iv);
    CU_add_test(s, "TLS state does not leak", test_tls);
    CU_add_test(s, ".NET AesGcm call order", test_dotnet);
    CU_add_test(s, "re-keyed with the key it holds", test_rekey);
    CU_add_test(s, "IV alone before the key, then each call", test_held_iv);
    CU_add_test(s, "the same on a hot thread", test_held_iv_hot);
    CU_add_test(s, "re-keyed on a hot thread", test_rekey_hot);
    CU_add_test(s, "hits counted", test_hits_counted);
    CU_add_test(s, "8 threads, shared keys", test_threads);
    CU_add_test(s, "contexts crossing threads", test_cross_thread);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
