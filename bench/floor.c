/* SPDX-License-Identifier: Apache-2.0 */
/*
 * floor.so - the forwarding floor: a provider that offers the MACs and the
 * AES GCM, OCB and SIV ciphers keycache wraps, and only forwards each call
 * to a default context of the same algorithm.  No cache, no look-up, no
 * counting, and nothing saved.
 *
 * A provider that caches key schedules hands libcrypto contexts of its
 * own (a hit puts other keyed state behind one, and neither
 * provider-mac(7) nor provider-cipher(7) can copy state into a context
 * libcrypto already holds).  Done by wrapping the default's context, every
 * newctx and dupctx pays a wrapper and every call a forwarding call: that
 * is this floor.  bench/floor.sh runs the pattern catalogue with this
 * provider in keycache's place.  A row whose floor exceeds its target is
 * one that trimming a wrapper's overhead cannot meet: only work that saves
 * more than the wrapper costs in that row can (a hit, or an own context
 * cheaper than the default's, as keycache's AES-SIV).
 *
 * Built twice: floor.so, and floor-spare.so (FLOOR_SPARE) whose freed
 * wrapper is kept for the thread's next context, so that allocating costs
 * a thread-local read (as a pool would); its static TLS costs every new
 * thread, so the plain build has none.  FLOOR_APP=1 in the environment
 * makes contexts with the application's default's provider context.
 * bench/floor.sh takes, row by row, the cheapest variant.
 *
 * A bench tool: one instance per process (the state below is global).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#define SLOTS 16

typedef const OSSL_PARAM *(gettable_fn)(void *provctx);
typedef const OSSL_PARAM *(ctx_gettable_fn)(void *ctx, void *provctx);

/* One algorithm of the default's: its functions, found by function id. */
typedef struct {
    void *(*newctx)(void *provctx);
    void *(*dupctx)(void *ctx);
    void (*freectx)(void *ctx);
    OSSL_FUNC_mac_init_fn *minit;
    OSSL_FUNC_mac_update_fn *mupdate;
    OSSL_FUNC_mac_final_fn *mfinal;
    OSSL_FUNC_cipher_encrypt_init_fn *einit;
    OSSL_FUNC_cipher_decrypt_init_fn *dinit;
    OSSL_FUNC_cipher_update_fn *cupdate;
    OSSL_FUNC_cipher_final_fn *cfinal;
    OSSL_FUNC_cipher_cipher_fn *cipher;
    int (*get_params)(OSSL_PARAM params[]);
    int (*get_ctx_params)(void *ctx, OSSL_PARAM params[]);
    int (*set_ctx_params)(void *ctx, const OSSL_PARAM params[]);
    gettable_fn *gettable_params;
    ctx_gettable_fn *gettable_ctx_params, *settable_ctx_params;
    OSSL_DISPATCH disp[20];
} ALG;

typedef struct {
    const ALG *a;
    void *in;                 /* the default's context */
} FW;

/*
 * The functions come from the default loaded in a private library context.
 * Contexts are made there too, or with FLOOR_APP=1 with the application's
 * default's provider context (same code), so that they fetch where the
 * default's own would: cheaper at first use, dearer where that fetch
 * finds this provider again (GMAC's cipher).  bench/floor.sh takes the
 * cheaper, row by row.
 */
static OSSL_LIB_CTX *lib, *app;
static OSSL_PROVIDER *deflt, *app_deflt;
static void *dctx;            /* the private default's provider context */
static void *actx;            /* the application's default's, once found */
static pthread_once_t app_once = PTHREAD_ONCE_INIT;
static int use_app;
static ALG macs[SLOTS], ciphers[SLOTS];
static OSSL_ALGORITHM mac_algs[SLOTS + 1], cipher_algs[SLOTS + 1];
static char propdef[80];

#ifdef FLOOR_SPARE
/*
 * A freed wrapper kept for the thread's next context.  Left behind at
 * thread exit: cheaper than a provider that cleans up, but a thread's
 * leftover makes the default's allocations dearer in the next thread.
 */
