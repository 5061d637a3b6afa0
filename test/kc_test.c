/* SPDX-License-Identifier: Apache-2.0 */
#include "kc_test.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <CUnit/Basic.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "keycache.h"
#include "kc_route.h"

static OSSL_LIB_CTX *def_ctx, *kc_ctx;
static OSSL_PROVIDER *def_prov;

const char *kct_conf_path(void)
{
    const char *p = getenv("KC_TEST_CONF");

    return p != NULL ? p : KC_TEST_CONF;
}

const char *kct_vectors_dir(void)
{
    const char *p = getenv("KC_VECTORS");

    return p != NULL ? p : KC_VECTORS;
}

char *kct_file_text(const char *dir, const char *name)
{
    char path[1024];
    FILE *f;
    long n;
    char *buf = NULL;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "rb")) == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0
        && fseek(f, 0, SEEK_SET) == 0
        && (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
        }
    }
    fclose(f);
    if (buf == NULL)
        fprintf(stderr, "cannot read %s\n", path);
    return buf;
}

OSSL_LIB_CTX *kct_default(void)
{
    if (def_ctx == NULL) {
        def_ctx = OSSL_LIB_CTX_new();
        def_prov = OSSL_PROVIDER_load(def_ctx, "default");
        if (def_prov == NULL) {
            ERR_print_errors_fp(stderr);
            abort();
        }
    }
    return def_ctx;
}

OSSL_LIB_CTX *kct_keycache(void)
{
    if (kc_ctx == NULL) {
        kc_ctx = OSSL_LIB_CTX_new();
        if (kc_ctx == NULL
            || !OSSL_LIB_CTX_load_config(kc_ctx, kct_conf_path())
            || !OSSL_PROVIDER_available(kc_ctx, KEYCACHE_PROVIDER_NAME)) {
            fprintf(stderr, "cannot load keycache from %s\n", kct_conf_path());
            ERR_print_errors_fp(stderr);
            abort();
        }
    }
    return kc_ctx;
}

/* Is |line| (leading blanks skipped) a setting of one of |lines|' keys? */
static int overridden(const char *line, const char *lines)
{
    const char *l;
    size_t n;

    line += strspn(line, " \t");
    for (l = lines; *l != '\0'; l += strcspn(l, "\n"), l += *l == '\n') {
        const char *k = l + (*l == '-');

        n = strcspn(k, " =\n");
        if (n > 0 && strncmp(line, k, n) == 0
            && strchr(" \t=", line[n]) != NULL)
            return 1;
    }
    return 0;
}

int kct_copy_conf(char *path, void (*edit)(FILE *, const char *, void *),
                  void *arg)
{
    char line[1024];
    FILE *in, *out;
    int fd;

    strcpy(path, "/tmp/kc-conf-XXXXXX");
    if ((in = fopen(kct_conf_path(), "r")) == NULL)
        return 0;
    if ((fd = mkstemp(path)) < 0 || (out = fdopen(fd, "w")) == NULL) {
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        fclose(in);
        return 0;
    }
    while (fgets(line, sizeof(line), in) != NULL)
        edit(out, line, arg);
    edit(out, NULL, arg);
    fclose(in);
    if (fclose(out) != 0) {
        unlink(path);
        return 0;
    }
    return 1;
}

/* kct_write_conf's edit: |lines| applied to [keycache_sect]. */
typedef struct {
    const char *lines;
    int section;                /* inside [keycache_sect] */
} SECT_EDIT;

static void edit_section(FILE *out, const char *line, void *arg)
{
    SECT_EDIT *e = arg;
    const char *l;

    if (line == NULL)
        return;
    if (line[0] == '[')
        e->section = strncmp(line, "[keycache_sect]", 15) == 0;
    if (e->section && overridden(line, e->lines))
        return;
    fputs(line, out);
    if (e->section && line[0] == '[')
        for (l = e->lines; *l != '\0'; l += strcspn(l, "\n"),
                                        l += *l == '\n')
            if (*l != '-')
                fprintf(out, "%.*s\n", (int)strcspn(l, "\n"), l);
}

