// The Locust listener's push: the bounded reader refuses every bad shape naming the field,
// and the model exports what the last push said, its age, and tells runs only when allowed.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "push/locust_push_model.h"
#include "push/locust_push_parser.h"
#include "sources/generator_families.h"
#include "tests/lib/sample_values.h"

using namespace loadwatch;

namespace {

const std::size_t kBuckets = request_duration_bounds().size() + 1;

// A push as the listener writes it: 3 requests at 25 ms (bucket le=0.0256), 1 at 0.1 ms.
std::string body(const std::string& extra = "", double requests = 4, double time = 1700000001.5) {
  std::string counts;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    counts += (i ? "," : "") + std::string(i == 96 ? "3" : i == 0 ? "1" : "0");
  }
  return "{\"source\":\"steps\",\"time\":" + std::to_string(time) +
         ",\"requests\":" + std::to_string(static_cast<long long>(requests)) +
         ",\"failures\":1,\"users\":4,\"steps\":[[1700000000.25,2],[1700000001.0,4]],"
         "\"duration\":{\"counts\":[" +
         counts + "],\"sum\":0.0751}" + extra + "}";
}

std::string parse_error(const std::string& text) {
  LocustPush p;
  std::string error;
  if (parse_locust_push(text, p, error)) return "";
  return error;
}

struct Recorder : RunObserver {
  std::vector<GeneratorSighting> seen;
  void generator_seen(const GeneratorSighting& s) override { seen.push_back(s); }
  void generator_run_started(const std::string&, const std::string&, double) override {}
  void generator_run_ended(const std::string&, double) override {}
  void finished_run_seen(const std::string&, const std::string&, double, double) override {}
};

}  // namespace

TEST_CASE("locust push: the listener's body parses to its figures") {
  LocustPush p;
  std::string error;
  REQUIRE(parse_locust_push(body(",\"state\":\"running\",\"future\":{\"x\":[1]}"), p, error));
  CHECK(p.source == "steps");
  CHECK(p.time == 1700000001.5);
  CHECK(p.requests == 4);
  CHECK(p.failures == 1);
  CHECK(p.users == 4);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0] == std::pair<double, double>{1700000000.25, 2});
  REQUIRE(p.duration_counts.size() == kBuckets);
  CHECK(p.duration_counts[96] == 3);
  CHECK(p.duration_sum == 0.0751);
}

TEST_CASE("locust push: every bad shape is refused, naming the field") {
  CHECK(parse_error("[]") == "the body is not a JSON object");
  CHECK(parse_error("{}") == "source: missing");
  CHECK(parse_error("{\"source\":\"a b\"}").rfind("source: want 1 to 128", 0) == 0);
  CHECK(parse_error("{\"source\":\"" + std::string(129, 'a') + "\"}").rfind("source:", 0) == 0);
  CHECK(parse_error("{\"source\":1}") == "source: not a string");
  CHECK(parse_error("{\"source\":\"s\",\"time\":5}") == "time: not unix seconds");
  CHECK(parse_error("{\"source\":\"s\",\"time\":\"now\"}") == "time: not a number");
  CHECK(parse_error("{\"steps\":{}}") == "steps: not a list");
  CHECK(parse_error("{\"source\":\"s\",\"requests\":1.5}") ==
        "requests: not an integer in [0, 2^53]");
  CHECK(parse_error("{\"source\":\"s\",\"requests\":1e300}") ==
        "requests: not an integer in [0, 2^53]");
  CHECK(parse_error("{\"source\":\"s\",\"failures\":-1}") ==
        "failures: not an integer in [0, 2^53]");
  CHECK(parse_error("{\"source\":\"s\",\"users\":1e8}") == "users: not an integer in [0, 1e7]");
  CHECK(parse_error("{\"source\":\"s\",\"source\":\"t\"}") == "source: given twice");
  CHECK(parse_error("{\"source\":\"s\",\"time\":1700000000,\"requests\":1,\"failures\":2,"
                    "\"users\":0}") == "failures: more than requests");
  CHECK(parse_error("{\"steps\":[1]}") == "steps: each entry is [unix seconds, users]");
  CHECK(parse_error("{\"steps\":[[1700000000]]}") == "steps: each entry is [unix seconds, users]");
  CHECK(parse_error("{\"steps\":[[1700000000,1,2]]}") ==
        "steps: each entry is [unix seconds, users]");
  CHECK(parse_error("{\"steps\":[{}]}") == "steps: each entry is [unix seconds, users]");
  CHECK(parse_error("{\"steps\":[[1700000001,1],[1700000000,2]]}") == "steps: not in time order");
  std::string many = "{\"steps\":[";
  for (int i = 0; i < 65; ++i) many += (i ? ",[" : "[") + std::to_string(1700000000 + i) + ",1]";
  CHECK(parse_error(many + "]}") == "steps: more than 64 entries");
  CHECK(parse_error("{\"duration\":{\"counts\":{}}}") == "duration.counts: not a list");
  const std::string head =
      "{\"source\":\"s\",\"time\":1700000000,\"requests\":3,\"failures\":0,\"users\":1,";
  CHECK(parse_error(head + "\"duration\":{\"counts\":[1,2],\"sum\":1}}")
            .rfind("duration.counts: want 256", 0) == 0);
  CHECK(parse_error(head + "\"duration\":{\"sum\":1}}") == "duration: wants counts and sum");
  CHECK(parse_error("{\"duration\":{\"counts\":[-1]}}") ==
        "duration.counts: not an integer in [0, 2^53]");
  CHECK(parse_error("{\"duration\":{\"sum\":\"x\"}}") == "duration.sum: not a number");
  CHECK(parse_error("{\"duration\":[]}") == "duration: not an object");
  // The histogram must count every request the push counts.
  CHECK(parse_error(body("", 5)) == "duration.counts: add up to 4, requests says 5");
  // Nesting is capped at 3 levels, wherever it hides.
  CHECK(parse_error("{\"x\":[[[1]]]}").find("nested too deeply") != std::string::npos);
  CHECK(parse_error("{\"source\":\"s\"").find("not a JSON object") == 0);
}

