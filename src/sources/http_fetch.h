#pragma once
// loadwatch's one HTTP client (libcurl): GET for pull sources and the report's Prometheus
// queries, GET and POST for the command line's run API calls. Timeouts, a response size limit
// on decoded bytes, gzip, TLS and auth, prompt cancellation, and the error reasons of
// loadwatch_source_errors_total.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "config/tls_client_config.h"

namespace loadwatch {

/// Why a scrape failed; the label values of loadwatch_source_errors_total{reason}.
/// Credentials: loadwatch's own files for the source (password_file, bearer_token_file,
/// tls ca_file, cert_file, key_file) are missing, unreadable or invalid; no request was sent
/// or the handshake could not start. A TLS failure caused by the peer is Connect.
enum class FetchError { None, Timeout, Connect, HttpStatus, Parse, TooLarge, Credentials, Stopped };

/// "timeout", "connect", "http_status", "parse", "too_large", "credentials" ("" for None,
/// "stopped").
const char* fetch_error_reason(FetchError e);

/// The reasons exported (every one, from start-up, so rate() works from the first error).
inline constexpr FetchError kFetchErrorReasons[] = {
    FetchError::Timeout, FetchError::Connect,  FetchError::HttpStatus,
    FetchError::Parse,   FetchError::TooLarge, FetchError::Credentials};

struct FetchOptions {
  std::chrono::milliseconds timeout{2000};  // whole transfer, connect included
  std::uint64_t max_bytes = 16u << 20;      // decoded body bytes; beyond -> TooLarge
  std::string accept;                       // Accept header; empty = curl's default
  TlsClientConfig tls;                      // for https:// URLs
  /// Secrets the caller read for this request. Sent, never logged nor kept in the handle
  /// after the request.
  std::string username;  // basic auth when non-empty (with password)
  std::string password;
  std::string bearer_token;  // Authorization: Bearer when non-empty
  std::string content_type;  // of a POST body; empty = curl's default
  /// Keep the body of a non-2xx answer (an API's error message); by default it is dropped.
  bool keep_error_body = false;
  std::string user_agent;  // empty = "loadwatch/VERSION"
};

struct FetchResult {
  FetchError error = FetchError::None;
  long status = 0;      // HTTP status, 0 when none was received
  std::string body;     // decoded body (complete only when error == None)
  std::string message;  // human-readable cause for logs
  double seconds = 0;   // wall time of the request
  double arrived = 0;   // unix time the answer was in (set by the source runner)
  double steady = 0;    // steady-clock seconds the answer was in (set by the source runner)
  bool ok() const { return error == FetchError::None; }
};

/// One reusable libcurl easy handle (keeps its connection alive between scrapes). Not
/// thread-safe: owned and used by one source runner thread. The stop flag, if given, is
/// polled every ~50 ms during a transfer, so a hanging endpoint never delays shutdown.
class HttpFetcher {
 public:
  explicit HttpFetcher(const std::atomic<bool>* stop = nullptr);
  ~HttpFetcher();
  HttpFetcher(const HttpFetcher&) = delete;
  HttpFetcher& operator=(const HttpFetcher&) = delete;

  /// GET `url`. Only a 2xx answer is success; others are HttpStatus with `status` set.
  /// Accept-Encoding: gzip is always offered; the size limit applies to the decoded body,
  /// so a gzip bomb is TooLarge after at most max_bytes of memory.
  FetchResult get(const std::string& url, const FetchOptions& options);
  /// POST `body` to `url`; otherwise as get().
  FetchResult post(const std::string& url, const std::string& body, const FetchOptions& options);

 private:
  struct Impl;
  FetchResult perform(const std::string& url, const FetchOptions& options,
                      const std::string* post_body);
  Impl* impl_;
};

}  // namespace loadwatch
