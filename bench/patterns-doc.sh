#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes docs/performance.md from the pattern catalogue's Markdown tables:
#
#   bash bench/patterns-doc.sh OUT.md TABLE.md... [--floor FLOOR.md...]
#
# Each TABLE.md is what `bench/patterns.sh <build> --markdown TABLE.md`
# wrote on one OpenSSL (it names its own command): on the host's 3.0, and
# in the chroots (`tools/compat.sh trixie --bench --patterns` and
# `sid-ossl4 --bench --patterns` print theirs after "== Markdown:").
# Each FLOOR.md is `bench/floor.sh <build> --markdown FLOOR.md`'s table
# (`tools/compat.sh SUITE --bench --floor` prints it on 3.5 and 4.0).
set -euo pipefail
out=${1:?usage: $0 OUT.md TABLE.md... [--floor FLOOR.md...]}
shift
tables=()
floors=()
while [ $# -gt 0 ] && [ "$1" != --floor ]; do
    tables+=("$1")
    shift
done
if [ $# -gt 0 ]; then
    shift
    floors=("$@")
fi
[ ${#tables[@]} -gt 0 ] || { echo "usage: $0 OUT.md TABLE.md... [--floor FLOOR.md...]" >&2; exit 2; }
{
    cat <<'HEAD'
# Performance: the pattern catalogue

keycache is switched on for a whole machine, so it meets every way a
program uses OpenSSL, not only the hot-key one-shots it was built for.
Each row below is one usage pattern, written in C in
`bench/kcpatterns.c` as the programs named beside it write it, and run as
two processes under callgrind: `default` alone, activated by the same
config without keycache's lines, and that config with keycache.  The
figure is instructions per op (Ir/op, deterministic); CPU ns/op from a
run without valgrind is information only.  Fork rows count the parent's
`fork()`/`waitpid()` and the child's whole life (one HMAC, or one op of
the family the row names, `_exit`); thread rows count each thread's
start, that op and exit; `proc` rows the whole process.  How each row is
measured: `bench/README.md`, "patterns.sh".

*target* is what the row should reach, from `bench/patterns.bounds`
(start-up `+0.5M` = keycache may add at most 0.5 million instructions;
ratios are keycache / default); *bound* is what CI enforces on 3.0, 3.5
and 4.0 (`tools/test-all.sh`, the same file): the target where a row
meets it, otherwise the measured figure + 1%, so that nothing gets worse
while the targets are worked on.  A row above 1.00× is a pattern where
keycache makes a program slower.

Where the losses come from:
- `fork-*`: a forked child frees the default's context every entry it
  inherited holds, its template, before `fork()` returns: 2,624
  instructions an entry on 3.0 (2,733 on 3.5, 2,936 on 4.0; `(64keys -
  1key) / 63`, printed under each table), against 2,770 (2,863, 2,944)
  for the default's own `EVP_MAC_CTX_free` of a used keyed HMAC context
  (the reference row `free-keyed-hmac`, default arm only; `patterns.sh`
  fails when the child's is the larger).  keycache's own share is ~25
  instructions an entry on 3.0 (`--profiles DIR` of both rows, function
  diff): the keys, fingerprints and index are in pages the kernel hands
  the child zeroed (`MADV_WIPEONFORK`), so the handler reads only the
  context pointers and writes no page of keycache's.  Child CPU, parent's
  `fork()` included, native, median of 40 runs of 10 forks on a busy
  machine (information): `fork-child-64keys` 468 µs against the
  default's 315 µs (478 / 322 before the wiped pages),
  `fork-child-empty` 320 / 319 µs (`kcpatterns --cpu ROW` under each
  arm's config); the difference is the default's frees, whose writes
  copy the heap pages they touch.  The
  forking thread's given-back contexts that no hit used since its last
  fork are freed in the parent, before `fork()`, once and not in every
  child; a parent that itself computes between forks keeps them
  (`fork-then-parent-mac`).  The child's handler starts the thread's
  count of first HMAC misses again, so a child's first HMACs are
  deferred as a new thread's are (`fork-child-1key` 0.82x on 3.0).  A
  process with one thread (glibc's
  `__libc_single_threaded`, linked weakly) forks without the registry's
  lock.  `fork-child-empty` and
  `thread-per-task`: a thread that never admits a key keeps only a small
  thread-local record, and its first misses are not even counted (no
  hash of the key); the fork handlers are registered only once
  a thread made a cache or hashed a key, or the registry's lock was taken
  while other threads ran (none of it in these rows).  Its first HMACs
  are deferred (docs/families.md): HMAC computed at the final on the
  default's digest functions, with no default HMAC context, digest fetch
  or EVP digest contexts, which saves more than the wrapper costs (the
  forwarding floor alone is 1.014x on 3.0 and 1.015x on 3.5, below).
- `fork-child-<family>`, `thread-per-task-<family>` (CMAC, GMAC, KMAC,
  AES-GCM, -OCB, -SIV): the same patterns for the families that have no
  deferral, after a parent that warmed the family (its key cached).
  Not met but for AES-SIV, whose own context saves more than a wrapper
  costs (0.36x / 0.42x on 3.0), and for the families 3.5 and 4.0's
  `auto` leaves to the default.  A new thread's first contexts are the
  application's default's behind keycache's wrapper: the wrapper struct
  malloc'd by a thread that has no pool yet, forwarding, and a first MAC
  context's record (kept for copies).  `bash bench/floor.sh build ROWS`
  (tables below): on 3.0 forwarding alone is already 1.025x (CMAC),
  1.026x (GMAC), 1.072x (GCM) and 1.041x (OCB) in `thread-per-task-*`,
  so only a saving like HMAC's deferral could meet those; KMAC's floor is
  1.006x against keycache's 1.05x, and GMAC's on 3.5 0.968x against
  1.10x: keycache's own work on a first MAC context, some 2,000
  instructions spread over its record, its cipher check and forwarding.
  A fork child also frees the parent's entry (its key must be gone when
  `fork()` returns), which the floor, keeping nothing, does not.  Two
  costs a thread paid were mistakes, fixed: a thread's question about
  where a cipher resolves was kept in a cache made for it
  (`thread-per-task-cmac` 1.53x, `-gmac` 1.50x on 3.0), and on 4.0 an
  error mark around a first KMAC's size question made the thread its
  error state (`thread-per-task-kmac` 1.30x).  Where `auto` leaves a
  family to the default (CMAC, GCM, OCB, SIV from 3.5), a new thread
  still pays ~100 instructions for keycache's 248 bytes of static TLS
  (glibc initialises every module's at thread start): up to 1.02x in a
  thread doing one cipher op.
- `proc-*` (+0.34M on 3.0, +0.34M on 3.5, +0.32M on 4.0; `bench/patterns.sh
  build --profiles DIR proc-openssl-version`): what every process that
  loads keycache pays.  On 3.0: the core's `dlopen` of the loader ~30k and
  the loader's of keycache-ossl3.so ~156k, most of it binding its ~140
  imports (`RTLD_NOW`: bound lazily, an import the host's libcrypto lacks
  in a version node it has, such as `ENGINE_*` in a no-engine build,
  would kill the program at its first call instead of leaving it on the
  default); keycache's start ~40k, the configuration ~20k of it, and
  ~10k at exit; the rest the core's own work for a second provider and
  its `default_properties`.  The private library context with `default`
  and its RAND is not built at start but at the core's first query of
  keycache (~50k on 3.0, ~90k on 3.5, as much again at exit), paid by
  `first-*` and `proc-one-qmac`, never by a process that fetches nothing
  from it.  The default config file's key names are read by hand, not
  parsed again by NCONF: `proc-openssl-version-distro` puts keycache's
  lines after a 12 KB distribution-sized file (`bench/distro.cnf`):
  +0.45M / +0.45M / +0.43M.  libgcc's unwinder and a cipher family's key
  length and fresh state are not paid there either: they come at the
  first admission and at the family's first context.
- `first-*`: what a family learns of the running default (its own
  contexts' checks, the no-op calls of a fresh context) is learned at
  the family's first context, not at every process's start, and none of
  it may build keycache's private library context's cipher or digest
  store, beside the application's.  HMAC, CMAC, KMAC and GMAC: a
  thread's first misses (HMAC) or first 3 contexts (the registry's
  `first` column) are the application's default's; GMAC's, while GCM is
  on, ask for the default's own GCM (`provider=default`).  AES-SIV: its
  version quirks are known for the versions CI runs, its own context is
  checked against published vectors, and keys not admitted yet get an
  own context too, so no default AES-SIV is keyed (docs/families.md).
- `proc-sigv4`, `proc-qmac-8x`, `proc-cmac-4x`, `proc-gmac-4x`,
  `proc-kmac-4x`: a process of a few MACs.  Every context keycache makes
  for a MAC it caches (HMAC's inners; CMAC's, KMAC's and GMAC's probes,
  templates and bases) is the application's default's, in its library
  context (docs/families.md), so a process of a few MACs pays keycache's
  start and, once it admits a key, the origin check's set-up (~85k on
  3.0: libgcc's unwinder opened, libcrypto's entry points looked up by
  its link map's name), and no second cipher or digest store (before,
  the 4th CMAC, GMAC or KMAC context built one: `proc-gmac-4x` 1.63x /
  1.53x / 1.65x and `proc-kmac-4x` 1.45x / 1.40x / 1.55x on 3.0 / 3.5 /
  4.0, `proc-cmac-4x` 1.62x on 3.0).  The price: a cold context's choice
  of library context, `newkey-gmac` on 4.0 1.0100x -> 1.0114x (not met,
  bounded at that).
- `proc-tls-handshake`: one TLS 1.3 connection, both ends in the
  process (`kcpatterns` links libssl, as `openssl` does, so every
  `proc-*` process loads it): keycache's start and, at the first fetch of
  each kind, the stores' construction with keycache's algorithms beside
  the default's.  The KDFs keycache offers (pass-throughs, so that no key
  OpenSSL derives reaches its cache, docs/keys.md) are made in the
  application's library context, their MAC contexts cold for the call's
  duration (`kc_derive_enter()`); before, they ran in keycache's private
  one, whose digest store the first handshake's key schedule built:
  1.16x / 1.13x / 1.14x on 3.0 / 3.5 / 4.0 then (`--profiles DIR
  proc-tls-handshake`: `EVP_KDF_derive` -> `EVP_MD_fetch`).
- `tls13-handshake`, `tls12-handshake`, `tls13-records`: a TLS server's
  steady state, its `SSL_CTX`s kept.  A handshake's key schedule runs in
  the pass-through KDFs, whose HMACs are cold (never looked up), and a
  thread that has made no cache, as one that only ever derives, keys each
  on a new context instead of building a keyless base to copy
  (`kc_cache_keeps()`): without that, `tls12-handshake` (no tickets, so
  every HMAC is a KDF's) runs 1.02x on 3.5 and 4.0.  Session tickets'
  HMACs are the application's own (`tls13-handshake`).  Records: on 3.0
  keycache's AES-GCM, a kept keyed context given a new IV per record
  (`steady-gcm`); from 3.5 `auto` leaves them to the default.
- On 3.5+ a cipher keycache offers means every default cipher passed
  through (`EVP_SKEY`), built beside the default's at the first cipher
  fetch (`first-gcm` 1.35x): so `auto` offers no cipher and no CMAC
  there, and the CMAC, OCB and SIV rows run the default's
  (docs/families.md).  Switched on there, GCM still loses where it should
  gain: with `aes_gcm = on` (`KC_COMPAT_PATTERNS_ARGS="--set aes_gcm=on
  ROWS" tools/compat.sh trixie --bench --patterns`, and `sid-ossl4`)
  `gcm-encinit-per-msg` is 0.75x / 0.74x (3.5 / 4.0), but
  `gcm-steps-freed` 1.01x / 1.00x, `gcm-steps-never-freed` 1.06x /
  1.05x, `newkey-gcm` 1.05x / 1.05x, `steady-gcm` 1.01x / 1.01x and
  `first-gcm` 1.37x on 4.0; so the GCM rows' gain targets hold where
  `auto` offers GCM (3.0 to 3.4), and elsewhere they run the default's.
- `newkey-cmac`, `newkey-cmac-sizes`, `newkey-gmac`, `newkey-kmac`,
  `cmac-3des` gain (on 4.0 `newkey-gmac` only breaks even, 1.004x): a
  thread whose keys never repeat stops looking them
  up (its contexts are cold), and keeps up to three *bases* per family,
  one a shape, each a default context with that shape set
  (CMAC's and KMAC's keyed with zeros: their default copies no unkeyed
  context); a new key copies one and keys the copy instead of fetching
  the cipher or KMAC's digest again (~2,500 instructions a context; CMAC
  with 3DES, never cached, too).  A change of the default properties
  starts a thread's cache again at its next look-up, bases included
  (`cache_props_moved()`).
- `newkey-hmac`, `newkey-hmac-200B`, `keys-used-1x` to `-3x`: HMAC
  contexts are cold too where the thread's hits are rare.  A cold
  context keys a copy of the thread's keyless base with the key as given
  and skips the look-up, the key's hash, the admission filter and, for a
  key longer than 128 bytes, keycache's digest of it: on 4.0 ~400
  instructions a context (`keys-used-3x` 1.02x before, `newkey-hmac-200B`
  1.02x).
- `dup-*`: a wrapper struct per context (taken from and given back to
  the thread's pool) and forwarding.  `steady-*`: a kept keyed context
  pays only forwarding, about 4 instructions a call (`steady-ocb`: 6
  calls a message, 24 instructions, the forwarding floor below).  On 3.0,
  whose EVP asks a cipher context's IV and key lengths before every init,
  a keyed AES-GCM or -OCB context whose lengths keycache knows answers
  those queries itself instead of the default's walk over its names
  (`keyed_known`, docs/families.md): `steady-gcm`, `steady-ocb`,
  `copy-keyed-ocb` and `gcm-encinit-per-msg` gain there.
  Where the forwarding floor below exceeds the target too
  (`thread-per-task` on 3.0 and 3.5, by up to 0.5%), a wrapper cannot
  meet it by trimming: only by saving in that row, as the deferred first
  HMACs do there.  `dup-keyed-gmac` saves so too: once the thread's first GMAC contexts are spent (a copy
  counts as one), a copy of a thread's first GMAC context keyed in one
  init is looked up by its calls and key, and once cached is a copy of
  keycache's own GMAC context, IV applied (docs/families.md).  The `steady-*` rows keep the thread's first
  context: for CMAC, GMAC and KMAC the application's default's, which
  keycache only forwards to.
  (Contexts keyed again with the key they hold gain: HMAC's `rekey-*` by
  a keyless init, GCM's `gcm-encinit-per-msg` by a keyless init with the
  IV; a GCM context set up in steps holds its IV back for the keying
  init, `gcm-steps-*`.)

This file is generated: `bash bench/patterns-doc.sh docs/performance.md`
with the tables each command below wrote (`--markdown`).

HEAD
    for t in "${tables[@]}"; do
        cat "$t"
        echo
    done
    [ ${#floors[@]} -gt 0 ] || exit 0
    cat <<'FLOOR'
## Against the forwarding floor

keycache hands libcrypto contexts of its own: a hit puts other keyed
state behind one, and neither provider-mac(7) nor provider-cipher(7) can
copy state into a context libcrypto already holds.  Made by wrapping the
default's context, every `newctx` and `dupctx` pays a wrapper and every
call a forwarding call.  `bench/floor.sh` measures what that alone costs:
it runs the catalogue with `bench/floor.c` in keycache's place, a provider
that only forwards each call to a default context of the same algorithm
and saves nothing (four variants, each row's cheapest named).  It is not a
bound on every design: keycache is below it wherever it saves (a hit, or
AES-SIV's own context, cheaper than the default's).  *stands*: `met`;
`overhead` (the floor meets the target: what is missing is keycache's own
work); `needs saving` (the floor exceeds the target too: trimming cannot
meet it, only a saving in that row can); `not met` (a gain target);
`skey` (3.5+: the floor offers no `EVP_SKEY` key managers, which keycache
must, and with them every cipher of the default's: not comparable).

FLOOR
    for t in "${floors[@]}"; do
        cat "$t"
        echo
    done
} >"$out"
echo "wrote $out"
