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

#include "analysis/fleet_report.h"
#include "cli/history_latency.h"
#include "tests/lib/build_paths.h"
#include "tests/lib/loopback_server.h"
#include "web/http_server.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;
using namespace loadwatch::report;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(fixture_path("history/" + name));
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
  std::istringstream in(fixture("requests.txt"));
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

namespace {

/// A stand-in loadwatch: its history's series list, and answers where every bucket counts
/// `before` up to `mid` and `after` from then on (the data's age 0.25 s).
struct FakeHistory {
  FakeHistory(std::string list, double mid, double before, double after, bool off = false)
      : http(test::loopback_settings()) {
    http.route("/api/v1/history/series", [list, off](const HttpRequest&) {
      HttpResponse r;
      r.status = off ? 404 : 200;
      r.content_type = "application/json";
      r.body = off ? R"({"status":"error","error":"the history is off"})" : list;
      return r;
    });
    http.route("/api/v1/history", [=](const HttpRequest& req) {
      double until = std::stod(req.query_param("until"));
      nlohmann::json series = nlohmann::json::array({"time"});
      nlohmann::json data = nlohmann::json::array({nlohmann::json::array({until - 0.1})});
      std::string names = req.query_param("series");
      std::size_t from = 0;
      // The names are keys with commas inside braces: split after each closing brace.
      while (from < names.size()) {
        std::size_t end = names.find('}', from);
        std::string key = names.substr(from, end + 1 - from);
        series.push_back(key);
        bool age = key.rfind("loadwatch_generator_data_age_seconds", 0) == 0;
        data.push_back(nlohmann::json::array({age ? 0.25 : until > mid ? after : before}));
        from = end + 2;
      }
      HttpResponse r;
      r.content_type = "application/json";
      r.body = nlohmann::json{{"status", "success"}, {"series", series}, {"data", data}}.dump();
      return r;
    });
    http.start();
  }
  std::string url() const { return test::loopback_url(http); }
  HttpServer http;
};

/// The real series list with only the series `keep` says.
template <typename Keep>
std::string list_with(Keep keep) {
  auto list = nlohmann::json::parse(fixture("series.json"));
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& s : list["data"]) {
    if (keep(s)) kept.push_back(s);
  }
  list["data"] = kept;
  return list.dump();
}

/// A generator host's report: one phase with req/s and a stable window [100, 110].
loadwatch::analysis::FleetHost generator_host(const std::string& name) {
  loadwatch::analysis::FleetHost h;
  h.name = name;
  loadwatch::analysis::PhaseStats p;
  p.name = "users=1";
  p.start = 90;
  p.end = 110;
  p.stable_start = 100;
  p.stable_seconds = 10;
  p.rps = 10;
  h.report.phases.push_back(p);
  return h;
}

}  // namespace

TEST_CASE("a generator host without the buckets is named with its reason, never averaged") {
  using loadwatch::RunClient;
  using loadwatch::RunClientOptions;
  auto all = [](const nlohmann::json&) { return true; };
  auto buckets_99 = [](const nlohmann::json& s) {
    std::string key = s["series"];
    return s["family"] != "loadwatch_generator_request_duration_seconds_bucket" ||
           le_of(key) < 0.0287 + 1e-9;
  };
  auto no_buckets = [](const nlohmann::json& s) {
    return s["family"] != "loadwatch_generator_request_duration_seconds_bucket";
  };
  FakeHistory good(list_with(all), 105, 10, 30), other(list_with(all), 105, 5, 7);
  FakeHistory restarted(list_with(all), 105, 100, 50), capped(list_with(buckets_99), 105, 1, 2);
  FakeHistory quantiles(list_with(no_buckets), 105, 1, 2), off("", 105, 1, 2, true);

  auto read = [](std::vector<FakeHistory*> servers, std::vector<double> skews = {}) {
    std::vector<loadwatch::analysis::FleetHost> hosts;
    std::vector<RunClient> clients;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      hosts.push_back(generator_host("gen-" + std::to_string(i + 1)));
      if (i < skews.size()) hosts.back().skew_seconds = skews[i];
      RunClientOptions o;
      o.url = servers[i]->url();
      clients.emplace_back(o);
    }
    std::vector<const RunClient*> readers;
    for (const RunClient& c : clients) readers.push_back(&c);
    read_history_histograms(hosts, readers);
    return hosts;
  };

  // Two that have them: each host's rise at the window's edges, summed by bucket.
  auto both = read({&good, &other});
  REQUIRE(both[0].phase_histograms.size() == 1);
  CHECK(both[0].phase_histograms[0].back().count == 20);
  CHECK(both[1].phase_histograms[0].back().count == 2);
  REQUIRE(both[0].histogram_spans[0]);
  CHECK(both[0].histogram_spans[0]->first == Approx(100 - 0.1 - 0.25));
  CHECK(both[0].histogram_spans[0]->second == Approx(110 - 0.1 - 0.25));
  auto fleet = loadwatch::analysis::build_fleet_report(both);
  CHECK(fleet.fleet.phases[0].latency_method == "histogram");
  CHECK(fleet.fleet.phases[0].p99_high_seconds == Approx(0.0001));  // all in the first bucket

  // A host whose clock runs 10 s ahead: the window is read at 110..120 on its clock, where
  // its count rises from 10 to 30 at 115 (at 100..110 it would not have risen at all).
  FakeHistory ahead(list_with(all), 115, 10, 30);
  auto skewed = read({&good, &ahead}, {0.0, 10.0});
  CHECK(skewed[1].phase_histograms[0].back().count == 20);
  REQUIRE(skewed[1].histogram_spans[0]);
  CHECK(skewed[1].histogram_spans[0]->first == Approx(110 - 0.1 - 0.25));

  // Each without them says why; the fleet's latency names every one.
  auto lacking = read({&good, &restarted, &capped, &quantiles, &off});
  CHECK_THAT(lacking[1].phase_histogram_unavailable[0], Catch::Contains("fell"));
  CHECK_THAT(lacking[2].histogram_unavailable,
             Catch::Contains("keeps 99 of source locust's 256 buckets") &&
                 Catch::Contains("--history.max-series"));
  CHECK_THAT(lacking[3].histogram_unavailable, Catch::Contains("quantiles, not a histogram"));
  CHECK_THAT(lacking[4].histogram_unavailable, Catch::Contains("history is off"));
  auto report = loadwatch::analysis::build_fleet_report(lacking);
  const auto& p = report.fleet.phases[0];
  CHECK_FALSE(p.p95_seconds);
  for (const char* host : {"gen-2: ", "gen-3: ", "gen-4: ", "gen-5: "}) {
    CHECK_THAT(p.latency_window, Catch::Contains(host));
  }
  CHECK_THAT(p.latency_window, !Catch::Contains("gen-1: "));
}
