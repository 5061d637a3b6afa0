/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcpatterns - the rows of the pattern catalogue (issues 33 and 34).
 *
 * Each row is a usage pattern a real program has, written as that program
 * writes it: application code passing a NULL library context.  Unlike
 * kcbench, which switches what NULL means per thread, a row runs in a
 * process of its own whose OPENSSL_CONF decides the arm, as on a machine
 * where keycache is switched on: bench/patterns.sh runs every row twice,
 * once with a config that activates `default` alone and once with the
 * same config plus keycache's lines, so that forks, new threads and
 * process start-up are measured as deployed.
 *
 *   kcpatterns --list
 *       name, kind, ops counted, the programs it stands for (tab-separated)
 *   kcpatterns --run NAME
 *       the row: setup and warm-up, then its measured ops between
 *       CALLGRIND_START_INSTRUMENTATION and CALLGRIND_STOP_INSTRUMENTATION
 *       (run under valgrind --tool=callgrind --instr-atstart=no), and
 *       "cpu_ns N ops N" for that region: the process's CPU time plus its
 *       waited-for children's
 *   kcpatterns --cpu NAME
 *       a `proc` row's CPU time: runs `--run NAME` as a new process
 *       PROC_RUNS times and prints the children's CPU time per process
 *   kcpatterns --version-key
 *       the running libcrypto's major.minor (the bounds file's key)
 *   kcpatterns --counters NAME
 *       the row (natively), then keycache's counters, if it is loaded
 *
 * Kinds: `proc` counts the whole process (started with instrumentation
 * on); `first` loads the config, then counts one call; `ops` warms up, then
 * counts N ops; `fork` counts N fork()s of a warmed parent, each child
 * doing one HMAC (or one op of the row's family) and _exit(0), in the
 * parent and the child (callgrind writes each child's counts to a file of
 * its own); `thread` counts N threads created, each doing the same, and
 * joined.  `ref` is counted as `ops` is, in the default arm only: a
 * reference figure patterns.sh prints beside a row's, not a row of its
 * own.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "keycache.h"

#if defined(__has_include)
# if __has_include(<valgrind/callgrind.h>)
#  include <valgrind/callgrind.h>
# endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
# define CALLGRIND_START_INSTRUMENTATION do { } while (0)
# define CALLGRIND_STOP_INSTRUMENTATION do { } while (0)
# define CALLGRIND_DUMP_STATS do { } while (0)
#endif

#define TAG_LEN   16
#define IV_LEN    12
#define MAX_MSG   1400
#define PROC_RUNS 20
#define FULL_KEYS 64            /* a full cache: cache_size = 64 */
#define MAX_KEYS  256

extern char **environ;

typedef enum { K_PROC, K_FIRST, K_OPS, K_FORK, K_THREAD, K_REF } KIND;
static const char *kind_names[] = { "proc", "first", "ops", "fork", "thread",
                                    "ref" };

typedef struct row_st ROW;
typedef int (*FN)(const ROW *r, long i);

struct row_st {
    const char *name;
    KIND kind;
    FN setup;               /* once, before anything is counted */
    FN op;                  /* one op; i counts from 0 over warm + measured */
    long warm, ops;         /* ops before counting, ops counted */
    int arg;                /* the row's number: k, key count, size, ... */
    const char *programs;
};

/* ---- state shared by the rows ---- */

static unsigned char msg[MAX_MSG], out[MAX_MSG + 64], ct[MAX_MSG];
static unsigned char tag[TAG_LEN], iv[IV_LEN];
static unsigned char keys[MAX_KEYS][64];        /* fixed pseudo-random keys */
static unsigned char longkey[200];
static uint64_t prng = 0x9e3779b97f4a7c15ULL;
static EVP_MAC *mac;
static EVP_MAC_CTX *mctx;
static EVP_CIPHER *cipher;
static EVP_CIPHER_CTX *cctx;

static void fill(unsigned char *b, size_t n)
{
    while (n-- > 0) {
        prng ^= prng << 13;
        prng ^= prng >> 7;
        prng ^= prng << 17;
        *b++ = (unsigned char)(prng >> 32);
    }
}

static void bump_iv(void)
{
    int i;

    for (i = IV_LEN - 1; i >= 4; i--)
        if (++iv[i] != 0)
            break;
}

/* EVP_Q_mac HMAC-SHA256 of 32 bytes under a key of len bytes */
static int qhmac(const unsigned char *key, size_t len)
{
    size_t l;

    return EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, len, msg, 32,
                     out, sizeof(out), &l) != NULL;
}

static int qmac_fam(const char *name, const char *sub, const unsigned char *key,
                    size_t keylen, int with_iv)
{
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    size_t l;

    if (with_iv) {
        bump_iv();
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, iv,
                                                 IV_LEN);
    }
    return EVP_Q_mac(NULL, name, NULL, sub, with_iv ? p : NULL, key, keylen,
                     msg, 32, out, sizeof(out), &l) != NULL;
}

static int seal(EVP_CIPHER_CTX *c, size_t len, int aead)
{
    int l1 = 0, l2 = 0;

    return EVP_EncryptUpdate(c, out, &l1, msg, (int)len)
           && EVP_EncryptFinal_ex(c, out + l1, &l2)
           && (!aead || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, TAG_LEN,
                                            out + l1 + l2));
}

/* a fresh context: cipher fetched once, key and IV in one init, seal, free */
static int aead_new(const unsigned char *key, int with_iv)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int ok;

    if (with_iv)
        bump_iv();
    ok = c != NULL && EVP_EncryptInit_ex(c, cipher, NULL, key,
                                         with_iv ? iv : NULL)
         && seal(c, 32, 1);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

static int mac_final(EVP_MAC_CTX *c, size_t len)
{
    size_t l;

    return EVP_MAC_update(c, msg, len)
           && EVP_MAC_final(c, out, &l, sizeof(out));
}

static OSSL_PARAM str_param(const char *name, const char *v)
{
    return OSSL_PARAM_construct_utf8_string(name, (char *)v, 0);
}

/* ---- setups ---- */

static int fetch_hmac(const ROW *r, long i)
{
    return (mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) != NULL;
}

static int fetch_named_mac(const char *name)
{
    return (mac = EVP_MAC_fetch(NULL, name, NULL)) != NULL;
}

static int fetch_cmac(const ROW *r, long i) { return fetch_named_mac("CMAC"); }
static int fetch_gmac(const ROW *r, long i) { return fetch_named_mac("GMAC"); }
static int fetch_kmac(const ROW *r, long i)
{
    return fetch_named_mac("KMAC128");
}

