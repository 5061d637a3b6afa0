/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - the template core (core.c) with its MAC (tmpl.c) and cipher
 * (ctmpl.c) sides, records (record.c) and each family's first-use gate.
 */
#ifndef KC_LAYER_H
#define KC_LAYER_H

#include "common/common.h"
#include "cache/cache.h"
#include "inner/inner.h"

/* A record: the calls before the key, each parameter as (name, type, ...) */
#define KC_TREC_MAX 384

/*
 * An item: a call marker, or a parameter then its name and data, each with
 * a NUL (a replayed UTF-8 string ends) and padded to 8 bytes (replayed
 * integers are aligned).  A signature item is a parameter without data.
 */
typedef struct {
    uint16_t tag;             /* KC_T_* */
    uint16_t namelen;         /* with the NUL */
    uint32_t type;            /* OSSL_PARAM data_type, | KC_T_NULL */
    uint64_t size;            /* data_size */
} KC_TITEM;

#define KC_T_CALL 1           /* marker: set_ctx_params */
#define KC_T_PARAM 2          /* a parameter with its data */
#define KC_T_SIG 3            /* a parameter without its data */
#define KC_T_EINIT 4          /* marker: a keyless encrypt init */
#define KC_T_DINIT 5          /* marker: a keyless decrypt init */
#define KC_T_NULL 0x80000000u /* a parameter's data (a marker's params) NULL */

/* an item's name and data are padded to whole words */
#define KC_TPAD8(n) (((n) + 7) & ~(size_t)7)

/*
 * Does a UTF-8 parameter end where a record keeps all of it?  The default
 * reads up to the NUL, which data_size may count or not (then it is just
 * past data_size).
 */
static ossl_inline int kc_trec_utf8_ends(const OSSL_PARAM *p)
{
    const char *s = p->data;

    return s == NULL || memchr(s, '\0', p->data_size) != NULL
           || s[p->data_size] == '\0';
}

/*
 * Does the item at off of rec (len bytes) record q as item (KC_T_PARAM or
 * KC_T_SIG)?  The next offset, or 0.  In place: every recorded call runs it.
 */
static ossl_inline size_t kc_trec_item_at(const unsigned char *rec,
                                          size_t off, size_t len, int item,
                                          const OSSL_PARAM *q)
{
    const unsigned char *name, *data;
    KC_TITEM it;

    if (len - off < sizeof(it))
        return 0;
    memcpy(&it, rec + off, sizeof(it));
    name = rec + off + sizeof(it);
    data = name + KC_TPAD8(it.namelen);
    if (it.tag != item || it.size != q->data_size
        || it.type != (q->data_type | (q->data == NULL ? KC_T_NULL : 0))
        || strcmp((const char *)name, q->key) != 0
        || (item == KC_T_PARAM && q->data != NULL && q->data_size > 0
            && memcmp(data, q->data, q->data_size) != 0)
        || (q->data_type == OSSL_PARAM_UTF8_STRING
            && !kc_trec_utf8_ends(q)))
        return 0;
    /* a signature item has no data */
    if (item != KC_T_PARAM || q->data == NULL)
        return (size_t)(data - rec);
    return (size_t)(data - rec) + KC_TPAD8(q->data_size + 1);
}

/* A call marker tag of type at off, and the offset after it, or 0. */
static ossl_inline size_t kc_trec_marker_at(const unsigned char *rec,
                                            size_t off, size_t len, int tag,
                                            uint32_t type)
{
    KC_TITEM it;

    if (len - off < sizeof(it))
        return 0;
    memcpy(&it, rec + off, sizeof(it));
    if (it.tag != tag || it.type != type)
        return 0;
    return off + sizeof(it);
}

/* Can p be recorded?  Its name's length, or 0. */
size_t kc_trec_recordable(const OSSL_PARAM *p);
/* Append p (name namelen long) as item tag to buf (cap) at *len; 0: full. */
int kc_trec_put(unsigned char *buf, size_t cap, size_t *len, int tag,
                const OSSL_PARAM *p, size_t namelen);
