/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache - public names for the keycache OpenSSL 3 provider.
 *
 * Applications never need this header to benefit from keycache; it is for
 * operators' tooling and tests that read counters or write configs.
 */
#ifndef KEYCACHE_H
#define KEYCACHE_H

/* Provider name, as used in openssl.cnf and OSSL_PROVIDER_load(). */
#define KEYCACHE_PROVIDER_NAME "keycache"

/*
 * Configuration keys, read from the provider's openssl.cnf section:
 *
 *   [keycache_sect]
 *   module     = /usr/lib/x86_64-linux-gnu/ossl-modules/keycache.so
 *   activate   = 1
 *   cache_size = 64     # cached keys per thread (0 disables caching)
 *   hmac       = on     # off: HMAC is not offered; default serves it
 *   aes_gcm    = auto   # on, off, or auto: on for OpenSSL 3.0 only
 *   cmac       = auto   # CMAC with AES-CBC: on, off or auto
 *   gmac       = auto   # GMAC with AES-GCM: on, off or auto
 *   kmac       = auto   # KMAC128 and KMAC256: on, off or auto
 *   idle_ttl   = 0      # seconds an unused entry may live; 0 = no limit
 *   admit_after = 3     # a key is cached from its Nth keyed init on
 *   prefer     = off    # if_unset: set default_properties =
 *                       # ?provider=keycache at start if none are in force
 */
#define KEYCACHE_CONF_CACHE_SIZE "cache_size"
#define KEYCACHE_CONF_HMAC       "hmac"
#define KEYCACHE_CONF_AES_GCM    "aes_gcm"
#define KEYCACHE_CONF_CMAC       "cmac"
#define KEYCACHE_CONF_GMAC       "gmac"
#define KEYCACHE_CONF_KMAC       "kmac"
#define KEYCACHE_CONF_AES_OCB    "aes_ocb"
#define KEYCACHE_CONF_AES_SIV    "aes_siv"
#define KEYCACHE_CONF_IDLE_TTL   "idle_ttl"
#define KEYCACHE_CONF_ADMIT_AFTER "admit_after"
#define KEYCACHE_CONF_PREFER     "prefer"
#define KEYCACHE_CONF_QUIRK_TABLE "quirk_table"

#define KEYCACHE_DEFAULT_CACHE_SIZE 64
#define KEYCACHE_MAX_CACHE_SIZE     4096
/*
 * Keyed inits a key needs before it is cached: a key OpenSSL derives for
 * one connection is seen once at each end and so never stored.
 */
#define KEYCACHE_DEFAULT_ADMIT_AFTER 3
#define KEYCACHE_MAX_ADMIT_AFTER     16
/*
 * Longer keys pass straight through, but for an HMAC key longer than its
 * digest's block: HMAC keys with that key's digest, which is cached.
 */
#define KEYCACHE_MAX_KEY_LEN        128

/*
 * Counters, read with OSSL_PROVIDER_get_params() as OSSL_PARAM_UNSIGNED_INTEGER
 * (uint64_t).  They sum over all threads of the process, live and exited.
 *
 *   hits         keyed init served from a cached key schedule
 *   misses       keyed init that had to expand the key (entry then cached)
 *   evictions    entries dropped to make room, by idle_ttl, or at thread exit
 *   passthrough  operations served uncached (key too long, unusual
 *                parameters such as TLS ones, cache_size 0); counted by the
 *                thread that runs them, if it has used keycache before.
 *                An algorithm switched off is not served by keycache at all.
 *   entries      entries currently cached across all threads
 */
#define KEYCACHE_PARAM_HITS        "keycache-hits"
#define KEYCACHE_PARAM_MISSES      "keycache-misses"
#define KEYCACHE_PARAM_EVICTIONS   "keycache-evictions"
#define KEYCACHE_PARAM_PASSTHROUGH "keycache-passthrough"
#define KEYCACHE_PARAM_ENTRIES     "keycache-entries"
/* The effective cache_size, for checking that a config was picked up. */
#define KEYCACHE_PARAM_CACHE_SIZE  "keycache-cache-size"

#endif
