#pragma once
// Per-port socket states, accept queues and ephemeral-port usage of one sample, counted from
// TcpSocket records whichever reader produced them. Pure computation, no I/O.

#include <array>
#include <cstdint>
#include <vector>

#include "collectors/tcp_ephemeral_use.h"
#include "procfs/tcp_socket.h"

namespace loadwatch {

/// Figures for one watched port.
struct TcpPortStats {
  std::uint16_t port = 0;
  std::array<std::uint64_t, kTcpStateCount> local{};   // sockets with this local port
  std::array<std::uint64_t, kTcpStateCount> remote{};  // sockets with this remote port
  /// Accept queue of the listener on this port with the longest queue (several listeners
  /// share a port with SO_REUSEPORT, or listen on different addresses or families; an
  /// overflow happens per listener, so the fullest one is the figure that can warn).
  bool listening = false;
  std::uint32_t queue_length = 0;
  std::uint32_t queue_max = 0;
  bool queue_max_known = false;  // false when read from /proc/net/tcp (no such column)
};

/// Counts sockets into per-port figures and ephemeral-port usage. Not thread-safe; reused
/// sample after sample (begin() clears it, keeping its memory).
class TcpTally {
 public:
  TcpTally();

  /// Starts a sample watching `ports` (0 and duplicates ignored) with the ephemeral range
  /// [eph_lo, eph_hi] of net.ipv4.ip_local_port_range.
  void begin(const std::vector<std::uint16_t>& ports, std::uint32_t eph_lo, std::uint32_t eph_hi);

  /// Adds one socket: per-port states (local and remote side), listener queues, and, when
  /// its local port is in the ephemeral range and it is neither a listener nor TIME_WAIT,
  /// one use of that port toward its remote ip:port (see EphemeralUse::add). TIME_WAIT
  /// sockets are counted apart, on their own cadence, and come in through merge_timewait().
  void add(const TcpSocket& s);

  /// Adds the ephemeral use of the TIME_WAIT sockets, counted apart: ephemeral_max() becomes
  /// the largest per-destination sum of the add()ed sockets and `timewait`. Call after the
  /// sample's last add(); a later call with fresher counts replaces the earlier ones.
  void merge_timewait(const EphemeralUse& timewait) { eph_max_ = live_.max_with(timewait); }

  /// Forgets the listeners (LISTEN counts and queues) of every watched port, keeping the
  /// rest, so that fresh listeners can be add()ed between two full walks.
  void reset_listeners();

  bool watched(std::uint16_t port) const { return slot_[port] != kNoSlot; }
  const std::vector<TcpPortStats>& ports() const { return ports_; }  // ascending port order
  /// Size of the ephemeral range (hi - lo + 1; 0 when the range is empty).
  std::uint32_t ephemeral_ports() const { return eph_hi_ >= eph_lo_ ? eph_hi_ - eph_lo_ + 1 : 0; }
  /// The largest number of sockets toward one remote ip:port using an ephemeral local port
  /// (TIME_WAIT included once merge_timewait() was called).
  std::uint64_t ephemeral_max() const { return eph_max_; }
  /// ephemeral_max() / ephemeral_ports(), 0 for an empty range.
  double ephemeral_ratio() const;

 private:
  static constexpr std::uint16_t kNoSlot = 0xffff;

  std::vector<std::uint16_t> slot_;  // port -> index in ports_, 65,536 entries
  std::vector<TcpPortStats> ports_;
  std::uint32_t eph_lo_ = 0, eph_hi_ = 0;
  EphemeralUse live_;  // every state but TIME_WAIT
  std::uint64_t eph_max_ = 0;
};

}  // namespace loadwatch
