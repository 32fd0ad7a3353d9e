#pragma once
// The listening socket of the HTTP server and the threads that serve it: the I/O threads (every
// connection), the handler pool and the password-check pool.

#include <memory>

#include "web/tls_server_config.h"

namespace loadwatch::http_transport {

struct ServerCore;

class HttpListener {
 public:
  /// Binds core.settings.listen_address (on `port` instead of its own when not 0) with this TLS
  /// config (plain HTTP when it is not enabled), sets the listener parts of `core` (the pools,
  /// the connection table, the connection cap) and starts accepting. Throws std::runtime_error
  /// with the reason (the port is in use, a certificate does not load). `core` outlives it.
  HttpListener(ServerCore& core, const TlsServerConfig& tls, int port);
  /// Stops accepting, waits for the running handlers (their responses are dropped), closes
  /// every connection and clears the listener parts of `core`.
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  /// The bound TCP port.
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loadwatch::http_transport
