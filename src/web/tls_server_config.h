#pragma once
// The tls_server_config part of a web config: what web_config.cpp parses and tls_context.cpp
// applies, apart so that neither of the two includes the other.

#include <string>
#include <vector>

namespace loadwatch {

/// exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType).
enum class ClientAuth {
  NoClientCert,                // never ask for a certificate
  RequestClientCert,           // ask; accept none or any certificate, unverified
  RequireAnyClientCert,        // a certificate is required, but not verified
  VerifyClientCertIfGiven,     // none is fine; one that is given must verify against client_ca_file
  RequireAndVerifyClientCert,  // mTLS: a certificate that verifies against client_ca_file
};

/// TLS protocol versions as exporter-toolkit names them (TLS10 ... TLS13). The numeric values
/// are the wire versions, as OpenSSL's TLS1_VERSION ... TLS1_3_VERSION.
enum class TlsVersion { TLS10 = 0x0301, TLS11 = 0x0302, TLS12 = 0x0303, TLS13 = 0x0304 };

struct TlsServerConfig {
  std::string cert_file;  // absolute (relative paths are resolved against the file's dir)
  std::string key_file;
  std::string client_ca_file;
  ClientAuth client_auth = ClientAuth::NoClientCert;
  TlsVersion min_version = TlsVersion::TLS12;  // exporter-toolkit's defaults
  TlsVersion max_version = TlsVersion::TLS13;
  std::vector<std::string> cipher_suites;  // IANA names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
  std::vector<std::string> curve_preferences;  // CurveP256, CurveP384, CurveP521, X25519
  bool prefer_server_cipher_suites = true;

  /// TLS is on when cert_file/key_file are given (exporter-toolkit's rule).
  bool enabled() const { return !cert_file.empty(); }
  bool operator==(const TlsServerConfig&) const = default;
};

}  // namespace loadwatch
