/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A copy only reads the context it copies: EVP_CIPHER_CTX_copy() and
 * EVP_MAC_CTX_dup() take it const, and threads may copy one template at
 * once (rust-openssl, HAProxy), so a write there is a data race that can
 * lose a copy's IV.  Races show only now and then; this shows every write.
 * Each template is made on a new thread, after a first pair kept alive
 * there (so what the thread and the process keep is made already, and
 * nothing is in the thread's pools), with every block its set-up
 * allocates on pages of their own, read-only during the copy: a write
 * there faults, and the handler notes the block and lets the write go on.
 * The copy is then used and compared with the default's, so a copy that
 * reads too little fails too.
 */
#include <pthread.h>
#include <signal.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "kc_test.h"

/* ---- an allocator that can put a window's blocks on read-only pages ---- */

#define MAX_BLOCKS 1024

typedef struct {
    unsigned char *base;        /* its pages, NULL: a free row */
    size_t len;                 /* the pages' bytes */
    size_t n;                   /* the block's */
    int written;                /* while read-only */
} BLOCK;

static BLOCK blocks[MAX_BLOCKS];
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static int window;              /* allocations go on pages of their own */
static size_t page;

static BLOCK *find(const void *p)
{
    size_t i;

    for (i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].base != NULL && blocks[i].base == p)
            return &blocks[i];
    return NULL;
}

static void *paged(size_t n)
{
    size_t len = (n + page - 1) / page * page, i;
    unsigned char *p;

    if (len == 0)
        len = page;
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    for (i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].base == NULL) {
            blocks[i].base = p;
            blocks[i].len = len;
            blocks[i].n = n;
            blocks[i].written = 0;
            return p;
        }
    munmap(p, len);
    return NULL;
}

static void *t_malloc(size_t n, const char *file, int line)
{
    void *p;

    (void)file;
    (void)line;
    pthread_mutex_lock(&blocks_lock);
    p = window ? paged(n) : malloc(n);
    pthread_mutex_unlock(&blocks_lock);
    return p;
}

static void t_free(void *p, const char *file, int line)
{
    BLOCK *b;

    (void)file;
    (void)line;
    pthread_mutex_lock(&blocks_lock);
    if ((b = find(p)) != NULL) {
        munmap(b->base, b->len);
        b->base = NULL;
    } else {
        free(p);
    }
    pthread_mutex_unlock(&blocks_lock);
}

static void *t_realloc(void *p, size_t n, const char *file, int line)
{
    BLOCK *b;
    void *q;

    pthread_mutex_lock(&blocks_lock);
    if ((b = find(p)) == NULL && !window) {
        q = realloc(p, n);
        pthread_mutex_unlock(&blocks_lock);
        return q;
    }
    pthread_mutex_unlock(&blocks_lock);
    if ((q = t_malloc(n, file, line)) != NULL && p != NULL) {
        pthread_mutex_lock(&blocks_lock);
        b = find(p);
        pthread_mutex_unlock(&blocks_lock);
        /* a block of the allocator's: no more than it holds */
        memcpy(q, p, b != NULL ? (b->n < n ? b->n : n)
                               : (malloc_usable_size(p) < n
                                  ? malloc_usable_size(p) : n));
        t_free(p, file, line);
    }
    return q;
}

/*
 * After a case: a window block still allocated is OpenSSL's or keycache's
 * longer-lived state, made on the case's first use: left to the process
 * (its pages kept), never made read-only again.
 */
static void retire(void)
{
    size_t i;

    pthread_mutex_lock(&blocks_lock);
    for (i = 0; i < MAX_BLOCKS; i++)
        blocks[i].base = NULL;
    pthread_mutex_unlock(&blocks_lock);
}

/* every window block read-only (1) or writable again (0) */
static void protect(int ro)
{
    size_t i;

    pthread_mutex_lock(&blocks_lock);
    for (i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].base != NULL)
            mprotect(blocks[i].base, blocks[i].len,
                     ro ? PROT_READ : PROT_READ | PROT_WRITE);
    pthread_mutex_unlock(&blocks_lock);
}

/* a write to a read-only window block: noted, and let go on */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
    unsigned char *a = si->si_addr;
    size_t i;

    (void)uc;
    for (i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].base != NULL && a >= blocks[i].base
            && a < blocks[i].base + blocks[i].len) {
            blocks[i].written = 1;
            mprotect(blocks[i].base, blocks[i].len, PROT_READ | PROT_WRITE);
            return;
        }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- the cases ---- */

