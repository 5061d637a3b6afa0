/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Published-vector equivalence: keycache's HMAC and AES-GCM against
 * Wycheproof, OpenSSL's own EVP test data, NIST CAVP GCM and the RFC 2202 /
 * RFC 4231 HMAC vectors.
 *
 * Every vector runs three times with a fresh EVP_MAC_CTX / EVP_CIPHER_CTX:
 * once in kct_default(), then twice in kct_keycache() on the same thread, so
 * the second keycache run is served from the key cache.  Each run must give
 * the published answer, and the keycache runs must also match the default
 * run exactly: same step failing, same error on the queue, same bytes.
 * Vectors that must fail have to fail in all three runs.
 *
 * Sources, relative to kct_vectors_dir() unless said otherwise:
 *   wycheproof/aes_gcm_test.json          encrypt and decrypt, all groups
 *   wycheproof/hmac_*_test.json           truncated tags compared as prefix
 *   openssl-evp/evpmac_common.txt         HMAC stanzas
 *   openssl-evp/evpmac_sm3.txt
 *   openssl-evp/evpciph_aes_common.txt    AES-GCM stanzas
 *   KC_CAVP_DIR/ciphers/AES/GCM/gcm{EncryptExtIV,Decrypt}{128,192,256}.rsp
 *   KC_CAVP_DIR/HMAC/rfc-*.txt
 *
 * KC_VECTORS_QUICK=1 runs only every 10th CAVP GCM vector (for valgrind and
 * sanitizer builds); all other sources are small and always run in full.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "kc_json.h"
#include "keycache.h"

/* Run 0 is the default provider, runs 1 and 2 are keycache (2 = cached). */
#define RUNS 3
static const char *const run_name[RUNS] = {
    "default", "keycache run 1", "keycache run 2"
};

/* Per-file cap on failure messages handed to CUnit; the count is exact. */
#define MAX_REPORTS 20

/* The step of a run that failed; ST_OK when the run completed. */
enum {
    ST_OK, ST_NEW, ST_INIT, ST_IVLEN, ST_KEY, ST_TAG, ST_AAD, ST_UPDATE,
    ST_FINAL, ST_GETTAG, ST_ANY
};
static const char *const stage_name[] = {
    "ok", "ctx_new", "init", "set_ivlen", "key/iv", "set_tag", "aad",
    "update", "final", "get_tag", "any"
};

typedef struct {
    int stage;
    unsigned long err;          /* last error queued by the run, 0 if none */
    unsigned char *out;         /* encrypt: ct || tag; decrypt: pt; MAC */
    size_t outlen;
} RESULT;

enum { EXPECT_VALID, EXPECT_INVALID, EXPECT_ACCEPTABLE };

/*
 * What a vector must produce.  VALID: |want| (a prefix of the output when
 * |prefix| is set, for truncated MACs).  INVALID with |want|: fail, or give
 * anything but |want| (forged tags).  INVALID without |want|: fail, at
 * |fail_stage| unless that is ST_ANY.  ACCEPTABLE: only equivalence.
 */
typedef struct {
    int outcome;
    int fail_stage;
    const unsigned char *want;
    size_t wantlen;
    int prefix;
    int may_reject;             /* default may refuse the IV length */
} EXPECT;

enum { JUDGE_FAIL, JUDGE_OK, JUDGE_REJECTED };

typedef struct {
    const char *file;
    size_t run, valid, invalid, rejected, skipped, failures;
} TALLY;

/* Per-suite state: fetched algorithms and what the cache must have seen. */
static struct {
    EVP_MAC *mac[2];            /* [0] default ctx, [1] keycache ctx */
    EVP_CIPHER *gcm[2][3];      /* by ctx, then 128/192/256-bit key */
    uint64_t hits0, pass0;
    size_t cacheable;           /* valid operations with a cacheable key */
    size_t longkey;             /* valid operations keycache passes through */
    size_t run, valid, invalid; /* totals over the suite's files */
} suite;

static const char *const gcm_name[3] = {
    "AES-128-GCM", "AES-192-GCM", "AES-256-GCM"
};

/* ---- reporting ---- */

static void vfail(TALLY *t, unsigned int line, const char *fmt, ...)
{
    char msg[1024];
    int n;
    va_list ap;

    if (++t->failures > MAX_REPORTS)
        return;
    n = snprintf(msg, sizeof(msg), "%s: ", t->file);
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
    va_end(ap);
    CU_assertImplementation(CU_FALSE, line, msg, __FILE__, "", CU_FALSE);
}
#define FAIL(t, ...) vfail((t), __LINE__, __VA_ARGS__)

static const char *hex(const unsigned char *p, size_t n, char *buf, size_t sz)
{
    size_t i, max = (sz - 4) / 2;

    if (p == NULL)
        return "(none)";
    for (i = 0; i < n && i < max; i++)
        sprintf(buf + 2 * i, "%02x", p[i]);
    strcpy(buf + 2 * i, i < n ? "..." : "");
    return buf;
}

static const char *err_text(unsigned long e, char *buf, size_t sz)
{
    const char *r = ERR_reason_error_string(e);

    if (e == 0)
        return "no error";
    snprintf(buf, sz, "lib %d reason %d (%s)", ERR_GET_LIB(e),
             ERR_GET_REASON(e), r != NULL ? r : "?");
    return buf;
}

static void print_tally(const TALLY *t)
{
    printf("\n    %s: %zu vectors run (%zu valid, %zu invalid",
           t->file, t->run, t->valid, t->invalid);
    if (t->rejected > 0)
        printf(", %zu of the valid refused by default", t->rejected);
    printf("), %zu skipped", t->skipped);
    if (t->failures > MAX_REPORTS)
        printf(", %zu failures (first %d reported)", t->failures, MAX_REPORTS);
    printf("\n    ");
    fflush(stdout);
}

