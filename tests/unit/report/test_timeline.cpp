// The run-over-time series the HTML report charts: a generator counter that moves only when a
// scrape lands reads as its rate between changes, not as a sawtooth of per-sample differences.
#include <catch2/catch.hpp>
#include <cmath>

#include "report/timeline.h"

using namespace loadwatch;

namespace {

constexpr double kT0 = 1.7e9;

/// A source at `rate` req/s scraped every `every` seconds, sampled by loadwatch every second.
analysis::GeneratorSourceSeries scraped_source(double rate, int every, int seconds) {
  analysis::GeneratorSourceSeries s;
  s.name = "lc";
  double shown = 0;
  for (int i = 0; i <= seconds; ++i) {
    if (i % every == 0) shown = rate * i;
    s.requests.add(kT0 + i, shown);
  }
  return s;
}

std::vector<double> rps_values(const analysis::RunSeries& rs) {
  auto j = report::timeline_json(rs);
  for (const auto& s : j["series"]) {
    if (s["name"] == "RPS") {
      std::vector<double> v;
      for (const auto& x : s["v"]) v.push_back(x.is_null() ? std::nan("") : x.get<double>());
      return v;
    }
  }
  return {};
}

}  // namespace

TEST_CASE("a counter scraped every 5 s charts as its rate, not a 0 <-> peak sawtooth") {
  analysis::RunSeries rs;
  rs.generator.sources.push_back(scraped_source(100, 5, 60));
  rs.generator.requests = rs.generator.sources.front().requests;
  auto v = rps_values(rs);
  REQUIRE(v.size() == 61);
  int known = 0;
  for (double x : v) {
    if (std::isnan(x)) continue;  // before the first change and after the last
    ++known;
    CHECK(x == Approx(100).epsilon(1e-6));
  }
  CHECK(known >= 50);
}

TEST_CASE("two sources add up where both rates are known") {
  analysis::RunSeries rs;
  rs.generator.sources.push_back(scraped_source(100, 5, 60));
  rs.generator.sources.push_back(scraped_source(40, 2, 60));
  auto v = rps_values(rs);
  REQUIRE(v.size() == 61);
  CHECK(v[30] == Approx(140).epsilon(1e-6));
}
