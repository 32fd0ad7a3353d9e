#include "procfs/sock_diag.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

namespace loadwatch {

namespace {

constexpr std::size_t kOp = sizeof(inet_diag_bc_op);  // 4 bytes
constexpr std::size_t kPortTest = 2 * kOp;  // op + {0, 0, port}: how S_EQ/D_EQ carry a port

void put_op(std::vector<std::uint8_t>& bc, std::uint8_t code, std::size_t yes, std::size_t no) {
  inet_diag_bc_op op{};
  op.code = code;
  op.yes = static_cast<unsigned char>(yes);
  op.no = static_cast<unsigned short>(no);
  const auto* p = reinterpret_cast<const std::uint8_t*>(&op);
  bc.insert(bc.end(), p, p + kOp);
}

inet_diag_bc_op op_at(std::span<const std::uint8_t> bc, std::size_t off) {
  inet_diag_bc_op op{};
  std::memcpy(&op, bc.data() + off, kOp);
  return op;
}

}  // namespace

std::vector<std::uint8_t> build_port_filter(const std::vector<std::uint16_t>& ports) {
  std::vector<std::uint16_t> uniq;
  std::unordered_set<std::uint16_t> seen;
  for (auto p : ports) {
    if (p != 0 && seen.insert(p).second) uniq.push_back(p);
  }
  std::vector<std::uint8_t> bc;
  if (uniq.empty()) return bc;
  if (uniq.size() > kMaxFilterPorts) {
    throw std::length_error("inet_diag port filter: more than 2700 ports");
  }
  // Tests t1 .. tm (sport == p, dport == p for every port), joined as ss(8) joins "a or b":
  //   t1 JMP t2 JMP ... tm
  // A test's "yes" (8) lands on the JMP after it, which always takes "no" and jumps to the
  // very end: the program "falls off" with len == 0, which inet_diag_bc_run() reads as
  // accept. A test's "no" (12) skips itself and its JMP, landing on the next test; the last
  // test's "no" (12) lands 4 bytes past the end, which the kernel reads as reject.
  const std::size_t tests = 2 * uniq.size();
  const std::size_t total = tests * kPortTest + (tests - 1) * kOp;
  bc.reserve(total);
  for (std::size_t i = 0; i < tests; ++i) {
    const std::uint16_t port = uniq[i / 2];
    put_op(bc, i % 2 == 0 ? INET_DIAG_BC_S_EQ : INET_DIAG_BC_D_EQ, kPortTest, kPortTest + kOp);
    put_op(bc, 0, 0, port);  // the port is compared in host byte order (entry->sport)
    if (i + 1 < tests) {
      const std::size_t to_end = total - bc.size();
      put_op(bc, INET_DIAG_BC_JMP, kOp, to_end);
    }
  }
  return bc;
}

std::vector<std::uint8_t> build_source_range_filter(std::uint16_t lo, std::uint16_t hi) {
  std::vector<std::uint8_t> bc;
  if (lo > hi) return bc;
  // t1 = S_GE lo: "yes" (8) lands on t2; "no" (20) lands 4 bytes past the end: reject.
  // t2 = S_LE hi: "yes" (8) ends the program with len == 0: accept; "no" (12): reject.
  const std::size_t total = 2 * kPortTest;
  bc.reserve(total);
  put_op(bc, INET_DIAG_BC_S_GE, kPortTest, total + kOp);
  put_op(bc, 0, 0, lo);
  put_op(bc, INET_DIAG_BC_S_LE, kPortTest, kPortTest + kOp);
  put_op(bc, 0, 0, hi);
  return bc;
}

bool run_port_filter(std::span<const std::uint8_t> bc, std::uint16_t sport, std::uint16_t dport) {
  // Mirrors inet_diag_bc_run() (net/ipv4/inet_diag.c).
  long len = static_cast<long>(bc.size());
  std::size_t off = 0;
  while (len > 0) {
    if (off + kOp > bc.size()) return false;
    const inet_diag_bc_op op = op_at(bc, off);
    auto arg = [&]() -> unsigned {
      return off + kPortTest <= bc.size() ? op_at(bc, off + kOp).no : 0u;
    };
    bool yes = true;
    switch (op.code) {
      case INET_DIAG_BC_NOP:
        break;
      case INET_DIAG_BC_JMP:
        yes = false;
        break;
      case INET_DIAG_BC_S_EQ:
        yes = sport == arg();
        break;
      case INET_DIAG_BC_S_GE:
        yes = sport >= arg();
        break;
      case INET_DIAG_BC_S_LE:
        yes = sport <= arg();
        break;
      case INET_DIAG_BC_D_EQ:
        yes = dport == arg();
        break;
      case INET_DIAG_BC_D_GE:
        yes = dport >= arg();
        break;
      case INET_DIAG_BC_D_LE:
        yes = dport <= arg();
        break;
      default:
        return false;
    }
    const std::size_t step = yes ? op.yes : op.no;
    if (step == 0) return false;  // the kernel's audit forbids it; it would loop forever
    len -= static_cast<long>(step);
    off += step;
  }
  return len == 0;
}

bool audit_port_filter(std::span<const std::uint8_t> bc) {
  // Mirrors inet_diag_bc_audit() and valid_cc() (net/ipv4/inet_diag.c) for port ops.
  const long bc_len = static_cast<long>(bc.size());
  auto valid_cc = [&](long cc) {
    long len = bc_len;
    std::size_t off = 0;
    while (len >= 0) {
      if (cc > len) return false;
      if (cc == len) return true;
      if (off + kOp > bc.size()) return false;
      const inet_diag_bc_op op = op_at(bc, off);
      if (op.yes < 4 || (op.yes & 3)) return false;
      len -= op.yes;
      off += op.yes;
    }
    return false;
  };
  long len = bc_len;
  std::size_t off = 0;
  while (len > 0) {
    if (off + kOp > bc.size()) return false;
    const inet_diag_bc_op op = op_at(bc, off);
    long min_len = static_cast<long>(kOp);
    switch (op.code) {
      case INET_DIAG_BC_S_EQ:
      case INET_DIAG_BC_S_GE:
      case INET_DIAG_BC_S_LE:
      case INET_DIAG_BC_D_EQ:
      case INET_DIAG_BC_D_GE:
      case INET_DIAG_BC_D_LE:
        if (len < static_cast<long>(kPortTest)) return false;  // valid_port_comparison()
        min_len = kPortTest;
        break;
      case INET_DIAG_BC_JMP:
      case INET_DIAG_BC_NOP:
        break;
      default:
        return false;
    }
    if (op.code != INET_DIAG_BC_NOP) {
      if (op.no < min_len || op.no > len + 4 || (op.no & 3)) return false;
      if (op.no < len && !valid_cc(len - op.no)) return false;
    }
    if (op.yes < min_len || op.yes > len + 4 || (op.yes & 3)) return false;
    off += op.yes;
    len -= op.yes;
  }
  return len == 0;
}

namespace {

int parse_messages(std::span<const std::uint8_t> bytes, TcpSocketVisitor& visitor,
                   unsigned expected_seq) {
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % NLMSG_ALIGNTO != 0) return -EINVAL;
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(bytes.data());
  int len = static_cast<int>(bytes.size());
  TcpSocket s;
  while (mnl_nlmsg_ok(nlh, len)) {
    // Left-overs of an earlier dump that was abandoned would carry another sequence number.
    const bool ours = expected_seq == 0 || nlh->nlmsg_seq == expected_seq;
    const std::size_t payload = mnl_nlmsg_get_payload_len(nlh);
    if (ours && nlh->nlmsg_type == NLMSG_DONE) {
      // The dump's final status travels in NLMSG_DONE's payload (netlink_dump_done()).
      int status = 0;
      if (payload >= sizeof status) std::memcpy(&status, mnl_nlmsg_get_payload(nlh), sizeof status);
      return status < 0 ? status : 1;
    }
    if (ours && nlh->nlmsg_type == NLMSG_ERROR) {
      nlmsgerr err{};
      if (payload < sizeof err) return -EBADMSG;
      std::memcpy(&err, mnl_nlmsg_get_payload(nlh), sizeof err);
      if (err.error != 0) return err.error;  // an ack (0) is not an error
    } else if (ours &&
               (nlh->nlmsg_type == SOCK_DIAG_BY_FAMILY || nlh->nlmsg_type == TCPDIAG_GETSOCK)) {
      inet_diag_msg m{};
      if (payload < sizeof m) return -EBADMSG;
      std::memcpy(&m, mnl_nlmsg_get_payload(nlh), sizeof m);
      s.family = m.idiag_family;
      s.state = m.idiag_state;
      // inet_twsk_diag_fill() reports time-wait mini sockets with idiag_timer 3; full sockets
      // use 0 (none), 1 (retransmit), 2 (keepalive) or 4 (zero-window probe).
      s.timewait_minisock = m.idiag_timer == 3;
      s.sport = ntohs(m.id.idiag_sport);
      s.dport = ntohs(m.id.idiag_dport);
      std::memcpy(s.saddr.data(), m.id.idiag_src, 16);
      std::memcpy(s.daddr.data(), m.id.idiag_dst, 16);
      // tcp_diag_get_info(): for LISTEN, rqueue = sk_ack_backlog, wqueue = sk_max_ack_backlog.
      s.rqueue = m.idiag_rqueue;
      s.wqueue = m.idiag_wqueue;
      s.wqueue_known = true;
      s.uid = m.idiag_uid;
      s.inode = m.idiag_inode;
      visitor.on_socket(s);
    }
    nlh = mnl_nlmsg_next(nlh, &len);
  }
  return len == 0 ? 0 : -EBADMSG;  // a truncated trailing message
}

}  // namespace

