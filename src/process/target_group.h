#pragma once
// Accounting of one target's process group across samples: counters that never go down
// when members exit, restarts, and the RSS peak.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace loadwatch {

/// A process identity: a PID alone is reused, (PID, start time) is not.
struct ProcessKey {
  pid_t pid = 0;
  std::uint64_t starttime = 0;  // clock ticks after boot, /proc/PID/stat field 22
  auto operator<=>(const ProcessKey&) const = default;
};

/// The cumulative counters of one process (all monotonic in the kernel).
struct ProcessCounters {
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
  std::uint64_t voluntary_ctxt_switches = 0;
  std::uint64_t nonvoluntary_ctxt_switches = 0;
  std::uint64_t minor_faults = 0;
  std::uint64_t major_faults = 0;
  std::uint64_t read_bytes = 0;
  std::uint64_t write_bytes = 0;

  /// Field-wise maximum: a counter read as 0 once (a partial read) never lowers a total.
  void merge_max(const ProcessCounters& o);
  ProcessCounters& operator+=(const ProcessCounters& o);
  ProcessCounters& operator-=(const ProcessCounters& o);
};

/// What one member looked like in one sample.
struct MemberSample {
  ProcessKey key;
  ProcessCounters counters;
  std::uint64_t rss_bytes = 0;
  std::uint64_t vsize_bytes = 0;
  std::uint64_t swap_bytes = 0;
  std::uint64_t open_fds = 0;
  std::optional<std::uint64_t> fd_limit;  // soft RLIMIT_NOFILE; nullopt unknown/unlimited
  std::uint64_t threads = 0;
};

/// The group as read in one sample. `exited` are members seen as zombies: their final
/// counters count, they themselves no longer do.
struct GroupSample {
  std::vector<MemberSample> live;
  std::vector<MemberSample> exited;
};

/// The values exported for a target after an update.
struct GroupTotals {
  bool up = false;
  std::size_t processes = 0;
  std::uint64_t restarts = 0;
  ProcessCounters counters;  // group totals: retired members + live members
  std::uint64_t rss_bytes = 0;
  std::uint64_t rss_peak_bytes = 0;  // since the target (re)started; 0 before it ever was up
  std::uint64_t vsize_bytes = 0;
  std::uint64_t swap_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t threads = 0;
  /// The member closest to its fd limit: its soft limit and open/limit ratio.
  std::optional<std::uint64_t> max_fds;
  std::optional<double> fd_usage_ratio;
  std::optional<std::uint64_t> oldest_starttime;  // ticks after boot
};

/// Accumulates samples of one target. Not thread-safe; owned by the targets collector.
///
/// Counter semantics: each member's counters are kept as last seen (field-wise max); when a
/// member leaves the group (exits, or stops matching) its values move to a retired base, so
/// the totals never decrease. A member that leaves and comes back (same key) has its retired
/// share taken back, so it is not counted twice.
/// Restarts: the target came up again after being down (not its first start), or every
/// process was replaced between two samples (no key in common), which is how a restart
/// faster than one sample interval shows.
class TargetGroup {
 public:
  void update(const GroupSample& sample);
  const GroupTotals& totals() const { return totals_; }

  /// Members that left but may come back are remembered this many samples.
  static constexpr std::uint32_t kDepartedKeepSamples = 3600;

 private:
  struct Departed {
    ProcessCounters counters;
    std::uint32_t left_at = 0;
  };
  using Counted = std::pair<ProcessKey, ProcessCounters>;
  std::uint32_t gen_ = 0;
  // Last-seen counters of live members, sorted by key: rebuilt every sample, so a vector
  // (one allocation kept across samples) rather than a node per member.
  std::vector<Counted> live_;
  std::vector<Counted> next_;                // this sample's, built into and swapped with live_
  std::map<ProcessKey, Departed> departed_;  // left (or exited), counted in retired_
  ProcessCounters retired_;
  bool ever_up_ = false;
  GroupTotals totals_;
};

}  // namespace loadwatch
