#pragma once
// The sampler thread: runs every collector each interval and publishes the sample atomically.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collectors/collector.h"
#include "metrics/snapshot.h"
#include "util/clock_watch.h"

namespace loadwatch {

class History;
class RunBook;

/// Owns the collectors. start() launches the thread; latest() and the counters may be read
/// from any thread; reload() may be called from any thread (applied before the next sample).
class Sampler {
 public:
  /// `runs` (may be null) is told what collectors see of generators' runs, and its runs are
  /// exported with each sample; it must outlive the sampler.
  Sampler(const Options& options, Config config, HttpServer* http, RunBook* runs = nullptr);
  ~Sampler();

  /// Takes one sample synchronously on the calling thread (used before start() so the first
  /// sample is published before the port opens, and by tests).
  void sample_once();
  void start();
  /// Stops the thread. Returns false if a sample is stuck (e.g. blocked on a hung file) and
  /// did not finish within `wait`; the thread is then left behind and the caller should exit.
  bool stop(std::chrono::milliseconds wait = std::chrono::milliseconds(1500));

  std::shared_ptr<const Snapshot> latest() const;
  /// Samples published so far (the watchdog checks it moves).
  std::uint64_t samples() const { return samples_.load(); }
  std::chrono::milliseconds interval() const { return options_.sample_interval; }
  /// Names of enabled collectors, in sample order.
  std::vector<std::string> collector_names() const;

  /// Records every published sample into `history` (nullptr: none), from the sampler thread.
  /// Call before start(); `history` must outlive the sampler.
  void set_history(History* history) { history_ = history; }

  /// Queues a new config; collectors are reconfigured before the next sample.
  void reload(Config config);

 private:
  struct Entry {
    const CollectorSpec* spec;
    std::unique_ptr<Collector> collector;
  };
  void run();
  void apply_pending_config();
  /// Adds what guard_families and the collectors dropped or fixed to the running totals,
  /// logging each new (collector, reason, family) once.
  void account(const GuardReport& report, const MetricSink& sink);
  std::string origin_name(std::uint16_t origin) const;
  /// Logs a gap between samples or a step of the wall clock (ClockWatch), each kind once a
  /// minute at most.
  void log_clock_event(const ClockWatch::Look& look);

  Options options_;
  Config config_;
  FsRoot proc_, sys_;
  HttpServer* http_;
  History* history_ = nullptr;
  RunBook* runs_;
  std::vector<Entry> collectors_;

  mutable std::mutex mutex_;  // guards latest_, pending_, stop_
  std::condition_variable wake_;
  std::shared_ptr<const Snapshot> latest_;
  std::optional<Config> pending_;
  bool stop_ = false;
  bool finished_ = false;  // the thread has left run()
  std::atomic<std::uint64_t> samples_{0};
  // Sampler thread only: loadwatch_dropped_series_total{collector,reason} and
  // loadwatch_invalid_utf8_total{collector} so far, and what was logged.
  std::map<std::pair<std::string, std::string>, double> dropped_;
  std::map<std::string, double> invalid_utf8_;
  std::set<std::string> logged_;
  // Sampler thread only: the clocks from one sample to the next.
  ClockWatch clocks_;
  double gap_logged_at_ = -1e9;  // monotonic seconds of the last warning of each kind
  double step_logged_at_ = -1e9;
  std::thread thread_;
};

/// A span between two samples longer than this (3 intervals, at least 5 s, monotonic) is a
/// gap: the sampler was not running, so nothing was seen in it.
double sample_gap_seconds(std::chrono::milliseconds interval);

/// Whether a collector is on: the flag wins over the config file, which wins over the default.
bool collector_enabled(const CollectorSpec& spec, const Options& options, const Config& config);

}  // namespace loadwatch