static __thread FW *spare __attribute__((tls_model("initial-exec")));
# define SPARE_TAKE(w) ((w) = spare, spare = NULL, (w))
# define SPARE_PUT(w) (spare == NULL ? (spare = (w), 1) : 0)
#else
# define SPARE_TAKE(w) ((w) = NULL)
# define SPARE_PUT(w) 0
#endif

/* At the first context: the application's built-in default (loaded). */
static void find_app(void)
{
    OSSL_PROVIDER *p = use_app ? OSSL_PROVIDER_try_load(app, "default", 1)
                               : NULL;

    if (p != NULL && OSSL_PROVIDER_get0_dispatch(p)
                     == OSSL_PROVIDER_get0_dispatch(deflt)) {
        app_deflt = p;
        __atomic_store_n(&actx, OSSL_PROVIDER_get0_provider_ctx(p),
                         __ATOMIC_RELEASE);
    } else {
        OSSL_PROVIDER_unload(p);
        __atomic_store_n(&actx, dctx, __ATOMIC_RELEASE);
    }
}

static void *new_provctx(void)
{
    void *p = __atomic_load_n(&actx, __ATOMIC_ACQUIRE);

    if (p == NULL) {
        pthread_once(&app_once, find_app);
        p = __atomic_load_n(&actx, __ATOMIC_ACQUIRE);
    }
    return p;
}

/* ---- forwarders: the same for every algorithm ---- */

static void *fw_make(const ALG *a, void *in)
{
    FW *w;

    if (in == NULL)
        return NULL;
    if (SPARE_TAKE(w) == NULL && (w = malloc(sizeof(*w))) == NULL) {
        a->freectx(in);
        return NULL;
    }
    w->a = a;
    w->in = in;
    return w;
}

static void *fw_dupctx(void *c)
{
    FW *w = c;

    return fw_make(w->a, w->a->dupctx(w->in));
}

static void fw_freectx(void *c)
{
    FW *w = c;

    if (w == NULL)
        return;
    w->a->freectx(w->in);
    if (!SPARE_PUT(w))
        free(w);
}

static int fw_minit(void *c, const unsigned char *k, size_t kl,
                    const OSSL_PARAM p[])
{
    FW *w = c;

    return w->a->minit(w->in, k, kl, p);
}

static int fw_mupdate(void *c, const unsigned char *in, size_t inl)
{
    FW *w = c;

    return w->a->mupdate(w->in, in, inl);
}

static int fw_mfinal(void *c, unsigned char *out, size_t *outl, size_t outsz)
{
    FW *w = c;

    return w->a->mfinal(w->in, out, outl, outsz);
}

static int fw_einit(void *c, const unsigned char *k, size_t kl,
                    const unsigned char *iv, size_t ivl, const OSSL_PARAM p[])
{
    FW *w = c;

    return w->a->einit(w->in, k, kl, iv, ivl, p);
}

static int fw_dinit(void *c, const unsigned char *k, size_t kl,
                    const unsigned char *iv, size_t ivl, const OSSL_PARAM p[])
{
    FW *w = c;

    return w->a->dinit(w->in, k, kl, iv, ivl, p);
}

static int fw_cupdate(void *c, unsigned char *out, size_t *outl, size_t outsz,
                      const unsigned char *in, size_t inl)
{
    FW *w = c;

    return w->a->cupdate(w->in, out, outl, outsz, in, inl);
}

static int fw_cfinal(void *c, unsigned char *out, size_t *outl, size_t outsz)
{
    FW *w = c;

    return w->a->cfinal(w->in, out, outl, outsz);
}

static int fw_cipher(void *c, unsigned char *out, size_t *outl, size_t outsz,
                     const unsigned char *in, size_t inl)
{
    FW *w = c;

    return w->a->cipher(w->in, out, outl, outsz, in, inl);
}

