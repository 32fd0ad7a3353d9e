// The host-wide fullest listeners: which listeners are kept and in what order.

#include <catch2/catch.hpp>

#include "collectors/tcp_listen_top.h"

using namespace loadwatch;

namespace {

TcpSocket listener(std::uint16_t port, std::uint32_t length, std::uint32_t limit,
                   bool limit_known = true, std::uint64_t inode = 0) {
  TcpSocket s;
  s.state = kTcpListen;
  s.sport = port;
  s.rqueue = length;
  s.wqueue = limit;
  s.wqueue_known = limit_known;
  s.inode = inode ? inode : 1000u + port;
  return s;
}

std::vector<std::uint16_t> ports(const std::vector<TopListener>& top) {
  std::vector<std::uint16_t> out;
  for (const auto& l : top) out.push_back(l.port);
  return out;
}

}  // namespace

TEST_CASE("listen top: non-empty listeners only, by length over limit, ties by length",
          "[net][listen_top]") {
  ListenTop top;
  top.clear();
  top.add(listener(80, 0, 128));  // empty queue: never listed
  TcpSocket est = listener(81, 5, 5);
  est.state = kTcpEstablished;  // not a listener: rqueue is unread bytes
  top.add(est);
  top.add(listener(3000, 64, 128));   // 0.5
  top.add(listener(3001, 2, 1));      // 2: fullest
  top.add(listener(3002, 10, 20));    // 0.5 as 3000, but shorter: after it
  top.add(listener(3003, 129, 128));  // ~1.008
  top.add(listener(3004, 1, 0));      // limit 0 counts as 1: 1
  const auto& t = top.top();
  CHECK(ports(t) == std::vector<std::uint16_t>{3001, 3003, 3004, 3000, 3002});
  CHECK(t[0].queue_length == 2);
  CHECK(t[0].queue_max == 1);
  CHECK(t[0].queue_max_known);
  CHECK(t[0].inode == 4001);
}

TEST_CASE("listen top: at most 5, one per port (the fullest), a fresh sample forgets",
          "[net][listen_top]") {
  ListenTop top;
  top.clear();
  for (std::uint16_t p = 1; p <= 8; ++p) top.add(listener(p, p, 10));
  top.add(listener(8, 9, 10, true, 77));  // SO_REUSEPORT sibling on 8, fuller
  const auto& t = top.top();
  CHECK(ports(t) == std::vector<std::uint16_t>{8, 7, 6, 5, 4});
  CHECK(t[0].queue_length == 9);
  CHECK(t[0].inode == 77);

  top.clear();
  CHECK(top.top().empty());
  top.add(listener(9, 1, 1));
  CHECK(ports(top.top()) == std::vector<std::uint16_t>{9});
}

TEST_CASE("listen top: from /proc/net/tcp (no limit) ranks by length alone", "[net][listen_top]") {
  ListenTop top;
  top.clear();
  top.add(listener(3001, 2, 0, false));
  top.add(listener(3000, 64, 0, false));
  top.add(listener(3002, 64, 0, false));  // a tie: lower port first
  const auto& t = top.top();
  CHECK(ports(t) == std::vector<std::uint16_t>{3000, 3002, 3001});
  CHECK_FALSE(t[0].queue_max_known);
}
