#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "push/jmeter_model.h"
#include "tests/lib/fixture_file.h"
#include "tests/lib/sample_values.h"

using namespace loadwatch;
using loadwatch::test::read_fixture;

namespace {

// name{sorted labels} -> value, for exact lookups.
std::map<std::string, double> flatten(const JMeterModel& m, double now = 1000) {
  MetricSink sink;
  m.collect(sink, now);
  return test::sample_values(sink);
}

void graphite(JMeterModel& m, std::string_view text, double now = 1000) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    GraphiteLine l;
    REQUIRE(parse_graphite_line(line, l) == nullptr);
    m.ingest_graphite(l, now);
  }
}

}  // namespace

TEST_CASE("jmeter graphite path: prefix, context and metric split from the right") {
  JMeterGraphitePath p;
  REQUIRE(split_jmeter_graphite_path("jmeter.home.a.pct99_9", p));
  CHECK(p.prefix == "jmeter");
  CHECK(p.context == "home");
  CHECK(p.metric == "a.pct99_9");
  REQUIRE(split_jmeter_graphite_path("my.app.jmeter.all.ko.count", p));
  CHECK(p.prefix == "my.app.jmeter");
  CHECK(p.context == "all");
  CHECK(p.metric == "ko.count");
  REQUIRE(split_jmeter_graphite_path("jmeter.test.startedT", p));
  CHECK(p.context == "test");
  CHECK(p.metric == "startedT");
  REQUIRE(split_jmeter_graphite_path("all.a.count", p));  // empty rootMetricsPrefix
  CHECK(p.prefix.empty());
  CHECK(p.context == "all");
  CHECK_FALSE(split_jmeter_graphite_path("servers.web1.cpu.user", p));
  CHECK_FALSE(split_jmeter_graphite_path("jmeter.home.meanAT", p));  // threads only in "test"
  CHECK_FALSE(split_jmeter_graphite_path("a.count", p));
  CHECK_FALSE(split_jmeter_graphite_path(".a.count", p));
  CHECK_FALSE(split_jmeter_graphite_path("", p));
}

TEST_CASE("jmeter percentile suffix to quantile label, without float rounding") {
  CHECK(percentile_to_quantile("99_9") == "0.999");
  CHECK(percentile_to_quantile("99.9") == "0.999");
  CHECK(percentile_to_quantile("90.0") == "0.9");
  CHECK(percentile_to_quantile("90") == "0.9");
  CHECK(percentile_to_quantile("95") == "0.95");
  CHECK(percentile_to_quantile("5") == "0.05");
  CHECK(percentile_to_quantile("99,99") == "0.9999");
  CHECK(percentile_to_quantile("100") == "1");
  CHECK(percentile_to_quantile("100.0") == "1");
  CHECK(percentile_to_quantile("0") == "0");
  CHECK(percentile_to_quantile("050") == "0.5");
  CHECK(percentile_to_quantile("100.5").empty());
  CHECK(percentile_to_quantile("250").empty());
  CHECK(percentile_to_quantile("9x").empty());
  CHECK(percentile_to_quantile("").empty());
  CHECK(percentile_to_quantile("9.9.9").empty());
}

