#pragma once
// One published sample: immutable once published, shared by every reader.

#include <prometheus/metric_family.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/sample_state.h"

namespace loadwatch {

/// A complete sample. Built by the sampler thread, then published as shared_ptr<const
/// Snapshot>; readers on HTTP threads only read it. The serialized text (and its gzip) is made
/// once: by the sampler before publishing when the previous sample was scraped in that form
/// (prepare_like), else on first request, so concurrent scrapes of one sample cost one
/// serialization and an active scraper never waits for it.
class Snapshot {
 public:
  Snapshot(std::vector<prometheus::MetricFamily> families, std::vector<TargetState> targets,
           double timestamp, std::vector<SourceState> sources = {});

  const std::vector<prometheus::MetricFamily>& families() const { return families_; }
  const std::vector<TargetState>& targets() const { return targets_; }
  const std::vector<SourceState>& sources() const { return sources_; }
  /// Unix time the sample was taken, seconds.
  double timestamp() const { return timestamp_; }

  /// Text exposition format 0.0.4.
  const std::string& text() const;
  const std::string& gzipped() const;

  /// Serializes now whatever forms `previous` was asked for, so that scrapers of the next
  /// sample find them made. Nothing when nobody scrapes: idle costs stay at zero.
  void prepare_like(const Snapshot& previous) const;
  bool text_made() const { return text_made_.load(); }
  bool gzip_made() const { return gzip_made_.load(); }

 private:
  const std::string& make_text() const;
  const std::string& make_gzip() const;

  std::vector<prometheus::MetricFamily> families_;
  std::vector<TargetState> targets_;
  std::vector<SourceState> sources_;
  double timestamp_;
  mutable std::once_flag text_once_, gzip_once_;
  mutable std::string text_, gzip_;
  mutable std::atomic<bool> text_asked_{false}, gzip_asked_{false};
  mutable std::atomic<bool> text_made_{false}, gzip_made_{false};
};

}  // namespace loadwatch
