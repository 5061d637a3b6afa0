/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork() with warm caches.
 *
 * The parent warms its thread's cache with keys through every row of the
 * family registry (kc_family: HMAC, CMAC, GMAC, KMAC, AES-OCB/SIV/GCM) and
 * forks.  The child starts with none of them cached (issue 18: fork drops
 * everything the child inherited): it must compute correct results
 * (checked against the default provider) for the parent's keys, which miss
 * and are admitted again, and for new ones, on its main thread and on a
 * new thread, and exit cleanly; the parent checks the child's exit status
 * and keeps computing correctly, its cache untouched.
 *
 * Then a fork storm (issue 9): one thread reads keycache's counters in a
 * tight loop, as a monitoring thread would, while the main thread forks a
 * thousand children that compute and exit.  A lock that the reading thread
 * held at fork time stays held in the child, where no thread will ever
 * release it; such a child hangs.  The parent never waits for a child
 * without a deadline: a child past it is killed and counted as hung.
 *
 * Then what a child inherits (issue 18): a parent that used a key, freed
 * everything and wiped its own copy forks, and the child (which might drop
 * privileges to handle untrusted input) must hold no copy of the key
 * anywhere in its memory, neither of a key the forking thread used nor of
 * one a worker thread used, which does not exist in the child.  The scan
 * covers every writable mapping (kch_mapped), and the same scenario run
 * with the default provider alone must come out the same: no copy.  Each
 * scenario uses every registry row, with keys of each row's own, and the
 * child scans once for all of them.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "kc_family.h"
#include "kc_heap.h"
#include "kc_test.h"
#include "keycache.h"

/*
 * Keys per set: each runs through every registry row, an entry per row (a
 * cipher's two, one per direction), and a set must fit the test config's
 * cache of 64 for the parent's keys to hit.
 */
#define NKEYS 2
#define MSGLEN 77

/*
 * Does a child forked now admit keys?  Not where the parent had other
 * threads (keycache's store.c asks glibc's flag too, one_thread()): one
 * of them may have held the loader's lock that an admission's walk takes.
 * Read in the parent, before fork(), into kid_admits.
 */
extern char __libc_single_threaded __attribute__((weak));
static int kid_admits = 1;

static void note_kid_admits(void)
{
    kid_admits = &__libc_single_threaded != NULL && __libc_single_threaded;
}

/*
 * Run every key of the set through every row of the family registry with
 * keycache (the thread's default context) and compare with the default
 * provider (kct_fam_same: a cipher's output is also opened on each side).
 * Returns the number of mismatches or failures.
 */
static int run_rows(uint32_t base, uint32_t msgseed, size_t from, size_t n)
{
    unsigned char key[KCT_FAM_MAXKEY], msg[MSGLEN];
    size_t f;
    int i, bad = 0;

    for (i = 0; i < NKEYS; i++) {
        kct_fill(key, sizeof(key), base + (uint32_t)i);
        kct_fill(msg, sizeof(msg), msgseed + (uint32_t)i);
        for (f = from; f < from + n; f++)
            bad += !kct_fam_same("fork", NULL, &kct_fams[f], key,
                                 kct_fams[f].keylen, msg, sizeof(msg));
    }
    return bad;
}

static int run_keys(uint32_t base, uint32_t msgseed)
{
    return run_rows(base, msgseed, 0, kct_nfams);
}

static void *child_thread(void *arg)
{
    int *bad = arg;

    kct_use(kct_keycache());
    *bad = run_keys(100, 7) + run_keys(300, 8);
    kct_use(NULL);
    return NULL;
}

/*
 * The child's work; the return value is its exit status.  With |spawn| it
 * also starts a thread (only done when the parent had a single thread:
 * POSIX and TSan both frown on new threads after a multi-threaded fork).
 * Where the parent had threads (kid_admits 0) the child admits no key
 * (origin.c, kc_origin_forked_threaded()): no entry, no hit.
 */
static int child_main(int spawn)
{
    uint64_t hits = kct_counter(KEYCACHE_PARAM_HITS);
    int bad = 0, tbad = -1;
    pthread_t t;

    /* the parent's entries were dropped when fork() returned */
    if (kct_counter(KEYCACHE_PARAM_ENTRIES) != 0)
        bad++;
    kct_use(kct_keycache());
    /* the parent's keys (admitted again), new keys, the parent's again */
    bad += run_keys(100, 3);
    bad += run_keys(200, 4);
    bad += run_keys(100, 5);
    /* a new thread: a new cache, registered and freed in the child */
    if (spawn
        && (pthread_create(&t, NULL, child_thread, &tbad) != 0
            || pthread_join(t, NULL) != 0 || tbad != 0))
        bad++;
    if (kid_admits ? kct_counter(KEYCACHE_PARAM_HITS) <= hits
                   : kct_counter(KEYCACHE_PARAM_HITS) != hits
                     || kct_counter(KEYCACHE_PARAM_ENTRIES) != 0)
        bad++;
    kct_use(NULL);
    if (bad != 0)
        fprintf(stderr, "child: %d failures\n", bad);
    return bad == 0 ? 0 : 1;
}

/* Fork; the child runs child_main() and exits; return its wait status. */
static int fork_and_wait(int use_exit, int spawn)
{
    int status = -1;
    pid_t pid;

    fflush(NULL);
    note_kid_admits();
    pid = fork();
    if (pid == 0) {
        int rc;

        alarm(KCT_CHILD_ALARM);
        rc = child_main(spawn);

        /* exit() runs OpenSSL's atexit cleanup in the child too */
        if (use_exit)
            exit(rc);
        _exit(rc);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

static void test_fork_warm(void)
{
    uint64_t hits;
    int status;

    kct_use(kct_keycache());
    CU_ASSERT_EQUAL(run_keys(100, 1), 0);
    hits = kct_counter(KEYCACHE_PARAM_HITS);
    CU_ASSERT_EQUAL(run_keys(100, 2), 0);
    /* every key hit in every registry row */
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_HITS) >= hits + kct_nfams * NKEYS);

    status = fork_and_wait(1, 1);
    CU_ASSERT_TRUE(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "\n  child status %#x\n", status);

    /* the parent's cache is untouched by what the child did */
    hits = kct_counter(KEYCACHE_PARAM_HITS);
    CU_ASSERT_EQUAL(run_keys(100, 6), 0);
    CU_ASSERT_TRUE(kct_counter(KEYCACHE_PARAM_HITS) >= hits + kct_nfams * NKEYS);
    CU_ASSERT_EQUAL(run_keys(200, 6), 0);
    kct_use(NULL);
}

