// Prometheus-style durations: a sequence of <number><unit>, units ms s m h d w y.
#include <charconv>
#include <stdexcept>

#include "config/config.h"

namespace loadwatch {

std::chrono::milliseconds parse_duration(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("empty duration");
  if (text == "0") return std::chrono::milliseconds(0);
  long long total_ms = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    long long n = 0;
    auto [next, ec] = std::from_chars(p, end, n);
    if (ec != std::errc() || next == p || n < 0) {
      throw std::invalid_argument("not a valid duration string: \"" + text + "\"");
    }
    p = next;
    long long unit_ms = 0;
    if (end - p >= 2 && p[0] == 'm' && p[1] == 's') {
      unit_ms = 1, p += 2;
    } else if (p < end) {
      switch (*p) {
        case 's':
          unit_ms = 1000;
          break;
        case 'm':
          unit_ms = 60'000;
          break;
        case 'h':
          unit_ms = 3'600'000;
          break;
        case 'd':
          unit_ms = 86'400'000;
          break;
        case 'w':
          unit_ms = 7 * 86'400'000LL;
          break;
        case 'y':
          unit_ms = 365 * 86'400'000LL;
          break;
        default:
          break;
      }
      if (unit_ms) ++p;
    }
    if (!unit_ms) throw std::invalid_argument("not a valid duration string: \"" + text + "\"");
    if (n > (1LL << 40) / unit_ms) throw std::invalid_argument("duration out of range: " + text);
    total_ms += n * unit_ms;
  }
  return std::chrono::milliseconds(total_ms);
}

}  // namespace loadwatch
