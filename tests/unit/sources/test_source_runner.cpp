// SourceRunner without a network: a scripted kind (no requests, so process() is called
// directly) drives up/down, error reasons, the series cap, HELP escaping, and stopping;
// secret files and the `credentials` reason on temporary files.
#include <spdlog/sinks/ostream_sink.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sources/prometheus.h"
#include "sources/source_runner.h"
#include "util/log.h"
#include "util/secret_file.h"

using namespace loadwatch;
using namespace std::chrono_literals;

namespace {

prometheus::MetricFamily counter_family(const std::string& name, int n) {
  prometheus::MetricFamily f{name, "help", prometheus::MetricType::Counter, {}};
  for (int i = 0; i < n; ++i) {
    prometheus::ClientMetric m;
    m.label = {{"i", std::to_string(i)}};
    m.counter.value = i;
    f.metric.push_back(m);
  }
  return f;
}

prometheus::MetricFamily histogram_family(int buckets, bool with_inf) {
  prometheus::MetricFamily f{"h", "help", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric m;
  for (int b = 0; b < buckets; ++b) m.histogram.bucket.push_back({1, double(b)});
  if (with_inf) m.histogram.bucket.push_back({1, std::numeric_limits<double>::infinity()});
  f.metric.push_back(m);
  return f;
}

/// Plays back results in order, then repeats the last one. With gated = true each
/// process() call waits for release(), so the test knows exactly which scrape a snapshot
/// shows.
class Scripted : public SourceScraper {
 public:
  explicit Scripted(std::vector<std::function<ScrapeResult()>> steps, bool gated = false)
      : steps_(std::move(steps)), allowed_(gated ? 0 : SIZE_MAX) {}
  std::vector<SourceRequest> requests(const SourceConfig&) const override { return {}; }
  ScrapeResult process(const SourceConfig&, std::vector<FetchResult>&) override {
    {
      std::unique_lock lock(mutex_);
      gate_.wait_for(lock, 10s, [&] { return calls_ < allowed_; });
    }
    size_t i = std::min(calls_++, steps_.size() - 1);
    return steps_[i]();
  }
  /// Lets `n` more scrapes through.
  void release(size_t n) {
    std::lock_guard lock(mutex_);
    allowed_ = allowed_ > SIZE_MAX - n ? SIZE_MAX : allowed_ + n;
    gate_.notify_all();
  }

 private:
  std::vector<std::function<ScrapeResult()>> steps_;
  std::mutex mutex_;
  std::condition_variable gate_;
  size_t calls_ = 0;
  size_t allowed_;
};

SourceConfig config(std::size_t max_series = 1000) {
  // Designated initializers: GCC 12 warns falsely (-Wrestrict) on `c.name = "s"` here.
  return SourceConfig{.name = "s",
                      .kind = "prometheus",
                      .url = "http://127.0.0.1:9",
                      .interval = 20ms,
                      .max_series = max_series,
                      .tls = {},
                      .auth = {}};
}

ScrapeResult ok(std::vector<prometheus::MetricFamily> fams) {
  return ScrapeResult{FetchError::None, "", std::move(fams), {}, {}, 0, {}};
}
ScrapeResult err(FetchError e) { return ScrapeResult{e, "boom", {}, {}, {}, 0, {}}; }

size_t reason_index(FetchError e) {
  for (size_t i = 0; i < std::size(kFetchErrorReasons); ++i)
    if (kFetchErrorReasons[i] == e) return i;
  return 99;
}

}  // namespace

TEST_CASE("series_count and cap_series count Prometheus series", "[runner]") {
  auto h = histogram_family(3, true);
  CHECK(series_count(h.metric[0], h.type) == 3 + 1 + 2);
  auto h2 = histogram_family(3, false);
  CHECK(series_count(h2.metric[0], h2.type) == 3 + 1 + 2);  // +Inf is written anyway
  prometheus::ClientMetric s;
  s.summary.quantile = {{0.5, 1}, {0.9, 2}};
  CHECK(series_count(s, prometheus::MetricType::Summary) == 4);

  std::vector<prometheus::MetricFamily> fams = {counter_family("a", 3), histogram_family(3, true),
                                                counter_family("b", 5)};
  CHECK(cap_series(fams, 100) == 0);
  CHECK(fams.size() == 3);
  // 3 (a) + 6 (h) = 9: a fits, h does not fit in 5, and nothing after the first drop is kept.
  CHECK(cap_series(fams, 5) == 6 + 5);
  REQUIRE(fams.size() == 1);
  CHECK(fams[0].name == "a");
  CHECK(fams[0].metric.size() == 3);
}

TEST_CASE("a runner publishes up/down, reasons and last success", "[runner]") {
  auto scripted = std::make_unique<Scripted>(
      std::vector<std::function<ScrapeResult()>>{
          [] { return err(FetchError::Connect); }, [] { return err(FetchError::Timeout); },
          [] { return ok({counter_family("c", 2)}); }, [] { return err(FetchError::Parse); }},
      true);
  Scripted* gate = scripted.get();
  SourceRunner r(config(), std::move(scripted));
  CHECK(r.snapshot()->scrapes == 0);
  CHECK_FALSE(r.snapshot()->up);

  gate->release(1);
  REQUIRE(r.wait_for_scrapes(1, 5s));
  auto s1 = r.snapshot();
  CHECK(s1->scrapes == 1);
  CHECK_FALSE(s1->up);
  CHECK(s1->last_success == 0);
  CHECK(s1->errors[reason_index(FetchError::Connect)] == 1);
  CHECK(s1->last_error == "boom");
  CHECK(s1->last_error_kind == FetchError::Connect);

  gate->release(2);
  REQUIRE(r.wait_for_scrapes(3, 5s));
  auto s3 = r.snapshot();
  CHECK(s3->scrapes == 3);
  CHECK(s3->up);
  CHECK(s3->last_success > 1.7e9);
  REQUIRE(s3->families.size() == 1);
  CHECK(s3->errors[reason_index(FetchError::Timeout)] == 1);
  CHECK(s3->last_error_kind == FetchError::Timeout);  // up again: why it was last down stays
  CHECK(s3->last_error == "boom");

  gate->release(1);
  REQUIRE(r.wait_for_scrapes(4, 5s));
  auto s4 = r.snapshot();
  CHECK(s4->scrapes == 4);
  CHECK_FALSE(s4->up);
  CHECK(s4->families.empty());  // no stale numbers while down
  CHECK(s4->last_error_kind == FetchError::Parse);
  CHECK(s4->last_success == s3->last_success);
  CHECK(s4->errors[reason_index(FetchError::Parse)] == 1);
  CHECK(s4->errors[reason_index(FetchError::Connect)] == 1);
  gate->release(1000);
}

TEST_CASE("a kind's retry is no scrape: asked again shortly, then published once", "[runner]") {
  // Locust's state answer older than its counts: the kind asks again in 50 ms, twice; the
  // runner publishes nothing until the third answer, which carries its own moment.
  auto retry = [] {
    ScrapeResult r = ok({});
    r.retry_in = 0.05;
    return r;
  };
  auto scripted = std::make_unique<Scripted>(
      std::vector<std::function<ScrapeResult()>>{retry, retry, [] {
                                                   ScrapeResult r = ok({counter_family("c", 1)});
                                                   r.data_age_uncertainty = 0.004;
                                                   r.data_time = 1.5e9;
                                                   return r;
                                                 }});
  SourceConfig c = config();
  c.interval = 10s;  // the third call comes only from the retries, not from the schedule
  auto started = std::chrono::steady_clock::now();
  SourceRunner r(c, std::move(scripted));
  REQUIRE(r.wait_for_scrapes(1, 5s));
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  auto s = r.snapshot();
  CHECK(s->scrapes == 1);
  REQUIRE(s->families.size() == 1);
  CHECK(s->answer_arrived == 1.5e9);  // the figures' own moment, not the last arrival
  CHECK(*s->data_age_uncertainty == 0.004);
}

TEST_CASE("the series cap drops and counts, every scrape", "[runner]") {
  // The log, captured: the cap is warned once per runner, not once per scrape.
  std::ostringstream log;
  auto previous_logger = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  struct Restore {
    std::shared_ptr<spdlog::logger> logger;
    ~Restore() { spdlog::set_default_logger(logger); }
  } restore{previous_logger};

  SourceRunner r(config(4), std::make_unique<Scripted>(std::vector<std::function<ScrapeResult()>>{
                                [] { return ok({counter_family("c", 10)}); }}));
  REQUIRE(r.wait_for_scrapes(3, 5s));
  auto s = r.snapshot();
  const std::string text = log.str();
  const auto first = text.find("more than 4 series");
  CHECK(first != std::string::npos);
  CHECK(text.find("more than 4 series", first + 1) == std::string::npos);
  REQUIRE(s->families.size() == 1);
  CHECK(s->families[0].metric.size() == 4);
  CHECK(s->dropped_series.at("max_series") == 6.0 * double(s->scrapes));
  // Raised limit on reconfigure: nothing dropped from then on.
  auto c = config(100);
  r.set_config(c);
  double dropped = s->dropped_series.at("max_series");
  uint64_t n = s->scrapes;
  REQUIRE(r.wait_for_scrapes(n + 3, 5s));
  auto later = r.snapshot();
  CHECK(later->families[0].metric.size() == 10);
  CHECK(later->dropped_series.at("max_series") <= dropped + 6);  // at most the one in flight
}

TEST_CASE("HELP stays raw (the serializer escapes it); a throwing kind is a parse error",
          "[runner]") {
  auto scripted = std::make_unique<Scripted>(
      std::vector<std::function<ScrapeResult()>>{
          [] {
            auto f = counter_family("c", 1);
            f.help = "a \\ b\nc";
            return ok({f});
          },
          []() -> ScrapeResult { throw std::runtime_error("kind bug"); }},
      true);
  Scripted* gate = scripted.get();
  SourceRunner r(config(), std::move(scripted));
  gate->release(1);
  REQUIRE(r.wait_for_scrapes(1, 5s));
  CHECK(r.snapshot()->families.at(0).help == "a \\ b\nc");
  gate->release(1);
  REQUIRE(r.wait_for_scrapes(2, 5s));
  auto s2 = r.snapshot();
  CHECK_FALSE(s2->up);
  CHECK(s2->errors[reason_index(FetchError::Parse)] == 1);
  CHECK(s2->last_error.find("kind bug") != std::string::npos);
  gate->release(1000);
}

TEST_CASE("repeated series and oversized labels of a scrape are dropped, counted by reason",
          "[runner]") {
  auto fam = counter_family("c", 3);
  fam.metric.push_back(fam.metric[1]);                             // a repeat
  fam.metric.push_back(fam.metric[0]);                             // and another
  fam.metric[0].label.push_back({"big", std::string(3000, 'x')});  // past kMaxLabelValueBytes
  SourceRunner r(config(), std::make_unique<Scripted>(std::vector<std::function<ScrapeResult()>>{
                               [fam] { return ok({fam}); }}));
  REQUIRE(r.wait_for_scrapes(2, 5s));
  auto s = r.snapshot();
  REQUIRE(s->families.size() == 1);
  // Kept: i=1, i=2, and the plain i=0 (the original i=0 had the oversized label).
  CHECK(s->families[0].metric.size() == 3);
  CHECK(s->dropped_series.at("duplicate") == 1.0 * double(s->scrapes));
  CHECK(s->dropped_series.at("label_limit") == 1.0 * double(s->scrapes));
  CHECK(s->up);
}

TEST_CASE("the prometheus kind keeps max_series of a huge body while parsing", "[runner]") {
  // 200,000 series capped to 1,000: the parse holds 1,000, the rest is only counted.
  std::string body;
  body.reserve(200000 * 24);
  for (int i = 0; i < 200000; ++i) body += "m_total{i=\"" + std::to_string(i) + "\"} 1\n";
  std::vector<FetchResult> answers(1);
  answers[0].body = std::move(body);
  auto kind = make_prometheus_scraper();
  auto c = config(1000);
  ScrapeResult result = kind->process(c, answers);
  REQUIRE(result.error == FetchError::None);
  REQUIRE(result.families.size() == 1);
  CHECK(result.families[0].metric.size() == 1000);
  CHECK(result.dropped.at("max_series") == 199000);
  DropCounts dropped = result.dropped;
  finish_scrape(result.families, c, dropped);
  CHECK(dropped.at("max_series") == 199000);  // nothing more to cut
}

TEST_CASE("destroying a runner waiting for its next scrape is prompt", "[runner]") {
  auto c = config();
  c.interval = 60s;
  auto r = std::make_unique<SourceRunner>(
      c, std::make_unique<Scripted>(
             std::vector<std::function<ScrapeResult()>>{[] { return ok({}); }}));
  REQUIRE(r->wait_for_scrapes(1, 5s));
  auto t0 = std::chrono::steady_clock::now();
  r.reset();
  CHECK(std::chrono::steady_clock::now() - t0 < 200ms);
}

namespace {

/// A file in a fresh temporary directory, removed with it.
struct TempFile {
  std::string dir, path;
  explicit TempFile(const std::string& content) {
    char tmpl[] = "/tmp/lw-secret-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/secret";
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(content.data(), 1, content.size(), f);
    std::fclose(f);
  }
  ~TempFile() {
    std::remove(path.c_str());
    rmdir(dir.c_str());
  }
};

}  // namespace

TEST_CASE("secret files: trailing line breaks stripped, content never in errors",
          "[runner][auth]") {
  std::string secret, error;
  CHECK(read_secret_file(TempFile("s3cret\n").path, secret, error));
  CHECK(secret == "s3cret");
  CHECK(read_secret_file(TempFile("s3cret\r\n\n").path, secret, error));
  CHECK(secret == "s3cret");
  CHECK(read_secret_file(TempFile("").path, secret, error));
  CHECK(secret.empty());
  {
    TempFile two("s3cret\nX-Injected: 1\n");
    CHECK_FALSE(read_secret_file(two.path, secret, error));
    CHECK(error == two.path + " has a line break or NUL byte inside");
    CHECK(secret.empty());
  }
  CHECK_FALSE(
      read_secret_file(TempFile(std::string(kMaxSecretBytes + 1, 'x')).path, secret, error));
  CHECK(error.find("larger than") != std::string::npos);
  CHECK_FALSE(read_secret_file("/nonexistent/pw", secret, error));
  CHECK(error == "cannot read /nonexistent/pw: No such file or directory");
}

TEST_CASE("read_credentials fills basic auth or a bearer token", "[runner][auth]") {
  TempFile pw("s3cret\n");
  FetchOptions o;
  std::string error;
  SourceAuth basic{"alice", pw.path, ""};
  REQUIRE(read_credentials(basic, o, error));
  CHECK(o.username == "alice");
  CHECK(o.password == "s3cret");
  CHECK(o.bearer_token.empty());
  SourceAuth bearer{"", "", pw.path};
  REQUIRE(read_credentials(bearer, o, error));
  CHECK(o.username.empty());
  CHECK(o.password.empty());
  CHECK(o.bearer_token == "s3cret");
  TempFile empty("\n");
  CHECK_FALSE(read_credentials(SourceAuth{"", "", empty.path}, o, error));
  CHECK(error == "bearer_token_file: " + empty.path + " is empty");
  CHECK(read_credentials(SourceAuth{}, o, error));  // no auth
}

TEST_CASE("an unreadable password file marks the source down as credentials", "[runner][auth]") {
  auto cfg = config();
  cfg.auth = SourceAuth{"alice", "/nonexistent/pw", ""};
  SourceRunner r(cfg, std::make_unique<Scripted>(std::vector<std::function<ScrapeResult()>>{
                          [] { return ok({counter_family("c", 1)}); }}));
  REQUIRE(r.wait_for_scrapes(1, 5s));
  auto s = r.snapshot();
  CHECK_FALSE(s->up);
  CHECK(s->errors[reason_index(FetchError::Credentials)] == 1);
  CHECK(s->last_error ==
        "basic_auth password_file: cannot read /nonexistent/pw: No such file or directory");
  CHECK(std::string(fetch_error_reason(FetchError::Credentials)) == "credentials");

  // Fixed on the next scrape without a reload: the file is read each time.
  TempFile pw("s3cret\n");
  cfg.auth.password_file = pw.path;
  r.set_config(cfg);
  REQUIRE(r.wait_for_scrapes(s->scrapes + 2, 5s));
  CHECK(r.snapshot()->up);
}