TEST_CASE("locust push: the model exports the last push, its age from Locust's timestamp") {
  LocustPushModel m;
  LocustPush p;
  std::string error;
  REQUIRE(parse_locust_push(body(), p, error));
  CHECK(m.ingest(p, 1700000001.6).refused == nullptr);
  MetricSink sink;
  m.collect(sink, 1700000002.0);
  auto v = test::sample_values(sink);
  CHECK(v["loadwatch_generator_requests_total{source=steps}"] == 4);
  CHECK(v["loadwatch_generator_failures_total{source=steps}"] == 1);
  CHECK(v["loadwatch_generator_users{source=steps}"] == 4);
  CHECK(v["loadwatch_generator_data_age_seconds{source=steps}"] == Approx(0.5));
  CHECK(v["loadwatch_generator_data_age_uncertainty_seconds{source=steps}"] == 1e-6);
  const prometheus::MetricFamily* histogram = nullptr;
  for (const auto& f : sink.families()) {
    if (f.name == "loadwatch_generator_request_duration_seconds") histogram = &f;
  }
  REQUIRE(histogram);
  const auto& h = histogram->metric.at(0).histogram;
  CHECK(h.sample_count == 4);
  CHECK(h.sample_sum == 0.0751);
  CHECK(h.bucket[0].cumulative_count == 1);
  CHECK(h.bucket[95].cumulative_count == 1);
  CHECK(h.bucket[96].upper_bound == 0.0256);
  CHECK(h.bucket[96].cumulative_count == 4);
  CHECK(v["loadwatch_push_lines_total{protocol=locust}"] == 1);

  // A late or repeated push moves nothing backwards.
  CHECK(std::string(m.ingest(p, 1700000003).refused) == "stale");
  v = test::sample_values([&] {
    MetricSink s;
    m.collect(s, 1700000003.0);
    return s;
  }());
  CHECK(v["loadwatch_generator_data_age_seconds{source=steps}"] == Approx(1.5));
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=locust,reason=stale}"] == 1);
}