TEST_CASE("jmeter graphite: per-interval counts add up; gauges keep the latest value") {
  JMeterModel m("graphite");
  graphite(m,
           "jmeter.all.a.count 10 1\n"
           "jmeter.all.ko.count 2 1\n"
           "jmeter.all.a.pct90 30.0 1\n"
           "jmeter.all.a.pct99_9 50.0 1\n"
           "jmeter.all.a.min 1.0 1\n"
           "jmeter.all.a.max 70.0 1\n"
           "jmeter.home.a.count 6 1\n"
           "jmeter.home.ko.count 0 1\n"
           "jmeter.home.a.pct90 20.0 1\n"
           "jmeter.test.startedT 4 1\n"
           "jmeter.test.endedT 1 1\n"
           "jmeter.test.meanAT 3 1\n");
  graphite(m,
           "jmeter.all.a.count 5 2\n"
           "jmeter.all.ko.count 1 2\n"
           "jmeter.all.a.pct90 40.0 2\n"
           "jmeter.home.a.count 3 2\n"
           "jmeter.home.ko.count 1 2\n",
           2000);
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_requests_total{source=jmeter}"] == 15);
  CHECK(v["loadwatch_generator_failures_total{source=jmeter}"] == 3);
  CHECK(v["loadwatch_generator_latency_seconds{source=jmeter,quantile=0.9}"] == Approx(0.040));
  CHECK(v["loadwatch_generator_latency_seconds{source=jmeter,quantile=0.999}"] == Approx(0.050));
  CHECK(v["loadwatch_generator_latency_min_seconds{source=jmeter}"] == Approx(0.001));
  CHECK(v["loadwatch_generator_latency_max_seconds{source=jmeter}"] == Approx(0.070));
  CHECK(v.count("loadwatch_generator_latency_avg_seconds{source=jmeter}") == 0);  // 2.13 sends none
  CHECK(v["loadwatch_generator_endpoint_requests_total{source=jmeter,name=home,method=}"] == 9);
  CHECK(v["loadwatch_generator_endpoint_failures_total{source=jmeter,name=home,method=}"] == 1);
  CHECK(v["loadwatch_generator_endpoint_latency_seconds{source=jmeter,name=home,method=,"
          "quantile=0.9}"] == Approx(0.020));
  CHECK(v["loadwatch_generator_users{source=jmeter}"] == 3);  // startedT - endedT
  CHECK(v["loadwatch_push_last_timestamp_seconds{protocol=graphite,source=jmeter}"] == 2000);
  CHECK(v["loadwatch_push_lines_total{protocol=graphite}"] == 17);
  // The aggregate is its own metric, never a label value.
  for (const auto& [k, _] : v) CHECK(k.find("name=all") == std::string::npos);
}

TEST_CASE("jmeter graphite: prefix names the source; meanAT when thread totals are missing") {
  JMeterModel m("graphite");
  graphite(m,
           "loadwatch.it.all.a.count 1 1\n"
           "all.a.count 2 1\n"
           "shop.test.meanAT 7 1\n"
           "shop.all.h.count 9 1\n"
           "shop.all.ok.avg 12 1\n"
           "shop.all.a.avg 12 1\n");
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_requests_total{source=loadwatch.it}"] == 1);
  CHECK(v["loadwatch_generator_requests_total{source=jmeter}"] == 2);
  CHECK(v["loadwatch_generator_users{source=shop}"] == 7);
  CHECK(v["loadwatch_generator_requests_total{source=shop}"] == 0);  // hits are not requests
  CHECK(v["loadwatch_generator_latency_avg_seconds{source=shop}"] == Approx(0.012));
}

TEST_CASE("jmeter graphite: non-JMeter lines and bad counts are counted, not used") {
  JMeterModel m("graphite");
  GraphiteLine l{"servers.web1.cpu", 5, 1};
  CHECK(m.ingest_graphite(l, 1) == JMeterModel::Result::Unknown);
  l = {"jmeter.all.a.bogus", 5, 1};
  CHECK(m.ingest_graphite(l, 1) == JMeterModel::Result::Unknown);
  l = {"jmeter.all.a.count", -5, 1};
  CHECK(m.ingest_graphite(l, 1) == JMeterModel::Result::Taken);
  l = {"jmeter.all.a.count", std::nan(""), 1};
  CHECK(m.ingest_graphite(l, 1) == JMeterModel::Result::Taken);
  m.count_rejected("too_long");
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_requests_total{source=jmeter}"] == 0);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=graphite,reason=unknown}"] == 2);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=graphite,reason=too_long}"] == 1);
  CHECK(v["loadwatch_push_lines_total{protocol=graphite}"] == 5);
}

