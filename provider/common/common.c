/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers every layer uses: names, the default's contexts tried once,
 * the error queue's newest entry, run-once work, the module kept mapped.
 */
#define _GNU_SOURCE            /* gettid(), dladdr() */
#include <dlfcn.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>

#include "common/common.h"

int kc_names_start_with(const char *names, const char *first)
{
    size_t n = strlen(first);

    return strncmp(names, first, n) == 0
           && (names[n] == '\0' || names[n] == ':');
}

int kc_name_in_list(const char *const *list, const char *name)
{
    for (; list != NULL && *list != NULL; list++)
        if (kc_name_is(*list, name))
            return 1;
    return 0;
}

void *kc_cipher_new_init(void *provctx, const KC_CIPHER_FNS *m, int enc,
                         const unsigned char *key, size_t keylen,
                         const OSSL_PARAM params[])
{
    void *t = m->newctx(provctx);

    if (t != NULL
        && !(enc ? m->einit : m->dinit)(t, key, keylen, NULL, 0, params)) {
        m->freectx(t);
        t = NULL;
    }
    return t;
}

KC_NOINLINE void kc_stack_wipe(void)
{
    unsigned char below[KC_STACK_WIPE];

    /* (whole vectors: OPENSSL_cleanse() stores a word at a time) */
    explicit_bzero(below, sizeof(below));
    /* (the frame stays where it is: not a tail call, not elided) */
    __asm__ __volatile__("" : : "r"(below) : "memory");
}

#if defined(__x86_64__) && defined(__GNUC__)
# include <cpuid.h>

/*
 * What the CPU and the kernel enable: 1 SSE, 2 AVX, 3 AVX-512 as well
 * (with VL, so 128-bit forms reach registers 16-31), 4 without VL.
 */
static int vector_kind(void)
{
    unsigned int a, b, c, d, lo = 0, hi = 0;

    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0)
        return 1;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((c & bit_AVX) == 0 || (lo & 0x06) != 0x06)
        return 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)
        || (b & bit_AVX512F) == 0 || (lo & 0xe6) != 0xe6)
        return 2;
    return (b & bit_AVX512VL) != 0 ? 3 : 4;
}

static int vector_regs;         /* vector_kind(), once asked */

# define KC_XOR16(r) "pxor %%xmm" #r ", %%xmm" #r "\n\t"
# define KC_EXOR(w, r) "vpxord %%" w #r ", %%" w #r ", %%" w #r "\n\t"
# define KC_EXOR16(w)                                                        \
    KC_EXOR(w, 16) KC_EXOR(w, 17) KC_EXOR(w, 18) KC_EXOR(w, 19)             \
    KC_EXOR(w, 20) KC_EXOR(w, 21) KC_EXOR(w, 22) KC_EXOR(w, 23)             \
    KC_EXOR(w, 24) KC_EXOR(w, 25) KC_EXOR(w, 26) KC_EXOR(w, 27)             \
    KC_EXOR(w, 28) KC_EXOR(w, 29) KC_EXOR(w, 30) KC_EXOR(w, 31)
# define KC_XMM_CLOBBERS                                                     \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",  \
    "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

KC_NOINLINE void kc_vector_wipe(void)
{
    int kind = __atomic_load_n(&vector_regs, __ATOMIC_RELAXED);

    if (kind == 0) {
        kind = vector_kind();
        __atomic_store_n(&vector_regs, kind, __ATOMIC_RELAXED);
    }
    /* (every vector register is the caller's to lose across a call) */
    if (kind == 1) {
        __asm__ __volatile__(KC_XOR16(0) KC_XOR16(1) KC_XOR16(2) KC_XOR16(3)
                             KC_XOR16(4) KC_XOR16(5) KC_XOR16(6) KC_XOR16(7)
                             KC_XOR16(8) KC_XOR16(9) KC_XOR16(10) KC_XOR16(11)
                             KC_XOR16(12) KC_XOR16(13) KC_XOR16(14)
                             KC_XOR16(15) ::: KC_XMM_CLOBBERS);
        return;
    }
    __asm__ __volatile__("vzeroall" ::: KC_XMM_CLOBBERS);
    /*
     * glibc's AVX-512 memcpy moves data through registers 16-31; a 128-bit
     * EVEX write zeroes all of one, and 512-bit forms can slow the core
     */
    if (kind == 3)
        __asm__ __volatile__(KC_EXOR16("xmm") : :);
    else if (kind == 4)
        __asm__ __volatile__(KC_EXOR16("zmm") : :);
}

#else

void kc_vector_wipe(void)
{
}

#endif

int kc_mac_key_final(const KC_MAC_FNS *m, void *t)
{
    static const unsigned char key[32];
    unsigned char out[64];
    size_t l;
    int ok;

    ok = m->init(t, key, sizeof(key), NULL)
         && m->final(t, out, &l, sizeof(out));
    OPENSSL_cleanse(out, sizeof(out));
    return ok;
}

void kc_err_top(KC_ERRTOP *t)
{
    /* an empty queue leaves the pointers alone */
    memset(t, 0, sizeof(*t));
    t->code = ERR_peek_last_error_all(&t->file, &t->line, &t->func,
                                      &t->data, NULL);
}

int kc_err_same(const KC_ERRTOP *a, const KC_ERRTOP *b)
{
    return a->code == b->code && a->file == b->file && a->line == b->line
           && a->func == b->func && a->data == b->data;
}

/* the process of the thread that claims |s|, or 0: not claimed */
static long claimer(long s)
{
    return (s & 1) != 0 ? s >> 26 : 0;
}

/*
 * *state is 0, KC_ONCE_DONE, or its claimer, (pid << 24 | tid) << 2 | 1.
 * Waiters yield, then sleep, so a claimer of lower real-time priority gets
 * the CPU; no keycache lock is held.  A claim by a thread fork() left
 * behind is taken over from scratch (its work may wait on a lock that
 * thread held, as any OpenSSL call in the child may).
 */
int kc_once_claim(long *state)
{
    long s, pid = (long)getpid(), mine = (pid << 24 | (long)gettid()) << 2 | 1;
    const struct timespec nap = { 0, 100000 };
    unsigned int waits = 0;

    for (;;) {
        s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
        if (s == KC_ONCE_DONE)
            return 0;
        if (s == mine)
            return 0;
        if (claimer(s) == pid) {
            if (++waits < 64)
                sched_yield();
            else
                nanosleep(&nap, NULL);
            continue;
        }
        if (__atomic_compare_exchange_n(state, &s, mine, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_ACQUIRE))
            return 1;
    }
}

void kc_once_done(long *state)
{
    __atomic_store_n(state, KC_ONCE_DONE, __ATOMIC_RELEASE);
}

int kc_once_foreign(const long *state)
{
    long pid = claimer(__atomic_load_n(state, __ATOMIC_ACQUIRE));

    return pid != 0 && pid != (long)getpid();
}

/*
 * Keep this module mapped for good: something may call into it after the
 * core unloads it (a parked DRBG, a thread's exit destructor).  Loaded
 * through the loader it is RTLD_NODELETE already; loaded straight, this
 * makes it so.  Once it worked, a flag read; 0: it cannot be pinned.
 */
int kc_module_pin(void)
{
    static int pinned;
    Dl_info info;

    if (__atomic_load_n(&pinned, __ATOMIC_ACQUIRE))
        return 1;
    if (dladdr((void *)kc_module_pin, &info) == 0 || info.dli_fname == NULL
        || dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE)
           == NULL)
        return 0;
    __atomic_store_n(&pinned, 1, __ATOMIC_RELEASE);
    return 1;
}
