/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an operator sees: configuration errors that say why (registered
 * reasons, the key and the accepted values, no build paths, unknown keys
 * found) and KEYCACHE_DEBUG's log (start, errors, routing warnings,
 * per-algorithm reports at unload, exit, fork and every N seconds).
 *
 * Each case loads a temporary copy of the build's keycache-test.cnf
 * (admit_after = 1, aes_gcm = on) into a library context of its own.  The
 * counts a report must show follow from the workload each case runs (one
 * key: the first keyed init misses, every later one hits); its outputs are
 * compared with the default provider's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/proverr.h>

#include "kc_family.h"
#include "kc_test.h"
#include "keycache.h"

static char logpath[64];

/* ---------------------------------------------------------------------- */
/* Configurations and the log                                             */

static int starts_with(const char *line, const char *const *list)
{
    for (; list != NULL && *list != NULL; list++)
        if (strncmp(line, *list, strlen(*list)) == 0)
            return 1;
    return 0;
}

typedef struct {
    const char *const *drop;
    const char *add, *tail;
} DIAG_EDIT;

static void edit(FILE *out, const char *line, void *arg)
{
    const DIAG_EDIT *e = arg;

    if (line == NULL) {
        if (e->tail != NULL)
            fprintf(out, "%s\n", e->tail);
        return;
    }
    if (starts_with(line, e->drop))
        return;
    fputs(line, out);
    if (e->add != NULL && strncmp(line, "[keycache_sect]", 15) == 0)
        fprintf(out, "%s\n", e->add);
}

/*
 * Copy keycache-test.cnf to a temporary file: lines starting with one of
 * |drop| left out, |add| (lines) put into [keycache_sect] and |tail|
 * appended.  |path| gets the name (KCT_PATH_LEN bytes).
 */
static int write_conf(char *path, const char *const *drop, const char *add,
                      const char *tail)
{
    DIAG_EDIT e = { drop, add, tail };

    return kct_copy_conf(path, edit, &e);
}

/*
 * Load |conf| into a new library context with KEYCACHE_DEBUG=|debug| (NULL:
 * unset) and, if |as_default|, OPENSSL_CONF naming it (keycache reads that
 * file to find unknown keys).  The context is returned even if keycache
 * did not start in it.
 */
static OSSL_LIB_CTX *load(const char *conf, const char *debug, int as_default)
{
    OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();

    if (debug != NULL)
        setenv("KEYCACHE_DEBUG", debug, 1);
    if (as_default)
        setenv("OPENSSL_CONF", conf, 1);
    if (ctx != NULL && !OSSL_LIB_CTX_load_config(ctx, conf)) {
        OSSL_LIB_CTX_free(ctx);
        ctx = NULL;
    }
    unsetenv("KEYCACHE_DEBUG");
    setenv("OPENSSL_CONF", "/dev/null", 1);
    return ctx;
}

/* KEYCACHE_DEBUG for a fresh log file: "file:<log>" plus |more|. */
static const char *debug_to_log(const char *more)
{
    static char buf[256];

    unlink(logpath);
    snprintf(buf, sizeof(buf), "file:%s%s%s", logpath,
             more != NULL ? "," : "", more != NULL ? more : "");
    return buf;
}

static char *read_log(void)
{
    FILE *f = fopen(logpath, "r");
    char *buf;
    size_t n;

    if (f == NULL)
        return NULL;
    buf = calloc(1, 1 << 16);
    n = buf != NULL ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    if (buf != NULL)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Does the log have |text| (in a line of process |pid| if not 0)? */
static int log_has(const char *text, long pid)
{
    char *log = read_log(), *p, *eol;
    char tag[32];
    int found = 0;

    if (log == NULL)
        return 0;
    snprintf(tag, sizeof(tag), "keycache[%ld", pid);
    for (p = log; !found && (p = strstr(p, text)) != NULL; p++) {
        for (eol = p; eol > log && eol[-1] != '\n'; eol--)
            continue;
        found = pid == 0 || strncmp(strstr(eol, "keycache["), tag,
                                    strlen(tag)) == 0;
    }
    if (!found)
        fprintf(stderr, "\n  log lacks \"%s\"; log:\n%s", text, log);
    free(log);
    return found;
}

/* ---------------------------------------------------------------------- */
/* Workloads, checked against the default provider                        */

static const unsigned char msg[] = "keycache diagnostics test message";

static void hmac_ops(OSSL_LIB_CTX *ctx, int n, uint32_t seed)
{
    unsigned char key[32], got[32], want[32];
    size_t len;
    int i;

    kct_fill(key, sizeof(key), seed);
    CU_ASSERT_PTR_NOT_NULL(EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256",
                                     NULL, key, sizeof(key), msg, sizeof(msg),
                                     want, sizeof(want), &len));
    for (i = 0; i < n; i++) {
        memset(got, 0, sizeof(got));
        CU_ASSERT_PTR_NOT_NULL(EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL,
                                         key, sizeof(key), msg, sizeof(msg),
                                         got, sizeof(got), &len));
        CU_ASSERT_EQUAL(memcmp(got, want, sizeof(want)), 0);
    }
}

static int gcm_seal(OSSL_LIB_CTX *ctx, const unsigned char *key,
                    unsigned char *out)
{
    static const unsigned char iv[12] = "diagnostics";
    EVP_CIPHER *c = EVP_CIPHER_fetch(ctx, "AES-128-GCM", NULL);
    EVP_CIPHER_CTX *cc = EVP_CIPHER_CTX_new();
    int l, ok;

    ok = c != NULL && cc != NULL
         && EVP_EncryptInit_ex(cc, c, NULL, key, iv)
         && EVP_EncryptUpdate(cc, out, &l, msg, sizeof(msg))
         && EVP_EncryptFinal_ex(cc, out + l, &l)
         && EVP_CIPHER_CTX_ctrl(cc, EVP_CTRL_AEAD_GET_TAG, 16,
                                out + sizeof(msg));
    EVP_CIPHER_CTX_free(cc);
    EVP_CIPHER_free(c);
    return ok;
}

static void gcm_ops(OSSL_LIB_CTX *ctx, int n)
{
    unsigned char key[16], got[sizeof(msg) + 16], want[sizeof(msg) + 16];
    int i;

    kct_fill(key, sizeof(key), 77);
    CU_ASSERT_TRUE(gcm_seal(kct_default(), key, want));
    for (i = 0; i < n; i++) {
        memset(got, 0, sizeof(got));
        CU_ASSERT_TRUE(gcm_seal(ctx, key, got));
        CU_ASSERT_EQUAL(memcmp(got, want, sizeof(want)), 0);
    }
}

/* ---------------------------------------------------------------------- */
/* KEYCACHE_DEBUG                                                          */

/* 10 HMACs and 6 AES-128-GCM seals with one key each, then unload. */
static void test_report_at_unload(void)
{
    char conf[64], pid[64];
    OSSL_LIB_CTX *ctx;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    hmac_ops(ctx, 10, 1);
    gcm_ops(ctx, 6);
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);

    snprintf(pid, sizeof(pid), "keycache[%ld", (long)getpid());
    CU_ASSERT_TRUE(log_has(pid, 0));
    CU_ASSERT_TRUE(log_has("start: keycache", getpid()));
    /* every family's state: the config forces the ciphers and cmac on */
    CU_ASSERT_TRUE(log_has("cache_size=64 hmac=on cmac=on gmac=on kmac=on "
                           "aes_ocb=on aes_siv=on aes_gcm=on idle_ttl=0 "
                           "admit_after=1", getpid()));
    /* and from 3.5 says what a cipher on costs every process */
    CU_ASSERT_EQUAL(log_has("note: with a cipher on, keycache passes every "
                            "default cipher through for EVP_SKEY", getpid())
                    != 0, OpenSSL_version_num() >= 0x30500000UL);
    /* the entry each key made is evicted when the provider unloads */
    CU_ASSERT_TRUE(log_has("report (unload): HMAC hits=9 misses=1 "
                           "passthrough=0 evictions=1 hit_rate=90.0%",
                           getpid()));
    CU_ASSERT_TRUE(log_has("report (unload): AES-128-GCM hits=5 misses=1 "
                           "passthrough=0 evictions=1 hit_rate=83.3%",
                           getpid()));
    CU_ASSERT_TRUE(log_has("report (unload): all hits=14 misses=2 "
                           "passthrough=0 evictions=2 hit_rate=87.5% "
                           "entries=0", getpid()));
}