TEST_CASE("jmeter graphite: series caps drop and count the excess") {
  JMeterModel m("graphite", JMeterModel::Limits{2, 3});
  for (int i = 0; i < 5; ++i) {
    std::string path = "jmeter.t" + std::to_string(i) + ".a.count";
    GraphiteLine l{path, 1, 1};
    m.ingest_graphite(l, 1);
  }
  for (int i = 0; i < 4; ++i) {
    std::string path = "src" + std::to_string(i) + ".all.a.count";
    GraphiteLine l{path, 1, 1};
    m.ingest_graphite(l, 1);
  }
  auto v = flatten(m);
  int endpoints = 0, sources = 0;
  for (const auto& [k, _] : v) {
    endpoints += k.rfind("loadwatch_generator_endpoint_requests_total{", 0) == 0;
    sources += k.rfind("loadwatch_generator_requests_total{", 0) == 0;
  }
  CHECK(endpoints == 3);
  CHECK(sources == 2);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=graphite,reason=max_transactions}"] == 2);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=graphite,reason=max_sources}"] == 3);
}

TEST_CASE("jmeter graphite: a real JMeter 2.13 capture adds up to its result file") {
  // Captured from tests/fixtures/jmeter/graphite_plan.jmx (2 threads x 60 loops, GET / and
  // GET /missing -> 404): the JTL beside it has 240 samples, 120 of them failed.
  JMeterModel m("graphite");
  graphite(m, read_fixture("jmeter/graphite_2.13_capture.txt"));
  std::istringstream jtl(read_fixture("jmeter/graphite_2.13_capture.jtl"));
  std::map<std::string, int> requests, failures;
  int total = 0, failed = 0;
  std::string line;
  while (std::getline(jtl, line)) {
    // timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,...
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
    REQUIRE(cols.size() >= 8);
    ++requests[cols[2]];
    ++total;
    if (cols[7] == "false") {
      ++failures[cols[2]];
      ++failed;
    }
  }
  REQUIRE(total == 240);
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_requests_total{source=loadwatch.it}"] == total);
  CHECK(v["loadwatch_generator_failures_total{source=loadwatch.it}"] == failed);
  for (const auto& [name, n] : requests) {
    INFO(name);
    CHECK(v["loadwatch_generator_endpoint_requests_total{source=loadwatch.it,name=" + name +
            ",method=}"] == n);
    CHECK(v["loadwatch_generator_endpoint_failures_total{source=loadwatch.it,name=" + name +
            ",method=}"] == failures[name]);
  }
  CHECK(v["loadwatch_generator_users{source=loadwatch.it}"] == 0);  // run over: all ended
  CHECK(v.count("loadwatch_generator_latency_seconds{source=loadwatch.it,quantile=0.999}") == 1);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=graphite,reason=unknown}"] == 0);
}

