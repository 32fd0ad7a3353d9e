#pragma once
// HTTP basic authentication against bcrypt hashes (the web config's basic_auth_users).

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace loadwatch {

/// Standard base64 (RFC 4648 §4, padding optional); nullopt on a character outside the alphabet.
std::optional<std::string> base64_decode(std::string_view in);

/// An Authorization header value "Basic BASE64(user:password)" -> {user, password}; nullopt
/// when it is not basic auth or is malformed. The scheme name is case-insensitive (RFC 7617).
std::optional<std::pair<std::string, std::string>> parse_basic_authorization(
    std::string_view value);

/// True when `password` hashes to `hash` (any crypt(5) hash libxcrypt knows; bcrypt here).
/// Costs one full hash computation whatever the outcome; compares in constant time.
bool crypt_matches(const std::string& password, const std::string& hash);

/// Checks credentials against a fixed user table. Thread-safe: check() runs on many civetweb
/// workers at once. bcrypt runs one at a time (as exporter-toolkit does), so a flood of wrong
/// passwords costs at most one core; successful checks are cached, keyed by an HMAC-SHA256 of
/// user and password under a per-instance random key (never the plaintext), so a scraper
/// that authenticates every few seconds does not pay bcrypt each time.
class BasicAuth {
 public:
  /// `users`: user -> bcrypt hash. An unknown user is checked against a dummy hash of the
  /// users' highest cost, so it takes as long as a wrong password (no user enumeration by
  /// timing).
  explicit BasicAuth(std::map<std::string, std::string> users);

  /// No users configured: every request passes.
  bool enabled() const { return !users_.empty(); }
  /// `authorization`: the request's Authorization header value ("" when absent).
  bool check(std::string_view authorization) const;
  /// Cached successful checks (for tests).
  std::size_t cached() const;

 private:
  using Key = std::array<std::uint8_t, 32>;
  Key cache_key(const std::string& user, const std::string& password) const;

  std::map<std::string, std::string> users_;
  std::string dummy_hash_;
  std::array<std::uint8_t, 32> hmac_key_{};
  mutable std::mutex cache_mutex_;
  mutable std::set<Key> cache_;
  mutable std::mutex bcrypt_mutex_;
};

}  // namespace loadwatch
