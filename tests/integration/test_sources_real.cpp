// Pull sources against real peers on loopback: misbehaving endpoints from
// tests/scripts/bad_http_server.py, real Mountebank 2.9.1 (npm, build/peers/mountebank) and
// real Locust 2.12.1 (Debian python3-locust) against python3 -m http.server, and a python3
// peer that echoes the credentials it receives.
// Every child is started here, killed by its PID and reaped; every wait is bounded.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/collector.h"
#include "collectors/sources.h"
#include "config/config.h"
#include "config/options.h"
#include "metrics/metric_sink.h"
#include "procfs/fs_root.h"
#include "sources/http_fetch.h"
#include "sources/source_runner.h"
#include "tests/lib/build_paths.h"
#include "tests/lib/eventually.h"
#include "tests/lib/read_line.h"
#include "tests/lib/sample_values.h"
#include "tests/lib/sanitizers.h"
#include "util/unix_time.h"

using namespace loadwatch;
using loadwatch::test::eventually;
using loadwatch::test::value;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// ---- children ---------------------------------------------------------------------------

/// A child process started with fork+exec. It dies with the test (PR_SET_PDEATHSIG); the
/// destructor stops it by PID (SIGTERM, then SIGKILL after 5 s) and reaps it.
class Process {
 public:
  /// `pipe_stdin`: the child's stdin is a pipe we hold (bad_http_server.py exits when it
  /// closes); `pipe_stdout`: its stdout is readable with line(); otherwise stdout and
  /// stderr go to `log`.
  Process(std::vector<std::string> argv, const std::string& log, bool pipe_stdio = false) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe_stdio) {
      REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
      REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    }
    int logfd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(logfd >= 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::setpgid(0, 0);
      int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(pipe_stdio ? in[0] : devnull, 0);
      ::dup2(pipe_stdio ? out[1] : logfd, 1);
      ::dup2(logfd, 2);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(logfd);
    if (pipe_stdio) {
      ::close(in[0]);
      ::close(out[1]);
      stdin_ = in[1];
      stdout_ = out[0];
    }
  }
  ~Process() {
    stop();
    if (stdin_ >= 0) ::close(stdin_);
    if (stdout_ >= 0) ::close(stdout_);
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  /// One line of the child's stdout, waiting at most `timeout`.
  std::string line(std::chrono::milliseconds timeout = 30s) {
    auto out = test::read_line(stdout_, timeout);
    if (!out) FAIL("child " << pid_ << " wrote no line in time");
    return *out;
  }

  /// True once the child has exited (reaped).
  bool exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    return false;
  }

  /// Sends `sig` and waits up to `grace` for the exit, then SIGKILL; always reaps.
  void stop(int sig = SIGTERM, std::chrono::milliseconds grace = 5s) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
      if (exited()) return;
      std::this_thread::sleep_for(20ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
};

/// A loopback TCP port nobody listens on right now (bound to 0, then closed).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("loadwatch-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// A plain HTTP GET/POST for driving peers (not the code under test).
std::pair<long, std::string> http(const std::string& url, const std::string& post_form = {},
                                  const std::string& json_body = {}, bool del = false) {
  CURL* h = curl_easy_init();
  std::string body;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(
      h, CURLOPT_WRITEFUNCTION, +[](char* d, size_t s, size_t n, void* u) {
        static_cast<std::string*>(u)->append(d, s * n);
        return s * n;
      });
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_slist* headers = nullptr;
  if (!json_body.empty()) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_body.c_str());
  } else if (!post_form.empty()) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, post_form.c_str());
  }
  if (del) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
  long status = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return {status, body};
}

// ---- metrics ------------------------------------------------------------------------------

double reason_count(const SourceSnapshot& s, FetchError e) {
  for (size_t i = 0; i < std::size(kFetchErrorReasons); ++i)
    if (kFetchErrorReasons[i] == e) return s.errors[i];
  return -1;
}

SourceConfig source(const std::string& name, const std::string& kind, const std::string& url,
                    std::chrono::milliseconds interval = 200ms,
                    std::chrono::milliseconds timeout = 2000ms) {
  SourceConfig c;
  c.name = name;
  c.kind = kind;
  c.url = url;
  c.interval = interval;
  c.timeout = timeout;
  return c;
}