TEST_CASE("jmeter influx: aggregate, endpoints, threads and run annotations") {
  JMeterModel m("influx");
  std::string body =
      "events,application=shop,title=ApacheJMeter text=\"Test name started\" "
      "1700000000000000000\n"
      "jmeter,application=shop,transaction=all,statut=all count=10,countError=2,avg=12.5,min=1.0,"
      "max=80.0,hit=10,sb=1000,rb=20000,pct90.0=30.0,pct99.9=79.0 1700000005000000000\n"
      "jmeter,application=shop,transaction=home,statut=all count=6,avg=10.0,min=1.0,max=50.0,"
      "hit=6,sb=600,rb=12000,pct90.0=20.0 1700000005000000000\n"
      "jmeter,application=shop,transaction=home,statut=ok count=5,avg=9.0 1700000005000000000\n"
      "jmeter,application=shop,transaction=home,statut=ko count=1,avg=15.0 1700000005000000000\n"
      "jmeter,application=shop,transaction=home,responseCode=500,responseMessage=Server\\ Error "
      "count=1 1700000005000000000\n"
      "jmeter,application=shop,transaction=internal minAT=2,maxAT=3,meanAT=2.5,startedT=3,"
      "endedT=0 1700000005000000000\n";
  auto r = m.ingest_influx("perf", body, 1700000006);
  CHECK(r.malformed == 0);
  CHECK(r.points == 7);
  CHECK(r.taken == 7);
  // Second interval, and the end annotation.
  r = m.ingest_influx(
      "perf",
      "jmeter,application=shop,transaction=all,statut=all count=4,countError=1,pct90.0=35.0,"
      "sb=10,rb=20 1700000010000000000\n"
      "jmeter,application=shop,transaction=home,statut=all count=4 1700000010000000000\n"
      "jmeter,application=shop,transaction=home,statut=ko count=1 1700000010000000000\n"
      "jmeter,application=shop,transaction=internal minAT=0,maxAT=3,meanAT=1,startedT=3,"
      "endedT=3 1700000010000000000\n"
      "events,application=shop,title=ApacheJMeter text=\"Test name ended\" 1700000010500000000\n",
      1700000011);
  CHECK(r.malformed == 0);
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_requests_total{source=perf}"] == 14);
  CHECK(v["loadwatch_generator_failures_total{source=perf}"] == 3);
  CHECK(v["loadwatch_generator_latency_seconds{source=perf,quantile=0.9}"] == Approx(0.035));
  CHECK(v["loadwatch_generator_latency_seconds{source=perf,quantile=0.999}"] == Approx(0.079));
  CHECK(v["loadwatch_generator_latency_avg_seconds{source=perf}"] == Approx(0.0125));
  CHECK(v["loadwatch_generator_endpoint_requests_total{source=perf,name=home,method=}"] == 10);
  CHECK(v["loadwatch_generator_endpoint_failures_total{source=perf,name=home,method=}"] == 2);
  CHECK(v["loadwatch_generator_endpoint_latency_avg_seconds{source=perf,name=home,method=}"] ==
        Approx(0.010));
  CHECK(v["loadwatch_generator_sent_bytes_total{source=perf}"] == 1010);
  CHECK(v["loadwatch_generator_received_bytes_total{source=perf}"] == 20020);
  CHECK(v["loadwatch_generator_users{source=perf}"] == 0);
  CHECK(v["loadwatch_generator_run_start_timestamp_seconds{source=perf}"] == 1700000000);
  CHECK(v["loadwatch_generator_run_end_timestamp_seconds{source=perf}"] == Approx(1700000010.5));
  CHECK(v["loadwatch_push_last_timestamp_seconds{protocol=influx,source=perf}"] == 1700000011);
  CHECK(v["loadwatch_push_lines_total{protocol=influx}"] == 12);
  // responseCode points and statut=ok points do not create series of their own.
  for (const auto& [k, _] : v) CHECK(k.find("name=all") == std::string::npos);
  for (const auto& [k, _] : v) CHECK(k.find("name=internal") == std::string::npos);
}

TEST_CASE("jmeter influx: a new run's start annotation clears the old end") {
  JMeterModel m("influx");
  m.ingest_influx("p", "events text=\"T started\" 1000000000\nevents text=\"T ended\" 2000000000",
                  5);
  m.ingest_influx("p", "events text=\"T started\" 3000000000", 5);
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_run_start_timestamp_seconds{source=p}"] == 3);
  CHECK(v.count("loadwatch_generator_run_end_timestamp_seconds{source=p}") == 0);
}

TEST_CASE("jmeter influx: precision scales annotation timestamps") {
  JMeterModel m("influx");
  m.ingest_influx("p", "events text=\"x started\" 1700000000123", 5, 1000000);
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_run_start_timestamp_seconds{source=p}"] == Approx(1700000000.123));
}

