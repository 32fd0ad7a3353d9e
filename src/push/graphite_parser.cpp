// Graphite plaintext: carbon's LineReceiver splits each line on whitespace into exactly
// path, value and timestamp (https://graphite.readthedocs.io/en/latest/feeding-carbon.html).
// JMeter's TextGraphiteMetricsSender writes them with "%s %s %d%n"; values come from Java's
// Double.toString, so "1.0E-4", "NaN" and "Infinity" are possible and accepted.
#include "push/graphite_parser.h"

#include <charconv>
#include <cmath>

namespace loadwatch {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view next_token(std::string_view& rest) {
  size_t i = 0;
  while (i < rest.size() && is_blank(rest[i])) ++i;
  size_t j = i;
  while (j < rest.size() && !is_blank(rest[j])) ++j;
  auto token = rest.substr(i, j - i);
  rest.remove_prefix(j);
  return token;
}

// from_chars rejects a leading '+', which Java never writes but other senders may.
bool parse_double(std::string_view s, double& out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  // Java spells infinity "Infinity"; from_chars takes "inf" and "infinity" in any case.
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

bool graphite_line_blank(std::string_view line) {
  for (char c : line) {
    if (!is_blank(c)) return false;
  }
  return true;
}

const char* parse_graphite_line(std::string_view line, GraphiteLine& out) {
  auto rest = line;
  auto path = next_token(rest);
  auto value = next_token(rest);
  auto timestamp = next_token(rest);
  if (path.empty()) return "empty line";
  if (value.empty()) return "missing value";
  if (!next_token(rest).empty()) return "more than three fields";
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "control character in path";
  }
  if (!parse_double(value, out.value)) return "value is not a number";
  out.path = path;
  out.timestamp = -1;
  if (!timestamp.empty()) {
    // Carbon parses the timestamp as a float; -1 (or any negative) means "now".
    double ts = 0;
    if (!parse_double(timestamp, ts) || !std::isfinite(ts)) return "timestamp is not a number";
    out.timestamp = ts;
  }
  return nullptr;
}

}  // namespace loadwatch
