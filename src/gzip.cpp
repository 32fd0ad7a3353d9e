#include "gzip.h"

#include <zlib.h>

#include <stdexcept>

namespace loadwatch {

std::string gzip_compress(std::string_view data, int level) {
  z_stream zs{};
  // windowBits 15 + 16 selects the gzip wrapper instead of raw zlib.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, data.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(zs.total_out);
  return out;
}

bool accepts_gzip(std::string_view header) {
  while (!header.empty()) {
    auto comma = header.find(',');
    auto item = header.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    auto semi = item.find(';');
    auto coding = item.substr(0, semi);
    while (!coding.empty() && coding.back() == ' ') coding.remove_suffix(1);
    if (coding == "gzip" || coding == "*") {
      auto params = semi == std::string_view::npos ? std::string_view{} : item.substr(semi + 1);
      bool refused = params.find("q=0") != std::string_view::npos &&
                     params.find("q=0.") == std::string_view::npos;
      return !refused;
    }
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace loadwatch
