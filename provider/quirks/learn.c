/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the running default does where versions differ, asked of its
 * contexts, never of the headers' version: libcrypto.so.3 can be upgraded
 * in place from 3.0 to 3.5.  Each learner runs once per family, at its
 * first use (layer/gate.c) or first need; see quirks.h.  AES-SIV's word is
 * also known for the versions CI runs (kc_quirk_siv()).
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

#include "quirks/quirks.h"

unsigned int kc_quirk_learn_sets(void *provctx, const KC_MAC_FNS *m)
{
    static const OSSL_PARAM empty[] = { OSSL_PARAM_END };
    KC_ERRTOP before, after;
    unsigned int q = KC_Q_KNOWN;
    void *t;

    ERR_set_mark();
    kc_err_top(&before);
    if ((t = m->newctx(provctx)) != NULL) {
        if (m->set_ctx_params(t, NULL) == 1)
            q |= KC_Q_NULL_SET_OK;
        if (m->set_ctx_params(t, empty) == 1)
            q |= KC_Q_EMPTY_SET_OK;
        m->freectx(t);
    }
    kc_err_top(&after);
    /* a call that raised anything is not a no-op */
    if (t == NULL || !kc_err_same(&before, &after))
        q = t == NULL ? 0 : KC_Q_KNOWN;
    ERR_pop_to_mark();
    return q;
}

unsigned int kc_quirk_learn_repeats(void *provctx, void *(*newctx)(void *),
                                    void (*freectx)(void *),
                                    int (*set)(void *, const OSSL_PARAM *),
                                    const OSSL_PARAM *p)
{
    OSSL_PARAM twice[3];
    unsigned int q = 0;
    void *t;

    twice[0] = twice[1] = *p;
    twice[2] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    if ((t = newctx(provctx)) != NULL) {
        q = KC_Q_KNOWN | KC_Q_REPEATS_KNOWN
            | (set(t, twice) == 1 ? 0 : KC_Q_REPEATS_FAIL);
        freectx(t);
    }
    ERR_pop_to_mark();
    return q;
}

unsigned int kc_quirk_learn_seal(void *provctx, const KC_MAC_FNS *m)
{
    static const unsigned char one[1];
    unsigned int q = 0;
    void *t;

    if ((t = m->newctx(provctx)) == NULL)
        return 0;
    ERR_set_mark();
    if (kc_mac_key_final(m, t))
        q = KC_Q_KNOWN | (m->update(t, one, sizeof(one)) != 1
                          ? KC_Q_FINAL_SEALS : 0);
    ERR_pop_to_mark();
    m->freectx(t);
    return q;
}

/* Does the final succeed: a message done and not reopened since? */
static int final_ok(const KC_CIPHER_FNS *m, void *t)
{
    unsigned char out[1];
    size_t outl;

    return m->final(t, out, &outl, sizeof(out)) == 1;
}

/*
 * AES-SIV: an empty message, the final after set_ctx_params and after a
 * failed message, a name twice.  0 where the default does something
 * quirks.h does not name.
 */
