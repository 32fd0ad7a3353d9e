#pragma once
// The set of metric families that one sample (or one source scrape) produces.

#include <prometheus/metric_family.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace loadwatch {

using Labels = std::vector<std::pair<std::string, std::string>>;

/// Collects metric families by name, in first-use order. Not thread-safe: one writer (the
/// sampler thread, or a source's scrape) fills it, then hands the result off with take().
class MetricSink {
 public:
  void gauge(const std::string& name, const std::string& help, Labels labels, double value);
  void counter(const std::string& name, const std::string& help, Labels labels, double value);
  /// Adds a sample of any type; the family is created with `help` and `type` on first use.
  prometheus::ClientMetric& add(const std::string& name, const std::string& help,
                                prometheus::MetricType type, Labels labels);
  /// Appends a whole family (re-exported sources); merged into an existing one of that name.
  void family(prometheus::MetricFamily family);
  /// Appends every family of `other`, merging by name.
  void append(std::vector<prometheus::MetricFamily> families);

  bool empty() const { return families_.empty(); }
  const std::vector<prometheus::MetricFamily>& families() const { return families_; }
  std::vector<prometheus::MetricFamily> take();

 private:
  prometheus::MetricFamily& family_for(const std::string& name, const std::string& help,
                                       prometheus::MetricType type);
  std::vector<prometheus::MetricFamily> families_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace loadwatch
