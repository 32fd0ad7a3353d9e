#include "collectors/tcp_ephemeral_use.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace loadwatch {

std::size_t EphemeralUse::DestHash::operator()(const Dest& d) const {
  // Called once per TIME_WAIT socket (60,000 per dump): two multiply-mixes over the address
  // words instead of a byte loop. Destinations are few; the hash only has to be decent.
  std::uint64_t w[2];
  std::memcpy(w, d.addr.data(), sizeof w);
  std::uint64_t h = (w[0] ^ (std::uint64_t{d.family} << 16 | d.port)) * 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 29) ^ w[1]) * 0xbf58476d1ce4e5b9ull;
  return static_cast<std::size_t>(h ^ (h >> 32));
}

void EphemeralUse::reset(std::uint32_t lo, std::uint32_t hi) {
  lo_ = lo;
  hi_ = hi;
  count_.clear();
  max_ = 0;
}

void EphemeralUse::add(const TcpSocket& s) {
  if (s.state == kTcpListen || s.dport == 0 || s.sport < lo_ || s.sport > hi_) return;
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
  max_ = std::max(max_, ++count_[d]);
}

std::uint64_t EphemeralUse::max_with(const EphemeralUse& other) const {
  std::uint64_t best = 0;
  for (const auto& [d, n] : count_) {
    const auto it = other.count_.find(d);
    best = std::max(best, n + (it == other.count_.end() ? 0 : it->second));
  }
  // Destinations only `other` has (the sums of shared ones are covered above).
  for (const auto& [d, n] : other.count_) best = std::max(best, n);
  return best;
}

}  // namespace loadwatch
