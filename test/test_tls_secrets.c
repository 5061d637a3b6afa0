/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS secrets must not outlive their connection in keycache's cache.
 *
 * libssl and the default provider's KDFs key HMAC and AES-GCM contexts with
 * per-connection secrets; with keycache configured those keyed inits reach
 * keycache.  This program runs TLS 1.2 and 1.3 handshakes with client and
 * server in one process over a memory BIO pair, on the main thread, then
 * frees every SSL, SSL_SESSION and SSL_CTX and scans every live allocation
 * for the connection's secrets: master secret, key block (record MAC and
 * encryption keys, IVs), TLS 1.3 traffic and exporter secrets with their
 * record keys, IVs and finished keys, and for resumption the PSK and what
 * the early secret yields.  Secrets are captured through the public API
 * (SSL_SESSION_get_master_key, the keylog callback) and the rest derived
 * with the default provider's TLS1-PRF and TLS13-KDF in kct_default().
 *
 * main() installs kc_heap's allocator hooks before any other OpenSSL call,
 * so every block knows its size and allocating file.
 * Each case runs once with the default provider alone (the control) and
 * once in a library context freshly loaded from the keycache test config:
 * a new provider instance, so the main thread's cache starts empty and what
 * it holds afterwards came from that case alone.  Both must show no secret
 * in any live block.  A positive control then keys HMAC with one
 * application key forty times in the keycache context: it must hit, and
 * the scanner must find that key in a block keycache allocated.
 *
 * The server's session ticket keys live as long as its SSL_CTX and are used
 * for every ticket, as an application's own key would be; where they are
 * still found after SSL_CTX_free they are reported, not counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "kc_heap.h"
#include "kc_test.h"
#include "keycache.h"

/* ---------------------------------------------------------------------- */
/* Captured secrets and the scan                                          */

#define MAX_SECRETS 160
#define MAX_SECRET 64
#define MIN_SECRET 12           /* shorter ones (TLS 1.2 GCM salts) skipped */

typedef struct {
    char label[80];
    unsigned char v[MAX_SECRET];
    size_t len;
} SECRET;

typedef struct {
    SECRET s[MAX_SECRETS];
    int n;
} SECRETS;

/* static storage: the capture itself never shows up in the heap scan */
static SECRETS conn_secrets;        /* per connection: must be gone */
static SECRETS ctx_secrets;         /* server ticket keys: reported only */
static int conn_no;                 /* labels say which connection */

static void add_secret(SECRETS *set, const char *what,
                       const unsigned char *v, size_t len)
{
    int i;

    if (len < MIN_SECRET || len > MAX_SECRET)
        return;
    for (i = 0; i < set->n; i++)
        if (set->s[i].len == len && memcmp(set->s[i].v, v, len) == 0)
            return;                 /* both peers log the same secret */
    if (set->n == MAX_SECRETS) {
        fprintf(stderr, "\n  too many secrets, %s dropped\n", what);
        return;
    }
    if (conn_no > 0)
        snprintf(set->s[set->n].label, sizeof(set->s[0].label),
                 "conn %d %s", conn_no, what);
    else
        snprintf(set->s[set->n].label, sizeof(set->s[0].label), "%s", what);
    memcpy(set->s[set->n].v, v, len);
    set->s[set->n].len = len;
    set->n++;
}

/*
 * Live blocks holding any secret of |set|, one count per (block, secret);
 * each printed under |tag| with the file that allocated the block.
 * *in_kc counts the hits in blocks keycache's own code allocated.
 */
static unsigned long scan_live(const SECRETS *set, const char *tag,
                               unsigned long *in_kc)
{
    unsigned long hits = 0, kc = 0;
    char say[160];
    int i;

    for (i = 0; i < set->n; i++) {
        const SECRET *s = &set->s[i];

        if (tag != NULL)
            snprintf(say, sizeof(say), "%s: %s (%zu bytes)", tag, s->label,
                     s->len);
        hits += kch_live(s->v, s->len, 0, tag != NULL ? say : NULL);
        kc += kch_live(s->v, s->len, 1, NULL);
    }
    if (in_kc != NULL)
        *in_kc = kc;
    return hits;
}

/* ---------------------------------------------------------------------- */
/* Deriving the record keys with the default provider's KDFs              */

static int kdf(const char *name, OSSL_PARAM *params, unsigned char *out,
               size_t outlen)
{
    EVP_KDF *k = EVP_KDF_fetch(kct_default(), name, NULL);
    EVP_KDF_CTX *c = k != NULL ? EVP_KDF_CTX_new(k) : NULL;
    int ok = c != NULL && EVP_KDF_derive(c, out, outlen, params) > 0;

    EVP_KDF_CTX_free(c);
    EVP_KDF_free(k);
    return ok;
}

/* HKDF-Expand-Label(secret, label, context, outlen) of RFC 8446. */
static int expand_label(const char *md, const unsigned char *secret,
                        size_t seclen, const char *label,
                        const unsigned char *context, size_t ctxlen,
                        unsigned char *out, size_t outlen)
{
    int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    OSSL_PARAM p[7], *q = p;

    *q++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                            (char *)md, 0);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                             (void *)secret, seclen);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PREFIX,
                                             "tls13 ", 6);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_LABEL,
                                             (void *)label, strlen(label));
    if (ctxlen > 0)
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_DATA,
                                                 (void *)context, ctxlen);
    *q = OSSL_PARAM_construct_end();
    return kdf("TLS13-KDF", p, out, outlen);
}

/* HKDF-Extract(0, ikm): the TLS 1.3 early secret of a PSK. */
static int early_secret(const char *md, const unsigned char *psk,
                        size_t psklen, unsigned char *out, size_t outlen)
{
    int mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
    OSSL_PARAM p[4];

    p[0] = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    p[1] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                            (char *)md, 0);
    p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)psk,
                                             psklen);
    p[3] = OSSL_PARAM_construct_end();
    return kdf("TLS13-KDF", p, out, outlen);
}