/*
 * "quirks <name> k=v ...": the answer the report gives for quirk |k| of
 * family |name| at unload, 0 or 1, -1 if the line or the quirk is missing,
 * 2 for "?".
 */
static int reported_quirk(const char *log, const char *name, const char *k)
{
    char head[96], key[48];
    const char *line, *eol, *p;

    snprintf(head, sizeof(head), "report (unload): quirks %s ", name);
    snprintf(key, sizeof(key), " %s=", k);
    if (log == NULL || (line = strstr(log, head)) == NULL)
        return -1;
    eol = strchr(line, '\n');
    p = strstr(line + strlen(head) - 1, key);
    if (p == NULL || (eol != NULL && p > eol))
        return -1;
    p += strlen(key);
    return *p == '?' ? 2 : *p == '1' ? 1 : *p == '0' ? 0 : -1;
}

/* f's sub parameter (KMAC: its size) twice, into p[3] */
static OSSL_PARAM *named_twice(const KCT_FAM *f, OSSL_PARAM p[3], size_t *sz)
{
    p[0] = f->sub != NULL
           ? OSSL_PARAM_construct_utf8_string(f->sub, (char *)f->sub_value, 0)
           : OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, sz);
    p[1] = p[0];
    p[2] = OSSL_PARAM_construct_end();
    return p;
}

/* Whether the default's set_params on a fresh context of f accepts p. */
static int default_sets(const KCT_FAM *f, const OSSL_PARAM *p)
{
    EVP_MAC *mac = EVP_MAC_fetch(kct_default(), f->name, NULL);
    EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    int ok;

    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    ERR_set_mark();
    ok = EVP_MAC_CTX_set_params(c, p) == 1 && ERR_peek_last_error() == 0;
    ERR_pop_to_mark();
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    return ok;
}

/* Whether the default's KMAC takes an update after its final. */
static int default_updates_after_final(const KCT_FAM *f)
{
    EVP_MAC *mac = EVP_MAC_fetch(kct_default(), f->name, NULL);
    EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    unsigned char key[32] = { 1 }, out[64];
    size_t n;
    int ok;

    CU_ASSERT_FATAL(c != NULL && EVP_MAC_init(c, key, sizeof(key), NULL)
                    && EVP_MAC_final(c, out, &n, sizeof(out)));
    ERR_set_mark();
    ok = EVP_MAC_update(c, key, 1) == 1;
    ERR_pop_to_mark();
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    return ok;
}

/*
 * At unload, the report names the quirks each family's registry row asks
 * about, with what the running default does: checked here against the
 * default itself for the MAC families' (a name twice, NULL and empty
 * arrays, KMAC's update after the final); SIV's are named with an answer.
 */
static void test_report_quirks(void)
{
    static const OSSL_PARAM empty[] = { OSSL_PARAM_END };
    static const char *const siv[] = { "empty-is-message", "set-reopens",
        "empty-reopens", "null-reopens", "try-reopens", "repeats-fail" };
    unsigned char key[KCT_FAM_MAXKEY] = { 7 }, out[KCT_FAM_OUT(16)];
    char conf[64], *log;
    OSSL_LIB_CTX *ctx;
    size_t i, k, sz = 16;
    int mode;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (i = 0; i < kct_nfams; i++) {
        const KCT_FAM *f = &kct_fams[i];
        EVP_MAC *mac;
        EVP_MAC_CTX *c;
        OSSL_PARAM two[3], init[3];

        if (f->kind == KCT_HMAC)
            continue;
        CU_ASSERT(kct_fam_run(ctx, f, key, f->keylen, key, 16, out) > 0);
        if (f->kind != KCT_MAC)
            continue;
        /* a name twice on a keyed context: learned at the first one */
        mac = EVP_MAC_fetch(ctx, f->name, NULL);
        c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        CU_ASSERT_FATAL(c != NULL
                        && EVP_MAC_init(c, key, f->keylen,
                                        kct_fam_mac_params(f, init, NULL)));
        ERR_set_mark();
        (void)EVP_MAC_CTX_set_params(c, named_twice(f, two, &sz));
        ERR_pop_to_mark();
        EVP_MAC_CTX_free(c);
        EVP_MAC_free(mac);
    }
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);
    log = read_log();
    CU_ASSERT_PTR_NOT_NULL_FATAL(log);
    for (i = 0; i < kct_nfams; i++) {
        const KCT_FAM *f = &kct_fams[i];
        OSSL_PARAM two[3];
        int want;

        if (f->kind == KCT_HMAC)
            continue;
        mode = kct_fam_mode(f);
        if (mode == KCT_MODE_SIV) {
            for (k = 0; k < sizeof(siv) / sizeof(siv[0]); k++) {
                int got = reported_quirk(log, f->name, siv[k]);

                if (got != 0 && got != 1)
                    fprintf(stderr, "\n%s: %s=%d\n", f->name, siv[k], got);
                CU_ASSERT(got == 0 || got == 1);
            }
            continue;
        }
        if (f->kind != KCT_MAC) {
            /* the template's ciphers ask nothing */
            CU_ASSERT(reported_quirk(log, f->name, "repeats-fail") == -1);
            continue;
        }
        named_twice(f, two, &sz);
        CU_ASSERT(reported_quirk(log, f->name, "null-set-ok")
                  == default_sets(f, NULL));
        CU_ASSERT(reported_quirk(log, f->name, "empty-set-ok")
                  == default_sets(f, empty));
        want = !default_sets(f, two);
        if (reported_quirk(log, f->name, "repeats-fail") != want)
            fprintf(stderr, "\n%s: repeats-fail=%d, the default: %d\n",
                    f->name, reported_quirk(log, f->name, "repeats-fail"),
                    want);
        CU_ASSERT(reported_quirk(log, f->name, "repeats-fail") == want);
        want = strncmp(f->name, "KMAC", 4) != 0 ? -1
               : !default_updates_after_final(f);
        CU_ASSERT(reported_quirk(log, f->name, "final-seals") == want);
    }
    free(log);
}

/*
 * A MAC family's first use (gate.c) under default properties no provider
 * meets: what it learns of the default's code is learned still, and the
 * report names it as the default has it.  Not KMAC's: the default's newctx
 * fetches its digest under those properties and fails, and so does
 * keycache's (layer/tmpl.c, new_fetch()), so no context is made to learn
 * with, and the report says its quirks are unknown.
 */