int kct_write_conf(char *path, const char *lines)
{
    SECT_EDIT e = { lines, 0 };

    return kct_copy_conf(path, edit_section, &e);
}

static int other_op;
static const OSSL_ALGORITHM *other_algs;

static const OSSL_ALGORITHM *other_query(void *provctx, int op,
                                         int *no_cache)
{
    *no_cache = 0;
    return op == other_op ? other_algs : NULL;
}

static const OSSL_DISPATCH other_fns[] = {
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))other_query },
    { 0, NULL }
};

static int other_init(const OSSL_CORE_HANDLE *handle,
                      const OSSL_DISPATCH *in, const OSSL_DISPATCH **out,
                      void **provctx)
{
    *out = other_fns;
    *provctx = (void *)handle;
    return 1;
}

int kct_other_start(KCT_OTHER *o, const char *name, int op,
                    const OSSL_ALGORITHM *algs)
{
    return kct_other_start_conf(o, name, op, algs, "");
}

int kct_other_start_conf(KCT_OTHER *o, const char *name, int op,
                         const OSSL_ALGORITHM *algs, const char *lines)
{
    char path[KCT_PATH_LEN];
    int ok;

    memset(o, 0, sizeof(*o));
    other_op = op;
    other_algs = algs;
    if ((o->ref = OSSL_LIB_CTX_new()) == NULL
        || (o->kc = OSSL_LIB_CTX_new()) == NULL
        || !OSSL_PROVIDER_add_builtin(o->ref, name, other_init)
        || !OSSL_PROVIDER_add_builtin(o->kc, name, other_init)
        || (o->ref_prov = OSSL_PROVIDER_load(o->ref, name)) == NULL
        || (o->ref_default = OSSL_PROVIDER_load(o->ref, "default")) == NULL
        || (o->kc_prov = OSSL_PROVIDER_load(o->kc, name)) == NULL
        || !kct_write_conf(path, lines))
        return 0;
    ok = OSSL_LIB_CTX_load_config(o->kc, path)
         && OSSL_PROVIDER_available(o->kc, KEYCACHE_PROVIDER_NAME);
    unlink(path);
    return ok;
}

void kct_other_stop(KCT_OTHER *o)
{
    OSSL_PROVIDER_unload(o->kc_prov);
    OSSL_PROVIDER_unload(o->ref_prov);
    OSSL_PROVIDER_unload(o->ref_default);
    OSSL_LIB_CTX_free(o->ref);
    OSSL_LIB_CTX_free(o->kc);
    memset(o, 0, sizeof(*o));
}

OSSL_LIB_CTX *kct_keycache_conf(const char *lines)
{
    char path[KCT_PATH_LEN];
    OSSL_LIB_CTX *ctx = NULL;
    int ok;

    if (!kct_write_conf(path, lines))
        return NULL;
    ok = (ctx = OSSL_LIB_CTX_new()) != NULL
         && OSSL_LIB_CTX_load_config(ctx, path)
         && OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME);
    unlink(path);
    if (!ok) {
        ERR_print_errors_fp(stderr);
        OSSL_LIB_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static int find_kc(OSSL_PROVIDER *prov, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(prov), KEYCACHE_PROVIDER_NAME) == 0) {
        *(OSSL_PROVIDER **)arg = prov;
        return 0;
    }
    return 1;
}

OSSL_PROVIDER *kct_keycache_provider_in(OSSL_LIB_CTX *ctx)
{
    OSSL_PROVIDER *p = NULL;

    OSSL_PROVIDER_do_all(ctx, find_kc, &p);
    return p;
}

OSSL_PROVIDER *kct_keycache_provider(void)
{
    return kct_keycache_provider_in(kct_keycache());
}

uint64_t kct_counter_in(OSSL_LIB_CTX *ctx, const char *name)
{
    OSSL_PROVIDER *prov = NULL;
    OSSL_PARAM params[2];
    uint64_t v = 0;

    OSSL_PROVIDER_do_all(ctx, find_kc, &prov);
    params[0] = OSSL_PARAM_construct_uint64(name, &v);
    params[1] = OSSL_PARAM_construct_end();
    if (prov == NULL || !OSSL_PROVIDER_get_params(prov, params)
        || !OSSL_PARAM_modified(params))
        return UINT64_MAX;
    return v;
}

