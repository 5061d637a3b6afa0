/* SPDX-License-Identifier: Apache-2.0 */
/*
 * C client for bench/clients/run.sh and test/test_clients.sh: the HMAC APIs
 * C programs use, one message at a time, with the default library context.
 *
 *   c_client CASE bench N   N ops, the same 32-byte key and 256-byte message
 *                           every op; prints the last output
 *   c_client CASE test      fixed keys and messages, one line per operation
 *
 * Cases: c-hmac (HMAC()), c-pkey (EVP_PKEY_new_raw_private_key(EVP_PKEY_HMAC)
 * and EVP_DigestSign* per message), c-hmac-ctx (legacy HMAC_CTX per
 * message), c-pbkdf2 (PKCS5_PBKDF2_HMAC, 1000 iterations of HMAC-SHA256).
 * The "fix" variants are what a developer writes instead, for run.sh --fix:
 * c-hmac-fix keeps one keyed EVP_MAC_CTX per key and re-inits it without
 * the key per message; c-pkey-fix keeps one keyed EVP_MD_CTX per key and
 * signs each message on a copy of it.  They print their base case's lines.
 */
#define OPENSSL_SUPPRESS_DEPRECATED     /* HMAC_CTX is what is measured */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>

#define ROUNDS 3
#define MAXOUT 64

static const int hmac_keys[] = { 32, 20, 64, 131 };
static const int hmac_msgs[] = { 0, 1, 64, 256, 1000 };

typedef int (*mac_fn)(const EVP_MD *md, const unsigned char *key, int klen,
                      const unsigned char *msg, size_t mlen,
                      unsigned char *out, unsigned int *olen);

/* The byte pattern shared by every client: seed + 31 j. */
static unsigned char *pat(int n, int seed)
{
    unsigned char *b = malloc(n > 0 ? n : 1);
    int j;

    if (b == NULL)
        exit(3);
    for (j = 0; j < n; j++)
        b[j] = (unsigned char)(seed + 31 * j);
    return b;
}

static int mac_hmac(const EVP_MD *md, const unsigned char *key, int klen,
                    const unsigned char *msg, size_t mlen,
                    unsigned char *out, unsigned int *olen)
{
    return HMAC(md, key, klen, msg, mlen, out, olen) != NULL;
}

static int mac_pkey(const EVP_MD *md, const unsigned char *key, int klen,
                    const unsigned char *msg, size_t mlen,
                    unsigned char *out, unsigned int *olen)
{
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_HMAC, NULL, key,
                                                  klen);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t len = MAXOUT;
    int ok = pkey != NULL && ctx != NULL
             && EVP_DigestSignInit(ctx, NULL, md, NULL, pkey) == 1
             && EVP_DigestSignUpdate(ctx, msg, mlen) == 1
             && EVP_DigestSignFinal(ctx, out, &len) == 1;

    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    *olen = (unsigned int)len;
    return ok;
}

static int mac_hmac_ctx(const EVP_MD *md, const unsigned char *key, int klen,
                        const unsigned char *msg, size_t mlen,
                        unsigned char *out, unsigned int *olen)
{
    HMAC_CTX *ctx = HMAC_CTX_new();
    int ok = ctx != NULL && HMAC_Init_ex(ctx, key, klen, md, NULL)
             && HMAC_Update(ctx, msg, mlen) && HMAC_Final(ctx, out, olen);

    HMAC_CTX_free(ctx);
    return ok;
}

/* The message is the password, the key the salt: 32 bytes of output. */
static int mac_pbkdf2(const EVP_MD *md, const unsigned char *key, int klen,
                      const unsigned char *msg, size_t mlen,
                      unsigned char *out, unsigned int *olen)
{
    *olen = 32;
    return PKCS5_PBKDF2_HMAC((const char *)msg, (int)mlen, key, klen, 1000,
                             md, 32, out);
}

/*
 * The hand-written fix keeps its keyed objects per thread, one per key and
 * digest: a small table here, since the test uses eight of them.
 */
#define FIX_SLOTS 16

struct fix_slot {
    const EVP_MD *md;
    unsigned char key[256];
    int klen;
    void *obj;                  /* EVP_MAC_CTX or EVP_MD_CTX */
};

static _Thread_local struct fix_slot fix_slots[FIX_SLOTS];

/* The slot for md and key, or a free one (obj NULL) to fill; NULL if full. */
static struct fix_slot *fix_find(const EVP_MD *md, const unsigned char *key,
                                 int klen)
{
    int i;

    if (klen < 0 || (size_t)klen > sizeof(fix_slots[0].key))
        return NULL;
    for (i = 0; i < FIX_SLOTS && fix_slots[i].obj != NULL; i++)
        if (fix_slots[i].md == md && fix_slots[i].klen == klen
            && memcmp(fix_slots[i].key, key, klen) == 0)
            return &fix_slots[i];
    if (i == FIX_SLOTS)
        return NULL;
    fix_slots[i].md = md;
    fix_slots[i].klen = klen;
    memcpy(fix_slots[i].key, key, klen);
    return &fix_slots[i];
}

