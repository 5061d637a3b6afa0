/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - what a family's file tells the template core (KC_TDESC for
 * MACs, KC_CDESC for ciphers), and the family as bound to the running
 * default (KC_TFAM, KC_CFAM).  Included by common.h.
 */
#ifndef KC_FAMILY_H
#define KC_FAMILY_H

typedef struct kc_tdesc_st KC_TDESC;
typedef struct kc_tfam_st KC_TFAM;

/* KC_TDESC.base */
#define KC_BASE_COPY 1
#define KC_BASE_KEYED 2

/* the most zero bytes a family's park_scrub may ask for */
#define KC_SCRUB_MAX 32

/* What a MAC family's file tells the shared layer: only what differs. */
struct kc_tdesc_st {
    const char *name;               /* the default's first name for it */
    const OSSL_DISPATCH *functions; /* ours */
    /*
     * Names a cached shape may hold, and volatile ones (GMAC's IV), replayed
     * onto each copy instead: the default must set them after the key and
     * the other names of a call, and keying before or after must end alike.
     */
    const char *const *shape_names;
    const char *const *volatile_names;
    /*
     * The name of a cipher the default fetches (with "properties"), or NULL:
     * one only the application's library context has is served there.
     */
    const char *cipher_param;
    /* does set_ctx_params' "key" key as init does?  (KMAC's: passed through) */
    int set_key_keys;
    /* does each volatile call replace the last?  Then only it is replayed */
    int volatile_last_wins;
    /*
     * Does a keyless init restore a used context to the state the key left
     * (CMAC, after park_scrub)?  Then freed contexts are kept as spares.
     */
    int reinit_restores;
    /*
     * Zero bytes (at most KC_SCRUB_MAX) a spare is updated with before it
     * is kept: CMAC's last block survives a keyless init, and the default
     * wipes what the program frees.
     */
    size_t park_scrub;
    /*
     * How a thread's base serves its cold contexts (layer/tmpl.c,
     * KC_TBASE), 0: none.  KC_BASE_COPY: copied with only its shape set
     * (GMAC); KC_BASE_KEYED: the default copies no unkeyed context (CMAC,
     * KMAC), so the base is keyed with zeros and copied at the key.
     */
    int base;
    /* "size" once keyed with a cached shape (CMAC: 16); 0: ask the default */
    size_t keyed_size;
    /*
     * Is set_ctx_params with an empty array a no-op in every state on every
     * version (KMAC's reads only names it knows; 3.0's CMAC drops an engine,
     * GMAC loads its cipher again)?  Then, where a fresh default context
     * took one quietly (KC_Q_EMPTY_SET_OK), a keyed one is not asked.
     */
    int empty_set_inert;
    /*
     * Do copies of a thread's keyed first context look its key up (GMAC)?
     * Where the family's own contexts copy and finish for less than the
     * default's, a keyed template copied per message gains.  Only for a
     * family OpenSSL's own code never keys (KBKDF keys CMAC): the origin
     * check judges who copied, not who keyed (cache/origin.c).  Not with
     * reinit_restores: a spare restarted by a keyless init lacks the IV.
     */
    int copies_look_up;
    /*
     * Optional (CMAC, GMAC): the ciphers it is cached on; a shape is
     * cached only if the last cipher it loads (cipher_param, with its
     * properties) resolves to one of them.  Asked once per thread.
     */
    const char *const *ciphers;
    /*
     * Optional (GMAC, KMAC): own keyed contexts answering as the default's
     * MAC, on its ciphers (KC_TFAM.ciph) or digest (KC_TFAM.dig) without
     * the shared objects' reference counts.  direct_new() makes a template
     * of a shape and key the default took quietly; direct_bind() learns
     * KC_TFAM.quirks at first use, 0 keeping to the default's contexts.
     */
    const KC_MAC_FNS *direct;
    const char *const *direct_ciphers;
    const char *direct_digest;
    void *(*direct_new)(KC_PROVCTX *pctx, const unsigned char *shape,
                        size_t len, const unsigned char *key, size_t keylen);
    int (*direct_bind)(KC_PROVCTX *pctx, KC_TFAM *f);
    /*
     * Optional (KMAC): the digest the default's newctx fetches, in the
     * application's context under its default properties in force.
     */
    const char *newctx_digest;
    /*
     * Optional (KMAC): puts the family's own functions in front of some of
     * the default's in KC_TFAM.mac, before any call, for every call
     * keycache makes to them.
     */
    void (*guard_default)(KC_MAC_FNS *m);
};

