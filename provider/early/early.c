/* SPDX-License-Identifier: Apache-2.0 */
/* keycache - before libcrypto may be called: never call it here (early.h) */
#define _GNU_SOURCE            /* secure_getenv() */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "early/early.h"

static void write_all(int fd, const char *p, size_t n)
{
    ssize_t w;

    while (n > 0) {
        w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/*
 * PATH, opened for one message.  A root service must not append to what a
 * planted symbolic link points at: the last component is never followed,
 * only a regular file is written (O_NONBLOCK: a FIFO must not hang), 0600
 * since the lines describe the use of keys.  Refused once, PATH is not
 * tried again (in a forked child too): stderr says so once, later lines
 * are dropped rather than mixed into the program's stderr.  -1: no write.
 */
static int open_log(KC_LOGTO *to)
{
    struct stat st;
    const char *why;
    char note[512];
    int fd, err;

    if (__atomic_load_n(&to->file_failed, __ATOMIC_RELAXED))
        return -1;
    fd = open(to->path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK
                        | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd >= 0) {
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            return fd;
        close(fd);
        why = "not a regular file";
    } else if ((err = errno) == ELOOP) {
        why = "a symbolic link, which keycache does not follow";
    } else if (err == ENXIO) {  /* a FIFO without a reader, a socket */
        why = "not a regular file";
    } else {
        why = strerror(err);
    }
    if (!__atomic_exchange_n(&to->file_failed, 1, __ATOMIC_RELAXED)
        && !to->quiet) {
        snprintf(note, sizeof(note), "keycache[%ld]: " KC_DEBUG_ENV
                 ": cannot write to %s: %s; its lines are dropped\n",
                 to->pid, to->path, why);
        write_all(STDERR_FILENO, note, strlen(note));
    }
    return -1;
}

void kc_log_emit(KC_LOGTO *to, const char *text, size_t len)
{
    int fd = STDERR_FILENO;

    if (to->path != NULL && (fd = open_log(to)) < 0)
        return;
    write_all(fd, text, len);
    if (fd != STDERR_FILENO)
        close(fd);
}

/* "2025-01-31T12:00:00Z keycache[1234]: " (#2 for a second instance) */
static size_t log_prefix(const KC_LOGTO *to, char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    char serial[16] = "";
    int n;

    gmtime_r(&now, &tm);
    if (to->serial > 1)
        snprintf(serial, sizeof(serial), "#%u", to->serial);
    n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ keycache[%ld%s]: ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, to->pid, serial);
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

void kc_log_vline(const KC_LOGTO *to, char *buf, size_t len, size_t *used,
                  const char *fmt, va_list ap)
{
    int n;

    if (*used + 2 >= len)
        return;
    *used += log_prefix(to, buf + *used, len - *used);
    n = vsnprintf(buf + *used, len - *used - 1, fmt, ap);
    if (n > 0)
        *used += (size_t)n < len - *used - 1 ? (size_t)n : len - *used - 2;
    buf[(*used)++] = '\n';
}

long kc_early_number(const char *s, size_t len, long max)
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

/*
 * file: and level (level:N or a bare N), read as debug.c reads them; it
 * complains of the rest.  A path too long for the buffer drops the line
 * (never the program's stderr instead).
 */
void kc_early_log(int level, const char *fmt, ...)
{
    /* not for set-uid programs: the variable could name any file */
    const char *env = secure_getenv(KC_DEBUG_ENV), *s, *val, *num;
    char path[PATH_MAX], buf[768];
    KC_LOGTO to;
    size_t len, used = 0;
    va_list ap;
    long n;
    int want = 1;

    if (env == NULL || *env == '\0')
        return;
    memset(&to, 0, sizeof(to));
    to.pid = (long)getpid();
    for (s = env; *s != '\0'; s += *s == ',') {
        len = strcspn(s, ",");
        val = memchr(s, ':', len);
        num = val == NULL ? s : val - s == 5 && strncmp(s, "level", 5) == 0
                                ? val + 1 : NULL;
        if (val != NULL && val - s == 4 && strncmp(s, "file", 4) == 0
            && s + len > val + 1) {
            if ((size_t)(s + len - val - 1) >= sizeof(path))
                return;
            memcpy(path, val + 1, (size_t)(s + len - val - 1));
            path[s + len - val - 1] = '\0';
            to.path = path;
        } else if (num != NULL
                   && (n = kc_early_number(num, (size_t)(s + len - num),
                                           KC_DEBUG_MAX_LEVEL)) >= 0) {
            want = (int)n;
        }
        s += len;
    }
    if (level > want)
        return;
    to.quiet = level > 1;
    va_start(ap, fmt);
    kc_log_vline(&to, buf, sizeof(buf), &used, fmt, ap);
    va_end(ap);
    kc_log_emit(&to, buf, used);
}

void (*kc_early_fn(const OSSL_DISPATCH *in, int id))(void)
{
    void (*fn)(void) = NULL;

    for (; in->function_id != 0; in++)
        if (in->function_id == id)
            fn = in->function;
    return fn;
}

const char *kc_early_core_version(const OSSL_CORE_HANDLE *handle,
                                  const OSSL_DISPATCH *in)
{
    OSSL_FUNC_core_get_params_fn *get = KC_CORE_FN(in, core_get_params,
                                                   CORE_GET_PARAMS);
    const char *version = NULL;
    /* spelt out: OSSL_PARAM_construct_utf8_ptr() is libcrypto's */
    OSSL_PARAM q[2] = {
        { OSSL_PROV_PARAM_CORE_VERSION, OSSL_PARAM_UTF8_PTR, &version,
          sizeof(version), OSSL_PARAM_UNMODIFIED },
        { NULL, 0, NULL, 0, 0 }
    };

    if (get == NULL || !get(handle, q))
        return NULL;
    return version;
}

int kc_early_major(const char *version)
{
    int major = 0;

    for (; *version >= '0' && *version <= '9' && major < 1000; version++)
        major = major * 10 + (*version - '0');
    return major;
}

void kc_early_set_error(const OSSL_CORE_HANDLE *handle,
                        OSSL_FUNC_core_vset_error_fn *vset_error,
                        uint32_t reason, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vset_error(handle, reason, fmt, ap);
    va_end(ap);
}

void kc_early_raise(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                    const char *file, int line, const char *fmt, ...)
{
    OSSL_FUNC_core_new_error_fn *new_error =
        KC_CORE_FN(in, core_new_error, CORE_NEW_ERROR);
    OSSL_FUNC_core_set_error_debug_fn *set_debug =
        KC_CORE_FN(in, core_set_error_debug, CORE_SET_ERROR_DEBUG);
    OSSL_FUNC_core_vset_error_fn *vset_error =
        KC_CORE_FN(in, core_vset_error, CORE_VSET_ERROR);
    char text[640];
    va_list ap;

    if (new_error == NULL || vset_error == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    new_error(handle);
    if (set_debug != NULL)
        set_debug(handle, file, line, "keycache");
    /* a provider's own reasons are registered only once its init succeeded */
    kc_early_set_error(handle, vset_error,
                       ERR_PACK(ERR_LIB_PROV, 0, ERR_R_INIT_FAIL),
                       "keycache: %s", text);
}
