#include "web/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace loadwatch {

namespace {

/// More distinct successful logins than any real set of scrapers; the cache is emptied when
/// full, so wrong-then-right guesses cannot grow it without bound.
constexpr std::size_t kMaxCached = 1024;
/// Recent distinct wrong credentials remembered (the oldest is forgotten first): a client that
/// retries the same wrong password, e.g. after a password change, costs no bcrypt.
constexpr std::size_t kMaxCachedFailures = 4096;

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int bcrypt_cost(const std::string& hash) {
  // "$2b$10$...": parse_web_config checked the format.
  if (hash.size() < 7) return 10;
  return (hash[4] - '0') * 10 + (hash[5] - '0');
}

}  // namespace

std::optional<std::string> base64_decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  out.reserve(in.size() * 3 / 4);
  unsigned buffer = 0;
  int bits = 0;
  for (char c : in) {
    int v = base64_value(c);
    if (v < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  if (bits >= 6) return std::nullopt;  // a lone trailing character encodes no whole byte
  return out;
}

std::optional<std::pair<std::string, std::string>> parse_basic_authorization(
    std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  constexpr std::string_view scheme = "basic ";
  if (value.size() < scheme.size()) return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i]) return std::nullopt;
  }
  value.remove_prefix(scheme.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  auto decoded = base64_decode(value);
  if (!decoded) return std::nullopt;
  auto colon = decoded->find(':');  // RFC 7617: the user name cannot contain ':'
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(decoded->substr(0, colon), decoded->substr(colon + 1));
}

bool crypt_matches(const std::string& password, const std::string& hash) {
  // struct crypt_data is ~32 KiB: too big for a small thread stack.
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof *data);
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
  bool ok = out && out[0] != '*' && std::strlen(out) == hash.size() &&
            CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(data.get(), sizeof *data);  // it held the password
  return ok;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {
  if (users_.empty()) return;
  if (RAND_bytes(hmac_key_.data(), static_cast<int>(hmac_key_.size())) != 1) {
    throw std::runtime_error("basic auth: no random bytes for the cache key");
  }
  int cost = 4;
  for (const auto& [user, hash] : users_) cost = std::max(cost, bcrypt_cost(hash));
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt)) {
    throw std::runtime_error("basic auth: cannot make a bcrypt salt");
  }
  unsigned char random[16];
  RAND_bytes(random, sizeof random);
  std::string password(reinterpret_cast<char*>(random), sizeof random);
  for (char& c : password) c = static_cast<char>('a' + (static_cast<unsigned char>(c) % 26));
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof *data);
  const char* hash = crypt_rn(password.c_str(), salt, data.get(), sizeof *data);
  if (!hash || hash[0] == '*') throw std::runtime_error("basic auth: cannot make the dummy hash");
  dummy_hash_ = hash;
}

BasicAuth::Key BasicAuth::cache_key(const std::string& user, const std::string& password) const {
  std::string message = user;
  message += '\0';
  message += password;
  Key key{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), hmac_key_.data(), static_cast<int>(hmac_key_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), key.data(), &len);
  OPENSSL_cleanse(message.data(), message.size());
  return key;
}

bool BasicAuth::enter_bcrypt(const std::string& client) const {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  int& mine = waiting_[client];
  if (waiting_total_ > kMaxWaiting || mine >= kMaxWaitingPerClient) {
    if (mine == 0) waiting_.erase(client);
    return false;
  }
  ++mine;
  ++waiting_total_;
  std::uint64_t ticket = next_ticket_++;
  queue_cv_.wait(lock, [&] { return ticket == finished_; });
  return true;
}

void BasicAuth::leave_bcrypt(const std::string& client) const {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    ++finished_;
    --waiting_total_;
    auto it = waiting_.find(client);
    if (it != waiting_.end() && --it->second == 0) waiting_.erase(it);
  }
  queue_cv_.notify_all();
}

std::optional<AuthResult> BasicAuth::cached_result(const Key& key) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.count(key)) return AuthResult::ok;
  if (failures_.count(key)) return AuthResult::denied;
  return std::nullopt;
}

std::optional<AuthResult> BasicAuth::check_without_bcrypt(std::string_view authorization) const {
  if (users_.empty()) return AuthResult::ok;
  auto credentials = parse_basic_authorization(authorization);
  if (!credentials) return AuthResult::denied;
  auto& [user, password] = *credentials;
  std::optional<AuthResult> r = cached_result(cache_key(user, password));
  OPENSSL_cleanse(password.data(), password.size());
  return r;
}

AuthResult BasicAuth::check(std::string_view authorization, const std::string& client) const {
  if (users_.empty()) return AuthResult::ok;
  auto credentials = parse_basic_authorization(authorization);
  if (!credentials) return AuthResult::denied;
  auto& [user, password] = *credentials;
  Key key = cache_key(user, password);
  if (auto r = cached_result(key)) {
    OPENSSL_cleanse(password.data(), password.size());
    return *r;
  }
  if (!enter_bcrypt(client)) {
    OPENSSL_cleanse(password.data(), password.size());
    return AuthResult::busy;
  }
  // The same credentials may have been checked while this one waited (a scraper's retry).
  std::optional<AuthResult> result = cached_result(key);
  if (!result) {
    auto it = users_.find(user);
    bool known = it != users_.end();
    bool match = crypt_matches(password, known ? it->second : dummy_hash_);
    result = known && match ? AuthResult::ok : AuthResult::denied;
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (*result == AuthResult::ok) {
      if (cache_.size() >= kMaxCached) cache_.clear();
      cache_.insert(key);
    } else if (failures_.insert(key).second) {
      failure_order_.push_back(key);
      if (failure_order_.size() > kMaxCachedFailures) {
        failures_.erase(failure_order_.front());
        failure_order_.pop_front();
      }
    }
  }
  leave_bcrypt(client);
  OPENSSL_cleanse(password.data(), password.size());
  return *result;
}

std::size_t BasicAuth::cached() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.size();
}

std::size_t BasicAuth::cached_failures() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return failures_.size();
}

}  // namespace loadwatch
