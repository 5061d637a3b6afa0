/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The default properties in force in the application's library context.
 * 3.0 has no getter (EVP_get1_default_properties() is 3.2+) and the config
 * file cannot say (every alg_section replaces the last).  The core's
 * child-provider upcall hands a registrant the string in force and every
 * later one; keycache keeps a copy and counts the changes, which end what
 * threads remember of fetches (layer/tmpl.c, memo_ask(); HMAC's digest
 * names, families/hmac.c, resolve_digest()) and their caches (cache/store.c,
 * kc_cache_get()).  The core calls
 * back before installing the string (and flushes its own query cache
 * after), so what another thread's fetch finds in between is remembered
 * under the new generation (docs/limits.md).
 * Registering costs a process 4k-14k instructions: done at start only for
 * prefer = if_unset and KEYCACHE_DEBUG's routing line, else at the first
 * memo (kc_props_follow()).  prefer = if_unset sets ?provider=NAME only
 * when none is in force, so a FIPS host's fips=yes is never replaced.
 */
#include <pthread.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "core/core.h"

static int child_nop(const OSSL_CORE_HANDLE *prov, void *cbdata)
{
    (void)prov;
    (void)cbdata;
    return 1;
}

/*
 * A provider of the application's library context deactivated.  When that
 * context is freed, each of its providers is, once: keycache itself too,
 * which a program that loaded it and never unloaded it keeps alive with
 * no teardown ever.  From then on nothing may ask that context anything
 * (report.c); another provider unloaded only costs that exit check.
 */
static int child_removed(const OSSL_CORE_HANDLE *prov, void *cbdata)
{
    KC_PROVCTX *pctx = cbdata;

    (void)prov;
    __atomic_store_n(&pctx->app_gone, 1, __ATOMIC_RELEASE);
    return 1;
}

/*
 * Called by the core with its provider store locked: copy and return.  The
 * first call, inside the registration, says what is in force; a later one
 * with another string is a change, which ends what threads learned
 * (props_gen, cache/store.c).
 */
static int props_cb(const char *props, void *cbdata)
{
    KC_PROVCTX *pctx = cbdata;
    const char *now = props != NULL ? props : "";
    char *copy = OPENSSL_strdup(now);
    int changed;

    pthread_mutex_lock(&pctx->props_lock);
    changed = pctx->props_seen
              && (pctx->props == NULL || strcmp(pctx->props, now) != 0);
    pctx->props_seen = 1;
    OPENSSL_free(pctx->props);
    pctx->props = copy;
    pctx->props_lost = copy == NULL;
    pthread_mutex_unlock(&pctx->props_lock);
    if (changed)
        __atomic_add_fetch(&pctx->props_gen, 1, __ATOMIC_RELEASE);
    return 1;
}

/*
 * Register, once (the core calls props_cb() at once, with its store locked:
 * so props_follow_lock is never taken under props_lock or by the core).
 */
int kc_props_follow(KC_PROVCTX *pctx)
{
    int r = __atomic_load_n(&pctx->props_registered, __ATOMIC_ACQUIRE);

    /* 1 registered; -1 failed once: not asked again (it takes a lock) */
    if (r != 0)
        return r == 1;
    if (!pctx->props_lock_ok || pctx->props_reg == NULL
        || pctx->props_dereg == NULL)
        return 0;
    pthread_mutex_lock(&pctx->props_follow_lock);
    if ((r = pctx->props_registered) == 0) {
        /* inside an application's call: whatever the core raises, quiet */
        ERR_set_mark();
        r = pctx->props_reg(pctx->handle, child_nop, child_removed, props_cb,
                            pctx) ? 1 : -1;
        ERR_pop_to_mark();
        __atomic_store_n(&pctx->props_registered, r, __ATOMIC_RELEASE);
        if (r < 0)
            kc_debug_log(pctx, 1, "warning: the core refused to report "
                         "changes of the default properties, so what "
                         "fetches find (digest names, learned shapes) is "
                         "worked out again at every use");
    }
    pthread_mutex_unlock(&pctx->props_follow_lock);
    return r == 1;
}

int kc_props_start(KC_PROVCTX *pctx, const OSSL_DISPATCH *in, int now)
{
    pthread_mutex_init(&pctx->props_lock, NULL);
    pthread_mutex_init(&pctx->props_follow_lock, NULL);
    pctx->props_lock_ok = 1;
    pctx->props_reg = KC_CORE_FN(in, provider_register_child_cb,
                                 PROVIDER_REGISTER_CHILD_CB);
    pctx->props_dereg = KC_CORE_FN(in, provider_deregister_child_cb,
                                   PROVIDER_DEREGISTER_CHILD_CB);
    pctx->props_follow = kc_props_follow;
    return !now || kc_props_follow(pctx);
}

