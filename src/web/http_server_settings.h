#pragma once
// The HTTP server's limits and listen address (web/http_server.h), apart from the server so
// that what its connections share can hold them.

#include <cstddef>
#include <string>

namespace loadwatch {

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

}  // namespace loadwatch
