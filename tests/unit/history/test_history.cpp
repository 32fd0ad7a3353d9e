// The in-memory history: what it keeps, gaps, counters as increases and rates, the ring
// dropping the oldest points, the series cap, and readers running while the sampler records.
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "history/history.h"
#include "metrics/exposition.h"
#include "metrics/metric_sink.h"
#include "routes/live_routes.h"
#include "sources/generator_families.h"

using namespace loadwatch;

namespace {

std::vector<prometheus::MetricFamily> sample(double cpu_user, double rss, bool with_app = true) {
  MetricSink out;
  if (with_app) {
    out.counter("loadwatch_process_cpu_seconds_total", "h", {{"target", "app"}, {"mode", "user"}},
                cpu_user);
    out.gauge("loadwatch_process_resident_memory_bytes", "h", {{"target", "app"}}, rss);
  }
  for (const char* cpu : {"0", "1"}) {
    out.counter("loadwatch_cpu_seconds_total", "h", {{"cpu", cpu}, {"mode", "softirq"}}, 10);
  }
  out.gauge("loadwatch_memory_total_bytes", "not kept", {}, 1);
  return out.take();
}

HistoryQuery q(std::string name, bool rate = false) {
  HistoryQuery query;
  query.select.push_back({std::move(name), {}});
  query.rate = rate;
  return query;
}

}  // namespace

TEST_CASE("keeps the listed families, sums host CPU over cpus, leaves the rest") {
  History h;
  h.record(sample(1, 100), 1000);
  auto list = h.list();
  REQUIRE(list.size() == 3);
  CHECK(list[0].key == "loadwatch_process_cpu_seconds_total{target=\"app\",mode=\"user\"}");
  CHECK(list[0].counter);
  CHECK(list[2].key == "loadwatch_cpu_seconds_total{mode=\"softirq\"}");
  auto cols = h.query(q("loadwatch_cpu_seconds_total"));
  REQUIRE(cols.values.size() == 1);
  CHECK(cols.values[0][0] == 20.0f);
}

TEST_CASE("a summary keeps a series per quantile; keys escape like /metrics; sums follow") {
  auto latency = [](double p95, double cpu1) {
    MetricSink out;
    auto& m = out.add("loadwatch_generator_latency_seconds", "h", prometheus::MetricType::Summary,
                      {{"source", "say \"hi\"\\\n"}});
    m.summary.quantile.push_back({0.5, 0.1});
    m.summary.quantile.push_back({0.95, p95});
    m.summary.quantile.push_back({0.9999999, 1});  // not rounded into quantile="1"
    out.counter("loadwatch_cpu_seconds_total", "h", {{"mode", "user"}, {"cpu", "0"}}, 10);
    out.counter("loadwatch_cpu_seconds_total", "h", {{"mode", "user"}, {"cpu", "1"}}, cpu1);
    return out.take();
  };
  History h;
  h.record(latency(0.2, 5), 1);
  h.record(latency(0.3, 8), 2);  // the same series again: found by key, not added
  auto list = h.list();
  REQUIRE(list.size() == 4);
  CHECK(list[0].key ==
        "loadwatch_generator_latency_seconds{source=\"say \\\"hi\\\"\\\\\\n\",quantile=\"0.5\"}");
  CHECK(list[1].labels.at("quantile") == "0.95");
  CHECK(list[1].family == "loadwatch_generator_latency_seconds");
  CHECK_FALSE(list[1].counter);
  // As the page writes it (and not rounded to "1").
  const std::string& q9 = list[2].labels.at("quantile");
  CHECK(q9.rfind("0.9999999", 0) == 0);
  CHECK(serialize_text(latency(0.3, 8)).find("quantile=\"" + q9 + "\"") != std::string::npos);
  CHECK(list[3].key == "loadwatch_cpu_seconds_total{mode=\"user\"}");
  CHECK(h.query(q("loadwatch_generator_latency_seconds")).values ==
        std::vector<std::vector<float>>{{0.1f, 0.1f}, {0.2f, 0.3f}, {1, 1}});
  CHECK(h.query(q("loadwatch_cpu_seconds_total")).values[0] == std::vector<float>{15, 18});
  CHECK(h.query(q("loadwatch_cpu_seconds_total", true)).values[0][1] == 3.0f);
}

