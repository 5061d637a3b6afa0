/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The template core: what the MAC (tmpl.c) and cipher (ctmpl.c) sides do
 * alike, each side's own steps in a KC_TSIDE table.
 *
 * A cache entry is a pristine template: a default context given the calls
 * made before the key (its "shape", recorded by record.c and part of the
 * cache key), keyed with the key alone, never used; a hit copies it.
 * Volatile calls (GMAC's IV, GCM's tag) are recorded apart and replayed onto
 * each copy.  A recorded call returns at once what the default would: a
 * thread replays a new record on a transient default context once and the
 * record memo keeps the answer.  Anything else makes the wrapper a plain
 * default context with the record replayed, so the default decides every
 * odd case and raises its own errors.
 */
#include <string.h>
#include <openssl/err.h>

#include "layer/layer.h"

/* a volatile signature's memo key mixes it with the shape's hash */
#define KC_VOL_MIX 0xc2b2ae3d27d4eb4fULL

int kc_tcore_append(KC_TCORE *t, const KC_TSIDE *s, int tag, uint32_t type,
                    const OSSL_PARAM *const *ps, size_t n, int how)
{
    unsigned char *rec = (unsigned char *)t->rec;
    unsigned char *sig = (unsigned char *)t->sig;
    size_t start = t->len, sstart = t->sig_len, i, nl;
    int vol = how == KC_AS_VOLATILE;

    if (!kc_trec_marker(rec, KC_TREC_MAX, &t->len, tag, type)
        || (vol && !kc_trec_marker(sig, KC_TSIG_MAX, &t->sig_len, tag, type)))
        return 0;
    for (i = 0; i < n; i++)
        if ((nl = kc_trec_recordable(ps[i])) == 0
            || !kc_trec_put(rec, KC_TREC_MAX, &t->len, KC_T_PARAM, ps[i], nl)
            || (vol && !kc_trec_put(sig, KC_TSIG_MAX, &t->sig_len, KC_T_SIG,
                                    ps[i], nl)))
            return 0;
    if (how == KC_AS_VOLATILE_ONLY)
        return 1;
    if (vol) {
        t->sig_hash = kc_trec_hash(t->sig_hash ^ s->call_salt,
                                   (const uint64_t *)(sig + sstart),
                                   t->sig_len - sstart);
    } else {
        t->hash = kc_trec_hash(t->hash ^ s->call_salt,
                               (const uint64_t *)(rec + start),
                               t->len - start);
        t->shape_len = t->len;
    }
    return 1;
}

int kc_tcore_same_as_last(KC_TCORE *t, const KC_TSIDE *s, KC_CACHE *c,
                          const void *owner, int tag, uint32_t type,
                          const OSSL_PARAM *const *ps, size_t n)
{
    const unsigned char *last;
    size_t alen, len, off;
    uint64_t hash;
    int value;

    last = kc_cache_rec_last(c, owner, 0, &alen, &len, &hash, &value);
    if (last == NULL || alen != len || len <= t->len
        || (s->prefix && (value & KC_TVALID) == 0)
        || (t->len > 0 && memcmp(last, t->rec, t->len) != 0))
        return 0;
    off = kc_trec_match(last, t->len, len, tag, type, KC_T_PARAM, ps, n);
    if (off == 0 || (off != len && !s->prefix))
        return 0;
    memcpy((unsigned char *)t->rec + t->len, last + t->len, off - t->len);
    /* the whole record: its hash is the one learned with it */
    t->hash = off == len ? hash ^ s->shape_salt
              : kc_trec_hash(t->hash ^ s->call_salt,
                             (const uint64_t *)(last + t->len), off - t->len);
    t->len = t->shape_len = off;
    t->value = off == len ? value : -1;
    return 1;
}

int kc_tcore_learn(KC_TCORE *t, const KC_TSIDE *s, KC_CACHE *c,
                   const void *owner, int vol)
{
    const unsigned char *rec = (const unsigned char *)t->rec;
    const unsigned char *sig = vol ? (const unsigned char *)t->sig : NULL;
    size_t sig_len = vol ? t->sig_len : 0;
    uint64_t h = t->hash ^ (vol ? t->sig_hash * KC_VOL_MIX : s->shape_salt);
    int v = kc_cache_rec_get(c, owner, h, rec, t->shape_len, sig, sig_len);
    unsigned int gen;

    if (v >= 0)
        return v;
    gen = kc_cache_props_gen(c);
    v = s->value(t, vol);
    kc_cache_rec_put(c, owner, h, rec, t->shape_len, sig, sig_len, v, gen);
    return v;
}

void *kc_tcore_make(KC_TCORE *t, const KC_TSIDE *s, const KC_ALG *alg,
                    int enc, const unsigned char *key, size_t keylen)
{
    KC_ERRTOP before, after;
    void *tmpl;
    int ok;

    ERR_set_mark();
    kc_err_top(&before);
    tmpl = s->make(t, enc, key, keylen, &ok);
    kc_err_top(&after);
    if (!ok || !kc_err_same(&before, &after)) {
        /* alg's freectx: the keyed contexts' (the family's own or not) */
        if (tmpl != NULL)
            alg->freectx(tmpl);
        tmpl = NULL;
    }
    ERR_pop_to_mark();
    return tmpl;
}
