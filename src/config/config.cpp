// YAML config parsing with file:line:col errors (yaml-cpp marks are 0-based; we print 1-based).
#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <set>
#include <string_view>

#include "config/collector_names.h"
#include "config/yaml_reader.h"
#include "procfs/fs_root.h"
#include "util/bounded_file.h"

namespace loadwatch {

namespace {

/// Sets a source's name, kind or url, checked; throws std::invalid_argument.
void set_source_field(SourceConfig& s, std::string_view key, const std::string& value) {
  if (key == "name") {
    if (value.empty()) throw std::invalid_argument("source name must not be empty");
    s.name = value;
  } else if (key == "kind") {
    if (value != "mountebank" && value != "locust" && value != "prometheus") {
      throw std::invalid_argument("unknown source kind \"" + value +
                                  "\" (want mountebank, locust or prometheus)");
    }
    s.kind = value;
  } else {
    if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
      throw std::invalid_argument("source url must start with http:// or https://");
    }
    s.url = value;
    while (!s.url.empty() && s.url.back() == '/') s.url.pop_back();
  }
}

constexpr const char* kEmpty =
    "no targets and no sources (an empty or half-written file?); "
    "add `allow_empty: true` to run with host metrics only";

class Parser : private YamlReader {
 public:
  explicit Parser(std::string file) : YamlReader(std::move(file), "<config>") {}