/* Fork twice more, with _exit() this time, and from a warmed thread. */
static void *fork_thread(void *arg)
{
    int *status = arg;

    kct_use(kct_keycache());
    if (run_keys(400, 1) == 0)
        *status = fork_and_wait(0, 0);
    kct_use(NULL);
    return NULL;
}

static void test_fork_repeated(void)
{
    int i, status;
    pthread_t t;

    kct_use(kct_keycache());
    for (i = 0; i < 3; i++) {
        status = fork_and_wait(i % 2, 1);
        CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CU_ASSERT_EQUAL(run_keys(100 + 100 * (uint32_t)i, 9), 0);
    }
    kct_use(NULL);

    status = -1;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, fork_thread, &status), 0);
    pthread_join(t, NULL);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---------------------------------------------------------------------- */
/* Fork storm with a thread reading the counters                           */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define STORM_CHILDREN 200      /* each sanitized child costs far more */
#else
# define STORM_CHILDREN 1000
#endif
#define STORM_INFLIGHT 8         /* children running at once */
#define STORM_DEADLINE 10        /* seconds: a child needs milliseconds */
#define STORM_MAX_HANGS 8        /* the test has failed: stop forking */
#define STORM_WARM 500           /* key set the parent caches */

typedef struct {
    OSSL_PROVIDER *prov;
    int stop;                   /* set by the main thread, atomically */
    unsigned long polls, failed;
} POLLER;

/* What a monitoring thread does: read the counters, again and again. */
static void *poll_counters(void *arg)
{
    POLLER *p = arg;
    uint64_t hits, entries;
    OSSL_PARAM params[3];

    while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
        params[0] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_HITS, &hits);
        params[1] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_ENTRIES,
                                                &entries);
        params[2] = OSSL_PARAM_construct_end();
        if (!OSSL_PROVIDER_get_params(p->prov, params))
            p->failed++;
        __atomic_store_n(&p->polls, p->polls + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/*
 * A storm child: the parent's warm keys twice (dropped at fork, so they
 * are admitted again, then hit) and keys of its own.  The kinds of children alternate: odd
 * ones leave through exit(), so that OpenSSL's atexit cleanup runs
 * keycache's thread stop on the child's main thread (which takes the lock
 * the poller may have held at fork time), even ones through _exit(); every
 * other pair also reads the counters, which takes that lock too.
 */
#define STORM_EXIT(i) ((i) % 2 != 0)
#define STORM_READS(i) ((i) / 2 % 2 != 0)

static void storm_child(int i)
{
    size_t row = (size_t)i % kct_nfams;
    uint64_t hits = 0;
    int bad = 0;

    /* a backstop: the parent kills a child past STORM_DEADLINE first */
    alarm(KCT_CHILD_ALARM);
    if (STORM_READS(i)) {
        hits = kct_counter(KEYCACHE_PARAM_HITS);
        if (kct_counter(KEYCACHE_PARAM_ENTRIES) != 0)
            bad++;
    }
    /*
     * one registry row a child, in turn (the storm is about locks held at
     * fork; every row gets its children): the parent's keys, then new ones
     */
    bad += run_rows(STORM_WARM, (uint32_t)i, row, 1)
           + run_rows(STORM_WARM, (uint32_t)i + 1, row, 1)
           + run_rows(10000 + 8 * (uint32_t)i, (uint32_t)i, row, 1);
    /* forked while the poller ran (kid_admits 0): no entry and no hit */
    if (STORM_READS(i)
        && (hits == UINT64_MAX
            || (kid_admits
                ? kct_counter(KEYCACHE_PARAM_HITS) < hits + NKEYS
                : kct_counter(KEYCACHE_PARAM_HITS) != hits
                  || kct_counter(KEYCACHE_PARAM_ENTRIES) != 0)))
        bad++;
    if (STORM_EXIT(i))
        exit(bad == 0 ? 0 : 1);
    _exit(bad == 0 ? 0 : 1);
}

typedef struct {
    pid_t pid;
    int i;                      /* which child: its kind */
    time_t deadline;            /* monotonic seconds */
} KID;

static time_t mono_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

typedef struct {
    int started, exited_ok, failed, hangs, lost;
    int exit_hangs;             /* hangs of children that only exit() */
} STORM;

/*
 * Reap what has finished among kids[0..*n), kill those past their deadline;
 * returns the number of children that left the set.
 */
static int reap(KID *kids, int *n, STORM *st)
{
    time_t now = mono_now();
    int k = 0, gone = 0, status;
    pid_t r;

    while (k < *n) {
        r = waitpid(kids[k].pid, &status, WNOHANG);
        if (r == 0 && now < kids[k].deadline) {
            k++;
            continue;
        }
        if (r == 0) {
            /* hung: nothing will ever wake it */
            kill(kids[k].pid, SIGKILL);
            if (waitpid(kids[k].pid, &status, 0) != kids[k].pid)
                st->lost++;
            st->hangs++;
            if (STORM_EXIT(kids[k].i) && !STORM_READS(kids[k].i))
                st->exit_hangs++;
        } else if (r != kids[k].pid) {
            st->lost++;
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            st->exited_ok++;
        } else {
            st->failed++;
            fprintf(stderr, "\n  storm child status %#x\n", status);
        }
        kids[k] = kids[--*n];
        gone++;
    }
    return gone;
}

/*
 * warm: the parent caches keys first.  Cold, it has made no cache and
 * hashed no key (a fresh process, see fresh_storm()): keycache registers
 * its fork handlers only then, or once registry_lock is taken while other
 * threads run, as the poller's is.
 */
static void fork_storm(int warm, int children)
{
    const struct timespec pause = { 0, 200 * 1000 };
    KID kids[STORM_INFLIGHT];
    POLLER poller;
    STORM st;
    pthread_t t;
    int n = 0, want = children;
    pid_t pid;

    memset(&poller, 0, sizeof(poller));
    memset(&st, 0, sizeof(st));
    kct_use(kct_keycache());
    /* twice: the second round hits, so the children inherit a warm cache */
    if (warm) {
        CU_ASSERT_EQUAL(run_keys(STORM_WARM, 1), 0);
        CU_ASSERT_EQUAL(run_keys(STORM_WARM, 2), 0);
    }
    poller.prov = kct_keycache_provider();
    CU_ASSERT_PTR_NOT_NULL_FATAL(poller.prov);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, poll_counters, &poller),
                          0);
    /*
     * Fork only once the poller is in its loop: a thread still starting up
     * may be inside the allocator, and ASan's allocator lock is not
     * fork-safe (a child then hangs in ASan, not in keycache).
     */
    while (__atomic_load_n(&poller.polls, __ATOMIC_RELAXED) < 1000)
        nanosleep(&pause, NULL);

    while (st.started < want || n > 0) {
        if (n < STORM_INFLIGHT && st.started < want) {
            fflush(NULL);
            note_kid_admits();
            if ((pid = fork()) == 0)
                storm_child(st.started);
            if (pid < 0) {
                st.lost++;
                break;
            }
            kids[n].pid = pid;
            kids[n].i = st.started;
            kids[n].deadline = mono_now() + STORM_DEADLINE;
            n++;
            st.started++;
            continue;
        }
        if (st.hangs >= STORM_MAX_HANGS)
            want = st.started;          /* seen enough: wind down */
        if (reap(kids, &n, &st) == 0)
            nanosleep(&pause, NULL);
    }
    while (n > 0)                              /* only after a failed fork */
        if (reap(kids, &n, &st) == 0)
            nanosleep(&pause, NULL);

    __atomic_store_n(&poller.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    if (st.hangs != 0 || st.failed != 0 || st.lost != 0)
        fprintf(stderr, "\n  fork storm: %d children started, %d exited 0,"
                " %d hung (killed after %d s; %d of them only computed and"
                " called exit()), %d failed, %d lost\n",
                st.started, st.exited_ok, st.hangs, STORM_DEADLINE,
                st.exit_hangs, st.failed, st.lost);
    CU_ASSERT_EQUAL(st.hangs, 0);
    CU_ASSERT_EQUAL(st.failed, 0);
    CU_ASSERT_EQUAL(st.lost, 0);
    CU_ASSERT_EQUAL(st.exited_ok, children);
    CU_ASSERT_TRUE(poller.polls > 0);
    CU_ASSERT_EQUAL(poller.failed, 0);

    /* the parent goes on: its cache, and the lock, still work */
    CU_ASSERT_EQUAL(run_keys(STORM_WARM, 3), 0);
    CU_ASSERT_NOT_EQUAL(kct_counter(KEYCACHE_PARAM_HITS), UINT64_MAX);
    kct_use(NULL);
}

