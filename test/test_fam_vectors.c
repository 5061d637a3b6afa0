/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Published vectors for CMAC, GMAC and KMAC (the template families).
 *
 * Every vector runs three times with a fresh EVP_MAC_CTX: once in
 * kct_default(), then twice in kct_keycache() on the same thread
 * (keycache-test.cnf: admit_after = 1), so that the second keycache run is
 * served from a cached template.  Each run must give the published answer,
 * and the keycache runs must match the default run exactly: same step
 * failing, same errors on the queue (in full), same bytes.  Vectors that
 * must fail have to fail in all three runs.
 *
 * Sources, relative to kct_vectors_dir():
 *   wycheproof/aes_cmac_test.json            AES-CMAC, invalid key sizes too
 *   wycheproof/aes_gmac_test.json            96- and 128-bit IVs
 *   wycheproof/kmac128_no_customization_test.json   L = tagSize
 *   wycheproof/kmac256_no_customization_test.json
 *   openssl-evp/evpmac_cmac_gmac_kmac.txt    OpenSSL's EVP test data: CMAC
 *       (also through EVP_PKEY), GMAC, KMAC with custom, size and XOF
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_test.h"
#include "kc_json.h"
#include "keycache.h"

#define RUNS 3
#define OUTMAX 512
#define MAXERRS 8

static const char *const run_name[RUNS] = {
    "default", "keycache run 1", "keycache run 2"
};

/* What one run did: the step that failed, its errors, its output. */
enum { ST_OK, ST_NEW, ST_INIT, ST_UPDATE, ST_FINAL };

typedef struct {
    int stage;
    char errs[MAXERRS][KCT_ERR_LEN];
    int nerrs;
    unsigned char out[OUTMAX];
    size_t outlen;
} RESULT;

/* A MAC computation: fresh context, params and key at init. */
typedef struct {
    const char *mac;
    const char *alg;            /* cipher (CMAC, GMAC) or NULL */
    const unsigned char *key, *iv, *msg, *custom;
    size_t keylen, ivlen, msglen, customlen;
    size_t size;                /* output length to set, 0: leave alone */
    int xof;                    /* -1: leave alone */
    int by_pkey;                /* CMAC through EVP_PKEY / DigestSign */
} VEC;

typedef struct {
    const char *file;
    size_t run, failures, cacheable;
} TALLY;

static void take_errs(RESULT *r)
{
    char err[KCT_ERR_LEN];

    while (kct_err_next(err, sizeof(err)) != 0)
        if (r->nerrs < MAXERRS)
            strcpy(r->errs[r->nerrs++], err);
}

static void mac_run(OSSL_LIB_CTX *libctx, const VEC *v, RESULT *r)
{
    EVP_MAC *mac = EVP_MAC_fetch(libctx, v->mac, NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[6];
    size_t size = v->size;
    int n = 0, xof = v->xof;

    memset(r, 0, sizeof(*r));
    if (v->alg != NULL)
        p[n++] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
                                                  (char *)v->alg, 0);
    if (v->iv != NULL)
        p[n++] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                   (void *)v->iv, v->ivlen);
    if (v->custom != NULL)
        p[n++] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_CUSTOM,
                                                   (void *)v->custom,
                                                   v->customlen);
    if (v->size != 0)
        p[n++] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size);
    if (v->xof >= 0)
        p[n++] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_XOF, &xof);
    p[n] = OSSL_PARAM_construct_end();
    if (ctx == NULL) {
        r->stage = ST_NEW;
    } else if (!EVP_MAC_init(ctx, v->key, v->keylen, p)) {
        r->stage = ST_INIT;
    } else if (!EVP_MAC_update(ctx, v->msg, v->msglen)) {
        r->stage = ST_UPDATE;
    } else if (v->xof > 0) {
        r->outlen = EVP_MAC_CTX_get_mac_size(ctx);
        if (r->outlen > OUTMAX || !EVP_MAC_finalXOF(ctx, r->out, r->outlen))
            r->stage = ST_FINAL;
    } else if (!EVP_MAC_final(ctx, r->out, &r->outlen, OUTMAX)) {
        r->stage = ST_FINAL;
    }
    take_errs(r);
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
}

