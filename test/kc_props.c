/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_props: what an unchanged program gets from the configuration
 * OPENSSL_CONF names, for test_fips_include.sh.  Prints one line:
 *   fips=<EVP_default_properties_is_fips_enabled(NULL)> hmac=<provider>
 *   gcm=<provider>
 * where <provider> is the provider a query-less fetch reaches, or
 * "refused".
 */
#include <stdio.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

static const char *who(const OSSL_PROVIDER *prov)
{
    return prov != NULL ? OSSL_PROVIDER_get0_name(prov) : "refused";
}

int main(void)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_CIPHER *gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);

    printf("fips=%d hmac=%s gcm=%s\n",
           EVP_default_properties_is_fips_enabled(NULL),
           who(mac != NULL ? EVP_MAC_get0_provider(mac) : NULL),
           who(gcm != NULL ? EVP_CIPHER_get0_provider(gcm) : NULL));
    fflush(stdout);
    EVP_MAC_free(mac);
    EVP_CIPHER_free(gcm);
    return 0;
}
