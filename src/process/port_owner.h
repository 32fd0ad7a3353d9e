#pragma once
// The processes that own the TCP listener on a port (port: selector).

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "process/process_registry.h"
#include "procfs/fs_root.h"

namespace loadwatch {

/// Inodes of the sockets listening on `port` in net/tcp and net/tcp6 below `proc`. Reads
/// each file only up to its first non-LISTEN row (listeners come first), so a host with
/// 60,000 TIME_WAIT sockets costs no more than one with none.
std::vector<std::uint64_t> listening_inodes(const FsRoot& proc, std::uint16_t port);

/// Finds and follows the holders of a port's listening socket(s). Not thread-safe.
///
/// Once found, the holders are re-verified every sample with one readlink() each
/// (PID/fd/N still "socket:[INODE]", same start time); /proc is searched again only when
/// that fails. While the port has no listener, a sample costs the read of the listening
/// rows. A listener whose owner cannot be found (another user's process without the
/// capability, another PID namespace) is searched again only every kRetrySamples samples.
class PortOwner {
 public:
  explicit PortOwner(std::uint16_t port) : port_(port) {}

  /// Appends the PIDs holding a listener on the port. `denied` counts processes whose fds
  /// could not be listed during a search.
  void resolve(ProcessRegistry& registry, std::vector<pid_t>& out, std::uint64_t& denied);

  std::uint16_t port() const { return port_; }
  /// How many times /proc was searched for the holders (tests check it stays put).
  std::uint64_t searches() const { return searches_; }

  static constexpr std::uint32_t kRetrySamples = 30;

 private:
  struct Holder {
    pid_t pid = 0;
    std::uint64_t starttime = 0;
    int fd = -1;
    std::uint64_t inode = 0;
  };
  bool verify(ProcessRegistry& registry);

  std::uint16_t port_;
  std::vector<Holder> holders_;
  std::vector<std::uint64_t> unresolved_;  // listener inodes whose owner was not found
  std::uint32_t unresolved_gen_ = 0;
  std::uint64_t searches_ = 0;
  std::string link_;
};

}  // namespace loadwatch