/* The TLS 1.2 key block: PRF(master, "key expansion", sr || cr). */
static int key_block(const char *md, const unsigned char *master,
                     size_t mlen, const unsigned char *sr,
                     const unsigned char *cr, unsigned char *out,
                     size_t outlen)
{
    static const char label[] = "key expansion";
    unsigned char seed[sizeof(label) - 1 + 2 * SSL3_RANDOM_SIZE];
    OSSL_PARAM p[4];

    memcpy(seed, label, sizeof(label) - 1);
    memcpy(seed + sizeof(label) - 1, sr, SSL3_RANDOM_SIZE);
    memcpy(seed + sizeof(label) - 1 + SSL3_RANDOM_SIZE, cr,
           SSL3_RANDOM_SIZE);
    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                            (char *)md, 0);
    p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET,
                                             (void *)master, mlen);
    p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed,
                                             sizeof(seed));
    p[3] = OSSL_PARAM_construct_end();
    return kdf("TLS1-PRF", p, out, outlen);
}

/* Hash("") for Derive-Secret with no messages. */
static int empty_hash(const char *md, unsigned char *out, size_t *outlen)
{
    EVP_MD *m = EVP_MD_fetch(kct_default(), md, NULL);
    unsigned int l = 0;
    int ok = m != NULL && EVP_Digest("", 0, out, &l, m, NULL);

    EVP_MD_free(m);
    *outlen = l;
    return ok;
}

/* ---------------------------------------------------------------------- */
/* Capturing secrets through the public API                               */

static int derive_failures;

static int unhex_into(const char *hex, size_t n, unsigned char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n / 2; i++) {
        const char *hi = strchr(digits, hex[2 * i] | 0x20);
        const char *lo = strchr(digits, hex[2 * i + 1] | 0x20);

        if (hex[2 * i] == '\0' || hex[2 * i + 1] == '\0' || hi == NULL
            || lo == NULL)
            return 0;
        out[i] = (unsigned char)((hi - digits) << 4 | (lo - digits));
    }
    return 1;
}

/* "LABEL <client random> <secret>", from either peer. */
static void keylog_cb(const SSL *ssl, const char *line)
{
    unsigned char secret[MAX_SECRET];
    const char *sp1 = strchr(line, ' '), *sp2;
    char label[48];
    size_t hexlen;

    if (sp1 == NULL || (sp2 = strchr(sp1 + 1, ' ')) == NULL
        || (size_t)(sp1 - line) >= sizeof(label))
        return;
    hexlen = strlen(sp2 + 1);
    if (hexlen % 2 != 0 || hexlen / 2 > sizeof(secret)
        || !unhex_into(sp2 + 1, hexlen, secret)) {
        derive_failures++;
        return;
    }
    memcpy(label, line, (size_t)(sp1 - line));
    label[sp1 - line] = '\0';
    /* TLS 1.2 logs its master secret under the client random */
    add_secret(&conn_secrets, strcmp(label, "CLIENT_RANDOM") == 0
                              ? "master secret" : label,
               secret, hexlen / 2);
    OPENSSL_cleanse(secret, sizeof(secret));
}

/* The client's sessions: every TLS 1.3 ticket has its own PSK. */
static SSL_SESSION *last_session;

static int new_session_cb(SSL *ssl, SSL_SESSION *sess)
{
    unsigned char mk[MAX_SECRET];
    size_t len = SSL_SESSION_get_master_key(sess, mk, sizeof(mk));

    add_secret(&conn_secrets, SSL_version(ssl) == TLS1_3_VERSION
                              ? "ticket PSK" : "session master secret",
               mk, len);
    OPENSSL_cleanse(mk, sizeof(mk));
    SSL_SESSION_free(last_session);
    last_session = sess;
    return 1;                   /* we keep the reference */
}

/* TLS 1.2: the master secret and the key block derived from it. */
static void capture_tls12(SSL *c, size_t mac_len, size_t key_len,
                          size_t iv_len)
{
    static const char *const parts[] = {
        "client MAC key", "server MAC key", "client write key",
        "server write key", "client IV", "server IV"
    };
    const char *md = EVP_MD_get0_name(
        SSL_CIPHER_get_handshake_digest(SSL_get_current_cipher(c)));
    unsigned char master[SSL_MAX_MASTER_KEY_LENGTH];
    unsigned char cr[SSL3_RANDOM_SIZE], sr[SSL3_RANDOM_SIZE];
    unsigned char kb[2 * (64 + 32 + 16)];
    size_t lens[6], mlen, off = 0;
    int i;

    lens[0] = lens[1] = mac_len;
    lens[2] = lens[3] = key_len;
    lens[4] = lens[5] = iv_len;
    mlen = SSL_SESSION_get_master_key(SSL_get_session(c), master,
                                      sizeof(master));
    add_secret(&conn_secrets, "master secret", master, mlen);
    if (md == NULL
        || SSL_get_client_random(c, cr, sizeof(cr)) != sizeof(cr)
        || SSL_get_server_random(c, sr, sizeof(sr)) != sizeof(sr)
        || !key_block(md, master, mlen, sr, cr, kb,
                      2 * (mac_len + key_len + iv_len))) {
        derive_failures++;
        return;
    }
    for (i = 0; i < 6; off += lens[i], i++)
        if (lens[i] > 0)
            add_secret(&conn_secrets, parts[i], kb + off, lens[i]);
    OPENSSL_cleanse(master, sizeof(master));
    OPENSSL_cleanse(kb, sizeof(kb));
}

/* TLS 1.3: record keys, IVs and finished keys of the logged secrets. */
static void capture_tls13(SSL *c, int first)
{
    const SSL_CIPHER *ciph = SSL_get_current_cipher(c);
    const EVP_MD *md = SSL_CIPHER_get_handshake_digest(ciph);
    const EVP_CIPHER *ec =
        EVP_get_cipherbynid(SSL_CIPHER_get_cipher_nid(ciph));
    const char *mdname = md != NULL ? EVP_MD_get0_name(md) : NULL;
    size_t hlen = md != NULL ? (size_t)EVP_MD_get_size(md) : 0;
    size_t klen = ec != NULL ? (size_t)EVP_CIPHER_get_key_length(ec) : 0;
    unsigned char out[MAX_SECRET];
    char what[80];
    int i, n = conn_secrets.n;

    if (mdname == NULL || hlen == 0 || klen == 0) {
        derive_failures++;
        return;
    }
    /* the secrets this connection logged: "conn N LABEL" */
    for (i = first; i < n; i++) {
        const SECRET *s = &conn_secrets.s[i];
        const char *name = strchr(s->label + 5, ' ');

        if (name == NULL || strstr(name, "TRAFFIC_SECRET") == NULL)
            continue;
        name++;
        snprintf(what, sizeof(what), "%s key", name);
        if (!expand_label(mdname, s->v, s->len, "key", NULL, 0, out, klen))
            derive_failures++;
        else
            add_secret(&conn_secrets, what, out, klen);
        snprintf(what, sizeof(what), "%s iv", name);
        if (!expand_label(mdname, s->v, s->len, "iv", NULL, 0, out, 12))
            derive_failures++;
        else
            add_secret(&conn_secrets, what, out, 12);
        if (strstr(name, "HANDSHAKE") == NULL)
            continue;
        snprintf(what, sizeof(what), "%s finished key", name);
        if (!expand_label(mdname, s->v, s->len, "finished", NULL, 0, out,
                          hlen))
            derive_failures++;
        else
            add_secret(&conn_secrets, what, out, hlen);
    }
    OPENSSL_cleanse(out, sizeof(out));
}

