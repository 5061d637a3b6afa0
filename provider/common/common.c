/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers every layer uses: names, the default's contexts tried once,
 * the error queue's newest entry, run-once work.
 */
#define _GNU_SOURCE            /* gettid() */
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>

#include "common/common.h"

int kc_names_start_with(const char *names, const char *first)
{
    size_t n = strlen(first);

    return strncmp(names, first, n) == 0
           && (names[n] == '\0' || names[n] == ':');
}

int kc_name_in_list(const char *const *list, const char *name)
{
    for (; list != NULL && *list != NULL; list++)
        if (kc_name_is(*list, name))
            return 1;
    return 0;
}

void *kc_cipher_new_init(void *provctx, const KC_CIPHER_FNS *m, int enc,
                         const unsigned char *key, size_t keylen,
                         const OSSL_PARAM params[])
{
    void *t = m->newctx(provctx);

    if (t != NULL
        && !(enc ? m->einit : m->dinit)(t, key, keylen, NULL, 0, params)) {
        m->freectx(t);
        t = NULL;
    }
    return t;
}

KC_NOINLINE void kc_stack_wipe(void)
{
    unsigned char below[KC_STACK_WIPE];

    /* (whole vectors: OPENSSL_cleanse() stores a word at a time) */
    explicit_bzero(below, sizeof(below));
    /* (the frame stays where it is: not a tail call, not elided) */
    __asm__ __volatile__("" : : "r"(below) : "memory");
}

int kc_mac_key_final(const KC_MAC_FNS *m, void *t)
{
    static const unsigned char key[32];
    unsigned char out[64];
    size_t l;
    int ok;

    ok = m->init(t, key, sizeof(key), NULL)
         && m->final(t, out, &l, sizeof(out));
    OPENSSL_cleanse(out, sizeof(out));
    return ok;
}

void kc_err_top(KC_ERRTOP *t)
{
    /* an empty queue leaves the pointers alone */
    memset(t, 0, sizeof(*t));
    t->code = ERR_peek_last_error_all(&t->file, &t->line, &t->func,
                                      &t->data, NULL);
}

int kc_err_same(const KC_ERRTOP *a, const KC_ERRTOP *b)
{
    return a->code == b->code && a->file == b->file && a->line == b->line
           && a->func == b->func && a->data == b->data;
}

/* the process of the thread that claims |s|, or 0: not claimed */
static long claimer(long s)
{
    return (s & 1) != 0 ? s >> 26 : 0;
}

/*
 * *state is 0, KC_ONCE_DONE, or its claimer, (pid << 24 | tid) << 2 | 1.
 * Waiters yield, then sleep, so a claimer of lower real-time priority gets
 * the CPU; no keycache lock is held.  A claim by a thread fork() left
 * behind is taken over from scratch (its work may wait on a lock that
 * thread held, as any OpenSSL call in the child may).
 */
int kc_once_claim(long *state)
{
    long s, pid = (long)getpid(), mine = (pid << 24 | (long)gettid()) << 2 | 1;
    const struct timespec nap = { 0, 100000 };
    unsigned int waits = 0;

    for (;;) {
        s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
        if (s == KC_ONCE_DONE)
            return 0;
        if (s == mine)
            return 0;
        if (claimer(s) == pid) {
            if (++waits < 64)
                sched_yield();
            else
                nanosleep(&nap, NULL);
            continue;
        }
        if (__atomic_compare_exchange_n(state, &s, mine, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_ACQUIRE))
            return 1;
    }
}

void kc_once_done(long *state)
{
    __atomic_store_n(state, KC_ONCE_DONE, __ATOMIC_RELEASE);
}

int kc_once_foreign(const long *state)
{
    long pid = claimer(__atomic_load_n(state, __ATOMIC_ACQUIRE));

    return pid != 0 && pid != (long)getpid();
}

