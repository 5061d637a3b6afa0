/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every row of the family registry (provider/common/registry.h), driven
 * one generic way, for the cross-cutting tests: a new family is covered by
 * adding its row there.
 *
 * kct_fams[] holds the rows in registry order.  kct_fam_run() keys a fresh
 * context of a row in a given library context and runs one operation on a
 * message: a MAC (with its "digest"/"cipher" parameter, GMAC with a 12-byte
 * IV) gives its tag; an AEAD cipher seals (GCM and OCB with a 12-byte IV,
 * SIV with none, each with associated data) and gives ciphertext then the
 * 16-byte tag.  kct_fam_same() runs it on kct_default() and another library
 * context and compares: the reference is always the default provider.
 */
#ifndef KC_FAMILY_H
#define KC_FAMILY_H

#include <stddef.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "keycache.h"
#include "common/registry.h"    /* KC_REGISTRY, KC_REGISTRY_ROWS */

enum { KCT_HMAC, KCT_MAC, KCT_CIPHER };
enum { KCT_MODE_NONE, KCT_MODE_GCM, KCT_MODE_OCB, KCT_MODE_SIV };

typedef struct {
    const char *id;             /* the registry's id: "HMAC", "OCB128" */
    int kind;                   /* KCT_HMAC, KCT_MAC, KCT_CIPHER */
    const char *conf;           /* its configuration key */
    const char *name;           /* the algorithm name */
    size_t keylen;              /* a key length it takes */
    const char *sub, *sub_value; /* a MAC's "digest"/"cipher" parameter */
    int first;                  /* its first contexts: the application's */
    const char *nests;          /* the key of a family its default fetches */
} KCT_FAM;

extern const KCT_FAM kct_fams[KC_REGISTRY_ROWS];
extern const size_t kct_nfams;  /* KC_REGISTRY_ROWS */

/* A cipher row's KCT_MODE_* (KCT_MODE_NONE for a MAC); aborts on an
 * unknown cipher mode, so a new cipher row is taught to the helpers. */
int kct_fam_mode(const KCT_FAM *f);

/* The row with this id or algorithm name (case-insensitive), or NULL. */
const KCT_FAM *kct_fam_find(const char *id_or_name);

/* Longest key of any row, and the IV and tag lengths the helpers use. */
#define KCT_FAM_MAXKEY 64
#define KCT_FAM_IVLEN 12
#define KCT_FAM_TAGLEN 16
/* Output room kct_fam_run() needs for a message of |n| bytes. */
#define KCT_FAM_OUT(n) ((n) + KCT_FAM_TAGLEN + 64)

/* The row's IV length as the helpers use it: 12, or 0 (SIV, MACs but GMAC) */
size_t kct_fam_ivlen(const KCT_FAM *f);
/* A fixed IV of KCT_FAM_IVLEN bytes and associated data the helpers use. */
extern const unsigned char kct_fam_iv[KCT_FAM_IVLEN];
extern const unsigned char kct_fam_aad[16];

/*
 * A MAC row's init parameters into p[3]: its sub parameter, GMAC's IV
 * (|iv| when not NULL, else kct_fam_iv), END.  Returns p.
 */
OSSL_PARAM *kct_fam_mac_params(const KCT_FAM *f, OSSL_PARAM p[3],
                               const unsigned char *iv);

/*
 * One keyed operation of row f in libctx on a fresh context, freed after:
 * the output length (MAC tag, or ciphertext + 16-byte tag), 0 on failure
 * (the errors stay on the queue).  |out| has KCT_FAM_OUT(msglen) bytes.
 */
size_t kct_fam_run(OSSL_LIB_CTX *libctx, const KCT_FAM *f,
                   const unsigned char *key, size_t keylen,
                   const unsigned char *msg, size_t msglen,
                   unsigned char *out);

/*
 * The same in two halves, so that a keyed context can go to another
 * thread: kct_fam_begin() makes row f's context in libctx keyed with key
 * (a MAC's parameters, a cipher's IV; enc 0 opens, ciphers only), NULL on
 * failure; kct_fam_finish() runs the message (a MAC's data, or what
 * kct_fam_run()/kct_fam_open() take) through it as kct_fam_run() or
 * kct_fam_open() would, frees it and returns the output length, 0 on
 * failure.  kct_fam_dup() copies a context (EVP_MAC_CTX_dup,
 * EVP_CIPHER_CTX_copy); kct_fam_free() frees one unfinished.
 */
typedef struct kct_fam_ctx_st KCT_FAM_CTX;
KCT_FAM_CTX *kct_fam_begin(OSSL_LIB_CTX *libctx, const KCT_FAM *f, int enc,
                           const unsigned char *key, size_t keylen);
size_t kct_fam_finish(KCT_FAM_CTX *c, const unsigned char *in, size_t inlen,
                      unsigned char *out);
KCT_FAM_CTX *kct_fam_dup(const KCT_FAM_CTX *c);
void kct_fam_free(KCT_FAM_CTX *c);

/*
 * A cipher row's open of ciphertext + tag (|inlen| bytes, as kct_fam_run()
 * gave them) on a fresh context: 1 if the tag verified, and the plaintext
 * in |out|; 0 otherwise.
 */
int kct_fam_open(OSSL_LIB_CTX *libctx, const KCT_FAM *f,
                 const unsigned char *key, size_t keylen,
                 const unsigned char *in, size_t inlen, unsigned char *out);

/*
 * kct_fam_run() of row f on kct_default() and on |libctx|: 1 if both
 * succeed with the same output (and, for a cipher, the default opens what
 * libctx sealed and libctx opens what the default sealed); else 0, with the
 * row and what differed printed to stderr under |what|.
 */
int kct_fam_same(const char *what, OSSL_LIB_CTX *libctx, const KCT_FAM *f,
                 const unsigned char *key, size_t keylen,
                 const unsigned char *msg, size_t msglen);

/* The same with another reference context than kct_default(). */
int kct_fam_same_ref(const char *what, OSSL_LIB_CTX *ref,
                     OSSL_LIB_CTX *libctx, const KCT_FAM *f,
                     const unsigned char *key, size_t keylen,
                     const unsigned char *msg, size_t msglen);

/*
 * kct_fam_same() over every row, each with its own key length (the first
 * bytes of |key|, KCT_FAM_MAXKEY of them): the number of rows that differ.
 */
int kct_fam_all_same(const char *what, OSSL_LIB_CTX *libctx,
                     const unsigned char *key, const unsigned char *msg,
                     size_t msglen);

#endif
