#pragma once
// The body the Locust listener plugin (scripts/locust/loadwatch_listener.py) POSTs to
// /api/v1/push/locust every second: one JSON object, read with a bounded event reader.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loadwatch {

/// Most user-count changes one push may carry (the listener sends those since its last push).
inline constexpr std::size_t kLocustPushMaxSteps = 64;
/// Longest pushed source name, in bytes.
inline constexpr std::size_t kLocustPushMaxNameBytes = 128;
/// Largest body the route takes, plain or after gunzip.
inline constexpr std::size_t kLocustPushMaxBody = 64 * 1024;

struct LocustPush {
  std::string source;
  double time = 0;  // unix seconds, Locust's clock: the moment the counts were complete
  double requests = 0, failures = 0;  // cumulative since the test started
  double users = 0;                   // users running at `time`
  /// (unix seconds, users) at each spawn completed since the previous push, in time order.
  std::vector<std::pair<double, double>> steps;
  /// Requests per duration bucket (request_duration_bounds() and +Inf), cumulative since the
  /// test started; empty when the push carries no histogram.
  std::vector<double> duration_counts;
  double duration_sum = 0;  // seconds
};

/// Parses and checks one body. False with `error` naming the field ("requests: not an
/// integer in [0, 2^53]") when anything is missing, of the wrong type or out of range; never
/// throws except std::bad_alloc. Unknown keys are ignored (newer listeners may add some);
/// nesting is capped at 3 levels and every list at its documented length.
bool parse_locust_push(std::string_view body, LocustPush& out, std::string& error);

/// True for a source name loadwatch takes from a push: 1 to kLocustPushMaxNameBytes of
/// [A-Za-z0-9_.:-].
bool valid_push_source_name(std::string_view name);

}  // namespace loadwatch