int parse_sock_diag_messages(std::span<const std::uint8_t> bytes, TcpSocketVisitor& visitor) {
  return parse_messages(bytes, visitor, 0);
}

std::unique_ptr<SockDiag> SockDiag::open(int& err) {
  mnl_socket* nl = mnl_socket_open2(NETLINK_SOCK_DIAG, SOCK_CLOEXEC);
  if (nl == nullptr) {
    err = errno;
    return nullptr;
  }
  if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    err = errno;
    mnl_socket_close(nl);
    return nullptr;
  }
  // A safety net: the kernel always answers a dump, but a sampler must never block forever.
  timeval tv{5, 0};
  setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  err = 0;
  return std::unique_ptr<SockDiag>(new SockDiag(nl));
}

SockDiag::SockDiag(mnl_socket* nl)
    : nl_(nl),
      portid_(mnl_socket_get_portid(nl)),
      buf_(32768) {}  // dump skbs are at most 32 KiB (netlink_recvmsg())

SockDiag::~SockDiag() {
  if (nl_ != nullptr) mnl_socket_close(nl_);
}

int SockDiag::dump(std::uint8_t family, std::uint32_t states,
                   std::span<const std::uint8_t> bytecode, TcpSocketVisitor& visitor) {
  if (nl_ == nullptr) {
    // A previous dump was abandoned half-way: the kernel would answer EBUSY on that socket
    // until the old dump is drained (netlink_dump_start()), so it was closed; open afresh.
    nl_ = mnl_socket_open2(NETLINK_SOCK_DIAG, SOCK_CLOEXEC);
    if (nl_ == nullptr) return errno;
    if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
      int err = errno;
      mnl_socket_close(nl_);
      nl_ = nullptr;
      return err;
    }
    timeval tv{5, 0};
    setsockopt(mnl_socket_get_fd(nl_), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    portid_ = mnl_socket_get_portid(nl_);
  }
  std::vector<std::uint8_t> req(
      MNL_ALIGN(sizeof(nlmsghdr)) +
      MNL_ALIGN(std::max(sizeof(inet_diag_req), sizeof(inet_diag_req_v2))) +
      MNL_ALIGN(sizeof(nlattr)) + MNL_ALIGN(bytecode.size()));
  nlmsghdr* nlh = mnl_nlmsg_put_header(req.data());
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = ++seq_ == 0 ? ++seq_ : seq_;
  if (family == AF_UNSPEC) {
    // The original inet_diag request (TCPDIAG_GETSOCK + struct inet_diag_req): the kernel
    // runs it with sdiag_family AF_UNSPEC (inet_diag_dump_compat()), i.e. ONE walk of the
    // TCP hash tables for IPv4 and IPv6 together, where SOCK_DIAG_BY_FAMILY needs one walk
    // per family. The walk visits every bucket of the established hash (262,144 here), which
    // alone costs ~1 ms even when the table is empty.
    nlh->nlmsg_type = TCPDIAG_GETSOCK;
    auto* r = static_cast<inet_diag_req*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_req)));
    r->idiag_family = AF_INET;  // unused by the dump; AF_INET as ss(8) sends it
    r->idiag_ext = 0;
    r->idiag_states = states;
  } else {
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    auto* r =
        static_cast<inet_diag_req_v2*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_req_v2)));
    r->sdiag_family = family;
    r->sdiag_protocol = IPPROTO_TCP;
    r->idiag_ext = 0;  // no extensions: the kernel copies the fixed header only (plus a few
                       // unconditional attributes such as INET_DIAG_SHUTDOWN)
    r->idiag_states = states;
  }
  if (!bytecode.empty()) {
    mnl_attr_put(nlh, INET_DIAG_REQ_BYTECODE, bytecode.size(), bytecode.data());
  }
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) return errno;

  // Bounded: a dump ends with NLMSG_DONE; the cap (2^20 buffers of 32 KiB) is a safety net.
  for (int i = 0; i < (1 << 20); ++i) {
    ssize_t n = mnl_socket_recvfrom(nl_, buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      mnl_socket_close(nl_);
      nl_ = nullptr;
      return err;
    }
    if (capture_ != nullptr) capture_->append(reinterpret_cast<const char*>(buf_.data()), n);
    int rc = parse_messages({buf_.data(), static_cast<std::size_t>(n)}, visitor, seq_);
    if (rc == 1) return 0;
    if (rc < 0) {
      mnl_socket_close(nl_);
      nl_ = nullptr;
      return -rc;
    }
  }
  mnl_socket_close(nl_);
  nl_ = nullptr;
  return EOVERFLOW;
}

}  // namespace loadwatch
