#include "tcp_tally.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace loadwatch {

std::size_t TcpTally::DestHash::operator()(const Dest& d) const {
  // FNV-1a over the key bytes; destinations are few, the hash only has to be decent.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint8_t b) { h = (h ^ b) * 1099511628211ull; };
  mix(d.family);
  mix(static_cast<std::uint8_t>(d.port));
  mix(static_cast<std::uint8_t>(d.port >> 8));
  for (auto b : d.addr) mix(b);
  return static_cast<std::size_t>(h);
}

TcpTally::TcpTally() : slot_(65536, kNoSlot) {}

void TcpTally::begin(const std::vector<std::uint16_t>& ports, std::uint32_t eph_lo,
                     std::uint32_t eph_hi) {
  for (const auto& p : ports_) slot_[p.port] = kNoSlot;
  ports_.clear();
  std::vector<std::uint16_t> sorted(ports);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (auto port : sorted) {
    if (port == 0 || ports_.size() >= kNoSlot) continue;
    slot_[port] = static_cast<std::uint16_t>(ports_.size());
    ports_.push_back(TcpPortStats{});
    ports_.back().port = port;
  }
  eph_lo_ = eph_lo;
  eph_hi_ = eph_hi;
  dest_.clear();
  eph_max_ = 0;
}

void TcpTally::add(const TcpSocket& s) {
  if (s.state == 0 || s.state >= kTcpStateCount) return;
  if (std::uint16_t i = slot_[s.sport]; i != kNoSlot) {
    TcpPortStats& p = ports_[i];
    ++p.local[s.state];
    if (s.state == kTcpListen) {
      const bool fuller = !p.listening || s.rqueue > p.queue_length ||
                          (s.rqueue == p.queue_length && s.wqueue_known && s.wqueue < p.queue_max);
      if (fuller) {
        p.listening = true;
        p.queue_length = s.rqueue;
        p.queue_max = s.wqueue_known ? s.wqueue : 0;
        p.queue_max_known = s.wqueue_known;
      }
    }
  }
  if (s.dport != 0) {
    if (std::uint16_t i = slot_[s.dport]; i != kNoSlot) ++ports_[i].remote[s.state];
  }
  if (s.state != kTcpListen && s.dport != 0 && s.sport >= eph_lo_ && s.sport <= eph_hi_) {
    Dest d{};
    d.port = s.dport;
    d.family = s.family;
    d.addr = s.daddr;
    // ::ffff:a.b.c.d (RFC 4291 2.5.5.2) is the IPv4 peer a.b.c.d: same port space.
    static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (s.family == AF_INET6 && std::memcmp(d.addr.data(), kMapped, 12) == 0) {
      d.family = AF_INET;
      std::memmove(d.addr.data(), d.addr.data() + 12, 4);
      std::memset(d.addr.data() + 4, 0, 12);
    }
    const std::uint32_t n = ++dest_[d];
    eph_max_ = std::max<std::uint64_t>(eph_max_, n);
  }
}

void TcpTally::reset_listeners() {
  for (auto& p : ports_) {
    p.local[kTcpListen] = 0;
    p.listening = false;
    p.queue_length = 0;
    p.queue_max = 0;
    p.queue_max_known = false;
  }
}

double TcpTally::ephemeral_ratio() const {
  const std::uint32_t size = ephemeral_ports();
  return size == 0 ? 0.0 : static_cast<double>(eph_max_) / size;
}

}  // namespace loadwatch
