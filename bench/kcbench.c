/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcbench - side-by-side benchmark of keycache against the default provider.
 *
 * The code under measurement is ordinary application code that passes a NULL
 * library context: EVP_Q_mac(NULL, ...), a fresh EVP_MAC_CTX or
 * EVP_CIPHER_CTX per message, EVP_aes_256_gcm().  What "NULL" means is
 * switched per thread with OSSL_LIB_CTX_set0_default() between a library
 * context holding only `default` and one loaded from the build tree's
 * openssl.cnf (default + keycache, default_properties = ?provider=keycache).
 *
 * Each row alternates its two arms A B A B ... for several short rounds so
 * that machine drift hits both sides alike, and reports the median of the
 * per-round ns/op.  ns/op is per thread: the summed time of all worker
 * threads (thread CPU time, or wall time with several threads; --clock)
 * divided by the ops they completed.  Before timing, every row runs
 * a few ops on both arms with identical inputs and requires byte-identical
 * output, so a fast but wrong arm is reported as a mismatch, not a speedup.
 *
 * --callgrind SCENARIO:SIZE:ARM:ITERS does the setup and then exactly ITERS
 * ops on one arm in the main thread, with no timing; bench/callgrind.sh
 * turns two such runs into instructions per op.
 *
 * Two sections measure something other than one-shot crypto: `tls` runs a
 * whole TLS handshake per op (client and server in one thread over a BIO
 * pair) and counts keycache's events per handshake, and `adversarial`
 * compares the same 16 hot keys after 4,000 random filler keys and after
 * 4,000 keys built to collide in the cache index, both in a keycache
 * context whose config is generated with cache_size = 4096.
 */
#define _POSIX_C_SOURCE 200809L   /* barriers, clock_gettime, nanosleep */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "keycache.h"

#ifndef KC_CONF
# define KC_CONF "openssl.cnf"
#endif

#if defined(__GNUC__)
# define KC_NOINLINE __attribute__((noinline))
#else
# define KC_NOINLINE
#endif

#define TAG_LEN      16
#define IV_LEN       12
#define COOKIE_PT    250                         /* cookie payload bytes */
#define COOKIE_SIGNED (IV_LEN + COOKIE_PT + TAG_LEN)
#define COOKIE_LEN   (COOKIE_SIGNED + 20)        /* + HMAC-SHA1 */
#define CHECK_OPS    3                           /* ops compared per arm */
#define MAX_SIZES    16
#define MAX_THREADS  16
#define MAX_SIZE     (1 << 24)
#define TLS_APP_BYTES 32                         /* each way, per handshake */
#define ADV_CACHE    4096                        /* cache_size of that arm */
#define ADV_FILL     4000                        /* filler keys */
#define ADV_HOT      16                          /* keys measured */
#define ADV_SIZE     32                          /* message bytes */
/* TLS counts: handshakes to reach a full cache, then handshakes counted */
#define TLS_WARM     16
#define TLS_COUNTED  16

/* ---- scenarios ---- */

typedef enum {
    OP_QMAC,        /* EVP_Q_mac(NULL, "HMAC", ...) */
    OP_MAC_FRESH,   /* fetch + CTX_new + init(key) + update + final + free */
    OP_MAC_REUSED,  /* one keyed EVP_MAC_CTX per thread, init(NULL key) */
    OP_ENC_FRESH,   /* EVP_CIPHER_CTX_new + EncryptInit(key, iv) + ... */
    OP_DEC_FRESH,   /* same, decrypt with tag check */
    OP_ENC_REUSED,  /* one keyed EVP_CIPHER_CTX per thread, new IV each op */
    OP_DEC_REUSED,
    OP_COOKIE,      /* verify, decrypt, re-encrypt, re-sign a cookie */
    OP_TLS12,       /* TLS 1.2 ECDHE-ECDSA-AES128-GCM full handshake */
    OP_TLS13,       /* TLS 1.3 full handshake */
    OP_HOT_RANDOM,  /* EVP_Q_mac on hot keys, after random filler keys */
    OP_HOT_ADV,     /* the same after keys that collide in the index */
    OP_MAC_LIVE,    /* fresh keyed EVP_MAC_CTX per op, freed N ops later */
    /* CMAC, GMAC, KMAC (sc->mac, sc->subalg): see "template families" */
    OP_FAM_QMAC,    /* EVP_Q_mac(NULL, mac, NULL, subalg, iv, ...) */
    OP_FAM_FRESH,   /* fetch + CTX_new + init(key, params) + ... + free */
    OP_FAM_NEW,     /* the same with the MAC fetched once per thread */
    OP_FAM_REUSED,  /* one keyed context per thread, init(NULL key) */
    /* AES-OCB, AES-SIV (the cipher of aead_rows[]), cipher fetched once */
    OP_AEAD_NEW,    /* CTX_new + EncryptInit(key, iv) + seal + free */
    OP_AEAD_REUSED, /* one keyed EVP_CIPHER_CTX per thread, new IV each op */
    /* ciphers keycache does not wrap (plain_rows[]): its pass-through, 3.5+ */
    OP_PLAIN_NEW,   /* CTX_new + EncryptInit(key, iv) + update + final + free */
    OP_PLAIN_REUSED,/* one keyed EVP_CIPHER_CTX per thread, new IV each op */
    OP_DOTNET       /* .NET's new AesGcm(key): seal, then open, as its shim */
} OPKIND;

typedef enum {
    KEYS_FIXED,     /* one key per thread */
    KEYS_NEW,       /* a new pseudo-random key every op */
    KEYS_RR         /* round-robin over 4 x cache_size keys */
} KEYPOLICY;

typedef enum {
    SEC_APP, SEC_MISS, SEC_FLOOR, SEC_STEADY, SEC_TLS, SEC_ADV, SEC_COUNT
} SECTION;

typedef struct {
    const char *name;
    SECTION sec;
    OPKIND op_a, op_b;
    const char *digest;     /* HMAC digest */
    int keylen;             /* AES key bytes */
    int legacy;             /* EVP_aes_*_gcm() instead of a prefetched one */
    KEYPOLICY keys;
    int quick;              /* part of --quick */
    int live;               /* OP_MAC_LIVE: contexts alive at once */
} SCENARIO;

