#include "process/fd_budget.h"

#include <sys/resource.h>

#include <algorithm>

#include "util/log.h"

namespace loadwatch {

FdBudget& FdBudget::shared() {
  static FdBudget budget;
  return budget;
}

FdBudget::FdBudget(long fixed_limit) : fixed_limit_(fixed_limit) { refresh(); }

void FdBudget::refresh() {
  if (fixed_limit_ >= 0) {
    limit_.store(fixed_limit_, std::memory_order_relaxed);
    return;
  }
  struct rlimit rl {};
  long soft = 1024;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    soft = rl.rlim_cur == RLIM_INFINITY ? kMaxKept * 4
                                        : static_cast<long>(std::min<rlim_t>(rl.rlim_cur, 1 << 20));
  }
  limit_.store(std::clamp((soft - kReservedFds) / 2, 0L, kMaxKept), std::memory_order_relaxed);
}

bool FdBudget::take() {
  const long max = limit();
  long used = used_.load(std::memory_order_relaxed);
  while (used < max) {
    if (used_.compare_exchange_weak(used, used + 1, std::memory_order_relaxed)) return true;
  }
  if (!exhausted_logged_.exchange(true, std::memory_order_relaxed)) {
    spdlog::info(
        "all {} kept fds in use (half the soft RLIMIT_NOFILE less {}); further processes are "
        "read with open and close each sample, which costs more CPU",
        max, kReservedFds);
  }
  return false;
}

}  // namespace loadwatch