static void end_file(TALLY *t)
{
    suite.run += t->run;
    suite.valid += t->valid;
    suite.invalid += t->invalid;
    print_tally(t);
    CU_ASSERT(t->run > 0);
    CU_ASSERT_EQUAL(t->failures, 0);
}

/* ---- judging the three runs of one vector ---- */

/* Errors are compared by library and reason: what applications test. */
static int same_error(unsigned long a, unsigned long b)
{
    return ERR_GET_LIB(a) == ERR_GET_LIB(b)
           && ERR_GET_REASON(a) == ERR_GET_REASON(b);
}

static int matches(const RESULT *r, const EXPECT *e)
{
    if (r->stage != ST_OK)
        return 0;
    if (e->prefix)
        return r->outlen >= e->wantlen
               && memcmp(r->out, e->want, e->wantlen) == 0;
    return r->outlen == e->wantlen
           && (e->wantlen == 0 || memcmp(r->out, e->want, e->wantlen) == 0);
}

static void check_same(TALLY *t, const char *id, const RESULT *d,
                       const RESULT *k, int run)
{
    char b1[200], b2[200];

    if (d->stage != k->stage)
        FAIL(t, "%s: %s stops at %s, default at %s", id, run_name[run],
             stage_name[k->stage], stage_name[d->stage]);
    else if (!same_error(d->err, k->err))
        FAIL(t, "%s: %s leaves %s, default %s", id, run_name[run],
             err_text(k->err, b1, sizeof(b1)),
             err_text(d->err, b2, sizeof(b2)));
    else if (d->stage == ST_OK
             && (d->outlen != k->outlen
                 || memcmp(d->out, k->out, d->outlen) != 0))
        FAIL(t, "%s: %s output %s differs from default %s", id, run_name[run],
             hex(k->out, k->outlen, b1, sizeof(b1)),
             hex(d->out, d->outlen, b2, sizeof(b2)));
}

static int check_expect(TALLY *t, const char *id, const RESULT *r, int run,
                        const EXPECT *e)
{
    char b1[200], b2[200];

    switch (e->outcome) {
    case EXPECT_VALID:
        if (r->stage != ST_OK) {
            FAIL(t, "%s: %s fails a valid vector at %s (%s)", id,
                 run_name[run], stage_name[r->stage],
                 err_text(r->err, b1, sizeof(b1)));
            return 0;
        }
        if (!matches(r, e)) {
            FAIL(t, "%s: %s gives %s, expected %s%s", id, run_name[run],
                 hex(r->out, r->outlen, b1, sizeof(b1)),
                 hex(e->want, e->wantlen, b2, sizeof(b2)),
                 e->prefix ? " (prefix)" : "");
            return 0;
        }
        return 1;
    case EXPECT_INVALID:
        if (e->want != NULL) {
            if (matches(r, e)) {
                FAIL(t, "%s: %s reproduces an invalid vector's value", id,
                     run_name[run]);
                return 0;
            }
        } else if (r->stage == ST_OK) {
            FAIL(t, "%s: %s accepts an invalid vector", id, run_name[run]);
            return 0;
        } else if (e->fail_stage != ST_ANY && r->stage != e->fail_stage) {
            FAIL(t, "%s: %s fails at %s, expected at %s", id, run_name[run],
                 stage_name[r->stage], stage_name[e->fail_stage]);
            return 0;
        }
        return 1;
    }
    return 1;
}

/*
 * The keycache runs must equal the default run, and every run must meet the
 * published expectation.  The one allowance: the default provider may refuse
 * an IV length a vector calls valid (OpenSSL 3.0 caps GCM IVs at 128 bytes);
 * keycache must then refuse it the same way.
 */
static int judge(TALLY *t, const char *id, RESULT r[RUNS], const EXPECT *e)
{
    int i, ok = 1, before = (int)t->failures;

    for (i = 1; i < RUNS; i++)
        check_same(t, id, &r[0], &r[i], i);
    if (e->outcome == EXPECT_VALID && e->may_reject
        && r[0].stage == ST_IVLEN)
        return (int)t->failures == before ? JUDGE_REJECTED : JUDGE_FAIL;
    for (i = 0; i < RUNS; i++)
        ok &= check_expect(t, id, &r[i], i, e);
    return ok && (int)t->failures == before ? JUDGE_OK : JUDGE_FAIL;
}

static void free_results(RESULT r[RUNS])
{
    int i;

    for (i = 0; i < RUNS; i++)
        OPENSSL_free(r[i].out);
}

/*
 * Each valid operation re-keys twice in keycache, and the second time must
 * be a cache hit: this is the lower bound checked at the end of the suite.
 */
static void count_cacheable(size_t keylen, const char *digest)
{
    EVP_MD *md = digest != NULL ? EVP_MD_fetch(NULL, digest, NULL) : NULL;
    /* HMAC keys a key longer than the digest's block with its digest */
    int block = md != NULL ? EVP_MD_get_block_size(md) : 0;

    EVP_MD_free(md);
    if (keylen <= KEYCACHE_MAX_KEY_LEN || (block > 0 && keylen > (size_t)block))
        suite.cacheable++;
    else
        suite.longkey++;
}

/* ---- HMAC ---- */

typedef struct {
    char id[64];
    const char *digest;
    unsigned char *key, *msg, *tag;
    size_t keylen, msglen, taglen;
} MAC_VEC;

