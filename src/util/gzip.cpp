#include "util/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <new>
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

GunzipResult gzip_decompress(std::string_view data, std::size_t max_out) {
  GunzipResult r;
  auto fail = [&r](GunzipError error, std::string message) {
    r.data = std::string();  // give the memory back now, not when the caller drops it
    r.error = error;
    r.message = std::move(message);
    return std::move(r);
  };
  if (data.empty()) return fail(GunzipError::corrupt, "empty gzip body");
  z_stream zs{};
  // windowBits 15 + 16: gzip wrapper only (a zlib or raw deflate stream is not "gzip").
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw std::bad_alloc();
  struct End {
    z_stream* zs;
    ~End() { inflateEnd(zs); }
  } end{&zs};

  // Room for one byte past the cap: producing it is how "too large" is seen, and it is as far
  // as inflation ever goes.
  const std::size_t room = max_out == SIZE_MAX ? max_out : max_out + 1;
  constexpr std::size_t kChunk = 1u << 30;  // avail_in/avail_out are 32-bit
  std::size_t produced = 0;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  std::size_t in_left = data.size();
  for (;;) {
    if (zs.avail_in == 0 && in_left > 0) {
      zs.avail_in = static_cast<uInt>(std::min(in_left, kChunk));
      in_left -= zs.avail_in;
    }
    if (produced == r.data.size()) {
      // Grow geometrically, never past the cap (the header's length field is not trusted).
      std::size_t want = std::min(room, std::max<std::size_t>(produced * 2, 64u << 10));
      r.data.resize(std::min(want, produced + kChunk));
    }
    zs.next_out = reinterpret_cast<Bytef*>(r.data.data() + produced);
    zs.avail_out = static_cast<uInt>(r.data.size() - produced);
    const uInt before = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    if (produced > max_out) {
      return fail(GunzipError::too_large,
                  "gzip body inflates past " + std::to_string(max_out) + " bytes");
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0 && in_left == 0) break;
      inflateReset(&zs);  // another member follows; garbage there fails its header check
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) {
      return fail(GunzipError::corrupt, "truncated gzip body");
    }
    return fail(GunzipError::corrupt,
                std::string("invalid gzip body: ") + (zs.msg ? zs.msg : "inflate failed"));
  }
  r.data.resize(produced);
  return r;
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