static void test_fork_storm(void)
{
    fork_storm(1, STORM_CHILDREN);
}

/* ---------------------------------------------------------------------- */
/* What a forked child inherits of keys (issue 18)                         */

#define SCAN_MASK 0xa5
#define NROWS KC_REGISTRY_ROWS

/*
 * The test keys, one pair for every row of the family registry (each row
 * its own, so a copy names its row; a row uses its keylen first bytes),
 * kept only masked (each byte ^ SCAN_MASK): the memory scan must not find
 * the test's own copy.  A key is unmasked into a heap copy for each use
 * and that copy wiped and freed at once, as a careful program does.
 */
static unsigned char masked_keys[NROWS][2][KCT_FAM_MAXKEY];
static const unsigned char scan_msg[] = "fork scan message";
#define SCAN_OUT KCT_FAM_OUT(sizeof(scan_msg))

static void scan_keys_init(void)
{
    unsigned char key[KCT_FAM_MAXKEY];
    size_t i, row;
    int k;

    for (row = 0; row < NROWS; row++)
        for (k = 0; k < 2; k++) {
            kct_fill(key, sizeof(key), 0xf0f0f000u + 16 * (uint32_t)row
                                       + (uint32_t)k);
            memcpy(key, "FORKK", 5);
            key[5] = (unsigned char)k;
            key[6] = (unsigned char)row;
            for (i = 0; i < sizeof(key); i++)
                masked_keys[row][k][i] = key[i] ^ SCAN_MASK;
        }
    OPENSSL_cleanse(key, sizeof(key));
}

/* Key |k| of row |row| unmasked, in a block to OPENSSL_clear_free(). */
static unsigned char *scan_key(size_t row, int k)
{
    unsigned char *key = OPENSSL_malloc(KCT_FAM_MAXKEY);
    size_t i;

    for (i = 0; key != NULL && i < KCT_FAM_MAXKEY; i++)
        key[i] = masked_keys[row][k][i] ^ SCAN_MASK;
    return key;
}

/* One way to use row |row|'s key |k| on |ctx|: the output length, or 0. */
typedef size_t SCAN_FN(OSSL_LIB_CTX *ctx, size_t row, int k,
                       unsigned char *out);

/*
 * One operation of registry row |row| on scan_msg under key |k| on |ctx|
 * (kct_fam_run: a MAC, or a seal).
 */
static size_t scan_mac(OSSL_LIB_CTX *ctx, size_t row, int k,
                       unsigned char *out)
{
    unsigned char *key = scan_key(row, k);
    const KCT_FAM *f = &kct_fams[row];
    size_t n;

    if (key == NULL)
        return 0;
    n = kct_fam_run(ctx, f, key, f->keylen, scan_msg, sizeof(scan_msg), out);
    OPENSSL_clear_free(key, KCT_FAM_MAXKEY);
    return n;
}

/*
 * scan_msg MACed on |c|, keyed and initialised if |ok|; then |c|, |mac|
 * and |key| freed: the output length, or 0.
 */
static size_t scan_finish(int ok, EVP_MAC *mac, EVP_MAC_CTX *c,
                          unsigned char *key, unsigned char *out)
{
    size_t outlen = 0;

    ok = ok && EVP_MAC_update(c, scan_msg, sizeof(scan_msg))
         && EVP_MAC_final(c, out, &outlen, SCAN_OUT);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(mac);
    OPENSSL_clear_free(key, KCT_FAM_MAXKEY);
    return ok ? outlen : 0;
}

/*
 * A MAC row's context keyed with key |k| as a parameter, then a keyless
 * init (with keycache, a route of its own); 1 byte of output for a
 * cipher row, which has none.
 */