static void mac_run(EVP_MAC *mac, const MAC_VEC *v, RESULT *r)
{
    EVP_MAC_CTX *ctx;
    OSSL_PARAM params[2];
    size_t outl = 0;

    memset(r, 0, sizeof(*r));
    ERR_clear_error();
    r->stage = ST_NEW;
    r->out = OPENSSL_zalloc(EVP_MAX_MD_SIZE);
    if ((ctx = EVP_MAC_CTX_new(mac)) == NULL || r->out == NULL)
        goto end;
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *)v->digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    r->stage = ST_INIT;
    if (!EVP_MAC_init(ctx, v->key, v->keylen, params))
        goto end;
    r->stage = ST_UPDATE;
    if (!EVP_MAC_update(ctx, v->msg, v->msglen))
        goto end;
    r->stage = ST_FINAL;
    if (!EVP_MAC_final(ctx, r->out, &outl, EVP_MAX_MD_SIZE))
        goto end;
    r->outlen = outl;
    r->stage = ST_OK;
 end:
    r->err = ERR_peek_last_error();
    ERR_clear_error();
    EVP_MAC_CTX_free(ctx);
}

static void mac_vector(TALLY *t, const MAC_VEC *v, const EXPECT *e)
{
    RESULT r[RUNS];
    int i, verdict;

    for (i = 0; i < RUNS; i++)
        mac_run(suite.mac[i > 0], v, &r[i]);
    verdict = judge(t, v->id, r, e);
    t->run++;
    if (e->outcome == EXPECT_VALID) {
        t->valid++;
        if (verdict == JUDGE_OK)
            count_cacheable(v->keylen, v->digest);
    } else {
        t->invalid++;
    }
    free_results(r);
}

static void mac_vec_free(MAC_VEC *v)
{
    free(v->key);
    free(v->msg);
    free(v->tag);
    memset(v, 0, sizeof(*v));
}

/* ---- AES-GCM ---- */

#define OP_ENC 1
#define OP_DEC 2

typedef struct {
    char id[64];
    unsigned char *key, *iv, *aad, *pt, *ct, *tag;
    size_t keylen, ivlen, aadlen, ptlen, ctlen, taglen;
    int ops;
    int outcome;
    int fail_stage;             /* of decrypt, for vectors that must fail */
    int set_ivlen;              /* also for 12 bytes, as evp_test does */
} GCM_VEC;

static int gcm_index(size_t keylen)
{
    return keylen == 16 ? 0 : keylen == 24 ? 1 : keylen == 32 ? 2 : -1;
}

/* The classic sequence an application uses, one step per failure stage. */
static void gcm_run(const EVP_CIPHER *cipher, const GCM_VEC *v, int enc,
                    RESULT *r)
{
    EVP_CIPHER_CTX *ctx;
    const unsigned char *in = enc ? v->pt : v->ct;
    size_t inlen = enc ? v->ptlen : v->ctlen;
    int outl = 0, finl = 0;

    memset(r, 0, sizeof(*r));
    ERR_clear_error();
    r->stage = ST_NEW;
    r->out = OPENSSL_zalloc(inlen + EVP_GCM_TLS_TAG_LEN + 1);
    if ((ctx = EVP_CIPHER_CTX_new()) == NULL || r->out == NULL)
        goto end;
    r->stage = ST_INIT;
    if (!EVP_CipherInit_ex(ctx, cipher, NULL, NULL, NULL, enc))
        goto end;
    r->stage = ST_IVLEN;
    if ((v->set_ivlen || v->ivlen != 12)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)v->ivlen,
                               NULL) <= 0)
        goto end;
    r->stage = ST_KEY;
    if (!EVP_CipherInit_ex(ctx, NULL, NULL, v->key, v->iv, enc))
        goto end;
    r->stage = ST_TAG;
    if (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)v->taglen,
                                    v->tag) <= 0)
        goto end;
    r->stage = ST_AAD;
    if (v->aadlen > 0
        && !EVP_CipherUpdate(ctx, NULL, &outl, v->aad, (int)v->aadlen))
        goto end;
    r->stage = ST_UPDATE;
    outl = 0;
    if (inlen > 0 && !EVP_CipherUpdate(ctx, r->out, &outl, in, (int)inlen))
        goto end;
    r->stage = ST_FINAL;
    if (!EVP_CipherFinal_ex(ctx, r->out + outl, &finl))
        goto end;
    r->outlen = (size_t)outl + (size_t)finl;
    r->stage = ST_GETTAG;
    if (enc) {
        if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, (int)v->taglen,
                                r->out + r->outlen) <= 0)
            goto end;
        r->outlen += v->taglen;
    }
    r->stage = ST_OK;
 end:
    r->err = ERR_peek_last_error();
    ERR_clear_error();
    EVP_CIPHER_CTX_free(ctx);
}

static int gcm_op(TALLY *t, const GCM_VEC *v, int enc, int idx)
{
    RESULT r[RUNS];
    EXPECT e = { v->outcome, ST_ANY, NULL, 0, 0, 1 };
    unsigned char *want = NULL;
    char id[80];
    int i, verdict;

    if (enc) {
        /* Encrypt output is ct || tag; an invalid vector's must differ. */
        want = OPENSSL_malloc(v->ctlen + v->taglen + 1);
        if (want == NULL)
            return JUDGE_FAIL;
        memcpy(want, v->ct, v->ctlen);
        memcpy(want + v->ctlen, v->tag, v->taglen);
        e.want = want;
        e.wantlen = v->ctlen + v->taglen;
    } else if (v->outcome == EXPECT_INVALID) {
        e.fail_stage = v->fail_stage;
    } else {
        e.want = v->pt;
        e.wantlen = v->ptlen;
    }
    for (i = 0; i < RUNS; i++)
        gcm_run(suite.gcm[i > 0][idx], v, enc, &r[i]);
    snprintf(id, sizeof(id), "%s %s", v->id, enc ? "encrypt" : "decrypt");
    verdict = judge(t, id, r, &e);
    free_results(r);
    OPENSSL_free(want);
    return verdict;
}

