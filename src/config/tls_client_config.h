#pragma once
// TLS settings of an HTTPS client: a source's `tls:` key, as Prometheus's tls_config.

#include <string>

namespace loadwatch {

/// Empty strings are unset. Paths are as the config resolved them (relative ones against the
/// config file's directory). Files are opened by libcurl at each new connection, so a rotated
/// certificate is used from the next handshake on.
struct TlsClientConfig {
  std::string ca_file;    // trust these CAs instead of the system store
  std::string cert_file;  // client certificate for mTLS; always with key_file
  std::string key_file;
  std::string server_name;  // name for SNI and certificate checks instead of the URL's host
  bool insecure_skip_verify = false;

  bool operator==(const TlsClientConfig&) const = default;
};

}  // namespace loadwatch
