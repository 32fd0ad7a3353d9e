#pragma once
// Follows the wall clock and the monotonic clock from one look to the next, so that a figure
// measured over time does not move when time itself does something odd.

#include <cstdint>

namespace loadwatch {

/// Two things can happen between two looks:
/// - a gap: the monotonic clock moved more than `max_gap` seconds. The process or its host
///   was stopped (SIGSTOP, a VM paused, a stall), so nothing could be seen in that span.
/// - a step: the wall clock moved more than `min_step` seconds apart from the monotonic
///   clock. It was set (by hand, by NTP, or again after a VM resumed), so wall-clock
///   timestamps on either side of it are that far apart from each other.
/// awake() is the monotonic clock less the gaps: the time there was to see things. Not
/// thread-safe; the caller's lock guards it.
class ClockWatch {
 public:
  explicit ClockWatch(double max_gap_seconds, double min_step_seconds = 1.0)
      : max_gap_(max_gap_seconds), min_step_(min_step_seconds) {}

  struct Look {
    double awake = 0;      // awake seconds since the first look
    double gap = 0;        // the span left out of awake at this look (0: none)
    double wall_step = 0;  // wall clock minus monotonic movement at this look (0: none)
  };
  /// Both clocks in seconds, read together. The first look only sets the start.
  Look look(double wall, double monotonic);

  double awake() const { return awake_; }
  std::uint64_t gaps() const { return gaps_; }
  double gap_seconds() const { return gap_seconds_; }
  std::uint64_t steps() const { return steps_; }

 private:
  double max_gap_, min_step_;
  bool started_ = false;
  double last_wall_ = 0, last_monotonic_ = 0;
  double awake_ = 0;
  std::uint64_t gaps_ = 0, steps_ = 0;
  double gap_seconds_ = 0;
};

/// The monotonic clock (CLOCK_MONOTONIC, std::chrono::steady_clock), in seconds.
double monotonic_seconds();

}  // namespace loadwatch
