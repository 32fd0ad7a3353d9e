#pragma once
// The one HTTP port (Boost.Beast/Asio): /metrics, /, /-/healthy, /-/ready, /api/..., push
// endpoints.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "web/http_message.h"
#include "web/http_server_settings.h"

namespace loadwatch {

/// What the server has turned away and holds right now (any thread).
struct HttpServerStats {
  int connections = 0;         // open connections (past the TLS handshake)
  int max_connections = 0;     // connections held at once (max_connections, fd-capped)
  std::size_t body_bytes = 0;  // request body memory reserved right now
  std::size_t max_body_memory = 0;
  /// Requests and connections turned away since start, by reason: unauthorized, auth_busy,
  /// bad_framing, body_not_allowed, body_too_large, body_incomplete, body_memory,
  /// too_many_requests, transfer_timeout, bad_request, header_too_large, address_requests,
  /// answers_busy (requests), address_connections, connections_full (connections closed at once
  /// or to make room); every reason, zeros included.
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
