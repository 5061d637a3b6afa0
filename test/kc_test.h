/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers for keycache's CUnit tests.
 *
 * Every test compares keycache against the default provider in the same
 * process: kct_default() is a library context with only `default` loaded,
 * kct_keycache() one configured from the build tree's openssl.cnf (default +
 * keycache, default_properties = ?provider=keycache).  kct_use() makes either
 * one the calling thread's default context, so "unchanged" code that passes a
 * NULL library context (EVP_Q_mac(NULL, ...), EVP_aes_256_gcm()) runs against
 * it.
 */
#ifndef KC_TEST_H
#define KC_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <CUnit/CUnit.h>
#include <openssl/crypto.h>
#include <openssl/provider.h>

OSSL_LIB_CTX *kct_default(void);
OSSL_LIB_CTX *kct_keycache(void);
/* The keycache provider object inside kct_keycache(). */
OSSL_PROVIDER *kct_keycache_provider(void);
/* keycache's provider object in |ctx|, or NULL */
OSSL_PROVIDER *kct_keycache_provider_in(OSSL_LIB_CTX *ctx);

/* Make ctx the calling thread's default library context (NULL = global). */
void kct_use(OSSL_LIB_CTX *ctx);

/* A keycache counter (KEYCACHE_PARAM_*) summed over all threads. */
uint64_t kct_counter(const char *name);
/* The same for the keycache provider inside another library context;
 * UINT64_MAX if keycache is not loaded there. */
uint64_t kct_counter_in(OSSL_LIB_CTX *ctx, const char *name);

/* Name of the provider that implements a fetched algorithm object. */
const char *kct_provider_name(const OSSL_PROVIDER *prov);

/*
 * Who serves a query-less fetch of the cipher |name| in |ctx|: the name of
 * its provider, "(none)", or "keycache pass-through" for one keycache
 * offers as the default's own functions, unwrapped and never cached (every
 * default cipher it does not wrap, from OpenSSL 3.5: passthrough.c).
 */
const char *kct_cipher_served(OSSL_LIB_CTX *ctx, const char *name);

/*
 * A new library context loaded from a copy of the test config whose
 * [keycache_sect] is changed by |lines|: "key = value" lines replace that
 * key's line (or are added), "-key" lines drop it so that keycache's own
 * default applies.  E.g. "-admit_after\n" for the deployed admission.
 */
OSSL_LIB_CTX *kct_keycache_conf(const char *lines);

/*
 * The same copy written to a new temporary file, whose name goes to |path|
 * (KCT_PATH_LEN bytes); the caller loads and unlinks it.  1 on success.
 */
#define KCT_PATH_LEN 64
int kct_write_conf(char *path, const char *lines);

/*
 * Another provider of the application's, built into a test: |name|,
 * offering |algs| for operation |op| (one such provider at a time), loaded
 * into two new library contexts before anything fetches there (OpenSSL 3.0
 * does not see algorithms loaded after a fetch of their operation): ref
 * beside the default provider, kc beside keycache from the test config.
 * 1 on success; kct_other_stop() unloads and frees what it made.
 */
typedef struct {
    OSSL_LIB_CTX *ref, *kc;
    OSSL_PROVIDER *ref_prov, *kc_prov, *ref_default;
} KCT_OTHER;
int kct_other_start(KCT_OTHER *o, const char *name, int op,
                    const OSSL_ALGORITHM *algs);
/* the same, keycache's [keycache_sect] changed by |lines| (kct_keycache_conf) */
int kct_other_start_conf(KCT_OTHER *o, const char *name, int op,
                         const OSSL_ALGORITHM *algs, const char *lines);
void kct_other_stop(KCT_OTHER *o);

/*
 * "kctestmd": SHA2-256 under the default's names from a provider of the
 * test's (kct_other_start()'s algs for OSSL_OP_DIGEST), delegating to the
 * default's SHA-256 between kct_testmd_begin() and _end(), and counting
 * its updates, so that a record shows whose SHA-256 an HMAC ran on.
 */
extern const OSSL_ALGORITHM kct_testmd_algs[];
extern int kct_testmd_updates;
int kct_testmd_begin(void);
void kct_testmd_end(void);

/*
 * The general form: the test config copied to a new temporary file through
 * |edit|, which is called with each line of it, then once with NULL, and
 * writes to |out| what the copy should have instead.
 */