/* The same for a call marker tag of type (KC_T_NULL, a side's flags). */
int kc_trec_marker(unsigned char *buf, size_t cap, size_t *len, int tag,
                   uint32_t type);
/* Decode the item at off into it (and p for a parameter); the next offset. */
size_t kc_trec_get(const unsigned char *buf, size_t off, KC_TITEM *it,
                   OSSL_PARAM *p);
/*
 * Does rec[off, len) start with exactly this call: a marker tag of type,
 * then ps[0, n) as items of kind item, and no more?  The next offset, or 0.
 */
size_t kc_trec_match(const unsigned char *rec, size_t off, size_t len,
                     int tag, uint32_t type, int item,
                     const OSSL_PARAM *const *ps, size_t n);
/* A fast hash over whole words, for records (which are not secrets). */
uint64_t kc_trec_hash(uint64_t h, const uint64_t *p, size_t nbytes);
/*
 * The last UTF-8 parameter |name| of a record and the UTF-8 |with| of the
 * same call (NULL if absent there); 0 if the record has no |name|.
 */
int kc_trec_last_utf8(const unsigned char *rec, size_t len, const char *name,
                      const char *with, const char **value,
                      const char **with_value);
/* Replay one call (its marker, items p[0, n) with room for an end). */
typedef int KC_TCALL_FN(const void *fns, void *ctx, const KC_TITEM *call,
                        OSSL_PARAM *p, size_t n);
/* Replay the calls recorded in rec[from, to), each with call(). */
int kc_trec_replay_calls(const unsigned char *rec, size_t from, size_t to,
                         KC_TCALL_FN *call, const void *fns, void *ctx);

/* ---- the core (core.c): what the MAC and cipher sides both do ---- */
#define KC_TCALL_MAX 8          /* the most parameters a recorded call has */
/* the longest key a wrapper keeps of its own keying (AES's, GMAC's) */
#define KC_HELD_MAX 32
#define KC_TSIG_MAX 64          /* room for the volatile calls' signature */

/*
 * What the core keeps of a wrapper: its last member t, so that a new one is
 * cleared only up to the record buffers (KC_TCORE_HEAD).
 */
typedef struct {
    void *inner;                /* the inner context, once there is one */
    int cold;                   /* the thread's hit rate is low: pass */
    uint64_t counted;           /* see KC_LOOKUP */
    /* value to sig_hash, in this order: see KC_TMARK */
    int value;                  /* the shape's memo value, -1: not learned */
    /* rec: the shape's calls [0, shape_len), then the volatile ones */
    size_t shape_len, len, sig_len;
    uint64_t hash, sig_hash;
    uint64_t rec[KC_TREC_MAX / 8];
    uint64_t sig[KC_TSIG_MAX / 8];  /* the volatile calls without data */
} KC_TCORE;

#define KC_TCORE_HEAD(type) offsetof(type, t.rec)
#define KC_TCORE_OF(type, core) ((type *)((char *)(core) - offsetof(type, t)))

/*
 * Is a new context of MAC family alg among its thread's first
 * KC_APP_FIRST?  Then it is the application's default's from the start,
 * neither recorded nor counted: what the family learns (gate.c), the no-op
 * calls' answers and the private library context's cipher or digest store
 * cost millions of instructions, which a process using a family once or
 * twice never earns back (issue 33), while the application's own stores
 * are built anyway.  Later contexts record, count and cache as usual.  Not
 * with admit_after 1, where a first context's key is cached already.
 * Counted per thread and instance (a thread that moves to another instance
 * starts over).  Inline: every new context of such a family asks.
 */
#define KC_APP_FIRST 3

static ossl_inline int kc_tcore_app_first(const KC_PROVCTX *pctx,
                                          const KC_ALG *alg)
{
    KC_FIRSTS *t = &kc_cache_firsts;
    unsigned char *n = &t->n[alg->stat - KC_STAT_FAM];

    if (t->inst != pctx->inst) {
        memset(t->n, 0, sizeof(t->n));
        t->inst = pctx->inst;
    }
    if (*n >= KC_APP_FIRST || pctx->admit_after <= 1)
        return 0;
    ++*n;
    return 1;
}