static int fetch_cipher(const char *name)
{
    return (cipher = EVP_CIPHER_fetch(NULL, name, NULL)) != NULL;
}

static int fetch_gcm(const ROW *r, long i) { return fetch_cipher("AES-256-GCM"); }
static int fetch_ocb(const ROW *r, long i) { return fetch_cipher("AES-256-OCB"); }
static int fetch_siv(const ROW *r, long i) { return fetch_cipher("AES-128-SIV"); }

/* the message a step-by-step GCM decrypt opens: keys[0], fixed iv */
static int gcm_ct(const ROW *r, long i)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l1 = 0, l2 = 0, ok;

    ok = fetch_gcm(r, i) && c != NULL
         && EVP_EncryptInit_ex(c, cipher, NULL, keys[0], iv)
         && EVP_EncryptUpdate(c, ct, &l1, msg, 32)
         && EVP_EncryptFinal_ex(c, ct + l1, &l2)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, tag);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

/* one GCM context, cipher set once, for key + IV per message */
static int gcm_kept(const ROW *r, long i)
{
    return fetch_gcm(r, i) && (cctx = EVP_CIPHER_CTX_new()) != NULL
           && EVP_EncryptInit_ex(cctx, cipher, NULL, NULL, NULL);
}

static int hmac_template(const ROW *r, long i)
{
    OSSL_PARAM p[2] = { str_param(OSSL_MAC_PARAM_DIGEST, "SHA256"),
                        OSSL_PARAM_END };

    return fetch_hmac(r, i) && (mctx = EVP_MAC_CTX_new(mac)) != NULL
           && EVP_MAC_init(mctx, keys[0], 32, p);
}

static int cmac_template(const ROW *r, long i)
{
    OSSL_PARAM p[2] = { str_param(OSSL_MAC_PARAM_CIPHER, "AES-256-CBC"),
                        OSSL_PARAM_END };

    return fetch_cmac(r, i) && (mctx = EVP_MAC_CTX_new(mac)) != NULL
           && EVP_MAC_init(mctx, keys[0], 32, p);
}

/* GMAC with its cipher set and no key yet */
static int gmac_template(const ROW *r, long i)
{
    OSSL_PARAM p[2] = { str_param(OSSL_MAC_PARAM_CIPHER, "AES-256-GCM"),
                        OSSL_PARAM_END };

    return fetch_gmac(r, i) && (mctx = EVP_MAC_CTX_new(mac)) != NULL
           && EVP_MAC_CTX_set_params(mctx, p);
}

/* GMAC keyed, with its cipher and IV */
static int gmac_keyed_template(const ROW *r, long i)
{
    OSSL_PARAM p[3] = { str_param(OSSL_MAC_PARAM_CIPHER, "AES-256-GCM"),
                        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                          iv, IV_LEN),
                        OSSL_PARAM_END };

    return fetch_gmac(r, i) && (mctx = EVP_MAC_CTX_new(mac)) != NULL
           && EVP_MAC_init(mctx, keys[0], 32, p);
}

static int kmac_template(const ROW *r, long i)
{
    return fetch_kmac(r, i) && (mctx = EVP_MAC_CTX_new(mac)) != NULL
           && EVP_MAC_init(mctx, keys[0], 32, NULL);
}

static int cipher_template(void)
{
    return (cctx = EVP_CIPHER_CTX_new()) != NULL
           && EVP_EncryptInit_ex(cctx, cipher, NULL, keys[0], NULL);
}

static int ocb_template(const ROW *r, long i)
{
    return fetch_ocb(r, i) && cipher_template();
}

static int gcm_template(const ROW *r, long i)
{
    return fetch_gcm(r, i) && cipher_template();
}

static int siv_template(const ROW *r, long i)
{
    return fetch_siv(r, i) && cipher_template();
}

/*
 * The parent of a fork row: r->arg keys, each used admit_after + 1 times,
 * after the thread's first misses, which are never counted (KC_APP_FIRST,
 * provider/layer/layer.h), spent on keys of their own.
 */
#define FIRST_MISSES 3

static int fork_parent(const ROW *r, long i)
{
    unsigned char spent[32];
    int k, n;

    if (r->arg == 0)
        return qhmac(keys[0], 32);              /* one HMAC, nothing cached */
    for (k = 0; k < FIRST_MISSES; k++) {
        memset(spent, 0xf0 + k, sizeof(spent));
        if (!qhmac(spent, sizeof(spent)))
            return 0;
    }
    for (k = 0; k < r->arg; k++)
        for (n = 0; n <= KEYCACHE_DEFAULT_ADMIT_AFTER; n++)
            if (!qhmac(keys[k], 32))
                return 0;
    return 1;
}

/* ---- ops ---- */

static int op_qhmac(const ROW *r, long i) { return qhmac(keys[0], 32); }

/* r->arg HMACs with one key: a batch of tokens checked with one secret */
static int op_qhmacs(const ROW *r, long i)
{
    int n;

    for (n = 0; n < r->arg; n++)
        if (!qhmac(keys[0], 32))
            return 0;
    return 1;
}

/* r->arg CMAC-AES-256s with one key: a provisioning tool's few MACs */
static int op_qcmacs(const ROW *r, long i)
{
    int n;

    for (n = 0; n < r->arg; n++)
        if (!qmac_fam("CMAC", "AES-256-CBC", keys[0], 32, 0))
            return 0;
    return 1;
}

/* the same with GMAC-AES-256 (an IV each) and with KMAC128 */
static int op_qgmacs(const ROW *r, long i)
{
    int n;

    for (n = 0; n < r->arg; n++)
        if (!qmac_fam("GMAC", "AES-256-GCM", keys[0], 32, 1))
            return 0;
    return 1;
}

static int op_qkmacs(const ROW *r, long i)
{
    int n;

    for (n = 0; n < r->arg; n++)
        if (!qmac_fam("KMAC128", NULL, keys[0], 32, 0))
            return 0;
    return 1;
}

/*
 * An AWS Signature V4 request signature: HMAC-SHA256 keyed with "AWS4"
 * and the secret over the date, then each result keying the next over the
 * region, the service, "aws4_request" and the string to sign: five keys,
 * each used once.
 */
static int op_sigv4(const ROW *r, long i)
{
    static const char *const data[] = {
        "20261206", "eu-west-1", "s3", "aws4_request",
        "AWS4-HMAC-SHA256\n20261206T120000Z\n"
        "20261206/eu-west-1/s3/aws4_request\n"
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
    };
    unsigned char key[4 + 40], next[EVP_MAX_MD_SIZE];
    size_t keylen = sizeof(key), n, l;

    memcpy(key, "AWS4", 4);
    memcpy(key + 4, keys[1], 40);
    for (n = 0; n < sizeof(data) / sizeof(data[0]); n++) {
        if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, keylen,
                      (const unsigned char *)data[n], strlen(data[n]), next,
                      sizeof(next), &l) == NULL)
            return 0;
        memcpy(key, next, l);
        keylen = l;
    }
    return 1;
}