static int fw_get_ctx_params(void *c, OSSL_PARAM p[])
{
    FW *w = c;

    return w->a->get_ctx_params(w->in, p);
}

static int fw_set_ctx_params(void *c, const OSSL_PARAM p[])
{
    FW *w = c;

    return w->a->set_ctx_params(w->in, p);
}

/* ---- per slot: the calls that name no context of ours ---- */

#define SLOT_FNS(kind, n)                                                    \
    static void *kind##_new##n(void *p)                                      \
    {                                                                        \
        (void)p;                                                             \
        return fw_make(&kind[n], kind[n].newctx(new_provctx()));        \
    }                                                                        \
    static int kind##_getp##n(OSSL_PARAM p[])                                \
    {                                                                        \
        return kind[n].get_params(p);                                        \
    }                                                                        \
    static const OSSL_PARAM *kind##_gtp##n(void *p)                          \
    {                                                                        \
        (void)p;                                                             \
        return kind[n].gettable_params(dctx);                                \
    }                                                                        \
    static const OSSL_PARAM *kind##_gtc##n(void *c, void *p)                 \
    {                                                                        \
        (void)p;                                                             \
        return kind[n].gettable_ctx_params(c != NULL ? ((FW *)c)->in : NULL, \
                                           dctx);                            \
    }                                                                        \
    static const OSSL_PARAM *kind##_stc##n(void *c, void *p)                 \
    {                                                                        \
        (void)p;                                                             \
        return kind[n].settable_ctx_params(c != NULL ? ((FW *)c)->in : NULL, \
                                           dctx);                            \
    }

#define SLOTS_OF(kind)                                                       \
    SLOT_FNS(kind, 0) SLOT_FNS(kind, 1) SLOT_FNS(kind, 2) SLOT_FNS(kind, 3)  \
    SLOT_FNS(kind, 4) SLOT_FNS(kind, 5) SLOT_FNS(kind, 6) SLOT_FNS(kind, 7)  \
    SLOT_FNS(kind, 8) SLOT_FNS(kind, 9) SLOT_FNS(kind, 10)                   \
    SLOT_FNS(kind, 11) SLOT_FNS(kind, 12) SLOT_FNS(kind, 13)                 \
    SLOT_FNS(kind, 14) SLOT_FNS(kind, 15)
SLOTS_OF(macs)
SLOTS_OF(ciphers)

typedef struct {
    void *(*newctx)(void *);
    int (*getp)(OSSL_PARAM[]);
    gettable_fn *gtp;
    ctx_gettable_fn *gtc, *stc;
} SLOT;

