/* SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE             /* memmem */
#include "kc_heap.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "kc_test.h"

typedef struct blk_st {
    struct blk_st *prev, *next;
    size_t size;
    const char *file;           /* allocating source file */
    int line;
    int keycache;               /* allocated by keycache's own code */
} BLK;

/* a header that keeps the caller's memory 16-byte aligned */
#define HDR ((sizeof(BLK) + 15) & ~(size_t)15)
#define USER(b) ((unsigned char *)(b) + HDR)
#define BLK_OF(p) ((BLK *)((unsigned char *)(p) - HDR))

#define PIECE 16
#define KCH_MAX_PIECES 16       /* kch_mapped(): strings to 256 bytes */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static BLK *live;                       /* live blocks, newest first */
static size_t live_blocks, live_bytes;
static const unsigned char *watched;    /* kch_watch()'s strings */
static size_t watched_len;
static int nwatched;
static unsigned long freed_kc, freed_other;

int kch_keycache_file(const char *file)
{
    const char *base = file != NULL ? strrchr(file, '/') : NULL;
    const char *dir = base;

    /*
     * A file in a folder of a directory named provider (provider/cache/
     * store.c): libcrypto has a crypto/hmac/hmac.c and a
     * providers/implementations/macs/hmac.c.
     */
    if (base == NULL || base[1] == '\0')
        return 0;
    while (dir > file && dir[-1] != '/')
        dir--;
    if (dir == base || dir == file)
        return 0;
    dir--;                      /* the slash before the folder */
    return dir - file >= 8 && strncmp(dir - 8, "provider", 8) == 0
           && (dir - file == 8 || dir[-9] == '/');
}

/* Does p[0..n) hold a piece of s[0..len)? */
static int holds(const unsigned char *p, size_t n, const unsigned char *s,
                 size_t len)
{
    size_t piece = len < PIECE ? len : PIECE, off;

    if (len == 0)
        return 0;
    for (off = 0; off + piece <= len; off += piece)
        if (memmem(p, n, s + off, piece) != NULL)
            return 1;
    return memmem(p, n, s + len - piece, piece) != NULL;
}

/* Scan a block about to be freed for the watched strings (lock held). */
static void scan_dying(const BLK *b, const char *file, int line)
{
    int i;

    for (i = 0; i < nwatched; i++)
        if (holds(USER(b), b->size, watched + i * watched_len, watched_len))
            break;
    if (i == nwatched)
        return;
    if (b->keycache)
        freed_kc++;
    else
        freed_other++;
    fprintf(stderr, "\n  %s: key %d in a %zu-byte block from %s:%d,"
            " freed at %s:%d\n",
            b->keycache ? "VIOLATION" : "note (not keycache's)", i, b->size,
            b->file != NULL ? b->file : "?", b->line,
            file != NULL ? file : "?", line);
}

static const char *fail_part;          /* kch_fail_file() */

void kch_fail_file(const char *part)
{
    __atomic_store_n(&fail_part, part, __ATOMIC_RELEASE);
}

static void *hook_malloc(size_t num, const char *file, int line)
{
    const char *fail = __atomic_load_n(&fail_part, __ATOMIC_ACQUIRE);
    BLK *b;

    if (num == 0)
        return NULL;            /* as CRYPTO_malloc does */
    if (fail != NULL && file != NULL && strstr(file, fail) != NULL)
        return NULL;
    if ((b = malloc(HDR + num)) == NULL)
        return NULL;
    b->size = num;
    b->file = file;
    b->line = line;
    b->keycache = kch_keycache_file(file);
    b->prev = NULL;
    pthread_mutex_lock(&lock);
    b->next = live;
    if (live != NULL)
        live->prev = b;
    live = b;
    live_blocks++;
    live_bytes += num;
    pthread_mutex_unlock(&lock);
    return USER(b);
}

static void (*on_free)(int keycache);

void kch_on_free(void (*fn)(int keycache))
{
    __atomic_store_n(&on_free, fn, __ATOMIC_RELEASE);
}

