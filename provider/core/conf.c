/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keycache's configuration: its section's values, checked, and the names
 * of the default config file asked about, so that a misspelt key stops
 * keycache with its reason rather than being ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/conf.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "core/core.h"

/* the spellings OpenSSL takes for its own switches, in any case */
#define KC_BOOL_WORDS "on or off (also yes/no, true/false, 1/0)"

static int parse_bool(const char *v, int *out)
{
    if (strcasecmp(v, "on") == 0 || strcasecmp(v, "yes") == 0
        || strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = 1;
    else if (strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0
             || strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = 0;
    else
        return 0;
    return 1;
}

/* A plain decimal number: no sign, no spaces, no suffix. */
static int parse_uint(const char *v, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long n;

    if (*v < '0' || *v > '9')
        return 0;
    n = strtoull(v, &end, 10);
    if (*end != '\0' || n > max)
        return 0;
    *out = n;
    return 1;
}

/* keycache's own keys, and those OpenSSL's config module takes itself */
static const char *const our_keys[] = {
    KEYCACHE_CONF_CACHE_SIZE, KEYCACHE_CONF_HMAC, KEYCACHE_CONF_AES_GCM,
    KEYCACHE_CONF_IDLE_TTL, KEYCACHE_CONF_ADMIT_AFTER, KEYCACHE_CONF_CMAC,
    KEYCACHE_CONF_GMAC, KEYCACHE_CONF_KMAC, KEYCACHE_CONF_AES_OCB,
    KEYCACHE_CONF_AES_SIV, KEYCACHE_CONF_PREFER, KEYCACHE_CONF_QUIRK_TABLE,
    NULL
};
static const char *const core_keys[] = {
    "module", "activate", "identity", "soft_load", NULL
};
/* what the core answers itself, unless the section says otherwise */
static const char *const core_answers[] = {
    OSSL_PROV_PARAM_CORE_VERSION, OSSL_PROV_PARAM_CORE_PROV_NAME,
    OSSL_PROV_PARAM_CORE_MODULE_FILENAME, NULL
};
#define KC_KEYS_TEXT "cache_size, hmac, aes_gcm, idle_ttl, admit_after, " \
    "cmac, gmac, kmac, aes_ocb, aes_siv, prefer, quirk_table (and " \
    "OpenSSL's module, activate, identity, soft_load)"
/* how far nested sections are followed; names asked about per call */
#define KC_CONF_DEPTH 3
#define KC_CONF_BATCH 32
#define KC_CONF_NAME 128

/* A key as the core's config module reads it: after its first dot. */
static const char *skip_dot(const char *name)
{
    const char *dot = strchr(name, '.');

    return dot != NULL ? dot + 1 : name;
}

/*
 * The core takes module, activate, identity and soft_load from the top of
 * the section only (after a dot, as it reads them); a nested one
 * ("tuning.module") is a parameter like any other, and unknown.
 */
static int is_known_key(const char *name, int top)
{
    return kc_name_in_list(our_keys, name)
           || (top && kc_name_in_list(core_keys, skip_dot(name)));
}

/* names to ask the core about, a batch at a time: the scan allocates none */
typedef struct {
    KC_PROVCTX *pctx;
    OSSL_FUNC_core_get_params_fn *get;
    const char *file;
    int unknown;              /* the core knew one of them */
    size_t n;
    char name[KC_CONF_BATCH][KC_CONF_NAME];
} KC_KEYSCAN;

static void scan_flush(KC_KEYSCAN *ks)
{
    OSSL_PARAM p[KC_CONF_BATCH + 1];
    char *val[KC_CONF_BATCH];
    size_t i;

    for (i = 0; i < ks->n; i++) {
        val[i] = NULL;
        p[i] = OSSL_PARAM_construct_utf8_ptr(ks->name[i], &val[i], 0);
    }
    p[ks->n] = OSSL_PARAM_construct_end();
    if (ks->n > 0 && ks->get(ks->pctx->handle, p))
        for (i = 0; i < ks->n; i++) {
            if (val[i] == NULL)
                continue;
            kc_raise(ks->pctx, KC_R_BAD_CONFIG, "unknown key \"%s\" in %s's "
                     "section of %s; keycache knows " KC_KEYS_TEXT,
                     ks->name[i], ks->pctx->name, ks->file);
            ks->unknown = 1;
        }
    ks->n = 0;
}

/*
 * "prefix.key" (or key) into out[KC_CONF_NAME]; 0 if too long.  Not
 * snprintf(): a config has dozens of names, and every process starts here.
 */
static int join_name(char *out, const char *prefix, const char *key)
{
    size_t p = prefix != NULL ? strlen(prefix) : 0, k = strlen(key);

    if (p + (p != 0) + k >= KC_CONF_NAME)
        return 0;
    if (p != 0) {
        memcpy(out, prefix, p);
        out[p++] = '.';
    }
    memcpy(out + p, key, k + 1);
    return 1;
}

/*
 * A key keycache knows to be wrong without asking the core: one whose name
 * is too long to ask about (the core takes up to 512 bytes), or one of the
 * names the core answers itself, which the section's value would replace
 * (openssl-version would send the loader to another OpenSSL's build).
 */
static void scan_refuse(KC_KEYSCAN *ks, const char *prefix, const char *key,
                        const char *why)
{
    kc_raise(ks->pctx, KC_R_BAD_CONFIG, "unknown key \"%s%s%.64s%s\" in "
             "%s's section of %s (%s); keycache knows " KC_KEYS_TEXT,
             prefix != NULL ? prefix : "", prefix != NULL ? "." : "", key,
             strlen(key) > 64 ? "..." : "", ks->pctx->name, ks->file, why);
    ks->unknown = 1;
}

/*
 * A name seen twice is asked about twice: the core answers once.  A name
 * of ours is not asked (it cannot be unknown); the rest are unknown if the
 * core holds them.
 */
static void scan_add(KC_KEYSCAN *ks, const char *prefix, const char *key)
{
    char *s = ks->name[ks->n];

    if (!join_name(s, prefix, key)) {
        scan_refuse(ks, prefix, key, "a name too long");
        return;
    }
    if (kc_name_in_list(core_answers, s)) {
        scan_refuse(ks, prefix, key, "the core's own answer");
        return;
    }
    if (is_known_key(s, prefix == NULL))
        return;
    if (++ks->n == KC_CONF_BATCH)
        scan_flush(ks);
}

/* A config file's sections and keys: a key has its section's number, the
 * next key of that section and the section its value names (or -1; -2
 * until sub_of() is asked: most keys' never are). */
typedef struct {
    const char *name;
    int first, last;          /* its keys, a list through KC_CONFKEY.next */
} KC_CONFSECT;

typedef struct {
    const char *name, *value;
    int sect, next, sub;
} KC_CONFKEY;

typedef struct {
    KC_CONFSECT *sect;
    KC_CONFKEY *key;
    int *slot;                /* sections by name: open addressing, -1 free */
    char **own;               /* values a variable made longer */
    size_t nsect, nkey, maxsect, maxkey, nslot, nown, maxown;
} KC_CONFKEYS;

static int grow(void *vp, size_t *max, size_t n, size_t size)
{
    void **p = vp, *q;
    size_t m = *max == 0 ? 32 : *max * 2;

    if (n < *max)
        return 1;
    if ((q = OPENSSL_realloc(*p, m * size)) == NULL)
        return 0;
    *p = q;
    *max = m;
    return 1;
}

static size_t slot_of(const KC_CONFKEYS *c, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const char *p;
    size_t i;

    for (p = name; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    for (i = (size_t)h & (c->nslot - 1); c->slot[i] >= 0;
         i = (i + 1) & (c->nslot - 1))
        if (strcmp(c->sect[c->slot[i]].name, name) == 0)
            break;
    return i;
}

/* the table twice as large, for |n| sections at most half full */
static int rehash(KC_CONFKEYS *c, size_t n)
{
    size_t m = c->nslot == 0 ? 64 : c->nslot * 2, i;
    int *slot;

    if (2 * n < c->nslot)
        return 1;
    if ((slot = OPENSSL_malloc(m * sizeof(*slot))) == NULL)
        return 0;
    OPENSSL_free(c->slot);
    c->slot = slot;
    c->nslot = m;
    for (i = 0; i < m; i++)
        slot[i] = -1;
    for (i = 0; i < c->nsect; i++)
        slot[slot_of(c, c->sect[i].name)] = (int)i;
    return 1;
}

static const char *own(KC_CONFKEYS *c, const char *v)
{
    char *d;

    if (!grow(&c->own, &c->maxown, c->nown, sizeof(*c->own))
        || (d = OPENSSL_strdup(v)) == NULL)
        return NULL;
    return c->own[c->nown++] = d;
}

static void free_keys(KC_CONFKEYS *c)
{
    size_t i;

    for (i = 0; i < c->nown; i++)
        OPENSSL_clear_free(c->own[i], strlen(c->own[i]));
    OPENSSL_free(c->own);
    OPENSSL_free(c->sect);
    OPENSSL_free(c->key);
    OPENSSL_free(c->slot);
    memset(c, 0, sizeof(*c));
}

/* |name|'s number, added if new (a section may be opened twice); -1 */
static int section_of(KC_CONFKEYS *c, const char *name, int add)
{
    size_t i;

    if (c->nslot != 0 && c->slot[i = slot_of(c, name)] >= 0)
        return c->slot[i];
    if (!add || !rehash(c, c->nsect + 1)
        || !grow(&c->sect, &c->maxsect, c->nsect, sizeof(*c->sect)))
        return -1;
    c->sect[c->nsect].name = name;
    c->sect[c->nsect].first = c->sect[c->nsect].last = -1;
    c->slot[slot_of(c, name)] = (int)c->nsect;
    return (int)c->nsect++;
}

static int add_key(KC_CONFKEYS *c, int sect, const char *name,
                   const char *value)
{
    KC_CONFSECT *t;
    int n = (int)c->nkey;

    if (sect < 0 || !grow(&c->key, &c->maxkey, c->nkey, sizeof(*c->key)))
        return 0;
    t = &c->sect[sect];
    c->key[n].name = name;
    c->key[n].value = value;
    c->key[n].sect = sect;
    c->key[n].next = -1;
    c->key[n].sub = -2;
    if (t->last >= 0)
        c->key[t->last].next = n;
    else
        t->first = n;
    t->last = n;
    c->nkey++;
    return 1;
}

/* the section key |k|'s value names, or -1 */
static int sub_of(KC_CONFKEYS *c, KC_CONFKEY *k)
{
    if (k->sub == -2)
        k->sub = k->value != NULL ? section_of(c, k->value, 0) : -1;
    return k->sub;
}

/*
 * Every parameter name key |k| would give its provider: a key naming a
 * section stands for its keys as "key.sub" (provider_conf_params()).
 */
static void key_names(KC_CONFKEYS *c, KC_CONFKEY *k, const char *prefix,
                      int depth, KC_KEYSCAN *ks)
{
    char full[KC_CONF_NAME];
    int i;

    if (sub_of(c, k) < 0 || k->sub == k->sect || depth == KC_CONF_DEPTH) {
        scan_add(ks, prefix, k->name);
        return;
    }
    if (!join_name(full, prefix, k->name)) {
        scan_refuse(ks, prefix, k->name, "a name too long");
        return;
    }
    for (i = c->sect[k->sub].first; i >= 0; i = c->key[i].next)
        key_names(c, &c->key[i], full, depth + 1, ks);
}

/* The keys of every section of a loaded |conf|. */
static int keys_of_conf(const CONF *conf, KC_CONFKEYS *c)
{
    STACK_OF(OPENSSL_CSTRING) *names = NCONF_get_section_names(conf);
    STACK_OF(CONF_VALUE) *sect;
    int i, j, n, ok = names != NULL;

    for (i = 0; ok && i < sk_OPENSSL_CSTRING_num(names); i++) {
        n = section_of(c, sk_OPENSSL_CSTRING_value(names, i), 1);
        sect = NCONF_get_section(conf, sk_OPENSSL_CSTRING_value(names, i));
        for (j = 0; ok && j < sk_CONF_VALUE_num(sect); j++)
            ok = add_key(c, n, sk_CONF_VALUE_value(sect, j)->name,
                         sk_CONF_VALUE_value(sect, j)->value);
    }
    sk_OPENSSL_CSTRING_free(names);
    return ok;
}

/* a letter, digit or punctuation NCONF takes in a name */
static int is_name_ch(unsigned char ch)
{
    if (((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') || (ch >= '0' && ch <= '9'))
        return 1;
    switch (ch) {
    case '_': case '.': case '!': case '%': case '&': case '*': case '+':
    case ',': case '/': case ';': case '?': case '@': case '^': case '~':
    case '|': case '-':
        return 1;
    }
    return 0;
}

/* the end of a name at s */
static char *name_end(char *s)
{
    while (is_name_ch((unsigned char)*s))
        s++;
    return s;
}

static char *skip_blank(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    return s;
}

static char *var_end(char *s)
{
    while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
           || (*s >= '0' && *s <= '9') || *s == '_')
        s++;
    return s;
}

/*
 * The value of variable |name| (|nlen| bytes; in section |sname| if not
 * NULL) as NCONF expands it where it reads it: the latest key of that
 * name so far in the section (|sect| or the one named), else in
 * "default".  NULL for one it does not know, or the environment's: NCONF's.
 */
static const char *var_value(KC_CONFKEYS *c, int sect, const char *sname,
                             size_t slen, const char *name, size_t nlen)
{
    char sn[KC_CONF_NAME];
    int s = sect, i, pass;

    if (sname != NULL) {
        if (slen >= sizeof(sn))
            return NULL;
        memcpy(sn, sname, slen);
        sn[slen] = '\0';
        if (strcmp(sn, "ENV") == 0 || (s = section_of(c, sn, 0)) < 0)
            return NULL;
        sect = -1;                  /* no "default" for sect::name */
    } else if (strcmp(c->sect[sect].name, "ENV") == 0) {
        return NULL;
    }
    for (pass = 0; pass < 2; pass++) {
        for (i = (int)c->nkey - 1; i >= 0; i--)
            if (c->key[i].sect == s && strncmp(c->key[i].name, name, nlen) == 0
                && c->key[i].name[nlen] == '\0')
                return c->key[i].value;
        if (sect < 0 || (s = section_of(c, "default", 0)) < 0 || s == sect)
            break;
    }
    return NULL;
}

/*
 * A value as NCONF makes it (clear_comments(), str_copy()), into out[len]:
 * cut at a '#' outside quotes and escapes, trailing blanks trimmed, quotes
 * and escapes taken out, variables outside quotes expanded from the keys
 * read so far.  NULL if it does not fit or a variable is not one to
 * expand here: NCONF's, then.
 */
static char *value_of(KC_CONFKEYS *c, int sect, char *v, char *out,
                      size_t len)
{
    char *in, *end, *o = out, *e, *n, q;
    const char *sv, *val;
    size_t vl;

    for (in = v; *in != '\0' && *in != '#'; in++)
        if (*in == '"' || *in == '\'' || *in == '`') {
            for (q = *in++; *in != '\0' && *in != q; in++)
                if (*in == '\\' && in[1] != '\0')
                    in++;
            if (*in == '\0')
                break;
        } else if (*in == '\\' && in[1] != '\0') {
            in++;
        }
    for (end = in; end > v && (end[-1] == ' ' || end[-1] == '\t'
                                || end[-1] == '\r'); )
        end--;
#define KC_PUT(ch) do { if ((size_t)(o - out) + 1 >= len) return NULL; \
                        *o++ = (ch); } while (0)
    for (in = v; in < end; ) {
        if (*in == '"' || *in == '\'' || *in == '`') {
            for (q = *in++; in < end && *in != q; in++) {
                if (*in == '\\' && ++in == end)
                    break;          /* an escape of nothing: dropped */
                KC_PUT(*in);
            }
            if (in < end)
                in++;
        } else if (*in == '\\') {
            if (++in == end)
                break;
            KC_PUT(*in == 'n' ? '\n' : *in == 'r' ? '\r' : *in == 't' ? '\t'
                   : *in == 'b' ? '\b' : *in);
            in++;
        } else if (*in == '$') {
            /* $name, ${name}, $(name), each with an optional sect:: */
            q = in[1] == '{' ? '}' : in[1] == '(' ? ')' : '\0';
            n = in + 1 + (q != '\0');
            e = var_end(n);
            sv = NULL;
            vl = 0;
            if (e[0] == ':' && e[1] == ':') {
                sv = n;
                vl = (size_t)(e - n);
                n = e + 2;
                e = var_end(n);
            }
            if (e == n || e > end || (q != '\0' && *e != q)
                || (val = var_value(c, sect, sv, vl, n, (size_t)(e - n)))
                   == NULL)
                return NULL;
            while (*val != '\0')
                KC_PUT(*val++);
            in = e + (q != '\0');
        } else {
            KC_PUT(*in++);
        }
    }
#undef KC_PUT
    *o = '\0';
    return out;
}

/*
 * The keys of the file in |buf| (|len| bytes and a NUL), read by hand:
 * NCONF_load() parses everything (some 2,000 instructions a line), in
 * every process.  A name made wrongly costs nothing (the core answers only
 * for its provider's parameters); one missed is an unknown key not
 * reported.  Values are read as NCONF reads them (value_of(); a value with
 * no quote, escape or variable is only cut at its comment, in place); what
 * the scan does not follow goes to NCONF (0): a line starting with '.', a
 * line continued with '\\', a "section::key", a header with blanks
 * inside, $ENV's variables.
 */
static int keys_of_text(char *buf, size_t len, KC_CONFKEYS *c)
{
    char *line, *next, *end = buf + len, *s, *e, *v, tmp[1024];
    const char *val;
    int sect = section_of(c, "default", 1);
    size_t n;

    for (line = buf; line != NULL && sect >= 0; line = next) {
        if ((e = memchr(line, '\n', (size_t)(end - line))) != NULL)
            next = e + 1;
        else
            e = end, next = NULL;
        *e = '\0';
        while (e > line && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        if (e > line && e[-1] == '\\')
            return 0;
        s = skip_blank(line);
        if (*s == '\0' || *s == '#')
            continue;
        if (*s == '[') {
            s = skip_blank(s + 1);
            e = name_end(s);
            if (*skip_blank(e) != ']')
                return 0;
            *e = '\0';
            sect = section_of(c, s, 1);
            continue;
        }
        /* .include, .pragma (how values read), or a key ".name": NCONF */
        if (*s == '.')
            return 0;
        e = name_end(s);
        v = skip_blank(e);
        if (e == s || *v != '=')
            return 0;
        *e = '\0';
        v = skip_blank(v + 1);
        n = strcspn(v, "#\"'`\\$");
        if (v[n] == '\0' || v[n] == '#') {
            /* plain: its comment and the blanks before it cut */
            while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'
                             || v[n - 1] == '\r'))
                n--;
            v[n] = '\0';
            val = v;
        } else if ((val = value_of(c, sect, v, tmp, sizeof(tmp))) == NULL) {
            return 0;
        } else if (strlen(val) <= strlen(v)) {
            /* in place when it fits (it does unless a variable grew it) */
            val = strcpy(v, val);
        } else if ((val = own(c, val)) == NULL) {
            return 0;
        }
        if (!add_key(c, sect, s, val))
            return 0;
    }
    return sect >= 0;
}

/* the default config file's text, NUL-terminated; NULL if not a plain
 * file of text, whole, under 1 MB */
static char *read_file(const char *file, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    ssize_t n;
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
        && st.st_size < (1 << 20)
        && (buf = OPENSSL_malloc((size_t)st.st_size + 1)) != NULL) {
        while (got < (size_t)st.st_size
               && ((n = read(fd, buf + got, (size_t)st.st_size - got)) > 0
                   || (n < 0 && errno == EINTR)))
            got += n > 0 ? (size_t)n : 0;
        buf[got] = '\0';
        *len = (size_t)st.st_size + 1;
        /* cut short, or a NUL inside (NCONF reads past it): NCONF's */
        if (got != (size_t)st.st_size || memchr(buf, '\0', got) != NULL) {
            OPENSSL_clear_free(buf, *len);
            buf = NULL;
        }
    }
    close(fd);
    return buf;
}

/*
 * May NCONF open file?  Only a plain file: a FIFO the library's own load
 * emptied would block the open for good (a device, forever).
 */
static int plain_file(const char *file)
{
    struct stat st;

    return stat(file, &st) == 0 && S_ISREG(st.st_mode);
}

/* The values of a section's keys that name config module |module|. */
static const char *module_value(const CONF *conf, const char *sect,
                                const char *module, int nth)
{
    STACK_OF(CONF_VALUE) *s = NCONF_get_section(conf, sect);
    size_t n = strlen(module);
    int i;

    for (i = 0; i < sk_CONF_VALUE_num(s); i++) {
        CONF_VALUE *v = sk_CONF_VALUE_value(s, i);

        /* "providers" or "providers.anything": the module is before a dot */
        if (strncmp(v->name, module, n) == 0
            && (v->name[n] == '\0' || v->name[n] == '.') && nth-- == 0)
            return v->value;
    }
    return NULL;
}

/* KEYCACHE_DEBUG only: does this file load keycache at all? */
static void check_routing(KC_PROVCTX *pctx, const CONF *conf,
                          const char *file)
{
    const char *init, *sect, *name;
    STACK_OF(CONF_VALUE) *provs;
    int i, j, found = 0;

    if ((init = NCONF_get_string(conf, NULL, "openssl_conf")) == NULL) {
        kc_debug_log(pctx, 2, "config: %s has no openssl_conf", file);
        return;
    }
    for (i = 0; !found && (sect = module_value(conf, init, "providers", i))
                          != NULL; i++) {
        provs = NCONF_get_section(conf, sect);
        for (j = 0; !found && j < sk_CONF_VALUE_num(provs); j++) {
            CONF_VALUE *v = sk_CONF_VALUE_value(provs, j);
            const char *dot = strchr(v->name, '.');

            name = NCONF_get_string(conf, v->value, "identity");
            if (name == NULL)
                name = dot != NULL ? dot + 1 : v->name;
            found = strcmp(name, pctx->name) == 0;
        }
    }
    if (!found) {
        kc_debug_log(pctx, 2, "config: %s does not load %s: it was "
                     "configured from elsewhere", file, pctx->name);
        return;
    }
    /* which default_properties win only the library knows: see props.c */
    kc_debug_log(pctx, 2, "config: %s loads %s", file, pctx->name);
}

/*
 * The core answers only for names asked about, so a misspelt key would be
 * ignored: every name any section of the default config file could give a
 * provider is asked about, and the answers say which are in ours (another
 * config file gets the value checks only).  0: unknown keys.  Scanned by
 * hand, or by NCONF where that cannot follow or KEYCACHE_DEBUG asks.
 */
static int check_unknown_keys(KC_PROVCTX *pctx,
                              OSSL_FUNC_core_get_params_fn *get)
{
    KC_KEYSCAN ks;
    KC_CONFKEYS c;
    char *file = NULL, *text = NULL;
    unsigned char *ours;
    CONF *conf = NULL;
    size_t i, len = 0;
    long eline = 0;
    int ok = 1, any = 0;

    memset(&c, 0, sizeof(c));
    ERR_set_mark();
    if ((file = CONF_get1_default_config_file()) != NULL
        && kc_debug_level(pctx) == 0
        && (text = read_file(file, &len)) != NULL
        && !keys_of_text(text, len - 1, &c)) {
        free_keys(&c);
        OPENSSL_clear_free(text, len);
        text = NULL;
    }
    if (file != NULL && text == NULL
        && (!plain_file(file) || (conf = NCONF_new(NULL)) == NULL
            || NCONF_load(conf, file, &eline) <= 0
            || !keys_of_conf(conf, &c)))
        ok = 0;
    if (ok && conf != NULL && kc_debug_level(pctx) > 0)
        check_routing(pctx, conf, file);
    ERR_pop_to_mark();
    if (!ok || file == NULL) {
        kc_debug_log(pctx, 2, "config: cannot read %s to look for unknown "
                     "keys", file != NULL ? file : "the default config");
        ok = 1;
        goto done;
    }
    ks.pctx = pctx;
    ks.get = get;
    ks.file = file;
    ks.unknown = 0;
    ks.n = 0;
    /*
     * Only the sections the core can read for this provider: those its
     * providers section's lines, keys named after it, point to.  Each
     * other section's names, nested ones too, would only cost the core a
     * pass over its parameters (some 11,000 instructions a line of
     * keycache's section).  None found, or an identity anywhere (a name
     * not the line's, provider_conf_load()): every section's.
     */
    ours = c.nsect > 0 ? OPENSSL_zalloc(c.nsect) : NULL;
    for (i = 0; ours != NULL && i < c.nkey; i++) {
        const char *k = skip_dot(c.key[i].name);

        if (strcmp(k, "identity") == 0) {
            any = 0;
            break;
        }
        if (strcmp(k, pctx->name) == 0 && sub_of(&c, &c.key[i]) >= 0)
            ours[c.key[i].sub] = any = 1;
    }
    /* every (chosen) section's keys at the top: each once, in file order */
    for (i = 0; i < c.nkey; i++)
        if (!any || ours[c.key[i].sect])
            key_names(&c, &c.key[i], NULL, 0, &ks);
    scan_flush(&ks);
    OPENSSL_free(ours);
    ok = !ks.unknown;
 done:
    free_keys(&c);
    OPENSSL_clear_free(text, len);
    NCONF_free(conf);
    OPENSSL_free(file);
    return ok;
}

/* The provider's section: every problem is raised, so one start names all. */
int kc_conf_read(KC_PROVCTX *pctx, OSSL_FUNC_core_get_params_fn *get)
{
    /* the registry's configuration keys, each once: the first row's */
    int keyrow[KC_REGISTRY_ROWS];
    char *val[KC_REGISTRY_ROWS] = { NULL };
    char *size = NULL, *ttl = NULL, *admit = NULL;
    char *name = NULL, *prefer = NULL, *qtable = NULL;
    OSSL_PARAM p[6 + KC_REGISTRY_ROWS + 1];
    uint64_t n;
    size_t i, nkeys = 0;
    int ok = 1, on, j, r;

    pctx->cache_size = KEYCACHE_DEFAULT_CACHE_SIZE;
    pctx->idle_ttl = 0;
    pctx->admit_after = KEYCACHE_DEFAULT_ADMIT_AFTER;
    pctx->quirk_table = 1;
    for (r = 0; r < KC_REGISTRY_ROWS; r++) {
        *kc_registry_on(pctx, r) = kc_registry_auto(r);
        for (i = 0; i < nkeys; i++)
            if (strcmp(kc_registry[keyrow[i]].conf, kc_registry[r].conf) == 0)
                break;
        if (i == nkeys)
            keyrow[nkeys++] = r;
    }
    if (get == NULL)
        return 1;
    p[0] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_CACHE_SIZE, &size, 0);
    p[1] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_IDLE_TTL, &ttl, 0);
    p[2] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_ADMIT_AFTER, &admit, 0);
    p[3] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_CORE_PROV_NAME,
                                         &name, 0);
    p[4] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_PREFER, &prefer, 0);
    p[5] = OSSL_PARAM_construct_utf8_ptr(KEYCACHE_CONF_QUIRK_TABLE, &qtable,
                                         0);
    for (i = 0; i < nkeys; i++)
        p[6 + i] = OSSL_PARAM_construct_utf8_ptr(kc_registry[keyrow[i]].conf,
                                                 &val[i], 0);
    p[6 + i] = OSSL_PARAM_construct_end();
    if (!get(pctx->handle, p))
        return 1;
    if (name != NULL)
        pctx->name = name;
    if (size != NULL) {
        if (parse_uint(size, KEYCACHE_MAX_CACHE_SIZE, &n)) {
            pctx->cache_size = (size_t)n;
        } else {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want a whole "
                     "number from 0 to %d (default %d)",
                     KEYCACHE_CONF_CACHE_SIZE, size, KEYCACHE_MAX_CACHE_SIZE,
                     KEYCACHE_DEFAULT_CACHE_SIZE);
            ok = 0;
        }
    }
    /* a family's key: auto (its rows' own rule), or on or off for them all */
    for (i = 0; i < nkeys; i++) {
        const KC_FAMILY_ROW *k = &kc_registry[keyrow[i]];
        int is_auto = 0;

        if (val[i] == NULL)
            continue;
        if (k->kind != KC_KIND_HMAC && strcasecmp(val[i], "auto") == 0) {
            is_auto = 1;
        } else if (!parse_bool(val[i], &on)) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want %s"
                     KC_BOOL_WORDS, k->conf, val[i],
                     k->kind != KC_KIND_HMAC ? "auto, " : "");
            ok = 0;
            continue;
        }
        for (j = keyrow[i]; j < KC_REGISTRY_ROWS; j++)
            if (strcmp(kc_registry[j].conf, k->conf) == 0)
                *kc_registry_on(pctx, j) = is_auto ? kc_registry_auto(j) : on;
    }
    if (ttl != NULL) {
        if (parse_uint(ttl, UINT32_MAX, &n)) {
            pctx->idle_ttl = n;
        } else {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want seconds, a "
                     "whole number from 0 (no limit) to %lu",
                     KEYCACHE_CONF_IDLE_TTL, ttl, (unsigned long)UINT32_MAX);
            ok = 0;
        }
    }
    if (admit != NULL) {
        if (parse_uint(admit, KEYCACHE_MAX_ADMIT_AFTER, &n) && n > 0) {
            pctx->admit_after = (unsigned int)n;
        } else {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want a whole "
                     "number from 1 to %d (default %d)",
                     KEYCACHE_CONF_ADMIT_AFTER, admit,
                     KEYCACHE_MAX_ADMIT_AFTER, KEYCACHE_DEFAULT_ADMIT_AFTER);
            ok = 0;
        }
    }
    /* never "on": default_properties in force (fips=yes) are never replaced */
    if (prefer != NULL) {
        if (strcasecmp(prefer, "if_unset") == 0) {
            pctx->prefer = 1;
        } else if (!parse_bool(prefer, &on) || on) {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want if_unset or "
                     "off (also no, false, 0)", KEYCACHE_CONF_PREFER, prefer);
            ok = 0;
        }
    }
    if (qtable != NULL) {
        if (parse_bool(qtable, &on)) {
            pctx->quirk_table = on;
        } else {
            kc_raise(pctx, KC_R_BAD_CONFIG, "%s = \"%s\": want "
                     KC_BOOL_WORDS, KEYCACHE_CONF_QUIRK_TABLE, qtable);
            ok = 0;
        }
    }
    return check_unknown_keys(pctx, get) && ok;
}
