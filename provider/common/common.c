/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers every layer uses: names, the error queue's newest entry, and
 * run-once work claimed by one thread.
 */
#define _GNU_SOURCE            /* gettid() */
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>

#include "common/common.h"

/* Does the colon separated name list |names| start with |first|? */
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

/*
 * The gate of a family's first use (layer/gate.c) and of the digest table
 * (inner.c): *state is 0 (not done), KC_ONCE_DONE, or who does it,
 * (pid << 24 | tid) << 2 | 1.  One thread wins (1: it does the work, then
 * calls kc_once_done()); the others of the process wait for it, yielding,
 * then sleeping (a binder of lower real-time priority must get the CPU): it
 * runs once per family and instance, at its first use, and takes no lock
 * of keycache's.  A binding left by a thread that did not come with fork()
 * into this child is taken over (from scratch: the binders start over);
 * like any OpenSSL call in such a child, that can wait on a lock the lost
 * thread held.  One asked for again from inside its own binding answers 0.
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
        if ((s & 1) != 0 && s >> 26 == pid) {
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