TEST_CASE("the request duration histogram: _bucket{le}, _count, _sum as counters; ages kept") {
  auto point = [](std::vector<double> counts, double sum, double age) {
    MetricSink out;
    add_generator_histogram(out, {{"source", "l"}}, counts, sum);
    add_generator_sample(out, GeneratorFamily::kDataAge, {{"source", "l"}}, age);
    add_generator_sample(out, GeneratorFamily::kDataAgeUncertainty, {{"source", "l"}}, 0.001);
    return out.take();
  };
  const std::size_t n = request_duration_bounds().size() + 1;
  std::vector<double> counts(n, 0);
  counts[80] = 3;
  History h;
  h.record(point(counts, 0.07, 0.2), 1000);
  counts[81] = 2;
  counts.back() = 1;  // one over 105 s: only the +Inf bucket and the count see it
  h.record(point(counts, 200.1, 0.4), 1001);
  auto list = h.list();
  // 255 finite buckets, +Inf, _count, _sum, the age and its uncertainty.
  REQUIRE(list.size() == 260);
  CHECK(list[80].key ==
        "loadwatch_generator_request_duration_seconds_bucket{source=\"l\",le=\"0.0102\"}");
  CHECK(list[80].family == "loadwatch_generator_request_duration_seconds_bucket");
  CHECK(list[80].labels.at("le") == "0.0102");
  CHECK(list[80].counter);
  CHECK(list[255].labels.at("le") == "+Inf");
  CHECK(list[256].key == "loadwatch_generator_request_duration_seconds_count{source=\"l\"}");
  CHECK(list[257].key == "loadwatch_generator_request_duration_seconds_sum{source=\"l\"}");
  CHECK(list[258].key == "loadwatch_generator_data_age_seconds{source=\"l\"}");
  CHECK_FALSE(list[258].counter);
  // The phase between the two points: the differences of the cumulative buckets.
  auto buckets = q("loadwatch_generator_request_duration_seconds_bucket", true);
  buckets.max_series = 300;
  auto rate = h.query(buckets);
  REQUIRE(rate.values.size() == 256);
  CHECK(rate.values[80][1] == 0.0f);
  CHECK(rate.values[81][1] == 2.0f);
  CHECK(rate.values[255][1] == 3.0f);
  auto count = h.query(q("loadwatch_generator_request_duration_seconds_count"));
  REQUIRE(count.values.size() == 1);
  CHECK(count.values[0][1] == 6.0f);
  auto age = h.query(q("loadwatch_generator_data_age_seconds"));
  CHECK(age.values.at(0)[1] == 0.4f);
}

TEST_CASE("counters: raw values rebuilt exactly, rates per second, gaps stay gaps") {
  History h;
  h.record(sample(1e6, 100), 1000);  // a large counter: float alone would lose the 0.25
  h.record(sample(1e6 + 0.25, 200), 1001);
  h.record(sample(0, 0, /*with_app=*/false), 1002);  // the target is gone for one sample
  h.record(sample(1e6 + 3, 300), 1004);
  h.record(sample(1e6 + 4, 400), 1006);
  auto raw = h.query(q("loadwatch_process_cpu_seconds_total"));
  REQUIRE(raw.time == std::vector<double>{1000, 1001, 1002, 1004, 1006});
  auto& v = raw.values.at(0);
  CHECK(v[0] == 1e6f);
  CHECK(std::isnan(v[2]));
  CHECK(v[4] == static_cast<float>(1e6 + 4));
  auto rate = h.query(q("loadwatch_process_cpu_seconds_total", true));
  auto& r = rate.values.at(0);
  CHECK(std::isnan(r[0]));      // no earlier point
  CHECK(r[1] == Approx(0.25));  // the increase survives the large total
  CHECK(std::isnan(r[3]));      // right after a gap: unknown
  CHECK(r[4] == Approx(0.5));   // 1 over 2 s
  auto rss = h.query(q("loadwatch_process_resident_memory_bytes", true));  // gauges as they are
  CHECK(rss.values.at(0)[4] == 400.0f);
}

