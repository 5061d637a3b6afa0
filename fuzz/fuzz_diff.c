/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential libFuzzer target for keycache, and (built with
 * KC_DIFF_MAIN, any compiler) the ctest diff_families, which feeds the
 * same engine 3,000 seeded pseudo-random inputs per family of families[]
 * instead (see main() at the end).  The families, their MAC and cipher
 * names come from the family registry (provider/common/registry.h).
 *
 * The input is decoded into a sequence of operations on a few live HMAC,
 * cipher (AES-GCM, AES-OCB, AES-SIV), CMAC, GMAC and KMAC contexts (new,
 * free, dup, init with or without key/IV, set and get params, ctrls,
 * updates in pieces, final, one-shot EVP_Q_mac, in-place mutation of a
 * pooled key).  Parameter lists may be NULL, an array of END alone, or
 * name one parameter twice (decode_count()).  Every operation runs,
 * through the public EVP API, against three library contexts:
 *
 *   default   only the default provider: the reference
 *   keycache  loaded from the build tree's keycache-test.cnf (KC_CONF:
 *             openssl.cnf with aes_gcm = on)
 *   small     the same config with cache_size = 2, so that evictions,
 *             lease invalidation and re-adds happen constantly
 *
 * Return values, outputs, lengths and the last error's library and reason
 * must be identical; on a divergence the op trace is printed and we abort().
 *
 * Determinism: the operations of one input run on a fresh thread (so every
 * input starts with empty per-thread caches), and whatever follows an
 * OP_SWITCH - plus freeing all contexts still alive - runs on a second
 * fresh thread, either after the first has exited or while it is parked.
 * That covers contexts keyed from one thread's cache being used and freed
 * on another.
 *
 * Outputs that depend on an IV the default generates at random (encryption
 * without an IV, a partial TLS fixed IV) are compared by return value and
 * length only: the model below tracks when that can be the case.
 *
 * KC_FUZZ_SELFTEST=1 runs all three sides on default-only contexts: any
 * crash then is OpenSSL's own, which is how the guards below were found.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "keycache.h"
#include "common/registry.h"

#ifndef KC_CONF
# error "define KC_CONF as the path of the build tree's keycache-test.cnf"
#endif

#define NSIDES 3
#define NSLOTS 4
#define MAXOPS 64
#define NKEYS 8
#define NIVS 4
#define BUFSZ 256
#define OUTMAX (4096 + 512)
#define MAXPARAMS 4
#define MAXVALS 16
#define NRKEY (MAXOPS * 5)

enum { SIDE_DEFAULT, SIDE_KC, SIDE_SMALL };
static const char *const side_name[NSIDES] = {
    "default", "keycache", "keycache(cache_size=2)"
};

/*
 * The families come from the registry (provider/common/registry.h), so a
 * row added there is fuzzed with no change here, as far as the decoder's
 * encoding allows (below).
 *
 * The template families (provider/layer/tmpl.c), the registry's MAC rows
 * in its order: a slot byte with bit 6 set.  The model below knows some of
 * them by name (GMAC's IV, KMAC's XOF).
 */
#define FZ_MAC_HMAC(name)
#define FZ_MAC_MAC(name) name,
#define FZ_MAC_CIPHER(name)
#define FZ_MAC_NAME(id, kind, conf, au, name, ...) FZ_MAC_##kind(name)
#define NFAMS KC_FAM_COUNT
static const char *const fam_names[NFAMS] = { KC_REGISTRY(FZ_MAC_NAME) };
enum {
    F_CMAC = KC_FAM_CMAC, F_GMAC = KC_FAM_GMAC, F_KMAC128 = KC_FAM_KMAC128,
    F_KMAC256 = KC_FAM_KMAC256
};

/*
 * The cipher families (provider/layer/ctmpl.c), chosen by a cipher slot's
 * init: the registry's GCM rows are gcm_names[] (op->cipher 1-3 fetched,
 * 4-6 EVP_aes_*_gcm()), every other cipher row is aead_names[] (7 on),
 * filled from the registry by tables_init().  A cipher of a mode the
 * model does not know (it steers round OpenSSL's own crashes per mode)
 * stops the program there.
 */
#define FZ_CIPHER_HMAC(name)
#define FZ_CIPHER_MAC(name)
#define FZ_CIPHER_CIPHER(name) name,
#define FZ_CIPHER_NAME(id, kind, conf, au, name, ...) FZ_CIPHER_##kind(name)
static const char *const cipher_rows[KC_CFAM_COUNT] = {
    KC_REGISTRY(FZ_CIPHER_NAME)
};
#define NGCMS 3
#define NAEADS (KC_CFAM_COUNT - NGCMS)
static const char *gcm_names[NGCMS];
static const char *aead_names[NAEADS];
/* what a cipher slot holds now: GCM, OCB or SIV (by op->cipher) */
enum { C_GCM, C_OCB, C_SIV };
static int aead_mode[NAEADS];
#define CIPHER_FAMILY(c) ((c) < 7 ? C_GCM : aead_mode[(c) - 7])

static int name_ends(const char *name, const char *end)
{
    size_t n = strlen(name), e = strlen(end);

    return n >= e && strcmp(name + n - e, end) == 0;
}

static void tables_init(void)
{
    int i, g = 0, a = 0;

    for (i = 0; i < KC_CFAM_COUNT; i++) {
        const char *n = cipher_rows[i];

        if (name_ends(n, "-GCM")) {
            if (g == NGCMS)
                break;
            gcm_names[g++] = n;
            continue;
        }
        if (a == NAEADS)
            break;
        if (!name_ends(n, "-OCB") && !name_ends(n, "-SIV")) {
            fprintf(stderr, "fuzz_diff: registry cipher %s: a mode the "
                    "model does not know (see tables_init())\n", n);
            abort();
        }
        aead_mode[a] = name_ends(n, "-OCB") ? C_OCB : C_SIV;
        aead_names[a++] = n;
    }
    if (g != NGCMS || a != NAEADS) {
        fprintf(stderr, "fuzz_diff: the registry's GCM rows are not the %d"
                " the decoder encodes\n", NGCMS);
        abort();
    }
}

typedef struct {
    OSSL_LIB_CTX *libctx;
    EVP_MAC *hmac;
    EVP_CIPHER *gcm[3];
    EVP_CIPHER *aead[NAEADS];
    EVP_MAC *fam[NFAMS];
} SIDE;

static SIDE sides[NSIDES];
static int selftest, tracing;
/*
 * KC_FUZZ_SKIP_KNOWN=1: steer around keycache bugs already reported, so a
 * long run can find the next one.  Known so far:
 *   dup-param: a GCM param array naming "ivlen" or "tag" twice, given
 *              before the key: OpenSSL takes the first, keycache the last.
 *   gmac-dup-iv: GMAC set_params naming "iv" twice on a cached context:
 *              keycache 1, default 0 (OpenSSL 4.0.3).
 *   siv-keyless-end: AES-SIV init without a key given an array of END
 *              alone, then a final: keycache 1, default 0.
 */
static int skip_known;

/* ---------------------------------------------------------------------- */
/* Fixed tables the decoder picks from                                    */

static const size_t key_lens[NKEYS] = { 16, 32, 24, 0, 1, 64, 128, 129 };

static const char *const digests[] = {
    "SHA256", "SHA1", "SHA2-512", "sha384", "SHA512-224", "SHA3-256", "MD5",
    "SHA-256", "2.16.840.1.101.3.4.2.1", "MD5-SHA1", "SM3", "BLAKE2S-256",
    "SHAKE128", "RIPEMD160", "MD4", "NULL", "", "no-such-digest",
    "KECCAK-KMAC-128", "SHA2-224"
};
#define NDIGESTS (sizeof(digests) / sizeof(digests[0]))

/* NULL means "no properties parameter" */
static const char *const props[] = {
    NULL, NULL, NULL, "", "provider=default", "provider=keycache",
    "fips=yes", "?fips=yes", "-fips", "provider="
};
#define NPROPS (sizeof(props) / sizeof(props[0]))

static const size_t sizes[] = {
    0, 1, 4, 7, 8, 11, 12, 13, 15, 16, 17, 20, 31, 32, 33, 48, 63, 64, 65,
    100, 127, 128, 129, 255, 256, 1000, 4096, (size_t)-1, 0x80000000u
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static unsigned char key_init[NKEYS][BUFSZ], iv_init[NIVS][BUFSZ];
static unsigned char pattern[8192];

static void fill(unsigned char *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (unsigned char)x;
    }
}

/* ---------------------------------------------------------------------- */
/* Input reader                                                           */

typedef struct {
    const uint8_t *p;
    size_t n;
} RD;