static void hook_free(void *p, const char *file, int line)
{
    void (*fn)(int) = __atomic_load_n(&on_free, __ATOMIC_ACQUIRE);
    BLK *b;

    if (p == NULL)
        return;
    b = BLK_OF(p);
    if (fn != NULL)
        fn(b->keycache);
    pthread_mutex_lock(&lock);
    scan_dying(b, file, line);
    if (b->prev != NULL)
        b->prev->next = b->next;
    else
        live = b->next;
    if (b->next != NULL)
        b->next->prev = b->prev;
    live_blocks--;
    live_bytes -= b->size;
    pthread_mutex_unlock(&lock);
    free(b);
}

/* Always moves, so that the old block is scanned like any freed one. */
static void *hook_realloc(void *p, size_t num, const char *file, int line)
{
    unsigned char *q;

    if (p == NULL)
        return hook_malloc(num, file, line);
    if (num == 0) {
        hook_free(p, file, line);
        return NULL;
    }
    if ((q = hook_malloc(num, file, line)) == NULL)
        return NULL;
    BLK_OF(q)->keycache |= BLK_OF(p)->keycache;
    memcpy(q, p, BLK_OF(p)->size < num ? BLK_OF(p)->size : num);
    hook_free(p, file, line);
    return q;
}

int kch_install(void)
{
    if (!CRYPTO_set_mem_functions(hook_malloc, hook_realloc, hook_free)) {
        fprintf(stderr, "cannot install allocator hooks\n");
        return 0;
    }
    return 1;
}

void kch_watch(const void *v, size_t len, int n)
{
    pthread_mutex_lock(&lock);
    watched = v;
    watched_len = len;
    nwatched = v != NULL && len > 0 ? n : 0;
    pthread_mutex_unlock(&lock);
}

void kch_watch_new_keys(unsigned char *keys, size_t len, int n,
                        const char *mark, uint32_t seed)
{
    int k;

    for (k = 0; k < n; k++) {
        unsigned char *key = keys + (size_t)k * len;

        kct_fill(key, len, seed + (uint32_t)k);
        memcpy(key, mark, 5);
        key[5] = (unsigned char)k;
    }
    kch_watch(keys, len, n);
}

void kch_freed(unsigned long *kc, unsigned long *other)
{
    pthread_mutex_lock(&lock);
    if (kc != NULL)
        *kc = freed_kc;
    if (other != NULL)
        *other = freed_other;
    pthread_mutex_unlock(&lock);
}

unsigned long kch_live(const unsigned char *s, size_t len, int kc_only,
                       const char *say)
{
    unsigned long hits = 0;
    const BLK *b;

    pthread_mutex_lock(&lock);
    for (b = live; b != NULL; b = b->next) {
        if ((kc_only && !b->keycache) || !holds(USER(b), b->size, s, len))
            continue;
        hits++;
        if (say != NULL)
            fprintf(stderr, "\n  %s in a %zu-byte block from %s:%d", say,
                    b->size, b->file != NULL ? b->file : "?", b->line);
    }
    pthread_mutex_unlock(&lock);
    return hits;
}

void kch_counts(size_t *blocks, size_t *bytes)
{
    pthread_mutex_lock(&lock);
    if (blocks != NULL)
        *blocks = live_blocks;
    if (bytes != NULL)
        *bytes = live_bytes;
    pthread_mutex_unlock(&lock);
}

