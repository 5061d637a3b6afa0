/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KEYCACHE_DEBUG's reports: the start line, the counters per family at
 * exit, unload and every interval, the routing check, and what keycache
 * could not help with.  Lines go through diag/debug.c's log.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include "core/core.h"
#include "cache/cache.h"
#include "families/families.h"

/*
 * The live instances, against the exit handler, fork() and teardown.
 * Taken before store.c's registry lock; never on the hot path.
 */
static pthread_mutex_t dbg_lock = PTHREAD_MUTEX_INITIALIZER;
static KC_DEBUG *live;
static unsigned int serials;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

/*
 * The exit handler's routing check fetches, and a fetch may load the config
 * into the default library context and start keycache there, in the same
 * thread: kc_report_start() and _stop() then find dbg_lock held by it.
 */
static pthread_t exit_thread;
static int in_exit;

/* 1 if taken here; 0 if this thread holds it already, in at_exit() */
static int dbg_take(void)
{
    if (__atomic_load_n(&in_exit, __ATOMIC_ACQUIRE)
        && pthread_equal(exit_thread, pthread_self()))
        return 0;
    pthread_mutex_lock(&dbg_lock);
    return 1;
}

/* the counter slots' names: "other", then the registry's rows */
#define KC_REG_SLOT_NAME(id, kind, conf, autorule, name, ...) name,
static const char *const slot_names[KC_STAT_SLOTS] = {
    "other", KC_REGISTRY(KC_REG_SLOT_NAME)
};

static void counters_line(const KC_DEBUG *d, char *buf, size_t len,
                          size_t *used, const char *when, const char *alg,
                          const KC_COUNTERS *n)
{
    uint64_t keyed = n->hits + n->misses + n->passthrough;
    char rate[16] = "-";

    if (keyed != 0)
        snprintf(rate, sizeof(rate), "%.1f%%",
                 100.0 * (double)n->hits / (double)keyed);
    kc_debug_line(d, buf, len, used, "report (%s): %s hits=%llu misses=%llu "
         "passthrough=%llu evictions=%llu hit_rate=%s", when, alg,
         (unsigned long long)n->hits, (unsigned long long)n->misses,
         (unsigned long long)n->passthrough,
         (unsigned long long)n->evictions, rate);
}

/*
 * "quirks AES-128-SIV empty-is-message=1 ...": for each family that learned
 * them, what the running default does on each quirk its registry row names
 * ("?": not asked yet - a name twice is learned at the first one).
 */
static void quirks_lines(const KC_DEBUG *d, char *buf, size_t len,
                         size_t *used, const char *when)
{
    char line[256];
    unsigned int word, q;
    size_t n;
    int i;

    for (i = 0; i < KC_REGISTRY_ROWS; i++) {
        const KC_FAMILY_ROW *r = &kc_registry[i];

        if (r->quirks == 0 || !*kc_registry_on(d->pctx, i))
            continue;
        word = __atomic_load_n(r->kind == KC_KIND_MAC
                               ? &d->pctx->fam[r->index].quirks
                               : &d->pctx->cfam[r->index].quirks,
                               __ATOMIC_RELAXED);
        if (!kc_quirk(word, KC_Q_KNOWN))
            continue;
        n = 0;
        for (q = 1; q != 0 && n < sizeof(line); q <<= 1)
            if ((r->quirks & q) != 0)
                n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%s",
                    kc_quirk_name(q),
                    q == KC_Q_REPEATS_FAIL
                    && !kc_quirk(word, KC_Q_REPEATS_KNOWN) ? "?"
                    : kc_quirk(word, q) ? "1" : "0");
        /* known for the running version (learn.c), or learned */
        kc_debug_line(d, buf, len, used, "report (%s): quirks %s%s%s", when,
                      r->name, line, kc_quirk(word, KC_Q_FROM_TABLE)
                                     ? " from=table" : "");
    }
}

