/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who keyed this context: the application, or OpenSSL itself?  keycache
 * must never store a key OpenSSL derives inside (TLS secrets, KDF and DRBG
 * state, signature nonces), and routing cannot tell: the default's KDFs
 * and DRBGs fetch HMAC without a query, as applications do.  The stack
 * can: unwound to the call into OpenSSL, a key is admitted if the caller
 * keyed the context itself or the outermost libcrypto function is a MAC
 * or cipher entry point (entry_names); anything else (libssl, a KDF, RAND,
 * an unreadable or too deep stack) is refused.  Failing closed costs a
 * cache entry, never a secret.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "cache/cache.h"

/*
 * Where an application keys a MAC or cipher with its own key (names a
 * version lacks are skipped).  Not EVP_DigestSign/Final nor EVP_PKEY_sign:
 * signatures key HMAC with secrets of their own (deterministic ECDSA
 * nonces, SLH-DSA's PRF).  Each kind counts only its own entry points: the
 * default's AES-SIV keys CMAC with half its key.  EVP_MAC_CTX_dup: a copy
 * of a context the application holds (layer/tmpl.c, first_copy()); this
 * judges who copied, not who keyed, so only families OpenSSL never keys
 * itself (GMAC) look a copy's key up (KC_TDESC.copies_look_up); OpenSSL's
 * own copies are made inside other functions.
 */
static const char *const entry_names[] = {
    /* MAC entry points first, KC_NMAC of them */
    "EVP_Q_mac", "HMAC", "EVP_MAC_init", "EVP_MAC_init_SKEY",
    "EVP_MAC_CTX_set_params", "EVP_MAC_CTX_dup",
    "EVP_DigestSignInit", "EVP_DigestSignInit_ex",
    /* then the cipher ones */
    "EVP_CipherInit", "EVP_CipherInit_ex", "EVP_CipherInit_ex2",
    "EVP_CipherInit_SKEY",
    "EVP_EncryptInit", "EVP_EncryptInit_ex", "EVP_EncryptInit_ex2",
    "EVP_DecryptInit", "EVP_DecryptInit_ex", "EVP_DecryptInit_ex2",
};
#define KC_NMAC 8
#define KC_NENTRY (sizeof(entry_names) / sizeof(entry_names[0]))

/* deeper than any keying path through libcrypto; beyond it, refuse */
#define KC_ORIGIN_DEPTH 32

typedef struct {
    uintptr_t start, end;
} KC_RANGE;

static struct {
    int ok;                   /* the ranges below were found */
    int no_unwinder;          /* libgcc_s could not be opened */
    KC_RANGE self, crypto;    /* keycache's and libcrypto's mappings */
    uintptr_t entry[KC_NENTRY];
    int entry_cipher[KC_NENTRY];
    size_t nentry;
} origin;

static pthread_once_t origin_once = PTHREAD_ONCE_INIT;

/*
 * libgcc's unwinder, opened at the first admission rather than linked:
 * as a dependency its loading and binding cost every process that loads
 * keycache (some 80,000 instructions), admitting a key or not.
 */
static struct {
    _Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn, void *);
    _Unwind_Ptr (*ip_info)(struct _Unwind_Context *, int *);
    _Unwind_Ptr (*region_start)(struct _Unwind_Context *);
} unw;

static int unwinder_open(void)
{
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

    if (h == NULL)
        return 0;
    *(void **)&unw.backtrace = dlsym(h, "_Unwind_Backtrace");
    *(void **)&unw.ip_info = dlsym(h, "_Unwind_GetIPInfo");
    *(void **)&unw.region_start = dlsym(h, "_Unwind_GetRegionStart");
    return unw.backtrace != NULL && unw.ip_info != NULL
           && unw.region_start != NULL;
}

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GLIBC_PREREQ)
# if __GLIBC_PREREQ(2, 35)
#  define KC_FAST_WALK 1
/* glibc's _dl_find_object, when it has one (kept in origin_init) */
static int (*find_object_fn)(void *, struct dl_find_object *);
/* each thread's KC_WALK_MEMO */
static pthread_key_t walk_key;
static int walk_key_ok;
# endif
#endif

