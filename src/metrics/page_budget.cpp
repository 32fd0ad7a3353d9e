#include "metrics/page_budget.h"

#include <algorithm>
#include <numeric>

#include "metrics/series_guard.h"

namespace loadwatch {

namespace {

// A value and a timestamp as written ("-1.2345678901234567e+300"), and the separators.
constexpr std::size_t kValueBytes = 26;
// The le or quantile label a histogram bucket or a summary quantile adds ({le="0.005"}).
constexpr std::size_t kBoundLabelBytes = 32;
// "_bucket", "_count", "_sum".
constexpr std::size_t kSuffixBytes = 7;

}  // namespace

std::size_t exposition_bytes(const prometheus::ClientMetric& metric, const std::string& name,
                             prometheus::MetricType type) {
  std::size_t labels = 2;                                                           // {}
  for (const auto& l : metric.label) labels += l.name.size() + l.value.size() + 4;  // ="",
  const std::size_t series = series_count(metric, type);
  std::size_t bytes = series * (name.size() + labels + kValueBytes);
  if (type == prometheus::MetricType::Histogram || type == prometheus::MetricType::Summary) {
    bytes += series * (kSuffixBytes + kBoundLabelBytes);
  }
  return bytes;
}

std::size_t header_bytes(const prometheus::MetricFamily& family) {
  return 2 * family.name.size() + family.help.size() + 24;  // # HELP, # TYPE, the type
}

std::vector<std::size_t> fair_shares(const std::vector<std::size_t>& wants, std::size_t budget) {
  std::vector<std::size_t> order(wants.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return wants[a] < wants[b]; });
  std::vector<std::size_t> shares(wants.size(), 0);
  std::size_t left = budget;
  for (std::size_t i = 0; i < order.size(); ++i) {
    // What each of the wants still unserved would get of an equal split of what is left.
    const std::size_t split = left / (order.size() - i);
    const std::size_t share = std::min(wants[order[i]], split);
    shares[order[i]] = share;
    left -= share;
  }
  return shares;
}

}  // namespace loadwatch