static OSSL_LIB_CTX *kc;
static const unsigned char key[32] = "a key a template is made with..";
static const unsigned char iv[12] = "an IV, held";
static const unsigned char msg[32] = "a message sealed with each copy";

typedef struct {
    const char *name;           /* the cipher or MAC */
    const char *param, *value;  /* a MAC's digest or cipher, or NULL */
    int keyed;                  /* 0 unkeyed, 1 keyed */
    int with_iv;                /* the IV in the template's init */
} CASE;

typedef struct {
    const CASE *c;
    OSSL_LIB_CTX *libctx;
    int guard;                  /* pages read-only around the copy */
    int rc;                     /* the copy's */
    int wrote;                  /* it wrote to the template (guarded) */
    unsigned char out[64];
    size_t outl;
} RUN;

static void window_on(int on)
{
    pthread_mutex_lock(&blocks_lock);
    window = on;
    pthread_mutex_unlock(&blocks_lock);
}

/* any window block written while read-only; the rows then dropped */
static int any_written(void)
{
    size_t i;
    int w = 0;

    pthread_mutex_lock(&blocks_lock);
    for (i = 0; i < MAX_BLOCKS; i++)
        w |= blocks[i].base != NULL && blocks[i].written;
    pthread_mutex_unlock(&blocks_lock);
    return w;
}

/*
 * One template and its copy, the template's set-up in the window if
 * guarded (then the copy made with its pages read-only); 1 if both made.
 */
static int cipher_pair(RUN *x, EVP_CIPHER *ci, int guard,
                       EVP_CIPHER_CTX **t, EVP_CIPHER_CTX **c)
{
    int ok;

    *c = EVP_CIPHER_CTX_new();
    if (guard)
        window_on(1);
    *t = EVP_CIPHER_CTX_new();
    ok = *t != NULL && *c != NULL
         && EVP_EncryptInit_ex(*t, ci, NULL, x->c->keyed ? key : NULL,
                               x->c->with_iv ? iv : NULL);
    if (guard) {
        window_on(0);
        protect(1);
    }
    ok = ok && EVP_CIPHER_CTX_copy(*c, *t);
    if (guard) {
        protect(0);
        x->wrote = any_written();
    }
    return ok;
}

static int mac_pair(RUN *x, EVP_MAC *m, int guard, EVP_MAC_CTX **t,
                    EVP_MAC_CTX **c)
{
    OSSL_PARAM p[3], *q = p;
    int ok;

    if (x->c->param != NULL)
        *q++ = OSSL_PARAM_construct_utf8_string(x->c->param,
                                                (char *)x->c->value, 0);
    if (x->c->with_iv)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV,
                                                 (void *)iv, sizeof(iv));
    *q = OSSL_PARAM_construct_end();
    if (guard)
        window_on(1);
    *t = EVP_MAC_CTX_new(m);
    ok = *t != NULL
         && (x->c->keyed ? EVP_MAC_init(*t, key, sizeof(key), p)
                         : EVP_MAC_CTX_set_params(*t, p));
    if (guard) {
        window_on(0);
        protect(1);
    }
    ok = ok && (*c = EVP_MAC_CTX_dup(*t)) != NULL;
    if (guard) {
        protect(0);
        x->wrote = any_written();
    }
    return ok;
}

/*
 * Seal msg with a copy of the template, keyed by the copy if need be.
 * Guarded, a first pair made on this thread and kept until the end makes
 * what the thread keeps (its cache, memos), and frees nothing to its pools:
 * the second template's blocks are its own.
 */
static void *cipher_case(void *arg)
{
    RUN *x = arg;
    EVP_CIPHER *ci = EVP_CIPHER_fetch(x->libctx, x->c->name, NULL);
    EVP_CIPHER_CTX *t0 = NULL, *c0 = NULL, *t = NULL, *c = NULL;
    int l = 0, l2 = 0;

    if (ci == NULL)
        goto end;
    /* (made for what it makes, whether or not the default copies it) */
    if (x->guard)
        (void)cipher_pair(x, ci, 0, &t0, &c0);
    x->rc = cipher_pair(x, ci, x->guard, &t, &c);
    if (x->rc
        && EVP_EncryptInit_ex(c, NULL, NULL, key, x->c->with_iv ? NULL : iv)
        && EVP_EncryptUpdate(c, x->out, &l, msg, sizeof(msg))
        && EVP_EncryptFinal_ex(c, x->out + l, &l2)) {
        x->outl = (size_t)(l + l2);
        if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                x->out + x->outl) > 0)
            x->outl += 16;
    }
 end:
    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_CTX_free(t);
    EVP_CIPHER_CTX_free(c0);
    EVP_CIPHER_CTX_free(t0);
    EVP_CIPHER_free(ci);
    return NULL;
}