static int mac_hmac_fix(const EVP_MD *md, const unsigned char *key, int klen,
                        const unsigned char *msg, size_t mlen,
                        unsigned char *out, unsigned int *olen)
{
    struct fix_slot *s = fix_find(md, key, klen);
    EVP_MAC_CTX *ctx;
    size_t len = 0;

    if (s == NULL)
        return 0;
    if (s->obj == NULL) {
        OSSL_PARAM p[2];
        EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);

        p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                (char *)EVP_MD_get0_name(md),
                                                0);
        p[1] = OSSL_PARAM_construct_end();
        ctx = EVP_MAC_CTX_new(mac);
        EVP_MAC_free(mac);
        if (ctx == NULL || !EVP_MAC_init(ctx, key, klen, p)) {
            EVP_MAC_CTX_free(ctx);
            return 0;
        }
        s->obj = ctx;
    } else {
        ctx = s->obj;
        if (!EVP_MAC_init(ctx, NULL, 0, NULL))  /* same key, fresh MAC */
            return 0;
    }
    if (!EVP_MAC_update(ctx, msg, mlen)
        || !EVP_MAC_final(ctx, out, &len, MAXOUT))
        return 0;
    *olen = (unsigned int)len;
    return 1;
}

static int mac_pkey_fix(const EVP_MD *md, const unsigned char *key, int klen,
                        const unsigned char *msg, size_t mlen,
                        unsigned char *out, unsigned int *olen)
{
    struct fix_slot *s = fix_find(md, key, klen);
    EVP_MD_CTX *ctx;
    size_t len = MAXOUT;
    int ok;

    if (s == NULL)
        return 0;
    if (s->obj == NULL) {
        EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_HMAC, NULL,
                                                      key, klen);

        ctx = EVP_MD_CTX_new();
        ok = pkey != NULL && ctx != NULL
             && EVP_DigestSignInit(ctx, NULL, md, NULL, pkey) == 1;
        EVP_PKEY_free(pkey);
        if (!ok) {
            EVP_MD_CTX_free(ctx);
            return 0;
        }
        s->obj = ctx;
    }
    /* each message on a copy of the keyed context, which stays unused */
    ctx = EVP_MD_CTX_new();
    ok = ctx != NULL && EVP_MD_CTX_copy_ex(ctx, s->obj) == 1
         && EVP_DigestSignUpdate(ctx, msg, mlen) == 1
         && EVP_DigestSignFinal(ctx, out, &len) == 1;
    EVP_MD_CTX_free(ctx);
    *olen = (unsigned int)len;
    return ok;
}

static const struct {
    const char *name;
    mac_fn fn;
    const char *base;           /* the case whose lines a fix prints */
} cases[] = {
    { "c-hmac", mac_hmac, NULL },
    { "c-pkey", mac_pkey, NULL },
    { "c-hmac-ctx", mac_hmac_ctx, NULL },
    { "c-pbkdf2", mac_pbkdf2, NULL },
    { "c-hmac-fix", mac_hmac_fix, "c-hmac" },
    { "c-pkey-fix", mac_pkey_fix, "c-pkey" },
};

static void hex(const unsigned char *b, unsigned int n)
{
    unsigned int i;

    for (i = 0; i < n; i++)
        printf("%02x", b[i]);
    putchar('\n');
}

/* On failure print the error the library gave, so both arms compare it. */
static void run(mac_fn fn, const char *d, int kl, int ml, int seed_k)
{
    unsigned char *key = pat(kl, seed_k), *msg = pat(ml, ml + 1);
    unsigned char out[MAXOUT];
    unsigned int olen = 0;

    if (fn(EVP_get_digestbyname(d), key, kl, msg, ml, out, &olen))
        hex(out, olen);
    else
        printf("error %08lx\n", ERR_get_error());
    ERR_clear_error();
    free(key);
    free(msg);
}

int main(int argc, char **argv)
{
    mac_fn fn = NULL;
    const char *label = NULL;
    size_t i;

    for (i = 0; argc > 2 && i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(argv[1], cases[i].name) == 0) {
            fn = cases[i].fn;
            label = cases[i].base != NULL ? cases[i].base : cases[i].name;
        }
    if (fn != NULL && strcmp(argv[2], "test") == 0) {
        int r;
        size_t k, m, d;
        static const char *digests[] = { "SHA256", "SHA1" };

        for (r = 0; r < ROUNDS; r++)
            for (k = 0; k < sizeof(hmac_keys) / sizeof(int); k++)
                for (m = 0; m < sizeof(hmac_msgs) / sizeof(int); m++)
                    for (d = 0; d < 2; d++) {
                        printf("%s %s r%d k%d m%d ", label, digests[d], r,
                               hmac_keys[k], hmac_msgs[m]);
                        run(fn, digests[d], hmac_keys[k], hmac_msgs[m],
                            hmac_keys[k]);
                    }
        return 0;
    }
    if (fn != NULL && strcmp(argv[2], "bench") == 0 && argc > 3) {
        unsigned char *key = pat(32, 32), *msg = pat(256, 257);
        unsigned char out[MAXOUT];
        unsigned int olen = 0;
        long n = atol(argv[3]), j;

        for (j = 0; j < n; j++)
            if (!fn(EVP_sha256(), key, 32, msg, 256, out, &olen)) {
                ERR_print_errors_fp(stderr);
                return 1;
            }
        hex(out, olen);
        free(key);
        free(msg);
        return 0;
    }
    fprintf(stderr, "usage: c_client {c-hmac|c-pkey|c-hmac-ctx|c-pbkdf2|c-hmac-fix|"
            "c-pkey-fix} "
            "{bench N|test}\n");
    return 2;
}
