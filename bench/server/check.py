#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Same responses from every arm of a bench/server server (stdlib only).

    check.py SERVER OUTDIR ARM=PORT[:PATH] ...

The first ARM is the reference (the default provider).  For every arm a
transcript of deterministic requests is written to OUTDIR/SERVER.ARM.txt:

  cookie servers (dn-cookie, rb-puma; PATH /cookie, or /reuse for the fix):
    a request without cookies, then a chain of CHAIN requests each sending
    the cookies the previous response set (so every encrypted cookie the arm
    made, with its random IV, is decrypted by the same arm in the next
    request), then the chain's cookies with the signature and with the
    ciphertext altered (both must be rejected), then the reference arm's
    cookies (each arm must accept the other's);
  dn-auth (PATH /me): /me without a cookie (401) and with the reference's
    login cookie, altered (401), then a login per arm, and every arm's login
    cookie sent to every arm (each arm's Data Protection must accept the
    others').

A transcript line is the status and the body; the bodies carry only
deterministic content (verification results, counters, the re-signed
cookie, the claims), so the transcripts must be byte-equal across arms.
Writes OUTDIR/SERVER.cookie, the Cookie header wrk sends (the reference's
valid cookies; for dn-auth one line per user, KC_CHECK_USERS users logged
in at the reference), and prints the number of requests each arm served.
Exit status 1 when transcripts differ or a request failed.
"""
import http.client
import os
import sys

CHAIN = int(os.environ.get("KC_CHECK_CHAIN", "40"))
USERS = int(os.environ.get("KC_CHECK_USERS", "1"))


class Arm:
    def __init__(self, spec):
        name, rest = spec.split("=", 1)
        port, _, path = rest.partition(":")
        self.name, self.port, self.path = name, int(port), path
        self.conn = None
        self.count = 0
        self.lines = []

    def get(self, path, cookie=None):
        """(status, body, {cookie name: value}) of one GET; keeps the
        connection, alternating between two so that more than one of the
        server's threads serves them."""
        headers = {"Cookie": cookie} if cookie else {}
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = [http.client.HTTPConnection("127.0.0.1",
                                                        self.port,
                                                        timeout=30)
                             for _ in range(2)]
            c = self.conn[self.count % 2]
            try:
                c.request("GET", path, headers=headers)
                r = c.getresponse()
                body = r.read().decode("utf-8", "replace")
                break
            except (http.client.HTTPException, OSError):
                if attempt == 2:
                    raise
                self.conn = None
        self.count += 1
        set_cookies = {}
        for h in r.msg.get_all("Set-Cookie") or []:
            k, _, v = h.split(";", 1)[0].partition("=")
            set_cookies[k.strip()] = v
        return r.status, body, set_cookies

    def log(self, what, status, body):
        self.lines.append(f"{what}: {status} {body.rstrip()}")


def header(cookies):
    return "; ".join(f"{k}={v}" for k, v in cookies.items())


def alter(value):
    """value with its middle character changed (still a valid encoding)"""
    i = len(value) // 2
    c = "A" if value[i] != "A" else "B"
    return value[:i] + c + value[i + 1:]


def cookie_server(arms):
    finals = {}
    for a in arms:
        st, body, ck = a.get(a.path)
        a.log("fresh", st, body)
        for i in range(CHAIN):
            st, body, nck = a.get(a.path, header(ck))
            a.log(f"chain {i}", st, body)
            if st != 200 or not nck:
                break
            ck = nck
        finals[a.name] = ck
        for name in ck:
            bad = dict(ck, **{name: alter(ck[name])})
            st, body, _ = a.get(a.path, header(bad))
            a.log(f"altered {name}", st, body)
    ref = finals[arms[0].name]
    for a in arms:
        st, body, _ = a.get(a.path, header(ref))
        a.log(f"reference's cookies", st, body)
    return [header(ref)]


def auth_server(arms):
    ref = arms[0]
    st, body, ck = ref.get("/login?user=alice")
    ref.lines.append(f"login alice: {st} {body.rstrip()}")
    wrk_cookie = header(ck)
    logins = {}
    for a in arms:
        st, body, _ = a.get(a.path)
        a.log("no cookie", st, body)
        for i in range(CHAIN):
            st, body, _ = a.get(a.path, wrk_cookie)
            a.log(f"alice {i}", st, body)
        st, body, _ = a.get(a.path, header({k: alter(v)
                                             for k, v in ck.items()}))
        a.log("altered", st, body)
        st, body, lck = a.get("/login?user=bob")
        a.log("login bob", st, body)
        logins[a.name] = header(lck)
    for a in arms:
        for name, c in logins.items():
            st, body, _ = a.get(a.path, c)
            a.log(f"bob from {'ref' if name == ref.name else 'arm'}",
                  st, body)
    # the reference's own login line is not part of the comparison
    ref.lines.pop(0)
    # USERS cookies for wrk to rotate through, each user's own (Data
    # Protection derives a key per cookie from its key modifier)
    cookies = [wrk_cookie]
    for i in range(1, USERS):
        st, _, lck = ref.get(f"/login?user=user{i}")
        if st != 200:
            raise OSError(f"login user{i}: status {st}")
        cookies.append(header(lck))
    return cookies


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    server, outdir = sys.argv[1], sys.argv[2]
    arms = [Arm(s) for s in sys.argv[3:]]
    try:
        wrk_cookie = (auth_server if server == "dn-auth"
                      else cookie_server)(arms)
    except (http.client.HTTPException, OSError) as e:
        print(f"FAIL {server}: request failed: {e!r}", file=sys.stderr)
        return 1
    with open(os.path.join(outdir, f"{server}.cookie"), "w") as f:
        f.write("\n".join(wrk_cookie) + "\n")
    status = 0
    ref = arms[0]
    for a in arms:
        with open(os.path.join(outdir, f"{server}.{a.name}.txt"), "w") as f:
            f.write("\n".join(a.lines) + "\n")
        ok = sum(1 for ln in a.lines if ": 200 " in ln)
        if ok < CHAIN:
            print(f"FAIL {server} {a.name}: {ok} responses with status 200",
                  file=sys.stderr)
            status = 1
        if a is not ref and a.lines != ref.lines:
            i = next((i for i, (x, y) in enumerate(zip(ref.lines, a.lines))
                      if x != y), min(len(ref.lines), len(a.lines)))
            print(f"FAIL {server}: {a.name} differs from {ref.name} at line "
                  f"{i + 1}:\n  {ref.name}: {ref.lines[i:i + 1]}\n"
                  f"  {a.name}: {a.lines[i:i + 1]}", file=sys.stderr)
            status = 1
    print(" ".join(f"{a.name}={a.count}" for a in arms))
    return status


if __name__ == "__main__":
    sys.exit(main())