#define SLOT_ROW(kind, n)                                                    \
    { kind##_new##n, kind##_getp##n, kind##_gtp##n, kind##_gtc##n,           \
      kind##_stc##n }
#define SLOT_ROWS(kind)                                                      \
    { SLOT_ROW(kind, 0), SLOT_ROW(kind, 1), SLOT_ROW(kind, 2),               \
      SLOT_ROW(kind, 3), SLOT_ROW(kind, 4), SLOT_ROW(kind, 5),               \
      SLOT_ROW(kind, 6), SLOT_ROW(kind, 7), SLOT_ROW(kind, 8),               \
      SLOT_ROW(kind, 9), SLOT_ROW(kind, 10), SLOT_ROW(kind, 11),             \
      SLOT_ROW(kind, 12), SLOT_ROW(kind, 13), SLOT_ROW(kind, 14),            \
      SLOT_ROW(kind, 15) }
static const SLOT mac_slots[SLOTS] = SLOT_ROWS(macs);
static const SLOT cipher_slots[SLOTS] = SLOT_ROWS(ciphers);

/* ---- tables ---- */

/* Each function an ALG holds, by its id as a MAC's and a cipher's (0: none) */
#define AT(f) offsetof(ALG, f)
static const struct {
    int mac, cipher;
    size_t off;
} fields[] = {
    { OSSL_FUNC_MAC_NEWCTX, OSSL_FUNC_CIPHER_NEWCTX, AT(newctx) },
    { OSSL_FUNC_MAC_DUPCTX, OSSL_FUNC_CIPHER_DUPCTX, AT(dupctx) },
    { OSSL_FUNC_MAC_FREECTX, OSSL_FUNC_CIPHER_FREECTX, AT(freectx) },
    { OSSL_FUNC_MAC_INIT, 0, AT(minit) },
    { OSSL_FUNC_MAC_UPDATE, 0, AT(mupdate) },
    { OSSL_FUNC_MAC_FINAL, 0, AT(mfinal) },
    { 0, OSSL_FUNC_CIPHER_ENCRYPT_INIT, AT(einit) },
    { 0, OSSL_FUNC_CIPHER_DECRYPT_INIT, AT(dinit) },
    { 0, OSSL_FUNC_CIPHER_UPDATE, AT(cupdate) },
    { 0, OSSL_FUNC_CIPHER_FINAL, AT(cfinal) },
    { 0, OSSL_FUNC_CIPHER_CIPHER, AT(cipher) },
    { OSSL_FUNC_MAC_GET_PARAMS, OSSL_FUNC_CIPHER_GET_PARAMS, AT(get_params) },
    { OSSL_FUNC_MAC_GET_CTX_PARAMS, OSSL_FUNC_CIPHER_GET_CTX_PARAMS,
      AT(get_ctx_params) },
    { OSSL_FUNC_MAC_SET_CTX_PARAMS, OSSL_FUNC_CIPHER_SET_CTX_PARAMS,
      AT(set_ctx_params) },
    { OSSL_FUNC_MAC_GETTABLE_PARAMS, OSSL_FUNC_CIPHER_GETTABLE_PARAMS,
      AT(gettable_params) },
    { OSSL_FUNC_MAC_GETTABLE_CTX_PARAMS, OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,
      AT(gettable_ctx_params) },
    { OSSL_FUNC_MAC_SETTABLE_CTX_PARAMS, OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,
      AT(settable_ctx_params) },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
/* fields[k]'s id in the operation wrap() is at */
#define ID(k) (mac ? fields[k].mac : fields[k].cipher)

static void put(ALG *a, int *n, int id, void (*fn)(void))
{
    if (fn != NULL) {
        a->disp[*n].function_id = id;
        a->disp[*n].function = fn;
        (*n)++;
    }
}

#define FN(f) ((void (*)(void))(f))

/*
 * Takes the default's functions of |impl| into |a| and writes the
 * forwarding table (function ids differ between the two operations).
 */
static int wrap(ALG *a, const SLOT *s, int op, const OSSL_DISPATCH *impl)
{
    /* what the table offers for each of fields[], in its order */
    void (*const fw[])(void) = {
        FN(s->newctx), FN(fw_dupctx), FN(fw_freectx),
        FN(fw_minit), FN(fw_mupdate), FN(fw_mfinal),
        FN(fw_einit), FN(fw_dinit), FN(fw_cupdate), FN(fw_cfinal),
        FN(fw_cipher), FN(s->getp), FN(fw_get_ctx_params),
        FN(fw_set_ctx_params), FN(s->gtp), FN(s->gtc), FN(s->stc)
    };
    int n = 0, mac = op == OSSL_OP_MAC, id;
    void (*f)(void);
    size_t k;

    _Static_assert(sizeof(fw) / sizeof(fw[0]) == NFIELDS, "fw[] per field");
    memset(a, 0, sizeof(*a));
    /* POSIX: every function pointer is represented alike */
    for (; impl->function_id != 0; impl++)
        for (k = 0; k < NFIELDS; k++)
            if (ID(k) == impl->function_id)
                memcpy((char *)a + fields[k].off, &impl->function,
                       sizeof(impl->function));
    if (a->newctx == NULL || a->freectx == NULL)
        return 0;
    for (k = 0; k < NFIELDS; k++) {
        memcpy(&f, (char *)a + fields[k].off, sizeof(f));
        if ((id = ID(k)) != 0 && f != NULL)
            put(a, &n, id, fw[k]);
    }
    return 1;
}

/* The MACs keycache wraps (the default's others would only cost methods). */
static int wanted_mac(const char *names)
{
    return strncmp(names, "HMAC", 4) == 0 || strncmp(names, "CMAC", 4) == 0
           || strncmp(names, "GMAC", 4) == 0 || strstr(names, "KMAC") != NULL;
}

/* The ciphers keycache caches: AES in GCM, OCB and SIV modes. */
static int wanted_cipher(const char *names)
{
    return strncmp(names, "AES-", 4) == 0
           && (strstr(names, "-GCM") != NULL || strstr(names, "-OCB") != NULL
               || strstr(names, "-SIV") != NULL)
           && strstr(names, "GCM-SIV") == NULL;
}

static void take(int op, ALG *tab, const SLOT *slots, OSSL_ALGORITHM *out)
{
    int nc = 0, n = 0;
    const OSSL_ALGORITHM *a = OSSL_PROVIDER_query_operation(deflt, op, &nc);

    for (; a != NULL && a->algorithm_names != NULL && n < SLOTS; a++) {
        if (op == OSSL_OP_CIPHER ? !wanted_cipher(a->algorithm_names)
                                 : !wanted_mac(a->algorithm_names))
            continue;
        if (!wrap(&tab[n], &slots[n], op, a->implementation))
            continue;
        out[n].algorithm_names = a->algorithm_names;
        out[n].property_definition = propdef;
        out[n].implementation = tab[n].disp;
        out[n].algorithm_description = a->algorithm_description;
        n++;
    }
}

static const OSSL_ALGORITHM *floor_query(void *provctx, int op, int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
    return op == OSSL_OP_MAC ? mac_algs : op == OSSL_OP_CIPHER ? cipher_algs
                                                              : NULL;
}

static void floor_teardown(void *provctx)
{
    (void)provctx;
    OSSL_PROVIDER_unload(app_deflt);
    OSSL_PROVIDER_unload(deflt);
    OSSL_LIB_CTX_free(lib);
    deflt = NULL;
    lib = NULL;
}

static const OSSL_DISPATCH floor_dispatch[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))floor_teardown },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))floor_query },
    { 0, NULL }
};

