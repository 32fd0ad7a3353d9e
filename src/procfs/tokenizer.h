#pragma once
// Tokenizing helpers shared by the procfs parsers (stat, softirqs, meminfo, loadavg, file-nr,
// net/*, sysctl, ...). Header-only, pure, locale-free (std::from_chars); errors are
// std::runtime_error.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "procfs/fs_root.h"

namespace loadwatch::host_parse {

/// Returns the next line of `rest` (without '\n') and advances `rest` past it.
inline std::string_view next_line(std::string_view& rest) {
  auto nl = rest.find('\n');
  std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  return line;
}

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/// Returns the next blank-separated field of `rest` (empty when none is left) and advances.
inline std::string_view next_field(std::string_view& rest) {
  size_t b = 0;
  while (b < rest.size() && is_blank(rest[b])) ++b;
  size_t e = b;
  while (e < rest.size() && !is_blank(rest[e])) ++e;
  std::string_view field = rest.substr(b, e - b);
  rest = rest.substr(e);
  return field;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

/// `s` quoted for an error message: at most 40 bytes, control and non-ASCII bytes as '?',
/// so garbage input cannot flood or corrupt a log line.
inline std::string quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > 40) out += "...";
  return out + "\"";
}

/// Parses a whole field as an unsigned decimal; `what` names it in the error message.
inline std::uint64_t to_u64(std::string_view field, std::string_view what) {
  std::uint64_t v = 0;
  const char* end = field.data() + field.size();
  auto [p, ec] = std::from_chars(field.data(), end, v);
  if (field.empty() || ec != std::errc() || p != end) {
    throw std::runtime_error(std::string(what) + ": not an unsigned integer: " + quote(field));
  }
  return v;
}

/// Parses a whole field as a finite, non-negative decimal number.
inline double to_nonneg_double(std::string_view field, std::string_view what) {
  double v = 0;
  const char* end = field.data() + field.size();
  auto [p, ec] = std::from_chars(field.data(), end, v, std::chars_format::fixed);
  if (field.empty() || ec != std::errc() || p != end || !std::isfinite(v) || v < 0) {
    throw std::runtime_error(std::string(what) + ": not a non-negative number: " + quote(field));
  }
  return v;
}

/// Reads `relative` below `root` and returns parse(text). A read failure throws with the
/// path (FsRoot::read_or_throw); a parse error is re-thrown with the path in front.
template <class Parse>
auto read_and_parse(const FsRoot& root, std::string_view relative, Parse parse) {
  const std::string text = root.read_or_throw(relative);
  try {
    return parse(std::string_view(text));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(root.path(relative) + ": " + e.what());
  }
}

}  // namespace loadwatch::host_parse
