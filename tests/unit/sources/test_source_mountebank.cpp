// Mountebank 2.9.1 captures (/imposters, /metrics) -> loadwatch_mock_* and the re-exported
// mb_* imposter families; counter resets; the prometheus kind's source relabelling.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sources/mountebank.h"
#include "sources/prom_text_parser.h"
#include "sources/prometheus.h"
#include "tests/lib/fixture_file.h"

using namespace loadwatch;
using loadwatch::test::read_fixture;

namespace {

const prometheus::MetricFamily* family(const std::vector<prometheus::MetricFamily>& fams,
                                       const std::string& name) {
  for (const auto& f : fams)
    if (f.name == name) return &f;
  return nullptr;
}

std::string label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label)
    if (l.name == name) return l.value;
  return "<absent>";
}

double counter(const std::vector<prometheus::MetricFamily>& fams, const std::string& name,
               const std::string& imposter) {
  const auto* f = family(fams, name);
  if (!f) return -1;
  for (const auto& m : f->metric)
    if (label(m, "imposter") == imposter) return m.counter.value;
  return -1;
}

std::vector<prometheus::MetricFamily> map_text(const std::string& imposters_json,
                                               const std::string* metrics_text,
                                               MountebankMapper& mapper) {
  std::vector<MountebankImposter> imps;
  std::string error;
  REQUIRE(parse_mountebank_imposters(imposters_json, imps, error));
  std::vector<prometheus::MetricFamily> fams;
  if (metrics_text) {
    auto p = parse_prom_text(*metrics_text);
    REQUIRE(p.ok());
    fams = std::move(p.families);
  }
  MetricSink sink;
  mapper.map(imps, metrics_text ? &fams : nullptr, "mb", sink);
  mapper.end_scrape(1000);
  return sink.take();
}

std::vector<prometheus::MetricFamily> map(const std::string& imposters_file,
                                          const std::string* metrics_text,
                                          MountebankMapper& mapper) {
  return map_text(read_fixture(imposters_file), metrics_text, mapper);
}

std::string imposters_json(int requests_3000) {
  return R"({"imposters": [{"protocol": "http", "port": 3000, "numberOfRequests": )" +
         std::to_string(requests_3000) + "}]}";
}

}  // namespace

TEST_CASE("imposter label normalisation", "[mountebank]") {
  CHECK(normalise_imposter_label("[http:3000 orders api] ") == "http:3000");
  CHECK(normalise_imposter_label("[http:23601] ") == "http:23601");
  CHECK(normalise_imposter_label("[tcp:2526 x]") == "tcp:2526");
  CHECK(normalise_imposter_label("http:3000") == "http:3000");
  CHECK(normalise_imposter_label("[") == "[");
  CHECK(normalise_imposter_label("[]") == "[]");
  CHECK(normalise_imposter_label("") == "");
}

TEST_CASE("/imposters of mb 2.9.1", "[mountebank]") {
  std::vector<MountebankImposter> imps;
  std::string error;
  REQUIRE(parse_mountebank_imposters(read_fixture("sources/mountebank_2.9.1_imposters.json"), imps,
                                     error));
  REQUIRE(imps.size() == 2);
  CHECK(imps[0].label == "http:23600");
  CHECK(imps[0].name == "orders api");
  CHECK(imps[0].requests == 7);
  CHECK(imps[1].label == "http:23601");
  CHECK(imps[1].name.empty());
  CHECK(imps[1].requests == 3);

  CHECK_FALSE(parse_mountebank_imposters("<html>", imps, error));
  CHECK_FALSE(parse_mountebank_imposters(R"({"imposters": {}})", imps, error));
  REQUIRE(parse_mountebank_imposters(
      R"({"imposters": [1, {"protocol": "http"}, {"port": 1}, {"protocol": "tcp", "port": 2.0},
                        {"protocol": "https", "port": 4, "numberOfRequests": "x"}]})",
      imps, error));
  REQUIRE(imps.size() == 2);
  CHECK(imps[0].label == "tcp:2");
  CHECK(imps[1].label == "https:4");
  CHECK(imps[1].requests == 0);
}

TEST_CASE("a long imposter name is cut at the cap, between UTF-8 sequences", "[mountebank]") {
  // 2,047 bytes, then "é" (2 bytes): a cut at 2,048 bytes would leave half of it.
  std::string name = std::string(loadwatch::kMaxLabelValueBytes - 1, 'n') + "\u00e9 and more";
  std::vector<MountebankImposter> imps;
  std::string error;
  REQUIRE(parse_mountebank_imposters(
      R"({"imposters": [{"protocol": "http", "port": 1, "name": ")" + name + "\"}]}", imps, error));
  REQUIRE(imps.size() == 1);
  CHECK(imps[0].name == std::string(loadwatch::kMaxLabelValueBytes - 1, 'n'));
}