/* the MAC of msg with a copy of the template, keyed by the copy if need be */
static void *mac_case(void *arg)
{
    RUN *x = arg;
    EVP_MAC *m = EVP_MAC_fetch(x->libctx, x->c->name, NULL);
    EVP_MAC_CTX *t0 = NULL, *c0 = NULL, *t = NULL, *c = NULL;

    if (m == NULL)
        goto end;
    if (x->guard)
        (void)mac_pair(x, m, 0, &t0, &c0);
    x->rc = mac_pair(x, m, x->guard, &t, &c);
    if (x->rc && (x->c->keyed || EVP_MAC_init(c, key, sizeof(key), NULL))
        && EVP_MAC_update(c, msg, sizeof(msg)))
        EVP_MAC_final(c, x->out, &x->outl, sizeof(x->out));
 end:
    EVP_MAC_CTX_free(c);
    EVP_MAC_CTX_free(t);
    EVP_MAC_CTX_free(c0);
    EVP_MAC_CTX_free(t0);
    EVP_MAC_free(m);
    return NULL;
}

/*
 * fn against the default's, in libctx (keycache's): warmed, then guarded;
 * the length of the default's output
 */
static size_t run_case_in(void *(*fn)(void *), const CASE *c, const char *what,
                        OSSL_LIB_CTX *libctx)
{
    RUN want = { c, kct_default(), 0, 0, 0, { 0 }, 0 };
    RUN warm = { c, libctx, 0, 0, 0, { 0 }, 0 };
    RUN got = { c, libctx, 1, 0, 0, { 0 }, 0 };
    pthread_t t;

    CU_ASSERT_FATAL(pthread_create(&t, NULL, fn, &want) == 0);
    pthread_join(t, NULL);
    CU_ASSERT_FATAL(pthread_create(&t, NULL, fn, &warm) == 0);
    pthread_join(t, NULL);
    CU_ASSERT_FATAL(pthread_create(&t, NULL, fn, &got) == 0);
    pthread_join(t, NULL);
    retire();
    if (got.rc != want.rc || got.outl != want.outl
        || memcmp(got.out, want.out, sizeof(got.out)) != 0)
        fprintf(stderr, "\n  %s: copy rc %d, %zu bytes; the default's rc %d,"
                " %zu bytes\n", what, got.rc, got.outl, want.rc, want.outl);
    if (got.wrote)
        fprintf(stderr, "\n  %s: the copy wrote to the context it copied\n",
                what);
    CU_ASSERT_EQUAL(got.wrote, 0);
    CU_ASSERT_EQUAL(got.rc, want.rc);
    CU_ASSERT_EQUAL(got.outl, want.outl);
    CU_ASSERT(memcmp(got.out, want.out, sizeof(got.out)) == 0);
    /*
     * the reference made its copy and used it: something was compared
     * (the default copies no unkeyed CMAC on 3.0)
     */
    if (c->keyed && (want.rc != 1 || want.outl == 0))
        fprintf(stderr, "\n  %s: the default's copy rc %d, %zu bytes\n",
                what, want.rc, want.outl);
    CU_ASSERT(!c->keyed || (want.rc == 1 && want.outl > 0));
    return want.outl;
}

static void run_case(void *(*fn)(void *), const CASE *c, const char *what)
{
    (void)run_case_in(fn, c, what, kc);
}

static void test_cipher_copies(void)
{
    static const CASE cases[] = {
        { "AES-256-GCM", NULL, NULL, 0, 0 },
        { "AES-256-GCM", NULL, NULL, 0, 1 },
        { "AES-256-GCM", NULL, NULL, 1, 0 },
        { "AES-256-GCM", NULL, NULL, 1, 1 },
        { "AES-256-OCB", NULL, NULL, 0, 0 },
        { "AES-256-OCB", NULL, NULL, 0, 1 },
        { "AES-256-OCB", NULL, NULL, 1, 0 },
        { "AES-256-OCB", NULL, NULL, 1, 1 },
        /* (not unkeyed: 3.0's default refuses that copy and leaks) */
        { "AES-128-SIV", NULL, NULL, 1, 0 }
    };
    char what[96];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(what, sizeof(what), "%s, %s%s", cases[i].name,
                 cases[i].keyed ? "keyed" : "unkeyed",
                 cases[i].with_iv ? ", with its IV" : "");
        run_case(cipher_case, &cases[i], what);
    }
}

