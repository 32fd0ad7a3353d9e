#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "collectors/textfile.h"

using namespace loadwatch;

namespace {

struct Run {
  std::map<std::string, double> values;  // name{labels} -> value
  std::map<std::string, prometheus::MetricType> types;
  std::map<std::string, std::string> help;
};

class Harness {
 public:
  explicit Harness(std::string dir) : proc_("/nonexistent"), sys_("/nonexistent") {
    options_.textfile_directory = std::move(dir);
    CollectorEnv env{options_, config_, proc_, sys_, nullptr};
    collector_ = make_textfile_collector(env);
  }

  Run collect(MetricSink sink = {}) {
    SampleContext ctx{proc_, sys_, 0, {}};
    collector_->collect(ctx, sink);
    Run r;
    for (const auto& f : sink.families()) {
      r.types[f.name] = f.type;
      r.help[f.name] = f.help;
      for (const auto& m : f.metric) {
        std::string key = f.name + "{";
        for (size_t i = 0; i < m.label.size(); ++i) {
          key += (i ? "," : "") + m.label[i].name + "=" + m.label[i].value;
        }
        key += "}";
        double v = f.type == prometheus::MetricType::Counter ? m.counter.value
                   : f.type == prometheus::MetricType::Gauge ? m.gauge.value
                                                             : m.untyped.value;
        r.values[key] = v;
      }
    }
    return r;
  }

 private:
  Options options_;
  Config config_;
  FsRoot proc_, sys_;
  std::unique_ptr<Collector> collector_;
};

std::string make_temp_dir() {
  char tmpl[] = "/tmp/loadwatch-textfile-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

}  // namespace

TEST_CASE("textfile: wrk's summary and another job's file are merged; non-.prom ignored") {
  Harness h(LOADWATCH_FIXTURES "/textfile/ok");
  auto r = h.collect();
  // wrk_smoke.prom is real output of scripts/wrk/loadwatch.lua; wrk_smoke.stdout.txt beside it
  // is what wrk printed for the same run ("606 requests in 1.01s").
  CHECK(r.values["loadwatch_wrk_requests_total{run=smoke}"] == 606);
  CHECK(r.values["loadwatch_wrk_requests_total{run=nightly}"] == 5000);
  CHECK(r.types["loadwatch_wrk_requests_total"] == prometheus::MetricType::Counter);
  CHECK(r.values["loadwatch_wrk_errors_total{run=smoke,kind=status}"] == 0);
  CHECK(r.values["loadwatch_wrk_latency_seconds{run=smoke,quantile=0.999}"] > 0);
  CHECK(r.types["loadwatch_wrk_latency_seconds"] == prometheus::MetricType::Untyped);
  CHECK(r.values["backup_last_success_timestamp_seconds{}"] == 1.7e9);
  CHECK(r.values["loadwatch_textfile_mtime_seconds{file=wrk_smoke.prom}"] > 0);
  CHECK(r.values["loadwatch_textfile_mtime_seconds{file=nightly.prom}"] > 0);
  CHECK(r.values.count("loadwatch_textfile_mtime_seconds{file=README.txt}") == 0);
  CHECK(r.values["loadwatch_textfile_scrape_error{}"] == 0);
  // nightly.prom (read first) has no HELP for the family wrk_smoke.prom describes: the
  // merged family takes wrk's, not a generated one.
  CHECK(r.help["loadwatch_wrk_requests_total"] == "Requests wrk completed in the run.");
}

TEST_CASE("textfile: a family without HELP gets one naming its file") {
  Harness h(LOADWATCH_FIXTURES "/textfile/bad");
  auto r = h.collect();
  // good.prom has no HELP line for job_runs_total.
  CHECK(r.help["job_runs_total"] == "Metric read from " LOADWATCH_FIXTURES
                                    "/textfile/bad/good.prom");
}

TEST_CASE("textfile: broken, timestamped and type-clashing files are skipped with an error") {
  Harness h(LOADWATCH_FIXTURES "/textfile/bad");
  auto r = h.collect();
  CHECK(r.values["loadwatch_textfile_scrape_error{}"] == 1);
  CHECK(r.values["job_runs_total{job=a}"] == 3);        // good.prom still exported
  CHECK(r.values.count("job_runs_total{job=b}") == 0);  // type_clash.prom skipped
  CHECK(r.values.count("stamped{}") == 0);              // timestamped.prom skipped
  CHECK(r.values.count("half_written{job=a}") == 0);
  CHECK(r.values.count("loadwatch_textfile_mtime_seconds{file=good.prom}") == 1);
  CHECK(r.values.count("loadwatch_textfile_mtime_seconds{file=broken.prom}") == 0);
  CHECK(r.types["job_runs_total"] == prometheus::MetricType::Counter);
}

TEST_CASE("textfile: a family another collector already exported keeps its type") {
  Harness h(LOADWATCH_FIXTURES "/textfile/bad");
  MetricSink sink;
  sink.gauge("job_runs_total", "from a collector", {{"x", "1"}}, 1);
  auto r = h.collect(std::move(sink));
  CHECK(r.values.count("job_runs_total{job=a}") == 0);  // counter in good.prom: clash
  CHECK(r.values["job_runs_total{job=b}"] == 1);        // gauge in type_clash.prom: fine
}

TEST_CASE("textfile: missing directory is a scrape error, not a collector failure") {
  Harness h("/nonexistent/loadwatch-textfile");
  auto r = h.collect();
  CHECK(r.values["loadwatch_textfile_scrape_error{}"] == 1);
}

TEST_CASE("textfile: no directory configured adds nothing") {
  Harness h("");
  CHECK(h.collect().values.empty());
}

TEST_CASE("textfile: a rewritten file is re-read; a removed one disappears") {
  std::string dir = make_temp_dir();
  Harness h(dir);
  write_file(dir + "/a.prom", "# TYPE runs gauge\nruns 1\n");
  CHECK(h.collect().values["runs{}"] == 1);
  // Rename over it, as the wrk script does: new inode, so the cache cannot serve the old one
  // even within the same mtime second.
  write_file(dir + "/.a.tmp", "# TYPE runs gauge\nruns 2\n");
  REQUIRE(std::rename((dir + "/.a.tmp").c_str(), (dir + "/a.prom").c_str()) == 0);
  CHECK(h.collect().values["runs{}"] == 2);
  // Unchanged: served from the cache, same answer.
  CHECK(h.collect().values["runs{}"] == 2);
  write_file(dir + "/b.prom", "garbage here\n");
  auto r = h.collect();
  CHECK(r.values["loadwatch_textfile_scrape_error{}"] == 1);
  CHECK(r.values["runs{}"] == 2);
  REQUIRE(std::remove((dir + "/b.prom").c_str()) == 0);
  REQUIRE(std::remove((dir + "/a.prom").c_str()) == 0);
  r = h.collect();
  CHECK(r.values.count("runs{}") == 0);
  CHECK(r.values["loadwatch_textfile_scrape_error{}"] == 0);
  rmdir(dir.c_str());
}
