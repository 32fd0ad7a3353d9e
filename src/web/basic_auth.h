#pragma once
// HTTP basic authentication against bcrypt hashes (the web config's basic_auth_users).

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
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

/// Outcome of a credentials check.
enum class AuthResult {
  ok,
  denied,  // missing, malformed or wrong credentials: 401
  busy,    // not checked: too many password checks are waiting (this client's or in all): 429
};

/// Checks credentials against a fixed user table. Thread-safe: the HTTP server calls it from
/// several threads at once.
///
/// bcrypt is slow on purpose, so a client sending wrong passwords in a loop must not be able to
/// keep the CPU busy or make valid clients wait behind it:
/// - results are cached, keyed by an HMAC-SHA256 of user and password under a per-instance
///   random key (never the plaintext): a scraper that authenticates every few seconds, and a
///   client that repeats the same wrong password, cost a hash lookup, not bcrypt;
/// - bcrypt runs one check at a time (as exporter-toolkit does), so a flood costs at most one
///   core, in arrival order;
/// - at most `kMaxWaitingPerClient` checks per client address (running or waiting) and
///   `kMaxWaiting` in all may wait for it; beyond that check() answers busy at once instead of
///   queueing. One flooding address therefore delays another client's first login by at most
///   two checks, and no flood by more than kMaxWaiting + 1.
class BasicAuth {
 public:
  static constexpr int kMaxWaiting = 8;
  static constexpr int kMaxWaitingPerClient = 2;

  /// `users`: user -> bcrypt hash. An unknown user is checked against a dummy hash of the
  /// users' highest cost, so it takes as long as a wrong password (no user enumeration by
  /// timing).
  explicit BasicAuth(std::map<std::string, std::string> users);

  /// No users configured: every request passes.
  bool enabled() const { return !users_.empty(); }
  /// `authorization`: the request's Authorization header value ("" when absent); `client`:
  /// the peer's address, the unit of fairness for the bcrypt queue.
  AuthResult check(std::string_view authorization, const std::string& client = "") const;
  /// What check() would answer without running bcrypt (no users, malformed or missing
  /// credentials, a cached result); nullopt when it would have to. Costs a hash lookup, so it
  /// may run where bcrypt must not (an I/O thread).
  std::optional<AuthResult> check_without_bcrypt(std::string_view authorization) const;
  /// Cached successful checks (for tests).
  std::size_t cached() const;
  /// Cached failed checks (for tests).
  std::size_t cached_failures() const;

 private:
  using Key = std::array<std::uint8_t, 32>;
  Key cache_key(const std::string& user, const std::string& password) const;
  std::optional<AuthResult> cached_result(const Key& key) const;
  /// Waits for this client's turn at bcrypt; false (at once) when the queue is full.
  bool enter_bcrypt(const std::string& client) const;
  void leave_bcrypt(const std::string& client) const;

  std::map<std::string, std::string> users_;
  std::string dummy_hash_;
  std::array<std::uint8_t, 32> hmac_key_{};

  mutable std::mutex cache_mutex_;
  mutable std::set<Key> cache_;
  mutable std::set<Key> failures_;
  mutable std::deque<Key> failure_order_;  // oldest first, to evict from failures_

  // The bcrypt queue: tickets are served in order, one at a time.
  mutable std::mutex queue_mutex_;
  mutable std::condition_variable queue_cv_;
  mutable std::uint64_t next_ticket_ = 0;
  mutable std::uint64_t finished_ = 0;
  mutable std::map<std::string, int> waiting_;  // per client: queued or running
  mutable int waiting_total_ = 0;
};

}  // namespace loadwatch
