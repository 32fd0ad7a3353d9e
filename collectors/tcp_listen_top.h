#pragma once
// The host-wide fullest listeners of one sample: the few TCP listeners whose accept queues
// are fullest relative to their limit, whatever port and process. An overflow on a port
// nobody watches still shows which listener it is. Pure computation, no I/O.

#include <cstdint>
#include <vector>

#include "procfs/tcp_socket.h"

namespace loadwatch {

/// One listener with a non-empty accept queue.
struct TopListener {
  std::uint16_t port = 0;
  std::uint32_t queue_length = 0;
  std::uint32_t queue_max = 0;
  bool queue_max_known = false;  // false when read from /proc/net/tcp (no such column)
  std::uint64_t inode = 0;       // socket inode, to name the owning process; 0 when orphaned
};

/// Keeps the fullest listeners, one per port (several listeners share a port with
/// SO_REUSEPORT or per address family; the fullest speaks for the port, as in the per-port
/// queue gauges), at most kMax. Not thread-safe; reused sample after sample.
class ListenTop {
 public:
  static constexpr std::size_t kMax = 5;

  /// Starts a sample: forgets the last one's listeners.
  void clear() { all_.clear(); }

  /// Offers one socket: only LISTEN sockets with a non-empty accept queue are kept.
  void add(const TcpSocket& s);

  /// The fullest listeners, fullest first: by length over limit when every limit is known
  /// (a limit of 0 counts as 1), else by length alone; ties by length, then port. Distinct
  /// ports, at most kMax.
  const std::vector<TopListener>& top();

 private:
  std::vector<TopListener> all_;
  std::vector<TopListener> top_;
};

}  // namespace loadwatch
