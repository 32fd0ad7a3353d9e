// Target selectors "KIND:VALUE" (README "Target selectors").
#include <re2/re2.h>

#include <charconv>
#include <stdexcept>

#include "config/config.h"

namespace loadwatch {

namespace {
struct KindName {
  Selector::Kind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {Selector::Kind::Pid, "pid"},         {Selector::Kind::Pidfile, "pidfile"},
    {Selector::Kind::Comm, "comm"},       {Selector::Kind::Exe, "exe"},
    {Selector::Kind::Cmdline, "cmdline"}, {Selector::Kind::Unit, "unit"},
    {Selector::Kind::Port, "port"},
};

long parse_positive(const std::string& value, long max, const char* what) {
  long n = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || p != value.data() + value.size() || n <= 0 || n > max) {
    throw std::invalid_argument(std::string("invalid ") + what + " \"" + value + "\"");
  }
  return n;
}

// RE2: matching is linear in the command line and needs no stack proportional to it or to the
// pattern (std::regex recursed per character and overflowed the sampler's stack).
std::shared_ptr<const re2::RE2> compile_cmdline_pattern(const std::string& value) {
  if (value.size() > kMaxSelectorPatternBytes) {
    throw std::invalid_argument("cmdline regex is " + std::to_string(value.size()) +
                                " bytes, longer than the " +
                                std::to_string(kMaxSelectorPatternBytes) + " allowed");
  }
  RE2::Options options;
  options.set_log_errors(false);  // the error is ours to report, with file:line:col
  // Bytes, not UTF-8: a command line can hold any bytes (a legacy-encoded argument), and in
  // UTF-8 mode `.` would not match an invalid sequence, so `java .*App` would miss it.
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_max_mem(kSelectorRegexMaxMem);
  auto re = std::make_shared<const re2::RE2>(value, options);
  if (!re->ok()) {
    std::string why = re->error_code() == RE2::ErrorPatternTooLarge
                          ? "pattern too large (over the " +
                                std::to_string(kSelectorRegexMaxMem >> 10) + " KiB RE2 limit)"
                          : re->error();
    throw std::invalid_argument("invalid cmdline regex \"" + value.substr(0, 200) +
                                (value.size() > 200 ? "...\"" : "\"") + ": " + why +
                                " (RE2 syntax)");
  }
  return re;
}

}  // namespace

const char* selector_kind_name(Selector::Kind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

std::string Selector::text() const { return std::string(selector_kind_name(kind)) + ":" + value; }

Selector make_selector(const std::string& kind, const std::string& value) {
  Selector s;
  bool known = false;
  for (const auto& k : kKinds) {
    if (kind == k.name) s.kind = k.kind, known = true;
  }
  if (!known) {
    throw std::invalid_argument("unknown selector kind \"" + kind +
                                "\" (want pid, pidfile, comm, exe, cmdline, unit or port)");
  }
  if (value.empty()) throw std::invalid_argument("selector " + kind + " needs a value");
  s.value = value;
  switch (s.kind) {
    case Selector::Kind::Pid:
      parse_positive(value, 4194304, "pid");
      break;
    case Selector::Kind::Port:
      parse_positive(value, 65535, "port");
      break;
    case Selector::Kind::Comm:
      // The kernel keeps 15 bytes of comm (TASK_COMM_LEN 16): a longer name never matches.
      if (value.size() > 15) {
        throw std::invalid_argument("comm \"" + value +
                                    "\" is longer than 15 characters; the kernel truncates comm "
                                    "to 15, use that or exe:/cmdline:");
      }
      break;
    case Selector::Kind::Cmdline:
      s.regex = compile_cmdline_pattern(value);
      break;
    default:
      break;
  }
  return s;
}

Selector parse_selector(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("selector \"" + text + "\" is not KIND:VALUE");
  }
  return make_selector(text.substr(0, colon), text.substr(colon + 1));
}

}  // namespace loadwatch