static unsigned rd8(RD *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static const uint8_t *rdbytes(RD *r, size_t *len)
{
    const uint8_t *p = r->p;

    if (*len > r->n)
        *len = r->n;
    r->p += *len;
    r->n -= *len;
    return p;
}

/* A length: small raw values or interesting ones from the table. */
static size_t rdsize(RD *r)
{
    unsigned b = rd8(r);

    return (b & 0x80) != 0 ? sizes[b % NSIZES] : b & 0x7f;
}

/* ---------------------------------------------------------------------- */
/* Operations                                                             */

enum {
    OP_NEW, OP_FREE, OP_DUP, OP_INIT, OP_SET, OP_GET, OP_UPDATE, OP_FINAL,
    OP_CIPHER, OP_CTRL, OP_QMAC, OP_MUTATE, OP_SWITCH, OP_COUNT
};

enum { K_NONE, K_HMAC, K_GCM, K_FAM };

/*
 * The families keycache wraps, as the differential test (KC_DIFF_MAIN)
 * runs them one at a time: every slot is then of the family's kind, cipher
 * inits that name a cipher name one of the family's (op->cipher values
 * cipher0 .. cipher0 + ncipher - 1), MAC slots are of fam0 .. fam0 + nfam
 * - 1.  The fuzzer mixes them all (only == NULL).
 */
typedef struct {
    const char *name;
    int kind, fam0, nfam, cipher0, ncipher;
} FAMILY;

#ifdef KC_DIFF_MAIN
/*
 * One family per configuration key of the registry (families_init()),
 * named by its first row's name less its size ("AES-128-OCB" is
 * "AES-OCB", "KMAC-128" "KMAC"): the name seeds its sequences.
 */
static FAMILY families[KC_REGISTRY_ROWS];
static char family_names[KC_REGISTRY_ROWS][32];
static const char *family_conf[KC_REGISTRY_ROWS];
static int nfamilies;
#define NFAMILIES nfamilies

#define FZ_K_HMAC K_HMAC
#define FZ_K_MAC K_FAM
#define FZ_K_CIPHER K_GCM
#define FZ_ROW(id, kind, conf, au, name, ...) { name, conf, FZ_K_##kind },
static const struct {
    const char *name, *conf;
    int kind;
} fz_rows[KC_REGISTRY_ROWS] = { KC_REGISTRY(FZ_ROW) };

static void families_init(void)
{
    int r, f, mac = 0;

    for (r = 0; r < KC_REGISTRY_ROWS; r++) {
        FAMILY *fa = NULL;
        const char *n = fz_rows[r].name, *d;
        char *out;
        int c;

        /* the family of this row's configuration key, or a new one */
        for (f = 0; f < nfamilies; f++)
            if (strcmp(family_conf[f], fz_rows[r].conf) == 0)
                fa = &families[f];
        if (fa == NULL) {
            fa = &families[nfamilies];
            family_conf[nfamilies] = fz_rows[r].conf;
            out = family_names[nfamilies++];
            /* the name less a "-<digits>" part */
            for (d = n; *d != '\0' && out < family_names[nfamilies - 1] + 31;
                 d++) {
                if (*d == '-' && d[1] >= '0' && d[1] <= '9') {
                    for (d++; d[1] >= '0' && d[1] <= '9'; d++)
                        ;
                    continue;
                }
                *out++ = *d;
            }
            *out = '\0';
            fa->name = family_names[nfamilies - 1];
            fa->kind = fz_rows[r].kind;
        }
        if (fz_rows[r].kind == K_FAM) {
            if (fa->nfam++ == 0)
                fa->fam0 = mac;
            mac++;
        } else if (fz_rows[r].kind == K_GCM) {
            if (name_ends(n, "-GCM")) {
                /* fetched and EVP_aes_*_gcm() */
                fa->cipher0 = 1;
                fa->ncipher = 2 * NGCMS;
            } else {
                for (c = 0; c < NAEADS; c++)
                    if (strcmp(aead_names[c], n) == 0)
                        break;
                if (fa->ncipher++ == 0)
                    fa->cipher0 = 7 + c;
            }
        }
    }
}
#endif

static const FAMILY *only;
/*
 * The differential test's op codes, by weight: mostly keyed use (init,
 * data, final, the same pooled keys again: see pick_key()), so that the
 * cache has keys to keep and hand out again, which uniform codes with
 * their news, frees and key mutations seldom leave it.
 */
static const unsigned char diff_ops[] = {
    OP_INIT, OP_INIT, OP_INIT, OP_INIT, OP_UPDATE, OP_UPDATE, OP_UPDATE,
    OP_FINAL, OP_FINAL, OP_FINAL, OP_SET, OP_SET, OP_GET, OP_CIPHER,
    OP_CTRL, OP_QMAC, OP_DUP, OP_NEW, OP_FREE, OP_MUTATE, OP_SWITCH
};
/*
 * pick_key()'s first byte from here up gives no key: 1 in 32 for the
 * fuzzer, more for the differential test, which has no corpus to steer
 * it to keyless inits followed by a key.
 */
static unsigned nokey_from = 0xf8;
/* ops per input at most (the trace holds MAXOPS) */
static int maxops = MAXOPS;

/* What the differential test counts: ops decoded, calls compared ... */
static unsigned long cov_seqops;
static struct {
    unsigned long ops;
    unsigned long keyless;      /* inits without a key */
    unsigned long key_later;    /* a key given after such an init */
    unsigned long empty;        /* parameter arrays of END alone */
    unsigned long null;         /* NULL for the parameters */
    unsigned long repeated;     /* a parameter name twice in one array */
} cov;

/* ciphers the families are given: cached, uncached, odd and invalid */
static const char *const fam_ciphers[] = {
    "AES-128-CBC", "AES-192-CBC", "AES-256-CBC", "AES-128-GCM",
    "AES-192-GCM", "AES-256-GCM", "aes-256-cbc", "DES-EDE3-CBC",
    "ARIA-128-GCM", "AES-128-ECB", "no-such-cipher", ""
};
#define NFAMCIPHERS (sizeof(fam_ciphers) / sizeof(fam_ciphers[0]))

/* parameter kinds for set/get */
enum {
    P_DIGEST, P_PROPS, P_KEY, P_NOINIT, P_ONESHOT, P_TLSSIZE, P_DIGEST_OCT,
    P_KEY_UTF8, P_UNKNOWN,
    P_IVLEN, P_IVLEN_INT, P_TAG, P_TAGLEN, P_KEYLEN, P_TLSAAD, P_IVFIXED,
    P_IVINV,
    G_SIZE, G_BLOCK, G_BLOCK_INT,
    G_IVLEN, G_KEYLEN, G_TAGLEN, G_TAG, G_IV, G_UPDIV, G_TLSPAD, G_IVGEN,
    G_UNKNOWN,
    /* the template families */
    P_CIPHER, P_CIPHER_OCT, P_MACIV, P_CUSTOM, P_SIZE, P_XOF
};

/*
 * How a UTF-8 parameter's string is passed: the table's string with
 * data_size = strlen (U_PTR), or a copy in a heap buffer of exactly its
 * size, data_size not counting the NUL (U_HEAP) or counting it (U_HEAP_NUL,
 * which OpenSSL allows), so that ASan sees a read past the string's end.
 */
enum { U_PTR, U_HEAP, U_HEAP_NUL, U_FORMS };

typedef struct {
    int id;
    int form;                   /* UTF-8 parameters: U_* */
    size_t num;                 /* numeric value or buffer size */
    const unsigned char *buf;   /* octet data (set) */
    size_t len;
    const char *str;
} PSPEC;

typedef struct {
    int code, slot, slot2, kind, fam;
    /*
     * cipher init: enc 1/0/-1; cipher 0 keep, 1-3 GCM fetched, 4-6 GCM
     * legacy, 7 on aead_names[cipher - 7]
     */
    int enc, cipher;
    const unsigned char *key;
    size_t keylen;
    const unsigned char *iv;
    PSPEC p[MAXPARAMS];
    /* no parameters (np == 0): pass NULL (1) or an array of just END (0) */
    int np, pnull;
    const unsigned char *data;
    size_t pieces[4];
    int npieces, aad, inplace;
    size_t outsize;
    int out_null;
    int ctrl, arg;
    const unsigned char *ptr;
    size_t ptrlen;
    const char *digest;
    int api;                    /* alternative API for the same query */
    char desc[200];
} OP;

typedef struct {
    int rv;
    unsigned long err;
    size_t vals[MAXVALS];
    int nvals;
    unsigned char out[OUTMAX];
    size_t outlen;
} RESULT;

typedef struct {
    int kind;
    /* HMAC: a key was offered; digest-noinit would now hit an OpenSSL UAF */
    int keyed;
    /*
     * HMAC: a final succeeded and no init since.  Another final then
     * hashes whatever the digest's second final leaves in HMAC_Final's
     * stack buffer (uninitialised for some digests: valgrind): its output
     * is compared by return value and length only.
     */
    int finished;
    /* GCM: the IV state can be random (see the header comment) */
    int iv_explicit, stream_rand, buf_rand;
    /* GCM: the IV length may have been set below 8: no TLS IV ops then */
    int small_iv;
    /* template families: which; GMAC: an IV set explicitly, or drawn */
    int fam, gmac_iv, gmac_rand;
    /* cipher: C_GCM, C_OCB or C_SIV; SIV: keyed by an init that worked */
    int cur, siv_keyed;
    /* coverage: the last init gave no key and none has been given since */
    int keyless;
    void *ctx[NSIDES];
} SLOT;

typedef struct {
    RD rd;
    SLOT slot[NSLOTS];
    unsigned char keys[NKEYS][BUFSZ];
    unsigned char rkey[NRKEY][BUFSZ];   /* keys copied from the input */
    int nrkey, nops, overlap;
    char trace[3 * MAXOPS][208];
    int ntrace;
} STATE;

/* the differential test: which family, seed and sequence is running */
static char origin[200];

static void trace_add(STATE *st, const char *s)
{
    /* KC_FUZZ_OPS: every op as it starts, for crashes (no trace then) */
    if (getenv("KC_FUZZ_OPS") != NULL)
        fprintf(stderr, "op: %s\n", s);
    if (st->ntrace < (int)(sizeof(st->trace) / sizeof(st->trace[0])))
        snprintf(st->trace[st->ntrace++], sizeof(st->trace[0]), "%s", s);
}

static void print_trace(const STATE *st)
{
    int i;

    if (origin[0] != '\0')
        fprintf(stderr, "%s\n", origin);
    fprintf(stderr, "---- op trace (one fresh thread per phase) ----\n");
    for (i = 0; i < st->ntrace; i++)
        fprintf(stderr, "  %2d: %s\n", i, st->trace[i]);
}

static void print_result(const char *who, const RESULT *r)
{
    int i;
    size_t j;

    fprintf(stderr, "  %-24s rv=%d err=lib %d reason %d vals=[",
            who, r->rv, ERR_GET_LIB(r->err), ERR_GET_REASON(r->err));
    for (i = 0; i < r->nvals; i++)
        fprintf(stderr, "%s%zu", i ? " " : "", r->vals[i]);
    fprintf(stderr, "] out(%zu)=", r->outlen);
    for (j = 0; j < r->outlen && j < 64; j++)
        fprintf(stderr, "%02x", r->out[j]);
    fprintf(stderr, "%s\n", r->outlen > 64 ? "..." : "");
}

/* ---------------------------------------------------------------------- */
/* Parameter arrays                                                       */

/* A UTF-8 parameter in form p->form; a heap copy goes to *heap. */
static OSSL_PARAM utf8_param(const char *name, const PSPEC *p, const char *str,
                             char **heap)
{
    size_t len = strlen(str);

    if (p->form == U_PTR || (*heap = malloc(len + 1)) == NULL)
        return OSSL_PARAM_construct_utf8_string(name, (char *)str, 0);
    memcpy(*heap, str, len + 1);
    return OSSL_PARAM_construct_utf8_string(name, *heap,
                                            p->form == U_HEAP_NUL ? len + 1
                                                                  : len);
}

/* The heap copies of one array, once the call that took it returned. */
static void heap_free(char **heap)
{
    int i;

    for (i = 0; i < MAXPARAMS; i++) {
        free(heap[i]);
        heap[i] = NULL;
    }
}

/* heap: MAXPARAMS NULLs, for heap_free() after the call */
static int kc_build_set(const PSPEC *ps, int np, OSSL_PARAM *out,
                        size_t *nums, int *ints, char **heap)
{
    int i, n = 0;

    for (i = 0; i < np; i++) {
        const PSPEC *p = &ps[i];

        nums[i] = p->num;
        ints[i] = (int)p->num;
        switch (p->id) {
        case P_DIGEST:
            out[n++] = utf8_param(OSSL_MAC_PARAM_DIGEST, p, p->str, &heap[i]);
            break;
        case P_PROPS:
            out[n++] = utf8_param(OSSL_MAC_PARAM_PROPERTIES, p, p->str,
                                  &heap[i]);
            break;
        case P_DIGEST_OCT:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_MAC_PARAM_DIGEST, (char *)p->str, strlen(p->str));
            break;
        case P_KEY:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_MAC_PARAM_KEY, (void *)p->buf, p->len);
            break;
        case P_KEY_UTF8:
            out[n++] = utf8_param(OSSL_MAC_PARAM_KEY, p, "secret", &heap[i]);
            break;
        case P_NOINIT:
            out[n++] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_NOINIT,
                                                &ints[i]);
            break;
        case P_ONESHOT:
            out[n++] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_DIGEST_ONESHOT,
                                                &ints[i]);
            break;
        case P_TLSSIZE:
            out[n++] = OSSL_PARAM_construct_size_t(
                OSSL_MAC_PARAM_TLS_DATA_SIZE, &nums[i]);
            break;
        case P_UNKNOWN:
            out[n++] = OSSL_PARAM_construct_size_t("kc-no-such-param",
                                                   &nums[i]);
            break;
        case P_IVLEN:
            out[n++] = OSSL_PARAM_construct_size_t(
                OSSL_CIPHER_PARAM_AEAD_IVLEN, &nums[i]);
            break;
        case P_IVLEN_INT:
            out[n++] = OSSL_PARAM_construct_int(OSSL_CIPHER_PARAM_AEAD_IVLEN,
                                                &ints[i]);
            break;
        case P_TAG:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_CIPHER_PARAM_AEAD_TAG, (void *)p->buf, p->len);
            break;
        case P_TAGLEN:
            out[n++] = OSSL_PARAM_construct_size_t(
                OSSL_CIPHER_PARAM_AEAD_TAGLEN, &nums[i]);
            break;
        case P_KEYLEN:
            out[n++] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN,
                                                   &nums[i]);
            break;
        case P_TLSAAD:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_CIPHER_PARAM_AEAD_TLS1_AAD, (void *)p->buf, p->len);
            break;
        case P_IVFIXED:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, (void *)p->buf, p->len);
            break;
        case P_IVINV:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV, (void *)p->buf, p->len);
            break;
        case P_CIPHER:
            out[n++] = utf8_param(OSSL_MAC_PARAM_CIPHER, p, p->str, &heap[i]);
            break;
        case P_CIPHER_OCT:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_MAC_PARAM_CIPHER, (char *)p->str, strlen(p->str));
            break;
        case P_MACIV:
            out[n++] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                         (void *)p->buf,
                                                         p->len);
            break;
        case P_CUSTOM:
            out[n++] = OSSL_PARAM_construct_octet_string(
                OSSL_MAC_PARAM_CUSTOM, (void *)p->buf, p->len);
            break;
        case P_SIZE:
            out[n++] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE,
                                                   &nums[i]);
            break;
        case P_XOF:
            out[n++] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_XOF, &ints[i]);
            break;
        }
    }
    out[n] = OSSL_PARAM_construct_end();
    return n;
}