static const SCENARIO scenarios[] = {
    { "qmac-sha1", SEC_APP, OP_QMAC, OP_QMAC, "SHA1", 0, 0, KEYS_FIXED, 0, 0 },
    { "qmac-sha256", SEC_APP, OP_QMAC, OP_QMAC, "SHA256", 0, 0, KEYS_FIXED, 1, 0 },
    { "qmac-sha512", SEC_APP, OP_QMAC, OP_QMAC, "SHA512", 0, 0, KEYS_FIXED, 0, 0 },
    { "hmac-fresh-sha1", SEC_APP, OP_MAC_FRESH, OP_MAC_FRESH, "SHA1", 0, 0,
      KEYS_FIXED, 0, 0 },
    { "hmac-fresh-sha256", SEC_APP, OP_MAC_FRESH, OP_MAC_FRESH, "SHA256", 0, 0,
      KEYS_FIXED, 0, 0 },
    { "hmac-fresh-sha512", SEC_APP, OP_MAC_FRESH, OP_MAC_FRESH, "SHA512", 0, 0,
      KEYS_FIXED, 0, 0 },
    { "gcm128-enc-legacy", SEC_APP, OP_ENC_FRESH, OP_ENC_FRESH, NULL, 16, 1,
      KEYS_FIXED, 0, 0 },
    { "gcm128-dec-legacy", SEC_APP, OP_DEC_FRESH, OP_DEC_FRESH, NULL, 16, 1,
      KEYS_FIXED, 0, 0 },
    { "gcm128-enc-prefetch", SEC_APP, OP_ENC_FRESH, OP_ENC_FRESH, NULL, 16, 0,
      KEYS_FIXED, 0, 0 },
    { "gcm128-dec-prefetch", SEC_APP, OP_DEC_FRESH, OP_DEC_FRESH, NULL, 16, 0,
      KEYS_FIXED, 0, 0 },
    { "gcm256-enc-legacy", SEC_APP, OP_ENC_FRESH, OP_ENC_FRESH, NULL, 32, 1,
      KEYS_FIXED, 1, 0 },
    { "gcm256-dec-legacy", SEC_APP, OP_DEC_FRESH, OP_DEC_FRESH, NULL, 32, 1,
      KEYS_FIXED, 1, 0 },
    { "gcm256-enc-prefetch", SEC_APP, OP_ENC_FRESH, OP_ENC_FRESH, NULL, 32, 0,
      KEYS_FIXED, 1, 0 },
    { "gcm256-dec-prefetch", SEC_APP, OP_DEC_FRESH, OP_DEC_FRESH, NULL, 32, 0,
      KEYS_FIXED, 1, 0 },
    { "cookie", SEC_APP, OP_COOKIE, OP_COOKIE, "SHA1", 32, 1, KEYS_FIXED, 1, 0 },
    /* .NET's AesGcm on Linux: the calls of its OpenSSL shim (see op_dotnet) */
    { "dotnet-gcm256", SEC_APP, OP_DOTNET, OP_DOTNET, NULL, 32, 1,
      KEYS_FIXED, 0, 0 },
    { "newkey-qmac-sha256", SEC_MISS, OP_QMAC, OP_QMAC, "SHA256", 0, 0,
      KEYS_NEW, 0, 0 },
    { "newkey-gcm256-enc", SEC_MISS, OP_ENC_FRESH, OP_ENC_FRESH, NULL, 32, 1,
      KEYS_NEW, 0, 0 },
    { "rrkeys-qmac-sha256", SEC_MISS, OP_QMAC, OP_QMAC, "SHA256", 0, 0,
      KEYS_RR, 0, 0 },
    { "rrkeys-gcm256-enc", SEC_MISS, OP_ENC_FRESH, OP_ENC_FRESH, NULL, 32, 1,
      KEYS_RR, 0, 0 },
    /*
     * Contexts with one key alive at once, as a garbage-collected runtime
     * (Ruby, .NET, Java) leaves them: each op makes, keys and uses a new
     * one, and every N ops all N are freed together.
     */
    { "live1-hmac-sha256", SEC_APP, OP_MAC_LIVE, OP_MAC_LIVE, "SHA256", 0, 0,
      KEYS_FIXED, 0, 1 },
    { "live8-hmac-sha256", SEC_APP, OP_MAC_LIVE, OP_MAC_LIVE, "SHA256", 0, 0,
      KEYS_FIXED, 0, 8 },
    { "live256-hmac-sha256", SEC_APP, OP_MAC_LIVE, OP_MAC_LIVE, "SHA256", 0,
      0, KEYS_FIXED, 0, 256 },
    { "floor-hmac-sha1", SEC_FLOOR, OP_QMAC, OP_MAC_REUSED, "SHA1", 0, 0,
      KEYS_FIXED, 0, 0 },
    { "floor-hmac-sha256", SEC_FLOOR, OP_QMAC, OP_MAC_REUSED, "SHA256", 0, 0,
      KEYS_FIXED, 1, 0 },
    { "floor-gcm256-enc", SEC_FLOOR, OP_ENC_FRESH, OP_ENC_REUSED, NULL, 32, 1,
      KEYS_FIXED, 1, 0 },
    { "floor-gcm256-dec", SEC_FLOOR, OP_DEC_FRESH, OP_DEC_REUSED, NULL, 32, 1,
      KEYS_FIXED, 0, 0 },
    { "steady-hmac-sha1", SEC_STEADY, OP_MAC_REUSED, OP_MAC_REUSED, "SHA1", 0,
      0, KEYS_FIXED, 0, 0 },
    { "steady-hmac-sha256", SEC_STEADY, OP_MAC_REUSED, OP_MAC_REUSED, "SHA256",
      0, 0, KEYS_FIXED, 1, 0 },
    { "steady-gcm256-enc", SEC_STEADY, OP_ENC_REUSED, OP_ENC_REUSED, NULL, 32,
      1, KEYS_FIXED, 1, 0 },
    { "steady-gcm256-dec", SEC_STEADY, OP_DEC_REUSED, OP_DEC_REUSED, NULL, 32,
      1, KEYS_FIXED, 0, 0 },
    { "tls-handshake-13", SEC_TLS, OP_TLS13, OP_TLS13, NULL, 0, 0,
      KEYS_FIXED, 0, 0 },
    { "tls-handshake-12", SEC_TLS, OP_TLS12, OP_TLS12, NULL, 0, 0,
      KEYS_FIXED, 0, 0 },
    { "advkeys-qmac-sha256", SEC_ADV, OP_HOT_RANDOM, OP_HOT_ADV, "SHA256", 0,
      0, KEYS_FIXED, 0, 0 },
    /*
     * Template families (provider/layer/tmpl.c): the MAC and its cipher are in
     * fam_rows[] below.  GMAC takes a new IV per message (a counter, as
     * GCM does); KMAC keys are 32 bytes.
     */
    { "qmac-cmac-aes128", SEC_APP, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 16, 0,
      KEYS_FIXED, 0, 0 },
    { "qmac-cmac-aes256", SEC_APP, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "macfresh-cmac-aes256", SEC_APP, OP_FAM_FRESH, OP_FAM_FRESH, NULL, 32,
      0, KEYS_FIXED, 0, 0 },
    { "qmac-kmac128", SEC_APP, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "qmac-kmac256", SEC_APP, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "macfresh-kmac128", SEC_APP, OP_FAM_FRESH, OP_FAM_FRESH, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "qmac-gmac-aes128", SEC_APP, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 16, 0,
      KEYS_FIXED, 0, 0 },
    { "qmac-gmac-aes256", SEC_APP, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "macfresh-gmac-aes256", SEC_APP, OP_FAM_FRESH, OP_FAM_FRESH, NULL, 32,
      0, KEYS_FIXED, 0, 0 },
    { "macnew-cmac-aes256", SEC_APP, OP_FAM_NEW, OP_FAM_NEW, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "macnew-kmac128", SEC_APP, OP_FAM_NEW, OP_FAM_NEW, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "macnew-gmac-aes256", SEC_APP, OP_FAM_NEW, OP_FAM_NEW, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "newkey-cmac-aes256", SEC_MISS, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 32, 0,
      KEYS_NEW, 0, 0 },
    { "newkey-kmac128", SEC_MISS, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 32, 0,
      KEYS_NEW, 0, 0 },
    { "newkey-gmac-aes256", SEC_MISS, OP_FAM_QMAC, OP_FAM_QMAC, NULL, 32, 0,
      KEYS_NEW, 0, 0 },
    { "steady-cmac-aes256", SEC_STEADY, OP_FAM_REUSED, OP_FAM_REUSED, NULL,
      32, 0, KEYS_FIXED, 0, 0 },
    { "steady-kmac128", SEC_STEADY, OP_FAM_REUSED, OP_FAM_REUSED, NULL, 32,
      0, KEYS_FIXED, 0, 0 },
    { "steady-gmac-aes256", SEC_STEADY, OP_FAM_REUSED, OP_FAM_REUSED, NULL,
      32, 0, KEYS_FIXED, 0, 0 },
    /*
     * Cipher families (provider/layer/ctmpl.c): the cipher is in aead_rows[];
     * OCB takes a new 12-byte IV per message, SIV none (keys are twice
     * the AES key; a keyed SIV context encrypts once, so no steady row).
     */
    { "aeadnew-ocb-aes128", SEC_APP, OP_AEAD_NEW, OP_AEAD_NEW, NULL, 16, 0,
      KEYS_FIXED, 0, 0 },
    { "aeadnew-ocb-aes256", SEC_APP, OP_AEAD_NEW, OP_AEAD_NEW, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "aeadnew-siv-aes128", SEC_APP, OP_AEAD_NEW, OP_AEAD_NEW, NULL, 32, 0,
      KEYS_FIXED, 0, 0 },
    { "aeadnew-siv-aes256", SEC_APP, OP_AEAD_NEW, OP_AEAD_NEW, NULL, 64, 0,
      KEYS_FIXED, 0, 0 },
    { "newkey-ocb-aes128", SEC_MISS, OP_AEAD_NEW, OP_AEAD_NEW, NULL, 16, 0,
      KEYS_NEW, 0, 0 },
    { "newkey-siv-aes128", SEC_MISS, OP_AEAD_NEW, OP_AEAD_NEW, NULL, 32, 0,
      KEYS_NEW, 0, 0 },
    { "steady-ocb-aes128", SEC_STEADY, OP_AEAD_REUSED, OP_AEAD_REUSED, NULL,
      16, 0, KEYS_FIXED, 0, 0 },
    /*
     * Ciphers keycache does not wrap (plain_rows[]): from OpenSSL 3.5 it
     * passes them through beside its EVP_SKEY key managers, as the
     * default's own functions; these rows show what that costs.  legacy:
     * EVP_aes_128_cbc(), fetched again by every init.
     */
    { "plainnew-cbc-aes128-legacy", SEC_APP, OP_PLAIN_NEW, OP_PLAIN_NEW,
      NULL, 16, 1, KEYS_FIXED, 0, 0 },
    { "plainnew-cbc-aes128", SEC_APP, OP_PLAIN_NEW, OP_PLAIN_NEW, NULL, 16, 0,
      KEYS_FIXED, 0, 0 },
    { "plainnew-chacha20-poly1305", SEC_APP, OP_PLAIN_NEW, OP_PLAIN_NEW, NULL,
      32, 0, KEYS_FIXED, 0, 0 },
    { "steady-cbc-aes128", SEC_STEADY, OP_PLAIN_REUSED, OP_PLAIN_REUSED, NULL,
      16, 0, KEYS_FIXED, 0, 0 },
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

/*
 * Library contexts an arm can run in.  SIDE_BIG (keycache with cache_size
 * ADV_CACHE) is made only when a row needs it.
 */
enum { SIDE_DEF, SIDE_KC, SIDE_COUNT, SIDE_BIG = SIDE_COUNT, SIDE_ALL };

/* One arm of a row: which library context is the default, and what name. */
typedef struct {
    const char *name;       /* for --callgrind and CSV */
    const char *column;     /* table column header */
    int side;
} ARM;

typedef struct {
    const char *title;
    ARM a, b;
    const char *ratio;      /* ratio column header: b / a */
} SECTION_INFO;

static const SECTION_INFO sections[SEC_COUNT] = {
    { "Unchanged application code: one-shot / fresh context per message",
      { "default", "default ns/op", SIDE_DEF },
      { "keycache", "keycache ns/op", SIDE_KC }, "kc/def" },
    { "Miss-heavy: a new key every op, or round-robin over a key set",
      { "default", "default ns/op", SIDE_DEF },
      { "keycache", "keycache ns/op", SIDE_KC }, "kc/def" },
    { "Floor: one reused context per thread vs one-shot, default provider only",
      { "oneshot", "one-shot ns/op", SIDE_DEF },
      { "reused", "reused ns/op", SIDE_DEF }, "reuse/1s" },
    { "Steady: the reused-context loop, keycache vs default",
      { "default", "default ns/op", SIDE_DEF },
      { "keycache", "keycache ns/op", SIDE_KC }, "kc/def" },
    { "TLS: one full handshake per op, client and server in one thread over a"
      " BIO pair",
      { "default", "default ns/op", SIDE_DEF },
      { "keycache", "keycache ns/op", SIDE_KC }, "kc/def" },
    { "Adversarial keys: 16 hot keys after 4,000 filler keys, keycache with"
      " cache_size 4096",
      { "random", "random ns/op", SIDE_BIG },
      { "adversarial", "adversar. ns/op", SIDE_BIG }, "adv/rand" },
};

static const size_t cookie_size = COOKIE_PT;

/* Message size of a scenario that ignores --sizes, else 0. */
static size_t fixed_size(const SCENARIO *sc)
{
    if (sc->op_a == OP_COOKIE)
        return cookie_size;
    if (sc->sec == SEC_TLS)
        return TLS_APP_BYTES;
    if (sc->sec == SEC_ADV)
        return ADV_SIZE;
    return 0;
}

/*
 * callgrind.sh divides its op counts by this: a handshake is some thousand
 * times an HMAC, and 2000 of them under callgrind would take an hour.
 */
static int callgrind_divisor(const SCENARIO *sc)
{
    return sc->sec == SEC_TLS ? 50 : 1;
}

/* ---- global state, set up once in main() ---- */

static OSSL_LIB_CTX *libctx[SIDE_ALL];
static OSSL_PROVIDER *def_prov, *kc_prov, *big_prov;
/* Ciphers fetched once up front in each library context. */
static EVP_CIPHER *prefetched[SIDE_COUNT][2];   /* [side][0=128, 1=256] */
static size_t rr_keys = 256;                    /* 4 x cache_size */
static char cache_size_str[24] = "unknown";     /* as the provider says */
static atomic_int stop_flag;

/* ---- per-thread worker ---- */

typedef struct worker_st WORKER;
typedef int (*OP_FN)(WORKER *w);

struct worker_st {
    const SCENARIO *sc;
    OPKIND op;
    int side;
    size_t len;
    uint32_t seed;
    uint64_t prng;
    pthread_t tid;
    pthread_barrier_t *barrier;

    unsigned char *in, *out, *ct;
    size_t outlen;                      /* bytes of out that are the result */
    unsigned char key[64];             /* AES-256-SIV's is 64 bytes */
    size_t keylen;
    unsigned char *keys;                /* KEYS_RR: rr_keys * keylen */
    size_t next_key;
    unsigned char iv[IV_LEN];           /* encrypt IV, counter in the tail */
    unsigned char div[IV_LEN];          /* fixed IV of the decrypt input */
    unsigned char dtag[TAG_LEN];        /* tag of the decrypt input */
    unsigned char mackey[20], enckey[32];
    unsigned char cookie[COOKIE_LEN];
    const EVP_CIPHER *cipher;
    EVP_MAC_CTX *mctx;
    EVP_MAC *mac;                       /* OP_MAC_LIVE: fetched once */
    EVP_MAC_CTX **live;                 /* OP_MAC_LIVE: ring of sc->live */
    unsigned long live_next;
    EVP_CIPHER_CTX *cctx;
    SSL_CTX *tls_server, *tls_client;   /* OP_TLS*: made once per worker */
    const char *macname, *subalg;       /* OP_FAM_*: from fam_rows[] */
    EVP_CIPHER *aead;                   /* OP_AEAD_*: fetched once */

    uint64_t ops;
    double ns, cpu_ns;                  /* wall and thread CPU time */
    int err;
};

static uint32_t prng_next(WORKER *w)
{
    uint64_t x = w->prng;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w->prng = x;
    return (uint32_t)(x >> 32);
}

static void prng_fill(WORKER *w, unsigned char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        buf[i] = (unsigned char)prng_next(w);
}

/* Per-message IV: a fixed prefix and a big-endian message counter. */
static void bump_iv(unsigned char *iv)
{
    int i;

    for (i = IV_LEN - 1; i >= 4; i--)
        if (++iv[i] != 0)
            break;
}

/* The key for this op, per the scenario's key policy. */
static const unsigned char *op_key(WORKER *w)
{
    switch (w->sc->keys) {
    case KEYS_NEW:
        prng_fill(w, w->key, w->keylen);
        return w->key;
    case KEYS_RR:
        return w->keys + (w->next_key++ % rr_keys) * w->keylen;
    case KEYS_FIXED:
        break;
    }
    return w->key;
}

static const EVP_CIPHER *legacy_gcm(int keylen)
{
    return keylen == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
}

static EVP_CIPHER *fetched_gcm(int side, int keylen)
{
    return prefetched[side][keylen == 16 ? 0 : 1];
}

/* ---- the application code being measured ---- */

static int op_qmac(WORKER *w)
{
    const unsigned char *key = op_key(w);

    if (EVP_Q_mac(NULL, "HMAC", NULL, w->sc->digest, NULL, key, w->keylen,
                  w->in, w->len, w->out, EVP_MAX_MD_SIZE, &w->outlen) == NULL)
        return 0;
    return 1;
}

/* What naive code does: fetch, new, keyed init, update, final, free. */
static int op_mac_fresh(WORKER *w)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[2];
    int ok;

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *)w->sc->digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    ok = ctx != NULL
         && EVP_MAC_init(ctx, op_key(w), w->keylen, params)
         && EVP_MAC_update(ctx, w->in, w->len)
         && EVP_MAC_final(ctx, w->out, &w->outlen, EVP_MAX_MD_SIZE);
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return ok;
}

