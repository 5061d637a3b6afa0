/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - what it does before it may call libcrypto (early.c).
 *
 * Linked into the module and into the loader (loader.c), which
 * links no libcrypto at all: only the core's functions and libc are used
 * here, and OpenSSL's headers only for types and macros.
 */
#ifndef KC_EARLY_H
#define KC_EARLY_H

#include <stddef.h>
#include <openssl/core.h>

/* a source file's base name, for errors: no build paths in messages */
#ifdef __FILE_NAME__
# define KC_FILE_NAME __FILE_NAME__
#else
# define KC_FILE_NAME "keycache"
#endif

/* the KEYCACHE_DEBUG variable, see debug.c */
#define KC_DEBUG_ENV "KEYCACHE_DEBUG"

/* Where KEYCACHE_DEBUG's lines go, and the prefix they carry. */
typedef struct {
    char *path;                  /* NULL: stderr */
    long pid;
    unsigned int serial;         /* which instance in this process */
    int file_failed;             /* path refused once: no more lines */
    int quiet;                   /* a refused path is not reported */
} KC_LOGTO;

/* "2025-01-31T12:00:00Z keycache[1234]: " into buf; its length */
size_t kc_log_prefix(const KC_LOGTO *to, char *buf, size_t len);
/* one write of text, so that lines of several processes do not mix */
void kc_log_emit(KC_LOGTO *to, const char *text, size_t len);

/*
 * One line, if KEYCACHE_DEBUG asks for level or more, read without
 * allocating (its file: and level only): for what happens before the
 * module's own debug state exists, or in the loader.  A path that cannot
 * be written is reported for level 1 only: a level 2 line comes before a
 * start, and the starting module reports it.
 */
void kc_early_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The core's OpenSSL version ("3.6.5"), or NULL if it does not say. */
const char *kc_early_core_version(const OSSL_CORE_HANDLE *handle,
                                  const OSSL_DISPATCH *in);
/* The major version of such a string. */
int kc_early_major(const char *version);

/*
 * Raise "keycache: <text>" on the core's error queue (init failed), with
 * the core's new_error / set_error_debug / vset_error where it offers them.
 */
void kc_early_raise(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                    const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
