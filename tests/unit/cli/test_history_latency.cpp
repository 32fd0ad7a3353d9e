// The fleet's latency from a loadwatch's history, over a real capture (tests/fixtures/history/
// capture.py): a loadwatch's /api/v1/history answers at two edges of a window, read as `report
// --url A --url B` reads them, against the requests the Locust behind it logged itself.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/history_latency.h"

using namespace loadwatch::report;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(LOADWATCH_FIXTURES) + "/history/" + name);
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The le of a bucket key, or NaN for another series.
double le_of(const std::string& key) {
  auto at = key.find("le=\"");
  if (at == std::string::npos) return NAN;
  std::string le = key.substr(at + 4, key.find('"', at + 4) - at - 4);
  return le == "+Inf" ? INFINITY : std::stod(le);
}

struct Request {
  double end, seconds;
};

std::vector<Request> locust_log() {
  std::istringstream in(fixture("requests.log"));
  std::vector<Request> out;
  std::string kind;
  double at, ms;
  int ok;
  while (in >> kind >> at >> ms >> ok) out.push_back({at, ms / 1000});
  return out;
}

}  // namespace

TEST_CASE("a history's buckets between two edges count the requests Locust logged between them") {
  const auto edges = nlohmann::json::parse(fixture("edges.json"));
  const double a = edges["a"], b = edges["b"];
  HistoryAnswer at_a = parse_history_answer(fixture("at_a.json"));
  HistoryAnswer at_b = parse_history_answer(fixture("at_b.json"));
  REQUIRE(at_a.series == at_b.series);
  REQUIRE(at_a.series.size() == 100);  // the 99 lowest buckets and the data's age

  // Each edge: the last sample at or before it, and the moment its counts describe (the
  // sample's time less the data's age, which the listener's own timestamp gives).
  std::map<double, double> rise;
  double from = NAN, to = NAN;
  for (std::size_t c = 0; c < at_a.series.size(); ++c) {
    auto va = last_at_or_before(at_a, c, a), vb = last_at_or_before(at_b, c, b);
    REQUIRE(va);
    REQUIRE(vb);
    CHECK(va->first <= a);
    CHECK(va->first > a - 0.5 - 0.01);  // 500 ms samples: the one just before the edge
    CHECK(vb->first <= b);
    const std::string& key = at_a.series[c];
    if (key.rfind("loadwatch_generator_data_age_seconds", 0) == 0) {
      from = va->first - va->second;
      to = vb->first - vb->second;
      continue;
    }
    rise[le_of(key)] = vb->second - va->second;
  }
  REQUIRE(std::isfinite(from));
  REQUIRE(to > from + 3);

  // Locust's own log: the requests it counted between those moments, by bucket.
  auto requests = locust_log();
  std::size_t in_window = 0;
  for (const auto& [le, n] : rise) {
    double truth = 0;
    for (const Request& r : requests) truth += r.end > from && r.end <= to && r.seconds <= le;
    INFO("le " << le);
    CHECK(n == truth);
  }
  for (const Request& r : requests) in_window += r.end > from && r.end <= to;
  CHECK(in_window > 200);
  CHECK(rise.rbegin()->second > in_window / 2);  // the buckets held most of them
}

TEST_CASE("an answer that is not the history's is refused; gaps are passed over") {
  CHECK_THROWS_AS(parse_history_answer(R"({"status":"error","error":"series: ..."})"),
                  std::runtime_error);
  CHECK_THROWS_AS(parse_history_answer(R"({"status":"success","series":["time","x"],
      "data":[[1,2],[5]]})"),
                  std::runtime_error);
  CHECK_THROWS_AS(parse_history_answer(R"({"status":"success","series":["time","x"],
      "data":[[1,2],[5,"6"]]})"),
                  std::runtime_error);
  CHECK_THROWS(parse_history_answer("[[[["));
  HistoryAnswer h = parse_history_answer(R"({"status":"success","series":["time","x"],
      "counter":[false,true],"rate":false,"data":[[10.0,10.5,11.0],[4,7,null]]})");
  REQUIRE(h.series == std::vector<std::string>{"x"});
  auto v = last_at_or_before(h, 0, 11.2);  // 11.0 is a gap: the value before it
  REQUIRE(v);
  CHECK(v->first == 10.5);
  CHECK(v->second == 7);
  CHECK(last_at_or_before(h, 0, 10.2)->second == 4);
  CHECK_FALSE(last_at_or_before(h, 0, 9.9));
  CHECK_FALSE(last_at_or_before(h, 1, 11));
}