TEST_CASE("jmeter influx: malformed lines are counted, the valid ones of the body taken") {
  JMeterModel m("influx");
  auto r = m.ingest_influx("p",
                           "jmeter,transaction=all,statut=all count=3\n"
                           "jmeter,transaction=all,statut=all count=\n"
                           "cpu,host=a usage=5\n"
                           "jmeter,transaction=all,statut=all count=4\n",
                           1);
  CHECK(r.points == 3);
  CHECK(r.taken == 2);
  CHECK(r.malformed == 1);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].line == 2);
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_requests_total{source=p}"] == 7);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=parse}"] == 1);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=unknown}"] == 1);
}

TEST_CASE("jmeter influx: at most a few errors are kept for a garbage body") {
  JMeterModel m("influx");
  std::string body;
  for (int i = 0; i < 1000; ++i) body += "garbage\n";
  auto r = m.ingest_influx("p", body, 1);
  CHECK(r.malformed == 1000);
  CHECK(r.errors.size() == JMeterModel::kMaxReportedErrors);
}

TEST_CASE("jmeter influx: escaped transaction names are unescaped in the label") {
  JMeterModel m("influx");
  m.ingest_influx("p", "jmeter,transaction=Login\\ page\\,\\ step\\=1,statut=all count=2", 1);
  auto v = flatten(m);
  CHECK(
      v["loadwatch_generator_endpoint_requests_total{source=p,name=Login page, step=1,method=}"] ==
      2);
}

TEST_CASE("jmeter model: at the source cap a long-quiet source makes room for a new one") {
  JMeterModel::Limits limits;
  limits.max_sources = 2;
  limits.evict_after_s = 600;
  JMeterModel m("influx", limits);
  const char* line = "jmeter,transaction=all,statut=all count=1\n";
  m.ingest_influx("old", line, 1000);
  m.ingest_influx("busy", line, 1500);
  // At 1400 nobody has been quiet for 600 s: the newcomer is dropped.
  auto refused = m.ingest_influx("new1", line, 1400);
  CHECK(std::string_view(refused.refused) == "max_sources");
  CHECK(refused.retry_after_s == 200);  // "old" may go at 1600
  CHECK(refused.taken == 0);
  auto v = flatten(m);
  CHECK(v.count("loadwatch_generator_requests_total{source=new1}") == 0);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=max_sources}"] == 1);
  // At 1700 "old" has been quiet for 700 s: it is forgotten, "new2" takes its place.
  m.ingest_influx("busy", line, 1700);
  m.ingest_influx("new2", line, 1700);
  v = flatten(m);
  CHECK(v.count("loadwatch_generator_requests_total{source=old}") == 0);
  CHECK(v["loadwatch_generator_requests_total{source=new2}"] == 1);
  CHECK(v["loadwatch_generator_requests_total{source=busy}"] == 2);
}

TEST_CASE("jmeter influx: a body with nothing JMeter-shaped creates no source") {
  JMeterModel m("influx");
  m.ingest_influx("telegraf", "cpu,host=a usage=5\nmem used=1i\n", 1);
  m.ingest_influx("broken", "garbage\n", 1);
  auto v = flatten(m);
  for (const auto& [k, _] : v) CHECK(k.find("loadwatch_generator_") != 0);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=unknown}"] == 2);
}

TEST_CASE("jmeter graphite: latency summaries; _sum from means paired with counts by time") {
  JMeterModel m("graphite");
  // JMeter 3.x+ order within a send: counts first, then min/max/avg/percentiles.
  graphite(m,
           "jmeter.all.a.count 10 100\n"
           "jmeter.all.a.avg 20.0 100\n"
           "jmeter.all.a.pct95 40.0 100\n"
           "jmeter.home.a.avg 5.0 100\n"  // mean before count works too
           "jmeter.home.a.count 6 100\n"  // other samplers not listed: endpoints cover 10 of 14
           "jmeter.all.a.count 4 101\n"
           "jmeter.all.a.avg 50.0 101\n"
           "jmeter.home.a.count 4 101\n"
           "jmeter.home.a.avg 50.0 101\n");
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_latency_seconds_count{source=jmeter}"] == 14);
  CHECK(v["loadwatch_generator_latency_seconds_sum{source=jmeter}"] ==
        Approx(10 * 0.02 + 4 * 0.05));
  CHECK(v["loadwatch_generator_latency_seconds{source=jmeter,quantile=0.95}"] == Approx(0.04));
  CHECK(v["loadwatch_generator_endpoint_latency_seconds_sum{source=jmeter,name=home,method=}"] ==
        Approx(6 * 0.005 + 4 * 0.05));
}