/* What a call that fails to record rolls back to: t's value to sig_hash. */
typedef struct {
    unsigned char b[offsetof(KC_TCORE, rec) - offsetof(KC_TCORE, value)];
} KC_TMARK;
#define kc_tcore_mark(t, m) memcpy((m)->b, &(t)->value, sizeof((m)->b))
#define kc_tcore_back(t, m) memcpy(&(t)->value, (m)->b, sizeof((m)->b))

/* What differs between the sides (as in OpenSSL's ciphercommon_gcm.c). */
typedef struct {
    /* a fresh context, t's shape replayed, keyed alone; *ok: all returned 1 */
    void *(*make)(KC_TCORE *t, int enc, const unsigned char *key,
                  size_t keylen, int *ok);
    /* what the default says of the shape (vol 0) or the volatile calls */
    int (*value)(KC_TCORE *t, int vol);
    uint64_t call_salt;         /* mixed into each call's hash */
    uint64_t shape_salt;        /* and into a shape's memo key */
    /* is a prefix of an accepted record accepted (ciphers' yes, MACs' no)? */
    int prefix;
} KC_TSIDE;

/* bit 0 of a memo value: every call returned 1 and raised nothing */
#define KC_TVALID 1

/* how kc_tcore_append() appends a call */
#define KC_AS_SHAPE 0
#define KC_AS_VOLATILE 1        /* to the volatile calls and the signature */
#define KC_AS_VOLATILE_ONLY 2   /* to the volatile calls (signature known) */
/* Append a call: a marker tag of type, then ps[0, n); 0: caller rolls back */
int kc_tcore_append(KC_TCORE *t, const KC_TSIDE *s, int tag, uint32_t type,
                    const OSSL_PARAM *const *ps, size_t n, int how);
/*
 * The usual case, cheaply: does the call make t's shape the one the thread
 * learned last (or a prefix of it)?  Then copied, not encoded, hashed and
 * looked up; else 0, t untouched.
 */
int kc_tcore_same_as_last(KC_TCORE *t, const KC_TSIDE *s, KC_CACHE *c,
                          const void *owner, int tag, uint32_t type,
                          const OSSL_PARAM *const *ps, size_t n);
/* What the default says of t's shape (vol 0) or volatile signature: memo. */
int kc_tcore_learn(KC_TCORE *t, const KC_TSIDE *s, KC_CACHE *c,
                   const void *owner, int vol);
/* s->make()'s template, or NULL if it fails or raises (queue untouched). */
void *kc_tcore_make(KC_TCORE *t, const KC_TSIDE *s, const KC_ALG *alg,
                    int enc, const unsigned char *key, size_t keylen);

/*
 * The template for (t's shape, key), made on an admitted miss, for the
 * caller to copy (or lk's spare).  NULL if not served from the cache, *why
 * -2 if the key is not admitted yet.  Inline: every keying init runs it.
 */
static ossl_inline void *kc_tcore_template(KC_TCORE *t, const KC_TSIDE *s,
                                           KC_CACHE *c, const KC_ALG *alg,
                                           int enc, const unsigned char *key,
                                           size_t keylen, KC_LOOKUP *lk,
                                           int *why)
{
    const unsigned char *rec = (const unsigned char *)t->rec;
    void *tmpl;

    lk->counted = &t->counted;
    tmpl = kc_cache_find_rec(c, alg, rec, t->shape_len, t->hash, key, keylen,
                             lk);
    if (tmpl != NULL)
        return tmpl;
    /* not (yet) seen often enough: the default's own calls, uncached */
    if (!lk->admit) {
        *why = -2;
        return NULL;
    }
    if ((tmpl = kc_tcore_make(t, s, alg, enc, key, keylen)) == NULL)
        return NULL;
    if (!kc_cache_add_rec(c, alg, rec, t->shape_len, key, keylen, tmpl, lk)) {
        alg->freectx(tmpl);
        return NULL;
    }
    return tmpl;
}

