/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - what it does before it may call libcrypto (early.c), linked
 * into the module and into the loader (loader.c), which links no libcrypto:
 * only the core's functions and libc; OpenSSL's headers for types only.
 */
#ifndef KC_EARLY_H
#define KC_EARLY_H

#include <stdarg.h>
#include <stddef.h>
#include <openssl/core.h>
#include <openssl/core_dispatch.h>

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

/* Append one prefixed line to buf (of size len, filled to *used). */
void kc_log_vline(const KC_LOGTO *to, char *buf, size_t len, size_t *used,
                  const char *fmt, va_list ap);
/* one write of text, so that lines of several processes do not mix */
void kc_log_emit(KC_LOGTO *to, const char *text, size_t len);

/*
 * One line if KEYCACHE_DEBUG asks for level, read without allocating: for
 * the loader and before the module's debug state exists.  An unwritable
 * path is reported for level 1 only (a starting module reports it).
 */
void kc_early_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* KEYCACHE_DEBUG's levels, as the loader and the module read them */
#define KC_DEBUG_MAX_LEVEL 2
/* A whole number of len bytes at s in [0, max], or -1. */
long kc_early_number(const char *s, size_t len, long max);

/* The function of |id| in the core's table |in| (the last one), or NULL. */
void (*kc_early_fn(const OSSL_DISPATCH *in, int id))(void);
#define KC_CORE_FN(in, name, ID) \
    ((OSSL_FUNC_##name##_fn *)kc_early_fn(in, OSSL_FUNC_##ID))

/* The core's OpenSSL version ("3.6.5"), or NULL if it does not say. */
const char *kc_early_core_version(const OSSL_CORE_HANDLE *handle,
                                  const OSSL_DISPATCH *in);
/* The major version of such a string. */
int kc_early_major(const char *version);

/* Raise "keycache: <text>" (init failed) with the core's error functions. */
void kc_early_raise(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                    const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The core's vset_error, with a variable argument list. */
void kc_early_set_error(const OSSL_CORE_HANDLE *handle,
                        OSSL_FUNC_core_vset_error_fn *vset_error,
                        uint32_t reason, const char *fmt, ...);

#endif
