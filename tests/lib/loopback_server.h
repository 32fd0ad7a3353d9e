#pragma once
// Test helper: an HttpServer on a free loopback port, and URLs to it.

#include <string>

#include "web/http_server.h"

namespace loadwatch::test {

/// Settings that bind 127.0.0.1 on a port the kernel picks (read it back with port()).
inline HttpServerSettings loopback_settings() {
  HttpServerSettings settings;
  settings.listen_address = "127.0.0.1:0";
  return settings;
}

/// "http://127.0.0.1:PORT" followed by `path`.
inline std::string loopback_url(const HttpServer& http, const std::string& path = "") {
  return "http://127.0.0.1:" + std::to_string(http.port()) + path;
}

}  // namespace loadwatch::test
