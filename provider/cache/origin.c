/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who keyed this context: the application, or OpenSSL itself?
 *
 * keycache must never store a key that OpenSSL derives or uses inside its
 * own code (TLS secrets, KDF and DRBG state, signature nonces), whatever
 * property query the program gave.  Routing cannot tell: the default
 * provider's KDFs and DRBGs fetch HMAC in the application's library context
 * without a query, exactly as an application does, so with
 * `default_properties = ?provider=keycache` those inner fetches reach
 * keycache even when the program asked for "provider=default".  The call
 * stack can tell.  When a key is about to be admitted (a miss, never a hit)
 * keycache unwinds its own frames and libcrypto's and looks at the call
 * that came into OpenSSL from outside:
 *
 *   - none (EVP_MAC_init and EVP_MAC_CTX_set_params jump straight to the
 *     provider): the caller keyed the context itself;
 *   - the outermost libcrypto function is one through which a program keys
 *     a MAC or cipher with a key it passes (EVP_Q_mac, HMAC,
 *     EVP_DigestSignInit, EVP_CipherInit_ex ... see entry_names);
 *   - anything else - libssl anywhere on the way, EVP_KDF_derive,
 *     RAND_bytes, EVP_PKEY_sign, a static function, a frame the unwinder
 *     cannot read, too deep a stack - refuses.
 *
 * It fails closed: an unknown path costs a cache entry, never a secret.
 * The walk stops at the first frame outside OpenSSL, so it reads a handful
 * of frames, and only on admissions.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include "cache/cache.h"

/*
 * libcrypto's exported functions through which an application keys one of
 * keycache's algorithms with its own key.  Keying through any other
 * libcrypto function is OpenSSL's business.  Names a version lacks (the
 * _SKEY ones before 3.5) are skipped.  Not EVP_DigestSign/Final nor
 * EVP_PKEY_sign: a signature keys HMAC there with secrets of its own
 * (deterministic ECDSA nonces, SLH-DSA's PRF); a MAC key is keyed at
 * EVP_DigestSignInit.  A MAC keyed under a cipher entry point is the
 * cipher's doing (the default's AES-SIV keys CMAC with half its key), and
 * a cipher under a MAC one the MAC's: each kind counts only its own.
 */
static const char *const entry_names[] = {
    /* MAC entry points first, KC_NMAC of them */
    "EVP_Q_mac", "HMAC", "EVP_MAC_init", "EVP_MAC_init_SKEY",
    "EVP_MAC_CTX_set_params",
    "EVP_DigestSignInit", "EVP_DigestSignInit_ex",
    /* then the cipher ones */
    "EVP_CipherInit", "EVP_CipherInit_ex", "EVP_CipherInit_ex2",
    "EVP_CipherInit_SKEY",
    "EVP_EncryptInit", "EVP_EncryptInit_ex", "EVP_EncryptInit_ex2",
    "EVP_DecryptInit", "EVP_DecryptInit_ex", "EVP_DecryptInit_ex2",
};
#define KC_NMAC 7
#define KC_NENTRY (sizeof(entry_names) / sizeof(entry_names[0]))

/* deeper than any keying path through libcrypto; beyond it, refuse */
#define KC_ORIGIN_DEPTH 32

typedef struct {
    uintptr_t start, end;
} KC_RANGE;

static struct {
    int ok;                   /* the ranges below were found */
    KC_RANGE self, crypto;    /* keycache's and libcrypto's mappings */
    uintptr_t entry[KC_NENTRY];
    int entry_cipher[KC_NENTRY];
    size_t nentry;
} origin;

static pthread_once_t origin_once = PTHREAD_ONCE_INIT;

/* the mapped extent of the loaded object containing each wanted address */
typedef struct {
    uintptr_t want;
    KC_RANGE *out;
} KC_FIND;

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    KC_FIND *f = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int i;

    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < lo)
            lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
            hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    if (f->want < lo || f->want >= hi)
        return 0;
    f->out->start = lo;
    f->out->end = hi;
    return 1;
}

static int range_of(uintptr_t addr, KC_RANGE *out)
{
    KC_FIND f = { addr, out };

    return dl_iterate_phdr(find_object, &f) == 1;
}

const char *kc_object_path(const void *a)
{
    Dl_info di;

    return dladdr(a, &di) != 0 && di.dli_fname != NULL ? di.dli_fname : "?";
}

int kc_same_object(const void *a, const void *b)
{
    KC_RANGE r;

    return range_of((uintptr_t)a, &r) && (uintptr_t)b >= r.start
           && (uintptr_t)b < r.end;
}

static void origin_init(void)
{
    Dl_info di;
    void *h;
    size_t i;

    /* libcrypto is the object that holds the EVP_MAC_init we are linked to */
    if (!range_of((uintptr_t)&origin_init, &origin.self)
        || !range_of((uintptr_t)&EVP_MAC_init, &origin.crypto)
        || dladdr((void *)&EVP_MAC_init, &di) == 0 || di.dli_fname == NULL
        || (h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) == NULL)
        return;
    for (i = 0; i < KC_NENTRY; i++) {
        void *f = dlsym(h, entry_names[i]);

        if (f != NULL) {
            origin.entry_cipher[origin.nentry] = i >= KC_NMAC;
            origin.entry[origin.nentry++] = (uintptr_t)f;
        }
    }
    dlclose(h);
    origin.ok = origin.nentry > 0;
}

static ossl_inline int in_range(const KC_RANGE *r, uintptr_t a)
{
    return a >= r->start && a < r->end;
}