std::unique_ptr<SourceRunner> runner(const SourceConfig& c) {
  return std::make_unique<SourceRunner>(c, make_source_scraper(c.kind));
}

/// Peak RSS of this process since the last reset_peak_rss(), in bytes (VmHWM).
long peak_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return -1;
}
long current_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return -1;
}
/// Resets VmHWM to the current RSS (proc(5) /proc/PID/clear_refs, value 5, Linux >= 4.0).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

/// Runs the sources collector once (the way the sampler does) and returns its families.
struct SourcesHarness {
  Options options;
  Config config;
  FsRoot proc{"/proc"}, sys{"/sys"};
  std::unique_ptr<Collector> collector;

  explicit SourcesHarness(std::vector<SourceConfig> sources) {
    config.sources = std::move(sources);
    CollectorEnv env{options, config, proc, sys, nullptr};
    collector = make_sources_collector(env);
  }
  std::vector<prometheus::MetricFamily> collect(double* seconds = nullptr, double now = 0) {
    SampleContext ctx{proc, sys, now, {}};
    MetricSink sink;
    auto t0 = std::chrono::steady_clock::now();
    collector->collect(ctx, sink);
    if (seconds) {
      *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    return sink.take();
  }
};

/// `promtool check metrics` over the exposition of `fams`; returns its output ("" = clean).
/// Empty optional when promtool is not installed.
/// promtool's complaints about the page; "" when it is valid.
std::string promtool_check(const std::vector<prometheus::MetricFamily>& fams, const fs::path& dir) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    return "promtool not installed (scripts/install-deps test installs it)";
  }
  fs::path in = dir / "metrics.txt", out = dir / "promtool.txt";
  std::ofstream(in) << prometheus::TextSerializer().Serialize(fams);
  std::string cmd = "promtool check metrics < " + in.string() + " > " + out.string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream o(out);
  std::stringstream ss;
  ss << o.rdbuf();
  return rc == 0 ? std::string() : "rc " + std::to_string(rc) + ": " + ss.str();
}

std::string source_dir() {
  const char* env = std::getenv("LOADWATCH_SOURCE_DIR");
  return env ? env : loadwatch::test::source_dir();
}

}  // namespace

// ---- misbehaving endpoints ----------------------------------------------------------------