static int op_qcmac(const ROW *r, long i)
{
    return qmac_fam("CMAC", "AES-256-CBC", keys[0], 32, 0);
}

static int op_qgmac(const ROW *r, long i)
{
    return qmac_fam("GMAC", "AES-256-GCM", keys[0], 32, 1);
}

static int op_qkmac(const ROW *r, long i)
{
    return qmac_fam("KMAC128", NULL, keys[0], 32, 0);
}

static int op_first_gcm(const ROW *r, long i)
{
    return fetch_gcm(r, i) && aead_new(keys[0], 1);
}

static int op_first_ocb(const ROW *r, long i)
{
    return fetch_ocb(r, i) && aead_new(keys[0], 1);
}

static int op_first_siv(const ROW *r, long i)
{
    return fetch_siv(r, i) && aead_new(keys[0], 0);
}

/* a keyed GMAC template copied twice: a short-lived tool's template */
static int op_first_gmac_copies(const ROW *r, long i)
{
    EVP_MAC_CTX *c;
    int n, ok;

    if (!gmac_keyed_template(r, i))
        return 0;
    for (n = 0, ok = 1; ok && n < 2; n++) {
        ok = (c = EVP_MAC_CTX_dup(mctx)) != NULL && mac_final(c, 32);
        EVP_MAC_CTX_free(c);
    }
    return ok;
}

static int op_aead_iv(const ROW *r, long i) { return aead_new(keys[0], 1); }
static int op_aead_noiv(const ROW *r, long i) { return aead_new(keys[0], 0); }

/* keys used exactly arg times, then dropped: a new key every arg ops */
static int op_ktimes(const ROW *r, long i)
{
    static unsigned char key[32];

    if (i % r->arg == 0)
        fill(key, sizeof(key));
    return qhmac(key, sizeof(key));
}

/* arg keys in rotation */
static int op_rotate(const ROW *r, long i)
{
    return qhmac(keys[i % r->arg], 32);
}

static int op_newkey_hmac(const ROW *r, long i)
{
    unsigned char key[32];

    fill(key, sizeof(key));
    return qhmac(key, sizeof(key));
}

static int op_newkey_cmac(const ROW *r, long i)
{
    unsigned char key[32];

    fill(key, sizeof(key));
    return qmac_fam("CMAC", "AES-256-CBC", key, sizeof(key), 0);
}

/* the same, AES-128, -192 and -256 in turn: a thread's base never fits */
static int op_newkey_cmac_sizes(const ROW *r, long i)
{
    static const char *const ciph[3] = {
        "AES-128-CBC", "AES-192-CBC", "AES-256-CBC"
    };
    unsigned char key[32];

    fill(key, sizeof(key));
    return qmac_fam("CMAC", ciph[i % 3], key, 16 + 8 * (size_t)(i % 3), 0);
}

static int op_newkey_gmac(const ROW *r, long i)
{
    unsigned char key[32];

    fill(key, sizeof(key));
    return qmac_fam("GMAC", "AES-256-GCM", key, sizeof(key), 1);
}

static int op_newkey_kmac(const ROW *r, long i)
{
    unsigned char key[32];

    fill(key, sizeof(key));
    return qmac_fam("KMAC128", NULL, key, sizeof(key), 0);
}

/* a new context and key per message, cipher fetched once; arg: with an IV */
static int op_newkey_aead(const ROW *r, long i)
{
    unsigned char key[32];

    fill(key, sizeof(key));
    return aead_new(key, r->arg);
}

/* the same, the cipher in one init and the key in the next */
static int op_newkey_aead_split(const ROW *r, long i)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    unsigned char key[32];
    int ok;

    fill(key, sizeof(key));
    ok = c != NULL && EVP_EncryptInit_ex(c, cipher, NULL, NULL, NULL)
         && EVP_EncryptInit_ex(c, NULL, NULL, key, NULL) && seal(c, 32, 1);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

/* the template kept: a keyless init per message, arg: with a new IV */
static int op_mac_steady(const ROW *r, long i)
{
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };

    if (r->arg) {
        bump_iv();
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, iv,
                                                 IV_LEN);
    }
    return EVP_MAC_init(mctx, NULL, 0, r->arg ? p : NULL)
           && mac_final(mctx, 32);
}

/* the keyed cipher template kept: a new IV alone per message */
static int op_cipher_steady(const ROW *r, long i)
{
    bump_iv();
    return EVP_EncryptInit_ex(cctx, NULL, NULL, NULL, iv)
           && seal(cctx, 32, 1);
}

static int op_longkey(const ROW *r, long i)
{
    return qhmac(longkey, sizeof(longkey));
}

static int op_newkey_longkey(const ROW *r, long i)
{
    unsigned char key[sizeof(longkey)];

    fill(key, sizeof(key));
    return qhmac(key, sizeof(key));
}

static int op_cmac_3des(const ROW *r, long i)
{
    return qmac_fam("CMAC", "DES-EDE3-CBC", keys[0], 24, 0);
}

/* OpenVPN: hmac_ctx_reset + init, the key in the params; arg = bytes */
static int op_rekey_params(const ROW *r, long i)
{
    OSSL_PARAM p[3] = {
        str_param(OSSL_MAC_PARAM_DIGEST, "SHA256"),
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, keys[0], 32),
        OSSL_PARAM_END };

    return EVP_MAC_init(mctx, NULL, 0, p) && mac_final(mctx, (size_t)r->arg);
}

static int op_rekey_keyarg(const ROW *r, long i)
{
    OSSL_PARAM p[2] = { str_param(OSSL_MAC_PARAM_DIGEST, "SHA256"),
                        OSSL_PARAM_END };

    return EVP_MAC_init(mctx, keys[0], 32, p)
           && mac_final(mctx, (size_t)r->arg);
}

/* a new MAC context per message, MAC fetched once */
static int mac_new(const OSSL_PARAM *p, int with_iv)
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_new(mac);
    OSSL_PARAM q[3];
    int ok, n = 0;

    if (p != NULL)
        q[n++] = p[0];
    if (with_iv) {
        bump_iv();
        q[n++] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, iv,
                                                   IV_LEN);
    }
    q[n] = OSSL_PARAM_construct_end();
    ok = c != NULL && EVP_MAC_init(c, keys[0], 32, q) && mac_final(c, 32);
    EVP_MAC_CTX_free(c);
    return ok;
}

