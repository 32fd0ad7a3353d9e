// A run's report from the daemon's history: a synthetic step load recorded sample by sample
// into a real History (capacity 4 requests in service, 50 ms each), read back through the
// series-source interface; and Prometheus query_range answers parsed into the same series.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "history/history.h"
#include "metrics/metric_sink.h"
#include "report/history_series_source.h"
#include "report/prometheus_series_source.h"
#include "report/run_report.h"
#include "report/series_source.h"

using namespace loadwatch;

namespace {

constexpr double kT0 = 1.7e9;
constexpr int kStep = 40;  // seconds per phase
const std::vector<int> kUsers = {1, 2, 3, 4, 6, 8, 10};

double rps_at(int users) { return std::min(users, 4) / 0.05; }

struct Recorded {
  History history{HistorySettings{2000, 512}};
  Run run;
};

/// With `generator_quota`, the generator (Locust) is a target too, under a 0.2-core cgroup
/// quota that it fills from the capacity (80 req/s) on: 2.5 ms of CPU a request.
void record(Recorded& r, bool generator_quota = false) {
  double requests = 0, app_cpu = 0, gen_cpu = 0, idle = 0;
  r.run.id = "20230101T000000-steps";
  r.run.name = "steps";
  r.run.start = kT0;
  r.run.state = RunState::Finished;
  for (std::size_t i = 0; i < kUsers.size(); ++i) {
    r.run.phases.push_back({"users=" + std::to_string(kUsers[i]), kT0 + i * kStep, kUsers[i]});
    for (int s = 0; s < kStep; ++s) {
      double t = kT0 + i * kStep + s + 1;  // the requests of the second before t
      double rps = rps_at(kUsers[i]);
      requests += rps;
      app_cpu += rps * 0.002;  // 2 ms of CPU per request
      idle += 2 - rps * 0.002;
      MetricSink out;
      out.counter("loadwatch_process_cpu_seconds_total", "h", {{"target", "app"}, {"mode", "user"}},
                  app_cpu);
      out.gauge("loadwatch_target_processes", "h", {{"target", "app"}}, 1);
      out.gauge("loadwatch_process_resident_memory_bytes", "h", {{"target", "app"}}, 1e8);
      out.gauge("loadwatch_process_cpu_limit_cores", "h", {{"target", "app"}}, 2);
      if (generator_quota) {
        gen_cpu += std::min(rps * 0.0025, 0.2);
        out.counter("loadwatch_process_cpu_seconds_total", "h",
                    {{"target", "generator"}, {"mode", "user"}}, gen_cpu);
        out.gauge("loadwatch_target_processes", "h", {{"target", "generator"}}, 1);
        out.gauge("loadwatch_process_cpu_limit_cores", "h", {{"target", "generator"}}, 0.2);
      }
      out.counter("loadwatch_cpu_seconds_total", "h", {{"cpu", "0"}, {"mode", "idle"}}, idle / 2);
      out.counter("loadwatch_cpu_seconds_total", "h", {{"cpu", "1"}, {"mode", "idle"}}, idle / 2);
      out.counter("loadwatch_generator_requests_total", "h", {{"source", "lc"}}, requests);
      out.counter("loadwatch_generator_failures_total", "h", {{"source", "lc"}}, 0);
      double p95 = 0.05 * std::max(1.0, kUsers[i] / 4.0);
      auto families = out.take();
      prometheus::MetricFamily latency;
      latency.name = "loadwatch_generator_current_latency_seconds";
      latency.type = prometheus::MetricType::Summary;
      prometheus::ClientMetric m;
      m.label.push_back({"source", "lc"});
      for (auto [q, v] : {std::pair{0.5, p95 * 0.9}, {0.95, p95}, {0.99, p95 * 1.1}}) {
        prometheus::ClientMetric::Quantile quantile;
        quantile.quantile = q;
        quantile.value = v;
        m.summary.quantile.push_back(quantile);
      }
      latency.metric.push_back(m);
      families.push_back(latency);
      r.history.record(families, t);
    }
  }
  r.run.end = kT0 + kUsers.size() * kStep;
}

}  // namespace

