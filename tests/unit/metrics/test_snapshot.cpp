// Snapshot serialization: made once, ahead of time only for the forms the previous sample was
// scraped in.
#include <zlib.h>

#include <catch2/catch.hpp>

#include "metrics/metric_sink.h"
#include "metrics/snapshot.h"

using loadwatch::MetricSink;
using loadwatch::Snapshot;

namespace {

Snapshot make_snapshot(double value) {
  MetricSink sink;
  sink.gauge("loadwatch_test_value", "A value.", {{"kind", "test"}}, value);
  return Snapshot(sink.take(), {}, 1.0);
}

std::string gunzip(const std::string& in) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out(1 << 16, '\0');
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(inflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

}  // namespace

TEST_CASE("an unscraped sample makes nothing ahead of time") {
  Snapshot previous = make_snapshot(1);
  Snapshot next = make_snapshot(2);
  next.prepare_like(previous);
  CHECK_FALSE(next.text_made());
  CHECK_FALSE(next.gzip_made());
  // Preparing is not asking: a third sample stays lazy as well.
  Snapshot third = make_snapshot(3);
  third.prepare_like(next);
  CHECK_FALSE(third.text_made());
}

TEST_CASE("a plain-text scrape makes the next sample's text ahead, not its gzip") {
  Snapshot previous = make_snapshot(1);
  CHECK(previous.text().find("loadwatch_test_value{kind=\"test\"} 1") != std::string::npos);
  Snapshot next = make_snapshot(2);
  next.prepare_like(previous);
  CHECK(next.text_made());
  CHECK_FALSE(next.gzip_made());
  CHECK(next.text().find("loadwatch_test_value{kind=\"test\"} 2") != std::string::npos);
}

TEST_CASE("a gzip scrape makes the next sample's gzip ahead, and it inflates to the text") {
  Snapshot previous = make_snapshot(1);
  previous.gzipped();
  Snapshot next = make_snapshot(2);
  next.prepare_like(previous);
  CHECK(next.gzip_made());
  CHECK(gunzip(next.gzipped()) == next.text());
}
