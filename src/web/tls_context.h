#pragma once
// Turns a web config's tls_server_config into OpenSSL settings on a server SSL_CTX.

#include "web/tls_server_config.h"

namespace loadwatch {

/// Configures `ssl_ctx` (an SSL_CTX*, the one the HTTP server's ssl::context wraps):
/// certificate chain and key from their own files, client-certificate policy, protocol range,
/// TLS 1.2 cipher suites, curves. Throws std::runtime_error with OpenSSL's reason.
/// Not thread-safe for one ctx; call before the context serves connections.
void configure_tls_context(void* ssl_ctx, const TlsServerConfig& tls);

/// Configures a throwaway context: checks that the files load and the key matches the
/// certificate. Throws std::runtime_error.
void check_tls_config(const TlsServerConfig& tls);

}  // namespace loadwatch
