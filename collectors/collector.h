#pragma once
// The one small interface every collector implements, and the table that lists them.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/options.h"
#include "metrics/metric_sink.h"
#include "metrics/sample_state.h"
#include "procfs/fs_root.h"

namespace loadwatch {

/// Shared by the collectors of one sample, in table order. Owned by the sampler thread.
struct SampleContext {
  const FsRoot& proc;
  const FsRoot& sys;
  double now = 0;  // unix time of this sample, seconds
  std::vector<TargetState> targets;
  std::vector<SourceState> sources{};  // the sources collector fills it
  /// Monotonic seconds of this sample (steady_clock): the time between two samples, which a
  /// step of the wall clock (`now`) does not move.
  double monotonic = 0;
};

/// Everything a collector may read when it is built or reconfigured.
class HttpServer;
class RunObserver;
class RunBook;

struct CollectorEnv {
  const Options& options;
  const Config& config;
  const FsRoot& proc;
  const FsRoot& sys;
  /// The daemon's HTTP server, for collectors that take pushed data (may be null in tests).
  /// Routes must be added while the collector is built, before the server starts.
  HttpServer* http = nullptr;
  /// Told about load-generator runs that sources, push listeners and textfiles reveal (may be
  /// null). Outlives the collectors.
  RunObserver* runs = nullptr;
  /// The runs themselves, for the collector that exports them (may be null).
  RunBook* run_book = nullptr;
};

/// A collector adds its metrics to the sample. Called only from the sampler thread, one call
/// at a time, so implementations keep state across samples without locks.
/// Throwing std::exception marks the collector failed for this sample
/// (loadwatch_collector_success 0); adding nothing is "no data", a quiet success.
class Collector {
 public:
  virtual ~Collector() = default;
  virtual void collect(SampleContext& ctx, MetricSink& out) = 0;
  /// A new config was loaded (SIGHUP). Keep state that still applies (e.g. counters of
  /// unchanged targets).
  virtual void reconfigure(const CollectorEnv&) {}
};

struct CollectorSpec {
  const char* name;
  const char* help;
  bool enabled_by_default;
  std::function<std::unique_ptr<Collector>(const CollectorEnv&)> make;
};

/// Every collector, in the order a sample runs them (targets first: others read its state).
const std::vector<CollectorSpec>& collector_table();

}  // namespace loadwatch