/*
 * Hits under a tenth of the keyed inits, or a child that only wiped what
 * it inherited: say why, so that switching keycache off is informed.
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
    kc_debug_line(d, buf, len, used, "report (%s): little for keycache to gain "
         "here%s; switching it off for this program costs nothing", when,
         why);
}

/* The counters per algorithm used, then the sums, less what fork() gave. */
static void report(KC_DEBUG *d, const char *when)
{
    KC_COUNTERS by[KC_STAT_SLOTS], all;
    uint64_t entries;
    char buf[4096];          /* one write: counters and quirks lines */
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
    quirks_lines(d, buf, sizeof(buf), &used, when);
    little_to_gain(d, buf, sizeof(buf), &used, when, &all);
    kc_log_emit(&d->to, buf, used);
}

/* Which provider a query-less fetch of |alg| reaches, under |props|. */
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
                     props, KEYCACHE_PROVIDER_NAME);
}

/*
 * Fetch as unchanged code does and see who answers.  Only at exit: at the
 * start the configuration's alg_section may not have been applied yet.
 * Not once keycache was deactivated there (props.c): a program may have
 * freed that library context without unloading keycache, which is then
 * never torn down; nor, unheard, in a context other than the default one.
 */
static void check_routing(KC_DEBUG *d)
{
    KC_PROVCTX *pctx = d->pctx;
    const OSSL_PROVIDER *prov;
    EVP_MAC *mac = NULL;
    EVP_CIPHER *cipher = NULL;
    char props[512];
    int i, fips;

    /* a bind that failed said so: the properties are not to blame */
    if ((__atomic_load_n(&pctx->bind_state, __ATOMIC_ACQUIRE) == KC_ONCE_DONE
         && !pctx->bind_ok)
        || __atomic_load_n(&pctx->app_gone, __ATOMIC_ACQUIRE)
        || (__atomic_load_n(&pctx->props_registered, __ATOMIC_ACQUIRE) != 1
            && pctx->app_libctx != OSSL_LIB_CTX_get0_global_default()))
        return;
    kc_props_get(pctx, props, sizeof(props));
    fips = EVP_default_properties_is_fips_enabled(pctx->app_libctx);
    ERR_set_mark();
    for (i = 0; i < KC_REGISTRY_ROWS; i++) {
        const char *name = kc_registry[i].name;

        if (!*kc_registry_on(pctx, i))
            continue;
        if (kc_registry[i].kind == KC_KIND_CIPHER) {
            cipher = EVP_CIPHER_fetch(pctx->app_libctx, name, NULL);
            prov = cipher != NULL ? EVP_CIPHER_get0_provider(cipher) : NULL;
        } else {
            mac = EVP_MAC_fetch(pctx->app_libctx, name, NULL);
            prov = mac != NULL ? EVP_MAC_get0_provider(mac) : NULL;
        }
        check_route(d, name,
                    prov != NULL ? OSSL_PROVIDER_get0_name(prov) : "nothing",
                    props, fips);
        if (kc_registry[i].kind == KC_KIND_CIPHER)
            EVP_CIPHER_free(cipher);
        else
            EVP_MAC_free(mac);
    }
    ERR_pop_to_mark();
}

/*
 * Registered after libcrypto's exit handler, so run before OPENSSL_cleanup()
 * tears the providers down.  Tied to this module with __dso_handle (what
 * glibc's atexit() does; sanitizers' drops it) so that dlclose() runs it.
 */
