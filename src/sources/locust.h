#pragma once
// Pull source kind "locust": GET {url}/stats/requests/csv (the counts, uncached) and
// {url}/stats/requests (state, users, quantiles) of a Locust 2.x web UI (master or
// standalone) -> loadwatch_generator_* metrics.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/metric_sink.h"
#include "metrics/series_limits.h"
#include "runs/run_observer.h"
#include "sources/counter_carry.h"
#include "sources/source_runner.h"

namespace loadwatch {

/// Seconds Locust's web UI caches its /stats/requests answer (locust/web.py,
/// DEFAULT_CACHE_TIME): the uncertainty of a scraped figure's time.
inline constexpr double kLocustStatsCacheSeconds = 2.0;

/// Seconds between a Locust worker's reports to its master (runners.py
/// WORKER_REPORT_INTERVAL): a master's counts are as old as its workers' last reports.
inline constexpr double kLocustWorkerReportSeconds = 3.0;

/// One row of "stats": a request name + method, or the "Aggregated" row. Times in ms, as
/// Locust reports them.
struct LocustRow {
  std::string name;
  std::string method;  // "" for Aggregated (2.12 writes "", later versions null)
  double requests = 0;
  double failures = 0;
  std::optional<double> avg_ms;  // avg_response_time: total response time / requests
  /// (quantile, ms) over the whole run, ascending by quantile, one entry per quantile,
  /// from whichever keys this version writes: median_response_time (0.5),
  /// ninetieth_response_time (0.9, gone in 2.28), ninety_ninth_response_time (0.99),
  /// response_time_percentile_<q> (2.21+). Null values (no requests yet) are left out.
  std::vector<std::pair<double, double>> quantiles_ms;
};

/// The parts of /stats/requests that loadwatch exports, by key name so every 2.x shape
/// works (fields a version lacks stay empty).
struct LocustStats {
  std::vector<LocustRow> endpoints;
  std::optional<LocustRow> aggregated;  // the row named "Aggregated"
  std::optional<double> user_count;
  std::optional<double> total_rps;
  std::string state;              // ready, spawning, running, cleanup, stopping, stopped, missing
  std::optional<double> workers;  // distributed mode only
  /// (quantile, ms) of the recent window (Locust's charts), from
  /// current_response_time_percentile_95/_50 (2.12), _1/_2 (2.15: Locust's default
  /// PERCENTILES_TO_CHART [0.5, 0.95]), or current_response_time_percentiles{} (2.21+).
  std::vector<std::pair<double, double>> current_quantiles_ms;
  /// What the parse caps left out, by reason.
  DropCounts dropped;
};

/// Parses a /stats/requests body; false with `error` set when it is not a JSON object with
/// a "stats" list. Rows without a string name are skipped. Never throws.
/// At most `max_rows` request rows are kept (the Aggregated row aside); rows past it, rows
/// whose name or method is longer than kMaxLabelValueBytes and quantiles past
/// kMaxQuantilesPerSeries are counted in `out.dropped` instead.
bool parse_locust_stats(std::string_view json, LocustStats& out, std::string& error,
                        std::size_t max_rows = SIZE_MAX);

/// Maps parsed stats to metrics, keeping counters monotonic across Locust's stats resets.
/// Latencies are summaries, not gauges with a quantile label (which `promtool check
/// metrics` rejects): the quantiles as Locust reports them, _count = requests and _sum =
/// average × requests (Locust's total response time), both kept monotonic like the request
/// counters, so rate(_sum)/rate(_count) is the mean latency of any window.
/// Locust clears every stat when a run starts from stopped/ready (runners.py start()) and
/// on /stats/reset, so a reset is seen as that state change or as the Aggregated count
/// going down; then every series carries its last value, even one that already grew past
/// it between two scrapes. One per source; not thread-safe.
class LocustMapper {
 public:
  void map(const LocustStats& stats, const std::string& source, MetricSink& out);
  /// Ends a scrape (see CounterCarry::end_scrape).
  void end_scrape(std::size_t keep) { carry_.end_scrape(keep); }

 private:
  CounterCarry carry_;
  std::string last_state_;
  double last_requests_ = 0;
  double last_failures_ = 0;
};

/// `runs` (may be null) is told the test's state and user count after every scrape: a test
/// starting or stopping opens or closes a run, a new user count opens a phase.
std::unique_ptr<SourceScraper> make_locust_scraper(RunObserver* runs = nullptr);

}  // namespace loadwatch