TEST_CASE("jmeter graphite: without means (JMeter 2.13) the _sum is NaN, never made up") {
  JMeterModel m("graphite");
  graphite(m, read_fixture("jmeter/graphite_2.13_capture.txt"));
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_latency_seconds_count{source=loadwatch.it}"] == 240);
  CHECK(std::isnan(v["loadwatch_generator_latency_seconds_sum{source=loadwatch.it}"]));
  CHECK(
      std::isnan(v["loadwatch_generator_endpoint_latency_seconds_sum{source=loadwatch.it,name=home,"
                   "method=}"]));
}

TEST_CASE("jmeter influx: _sum from endpoints when they cover the aggregate") {
  JMeterModel m("influx");
  // JMeter's aggregate avg is the mean of OK samples only (here 9 ms), so with failures it
  // cannot give the sum; the endpoints' all-status means (10 ms, 30 ms) can.
  m.ingest_influx("p",
                  "jmeter,transaction=all,statut=all count=4,countError=1,avg=9.0\n"
                  "jmeter,transaction=a,statut=all count=3,avg=10.0\n"
                  "jmeter,transaction=b,statut=all count=1,avg=30.0\n",
                  1);
  auto v = flatten(m);
  CHECK(v["loadwatch_generator_latency_seconds_count{source=p}"] == 4);
  CHECK(v["loadwatch_generator_latency_seconds_sum{source=p}"] == Approx(0.030 + 0.030));
  CHECK(v["loadwatch_generator_endpoint_latency_seconds_sum{source=p,name=a,method=}"] ==
        Approx(0.030));
}

TEST_CASE("jmeter influx: summaryOnly aggregate: _sum only while nothing failed") {
  JMeterModel ok("influx");
  ok.ingest_influx("p", "jmeter,transaction=all,statut=all count=4,countError=0,avg=10.0\n", 1);
  CHECK(flatten(ok)["loadwatch_generator_latency_seconds_sum{source=p}"] == Approx(0.04));
  JMeterModel failed("influx");
  failed.ingest_influx("p",
                       "jmeter,transaction=all,statut=all count=4,countError=0,avg=10.0\n"
                       "jmeter,transaction=all,statut=all count=4,countError=1,avg=10.0\n",
                       1);
  auto v = flatten(failed);
  CHECK(v["loadwatch_generator_latency_seconds_count{source=p}"] == 8);
  CHECK(std::isnan(v["loadwatch_generator_latency_seconds_sum{source=p}"]));
}

TEST_CASE("jmeter influx: distinct pctN fields past the cap are dropped, in linear time") {
  // Before the cap every new field scanned every kept quantile under the model's lock
  // (20 s for a line of 128,000; such a line is now malformed: kInfluxMaxFields). Now each
  // field costs at most kMaxQuantilesPerSeries compares.
  std::string line = "jmeter,transaction=t,statut=all count=1";
  for (std::size_t i = 0; i + 1 < kInfluxMaxFields; ++i) {
    line += ",pct" + std::to_string(i / 100) + "." + std::to_string(i % 100) + "=1";
  }
  line += "\n";
  JMeterModel m("influx");
  auto outcome = m.ingest_influx("db", line, 1000);
  CHECK(outcome.malformed == 0);
  CHECK(outcome.taken == 1);
  MetricSink sink;
  m.collect(sink, 1000);
  for (const auto& f : sink.families()) {
    if (f.name != "loadwatch_generator_endpoint_latency_seconds") continue;
    REQUIRE(f.metric.size() == 1);
    CHECK(f.metric[0].summary.quantile.size() == kMaxQuantilesPerSeries);
  }
  auto v = flatten(m);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=max_quantiles}"] == 1);

  std::string huge = "jmeter,transaction=t,statut=all count=1";
  for (int i = 0; i < 128000; ++i) huge += ",pct" + std::to_string(i) + "=1";
  auto refused = m.ingest_influx("db", huge + "\n", 1000);
  CHECK(refused.malformed == 1);
  REQUIRE(refused.errors.size() == 1);
  CHECK(std::string(refused.errors[0].message) == "too many fields");
}

