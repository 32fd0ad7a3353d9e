// guard_families: whatever producers hand over, the page that leaves is valid, loadwatch's
// own series win, and every drop is counted by origin and reason.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "metrics/exposition.h"
#include "metrics/metric_sink.h"
#include "metrics/page_budget.h"
#include "metrics/series_guard.h"
#include "sources/prom_text_parser.h"

using namespace loadwatch;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

MetricFamily gauges(const std::string& name, std::vector<std::vector<ClientMetric::Label>> sets) {
  MetricFamily f{name, "help", MetricType::Gauge, {}};
  for (auto& labels : sets) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = 1;
    f.metric.push_back(m);
  }
  return f;
}

struct Page {
  std::vector<MetricFamily> families;
  GuardReport report;
  std::string text;
  double dropped(std::uint16_t origin, const std::string& reason) const {
    auto it = report.dropped.find({origin, reason});
    return it == report.dropped.end() ? 0 : it->second;
  }
  const MetricFamily* family(const std::string& name) const {
    for (const auto& f : families)
      if (f.name == name) return &f;
    return nullptr;
  }
};

Page guard(MetricSink& sink, GuardOptions options = {}) {
  Page p;
  SeriesOrigins origins;
  p.families = sink.take(origins);
  guard_families(p.families, &origins, options, p.report);
  p.text = serialize_text(p.families);
  auto strict = parse_prom_text(p.text, PromTextLimits::strict_mode());
  INFO(p.text);
  CHECK(strict.error == "");
  return p;
}

}  // namespace

TEST_CASE("guard: a foreign family named like loadwatch's own loses its series (reserved)") {
  MetricSink sink;
  sink.set_origin(1);
  sink.gauge("loadwatch_load1", "1m load.", {}, 0.5);
  sink.set_origin(2);
  sink.foreign(gauges("loadwatch_load1", {{}, {{"x", "1"}}}));
  sink.foreign(gauges("job_up", {{}}));
  Page p = guard(sink);
  REQUIRE(p.family("loadwatch_load1"));
  CHECK(p.family("loadwatch_load1")->metric.size() == 1);
  CHECK(p.family("loadwatch_load1")->metric[0].gauge.value == 0.5);
  CHECK(p.dropped(2, "reserved") == 2);
  CHECK(p.report.example.at({2, "reserved"}) == "loadwatch_load1");
  CHECK(p.family("job_up"));  // the rest of the textfile is untouched
}

TEST_CASE("guard: own series also win when the foreign family came first") {
  MetricSink sink;
  sink.set_origin(3);
  sink.foreign(gauges("loadwatch_collector_success", {{{"collector", "x"}}}));
  sink.set_origin(0);
  sink.gauge("loadwatch_collector_success", "own", {{"collector", "targets"}}, 1);
  Page p = guard(sink);
  REQUIRE(p.family("loadwatch_collector_success")->metric.size() == 1);
  CHECK(p.family("loadwatch_collector_success")->metric[0].label[0].value == "targets");
  CHECK(p.dropped(3, "reserved") == 1);
}

TEST_CASE("guard: repeated series of foreign families keep their first copy") {
  MetricSink sink;
  sink.set_origin(1);
  sink.foreign(gauges("f", {{{"a", "1"}, {"b", "2"}}, {{"b", "2"}, {"a", "1"}}, {{"a", "2"}}}));
  sink.set_origin(2);
  sink.foreign(gauges("f", {{{"a", "2"}}, {{"a", "3"}}}));  // another file, one repeat
  Page p = guard(sink);
  CHECK(p.family("f")->metric.size() == 3);
  CHECK(p.dropped(1, "duplicate") == 1);
  CHECK(p.dropped(2, "duplicate") == 1);
}

TEST_CASE("guard: invalid UTF-8 is replaced and counted; values it makes equal are deduplicated") {
  MetricSink sink;
  sink.set_origin(4);
  // Own code with input-derived values (a push): Latin-1 names that collapse to one.
  sink.gauge("loadwatch_generator_users", "bad \xff help", {{"source", "caf\xe9"}}, 1);
  sink.gauge("loadwatch_generator_users", "bad \xff help", {{"source", "caf\xe8"}}, 2);
  Page p = guard(sink);
  CHECK(valid_utf8(p.text));
  CHECK(p.report.invalid_utf8.at(4) == 3);  // HELP once, two values
  REQUIRE(p.family("loadwatch_generator_users")->metric.size() == 1);
  CHECK(p.dropped(4, "duplicate") == 1);
}

