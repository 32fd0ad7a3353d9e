#pragma once
// What JMeter's Backend Listeners push (Graphite plaintext, InfluxDB line protocol), kept as
// loadwatch_generator_* counters and gauges per source.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metric_sink.h"
#include "metrics/series_limits.h"
#include "push/graphite_parser.h"
#include "push/influx_line_protocol.h"
#include "runs/run_observer.h"

namespace loadwatch {

/// Where a Graphite path from JMeter's GraphiteBackendListenerClient splits:
/// `<rootMetricsPrefix><context>.<metric>`, e.g. "jmeter.home.a.pct99_9" → prefix "jmeter",
/// context "home", metric "a.pct99_9"; "jmeter.test.meanAT" → context "test", metric "meanAT".
struct JMeterGraphitePath {
  std::string_view prefix;   // without the trailing dot; may be empty
  std::string_view context;  // "all" (aggregate), "test" (threads) or a sampler label
  std::string_view metric;
};

/// Splits a path; false when it is not shaped like a JMeter metric. JMeter sanitises sampler
/// labels (' ' and '\\' → '-', '.' → '_'), so the context never holds a dot and the split is
/// unambiguous from the right; the prefix may hold dots ("myapp.jmeter.").
bool split_jmeter_graphite_path(std::string_view path, JMeterGraphitePath& out);

/// "99_9" / "99.9" / "90.0" / "90" (JMeter's percentile suffixes) → Prometheus quantile label
/// "0.999" / "0.999" / "0.9" / "0.9", by shifting the decimal point (no float rounding).
/// Empty when the text is not a percentile in [0, 100].
std::string percentile_to_quantile(std::string_view pct);

/// Aggregated JMeter numbers for every source that pushed to one listener.
///
/// Counters are the sum of the per-interval counts JMeter sends; gauges keep the latest value
/// of each sender. A source is the Influx database/bucket name, or the Graphite root prefix
/// without its trailing dot ("jmeter" when the prefix is empty). Latency is exported as
/// summaries (like the Locust source): quantiles as reported, _count = requests, _sum from the
/// interval means (NaN when JMeter sends none). JMeter does not report the HTTP
/// method, so endpoint series carry method="" (absent in Prometheus). Users = startedT - endedT
/// (threads running now) when both are reported, else meanAT. Latencies are JMeter's "a" (all
/// samples) figures; its separate ok/ko latencies and hit counts are not exported.
///
/// Thread-safe: ingest_* run on listener / HTTP threads, collect() on the sampler thread; one
/// mutex guards all state, taken once per Graphite line and once per Influx body.
class JMeterModel {
 public:
  /// Every cap refuses what is past it and counts it in loadwatch_push_rejected_lines_total
  /// under the reason named here (docs/limits.md).
  struct Limits {
    /// Sources kept; a new one replaces the least recently pushed source if that has been
    /// quiet for evict_after_s, else its lines are refused (max_sources). A source quiet for
    /// evict_after_s is forgotten at the next sample anyway (forget_quiet).
    std::size_t max_sources = 64;
    std::size_t max_transactions = 1000;  // per source (max_transactions)
    double evict_after_s = 600;
    /// Series one source may export, and all sources of this listener together
    /// (max_series): a transaction counts kEndpointSeries, a quantile one more.
    std::size_t max_series_per_source = 20000;
    std::size_t max_series = 50000;
    /// Quantiles per latency summary (max_quantiles); the fields past it are ignored.
    std::size_t max_quantiles = kMaxQuantilesPerSeries;
    /// Bytes of a source or transaction name, both label values (label_limit).
    std::size_t max_name_bytes = kMaxLabelValueBytes;
  };
  /// Series a transaction exports besides its quantiles, and a source besides its
  /// transactions (upper bounds, for the series caps).
  static constexpr std::size_t kEndpointSeries = 7;
  static constexpr std::size_t kSourceSeries = 16;

  /// `protocol` labels this model's loadwatch_push_* metrics ("graphite" or "influx").
  explicit JMeterModel(std::string protocol);
  JMeterModel(std::string protocol, Limits limits);

  enum class Result { Taken, Unknown, Dropped };

  /// One Graphite line from a JMeter Graphite Backend Listener. `now` is unix seconds.
  Result ingest_graphite(const GraphiteLine& line, double now);

