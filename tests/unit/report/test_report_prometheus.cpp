// A run as Prometheus remembers it: a fake server that keeps what a 1 s scrape of loadwatch
// stores (samples, and a stale marker when a series leaves /metrics) and answers as Prometheus
// does (query_range reads at its step, last_over_time reads every sample). A phase of 4 s must
// be found under a 24 h lookback, whose query_range step (7.855 s) passes over it. Last, a real
// Prometheus's answers: a counter's changes are dated as Locust's own log says.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/change_points.h"
#include "analysis/generator_figures.h"
#include "report/prometheus_run.h"
#include "report/prometheus_series_source.h"
#include "tests/lib/build_paths.h"
#include "tests/lib/loopback_server.h"
#include "web/http_server.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;
using report::LabeledSeries;

namespace {

constexpr double kT0 = 1.8e9;  // the run starts; phases of 4 s; it ends at kT0 + 12

struct Stored {
  std::string family;
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> samples;  // NaN: the stale marker
};

class FakePrometheus : public report::SeriesSource {
 public:
  std::vector<Stored> stored;

  /// Scrapes every second in [from, to): `exported(t)` lists what /metrics holds at t.
  void scrape(double from, double to, const std::function<std::vector<Stored>(double)>& exported) {
    for (double t = from; t < to; t += 1) {
      std::vector<bool> seen(stored.size(), false);
      for (auto& e : exported(t)) {
        std::size_t i = 0;
        while (i < stored.size() && (stored[i].family != e.family || stored[i].labels != e.labels))
          ++i;
        if (i == stored.size()) {
          stored.push_back({e.family, e.labels, {}});
          seen.push_back(false);
        }
        stored[i].samples.push_back({t, e.samples.front().second});
        seen[i] = true;
      }
      for (std::size_t i = 0; i < stored.size(); ++i) {
        auto& s = stored[i].samples;
        if (!seen[i] && !s.empty() && !std::isnan(s.back().second)) s.push_back({t, NAN});
      }
    }
  }

  std::vector<const Stored*> select(const std::string& family,
                                    const std::map<std::string, std::string>& match) const {
    std::vector<const Stored*> out;
    for (const auto& s : stored) {
      bool ok = s.family == family;
      for (const auto& [k, v] : match) {
        auto it = s.labels.find(k);
        ok = ok && it != s.labels.end() && it->second == v;
      }
      if (ok) out.push_back(&s);
    }
    return out;
  }

  std::vector<LabeledSeries> fetch(const std::string& family,
                                   const std::map<std::string, std::string>& match, double from,
                                   double to) override {
    std::vector<LabeledSeries> out;
    double step = report::query_step(from, to, 1);
    for (const Stored* s : select(family, match)) {
      LabeledSeries ls{s->labels, {}};
      for (double t = from; t <= to; t += step) {
        const std::pair<double, double>* last = nullptr;  // the newest sample at or before t
        for (const auto& p : s->samples) {
          if (p.first <= t) last = &p;
        }
        if (last && !std::isnan(last->second) && t - last->first <= 300)
          ls.series.add(t, last->second);
      }
      if (!ls.series.empty()) out.push_back(std::move(ls));
    }
    return out;
  }

