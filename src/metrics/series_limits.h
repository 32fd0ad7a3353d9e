#pragma once
// Caps on what pushes, sources and textfiles may put on /metrics, and the reasons a series
// is dropped. docs/limits.md lists every cap with what a client and the metrics see.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace loadwatch {

// Label sizes, as Mimir's defaults for label values and names per series; beyond them a
// series is dropped (never truncated: two long values cut to one prefix would collide).
inline constexpr std::size_t kMaxLabelNameBytes = 256;
inline constexpr std::size_t kMaxLabelValueBytes = 2048;
inline constexpr std::size_t kMaxLabelsPerSeries = 32;
/// HELP longer than this is cut (at a UTF-8 boundary); it names a family, it is not data.
inline constexpr std::size_t kMaxHelpBytes = 4096;
/// Quantiles of one summary series and buckets of one histogram series; the rest is dropped.
inline constexpr std::size_t kMaxQuantilesPerSeries = 32;
inline constexpr std::size_t kMaxBucketsPerSeries = 256;
/// Series of all *.prom files of the textfile directory together.
inline constexpr std::size_t kMaxTextfileSeries = 20000;
/// Series on the whole /metrics page; the last in page order (pull sources, then textfiles,
/// then pushes come after the host and targets) are dropped first.
inline constexpr std::size_t kMaxPageSeries = 200000;

/// Why a series was dropped: the `reason` label of loadwatch_dropped_series_total and
/// loadwatch_source_dropped_series_total.
namespace drop_reason {
inline constexpr const char* kMaxSeries = "max_series";          // a producer's series cap
inline constexpr const char* kTotalSeries = "total_series";      // kMaxPageSeries
inline constexpr const char* kLabelLimit = "label_limit";        // label size or count
inline constexpr const char* kMaxQuantiles = "max_quantiles";    // kMaxQuantilesPerSeries
inline constexpr const char* kMaxBuckets = "max_buckets";        // kMaxBucketsPerSeries
inline constexpr const char* kInvalidLabel = "invalid_label";    // bad, reserved or repeated name
inline constexpr const char* kInvalidName = "invalid_name";      // bad metric name
inline constexpr const char* kDuplicate = "duplicate";           // the same series twice
inline constexpr const char* kReserved = "reserved";             // a family loadwatch exports
inline constexpr const char* kNameCollision = "name_collision";  // X_count vs summary X, ...
inline constexpr const char* kTypeConflict = "type_conflict";    // one name, two types
inline constexpr const char* kPageBytes = "page_bytes";          // --metrics.push-max-bytes
}  // namespace drop_reason

/// Dropped series by reason.
using DropCounts = std::map<std::string, double, std::less<>>;

inline void count_drop(DropCounts& counts, std::string_view reason, double n = 1) {
  if (n <= 0) return;
  auto it = counts.find(reason);
  if (it == counts.end()) it = counts.emplace(std::string(reason), 0).first;
  it->second += n;
}

}  // namespace loadwatch