/*
 * TLS 1.3 resumption: what the offered PSK yields before the handshake
 * secret - early secret, binder key and its finished key, and the salt of
 * the handshake secret's extract.
 */
static void capture_psk(const SSL_SESSION *sess)
{
    const char *md = EVP_MD_get0_name(
        SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(sess)));
    unsigned char psk[MAX_SECRET], early[EVP_MAX_MD_SIZE];
    unsigned char h0[EVP_MAX_MD_SIZE], out[EVP_MAX_MD_SIZE];
    unsigned char binder[EVP_MAX_MD_SIZE];
    size_t plen = SSL_SESSION_get_master_key(sess, psk, sizeof(psk)), hlen;

    add_secret(&conn_secrets, "resumption PSK", psk, plen);
    if (md == NULL || !empty_hash(md, h0, &hlen)
        || !early_secret(md, psk, plen, early, hlen)
        || !expand_label(md, early, hlen, "res binder", h0, hlen, binder,
                         hlen)
        || !expand_label(md, binder, hlen, "finished", NULL, 0, out, hlen)) {
        derive_failures++;
        return;
    }
    add_secret(&conn_secrets, "early secret", early, hlen);
    add_secret(&conn_secrets, "binder key", binder, hlen);
    add_secret(&conn_secrets, "binder finished key", out, hlen);
    if (!expand_label(md, early, hlen, "derived", h0, hlen, out, hlen))
        derive_failures++;
    else
        add_secret(&conn_secrets, "derived(early secret)", out, hlen);
    OPENSSL_cleanse(psk, sizeof(psk));
    OPENSSL_cleanse(early, sizeof(early));
    OPENSSL_cleanse(binder, sizeof(binder));
    OPENSSL_cleanse(out, sizeof(out));
}

/* ---------------------------------------------------------------------- */
/* Two peers in one process                                               */

typedef struct {
    const char *name;
    int version;                /* TLS1_2_VERSION or TLS1_3_VERSION */
    const char *cipher;         /* TLS 1.2 cipher list, or NULL */
    size_t mac_len, key_len, iv_len;    /* TLS 1.2 key block layout */
    int resume;                 /* later connections resume the first */
    const char *propq;          /* the SSL_CTXs' property query */
    int conns;                  /* connections (0: 1, or 2 with resume) */
} CASE;

typedef struct {
    EVP_PKEY *pkey;
    X509 *cert;
    SSL_CTX *sctx, *cctx;
} PEERS;

/* A throwaway self-signed ECDSA P-256 certificate. */
static int make_cert(OSSL_LIB_CTX *libctx, PEERS *p)
{
    /* built apart: OpenSSL 4 hands out a certificate's names const */
    X509_NAME *name = NULL;
    int ok;

    p->pkey = EVP_PKEY_Q_keygen(libctx, NULL, "EC", "P-256");
    p->cert = X509_new_ex(libctx, NULL);
    ok = p->pkey != NULL && p->cert != NULL
         && X509_set_version(p->cert, X509_VERSION_3)
         && ASN1_INTEGER_set(X509_get_serialNumber(p->cert), 1)
         && X509_gmtime_adj(X509_getm_notBefore(p->cert), 0) != NULL
         && X509_gmtime_adj(X509_getm_notAfter(p->cert), 3600) != NULL
         && X509_set_pubkey(p->cert, p->pkey)
         && (name = X509_NAME_new()) != NULL
         && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                       (const unsigned char *)"kc-test",
                                       -1, -1, 0)
         && X509_set_subject_name(p->cert, name)
         && X509_set_issuer_name(p->cert, name)
         && X509_sign(p->cert, p->pkey, EVP_sha256()) > 0;
    X509_NAME_free(name);
    return ok;
}