/* the mapped extent of the loaded object containing each wanted address */
typedef struct {
    uintptr_t want;
    KC_RANGE *out;
    const char *name;         /* its link map's name ("" for the program) */
} KC_FIND;

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    KC_FIND *f = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    int i;

    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < lo)
            lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
            hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    if (f->want < lo || f->want >= hi)
        return 0;
    f->out->start = lo;
    f->out->end = hi;
    f->name = info->dlpi_name;
    return 1;
}

static int range_of(uintptr_t addr, KC_RANGE *out)
{
    KC_FIND f = { addr, out, NULL };

    return dl_iterate_phdr(find_object, &f) == 1;
}

static ossl_inline int in_range(const KC_RANGE *r, uintptr_t a)
{
    return a >= r->start && a < r->end;
}

const char *kc_object_path(const void *a)
{
    Dl_info di;

    return dladdr(a, &di) != 0 && di.dli_fname != NULL ? di.dli_fname : "?";
}

int kc_same_object(const void *a, const void *b)
{
    KC_RANGE r;

    return range_of((uintptr_t)a, &r) && in_range(&r, (uintptr_t)b);
}

/*
 * libcrypto is the object that holds the EVP_MAC_init we are linked to:
 * its extent, and a handle by its link map's name, which dlopen matches
 * among loaded objects.  Not by dladdr(), whose search for the nearest
 * symbol walks libcrypto's whole symbol table (some 180,000 instructions
 * at a process's first admission).
 */
static void *crypto_handle(void)
{
    KC_FIND f = { (uintptr_t)&EVP_MAC_init, &origin.crypto, NULL };

    /* ("": the program itself, never keycache's libcrypto; no admission) */
    if (dl_iterate_phdr(find_object, &f) != 1 || f.name == NULL
        || f.name[0] == '\0')
        return NULL;
    return dlopen(f.name, RTLD_LAZY | RTLD_NOLOAD);
}

static void origin_init(void)
{
    void *h;
    size_t i;

    if (!range_of((uintptr_t)&origin_init, &origin.self)
        || (h = crypto_handle()) == NULL)
        return;
    for (i = 0; i < KC_NENTRY; i++) {
        void *f = dlsym(h, entry_names[i]);

        if (f != NULL) {
            origin.entry_cipher[origin.nentry] = i >= KC_NMAC;
            origin.entry[origin.nentry++] = (uintptr_t)f;
        }
    }
    dlclose(h);
    origin.no_unwinder = !unwinder_open();
    origin.ok = origin.nentry > 0 && !origin.no_unwinder;
#ifdef KC_FAST_WALK
    /* looked up, not linked: the module still runs on glibc 2.34 */
    *(void **)&find_object_fn = dlsym(RTLD_DEFAULT, "_dl_find_object");
    walk_key_ok = pthread_key_create(&walk_key, free) == 0;
#endif
}

/*
 * Is the code at a in a libssl of any version, place or name (a vendored
 * copy)?  An object is libssl if it defines SSL_CTX_new itself, not through
 * a libssl it links to.  (One linked statically into a program that exports
 * nothing is not seen: a documented limit.)  Per thread, the last objects'
 * answers are kept until an object is loaded or unloaded.
 */
#define KC_SSL_MEMO 4

static __thread struct {
    unsigned long long gen;      /* load_gen() when filled */
    uintptr_t base[KC_SSL_MEMO];
    unsigned char ssl[KC_SSL_MEMO];
    unsigned int next;
} ssl_memo;

static int read_gen(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size < offsetof(struct dl_phdr_info, dlpi_subs)
               + sizeof(info->dlpi_subs))
        return -1;
    *(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs + 1;
    return 1;
}

/*
 * Does the object lm (mapped at base) define SSL_CTX_new itself?  Opened by
 * its link map's name, which dlopen matches among loaded objects without
 * opening anything, or dlopen(NULL) for the main program; never by dladdr's
 * file name, argv[0] for the main program (a FIFO there would hang it, a
 * device be opened by a set-uid one).  No handle: yes, fail closed.
 */