TEST_CASE("guard: bad label names and sizes drop the series with a reason") {
  MetricSink sink;
  sink.set_origin(1);
  std::vector<ClientMetric::Label> many;
  for (int i = 0; i < 40; ++i) many.push_back({"l" + std::to_string(i), "v"});
  sink.foreign(gauges("g", {{{"0bad", "v"}},
                            {{"__name__", "v"}},
                            {{"a", "1"}, {"a", "2"}},
                            {{"a", std::string(kMaxLabelValueBytes + 1, 'v')}},
                            // 683 bytes, 2,049 once each invalid byte is U+FFFD on the page
                            {{"a", std::string(kMaxLabelValueBytes / 3 + 1, '\xff')}},
                            {{"a", std::string(kMaxLabelValueBytes / 3, '\xff')}},
                            {{std::string(kMaxLabelNameBytes + 1, 'n'), "v"}},
                            many,
                            {{"ok", "v"}}}));
  MetricFamily s{"s", "h", MetricType::Summary, {}};
  ClientMetric q;
  q.label = {{"quantile", "0.5"}};  // the serializer writes quantile itself
  s.metric.push_back(q);
  sink.foreign(s);
  Page p = guard(sink);
  CHECK(p.family("g")->metric.size() == 2);
  CHECK(p.dropped(1, "invalid_label") == 3 + 2);  // the summary counts its _count and _sum
  CHECK(p.dropped(1, "label_limit") == 4);
  CHECK_FALSE(p.family("s"));
}

TEST_CASE("guard: quantiles and buckets: NaN, repeats and the caps") {
  MetricSink sink;
  sink.set_origin(1);
  MetricFamily s{"s", "h", MetricType::Summary, {}};
  ClientMetric m;
  m.summary.quantile.push_back({std::nan(""), 1});
  for (int i = 0; i < 100; ++i) m.summary.quantile.push_back({i / 100.0, 1});
  m.summary.quantile.push_back({0.1, 2});
  s.metric.push_back(m);
  sink.foreign(s);
  MetricFamily h{"h", "h", MetricType::Histogram, {}};
  ClientMetric hm;
  hm.histogram.bucket = {{3, std::numeric_limits<double>::infinity()}, {1, 1}, {1, 1}, {2, 2}};
  h.metric.push_back(hm);
  sink.foreign(h);
  Page p = guard(sink);
  CHECK(p.family("s")->metric[0].summary.quantile.size() == kMaxQuantilesPerSeries);
  CHECK(p.dropped(1, "max_quantiles") == 100 - kMaxQuantilesPerSeries);
  CHECK(p.dropped(1, "invalid_label") == 1);
  const auto& b = p.family("h")->metric[0].histogram.bucket;
  REQUIRE(b.size() == 3);  // sorted, the repeated le="1" dropped, +Inf last and written once
  CHECK(b[0].upper_bound == 1);
  CHECK(b[2].upper_bound == std::numeric_limits<double>::infinity());
  CHECK(p.dropped(1, "duplicate") == 2);  // the second 0.1 quantile and le="1"
}

TEST_CASE("guard: a family named like a summary's _count or _sum is dropped") {
  MetricSink sink;
  sink.set_origin(1);
  MetricFamily s{"rpc", "h", MetricType::Summary, {}};
  s.metric.emplace_back();
  sink.foreign(s);
  sink.foreign(gauges("rpc_count", {{}}));
  sink.set_origin(0);
  auto& own = sink.add("loadwatch_x_seconds", "own", MetricType::Histogram, {});
  own.histogram.sample_count = 1;
  sink.set_origin(2);
  sink.foreign(gauges("loadwatch_x_seconds_bucket", {{{"le", "1"}}}));
  Page p = guard(sink);
  CHECK(p.family("rpc"));
  CHECK_FALSE(p.family("rpc_count"));
  CHECK(p.dropped(1, "name_collision") == 1);
  CHECK_FALSE(p.family("loadwatch_x_seconds_bucket"));
  CHECK(p.dropped(2, "reserved") == 1);
}

TEST_CASE("guard: a family of another type through the sink is refused and noted") {
  MetricSink sink;
  sink.set_origin(5);
  sink.counter("c_total", "own", {}, 1);
  sink.foreign(gauges("c_total", {{}, {{"a", "1"}}}));
  CHECK(sink.notes().at({5, "type_conflict"}) == 2);
  Page p = guard(sink);
  CHECK(p.family("c_total")->metric.size() == 1);
}

TEST_CASE("guard: past the page cap the last series in page order go") {
  MetricSink sink;
  sink.set_origin(1);
  sink.gauge("first", "h", {}, 1);
  sink.set_origin(2);
  std::vector<std::vector<ClientMetric::Label>> sets;
  for (int i = 0; i < 10; ++i) sets.push_back({{"i", std::to_string(i)}});
  sink.foreign(gauges("later", sets));
  GuardOptions options;
  options.max_series = 5;
  Page p = guard(sink, options);
  CHECK(p.family("first"));
  CHECK(p.family("later")->metric.size() == 4);
  CHECK(p.dropped(2, "total_series") == 6);
}

TEST_CASE("guard: an invalid metric name or a family repeated in the vector") {
  std::vector<MetricFamily> fams{gauges("1bad", {{}}), gauges("ok", {{{"a", "1"}}}),
                                 gauges("ok", {{{"a", "1"}}, {{"a", "2"}}})};
  fams.push_back(MetricFamily{"ok", "h", MetricType::Counter, {ClientMetric{}}});
  GuardReport report;
  guard_families(fams, nullptr, GuardOptions{}, report);
  REQUIRE(fams.size() == 1);
  CHECK(fams[0].metric.size() == 2);
  CHECK(report.dropped.at({0, "invalid_name"}) == 1);
  CHECK(report.dropped.at({0, "duplicate"}) == 1);
  CHECK(report.dropped.at({0, "type_conflict"}) == 1);
}