TEST_CASE("a counter reset restarts the raw values and has no rate at the reset") {
  History h;
  h.record(sample(50, 1), 1);
  h.record(sample(60, 1), 2);
  h.record(sample(5, 1), 3);
  h.record(sample(7, 1), 4);
  auto raw = h.query(q("loadwatch_process_cpu_seconds_total"));
  CHECK(raw.values[0] == std::vector<float>{50, 60, 5, 7});
  auto rate = h.query(q("loadwatch_process_cpu_seconds_total", true));
  CHECK(rate.values[0][1] == 10.0f);
  CHECK(std::isnan(rate.values[0][2]));
  CHECK(rate.values[0][3] == 2.0f);
}

TEST_CASE("the ring drops the oldest points and keeps raw counter values right") {
  History h(HistorySettings{4, 10});
  for (int i = 0; i < 10; ++i) h.record(sample(100 + i * 2, i), 1000 + i);
  CHECK(h.size() == 4);
  auto raw = h.query(q("loadwatch_process_cpu_seconds_total"));
  CHECK(raw.time == std::vector<double>{1006, 1007, 1008, 1009});
  CHECK(raw.values[0] == std::vector<float>{112, 114, 116, 118});
  auto since = h.query([] {
    auto x = q("loadwatch_process_resident_memory_bytes");
    x.since = 1007;
    x.until = 1008;
    return x;
  }());
  CHECK(since.time == std::vector<double>{1008});
  CHECK(since.values[0] == std::vector<float>{8});
}

TEST_CASE("a series gone for a whole ring is dropped; a stale timestamp is ignored") {
  History h(HistorySettings{3, 10});
  h.record(sample(1, 1), 1);
  h.record(sample(1, 1), 1);  // not after the newest point
  CHECK(h.size() == 1);
  for (int i = 2; i <= 4; ++i) h.record(sample(0, 0, false), i);
  CHECK(h.list().size() == 1);  // only host CPU is left
}

TEST_CASE("the series cap holds and counts what it turned away") {
  History h(HistorySettings{10, 2});
  h.record(sample(1, 1), 1);
  CHECK(h.list().size() == 2);
  CHECK(h.dropped_series() == 1);
  CHECK(h.column_bytes() == 10 * sizeof(double) + 2 * 10 * sizeof(float));
}

TEST_CASE("selectors: family, exact key, labels; max_series truncates") {
  History h;
  h.record(sample(1, 1), 1);
  HistoryQuery by_label;
  by_label.select.push_back({"loadwatch_process_cpu_seconds_total", {{"mode", "system"}}});
  CHECK(h.query(by_label).series.empty());
  auto exact = h.query(q("loadwatch_process_resident_memory_bytes{target=\"app\"}"));
  CHECK(exact.series.size() == 1);
  HistoryQuery two;
  two.select = {{"loadwatch_process_cpu_seconds_total", {}}, {"loadwatch_cpu_seconds_total", {}}};
  two.max_series = 1;
  auto cut = h.query(two);
  CHECK(cut.series.size() == 1);
  CHECK(cut.truncated);
}

TEST_CASE("the history endpoint: uPlot columns, null for gaps, errors name the parameter") {
  History h;
  h.record(sample(1, 5), 100);
  h.record(sample(0, 0, false), 101);
  HttpRequest req;
  req.query =
      "series=loadwatch_process_resident_memory_bytes%7Btarget%3D%22app%22%7D,"
      "loadwatch_cpu_seconds_total&since=99.5&rate=1";
  auto r = history_response(h, req);
  REQUIRE(r.status == 200);
  auto j = nlohmann::json::parse(r.body);
  CHECK(j["series"] ==
        nlohmann::json::array({"time", "loadwatch_process_resident_memory_bytes{target=\"app\"}",
                               "loadwatch_cpu_seconds_total{mode=\"softirq\"}"}));
  CHECK(j["data"][0] == nlohmann::json::array({100.0, 101.0}));
  CHECK(j["data"][1][0] == 5);
  CHECK(j["data"][1][1].is_null());
  CHECK(j["data"][2][0].is_null());  // a rate needs an earlier point
  CHECK(j["data"][2][1] == 0);
  HttpRequest none;  // nothing new yet: empty columns, one per series
  none.query = "series=loadwatch_process_cpu_seconds_total,loadwatch_cpu_seconds_total&since=200";
  auto empty = nlohmann::json::parse(history_response(h, none).body);
  CHECK(empty["data"] == nlohmann::json::array({nlohmann::json::array(), nlohmann::json::array(),
                                                nlohmann::json::array()}));
  for (const char* bad :
       {"since=abc&series=x", "series=", "series=x&rate=2", "series=x&until=1e999"}) {
    HttpRequest b;
    b.query = bad;
    auto e = history_response(h, b);
    CHECK(e.status == 400);
  }
}