int kct_copy_conf(char *path, void (*edit)(FILE *out, const char *line,
                                           void *arg),
                  void *arg);

/* Path of the build tree's openssl.cnf and of the shared vectors folder. */
const char *kct_conf_path(void);
const char *kct_vectors_dir(void);

/*
 * The text of file name in folder dir (kct_vectors_dir(), say),
 * NUL-terminated, to free(); NULL, said on stderr, if it cannot be read.
 */
char *kct_file_text(const char *dir, const char *name);

/* Hex helpers for vector files; return allocated buffer, *len set. */
unsigned char *kct_unhex(const char *hex, size_t *len);

/*
 * Take the oldest error off the calling thread's queue and describe it in
 * buf: library and reason, the function, file and line that raised it and
 * its data (ERR_get_error_all).  Differential tests compare these strings,
 * so an error raised by other code than the default's, or carrying other
 * data, shows.  Returns the error code; 0 (buf "") if the queue was empty.
 */
#define KCT_ERR_LEN 512
unsigned long kct_err_next(char *buf, size_t size);

/*
 * In such a description, replace the phrase with which a failed fetch's
 * data names its library context ("Non-default library context", ...) by
 * "<library context>".  Only for calls where keycache's answer comes from
 * a pass-through context, which fetches in keycache's private library
 * context by design (the callers say which).
 */
void kct_err_mask_libctx(char *err);

/*
 * In such a description, replace the number a failed fetch's data gives
 * its algorithm's name ("Algorithm (KECCAK-KMAC-128 : 178)") by "#": each
 * library context numbers the names it meets in its own order, so the
 * reference's and keycache's differ where the two run in two contexts.
 */
void kct_err_mask_name_id(char *err);

/*
 * Transcripts for differential pattern tests.  A pattern drives an API and
 * writes everything observable (return values, sizes, output bytes, the
 * errors each call left) into a KCT_REC; it runs once on kct_default() and
 * again on kct_keycache(), and the records must be byte-identical.
 */
typedef struct {
    char *buf;                  /* NUL-terminated text, NULL while empty */
    size_t len, cap;
    int mask_libctx;            /* kct_rec_errs: kct_err_mask_libctx() */
    int mask_name_id;           /* kct_rec_errs: kct_err_mask_name_id() */
    int rc_only;                /* for the pattern: record no output bytes */
} KCT_REC;