TEST_CASE("mb /metrics: imposter families kept, defaults dropped, labels normalised",
          "[mountebank]") {
  MountebankMapper mapper;
  std::string metrics = read_fixture("sources/mountebank_2.9.1_metrics.txt");
  auto fams = map("sources/mountebank_2.9.1_imposters.json", &metrics, mapper);

  CHECK(counter(fams, "loadwatch_mock_requests_total", "http:23600") == 7);
  CHECK(counter(fams, "loadwatch_mock_requests_total", "http:23601") == 3);
  CHECK(counter(fams, "loadwatch_mock_unmatched_requests_total", "http:23600") == 2);
  CHECK(counter(fams, "loadwatch_mock_unmatched_requests_total", "http:23601") == 3);
  CHECK(counter(fams, "mb_request_total", "http:23600") == 7);
  CHECK(counter(fams, "mb_no_match_total", "http:23601") == 3);

  for (const auto& f : fams) {
    INFO(f.name);
    CHECK((f.name.rfind("loadwatch_mock_", 0) == 0 || mountebank_family_exported(f.name)));
    CHECK(f.name.rfind("mb_process_", 0) != 0);
    CHECK(f.name.rfind("mb_nodejs_", 0) != 0);
    for (const auto& m : f.metric) {
      CHECK(label(m, "source") == "mb");
      CHECK(m.label.front().name == "source");
      CHECK(label(m, "imposter").find('[') == std::string::npos);
    }
  }
  // Kept, not only allowed: every imposter family of the capture that has samples
  // (mb_blocked_ip_total has a TYPE line only; mb_process_* and mb_nodejs_* are dropped).
  for (const char* name :
       {"mb_request_total", "mb_no_match_total", "mb_predicate_match_duration_seconds",
        "mb_response_generation_duration_seconds"}) {
    INFO(name);
    CHECK(family(fams, name) != nullptr);
  }
  const auto* hist = family(fams, "mb_predicate_match_duration_seconds");
  REQUIRE(hist);
  CHECK(hist->type == prometheus::MetricType::Histogram);
  CHECK(hist->help == "Time it takes to match the predicates and select a stub");
  REQUIRE(hist->metric.size() == 2);
  CHECK(hist->metric[0].histogram.sample_count == 7);
}

TEST_CASE("numberOfRequests dropping to 0 is a counter reset", "[mountebank]") {
  MountebankMapper mapper;
  std::string metrics = read_fixture("sources/mountebank_2.9.1_metrics.txt");
  auto before = map("sources/mountebank_2.9.1_imposters.json", &metrics, mapper);
  CHECK(counter(before, "loadwatch_mock_requests_total", "http:23600") == 7);
  // Saved requests deleted: mb reports 0; loadwatch keeps 7 and continues from there.
  auto after = map("sources/mountebank_2.9.1_imposters_after_reset.json", &metrics, mapper);
  CHECK(counter(after, "loadwatch_mock_requests_total", "http:23600") == 7);
  CHECK(counter(after, "loadwatch_mock_requests_total", "http:23601") == 3);
  auto again = map("sources/mountebank_2.9.1_imposters.json", &metrics, mapper);
  CHECK(counter(again, "loadwatch_mock_requests_total", "http:23600") == 14);
}

TEST_CASE("a restarted mb (new process start time) restarts every counter", "[mountebank]") {
  MountebankMapper mapper;
  std::string metrics = read_fixture("sources/mountebank_2.9.1_metrics.txt");
  REQUIRE(metrics.find("mb_process_start_time_seconds 1796083379") != std::string::npos);
  CHECK(counter(map("sources/mountebank_2.9.1_imposters.json", &metrics, mapper),
                "loadwatch_mock_requests_total", "http:23600") == 7);
  // Restarted while loadwatch did not look; by now the new process has counted 9 (> 7).
  std::string restarted = metrics;
  restarted.replace(restarted.find("1796083379"), 10, "1796083999");
  auto imps = read_fixture("sources/mountebank_2.9.1_imposters.json");
  const std::string seven = "\"numberOfRequests\": 7";
  imps.replace(imps.find(seven), seven.size(), "\"numberOfRequests\": 9");
  auto fams = map_text(imps, &restarted, mapper);
  CHECK(counter(fams, "loadwatch_mock_requests_total", "http:23600") == 16);
  CHECK(counter(fams, "loadwatch_mock_requests_total", "http:23601") == 6);
  // Same process again: no further restart.
  fams = map_text(imps, &restarted, mapper);
  CHECK(counter(fams, "loadwatch_mock_requests_total", "http:23600") == 16);
}

