#pragma once
// The fds loadwatch keeps open between samples to read processes cheaply (the registry's
// per-process handles, the tcp collector's /proc/PID/fd directories): one budget for all of
// them, so that together they never take the fds that HTTP connections, sources and listeners
// need, whatever RLIMIT_NOFILE is (docs/limits.md).

#include <atomic>

namespace loadwatch {

/// Counts kept fds against a limit derived from the soft RLIMIT_NOFILE, read again by
/// refresh() once a sample (the targets collector raises it at start; prlimit can change
/// it): half of what is left after kReservedFds for the rest of the daemon, at most kMaxKept. At
/// `ulimit -n 128` the limit is 0. Past the limit, readers open, read and close each time: slower,
/// the same results. Thread-safe.
class FdBudget {
 public:
  static constexpr long kReservedFds = 256;
  static constexpr long kMaxKept = 1L << 16;

  /// The daemon's budget, shared by every collector.
  static FdBudget& shared();

  /// `fixed_limit` >= 0: that limit instead of one from RLIMIT_NOFILE (tests).
  explicit FdBudget(long fixed_limit = -1);
  FdBudget(const FdBudget&) = delete;
  FdBudget& operator=(const FdBudget&) = delete;

  /// Reserves one kept fd; false when the budget is used up (logged once at info).
  bool take();
  /// Returns one taken by take().
  void give() { used_.fetch_sub(1, std::memory_order_relaxed); }

  long used() const { return used_.load(std::memory_order_relaxed); }
  long limit() const { return limit_.load(std::memory_order_relaxed); }
  /// Re-reads RLIMIT_NOFILE. Fds kept over a lowered limit stay kept (their owners give
  /// them back as processes exit); only new ones are refused.
  void refresh();

 private:
  long fixed_limit_;
  std::atomic<long> limit_{0};
  std::atomic<long> used_{0};
  std::atomic<bool> exhausted_logged_{false};
};

}  // namespace loadwatch
