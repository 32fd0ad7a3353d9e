#pragma once
// The daemon's configuration: YAML file plus flags, validated with file:line:col errors.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config_error.h"
#include "config/tls_client_config.h"

namespace re2 {
class RE2;
}

namespace loadwatch {

/// How a target finds its processes (README "Target selectors").
struct Selector {
  enum class Kind { Pid, Pidfile, Comm, Exe, Cmdline, Unit, Port };
  Kind kind = Kind::Pid;
  std::string value;  // as written, e.g. "/run/mb.pid", "node", "egg-cluster"
  /// Cmdline only: the compiled RE2 pattern (Latin-1, so it matches bytes: a command line
  /// need not be UTF-8). Shared, immutable: RE2 matching is thread-safe.
  std::shared_ptr<const re2::RE2> regex;

  /// "kind:value", as shown on the landing page.
  std::string text() const;
  bool operator==(const Selector& o) const { return kind == o.kind && value == o.value; }
};

/// Longest cmdline: pattern accepted, and the memory RE2 may use for one (program and DFA
/// cache): bounds compile time and memory whatever the config holds (docs/limits.md).
inline constexpr std::size_t kMaxSelectorPatternBytes = 4096;
inline constexpr std::int64_t kSelectorRegexMaxMem = 1 << 20;

const char* selector_kind_name(Selector::Kind kind);
/// Parses "KIND:VALUE"; throws std::invalid_argument with a message on a bad selector.
Selector parse_selector(const std::string& text);
/// Builds a selector from kind name and value; throws std::invalid_argument.
Selector make_selector(const std::string& kind, const std::string& value);

struct TargetConfig {
  std::string name;
  Selector match;
  bool children = true;
  bool operator==(const TargetConfig& o) const {
    return name == o.name && match == o.match && children == o.children;
  }
};

/// How a source authenticates: file paths only. The secrets are read at each scrape (a
/// rotated one is used without a reload) and live only for that scrape.
struct SourceAuth {
  std::string username;  // basic auth when non-empty, password from password_file
  std::string password_file;
  std::string bearer_token_file;  // Authorization: Bearer when non-empty

  bool operator==(const SourceAuth&) const = default;
};

struct SourceConfig {
  std::string name;
  std::string kind;  // mountebank, locust, prometheus
  std::string url;
  std::chrono::milliseconds interval{5000};
  std::chrono::milliseconds timeout{2000};
  std::uint64_t max_bytes = 16u << 20;
  std::size_t max_series = 1000;
  TlsClientConfig tls;  // https:// URLs only (an error on http://)
  SourceAuth auth;
};

struct TcpConfig {
  std::vector<std::uint16_t> ports;
};

struct Config {
  std::string file;  // empty when built from flags alone
  std::vector<TargetConfig> targets;
  std::vector<SourceConfig> sources;
  TcpConfig tcp;
  /// Collector switches from the file's `collectors:` map (name -> enabled).
  std::map<std::string, bool> collectors;
  /// `allow_empty: true`: a file that asks for nothing (no targets, sources, tcp ports or
  /// collector switches) is meant (host metrics only), not half-written. Without it such a
  /// file is refused.
  bool allow_empty = false;
};

/// Parses a YAML config document. `file` is used in error messages. Throws ConfigError, also
/// for duplicate keys and for a document that asks for nothing (unless allow_empty).
Config parse_config(const std::string& yaml_text, const std::string& file);
/// A source from its three required values, checked as the config file's are (the
/// --source=NAME=KIND,URL quick form); the other settings keep their defaults. Throws
/// std::invalid_argument.
SourceConfig make_source(const std::string& name, const std::string& kind, const std::string& url);
/// Reads (at most kMaxConfigFileBytes of a regular file) and parses a config file. Throws
/// ConfigError (also for an unreadable, non-regular or too large file).
Config load_config(const std::string& file);

/// Parses a Prometheus duration ("500ms", "1s", "2m", "1h30m"); throws std::invalid_argument.
std::chrono::milliseconds parse_duration(const std::string& text);

}  // namespace loadwatch