int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    OSSL_FUNC_core_get_params_fn *get_params = NULL;
    char *name = NULL;
    OSSL_PARAM p[2];

    for (; in->function_id != 0; in++)
        if (in->function_id == OSSL_FUNC_CORE_GET_PARAMS)
            get_params = OSSL_FUNC_core_get_params(in);
        else if (in->function_id == OSSL_FUNC_CORE_GET_LIBCTX)
            app = (OSSL_LIB_CTX *)OSSL_FUNC_core_get_libctx(in)(handle);
    /* "provider=<the name the config gave it>", as every provider says */
    p[0] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_CORE_PROV_NAME,
                                         &name, 0);
    p[1] = OSSL_PARAM_construct_end();
    if (get_params == NULL || !get_params(handle, p) || name == NULL
        || strlen(name) > sizeof(propdef) - 10)
        return 0;
    use_app = getenv("FLOOR_APP") != NULL
              && strcmp(getenv("FLOOR_APP"), "1") == 0;
    strcpy(propdef, "provider=");
    strcat(propdef, name);
    if ((lib = OSSL_LIB_CTX_new()) == NULL
        || (deflt = OSSL_PROVIDER_load(lib, "default")) == NULL) {
        OSSL_LIB_CTX_free(lib);
        return 0;
    }
    dctx = OSSL_PROVIDER_get0_provider_ctx(deflt);
    take(OSSL_OP_MAC, macs, mac_slots, mac_algs);
    take(OSSL_OP_CIPHER, ciphers, cipher_slots, cipher_algs);
    *out = floor_dispatch;
    *provctx = dctx;
    return 1;
}
