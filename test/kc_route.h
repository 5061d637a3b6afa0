/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether a fetched cipher is one keycache passes through as it is (the
 * default's own functions, offered from 3.5 with the EVP_SKEY key managers
 * so that a query-less key and cipher share a provider) rather than one it
 * wraps and caches.  For tests that want "not cached", not "which provider
 * object": header-only, for kc_test.c and kc_props.c alike.
 */
#ifndef KC_ROUTE_H
#define KC_ROUTE_H

#include <string.h>
#include <strings.h>
#include <openssl/core_dispatch.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

/* Is |name| one of the colon-separated |names| (case-insensitive)? */
static inline int kc_route_names_have(const char *names, const char *name)
{
    size_t n = strlen(name);
    const char *p = names;

    while (p != NULL && *p != '\0') {
        const char *end = strchr(p, ':');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

        if (len == n && strncasecmp(p, name, n) == 0)
            return 1;
        p = end != NULL ? end + 1 : NULL;
    }
    return 0;
}

/* |prov|'s cipher update function for |name|, or NULL. */
static inline void (*kc_route_update(const OSSL_PROVIDER *prov,
                                     const char *name))(void)
{
    const OSSL_ALGORITHM *a;
    const OSSL_DISPATCH *d;
    int no_cache = 0;

    a = OSSL_PROVIDER_query_operation(prov, OSSL_OP_CIPHER, &no_cache);
    for (; a != NULL && a->algorithm_names != NULL; a++) {
        if (!kc_route_names_have(a->algorithm_names, name))
            continue;
        for (d = a->implementation; d->function_id != 0; d++)
            if (d->function_id == OSSL_FUNC_CIPHER_UPDATE)
                return d->function;
        return NULL;
    }
    return NULL;
}

/*
 * 1 if |c| (fetched in |libctx| as |name|) comes from a provider other than
 * the default whose update function for |name| is the default's own: a
 * pass-through, every per-call function the default's, nothing cached.
 */
static inline int kc_route_is_passthrough(OSSL_LIB_CTX *libctx,
                                          const EVP_CIPHER *c,
                                          const char *name)
{
    EVP_CIPHER *def = EVP_CIPHER_fetch(libctx, name, "provider=default");
    const OSSL_PROVIDER *p = c != NULL ? EVP_CIPHER_get0_provider(c) : NULL;
    const OSSL_PROVIDER *dp = def != NULL ? EVP_CIPHER_get0_provider(def)
                              : NULL;
    void (*mine)(void), (*theirs)(void);
    int ok;

    ok = p != NULL && dp != NULL && p != dp
         && (mine = kc_route_update(p, name)) != NULL
         && (theirs = kc_route_update(dp, name)) != NULL
         && mine == theirs;
    EVP_CIPHER_free(def);
    return ok;
}

#endif
