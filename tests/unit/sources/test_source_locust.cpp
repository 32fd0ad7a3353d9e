// Locust /stats/requests of every 2.x shape (2.12.1 captured from Debian's python3-locust,
// 2.15/2.21/2.28 written from those versions' source) -> loadwatch_generator_* metrics.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sources/locust.h"
#include "sources/locust_csv.h"
#include "tests/lib/fixture_file.h"
#include "tests/lib/sample_values.h"

using namespace loadwatch;
using loadwatch::test::read_fixture;
using loadwatch::test::value;

namespace {

loadwatch::SourceConfig locust_config() {
  loadwatch::SourceConfig config;
  config.name = "lc";
  config.kind = "locust";
  config.url = "http://127.0.0.1:8089";
  return config;
}

LocustStats parse(const std::string& text) {
  LocustStats s;
  std::string error;
  REQUIRE(parse_locust_stats(text, s, error));
  return s;
}

bool has_label_value(const std::vector<prometheus::MetricFamily>& fams, const std::string& v) {
  for (const auto& f : fams)
    for (const auto& m : f.metric)
      for (const auto& l : m.label)
        if (l.value == v) return true;
  return false;
}

std::vector<prometheus::MetricFamily> map_once(LocustMapper& mapper, const LocustStats& s) {
  MetricSink sink;
  mapper.map(s, "locust", sink);
  return sink.take();
}

}  // namespace

TEST_CASE("Locust 2.12.1 captured: rows, aggregate, ms to seconds", "[locust]") {
  auto s = parse(read_fixture("sources/locust_2.12.1_stats_requests.json"));
  REQUIRE(s.endpoints.size() == 3);
  REQUIRE(s.aggregated);
  CHECK(s.aggregated->requests == 273);
  CHECK(s.aggregated->failures == 102);
  CHECK(s.state == "stopped");
  CHECK(s.user_count == 0);
  CHECK(s.total_rps == 56.0);
  CHECK_FALSE(s.workers);
  // 2.12: median, ninetieth, ninety_ninth per row; current_response_time_percentile_50/_95.
  REQUIRE(s.endpoints[0].quantiles_ms.size() == 3);
  CHECK(s.endpoints[0].quantiles_ms[1] == std::pair<double, double>{0.9, 7});
  REQUIRE(s.current_quantiles_ms.size() == 2);
  CHECK(s.current_quantiles_ms[0] == std::pair<double, double>{0.5, 4});
  CHECK(s.current_quantiles_ms[1] == std::pair<double, double>{0.95, 7});

  LocustMapper mapper;
  auto fams = map_once(mapper, s);
  CHECK(value(fams, "loadwatch_generator_requests_total", {{"source", "locust"}}) == 273);
  CHECK(value(fams, "loadwatch_generator_failures_total", {}) == 102);
  CHECK(value(fams, "loadwatch_generator_endpoint_requests_total",
              {{"name", "/missing"}, {"method", "GET"}}) == 57);
  CHECK(value(fams, "loadwatch_generator_endpoint_failures_total",
              {{"name", "post root"}, {"method", "POST"}}) == 45);
  CHECK(value(fams, "loadwatch_generator_endpoint_latency_seconds",
              {{"name", "/"}, {"quantile", "0.99"}}) == Approx(0.012));
  CHECK(value(fams, "loadwatch_generator_latency_seconds", {{"quantile", "0.9"}}) == Approx(0.006));
  CHECK(value(fams, "loadwatch_generator_latency_seconds", {{"quantile", "0.5"}}) == Approx(0.004));
  CHECK(value(fams, "loadwatch_generator_current_latency_seconds", {{"quantile", "0.95"}}) ==
        Approx(0.007));
  // Summaries: _count = requests, _sum = avg_response_time × requests, in seconds.
  CHECK(value(fams, "loadwatch_generator_latency_seconds", {{"quantile", "_count"}}) == 273);
  CHECK(value(fams, "loadwatch_generator_latency_seconds", {{"quantile", "_sum"}}) ==
        Approx(4.475194937728765 * 273 / 1000));
  CHECK(value(fams, "loadwatch_generator_endpoint_latency_seconds",
              {{"name", "post root"}, {"quantile", "_count"}}) == 45);
  for (const auto& f : fams) {
    if (f.name.find("latency") != std::string::npos) {
      CHECK(f.type == prometheus::MetricType::Summary);
    }
  }
  CHECK(value(fams, "loadwatch_generator_users", {}) == 0);
  CHECK(value(fams, "loadwatch_generator_requests_per_second", {}) == 56);
  CHECK(value(fams, "loadwatch_generator_running", {}) == 0);
  // The aggregate row never becomes a label value.
  CHECK_FALSE(has_label_value(fams, "Aggregated"));
}