TEST_CASE("bad endpoints mark the source down with the right reason", "[sources][real]") {
  fs::path dir = temp_dir("bad");
  Process server({"python3", source_dir() + "/tests/scripts/bad_http_server.py"},
                 (dir / "server.log").string(), true);
  std::string port = server.line();
  REQUIRE(!port.empty());
  std::string base = "http://127.0.0.1:" + port;

  SECTION("a hanging endpoint: down after its timeout; others and collect() unaffected") {
    SourcesHarness h({source("hang", "prometheus", base + "/hang", 200ms, 500ms),
                      source("good", "prometheus", base + "/prom", 200ms, 500ms)});
    double worst = 0;
    bool good_up_while_hanging = false;
    auto t0 = std::chrono::steady_clock::now();
    // Sample like the daemon does (every 100 ms) for 1.5 s: every collect() stays fast.
    while (std::chrono::steady_clock::now() - t0 < 1500ms) {
      double s = 0;
      auto fams = h.collect(&s);
      worst = std::max(worst, s);
      if (value(fams, "loadwatch_source_up", {{"source", "good"}}) == 1)
        good_up_while_hanging = true;
      std::this_thread::sleep_for(100ms);
    }
    auto fams = h.collect();
    CHECK(worst < 0.05);
    CHECK(good_up_while_hanging);
    CHECK(value(fams, "demo_requests_total",
                {{"source", "good"}, {"exported_source", "upstream"}}) == 42);
    CHECK(value(fams, "demo_temperature", {{"source", "good"}}) == -1.5);
    CHECK(promtool_check(fams, dir) == "");  // demo_temperature has no HELP upstream
    CHECK(value(fams, "loadwatch_source_up", {{"source", "hang"}, {"kind", "prometheus"}}) == 0);
    CHECK(value(fams, "loadwatch_source_errors_total",
                {{"source", "hang"}, {"reason", "timeout"}}) >= 1);
    CHECK(value(fams, "loadwatch_source_errors_total",
                {{"source", "hang"}, {"reason", "connect"}}) == 0);
    double took = value(fams, "loadwatch_source_scrape_duration_seconds", {{"source", "hang"}});
    CHECK(took >= 0.45);
    CHECK(took < 1.0);
    CHECK(value(fams, "loadwatch_source_last_success_timestamp_seconds", {{"source", "hang"}}) ==
          0);
    CHECK(value(fams, "loadwatch_source_last_success_timestamp_seconds", {{"source", "good"}}) >
          1.7e9);

    // Stopping while a request hangs is prompt (SIGTERM must exit the daemon within 2 s).
    auto r = runner(source("hang2", "prometheus", base + "/hang", 5s, 10s));
    std::this_thread::sleep_for(300ms);  // the GET is in flight and hanging
    auto s0 = std::chrono::steady_clock::now();
    r.reset();
    CHECK(std::chrono::steady_clock::now() - s0 < 500ms);
  }

  SECTION(
      "404 -> http_status, garbage JSON -> parse, bad text format -> parse, refused -> connect") {
    auto not_found = runner(source("nf", "prometheus", base + "/404"));
    auto garbage = runner(source("garbage", "locust", base + "/garbage"));
    auto bad_mb = runner(source("badmb", "mountebank", base + "/garbage"));
    auto bad_prom = runner(source("badprom", "prometheus", base + "/prom_bad"));
    auto refused =
        runner(source("refused", "locust", "http://127.0.0.1:" + std::to_string(free_port())));
    for (auto* r : {&not_found, &garbage, &bad_mb, &bad_prom, &refused}) {
      REQUIRE((*r)->wait_for_scrapes(1, 10s));
    }
    auto nf = not_found->snapshot();
    CHECK_FALSE(nf->up);
    CHECK(reason_count(*nf, FetchError::HttpStatus) == 1);
    CHECK(nf->last_error.find("404") != std::string::npos);
    auto g = garbage->snapshot();
    CHECK_FALSE(g->up);
    CHECK(reason_count(*g, FetchError::Parse) == 1);
    CHECK(reason_count(*bad_mb->snapshot(), FetchError::Parse) == 1);
    auto bp = bad_prom->snapshot();
    CHECK(reason_count(*bp, FetchError::Parse) == 1);
    CHECK(bp->last_error.find("line 3") != std::string::npos);
    auto rf = refused->snapshot();
    CHECK(reason_count(*rf, FetchError::Connect) == 1);
    CHECK(rf->families.empty());
    // The counts keep growing with each failed scrape.
    REQUIRE(not_found->wait_for_scrapes(3, 10s));
    CHECK(reason_count(*not_found->snapshot(), FetchError::HttpStatus) >= 3);
  }

  SECTION("a family whose type clashes with an exported one is left out, the rest kept") {
    SourcesHarness h({source("clash", "prometheus", base + "/clash")});
    std::vector<prometheus::MetricFamily> fams;
    REQUIRE(eventually(
        [&] {
          fams = h.collect();
          return value(fams, "ok_family", {{"source", "clash"}}) == 2;
        },
        10s));
    for (const auto& f : fams) {
      if (f.name == "loadwatch_source_up") {
        CHECK(f.type == prometheus::MetricType::Gauge);
        CHECK(f.metric.size() == 1);  // loadwatch's own sample only
      }
    }
    CHECK(value(fams, "loadwatch_source_up", {{"source", "clash"}, {"kind", "prometheus"}}) == 1);
  }

  SECTION("100 MiB responses and a gzip bomb -> too_large, RSS bounded") {
    for (const char* route : {"/big", "/big_chunked", "/gzipbomb"}) {
      INFO(route);
      reset_peak_rss();
      long before = current_rss();
      auto r = runner(source("big", "prometheus", base + route, 10s, 20s));
      REQUIRE(r->wait_for_scrapes(1, 30s));
      auto s = r->snapshot();
      CHECK_FALSE(s->up);
      CHECK(reason_count(*s, FetchError::TooLarge) == 1);
      long growth = peak_rss() - before;
      // The limit is 16 MiB of decoded body; the string's last doubling may hold 8 + 16 MiB
      // at once. Far below the 100 MiB / 256 MiB the peer sends.
      if (!LOADWATCH_ASAN) CHECK(growth < 40L * 1024 * 1024);
    }
  }
  server.stop();
  fs::remove_all(dir);
}