/*
 * Occurrences in p[0..n) of the piece masked[0..piece) (each byte ^ mask).
 * Plain loads, uninstrumented: the mappings include sanitizers' shadow and
 * redzones, which an instrumented load or an intercepted memchr() would
 * report or trip over.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define KCH_RAW_LOADS __attribute__((no_sanitize("address", "thread")))
#else
# define KCH_RAW_LOADS
#endif
KCH_RAW_LOADS
static unsigned long count_masked(const unsigned char *p, size_t n,
                                  const unsigned char *masked, size_t piece,
                                  unsigned char mask)
{
    const unsigned char first = masked[0] ^ mask;
    unsigned long hits = 0;
    size_t i, j;

    if (piece == 0 || n < piece)
        return 0;
    for (i = 0; i <= n - piece; i++) {
        if (p[i] != first)
            continue;
        for (j = 1; j < piece; j++)
            if (p[i + j] != (unsigned char)(masked[j] ^ mask))
                break;
        hits += j == piece;
    }
    return hits;
}

/*
 * Count over [lo, hi) through /proc/self/mem, a chunk at a time: a page
 * that cannot be read (glibc 2.42's MADV_GUARD_INSTALL stack guards sit
 * inside rw-p mappings and fault on a plain load) fails its pread and is
 * skipped instead of killing the test.  Chunks overlap by piece - 1 bytes,
 * so no match is missed or counted twice; the bounce buffer is a mapping
 * of its own, skipped and wiped.  The caller opens /proc/self/mem for
 * each scan: a descriptor kept across fork() would read the parent.
 */
#define KCH_CHUNK (64 * 1024)
static unsigned long count_region(int fd, uintptr_t lo, uintptr_t hi,
                                  const unsigned char *masked, size_t piece,
                                  unsigned char mask)
{
    static unsigned char *buf;
    unsigned long hits = 0;
    uintptr_t at;
    ssize_t got;

    if (buf == NULL) {
        void *m = mmap(NULL, KCH_CHUNK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED)
            return 0;
        buf = m;
    }
    for (at = lo; at < hi && hi - at >= piece;
         at += KCH_CHUNK - (piece - 1)) {
        size_t n = hi - at < KCH_CHUNK ? hi - at : KCH_CHUNK;

        if (at < (uintptr_t)buf + KCH_CHUNK && at + n > (uintptr_t)buf)
            continue;
        got = pread(fd, buf, n, (off_t)at);
        if (got > 0)
            hits += count_masked(buf, (size_t)got, masked, piece, mask);
        memset(buf, 0, KCH_CHUNK);
        if (n < KCH_CHUNK)
            break;
    }
    return hits;
}

unsigned long kch_mapped(const unsigned char *masked, size_t len,
                         unsigned char mask, const char *say)
{
    size_t piece = len < PIECE ? len : PIECE, off, i, npieces = 0;
    size_t offs[KCH_MAX_PIECES];
    unsigned long counts[KCH_MAX_PIECES] = { 0 }, best = 0, here;
    char line[512], perms[8];
    uintptr_t lo, hi;
    FILE *f;
    int fd;

    if (len == 0 || (f = fopen("/proc/self/maps", "r")) == NULL)
        return 0;
    if ((fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC)) < 0) {
        fclose(f);
        return 0;
    }
    for (off = 0; off + piece <= len && npieces < KCH_MAX_PIECES;
         off += piece)
        offs[npieces++] = off;
    if (len % piece != 0 && npieces < KCH_MAX_PIECES)
        offs[npieces++] = len - piece;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms)
                != 3
            || perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p'
            || hi <= lo || hi - lo > KCH_MAP_MAX)
            continue;
        for (i = 0, here = 0; i < npieces; i++) {
            unsigned long c = count_region(fd, lo, hi, masked + offs[i],
                                           piece, mask);

            counts[i] += c;
            here += c;
        }
        if (say != NULL && here != 0)
            fprintf(stderr, "\n  %s in %s", say, line);
    }
    fclose(f);
    close(fd);
    for (i = 0; i < npieces; i++)
        if (counts[i] > best)
            best = counts[i];
    return best;
}

/*
 * kch_mapped_many(): every mapping read once for all strings.  A piece is
 * found by its first byte (a table of the pieces starting with each byte
 * value) and then compared, unmasking as it goes, so the scan costs about
 * one pass whatever the number of strings.
 */
#define KCH_MANY_PIECES (KCH_MANY_MAX * KCH_MAX_PIECES)
typedef struct {
    const unsigned char *masked;        /* the piece, masked */
    size_t len;
    int str;                            /* its string */
    unsigned long count;
} KCH_PIECE;

