#pragma once
// The HTTP client of `loadwatch run ...`: JSON requests to a loadwatch's run API, over
// http or https, with basic auth (libcurl, loaded like the sources load it).

#include <chrono>
#include <string>

namespace loadwatch {

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
};

class RunClient {
 public:
  /// Throws std::runtime_error when libcurl cannot be loaded or the password file read.
  explicit RunClient(RunClientOptions options);
  RunAnswer get(const std::string& path) const;
  RunAnswer post(const std::string& path, const std::string& json) const;
  const std::string& url() const { return options_.url; }

 private:
  RunAnswer request(const std::string& path, const std::string* json) const;
  RunClientOptions options_;
  std::string password_;
};

}  // namespace loadwatch
