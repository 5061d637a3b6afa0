/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - what a family is: what its file tells the template core
 * (KC_TDESC for MACs, KC_CDESC for ciphers), and the family as bound to
 * the running default (KC_TFAM, KC_CFAM), held in the provider context.
 * Included by common.h.
 */
#ifndef KC_FAMILY_H
#define KC_FAMILY_H

typedef struct kc_tdesc_st KC_TDESC;
typedef struct kc_tfam_st KC_TFAM;

/* the most zero bytes a family's park_scrub may ask for */
#define KC_SCRUB_MAX 32

/* What a family's file tells the shared layer: only what differs. */
struct kc_tdesc_st {
    const char *name;               /* the default's first name for it */
    const char *description;
    const OSSL_DISPATCH *functions; /* ours */
    /*
     * Parameter names a shape may hold for its template to be cached
     * (others are served uncached), and the volatile names: recorded apart
     * and replayed onto each copy after the key, so not part of the cache
     * key (GMAC's IV).  The default must process volatile names after the
     * key and after all other names of one set_ctx_params call, and keying
     * before or after them must end in the same state.
     */
    const char *const *shape_names;
    const char *const *volatile_names;
    /*
     * The parameter naming a cipher the default fetches (CMAC's, GMAC's;
     * its query is "properties" in the same call), or NULL.  A context
     * whose cipher only the application's library context resolves the
     * built-in default's way is served there (see tmpl.c).
     */
    const char *cipher_param;
    /*
     * Does a "key" parameter of set_ctx_params key the context the way
     * init with that key does (CMAC, GMAC)?  If not (KMAC only stores
     * it), such calls are passed through.
     */
    int set_key_keys;
    /*
     * Does each volatile call replace what an earlier one set, whatever
     * that was (GMAC's IV)?  Then only the last one is replayed.
     */
    int volatile_last_wins;
    /*
     * Does a keyless init bring a used context back to exactly the state
     * the key left, leaving nothing of its messages (CMAC, after
     * park_scrub)?  Then freed contexts that got nothing but updates,
     * finals and keyless inits are kept as spares, restarted by a keyless
     * init, and a hit takes one instead of copying the template.
     */
    int reinit_restores;
    /*
     * Zero bytes a given-back context is updated with before it is kept,
     * so that it holds nothing of the caller's message: the default wipes
     * a context the program frees, and CMAC keeps a message's last block
     * (32: whole or partial, it is overwritten) even through a keyless
     * init.  At most KC_SCRUB_MAX.
     */
    size_t park_scrub;
    /*
     * What the default's get_ctx_params reports as "size" for a context
     * keyed with a shape it caches and set nothing since (CMAC: the AES
     * block), so that EVP_MAC_final's query needs no call; 0 to ask.
     */
    size_t keyed_size;
    /*
     * Optional: may a template be cached for a valid record of names from
     * shape_names (say, the cipher it names)?  Asked once per thread and
     * record.
     */
    int (*cacheable)(KC_PROVCTX *pctx, const unsigned char *shape,
                     size_t len);
    /*
     * Optional (GMAC): keycache's own keyed context, which runs on the
     * default's ciphers named in direct_ciphers (bound at start into
     * KC_TFAM.ciph) instead of through the default's MAC, whose copies
     * take references on shared objects.  Templates are made by
     * direct_new() from a shape and key the default's own context took
     * quietly; a hit forwards to direct's functions, which answer every
     * call as the default's MAC would.
     */
    const KC_MAC_FNS *direct;
    const char *const *direct_ciphers;
    /* or the default's digest it runs on (KMAC's Keccak), bound in KC_TFAM */
    const char *direct_digest;
    void *(*direct_new)(KC_PROVCTX *pctx, const unsigned char *shape,
                        size_t len, const unsigned char *key, size_t keylen);
    /*
     * Optional: learn at start what the running default does where
     * versions differ (KC_TFAM.quirks); 0 keeps the family off direct.
     */
    int (*direct_bind)(KC_PROVCTX *pctx, KC_TFAM *f);
};

/* the most ciphers a direct family runs on */
#define KC_TFAM_CIPHERS 3

