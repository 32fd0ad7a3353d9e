// serialize_text: byte for byte what prometheus-cpp's TextSerializer wrote for valid input
// (the golden page and every dashboard depend on it), escaping HELP and label values once,
// and never writing invalid UTF-8; and the UTF-8 helpers it rests on.
#include <prometheus/text_serializer.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "metrics/exposition.h"
#include "sources/prom_text_parser.h"

using namespace loadwatch;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

double random_value(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return (rng() % 2 ? 1 : -1) * std::numeric_limits<double>::infinity();
    case 2:
      return double(rng() % 1000);
    case 3:
      return std::ldexp(double(rng() % 100000), int(rng() % 200) - 100);
    default: {
      double v;
      std::uint64_t bits = rng();
      std::memcpy(&v, &bits, sizeof v);
      return std::isnan(v) ? 0.5 : v;
    }
  }
}

std::string random_text(std::mt19937_64& rng) {
  static const std::string pieces[] = {"a", "\\", "\"", "\n", "é", "中文", " ", "x_1", "{", "}"};
  std::string s;
  for (int n = int(rng() % 6); n > 0; --n) s += pieces[rng() % std::size(pieces)];
  return s;
}

std::vector<MetricFamily> random_families(std::mt19937_64& rng) {
  std::vector<MetricFamily> out;
  const MetricType types[] = {MetricType::Counter, MetricType::Gauge, MetricType::Summary,
                              MetricType::Histogram, MetricType::Untyped};
  for (int f = 0; f < 12; ++f) {
    MetricFamily fam{
        "fam_" + std::to_string(f), rng() % 3 ? "help text é" : "", types[rng() % 5], {}};
    for (int k = int(rng() % 4); k > 0; --k) {
      ClientMetric m;
      for (int l = int(rng() % 3); l > 0; --l) {
        m.label.push_back({"l" + std::to_string(l), random_text(rng)});
      }
      m.counter.value = random_value(rng);
      m.gauge.value = random_value(rng);
      m.untyped.value = random_value(rng);
      m.summary.sample_count = rng();
      m.summary.sample_sum = random_value(rng);
      for (int q = int(rng() % 3); q > 0; --q) {
        m.summary.quantile.push_back({random_value(rng), random_value(rng)});
      }
      m.histogram.sample_count = rng();
      m.histogram.sample_sum = random_value(rng);
      for (int b = int(rng() % 3); b > 0; --b) {
        m.histogram.bucket.push_back({rng(), random_value(rng)});
      }
      if (rng() % 4 == 0) m.timestamp_ms = std::int64_t(rng() % 2000000) - 1000000;
      fam.metric.push_back(m);
    }
    out.push_back(fam);
  }
  return out;
}

}  // namespace

TEST_CASE("serialize_text writes what prometheus-cpp 1.0.1 wrote, for any valid input") {
  std::mt19937_64 rng(20240501);
  for (int round = 0; round < 300; ++round) {
    auto families = random_families(rng);
    // prometheus-cpp writes HELP verbatim: compare on HELP it leaves valid.
    CHECK(serialize_text(families) == prometheus::TextSerializer().Serialize(families));
  }
}

TEST_CASE("HELP and label values are escaped once, at serialization") {
  MetricFamily f{"m", "a \\ b\nc \"q\"", MetricType::Gauge, {}};
  ClientMetric m;
  m.label = {{"path", "C:\\DIR\n\"x\""}};
  m.gauge.value = 1;
  f.metric.push_back(m);
  std::string text = serialize_text({f});
  CHECK(text ==
        "# HELP m a \\\\ b\\nc \"q\"\n"
        "# TYPE m gauge\n"
        "m{path=\"C:\\\\DIR\\n\\\"x\\\"\"} 1\n");
  // And the text parses back to the raw values.
  auto parsed = parse_prom_text(text, PromTextLimits::strict_mode());
  REQUIRE(parsed.ok());
  CHECK(parsed.families[0].help == f.help);
  CHECK(parsed.families[0].metric[0].label[0].value == m.label[0].value);
}

TEST_CASE("invalid UTF-8 never reaches the page") {
  MetricFamily f{"m", "bad \xff help", MetricType::Counter, {}};
  ClientMetric m;
  m.label = {{"name", "caf\xe9"}};  // Latin-1 é
  f.metric.push_back(m);
  std::string text = serialize_text({f});
  CHECK(valid_utf8(text));
  CHECK(text.find("caf\xEF\xBF\xBD") != std::string::npos);
  CHECK(text.find("bad \xEF\xBF\xBD help") != std::string::npos);
  CHECK(parse_prom_text(text, PromTextLimits::strict_mode()).ok());
}

TEST_CASE("valid_utf8 follows Unicode's well-formed table") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain ascii"));
  CHECK(valid_utf8("é中文😀"));
  CHECK(valid_utf8("\xF4\x8F\xBF\xBF"));        // U+10FFFF
  CHECK_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(valid_utf8("\xC0\xAF"));          // overlong '/'
  CHECK_FALSE(valid_utf8("\xE0\x80\xAF"));      // overlong
  CHECK_FALSE(valid_utf8("\xED\xA0\x80"));      // surrogate U+D800
  CHECK_FALSE(valid_utf8("\xE4\xB8"));          // cut short
  CHECK_FALSE(valid_utf8("\x80"));              // lone continuation
  CHECK_FALSE(valid_utf8("\xFF"));
}

TEST_CASE("replace_invalid_utf8 and truncate_utf8") {
  std::string s = "a\xffz\xe4\xb8";
  CHECK(replace_invalid_utf8(s));
  CHECK(s == "a\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD");
  std::string ok = "中文";
  CHECK_FALSE(replace_invalid_utf8(ok));
  CHECK(ok == "中文");
  std::string t = "a中文";  // 1 + 3 + 3 bytes
  truncate_utf8(t, 5);
  CHECK(t == "a中");
  truncate_utf8(t, 100);
  CHECK(t == "a中");
}

TEST_CASE("fits_once_repaired counts each invalid byte as U+FFFD's three") {
  std::string e_acute = "\xC3\xA9";
  std::string valid;
  for (int i = 0; i < 1024; ++i) valid += e_acute;  // 2,048 bytes, all valid
  CHECK(fits_once_repaired(valid, 2048));
  CHECK_FALSE(fits_once_repaired(valid + "x", 2048));
  CHECK(fits_once_repaired(std::string(682, '\xff'), 2048));  // 2,046 once repaired
  CHECK_FALSE(fits_once_repaired(std::string(683, '\xff'), 2048));
  std::string mixed = valid.substr(0, 2046) + "\xff";  // 2,046 + 3
  CHECK_FALSE(fits_once_repaired(mixed, 2048));
  std::string repaired = mixed;
  replace_invalid_utf8(repaired);
  CHECK(repaired.size() == 2049);
  CHECK(fits_once_repaired("", 0));
}