/*
 * A new keyed context per op, left alive; every sc->live ops all of them are
 * freed together, as a garbage collector does.
 */
static int op_mac_live(WORKER *w)
{
    unsigned long i = w->live_next++ % (unsigned long)w->sc->live, j;
    EVP_MAC_CTX **slot = &w->live[i];
    OSSL_PARAM params[2];

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *)w->sc->digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    /* a collection: all N contexts of the last round are freed at once */
    if (i == 0)
        for (j = 0; j < (unsigned long)w->sc->live; j++) {
            EVP_MAC_CTX_free(w->live[j]);
            w->live[j] = NULL;
        }
    *slot = EVP_MAC_CTX_new(w->mac);
    return *slot != NULL
           && EVP_MAC_init(*slot, op_key(w), w->keylen, params)
           && EVP_MAC_update(*slot, w->in, w->len)
           && EVP_MAC_final(*slot, w->out, &w->outlen, EVP_MAX_MD_SIZE);
}

static int op_mac_reused(WORKER *w)
{
    return EVP_MAC_init(w->mctx, NULL, 0, NULL)
           && EVP_MAC_update(w->mctx, w->in, w->len)
           && EVP_MAC_final(w->mctx, w->out, &w->outlen, EVP_MAX_MD_SIZE);
}

/* Encrypt in -> out || tag with ctx already holding the key. */
static int gcm_seal(EVP_CIPHER_CTX *ctx, const unsigned char *in, size_t len,
                    unsigned char *out, size_t *outlen)
{
    int l1 = 0, l2 = 0;

    if (!EVP_EncryptUpdate(ctx, out, &l1, in, (int)len)
        || !EVP_EncryptFinal_ex(ctx, out + l1, &l2)
        || !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TAG_LEN,
                                out + l1 + l2))
        return 0;
    *outlen = (size_t)(l1 + l2) + TAG_LEN;
    return 1;
}

/* Decrypt and check the tag; a tag mismatch is an op failure. */
static int gcm_open(EVP_CIPHER_CTX *ctx, const unsigned char *in, size_t len,
                    const unsigned char *tag, unsigned char *out,
                    size_t *outlen)
{
    int l1 = 0, l2 = 0;

    if (!EVP_DecryptUpdate(ctx, out, &l1, in, (int)len)
        || !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, TAG_LEN,
                                (void *)tag)
        || EVP_DecryptFinal_ex(ctx, out + l1, &l2) <= 0)
        return 0;
    *outlen = (size_t)(l1 + l2);
    return 1;
}

static int op_enc_fresh(WORKER *w)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok;

    bump_iv(w->iv);
    ok = ctx != NULL
         && EVP_EncryptInit_ex(ctx, w->cipher, NULL, op_key(w), w->iv)
         && gcm_seal(ctx, w->in, w->len, w->out, &w->outlen);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static int op_dec_fresh(WORKER *w)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok;

    ok = ctx != NULL
         && EVP_DecryptInit_ex(ctx, w->cipher, NULL, w->key, w->div)
         && gcm_open(ctx, w->ct, w->len, w->dtag, w->out, &w->outlen);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static int op_enc_reused(WORKER *w)
{
    bump_iv(w->iv);
    return EVP_EncryptInit_ex(w->cctx, NULL, NULL, NULL, w->iv)
           && gcm_seal(w->cctx, w->in, w->len, w->out, &w->outlen);
}

static int op_dec_reused(WORKER *w)
{
    return EVP_DecryptInit_ex(w->cctx, NULL, NULL, NULL, w->div)
           && gcm_open(w->cctx, w->ct, w->len, w->dtag, w->out, &w->outlen);
}

/*
 * One .NET `new AesGcm(key)` and Encrypt or Decrypt, in the OpenSSL calls
 * its shim makes (System.Security.Cryptography.Native's pal_evp_cipher.c):
 * CTX_new, reset, an init with the cipher alone (direction 0), the key
 * with the direction kept (-1), the nonce length, the nonce with the
 * direction, the message, the tag, free.
 */
static EVP_CIPHER_CTX *dotnet_ctx(WORKER *w)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

    if (ctx != NULL
        && EVP_CIPHER_CTX_reset(ctx)
        && EVP_CipherInit_ex(ctx, w->cipher, NULL, NULL, NULL, 0)
        && EVP_CipherInit_ex(ctx, NULL, NULL, op_key(w), NULL, -1)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, IV_LEN, NULL))
        return ctx;
    EVP_CIPHER_CTX_free(ctx);
    return NULL;
}

/* Seal with a new object, then open the result with another: .NET's pair. */
static int op_dotnet(WORKER *w)
{
    EVP_CIPHER_CTX *ctx = dotnet_ctx(w);
    unsigned char *tag = w->out + w->len;
    size_t l;
    int ok;

    ok = ctx != NULL
         && EVP_CipherInit_ex(ctx, NULL, NULL, NULL, w->div, 1)
         && gcm_seal(ctx, w->in, w->len, w->out, &w->outlen);
    EVP_CIPHER_CTX_free(ctx);
    if (!ok || (ctx = dotnet_ctx(w)) == NULL)
        return 0;
    ok = EVP_CipherInit_ex(ctx, NULL, NULL, NULL, w->div, 0)
         && gcm_open(ctx, w->out, w->len, tag, w->ct, &l);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/*
 * One web request: the cookie is IV || GCM ciphertext || tag || HMAC-SHA1.
 * Verify the signature, decrypt, bump a counter in the payload (a "last
 * seen" field), re-encrypt under a new IV and re-sign.  All one-shot.
 */
static int cookie_sign(OSSL_LIB_CTX *ctx, WORKER *w, unsigned char *sig)
{
    size_t l;

    return EVP_Q_mac(ctx, "HMAC", NULL, "SHA1", NULL, w->mackey,
                     sizeof(w->mackey), w->cookie, COOKIE_SIGNED, sig, 20,
                     &l) != NULL;
}

static int cookie_seal(const EVP_CIPHER *cipher, WORKER *w,
                       const unsigned char *pt)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    size_t l;
    int ok;

    bump_iv(w->cookie);
    ok = ctx != NULL
         && EVP_EncryptInit_ex(ctx, cipher, NULL, w->enckey, w->cookie)
         && gcm_seal(ctx, pt, COOKIE_PT, w->cookie + IV_LEN, &l);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static int op_cookie(WORKER *w)
{
    unsigned char sig[20];
    EVP_CIPHER_CTX *ctx;
    size_t l;
    int ok, i;

    if (!cookie_sign(NULL, w, sig)
        || CRYPTO_memcmp(sig, w->cookie + COOKIE_SIGNED, sizeof(sig)) != 0)
        return 0;
    ctx = EVP_CIPHER_CTX_new();
    ok = ctx != NULL
         && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, w->enckey,
                               w->cookie)
         && gcm_open(ctx, w->cookie + IV_LEN, COOKIE_PT,
                     w->cookie + IV_LEN + COOKIE_PT, w->out, &l);
    EVP_CIPHER_CTX_free(ctx);
    if (!ok)
        return 0;
    for (i = 7; i >= 0; i--)
        if (++w->out[i] != 0)
            break;
    if (!cookie_seal(EVP_aes_256_gcm(), w, w->out)
        || !cookie_sign(NULL, w, w->cookie + COOKIE_SIGNED))
        return 0;
    memcpy(w->out, w->cookie, COOKIE_LEN);
    w->outlen = COOKIE_LEN;
    return 1;
}

/* EVP_Q_mac as op_qmac does, on the ADV_HOT keys in turn. */
static int op_qmac_hot(WORKER *w)
{
    const unsigned char *key = w->keys + (w->next_key++ % ADV_HOT) * w->keylen;

    return EVP_Q_mac(NULL, "HMAC", NULL, w->sc->digest, NULL, key, w->keylen,
                     w->in, w->len, w->out, EVP_MAX_MD_SIZE,
                     &w->outlen) != NULL;
}