/* A family as bound to the running default provider. */
struct kc_tfam_st {
    const KC_TDESC *d;
    KC_ALG alg;
    KC_MAC_FNS mac;
    int on;                         /* offered: the config says so */
    /* learned at start: the record memo's value of the empty shape */
    int empty_value;
    /* learned at start: what get_params (no context) says "size" is, or 0 */
    size_t fixed_size;
    /* d->direct is in use: every cipher it names was found complete */
    int direct_on;
    KC_CIPHER_FNS ciph[KC_TFAM_CIPHERS];
    KC_DIGEST_FNS dig;
    size_t dig_block, dig_size;     /* its block and output sizes */
    /* KC_Q_* learned of the default: at first use, at the first name twice */
    unsigned int quirks;
    /* learned at first use yet?  See kc_tfam_ready() */
    long direct_state;
};

typedef struct kc_cfam_st KC_CFAM;

/* What a cipher family's file tells the shared layer. */
typedef struct {
    const char *name;               /* the default's first name for it */
    const char *description;
    const OSSL_DISPATCH *functions; /* ours */
    /*
     * Parameter names a call before the key may hold to be recorded as
     * part of the shape (OCB: the IV and tag lengths); others, and those
     * per_message() says carry a message's data, are passed through.
     */
    const char *const *shape_names;
    int (*per_message)(const OSSL_PARAM *p);
    /* Does the default's key set-up depend on the direction (OCB)? */
    int key_by_direction;
    /*
     * Are per-message params (an expected tag) and an IV given before the
     * key recorded as volatile calls, replayed onto each keyed copy
     * instead of being part of the cache key (GCM)?  Keying must then
     * leave what they set alone.  Otherwise such calls pass through.
     */
    int volatile_ok;
    /*
     * Does an "ivlen" set_ctx_params the default accepts give the context
     * that IV length (GCM)?  Then a context keyed from the cache without
     * an IV answers EVP's IV-length query before its IV init itself
     * (ctmpl.c, "Just keyed").
     */
    int ivlen_set_sets;
    /*
     * Keyed contexts of keycache's own (AES-SIV), instead of copies of the
     * default's: run on the default's ciphers named in direct_ciphers
     * (bound at start into KC_CFAM.sub), made unkeyed by direct_new() and
     * then given the same calls a default context gets.  direct_bind()
     * learns what versions differ in (KC_CFAM.quirks); 0 keeps the family
     * on the default's contexts.
     */
    const KC_CIPHER_FNS *direct;
    const char *const *direct_ciphers;
    void *(*direct_new)(KC_PROVCTX *pctx, const KC_CFAM *f);
    int (*direct_bind)(KC_PROVCTX *pctx, KC_CFAM *f);
    /*
     * Does an empty parameter array change the default's context (AES-SIV:
     * it reopens the final on some releases)?  Then a keyless init with
     * one is passed through, not taken for a change of direction alone.
     */
    int empty_set_acts;
    /*
     * Does the default draw an IV at an encrypting init that brings none,
     * where the running version does so (kc_quirk_gcm_draws_iv: AES-GCM)?
     */
    int may_draw_iv;
} KC_CDESC;

/* the most ciphers a direct cipher family runs on */
#define KC_CFAM_SUBS 2

/* A cipher family as bound to the running default provider. */
struct kc_cfam_st {
    const KC_CDESC *d;
    /* what entries are: [1] keyed to encrypt (or either way), [0] decrypt */
    KC_ALG alg[2];
    KC_CIPHER_FNS fns;
    /* a keyed context's functions: d->direct's once bound, else fns */
    const KC_CIPHER_FNS *kfns;
    KC_CIPHER_FNS sub[KC_CFAM_SUBS];
    unsigned int quirks;            /* KC_Q_* direct_bind learned */
    int on;                         /* offered: the config says so */
    size_t keylen;                  /* the one the default accepts */
    int empty_value;                /* what a fresh context is (ctmpl.c) */
    int draws_iv;                   /* an IV drawn at an IV-less init (4.x GCM) */
    long direct_state;              /* see kc_cfam_ready() */
};

#endif