void kct_use(OSSL_LIB_CTX *ctx)
{
    OSSL_LIB_CTX_set0_default(ctx);
}

uint64_t kct_counter(const char *name)
{
    return kct_counter_in(kct_keycache(), name);
}

const char *kct_provider_name(const OSSL_PROVIDER *prov)
{
    return prov == NULL ? "(none)" : OSSL_PROVIDER_get0_name(prov);
}

const char *kct_cipher_served(OSSL_LIB_CTX *ctx, const char *name)
{
    static char who[64];
    EVP_CIPHER *c;
    const OSSL_PROVIDER *p;

    ERR_set_mark();
    c = EVP_CIPHER_fetch(ctx, name, NULL);
    p = c != NULL ? EVP_CIPHER_get0_provider(c) : NULL;

    if (p != NULL && strcmp(OSSL_PROVIDER_get0_name(p),
                            KEYCACHE_PROVIDER_NAME) == 0
        && kc_route_is_passthrough(ctx, c, name))
        snprintf(who, sizeof(who), "%s pass-through", KEYCACHE_PROVIDER_NAME);
    else
        snprintf(who, sizeof(who), "%s", kct_provider_name(p));
    EVP_CIPHER_free(c);
    ERR_pop_to_mark();
    return who;
}

unsigned long kct_err_next(char *buf, size_t size)
{
    const char *file = NULL, *func = NULL, *data = NULL, *reason;
    int line = 0, flags = 0;
    unsigned long e = ERR_get_error_all(&file, &line, &func, &data, &flags);

    if (size == 0)
        return e;
    buf[0] = '\0';
    if (e == 0)
        return 0;
    reason = ERR_reason_error_string(e);
    snprintf(buf, size, "%d/%d (%s) in %s at %s:%d data [%s]",
             ERR_GET_LIB(e), ERR_GET_REASON(e),
             reason != NULL ? reason : "?", func != NULL ? func : "?",
             file != NULL ? file : "?", line,
             data != NULL && (flags & ERR_TXT_STRING) != 0 ? data : "");
    return e;
}

void kct_err_mask_libctx(char *err)
{
    static const char mask[] = "<library context>";
    static const char phrase[] = " library context";
    char *data = strstr(err, "data [");
    char *end;

    if (data == NULL)
        return;
    data += strlen("data [");
    if ((end = strstr(data, phrase)) == NULL)
        return;
    end += strlen(phrase);
    if ((size_t)(end - data) < strlen(mask))
        return;                 /* never longer: the buffer has no room */
    memmove(data + strlen(mask), end, strlen(end) + 1);
    memcpy(data, mask, strlen(mask));
}

void kct_err_mask_name_id(char *err)
{
    char *at = strstr(err, "Algorithm ("), *num, *end;

    if (at == NULL || (num = strstr(at, " : ")) == NULL)
        return;
    num += 3;
    for (end = num; *end >= '0' && *end <= '9'; end++)
        continue;
    if (end == num || *end != ')')
        return;
    *num = '#';
    memmove(num + 1, end, strlen(end) + 1);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

unsigned char *kct_unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex), i;
    unsigned char *out = malloc(n / 2 + 1);

    if (out == NULL || n % 2 != 0) {
        free(out);
        *len = 0;
        return NULL;
    }
    for (i = 0; i < n / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            free(out);
            *len = 0;
            return NULL;
        }
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    *len = n / 2;
    return out;
}

void kct_rec_printf(KCT_REC *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        size_t room = r->cap - r->len;

        va_start(ap, fmt);
        n = vsnprintf(r->buf == NULL ? NULL : r->buf + r->len, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort();
        if ((size_t)n < room) {
            r->len += (size_t)n;
            return;
        }
        r->cap = 2 * r->cap + (size_t)n + 4096;
        if ((r->buf = realloc(r->buf, r->cap)) == NULL)
            abort();
    }
}

