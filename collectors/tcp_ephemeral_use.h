#pragma once
// Ephemeral-port use per destination: how many local sockets on a port of
// net.ipv4.ip_local_port_range point at each remote ip:port. This is the figure behind
// loadwatch_tcp_ephemeral_port_usage_ratio: a client runs out of ports toward one
// destination (the kernel needs a unique 4-tuple), not host-wide. Only counts are kept, no
// socket records, so 60,000 TIME_WAIT sockets toward one SUT cost one map entry.

#include <array>
#include <cstdint>
#include <unordered_map>

#include "procfs/tcp_socket.h"

namespace loadwatch {

/// Counts per (remote address, remote port). Not thread-safe; reused sample after sample
/// (reset() keeps its memory).
class EphemeralUse {
 public:
  /// Forgets every count and sets the ephemeral range [lo, hi] (empty when lo > hi).
  void reset(std::uint32_t lo, std::uint32_t hi);

  /// Counts `s` when its local port is in the range, it has a peer and it is not a
  /// listener. An IPv4-mapped IPv6 peer (::ffff:a.b.c.d) counts with the IPv4 one: both
  /// draw from the same port space.
  void add(const TcpSocket& s);

  std::uint32_t lo() const { return lo_; }
  std::uint32_t hi() const { return hi_; }
  /// The largest count toward one destination.
  std::uint64_t max() const { return max_; }
  /// The largest count toward one destination when `other`'s counts are added to ours
  /// destination by destination (two sets of sockets counted apart, e.g. at other times).
  std::uint64_t max_with(const EphemeralUse& other) const;

 private:
  struct Dest {
    std::uint8_t family;
    std::uint16_t port;
    std::array<std::uint8_t, 16> addr;
    bool operator==(const Dest& o) const {
      return family == o.family && port == o.port && addr == o.addr;
    }
  };
  struct DestHash {
    std::size_t operator()(const Dest& d) const;
  };

  std::uint32_t lo_ = 1, hi_ = 0;
  std::unordered_map<Dest, std::uint64_t, DestHash> count_;
  std::uint64_t max_ = 0;
};

}  // namespace loadwatch
