#include "collectors/tcp_listen_top.h"

#include <algorithm>

namespace loadwatch {

void ListenTop::add(const TcpSocket& s) {
  if (s.state != kTcpListen || s.rqueue == 0) return;
  all_.push_back(TopListener{s.sport, s.rqueue, s.wqueue, s.wqueue_known, s.inode});
}

const std::vector<TopListener>& ListenTop::top() {
  top_.clear();
  if (all_.empty()) return top_;
  const bool by_ratio =
      std::all_of(all_.begin(), all_.end(), [](const TopListener& l) { return l.queue_max_known; });
  // length/limit compared as length_a * limit_b vs length_b * limit_a: exact, no division.
  auto fuller = [by_ratio](const TopListener& a, const TopListener& b) {
    if (by_ratio) {
      const std::uint64_t la = a.queue_length, lb = b.queue_length;
      const std::uint64_t ma = std::max<std::uint32_t>(a.queue_max, 1);
      const std::uint64_t mb = std::max<std::uint32_t>(b.queue_max, 1);
      if (la * mb != lb * ma) return la * mb > lb * ma;
    }
    if (a.queue_length != b.queue_length) return a.queue_length > b.queue_length;
    return a.port < b.port;
  };
  std::sort(all_.begin(), all_.end(), fuller);
  for (const TopListener& l : all_) {
    if (std::any_of(top_.begin(), top_.end(),
                    [&](const TopListener& t) { return t.port == l.port; })) {
      continue;
    }
    top_.push_back(l);
    if (top_.size() == kMax) break;
  }
  return top_;
}

}  // namespace loadwatch
