#include "analysis/histogram_quantile.h"

#include <cmath>

namespace loadwatch::analysis {

std::optional<QuantileEstimate> histogram_quantile(double q,
                                                   const std::vector<HistogramBucket>& buckets) {
  if (buckets.empty() || !(q >= 0 && q <= 1)) return std::nullopt;
  double total = buckets.back().count;
  if (!(total > 0)) return std::nullopt;
  double rank = q * total;
  double below = 0, start = 0;
  for (const HistogramBucket& b : buckets) {
    if (b.count >= rank && b.count > below) {
      if (std::isinf(b.le)) return std::nullopt;
      double in_bucket = b.count - below;
      QuantileEstimate e;
      e.low = start;
      e.high = b.le;
      e.value = start + (b.le - start) * (rank - below) / in_bucket;
      return e;
    }
    below = b.count;
    start = b.le;
  }
  return std::nullopt;
}

}  // namespace loadwatch::analysis