// ---- credentials ----------------------------------------------------------------------------

TEST_CASE("HttpFetcher sends basic auth or a bearer token, and forgets them", "[sources][real]") {
  fs::path dir = temp_dir("auth");
  // A peer that answers with the Host and Authorization headers it received.
  Process server({"python3", "-c", R"(import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = ("host=%s auth=%s" % (self.headers.get("Host", ""),
                                  self.headers.get("Authorization", ""))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
)"},
                 (dir / "server.log").string(), true);
  std::string port = server.line();
  REQUIRE(!port.empty());
  std::string url = "http://127.0.0.1:" + port + "/metrics";
  std::string host = "host=127.0.0.1:" + port;

  HttpFetcher http;  // one handle for all, as a source runner keeps it
  FetchOptions basic;
  basic.username = "alice";
  basic.password = "s3cret";
  auto r = http.get(url, basic);
  REQUIRE(r.ok());
  CHECK(r.body == host + " auth=Basic YWxpY2U6czNjcmV0");  // alice:s3cret
  FetchOptions bearer;
  bearer.bearer_token = "t0ken";
  r = http.get(url, bearer);
  REQUIRE(r.ok());
  CHECK(r.body == host + " auth=Bearer t0ken");
  // Nothing carries over to a request without credentials on the same (reused) handle.
  r = http.get(url, FetchOptions{});
  REQUIRE(r.ok());
  CHECK(r.body == host + " auth=");
  // server_name is for https:// only; a plain URL goes out unchanged.
  FetchOptions named;
  named.tls.server_name = "peer.internal";
  r = http.get(url, named);
  REQUIRE(r.ok());
  CHECK(r.body == host + " auth=");
  server.stop();
  fs::remove_all(dir);
}

// ---- Mountebank 2.9.1 -----------------------------------------------------------------------

namespace {

std::string find_mb() {
  if (const char* env = std::getenv("LOADWATCH_MB")) return env;
  for (const std::string& p :
       {source_dir() + "/build/peers/mountebank/node_modules/.bin/mb",
        std::string(fs::current_path() / "peers/mountebank/node_modules/.bin/mb")}) {
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

std::unique_ptr<Process> start_mb(const std::string& mb, int port, const fs::path& dir) {
  auto p = std::make_unique<Process>(
      std::vector<std::string>{mb, "--port", std::to_string(port), "--host", "127.0.0.1",
                               "--pidfile", (dir / "mb.pid").string(), "--logfile",
                               (dir / "mb.log").string(), "--loglevel", "warn"},
      (dir / "mb.out").string());
  std::string admin = "http://127.0.0.1:" + std::to_string(port);
  REQUIRE(eventually([&] { return http(admin + "/").first == 200; }, 60s));
  return p;
}

void create_imposter(const std::string& admin, int port) {
  auto [status, body] =
      http(admin + "/imposters", {},
           R"({"protocol": "http", "port": )" + std::to_string(port) +
               R"(, "name": "orders api", "stubs": [{"predicates": [{"equals": {"path": "/ok"}}],
              "responses": [{"is": {"statusCode": 200, "body": "ok"}}]}]})");
  REQUIRE(status == 201);
}

}  // namespace

