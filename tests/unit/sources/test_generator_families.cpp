// The loadwatch_generator_* families come from one table: Locust (pulled) and JMeter (pushed)
// emit the same name, type and HELP for every family they share.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "push/jmeter_model.h"
#include "sources/generator_families.h"
#include "sources/locust.h"
#include "tests/lib/fixture_file.h"

using namespace loadwatch;
using loadwatch::test::read_fixture;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TEST_CASE("every generator family: its enum slot, a unique loadwatch_generator_ name, a HELP") {
  std::set<std::string> names;
  std::size_t i = 0;
  for (const auto& spec : generator_families()) {
    INFO(spec.name);
    CHECK(static_cast<std::size_t>(spec.family) == i++);
    CHECK(std::string(spec.name).rfind("loadwatch_generator_", 0) == 0);
    CHECK(names.insert(spec.name).second);
    CHECK(std::string(spec.help).size() > 10);
    CHECK((spec.type == prometheus::MetricType::Counter) == ends_with(spec.name, "_total"));
  }
  CHECK(i == static_cast<std::size_t>(GeneratorFamily::kRequestDuration) + 1);
}

TEST_CASE("a sample of the wrong kind for its family is a programming error") {
  MetricSink sink;
  CHECK_THROWS_AS(add_generator_sample(sink, GeneratorFamily::kLatency, {}, 1), std::logic_error);
  CHECK_THROWS_AS(add_generator_summary(sink, GeneratorFamily::kUsers, {}, 1, 1), std::logic_error);
  CHECK(sink.families().empty());
}

TEST_CASE("Locust and JMeter emit each generator family with the table's type and HELP") {
  MetricSink sink;
  LocustStats stats;
  std::string error;
  REQUIRE(
      parse_locust_stats(read_fixture("sources/locust_2.28_stats_requests.json"), stats, error));
  LocustMapper mapper;
  mapper.map(stats, "locust", sink);

  JMeterModel jmeter("influx");
  const auto r = jmeter.ingest_influx(
      "jmeter",
      "events,application=shop,title=ApacheJMeter text=\"Test name started\" "
      "1700000000000000000\n"
      "jmeter,application=shop,transaction=all,statut=all count=10,countError=2,avg=12.5,min=1.0,"
      "max=80.0,hit=10,sb=1000,rb=20000,pct90.0=30.0 1700000005000000000\n"
      "jmeter,application=shop,transaction=home,statut=all count=6,avg=10.0,min=1.0,max=50.0,"
      "hit=6,sb=600,rb=12000,pct90.0=20.0 1700000005000000000\n"
      "jmeter,application=shop,transaction=internal minAT=2,maxAT=3,meanAT=2.5,startedT=3,"
      "endedT=0 1700000005000000000\n"
      "events,application=shop,title=ApacheJMeter text=\"Test name ended\" 1700000010500000000\n",
      1700000011);
  REQUIRE(r.malformed == 0);
  MetricSink pushed;
  jmeter.collect(pushed, 1700000010.0);

  MetricSink histogram;  // the Locust listener's (push/locust_push_model.cpp)
  add_generator_histogram(histogram, {{"source", "l"}},
                          std::vector<double>(request_duration_bounds().size() + 1, 1), 1);

  std::map<std::string, const GeneratorFamilySpec*> table;
  for (const auto& spec : generator_families()) table[spec.name] = &spec;
  std::set<std::string> seen;
  for (const MetricSink* s : {&sink, &pushed, &histogram}) {
    for (const auto& f : s->families()) {
      if (f.name.rfind("loadwatch_generator_", 0) != 0) continue;
      INFO(f.name);
      REQUIRE(table.count(f.name) == 1);
      CHECK(f.help == table[f.name]->help);
      CHECK(f.type == table[f.name]->type);
      seen.insert(f.name);
    }
  }
  // Between them, the two kinds use every family of the table.
  CHECK(seen.size() == table.size());
}

TEST_CASE("request duration buckets: 0.1 ms to 235 s, twelve per doubling, short le labels") {
  const auto& b = request_duration_bounds();
  REQUIRE(b.size() == 255);
  CHECK(b.front() == 0.0001);
  CHECK(b[12] == 0.0002);
  CHECK(b[96] == 0.0256);
  CHECK(b[120] == 0.102);
  CHECK(b.back() == 235);
  for (std::size_t i = 1; i < b.size(); ++i) {
    INFO(b[i - 1] << " " << b[i]);
    // 2^(1/12) = 1.0595, give or take the 3-digit rounding.
    CHECK(b[i] / b[i - 1] > 1.05);
    CHECK(b[i] / b[i - 1] < 1.07);
  }
}

TEST_CASE("request duration histogram: per-bucket counts become cumulative, +Inf the count") {
  MetricSink sink;
  std::vector<double> counts(request_duration_bounds().size() + 1, 0);
  counts[0] = 2;      // <= 0.1 ms
  counts[96] = 5;     // (0.0235, 0.0256]
  counts.back() = 1;  // over 105 s
  add_generator_histogram(sink, {{"source", "l"}}, counts, 3.5);
  REQUIRE(sink.families().size() == 1);
  const auto& f = sink.families()[0];
  CHECK(f.name == "loadwatch_generator_request_duration_seconds");
  CHECK(f.type == prometheus::MetricType::Histogram);
  const auto& h = f.metric.at(0).histogram;
  CHECK(h.sample_count == 8);
  CHECK(h.sample_sum == 3.5);
  REQUIRE(h.bucket.size() == 255);
  CHECK(h.bucket[0].cumulative_count == 2);
  CHECK(h.bucket[95].cumulative_count == 2);
  CHECK(h.bucket[96].cumulative_count == 7);
  CHECK(h.bucket[96].upper_bound == 0.0256);
  CHECK(h.bucket.back().cumulative_count == 7);
  CHECK_THROWS_AS(add_generator_histogram(sink, {}, std::vector<double>(255, 0), 0),
                  std::invalid_argument);
}
