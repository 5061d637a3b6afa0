/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key bytes in the vector registers after a keyed init.
 *
 * A lazily bound program's next first call of a symbol has the dynamic
 * linker save every vector register on that thread's stack, where a fork
 * child finds them.  A keyed init keycache serves copies a cached context
 * (an AES key schedule holds the key) or the key itself, and glibc moves
 * such copies through vector registers that the rest of the call may leave
 * as they are: so after each keyed init, every registry row, the registers
 * (XSAVE, right after the call returns) may hold no more 8-byte pieces of
 * the key than after the same call on the default provider alone.  Keys
 * are used several times, for hits, by parameter too for a MAC.  x86-64.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_family.h"
#include "kc_test.h"

#if defined(__x86_64__) && defined(__GNUC__)
# include <cpuid.h>

# define USES 6

static unsigned char area[16384] __attribute__((aligned(64)));
static size_t area_len;
static unsigned int xcr0;

/* The XSAVE area's size for what the kernel enables; 0: no XSAVE. */
static size_t xsave_size(void)
{
    unsigned int a, b, c, d, hi;

    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0
        || !__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b > sizeof(area))
        return 0;
    __asm__ __volatile__("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
    return b;
}

/*
 * Every register state into area, as the caller left it: zeroed first a
 * byte at a time (a vector store would overwrite what is to be seen).
 */
static __attribute__((noinline)) void save_registers(void)
{
    volatile unsigned char *p = area;
    size_t i;

    for (i = 0; i < area_len; i++)
        p[i] = 0;
    __asm__ __volatile__("xsave (%0)" : : "r"(area), "a"(xcr0), "d"(0)
                         : "memory");
}

/* How many of key's 8-byte pieces the saved registers hold. */
static int pieces(const unsigned char *key, size_t keylen)
{
    size_t off, i;
    int n = 0;

    for (off = 0; off + 8 <= keylen; off += 8)
        for (i = 0; i + 8 <= area_len; i++)
            if (memcmp(area + i, key + off, 8) == 0)
                n++;
    return n;
}

/*
 * One keyed init of row f in libctx (by the init's key argument, or, with
 * by_param, a MAC's "key" parameter), the registers saved as it returns;
 * then the message, so the next use finds a cached key.  The pieces, or
 * -1 if the init failed.
 */
static int keyed_init(OSSL_LIB_CTX *libctx, const KCT_FAM *f,
                      const unsigned char *key, int by_param)
{
    static const unsigned char iv[KCT_FAM_IVLEN];
    unsigned char out[KCT_FAM_OUT(16)];
    int ok, n, l;

    if (f->kind == KCT_CIPHER) {
        EVP_CIPHER *c = EVP_CIPHER_fetch(libctx, f->name, NULL);
        EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();

        ok = c != NULL && x != NULL
             && EVP_EncryptInit_ex(x, c, NULL, key,
                                   kct_fam_ivlen(f) != 0 ? iv : NULL);
        save_registers();
        n = ok ? pieces(key, f->keylen) : -1;
        if (ok)
            ok = EVP_EncryptUpdate(x, out, &l, iv, sizeof(iv))
                 && EVP_EncryptFinal_ex(x, out, &l);
        EVP_CIPHER_CTX_free(x);
        EVP_CIPHER_free(c);
    } else {
        EVP_MAC *m = EVP_MAC_fetch(libctx, f->name, NULL);
        EVP_MAC_CTX *x = m != NULL ? EVP_MAC_CTX_new(m) : NULL;
        OSSL_PARAM p[4];
        size_t ol;
        int i;

        kct_fam_mac_params(f, p, NULL);
        if (by_param) {
            for (i = 0; p[i].key != NULL; i++)
                ;
            p[i] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
                                                     (void *)key, f->keylen);
            p[i + 1] = OSSL_PARAM_construct_end();
            ok = x != NULL && EVP_MAC_CTX_set_params(x, p);
        } else {
            ok = x != NULL && EVP_MAC_init(x, key, f->keylen, p);
        }
        save_registers();
        n = ok ? pieces(key, f->keylen) : -1;
        if (ok)
            ok = (!by_param || EVP_MAC_init(x, NULL, 0, NULL))
                 && EVP_MAC_update(x, iv, sizeof(iv))
                 && EVP_MAC_final(x, out, &ol, sizeof(out));
        EVP_MAC_CTX_free(x);
        EVP_MAC_free(m);
    }
    return ok ? n : -1;
}

static void test_after_keyed_init(void)
{
    unsigned char key[KCT_FAM_MAXKEY];
    size_t r;
    int u, by_param, def, kc;

    for (r = 0; r < kct_nfams; r++) {
        const KCT_FAM *f = &kct_fams[r];

        for (by_param = 0; by_param <= (f->kind != KCT_CIPHER); by_param++) {
            kct_fill(key, f->keylen, 4000 + 2 * (uint32_t)r
                                     + (uint32_t)by_param);
            for (u = 0; u < USES; u++) {
                def = keyed_init(kct_default(), f, key, by_param);
                kc = keyed_init(kct_keycache(), f, key, by_param);
                if (def < 0 || kc < 0 || kc > def)
                    fprintf(stderr, "\n  %s%s, use %d: %d piece(s) of the key"
                            " in the registers, %d on default", f->id,
                            by_param ? " (key by parameter)" : "", u + 1, kc,
                            def);
                CU_ASSERT(def >= 0 && kc >= 0 && kc <= def);
            }
        }
    }
}

/* The scan sees a key put in xmm0 and xmm1 (16 bytes each). */
static void test_scan_sees(void)
{
    unsigned char key[32];

    kct_fill(key, sizeof(key), 3999);
    __asm__ __volatile__("movdqu (%0), %%xmm0\n\tmovdqu 16(%0), %%xmm1"
                         : : "r"(key) : "xmm0", "xmm1");
    save_registers();
    CU_ASSERT_EQUAL(pieces(key, sizeof(key)), 4);
}

static void add_suites(void)
{
    CU_pSuite s;

    if ((area_len = xsave_size()) == 0) {
        fprintf(stderr, "no XSAVE: nothing to test\n");
        return;
    }
    s = CU_add_suite("registers", NULL, NULL);
    CU_add_test(s, "the scan sees a key in the registers", test_scan_sees);
    CU_add_test(s, "a keyed init leaves no more key in them than default's",
                test_after_keyed_init);
}

#else

static void add_suites(void)
{
    fprintf(stderr, "x86-64 only: nothing to test\n");
}

#endif

int main(int argc, char **argv)
{
    return kct_main(argc, argv, add_suites);
}