static int defines_libssl(const struct link_map *lm, const void *base)
{
    Dl_info at;
    void *h, *sym;
    int ssl;

    h = dlopen(lm->l_name[0] != '\0' ? lm->l_name : NULL,
               RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL)
        return 1;
    sym = dlsym(h, "SSL_CTX_new");
    ssl = sym != NULL && dladdr(sym, &at) != 0 && at.dli_fbase == base;
    dlclose(h);
    return ssl;
}

static unsigned long long load_gen(void)
{
    unsigned long long gen = 0;

    return dl_iterate_phdr(read_gen, &gen) == 1 ? gen : 0;
}

/* gen: load_gen(), which rises at every load and unload (0: keep nothing) */
static int in_libssl(uintptr_t a, unsigned long long gen)
{
    struct link_map *lm = NULL;
    uintptr_t base;
    Dl_info di;
    unsigned int i;

    /* code in no object (a JIT's) is the application's: OpenSSL is not */
    if (dladdr1((void *)a, &di, (void **)&lm, RTLD_DL_LINKMAP) == 0
        || lm == NULL)
        return 0;
    base = (uintptr_t)di.dli_fbase;
    if (gen == 0)
        return defines_libssl(lm, di.dli_fbase);
    if (ssl_memo.gen != gen) {
        memset(&ssl_memo, 0, sizeof(ssl_memo));
        ssl_memo.gen = gen;
    }
    for (i = 0; i < KC_SSL_MEMO; i++)
        if (ssl_memo.base[i] == base)
            return ssl_memo.ssl[i];
    i = ssl_memo.next++ % KC_SSL_MEMO;
    ssl_memo.base[i] = base;
    return ssl_memo.ssl[i] = (unsigned char)defines_libssl(lm, di.dli_fbase);
}

/*
 * The decision at ip, the first frame outside OpenSSL: not libssl, and
 * the outermost libcrypto function (outer), if any, one of cipher's kind
 * of entry points.
 */
static int caller_admits(uintptr_t ip, unsigned long long gen, int in_crypto,
                         uintptr_t outer, int cipher)
{
    size_t i;

    if (in_libssl(ip, gen))
        return 0;
    if (!in_crypto)
        return 1;
    for (i = 0; i < origin.nentry; i++)
        if (origin.entry[i] == outer)
            return origin.entry_cipher[i] == cipher;
    return 0;
}

typedef struct {
    int depth;
    int cipher;               /* a cipher's key, not a MAC's */
    int in_crypto;            /* passed a libcrypto frame */
    uintptr_t outer;          /* start of the outermost libcrypto function */
    int verdict;              /* 1: the application keyed it */
    unsigned long long gen;   /* load_gen() */
} KC_WALK;

static _Unwind_Reason_Code step(struct _Unwind_Context *uc, void *arg)
{
    KC_WALK *w = arg;
    int before = 0;
    uintptr_t ip = unw.ip_info(uc, &before);

    if (ip == 0 || ++w->depth > KC_ORIGIN_DEPTH)
        return _URC_END_OF_STACK;
    /* a return address: the call it returns from is the byte before */
    if (!before)
        ip--;
    if (in_range(&origin.self, ip)) {
        /* keycache under libcrypto under keycache: not a path we know */
        return w->in_crypto ? _URC_END_OF_STACK : _URC_NO_REASON;
    }
    if (in_range(&origin.crypto, ip)) {
        w->in_crypto = 1;
        w->outer = (uintptr_t)unw.region_start(uc);
        return _URC_NO_REASON;
    }
    /* the first frame outside: the code that called into OpenSSL */
    w->verdict = caller_admits(ip, w->gen, w->in_crypto, w->outer, w->cipher);
    return _URC_END_OF_STACK;
}

/*
 * The same walk, made cheap (x86-64, glibc's _dl_find_object): libgcc
 * runs each frame's call-frame program every time, some 16k instructions
 * per admission.  Here each thread keeps, per code address, the rule its
 * FDE gives (CFA, saved return address and rbp), read once as libgcc
 * reads it.  Only GCC's and clang's x86-64 forms are understood (CFA = rsp
 * or rbp + offset; RA and rbp at an offset or untouched); anything else
 * walks slowly.  Decisions are kept per call chain compared in full, never
 * by hash or the nearest frames alone, so a chain through libssl is its
 * own.  All is dropped when any object is loaded or unloaded.
 */
