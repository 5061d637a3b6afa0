/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache.so, the module the configurations name.  OpenSSL 3 and 4 share
 * openssl.cnf and the modules directory, but a provider calling libcrypto
 * is bound to one major's ABI.  So this links no libcrypto: it asks the
 * core its version and hands the core's handle and table to the sibling
 * KC_BUILD_PREFIX<major>.so, which starts as if the core had loaded it.
 * Nothing of the loader is called after that: the core may unload it.
 */
#define _GNU_SOURCE            /* dladdr() */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/core.h>

#include "early/early.h"

#ifndef KC_BUILD_PREFIX
# define KC_BUILD_PREFIX "keycache-ossl"
#endif

/*
 * KC_BUILD_PREFIX<major>.so beside this file; 0 if the path is too long or
 * has no directory (dlopen would search the library path, not beside us).
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
 * Does |fn| lie in this object (the sibling is a link to or copy of the
 * loader)?  By mapping: a global OSSL_provider_init could be interposed.
 */
static int in_loader(void *fn)
{
    Dl_info self, other;

    return dladdr((void *)in_loader, &self) != 0
           && dladdr(fn, &other) != 0 && self.dli_fbase == other.dli_fbase;
}

static int read_at(int fd, void *buf, size_t len, off_t off)
{
    ssize_t n;

    do
        n = pread(fd, buf, len, off);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len;
}

/* this loader's own ELF header (the linker's): its machine is the host's */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

/*
 * Can the sibling at |path| go to dlopen without harm?  1 if so or if it
 * is missing (dlopen says so); else 0 and the reason in |why|.  A page
 * past the end of a file cut short raises SIGBUS, and opening a FIFO
 * blocks: only a regular file, opened without blocking, whose loadable
 * segments and section table lie inside it.  A file changed after this
 * check is the installer's race, not a program's input.
 */
static int sibling_sound(const char *path, char *why, size_t len)
{
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph;
    struct stat st;
    unsigned long long need = 0, end;
    int fd, i, ok = 0;

    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        snprintf(why, len, "%s cannot be read: %s", path, strerror(errno));
        return 0;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, len, "%s is not a regular file", path);
        goto done;
    }
    /* (another machine's file: dlopen would say "No such file") */
    if (!read_at(fd, &eh, sizeof(eh), 0)
        || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0
        || eh.e_ident[EI_CLASS] != __ehdr_start.e_ident[EI_CLASS]
        || eh.e_ident[EI_DATA] != __ehdr_start.e_ident[EI_DATA]
        || eh.e_machine != __ehdr_start.e_machine
        || eh.e_phentsize != sizeof(ph)) {
        snprintf(why, len, "%s is not a shared object of this machine", path);
        goto done;
    }
    if (eh.e_shoff != 0)
        need = (unsigned long long)eh.e_shoff
               + (unsigned long long)eh.e_shnum * eh.e_shentsize;
    for (i = 0; i < eh.e_phnum; i++) {
        if (!read_at(fd, &ph, sizeof(ph),
                     (off_t)(eh.e_phoff + (ElfW(Off))i * sizeof(ph)))) {
            need = (unsigned long long)st.st_size + 1;
            break;
        }
        end = (unsigned long long)ph.p_offset + ph.p_filesz;
        if (ph.p_type == PT_LOAD && end > need)
            need = end;
    }
    if (need > (unsigned long long)st.st_size) {
        snprintf(why, len, "%s is cut short (%lld bytes, its headers "
                 "describe %llu or more)", path, (long long)st.st_size, need);
        goto done;
    }
    ok = 1;
 done:
    close(fd);
    return ok;
}

struct host_find {
    ElfW(Addr) addr;
    const char *name;
};

/* (dl_iterate_phdr(): the object whose loaded segment holds addr) */
static int host_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct host_find *h = arg;
    ElfW(Half) i;

    (void)size;
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        ElfW(Addr) start = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_LOAD && h->addr >= start
            && h->addr < start + ph->p_memsz) {
            h->name = info->dlpi_name;
            return 1;
        }
    }
    return 0;
}

/*
 * The major version in the file name of the library that holds the
 * core's core_get_params (libcrypto.so.3, libcrypto.so.4), or -1 where
 * it cannot be told (a static libcrypto, a renamed one).  A config may
 * override what the core says its version is (openssl-version in
 * keycache's section, which conf.c refuses later): the loader must not
 * load another OpenSSL's build, and its libcrypto, on that word.  Found
 * by dl_iterate_phdr(), not dladdr(), whose symbol search cost every
 * process some 190,000 instructions.
 */
static int host_major(const OSSL_DISPATCH *in)
{
    void (*fn)(void) = kc_early_fn(in, OSSL_FUNC_CORE_GET_PARAMS);
    struct host_find h = { (ElfW(Addr))fn, NULL };
    const char *name, *so;

    if (fn == NULL || dl_iterate_phdr(host_of, &h) == 0 || h.name == NULL)
        return -1;
    name = strrchr(h.name, '/');
    name = name != NULL ? name + 1 : h.name;
    if (strncmp(name, "libcrypto.so.", 13) != 0)
        return -1;
    so = name + 13;
    if (*so < '0' || *so > '9')
        return -1;
    return kc_early_major(so);
}

__attribute__((visibility("default")))
int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    const char *version = kc_early_core_version(handle, in), *err;
    char path[PATH_MAX], why[PATH_MAX + 256];
    OSSL_provider_init_fn *init;
    void *h;
    int major, host;

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
    if ((host = host_major(in)) >= 0 && host != major) {
        snprintf(why, sizeof(why), "that is not the libcrypto.so.%d it runs "
                 "in (is openssl-version set in keycache's section?)", host);
        goto refuse;
    }
    if (!build_path(major, path, sizeof(path))) {
        snprintf(why, sizeof(why), "cannot tell which directory keycache.so "
                 "lies in, or its path is too long");
        goto refuse;
    }
    if (!sibling_sound(path, why, sizeof(why)))
        goto refuse;
    /*
     * RTLD_LOCAL, as the core loads a module.  RTLD_NODELETE: the core
     * never unloads the module (it has no handle of it, and the module's
     * teardown runs from its own table), and rand.c may pin it anyway.
     * RTLD_NOW, though binding all ~140 imports costs every process some
     * 70,000 instructions: the dynamic loader checks at load only that a
     * version node exists, not each symbol, and a libcrypto built
     * no-engine or no-deprecated keeps OPENSSL_3.0.0 without ENGINE_*;
     * bound lazily, such a symbol would kill the program at its first
     * call instead of leaving it on the default (test_loader.sh).
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