TEST_CASE("jmeter: names past the label cap are refused, not stored") {
  JMeterModel m("influx");
  std::string big(64 * 1024, 'n');
  auto outcome = m.ingest_influx("db", "jmeter,transaction=" + big + ",statut=all count=1\n", 1000);
  CHECK(outcome.taken == 0);
  auto v = flatten(m);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=label_limit}"] == 1);
  for (const auto& [k, _] : v) CHECK(k.find(big) == std::string::npos);

  JMeterModel g("graphite");
  // GraphiteLine views its path: the strings must outlive the lines.
  const std::string long_prefix = std::string(3000, 'p') + ".all.a.count";
  const std::string long_name = "jmeter." + std::string(3000, 't') + ".a.count";
  GraphiteLine l{long_prefix, 1, 1};
  CHECK(g.ingest_graphite(l, 1) == JMeterModel::Result::Dropped);
  GraphiteLine e{long_name, 1, 1};
  CHECK(g.ingest_graphite(e, 1) == JMeterModel::Result::Dropped);
  CHECK(flatten(g)["loadwatch_push_rejected_lines_total{protocol=graphite,reason=label_limit}"] ==
        2);
}

TEST_CASE("jmeter: series caps per source and per listener bound what 8 databases export") {
  // 100 transactions x 8 databases, as in the 525 MB /metrics report, with small caps.
  JMeterModel::Limits limits;
  limits.max_series_per_source = JMeterModel::kSourceSeries + 10 * JMeterModel::kEndpointSeries;
  limits.max_series = 3 * limits.max_series_per_source;
  JMeterModel m("influx", limits);
  std::size_t refused = 0;
  for (int db = 0; db < 8; ++db) {
    std::string body;
    for (int t = 0; t < 100; ++t) {
      body += "jmeter,transaction=t" + std::to_string(t) + ",statut=all count=1\n";
    }
    auto outcome = m.ingest_influx("db" + std::to_string(db), body, 1000);
    if (outcome.refused) {
      CHECK(std::string_view(outcome.refused) == "max_series");
      ++refused;
    }
  }
  CHECK(refused == 5);  // three databases fill the listener
  auto v = flatten(m);
  int endpoints = 0;
  for (const auto& [k, _] : v) {
    endpoints += k.rfind("loadwatch_generator_endpoint_requests_total{", 0) == 0;
  }
  CHECK(endpoints == 30);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=max_series}"] ==
        3 * 90 + 5 * 100);
}

TEST_CASE("jmeter influx: a source evicted or never kept gives its series back") {
  JMeterModel::Limits limits;
  limits.max_sources = 1;
  limits.evict_after_s = 10;
  limits.max_series = JMeterModel::kSourceSeries + JMeterModel::kEndpointSeries;
  JMeterModel m("influx", limits);
  const char* line = "jmeter,transaction=a,statut=all count=1\n";
  CHECK(m.ingest_influx("one", line, 1000).refused == nullptr);
  // A body with nothing JMeter-shaped leaves no source, and takes no series.
  CHECK(m.ingest_influx("one", "cpu value=1\n", 1000).refused == nullptr);
  // "one" is evicted after 10 s: "two" gets the whole series budget again.
  CHECK(m.ingest_influx("two", line, 1011).refused == nullptr);
  CHECK(flatten(m)["loadwatch_generator_endpoint_requests_total{source=two,name=a,method=}"] == 1);
}