TEST_CASE("GET /config: mb's process uptime, from a capture", "[mountebank]") {
  const std::string config = read_fixture("sources/mountebank_2.9.1_config.json");
  REQUIRE(config.find("\"uptime\": 0.70044729") != std::string::npos);
  CHECK(parse_mountebank_uptime(config) == 0.70044729);
  // Only process.uptime counts: not a top-level or deeper "uptime", not a string.
  CHECK_FALSE(parse_mountebank_uptime(R"({"uptime": 3, "process": {"x": {"uptime": 4}}})"));
  CHECK_FALSE(parse_mountebank_uptime(R"({"process": {"uptime": "5"}})"));
  CHECK_FALSE(parse_mountebank_uptime(R"({"process": {"uptime": -1}})"));
  CHECK_FALSE(parse_mountebank_uptime(config.substr(0, config.size() / 2)));  // cut short
  CHECK(parse_mountebank_uptime(R"({"process": [], "process": {"uptime": 1.5}})") == 1.5);
}

TEST_CASE("a restart within the start time's second is seen by mb's uptime", "[mountebank]") {
  // mb_process_start_time_seconds is rounded to the second: a stop and start within it leaves
  // it the same, and a new process whose count passed the old one's last value (3 > 2) looks
  // like the old one counting on.
  std::string metrics = read_fixture("sources/mountebank_2.9.1_metrics.txt");
  MountebankMapper mapper;
  mapper.note_uptime(4.0, 1000.0, 0.002);  // started at 996.0
  CHECK(counter(map_text(imposters_json(2), &metrics, mapper), "loadwatch_mock_requests_total",
                "http:3000") == 2);
  mapper.note_uptime(0.4, 1000.9, 0.002);  // started at 1000.5: another process
  CHECK(counter(map_text(imposters_json(3), &metrics, mapper), "loadwatch_mock_requests_total",
                "http:3000") == 5);
  // The same process a second later (its start within the slack): no further restart.
  mapper.note_uptime(1.4, 1001.905, 0.004);
  CHECK(counter(map_text(imposters_json(4), &metrics, mapper), "loadwatch_mock_requests_total",
                "http:3000") == 6);
  // The same process after a long silence, its clock 0.05 % off ours: no restart either.
  mapper.note_uptime(1.4 + 600 * 1.0005, 1001.905 + 600, 0.002);
  CHECK(counter(map_text(imposters_json(7), &metrics, mapper), "loadwatch_mock_requests_total",
                "http:3000") == 9);
}

TEST_CASE("an imposter missing from a scrape comes back as a new counter", "[mountebank]") {
  MountebankMapper mapper;
  CHECK(counter(map_text(imposters_json(5), nullptr, mapper), "loadwatch_mock_requests_total",
                "http:3000") == 5);
  // Deleted: absent from the listing.
  CHECK(map_text(R"({"imposters": []})", nullptr, mapper).empty());
  // Re-created, already at 8 by the next scrape: 5 + 8, not 8.
  CHECK(counter(map_text(imposters_json(8), nullptr, mapper), "loadwatch_mock_requests_total",
                "http:3000") == 13);
  CHECK(counter(map_text(imposters_json(9), nullptr, mapper), "loadwatch_mock_requests_total",
                "http:3000") == 14);
}

TEST_CASE("without /metrics (older mb) only the request counts are exported", "[mountebank]") {
  MountebankMapper mapper;
  auto fams = map("sources/mountebank_2.9.1_imposters.json", nullptr, mapper);
  REQUIRE(fams.size() == 1);
  CHECK(fams[0].name == "loadwatch_mock_requests_total");
}

TEST_CASE("prometheus kind: source label added, an existing one becomes exported_source",
          "[prometheus]") {
  auto p = parse_prom_text(
      "# HELP up_total things\n# TYPE up_total counter\n"
      "up_total{source=\"a\"} 1\nup_total{source=\"b\",exported_source=\"c\"} 2\nup_total 3\n");
  REQUIRE(p.ok());
  add_source_label(p.families, "peer");
  const auto& ms = p.families[0].metric;
  REQUIRE(ms.size() == 3);
  CHECK(p.families[0].help == "things");
  CHECK(p.families[0].type == prometheus::MetricType::Counter);
  CHECK(label(ms[0], "source") == "peer");
  CHECK(label(ms[0], "exported_source") == "a");
  CHECK(label(ms[1], "exported_source") == "c");
  CHECK(label(ms[1], "exported_exported_source") == "b");
  CHECK(ms[2].label.size() == 1);
}