static size_t scan_mac_param(OSSL_LIB_CTX *ctx, size_t row, int k,
                             unsigned char *out)
{
    const KCT_FAM *f = &kct_fams[row];
    unsigned char *key;
    EVP_MAC *mac;
    EVP_MAC_CTX *c;
    OSSL_PARAM p[4];
    size_t n;
    int ok;

    if (f->kind == KCT_CIPHER) {
        out[0] = 0;
        return 1;
    }
    key = scan_key(row, k);
    mac = EVP_MAC_fetch(ctx, f->name, NULL);
    c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    kct_fam_mac_params(f, p, NULL);
    for (n = 0; p[n].key != NULL; n++)
        continue;
    p[n] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key,
                                             f->keylen);
    p[n + 1] = OSSL_PARAM_construct_end();
    ok = key != NULL && c != NULL && EVP_MAC_CTX_set_params(c, p)
         && EVP_MAC_init(c, NULL, 0, NULL);
    return scan_finish(ok, mac, c, key, out);
}

/*
 * HMAC (row |row| unused) from one context keyed with key |k| twice, then
 * freed: the second keying of a context keycache had to key again copies
 * the key into its wrapper (hmac.c), which must wipe it before the
 * wrapper is pooled.
 */
static size_t scan_mac_rekeyed(OSSL_LIB_CTX *ctx, size_t row, int k,
                               unsigned char *out)
{
    const KCT_FAM *f = kct_fam_find("HMAC");
    unsigned char *key;
    EVP_MAC *mac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM p[2];
    size_t outlen = 0;
    int ok;

    row = (size_t)(f - kct_fams);
    key = scan_key(row, k);
    p[0] = OSSL_PARAM_construct_utf8_string("digest", (char *)f->sub_value,
                                            0);
    p[1] = OSSL_PARAM_construct_end();
    ok = key != NULL && c != NULL && EVP_MAC_init(c, key, f->keylen, p)
         && EVP_MAC_update(c, scan_msg, sizeof(scan_msg))
         && EVP_MAC_final(c, out, &outlen, SCAN_OUT)
         && EVP_MAC_init(c, key, f->keylen, p);
    return scan_finish(ok, mac, c, key, out);
}

/* Row |row|'s key |k| used by |use| on |ctx| as on the default: 1 if so. */
static int scan_same_by(SCAN_FN *use, OSSL_LIB_CTX *ctx, size_t row, int k)
{
    unsigned char got[SCAN_OUT], want[SCAN_OUT];
    size_t n = use(kct_default(), row, k, want);

    return n != 0 && use(ctx, row, k, got) == n
           && memcmp(got, want, n) == 0;
}

static int scan_same(OSSL_LIB_CTX *ctx, size_t row, int k)
{
    return scan_same_by(scan_mac, ctx, row, k);
}

/*
 * Copies of key |k| of every row anywhere in this process's writable
 * memory, one pass for all (kch_mapped_many): into copies[row].
 */
static void scan_copies(int k, unsigned long copies[NROWS], const char *say)
{
    const unsigned char *m[NROWS];
    size_t lens[NROWS], row;

    for (row = 0; row < NROWS; row++) {
        m[row] = masked_keys[row][k];
        lens[row] = kct_fams[row].keylen;
    }
    if (!kch_mapped_many(m, lens, (int)NROWS, SCAN_MASK, copies, say))
        for (row = 0; row < NROWS; row++)
            copies[row] = ULONG_MAX;        /* no scan: a failure */
}

/*
 * A thread's first 3 contexts of a family whose registry row says "first"
 * run on the application's default, neither counted nor cached (provider/
 * layer/layer.h, kc_tcore_app_first(); counted per thread and instance,
 * HMAC's misses per thread; a fork child goes on from its parent's
 * counts, but HMAC's start again where its handler ran): spent here, on three keys never scanned for and used once each
 * here (so never cached), so that a key used three times next is cached.
 * The mismatches.
 */
static int spend_first_of(OSSL_LIB_CTX *ctx, size_t only)
{
    unsigned char key[KCT_FAM_MAXKEY], got[SCAN_OUT], want[SCAN_OUT];
    size_t row, n;
    int i, bad = 0;

    for (row = 0; row < NROWS; row++) {
        const KCT_FAM *f = &kct_fams[row];

        if (!f->first || (only != NROWS && row != only))
            continue;
        for (i = 0; i < 3; i++) {
            memset(key, 0xa0 + i, sizeof(key));
            n = kct_fam_run(kct_default(), f, key, f->keylen, scan_msg,
                            sizeof(scan_msg), want);
            bad += n == 0
                   || kct_fam_run(ctx, f, key, f->keylen, scan_msg,
                                  sizeof(scan_msg), got) != n
                   || memcmp(got, want, n) != 0;
        }
    }
    return bad;
}

/* every row's first contexts */
static int spend_first(OSSL_LIB_CTX *ctx)
{
    return spend_first_of(ctx, NROWS);
}

/* What a child found wrong: bits of its exit status. */
#define CF_COPIES   0x01        /* the key is still in its memory */
#define CF_ENTRIES  0x02        /* keycache-entries not 0 after fork */
#define CF_OUTPUT   0x04        /* an output differs from the default's */
#define CF_FIRST    0x08        /* first use hit (or was admitted) */
#define CF_READMIT  0x10        /* not admitted again, or no hit after;
                                   or, forked from threads, admitted */

/*
 * In the child, with keycache: key |k| of row |row| must behave as never
 * seen.  The first use gives the default's output and neither hits nor is
 * admitted; with admit_after = 3 the third is (a miss, an entry), the
 * fourth hits - unless the parent had threads (kid_admits): then none is.
 * |entries|: the entries the rows before made.
 */
static int child_reuse(OSSL_LIB_CTX *ctx, size_t row, int k,
                       uint64_t entries)
{
    uint64_t hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    uint64_t misses = kct_counter_in(ctx, KEYCACHE_PARAM_MISSES);
    int bad = 0, i;

    for (i = 0; i < 4; i++) {
        if (!scan_same(ctx, row, k))
            bad |= CF_OUTPUT;
        if (i == 0 && (kct_counter_in(ctx, KEYCACHE_PARAM_HITS) != hits
                       || kct_counter_in(ctx, KEYCACHE_PARAM_MISSES)
                          != misses))
            bad |= CF_FIRST;
        if (i == 2 && (kct_counter_in(ctx, KEYCACHE_PARAM_MISSES)
                       != misses + (uint64_t)kid_admits
                       || kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES)
                          != entries + (uint64_t)kid_admits))
            bad |= CF_READMIT;
        if (i == 3 && kct_counter_in(ctx, KEYCACHE_PARAM_HITS)
                      != hits + (uint64_t)kid_admits)
            bad |= CF_READMIT;
    }
    return bad;
}