/* the most ciphers a direct family runs on */
#define KC_TFAM_CIPHERS 3

/* A family as bound to the running default provider. */
struct kc_tfam_st {
    const KC_TDESC *d;
    KC_ALG alg;
    KC_MAC_FNS mac;
    int on;                         /* offered: the config says so */
    int empty_value;                /* the empty shape's memo value */
    int direct_on;                  /* d->direct in use */
    KC_CIPHER_FNS ciph[KC_TFAM_CIPHERS];
    KC_DIGEST_FNS dig;
    size_t dig_block, dig_size;     /* its block and output sizes */
    unsigned int quirks;            /* KC_Q_* learned of the default */
    unsigned int new_gen;           /* tmpl.c, new_fetch() */
    long direct_state;              /* see kc_tfam_ready() */
    int first;                      /* the registry's: first contexts... */
    EVP_MAC *app_first;             /* ...and cold ones on this */
    int nested;                     /* the registry's nests is on */
    /*
     * nested, or keycache offers some cipher in the application's context
     * (3.5+: with any cipher on, every default cipher is passed through):
     * a call of its default contexts naming a cipher without a query may
     * find keycache's own there, so it asks for the default's
     */
    int asks_default;
};

typedef struct kc_cfam_st KC_CFAM;

/* What a cipher family's file tells the shared layer. */
typedef struct {
    const char *name;               /* the default's first name for it */
    const OSSL_DISPATCH *functions; /* ours */
    /*
     * Names a shape may hold (OCB: IV and tag lengths); others, and what
     * per_message() says is a message's, are passed through.
     */
    const char *const *shape_names;
    int (*per_message)(const OSSL_PARAM *p);
    /* does the default's key set-up depend on the direction (OCB)? */
    int key_by_direction;
    /*
     * Are per-message params and an IV before the key replayed onto each
     * copy instead of passed through (GCM)?  Keying must leave them alone.
     */
    int volatile_ok;
    /*
     * Does an accepted "ivlen" set give the context that IV length (GCM)?
     * Then a just-keyed context answers EVP's IV-length query (ctmpl.c).
     */
    int ivlen_set_sets;
    /*
     * Optional (AES-SIV): own contexts on the default's ciphers (KC_CFAM.sub),
     * made unkeyed by direct_new(), then given a default context's calls;
     * direct_bind() learns KC_CFAM.quirks, 0 keeping to the default's.
     */
    const KC_CIPHER_FNS *direct;
    const char *const *direct_ciphers;
    void *(*direct_new)(KC_PROVCTX *pctx, const KC_CFAM *f);
    int (*direct_bind)(KC_PROVCTX *pctx, KC_CFAM *f);
    /*
     * Does an empty parameter array change the default's context (AES-SIV
     * may reopen its final)?  Then a keyless init with one passes through.
     */
    int empty_set_acts;
    /* may the default draw an IV at an IV-less encrypting init (AES-GCM)? */
    int may_draw_iv;
    /*
     * Does a keyless init with an IV leave a keyed context as a keyed init
     * in that direction would (GCM: the IV's set-up resets all a message
     * used)?  Then ctmpl.c re-keys with the same key that way.
     */
    int rekey_keyless;
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
    int draws_iv;                   /* IV drawn at IV-less init (4.x GCM) */
    int asks_lengths;               /* EVP asks them at every init (3.0) */
    long direct_state;              /* see kc_cfam_ready() */
};

#endif
