# SPDX-License-Identifier: Apache-2.0
# A Rack app for bench/server on Debian's puma: Rails' cookie scheme with
# ActiveSupport, per request
#   - verify the signed cookie `s` (MessageVerifier, HMAC-SHA1, as Rails'
#     signed cookie jar),
#   - decrypt the encrypted cookie `e` (MessageEncryptor, aes-256-gcm, as
#     Rails' authenticated encrypted cookie jar),
#   - re-sign and re-encrypt both with their counters advanced, as
#     Set-Cookie.
# Keys come from secret_key_base through ActiveSupport's caching PBKDF2 key
# generator, once at boot, with Rails' salts.  The body holds only what is
# deterministic: the verification and decryption results, the counters and
# the new signed cookie (the new encrypted one has a random IV).
#
#   puma -t 2:2 -w 0 -b tcp://127.0.0.1:PORT bench/server/ruby/config.ru
#   GET /cookie
#
# Nothing here refers to keycache: it is switched on by OPENSSL_CONF alone.
require "json"
require "cgi"
require "active_support"
require "active_support/key_generator"
require "active_support/message_verifier"
require "active_support/message_encryptor"

secret = "keycache-bench-secret-key-base-" + "0123456789abcdef" * 6
keys = ActiveSupport::CachingKeyGenerator.new(
  ActiveSupport::KeyGenerator.new(secret, iterations: 1000))
VERIFIER = ActiveSupport::MessageVerifier.new(
  keys.generate_key("signed cookie"), digest: "SHA1", serializer: JSON)
ENCRYPTOR = ActiveSupport::MessageEncryptor.new(
  keys.generate_key("authenticated encrypted cookie", 32),
  cipher: "aes-256-gcm", serializer: JSON)

def cookies(env)
  (env["HTTP_COOKIE"] || "").split(/; */).to_h do |kv|
    k, v = kv.split("=", 2)
    [k, CGI.unescape(v || "")]
  end
end

def counter(h)
  h.is_a?(Hash) && h["n"].is_a?(Integer) ? h["n"] : -1
end

run(lambda do |env|
  return [404, { "content-type" => "text/plain" }, ["not found\n"]] \
    unless env["PATH_INFO"] == "/cookie"
  c = cookies(env)
  signed = VERIFIER.verified(c["s"].to_s, purpose: "cookie.s")
  session = begin
    ENCRYPTOR.decrypt_and_verify(c["e"].to_s, purpose: "cookie.e")
  rescue ActiveSupport::MessageEncryptor::InvalidMessage
    nil
  end
  n = counter(signed)
  m = counter(session)
  s = VERIFIER.generate({ "user" => "alice", "role" => "reader", "n" => n + 1 },
                        purpose: "cookie.s")
  e = ENCRYPTOR.encrypt_and_sign(
    { "csrf" => "c" * 43, "cart" => "x" * 120, "locale" => "en", "n" => m + 1 },
    purpose: "cookie.e")
  body = "signed=#{signed ? 'ok' : 'bad'} n=#{n} " \
         "enc=#{session ? 'ok' : 'bad'} m=#{m} s=#{s}\n"
  [200,
   { "content-type" => "text/plain",
     "set-cookie" => "s=#{CGI.escape(s)}; path=/\ne=#{CGI.escape(e)}; path=/" },
   [body]]
end)
