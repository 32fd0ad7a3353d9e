#pragma once
// The set of metric families that one sample (or one source scrape) produces.

#include <prometheus/metric_family.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "metrics/series_guard.h"

namespace loadwatch {

using Labels = std::vector<std::pair<std::string, std::string>>;

/// Collects metric families by name, in first-use order. Not thread-safe: one writer (the
/// sampler thread, or a source's scrape) fills it, then hands the result off with take().
/// Every metric remembers its origin (set_origin) and whether loadwatch wrote it or re-exports
/// foreign text (foreign()), so guard_families can keep loadwatch's own series and say who
/// sent what it dropped.
class MetricSink {
 public:
  void gauge(const std::string& name, const std::string& help, Labels labels, double value);
  void counter(const std::string& name, const std::string& help, Labels labels, double value);
  /// Adds a sample of any type; the family is created with `help` and `type` on first use.
  prometheus::ClientMetric& add(const std::string& name, const std::string& help,
                                prometheus::MetricType type, Labels labels);
  /// Appends a whole family loadwatch built (e.g. a Locust source's loadwatch_generator_*);
  /// merged into an existing one of that name. One of another type is dropped
  /// (type_conflict, noted).
  void family(prometheus::MetricFamily family);
  /// Appends every family of `other`, merging by name.
  void append(std::vector<prometheus::MetricFamily> families);
  /// Appends a family re-exported from text loadwatch did not write (a textfile, a
  /// Prometheus source). Where loadwatch exports a family of that name too, only loadwatch's
  /// series are kept (guard_families drops these as reserved).
  void foreign(prometheus::MetricFamily family);

  /// Metrics added from now on have this origin (0 until set; below kForeignOrigin).
  void set_origin(std::uint16_t origin) { origin_ = origin; }
  /// Counts series the current origin dropped itself (past its own caps), by reason.
  void note_dropped(std::string_view reason, double n);
  /// Dropped series noted so far, by (origin, reason).
  const std::map<std::pair<std::uint16_t, std::string>, double>& notes() const { return notes_; }

  bool empty() const { return families_.empty(); }
  const std::vector<prometheus::MetricFamily>& families() const { return families_; }
  std::vector<prometheus::MetricFamily> take();
  /// take() with the origin of each metric, for guard_families.
  std::vector<prometheus::MetricFamily> take(SeriesOrigins& origins);

 private:
  std::size_t family_for(const std::string& name, const std::string& help,
                         prometheus::MetricType type);
  void merge(prometheus::MetricFamily family, std::uint16_t origin);
  std::vector<prometheus::MetricFamily> families_;
  SeriesOrigins origins_;  // parallel to families_ and their metrics
  std::unordered_map<std::string, size_t> index_;
  std::uint16_t origin_ = 0;
  std::map<std::pair<std::uint16_t, std::string>, double> notes_;
};

}  // namespace loadwatch