#ifdef KC_FAST_WALK

/* DWARF register numbers on x86-64 */
#define KC_RBP 6
#define KC_RSP 7
#define KC_RA 16

/*
 * Per thread: 32 sets of 4 ways, so a walk's dozen frames never evict each
 * other: three in one set (a code layout change can bring that) would
 * rerun the call-frame programs at every admission.
 */
#define KC_WAYS 4
#define KC_RULES (32 * KC_WAYS)
/* how far above the first frame the walk may find its callers' frames */
#define KC_WALK_SPAN (1u << 20)
#define KC_CHAINS 8

typedef struct {
    uintptr_t ip;                /* the code address it is for; 0: none */
    uintptr_t start;             /* its function's start (FDE pc_begin) */
    int32_t cfa_off;             /* CFA = (cfa_rbp ? rbp : rsp) + cfa_off */
    int32_t ra_off;              /* return address at CFA + ra_off */
    int32_t rbp_off;             /* the caller's rbp at CFA + rbp_off */
    unsigned char cfa_rbp, rbp_saved, ok;
} KC_RULE;

typedef struct {
    unsigned int n;              /* frames in ip[]; 0: empty */
    unsigned char cipher, verdict;
    uint64_t hash;
    uintptr_t ip[KC_ORIGIN_DEPTH];
} KC_CHAIN;

typedef struct {
    unsigned long long gen;      /* load_gen() when filled */
    KC_RULE rule[KC_RULES];
    unsigned char refill[KC_RULES / KC_WAYS]; /* per set: the way to refill */
    KC_CHAIN chain[KC_CHAINS];
    unsigned int next;
} KC_WALK_MEMO;

/*
 * On the heap, not in TLS: store.c's record is initial-exec, so the
 * module's TLS block comes out of glibc's small static reserve.  Freed by
 * libc's free() at thread exit, which outlives any unload of this module.
 */
static KC_WALK_MEMO *walk_memo(void)
{
    KC_WALK_MEMO *wm;

    if (!walk_key_ok)
        return NULL;
    if ((wm = pthread_getspecific(walk_key)) == NULL
        && (wm = calloc(1, sizeof(*wm))) != NULL
        && pthread_setspecific(walk_key, wm) != 0) {
        free(wm);
        wm = NULL;
    }
    return wm;
}

/* a register's rule in a call-frame program: how, and the offset */
enum { KC_SAME, KC_AT, KC_OTHER };

typedef struct {
    uint64_t cfa_reg;
    int64_t cfa_off;
    int rbp_how, ra_how;
    int64_t rbp_off, ra_off;
    int rsp_set;                 /* a rule for rsp: the walk assumes CFA */
} KC_CFI;

typedef struct {
    const unsigned char *p, *end;
    int bad;
} KC_RD;

/* LEB128, unsigned or (sign) signed */
static uint64_t rd_leb(KC_RD *r, int sign)
{
    uint64_t v = 0;
    unsigned int shift = 0;
    unsigned char b;

    do {
        if (r->p >= r->end || shift > 63) {
            r->bad = 1;
            return 0;
        }
        b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (sign && shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return v;
}
#define rd_uleb(r) rd_leb(r, 0)
#define rd_sleb(r) ((int64_t)rd_leb(r, 1))

static uint64_t rd_fixed(KC_RD *r, size_t n)
{
    uint64_t v = 0;

    if (r->p > r->end || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return 0;
    }
    memcpy(&v, r->p, n);         /* little-endian */
    r->p += n;
    return v;
}

/*
 * A pointer encoded as enc says (DW_EH_PE_*): absolute or relative to
 * where it is stored, of a fixed size; with value_only, the application
 * part is ignored (an FDE's pc_range).  Others are refused.
 */
static uintptr_t rd_enc(KC_RD *r, unsigned int enc, int value_only)
{
    uintptr_t at = (uintptr_t)r->p;
    uint64_t v;

    if (enc == 0xff || (enc & 0x80) != 0
        || (!value_only && (enc & 0x70) != 0 && (enc & 0x70) != 0x10)) {
        r->bad = 1;
        return 0;
    }
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: v = rd_fixed(r, 8); break;
    case 0x03: v = rd_fixed(r, 4); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4); break;
    case 0x02: v = rd_fixed(r, 2); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2); break;
    default: r->bad = 1; return 0;
    }
    if (!value_only && (enc & 0x70) == 0x10)
        v += at;
    return (uintptr_t)v;
}