static SSL_CTX *new_ctx(OSSL_LIB_CTX *libctx, const CASE *tc, int server)
{
    SSL_CTX *c = SSL_CTX_new_ex(libctx, tc->propq, TLS_method());

    if (c == NULL
        || !SSL_CTX_set_min_proto_version(c, tc->version)
        || !SSL_CTX_set_max_proto_version(c, tc->version)
        || (tc->cipher != NULL && !SSL_CTX_set_cipher_list(c, tc->cipher))) {
        SSL_CTX_free(c);
        return NULL;
    }
    SSL_CTX_set_keylog_callback(c, keylog_cb);
    if (!tc->resume) {
        /* full handshakes only: no tickets, no session cache */
        SSL_CTX_set_options(c, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(c, 0);
        SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
    } else if (server) {
        /* stateless tickets: nothing kept by the server */
        SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
    } else {
        SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT
                                          | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(c, new_session_cb);
    }
    return c;
}

static int make_peers(OSSL_LIB_CTX *libctx, const CASE *tc, PEERS *p)
{
    memset(p, 0, sizeof(*p));
    return make_cert(libctx, p)
           && (p->sctx = new_ctx(libctx, tc, 1)) != NULL
           && (p->cctx = new_ctx(libctx, tc, 0)) != NULL
           && SSL_CTX_use_certificate(p->sctx, p->cert)
           && SSL_CTX_use_PrivateKey(p->sctx, p->pkey);
}

static void free_peers(PEERS *p)
{
    SSL_CTX_free(p->sctx);
    SSL_CTX_free(p->cctx);
    X509_free(p->cert);
    EVP_PKEY_free(p->pkey);
    memset(p, 0, sizeof(*p));
}

static int wants_io(SSL *s, int rc)
{
    int e = SSL_get_error(s, rc);

    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/* Handshake, then a request and a reply; 1 on success. */
static int connect_pair(SSL *c, SSL *s)
{
    static const char req[] = "GET /secret-scan HTTP/1.1\r\n\r\n";
    static const char rsp[] = "HTTP/1.1 204 No Content\r\n\r\n";
    char buf[256];
    int i, rc = 0, rs = 0;

    for (i = 0; i < 64 && (rc != 1 || rs != 1); i++) {
        if (rc != 1 && (rc = SSL_do_handshake(c)) <= 0 && !wants_io(c, rc))
            return 0;
        if (rs != 1 && (rs = SSL_do_handshake(s)) <= 0 && !wants_io(s, rs))
            return 0;
    }
    return rc == 1 && rs == 1
           && SSL_write(c, req, sizeof(req)) == (int)sizeof(req)
           && SSL_read(s, buf, sizeof(buf)) == (int)sizeof(req)
           && memcmp(buf, req, sizeof(req)) == 0
           && SSL_write(s, rsp, sizeof(rsp)) == (int)sizeof(rsp)
           && SSL_read(c, buf, sizeof(buf)) == (int)sizeof(rsp)
           && memcmp(buf, rsp, sizeof(rsp)) == 0;
}

/* One connection; |resume| offered by the client if given. */
static int one_connection(const CASE *tc, PEERS *p, SSL_SESSION *resume)
{
    SSL *c = SSL_new(p->cctx), *s = SSL_new(p->sctx);
    BIO *cb = NULL, *sb = NULL;
    int ok = 0, first = conn_secrets.n;

    conn_no++;
    if (c == NULL || s == NULL || !BIO_new_bio_pair(&cb, 0, &sb, 0))
        goto done;
    SSL_set_bio(c, cb, cb);
    SSL_set_bio(s, sb, sb);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    if (resume != NULL) {
        if (!SSL_set_session(c, resume))
            goto done;
        if (tc->version == TLS1_3_VERSION)
            capture_psk(resume);
    }

    if (!connect_pair(c, s)) {
        ERR_print_errors_fp(stderr);
        goto done;
    }
    CU_ASSERT_EQUAL(SSL_version(c), tc->version);
    CU_ASSERT_EQUAL(SSL_session_reused(c), resume != NULL);
    if (tc->cipher != NULL)
        CU_ASSERT_STRING_EQUAL(SSL_get_cipher_name(c), tc->cipher);
    if (tc->version == TLS1_2_VERSION) {
        capture_tls12(c, tc->mac_len, tc->key_len, tc->iv_len);
    } else {
        capture_tls13(c, first);
    }
    /* a clean close, or libssl marks the session not resumable */
    ok = SSL_shutdown(c) >= 0 && SSL_shutdown(s) >= 0;
done:
    SSL_free(c);
    SSL_free(s);
    return ok;
}

/* ---------------------------------------------------------------------- */
/* Counters                                                               */

typedef struct {
    uint64_t hits, misses, evictions, passthrough, entries;
} COUNTS;

static COUNTS counts(OSSL_LIB_CTX *ctx)
{
    COUNTS c;

    c.hits = kct_counter_in(ctx, KEYCACHE_PARAM_HITS);
    c.misses = kct_counter_in(ctx, KEYCACHE_PARAM_MISSES);
    c.evictions = kct_counter_in(ctx, KEYCACHE_PARAM_EVICTIONS);
    c.passthrough = kct_counter_in(ctx, KEYCACHE_PARAM_PASSTHROUGH);
    c.entries = kct_counter_in(ctx, KEYCACHE_PARAM_ENTRIES);
    return c;
}

static void print_counts(const COUNTS *a, const COUNTS *b, int conns)
{
    printf("\n  keycache per connection (%d): %.1f misses, %.1f hits,"
           " %.1f evictions, %.1f pass-through; %llu entries after ",
           conns, (double)(b->misses - a->misses) / conns,
           (double)(b->hits - a->hits) / conns,
           (double)(b->evictions - a->evictions) / conns,
           (double)(b->passthrough - a->passthrough) / conns,
           (unsigned long long)b->entries);
}

/*
 * Positive control: an application key used forty times is what keycache
 * is for.  It must hit, and the scanner must find it in keycache's blocks.
 */
static void positive_control(OSSL_LIB_CTX *ctx)
{
    static const unsigned char msg[] = "application message";
    unsigned char want[32], got[32];
    unsigned long in_kc = 0, hits;
    SECRETS *app = malloc(sizeof(*app));
    COUNTS before = counts(ctx), after;
    size_t l;
    int i, bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(app);
    app->n = 0;
    kct_fill(app->s[0].v, 32, 0xA99C0DE);
    memcpy(app->s[0].v, "KCAPPKEY", 8);
    app->s[0].len = 32;
    strcpy(app->s[0].label, "application HMAC key");
    app->n = 1;
    if (EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL, app->s[0].v,
                  32, msg, sizeof(msg), want, sizeof(want), &l) == NULL)
        bad++;
    for (i = 0; i < 40; i++)
        if (EVP_Q_mac(ctx, "HMAC", NULL, "SHA256", NULL, app->s[0].v, 32,
                      msg, sizeof(msg), got, sizeof(got), &l) == NULL
            || memcmp(got, want, sizeof(want)) != 0)
            bad++;
    after = counts(ctx);
    hits = scan_live(app, NULL, &in_kc);
    printf("\n  positive control: %llu hits of 40, key in %lu live blocks"
           " (%lu keycache's) ",
           (unsigned long long)(after.hits - before.hits), hits, in_kc);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(after.hits - before.hits >= 32);
    CU_ASSERT_TRUE(after.entries >= 1);
    CU_ASSERT_TRUE(in_kc >= 1);
    free(app);
}

/* ---------------------------------------------------------------------- */
/* The cases                                                              */

static const CASE tls12_gcm = {
    "TLS 1.2 ECDHE-ECDSA-AES128-GCM-SHA256", TLS1_2_VERSION,
    "ECDHE-ECDSA-AES128-GCM-SHA256", 0, 16, 4, 0, NULL, 0
};
static const CASE tls12_cbc = {
    "TLS 1.2 ECDHE-ECDSA-AES128-SHA256", TLS1_2_VERSION,
    "ECDHE-ECDSA-AES128-SHA256", 32, 16, 16, 0, NULL, 0
};
static const CASE tls12_resume = {
    "TLS 1.2 ticket resumption", TLS1_2_VERSION,
    "ECDHE-ECDSA-AES128-GCM-SHA256", 0, 16, 4, 1, NULL, 0
};
static const CASE tls13_full = {
    "TLS 1.3 full handshake", TLS1_3_VERSION, NULL, 0, 0, 0, 0, NULL, 0
};
static const CASE tls13_resume = {
    "TLS 1.3 resumption", TLS1_3_VERSION, NULL, 0, 0, 0, 1, NULL, 0
};

/*
 * SSL_CTXs fetched with a property query that names the default provider:
 * libssl then fetches the default's TLS1-PRF and TLS13-KDF, which key HMAC
 * in the application's library context without a query - and
 * default_properties sends that HMAC to keycache.  Four connections or
 * resumptions each: the TLS 1.2 master secret is keyed six times a
 * connection on this thread (three at each end), and a resumed one again
 * on every resumption.
 */
static const CASE tls12_pq_default = {
    "TLS 1.2, provider=default", TLS1_2_VERSION,
    "ECDHE-ECDSA-AES128-GCM-SHA256", 0, 16, 4, 0, "provider=default", 4
};
static const CASE tls12_pq_prefer = {
    "TLS 1.2 CBC, ?provider=default", TLS1_2_VERSION,
    "ECDHE-ECDSA-AES128-SHA256", 32, 16, 16, 0, "?provider=default", 4
};
static const CASE tls12_pq_not_kc = {
    "TLS 1.2, provider!=keycache", TLS1_2_VERSION,
    "ECDHE-ECDSA-AES128-GCM-SHA256", 0, 16, 4, 0, "provider!=keycache", 4
};
static const CASE tls12_pq_resume = {
    "TLS 1.2 resumed 4 times, provider=default", TLS1_2_VERSION,
    "ECDHE-ECDSA-AES128-GCM-SHA256", 0, 16, 4, 1, "provider=default", 5
};
static const CASE tls13_pq_full = {
    "TLS 1.3, provider=default", TLS1_3_VERSION, NULL, 0, 0, 0, 0,
    "provider=default", 4
};
static const CASE tls13_pq_resume = {
    "TLS 1.3 resumed 4 times, ?provider=default", TLS1_3_VERSION,
    NULL, 0, 0, 0, 1, "?provider=default", 5
};

/*
 * A context loaded from the keycache test config, with an empty cache and
 * the deployed admission policy (the test config caches a key at once, so
 * that the differential tests reach the cache from a key's second use).
 */
static OSSL_LIB_CTX *fresh_keycache(void)
{
    return kct_keycache_conf("-" KEYCACHE_CONF_ADMIT_AFTER "\n");
}

static void run_case(const CASE *tc, int with_keycache)
{
    OSSL_LIB_CTX *ctx = with_keycache ? fresh_keycache() : kct_default();
    unsigned long hits, in_kc = 0, tick_hits;
    unsigned char tick[80];
    COUNTS before, after;
    PEERS p;
    int conns = tc->conns > 0 ? tc->conns : tc->resume ? 2 : 1;
    int i, min_secrets;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    memset(&before, 0, sizeof(before));
    conn_secrets.n = ctx_secrets.n = 0;
    conn_no = 0;
    derive_failures = 0;
    if (with_keycache)
        before = counts(ctx);

    CU_ASSERT_TRUE_FATAL(make_peers(ctx, tc, &p));
    CU_ASSERT_TRUE(one_connection(tc, &p, NULL));
    for (i = 1; i < conns && !tc->resume; i++)
        CU_ASSERT_TRUE(one_connection(tc, &p, NULL));
    if (tc->resume) {
        /*
         * Every resumption offers the first session: one TLS 1.2 master
         * secret, or one TLS 1.3 ticket's PSK, keyed again and again.  (The
         * new-session callback may drop last_session meanwhile.)
         */
        SSL_SESSION *resume = last_session;

        CU_ASSERT_PTR_NOT_NULL_FATAL(resume);
        SSL_SESSION_up_ref(resume);
        for (i = 1; i < conns; i++) {
            CU_ASSERT_TRUE(one_connection(tc, &p, resume));
            /* a TLS 1.3 ticket is used once: resume with the newest */
            if (tc->version == TLS1_3_VERSION && last_session != NULL) {
                SSL_SESSION_free(resume);
                resume = last_session;
                SSL_SESSION_up_ref(resume);
            }
        }
        SSL_SESSION_free(resume);
        if (SSL_CTX_get_tlsext_ticket_keys(p.sctx, tick, sizeof(tick))
            == 1) {
            conn_no = 0;
            add_secret(&ctx_secrets, "server ticket HMAC key", tick + 16,
                       32);
            add_secret(&ctx_secrets, "server ticket AES key", tick + 48,
                       32);
        }
        OPENSSL_cleanse(tick, sizeof(tick));
    }
    SSL_SESSION_free(last_session);
    last_session = NULL;
    free_peers(&p);

    /* what was captured must be worth scanning for */
    CU_ASSERT_EQUAL(derive_failures, 0);
    if (tc->version == TLS1_2_VERSION)  /* master; MAC keys, keys, IVs */
        min_secrets = 1 + conns * (2 * (tc->mac_len > 0) + 2
                                   + 2 * (tc->iv_len >= MIN_SECRET));
    else    /* 4 traffic secrets, exporter, 4 keys, 4 IVs, 2 finished */
        min_secrets = 15 * conns;
    CU_ASSERT_TRUE(conn_secrets.n >= min_secrets);
    if (tc->resume)
        CU_ASSERT_EQUAL(ctx_secrets.n, 2);

    if (with_keycache) {
        after = counts(ctx);
        print_counts(&before, &after, conns);
    }
    hits = scan_live(&conn_secrets, "SECRET LEFT", &in_kc);
    tick_hits = scan_live(&ctx_secrets, "note", NULL);
    printf("\n  %d secrets: %lu (block, secret) hits in live blocks,"
           " %lu in keycache's own; ticket keys: %lu ", conn_secrets.n,
           hits, in_kc, tick_hits);
    CU_ASSERT_EQUAL(hits, 0);
    if (with_keycache) {
        /* libssl keyed everything: nothing of it is the application's */
        CU_ASSERT_EQUAL(after.entries, 0);
        positive_control(ctx);
        OSSL_LIB_CTX_free(ctx);
    }
}

static void t12_gcm_def(void) { run_case(&tls12_gcm, 0); }
static void t12_gcm_kc(void) { run_case(&tls12_gcm, 1); }
static void t12_cbc_def(void) { run_case(&tls12_cbc, 0); }
static void t12_cbc_kc(void) { run_case(&tls12_cbc, 1); }
static void t12_res_def(void) { run_case(&tls12_resume, 0); }
static void t12_res_kc(void) { run_case(&tls12_resume, 1); }
static void t13_full_def(void) { run_case(&tls13_full, 0); }
static void t13_full_kc(void) { run_case(&tls13_full, 1); }
static void t13_res_def(void) { run_case(&tls13_resume, 0); }
static void t13_res_kc(void) { run_case(&tls13_resume, 1); }
static void t12_pqd_def(void) { run_case(&tls12_pq_default, 0); }
static void t12_pqd_kc(void) { run_case(&tls12_pq_default, 1); }
static void t12_pqp_kc(void) { run_case(&tls12_pq_prefer, 1); }
static void t12_pqn_kc(void) { run_case(&tls12_pq_not_kc, 1); }
static void t12_pqr_def(void) { run_case(&tls12_pq_resume, 0); }
static void t12_pqr_kc(void) { run_case(&tls12_pq_resume, 1); }
static void t13_pqd_kc(void) { run_case(&tls13_pq_full, 1); }
static void t13_pqr_def(void) { run_case(&tls13_pq_resume, 0); }
static void t13_pqr_kc(void) { run_case(&tls13_pq_resume, 1); }

/* ---------------------------------------------------------------------- */
/* KDFs and DRBGs asked for by property query                             */

/*
 * The property queries under which an application gets the default's KDF
 * or DRBG itself, whose inner HMAC (or CMAC, KMAC) fetch has no query and so
 * resolves to keycache; NULL gets keycache's pass-through.
 */
static const char *const inner_queries[] = {
    "provider=default", "?provider=default", "provider!=keycache", NULL
};
#define N_INNER_QUERIES (sizeof(inner_queries) / sizeof(inner_queries[0]))

/* One derivation with |secret| where the KDF keys its MAC with it. */
static int derive_with(OSSL_LIB_CTX *ctx, const char *name, const char *pq,
                       const unsigned char *secret, size_t len)
{
    static unsigned char label[] = "label", info[] = "context", salt[] = "s";
    OSSL_PARAM params[8], *q = params;
    unsigned char out[64];
    EVP_KDF *k = EVP_KDF_fetch(ctx, name, pq);
    EVP_KDF_CTX *kc = k != NULL ? EVP_KDF_CTX_new(k) : NULL;
    unsigned int iter = 2;
    int ok;

    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256",
                                            0);
    if (strcmp(name, "TLS1-PRF") == 0) {
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET,
                                                 (void *)secret, len);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, label,
                                                 sizeof(label));
    } else if (strcmp(name, "KBKDF") == 0) {
        *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MAC, "HMAC", 0);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                                 (void *)secret, len);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, label,
                                                 sizeof(label));
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info,
                                                 sizeof(info));
    } else if (strcmp(name, "HKDF") == 0 || strcmp(name, "SSKDF") == 0) {
        /* HKDF-Extract and SSKDF's HMAC variant key HMAC with the salt */
        if (strcmp(name, "SSKDF") == 0)
            *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MAC,
                                                    "HMAC", 0);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                 (void *)secret, len);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, label,
                                                 sizeof(label));
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info,
                                                 sizeof(info));
    } else {                    /* PBKDF2 keys HMAC with the password */
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD,
                                                 (void *)secret, len);
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt,
                                                 sizeof(salt));
        *q++ = OSSL_PARAM_construct_uint(OSSL_KDF_PARAM_ITER, &iter);
    }
    *q = OSSL_PARAM_construct_end();
    ok = kc != NULL && EVP_KDF_derive(kc, out, sizeof(out), params) > 0;
    OPENSSL_cleanse(out, sizeof(out));
    EVP_KDF_CTX_free(kc);
    EVP_KDF_free(k);
    return ok;
}