/* Append formatted text; aborts if out of memory. */
void kct_rec_printf(KCT_REC *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append n bytes as lower-case hex. */
void kct_rec_hex(KCT_REC *r, const unsigned char *p, size_t n);
/*
 * Move the calling thread's error queue into the record, " err=<desc>"
 * per error in full (kct_err_next), then end the line, so that each call's
 * errors are attributed to that call only.
 */
void kct_rec_errs(KCT_REC *r);
void kct_rec_free(KCT_REC *r);

/*
 * EVP_MAC steps, each recorded as "<step> rc=<n>" with its errors (a NULL
 * mac or ctx fails the step); the return value is the step's.  Final
 * records the MAC unless r->rc_only, after filling out's outsize bytes.
 */
EVP_MAC_CTX *kct_mac_new(KCT_REC *r, EVP_MAC *mac);
int kct_mac_set(KCT_REC *r, EVP_MAC_CTX *ctx, const OSSL_PARAM *params);
int kct_mac_init(KCT_REC *r, EVP_MAC_CTX *ctx, const unsigned char *key,
                 size_t keylen, const OSSL_PARAM *params);
int kct_mac_update(KCT_REC *r, EVP_MAC_CTX *ctx, const unsigned char *msg,
                   size_t len);
int kct_mac_final(KCT_REC *r, EVP_MAC_CTX *ctx, unsigned char *out,
                  size_t *outl, size_t outsize);

/*
 * A cipher context's lone "ivlen" and "keylen" queries, as OpenSSL 3.0's
 * EVP makes them before an init (keycache may answer them itself,
 * ctmpl.c), each recorded as "  get <name>=<rc> v=<value> ret_size=<n>"
 * with its errors.
 */
void kct_cipher_lens(KCT_REC *r, EVP_CIPHER_CTX *ctx);

/*
 * 1 if got equals want; otherwise 0, and the first differing line of each
 * is printed to stderr under the heading |what|.  Asserts nothing.
 */
int kct_rec_same(const char *what, const KCT_REC *want, const KCT_REC *got);

/* One pattern run: record into r, fetching from libctx. */
typedef void (*kct_rec_fn)(OSSL_LIB_CTX *libctx, KCT_REC *r);

/*
 * Run fn against libctx made the thread's default (kct_use), with the
 * error queue cleared before and after.
 */
void kct_rec_run(kct_rec_fn fn, OSSL_LIB_CTX *libctx, KCT_REC *r);
/*
 * The same on a new thread (which starts with no per-thread cache), stopped
 * with OPENSSL_thread_stop() before it ends: 1 if the thread ran.
 */
int kct_rec_run_thread(kct_rec_fn fn, OSSL_LIB_CTX *libctx, KCT_REC *r);

/*
 * The application unloads its default provider mid-use: fn run on a fresh
 * context with the default loaded, and on a new thread on a fresh context
 * given the test config edited by |edit| (which must drop its activation
 * of "default"), the default loaded after; *unload is set to the default
 * of each before fn runs (fn unloads it).  Both records in *def and *got
 * (freed by the caller).  In a forked child that leaves with _exit():
 * OpenSSL 3.0 frees a library context whose default was unloaded mid-use
 * without some of its method stores' entries (LeakSanitizer shows it with
 * the default alone).  |check| (in the child) judges the two records: 1
 * if the child ran and check said yes.
 */
int kct_unload_child(kct_rec_fn fn, OSSL_PROVIDER **unload,
                     void (*edit)(FILE *out, const char *line, void *arg),
                     int (*check)(const KCT_REC *def, const KCT_REC *got));

/*
 * The keycache side of a pattern: KCT_REC_RUNS runs of fn on kct_keycache()
 * into kc[], calling churn (if not NULL) before the second so that the
 * later runs meet a cache holding other entries.  With on_thread the runs
 * happen on a new thread, which starts with an empty per-thread cache
 * whatever earlier patterns did to this thread's.  Then each run's record
 * is asserted equal to def (one CU_ASSERT per run; a difference is shown
 * under "[name] keycache run N") and freed.
 */
#define KCT_REC_RUNS 3
void kct_rec_keycache_runs(const char *name, kct_rec_fn fn,
                           void (*churn)(void), int on_thread,
                           const KCT_REC *def);

/*
 * A whole differential pattern: fn once on kct_default() into a reference
 * record, served() asserted (fatal: keycache serves the algorithms), then
 * kct_rec_keycache_runs(); with expect_hits the keycache hit counter must
 * grow.  KC_SHOW_RECORDS=1 prints the reference record and the hits.
 */
void kct_rec_pattern(const char *name, kct_rec_fn fn, void (*churn)(void),
                     int on_thread, int (*served)(void), int expect_hits);

/*
 * Seconds a forked test child may run before SIGALRM kills it: each child
 * calls alarm(KCT_CHILD_ALARM) first, so a child that hangs (a lock held
 * at fork time) fails its test in seconds instead of blocking the parent's
 * waitpid() until ctest's timeout.
 */
#define KCT_CHILD_ALARM 30

/*
 * Program self again, as a new process: "self --child NAME" with
 * OPENSSL_CONF conf.  Its output into *out (NUL-terminated, malloc'd); 1
 * if it ran and exited 0.
 */
int kct_child_output(const char *self, const char *conf, const char *name,
                     char **out);

/* Deterministic pseudo-random bytes for tests. */
/* Does this kernel take MADV_WIPEONFORK (Linux 4.14)? */
int kct_kernel_wipes(void);
/*
 * Ranges of this process's memory the kernel wipes in a child (VmFlags
 * "wf" in /proc/self/smaps: one a thread cache of keycache's), or -1.
 */
int kct_wf_ranges(void);
void kct_fill(unsigned char *buf, size_t len, uint32_t seed);
/*
 * Run fn on a thread of its own, with a pointer to an int problem count
 * (starting at 0) as its argument, and wait for it: the count, or -1 if
 * no thread could be started.
 */
int kct_thread_problems(void *(*fn)(void *));
/*
 * A miss-heavy thread (fn, as above): no problems, and at least min
 * pass-throughs counted meanwhile (its contexts went cold).
 */
void kct_check_cold_thread(void *(*fn)(void *), uint64_t min);

/*
 * Run the given suites with CUnit's basic interface, free everything and
 * return a process exit code (0 = all passed).  Suites are registered by
 * the caller through the add function.
 */
int kct_main(int argc, char **argv, void (*add_suites)(void));

#endif
