#pragma once
// The samples as the targets collector counts them, and the last sample each member was seen
// to run in. The tcp collector walks the fd tables only every few samples (docs/tcp.md,
// "Deferred walks"); its socket owners ask here whether a process ran at any sample since
// their last walk, and count their rolling check's spans in samples, not in walks.

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>

namespace loadwatch {

/// Used only from the sampler thread.
class RunClock {
 public:
  /// Runs not asked about within this many samples are forgotten.
  static constexpr std::uint64_t kKeepSamples = 64;

  /// The daemon's clock, which the targets collector keeps.
  static RunClock& shared();

  /// A sample begins. Called once a sample by whoever reads the processes.
  void tick();
  /// `pid` ran in this sample (its schedstat moved, or it was read in full).
  void ran(pid_t pid) { last_ran_[pid] = now_; }

  /// Samples begun so far; 0 while nobody keeps the clock.
  std::uint64_t now() const { return now_; }
  /// Whether `pid` ran in a sample after `sample` (as far as kKeepSamples back).
  bool ran_after(pid_t pid, std::uint64_t sample) const;

 private:
  std::uint64_t now_ = 0;
  std::unordered_map<pid_t, std::uint64_t> last_ran_;
};

}  // namespace loadwatch