/*
 * What a call is given: the array, or NULL when it has no parameters and
 * the op says so (an empty array is just its END element).
 */
static OSSL_PARAM *plist(const OP *op, OSSL_PARAM *params)
{
    return op->np == 0 && op->pnull ? NULL : params;
}

/* Get arrays write into the side's result, so build one per side. */
typedef struct {
    OSSL_PARAM p[MAXPARAMS + 1];
    size_t nums[MAXPARAMS];
    int ints[MAXPARAMS];
    unsigned char bufs[MAXPARAMS][BUFSZ];
} GETARR;

static void kc_build_get(const PSPEC *ps, int np, GETARR *g)
{
    int i;

    for (i = 0; i < np; i++) {
        size_t bl = ps[i].num > BUFSZ ? BUFSZ : ps[i].num;

        g->nums[i] = 0x5a5a;
        g->ints[i] = 0x5a5a;
        memset(g->bufs[i], 0xa5, BUFSZ);
        switch (ps[i].id) {
        case G_SIZE:
            g->p[i] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE,
                                                  &g->nums[i]);
            break;
        case G_BLOCK:
            g->p[i] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_BLOCK_SIZE,
                                                  &g->nums[i]);
            break;
        case G_BLOCK_INT:
            g->p[i] = OSSL_PARAM_construct_int(OSSL_MAC_PARAM_BLOCK_SIZE,
                                               &g->ints[i]);
            break;
        case G_IVLEN:
            g->p[i] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_IVLEN,
                                                  &g->nums[i]);
            break;
        case G_KEYLEN:
            g->p[i] = OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN,
                                                  &g->nums[i]);
            break;
        case G_TAGLEN:
            g->p[i] = OSSL_PARAM_construct_size_t(
                OSSL_CIPHER_PARAM_AEAD_TAGLEN, &g->nums[i]);
            break;
        case G_TLSPAD:
            g->p[i] = OSSL_PARAM_construct_size_t(
                OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD, &g->nums[i]);
            break;
        case G_TAG:
            g->p[i] = OSSL_PARAM_construct_octet_string(
                OSSL_CIPHER_PARAM_AEAD_TAG, g->bufs[i], bl);
            break;
        case G_IV:
            g->p[i] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_IV,
                                                        g->bufs[i], bl);
            break;
        case G_UPDIV:
            g->p[i] = OSSL_PARAM_construct_octet_string(
                OSSL_CIPHER_PARAM_UPDATED_IV, g->bufs[i], bl);
            break;
        case G_IVGEN:
            /* getivgen writes up to the IV length whatever size is given */
            g->p[i] = OSSL_PARAM_construct_octet_string(
                OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN, g->bufs[i], bl);
            break;
        default:
            g->p[i] = OSSL_PARAM_construct_size_t("kc-no-such-param",
                                                  &g->nums[i]);
            break;
        }
    }
    g->p[np] = OSSL_PARAM_construct_end();
}

/* What a get wrote: return sizes, values and octet contents. */
static void collect_get(const PSPEC *ps, int np, const GETARR *g,
                        RESULT *r)
{
    int i;

    for (i = 0; i < np; i++) {
        const OSSL_PARAM *p = &g->p[i];

        r->vals[r->nvals++] = OSSL_PARAM_modified(p) ? p->return_size
                                                     : (size_t)-2;
        if (p->data_type == OSSL_PARAM_OCTET_STRING) {
            size_t n = OSSL_PARAM_modified(p) ? p->return_size : 0;

            if (n > BUFSZ)
                n = BUFSZ;
            memcpy(r->out + r->outlen, g->bufs[i], n);
            r->outlen += n;
        } else if (p->data_type == OSSL_PARAM_INTEGER) {
            r->vals[r->nvals++] = (size_t)g->ints[i];
        } else {
            r->vals[r->nvals++] = g->nums[i];
        }
    }
    (void)ps;
}

/* ---------------------------------------------------------------------- */
/* Execution of one op on one side                                        */

static OSSL_LIB_CTX *use_libctx(int side)
{
    return OSSL_LIB_CTX_set0_default(sides[side].libctx);
}

static const EVP_CIPHER *legacy_gcm(int i)
{
    return i == 0 ? EVP_aes_128_gcm() : i == 1 ? EVP_aes_192_gcm()
                                               : EVP_aes_256_gcm();
}

static void exec_hmac(STATE *st, const OP *op, int side, RESULT *r)
{
    EVP_MAC_CTX *m = st->slot[op->slot].ctx[side];
    char *heap[MAXPARAMS] = { NULL };
    OSSL_PARAM params[MAXPARAMS + 1];
    size_t nums[MAXPARAMS], outl = 0;
    int ints[MAXPARAMS], i;
    GETARR g;

    switch (op->code) {
    case OP_INIT:
        kc_build_set(op->p, op->np, params, nums, ints, heap);
        r->rv = EVP_MAC_init(m, op->key, op->keylen,
                             plist(op, params));
        heap_free(heap);
        break;
    case OP_SET:
        kc_build_set(op->p, op->np, params, nums, ints, heap);
        r->rv = EVP_MAC_CTX_set_params(m, plist(op, params));
        heap_free(heap);
        break;
    case OP_GET:
        if (op->api == 1) {
            r->rv = 1;
            r->vals[r->nvals++] = EVP_MAC_CTX_get_mac_size(m);
        } else if (op->api == 2) {
            r->rv = 1;
            r->vals[r->nvals++] = EVP_MAC_CTX_get_block_size(m);
        } else {
            kc_build_get(op->p, op->np, &g);
            r->rv = EVP_MAC_CTX_get_params(m, plist(op, g.p));
            collect_get(op->p, op->np, &g, r);
        }
        break;
    case OP_UPDATE:
    case OP_CIPHER: {
        const unsigned char *d = op->data;

        r->rv = 1;
        for (i = 0; i < op->npieces; i++) {
            int ok = EVP_MAC_update(m, d, op->pieces[i]);

            r->vals[r->nvals++] = (size_t)ok;
            d += op->pieces[i];
            if (!ok)
                r->rv = 0;
        }
        break;
    }
    case OP_FINAL:
        r->rv = EVP_MAC_final(m, op->out_null ? NULL : r->out, &outl,
                              op->outsize);
        /* EVP leaves the length indeterminate on failure */
        if (r->rv == 1) {
            r->vals[r->nvals++] = outl;
            if (!op->out_null)
                r->outlen = outl;
        }
        break;
    }
}

/* CMAC, GMAC, KMAC: as HMAC, and EVP_MAC_finalXOF (op->api) too */
static void exec_fam(STATE *st, const OP *op, int side, RESULT *r)
{
    EVP_MAC_CTX *m = st->slot[op->slot].ctx[side];
    size_t outl = 0;

    if (op->code == OP_FINAL && op->api) {
        size_t n = op->outsize < OUTMAX ? op->outsize : OUTMAX;

        /* KMAC writes its output length, which may be less: the rest shows */
        memset(r->out, 0xa5, n);
        r->rv = EVP_MAC_finalXOF(m, op->out_null ? NULL : r->out, n);
        if (r->rv == 1 && !op->out_null)
            r->outlen = n;
        return;
    }
    if (op->code == OP_FINAL) {
        r->rv = EVP_MAC_final(m, op->out_null ? NULL : r->out, &outl,
                              op->outsize);
        if (r->rv == 1) {
            r->vals[r->nvals++] = outl;
            if (!op->out_null)
                r->outlen = outl;
        }
        return;
    }
    exec_hmac(st, op, side, r);
}