static void test_quirks_learned_under_nope(void)
{
    unsigned char key[KCT_FAM_MAXKEY] = { 9 }, out[64];
    char conf[64], *log;
    OSSL_LIB_CTX *ctx;
    size_t i, n;
    int k;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (i = 0; i < kct_nfams; i++) {
        const KCT_FAM *f = &kct_fams[i];
        EVP_MAC *mac;
        OSSL_PARAM p[3];

        if (f->kind != KCT_MAC)
            continue;
        mac = EVP_MAC_fetch(ctx, f->name, "provider=" KEYCACHE_PROVIDER_NAME);
        CU_ASSERT_PTR_NOT_NULL_FATAL(mac);
        CU_ASSERT_FATAL(EVP_set_default_properties(ctx, "provider=nope"));
        /* past the thread's first contexts: the family's gate runs */
        for (k = 0; k < 6; k++) {
            EVP_MAC_CTX *c;

            ERR_set_mark();
            c = EVP_MAC_CTX_new(mac);
            (void)(c != NULL && EVP_MAC_init(c, key, f->keylen,
                                            kct_fam_mac_params(f, p, NULL))
                   && EVP_MAC_final(c, out, &n, sizeof(out)));
            ERR_pop_to_mark();
            EVP_MAC_CTX_free(c);
        }
        CU_ASSERT_FATAL(EVP_set_default_properties(ctx, ""));
        EVP_MAC_free(mac);
    }
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);
    log = read_log();
    CU_ASSERT_PTR_NOT_NULL_FATAL(log);
    for (i = 0; i < kct_nfams; i++) {
        const KCT_FAM *f = &kct_fams[i];
        int want, got, kmac;

        if (f->kind != KCT_MAC)
            continue;
        kmac = strncmp(f->name, "KMAC", 4) == 0;
        want = kmac ? -1 : default_sets(f, NULL);
        got = reported_quirk(log, f->name, "null-set-ok");
        if (got != want)
            fprintf(stderr, "\n%s: null-set-ok=%d after a first use under "
                    "provider=nope\n", f->name, got);
        CU_ASSERT(got == want);
        CU_ASSERT(reported_quirk(log, f->name, "final-seals") == -1);
    }
    free(log);
}

/*
 * Each AES-SIV family's reported quirk line (after the family name), up to
 * " from=", into out; 0 if missing.  *table: it said from=table.
 */
static int siv_quirk_line(const char *log, const char *name, char *out,
                          size_t n, int *table)
{
    char head[96];
    const char *line, *eol, *from;
    size_t len;

    snprintf(head, sizeof(head), "report (unload): quirks %s ", name);
    if (log == NULL || (line = strstr(log, head)) == NULL)
        return 0;
    line += strlen(head);
    eol = strchr(line, '\n');
    len = eol != NULL ? (size_t)(eol - line) : strlen(line);
    from = strstr(line, " from=table");
    *table = from != NULL && from < line + len;
    if (*table)
        len = (size_t)(from - line);
    if (len >= n)
        return 0;
    memcpy(out, line, len);
    out[len] = '\0';
    return 1;
}

/* Is the running libcrypto one of the versions CI runs? */
static int ci_version(void)
{
    static const char *const ci[] = { "3.0.22", "3.5.9", "4.0.3", NULL };
    const char *v = OpenSSL_version(OPENSSL_FULL_VERSION_STRING);
    size_t i;

    for (i = 0; ci[i] != NULL; i++)
        if (strcmp(v, ci[i]) == 0)
            return 1;
    return 0;
}

/*
 * AES-SIV's quirks are known for the versions CI runs (learn.c): on those
 * the word taken from that table is what learning it of the default finds
 * (quirk_table = off), family by family; elsewhere both are learned.
 */
static void test_siv_quirk_table(void)
{
    unsigned char key[KCT_FAM_MAXKEY] = { 7 }, out[KCT_FAM_OUT(16)];
    char conf[64], *log[2];
    char line[2][256];
    int table[2], pass, nsiv = 0;
    size_t i;

    for (pass = 0; pass < 2; pass++) {
        OSSL_LIB_CTX *ctx;

        CU_ASSERT_FATAL(write_conf(conf, NULL,
                                   pass == 0 ? NULL : "quirk_table = off",
                                   NULL));
        ctx = load(conf, debug_to_log(NULL), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        for (i = 0; i < kct_nfams; i++)
            if (kct_fam_mode(&kct_fams[i]) == KCT_MODE_SIV)
                CU_ASSERT(kct_fam_run(ctx, &kct_fams[i], key,
                                      kct_fams[i].keylen, key, 16, out) > 0);
        OSSL_LIB_CTX_free(ctx);
        unlink(conf);
        log[pass] = read_log();
        CU_ASSERT_PTR_NOT_NULL_FATAL(log[pass]);
    }
    for (i = 0; i < kct_nfams; i++) {
        const KCT_FAM *f = &kct_fams[i];

        if (kct_fam_mode(f) != KCT_MODE_SIV)
            continue;
        nsiv++;
        CU_ASSERT_FATAL(siv_quirk_line(log[0], f->name, line[0],
                                       sizeof(line[0]), &table[0]));
        CU_ASSERT_FATAL(siv_quirk_line(log[1], f->name, line[1],
                                       sizeof(line[1]), &table[1]));
        CU_ASSERT(!table[1]);
        if (strcmp(line[0], line[1]) != 0)
            fprintf(stderr, "\n%s (%s): %s, learned: %s\n", f->name,
                    OpenSSL_version(OPENSSL_VERSION), line[0], line[1]);
        CU_ASSERT_STRING_EQUAL(line[0], line[1]);
        /* the versions CI runs (tools/test-all.sh) must be known */
        if (!table[0])
            fprintf(stderr, "\n%s: no quirk word known for %s (learned)\n",
                    f->name, OpenSSL_version(OPENSSL_VERSION));
        CU_ASSERT(table[0] || !ci_version());
    }
    CU_ASSERT(nsiv == 3);
    free(log[0]);
    free(log[1]);
}

/*
 * A cipher key not admitted yet (admit_after = 3, two keys used once) is a
 * pass-through in the counters, whether a default context or the family's
 * own (AES-SIV) serves it.
 */
static void test_cold_keys_counted(void)
{
    unsigned char key[KCT_FAM_MAXKEY], out[KCT_FAM_OUT(16)];
    char conf[64], want[128];
    OSSL_LIB_CTX *ctx;
    size_t i;
    int k;

    CU_ASSERT_FATAL(write_conf(conf, (const char *[]){ "admit_after", NULL },
                               "admit_after = 3", NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (i = 0; i < kct_nfams; i++) {
        if (kct_fams[i].kind != KCT_CIPHER)
            continue;
        for (k = 0; k < 2; k++) {
            memset(key, 0x31 + k, sizeof(key));
            CU_ASSERT(kct_fam_run(ctx, &kct_fams[i], key, kct_fams[i].keylen,
                                  key, 16, out) > 0);
        }
    }
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);
    for (i = 0; i < kct_nfams; i++) {
        if (kct_fams[i].kind != KCT_CIPHER)
            continue;
        snprintf(want, sizeof(want), "report (unload): %s hits=0 misses=0 "
                 "passthrough=2 ", kct_fams[i].name);
        if (!log_has(want, getpid()))
            fprintf(stderr, "\n  no \"%s\"", want);
        CU_ASSERT_TRUE(log_has(want, getpid()));
    }
}

/* A forked child reports its own pid and only what it did itself. */
static void test_report_after_fork(void)
{
    char conf[64];
    OSSL_LIB_CTX *ctx;
    pid_t child;
    int status = -1;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    hmac_ops(ctx, 3, 2);
    fflush(NULL);
    child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        alarm(KCT_CHILD_ALARM);
        hmac_ops(ctx, 7, 2);
        exit(0);                /* keycache's exit report runs here */
    }
    CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);

    /*
     * the child: the parent's entry was dropped at fork (not counted from
     * the fork on), so it misses once, is admitted again and hits six times
     */
    CU_ASSERT_TRUE(log_has("report (exit): HMAC hits=6 misses=1 "
                           "passthrough=0 evictions=0 hit_rate=85.7%",
                           child));
    CU_ASSERT_TRUE(log_has("report (unload): HMAC hits=2 misses=1 "
                           "passthrough=0 evictions=1", getpid()));
}