static int tls_wants_io(SSL *s, int rc)
{
    int e = SSL_get_error(s, rc);

    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/*
 * One connection as a server and its client would make it: new SSL objects,
 * a full handshake, a request and its echo, free.  The output is the echo.
 */
static int op_tls(WORKER *w)
{
    SSL *c = SSL_new(w->tls_client), *s = SSL_new(w->tls_server);
    BIO *cb = NULL, *sb = NULL;
    int i, rc = 0, rs = 0, ok = 0, n = (int)w->len;

    if (c == NULL || s == NULL || !BIO_new_bio_pair(&cb, 0, &sb, 0))
        goto done;
    SSL_set_bio(c, cb, cb);
    SSL_set_bio(s, sb, sb);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    for (i = 0; i < 64 && (rc != 1 || rs != 1); i++) {
        if (rc != 1 && (rc = SSL_do_handshake(c)) <= 0
            && !tls_wants_io(c, rc))
            goto done;
        if (rs != 1 && (rs = SSL_do_handshake(s)) <= 0
            && !tls_wants_io(s, rs))
            goto done;
    }
    ok = rc == 1 && rs == 1
         && SSL_write(c, w->in, n) == n
         && SSL_read(s, w->ct, n) == n
         && SSL_write(s, w->ct, n) == n
         && SSL_read(c, w->out, n) == n;
    w->outlen = w->len;
done:
    SSL_free(c);
    SSL_free(s);
    return ok;
}

/* ---- cipher families: AES-OCB, AES-SIV ---- */

static const struct {
    const char *row, *cipher;
} aead_rows[] = {
    { "aeadnew-ocb-aes128", "AES-128-OCB" },
    { "aeadnew-ocb-aes256", "AES-256-OCB" },
    { "aeadnew-siv-aes128", "AES-128-SIV" },
    { "aeadnew-siv-aes256", "AES-256-SIV" },
    { "newkey-ocb-aes128", "AES-128-OCB" },
    { "newkey-siv-aes128", "AES-128-SIV" },
    { "steady-ocb-aes128", "AES-128-OCB" },
};

/* OCB takes this message's IV; SIV has none. */
static const unsigned char *aead_iv(WORKER *w)
{
    if (EVP_CIPHER_get_mode(w->aead) != EVP_CIPH_OCB_MODE)
        return NULL;
    bump_iv(w->iv);
    return w->iv;
}

static int op_aead_new(WORKER *w)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok;

    ok = ctx != NULL
         && EVP_EncryptInit_ex(ctx, w->aead, NULL, op_key(w), aead_iv(w))
         && gcm_seal(ctx, w->in, w->len, w->out, &w->outlen);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static int op_aead_reused(WORKER *w)
{
    return EVP_EncryptInit_ex(w->cctx, NULL, NULL, NULL, aead_iv(w))
           && gcm_seal(w->cctx, w->in, w->len, w->out, &w->outlen);
}

static int setup_aead(WORKER *w)
{
    size_t i;

    for (i = 0; i < sizeof(aead_rows) / sizeof(aead_rows[0]); i++)
        if (strcmp(aead_rows[i].row, w->sc->name) == 0)
            w->aead = EVP_CIPHER_fetch(NULL, aead_rows[i].cipher, NULL);
    if (w->aead == NULL)
        return 0;
    if (w->op != OP_AEAD_REUSED)
        return 1;
    return (w->cctx = EVP_CIPHER_CTX_new()) != NULL
           && EVP_EncryptInit_ex(w->cctx, w->aead, NULL, w->key, NULL);
}

/* ---- ciphers keycache does not wrap ---- */

static const struct {
    const char *row, *cipher;
} plain_rows[] = {
    { "plainnew-cbc-aes128-legacy", "AES-128-CBC" },
    { "plainnew-cbc-aes128", "AES-128-CBC" },
    { "plainnew-chacha20-poly1305", "ChaCha20-Poly1305" },
    { "steady-cbc-aes128", "AES-128-CBC" },
};

/* This message's IV: the counter IV, zero-padded to the cipher's length. */
static const unsigned char *plain_iv(WORKER *w, unsigned char iv[16])
{
    bump_iv(w->iv);
    memset(iv, 0, 16);
    memcpy(iv, w->iv, IV_LEN);
    return iv;
}

/* in -> out (|| tag for an AEAD) with ctx keyed and given its IV. */
static int plain_seal(WORKER *w, EVP_CIPHER_CTX *ctx)
{
    int l1 = 0, l2 = 0;

    if (EVP_CIPHER_get_flags(w->cipher) & EVP_CIPH_FLAG_AEAD_CIPHER)
        return gcm_seal(ctx, w->in, w->len, w->out, &w->outlen);
    if (!EVP_EncryptUpdate(ctx, w->out, &l1, w->in, (int)w->len)
        || !EVP_EncryptFinal_ex(ctx, w->out + l1, &l2))
        return 0;
    w->outlen = (size_t)(l1 + l2);
    return 1;
}

static int op_plain_new(WORKER *w)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char iv[16];
    int ok;

    ok = ctx != NULL
         && EVP_EncryptInit_ex(ctx, w->cipher, NULL, op_key(w),
                               plain_iv(w, iv))
         && plain_seal(w, ctx);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static int op_plain_reused(WORKER *w)
{
    unsigned char iv[16];

    return EVP_EncryptInit_ex(w->cctx, NULL, NULL, NULL, plain_iv(w, iv))
           && plain_seal(w, w->cctx);
}

static int setup_plain(WORKER *w)
{
    size_t i;

    for (i = 0; i < sizeof(plain_rows) / sizeof(plain_rows[0]); i++)
        if (strcmp(plain_rows[i].row, w->sc->name) == 0)
            w->aead = EVP_CIPHER_fetch(NULL, plain_rows[i].cipher, NULL);
    if (w->aead == NULL)
        return 0;
    /* what a program's EVP_aes_128_cbc() is: fetched at every init */
    w->cipher = w->sc->legacy ? EVP_aes_128_cbc() : w->aead;
    if (w->op != OP_PLAIN_REUSED)
        return 1;
    return (w->cctx = EVP_CIPHER_CTX_new()) != NULL
           && EVP_EncryptInit_ex(w->cctx, w->cipher, NULL, w->key, NULL);
}

/* ---- template families: CMAC, GMAC, KMAC ---- */

/* The MAC and cipher of each OP_FAM_* row, by the row's name. */
static const struct {
    const char *row, *mac, *subalg;
} fam_rows[] = {
    { "qmac-cmac-aes128", "CMAC", "AES-128-CBC" },
    { "qmac-cmac-aes256", "CMAC", "AES-256-CBC" },
    { "macfresh-cmac-aes256", "CMAC", "AES-256-CBC" },
    { "qmac-kmac128", "KMAC-128", NULL },
    { "qmac-kmac256", "KMAC-256", NULL },
    { "macfresh-kmac128", "KMAC-128", NULL },
    { "qmac-gmac-aes128", "GMAC", "AES-128-GCM" },
    { "qmac-gmac-aes256", "GMAC", "AES-256-GCM" },
    { "macfresh-gmac-aes256", "GMAC", "AES-256-GCM" },
    { "macnew-cmac-aes256", "CMAC", "AES-256-CBC" },
    { "macnew-kmac128", "KMAC-128", NULL },
    { "macnew-gmac-aes256", "GMAC", "AES-256-GCM" },
    { "newkey-cmac-aes256", "CMAC", "AES-256-CBC" },
    { "newkey-kmac128", "KMAC-128", NULL },
    { "newkey-gmac-aes256", "GMAC", "AES-256-GCM" },
    { "steady-cmac-aes256", "CMAC", "AES-256-CBC" },
    { "steady-kmac128", "KMAC-128", NULL },
    { "steady-gmac-aes256", "GMAC", "AES-256-GCM" },
};

static const char *fam_mac(const WORKER *w, int subalg)
{
    size_t i;

    for (i = 0; i < sizeof(fam_rows) / sizeof(fam_rows[0]); i++)
        if (strcmp(fam_rows[i].row, w->sc->name) == 0)
            return subalg ? fam_rows[i].subalg : fam_rows[i].mac;
    return NULL;
}

/* The cipher and, for GMAC, this message's IV; n params filled. */
static int fam_params(WORKER *w, OSSL_PARAM *p, int with_subalg)
{
    int n = 0;

    if (with_subalg && w->subalg != NULL)
        p[n++] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
                                                  (char *)w->subalg, 0);
    if (strcmp(w->macname, "GMAC") == 0) {
        bump_iv(w->iv);
        p[n++] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, w->iv,
                                                   IV_LEN);
    }
    p[n] = OSSL_PARAM_construct_end();
    return n;
}

static int op_fam_qmac(WORKER *w)
{
    const unsigned char *key = op_key(w);
    OSSL_PARAM p[3];
    int n = fam_params(w, p, 0);

    return EVP_Q_mac(NULL, w->macname, NULL, w->subalg,
                     n > 0 ? p : NULL, key, w->keylen, w->in, w->len,
                     w->out, EVP_MAX_MD_SIZE, &w->outlen) != NULL;
}

static int op_fam_fresh(WORKER *w)
{
    EVP_MAC *mac = w->mac != NULL ? w->mac
                   : EVP_MAC_fetch(NULL, w->macname, NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[3];
    int ok;

    fam_params(w, p, 1);
    ok = ctx != NULL
         && EVP_MAC_init(ctx, op_key(w), w->keylen, p)
         && EVP_MAC_update(ctx, w->in, w->len)
         && EVP_MAC_final(ctx, w->out, &w->outlen, EVP_MAX_MD_SIZE);
    EVP_MAC_CTX_free(ctx);
    if (mac != w->mac)
        EVP_MAC_free(mac);
    return ok;
}

static int op_fam_reused(WORKER *w)
{
    OSSL_PARAM p[3];
    int n = fam_params(w, p, 0);

    return EVP_MAC_init(w->mctx, NULL, 0, n > 0 ? p : NULL)
           && EVP_MAC_update(w->mctx, w->in, w->len)
           && EVP_MAC_final(w->mctx, w->out, &w->outlen, EVP_MAX_MD_SIZE);
}

static int setup_fam(WORKER *w)
{
    EVP_MAC *mac;
    OSSL_PARAM p[3];

    w->macname = fam_mac(w, 0);
    w->subalg = fam_mac(w, 1);
    if (w->macname == NULL)
        return 0;
    if (w->op == OP_FAM_NEW)
        return (w->mac = EVP_MAC_fetch(NULL, w->macname, NULL)) != NULL;
    if (w->op != OP_FAM_REUSED)
        return 1;
    mac = EVP_MAC_fetch(NULL, w->macname, NULL);
    fam_params(w, p, 1);
    w->mctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    EVP_MAC_free(mac);
    return w->mctx != NULL && EVP_MAC_init(w->mctx, w->key, w->keylen, p);
}

static OP_FN op_fn(OPKIND op)
{
    switch (op) {
    case OP_QMAC:
        return op_qmac;
    case OP_MAC_FRESH:
        return op_mac_fresh;
    case OP_MAC_REUSED:
        return op_mac_reused;
    case OP_AEAD_NEW:
        return op_aead_new;
    case OP_AEAD_REUSED:
        return op_aead_reused;
    case OP_PLAIN_NEW:
        return op_plain_new;
    case OP_PLAIN_REUSED:
        return op_plain_reused;
    case OP_ENC_FRESH:
        return op_enc_fresh;
    case OP_DEC_FRESH:
        return op_dec_fresh;
    case OP_ENC_REUSED:
        return op_enc_reused;
    case OP_DEC_REUSED:
        return op_dec_reused;
    case OP_COOKIE:
        return op_cookie;
    case OP_DOTNET:
        return op_dotnet;
    case OP_TLS12:
    case OP_TLS13:
        return op_tls;
    case OP_HOT_RANDOM:
    case OP_HOT_ADV:
        return op_qmac_hot;
    case OP_MAC_LIVE:
        return op_mac_live;
    case OP_FAM_QMAC:
        return op_fam_qmac;
    case OP_FAM_FRESH:
    case OP_FAM_NEW:
        return op_fam_fresh;
    case OP_FAM_REUSED:
        return op_fam_reused;
    }
    return NULL;
}

/* ---- worker setup, run in the worker's thread with its default set ---- */

static int is_cipher_op(OPKIND op)
{
    return op == OP_ENC_FRESH || op == OP_DEC_FRESH || op == OP_ENC_REUSED
           || op == OP_DEC_REUSED || op == OP_DOTNET;
}

/* Decrypt input made by the default provider, never by the code measured. */
static int make_ciphertext(WORKER *w)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char *buf = malloc(w->len + TAG_LEN);
    size_t l;
    int ok;

    ok = ctx != NULL && buf != NULL
         && EVP_EncryptInit_ex(ctx, fetched_gcm(SIDE_DEF, w->sc->keylen),
                               NULL, w->key, w->div)
         && gcm_seal(ctx, w->in, w->len, buf, &l);
    if (ok) {
        memcpy(w->ct, buf, w->len);
        memcpy(w->dtag, buf + w->len, TAG_LEN);
    }
    free(buf);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static int setup_reused(WORKER *w)
{
    OSSL_PARAM params[2];
    EVP_MAC *mac;

    if (w->op == OP_MAC_REUSED) {
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                     (char *)w->sc->digest, 0);
        params[1] = OSSL_PARAM_construct_end();
        mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        w->mctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        EVP_MAC_free(mac);
        return w->mctx != NULL
               && EVP_MAC_init(w->mctx, w->key, w->keylen, params);
    }
    w->cctx = EVP_CIPHER_CTX_new();
    if (w->cctx == NULL)
        return 0;
    if (w->op == OP_ENC_REUSED)
        return EVP_EncryptInit_ex(w->cctx, w->cipher, NULL, w->key, NULL);
    return EVP_DecryptInit_ex(w->cctx, w->cipher, NULL, w->key, NULL);
}

