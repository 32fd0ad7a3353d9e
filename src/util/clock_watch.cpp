#include "util/clock_watch.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace loadwatch {

ClockWatch::Look ClockWatch::look(double wall, double monotonic) {
  Look l;
  if (started_) {
    // A monotonic clock never goes back; a source that does is taken as standing still.
    double moved = std::max(0.0, monotonic - last_monotonic_);
    if (moved > max_gap_) {
      l.gap = moved;
      ++gaps_;
      gap_seconds_ += moved;
    } else {
      awake_ += moved;
    }
    double step = (wall - last_wall_) - moved;
    if (std::fabs(step) > min_step_) {
      l.wall_step = step;
      ++steps_;
    }
  }
  last_wall_ = wall;
  last_monotonic_ = started_ ? std::max(last_monotonic_, monotonic) : monotonic;
  started_ = true;
  l.awake = awake_;
  return l;
}

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace loadwatch
