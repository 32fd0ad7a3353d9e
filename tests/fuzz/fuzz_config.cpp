// libFuzzer harness: the config loader (YAML, duplicate keys, every section's checks) and the
// target selectors (RE2 cmdline patterns included).
// clang-format off
// FUZZ_SOURCES: src/config/config.cpp src/config/selector.cpp src/config/duration.cpp src/config/yaml_reader.cpp src/util/bounded_file.cpp
// FUZZ_LIBS: -lyaml-cpp -lre2
// clang-format on
//
// Besides "no crash, no UB, no leak, no stack overflow", it checks the contract:
//  - parse_config() either returns a config or throws ConfigError naming the file first
//    ("fuzz.yml:" or "fuzz.yml:LINE:COL:"); no other exception escapes (a yaml-cpp
//    conversion error would end the daemon on SIGHUP);
//  - an accepted config has targets or sources (or allow_empty), unique names, a compiled
//    pattern for every cmdline: target;
//  - a selector parsed from the same bytes either throws std::invalid_argument or, for
//    cmdline:, matches a 128 KiB command line in linear time (libFuzzer's -timeout catches a
//    stall).
#include <re2/re2.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "collectors/collector.h"
#include "config/config.h"

namespace loadwatch {

// config.cpp checks `collectors:` names against the table. The real table pulls in every
// collector; the names are what the parser needs (a few real ones, for the corpus).
const std::vector<CollectorSpec>& collector_table() {
  static const std::vector<CollectorSpec> table = {
      {"targets", "", true, nullptr}, {"tcp", "", true, nullptr}, {"textfile", "", true, nullptr}};
  return table;
}

}  // namespace loadwatch

namespace {

void check_config(const std::string& text) {
  using namespace loadwatch;
  Config config;
  try {
    config = parse_config(text, "fuzz.yml");
  } catch (const ConfigError& e) {
    if (std::string(e.what()).rfind("fuzz.yml:", 0) != 0) __builtin_trap();
    return;
  }
  // Anything else than ConfigError escapes here and libFuzzer reports it.
  // A file that asks for nothing is refused unless it says allow_empty.
  bool asks_nothing = config.targets.empty() && config.sources.empty() &&
                      config.tcp.ports.empty() && config.collectors.empty();
  if (asks_nothing && !config.allow_empty) __builtin_trap();
  std::set<std::string> names;
  for (const auto& t : config.targets) {
    if (t.name.empty() || !names.insert(t.name).second) __builtin_trap();
    if (t.match.kind == Selector::Kind::Cmdline && !t.match.regex) __builtin_trap();
  }
  names.clear();
  for (const auto& s : config.sources) {
    if (s.name.empty() || !names.insert(s.name).second) __builtin_trap();
    if (s.url.rfind("http://", 0) != 0 && s.url.rfind("https://", 0) != 0) __builtin_trap();
  }
}

void check_selector(const std::string& text) {
  using namespace loadwatch;
  Selector s;
  try {
    s = parse_selector(text);
  } catch (const std::invalid_argument&) {
    return;
  }
  if (s.kind != Selector::Kind::Cmdline) return;
  if (!s.regex || s.value.size() > kMaxSelectorPatternBytes) __builtin_trap();
  // A command line as large as the daemon reads (kMaxCmdlineBytes), made of the pattern's
  // own bytes so that it gets far into the match.
  std::string cmdline;
  while (cmdline.size() < (128u << 10)) cmdline += s.value.empty() ? std::string("a") : s.value;
  (void)RE2::PartialMatch(cmdline, *s.regex);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_config(text);
  check_selector(text);
  try {
    const auto comma = text.find(',');
    const auto eq = text.find('=');
    if (eq != std::string::npos && comma != std::string::npos && eq < comma) {
      auto s = loadwatch::make_source(text.substr(0, eq), text.substr(eq + 1, comma - eq - 1),
                                      text.substr(comma + 1));
      if (s.name.empty()) __builtin_trap();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