void kct_rec_hex(KCT_REC *r, const unsigned char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        kct_rec_printf(r, "%02x", p[i]);
}

EVP_MAC_CTX *kct_mac_new(KCT_REC *r, EVP_MAC *mac)
{
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;

    kct_rec_printf(r, "ctx_new rc=%d", ctx != NULL);
    kct_rec_errs(r);
    return ctx;
}

int kct_mac_set(KCT_REC *r, EVP_MAC_CTX *ctx, const OSSL_PARAM *params)
{
    int rc = ctx != NULL && EVP_MAC_CTX_set_params(ctx, params);

    kct_rec_printf(r, "set_params rc=%d", rc);
    kct_rec_errs(r);
    return rc;
}

int kct_mac_init(KCT_REC *r, EVP_MAC_CTX *ctx, const unsigned char *key,
                 size_t keylen, const OSSL_PARAM *params)
{
    int rc = ctx != NULL && EVP_MAC_init(ctx, key, keylen, params);

    kct_rec_printf(r, "init(%s%zu) rc=%d", key == NULL ? "NULL/" : "", keylen,
                   rc);
    kct_rec_errs(r);
    return rc;
}

int kct_mac_update(KCT_REC *r, EVP_MAC_CTX *ctx, const unsigned char *msg,
                   size_t len)
{
    int rc = ctx != NULL && EVP_MAC_update(ctx, msg, len);

    kct_rec_printf(r, "update(%zu) rc=%d", len, rc);
    kct_rec_errs(r);
    return rc;
}

int kct_mac_final(KCT_REC *r, EVP_MAC_CTX *ctx, unsigned char *out,
                  size_t *outl, size_t outsize)
{
    int rc;

    *outl = 0;
    memset(out, 0x5a, outsize);
    rc = ctx != NULL && EVP_MAC_final(ctx, out, outl, outsize);
    kct_rec_printf(r, "final rc=%d len=%zu mac=", rc, rc ? *outl : 0);
    if (rc && !r->rc_only)
        kct_rec_hex(r, out, *outl);
    kct_rec_errs(r);
    return rc;
}

void kct_cipher_lens(KCT_REC *r, EVP_CIPHER_CTX *ctx)
{
    static const char *const names[] = {
        OSSL_CIPHER_PARAM_IVLEN, OSSL_CIPHER_PARAM_KEYLEN
    };
    OSSL_PARAM q[2];
    size_t i, v;
    int ret;

    for (i = 0; i < 2; i++) {
        v = 12345;
        q[0] = OSSL_PARAM_construct_size_t(names[i], &v);
        q[1] = OSSL_PARAM_construct_end();
        ret = EVP_CIPHER_CTX_get_params(ctx, q);
        kct_rec_printf(r, "  get %s=%d v=%zu ret_size=%zu", names[i], ret, v,
                       q[0].return_size);
        kct_rec_errs(r);
    }
}

void kct_rec_errs(KCT_REC *r)
{
    char err[KCT_ERR_LEN];

    while (kct_err_next(err, sizeof(err)) != 0) {
        if (r->mask_libctx)
            kct_err_mask_libctx(err);
        if (r->mask_name_id)
            kct_err_mask_name_id(err);
        kct_rec_printf(r, " err=%s", err);
    }
    kct_rec_printf(r, "\n");
}

void kct_rec_free(KCT_REC *r)
{
    free(r->buf);
    memset(r, 0, sizeof(*r));
}

