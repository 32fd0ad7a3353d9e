// Runs inferred from what loadwatch already reads: Locust's /stats/requests (captured bodies),
// JMeter's Graphite and InfluxDB listeners, wrk's textfile summary. The real code paths with
// a RunBook as their observer.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "collectors/textfile.h"
#include "push/jmeter_model.h"
#include "runs/run_book.h"
#include "sources/locust.h"
#include "tests/lib/build_paths.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream f(fixture_path(name));
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void scrape(SourceScraper& scraper, const SourceConfig& config, const std::string& body) {
  std::vector<FetchResult> answers(1);
  answers[0].body = body;
  answers[0].status = 200;
  auto result = scraper.process(config, answers);
  REQUIRE(result.error == FetchError::None);
}

void graphite(JMeterModel& model, const std::string& line, double now) {
  GraphiteLine parsed;
  REQUIRE(parse_graphite_line(line, parsed) == nullptr);
  model.ingest_graphite(parsed, now);
}

}  // namespace

TEST_CASE("a Locust source: spawning opens a run, running at N users a phase, stopped closes it") {
  RunBook book;
  auto scraper = make_locust_scraper(&book);
  SourceConfig config;
  config.name = "lc";
  config.kind = "locust";
  config.url = "http://127.0.0.1:8089";
  scrape(*scraper, config, fixture("sources/locust_2.12.1_stats_requests.json"));  // stopped
  CHECK_FALSE(book.current());
  scrape(*scraper, config, fixture("sources/locust_2.21_stats_requests.json"));  // spawning
  REQUIRE(book.current());
  CHECK(book.current()->origin == "locust:lc");
  CHECK(book.current()->name == "lc");
  CHECK(book.current()->phases.empty());
  scrape(*scraper, config, fixture("sources/locust_2.15_stats_requests.json"));  // running, 50
  REQUIRE(book.current()->phases.size() == 1);
  CHECK(book.current()->phases[0].users == 50);
  CHECK(book.current()->phases[0].start == book.current()->start);  // the ramp began it
  scrape(*scraper, config, fixture("sources/locust_2.12.1_stats_requests_running.json"));  // 4
  CHECK(book.current()->phases.size() == 2);
  CHECK(book.current()->phases[1].name == "users=4");
  scrape(*scraper, config, fixture("sources/locust_2.12.1_stats_requests.json"));
  CHECK_FALSE(book.current());
  CHECK(book.list()[0].state == RunState::Finished);
}

TEST_CASE("JMeter over InfluxDB: its annotations open and close a run") {
  RunBook book;
  JMeterModel model("influx");
  model.set_run_observer(&book);
  std::int64_t t0 = 1796144712;
  auto body = [](const std::string& text, std::int64_t s) {
    return "events,application=shop,title=ApacheJMeter text=\"" + text + "\" " + std::to_string(s) +
           "000000000\n";
  };
  model.ingest_influx("jmx", body("Checkout plan started", t0), t0);
  REQUIRE(book.current());
  CHECK(book.current()->origin == "jmeter:jmx");
  CHECK(book.current()->name == "Checkout plan");
  CHECK(book.current()->start == t0);
  model.ingest_influx("jmx",
                      "jmeter,application=shop,transaction=all,statut=all count=3,avg=2 " +
                          std::to_string(t0 + 5) + "000000000\n",
                      t0 + 5);
  CHECK(book.current());
  model.ingest_influx("jmx", body("Checkout plan ended", t0 + 60), t0 + 60);
  CHECK_FALSE(book.current());
  CHECK(book.list()[0].end == t0 + 60);
  // A short test whose start and end arrive in one body.
  model.ingest_influx("jmx", body("Quick started", t0 + 100) + body("Quick ended", t0 + 101),
                      t0 + 101);
  CHECK_FALSE(book.current());
  CHECK(book.list()[0].name == "Quick");
  CHECK(book.list()[0].end == t0 + 101);
}

TEST_CASE("JMeter over Graphite: threads running make a run") {
  RunBook book;
  JMeterModel model("graphite");
  model.set_run_observer(&book);
  double t = 1796144712;
  graphite(model, "jmeter.test.startedT 0 1796144712", t);
  graphite(model, "jmeter.test.endedT 0 1796144712", t);
  CHECK_FALSE(book.current());
  graphite(model, "jmeter.test.startedT 5 1796144713", t + 1);
  graphite(model, "jmeter.test.endedT 0 1796144713", t + 1);
  REQUIRE(book.current());
  CHECK(book.current()->origin == "jmeter:jmeter");
  CHECK(book.current()->start == t + 1);
  graphite(model, "jmeter.test.startedT 5 1796144730", t + 18);
  graphite(model, "jmeter.test.endedT 5 1796144730", t + 18);
  CHECK_FALSE(book.current());
  CHECK(book.list()[0].end == t + 18);
}

TEST_CASE("each wrk summary in the textfile directory is one finished run") {
  char tmpl[] = "/tmp/lw_wrkruns_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  fs::copy_file(fixture_path("textfile/ok/wrk_smoke.prom"), dir + "/wrk_smoke.prom");
  RunBook book;
  Options options;
  options.textfile_directory = dir;
  Config config;
  FsRoot root("/nonexistent");
  CollectorEnv env{options, config, root, root, nullptr, &book};
  auto collector = make_textfile_collector(env);
  for (int i = 0; i < 3; ++i) {  // read every sample, parsed once
    SampleContext ctx{root, root, 0, {}};
    MetricSink sink;
    collector->collect(ctx, sink);
  }
  auto list = book.list();
  REQUIRE(list.size() == 1);
  CHECK(list[0].origin == "wrk:smoke");
  CHECK(list[0].name == "smoke");
  CHECK(list[0].end == 1796085669);
  CHECK(list[0].start == Approx(1796085669 - 1.012926));
  CHECK(list[0].state == RunState::Finished);
  // A loadwatch restarted over the same directory (and the same stored runs) adds nothing.
  auto again = make_textfile_collector(env);
  SampleContext ctx{root, root, 0, {}};
  MetricSink sink;
  again->collect(ctx, sink);
  CHECK(book.list().size() == 1);
  fs::remove_all(dir);
}