static void exec_gcm(STATE *st, const OP *op, int side, RESULT *r)
{
    SLOT *s = &st->slot[op->slot];
    EVP_CIPHER_CTX *c = s->ctx[side];
    char *heap[MAXPARAMS] = { NULL };
    OSSL_PARAM params[MAXPARAMS + 1];
    size_t nums[MAXPARAMS];
    int ints[MAXPARAMS], outl = 0, i;
    GETARR g;

    switch (op->code) {
    case OP_INIT:
        kc_build_set(op->p, op->np, params, nums, ints, heap);
        if (op->cipher >= 4 && op->cipher < 7) {
            /* unchanged legacy code: EVP_aes_*_gcm() fetches implicitly */
            OSSL_LIB_CTX *prev = use_libctx(side);

            r->rv = EVP_CipherInit_ex2(c, legacy_gcm(op->cipher - 4), op->key,
                                       op->iv, op->enc,
                                       plist(op, params));
            OSSL_LIB_CTX_set0_default(prev);
        } else {
            const EVP_CIPHER *ciph = op->cipher == 0 ? NULL
                                     : op->cipher >= 7
                                     ? sides[side].aead[op->cipher - 7]
                                     : sides[side].gcm[op->cipher - 1];

            r->rv = EVP_CipherInit_ex2(c, ciph, op->key, op->iv, op->enc,
                                       plist(op, params));
        }
        heap_free(heap);
        break;
    case OP_SET:
        kc_build_set(op->p, op->np, params, nums, ints, heap);
        r->rv = EVP_CIPHER_CTX_set_params(c, plist(op, params));
        heap_free(heap);
        break;
    case OP_GET:
        if (op->api == 1) {
            r->rv = 1;
            r->vals[r->nvals++] = (size_t)EVP_CIPHER_CTX_get_iv_length(c);
        } else if (op->api == 2) {
            r->rv = 1;
            r->vals[r->nvals++] = (size_t)EVP_CIPHER_CTX_get_tag_length(c);
        } else if (op->api == 3) {
            r->rv = 1;
            r->vals[r->nvals++] = (size_t)EVP_CIPHER_CTX_get_key_length(c);
        } else {
            kc_build_get(op->p, op->np, &g);
            r->rv = EVP_CIPHER_CTX_get_params(c, plist(op, g.p));
            collect_get(op->p, op->np, &g, r);
        }
        break;
    case OP_UPDATE: {
        const unsigned char *d = op->data;

        r->rv = 1;
        for (i = 0; i < op->npieces; i++) {
            int ok;

            outl = -1;
            ok = EVP_CipherUpdate(c, op->aad ? NULL : r->out + r->outlen,
                                  &outl, d, (int)op->pieces[i]);
            r->vals[r->nvals++] = (size_t)ok;
            if (ok == 1) {
                r->vals[r->nvals++] = (size_t)outl;
                if (!op->aad && outl > 0)
                    r->outlen += (size_t)outl;
            } else {
                r->rv = 0;
            }
            d += op->pieces[i];
        }
        break;
    }
    case OP_FINAL:
        outl = -1;
        r->rv = EVP_CipherFinal_ex(c, r->out, &outl);
        if (r->rv == 1)
            r->vals[r->nvals++] = (size_t)outl;
        break;
    case OP_CIPHER: {
        size_t len = op->pieces[0];

        /* in place, as TLS does; NULL in is the final call */
        memcpy(r->out, op->data, len);
        if (op->aad)
            r->rv = EVP_Cipher(c, NULL, r->out, (unsigned int)len);
        else if (op->out_null)
            r->rv = EVP_Cipher(c, NULL, NULL, 0);
        else if (op->inplace)
            r->rv = EVP_Cipher(c, r->out, r->out, (unsigned int)len);
        else
            r->rv = EVP_Cipher(c, r->out + BUFSZ, op->data,
                               (unsigned int)len);
        /* only what EVP_Cipher() wrote counts (in place: into the input) */
        if (r->rv > 0 && !op->aad && !op->out_null) {
            if (!op->inplace)
                memmove(r->out, r->out + BUFSZ, len);
            r->outlen = len;
        }
        break;
    }
    case OP_CTRL: {
        unsigned char *ptr = r->out;

        /* set ctrls read their argument from r->out, get ctrls write it */
        memcpy(r->out, pattern, BUFSZ);
        if (op->ptr != NULL)
            memcpy(r->out, op->ptr, op->ptrlen);
        r->rv = EVP_CIPHER_CTX_ctrl(c, op->ctrl, op->arg,
                                    op->ptr == NULL && op->ctrl
                                    == EVP_CTRL_AEAD_SET_TAG ? NULL : ptr);
        if (op->ctrl == EVP_CTRL_AEAD_GET_TAG
            || op->ctrl == EVP_CTRL_GCM_IV_GEN)
            r->outlen = r->rv > 0 ? BUFSZ : 0;
        break;
    }
    }
}

/* ---------------------------------------------------------------------- */
/* Slot management: the same on every side                               */

static void slot_free(SLOT *s)
{
    int i;

    for (i = 0; i < NSIDES; i++) {
        if (s->kind == K_HMAC || s->kind == K_FAM)
            EVP_MAC_CTX_free(s->ctx[i]);
        else if (s->kind == K_GCM)
            EVP_CIPHER_CTX_free(s->ctx[i]);
        s->ctx[i] = NULL;
    }
    memset(s, 0, sizeof(*s));
}

static int slot_new(SLOT *s, int kind, int fam)
{
    int i;

    slot_free(s);
    s->kind = kind;
    s->fam = fam;
    for (i = 0; i < NSIDES; i++) {
        s->ctx[i] = kind == K_HMAC ? (void *)EVP_MAC_CTX_new(sides[i].hmac)
                    : kind == K_FAM
                    ? (void *)EVP_MAC_CTX_new(sides[i].fam[fam])
                    : (void *)EVP_CIPHER_CTX_new();
        if (s->ctx[i] == NULL) {
            fprintf(stderr, "context allocation failed\n");
            abort();
        }
    }
    return 1;
}

static void divergence(STATE *st, const OP *op, int side, const RESULT *ref,
                       const RESULT *got, const char *what)
{
    print_trace(st);
    fprintf(stderr, "DIVERGENCE in op '%s' (%s): %s vs %s\n", op->desc, what,
            side_name[SIDE_DEFAULT], side_name[side]);
    print_result(side_name[SIDE_DEFAULT], ref);
    print_result(side_name[side], got);
    abort();
}

static void compare(STATE *st, const OP *op, int side, const RESULT *a,
                    const RESULT *b, int random)
{
    if (a->rv != b->rv)
        divergence(st, op, side, a, b, "return value");
    if (ERR_GET_LIB(a->err) != ERR_GET_LIB(b->err)
        || ERR_GET_REASON(a->err) != ERR_GET_REASON(b->err))
        divergence(st, op, side, a, b, "error");
    if (a->nvals != b->nvals
        || memcmp(a->vals, b->vals, a->nvals * sizeof(a->vals[0])) != 0)
        divergence(st, op, side, a, b, "values");
    if (a->outlen != b->outlen)
        divergence(st, op, side, a, b, "output length");
    if (!random && memcmp(a->out, b->out, a->outlen) != 0)
        divergence(st, op, side, a, b, "output bytes");
}

/* Does this GCM op touch data, so that a missing IV gets generated? */
static int gcm_data_op(const OP *op)
{
    return op->code == OP_UPDATE || op->code == OP_FINAL
           || op->code == OP_CIPHER
           || (op->code == OP_CTRL && op->ctrl == EVP_CTRL_GCM_IV_GEN);
}

static int has_param(const OP *op, int id)
{
    int i;

    for (i = 0; i < op->np; i++)
        if (op->p[i].id == id)
            return 1;
    return 0;
}

/* Whether the contexts have a cipher set; that must agree on all sides. */
static int has_cipher(STATE *st, const OP *op, const SLOT *s)
{
    int i, set = EVP_CIPHER_CTX_get0_cipher(s->ctx[0]) != NULL;

    for (i = 1; i < NSIDES; i++)
        if ((EVP_CIPHER_CTX_get0_cipher(s->ctx[i]) != NULL) != set) {
            print_trace(st);
            fprintf(stderr, "DIVERGENCE before '%s': cipher set on %s: %d, "
                    "on %s: %d\n", op->desc, side_name[0], set, side_name[i],
                    !set);
            abort();
        }
    return set;
}

/* TLS fixed IV: 0 none, 1 a fixed field (rest random), 2 the whole IV */
static int iv_fixed(const OP *op)
{
    if (op->code == OP_CTRL && op->ctrl == EVP_CTRL_GCM_SET_IV_FIXED)
        return op->arg == -1 ? 2 : 1;
    if (has_param(op, P_IVFIXED))
        return op->p[0].len == (size_t)-1 ? 2 : 1;
    return 0;
}

/* A tag without data: a SET_TAG ctrl with no buffer, or a tag param. */
static int null_tag(const OP *op)
{
    int i;

    if (op->code == OP_CTRL)
        return op->ctrl == EVP_CTRL_AEAD_SET_TAG && op->ptr == NULL;
    if (op->code != OP_SET && op->code != OP_INIT)
        return 0;
    for (i = 0; i < op->np; i++)
        if (op->p[i].id == P_TAG && op->p[i].buf == NULL)
            return 1;
    return 0;
}

/* Does the array name a parameter twice? */
static int repeated_name(const OP *op)
{
    OSSL_PARAM params[MAXPARAMS + 1], *p = params;
    size_t nums[MAXPARAMS];
    int ints[MAXPARAMS], i, j, n, rep = 0;
    char *heap[MAXPARAMS] = { NULL };
    GETARR g;

    if (op->code == OP_GET) {
        kc_build_get(op->p, op->np, &g);
        p = g.p;
        n = op->np;
    } else {
        n = kc_build_set(op->p, op->np, params, nums, ints, heap);
    }
    for (i = 0; i < n; i++)
        for (j = i + 1; j < n; j++)
            if (strcmp(p[i].key, p[j].key) == 0)
                rep = 1;
    heap_free(heap);
    return rep;
}

/* The differential test's counts, for a call all sides agreed on */
static void count_op(SLOT *s, const OP *op)
{
    int key;

    cov.ops++;
    if (op->code == OP_INIT || op->code == OP_SET || op->code == OP_QMAC
        || (op->code == OP_GET && op->api == 0)) {
        if (op->np == 0 && op->pnull)
            cov.null++;
        else if (op->np == 0)
            cov.empty++;
        if (repeated_name(op))
            cov.repeated++;
    }
    if (op->code != OP_INIT && op->code != OP_SET)
        return;
    key = op->key != NULL || has_param(op, P_KEY) || has_param(op, P_KEY_UTF8);
    if (op->code == OP_INIT && !key) {
        cov.keyless++;
        s->keyless = 1;
    } else if (key) {
        if (s->keyless)
            cov.key_later++;
        s->keyless = 0;
    }
}