int kct_rec_same(const char *what, const KCT_REC *want, const KCT_REC *got)
{
    const char *a = want->buf != NULL ? want->buf : "";
    const char *b = got->buf != NULL ? got->buf : "";
    const char *la = a, *lb = b;
    int line = 1;

    if (want->len == got->len && memcmp(a, b, want->len) == 0)
        return 1;
    while (*a != '\0' && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    fprintf(stderr, "\n%s differs from default at line %d\n"
            "  default : %.*s\n  keycache: %.*s\n", what, line,
            (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
    /* what led there: the lines before, both had them */
    for (a = la, line = 0; a > want->buf && line < 8; line++)
        for (a--; a > want->buf && a[-1] != '\n'; a--)
            continue;
    fprintf(stderr, "  after:\n%.*s", (int)(la - a), a);
    return 0;
}

void kct_rec_run(kct_rec_fn fn, OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    kct_use(libctx);
    ERR_clear_error();
    fn(libctx, r);
    ERR_clear_error();
    kct_use(NULL);
}

typedef struct {
    kct_rec_fn fn;
    OSSL_LIB_CTX *libctx;
    KCT_REC *r;
} REC_THREAD;

static void *rec_thread(void *arg)
{
    REC_THREAD *x = arg;

    kct_rec_run(x->fn, x->libctx, x->r);
    OPENSSL_thread_stop();
    return NULL;
}

int kct_rec_run_thread(kct_rec_fn fn, OSSL_LIB_CTX *libctx, KCT_REC *r)
{
    REC_THREAD x = { fn, libctx, r };
    pthread_t t;

    if (pthread_create(&t, NULL, rec_thread, &x) != 0)
        return 0;
    pthread_join(t, NULL);
    return 1;
}

static int unload_run(kct_rec_fn fn, OSSL_PROVIDER **unload,
                      void (*edit)(FILE *out, const char *line, void *arg),
                      int (*check)(const KCT_REC *def, const KCT_REC *got))
{
    OSSL_LIB_CTX *ref = OSSL_LIB_CTX_new(), *kc = OSSL_LIB_CTX_new();
    char path[KCT_PATH_LEN];
    KCT_REC def = { 0 }, got = { 0 };
    int ok;

    if (ref == NULL || kc == NULL || !kct_copy_conf(path, edit, NULL))
        return 0;
    ok = OSSL_LIB_CTX_load_config(kc, path)
         && OSSL_PROVIDER_available(kc, KEYCACHE_PROVIDER_NAME);
    unlink(path);
    if (!ok || (*unload = OSSL_PROVIDER_load(ref, "default")) == NULL)
        return 0;
    kct_rec_run(fn, ref, &def);
    ok = (*unload = OSSL_PROVIDER_load(kc, "default")) != NULL
         && kct_rec_run_thread(fn, kc, &got) && check(&def, &got);
    kct_rec_free(&def);
    kct_rec_free(&got);
    return ok;
}

int kct_unload_child(kct_rec_fn fn, OSSL_PROVIDER **unload,
                     void (*edit)(FILE *out, const char *line, void *arg),
                     int (*check)(const KCT_REC *def, const KCT_REC *got))
{
    pid_t pid;
    int st = 0;

    fflush(NULL);
    if ((pid = fork()) < 0)
        return 0;
    if (pid == 0)
        _exit(unload_run(fn, unload, edit, check) ? 0 : 1);
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st)
           && WEXITSTATUS(st) == 0;
}

typedef struct {
    kct_rec_fn fn;
    void (*churn)(void);
    KCT_REC kc[KCT_REC_RUNS];
} KC_RUNS;

static void *kc_runs_main(void *arg)
{
    KC_RUNS *k = arg;
    int run;

    for (run = 0; run < KCT_REC_RUNS; run++) {
        if (run == 1 && k->churn != NULL)
            k->churn();
        kct_rec_run(k->fn, kct_keycache(), &k->kc[run]);
    }
    return NULL;
}

static void *kc_runs_thread(void *arg)
{
    kc_runs_main(arg);
    OPENSSL_thread_stop();
    return NULL;
}

void kct_rec_keycache_runs(const char *name, kct_rec_fn fn,
                           void (*churn)(void), int on_thread,
                           const KCT_REC *def)
{
    KC_RUNS k;
    pthread_t t;
    char what[256];
    int run;

    memset(&k, 0, sizeof(k));
    k.fn = fn;
    k.churn = churn;
    if (on_thread) {
        CU_ASSERT_FATAL(pthread_create(&t, NULL, kc_runs_thread, &k) == 0);
        pthread_join(t, NULL);
    } else {
        kc_runs_main(&k);
    }
    for (run = 0; run < KCT_REC_RUNS; run++) {
        snprintf(what, sizeof(what), "[%s] keycache run %d", name, run + 1);
        CU_ASSERT(kct_rec_same(what, def, &k.kc[run]));
        kct_rec_free(&k.kc[run]);
    }
}

void kct_rec_pattern(const char *name, kct_rec_fn fn, void (*churn)(void),
                     int on_thread, int (*served)(void), int expect_hits)
{
    KCT_REC def = { 0 };
    uint64_t hits0, hits1;

    kct_rec_run(fn, kct_default(), &def);
    CU_ASSERT_FATAL(served());
    hits0 = kct_counter(KEYCACHE_PARAM_HITS);
    CU_ASSERT_NOT_EQUAL(hits0, UINT64_MAX);
    kct_rec_keycache_runs(name, fn, churn, on_thread, &def);
    hits1 = kct_counter(KEYCACHE_PARAM_HITS);
    if (expect_hits) {
        CU_ASSERT(hits1 != UINT64_MAX && hits1 > hits0);
        if (hits1 == UINT64_MAX || hits1 <= hits0)
            fprintf(stderr,
                    "\n[%s] keycache hits did not grow (%llu -> %llu)\n",
                    name, (unsigned long long)hits0,
                    (unsigned long long)hits1);
    }
    if (getenv("KC_SHOW_RECORDS") != NULL)
        fprintf(stderr, "\n--- %s (%llu hits) ---\n%s", name,
                (unsigned long long)(hits1 - hits0), def.buf);
    kct_rec_free(&def);
}

int kct_thread_problems(void *(*fn)(void *))
{
    pthread_t t;
    int bad = 0;

    if (pthread_create(&t, NULL, fn, &bad) != 0)
        return -1;
    pthread_join(t, NULL);
    return bad;
}

void kct_check_cold_thread(void *(*fn)(void *), uint64_t min)
{
    uint64_t p0 = kct_counter(KEYCACHE_PARAM_PASSTHROUGH);
    int bad = kct_thread_problems(fn);

    if (bad != 0)
        fprintf(stderr, "\nmiss-heavy thread: %d problems\n", bad);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(kct_counter(KEYCACHE_PARAM_PASSTHROUGH) >= p0 + min);
}

int kct_kernel_wipes(void)
{
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int ok;

    if (p == MAP_FAILED)
        return 0;
    ok = madvise(p, (size_t)page, MADV_WIPEONFORK) == 0;
    munmap(p, (size_t)page);
    return ok;
}

int kct_wf_ranges(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512], *t;
    int n = 0;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmFlags:", 8) != 0)
            continue;
        for (t = strtok(line + 8, " \n"); t != NULL; t = strtok(NULL, " \n"))
            n += strcmp(t, "wf") == 0;
    }
    fclose(f);
    return n;
}

