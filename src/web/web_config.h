#pragma once
// --web.config.file: the exporter-toolkit web configuration (TLS, basic auth, response headers),
// so that the same file works for node_exporter and loadwatch.
// Format: https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "web/tls_server_config.h"

namespace loadwatch {

struct WebConfig {
  TlsServerConfig tls;
  /// basic_auth_users: user name -> bcrypt hash ($2a$, $2b$, $2y$). Empty: no authentication.
  std::map<std::string, std::string> users;
  /// http_server_config.headers, added to every response.
  std::vector<std::pair<std::string, std::string>> headers;
  /// http_server_config.http2 (accepted for compatibility; the server speaks HTTP/1.1 only).
  bool http2 = true;
};

/// Parses a web config document. `path` names the file in "path:line:col: message" errors and
/// is the base for relative cert/key/CA paths. Pure: does not open the files it names.
/// Throws ConfigError.
WebConfig parse_web_config(std::string_view yaml, const std::string& path);

/// Reads and parses the file, then loads the certificate, key and client CA it names (so a
/// typo fails here, not at the first TLS handshake). Throws ConfigError.
WebConfig load_web_config(const std::string& path);

const char* client_auth_name(ClientAuth auth);

}  // namespace loadwatch
