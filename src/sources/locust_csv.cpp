#include "sources/locust_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "metrics/series_limits.h"

namespace loadwatch {

namespace {

/// Locust writes 22 columns (2.12); a record of commas alone would otherwise cost a
/// std::string (32 bytes) per byte of the answer.
constexpr std::size_t kMaxCsvFields = 256;

/// Splits one CSV record (RFC 4180, as Python's csv module writes it) from `text` at `pos`
/// into `fields`. Returns what is wrong (an unterminated quote, too many fields) or nullptr.
/// Advances `pos` past the record's line end.
const char* next_record(std::string_view text, std::size_t& pos, std::vector<std::string>& fields) {
  fields.assign(1, std::string());
  bool quoted = false;
  while (pos < text.size()) {
    char c = text[pos++];
    if (quoted) {
      if (c != '"') {
        fields.back() += c;
      } else if (pos < text.size() && text[pos] == '"') {
        fields.back() += '"';
        ++pos;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      if (fields.size() == kMaxCsvFields) return "more than 256 columns";
      fields.emplace_back();
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return quoted ? "unterminated quote" : nullptr;
}

std::optional<double> number(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

bool parse_locust_requests_csv(std::string_view text, std::vector<LocustCsvRow>& rows,
                               std::string& error, std::size_t max_rows) {
  rows.clear();
  std::size_t pos = 0;
  std::vector<std::string> fields;
  if (const char* wrong = next_record(text, pos, fields)) {
    error = std::string("/stats/requests/csv: the header: ") + wrong;
    return false;
  }
  const char* names[] = {"Type", "Name", "Request Count", "Failure Count", "Average Response Time"};
  std::size_t col[5];
  for (std::size_t i = 0; i < 5; ++i) {
    col[i] = fields.size();
    for (std::size_t j = 0; j < fields.size(); ++j) {
      if (fields[j] == names[i]) col[i] = j;
    }
    if (col[i] == fields.size() && i < 4) {
      error = std::string("/stats/requests/csv: no column \"") + names[i] + "\"";
      return false;
    }
  }
  std::size_t endpoints = 0;
  while (pos < text.size()) {
    if (const char* wrong = next_record(text, pos, fields)) {
      error = std::string("/stats/requests/csv: ") + wrong;
      return false;
    }
    if (fields.size() == 1 && fields[0].empty()) continue;  // a blank line
    if (fields.size() <= std::max({col[0], col[1], col[2], col[3]})) {
      error = "/stats/requests/csv: a row with too few columns";
      return false;
    }
    LocustCsvRow row;
    row.method = fields[col[0]];
    row.name = fields[col[1]];
    if (row.name.size() > kMaxLabelValueBytes || row.method.size() > kMaxLabelValueBytes) {
      error = "/stats/requests/csv: a name or method past the label cap";
      return false;
    }
    auto requests = number(fields[col[2]]), failures = number(fields[col[3]]);
    if (!requests || !failures || *requests < 0 || *failures < 0) {
      error = "/stats/requests/csv: a count that is not a number";
      return false;
    }
    row.requests = *requests;
    row.failures = *failures;
    if (col[4] < fields.size()) row.avg_ms = number(fields[col[4]]);
    bool aggregate = row.name == "Aggregated" && row.method.empty();
    if (!aggregate && ++endpoints > max_rows) continue;
    rows.push_back(std::move(row));
  }
  return true;
}

}  // namespace loadwatch