static void run_op(STATE *st, const OP *op)
{
    static __thread RESULT res[NSIDES];
    SLOT *s = &st->slot[op->slot];
    int side, random = 0;

    trace_add(st, op->desc);

    switch (op->code) {
    case OP_NEW:
        slot_new(s, op->kind, op->fam);
        return;
    case OP_FREE:
        slot_free(s);
        return;
    case OP_MUTATE:
    case OP_SWITCH:
        return;
    }

    /*
     * OpenSSL: EVP_Cipher() and EVP_CIPHER_CTX_get_{iv,key,tag}_length() on
     * a context without a cipher dereference NULL: they do not check.
     */
    if (s->kind == K_GCM && (op->code == OP_CIPHER
                             || (op->code == OP_GET && op->api != 0))
        && !has_cipher(st, op, s))
        return;
    /*
     * OpenSSL: AES-SIV dereferences NULL on data, a final or a copy before
     * a key init that worked; AES-OCB's EVP_Cipher() takes no AAD, and
     * writes buffered data to a NULL output at its final call ...
     */
    if (s->kind == K_GCM && s->cur == C_SIV && !s->siv_keyed
        && (op->code == OP_UPDATE
            || op->code == OP_CIPHER || op->code == OP_DUP))
        return;
    if (s->kind == K_GCM && s->cur == C_OCB && op->code == OP_CIPHER
        && (op->aad || op->out_null))
        return;
    /* ... and AES-SIV copies a tag given without data from NULL */
    if (s->kind == K_GCM && s->cur == C_SIV && null_tag(op))
        return;
    /* OpenSSL 3.5: AES-GCM's get_ctx_params reads a NULL list */
    if (s->kind == K_GCM && s->cur == C_GCM && op->code == OP_GET
        && op->api == 0 && op->np == 0 && op->pnull)
        return;

    /* GMAC without an IV set draws one at random at its first data op */
    if (s->kind == K_FAM && s->fam == F_GMAC) {
        if ((op->code == OP_UPDATE || op->code == OP_FINAL) && !s->gmac_iv)
            s->gmac_rand = 1;
        random = s->gmac_rand;
    }
    if (s->kind == K_GCM && s->cur == C_GCM && op->code != OP_QMAC) {
        if ((gcm_data_op(op) && !s->iv_explicit) || iv_fixed(op) == 1)
            s->stream_rand = s->buf_rand = 1;
        random = s->stream_rand
                 || (s->buf_rand && (op->code == OP_GET
                                     || op->code == OP_CTRL))
                 /* OpenSSL 4.0 may have drawn an IV no one set (selftest) */
                 || (op->code == OP_GET && !s->iv_explicit);
    }
    if (s->kind == K_HMAC && op->code == OP_FINAL && s->finished)
        random = 1;
    /* EVP_Q_mac is no slot's: a GMAC one without an IV is random */
    if (op->code == OP_QMAC)
        random = op->kind == K_FAM && op->fam == F_GMAC
                 && !has_param(op, P_MACIV);

    for (side = 0; side < NSIDES; side++) {
        RESULT *r = &res[side];

        r->rv = 0;
        r->nvals = 0;
        r->outlen = 0;
        ERR_clear_error();
        if (op->code == OP_DUP) {
            SLOT *d = &st->slot[op->slot2];

            if (s->kind == K_HMAC || s->kind == K_FAM) {
                d->ctx[side] = EVP_MAC_CTX_dup(s->ctx[side]);
                r->rv = d->ctx[side] != NULL;
            } else {
                d->ctx[side] = EVP_CIPHER_CTX_new();
                r->rv = EVP_CIPHER_CTX_copy(d->ctx[side], s->ctx[side]);
            }
        } else if (op->code == OP_QMAC) {
            OSSL_PARAM params[MAXPARAMS + 1];
            size_t nums[MAXPARAMS], outl = 0;
            int ints[MAXPARAMS];
            char *heap[MAXPARAMS] = { NULL };
            unsigned char *ret;

            kc_build_set(op->p, op->np, params, nums, ints, heap);
            if (op->kind == K_FAM)
                ret = EVP_Q_mac(sides[side].libctx, fam_names[op->fam], NULL,
                                op->digest, plist(op, params),
                                op->key, op->keylen, op->data, op->pieces[0],
                                r->out, op->outsize, &outl);
            else
                ret = EVP_Q_mac(sides[side].libctx, "HMAC", NULL, op->digest,
                                NULL, op->key, op->keylen, op->data,
                                op->pieces[0], r->out, op->outsize, &outl);
            r->rv = ret != NULL;
            if (ret != NULL)
                r->outlen = outl;
            heap_free(heap);
        } else if (s->kind == K_HMAC) {
            exec_hmac(st, op, side, r);
        } else if (s->kind == K_FAM) {
            exec_fam(st, op, side, r);
        } else {
            exec_gcm(st, op, side, r);
        }
        r->err = ERR_peek_last_error();
        ERR_clear_error();
    }
    for (side = 1; side < NSIDES; side++)
        compare(st, op, side, &res[0], &res[side], random);
    if (only != NULL)
        count_op(s, op);

    /* model updates, from the reference's outcome */
    if (op->code == OP_DUP) {
        SLOT *d = &st->slot[op->slot2];
        void *ctx[NSIDES];

        memcpy(ctx, d->ctx, sizeof(ctx));
        *d = *s;
        memcpy(d->ctx, ctx, sizeof(ctx));
        if (d->ctx[0] == NULL) {
            int i;

            /* a failed MAC dup on every side (compared above) */
            for (i = 0; i < NSIDES; i++)
                if (d->ctx[i] != NULL)
                    abort();
            memset(d, 0, sizeof(*d));
        }
        return;
    }
    if (s->kind == K_HMAC && (op->key != NULL || has_param(op, P_KEY)
                              || has_param(op, P_KEY_UTF8)))
        s->keyed = 1;
    if (s->kind == K_HMAC && res[0].rv == 1) {
        if (op->code == OP_FINAL)
            s->finished = 1;
        else if (op->code == OP_INIT
                 || (op->code == OP_SET && (has_param(op, P_KEY)
                                            || has_param(op, P_KEY_UTF8))))
            s->finished = 0;
    }
    /* GMAC: an IV set that succeeded (after any cipher in the call) */
    if (s->kind == K_FAM && s->fam == F_GMAC
        && (op->code == OP_INIT || op->code == OP_SET)) {
        if (res[0].rv == 1 && has_param(op, P_MACIV)) {
            s->gmac_iv = 1;
            s->gmac_rand = 0;
        } else if (res[0].rv != 1 || has_param(op, P_CIPHER)
                   || has_param(op, P_CIPHER_OCT)) {
            s->gmac_iv = 0;
        }
    }
    if (s->kind == K_GCM && op->code == OP_INIT) {
        if (op->cipher != 0) {
            s->cur = CIPHER_FAMILY(op->cipher);
            s->siv_keyed = 0;
        }
        if (res[0].rv != 1)
            s->siv_keyed = 0;
        else if (op->key != NULL)
            s->siv_keyed = 1;
    }
    if (s->kind == K_GCM) {
        if (op->code == OP_INIT && op->cipher != 0)
            s->iv_explicit = 0;
        if (res[0].rv == 1
            && ((op->code == OP_INIT && op->iv != NULL) || iv_fixed(op) == 2)) {
            s->iv_explicit = 1;
            s->stream_rand = 0;
        }
        /* a partial fixed IV in the same init draws the rest at random */
        if (iv_fixed(op) == 1)
            s->stream_rand = s->buf_rand = 1;
        if (op->code == OP_FINAL && res[0].rv == 1 && !s->stream_rand)
            s->buf_rand = 0;
    }
}

/* ---------------------------------------------------------------------- */
/* Decoding                                                               */

static void pick_key(STATE *st, RD *rd, OP *op, int gcm)
{
    unsigned b = rd8(rd);

    /* the differential test: mostly the AES-sized pool keys (16, 32, 24) */
    if (only != NULL && b < nokey_from && b < 0xe0 && (b & 0x18) != 0)
        b %= 3;
    if (b >= nokey_from) {
        op->key = NULL;
        op->keylen = 0;
    } else if (b >= 0xf0) {
        /* a random key from the input */
        size_t len = rdsize(rd) % BUFSZ;
        const uint8_t *p;

        unsigned char *k = st->rkey[st->nrkey++ % NRKEY];

        memset(k, 0, BUFSZ);
        p = rdbytes(rd, &len);
        memcpy(k, p, len);
        op->key = k;
        op->keylen = len;
    } else if (b >= 0xe0) {
        /* a pooled key with another length: same prefix, other key */
        op->key = st->keys[b % NKEYS];
        op->keylen = rdsize(rd) % BUFSZ;
    } else {
        op->key = st->keys[b % NKEYS];
        op->keylen = key_lens[b % NKEYS];
    }
    (void)gcm;
}

/* A "key" parameter: a key as pick_key() draws it, never a NULL one. */
static void pick_key_param(STATE *st, RD *rd, PSPEC *p)
{
    OP tmp;

    p->id = P_KEY;
    pick_key(st, rd, &tmp, 0);
    if (tmp.key == NULL) {
        tmp.key = st->keys[0];
        tmp.keylen = 0;
    }
    p->buf = tmp.key;
    p->len = tmp.keylen;
}

static void describe_key(const STATE *st, const OP *op, char *buf,
                         size_t n)
{
    int i;

    if (op->key == NULL) {
        snprintf(buf, n, "key=NULL");
        return;
    }
    for (i = 0; i < NKEYS; i++)
        if (op->key == st->keys[i]) {
            snprintf(buf, n, "key=pool%d[%02x%02x..]/%zu", i, op->key[0],
                     op->key[1], op->keylen);
            return;
        }
    snprintf(buf, n, "key=input[%02x..]/%zu", op->key[0], op->keylen);
}

static int pick_data(RD *rd, OP *op, int maxpieces)
{
    unsigned b = rd8(rd);
    size_t total = 0;
    int i;

    op->npieces = 1 + (int)(b % maxpieces);
    for (i = 0; i < op->npieces; i++) {
        op->pieces[i] = rdsize(rd);
        if (op->pieces[i] > 4096)
            op->pieces[i] = 4096;
        if (total + op->pieces[i] > 4096)
            op->pieces[i] = 4096 - total;
        total += op->pieces[i];
    }
    op->data = pattern + (rd8(rd) * 13) % (sizeof(pattern) - 4096);
    return (int)total;
}

/*
 * The count byte of a set or init parameter array: b % (max + 1)
 * parameters.  None: bit 7 passes NULL, else an array of END alone.  Two
 * or more: bit 6 makes the last one repeat the first one's name (and
 * type), with a value of its own, so that "first or last wins" is asked.
 */
static int decode_count(RD *rd, OP *op, int max, int *repeat)
{
    unsigned b = rd8(rd);
    int n = (int)(b % (unsigned)(max + 1));

    op->pnull = n == 0 && (b & 0x80) != 0;
    *repeat = n >= 2 && (b & 0x40) != 0;
    return n;
}

/* A parameter's selector byte: the first one's again for a repeat. */
static unsigned param_byte(RD *rd, int i, int n, int repeat, unsigned *first)
{
    unsigned b = rd8(rd);

    if (i == 0)
        *first = b;
    else if (repeat && i == n - 1)
        b = *first;
    return b;
}

static void decode_hmac_params(STATE *st, RD *rd, OP *op, int max)
{
    SLOT *s = &st->slot[op->slot];
    int i, repeat, n = decode_count(rd, op, max, &repeat);
    unsigned first = 0;

    op->np = 0;
    for (i = 0; i < n; i++) {
        PSPEC *p = &op->p[op->np];
        unsigned b = param_byte(rd, i, n, repeat, &first);

        memset(p, 0, sizeof(*p));
        /* the bits b % 12 leaves: how a UTF-8 string is passed */
        p->form = (int)((b / 12) % U_FORMS);
        switch (b % 12) {
        case 0: case 1: case 2:
            p->id = P_DIGEST;
            p->str = digests[rd8(rd) % NDIGESTS];
            break;
        case 3:
            p->id = P_PROPS;
            p->str = props[3 + rd8(rd) % (NPROPS - 3)];
            break;
        case 4: case 5:
            pick_key_param(st, rd, p);
            break;
        case 6:
            /*
             * OpenSSL 3.0 bugs: digest-noinit = 1 on a keyed HMAC context is
             * a use-after-free, and before keying it leaves the digests
             * uninitialised (NULL dereference in the next final).  Only 0,
             * which the default ignores but which still sends keycache
             * down its pass-through path.
             */
            p->id = s->keyed ? P_ONESHOT : P_NOINIT;
            p->num = 0;
            rd8(rd);
            break;
        case 7:
            p->id = P_ONESHOT;
            p->num = rd8(rd) & 1;
            break;
        case 8:
            p->id = P_TLSSIZE;
            p->num = rdsize(rd);
            break;
        case 9:
            p->id = P_DIGEST_OCT;
            p->str = digests[rd8(rd) % NDIGESTS];
            break;
        case 10:
            p->id = P_KEY_UTF8;
            break;
        default:
            p->id = P_UNKNOWN;
            p->num = rd8(rd);
            break;
        }
        op->np++;
    }
}