/*
 * A key copy in the child: keycache's own, or one the default left on a
 * stack below keycache's frames, which keycache must wipe (KMAC's key
 * encoding, families/kmac.c).
 *
 * A residue with lazy binding only: the dynamic linker's first
 * resolution of a symbol (_dl_runtime_resolve_xsavec) saves the vector
 * registers on the stack, and right after keycache handled a key they
 * hold key bytes (seen for GCM256 on the forking thread, GMAC and GCM
 * under ASan; never with the default alone).  Reproduce: build/test/
 * test_fork without LD_BIND_NOW (ctest sets LD_BIND_NOW=1 for this test,
 * test/CMakeLists.txt); a provider linked with -z now would not leave it.
 */
/*
 * The child of either scenario: scan for key |k| of every row first
 * (after OPENSSL_thread_stop() if |stop|, which can only drop the forking
 * thread's cache), then, with keycache, the counters and each row's
 * reuse; then tear the library context down (nothing fork dropped may be
 * freed again) and leave through _exit() with what went wrong.
 */
static void scan_child(OSSL_LIB_CTX *ctx, int kc, int k, int stop)
{
    unsigned long copies[NROWS];
    size_t row;
    int bad = 0, rbad;

    alarm(KCT_CHILD_ALARM);
    if (stop)
        OPENSSL_thread_stop();
    scan_copies(k, copies, "child: key copy");
    for (row = 0; row < NROWS; row++)
        if (copies[row] != 0) {
            fprintf(stderr, "\n  fork child (%s): %lu copies of %s key %d\n",
                    kc ? "keycache" : "default alone", copies[row],
                    kct_fams[row].id, k);
            bad |= CF_COPIES;
        }
    if (kc && kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) != 0)
        bad |= CF_ENTRIES;
    /* (a worker's instance: this thread's first contexts are not spent) */
    if (kc && spend_first(ctx) != 0)
        bad |= CF_OUTPUT;
    for (row = 0; kc && row < NROWS; row++) {
        rbad = child_reuse(ctx, row, k, kid_admits ? row : 0);
        if (rbad != 0)
            fprintf(stderr, "\n  fork child (keycache, %s, key %d): failures"
                    " %#x\n", kct_fams[row].id, k, rbad);
        bad |= rbad;
    }
    OSSL_LIB_CTX_free(ctx);
    if (bad != 0)
        fprintf(stderr, "\n  fork child (%s, key %d): failures %#x\n",
                kc ? "keycache" : "default alone", k, bad);
    fflush(stderr);
    _exit(bad);
}

/* Wait for a scan child: its failure bits, or 0xff if it did not exit. */
static int scan_wait(pid_t pid)
{
    int status = -1;

    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        fprintf(stderr, "\n  fork child status %#x\n", status);
        return 0xff;
    }
    return WEXITSTATUS(status);
}

/* The scenario's library context: keycache (admit_after = 3) or not. */
static OSSL_LIB_CTX *scan_ctx(int kc)
{
    if (!kc)
        return OSSL_LIB_CTX_new();      /* the default provider, implicitly */
    return kct_keycache_conf("admit_after = 3\n");
}

/* Key |k| three times through every row on |ctx|: the mismatches. */
static int use_rows_3(OSSL_LIB_CTX *ctx, int k)
{
    size_t row;
    int i, bad = spend_first(ctx);

    for (row = 0; row < NROWS; row++) {
        for (i = 0; i < 3; i++)
            bad += !scan_same(ctx, row, k);
        /* and once given as a parameter, then a keyless init */
        bad += !scan_same_by(scan_mac_param, ctx, row, k);
    }
    return bad;
}

/* Each row's key |k| once more on |ctx|: the mismatches. */
static int use_rows_1(OSSL_LIB_CTX *ctx, int k)
{
    size_t row;
    int bad = 0;

    for (row = 0; row < NROWS; row++)
        bad += !scan_same(ctx, row, k);
    return bad;
}

/* With keycache, the parent does hold copies, and the scan sees them. */
static void parent_copies(OSSL_LIB_CTX *ctx, int kc, int k)
{
    unsigned long copies[NROWS];
    size_t row;

    scan_copies(k, copies, kc ? NULL : "default alone, parent: key copy");
    if (kc)
        CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES), NROWS);
    for (row = 0; row < NROWS; row++) {
        if (kc ? copies[row] == 0 : copies[row] != 0)
            fprintf(stderr, "\n  parent (%s): %lu copies of %s key %d\n",
                    kc ? "keycache" : "default alone", copies[row],
                    kct_fams[row].id, k);
        CU_ASSERT_TRUE(kc ? copies[row] >= 1 : copies[row] == 0);
    }
}

/*
 * One thread: an HMAC context keyed twice with key 0 and freed (with
 * keycache: a wrapper that held a copy, pooled), then key 0 of every row
 * three times (an entry, its template and a spare, each holding the key),
 * every copy of the program's freed and wiped, then fork.
 */
/* rekeyed: a context keyed twice first (its key is looked up at once) */
static void fork_one_thread_as(int kc, int rekeyed)
{
    OSSL_LIB_CTX *ctx = scan_ctx(kc);
    uint64_t hits;
    pid_t pid;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    if (rekeyed)
        CU_ASSERT_TRUE(scan_same_by(scan_mac_rekeyed, ctx, 0, 0));
    CU_ASSERT_EQUAL(use_rows_3(ctx, 0), 0);
    parent_copies(ctx, kc, 0);
    fflush(NULL);
    note_kid_admits();
    if ((pid = fork()) == 0)
        scan_child(ctx, kc, 0, 0);
    CU_ASSERT_EQUAL(scan_wait(pid), 0);

    /* the parent is unaffected: its entries hit */
    if (kc) {
        hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
        CU_ASSERT_EQUAL(use_rows_1(ctx, 0), 0);
        CU_ASSERT_EQUAL(kct_counter_in(ctx, KEYCACHE_PARAM_HITS),
                        hits + NROWS);
    }
    OSSL_LIB_CTX_free(ctx);
}

static void test_fork_drops_own(void)
{
    fork_one_thread_as(1, 1);
}

static void test_fork_default_own(void)
{
    fork_one_thread_as(0, 1);
}

