#include "procfs/proc_net_tcp.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "procfs/tokenizer.h"

namespace loadwatch {

namespace {

using host_parse::next_field;
using host_parse::next_line;
using host_parse::quote;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/// Parses exactly `digits` hex digits at the front of `s`.
bool hex_fixed(std::string_view s, std::size_t digits, std::uint32_t& out) {
  if (s.size() < digits) return false;
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    int d = hex_digit(s[i]);
    if (d < 0) return false;
    v = (v << 4) | static_cast<std::uint32_t>(d);
  }
  out = v;
  return true;
}

std::uint64_t dec(std::string_view s, std::string_view what) { return host_parse::to_u64(s, what); }

/// "0100007F:0277": the address is printed as the __be32 words' in-memory value ("%08X" of
/// each u32, so 127.0.0.1 reads 0100007F on little-endian hosts); copying each parsed word
/// back to memory restores network byte order on any host. The port is "%04X" of the host
/// order value.
void parse_endpoint(std::string_view field, std::size_t words, std::array<std::uint8_t, 16>& addr,
                    std::uint16_t& port) {
  const std::size_t hex = words * 8;
  if (field.size() != hex + 5 || field[hex] != ':') {
    throw std::runtime_error("bad address " + quote(field));
  }
  addr.fill(0);
  for (std::size_t w = 0; w < words; ++w) {
    std::uint32_t v = 0;
    if (!hex_fixed(field.substr(w * 8), 8, v))
      throw std::runtime_error("bad address " + quote(field));
    std::memcpy(addr.data() + 4 * w, &v, 4);
  }
  std::uint32_t p = 0;
  if (!hex_fixed(field.substr(hex + 1), 4, p)) throw std::runtime_error("bad port " + quote(field));
  port = static_cast<std::uint16_t>(p);
}

/// "00000000:00000001": tx_queue:rx_queue.
void parse_queues(std::string_view field, std::uint32_t& tx, std::uint32_t& rx) {
  if (field.size() != 17 || field[8] != ':' || !hex_fixed(field, 8, tx) ||
      !hex_fixed(field.substr(9), 8, rx)) {
    throw std::runtime_error("bad queues " + quote(field));
  }
}

void parse_line(std::string_view line, std::uint8_t family, std::size_t words, TcpSocket& s,
                TcpSocketVisitor& visitor) {
  std::string_view rest = line;
  std::string_view sl = next_field(rest);
  if (sl.empty() || sl == "sl") return;  // blank or header line
  if (sl.back() != ':') throw std::runtime_error("bad slot " + quote(sl));
  s.family = family;
  parse_endpoint(next_field(rest), words, s.saddr, s.sport);
  parse_endpoint(next_field(rest), words, s.daddr, s.dport);
  std::uint32_t st = 0;
  std::string_view st_field = next_field(rest);
  if (st_field.size() != 2 || !hex_fixed(st_field, 2, st)) {
    throw std::runtime_error("bad state " + quote(st_field));
  }
  s.state = static_cast<std::uint8_t>(st);
  std::uint32_t tx = 0, rx = 0;
  parse_queues(next_field(rest), tx, rx);
  // For LISTEN, rx_queue is sk_ack_backlog (get_tcp4_sock()); the limit is not printed.
  s.rqueue = rx;
  s.wqueue = 0;
  s.wqueue_known = false;
  std::string_view timer = next_field(rest);  // "tr:tm->when"
  std::uint32_t tr = 0;
  if (timer.size() < 3 || timer[2] != ':' || !hex_fixed(timer, 2, tr)) {
    throw std::runtime_error("bad timer " + quote(timer));
  }
  // get_timewait4_sock() prints timer 3 for time-wait mini sockets; st is their substate.
  s.timewait_minisock = tr == 3;
  next_field(rest);  // retrnsmt
  s.uid = static_cast<std::uint32_t>(dec(next_field(rest), "uid"));
  next_field(rest);  // timeout
  s.inode = dec(next_field(rest), "inode");
  visitor.on_socket(s);
}

}  // namespace

void parse_proc_net_tcp(std::string_view text, std::uint8_t family, TcpSocketVisitor& visitor) {
  const std::size_t words = family == AF_INET6 ? 4 : 1;
  TcpSocket s;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    try {
      parse_line(line, family, words, s, visitor);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string(family == AF_INET6 ? "tcp6" : "tcp") + ": " + e.what());
    }
  }
}

int read_proc_net_tcp(const FsRoot& proc, std::uint8_t family, TcpSocketVisitor& visitor,
                      std::string& buf) {
  const std::string path = proc.path(family == AF_INET6 ? "net/tcp6" : "net/tcp");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  constexpr std::size_t kChunk = 64 * 1024;
  buf.clear();
  int err = 0;
  // Bounded: every pass consumes at least one byte of a finite file, and the cap stops a
  // file that never ends (16 GiB at 64 KiB per pass).
  for (int pass = 0; pass < (1 << 18); ++pass) {
    const std::size_t keep = buf.size();
    buf.resize(keep + kChunk);
    ssize_t n = ::read(fd, buf.data() + keep, kChunk);
    if (n < 0) {
      if (errno == EINTR) {
        buf.resize(keep);
        continue;
      }
      err = errno;
      break;
    }
    buf.resize(keep + static_cast<std::size_t>(n));
    if (n == 0) {
      try {
        parse_proc_net_tcp(buf, family, visitor);  // a last line without '\n'
      } catch (...) {
        ::close(fd);
        throw;
      }
      buf.clear();
      break;
    }
    const std::size_t last_nl = buf.rfind('\n');
    if (last_nl == std::string::npos) continue;
    try {
      parse_proc_net_tcp(std::string_view(buf).substr(0, last_nl + 1), family, visitor);
    } catch (...) {
      ::close(fd);
      throw;
    }
    buf.erase(0, last_nl + 1);
  }
  ::close(fd);
  return err;
}

}  // namespace loadwatch