void kc_props_stop(KC_PROVCTX *pctx)
{
    if (pctx->props_registered == 1)
        pctx->props_dereg(pctx->handle);
    pctx->props_registered = 0;
    pctx->props_seen = 0;
    pctx->props_follow = NULL;
    if (pctx->props_lock_ok) {
        OPENSSL_free(pctx->props);
        pctx->props = NULL;
        pthread_mutex_destroy(&pctx->props_lock);
        pthread_mutex_destroy(&pctx->props_follow_lock);
        pctx->props_lock_ok = 0;
    }
}

/* The string in force, quoted ("" if never set), or "(unknown)". */
int kc_props_get(KC_PROVCTX *pctx, char *buf, size_t len)
{
    int known = 0;

    if (__atomic_load_n(&pctx->props_registered, __ATOMIC_ACQUIRE) == 1) {
        pthread_mutex_lock(&pctx->props_lock);
        if ((known = !pctx->props_lost))
            snprintf(buf, len, "\"%s\"",
                     pctx->props != NULL ? pctx->props : "");
        pthread_mutex_unlock(&pctx->props_lock);
    }
    if (!known)
        snprintf(buf, len, "(unknown)");
    return known;
}

/* Does a property string ask for this provider (?provider=NAME)? */
static int props_prefer(const char *props, const char *name)
{
    char clause[128];
    const char *p = props;
    size_t i, n;

    while (*p != '\0') {
        n = strcspn(p, ",");
        for (i = 0; n > 0 && i < sizeof(clause) - 1; p++, n--)
            if (*p != ' ' && *p != '\t' && *p != '"' && *p != '?')
                clause[i++] = *p;
        clause[i] = '\0';
        p += n;
        if (*p == ',')
            p++;
        if (strncmp(clause, "provider=", 9) == 0
            && strcmp(clause + 9, name) == 0)
            return 1;
    }
    return 0;
}

/*
 * prefer = if_unset, once started: with no default properties in force,
 * make query-less fetches prefer keycache.  0 only if setting them failed.
 */
int kc_props_prefer(KC_PROVCTX *pctx)
{
    char now[512], want[128];
    int unset;

    if (!kc_props_get(pctx, now, sizeof(now))) {
        kc_debug_log(pctx, 1, "warning: prefer = if_unset: cannot tell "
                     "which default_properties are in force, so %s leaves "
                     "them alone: query-less fetches will not use it",
                     pctx->name);
        return 1;
    }
    pthread_mutex_lock(&pctx->props_lock);
    unset = pctx->props == NULL || pctx->props[0] == '\0';
    pthread_mutex_unlock(&pctx->props_lock);
    if (!unset) {
        if (EVP_default_properties_is_fips_enabled(pctx->app_libctx))
            kc_debug_log(pctx, 1, "warning: prefer = if_unset: "
                         "default_properties = %s are in force (FIPS mode "
                         "on); %s leaves them as they are and, having no "
                         "FIPS implementations, will not be used",
                         now, pctx->name);
        else if (props_prefer(now, KEYCACHE_PROVIDER_NAME))
            kc_debug_log(pctx, 2, "config: prefer = if_unset: "
                         "default_properties = %s are in force and already "
                         "prefer %s; left as they are", now, pctx->name);
        else
            kc_debug_log(pctx, 1, "warning: prefer = if_unset: "
                         "default_properties = %s are in force; %s leaves "
                         "them as they are, so query-less fetches will not "
                         "use it (add ?provider=%s to them to use it)",
                         now, pctx->name, KEYCACHE_PROVIDER_NAME);
        return 1;
    }
    /*
     * the property its algorithms carry, whatever the config named it (as
     * the default's say provider=default): core/bind.c
     */
    snprintf(want, sizeof(want), "?provider=%s", KEYCACHE_PROVIDER_NAME);
    if (!EVP_set_default_properties(pctx->app_libctx, want)) {
        kc_raise(pctx, KC_R_INIT_FAILED, "prefer = if_unset: cannot set "
                 "default_properties = %s", want);
        return 0;
    }
    kc_debug_log(pctx, 2, "config: prefer = if_unset: no default_properties "
                 "were in force; set default_properties = %s", want);
    return 1;
}