TEST_CASE("the history endpoint: malformed query bytes are a 400 with a message, not a 500") {
  History h;
  h.record(sample(1, 5), 100);
  // %ff decodes to a byte that is not UTF-8; the error quotes it (as U+FFFD) and stays JSON.
  for (const char* bad : {"series=x&since=%ff", "series=x&until=%ff%fe", "series=x&since=%",
                          "series=x&since=%zz", "series=x&rate=%ff", "series=x&since=1%00"}) {
    CAPTURE(bad);
    HttpRequest b;
    b.query = bad;
    auto e = history_response(h, b);
    CHECK(e.status == 400);
    auto j = nlohmann::json::parse(e.body);
    CHECK(j["status"] == "error");
    CHECK(j["error"].get<std::string>().find(": ") != std::string::npos);
  }
  HttpRequest long_value;  // a long value is quoted in part only
  long_value.query = "series=x&since=" + std::string(100000, 'a');
  auto e = history_response(h, long_value);
  CHECK(e.status == 400);
  CHECK(e.body.size() < 300);
  HttpRequest name;  // a series name that is not UTF-8 matches nothing: an empty answer
  name.query = "series=%ff";
  auto r = history_response(h, name);
  CHECK(r.status == 200);
  CHECK_NOTHROW(nlohmann::json::parse(r.body));
}

TEST_CASE("readers query while the sampler records") {
  History h(HistorySettings{500, 100});
  // Catch2's assertions are not thread-safe: readers set a flag, checked after the join.
  std::atomic<bool> done{false}, torn{false};
  std::thread reader([&] {
    while (!done) {
      auto c = h.query(q("loadwatch_process_cpu_seconds_total", true));
      for (auto& col : c.values)
        if (col.size() != c.time.size()) torn = true;
    }
  });
  for (int i = 0; i < 3000; ++i) h.record(sample(i, i), i + 1);
  done = true;
  reader.join();
  CHECK_FALSE(torn);
  CHECK(h.size() == 500);
}

TEST_CASE("an answer from `since` is the tail of the whole answer, across the ring's wrap") {
  // Counters with resets and gaps before and inside the answer, in a ring that wrapped: the
  // raw values and rates of a partial answer are those of the whole one.
  History h(HistorySettings{50, 100});
  double cpu = 0;
  for (int i = 0; i < 137; ++i) {
    cpu = i % 23 == 0 ? 1 : cpu + 0.25 * (i % 5);  // resets every 23 points
    const bool gap = i % 17 == 5;
    h.record(sample(cpu, 1000 + i, !gap), 1000 + i + (i % 3) * 0.001);
  }
  for (bool rate : {false, true}) {
    auto all = h.query(q("loadwatch_process_cpu_seconds_total", rate));
    REQUIRE(all.time.size() == 50);
    REQUIRE(all.values.size() == 1);
    for (std::size_t k = 0; k <= all.time.size(); ++k) {
      auto part_q = q("loadwatch_process_cpu_seconds_total", rate);
      part_q.since = k == 0 ? 0 : all.time[k - 1];
      if (k + 5 < all.time.size()) part_q.until = all.time[k + 5];
      auto part = h.query(part_q);
      const std::size_t want = std::min<std::size_t>(all.time.size() - k, 6);
      INFO("rate=" << rate << " from point " << k);
      REQUIRE(part.time.size() == want);
      for (std::size_t i = 0; i < want; ++i) {
        CHECK(part.time[i] == all.time[k + i]);
        const float a = all.values[0][k + i], b = part.values[0][i];
        CHECK((std::isnan(a) ? std::isnan(b) : a == b));
      }
    }
  }
}

