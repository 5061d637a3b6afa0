// SPDX-License-Identifier: Apache-2.0
// ASP.NET Core servers for bench/server (Kestrel, minimal API).
//
//   dotnet KcServer.dll cookie --urls http://127.0.0.1:PORT
//   dotnet KcServer.dll auth --keys DIR --urls http://127.0.0.1:PORT
//
// cookie: the reported cookie pattern, four crypto operations per request.
//   GET /cookie   verify the signed cookie `s` (HMACSHA1.HashData), decrypt
//                 the encrypted cookie `e` (a new AesGcm), then re-sign and
//                 re-encrypt both with the counters advanced (the same two
//                 calls again) and send them back as Set-Cookie;
//   GET /reuse    the same with the per-thread fix: a [ThreadStatic]
//                 IncrementalHash and AesGcm, keyed once per thread.
//   The body holds only what is deterministic: the verification and
//   decryption results, the payloads' counters and the new signed cookie
//   (HMAC is deterministic; the new encrypted cookie has a random nonce).
// auth: cookie authentication (AddAuthentication().AddCookie(), on Data
//   Protection with its key ring in DIR, so that every process of a run
//   accepts the same cookie).
//   GET /login?user=NAME  signs in, sets the authentication cookie;
//   GET /me               authorised by that cookie: the user's claims.
//
// Nothing here refers to keycache: it is switched on by OPENSSL_CONF alone.
using System.Security.Claims;
using System.Security.Cryptography;
using System.Text;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.Cookies;
using Microsoft.AspNetCore.DataProtection;

static class Program
{
    // Fixed keys: every process of a run must accept the others' cookies.
    static readonly byte[] HKey = Pat(32, 1);
    static readonly byte[] EKey = Pat(32, 2);
    const int Tag = 16, Nonce = 12;

    [ThreadStatic] static IncrementalHash t_hmac;
    [ThreadStatic] static AesGcm t_gcm;

    static byte[] Pat(int n, int seed)
    {
        var b = new byte[n];
        for (int j = 0; j < n; j++)
            b[j] = (byte)((seed + 31 * j) & 0xff);
        return b;
    }

    static byte[] Mac(byte[] m, bool reuse)
    {
        if (!reuse)
            return HMACSHA1.HashData(HKey, m);
        var h = t_hmac ??= IncrementalHash.CreateHMAC(HashAlgorithmName.SHA1,
                                                      HKey);
        h.AppendData(m);
        return h.GetHashAndReset();
    }

    // payload.mac, both base64url
    static string Sign(byte[] p, bool reuse) =>
        B64(p) + "." + B64(Mac(p, reuse));

    static byte[] Verify(string c, bool reuse)
    {
        int dot = c?.IndexOf('.') ?? -1;
        if (dot < 0)
            return null;
        var p = Unb64(c[..dot]);
        var mac = Unb64(c[(dot + 1)..]);
        if (p == null || mac == null)
            return null;
        return CryptographicOperations.FixedTimeEquals(Mac(p, reuse), mac)
            ? p : null;
    }

    // nonce || tag || ciphertext, base64url; a new AesGcm per operation
    // unless reuse
    static string Seal(byte[] p, bool reuse)
    {
        var b = new byte[Nonce + Tag + p.Length];
        var nonce = b.AsSpan(0, Nonce);
        RandomNumberGenerator.Fill(nonce);
        var g = reuse ? (t_gcm ??= new AesGcm(EKey, Tag))
                      : new AesGcm(EKey, Tag);
        g.Encrypt(nonce, p, b.AsSpan(Nonce + Tag), b.AsSpan(Nonce, Tag));
        if (!reuse)
            g.Dispose();
        return B64(b);
    }

    static byte[] Open(string c, bool reuse)
    {
        var b = c == null ? null : Unb64(c);
        if (b == null || b.Length < Nonce + Tag)
            return null;
        var p = new byte[b.Length - Nonce - Tag];
        var g = reuse ? (t_gcm ??= new AesGcm(EKey, Tag))
                      : new AesGcm(EKey, Tag);
        try {
            g.Decrypt(b.AsSpan(0, Nonce), b.AsSpan(Nonce + Tag),
                      b.AsSpan(Nonce, Tag), p);
            return p;
        } catch (CryptographicException) {
            return null;
        } finally {
            if (!reuse)
                g.Dispose();
        }
    }