/*
 * A parent thread that has used HMAC key 1 once and holds no cache (only
 * its small record, which counts keys towards admission: a new thread,
 * whose record no other instance took, its first contexts spent) forks:
 * the child counts afresh, so with admit_after = 3 its second use is no
 * entry yet and its third is.  Every MAC is the default's.
 */
static intptr_t record_fork_of(OSSL_LIB_CTX *ctx, int hmac_only)
{
    size_t row = (size_t)(kct_fam_find("HMAC") - kct_fams);
    intptr_t bad = 0;
    pid_t pid;
    int i;

    if (spend_first_of(ctx, hmac_only ? row : NROWS) != 0
        || !scan_same(ctx, row, 1)
        || kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) != 0)
        return 1;
    fflush(NULL);
    note_kid_admits();
    if ((pid = fork()) == 0) {
        alarm(KCT_CHILD_ALARM);
        /* the child's own first misses (its handler started them again) */
        if (spend_first_of(ctx, hmac_only ? row : NROWS) != 0)
            bad |= CF_OUTPUT;
        for (i = 0; i < 3; i++) {
            if (!scan_same(ctx, row, 1))
                bad |= CF_OUTPUT;
            if (kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES)
                != (uint64_t)(i == 2 && kid_admits ? 1 : 0))
                bad |= CF_READMIT;
        }
        if (bad != 0)
            fprintf(stderr, "\n  fork child of a record: failures %#x\n",
                    (unsigned int)bad);
        fflush(stderr);
        _exit((int)bad);
    }
    return scan_wait(pid) != 0;
}

static void *record_fork(void *arg)
{
    return (void *)record_fork_of(arg, 0);
}

static void test_fork_record_counts_afresh(void)
{
    OSSL_LIB_CTX *ctx = scan_ctx(1);
    pthread_t t;
    void *bad = (void *)1;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, record_fork, ctx), 0);
    pthread_join(t, &bad);
    CU_ASSERT_PTR_NULL(bad);
    OSSL_LIB_CTX_free(ctx);
}

/*
 * A child's first contexts are its own again, as a new process's, for
 * every row that has them.  The parent spent its own and caches key 1; in
 * the child, key 0's first three uses are the application's default's,
 * never counted, so its fourth is no entry yet (admit_after = 3).  In a
 * fresh process: only a single-threaded parent's child admits.
 */
static void fresh_firsts(void)
{
    OSSL_LIB_CTX *ctx = scan_ctx(1);
    uint64_t entries;
    size_t row;
    int i, bad = 0;
    pid_t pid;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL_FATAL(spend_first_of(ctx, NROWS), 0);
    for (row = 0; row < NROWS; row++)
        for (i = 0; i < 4; i++)
            CU_ASSERT(scan_same(ctx, row, 1));
    CU_ASSERT_FATAL(kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) > 0);
    fflush(NULL);
    if ((pid = fork()) == 0) {
        alarm(KCT_CHILD_ALARM);
        bad |= kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) != 0;
        for (row = 0; row < NROWS; row++) {
            if (!kct_fams[row].first)
                continue;
            entries = kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES);
            for (i = 0; i < 4; i++)
                bad |= !scan_same(ctx, row, 0);
            if (kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES) != entries) {
                fprintf(stderr, "\n  %s: the child's first contexts were "
                        "counted\n", kct_fams[row].id);
                bad = 1;
            }
        }
        fflush(stderr);
        _exit(bad);
    }
    CU_ASSERT_EQUAL(scan_wait(pid), 0);
    OSSL_LIB_CTX_free(ctx);
}

/* A worker of a pool: uses key 1 of every row, then idles until told. */
typedef struct {
    OSSL_LIB_CTX *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;                  /* 1: used the key, idles; 2: go on */
    int stop;                   /* OPENSSL_thread_stop() before idling */
    int bad;
    uint64_t hits, hits_after;  /* the counter around its last uses */
} WORKER;

static void *worker_main(void *arg)
{
    WORKER *w = arg;

    w->bad += use_rows_3(w->ctx, 1);
    if (w->stop)
        OPENSSL_thread_stop();
    pthread_mutex_lock(&w->mu);
    w->state = 1;
    pthread_cond_broadcast(&w->cv);
    while (w->state != 2)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    /* in the parent the worker keeps its entries */
    w->hits = kct_counter_in(w->ctx, KEYCACHE_PARAM_HITS);
    w->bad += use_rows_1(w->ctx, 1);
    w->hits_after = kct_counter_in(w->ctx, KEYCACHE_PARAM_HITS);
    return NULL;
}

/*
 * Another thread: a worker uses key 1 of every row and idles; the main
 * thread, which never used them, forks.  In the child the worker does not
 * exist; the child calls OPENSSL_thread_stop() (which cannot reach the
 * worker's cache) and scans.  With |stop| the worker stops itself first:
 * its cache, set aside until the worker exits, is not in the child either.
 */
static void fork_worker(int kc, int stop)
{
    WORKER w;
    pthread_t t;
    pid_t pid;

    memset(&w, 0, sizeof(w));
    w.stop = stop;
    w.ctx = scan_ctx(kc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w.ctx);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, worker_main, &w), 0);
    pthread_mutex_lock(&w.mu);
    while (w.state != 1)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    parent_copies(w.ctx, kc, 1);

    fflush(NULL);
    note_kid_admits();
    if ((pid = fork()) == 0)
        scan_child(w.ctx, kc, 1, 1);
    CU_ASSERT_EQUAL(scan_wait(pid), 0);

    pthread_mutex_lock(&w.mu);
    w.state = 2;
    pthread_cond_broadcast(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(w.bad, 0);
    if (kc && !stop)
        CU_ASSERT_EQUAL(w.hits_after, w.hits + NROWS);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    OSSL_LIB_CTX_free(w.ctx);
}

static void test_fork_drops_worker(void)
{
    fork_worker(1, 0);
}

static void test_fork_default_worker(void)
{
    fork_worker(0, 0);
}

static void test_fork_drops_stopped_worker(void)
{
    fork_worker(1, 1);
}

/*
 * In a fresh process (run_fresh()), before keycache has anything for its
 * fork handlers to do, so that they are not registered yet (fork-child-
 * empty pays nothing for them): on its only thread, a record whose one
 * fingerprint the child must not inherit (HMAC alone: a cipher's or
 * another MAC's first contexts would free enough wrappers to make a
 * cache); a storm whose parent has no cache, with a poller taking
 * registry_lock; and keys the only thread cached in a cache its first
 * contexts made (by wrappers freed) before it hashed any key.
 */
