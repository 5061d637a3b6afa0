#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench/server's numbers (stdlib only).

    report.py wrk FILE TICKS              one wrk --latency output and the
                                          server's CPU ticks over it:
                                          "requests seconds rps p99_us
                                          errors cpu_us_per_request"
    report.py table DIR [SVG [CAPTION]]   the table of DIR/results.csv and
                                          DIR/counters.csv; SVG: the plot

results.csv: server,arm,round,requests,seconds,rps,p99_us,errors,cpu_us_req
counters.csv: server,arm,hits,misses,passthrough,served
"""
import csv
import os
import re
import statistics
import sys
from xml.sax.saxutils import escape

ARM_NAMES = {"def": "default", "kc": "keycache", "fix": "per-thread fix"}
SERVER_NAMES = {"dn-cookie": "dn-cookie: ASP.NET Core, HMACSHA1.HashData, new "
                "AesGcm",
                "dn-auth": "dn-auth: ASP.NET Core cookie authentication",
                "rb-puma": "rb-puma: puma, ActiveSupport MessageVerifier + "
                "MessageEncryptor"}
ARM_COLOURS = {"def": "#888888", "kc": "#2a7ab0", "fix": "#d9822b"}
UNITS = {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}


def wrk(path, ticks):
    text = open(path).read()
    req = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", text)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)
    if not (req and rps and p99):
        sys.exit(f"cannot read wrk's output {path}")
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), "
                       r"write (\d+), timeout (\d+)", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors = (sum(int(x) for x in socket.groups()) if socket else 0) \
        + (int(non2xx.group(1)) if non2xx else 0)
    n = int(req.group(1))
    secs = float(req.group(2)) * UNITS[req.group(3)] / 1e6
    clk = os.sysconf("SC_CLK_TCK")
    cpu = int(ticks) / clk * 1e6 / n if n else 0.0
    print(n, f"{secs:.3f}", rps.group(1),
          f"{float(p99.group(1)) * UNITS[p99.group(2)]:.0f}", errors,
          f"{cpu:.2f}")


def spread(xs, fmt):
    """median [min-max]"""
    return (fmt.format(statistics.median(xs)) + " [" + fmt.format(min(xs))
            + "–" + fmt.format(max(xs)) + "]")


def load(d):
    rows = list(csv.DictReader(open(os.path.join(d, "results.csv"))))
    counters = {}
    cpath = os.path.join(d, "counters.csv")
    if os.path.exists(cpath):
        for r in csv.DictReader(open(cpath)):
            counters[(r["server"], r["arm"])] = r
    data = {}
    for r in rows:
        data.setdefault(r["server"], {}).setdefault(r["arm"], []).append(r)
    return data, counters


def per_round(arms, f, key="cpu_us_req"):
    """f(values of one round by arm) for every round all arms ran"""
    by = {}
    for arm, rs in arms.items():
        for r in rs:
            by.setdefault(r["round"], {})[arm] = float(r[key])
    return [f(v) for v in by.values() if len(v) == len(arms)]


def ratios(arms, arm, key):
    """arm / default per round (for default itself: each round / median)"""
    if arm == "def":
        vs = [float(r[key]) for r in arms["def"]]
        med = statistics.median(vs)
        return [v / med for v in vs]
    return per_round({"def": arms["def"], arm: arms[arm]},
                     lambda v: v[arm] / v["def"], key)


def table(d):
    data, counters = load(d)
    out = ["| server | arm | CPU µs/request | requests/s | p99 ms "
           "| CPU vs default | keycache hits/request, hit rate |",
           "|---|---|---:|---:|---:|---:|---|"]
    notes = []
    for server, arms in data.items():
        for arm in ("def", "kc", "fix"):
            if arm not in arms:
                continue
            rs = arms[arm]
            cpu = [float(r["cpu_us_req"]) for r in rs]
            rps = [float(r["rps"]) for r in rs]
            p99 = [float(r["p99_us"]) / 1000 for r in rs]
            if arm == "def":
                rel = ""
            else:
                rel = spread(ratios(arms, arm, "cpu_us_req"), "{:.3f}") + "x"
            c = counters.get((server, arm))
            if c is None or c["hits"] == "not-loaded":
                hits = "not loaded"
            else:
                h, m, p = (int(c[k]) for k in ("hits", "misses",
                                               "passthrough"))
                served = int(c["served"])
                hits = (f"{h / served:.2f}/req, "
                        f"{100 * h / max(1, h + m + p):.1f}% "
                        f"({h} hits, {m} misses, {p} pass-through)")
            if arm != "def":
                rs_ = ratios(arms, arm, "cpu_us_req")
                q = statistics.quantiles(rs_, n=4) if len(rs_) > 1 else rs_
                if q and q[0] < 1 < q[-1]:
                    notes.append(f"{server} {ARM_NAMES[arm]}: the middle "
                                 "half of its per-round CPU ratios "
                                 f"({q[0]:.3f}–{q[-1]:.3f}) spans 1.0: this "
                                 "run does not resolve the difference "
                                 "(noise: more rounds or a quieter machine)")
            out.append(f"| {server} | {ARM_NAMES[arm]} | "
                       f"{spread(cpu, '{:.1f}')} | {spread(rps, '{:.0f}')} | "
                       f"{spread(p99, '{:.2f}')} | {rel} | {hits} |")
        if "fix" in arms and "kc" in arms:
            med = {a: statistics.median(float(r["cpu_us_req"])
                                        for r in arms[a]) for a in arms}
            # per round too, but a round where the fix saved little makes
            # its ratio explode: its quartiles, not its extremes
            share = sorted(per_round(arms, lambda v: (v["def"] - v["kc"])
                                     / (v["def"] - v["fix"])
                                     if v["def"] != v["fix"] else 0.0))
            if med["def"] <= med["fix"]:
                notes.append(f"{server}: the per-thread fix saved no CPU in "
                             "this run's medians: no share to give")
            else:
                q = (statistics.quantiles(share, n=4) if len(share) > 1
                     else share * 3)
                notes.append(
                    f"{server}: keycache delivers "
                    f"{100 * (med['def'] - med['kc']) / (med['def'] - med['fix']):.0f}%"
                    " of the per-thread fix's CPU saving: (default - "
                    "keycache) / (default - fix) of the medians; per round "
                    f"median {100 * statistics.median(share):.0f}%, "
                    f"quartiles {100 * q[0]:.0f}–{100 * q[2]:.0f}%")
    print("\n".join(out))
    print()
    print("median [min–max] over rounds; CPU µs/request = server "
          "utime+stime over the wrk run / requests wrk completed")
    for n in notes:
        print(n)
    return data


def svg(data, path, caption):
    """A bar per server and arm, relative to the default arm: CPU per
    request on the left, requests/s on the right.  Bars: the median over
    rounds of the arm / default ratio of the same round (the table's "CPU
    vs default"); whiskers: its min-max; labels: the absolute median."""
    rows = [(s, a) for s, arms in data.items()
            for a in ("def", "kc", "fix") if a in arms]
    bar, gap, top, left, pw, vmax = 16, 10, 50, 110, 350, 1.4
    servers = list(data)
    h = top + len(rows) * (bar + 4) + len(servers) * (gap + 18) + 50
    w = left + 2 * pw + 60
    scale = (pw - 70) / vmax
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
         f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>']
    panels = [("server CPU per request, vs default (lower is better)",
               "cpu_us_req", left, "{:.1f} µs"),
              ("requests/s, vs default (higher is better)", "rps",
               left + pw + 30, "{:.0f}/s")]
    for title, key, x0, fmt in panels:
        o.append(f'<text x="{x0}" y="{top - 30}" font-weight="bold">'
                 f'{escape(title)}</text>')
        y = top
        prev = None
        for s, a in rows:
            if s != prev:
                if prev is not None:
                    y += gap
                if x0 == left:
                    o.append(f'<text x="8" y="{y + 12}" font-weight="bold">'
                             f'{escape(SERVER_NAMES.get(s, s))}</text>')
                y += 18
                prev = s
            rs = ratios(data[s], a, key)
            if not rs:
                continue
            med, lo, hi = (statistics.median(rs), min(rs), max(rs))
            absolute = statistics.median(float(r[key]) for r in data[s][a])
            if x0 == left:
                o.append(f'<text x="{x0 - 8}" y="{y + 12}" '
                         f'text-anchor="end">{ARM_NAMES[a]}</text>')
            o.append(f'<rect x="{x0}" y="{y}" '
                     f'width="{min(med, vmax) * scale:.1f}" height="{bar}" '
                     f'fill="{ARM_COLOURS[a]}"/>')
            yc = y + bar / 2
            xl, xh = (x0 + min(v, vmax) * scale for v in (lo, hi))
            o.append(f'<path d="M{xl:.1f} {yc}H{xh:.1f}M{xl:.1f} {yc - 4}v8'
                     f'M{xh:.1f} {yc - 4}v8" stroke="black" fill="none"/>')
            xt = max(xh, x0 + scale) + 4
            o.append(f'<text x="{xt:.1f}" y="{y + 12}" font-size="11">'
                     f'{med:.2f}x, {escape(fmt.format(absolute))}</text>')
            y += bar + 4
        for t in (0, 0.5, 1.0):
            x = x0 + t * scale
            style = {0: 'stroke="black"', 0.5: 'stroke="#ccc"',
                     1.0: 'stroke="black" stroke-dasharray="3 3"'}[t]
            o.append(f'<path d="M{x:.1f} {top - 6}V{y}" {style}/>')
            o.append(f'<text x="{x:.1f}" y="{top - 10}" font-size="10" '
                     f'text-anchor="middle">{t:g}</text>')
    for i, line in enumerate(caption.split("\n")[:3]):
        o.append(f'<text x="8" y="{h - 40 + 13 * i}" font-size="10" '
                 f'fill="#444">{escape(line)}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "wrk":
        wrk(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "table":
        data = table(sys.argv[2])
        if len(sys.argv) >= 4 and data:
            svg(data, sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