    static string B64(byte[] b) =>
        Convert.ToBase64String(b).TrimEnd('=').Replace('+', '-')
            .Replace('/', '_');

    static byte[] Unb64(string s)
    {
        s = s.Replace('-', '+').Replace('_', '/');
        s += new string('=', (4 - s.Length % 4) % 4);
        try {
            return Convert.FromBase64String(s);
        } catch (FormatException) {
            return null;
        }
    }

    // "...;n=COUNTER": the counter, or -1
    static int Counter(byte[] p)
    {
        var s = Encoding.ASCII.GetString(p);
        int i = s.LastIndexOf(";n=", StringComparison.Ordinal);
        return i >= 0 && int.TryParse(s[(i + 3)..], out int n) ? n : -1;
    }

    // What the signed and the encrypted cookie carry (about 40 and 200
    // bytes, the latter as a small session would).
    static byte[] SignedPayload(int n) =>
        Encoding.ASCII.GetBytes($"user=alice;role=reader;n={n}");

    static byte[] SessionPayload(int n) =>
        Encoding.ASCII.GetBytes("csrf=" + new string('c', 43) +
                                ";cart=" + new string('x', 120) +
                                $";locale=en;n={n}");

    static string CookieRequest(HttpContext c, bool reuse)
    {
        var sp = Verify(c.Request.Cookies["s"], reuse);
        var ep = Open(c.Request.Cookies["e"], reuse);
        int n = sp == null ? -1 : Counter(sp);
        int m = ep == null ? -1 : Counter(ep);
        var s = Sign(SignedPayload(n + 1), reuse);
        var e = Seal(SessionPayload(m + 1), reuse);
        c.Response.Cookies.Append("s", s);
        c.Response.Cookies.Append("e", e);
        return $"signed={(sp == null ? "bad" : "ok")} n={n} " +
               $"enc={(ep == null ? "bad" : "ok")} m={m} s={s}\n";
    }

    static int Main(string[] args)
    {
        string mode = args.Length > 0 ? args[0] : "";
        if (mode != "cookie" && mode != "auth") {
            Console.Error.WriteLine(
                "usage: dotnet KcServer.dll {cookie|auth [--keys DIR]}" +
                " --urls http://127.0.0.1:PORT");
            return 2;
        }
        var rest = args[1..];
        string keys = null;
        int k = Array.IndexOf(rest, "--keys");
        if (k >= 0 && k + 1 < rest.Length) {
            keys = rest[k + 1];
            rest = rest[..k].Concat(rest[(k + 2)..]).ToArray();
        }
        var builder = WebApplication.CreateBuilder(rest);
        // a log line per request would cost more than the cookies
        builder.Logging.SetMinimumLevel(LogLevel.Warning);
        if (mode == "auth") {
            if (keys == null) {
                Console.Error.WriteLine("auth needs --keys DIR");
                return 2;
            }
            builder.Services.AddDataProtection()
                .PersistKeysToFileSystem(new DirectoryInfo(keys))
                .SetApplicationName("keycache-bench");
            builder.Services
                .AddAuthentication(CookieAuthenticationDefaults
                                       .AuthenticationScheme)
                .AddCookie(o => {
                    // an API: 401 instead of a redirect to a login page
                    o.Events.OnRedirectToLogin = ctx => {
                        ctx.Response.StatusCode = 401;
                        return Task.CompletedTask;
                    };
                });
            builder.Services.AddAuthorization();
        }
        var app = builder.Build();
        if (mode == "cookie") {
            app.MapGet("/cookie", (HttpContext c) => CookieRequest(c, false));
            app.MapGet("/reuse", (HttpContext c) => CookieRequest(c, true));
        } else {
            app.UseAuthentication();
            app.UseAuthorization();
            app.MapGet("/login", async (HttpContext c, string user) => {
                var id = new ClaimsIdentity(new[] {
                    new Claim(ClaimTypes.Name, user),
                    new Claim(ClaimTypes.Role, "reader"),
                }, CookieAuthenticationDefaults.AuthenticationScheme);
                await c.SignInAsync(new ClaimsPrincipal(id));
                return $"signed in {user}\n";
            });
            app.MapGet("/me", (ClaimsPrincipal u) =>
                $"user={u.Identity.Name} " +
                $"role={u.FindFirst(ClaimTypes.Role)?.Value} " +
                $"auth={u.Identity.AuthenticationType}\n")
                .RequireAuthorization();
        }
        app.Run();
        return 0;
    }
}