TEST_CASE("Locust 2.12.1 captured while running", "[locust]") {
  auto s = parse(read_fixture("sources/locust_2.12.1_stats_requests_running.json"));
  LocustMapper mapper;
  auto fams = map_once(mapper, s);
  CHECK(value(fams, "loadwatch_generator_running", {}) == 1);
  CHECK(value(fams, "loadwatch_generator_users", {}) == 4);
  CHECK(value(fams, "loadwatch_generator_requests_total", {}) == 184);
}

TEST_CASE("Locust 2.15 shape: current percentiles numbered _1/_2", "[locust]") {
  auto s = parse(read_fixture("sources/locust_2.15_stats_requests.json"));
  REQUIRE(s.current_quantiles_ms.size() == 2);
  CHECK(s.current_quantiles_ms[0] == std::pair<double, double>{0.5, 11});
  CHECK(s.current_quantiles_ms[1] == std::pair<double, double>{0.95, 40});
  LocustMapper mapper;
  auto fams = map_once(mapper, s);
  CHECK(value(fams, "loadwatch_generator_requests_total", {}) == 1800);
  CHECK(value(fams, "loadwatch_generator_endpoint_failures_total", {{"name", "/missing"}}) == 300);
  CHECK(value(fams, "loadwatch_generator_latency_seconds", {{"quantile", "0.99"}}) ==
        Approx(0.078));
  CHECK(value(fams, "loadwatch_generator_users", {}) == 50);
  CHECK(value(fams, "loadwatch_generator_running", {}) == 1);
}

TEST_CASE("Locust 2.21 shape: response_time_percentile_<q> win over the old keys", "[locust]") {
  auto s = parse(read_fixture("sources/locust_2.21_stats_requests.json"));
  REQUIRE(s.aggregated);
  // 0.5 (median), 0.9 (ninetieth), 0.95, 0.99 (both spellings: one entry).
  REQUIRE(s.aggregated->quantiles_ms.size() == 4);
  CHECK(s.aggregated->quantiles_ms[2] == std::pair<double, double>{0.95, 52});
  CHECK(s.aggregated->quantiles_ms[3] == std::pair<double, double>{0.99, 120});
  LocustMapper mapper;
  auto fams = map_once(mapper, s);
  CHECK(value(fams, "loadwatch_generator_endpoint_requests_total",
              {{"name", "/api/item/[id]"}, {"method", "GET"}}) == 9000);
  CHECK(value(fams, "loadwatch_generator_endpoint_latency_seconds",
              {{"name", "/api/order"}, {"quantile", "0.95"}}) == Approx(0.070));
  CHECK(value(fams, "loadwatch_generator_current_latency_seconds", {{"quantile", "0.5"}}) ==
        Approx(0.009));
  CHECK(value(fams, "loadwatch_generator_requests_per_second", {}) == 650.5);
  CHECK(value(fams, "loadwatch_generator_running", {}) == 1);  // spawning counts as running
}

TEST_CASE("Locust 2.28 shape: no ninetieth keys, workers, null current percentile", "[locust]") {
  auto s = parse(read_fixture("sources/locust_2.28_stats_requests.json"));
  REQUIRE(s.aggregated);
  REQUIRE(s.aggregated->quantiles_ms.size() == 3);  // 0.5, 0.95, 0.99
  CHECK(s.aggregated->quantiles_ms[0].first == 0.5);
  CHECK(s.aggregated->quantiles_ms[1].first == 0.95);
  REQUIRE(s.current_quantiles_ms.size() == 1);  // the null 0.95 is left out
  REQUIRE(s.workers);
  CHECK(*s.workers == 2);  // the missing worker is not counted
  LocustMapper mapper;
  auto fams = map_once(mapper, s);
  CHECK(value(fams, "loadwatch_generator_workers", {}) == 2);
  CHECK(value(fams, "loadwatch_generator_requests_total", {}) == 550);
  CHECK(std::isnan(value(fams, "loadwatch_generator_latency_seconds", {{"quantile", "0.9"}})));
}