/* The first cookie is made with the default provider explicitly. */
static int setup_cookie(WORKER *w)
{
    unsigned char pt[COOKIE_PT];

    prng_fill(w, w->mackey, sizeof(w->mackey));
    prng_fill(w, w->enckey, sizeof(w->enckey));
    prng_fill(w, pt, sizeof(pt));
    prng_fill(w, w->cookie, IV_LEN);
    return cookie_seal(fetched_gcm(SIDE_DEF, 32), w, pt)
           && cookie_sign(libctx[SIDE_DEF], w, w->cookie + COOKIE_SIGNED);
}

/* A throwaway self-signed ECDSA P-256 certificate and its key. */
static int tls_cert(EVP_PKEY **pkey, X509 **cert)
{
    /* built apart: OpenSSL 4 hands out a certificate's names const */
    X509_NAME *name = NULL;
    int ok;

    *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    *cert = X509_new();
    ok = *pkey != NULL && *cert != NULL
         && X509_set_version(*cert, X509_VERSION_3)
         && ASN1_INTEGER_set(X509_get_serialNumber(*cert), 1)
         && X509_gmtime_adj(X509_getm_notBefore(*cert), 0) != NULL
         && X509_gmtime_adj(X509_getm_notAfter(*cert), 86400) != NULL
         && X509_set_pubkey(*cert, *pkey)
         && (name = X509_NAME_new()) != NULL
         && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                       (const unsigned char *)"kcbench",
                                       -1, -1, 0)
         && X509_set_subject_name(*cert, name)
         && X509_set_issuer_name(*cert, name)
         && X509_sign(*cert, *pkey, EVP_sha256()) > 0;
    X509_NAME_free(name);
    return ok;
}

static SSL_CTX *tls_ctx(int version)
{
    SSL_CTX *c = SSL_CTX_new_ex(NULL, NULL, TLS_method());

    if (c == NULL || !SSL_CTX_set_min_proto_version(c, version)
        || !SSL_CTX_set_max_proto_version(c, version)
        || (version == TLS1_2_VERSION
            && !SSL_CTX_set_cipher_list(c, "ECDHE-ECDSA-AES128-GCM-SHA256"))) {
        SSL_CTX_free(c);
        return NULL;
    }
    /* every op a full handshake: no tickets, no session cache */
    SSL_CTX_set_options(c, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(c, 0);
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
    return c;
}

/* Both ends' SSL_CTX in the thread's default library context. */
static int setup_tls(WORKER *w)
{
    int version = w->op == OP_TLS12 ? TLS1_2_VERSION : TLS1_3_VERSION;
    EVP_PKEY *pkey = NULL;
    X509 *cert = NULL;
    int ok;

    ok = tls_cert(&pkey, &cert)
       && (w->tls_server = tls_ctx(version)) != NULL
       && (w->tls_client = tls_ctx(version)) != NULL
       && SSL_CTX_use_certificate(w->tls_server, cert)
       && SSL_CTX_use_PrivateKey(w->tls_server, pkey);
  X509_free(cert);
  EVP_PKEY_free(pkey);
  return ok;
}

/*
 * The hot keys, then ADV_FILL filler keys, each keyed once so that it is
 * cached; then the hot keys, cached last.  Adversarial filler keys are one
 * base key whose last 8-byte word differs only in its top 16 bits.
 */
static int setup_hot(WORKER *w)
{
  unsigned char key[32], out[EVP_MAX_MD_SIZE];
  uint64_t word, flip;
  size_t i, l;

  w->keys = malloc(ADV_HOT * w->keylen);
  if (w->keys == NULL || w->keylen != sizeof(key))
      return 0;
  prng_fill(w, w->keys, ADV_HOT * w->keylen);
  prng_fill(w, key, sizeof(key));
  memcpy(&word, key + 24, 8);
  for (i = 0; i < ADV_FILL; i++) {
      if (w->op == OP_HOT_ADV) {
          flip = (uint64_t)(i + 1) << 48;
          word ^= flip;
          memcpy(key + 24, &word, 8);
          word ^= flip;
      } else {
          prng_fill(w, key, sizeof(key));
      }
      if (EVP_Q_mac(NULL, "HMAC", NULL, w->sc->digest, NULL, key,
                    sizeof(key), w->in, w->len, out, sizeof(out),
                    &l) == NULL)
          return 0;
  }
  for (i = 0; i < ADV_HOT; i++)
      if (!op_qmac_hot(w))
          return 0;
  return 1;
}

static int worker_setup(WORKER *w)
{
  size_t i;

  w->prng = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)w->seed << 20) ^ w->seed;
  w->keylen = w->sc->keylen != 0 ? (size_t)w->sc->keylen : 32;
  w->in = malloc(w->len + 1);
  w->ct = malloc(w->len + 1);
  w->out = malloc(w->len + TAG_LEN + EVP_MAX_MD_SIZE + COOKIE_LEN);
  if (w->in == NULL || w->ct == NULL || w->out == NULL)
      return 0;
  prng_fill(w, w->in, w->len);
  prng_fill(w, w->key, sizeof(w->key));
  prng_fill(w, w->iv, IV_LEN);
  prng_fill(w, w->div, IV_LEN);
  if (w->sc->keys == KEYS_RR) {
      w->keys = malloc(rr_keys * w->keylen);
      if (w->keys == NULL)
          return 0;
      for (i = 0; i < rr_keys; i++)
          prng_fill(w, w->keys + i * w->keylen, w->keylen);
  }
  if (w->op == OP_COOKIE)
      return setup_cookie(w);
  if (w->op == OP_TLS12 || w->op == OP_TLS13)
      return setup_tls(w);
  if (w->op == OP_HOT_RANDOM || w->op == OP_HOT_ADV)
      return setup_hot(w);
  if (w->op == OP_MAC_LIVE) {
      w->live = calloc((size_t)w->sc->live, sizeof(*w->live));
      w->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
      return w->live != NULL && w->mac != NULL;
  }
  if (is_cipher_op(w->op)) {
      w->cipher = w->sc->legacy ? legacy_gcm(w->sc->keylen)
                                : fetched_gcm(w->side, w->sc->keylen);
      if (w->cipher == NULL)
          return 0;
      if ((w->op == OP_DEC_FRESH || w->op == OP_DEC_REUSED)
          && !make_ciphertext(w))
          return 0;
  }
  if (w->op == OP_FAM_QMAC || w->op == OP_FAM_FRESH
      || w->op == OP_FAM_NEW || w->op == OP_FAM_REUSED)
      return setup_fam(w);
  if (w->op == OP_AEAD_NEW || w->op == OP_AEAD_REUSED)
      return setup_aead(w);
  if (w->op == OP_PLAIN_NEW || w->op == OP_PLAIN_REUSED)
      return setup_plain(w);
  if (w->op == OP_MAC_REUSED || w->op == OP_ENC_REUSED
      || w->op == OP_DEC_REUSED)
      return setup_reused(w);
  return 1;
}

static void worker_cleanup(WORKER *w)
{
  int i;

  for (i = 0; w->live != NULL && i < w->sc->live; i++)
      EVP_MAC_CTX_free(w->live[i]);
  free(w->live);
  w->live = NULL;
  w->live_next = 0;
  EVP_MAC_free(w->mac);
  w->mac = NULL;
  EVP_CIPHER_free(w->aead);
  w->aead = NULL;
  EVP_MAC_CTX_free(w->mctx);
  EVP_CIPHER_CTX_free(w->cctx);
  SSL_CTX_free(w->tls_server);
  SSL_CTX_free(w->tls_client);
  w->tls_server = w->tls_client = NULL;
  free(w->in);
  free(w->ct);
  free(w->out);
  free(w->keys);
  w->mctx = NULL;
  w->cctx = NULL;
  w->in = w->ct = w->out = w->keys = NULL;
}

static void worker_init(WORKER *w, const SCENARIO *sc, OPKIND op, int side,
                      size_t len, uint32_t seed)
{
  memset(w, 0, sizeof(*w));
  w->sc = sc;
  w->op = op;
  w->side = side;
  w->len = len;
  w->seed = seed;
}

static void report_failure(const WORKER *w, const char *what)
{
  fprintf(stderr, "kcbench: %s: %s failed on the %s library context\n",
          w->sc->name, what, w->side == SIDE_KC ? "keycache" : "default");
  ERR_print_errors_fp(stderr);
}

static double clock_ns(clockid_t id)
{
  struct timespec ts;

  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *worker_main(void *arg)
{
  WORKER *w = arg;
  OSSL_LIB_CTX *prev = OSSL_LIB_CTX_set0_default(libctx[w->side]);
  OP_FN fn = op_fn(w->op);
  double t0, c0;
  int ready = worker_setup(w);

  if (!ready)
      report_failure(w, "setup");
  /*
   * Wait even after a failed setup, or the others would block forever.
   * Between the two barriers the main thread reads the counters, so that
   * the keyed inits of setup do not count toward the hit rate.
   */
  pthread_barrier_wait(w->barrier);
  pthread_barrier_wait(w->barrier);
  t0 = clock_ns(CLOCK_MONOTONIC);
  c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  while (ready && !atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
      if (!fn(w)) {
          report_failure(w, "an op");
          ready = 0;
          break;
      }
      w->ops++;
  }
  w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  w->ns = clock_ns(CLOCK_MONOTONIC) - t0;
  w->err = !ready;
  worker_cleanup(w);
  OSSL_LIB_CTX_set0_default(prev);
  return NULL;
}

/* ---- keycache counters ---- */

typedef struct {
  uint64_t hits, misses, passthrough, evictions;
  int ok;
} COUNTERS;

/* The keycache provider whose counters an arm's side moves. */
static OSSL_PROVIDER *side_prov(int side)
{
  return side == SIDE_BIG ? big_prov : kc_prov;
}

static COUNTERS read_counters(OSSL_PROVIDER *prov)
{
  COUNTERS c = { 0, 0, 0, 0, 0 };
  OSSL_PARAM p[5];

  if (prov == NULL)
      return c;
  p[0] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_HITS, &c.hits);
  p[1] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_MISSES, &c.misses);
  p[2] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_PASSTHROUGH,
                                     &c.passthrough);
  p[3] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_EVICTIONS,
                                     &c.evictions);
  p[4] = OSSL_PARAM_construct_end();
  c.ok = OSSL_PROVIDER_get_params(prov, p)
         && OSSL_PARAM_modified(&p[0]) && OSSL_PARAM_modified(&p[1])
         && OSSL_PARAM_modified(&p[2]) && OSSL_PARAM_modified(&p[3]);
  return c;
}

/* ---- one timed round ---- */