/*
 * Does the default's set_ctx_params (CMAC, GMAC) fail a call naming a
 * parameter twice (OpenSSL 4) rather than take the first (3.x)?  Asked once.
 */
int kc_tmac_repeats_fail(KC_PROVCTX *pctx, const KC_TFAM *f);

/*
 * The provider context a MAC family's default contexts (probes, templates,
 * bases, passed-through ones, quirk learners) are made in: see tmpl.c.
 */
void *kc_tmac_provctx(KC_PROVCTX *pctx, const KC_TFAM *f);
/* The same where one can be made now, for learning quirks; else private. */
void *kc_tmac_learn_provctx(KC_PROVCTX *pctx, const KC_TFAM *f);

/*
 * What a family learns by trying the default (direct_bind(), no-op calls)
 * costs millions of instructions: learned at its first context (gate.c),
 * so a wrapper's direct_on, kfns and entries' free never change under it.
 * Other threads wait; 0 only when asked from inside that learning.
 */
int kc_gate_tfam(KC_PROVCTX *pctx, const KC_TFAM *f);
int kc_gate_cfam(KC_PROVCTX *pctx, const KC_CFAM *f);
static ossl_inline int kc_tfam_ready(KC_PROVCTX *pctx, const KC_TFAM *f)
{
    return __atomic_load_n(&f->direct_state, __ATOMIC_ACQUIRE)
           == KC_ONCE_DONE || kc_gate_tfam(pctx, f);
}
static ossl_inline int kc_cfam_ready(KC_PROVCTX *pctx, const KC_CFAM *f)
{
    return __atomic_load_n(&f->direct_state, __ATOMIC_ACQUIRE)
           == KC_ONCE_DONE || kc_gate_cfam(pctx, f);
}

/* The default's parameter table fn of a family (its ctx's, or its own). */
#define KC_CTX_TABLE(fn, pctx)                                                \
    ((fn) == NULL ? NULL : (fn)(NULL, (pctx)->inner_provctx))
#define KC_TABLE(fn, pctx) ((fn) == NULL ? NULL : (fn)((pctx)->inner_provctx))

/* tmpl.c: the template core's MAC side */
int kc_tmpl_bind(KC_PROVCTX *pctx, KC_TFAM *f, const OSSL_ALGORITHM *alg);
void kc_tmpl_first_use(KC_PROVCTX *pctx, KC_TFAM *f);
void *kc_tmac_newctx(KC_PROVCTX *pctx, int which);
void *kc_tmac_newctx_fetching(KC_PROVCTX *pctx, int which);
OSSL_FUNC_mac_dupctx_fn kc_tmac_dupctx;
OSSL_FUNC_mac_freectx_fn kc_tmac_freectx;
OSSL_FUNC_mac_init_fn kc_tmac_init;
OSSL_FUNC_mac_update_fn kc_tmac_update;
OSSL_FUNC_mac_final_fn kc_tmac_final;
OSSL_FUNC_mac_get_ctx_params_fn kc_tmac_get_ctx_params;
OSSL_FUNC_mac_set_ctx_params_fn kc_tmac_set_ctx_params;
const OSSL_PARAM *kc_tmac_gettable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tmac_settable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tmac_gettable_params(KC_PROVCTX *pctx, int which);
/* get_params: the inner's, a lone "size" query answered as learned */
int kc_tmac_get_params(int which, OSSL_PARAM params[]);
/* Replay a record's calls rec[0, len) onto ctx with m's set_ctx_params. */
int kc_trec_replay(const unsigned char *rec, size_t len, const KC_MAC_FNS *m,
                   void *ctx);
