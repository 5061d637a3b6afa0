<?php
// SPDX-License-Identifier: Apache-2.0
/*
 * PHP client for bench/clients/run.sh and test/test_clients.sh.
 *
 *   php clients.php CASE bench N   N ops, the same 32-byte key and 256-byte
 *                                  message every op; prints the last output
 *   php clients.php CASE test      fixed keys and messages, one line per op
 *
 * openssl_encrypt()/openssl_decrypt() go through ext/openssl; hash_hmac()
 * is ext/hash, PHP's own code, and never reaches OpenSSL.
 */

const HMAC_KEYS = [32, 20, 64, 131];
const HMAC_MSGS = [0, 1, 64, 256, 1000];
const GCM_MSGS = [0, 1, 16, 256, 1000];
const ROUNDS = 3;

/* The byte pattern shared by every client: seed + 31 j. */
function pat(int $n, int $seed): string
{
    $s = '';
    for ($j = 0; $j < $n; $j++)
        $s .= chr(($seed + 31 * $j) & 0xff);
    return $s;
}

function seal(string $key, string $iv, string $aad, string $msg): string
{
    $tag = '';
    $ct = openssl_encrypt($msg, 'aes-256-gcm', $key, OPENSSL_RAW_DATA, $iv,
                          $tag, $aad, 16);
    return $ct . $tag;
}

function open_(string $key, string $iv, string $aad, string $ct): string
{
    $pt = openssl_decrypt(substr($ct, 0, -16), 'aes-256-gcm', $key,
                          OPENSSL_RAW_DATA, $iv, substr($ct, -16), $aad);
    return $pt === false ? 'false' : bin2hex($pt);
}

function gcm_lines(): void
{
    for ($r = 0; $r < ROUNDS; $r++)
        foreach ([1, 2, 3] as $ks) {
            $key = pat(32, $ks);
            foreach (GCM_MSGS as $i => $ml) {
                $iv = pat(12, $ml + $r);
                $aad = $i % 2 ? pat(20, 7) : '';
                $ct = seal($key, $iv, $aad, pat($ml, $ml + 1));
                echo "seal r$r k$ks m$ml ", bin2hex($ct), "\n";
                echo "open r$r k$ks m$ml ", open_($key, $iv, $aad, $ct), "\n";
                $bad = $ct;
                $bad[-16] = chr(ord($bad[-16]) ^ 1);
                echo "forged r$r k$ks m$ml ", open_($key, $iv, $aad, $bad),
                     "\n";
            }
        }
}

function hmac_lines(): void
{
    for ($r = 0; $r < ROUNDS; $r++)
        foreach (HMAC_KEYS as $kl)
            foreach (HMAC_MSGS as $ml)
                foreach (['sha256', 'sha1'] as $d)
                    echo "hash_hmac $d r$r k$kl m$ml ",
                         hash_hmac($d, pat($ml, $ml + 1), pat($kl, $kl)), "\n";
}

$iv = pat(12, 5);
$cases = [
    'php-gcm' => [fn($k, $m) => seal($k, $iv, '', $m), 'gcm_lines'],
    'php-hash-hmac' => [fn($k, $m) => hash_hmac('sha256', $m, $k, true),
                        'hmac_lines'],
];

$name = $argv[1] ?? '';
$mode = $argv[2] ?? '';
if (!isset($cases[$name]) || !in_array($mode, ['bench', 'test'])) {
    fwrite(STDERR, "usage: php clients.php {" . implode('|', array_keys($cases))
           . "} {bench N|test}\n");
    exit(2);
}
[$op, $lines] = $cases[$name];
if ($mode === 'test') {
    $lines();
    exit(0);
}
$key = pat(32, 32);
$msg = pat(256, 257);
$out = '';
for ($i = 0, $n = (int)$argv[3]; $i < $n; $i++)
    $out = $op($key, $msg);
echo bin2hex($out), "\n";