/*
 * A program that frees a library context without unloading keycache,
 * which it loaded there itself: keycache is never torn down, and its exit
 * report must not ask that context who answers (it is gone).  In a child,
 * which must exit cleanly and still report.
 */
static void test_exit_after_context_freed(void)
{
    char conf[64];
    OSSL_LIB_CTX *ctx;
    OSSL_PROVIDER *kc;
    pid_t child;
    int status = -1;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    fflush(NULL);
    child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        alarm(KCT_CHILD_ALARM);
        ctx = load(conf, debug_to_log(NULL), 0);
        /* the program's own hold on keycache, never given back */
        kc = ctx != NULL ? OSSL_PROVIDER_load(ctx, KEYCACHE_PROVIDER_NAME)
                         : NULL;
        if (kc == NULL)
            exit(3);
        hmac_ops(ctx, 3, 5);
        OSSL_LIB_CTX_free(ctx);
        exit(0);                /* keycache's exit report runs here */
    }
    CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_TRUE(log_has("report (exit): HMAC", child));
    unlink(conf);
}

/*
 * The report says when a process's work is what keycache cannot help: a
 * forked child that only wiped what it inherited, threads that keyed once
 * and never admitted a key.  A process that hits says nothing of it.
 */
static void *key_once(void *arg)
{
    hmac_ops(arg, 1, 11);
    return NULL;
}

static void test_report_little_to_gain(void)
{
    char conf[64];
    OSSL_LIB_CTX *ctx;
    pthread_t t[3];
    pid_t child;
    int status = -1, i;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    hmac_ops(ctx, 4, 5);        /* the test config admits at once: 3 hits */
    fflush(NULL);
    child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        alarm(KCT_CHILD_ALARM);
        exit(0);                /* keyed nothing: it only wiped */
    }
    CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, key_once, ctx), 0);
    for (i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);

    CU_ASSERT_TRUE(log_has("report (exit): little for keycache to gain here; "
                           "a forked child that wiped 1 inherited entries; "
                           "switching it off", child));
    /* the parent: 3 hits of 7 keyed inits, 3 of its 4 threads admitted */
    CU_ASSERT_FALSE(log_has("little for keycache to gain", getpid()));
}

/* Four threads under admit_after = 3: first() on one, rest() on the others */
static void run_four_threads(void *(*first)(void *), void *(*rest)(void *))
{
    static const char *const drop[] = { "admit_after", NULL };
    char conf[64];
    OSSL_LIB_CTX *ctx;
    pthread_t t[4];
    int i;

    CU_ASSERT_FATAL(write_conf(conf, drop, "admit_after = 3", NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (i = 0; i < 4; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL,
                                             i == 0 ? first : rest, ctx), 0);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);
}

/* Threads that key once each: nothing to gain, and the report says so. */
static void test_report_threads_once(void)
{
    run_four_threads(key_once, key_once);
    CU_ASSERT_TRUE(log_has("report (unload): little for keycache to gain "
                           "here; 4 of 4 threads that keyed admitted no key; "
                           "keys not used 3 times on one thread (admit_after):"
                           " 0 hits of 4 keyed inits", getpid()));
}

/*
 * A thread that admits, stops (OPENSSL_thread_stop()) and admits again in
 * a new cache is one thread that admitted, as it is one that keyed.
 */
static void *admit_stop_admit(void *arg)
{
    int i;

    for (i = 0; i < 3; i++)
        hmac_ops(arg, 1, 40 + i);   /* the thread's first misses */
    hmac_ops(arg, 3, 50);           /* admitted at its third use */
    OPENSSL_thread_stop();
    hmac_ops(arg, 3, 51);           /* in a new cache */
    return NULL;
}

static void *key_new_keys(void *arg)
{
    static int next;
    int i, base = __atomic_fetch_add(&next, 100, __ATOMIC_RELAXED);

    for (i = 0; i < 20; i++)
        hmac_ops(arg, 1, 1000 + base + i);
    return NULL;
}

static void test_report_threads_counted_once(void)
{
    run_four_threads(admit_stop_admit, key_new_keys);
    CU_ASSERT_TRUE(log_has("3 of 4 threads that keyed admitted no key",
                           getpid()));
}

/* interval:1 - a report from the thread that uses keycache when due. */
static void test_report_every_interval(void)
{
    char conf[64];
    OSSL_LIB_CTX *ctx;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log("interval:1"), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    hmac_ops(ctx, 1, 3);
    sleep(2);
    hmac_ops(ctx, 1, 3);
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);

    CU_ASSERT_TRUE(log_has("reports every 1s and at exit", getpid()));
    /* written as the second operation starts, before it counts */
    CU_ASSERT_TRUE(log_has("report (every 1s): HMAC hits=0 misses=1",
                           getpid()));
    CU_ASSERT_TRUE(log_has("report (unload): HMAC hits=1 misses=1",
                           getpid()));
}

/*
 * Two threads due for a report at once: one writes it, the counters it
 * reads are being written by both (TSan checks that), and the totals at
 * unload are every thread's.
 */
static void *interval_thread(void *arg)
{
    hmac_ops(arg, 1, 5);
    sleep(2);
    hmac_ops(arg, 1, 5);
    return NULL;
}

static void test_interval_threads(void)
{
    char conf[64], *log, *p;
    OSSL_LIB_CTX *ctx;
    pthread_t t[2];
    int i, reports = 0;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log("interval:1"), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    for (i = 0; i < 2; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, interval_thread,
                                             ctx), 0);
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);

    /* each thread has its own cache: one miss and one hit each */
    CU_ASSERT_TRUE(log_has("report (unload): HMAC hits=2 misses=2 "
                           "passthrough=0 evictions=2", getpid()));
    log = read_log();
    for (p = log; p != NULL && (p = strstr(p, "report (every 1s): all"))
                               != NULL; p++)
        reports++;
    free(log);
    CU_ASSERT_TRUE(reports >= 1 && reports <= 2);
}

/* level:0 writes nothing; an unknown word is named and ignored. */
static void test_levels_and_words(void)
{
    char conf[64];
    struct stat st;
    OSSL_LIB_CTX *ctx;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log("level:0"), 0);
    CU_ASSERT_PTR_NOT_NULL(ctx);
    hmac_ops(ctx, 2, 4);
    OSSL_LIB_CTX_free(ctx);
    CU_ASSERT_NOT_EQUAL(stat(logpath, &st), 0);

    ctx = load(conf, debug_to_log("colour:red,level:2"), 1);
    CU_ASSERT_PTR_NOT_NULL(ctx);
    OSSL_LIB_CTX_free(ctx);
    CU_ASSERT_TRUE(log_has("ignoring \"colour:red\"", getpid()));
    /* level 2: where the configuration came from, what is in force */
    CU_ASSERT_TRUE(log_has("config: ", getpid()));
    CU_ASSERT_TRUE(log_has("routing: default_properties in force when "
                           "keycache starts: ", getpid()));
    CU_ASSERT_TRUE(log_has("report (unload): all", getpid()));
    unlink(conf);
}

/* A failed start is logged with its reason, which OpenSSL would drop. */
static void test_failed_start_logged(void)
{
    char conf[64];
    OSSL_LIB_CTX *ctx;

    CU_ASSERT_FATAL(write_conf(conf, (const char *[]){ "cache_size", NULL },
                               "cache_size = lots", NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(ctx);
    CU_ASSERT_FALSE(OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME));
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);
    CU_ASSERT_TRUE(log_has("error: cache_size = \"lots\": want a whole "
                           "number from 0 to 4096", getpid()));
    CU_ASSERT_TRUE(log_has("error: keycache did not start", getpid()));
}

/* ---------------------------------------------------------------------- */
/* file: what PATH may be                                                 */

static char errpath[64], target[64];