void kct_fill(unsigned char *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (unsigned char)x;
    }
}

int kct_main(int argc, char **argv, void (*add_suites)(void))
{
    unsigned int failed;

    (void)argc;
    (void)argv;
    /* create both contexts up front: threads in tests only read them */
    kct_default();
    kct_keycache();
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    add_suites();
    /*
     * a suite or test not registered would vanish from the run (CUnit
     * keeps the last call's error only: an earlier one passes unseen)
     */
    if (CU_get_error() != CUE_SUCCESS) {
        fprintf(stderr, "registering the tests failed: %s\n",
                CU_get_error_msg());
        return 2;
    }
    /* nothing this build can run (ctest: SKIP_RETURN_CODE), not a pass */
    if (CU_get_registry()->uiNumberOfTests == 0) {
        fprintf(stderr, "no tests registered: skipped\n");
        CU_cleanup_registry();
        return 77;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
    CU_cleanup_registry();
    kct_use(NULL);
    OSSL_LIB_CTX_free(kc_ctx);
    OSSL_PROVIDER_unload(def_prov);
    OSSL_LIB_CTX_free(def_ctx);
    kc_ctx = def_ctx = NULL;
    return failed == 0 ? 0 : 1;
}

/* kctestmd: see kc_test.h */
static EVP_MD *md_delegate;
int kct_testmd_updates;

static void *md_newctx(void *provctx)
{
    return EVP_MD_CTX_new();
}

static void md_freectx(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

static void *md_dupctx(void *ctx)
{
    EVP_MD_CTX *dup = EVP_MD_CTX_new();

    if (dup != NULL && !EVP_MD_CTX_copy_ex(dup, ctx)) {
        EVP_MD_CTX_free(dup);
        dup = NULL;
    }
    return dup;
}

static int md_init(void *ctx, const OSSL_PARAM params[])
{
    return EVP_DigestInit_ex2(ctx, md_delegate, NULL);
}

static int md_update(void *ctx, const unsigned char *in, size_t inl)
{
    kct_testmd_updates++;
    return EVP_DigestUpdate(ctx, in, inl);
}

static int md_final(void *ctx, unsigned char *out, size_t *outl,
                    size_t outsz)
{
    unsigned int n = 0;

    if (outsz < 32 || !EVP_DigestFinal_ex(ctx, out, &n))
        return 0;
    *outl = n;
    return 1;
}

static int md_get_params(OSSL_PARAM params[])
{
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_BLOCK_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, 64))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, 32))
        return 0;
    return 1;
}

