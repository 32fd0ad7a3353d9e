// libFuzzer harness: the Prometheus text format parser (src/sources/prom_text_parser.cpp).
// FUZZ_SOURCES: src/sources/prom_text_parser.cpp src/metrics/exposition.cpp
// FUZZ_LIBS:
//
// Besides "no crash, no UB, no leak", it checks the parser's contract: an error names its
// line and leaves no families, and whatever parses re-serialises (serialize_text, what
// /metrics uses) into text that parses again to the same families, names, types and HELP.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/prom_text_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = loadwatch::parse_prom_text(text);
  if (!parsed.ok()) {
    if (parsed.error.rfind("line ", 0) != 0 || !parsed.families.empty()) __builtin_trap();
    return 0;
  }
  double v;
  (void)loadwatch::parse_prom_value(text.substr(0, 40), v);

  std::string exposition = loadwatch::serialize_text(parsed.families);
  auto again = loadwatch::parse_prom_text(exposition);
  if (!again.ok() || again.families.size() != parsed.families.size()) __builtin_trap();
  // HELP comes back as written: invalid UTF-8 as U+FFFD, and without the `\r`s that end
  // it (the parser forgives a CR before the line feed).
  auto comparable = [](std::string help) {
    loadwatch::replace_invalid_utf8(help);
    while (!help.empty() && help.back() == '\r') help.pop_back();
    loadwatch::truncate_utf8(help, loadwatch::kMaxHelpBytes);
    while (!help.empty() && help.back() == '\r') help.pop_back();
    return help;
  };
  for (size_t i = 0; i < again.families.size(); ++i) {
    const auto& a = parsed.families[i];
    const auto& b = again.families[i];
    if (a.name != b.name || a.type != b.type || comparable(a.help) != comparable(b.help))
      __builtin_trap();
  }
  return 0;
}
