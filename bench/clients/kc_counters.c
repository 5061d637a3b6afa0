/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kc_counters.so - print keycache's counters when an unchanged program exits.
 *
 *   LD_PRELOAD=kc_counters.so KC_COUNTERS_FILE=out.txt ruby app.rb
 *
 * At exit it looks for the keycache provider in the default library context
 * (the one unchanged programs use) and appends one line to $KC_COUNTERS_FILE
 * (stderr if unset):
 *
 *   keycache-counters pid=123 hits=1 misses=2 passthrough=3 evictions=4
 *                     entries=5   (on one line)
 *
 * or "keycache-counters pid=123 not-loaded" when no keycache is active there.
 * The client bench and test use it with KC_COUNTERS=preload (see
 * kc_clients_counters_env() in common.sh); by default they read the
 * provider's own KEYCACHE_DEBUG report instead.  This library works with a
 * keycache that has no KEYCACHE_DEBUG, and checks that report independently.
 *
 * The report must run before OpenSSL's own atexit handler unloads the
 * providers.  Exit handlers run last-registered first and ELF destructors run
 * after all of them, so a destructor would be too late: the constructor makes
 * libcrypto register its handler now and then registers the report after
 * it.  It asks for OPENSSL_INIT_ATFORK, which does nothing on POSIX threads
 * but, unlike no option at all, is not skipped: libcrypto then runs its base
 * initialisation and registers its exit handler, and reads no config.
 *
 * In a program that carries its own libcrypto and exports its symbols (the
 * nodesource node binary), this library's calls bind to that copy, which is
 * the one the program's keycache lives in.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "keycache.h"

/* Taken at start: some programs (PHP) change their environment by exit. */
static char *out_path;

static int find_keycache(OSSL_PROVIDER *prov, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(prov), KEYCACHE_PROVIDER_NAME) != 0)
        return 1;
    *(OSSL_PROVIDER **)arg = prov;
    return 0;
}

static void report(void)
{
    OSSL_PROVIDER *kc = NULL;
    uint64_t hits = 0, misses = 0, pass = 0, evict = 0, entries = 0;
    OSSL_PARAM p[6];
    FILE *out = stderr;

    if (out_path != NULL && (out = fopen(out_path, "a")) == NULL)
        return;
    OSSL_PROVIDER_do_all(NULL, find_keycache, &kc);
    p[0] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_HITS, &hits);
    p[1] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_MISSES, &misses);
    p[2] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_PASSTHROUGH, &pass);
    p[3] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_EVICTIONS, &evict);
    p[4] = OSSL_PARAM_construct_uint64(KEYCACHE_PARAM_ENTRIES, &entries);
    p[5] = OSSL_PARAM_construct_end();
    if (kc == NULL || !OSSL_PROVIDER_get_params(kc, p))
        fprintf(out, "keycache-counters pid=%ld not-loaded\n", (long)getpid());
    else
        fprintf(out, "keycache-counters pid=%ld hits=%" PRIu64 " misses=%"
                PRIu64 " passthrough=%" PRIu64 " evictions=%" PRIu64
                " entries=%" PRIu64 "\n", (long)getpid(), hits, misses, pass,
                evict, entries);
    if (out != stderr)
        fclose(out);
}

__attribute__((constructor))
static void kc_counters_init(void)
{
    const char *path = getenv("KC_COUNTERS_FILE");

    if (path != NULL && *path != '\0' && (out_path = strdup(path)) == NULL)
        return;
    if (OPENSSL_init_crypto(OPENSSL_INIT_ATFORK, NULL))
        atexit(report);
}
