#pragma once
// TCP socket dumps over netlink sock_diag (NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY), with the
// kernel-side state mask and an INET_DIAG_REQ_BYTECODE port filter so that the kernel copies
// only the sockets asked for. Kernel structures: linux/inet_diag.h, linux/sock_diag.h.
//
// Why libmnl and not libnl-idiag-3: libnl's idiag module turns every reply message into a
// heap-allocated, ref-counted `struct idiagnl_msg` (plus nl_addr objects for the addresses)
// and files it in an nl_cache. Measured here with 30,000 TIME_WAIT sockets, one AF_INET dump
// of all of them: idiagnl_msg_alloc_cache() + nl_cache_foreach() 129-274 ms CPU, this reader
// 8.4-12 ms (kernel walk and copy included). libmnl only frames messages: struct
// inet_diag_msg is read in place from one reused 32 KiB receive buffer, so a dump allocates
// nothing per socket and its user-space cost stays below the kernel's own walk.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "procfs/tcp_socket.h"

struct mnl_socket;

namespace loadwatch {

/// Builds inet_diag bytecode accepting a socket whose local or remote port is one of
/// `ports` (ports are deduplicated; 0 is ignored). Empty `ports` gives empty bytecode (no
/// filter). Layout follows ss(8)'s "a or b" compilation: each test is a 2-op S_EQ / D_EQ
/// whose "no" jumps past a following JMP into the next test, and whose "yes" falls onto the
/// JMP that skips to the end (accept). A netlink attribute holds at most 65,535 bytes and a
/// jump 16 bits, so more than kMaxFilterPorts ports throw std::length_error.
inline constexpr std::size_t kMaxFilterPorts = 2700;
std::vector<std::uint8_t> build_port_filter(const std::vector<std::uint16_t>& ports);

/// Builds inet_diag bytecode accepting a socket whose local port is in [lo, hi] (the
/// ephemeral range, net.ipv4.ip_local_port_range), as ss(8) compiles "sport >= :lo and
/// sport <= :hi": an S_GE test whose "no" jumps 4 bytes past the end (reject), then an S_LE
/// test whose "yes" ends the program (accept). 16 bytes. Empty (no filter) when lo > hi.
/// Ops and layout: linux/inet_diag.h (INET_DIAG_BC_S_GE / INET_DIAG_BC_S_LE, each followed
/// by a second inet_diag_bc_op whose `no` holds the port in host byte order).
std::vector<std::uint8_t> build_source_range_filter(std::uint16_t lo, std::uint16_t hi);

/// Runs bytecode on a socket's ports as the kernel's inet_diag_bc_run() does, for the ops
/// build_port_filter() and build_source_range_filter() emit (NOP, JMP, S_EQ, D_EQ,
/// S_GE/LE, D_GE/LE). For tests.
bool run_port_filter(std::span<const std::uint8_t> bytecode, std::uint16_t sport,
                     std::uint16_t dport);

/// Checks bytecode the way the kernel's inet_diag_bc_audit() does (jump sizes aligned and in
/// range, every "no" target on an op boundary); the kernel answers EINVAL otherwise.
bool audit_port_filter(std::span<const std::uint8_t> bytecode);

/// Parses a sequence of netlink messages holding inet_diag replies (one recv buffer, or a
/// captured dump: concatenated buffers are still a valid sequence). Calls `visitor` for each
/// SOCK_DIAG_BY_FAMILY message. Returns 1 when NLMSG_DONE was seen, 0 when more messages
/// are expected, or -errno for an NLMSG_ERROR reply or a malformed buffer (-EBADMSG).
/// Replies to SOCK_DIAG_BY_FAMILY and to TCPDIAG_GETSOCK have the same payload.
int parse_sock_diag_messages(std::span<const std::uint8_t> bytes, TcpSocketVisitor& visitor);

/// One NETLINK_SOCK_DIAG socket. Not thread-safe; owned by one collector, which calls it
/// from the sampler thread. Holds one fd and a 32 KiB receive buffer, reused by every dump.
class SockDiag {
 public:
  /// Opens and binds the netlink socket; returns nullptr and sets `err` (errno) on failure,
  /// e.g. EAFNOSUPPORT under systemd RestrictAddressFamilies= or a seccomp filter.
  static std::unique_ptr<SockDiag> open(int& err);
  ~SockDiag();
  SockDiag(const SockDiag&) = delete;
  SockDiag& operator=(const SockDiag&) = delete;

  /// Dumps the TCP sockets of `family` (AF_INET or AF_INET6, or AF_UNSPEC for both in one
  /// kernel walk through the original TCPDIAG_GETSOCK request) whose state bit is set in
  /// `states` (tcp_state_bit), filtered by `bytecode` when not empty. Returns 0 or an errno
  /// (EPERM/EACCES when an LSM refuses the dump, EINVAL for bytecode the kernel rejects).
  /// On error the visitor may already have seen part of the dump.
  int dump(std::uint8_t family, std::uint32_t states, std::span<const std::uint8_t> bytecode,
           TcpSocketVisitor& visitor);

  /// When set, every received buffer is appended to `*capture` (to record fixtures).
  void set_capture(std::string* capture) { capture_ = capture; }

 private:
  explicit SockDiag(mnl_socket* nl);
  mnl_socket* nl_;
  unsigned portid_ = 0;
  unsigned seq_ = 0;
  std::vector<std::uint8_t> buf_;
  std::string* capture_ = nullptr;
};

}  // namespace loadwatch
