#pragma once
// Waiting in tests: poll the condition that is awaited, with a deadline, rather than sleep a
// fixed time and hope it holds by then (too short on a loaded machine, too long elsewhere).

#include <chrono>
#include <thread>

namespace loadwatch::test {

/// Calls `condition` every `interval` until it returns true (then true) or `timeout` has passed
/// (then its last answer).
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                std::chrono::milliseconds interval = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(interval);
  }
  return condition();
}

}  // namespace loadwatch::test
