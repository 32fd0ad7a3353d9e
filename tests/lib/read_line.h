#pragma once
// One line from a child process's pipe, waited for with a deadline.

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

namespace loadwatch::test {

/// The next line read from `fd` (without its '\n'), or nothing when `timeout` passes or the
/// pipe closes first.
inline std::optional<std::string> read_line(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char c;
    if (::read(fd, &c, 1) != 1) break;
    if (c == '\n') return out;
    out += c;
  }
  return std::nullopt;
}

}  // namespace loadwatch::test