TEST_CASE("a step load recorded in the history gives its knee at the capacity") {
  Recorded r;
  record(r);
  report::HistorySeriesSource source(r.history);
  analysis::RunSeries series;
  auto rep = report::report_for_run(r.run, source, *r.run.end + 5, {}, &series);
  REQUIRE(rep.phases.size() == kUsers.size());
  for (std::size_t i = 0; i < kUsers.size(); ++i) {
    REQUIRE(rep.phases[i].users == kUsers[i]);
    REQUIRE(rep.phases[i].rps);
    CHECK(*rep.phases[i].rps == Approx(rps_at(kUsers[i])).epsilon(0.01));
    REQUIRE(rep.phases[i].p95_seconds);
  }
  REQUIRE(series.host.cores);  // the history sums CPUs away: the source tells the count
  REQUIRE(rep.knee.phase);
  CHECK(rep.phases[rep.knee.phase->index].users == 4);
  REQUIRE(rep.phases[0].targets.size() == 1);
  REQUIRE(rep.phases[0].targets[0].cpu_cores);
  CHECK(*rep.phases[0].targets[0].cpu_cores == Approx(0.04).epsilon(0.05));  // float columns
  CHECK(rep.phases[0].targets[0].busiest_process_core_share);
}

TEST_CASE("a generator that fills its CPU quota is what saturated, judged by the quota") {
  Recorded r;
  record(r, true);
  report::HistorySeriesSource source(r.history);
  auto rep = report::report_for_run(r.run, source, *r.run.end + 5);
  REQUIRE(rep.knee.phase);
  const auto& at = rep.phases[rep.knee.phase->index];
  const auto* gen = at.target("generator");
  REQUIRE(gen);
  REQUIRE(gen->cpu_limit_cores);
  CHECK(*gen->cpu_limit_cores == Approx(0.2));
  // 0.2 cores is a tenth of the host and a fifth of one core: only the quota shows it full.
  REQUIRE_FALSE(rep.bottleneck.result.findings.empty());
  CHECK(rep.bottleneck.result.findings[0].check == analysis::Check::generator_cpu);
  CHECK(rep.bottleneck.result.findings[0].subject == "generator");
  REQUIRE(at.target("app"));
  CHECK(at.target("app")->cpu_limit_cores == 2);  // a limit no smaller than the host's
}

TEST_CASE("sum_aligned adds only the times every part has") {
  analysis::Series a, b;
  a.add(1, 1), a.add(2, 2), a.add(3, 3);
  b.add(2, 10), b.add(3, 20), b.add(4, 30);
  auto s = report::sum_aligned({&a, &b});
  CHECK(s.t == std::vector<double>{2, 3});
  CHECK(s.v == std::vector<double>{12, 23});
}

TEST_CASE("query_range answers become labelled series; errors are refused") {
  auto out = report::parse_query_range(
      R"({"status":"success","data":{"resultType":"matrix","result":[)"
      R"({"metric":{"__name__":"loadwatch_generator_requests_total","source":"lc","instance":"h:9797"},)"
      R"("values":[[1700000000,"10"],[1700000001,"25.5"],[1700000002,"NaN"]]}]}})");
  REQUIRE(out.size() == 1);
  CHECK(out[0].labels.at("source") == "lc");
  CHECK(out[0].labels.count("__name__") == 0);
  CHECK(out[0].series.v == std::vector<double>{10, 25.5});
  CHECK_THROWS_AS(report::parse_query_range("{\"status\":\"error\",\"error\":\"bad query\"}"),
                  report::SeriesSourceError);
  CHECK_THROWS_AS(report::parse_query_range("not json"), report::SeriesSourceError);
  CHECK_THROWS_AS(report::parse_query_range(
                      R"({"status":"success","data":{"resultType":"vector","result":[]}})"),
                  report::SeriesSourceError);
  CHECK(report::url_encode("a{b=\"c d\"}") == "a%7Bb%3D%22c%20d%22%7D");
}