/* An HMAC-DRBG instantiated, drawn from four times and freed. */
static int drbg_draws(OSSL_LIB_CTX *ctx, const char *pq)
{
    OSSL_PARAM params[3];
    unsigned char out[256];
    EVP_RAND *r = EVP_RAND_fetch(ctx, "HMAC-DRBG", pq);
    EVP_RAND_CTX *rc = r != NULL ? EVP_RAND_CTX_new(r, NULL) : NULL;
    int i, ok;

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_MAC, "HMAC",
                                                 0);
    params[1] = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST,
                                                 "SHA256", 0);
    params[2] = OSSL_PARAM_construct_end();
    ok = rc != NULL && EVP_RAND_instantiate(rc, 128, 0, NULL, 0, params);
    for (i = 0; ok && i < 4; i++)
        ok = EVP_RAND_generate(rc, out, sizeof(out), 128, 0, NULL, 0);
    OPENSSL_cleanse(out, sizeof(out));
    EVP_RAND_CTX_free(rc);
    EVP_RAND_free(r);
    return ok;
}

/*
 * Each KDF derives four times with one secret, and an HMAC-DRBG draws, under
 * every query, in a fresh keycache context.  Everything freed, the secret
 * is in no live block and keycache holds no entry.  The derivations must
 * work (a KDF that failed keyed nothing and would prove nothing).
 */
