/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program with a private libcrypto: linked statically against
 * libcrypto.a, so that loading keycache (through OPENSSL_CONF) brings the
 * system's libcrypto.so in beside it.  It prints whether keycache is
 * available and each step's return value and output, for
 * test_private_libcrypto.sh to compare with the same program under a
 * config that activates the default provider alone.
 */
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

static void hex(const char *what, int rc, const unsigned char *p, size_t n)
{
    printf("%s rc=%d ", what, rc);
    while (n-- > 0)
        printf("%02x", *p++);
    printf("\n");
}

int main(void)
{
    static const unsigned char key[32] = "0123456789abcdef0123456789abcdef";
    static const unsigned char fixed[4] = { 1, 2, 3, 4 };
    unsigned char out[64], iv[12], tag[16];
    size_t len = 0;
    EVP_CIPHER_CTX *c;
    int i, n = 0;

    if (!OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL))
        return 2;
    printf("private: %s\n", OpenSSL_version(OPENSSL_VERSION));
    printf("keycache available: %d\n",
           OSSL_PROVIDER_available(NULL, "keycache"));
    for (i = 0; i < 5; i++) {
        len = 0;
        hex("EVP_Q_mac", EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key,
                                   sizeof(key), (const unsigned char *)"msg",
                                   3, out, sizeof(out), &len) != NULL,
            out, len);
    }
    /* GCM with a 4-byte fixed field and generated IVs: return values only */
    for (i = 0; i < 3; i++) {
        c = EVP_CIPHER_CTX_new();
        printf("gcm init %d\n",
               EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, NULL));
        printf("gcm fixed %d\n", EVP_CIPHER_CTX_ctrl(c,
               EVP_CTRL_GCM_SET_IV_FIXED, sizeof(fixed), (void *)fixed));
        printf("gcm ivgen %d\n", EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_IV_GEN,
                                                     sizeof(iv), iv));
        printf("gcm fixed kept %d\n", memcmp(iv, fixed, sizeof(fixed)) == 0);
        printf("gcm update %d\n", EVP_EncryptUpdate(c, out, &n,
                                                    (const unsigned char *)
                                                    "message", 7));
        printf("gcm final %d\n", EVP_EncryptFinal_ex(c, out + n, &n));
        printf("gcm tag %d\n", EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG,
                                                   sizeof(tag), tag));
        EVP_CIPHER_CTX_free(c);
    }
    return 0;
}
