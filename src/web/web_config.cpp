// exporter-toolkit web config parsing, with exporter-toolkit's validation rules (it decodes with
// yaml.UnmarshalStrict, so unknown keys are errors there too) and file:line:col messages.
#include "web/web_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "config/config_error.h"
#include "config/yaml_reader.h"
#include "util/bounded_file.h"
#include "web/tls_context.h"

namespace loadwatch {

namespace {

/// Keys of newer exporter-toolkit releases that loadwatch does not implement. Refused with a
/// clear message rather than ignored: silently ignoring e.g. client_allowed_sans would leave
/// an operator believing a restriction is in force.
const std::map<std::string, std::string>& unsupported_keys() {
  static const std::map<std::string, std::string> keys = {
      {"rate_limit", "rate_limit is not supported by loadwatch (see --web.max-requests)"},
      {"cert", "inline cert is not supported by loadwatch; use cert_file"},
      {"key", "inline key is not supported by loadwatch; use key_file"},
      {"client_ca", "inline client_ca is not supported by loadwatch; use client_ca_file"},
      {"client_allowed_sans", "client_allowed_sans is not supported by loadwatch"},
  };
  return keys;
}

/// exporter-toolkit's extraHTTPHeaders: the headers that may be set, and for some the only
/// values allowed (empty: any value).
const std::map<std::string, std::vector<std::string>>& allowed_headers() {
  static const std::map<std::string, std::vector<std::string>> headers = {
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  return headers;
}

class Parser : private YamlReader {
 public:
  explicit Parser(std::string file) : YamlReader(std::move(file), "<web config>") {}

  void expect_keys(const YAML::Node& node, const std::string& what,
                   const std::set<std::string>& allowed) const {
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string key = it->first.Scalar();
      if (allowed.count(key)) continue;
      auto unsupported = unsupported_keys().find(key);
      if (unsupported != unsupported_keys().end()) fail(it->first.Mark(), unsupported->second);
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(it->first.Mark(), "unknown key \"" + key + "\" in " + what + " (allowed: " + list + ")");
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& what) const {
    if (node.IsNull()) return "";
    if (!node.IsScalar()) fail(node.Mark(), what + " must be a string");
    return node.Scalar();
  }

  std::vector<std::string> strings(const YAML::Node& node, const std::string& what) const {
    std::vector<std::string> out;
    if (node.IsNull()) return out;
    if (!node.IsSequence()) fail(node.Mark(), what + " must be a list");
    for (const auto& item : node) out.push_back(scalar(item, what + " entry"));
    return out;
  }

  /// exporter-toolkit resolves relative file names against the config file's directory.
  std::string path(const YAML::Node& node, const std::string& what) const {
    std::string p = scalar(node, what);
    if (p.empty() || p.front() == '/') return p;
    auto slash = file().rfind('/');
    return slash == std::string::npos ? p : file().substr(0, slash + 1) + p;
  }

  TlsVersion version(const YAML::Node& node, const std::string& what) const {
    static const std::map<std::string, TlsVersion> versions = {{"TLS10", TlsVersion::TLS10},
                                                               {"TLS11", TlsVersion::TLS11},
                                                               {"TLS12", TlsVersion::TLS12},
                                                               {"TLS13", TlsVersion::TLS13}};
    auto it = versions.find(scalar(node, what));
    if (it == versions.end()) {
      fail(node.Mark(),
           "unknown " + what + " \"" + node.Scalar() + "\" (TLS10, TLS11, TLS12, TLS13)");
    }
    return it->second;
  }

  TlsServerConfig tls(const YAML::Node& node) const {
    TlsServerConfig t;
    if (node.IsNull()) return t;
    expect_map(node, "tls_server_config");
    expect_keys(node, "tls_server_config",
                {"cert_file", "key_file", "client_auth_type", "client_ca_file", "cipher_suites",
                 "curve_preferences", "min_version", "max_version", "prefer_server_cipher_suites"});
    if (node["cert_file"]) t.cert_file = path(node["cert_file"], "cert_file");
    if (node["key_file"]) t.key_file = path(node["key_file"], "key_file");
    if (node["client_ca_file"]) t.client_ca_file = path(node["client_ca_file"], "client_ca_file");
    std::string auth;
    if (node["client_auth_type"]) auth = scalar(node["client_auth_type"], "client_auth_type");
    static const std::map<std::string, ClientAuth> auths = {
        {"", ClientAuth::NoClientCert},
        {"NoClientCert", ClientAuth::NoClientCert},
        {"RequestClientCert", ClientAuth::RequestClientCert},
        {"RequireAnyClientCert", ClientAuth::RequireAnyClientCert},
        {"RequireClientCert", ClientAuth::RequireAnyClientCert},  // exporter-toolkit's old name
        {"VerifyClientCertIfGiven", ClientAuth::VerifyClientCertIfGiven},
        {"RequireAndVerifyClientCert", ClientAuth::RequireAndVerifyClientCert}};
    auto a = auths.find(auth);
    if (a == auths.end())
      fail(node["client_auth_type"].Mark(), "invalid client_auth_type \"" + auth + "\"");
    t.client_auth = a->second;
    if (node["min_version"]) t.min_version = version(node["min_version"], "min_version");
    if (node["max_version"]) t.max_version = version(node["max_version"], "max_version");
    if (node["cipher_suites"]) t.cipher_suites = strings(node["cipher_suites"], "cipher_suites");
    if (node["curve_preferences"]) {
      static const std::set<std::string> curves = {"CurveP256", "CurveP384", "CurveP521", "X25519"};
      t.curve_preferences = strings(node["curve_preferences"], "curve_preferences");
      for (const auto& c : t.curve_preferences) {
        if (!curves.count(c)) fail(node["curve_preferences"].Mark(), "unknown curve \"" + c + "\"");
      }
    }
    if (node["prefer_server_cipher_suites"]) {
      t.prefer_server_cipher_suites =
          boolean(node["prefer_server_cipher_suites"], "prefer_server_cipher_suites");
    }
    // exporter-toolkit's validateTLSPaths: any TLS setting turns TLS on, and then both the
    // certificate and its key are required.
    bool any =
        !t.cert_file.empty() || !t.key_file.empty() || !t.client_ca_file.empty() || !auth.empty();
    if (any && t.cert_file.empty()) fail(node.Mark(), "tls_server_config: missing cert_file");
    if (any && t.key_file.empty()) fail(node.Mark(), "tls_server_config: missing key_file");
    if (!t.client_ca_file.empty() && t.client_auth == ClientAuth::NoClientCert) {
      fail(node["client_ca_file"].Mark(),
           "client_ca_file is set but client_auth_type is NoClientCert (no client auth policy)");
    }
    if (static_cast<int>(t.min_version) > static_cast<int>(t.max_version)) {
      fail(node["min_version"] ? node["min_version"].Mark() : node.Mark(),
           "min_version is above max_version");
    }
    return t;
  }

  /// bcrypt's modular format: $2a$/$2b$/$2y$, two-digit cost 04..31, '$', 22 salt + 31 hash
  /// characters (60 in all) — what Go's bcrypt.Cost() accepts.
  void check_bcrypt(const YAML::Node& node, const std::string& user,
                    const std::string& hash) const {
    bool ok = hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
              (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$' &&
              std::isdigit(static_cast<unsigned char>(hash[4])) &&
              std::isdigit(static_cast<unsigned char>(hash[5])) && hash[6] == '$';
    int cost = ok ? (hash[4] - '0') * 10 + (hash[5] - '0') : 0;
    if (!ok || cost < 4 || cost > 31) {
      fail(node.Mark(), "basic_auth_users: the password of \"" + user +
                            "\" is not a bcrypt hash ($2y$10$... as made by htpasswd -nBC 10)");
    }
  }

  WebConfig parse(std::string_view text) const {
    const YAML::Node root = load(std::string(text));
    WebConfig c;
    // Fail closed: an empty or truncated file read while it is being rewritten must not
    // turn TLS and authentication off. Who wants neither passes no --web.config.file.
    if (root.IsNull()) {
      fail(YAML::Mark::null_mark(),
           "the web config is empty (a file being written?); without TLS and basic auth, "
           "leave --web.config.file out");
    }
    expect_map(root, "the web config");
    expect_keys(root, "the web config",
                {"tls_server_config", "http_server_config", "basic_auth_users"});
    for (auto it = root.begin(); it != root.end(); ++it) {
      // `tls_server_config:` with nothing under it is what a file cut after that line reads.
      const std::string& key = it->first.Scalar();
      if ((key == "tls_server_config" || key == "basic_auth_users") && it->second.IsNull()) {
        fail(it->first.Mark(),
             key + " is empty (a truncated file?); remove the key if it is meant to be off");
      }
    }
    if (root["tls_server_config"]) c.tls = tls(root["tls_server_config"]);
    if (const YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
      expect_map(http, "http_server_config");
      expect_keys(http, "http_server_config", {"http2", "headers"});
      if (http["http2"]) c.http2 = boolean(http["http2"], "http2");
      if (const YAML::Node headers = http["headers"]; headers && !headers.IsNull()) {
        expect_map(headers, "headers");
        for (auto it = headers.begin(); it != headers.end(); ++it) {
          std::string name = it->first.Scalar();
          std::string value = scalar(it->second, "header " + name);
          auto allowed = allowed_headers().find(name);
          if (allowed == allowed_headers().end()) {
            fail(it->first.Mark(), "HTTP header \"" + name + "\" can not be configured");
          }
          const auto& values = allowed->second;
          if (!values.empty() && std::find(values.begin(), values.end(), value) == values.end()) {
            fail(it->second.Mark(), "invalid value \"" + value + "\" for " + name);
          }
          c.headers.emplace_back(name, value);
        }
      }
    }
    if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
      expect_map(users, "basic_auth_users");
      for (auto it = users.begin(); it != users.end(); ++it) {
        std::string user = it->first.Scalar();
        std::string hash = scalar(it->second, "password of " + user);
        check_bcrypt(it->second, user, hash);
        c.users[user] = hash;
      }
    }
    return c;
  }
};

}  // namespace

const char* client_auth_name(ClientAuth auth) {
  switch (auth) {
    case ClientAuth::NoClientCert:
      return "NoClientCert";
    case ClientAuth::RequestClientCert:
      return "RequestClientCert";
    case ClientAuth::RequireAnyClientCert:
      return "RequireAnyClientCert";
    case ClientAuth::VerifyClientCertIfGiven:
      return "VerifyClientCertIfGiven";
    case ClientAuth::RequireAndVerifyClientCert:
      return "RequireAndVerifyClientCert";
  }
  return "?";
}

WebConfig parse_web_config(std::string_view yaml, const std::string& path) {
  return Parser(path).parse(yaml);
}

WebConfig load_web_config(const std::string& path) {
  std::string text;
  BoundedFile in(path);
  if (int err = in.read(kMaxWebConfigFileBytes, text); err != 0) {
    throw ConfigError(path +
                      ": cannot read web config file: " + in.describe(err, kMaxWebConfigFileBytes));
  }
  WebConfig config = parse_web_config(text, path);
  if (config.tls.enabled()) {
    try {
      check_tls_config(config.tls);
    } catch (const std::exception& e) {
      throw ConfigError(path + ": tls_server_config: " + e.what());
    }
  }
  return config;
}

}  // namespace loadwatch
