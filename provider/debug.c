/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KEYCACHE_DEBUG: what an operator of an unchanged program can learn.
 *
 *   KEYCACHE_DEBUG=[file:PATH][,level:N][,interval:S]
 *
 * is read when the provider starts.  Lines go to PATH (appended, opened
 * for each write, so log rotation and fork() need no care; see early.c's
 * open_log() for what it must be) or to stderr, each with the time and the process
 * id.  Level 1, the default: the start,
 * load and configuration problems, routing warnings, and the counters per
 * algorithm when the process exits or the provider is unloaded.  Level 2
 * adds where the configuration came from and the checks that passed.
 * interval:S also writes the counters every S seconds, from whichever
 * thread is inside keycache when they are due: keycache starts no thread.
 *
 * When the variable is unset pctx->dbg stays NULL: the hot path pays
 * nothing, and start-up pays a NULL test per message.
 */
#define _GNU_SOURCE            /* secure_getenv(), dladdr() */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include "kc_local.h"

#define KC_DEBUG_MAX_LEVEL 2
/* a day is plenty for a report interval; more is a typo */
#define KC_DEBUG_MAX_INTERVAL 86400

struct kc_debug_st {
    KC_DEBUG *next;              /* live instances, under dbg_lock */
    KC_PROVCTX *pctx;
    int level;
    uint64_t interval;           /* seconds between reports, 0 = none */
    KC_LOGTO to;                 /* where lines go, their prefix */
    time_t next_report;          /* whoever advances it writes the report */
    int linked, reported;
    KC_COUNTERS base[KC_STAT_SLOTS]; /* counters inherited over fork() */
};

/*
 * Guards the list of live instances against the exit handler, fork() and
 * teardown in other threads.  Taken before cache.c's registry lock where
 * both are held.  Never taken on the hot path.
 */
static pthread_mutex_t dbg_lock = PTHREAD_MUTEX_INITIALIZER;
static KC_DEBUG *live;
static unsigned int serials;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static const char *const slot_names[KC_STAT_SLOTS] = {
    "other", "HMAC", "CMAC", "GMAC", "KMAC-128", "KMAC-256", "AES-128-OCB",
    "AES-192-OCB", "AES-256-OCB", "AES-128-SIV", "AES-192-SIV", "AES-256-SIV",
    "AES-128-GCM", "AES-192-GCM", "AES-256-GCM"
};

/* ---------------------------------------------------------------------- */
/* Output                                                                 */

/* Append one line to buf (of size len, filled to *used). */
static void line_v(const KC_DEBUG *d, char *buf, size_t len, size_t *used,
                   const char *fmt, va_list ap)
{
    int n;

    if (*used + 2 >= len)
        return;
    *used += kc_log_prefix(&d->to, buf + *used, len - *used);
    n = vsnprintf(buf + *used, len - *used - 1, fmt, ap);
    if (n > 0)
        *used += (size_t)n < len - *used - 1 ? (size_t)n : len - *used - 2;
    buf[(*used)++] = '\n';
}

