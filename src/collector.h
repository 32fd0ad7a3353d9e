#pragma once
// The one small interface every collector implements, and the table that lists them.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "metric_sink.h"
#include "options.h"
#include "procfs/fs_root.h"

namespace loadwatch {

/// What the targets collector found this sample; later collectors (network) read it.
struct TargetState {
  std::string name;
  std::string selector;  // "port:2525"
  bool up = false;
  std::vector<pid_t> pids;                  // sorted
  std::vector<std::uint16_t> listen_ports;  // TCP ports the group listens on (network fills)
  // Open fds of each of `pids` as the targets collector counted them this sample, -1 where
  // unknown; the tcp collector's socket owners use them where the kernel gives no count.
  std::vector<long long> fd_counts;
};

/// A pull source's state as the sources collector read it this sample (landing page, API).
struct SourceState {
  std::string name;
  std::string kind;
  bool up = false;
  std::uint64_t scrapes = 0;      // finished so far; 0: the first is still running
  std::string last_error_reason;  // of the last failed scrape ("timeout"...), "" if none yet
  std::string last_error;         // its message
  double last_success = 0;        // unix time of the last successful scrape, 0 = never
};

/// Shared by the collectors of one sample, in table order. Owned by the sampler thread.
struct SampleContext {
  const FsRoot& proc;
  const FsRoot& sys;
  double now = 0;  // unix time of this sample, seconds
  std::vector<TargetState> targets;
  std::vector<SourceState> sources{};  // the sources collector fills it
};

/// Everything a collector may read when it is built or reconfigured.
class HttpServer;
class RunObserver;

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
