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

/* Deterministic pseudo-random bytes for tests. */
void kct_fill(unsigned char *buf, size_t len, uint32_t seed);

/*
 * Run the given suites with CUnit's basic interface, free everything and
 * return a process exit code (0 = all passed).  Suites are registered by
 * the caller through the add function.
 */
int kct_main(int argc, char **argv, void (*add_suites)(void));

#endif