TEST_CASE("the history endpoint's numbers parse back to the columns' values exactly") {
  // Whole numbers are written as integers, others in their shortest form: either way the
  // JSON number read back as a float is the float the history holds; NaN is null.
  const float values[] = {0.0f,
                          -0.0f,
                          1.0f,
                          -7.0f,
                          65536.0f,
                          1e8f + 8,
                          123456789012.0f,
                          9.99e14f,
                          1e15f,
                          -3e17f,
                          3.4e38f,
                          0.1f,
                          0.37848607f,
                          -0.117489085f,
                          1.17549435e-38f,
                          1e-45f,
                          2.5f,
                          1234.5677f,
                          16777217.0f,
                          0.3333333f};
  constexpr int kSeries = 7;
  History h(HistorySettings{64, 100});
  for (int i = 0; i < 60; ++i) {
    MetricSink out;
    for (int s = 0; s < kSeries; ++s) {
      if ((i + s) % 11 == 3) continue;  // a gap
      out.gauge("loadwatch_process_threads", "h", {{"target", "t" + std::to_string(s)}},
                values[(i * 3 + s * 7) % std::size(values)]);
    }
    h.record(out.take(), 1764612001.25 + i * 1.001);
  }
  HttpRequest req;
  req.query = "series=loadwatch_process_threads";
  auto r = history_response(h, req);
  REQUIRE(r.status == 200);
  auto j = nlohmann::json::parse(r.body);
  auto cols = h.query(q("loadwatch_process_threads"));
  REQUIRE(j["data"].size() == kSeries + 1);
  REQUIRE(j["data"][0].size() == cols.time.size());
  for (std::size_t i = 0; i < cols.time.size(); ++i) {
    CHECK(std::fabs(j["data"][0][i].get<double>() - cols.time[i]) < 0.0005);
  }
  std::size_t nulls = 0;
  for (std::size_t s = 0; s < cols.values.size(); ++s) {
    CHECK(j["series"][s + 1] == cols.series[s].key);
    const auto& col = j["data"][s + 1];
    REQUIRE(col.size() == cols.time.size());
    for (std::size_t i = 0; i < col.size(); ++i) {
      const float want = cols.values[s][i];
      INFO("series " << s << " point " << i << " value " << want);
      if (std::isnan(want)) {
        CHECK(col[i].is_null());
        ++nulls;
      } else {
        REQUIRE(col[i].is_number());
        CHECK(static_cast<float>(col[i].get<double>()) == want);
      }
    }
  }
  CHECK(nulls > 0);
  // Whole numbers below 1e15 are integers in the text, the others keep their float form.
  CHECK(r.body.find("123456790528") != std::string::npos);
  CHECK(r.body.find("3.4e+38") != std::string::npos);
  CHECK(r.body.find("1e+15") != std::string::npos);
  CHECK(r.body.find("-3e+17") != std::string::npos);
}

TEST_CASE("a point kept aside while readers hold the lock is written with the next, in order") {
  // Readers ask back to back while the sampler records; the app's series comes and goes long
  // enough to be dropped, so a point kept aside can add or drop series before the next one.
  History h(HistorySettings{300, 100});
  // Readers only set a flag and the loop is bounded, so every thread is joined before any
  // assertion can end the test case.
  std::atomic<bool> done{false}, torn{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!done) {
        auto c = h.query(q("loadwatch_process_resident_memory_bytes"));
        for (auto& col : c.values)
          if (col.size() != c.time.size()) torn = true;
      }
    });
  }
  auto present = [](int i) { return (i / 400) % 2 == 0; };
  int i = 0;
  for (; (i < 3000 || h.deferred_points() == 0) && i < 200000; ++i) {
    h.record(sample(i, i, present(i)), i + 1);
  }
  done = true;
  for (auto& t : readers) t.join();
  CHECK_FALSE(torn);
  REQUIRE(h.deferred_points() > 0);
  h.record(sample(i, i, present(i)), i + 1);  // no reader now: a point kept aside goes in
  auto all = h.query(q("loadwatch_process_resident_memory_bytes"));
  REQUIRE(all.time.size() == 300);
  for (std::size_t k = 0; k < all.time.size(); ++k) CHECK(all.time[k] == i + 1 - 299 + k);
  const bool app_kept = !all.values.empty();
  for (std::size_t k = 0; k < all.time.size(); ++k) {
    const int at = i - 299 + static_cast<int>(k);
    INFO("sample " << at);
    if (!app_kept) break;
    if (present(at))
      CHECK(all.values[0][k] == static_cast<float>(at));
    else
      CHECK(std::isnan(all.values[0][k]));
  }
}