typedef struct {
  const SCENARIO *sc;
  const ARM *arm;
  OPKIND op;
  size_t len;
  int threads;
} RUNSPEC;

/* What one round of one arm measured. */
typedef struct {
  double ns_op;           /* per-thread wall ns/op, < 0 on failure */
  double cpu_ns_op;       /* per-thread CPU ns/op */
  uint64_t ops;
  COUNTERS before, after; /* around the timed part */
} ROUND;

static ROUND run_round(const RUNSPEC *rs, double secs)
{
  WORKER w[MAX_THREADS];
  pthread_barrier_t barrier;
  struct timespec ts;
  ROUND res;
  double ns = 0, cpu_ns = 0;
  uint64_t ops = 0;
  int i, failed = 0;

  pthread_barrier_init(&barrier, NULL, (unsigned)rs->threads + 1);
  atomic_store(&stop_flag, 0);
  for (i = 0; i < rs->threads; i++) {
      worker_init(&w[i], rs->sc, rs->op, rs->arm->side, rs->len,
                  (uint32_t)i + 1);
      w[i].barrier = &barrier;
      if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
          fprintf(stderr, "kcbench: pthread_create failed\n");
          exit(2);
      }
  }
  pthread_barrier_wait(&barrier);
  res.before = read_counters(side_prov(rs->arm->side));
  pthread_barrier_wait(&barrier);
  ts.tv_sec = (time_t)secs;
  ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
      continue;
  atomic_store(&stop_flag, 1);
  for (i = 0; i < rs->threads; i++) {
      pthread_join(w[i].tid, NULL);
      failed |= w[i].err;
      ns += w[i].ns;
      cpu_ns += w[i].cpu_ns;
      ops += w[i].ops;
  }
  pthread_barrier_destroy(&barrier);
  res.after = read_counters(side_prov(rs->arm->side));
  res.ops = ops;
  res.ns_op = failed || ops == 0 ? -1 : ns / (double)ops;
  res.cpu_ns_op = ops == 0 ? -1 : cpu_ns / (double)ops;
  return res;
}

/* ---- correctness gate: both arms must produce identical bytes ---- */

static int run_ops_inline(WORKER *w, long n, unsigned char *dst, size_t *dlen)
{
  OSSL_LIB_CTX *prev = OSSL_LIB_CTX_set0_default(libctx[w->side]);
  OP_FN fn = op_fn(w->op);
  int ok = worker_setup(w);
  long i;

  if (!ok)
      report_failure(w, "setup");
  for (i = 0; ok && i < n; i++) {
      if (!fn(w)) {
          report_failure(w, "an op");
          ok = 0;
      } else if (dst != NULL) {
          memcpy(dst + *dlen, w->out, w->outlen);
          *dlen += w->outlen;
      }
  }
  worker_cleanup(w);
  OSSL_LIB_CTX_set0_default(prev);
  return ok;
}

/*
 * Setup, |warm| ops, then |n| ops whose keycache events land in *delta:
 * on the calling thread, whose cache outlives the count, so that entries
 * dropped at thread exit are not counted as evictions.
 */
static int run_ops_counted(WORKER *w, long warm, long n, COUNTERS *delta)
{
  OSSL_LIB_CTX *prev = OSSL_LIB_CTX_set0_default(libctx[w->side]);
  OSSL_PROVIDER *prov = side_prov(w->side);
  OP_FN fn = op_fn(w->op);
  COUNTERS before = { 0, 0, 0, 0, 0 }, after;
  int ok = worker_setup(w);
  long i;

  if (!ok)
      report_failure(w, "setup");
  for (i = 0; ok && i < warm + n; i++) {
      if (i == warm)
          before = read_counters(prov);
      if (!fn(w)) {
          report_failure(w, "an op");
          ok = 0;
      }
  }
  after = read_counters(prov);
  worker_cleanup(w);
  OSSL_LIB_CTX_set0_default(prev);
  delta->hits = after.hits - before.hits;
  delta->misses = after.misses - before.misses;
  delta->evictions = after.evictions - before.evictions;
  delta->passthrough = after.passthrough - before.passthrough;
  delta->ok = ok && before.ok && after.ok;
  return ok;
}

static int outputs_match(const RUNSPEC *a, const RUNSPEC *b)
{
  size_t cap = CHECK_OPS * (a->len + TAG_LEN + EVP_MAX_MD_SIZE + COOKIE_LEN);
  unsigned char *oa = malloc(cap), *ob = malloc(cap);
  size_t la = 0, lb = 0;
  WORKER w;
  int ok;

  worker_init(&w, a->sc, a->op, a->arm->side, a->len, 1);
  ok = oa != NULL && ob != NULL && run_ops_inline(&w, CHECK_OPS, oa, &la);
  worker_init(&w, b->sc, b->op, b->arm->side, b->len, 1);
  ok = ok && run_ops_inline(&w, CHECK_OPS, ob, &lb);
  if (ok && (la != lb || memcmp(oa, ob, la) != 0)) {
      fprintf(stderr, "kcbench: %s size %zu: %s output differs from %s\n",
              a->sc->name, a->len, b->arm->name, a->arm->name);
      ok = 0;
  }
  free(oa);
  free(ob);
  return ok;
}

/* ---- rows ---- */

typedef struct {
  int rounds;
  double round_secs;
  int cpu_clock;          /* 1: thread CPU time, 0: wall time */
  FILE *csv;
} OPTIONS;

typedef struct {
  double med, min, max;
} STATS;

static int cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;

  return (a > b) - (a < b);
}

static STATS stats_of(double *v, int n)
{
  STATS s;

  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  s.min = v[0];
  s.max = v[n - 1];
  s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return s;
}

static const char *sec_names[SEC_COUNT] = {
  "app", "miss", "floor", "steady", "tls", "adversarial"
};

static void print_section_header(SECTION sec)
{
  const SECTION_INFO *si = &sections[sec];

  printf("\n%s\n", si->title);
  if (sec == SEC_MISS)
      printf("(round-robin set: %zu keys per thread; cache_size %s)\n",
             rr_keys, cache_size_str);
  if (sec == SEC_TLS)
      printf("(per handshake: %d bytes each way; keycache events per "
             "handshake counted\nover %d handshakes on one thread after "
             "%d to fill its cache)\n", TLS_APP_BYTES, TLS_COUNTED,
             TLS_WARM);
  printf("%-20s %6s %3s %15s %15s %8s %8s", "scenario", "size", "thr",
         si->a.column, si->b.column, si->ratio, "hit rate");
  if (sec == SEC_TLS)
      printf(" %8s %8s %8s", "miss/hs", "evict/hs", "pass/hs");
  printf("\n");
}

/* A keycache context like SIDE_KC's but with cache_size = ADV_CACHE. */
static int make_big_side(void);

static int need_side(int side)
{
  if (side != SIDE_BIG || libctx[SIDE_BIG] != NULL)
      return 1;
  return make_big_side();
}

static void print_fail(const SCENARIO *sc, size_t size, int threads,
                     const char *why)
{
  printf("%-20s %6zu %3d   %s\n", sc->name, size, threads, why);
  fflush(stdout);
}

/* Every row's ratio, for the summary line and the SVG chart. */
#define MAX_RESULTS 512
typedef struct {
  const SCENARIO *sc;
  size_t size;
  int threads;
  double ratio;           /* right column / left column, medians */
} RESULT;
static RESULT results[MAX_RESULTS];
static int nresults;

static void run_row(const SCENARIO *sc, size_t size, int threads,
                  const OPTIONS *opt, int *status)
{
  const SECTION_INFO *si = &sections[sc->sec];
  RUNSPEC ra = { sc, &si->a, sc->op_a, size, threads };
  RUNSPEC rb = { sc, &si->b, sc->op_b, size, threads };
  double wa[64], wb[64], ca[64], cb[64];
  uint64_t kc_ops = 0, hits = 0, misses = 0, pass = 0, events;
  int r, counted = si->b.side != SIDE_DEF;
  char hr[16] = "-";
  STATS sa, sb, swa, swb, sca, scb;
  ROUND ro_a, ro_b;
  COUNTERS hs = { 0, 0, 0, 0, 0 };
  WORKER w;

  if (!need_side(si->a.side) || !need_side(si->b.side)) {
      print_fail(sc, size, threads, "SETUP FAILED (see stderr)");
      *status = 1;
      return;
  }
  counted = counted && side_prov(si->b.side) != NULL;
  if (!outputs_match(&ra, &rb)) {
      print_fail(sc, size, threads, "OUTPUT MISMATCH OR ERROR: not timed");
      *status = 1;
      return;
  }
  for (r = 0; r < opt->rounds; r++) {
      ro_a = run_round(&ra, opt->round_secs);
      ro_b = run_round(&rb, opt->round_secs);
      if (ro_a.ns_op < 0 || ro_b.ns_op < 0) {
          print_fail(sc, size, threads, "FAILED (see stderr)");
          *status = 1;
          return;
      }
      wa[r] = ro_a.ns_op;
      wb[r] = ro_b.ns_op;
      ca[r] = ro_a.cpu_ns_op;
      cb[r] = ro_b.cpu_ns_op;
      counted = counted && ro_b.before.ok && ro_b.after.ok;
      hits += ro_b.after.hits - ro_b.before.hits;
      misses += ro_b.after.misses - ro_b.before.misses;
      pass += ro_b.after.passthrough - ro_b.before.passthrough;
      kc_ops += ro_b.ops;
  }
  swa = stats_of(wa, opt->rounds);
  swb = stats_of(wb, opt->rounds);
  sca = stats_of(ca, opt->rounds);
  scb = stats_of(cb, opt->rounds);
  sa = opt->cpu_clock ? sca : swa;
  sb = opt->cpu_clock ? scb : swb;
  events = hits + misses + pass;
  /* Round down, so that a single miss never shows as 100.0% */
  if (counted && events > 0)
      snprintf(hr, sizeof(hr), "%.1f%%",
               (double)(hits * 1000 / events) / 10);
  printf("%-20s %6zu %3d %15.1f %15.1f %7.2fx %8s", sc->name, size,
         threads, sa.med, sb.med, sb.med / sa.med, hr);
  if (nresults < MAX_RESULTS) {
      RESULT *res = &results[nresults++];

      res->sc = sc;
      res->size = size;
      res->threads = threads;
      res->ratio = sb.med / sa.med;
  }
  if (sc->sec == SEC_TLS) {
      worker_init(&w, sc, sc->op_b, si->b.side, size, 1);
      if (!run_ops_counted(&w, TLS_WARM, TLS_COUNTED, &hs) || !hs.ok)
          *status = 1;
      printf(" %8.1f %8.1f %8.1f", (double)hs.misses / TLS_COUNTED,
             (double)hs.evictions / TLS_COUNTED,
             (double)hs.passthrough / TLS_COUNTED);
  }
  printf("\n");
  fflush(stdout);
  if (opt->csv == NULL)
      return;
  fprintf(opt->csv, "%s,%s,%zu,%d,%s,%s,%.1f,%.1f,%.1f,%s,%.1f,%.1f,%.1f,"
          "%.4f,%.1f,%.1f,%.1f,%.1f,", sec_names[sc->sec], sc->name, size,
          threads, opt->cpu_clock ? "cpu" : "wall", si->a.name, sa.med,
          sa.min, sa.max, si->b.name, sb.med, sb.min, sb.max,
          sb.med / sa.med, swa.med, swb.med, sca.med, scb.med);
  if (counted) {
      fprintf(opt->csv, "%llu,%llu,%llu,", (unsigned long long)hits,
              (unsigned long long)misses, (unsigned long long)pass);
      if (events > 0)
          fprintf(opt->csv, "%.4f,", (double)hits / (double)events);
      else
          fprintf(opt->csv, ",");
      fprintf(opt->csv, "%.3f,", (double)events / (double)kc_ops);
  } else {
      fprintf(opt->csv, ",,,,,");
  }
  fprintf(opt->csv, "%d,%.0f,", opt->rounds, opt->round_secs * 1000);
  if (hs.ok)
      fprintf(opt->csv, "%.2f,%.2f,%.2f\n",
              (double)hs.misses / TLS_COUNTED,
              (double)hs.evictions / TLS_COUNTED,
              (double)hs.passthrough / TLS_COUNTED);
  else
      fprintf(opt->csv, ",,\n");
  fflush(opt->csv);
}