/* CMAC as EVP_PKEY_sign would do it: the default's MAC signature */
static void pkey_run(OSSL_LIB_CTX *libctx, const VEC *v, RESULT *r)
{
    EVP_PKEY_CTX *kctx = EVP_PKEY_CTX_new_from_name(libctx, "CMAC", NULL);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM p[3];

    memset(r, 0, sizeof(*r));
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PRIV_KEY,
                                             (void *)v->key, v->keylen);
    p[1] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_CIPHER,
                                            (char *)v->alg, 0);
    p[2] = OSSL_PARAM_construct_end();
    r->outlen = OUTMAX;
    if (kctx == NULL || md == NULL || EVP_PKEY_fromdata_init(kctx) <= 0
        || EVP_PKEY_fromdata(kctx, &pkey, EVP_PKEY_KEYPAIR, p) <= 0) {
        r->stage = ST_NEW;
    } else if (EVP_DigestSignInit_ex(md, NULL, NULL, libctx, NULL, pkey,
                                     NULL) <= 0) {
        r->stage = ST_INIT;
    } else if (EVP_DigestSignUpdate(md, v->msg, v->msglen) <= 0) {
        r->stage = ST_UPDATE;
    } else if (EVP_DigestSignFinal(md, r->out, &r->outlen) <= 0) {
        r->stage = ST_FINAL;
    }
    if (r->stage != ST_OK)
        r->outlen = 0;
    take_errs(r);
    EVP_PKEY_free(pkey);
    EVP_MD_CTX_free(md);
    EVP_PKEY_CTX_free(kctx);
}

static void fail(TALLY *t, const char *id, const char *fmt, const char *a,
                 const char *b)
{
    char msg[1024];

    if (++t->failures > 20)
        return;
    snprintf(msg, sizeof(msg), "%.300s %.200s: ", t->file, id);
    snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), fmt, a, b);
    fprintf(stderr, "\n%s\n", msg);
    CU_assertImplementation(CU_FALSE, __LINE__, msg, __FILE__, "", CU_FALSE);
}

static int same(const RESULT *a, const RESULT *b)
{
    int i;

    if (a->stage != b->stage || a->nerrs != b->nerrs
        || a->outlen != b->outlen || memcmp(a->out, b->out, a->outlen) != 0)
        return 0;
    for (i = 0; i < a->nerrs; i++)
        if (strcmp(a->errs[i], b->errs[i]) != 0)
            return 0;
    return 1;
}

/*
 * Run a vector three times; want (of wantlen, NULL: must fail) is the
 * published answer, prefix: compare its first wantlen bytes.
 * valid < 0: only equivalence (no published verdict to hold it to).
 */
static void check(TALLY *t, const char *id, const VEC *v, int valid,
                  const unsigned char *want, size_t wantlen)
{
    RESULT r[RUNS];
    uint64_t hits = 0;
    int i, ok;

    for (i = 0; i < RUNS; i++) {
        OSSL_LIB_CTX *ctx = i == 0 ? kct_default() : kct_keycache();

        if (i == RUNS - 1)
            hits = kct_counter(KEYCACHE_PARAM_HITS);
        ERR_clear_error();
        if (v->by_pkey)
            pkey_run(ctx, v, &r[i]);
        else
            mac_run(ctx, v, &r[i]);
    }
    hits = kct_counter(KEYCACHE_PARAM_HITS) - hits;
    t->run++;
    for (i = 1; i < RUNS; i++)
        if (!same(&r[0], &r[i]))
            fail(t, id, "%s differs from %s", run_name[i], run_name[0]);
    if (valid < 0)
        return;
    for (i = 0; i < RUNS; i++) {
        ok = r[i].stage == ST_OK && r[i].outlen >= wantlen
             && (wantlen == 0 || memcmp(r[i].out, want, wantlen) == 0);
        if (valid && !ok)
            fail(t, id, "%s: not the published MAC%s", run_name[i], "");
        if (!valid && ok)
            fail(t, id, "%s: an invalid vector passed%s", run_name[i], "");
    }
    /* the second keycache run of a valid vector is served from the cache */
    if (valid && v->keylen <= KEYCACHE_MAX_KEY_LEN) {
        t->cacheable++;
        if (hits == 0)
            fail(t, id, "%s was not a cache hit%s", run_name[RUNS - 1], "");
    }
}

static void end_file(TALLY *t, uint64_t hits0)
{
    uint64_t hits = kct_counter(KEYCACHE_PARAM_HITS) - hits0;

    fprintf(stderr, "\n  %s: %zu runs, %zu of them valid with a cacheable "
            "key, %llu hits ", t->file, t->run, t->cacheable,
            (unsigned long long)hits);
    CU_ASSERT(t->run > 0 && t->cacheable > 0);
    ERR_clear_error();
}