static void fresh_record(void)
{
    OSSL_LIB_CTX *ctx = scan_ctx(1);

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_EQUAL(record_fork_of(ctx, 1), 0);
    OSSL_LIB_CTX_free(ctx);
}

/* fewer children: the whole process must end within KCT_CHILD_ALARM */
static void fresh_storm(void)
{
    fork_storm(0, STORM_CHILDREN / 4);
}

/* the first contexts of every row make a cache before any key is hashed */
static void fresh_own(void)
{
    fork_one_thread_as(1, 0);
}

/*
 * A seccomp filter that fails madvise() with err for the advice a or b: 0
 * if it could not be installed.
 */
static int refuse_advice(int a, int b, int err)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)a, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)b, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned int)err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
           && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* n HMAC-SHA256 with each of keys [k0, k0 + nkeys): how many differ */
static int hmac_keys_differ(int k0, int nkeys, int n)
{
    unsigned char key[32], want[32], got[32];
    size_t wl = 0, gl = 0;
    int k, i, bad = 0;

    for (k = k0; k < k0 + nkeys; k++) {
        kct_fill(key, sizeof(key), 0x5EED0000u + (uint32_t)k);
        for (i = 0; i < n; i++)
            bad += EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL,
                             key, sizeof(key), key, (size_t)i, want,
                             sizeof(want), &wl) == NULL
                   || EVP_Q_mac(kct_keycache(), "HMAC", NULL, "SHA256", NULL,
                                key, sizeof(key), key, (size_t)i, got,
                                sizeof(got), &gl) == NULL
                   || wl != gl || memcmp(want, got, wl) != 0;
    }
    return bad;
}

static void *cache_thread(void *arg)
{
    return hmac_keys_differ(7000, 4, 4) == 0 ? arg : NULL;
}

/*
 * Threads that each make a cache and exit leave nothing allocated behind
 * (a cache whose pages were taken for marked would stay, never freed).
 */
static void threads_free_caches(void)
{
    struct mallinfo2 before = mallinfo2(), after;
    pthread_t t;
    void *res;
    int i, bad = 0;

    /* (the first threads' one-off allocations are not counted) */
    for (i = 0; i < 48; i++) {
        if (i == 16)
            before = mallinfo2();
        bad += pthread_create(&t, NULL, cache_thread, &bad) != 0
               || pthread_join(t, &res) != 0 || res != &bad;
    }
    after = mallinfo2();
    CU_ASSERT_EQUAL(bad, 0);
    /* 32 caches kept would be some 1 MiB */
    CU_ASSERT_TRUE(after.uordblks < before.uordblks + 256 * 1024);
    if (after.uordblks >= before.uordblks + 256 * 1024)
        fprintf(stderr, "\n  32 threads left %zu bytes allocated\n",
                after.uordblks - before.uordblks);
}

/*
 * As under OpenSSH's sandbox, which allows the advice but answers its
 * undoing with EINVAL: a block whose pages stay marked must never go back
 * to malloc, so keycache marks no cache after the first.  Both scans, and
 * caches freed but that first.
 */
static void fresh_noundo(void)
{
    CU_ASSERT_TRUE_FATAL(refuse_advice(MADV_KEEPONFORK, MADV_KEEPONFORK,
                                       EINVAL));
    fork_one_thread_as(1, 1);
    fork_worker(1, 0);
    threads_free_caches();
}

/*
 * As where the kernel has no MADV_WIPEONFORK (before Linux 4.14, or a
 * seccomp policy answering the advice and its undoing with EPERM): caches
 * are wiped in a child by keycache itself, and freed as usual (a cache
 * taken for marked would never be).  Both scans.
 */
static void fresh_nowipe(void)
{
    CU_ASSERT_TRUE_FATAL(refuse_advice(MADV_WIPEONFORK, MADV_KEEPONFORK,
                                       EPERM) && !kct_kernel_wipes());
    fork_one_thread_as(1, 1);
    fork_worker(1, 0);
    threads_free_caches();
}

pid_t _Fork(void);      /* glibc 2.34: fork() without its handlers */

/*
 * In a child of _Fork(): two new keys taken in turn must make two entries
 * (the wiped cache started again under one hash key; where the kernel
 * wiped nothing the parent's entries stay), then many keys,
 * evicting, must come out right, without hanging (alarm).  0: all held.
 */
static int raw_child(void)
{
    uint64_t n;
    int i, bad = 0;

    alarm(60);
    for (i = 0; i < 10; i++)
        bad += hmac_keys_differ(5000, 2, 1);
    n = kct_counter_in(kct_keycache(), KEYCACHE_PARAM_ENTRIES);
    /* (a kernel that wipes nothing leaves the parent's cache as it was) */
    if (n != 2 && kct_kernel_wipes()) {
        fprintf(stderr, "\n  _Fork() child: %llu entries for 2 keys\n",
                (unsigned long long)n);
        bad++;
    }
    return bad + hmac_keys_differ(0, 200, 4);
}

/* _Fork() now (grand: from a fork() child, whose cache is empty): 1 if ok */
static int raw_fork_ok(int grand)
{
    int status = -1;
    pid_t pid = grand ? fork() : _Fork();

    if (pid == 0)
        _exit(grand ? !raw_fork_ok(0) : raw_child() != 0);
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "\n  %s child: status %#x\n", grand ? "fork()" : "_Fork()",
                status);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * A child made by _Fork() skips the fork handler, but its kernel wiped the
 * cache's slots: with the parent's cache full, or with it empty (a _Fork()
 * from a fork() child), keys must come out right and be cached once each.
 * A fresh process: its only thread forks.
 */
static void fresh_raw_fork(void)
{
    CU_ASSERT_EQUAL(hmac_keys_differ(0, 80, 4), 0);
    CU_ASSERT_TRUE(kct_counter_in(kct_keycache(), KEYCACHE_PARAM_ENTRIES) >= 32);
    CU_ASSERT_TRUE(raw_fork_ok(0));
    CU_ASSERT_TRUE(raw_fork_ok(1));
    /* the parent's cache is its own still */
    CU_ASSERT_EQUAL(hmac_keys_differ(0, 80, 1), 0);
}

