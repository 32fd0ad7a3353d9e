#include "routes/history_query.h"

#include <cmath>
#include <cstdlib>

namespace loadwatch {

namespace {

bool parse_time(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

/// A client's value as quoted in an error: at most 64 bytes of it.
std::string client_value(const std::string& value) {
  constexpr std::size_t kMax = 64;
  return "\"" + (value.size() > kMax ? value.substr(0, kMax) + "..." : value) + "\"";
}

}  // namespace

std::vector<std::string> split_series(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool quoted = false, escaped = false;
  for (char c : s) {
    if (quoted) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::optional<std::string> read_history_query(
    const std::function<std::string(const std::string&)>& param, HistoryQuery& q) {
  auto names = split_series(param("series"));
  if (names.empty()) return "series: give one or more series or family names";
  if (names.size() > kHistoryMaxSeriesPerRequest) {
    return "series: at most " + std::to_string(kHistoryMaxSeriesPerRequest) + " names per request";
  }
  for (auto& n : names) q.select.push_back(HistorySelector{std::move(n), {}});
  std::string since = param("since"), until = param("until");
  if (!since.empty() && !parse_time(since, &q.since)) {
    return "since: not a Unix time in seconds: " + client_value(since);
  }
  if (!until.empty() && !parse_time(until, &q.until)) {
    return "until: not a Unix time in seconds: " + client_value(until);
  }
  std::string rate = param("rate");
  if (!rate.empty() && rate != "0" && rate != "1" && rate != "true" && rate != "false") {
    return "rate: 1 or 0";
  }
  q.rate = rate == "1" || rate == "true";
  q.max_series = kHistoryMaxSeriesPerRequest;
  return std::nullopt;
}

}  // namespace loadwatch
