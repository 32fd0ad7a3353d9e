#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "collectors/textfile.h"
#include "metrics/exposition.h"
#include "metrics/series_guard.h"
#include "sources/prom_text_parser.h"
#include "tests/lib/build_paths.h"

using loadwatch::test::fixture_path;
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

  /// One sample as the sampler finishes it: own families (origin 0) first, the collector's
  /// with origin 1, then guard_families and the page text.
  struct Page {
    std::string text;
    GuardReport report;
    std::map<std::pair<std::uint16_t, std::string>, double> notes;
  };
  Page page(MetricSink sink = {}) {
    SampleContext ctx{proc_, sys_, 0, {}};
    sink.set_origin(1);
    collector_->collect(ctx, sink);
    Page p;
    p.notes = sink.notes();
    SeriesOrigins origins;
    auto families = sink.take(origins);
    guard_families(families, &origins, GuardOptions{}, p.report);
    p.text = serialize_text(families);
    return p;
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
  Harness h(fixture_path("textfile/ok"));
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
  Harness h(fixture_path("textfile/bad"));
  auto r = h.collect();
  // good.prom has no HELP line for job_runs_total.
  CHECK(r.help["job_runs_total"] == "Metric read from " + fixture_path("textfile/bad/good.prom"));
}

TEST_CASE("textfile: broken, timestamped and type-clashing files are skipped with an error") {
  Harness h(fixture_path("textfile/bad"));
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
  Harness h(fixture_path("textfile/bad"));
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

namespace {

double dropped(const Harness::Page& p, const std::string& reason) {
  auto it = p.report.dropped.find({1, reason});
  return it == p.report.dropped.end() ? 0 : it->second;
}

void check_strict(const std::string& text) {
  auto strict = parse_prom_text(text, PromTextLimits::strict_mode());
  INFO(text);
  CHECK(strict.error == "");
}

}  // namespace

TEST_CASE("textfile: HELP with a backslash or a line break comes out escaped once") {
  std::string dir = make_temp_dir();
  Harness h(dir);
  write_file(dir + "/a.prom",
             "# HELP job_x Path C:\\\\tmp\\nsecond line\n# TYPE job_x gauge\njob_x 1\n");
  auto p = h.page();
  CHECK(p.text.find("# HELP job_x Path C:\\\\tmp\\nsecond line\n") != std::string::npos);
  check_strict(p.text);
  std::remove((dir + "/a.prom").c_str());
  rmdir(dir.c_str());
}

TEST_CASE("textfile: a family loadwatch exports is refused; the rest of the file stays") {
  std::string dir = make_temp_dir();
  Harness h(dir);
  write_file(dir + "/a.prom",
             "# TYPE loadwatch_load1 gauge\nloadwatch_load1 99\n# TYPE job_y gauge\njob_y 1\n");
  MetricSink own;
  own.gauge("loadwatch_load1", "1m load average.", {}, 0.25);
  auto p = h.page(std::move(own));
  CHECK(p.text.find("loadwatch_load1 0.25\n") != std::string::npos);
  CHECK(p.text.find("loadwatch_load1 99") == std::string::npos);
  CHECK(p.text.find("job_y 1\n") != std::string::npos);
  CHECK(dropped(p, "reserved") == 1);
  CHECK(p.report.example.at({1, "reserved"}) == "loadwatch_load1");
  check_strict(p.text);
  std::remove((dir + "/a.prom").c_str());
  rmdir(dir.c_str());
}

TEST_CASE("textfile: a series twice, in one file or two, is exported once") {
  std::string dir = make_temp_dir();
  Harness h(dir);
  write_file(dir + "/a.prom", "# TYPE job_z gauge\njob_z{k=\"1\"} 1\njob_z{k=\"1\"} 2\n");
  write_file(dir + "/b.prom", "# TYPE job_z gauge\njob_z{k=\"1\"} 3\njob_z{k=\"2\"} 4\n");
  auto p = h.page();
  CHECK(dropped(p, "duplicate") == 2);
  CHECK(p.text.find("job_z{k=\"1\"} 1\n") != std::string::npos);  // the first file's first
  CHECK(p.text.find("job_z{k=\"2\"} 4\n") != std::string::npos);
  check_strict(p.text);
  std::remove((dir + "/a.prom").c_str());
  std::remove((dir + "/b.prom").c_str());
  rmdir(dir.c_str());
}

TEST_CASE("textfile: invalid UTF-8 is replaced on the page and counted") {
  std::string dir = make_temp_dir();
  Harness h(dir);
  write_file(dir + "/a.prom", "# HELP job_u caf\xe9\njob_u{name=\"\xff\xfe\"} 1\n");
  auto p = h.page();
  CHECK(valid_utf8(p.text));
  CHECK(p.report.invalid_utf8.at(1) == 2);
  check_strict(p.text);
  std::remove((dir + "/a.prom").c_str());
  rmdir(dir.c_str());
}

TEST_CASE("textfile: the directory's series cap is shared by its files, noted each sample") {
  std::string dir = make_temp_dir();
  Harness h(dir);
  std::string big = "# TYPE job_big gauge\n";
  for (std::size_t i = 0; i < kMaxTextfileSeries + 500; ++i) {
    big += "job_big{i=\"" + std::to_string(i) + "\"} 1\n";
  }
  write_file(dir + "/a.prom", big);
  write_file(dir + "/b.prom", "# TYPE job_small gauge\njob_small 1\n");
  for (int sample = 0; sample < 2; ++sample) {
    auto p = h.page();
    CHECK(p.notes.at({1, "max_series"}) == 500 + 1);
    std::size_t kept = 0;
    for (std::size_t at = 0; (at = p.text.find("\njob_big{", at)) != std::string::npos; ++at)
      ++kept;
    CHECK(kept == kMaxTextfileSeries);
    CHECK(p.text.find("job_small 1") == std::string::npos);
  }
  // a.prom shrinks: b.prom gets its series back (re-parsed, as its cached copy was cut).
  write_file(dir + "/.a.tmp", "# TYPE job_big gauge\njob_big 1\n");
  REQUIRE(std::rename((dir + "/.a.tmp").c_str(), (dir + "/a.prom").c_str()) == 0);
  auto p = h.page();
  CHECK(p.text.find("job_small 1") != std::string::npos);
  CHECK(p.notes.count({1, "max_series"}) == 0);
  std::remove((dir + "/a.prom").c_str());
  std::remove((dir + "/b.prom").c_str());
  rmdir(dir.c_str());
}