static void cfi_set(KC_CFI *st, uint64_t reg, int how, int64_t off)
{
    if (reg == KC_RBP) {
        st->rbp_how = how;
        st->rbp_off = off;
    } else if (reg == KC_RA) {
        st->ra_how = how;
        st->ra_off = off;
    } else if (reg == KC_RSP) {
        st->rsp_set = how != KC_SAME;
    }
}

static void cfi_restore(KC_CFI *st, const KC_CFI *init, uint64_t reg)
{
    if (reg == KC_RBP)
        cfi_set(st, reg, init->rbp_how, init->rbp_off);
    else if (reg == KC_RA)
        cfi_set(st, reg, init->ra_how, init->ra_off);
    else if (reg == KC_RSP)
        st->rsp_set = init->rsp_set;
}

/*
 * Runs a call-frame program from loc up to the row for ip (init: the CIE's
 * rules, for DW_CFA_restore).  0: an instruction not understood.
 */
static int cfi_run(KC_RD *r, uintptr_t loc, uintptr_t ip, int64_t daf,
                   KC_CFI *st, const KC_CFI *init)
{
    KC_CFI saved[4];
    unsigned int nsaved = 0;
    uint64_t reg, u;
    int64_t off;

    while (r->p < r->end && !r->bad) {
        unsigned int op = *r->p++;

        switch (op & 0xc0) {
        case 0x40:                                /* advance_loc */
            loc += op & 0x3f;
            if (loc > ip)
                return 1;
            continue;
        case 0x80:                                /* offset */
            cfi_set(st, op & 0x3f, KC_AT, (int64_t)rd_uleb(r) * daf);
            continue;
        case 0xc0:                                /* restore */
            cfi_restore(st, init, op & 0x3f);
            continue;
        }
        switch (op) {
        case 0x00:                                /* nop */
            break;
        case 0x02: case 0x03: case 0x04:          /* advance_loc1/2/4 */
            loc += (uintptr_t)rd_fixed(r, op == 0x02 ? 1 : op == 0x03 ? 2 : 4);
            if (loc > ip)
                return !r->bad;
            break;
        case 0x05: case 0x11:                     /* offset_extended(_sf) */
            reg = rd_uleb(r);
            off = op == 0x05 ? (int64_t)rd_uleb(r) : rd_sleb(r);
            cfi_set(st, reg, KC_AT, off * daf);
            break;
        case 0x06:                                /* restore_extended */
            cfi_restore(st, init, rd_uleb(r));
            break;
        case 0x07:                                /* undefined */
        case 0x14: case 0x15:                     /* val_offset(_sf) */
            reg = rd_uleb(r);
            if (op != 0x07)
                (void)(op == 0x14 ? (int64_t)rd_uleb(r) : rd_sleb(r));
            cfi_set(st, reg, KC_OTHER, 0);
            break;
        case 0x08:                                /* same_value */
            cfi_set(st, rd_uleb(r), KC_SAME, 0);
            break;
        case 0x09:                                /* register */
            reg = rd_uleb(r);
            (void)rd_uleb(r);
            cfi_set(st, reg, KC_OTHER, 0);
            break;
        case 0x10: case 0x16:                     /* (val_)expression */
            reg = rd_uleb(r);
            u = rd_uleb(r);
            if ((uint64_t)(r->end - r->p) < u)
                return 0;
            r->p += u;
            cfi_set(st, reg, KC_OTHER, 0);
            break;
        case 0x0a:                                /* remember_state */
            if (nsaved == sizeof(saved) / sizeof(saved[0]))
                return 0;
            saved[nsaved++] = *st;
            break;
        case 0x0b:                                /* restore_state */
            if (nsaved == 0)
                return 0;
            *st = saved[--nsaved];
            break;
        case 0x0c: case 0x12:                     /* def_cfa(_sf) */
            st->cfa_reg = rd_uleb(r);
            st->cfa_off = op == 0x0c ? (int64_t)rd_uleb(r) : rd_sleb(r) * daf;
            break;
        case 0x0d:                                /* def_cfa_register */
            st->cfa_reg = rd_uleb(r);
            break;
        case 0x0e: case 0x13:                     /* def_cfa_offset(_sf) */
            st->cfa_off = op == 0x0e ? (int64_t)rd_uleb(r) : rd_sleb(r) * daf;
            break;
        case 0x2e:                                /* GNU_args_size */
            (void)rd_uleb(r);
            break;
        default:          /* set_loc, def_cfa_expression, anything else */
            return 0;
        }
    }
    return !r->bad;
}