KCH_RAW_LOADS
static void count_many(const unsigned char *p, size_t n, size_t starts,
                       KCH_PIECE *pc, const int *next, const int *head,
                       unsigned char mask)
{
    size_t i, j;
    int k;

    for (i = 0; i < starts && i < n; i++) {
        for (k = head[p[i]]; k >= 0; k = next[k]) {
            if (i + pc[k].len > n)
                continue;
            for (j = 1; j < pc[k].len; j++)
                if (p[i + j] != (unsigned char)(pc[k].masked[j] ^ mask))
                    break;
            pc[k].count += j == pc[k].len;
        }
    }
}

int kch_mapped_many(const unsigned char *const *masked, const size_t *lens,
                    int n, unsigned char mask, unsigned long *found,
                    const char *say)
{
    static KCH_PIECE pc[KCH_MANY_PIECES];
    static int next[KCH_MANY_PIECES];
    int head[256], npc = 0, s, k;
    unsigned long before[KCH_MANY_PIECES];
    size_t minlen = PIECE, maxlen = 0, off, piece;
    char line[512], perms[8];
    static unsigned char *buf;
    uintptr_t lo, hi, at;
    ssize_t got;
    FILE *f;
    int fd;

    if (n <= 0 || n > KCH_MANY_MAX)
        return 0;
    memset(head, -1, sizeof(head));
    for (s = 0; s < n; s++) {
        found[s] = 0;
        if (lens[s] == 0)
            continue;
        piece = lens[s] < PIECE ? lens[s] : PIECE;
        for (off = 0; ; off += piece) {
            int last = off + piece > lens[s];

            if (last)
                off = lens[s] - piece;
            if (npc == KCH_MANY_PIECES)
                return 0;
            pc[npc].masked = masked[s] + off;
            pc[npc].len = piece;
            pc[npc].str = s;
            pc[npc].count = 0;
            next[npc] = head[(unsigned char)(masked[s][off] ^ mask)];
            head[(unsigned char)(masked[s][off] ^ mask)] = npc++;
            if (last || off + piece == lens[s])
                break;
        }
        if (piece < minlen)
            minlen = piece;
        if (piece > maxlen)
            maxlen = piece;
    }
    if (npc == 0)
        return 1;
    if (buf == NULL) {
        void *m = mmap(NULL, KCH_CHUNK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED)
            return 0;
        buf = m;
    }
    if ((f = fopen("/proc/self/maps", "r")) == NULL)
        return 0;
    if ((fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC)) < 0) {
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long here = 0;

        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms)
                != 3
            || perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p'
            || hi <= lo || hi - lo > KCH_MAP_MAX)
            continue;
        for (k = 0; k < npc; k++)
            before[k] = pc[k].count;
        /* chunks overlap by the longest piece less one, as count_region's */
        for (at = lo; at < hi && hi - at >= minlen;
             at += KCH_CHUNK - (maxlen - 1)) {
            size_t len = hi - at < KCH_CHUNK ? hi - at : KCH_CHUNK;

            if (at < (uintptr_t)buf + KCH_CHUNK && at + len > (uintptr_t)buf)
                continue;
            got = pread(fd, buf, len, (off_t)at);
            /* a match starting in the overlap is the next chunk's */
            if (got > 0)
                count_many(buf, (size_t)got,
                           len == KCH_CHUNK && at + len < hi
                           ? KCH_CHUNK - (maxlen - 1) : (size_t)got,
                           pc, next, head, mask);
            memset(buf, 0, KCH_CHUNK);
            if (len < KCH_CHUNK)
                break;
        }
        for (k = 0; k < npc; k++)
            here += pc[k].count - before[k];
        if (say != NULL && here != 0)
            fprintf(stderr, "\n  %s in %s", say, line);
    }
    fclose(f);
    close(fd);
    for (k = 0; k < npc; k++)
        if (pc[k].count > found[pc[k].str])
            found[pc[k].str] = pc[k].count;
    return 1;
}