static void test_mac_copies(void)
{
    static const CASE cases[] = {
        { "HMAC", OSSL_MAC_PARAM_DIGEST, "SHA256", 0, 0 },
        { "HMAC", OSSL_MAC_PARAM_DIGEST, "SHA256", 1, 0 },
        { "CMAC", OSSL_MAC_PARAM_CIPHER, "AES-256-CBC", 0, 0 },
        { "CMAC", OSSL_MAC_PARAM_CIPHER, "AES-256-CBC", 1, 0 },
        { "GMAC", OSSL_MAC_PARAM_CIPHER, "AES-256-GCM", 0, 1 },
        { "GMAC", OSSL_MAC_PARAM_CIPHER, "AES-256-GCM", 1, 1 },
        { "KMAC-128", NULL, NULL, 0, 0 }, { "KMAC-128", NULL, NULL, 1, 0 }
    };
    char what[96];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(what, sizeof(what), "%s, %s", cases[i].name,
                 cases[i].keyed ? "keyed" : "unkeyed");
        run_case(mac_case, &cases[i], what);
    }
}

/*
 * A thread's first HMAC context is deferred (families/hmac.c): its first
 * copy publishes in it the default context it made (one compare-and-swap,
 * for copies made at once); every later copy only reads it.
 */
static void *deferred_case(void *arg)
{
    RUN *x = arg;
    EVP_MAC *m = EVP_MAC_fetch(x->libctx, "HMAC", NULL);
    EVP_MAC_CTX *t = NULL, *c1 = NULL, *c = NULL;
    OSSL_PARAM p[2];

    if (m == NULL)
        return NULL;
    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256",
                                            0);
    p[1] = OSSL_PARAM_construct_end();
    if (x->guard)
        window_on(1);
    t = EVP_MAC_CTX_new(m);
    x->rc = t != NULL && EVP_MAC_init(t, key, sizeof(key), p)
            && EVP_MAC_update(t, msg, 10);
    if (x->guard)
        window_on(0);
    c1 = x->rc ? EVP_MAC_CTX_dup(t) : NULL;
    if (x->guard)
        protect(1);
    c = c1 != NULL ? EVP_MAC_CTX_dup(t) : NULL;
    if (x->guard) {
        protect(0);
        x->wrote = any_written();
    }
    x->rc = c != NULL && EVP_MAC_update(c, msg, sizeof(msg))
            && EVP_MAC_final(c, x->out, &x->outl, sizeof(x->out));
    EVP_MAC_CTX_free(c);
    EVP_MAC_CTX_free(c1);
    EVP_MAC_CTX_free(t);
    EVP_MAC_free(m);
    return NULL;
}

static void test_deferred_copies(void)
{
    static const CASE c = { "HMAC", OSSL_MAC_PARAM_DIGEST, "SHA256", 1, 0 };
    OSSL_LIB_CTX *deployed = kct_keycache_conf("admit_after = 3\n");

    CU_ASSERT_PTR_NOT_NULL_FATAL(deployed);
    CU_ASSERT_EQUAL(run_case_in(deferred_case, &c,
                                "HMAC, deferred, a later copy", deployed), 32);
    OSSL_LIB_CTX_free(deployed);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("a copy only reads what it copies", NULL,
                               NULL);

    CU_add_test(s, "cipher contexts", test_cipher_copies);
    CU_add_test(s, "MAC contexts", test_mac_copies);
    CU_add_test(s, "a deferred HMAC template, after its first copy",
                test_deferred_copies);
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    int r;

    /* before OpenSSL allocates anything */
    page = (size_t)sysconf(_SC_PAGESIZE);
    if (!CRYPTO_set_mem_functions(t_malloc, t_realloc, t_free))
        return 2;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    /* every cipher family on, on every version */
    kc = kct_keycache_conf("aes_gcm = on\naes_ocb = on\naes_siv = on\n"
                           "cmac = on\n");
    if (kc == NULL)
        return 2;
    r = kct_main(argc, argv, add_suites);
    OSSL_LIB_CTX_free(kc);
    return r;
}