/* Do the n bytes at p lie inside the object fo maps? */
static int inside(const struct dl_find_object *fo, const unsigned char *p,
                  uint64_t n)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)fo->dlfo_map_start;
    uintptr_t hi = (uintptr_t)fo->dlfo_map_end;

    return a >= lo && a <= hi && n <= hi - a;
}

/* r over the CIE or FDE at p, after its length; 0: not inside fo */
static int rd_record(KC_RD *r, const struct dl_find_object *fo,
                     const unsigned char *p)
{
    uint64_t len;

    if (!inside(fo, p, 8))
        return 0;
    r->p = p;
    r->end = p + 4;
    r->bad = 0;
    len = rd_fixed(r, 4);
    if (len == 0 || len >= 0xfffffff0 || !inside(fo, p, 4 + len))
        return 0;
    r->end = p + 4 + len;
    return 1;
}

/* The rule at ip from its FDE, as libgcc would find and run it. */
static void rule_for(uintptr_t ip, KC_RULE *rule)
{
    struct dl_find_object fo;
    const unsigned char *hdr, *cie, *fde;
    KC_RD r, c;
    KC_CFI st, init;
    uint64_t count, lo, hi, len, id;
    int32_t at;
    uintptr_t begin, range;
    unsigned int fde_enc = 0, ver;
    int64_t daf;
    const char *aug;
    size_t i;

    memset(rule, 0, sizeof(*rule));
    rule->ip = ip;
    if (find_object_fn == NULL || find_object_fn((void *)ip, &fo) != 0
        || (hdr = fo.dlfo_eh_frame) == NULL)
        return;

    /* .eh_frame_hdr: version 1, a sorted table of (start, FDE) pairs */
    if (hdr[0] != 1 || hdr[2] != 0x03 || hdr[3] != 0x3b)
        return;
    r.p = hdr + 4;
    r.end = hdr + 4 + 8 + 4;     /* at most: an 8-byte pointer, a count */
    r.bad = 0;
    (void)rd_enc(&r, hdr[1], 1);                 /* eh_frame_ptr */
    count = rd_fixed(&r, 4);
    /* the table, and every FDE and CIE below, inside the object's mapping */
    if (r.bad || count == 0 || (uintptr_t)r.p > (uintptr_t)fo.dlfo_map_end
        || count > ((uintptr_t)fo.dlfo_map_end - (uintptr_t)r.p) / 8)
        return;
    lo = 0;
    hi = count;
    while (lo < hi) {                            /* first start > ip */
        uint64_t mid = lo + (hi - lo) / 2;

        memcpy(&at, r.p + mid * 8, 4);
        if ((uintptr_t)(hdr + at) <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return;
    memcpy(&at, r.p + (lo - 1) * 8 + 4, 4);
    fde = hdr + at;

    /* the FDE and its CIE */
    if (!rd_record(&r, &fo, fde))
        return;
    id = rd_fixed(&r, 4);
    if (r.bad || id == 0)
        return;
    cie = r.p - 4 - id;
    if (id > (uint64_t)(r.p - 4 - (const unsigned char *)fo.dlfo_map_start)
        || !rd_record(&c, &fo, cie))
        return;
    if (rd_fixed(&c, 4) != 0)
        return;
    ver = (unsigned int)rd_fixed(&c, 1);
    aug = (const char *)c.p;
    while (c.p < c.end && *c.p != 0)
        c.p++;
    if (c.bad || c.p++ >= c.end || (ver != 1 && ver != 3))
        return;
    if (rd_uleb(&c) != 1)                        /* code alignment */
        return;
    daf = rd_sleb(&c);
    if ((ver == 1 ? rd_fixed(&c, 1) : rd_uleb(&c)) != KC_RA || c.bad)
        return;
    if (aug[0] == 'z') {
        uint64_t alen = rd_uleb(&c);
        KC_RD a;

        if (c.bad || alen > (uint64_t)(c.end - c.p))
            return;
        /* the augmentation data, read no further than its length */
        a.p = c.p;
        a.end = c.p + alen;
        a.bad = 0;
        for (i = 1; aug[i] != '\0'; i++) {
            if (aug[i] == 'R')
                fde_enc = (unsigned int)rd_fixed(&a, 1);
            else if (aug[i] == 'L')
                (void)rd_fixed(&a, 1);
            else if (aug[i] == 'P')
                (void)rd_enc(&a, (unsigned int)rd_fixed(&a, 1) & 0x0f, 1);
            else
                return;                          /* 'S': a signal frame */
        }
        if (a.bad)
            return;
        c.p = a.end;
    } else if (aug[0] != '\0') {
        return;
    }
    begin = rd_enc(&r, fde_enc, 0);
    range = rd_enc(&r, fde_enc, 1);
    if (r.bad || ip < begin || ip - begin >= range)
        return;
    if (aug[0] == 'z') {
        len = rd_uleb(&r);
        if (r.bad || len > (uint64_t)(r.end - r.p))
            return;
        r.p += len;
    }

    memset(&st, 0, sizeof(st));
    st.cfa_reg = UINT64_MAX;
    st.rbp_how = st.ra_how = KC_SAME;
    if (!cfi_run(&c, begin, UINTPTR_MAX, daf, &st, &st))
        return;
    init = st;
    if (!cfi_run(&r, begin, ip, daf, &st, &init))
        return;
    if ((st.cfa_reg != KC_RSP && st.cfa_reg != KC_RBP) || st.rsp_set
        || st.ra_how != KC_AT || st.rbp_how == KC_OTHER
        || st.cfa_off != (int32_t)st.cfa_off
        || st.ra_off != (int32_t)st.ra_off
        || st.rbp_off != (int32_t)st.rbp_off)
        return;
    rule->start = begin;
    rule->cfa_rbp = st.cfa_reg == KC_RBP;
    rule->cfa_off = (int32_t)st.cfa_off;
    rule->ra_off = (int32_t)st.ra_off;
    rule->rbp_saved = st.rbp_how == KC_AT;
    rule->rbp_off = (int32_t)st.rbp_off;
    rule->ok = 1;
}

/*
 * A miss refills the way not used last; nothing is moved, so a signal's
 * walk sees whole rules.
 */
static const KC_RULE *rule_at(KC_WALK_MEMO *wm, uintptr_t ip)
{
    unsigned int set = (unsigned int)((ip * 0x9e3779b97f4a7c15ULL) >> 59);
    KC_RULE *way = &wm->rule[set * KC_WAYS];
    unsigned int w;

    for (w = 0; w < KC_WAYS; w++)
        if (way[w].ip == ip)
            return &way[w];
    w = wm->refill[set]++ % KC_WAYS;
    rule_for(ip, &way[w]);
    return &way[w];
}

/*
 * The fast walk from kc_origin_admits' registers (ip exact there, a return
 * address - 1 above).  1: the decision is in *verdict; 0: walk the slow way.
 */
#if defined(__has_attribute)
# if __has_attribute(no_sanitize_address)
/* it reads the callers' saved return addresses and rbp, as libgcc does */
__attribute__((no_sanitize_address))
# endif
#endif
static int fast_admits(uintptr_t ip, uintptr_t sp, uintptr_t bp, int cipher,
                       unsigned long long gen, int *verdict)
{
    uintptr_t chain[KC_ORIGIN_DEPTH], outer = 0, sp0 = sp;
    struct dl_find_object fo;
    uint64_t h = (uint64_t)cipher + 1;
    unsigned int n = 0, i;
    int in_crypto = 0;
    KC_WALK_MEMO *wm;
    KC_CHAIN *m;

    if (gen == 0 || (wm = walk_memo()) == NULL)
        return 0;
    if (wm->gen != gen) {
        memset(wm, 0, sizeof(*wm));
        wm->gen = gen;
    }
    for (;;) {
        KC_RULE rule;                    /* a copy: a signal may refill it */
        uintptr_t cfa, ra;

        if (n == KC_ORIGIN_DEPTH)
            return 0;
        chain[n++] = ip;
        h = (h ^ ip) * 0x100000001b3ULL;
        if (in_range(&origin.self, ip)) {
            if (in_crypto) {                   /* as step() refuses */
                *verdict = 0;
                return 1;
            }
        } else if (in_range(&origin.crypto, ip)) {
            in_crypto = 1;
        } else {
            break;                             /* the caller into OpenSSL */
        }
        rule = *rule_at(wm, ip);
        if (!rule.ok)
            return 0;
        if (in_crypto)
            outer = rule.start;
        cfa = (rule.cfa_rbp ? bp : sp) + (uintptr_t)(intptr_t)rule.cfa_off;
        /* callers' frames lie above, near: else a walk gone wrong */
        if (cfa <= sp || cfa - sp0 > KC_WALK_SPAN)
            return 0;
        ra = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)rule.ra_off);
        if (rule.rbp_saved)
            bp = *(const uintptr_t *)(cfa
                                      + (uintptr_t)(intptr_t)rule.rbp_off);
        sp = cfa;
        if (ra == 0)
            return 0;
        ip = ra - 1;
    }

    /* the same chain decided before: its decision, compared in full */
    for (i = 0; i < KC_CHAINS; i++) {
        m = &wm->chain[i];
        if (m->hash == h && m->n == n && m->cipher == (unsigned char)cipher
            && memcmp(m->ip, chain, n * sizeof(chain[0])) == 0) {
            *verdict = m->verdict;
            return 1;
        }
    }
    /* a caller in no loaded object: a walk gone wrong, left to libgcc's */
    if (find_object_fn((void *)ip, &fo) != 0)
        return 0;
    *verdict = caller_admits(ip, gen, in_crypto, outer, cipher);
    m = &wm->chain[wm->next++ % KC_CHAINS];
    m->hash = h;
    m->n = n;
    m->cipher = (unsigned char)cipher;
    m->verdict = (unsigned char)*verdict;
    memcpy(m->ip, chain, n * sizeof(chain[0]));
    return 1;
}

