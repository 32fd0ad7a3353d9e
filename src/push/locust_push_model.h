#pragma once
// What the Locust listener plugin pushes (push/locust_push_parser.h), kept per source and
// exported as loadwatch_generator_* families: exact cumulative counts, a latency histogram in
// fixed buckets, the user count, and the age of it all from Locust's own timestamp.

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "metrics/metric_sink.h"
#include "push/locust_push_parser.h"
#include "runs/run_observer.h"

namespace loadwatch {

class LocustPushModel {
 public:
  struct Limits {
    /// Sources kept; a new one replaces the least recently pushed if that has been quiet for
    /// evict_after_s, else its pushes are refused (max_sources).
    std::size_t max_sources = 16;
    double evict_after_s = 600;
  };
  /// How old Locust's timestamp of a push may be, beyond the age it gives. The listener reads
  /// its clock in the same gevent step that copies the counts, so the time is the moment they
  /// describe; what is left is the history's float rounding of the age (under 1 us below 16 s).
  /// A wider figure shifts the moment a change point stands for (its middle) before the push,
  /// and a request that ended in that sliver, as one often does just before a push, was counted
  /// on the wrong side of the report's stated window.
  static constexpr double kTimeUncertainty = 1e-6;
  /// Pushes of one source kept for the samples to come (a push a second, a sample a second).
  static constexpr std::size_t kMaxPending = 8;

  LocustPushModel() : LocustPushModel(Limits{}) {}
  explicit LocustPushModel(Limits limits) : limits_(limits) {}

  struct Outcome {
    /// Null when the push was taken; else the reason it was not (max_sources, stale).
    const char* refused = nullptr;
    /// With refused = max_sources: seconds until the quietest source may be evicted.
    double retry_after_s = 0;
  };
  /// Takes one parsed push arriving at `now` (unix seconds).
  Outcome ingest(const LocustPush& push, double now);

  /// Counts a push refused before it reached the model (parse, too_large, ...).
  void count_rejected(const char* reason);

  /// Tells `runs` about the test's user-count steps, at Locust's own timestamps (origin
  /// "locust:SOURCE"). Only when the operator allowed pushes to annotate runs; null (the
  /// default) leaves runs alone. Set before the first push.
  void set_run_observer(RunObserver* runs) { runs_ = runs; }

  /// Adds the generator families of every source and the loadwatch_push_* families.
  /// `now` (unix seconds, the sample's time) dates the figures' age. Called once per sample,
  /// it shows one push per source, every family from that push: the newest that arrived by
  /// `now` (one arriving while the sample is being taken would read younger than the sample,
  /// a negative age), except that the last push of a step is shown before the next step's
  /// replaces it (the listener pushes at once at the stop, often in the same sample
  /// interval as its last regular push).
  void collect(MetricSink& out, double now);

 private:
  struct Source {
    LocustPush last;       // the newest push taken
    double last_push = 0;  // its arrival, unix seconds
    double last_step = 0;  // time of the newest step told to the runs
    /// Pushes no sample has shown yet, oldest first, with their arrival (at most
    /// kMaxPending). A sample shows one of them; see collect().
    std::deque<std::pair<LocustPush, double>> pending;
    std::optional<LocustPush> shown;  // what the last sample showed
  };

  RunObserver* runs_ = nullptr;  // told after mutex_ is released: it may write to disk
  const Limits limits_;
  mutable std::mutex mutex_;
  std::map<std::string, Source, std::less<>> sources_;
  std::uint64_t pushes_ = 0;
  std::map<std::string, std::uint64_t, std::less<>> rejected_;  // by reason
};

}  // namespace loadwatch
