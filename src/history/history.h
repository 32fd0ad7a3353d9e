#pragma once
// The daemon's recent past: a bounded, in-memory time series store fed by the sampler.
//
// Layout: one shared timestamp column (double, Unix seconds) and one float column per series,
// all ring buffers of the same capacity, so a point costs 4 bytes per series plus 8 for its
// timestamp. A series missing from a sample holds NaN there (a gap). When the ring is full the
// oldest point goes first; a series with no value left in the ring is dropped, freeing its slot.
// Counters are stored as their increase since the previous point (resets count as a restart
// from zero, as Prometheus's rate() does), so float precision is spent on the per-sample
// change rather than on a large running total; their raw value is rebuilt from the newest one.
//
// Thread safety: record() is called by the sampler thread only (never by two threads at once:
// it reads its key index and scratch without the lock); every other member may be called from
// any thread. Readers hold a shared lock only while copying the ring segments they asked for;
// record() holds the exclusive lock only to write one point. The sampler does not wait for a
// reader: when one holds the lock, the point is kept aside and written with the next sample
// (the second in a row waits, so no point is lost).

#include <prometheus/metric_family.h>

#include <cstddef>
#include <deque>
#include <map>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace loadwatch {

struct HistorySettings {
  /// Points kept per series (one per sample): 7200 is 2 hours at the default 1 s interval.
  std::size_t points = 7200;
  /// Most series kept at once; series beyond it are not recorded (counted in dropped_series()).
  std::size_t max_series = 512;
};

/// What one series is: its Prometheus identity and whether it is a counter.
struct HistorySeriesInfo {
  std::string key;     // name{label="value",...} as in /metrics (labels in exposition order)
  std::string family;  // metric name; a summary's quantiles keep its name with a quantile label
  std::map<std::string, std::string> labels;
  bool counter = false;
};

/// Chooses series: a whole family by name, or one series by its exact key, optionally
/// narrowed by labels that must all match (e.g. family "loadwatch_process_threads" with
/// {{"target","app"}}).
struct HistorySelector {
  std::string name;  // family name, or an exact key containing '{'
  std::map<std::string, std::string> labels;
};

struct HistoryQuery {
  std::vector<HistorySelector> select;
  double since = 0;      // Unix seconds, exclusive: points with time > since
  double until = 1e300;  // Unix seconds, inclusive
  /// Counters as a per-second rate between consecutive points (the first point of the answer,
  /// and a point after a gap, has none); gauges are unaffected.
  bool rate = false;
  /// Most series returned; selectors matching more are cut (HistoryColumns::truncated).
  std::size_t max_series = 100;
};

/// Points in columns, the shape uPlot draws: time[i] and values[s][i] belong together;
/// NaN is a gap.
struct HistoryColumns {
  std::vector<double> time;
  std::vector<HistorySeriesInfo> series;
  std::vector<std::vector<float>> values;
  bool truncated = false;
};

class History {
 public:
  explicit History(HistorySettings settings = {});

  /// Records one sample (the families the sampler publishes) taken at `timestamp`. Only the
  /// families the run report and the live page need are kept (history.cpp lists them); host
  /// CPU is summed over its cpu label. A timestamp not after the newest point is ignored.
  void record(const std::vector<prometheus::MetricFamily>& families, double timestamp);

  HistoryColumns query(const HistoryQuery& q) const;
  /// Every series kept now, in the order they were first seen.
  std::vector<HistorySeriesInfo> list() const;

  std::size_t capacity() const { return settings_.points; }
  std::size_t max_series() const { return settings_.max_series; }
  std::size_t size() const;  // points held
  /// Series not recorded because max_series was reached, since start.
  std::size_t dropped_series() const;
  /// Points record() kept aside for the next sample because a reader held the lock.
  std::size_t deferred_points() const;
  /// Bytes held by the columns (the ring buffers), not counting series names.
  std::size_t column_bytes() const;

 private:
  struct Series {
    HistorySeriesInfo info;
    std::vector<float> ring;  // `points` floats; NaN = no value
    double last_raw = 0;      // counters: newest raw value
    bool has_last = false;    // counters: last_raw is set
    /// Counters: (point number, raw value) where the increase is unknown; rebuilt raw values
    /// start from these. One per segment, so a handful.
    std::deque<std::pair<std::size_t, double>> anchors;
    double oldest_raw = 0;      // counters: raw value at the oldest point held (NaN: a gap)
    std::size_t last_seen = 0;  // point number (not index) of the newest value
  };
  /// A value of a series already kept: its index in series_.
  struct Known {
    std::size_t series;
    double value;
  };
  /// A value of a series seen for the first time.
  struct Fresh {
    HistorySeriesInfo info;
    double value;
  };
  /// Fills known_ and fresh_ from one sample (summing what a family aggregates).
  void extract(const std::vector<prometheus::MetricFamily>& families);
  /// Writes one value of `s` at ring index `idx`, point number `point`.
  static void put(Series& s, std::size_t idx, std::size_t point, double value);
  bool matches(const Series& s, const HistorySelector& sel) const;
  void evict_stale();
  /// Writes one point (the values extracted from one sample); the exclusive lock is held.
  void write(double timestamp, const std::vector<Known>& known, std::vector<Fresh>& fresh);

  HistorySettings settings_;
  mutable std::shared_mutex mutex_;
  std::vector<double> time_;  // ring, `points` long
  std::size_t head_ = 0;      // index of the next write
  std::size_t count_ = 0;     // points held
  std::size_t written_ = 0;   // points ever written
  std::vector<Series> series_;
  /// Series key -> index in series_. Written by record() only, under the exclusive lock: the
  /// sampler thread reads it without the lock, readers under the shared one.
  std::unordered_map<std::string, std::size_t> index_;
  std::size_t dropped_ = 0;
  std::size_t deferred_ = 0;
  // record()'s scratch, kept between samples so a steady sample allocates nothing for them.
  std::string key_;
  std::vector<Known> known_;
  std::vector<Fresh> fresh_;
  /// A point record() kept aside because a reader held the lock (sampler thread only).
  struct Pending {
    bool set = false;
    double timestamp = 0;
    std::vector<Known> known;
    std::vector<Fresh> fresh;
  } pending_;
};

}  // namespace loadwatch