unsigned int kc_quirk_learn_siv(void *provctx, const KC_CIPHER_FNS *m,
                                size_t keylen)
{
    static const char unknown[] = "keycache-probe";
    static const unsigned int reopens[3] = {
        KC_Q_NULL_REOPENS, KC_Q_EMPTY_REOPENS, KC_Q_SET_REOPENS
    };
    unsigned char key[64], msg[40], out[2][40], tag[16];
    unsigned int one = 1, q = KC_Q_KNOWN;
    size_t outl, i;
    void *t = NULL;
    OSSL_PARAM speed[2], p[3];
    int refused;

    if (keylen == 0 || keylen > sizeof(key))
        return 0;
    for (i = 0; i < sizeof(msg); i++)
        msg[i] = (unsigned char)(i * 7 + 1);
    for (i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)(i * 13 + 5);
    speed[0] = OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_SPEED, &one);
    speed[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    if ((t = kc_cipher_new_init(provctx, m, 1, key, keylen, speed)) == NULL
        || !m->update(t, out[0], &outl, sizeof(out[0]), msg, 0))
        goto fail;
    if (final_ok(m, t))
        q |= KC_Q_EMPTY_IS_MESSAGE;
    if (!m->update(t, out[0], &outl, sizeof(out[0]), msg, 1)
        || !final_ok(m, t))
        goto fail;
    /* after a message: set NULL, an empty array, an unknown name */
    p[1] = OSSL_PARAM_construct_end();
    for (i = 0; i < 3; i++) {
        p[0] = i == 1 ? OSSL_PARAM_construct_end()
                      : OSSL_PARAM_construct_uint(unknown, &one);
        if ((i > 0 && !m->update(t, out[0], &outl, sizeof(out[0]), msg, 1))
            || !m->set_ctx_params(t, i == 0 ? NULL : p))
            goto fail;
        if (!final_ok(m, t))
            q |= reopens[i];
    }
    p[0] = p[1] = speed[0];
    p[2] = OSSL_PARAM_construct_end();
    q |= KC_Q_REPEATS_KNOWN;
    if (m->set_ctx_params(t, p) != 1)
        q |= KC_Q_REPEATS_FAIL;
    m->freectx(t);
    /*
     * A refused message (one per keying) and a forged one must agree on
     * reopening the final: the family models every message or none.
     * Nothing else may reopen it: AAD after the message, an update refused
     * for its output size, a second final.
     */
    p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                             tag, sizeof(tag));
    p[1] = OSSL_PARAM_construct_end();
    if ((t = kc_cipher_new_init(provctx, m, 1, key, keylen, NULL)) == NULL
        || !m->update(t, out[1], &outl, sizeof(out[1]), msg, 20)
        || !m->get_ctx_params(t, p)
        || m->update(t, out[0], &outl, sizeof(out[0]), msg, 20) != 0)
        goto fail;
    refused = final_ok(m, t);
    m->freectx(t);
    if ((t = kc_cipher_new_init(provctx, m, 0, key, keylen, speed)) == NULL
        || !m->set_ctx_params(t, p)
        || !m->update(t, out[0], &outl, sizeof(out[0]), out[1], 20)
        || !final_ok(m, t))
        goto fail;
    out[1][3] ^= 1;
    if (m->update(t, out[0], &outl, sizeof(out[0]), out[1], 20) != 0
        || final_ok(m, t) != refused)
        goto fail;
    if (!refused)
        q |= KC_Q_TRY_REOPENS;
    m->freectx(t);
    if ((t = kc_cipher_new_init(provctx, m, 1, key, keylen, speed)) == NULL
        || !m->update(t, out[0], &outl, sizeof(out[0]), msg, 20)
        || !m->update(t, NULL, &outl, 0, msg, 5)
        || !final_ok(m, t) || !final_ok(m, t)
        || m->update(t, out[0], &outl, 0, msg, 5) != 0
        || !final_ok(m, t))
        goto fail;
    m->freectx(t);
    ERR_pop_to_mark();
    return q;
 fail:
    if (t != NULL)
        m->freectx(t);
    ERR_pop_to_mark();
    return 0;
}

/*
 * kc_quirk_learn_siv()'s answer on the libcrypto versions CI runs (the
 * host's, tools/compat.sh trixie and sid-ossl4), by the running library's
 * version string: learning keys a default AES-SIV, whose fetches build the
 * private context's cipher store, some 5.8M instructions per process.
 * There test_diagnostics compares each word with the learned one and
 * test_cfam, test_bad_input and diff_families AES-SIV's answers with the
 * default's, so a wrong word fails CI (mutants siv-table-wrong-*).
 */
static const struct {
    const char *version;        /* OPENSSL_FULL_VERSION_STRING */
    unsigned int word;
} siv_known[] = {
    { "3.0.22", KC_Q_KNOWN | KC_Q_REPEATS_KNOWN | KC_Q_SET_REOPENS
                | KC_Q_EMPTY_REOPENS },
    { "3.5.9", KC_Q_KNOWN | KC_Q_REPEATS_KNOWN | KC_Q_EMPTY_IS_MESSAGE
               | KC_Q_SET_REOPENS | KC_Q_TRY_REOPENS },
    { "4.0.3", KC_Q_KNOWN | KC_Q_REPEATS_KNOWN | KC_Q_REPEATS_FAIL
               | KC_Q_EMPTY_IS_MESSAGE | KC_Q_SET_REOPENS | KC_Q_EMPTY_REOPENS
               | KC_Q_NULL_REOPENS | KC_Q_TRY_REOPENS },
};

unsigned int kc_quirk_siv(int use_table, void *provctx,
                          const KC_CIPHER_FNS *m, size_t keylen)
{
    const char *v = OpenSSL_version(OPENSSL_FULL_VERSION_STRING);
    size_t i;

    for (i = 0; use_table && v != NULL
                && i < sizeof(siv_known) / sizeof(siv_known[0]); i++)
        if (strcmp(v, siv_known[i].version) == 0)
            return siv_known[i].word | KC_Q_FROM_TABLE;
    return kc_quirk_learn_siv(provctx, m, keylen);
}
