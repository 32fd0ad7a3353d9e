#pragma once
// The one HTTP port (Boost.Beast/Asio): /metrics, /, /-/healthy, /-/ready, /api/..., push
// endpoints.

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
  /// Requests whose handler is queued or runs at once; 503 beyond. Reading a request and writing
  /// its response do not count: slow clients are bounded by the deadlines and max_connections.
  int max_requests = 40;
  /// Of max_requests, those one client address may have; 0: a quarter of them, at least 2.
  int max_requests_per_address = 0;
  /// Connections open at once (a few KiB each, no thread). When full, the oldest connection of
  /// the address holding the most that only waits for a request head is closed for a new one;
  /// when none waits, the new one is closed at once. Lowered to a quarter of the soft
  /// RLIMIT_NOFILE when that is less.
  int max_connections = 1200;
  /// Connections one client address may hold; past it, its own oldest connection waiting for a
  /// head makes room, or the new one is closed at once.
  int max_connections_per_address = 64;
  /// Request bodies held in memory at once, over all requests; 503 beyond.
  std::size_t max_body_memory = 64u << 20;
  std::string web_config_file;  // exporter-toolkit TLS/basic auth (may be empty)
  /// Time a connection may take to send its whole request line and headers (the first request:
  /// from the accept, TLS handshake included; later ones: from their first byte; not per read);
  /// a silent or trickling client is dropped after it.
  int request_timeout_ms = 5000;
  /// How long an idle keep-alive connection is kept between two requests.
  int keep_alive_timeout_ms = 10000;
  /// A connection ends after this many requests, or once this old, when its response is written
  /// (it says Connection: close).
  int max_requests_per_connection = 1000;
  int max_connection_age_ms = 5 * 60 * 1000;
  /// Longest request line + headers; larger requests get 400.
  std::size_t max_header_bytes = 16384;
  /// A body, and a response, must move at least this fast (bytes/s) once request_timeout_ms
  /// has passed; a client that trickles slower is dropped (408 for a body).
  std::size_t min_transfer_rate = 64u << 10;
};
/// What the server has turned away and holds right now (any thread).
struct HttpServerStats {
  int connections = 0;         // open connections (past the TLS handshake)
  int max_connections = 0;     // connections held at once (max_connections, fd-capped)
  std::size_t body_bytes = 0;  // request body memory reserved right now
  std::size_t max_body_memory = 0;
  /// Requests and connections turned away since start, by reason: unauthorized, auth_busy,
  /// bad_framing, body_not_allowed, body_too_large, body_incomplete, body_memory,
  /// too_many_requests, transfer_timeout, bad_request, header_too_large, address_requests
  /// (requests), address_connections, connections_full (connections closed at once or to make
  /// room); every reason, zeros included.
  std::vector<std::pair<std::string, std::uint64_t>> rejected;
};

/// Boost.Beast/Asio behind a small route table: two I/O threads for every connection, handlers
/// on a small pool, possibly several at once: they must be thread-safe. Routes are added before
/// start().
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
