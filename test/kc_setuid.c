/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program that loads its configuration from a path of its own (argv[1]:
 * the test's stand-in for a path compiled in), not from OPENSSL_CONF, as a
 * set-uid program may: keycache then loads in it whatever its caller's
 * environment says.  It prints whether keycache is available and three
 * HMACs, the third from keycache's cache.  For test_setuid.sh.
 */
#include <stdio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

int main(int argc, char **argv)
{
    unsigned char out[32];
    size_t len = 0, i;
    int n;

    if (argc < 2 || !OSSL_LIB_CTX_load_config(NULL, argv[1]))
        return 2;
    printf("keycache available: %d\n",
           OSSL_PROVIDER_available(NULL, "keycache"));
    for (n = 0; n < 3; n++) {
        if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, "key", 3,
                      (const unsigned char *)"msg", 3, out, sizeof(out),
                      &len) == NULL)
            return 3;
        for (i = 0; i < len; i++)
            printf("%02x", out[i]);
        printf("\n");
    }
    return 0;
}
