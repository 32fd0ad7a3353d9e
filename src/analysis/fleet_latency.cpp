#include "analysis/fleet_latency.h"

namespace loadwatch::analysis {

bool merge_host_histograms(PhaseStats& out,
                           const std::vector<const std::vector<HistogramBucket>*>& histograms,
                           const std::string& window) {
  if (histograms.empty() || !histograms[0] || histograms[0]->empty()) return false;
  std::vector<HistogramBucket> sum = *histograms[0];
  for (std::size_t h = 1; h < histograms.size(); ++h) {
    const auto* next = histograms[h];
    if (!next || next->size() != sum.size()) return false;
    for (std::size_t b = 0; b < sum.size(); ++b) {
      if ((*next)[b].le != sum[b].le) return false;
      sum[b].count += (*next)[b].count;
    }
  }
  auto p50 = histogram_quantile(0.5, sum);
  auto p95 = histogram_quantile(0.95, sum);
  auto p99 = histogram_quantile(0.99, sum);
  if (!p50 && !p95 && !p99) return false;
  auto set = [](const std::optional<QuantileEstimate>& e, std::optional<double>& value,
                std::optional<double>& low, std::optional<double>& high) {
    if (!e) return;
    value = e->value;
    low = e->low;
    high = e->high;
  };
  set(p50, out.p50_seconds, out.p50_low_seconds, out.p50_high_seconds);
  set(p95, out.p95_seconds, out.p95_low_seconds, out.p95_high_seconds);
  set(p99, out.p99_seconds, out.p99_low_seconds, out.p99_high_seconds);
  out.latency_method = "histogram";
  std::string whose = histograms.size() == 1
                          ? std::string("the generator's histogram")
                          : "the " + std::to_string(histograms.size()) +
                                " generator hosts' histograms summed by bucket (never their "
                                "quantiles averaged)";
  out.latency_window =
      whose + ", " + window + ", interpolated in the bucket (bound: the bucket's edges)";
  return true;
}

}  // namespace loadwatch::analysis
