/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The same two ways of keying HMAC-SHA256, compiled into test_origin_chain
 * and into kc_fakessl (a library keycache takes for a libssl): one calls
 * EVP_MAC_init itself, one EVP_Q_mac.  From either object the frames
 * keycache sees are the same up to the first one outside OpenSSL.
 */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

static int chain_mac_init(OSSL_LIB_CTX *ctx, const unsigned char *key,
                          size_t keylen, unsigned char *out, size_t *outlen)
{
    static const unsigned char msg[] = "who keyed this context?";
    EVP_MAC *mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    EVP_MAC_CTX *c = mac == NULL ? NULL : EVP_MAC_CTX_new(mac);
    OSSL_PARAM p[2];
    int ok;

    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                            (char *)"SHA256", 0);
    p[1] = OSSL_PARAM_construct_end();
    ok = c != NULL && EVP_MAC_init(c, key, keylen, p)
         && EVP_MAC_update(c, msg, sizeof(msg) - 1)
         && EVP_MAC_final(c, out, outlen, EVP_MAX_MD_SIZE);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    return ok;
}

static int chain_mac_q(OSSL_LIB_CTX *ctx, const unsigned char *key,
                       size_t keylen, unsigned char *out, size_t *outlen)
{
    static const unsigned char msg[] = "who keyed this context?";

    return EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL, key, keylen, msg,
                     sizeof(msg) - 1, out, EVP_MAX_MD_SIZE, outlen) != NULL;
}
