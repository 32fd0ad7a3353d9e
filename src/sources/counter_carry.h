#pragma once
// Keeps loadwatch counters monotonic when an upstream counter resets (Mountebank's
// numberOfRequests drops to 0 when saved requests are deleted or mb restarts; Locust clears
// its stats when a new run starts or on /stats/reset).

#include <cstddef>
#include <iterator>
#include <string>
#include <unordered_map>

namespace loadwatch {

/// Per-series offsets: exported = upstream + offset. A series restarts (its last upstream
/// value is added to the offset) when its upstream value goes down, when it was absent from
/// the previous scrape and comes back (a deleted and re-created Mountebank imposter, a
/// Locust endpoint after a stats reset: both start from 0 again), or on reset_all(). Not
/// thread-safe: owned by one source runner (it lives as long as the source, across
/// reconfigures of unchanged sources).
class CounterCarry {
 public:
  /// Exported value for `key` given the upstream's current `raw` value. NaN/negative raw
  /// values are treated as 0. A decrease of at most `tolerance` × the last value is float
  /// noise, not a reset (for sums derived as average × count).
  double update(const std::string& key, double raw, double tolerance = 0);

  /// The upstream reset every series at once (Locust started a new run, Mountebank
  /// restarted), even those that already grew past their last value by this scrape.
  void reset_all();

  /// Ends a successful scrape: series not updated since the previous end_scrape() are
  /// absent (their next update restarts them), and once more than `keep` series are known
  /// the absent ones are forgotten, so label churn cannot grow memory without bound.
  void end_scrape(std::size_t keep);

  std::size_t size() const { return series_.size(); }

 private:
  struct Series {
    double last = 0;
    double offset = 0;
    bool seen = true;     // updated since the last end_scrape()
    bool absent = false;  // missing from the last scrape
  };
  std::unordered_map<std::string, Series> series_;
};

}  // namespace loadwatch
