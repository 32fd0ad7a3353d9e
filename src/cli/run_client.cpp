#include "cli/run_client.h"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "sources/curl_library.h"
#include "sources/http_fetch.h"
#include "util/secret_file.h"
#include "util/unix_time.h"
#include "version.h"

namespace loadwatch {

namespace {

constexpr std::size_t kMaxAnswerBytes = 16 << 20;
/// A read answered 503 is asked again this many times, a second apart (the daemon's answer
/// builders were busy with other readers; its Retry-After says 1).
constexpr int kBusyRetries = 10;

}  // namespace

RunClient::RunClient(RunClientOptions options)
    : options_(std::move(options)), http_(std::make_unique<HttpFetcher>()) {
  while (!options_.url.empty() && options_.url.back() == '/') options_.url.pop_back();
  if (options_.url.rfind("http://", 0) != 0 && options_.url.rfind("https://", 0) != 0) {
    throw std::runtime_error("--url: want http://HOST:PORT or https://HOST:PORT, got \"" +
                             options_.url + "\"");
  }
  if (!options_.password_file.empty()) {
    std::string error;
    if (!read_secret_file(options_.password_file, password_, error)) {
      throw std::runtime_error("--password-file: " + error);
    }
  }
  std::string why;
  if (!curl_library(&why)) throw std::runtime_error("cannot load libcurl: " + why);
}

RunClient::~RunClient() = default;
RunClient::RunClient(RunClient&&) noexcept = default;

RunAnswer RunClient::get(const std::string& path) const { return request(path, nullptr); }

RunAnswer RunClient::post(const std::string& path, const std::string& json) const {
  return request(path, &json);
}

RunAnswer RunClient::request(const std::string& path, const std::string* json) const {
  FetchOptions fo;
  fo.timeout = options_.timeout;
  fo.max_bytes = kMaxAnswerBytes;
  fo.accept = "application/json";
  fo.content_type = "application/json";
  fo.keep_error_body = true;  // the API's error says why
  fo.user_agent = "loadwatch-run/" LOADWATCH_VERSION;
  fo.tls.ca_file = options_.ca_file;
  fo.username = options_.user;
  if (!options_.user.empty()) fo.password = password_;
  std::string url = options_.url + path;
  RunAnswer answer;
  FetchResult r;
  for (int busy = 0;; ++busy) {
    answer.sent = unix_now();  // of the request answered: the clock skew is read from it
    r = json ? http_->post(url, *json, fo) : http_->get(url, fo);
    if (json || r.status != 503 || busy >= kBusyRetries) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  answer.received = unix_now();
  if (r.status == 0) {
    answer.error = url + ": " + r.message;
    return answer;
  }
  answer.reached = true;
  answer.status = r.status;
  answer.body = std::move(r.body);
  return answer;
}

}  // namespace loadwatch
