#pragma once
// A quantile from the cumulative buckets of a Prometheus histogram, interpolated linearly inside
// its bucket as PromQL's histogram_quantile() does. The true quantile lies somewhere in that
// bucket, so the bucket's edges are its bound.

#include <optional>
#include <vector>

namespace loadwatch::analysis {

struct HistogramBucket {
  double le = 0;     // upper edge; +Inf for the last
  double count = 0;  // cumulative: observations <= le
};

struct QuantileEstimate {
  double value = 0;
  double low = 0, high = 0;  // the bucket it lies in
};

/// `buckets` by increasing le. Nothing when the histogram is empty or the quantile lies in the
/// +Inf bucket (no upper edge to bound it).
std::optional<QuantileEstimate> histogram_quantile(double q,
                                                   const std::vector<HistogramBucket>& buckets);

}  // namespace loadwatch::analysis
