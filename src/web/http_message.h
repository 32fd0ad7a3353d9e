#pragma once
// An HTTP request and response as a route handler sees them, apart from the transport that
// carries them (web/http_server.h), so that what the connections share can use them too.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace loadwatch {

struct HttpRequest {
  std::string method;                          // "GET", "POST"
  std::string path;                            // "/write"
  std::string query;                           // "db=jmeter" (undecoded, without '?')
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;    // read fully (the Content-Length, or a complete chunked body)
  std::string client;  // the peer's address, e.g. "127.0.0.1"
  /// Value of one query parameter, URL-decoded; empty when absent.
  std::string query_param(const std::string& name) const;
  /// Every value of a repeated query parameter (`max=a&max=b`), URL-decoded, at most 32.
  std::vector<std::string> query_params(const std::string& name) const;
  std::string header(const std::string& lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  /// Sent instead of `body` when set: a page shared by concurrent responses (e.g. the latest
  /// /metrics page), so a slow reader holds no copy of it.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;
  /// Set by a handler that turns a request away for lack of its own capacity (a 503, e.g. the
  /// answer builders are busy): counted as `answers_busy` in HttpServerStats::rejected.
  bool refused_busy = false;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

}  // namespace loadwatch