static void test_inner_kdfs(void)
{
    static const char *const kdfs[] = {
        "TLS1-PRF", "KBKDF", "HKDF", "SSKDF", "PBKDF2"
    };
    SECRETS *set = malloc(sizeof(*set));
    size_t k, q;
    int i;

    CU_ASSERT_PTR_NOT_NULL_FATAL(set);
    for (q = 0; q < N_INNER_QUERIES; q++) {
        const char *pq = inner_queries[q];
        OSSL_LIB_CTX *ctx = fresh_keycache();
        unsigned long hits, in_kc = 0;
        COUNTS before, after;
        int bad = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
        before = counts(ctx);
        set->n = 0;
        for (k = 0; k < sizeof(kdfs) / sizeof(kdfs[0]); k++) {
            SECRET *sc = &set->s[set->n++];

            kct_fill(sc->v, 32, 0x1DF00 + (uint32_t)(q * 16 + k));
            sc->len = 32;
            snprintf(sc->label, sizeof(sc->label), "%s secret, %s", kdfs[k],
                     pq != NULL ? pq : "no query");
            for (i = 0; i < 4; i++)
                bad += !derive_with(ctx, kdfs[k], pq, sc->v, sc->len);
        }
        bad += !drbg_draws(ctx, pq);
        after = counts(ctx);
        hits = scan_live(set, "SECRET LEFT", &in_kc);
        printf("\n  %s: %d failed, entries %llu, misses %llu, secrets in %lu"
               " live blocks ", pq != NULL ? pq : "no query", bad,
               (unsigned long long)after.entries,
               (unsigned long long)(after.misses - before.misses), hits);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(hits, 0);
        CU_ASSERT_EQUAL(after.entries, 0);
        CU_ASSERT_EQUAL(after.misses - before.misses, 0);
        positive_control(ctx);
        OSSL_LIB_CTX_free(ctx);
    }
    free(set);
}