TEST_CASE("Locust counters stay monotonic across stats resets", "[locust]") {
  auto stats = [](const char* state, double total, double a, double b) {
    LocustStats s;
    s.state = state;
    s.aggregated = LocustRow{"Aggregated", "", total, 0, 10.0, {}};
    s.endpoints.push_back(LocustRow{"/a", "GET", a, 0, 10.0, {}});
    s.endpoints.push_back(LocustRow{"/b", "GET", b, 0, 10.0, {}});
    return s;
  };
  LocustMapper m;
  auto req = [&](const LocustStats& s, const char* ep) {
    auto fams = map_once(m, s);
    return ep ? value(fams, "loadwatch_generator_endpoint_requests_total", {{"name", ep}})
              : value(fams, "loadwatch_generator_requests_total", {});
  };
  CHECK(req(stats("running", 100, 60, 40), nullptr) == 100);
  CHECK(req(stats("stopped", 150, 90, 60), nullptr) == 150);
  // New run: Locust cleared its stats; by this scrape /a already grew past its old value
  // (95 > 90) but /b has not: both must carry.
  auto run2 = stats("running", 120, 95, 25);
  {
    auto fams = map_once(m, run2);
    CHECK(value(fams, "loadwatch_generator_requests_total", {}) == 270);
    CHECK(value(fams, "loadwatch_generator_endpoint_requests_total", {{"name", "/a"}}) == 185);
    CHECK(value(fams, "loadwatch_generator_endpoint_requests_total", {{"name", "/b"}}) == 85);
  }
  // /stats/reset mid-run: no state change, the aggregate went down.
  CHECK(req(stats("running", 10, 4, 6), nullptr) == 280);
  CHECK(req(stats("running", 30, 20, 10), "/a") == 205);
  // A repeated scrape of the same numbers adds nothing.
  CHECK(req(stats("running", 30, 20, 10), "/a") == 205);
  // The summary's _count follows the carried count.
  auto fams = map_once(m, stats("running", 31, 21, 10));
  CHECK(value(fams, "loadwatch_generator_endpoint_latency_seconds",
              {{"name", "/a"}, {"quantile", "_count"}}) == 206);
}

TEST_CASE("Locust JSON edge cases", "[locust]") {
  LocustStats s;
  std::string error;
  CHECK_FALSE(parse_locust_stats("not json", s, error));
  CHECK(error.find("not JSON") != std::string::npos);
  CHECK_FALSE(parse_locust_stats("[1,2]", s, error));
  CHECK_FALSE(parse_locust_stats(R"({"stats": 3})", s, error));
  // Locust without a runner: empty stats, "missing" state.
  REQUIRE(parse_locust_stats(
      R"({"stats": [], "errors": [], "total_rps": 0.0, "fail_ratio": 0.0,
          "current_response_time_percentile_1": null, "current_response_time_percentile_2": null,
          "state": "missing", "user_count": 0})",
      s, error));
  CHECK(s.endpoints.empty());
  CHECK_FALSE(s.aggregated);
  CHECK(s.current_quantiles_ms.empty());
  // Wrong types are skipped, a null method is "", an "Aggregated" endpoint with a method
  // is an endpoint.
  REQUIRE(parse_locust_stats(
      R"({"stats": [7, {"name": 5}, {"name": "Aggregated", "method": "GET", "num_requests": "x"},
                    {"name": "Aggregated", "method": null, "num_requests": 3,
                     "response_time_percentile_0.95": 12, "response_time_percentile_abc": 1,
                     "response_time_percentile_2": 1}],
          "user_count": "many", "state": 1, "worker_count": 4})",
      s, error));
  REQUIRE(s.endpoints.size() == 1);
  CHECK(s.endpoints[0].method == "GET");
  CHECK(s.endpoints[0].requests == 0);
  REQUIRE(s.aggregated);
  CHECK(s.aggregated->requests == 3);
  REQUIRE(s.aggregated->quantiles_ms.size() == 1);
  CHECK_FALSE(s.user_count);
  CHECK(s.state.empty());
  CHECK(s.workers == 4);
  // workers list: anything but a worker object in state "missing" counts.
  REQUIRE(parse_locust_stats(
      R"({"stats": [], "workers": [1, {"state": "missing"}, {"state": "running"}, [2], {}]})", s,
      error));
  CHECK(s.workers == 4);
  // A repeated "stats" key replaces the first list.
  REQUIRE(parse_locust_stats(
      R"({"stats": [{"name": "/a", "num_requests": 1}], "stats": [{"name": "/b"}]})", s, error));
  REQUIRE(s.endpoints.size() == 1);
  CHECK(s.endpoints[0].name == "/b");
  // Nesting far beyond Locust's 4 levels is refused, not followed.
  std::string deep = R"({"stats": [{"name": "/x", "extra": )" + std::string(100, '[') +
                     std::string(100, ']') + "}]}";
  CHECK_FALSE(parse_locust_stats(deep, s, error));
  CHECK(error.find("nested too deeply") != std::string::npos);
  CHECK(error.find("not JSON") != std::string::npos);
  CHECK(s.endpoints.empty());
  std::string fine = R"({"stats": [{"name": "/x", "extra": )" + std::string(20, '[') +
                     std::string(20, ']') + "}]}";
  CHECK(parse_locust_stats(fine, s, error));
  CHECK_FALSE(parse_locust_stats("{\"stats\": [] } trailing", s, error));
}

