#pragma once
// Bodies of the run API's write requests, and the text rules every run name and label obeys
// (from the API or from an inferred source).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// Limits on what a run carries; documented in docs/runs.md.
inline constexpr std::size_t kMaxRunBodyBytes = 64 * 1024;
inline constexpr std::size_t kMaxRunNameBytes = 128;
inline constexpr std::size_t kMaxLabels = 32;
inline constexpr std::size_t kMaxRunLabelNameBytes = 64;
inline constexpr std::size_t kMaxRunLabelValueBytes = 256;
inline constexpr std::int64_t kMaxUsers = 1'000'000'000;
/// Hosts a run across loadwatches may name (each a name: 1 to kMaxRunNameBytes, the name rules).
inline constexpr std::size_t kMaxRunHosts = 256;
/// How far an instant a client gives ("at") may lie from the loadwatch's own clock. A client
/// that drives several loadwatches sends each its own instant (corrected by the skew it
/// measured), so only a mistake or a clock far off is refused.
inline constexpr double kMaxRunClockOffsetSeconds = 60;

/// A body that cannot be used; `field` names the offending field ("body" for the whole).
class RunRequestError : public std::runtime_error {
 public:
  RunRequestError(std::string field, const std::string& why)
      : std::runtime_error("field \"" + field + "\": " + why), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

struct StartRunRequest {
  std::string name;
  std::map<std::string, std::string> labels;
  /// The id to give the run (one run across several loadwatches); empty: made from its start.
  std::string id = {};
  std::optional<double> at = std::nullopt;  // unix seconds; absent: now
  /// The hosts the client opens the run on, itself among them; empty: this one alone.
  std::vector<std::string> hosts = {};
};

struct PhaseRequest {
  std::string name;  // "users=N" when the body gives users but no name
  std::optional<std::int64_t> users;
  std::optional<double> at = std::nullopt;
};

struct StopRequest {
  std::optional<double> at = std::nullopt;
};

struct HostsRequest {
  std::vector<std::string> hosts;
};

/// {"name": "checkout", "labels": {"build": "1234"}, "id": "...", "at": 1764680000.25}; id and
/// at optional. Throws RunRequestError.
StartRunRequest parse_start_request(std::string_view body);
/// {"name": "step 2", "users": 100, "at": ...}; name or users (or both) required. Throws
/// RunRequestError.
PhaseRequest parse_phase_request(std::string_view body);
/// {"hosts": ["sut-1", "gen-1"]}: the hosts an open run takes part on. Throws RunRequestError.
HostsRequest parse_hosts_request(std::string_view body);
/// Empty, or a JSON object with at most "at". Throws RunRequestError.
StopRequest parse_stop_request(std::string_view body);
/// RunRequestError("at") unless `at` lies within kMaxRunClockOffsetSeconds of `now`.
void check_instant(double at, double now);

/// Why `name` cannot name a run or phase (empty, too long, not UTF-8, control, format or bidi
/// characters: run_rules.h), or "" when it can.
std::string name_problem(std::string_view name);
/// Why `hosts` cannot be a run's hosts (more than kMaxRunHosts, a bad name, a name twice);
/// "" when they can.
std::string hosts_problem(const std::vector<std::string>& hosts);
/// Why `key`=`value` cannot be a run label; "" when it can.
std::string label_problem(const std::string& key, const std::string& value);
/// A usable name made of what an inferred source sent: invalid UTF-8 and the characters
/// name_problem refuses become '?', cut to kMaxRunNameBytes on a character boundary; `fallback`
/// when nothing is left.
std::string clean_name(std::string_view raw, std::string_view fallback);

}  // namespace loadwatch
