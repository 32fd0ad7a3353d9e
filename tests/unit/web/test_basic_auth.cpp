// Basic-auth parsing and bcrypt checks (the web config's basic_auth_users).
#include <crypt.h>

#include <catch2/catch.hpp>
#include <chrono>

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
  BasicAuth none({});
  CHECK_FALSE(none.enabled());
  CHECK(none.check(""));

  BasicAuth auth({{"alice", bcrypt("s3cret", 5)}, {"bob", bcrypt("hunter2", 4)}});
  CHECK(auth.enabled());
  CHECK_FALSE(auth.check(""));
  CHECK_FALSE(auth.check("Basic"));
  CHECK_FALSE(auth.check(basic("alice:wrong")));
  CHECK_FALSE(auth.check(basic("mallory:s3cret")));
  CHECK(auth.cached() == 0);  // failures are not cached
  CHECK(auth.check(basic("alice:s3cret")));
  CHECK(auth.check(basic("bob:hunter2")));
  CHECK(auth.cached() == 2);
  CHECK(auth.check(basic("alice:s3cret")));  // from the cache
  CHECK(auth.cached() == 2);
  CHECK_FALSE(auth.check(basic("bob:s3cret")));  // the cache is per user and password
  CHECK_FALSE(auth.check(basic("alice:s3cret ")));
}

TEST_CASE("an unknown user costs a bcrypt check at the users' cost, like a wrong password") {
  // Cost 8: one check takes milliseconds, so skipping bcrypt for unknown users would show.
  BasicAuth auth({{"alice", bcrypt("s3cret", 8)}});
  auto time = [&](const std::string& header) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) CHECK_FALSE(auth.check(header));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
  };
  double wrong = time(basic("alice:wrong"));
  double unknown = time(basic("nobody:wrong"));
  double malformed = time("Basic ****");
  CAPTURE(wrong, unknown, malformed);
  CHECK(unknown > wrong * 0.5);
  CHECK(unknown < wrong * 2.0);
  CHECK(malformed < wrong * 0.1);  // no credentials to check: no bcrypt
}
