// Basic-auth parsing and bcrypt checks (the web config's basic_auth_users).
#include <crypt.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "web/basic_auth.h"

using namespace loadwatch;

namespace {

std::string bcrypt(const std::string& password, unsigned long cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2b$", cost, nullptr, 0, salt, sizeof salt) != nullptr);
  struct crypt_data data {};
  const char* hash = crypt_rn(password.c_str(), salt, &data, sizeof data);
  REQUIRE(hash != nullptr);
  return hash;
}

std::string basic(const std::string& user_colon_password) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (unsigned char c : user_colon_password) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(buffer >> bits) & 63];
    }
  }
  if (bits) out += alphabet[(buffer << (6 - bits)) & 63];
  while (out.size() % 4) out += '=';
  return "Basic " + out;
}

}  // namespace

TEST_CASE("base64 decodes RFC 4648 test vectors and refuses other characters") {
  CHECK(base64_decode("") == std::string());
  CHECK(base64_decode("Zg==") == std::string("f"));
  CHECK(base64_decode("Zm8=") == std::string("fo"));
  CHECK(base64_decode("Zm9v") == std::string("foo"));
  CHECK(base64_decode("Zm9vYmFy") == std::string("foobar"));
  CHECK(base64_decode("Zm9vYg") == std::string("foob"));  // padding is optional
  CHECK_FALSE(base64_decode("Zm9v!").has_value());
  CHECK_FALSE(base64_decode("Z").has_value());
}

TEST_CASE("an Authorization header splits into user and password at the first colon") {
  auto c = parse_basic_authorization("Basic YWxpY2U6czNjcmV0");  // alice:s3cret
  REQUIRE(c);
  CHECK(c->first == "alice");
  CHECK(c->second == "s3cret");
  c = parse_basic_authorization(basic("bob:pa:ss:word"));
  REQUIRE(c);
  CHECK(c->first == "bob");
  CHECK(c->second == "pa:ss:word");
  CHECK(parse_basic_authorization("basic   YWxpY2U6czNjcmV0 "));  // scheme is case-insensitive
  CHECK_FALSE(parse_basic_authorization(""));
  CHECK_FALSE(parse_basic_authorization("Bearer YWxpY2U6czNjcmV0"));
  CHECK_FALSE(parse_basic_authorization("Basic YWxpY2U="));  // "alice", no colon
  CHECK_FALSE(parse_basic_authorization("Basic ****"));
  CHECK_FALSE(parse_basic_authorization("Basic"));
}

TEST_CASE("crypt_matches checks bcrypt hashes in every flavour htpasswd and Go write") {
  // $2y$ (htpasswd) and $2a$ (Go's bcrypt) hashes of "s3cret" with a fixed salt.
  CHECK(crypt_matches("s3cret", "$2y$04$abcdefghijklmnopqrstuuLZYjhNQAOdpbzt4WxWlUHjv1wsyH5DG"));
  CHECK(crypt_matches("s3cret", "$2a$04$abcdefghijklmnopqrstuuLZYjhNQAOdpbzt4WxWlUHjv1wsyH5DG"));
  CHECK_FALSE(
      crypt_matches("s3creT", "$2y$04$abcdefghijklmnopqrstuuLZYjhNQAOdpbzt4WxWlUHjv1wsyH5DG"));
  CHECK_FALSE(crypt_matches("s3cret", "not a hash"));
  std::string h = bcrypt("hunter2", 4);
  CHECK(crypt_matches("hunter2", h));
  CHECK_FALSE(crypt_matches("hunter3", h));
}

TEST_CASE("BasicAuth: users, wrong passwords, unknown users, the success cache") {
  constexpr auto ok = AuthResult::ok;
  constexpr auto denied = AuthResult::denied;
  BasicAuth none({});
  CHECK_FALSE(none.enabled());
  CHECK(none.check("") == ok);

  BasicAuth auth({{"alice", bcrypt("s3cret", 5)}, {"bob", bcrypt("hunter2", 4)}});
  CHECK(auth.enabled());
  CHECK(auth.check("") == denied);
  CHECK(auth.check("Basic") == denied);
  CHECK(auth.check(basic("alice:wrong")) == denied);
  CHECK(auth.check(basic("mallory:s3cret")) == denied);
  CHECK(auth.cached() == 0);  // failures are not cached as successes
  CHECK(auth.cached_failures() == 2);
  CHECK(auth.check(basic("alice:s3cret")) == ok);
  CHECK(auth.check(basic("bob:hunter2")) == ok);
  CHECK(auth.cached() == 2);
  CHECK(auth.check(basic("alice:s3cret")) == ok);  // from the cache
  CHECK(auth.cached() == 2);
  CHECK(auth.check(basic("bob:s3cret")) == denied);  // the cache is per user and password
  CHECK(auth.check(basic("alice:s3cret ")) == denied);
  CHECK(auth.check(basic("alice:wrong")) == denied);  // from the failure cache
  CHECK(auth.cached_failures() == 4);
}

