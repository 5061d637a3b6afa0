// SPDX-License-Identifier: Apache-2.0
// .NET client for bench/clients/run.sh and test/test_clients.sh.
//
//   dotnet KcClients.dll CASE bench N   N ops, the same 32-byte key and
//                                       256-byte message every op; prints
//                                       the last output
//   dotnet KcClients.dll CASE test      fixed keys and messages, one line
//                                       per operation
//
// The calls of a cookie store: HMACSHA256/HMACSHA1.HashData and a new
// AesGcm(key) per message.  On Linux these run on the system's libcrypto
// through the runtime's System.Security.Cryptography.Native.OpenSsl shim.
// The "-fix" cases are what a developer writes instead (run.sh --fix): one
// keyed IncrementalHash or AesGcm per key, reused; they print their base
// case's lines.
using System;
using System.Collections.Generic;
using System.Security.Cryptography;

static class Program
{
    static readonly int[] HmacKeys = { 32, 20, 64, 131 };
    static readonly int[] HmacMsgs = { 0, 1, 64, 256, 1000 };
    static readonly int[] GcmMsgs = { 0, 1, 16, 256, 1000 };
    const int Rounds = 3;

    // The byte pattern shared by every client: seed + 31 j.
    static byte[] Pat(int n, int seed)
    {
        var b = new byte[n];
        for (int j = 0; j < n; j++)
            b[j] = (byte)((seed + 31 * j) & 0xff);
        return b;
    }

    static string Hex(byte[] b) => Convert.ToHexString(b).ToLowerInvariant();

    static byte[] Mac(string d, byte[] k, byte[] m) =>
        d == "sha1" ? HMACSHA1.HashData(k, m) : HMACSHA256.HashData(k, m);

    // The fix: one keyed IncrementalHash per key and digest, reused.  The
    // bench has one key: a field holds it, as in an application.
    static readonly Dictionary<string, IncrementalHash> Hashes = new();
    static IncrementalHash oneHash;
    static AesGcm oneGcm;
    static bool bench;

    static byte[] MacFix(string d, byte[] k, byte[] m)
    {
        IncrementalHash h;
        string id;
        if (bench)
            h = oneHash ??= IncrementalHash.CreateHMAC(
                d == "sha1" ? HashAlgorithmName.SHA1
                            : HashAlgorithmName.SHA256, k);
        else if (!Hashes.TryGetValue(id = d + Hex(k), out h))
            Hashes[id] = h = IncrementalHash.CreateHMAC(
                d == "sha1" ? HashAlgorithmName.SHA1
                            : HashAlgorithmName.SHA256, k);
        h.AppendData(m);
        return h.GetHashAndReset();
    }

    // The fix: one AesGcm per key, reused for every message, both ways.
    static readonly Dictionary<string, AesGcm> Gcms = new();

    static AesGcm GcmFix(byte[] key)
    {
        if (bench)
            return oneGcm ??= new AesGcm(key, 16);
        string id = Hex(key);
        if (!Gcms.TryGetValue(id, out var g))
            Gcms[id] = g = new AesGcm(key, 16);
        return g;
    }

    static bool fix;

    // A new AesGcm per message, or the fix's; Done disposes only a new one.
    static AesGcm Gcm(byte[] key) => fix ? GcmFix(key) : new AesGcm(key, 16);

    static void Done(AesGcm g)
    {
        if (!fix)
            g.Dispose();
    }

    // Encrypt one message: ciphertext || tag.
    static byte[] Seal(byte[] key, byte[] iv, byte[] aad, byte[] msg)
    {
        var ct = new byte[msg.Length + 16];
        var g = Gcm(key);
        try {
            g.Encrypt(iv, msg, ct.AsSpan(0, msg.Length),
                      ct.AsSpan(msg.Length), aad);
        } finally {
            Done(g);
        }
        return ct;
    }

