# SPDX-License-Identifier: Apache-2.0
# Ruby client for bench/clients/run.sh and test/test_clients.sh.
#
#   ruby clients.rb CASE bench N   N ops, the same 32-byte key and 256-byte
#                                  message every op; prints the last output
#   ruby clients.rb CASE test      fixed keys and messages (see common.md),
#                                  one line per operation
#
# Only the stock openssl extension and ActiveSupport are called, exactly the
# way an application calls them: nothing here knows about keycache.  The
# "-fix" cases are what a developer writes instead (run.sh --fix): one keyed
# object per key, reused; they print their base case's lines.
require "openssl"

# The byte pattern shared by every client: pat(len, seed)[j] = seed + 31 j.
def pat(len, seed)
  (0...len).map { |j| (seed + 31 * j) & 0xff }.pack("C*")
end

def hex(s)
  s.unpack1("H*")
end

HMAC_KEYS = [32, 20, 64, 131].freeze
HMAC_MSGS = [0, 1, 64, 256, 1000].freeze
GCM_MSGS = [0, 1, 16, 256, 1000].freeze
ROUNDS = 3

def gcm_seal(key, iv, aad, msg)
  c = OpenSSL::Cipher.new("aes-256-gcm")
  c.encrypt
  c.key = key
  c.iv = iv
  c.auth_data = aad
  # Cipher#update refuses empty input; an application skips the call
  out = (msg.empty? ? "" : c.update(msg)) + c.final
  [out, c.auth_tag]
end

def gcm_open(key, iv, aad, ct, tag)
  c = OpenSSL::Cipher.new("aes-256-gcm")
  c.decrypt
  c.key = key
  c.iv = iv
  c.auth_tag = tag
  c.auth_data = aad
  hex((ct.empty? ? "" : c.update(ct)) + c.final)
rescue OpenSSL::Cipher::CipherError => e
  "error #{e.class}: #{e.message}"
end

def as_load(what)
  require "active_support"
  require "active_support/message_#{what}"
end

# Each case: [bench op (key, msg) -> output, test lines].
def rb_hmac
  op = ->(k, m) { OpenSSL::HMAC.digest("SHA256", k, m) }
  [op, lambda {
    ROUNDS.times do |r|
      HMAC_KEYS.each do |kl|
        HMAC_MSGS.each do |ml|
          %w[SHA256 SHA1].each do |d|
            puts "hmac #{d} r#{r} k#{kl} m#{ml} " \
                 "#{hex(OpenSSL::HMAC.digest(d, pat(kl, kl), pat(ml, ml + 1)))}"
          end
        end
      end
    end
  }]
end

def rb_gcm
  iv = pat(12, 5)
  op = ->(k, m) { gcm_seal(k, iv, "", m).join }
  [op, -> { gcm_lines(method(:gcm_seal), method(:gcm_open)) }]
end

def gcm_lines(seal, open)
  ROUNDS.times do |r|
    [1, 2, 3].each do |ks|
      key = pat(32, ks)
      GCM_MSGS.each_with_index do |ml, i|
        iv = pat(12, ml + r)
        aad = i.odd? ? pat(20, 7) : ""
        msg = pat(ml, ml + 1)
        ct, tag = seal.call(key, iv, aad, msg)
        puts "seal r#{r} k#{ks} m#{ml} #{hex(ct)} #{hex(tag)}"
        puts "open r#{r} k#{ks} m#{ml} #{open.call(key, iv, aad, ct, tag)}"
        bad = tag.dup
        bad.setbyte(0, bad.getbyte(0) ^ 1)
        puts "forged r#{r} k#{ks} m#{ml} #{open.call(key, iv, aad, ct, bad)}"
      end
    end
  end
end

# The fix: one OpenSSL::HMAC per key and digest, reset after each message.
def rb_hmac_fix
  macs = {}
  mac = lambda { |d, k, m|
    h = (macs[[d, k]] ||= OpenSSL::HMAC.new(k, d))
    out = h.update(m).digest
    h.reset
    out
  }
  one = nil # the bench's one key: a variable holds its HMAC
  op = lambda { |k, m|
    one ||= OpenSSL::HMAC.new(k, "SHA256")
    out = one.update(m).digest
    one.reset
    out
  }
  [op, lambda {
    ROUNDS.times do |r|
      HMAC_KEYS.each do |kl|
        HMAC_MSGS.each do |ml|
          %w[SHA256 SHA1].each do |d|
            puts "hmac #{d} r#{r} k#{kl} m#{ml} " \
                 "#{hex(mac.call(d, pat(kl, kl), pat(ml, ml + 1)))}"
          end
        end
      end
    end
  }]
end