TEST_CASE("Mountebank 2.9.1: exact counts, normalised imposter, down and up again",
          "[sources][real][mountebank]") {
  std::string mb = find_mb();
  if (mb.empty()) FAIL("Mountebank not found: run scripts/install-deps test (or set LOADWATCH_MB)");
  fs::path dir = temp_dir("mb");
  int admin_port = free_port(), imposter_port = free_port();
  std::string admin = "http://127.0.0.1:" + std::to_string(admin_port);
  std::string imposter = "http://127.0.0.1:" + std::to_string(imposter_port);
  std::string label = "http:" + std::to_string(imposter_port);
  auto mbp = start_mb(mb, admin_port, dir);
  create_imposter(admin, imposter_port);

  for (int i = 0; i < 20; ++i) REQUIRE(http(imposter + "/ok").first == 200);
  for (int i = 0; i < 5; ++i) REQUIRE(http(imposter + "/nomatch").first == 200);

  SourcesHarness h({source("mb", "mountebank", admin, 200ms, 2000ms)});
  std::vector<prometheus::MetricFamily> fams;
  REQUIRE(eventually(
      [&] {
        fams = h.collect();
        return value(fams, "loadwatch_mock_requests_total", {{"imposter", label}}) == 25;
      },
      15s));
  CHECK(value(fams, "loadwatch_source_up", {{"source", "mb"}, {"kind", "mountebank"}}) == 1);
  CHECK(value(fams, "loadwatch_mock_requests_total", {{"source", "mb"}, {"imposter", label}}) ==
        25);
  CHECK(value(fams, "loadwatch_mock_unmatched_requests_total",
              {{"source", "mb"}, {"imposter", label}}) == 5);
  CHECK(value(fams, "mb_request_total", {{"source", "mb"}, {"imposter", label}}) == 25);
  CHECK(value(fams, "mb_no_match_total", {{"source", "mb"}, {"imposter", label}}) == 5);
  CHECK(value(fams, "mb_predicate_match_duration_seconds",
              {{"source", "mb"}, {"imposter", label}}) == 25);
  for (const auto& f : fams) {
    INFO(f.name);
    CHECK(f.name.rfind("mb_process_", 0) != 0);
    CHECK(f.name.rfind("mb_nodejs_", 0) != 0);
    for (const auto& m : f.metric)
      for (const auto& l : m.label)
        if (l.name == "imposter") CHECK(l.value == label);
  }
  CHECK(promtool_check(fams, dir) == "");

  // Deleting saved requests resets numberOfRequests to 0: loadwatch's counter continues.
  REQUIRE(
      http(admin + "/imposters/" + std::to_string(imposter_port) + "/savedRequests", {}, {}, true)
          .first == 200);
  for (int i = 0; i < 2; ++i) REQUIRE(http(imposter + "/ok").first == 200);
  REQUIRE(eventually(
      [&] {
        fams = h.collect();
        return value(fams, "loadwatch_mock_requests_total", {{"imposter", label}}) == 27;
      },
      15s));

  // mb stopped: the source goes down with reason connect, its numbers disappear.
  mbp->stop();
  REQUIRE(eventually(
      [&] {
        return value(h.collect(), "loadwatch_source_up", {{"source", "mb"}}) == 0;
      },
      15s));
  fams = h.collect();
  CHECK(value(fams, "loadwatch_source_errors_total", {{"source", "mb"}, {"reason", "connect"}}) >=
        1);
  CHECK(std::isnan(value(fams, "loadwatch_mock_requests_total", {{"imposter", label}})));

  // Restarted (imposters are gone with the process): up again, counters continue from 27.
  mbp = start_mb(mb, admin_port, dir);
  create_imposter(admin, imposter_port);
  for (int i = 0; i < 3; ++i) REQUIRE(http(imposter + "/ok").first == 200);
  // What the last poll saw, reported on failure (a sanitized run under load once timed out).
  double up = NAN, requests = NAN;
  const bool carried = eventually(
      [&] {
        fams = h.collect();
        up = value(fams, "loadwatch_source_up", {{"source", "mb"}});
        requests = value(fams, "loadwatch_mock_requests_total", {{"imposter", label}});
        return up == 1 && requests == 30;
      },
      30s);
  CAPTURE(up, requests);
  REQUIRE(carried);
  CHECK(value(fams, "loadwatch_mock_unmatched_requests_total", {{"imposter", label}}) == 5);
  mbp->stop();
  fs::remove_all(dir);
}

// ---- Locust 2.12.1 --------------------------------------------------------------------------