static void gcm_vector(TALLY *t, const GCM_VEC *v)
{
    int idx = gcm_index(v->keylen), rejected = 0, verdict, enc;

    if (idx < 0) {
        FAIL(t, "%s: unexpected key length %zu", v->id, v->keylen);
        return;
    }
    for (enc = 1; enc >= 0; enc--) {
        if ((v->ops & (enc ? OP_ENC : OP_DEC)) == 0)
            continue;
        verdict = gcm_op(t, v, enc, idx);
        rejected |= verdict == JUDGE_REJECTED;
        if (verdict == JUDGE_OK && v->outcome == EXPECT_VALID)
            count_cacheable(v->keylen, NULL);
    }
    t->run++;
    if (v->outcome == EXPECT_VALID) {
        t->valid++;
        t->rejected += rejected;
    } else {
        t->invalid++;
    }
}

static void gcm_vec_free(GCM_VEC *v)
{
    free(v->key);
    free(v->iv);
    free(v->aad);
    free(v->pt);
    free(v->ct);
    free(v->tag);
    memset(v, 0, sizeof(*v));
}

/* ---- files ---- */

/* A hex string, or "text" in double quotes as in OpenSSL's EVP files. */
static unsigned char *parse_bin(const char *s, size_t *len)
{
    size_t n = strlen(s);
    unsigned char *p;

    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        if ((p = malloc(n)) == NULL)
            return NULL;
        memcpy(p, s + 1, n - 2);
        *len = n - 2;
        return p;
    }
    return kct_unhex(s, len);
}

/*
 * Blank-line separated stanzas of "Name = value" lines, the shape shared by
 * OpenSSL's EVP files, CAVP .rsp files and the RFC .txt files.  '#' comments
 * and CAVP "[...]" section headers are ignored; a bare word such as CAVP's
 * FAIL becomes a field with an empty value.  Parsing edits the buffer.
 */
#define MAX_FIELDS 16

typedef struct {
    int n, line;
    const char *name[MAX_FIELDS], *value[MAX_FIELDS];
} STANZA;

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int next_stanza(char **cursor, int *lineno, STANZA *st)
{
    char *p = *cursor, *line, *eq;

    st->n = 0;
    while (*p != '\0') {
        line = p;
        p += strcspn(p, "\n");
        if (*p == '\n')
            *p++ = '\0';
        (*lineno)++;
        line = trim(line);
        if (*line == '#' || *line == '[')
            continue;
        if (*line == '\0') {
            if (st->n > 0)
                break;
            continue;
        }
        if (st->n == 0)
            st->line = *lineno;
        if (st->n == MAX_FIELDS)
            continue;
        if ((eq = strchr(line, '=')) != NULL) {
            *eq = '\0';
            st->name[st->n] = trim(line);
            st->value[st->n] = trim(eq + 1);
        } else {
            st->name[st->n] = line;
            st->value[st->n] = "";
        }
        st->n++;
    }
    *cursor = p;
    return st->n > 0;
}

static const char *field(const STANZA *st, const char *name)
{
    int i;

    for (i = 0; i < st->n; i++)
        if (strcasecmp(st->name[i], name) == 0)
            return st->value[i];
    return NULL;
}

/* Is every field of the stanza one of |known| (NULL terminated)? */
static const char *unknown_field(const STANZA *st, const char *const *known)
{
    int i, j;

    for (i = 0; i < st->n; i++) {
        for (j = 0; known[j] != NULL; j++)
            if (strcasecmp(st->name[i], known[j]) == 0)
                break;
        if (known[j] == NULL)
            return st->name[i];
    }
    return NULL;
}

static unsigned char *field_bin(TALLY *t, const STANZA *st, const char *name,
                                size_t *len)
{
    const char *v = field(st, name);
    unsigned char *p;

    *len = 0;
    if (v == NULL)
        v = "";
    if ((p = parse_bin(v, len)) == NULL)
        FAIL(t, "line %d: bad %s value", st->line, name);
    return p;
}

/* ---- suites: setup, provider check, cache check ---- */

static int suite_init(void)
{
    OSSL_LIB_CTX *ctx[2] = { kct_default(), kct_keycache() };
    int c, i;

    memset(&suite, 0, sizeof(suite));
    for (c = 0; c < 2; c++) {
        suite.mac[c] = EVP_MAC_fetch(ctx[c], "HMAC", NULL);
        for (i = 0; i < 3; i++)
            suite.gcm[c][i] = EVP_CIPHER_fetch(ctx[c], gcm_name[i], NULL);
    }
    ERR_clear_error();
    suite.hits0 = kct_counter(KEYCACHE_PARAM_HITS);
    suite.pass0 = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);
    return 0;
}

static int suite_cleanup(void)
{
    int c, i;

    for (c = 0; c < 2; c++) {
        EVP_MAC_free(suite.mac[c]);
        for (i = 0; i < 3; i++)
            EVP_CIPHER_free(suite.gcm[c][i]);
    }
    memset(&suite, 0, sizeof(suite));
    return 0;
}

static const char *const ctx_prov[2] = { "default", KEYCACHE_PROVIDER_NAME };

static void test_mac_providers(void)
{
    int c;

    for (c = 0; c < 2; c++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(suite.mac[c]);
        CU_ASSERT_STRING_EQUAL(
            kct_provider_name(EVP_MAC_get0_provider(suite.mac[c])),
            ctx_prov[c]);
    }
}

