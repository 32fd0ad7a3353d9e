#pragma once
// The one HTTP port (civetweb): /metrics, /, /-/healthy, /-/ready, /api/..., push endpoints.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
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
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerSettings {
  std::string listen_address = ":9797";  // HOST:PORT, [::1]:PORT or :PORT
  /// Requests whose handler runs at once; 503 beyond. Reading a request and writing its
  /// response do not count: slow clients are bounded by the deadlines and max_connections.
  int max_requests = 40;
  /// Connections served at once, each on its own civetweb worker thread (~19 KiB RSS each),
  /// so that this many idle or slow clients do not delay a scrape. Further connections wait in
  /// the listen backlog. Lowered to a quarter of the soft RLIMIT_NOFILE when that is less.
  int max_connections = 1200;
  /// Request bodies held in memory at once, over all requests; 503 beyond.
  std::size_t max_body_memory = 64u << 20;
  std::string web_config_file;  // exporter-toolkit TLS/basic auth (may be empty)
  /// Time a connection may take to send its whole request line and headers (from its first
  /// byte or the end of the previous request, not per read); a silent or trickling client is
  /// dropped after it. Also bounds the TLS handshake.
  int request_timeout_ms = 5000;
  /// How long an idle keep-alive connection is kept between two requests.
  int keep_alive_timeout_ms = 10000;
  /// Longest request line + headers; larger requests get 400.
  std::size_t max_header_bytes = 16384;
  /// A body, and a response, must move at least this fast (bytes/s) once request_timeout_ms
  /// has passed; a client that trickles slower is dropped (408 for a body).
  std::size_t min_transfer_rate = 64u << 10;
};
/// What the server has turned away and holds right now (any thread).
struct HttpServerStats {
  int connections = 0;         // open connections (past the TLS handshake)
  int max_connections = 0;     // worker threads, i.e. connections served at once
  std::size_t body_bytes = 0;  // request body memory reserved right now
  std::size_t max_body_memory = 0;
  /// Requests turned away since start, by reason: unauthorized, auth_busy, bad_framing,
  /// body_not_allowed, body_too_large, body_incomplete, body_memory, too_many_requests,
  /// transfer_timeout (every reason, zeros included).
  std::vector<std::pair<std::string, std::uint64_t>> rejected;
};

/// civetweb behind a small route table. Handlers run on civetweb worker threads, possibly
/// several at once: they must be thread-safe. Routes are added before start().
class HttpServer {
 public:
  explicit HttpServer(HttpServerSettings settings);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Exact-path route; `max_body` caps the request body (413 beyond). 0: the route takes no
  /// body, and a request that sends one gets 413. A path ending in "/*" takes every longer path
  /// under it ("/api/v1/runs/*": "/api/v1/runs/ID"); exact routes win.
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
  HttpServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loadwatch