  std::vector<LabeledSeries> fetch_last(const std::string& family,
                                        const std::map<std::string, std::string>& match,
                                        double from, double to) override {
    std::vector<LabeledSeries> out;
    for (const Stored* s : select(family, match)) {
      std::optional<double> last;
      for (const auto& [t, v] : s->samples) {
        if (t > from && t <= to && !std::isnan(v)) last = v;
      }
      if (last) {
        out.push_back({s->labels, {}});
        out.back().series.add(to, *last);
      }
    }
    return out;
  }
};

Stored gauge(std::string family, std::map<std::string, std::string> labels, double v) {
  return {std::move(family), std::move(labels), {{0, v}}};
}

/// What loadwatch exports around a run "step load" (id ...-step-load) with phases "warm"
/// (10 users), "users=20" and "cool" (no users), 4 s each; an older run of the same name is
/// the last finished one until this one ends.
std::vector<Stored> exported(double t) {
  const std::string id = "20270115T080000-step-load", old = "20270115T070000-step-load";
  std::vector<Stored> out;
  if (t < kT0 + 12) {
    out.push_back(gauge("loadwatch_run_start_timestamp_seconds", {{"run", old}}, kT0 - 3600));
    out.push_back(gauge("loadwatch_run_end_timestamp_seconds", {{"run", old}}, kT0 - 3000));
  }
  if (t < kT0) return out;
  out.push_back(gauge("loadwatch_run_start_timestamp_seconds", {{"run", id}}, kT0));
  if (t >= kT0 + 12) {
    out.push_back(gauge("loadwatch_run_end_timestamp_seconds", {{"run", id}}, kT0 + 12.25));
    return out;
  }
  struct P {
    const char* name;
    std::optional<int> users;
  };
  const P phases[] = {{"warm", 10}, {"users=20", 20}, {"cool", std::nullopt}};
  const P& p = phases[static_cast<int>((t - kT0) / 4)];
  out.push_back(gauge("loadwatch_run_info",
                      {{"run", id}, {"name", "step load"}, {"origin", "api"}, {"phase", p.name}},
                      1));
  out.push_back(gauge("loadwatch_run_phase_start_timestamp_seconds",
                      {{"run", id}, {"phase", p.name}}, kT0 + 4 * (&p - phases) + 0.25));
  if (p.users) {
    out.push_back(gauge("loadwatch_run_phase_users", {{"run", id}, {"phase", p.name}}, *p.users));
  }
  return out;
}

}  // namespace

TEST_CASE("a run's phases of a few seconds are all found under a day's lookback") {
  FakePrometheus prom;
  prom.scrape(kT0 - 600, kT0 + 60, exported);
  const double lookback = 86400;
  const double now = kT0 + 72003.93;  // puts no query_range step inside the 4 s "users=20"

  // What a query_range over the lookback sees: it passes over a phase.
  auto coarse = prom.fetch("loadwatch_run_phase_start_timestamp_seconds", {}, now - lookback, now);
  REQUIRE(coarse.size() < 3);

  for (std::string ref : {"step-load", "step load", "20270115T080000-step-load"}) {
    INFO(ref);
    Run run = report::find_prometheus_run(prom, ref, now, lookback);
    CHECK(run.id == "20270115T080000-step-load");  // the newest of the two
    CHECK(run.name == "step load");
    CHECK(run.start == kT0);
    REQUIRE(run.phases.size() == 3);
    CHECK(run.phases[0].name == "warm");
    CHECK(run.phases[0].users == 10);
    CHECK(run.phases[1].name == "users=20");
    CHECK(run.phases[1].start == kT0 + 4.25);
    CHECK(run.phases[1].users == 20);
    CHECK(run.phases[2].name == "cool");
    CHECK_FALSE(run.phases[2].users);
    REQUIRE(run.end);
    CHECK(*run.end == kT0 + 12.25);
  }
  CHECK_THROWS_AS(report::find_prometheus_run(prom, "load", now, lookback),
                  report::SeriesSourceError);
}

TEST_CASE(
    "the run's instance narrows the report; a run on several instances is refused or listed") {
  FakePrometheus one, two;
  one.scrape(kT0 - 600, kT0 + 60, exported);
  for (auto& s : one.stored) {
    two.stored.push_back(s);
    two.stored.back().labels["instance"] = "sut-2:9797";
    s.labels["instance"] = "sut-1:9797";
    two.stored.push_back(s);
  }
  const double now = kT0 + 120;
  std::string instance;
  Run run = report::find_prometheus_run(one, "step-load", now, 3600, &instance);
  CHECK(instance == "sut-1:9797");
  CHECK(run.phases.size() == 3);
  try {
    report::find_prometheus_run(two, "step-load", now, 3600, &instance);
    FAIL("a run exported by two instances must be refused");
  } catch (const report::SeriesSourceError& e) {
    CHECK_THAT(e.what(),
               Catch::Contains("sut-1:9797, sut-2:9797") && Catch::Contains("--instance"));
  }
  // Asked for them all (a report across hosts), the instances are listed instead.
  std::vector<std::string> all;
  Run fleet = report::find_prometheus_run(two, "step-load", now, 3600, nullptr, &all);
  CHECK(all == std::vector<std::string>{"sut-1:9797", "sut-2:9797"});
  CHECK(fleet.id == run.id);
}