static void decode_gcm_set(STATE *st, RD *rd, OP *op, int max)
{
    SLOT *s = &st->slot[op->slot];
    int i, repeat, n = decode_count(rd, op, max, &repeat);
    unsigned first = 0;

    op->np = 0;
    for (i = 0; i < n; i++) {
        PSPEC *p = &op->p[op->np];
        unsigned b = param_byte(rd, i, n, repeat, &first);
        size_t len;

        memset(p, 0, sizeof(*p));
        switch (b % 12) {
        case 0: case 1:
            p->id = (b & 0x10) ? P_IVLEN_INT : P_IVLEN;
            p->num = rdsize(rd);
            if (p->num < 8)
                s->small_iv = 1;
            break;
        case 2: case 3:
            p->id = P_TAG;
            len = rd8(rd) % 18;
            p->buf = rdbytes(rd, &len);
            p->len = len;
            if (len == 0)
                p->buf = NULL;
            break;
        case 4:
            p->id = P_TAGLEN;
            p->num = rdsize(rd);
            break;
        case 5:
            p->id = P_KEYLEN;
            p->num = rdsize(rd);
            break;
        case 6: case 7:
            /* TLS AAD: 13 bytes, the last two the record length */
            p->id = P_TLSAAD;
            len = (b & 0x40) ? rd8(rd) % 20 : 13;
            p->buf = rdbytes(rd, &len);
            p->len = len;
            break;
        case 8:
            if (s->small_iv)
                goto unknown;
            /* -1: restore the whole IV; else a fixed field of len bytes */
            p->id = P_IVFIXED;
            p->buf = iv_init[b % NIVS];
            p->len = (b & 0x20) ? (size_t)-1 : rd8(rd) % 9;
            if (op->np > 0) {
                /* keep it first: the taint model looks at p[0] */
                PSPEC t = op->p[0];

                op->p[0] = *p;
                *p = t;
            }
            break;
        case 9:
            if (s->small_iv)
                goto unknown;
            p->id = P_IVINV;
            p->buf = iv_init[b % NIVS];
            p->len = rd8(rd) % 9;
            break;
        default:
        unknown:
            p->id = P_UNKNOWN;
            p->num = rd8(rd);
            break;
        }
        op->np++;
    }
    /* siv-keyless-end: NULL instead of {END} */
    if (skip_known && op->code == OP_INIT && op->key == NULL && op->np == 0
        && ((op->cipher != 0 && CIPHER_FAMILY(op->cipher) == C_SIV)
            || (op->cipher == 0 && s->cur == C_SIV)))
        op->pnull = 1;
    if (skip_known) {
        int ivl = 0, tag = 0;

        for (i = 0; i < op->np; i++) {
            int *seen = op->p[i].id == P_TAG ? &tag
                        : op->p[i].id == P_IVLEN || op->p[i].id == P_IVLEN_INT
                        ? &ivl : NULL;

            if (seen != NULL && (*seen)++ > 0)
                op->p[i].id = P_UNKNOWN;
        }
    }
    /* a short IV length set by this very array comes first in OpenSSL */
    for (i = 0; i < op->np && s->small_iv; i++)
        if (op->p[i].id == P_IVFIXED || op->p[i].id == P_IVINV)
            op->p[i].id = P_UNKNOWN;
}

/* set_ctx_params / init params for CMAC, GMAC, KMAC */
static void decode_fam_params(STATE *st, RD *rd, OP *op, int max)
{
    int i, repeat, n = decode_count(rd, op, max, &repeat);
    unsigned first = 0;

    op->np = 0;
    for (i = 0; i < n; i++) {
        PSPEC *p = &op->p[op->np];
        unsigned b = param_byte(rd, i, n, repeat, &first);
        size_t len;

        memset(p, 0, sizeof(*p));
        p->form = (int)((b / 12) % U_FORMS);
        switch (b % 12) {
        case 0: case 1: case 2:
            p->id = P_CIPHER;
            p->str = fam_ciphers[rd8(rd) % NFAMCIPHERS];
            break;
        case 3:
            p->id = P_PROPS;
            p->str = props[3 + rd8(rd) % (NPROPS - 3)];
            /*
             * A cipher query naming keycache finds its AES-GCM where it is
             * loaded, for the default's GMAC too, which the reference
             * (default alone) cannot: a provider neither has instead.
             */
            if (strcmp(p->str, "provider=keycache") == 0)
                p->str = "provider=nope";
            break;
        case 4:
            pick_key_param(st, rd, p);
            break;
        case 5: case 6:
            /* gmac-dup-iv: one "iv" at most */
            if (skip_known && has_param(op, P_MACIV)) {
                p->id = P_UNKNOWN;
                p->num = rd8(rd);
                break;
            }
            /* mostly 12 bytes, else any length from the pool */
            p->id = P_MACIV;
            p->buf = iv_init[b % NIVS];
            len = (b & 0x40) ? rdsize(rd) : 12;
            p->len = len > BUFSZ ? BUFSZ : len;
            break;
        case 7:
            p->id = P_CUSTOM;
            len = rdsize(rd);
            p->buf = len > 0 ? pattern + rd8(rd) : NULL;
            p->len = len > 600 ? 600 : len;
            break;
        case 8:
            p->id = P_SIZE;
            p->num = rdsize(rd);
            break;
        case 9:
            p->id = P_XOF;
            p->num = rd8(rd) % 3;
            break;
        case 10:
            p->id = (b & 0x10) ? P_CIPHER_OCT : P_KEY_UTF8;
            p->str = fam_ciphers[rd8(rd) % NFAMCIPHERS];
            break;
        default:
            p->id = P_UNKNOWN;
            p->num = rd8(rd);
            break;
        }
        op->np++;
    }
}

static void decode_get(STATE *st, RD *rd, OP *op, int gcm)
{
    SLOT *s = &st->slot[op->slot];
    unsigned c = rd8(rd), first = 0;
    /* top three bits set: no parameters, NULL by bit 4; else as a set */
    int i, n = (c & 0xe0) == 0xe0 ? 0 : 1 + (int)(c % MAXPARAMS);
    int repeat = n >= 2 && (c & 0x40) != 0;

    op->np = 0;
    op->api = 0;
    op->pnull = n == 0 && (c & 0x10) != 0;
    for (i = 0; i < n; i++) {
        PSPEC *p = &op->p[op->np];
        unsigned b = param_byte(rd, i, n, repeat, &first);

        memset(p, 0, sizeof(*p));
        if (!gcm) {
            static const int ids[] = { G_SIZE, G_BLOCK, G_BLOCK_INT,
                                       G_UNKNOWN };

            p->id = ids[b % 4];
        } else {
            static const int ids[] = { G_IVLEN, G_KEYLEN, G_TAGLEN, G_TAG,
                                       G_IV, G_UPDIV, G_TLSPAD, G_IVGEN,
                                       G_UNKNOWN };

            p->id = ids[b % 9];
            p->num = rdsize(rd);
            if (p->id == G_IVGEN && (s->small_iv || p->num < 128))
                p->num = BUFSZ;
        }
        op->np++;
    }
}

static void decode_gcm_ctrl(STATE *st, RD *rd, OP *op)
{
    SLOT *s = &st->slot[op->slot];
    unsigned b = rd8(rd);
    size_t len;

    op->ptr = NULL;
    switch (b % 9) {
    case 0:
        op->ctrl = EVP_CTRL_AEAD_SET_IVLEN;
        op->arg = (int)rdsize(rd);
        if (op->arg < 8)
            s->small_iv = 1;
        break;
    case 1:
        op->ctrl = EVP_CTRL_AEAD_SET_TAG;
        op->arg = (int)(rd8(rd) % 18);
        len = 16;
        op->ptr = (b & 0x10) ? NULL : rdbytes(rd, &len);
        op->ptrlen = len;
        break;
    case 2: case 3:
        op->ctrl = EVP_CTRL_AEAD_GET_TAG;
        op->arg = (int)(rd8(rd) % 18);
        break;
    case 4:
        op->ctrl = EVP_CTRL_AEAD_TLS1_AAD;
        len = 13;
        op->ptr = rdbytes(rd, &len);
        op->ptrlen = len;
        op->arg = (b & 0x40) ? (int)(rd8(rd) % 20) : 13;
        break;
    case 5:
        if (s->small_iv)
            goto keylen;
        op->ctrl = EVP_CTRL_GCM_SET_IV_FIXED;
        op->arg = (b & 0x20) ? -1 : (int)(rd8(rd) % 9);
        op->ptr = iv_init[b % NIVS];
        op->ptrlen = BUFSZ;
        break;
    case 6:
        if (s->small_iv)
            goto keylen;
        op->ctrl = EVP_CTRL_GCM_IV_GEN;
        op->arg = (int)(rd8(rd) % 17) - 1;
        break;
    case 7:
        if (s->small_iv)
            goto keylen;
        op->ctrl = EVP_CTRL_GCM_SET_IV_INV;
        op->arg = (int)(rd8(rd) % 9);
        op->ptr = iv_init[b % NIVS];
        op->ptrlen = BUFSZ;
        break;
    default:
    keylen:
        op->ctrl = EVP_CTRL_SET_KEY_LENGTH;
        op->arg = (int)rdsize(rd);
        break;
    }
}

static int is_utf8(int id)
{
    return id == P_DIGEST || id == P_PROPS || id == P_KEY_UTF8
           || id == P_CIPHER;
}

static void describe_params(const OP *op, char *buf, size_t n)
{
    static const char *const pn[] = {
        "digest", "properties", "key", "digest-noinit", "digest-oneshot",
        "tls-data-size", "digest(octets)", "key(utf8)", "unknown",
        "ivlen", "ivlen(int)", "tag", "taglen", "keylen", "tlsaad",
        "tlsivfixed", "tlsivinv",
        "size", "block-size", "block-size(int)",
        "ivlen", "keylen", "taglen", "tag", "iv", "updated-iv", "tlsaadpad",
        "tlsivgen", "unknown",
        "cipher", "cipher(octets)", "iv", "custom", "size", "xof"
    };
    size_t used = 0;
    int i;

    buf[0] = '\0';
    if (op->np == 0)
        snprintf(buf, n, op->pnull ? " NULL" : " {END}");
    for (i = 0; i < op->np && used < n; i++) {
        const PSPEC *p = &op->p[i];

        if (p->str != NULL)
            used += snprintf(buf + used, n - used, " %s=\"%s\"%s", pn[p->id],
                             p->str, !is_utf8(p->id) ? ""
                             : p->form == U_HEAP ? "(heap)"
                             : p->form == U_HEAP_NUL ? "(heap, NUL counted)"
                             : "");
        else if (p->buf != NULL || p->id == P_TAG)
            used += snprintf(buf + used, n - used, " %s=<%zu bytes>",
                             pn[p->id], p->len);
        else
            used += snprintf(buf + used, n - used, " %s=%zd", pn[p->id],
                             (ssize_t)p->num);
    }
}