static void test_gcm_providers(void)
{
    int c, i;

    for (c = 0; c < 2; c++) {
        for (i = 0; i < 3; i++) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(suite.gcm[c][i]);
            CU_ASSERT_STRING_EQUAL(
                kct_provider_name(EVP_CIPHER_get0_provider(suite.gcm[c][i])),
                ctx_prov[c]);
        }
    }
}

/*
 * Each valid operation's second keycache run must have been a cache hit, so
 * the hit counter grows by at least the number of valid operations with a
 * key short enough to cache, or long enough that HMAC keys it with its
 * digest (at least one per valid vector); keys between pass straight
 * through and must show up there instead.
 */
static void test_cache_hits(void)
{
    uint64_t hits = kct_counter(KEYCACHE_PARAM_HITS);
    uint64_t pass = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);

    CU_ASSERT_FATAL(hits != UINT64_MAX && suite.hits0 != UINT64_MAX);
    CU_ASSERT_FATAL(pass != UINT64_MAX && suite.pass0 != UINT64_MAX);
    printf("\n    suite total: %zu vectors run (%zu valid, %zu invalid); "
           "cache hits +%llu (need >= %zu), passthrough +%llu (need >= %zu)"
           "\n    ", suite.run, suite.valid, suite.invalid,
           (unsigned long long)(hits - suite.hits0), suite.cacheable,
           (unsigned long long)(pass - suite.pass0), suite.longkey);
    CU_ASSERT(suite.cacheable > 0);
    CU_ASSERT(hits - suite.hits0 >= suite.cacheable);
    CU_ASSERT(pass - suite.pass0 >= suite.longkey);
}

/* ---- source 1: Wycheproof AES-GCM ---- */

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, k);

    return cJSON_IsString(i) ? i->valuestring : NULL;
}

static int jint(const cJSON *o, const char *k)
{
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, k);

    return cJSON_IsNumber(i) ? i->valueint : -1;
}

static int wp_outcome(const char *result)
{
    if (result != NULL && strcmp(result, "valid") == 0)
        return EXPECT_VALID;
    if (result != NULL && strcmp(result, "invalid") == 0)
        return EXPECT_INVALID;
    return EXPECT_ACCEPTABLE;
}

static cJSON *wp_load(TALLY *t)
{
    cJSON *root = kct_json_load(t->file);

    if (root == NULL)
        FAIL(t, "cannot read or parse %s/%s", kct_vectors_dir(), t->file);
    return root;
}

static int wp_bin(const cJSON *test, const char *k, unsigned char **p,
                  size_t *len)
{
    return (*p = kct_json_hex(test, k, len)) != NULL;
}

static void test_wycheproof_gcm(void)
{
    TALLY t = { .file = "wycheproof/aes_gcm_test.json" };
    cJSON *root = wp_load(&t), *groups, *g, *v;
    GCM_VEC vec;

    if (root == NULL)
        return;
    groups = cJSON_GetObjectItemCaseSensitive(root, "testGroups");
    cJSON_ArrayForEach(g, groups) {
        size_t taglen = (size_t)jint(g, "tagSize") / 8;

        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(g, "tests")) {
            memset(&vec, 0, sizeof(vec));
            snprintf(vec.id, sizeof(vec.id), "tcId %d", jint(v, "tcId"));
            if (!wp_bin(v, "key", &vec.key, &vec.keylen)
                || !wp_bin(v, "iv", &vec.iv, &vec.ivlen)
                || !wp_bin(v, "aad", &vec.aad, &vec.aadlen)
                || !wp_bin(v, "msg", &vec.pt, &vec.ptlen)
                || !wp_bin(v, "ct", &vec.ct, &vec.ctlen)
                || !wp_bin(v, "tag", &vec.tag, &vec.taglen)
                || vec.taglen != taglen) {
                FAIL(&t, "%s: malformed test", vec.id);
                gcm_vec_free(&vec);
                continue;
            }
            vec.ops = OP_ENC | OP_DEC;
            vec.outcome = wp_outcome(jstr(v, "result"));
            vec.fail_stage = ST_ANY;
            vec.set_ivlen = 1;
            gcm_vector(&t, &vec);
            gcm_vec_free(&vec);
        }
    }
    cJSON_Delete(root);
    end_file(&t);
}

/* ---- source 2: Wycheproof HMAC ---- */

/* "HMACSHA512/224" -> "SHA512-224", "HMACSHA3-256" -> "SHA3-256". */
static int wp_digest(const char *alg, char *out, size_t sz)
{
    char *p;

    if (alg == NULL || strncmp(alg, "HMAC", 4) != 0
        || strlen(alg + 4) + 1 > sz)
        return 0;
    strcpy(out, alg + 4);
    for (p = out; *p != '\0'; p++)
        if (*p == '/')
            *p = '-';
    return 1;
}

static void wycheproof_hmac(const char *file)
{
    TALLY t = { .file = file };
    cJSON *root = wp_load(&t), *groups, *g, *v;
    char digest[32];
    MAC_VEC vec;

    if (root == NULL)
        return;
    if (!wp_digest(jstr(root, "algorithm"), digest, sizeof(digest))) {
        FAIL(&t, "unknown algorithm");
        cJSON_Delete(root);
        return;
    }
    groups = cJSON_GetObjectItemCaseSensitive(root, "testGroups");
    cJSON_ArrayForEach(g, groups) {
        size_t taglen = (size_t)jint(g, "tagSize") / 8;

        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(g, "tests")) {
            EXPECT e = { EXPECT_VALID, ST_ANY, NULL, 0, 1, 0 };

            memset(&vec, 0, sizeof(vec));
            snprintf(vec.id, sizeof(vec.id), "tcId %d", jint(v, "tcId"));
            vec.digest = digest;
            if (!wp_bin(v, "key", &vec.key, &vec.keylen)
                || !wp_bin(v, "msg", &vec.msg, &vec.msglen)
                || !wp_bin(v, "tag", &vec.tag, &vec.taglen)
                || vec.taglen != taglen) {
                FAIL(&t, "%s: malformed test", vec.id);
                mac_vec_free(&vec);
                continue;
            }
            /* Truncated tags: only the first tagSize/8 bytes count. */
            e.outcome = wp_outcome(jstr(v, "result"));
            e.want = vec.tag;
            e.wantlen = vec.taglen;
            mac_vector(&t, &vec, &e);
            mac_vec_free(&vec);
        }
    }
    cJSON_Delete(root);
    end_file(&t);
}