static int op_new_cmac(const ROW *r, long i)
{
    OSSL_PARAM p = str_param(OSSL_MAC_PARAM_CIPHER, "AES-256-CBC");

    return mac_new(&p, 0);
}

static int op_new_gmac(const ROW *r, long i)
{
    OSSL_PARAM p = str_param(OSSL_MAC_PARAM_CIPHER, "AES-256-GCM");

    return mac_new(&p, 1);
}

static int op_new_kmac(const ROW *r, long i) { return mac_new(NULL, 0); }

/*
 * HAProxy 2.6's aes_gcm_dec: a new context, the cipher alone, the IV
 * length, the IV alone, then the key alone; arg = 1: freed, 0: never freed.
 */
static int op_gcm_steps(const ROW *r, long i)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l1 = 0, l2 = 0, ok;

    ok = c != NULL
         && EVP_DecryptInit_ex(c, cipher, NULL, NULL, NULL)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_IVLEN, IV_LEN, NULL)
         && EVP_DecryptInit_ex(c, NULL, NULL, NULL, iv)
         && EVP_DecryptInit_ex(c, NULL, NULL, keys[0], NULL)
         && EVP_DecryptUpdate(c, out, &l1, ct, 32)
         && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, tag)
         && EVP_DecryptFinal_ex(c, out + l1, &l2) > 0;
    if (r->arg)
        EVP_CIPHER_CTX_free(c);
    return ok;
}

static int op_encinit(const ROW *r, long i)
{
    bump_iv();
    return EVP_EncryptInit_ex(cctx, NULL, NULL, keys[0], iv) && seal(cctx, 32, 1);
}

static int op_mac_dup(const ROW *r, long i)
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_dup(mctx);
    int ok = c != NULL && mac_final(c, 32);

    EVP_MAC_CTX_free(c);
    return ok;
}

static int op_gmac_dup(const ROW *r, long i)
{
    EVP_MAC_CTX *c = EVP_MAC_CTX_dup(mctx);
    OSSL_PARAM p[2];
    int ok;

    bump_iv();
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, iv, IV_LEN);
    p[1] = OSSL_PARAM_construct_end();
    ok = c != NULL && EVP_MAC_init(c, keys[0], 32, p) && mac_final(c, 32);
    EVP_MAC_CTX_free(c);
    return ok;
}

static int op_cipher_copy(const ROW *r, long i)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int ok;

    if (r->arg)
        bump_iv();
    /* pyca sets the nonce's length on the copy before its init */
    ok = c != NULL && EVP_CIPHER_CTX_copy(c, cctx)
         && (!r->arg
             || (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_IVLEN, IV_LEN, NULL)
                 && EVP_EncryptInit_ex(c, NULL, NULL, NULL, iv)))
         && seal(c, 32, 1);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

/* `openssl version`: load the config, print the version */
static int op_version(const ROW *r, long i)
{
    return OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL)
           && printf("%s\n", OpenSSL_version(OPENSSL_VERSION)) > 0;
}

/*
 * One TLS 1.3 handshake over a memory BIO pair, client and server in this
 * process (the server's P-256 key and self-signed certificate below, made
 * once with openssl req; the client checks nothing), then one byte each
 * way: what a process's TLS costs a libssl program, its cipher suites'
 * fetches, key schedule (HKDF) and record protection.
 */