/* Decode the next op; the model decides what is safe to ask for. */
static int decode(STATE *st, OP *op)
{
    RD *rd = &st->rd;
    unsigned b = rd8(rd), sel = rd8(rd);
    SLOT *s;
    char k[64] = "", ps[120] = "";

    memset(op, 0, sizeof(*op));
    op->code = only != NULL ? diff_ops[b % sizeof(diff_ops)]
                            : (int)(b % OP_COUNT);
    op->slot = (int)(sel % NSLOTS);
    op->kind = (sel & 0x40) ? K_FAM : (sel & 0x80) ? K_GCM : K_HMAC;
    op->fam = (int)((sel >> 4) & 3);
    if (only != NULL) {
        /* EVP_Q_mac is a MAC's: none for the cipher families */
        if (op->code == OP_QMAC && only->kind == K_GCM)
            return 0;
        op->kind = only->kind;
        op->fam = only->fam0 + (only->nfam > 0 ? op->fam % only->nfam : 0);
    }
    s = &st->slot[op->slot];

    if (op->code == OP_NEW || op->code == OP_MUTATE
        || op->code == OP_SWITCH || op->code == OP_QMAC)
        goto specific;
    if (op->code == OP_FREE && s->kind == K_NONE)
        return 0;
    if (s->kind == K_NONE) {
        /* using an empty slot creates it first */
        OP n;

        memset(&n, 0, sizeof(n));
        n.code = OP_NEW;
        n.slot = op->slot;
        n.kind = op->kind;
        n.fam = op->fam;
        snprintf(n.desc, sizeof(n.desc), "slot%d = new %s", n.slot,
                 n.kind == K_HMAC ? "EVP_MAC_CTX(HMAC)"
                 : n.kind == K_FAM ? fam_names[n.fam] : "EVP_CIPHER_CTX");
        run_op(st, &n);
    }

 specific:
    switch (op->code) {
    case OP_NEW:
        snprintf(op->desc, sizeof(op->desc), "slot%d = new %s", op->slot,
                 op->kind == K_HMAC ? "EVP_MAC_CTX(HMAC)"
                 : op->kind == K_FAM ? fam_names[op->fam] : "EVP_CIPHER_CTX");
        break;
    case OP_FREE:
        snprintf(op->desc, sizeof(op->desc), "free slot%d", op->slot);
        break;
    case OP_DUP:
        op->slot2 = (int)((sel >> 2) % NSLOTS);
        if (op->slot2 == op->slot)
            op->slot2 = (op->slot + 1) % NSLOTS;
        /* the destination is freed first, as its own step */
        if (st->slot[op->slot2].kind != K_NONE) {
            OP f;

            memset(&f, 0, sizeof(f));
            f.code = OP_FREE;
            f.slot = op->slot2;
            snprintf(f.desc, sizeof(f.desc), "free slot%d", f.slot);
            run_op(st, &f);
        }
        snprintf(op->desc, sizeof(op->desc), "slot%d = dup slot%d (%s)",
                 op->slot2, op->slot, s->kind != K_GCM ? "EVP_MAC_CTX_dup"
                                                       : "EVP_CIPHER_CTX_copy");
        break;
    case OP_INIT:
        if (s->kind == K_FAM) {
            pick_key(st, rd, op, 0);
            decode_fam_params(st, rd, op, 3);
            describe_key(st, op, k, sizeof(k));
            describe_params(op, ps, sizeof(ps));
            snprintf(op->desc, sizeof(op->desc),
                     "EVP_MAC_init(slot%d %s, %s, params:%s)", op->slot,
                     fam_names[s->fam], k, ps);
        } else if (s->kind == K_HMAC) {
            pick_key(st, rd, op, 0);
            decode_hmac_params(st, rd, op, 3);
            describe_key(st, op, k, sizeof(k));
            describe_params(op, ps, sizeof(ps));
            snprintf(op->desc, sizeof(op->desc),
                     "EVP_MAC_init(slot%d, %s, params:%s)", op->slot, k, ps);
        } else {
            unsigned c = rd8(rd);

            op->enc = (int)(c % 3) - 1;
            op->cipher = (int)((c >> 2) % 7);
            /* the eighth value: AES-OCB or AES-SIV, by one more byte */
            if (((c >> 2) & 7) == 7)
                op->cipher = 7 + (int)(rd8(rd) % NAEADS);
            if (only != NULL && op->cipher != 0)
                op->cipher = only->cipher0
                             + (op->cipher - 1) % only->ncipher;
            pick_key(st, rd, op, 1);
            op->iv = (c & 0x80) ? NULL : iv_init[(c >> 5) % NIVS];
            decode_gcm_set(st, rd, op, 2);
            describe_key(st, op, k, sizeof(k));
            describe_params(op, ps, sizeof(ps));
            snprintf(op->desc, sizeof(op->desc),
                     "EVP_CipherInit_ex2(slot%d, %s, %s, iv=%s, enc=%d, "
                     "params:%s)", op->slot,
                     op->cipher == 0 ? "NULL" : op->cipher >= 7
                     ? aead_names[op->cipher - 7] : op->cipher < 4
                     ? gcm_names[op->cipher - 1] : op->cipher == 4
                     ? "EVP_aes_128_gcm()" : op->cipher == 5
                     ? "EVP_aes_192_gcm()" : "EVP_aes_256_gcm()",
                     k, op->iv == NULL ? "NULL" : "pool", op->enc, ps);
        }
        break;
    case OP_SET:
        if (s->kind == K_FAM)
            decode_fam_params(st, rd, op, MAXPARAMS);
        else if (s->kind == K_HMAC)
            decode_hmac_params(st, rd, op, MAXPARAMS);
        else
            decode_gcm_set(st, rd, op, MAXPARAMS);
        describe_params(op, ps, sizeof(ps));
        snprintf(op->desc, sizeof(op->desc), "set_params(slot%d:%s)",
                 op->slot, ps);
        break;
    case OP_GET:
        op->api = (int)(rd8(rd) % 6);
        if (op->api > 3 || (s->kind != K_GCM && op->api > 2))
            op->api = 0;
        if (op->api == 0) {
            decode_get(st, rd, op, s->kind == K_GCM);
            describe_params(op, ps, sizeof(ps));
        }
        snprintf(op->desc, sizeof(op->desc), "get(slot%d, api=%d:%s)",
                 op->slot, op->api, ps);
        break;
    case OP_UPDATE: {
        int total = pick_data(rd, op, 4);

        op->aad = s->kind == K_GCM && (rd8(rd) & 1);
        snprintf(op->desc, sizeof(op->desc),
                 "update%s(slot%d, %d bytes in %d pieces: %zu %zu %zu %zu)",
                 op->aad ? "-aad" : "", op->slot, total, op->npieces,
                 op->pieces[0], op->npieces > 1 ? op->pieces[1] : 0,
                 op->npieces > 2 ? op->pieces[2] : 0,
                 op->npieces > 3 ? op->pieces[3] : 0);
        break;
    }
    case OP_FINAL:
        b = rd8(rd);
        op->out_null = (b & 7) == 0;
        op->outsize = (b & 8) ? rdsize(rd) % 200 : OUTMAX;
        /* KMAC: EVP_MAC_finalXOF (never with NULL: EVP would write it) */
        op->api = s->kind == K_FAM && s->fam >= F_KMAC128 && (b & 0x30) == 0;
        if (op->api)
            op->out_null = 0;
        snprintf(op->desc, sizeof(op->desc),
                 "final%s(slot%d, out=%s, outsize=%zu)",
                 op->api ? "XOF" : "", op->slot,
                 op->out_null ? "NULL" : "buf", op->outsize);
        break;
    case OP_CIPHER:
        if (s->kind != K_GCM) {
            op->code = OP_UPDATE;
            pick_data(rd, op, 1);
            snprintf(op->desc, sizeof(op->desc), "update(slot%d, %zu bytes)",
                     op->slot, op->pieces[0]);
            break;
        }
        pick_data(rd, op, 1);
        b = rd8(rd);
        op->aad = (b & 3) == 1;
        op->out_null = (b & 3) == 2;
        op->inplace = (b & 4) != 0;
        if (op->pieces[0] > OUTMAX - BUFSZ)
            op->pieces[0] = OUTMAX - BUFSZ;
        snprintf(op->desc, sizeof(op->desc), "EVP_Cipher(slot%d, %s, %zu)",
                 op->slot, op->aad ? "aad" : op->out_null ? "final"
                 : op->inplace ? "in place" : "out of place", op->pieces[0]);
        break;
    case OP_CTRL:
        if (s->kind != K_GCM) {
            op->code = OP_GET;
            op->api = 1 + (int)(rd8(rd) & 1);
            snprintf(op->desc, sizeof(op->desc), "get(slot%d, api=%d)",
                     op->slot, op->api);
            break;
        }
        decode_gcm_ctrl(st, rd, op);
        snprintf(op->desc, sizeof(op->desc),
                 "EVP_CIPHER_CTX_ctrl(slot%d, %d, %d, %s)", op->slot,
                 op->ctrl, op->arg, op->ptr == NULL ? "NULL/out" : "data");
        break;
    case OP_QMAC: {
        pick_data(rd, op, 1);
        if (op->kind == K_FAM) {
            /* the cipher as EVP_Q_mac's subalg, other params as params */
            b = rd8(rd);
            op->digest = op->fam <= F_GMAC && b % 8 != 0
                         ? fam_ciphers[b % NFAMCIPHERS] : NULL;
            decode_fam_params(st, rd, op, 2);
        } else {
            op->digest = digests[rd8(rd) % NDIGESTS];
            op->pnull = 1;      /* EVP_Q_mac's HMAC gets no parameters */
        }
        pick_key(st, rd, op, 0);
        if (op->key == NULL)
            op->keylen = 0;
        b = rd8(rd);
        op->outsize = (b & 1) ? rdsize(rd) % 100 : OUTMAX;
        describe_key(st, op, k, sizeof(k));
        describe_params(op, ps, sizeof(ps));
        snprintf(op->desc, sizeof(op->desc),
                 "EVP_Q_mac(%s, %s, %s, %zu bytes, outsize=%zu%s)",
                 op->kind == K_FAM ? fam_names[op->fam] : "HMAC",
                 op->digest != NULL ? op->digest : "NULL", k, op->pieces[0],
                 op->outsize, ps);
        break;
    }
    case OP_MUTATE: {
        /* the app changes a key buffer it used before, in place */
        unsigned i = rd8(rd) % NKEYS, j = rd8(rd), v = rd8(rd) | 1;

        st->keys[i][j] ^= (unsigned char)v;
        snprintf(op->desc, sizeof(op->desc), "pool key %u byte %u ^= %02x",
                 i, j, v);
        break;
    }
    case OP_SWITCH:
        snprintf(op->desc, sizeof(op->desc), "-- continue on thread 2%s --",
                 st->overlap ? " (thread 1 parked)" : " (thread 1 exited)");
        break;
    }
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                */

static void *phase2(void *arg)
{
    STATE *st = arg;
    int i;
    OP op;

    while (st->rd.n > 0 && st->nops < maxops) {
        if (decode(st, &op)) {
            st->nops++;
            if (op.code != OP_SWITCH)
                run_op(st, &op);
        }
    }
    for (i = 0; i < NSLOTS; i++)
        slot_free(&st->slot[i]);
    OPENSSL_thread_stop();
    return NULL;
}

static void run_phase2(STATE *st)
{
    pthread_t t;

    if (pthread_create(&t, NULL, phase2, st) != 0
        || pthread_join(t, NULL) != 0)
        abort();
}

static void *phase1(void *arg)
{
    STATE *st = arg;
    OP op;

    while (st->rd.n > 0 && st->nops < maxops) {
        if (!decode(st, &op))
            continue;
        st->nops++;
        if (op.code == OP_SWITCH) {
            trace_add(st, op.desc);
            break;
        }
        run_op(st, &op);
    }
    if (st->overlap)
        run_phase2(st);
    OPENSSL_thread_stop();
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Set-up                                                                 */

/*
 * The build's config, written to a temp file (path[], "/tmp/kcfuzz-XXXXXX"),
 * with cache_size = 2 if |small|, and admit_after = $KC_DIFF_ADMIT if set
 * (the test config admits at once: 3 runs keys not admitted yet too).
 */
static char *conf_copy(char *path, int small)
{
    const char *admit = getenv("KC_DIFF_ADMIT");
    char line[1024];
    FILE *in = fopen(KC_CONF, "r"), *out;
    int fd;

    if (in == NULL || (fd = mkstemp(path)) < 0 || (out = fdopen(fd, "w")) == NULL) {
        fprintf(stderr, "cannot read %s or write a temp config\n", KC_CONF);
        abort();
    }
    while (fgets(line, sizeof(line), in) != NULL) {
        if (small && strncmp(line, "cache_size", 10) == 0)
            fputs("cache_size = 2\n", out);
        else if (admit != NULL && strncmp(line, "admit_after", 11) == 0)
            fprintf(out, "admit_after = %s\n", admit);
        else
            fputs(line, out);
    }
    fclose(in);
    fclose(out);
    return path;
}

static OSSL_LIB_CTX *load_ctx(const char *conf)
{
    OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();

    if (ctx == NULL)
        abort();
    if (conf == NULL) {
        if (OSSL_PROVIDER_load(ctx, "default") == NULL)
            goto err;
    } else if (!OSSL_LIB_CTX_load_config(ctx, conf)
               || !OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME)) {
        goto err;
    }
    return ctx;
 err:
    fprintf(stderr, "cannot set up library context from %s\n",
            conf == NULL ? "default" : conf);
    ERR_print_errors_fp(stderr);
    abort();
}

static void check_provider(int side, const OSSL_PROVIDER *prov)
{
    const char *want = selftest || side == SIDE_DEFAULT ? "default"
                       : KEYCACHE_PROVIDER_NAME;

    if (prov == NULL || strcmp(OSSL_PROVIDER_get0_name(prov), want) != 0) {
        fprintf(stderr, "%s: algorithm not from %s\n", side_name[side], want);
        abort();
    }
}

static int find_kc(OSSL_PROVIDER *prov, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(prov), KEYCACHE_PROVIDER_NAME) != 0)
        return 1;
    *(OSSL_PROVIDER **)arg = prov;
    return 0;
}

