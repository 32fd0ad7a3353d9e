#include "process/run_clock.h"

namespace loadwatch {

RunClock& RunClock::shared() {
  static RunClock clock;
  return clock;
}

void RunClock::tick() {
  ++now_;
  if (now_ % kKeepSamples != 0) return;
  std::erase_if(last_ran_, [&](const auto& kv) { return now_ - kv.second > kKeepSamples; });
}

bool RunClock::ran_after(pid_t pid, std::uint64_t sample) const {
  auto it = last_ran_.find(pid);
  return it != last_ran_.end() && it->second > sample;
}

}  // namespace loadwatch