static void line(const KC_DEBUG *d, char *buf, size_t len, size_t *used,
                 const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    line_v(d, buf, len, used, fmt, ap);
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
    line_v(d, buf, sizeof(buf), &used, fmt, ap);
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

/* ---------------------------------------------------------------------- */
/* Reports                                                                */

static void hit_rate(const KC_COUNTERS *n, char *buf, size_t len)
{
    uint64_t all = n->hits + n->misses + n->passthrough;

    if (all == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f%%", 100.0 * (double)n->hits / (double)all);
}

static void counters_line(const KC_DEBUG *d, char *buf, size_t len,
                          size_t *used, const char *when, const char *alg,
                          const KC_COUNTERS *n)
{
    char rate[16];

    hit_rate(n, rate, sizeof(rate));
    line(d, buf, len, used, "report (%s): %s hits=%llu misses=%llu "
         "passthrough=%llu evictions=%llu hit_rate=%s", when, alg,
         (unsigned long long)n->hits, (unsigned long long)n->misses,
         (unsigned long long)n->passthrough,
         (unsigned long long)n->evictions, rate);
}

/*
 * Where hits are under a tenth of the keyed inits, or a forked child only
 * wiped what it inherited, say what the process's work was that keycache
 * cannot help, so that switching it off for a service is an informed
 * choice: a child that wiped entries, threads that keyed but never
 * admitted a key, keys not used admit_after times on one thread.
 */
static void little_to_gain(const KC_DEBUG *d, char *buf, size_t len,
                           size_t *used, const char *when,
                           const KC_COUNTERS *all)
{
    uint64_t keyed = all->hits + all->misses + all->passthrough;
    uint64_t threads, admitted, wiped;
    char why[384];
    size_t n = 0;

    kc_cache_lost(d->pctx, &threads, &admitted, &wiped);
    if ((keyed == 0 && wiped == 0) || all->hits * 10 >= keyed + (wiped != 0))
        return;
    why[0] = '\0';
    if (wiped != 0)
        n += (size_t)snprintf(why + n, sizeof(why) - n, "; a forked child "
                              "that wiped %llu inherited entries",
                              (unsigned long long)wiped);
    if (threads > admitted && n < sizeof(why))
        n += (size_t)snprintf(why + n, sizeof(why) - n, "; %llu of %llu "
                              "threads that keyed admitted no key",
                              (unsigned long long)(threads - admitted),
                              (unsigned long long)threads);
    if (all->misses + all->passthrough != 0 && n < sizeof(why))
        snprintf(why + n, sizeof(why) - n, "; keys not used %d times on one "
                 "thread (admit_after): %llu hits of %llu keyed inits",
                 d->pctx->admit_after, (unsigned long long)all->hits,
                 (unsigned long long)keyed);
    line(d, buf, len, used, "report (%s): little for keycache to gain "
         "here%s; switching it off for this program costs nothing", when,
         why);
}

/*
 * The counters per algorithm that saw any use, then the sums: these are
 * what the provider's keycache-* parameters report, less what a forked
 * child inherited.
 */
static void report(KC_DEBUG *d, const char *when)
{
    KC_COUNTERS by[KC_STAT_SLOTS], all;
    uint64_t entries;
    char buf[2048];
    size_t used = 0;
    unsigned int i;

    kc_cache_counters_by_alg(d->pctx, by, &entries);
    memset(&all, 0, sizeof(all));
    for (i = 1; i <= KC_STAT_SLOTS; i++) {
        /* the algorithms first, unattributed pass-through last */
        KC_COUNTERS *n = &by[i % KC_STAT_SLOTS];
        const KC_COUNTERS *b = &d->base[i % KC_STAT_SLOTS];

        n->hits -= b->hits;
        n->misses -= b->misses;
        n->passthrough -= b->passthrough;
        n->evictions -= b->evictions;
        all.hits += n->hits;
        all.misses += n->misses;
        all.passthrough += n->passthrough;
        all.evictions += n->evictions;
        if (n->hits + n->misses + n->passthrough + n->evictions != 0)
            counters_line(d, buf, sizeof(buf), &used, when,
                          slot_names[i % KC_STAT_SLOTS], n);
    }
    counters_line(d, buf, sizeof(buf), &used, when, "all", &all);
    if (used > 0)
        used--;         /* entries go on the sums' line */
    used += (size_t)snprintf(buf + used, sizeof(buf) - used,
                             " entries=%llu\n", (unsigned long long)entries);
    if (used >= sizeof(buf))
        used = sizeof(buf) - 1;
    little_to_gain(d, buf, sizeof(buf), &used, when, &all);
    kc_log_emit(&d->to, buf, used);
}

/*
 * Which provider a query-less fetch of |alg| reaches, and with which
 * default_properties in force (|props|, quoted, from props.c; |fips|:
 * EVP_default_properties_is_fips_enabled()).
 */
static void check_route(KC_DEBUG *d, const char *alg, const char *got,
                        const char *props, int fips)
{
    KC_PROVCTX *pctx = d->pctx;

    if (strcmp(got, pctx->name) == 0)
        kc_debug_log(pctx, 2, "routing: a query-less %s fetch reaches %s "
                     "(default_properties in force: %s)", alg, got, props);
    else if (fips)
        kc_debug_log(pctx, 1, "warning: a query-less %s fetch reaches %s, "
                     "not %s: default_properties in force are %s, FIPS "
                     "mode is on, and %s offers no FIPS implementation: %s "
                     "is loaded but unused for %s", alg, got, pctx->name,
                     props, pctx->name, pctx->name, alg);
    else
        kc_debug_log(pctx, 1, "warning: a query-less %s fetch reaches %s, "
                     "not %s: %s is loaded but unused for %s; "
                     "default_properties in force are %s, and need "
                     "?provider=%s", alg, got, pctx->name, pctx->name, alg,
                     props, pctx->name);
}

/*
 * Fetch as unchanged code does (no property query) and see who answers.
 * Only at exit: while the provider starts, the configuration's
 * alg_section may not have been applied yet.
 */
static void check_routing(KC_DEBUG *d)
{
    KC_PROVCTX *pctx = d->pctx;
    const OSSL_PROVIDER *prov;
    EVP_MAC *mac;
    EVP_CIPHER *cipher;
    char props[512];
    int i, fips;

    kc_props_get(pctx, props, sizeof(props));
    fips = EVP_default_properties_is_fips_enabled(pctx->app_libctx);
    ERR_set_mark();
    if (pctx->hmac_on) {
        mac = EVP_MAC_fetch(pctx->app_libctx, "HMAC", NULL);
        prov = mac != NULL ? EVP_MAC_get0_provider(mac) : NULL;
        check_route(d, "HMAC",
                    prov != NULL ? OSSL_PROVIDER_get0_name(prov) : "nothing",
                    props, fips);
        EVP_MAC_free(mac);
    }
    if (pctx->cfam[KC_CFAM_GCM256].on) {
        cipher = EVP_CIPHER_fetch(pctx->app_libctx, "AES-256-GCM", NULL);
        prov = cipher != NULL ? EVP_CIPHER_get0_provider(cipher) : NULL;
        check_route(d, "AES-256-GCM",
                    prov != NULL ? OSSL_PROVIDER_get0_name(prov) : "nothing",
                    props, fips);
        EVP_CIPHER_free(cipher);
    }
    for (i = 0; i < KC_FAM_COUNT; i++) {
        if (!pctx->fam[i].on)
            continue;
        mac = EVP_MAC_fetch(pctx->app_libctx, pctx->fam[i].d->name, NULL);
        prov = mac != NULL ? EVP_MAC_get0_provider(mac) : NULL;
        check_route(d, pctx->fam[i].d->name,
                    prov != NULL ? OSSL_PROVIDER_get0_name(prov) : "nothing",
                    props, fips);
        EVP_MAC_free(mac);
    }
    ERR_pop_to_mark();
}

/*
 * Registered after libcrypto's own exit handler, and so run before
 * OPENSSL_cleanup() tears the providers down - or as the only report for
 * programs that stop libcrypto's handler.  It is tied to this module
 * (__cxa_atexit with its __dso_handle, what atexit() in a shared object
 * does in glibc, said explicitly because sanitizers' atexit() drops it), so
 * that dlclose() runs and removes it if the module is unloaded first.
 */
extern void *__dso_handle;
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void at_exit(void *unused)
{
    KC_DEBUG *d;

    pthread_mutex_lock(&dbg_lock);
    for (d = live; d != NULL; d = d->next) {
        if (d->reported)
            continue;
        check_routing(d);
        report(d, "exit");
        d->reported = 1;
    }
    pthread_mutex_unlock(&dbg_lock);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&dbg_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&dbg_lock);
}

/*
 * The child reports as itself, counting from the fork.  Registered after
 * cache.c's handlers, so its registry lock is free when this runs.  The
 * forking thread took dbg_lock in fork_prepare and is the child's thread:
 * release it (re-initialising a locked mutex is undefined, and
 * ThreadSanitizer says so).
 */
static void fork_child(void)
{
    KC_DEBUG *d;
    uint64_t entries;

    pthread_mutex_unlock(&dbg_lock);
    for (d = live; d != NULL; d = d->next) {
        d->to.pid = (long)getpid();
        d->reported = 0;
        kc_cache_counters_by_alg(d->pctx, d->base, &entries);
    }
}

static void hooks_register(void)
{
    __cxa_atexit(at_exit, NULL, __dso_handle);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
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
    report(d, when);
}

/* ---------------------------------------------------------------------- */
/* Life cycle                                                             */

/* A whole number in [0, max], or -1. */
static long number(const char *s, size_t len, long max)
{
    long n = 0;
    size_t i;

    if (len == 0 || len > 9)
        return -1;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        n = n * 10 + (s[i] - '0');
    }
    return n <= max ? n : -1;
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
                   && (n = number(val, (size_t)(s + len - val),
                                  KC_DEBUG_MAX_LEVEL)) >= 0) {
            d->level = (int)n;
        } else if (val != NULL && klen == 8
                   && strncmp(s, "interval", 8) == 0
                   && (n = number(val, (size_t)(s + len - val),
                                  KC_DEBUG_MAX_INTERVAL)) >= 0) {
            d->interval = (uint64_t)n;
        } else if (val == NULL && (n = number(s, len,
                                              KC_DEBUG_MAX_LEVEL)) >= 0) {
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

/* this module's file name: which build the loader started */
static const char *module_file(void)
{
    Dl_info di;
    const char *base;

    if (dladdr((void *)module_file, &di) == 0 || di.dli_fname == NULL)
        return "?";
    base = strrchr(di.dli_fname, '/');
    return base != NULL ? base + 1 : di.dli_fname;
}

void kc_debug_start(KC_PROVCTX *pctx)
{
    KC_DEBUG *d = pctx->dbg;
    char when[64] = "at exit";

    if (d == NULL)
        return;
    pthread_once(&hooks_once, hooks_register);
    pthread_mutex_lock(&dbg_lock);
    d->to.serial = ++serials;
    d->next = live;
    live = d;
    d->linked = 1;
    pthread_mutex_unlock(&dbg_lock);
    d->next_report = time(NULL) + (time_t)d->interval;
    if (d->interval != 0)
        snprintf(when, sizeof(when), "every %llus and at exit",
                 (unsigned long long)d->interval);
    kc_debug_log(pctx, 1, "start: %s %s (%s) with %s, cache_size=%llu "
                 "hmac=%s aes_gcm=%s idle_ttl=%llu admit_after=%u; reports %s",
                 pctx->name, KC_VERSION_STR, module_file(),
                 OpenSSL_version(OPENSSL_VERSION),
                 (unsigned long long)pctx->cache_size,
                 pctx->hmac_on ? "on" : "off",
                 pctx->cfam[KC_CFAM_GCM256].on ? "on" : "off",
                 (unsigned long long)pctx->idle_ttl, pctx->admit_after,
                 when);
}

void kc_debug_stop(KC_PROVCTX *pctx)
{
    KC_DEBUG *d = pctx->dbg, **pp;

    if (d == NULL)
        return;
    pthread_mutex_lock(&dbg_lock);
    if (d->linked) {
        for (pp = &live; *pp != NULL; pp = &(*pp)->next)
            if (*pp == d) {
                *pp = d->next;
                break;
            }
        d->linked = 0;
    }
    if (pctx->started && !d->reported) {
        report(d, "unload");
        d->reported = 1;
    }
    pthread_mutex_unlock(&dbg_lock);
    if (!pctx->started)
        kc_debug_log(pctx, 1, "error: %s did not start.  OpenSSL leaves out "
                     "a provider whose start fails, without a message when "
                     "it was to be activated by the configuration: this "
                     "program runs without keycache", pctx->name);
    pctx->dbg = NULL;
    OPENSSL_free(d->to.path);
    OPENSSL_free(d);
}