TEST_CASE("check_without_bcrypt answers only what needs no bcrypt") {
  BasicAuth none({});
  CHECK(none.check_without_bcrypt("") == AuthResult::ok);
  BasicAuth auth({{"alice", bcrypt("s3cret", 4)}});
  CHECK(auth.check_without_bcrypt("") == AuthResult::denied);
  CHECK(auth.check_without_bcrypt("Bearer abc") == AuthResult::denied);
  CHECK_FALSE(auth.check_without_bcrypt(basic("alice:s3cret")).has_value());  // not checked yet
  CHECK_FALSE(auth.check_without_bcrypt(basic("alice:wrong")).has_value());
  CHECK(auth.check(basic("alice:s3cret")) == AuthResult::ok);
  CHECK(auth.check(basic("alice:wrong")) == AuthResult::denied);
  CHECK(auth.check_without_bcrypt(basic("alice:s3cret")) == AuthResult::ok);  // cached
  CHECK(auth.check_without_bcrypt(basic("alice:wrong")) == AuthResult::denied);
  CHECK_FALSE(auth.check_without_bcrypt(basic("alice:other")).has_value());
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

TEST_CASE("an unknown user costs a bcrypt check at the users' cost, like a wrong password") {
  // Cost 8: one check takes milliseconds, so skipping bcrypt for unknown users would show.
  BasicAuth auth({{"alice", bcrypt("s3cret", 8)}});
  int n = 0;  // distinct passwords: a repeated one would come from the failure cache
  auto time = [&](const std::string& user) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) {
      CHECK(auth.check(basic(user + ":wrong" + std::to_string(++n))) == AuthResult::denied);
    }
    return seconds_since(t0) / 3;
  };
  double wrong = time("alice");
  double unknown = time("nobody");
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) CHECK(auth.check("Basic ****") == AuthResult::denied);
  double malformed = seconds_since(t0) / 3;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) CHECK(auth.check(basic("alice:wrong1")) == AuthResult::denied);
  double repeated = seconds_since(t0) / 3;
  CAPTURE(wrong, unknown, malformed, repeated);
  CHECK(unknown > wrong * 0.5);
  CHECK(unknown < wrong * 2.0);
  CHECK(malformed < wrong * 0.1);  // no credentials to check: no bcrypt
  CHECK(repeated < wrong * 0.1);   // a remembered failure: no bcrypt
}

TEST_CASE("a flood of wrong passwords: cached logins pass at once, the bcrypt queue is bounded") {
  // Cost 10: ~50 ms a check, so the flood below keeps bcrypt busy for seconds.
  BasicAuth auth({{"alice", bcrypt("s3cret", 10)}});
  REQUIRE(auth.check(basic("alice:s3cret"), "10.0.0.1") == AuthResult::ok);
  std::atomic<bool> stop{false};
  std::atomic<int> denied{0}, busy{0};
  std::vector<std::thread> flood;
  for (int t = 0; t < 16; ++t) {
    flood.emplace_back([&, t] {
      for (int i = 0; !stop && i < 1000; ++i) {
        // Two flooding addresses, every password distinct (no failure cache).
        auto r = auth.check(basic("alice:guess-" + std::to_string(t) + "-" + std::to_string(i)),
                            t % 2 ? "10.6.6.6" : "10.6.6.7");
        (r == AuthResult::busy ? busy : denied)++;
        if (r == AuthResult::busy) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // A cached login is a hash lookup, whatever bcrypt is doing.
  double worst_cached = 0;
  for (int i = 0; i < 20; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    CHECK(auth.check(basic("alice:s3cret"), "10.0.0.1") == AuthResult::ok);
    worst_cached = std::max(worst_cached, seconds_since(t0));
  }
  // A new client's first login waits behind at most the two checks each flooding address may
  // have queued (plus the one running), not behind the whole flood.
  auto t0 = std::chrono::steady_clock::now();
  AuthResult fresh = auth.check(basic("alice:other-client-wrong"), "10.0.0.2");
  double fresh_wait = seconds_since(t0);
  stop = true;
  for (auto& t : flood) t.join();
  CAPTURE(worst_cached, fresh_wait, denied.load(), busy.load());
  CHECK(fresh == AuthResult::denied);  // it was checked, not turned away
  CHECK(worst_cached < 0.05);
  CHECK(busy > denied);  // most of the flood was turned away without bcrypt
  // 5 checks of ~50 ms each; generous for a loaded 2-core machine.
  CHECK(fresh_wait < 2.0);
}

TEST_CASE("one client address gets at most two checks queued; others still get theirs") {
  BasicAuth auth({{"alice", bcrypt("s3cret", 10)}});
  std::vector<std::thread> threads;
  std::atomic<int> busy{0}, checked{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      auto r = auth.check(basic("alice:x" + std::to_string(t)), "10.6.6.6");
      (r == AuthResult::busy ? busy : checked)++;
    });
  }
  for (auto& t : threads) t.join();
  CAPTURE(busy.load(), checked.load());
  // Six at once from one address: two are checked (one running, one waiting), the rest are
  // turned away. Thread start-up can spread them out enough for a third to find a free place.
  CHECK(checked >= 2);
  CHECK(busy >= 1);
  CHECK(auth.check(basic("alice:s3cret"), "10.0.0.1") == AuthResult::ok);
}
