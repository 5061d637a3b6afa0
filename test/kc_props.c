/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_props: what an unchanged program gets from the configuration
 * OPENSSL_CONF names, for test_fips_include.sh.  Prints one line:
 *   fips=<EVP_default_properties_is_fips_enabled(NULL)> hmac=<provider>
 *   gcm=<provider>[ skey=<provider>]
 * where <provider> is the provider a query-less fetch reaches, or
 * "refused"; for AES-256-GCM "keycache-passthrough" when keycache serves it
 * with the default's own functions, unwrapped (from 3.5, beside the EVP_SKEY
 * key managers: passthrough.c).  skey= (built and run on 3.5+ only) is the
 * provider of a query-less AES key manager (EVP_SKEY_import_raw_key()'s).
 */
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include "kc_route.h"

static const char *who(const OSSL_PROVIDER *prov)
{
    return prov != NULL ? OSSL_PROVIDER_get0_name(prov) : "refused";
}

int main(void)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_CIPHER *gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    const char *g = who(gcm != NULL ? EVP_CIPHER_get0_provider(gcm) : NULL);

    if (strcmp(g, "keycache") == 0
        && kc_route_is_passthrough(NULL, gcm, "AES-256-GCM"))
        g = "keycache-passthrough";
    printf("fips=%d hmac=%s gcm=%s",
           EVP_default_properties_is_fips_enabled(NULL),
           who(mac != NULL ? EVP_MAC_get0_provider(mac) : NULL), g);
#if OPENSSL_VERSION_NUMBER >= 0x30500000L
    if (OpenSSL_version_num() >= 0x30500000UL) {
        EVP_SKEYMGMT *km = EVP_SKEYMGMT_fetch(NULL, "AES", NULL);

        printf(" skey=%s",
               who(km != NULL ? EVP_SKEYMGMT_get0_provider(km) : NULL));
        EVP_SKEYMGMT_free(km);
    }
#endif
    printf("\n");
    fflush(stdout);
    EVP_MAC_free(mac);
    EVP_CIPHER_free(gcm);
    return 0;
}