/* ---- setup of the two library contexts ---- */

static const char *conf_path(void)
{
  const char *p = getenv("KC_CONF");

  return p != NULL && *p != '\0' ? p : KC_CONF;
}

static int find_kc(OSSL_PROVIDER *prov, void *arg)
{
  if (strcmp(OSSL_PROVIDER_get0_name(prov), KEYCACHE_PROVIDER_NAME) == 0) {
      *(OSSL_PROVIDER **)arg = prov;
      return 0;
  }
  return 1;
}

static int read_cache_size(OSSL_PROVIDER *prov, size_t *out)
{
  unsigned int v = 0;
  OSSL_PARAM p[2];

  p[0] = OSSL_PARAM_construct_uint(KEYCACHE_PARAM_CACHE_SIZE, &v);
  p[1] = OSSL_PARAM_construct_end();
  if (!OSSL_PROVIDER_get_params(prov, p) || !OSSL_PARAM_modified(p))
      return 0;
  *out = v;
  return 1;
}

static int setup_libctx(void)
{
  static const char *gcm[2] = { "AES-128-GCM", "AES-256-GCM" };
  int s, k;

  libctx[SIDE_DEF] = OSSL_LIB_CTX_new();
  libctx[SIDE_KC] = OSSL_LIB_CTX_new();
  if (libctx[SIDE_DEF] == NULL || libctx[SIDE_KC] == NULL)
      return 0;
  def_prov = OSSL_PROVIDER_load(libctx[SIDE_DEF], "default");
  if (def_prov == NULL)
      return 0;
  if (!OSSL_LIB_CTX_load_config(libctx[SIDE_KC], conf_path())) {
      fprintf(stderr, "kcbench: cannot load %s\n", conf_path());
      return 0;
  }
  OSSL_PROVIDER_do_all(libctx[SIDE_KC], find_kc, &kc_prov);
  if (kc_prov == NULL) {
      fprintf(stderr, "kcbench: %s did not load the keycache provider\n",
              conf_path());
      return 0;
  }
  for (s = 0; s < SIDE_COUNT; s++)
      for (k = 0; k < 2; k++)
          if ((prefetched[s][k] = EVP_CIPHER_fetch(libctx[s], gcm[k],
                                                   NULL)) == NULL)
              return 0;
  return 1;
}

/*
 * SIDE_BIG: the keycache config with its cache_size line replaced by
 * ADV_CACHE, written to a temporary file, loaded and removed again.
 */
static int make_big_side(void)
{
  char path[] = "/tmp/kcbench-XXXXXX", line[1024];
  FILE *in = fopen(conf_path(), "r"), *out = NULL;
  int fd, replaced = 0, ok;
  size_t size = 0;

  if (in == NULL || (fd = mkstemp(path)) < 0) {
      if (in != NULL)
          fclose(in);
      fprintf(stderr, "kcbench: cannot copy %s\n", conf_path());
      return 0;
  }
  if ((out = fdopen(fd, "w")) == NULL) {
      close(fd);
      unlink(path);
      fclose(in);
      return 0;
  }
  while (fgets(line, sizeof(line), in) != NULL) {
      if (strncmp(line, KEYCACHE_CONF_CACHE_SIZE,
                  strlen(KEYCACHE_CONF_CACHE_SIZE)) == 0) {
          fprintf(out, "%s = %d\n", KEYCACHE_CONF_CACHE_SIZE, ADV_CACHE);
          replaced = 1;
      } else {
          fputs(line, out);
      }
  }
  fclose(in);
  ok = fclose(out) == 0 && replaced
       && (libctx[SIDE_BIG] = OSSL_LIB_CTX_new()) != NULL
       && OSSL_LIB_CTX_load_config(libctx[SIDE_BIG], path);
  unlink(path);
  if (ok)
      OSSL_PROVIDER_do_all(libctx[SIDE_BIG], find_kc, &big_prov);
  if (!ok || big_prov == NULL || !read_cache_size(big_prov, &size)
      || size != ADV_CACHE) {
      fprintf(stderr, "kcbench: no keycache with cache_size %d from %s%s\n",
              ADV_CACHE, conf_path(),
              replaced ? "" : " (it has no cache_size line)");
      ERR_print_errors_fp(stderr);
      return 0;
  }
  return 1;
}

static void free_libctx(void)
{
  int s, k;

  OSSL_LIB_CTX_free(libctx[SIDE_BIG]);
  for (s = 0; s < SIDE_COUNT; s++)
      for (k = 0; k < 2; k++)
          EVP_CIPHER_free(prefetched[s][k]);
  OSSL_PROVIDER_unload(def_prov);
  OSSL_LIB_CTX_free(libctx[SIDE_KC]);
  OSSL_LIB_CTX_free(libctx[SIDE_DEF]);
}

/* Which provider a query-less fetch in the keycache context resolves to. */
static const char *resolved_mac(void)
{
  EVP_MAC *m = EVP_MAC_fetch(libctx[SIDE_KC], "HMAC", NULL);
  const char *n = m != NULL ? OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(m))
                            : "(none)";

  EVP_MAC_free(m);
  return n;
}

/* Other load on the machine makes wall-clock numbers noisy: say so. */
static void print_load(const OPTIONS *opt)
{
  FILE *f = fopen("/proc/loadavg", "r");
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  double load;

  if (f == NULL)
      return;
  if (fscanf(f, "%lf", &load) == 1) {
      printf("load average at start: %.2f on %ld online CPUs\n", load,
             ncpu);
      if (!opt->cpu_clock && load > 0.5 * (double)ncpu)
          printf("NOTE: the machine is busy; wall-clock ns/op include time "
                 "other processes ran\n(--clock cpu counts only this "
                 "process's thread CPU time)\n");
  }
  fclose(f);
}

static void print_banner(const OPTIONS *opt)
{
  const char *mac = resolved_mac();
  const char *ciph =
      OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(prefetched[SIDE_KC][1]));

  printf("kcbench: %s, config %s\n", OpenSSL_version(OPENSSL_VERSION),
         conf_path());
  printf("keycache context: HMAC from '%s', AES-256-GCM from '%s'\n", mac,
         ciph);
  if (strcmp(mac, KEYCACHE_PROVIDER_NAME) != 0
      || strcmp(ciph, KEYCACHE_PROVIDER_NAME) != 0)
      printf("WARNING: the keycache column is not (only) keycache\n");
  print_load(opt);
  printf("%d rounds x %.0f ms per arm, alternating; ns/op = median over "
         "rounds of per-thread %s time / ops;\nratio = right column / "
         "left column; hit rate = keycache hits / (hits + misses + "
         "passthrough)\nover the keycache rounds ('-' = no keycache arm "
         "or nothing counted)\n", opt->rounds, opt->round_secs * 1000,
         opt->cpu_clock ? "CPU" : "wall");
}

/* ---- command line ---- */

typedef struct {
  size_t sizes[MAX_SIZES];
  int nsizes;
  int threads[MAX_THREADS];
  int nthreads;
  const char *filter;
  const char *rows;               /* --rows: exact names, comma-separated */
  const char *csv;
  const char *svg;
  const char *callgrind;
  int quick, list;
  size_t rr_keys;                 /* --keys, 0 = 4 x cache_size */
  int round_set;                  /* so --quick keeps --round-ms */
  int clock_set;
} CLI;

static void usage(void)
{
  fprintf(stderr,
          "usage: kcbench [--quick] [--filter SUBSTR] [--rows NAME,NAME]\n"
          "               [--sizes 32,256]\n"
          "               [--threads 1,2] [--csv FILE] [--svg FILE]\n"
          "               [--rounds N]\n"
          "               [--round-ms MS] [--clock wall|cpu] [--keys N]\n"
          "               [--list]\n"
          "               [--callgrind SCENARIO:SIZE:ARM:ITERS]\n"
          "The keycache config is %s (override with KC_CONF=...).\n",
          KC_CONF);
  exit(2);
}

static int parse_list(const char *s, long *v, int max)
{
  int n = 0;
  char *end;

  while (*s != '\0' && n < max) {
      v[n] = strtol(s, &end, 10);
      if (end == s || v[n] <= 0 || (*end != ',' && *end != '\0'))
          return -1;
      n++;
      s = *end == ',' ? end + 1 : end;
  }
  return *s == '\0' ? n : -1;
}

static void parse_cli(int argc, char **argv, CLI *cli, OPTIONS *opt)
{
  long v[MAX_SIZES];
  int i, j, n;

  for (i = 1; i < argc; i++) {
      const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

      if (strcmp(a, "--quick") == 0) {
          cli->quick = 1;
      } else if (strcmp(a, "--list") == 0) {
          cli->list = 1;
      } else if (val == NULL) {
          usage();
      } else if (strcmp(a, "--filter") == 0) {
          cli->filter = val, i++;
      } else if (strcmp(a, "--rows") == 0) {
          cli->rows = val, i++;
      } else if (strcmp(a, "--csv") == 0) {
          cli->csv = val, i++;
      } else if (strcmp(a, "--svg") == 0) {
          cli->svg = val, i++;
      } else if (strcmp(a, "--callgrind") == 0) {
          cli->callgrind = val, i++;
      } else if (strcmp(a, "--clock") == 0) {
          if (strcmp(val, "cpu") != 0 && strcmp(val, "wall") != 0)
              usage();
          opt->cpu_clock = strcmp(val, "cpu") == 0, i++;
          cli->clock_set = 1;
      } else if (strcmp(a, "--keys") == 0) {
          if (parse_list(val, v, 1) != 1 || v[0] > MAX_SIZE)
              usage();
          cli->rr_keys = (size_t)v[0], i++;
      } else if (strcmp(a, "--rounds") == 0) {
          opt->rounds = atoi(val), i++;
          if (opt->rounds < 1 || opt->rounds > 64)
              usage();
      } else if (strcmp(a, "--round-ms") == 0) {
          opt->round_secs = atof(val) / 1000, i++;
          cli->round_set = 1;
          if (opt->round_secs <= 0)
              usage();
      } else if (strcmp(a, "--sizes") == 0) {
          if ((n = parse_list(val, v, MAX_SIZES)) <= 0)
              usage();
          for (j = 0; j < n; j++) {
              if (v[j] > MAX_SIZE)
                  usage();
              cli->sizes[j] = (size_t)v[j];
          }
          cli->nsizes = n, i++;
      } else if (strcmp(a, "--threads") == 0) {
          if ((n = parse_list(val, v, MAX_THREADS)) <= 0)
              usage();
          for (j = 0; j < n; j++) {
              if (v[j] > MAX_THREADS)
                  usage();
              cli->threads[j] = (int)v[j];
          }
          cli->nthreads = n, i++;
      } else {
          usage();
      }
  }
}

