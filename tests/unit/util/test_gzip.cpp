// gzip_decompress: the inflate helper behind Content-Encoding: gzip on the push endpoints.
#include <sys/resource.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "util/gzip.h"

using namespace loadwatch;

namespace {

/// gzip of `n` zero bytes, deflated in slices so the test never holds `n` bytes itself.
std::string gzip_of_zeros(std::size_t n) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string zeros(1u << 20, '\0'), out, buf(1u << 16, '\0');
  std::size_t left = n;
  int rc;
  do {
    std::size_t take = std::min(left, zeros.size());
    left -= take;
    zs.next_in = reinterpret_cast<Bytef*>(zeros.data());
    zs.avail_in = static_cast<uInt>(take);
    int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf.data());
      zs.avail_out = static_cast<uInt>(buf.size());
      rc = deflate(&zs, flush);
      out.append(buf.data(), buf.size() - zs.avail_out);
    } while (zs.avail_out == 0);
  } while (left > 0);
  deflateEnd(&zs);
  REQUIRE(rc == Z_STREAM_END);
  return out;
}

long peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

std::string lines(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += "jmeter,transaction=t" + std::to_string(i) +
            ",statut=all count=" + std::to_string(i * 7) + " 1700000005000000000\n";
  }
  return text;
}

}  // namespace

// First, so the peak RSS before it is still small.
TEST_CASE("gzip_decompress: a bomb is refused at the cap, without inflating it") {
  std::string bomb = gzip_of_zeros(std::size_t{512} << 20);  // 512 MiB of zeros
  CHECK(bomb.size() < (1u << 20));
  long before = peak_rss_kib();
  auto r = gzip_decompress(bomb, 1u << 20);
  CHECK(r.error == GunzipError::too_large);
  CHECK(r.data.empty());
  CHECK_THAT(r.message, Catch::Contains("1048576 bytes"));
  // Inflating it all would add 512 MiB; stopping at the cap adds about 1 MiB.
  CHECK(peak_rss_kib() - before < 32 * 1024);
}

TEST_CASE("gzip_decompress: round trip with gzip_compress") {
  std::string text = lines(2000);
  std::string gz = gzip_compress(text);
  auto r = gzip_decompress(gz, text.size());  // exactly at the cap is fine
  CHECK(r.error == GunzipError::none);
  CHECK(r.message.empty());
  CHECK(r.data == text);
  CHECK(gzip_decompress(gz, text.size() - 1).error == GunzipError::too_large);

  auto empty = gzip_decompress(gzip_compress(""), 100);
  CHECK(empty.error == GunzipError::none);
  CHECK(empty.data.empty());
}

TEST_CASE("gzip_decompress: a body larger than the growth steps comes back whole") {
  std::string text = lines(120000);  // ~6 MiB: several buffer doublings
  auto r = gzip_decompress(gzip_compress(text, 1), 16u << 20);
  CHECK(r.error == GunzipError::none);
  CHECK(r.data == text);
}

TEST_CASE("gzip_decompress: concatenated members are one body") {
  std::string a = lines(10), b = lines(3);
  std::string gz = gzip_compress(a) + gzip_compress(b);
  auto r = gzip_decompress(gz, 1u << 20);
  CHECK(r.error == GunzipError::none);
  CHECK(r.data == a + b);
  // The cap counts all members together.
  CHECK(gzip_decompress(gz, a.size() + b.size() - 1).error == GunzipError::too_large);
}

TEST_CASE("gzip_decompress: corrupt, truncated or non-gzip input") {
  std::string gz = gzip_compress(lines(50));
  auto corrupt = [](const std::string& in) {
    auto r = gzip_decompress(in, 1u << 20);
    INFO(r.message);
    CHECK(r.data.empty());
    CHECK(!r.message.empty());
    return r.error == GunzipError::corrupt;
  };
  CHECK(corrupt(""));
  CHECK(corrupt("jmeter count=1\n"));  // plain text labelled gzip
  CHECK(corrupt(gz.substr(0, gz.size() - 4)));
  CHECK(corrupt(gz.substr(0, 5)));
  CHECK_THAT(gzip_decompress(gz.substr(0, gz.size() - 4), 1u << 20).message,
             Catch::Contains("truncated"));
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 0x55;  // the CRC-32 in the trailer
  CHECK(corrupt(bad_crc));
  std::string bad_magic = gz;
  bad_magic[0] = 'x';
  CHECK(corrupt(bad_magic));
  CHECK(corrupt(gz + "garbage"));  // trailing bytes are not another member

  // A zlib (RFC 1950) stream is "deflate", not gzip.
  std::string text = "m v=1\n";
  std::string z(compressBound(text.size()), '\0');
  uLongf zlen = z.size();
  REQUIRE(compress(reinterpret_cast<Bytef*>(z.data()), &zlen,
                   reinterpret_cast<const Bytef*>(text.data()), text.size()) == Z_OK);
  z.resize(zlen);
  CHECK(corrupt(z));
}
