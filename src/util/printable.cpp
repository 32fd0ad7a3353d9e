#include "util/printable.h"

namespace loadwatch {

std::string printable_line(std::string_view s) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
      out += ' ';
    } else if (u < 0x20 || u == 0x7f) {
      out += kReplacement;
    } else if (u == 0xc2 && next >= 0x80 && next <= 0x9f) {  // UTF-8 of U+0080..U+009F
      out += kReplacement;
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace loadwatch
