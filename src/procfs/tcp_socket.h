#pragma once
// One TCP socket as both readers report it (netlink sock_diag and /proc/net/tcp{,6}), so the
// counting code does not care where a socket came from.

#include <array>
#include <cstdint>
#include <string_view>

namespace loadwatch {

/// Kernel TCP states, numbered as in include/net/tcp_states.h (the same numbers appear in
/// inet_diag_msg.idiag_state and in the "st" column of /proc/net/tcp). TCP_NEW_SYN_RECV (12)
/// never reaches user space: request sockets are reported as SYN_RECV by both interfaces.
enum TcpState : std::uint8_t {
  kTcpEstablished = 1,
  kTcpSynSent = 2,
  kTcpSynRecv = 3,
  kTcpFinWait1 = 4,
  kTcpFinWait2 = 5,
  kTcpTimeWait = 6,
  kTcpClose = 7,
  kTcpCloseWait = 8,
  kTcpLastAck = 9,
  kTcpListen = 10,
  kTcpClosing = 11,
};
inline constexpr int kTcpStateCount = 12;  // index 0 unused; 1..11 valid

/// Lower-case kernel name of a state ("time_wait"), the state label's value;
/// empty for numbers outside 1..11.
std::string_view tcp_state_name(unsigned state);

/// Bit of `state` in an inet_diag idiag_states mask (TCPF_* = 1 << TCP_*).
constexpr std::uint32_t tcp_state_bit(unsigned state) { return 1u << state; }
/// All user-visible states, 1..11.
inline constexpr std::uint32_t kAllTcpStates = ((1u << kTcpStateCount) - 1) & ~1u;

/// A socket record. Addresses are in network byte order as the kernel keeps them: IPv4 uses
/// the first 4 bytes. Ports are host byte order. Plain value, no ownership.
struct TcpSocket {
  std::uint8_t family = 0;  // AF_INET or AF_INET6
  std::uint8_t state = 0;   // TcpState as reported (for a time-wait mini socket: its substate)
  /// True for a time-wait mini socket (struct inet_timewait_sock): sock_diag and /proc/net/tcp
  /// both mark it with timer 3. Its reported state is TIME_WAIT or, for a FIN_WAIT2 socket
  /// the kernel already moved to the time-wait table (tcp_time_wait(sk, TCP_FIN_WAIT2, ..)
  /// after close()), FIN_WAIT2. Needed because /proc/net/sockstat "tw" counts all of them.
  bool timewait_minisock = false;
  std::uint16_t sport = 0;
  std::uint16_t dport = 0;
  std::array<std::uint8_t, 16> saddr{};
  std::array<std::uint8_t, 16> daddr{};
  /// LISTEN: current accept-queue length (sk_ack_backlog); others: bytes not yet read.
  std::uint32_t rqueue = 0;
  /// LISTEN via netlink: accept-queue limit (sk_max_ack_backlog); /proc/net/tcp has no such
  /// column (its tx_queue is 0 for a listener), so procfs readers leave it 0 and set
  /// `wqueue_known` false.
  std::uint32_t wqueue = 0;
  bool wqueue_known = true;
  std::uint32_t uid = 0;
  std::uint64_t inode = 0;  // socket inode ("socket:[N]" in /proc/PID/fd); 0 when orphaned
};

/// Receives sockets from a reader, one call per socket; the record is only valid during the
/// call (readers reuse one record, so reading allocates nothing per socket).
class TcpSocketVisitor {
 public:
  virtual ~TcpSocketVisitor() = default;
  virtual void on_socket(const TcpSocket& s) = 0;
};

}  // namespace loadwatch
