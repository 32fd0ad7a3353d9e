// --web.config.file parsing (exporter-toolkit rules) and loading the TLS files it names.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "util/bounded_file.h"
#include "web/tls_context.h"
#include "web/web_config.h"

using namespace loadwatch;

namespace {

// A bcrypt hash of "s3cret" (cost 4) in htpasswd's $2y$ flavour.
const char* kHash = "$2y$04$abcdefghijklmnopqrstuuLZYjhNQAOdpbzt4WxWlUHjv1wsyH5DG";

std::string error_of(const std::string& yaml, const std::string& path = "/etc/lw/web.yml") {
  try {
    parse_web_config(yaml, path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

/// A scratch directory with a CA, a server certificate signed by it and a second, unrelated
/// key, made with the openssl command (as the script tests do).
struct Certs {
  std::filesystem::path dir;
  Certs() {
    char tmpl[] = "/tmp/lw-webcfg-XXXXXX";
    dir = mkdtemp(tmpl);
    std::string d = dir.string();
    std::string cmd =
        "cd " + d +
        " && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
        "-subj /CN=test-ca -keyout ca.key -out ca.crt && "
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost "
        "-keyout server.key -out server.csr && "
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 "
        "-out server.crt && "
        "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out other.key";
    REQUIRE(std::system(("(" + cmd + ") >/dev/null 2>&1").c_str()) == 0);
  }
  ~Certs() { std::filesystem::remove_all(dir); }
  std::string operator/(const char* name) const { return (dir / name).string(); }
};

}  // namespace

TEST_CASE("an empty or truncated web config is refused, never read as plain HTTP without auth") {
  // Read while it is being rewritten, such a file would turn TLS and auth off.
  for (const char* text : {"", "# all commented out\n", "---\n"}) {
    CAPTURE(text);
    CHECK(error_of(text).rfind("/etc/lw/web.yml: the web config is empty", 0) == 0);
  }
  CHECK(error_of("tls_server_config:\n") ==
        "/etc/lw/web.yml:1:1: tls_server_config is empty (a truncated file?); remove the key "
        "if it is meant to be off");
  CHECK(error_of("http_server_config: {http2: false}\nbasic_auth_users:\n")
            .rfind("/etc/lw/web.yml:2:1: basic_auth_users is empty", 0) == 0);
  // Written out as empty on purpose, they are off.
  auto c = parse_web_config("tls_server_config: {}\nbasic_auth_users: {}\n", "w.yml");
  CHECK_FALSE(c.tls.enabled());
  CHECK(c.users.empty());
  c = parse_web_config("http_server_config: {http2: false}\n", "w.yml");
  CHECK_FALSE(c.tls.enabled());
}

TEST_CASE("duplicate keys in the web config are errors, at the second one") {
  CHECK(error_of(std::string("basic_auth_users:\n  alice: '") + kHash + "'\n  alice: '" + kHash +
                 "'\n") == "/etc/lw/web.yml:3:3: duplicate key \"alice\"");
  CHECK(error_of("tls_server_config: {cert_file: a, key_file: b}\ntls_server_config: {}\n") ==
        "/etc/lw/web.yml:2:1: duplicate key \"tls_server_config\"");
}

TEST_CASE("the exporter-toolkit fields are read, relative paths against the file's directory") {
  auto c = parse_web_config(std::string(R"(tls_server_config:
  cert_file: server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca/clients.pem
  min_version: TLS13
  max_version: TLS13
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [X25519, CurveP256]
  prefer_server_cipher_suites: false
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Content-Security-Policy: "default-src 'self'"
basic_auth_users:
  alice: ')") + kHash + "'\n",
                            "/etc/lw/web.yml");
  CHECK(c.tls.enabled());
  CHECK(c.tls.cert_file == "/etc/lw/server.crt");
  CHECK(c.tls.key_file == "/abs/server.key");
  CHECK(c.tls.client_ca_file == "/etc/lw/ca/clients.pem");
  CHECK(c.tls.client_auth == ClientAuth::RequireAndVerifyClientCert);
  CHECK(c.tls.min_version == TlsVersion::TLS13);
  CHECK(c.tls.max_version == TlsVersion::TLS13);
  CHECK(c.tls.cipher_suites.size() == 1);
  CHECK(c.tls.curve_preferences.size() == 2);
  CHECK_FALSE(c.tls.prefer_server_cipher_suites);
  CHECK_FALSE(c.http2);
  REQUIRE(c.headers.size() == 2);
  CHECK(c.users.at("alice") == kHash);
}

TEST_CASE("TLS defaults are exporter-toolkit's: TLS 1.2 to 1.3, no client certificate") {
  auto c = parse_web_config("tls_server_config: {cert_file: a.crt, key_file: a.key}\n", "w.yml");
  CHECK(c.tls.min_version == TlsVersion::TLS12);
  CHECK(c.tls.max_version == TlsVersion::TLS13);
  CHECK(c.tls.client_auth == ClientAuth::NoClientCert);
  CHECK(c.tls.prefer_server_cipher_suites);
  // exporter-toolkit's old spelling of RequireAnyClientCert.
  c = parse_web_config(
      "tls_server_config: {cert_file: a, key_file: b, client_auth_type: RequireClientCert}\n", "w");
  CHECK(c.tls.client_auth == ClientAuth::RequireAnyClientCert);
}

TEST_CASE("web config errors name file:line:col, as exporter-toolkit's checks do") {
  CHECK(error_of("tls_server_config: {cert_file: a.crt}\n") ==
        "/etc/lw/web.yml:1:20: tls_server_config: missing key_file");
  CHECK(error_of("tls_server_config: {key_file: a.key}\n") ==
        "/etc/lw/web.yml:1:20: tls_server_config: missing cert_file");
  CHECK(error_of("tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n")
            .find("missing cert_file") != std::string::npos);
  CHECK(error_of("tls_server_config: {cert_file: a, key_file: b, client_ca_file: c}\n")
            .find("no client auth policy") != std::string::npos);
  CHECK(error_of("tls_server_config: {cert_file: a, key_file: b, client_auth_type: Sometimes}\n")
            .find("invalid client_auth_type \"Sometimes\"") != std::string::npos);
  CHECK(error_of("tls_server_config: {cert_file: a, key_file: b, min_version: TLS14}\n") ==
        "/etc/lw/web.yml:1:61: unknown min_version \"TLS14\" (TLS10, TLS11, TLS12, TLS13)");
  CHECK(error_of("tls_server_config: {cert_file: a, key_file: b, min_version: TLS13, "
                 "max_version: TLS12}\n")
            .find("min_version is above max_version") != std::string::npos);
  CHECK(error_of("tls_server_config: {cert_file: a, key_file: b, curve_preferences: [P256]}\n")
            .find("unknown curve \"P256\"") != std::string::npos);
  CHECK(error_of("tls_config: {}\n") ==
        "/etc/lw/web.yml:1:1: unknown key \"tls_config\" in the web config (allowed: "
        "basic_auth_users, http_server_config, tls_server_config)");
  CHECK(error_of("tls_server_config: [a]\n") ==
        "/etc/lw/web.yml:1:20: tls_server_config must be a mapping");
  CHECK(error_of("basic_auth_users:\n  alice: plaintext\n") ==
        "/etc/lw/web.yml:2:10: basic_auth_users: the password of \"alice\" is not a bcrypt hash "
        "($2y$10$... as made by htpasswd -nBC 10)");
  CHECK(error_of("basic_auth_users:\n  alice: "
                 "'$2y$03$abcdefghijklmnopqrstuuLZYjhNQAOdpbzt4WxWlUHjv1wsyH5DG'\n")
            .find("not a bcrypt hash") != std::string::npos);  // cost below bcrypt's minimum 4
  CHECK(error_of("http_server_config: {headers: {Server: loadwatch}}\n") ==
        "/etc/lw/web.yml:1:32: HTTP header \"Server\" can not be configured");
  CHECK(error_of("http_server_config: {headers: {X-Frame-Options: allow}}\n")
            .find("invalid value \"allow\" for X-Frame-Options") != std::string::npos);
  CHECK(error_of("tls_server_config: [\n").rfind("/etc/lw/web.yml:", 0) == 0);
}

TEST_CASE("newer exporter-toolkit keys are refused with a reason, never silently ignored") {
  CHECK(error_of("tls_server_config: {cert_file: a, key_file: b, client_allowed_sans: [x]}\n")
            .find("client_allowed_sans is not supported by loadwatch") != std::string::npos);
  CHECK(error_of("rate_limit: {burst: 1, interval: 1s}\n").find("rate_limit is not supported") !=
        std::string::npos);
  CHECK(error_of("tls_server_config: {cert: x, key: y}\n").find("use cert_file") !=
        std::string::npos);
}

TEST_CASE("load_web_config loads the certificate and key, and refuses a mismatched pair") {
  Certs certs;
  auto write = [&](const std::string& text) {
    std::ofstream(certs / "web.yml") << text;
    return certs / "web.yml";
  };
  auto c =
      load_web_config(write("tls_server_config: {cert_file: server.crt, key_file: server.key}\n"));
  CHECK(c.tls.cert_file == certs / "server.crt");

  auto error = [&](const std::string& yaml) {
    try {
      load_web_config(write(yaml));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error("tls_server_config: {cert_file: server.crt, key_file: other.key}\n");
  CHECK(e.rfind(certs / "web.yml" + ": tls_server_config: ", 0) == 0);
  CHECK(e.find("does not match") != std::string::npos);
  e = error("tls_server_config: {cert_file: missing.crt, key_file: server.key}\n");
  CHECK(e.find("cannot load cert_file " + certs / "missing.crt") != std::string::npos);
  e = error(
      "tls_server_config: {cert_file: server.crt, key_file: server.key,\n"
      "  client_auth_type: RequireAndVerifyClientCert, client_ca_file: server.key}\n");
  CHECK(e.find("client_ca_file") != std::string::npos);
  e = error(
      "tls_server_config: {cert_file: server.crt, key_file: server.key,\n"
      "  cipher_suites: [TLS_MADE_UP_WITH_ROT13]}\n");
  CHECK(e.find("unknown cipher suite TLS_MADE_UP_WITH_ROT13") != std::string::npos);
  CHECK(error("").find("the web config is empty") != std::string::npos);
  CHECK_THROWS_AS(load_web_config(certs / "nope.yml"), ConfigError);

  // Every client_auth_type, the TLS 1.2 suites by their Go (IANA) names, and the curves load.
  for (const char* auth : {"RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
                           "RequireAndVerifyClientCert"}) {
    CAPTURE(auth);
    CHECK(error(std::string("tls_server_config: {cert_file: server.crt, key_file: server.key, "
                            "client_ca_file: ca.crt, client_auth_type: ") +
                auth +
                ",\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "
                "TLS_AES_128_GCM_SHA256],\n  curve_preferences: [X25519, CurveP384]}\n") == "");
  }
}

TEST_CASE(
    "load_web_config refuses what is not a regular file, without blocking or reading forever") {
  Certs certs;
  auto error = [&](const std::string& path) {
    try {
      load_web_config(path);
    } catch (const ConfigError& err) {
      return std::string(err.what());
    }
    return std::string();
  };
  CHECK(error(certs.dir.string()) ==
        certs.dir.string() + ": cannot read web config file: is a directory, not a regular file");
  REQUIRE(::mkfifo((certs / "fifo.yml").c_str(), 0600) == 0);
  CHECK(error(certs / "fifo.yml") ==
        certs / "fifo.yml" + ": cannot read web config file: is a FIFO, not a regular file");
  std::filesystem::create_symlink("/dev/zero", certs / "zero.yml");
  CHECK(error(certs / "zero.yml") == certs / "zero.yml" +
                                         ": cannot read web config file: is a character device, "
                                         "not a regular file");
  std::ofstream(certs / "big.yml") << "# " << std::string(kMaxWebConfigFileBytes, 'x') << "\n";
  CHECK(error(certs / "big.yml") == certs / "big.yml" +
                                        ": cannot read web config file: is larger than " +
                                        std::to_string(kMaxWebConfigFileBytes) + " bytes");
}

TEST_CASE("the certificate, key and CA files are read as regular files only, bounded") {
  Certs certs;
  std::ofstream(certs / "web.yml")
      << "tls_server_config: {cert_file: cert.pem, key_file: server.key,\n"
         "  client_auth_type: RequireAndVerifyClientCert, client_ca_file: ca.pem}\n";
  auto error = [&] {
    try {
      load_web_config(certs / "web.yml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A chain (leaf, then its CA) and a CA file with two certificates load from memory.
  std::filesystem::copy_file(certs / "server.crt", certs / "cert.pem");
  {
    std::ofstream chain(certs / "cert.pem", std::ios::app);
    chain << std::ifstream(certs / "ca.crt").rdbuf();
  }
  std::filesystem::copy_file(certs / "ca.crt", certs / "ca.pem");
  {
    std::ofstream cas(certs / "ca.pem", std::ios::app);
    cas << std::ifstream(certs / "server.crt").rdbuf();
  }
  CHECK(error() == "");

  std::filesystem::remove(certs / "cert.pem");
  REQUIRE(::mkfifo((certs / "cert.pem").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK(error().find("cannot load cert_file " + certs / "cert.pem" +
                     ": is a FIFO, not a regular file") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  std::filesystem::remove(certs / "cert.pem");
  std::filesystem::copy_file(certs / "server.crt", certs / "cert.pem");
  std::filesystem::remove(certs / "ca.pem");
  std::filesystem::create_symlink("/dev/zero", certs / "ca.pem");
  CHECK(error().find("cannot load client_ca_file " + certs / "ca.pem" +
                     ": is a character device, not a regular file") != std::string::npos);
  std::filesystem::remove(certs / "ca.pem");
  std::ofstream(certs / "ca.pem") << std::string(kMaxPemFileBytes + 1, 'x');
  CHECK(error().find("is larger than") != std::string::npos);
  std::filesystem::remove(certs / "ca.pem");
  std::ofstream(certs / "ca.pem") << "not a certificate\n";
  CHECK(error().find("cannot load client_ca_file") != std::string::npos);
}