namespace {

struct LocustRun {
  std::map<std::string, double> requests;  // "METHOD name" -> count; "Aggregated" -> total
  std::map<std::string, double> failures;
  std::string state;
};

LocustRun locust_now(const std::string& web) {
  LocustRun r;
  auto [status, body] = http(web + "/stats/requests");
  if (status != 200) return r;
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return r;
  r.state = doc.value("state", "");
  for (const auto& row : doc["stats"]) {
    std::string method = row["method"].is_string() ? row["method"].get<std::string>() : "";
    std::string key = method.empty() ? row["name"].get<std::string>()
                                     : method + " " + row["name"].get<std::string>();
    r.requests[key] = row["num_requests"].get<double>();
    r.failures[key] = row["num_failures"].get<double>();
  }
  return r;
}

/// Locust's own final CSV (Type,Name,Request Count,Failure Count,...).
LocustRun locust_csv(const fs::path& file) {
  LocustRun r;
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cols.push_back(c);
    if (cols.size() < 4) continue;
    std::string key = cols[0].empty() ? cols[1] : cols[0] + " " + cols[1];
    r.requests[key] = std::stod(cols[2]);
    r.failures[key] = std::stod(cols[3]);
  }
  return r;
}

}  // namespace

TEST_CASE("Locust 2.12.1: counts agree with Locust's CSV, across a new run",
          "[sources][real][locust]") {
  if (std::system("command -v locust >/dev/null 2>&1") != 0) {
    FAIL("locust not found: run scripts/install-deps test (Debian python3-locust)");
  }
  fs::path dir = temp_dir("locust");
  int sut_port = free_port(), web_port = free_port();
  fs::create_directories(dir / "www");
  std::ofstream(dir / "www" / "index.html") << "hello\n";
  Process sut({"python3", "-m", "http.server", std::to_string(sut_port), "--bind", "127.0.0.1",
               "--directory", (dir / "www").string()},
              (dir / "sut.log").string());
  std::string sut_url = "http://127.0.0.1:" + std::to_string(sut_port);
  REQUIRE(eventually([&] { return http(sut_url + "/").first == 200; }, 30s));

  std::ofstream(dir / "locustfile.py") << R"(from locust import HttpUser, task, constant
class U(HttpUser):
    wait_time = constant(0.05)
    @task(3)
    def index(self):
        self.client.get("/")
    @task
    def missing(self):
        self.client.get("/missing")
)";
  std::string web = "http://127.0.0.1:" + std::to_string(web_port);
  Process locust({"locust",
                  "-f",
                  (dir / "locustfile.py").string(),
                  "--host",
                  sut_url,
                  "--autostart",
                  "-u",
                  "3",
                  "-r",
                  "3",
                  "-t",
                  "3s",
                  "--web-host",
                  "127.0.0.1",
                  "--web-port",
                  std::to_string(web_port),
                  "--csv",
                  (dir / "run").string(),
                  "--loglevel",
                  "WARNING"},
                 (dir / "locust.log").string());

  SourcesHarness h({source("locust", "locust", web, 200ms, 2000ms)});
  std::vector<prometheus::MetricFamily> fams;
  // Run 1 (3 users, 3 s): seen running, then stopped.
  REQUIRE(eventually(
      [&] {
        return value(h.collect(), "loadwatch_generator_running", {{"source", "locust"}}) == 1;
      },
      60s));
  CHECK(value(h.collect(), "loadwatch_generator_users", {{"source", "locust"}}) >= 1);
  {
    // The counts' age runs from the arrival of the uncached CSV whose state answer was fresh,
    // and their uncertainty is that request's round trip. Scraped every 0.2 s, most state
    // answers come from Locust's 2 s cache: those scrapes keep the last fresh counts, so the
    // age reaches the cache's 2 s plus one 0.5 s retry and the interval.
    double before = unix_now();
    auto fams = h.collect(nullptr, unix_now());
    double age = value(fams, "loadwatch_generator_data_age_seconds", {{"source", "locust"}});
    CHECK(age >= 0);
    CHECK(age <= 0.2 + 2.0 + 0.5 + (unix_now() - before));
    double u =
        value(fams, "loadwatch_generator_data_age_uncertainty_seconds", {{"source", "locust"}});
    CHECK(u > 0);
    CHECK(u < 0.5);
  }
  REQUIRE(eventually([&] { return locust_now(web).state == "stopped"; }, 30s));
  // /stats/requests is memoized for 2 s (web.py DEFAULT_CACHE_TIME): let it settle. A fixed
  // wait on purpose: a cached answer looks final, so no condition tells the settled one apart.
  std::this_thread::sleep_for(2500ms);
  LocustRun run1 = locust_now(web);
  REQUIRE(run1.requests["Aggregated"] > 0);
  REQUIRE(eventually(
      [&] {
        fams = h.collect();
        return value(fams, "loadwatch_generator_requests_total") == run1.requests["Aggregated"];
      },
      10s));
  CHECK(value(fams, "loadwatch_generator_running") == 0);
  CHECK(value(fams, "loadwatch_generator_failures_total") == run1.failures["Aggregated"]);
  CHECK(value(fams, "loadwatch_generator_endpoint_requests_total",
              {{"name", "/"}, {"method", "GET"}}) == run1.requests["GET /"]);
  CHECK(value(fams, "loadwatch_generator_endpoint_failures_total",
              {{"name", "/missing"}, {"method", "GET"}}) == run1.failures["GET /missing"]);
  CHECK(value(fams, "loadwatch_generator_latency_seconds") ==
        run1.requests["Aggregated"]);  // _count
  CHECK(value(fams, "loadwatch_generator_endpoint_latency_seconds", {{"name", "/"}}) ==
        run1.requests["GET /"]);
  CHECK(promtool_check(fams, dir) == "");

  // Run 2 (1 user, 2 s) from the web API: Locust clears its stats; loadwatch carries run 1.
  REQUIRE(http(web + "/swarm", "user_count=1&spawn_rate=1&run_time=2s").first == 200);
  // Its 2 s run can fall between two refreshes of Locust's 2 s cache, so "running" may never
  // be seen: wait for a stopped state whose counts are run 2's (fewer than run 1's, not 0).
  REQUIRE(eventually(
      [&] {
        LocustRun now = locust_now(web);
        double total = now.requests["Aggregated"];
        return now.state == "stopped" && total > 0 && total < run1.requests["Aggregated"];
      },
      30s));
  // The cache again: nothing to poll for, only its 2 s to let pass before run 2's final figures.
  std::this_thread::sleep_for(2500ms);
  LocustRun run2 = locust_now(web);
  REQUIRE(run2.requests["Aggregated"] > 0);
  REQUIRE(run2.requests["Aggregated"] < run1.requests["Aggregated"]);
  double want = run1.requests["Aggregated"] + run2.requests["Aggregated"];
  REQUIRE(eventually(
      [&] {
        fams = h.collect();
        return value(fams, "loadwatch_generator_requests_total") == want;
      },
      10s));

  // Locust's own final CSV (written at shutdown) holds run 2: loadwatch = run 1 + CSV.
  locust.stop(SIGTERM, 20s);
  LocustRun csv = locust_csv(dir / "run_stats.csv");
  REQUIRE(csv.requests.count("Aggregated"));
  CHECK(csv.requests["Aggregated"] == run2.requests["Aggregated"]);
  CHECK(value(fams, "loadwatch_generator_requests_total") ==
        run1.requests["Aggregated"] + csv.requests["Aggregated"]);
  CHECK(value(fams, "loadwatch_generator_failures_total") ==
        run1.failures["Aggregated"] + csv.failures["Aggregated"]);
  CHECK(value(fams, "loadwatch_generator_endpoint_requests_total",
              {{"name", "/"}, {"method", "GET"}}) ==
        run1.requests["GET /"] + csv.requests["GET /"]);
  CHECK(value(fams, "loadwatch_generator_endpoint_requests_total",
              {{"name", "/missing"}, {"method", "GET"}}) ==
        run1.requests["GET /missing"] + csv.requests["GET /missing"]);
  CHECK(value(fams, "loadwatch_generator_endpoint_failures_total",
              {{"name", "/missing"}, {"method", "GET"}}) ==
        run1.failures["GET /missing"] + csv.failures["GET /missing"]);
  sut.stop();
  fs::remove_all(dir);
}
