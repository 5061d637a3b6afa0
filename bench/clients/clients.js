// SPDX-License-Identifier: Apache-2.0
'use strict';
// Node client for bench/clients/run.sh and test/test_clients.sh.
//
//   node [--openssl-shared-config] clients.js CASE bench N
//       N ops, the same 32-byte key and 256-byte message every op; prints
//       the last output
//   node [--openssl-shared-config] clients.js CASE test
//       fixed keys and messages, one line per operation
//
// Node reads the `nodejs_conf` section of $OPENSSL_CONF unless it is started
// with --openssl-shared-config, which makes it read `openssl_conf` like
// every other OpenSSL program.
const crypto = require('crypto');

const HMAC_KEYS = [32, 20, 64, 131];
const HMAC_MSGS = [0, 1, 64, 256, 1000];
const GCM_MSGS = [0, 1, 16, 256, 1000];
const ROUNDS = 3;

// The byte pattern shared by every client: seed + 31 j.
function pat(n, seed) {
  const b = Buffer.alloc(n);
  for (let j = 0; j < n; j++)
    b[j] = (seed + 31 * j) & 0xff;
  return b;
}

function hmac(d, k, m) {
  return crypto.createHmac(d, k).update(m).digest();
}

function seal(key, iv, aad, msg) {
  const c = crypto.createCipheriv('aes-256-gcm', key, iv);
  if (aad)
    c.setAAD(aad);
  return Buffer.concat([c.update(msg), c.final(), c.getAuthTag()]);
}

function open(key, iv, aad, ct) {
  try {
    const d = crypto.createDecipheriv('aes-256-gcm', key, iv);
    if (aad)
      d.setAAD(aad);
    d.setAuthTag(ct.subarray(ct.length - 16));
    return Buffer.concat([d.update(ct.subarray(0, ct.length - 16)),
                          d.final()]).toString('hex');
  } catch (e) {
    return `error ${e.message}`;
  }
}

function hmacLines() {
  for (let r = 0; r < ROUNDS; r++)
    for (const kl of HMAC_KEYS)
      for (const ml of HMAC_MSGS)
        for (const d of ['sha256', 'sha1'])
          console.log(`createHmac ${d} r${r} k${kl} m${ml} ` +
                      hmac(d, pat(kl, kl), pat(ml, ml + 1)).toString('hex'));
}

function gcmLines() {
  for (let r = 0; r < ROUNDS; r++)
    for (const ks of [1, 2, 3]) {
      const key = pat(32, ks);
      GCM_MSGS.forEach((ml, i) => {
        const iv = pat(12, ml + r);
        const aad = i % 2 ? pat(20, 7) : null;
        const ct = seal(key, iv, aad, pat(ml, ml + 1));
        console.log(`seal r${r} k${ks} m${ml} ${ct.toString('hex')}`);
        console.log(`open r${r} k${ks} m${ml} ${open(key, iv, aad, ct)}`);
        const bad = Buffer.from(ct);
        bad[bad.length - 16] ^= 1;
        console.log(`forged r${r} k${ks} m${ml} ${open(key, iv, aad, bad)}`);
      });
    }
}

const IV = pat(12, 5);
const CASES = {
  'node-hmac': [(k, m) => hmac('sha256', k, m), hmacLines],
  'node-gcm': [(k, m) => seal(k, IV, null, m), gcmLines],
};

const [name, mode, n] = process.argv.slice(2);
if (!(name in CASES) || !['bench', 'test'].includes(mode)) {
  process.stderr.write(`usage: node clients.js {${Object.keys(CASES)
    .join('|')}} {bench N|test}\n`);
  process.exit(2);
}
const [op, lines] = CASES[name];
if (mode === 'test') {
  lines();
} else {
  const key = pat(32, 32);
  const msg = pat(256, 257);
  let out;
  for (let i = 0; i < Number(n); i++)
    out = op(key, msg);
  console.log(out.toString('hex'));
}
