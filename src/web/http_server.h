#pragma once
// The one HTTP port (civetweb): /metrics, /, /-/healthy, /-/ready, /api/..., push endpoints.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loadwatch {

struct HttpRequest {
  std::string method;        // "GET", "POST"
  std::string path;          // "/write"
  std::string query;         // "db=jmeter" (undecoded, without '?')
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;          // read fully, up to the route's body limit
  /// Value of one query parameter, URL-decoded; empty when absent.
  std::string query_param(const std::string& name) const;
  std::string header(const std::string& lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerSettings {
  std::string listen_address = ":9797";  // HOST:PORT, [::1]:PORT or :PORT
  int max_requests = 40;                 // concurrent requests; 503 beyond
  std::size_t max_body_bytes = 32u << 20;
  std::string web_config_file;           // exporter-toolkit TLS/basic auth (may be empty)
  /// Time a connection may take to send its request line and headers (and each later read or
  /// write); a silent or trickling client is dropped after it.
  int request_timeout_ms = 5000;
  /// How long an idle keep-alive connection is kept between two requests.
  int keep_alive_timeout_ms = 10000;
  /// Longest request line + headers; larger requests get 400.
  std::size_t max_header_bytes = 16384;
};

/// civetweb behind a small route table. Handlers run on civetweb worker threads, possibly
/// several at once: they must be thread-safe. Routes are added before start().
class HttpServer {
 public:
  explicit HttpServer(HttpServerSettings settings);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Exact-path route; `max_body` caps the request body (413 beyond). A path ending in "/*"
  /// takes every longer path under it ("/api/v1/runs/*": "/api/v1/runs/ID"); exact routes win.
  void route(const std::string& path, HttpHandler handler, std::size_t max_body = 0);
  /// Loads the web config file (if any), binds and starts serving; throws std::runtime_error
  /// with a clear message (e.g. the port is already in use, or the web config is invalid:
  /// then a ConfigError with file:line:col).
  void start();
  /// Re-reads the web config file when it, or a certificate, key or CA file it names, changed
  /// since the last load (`force`: re-read anyway, e.g. on SIGHUP). Users and headers are
  /// swapped in at once; a TLS change restarts the listener on the same port (connections in
  /// flight are closed). A file that does not parse or load is logged and the running config
  /// stays. Returns true when a new config came into force. Call from one thread only (the
  /// daemon's main loop); safe while requests are being served.
  bool reload_web_config(bool force = false);
  void stop();
  /// The bound TCP port (useful with port 0).
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loadwatch