TEST_CASE("locust push: a sample shows a step's last push, and no push younger than itself") {
  // The listener pushes at the stop at once: its last push of the step and the stop's often
  // land within one sample interval, and the sample would show only the stop's (users 0).
  LocustPushModel m;
  auto push = [&](double time, double requests, double users, double now) {
    LocustPush p;
    p.source = "lc";
    p.time = time;
    p.requests = requests;
    p.users = users;
    REQUIRE(m.ingest(p, now).refused == nullptr);
  };
  auto sample = [&](double now) {
    MetricSink s;
    m.collect(s, now);
    return test::sample_values(s);
  };
  push(100.0, 50, 8, 100.001);
  auto v = sample(100.5);
  CHECK(v["loadwatch_generator_requests_total{source=lc}"] == 50);
  push(101.0, 60, 8, 101.001);  // the step's last push
  push(101.2, 61, 0, 101.201);  // the stop, before any sample
  v = sample(101.5);
  CHECK(v["loadwatch_generator_requests_total{source=lc}"] == 60);
  CHECK(v["loadwatch_generator_users{source=lc}"] == 8);
  CHECK(v["loadwatch_generator_data_age_seconds{source=lc}"] == Approx(0.5));  // its own time
  v = sample(102.5);
  CHECK(v["loadwatch_generator_requests_total{source=lc}"] == 61);
  CHECK(v["loadwatch_generator_users{source=lc}"] == 0);
  CHECK(v["loadwatch_generator_data_age_seconds{source=lc}"] == Approx(1.3));
  // Pushes of one step are not held: the sample shows the newest.
  push(103.0, 70, 2, 103.001);
  push(103.4, 75, 2, 103.401);
  v = sample(103.5);
  CHECK(v["loadwatch_generator_requests_total{source=lc}"] == 75);
  // A push that arrived after the sample's moment (while the sample was being taken, on a
  // busy host) is the next sample's: shown now it would read younger than the sample.
  push(104.3, 80, 2, 104.31);
  v = sample(104.2);
  CHECK(v["loadwatch_generator_requests_total{source=lc}"] == 75);
  CHECK(v["loadwatch_generator_data_age_seconds{source=lc}"] == Approx(0.8));
  v = sample(105.2);
  CHECK(v["loadwatch_generator_requests_total{source=lc}"] == 80);
  CHECK(v["loadwatch_generator_data_age_seconds{source=lc}"] == Approx(0.9));
}

TEST_CASE("locust push: past the source cap a quiet source makes room, a busy one does not") {
  LocustPushModel m(LocustPushModel::Limits{2, 60});
  LocustPush p;
  std::string error;
  REQUIRE(parse_locust_push(body(), p, error));
  for (const char* name : {"a", "b"}) {
    p.source = name;
    REQUIRE(m.ingest(p, 1000).refused == nullptr);
  }
  p.source = "c";
  auto r = m.ingest(p, 1030);
  CHECK(std::string(r.refused) == "max_sources");
  CHECK(r.retry_after_s == 30);
  CHECK(m.ingest(p, 1061).refused == nullptr);  // "a" quiet for 61 s: replaced
}

TEST_CASE("locust push: steps reach the runs at Locust's times, each once") {
  LocustPush p;
  std::string error;
  REQUIRE(parse_locust_push(body(), p, error));
  {
    // The collector gives the model an observer only with --push.run-annotations
    // (tests/scripts/test_locust_listener.py runs both ways); told: each step once, in
    // order, then a keep-alive.
    LocustPushModel m;
    Recorder runs;
    m.set_run_observer(&runs);
    REQUIRE(m.ingest(p, 1700000002).refused == nullptr);
    REQUIRE(runs.seen.size() == 3);
    CHECK(runs.seen[0].origin == "locust:steps");
    CHECK(runs.seen[0].activity == GeneratorActivity::Steady);
    CHECK(runs.seen[0].at == 1700000000.25);
    CHECK(*runs.seen[0].users == 2);
    CHECK(runs.seen[1].at == 1700000001.0);
    CHECK(*runs.seen[1].users == 4);
    CHECK(runs.seen[2].activity == GeneratorActivity::Unknown);
    CHECK(runs.seen[2].at == 1700000001.5);
    // The next push repeats no step; a step to 0 users ends the run at its time.
    p.time = 1700000003;
    p.steps = {{1700000001.0, 4}, {1700000002.75, 0}};
    REQUIRE(m.ingest(p, 1700000003.1).refused == nullptr);
    REQUIRE(runs.seen.size() == 5);
    CHECK(runs.seen[3].activity == GeneratorActivity::Idle);
    CHECK(runs.seen[3].at == 1700000002.75);
  }
}