/* ctmpl.c: the template core's cipher side */
int kc_ctmpl_bind(KC_PROVCTX *pctx, KC_CFAM *f, const OSSL_ALGORITHM *alg);
void kc_ctmpl_first_use(KC_PROVCTX *pctx, KC_CFAM *f);
void kc_ctmpl_keyed_fns(KC_CFAM *f, const KC_CIPHER_FNS *k);
void *kc_tciph_newctx(KC_PROVCTX *pctx, int which);
OSSL_FUNC_cipher_dupctx_fn kc_tciph_dupctx;
OSSL_FUNC_cipher_freectx_fn kc_tciph_freectx;
OSSL_FUNC_cipher_encrypt_init_fn kc_tciph_einit;
OSSL_FUNC_cipher_decrypt_init_fn kc_tciph_dinit;
OSSL_FUNC_cipher_update_fn kc_tciph_update;
OSSL_FUNC_cipher_final_fn kc_tciph_final;
OSSL_FUNC_cipher_cipher_fn kc_tciph_cipher;
OSSL_FUNC_cipher_get_ctx_params_fn kc_tciph_get_ctx_params;
OSSL_FUNC_cipher_set_ctx_params_fn kc_tciph_set_ctx_params;
const OSSL_PARAM *kc_tciph_gettable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tciph_settable_ctx_params(KC_PROVCTX *pctx, int which);
const OSSL_PARAM *kc_tciph_gettable_params(KC_PROVCTX *pctx, int which);
int kc_tciph_get_params(int which, OSSL_PARAM params[]);

/* A cipher family's dispatch table: the layer's, its index bound in. */
#define KC_TCIPH_IMPL(prefix, which)                                          \
    static OSSL_FUNC_cipher_newctx_fn prefix##_newctx;                        \
    static OSSL_FUNC_cipher_get_params_fn prefix##_get_params;                \
    static OSSL_FUNC_cipher_gettable_params_fn prefix##_gettable_params;      \
    static OSSL_FUNC_cipher_gettable_ctx_params_fn prefix##_gettable_ctx;     \
    static OSSL_FUNC_cipher_settable_ctx_params_fn prefix##_settable_ctx;     \
    static void *prefix##_newctx(void *provctx)                               \
    {                                                                         \
        return kc_tciph_newctx(provctx, which);                               \
    }                                                                         \
    static int prefix##_get_params(OSSL_PARAM params[])                       \
    {                                                                         \
        return kc_tciph_get_params(which, params);                            \
    }                                                                         \
    static const OSSL_PARAM *prefix##_gettable_params(void *provctx)          \
    {                                                                         \
        return kc_tciph_gettable_params(provctx, which);                      \
    }                                                                         \
    static const OSSL_PARAM *prefix##_gettable_ctx(void *cctx, void *provctx) \
    {                                                                         \
        return kc_tciph_gettable_ctx_params(provctx, which);                  \
    }                                                                         \
    static const OSSL_PARAM *prefix##_settable_ctx(void *cctx, void *provctx) \
    {                                                                         \
        return kc_tciph_settable_ctx_params(provctx, which);                  \
    }                                                                         \
    static const OSSL_DISPATCH prefix##_functions[] = {                       \
        { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void))prefix##_newctx },         \
        { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void))kc_tciph_freectx },       \
        { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void))kc_tciph_dupctx },         \
        { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void))kc_tciph_einit },    \
        { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void))kc_tciph_dinit },    \
        { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void))kc_tciph_update },         \
        { OSSL_FUNC_CIPHER_FINAL, (void (*)(void))kc_tciph_final },           \
        { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void))kc_tciph_cipher },         \
        { OSSL_FUNC_CIPHER_GET_PARAMS, (void (*)(void))prefix##_get_params }, \
        { OSSL_FUNC_CIPHER_GETTABLE_PARAMS,                                   \
          (void (*)(void))prefix##_gettable_params },                         \
        { OSSL_FUNC_CIPHER_GET_CTX_PARAMS,                                    \
          (void (*)(void))kc_tciph_get_ctx_params },                          \
        { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,                               \
          (void (*)(void))prefix##_gettable_ctx },                            \
        { OSSL_FUNC_CIPHER_SET_CTX_PARAMS,                                    \
          (void (*)(void))kc_tciph_set_ctx_params },                          \
        { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,                               \
          (void (*)(void))prefix##_settable_ctx },                            \
        { 0, NULL }                                                           \
    };

#endif