  void expect_keys(const YAML::Node& node, const std::string& what,
                   std::initializer_list<const char*> allowed) const {
    expect_map(node, what);
    for (auto it = node.begin(); it != node.end(); ++it) {
      auto key = it->first.as<std::string>();
      bool ok = false;
      for (const char* a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += list.empty() ? a : std::string(", ") + a;
        fail(it->first.Mark(),
             "unknown key \"" + key + "\" in " + what + " (allowed: " + list + ")");
      }
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail(node.Mark(), what + " must be a string");
    return node.Scalar();
  }

  long long integer(const YAML::Node& node, const std::string& what, long long min,
                    long long max) const {
    long long value = 0;
    if (!node.IsScalar() || !YAML::convert<long long>::decode(node, value)) {
      fail(node.Mark(), what + " must be an integer");
    }
    if (value < min || value > max) {
      fail(node.Mark(),
           what + " must be between " + std::to_string(min) + " and " + std::to_string(max));
    }
    return value;
  }

  std::chrono::milliseconds duration(const YAML::Node& node, const std::string& what) const {
    try {
      auto d = parse_duration(scalar(node, what));
      if (d.count() <= 0) fail(node.Mark(), what + " must be greater than 0");
      return d;
    } catch (const std::invalid_argument& e) {
      fail(node.Mark(), what + ": " + e.what());
    }
  }

  /// A file name; relative ones are resolved against the config file's directory, as
  /// Prometheus does for its own *_file keys.
  std::string path(const YAML::Node& node, const std::string& what) const {
    std::string p = scalar(node, what);
    if (p.empty()) fail(node.Mark(), what + " must not be empty");
    if (p.front() == '/') return p;
    auto slash = file().rfind('/');
    return slash == std::string::npos ? p : file().substr(0, slash + 1) + p;
  }

  TlsClientConfig tls(const YAML::Node& node) const {
    expect_keys(node, "tls",
                {"ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify"});
    TlsClientConfig t;
    if (node["ca_file"]) t.ca_file = path(node["ca_file"], "tls ca_file");
    if (node["cert_file"]) t.cert_file = path(node["cert_file"], "tls cert_file");
    if (node["key_file"]) t.key_file = path(node["key_file"], "tls key_file");
    if (node["server_name"]) {
      t.server_name = scalar(node["server_name"], "tls server_name");
      // It becomes the URL's host (see http_fetch.cpp): a bare DNS name or IPv4 address only.
      bool ok = !t.server_name.empty();
      for (char c : t.server_name)
        ok =
            ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_');
      if (!ok) fail(node["server_name"].Mark(), "tls server_name must be a host name");
    }
    if (node["insecure_skip_verify"]) {
      t.insecure_skip_verify = boolean(node["insecure_skip_verify"], "tls insecure_skip_verify");
    }
    if (!t.cert_file.empty() && t.key_file.empty()) {
      fail(node["cert_file"].Mark(), "tls cert_file needs key_file");
    }
    if (t.cert_file.empty() && !t.key_file.empty()) {
      fail(node["key_file"].Mark(), "tls key_file needs cert_file");
    }
    return t;
  }

  void basic_auth(const YAML::Node& node, SourceAuth& auth) const {
    if (node.IsMap() && node["password"]) {
      // Prometheus allows it; here passwords stay out of the config file, which ends up in
      // diffs, backups and bug reports.
      fail(node["password"].Mark(), "basic_auth takes password_file, not an inline password");
    }
    expect_keys(node, "basic_auth", {"username", "password_file"});
    for (const char* key : {"username", "password_file"}) {
      if (!node[key]) fail(node.Mark(), std::string("basic_auth needs ") + key);
    }
    auth.username = scalar(node["username"], "basic_auth username");
    if (auth.username.empty() || auth.username.find(':') != std::string::npos) {
      // RFC 7617: the user-id ends at the first colon.
      fail(node["username"].Mark(), "basic_auth username must be non-empty and without ':'");
    }
    auth.password_file = path(node["password_file"], "basic_auth password_file");
  }

  TargetConfig target(const YAML::Node& node) const {
    expect_keys(node, "target", {"name", "match", "children"});
    TargetConfig t;
    if (!node["name"]) fail(node.Mark(), "target needs a name");
    t.name = scalar(node["name"], "target name");
    if (t.name.empty()) fail(node["name"].Mark(), "target name must not be empty");
    const YAML::Node match = node["match"];
    if (!match) fail(node.Mark(), "target \"" + t.name + "\" needs match: {KIND: VALUE}");
    try {
      if (match.IsScalar()) {
        t.match = parse_selector(match.Scalar());
      } else {
        expect_keys(match, "match", {"pid", "pidfile", "comm", "exe", "cmdline", "unit", "port"});
        if (match.size() != 1) fail(match.Mark(), "match takes exactly one selector");
        auto it = match.begin();
        t.match = make_selector(it->first.as<std::string>(), scalar(it->second, "selector value"));
      }
    } catch (const std::invalid_argument& e) {
      fail(match.IsMap() && match.size() == 1 ? match.begin()->second.Mark() : match.Mark(),
           e.what());
    }
    if (node["children"]) t.children = boolean(node["children"], "children");
    return t;
  }

  SourceConfig source(const YAML::Node& node) const {
    expect_keys(node, "source",
                {"name", "kind", "url", "interval", "timeout", "max_response_bytes", "max_series",
                 "tls", "basic_auth", "bearer_token_file"});
    SourceConfig s;
    for (const char* key : {"name", "kind", "url"}) {
      if (!node[key]) fail(node.Mark(), std::string("source needs ") + key);
    }
    // The same checks as --source's, each error at its key.
    for (const char* key : {"name", "kind", "url"}) {
      const std::string value = scalar(node[key], std::string("source ") + key);
      try {
        set_source_field(s, key, value);
      } catch (const std::invalid_argument& e) {
        fail(node[key].Mark(), e.what());
      }
    }
    if (node["interval"]) s.interval = duration(node["interval"], "interval");
    if (node["timeout"]) s.timeout = duration(node["timeout"], "timeout");
    if (node["max_response_bytes"]) {
      s.max_bytes = integer(node["max_response_bytes"], "max_response_bytes", 1024, 1LL << 32);
    }
    if (node["max_series"]) s.max_series = integer(node["max_series"], "max_series", 1, 1000000);
    if (node["tls"]) {
      // An error rather than ignored (Prometheus ignores it): whoever wrote a CA or a client
      // certificate expects TLS, and would otherwise send credentials in clear.
      if (s.url.rfind("https://", 0) != 0) {
        fail(node["tls"].Mark(), "tls needs an https:// source url");
      }
      s.tls = tls(node["tls"]);
    }
    if (node["basic_auth"]) basic_auth(node["basic_auth"], s.auth);
    if (node["bearer_token_file"]) {
      if (node["basic_auth"]) {
        fail(node["bearer_token_file"].Mark(),
             "bearer_token_file and basic_auth are mutually exclusive");
      }
      s.auth.bearer_token_file = path(node["bearer_token_file"], "bearer_token_file");
    }
    return s;
  }

  Config parse(const std::string& text) const {
    const YAML::Node root = load(text);
    Config config;
    config.file = file();
    if (root.IsNull()) fail(YAML::Mark::null_mark(), kEmpty);
    expect_keys(root, "config", {"targets", "sources", "tcp", "collectors", "allow_empty"});
    if (root["allow_empty"]) config.allow_empty = boolean(root["allow_empty"], "allow_empty");

    std::set<std::string> names;
    if (auto targets = root["targets"]; targets && !targets.IsNull()) {
      if (!targets.IsSequence()) fail(targets.Mark(), "targets must be a list");
      for (const auto& node : targets) {
        auto t = target(node);
        if (!names.insert(t.name).second) {
          fail(node["name"].Mark(), "duplicate target name \"" + t.name + "\"");
        }
        config.targets.push_back(std::move(t));
      }
    }
    std::set<std::string> source_names;
    if (auto sources = root["sources"]; sources && !sources.IsNull()) {
      if (!sources.IsSequence()) fail(sources.Mark(), "sources must be a list");
      for (const auto& node : sources) {
        auto s = source(node);
        if (!source_names.insert(s.name).second) {
          fail(node["name"].Mark(), "duplicate source name \"" + s.name + "\"");
        }
        config.sources.push_back(std::move(s));
      }
    }
    if (auto tcp = root["tcp"]; tcp && !tcp.IsNull()) {
      expect_keys(tcp, "tcp", {"ports"});
      if (auto ports = tcp["ports"]; ports && !ports.IsNull()) {
        if (!ports.IsSequence()) fail(ports.Mark(), "tcp.ports must be a list of ports");
        for (const auto& p : ports) {
          config.tcp.ports.push_back(static_cast<std::uint16_t>(integer(p, "port", 1, 65535)));
        }
      }
    }
    if (auto collectors = root["collectors"]; collectors && !collectors.IsNull()) {
      expect_map(collectors, "collectors");
      for (auto it = collectors.begin(); it != collectors.end(); ++it) {
        auto name = it->first.as<std::string>();
        if (!is_collector_name(name)) fail(it->first.Mark(), "unknown collector \"" + name + "\"");
        config.collectors[name] = boolean(it->second, "collector " + name);
      }
    }
    // A file truncated or half-written during a run must not switch monitoring off; one that
    // asks for anything (ports to watch, collector switches) is not empty.
    bool asks_nothing = config.targets.empty() && config.sources.empty() &&
                        config.tcp.ports.empty() && config.collectors.empty();
    if (asks_nothing && !config.allow_empty) {
      fail(YAML::Mark::null_mark(), kEmpty);
    }
    return config;
  }
};

}  // namespace

SourceConfig make_source(const std::string& name, const std::string& kind, const std::string& url) {
  SourceConfig s;
  set_source_field(s, "name", name);
  set_source_field(s, "kind", kind);
  set_source_field(s, "url", url);
  return s;
}

Config parse_config(const std::string& yaml_text, const std::string& file) {
  return Parser(file).parse(yaml_text);
}

Config load_config(const std::string& file) {
  std::string text;
  BoundedFile in(file);
  if (int err = in.read(kMaxConfigFileBytes, text); err != 0) {
    throw ConfigError(file + ": cannot read config: " + in.describe(err, kMaxConfigFileBytes));
  }
  return parse_config(text, file);
}

}  // namespace loadwatch
