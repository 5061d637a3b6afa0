/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for libssl in test_origin_chain.  keycache knows a libssl by
 * what it is: an object that defines SSL_CTX_new itself (origin.c).  Its
 * two MAC functions are the program's, word for word (kc_chain_mac.h), so
 * that a context keyed here reaches keycache through the same libcrypto
 * frames as one the program keys.  Keys keyed here must never be cached.
 */
#include "kc_chain_mac.h"

void *SSL_CTX_new(void);
int kcfs_mac_init(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                  unsigned char *out, size_t *outlen);
int kcfs_mac_q(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
               unsigned char *out, size_t *outlen);

void *SSL_CTX_new(void)
{
    return NULL;
}

int kcfs_mac_init(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
                  unsigned char *out, size_t *outlen)
{
    return chain_mac_init(ctx, key, keylen, out, outlen);
}

int kcfs_mac_q(OSSL_LIB_CTX *ctx, const unsigned char *key, size_t keylen,
               unsigned char *out, size_t *outlen)
{
    return chain_mac_q(ctx, key, keylen, out, outlen);
}
