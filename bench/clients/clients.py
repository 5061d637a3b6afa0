# SPDX-License-Identifier: Apache-2.0
"""Python client for bench/clients/run.sh and test/test_clients.sh.

    /usr/bin/python3 clients.py CASE bench N   N ops, the same 32-byte key and
                                               256-byte message every op;
                                               prints the last output
    /usr/bin/python3 clients.py CASE test      fixed keys and messages, one
                                               line per operation

Debian's python3 with python3-cryptography: the standard library's hmac
module and the cryptography package, called the way applications call them.
The "-fix" cases are what a developer writes instead (run.sh --fix): one
keyed object per key, reused; they print their base case's lines.
"""
import hmac
import sys

HMAC_KEYS = (32, 20, 64, 131)
HMAC_MSGS = (0, 1, 64, 256, 1000)
GCM_MSGS = (0, 1, 16, 256, 1000)
ROUNDS = 3


def pat(n, seed):
    """The byte pattern shared by every client: seed + 31 j."""
    return bytes((seed + 31 * j) & 0xff for j in range(n))


def hmac_lines(name, mac):
    for r in range(ROUNDS):
        for kl in HMAC_KEYS:
            for ml in HMAC_MSGS:
                for d in ("sha256", "sha1"):
                    out = mac(pat(kl, kl), pat(ml, ml + 1), d)
                    print(f"{name} {d} r{r} k{kl} m{ml} {out.hex()}")


def hmac_digest():
    return (lambda k, m: hmac.digest(k, m, "sha256"),
            lambda: hmac_lines("digest", hmac.digest))


def hmac_digest_fix():
    # one keyed hmac object per key and digest; each message on a .copy()
    macs = {}

    def mac(k, m, d="sha256"):
        base = macs.get((d, k))
        if base is None:
            base = macs[(d, k)] = hmac.new(k, digestmod=d)
        h = base.copy()
        h.update(m)
        return h.digest()

    one = hmac.new(pat(32, 32), digestmod="sha256")  # the bench's key

    def op(k, m):
        h = one.copy()
        h.update(m)
        return h.digest()

    return op, lambda: hmac_lines("digest", mac)


def hmac_new():
    return (lambda k, m: hmac.new(k, m, "sha256").digest(),
            lambda: hmac_lines("new",
                               lambda k, m, d: hmac.new(k, m, d).digest()))


def crypto_hmac():
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import hmac as chmac
    algs = {"sha256": hashes.SHA256, "sha1": hashes.SHA1}

    def mac(k, m, d="sha256"):
        h = chmac.HMAC(k, algs[d]())
        h.update(m)
        return h.finalize()

    def verify_lines():
        hmac_lines("cryptography", mac)
        for kl in HMAC_KEYS:
            k, m = pat(kl, kl), pat(256, 257)
            tag = bytearray(mac(k, m))
            tag[0] ^= 1
            h = chmac.HMAC(k, hashes.SHA256())
            h.update(m)
            try:
                h.verify(bytes(tag))
                print(f"forged k{kl} accepted")
            except Exception as e:
                print(f"forged k{kl} {type(e).__name__}")

    return mac, verify_lines


def aesgcm(fix=False):
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    nonce = pat(12, 5)
    # the fix: one AESGCM per key, reused (cryptography 38 still keys a new
    # EVP_CIPHER_CTX inside every encrypt and decrypt)
    objs = {}
    if fix:
        def AESGCM(key, new=AESGCM):  # noqa: N802 (stands for the class)
            obj = objs.get(key)
            if obj is None:
                obj = objs[key] = new(key)
            return obj

    def lines():
        for r in range(ROUNDS):
            for ks in (1, 2, 3):
                key = pat(32, ks)
                for i, ml in enumerate(GCM_MSGS):
                    iv = pat(12, ml + r)
                    aad = pat(20, 7) if i % 2 else None
                    ct = AESGCM(key).encrypt(iv, pat(ml, ml + 1), aad)
                    print(f"seal r{r} k{ks} m{ml} {ct.hex()}")
                    pt = AESGCM(key).decrypt(iv, ct, aad)
                    print(f"open r{r} k{ks} m{ml} {pt.hex()}")
                    bad = bytearray(ct)
                    bad[-16] ^= 1
                    try:
                        AESGCM(key).decrypt(iv, bytes(bad), aad)
                        print(f"forged r{r} k{ks} m{ml} accepted")
                    except InvalidTag:
                        print(f"forged r{r} k{ks} m{ml} InvalidTag")

    if fix:
        one = AESGCM(pat(32, 32))  # the bench's key, as a field holds it
        return lambda k, m: one.encrypt(nonce, m, None), lines
    return lambda k, m: AESGCM(k).encrypt(nonce, m, None), lines


def fernet():
    import base64
    from cryptography.fernet import Fernet, InvalidToken
    # Fernet takes 32 bytes: a 16-byte HMAC-SHA256 key and an AES-128 key.
    # Tokens are made with a fixed time and IV, so that runs compare.
    def token(f, m, r):
        return f._encrypt_from_parts(m, 1700000000 + r, pat(16, 11 + r))

    state = {}

    def op(k, m):
        if "f" not in state:
            state["f"] = Fernet(base64.urlsafe_b64encode(k))
            state["t"] = token(state["f"], m, 0)
        return state["f"].decrypt(state["t"])

    def lines():
        for r in range(ROUNDS):
            for ks in (1, 2, 3):
                f = Fernet(base64.urlsafe_b64encode(pat(32, ks)))
                for ml in GCM_MSGS:
                    t = token(f, pat(ml, ml + 1), r)
                    print(f"token r{r} k{ks} m{ml} {t.decode()}")
                    print(f"decrypt r{r} k{ks} m{ml} {f.decrypt(t).hex()}")
                    raw = bytearray(base64.urlsafe_b64decode(t))
                    raw[-1] ^= 1
                    try:
                        f.decrypt(base64.urlsafe_b64encode(bytes(raw)))
                        print(f"forged r{r} k{ks} m{ml} accepted")
                    except InvalidToken:
                        print(f"forged r{r} k{ks} m{ml} InvalidToken")

    return op, lines


CASES = {
    "py-hmac-digest": hmac_digest,
    "py-hmac-new": hmac_new,
    "py-crypto-hmac": crypto_hmac,
    "py-aesgcm": aesgcm,
    "py-fernet": fernet,
    "py-hmac-digest-fix": hmac_digest_fix,
    "py-aesgcm-fix": lambda: aesgcm(fix=True),
}


def main(argv):
    if (len(argv) < 3 or argv[1] not in CASES
            or argv[2] not in ("bench", "test")):
        sys.stderr.write("usage: clients.py {%s} {bench N|test}\n"
                         % "|".join(CASES))
        return 2
    op, lines = CASES[argv[1]]()
    if argv[2] == "test":
        lines()
        return 0
    key, msg, out = pat(32, 32), pat(256, 257), b""
    for _ in range(int(argv[3])):
        out = op(key, msg)
    print(out.hex())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