/* KC_FUZZ_TRACE: show that the cache is really being exercised. */
static void print_counters(void)
{
    static const char *const names[] = {
        KEYCACHE_PARAM_HITS, KEYCACHE_PARAM_MISSES, KEYCACHE_PARAM_EVICTIONS,
        KEYCACHE_PARAM_PASSTHROUGH
    };
    int side;
    size_t i;

    for (side = SIDE_KC; side < NSIDES; side++) {
        OSSL_PROVIDER *prov = NULL;

        OSSL_PROVIDER_do_all(sides[side].libctx, find_kc, &prov);
        fprintf(stderr, "  %s:", side_name[side]);
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            uint64_t v = 0;
            OSSL_PARAM p[2];

            p[0] = OSSL_PARAM_construct_uint64(names[i], &v);
            p[1] = OSSL_PARAM_construct_end();
            if (prov != NULL && OSSL_PROVIDER_get_params(prov, p))
                fprintf(stderr, " %s=%llu", names[i], (unsigned long long)v);
        }
        fprintf(stderr, "\n");
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *st = getenv("KC_FUZZ_SELFTEST");
    const char *admit = getenv("KC_DIFF_ADMIT");
    static char small_path[] = "/tmp/kcfuzz-XXXXXX";
    static char kc_path[] = "/tmp/kcfuzz-XXXXXX";
    char *small, *kc;
    int i, j;

    (void)argc;
    (void)argv;
    tables_init();
    selftest = st != NULL && strcmp(st, "1") == 0;
    tracing = getenv("KC_FUZZ_TRACE") != NULL;
    skip_known = getenv("KC_FUZZ_SKIP_KNOWN") != NULL;
    small = conf_copy(small_path, 1);
    kc = conf_copy(kc_path, 0);
    for (i = 0; i < NSIDES; i++) {
        sides[i].libctx = load_ctx(selftest || i == SIDE_DEFAULT ? NULL
                                   : i == SIDE_KC ? kc : small);
        sides[i].hmac = EVP_MAC_fetch(sides[i].libctx, "HMAC", NULL);
        if (sides[i].hmac == NULL)
            abort();
        check_provider(i, EVP_MAC_get0_provider(sides[i].hmac));
        for (j = 0; j < NFAMS; j++) {
            sides[i].fam[j] = EVP_MAC_fetch(sides[i].libctx, fam_names[j],
                                            NULL);
            if (sides[i].fam[j] == NULL)
                abort();
            check_provider(i, EVP_MAC_get0_provider(sides[i].fam[j]));
        }
        for (j = 0; j < 3; j++) {
            sides[i].gcm[j] = EVP_CIPHER_fetch(sides[i].libctx, gcm_names[j],
                                               NULL);
            if (sides[i].gcm[j] == NULL)
                abort();
            check_provider(i, EVP_CIPHER_get0_provider(sides[i].gcm[j]));
        }
        for (j = 0; j < NAEADS; j++) {
            sides[i].aead[j] = EVP_CIPHER_fetch(sides[i].libctx,
                                                aead_names[j], NULL);
            if (sides[i].aead[j] == NULL)
                abort();
            check_provider(i, EVP_CIPHER_get0_provider(sides[i].aead[j]));
        }
    }
    unlink(small);
    unlink(kc);
    for (i = 0; i < NKEYS; i++)
        fill(key_init[i], BUFSZ, 100 + i);
    for (i = 0; i < NIVS; i++)
        fill(iv_init[i], BUFSZ, 200 + i);
    fill(pattern, sizeof(pattern), 7);
    fprintf(stderr, "fuzz_diff: %s vs keycache (%s%s%s)%s%s\n",
            side_name[0], KC_CONF, admit != NULL ? ", admit_after = " : "",
            admit != NULL ? admit : "",
            selftest ? " [SELFTEST: all sides default]" : "",
            skip_known ? " [skipping known keycache bugs]" : "");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static STATE st;
    pthread_t t;

    if (size < 2)
        return 0;
    memset(&st, 0, sizeof(st));
    st.rd.p = data + 1;
    st.rd.n = size - 1;
    st.overlap = data[0] & 1;
    memcpy(st.keys, key_init, sizeof(st.keys));
    if (pthread_create(&t, NULL, phase1, &st) != 0
        || pthread_join(t, NULL) != 0)
        abort();
    if (!st.overlap)
        run_phase2(&st);
    cov_seqops += (unsigned long)st.nops;
    if (tracing) {
        print_trace(&st);
        if (!selftest)
            print_counters();
    }
    return 0;
}

#ifdef KC_DIFF_MAIN
/* ---------------------------------------------------------------------- */
/* The differential test: seeded inputs instead of libFuzzer's            */

#include <strings.h>
#include <sys/wait.h>
#include <time.h>

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static unsigned long env_num(const char *name, unsigned long def)
{
    const char *v = getenv(name);

    return v != NULL && *v != '\0' ? strtoul(v, NULL, 0) : def;
}

/*
 * One family, in a process of its own: nseq inputs of up to 1 KiB of
 * seeded bytes (sequence i's from the seed, the family's name and i
 * alone, so that any one can be replayed), maxops ops each.
 */
static unsigned skew_max = 3;

static int run_family(const FAMILY *f, uint64_t seed, unsigned long nseq,
                      long one)
{
    static uint8_t buf[1024];
    uint64_t name = 14695981039346656037u;
    const char *c;
    unsigned long i;
    size_t len, j;
    time_t t0 = time(NULL);

    for (c = f->name; *c != '\0'; c++)
        name = (name ^ (unsigned char)*c) * 1099511628211u;
    only = f;
    nokey_from = 0xd0;
    LLVMFuzzerInitialize(NULL, NULL);
    for (i = 0; i < nseq; i++) {
        uint64_t x = seed * 0x2545f4914f6cdd1du ^ name ^ (i << 1);

        if (one >= 0 && i != (unsigned long)one)
            continue;
        uint64_t r = splitmix(&x);
        /* skew: 0 to 3 in 4 bytes small (0..15), which the decoder's
         * tables take as their first entries: the same few pooled keys,
         * ciphers and digests again, which is what the cache keeps */
        unsigned skew = (unsigned)(r >> 60) % (skew_max + 1);

        len = 64 + r % (sizeof(buf) - 63);
        for (j = 0; j < len; j++) {
            r = splitmix(&x);
            buf[j] = (r & 3) < skew ? (uint8_t)((r >> 8) & 15)
                                    : (uint8_t)(r >> 56);
        }
        snprintf(origin, sizeof(origin),
                 "diff_families: %s, KC_DIFF_SEED=%llu, sequence %lu "
                 "(replay: KC_DIFF_SEED=%llu KC_DIFF_SEQ=%lu diff_families %s)",
                 f->name, (unsigned long long)seed, i,
                 (unsigned long long)seed, i, f->name);
        LLVMFuzzerTestOneInput(buf, len);
    }
    printf("%-8s %lu sequences, %lu ops, %lu calls compared: %lu keyless "
           "inits, %lu keys given after one, %lu empty arrays, %lu NULL "
           "params, %lu repeated names (%lds)\n", f->name,
           one >= 0 ? 1 : nseq, cov_seqops, cov.ops, cov.keyless,
           cov.key_later, cov.empty, cov.null, cov.repeated,
           (long)(time(NULL) - t0));
    fflush(stdout);
    /* that the cached paths ran: keycache's counters */
    print_counters();
    if (one < 0 && (cov.keyless == 0 || cov.key_later == 0 || cov.empty == 0
                    || cov.null == 0 || cov.repeated == 0)) {
        printf("%-8s FAILED: a kind of call above never ran\n", f->name);
        return 1;
    }
    return 0;
}

/*
 * diff_families [FAMILY...]: every family of families[] (one per
 * configuration key of the registry: families_init()) or those named,
 * each in a child process, so that one family's divergence (an abort()
 * with its op trace) does not hide the others'.  KC_DIFF_SEED (default 1),
 * KC_DIFF_SEQS (3000 per family), KC_DIFF_OPS (ops per sequence),
 * KC_DIFF_SEQ (replay that sequence alone; with KC_FUZZ_TRACE=1 its trace),
 * KC_DIFF_ADMIT (keycache's admit_after: see conf_copy()).
 */
int main(int argc, char **argv)
{
    uint64_t seed = env_num("KC_DIFF_SEED", 1);
    unsigned long nseq = env_num("KC_DIFF_SEQS", 3000);
    long one = getenv("KC_DIFF_SEQ") != NULL ? (long)env_num("KC_DIFF_SEQ", 0)
                                              : -1;
    int f, a, failed = 0, ran = 0;

    tables_init();
    families_init();
    maxops = (int)env_num("KC_DIFF_OPS", MAXOPS);
    skew_max = (unsigned)env_num("KC_DIFF_SKEW", 3);
    if (maxops < 1 || maxops > MAXOPS)
        maxops = MAXOPS;
    printf("diff_families: seed %llu, %lu sequences of up to %d ops per "
           "family\n", (unsigned long long)seed, nseq, maxops);
    fflush(stdout);
    for (f = 0; f < NFAMILIES; f++) {
        pid_t pid;
        int status;

        for (a = 1; a < argc; a++)
            if (strcasecmp(argv[a], families[f].name) == 0)
                break;
        if (argc > 1 && a == argc)
            continue;
        ran++;
        pid = fork();
        if (pid == 0)
            _exit(run_family(&families[f], seed, nseq, one));
        if (pid < 0 || waitpid(pid, &status, 0) != pid
            || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("%-8s FAILED (%s)\n", families[f].name,
                   pid > 0 && WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                                  : "exit status");
            failed++;
        }
        fflush(stdout);
    }
    if (ran == 0) {
        fprintf(stderr, "no such family\n");
        return 2;
    }
    printf("diff_families: %d of %d families %s\n", failed ? failed : ran, ran,
           failed ? "FAILED" : "agree with the default");
    return failed != 0;
}
#endif
