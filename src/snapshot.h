#pragma once
// One published sample: immutable once published, shared by every reader.

#include <prometheus/metric_family.h>

#include <mutex>
#include <string>
#include <vector>

#include "collector.h"

namespace loadwatch {

/// A complete sample. Built by the sampler thread, then published as shared_ptr<const
/// Snapshot>; readers on HTTP threads only read it. The serialized text (and its gzip) is made
/// once, on first request, so concurrent scrapes of one sample cost one serialization.
class Snapshot {
 public:
  Snapshot(std::vector<prometheus::MetricFamily> families, std::vector<TargetState> targets,
           double timestamp);

  const std::vector<prometheus::MetricFamily>& families() const { return families_; }
  const std::vector<TargetState>& targets() const { return targets_; }
  /// Unix time the sample was taken, seconds.
  double timestamp() const { return timestamp_; }

  /// Text exposition format 0.0.4.
  const std::string& text() const;
  const std::string& gzipped() const;

 private:
  std::vector<prometheus::MetricFamily> families_;
  std::vector<TargetState> targets_;
  double timestamp_;
  mutable std::once_flag text_once_, gzip_once_;
  mutable std::string text_, gzip_;
};

}  // namespace loadwatch