#define WP_HMAC(name)                                                   \
    static void test_wp_hmac_##name(void)                               \
    {                                                                   \
        wycheproof_hmac("wycheproof/hmac_" #name "_test.json");         \
    }
WP_HMAC(sha1)
WP_HMAC(sha224)
WP_HMAC(sha256)
WP_HMAC(sha384)
WP_HMAC(sha512)
WP_HMAC(sha512_224)
WP_HMAC(sha512_256)
WP_HMAC(sha3_224)
WP_HMAC(sha3_256)
WP_HMAC(sha3_384)
WP_HMAC(sha3_512)
WP_HMAC(sm3)

/* ---- source 3: OpenSSL EVP test data ---- */

/*
 * HMAC stanzas.  Run: "MAC = HMAC", and "MAC = HMAC by EVP_PKEY" too, whose
 * vector is the same plain HMAC computation (we compute it with EVP_MAC; the
 * EVP_PKEY route is not what keycache changes).  Skipped: stanzas for other
 * MACs, stanzas only available in other providers, and any stanza with
 * fields beyond plain compute (Ctrl, custom sizes, IVs, ...), none of which
 * occur in the current excerpt.
 */
static const char *const evpmac_fields[] = {
    "MAC", "Algorithm", "Key", "Input", "Output", "Result", "Availablein",
    NULL
};

static void evp_mac_file(const char *file)
{
    TALLY t = { .file = file };
    char *text = kct_file_text(kct_vectors_dir(), file), *cur = text;
    int lineno = 0;
    STANZA st;
    MAC_VEC vec;

    if (text == NULL) {
        FAIL(&t, "cannot read %s/%s", kct_vectors_dir(), file);
        return;
    }
    while (next_stanza(&cur, &lineno, &st)) {
        const char *mac = field(&st, "MAC"), *res = field(&st, "Result");
        const char *avail = field(&st, "Availablein");
        EXPECT e = { EXPECT_VALID, ST_ANY, NULL, 0, 0, 0 };

        if (mac == NULL)
            continue;           /* Title and other non-test stanzas */
        if ((strcmp(mac, "HMAC") != 0 && strcmp(mac, "HMAC by EVP_PKEY") != 0)
            || (avail != NULL && strcmp(avail, "default") != 0)
            || unknown_field(&st, evpmac_fields) != NULL
            || field(&st, "Algorithm") == NULL) {
            t.skipped++;
            continue;
        }
        memset(&vec, 0, sizeof(vec));
        snprintf(vec.id, sizeof(vec.id), "line %d", st.line);
        vec.digest = field(&st, "Algorithm");
        vec.key = field_bin(&t, &st, "Key", &vec.keylen);
        vec.msg = field_bin(&t, &st, "Input", &vec.msglen);
        vec.tag = field_bin(&t, &st, "Output", &vec.taglen);
        if (vec.key == NULL || vec.msg == NULL || vec.tag == NULL) {
            mac_vec_free(&vec);
            continue;
        }
        if (res != NULL) {
            /* Only MAC_INIT_ERROR occurs: the digest is refused at init. */
            e.outcome = EXPECT_INVALID;
            e.fail_stage = strcmp(res, "MAC_INIT_ERROR") == 0 ? ST_INIT
                                                              : ST_ANY;
        } else {
            e.want = vec.tag;
            e.wantlen = vec.taglen;
        }
        mac_vector(&t, &vec, &e);
        mac_vec_free(&vec);
    }
    free(text);
    end_file(&t);
}

static void test_evpmac_common(void)
{
    evp_mac_file("openssl-evp/evpmac_common.txt");
}

static void test_evpmac_sm3(void)
{
    evp_mac_file("openssl-evp/evpmac_sm3.txt");
}

/*
 * AES-GCM stanzas of evpciph_aes_common.txt.  Without Operation a stanza is
 * run both ways, as evp_test does.  NextIV is ignored: it checks the IV
 * getter after the operation, not the computation.  Skipped: non-GCM
 * ciphers and stanzas with other fields (TLS AAD, late tags, MAC keys...),
 * none of which occur in the current excerpt.
 */
static const char *const evpciph_fields[] = {
    "Cipher", "Key", "IV", "AAD", "Tag", "Plaintext", "Ciphertext",
    "Operation", "Result", "NextIV", "Availablein", NULL
};

/* evp_test's names for the step that fails, mapped onto our steps. */
static int evp_result_stage(const char *res)
{
    static const struct { const char *name; int stage; } map[] = {
        { "CIPHERINIT_ERROR", ST_INIT }, { "INVALID_IV_LENGTH", ST_IVLEN },
        { "KEY_SET_ERROR", ST_KEY }, { "TAG_SET_ERROR", ST_TAG },
        { "AAD_SET_ERROR", ST_AAD }, { "CIPHERUPDATE_ERROR", ST_UPDATE },
        { "CIPHERFINAL_ERROR", ST_FINAL }
    };
    size_t i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(res, map[i].name) == 0)
            return map[i].stage;
    return ST_ANY;
}

