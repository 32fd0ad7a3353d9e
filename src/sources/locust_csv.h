#pragma once
// Locust's /stats/requests/csv: the request counts as of the moment it answers. Unlike
// /stats/requests (memoized for 2 s), Locust builds this answer at every request, so its
// counts are dated by the request's own round trip.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// One data row: a request name + method, or the aggregate (name "Aggregated", method "").
struct LocustCsvRow {
  std::string name;
  std::string method;
  double requests = 0;
  double failures = 0;
  std::optional<double> avg_ms;  // "Average Response Time"
};

/// Parses the body by its header's column names (Type, Name, Request Count, Failure Count,
/// Average Response Time; other columns are ignored). False with `error` set when a needed
/// column is missing, a count is not a non-negative number, a quoted field is unterminated, a
/// record has more than 256 fields, or a name or method is longer than kMaxLabelValueBytes:
/// the caller then keeps to the JSON.
/// At most `max_rows` request rows are kept besides the aggregate. Never throws.
bool parse_locust_requests_csv(std::string_view text, std::vector<LocustCsvRow>& rows,
                               std::string& error, std::size_t max_rows = SIZE_MAX);

}  // namespace loadwatch
