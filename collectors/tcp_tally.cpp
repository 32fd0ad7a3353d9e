#include "collectors/tcp_tally.h"

#include <algorithm>

namespace loadwatch {

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
  live_.reset(eph_lo, eph_hi);
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
  if (s.state != kTcpTimeWait) {
    live_.add(s);
    eph_max_ = std::max(eph_max_, live_.max());
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