/*
 * A key that lives in one context is not reused: an application that keys
 * one HMAC, CMAC or AES-256-GCM context again and again with one key (as a
 * DRBG does with its K) gets no entry, and the key is in none of
 * keycache's blocks.  Re-keying must still work as the default's.  At
 * admit_after = 2, the least that can tell: a context that counted its key
 * again at its second keying would have it admitted.
 */
static void test_one_context(void)
{
    static const unsigned char msg[] = "message";
    OSSL_LIB_CTX *ctx = kct_keycache_conf("-" KEYCACHE_CONF_ADMIT_AFTER "\n"
                                          KEYCACHE_CONF_ADMIT_AFTER " = 2\n");
    SECRETS *set = malloc(sizeof(*set));
    OSSL_PARAM hp[2], cp[2];
    unsigned char want[32], got[32], iv[12] = { 0 };
    EVP_MAC *hmac, *cmac;
    EVP_MAC_CTX *h, *m;
    EVP_CIPHER *gcm;
    EVP_CIPHER_CTX *g;
    unsigned long in_kc = 0;
    COUNTS before, after;
    size_t l;
    int i, n, bad = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(set);
    for (i = 0; i < 3; i++) {
        kct_fill(set->s[i].v, 32, 0x0C7E0 + i);
        set->s[i].len = 32;
    }
    strcpy(set->s[0].label, "HMAC key of one context");
    strcpy(set->s[1].label, "CMAC key of one context");
    strcpy(set->s[2].label, "AES-256-GCM key of one context");
    set->n = 3;
    hp[0] = OSSL_PARAM_construct_utf8_string("digest", "SHA256", 0);
    cp[0] = OSSL_PARAM_construct_utf8_string("cipher", "AES-256-CBC", 0);
    hp[1] = cp[1] = OSSL_PARAM_construct_end();
    if (EVP_Q_mac(kct_default(), "HMAC", NULL, "SHA256", NULL, set->s[0].v,
                  32, msg, sizeof(msg), want, sizeof(want), &l) == NULL)
        bad++;
    before = counts(ctx);
    hmac = EVP_MAC_fetch(ctx, "HMAC", NULL);
    cmac = EVP_MAC_fetch(ctx, "CMAC", NULL);
    gcm = EVP_CIPHER_fetch(ctx, "AES-256-GCM", NULL);
    h = hmac != NULL ? EVP_MAC_CTX_new(hmac) : NULL;
    m = cmac != NULL ? EVP_MAC_CTX_new(cmac) : NULL;
    g = EVP_CIPHER_CTX_new();
    CU_ASSERT_FATAL(h != NULL && m != NULL && gcm != NULL && g != NULL);
    for (i = 0; i < 12; i++) {
        if (!EVP_MAC_init(h, set->s[0].v, 32, hp)
            || !EVP_MAC_update(h, msg, sizeof(msg))
            || !EVP_MAC_final(h, got, &l, sizeof(got))
            || memcmp(got, want, sizeof(want)) != 0)
            bad++;
        if (!EVP_MAC_init(m, set->s[1].v, 32, cp)
            || !EVP_MAC_update(m, msg, sizeof(msg))
            || !EVP_MAC_final(m, got, &l, sizeof(got)))
            bad++;
        /* the cipher once: EVP makes a new provider context for each */
        if (!EVP_EncryptInit_ex(g, i == 0 ? gcm : NULL, NULL, set->s[2].v,
                                iv)
            || !EVP_EncryptUpdate(g, got, &n, msg, sizeof(msg))
            || !EVP_EncryptFinal_ex(g, got, &n))
            bad++;
    }
    EVP_MAC_CTX_free(h);
    EVP_MAC_CTX_free(m);
    EVP_CIPHER_CTX_free(g);
    EVP_MAC_free(hmac);
    EVP_MAC_free(cmac);
    EVP_CIPHER_free(gcm);
    after = counts(ctx);
    printf("\n  one context keyed 12 times each: entries %llu, misses %llu,"
           " keys in %lu of keycache's blocks ",
           (unsigned long long)after.entries,
           (unsigned long long)(after.misses - before.misses),
           (scan_live(set, "KEY LEFT", &in_kc), in_kc));
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(after.entries, 0);
    CU_ASSERT_EQUAL(after.misses - before.misses, 0);
    CU_ASSERT_EQUAL(in_kc, 0);
    positive_control(ctx);
    OSSL_LIB_CTX_free(ctx);
    free(set);
}

/* Hits in ctx from five keyings by fn with a key of its own. */
static uint64_t hits_of(OSSL_LIB_CTX *ctx, int (*fn)(OSSL_LIB_CTX *, int))
{
    uint64_t before = counts(ctx).hits;
    int i, bad = 0;

    for (i = 0; i < 5; i++)
        bad += !fn(ctx, i);
    CU_ASSERT_EQUAL(bad, 0);
    return counts(ctx).hits - before;
}

static const unsigned char entry_key[32] = "application entry point key....";