/* Run a workload with stderr in errpath; returns the keycache lines. */
static int run_to_log(const char *more, int sleep_between)
{
    char conf[64], *text = NULL, *p;
    OSSL_LIB_CTX *ctx;
    int saved, fd, n = 0;
    FILE *f;

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    /* a FIFO that blocked the open would hang here: fail in seconds */
    alarm(30);
    ctx = load(conf, more, 0);
    if (ctx != NULL)
        hmac_ops(ctx, 2, 6);
    if (ctx != NULL && sleep_between) {
        sleep(2);               /* interval:1 - a report is due */
        hmac_ops(ctx, 2, 6);
    }
    OSSL_LIB_CTX_free(ctx);
    alarm(0);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    unlink(conf);
    CU_ASSERT_PTR_NOT_NULL(ctx);

    if ((f = fopen(errpath, "r")) != NULL) {
        text = calloc(1, 4096);
        if (text != NULL)
            fread(text, 1, 4095, f);
        fclose(f);
    }
    for (p = text; p != NULL && (p = strstr(p, "keycache[")) != NULL; p++)
        n++;
    if (n != 1)
        fprintf(stderr, "\n  stderr had %d keycache lines:\n%s", n,
                text != NULL ? text : "(none)");
    free(text);
    unlink(errpath);
    return n;
}