  struct InfluxOutcome {
    std::size_t points = 0;     // valid points (taken, unknown or dropped)
    std::size_t taken = 0;      // points that updated a source
    std::size_t malformed = 0;  // lines that failed to parse
    /// Set when the whole body was refused because the source could not be kept (the
    /// reason: max_sources, max_series or label_limit); nothing of it was taken.
    const char* refused = nullptr;
    /// With refused = max_sources: seconds until the quietest source may be evicted.
    double retry_after_s = 0;
    /// The first few parse errors (at most kMaxReportedErrors); texts point into the body.
    std::vector<InfluxParseError> errors;
  };
  static constexpr std::size_t kMaxReportedErrors = 5;
  /// One line-protocol body pushed for database/bucket `source` by a JMeter InfluxDB Backend
  /// Listener. `ns_per_unit` scales timestamps (see influx_precision_ns).
  InfluxOutcome ingest_influx(std::string_view source, std::string_view body, double now,
                              std::int64_t ns_per_unit = 1);

  /// Tells `runs` about test runs (origin "jmeter:SOURCE"): the InfluxDB listener's start and
  /// end annotations; over Graphite, which has none, threads running (startedT > endedT) as
  /// a run in progress. Set before the first push; may be null.
  void set_run_observer(RunObserver* runs) { runs_ = runs; }

  /// Counts a line rejected before it reached the model (e.g. "too_long", "parse").
  void count_rejected(const char* reason, std::uint64_t n = 1);

  /// Forgets every source that has been quiet for evict_after_s (its series leave /metrics and
  /// its memory is freed): a finished test's figures do not stay held until a new source needs
  /// the room. Returns how many were forgotten. The collectors call it before collect().
  std::size_t forget_quiet(double now);

  /// Adds loadwatch_generator_* families for every source, and loadwatch_push_* families.
  /// `now` (unix seconds, the sample's time) dates the figures' age.
  void collect(MetricSink& out, double now) const;

 private:
  struct Stats {
    double requests = 0, failures = 0;
    double min = -1, max = -1, avg = -1;  // seconds; < 0 = not reported
    struct Quantile {
      std::string key;  // as sent: "99_9", "90.0"
      double quantile;  // 0.999
      double seconds;
    };
    std::vector<Quantile> quantiles;
    /// False when the quantile is new and `room` is false (a cap): it is not kept.
    bool set_quantile(std::string_view key, double seconds, bool room);

    // Summary _sum: the sum of interval mean x interval count. Known only when every counted
    // interval came with its mean (JMeter 2.13's Graphite listener sends no mean at all).
    double sum_seconds = 0;
    bool sum_seen = false, sum_broken = false;
    bool sum_known() const { return sum_seen && !sum_broken; }
    void add_interval(double count, double avg_ms);
    // Graphite sends an interval's count and mean on separate lines: pair them by timestamp.
    double g_count = 0, g_count_ts = -2, g_avg_ms = 0, g_avg_ts = -2;
    bool g_count_paired = true;
  };
  struct Source {
    Stats all;
    std::map<std::string, Stats, std::less<>> endpoints;
    double started_threads = -1, ended_threads = -1, mean_threads = -1;
    double sent_bytes = 0, received_bytes = 0;
    bool seen_bytes = false;
    double run_start = -1, run_end = -1;
    std::string run_title;  // "<title>" of JMeter's "<title> started" annotation
    double last_push = 0;
    /// Unix time the aggregate counts describe, from the generator's timestamp (-1: none
    /// sent), and how much older they may be (the timestamp's resolution).
    double data_time = -1, data_time_uncertainty = 0;
    std::size_t series = kSourceSeries;  // upper bound of what collect() exports for it
  };

  /// Null when the source cannot be kept; `why` then names the reason.
  Source* source_locked(std::string_view name, double now, const char*& why);
  /// Null when the transaction cannot be kept; `why` then names the reason.
  Stats* endpoint_locked(Source& s, std::string_view name, const char*& why);
  /// Sets a quantile within the caps; false (and `why`) when it was not kept.
  bool quantile_locked(Source& s, Stats& st, std::string_view key, double seconds,
                       const char*& why);
  void apply_influx_locked(Source& s, const InfluxPoint& p, double now, std::int64_t ns_per_unit,
                           bool& taken, const char*& dropped);
  void reject_locked(const char* reason, std::uint64_t n);

  const std::string protocol_;
  const Limits limits_;
  RunObserver* runs_ = nullptr;  // told after mutex_ is released: it may write to disk
  mutable std::mutex mutex_;
  std::map<std::string, Source, std::less<>> sources_;
  std::size_t series_ = 0;  // sum of Source::series
  std::uint64_t lines_ = 0;
  std::map<std::string, std::uint64_t, std::less<>> rejected_;  // by reason
};

}  // namespace loadwatch