TEST_CASE("locust scrape: figures dated by the answer, give or take Locust's 2 s cache") {
  // The scraper says how uncertain the answer's moment is; the runner dates it by its
  // arrival (collectors/sources.cpp exports the age; test_sources_real checks it live).
  auto scraper = loadwatch::make_locust_scraper(nullptr);
  loadwatch::SourceConfig config = locust_config();
  std::vector<loadwatch::FetchResult> answers(1);
  answers[0].body = read_fixture("sources/locust_2.28_stats_requests.json");
  auto result = scraper->process(config, answers);
  REQUIRE(result.error == loadwatch::FetchError::None);
  REQUIRE(result.data_age_uncertainty);
  CHECK(*result.data_age_uncertainty == 2.0);
  // A body that does not parse carries no figures, so no age either.
  answers.assign(1, {});
  answers[0].body = "{";
  result = scraper->process(config, answers);
  CHECK(result.error == loadwatch::FetchError::Parse);
  CHECK_FALSE(result.data_age_uncertainty);
}

TEST_CASE("locust scrape: counts that changed since the last answer are dated to that interval") {
  // The cache turned over between two answers when their counts differ: the new counts were
  // computed after the previous answer left, so the uncertainty is the time between the two
  // (at most the cache's 2 s); unchanged counts may be up to the cache's 2 s old.
  auto scraper = loadwatch::make_locust_scraper(nullptr);
  loadwatch::SourceConfig config = locust_config();
  auto body = [](int requests) {
    return R"({"state": "running", "user_count": 2, "stats": [{"name": "Aggregated",)"
           R"( "method": "", "num_requests": )" +
           std::to_string(requests) + R"(, "num_failures": 0}]})";
  };
  std::vector<loadwatch::FetchResult> answers(1);
  answers[0].body = body(10);
  auto first = scraper->process(config, answers);
  REQUIRE(first.data_age_uncertainty);
  CHECK(*first.data_age_uncertainty == 2.0);  // nothing before it to compare with
  answers.assign(1, {});
  answers[0].body = body(10);
  auto same = scraper->process(config, answers);
  REQUIRE(same.data_age_uncertainty);
  CHECK(*same.data_age_uncertainty == 2.0);
  answers.assign(1, {});
  answers[0].body = body(25);
  auto moved = scraper->process(config, answers);
  REQUIRE(moved.data_age_uncertainty);
  CHECK(*moved.data_age_uncertainty < 0.5);  // the two answers were moments apart
}

TEST_CASE("locust requests csv: counts by column name, quoted names, failures closed") {
  std::vector<loadwatch::LocustCsvRow> rows;
  std::string error;
  // As Locust 2.12 writes it (Python's csv module: \r\n, quotes around a comma).
  std::string csv =
      "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,"
      "Min Response Time,Max Response Time,Average Content Size,Requests/s,Failures/s,50%\r\n"
      "GET,/,120,3,100,104.5,99,130,12,9.9,0.2,100\r\n"
      "POST,\"/a,\"\"b\"\"\",7,0,N/A,20.25,1,30,0,0.5,0,N/A\r\n"
      ",Aggregated,127,3,100,99.8,1,130,11,10.4,0.2,100\r\n";
  REQUIRE(loadwatch::parse_locust_requests_csv(csv, rows, error));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].method == "GET");
  CHECK(rows[0].requests == 120);
  CHECK(rows[0].failures == 3);
  CHECK(*rows[0].avg_ms == 104.5);
  CHECK(rows[1].name == "/a,\"b\"");
  CHECK(rows[2].name == "Aggregated");
  CHECK(rows[2].method.empty());
  CHECK(rows[2].requests == 127);
  // The row cap keeps the aggregate.
  REQUIRE(loadwatch::parse_locust_requests_csv(csv, rows, error, 1));
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].name == "Aggregated");
  // What is not Locust's CSV is refused, so the scrape keeps to the JSON's counts.
  CHECK_FALSE(loadwatch::parse_locust_requests_csv("Name,Count\r\n/,1\r\n", rows, error));
  CHECK_FALSE(loadwatch::parse_locust_requests_csv(
      "Type,Name,Request Count,Failure Count\r\nGET,/,x,0\r\n", rows, error));
  CHECK_FALSE(loadwatch::parse_locust_requests_csv(
      "Type,Name,Request Count,Failure Count\r\nGET,\"/,1,0\r\n", rows, error));
  CHECK_FALSE(loadwatch::parse_locust_requests_csv(
      "Type,Name,Request Count,Failure Count\r\nGET,/,-1,0\r\n", rows, error));
  // A record of commas alone is refused at 256 fields, not held as a string per byte.
  std::string commas =
      "Type,Name,Request Count,Failure Count\r\nGET,/,1,0" + std::string(1u << 20, ',') + "\r\n";
  CHECK_FALSE(loadwatch::parse_locust_requests_csv(commas, rows, error));
  CHECK(error.find("256 columns") != std::string::npos);
  CHECK_FALSE(loadwatch::parse_locust_requests_csv(std::string(1u << 20, ','), rows, error));
  CHECK_FALSE(loadwatch::parse_locust_requests_csv(
      "Type,Name,Request Count,Failure Count\r\nGET,/\r\n", rows, error));
}