extern void *__dso_handle;
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void at_exit(void *unused)
{
    KC_DEBUG *d;

    pthread_mutex_lock(&dbg_lock);
    exit_thread = pthread_self();
    __atomic_store_n(&in_exit, 1, __ATOMIC_RELEASE);
    /* an instance started meanwhile is linked at the head, behind us */
    for (d = live; d != NULL; d = d->next) {
        if (d->reported)
            continue;
        check_routing(d);
        report(d, "exit");
        d->reported = 1;
    }
    __atomic_store_n(&in_exit, 0, __ATOMIC_RELEASE);
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
 * The child reports as itself, counting from the fork; store.c's handlers
 * ran first.  fork_prepare's thread is the child's: it unlocks dbg_lock
 * (re-initialising a locked mutex is undefined).
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

/* this module's file name: which build the loader started */
static const char *module_file(void)
{
    const char *path = kc_object_path((void *)module_file);
    const char *base = strrchr(path, '/');

    return base != NULL ? base + 1 : path;
}

/* "hmac=on cmac=on ...": each configuration key of the registry's rows */
static void families(KC_PROVCTX *pctx, char *buf, size_t len)
{
    size_t used = 0;
    int i, j, seen;

    buf[0] = '\0';
    for (i = 0; i < KC_REGISTRY_ROWS && used < len; i++) {
        for (seen = 0, j = 0; j < i; j++)
            seen |= strcmp(kc_registry[j].conf, kc_registry[i].conf) == 0;
        if (!seen)
            used += (size_t)snprintf(buf + used, len - used, "%s%s=%s",
                                     used > 0 ? " " : "", kc_registry[i].conf,
                                     *kc_registry_on(pctx, i) ? "on" : "off");
    }
}

/* a cipher family on (bound or not yet) */
static int any_cipher_on(KC_PROVCTX *pctx)
{
    int i;

    for (i = 0; i < KC_REGISTRY_ROWS; i++)
        if (kc_registry[i].kind == KC_KIND_CIPHER && *kc_registry_on(pctx, i))
            return 1;
    return 0;
}

void kc_report_start(KC_PROVCTX *pctx)
{
    KC_DEBUG *d = pctx->dbg;
    char when[64] = "at exit", fams[256];
    int taken;

    if (d == NULL)
        return;
    d->report = report;
    /* the child's report counts from the fork: store.c's handlers first */
    kc_cache_fork_arm();
    pthread_once(&hooks_once, hooks_register);
    taken = dbg_take();
    d->to.serial = ++serials;
    d->next = live;
    live = d;
    d->linked = 1;
    if (taken)
        pthread_mutex_unlock(&dbg_lock);
    d->next_report = time(NULL) + (time_t)d->interval;
    if (d->interval != 0)
        snprintf(when, sizeof(when), "every %llus and at exit",
                 (unsigned long long)d->interval);
    families(pctx, fams, sizeof(fams));
    kc_debug_log(pctx, 1, "start: %s %s (%s) with %s, cache_size=%llu "
                 "%s idle_ttl=%llu admit_after=%u; reports %s",
                 pctx->name, KC_VERSION_STR, module_file(),
                 OpenSSL_version(OPENSSL_VERSION),
                 (unsigned long long)pctx->cache_size, fams,
                 (unsigned long long)pctx->idle_ttl, pctx->admit_after,
                 when);
    /* 3.5+: why no cipher is cached by default, or what one on costs */
    if (kc_quirk_ciphers_pay())
        return;
    if (any_cipher_on(pctx))
        kc_debug_log(pctx, 1, "note: with a cipher on, keycache passes "
                     "every default cipher through for EVP_SKEY (OpenSSL "
                     "3.5+), built at each process's first cipher fetch "
                     "(docs/families.md)");
    else
        kc_debug_log(pctx, 1, "note: OpenSSL 3.5+: auto leaves cmac, "
                     "aes_ocb and aes_siv off, since a cipher on passes every "
                     "default cipher through for EVP_SKEY, built at each "
                     "process's first cipher fetch; set them on to cache "
                     "them (docs/families.md)");
}

void kc_report_stop(KC_PROVCTX *pctx)
{
    KC_DEBUG *d = pctx->dbg, **pp;
    int taken;

    if (d == NULL)
        return;
    taken = dbg_take();
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
    if (taken)
        pthread_mutex_unlock(&dbg_lock);
    if (!pctx->started)
        kc_debug_log(pctx, 1, "error: %s did not start.  OpenSSL leaves out "
                     "a provider whose start fails, without a message when "
                     "it was to be activated by the configuration: this "
                     "program runs without it (and with any other keycache "
                     "section that started)", pctx->name);
    pctx->dbg = NULL;
    OPENSSL_free(d->to.path);
    OPENSSL_free(d);
}