# The fix: one keyed Cipher per key and direction, given a new IV (and, to
# open, the tag) per message.
def rb_gcm_fix
  ciphers = {}
  cipher = lambda { |dir, key|
    ciphers[[dir, key]] ||= OpenSSL::Cipher.new("aes-256-gcm").tap do |c|
      c.send(dir)
      c.key = key
    end
  }
  seal = lambda { |key, iv, aad, msg|
    c = cipher.call(:encrypt, key)
    c.iv = iv
    c.auth_data = aad
    out = (msg.empty? ? "" : c.update(msg)) + c.final
    [out, c.auth_tag]
  }
  open = lambda do |key, iv, aad, ct, tag|
    c = cipher.call(:decrypt, key)
    c.iv = iv
    c.auth_tag = tag
    c.auth_data = aad
    hex((ct.empty? ? "" : c.update(ct)) + c.final)
  rescue OpenSSL::Cipher::CipherError => e
    "error #{e.class}: #{e.message}"
  end
  iv = pat(12, 5)
  one = nil # the bench's one key: a variable holds its Cipher
  op = lambda { |k, m|
    one ||= OpenSSL::Cipher.new("aes-256-gcm").tap do |c|
      c.encrypt
      c.key = k
    end
    one.iv = iv
    one.auth_data = ""
    (m.empty? ? "" : one.update(m)) + one.final + one.auth_tag
  }
  [op, -> { gcm_lines(seal, open) }]
end

def verifier(key)
  ActiveSupport::MessageVerifier.new(key)
end

def rb_mv_generate
  as_load("verifier")
  v = nil
  op = lambda { |k, m|
    v ||= verifier(k)
    v.generate(m)
  }
  [op, method(:as_verifier_test)]
end

def rb_mv_verified
  as_load("verifier")
  v = token = nil
  op = lambda { |k, m|
    v ||= verifier(k)
    token ||= v.generate(m)
    v.verified(token)
  }
  [op, method(:as_verifier_test)]
end

def as_verifier_test
  ROUNDS.times do |r|
    HMAC_KEYS.each do |kl|
      v = verifier(pat(kl, kl))
      HMAC_MSGS.each do |ml|
        t = v.generate(pat(ml, ml + 1))
        puts "generate r#{r} k#{kl} m#{ml} #{t}"
        puts "verified r#{r} k#{kl} m#{ml} #{hex(v.verified(t) || '')}"
        bad = t.sub(/.\z/) { |c| c == "0" ? "1" : "0" }
        puts "forged r#{r} k#{kl} m#{ml} #{v.verified(bad).inspect}"
      end
    end
  end
end

def encryptor(key)
  ActiveSupport::MessageEncryptor.new(key, cipher: "aes-256-gcm")
end

def rb_me_encrypt
  as_load("encryptor")
  e = nil
  op = lambda { |k, m|
    e ||= encryptor(k)
    e.encrypt_and_sign(m)
  }
  [op, method(:as_encryptor_test)]
end

def rb_me_decrypt
  as_load("encryptor")
  e = token = nil
  op = lambda { |k, m|
    e ||= encryptor(k)
    token ||= e.encrypt_and_sign(m)
    e.decrypt_and_verify(token)
  }
  [op, method(:as_encryptor_test)]
end

# MessageEncryptor draws a random IV with Cipher#random_iv; for outputs that
# can be compared across runs the test makes that IV a fixed pattern (the
# cipher calls are unchanged: it is still Cipher#iv=).
def as_encryptor_test
  OpenSSL::Cipher.class_eval do
    define_method(:random_iv) { self.iv = pat(iv_len, 9) }
  end
  ROUNDS.times do |r|
    [1, 2, 3].each do |ks|
      e = encryptor(pat(32, ks))
      GCM_MSGS.each do |ml|
        t = e.encrypt_and_sign(pat(ml, ml + 1))
        puts "encrypt r#{r} k#{ks} m#{ml} #{t}"
        puts "decrypt r#{r} k#{ks} m#{ml} #{hex(e.decrypt_and_verify(t))}"
        data, iv, tag = t.split("--")
        bad = [data, iv, [tag.unpack1("m0").bytes.tap { |b| b[0] ^= 1 }
                           .pack("C*")].pack("m0")].join("--")
        begin
          e.decrypt_and_verify(bad)
          puts "forged r#{r} k#{ks} m#{ml} accepted"
        rescue ActiveSupport::MessageEncryptor::InvalidMessage => ex
          puts "forged r#{r} k#{ks} m#{ml} #{ex.class}"
        end
      end
    end
  end
end

CASES = {
  "rb-hmac" => :rb_hmac,
  "rb-gcm" => :rb_gcm,
  "rb-mv-generate" => :rb_mv_generate,
  "rb-mv-verified" => :rb_mv_verified,
  "rb-me-encrypt" => :rb_me_encrypt,
  "rb-me-decrypt" => :rb_me_decrypt,
  "rb-hmac-fix" => :rb_hmac_fix,
  "rb-gcm-fix" => :rb_gcm_fix,
}.freeze

name, mode, n = ARGV
unless CASES.key?(name) && %w[bench test].include?(mode)
  warn "usage: ruby clients.rb {#{CASES.keys.join('|')}} {bench N|test}"
  exit 2
end
op, test = send(CASES[name])
if mode == "test"
  test.call
else
  key = pat(32, 32)
  msg = pat(256, 257)
  out = nil
  Integer(n).times { out = op.call(key, msg) }
  puts out.is_a?(String) && out.encoding == Encoding::BINARY ? hex(out) : out
end