/* Is name one of the comma-separated names in list? */
static int in_list(const char *list, const char *name)
{
  size_t len = strlen(name);
  const char *p = list;

  for (;;) {
      size_t n = strcspn(p, ",");

      if (n == len && strncmp(p, name, len) == 0)
          return 1;
      if (p[n] == '\0')
          return 0;
      p += n + 1;
  }
}

static const SCENARIO *find_scenario(const char *name, size_t len)
{
  size_t i;

  for (i = 0; i < N_SCENARIOS; i++)
      if (strlen(scenarios[i].name) == len
          && strncmp(scenarios[i].name, name, len) == 0)
          return &scenarios[i];
  return NULL;
}

/*
 * The ops of a --callgrind run with keycache's events over them printed for
 * callgrind.sh.  Out of line, so that run_callgrind's frame (and with it
 * the alignment of every other scenario's buffers) stays as it was.
 */
static KC_NOINLINE int callgrind_counted(WORKER *w, long iters)
{
  COUNTERS d;

  if (!run_ops_counted(w, 0, iters, &d))
      return 1;
  printf("kc-counters: hits %llu misses %llu evictions %llu "
         "passthrough %llu\n", (unsigned long long)d.hits,
         (unsigned long long)d.misses, (unsigned long long)d.evictions,
         (unsigned long long)d.passthrough);
  return 0;
}

/* --callgrind SCENARIO:SIZE:ARM:ITERS - exactly ITERS ops, no timing. */
static int run_callgrind(const char *spec)
{
  const char *c1 = strchr(spec, ':'), *c2, *c3;
  const SCENARIO *sc;
  const SECTION_INFO *si;
  const ARM *arm;
  char armname[32];
  size_t size;
  long iters;
  WORKER w;

  if (c1 == NULL || (c2 = strchr(c1 + 1, ':')) == NULL
      || (c3 = strchr(c2 + 1, ':')) == NULL
      || (size_t)(c3 - c2 - 1) >= sizeof(armname)
      || (sc = find_scenario(spec, (size_t)(c1 - spec))) == NULL) {
      fprintf(stderr, "kcbench: bad --callgrind spec '%s'\n", spec);
      return 2;
  }
  size = (size_t)strtoul(c1 + 1, NULL, 10);
  memcpy(armname, c2 + 1, (size_t)(c3 - c2 - 1));
  armname[c3 - c2 - 1] = '\0';
  iters = strtol(c3 + 1, NULL, 10);
  si = &sections[sc->sec];
  if (strcmp(armname, si->a.name) == 0 || strcmp(armname, "a") == 0)
      arm = &si->a;
  else if (strcmp(armname, si->b.name) == 0 || strcmp(armname, "b") == 0)
      arm = &si->b;
  else
      arm = NULL;
  if (fixed_size(sc) != 0)
      size = fixed_size(sc);
  if (arm == NULL || size == 0 || size > MAX_SIZE || iters < 0) {
      fprintf(stderr, "kcbench: bad --callgrind spec '%s' (arms of %s: "
              "%s, %s)\n", spec, sc->name, si->a.name, si->b.name);
      return 2;
  }
  if (!need_side(arm->side))
      return 2;
  worker_init(&w, sc, arm == &si->a ? sc->op_a : sc->op_b, arm->side, size,
              1);
  if (sc->sec == SEC_TLS && arm->side != SIDE_DEF)
      return callgrind_counted(&w, iters);
  return run_ops_inline(&w, iters, NULL, NULL) ? 0 : 1;
}

static void list_scenarios(void)
{
  size_t i;

  for (i = 0; i < N_SCENARIOS; i++) {
      const SCENARIO *sc = &scenarios[i];

      printf("%s %s %s %zu %d\n", sc->name, sections[sc->sec].a.name,
             sections[sc->sec].b.name, fixed_size(sc),
             callgrind_divisor(sc));
  }
}

/* Default sizes and threads, and which rows --quick keeps. */
static void apply_defaults(CLI *cli, OPTIONS *opt)
{
  static const size_t all_sizes[] = { 32, 256, 1024, 16384 };
  static const size_t quick_sizes[] = { 32, 256 };
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int i;

  if (cli->nsizes == 0) {
      const size_t *s = cli->quick ? quick_sizes : all_sizes;
      int n = cli->quick ? 2 : 4;

      for (i = 0; i < n; i++)
          cli->sizes[i] = s[i];
      cli->nsizes = n;
  }
  if (cli->nthreads == 0) {
      cli->threads[cli->nthreads++] = 1;
      if (ncpu > MAX_THREADS)
          ncpu = MAX_THREADS;
      if (!cli->quick && ncpu > 1)
          cli->threads[cli->nthreads++] = (int)ncpu;
  }
  if (cli->quick && !cli->round_set)
      opt->round_secs = 0.03;
  /*
   * Single-threaded rows have no lock waits for CPU time to hide, and
   * CPU time is immune to other processes' load; with several threads
   * wall time is the honest measure.
   */
  if (!cli->clock_set) {
      opt->cpu_clock = 1;
      for (i = 0; i < cli->nthreads; i++)
          if (cli->threads[i] > 1)
              opt->cpu_clock = 0;
  }
}

static int size_wanted(const CLI *cli, const SCENARIO *sc, size_t size)
{
  /* --quick measures floor and steady at one size only */
  if (cli->quick && (sc->sec == SEC_FLOOR || sc->sec == SEC_STEADY))
      return size == cli->sizes[cli->nsizes - 1];
  return 1;
}

/*
 * One line a person can quote: per section comparing keycache with
 * default, the best and worst ratio and the rows they come from.
 */
static void print_summary(void)
{
  static const SECTION order[] = { SEC_APP, SEC_MISS, SEC_STEADY, SEC_TLS };
  size_t i;
  int k, n, best, worst;
  const char *sep = "";

  printf("\nsummary (keycache / default time, lower is better):");
  for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
      for (k = 0, n = 0, best = worst = -1; k < nresults; k++) {
          if (results[k].sc->sec != order[i])
              continue;
          n++;
          if (best < 0 || results[k].ratio < results[best].ratio)
              best = k;
          if (worst < 0 || results[k].ratio > results[worst].ratio)
              worst = k;
      }
      if (n == 0)
          continue;
      printf("%s %s %.2fx (%s/%zu) to %.2fx (%s/%zu)", sep,
             sec_names[order[i]], results[best].ratio,
             results[best].sc->name, results[best].size,
             results[worst].ratio, results[worst].sc->name,
             results[worst].size);
      sep = ";";
  }
  printf("\n");
}

/*
 * A horizontal bar per row, its length the ratio, with a line at 1.00x:
 * green bars (keycache faster) end left of it, red ones right.  Plain SVG,
 * written by hand: no dependency.
 */
static int write_svg(const char *path)
{
  const int left = 260, width = 420, bar = 16, gap = 6, top = 40;
  double max = 1.25;
  FILE *f;
  int k, y, h;

  for (k = 0; k < nresults; k++)
      if (results[k].ratio > max)
          max = results[k].ratio;
  if ((f = fopen(path, "w")) == NULL)
      return 0;
  h = top + nresults * (bar + gap) + 30;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n",
          left + width + 80, h);
  fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">kcbench: keycache "
          "time / default time per row (lower is better)</text>\n");
  for (k = 0; k < nresults; k++) {
      const RESULT *r = &results[k];
      double w = r->ratio / max * width;

      y = top + k * (bar + gap);
      fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s %zu B"
              " %dt</text>\n", left - 8, y + bar - 4, r->sc->name, r->size,
              r->threads);
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
              "fill=\"%s\"/>\n", left, y, w, bar,
              r->ratio < 0.98 ? "#2e8b57" : r->ratio > 1.02 ? "#c0392b"
                                                            : "#999999");
      fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.2fx</text>\n",
              left + w + 4, y + bar - 4, r->ratio);
  }
  fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
          "stroke=\"black\" stroke-dasharray=\"4 3\"/>\n",
          left + width / max, top - 6, left + width / max, h - 24);
  fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">1.00x"
          "</text>\n</svg>\n", left + width / max, h - 8);
  return fclose(f) == 0;
}

int main(int argc, char **argv)
{
  CLI cli;
  OPTIONS opt = { 5, 0.2, 0, NULL };
  int status = 0, last_sec = -1, rows = 0, t;
  size_t k;

  memset(&cli, 0, sizeof(cli));
  parse_cli(argc, argv, &cli, &opt);
  if (cli.list) {
      list_scenarios();
      return 0;
  }
  if (!setup_libctx()) {
      ERR_print_errors_fp(stderr);
      return 2;
  }
  if (read_cache_size(kc_prov, &k)) {
      rr_keys = 4 * (k > 0 ? k : 1);
      snprintf(cache_size_str, sizeof(cache_size_str), "%zu", k);
  }
  if (cli.rr_keys != 0)
      rr_keys = cli.rr_keys;
  if (cli.callgrind != NULL) {
      status = run_callgrind(cli.callgrind);
      free_libctx();
      return status;
  }
  apply_defaults(&cli, &opt);
  if (cli.csv != NULL && (opt.csv = fopen(cli.csv, "w")) == NULL) {
      perror(cli.csv);
      return 2;
  }
  if (opt.csv != NULL)
      fprintf(opt.csv, "section,scenario,size,threads,clock,arm_a,a_ns_median,"
              "a_ns_min,a_ns_max,arm_b,b_ns_median,b_ns_min,b_ns_max,"
              "ratio_b_over_a,a_wall_ns_median,b_wall_ns_median,"
              "a_cpu_ns_median,b_cpu_ns_median,kc_hits,kc_misses,kc_passthrough,kc_hit_rate,"
              "kc_events_per_op,rounds,round_ms,kc_misses_per_hs,"
              "kc_evictions_per_hs,kc_passthrough_per_hs\n");
  print_banner(&opt);
  for (k = 0; k < N_SCENARIOS; k++) {
      const SCENARIO *sc = &scenarios[k];
      int s;

      /* --filter and --rows pick the scenarios; --quick only shortens them */
      if ((cli.quick && !sc->quick && cli.filter == NULL && cli.rows == NULL)
          || (cli.filter != NULL && strstr(sc->name, cli.filter) == NULL)
          || (cli.rows != NULL && !in_list(cli.rows, sc->name)))
          continue;
      if ((int)sc->sec != last_sec)
          print_section_header(sc->sec);
      last_sec = (int)sc->sec;
      for (s = 0; s < cli.nsizes; s++) {
          size_t size = fixed_size(sc) != 0 ? fixed_size(sc)
                                            : cli.sizes[s];

          if (!size_wanted(&cli, sc, cli.sizes[s]))
              continue;
          for (t = 0; t < cli.nthreads; t++, rows++)
              run_row(sc, size, cli.threads[t], &opt, &status);
          if (fixed_size(sc) != 0)
              break;
      }
  }
  if (rows == 0) {
      fprintf(stderr, "kcbench: no scenario selected (see --list)\n");
      status = 2;
  } else {
      print_summary();
  }
  if (cli.svg != NULL && nresults > 0) {
      if (write_svg(cli.svg))
          printf("chart: %s\n", cli.svg);
      else
          perror(cli.svg), status = 2;
  }
  if (opt.csv != NULL)
      fclose(opt.csv);
  free_libctx();
  return status;
}