static const char *self;
/* symbols bound lazily: see add_suites() */
static int lazy;

static void run_fresh(const char *what)
{
    char *out = NULL;

    CU_ASSERT_TRUE(kct_child_output(self, "/dev/null", what, &out));
    if (out != NULL && strstr(out, "...FAILED") != NULL)
        fprintf(stderr, "\n%s", out);
    free(out);
}

static void test_fork_fresh_record(void)
{
    run_fresh("fresh-record");
}

static void test_fork_fresh_storm(void)
{
    run_fresh("fresh-storm");
}

static void test_fork_fresh_own(void)
{
    run_fresh("fresh-own");
}

static void test_fork_fresh_raw(void)
{
    run_fresh("fresh-raw");
}

static void test_fork_fresh_firsts(void)
{
    run_fresh("fresh-firsts");
}

static void test_fork_fresh_noundo(void)
{
    run_fresh("fresh-noundo");
}

static void test_fork_fresh_nowipe(void)
{
    run_fresh("fresh-nowipe");
}

static void add_fresh(void (*fn)(void))
{
    CU_pSuite s = CU_add_suite("fork, fresh process", NULL, NULL);

    scan_keys_init();
    CU_add_test(s, "fresh", fn);
}

/* ---------------------------------------------------------------------- */
/* Key pages the kernel wipes                                             */

static pthread_barrier_t wf_forked, wf_checked;
static int wf_during, wf_bad;

/* A thread with a cache of its own, kept while the main thread forks. */
static void *wf_worker(void *arg)
{
    (void)arg;
    wf_bad = hmac_keys_differ(9000, 1, 16);
    wf_during = kct_wf_ranges();
    pthread_barrier_wait(&wf_forked);
    pthread_barrier_wait(&wf_checked);
    return NULL;
}

/*
 * A cache keeps its keys in pages the kernel wipes in a child: one more
 * such range while a thread holds a cache; in a child, where that thread's
 * cache is freed, and in the parent once the thread is gone, as many as
 * before, since freed pages go back to malloc as ordinary ones (a later
 * block of someone else's would be wiped in every child).
 */
static void test_fork_wiped_pages(void)
{
    pthread_t t;
    int before, status = -1;
    pid_t pid;

    if (!kct_kernel_wipes()) {
        fprintf(stderr, "\n  (this kernel wipes nothing on fork: a child "
                "wipes keycache's pages itself)\n");
        return;
    }
    before = kct_wf_ranges();
    CU_ASSERT_TRUE_FATAL(before >= 0);
    CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&wf_forked, NULL, 2), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&wf_checked, NULL, 2), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, wf_worker, NULL), 0);
    pthread_barrier_wait(&wf_forked);
    pid = fork();
    if (pid == 0)
        _exit(kct_wf_ranges() == before ? 0 : 1);
    if (pid > 0)
        waitpid(pid, &status, 0);
    pthread_barrier_wait(&wf_checked);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(wf_bad, 0);
    CU_ASSERT_EQUAL(wf_during, before + 1);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(kct_wf_ranges(), before);
    pthread_barrier_destroy(&wf_forked);
    pthread_barrier_destroy(&wf_checked);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("fork", NULL, NULL);

    CU_add_test(s, "child of a warm parent", test_fork_warm);
    CU_add_test(s, "repeated forks, from a thread", test_fork_repeated);
    CU_add_test(s, "fork storm while a thread reads counters",
                test_fork_storm);
    CU_add_test(s, "fork storm, the parent without a cache (fresh process)",
                test_fork_fresh_storm);

    s = CU_add_suite("fork drops key material", NULL, NULL);
    scan_keys_init();
    CU_add_test(s, "a child of a thread without a cache counts afresh",
                test_fork_record_counts_afresh);
    CU_add_test(s, "a child's first contexts are its own again (fresh "
                "process)", test_fork_fresh_firsts);
    CU_add_test(s, "the same, its process's only thread (fresh process)",
                test_fork_fresh_record);
    /*
     * Lazily bound (ctest's test_fork_lazy), the default's own keyed calls
     * may leave key bytes in the registers that the linker then spills
     * (OpenSSL 4.0's AES-SIV): its controls run bound at start only.
     */
    if (!lazy)
        CU_add_test(s, "default alone: no copy in the child (one thread)",
                    test_fork_default_own);
    CU_add_test(s, "no copy of the forking thread's key in the child",
                test_fork_drops_own);
    CU_add_test(s, "the same, its process's only thread (fresh process)",
                test_fork_fresh_own);
    if (!lazy)
        CU_add_test(s, "default alone: no copy in the child (worker thread)",
                    test_fork_default_worker);
    CU_add_test(s, "no copy of another thread's key in the child",
                test_fork_drops_worker);
    CU_add_test(s, "nor of a key its thread stopped but not yet freed",
                test_fork_drops_stopped_worker);
    CU_add_test(s, "keys lie in pages the kernel wipes in a child",
                test_fork_wiped_pages);
    CU_add_test(s, "a kernel that wipes nothing: keycache wipes (fresh "
                "process)", test_fork_fresh_nowipe);
    CU_add_test(s, "a policy that forbids undoing the advice (fresh "
                "process)", test_fork_fresh_noundo);
    CU_add_test(s, "a child of _Fork(), without the handler, caches again "
                "(fresh process)", test_fork_fresh_raw);
}

/* run_fresh()'s children: `--child NAME` runs that one alone */
static const struct {
    const char *name;
    void (*fn)(void);
} fresh[] = {
    { "fresh-record", fresh_record }, { "fresh-storm", fresh_storm },
    { "fresh-own", fresh_own }, { "fresh-raw", fresh_raw_fork },
    { "fresh-noundo", fresh_noundo }, { "fresh-nowipe", fresh_nowipe },
    { "fresh-firsts", fresh_firsts },
};
static void (*fresh_fn)(void);

static void add_fresh_fn(void)
{
    add_fresh(fresh_fn);
}

int main(int argc, char **argv)
{
    size_t i;

    self = argv[0];
    lazy = getenv("KC_FORK_LAZY") != NULL;
    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        for (i = 0; i < sizeof(fresh) / sizeof(fresh[0]); i++)
            if (strcmp(argv[2], fresh[i].name) == 0) {
                fresh_fn = fresh[i].fn;
                return kct_main(argc, argv, add_fresh_fn);
            }
        return 2;
    }
    return kct_main(argc, argv, add_suites);
}