/* ---- Wycheproof ---- */

static void wycheproof(const char *file, const char *mac)
{
    TALLY t = { file, 0, 0, 0 };
    uint64_t hits0 = kct_counter(KEYCACHE_PARAM_HITS);
    cJSON *root = kct_json_load(file), *g, *tc;
    char id[64];

    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(root, "testGroups")) {
        int keybits = cJSON_GetObjectItem(g, "keySize")->valueint;
        int tagbits = cJSON_GetObjectItem(g, "tagSize")->valueint;

        cJSON_ArrayForEach(tc, cJSON_GetObjectItem(g, "tests")) {
            const char *res = cJSON_GetObjectItem(tc, "result")->valuestring;
            unsigned char *key, *msg, *tag, *iv;
            size_t keylen, msglen, taglen, ivlen;
            char alg[16];
            VEC v;

            memset(&v, 0, sizeof(v));
            v.mac = mac;
            v.xof = -1;
            key = kct_json_hex(tc, "key", &keylen);
            msg = kct_json_hex(tc, "msg", &msglen);
            tag = kct_json_hex(tc, "tag", &taglen);
            iv = kct_json_hex(tc, "iv", &ivlen);
            v.key = key;
            v.keylen = keylen;
            v.msg = msg;
            v.msglen = msglen;
            v.iv = iv;
            v.ivlen = ivlen;
            if (strcmp(mac, "CMAC") == 0 || strcmp(mac, "GMAC") == 0) {
                /* the cipher that matches the key; odd sizes are invalid */
                snprintf(alg, sizeof(alg), "AES-%d-%s",
                         keybits == 128 || keybits == 192 || keybits == 256
                         ? keybits : 128, mac[0] == 'C' ? "CBC" : "GCM");
                v.alg = alg;
            } else {
                v.size = (size_t)tagbits / 8;
            }
            snprintf(id, sizeof(id), "tcId %d",
                     cJSON_GetObjectItem(tc, "tcId")->valueint);
            check(&t, id, &v, strcmp(res, "valid") == 0, tag,
                  (size_t)tagbits / 8 < taglen ? (size_t)tagbits / 8
                                               : taglen);
            /* the EVP_PKEY route for CMAC too */
            if (strcmp(mac, "CMAC") == 0) {
                v.by_pkey = 1;
                check(&t, id, &v, strcmp(res, "valid") == 0, tag, taglen);
            }
            free(key);
            free(msg);
            free(tag);
            free(iv);
        }
    }
    cJSON_Delete(root);
    end_file(&t, hits0);
}

static void test_wp_cmac(void)
{
    wycheproof("wycheproof/aes_cmac_test.json", "CMAC");
}

static void test_wp_gmac(void)
{
    wycheproof("wycheproof/aes_gmac_test.json", "GMAC");
}

static void test_wp_kmac128(void)
{
    wycheproof("wycheproof/kmac128_no_customization_test.json", "KMAC128");
}

static void test_wp_kmac256(void)
{
    wycheproof("wycheproof/kmac256_no_customization_test.json", "KMAC256");
}

/* ---- OpenSSL's EVP test data ---- */

/* hex, or a "quoted string" as in evp_test */
static unsigned char *evp_bin(const char *s, size_t *len)
{
    size_t n = strlen(s);
    unsigned char *p;

    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        *len = n - 2;
        if ((p = malloc(n)) != NULL)
            memcpy(p, s + 1, n - 2);
        return p;
    }
    return kct_unhex(s, len);
}

typedef struct {
    char mac[32], alg[32], result[32];
    char *key, *iv, *input, *output, *custom;
    size_t size;
    int xof, line;
} STANZA;

static void stanza_free(STANZA *s)
{
    free(s->key);
    free(s->iv);
    free(s->input);
    free(s->output);
    free(s->custom);
    memset(s, 0, sizeof(*s));
    s->xof = -1;
}

