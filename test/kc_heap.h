/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap as OpenSSL's allocator sees it, for tests that look for key
 * material left behind in memory.
 *
 * kch_install() replaces OpenSSL's allocator (CRYPTO_set_mem_functions), so
 * it must run in main() before any other OpenSSL call.  From then on every
 * block remembers its size, the file and line that allocated it (the file
 * argument OPENSSL_malloc passes names the caller) and whether that file is
 * one of keycache's own sources; a block keycache allocated stays keycache's
 * when other code reallocates it.
 *
 * A byte string is "in" a block when one of its 16-byte pieces (at offsets
 * 0, 16, ... and its last 16 bytes; all of a shorter string) is, so a copy
 * cut short or a key split over two fields is found too.
 */
#ifndef KC_HEAP_H
#define KC_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* Install the allocator hooks; 0 (and a message) on failure. */
int kch_install(void);

/*
 * From now on every allocation whose file argument contains |part| fails
 * (NULL: none fails), to see a path out on allocation failure.
 */
void kch_fail_file(const char *part);

/* Is |file| (an allocation's file argument) one of keycache's sources? */
int kch_keycache_file(const char *file);

/*
 * Look for |n| strings of |len| bytes each, at v, v + len, ..., in every
 * block freed from now on (n = 0: stop looking).  The strings must keep
 * their bytes while watched, and be watched only once they hold them: a
 * string still all zero is "in" every zeroed block.  A hit in a keycache
 * block is a violation, one in any other block a note; both are printed.
 */
void kch_watch(const void *v, size_t len, int n);

/*
 * Fill |n| test keys of |len| bytes at |keys| with bytes no other data has
 * (the 5-character |mark|, the key's number, then pseudo-random bytes from
 * |seed|) and watch them.
 */
void kch_watch_new_keys(unsigned char *keys, size_t len, int n,
                        const char *mark, uint32_t seed);

/*
 * Call |fn| (NULL: nothing) with each block about to be freed, before any
 * lock of the allocator's is taken: 1 if it is a keycache block.
 */
void kch_on_free(void (*fn)(int keycache));

/* Blocks freed so far holding a watched string: keycache's and others'. */
void kch_freed(unsigned long *kc, unsigned long *other);

/*
 * Live blocks holding |s| (len bytes), of keycache's blocks only if
 * |kc_only|.  With |say|, each is printed as "<say> in a N-byte block from
 * file:line".
 */
unsigned long kch_live(const unsigned char *s, size_t len, int kc_only,
                       const char *say);

/* Number of live blocks and their bytes (either pointer may be NULL). */
void kch_counts(size_t *blocks, size_t *bytes);

/*
 * The whole process rather than OpenSSL's heap: every private writable
 * mapping of /proc/self/maps (heap, stacks of threads dead or alive, data
 * segments; none larger than KCH_MAP_MAX, which only sanitizers' shadow
 * memory is) is searched for the pieces of a |len|-byte string kept only
 * masked: |masked| holds each byte XOR |mask|, and the string's bytes are
 * computed one at a time while comparing, so the scan itself puts no copy
 * in memory.  Needs no allocator hooks.  Returns how often the piece seen
 * most often occurs (a whole copy counts once); with |say|, each mapping
 * that holds a piece is printed as "<say> in <its maps line>".
 */
#define KCH_MAP_MAX ((size_t)1 << 30)
unsigned long kch_mapped(const unsigned char *masked, size_t len,
                         unsigned char mask, const char *say);

/*
 * The same for |n| strings at once (masked[i], lens[i] bytes each, up to
 * KCH_MANY_MAX of them), every mapping read once: found[i] is what
 * kch_mapped() would return for string i.  With |say|, each mapping that
 * holds a piece of any is printed.  1 on success.
 */
#define KCH_MANY_MAX 32
int kch_mapped_many(const unsigned char *const *masked, const size_t *lens,
                    int n, unsigned char mask, unsigned long *found,
                    const char *say);

#endif