static int evp_gcm_cipher(const char *name, size_t keylen)
{
    int idx = gcm_index(keylen);

    return idx >= 0 && strcasecmp(name, gcm_name[idx]) == 0 ? idx : -1;
}

static void test_evpciph_gcm(void)
{
    TALLY t = { .file = "openssl-evp/evpciph_aes_common.txt" };
    char *text = kct_file_text(kct_vectors_dir(), t.file), *cur = text;
    int lineno = 0;
    STANZA st;
    GCM_VEC vec;

    if (text == NULL) {
        FAIL(&t, "cannot read %s/%s", kct_vectors_dir(), t.file);
        return;
    }
    while (next_stanza(&cur, &lineno, &st)) {
        const char *cipher = field(&st, "Cipher");
        const char *op = field(&st, "Operation"), *res = field(&st, "Result");
        const char *avail = field(&st, "Availablein");

        if (cipher == NULL)
            continue;
        memset(&vec, 0, sizeof(vec));
        snprintf(vec.id, sizeof(vec.id), "line %d", st.line);
        vec.key = field_bin(&t, &st, "Key", &vec.keylen);
        if (vec.key == NULL || evp_gcm_cipher(cipher, vec.keylen) < 0
            || (avail != NULL && strcmp(avail, "default") != 0)
            || unknown_field(&st, evpciph_fields) != NULL
            || field(&st, "IV") == NULL || field(&st, "Tag") == NULL) {
            t.skipped++;
            gcm_vec_free(&vec);
            continue;
        }
        vec.iv = field_bin(&t, &st, "IV", &vec.ivlen);
        vec.aad = field_bin(&t, &st, "AAD", &vec.aadlen);
        vec.tag = field_bin(&t, &st, "Tag", &vec.taglen);
        vec.pt = field_bin(&t, &st, "Plaintext", &vec.ptlen);
        vec.ct = field_bin(&t, &st, "Ciphertext", &vec.ctlen);
        if (vec.iv == NULL || vec.aad == NULL || vec.tag == NULL
            || vec.pt == NULL || vec.ct == NULL) {
            gcm_vec_free(&vec);
            continue;
        }
        vec.ops = op == NULL ? OP_ENC | OP_DEC
                  : strcasecmp(op, "DECRYPT") == 0 ? OP_DEC : OP_ENC;
        vec.outcome = res == NULL ? EXPECT_VALID : EXPECT_INVALID;
        vec.fail_stage = res == NULL ? ST_ANY : evp_result_stage(res);
        vec.set_ivlen = 1;
        gcm_vector(&t, &vec);
        gcm_vec_free(&vec);
    }
    free(text);
    end_file(&t);
}

/* ---- source 4: CAVP and RFC vectors (python3-cryptography-vectors) ---- */

static int cavp_present(void)
{
    if (access(KC_CAVP_DIR, R_OK | X_OK) == 0)
        return 1;
    fprintf(stderr, "%s is missing: apt-get install "
            "python3-cryptography-vectors\n", KC_CAVP_DIR);
    CU_FAIL("KC_CAVP_DIR missing: "
            "apt-get install python3-cryptography-vectors");
    return 0;
}