TEST_CASE("guard: random hostile families always serialize into a strict page") {
  std::mt19937_64 rng(7);
  const std::string names[] = {"a", "a_count", "a_sum", "a_bucket", "loadwatch_load1",
                               "b", "0x",      ""};
  const std::string past_cap(kMaxLabelValueBytes + 1, 'x');
  const std::string past_cap_repaired(kMaxLabelValueBytes / 2, '\xf3');  // 3 bytes each on the page
  const std::string values[] = {"",   "v",  "\xff", "\xc3",   "é",
                                "\\", "\n", "\"",   past_cap, past_cap_repaired};
  const std::string lnames[] = {"l", "m", "le", "quantile", "__name__", "1", "", "source"};
  const MetricType types[] = {MetricType::Counter, MetricType::Gauge, MetricType::Summary,
                              MetricType::Histogram, MetricType::Untyped};
  for (int round = 0; round < 2000; ++round) {
    MetricSink sink;
    sink.gauge("loadwatch_load1", "own", {}, 1);
    for (int f = int(rng() % 6); f > 0; --f) {
      sink.set_origin(std::uint16_t(1 + rng() % 3));
      MetricFamily fam{names[rng() % std::size(names)], values[rng() % 5], types[rng() % 5], {}};
      for (int k = int(rng() % 4); k > 0; --k) {
        ClientMetric m;
        for (int l = int(rng() % 3); l > 0; --l) {
          m.label.push_back({lnames[rng() % std::size(lnames)], values[rng() % std::size(values)]});
        }
        for (int q = int(rng() % 3); q > 0; --q)
          m.summary.quantile.push_back({double(rng() % 3) / 2, 1});
        for (int b = int(rng() % 3); b > 0; --b)
          m.histogram.bucket.push_back({1, double(rng() % 3)});
        fam.metric.push_back(m);
      }
      if (rng() % 2) {
        sink.foreign(fam);
      } else {
        sink.family(fam);
      }
    }
    SeriesOrigins origins;
    auto fams = sink.take(origins);
    GuardReport report;
    guard_families(fams, &origins, GuardOptions{}, report);
    std::string text = serialize_text(fams);
    auto strict = parse_prom_text(text, PromTextLimits::strict_mode());
    INFO(text);
    REQUIRE(strict.error == "");
    for (const auto& f : strict.families)
      for (const auto& m : f.metric)
        for (const auto& l : m.label) REQUIRE(l.value.size() <= kMaxLabelValueBytes);
  }
}

TEST_CASE("page budget: fair shares give small wants in full and split the rest") {
  CHECK(fair_shares({10, 20}, 100) == std::vector<std::size_t>{10, 20});
  CHECK(fair_shares({10, 500, 500}, 100) == std::vector<std::size_t>{10, 45, 45});
  CHECK(fair_shares({500, 10, 30}, 100) == std::vector<std::size_t>{60, 10, 30});
  CHECK(fair_shares({}, 100).empty());
}

TEST_CASE("page budget: a push source past its share loses its largest families first") {
  MetricSink sink;
  sink.set_origin(1);  // loadwatch's own collector: never under the budget
  sink.gauge("host_big", "h", {{"v", std::string(2000, 'h')}}, 1);
  sink.gauge("host_big", "h", {{"w", std::string(2000, 'h')}}, 1);
  sink.set_origin(2);  // the flood: one huge family and two small ones
  for (int i = 0; i < 20; ++i) {
    sink.gauge("push_huge", "h", {{"v", std::to_string(i) + std::string(2000, 'x')}}, 1);
  }
  sink.gauge("push_small", "h", {{"v", "a"}}, 1);
  sink.gauge("shared", "h", {{"v", "flood"}}, 1);
  sink.set_origin(3);  // a small sender, in a family the flood also writes
  sink.gauge("shared", "h", {{"v", "small"}}, 1);
  GuardOptions options;
  options.budget_bytes = 4000;
  options.budgeted = {2, 3};
  Page p = guard(sink, options);
  CHECK(p.family("host_big") != nullptr);
  CHECK(p.family("push_huge") == nullptr);
  CHECK(p.family("push_small") != nullptr);
  REQUIRE(p.family("shared") != nullptr);
  CHECK(p.family("shared")->metric.size() == 2);
  CHECK(p.dropped(2, drop_reason::kPageBytes) == 20);
  CHECK(p.dropped(3, drop_reason::kPageBytes) == 0);
  // Within the budget nothing is touched.
  MetricSink again;
  again.set_origin(2);
  again.gauge("push_small", "h", {{"v", "a"}}, 1);
  Page q = guard(again, options);
  CHECK(q.family("push_small") != nullptr);
  CHECK(q.report.dropped.empty());
}