static const OSSL_PARAM *md_gettable_params(void *provctx)
{
    static const OSSL_PARAM p[] = {
        OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_BLOCK_SIZE, NULL),
        OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_SIZE, NULL),
        OSSL_PARAM_END
    };

    return p;
}

static const OSSL_DISPATCH md_sha256_fns[] = {
    { OSSL_FUNC_DIGEST_NEWCTX, (void (*)(void))md_newctx },
    { OSSL_FUNC_DIGEST_FREECTX, (void (*)(void))md_freectx },
    { OSSL_FUNC_DIGEST_DUPCTX, (void (*)(void))md_dupctx },
    { OSSL_FUNC_DIGEST_INIT, (void (*)(void))md_init },
    { OSSL_FUNC_DIGEST_UPDATE, (void (*)(void))md_update },
    { OSSL_FUNC_DIGEST_FINAL, (void (*)(void))md_final },
    { OSSL_FUNC_DIGEST_GET_PARAMS, (void (*)(void))md_get_params },
    { OSSL_FUNC_DIGEST_GETTABLE_PARAMS, (void (*)(void))md_gettable_params },
    { 0, NULL }
};

const OSSL_ALGORITHM kct_testmd_algs[] = {
    { "SHA2-256:SHA-256:SHA256", "provider=kctestmd",
      md_sha256_fns, NULL },
    { NULL, NULL, NULL, NULL }
};

int kct_testmd_begin(void)
{
    kct_testmd_updates = 0;
    return (md_delegate = EVP_MD_fetch(kct_default(), "SHA256", NULL)) != NULL;
}

void kct_testmd_end(void)
{
    EVP_MD_free(md_delegate);
    md_delegate = NULL;
}

int kct_child_output(const char *self, const char *conf, const char *name,
                     char **out)
{
    int fd[2], st;
    size_t len = 0, cap = 4096;
    ssize_t n;
    pid_t pid;
    char *buf = malloc(cap);

    *out = NULL;
    if (buf == NULL || pipe(fd) != 0) {
        free(buf);
        return 0;
    }
    if ((pid = fork()) == 0) {
        alarm(KCT_CHILD_ALARM);
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("OPENSSL_CONF", conf, 1);
        execl(self, self, "--child", name, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    while (pid > 0 && (n = read(fd[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2) {
            char *b = realloc(buf, cap *= 2);

            if (b == NULL)
                break;
            buf = b;
        }
    }
    close(fd[0]);
    buf[len] = '\0';
    if (pid <= 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)
        || WEXITSTATUS(st) != 0) {
        free(buf);
        return 0;
    }
    *out = buf;
    return 1;
}
