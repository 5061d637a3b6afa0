#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The provider's layers point one way (provider/common/common.h lists them).

usage: check_layers.py SOURCE_DIR OBJECT_DIR [MODULE]

Fails when a source includes a header of a layer above its own, when headers
include each other in a cycle, when an object file calls a kc_* function
defined in a layer above its own (a link-level cycle), or when a family file
includes anything but its folder's header (families reach the cache and the
template core only through what families/families.h brings in).  With the
built MODULE: its thread-local block is at most 256 bytes, since a thread
record in initial-exec TLS makes all of it come out of glibc's small static
reserve for dlopen()ed modules (512 bytes, shared with every other module).
"""
import os, re, subprocess, sys

LAYERS = ["early", "common", "quirks", "diag", "cache", "inner", "layer",
          "families", "core"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder(path):
    """The layer of provider/<layer>/<file>, or None."""
    parts = path.split(os.sep)
    return parts[-2] if len(parts) >= 2 and parts[-2] in RANK else None


def main(src, objdir, module=None):
    prov = os.path.join(src, "provider")
    errors = []
    files = {}
    for layer in os.listdir(prov):
        d = os.path.join(prov, layer)
        if not os.path.isdir(d):
            continue
        if layer not in RANK:
            errors.append("provider/%s/: not a known layer (add it to %s)"
                          % (layer, os.path.basename(__file__)))
            continue
        for f in os.listdir(d):
            if f.endswith((".c", ".h")):
                files["%s/%s" % (layer, f)] = open(os.path.join(d, f)).read()
    loose = [f for f in os.listdir(prov) if f.endswith((".c", ".h"))]
    errors += ["provider/%s: every file belongs to a layer" % f for f in loose]

    # includes: never upwards; headers in no cycle
    graph = {}
    for name, text in files.items():
        layer = name.split("/")[0]
        incs = [i for i in INCLUDE.findall(text) if "/" in i]
        graph[name] = [i for i in incs if i in files]
        for inc in incs:
            up = inc.split("/")[0]
            if up not in RANK:
                continue
            if RANK[up] > RANK[layer]:
                errors.append("provider/%s includes %s: %s is above %s"
                              % (name, inc, up, layer))
        if layer == "families" and name.endswith(".c"):
            extra = [i for i in INCLUDE.findall(text)
                     if i != "families/families.h"]
            if extra:
                errors.append("provider/%s includes %s: a family includes "
                              "families/families.h only" % (name, extra))
    state = {}

    def visit(n, path):
        if state.get(n) == 1:
            errors.append("include cycle: " + " -> ".join(path + [n]))
            return
        if state.get(n) == 2:
            return
        state[n] = 1
        for m in graph.get(n, []):
            visit(m, path + [n])
        state[n] = 2

    for n in graph:
        visit(n, [])

    # link level: who defines each kc_ function, who calls it
    defined, used = {}, []
    for root, _, names in os.walk(objdir):
        for f in names:
            if not f.endswith(".c.o"):
                continue
            path = os.path.join(root, f)
            layer = folder(path)
            if layer is None:
                continue
            out = subprocess.run(["nm", path], capture_output=True,
                                 text=True, check=True).stdout
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "TDRB":
                    defined[parts[2]] = (layer, f)
                elif len(parts) == 2 and parts[0] == "U" \
                        and parts[1].startswith("kc_"):
                    used.append((layer, f, parts[1]))
    if not defined:
        errors.append("no object files under %s" % objdir)
    for layer, f, sym in used:
        if sym in defined and RANK[defined[sym][0]] > RANK[layer]:
            errors.append("%s/%s calls %s of %s/%s, a layer above"
                          % (layer, f, sym, *defined[sym]))
    if module is not None:
        out = subprocess.run(["readelf", "-lW", module], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if f and f[0] == "TLS" and int(f[5], 16) > 256:
                errors.append("%s: thread-local block of %d bytes (at most "
                              "256: keep per-thread data on the heap)"
                              % (os.path.basename(module), int(f[5], 16)))
    for e in sorted(set(errors)):
        print("FAIL:", e)
    print("%d files, %d calls between objects checked, %d problems"
          % (len(files), len(used), len(set(errors))))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
