#pragma once
// The command line's client of a loadwatch's API: JSON requests over http or https with basic
// auth, made through the one HTTP client (sources/http_fetch).

#include <chrono>
#include <memory>
#include <string>

namespace loadwatch {

class HttpFetcher;

struct RunClientOptions {
  std::string url;            // http(s)://HOST:PORT of the loadwatch
  std::string user;           // basic auth when non-empty
  std::string password_file;  // read once, trailing newline stripped
  std::string ca_file;        // CA bundle for https (default: the system's)
  std::chrono::milliseconds timeout{10000};
};

struct RunAnswer {
  bool reached = false;  // an HTTP answer came back (any status)
  long status = 0;
  std::string body;
  std::string error;  // why it was not reached
  /// The reader's unix time when the request left and when the answer was in: the clock skew
  /// of the loadwatch is measured against their midpoint, the round trip is its uncertainty.
  double sent = 0, received = 0;
};

class RunClient {
 public:
  /// Throws std::runtime_error when libcurl cannot be loaded or the password file read.
  explicit RunClient(RunClientOptions options);
  ~RunClient();
  RunClient(RunClient&&) noexcept;
  RunAnswer get(const std::string& path) const;
  RunAnswer post(const std::string& path, const std::string& json) const;
  const std::string& url() const { return options_.url; }

 private:
  RunAnswer request(const std::string& path, const std::string* json) const;
  RunClientOptions options_;
  std::string password_;
  std::unique_ptr<HttpFetcher> http_;  // one connection kept alive across requests
};

}  // namespace loadwatch