TEST_CASE("a query_range step never asks Prometheus for more than 11000 points") {
  for (double span : {60.0, 11000.0, 11005.0, 86400.0, 108000.0, 30 * 86400.0 + 7}) {
    INFO(span);
    double step = report::query_step(0, span, 1);
    char text[64];
    std::snprintf(text, sizeof text, "%.3f", step);
    CHECK(std::strtod(text, nullptr) == Approx(step));  // written as it is
    CHECK(std::floor(span / std::strtod(text, nullptr)) <= 11000);
    CHECK(step >= 1);
  }
  CHECK(report::query_step(0, 60, 1) == 1);
}

TEST_CASE("instant query answers become one-point series; errors are refused") {
  auto out = report::parse_query_vector(
      R"({"status":"success","data":{"resultType":"vector","result":[)"
      R"({"metric":{"run":"r1","phase":"warm"},"value":[1700000000.5,"1699999990.25"]},)"
      R"({"metric":{"run":"r2"},"value":[1700000000.5,"NaN"]}]}})");
  REQUIRE(out.size() == 1);
  CHECK(out[0].labels.at("phase") == "warm");
  CHECK(out[0].series.t == std::vector<double>{1700000000.5});
  CHECK(out[0].series.v == std::vector<double>{1699999990.25});
  CHECK_THROWS_AS(report::parse_query_vector(
                      R"({"status":"success","data":{"resultType":"matrix","result":[]}})"),
                  report::SeriesSourceError);
  CHECK_THROWS_AS(
      report::parse_query_vector(
          R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}})"),
      report::SeriesSourceError);
}

TEST_CASE("query_range points go back to the time loadwatch took their sample") {
  auto series = [](std::map<std::string, std::string> labels,
                   std::vector<std::pair<double, double>> points) {
    LabeledSeries s{std::move(labels), {}};
    for (auto [t, v] : points) s.series.add(t, v);
    return s;
  };
  // Steps 100..103; host a's scrapes at 100 and 101 served the sample of 99.5, the one at 102
  // the sample of 101.5; no scrape answered for step 103. Host b exported no sample times.
  std::vector<LabeledSeries> times = {
      series({{"job", "lw"}, {"instance", "a"}}, {{100, 99.5}, {101, 99.5}, {102, 101.5}})};
  std::vector<LabeledSeries> got = {
      series({{"job", "lw"}, {"instance", "a"}, {"target", "app"}},
             {{100, 10}, {101, 10}, {102, 30}, {103, 30}}),
      series({{"job", "lw"}, {"instance", "b"}, {"target", "app"}}, {{100, 1}})};
  report::restamp_to_samples(got, times);
  CHECK(got[0].series.t == std::vector<double>{99.5, 101.5});
  CHECK(got[0].series.v == std::vector<double>{10, 30});
  CHECK(got[1].series.empty());

  auto before = got;
  report::restamp_to_samples(got, {});  // not a loadwatch: nothing to go by, nothing moves
  CHECK(got[0].series.t == before[0].series.t);
}