    static string Open(byte[] key, byte[] iv, byte[] aad, byte[] ct)
    {
        var pt = new byte[ct.Length - 16];
        var g = Gcm(key);
        try {
            g.Decrypt(iv, ct.AsSpan(0, pt.Length), ct.AsSpan(pt.Length),
                      pt, aad);
            return Hex(pt);
        } catch (CryptographicException e) {
            return "error " + e.GetType().Name;
        } finally {
            Done(g);
        }
    }

    static void HmacLines(string d)
    {
        for (int r = 0; r < Rounds; r++)
            foreach (int kl in HmacKeys)
                foreach (int ml in HmacMsgs)
                    Console.WriteLine(
                        $"HashData {d} r{r} k{kl} m{ml} " +
                        Hex(fix ? MacFix(d, Pat(kl, kl), Pat(ml, ml + 1))
                                : Mac(d, Pat(kl, kl), Pat(ml, ml + 1))));
    }

    static void GcmLines()
    {
        for (int r = 0; r < Rounds; r++)
            foreach (int ks in new[] { 1, 2, 3 }) {
                var key = Pat(32, ks);
                for (int i = 0; i < GcmMsgs.Length; i++) {
                    int ml = GcmMsgs[i];
                    var iv = Pat(12, ml + r);
                    var aad = i % 2 == 1 ? Pat(20, 7) : null;
                    var ct = Seal(key, iv, aad, Pat(ml, ml + 1));
                    Console.WriteLine($"seal r{r} k{ks} m{ml} {Hex(ct)}");
                    Console.WriteLine($"open r{r} k{ks} m{ml} " +
                                      Open(key, iv, aad, ct));
                    ct[ml] ^= 1;
                    Console.WriteLine($"forged r{r} k{ks} m{ml} " +
                                      Open(key, iv, aad, ct));
                }
            }
    }

    static readonly byte[] Iv = Pat(12, 5);

    // A message sealed and opened again, each with a new AesGcm(key) (the
    // fix: the same one).
    static byte[] GcmOp(byte[] k, byte[] m)
    {
        var iv = Iv;
        var ct = Seal(k, iv, null, m);
        var pt = new byte[m.Length];
        var g = Gcm(k);
        try {
            g.Decrypt(iv, ct.AsSpan(0, m.Length), ct.AsSpan(m.Length), pt);
        } finally {
            Done(g);
        }
        return ct;
    }

    static int Main(string[] args)
    {
        var cases = new Dictionary<string,
                                   (Func<byte[], byte[], byte[]>, Action)> {
            ["dn-hmac-sha256"] = ((k, m) => HMACSHA256.HashData(k, m),
                                  () => HmacLines("sha256")),
            ["dn-hmac-sha1"] = ((k, m) => HMACSHA1.HashData(k, m),
                                () => HmacLines("sha1")),
            ["dn-aesgcm"] = (GcmOp, GcmLines),
            ["dn-hmac-sha256-fix"] = ((k, m) => MacFix("sha256", k, m),
                                      () => HmacLines("sha256")),
            ["dn-hmac-sha1-fix"] = ((k, m) => MacFix("sha1", k, m),
                                    () => HmacLines("sha1")),
            ["dn-aesgcm-fix"] = (GcmOp, GcmLines),
        };
        if (args.Length < 2 || !cases.ContainsKey(args[0])
            || (args[1] != "bench" && args[1] != "test")) {
            Console.Error.WriteLine("usage: dotnet KcClients.dll {" +
                                    string.Join("|", cases.Keys) +
                                    "} {bench N|test}");
            return 2;
        }
        var (op, lines) = cases[args[0]];
        fix = args[0].EndsWith("-fix");
        bench = args[1] == "bench";
        if (args[1] == "test") {
            lines();
            return 0;
        }
        byte[] key = Pat(32, 32), msg = Pat(256, 257), outp = null;
        int n = int.Parse(args[2]);
        for (int i = 0; i < n; i++)
            outp = op(key, msg);
        Console.WriteLine(Hex(outp));
        return 0;
    }
}