static int by_digestsign(OSSL_LIB_CTX *ctx, int i)
{
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key_ex(ctx, "HMAC", NULL,
                                                  entry_key, 32);
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    unsigned char out[32];
    size_t l = sizeof(out);
    int ok = k != NULL && m != NULL
             && (i % 2 == 0
                 ? EVP_DigestSignInit_ex(m, NULL, "SHA256", ctx, NULL, k,
                                         NULL)
                 : EVP_DigestSignInit(m, NULL, EVP_sha256(), NULL, k))
             && EVP_DigestSign(m, out, &l, entry_key, 7);

    EVP_MD_CTX_free(m);
    EVP_PKEY_free(k);
    return ok;
}

static int by_cipherinit(OSSL_LIB_CTX *ctx, int i)
{
    static const unsigned char iv[12];
    EVP_CIPHER *g = EVP_CIPHER_fetch(ctx, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int ok = g != NULL && c != NULL
             && (i % 2 == 0 ? EVP_CipherInit(c, g, entry_key, iv, 1)
                            : EVP_EncryptInit(c, g, entry_key, iv));

    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(g);
    return ok;
}

/* The default's own AES-SIV keys CMAC with half of its key. */
static int by_default_siv(OSSL_LIB_CTX *ctx, int i)
{
    EVP_CIPHER *v = EVP_CIPHER_fetch(ctx, "AES-128-SIV", "provider=default");
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int ok = v != NULL && c != NULL
             && EVP_EncryptInit_ex(c, v, NULL, entry_key, NULL);

    EVP_CIPHER_CTX_free(c);
    EVP_CIPHER_free(v);
    return ok;
}

/*
 * Each of the application's entry points that the admission check lists
 * is admitted (a dropped one would cost the program its hits), and a key
 * a default cipher keys a keycache MAC with under the application's
 * EVP_EncryptInit_ex is not.
 */
static void test_entry_points(void)
{
    OSSL_LIB_CTX *ctx = kct_keycache_conf("aes_gcm = on\n");
    uint64_t before;

    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
    CU_ASSERT_TRUE(hits_of(ctx, by_digestsign) >= 2);
    CU_ASSERT_TRUE(hits_of(ctx, by_cipherinit) >= 2);
    before = counts(ctx).entries;
    CU_ASSERT_EQUAL(hits_of(ctx, by_default_siv), 0);
    CU_ASSERT_EQUAL(counts(ctx).entries, before);
    OSSL_LIB_CTX_free(ctx);
}

/* The scanner finds a secret, whole or in part, in a live block. */
static void test_scanner(void)
{
    SECRETS *set = malloc(sizeof(*set));
    unsigned char *p = OPENSSL_malloc(200);
    unsigned long in_kc = 1;

    CU_ASSERT_PTR_NOT_NULL_FATAL(set);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    set->n = 2;
    kct_fill(set->s[0].v, 48, 0x5EC0);
    set->s[0].len = 48;
    strcpy(set->s[0].label, "48-byte secret");
    kct_fill(set->s[1].v, 12, 0x5EC1);
    set->s[1].len = 12;
    strcpy(set->s[1].label, "12-byte secret");
    memset(p, 0, 200);
    CU_ASSERT_EQUAL(scan_live(set, NULL, NULL), 0);
    /* the tail of the first secret at an odd offset */
    memcpy(p + 61, set->s[0].v + 32, 16);
    CU_ASSERT_EQUAL(scan_live(set, NULL, &in_kc), 1);
    CU_ASSERT_EQUAL(in_kc, 0);      /* this file is not keycache's */
    memcpy(p + 3, set->s[1].v, 12);
    CU_ASSERT_EQUAL(scan_live(set, NULL, NULL), 2);
    OPENSSL_free(p);
    CU_ASSERT_EQUAL(scan_live(set, NULL, NULL), 0);
    CU_ASSERT_TRUE(kch_keycache_file("/usr/src/keycache/provider/cache/store.c"));
    CU_ASSERT_FALSE(
        kch_keycache_file("providers/implementations/macs/hmac.c"));
    free(set);
}

static void add_suites(void)
{
    CU_pSuite s = CU_add_suite("tls_secrets", NULL, NULL);

    CU_add_test(s, "the scanner finds secrets", test_scanner);
    CU_add_test(s, "TLS 1.2 GCM, default (control)", t12_gcm_def);
    CU_add_test(s, "TLS 1.2 GCM, keycache", t12_gcm_kc);
    CU_add_test(s, "TLS 1.2 CBC-SHA256, default (control)", t12_cbc_def);
    CU_add_test(s, "TLS 1.2 CBC-SHA256, keycache", t12_cbc_kc);
    CU_add_test(s, "TLS 1.2 ticket resumption, default (control)",
                t12_res_def);
    CU_add_test(s, "TLS 1.2 ticket resumption, keycache", t12_res_kc);
    CU_add_test(s, "TLS 1.3 full, default (control)", t13_full_def);
    CU_add_test(s, "TLS 1.3 full, keycache", t13_full_kc);
    CU_add_test(s, "TLS 1.3 resumption, default (control)", t13_res_def);
    CU_add_test(s, "TLS 1.3 resumption, keycache", t13_res_kc);
    CU_add_test(s, "a key of one context, keycache", test_one_context);
    CU_add_test(s, "the application's entry points, keycache",
                test_entry_points);
    CU_add_test(s, "KDFs and HMAC-DRBG under property queries, keycache",
                test_inner_kdfs);
    CU_add_test(s, "TLS 1.2 provider=default, default (control)",
                t12_pqd_def);
    CU_add_test(s, "TLS 1.2 provider=default, keycache", t12_pqd_kc);
    CU_add_test(s, "TLS 1.2 CBC ?provider=default, keycache", t12_pqp_kc);
    CU_add_test(s, "TLS 1.2 provider!=keycache, keycache", t12_pqn_kc);
    CU_add_test(s, "TLS 1.2 resumed, provider=default, default (control)",
                t12_pqr_def);
    CU_add_test(s, "TLS 1.2 resumed, provider=default, keycache",
                t12_pqr_kc);
    CU_add_test(s, "TLS 1.3 provider=default, keycache", t13_pqd_kc);
    CU_add_test(s, "TLS 1.3 resumed, ?provider=default, default (control)",
                t13_pqr_def);
    CU_add_test(s, "TLS 1.3 resumed, ?provider=default, keycache",
                t13_pqr_kc);
}

int main(int argc, char **argv)
{
    /* before anything else allocates through OpenSSL */
    if (!kch_install())
        return 1;
    return kct_main(argc, argv, add_suites);
}