static int quick(void)
{
    const char *q = getenv("KC_VECTORS_QUICK");

    return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

/* gcmEncryptExtIV*.rsp (encrypt only) and gcmDecrypt*.rsp (decrypt only). */
static void cavp_gcm(const char *file, int enc)
{
    TALLY t = { .file = file };
    char *text, *cur;
    int lineno = 0, step = quick() ? 10 : 1;
    size_t n = 0;
    STANZA st;
    GCM_VEC vec;

    if (!cavp_present())
        return;
    if ((text = kct_file_text(KC_CAVP_DIR, file)) == NULL) {
        FAIL(&t, "cannot read %s/%s", KC_CAVP_DIR, file);
        return;
    }
    for (cur = text; next_stanza(&cur, &lineno, &st); ) {
        if (field(&st, "Count") == NULL)
            continue;
        if (n++ % step != 0) {
            t.skipped++;
            continue;
        }
        memset(&vec, 0, sizeof(vec));
        snprintf(vec.id, sizeof(vec.id), "line %d", st.line);
        vec.key = field_bin(&t, &st, "Key", &vec.keylen);
        vec.iv = field_bin(&t, &st, "IV", &vec.ivlen);
        vec.aad = field_bin(&t, &st, "AAD", &vec.aadlen);
        vec.tag = field_bin(&t, &st, "Tag", &vec.taglen);
        vec.ct = field_bin(&t, &st, "CT", &vec.ctlen);
        vec.pt = field_bin(&t, &st, "PT", &vec.ptlen);
        if (vec.key != NULL && vec.iv != NULL && vec.aad != NULL
            && vec.tag != NULL && vec.ct != NULL && vec.pt != NULL) {
            vec.ops = enc ? OP_ENC : OP_DEC;
            vec.outcome = field(&st, "FAIL") != NULL ? EXPECT_INVALID
                                                     : EXPECT_VALID;
            /* CAVP FAIL entries carry a wrong tag: final must refuse. */
            vec.fail_stage = ST_FINAL;
            gcm_vector(&t, &vec);
        }
        gcm_vec_free(&vec);
    }
    free(text);
    end_file(&t);
}

#define CAVP_GCM(name, file, enc)                                       \
    static void test_cavp_##name(void)                                  \
    {                                                                   \
        cavp_gcm("ciphers/AES/GCM/" file, enc);                         \
    }
CAVP_GCM(enc128, "gcmEncryptExtIV128.rsp", 1)
CAVP_GCM(enc192, "gcmEncryptExtIV192.rsp", 1)
CAVP_GCM(enc256, "gcmEncryptExtIV256.rsp", 1)
CAVP_GCM(dec128, "gcmDecrypt128.rsp", 0)
CAVP_GCM(dec192, "gcmDecrypt192.rsp", 0)
CAVP_GCM(dec256, "gcmDecrypt256.rsp", 0)

/* RFC 2202 / 4231 files: Len (message bits), Key, Msg, MD (full tag). */
static void rfc_hmac(const char *file, const char *digest)
{
    TALLY t = { .file = file };
    char *text, *cur;
    int lineno = 0;
    STANZA st;
    MAC_VEC vec;

    if (!cavp_present())
        return;
    if ((text = kct_file_text(KC_CAVP_DIR, file)) == NULL) {
        FAIL(&t, "cannot read %s/%s", KC_CAVP_DIR, file);
        return;
    }
    for (cur = text; next_stanza(&cur, &lineno, &st); ) {
        EXPECT e = { EXPECT_VALID, ST_ANY, NULL, 0, 0, 0 };

        if (field(&st, "MD") == NULL)
            continue;
        memset(&vec, 0, sizeof(vec));
        snprintf(vec.id, sizeof(vec.id), "line %d", st.line);
        vec.digest = digest;
        vec.key = field_bin(&t, &st, "Key", &vec.keylen);
        vec.msg = field_bin(&t, &st, "Msg", &vec.msglen);
        vec.tag = field_bin(&t, &st, "MD", &vec.taglen);
        if (vec.key != NULL && vec.msg != NULL && vec.tag != NULL) {
            e.want = vec.tag;
            e.wantlen = vec.taglen;
            mac_vector(&t, &vec, &e);
        }
        mac_vec_free(&vec);
    }
    free(text);
    end_file(&t);
}

#define RFC_HMAC(name, file, digest)                                    \
    static void test_rfc_##name(void)                                   \
    {                                                                   \
        rfc_hmac("HMAC/" file, digest);                                 \
    }
RFC_HMAC(sha1, "rfc-2202-sha1.txt", "SHA1")
RFC_HMAC(sha224, "rfc-4231-sha224.txt", "SHA224")
RFC_HMAC(sha256, "rfc-4231-sha256.txt", "SHA256")
RFC_HMAC(sha384, "rfc-4231-sha384.txt", "SHA384")
RFC_HMAC(sha512, "rfc-4231-sha512.txt", "SHA512")

/* ---- registration ---- */

typedef struct {
    const char *name;
    CU_TestFunc fn;
} TEST;

static void add_suite(const char *name, CU_TestFunc providers,
                      const TEST *tests)
{
    CU_pSuite s = CU_add_suite(name, suite_init, suite_cleanup);

    CU_add_test(s, "fetched from the expected provider", providers);
    for (; tests->name != NULL; tests++)
        CU_add_test(s, tests->name, tests->fn);
    CU_add_test(s, "second keycache runs were cache hits", test_cache_hits);
}

static void add_suites(void)
{
    static const TEST wp_gcm[] = {
        { "aes_gcm_test.json", test_wycheproof_gcm }, { NULL, NULL }
    };
    static const TEST wp_hmac[] = {
        { "hmac_sha1", test_wp_hmac_sha1 },
        { "hmac_sha224", test_wp_hmac_sha224 },
        { "hmac_sha256", test_wp_hmac_sha256 },
        { "hmac_sha384", test_wp_hmac_sha384 },
        { "hmac_sha512", test_wp_hmac_sha512 },
        { "hmac_sha512_224", test_wp_hmac_sha512_224 },
        { "hmac_sha512_256", test_wp_hmac_sha512_256 },
        { "hmac_sha3_224", test_wp_hmac_sha3_224 },
        { "hmac_sha3_256", test_wp_hmac_sha3_256 },
        { "hmac_sha3_384", test_wp_hmac_sha3_384 },
        { "hmac_sha3_512", test_wp_hmac_sha3_512 },
        { "hmac_sm3", test_wp_hmac_sm3 },
        { NULL, NULL }
    };
    static const TEST evp_mac[] = {
        { "evpmac_common.txt", test_evpmac_common },
        { "evpmac_sm3.txt", test_evpmac_sm3 },
        { NULL, NULL }
    };
    static const TEST evp_gcm[] = {
        { "evpciph_aes_common.txt", test_evpciph_gcm }, { NULL, NULL }
    };
    static const TEST cavp_gcm[] = {
        { "gcmEncryptExtIV128.rsp", test_cavp_enc128 },
        { "gcmEncryptExtIV192.rsp", test_cavp_enc192 },
        { "gcmEncryptExtIV256.rsp", test_cavp_enc256 },
        { "gcmDecrypt128.rsp", test_cavp_dec128 },
        { "gcmDecrypt192.rsp", test_cavp_dec192 },
        { "gcmDecrypt256.rsp", test_cavp_dec256 },
        { NULL, NULL }
    };
    static const TEST rfc[] = {
        { "rfc-2202-sha1.txt", test_rfc_sha1 },
        { "rfc-4231-sha224.txt", test_rfc_sha224 },
        { "rfc-4231-sha256.txt", test_rfc_sha256 },
        { "rfc-4231-sha384.txt", test_rfc_sha384 },
        { "rfc-4231-sha512.txt", test_rfc_sha512 },
        { NULL, NULL }
    };

    add_suite("wycheproof AES-GCM", test_gcm_providers, wp_gcm);
    add_suite("wycheproof HMAC", test_mac_providers, wp_hmac);
    add_suite("openssl-evp HMAC", test_mac_providers, evp_mac);
    add_suite("openssl-evp AES-GCM", test_gcm_providers, evp_gcm);
    add_suite("CAVP AES-GCM", test_gcm_providers, cavp_gcm);
    add_suite("RFC 2202/4231 HMAC", test_mac_providers, rfc);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
