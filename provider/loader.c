/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache.so, the module the configurations name: it starts the keycache
 * built for the major version of the libcrypto that loads it.
 *
 * OpenSSL 3 and 4 read the same openssl.cnf and look in the same modules
 * directory, but a provider that calls libcrypto is bound to one major
 * version's ABI.  So keycache.so links no libcrypto: it asks the core for
 * its version (a core function, not a libcrypto symbol) and hands the
 * core's handle and dispatch table to KC_BUILD_PREFIX<major>.so in its own
 * directory, which then starts as if the core had loaded it directly - its
 * own version guard, dispatch table, provider context and teardown.  After
 * that nothing of the loader is ever called, so the core may unload it.
 */
#define _GNU_SOURCE            /* dladdr() */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core.h>

#include "kc_early.h"

#ifndef KC_BUILD_PREFIX
# define KC_BUILD_PREFIX "keycache-ossl"
#endif

/*
 * KC_BUILD_PREFIX<major>.so beside this file; 0 if this file's name has no
 * directory (dlopen would then search the library path, not beside us) or
 * the path is too long.
 */
static int build_path(int major, char *buf, size_t len)
{
    Dl_info di;
    const char *slash;
    int n;

    if (dladdr((void *)build_path, &di) == 0 || di.dli_fname == NULL
        || (slash = strrchr(di.dli_fname, '/')) == NULL)
        return 0;
    n = snprintf(buf, len, "%.*s" KC_BUILD_PREFIX "%d.so",
                 (int)(slash - di.dli_fname) + 1, di.dli_fname, major);
    return n > 0 && (size_t)n < len;
}

/*
 * Whether |fn| lies in this object: the sibling is the loader itself
 * (a symbolic link or a copy of it).  Compared by mapping, not by symbol,
 * which another object's global OSSL_provider_init could interpose.
 */
static int in_loader(void *fn)
{
    Dl_info self, other;

    return dladdr((void *)in_loader, &self) != 0
           && dladdr(fn, &other) != 0 && self.dli_fbase == other.dli_fbase;
}

__attribute__((visibility("default")))
int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    const char *version = kc_early_core_version(handle, in), *err;
    char path[PATH_MAX], why[PATH_MAX + 256];
    OSSL_provider_init_fn *init;
    void *h;
    int major;

    /* every OpenSSL 3 and 4 core says; one that does not is not guessed at */
    if (version == NULL) {
        kc_early_log(1, "not started: the core that loaded keycache.so "
                     "does not say its OpenSSL version; the program runs "
                     "without keycache");
        kc_early_raise(handle, in, KC_FILE_NAME, __LINE__,
                       "the core does not say its OpenSSL version");
        return 0;
    }
    major = kc_early_major(version);
    if (!build_path(major, path, sizeof(path))) {
        snprintf(why, sizeof(why), "cannot tell which directory keycache.so "
                 "lies in, or its path is too long");
        goto refuse;
    }
    /*
     * RTLD_LOCAL: its symbols stay out of the program's namespace, as the
     * core keeps a module's.  RTLD_NODELETE: the core unloads the loader,
     * never the module (it has no handle of it), and the module's teardown
     * runs from its own dispatch table; so it stays mapped for good, as
     * rand.c pins it anyway once parked DRBGs may outlive it, and a later
     * load (another library context) finds it in place.
     */
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h == NULL) {
        err = dlerror();
        snprintf(why, sizeof(why), "the keycache built for OpenSSL %d "
                 "cannot be loaded: %s", major, err != NULL ? err : path);
        goto refuse;
    }
    init = (OSSL_provider_init_fn *)dlsym(h, "OSSL_provider_init");
    if (init == NULL || in_loader((void *)init)) {
        snprintf(why, sizeof(why), "%s is not a keycache build (%s)", path,
                 init == NULL ? "no OSSL_provider_init" : "it is the loader");
        dlclose(h);
        goto refuse;
    }
    kc_early_log(2, "loader: OpenSSL %s, major version %d: starting %s",
                 version, major, path);
    return init(handle, in, out, provctx);

 refuse:
    kc_early_log(1, "not started: loaded by OpenSSL %s, and %s; the program "
                 "runs without keycache (install the keycache built for "
                 "OpenSSL %d)", version, why, major);
    kc_early_raise(handle, in, KC_FILE_NAME, __LINE__, "loaded by OpenSSL %s, "
                   "and %s", version, why);
    return 0;
}