TEST_CASE("a run is found by its whole name, also with the suffix of a second run that second") {
  FakePrometheus prom;
  prom.scrape(kT0, kT0 + 5, [](double) {
    return std::vector<Stored>{gauge("loadwatch_run_start_timestamp_seconds",
                                     {{"run", "20270115T080000-step-load-2"}}, kT0),
                               gauge("loadwatch_run_start_timestamp_seconds",
                                     {{"run", "20270115T070000-load-x"}}, kT0 - 1)};
  });
  CHECK(report::find_prometheus_run(prom, "step-load", kT0 + 10, 60).id ==
        "20270115T080000-step-load-2");
  CHECK(report::find_prometheus_run(prom, "load-x", kT0 + 10, 60).id == "20270115T070000-load-x");
  for (std::string ref : {"load", "step", "load-2", "x", "load-x-2"}) {
    INFO(ref);
    CHECK_THROWS_AS(report::find_prometheus_run(prom, ref, kT0 + 10, 60),
                    report::SeriesSourceError);
  }
}

// A real capture (tests/fixtures/prometheus/capture.py): a Prometheus's query_range answers for
// a loadwatch that pulls a Locust, whose counts move every 2 s or so and are up to 2 s old when
// scraped, and the requests that Locust logged itself as it counted them.
namespace {

std::string captured(const std::string& name) {
  std::ifstream in(fixture_path("prometheus/" + name));
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The captured answers as PrometheusSeriesSource::fetch() gives them: at loadwatch's sample
/// times, without the scrape's labels.
class CapturedPrometheus : public report::SeriesSource {
 public:
  CapturedPrometheus()
      : times_(
            report::parse_query_range(captured("loadwatch_last_sample_timestamp_seconds.json"))) {}

  std::vector<LabeledSeries> fetch(const std::string& family,
                                   const std::map<std::string, std::string>& match, double from,
                                   double to) override {
    std::ifstream exists(fixture_path("prometheus/" + family + ".json"));
    if (!exists || !match.empty()) return {};
    auto out = report::parse_query_range(captured(family + ".json"));
    report::restamp_to_samples(out, times_);
    for (auto& s : out) {
      s.labels.erase("job");
      s.labels.erase("instance");
      analysis::Series in;
      for (std::size_t i = 0; i < s.series.t.size(); ++i) {
        if (s.series.t[i] >= from && s.series.t[i] <= to) in.add(s.series.t[i], s.series.v[i]);
      }
      s.series = std::move(in);
    }
    return out;
  }

 private:
  std::vector<LabeledSeries> times_;
};

/// When Locust counted each request (its request log), in order.
std::vector<double> locust_counted() {
  std::istringstream in(captured("requests.txt"));
  std::vector<double> out;
  std::string kind;
  double at, ms;
  int ok;
  while (in >> kind >> at >> ms >> ok) out.push_back(at);
  std::sort(out.begin(), out.end());
  return out;
}

double counted_by(const std::vector<double>& log, double t) {
  return static_cast<double>(std::upper_bound(log.begin(), log.end(), t) - log.begin());
}

}  // namespace

TEST_CASE("Prometheus's counter changes are dated by the data's age to when Locust counted them") {
  const auto window = nlohmann::json::parse(captured("window.json"));
  const double from = window["from"], to = window["to"];
  const auto log = locust_counted();
  CapturedPrometheus prom;
  auto one = [&](const char* family) {
    auto all = prom.fetch(family, {}, from, to);
    REQUIRE(all.size() == 1);
    return all[0].series;
  };
  const auto requests = one("loadwatch_generator_requests_total");
  const auto age = one("loadwatch_generator_data_age_seconds");
  const auto uncertainty = one("loadwatch_generator_data_age_uncertainty_seconds");
  auto points = analysis::change_points(requests, &age, &uncertainty);
  REQUIRE(points.size() >= 6);
  std::size_t wrong_at_sample = 0;
  for (const auto& c : points) {
    INFO("count " << c.value << " in [" << c.earliest << ", " << c.latest << "]");
    // Locust's count was read between these two moments: it lies between its counts at them.
    CHECK(counted_by(log, c.earliest) <= c.value);
    CHECK(c.value <= counted_by(log, c.latest));
    CHECK(c.latest - c.earliest < 0.01);
    if (counted_by(log, c.sample_time) != c.value) ++wrong_at_sample;
  }
  // Dated by the sample that carried it instead, a count is Locust's count of another moment.
  CHECK(wrong_at_sample >= points.size() - 1);
}

TEST_CASE("Prometheus's req/s holds the requests Locust logged over the window it states") {
  const auto window = nlohmann::json::parse(captured("window.json"));
  const auto log = locust_counted();
  CapturedPrometheus prom;
  analysis::RunSeries rs = report::load_run_series(prom, window["from"], window["to"]);
  REQUIRE(rs.generator.sources.size() == 1);
  const auto& steps = window["steps"];
  for (std::size_t k = 0; k + 1 < steps.size(); ++k) {
    analysis::PhaseStats p;
    p.name = "users=" + std::to_string(steps[k][1].get<int>());
    p.start = steps[k][0].get<double>();
    p.users = steps[k][1].get<int>();
    double end = steps[k + 1][0];
    INFO(p.name);
    analysis::summarize_generator(p, rs.generator, (*p.start + end) / 2, end);
    REQUIRE(p.rps);
    const double lo = *p.rps_window_start, hi = *p.rps_window_end;
    CHECK(lo >= *p.start);
    CHECK(hi <= end);
    // A request at each end may fall on either side of the moment its count was read.
    const double logged = (counted_by(log, hi) - counted_by(log, lo)) / (hi - lo);
    CHECK(logged >= *p.rps_low - 2 / (hi - lo));
    CHECK(logged <= *p.rps_high + 2 / (hi - lo));
  }
}

namespace {

/// A Prometheus that answers query_range from the captured answers: the captured steps (every
/// whole second) from start to end, as the real one answered them.
struct CapturedServer {
  CapturedServer() : http(test::loopback_settings()) {
    http.route("/api/v1/query_range", [this](const HttpRequest& req) {
      std::string family = req.query_param("query");
      family = family.substr(0, family.find('{'));
      ends.push_back(std::stod(req.query_param("end")));
      auto answer = nlohmann::json::parse(captured(family + ".json"));
      double start = std::stod(req.query_param("start")), end = ends.back();
      for (auto& r : answer["data"]["result"]) {
        nlohmann::json kept = nlohmann::json::array();
        for (const auto& p : r["values"]) {
          if (p[0].get<double>() >= start && p[0].get<double>() <= end) kept.push_back(p);
        }
        r["values"] = kept;
      }
      HttpResponse out;
      out.content_type = "application/json";
      out.body = answer.dump();
      return out;
    });
    http.start();
  }
  std::string url() const { return test::loopback_url(http); }
  std::vector<double> ends;  // of the queries asked
  HttpServer http;
};

}  // namespace

TEST_CASE("a range's last samples are read though Prometheus scraped them after its end") {
  const auto window = nlohmann::json::parse(captured("window.json"));
  const double from = window["from"];
  // The sample that carried the first change, and a range that ends 0.3 s after it: before
  // the scrape that read it (the next whole second, the captured steps).
  CapturedPrometheus captured_series;
  auto requests =
      captured_series.fetch("loadwatch_generator_requests_total", {}, from, window["to"])[0].series;
  auto points = analysis::change_points(requests);
  REQUIRE_FALSE(points.empty());
  const double taken = points[0].sample_time, to = taken + 0.3;
  REQUIRE(std::ceil(taken) > to);

  CapturedServer prom;
  report::PrometheusSourceOptions o;
  o.url = prom.url();
  report::PrometheusSeriesSource source(o);
  auto got = source.fetch("loadwatch_generator_requests_total", {}, from, to);
  REQUIRE(got.size() == 1);
  CHECK(got[0].labels.at("source") == "lc");
  REQUIRE_FALSE(got[0].series.empty());
  CHECK(got[0].series.t.back() == taken);
  CHECK(got[0].series.v.back() == points[0].value);
  CHECK(prom.ends.back() >= std::ceil(taken));
}