static void run_stanza(TALLY *t, STANZA *s)
{
    unsigned char *key, *msg, *want = NULL, *iv = NULL, *custom = NULL;
    size_t keylen, msglen, wantlen = 0;
    char id[64];
    VEC v;

    memset(&v, 0, sizeof(v));
    key = evp_bin(s->key != NULL ? s->key : "", &keylen);
    msg = evp_bin(s->input != NULL ? s->input : "", &msglen);
    if (s->output != NULL)
        want = kct_unhex(s->output, &wantlen);
    if (s->iv != NULL)
        iv = kct_unhex(s->iv, &v.ivlen);
    if (s->custom != NULL)
        custom = evp_bin(s->custom, &v.customlen);
    v.by_pkey = strstr(s->mac, "by EVP_PKEY") != NULL;
    v.mac = strtok(s->mac, " ");
    v.alg = s->alg[0] != '\0' ? s->alg : NULL;
    v.key = key;
    v.keylen = keylen;
    v.msg = msg;
    v.msglen = msglen;
    v.iv = iv;
    v.custom = custom;
    v.size = s->size;
    v.xof = s->xof;
    snprintf(id, sizeof(id), "line %d (%s)", s->line, v.mac);
    /*
     * The 257-byte customisation string tests a limit OpenSSL has since
     * raised (see the vectors' README): equivalence only.
     */
    if (s->result[0] != '\0' && v.customlen > 256)
        check(t, id, &v, -1, NULL, 0);
    else
        check(t, id, &v, s->result[0] == '\0', want, wantlen);
    if (v.by_pkey) {
        v.by_pkey = 0;
        check(t, id, &v, s->result[0] == '\0', want, wantlen);
    }
    free(key);
    free(msg);
    free(want);
    free(iv);
    free(custom);
}

static char *dup_value(const char *v)
{
    char *p = malloc(strlen(v) + 1);

    if (p != NULL)
        strcpy(p, v);
    return p;
}

static void test_evpmac(void)
{
    TALLY t = { "evpmac_cmac_gmac_kmac.txt", 0, 0, 0 };
    uint64_t hits0 = kct_counter(KEYCACHE_PARAM_HITS);
    char path[1024], line[4096];
    STANZA s;
    FILE *f;
    int lineno = 0, open = 0;

    snprintf(path, sizeof(path), "%s/openssl-evp/%s", kct_vectors_dir(),
             t.file);
    f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    memset(&s, 0, sizeof(s));
    s.xof = -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *eq, *name, *value, *end;

        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#')
            continue;
        if ((eq = strstr(line, " = ")) == NULL) {
            /* a blank line ends a stanza */
            if (open)
                run_stanza(&t, &s);
            stanza_free(&s);
            open = 0;
            continue;
        }
        *eq = '\0';
        name = line;
        value = eq + 3;
        for (end = value + strlen(value); end > value && end[-1] == ' ';)
            *--end = '\0';
        if (strcmp(name, "MAC") == 0) {
            if (open)
                run_stanza(&t, &s);
            stanza_free(&s);
            open = 1;
            s.line = lineno;
            snprintf(s.mac, sizeof(s.mac), "%s", value);
        } else if (!open) {
            continue;           /* Title */
        } else if (strcmp(name, "Algorithm") == 0) {
            snprintf(s.alg, sizeof(s.alg), "%s", value);
        } else if (strcmp(name, "Key") == 0) {
            s.key = dup_value(value);
        } else if (strcmp(name, "IV") == 0) {
            s.iv = dup_value(value);
        } else if (strcmp(name, "Input") == 0) {
            s.input = dup_value(value);
        } else if (strcmp(name, "Output") == 0) {
            s.output = dup_value(value);
        } else if (strcmp(name, "Custom") == 0) {
            s.custom = dup_value(value);
        } else if (strcmp(name, "XOF") == 0) {
            s.xof = atoi(value);
        } else if (strcmp(name, "Result") == 0) {
            snprintf(s.result, sizeof(s.result), "%s", value);
        } else if (strcmp(name, "Ctrl") == 0) {
            if (strncmp(value, "size:", 5) == 0)
                s.size = (size_t)atoi(value + 5);
            else if (strncmp(value, "xof:", 4) == 0)
                s.xof = atoi(value + 4);
            else
                fail(&t, "Ctrl", "unknown control %s%s", value, "");
        } else {
            fail(&t, name, "unknown field %s%s", value, "");
        }
    }
    if (open)
        run_stanza(&t, &s);
    stanza_free(&s);
    fclose(f);
    end_file(&t, hits0);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("fam_vectors", NULL, NULL);

    CU_add_test(s, "Wycheproof aes_cmac_test.json", test_wp_cmac);
    CU_add_test(s, "Wycheproof aes_gmac_test.json", test_wp_gmac);
    CU_add_test(s, "Wycheproof kmac128_no_customization_test.json",
                test_wp_kmac128);
    CU_add_test(s, "Wycheproof kmac256_no_customization_test.json",
                test_wp_kmac256);
    CU_add_test(s, "OpenSSL evpmac_cmac_gmac_kmac.txt", test_evpmac);
}

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