static int is_entry(uintptr_t start, int cipher)
{
    size_t i;

    for (i = 0; i < origin.nentry; i++)
        if (origin.entry[i] == start)
            return origin.entry_cipher[i] == cipher;
    return 0;
}

/*
 * Is the code at a in a libssl, of any version, location or file name (a
 * vendored or renamed copy)?  An object is libssl if it defines libssl's
 * SSL_CTX_new itself: looked up through the object's own handle (its
 * definition comes before its dependencies'), and the definition found
 * must lie in that object, not in a libssl it links to.  A libssl linked
 * statically into a program that exports nothing is not seen (a documented
 * limit).  Per thread, the last few objects' answers are kept while no
 * object is loaded or unloaded (glibc's counts of both), so an admission
 * pays for the look-up once per calling object.
 */
#define KC_SSL_MEMO 4

static __thread struct {
    unsigned long long gen;      /* loads + unloads when filled, + 1 */
    uintptr_t base[KC_SSL_MEMO];
    unsigned char ssl[KC_SSL_MEMO];
    unsigned int next;
} ssl_memo;

static int read_gen(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size < offsetof(struct dl_phdr_info, dlpi_subs)
               + sizeof(info->dlpi_subs))
        return -1;
    *(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs + 1;
    return 1;
}

/*
 * Does the object lm (whose mapping starts at base) define SSL_CTX_new
 * itself?  Looked up by its link map, never by dladdr's file name, which
 * for the main program is argv[0]: a name the program's caller chose,
 * which dlopen would open (a FIFO there would hang the program, a device
 * be opened by a set-uid one).  A library is reached through the name its
 * link map holds, which dlopen matches among the loaded objects without
 * opening anything; the main program through dlopen(NULL).  Where no
 * handle can be had, the answer is yes: fail closed.
 */
static int defines_libssl(const struct link_map *lm, const void *base)
{
    Dl_info at;
    void *h, *sym;
    int ssl;

    h = dlopen(lm->l_name[0] != '\0' ? lm->l_name : NULL,
               RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return 1;
    sym = dlsym(h, "SSL_CTX_new");
    ssl = sym != NULL && dladdr(sym, &at) != 0 && at.dli_fbase == base;
    dlclose(h);
    return ssl;
}

static int in_libssl(uintptr_t a)
{
    unsigned long long gen = 0;
    struct link_map *lm = NULL;
    uintptr_t base;
    Dl_info di;
    unsigned int i;

    /* code in no object (a JIT's) is the application's: OpenSSL is not */
    if (dladdr1((void *)a, &di, (void **)&lm, RTLD_DL_LINKMAP) == 0
        || lm == NULL)
        return 0;
    base = (uintptr_t)di.dli_fbase;
    if (dl_iterate_phdr(read_gen, &gen) != 1)
        return defines_libssl(lm, di.dli_fbase);
    if (ssl_memo.gen != gen) {
        memset(&ssl_memo, 0, sizeof(ssl_memo));
        ssl_memo.gen = gen;
    }
    for (i = 0; i < KC_SSL_MEMO; i++)
        if (ssl_memo.base[i] == base)
            return ssl_memo.ssl[i];
    i = ssl_memo.next++ % KC_SSL_MEMO;
    ssl_memo.base[i] = base;
    return ssl_memo.ssl[i] = (unsigned char)defines_libssl(lm, di.dli_fbase);
}

typedef struct {
    int depth;
    int cipher;               /* a cipher's key, not a MAC's */
    int in_crypto;            /* passed a libcrypto frame */
    uintptr_t outer;          /* start of the outermost libcrypto function */
    int verdict;              /* 1: the application keyed it */
} KC_WALK;

static _Unwind_Reason_Code step(struct _Unwind_Context *uc, void *arg)
{
    KC_WALK *w = arg;
    int before = 0;
    uintptr_t ip = _Unwind_GetIPInfo(uc, &before);

    if (ip == 0 || ++w->depth > KC_ORIGIN_DEPTH)
        return _URC_END_OF_STACK;
    /* a return address: the call it returns from is the byte before */
    if (!before)
        ip--;
    if (in_range(&origin.self, ip)) {
        /* keycache under libcrypto under keycache: not a path we know */
        return w->in_crypto ? _URC_END_OF_STACK : _URC_NO_REASON;
    }
    if (in_range(&origin.crypto, ip)) {
        w->in_crypto = 1;
        w->outer = (uintptr_t)_Unwind_GetRegionStart(uc);
        return _URC_NO_REASON;
    }
    /* the first frame outside: the code that called into OpenSSL */
    w->verdict = !in_libssl(ip)
                 && (!w->in_crypto || is_entry(w->outer, w->cipher));
    return _URC_END_OF_STACK;
}


/*
 * pctx->core_fn must lie in the libcrypto keycache is bound to: a process
 * whose OpenSSL is another copy (linked into the executable without
 * exporting it, a private copy loaded beside the system's, a preloaded
 * wrapper of EVP_MAC_init) would have all of its frames taken for the
 * application's.
 */
int kc_origin_admits(const KC_PROVCTX *pctx, int cipher)
{
    KC_WALK w = { 0, 0, 0, 0, 0 };

    pthread_once(&origin_once, origin_init);
    if (!origin.ok || !in_range(&origin.crypto, (uintptr_t)pctx->core_fn))
        return 0;
    w.cipher = cipher;
    _Unwind_Backtrace(step, &w);
    return w.verdict;
}