/* Does the file at path hold exactly text? */
static int file_has(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");

    if (f != NULL) {
        fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    return strcmp(buf, text) == 0;
}

/*
 * A symbolic link as PATH, as one planted in a service's log directory:
 * what it points at is left alone, and stderr says why once, though the
 * start line and three reports (every 1s, twice, and at unload) were due.
 */
static void test_file_symlink(void)
{
    static const char before[] = "not keycache's file\n";
    char debug[256];
    FILE *f;

    unlink(logpath);
    f = fopen(target, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(before, f);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(symlink(target, logpath), 0);
    snprintf(debug, sizeof(debug), "file:%s,interval:1,level:2", logpath);
    CU_ASSERT_EQUAL(run_to_log(debug, 1), 1);
    CU_ASSERT_TRUE(file_has(target, before));

    /* a dangling link: nothing is created where it points */
    unlink(target);
    CU_ASSERT_EQUAL(run_to_log(debug, 0), 1);
    CU_ASSERT_NOT_EQUAL(access(target, F_OK), 0);
    unlink(logpath);
}

/* A FIFO (read or not) and a directory are refused, once, without a hang. */
static void test_file_not_regular(void)
{
    char debug[256], buf[64];
    int rd;

    snprintf(debug, sizeof(debug), "file:%s", logpath);
    unlink(logpath);
    CU_ASSERT_EQUAL_FATAL(mkfifo(logpath, 0600), 0);
    CU_ASSERT_EQUAL(run_to_log(debug, 0), 1);       /* no reader */
    rd = open(logpath, O_RDONLY | O_NONBLOCK);
    CU_ASSERT_FATAL(rd >= 0);
    CU_ASSERT_EQUAL(run_to_log(debug, 0), 1);       /* a reader waiting */
    CU_ASSERT_EQUAL(read(rd, buf, sizeof(buf)), 0); /* nothing came */
    close(rd);
    unlink(logpath);

    CU_ASSERT_EQUAL_FATAL(mkdir(logpath, 0700), 0);
    CU_ASSERT_EQUAL(run_to_log(debug, 0), 1);
    CU_ASSERT_EQUAL(rmdir(logpath), 0);             /* and it is empty */
}

/* A new file is the owner's alone, whatever the umask lets through. */
static void test_file_mode(void)
{
    char conf[64];
    struct stat st;
    OSSL_LIB_CTX *ctx;
    mode_t old = umask(0);

    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    ctx = load(conf, debug_to_log(NULL), 0);
    umask(old);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    hmac_ops(ctx, 1, 7);
    OSSL_LIB_CTX_free(ctx);
    unlink(conf);
    CU_ASSERT_EQUAL_FATAL(lstat(logpath, &st), 0);
    CU_ASSERT_TRUE(S_ISREG(st.st_mode));
    CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
    CU_ASSERT_TRUE(log_has("report (unload): HMAC", getpid()));
}

/*
 * Routing: at exit a query-less fetch shows who answers (in a forked
 * child, whose exit runs the check), and the warning names the
 * default_properties the library has in force.
 */
static void check_exit_routing(const char *conf, const char *debug,
                               const char *want, const char *unwanted)
{
    OSSL_LIB_CTX *ctx = load(conf, debug_to_log(debug), 1);
    pid_t child;
    int status = -1;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_TRUE(OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME));
    fflush(NULL);
    if ((child = fork()) == 0) {
        alarm(KCT_CHILD_ALARM);
        exit(0);
    }
    CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
    OSSL_LIB_CTX_free(ctx);
    CU_ASSERT_TRUE(log_has(want, child));
    if (unwanted != NULL) {
        char *log = read_log();

        CU_ASSERT_PTR_NULL(log != NULL ? strstr(log, unwanted) : "no log");
        free(log);
    }
}

static void test_routing_warnings(void)
{
    static const char *const no_props[] = { "alg_section",
                                            "default_properties", NULL };
    char conf[64];

    CU_ASSERT_FATAL(write_conf(conf, no_props, NULL, NULL));
    check_exit_routing(conf, NULL, "warning: a query-less HMAC fetch "
                       "reaches default, not keycache", NULL);
    CU_ASSERT_TRUE(log_has("default_properties in force are \"\", and "
                           "need ?provider=keycache", 0));
    CU_ASSERT_TRUE(log_has("warning: a query-less AES-256-GCM fetch "
                           "reaches default, not keycache", 0));
    unlink(conf);

    /* properties that name another provider */
    CU_ASSERT_FATAL(write_conf(conf, (const char *[]){ "default_prop", NULL },
                               NULL, "default_properties = "
                                     "?provider=default"));
    check_exit_routing(conf, NULL, "reaches default, not keycache", NULL);
    CU_ASSERT_TRUE(log_has("default_properties in force are "
                           "\"?provider=default\"", 0));
    unlink(conf);

    /* the right config: no warning, and level 2 says the check passed */
    CU_ASSERT_FATAL(write_conf(conf, NULL, NULL, NULL));
    check_exit_routing(conf, "level:2", "routing: a query-less HMAC fetch "
                       "reaches keycache", "warning");
    unlink(conf);
}

/* ---------------------------------------------------------------------- */
/* Configuration errors                                                   */

static const char *const our_keys[] = {
    "cache_size", "hmac", "aes_gcm", "idle_ttl", "admit_after", NULL
};

/*
 * The section not activated, then loaded by hand: OSSL_PROVIDER_load()
 * fails and leaves keycache's errors on the queue.  Each must carry a
 * registered reason string, keycache as the function, a file name without
 * a directory, and text naming the key and what it accepts.
 */
/* bytes check_error() appends to the file as they are (a NUL among them) */
static const char *self;      /* this program, for --child */
static const char *raw_tail;
static size_t raw_tail_len;

static void check_error_dropping(const char *also, const char *add,
                                 const char *tail, int as_default,
                                 const char *const *words)
{
    const char *drop[9] = { "activate", NULL };
    const char *const *w;
    const char *file, *func, *data;
    char conf[64];
    unsigned long e;
    int line, flags, ours = 0, named = 0;
    size_t i;
    OSSL_LIB_CTX *ctx;

    /* the keys set replace the file's own lines for them */
    for (w = our_keys, i = 1; *w != NULL; w++)
        if (strstr(add, *w) != NULL)
            drop[i++] = *w;
    if (also != NULL)
        drop[i++] = also;
    drop[i] = NULL;
    CU_ASSERT_FATAL(write_conf(conf, drop, add, tail));
    if (raw_tail != NULL) {
        FILE *f = fopen(conf, "ab");

        CU_ASSERT_FATAL(f != NULL);
        CU_ASSERT(fwrite(raw_tail, 1, raw_tail_len, f) == raw_tail_len);
        CU_ASSERT_FATAL(fclose(f) == 0);
    }
    ctx = load(conf, NULL, as_default);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    ERR_clear_error();
    /* keycache reads the file OPENSSL_CONF names when it starts */
    if (as_default)
        setenv("OPENSSL_CONF", conf, 1);
    CU_ASSERT_PTR_NULL(OSSL_PROVIDER_load(ctx, KEYCACHE_PROVIDER_NAME));
    setenv("OPENSSL_CONF", "/dev/null", 1);
    unlink(conf);
    while ((e = ERR_get_error_all(&file, &line, &func, &data, &flags)) != 0) {
        if (func == NULL || strcmp(func, "keycache") != 0)
            continue;
        ours++;
        CU_ASSERT_EQUAL(ERR_GET_LIB(e), ERR_LIB_PROV);
        CU_ASSERT_EQUAL(ERR_GET_REASON(e), PROV_R_INVALID_CONFIG_DATA);
        CU_ASSERT_PTR_NOT_NULL(ERR_reason_error_string(e));
        CU_ASSERT_PTR_NULL(strchr(file, '/'));
        if ((flags & ERR_TXT_STRING) == 0)
            continue;
        for (w = words; *w != NULL && strstr(data, *w) != NULL; w++)
            continue;
        if (*w == NULL)
            named = 1;
        else
            fprintf(stderr, "\n  \"%s\" lacks \"%s\"", data, *w);
    }
    CU_ASSERT_TRUE(ours > 0);
    CU_ASSERT_TRUE(named);
    OSSL_LIB_CTX_free(ctx);
}

/* ... with only the file's own lines for the keys |add| sets dropped */
static void check_error(const char *add, const char *tail, int as_default,
                        const char *const *words)
{
    check_error_dropping(NULL, add, tail, as_default, words);
}

static void test_invalid_value_errors(void)
{
    check_error("cache_size = 99999", NULL, 0, (const char *[]){
                "cache_size = \"99999\"", "0 to 4096", NULL });
    check_error("cache_size = lots", NULL, 0, (const char *[]){
                "cache_size = \"lots\"", "0 to 4096", NULL });
    check_error("hmac = maybe", NULL, 0, (const char *[]){
                "hmac = \"maybe\"", "on or off", "yes/no", NULL });
    check_error("aes_gcm = yes please", NULL, 0, (const char *[]){
                "aes_gcm = \"yes please\"", "auto", "on or off", NULL });
    check_error("idle_ttl = -5", NULL, 0, (const char *[]){
                "idle_ttl = \"-5\"", "seconds", "4294967295", NULL });
    check_error("admit_after = 0", NULL, 0, (const char *[]){
                "admit_after = \"0\"", "1 to 16", NULL });
    check_error("quirk_table = sometimes", NULL, 0, (const char *[]){
                "quirk_table = \"sometimes\"", "on or off", NULL });
}

static void test_unknown_key_errors(void)
{
    static const char *const known[] = {
        "unknown key \"cache_sise\"", "cache_size, hmac, aes_gcm, idle_ttl, "
        "admit_after", NULL
    };

    check_error("cache_sise = 10", NULL, 1, known);
    /* a key naming a section stands for that section's keys */
    check_error("tuning = kc_tuning_sect", "[kc_tuning_sect]\nwindow = 8", 1,
                (const char *[]){ "unknown key \"tuning.window\"", NULL });
    /* the core's own keys are its own at the top of the section only */
    check_error("tuning = kc_tuning_sect", "[kc_tuning_sect]\nmodule = x", 1,
                (const char *[]){ "unknown key \"tuning.module\"", NULL });
    /* both problems of one section are named */
    check_error("cache_sise = 10\nhmac = maybe", NULL, 1,
                (const char *[]){ "hmac = \"maybe\"", NULL });
    check_error("cache_sise = 10\nhmac = maybe", NULL, 1, known);
    /* a name too long to ask the core about is unknown too */
    check_error("cache_size_meant_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 4096",
                NULL, 1, (const char *[]){ "unknown key \"cache_size_meant_x",
                "a name too long", NULL });
    /* the names the core answers itself, which the section would replace */
    check_error("module-filename = /x", NULL, 1, (const char *[]){
                "unknown key \"module-filename\"", "the core's own answer",
                NULL });
}

/*
 * openssl-version in keycache's section replaces the core's answer, which
 * the loader reads before the section's keys are checked: it must not load
 * another OpenSSL's build (and that build's libcrypto) on that word.
 */
static void test_version_key_refused(void)
{
    const char *drop[] = { "activate", NULL }, *data;
    char conf[64];
    unsigned long e;
    int flags, said = 0;
    OSSL_LIB_CTX *ctx;

    CU_ASSERT_FATAL(write_conf(conf, drop, "openssl-version = 9.9.9", NULL));
    ctx = load(conf, NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    unlink(conf);
    ERR_clear_error();
    CU_ASSERT_PTR_NULL(OSSL_PROVIDER_load(ctx, KEYCACHE_PROVIDER_NAME));
    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0)
        said |= (flags & ERR_TXT_STRING) != 0
                && strstr(data, "loaded by OpenSSL 9.9.9") != NULL
                && strstr(data, "is not the libcrypto.so.") != NULL;
    CU_ASSERT_TRUE(said);
    OSSL_LIB_CTX_free(ctx);
}

/*
 * keycache asks the core only about the sections its providers lines name,
 * read as the core reads them, and about every section where an identity
 * may give it a name no line has.  Its line here is kcx (with an
 * identity, |dotted| 0) or x.keycache (the core skips to the first dot),
 * and a decoy section's key named keycache must not be taken for it.
 */
static void unknown_key_behind(int dotted)
{
    check_error_dropping(KEYCACHE_PROVIDER_NAME " = ",
                         dotted ? "cache_sise = 10"
                                : "identity = " KEYCACHE_PROVIDER_NAME
                                  "\ncache_sise = 10",
                         dotted
                         ? "[provider_sect]\nx." KEYCACHE_PROVIDER_NAME
                           " = keycache_sect\n[kc_decoy_sect]\n"
                           KEYCACHE_PROVIDER_NAME " = kc_decoy_sub\n"
                           "[kc_decoy_sub]\nwindow = 1"
                         : "[provider_sect]\nkcx = keycache_sect\n"
                           "[kc_decoy_sect]\n" KEYCACHE_PROVIDER_NAME
                           " = kc_decoy_sub\n[kc_decoy_sub]\nwindow = 1",
                         1, (const char *[]){
                             "unknown key \"cache_sise\"", NULL });
}

static void test_unknown_keys_identity(void)
{
    unknown_key_behind(0);
    unknown_key_behind(1);
}

/* Another section's keys, even ones like keycache's, stop nothing. */
static void test_unknown_keys_elsewhere(void)
{
    const char *drop[2] = { "activate", NULL };
    char conf[64];
    OSSL_LIB_CTX *ctx;
    OSSL_PROVIDER *prov;

    CU_ASSERT_FATAL(write_conf(conf, drop, "cache_size = 10",
                               "[kc_other_sect]\ncache_sise = 10\n"
                               "hmac = maybe\ntuning = kc_more_sect\n"
                               "[kc_more_sect]\nwindow = 8"));
    ctx = load(conf, NULL, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    setenv("OPENSSL_CONF", conf, 1);
    prov = OSSL_PROVIDER_load(ctx, KEYCACHE_PROVIDER_NAME);
    setenv("OPENSSL_CONF", "/dev/null", 1);
    unlink(conf);
    CU_ASSERT_PTR_NOT_NULL(prov);
    if (prov == NULL)
        ERR_print_errors_fp(stderr);
    OSSL_PROVIDER_unload(prov);
    OSSL_LIB_CTX_free(ctx);
    ERR_clear_error();
}

/*
 * keycache reads the file by hand for key names, and leaves what that scan
 * cannot follow to NCONF: each case below is missed without the fallback.
 */
static void test_unknown_keys_read_as_openssl_does(void)
{
    static const char *const nested[] = {
        "unknown key \"tuning.window\"", NULL
    };
    char inc[] = "/tmp/kc-inc-XXXXXX", tail[96];
    FILE *f;
    int fd;

    /* CRLF, comments after values, $-values, spaced section headers */
    check_error("cache_sise = 10   # sic\r", "[ ca_like ]\r\n"
                "dir = ./demoCA\r\ncerts = $dir/certs # where\r", 1,
                (const char *[]){ "unknown key \"cache_sise\"", NULL });
    /* a value continued on the next line names the section */
    check_error("tuning = kc_tuning_sect \\\n    # continued",
                "[kc_tuning_sect]\nwindow = 8", 1, nested);
    /* the section is in an included file */
    CU_ASSERT_FATAL((fd = mkstemp(inc)) >= 0);
    CU_ASSERT_FATAL((f = fdopen(fd, "w")) != NULL);
    fputs("[kc_inc_sect]\nwindow = 8\n", f);
    CU_ASSERT_FATAL(fclose(f) == 0);
    snprintf(tail, sizeof(tail), ".include %s", inc);
    check_error("tuning = kc_inc_sect", tail, 1, nested);
    unlink(inc);
    /* a plain value (cut in place): its comment and the tab before it */
    check_error("tuning = kc_tuning_sect\t# plain", "[kc_tuning_sect]\n"
                "window = 8", 1, nested);
    /* a quoted value, a variable alone, as NCONF reads them */
    check_error("tuning = \"kc_tuning_sect\" # quoted",
                "[kc_tuning_sect]\nwindow = 8", 1, nested);
    check_error("kcsub = kc_tuning_sect\ntuning = ${kcsub}",
                "[kc_tuning_sect]\nwindow = 8", 1, nested);
    /* a key starting with '.' (only .pragma and .include are directives) */
    check_error(".cache_sise = 1", NULL, 1,
                (const char *[]){ "unknown key \".cache_sise\"", NULL });
    /* many sections (looked up by hash): the last one nested */
    {
        char *many = malloc(400 * 24);
        size_t used = 0;
        int k;

        CU_ASSERT_PTR_NOT_NULL_FATAL(many);
        for (k = 0; k < 400; k++)
            used += (size_t)snprintf(many + used, 400 * 24 - used,
                                     "[kc_m%d]\nw%d = 1\n", k, k);
        check_error("tuning = kc_m399", many, 1, (const char *[]){
                    "unknown key \"tuning.w399\"", NULL });
        free(many);
    }
    /* NCONF reads on past a NUL byte (taking the next line into it) */
    raw_tail = "# a\0b\n\n[kc_tuning_sect]\nwindow = 8\n";
    raw_tail_len = 35;
    check_error("tuning = kc_tuning_sect", NULL, 1, nested);
    raw_tail = NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the lines of |s| in order, in place */
static void sort_lines(char *s)
{
    char *line[128], copy[4096], *p;
    size_t n = 0, i, used = 0;

    snprintf(copy, sizeof(copy), "%s", s);
    for (p = strtok(copy, "\n"); p != NULL && n < 128; p = strtok(NULL, "\n"))
        line[n++] = p;
    qsort(line, n, sizeof(line[0]), cmp_str);
    s[0] = '\0';
    for (i = 0; i < n; i++)
        used += (size_t)snprintf(s + used, 4096 - used, "%s\n", line[i]);
}

/* keycache's unknown keys when it starts from file |conf|, in order */
static void start_errors(const char *conf, const char *debug, char *out,
                         size_t len)
{
    const char *file, *func, *data;
    int line, flags;
    size_t used = 0;
    OSSL_LIB_CTX *ctx = load(conf, NULL, 1);

    out[0] = '\0';
    if (ctx == NULL) {
        FILE *f = fopen(conf, "r");
        char l[256];

        while (f != NULL && fgets(l, sizeof(l), f) != NULL)
            fputs(l, stderr);
        if (f != NULL)
            fclose(f);
        ERR_print_errors_fp(stderr);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    ERR_clear_error();
    setenv("OPENSSL_CONF", conf, 1);
    if (debug != NULL)
        setenv("KEYCACHE_DEBUG", debug, 1);
    OSSL_PROVIDER_unload(OSSL_PROVIDER_load(ctx, KEYCACHE_PROVIDER_NAME));
    unsetenv("KEYCACHE_DEBUG");
    setenv("OPENSSL_CONF", "/dev/null", 1);
    while (ERR_get_error_all(&file, &line, &func, &data, &flags) != 0)
        if (func != NULL && strcmp(func, "keycache") == 0
            && (flags & ERR_TXT_STRING) != 0 && used < len
            && (data = strstr(data, "unknown key")) != NULL)
            used += (size_t)snprintf(out + used, len - used, "%.*s\n",
                                     (int)strcspn(data, ";"), data);
    OSSL_LIB_CTX_free(ctx);
    sort_lines(out);
}

/*
 * The hand scan of the config file against NCONF (which KEYCACHE_DEBUG
 * makes keycache use): random sections of keys whose values are plain,
 * quoted, escaped, commented, variables or section names, nested; both
 * must report the same unknown keys.
 */
static void test_unknown_keys_scan_as_nconf(void)
{
    static const char *const vals[] = {
        "kc_s%d", "\"kc_s%d\"", "'kc_s%d' # c", "kc_s%d   # c", "k\\c_s%d",
        "${kc_v%d}", "$kc_v%d", "plain%d", "\"a # %d\"", "$kc_v%d/x",
        "kc_s%d\t", "\"kc_s%d\" \"\"", "kc_s%d\\ # c", "kc_s%d\r# c",
        "${kc_v%d}_x", "'$kc_v%d'"
    };
    char conf[64], add[1024], tail[2048], fast[4096], slow[4096], v[64];
    size_t a, t;
    uint32_t r = 0x6b637363;
    int i, j, n, nsame = 0;

    for (i = 0; i < 60; i++) {
        a = t = 0;
        /* variables first, as NCONF expands them where it reads them */
        for (j = 0; j < 4; j++)
            a += (size_t)snprintf(add + a, sizeof(add) - a,
                                  "kc_v%d = kc_s%d\n", j, (int)((r >> j) & 3));
        n = 1 + (int)((r = r * 1103515245 + 12345) >> 28) % 5;
        for (j = 0; j < n; j++) {
            r = r * 1103515245 + 12345;
            snprintf(v, sizeof(v), vals[(r >> 16) % 16], (int)((r >> 8) & 3));
            a += (size_t)snprintf(add + a, sizeof(add) - a, "%sk%d = %s%s\n",
                                  (r & 1) ? "\t" : "", j, v,
                                  (r & 2) ? "\r" : "");
        }
        for (j = 0; j < 4; j++) {
            r = r * 1103515245 + 12345;
            t += (size_t)snprintf(tail + t, sizeof(tail) - t,
                                  "[%skc_s%d ]\nw%d = 1\n[kc_s%d_x]\nx%d = 1\n",
                                  (r & 1) ? " " : "", j, j, j, j);
            /* nested once more, never back (OpenSSL refuses a loop) */
            if ((r & 2) != 0 && j < 3)
                t += (size_t)snprintf(tail + t, sizeof(tail) - t,
                                      "sub = kc_s%d\n", j + 1);
        }
        CU_ASSERT_FATAL(write_conf(conf, (const char *[]){ "activate", NULL },
                                   add, tail));
        start_errors(conf, NULL, fast, sizeof(fast));
        start_errors(conf, debug_to_log(NULL), slow, sizeof(slow));
        unlink(conf);
        if (strcmp(fast, slow) != 0)
            fprintf(stderr, "\n  config:\n%s%s\n  scan:\n%s  NCONF:\n%s",
                    add, tail, fast, slow);
        CU_ASSERT_STRING_EQUAL(fast, slow);
        nsame += fast[0] != '\0';
    }
    /* the configs do have unknown keys */
    CU_ASSERT_TRUE(nsame > 30);
}

/* Names elsewhere in the file, and OpenSSL's own keys, are no error. */
static void test_no_false_alarms(void)
{
    char conf[64];
    OSSL_LIB_CTX *ctx;

    CU_ASSERT_FATAL(write_conf(conf, NULL, "soft_load = 1",
                               "[unrelated_sect]\ncache_sise = 1\n"
                               "hmacc = on"));
    ctx = load(conf, NULL, 1);
    unlink(conf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_TRUE(OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME));
    OSSL_LIB_CTX_free(ctx);

    /*
     * Documented limit: a file other than the one OPENSSL_CONF names is
     * not read, so its unknown keys go unnoticed.
     */
    CU_ASSERT_FATAL(write_conf(conf, NULL, "cache_sise = 10", NULL));
    ctx = load(conf, NULL, 0);
    unlink(conf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_TRUE(OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME));
    OSSL_LIB_CTX_free(ctx);
}

/* Booleans: the documented spellings, in any case, and nothing else. */
static void test_boolean_spellings(void)
{
    static const char *const on[] = { "on", "yes", "true", "1", "ON", "True",
                                      NULL };
    static const char *const off[] = { "off", "no", "false", "0", "OFF",
                                       "No", NULL };
    static const char *const bad[] = { "enabled", "y", "2", "onn", "", NULL };
    static const char *const hmac_line[] = { "hmac", NULL };
    char conf[64], line[64];
    OSSL_LIB_CTX *ctx;
    EVP_MAC *mac;
    size_t i;
    int pass;

    for (pass = 0; pass < 2; pass++) {
        const char *const *list = pass == 0 ? on : off;

        for (i = 0; list[i] != NULL; i++) {
            snprintf(line, sizeof(line), "hmac = %s", list[i]);
            CU_ASSERT_FATAL(write_conf(conf, hmac_line, line, NULL));
            ctx = load(conf, NULL, 0);
            unlink(conf);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
            CU_ASSERT_TRUE(OSSL_PROVIDER_available(ctx,
                                                   KEYCACHE_PROVIDER_NAME));
            /* on: keycache serves HMAC; off: default does */
            mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
            CU_ASSERT_PTR_NOT_NULL(mac);
            CU_ASSERT_STRING_EQUAL(
                kct_provider_name(mac != NULL ? EVP_MAC_get0_provider(mac)
                                              : NULL),
                pass == 0 ? KEYCACHE_PROVIDER_NAME : "default");
            EVP_MAC_free(mac);
            OSSL_LIB_CTX_free(ctx);
        }
    }
    for (i = 0; bad[i] != NULL; i++) {
        snprintf(line, sizeof(line), "hmac = %s", bad[i]);
        check_error(line, NULL, 0, (const char *[]){ "on or off", NULL });
    }
}

/*
 * KEYCACHE_DEBUG, keycache started in a library context of the program's:
 * the exit report's routing check fetches, and the fetch loads the config
 * into the default context, which starts keycache again in this thread.
 * The process exits (a hang is ended by the child's alarm).
 */
static void test_exit_report_starts_another(void)
{
    char *out = NULL;

    CU_ASSERT_TRUE(kct_child_output(self, kct_conf_path(), "debug-exit",
                                    &out));
    CU_ASSERT_PTR_NOT_NULL(out != NULL ? strstr(out, "loaded") : NULL);
    free(out);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("KEYCACHE_DEBUG", NULL, NULL);

    CU_add_test(s, "report per algorithm at unload", test_report_at_unload);
    CU_add_test(s, "forked child reports itself", test_report_after_fork);
    CU_add_test(s, "exit report after its library context was freed",
                test_exit_after_context_freed);
    CU_add_test(s, "the report names each family's quirks as the default "
                "has them", test_report_quirks);
    CU_add_test(s, "quirks learned at a first use under properties no "
                "provider meets", test_quirks_learned_under_nope);
    CU_add_test(s, "AES-SIV's quirks known for this version are the ones "
                "learned of the default", test_siv_quirk_table);
    CU_add_test(s, "a cipher key not admitted yet counts as a pass-through",
                test_cold_keys_counted);
    CU_add_test(s, "the report says when there is little to gain",
                test_report_little_to_gain);
    CU_add_test(s, "threads that key once", test_report_threads_once);
    CU_add_test(s, "a thread stopped and cached again counts once",
                test_report_threads_counted_once);
    CU_add_test(s, "report every interval", test_report_every_interval);
    CU_add_test(s, "interval with two threads", test_interval_threads);
    CU_add_test(s, "levels and unknown words", test_levels_and_words);
    CU_add_test(s, "failed start logged", test_failed_start_logged);
    CU_add_test(s, "file: a symbolic link is not followed",
                test_file_symlink);
    CU_add_test(s, "file: a FIFO or a directory is refused",
                test_file_not_regular);
    CU_add_test(s, "file: created 0600", test_file_mode);
    CU_add_test(s, "routing warnings", test_routing_warnings);
    CU_add_test(s, "the exit report starts keycache elsewhere",
                test_exit_report_starts_another);
    s = CU_add_suite("config errors", NULL, NULL);
    CU_add_test(s, "invalid values say why", test_invalid_value_errors);
    CU_add_test(s, "unknown keys say why", test_unknown_key_errors);
    CU_add_test(s, "openssl-version in the section: no other build loaded",
                test_version_key_refused);
    CU_add_test(s, "another section's keys are not keycache's",
                test_unknown_keys_elsewhere);
    CU_add_test(s, "an identity or a dotted providers line: found",
                test_unknown_keys_identity);
    CU_add_test(s, "unknown keys: the file read as OpenSSL reads it",
                test_unknown_keys_read_as_openssl_does);
    CU_add_test(s, "unknown keys: the scan finds what NCONF finds",
                test_unknown_keys_scan_as_nconf);
    CU_add_test(s, "no false alarms", test_no_false_alarms);
    CU_add_test(s, "boolean spellings", test_boolean_spellings);
}

int main(int argc, char **argv)
{
    int rc;

    self = argv[0];
    /* --child debug-exit: test_exit_report_starts_another()'s process */
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();

        if (strcmp(argv[2], "debug-exit") != 0 || ctx == NULL)
            return 2;
        setenv("KEYCACHE_DEBUG", "1", 1);
        if (!OSSL_LIB_CTX_load_config(ctx, getenv("OPENSSL_CONF"))
            || !OSSL_PROVIDER_available(ctx, KEYCACHE_PROVIDER_NAME))
            return 3;
        puts("loaded");
        return 0;               /* ctx left to the exit handlers */
    }
    /* the shared contexts kct_main() makes must not log */
    unsetenv("KEYCACHE_DEBUG");
    snprintf(logpath, sizeof(logpath), "/tmp/kc-diag-%ld.log",
             (long)getpid());
    snprintf(errpath, sizeof(errpath), "/tmp/kc-diag-%ld.err",
             (long)getpid());
    snprintf(target, sizeof(target), "/tmp/kc-diag-%ld.target",
             (long)getpid());
    rc = kct_main(argc, argv, add_suites);
    unlink(logpath);
    unlink(errpath);
    unlink(target);
    return rc;
}
