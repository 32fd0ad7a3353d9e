#pragma once
// Wall-clock time as Prometheus counts it: seconds since the Unix epoch.

#include <chrono>

namespace loadwatch {

/// Now, in seconds since the Unix epoch, with sub-second precision (system_clock).
inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace loadwatch
