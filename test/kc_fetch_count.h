/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fetches made outside the application's (global) library context, by
 * anyone in the test program: libcrypto's calls to its own fetch functions
 * go through the symbol table, so a definition in the program sees the
 * default's MACs fetch the digest or cipher they run on, in whichever
 * library context their context was made.  KCT_COUNT_FETCHES(T, fn, n)
 * defines fn (EVP_MD_fetch, EVP_CIPHER_fetch), counting such calls in n.
 */
#ifndef KC_FETCH_COUNT_H
#define KC_FETCH_COUNT_H
#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#define KCT_COUNT_FETCHES(T, fn, n)                                         \
    T *fn(OSSL_LIB_CTX *libctx, const char *name, const char *props)        \
    {                                                                       \
        static T *(*real)(OSSL_LIB_CTX *, const char *, const char *);     \
                                                                            \
        if (real == NULL)                                                   \
            *(void **)&real = dlsym(RTLD_NEXT, #fn);                        \
        if (libctx != NULL && libctx != OSSL_LIB_CTX_get0_global_default()) \
            __atomic_add_fetch(&(n), 1, __ATOMIC_RELAXED);                  \
        return real != NULL ? real(libctx, name, props) : NULL;             \
    }

#endif
