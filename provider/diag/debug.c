/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KEYCACHE_DEBUG=[file:PATH][,level:N][,interval:S], read at the start
 * (provider-keycache(7)).  interval:S reports from whichever thread is
 * inside keycache when due: keycache starts no thread.  Unset, pctx->dbg
 * stays NULL: the hot path pays nothing.
 */
#define _GNU_SOURCE            /* secure_getenv() */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/proverr.h>

#include "diag/diag.h"

/* a day is plenty for a report interval; more is a typo */
#define KC_DEBUG_MAX_INTERVAL 86400

void kc_debug_line(const KC_DEBUG *d, char *buf, size_t len, size_t *used,
                 const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    kc_log_vline(&d->to, buf, len, used, fmt, ap);
    va_end(ap);
}

void kc_debug_log(KC_PROVCTX *pctx, int level, const char *fmt, ...)
{
    KC_DEBUG *d = pctx->dbg;
    char buf[1024];
    size_t used = 0;
    va_list ap;

    if (d == NULL || level > d->level)
        return;
    va_start(ap, fmt);
    kc_log_vline(&d->to, buf, sizeof(buf), &used, fmt, ap);
    va_end(ap);
    kc_log_emit(&d->to, buf, used);
}

int kc_debug_level(const KC_PROVCTX *pctx)
{
    return pctx->dbg != NULL ? pctx->dbg->level : 0;
}

uint64_t kc_debug_interval(const KC_PROVCTX *pctx)
{
    return pctx->dbg != NULL ? pctx->dbg->interval : 0;
}

void kc_debug_tick(KC_PROVCTX *pctx, time_t now)
{
    KC_DEBUG *d = pctx->dbg;
    time_t due;
    char when[32];

    if (d == NULL || d->interval == 0)
        return;
    due = __atomic_load_n(&d->next_report, __ATOMIC_RELAXED);
    if (now < due
        || !__atomic_compare_exchange_n(&d->next_report, &due,
                                        now + (time_t)d->interval, 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    snprintf(when, sizeof(when), "every %llus",
             (unsigned long long)d->interval);
    d->report(d, when);
}

/* Parse the variable; a word it does not know is reported, not fatal. */
static void parse(KC_DEBUG *d, const char *s)
{
    char bad[128] = "";
    const char *val;
    size_t len, klen;
    long n;

    while (*s != '\0') {
        len = strcspn(s, ",");
        val = memchr(s, ':', len);
        klen = val != NULL ? (size_t)(val - s) : len;
        if (val != NULL)
            val++;
        if (val != NULL && klen == 4 && strncmp(s, "file", 4) == 0
            && s + len > val) {
            OPENSSL_free(d->to.path);
            d->to.path = OPENSSL_strndup(val, (size_t)(s + len - val));
        } else if (val != NULL && klen == 5 && strncmp(s, "level", 5) == 0
                   && (n = kc_early_number(val, (size_t)(s + len - val),
                                           KC_DEBUG_MAX_LEVEL)) >= 0) {
            d->level = (int)n;
        } else if (val != NULL && klen == 8
                   && strncmp(s, "interval", 8) == 0
                   && (n = kc_early_number(val, (size_t)(s + len - val),
                                           KC_DEBUG_MAX_INTERVAL)) >= 0) {
            d->interval = (uint64_t)n;
        } else if (val == NULL
                   && (n = kc_early_number(s, len, KC_DEBUG_MAX_LEVEL)) >= 0) {
            d->level = (int)n;      /* KEYCACHE_DEBUG=2 */
        } else if (len > 0 && bad[0] == '\0') {
            snprintf(bad, sizeof(bad), "%.*s", (int)len, s);
        }
        s += len;
        if (*s == ',')
            s++;
    }
    if (bad[0] != '\0' && d->level > 0)
        kc_debug_log(d->pctx, 1, "warning: " KC_DEBUG_ENV ": ignoring "
                     "\"%s\": want file:PATH, level:0-%d, interval:SECONDS "
                     "(0-%d), separated by commas", bad, KC_DEBUG_MAX_LEVEL,
                     KC_DEBUG_MAX_INTERVAL);
}

void kc_debug_init(KC_PROVCTX *pctx)
{
    /* not for set-uid programs: the variable could name any file */
    const char *env = secure_getenv(KC_DEBUG_ENV);
    KC_DEBUG *d;

    if (env == NULL || *env == '\0'
        || (d = OPENSSL_zalloc(sizeof(*d))) == NULL)
        return;
    d->pctx = pctx;
    d->level = 1;
    d->to.pid = (long)getpid();
    pctx->dbg = d;
    parse(d, env);
    if (d->level == 0) {
        pctx->dbg = NULL;
        OPENSSL_free(d->to.path);
        OPENSSL_free(d);
    }
}

/*
 * The core registers a provider's own reasons only once its init succeeded,
 * and every error raised here fails it: they would print as "reason(2)".
 * So libcrypto's registered reasons, and the text says what is wrong.
 */
static uint32_t registered_reason(int reason)
{
    if (reason == KC_R_BAD_CONFIG)
        return ERR_PACK(ERR_LIB_PROV, 0, PROV_R_INVALID_CONFIG_DATA);
    return ERR_PACK(ERR_LIB_PROV, 0, ERR_R_INIT_FAIL);
}

void kc_raise_at(KC_PROVCTX *pctx, int reason, const char *file, int line,
                 const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    kc_debug_log(pctx, 1, "error: %s", msg);
    if (pctx->core_new_error == NULL || pctx->core_vset_error == NULL)
        return;
    pctx->core_new_error(pctx->handle);
    /* file is a base name: no build paths in messages */
    if (pctx->core_set_error_debug != NULL)
        pctx->core_set_error_debug(pctx->handle, file, line, "keycache");
    kc_early_set_error(pctx->handle, pctx->core_vset_error,
                       registered_reason(reason), "keycache: %s", msg);
}