#endif /* KC_FAST_WALK */

/*
 * pctx->core_fn must lie in the libcrypto keycache is bound to: where
 * OpenSSL is another copy (static and unexported, private, a preloaded
 * wrapper of EVP_MAC_init), all its frames would pass for the application's.
 */
static int forked_threaded;

void kc_origin_forked_threaded(void)
{
    forked_threaded = 1;
}

int kc_origin_admits(const KC_PROVCTX *pctx, int cipher)
{
    static int told;
    KC_WALK w = { 0, 0, 0, 0, 0, 0 };

    if (forked_threaded)
        return 0;
    pthread_once(&origin_once, origin_init);
    if (origin.no_unwinder && !__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        kc_debug_log((KC_PROVCTX *)pctx, 1, "warning: libgcc_s.so.1 cannot be "
                     "opened (a sandbox entered after OpenSSL was loaded?): "
                     "who keyed a context cannot be told, so no key is "
                     "cached");
    if (!origin.ok || !in_range(&origin.crypto, (uintptr_t)pctx->core_fn))
        return 0;
    w.cipher = cipher;
    w.gen = load_gen();
#ifdef KC_FAST_WALK
    {
        uintptr_t ip, sp, bp;
        int verdict;

        /* this frame's registers: rbp first, in case an output is rbp */
        __asm__ volatile("movq %%rbp, %0\n\t"
                         "movq %%rsp, %1\n\t"
                         "leaq 0(%%rip), %2"
                         : "=r"(bp), "=r"(sp), "=r"(ip));
        if (fast_admits(ip, sp, bp, cipher, w.gen, &verdict)) {
# ifdef KC_ORIGIN_SELFCHECK
            /* a test build: the slow walk must agree, every time */
            unw.backtrace(step, &w);
            if (w.verdict != verdict)
                abort();
# endif
            return verdict;
        }
    }
#endif
    unw.backtrace(step, &w);
    return w.verdict;
}
