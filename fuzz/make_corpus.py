#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the seed corpus for fuzz_diff.c into fuzz/corpus/.

Each seed is an op sequence in the byte format fuzz_diff.c decodes (see
decode() there): byte 0 picks the thread layout, then per op a code byte
and a slot byte (bit 7: a new context is an EVP_CIPHER_CTX), then the op's
own arguments.  The seeds cover the call patterns keycache must get right;
libFuzzer mutates from there.

Usage: fuzz/make_corpus.py [outdir]
"""
import hashlib
import os
import sys

NEW, FREE, DUP, INIT, SET, GET, UPDATE, FINAL, CIPHER, CTRL, QMAC, \
    MUTATE, SWITCH = range(13)

DIGESTS = ["SHA256", "SHA1", "SHA2-512", "sha384", "SHA512-224", "SHA3-256",
           "MD5", "SHA-256", "2.16.840.1.101.3.4.2.1", "MD5-SHA1", "SM3",
           "BLAKE2S-256", "SHAKE128", "RIPEMD160", "MD4", "NULL", "",
           "no-such-digest", "KECCAK-KMAC-128", "SHA2-224"]
# pool keys: index -> length 16, 32, 24, 0, 1, 64, 128, 129
K16, K32, K24, K0, K1, K64, K128, K129 = range(8)
NOKEY = 0xf8


def d(name):
    return DIGESTS.index(name)


def op(code, slot, gcm=False):
    return bytes([code, slot | (0x80 if gcm else 0)])


def size(n):
    """rdsize(): raw values below 128, else an index into the table."""
    table = [0, 1, 4, 7, 8, 11, 12, 13, 15, 16, 17, 20, 31, 32, 33, 48, 63,
             64, 65, 100, 127, 128, 129, 255, 256, 1000, 4096]
    if n < 128:
        return bytes([n])
    i = table.index(n)
    # smallest b >= 0x80 with b % 29 == i
    b = next(b for b in range(0x80, 0x100) if b % 29 == i)
    return bytes([b])


def key(k):
    return bytes([k])


def input_key(raw):
    return bytes([0xf0]) + size(len(raw)) + raw


# ---- HMAC params (decode_hmac_params) ----
# UTF-8 forms (the kind byte's bits above % 12): 0 the string as it is,
# 1 an exactly sized heap copy, 2 the same with the NUL counted
def hp_digest(name, form=0):
    return bytes([0 + 12 * form, d(name)])


def hp_props(i, form=0):
    return bytes([3 + 12 * form, i])


def hp_key(k):
    return bytes([4, k])


def hp_noinit(v=1):
    return bytes([6, v])


def hp_oneshot(v=1):
    return bytes([7, v])


def hp_tlssize(n):
    return bytes([8]) + size(n)


def hparams(*ps):
    return bytes([len(ps)]) + b"".join(ps)


def hmac_init(slot, k, *ps):
    return op(INIT, slot) + key(k) + hparams(*ps)


def update(slot, *pieces, off=0, gcm=False, aad=False):
    b = op(UPDATE, slot, gcm) + bytes([len(pieces) - 1])
    b += b"".join(size(p) for p in pieces) + bytes([off])
    if gcm:
        b += bytes([1 if aad else 0])
    return b


def final(slot, outsize=None, null=False, gcm=False):
    if null:
        return op(FINAL, slot, gcm) + bytes([0])
    if outsize is not None:
        return op(FINAL, slot, gcm) + bytes([0x09]) + size(outsize)
    return op(FINAL, slot, gcm) + bytes([0x01])


def qmac(dig, k, n, outsize=None):
    b = op(QMAC, 0) + bytes([0]) + size(n) + bytes([5]) + bytes([d(dig)])
    b += key(k) if isinstance(k, int) else k
    return b + (bytes([1]) + size(outsize) if outsize else bytes([0]))


# ---- GCM (decode_gcm_set / decode_gcm_ctrl) ----
def gp_ivlen(n):
    return bytes([0]) + size(n)


def gp_tag(raw):
    return bytes([2, len(raw)]) + raw


def gp_tlsaad(raw):
    return bytes([6]) + raw


def gparams(*ps):
    return bytes([len(ps)]) + b"".join(ps)


def gcm_init(slot, enc, cipher, k, iv=0, params=b"\x00"):
    """enc 1/0/-1; cipher 0 keep, 1..3 AES-128/192/256-GCM, 4..6 legacy
    GCM, 7..12 AES-128/192/256-OCB, AES-128/192/256-SIV (one more byte)."""
    for cand in range(256):
        civ = (cand & 0x80 == 0x80) == (iv is None) and \
            (iv is None or (cand >> 5) % 4 == iv)
        aead = (cand >> 2) & 7 == 7
        if cand % 3 - 1 == enc and civ and (
                (cipher >= 7 and aead)
                or (cipher < 7 and not aead and (cand >> 2) % 7 == cipher)):
            break
    else:
        raise ValueError("no byte for enc=%d cipher=%d iv=%r" % (enc, cipher, iv))
    extra = bytes([cipher - 7]) if cipher >= 7 else b""
    return op(INIT, slot, True) + bytes([cand]) + extra + key(k) + params


def gcm_set(slot, *ps):
    return op(SET, slot, True) + gparams(*ps)


def ctrl(slot, which, *args, flags=0):
    """decode_gcm_ctrl(): which = b % 9, flags = bits that must be set."""
    b = next(b for b in range(256) if b % 9 == which and b & flags == flags
             and (flags & 0x40 or not b & 0x40))
    return op(CTRL, slot, True) + bytes([b]) + bytes(args)


def get_tag(slot, n=16):
    return ctrl(slot, 2, n)


def set_tag_ctrl(slot, raw):
    return ctrl(slot, 1, len(raw)) + raw


def cipher(slot, n, mode="inplace"):
    m = {"aad": 1, "final": 2, "inplace": 4, "out": 0}[mode]
    return op(CIPHER, slot, True) + bytes([0]) + size(n) + bytes([3, m])


def get(slot, api, gcm=False):
    return op(GET, slot, gcm) + bytes([api])


# ---- CMAC, GMAC, KMAC (decode_fam_params): slot byte bit 6, family bits 4-5
CMAC, GMAC, KMAC128, KMAC256 = range(4)
FAM_CIPHERS = ["AES-128-CBC", "AES-192-CBC", "AES-256-CBC", "AES-128-GCM",
               "AES-192-GCM", "AES-256-GCM", "aes-256-cbc", "DES-EDE3-CBC",
               "ARIA-128-GCM", "AES-128-ECB", "no-such-cipher", ""]


def fop(code, slot, fam):
    return bytes([code, slot | 0x40 | (fam << 4)])


def fp_cipher(name, form=0):
    return bytes([0 + 12 * form, FAM_CIPHERS.index(name)])


def fp_props(i, form=0):
    return bytes([3 + 12 * form, i])


def fp_iv(n=12):
    # 5: a 12-byte IV; 0x41 (65 % 12 == 5, bit 6): the length follows
    return bytes([5]) if n == 12 else bytes([0x41]) + size(n)


def fp_custom(n):
    return bytes([7]) + size(n) + (bytes([3]) if n > 0 else b"")


def fp_size(n):
    return bytes([8]) + size(n)


def fp_xof(v):
    return bytes([9, v])


def fp_key(k):
    return bytes([4, k])


def fparams(*ps):
    return bytes([len(ps)]) + b"".join(ps)


def fam_init(slot, fam, k, *ps):
    return fop(INIT, slot, fam) + key(k) + fparams(*ps)


def fam_set(slot, fam, *ps):
    return fop(SET, slot, fam) + fparams(*ps)


def fam_final(slot, xof=False):
    return op(FINAL, slot) + bytes([0x01 if xof else 0x11])


def fam_qmac(fam, sub, k, n, *ps):
    sel = FAM_CIPHERS.index(sub) if sub is not None else 0
    return fop(QMAC, 0, fam) + bytes([0]) + size(n) + bytes([5]) \
        + bytes([sel + 12 if sub is not None else 0]) + fparams(*ps) + key(k) \
        + bytes([0])


def seeds():
    s = {}
    # HMAC one message per fresh context, same key: hits after the first
    body = b""
    for _ in range(4):
        body += op(NEW, 0) + hmac_init(0, K32, hp_digest("SHA256"))
        body += update(0, 100) + final(0) + op(FREE, 0)
    s["hmac_repeat_key"] = b"\x00" + body
    for name in ["SHA1", "SHA2-512", "sha384", "SHA512-224", "SHA3-256",
                 "MD5", "SM3", "BLAKE2S-256", "SHAKE128", "RIPEMD160",
                 "MD4", "NULL", "", "no-such-digest", "MD5-SHA1",
                 "2.16.840.1.101.3.4.2.1"]:
        tag = hashlib.sha1(name.encode()).hexdigest()[:6]
        s["hmac_digest_" + tag] = b"\x00" + hmac_init(0, K16, hp_digest(name)) \
            + update(0, 33, 64) + final(0) + hmac_init(0, K16) \
            + update(0, 7) + final(0)
    for k in range(8):
        s["hmac_keylen_%d" % k] = b"\x01" + hmac_init(
            1, k, hp_digest("SHA256")) + update(1, 64) + final(1) \
            + hmac_init(1, NOKEY) + update(1, 64) + final(1)
    s["hmac_input_key"] = b"\x00" + hmac_init(
        0, 0, hp_digest("SHA2-512"))[:2] + input_key(b"Jefe") \
        + hparams(hp_digest("SHA2-512")) + update(0, 28) + final(0)
    s["hmac_key_param"] = b"\x00" + op(SET, 0) + hparams(
        hp_digest("SHA1"), hp_key(K64)) + update(0, 50) + final(0) \
        + op(SET, 0) + hparams(hp_digest("SHA256")) + update(0, 50) + final(0)
    s["hmac_dup_midstream"] = b"\x00" + hmac_init(0, K24, hp_digest("SHA256")) \
        + update(0, 17) + op(DUP, 0 | (1 << 2)) + update(0, 5) + update(1, 9) \
        + final(1) + final(0) + final(0) + op(FREE, 0) + final(1)
    s["hmac_final_sizes"] = b"\x00" + hmac_init(0, K32, hp_digest("SHA256")) \
        + final(0, null=True) + final(0, outsize=31) + final(0, outsize=32) \
        + get(0, 1) + get(0, 2)
    s["hmac_unkeyed"] = b"\x00" + op(NEW, 0) + get(0, 1) + update(0, 3) \
        + final(0) + hmac_init(0, NOKEY) + op(GET, 0) + bytes([0, 2, 0, 1])
    s["hmac_noinit_first"] = b"\x00" + op(SET, 0) + hparams(
        hp_digest("SHA256"), hp_noinit()) + hmac_init(0, K16) + update(0, 8) \
        + final(0)
    s["hmac_oneshot"] = b"\x00" + hmac_init(0, K16, hp_digest("SHA1"),
                                            hp_oneshot()) + update(0, 8) + final(0)
    s["hmac_tls"] = b"\x00" + hmac_init(0, K32, hp_digest("SHA256"),
                                        hp_tlssize(100)) \
        + update(0, 13) + update(0, 80) + final(0)
    s["hmac_props"] = b"\x00" + hmac_init(0, K16, hp_digest("SHA256"),
                                          hp_props(2)) + final(0) \
        + hmac_init(1, K16, hp_digest("SHA256"), hp_props(1)) + final(1)
    s["hmac_redigest"] = b"\x00" + hmac_init(0, K16, hp_digest("SHA256")) \
        + op(SET, 0) + hparams(hp_digest("SHA-256")) + update(0, 9) + final(0) \
        + op(SET, 0) + hparams(hp_digest("SHA1")) + update(0, 9) + final(0) \
        + hmac_init(0, K16) + final(0)
    s["hmac_mutate_key"] = b"\x00" + hmac_init(0, K16, hp_digest("SHA256")) \
        + final(0) + op(MUTATE, 0) + bytes([K16, 3, 0x41]) \
        + hmac_init(1, K16, hp_digest("SHA256")) + final(1) \
        + hmac_init(0, K16) + final(0)
    s["qmac"] = b"\x00" + qmac("SHA256", K32, 100) + qmac("SHA256", K32, 100) \
        + qmac("SHA1", K0, 0) + qmac("no-such-digest", K16, 10) \
        + qmac("SHA2-512", K129, 1000) + qmac("SHA256", K16, 5, outsize=16)
    s["hmac_threads"] = b"\x00" + hmac_init(0, K16, hp_digest("SHA256")) \
        + update(0, 10) + op(SWITCH, 0) + update(0, 10) + final(0) \
        + hmac_init(1, K16, hp_digest("SHA256")) + final(1)
    s["hmac_threads_overlap"] = b"\x01" + s["hmac_threads"][1:]
    s["hmac_evict"] = b"\x00" + b"".join(
        hmac_init(i % 4, k, hp_digest("SHA256")) + update(i % 4, 5)
        + final(i % 4) for i, k in enumerate([K16, K32, K24, K64, K16, K1,
                                              K32, K0, K16]))

    # AES-GCM
    for c in (1, 2, 3):
        s["gcm_enc_%d" % c] = b"\x00" + gcm_init(0, 1, c, K32, 0) \
            + update(0, 20, gcm=True, aad=True) + update(0, 33, 16, gcm=True) \
            + final(0, gcm=True) + get_tag(0)
        s["gcm_dec_%d" % c] = b"\x00" + gcm_init(
            0, 0, c, K32, 1, gparams(gp_tag(bytes(range(16))))) \
            + update(0, 13, gcm=True, aad=True) + update(0, 64, gcm=True) \
            + final(0, gcm=True)
    # AES-OCB: one key both ways (a template per direction), twice so the
    # second round hits; an IV length set before the key
    ocb = b""
    for _ in range(2):
        ocb += gcm_init(0, 1, 7, K16, 0) + update(0, 13, gcm=True, aad=True) \
            + update(0, 48, gcm=True) + final(0, gcm=True) + get_tag(0) \
            + gcm_init(1, 0, 7, K16, 0) + update(1, 13, gcm=True, aad=True) \
            + update(1, 48, gcm=True) + final(1, gcm=True)
    s["ocb_directions"] = b"\x00" + ocb
    s["ocb_ivlen_then_key"] = b"\x00" + (gcm_init(0, 1, 9, NOKEY, None) \
        + gcm_set(0, gp_ivlen(15)) + gcm_init(0, -1, 0, K32, 1) \
        + update(0, 40, gcm=True) + final(0, gcm=True) + get_tag(0)) * 2
    # AES-SIV: several AAD components, encrypt then decrypt, twice
    siv = b""
    for _ in range(2):
        siv += gcm_init(2, 1, 10, K32, None) \
            + update(2, 5, gcm=True, aad=True) \
            + update(2, 17, gcm=True, aad=True) + update(2, 40, gcm=True) \
            + final(2, gcm=True) + get_tag(2) \
            + gcm_init(3, 0, 12, K64, None) + update(3, 40, gcm=True) \
            + final(3, gcm=True)
    s["siv_aad_components"] = b"\x00" + siv
    s["gcm_legacy"] = b"\x00" + gcm_init(0, 1, 6, K32, 2) \
        + update(0, 50, gcm=True) + final(0, gcm=True) + get_tag(0, 12) \
        + gcm_init(1, 1, 4, K16, 2) + update(1, 50, gcm=True) \
        + final(1, gcm=True) + get_tag(1)
    s["gcm_record_before_key"] = b"\x00" + gcm_init(0, 0, 3, NOKEY, None) \
        + gcm_set(0, gp_ivlen(16), gp_tag(b"\x11" * 12)) \
        + gcm_init(0, -1, 0, NOKEY, 1) + gcm_init(0, -1, 0, K32, None) \
        + update(0, 40, gcm=True) + final(0, gcm=True)
    s["gcm_ivlen_then_key"] = b"\x00" + gcm_init(0, 1, 1, NOKEY, None) \
        + ctrl(0, 0) + size(16) + gcm_init(0, 1, 0, K16, 0) \
        + update(0, 16, gcm=True) + final(0, gcm=True) + get_tag(0) \
        + get(0, 1, True) + get(0, 2, True) + get(0, 3, True)
    s["gcm_no_iv"] = b"\x00" + gcm_init(0, 1, 3, K32, None) \
        + update(0, 30, gcm=True) + final(0, gcm=True) + get_tag(0) \
        + gcm_init(0, 1, 0, NOKEY, 0) + update(0, 30, gcm=True) \
        + final(0, gcm=True) + get_tag(0)
    s["gcm_reuse_key"] = b"\x00" + b"".join(
        op(NEW, 0, True) + gcm_init(0, 1, 3, K32, i % 4)
        + update(0, 64, gcm=True) + final(0, gcm=True) + get_tag(0)
        + op(FREE, 0) for i in range(4))
    s["gcm_dup"] = b"\x00" + gcm_init(0, 1, 1, K16, 0) \
        + update(0, 10, gcm=True) + op(DUP, 0 | (2 << 2)) \
        + update(2, 10, gcm=True) + update(0, 10, gcm=True) \
        + final(0, gcm=True) + final(2, gcm=True) + get_tag(0) + get_tag(2)
    s["gcm_cipher_api"] = b"\x00" + gcm_init(0, 1, 1, K16, 0) \
        + cipher(0, 13, "aad") + cipher(0, 40, "inplace") \
        + cipher(0, 0, "final") + get_tag(0)
    s["gcm_tls"] = b"\x00" + gcm_init(0, 1, 1, K16, None) \
        + ctrl(0, 5, flags=0x20) + ctrl(0, 4) + bytes(11) + b"\x00\x30" \
        + cipher(0, 48 + 24, "inplace") + ctrl(0, 6, 9)
    s["gcm_switch_cipher"] = b"\x00" + gcm_init(0, 1, 1, K16, 0) \
        + update(0, 8, gcm=True) + gcm_init(0, 1, 3, K32, 0) \
        + update(0, 8, gcm=True) + final(0, gcm=True) + get_tag(0)
    s["gcm_threads"] = b"\x00" + gcm_init(0, 1, 2, K24, 0) \
        + update(0, 8, gcm=True) + op(SWITCH, 0) + update(0, 8, gcm=True) \
        + final(0, gcm=True) + get_tag(0) + gcm_init(1, 1, 2, K24, 0) \
        + final(1, gcm=True) + get_tag(1)
    s["mixed_interleave"] = b"\x01" + hmac_init(0, K16, hp_digest("SHA256")) \
        + gcm_init(1, 1, 1, K16, 0) + update(0, 5) + update(1, 5, gcm=True) \
        + hmac_init(2, K16, hp_digest("SHA256")) + op(MUTATE, 0) \
        + bytes([K16, 0, 1]) + gcm_init(3, 1, 1, K16, 0) + final(0) \
        + final(1, gcm=True) + final(2) + update(3, 5, gcm=True) \
        + final(3, gcm=True) + get_tag(1) + get_tag(3) + op(SWITCH, 0) \
        + op(FREE, 1) + gcm_init(1, 1, 1, K16, 0) + final(1, gcm=True) \
        + get_tag(1)

    # CMAC, GMAC, KMAC: the template families
    for sub, k in (("AES-128-CBC", K16), ("AES-256-CBC", K32)):
        body = b""
        for _ in range(4):
            body += fop(NEW, 0, CMAC) + fam_init(0, CMAC, k, fp_cipher(sub)) \
                + update(0, 40) + fam_final(0) + op(FREE, 0)
        s["cmac_repeat_" + sub[4:7]] = b"\x00" + body
    s["cmac_set_then_key"] = b"\x00" + fam_set(0, CMAC, fp_cipher("AES-192-CBC")) \
        + fam_set(0, CMAC, fp_key(K24)) + update(0, 16) + fam_final(0) \
        + fam_init(0, CMAC, NOKEY) + update(0, 3) + fam_final(0) \
        + fam_set(1, CMAC, fp_cipher("AES-192-CBC"), fp_key(K24)) \
        + fam_final(1) + fam_set(1, CMAC, fp_cipher("AES-128-CBC")) \
        + fam_init(1, CMAC, K16) + fam_final(1)
    # UTF-8 params from exactly sized heap buffers, the NUL counted or not
    body = b""
    for form in (1, 2):
        for _ in range(3):
            body += fop(NEW, 0, CMAC) \
                + fam_set(0, CMAC, fp_cipher("AES-128-CBC", form),
                          fp_props(0, form)) \
                + fam_init(0, CMAC, K16) + update(0, 40) + fam_final(0) \
                + op(FREE, 0)
            body += fop(NEW, 1, GMAC) \
                + fam_init(1, GMAC, K32, fp_cipher("AES-256-GCM", form),
                           fp_iv()) + update(1, 40) + fam_final(1) \
                + op(FREE, 1)
            body += op(NEW, 2) + hmac_init(2, K16, hp_digest("SHA256", form),
                                           hp_props(0, form)) \
                + update(2, 40) + final(2) + op(FREE, 2)
    s["utf8_heap_forms"] = b"\x00" + body
    s["cmac_odd_ciphers"] = b"\x00" + b"".join(
        fam_init(i % 4, CMAC, K24, fp_cipher(c)) + update(i % 4, 9)
        + fam_final(i % 4) for i, c in enumerate(
            ["DES-EDE3-CBC", "AES-128-ECB", "no-such-cipher", "",
             "aes-256-cbc", "AES-128-GCM"]))
    s["cmac_dup_threads"] = b"\x00" + fam_init(0, CMAC, K32,
                                               fp_cipher("AES-256-CBC")) \
        + update(0, 20) + op(DUP, 0 | (1 << 2)) + update(1, 5) + update(0, 7) \
        + fam_final(0) + op(SWITCH, 0) + fam_final(1) \
        + fam_init(2, CMAC, K32, fp_cipher("AES-256-CBC")) + fam_final(2) \
        + op(FREE, 0) + fam_init(0, CMAC, K32, fp_cipher("AES-256-CBC")) \
        + fam_final(0)
    for sub, k in (("AES-128-GCM", K16), ("AES-256-GCM", K32)):
        body = b""
        for i in range(4):
            body += fop(NEW, 0, GMAC) \
                + fam_init(0, GMAC, k, fp_cipher(sub), fp_iv()) \
                + update(0, 20 + i) + fam_final(0) + op(FREE, 0)
        s["gmac_repeat_" + sub[4:7]] = b"\x00" + body
    s["gmac_iv_first"] = b"\x00" + fam_set(0, GMAC, fp_cipher("AES-192-GCM")) \
        + fam_set(0, GMAC, fp_iv(16)) + fam_init(0, GMAC, K24, fp_iv(8)) \
        + update(0, 30) + fam_final(0) + fam_init(0, GMAC, NOKEY, fp_iv(60)) \
        + update(0, 30) + fam_final(0) + fam_set(1, GMAC, fp_iv()) \
        + fam_set(1, GMAC, fp_cipher("AES-128-GCM"), fp_key(K16), fp_iv(13)) \
        + update(1, 5) + fam_final(1)
    s["gmac_iv_before_key"] = b"\x00" + b"".join(
        fop(NEW, i % 2, GMAC) + fam_set(i % 2, GMAC, fp_cipher("AES-256-GCM"))
        + fam_set(i % 2, GMAC, fp_iv(16 if i < 2 else 12))
        + fam_init(i % 2, GMAC, K32) + update(i % 2, 33) + fam_final(i % 2)
        for i in range(4))
    s["gmac_qmac"] = b"\x00" + fam_qmac(GMAC, "AES-256-GCM", K32, 40, fp_iv()) \
        + fam_qmac(GMAC, "AES-256-GCM", K32, 40, fp_iv(16)) \
        + fam_qmac(GMAC, "AES-128-GCM", K16, 0, fp_iv(0)) \
        + fam_qmac(GMAC, "ARIA-128-GCM", K16, 7, fp_iv())
    for fam, name in ((KMAC128, "kmac128"), (KMAC256, "kmac256")):
        s[name + "_custom_size"] = b"\x00" \
            + fam_init(0, fam, K32, fp_custom(21), fp_size(32)) \
            + update(0, 4) + fam_final(0) + fam_init(0, fam, NOKEY) \
            + update(0, 4) + fam_final(0) \
            + fam_init(1, fam, K32, fp_custom(21), fp_size(32)) \
            + update(1, 4) + fam_final(1) \
            + fam_set(2, fam, fp_xof(1), fp_size(48)) \
            + fam_init(2, fam, K64) + update(2, 100) + fam_final(2, xof=True) \
            + fam_set(3, fam, fp_key(K16)) + update(3, 1) \
            + fam_init(3, fam, NOKEY) + fam_final(3)
        s[name + "_qmac"] = b"\x00" + fam_qmac(fam, None, K32, 30) \
            + fam_qmac(fam, None, K32, 30) \
            + fam_qmac(fam, None, K16, 30, fp_custom(5)) \
            + fam_qmac(fam, None, K1, 3) + fam_qmac(fam, None, K129, 3)
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    os.makedirs(out, exist_ok=True)
    total = 0
    for name, data in sorted(seeds().items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        total += len(data)
    print("%d seeds, %d bytes in %s" % (len(seeds()), total, out))


if __name__ == "__main__":
    main()