TEST_CASE("locust scrape: uncached counts dated by their own request, the state checked") {
  auto scraper = loadwatch::make_locust_scraper(nullptr);
  loadwatch::SourceConfig config = locust_config();
  config.interval = std::chrono::seconds(5);
  auto json = [](int requests, const char* state = "running") {
    return R"({"state": ")" + std::string(state) +
           R"(", "user_count": 2, "stats": [{"name": "/", "method": "GET",)"
           R"( "num_requests": )" +
           std::to_string(requests) +
           R"(, "num_failures": 0}, {"name": "Aggregated", "method": "", "num_requests": )" +
           std::to_string(requests) + R"(, "num_failures": 0}]})";
  };
  auto csv = [](int requests) {
    std::string n = std::to_string(requests);
    return "Type,Name,Request Count,Failure Count,Average Response Time\r\nGET,/," + n +
           ",1,10\r\n,Aggregated," + n + ",1,10\r\n";
  };
  auto scrape = [&](int csv_requests, int json_requests, const char* state = "running") {
    std::vector<loadwatch::FetchResult> answers(2);
    answers[0].body = csv(csv_requests);
    answers[0].seconds = 0.004;
    answers[0].arrived = 1000.0;
    answers[1].body = json(json_requests, state);
    return scraper->process(config, answers);
  };
  // A state computed after the counts: the counts are the CSV's, dated by its answer.
  auto fresh = scrape(100, 103);
  REQUIRE(fresh.error == loadwatch::FetchError::None);
  CHECK_FALSE(fresh.retry_in);
  CHECK(fresh.data_time == 1000.0);
  REQUIRE(fresh.data_age_uncertainty);
  CHECK(*fresh.data_age_uncertainty == Approx(0.004));
  CHECK(value(fresh.families, "loadwatch_generator_requests_total") == 100);
  CHECK(value(fresh.families, "loadwatch_generator_failures_total") == 1);
  // A cached state older than the counts: asked again shortly, up to 2.5 s in all at 5 s.
  for (int i = 0; i < 5; ++i) {
    auto stale = scrape(150, 120);
    REQUIRE(stale.retry_in);
    CHECK(*stale.retry_in == 0.5);
    CHECK(stale.families.empty());
  }
  // Then published with the last counts that had a state of their own, and their moment.
  auto given_up = scrape(160, 120);
  CHECK_FALSE(given_up.retry_in);
  CHECK(given_up.data_time == 1000.0);
  CHECK(value(given_up.families, "loadwatch_generator_requests_total") == 100);
  auto next = scrape(170, 170, "stopped");
  CHECK(value(next.families, "loadwatch_generator_requests_total") == 170);
  // A new run clears Locust's stats: a state from before the clear shows more requests than
  // the cleared counts, and is old; with the new run's own state the counters carry on once.
  auto before_clear = scrape(4, 170, "stopped");
  CHECK(before_clear.retry_in);
  for (int i = 0; i < 5; ++i) scrape(4, 170, "stopped");
  auto cleared = scrape(5, 6, "running");
  CHECK_FALSE(cleared.retry_in);
  CHECK(value(cleared.families, "loadwatch_generator_requests_total") == 175);
  auto later = scrape(30, 31, "running");
  CHECK(value(later.families, "loadwatch_generator_requests_total") == 200);
}
