#pragma once
// CPU-time clocks for the C++ benches: CPU spent, not wall time, since these machines are
// shared and noisy.
#include <time.h>

namespace loadwatch::bench {

/// CPU time of the calling thread (user + system), seconds.
inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

/// CPU time of the whole process (every thread), seconds.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace loadwatch::bench