TEST_CASE("jmeter graphite: the figures' age runs from the last aggregate count's timestamp") {
  // The capture's timestamps are JMeter's, in whole seconds: its last aggregate count line is
  // the moment the figures describe, known to a second.
  const std::string capture = read_fixture("jmeter/graphite_2.13_capture.txt");
  double last = -1;
  std::istringstream in(capture);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("loadwatch.it.all.a.count ", 0) == 0)
      last = std::stod(line.substr(line.rfind(' ')));
  }
  REQUIRE(last > 1.7e9);
  JMeterModel m("graphite");
  graphite(m, capture, last + 3);
  auto v = flatten(m, last + 7.5);
  CHECK(v["loadwatch_generator_data_age_seconds{source=loadwatch.it}"] == Approx(7.5));
  CHECK(v["loadwatch_generator_data_age_uncertainty_seconds{source=loadwatch.it}"] == 1);
}

TEST_CASE("jmeter influx: the figures' age runs from the point's timestamp, in its precision") {
  const std::string ns =
      "jmeter,application=shop,transaction=all,statut=all count=10,avg=12.5 "
      "1700000005123000000\n";
  JMeterModel m("influx");
  REQUIRE(m.ingest_influx("perf", ns, 1700000006).taken == 1);
  auto v = flatten(m, 1700000007.0);
  CHECK(v["loadwatch_generator_data_age_seconds{source=perf}"] == Approx(1.877).margin(1e-6));
  // JMeter stamps in milliseconds, written as nanoseconds.
  CHECK(v["loadwatch_generator_data_age_uncertainty_seconds{source=perf}"] == 1e-3);

  // precision=s: the stamp is known to a second.
  REQUIRE(m.ingest_influx("perf", "jmeter,transaction=all,statut=all count=1 1700000009\n",
                          1700000010, 1000000000)
              .taken == 1);
  v = flatten(m, 1700000010.0);
  CHECK(v["loadwatch_generator_data_age_seconds{source=perf}"] == Approx(1.0));
  CHECK(v["loadwatch_generator_data_age_uncertainty_seconds{source=perf}"] == 1);

  // A point without a timestamp gives no generator time: no age rather than a made-up one.
  REQUIRE(
      m.ingest_influx("perf", "jmeter,transaction=all,statut=all count=1\n", 1700000011).taken ==
      1);
  v = flatten(m, 1700000012.0);
  CHECK(v.count("loadwatch_generator_data_age_seconds{source=perf}") == 0);
  CHECK(v.count("loadwatch_generator_data_age_uncertainty_seconds{source=perf}") == 0);
  CHECK(v["loadwatch_generator_requests_total{source=perf}"] == 12);
}

TEST_CASE("jmeter model: a source quiet for evict_after_s is forgotten at the next sample") {
  JMeterModel::Limits limits;
  limits.evict_after_s = 600;
  JMeterModel m("influx", limits);
  const char* line =
      "jmeter,transaction=all,statut=all count=1\njmeter,transaction=t,statut=all count=1\n";
  m.ingest_influx("finished", line, 1000);
  m.ingest_influx("busy", line, 1000);
  m.ingest_influx("busy", line, 1500);
  CHECK(m.forget_quiet(1599) == 0);  // quiet for 599 s: kept
  CHECK(flatten(m, 1599)["loadwatch_generator_requests_total{source=finished}"] == 1);
  CHECK(m.forget_quiet(1600) == 1);  // 600 s: its series and their memory go
  auto v = flatten(m, 1600);
  for (const auto& [k, _] : v) CHECK(k.find("source=finished") == std::string::npos);
  CHECK(v["loadwatch_generator_requests_total{source=busy}"] == 2);
  // Its series no longer count against the caps: a new source is taken at once.
  CHECK(m.ingest_influx("next", line, 1600).taken == 2);  // both points
}