static const char tls_pem[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgUsU9qoLtACA0zgBk\n"
    "RXdI6fxB8beM3MOl1IiqWcpqDjyhRANCAASx3rrHZon4mW5R5jJneur4oNa5gQcy\n"
    "QA7yIVGArD3L5q1V5qjeCCVQXlKdIM5NfZ+SMchIhlPC7SRMvDlkLJEl\n"
    "-----END PRIVATE KEY-----\n"
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBgDCCASegAwIBAgIUGZYlBFZiMPDtal9jCnJgSjHWrR8wCgYIKoZIzj0EAwIw\n"
    "FTETMBEGA1UEAwwKa2NwYXR0ZXJuczAgFw0yNjEyMDYyMDE2NDlaGA8yMTI2MTEx\n"
    "MjIwMTY0OVowFTETMBEGA1UEAwwKa2NwYXR0ZXJuczBZMBMGByqGSM49AgEGCCqG\n"
    "SM49AwEHA0IABLHeusdmifiZblHmMmd66vig1rmBBzJADvIhUYCsPcvmrVXmqN4I\n"
    "JVBeUp0gzk19n5IxyEiGU8LtJEy8OWQskSWjUzBRMB0GA1UdDgQWBBTQdD7ErrDV\n"
    "W/sgrOAVFW0XaOeNcDAfBgNVHSMEGDAWgBTQdD7ErrDVW/sgrOAVFW0XaOeNcDAP\n"
    "BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIDu75TcVdTdKpwX1plz5\n"
    "4zg8E2YHfS4tiiQP+78DEzjnAiBR9i2lLHSR5Jvmq2MxGHFmm42RmflKGIn5I+gk\n"
    "Sw9CVA==\n"
    "-----END CERTIFICATE-----\n";

static int tls_pump(SSL *a, SSL *b)
{
    int ra = SSL_do_handshake(a), rb = SSL_do_handshake(b);

    if (ra == 1 && rb == 1)
        return 1;
    if ((ra != 1 && SSL_get_error(a, ra) != SSL_ERROR_WANT_READ)
        || (rb != 1 && SSL_get_error(b, rb) != SSL_ERROR_WANT_READ))
        return -1;
    return 0;
}

/* a client and a server SSL_CTX, at one TLS version (0: any) */
static int tls_ctxs(SSL_CTX **cctx, SSL_CTX **sctx, int version)
{
    BIO *pem = BIO_new_mem_buf(tls_pem, -1);
    EVP_PKEY *pkey = pem != NULL ? PEM_read_bio_PrivateKey(pem, NULL, NULL,
                                                           NULL) : NULL;
    X509 *cert = pem != NULL ? PEM_read_bio_X509(pem, NULL, NULL, NULL)
                             : NULL;
    int ok;

    *cctx = SSL_CTX_new(TLS_client_method());
    *sctx = SSL_CTX_new(TLS_server_method());
    ok = pkey != NULL && cert != NULL && *cctx != NULL && *sctx != NULL
         && SSL_CTX_use_certificate(*sctx, cert)
         && SSL_CTX_use_PrivateKey(*sctx, pkey)
         && (version == 0
             || (SSL_CTX_set_min_proto_version(*cctx, version)
                 && SSL_CTX_set_max_proto_version(*cctx, version)));
    X509_free(cert);
    EVP_PKEY_free(pkey);
    BIO_free(pem);
    return ok;
}

/* a connection between the two, handshake done */
static int tls_connect(SSL_CTX *cctx, SSL_CTX *sctx, SSL **c, SSL **s)
{
    BIO *cb = NULL, *sb = NULL;
    int n = 0, rounds;

    if ((*c = SSL_new(cctx)) == NULL || (*s = SSL_new(sctx)) == NULL
        || !BIO_new_bio_pair(&cb, 0, &sb, 0))
        return 0;
    SSL_set_bio(*c, cb, cb);
    SSL_set_bio(*s, sb, sb);
    SSL_set_connect_state(*c);
    SSL_set_accept_state(*s);
    for (rounds = 0; n == 0 && rounds < 16; rounds++)
        n = tls_pump(*c, *s);
    return n == 1;
}

/* |len| bytes of msg from a to b */
static int tls_send(SSL *a, SSL *b, size_t len)
{
    return SSL_write(a, msg, (int)len) == (int)len
           && SSL_read(b, out, (int)len) == (int)len
           && memcmp(out, msg, len) == 0;
}

static int op_tls(const ROW *r, long i)
{
    SSL_CTX *cctx = NULL, *sctx = NULL;
    SSL *c = NULL, *s = NULL;
    int ok = tls_ctxs(&cctx, &sctx, 0) && tls_connect(cctx, sctx, &c, &s)
             && tls_send(c, s, 1) && tls_send(s, c, 1);

    SSL_free(c);
    SSL_free(s);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
    return ok;
}

/* a server's (and its clients') steady state: SSL_CTXs kept */
static SSL_CTX *tls_cctx, *tls_sctx;
static SSL *tls_c, *tls_s;

static int tls_kept(const ROW *r, long i)
{
    return tls_ctxs(&tls_cctx, &tls_sctx, r->arg);
}

/*
 * The same without session tickets or a session cache: every HMAC the
 * thread computes is then one of a KDF's (the key schedule's)
 */
static int tls_kept_no_tickets(const ROW *r, long i)
{
    if (!tls_kept(r, i))
        return 0;
    SSL_CTX_set_options(tls_sctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_options(tls_cctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(tls_sctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_session_cache_mode(tls_cctx, SSL_SESS_CACHE_OFF);
    return 1;
}

/* one full handshake (no resumption) and a 32-byte request and response */
static int op_tls_handshake(const ROW *r, long i)
{
    SSL *c = NULL, *s = NULL;
    int ok = tls_connect(tls_cctx, tls_sctx, &c, &s)
             && tls_send(c, s, 32) && tls_send(s, c, 32);

    SSL_free(c);
    SSL_free(s);
    return ok;
}

static int tls_conn_kept(const ROW *r, long i)
{
    return tls_ctxs(&tls_cctx, &tls_sctx, TLS1_3_VERSION)
           && tls_connect(tls_cctx, tls_sctx, &tls_c, &tls_s);
}

/* one connection kept: a 1400-byte record each way */
static int op_tls_records(const ROW *r, long i)
{
    return tls_send(tls_c, tls_s, 1400) && tls_send(tls_s, tls_c, 1400);
}

/*
 * What a fork child or a new thread computes: one HMAC, unless the row's
 * setup (task_parent()) chose another family's task.
 */
static FN task_op;

static int task(void)
{
    return task_op != NULL ? task_op(NULL, 0) : qhmac(keys[0], 32);
}

/*
 * The parent of a fork or thread row of another family (r->arg in
 * fams[]): the task is one op of it with keys[0], and the parent warms up
 * with 8, past its first contexts, the key cached and hit.
 */
static int task_parent(const ROW *r, long i)
{
    static const struct { FN setup, op; } fams[] = {
        { NULL, op_qcmac }, { NULL, op_qgmac }, { NULL, op_qkmac },
        { fetch_gcm, op_aead_iv }, { fetch_ocb, op_aead_iv },
        { fetch_siv, op_aead_noiv },
    };
    int n;

    if (fams[r->arg].setup != NULL && !fams[r->arg].setup(r, i))
        return 0;
    task_op = fams[r->arg].op;
    for (n = 0; n < 8; n++)
        if (!task_op(r, i))
            return 0;
    return 1;
}

/*
 * Fork a child that computes one task (mac) or exits at once, and wait: 1
 * if it succeeded.  A child starts with a copy of callgrind's counts in
 * the parent: dump (and so zero) them first, so that each child's file
 * holds only what the child ran, and the parent's share is in the
 * parent's dumps.
 */
static int fork_child(int mac)
{
    pid_t pid;
    int st;

    CALLGRIND_DUMP_STATS;
    pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0)
        _exit(!mac || task() ? 0 : 1);
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st)
           && WEXITSTATUS(st) == 0;
}

static int op_fork(const ROW *r, long i)
{
    return fork_child(1);
}

/*
 * The parent forks a child that exits at once (fork()+exec() of a helper,
 * say), then computes its own HMAC: the parent's next hit after a fork.
 */
static int op_fork_then_mac(const ROW *r, long i)
{
    return fork_child(0) && qhmac(keys[0], 32);
}

/*
 * FULL_KEYS keyed HMAC-SHA256 contexts, each used once, as an application
 * keeps them; op_free_keyed() frees one per op.  Its default arm is the
 * default's own free of the context a fork child frees per entry of a full
 * parent cache (patterns.sh sets the two side by side).
 */
static EVP_MAC_CTX *held[FULL_KEYS];

static int keyed_held(const ROW *r, long i)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    OSSL_PARAM p[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    size_t l;
    int k, ok = mac != NULL;

    p[0] = OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0);
    for (k = 0; ok && k < FULL_KEYS; k++)
        ok = (held[k] = EVP_MAC_CTX_new(mac)) != NULL
             && EVP_MAC_init(held[k], keys[k], 32, p)
             && EVP_MAC_update(held[k], msg, 32)
             && EVP_MAC_final(held[k], out, &l, sizeof(out));
    EVP_MAC_free(mac);
    return ok;
}

static int op_free_keyed(const ROW *r, long i)
{
    EVP_MAC_CTX_free(held[i]);
    held[i] = NULL;
    return 1;
}

static void *thread_task(void *arg)
{
    return task() ? arg : NULL;
}

static int op_thread(const ROW *r, long i)
{
    pthread_t t;
    void *res = NULL;

    return pthread_create(&t, NULL, thread_task, msg) == 0
           && pthread_join(t, &res) == 0 && res == msg;
}

/* ---- the catalogue ---- */

/*
 * Warmed up over 16 keys: a thread makes its cache (its one-off cost) once
 * it counts a 9th key or frees an 8th context, not at its first
 * (cache/store.c, KC_LITE), and the rows count what each op costs from
 * then on.
 */
#define KT(k) \
    { "keys-used-" #k "x", K_OPS, NULL, op_ktimes, 16 * (k), 60 * (k), k, \
      "per-session and per-request keys: JWT/cookie keys per tenant, " \
      "Kerberos and SRTP session keys, keys derived per request" }

static const ROW rows[] = {
    /* issue 33: processes, threads, forks */
    { "fork-child-empty", K_FORK, fork_parent, op_fork, 2, 10, 0,
      "fork-per-connection servers (Apache prefork, Postfix, Dovecot), "
      "privilege-separated children (sshd), fork()+exec() from a process "
      "that used keycache" },
    { "fork-child-1key", K_FORK, fork_parent, op_fork, 2, 10, 1,
      "the same, the parent holding one cached key" },
    { "fork-child-64keys", K_FORK, fork_parent, op_fork, 2, 10, FULL_KEYS,
      "the same, the parent's cache full (64 keys)" },
    { "fork-then-parent-mac", K_FORK, fork_parent, op_fork_then_mac, 2, 10,
      1, "a parent that forks a helper per request (fork()+exec()) and "
      "computes an HMAC itself: CGI-style servers, Python's subprocess" },
#define TASK_ROWS(fam, i, what)                                          \
    { "fork-child-" fam, K_FORK, task_parent, op_fork, 2, 10, i,          \
      "fork-per-connection servers whose parent and children use " what }, \
    { "thread-per-task-" fam, K_THREAD, task_parent, op_thread, 2, 100, i,\
      "thread-per-request servers and worker pools using " what }
    TASK_ROWS("cmac", 0, "CMAC-AES-256 (EMV, IoT provisioning services)"),
    TASK_ROWS("gmac", 1, "GMAC-AES-256"),
    TASK_ROWS("kmac", 2, "KMAC128"),
    TASK_ROWS("gcm", 3, "AES-256-GCM, a fetched cipher and a new context "
              "per message (services sealing records or tokens)"),
    TASK_ROWS("ocb", 4, "AES-256-OCB"),
    TASK_ROWS("siv", 5, "AES-128-SIV (key wrapping)"),
    { "free-keyed-hmac", K_REF, keyed_held, op_free_keyed, 0, FULL_KEYS, 0,
      "the default's own free of a used keyed HMAC context, against which "
      "a fork child's work per entry of a full parent cache is judged" },
    { "thread-per-task", K_THREAD, NULL, op_thread, 2, 20, 0,
      "thread-per-request servers (MySQL/MariaDB thread-per-connection), "
      "worker pools that recycle threads (.NET, Java, Python)" },
    { "proc-openssl-version", K_PROC, NULL, op_version, 0, 1, 0,
      "`openssl version`: shell scripts, cron jobs, CGI, package scripts" },
    { "proc-openssl-version-distro", K_PROC, NULL, op_version, 0, 1, 0,
      "the same, keycache's lines in a distribution-sized config "
      "(bench/distro.cnf): a machine switched on in its own file" },
    { "proc-one-qmac", K_PROC, NULL, op_qhmac, 0, 1, 0,
      "a process doing one EVP_Q_mac: git/curl invocations, CGI, scripts" },
    { "proc-sigv4", K_PROC, NULL, op_sigv4, 0, 1, 0,
      "a process signing one AWS Signature V4 request, five HMACs each "
      "keyed by the last: curl --aws-sigv4, aws-cli, s3cmd" },
    { "proc-qmac-8x", K_PROC, NULL, op_qhmacs, 0, 1, 8,
      "a process checking 8 tokens (JWT, webhook signatures) with one "
      "secret: batch scripts, CGI" },
    { "proc-cmac-4x", K_PROC, NULL, op_qcmacs, 0, 1, 4,
      "a process computing 4 CMACs with one key: EMV/IoT provisioning "
      "tools, key-check values" },
    { "proc-gmac-4x", K_PROC, NULL, op_qgmacs, 0, 1, 4,
      "a process computing 4 GMACs with one key: short-lived signing and "
      "audit tools" },
    { "proc-kmac-4x", K_PROC, NULL, op_qkmacs, 0, 1, 4,
      "a process computing 4 KMAC128s with one key: short-lived tools "
      "(SP 800-185 KDFs, key confirmation)" },
    { "proc-tls-handshake", K_PROC, NULL, op_tls, 0, 1, 0,
      "a process making one TLS 1.3 connection, both ends in memory: curl, "
      "git, package managers, health checks" },
    { "tls13-handshake", K_OPS, tls_kept, op_tls_handshake, 10, 20,
      TLS1_3_VERSION, "a TLS 1.3 server and its clients, full handshakes "
      "(ECDHE, ECDSA P-256, HKDF key schedule, session tickets): nginx, "
      "HAProxy, Postfix, curl against them" },
    { "tls12-handshake", K_OPS, tls_kept_no_tickets, op_tls_handshake, 10,
      20, TLS1_2_VERSION, "the same at TLS 1.2 (TLS1-PRF over HMAC), "
      "without session tickets or cache: older clients, internal services "
      "pinned to 1.2, servers that turn resumption off" },
    { "tls13-records", K_OPS, tls_conn_kept, op_tls_records, 10, 200, 0,
      "one TLS 1.3 connection kept, a 1400-byte record each way per op: "
      "bulk transfer, proxies, database connections" },
    { "first-hmac", K_FIRST, NULL, op_qhmac, 0, 1, 0,
      "a fresh process's first HMAC (EVP_Q_mac): every short-lived client" },
    { "first-cmac", K_FIRST, NULL, op_qcmac, 0, 1, 0,
      "first CMAC-AES-256: short-lived tools (EMV/IoT provisioning)" },
    { "first-gmac", K_FIRST, NULL, op_qgmac, 0, 1, 0,
      "first GMAC-AES-256: short-lived tools" },
    { "first-kmac", K_FIRST, NULL, op_qkmac, 0, 1, 0,
      "first KMAC128: short-lived tools" },
    { "first-gcm", K_FIRST, NULL, op_first_gcm, 0, 1, 0,
      "first AES-256-GCM (fetch, new context, seal): short-lived clients" },
    { "first-ocb", K_FIRST, NULL, op_first_ocb, 0, 1, 0,
      "first AES-256-OCB: short-lived tools" },
    { "first-siv", K_FIRST, NULL, op_first_siv, 0, 1, 0,
      "first AES-128-SIV: short-lived tools" },
    { "first-gmac-copies", K_FIRST, NULL, op_first_gmac_copies, 0, 1, 0,
      "a first GMAC template keyed, then copied twice: short-lived tools "
      "built on rust-openssl" },
    /* issue 34: keys used a few times, re-keyed contexts, copies, misses */
    KT(1), KT(2), KT(3), KT(4), KT(8),
    { "rekey-hmac-params-32", K_OPS, hmac_template, op_rekey_params, 4, 500,
      32, "OpenVPN's data channel: hmac_ctx_reset + EVP_MAC_init(ctx, NULL, "
      "0, {digest, key}) per packet, 32 B" },
    { "rekey-hmac-params-1400", K_OPS, hmac_template, op_rekey_params, 4,
      500, 1400, "the same at 1400 B (a full packet)" },
    { "rekey-hmac-keyarg-32", K_OPS, hmac_template, op_rekey_keyarg, 4, 500,
      32, "a kept HMAC context re-keyed per message with "
      "EVP_MAC_init(ctx, key, len, {digest}), 32 B" },
    { "rekey-hmac-keyarg-1400", K_OPS, hmac_template, op_rekey_keyarg, 4,
      500, 1400, "the same at 1400 B" },
    { "gcm-steps-freed", K_OPS, gcm_ct, op_gcm_steps, 4, 500, 1,
      "a new GCM context set up in steps (cipher, IV length, IV, key), "
      "freed: .NET-style shims, HAProxy's converter with a free" },
    { "gcm-steps-never-freed", K_OPS, gcm_ct, op_gcm_steps, 4, 500, 0,
      "HAProxy 2.6's aes_gcm_dec converter: the same, never freed" },
    { "gcm-encinit-per-msg", K_OPS, gcm_kept, op_encinit, 4, 500, 0,
      "one GCM context, EncryptInit(ctx, NULL, NULL, key, iv) per message "
      "(applications keeping a context per connection)" },
    { "dup-keyed-hmac", K_OPS, hmac_template, op_mac_dup, 4, 500, 0,
      "EVP_MAC_CTX_dup of a keyed HMAC per message: libssl's record MAC, "
      "rust-openssl, pyca HMAC.copy()" },
    { "dup-keyed-cmac", K_OPS, cmac_template, op_mac_dup, 4, 500, 0,
      "EVP_MAC_CTX_dup of a keyed CMAC per message: pyca CMAC.copy(), "
      "rust-openssl" },
    /* (the first copies of these are the default's: tmpl.c, first_copy()) */
    { "dup-keyed-gmac", K_OPS, gmac_keyed_template, op_mac_dup, 8, 500, 0,
      "EVP_MAC_CTX_dup of a keyed GMAC per message: rust-openssl" },
    { "copy-keyed-ocb", K_OPS, ocb_template, op_cipher_copy, 4, 500, 1,
      "EVP_CIPHER_CTX_copy of a keyed AES-OCB per message: pyca AESOCB3" },
    { "copy-keyed-siv", K_OPS, siv_template, op_cipher_copy, 4, 500, 0,
      "EVP_CIPHER_CTX_copy of a keyed AES-SIV per message: pyca AESSIV" },
    { "dup-unkeyed-gmac", K_OPS, gmac_template, op_gmac_dup, 8, 500, 0,
      "an unkeyed GMAC template duplicated, then keyed, per message" },
    { "newkey-cmac", K_OPS, NULL, op_newkey_cmac, 4, 500, 0,
      "a new CMAC key every message: per-message derived keys" },
    { "newkey-cmac-sizes", K_OPS, NULL, op_newkey_cmac_sizes, 4, 500, 0,
      "the same, AES-128, -192 and -256 keys in turn: key-wrapping and "
      "derivation services serving several key sizes" },
    { "newkey-hmac", K_OPS, NULL, op_newkey_hmac, 4, 500, 0,
      "a new HMAC key every message: HKDF/TLS-PRF-like derivation loops" },
    { "newkey-gmac", K_OPS, NULL, op_newkey_gmac, 4, 500, 0,
      "a new GMAC key every message: per-message derived keys" },
    { "newkey-kmac", K_OPS, NULL, op_newkey_kmac, 4, 500, 0,
      "a new KMAC128 key every message: per-message derived keys" },
    { "newkey-gcm", K_OPS, fetch_gcm, op_newkey_aead, 4, 500, 1,
      "a new AES-256-GCM key and context every message: per-session or "
      "per-file keys (HPKE, age, envelope encryption)" },
    { "newkey-ocb", K_OPS, fetch_ocb, op_newkey_aead, 4, 500, 1,
      "a new AES-256-OCB key and context every message: per-message keys" },
    { "newkey-siv", K_OPS, fetch_siv, op_newkey_aead, 4, 500, 0,
      "a new AES-128-SIV key and context every message: per-record "
      "key wrapping" },
    { "newkey-siv-split", K_OPS, fetch_siv, op_newkey_aead_split, 4, 500, 0,
      "the same, the cipher set in one init and the key in the next "
      "(pyca, rust-openssl Crypter)" },
    { "steady-hmac", K_OPS, hmac_template, op_mac_steady, 4, 500, 0,
      "one keyed HMAC context kept, EVP_MAC_init(ctx, NULL, 0, NULL) per "
      "message: a MAC context per connection" },
    { "steady-cmac", K_OPS, cmac_template, op_mac_steady, 4, 500, 0,
      "one keyed CMAC context kept, a keyless init per message" },
    { "steady-gmac", K_OPS, gmac_keyed_template, op_mac_steady, 4, 500, 1,
      "one keyed GMAC context kept, a keyless init with a new IV per "
      "message" },
    { "steady-kmac", K_OPS, kmac_template, op_mac_steady, 4, 500, 0,
      "one keyed KMAC128 context kept, a keyless init per message" },
    { "steady-gcm", K_OPS, gcm_template, op_cipher_steady, 4, 500, 0,
      "one keyed AES-256-GCM context kept, EncryptInit(ctx, NULL, NULL, "
      "NULL, iv) per message: a cipher context per connection" },
    { "steady-ocb", K_OPS, ocb_template, op_cipher_steady, 4, 500, 0,
      "one keyed AES-256-OCB context kept, a new IV alone per message" },
    { "hmac-key-200B", K_OPS, NULL, op_longkey, 8, 500, 0,
      "HMAC-SHA256 under a 200-byte key: long secrets used as HMAC keys" },
    { "newkey-hmac-200B", K_OPS, NULL, op_newkey_longkey, 4, 500, 0,
      "a new 200-byte HMAC key every message: long per-request secrets" },
    { "cmac-3des", K_OPS, NULL, op_cmac_3des, 4, 500, 0,
      "CMAC with DES-EDE3-CBC, a family keycache passes through: EMV and "
      "payment MACs" },
    { "rotate-3-keys", K_OPS, NULL, op_rotate, 300, 600, 3,
      "3 keys in rotation: multi-tenant JWT verification, key rings" },
    { "rotate-5-keys", K_OPS, NULL, op_rotate, 300, 600, 5,
      "5 keys in rotation" },
    { "rotate-10-keys", K_OPS, NULL, op_rotate, 300, 600, 10,
      "10 keys in rotation" },
    /* the hot key in one-shot calls: what keycache was built for */
    { "hot-qmac-hmac-sha256", K_OPS, NULL, op_qhmac, 10, 500, 0,
      "EVP_Q_mac HMAC-SHA256, 32 B, one hot key: cookie/JWT/webhook "
      "signing in Ruby, Python, PHP, .NET" },
    { "hot-new-cmac", K_OPS, fetch_cmac, op_new_cmac, 10, 500, 0,
      "a new CMAC-AES-256 context per message, hot key" },
    { "hot-new-gmac", K_OPS, fetch_gmac, op_new_gmac, 10, 500, 0,
      "a new GMAC-AES-256 context per message, hot key" },
    { "hot-new-kmac", K_OPS, fetch_kmac, op_new_kmac, 10, 500, 0,
      "a new KMAC128 context per message, hot key" },
    { "hot-new-ocb", K_OPS, fetch_ocb, op_aead_iv, 10, 500, 0,
      "a new AES-256-OCB context per message, hot key" },
    { "hot-new-siv", K_OPS, fetch_siv, op_aead_noiv, 10, 500, 0,
      "a new AES-128-SIV context per message, hot key (pyca AESSIV)" },
};
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

static const ROW *find_row(const char *name)
{
    size_t i;

    for (i = 0; i < N_ROWS; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    fprintf(stderr, "kcpatterns: no row '%s' (see --list)\n", name);
    return NULL;
}

static double cpu_ns(void)
{
    struct timespec ts;
    struct rusage ru;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    getrusage(RUSAGE_CHILDREN, &ru);
    return ts.tv_sec * 1e9 + ts.tv_nsec
           + (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9
           + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static void init_inputs(void)
{
    size_t k;

    fill(msg, sizeof(msg));
    fill(iv, sizeof(iv));
    fill(longkey, sizeof(longkey));
    for (k = 0; k < MAX_KEYS; k++)
        fill(keys[k], sizeof(keys[k]));
}

static int run_row(const ROW *r)
{
    double t0, t1;
    long i;

    init_inputs();
    if (r->kind == K_PROC)      /* the whole process, as it is */
        return r->op(r, 0) ? 0 : 1;
    if (!OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL)) {
        fprintf(stderr, "kcpatterns: cannot load the config\n");
        return 1;
    }
    if (r->setup != NULL && !r->setup(r, 0))
        goto fail;
    for (i = 0; i < r->warm; i++)
        if (!r->op(r, i))
            goto fail;
    t0 = cpu_ns();
    CALLGRIND_START_INSTRUMENTATION;
    for (i = r->warm; i < r->warm + r->ops; i++)
        if (!r->op(r, i))
            break;
    CALLGRIND_STOP_INSTRUMENTATION;
    t1 = cpu_ns();
    if (i < r->warm + r->ops)
        goto fail;
    printf("cpu_ns %.0f ops %ld\n", t1 - t0, r->ops);
    return 0;
 fail:
    fprintf(stderr, "kcpatterns: %s failed\n", r->name);
    return 1;
}

/* a proc row's CPU time per process: PROC_RUNS new processes */
static int proc_cpu(const char *self, const ROW *r)
{
    char *argv[] = { (char *)self, "--run", (char *)r->name, NULL };
    double t0 = cpu_ns();
    int i, st;
    pid_t pid;

    for (i = 0; i < PROC_RUNS; i++) {
        int devnull = 0;
        posix_spawn_file_actions_t fa;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
        devnull = posix_spawn(&pid, self, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (devnull != 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)
            || WEXITSTATUS(st) != 0)
            return 1;
    }
    printf("cpu_ns %.0f ops %d\n", cpu_ns() - t0, PROC_RUNS);
    return 0;
}

static OSSL_PROVIDER *kc_prov;

static int find_kc(OSSL_PROVIDER *p, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(p), KEYCACHE_PROVIDER_NAME) == 0) {
        kc_prov = p;
        return 0;
    }
    return 1;
}

/* the row natively, then what keycache counted (hits, misses, ...) */
static int counters(const ROW *r)
{
    uint64_t v[5] = { 0, 0, 0, 0, 0 };
    OSSL_PARAM p[6];
    int rc = run_row(r);

    OSSL_PROVIDER_do_all(NULL, find_kc, NULL);
    if (kc_prov == NULL) {
        printf("keycache not loaded\n");
        return rc;
    }
    p[0] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_HITS, &v[0]);
    p[1] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_MISSES, &v[1]);
    p[2] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_EVICTIONS, &v[2]);
    p[3] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_PASSTHROUGH, &v[3]);
    p[4] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_ENTRIES, &v[4]);
    p[5] = OSSL_PARAM_construct_end();
    OSSL_PROVIDER_get_params(kc_prov, p);
    printf("hits %llu misses %llu evictions %llu passthrough %llu "
           "entries %llu\n", (unsigned long long)v[0],
           (unsigned long long)v[1], (unsigned long long)v[2],
           (unsigned long long)v[3], (unsigned long long)v[4]);
    return rc;
}

int main(int argc, char **argv)
{
    const ROW *r;
    size_t i;

    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (i = 0; i < N_ROWS; i++)
            printf("%s\t%s\t%ld\t%s\n", rows[i].name,
                   kind_names[rows[i].kind], rows[i].ops, rows[i].programs);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--version-key") == 0) {
        printf("%u.%u\n", (unsigned)OPENSSL_version_major(),
               (unsigned)OPENSSL_version_minor());
        return 0;
    }
    if (argc != 3 || (r = find_row(argv[2])) == NULL) {
        fprintf(stderr, "usage: kcpatterns --list | --version-key | "
                "--run NAME | --cpu NAME | --counters NAME\n");
        return 2;
    }
    if (strcmp(argv[1], "--run") == 0)
        return run_row(r);
    if (strcmp(argv[1], "--cpu") == 0)
        return r->kind == K_PROC ? proc_cpu(argv[0], r) : run_row(r);
    if (strcmp(argv[1], "--counters") == 0)
        return counters(r);
    return 2;
}
